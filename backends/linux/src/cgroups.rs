//! Where a set's spawns get their cgroups (issue 15): the configured parent (the
//! `cgroup_parent` option, else `SANDBOX_CGROUP_PARENT`, both resolved by the facade), `/sandbox`
//! as root, else the caller's own cgroup v2 when this uid may write it (a systemd unit or scope
//! with `Delegate=yes`, a container with its own cgroup namespace, a CI job's cgroup), else none:
//! the run is then confined all the same and `resource-limits` is not claimed (CONTRACT.md
//! §15.7), with the reason and the exact fix.
//!
//! cgroup v2's no-internal-process rule: a cgroup whose `cgroup.subtree_control` enables
//! controllers may hold no process itself. When the caller's delegated cgroup has controllers
//! that are not enabled for its children, the processes in it (this uid's: the cgroup was
//! delegated to it) are moved into a leaf, [`LEAF`], and the controllers are enabled; each spawn
//! then gets `<cgroup>/<container id>`. A later set of the same process finds itself in the leaf
//! and uses the leaf's parent again.

use std::path::{Path, PathBuf};

use crate::CgroupLayout;

/// The leaf the caller's processes are moved into when its delegated cgroup must enable
/// controllers for its children.
pub const LEAF: &str = "sbx-leaf";

/// The controllers whose limits a spawn gets (memory only when a memory bound is set).
fn wanted(memory: bool) -> Vec<&'static str> {
    if memory { vec!["pids", "memory", "cpu"] } else { vec!["pids", "cpu"] }
}

/// How the cgroup parent was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The `cgroup_parent` option or `SANDBOX_CGROUP_PARENT`.
    Configured,
    /// `/sandbox`, as root.
    Root,
    /// The caller's own cgroup v2, writable by this uid.
    Delegated,
}

/// The cgroups of a set's spawns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroups {
    /// The parent (absolute form, relative to the cgroup root) and how it was found; none
    /// without a usable cgroup.
    pub parent: Option<(String, Source)>,
    /// Controllers whose limits cannot be set under the parent (a v2 delegation that lacks
    /// them), with why; empty when all can (or, v1 and root, when only the probe's read-back
    /// can tell).
    pub missing: Vec<&'static str>,
    /// Why there is no parent, or why controllers are missing, and the fix.
    pub why: Option<String>,
}

impl Cgroups {
    /// The parent path, if any.
    pub fn parent(&self) -> Option<&str> {
        self.parent.as_ref().map(|(p, _)| p.as_str())
    }

    /// Whether the spawns' process count needs `RLIMIT_NPROC` (no pids controller to bound it).
    pub fn needs_nproc(&self) -> bool {
        self.parent.is_none() || self.missing.contains(&"pids")
    }
}

/// Finds the cgroups a set's spawns get, without changing anything (a sweep uses this).
pub fn discover(configured: Option<&Path>, memory: bool) -> Cgroups {
    choose(configured, memory, false)
}

/// Finds the cgroups a set's spawns get, and makes a delegated cgroup ready for them (its
/// processes into [`LEAF`] when controllers must be enabled for its children).
pub fn prepare(configured: Option<&Path>, memory: bool) -> Cgroups {
    choose(configured, memory, true)
}

fn choose(configured: Option<&Path>, memory: bool, prepare: bool) -> Cgroups {
    if let Some(p) = configured {
        let parent = Some((p.to_string_lossy().into_owned(), Source::Configured));
        return Cgroups { parent, missing: Vec::new(), why: None };
    }
    let uid = nix::unistd::getuid().as_raw();
    if uid == 0 {
        return Cgroups { parent: Some((String::from("/sandbox"), Source::Root)), missing: Vec::new(), why: None };
    }
    let none = |why: String| Cgroups { parent: None, missing: Vec::new(), why: Some(why) };
    let layout = CgroupLayout::detect();
    let env = "set SANDBOX_CGROUP_PARENT (or the cgroup_parent option) to it";
    match layout {
        CgroupLayout::None => none(format!(
            "no cgroup filesystem is mounted at /sys/fs/cgroup; to bound the runs, mount one and give this \
             user (uid {uid}) a writable subtree, then {env}"
        )),
        CgroupLayout::V1OrHybrid => none(format!(
            "this host's pids and memory controllers are on cgroup v1 (or hybrid), where only root can make a \
             cgroup and nothing is delegated to uid {uid}; fix: run as root `{}`, then set \
             SANDBOX_CGROUP_PARENT=/sandbox-{uid} (the cgroups last until reboot); or boot with \
             systemd.unified_cgroup_hierarchy=1 (cgroup v2), where systemd delegates to users",
            v1_delegation(uid, &format!("sandbox-{uid}"))
        )),
        CgroupLayout::V2 => match own_v2_cgroup() {
            None => none(String::from("this process's cgroup v2 could not be read from /proc/self/cgroup")),
            Some(own) => delegated(&own, uid, memory, prepare).unwrap_or_else(none),
        },
    }
}

/// The shell command that delegates a v1 subtree `/<name>` to `uid`: a directory in every v1
/// hierarchy (the runtime joins each), owned by the user, with the cpuset copied from the root.
pub fn v1_delegation(uid: u32, name: &str) -> String {
    format!(
        "for c in /sys/fs/cgroup/*/; do [ \"$c\" = /sys/fs/cgroup/unified/ ] || [ -L \"${{c%/}}\" ] || {{ mkdir -p \
         \"${{c}}{name}\" && chown -R {uid} \"${{c}}{name}\"; }}; done; d=/sys/fs/cgroup/cpuset; \
         [ ! -d $d/{name} ] || {{ cat $d/cpuset.cpus > $d/{name}/cpuset.cpus && cat $d/cpuset.mems > \
         $d/{name}/cpuset.mems; }}"
    )
}

/// A configured parent: every existing directory from a hierarchy's root down to it must belong
/// to this uid or to root and be writable by no one else (whoever else may write one can rename
/// the spawns' cgroups beneath it, so that one spawn's teardown kills another spawn's processes:
/// a red-team finding against a root run under a parent another user owned, 3 December). For a
/// non-root caller, every directory the runtime will make a spawn's cgroup in (each v1
/// hierarchy's, or the v2 one) must also exist and be writable by this uid. Else the set fails
/// closed naming the directory and the fix (the user asked for limits there; a run without them
/// would be a silent downgrade).
pub fn check_configured(parent: &str) -> Result<(), String> {
    use nix::unistd::{AccessFlags, access};
    let uid = nix::unistd::getuid().as_raw();
    let layout = CgroupLayout::detect();
    // The runtime joins every v1 controller's hierarchy, not the named `systemd` one.
    let named = |d: &Path| d.strip_prefix("/sys/fs/cgroup").is_ok_and(|r| r.starts_with("systemd"));
    for dir in layout.dirs(parent).into_iter().filter(|d| !named(d)) {
        owned_chain(&dir, uid).map_err(|why| {
            format!(
                "the cgroup parent {parent} (the cgroup_parent option or SANDBOX_CGROUP_PARENT) cannot be used by \
                 uid {uid}: {why}; fix: use a parent whose directories belong to uid {uid} (or root) and that no \
                 other user may write"
            )
        })?;
    }
    if uid == 0 {
        return Ok(());
    }
    for dir in layout.dirs(parent).into_iter().filter(|d| !named(d)) {
        if let Err(e) = access(&dir, AccessFlags::W_OK | AccessFlags::X_OK) {
            let fix = match layout {
                // A cgroup that exists already (root's own `/sandbox`, which holds root's spawns,
                // or `/` itself) is never handed to another user: a subtree of its own is.
                CgroupLayout::V1OrHybrid if dir.exists() || parent.trim_matches('/').is_empty() => format!(
                    "{parent} exists and is not this user's: do not hand it over; run as root `{}`, then set \
                     SANDBOX_CGROUP_PARENT=/sandbox-{uid}",
                    v1_delegation(uid, &format!("sandbox-{uid}"))
                ),
                CgroupLayout::V1OrHybrid => {
                    format!("run as root `{}`", v1_delegation(uid, parent.trim_start_matches('/')))
                }
                _ => format!("delegate {parent} to uid {uid} (systemd: a unit or scope with Delegate=yes)"),
            };
            return Err(format!(
                "the cgroup parent {parent} (the cgroup_parent option or SANDBOX_CGROUP_PARENT) cannot be used by uid \
                 {uid}: {}: {e}; fix: {fix}",
                dir.display()
            ));
        }
    }
    Ok(())
}

/// The directories of `parent` (a cgroup path) that do not exist in the hierarchies the runtime
/// joins, each hierarchy's outermost first.
pub fn missing_dirs(layout: CgroupLayout, parent: &str) -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut missing = Vec::new();
    for dir in layout.dirs(parent) {
        let Ok(rel) = dir.strip_prefix(root) else { continue };
        let mut at = root.to_path_buf();
        for part in rel.components() {
            at.push(part);
            if std::fs::symlink_metadata(&at).is_err() {
                missing.push(at.clone());
            }
        }
    }
    missing
}

/// Every existing directory from `dir` up to its hierarchy's root (`/sys/fs/cgroup/<controller>`,
/// or `/sys/fs/cgroup` for v2) belongs to `uid` or root, is no symlink, and is writable by no
/// one else (group and others: no write bit).
fn owned_chain(dir: &Path, uid: u32) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let root = Path::new("/sys/fs/cgroup");
    let Ok(rel) = dir.strip_prefix(root) else {
        return Err(format!("{} is not under {}", dir.display(), root.display()));
    };
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        let Ok(meta) = std::fs::symlink_metadata(&at) else { continue };
        if meta.file_type().is_symlink() {
            // A co-mounted hierarchy's alias (`cpu` for `cpu,cpuacct`) is the runtime's to
            // follow; below the hierarchy's root a symlink is nothing the kernel made.
            if at.parent() == Some(root) {
                continue;
            }
            return Err(format!("{} is a symlink", at.display()));
        }
        if meta.uid() != uid && meta.uid() != 0 {
            return Err(format!("{} belongs to uid {}", at.display(), meta.uid()));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(format!("{} is writable by others (mode {:o})", at.display(), meta.mode() & 0o7777));
        }
    }
    Ok(())
}

/// This process's cgroup v2 path (`0::<path>` in `/proc/self/cgroup`), with a trailing
/// [`LEAF`] taken off.
fn own_v2_cgroup() -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?.trim().to_owned();
    let path = match path.strip_suffix(&format!("/{LEAF}")) {
        Some(parent) if !parent.is_empty() => parent.to_owned(),
        Some(_) => String::from("/"),
        None => path,
    };
    path.starts_with('/').then_some(path)
}

fn cgroup_dir(path: &str) -> PathBuf {
    Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'))
}

/// The caller's own cgroup `own` as the parent when this uid may write it; Err: why not, and
/// the fix.
fn delegated(own: &str, uid: u32, memory: bool, prepare: bool) -> Result<Cgroups, String> {
    use nix::unistd::{AccessFlags, access};
    let dir = cgroup_dir(own);
    let writable = |p: &Path| access(p, AccessFlags::W_OK).is_ok();
    // `/` too: the root of a container's own cgroup namespace may be delegated to it (the host's
    // root is writable by root alone, who never gets here).
    if !writable(&dir) || !writable(&dir.join("cgroup.procs")) || !writable(&dir.join("cgroup.subtree_control")) {
        return Err(format!(
            "this process's cgroup {own} is not delegated to uid {uid} (it may not make cgroups below it); fix: run \
             the caller in a delegated systemd scope, systemd-run --user --scope -p Delegate=yes <command>, or set \
             SANDBOX_CGROUP_PARENT (or the cgroup_parent option) to a cgroup delegated to this user"
        ));
    }
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let available = read("cgroup.controllers");
    let has = |list: &str, c: &str| list.split_whitespace().any(|x| x == c);
    let mut missing = Vec::new();
    let mut why = Vec::new();
    for c in wanted(memory) {
        if !has(&available, c) {
            missing.push(c);
            why.push(format!("{c} is not delegated to {own} (its cgroup.controllers: {:?})", available.trim()));
        } else if !has(&read("cgroup.subtree_control"), c) {
            let enabled = if prepare { enable(&dir, c) } else { Ok(()) };
            if let Err(e) = enabled {
                missing.push(c);
                why.push(format!("{c} could not be enabled in {own}/cgroup.subtree_control: {e}"));
            }
        }
    }
    let why = (!why.is_empty()).then(|| {
        format!(
            "{}; fix: delegate the controllers with the scope or unit (systemd: Delegate=pids memory cpu), or \
             set SANDBOX_CGROUP_PARENT to a cgroup that has them",
            why.join("; ")
        )
    });
    Ok(Cgroups { parent: Some((own.to_owned(), Source::Delegated)), missing, why })
}

/// Enables controller `c` for the children of the delegated cgroup `dir`, first moving the
/// processes in it into [`LEAF`] (v2's no-internal-process rule) when the kernel says it is busy.
fn enable(dir: &Path, c: &str) -> std::io::Result<()> {
    let control = dir.join("cgroup.subtree_control");
    match std::fs::write(&control, format!("+{c}")) {
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
        other => return other,
    }
    let leaf = dir.join(LEAF);
    match std::fs::create_dir(&leaf) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let procs = std::fs::read_to_string(dir.join("cgroup.procs"))?;
    for pid in procs.split_whitespace() {
        match std::fs::write(leaf.join("cgroup.procs"), pid) {
            // A process that ended meanwhile.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            other => other?,
        }
    }
    tracing::info!(cgroup = %dir.display(), leaf = LEAF, "moved the delegated cgroup's processes into a leaf");
    std::fs::write(&control, format!("+{c}"))
}

/// Keeps, on a thread of its own, the next moves of processes into cgroups cheap, and returns
/// at once (issue 16). Moving a process between cgroups takes the kernel's
/// `cgroup_threadgroup_rwsem` for writing, and the first writer after a quiet spell waits a
/// whole RCU grace period for every reader to leave its fast path: 7-15 ms on this machine kind,
/// paid inside the runtime's intermediate process on every cold spawn (`perf trace` showed its
/// write to `cgroup.procs` blocked for 13 ms). Writers that come during that grace period, or
/// within about one more grace period after the last writer, share it and do not wait.
///
/// The thread therefore takes that lock at once and then every [`KEEP_PERIOD`] while its
/// window lasts: from this call until [`KEEP_FOR`] after the last call, and no longer than the
/// cold builds that hold it ([`hold_attach_cheap`]): when the last of them has started its
/// process (or failed) the window ends. A cold spawn's runtime, which moves its processes
/// within that window, finds the lock on its writers' path and waits for no grace period once
/// the first one has passed. It takes the lock by writing its own thread id to the cgroup it is
/// in, read again each time (v1: the `tasks` file of its pids cgroup; v2: `cgroup.threads`),
/// which the kernel does under the lock and which moves nothing: no process or thread of the
/// caller changes cgroup. One such thread at a time per process; calls while it runs only
/// extend its window. A file it cannot open ends it: at worst a spawn pays the wait itself.
///
/// The window ends before the workload runs because a writer of that lock also makes every
/// fork on the host wait while it waits for the lock's readers, and a sandboxed fork bomb's
/// preempted forks are such readers (`THREAT-MODEL.md`, the fork bomb's "What remains"): the
/// keeper stops once the run it was kept for has started (at most one [`KEEP_PERIOD`] after the
/// caller learns of it); other runs of this process may be under way meanwhile (another set's
/// workload during this set's cold build), as for any cgroup move on the host.
pub fn keep_attach_cheap(layout: CgroupLayout) {
    if layout == CgroupLayout::None {
        return;
    }
    let until = std::time::Instant::now() + KEEP_FOR;
    {
        let mut keeper = keeper();
        keeper.until = Some(keeper.until.map_or(until, |u| u.max(until)));
        if keeper.running {
            return;
        }
        keeper.running = true;
    }
    let spawned = std::thread::Builder::new().name(String::from("sandbox-cgroup")).spawn(move || {
        // Should this thread end any other way than below, the state says so.
        let mut armed = Armed(true);
        let tid = nix::unistd::gettid().as_raw().to_string();
        loop {
            // A file this thread may not open (another user's cgroup, none mounted) is refused
            // before the lock: nothing to keep. The write itself takes the lock even where the
            // kernel then refuses the move (v2's rules for threads): its result does not matter.
            let took = own_attach_file(layout).is_some_and(|f| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(f)
                    .map(|mut f| {
                        let _ = std::io::Write::write_all(&mut f, tid.as_bytes());
                    })
                    .is_ok()
            });
            let next = std::time::Instant::now() + KEEP_PERIOD;
            let mut keeper = keeper();
            loop {
                let now = std::time::Instant::now();
                if !took || keeper.until.is_none_or(|u| now >= u) {
                    ended(&mut keeper);
                    armed.0 = false;
                    return;
                }
                if now >= next {
                    break;
                }
                keeper =
                    KEEPER_WAKE.wait_timeout(keeper, next - now).unwrap_or_else(std::sync::PoisonError::into_inner).0;
            }
        }
    });
    if let Err(e) = spawned {
        ended(&mut keeper());
        tracing::debug!("no thread to keep cgroup moves cheap: {e}");
    }
}

/// The keeping thread is gone (or never came): its window with it. Decided under the same lock
/// as the end, so that a call extending the window meanwhile starts a new thread.
fn ended(keeper: &mut Keeper) {
    keeper.running = false;
    keeper.until = None;
    KEEPER_WAKE.notify_all();
}

/// The keeping thread's guard: still armed when the thread ends other than by its own decision.
struct Armed(bool);

impl Drop for Armed {
    fn drop(&mut self) {
        if self.0 {
            ended(&mut keeper());
        }
    }
}

/// For a set whose spawns get cgroups (`parent`): see [`keep_attach_cheap`] (the set opens; a
/// cold spawn follows).
pub fn hasten_attach(layout: CgroupLayout, parent: Option<&str>) {
    if parent.is_some() {
        keep_attach_cheap(layout);
    }
}

/// A cold container is being built for a caller: the keeper runs (see [`keep_attach_cheap`])
/// until the returned guard is dropped, when its process has started or the spawn failed, or
/// [`KEEP_FOR`] has passed. None where the set's spawns get no cgroup.
pub fn hold_attach_cheap(layout: CgroupLayout, parent: Option<&str>) -> Option<KeepGuard> {
    if parent.is_none() || layout == CgroupLayout::None {
        return None;
    }
    keeper().holders += 1;
    keep_attach_cheap(layout);
    Some(KeepGuard(()))
}

/// See [`hold_attach_cheap`].
#[derive(Debug)]
pub struct KeepGuard(());

impl Drop for KeepGuard {
    fn drop(&mut self) {
        let mut keeper = keeper();
        keeper.holders = keeper.holders.saturating_sub(1);
        if keeper.holders == 0 {
            // The last cold build this process waited for has started its process.
            keeper.until = None;
            KEEPER_WAKE.notify_all();
        }
    }
}

/// How long after the last [`keep_attach_cheap`] call its thread keeps taking the lock, at most.
pub const KEEP_FOR: std::time::Duration = std::time::Duration::from_millis(60);
/// How often it takes it: well inside the grace period after which the kernel returns the lock
/// to its readers' fast path (measured here: a writer every 20 ms still finds it on the
/// writers' path).
pub const KEEP_PERIOD: std::time::Duration = std::time::Duration::from_millis(4);

/// The keeping thread's state.
struct Keeper {
    /// Until when it keeps the lock cheap (None: its window has ended).
    until: Option<std::time::Instant>,
    /// Cold builds that hold it ([`KeepGuard`]).
    holders: u32,
    /// Whether it runs.
    running: bool,
}

/// The state; the condition variable wakes the thread early (its window ended) and tells
/// [`stop_keeping`] it is done.
static KEEPER: std::sync::Mutex<Keeper> = std::sync::Mutex::new(Keeper { until: None, holders: 0, running: false });
static KEEPER_WAKE: std::sync::Condvar = std::sync::Condvar::new();

fn keeper() -> std::sync::MutexGuard<'static, Keeper> {
    KEEPER.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Ends the keeping thread's window now and waits (at most 100 ms; its write may be waiting out
/// a grace period) until the thread has let go: a closing set leaves no thread of ours working.
/// A later spawn starts it again; one that comes meanwhile (another set's) keeps it, and this
/// returns at once. Another set's window ends with it: its next cold spawn may wait.
pub fn stop_keeping() {
    let end = std::time::Instant::now() + std::time::Duration::from_millis(100);
    let mut keeper = keeper();
    keeper.until = None;
    KEEPER_WAKE.notify_all();
    while keeper.running && keeper.until.is_none() {
        let now = std::time::Instant::now();
        if now >= end {
            return;
        }
        keeper = KEEPER_WAKE.wait_timeout(keeper, end - now).unwrap_or_else(std::sync::PoisonError::into_inner).0;
    }
}

/// The file through which the calling thread moves itself into the cgroup it is already in.
fn own_attach_file(layout: CgroupLayout) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/thread-self/cgroup").ok()?;
    own_attach_file_in(layout, &text)
}

fn own_attach_file_in(layout: CgroupLayout, proc_cgroup: &str) -> Option<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = path.trim_start_matches('/');
        if !path.starts_with('/') || rel.split('/').any(|c| c == "..") {
            return None;
        }
        match layout {
            CgroupLayout::V1OrHybrid if controllers.split(',').any(|c| c == "pids") => {
                Some(root.join("pids").join(rel).join("tasks"))
            }
            CgroupLayout::V2 if controllers.is_empty() => Some(root.join(rel).join("cgroup.threads")),
            _ => None,
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_keeping_thread_writes_to_the_cgroup_it_is_in() {
        let hybrid = "12:pids:/user.slice/a\n4:memory:/x\n0::/user.slice/b\n";
        assert_eq!(
            own_attach_file_in(CgroupLayout::V1OrHybrid, hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/pids/user.slice/a/tasks"))
        );
        assert_eq!(
            own_attach_file_in(CgroupLayout::V2, "0::/user.slice/b\n"),
            Some(PathBuf::from("/sys/fs/cgroup/user.slice/b/cgroup.threads"))
        );
        assert_eq!(
            own_attach_file_in(CgroupLayout::V2, "0::/\n"),
            Some(PathBuf::from("/sys/fs/cgroup/cgroup.threads"))
        );
        assert_eq!(own_attach_file_in(CgroupLayout::V1OrHybrid, "4:memory:/x\n0::/b\n"), None);
        assert_eq!(own_attach_file_in(CgroupLayout::V2, "0::/a/../b\n"), None);
        assert_eq!(own_attach_file_in(CgroupLayout::None, hybrid), None);
    }

    /// The thread moves nothing and ends once its window is over: here when the last cold
    /// build's guard goes (other tests of this binary may start it again meanwhile, hence the
    /// bounded wait), and at once on `stop_keeping`.
    #[test]
    fn the_keeping_thread_moves_nothing_and_ends() {
        let layout = CgroupLayout::detect();
        let before = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let guard = hold_attach_cheap(layout, Some("/any"));
        assert_eq!(guard.is_some(), layout != CgroupLayout::None);
        keep_attach_cheap(layout);
        std::thread::sleep(KEEP_PERIOD * 3);
        drop(guard);
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while keeper().running {
            assert!(std::time::Instant::now() < end, "the keeping thread outlived its window");
            std::thread::sleep(KEEP_PERIOD);
        }
        assert_eq!(std::fs::read_to_string("/proc/self/cgroup").unwrap(), before);
        keep_attach_cheap(layout);
        stop_keeping();
        assert_eq!(std::fs::read_to_string("/proc/self/cgroup").unwrap(), before);
        assert!(hold_attach_cheap(layout, None).is_none(), "no cgroups, nothing to hold");
    }

    #[test]
    fn a_configured_parent_is_used_as_given() {
        let c = discover(Some(Path::new("/mine")), false);
        assert_eq!(c.parent, Some((String::from("/mine"), Source::Configured)));
        assert!(c.missing.is_empty() && c.why.is_none() && !c.needs_nproc());
    }

    #[test]
    fn without_a_parent_the_process_count_needs_the_rlimit() {
        let c = Cgroups { parent: None, missing: Vec::new(), why: Some(String::from("x")) };
        assert!(c.needs_nproc());
        let c = Cgroups { parent: Some((String::from("/a"), Source::Delegated)), missing: vec!["pids"], why: None };
        assert!(c.needs_nproc());
        let c = Cgroups { parent: Some((String::from("/a"), Source::Delegated)), missing: vec!["memory"], why: None };
        assert!(!c.needs_nproc());
    }
}
