//! The raw kernel calls of the creation guard (issue 14) and of its watch on direct network
//! calls (issue 17): installing a seccomp filter with a user-notification listener, and the
//! listener's ioctls. Every unsafe call of the guard lives here (see `guard.rs` for what the
//! calls are for).

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

use nix::errno::Errno;
use seccompiler::sock_filter;

use crate::sys::own_fd;

/// `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` (Linux 5.19): once the supervisor has received a
/// notification, only a fatal signal interrupts the waiting task, so a call the supervisor
/// performed is never restarted by the kernel (a restarted mkdir would answer EEXIST).
const WAIT_KILLABLE_RECV: libc::c_ulong = 1 << 5;

/// Installs `program` on the calling thread (and what it forks and execs) with a new
/// user-notification listener, and returns the listener. `no_new_privs` must be set.
pub fn install_with_listener(program: &[sock_filter]) -> io::Result<OwnedFd> {
    let len = libc::c_ushort::try_from(program.len()).map_err(|_| io::Error::other("filter too long"))?;
    let prog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut().cast::<libc::sock_filter>() };
    let mut last = io::Error::other("no attempt");
    for flags in [libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | WAIT_KILLABLE_RECV, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER] {
        // SAFETY: seccomp(SET_MODE_FILTER) reads the sock_fprog and the `len` instructions it
        // points to (`program`, alive and unchanged for the call; seccompiler's sock_filter has
        // the kernel's layout) and returns a new descriptor or -1; it writes no memory of ours.
        let fd = unsafe {
            libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, flags, &prog as *const libc::sock_fprog)
        };
        if fd >= 0 {
            let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("descriptor out of range"))?;
            // SAFETY: seccomp just returned this descriptor: it is open and nothing owns it yet.
            return Ok(unsafe { own_fd(fd) });
        }
        last = io::Error::last_os_error();
        // EINVAL: a kernel before 5.19 without the killable wait; try without it.
        if last.raw_os_error() != Some(libc::EINVAL) {
            break;
        }
    }
    Err(last)
}

/// Waits for the next notification on `listener` (`SECCOMP_IOCTL_NOTIF_RECV`).
pub fn recv(listener: BorrowedFd<'_>) -> Result<libc::seccomp_notif, Errno> {
    // SAFETY: seccomp_notif is plain old data; the kernel requires it zeroed before RECV.
    let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: RECV writes one seccomp_notif into `req`, alive and writable on this frame (the
    // kernel's struct has the libc crate's layout, checked by the guard's tests).
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut req) };
    if r < 0 { Err(Errno::last()) } else { Ok(req) }
}

/// Whether the notification `id` is still pending: its task is still waiting in that call
/// (`SECCOMP_IOCTL_NOTIF_ID_VALID`).
pub fn id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    // SAFETY: ID_VALID reads one u64 from `id`, alive on this frame.
    unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id as *const u64) == 0 }
}

/// Answers the notification `id`: the call returns `val`, or fails with `errno` when it is
/// non-zero (`SECCOMP_IOCTL_NOTIF_SEND`, never with `SECCOMP_USER_NOTIF_FLAG_CONTINUE`).
pub fn send(listener: BorrowedFd<'_>, id: u64, val: i64, errno: i32) -> Result<(), Errno> {
    let resp = libc::seccomp_notif_resp { id, val, error: if errno == 0 { 0 } else { -errno.abs() }, flags: 0 };
    // SAFETY: SEND reads one seccomp_notif_resp from `resp`, alive on this frame.
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &resp) };
    if r < 0 { Err(Errno::last()) } else { Ok(()) }
}

/// Lets the kernel perform the notified call as if it had not been sent to us
/// (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`, Linux 5.5). Only for calls whose arguments the
/// supervisor merely observes: the caller's memory may change between our check and the
/// kernel's read of it (see `guard/direct.rs` for why that is harmless there).
pub fn continue_call(listener: BorrowedFd<'_>, id: u64) -> Result<(), Errno> {
    let flags = u32::try_from(libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE).unwrap_or(1);
    let resp = libc::seccomp_notif_resp { id, val: 0, error: 0, flags };
    // SAFETY: SEND reads one seccomp_notif_resp from `resp`, alive on this frame.
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &resp) };
    if r < 0 { Err(Errno::last()) } else { Ok(()) }
}

/// The protocol name of the socket at descriptor `fd` of the thread whose `/proc/<tid>` is
/// `proc_dir` (`TCP`, `UDPv6`, `UNIX-STREAM`, …: sockfs's `system.sockprotoname` attribute,
/// read through the descriptor's magic link). None when it is no socket or is unreadable.
pub fn sock_proto_name(proc_dir: BorrowedFd<'_>, fd: i32) -> Option<String> {
    if fd < 0 {
        return None;
    }
    // Through our own descriptor of the pinned `/proc/<tid>`: the same thread's table.
    let path = std::ffi::CString::new(format!("/proc/self/fd/{}/fd/{fd}", proc_dir.as_raw_fd())).ok()?;
    let mut buf = [0u8; 64];
    // SAFETY: getxattr reads the NUL-terminated `path` and attribute name (both alive for the
    // call) and writes at most `buf.len()` bytes into `buf`, alive and writable on this frame.
    let n =
        unsafe { libc::getxattr(path.as_ptr(), c"system.sockprotoname".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let n = usize::try_from(n).ok()?;
    let name = buf.get(..n)?;
    let name = name.split(|&b| b == 0).next().unwrap_or_default();
    std::str::from_utf8(name).ok().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// Installs a copy of `fd` in the notifying task at its lowest free number and answers the
/// notification with that number, atomically (`SECCOMP_IOCTL_NOTIF_ADDFD` with
/// `SECCOMP_ADDFD_FLAG_SEND`, Linux 5.14; before it, the copy is installed and then sent).
pub fn add_fd_and_send(listener: BorrowedFd<'_>, id: u64, fd: BorrowedFd<'_>, cloexec: bool) -> Result<i32, Errno> {
    let send_flag = u32::try_from(libc::SECCOMP_ADDFD_FLAG_SEND).unwrap_or(2);
    match add_fd(listener, id, fd, cloexec, send_flag) {
        Err(Errno::EINVAL) => {
            let newfd = add_fd(listener, id, fd, cloexec, 0)?;
            send(listener, id, i64::from(newfd), 0)?;
            Ok(newfd)
        }
        other => other,
    }
}

fn add_fd(listener: BorrowedFd<'_>, id: u64, fd: BorrowedFd<'_>, cloexec: bool, flags: u32) -> Result<i32, Errno> {
    let srcfd = u32::try_from(fd.as_raw_fd()).map_err(|_| Errno::EBADF)?;
    let newfd_flags = if cloexec { libc::O_CLOEXEC as u32 } else { 0 };
    let add = libc::seccomp_notif_addfd { id, flags, srcfd, newfd: 0, newfd_flags };
    // SAFETY: ADDFD reads one seccomp_notif_addfd from `add`, alive on this frame; `fd` is open
    // for the call (borrowed).
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ADDFD, &add) };
    if r < 0 { Err(Errno::last()) } else { Ok(r) }
}

/// `openat(dir, name, flags, mode)`; `dir` None is `AT_FDCWD`.
pub fn open_at(dir: Option<BorrowedFd<'_>>, name: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, Errno> {
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: openat reads the NUL-terminated `name` (alive for the call) and returns a new
    // descriptor or -1; the mode is passed as the unsigned int the kernel reads.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: openat just returned this descriptor: it is open and nothing owns it yet.
    Ok(unsafe { own_fd(fd) })
}

/// The name of the entry of the directory `dir` whose inode number is `ino` (`.` and `..`
/// excluded); None when no entry has it. Consumes `dir` (read with `readdir`).
pub fn entry_with_ino(dir: OwnedFd, ino: u64) -> Result<Option<Vec<u8>>, Errno> {
    crate::sys::find_entry(dir, |name, i| i == ino && name != b"." && name != b"..")
        .map(|found| found.map(|(name, _)| name))
}
