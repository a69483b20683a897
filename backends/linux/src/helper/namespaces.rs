//! The helper's work in the container's namespaces, joined through a pidfd: `lo` raised (by
//! the helper itself as root, else by a short-lived child), the inotify bound and the mount
//! fixes (one short-lived child), and the egress proxy's listener (another).

use nix::sched::{CloneFlags, setns};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid};

use crate::sys;

/// Runs `work` in a short-lived child of the helper and returns the child's exit status (the
/// value `work` returned; [`PANICKED`] if it panicked). The child never returns into the helper's code: it
/// ends with `_exit` however `work` ends.
#[allow(unsafe_code, reason = "the fork of the short-lived child (see the SAFETY comment)")]
fn in_child(what: &str, work: impl FnOnce() -> i32) -> Result<i32, String> {
    // SAFETY: the helper is single-threaded: `dispatch_if_helper` checked that it was the
    // process's only thread, and neither the helper nor libcontainer starts one.
    match unsafe { sys::fork_single_threaded() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Child => {
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or(PANICKED);
            sys::exit_now(code)
        }
        ForkResult::Parent { child } => match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => Ok(code),
            other => Err(format!("the {what} child failed ({other:?})")),
        },
    }
}

/// The work done in the container's user namespace between `ready` and `go`, from one
/// short-lived child of the helper (a fork and a join, not two): the inotify bound, then the
/// mount fixes. Returns their outcomes in that order; each is `Ok` when not asked for.
///
/// The inotify bound (issue 12, class 10): inotify is counted per user in every user namespace
/// up to the initial one, against each namespace's own maximum; the container's user namespace
/// starts unbounded, so the run could take all of its host uid's instances
/// (`fs.inotify.max_user_instances`, 128 by default). The child, joined to the container's user
/// namespace (gaining CAP_SYS_RESOURCE there, as its owner or as root), writes that namespace's
/// own maximum, which only its `/proc/sys/user` view shows, then reads it back. It does so
/// through the host's `/proc` (before it joins the mount namespace, whose `/proc/sys` is
/// read-only). The workload cannot raise it: it has no capability, and `/proc/sys` is read-only.
///
/// The mount fixes (see [`crate::protocol::MountFixes`]): the child then joins the container's
/// mount namespace (owned by its user namespace: joined, the child has every capability there).
/// Nothing of the workload exists yet: the init waits for `go`.
pub(super) fn in_user_namespace(
    pid: Pid,
    inotify: Option<(u64, u64)>,
    fixes: &crate::protocol::MountFixes,
) -> (Result<(), String>, Result<(), String>) {
    let pidfd = match sys::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) => return (Err(format!("pidfd_open: {e}")), Err(format!("pidfd_open: {e}"))),
    };
    // The child's status: the inotify outcome in bits 0-1, the mounts' in bits 2-7.
    let status = in_child("namespace", || {
        if setns(&pidfd, CloneFlags::CLONE_NEWUSER).is_err() {
            return INOTIFY_NO_USERNS | MOUNTS_NO_JOIN << 2;
        }
        let bound = match inotify {
            None => 0,
            Some((instances, watches)) => {
                let set = |file: &str, value: u64| {
                    let path = format!("/proc/sys/user/{file}");
                    std::fs::write(&path, value.to_string()).is_ok()
                        && std::fs::read_to_string(&path).is_ok_and(|r| r.trim() == value.to_string())
                };
                if !set("max_inotify_instances", instances) {
                    INOTIFY_INSTANCES
                } else if !set("max_inotify_watches", watches) {
                    INOTIFY_WATCHES
                } else {
                    0
                }
            }
        };
        bound | fix_mounts_here(&pidfd, fixes)
    });
    let code = match status {
        Ok(PANICKED) => Err(String::from("the namespace child panicked")),
        Ok(code) => Ok(code),
        Err(e) => Err(e),
    };
    let code = match code {
        Ok(code) => code,
        Err(e) => return (Err(e.clone()), Err(e)),
    };
    let bound = match code & 0b11 {
        _ if inotify.is_none() => Ok(()),
        0 => Ok(()),
        INOTIFY_NO_USERNS => Err(String::from("setns into the container's user namespace failed")),
        INOTIFY_INSTANCES => Err(String::from("max_inotify_instances did not take the value")),
        _ => Err(String::from("max_inotify_watches did not take the value")),
    };
    let fixed = match code >> 2 {
        _ if fixes.is_empty() => Ok(()),
        0 => Ok(()),
        MOUNTS_NO_JOIN => Err(String::from("setns into the container's namespaces failed")),
        n @ PIN_FIRST..DEVICE_FIRST => Err(format!(
            "{} could not be bound onto itself",
            named(&fixes.pins, n - PIN_FIRST, DEVICE_FIRST - 1 - PIN_FIRST)
        )),
        n => Err(format!(
            "{} could not be made read-only",
            named(&fixes.devices, n - DEVICE_FIRST, DEVICE_LAST - DEVICE_FIRST)
        )),
    };
    (bound, fixed)
}

/// The path at `index` of `paths`, as the child's status named it: the last index it can name
/// (`last`) stands for that entry and every later one.
fn named(paths: &[std::path::PathBuf], index: i32, last: i32) -> String {
    let i = usize::try_from(index).unwrap_or(usize::MAX);
    match paths.get(i) {
        Some(path) if index < last || paths.len() == i + 1 => path.display().to_string(),
        Some(path) => format!("{} or a later entry", path.display()),
        None => String::from("an entry"),
    }
}

/// The exit status of a short-lived child whose work panicked; in the namespace child's
/// encoding, a value no outcome makes (the mounts' part 63).
const PANICKED: i32 = 255;
/// The namespace child's inotify outcomes (bits 0-1 of its status).
const INOTIFY_NO_USERNS: i32 = 1;
const INOTIFY_INSTANCES: i32 = 2;
const INOTIFY_WATCHES: i32 = 3;
/// Its mounts' outcomes (bits 2-7): no join; a pin's index from `PIN_FIRST`, a device's from
/// `DEVICE_FIRST` up to `DEVICE_LAST` (the last of each range stands for it and every later one).
const MOUNTS_NO_JOIN: i32 = 1;
const PIN_FIRST: i32 = 2;
const DEVICE_FIRST: i32 = 32;
const DEVICE_LAST: i32 = 62;

/// In the namespace child, joined to the container's user namespace: joins its mount namespace
/// and applies `fixes`. Returns the mounts' part of the child's status (0: done or nothing to do).
fn fix_mounts_here(pidfd: &std::os::fd::OwnedFd, fixes: &crate::protocol::MountFixes) -> i32 {
    use nix::mount::{MsFlags, mount};
    if fixes.is_empty() {
        return 0;
    }
    if setns(pidfd, CloneFlags::CLONE_NEWNS).is_err() {
        return MOUNTS_NO_JOIN << 2;
    }
    let index = |first: i32, last: i32, i: usize| (first + i32::try_from(i).unwrap_or(i32::MAX).min(last - first)) << 2;
    for (i, pin) in fixes.pins.iter().enumerate() {
        if mount(Some(pin), pin, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>).is_err() {
            return index(PIN_FIRST, DEVICE_FIRST - 1, i);
        }
    }
    for (i, dev) in fixes.devices.iter().enumerate() {
        if !read_only_device(dev) {
            return index(DEVICE_FIRST, DEVICE_LAST, i);
        }
    }
    0
}

/// Raises `lo` in the container's network namespace (CONTRACT.md §15.8), joined through a
/// pidfd: `/proc/<pid>/ns/*` would need ptrace access to the (non-dumpable) init, which a
/// non-root helper lacks. As root, when the helper may join its own network namespace again,
/// the helper itself (see [`raise_loopback_here`]): a fork less on every cold spawn. Otherwise
/// from a short-lived child that joins the container's network namespace, and its user
/// namespace too when rootless (a user namespace, once joined, cannot be left).
pub(super) fn raise_loopback(pid: Pid, rootless: bool) -> Result<(), String> {
    let pidfd = sys::pidfd_open(pid).map_err(|e| format!("pidfd_open: {e}"))?;
    if !rootless {
        if let Some(own) = own_network_namespace() {
            return raise_loopback_here(&pidfd, &own);
        }
    }
    let flags = if rootless { CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET } else { CloneFlags::CLONE_NEWNET };
    let code = in_child("loopback", || match setns(&pidfd, flags) {
        Err(_) => 2,
        Ok(()) if sys::loopback_up().is_err() => 3,
        Ok(()) => 0,
    })?;
    match code {
        0 => Ok(()),
        2 => Err(String::from("setns into the container's namespaces failed")),
        3 => Err(String::from("SIOCSIFFLAGS on lo failed")),
        n => Err(format!("raising lo failed (status {n})")),
    }
}

/// The helper's own network namespace, if the helper may join it again: it does so once, in
/// place, which the kernel allows exactly when a later return would be allowed (CAP_SYS_ADMIN
/// over the user namespace that owns it). Root in a user namespace that does not own its
/// network namespace (`unshare -Ur` without `-n`) may not, and gets None: the child then.
fn own_network_namespace() -> Option<std::fs::File> {
    let own = std::fs::File::open("/proc/thread-self/ns/net").ok()?;
    setns(&own, CloneFlags::CLONE_NEWNET).ok()?;
    Some(own)
}

/// Raises `lo` from the helper itself: it joins the container's network namespace, raises `lo`
/// with one socket made there, and joins `own` (its own network namespace, from
/// [`own_network_namespace`]) again. The helper is single-threaded, and nothing runs in the
/// container yet (its init waits for `go`). A helper that could not get back ends at once (the
/// embedder reports the helper's death; the init dies with it, its parent): nothing it does
/// afterwards may happen from inside the container's network.
fn raise_loopback_here(pidfd: &std::os::fd::OwnedFd, own: &std::fs::File) -> Result<(), String> {
    setns(pidfd, CloneFlags::CLONE_NEWNET)
        .map_err(|e| format!("setns into the container's network namespace failed: {e}"))?;
    let up = sys::loopback_up();
    if setns(own, CloneFlags::CLONE_NEWNET).is_err() {
        sys::exit_now(EXIT_NETNS_LOST);
    }
    up.map_err(|e| format!("SIOCSIFFLAGS on lo failed: {e}"))
}

/// The helper's exit status when it could not rejoin its own network namespace.
const EXIT_NETNS_LOST: i32 = 71;

/// Makes the egress proxy's listener (issue 17) on `127.0.0.1:<port>` in the container's
/// network namespace, from a short-lived child that joins it (and the user namespace, rootless)
/// through a pidfd and hands the socket back over a socketpair. The socket belongs to that
/// namespace wherever it is held: the parent accepts the workload's connections on it from
/// outside, and no process inside serves the proxy.
pub(super) fn proxy_listener(pid: Pid, rootless: bool, port: u16) -> Result<std::os::fd::OwnedFd, String> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    use std::os::fd::AsFd;
    let pidfd = sys::pidfd_open(pid).map_err(|e| format!("pidfd_open: {e}"))?;
    let (ours, theirs) = socketpair(AddressFamily::Unix, SockType::Stream, None, SockFlag::SOCK_CLOEXEC)
        .map_err(|e| format!("socketpair: {e}"))?;
    let flags = if rootless { CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET } else { CloneFlags::CLONE_NEWNET };
    let code = in_child("listener", || match setns(&pidfd, flags) {
        Err(_) => 2,
        Ok(()) => match sys::loopback_listener(port) {
            Err(_) => 3,
            Ok(listener) if sys::send_fd(theirs.as_fd(), listener.as_fd()).is_err() => 4,
            Ok(_) => 0,
        },
    })?;
    drop(theirs);
    match code {
        0 => sys::recv_fd(ours.as_fd()).map_err(|e| format!("receiving the listener: {e}")),
        2 => Err(String::from("setns into the container's namespaces failed")),
        3 => Err(format!("binding 127.0.0.1:{port} failed")),
        4 => Err(String::from("passing the listener failed")),
        n => Err(format!("the listener child failed (status {n})")),
    }
}

/// A run without a usable cgroup (issue 15): the runtime would still put the container into a
/// cgroup of the host's hierarchy, and on cgroup v1 (or hybrid) a non-root user can create
/// none. The helper therefore first enters a user namespace of its own (its uid and gid mapped
/// to themselves: files keep their owners, the container's own mapping is written as before),
/// with a private mount namespace and cgroup namespace, and mounts a cgroup2 view of its own
/// cgroup on `/sys/fs/cgroup` there. The runtime then takes the unified manager, whose rootless
/// mode leaves the process where it is when it may not make a cgroup; the host's hierarchies are
/// neither reshaped nor written. What bounds the run then: its pid namespace (killing the init
/// ends every process of the run), and `RLIMIT_NPROC`, counted per user namespace.
pub(super) fn enter_cgroupless() -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    nix::sched::unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWCGROUP)
        .map_err(|e| format!("unshare(user, mount, cgroup): {e}"))?;
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text).map_err(|e| format!("writing /proc/self/{file}: {e}"))
    };
    write("setgroups", String::from("deny"))?;
    write("uid_map", format!("{uid} {uid} 1\n"))?;
    write("gid_map", format!("{gid} {gid} 1\n"))?;
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_SLAVE, None::<&str>)
        .map_err(|e| format!("making / a slave: {e}"))?;
    mount(
        Some("cgroup2"),
        "/sys/fs/cgroup",
        Some("cgroup2"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| format!("mounting cgroup2 on /sys/fs/cgroup: {e}"))
}

/// Remounts `path` read-only, keeping its other flags, when it is a mount point of a character
/// or block device (true: done, or nothing to do there).
fn read_only_device(path: &std::path::Path) -> bool {
    use nix::mount::{MsFlags, mount};
    use nix::sys::statvfs::{FsFlags, statvfs};
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else { return true };
    if !(meta.file_type().is_char_device() || meta.file_type().is_block_device()) {
        return true;
    }
    let Ok(fd) = sys::open_path_no_symlinks(path) else { return false };
    match sys::statx_identity(&fd) {
        Ok(st) if st.mount_root == Some(false) => return true,
        Ok(_) => {}
        Err(_) => return false,
    }
    let Ok(vfs) = statvfs(path) else { return false };
    let f = vfs.flags();
    let mut flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY;
    for (have, set) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if f.contains(have) {
            flags |= set;
        }
    }
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>).is_ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A failed fix is named by its index in the child's status; the last index it can carry
    /// stands for every later entry too, and says so.
    #[test]
    fn a_failed_fix_is_named_honestly() {
        let paths: Vec<std::path::PathBuf> = (0..40).map(|i| format!("/p{i}").into()).collect();
        assert_eq!(named(&paths, 3, 29), "/p3");
        assert_eq!(named(&paths, 29, 29), "/p29 or a later entry");
        assert_eq!(named(&paths[..30], 29, 29), "/p29");
        assert_eq!(named(&paths[..2], 5, 29), "an entry");
        // Every outcome fits the status byte, and none is the panic's.
        let most = INOTIFY_WATCHES | DEVICE_LAST << 2;
        assert!(most < PANICKED && PANICKED <= 255);
    }

    /// The in-place join that decides between the helper raising `lo` itself and the child:
    /// root in the initial user namespace may rejoin its network namespace; root in a user
    /// namespace that does not own it (`unshare -Ur`, a child of this test binary running this
    /// test again) may not, nor may an ordinary user. The sandbox's own suites check the rest
    /// from inside (`linux_conformance`, `the_helper_that_raised_lo_is_back_in_…`).
    #[test]
    fn own_network_namespace_only_where_it_can_be_rejoined() {
        if std::env::var_os("SANDBOX_TEST_FOREIGN_NETNS").is_some() {
            assert!(own_network_namespace().is_none(), "root in a user namespace without its network namespace");
            return;
        }
        let root = nix::unistd::geteuid().is_root();
        // Root of the initial user namespace (`0 0 4294967295`): any network namespace is its.
        let initial = std::fs::read_to_string("/proc/self/uid_map")
            .is_ok_and(|m| m.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"]);
        match (root, initial) {
            (true, true) => assert!(own_network_namespace().is_some(), "root of the initial user namespace"),
            (false, _) => assert!(own_network_namespace().is_none(), "an ordinary user"),
            (true, false) => eprintln!("(root of a user namespace: the in-place join is not predicted here)"),
        }
        let name = "helper::namespaces::tests::own_network_namespace_only_where_it_can_be_rejoined";
        let child = std::process::Command::new("unshare")
            .arg("-Ur")
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads=1"])
            .env("SANDBOX_TEST_FOREIGN_NETNS", "1")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&child.stdout);
        if root && initial {
            assert!(child.status.success(), "{out}{}", String::from_utf8_lossy(&child.stderr));
            assert!(out.contains("1 passed"), "the child ran no test: {out}");
        } else if !child.status.success() {
            eprintln!("(`unshare -Ur` did not run the check here: {out})");
        }
    }
}
