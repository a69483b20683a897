//! Following the container init through its status pipe: `ready`, then the run until the init
//! is gone, serving the embedder's signals meanwhile; reaping the init and killing what is left
//! of the spawn's cgroup. Everything but the reap goes through [`Host`].

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::host::Host;
use crate::protocol::{Command, Measured, Outcome, Request};
use crate::status::{Message, StatusChannel};
use crate::sys;

/// Reads the status pipe into `channel` until its first message, waiting at most `within`.
/// Ok: `ready`, or an early outcome of the init (kept in `channel`). Err: timeout, the end of
/// the pipe without a message, or a violation of the channel's framing.
pub(super) fn wait_ready<H: Host>(host: &mut H, channel: &mut StatusChannel, within: Duration) -> Result<(), String> {
    let end = Instant::now() + within;
    loop {
        match channel.messages().first() {
            None => {}
            Some(Message::Ready | Message::Error(_)) => return Ok(()),
            Some(other) => return Err(format!("status channel: {other:?} before `ready`")),
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(String::from("the init did not report ready"));
        }
        let ms = u16::try_from(left.as_millis().min(1000)).unwrap_or(1000);
        match host.poll_status(ms) {
            Ok(0) | Err(nix::Error::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(format!("polling the status pipe: {e}")),
        }
        let mut chunk = [0u8; 1024];
        match host.read_status(&mut chunk) {
            Ok(0) | Err(_) => return Err(String::from("the init did not report ready")),
            Ok(n) => channel.feed(chunk.get(..n).unwrap_or_default()).map_err(|e| format!("status channel: {e}"))?,
        }
    }
}

/// Whether the spawn's own cgroup holds no process (true when it has none: the reaped init
/// took its pid namespace, and with it every process of the run).
pub(super) fn cgroup_empty<H: Host>(host: &mut H, request: &Request) -> bool {
    let Some(procs) = &request.procs else { return true };
    host.read_cgroup(procs).is_ok_and(|p| p.trim().is_empty())
}

/// How long an init told to end the run ([`end_run`]) has to do so before it is killed: the
/// wait for the last second of the run's index entries (at most one second) and their checks.
/// The embedder waits 5 s for the end after a kill.
pub(super) const END_GRACE: Duration = Duration::from_secs(3);

/// Ends the run whose init is `pid`: every other process of the spawn's own cgroup is killed
/// now (a fork bomb stops growing at once), and the init is told to end the run
/// ([`crate::sys::END_RUN_SIGNAL`]): it kills what is left of its namespace and ends as after
/// any run, the guard's last checks included. A SIGKILL to the init skipped those checks (red
/// team AL, 5 December: a change made in the run's last second, then the deadline or the
/// output limit, and the host's git took the changed file for unchanged).
pub(super) fn end_run<H: Host>(host: &mut H, pid: Pid, procs: Option<&Path>) {
    let _ = host.end_run(pid);
    kill_members_but(host, procs, Some(pid));
}

/// Reads the status pipe into `channel` until the init is gone, serving control commands
/// meanwhile. Returns whether the run was killed on request (or because the parent went), and
/// the channel's violation, if any (the init is then killed and nothing more is read). A kill
/// ends the run through the init ([`end_run`]), which is killed itself when it has not ended
/// the run within [`END_GRACE`]; a kept container's init is killed once it has told the
/// outcome of a killed run (its container is never kept).
pub(super) fn supervise<H: Host>(
    host: &mut H,
    channel: &mut StatusChannel,
    pid: Pid,
    mut parent_alive: bool,
    procs: Option<&Path>,
    kept: Option<&mut Vec<u8>>,
) -> (bool, Option<String>) {
    let mut killed = !parent_alive;
    let mut kept = kept;
    let mut control_buf = String::new();
    // When the init was told to end the run (None: not yet, or it was killed since).
    let mut ending = (!parent_alive).then(Instant::now);
    loop {
        let left = ending.map(|since| END_GRACE.saturating_sub(since.elapsed()));
        if left == Some(Duration::ZERO) {
            // Not done in time: the init goes too.
            let _ = host.kill(pid, Signal::SIGKILL);
            kill_members(host, procs);
            ending = None;
        }
        let ms = left.map(|l| u16::try_from(l.as_millis().clamp(1, 1000)).unwrap_or(1000));
        let Ok((status_ready, control_ready)) = host.poll_run(parent_alive, ms) else { continue };
        if status_ready {
            let mut chunk = [0u8; 4096];
            let fed = match host.read_status(&mut chunk) {
                Ok(0) | Err(_) => {
                    let end = channel.finish();
                    if end.is_err() {
                        let _ = host.kill(pid, Signal::SIGKILL);
                        kill_members(host, procs);
                    }
                    return (killed, end.err().map(|v| v.to_string()));
                }
                Ok(n) => {
                    let bytes = chunk.get(..n).unwrap_or_default();
                    match kept.as_deref_mut() {
                        // A kept container's init goes on after the outcome: the run ends
                        // there, and what follows is the next run's.
                        Some(rest) => channel.feed_run(bytes).map(|taken| {
                            rest.extend_from_slice(bytes.get(taken..).unwrap_or_default());
                        }),
                        None => channel.feed(bytes),
                    }
                }
            };
            if let Err(e) = fed {
                let _ = host.kill(pid, Signal::SIGKILL);
                kill_members(host, procs);
                return (killed, Some(e.to_string()));
            }
            if kept.is_some() && channel.has_outcome() {
                if killed {
                    let _ = host.kill(pid, Signal::SIGKILL);
                    kill_members(host, procs);
                }
                return (killed, None);
            }
        }
        if control_ready {
            control_buf.clear();
            match host.read_control(&mut control_buf) {
                Ok(0) | Err(_) => {
                    // The embedder is gone: nothing may outlive it.
                    parent_alive = false;
                    if !killed {
                        killed = true;
                        ending = Some(Instant::now());
                        end_run(host, pid, procs);
                    }
                }
                Ok(_) => {
                    if let Ok(Command::Signal { signal }) = serde_json::from_str(&control_buf) {
                        if let Ok(sig) = Signal::try_from(signal) {
                            if sig != Signal::SIGKILL {
                                let _ = host.kill(pid, sig);
                            } else if !killed {
                                killed = true;
                                ending = Some(Instant::now());
                                end_run(host, pid, procs);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// SIGKILLs every process of the spawn's own cgroup (`procs`: its `cgroup.procs`, a path the
/// library made, never one the workload can reach), a few passes to catch children forked
/// meanwhile. Killing the init alone ends the pid namespace only once the init itself gets to
/// run its exit, which under a fork bomb in a low-weight cgroup took tens of seconds (issue 12,
/// class 13): a killed process forks no more, so the tree stops growing at once.
pub(super) fn kill_members<H: Host>(host: &mut H, procs: Option<&Path>) {
    kill_members_but(host, procs, None);
}

/// [`kill_members`] sparing `spare` (the init, told to end the run: [`end_run`]).
fn kill_members_but<H: Host>(host: &mut H, procs: Option<&Path>, spare: Option<Pid>) {
    let Some(procs) = procs else { return };
    let spare = spare.map_or(0, Pid::as_raw);
    for _ in 0..4 {
        let Ok(text) = host.read_cgroup(procs) else { return };
        let mut any = false;
        for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()).filter(|p| *p > 1 && *p != spare) {
            any = true;
            let _ = host.kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if !any {
            return;
        }
    }
}

/// Reaps the init (it has closed the status pipe, so it is exiting); SIGKILLs it if it lingers.
/// Waits on a pidfd, not by sleeping: the init usually ends within a fraction of a millisecond.
pub(super) fn reap(pid: Pid) -> bool {
    let pidfd = sys::pidfd_open(pid).ok();
    let start = Instant::now();
    loop {
        match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                if start.elapsed() > Duration::from_secs(2) {
                    let _ = kill(pid, Signal::SIGKILL);
                }
                match &pidfd {
                    Some(fd) => {
                        sys::pidfd_exited(fd, 100);
                    }
                    None => std::thread::sleep(Duration::from_millis(1)),
                }
            }
            Ok(_) => return true,
            Err(nix::Error::ECHILD) => return true,
            Err(_) => return false,
        }
    }
}

/// The run's outcome from what the init reported on the status pipe, and what it measured (into
/// `measured`, with the direct calls it refused). A violation of the channel outranks whatever was read before it; no outcome at
/// all is a SIGKILL when the init was killed, and a failure otherwise.
pub(super) fn outcome(
    channel: &StatusChannel,
    violation: Option<String>,
    killed: bool,
    measured: &mut Measured,
) -> Outcome {
    let mut outcome = None;
    for message in channel.messages() {
        match message {
            Message::Ready => {}
            Message::Setup { landlock, seccomp, .. } => {
                measured.landlock = Some(*landlock);
                measured.seccomp = *seccomp;
            }
            Message::Direct(record) => measured.direct.push(record.to_string()),
            Message::DirectDropped(n) => measured.direct_dropped = *n,
            Message::Exited(code) => outcome = Some(Outcome::Exited { code: *code }),
            Message::Signalled(signal) => outcome = Some(Outcome::Signalled { signal: *signal }),
            // A kill the caller asked for that lands while the workload's child hands the
            // guard its listener (after the fork, before the exec) ends that child: the init
            // reports the handover failed. Nothing of the workload ran; the run ended as asked
            // (CI 60: `Kill` at once after `start` answered this error instead of signal 9).
            Message::Error(failure) if killed && failure.stage == crate::status::Stage::Guard => {
                outcome = Some(Outcome::Signalled { signal: Signal::SIGKILL as i32 });
            }
            Message::Error(failure) => outcome = Some(Outcome::Failed { detail: failure.to_string() }),
        }
    }
    if let Some(violation) = violation {
        // Fail closed: whatever was read before, the run's outcome is this error.
        outcome = Some(Outcome::Failed { detail: format!("helper: status channel: {violation}") });
    }
    outcome.unwrap_or(if killed {
        Outcome::Signalled { signal: Signal::SIGKILL as i32 }
    } else {
        Outcome::Failed { detail: String::from("the container init ended without reporting an outcome") }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_refused_direct_calls_are_measured_in_order() {
        let mut channel = StatusChannel::new();
        let mut bytes = b"ready\nsetup landlock=full abi=7 seccomp=2\n".to_vec();
        for target in ["tcp:192.0.2.1:443", "udp:[2001:db8::1]:53"] {
            bytes.extend(format!("direct {target}\n").as_bytes());
        }
        bytes.extend(b"exited 3\n");
        channel.feed(&bytes).unwrap();
        let mut measured = Measured::default();
        assert_eq!(outcome(&channel, None, false, &mut measured), Outcome::Exited { code: 3 });
        assert_eq!(measured.direct, ["tcp:192.0.2.1:443", "udp:[2001:db8::1]:53"]);
        assert_eq!(measured.direct_dropped, 0);
        // Past the bound: the count.
        let mut channel = StatusChannel::new();
        let mut bytes = b"ready\nsetup landlock=full abi=7 seccomp=2\n".to_vec();
        bytes.extend("direct ip:192.0.2.7:0\n".repeat(crate::status::MAX_DIRECT).as_bytes());
        bytes.extend(b"direct-dropped 5\nsignalled 9\n");
        channel.feed(&bytes).unwrap();
        let mut measured = Measured::default();
        assert_eq!(outcome(&channel, None, false, &mut measured), Outcome::Signalled { signal: 9 });
        assert_eq!(measured.direct.len(), crate::status::MAX_DIRECT);
        assert_eq!(measured.direct_dropped, 5);
        // They travel to the parent (and an older helper's answer, without them, still reads).
        let json = serde_json::to_string(&measured).unwrap();
        assert_eq!(serde_json::from_str::<Measured>(&json).unwrap(), measured);
        let old: Measured =
            serde_json::from_str(r#"{"landlock":null,"landlock_abi":0,"seccomp":0,"loopback":null,"readback":[]}"#)
                .unwrap();
        assert!(old.direct.is_empty() && old.direct_dropped == 0);
    }

    /// A run the caller killed while its child handed the guard its listener ended as asked
    /// (signal 9); the same failure without a kill, and other failures with one, stay errors.
    #[test]
    fn a_kill_during_the_guards_handover_is_the_kill() {
        let fed = |line: &str| {
            let mut channel = StatusChannel::new();
            channel.feed(format!("ready\nsetup landlock=full abi=7 seccomp=2\n{line}\n").as_bytes()).unwrap();
            channel
        };
        let handover =
            crate::status::error_line(crate::status::Stage::Guard, "the workload did not hand over the listener");
        let mut measured = Measured::default();
        assert_eq!(outcome(&fed(&handover), None, true, &mut measured), Outcome::Signalled { signal: 9 });
        assert!(matches!(outcome(&fed(&handover), None, false, &mut measured), Outcome::Failed { .. }));
        let fork = crate::status::error_line(crate::status::Stage::Fork, "the run's processes could not be ended");
        assert!(matches!(outcome(&fed(&fork), None, true, &mut measured), Outcome::Failed { .. }));
        assert!(matches!(
            outcome(&fed(&handover), Some(String::from("bad line")), true, &mut measured),
            Outcome::Failed { .. }
        ));
    }
}
