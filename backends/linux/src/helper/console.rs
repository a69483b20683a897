//! PTY mode: the console socket the runtime sends the container's PTY master to.

use std::os::fd::{AsFd, BorrowedFd};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::sys;

/// The listening end of the runtime's console socket (PTY mode).
pub(super) struct ConsoleSocket {
    listener: std::os::unix::net::UnixListener,
    pub(super) path: std::path::PathBuf,
}

impl ConsoleSocket {
    pub(super) fn bind(dir: &std::path::Path) -> std::io::Result<ConsoleSocket> {
        let previous = std::env::current_dir()?;
        std::env::set_current_dir(dir)?;
        let listener = std::os::unix::net::UnixListener::bind("console.sock");
        std::env::set_current_dir(previous)?;
        Ok(ConsoleSocket { listener: listener?, path: dir.join("console.sock") })
    }

    /// Accepts the runtime's connection, receives the master, sets the initial 24 x 80 window
    /// and sends the master to the parent.
    pub(super) fn forward_master(&self, fdpass: BorrowedFd<'_>) -> Result<(), String> {
        self.listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut fds = [PollFd::new(self.listener.as_fd(), PollFlags::POLLIN)];
        if !matches!(poll(&mut fds, PollTimeout::from(10_000u16)), Ok(n) if n > 0) {
            return Err(String::from("the runtime did not connect to the console socket"));
        }
        let (conn, _) = self.listener.accept().map_err(|e| format!("accept: {e}"))?;
        conn.set_nonblocking(false).map_err(|e| e.to_string())?;
        let master = sys::recv_fd(conn.as_fd()).map_err(|e| format!("receiving the master: {e}"))?;
        sys::set_winsize(master.as_fd(), 24, 80).map_err(|e| format!("window size: {e}"))?;
        sys::send_fd(fdpass, master.as_fd()).map_err(|e| format!("passing the master: {e}"))
    }
}

impl Drop for ConsoleSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
