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
//! **API.** The facade drives this backend through [`backend`]: open a [`backend::LinuxBackend`]
//! per executor set, record its probe, assess a profile, launch, wait, signal and finish
//! spawns, settle and sweep. The helper's wire protocol stays private to this crate.
//!
//! **Not here.** Profiles, policy and the bundle format live in `sandbox-bundle`; executors,
//! deadlines, cancellation and output handling live in the `sandbox` facade (which hands the
//! backend its deadline through [`backend::Deadline`]).
//!
//! MSRV: 1.87 (edition 2024).

#![deny(unsafe_code)]

#[cfg(target_os = "linux")]
pub mod backend;
#[cfg(target_os = "linux")]
pub mod cgroups;
#[cfg(target_os = "linux")]
mod executor;
#[cfg(target_os = "linux")]
mod filter;
#[cfg(target_os = "linux")]
mod fresh;
#[cfg(target_os = "linux")]
mod guard;
#[cfg(target_os = "linux")]
mod helper;
#[cfg(target_os = "linux")]
pub mod hostcheck;
#[cfg(target_os = "linux")]
mod launch;
#[cfg(target_os = "linux")]
mod notify;
#[cfg(target_os = "linux")]
mod protocol;
#[cfg(target_os = "linux")]
mod ruleset;
#[cfg(target_os = "linux")]
mod status;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod verify;

#[cfg(target_os = "linux")]
pub use helper::{HELPER_MARKER, dispatch_if_helper};
#[cfg(target_os = "linux")]
pub use launch::SignalHandle;
#[cfg(target_os = "linux")]
use launch::{Running, WaitError, Zygote};

/// The helper protocol's messages, for the fuzz targets only (`fuzz/`): the protocol is this
/// crate's own (the facade drives the [`backend`] API), and this module is no API.
#[cfg(target_os = "linux")]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::protocol::{Command, Event, Limit, Measured, Outcome, Request};
}

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

    /// The files holding the CPU weight and the CPU quota of the cgroup at `path` (relative to
    /// the cgroup root): `cpu.weight` and `cpu.max` on v2, `cpu.shares` and `cpu.cfs_quota_us` on
    /// v1 (the period stays the kernel's default, 100 ms, on both).
    pub fn cpu_files(self, path: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let rel = path.trim_start_matches('/');
        let root = std::path::Path::new("/sys/fs/cgroup");
        match self {
            CgroupLayout::V2 => (root.join(rel).join("cpu.weight"), root.join(rel).join("cpu.max")),
            _ => (root.join("cpu").join(rel).join("cpu.shares"), root.join("cpu").join(rel).join("cpu.cfs_quota_us")),
        }
    }

    /// The value written to the weight file of [`CgroupLayout::cpu_files`] for a cgroup v2
    /// weight (1-10000, default 100): itself on v2, `weight × 1024 / 100` shares on v1 (at least
    /// 2, the kernel's minimum), so that the default weight 100 maps to the default 1024 shares.
    pub fn cpu_weight_value(self, weight: u16) -> u64 {
        match self {
            CgroupLayout::V2 => u64::from(weight),
            _ => (u64::from(weight) * 1024 / 100).max(2),
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

/// Whether `id` has the form of this library's container ids (`sbx-<8 hex>-<counter>`).
pub fn is_container_id(id: &str) -> bool {
    let Some(rest) = id.strip_prefix("sbx-") else { return false };
    let Some((tag, counter)) = rest.split_once('-') else { return false };
    tag.len() == 8
        && tag.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && !counter.is_empty()
        && counter.len() <= 20
        && counter.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `path` is an absolute cgroup path in normal form: `/`-separated plain names, no
/// `.`, `..` or empty component.
pub fn is_normal_cgroup_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else { return false };
    !rest.is_empty() && rest.split('/').all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'))
}

/// The largest `cgroup.procs` a sweep reads (a container's cgroup holds at most `pids.max`).
#[cfg(target_os = "linux")]
const MAX_PROCS_BYTES: u64 = 1 << 20;

/// Why a sweep left a cgroup directory alone, or could not read its members.
#[cfg(target_os = "linux")]
#[derive(Debug, thiserror::Error)]
enum CgroupCheck {
    #[error("{}: {source}", dir.display())]
    Open { dir: std::path::PathBuf, source: std::io::Error },
    #[error("{}: statfs: {source}", dir.display())]
    Statfs { dir: std::path::PathBuf, source: nix::Error },
    #[error("{}: {source}", dir.display())]
    Stat { dir: std::path::PathBuf, source: nix::Error },
    #[error("{} is not on a cgroup filesystem", .0.display())]
    NotCgroup(std::path::PathBuf),
    #[error("{} is not a directory", .0.display())]
    NotDirectory(std::path::PathBuf),
    #[error("{} was not created by this user", .0.display())]
    NotOurs(std::path::PathBuf),
    #[error("cgroup.procs: {0}")]
    Procs(#[source] std::io::Error),
    #[error("cgroup.procs is not a regular file")]
    ProcsNotFile,
}

/// A container cgroup directory verified as this library's, opened without following any
/// symlink: on a cgroup filesystem and owned by this uid.
#[cfg(target_os = "linux")]
fn open_own_cgroup(dir: &std::path::Path) -> Result<std::os::fd::OwnedFd, CgroupCheck> {
    use std::os::fd::AsRawFd;
    let fd = sys::open_path_no_symlinks(dir).map_err(|source| CgroupCheck::Open { dir: dir.to_owned(), source })?;
    let magic = nix::sys::statfs::fstatfs(&fd).map_err(|source| CgroupCheck::Statfs { dir: dir.to_owned(), source })?;
    let kind = magic.filesystem_type();
    if kind != nix::sys::statfs::CGROUP2_SUPER_MAGIC && kind != nix::sys::statfs::CGROUP_SUPER_MAGIC {
        return Err(CgroupCheck::NotCgroup(dir.to_owned()));
    }
    let st =
        nix::sys::stat::fstat(fd.as_raw_fd()).map_err(|source| CgroupCheck::Stat { dir: dir.to_owned(), source })?;
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(CgroupCheck::NotDirectory(dir.to_owned()));
    }
    if st.st_uid != nix::unistd::geteuid().as_raw() {
        return Err(CgroupCheck::NotOurs(dir.to_owned()));
    }
    Ok(fd)
}

/// The pids of the verified cgroup `dir` (its kernel-made `cgroup.procs`, opened without
/// following symlinks or blocking, a regular file, read within a bound); never 1 or less.
#[cfg(target_os = "linux")]
fn cgroup_pids(dir: &std::os::fd::OwnedFd) -> Result<Vec<i32>, CgroupCheck> {
    use std::io::Read;
    use std::os::fd::AsFd;
    let flags = nix::fcntl::OFlag::O_RDONLY
        | nix::fcntl::OFlag::O_NOFOLLOW
        | nix::fcntl::OFlag::O_NONBLOCK
        | nix::fcntl::OFlag::O_CLOEXEC;
    let fd = sys::open_at(dir.as_fd(), "cgroup.procs", flags).map_err(CgroupCheck::Procs)?;
    let file = std::fs::File::from(fd);
    let meta = file.metadata().map_err(CgroupCheck::Procs)?;
    if !meta.is_file() {
        return Err(CgroupCheck::ProcsNotFile);
    }
    let mut text = String::new();
    file.take(MAX_PROCS_BYTES).read_to_string(&mut text).map_err(CgroupCheck::Procs)?;
    Ok(kill_targets(&text))
}

/// The pids of a `cgroup.procs` text that may be killed: plain decimal numbers above 1 (never
/// `-1`, which would signal every process the caller may signal, nor 0, a process group, nor
/// the init).
fn kill_targets(text: &str) -> Vec<i32> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|l| l.parse::<i32>().ok())
        .filter(|p| *p > 1)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn kill_targets_are_never_one_or_less() {
        let text = "-1\n0\n1\n+7\n 42 \n-42\n99999999999\nabc\n\n4194304\n";
        assert_eq!(kill_targets(text), vec![42, 4194304]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_sweep_names_each_problem_with_its_cause() {
        let err = sweep_container(CgroupLayout::None, Some("/sandbox/../etc"), None).unwrap_err();
        assert_eq!(err.to_string(), r#""/sandbox/../etc" is not a container cgroup of this library: left alone"#);
        let dir = std::env::temp_dir().join(format!("sbx-sweep-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("x")).unwrap();
        std::fs::write(dir.join("x/file"), b"").unwrap();
        // A state directory that cannot be removed: a file where its parent should be.
        let state = dir.join("x/file/state");
        let err = sweep_container(CgroupLayout::None, None, Some(&state)).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("removing "), "{text}");
        assert_eq!(err.problems().count(), 1);
        let removing = err.problems().next().unwrap();
        assert!(removing.source().and_then(|s| s.downcast_ref::<std::io::Error>()).is_some(), "{removing}");
        // A cgroup left alone keeps the state: a later sweep finds the container by it.
        let kept = dir.join("state");
        std::fs::create_dir_all(kept.join("sbx-0123abcd-1")).unwrap();
        let err = sweep_container(CgroupLayout::None, Some("/"), Some(&kept)).unwrap_err();
        assert_eq!(err.problems().count(), 1, "{err}");
        assert!(kept.join("sbx-0123abcd-1").is_dir(), "the state went with the cgroup left alone");
        assert!(sweep_container(CgroupLayout::None, None, Some(&kept)).is_ok());
        assert!(!kept.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_our_container_ids_and_normal_paths() {
        assert!(is_container_id("sbx-0123abcd-0") && is_container_id("sbx-deadbeef-123"));
        for bad in ["sbx-0123abc-1", "sbx-0123abcg-1", "sbx-0123abcd-", "sbx-0123abcd-1a", "..", "sbx-0123ABCD-1", "x"]
        {
            assert!(!is_container_id(bad), "{bad}");
        }
        assert!(is_normal_cgroup_path("/sandbox/sbx-0123abcd-1"));
        for bad in ["sandbox/x", "/", "/a//b", "/a/../b", "/a/./b", "/a/", "//a"] {
            assert!(!is_normal_cgroup_path(bad), "{bad}");
        }
    }
}

/// Kills whatever is left in a container's own cgroup (`cgroup_path`, never a shared one),
/// removes its cgroup directories and then, once they are all gone, its runtime state
/// directory. Used by a helper to remove its container once the init is reaped, after a helper
/// died without tearing its container down, and by the sweep of a dead executor set. It takes
/// at most about 7 s whatever is planted (5 s for the cgroups to empty, 2 s to remove them).
///
/// Nothing here trusts the scratch root (issue 12, class 6): the path must be normal (no
/// `..`) and end in one of this library's container ids, every directory is opened without
/// following symlinks and must be on a cgroup filesystem and owned by this uid; the pids come
/// only from that cgroup's own `cgroup.procs` (never 1 or less); nothing blocks on a planted
/// file. A cgroup that fails a check is left alone and reported.
#[cfg(target_os = "linux")]
pub(crate) fn sweep_container(
    layout: CgroupLayout,
    cgroup_path: Option<&str>,
    state_dir: Option<&std::path::Path>,
) -> Result<(), SweepError> {
    use std::time::{Duration, Instant};
    let mut problems = Vec::new();
    if let Some(path) = cgroup_path {
        let id = path.rsplit('/').next().unwrap_or_default();
        if !is_normal_cgroup_path(path) || !is_container_id(id) {
            problems.push(SweepProblem::NotContainer(path.to_owned()));
        } else {
            // One budget for the container, however many hierarchies it spans (eight v1
            // controllers here): 5 s to see its cgroups empty, then 2 s to remove them, both
            // within the 10 s a set's close waits for its helpers (a red-team finding: budgets
            // per directory added up to 16-56 s).
            let emptied_by = Instant::now() + Duration::from_secs(5);
            let mut empty = Vec::new();
            // Another remover (the container's own helper, while a set's sweep runs) may take a
            // directory away meanwhile: one that is gone is removed.
            let gone = |dir: &std::path::Path| std::fs::symlink_metadata(dir).is_err();
            for dir in layout.dirs(path) {
                if gone(&dir) {
                    continue;
                }
                let handle = match open_own_cgroup(&dir) {
                    Ok(h) => h,
                    Err(_) if gone(&dir) => continue,
                    Err(e) => {
                        problems.push(SweepProblem::LeftAlone(e));
                        continue;
                    }
                };
                loop {
                    let pids = match cgroup_pids(&handle) {
                        Ok(p) => p,
                        Err(_) if gone(&dir) => break,
                        Err(e) => {
                            problems.push(SweepProblem::Members { dir: dir.clone(), source: e });
                            break;
                        }
                    };
                    if pids.is_empty() {
                        empty.push(dir.clone());
                        break;
                    }
                    for pid in pids {
                        let _ =
                            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                    }
                    if Instant::now() > emptied_by {
                        problems.push(SweepProblem::StillBusy(dir.clone()));
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            // The empty ones are removed in turns until all are gone or the budget is spent. One
            // that holds a cgroup of its own (only someone who may write the container's cgroup
            // makes one) cannot empty by waiting: it is reported at once.
            let removed_by = Instant::now() + Duration::from_secs(2);
            while !empty.is_empty() {
                empty.retain(|dir| match std::fs::remove_dir(dir) {
                    Ok(()) => false,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                    Err(e) if has_child_cgroup(dir) || Instant::now() > removed_by => {
                        problems.push(SweepProblem::Remove { path: dir.clone(), source: e });
                        false
                    }
                    Err(_) => true,
                });
                if !empty.is_empty() {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
    }
    // The state is what finds a container whose cgroups are left (a later sweep of this set's
    // directory reads it): it goes only with them (a red-team finding: removed regardless, it
    // left such cgroups behind for good).
    if let Some(state_dir) = state_dir.filter(|_| problems.is_empty()) {
        if let Err(e) = std::fs::remove_dir_all(state_dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                problems.push(SweepProblem::Remove { path: state_dir.to_owned(), source: e });
            }
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(SweepError { problems }) }
}

/// What a sweep (`sweep_container`) could not do; it did the rest. The message lists each
/// problem, separated by `; `.
#[cfg(target_os = "linux")]
#[derive(Debug, thiserror::Error)]
#[error("{}", Joined(problems))]
pub struct SweepError {
    problems: Vec<SweepProblem>,
}

#[cfg(target_os = "linux")]
impl SweepError {
    /// Each problem, in the order met, as an error with its own cause.
    pub fn problems(&self) -> impl Iterator<Item = &(dyn std::error::Error + Send + Sync + 'static)> {
        self.problems.iter().map(|p| p as &(dyn std::error::Error + Send + Sync + 'static))
    }
}

/// One thing a sweep could not do.
#[cfg(target_os = "linux")]
#[derive(Debug, thiserror::Error)]
enum SweepProblem {
    #[error("{0:?} is not a container cgroup of this library: left alone")]
    NotContainer(String),
    #[error("{0}: left alone")]
    LeftAlone(#[source] CgroupCheck),
    #[error("{}: {source}", dir.display())]
    Members { dir: std::path::PathBuf, source: CgroupCheck },
    #[error("{} still has processes", .0.display())]
    StillBusy(std::path::PathBuf),
    #[error("removing {}: {source}", path.display())]
    Remove { path: std::path::PathBuf, source: std::io::Error },
}

/// Whether the cgroup directory `dir` holds a cgroup of its own (a subdirectory).
#[cfg(target_os = "linux")]
fn has_child_cgroup(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| e.file_type().is_ok_and(|t| t.is_dir()))
}

/// The problems of a [`SweepError`], separated by `; `.
#[cfg(target_os = "linux")]
struct Joined<'a>(&'a [SweepProblem]);

#[cfg(target_os = "linux")]
impl std::fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// Sets the window size of a PTY master.
#[cfg(target_os = "linux")]
pub fn set_winsize(master: std::os::fd::BorrowedFd<'_>, rows: u16, cols: u16) -> std::io::Result<()> {
    sys::set_winsize(master, rows, cols)
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
