//! Short-lived children of the helper that join the container's namespaces through a pidfd:
//! one raises `lo`, one bounds inotify.

use nix::sched::{CloneFlags, setns};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid};

use crate::sys;

/// Bounds the run's inotify instances and watches (issue 12, class 10). inotify is counted per
/// user in every user namespace up to the initial one, against each namespace's own maximum;
/// the container's user namespace starts unbounded, so the run could take all of its host
/// uid's instances (`fs.inotify.max_user_instances`, 128 by default). A short-lived child joins
/// the container's user namespace (gaining CAP_SYS_RESOURCE there, as its owner or as root) and
/// writes that namespace's own maximum, which only its `/proc/sys/user` view shows, then reads
/// it back. The workload cannot raise it: it has no capability, and `/proc/sys` is read-only.
#[allow(unsafe_code, reason = "the fork of the short-lived child (see the SAFETY comment)")]
pub(super) fn bound_inotify(pid: Pid, instances: u64, watches: u64) -> Result<(), String> {
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
pub(super) fn raise_loopback(pid: Pid, rootless: bool) -> Result<(), String> {
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
