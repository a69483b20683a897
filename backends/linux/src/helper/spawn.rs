//! The spawn state machine once the container is built and its init has a pid: `prepare` (PTY,
//! cgroup limits) → `start` (the init reports `ready`) → `arm` (loopback, inotify, the embedder
//! still wants the run, a warm container's process) → `go` → supervise → finish. The first
//! set-up failure skips the rest and takes the one failure path. Every side effect goes through
//! [`Host`], so the machine is unit-tested with a recording double (`tests.rs`).

use std::path::PathBuf;
use std::time::Duration;

use libcontainer::error::LibcontainerError;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::host::Host;
use super::{GoMessage, limits, supervise};
use crate::protocol::{Event, Measured, Outcome, Request, monotonic_us};
use crate::status::{Failure, Message, StatusChannel};

/// Why a spawn's set-up failed once its container was built. Its `Display` is the detail the
/// runtime gets in `Outcome::Failed` (the runtime and the tests match on these prefixes).
#[derive(Debug)]
pub(super) enum SetupError {
    /// The PTY master could not be passed to the parent.
    Pty(String),
    /// A cgroup limit file could not be written.
    LimitNotWritten {
        /// The file.
        file: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A cgroup limit reads back as something other than what was asked.
    LimitNotHeld {
        /// The file.
        file: PathBuf,
        /// What it reads (None: unreadable).
        read: Option<String>,
        /// The value asked for.
        expected: u64,
    },
    /// The runtime could not start the container.
    Start(LibcontainerError),
    /// The init did not report `ready` (in time, or at all), or broke the status channel.
    NotReady(String),
    /// The init reported its own set-up failure instead of `ready`.
    Init(Failure),
    /// `lo` could not be raised.
    Loopback(String),
    /// The egress proxy's listener could not be made.
    Proxy(String),
    /// The run's inotify bound could not be set.
    Inotify(String),
    /// The mounts could not be fixed (pinned, devices made read-only).
    Mounts(String),
    /// The embedder went away, or asked for a kill, before the workload started.
    Cancelled,
    /// The embedder let a warm container go without giving it a process.
    Unused,
    /// A warm container's process could not be received.
    Go(std::io::Error),
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Pty(e) => write!(f, "helper: pty: {e}"),
            SetupError::LimitNotWritten { file, error } => {
                write!(f, "helper: cgroup limits: writing {}: {error}", file.display())
            }
            SetupError::LimitNotHeld { file, read, expected } => {
                write!(f, "helper: cgroup limits: {} reads {read:?}, expected {expected}", file.display())
            }
            SetupError::Start(e) => write!(f, "container start: {e:?}"),
            SetupError::NotReady(e) => write!(f, "helper: start: {e}"),
            SetupError::Init(failure) => std::fmt::Display::fmt(failure, f),
            SetupError::Loopback(e) => write!(f, "helper: loopback: {e}"),
            SetupError::Proxy(e) => write!(f, "helper: egress proxy: {e}"),
            SetupError::Inotify(e) => write!(f, "helper: inotify bound: {e}"),
            SetupError::Mounts(e) => write!(f, "helper: mounts: {e}"),
            SetupError::Cancelled => f.write_str("helper: start: cancelled before the workload started"),
            SetupError::Unused => f.write_str("helper: start: the warm container was not used"),
            SetupError::Go(e) => write!(f, "helper: go: {e}"),
        }
    }
}

/// Runs the spawn of the built container whose init is `pid` to its end: set-up, `go`, the
/// run, the answer (`Event::Finished`) and the clean-up. Err: only the exit status of the
/// helper (the answer could not be sent, or the clean-up after a sent answer failed).
pub(super) fn drive<H: Host>(host: &mut H, request: &Request, pid: Pid, mut measured: Measured) -> std::io::Result<()> {
    let mut channel = StatusChannel::new();
    // The set-up once the container exists, in three steps between the phase stamps: the first
    // failure skips the rest and takes the one failure path below.
    let prepared = prepare(host, request, &mut measured);
    measured.phases.push((String::from("limits"), monotonic_us()));
    let started = prepared.and_then(|()| start(host, &mut channel));
    measured.phases.push((String::from("ready"), monotonic_us()));
    let armed = started.and_then(|()| arm(host, request, pid, &mut measured));
    let go = match armed {
        Ok(go) => go,
        Err(failure) => {
            let _ = host.kill(pid, Signal::SIGKILL);
            let teardown = host.reap(pid) && host.delete_container().is_ok();
            if request.warm {
                // An unused warm container's bundle is nobody else's to remove.
                let _ = host.remove_bundle(&request.bundle);
            }
            let outcome = Outcome::Failed { detail: failure.to_string() };
            return host.send(&Event::Finished { outcome, measured, teardown });
        }
    };
    let keep = request.warm && request.proxy_port.is_none() && go.0.first() == Some(&b'k');
    // What every run of a kept container reports of its build (its phases only once).
    let base = Measured { phases: Vec::new(), ..measured.clone() };
    let mut go = go;
    loop {
        measured.phases.push((String::from("go"), monotonic_us()));
        host.send_go(go);
        let parent_alive = host.send(&Event::Started { pid: pid.as_raw() }).is_ok();
        let procs = request.procs.clone();
        if !parent_alive {
            // The embedder died: nothing may outlive it (the run ends through its init, which
            // `supervise` kills if it does not end it soon).
            supervise::end_run(host, pid, procs.as_deref());
        }
        let mut rest = Vec::new();
        let (killed, violation) =
            supervise::supervise(host, &mut channel, pid, parent_alive, procs.as_deref(), keep.then_some(&mut rest));
        if keep && !killed && violation.is_none() && channel.has_outcome() {
            // The init reported the outcome after it had killed and reaped every other process
            // of its namespace: the run is over. Proven from here as well: the container's
            // cgroup holds the init alone.
            if let Some(next) = next_run(host, request, pid, &mut channel, &mut measured, &base, rest) {
                go = next;
                continue;
            }
            return Ok(());
        }
        host.close_status();
        measured.phases.push((String::from("status-eof"), monotonic_us()));
        let reaped = host.reap(pid);
        // Proven: the init is reaped (its pid namespace went with it) and the spawn's own cgroup
        // holds no process. Removing the cgroup, the state and the bundle happens after the
        // answer, off the caller's path; a failure there is swept by the set.
        let proven = reaped && supervise::cgroup_empty(host, request);
        measured.phases.push((String::from("reaped"), monotonic_us()));
        let outcome = supervise::outcome(&channel, violation, killed, &mut measured);
        if !proven {
            let deleted = host.delete_container().is_ok();
            return host.send(&Event::Finished { outcome, measured, teardown: reaped && deleted });
        }
        let _ = host.send(&Event::Finished { outcome, measured, teardown: true });
        host.hang_up();
        host.delete_container().map_err(std::io::Error::other)?;
        return host.remove_bundle(&request.bundle);
    }
}

/// After a kept container's run (issue 16): answers `Kept` once the run is proven over (the
/// init's outcome, and its cgroup holding the init alone), then waits for the init to report
/// `ready` (its `/tmp` and `/dev/shm` emptied) and for the next process. None: the container
/// ended or was let go, and is torn down here (after the answer, whatever happens).
fn next_run<H: Host>(
    host: &mut H,
    request: &Request,
    pid: Pid,
    channel: &mut StatusChannel,
    measured: &mut Measured,
    base: &Measured,
    rest: Vec<u8>,
) -> Option<GoMessage> {
    let alone = match &request.procs {
        Some(procs) => host.read_cgroup(procs).is_ok_and(|p| {
            let pids: Vec<&str> = p.split_whitespace().collect();
            pids == [pid.as_raw().to_string().as_str()]
        }),
        None => true,
    };
    let outcome = supervise::outcome(channel, None, false, measured);
    measured.phases.push((String::from("kept"), monotonic_us()));
    let done = std::mem::replace(measured, base.clone());
    let failed = matches!(outcome, Outcome::Failed { .. });
    if alone && !failed {
        if host.send(&Event::Kept { outcome, measured: done }).is_err() {
            return give_up(host, request, pid);
        }
    } else {
        // Not proven: the answer waits for the whole teardown, as a fresh container's does.
        let _ = host.kill(pid, Signal::SIGKILL);
        supervise::kill_members(host, request.procs.as_deref());
        host.close_status();
        let reaped = host.reap(pid);
        let proven = reaped && supervise::cgroup_empty(host, request);
        let deleted = host.delete_container().is_ok();
        let _ = host.send(&Event::Finished { outcome, measured: done, teardown: proven && deleted });
        host.hang_up();
        let _ = host.remove_bundle(&request.bundle);
        return None;
    }
    *channel = StatusChannel::new();
    if channel.feed(&rest).is_err() {
        return give_up(host, request, pid);
    }
    if supervise::wait_ready(host, channel, Duration::from_secs(30)).is_err()
        || !matches!(channel.messages().first(), Some(Message::Ready))
        || !host.still_wanted()
    {
        return give_up(host, request, pid);
    }
    match host.wait_for_go(true) {
        Ok(Some(go)) => Some(go),
        _ => give_up(host, request, pid),
    }
}

/// Tears a kept container down without a run (its embedder let it go, or it failed between
/// runs): nobody waits for an answer.
fn give_up<H: Host>(host: &mut H, request: &Request, pid: Pid) -> Option<GoMessage> {
    let _ = host.kill(pid, Signal::SIGKILL);
    supervise::kill_members(host, request.procs.as_deref());
    host.close_status();
    let _ = host.reap(pid);
    host.hang_up();
    let _ = host.delete_container();
    let _ = host.remove_bundle(&request.bundle);
    None
}

/// The first set-up step, before the container starts: the PTY master goes to the parent (PTY
/// mode), the cgroup limits are written and read back (into `measured`) and checked.
fn prepare<H: Host>(host: &mut H, request: &Request, measured: &mut Measured) -> Result<(), SetupError> {
    let pty = host.forward_pty().map_err(SetupError::Pty);
    let written = limits::write(host, request);
    measured.readback = limits::read_back(host, request);
    // A limit that could not be written outranks a PTY failure.
    written?;
    pty?;
    if request.require_limits {
        limits::check(request, &measured.readback)?;
    }
    Ok(())
}

/// The second step: the container starts and its init reports `ready` (it made itself dumpable,
/// so that a non-root helper may join its namespaces, and waits for `go`). An early set-up
/// failure of the init stays in `channel` and is the error.
fn start<H: Host>(host: &mut H, channel: &mut StatusChannel) -> Result<(), SetupError> {
    host.start_container().map_err(SetupError::Start)?;
    supervise::wait_ready(host, channel, Duration::from_secs(30)).map_err(SetupError::NotReady)?;
    match channel.messages().first() {
        Some(Message::Error(failure)) => Err(SetupError::Init(failure.clone())),
        _ => Ok(()),
    }
}

/// The last step, between `ready` and `go`, before any workload exists: `lo` is raised, the
/// inotify bound set, the embedder asked whether it still wants the run, and a warm container
/// waits for its process. Returns what the init's `go` socket gets.
fn arm<H: Host>(host: &mut H, request: &Request, pid: Pid, measured: &mut Measured) -> Result<GoMessage, SetupError> {
    if request.loopback {
        let up = host.raise_loopback(pid, request.rootless);
        measured.phases.push((String::from("loopback"), monotonic_us()));
        measured.loopback = Some(up.is_ok());
        measured.loopback_error = up.as_ref().err().cloned();
        if let Err(e) = up {
            if request.require_loopback {
                return Err(SetupError::Loopback(e));
            }
        }
    }
    if let Some(port) = request.proxy_port {
        let opened = host.open_proxy(pid, request.rootless, port);
        measured.phases.push((String::from("proxy"), monotonic_us()));
        measured.proxy = Some(opened.is_ok());
        measured.proxy_error = opened.as_ref().err().cloned();
        if let Err(e) = opened {
            if request.require_proxy {
                return Err(SetupError::Proxy(e));
            }
        }
    }
    if request.inotify.is_some() || !request.mount_fixes.is_empty() {
        let (bound, fixed) = host.in_user_namespace(pid, request.inotify, &request.mount_fixes);
        if request.inotify.is_some() {
            measured.phases.push((String::from("inotify"), monotonic_us()));
            if let Err(e) = bound {
                measured.inotify_error = Some(e.clone());
                if request.require_limits {
                    return Err(SetupError::Inotify(e));
                }
            }
        }
        fixed.map_err(SetupError::Mounts)?;
        if !request.mount_fixes.is_empty() {
            measured.phases.push((String::from("mounts"), monotonic_us()));
        }
    }
    // Nothing may start for an embedder that is gone or asked to kill meanwhile (a closed set,
    // a passed deadline): the command is admitted but not yet spawned.
    if !host.still_wanted() {
        return Err(SetupError::Cancelled);
    }
    if !request.warm {
        return Ok((b"g".to_vec(), Vec::new()));
    }
    let keep = request.proxy_port.is_none();
    match host.wait_for_go(keep) {
        Ok(Some(message)) => Ok(message),
        Ok(None) => Err(SetupError::Unused),
        Err(e) => Err(SetupError::Go(e)),
    }
}

#[cfg(test)]
mod tests;
