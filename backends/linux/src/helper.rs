//! The helper process: a re-execution of the embedding binary, dispatched by `sandbox::init()`
//! before any application code or thread runs, so libcontainer is only ever called from a
//! single-threaded process (CONTRACT.md §15.8, FIGURES.md P1).

mod console;
mod host;
mod limits;
mod namespaces;
mod spawn;
mod supervise;
mod zygote;

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::Path;

use libcontainer::container::Container;
use libcontainer::container::builder::ContainerBuilder;
use libcontainer::syscall::syscall::SyscallType;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;

use crate::executor::{GO_FD, STATUS_FD, SandboxExecutor};
use crate::protocol::{Command, Event, Measured, Outcome, Request, monotonic_us};
use crate::sys;

/// The `argv[1]` that makes a re-executed binary the helper. It never reaches a workload.
pub const HELPER_MARKER: &str = "--sandbox-linux-helper-v1";

/// The helper's control socket descriptor number.
pub const CONTROL_FD: RawFd = 3;

/// The helper's descriptor socket (PTY masters go to the parent over it).
pub const FDPASS_FD: RawFd = 4;

/// The argv[2] that makes the helper a zygote: it forks one worker per spawn.
pub const ZYGOTE_ROLE: &str = "zygote";

/// The zygote's request socket descriptor number: its stdin when it is executed (so that the
/// embedder can start it with `posix_spawn`, without a fork of its own address space or code
/// of ours between fork and exec); the zygote moves it and puts `/dev/null` there.
pub const ZYGOTE_FD: RawFd = 0;

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
            match zygote::run_zygote() {
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
    if request.cgroupless
        && let Err(e) = namespaces::enter_cgroupless()
    {
        let outcome = Outcome::Failed { detail: format!("helper: a run without a cgroup: {e}") };
        return control.send(&Event::Finished {
            outcome,
            measured: Measured { phases, ..Measured::default() },
            teardown: true,
        });
    }

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
    let console = if request.tty { Some(console::ConsoleSocket::bind(&request.bundle)?) } else { None };

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
    let measured = Measured { landlock_abi: kernel_abi, phases, ..Measured::default() };
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

    let mut live = host::Live {
        container,
        cgroup_path: request.cgroup_path.clone(),
        state_dir: request.state_root.join(&request.id),
        status: Some(status_r),
        control: Some(control),
        fdpass,
        go: Some(go_w),
        console,
    };
    spawn::drive(&mut live, &request, pid, measured)
}

/// The bytes for the init's `go` socket and the descriptors that go with them.
type GoMessage = (Vec<u8>, Vec<OwnedFd>);

/// A warm container waits here for its process: `Go` on the control socket, then the workload's
/// stdin, stdout and stderr on the descriptor socket. Returns the message for the init's `go`
/// socket (`w`, then the length and the JSON of the process) with those descriptors; None when
/// the embedder let the container go (EOF, or a SIGKILL request).
fn wait_for_go(control: &mut Control, fdpass: &File, keep: bool) -> std::io::Result<Option<GoMessage>> {
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
                let mut payload = if keep { b"k".to_vec() } else { b"w".to_vec() };
                payload.extend_from_slice(&len.to_le_bytes());
                payload.extend_from_slice(&json);
                return Ok(Some((payload, fds)));
            }
            Ok(Command::Signal { signal }) if signal == Signal::SIGKILL as i32 => return Ok(None),
            _ => {}
        }
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
