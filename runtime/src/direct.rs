//! The direct backend of an acknowledged-unconfined profile (CONTRACT.md §17): the process is
//! spawned on the host in its own process group, with the scrubbed environment.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::output::{ExitStatus, Output, Stop, drain, pump};
use crate::{Deadline, Error};

/// The command for `argv` with the scrubbed environment. Without a
/// PATH in the child's environment a bare name is looked up in the default directories (the
/// child's PATH is never invented).
fn command_for<S: AsRef<OsStr>>(argv: &[S], cwd: &Path, env: &[(String, String)]) -> std::process::Command {
    let name = argv[0].as_ref();
    let bare = !name.as_encoded_bytes().contains(&b'/');
    let program = if bare && !env.iter().any(|(k, _)| k == "PATH") {
        ["/usr/local/bin", "/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.exists())
            .unwrap_or_else(|| Path::new("/nonexistent-path-lookup").join(name))
    } else {
        Path::new(name).to_path_buf()
    };
    let mut command = std::process::Command::new(program);
    command
        .arg0(name)
        .args(argv[1..].iter().map(AsRef::as_ref))
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd);
    command
}

/// An exec failure as the shell reports it: 127 (not found) or 126 (any other exec failure),
/// with the `sandbox: exec:` line. Other spawn failures are `None` (an `Io` error).
fn exec_failure(name: &OsStr, e: &std::io::Error) -> Option<(i32, String)> {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => 127,
        std::io::ErrorKind::PermissionDenied => 126,
        _ if e.raw_os_error() == Some(nix::libc::ENOEXEC) => 126,
        _ => return None,
    };
    // One line whatever the name holds (a newline in argv[0] forged a second `sandbox:` line).
    let name: String = name
        .to_string_lossy()
        .chars()
        .flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] })
        .collect();
    Some((code, format!("sandbox: exec: {name}: {e}\n")))
}

fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitStatus::Code(code),
        (None, Some(sig)) => ExitStatus::Signal(sig),
        (None, None) => ExitStatus::Code(-1),
    }
}

/// SIGKILLs the group and polls until it is empty (a setsid descendant can escape it).
fn empty_group(pgid: Pid) {
    for _ in 0..500 {
        if killpg(pgid, None).is_err() {
            return;
        }
        let _ = killpg(pgid, Signal::SIGKILL);
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Runs `argv` directly; the process group is SIGKILLed once the root process exits (or on a
/// deadline, the limit or close) and polled until empty.
pub(crate) fn run<S: AsRef<OsStr>>(
    dl: &Deadline,
    cwd: &Path,
    argv: &[S],
    env: &[(String, String)],
    limit: Option<u64>,
    closing: &AtomicBool,
) -> Result<Output, Error> {
    let (out_r, out_w) = crate::output::pipe()?;
    let err_w: OwnedFd = out_w.try_clone().map_err(|e| Error::io("pipe", e))?;
    let mut command = command_for(argv, cwd, env);
    command.process_group(0).stdin(Stdio::null()).stdout(Stdio::from(out_w)).stderr(Stdio::from(err_w));
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            drop(command);
            return match exec_failure(argv[0].as_ref(), &e) {
                Some((code, line)) => {
                    Ok(Output { bytes: line.into_bytes(), status: ExitStatus::Code(code), denials: Vec::new() })
                }
                None => Err(Error::io(format!("spawning {}", argv[0].as_ref().to_string_lossy()), e)),
            };
        }
    };
    drop(command);
    let pgid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = killpg(pgid, Signal::SIGKILL);
        status
    });
    let mut bytes = Vec::new();
    let stop = pump(&out_r, dl, limit, closing, &mut || true, &mut bytes);
    if stop.is_some() {
        let _ = killpg(pgid, Signal::SIGKILL);
        drain(&out_r, Duration::from_secs(5));
    }
    // The deadline still holds after the output ended (the workload may have closed it).
    let mut expired = None;
    while stop.is_none() && expired.is_none() && !waiter.is_finished() {
        if let Err(e) = dl.check(&[]) {
            let _ = killpg(pgid, Signal::SIGKILL);
            expired = Some(e);
        } else if closing.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = waiter.join().map_err(|_| Error::runtime("the waiter thread panicked"))?;
    empty_group(pgid);
    match stop {
        Some(Stop::Deadline(e)) => {
            return Err(match e {
                Error::Cancelled { .. } => Error::Cancelled { partial: bytes },
                _ => Error::DeadlineExceeded { partial: bytes },
            });
        }
        Some(Stop::Limit) => return Err(Error::OutputLimit { partial: bytes }),
        Some(Stop::Closed) => return Err(Error::ExecutorClosed { partial: bytes }),
        Some(Stop::Lost) | None => {}
    }
    if let Some(e) = expired {
        return Err(match e {
            Error::Cancelled { .. } => Error::Cancelled { partial: bytes },
            _ => Error::DeadlineExceeded { partial: bytes },
        });
    }
    if closing.load(std::sync::atomic::Ordering::SeqCst) && status.as_ref().is_ok_and(|s| s.signal() == Some(9)) {
        return Err(Error::ExecutorClosed { partial: bytes });
    }
    let status = exit_status(status.map_err(|e| Error::io("waiting for the process", e))?);
    Ok(Output { bytes, status, denials: Vec::new() })
}

/// Starts `argv` directly for an asynchronous [`crate::Process`]: separate pipes, its own
/// process group; a supervisor thread reaps it, SIGKILLs the group once the root process exits
/// (or the set closes) and polls until the group is empty.
pub(crate) fn start(
    argv: &[std::ffi::OsString],
    cwd: &Path,
    env: &[(String, String)],
    tty: bool,
    admitted: crate::set::Admitted,
    closing: impl Fn() -> bool + Send + 'static,
    egress: Option<crate::proxy::Proxy>,
) -> Result<crate::Process, Error> {
    use std::sync::{Arc, Mutex};
    use std::time::SystemTime;

    use crate::process::{LifetimeContainment, Outcome, ProcessReader, ProcessResult, ProcessStdin, Signaller};

    let mut command = command_for(argv, cwd, env);
    let master = if tty {
        // A new session with the PTY as its controlling terminal: setsid makes the child the
        // leader of its session and of its process group.
        Some(attach_pty(&mut command)?)
    } else {
        command.process_group(0).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        None
    };
    let started_at = SystemTime::now();
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => match exec_failure(&argv[0], &e) {
            Some((code, line)) => return Ok(failed_process(code, line, started_at)),
            None => return Err(Error::io(format!("spawning {}", argv[0].to_string_lossy()), e)),
        },
    };
    let pgid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let outcome = Arc::new(Outcome::default());
    let out = Arc::clone(&outcome);
    std::thread::Builder::new()
        .name(String::from("sandbox-supervisor"))
        .spawn(move || {
            let mut closed = false;
            let status = loop {
                match child.try_wait() {
                    Ok(Some(status)) => break Ok(status),
                    Ok(None) => {}
                    Err(e) => break Err(e),
                }
                if !closed && closing() {
                    closed = true;
                    let _ = killpg(pgid, Signal::SIGKILL);
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            empty_group(pgid);
            // The egress proxy (Seatbelt) ends with the group.
            let denials = egress.map(crate::proxy::Proxy::finish).unwrap_or_default();
            let result = match status {
                _ if closed => Err(Error::ExecutorClosed { partial: Vec::new() }),
                Ok(s) => {
                    Ok(ProcessResult { status: exit_status(s), started_at, finished_at: SystemTime::now(), denials })
                }
                Err(e) => Err(Error::io("waiting for the process", e)),
            };
            out.set(result);
            drop(admitted);
        })
        .map_err(|e| Error::io("starting the supervisor thread", e))?;

    #[derive(Debug)]
    struct Group(Pid);
    impl Signaller for Group {
        fn send(&self, sig: Signal) {
            let _ = killpg(self.0, sig);
        }
    }
    let (stdout, stderr, stdin, pty) = match master {
        Some(master) => {
            let (o, e, i) = crate::process::pty_streams(&master)?;
            (Some(o), Some(e), i, Some(Arc::new(master)))
        }
        None => (
            stdout.map(|s| ProcessReader::new(std::fs::File::from(OwnedFd::from(s)))),
            stderr.map(|s| ProcessReader::new(std::fs::File::from(OwnedFd::from(s)))),
            ProcessStdin::new(stdin.map(|s| std::fs::File::from(OwnedFd::from(s)))),
            None,
        ),
    };
    Ok(crate::Process {
        stdout: Mutex::new(stdout),
        stderr: Mutex::new(stderr),
        stdin,
        containment: LifetimeContainment::Unspecified,
        activities: Mutex::new(Some(std::sync::mpsc::channel().1)),
        outcome,
        signaller: Arc::new(Group(pgid)),
        killed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        pty,
    })
}

/// A process that never ran because exec failed: its stderr carries the `sandbox: exec:` line.
fn failed_process(code: i32, line: String, started_at: std::time::SystemTime) -> crate::Process {
    use std::sync::{Arc, Mutex};

    use crate::process::{LifetimeContainment, Outcome, ProcessReader, ProcessResult, ProcessStdin, Signaller};

    #[derive(Debug)]
    struct Nothing;
    impl Signaller for Nothing {
        fn send(&self, _: Signal) {}
    }
    let reader = |bytes: &[u8]| -> Option<ProcessReader> {
        let (r, w) = crate::output::pipe().ok()?;
        let mut w = std::fs::File::from(w);
        std::io::Write::write_all(&mut w, bytes).ok()?;
        Some(ProcessReader::new(std::fs::File::from(r)))
    };
    let outcome = Arc::new(Outcome::default());
    outcome.set(Ok(ProcessResult {
        status: ExitStatus::Code(code),
        started_at,
        finished_at: std::time::SystemTime::now(),
        denials: Vec::new(),
    }));
    crate::Process {
        stdout: Mutex::new(reader(b"")),
        stderr: Mutex::new(reader(line.as_bytes())),
        stdin: ProcessStdin::new(None),
        containment: LifetimeContainment::Unspecified,
        activities: Mutex::new(Some(std::sync::mpsc::channel().1)),
        outcome,
        signaller: Arc::new(Nothing),
        killed: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        pty: None,
    }
}

#[cfg(target_os = "linux")]
fn attach_pty(command: &mut std::process::Command) -> Result<OwnedFd, Error> {
    sandbox_linux::attach_pty(command, 24, 80).map_err(|e| Error::io("opening a pty", e))
}

#[cfg(not(target_os = "linux"))]
fn attach_pty(_: &mut std::process::Command) -> Result<OwnedFd, Error> {
    Err(Error::ProcessTtyUnsupported)
}
