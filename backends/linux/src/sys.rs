//! Every raw kernel call of the Linux backend that has no safe wrapper lives here.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::unistd::ForkResult;

/// The Landlock ABI version of the running kernel: 0 when Landlock is missing or disabled.
pub fn landlock_abi() -> u32 {
    // SAFETY: landlock_create_ruleset with a NULL attribute, size 0 and the VERSION flag only
    // returns the ABI version (or -1 with errno); it reads no memory and creates no descriptor.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    u32::try_from(v).unwrap_or(0)
}

/// `fork()` for a process that is single-threaded at the time of the call (the helper and the
/// container's init are), so the child may run arbitrary code.
///
/// # Safety
///
/// The calling process must have exactly one thread at the time of the call: no lock (of the
/// allocator, of std's environment, of stdio) may be held by a thread that does not exist in
/// the child.
pub unsafe fn fork_single_threaded() -> nix::Result<ForkResult> {
    // SAFETY: the caller guarantees this process has a single thread (this function's
    // contract), which is everything `fork` asks of a child that then runs arbitrary code.
    unsafe { nix::unistd::fork() }
}

/// Ends the current process at once, without running destructors or atexit handlers (after a
/// fork, or in the container init).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and touches no Rust state; it is async-signal-safe.
    unsafe { libc::_exit(code) }
}

/// Sets `IFF_UP` on `lo` in the network namespace the calling thread is in.
pub fn loopback_up() -> io::Result<()> {
    let sock = nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Inet,
        nix::sys::socket::SockType::Datagram,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the flags of the interface named in `req` into `req`, which
    // is a valid, writable ifreq for the duration of the call.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the union member `ifru_flags` is the one SIOCGIFFLAGS filled in.
    unsafe { req.ifr_ifru.ifru_flags |= libc::c_short::try_from(libc::IFF_UP).unwrap_or(1) };
    // SAFETY: SIOCSIFFLAGS reads the name and flags from `req`, a valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A listening TCP socket on `127.0.0.1:<port>` in this process's network namespace, without
/// `SO_REUSEADDR` (nothing else may bind the port while it listens), close-on-exec.
pub fn loopback_listener(port: u16) -> io::Result<OwnedFd> {
    use nix::sys::socket::{AddressFamily, Backlog, SockFlag, SockType, SockaddrIn, bind, listen, socket};
    let sock = socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)?;
    bind(sock.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, port))?;
    listen(&sock, Backlog::new(128).map_err(io::Error::from)?)?;
    Ok(sock)
}

/// Receives one descriptor sent by [`send_fd`] on `sock` if one is already waiting (never
/// blocks): None when nothing was sent.
pub fn try_recv_fd(sock: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut byte = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let flags = MsgFlags::MSG_CMSG_CLOEXEC | MsgFlags::MSG_DONTWAIT;
    let msg = match recvmsg::<()>(sock.as_raw_fd(), &mut iov, Some(&mut space), flags) {
        Ok(msg) => msg,
        Err(nix::errno::Errno::EAGAIN) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut received = Vec::new();
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            // SAFETY: SCM_RIGHTS just installed these descriptors in this process: each is
            // open and nothing owns it yet.
            received.extend(fds.into_iter().map(|fd| unsafe { own_fd(fd) }));
        }
    }
    Ok(received.into_iter().next())
}

/// Makes `fd` the descriptor number `target` (`dup2`), without `FD_CLOEXEC` (cleared when `fd`
/// already is `target`). Only async-signal-safe calls, allocates nothing: usable between fork
/// and exec.
///
/// # Safety
///
/// Whatever descriptor `target` is now is closed and replaced: no object of this process may
/// own `target` and still be used or dropped afterwards (typically: a child between fork and
/// exec, or one that set its descriptors up itself), unless `target` is `fd` itself.
pub unsafe fn dup_to(fd: BorrowedFd<'_>, target: RawFd) -> io::Result<()> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    if fd.as_raw_fd() == target {
        fcntl(fd.as_raw_fd(), FcntlArg::F_SETFD(FdFlag::empty()))?;
        return Ok(());
    }
    nix::unistd::dup2(fd.as_raw_fd(), target)?;
    Ok(())
}

/// Runs `f` in the child between fork and exec of `command` (see `CommandExt::pre_exec`).
///
/// # Safety
///
/// `f` runs in a child forked from a process that may have other threads: it may only call
/// async-signal-safe functions (no allocation, no lock, no `std` environment or stdio), and
/// every descriptor it names must be open in the parent when `command` is spawned.
pub unsafe fn pre_exec<F>(command: &mut std::process::Command, f: F)
where
    F: FnMut() -> io::Result<()> + Send + Sync + 'static,
{
    use std::os::unix::process::CommandExt;
    // SAFETY: the caller guarantees that `f` keeps to async-signal-safe calls (this
    // function's contract), which is what `pre_exec` requires.
    unsafe {
        command.pre_exec(f);
    }
}

/// `prctl(PR_SET_PDEATHSIG, SIGKILL)`, async-signal-safe.
pub fn die_with_parent() -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
    Ok(())
}

/// `prctl(PR_SET_DUMPABLE, 1)`.
pub fn set_dumpable() -> io::Result<()> {
    nix::sys::prctl::set_dumpable(true)?;
    Ok(())
}

/// `prctl(PR_SET_DUMPABLE, 0)`: `/proc/<pid>/{fd,mem,environ}`, `pidfd_getfd` and
/// `process_vm_readv` on this process then need a capability the workload never has.
pub fn set_non_dumpable() -> io::Result<()> {
    nix::sys::prctl::set_dumpable(false)?;
    Ok(())
}

/// A kernel signal mask (the 64 signals of x86_64 and aarch64), as `rt_sigprocmask` and
/// `rt_sigtimedwait` take it. glibc's wrappers silently drop its two reserved real-time
/// signals (32 and 33) from a set: these raw calls do not.
pub type KernelSigset = u64;

/// Every signal (the kernel ignores SIGKILL and SIGSTOP in a mask).
pub const ALL_SIGNALS: KernelSigset = !0;

/// The signal by which the helper tells a container's init to end the run (the kernel's last
/// real-time signal, which the embedder never sends: it asks only for SIGINT, SIGTERM and
/// SIGKILL): the init kills every other process of its namespace and ends as after any run,
/// its end-of-run checks included (the index entries of the run's last second,
/// `guard::Staging::finish`). A SIGKILL to the init skipped them: a workload that made a
/// change within its last second and then ran into its deadline or output limit had the
/// change hidden from the host's git (5 December, after red team AL). Sent from inside the
/// namespace it is ignored like every other signal, with one way around: a workload that
/// fills its uid's queue of pending signals (`RLIMIT_SIGPENDING`) makes the kernel queue a
/// signal to the init without its sender, which then reads as one from outside (red team AM).
/// Such a signal ends the workload's own run through the init's full end, or is forwarded to
/// the workload's own processes: nothing it could not do itself.
pub const END_RUN_SIGNAL: i32 = 64;

/// Sets the signal mask to `mask` (`rt_sigprocmask(SIG_SETMASK)`); returns the previous one.
pub fn set_signal_mask(mask: KernelSigset) -> io::Result<KernelSigset> {
    let mut old: KernelSigset = 0;
    // SAFETY: rt_sigprocmask reads 8 bytes from `mask` and writes 8 bytes to `old`, both on
    // this stack frame for the call (sigsetsize 8 is the kernel's size on every 64-bit target).
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &mask as *const KernelSigset,
            &mut old as *mut KernelSigset,
            std::mem::size_of::<KernelSigset>(),
        )
    };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(old) }
}

/// One signal taken by [`wait_signal`]: its number, `si_code` and `si_pid` (the sender's pid
/// as seen in this process's pid namespace: 0 for a sender outside it, or the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalInfo {
    /// The signal number (1..=64).
    pub signo: i32,
    /// `si_code` (`SI_USER` 0 for kill(2), `SI_KERNEL` 0x80, negative for sigqueue and tkill).
    pub code: i32,
    /// `si_pid`.
    pub pid: i32,
}

/// Takes the next pending signal of `set` (all blocked), waiting for one:
/// `rt_sigtimedwait` with no timeout. Never panics on real-time signals.
pub fn wait_signal(set: KernelSigset) -> io::Result<SignalInfo> {
    sigtimedwait(set, None)
}

/// Takes the next pending signal of `set` (all blocked), waiting at most `wait`: an error
/// (`EAGAIN`) when none came.
pub fn wait_signal_for(set: KernelSigset, wait: std::time::Duration) -> io::Result<SignalInfo> {
    let timeout = libc::timespec {
        tv_sec: libc::time_t::try_from(wait.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(i32::try_from(wait.subsec_nanos()).unwrap_or(0)),
    };
    sigtimedwait(set, Some(&timeout))
}

/// `rt_sigtimedwait` on `set`, waiting at most `timeout` (None: until a signal comes).
fn sigtimedwait(set: KernelSigset, timeout: Option<&libc::timespec>) -> io::Result<SignalInfo> {
    // SAFETY: siginfo_t is plain old data; all-zero is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let timeout = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: rt_sigtimedwait reads 8 bytes of `set` and the timespec `timeout` points to (or
    // none: null waits), and writes one siginfo_t into `info`, all alive on this frame for the
    // call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_sigtimedwait,
            &set as *const KernelSigset,
            &mut info as *mut libc::siginfo_t,
            timeout,
            std::mem::size_of::<KernelSigset>(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: si_pid reads the union member the kernel filled for kill, sigqueue, tkill and
    // SIGCHLD; for other codes it reads initialised (zeroed or kernel-written) memory.
    let pid = unsafe { info.si_pid() };
    Ok(SignalInfo { signo: info.si_signo, code: info.si_code, pid })
}

/// `kill(pid, signal)` with a raw signal number (real-time signals included).
pub fn kill_raw(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill takes two integers and touches no memory.
    if unsafe { libc::kill(pid, signal) } < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// How a reaped child ended, from its raw wait status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaped {
    /// It exited with this code.
    Exited(i32, i32),
    /// This signal (any of 1..=64) ended it.
    Signalled(i32, i32),
    /// Something else was reaped or reported (stopped, continued).
    Other,
}

/// `waitpid(-1, WNOHANG)` on raw statuses (nix refuses real-time signals with EINVAL after
/// reaping, which would lose the workload's status). None: nothing to reap now, or no child.
pub fn reap_any_nohang() -> Option<Reaped> {
    let mut status: libc::c_int = 0;
    // SAFETY: waitpid writes one int into `status`, alive on this frame.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    if pid <= 0 {
        return None;
    }
    Some(if libc::WIFEXITED(status) {
        Reaped::Exited(pid, libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Reaped::Signalled(pid, libc::WTERMSIG(status))
    } else {
        Reaped::Other
    })
}

/// Executes `path` with `argv` and `envp`; returns only on failure.
pub fn execve(path: &CString, argv: &[CString], envp: &[CString]) -> nix::Error {
    match nix::unistd::execve(path, argv, envp) {
        Err(e) => e,
        Ok(never) => match never {},
    }
}

/// `pidfd_open(2)`: a descriptor for `pid` that `setns` accepts (Linux 5.8+) without the
/// ptrace-style check that `/proc/<pid>/ns/*` makes (the container init is not dumpable).
pub fn pidfd_open(pid: nix::unistd::Pid) -> io::Result<std::os::fd::OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("pidfd out of range"))?;
    // SAFETY: pidfd_open just returned this descriptor: it is open and nothing owns it yet.
    Ok(unsafe { own_fd(fd) })
}

/// Takes ownership of a raw descriptor.
///
/// # Safety
///
/// `fd` must be open and owned by no other object of this process (a descriptor inherited at a
/// fixed number, or one the kernel has just returned), and nothing may close it by number
/// afterwards: the returned `OwnedFd` is its only owner and closes it exactly once.
pub unsafe fn own_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: the caller guarantees `fd` is open and has no other owner (this function's
    // contract), which is what `from_raw_fd` requires.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A copy of `fd` at the lowest free number from 10 up (`F_DUPFD`, without close-on-exec),
/// async-signal-safe.
pub fn dup_high(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let fd = nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD(10))?;
    // SAFETY: F_DUPFD just returned this descriptor: it is open and nothing owns it yet.
    Ok(unsafe { own_fd(fd) })
}

/// A close-on-exec copy of `fd` at the lowest free number from 10 up (`F_DUPFD_CLOEXEC`), out of
/// the way of the low numbers the helper and the init give fixed meanings.
pub fn dup_high_cloexec(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let fd = nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(10))?;
    // SAFETY: F_DUPFD_CLOEXEC just returned this descriptor: it is open and nothing owns it yet.
    Ok(unsafe { own_fd(fd) })
}

/// A close-on-exec copy of `fd` at the lowest free number (`F_DUPFD_CLOEXEC` from 0).
pub fn dup_lowest_cloexec(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let fd = nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(0))?;
    // SAFETY: F_DUPFD_CLOEXEC just returned this descriptor: it is open and nothing owns it yet.
    Ok(unsafe { own_fd(fd) })
}

/// Opens `name` relative to the directory `dir` (`openat`).
pub fn open_at(dir: BorrowedFd<'_>, name: &str, flags: nix::fcntl::OFlag) -> io::Result<OwnedFd> {
    let fd = nix::fcntl::openat(Some(dir.as_raw_fd()), name, flags, nix::sys::stat::Mode::empty())?;
    // SAFETY: openat just returned this descriptor: it is open and nothing owns it yet.
    Ok(unsafe { own_fd(fd) })
}

/// Sends `fd` over the unix socket `sock` (one byte of payload, SCM_RIGHTS).
pub fn send_fd(sock: BorrowedFd<'_>, fd: BorrowedFd<'_>) -> io::Result<()> {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    let iov = [std::io::IoSlice::new(b"f")];
    let fds = [fd.as_raw_fd()];
    sendmsg::<()>(sock.as_raw_fd(), &iov, &[ControlMessage::ScmRights(&fds)], MsgFlags::empty(), None)?;
    Ok(())
}

/// Receives one descriptor sent by [`send_fd`] on `sock`.
pub fn recv_fd(sock: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut byte = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = recvmsg::<()>(sock.as_raw_fd(), &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)?;
    let mut received = Vec::new();
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            // SAFETY: SCM_RIGHTS just installed these descriptors in this process: each is
            // open and nothing owns it yet.
            received.extend(fds.into_iter().map(|fd| unsafe { own_fd(fd) }));
        }
    }
    received.into_iter().next().ok_or_else(|| io::Error::other("no descriptor received"))
}

/// Sets the window size of the terminal `fd`.
pub fn set_winsize(fd: BorrowedFd<'_>, rows: u16, cols: u16) -> io::Result<()> {
    let ws = libc::winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCSWINSZ reads a winsize that lives on this stack frame for the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, &ws) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes the calling process's group the foreground group of the terminal on fd 0.
pub fn take_foreground() -> io::Result<()> {
    let pgrp = nix::unistd::getpgrp();
    nix::unistd::tcsetpgrp(std::io::stdin(), pgrp)?;
    Ok(())
}

/// Gives `command` a new PTY as its controlling terminal on stdin, stdout and stderr (a new
/// session; the child becomes the terminal's foreground group). Returns the master, with the
/// window at `rows` x `cols`.
pub fn attach_pty(command: &mut std::process::Command, rows: u16, cols: u16) -> io::Result<std::os::fd::OwnedFd> {
    let ws = libc::winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
    let pty = nix::pty::openpty(Some(&ws), None)?;
    let slave = std::fs::File::from(pty.slave);
    command.stdin(slave.try_clone()?).stdout(slave.try_clone()?).stderr(slave);
    let controlling_terminal = || {
        nix::unistd::setsid()?;
        // SAFETY: TIOCSCTTY on fd 0 (the PTY slave) takes an integer argument; no memory.
        if unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: the closure calls only setsid and ioctl, both async-signal-safe, allocates
    // nothing, and names only fd 0, which the child has as the PTY slave set just above.
    unsafe { pre_exec(command, controlling_terminal) };
    nix::fcntl::fcntl(pty.master.as_raw_fd(), nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))?;
    Ok(pty.master)
}

/// Closes every descriptor from `first` up (`close_range`).
///
/// # Safety
///
/// No object of this process that will still be used or dropped may own a descriptor at or
/// above `first` (objects that own one must have been forgotten, or belong to frames that
/// never run again): it would act on a closed, or reused, number.
pub unsafe fn close_from(first: RawFd) {
    let first = libc::c_uint::try_from(first).unwrap_or(0);
    // SAFETY: close_range takes three integers and touches no memory; the caller guarantees
    // that no live object owns a descriptor it closes (this function's contract).
    unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0u32) };
}

/// Sets every catchable signal's disposition back to the default (before exec).
pub fn reset_signal_dispositions() {
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: installing SIG_DFL installs no Rust handler, so no handler can observe
        // inconsistent state; this runs in a single-threaded child right before exec. Numbers
        // the C library reserves answer EINVAL, which changes nothing.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
}

/// Opens `path` as an `O_PATH | O_NOFOLLOW` handle with `RESOLVE_NO_SYMLINKS` (`openat2`): no
/// component may be a symlink.
pub fn open_path_no_symlinks(path: &std::path::Path) -> io::Result<std::os::fd::OwnedFd> {
    open_no_symlinks(libc::AT_FDCWD, path, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
}

/// Like [`open_path_no_symlinks`], but `path` is looked up from the open directory `dir` (the
/// object `dir` is, wherever it has moved), not from the root.
pub fn open_path_at_no_symlinks(
    dir: &std::os::fd::OwnedFd,
    path: &std::path::Path,
) -> io::Result<std::os::fd::OwnedFd> {
    open_no_symlinks(dir.as_raw_fd(), path, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
}

/// The open directory `dir` (an `O_PATH` descriptor, say) opened again for reading.
pub fn reopen_dir(dir: &std::os::fd::OwnedFd) -> io::Result<std::os::fd::OwnedFd> {
    open_no_symlinks(
        dir.as_raw_fd(),
        std::path::Path::new("."),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
    )
}

fn open_no_symlinks(dirfd: RawFd, path: &std::path::Path, flags: i32) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let cpath = CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::other("path contains NUL"))?;
    // SAFETY: open_how is plain old data; all-zero is valid and every field is set below.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = u64::try_from(flags).map_err(|_| io::Error::other("negative open flags"))?;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: `dirfd` is AT_FDCWD or a descriptor the caller holds open; openat2 reads the
    // NUL-terminated path and the open_how of the given size, both alive for the call, and
    // returns a new descriptor or -1.
    let fd =
        unsafe { libc::syscall(libc::SYS_openat2, dirfd, cpath.as_ptr(), &how, std::mem::size_of::<libc::open_how>()) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("descriptor out of range"))?;
    // SAFETY: openat2 just returned this descriptor: it is open and nothing owns it yet.
    Ok(unsafe { own_fd(fd) })
}

/// What `statx` says about an open object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statx {
    /// `st_dev` in `stat`'s encoding.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// Whether it is the root of a mount (None: the kernel does not report
    /// `STATX_ATTR_MOUNT_ROOT`).
    pub mount_root: Option<bool>,
    /// `ctime` (seconds, nanoseconds): a rename in a directory changes the directory's.
    pub ctime: (i64, u32),
    /// The birth time (seconds, nanoseconds); None where the filesystem keeps none.
    pub btime: Option<(i64, u32)>,
    /// `st_mode` (type and permissions).
    pub mode: u32,
}

/// `statx` of an open object (`AT_EMPTY_PATH`).
pub fn statx_identity(fd: &std::os::fd::OwnedFd) -> io::Result<Statx> {
    // SAFETY: statx is plain old data; all-zero is valid and the kernel fills it.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open, the empty path is a NUL-terminated literal and `stx` is a
    // live, writable statx for the duration of the call.
    let rc = unsafe { libc::statx(fd.as_raw_fd(), c"".as_ptr(), libc::AT_EMPTY_PATH, STATX_MASK, &mut stx) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let flag = libc::STATX_ATTR_MOUNT_ROOT as u64;
    Ok(Statx {
        dev: libc::makedev(stx.stx_dev_major, stx.stx_dev_minor),
        ino: stx.stx_ino,
        mount_root: (stx.stx_attributes_mask & flag != 0).then_some(stx.stx_attributes & flag != 0),
        ctime: (stx.stx_ctime.tv_sec, stx.stx_ctime.tv_nsec),
        btime: (stx.stx_mask & libc::STATX_BTIME != 0).then_some((stx.stx_btime.tv_sec, stx.stx_btime.tv_nsec)),
        mode: u32::from(stx.stx_mode),
    })
}

/// The inode's generation (`FS_IOC_GETVERSION`) of the directory or regular file `fd` refers to
/// (an `O_PATH` descriptor will do; `mode` is its `st_mode`): a number the filesystem draws anew
/// each time it gives an inode number out again (ext4 and f2fs draw it at random, XFS and btrfs
/// keep their own), so that `(st_dev, st_ino, generation)` names one object even across reuse of
/// the number. None for other types, where the filesystem keeps none (tmpfs, overlayfs) or the
/// object cannot be opened for reading.
pub fn generation(fd: &std::os::fd::OwnedFd, mode: u32) -> Option<u32> {
    let ask = |fd: RawFd| {
        let mut generation: libc::c_long = 0;
        // SAFETY: the descriptor is open; FS_IOC_GETVERSION writes at most one `long` (ext4
        // writes an `int` into its first bytes) into `generation`, alive for the call.
        let rc = unsafe { libc::ioctl(fd, libc::FS_IOC_GETVERSION, &mut generation) };
        // The first four bytes, whichever width the filesystem wrote (little-endian targets
        // only: x86_64 and aarch64).
        let bytes = generation.to_ne_bytes();
        (rc == 0).then(|| u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    };
    let kind = mode & libc::S_IFMT;
    if kind != libc::S_IFDIR && kind != libc::S_IFREG {
        return None;
    }
    if let Some(generation) = ask(fd.as_raw_fd()) {
        return Some(generation);
    }
    // An `O_PATH` descriptor takes no ioctl: opened again for reading, a directory as its `.`,
    // a regular file through its descriptor's link (never blocking, never a terminal).
    use nix::fcntl::OFlag;
    let reopened = if kind == libc::S_IFDIR {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
        open_at(std::os::fd::AsFd::as_fd(fd), ".", flags).ok()?
    } else {
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
        let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let opened = nix::fcntl::open(link.as_str(), flags, nix::sys::stat::Mode::empty()).ok()?;
        // SAFETY: open just returned this descriptor: it is open and nothing owns it yet.
        unsafe { own_fd(opened) }
    };
    // The object reopened must be the one asked about (a link is a path, resolved again).
    let same = |a: &std::os::fd::OwnedFd| statx_identity(a).ok().map(|s| (s.dev, s.ino));
    if same(&reopened) != same(fd) {
        return None;
    }
    ask(reopened.as_raw_fd())
}

/// What [`statx_identity`] asks for.
const STATX_MASK: u32 = libc::STATX_BASIC_STATS | libc::STATX_BTIME;

/// Whether the open object lies on a tmpfs (`fstatfs`).
pub fn is_tmpfs(fd: &std::os::fd::OwnedFd) -> io::Result<bool> {
    // SAFETY: statfs is plain old data; all-zero is valid and the kernel fills it.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open and `st` is a live, writable statfs for the call.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_type == libc::TMPFS_MAGIC)
}

/// The `d_ino` of the entry `name` in the open directory `dir` (None: no such entry). For a
/// mount point this is the covered inode, not the mounted root's.
pub fn dir_entry_ino(dir: std::os::fd::OwnedFd, name: &[u8]) -> io::Result<Option<u64>> {
    find_entry(dir, |entry, _| entry == name)
        .map(|found| found.map(|(_, ino)| ino))
        .map_err(|e| io::Error::from_raw_os_error(e as i32))
}

/// The first entry `(name, d_ino)` of the open directory `dir` for which `wanted` holds (`.`
/// and `..` included); None when none does. Consumes `dir` (read with `readdir`).
pub fn find_entry(
    dir: std::os::fd::OwnedFd,
    mut wanted: impl FnMut(&[u8], u64) -> bool,
) -> Result<Option<(Vec<u8>, u64)>, nix::Error> {
    use std::os::fd::IntoRawFd;
    let raw = dir.into_raw_fd();
    // SAFETY: `raw` is an open directory descriptor we own; on success the stream owns it.
    let stream = unsafe { libc::fdopendir(raw) };
    if stream.is_null() {
        let e = nix::Error::last();
        // SAFETY: fdopendir failed, so `raw` is still ours to close.
        unsafe { libc::close(raw) };
        return Err(e);
    }
    let mut found = None;
    loop {
        // SAFETY: `stream` is a live directory stream; the entry it returns stays valid until
        // the next readdir or closedir on it, and is only read before either.
        let entry = unsafe { libc::readdir64(stream) };
        if entry.is_null() {
            break;
        }
        // SAFETY: a non-null entry points to a live dirent64 (see above).
        let entry = unsafe { &*entry };
        // SAFETY: d_name of a dirent64 is NUL-terminated within the entry.
        let name = unsafe { std::ffi::CStr::from_ptr(entry.d_name.as_ptr()) }.to_bytes();
        if wanted(name, entry.d_ino) {
            found = Some((name.to_vec(), entry.d_ino));
            break;
        }
    }
    // SAFETY: `stream` is live and closed exactly once (this also closes `raw`).
    unsafe { libc::closedir(stream) };
    Ok(found)
}

/// Sends `payload` with `fds` attached (SCM_RIGHTS) on the unix socket `sock`, never raising
/// SIGPIPE.
pub fn send_with_fds(sock: BorrowedFd<'_>, payload: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    let iov = [std::io::IoSlice::new(payload)];
    let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    let cmsgs = if raw.is_empty() { Vec::new() } else { vec![ControlMessage::ScmRights(&raw)] };
    loop {
        match sendmsg::<()>(sock.as_raw_fd(), &iov, &cmsgs, MsgFlags::MSG_NOSIGNAL, None) {
            Ok(_) => return Ok(()),
            Err(nix::Error::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Receives one message of at most `buf.len()` bytes and up to eight descriptors (close-on-exec)
/// from `sock`. `Ok((0, _))` is the peer's end.
pub fn recv_with_fds(sock: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut space = nix::cmsg_space!([RawFd; 8]);
    let mut iov = [std::io::IoSliceMut::new(buf)];
    let msg = loop {
        match recvmsg::<()>(sock.as_raw_fd(), &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC) {
            Ok(m) => break m,
            Err(nix::Error::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    };
    let mut fds = Vec::new();
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(received) = cmsg {
            // SAFETY: SCM_RIGHTS just installed these descriptors in this process: each is
            // open and nothing owns it yet.
            fds.extend(received.into_iter().map(|fd| unsafe { own_fd(fd) }));
        }
    }
    Ok((msg.bytes, fds))
}

/// `pidfd_send_signal(2)`: signals the process behind `pidfd` (never a recycled pid).
pub fn pidfd_send_signal(pidfd: BorrowedFd<'_>, signal: i32) -> io::Result<()> {
    // SAFETY: the syscall takes a descriptor, a signal number and two null/zero arguments.
    let r =
        unsafe { libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), signal, std::ptr::null::<u8>(), 0u32) };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Whether the process behind `pidfd` has exited, waiting at most `ms` milliseconds.
pub fn pidfd_exited(pidfd: &std::os::fd::OwnedFd, ms: u16) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
    matches!(poll(&mut fds, PollTimeout::from(ms)), Ok(n) if n > 0)
}

/// Names the calling thread (`/proc/<pid>/comm`, at most 15 bytes).
pub fn set_name(name: &str) {
    if let Ok(name) = std::ffi::CString::new(name) {
        let _ = nix::sys::prctl::set_name(&name);
    }
}

/// `waitpid(-1, 0)`: waits for any child to end and reaps it. None: no child is left (or the
/// wait failed).
pub fn reap_any_wait() -> Option<Reaped> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid writes one int into `status`, alive on this frame.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid > 0 {
            return Some(if libc::WIFEXITED(status) {
                Reaped::Exited(pid, libc::WEXITSTATUS(status))
            } else if libc::WIFSIGNALED(status) {
                Reaped::Signalled(pid, libc::WTERMSIG(status))
            } else {
                Reaped::Other
            });
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// Drops every capability of the calling thread: the ambient set, each capability of the
/// bounding set (the last dropped is `CAP_SETPCAP`, which dropping the others needs), then the
/// effective, permitted and inheritable sets. A thread that holds none already succeeds
/// without any change (its bounding set is checked to be empty).
pub fn drop_all_capabilities() -> io::Result<()> {
    // SAFETY: prctl with integer arguments touches no memory.
    let r = unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let last = 63;
    let in_bounding = |cap: libc::c_ulong| {
        // SAFETY: prctl with integer arguments touches no memory.
        unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) == 1 }
    };
    const SETPCAP: libc::c_ulong = 8;
    let order = (0..=last).filter(|c| *c != SETPCAP).chain(std::iter::once(SETPCAP));
    for cap in order {
        if in_bounding(cap) {
            // SAFETY: prctl with integer arguments touches no memory.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header { version: 0x2008_0522, pid: 0 };
    let data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capset reads one header and two data structs (version 3), all alive on this frame
    // and laid out as the kernel's `__user_cap_header_struct` / `__user_cap_data_struct`.
    let r = unsafe { libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    if (0..=last).any(in_bounding) {
        return Err(io::Error::other("the bounding set is not empty"));
    }
    Ok(())
}

/// Opens the directory `name` (one component relative to `dir`, or an absolute path with
/// `dir` None) for reading, without following a symlink in its last component (`openat`; the
/// container's seccomp policy refuses `openat2`).
pub fn open_dir_at(dir: Option<BorrowedFd<'_>>, name: &std::ffi::OsStr) -> io::Result<OwnedFd> {
    use nix::fcntl::OFlag;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::openat(dir.map(|d| d.as_raw_fd()), name, flags, nix::sys::stat::Mode::empty())?;
    // SAFETY: openat just returned this descriptor: it is open and nothing owns it yet.
    Ok(unsafe { own_fd(fd) })
}

/// Makes the absolute path `path` the cwd, opened component by component from `/` without
/// following a symlink anywhere (`openat` with `O_NOFOLLOW`; the container's seccomp policy
/// refuses `openat2`): a component that is a symlink fails (ELOOP or ENOTDIR) instead of
/// leading elsewhere. `.` and `..` components are refused (EINVAL): a resolved path has none.
pub fn chdir_no_symlinks(path: &str) -> nix::Result<()> {
    use nix::fcntl::OFlag;
    use std::path::Component;
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut parts = std::path::Path::new(path).components();
    if parts.next() != Some(Component::RootDir) {
        return Err(nix::errno::Errno::EINVAL);
    }
    let fd = nix::fcntl::open("/", flags, nix::sys::stat::Mode::empty())?;
    // SAFETY: open just returned this descriptor: it is open and nothing owns it yet.
    let mut dir = unsafe { own_fd(fd) };
    for part in parts {
        let Component::Normal(name) = part else { return Err(nix::errno::Errno::EINVAL) };
        let fd = nix::fcntl::openat(Some(dir.as_raw_fd()), name, flags, nix::sys::stat::Mode::empty())?;
        // SAFETY: openat just returned this descriptor: it is open and nothing owns it yet.
        dir = unsafe { own_fd(fd) };
    }
    nix::unistd::fchdir(dir.as_raw_fd())
}

/// What another process of the same user may change in this one from outside, without any
/// capability (issue 16: a run of a kept container could so reach the next): every resource
/// limit (`prlimit64` lowers them), the nice value (`setpriority` raises it), the scheduling
/// policy, the CPU affinity, the I/O priority and the OOM score adjustment. Compared before and
/// after a run; None when one cannot be read.
pub fn outside_attributes() -> Option<Vec<i64>> {
    let mut values = Vec::new();
    for resource in 0..16u32 {
        // SAFETY: rlimit is plain old data; getrlimit writes one into `limit`, alive here.
        let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: as above; `resource` is a valid resource number (0..RLIMIT_NLIMITS).
        if unsafe { libc::getrlimit(resource, &mut limit) } != 0 {
            return None;
        }
        values.push(i64::try_from(limit.rlim_cur).unwrap_or(i64::MAX));
        values.push(i64::try_from(limit.rlim_max).unwrap_or(i64::MAX));
    }
    // getpriority may return -1 as a value: errno tells.
    nix::errno::Errno::clear();
    // SAFETY: getpriority takes integers and touches no memory.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    if nice == -1 && nix::errno::Errno::last_raw() != 0 {
        return None;
    }
    values.push(i64::from(nice));
    // SAFETY: sched_getscheduler takes an integer and touches no memory.
    values.push(i64::from(unsafe { libc::sched_getscheduler(0) }));
    let cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
    for cpu in 0..nix::sched::CpuSet::count() {
        values.push(i64::from(cpus.is_set(cpu).ok()?));
    }
    // SAFETY: ioprio_get(IOPRIO_WHO_PROCESS, self) takes integers and touches no memory.
    values.push(unsafe { libc::syscall(libc::SYS_ioprio_get, 1, 0) });
    let oom = std::fs::read_to_string("/proc/self/oom_score_adj").ok()?;
    values.push(oom.trim().parse().ok()?);
    // The umask every run inherits (read, not set: setting it to read it would change it for
    // a moment).
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let umask = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    values.push(i64::from_str_radix(umask.trim(), 8).ok()?);
    Some(values)
}

/// Discards every pending signal of `set` (all blocked): `rt_sigtimedwait` with a zero
/// timeout until none is left.
pub fn drain_signals(set: KernelSigset) {
    let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    for _ in 0..4096 {
        if sigtimedwait(set, Some(&zero)).is_err() {
            return;
        }
    }
}

/// The names of the extended attributes of `path` (not following a symlink), as the kernel
/// lists them (NUL-separated); POSIX ACLs show as `system.posix_acl_*`.
pub fn xattr_names(path: &std::path::Path) -> io::Result<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let cpath = CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::other("path contains NUL"))?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: `cpath` is NUL-terminated and `buf` is writable for its length, both alive for
    // the call.
    let n = unsafe { libc::llistxattr(cpath.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    buf.truncate(n);
    Ok(buf)
}

/// Writes the dirty pages of the open file `fd` out and waits for them (`sync_file_range`, no
/// metadata, no cache flush): a page written out is clean and write-protected again, so the
/// next write through a shared mapping of it faults and gives the file a new ctime.
pub fn write_out(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: `fd` is open for the call; sync_file_range reads nothing from our memory.
    let r = unsafe { libc::sync_file_range(fd.as_raw_fd(), 0, 0, flags) };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}
