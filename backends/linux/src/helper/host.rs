//! The helper's seam to the system once the container is built: every side effect of the spawn
//! state machine ([`super::spawn::drive`]) goes through [`Host`], so that the machine can be
//! driven by a recording double in unit tests that need no root. [`Live`] is the production
//! implementation: each method makes exactly the calls the helper made inline before.

use std::fs::File;
use std::io::{BufRead, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use libcontainer::container::Container;
use libcontainer::error::LibcontainerError;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::console::ConsoleSocket;
use super::{Control, GoMessage, namespaces, supervise, wait_for_go};
use crate::protocol::Event;
use crate::sys;

/// What the spawn state machine does to the system, one call per side effect. Generic, not
/// `dyn`: the helper has one implementation, and the spawn path pays nothing for the seam.
pub(super) trait Host {
    /// PTY mode: forwards the container's PTY master to the parent, then removes the console
    /// socket. Ok at once without a console.
    fn forward_pty(&mut self) -> Result<(), String>;
    /// Writes `value` to a cgroup file.
    fn write_cgroup(&mut self, file: &Path, value: &str) -> std::io::Result<()>;
    /// Reads a cgroup file (a limit, or `cgroup.procs`).
    fn read_cgroup(&mut self, file: &Path) -> std::io::Result<String>;
    /// Starts the built container: its init runs up to `ready`.
    fn start_container(&mut self) -> Result<(), LibcontainerError>;
    /// Waits at most `ms` milliseconds for the status pipe to be readable (as `poll`).
    fn poll_status(&mut self, ms: u16) -> nix::Result<i32>;
    /// Reads what the init wrote to the status pipe (0: its end, or the pipe is closed).
    fn read_status(&mut self, buf: &mut [u8]) -> std::io::Result<usize>;
    /// Closes the status pipe (once the run is over).
    fn close_status(&mut self);
    /// Raises `lo` in the container's network namespace.
    fn raise_loopback(&mut self, pid: Pid, rootless: bool) -> Result<(), String>;
    /// Makes the egress proxy's listener in the container's network namespace and passes it to
    /// the parent over the descriptor socket.
    fn open_proxy(&mut self, pid: Pid, rootless: bool, port: u16) -> Result<(), String>;
    /// In the container's user namespace, from one short-lived child: bounds the run's inotify
    /// instances and watches (`inotify`), then applies the mount fixes in its mount namespace
    /// (see `MountFixes`). Their outcomes, in that order; each is `Ok` when not asked for.
    fn in_user_namespace(
        &mut self,
        pid: Pid,
        inotify: Option<(u64, u64)>,
        fixes: &crate::protocol::MountFixes,
    ) -> (Result<(), String>, Result<(), String>);
    /// False when the embedder is gone or has asked for a SIGKILL; never blocks.
    fn still_wanted(&mut self) -> bool;
    /// A warm container reports `Ready` and waits for its process (None: let go unused);
    /// `keep`: the run is to leave the container for the next (`k` instead of `w`).
    fn wait_for_go(&mut self, keep: bool) -> std::io::Result<Option<GoMessage>>;
    /// Sends the init its `go` (with the workload's stdio for a warm container), then closes
    /// the `go` socket.
    fn send_go(&mut self, go: GoMessage);
    /// Sends the embedder an event on the control socket.
    fn send(&mut self, event: &Event) -> std::io::Result<()>;
    /// Waits (at most `ms` milliseconds; None: unbounded) for the status pipe and, while
    /// `control` is set, the control socket; returns which of them are readable, in that order.
    fn poll_run(&mut self, control: bool, ms: Option<u16>) -> nix::Result<(bool, bool)>;
    /// Reads one line of the embedder's commands (0: its end).
    fn read_control(&mut self, line: &mut String) -> std::io::Result<usize>;
    /// Closes the control socket: the embedder sees its end.
    fn hang_up(&mut self);
    /// Sends a signal to a process.
    fn kill(&mut self, pid: Pid, signal: Signal) -> nix::Result<()>;
    /// Tells the container's init to end the run ([`crate::sys::END_RUN_SIGNAL`]).
    fn end_run(&mut self, pid: Pid) -> std::io::Result<()>;
    /// Reaps the init (SIGKILLs it if it lingers); whether it is gone.
    fn reap(&mut self, pid: Pid) -> bool;
    /// Deletes the container: its cgroups (their processes killed first) and its state.
    fn delete_container(&mut self) -> Result<(), String>;
    /// Removes the spawn's bundle directory.
    fn remove_bundle(&mut self, bundle: &Path) -> std::io::Result<()>;
}

/// The helper's real resources once the container is built.
pub(super) struct Live {
    /// The built container.
    pub(super) container: Container,
    /// Its cgroup path (`Request::cgroup_path`), if it has a cgroup of its own.
    pub(super) cgroup_path: Option<String>,
    /// Its state directory in the runtime's state root.
    pub(super) state_dir: std::path::PathBuf,
    /// The read end of the init's status pipe (None once closed).
    pub(super) status: Option<File>,
    /// The control socket to the embedder (None once hung up).
    pub(super) control: Option<Control>,
    /// The descriptor socket to the embedder.
    pub(super) fdpass: File,
    /// Our end of the init's `go` socket (None once `go` was sent).
    pub(super) go: Option<File>,
    /// The console socket (PTY mode; None once `forward_pty` ran).
    pub(super) console: Option<ConsoleSocket>,
}

/// The error of a call on the control socket once [`Host::hang_up`] closed it.
fn closed() -> std::io::Error {
    std::io::Error::from(std::io::ErrorKind::NotConnected)
}

impl Host for Live {
    fn forward_pty(&mut self) -> Result<(), String> {
        let console = self.console.take();
        let pty = match &console {
            Some(console) => console.forward_master(self.fdpass.as_fd()),
            None => Ok(()),
        };
        drop(console);
        pty
    }

    fn write_cgroup(&mut self, file: &Path, value: &str) -> std::io::Result<()> {
        std::fs::write(file, value)
    }

    fn read_cgroup(&mut self, file: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(file)
    }

    fn start_container(&mut self) -> Result<(), LibcontainerError> {
        self.container.start()
    }

    fn poll_status(&mut self, ms: u16) -> nix::Result<i32> {
        // A closed pipe reads as its end.
        let Some(status) = &self.status else { return Ok(1) };
        let mut fds = [PollFd::new(status.as_fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::from(ms))
    }

    fn read_status(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.status {
            Some(status) => status.read(buf),
            None => Ok(0),
        }
    }

    fn close_status(&mut self) {
        self.status = None;
    }

    fn raise_loopback(&mut self, pid: Pid, rootless: bool) -> Result<(), String> {
        namespaces::raise_loopback(pid, rootless)
    }

    fn open_proxy(&mut self, pid: Pid, rootless: bool, port: u16) -> Result<(), String> {
        let listener = namespaces::proxy_listener(pid, rootless, port)?;
        sys::send_fd(self.fdpass.as_fd(), listener.as_fd()).map_err(|e| format!("passing the listener: {e}"))
    }

    fn in_user_namespace(
        &mut self,
        pid: Pid,
        inotify: Option<(u64, u64)>,
        fixes: &crate::protocol::MountFixes,
    ) -> (Result<(), String>, Result<(), String>) {
        namespaces::in_user_namespace(pid, inotify, fixes)
    }

    fn still_wanted(&mut self) -> bool {
        self.control.as_mut().is_some_and(Control::still_wanted)
    }

    fn wait_for_go(&mut self, keep: bool) -> std::io::Result<Option<GoMessage>> {
        match &mut self.control {
            Some(control) => wait_for_go(control, &self.fdpass, keep),
            None => Ok(None),
        }
    }

    fn send_go(&mut self, (payload, stdio): GoMessage) {
        let Some(go) = self.go.take() else { return };
        let borrowed: Vec<BorrowedFd<'_>> = stdio.iter().map(AsFd::as_fd).collect();
        if sys::send_with_fds(go.as_fd(), &payload[..1], &borrowed).is_ok() {
            let _ = (&go).write_all(&payload[1..]);
        }
        drop(borrowed);
        drop(stdio);
        // A kept container's init reads its next go from the same socket.
        if payload.first() == Some(&b'k') {
            self.go = Some(go);
        }
    }

    fn send(&mut self, event: &Event) -> std::io::Result<()> {
        self.control.as_mut().ok_or_else(closed)?.send(event)
    }

    fn poll_run(&mut self, control: bool, ms: Option<u16>) -> nix::Result<(bool, bool)> {
        // A closed pipe reads as its end.
        let Some(status) = &self.status else { return Ok((true, false)) };
        let mut fds = vec![PollFd::new(status.as_fd(), PollFlags::POLLIN)];
        if let Some(socket) = self.control.as_ref().filter(|_| control) {
            fds.push(PollFd::new(socket.reader.get_ref().as_fd(), PollFlags::POLLIN));
        }
        poll(&mut fds, ms.map_or(PollTimeout::NONE, PollTimeout::from))?;
        let status_ready = fds[0].revents().is_some_and(|r| !r.is_empty());
        let control_ready = fds.get(1).and_then(|f| f.revents()).is_some_and(|r| !r.is_empty());
        Ok((status_ready, control_ready))
    }

    fn read_control(&mut self, line: &mut String) -> std::io::Result<usize> {
        self.control.as_mut().ok_or_else(closed)?.reader.read_line(line)
    }

    fn hang_up(&mut self) {
        self.control = None;
        // Nobody waits for what is left (removing the cgroup, the state and the bundle), but
        // the caller that was just sent its answer often waits for this CPU: it goes first.
        // (A lower priority for the rest would also do that, but the removals take the
        // kernel's cgroup lock: held at nice 19 on a busy host, it stalls every other spawn.)
        let _ = nix::sched::sched_yield();
    }

    fn kill(&mut self, pid: Pid, signal: Signal) -> nix::Result<()> {
        kill(pid, signal)
    }

    fn end_run(&mut self, pid: Pid) -> std::io::Result<()> {
        crate::sys::kill_raw(pid.as_raw(), crate::sys::END_RUN_SIGNAL)
    }

    fn reap(&mut self, pid: Pid) -> bool {
        supervise::reap(pid)
    }

    fn delete_container(&mut self) -> Result<(), String> {
        match &self.cgroup_path {
            // As a sweep removes a container: whatever its cgroup still holds is killed, then
            // its cgroup directories are removed (verified: a cgroup filesystem, this uid's, no
            // symlink), and its state directory once they are all gone (a container whose
            // cgroups are left keeps the state the set's sweep finds it by). The runtime's delete
            // found the cgroups through that state (left them behind when it was gone) and
            // built its cgroup manager first, which parses `/proc/self/mountinfo` through a
            // fresh procfs handle once per v1 controller: about a millisecond of every teardown
            // here (issue 16).
            Some(path) => crate::sweep_container(crate::CgroupLayout::detect(), Some(path), Some(&self.state_dir))
                .map_err(|e| e.to_string()),
            // Without a cgroup of its own (issue 15) only the runtime knows what it made.
            None => self.container.delete(true).map_err(|e| format!("{e:?}")),
        }
    }

    fn remove_bundle(&mut self, bundle: &Path) -> std::io::Result<()> {
        std::fs::remove_dir_all(bundle)
    }
}
