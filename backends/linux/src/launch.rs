//! The parent side: start a helper for one spawn, follow it, signal it, collect its outcome.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::helper::{CONTROL_FD, FDPASS_FD, HELPER_MARKER};
use crate::protocol::{Command, Event, Measured, Outcome, Request};
use crate::sys;

/// A helper that has (or is about to have) a running container.
#[derive(Debug)]
pub struct Running {
    child: Child,
    /// Carries the PTY master (SCM_RIGHTS) in PTY mode.
    fdpass: UnixStream,
    reader: BufReader<File>,
    writer: SignalHandle,
    /// The container init's pid, once started.
    pub pid: Option<i32>,
}

/// Sends signals to a spawn's container through its helper, from any thread.
#[derive(Clone, Debug)]
pub struct SignalHandle(Arc<Mutex<File>>);

impl SignalHandle {
    /// Asks the helper to send `signal` to the container's init (which forwards it to the
    /// whole pid namespace). Fails once the helper is gone.
    pub fn send(&self, signal: i32) -> std::io::Result<()> {
        let mut line = serde_json::to_string(&Command::Signal { signal }).map_err(std::io::Error::other)?;
        line.push('\n');
        let file = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        send_all(&file, line.as_bytes())
    }
}

/// The end of one spawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// How the workload ended.
    pub outcome: Outcome,
    /// What was measured.
    pub measured: Measured,
    /// Teardown was proven.
    pub teardown: bool,
}

/// Why following a helper stopped.
#[derive(Debug)]
pub enum WaitError {
    /// The deadline passed first (the helper is still running; kill it).
    Timeout,
    /// The helper died or spoke nonsense.
    Helper(String),
}

/// Starts the helper (`/proc/self/exe` with the private marker) for `request`, with the
/// workload's stdio, and sends it the request. Returns without waiting for the container.
pub fn spawn_helper(request: &Request, stdin: OwnedFd, stdout: OwnedFd, stderr: OwnedFd) -> std::io::Result<Running> {
    let (ours, theirs) = UnixStream::pair()?;
    let theirs_fd = theirs.as_raw_fd();
    let (fdpass, fdpass_theirs) = UnixStream::pair()?;
    fdpass.set_read_timeout(Some(std::time::Duration::from_secs(60)))?;
    let fdpass_fd = fdpass_theirs.as_raw_fd();
    let mut command = std::process::Command::new("/proc/self/exe");
    command
        .arg(HELPER_MARKER)
        .env_clear()
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    sys::pre_exec(&mut command, move || {
        // The descriptor socket first: its target (4) may be the control socket's source.
        let control = if theirs_fd == FDPASS_FD { sys::dup_high(theirs_fd)? } else { theirs_fd };
        sys::dup_to(fdpass_fd, FDPASS_FD)?;
        sys::dup_to(control, CONTROL_FD)
    });
    let child = command.spawn()?;
    drop((theirs, fdpass_theirs));
    let file = File::from(OwnedFd::from(ours));
    let mut line = serde_json::to_string(request).map_err(std::io::Error::other)?;
    line.push('\n');
    if let Err(e) = send_all(&file, line.as_bytes()) {
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    let reader = BufReader::new(file.try_clone()?);
    Ok(Running { child, fdpass, reader, writer: SignalHandle(Arc::new(Mutex::new(file))), pid: None })
}

impl Running {
    /// The next event, waiting at most until `deadline`.
    pub fn next_event(&mut self, deadline: Option<Instant>) -> Result<Event, WaitError> {
        if self.reader.buffer().is_empty() {
            loop {
                let timeout = match deadline {
                    None => PollTimeout::NONE,
                    Some(d) => {
                        let left = d.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            return Err(WaitError::Timeout);
                        }
                        PollTimeout::try_from(i32::try_from(left.as_millis().min(60_000)).unwrap_or(60_000) + 1)
                            .unwrap_or(PollTimeout::MAX)
                    }
                };
                let mut fds = [PollFd::new(self.reader.get_ref().as_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, timeout) {
                    Ok(0) => continue,
                    Ok(_) => break,
                    Err(nix::Error::EINTR) => continue,
                    Err(e) => return Err(WaitError::Helper(format!("poll: {e}"))),
                }
            }
        }
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => Err(WaitError::Helper(String::from("the helper exited without a result"))),
            Ok(_) => {
                let event: Event =
                    serde_json::from_str(&line).map_err(|e| WaitError::Helper(format!("bad helper message: {e}")))?;
                if let Event::Started { pid } = event {
                    self.pid = Some(pid);
                }
                Ok(event)
            }
            Err(e) => Err(WaitError::Helper(format!("reading the helper: {e}"))),
        }
    }

    /// Asks the helper to send `signal` to the container's init.
    pub fn signal(&mut self, signal: i32) -> std::io::Result<()> {
        self.writer.send(signal)
    }

    /// The PTY master of a PTY-mode spawn, sent by the helper before `Started`.
    pub fn take_console(&mut self) -> std::io::Result<OwnedFd> {
        sys::recv_fd(self.fdpass.as_raw_fd())
    }

    /// A handle that can signal the container from another thread.
    pub fn signal_handle(&self) -> SignalHandle {
        self.writer.clone()
    }

    /// Whether the helper process is still running (it may have reported and exited).
    pub fn helper_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the helper outright (its container dies with it: the init's parent-death signal).
    pub fn kill_helper(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Reaps the helper after it reported `Finished`.
    pub fn reap(mut self) {
        let _ = self.child.wait();
    }
}

/// Writes all of `buf` to the control socket with `MSG_NOSIGNAL`: a helper that is gone is an
/// `EPIPE` error, never a SIGPIPE for the embedder (which need not ignore it).
fn send_all(file: &File, mut buf: &[u8]) -> std::io::Result<()> {
    use nix::sys::socket::{MsgFlags, send};
    while !buf.is_empty() {
        match send(file.as_raw_fd(), buf, MsgFlags::MSG_NOSIGNAL) {
            Ok(n) => buf = &buf[n..],
            Err(nix::Error::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
