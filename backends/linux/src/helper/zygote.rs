//! The zygote: the warm helper of one executor set, which forks a worker per spawn.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::waitpid;
use nix::unistd::{ForkResult, Pid};

use super::{CONTROL_FD, FDPASS_FD, SPAWN_FDS, ZYGOTE_FD};
use crate::sys;

/// The zygote: a warm, single-threaded helper per executor set. For each request (descriptors
/// attached, see [`SPAWN_FDS`]) it forks a worker that runs one spawn exactly as a freshly
/// executed helper would, and answers with the worker's pid and a pidfd for it. It reaps its
/// workers as they end; on its socket's end (the embedder closed the set, or died) it waits for
/// the workers still tearing down, then exits.
#[allow(unsafe_code, reason = "the inherited socket, and the fork of each worker (see the SAFETY comments)")]
pub(super) fn run_zygote() -> std::io::Result<()> {
    sys::set_name("sbx-zygote");
    // SAFETY: the embedder placed the zygote's socket at ZYGOTE_FD (its stdin) before exec;
    // nothing in this process owns it, and it stays open until it is replaced just below.
    let sock = sys::dup_high_cloexec(unsafe { BorrowedFd::borrow_raw(ZYGOTE_FD) })?;
    // Its stdin is /dev/null again, like its stdout and stderr: a worker's 0-2 are replaced
    // by the spawn's, and nothing may take the lowest free number meanwhile.
    let null = std::fs::File::options().read(true).write(true).open("/dev/null")?;
    nix::unistd::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), ZYGOTE_FD)?;
    drop(null);
    let mut workers: Vec<(Pid, OwnedFd)> = Vec::new();
    let mut open = true;
    while open || !workers.is_empty() {
        let (sock_ready, exited) = {
            let mut fds: Vec<PollFd<'_>> =
                workers.iter().map(|(_, fd)| PollFd::new(fd.as_fd(), PollFlags::POLLIN)).collect();
            if open {
                fds.push(PollFd::new(sock.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::Error::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            let ready: Vec<bool> = fds.iter().map(|f| f.revents().is_some_and(|r| !r.is_empty())).collect();
            let sock_ready = open && ready.last().copied().unwrap_or(false);
            let exited: Vec<usize> = (0..workers.len()).filter(|i| ready[*i]).collect();
            (sock_ready, exited)
        };
        for i in exited.into_iter().rev() {
            let (pid, _fd) = workers.swap_remove(i);
            // The worker is a zombie now (its pid cannot be reused before the reap): anything
            // left in its process group goes with it. libcontainer's intermediate process has
            // no parent-death signal and blocks forever on its channel when a worker is killed
            // while it builds.
            let _ = nix::sys::signal::killpg(pid, Signal::SIGKILL);
            let _ = waitpid(pid, None);
        }
        if !sock_ready {
            continue;
        }
        let mut buf = [0u8; 16];
        let (n, fds) = match sys::recv_with_fds(sock.as_fd(), &mut buf) {
            Ok((0, _)) | Err(_) => {
                open = false;
                continue;
            }
            Ok(r) => r,
        };
        if &buf[..n] != b"spawn" || fds.len() != SPAWN_FDS {
            let _ = sys::send_with_fds(sock.as_fd(), &0i32.to_le_bytes(), &[]);
            continue;
        }
        // SAFETY: the zygote is single-threaded: `dispatch_if_helper` checked that it was the
        // process's only thread, and nothing in the zygote starts one.
        match unsafe { sys::fork_single_threaded() } {
            Ok(ForkResult::Child) => {
                // The worker: the spawn's descriptors go where a re-executed helper finds
                // them (stdio, control at 3, descriptor socket at 4); nothing else stays open.
                // The zygote's own descriptors are the worker's to close (below), not to use.
                std::mem::forget(workers);
                std::mem::forget(sock);
                // Copies from 10 up first: a received descriptor may sit at a number that is
                // about to be replaced.
                let high: Vec<Option<OwnedFd>> = fds.iter().map(|fd| sys::dup_high(fd.as_fd()).ok()).collect();
                drop(fds);
                let mut placed = true;
                for (target, fd) in [0, 1, 2, CONTROL_FD, FDPASS_FD].into_iter().zip([2usize, 3, 4, 0, 1]) {
                    placed &= match high.get(fd) {
                        // SAFETY: no live object owns a descriptor below 10 in the worker: the
                        // received ones were dropped just above, the zygote's were forgotten,
                        // and 0-2 are the zygote's /dev/null, which no object owns.
                        Some(Some(copy)) => unsafe { sys::dup_to(copy.as_fd(), target) }.is_ok(),
                        _ => false,
                    };
                }
                drop(high);
                // SAFETY: every object that owned a descriptor from FDPASS_FD + 1 up was forgotten
                // (the zygote's socket and pidfds) or dropped (the copies) above; `run` opens
                // its own afterwards.
                unsafe { sys::close_from(FDPASS_FD + 1) };
                sys::set_name("sbx-worker");
                // Its own process group, which libcontainer's intermediate process joins: the
                // zygote kills the group when the worker ends.
                let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
                let code = if placed {
                    match super::run() {
                        Ok(()) => 0,
                        Err(_) => 1,
                    }
                } else {
                    1
                };
                sys::exit_now(code)
            }
            Ok(ForkResult::Parent { child }) => {
                drop(fds);
                match sys::pidfd_open(child) {
                    Ok(pidfd) => {
                        let _ = sys::send_with_fds(sock.as_fd(), &child.as_raw().to_le_bytes(), &[pidfd.as_fd()]);
                        workers.push((child, pidfd));
                    }
                    Err(_) => {
                        let _ = kill(child, Signal::SIGKILL);
                        let _ = waitpid(child, None);
                        let _ = sys::send_with_fds(sock.as_fd(), &0i32.to_le_bytes(), &[]);
                    }
                }
            }
            Err(_) => {
                drop(fds);
                let _ = sys::send_with_fds(sock.as_fd(), &0i32.to_le_bytes(), &[]);
            }
        }
    }
    Ok(())
}
