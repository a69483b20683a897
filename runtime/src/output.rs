//! Results of synchronous runs and the output pump shared by every backend.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::{Deadline, Error};

/// How a process ended: its exit code, or the signal that ended it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExitStatus {
    /// Exited with this code (non-zero included; 127/126 for exec failures).
    Code(i32),
    /// Ended by this signal.
    Signal(i32),
}

impl ExitStatus {
    /// The exit code, if it exited.
    pub fn code(&self) -> Option<i32> {
        match self {
            ExitStatus::Code(c) => Some(*c),
            ExitStatus::Signal(_) => None,
        }
    }

    /// The signal, if one ended it.
    pub fn signal(&self) -> Option<i32> {
        match self {
            ExitStatus::Signal(s) => Some(*s),
            ExitStatus::Code(_) => None,
        }
    }

    /// Exit code 0.
    pub fn success(&self) -> bool {
        *self == ExitStatus::Code(0)
    }
}

/// The result of a synchronous run: stdout and stderr combined in arrival order, the status,
/// and what the egress proxy refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// stdout and stderr, combined.
    pub bytes: Vec<u8>,
    /// How the process ended.
    pub status: ExitStatus,
    /// Every request the egress proxy refused during the run, in order (network `Gated` on
    /// Linux; empty otherwise): what a harness can offer its user to allow.
    pub denials: Vec<crate::NetworkDenial>,
}

/// Why a pump stopped before EOF.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The deadline (or its token) fired: the error to return.
    Deadline(Error),
    /// The output limit was exceeded.
    Limit,
    /// The set is closing.
    Closed,
    /// The process feeding the stream (the helper) is gone.
    Lost,
}

/// Reads `fd` into `buf` until EOF, or until the deadline, the limit or the set's closing flag
/// stops it. Never blocks longer than 50 ms without re-checking.
pub(crate) fn pump(
    fd: &OwnedFd,
    dl: &Deadline,
    limit: Option<u64>,
    closing: &AtomicBool,
    alive: &mut dyn FnMut() -> bool,
    buf: &mut Vec<u8>,
) -> Option<Stop> {
    let mut file = std::fs::File::from(fd.try_clone().ok()?);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        if closing.load(Ordering::SeqCst) {
            return Some(Stop::Closed);
        }
        if let Err(e) = dl.check(&[]) {
            return Some(Stop::Deadline(e));
        }
        let wait = dl.instant().map_or(Duration::from_millis(50), |t| {
            t.saturating_duration_since(Instant::now()).min(Duration::from_millis(50))
        });
        let timeout = poll_timeout(wait);
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(0) if !alive() => return Some(Stop::Lost),
            Ok(0) | Err(nix::Error::EINTR) => continue,
            Ok(_) => {}
            Err(_) => return None,
        }
        match file.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if let Some(max) = limit {
                    let max = usize::try_from(max).unwrap_or(usize::MAX);
                    if buf.len() > max {
                        buf.truncate(max);
                        return Some(Stop::Limit);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Drains `fd` to EOF for at most `within`, discarding what it reads. Returns whether EOF came.
pub(crate) fn drain(fd: &OwnedFd, within: Duration) -> bool {
    let Ok(dup) = fd.try_clone() else { return false };
    let mut file = std::fs::File::from(dup);
    let end = Instant::now() + within;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let timeout = poll_timeout(left.min(Duration::from_secs(1)));
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(0) | Err(nix::Error::EINTR) => continue,
            Ok(_) => {}
            Err(_) => return false,
        }
        match file.read(&mut chunk) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// A poll timeout of `d` rounded up to whole milliseconds.
fn poll_timeout(d: Duration) -> PollTimeout {
    let ms = i32::try_from(d.as_millis().saturating_add(1)).unwrap_or(i32::MAX);
    PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
}

/// A pipe (both ends close-on-exec), as owned descriptors.
pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd), Error> {
    let (r, w) = std::io::pipe().map_err(|e| Error::io("creating a pipe", e))?;
    Ok((r.into(), w.into()))
}
