//! The backend a set selected, once, for every key: direct spawns on the host, Linux
//! micro-containers (`sandbox_linux::backend`, through the adapter in `linux`) or macOS
//! Seatbelt (`macos`). What the set and its executors ask of a backend, whichever it is, is
//! asked here: masking a set's directory from other sandboxes, opening it, the executor's
//! level, guarantees and report, PTY support, a synchronous run, and what is left to settle and
//! sweep when a set ends.

use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use sandbox_bundle::{CompileReport, Error, GrantDeltas, Guarantees, Isolation, Level, Profile};

use crate::output::Output;
use crate::{Deadline, ExecutorSetOptions, direct};

/// The backend a set selected, once, for every key.
#[derive(Debug)]
pub(crate) enum Backend {
    /// An acknowledged-unconfined profile: direct spawns on the host.
    Direct,
    /// Linux micro-containers.
    #[cfg(target_os = "linux")]
    Linux(Box<crate::linux::LinuxBackend>),
    /// macOS Seatbelt (`sandbox-exec`).
    #[cfg(target_os = "macos")]
    Seatbelt(crate::macos::MacBackend),
}

/// One spawn of an executor, as every backend gets it.
#[derive(Debug)]
pub(crate) struct Spawn<'a> {
    pub argv: &'a [OsString],
    pub cwd: &'a Path,
    pub env: &'a [(String, String)],
    /// The executor's HOME (when isolated) and TMPDIR.
    pub dirs: (Option<&'a Path>, &'a Path),
    pub deltas: GrantDeltas,
    /// The set's `resolve` pins for the egress proxy (issue 17).
    pub pins: &'a [(sandbox_bundle::Host, Vec<std::net::IpAddr>)],
}

impl Backend {
    /// Opens the backend of `profile`'s isolation for a set whose directory is `dir`
    /// ([`select_sandboxed`] has passed for a sandboxed profile).
    pub(crate) fn open(
        dl: &Deadline,
        profile: &Profile,
        options: &ExecutorSetOptions,
        dir: &Path,
    ) -> Result<Backend, Error> {
        match profile.config().isolation {
            Isolation::Unconfined => Ok(Backend::Direct),
            Isolation::Sandboxed => sandboxed(dl, profile, options, dir),
        }
    }

    /// The Linux backend, when it is the one.
    #[cfg(target_os = "linux")]
    pub(crate) fn linux(&self) -> Option<&crate::linux::LinuxBackend> {
        match self {
            Backend::Linux(linux) => Some(linux),
            Backend::Direct => None,
        }
    }

    /// Whether spawns run confined (not directly on the host).
    pub(crate) fn confines(&self) -> bool {
        !matches!(self, Backend::Direct)
    }

    /// The level, guarantees and report of an executor whose environment is `env` and whose
    /// HOME (when isolated) and TMPDIR are `dirs`.
    pub(crate) fn assess(
        &self,
        profile: &Profile,
        env: &[(String, String)],
        dirs: (Option<&Path>, &Path),
        env_detail: String,
    ) -> Result<(Level, Guarantees, CompileReport), Error> {
        match self {
            Backend::Direct => {
                Ok((Level::None, Guarantees { env_scrub: true, ..Guarantees::default() }, CompileReport::default()))
            }
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(mac) => mac.assess(profile, env, dirs, env_detail),
            #[cfg(target_os = "linux")]
            Backend::Linux(linux) => {
                let argv = [OsString::from("/bin/true")];
                let input = crate::linux::spawn_input(&argv, profile.workspace_root().to_path_buf(), env, dirs)?;
                linux.assess(profile, &input, env_detail)
            }
        }
    }

    /// PTY mode: Linux containers (the PTY lives in the container's devpts) and direct spawns
    /// on Linux.
    pub(crate) fn has_pty(&self) -> bool {
        match self {
            Backend::Direct => cfg!(target_os = "linux"),
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(_) => false,
            #[cfg(target_os = "linux")]
            Backend::Linux(_) => true,
        }
    }

    /// Runs `spawn` to its end: output combined, stdin `/dev/null`.
    pub(crate) fn run(
        &self,
        dl: &Deadline,
        profile: &Profile,
        spawn: Spawn<'_>,
        limit: Option<u64>,
        closing: &AtomicBool,
    ) -> Result<Output, Error> {
        match self {
            Backend::Direct => direct::run(dl, spawn.cwd, spawn.argv, spawn.env, limit, closing),
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(mac) => {
                let egress = crate::macos::Egress::open(profile, &spawn.deltas, spawn.pins)?;
                let mut env = spawn.env.to_vec();
                env.extend(egress.as_ref().map(|e| e.env()).unwrap_or_default());
                let port = egress.as_ref().map(|e| e.port);
                let wrapped = mac.wrap(profile, spawn.argv, spawn.cwd, &env, spawn.dirs, spawn.deltas, port)?;
                let proxy = egress.map(crate::macos::Egress::serve).transpose()?;
                let mut output = direct::run(dl, spawn.cwd, &wrapped, &env, limit, closing);
                let denials = proxy.map(crate::proxy::Proxy::finish).unwrap_or_default();
                if let Ok(o) = output.as_mut() {
                    o.denials = denials;
                }
                output
            }
            #[cfg(target_os = "linux")]
            Backend::Linux(linux) => {
                let mut input = crate::linux::spawn_input(spawn.argv, spawn.cwd.to_path_buf(), spawn.env, spawn.dirs)?;
                input.grants = spawn.deltas;
                crate::linux::run_egress(linux, dl, profile, &input, spawn.pins, limit, closing)
                    .map(|(bytes, status, denials)| Output { bytes, status: status.into(), denials })
            }
        }
    }

    /// Before a set's directory `dir` goes: the Linux backend's workers finish removing their
    /// containers, and what containers whose teardown failed left is swept. False when a
    /// container's cgroups are left (see [`sweep_set`]).
    pub(crate) fn settle(&self, dir: &Path, options: &ExecutorSetOptions) -> bool {
        #[cfg(target_os = "linux")]
        if let Backend::Linux(linux) = self {
            linux.settle();
        }
        sweep_set(dir, options)
    }
}

/// Every other sandbox of this user masks the directory `dir` of a sandboxed set from now on
/// (issue 12, class 7: the registry, on Linux; nothing elsewhere) until [`unmask`].
pub(crate) fn mask(profile: &Profile, dir: &Path) -> Result<(), Error> {
    #[cfg(target_os = "linux")]
    if profile.config().isolation == Isolation::Sandboxed {
        crate::registry::register(dir)?;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (profile, dir);
    Ok(())
}

/// Ends [`mask`] for `dir` (once the set directory is gone, or was never used).
pub(crate) fn unmask(dir: &Path) {
    #[cfg(target_os = "linux")]
    crate::registry::unregister(dir);
    #[cfg(not(target_os = "linux"))]
    let _ = dir;
}

/// Sweeps the containers a set whose directory is `dir` left (on Linux; nothing elsewhere),
/// with the sweeping set's own `options` (see `sandbox_linux::backend::sweep_set`). False when
/// a container's cgroups could not all be removed: `dir`, whose state names it, is kept for a
/// later sweep.
pub(crate) fn sweep_set(dir: &Path, options: &ExecutorSetOptions) -> bool {
    #[cfg(target_os = "linux")]
    return sandbox_linux::backend::sweep_set(dir, crate::linux::cgroup_parent(options).as_deref());
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (dir, options);
        true
    }
}

/// Whether a sandboxed profile can get a backend here, before anything is made for it.
#[cfg(target_os = "linux")]
pub(crate) fn select_sandboxed() -> Result<(), Error> {
    if !crate::init_called() { Err(Error::InitNotCalled) } else { Ok(()) }
}

/// Whether a sandboxed profile can get a backend here, before anything is made for it.
#[cfg(target_os = "macos")]
pub(crate) fn select_sandboxed() -> Result<(), Error> {
    Ok(())
}

/// Whether a sandboxed profile can get a backend here, before anything is made for it.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) fn select_sandboxed() -> Result<(), Error> {
    Err(Error::SandboxUnavailable {
        detail: format!("no sandbox backend for {} in this version of sandbox", std::env::consts::OS),
    })
}

#[cfg(target_os = "linux")]
fn sandboxed(dl: &Deadline, profile: &Profile, options: &ExecutorSetOptions, dir: &Path) -> Result<Backend, Error> {
    Ok(Backend::Linux(Box::new(crate::linux::open(dl, profile, options, dir)?)))
}

#[cfg(target_os = "macos")]
fn sandboxed(_: &Deadline, _: &Profile, options: &ExecutorSetOptions, _: &Path) -> Result<Backend, Error> {
    Ok(Backend::Seatbelt(crate::macos::MacBackend::new(&options.scratch_root)?))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn sandboxed(_: &Deadline, _: &Profile, _: &ExecutorSetOptions, _: &Path) -> Result<Backend, Error> {
    select_sandboxed().map(|()| Backend::Direct)
}
