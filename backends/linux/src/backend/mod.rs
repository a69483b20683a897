//! The backend API the `sandbox` facade drives: one [`LinuxBackend`] per executor set.
//!
//! The facade opens it with plain values ([`Config`]), runs the probe spawn and hands the
//! result to [`LinuxBackend::record_probe`], asks it for level, guarantees and report
//! ([`LinuxBackend::assess`]), and for each spawn calls [`LinuxBackend::launch`], then
//! [`LinuxBackend::wait_started`] and [`LinuxBackend::finish`] (signals go through the
//! [`Launched`] spawn); [`LinuxBackend::settle`] and [`sweep_set`] end a set. Nothing of the
//! helper's wire protocol crosses this API: deadlines come in through the small [`Deadline`]
//! trait, what the helper measured goes out as an opaque [`Measurement`].
//!
//! `probe` measures what holds on this host and turns it into level, guarantees and report;
//! `request` compiles a spawn and builds the helper's request and cgroup limits; `spawn` runs
//! one spawn through a helper (its phases, the waits for its start and end); `warm` keeps
//! containers built ahead per spawn shape; `sweep` removes what containers and dead sets left.

mod probe;
mod request;
mod spawn;
mod sweep;
mod warm;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use sandbox_bundle::{Bundle, Error, GrantDeltas, Profile, rootfs_key, write_rootfs};

use crate::CgroupLayout;

use probe::Probe;
use request::inotify_bound;
use warm::{Warm, shape_key};

pub use probe::Measurement;
pub use request::configured_cgroup_parent;
pub use spawn::{ExitStatus, Finish, Launched, setup_failed};
pub use sweep::sweep_set;

/// When a wait must give up: the facade's deadline and cancel token, seen through two calls.
pub trait Deadline {
    /// `Err(Cancelled)` or `Err(DeadlineExceeded)` (with no partial output) once it has fired.
    fn check(&self) -> Result<(), Error>;
    /// The instant, if any.
    fn instant(&self) -> Option<Instant>;
}

/// A deadline that never fires.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoDeadline;

impl Deadline for NoDeadline {
    fn check(&self) -> Result<(), Error> {
        Ok(())
    }
    fn instant(&self) -> Option<Instant> {
        None
    }
}

/// What a set's backend is made with: the set's options as plain values, and the two services
/// it borrows from the facade.
#[derive(Clone, Debug)]
pub struct Config {
    /// The set's scratch root (its own, masked only for other sets).
    pub scratch_root: PathBuf,
    /// The configured cgroup parent (the `cgroup_parent` option, else `SANDBOX_CGROUP_PARENT`),
    /// if any; without one the backend finds its own (see [`crate::cgroups`]).
    pub cgroup_parent: Option<PathBuf>,
    /// `pids.max` of every spawn.
    pub pids_max: u32,
    /// The memory bound of every spawn, in bytes.
    pub memory_max: Option<u64>,
    /// CPU weight (cgroup v2 units) of every spawn.
    pub cpu_weight: u16,
    /// CPU bound of every spawn, in thousandths of a CPU.
    pub cpu_max_millicpus: Option<u32>,
    /// The set's random tag, part of every container id (`sbx-<tag>-<n>`: 8 hex digits).
    pub tag: String,
    /// The scratch roots of the user's other sandboxes, masked from every spawn (read at each
    /// compile: sets come and go).
    pub masked_roots: fn() -> Vec<PathBuf>,
    /// Removes a tree the backend made (bundles, skeletons) the way the facade removes its own.
    pub remove_tree: fn(&Path) -> Result<(), Error>,
    /// The caller's real HOME: the protected-paths scan applies the `~/` entries there whatever
    /// HOME the workload gets (an isolated one is the executor's own), wherever it is writable.
    pub real_home: Option<PathBuf>,
    /// Whether a container whose run ended is kept for the next spawn of its shape, and warm
    /// ones are built ahead (issue 16). False: every spawn gets a fresh container that ends with
    /// its run (the CLI, which makes one spawn per set).
    pub keep_containers: bool,
}

/// The Linux backend of one executor set.
#[derive(Debug)]
pub struct LinuxBackend {
    state_root: PathBuf,
    bundles: PathBuf,
    scratch_root: PathBuf,
    /// The unreadable placeholder bound over denied file roots.
    placeholder: PathBuf,
    /// The protected-paths scan's directory listings, reused while unchanged.
    scan_memo: sandbox_bundle::protect::ScanMemo,
    /// The host view of the last compilation, reused while the host shows no change.
    host_memo: sandbox_bundle::HostViewMemo,
    uid: u32,
    gid: u32,
    layout: CgroupLayout,
    /// Where the spawns get their cgroups, if anywhere (issue 15).
    cgroups: crate::cgroups::Cgroups,
    /// The directories of a configured cgroup parent that did not exist when the set opened
    /// (the runtime makes them for the first spawn), outermost first: removed when the set
    /// ends, where empty. `--cgroup-parent /x` left `/x` in every v1 hierarchy, even after
    /// an error that spawned nothing (red team AK, 5 December).
    made_parents: Vec<PathBuf>,
    pids_max: u32,
    memory_max: Option<u64>,
    /// CPU weight (cgroup v2 units) and optional bound (thousandths of a CPU) of every spawn.
    cpu_weight: u16,
    cpu_max_millicpus: Option<u32>,
    /// `RLIMIT_NPROC` of every spawn, when no pids controller bounds its processes (issue 15);
    /// fixed when the set opens.
    nproc: Option<u64>,
    /// The parent was chosen by the library (`/sandbox` as root): its own CPU weight is then
    /// set too, since it is the parent's weight that competes with the host's processes.
    own_parent: bool,
    /// The run's inotify bound (instances, watches), set in its user namespace.
    inotify: (u64, u64),
    tag: String,
    masked_roots: fn() -> Vec<PathBuf>,
    remove_tree: fn(&Path) -> Result<(), Error>,
    /// The caller's real HOME (see [`Config::real_home`]).
    real_home: Option<PathBuf>,
    /// See [`Config::keep_containers`].
    keep_containers: bool,
    counter: AtomicU64,
    /// The warm helper that forks one worker per spawn.
    zygote: crate::Zygote,
    /// `<set>/rootfs`: one prepared rootfs skeleton per mount shape (see `rootfs_key`).
    skeletons: PathBuf,
    prepared: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Warm containers by spawn shape (see `shape_key`): built ahead, waiting for a process.
    warm: std::sync::Mutex<Warm>,
    probe: Probe,
    /// The probe's own measurements (run here or kept from an earlier set).
    probe_measured: Option<crate::protocol::Measured>,
    /// Where the kept probe record this set took came from (see `restore_probe`).
    kept_probe: Option<PathBuf>,
}

/// One spawn's inputs beyond the profile.
#[derive(Clone, Debug)]
pub struct SpawnInput<'a> {
    pub tty: bool,
    pub grants: GrantDeltas,
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub home_dir: Option<&'a Path>,
    pub temp_dir: &'a Path,
}

impl<'a> SpawnInput<'a> {
    /// The probe spawn of `profile`: its own bundle running `exit 0`, with `temp_dir` as TMPDIR.
    pub fn probe(profile: &Profile, temp_dir: &'a Path) -> SpawnInput<'a> {
        SpawnInput {
            tty: false,
            grants: GrantDeltas::default(),
            argv: vec![String::from("/bin/sh"), String::from("-c"), String::from("exit 0")],
            cwd: profile.workspace_root().to_path_buf(),
            env: vec![(String::from("PATH"), String::from("/usr/bin:/bin"))],
            home_dir: None,
            temp_dir,
        }
    }
}

impl LinuxBackend {
    /// The backend of a set whose directory is `set_dir`, not yet probed: the facade runs
    /// [`SpawnInput::probe`] through it and gives the result to [`LinuxBackend::record_probe`].
    pub fn new(config: Config, set_dir: &Path) -> Result<Self, Error> {
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let layout = CgroupLayout::detect();
        // Without a usable cgroup the run is confined all the same (issue 15): the report says
        // which limits did not apply, and why.
        let cgroups = crate::cgroups::prepare(config.cgroup_parent.as_deref(), config.memory_max.is_some());
        // The set's first container (the probe's, or the first spawn's) moves into a cgroup soon.
        crate::cgroups::hasten_attach(layout, cgroups.parent());
        let own_parent = cgroups.parent.as_ref().is_some_and(|(_, s)| *s == crate::cgroups::Source::Root);
        let nproc = cgroups.needs_nproc().then(|| request::nproc_bound(config.pids_max));
        let mut made_parents = Vec::new();
        if let Some((parent, crate::cgroups::Source::Configured)) = &cgroups.parent {
            crate::cgroups::check_configured(parent).map_err(|detail| Error::SandboxUnavailable { detail })?;
            made_parents = crate::cgroups::missing_dirs(layout, parent);
        }
        // Once the options are known good: its exec and start-up overlap the rest of the
        // set's opening and the first spawn's compile.
        let zygote = crate::Zygote::new();
        zygote.prestart();
        // The parent is not recorded in the set directory: a sweep uses its own configured
        // parent, never a file of the scratch root (issue 12, class 6).
        let state_root = set_dir.join("state");
        let bundles = set_dir.join("bundles");
        let skeletons = set_dir.join("rootfs");
        for d in [&state_root, &bundles, &skeletons] {
            std::fs::create_dir(d).map_err(|e| Error::io(format!("creating {}", d.display()), e))?;
        }
        // An empty file no one may read (mode 000; the workload has no capability that would
        // override it), bound read-only over file roots whose read is denied (issue 14).
        let placeholder = set_dir.join("denied");
        {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o000)
                .open(&placeholder)
                .map_err(|e| Error::io(format!("creating {}", placeholder.display()), e))?;
        }
        Ok(LinuxBackend {
            made_parents,
            state_root,
            bundles,
            scratch_root: config.scratch_root,
            uid,
            gid,
            layout,
            cgroups,
            pids_max: config.pids_max,
            memory_max: config.memory_max,
            cpu_weight: config.cpu_weight,
            cpu_max_millicpus: config.cpu_max_millicpus,
            nproc,
            own_parent,
            inotify: inotify_bound(),
            tag: config.tag,
            masked_roots: config.masked_roots,
            remove_tree: config.remove_tree,
            real_home: config.real_home,
            keep_containers: config.keep_containers,
            counter: AtomicU64::new(0),
            zygote,
            skeletons,
            placeholder,
            scan_memo: sandbox_bundle::protect::ScanMemo::default(),
            host_memo: sandbox_bundle::HostViewMemo::default(),
            prepared: std::sync::Mutex::default(),
            warm: std::sync::Mutex::default(),
            probe: Probe::unmeasured(),
            probe_measured: None,
            kept_probe: None,
        })
    }

    /// Compiles the spawn and starts it with the given stdio: in the warm container of its shape
    /// when one waits (it then only needs the process), else through a fresh helper; either way
    /// a warm container for the next spawn of this shape is prepared meanwhile. The container
    /// may not run yet: [`LinuxBackend::wait_started`] waits for it.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &self,
        dl: &dyn Deadline,
        profile: &Profile,
        input: &SpawnInput<'_>,
        stdin: OwnedFd,
        stdout: OwnedFd,
        stderr: OwnedFd,
        require: bool,
    ) -> Result<Launched, Error> {
        dl.check()?;
        // Grant spawns (single-use shapes) and PTY spawns (the terminal is made by the runtime)
        // always get a fresh container; so does the probe, and every spawn of a set that keeps
        // none (its init runs the bundle's process and ends with it: no `ready`/`go` round trip
        // and no clean-up for a next run that never comes).
        let warmable = self.keep_containers && require && !input.tty && input.grants == GrantDeltas::default();
        if !warmable {
            // (`launch_fresh` checks the identities itself.)
            return self.launch_fresh(dl, profile, input, [stdin, stdout, stderr], require, false, None);
        }
        check_identities(profile)?;
        let t0 = crate::protocol::monotonic_us();
        let id = self.next_id();
        let bundle = self.compile(profile, input, &id)?;
        let key = shape_key(&bundle)?;
        let waiting = self.take_warm(&key);
        let stdio = [stdin, stdout, stderr];
        // None waits: one is built for this spawn now, a warm one given its process at once,
        // so that it can be kept for the next spawns of the shape (issue 16). Should either fail
        // before the process was handed over, the spawn starts in a fresh container.
        let started = match waiting {
            Some(warm) => self.go_warm(warm, &bundle, dl, &stdio).map_err(|why| why.to_string()),
            None => {
                // Held until the container's process has started (`go_warm` waits for it).
                let _keeper = crate::cgroups::hold_attach_cheap(self.layout, self.cgroups.parent());
                self.warm_container(dl, profile, input, &key, &bundle)
                    .map_err(|e| e.to_string())
                    .and_then(|container| self.go_warm(container, &bundle, dl, &stdio).map_err(|why| why.to_string()))
            }
        };
        let launched = match started {
            Ok(mut launched) => {
                launched.marks.insert(0, ("call", t0));
                // A run that may bring its container back (egress-proxy runs never do).
                if !bundle.egress_proxy {
                    launched.in_flight = Some(self.in_flight(&key));
                }
                launched.key = Some(key.clone());
                launched
            }
            Err(why) => {
                tracing::debug!(reason = %why, "no warm container was used; starting a fresh one");
                dl.check()?;
                self.launch_fresh(dl, profile, input, stdio, require, false, Some((id, bundle.clone())))?
            }
        };
        self.prewarm(profile, input, &key, &bundle);
        Ok(launched)
    }

    /// A fresh container id.
    fn next_id(&self) -> String {
        format!("sbx-{}-{}", self.tag, self.counter.fetch_add(1, Ordering::SeqCst))
    }

    /// The prepared rootfs skeleton for `bundle`'s mount shape, made on first use.
    fn skeleton(&self, bundle: &Bundle) -> Result<PathBuf, Error> {
        let key = rootfs_key(bundle);
        let dir = self.skeletons.join(&key);
        let mut prepared = self.prepared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !prepared.contains(&key) {
            let _ = (self.remove_tree)(&dir);
            std::fs::create_dir(&dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
            write_rootfs(bundle, &dir)?;
            prepared.insert(key);
        }
        Ok(dir.join("rootfs"))
    }
}

impl Drop for LinuxBackend {
    fn drop(&mut self) {
        // Warm containers first: their helpers end when their control sockets close, and the
        // zygote waits for its helpers.
        self.settle();
        // Innermost first; one still holding a cgroup (another set's, under the same parent)
        // stays.
        for dir in self.made_parents.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Issue 12, class 1: before a container is built, the workspace, every root and every pinned
/// ancestor must still be the directory the profile recorded, reached without any symlink. A
/// difference fails the spawn (`InvalidProfile`: the profile no longer describes the disk; make
/// a new one if the change was intended), never widens it. The init checks the mounts again
/// (`sandbox.identities`), which closes the window between this check and the runtime's binds.
pub(super) fn check_identities(profile: &Profile) -> Result<(), Error> {
    use sandbox_bundle::IdentityRole;
    for i in profile.identities() {
        let what = match i.role {
            IdentityRole::Workspace => "workspace_root",
            IdentityRole::Root => "additional_roots",
            IdentityRole::Pin => "additional_roots (an ancestor pinned for a nested root)",
        };
        let now = crate::TargetHandle::open(&i.path).and_then(|h| h.identity());
        let detail = match now {
            Ok(id) if id == (i.dev, i.ino) => continue,
            Ok((dev, ino)) => format!(
                "{what}: {} is not the directory the profile was made with (device {dev} inode {ino}, expected \
                 device {} inode {}); make a new profile if the change is intended",
                i.path.display(),
                i.dev,
                i.ino
            ),
            Err(e) => format!(
                "{what}: {} cannot be reached as the profile recorded it (opened without following symlinks): {e}",
                i.path.display()
            ),
        };
        return Err(Error::InvalidProfile { detail });
    }
    Ok(())
}

/// The profile the backend's unit tests assess and compile: `/` readable, commands allowed.
#[cfg(test)]
#[allow(clippy::panic)]
fn test_profile() -> Profile {
    Profile::new(sandbox_bundle::ProfileConfig {
        workspace_root: PathBuf::from("/"),
        workspace_read: sandbox_bundle::Access::Allow,
        command: sandbox_bundle::Access::Allow,
        ..sandbox_bundle::ProfileConfig::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}
