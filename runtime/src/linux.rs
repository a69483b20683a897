//! The facade's side of the Linux backend ([`sandbox_linux::backend`]): the set's options as
//! the backend's configuration, the facade's deadline as the one it waits by, opening (with
//! the probe run), the synchronous run (its output goes through the facade's pump, shared with
//! the other backends) and the start of a prepared process as the facade's [`Process`].
//! Everything else is the backend's.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use sandbox_bundle::{Error, GrantDeltas, Profile};
use sandbox_linux::backend::{self, Config, Measurement};

pub(crate) use sandbox_linux::backend::{LinuxBackend, SpawnInput, setup_failed};

use crate::backend::Spawn;
use crate::output::{ExitStatus, Stop, drain, pump};
use crate::process::{LifetimeContainment, Process, ProcessReader, ProcessResult, ProcessStdin};
use crate::proxy::{Credential, DenialReason, NetworkDenial, Proxy, ProxyPolicy};
use crate::set::{Admitted, SetInner};
use crate::{Deadline, ExecutorSetOptions, fsutil};

impl backend::Deadline for Deadline {
    fn check(&self) -> Result<(), Error> {
        Deadline::check(self, &[])
    }

    fn instant(&self) -> Option<Instant> {
        Deadline::instant(self)
    }
}

impl From<backend::ExitStatus> for ExitStatus {
    fn from(status: backend::ExitStatus) -> ExitStatus {
        match status {
            backend::ExitStatus::Code(c) => ExitStatus::Code(c),
            backend::ExitStatus::Signal(s) => ExitStatus::Signal(s),
        }
    }
}

/// Opens and probes the backend of a set whose directory is `set_dir`.
pub(crate) fn open(
    dl: &Deadline,
    profile: &Profile,
    options: &ExecutorSetOptions,
    set_dir: &Path,
) -> Result<LinuxBackend, Error> {
    let config = Config {
        scratch_root: options.scratch_root.clone(),
        cgroup_parent: options.configured_cgroup_parent(),
        pids_max: options.pids_max,
        memory_max: options.memory_max,
        cpu_weight: options.cpu_weight,
        cpu_max_millicpus: options.cpu_max_millicpus,
        tag: fsutil::random_hex(4)?,
        masked_roots: crate::registry::masked_roots,
        remove_tree: fsutil::remove_tree,
        real_home: Some(crate::set::real_home()),
        keep_containers: options.reuse_containers,
    };
    let mut linux = LinuxBackend::new(config, set_dir)?;
    // The scan's listings kept by an earlier set of this profile (see `keep_scan_memo`).
    if let Some((bytes, _)) = crate::kept_probe::load_bytes(SCAN_MEMOS, &scan_key(profile), MAX_SCAN_MEMO) {
        let taken = linux.restore_scan_memo(&bytes);
        tracing::debug!(taken, bytes = bytes.len(), "a kept scan memo was found");
    }
    // A probe kept from an earlier set of the same conditions (see `kept_probe`).
    let key = linux.probe_key(profile);
    if let Some((record, file)) = key.as_deref().and_then(crate::kept_probe::load) {
        if linux.restore_probe(&record, file) {
            tracing::debug!("the probe kept from an earlier set is taken");
            return Ok(linux);
        }
    }
    // The probe: the profile's own bundle with nothing required, to see what holds.
    let probe_tmp = fsutil::private_dir(set_dir, "probe-tmp-")?;
    let never = AtomicBool::new(false);
    let result = run(&linux, dl, profile, &SpawnInput::probe(profile, &probe_tmp), None, &never, false);
    let _ = fsutil::remove_tree(&probe_tmp);
    linux.record_probe(result)?;
    if let (Some(key), Some(record)) = (key, linux.probe_record()) {
        crate::kept_probe::store(&key, record);
    }
    Ok(linux)
}

/// Where sets keep the protected-paths scan's directory listings for the next set of the same
/// profile (in the registry, beside the kept probes: owner-only, masked in every sandbox).
const SCAN_MEMOS: &str = ".scan-cache";

/// The largest memo kept (about 60,000 directories at 140 bytes each); a larger one is not
/// kept, and its workspace is read in full at every set.
const MAX_SCAN_MEMO: u64 = 8 << 20;

/// The most memos kept at once (the oldest go first): at most 128 MiB of the host's `/tmp`.
const MAX_SCAN_MEMOS: usize = 16;

fn scan_key(profile: &Profile) -> String {
    format!("scan-memo\0{}", profile.fingerprint())
}

/// Keeps the set's scan memo for the next set of `profile` when it changed.
///
/// **Decision (5 December).** A one-shot `sandbox run` is a new set each time, and its scan
/// read every directory of the workspace at every call: about 40 ms of a 63 ms call in this
/// repository (2,219 directories; 39 ms with the listings kept), and linear in the tree. Its
/// listings are now kept between
/// processes like the probe's measurements, and reused only as within a set: a directory whose
/// device, inode, modification and change times are those recorded, and which had not changed
/// for two seconds when it was read. A workload cannot set a change time, and cannot reach
/// the registry. Files the scan reads (git's configs, agent settings) are read at every scan,
/// except what the caller's HOME's readers find (its dotfile links, shell start-up files and
/// `~/.ssh/config`, issue 16, 6 December): that record is kept with the stamp of every path
/// its lookups consulted, files read included, and reused only while each has the stamp
/// recorded (see `sandbox_bundle::protect::ScanMemo`).
pub(crate) fn keep_scan_memo(linux: &LinuxBackend, profile: &Profile) {
    if let Some(bytes) = linux.scan_memo_to_keep() {
        if bytes.len() as u64 <= MAX_SCAN_MEMO {
            crate::kept_probe::store_bytes(SCAN_MEMOS, &scan_key(profile), &bytes, MAX_SCAN_MEMOS);
        }
    }
}

/// The cgroup parent a set with `options` uses (see
/// [`sandbox_linux::backend::configured_cgroup_parent`]).
pub(crate) fn cgroup_parent(options: &ExecutorSetOptions) -> Option<String> {
    backend::configured_cgroup_parent(options.configured_cgroup_parent().as_deref())
}

/// The egress proxy of one spawn (issue 17): the credential and policy are made before the
/// launch (the credential goes into the spawn's environment), the server once the container
/// started and its listener came back from the helper.
struct Egress {
    credential: Option<Credential>,
    policy: ProxyPolicy,
    proxy: Option<Proxy>,
}

impl Egress {
    /// None unless the spawn reaches the network only through the proxy; otherwise the
    /// credential's variables are added to `input`'s environment.
    fn prepare(
        profile: &Profile,
        input: &mut SpawnInput<'_>,
        pins: &[(sandbox_bundle::Host, Vec<std::net::IpAddr>)],
    ) -> Result<Option<Egress>, Error> {
        if !sandbox_bundle::egress_proxy(profile, &input.grants) {
            return Ok(None);
        }
        let credential = Credential::new()?;
        input.env.extend(credential.env());
        let allow = profile.config().network_targets.iter().chain(&input.grants.proxy_targets).cloned().collect();
        let policy = ProxyPolicy { allow, pins: pins.to_vec() };
        Ok(Some(Egress { credential: Some(credential), policy, proxy: None }))
    }

    /// Serves the started container's listener. A spawn that required the proxy has one (the
    /// helper fails the spawn otherwise); without it nothing leaves the namespace.
    fn serve(&mut self, launched: &mut backend::Launched) -> Result<(), Error> {
        let listener = launched.take_proxy_listener().map_err(|e| Error::io("receiving the proxy's listener", e))?;
        let (Some(listener), Some(credential)) = (listener, self.credential.take()) else { return Ok(()) };
        self.proxy = Some(Proxy::start(listener, self.policy.clone(), credential)?);
        Ok(())
    }

    /// Stops the proxy: what it refused.
    fn finish(self) -> Vec<NetworkDenial> {
        self.proxy.map(Proxy::finish).unwrap_or_default()
    }
}

/// Runs one spawn of a caller to its end (see [`run`]), with its egress proxy when the profile
/// has one: the output, the status and what the proxy refused.
pub(crate) fn run_egress(
    linux: &LinuxBackend,
    dl: &Deadline,
    profile: &Profile,
    input: &SpawnInput<'_>,
    pins: &[(sandbox_bundle::Host, Vec<std::net::IpAddr>)],
    limit: Option<u64>,
    closing: &AtomicBool,
) -> Result<(Vec<u8>, backend::ExitStatus, Vec<NetworkDenial>), Error> {
    let mut input = input.clone();
    let mut egress = Egress::prepare(profile, &mut input, pins)?;
    let (bytes, status, measured) = run_with(linux, dl, profile, &input, limit, closing, true, egress.as_mut())?;
    let mut denials = egress.map(Egress::finish).unwrap_or_default();
    denials.extend(direct_denials(&measured));
    Ok((bytes, status, denials))
}

/// The direct connections and datagrams the container's init refused (issue 17: calls that
/// did not go through the proxy), as denials, after the proxy's: one per recorded call, and
/// `... and N more` once for those past the init's bound.
fn direct_denials(measured: &Measurement) -> Vec<NetworkDenial> {
    let (targets, dropped) = measured.direct();
    let mut denials: Vec<NetworkDenial> =
        targets.iter().map(|target| NetworkDenial { target: target.clone(), reason: DenialReason::Direct }).collect();
    if dropped > 0 {
        denials.push(NetworkDenial { target: format!("... and {dropped} more"), reason: DenialReason::Direct });
    }
    denials
}

/// Runs one spawn to its end: output combined, stdin `/dev/null`. With `require` the probe's
/// measurements become requirements (a spawn getting less fails).
pub(crate) fn run(
    linux: &LinuxBackend,
    dl: &Deadline,
    profile: &Profile,
    input: &SpawnInput<'_>,
    limit: Option<u64>,
    closing: &AtomicBool,
    require: bool,
) -> Result<(Vec<u8>, backend::ExitStatus, Measurement), Error> {
    run_with(linux, dl, profile, input, limit, closing, require, None)
}

#[allow(clippy::too_many_arguments, reason = "run's arguments and the spawn's egress proxy")]
fn run_with(
    linux: &LinuxBackend,
    dl: &Deadline,
    profile: &Profile,
    input: &SpawnInput<'_>,
    limit: Option<u64>,
    closing: &AtomicBool,
    require: bool,
    egress: Option<&mut Egress>,
) -> Result<(Vec<u8>, backend::ExitStatus, Measurement), Error> {
    let (out_r, out_w) = crate::output::pipe()?;
    let err_w = out_w.try_clone().map_err(|e| Error::io("pipe", e))?;
    let stdin = std::fs::File::open("/dev/null").map_err(|e| Error::io("opening /dev/null", e))?.into();
    let mut launched = linux.launch(dl, profile, input, stdin, out_w, err_w, require)?;
    // Bounded start-up first (deadline, close, 60 s): nothing starts after either fired.
    linux.wait_started(&mut launched, dl, closing)?;
    if let Some(egress) = egress.filter(|_| !launched.ended_early()) {
        if let Err(e) = egress.serve(&mut launched) {
            let _ = launched.kill();
            let _ = linux.finish(launched, closing, Some(dl), true);
            return Err(e);
        }
    }
    let mut bytes = Vec::new();
    let stop = if launched.ended_early() {
        None
    } else {
        let mut alive = || launched.helper_alive();
        pump(&out_r, dl, limit, closing, &mut alive, &mut bytes)
    };
    if matches!(stop, Some(Stop::Lost)) {
        return Err(linux.abandon(&mut launched, "the helper died during the run"));
    }
    if stop.is_some() {
        let _ = launched.kill();
        drain(&out_r, Duration::from_secs(5));
    }
    let finish = linux.finish(launched, closing, Some(dl), stop.is_some())?;
    match stop {
        Some(Stop::Deadline(e)) => return Err(with_partial(e, bytes)),
        Some(Stop::Limit) => return Err(Error::OutputLimit { partial: bytes }),
        Some(Stop::Closed) => return Err(Error::ExecutorClosed { partial: bytes }),
        None if finish.closed => return Err(Error::ExecutorClosed { partial: bytes }),
        None if finish.expired.is_some() => {
            return Err(with_partial(finish.expired.unwrap_or(Error::DeadlineExceeded { partial: vec![] }), bytes));
        }
        Some(Stop::Lost) | None => {}
    }
    let status = finish.status.map_err(|detail| failed(linux, detail))?;
    Ok((bytes, status, finish.measured))
}

/// Starts a prepared process in a container and returns once it runs (the deadline covers
/// setup only); a supervisor thread waits for its end. Pipe mode gets three pipes, PTY mode the
/// container's terminal.
pub(crate) fn start(
    linux: &LinuxBackend,
    set: &Arc<SetInner>,
    dl: &Deadline,
    spawn: Spawn<'_>,
    tty: bool,
    admitted: Admitted,
) -> Result<Process, Error> {
    let pipe = crate::output::pipe;
    let null = || -> Result<std::os::fd::OwnedFd, Error> {
        Ok(File::open("/dev/null").map_err(|e| Error::io("opening /dev/null", e))?.into())
    };
    // Pipe mode: three pipes. PTY mode: the container's terminal carries all three.
    let (stdio, ours) = if tty {
        ((null()?, null()?, null()?), None)
    } else {
        let (in_r, in_w) = pipe()?;
        let (out_r, out_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        ((in_r, out_w, err_w), Some((in_w, out_r, err_r)))
    };
    let mut input = spawn_input(spawn.argv, spawn.cwd.to_path_buf(), spawn.env, spawn.dirs)?;
    input.tty = tty;
    input.grants = spawn.deltas;
    let mut egress = Egress::prepare(&set.profile, &mut input, spawn.pins)?;
    let started_at = SystemTime::now();
    let mut launched = linux.launch(dl, &set.profile, &input, stdio.0, stdio.1, stdio.2, true)?;
    let master = if tty {
        match launched.take_console() {
            Ok(m) => Some(m),
            Err(e) => {
                let _ = launched.kill();
                let finish = linux.finish(launched, &set.closing, None, true);
                // The helper's own failure explains a missing terminal best; else the receive
                // failure is the cause.
                return Err(match finish {
                    Ok(f) => match f.status {
                        Err(detail) => Error::runtime(detail),
                        Ok(_) => Error::runtime_with("pty", e),
                    },
                    Err(e) => Error::runtime(e.to_string()),
                });
            }
        }
    } else {
        None
    };
    linux.wait_started(&mut launched, dl, &set.closing)?;
    if launched.ended_early() {
        // The container was never created: that is a failed start, not a process.
        let finish = linux.finish(launched, &set.closing, None, false)?;
        let detail = finish.status.err().unwrap_or_else(|| String::from("the container ended before it started"));
        return Err(failed(linux, detail));
    }
    if let Some(egress) = egress.as_mut() {
        if let Err(e) = egress.serve(&mut launched) {
            let _ = launched.kill();
            let _ = linux.finish(launched, &set.closing, None, true);
            return Err(e);
        }
    }
    let outcome = Arc::new(crate::process::Outcome::default());
    let signaller: Arc<dyn crate::process::Signaller> = Arc::new(LinuxSignaller(launched.signal_handle()));
    let set = Arc::clone(set);
    let out = Arc::clone(&outcome);
    std::thread::Builder::new()
        .name(String::from("sandbox-supervisor"))
        .spawn(move || {
            let Some(linux) = set.backend.linux() else { return };
            let finished = linux.finish(launched, &set.closing, None, false);
            let mut denials = egress.map(Egress::finish).unwrap_or_default();
            let result = match finished {
                Ok(f) if f.closed => Err(Error::ExecutorClosed { partial: Vec::new() }),
                Ok(f) => match f.status {
                    Ok(status) => {
                        denials.extend(direct_denials(&f.measured));
                        Ok(ProcessResult { status: status.into(), started_at, finished_at: SystemTime::now(), denials })
                    }
                    Err(detail) => Err(failed(linux, detail)),
                },
                Err(e) => Err(e),
            };
            out.set(result);
            drop(admitted);
        })
        .map_err(|e| Error::io("starting the supervisor thread", e))?;
    let (stdout, stderr, stdin, pty) = match (ours, master) {
        (Some((in_w, out_r, err_r)), _) => (
            ProcessReader::new(File::from(out_r)),
            ProcessReader::new(File::from(err_r)),
            ProcessStdin::new(Some(File::from(in_w))),
            None,
        ),
        (None, Some(master)) => {
            let (stdout, stderr, stdin) = crate::process::pty_streams(&master)?;
            (stdout, stderr, stdin, Some(Arc::new(master)))
        }
        (None, None) => return Err(Error::runtime("pty: no master")),
    };
    Ok(Process {
        stdout: Mutex::new(Some(stdout)),
        stderr: Mutex::new(Some(stderr)),
        stdin,
        containment: LifetimeContainment::Enforced,
        activities: Mutex::new(Some(std::sync::mpsc::channel().1)),
        outcome,
        signaller,
        killed: Arc::new(AtomicBool::new(false)),
        pty,
    })
}

/// The backend's input for a spawn of `argv` in `cwd` with an executor's environment, HOME
/// (when isolated) and TMPDIR, without grants and without a terminal.
pub(crate) fn spawn_input<'a>(
    argv: &[OsString],
    cwd: PathBuf,
    env: &[(String, String)],
    (home_dir, temp_dir): (Option<&'a Path>, &'a Path),
) -> Result<SpawnInput<'a>, Error> {
    let argv = argv
        .iter()
        .map(|a| {
            a.to_str().map(str::to_owned).ok_or_else(|| Error::InvalidArgument {
                detail: String::from("argv: not valid UTF-8 (container arguments are text)"),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SpawnInput { tty: false, argv, cwd, env: env.to_vec(), home_dir, temp_dir, grants: GrantDeltas::default() })
}

/// A spawn's set-up failed: its error; a probe kept from an earlier set, which may be what
/// no longer holds, is dropped so that the next set probes afresh.
fn failed(linux: &LinuxBackend, detail: String) -> Error {
    linux.forget_kept_probe();
    setup_failed(detail)
}

fn with_partial(e: Error, partial: Vec<u8>) -> Error {
    match e {
        Error::Cancelled { .. } => Error::Cancelled { partial },
        Error::DeadlineExceeded { .. } => Error::DeadlineExceeded { partial },
        other => other,
    }
}

#[derive(Debug)]
struct LinuxSignaller(sandbox_linux::SignalHandle);

impl crate::process::Signaller for LinuxSignaller {
    fn send(&self, sig: nix::sys::signal::Signal) {
        let _ = self.0.send(sig as i32);
    }
}
