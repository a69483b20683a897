//! The parent side: start a helper for one spawn, follow it, signal it, collect its outcome.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::helper::{HELPER_MARKER, SPAWN_FDS, ZYGOTE_FD, ZYGOTE_ROLE};
use crate::protocol::{Command, Event, GoProcess, Request};
use crate::sys;

/// The longest event line the parent reads from a helper (an outcome's detail is bounded by the
/// status channel; measurements are small): anything longer fails the spawn, and the parent's
/// memory stays bounded.
const MAX_EVENT_BYTES: u64 = 1 << 20;

/// A helper that has (or is about to have) a running container.
#[derive(Debug)]
pub struct Running {
    worker: Worker,
    /// Carries the PTY master (SCM_RIGHTS) in PTY mode.
    fdpass: UnixStream,
    reader: BufReader<File>,
    /// The control socket's writing side (commands, and the signals of the current run).
    writer: Arc<Mutex<File>>,
    /// Whether the current run has ended (its signal handles then send nothing).
    run_ended: Arc<std::sync::atomic::AtomicBool>,
    /// The container init's pid, once started.
    pub pid: Option<i32>,
}

/// Sends signals to a spawn's container through its helper, from any thread. A handle belongs
/// to one run: once that run has ended in a container that is kept (issue 16), it sends
/// nothing, so that a signal meant for it can never reach a later run of the container. It
/// does not keep the helper's control socket open: once the spawn's `Launched` is gone (its
/// container torn down, or let go unused), sending fails, and the helper sees the socket's end.
#[derive(Clone, Debug)]
pub struct SignalHandle(std::sync::Weak<Mutex<File>>, Arc<std::sync::atomic::AtomicBool>);

impl SignalHandle {
    /// Asks the helper to send `signal` to the container's init (which forwards it to the
    /// whole pid namespace). Fails once the helper is gone; does nothing once the run ended.
    pub fn send(&self, signal: i32) -> std::io::Result<()> {
        let Some(writer) = self.0.upgrade() else {
            return Err(std::io::Error::from(std::io::ErrorKind::NotConnected));
        };
        send_signal(&writer, &self.1, signal)
    }
}

/// Writes a signal command on the control socket, unless the run `ended` (checked under the
/// lock every write takes: see [`Running::end_run`]).
fn send_signal(writer: &Mutex<File>, ended: &std::sync::atomic::AtomicBool, signal: i32) -> std::io::Result<()> {
    let mut line = serde_json::to_string(&Command::Signal { signal }).map_err(std::io::Error::other)?;
    line.push('\n');
    let file = writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if ended.load(std::sync::atomic::Ordering::SeqCst) {
        return Ok(());
    }
    send_all(&file, line.as_bytes())
}

/// Why following a helper stopped.
#[derive(Debug)]
pub enum WaitError {
    /// The deadline passed first (the helper is still running; kill it).
    Timeout,
    /// The helper died or spoke nonsense.
    Helper(String),
    /// The helper ended without reading what was sent to it (`ECONNRESET`): it acted on none
    /// of it, so a `Go` sent to a warm container started nothing.
    Unread,
}

/// One spawn's helper process: a worker forked by the zygote (not our child: the zygote reaps
/// it), followed through a pidfd.
#[derive(Debug)]
struct Worker {
    pidfd: OwnedFd,
}

impl Worker {
    fn alive(&self) -> bool {
        !sys::pidfd_exited(&self.pidfd, 0)
    }

    /// SIGKILLs the worker and waits (at most 5 s) until it is gone.
    fn kill(&self) {
        let _ = sys::pidfd_send_signal(self.pidfd.as_fd(), nix::sys::signal::Signal::SIGKILL as i32);
        let end = Instant::now() + std::time::Duration::from_secs(5);
        while !sys::pidfd_exited(&self.pidfd, 100) && Instant::now() < end {}
    }
}

/// The warm helper of one executor set: a re-execution of this binary (so single-threaded
/// whatever the embedder runs) that forks a worker per spawn instead of paying an exec, the
/// dynamic loader and the runtime's start-up each time. A zygote that died is replaced on the
/// next spawn.
#[derive(Debug, Default)]
pub struct Zygote {
    inner: Mutex<ZygoteSlot>,
}

#[derive(Debug, Default)]
struct ZygoteSlot {
    process: Option<ZygoteProcess>,
    shut: bool,
}

#[derive(Debug)]
struct ZygoteProcess {
    child: Child,
    sock: OwnedFd,
}

impl ZygoteProcess {
    fn start() -> std::io::Result<ZygoteProcess> {
        tracing::debug!("starting the helper zygote");
        use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
        let (ours, theirs) = socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)?;
        const { assert!(ZYGOTE_FD == 0) };
        let mut command = std::process::Command::new("/proc/self/exe");
        command
            .arg(HELPER_MARKER)
            .arg(ZYGOTE_ROLE)
            .env_clear()
            // Not the caller's directory: a deleted or unreadable one failed the runtime's
            // `getcwd` and every container with it (a black-box audit: a run from a removed
            // directory was reported as a host without user namespaces).
            .current_dir("/")
            // The socket is the zygote's stdin (ZYGOTE_FD): without code of ours between fork
            // and exec, std starts it with `posix_spawn` (a vfork: no copy of this process's
            // page tables, which took the caller 0.6-1.6 ms when a set opened).
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = command.spawn()?;
        Ok(ZygoteProcess { child, sock: ours })
    }

    /// Asks for a worker; returns its pidfd. `Err((false, _))`: the request never reached the
    /// zygote (it is gone), so retrying with a fresh one is safe.
    /// A zygote that stops answering (stopped, wedged) must not hang the spawn, nor every
    /// spawn of the set: the answer comes `within` (at most 10 s) or the spawn fails and the
    /// zygote is replaced.
    fn fork_worker(
        &self,
        fds: &[BorrowedFd<'_>; SPAWN_FDS],
        within: std::time::Duration,
    ) -> Result<OwnedFd, (bool, std::io::Error)> {
        let within = within.clamp(std::time::Duration::from_millis(1), std::time::Duration::from_secs(10));
        let timeout = nix::sys::time::TimeVal::new(
            i64::try_from(within.as_secs()).unwrap_or(10),
            i64::from(within.subsec_micros()),
        );
        nix::sys::socket::setsockopt(&self.sock, nix::sys::socket::sockopt::ReceiveTimeout, &timeout)
            .map_err(|e| (false, e.into()))?;
        sys::send_with_fds(self.sock.as_fd(), b"spawn", fds).map_err(|e| (false, e))?;
        let mut buf = [0u8; 4];
        let (n, mut received) = sys::recv_with_fds(self.sock.as_fd(), &mut buf).map_err(|e| (true, e))?;
        match (n, received.pop()) {
            (4, Some(pidfd)) if i32::from_le_bytes(buf) > 0 => Ok(pidfd),
            (0, _) => Err((true, std::io::Error::other("the zygote ended without an answer"))),
            _ => Err((true, std::io::Error::other("the zygote could not fork a worker"))),
        }
    }
}

impl Zygote {
    /// A zygote not started yet: [`Zygote::prestart`] or the first spawn starts it.
    pub fn new() -> Zygote {
        Zygote::default()
    }

    /// Starts the zygote now, so that its exec and start-up overlap the set's own opening and
    /// the first spawn's compile instead of adding to the first spawn (issue 16: a new set's
    /// first spawn). Only a fork and an exec are waited for. A failure is not reported here:
    /// the first spawn starts a zygote itself and reports what fails.
    pub fn prestart(&self) {
        let mut slot = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.shut || slot.process.is_some() {
            return;
        }
        match ZygoteProcess::start() {
            Ok(z) => slot.process = Some(z),
            Err(e) => tracing::debug!("the helper zygote did not start early: {e}"),
        }
    }

    /// Starts a helper (a worker of the zygote) for `request`, with the workload's stdio, and
    /// sends it the request unless `defer` (then [`Running::send_request`] does, later: the
    /// helper does nothing until it has its request). The zygote must answer `within` (at most
    /// 10 s). Returns without waiting for the container.
    pub fn spawn(
        &self,
        request: &Request,
        stdin: OwnedFd,
        stdout: OwnedFd,
        stderr: OwnedFd,
        defer: bool,
        within: std::time::Duration,
    ) -> std::io::Result<Running> {
        let (ours, theirs) = UnixStream::pair()?;
        let (fdpass, fdpass_theirs) = UnixStream::pair()?;
        fdpass.set_read_timeout(Some(std::time::Duration::from_secs(60)))?;
        let fds = [theirs.as_fd(), fdpass_theirs.as_fd(), stdin.as_fd(), stdout.as_fd(), stderr.as_fd()];
        let pidfd = {
            let mut slot = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if slot.shut {
                return Err(std::io::Error::other("the zygote was shut down"));
            }
            let first = match slot.process.as_ref() {
                Some(z) => z.fork_worker(&fds, within),
                None => Err((false, std::io::Error::other("not started"))),
            };
            match first {
                Ok(fd) => fd,
                Err((sent, e)) => {
                    // Not started yet, or died (killed): a fresh one takes over. A request that
                    // reached the old one is not repeated (a worker may hold its descriptors).
                    if let Some(mut old) = slot.process.take() {
                        let _ = old.child.kill();
                        let _ = old.child.wait();
                    }
                    if sent {
                        return Err(e);
                    }
                    let fresh = ZygoteProcess::start()?;
                    let fd = fresh.fork_worker(&fds, within).map_err(|(_, e)| e);
                    slot.process = Some(fresh);
                    fd?
                }
            }
        };
        drop((theirs, fdpass_theirs, stdin, stdout, stderr));
        let worker = Worker { pidfd };
        let file = File::from(OwnedFd::from(ours));
        let reader = BufReader::new(file.try_clone()?);
        let running = Running {
            worker,
            fdpass,
            reader,
            writer: Arc::new(Mutex::new(file)),
            run_ended: Arc::default(),
            pid: None,
        };
        if !defer {
            if let Err(e) = running.send_request(request) {
                running.worker.kill();
                return Err(e);
            }
        }
        Ok(running)
    }

    /// Ends the zygote: no new workers; waits (at most `within`) until the workers still
    /// tearing down have finished and the zygote has exited, else kills it. True when it ended
    /// on its own.
    pub fn shutdown(&self, within: std::time::Duration) -> bool {
        let taken = {
            let mut slot = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            slot.shut = true;
            slot.process.take()
        };
        let Some(mut z) = taken else { return true };
        drop(z.sock);
        let end = Instant::now() + within;
        // Woken by the zygote's exit (its pidfd), not by polling on a timer: the CLI waits here
        // at the end of every run.
        let pidfd = i32::try_from(z.child.id()).ok().and_then(|p| sys::pidfd_open(nix::unistd::Pid::from_raw(p)).ok());
        loop {
            match z.child.try_wait() {
                Ok(Some(_)) | Err(_) => return true,
                Ok(None) if Instant::now() >= end => {
                    let _ = z.child.kill();
                    let _ = z.child.wait();
                    return false;
                }
                Ok(None) => match &pidfd {
                    Some(fd) => {
                        let left = end.saturating_duration_since(Instant::now());
                        let _ = sys::pidfd_exited(fd, u16::try_from(left.as_millis()).unwrap_or(u16::MAX).max(1));
                    }
                    None => std::thread::sleep(std::time::Duration::from_millis(2)),
                },
            }
        }
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        self.shutdown(std::time::Duration::from_secs(10));
    }
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
        let mut line = Vec::new();
        match std::io::Read::take(&mut self.reader, MAX_EVENT_BYTES).read_until(b'\n', &mut line) {
            Ok(0) => Err(WaitError::Helper(String::from("the helper exited without a result"))),
            Ok(_) if !line.ends_with(b"\n") => Err(WaitError::Helper(format!(
                "bad helper message: longer than {MAX_EVENT_BYTES} bytes or unterminated"
            ))),
            Ok(_) => {
                let event: Event =
                    serde_json::from_slice(&line).map_err(|e| WaitError::Helper(format!("bad helper message: {e}")))?;
                if let Event::Started { pid } = event {
                    self.pid = Some(pid);
                }
                Ok(event)
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Err(WaitError::Unread),
            Err(e) => Err(WaitError::Helper(format!("reading the helper: {e}"))),
        }
    }

    /// Sends the helper its request (once; see [`Zygote::spawn`]).
    pub fn send_request(&self, request: &Request) -> std::io::Result<()> {
        let mut line = serde_json::to_string(request).map_err(std::io::Error::other)?;
        line.push('\n');
        let file = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        send_all(&file, line.as_bytes())
    }

    /// Hands a warm container (one that reported `Ready`) its process and the workload's stdin,
    /// stdout and stderr.
    pub fn go(&mut self, process: GoProcess, stdio: &[OwnedFd; 3]) -> std::io::Result<()> {
        let mut line = serde_json::to_string(&Command::Go(process)).map_err(std::io::Error::other)?;
        line.push('\n');
        {
            let file = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            send_all(&file, line.as_bytes())?;
        }
        let fds = [stdio[0].as_fd(), stdio[1].as_fd(), stdio[2].as_fd()];
        sys::send_with_fds(self.fdpass.as_fd(), b"s", &fds)
    }

    /// The run in a kept container has ended (issue 16): the signal handles given out for it
    /// send nothing from now on.
    pub fn end_run(&mut self) {
        // Under the lock every signal takes: a signal either came before, and the helper reads
        // it before the next run's `Go`, or sends nothing.
        let file = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.run_ended.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(file);
        self.run_ended = Arc::default();
    }

    /// Asks the helper to send `signal` to the container's init.
    pub fn signal(&mut self, signal: i32) -> std::io::Result<()> {
        send_signal(&self.writer, &self.run_ended, signal)
    }

    /// The PTY master of a PTY-mode spawn, sent by the helper before `Started`.
    pub fn take_console(&mut self) -> std::io::Result<OwnedFd> {
        sys::recv_fd(self.fdpass.as_fd())
    }

    /// The egress proxy's listener, passed by the helper before `Started` (None: not asked, or
    /// it could not be made). Never blocks.
    pub fn take_proxy_listener(&mut self) -> std::io::Result<Option<OwnedFd>> {
        sys::try_recv_fd(self.fdpass.as_fd())
    }

    /// A handle that can signal the container from another thread.
    pub fn signal_handle(&self) -> SignalHandle {
        SignalHandle(Arc::downgrade(&self.writer), Arc::clone(&self.run_ended))
    }

    /// Whether the helper process is still running (it may have reported and exited).
    pub fn helper_alive(&mut self) -> bool {
        self.worker.alive()
    }

    /// Kills the helper outright (its container dies with it: the init's parent-death signal).
    pub fn kill_helper(&mut self) {
        self.worker.kill();
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
