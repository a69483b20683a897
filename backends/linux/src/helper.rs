//! The helper process: a re-execution of the embedding binary, dispatched by `sandbox::init()`
//! before any application code or thread runs, so libcontainer is only ever called from a
//! single-threaded process (CONTRACT.md §15.8, FIGURES.md P1).

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant};

use libcontainer::container::Container;
use libcontainer::container::builder::ContainerBuilder;
use libcontainer::syscall::syscall::SyscallType;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, setns};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid};

use crate::executor::{GO_FD, STATUS_FD, SandboxExecutor};
use crate::protocol::{Command, Event, Measured, Outcome, Request, monotonic_us};
use crate::status::{Message, StatusChannel};
use crate::sys;

/// The argv[1] that makes a re-executed binary the helper. It never reaches a workload.
pub const HELPER_MARKER: &str = "--sandbox-linux-helper-v1";

/// The helper's control socket descriptor number.
pub const CONTROL_FD: RawFd = 3;

/// The helper's descriptor socket (PTY masters go to the parent over it).
pub const FDPASS_FD: RawFd = 4;

/// The argv[2] that makes the helper a zygote: it forks one worker per spawn.
pub const ZYGOTE_ROLE: &str = "zygote";

/// The zygote's request socket descriptor number.
pub const ZYGOTE_FD: RawFd = 3;

/// The descriptors a spawn request carries, in order: control socket, descriptor socket, the
/// workload's stdin, stdout and stderr.
pub const SPAWN_FDS: usize = 5;

/// If this process was started as the helper, runs it and exits; otherwise returns at once.
pub fn dispatch_if_helper() {
    let mut args = std::env::args_os();
    let _ = args.next();
    if args.next().as_deref() == Some(OsStr::new(HELPER_MARKER)) {
        // The runtime clones without fork handlers: it must never run beside another thread.
        // A thread here means `init()` was not the first statement of `main`.
        let threads = std::fs::read_dir("/proc/self/task").map(Iterator::count).unwrap_or(0);
        let code = if threads != 1 {
            2
        } else if args.next().as_deref() == Some(OsStr::new(ZYGOTE_ROLE)) {
            match run_zygote() {
                Ok(()) => 0,
                Err(_) => 1,
            }
        } else {
            match run() {
                Ok(()) => 0,
                Err(_) => 1,
            }
        };
        #[expect(clippy::exit, reason = "the helper role ends the re-executed process; main never runs")]
        std::process::exit(code)
    }
}

/// The zygote: a warm, single-threaded helper per executor set. For each request (descriptors
/// attached, see [`SPAWN_FDS`]) it forks a worker that runs one spawn exactly as a freshly
/// executed helper would, and answers with the worker's pid and a pidfd for it. It reaps its
/// workers as they end; on its socket's end (the embedder closed the set, or died) it waits for
/// the workers still tearing down, then exits.
#[allow(unsafe_code, reason = "the inherited socket, and the fork of each worker (see the SAFETY comments)")]
fn run_zygote() -> std::io::Result<()> {
    sys::set_name("sbx-zygote");
    // SAFETY: the embedder placed the zygote's socket at ZYGOTE_FD before exec; nothing in this
    // process owns it, and it stays open until the close just below.
    let sock = sys::dup_high_cloexec(unsafe { BorrowedFd::borrow_raw(ZYGOTE_FD) })?;
    nix::unistd::close(ZYGOTE_FD)?;
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
                    match run() {
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

struct Control {
    reader: BufReader<File>,
    writer: File,
}

impl Control {
    /// False when the embedder is gone (EOF) or has asked for a SIGKILL; never blocks.
    fn still_wanted(&mut self) -> bool {
        loop {
            if !self.reader.buffer().is_empty() || {
                let mut fds = [PollFd::new(self.reader.get_ref().as_fd(), PollFlags::POLLIN)];
                matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0)
            } {
                let mut line = String::new();
                match self.reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return false,
                    Ok(_) => match serde_json::from_str(&line) {
                        Ok(Command::Signal { signal }) if signal == Signal::SIGKILL as i32 => return false,
                        _ => continue,
                    },
                }
            }
            return true;
        }
    }

    fn send(&mut self, event: &Event) -> std::io::Result<()> {
        let mut line = serde_json::to_string(event).map_err(std::io::Error::other)?;
        line.push('\n');
        self.writer.write_all(line.as_bytes())
    }
}

#[allow(unsafe_code, reason = "the inherited sockets at fixed numbers (see the SAFETY comments)")]
fn run() -> std::io::Result<()> {
    let mut phases = vec![(String::from("helper-main"), monotonic_us())];
    // The control socket arrives at fd 3; move it out of the way (close-on-exec) so that fd 3
    // can carry the status pipe into the container (dup2 below replaces it atomically).
    // SAFETY: the parent (or the zygote) placed the control socket at CONTROL_FD; nothing in
    // this process owns it, and it stays open until the dup2 below replaces it.
    let control_file = File::from(sys::dup_high_cloexec(unsafe { BorrowedFd::borrow_raw(CONTROL_FD) })?);
    // SAFETY: the parent (or the zygote) placed the descriptor socket at FDPASS_FD; nothing in
    // this process owns it, and it stays open until the close just below.
    let fdpass = File::from(sys::dup_high_cloexec(unsafe { BorrowedFd::borrow_raw(FDPASS_FD) })?);
    nix::unistd::close(FDPASS_FD)?;
    // Our ends of both pipes move above 10 first, so that installing the container's ends at
    // 3 and 4 can never clobber one of them.
    let (status_r, status_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    // `go` is a socket, not a pipe: a warm container's workload stdio crosses it (SCM_RIGHTS).
    let (go_r, go_w) = {
        use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
        socketpair(AddressFamily::Unix, SockType::Stream, None, SockFlag::SOCK_CLOEXEC)?
    };
    let high = |fd: OwnedFd| -> std::io::Result<File> { Ok(File::from(sys::dup_high_cloexec(fd.as_fd())?)) };
    let (status_r, go_w) = (high(status_r)?, high(go_w)?);
    let (status_w, go_r) = (high(status_w)?, high(go_r)?);
    nix::unistd::dup2(status_w.as_raw_fd(), STATUS_FD)?;
    nix::unistd::dup2(go_r.as_raw_fd(), GO_FD)?;
    drop((status_w, go_r));
    let mut control = Control { reader: BufReader::new(control_file.try_clone()?), writer: control_file };
    let mut line = String::new();
    control.reader.read_line(&mut line)?;
    phases.push((String::from("request"), monotonic_us()));
    let request: Request = serde_json::from_str(&line).map_err(std::io::Error::other)?;

    // The workload's stdio is ours; hand it to the runtime and keep /dev/null for ourselves,
    // so readers see EOF exactly when the container is gone.
    let stdin = std::io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned()?;
    let stderr = std::io::stderr().as_fd().try_clone_to_owned()?;
    let null = File::options().read(true).write(true).open("/dev/null")?;
    for fd in 0..3 {
        nix::unistd::dup2(null.as_raw_fd(), fd)?;
    }

    // PTY mode: the runtime connects to this socket and sends the master it created in the
    // container's devpts. Bound by a relative name from the bundle dir (socket paths are short).
    let console = if request.tty { Some(ConsoleSocket::bind(&request.bundle)?) } else { None };

    let kernel_abi = sys::landlock_abi();
    let executor = SandboxExecutor {
        require_landlock: request.require_landlock,
        require_seccomp: request.require_seccomp,
        kernel_abi,
    };
    // A mask over another set's scratch root whose directory is gone has nothing to hide and
    // would fail the mount (issue 12, class 7): drop such masks now, and again, with a fresh
    // attempt, when a build fails because one went away meanwhile (nothing has run yet).
    drop_vanished_masks(&request.bundle);
    let build = |stdin: std::os::fd::OwnedFd, stdout: std::os::fd::OwnedFd, stderr: std::os::fd::OwnedFd| {
        ContainerBuilder::new(request.id.clone(), SyscallType::default())
            .with_root_path(&request.state_root)
            .and_then(|b| {
                b.with_stdin(stdin)
                    .with_stdout(stdout)
                    .with_stderr(stderr)
                    .with_preserved_fds(2)
                    .with_executor(executor.clone())
                    .validate_id()
            })
            .and_then(|b| {
                b.with_console_socket(console.as_ref().map(|c| c.path.clone()))
                    .as_init(&request.bundle)
                    .with_systemd(false)
                    .with_detach(console.is_some())
                    .build()
            })
    };
    let mut attempts = 0;
    let built = loop {
        let result = build(stdin.try_clone()?, stdout.try_clone()?, stderr.try_clone()?);
        attempts += 1;
        if result.is_err() && attempts < 4 && console.is_none() && drop_vanished_masks(&request.bundle) {
            if let Ok(mut c) = Container::load(request.state_root.join(&request.id)) {
                let _ = c.delete(true);
            }
            continue;
        }
        break result;
    };
    drop((stdin, stdout, stderr));
    phases.push((String::from("built"), monotonic_us()));
    let _ = nix::unistd::close(STATUS_FD);
    let _ = nix::unistd::close(GO_FD);
    let mut measured = Measured { landlock_abi: kernel_abi, phases, ..Measured::default() };
    let mut container = match built {
        Ok(c) => c,
        Err(e) => {
            // The runtime may have left a state dir behind: remove it now if it loads.
            if let Ok(mut c) = Container::load(request.state_root.join(&request.id)) {
                let _ = c.delete(true);
            }
            let outcome = Outcome::Failed { detail: format!("container not created: {e:?}") };
            return control.send(&Event::Finished { outcome, measured, teardown: true });
        }
    };
    let Some(pid) = container.pid() else {
        let _ = container.delete(true);
        let outcome = Outcome::Failed { detail: String::from("container has no init pid") };
        return control.send(&Event::Finished { outcome, measured, teardown: true });
    };

    let mut setup_failure = None;
    if let Some(console) = &console {
        if let Err(e) = console.forward_master(fdpass.as_fd()) {
            setup_failure = Some(format!("helper: pty: {e}"));
        }
    }
    drop(console);
    for limit in request.limits.iter().filter(|l| l.write) {
        if let Err(e) = std::fs::write(&limit.file, limit.value.to_string()) {
            if request.require_limits {
                setup_failure = Some(format!("helper: cgroup limits: writing {}: {e}", limit.file.display()));
            }
        }
    }
    measured.readback =
        request.limits.iter().map(|l| std::fs::read_to_string(&l.file).ok().map(|s| s.trim().to_owned())).collect();
    if request.require_limits && setup_failure.is_none() {
        for (limit, read) in request.limits.iter().zip(&measured.readback) {
            if !read.as_deref().is_some_and(|r| limit.holds(r)) {
                setup_failure = Some(format!(
                    "helper: cgroup limits: {} reads {read:?}, expected {}",
                    limit.file.display(),
                    limit.value
                ));
            }
        }
    }
    measured.phases.push((String::from("limits"), monotonic_us()));
    if setup_failure.is_none() {
        if let Err(e) = container.start() {
            setup_failure = Some(format!("container start: {e:?}"));
        }
    }
    // The init reports `ready` (it made itself dumpable, so that a non-root helper may join its
    // namespaces) and waits for `go`: `lo` is raised in between, before any workload exists.
    // An early setup failure of the init stays in the channel for the outcome below.
    let mut status = status_r;
    let mut channel = StatusChannel::new();
    if setup_failure.is_none() {
        match wait_ready(&mut status, &mut channel, Duration::from_secs(30)) {
            Err(e) => setup_failure = Some(format!("helper: start: {e}")),
            Ok(()) => {
                if let Some(Message::Error(detail)) = channel.messages().first() {
                    // The init failed before `ready`: that is the spawn's setup failure.
                    setup_failure = Some(detail.clone());
                }
            }
        }
    }
    measured.phases.push((String::from("ready"), monotonic_us()));
    if request.loopback && setup_failure.is_none() {
        let up = raise_loopback(pid, request.rootless);
        measured.phases.push((String::from("loopback"), monotonic_us()));
        measured.loopback = Some(up.is_ok());
        measured.loopback_error = up.as_ref().err().cloned();
        if let Err(e) = up {
            if request.require_loopback {
                setup_failure = Some(format!("helper: loopback: {e}"));
            }
        }
    }
    if let (Some((instances, watches)), None) = (request.inotify, &setup_failure) {
        if let Err(e) = bound_inotify(pid, instances, watches) {
            if request.require_limits {
                setup_failure = Some(format!("helper: inotify bound: {e}"));
            }
            measured.inotify_error = Some(e);
        }
        measured.phases.push((String::from("inotify"), monotonic_us()));
    }
    // Nothing may start for an embedder that is gone or asked to kill meanwhile (a closed set,
    // a passed deadline): the command is admitted but not yet spawned.
    if setup_failure.is_none() && !control.still_wanted() {
        setup_failure = Some(String::from("helper: start: cancelled before the workload started"));
    }
    let mut go_message = (b"g".to_vec(), Vec::new());
    if request.warm && setup_failure.is_none() {
        match wait_for_go(&mut control, &fdpass) {
            Ok(Some(message)) => go_message = message,
            Ok(None) => setup_failure = Some(String::from("helper: start: the warm container was not used")),
            Err(e) => setup_failure = Some(format!("helper: go: {e}")),
        }
    }
    if let Some(detail) = setup_failure {
        let _ = kill(pid, Signal::SIGKILL);
        let teardown = reap(pid) && container.delete(true).is_ok();
        if request.warm {
            // An unused warm container's bundle is nobody else's to remove.
            let _ = std::fs::remove_dir_all(&request.bundle);
        }
        return control.send(&Event::Finished { outcome: Outcome::Failed { detail }, measured, teardown });
    }
    measured.phases.push((String::from("go"), monotonic_us()));
    let (payload, stdio) = go_message;
    let borrowed: Vec<BorrowedFd<'_>> = stdio.iter().map(AsFd::as_fd).collect();
    if sys::send_with_fds(go_w.as_fd(), &payload[..1], &borrowed).is_ok() {
        let _ = (&go_w).write_all(&payload[1..]);
    }
    drop(borrowed);
    drop(stdio);
    drop(go_w);
    let parent_alive = control.send(&Event::Started { pid: pid.as_raw() }).is_ok();
    if !parent_alive {
        // The embedder died: nothing may outlive it.
        let _ = kill(pid, Signal::SIGKILL);
    }

    let procs = request.limits.first().and_then(|l| l.file.parent()).map(|d| d.join("cgroup.procs"));
    if !parent_alive {
        kill_members(procs.as_deref());
    }
    let (killed, violation) = supervise(&mut control, status, &mut channel, pid, parent_alive, procs.as_deref());
    measured.phases.push((String::from("status-eof"), monotonic_us()));
    let reaped = reap(pid);
    // Proven: the init is reaped (its pid namespace went with it) and the spawn's own cgroup
    // holds no process. Removing the cgroup, the state and the bundle happens after the
    // answer, off the caller's path; a failure there is swept by the set.
    let proven = reaped && cgroup_empty(&request);
    measured.phases.push((String::from("reaped"), monotonic_us()));
    let mut outcome = None;
    for message in channel.messages() {
        match message {
            Message::Ready => {}
            Message::Setup { landlock, seccomp, .. } => {
                measured.landlock = Some(landlock.clone());
                measured.seccomp = *seccomp;
            }
            Message::Exited(code) => outcome = Some(Outcome::Exited { code: *code }),
            Message::Signalled(signal) => outcome = Some(Outcome::Signalled { signal: *signal }),
            Message::Error(detail) => outcome = Some(Outcome::Failed { detail: detail.clone() }),
        }
    }
    if let Some(violation) = violation {
        // Fail closed: whatever was read before, the run's outcome is this error.
        outcome = Some(Outcome::Failed { detail: format!("helper: status channel: {violation}") });
    }
    let outcome = outcome.unwrap_or(if killed {
        Outcome::Signalled { signal: Signal::SIGKILL as i32 }
    } else {
        Outcome::Failed { detail: String::from("the container init ended without reporting an outcome") }
    });
    if !proven {
        let deleted = container.delete(true).is_ok();
        return control.send(&Event::Finished { outcome, measured, teardown: reaped && deleted });
    }
    let _ = control.send(&Event::Finished { outcome, measured, teardown: true });
    drop(control);
    container.delete(true).map_err(|e| std::io::Error::other(format!("{e:?}")))?;
    std::fs::remove_dir_all(&request.bundle)
}

/// The bytes for the init's `go` socket and the descriptors that go with them.
type GoMessage = (Vec<u8>, Vec<OwnedFd>);

/// A warm container waits here for its process: `Go` on the control socket, then the workload's
/// stdin, stdout and stderr on the descriptor socket. Returns the message for the init's `go`
/// socket (`w`, then the length and the JSON of the process) with those descriptors; None when
/// the embedder let the container go (EOF, or a SIGKILL request).
fn wait_for_go(control: &mut Control, fdpass: &File) -> std::io::Result<Option<GoMessage>> {
    control.send(&Event::Ready)?;
    let mut line = String::new();
    loop {
        line.clear();
        if control.reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        match serde_json::from_str(&line) {
            Ok(Command::Go(process)) => {
                let mut byte = [0u8; 1];
                let (_, fds) = sys::recv_with_fds(fdpass.as_fd(), &mut byte)?;
                if fds.len() != 3 {
                    return Err(std::io::Error::other(format!("{} stdio descriptors, expected 3", fds.len())));
                }
                let json = serde_json::to_vec(&process).map_err(std::io::Error::other)?;
                let len = u32::try_from(json.len()).map_err(|_| std::io::Error::other("process too large"))?;
                let mut payload = b"w".to_vec();
                payload.extend_from_slice(&len.to_le_bytes());
                payload.extend_from_slice(&json);
                return Ok(Some((payload, fds)));
            }
            Ok(Command::Signal { signal }) if signal == Signal::SIGKILL as i32 => return Ok(None),
            _ => {}
        }
    }
}

/// Whether the spawn's own cgroup holds no process (true when it has none: no limits).
fn cgroup_empty(request: &Request) -> bool {
    let Some(dir) = request.limits.first().and_then(|l| l.file.parent()) else { return true };
    std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|p| p.trim().is_empty())
}

/// Reads the status pipe into `channel` until the init is gone, serving control commands
/// meanwhile. Returns whether the init was killed on request (or because the parent went), and
/// the channel's violation, if any (the init is then killed and nothing more is read).
fn supervise(
    control: &mut Control,
    mut status: File,
    channel: &mut StatusChannel,
    pid: Pid,
    mut parent_alive: bool,
    procs: Option<&Path>,
) -> (bool, Option<String>) {
    let mut killed = false;
    let mut control_buf = String::new();
    loop {
        let mut fds = vec![PollFd::new(status.as_fd(), PollFlags::POLLIN)];
        if parent_alive {
            fds.push(PollFd::new(control.reader.get_ref().as_fd(), PollFlags::POLLIN));
        }
        if poll(&mut fds, PollTimeout::NONE).is_err() {
            continue;
        }
        let status_ready = fds[0].revents().is_some_and(|r| !r.is_empty());
        let control_ready = fds.get(1).and_then(|f| f.revents()).is_some_and(|r| !r.is_empty());
        if status_ready {
            let mut chunk = [0u8; 4096];
            let fed = match status.read(&mut chunk) {
                Ok(0) | Err(_) => {
                    let end = channel.finish();
                    if end.is_err() {
                        let _ = kill(pid, Signal::SIGKILL);
                        kill_members(procs);
                    }
                    return (killed, end.err());
                }
                Ok(n) => channel.feed(chunk.get(..n).unwrap_or_default()),
            };
            if let Err(e) = fed {
                let _ = kill(pid, Signal::SIGKILL);
                kill_members(procs);
                return (killed, Some(e));
            }
        }
        if control_ready {
            control_buf.clear();
            match control.reader.read_line(&mut control_buf) {
                Ok(0) | Err(_) => {
                    // The embedder is gone: nothing may outlive it.
                    parent_alive = false;
                    killed = true;
                    let _ = kill(pid, Signal::SIGKILL);
                    kill_members(procs);
                }
                Ok(_) => {
                    if let Ok(Command::Signal { signal }) = serde_json::from_str(&control_buf) {
                        if let Ok(sig) = Signal::try_from(signal) {
                            killed |= sig == Signal::SIGKILL;
                            let _ = kill(pid, sig);
                            if sig == Signal::SIGKILL {
                                kill_members(procs);
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
fn kill_members(procs: Option<&Path>) {
    let Some(procs) = procs else { return };
    for _ in 0..4 {
        let Ok(text) = std::fs::read_to_string(procs) else { return };
        let mut any = false;
        for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()).filter(|p| *p > 1) {
            any = true;
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if !any {
            return;
        }
    }
}

/// Reaps the init (it has closed the status pipe, so it is exiting); SIGKILLs it if it lingers.
/// Waits on a pidfd, not by sleeping: the init usually ends within a fraction of a millisecond.
fn reap(pid: Pid) -> bool {
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

/// Bounds the run's inotify instances and watches (issue 12, class 10). inotify is counted per
/// user in every user namespace up to the initial one, against each namespace's own maximum;
/// the container's user namespace starts unbounded, so the run could take all of its host
/// uid's instances (`fs.inotify.max_user_instances`, 128 by default). A short-lived child joins
/// the container's user namespace (gaining CAP_SYS_RESOURCE there, as its owner or as root) and
/// writes that namespace's own maximum, which only its `/proc/sys/user` view shows, then reads
/// it back. The workload cannot raise it: it has no capability, and `/proc/sys` is read-only.
#[allow(unsafe_code, reason = "the fork of the short-lived child (see the SAFETY comment)")]
fn bound_inotify(pid: Pid, instances: u64, watches: u64) -> Result<(), String> {
    let pidfd = sys::pidfd_open(pid).map_err(|e| format!("pidfd_open: {e}"))?;
    // SAFETY: the helper is single-threaded: `dispatch_if_helper` checked that it was the
    // process's only thread, and neither the helper nor libcontainer starts one.
    match unsafe { sys::fork_single_threaded() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Child => {
            let set = |file: &str, value: u64| {
                let path = format!("/proc/sys/user/{file}");
                std::fs::write(&path, value.to_string()).is_ok()
                    && std::fs::read_to_string(&path).is_ok_and(|r| r.trim() == value.to_string())
            };
            let code = match setns(&pidfd, CloneFlags::CLONE_NEWUSER) {
                Err(_) => 2,
                Ok(()) if !set("max_inotify_instances", instances) => 3,
                Ok(()) if !set("max_inotify_watches", watches) => 4,
                Ok(()) => 0,
            };
            sys::exit_now(code)
        }
        ForkResult::Parent { child } => match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, 0)) => Ok(()),
            Ok(WaitStatus::Exited(_, 2)) => Err(String::from("setns into the container's user namespace failed")),
            Ok(WaitStatus::Exited(_, 3)) => Err(String::from("max_inotify_instances did not take the value")),
            Ok(WaitStatus::Exited(_, 4)) => Err(String::from("max_inotify_watches did not take the value")),
            other => Err(format!("the inotify child failed ({other:?})")),
        },
    }
}

/// Raises `lo` from a short-lived child that joins the container's user (rootless) and
/// network namespaces (CONTRACT.md §15.8), through a pidfd: `/proc/<pid>/ns/*` would need
/// ptrace access to the (non-dumpable) init, which a non-root helper lacks.
#[allow(unsafe_code, reason = "the fork of the short-lived child (see the SAFETY comment)")]
fn raise_loopback(pid: Pid, rootless: bool) -> Result<(), String> {
    let pidfd = sys::pidfd_open(pid).map_err(|e| format!("pidfd_open: {e}"))?;
    let flags = if rootless { CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET } else { CloneFlags::CLONE_NEWNET };
    // SAFETY: the helper is single-threaded: `dispatch_if_helper` checked that it was the
    // process's only thread, and neither the helper nor libcontainer starts one.
    match unsafe { sys::fork_single_threaded() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Child => {
            let code = match setns(&pidfd, flags) {
                Err(_) => 2,
                Ok(()) if sys::loopback_up().is_err() => 3,
                Ok(()) => 0,
            };
            sys::exit_now(code)
        }
        ForkResult::Parent { child } => match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, 0)) => Ok(()),
            Ok(WaitStatus::Exited(_, 2)) => Err(String::from("setns into the container's namespaces failed")),
            Ok(WaitStatus::Exited(_, 3)) => Err(String::from("SIOCSIFFLAGS on lo failed")),
            other => Err(format!("raising lo failed ({other:?})")),
        },
    }
}

/// Reads the status pipe into `channel` until its first message, waiting at most `within`.
/// Ok: `ready`, or an early outcome of the init (kept in `channel`). Err: timeout, the end of
/// the pipe without a message, or a violation of the channel's framing.
fn wait_ready(status: &mut File, channel: &mut StatusChannel, within: Duration) -> Result<(), String> {
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
        let mut fds = [PollFd::new(status.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) | Err(nix::Error::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(format!("polling the status pipe: {e}")),
        }
        let mut chunk = [0u8; 1024];
        match status.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(String::from("the init did not report ready")),
            Ok(n) => channel.feed(chunk.get(..n).unwrap_or_default()).map_err(|e| format!("status channel: {e}"))?,
        }
    }
}

/// The listening end of the runtime's console socket (PTY mode).
struct ConsoleSocket {
    listener: std::os::unix::net::UnixListener,
    path: std::path::PathBuf,
}

impl ConsoleSocket {
    fn bind(dir: &std::path::Path) -> std::io::Result<ConsoleSocket> {
        let previous = std::env::current_dir()?;
        std::env::set_current_dir(dir)?;
        let listener = std::os::unix::net::UnixListener::bind("console.sock");
        std::env::set_current_dir(previous)?;
        Ok(ConsoleSocket { listener: listener?, path: dir.join("console.sock") })
    }

    /// Accepts the runtime's connection, receives the master, sets the initial 24 x 80 window
    /// and sends the master to the parent.
    fn forward_master(&self, fdpass: BorrowedFd<'_>) -> Result<(), String> {
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

/// Drops from the bundle's `config.json` the masks over other sets' scratch roots (listed in the
/// `sandbox.optional-masks` annotation) whose directory no longer exists on the host; returns
/// whether it dropped any. Only those masks are optional: a gone directory has nothing to
/// hide, and a set made there later is registered anew and masked by later spawns.
fn drop_vanished_masks(bundle: &Path) -> bool {
    let path = bundle.join("config.json");
    let Ok(text) = std::fs::read_to_string(&path) else { return false };
    let Ok(mut spec) = serde_json::from_str::<serde_json::Value>(&text) else { return false };
    let optional: Vec<String> = spec["annotations"]["sandbox.optional-masks"]
        .as_str()
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    let gone: Vec<&String> = optional
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound))
        .collect();
    if gone.is_empty() {
        return false;
    }
    let Some(mounts) = spec["mounts"].as_array_mut() else { return false };
    let before = mounts.len();
    mounts.retain(|m| !(m["type"] == "tmpfs" && gone.iter().any(|g| m["destination"] == g.as_str())));
    if mounts.len() == before {
        return false;
    }
    tracing::debug!(?gone, "dropping masks over scratch roots that are gone");
    serde_json::to_vec(&spec).is_ok_and(|bytes| std::fs::write(&path, bytes).is_ok())
}
