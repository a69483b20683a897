//! # sandbox-linux — one micro-container per spawn, run by an embedded OCI runtime
//!
//! Each spawn's bundle (compiled by `sandbox-bundle`) is run by libcontainer inside a
//! single-threaded helper: the embedding binary re-executed through `/proc/self/exe` and
//! dispatched by `sandbox::init()` ([`dispatch_if_helper`]). Inside the container, our own
//! executor applies Landlock and seccomp (the bundle's rules), forks the workload and stays as a
//! minimal init. The helper raises `lo`, reads back cgroup limits, reaps the init, deletes the
//! container and reports outcome and measurements back as data.
//!
//! **Guarantees.** libcontainer is never called from the embedder's process. A layer the caller
//! requires (`require_landlock`, `require_seccomp`, `require_loopback`) that cannot be applied
//! is a setup failure of the spawn, never a silent downgrade. The container init dies with the
//! helper (parent-death signal); the helper kills the container when the embedder closes its
//! control socket (on exit or death), so nothing outlives the embedder.
//!
//! **Decision.** The helper watches its control socket instead of relying on
//! `PR_SET_PDEATHSIG`: that signal fires when the *thread* that spawned the helper exits, which
//! in a thread-pool embedder (tokio's blocking pool) would kill healthy runs. The socket closes
//! exactly when the embedding process is gone.
//!
//! **Not here.** Profiles, policy and the bundle format live in `sandbox-bundle`; executors,
//! deadlines and output handling live in the `sandbox` facade.
//!
//! MSRV: 1.87 (edition 2024).

#![deny(unsafe_code)]

#[cfg(target_os = "linux")]
mod executor;
#[cfg(target_os = "linux")]
mod filter;
#[cfg(target_os = "linux")]
mod helper;
#[cfg(target_os = "linux")]
mod launch;
#[cfg(target_os = "linux")]
pub mod protocol;
#[cfg(target_os = "linux")]
mod ruleset;
#[cfg(target_os = "linux")]
pub mod status;
#[cfg(target_os = "linux")]
mod sys;

#[cfg(target_os = "linux")]
pub use helper::{HELPER_MARKER, dispatch_if_helper};
#[cfg(target_os = "linux")]
pub use launch::{Finished, Running, SignalHandle, WaitError, Zygote};

/// The name reported for this backend.
pub const BACKEND_NAME: &str = "linux-container";

/// The Landlock ABI of the running kernel (0 without Landlock).
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> u32 {
    sys::landlock_abi()
}

/// How the host's cgroups are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupLayout {
    /// Only cgroup v2 (`/sys/fs/cgroup/cgroup.controllers`).
    V2,
    /// v1 controllers, possibly with a v2 hierarchy beside them (libcontainer uses v1).
    V1OrHybrid,
    /// No cgroup filesystem found.
    None,
}

impl CgroupLayout {
    /// Reads `/sys/fs/cgroup`.
    pub fn detect() -> CgroupLayout {
        let root = std::path::Path::new("/sys/fs/cgroup");
        if root.join("cgroup.controllers").exists() {
            CgroupLayout::V2
        } else if root.join("pids").is_dir() || root.join("memory").is_dir() {
            CgroupLayout::V1OrHybrid
        } else {
            CgroupLayout::None
        }
    }

    /// The files holding the pids and memory limits of the cgroup at `path` (relative to the
    /// cgroup root, absolute form `/parent/id`).
    pub fn limit_files(self, path: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let rel = path.trim_start_matches('/');
        let root = std::path::Path::new("/sys/fs/cgroup");
        match self {
            CgroupLayout::V2 => (root.join(rel).join("pids.max"), root.join(rel).join("memory.max")),
            _ => (
                root.join("pids").join(rel).join("pids.max"),
                root.join("memory").join(rel).join("memory.limit_in_bytes"),
            ),
        }
    }

    /// Every directory a container cgroup at `path` occupies (for sweeping leftovers).
    pub fn dirs(self, path: &str) -> Vec<std::path::PathBuf> {
        let rel = path.trim_start_matches('/');
        let root = std::path::Path::new("/sys/fs/cgroup");
        match self {
            CgroupLayout::V2 => vec![root.join(rel)],
            CgroupLayout::V1OrHybrid => std::fs::read_dir(root)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n != "unified") && !p.is_symlink())
                .map(|p| p.join(rel))
                .collect(),
            CgroupLayout::None => Vec::new(),
        }
    }
}

/// Kills whatever is left in a container's own cgroup (`cgroup_path`, never a shared one),
/// removes its cgroup directories and its runtime state directory. Used after a helper died
/// without tearing its container down, and by the sweep of a dead executor set.
#[cfg(target_os = "linux")]
pub fn sweep_container(
    layout: CgroupLayout,
    cgroup_path: Option<&str>,
    state_dir: &std::path::Path,
) -> Result<(), String> {
    use std::time::{Duration, Instant};
    let mut problems = Vec::new();
    if let Some(path) = cgroup_path {
        for dir in layout.dirs(path) {
            if !dir.is_dir() {
                continue;
            }
            let end = Instant::now() + Duration::from_secs(5);
            loop {
                let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                let pids: Vec<i32> = procs.lines().filter_map(|l| l.trim().parse().ok()).collect();
                if pids.is_empty() {
                    break;
                }
                for pid in pids {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                }
                if Instant::now() > end {
                    problems.push(format!("{} still has processes", dir.display()));
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let end = Instant::now() + Duration::from_secs(2);
            while let Err(e) = std::fs::remove_dir(&dir) {
                if e.kind() == std::io::ErrorKind::NotFound {
                    break;
                }
                if Instant::now() > end {
                    problems.push(format!("removing {}: {e}", dir.display()));
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    if let Err(e) = std::fs::remove_dir_all(state_dir) {
        if e.kind() != std::io::ErrorKind::NotFound {
            problems.push(format!("removing {}: {e}", state_dir.display()));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

/// Sets the window size of a PTY master.
#[cfg(target_os = "linux")]
pub fn set_winsize(master: std::os::fd::BorrowedFd<'_>, rows: u16, cols: u16) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    sys::set_winsize(master.as_raw_fd(), rows, cols)
}

/// Gives a direct (unconfined) child a new PTY as its controlling terminal; returns the master.
#[cfg(target_os = "linux")]
pub fn attach_pty(command: &mut std::process::Command, rows: u16, cols: u16) -> std::io::Result<std::os::fd::OwnedFd> {
    sys::attach_pty(command, rows, cols)
}

/// A held handle on a grant target (CONTRACT.md §13.5): opened `O_PATH | O_NOFOLLOW` with
/// `RESOLVE_NO_SYMLINKS`; its `(dev, ino)` identifies the object.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct TargetHandle {
    fd: std::os::fd::OwnedFd,
}

#[cfg(target_os = "linux")]
impl TargetHandle {
    /// Opens the handle; fails if any component is a symlink or the path is missing.
    pub fn open(path: &std::path::Path) -> std::io::Result<TargetHandle> {
        Ok(TargetHandle { fd: sys::open_path_no_symlinks(path)? })
    }

    /// `(dev, ino)` of the held object.
    pub fn identity(&self) -> std::io::Result<(u64, u64)> {
        let st = nix::sys::stat::fstat(std::os::fd::AsRawFd::as_raw_fd(&self.fd))?;
        Ok((st.st_dev, st.st_ino))
    }
}
