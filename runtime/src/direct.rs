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
    let (out_r, out_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| Error::io("pipe", e.into()))?;
    let err_w: OwnedFd = out_w.try_clone().map_err(|e| Error::io("pipe", e))?;
    // Without a PATH in the child's environment, a bare name is looked up in the default
    // directories (the child's PATH is never invented).
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
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_w))
        .stderr(Stdio::from(err_w))
        .process_group(0);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            drop(command);
            let name = argv[0].as_ref().to_string_lossy();
            let code = match e.kind() {
                std::io::ErrorKind::NotFound => 127,
                std::io::ErrorKind::PermissionDenied => 126,
                _ if e.raw_os_error() == Some(nix::libc::ENOEXEC) => 126,
                _ => return Err(Error::io(format!("spawning {name}"), e)),
            };
            return Ok(Output {
                bytes: format!("sandbox: exec: {name}: {e}\n").into_bytes(),
                status: ExitStatus::Code(code),
            });
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
    let stop = pump(&out_r, dl, limit, closing, &mut bytes);
    if stop.is_some() {
        let _ = killpg(pgid, Signal::SIGKILL);
        drain(&out_r, Duration::from_secs(5));
    }
    let status = waiter.join().map_err(|_| Error::Runtime { detail: String::from("the waiter thread panicked") })?;
    // Poll until the group is empty (the waiter already sent SIGKILL).
    for _ in 0..500 {
        if killpg(pgid, None).is_err() {
            break;
        }
        let _ = killpg(pgid, Signal::SIGKILL);
        std::thread::sleep(Duration::from_millis(2));
    }
    match stop {
        Some(Stop::Deadline(e)) => {
            return Err(match e {
                Error::Cancelled { .. } => Error::Cancelled { partial: bytes },
                _ => Error::DeadlineExceeded { partial: bytes },
            });
        }
        Some(Stop::Limit) => return Err(Error::OutputLimit { partial: bytes }),
        Some(Stop::Closed) => return Err(Error::ExecutorClosed { partial: bytes }),
        None => {}
    }
    let status = status.map_err(|e| Error::io("waiting for the process", e))?;
    let status = match (status.code(), status.signal()) {
        (Some(code), _) => ExitStatus::Code(code),
        (None, Some(sig)) => ExitStatus::Signal(sig),
        (None, None) => ExitStatus::Code(-1),
    };
    Ok(Output { bytes, status })
}
