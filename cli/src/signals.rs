//! `sandbox run` passes SIGINT, SIGTERM and SIGHUP on to the workload, as a shell's foreground
//! job would get them: a Ctrl-C reaches the workload's handler, and the CLI exits with the
//! workload's status (its handler's exit code, or 128 + the signal). Before, the CLI died of
//! the signal and the library ended the tree with SIGKILL, so no handler ever ran (a black-box
//! audit). SIGINT is passed as SIGINT; SIGTERM and SIGHUP as SIGTERM followed by SIGKILL after a
//! grace period of 5 s (`Signal::Terminate`). SIGQUIT keeps its default: it ends the CLI, and
//! with it the tree, at once.
//!
//! The handler only writes the signal's number to a pipe (async-signal-safe); a thread reads it
//! and signals the process. Handlers are reset to the default by exec, so no child (the
//! helper, the workload) inherits them.

use std::os::fd::{AsFd, AsRawFd, IntoRawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal as Sig, sigaction};
use sandbox::{Deadline, Process, Signal};

/// The pipe's write end, for the handler (-1 until installed).
static PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: nix::libc::c_int) {
    let fd = PIPE.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    let saved = nix::errno::Errno::last_raw();
    let byte = u8::try_from(signal).unwrap_or(0);
    // SAFETY: write(2) is async-signal-safe; `fd` is the pipe's write end, open for the rest
    // of the process (never closed), and `byte` lives on this frame for the call.
    let _ = unsafe { nix::libc::write(fd, std::ptr::from_ref(&byte).cast(), 1) };
    nix::errno::Errno::set_raw(saved);
}

/// Passes the CLI's SIGINT, SIGTERM and SIGHUP on to `process` from now on (see the module).
/// On a failure to set up, the signals keep their default (the CLI ends, and the tree with it).
pub(crate) fn forward(process: Arc<Process>) {
    // (Close-on-exec, as std makes every descriptor.)
    let Ok((mut read, write)) = std::io::pipe() else { return };
    let nonblocking =
        nix::fcntl::fcntl(write.as_fd().as_raw_fd(), nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK));
    if nonblocking.is_err() {
        return;
    }
    let reader = std::thread::Builder::new().name(String::from("signals")).spawn(move || {
        let mut byte = [0u8; 1];
        while matches!(std::io::Read::read(&mut read, &mut byte), Ok(1)) {
            let s = match i32::from(byte[0]) {
                n if n == Sig::SIGINT as i32 => Signal::Interrupt,
                _ => Signal::Terminate(Duration::from_secs(5)),
            };
            let _ = process.signal(&Deadline::none(), s);
        }
    });
    if reader.is_err() {
        return;
    }
    PIPE.store(std::os::fd::OwnedFd::from(write).into_raw_fd(), Ordering::Relaxed);
    let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
    for s in [Sig::SIGINT, Sig::SIGTERM, Sig::SIGHUP] {
        // SAFETY: the handler only loads an atomic and calls write(2), both async-signal-safe.
        let _ = unsafe { sigaction(s, &action) };
    }
}
