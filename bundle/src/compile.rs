//! The bundle compiler: one profile + one spawn → one OCI bundle (CONTRACT.md §15, §18).
//!
//! Compilation lowers the effective per-spawn policy to an ordered, typed mount plan
//! ([`MountPlan`]), checks it, and writes one OCI `mounts` entry per planned mount. The spec is
//! built explicitly, field by field; nothing starts from `Spec::default()`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use oci_spec::runtime::Spec;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::access::{Access, Home, Isolation};
use crate::error::Error;
use crate::host::{EntryKind, HOST_EXCLUDED, HostView};
use crate::profile::{Axis, Profile};
use crate::report::{CompileReport, Guarantees, Level, ReportEntry, Status};
use crate::seccomp;

/// Grants that apply to one spawn, already verified by the runtime: each lifts one Gated axis.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrantDeltas {
    /// `filesystem.path.read.v1` targets (canonical regular files).
    pub read_paths: Vec<PathBuf>,
    /// `filesystem.path.write.v1` targets.
    pub write_paths: Vec<PathBuf>,
    /// `filesystem.tree.read.v1` targets (canonical directories).
    pub read_trees: Vec<PathBuf>,
    /// `filesystem.tree.write.v1` targets.
    pub write_trees: Vec<PathBuf>,
    /// `filesystem.host.read.v1`.
    pub host_read: bool,
    /// `filesystem.host.write.v1`.
    pub host_write: bool,
    /// `network.broad.v1`: the granted TCP port.
    pub broad_port: Option<u16>,
    /// `(target, st_dev, st_ino)` of every path and tree target verified at this spawn: the
    /// init checks the mounted destination against them (issue 12, 3b).
    pub identities: Vec<(PathBuf, u64, u64)>,
}

/// What the container init checks about one mount after mounting, before Landlock (the
/// `sandbox.identities` annotation; issue 12, classes 1 and 3b). Mounts are fixed objects once
/// made (they follow their directory through renames), so what the check finds holds for the
/// run; the name a mount sits on is read while no rename happens in its parent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedMount {
    /// The destination inside the container (the same as the host path).
    pub path: PathBuf,
    /// What it is, for the error message (`workspace_root`, `additional_roots path`, …).
    pub what: String,
    /// `st_dev` of the object bound there (binds), or of the covered directory (masks).
    pub dev: u64,
    /// `st_ino` of the same.
    pub ino: u64,
    /// A mask: the destination is a tmpfs over the covered directory, not the object itself.
    pub mask: bool,
    /// Over a host-backed parent: `(st_dev, st_ino)` the parent must have.
    pub parent: Option<(u64, u64)>,
    /// Over a host-backed parent: the `d_ino` the destination's name must have there, read
    /// while no rename happens in the parent (so the mount sits on the recorded directory).
    pub entry_ino: Option<u64>,
}

/// How the bundle will be run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// By the embedded runtime: a per-spawn cgroup when a usable parent exists.
    Embedded {
        /// The absolute per-spawn `cgroupsPath` (`<parent>/<container id>`), or none.
        cgroups_path: Option<String>,
        /// `pids.max`, applied only with a cgroup.
        pids_max: Option<u32>,
        /// `memory.max` in bytes, applied only with a cgroup.
        memory_max: Option<u64>,
    },
    /// Exported for a standard OCI runtime: no `cgroupsPath`, no `resources`.
    Export,
}

/// Everything about one spawn that is not the profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnContext {
    /// The program and its arguments (no shell is added here).
    pub argv: Vec<String>,
    /// The working directory, absolute; it must lie inside the container's view.
    pub cwd: PathBuf,
    /// The scrubbed environment, in order.
    pub env: Vec<(String, String)>,
    /// Whether the process gets a terminal.
    pub tty: bool,
    /// The executor's isolated HOME, bound read-write (`IsolatedHome` only).
    pub home_dir: Option<PathBuf>,
    /// The executor's TMPDIR, bound read-write.
    pub temp_dir: PathBuf,
    /// The scratch root, masked wherever a bind covers it.
    pub scratch_root: PathBuf,
    /// Other executor sets' scratch roots (and the registry that lists them), masked wherever
    /// a bind covers them: no sandbox reads another set's HOME, TMPDIR, bundles or state.
    /// Entries that are not clean absolute paths, `/`, or the own scratch root are ignored.
    pub other_scratch_roots: Vec<PathBuf>,
    /// The caller's uid, mapped to container uid 0.
    pub uid: u32,
    /// The caller's gid, mapped to container gid 0.
    pub gid: u32,
    /// Landlock will be applied inside (the embedded runtime on a kernel with Landlock).
    pub landlock: bool,
    /// An egress route is set (§19): the network is private whatever the profile says.
    pub egress_route: bool,
    /// How the bundle is run.
    pub launch: Launch,
    /// Verified grants for this spawn.
    pub grants: GrantDeltas,
}

/// What a planned mount does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MountKind {
    /// A read-only bind (recursively read-only for directories).
    ReadOnly,
    /// A read-write bind.
    ReadWrite,
    /// A read-write bind whose read rights Landlock withholds.
    WriteOnly,
    /// A read-write bind of an executor-owned directory (HOME, TMPDIR): every right.
    Private,
    /// An empty tmpfs, read-only once its nested binds are mounted: nothing beneath is visible.
    Mask,
    /// The private `/tmp` tmpfs.
    Tmp,
    /// A fresh procfs.
    Proc,
    /// The `/dev` tmpfs.
    Dev,
    /// `/dev/pts`.
    DevPts,
    /// `/dev/shm`.
    DevShm,
}

/// Why a mount is in the plan; decides which mount wins a shared destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// A top-level host entry.
    HostEntry,
    /// A mask of an area whose read is not allowed, or of `/var/run`.
    AreaMask,
    /// The private `/tmp`.
    PrivateTmp,
    /// The runtime closure.
    Closure,
    /// The workspace, a root or a grant target.
    Area,
    /// The scratch-root mask.
    ScratchMask,
    /// The executor's HOME or TMPDIR.
    Executor,
    /// `/proc` and `/dev`.
    Special,
}

/// One planned mount.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedMount {
    /// Where it lands (canonical; the same as the host path for binds).
    pub destination: PathBuf,
    /// The bind source, for binds.
    pub source: Option<PathBuf>,
    /// What it does.
    pub kind: MountKind,
    /// Whether the bind is of a single file.
    pub file: bool,
    /// Why it is there.
    pub origin: Origin,
    #[serde(skip)]
    rank: u8,
}

/// The ordered mounts and the symlinks recreated in the container root.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MountPlan {
    /// Mounts in mount order.
    pub mounts: Vec<PlannedMount>,
    /// `(name, link text)` of top-level host symlinks recreated in the container root.
    pub rootfs_symlinks: Vec<(String, PathBuf)>,
}

/// The Landlock rules of one spawn (the `sandbox.landlock` annotation).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LandlockRules {
    /// Filesystem rules: a path and the rights beneath it.
    pub fs: Vec<LandlockPathRule>,
    /// TCP ports `connect` may reach; handled only when non-empty (broad grant).
    pub tcp_connect: Vec<u16>,
    /// Whether abstract unix sockets are scoped (spawns sharing the host network namespace).
    pub scope_abstract_unix: bool,
}

/// One Landlock path rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LandlockPathRule {
    /// The path (opened without following symlinks when applied).
    pub path: PathBuf,
    /// Rights, by their kernel names without the `LANDLOCK_ACCESS_FS_` prefix, lowercase.
    pub access: Vec<&'static str>,
}

/// A compiled bundle: the OCI spec, its plan and what a runtime can achieve with it.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// The OCI runtime spec (`config.json`).
    pub spec: Spec,
    /// The mount plan the spec's `mounts` were written from.
    pub plan: MountPlan,
    /// The Landlock rules (also in the `sandbox.landlock` annotation).
    pub landlock: LandlockRules,
    /// The process shares the host network namespace.
    pub host_network: bool,
    /// The spawn runs under a broad network grant (UDP and MPTCP filtered, TCP ports scoped).
    pub broad_network: bool,
    /// Which conditional seccomp rules the spawn carries (unix sockets, vsock, broad network).
    pub seccomp: seccomp::SpawnRules,
    /// Policy facts every backend reports: `read-boundary`, `write-boundary` and
    /// `runtime-closure` entries as the plan achieves them.
    pub policy_entries: Vec<ReportEntry>,
    /// What a standard OCI runtime achieves with this bundle (the `sandbox.report` annotation).
    pub standard_report: CompileReport,
    /// The guarantee bits a standard OCI runtime achieves (the `sandbox.guarantees` annotation).
    pub standard_guarantees: Guarantees,
    /// What the init verifies after mounting (the `sandbox.identities` annotation).
    pub expected: Vec<ExpectedMount>,
}

const RO_RIGHTS: &[&str] = &["execute", "read_file", "read_dir"];
const WRITE_RIGHTS: &[&str] = &[
    "write_file",
    "truncate",
    "remove_dir",
    "remove_file",
    "make_char",
    "make_dir",
    "make_reg",
    "make_sock",
    "make_fifo",
    "make_block",
    "make_sym",
    "refer",
];
const ALL_RIGHTS: &[&str] = &[
    "execute",
    "write_file",
    "read_file",
    "read_dir",
    "remove_dir",
    "remove_file",
    "make_char",
    "make_dir",
    "make_reg",
    "make_sock",
    "make_fifo",
    "make_block",
    "make_sym",
    "refer",
    "truncate",
    "ioctl_dev",
];
const PROC_RIGHTS: &[&str] = &["read_file", "read_dir"];
const DEV_RIGHTS: &[&str] = &["read_file", "write_file", "ioctl_dev"];
const DEVPTS_RIGHTS: &[&str] = &["read_file", "write_file", "ioctl_dev", "read_dir"];

/// The OCI default masked `/proc` paths (`/sys` is never mounted).
const MASKED_PATHS: &[&str] = &[
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
];
/// The OCI default read-only `/proc` paths.
const READONLY_PATHS: &[&str] = &["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

/// A clean absolute path: starts with `/`, no empty, `.` or `..` component, no trailing `/`.
fn is_clean_absolute(p: &Path) -> bool {
    let b = p.as_os_str().as_encoded_bytes();
    b == b"/"
        || (b.first() == Some(&b'/')
            && b.last() != Some(&b'/')
            && b[1..].split(|c| *c == b'/').all(|c| !c.is_empty() && c != b"." && c != b".."))
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

/// `p.starts_with(r)`, by bytes when both are plain absolute paths (no empty, `.` or `..`
/// component, no trailing slash: what the planner's canonical paths are), which the planner's
/// quadratic lookups call thousands of times per compile; anything else by components.
fn within(p: &Path, r: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    fn plain(x: &[u8]) -> bool {
        x == b"/"
            || (x.first() == Some(&b'/')
                && x[1..].split(|c| *c == b'/').all(|c| !c.is_empty() && c != b"." && c != b".."))
    }
    let (a, b) = (p.as_os_str().as_bytes(), r.as_os_str().as_bytes());
    if plain(a) && plain(b) {
        b == b"/" || (a.starts_with(b) && (a.len() == b.len() || a[b.len()] == b'/'))
    } else {
        p.starts_with(r)
    }
}

struct Planner {
    ops: Vec<PlannedMount>,
}

impl Planner {
    fn push(
        &mut self,
        destination: PathBuf,
        source: Option<PathBuf>,
        kind: MountKind,
        file: bool,
        origin: Origin,
        rank: u8,
    ) {
        self.ops.push(PlannedMount { destination, source, kind, file, origin, rank });
    }

    /// Keeps one mount per destination: the one whose origin wins.
    fn dedupe(&mut self) {
        let mut best: HashMap<PathBuf, usize> = HashMap::new();
        for (i, op) in self.ops.iter().enumerate() {
            match best.get(&op.destination) {
                Some(&j) if self.ops[j].origin >= op.origin => {}
                _ => {
                    best.insert(op.destination.clone(), i);
                }
            }
        }
        let mut keep: Vec<usize> = best.into_values().collect();
        keep.sort_unstable();
        self.ops = keep.into_iter().map(|i| self.ops[i].clone()).collect();
    }

    /// The mount that decides what `p` is: the deepest destination containing `p` (`strict`:
    /// other than `p` itself), the winning origin on ties.
    fn innermost(&self, p: &Path, strict: bool) -> Option<&PlannedMount> {
        self.ops
            .iter()
            .filter(|op| within(p, &op.destination) && !(strict && op.destination == p))
            .max_by_key(|op| (depth(&op.destination), op.origin))
    }

    fn is_bind(kind: MountKind) -> bool {
        matches!(kind, MountKind::ReadOnly | MountKind::ReadWrite | MountKind::WriteOnly | MountKind::Private)
    }

    fn covered_read_only(&self, p: &Path) -> bool {
        self.innermost(p, false).is_some_and(|op| op.kind == MountKind::ReadOnly && (!op.file || op.destination == p))
    }
}

/// Compiles one spawn of `profile` into a bundle.
///
/// Fails with [`Error::InvalidArgument`] when the spawn itself is unusable (empty argv, relative
/// or invisible cwd, an unconfined profile), with [`Error::Runtime`] when the embedded seccomp
/// policy is invalid (no bundle runs with an empty filter), and never touches the filesystem:
/// host facts come from `host`.
pub fn compile(profile: &Profile, spawn: &SpawnContext, host: &HostView) -> Result<Bundle, Error> {
    let config = profile.config();
    if config.isolation == Isolation::Unconfined {
        return Err(Error::argument("profile: an unconfined profile has no bundle"));
    }
    if spawn.argv.is_empty() || spawn.argv[0].is_empty() {
        return Err(Error::argument("argv: empty"));
    }
    if spawn.argv.iter().any(|a| a.contains('\0')) {
        return Err(Error::argument("argv: contains NUL"));
    }
    let paths =
        [("cwd", Some(&spawn.cwd)), ("temp_dir", Some(&spawn.temp_dir)), ("scratch_root", Some(&spawn.scratch_root))];
    for (name, path) in paths.into_iter().chain([("home_dir", spawn.home_dir.as_ref())]) {
        if let Some(path) = path.filter(|p| !is_clean_absolute(p)) {
            return Err(Error::argument(format!("{name}: {} is not a clean absolute path", path.display())));
        }
    }
    let g = &spawn.grants;

    // Effective authority: the profile, lifted by this spawn's grants.
    let host_read = config.host_read == Access::Allow || g.host_read;
    let host_write = config.host_write == Access::Allow || g.host_write;
    let effective = |axis: Axis, p: &Path| -> bool {
        let trees = match axis {
            Axis::Read => &g.read_trees,
            Axis::Write => &g.write_trees,
        };
        let files = match axis {
            Axis::Read => &g.read_paths,
            Axis::Write => &g.write_paths,
        };
        if trees.iter().any(|t| within(p, t)) || files.iter().any(|f| f == p) {
            return true;
        }
        let in_area = profile.areas().any(|(r, _, _)| within(p, r));
        let host = match axis {
            Axis::Read => host_read,
            Axis::Write => host_write,
        };
        if in_area { profile.path_value(axis, p) == Access::Allow } else { host }
    };
    let host_network = (config.network == Access::Allow || g.broad_port.is_some()) && !spawn.egress_route;
    let broad_network = host_network && config.network != Access::Allow;
    let network_open = host_network && !broad_network;
    let seccomp_rules = seccomp::SpawnRules {
        broad_network,
        network_open,
        unix_sockets_open: network_open || config.unix_sockets == Access::Allow,
    };

    let mut planner = Planner { ops: Vec::new() };
    let mut rootfs_symlinks = Vec::new();
    let mut write_narrowed: Vec<String> = Vec::new();

    // 1. Host entries, each by the effective access at its own path (an area at `/` or a
    // root on a top-level entry decides there, not the host fields).
    let mut host_entries_bound = false;
    for entry in &host.entries {
        if HOST_EXCLUDED.contains(&entry.name.as_str()) {
            continue;
        }
        let path = PathBuf::from("/").join(&entry.name);
        let (read, write) = (effective(Axis::Read, &path), effective(Axis::Write, &path));
        if !read {
            if write && !write_narrowed.iter().any(|w| w.starts_with("host write")) {
                write_narrowed.push(String::from("host write is withheld where host read is not allowed"));
            }
            continue;
        }
        host_entries_bound = true;
        let kind = if write { MountKind::ReadWrite } else { MountKind::ReadOnly };
        match &entry.kind {
            EntryKind::Dir => planner.push(path.clone(), Some(path), kind, false, Origin::HostEntry, 0),
            EntryKind::File => planner.push(path.clone(), Some(path), kind, true, Origin::HostEntry, 0),
            EntryKind::Symlink(target) => rootfs_symlinks.push((entry.name.clone(), target.clone())),
            EntryKind::Other => {}
        }
    }

    // 2. Workspace, roots and grant targets, by effective (read, write).
    let mut areas: Vec<(PathBuf, bool)> = profile.areas().map(|(p, _, _)| (p.to_path_buf(), false)).collect();
    areas.extend(g.read_trees.iter().chain(&g.write_trees).map(|p| (p.clone(), false)));
    areas.extend(g.read_paths.iter().chain(&g.write_paths).map(|p| (p.clone(), true)));
    for (path, file) in areas {
        if path == Path::new("/") {
            continue; // no mount at `/`: the host entries above carry an area at `/`
        }
        let (read, write) = (effective(Axis::Read, &path), effective(Axis::Write, &path));
        let kind = match (read, write) {
            (true, true) => Some(MountKind::ReadWrite),
            (true, false) => Some(MountKind::ReadOnly),
            (false, true) if spawn.landlock => Some(MountKind::WriteOnly),
            (false, true) => {
                write_narrowed.push(format!("{} is write-only, which needs landlock: masked instead", path.display()));
                None
            }
            (false, false) => None,
        };
        match kind {
            Some(kind) => planner.push(path.clone(), Some(path), kind, file, Origin::Area, 2),
            // A file cannot be masked with a tmpfs; an unreadable file target is simply not bound.
            None if file => {}
            None => planner.push(path, None, MountKind::Mask, false, Origin::AreaMask, 9),
        }
    }

    // 2b. Pinned ancestors of nested areas, each bound onto itself with the access it has
    // anyway, so that it is a mount point inside: the workload cannot rename or remove it and
    // thereby move a nested area's protection away from its name (issue 12, 1a-1c). A pin
    // whose place would not be bound readable-or-writable anyway is left out (never wider).
    for pin in profile.pins() {
        // Write-only only inside a write-only area's bind: where the host entries carry a pin,
        // host write is withheld unless host read is allowed.
        let in_area = profile.areas().any(|(r, _, _)| r != Path::new("/") && within(pin, r));
        let kind = match (effective(Axis::Read, pin), effective(Axis::Write, pin)) {
            (true, true) => MountKind::ReadWrite,
            (true, false) => MountKind::ReadOnly,
            (false, true) if spawn.landlock && in_area => MountKind::WriteOnly,
            _ => continue,
        };
        planner.push(pin.to_path_buf(), Some(pin.to_path_buf()), kind, false, Origin::Area, 2);
    }

    // 2c. Aliases: where the host shows a masked, read-only or write-only root's directory at
    // another path too (a bind mount of the workspace or of an ancestor elsewhere, the same
    // filesystem mounted twice), that path gets the same treatment wherever the plan makes it
    // visible: a mask or a bind at the root's own path protects only that path, and Landlock
    // has no deny rule to catch the other one (issue 12, class 1).
    let guarded: Vec<(PathBuf, MountKind)> = planner
        .ops
        .iter()
        .filter(|op| op.origin == Origin::Area || op.origin == Origin::AreaMask)
        .filter(|op| matches!(op.kind, MountKind::Mask | MountKind::ReadOnly | MountKind::WriteOnly))
        .filter(|op| config.additional_roots.iter().any(|r| r.path == op.destination))
        .map(|op| (op.destination.clone(), op.kind))
        .collect();
    for (root, kind) in guarded {
        for alias in host.aliases(&root) {
            let visible = planner.innermost(&alias, false).is_some_and(|op| Planner::is_bind(op.kind));
            if !visible {
                continue;
            }
            match kind {
                MountKind::ReadOnly if effective(Axis::Write, &alias) => {
                    planner.push(alias.clone(), Some(alias), MountKind::ReadOnly, false, Origin::AreaMask, 9);
                }
                MountKind::ReadOnly => {}
                _ => planner.push(alias, None, MountKind::Mask, false, Origin::AreaMask, 9),
            }
        }
    }

    // An area the sandbox always replaces with its own mount is never honoured silently
    // (issue 12, 11): the exact private paths are refused by `Profile::new`; the executor's
    // own directories and the scratch root are known only here.
    let mut replaced: Vec<String> = Vec::new();
    let own: [(Option<&Path>, &str); 3] = [
        (Some(spawn.scratch_root.as_path()), "the scratch root, masked"),
        (Some(spawn.temp_dir.as_path()), "the executor's TMPDIR"),
        (spawn.home_dir.as_deref().filter(|_| config.home == Home::IsolatedHome), "the executor's HOME"),
    ];
    for (area, _, _) in profile.areas() {
        if let Some((_, what)) = own.iter().find(|(p, _)| *p == Some(area)) {
            replaced.push(format!("{} is {what} inside: the area is not bound as such", area.display()));
        }
    }

    // 3. The executor's HOME and TMPDIR.
    if config.home == Home::IsolatedHome {
        if let Some(home) = &spawn.home_dir {
            planner.push(home.clone(), Some(home.clone()), MountKind::Private, false, Origin::Executor, 3);
        }
    }
    planner.push(spawn.temp_dir.clone(), Some(spawn.temp_dir.clone()), MountKind::Private, false, Origin::Executor, 3);

    // 4-6. Private /tmp, /proc, /dev.
    planner.push(PathBuf::from("/tmp"), None, MountKind::Tmp, false, Origin::PrivateTmp, 4);
    planner.push(PathBuf::from("/proc"), None, MountKind::Proc, false, Origin::Special, 5);
    planner.push(PathBuf::from("/dev"), None, MountKind::Dev, false, Origin::Special, 6);
    planner.push(PathBuf::from("/dev/pts"), None, MountKind::DevPts, false, Origin::Special, 6);
    planner.push(PathBuf::from("/dev/shm"), None, MountKind::DevShm, false, Origin::Special, 6);
    planner.dedupe();

    // 7. The runtime closure, skipping what is already covered read-only: plain entries first,
    // so that a symlink's resolved target can be found covered by them.
    let mut closure_over_writable = Vec::new();
    for entry in &host.closure {
        if matches!(entry.kind, EntryKind::Dir | EntryKind::File) && !planner.covered_read_only(&entry.path) {
            let file = entry.kind == EntryKind::File;
            if effective(Axis::Write, &entry.path) {
                closure_over_writable.push(entry.path.display().to_string());
            }
            planner.push(entry.path.clone(), Some(entry.path.clone()), MountKind::ReadOnly, file, Origin::Closure, 1);
        }
    }
    if !closure_over_writable.is_empty() {
        write_narrowed.push(format!(
            "the runtime closure stays read-only where writes are allowed: {}",
            closure_over_writable.join(" ")
        ));
    }
    let mut resolved_binds = Vec::new();
    for entry in &host.closure {
        let (EntryKind::Symlink(_), Some((resolved, is_dir))) = (&entry.kind, &entry.resolved) else {
            continue;
        };
        if !planner.covered_read_only(resolved) {
            resolved_binds.push((resolved.clone(), resolved.clone(), !is_dir));
        }
        // The symlink itself is visible when it was recreated in the container root, or lies
        // inside a readable bind of its own path: it then resolves to the bind above.
        let recreated = rootfs_symlinks.iter().any(|(name, _)| Path::new("/").join(name) == entry.path);
        let inside_bind = planner.innermost(&entry.path, true).is_some_and(|op| {
            matches!(op.kind, MountKind::ReadOnly | MountKind::ReadWrite) && op.source.as_ref() == Some(&op.destination)
        });
        if !(recreated || inside_bind) {
            resolved_binds.push((entry.path.clone(), resolved.clone(), !is_dir));
        }
    }
    for (dest, source, file) in resolved_binds {
        planner.push(dest, Some(source), MountKind::ReadOnly, file, Origin::Closure, 10);
    }
    planner.push(
        PathBuf::from("/dev/null"),
        Some(PathBuf::from("/dev/null")),
        MountKind::ReadWrite,
        true,
        Origin::Closure,
        1,
    );
    planner.dedupe();

    // A Landlock rule grants its rights beneath its path, so a write-only area under any
    // readable mount would be readable after all: mask it instead (narrowed, never wider).
    let readable_ancestor = |planner: &Planner, p: &Path| {
        planner.ops.iter().any(|op| {
            op.destination != p
                && within(p, &op.destination)
                && !matches!(op.kind, MountKind::WriteOnly | MountKind::Mask)
        })
    };
    let write_only: Vec<(PathBuf, bool)> = planner
        .ops
        .iter()
        .filter(|op| op.kind == MountKind::WriteOnly && readable_ancestor(&planner, &op.destination))
        .map(|op| (op.destination.clone(), op.file))
        .collect();
    for (dest, file) in write_only {
        write_narrowed.push(format!(
            "{} is write-only, but lies under a readable mount that landlock rules would extend to it: {}",
            dest.display(),
            if file { "not bound" } else { "masked instead" }
        ));
        planner.ops.retain(|op| op.destination != dest);
        if !file {
            planner.push(dest, None, MountKind::Mask, false, Origin::AreaMask, 9);
        }
    }

    // 8. Masks over the scratch root and a real /var/run wherever a bind exposes them.
    let exposed = |planner: &Planner, p: &Path| {
        planner.innermost(p, false).is_some_and(|op| Planner::is_bind(op.kind) && op.origin != Origin::Executor)
    };
    if exposed(&planner, &spawn.scratch_root) {
        planner.push(spawn.scratch_root.clone(), None, MountKind::Mask, false, Origin::ScratchMask, 9);
    }
    for other in &spawn.other_scratch_roots {
        let usable = is_clean_absolute(other) && other.as_path() != Path::new("/") && *other != spawn.scratch_root;
        if usable && exposed(&planner, other) {
            planner.push(other.clone(), None, MountKind::Mask, false, Origin::ScratchMask, 9);
        }
    }
    let var_run = PathBuf::from("/var/run");
    if host.var_run_is_dir && exposed(&planner, &var_run) {
        planner.push(var_run, None, MountKind::Mask, false, Origin::AreaMask, 9);
    }
    planner.dedupe();
    planner.ops.sort_by_key(|op| (depth(&op.destination), op.rank));

    // The cwd must exist inside: under a bind, or a mount point (or an ancestor of one).
    let cwd_visible = planner.ops.iter().any(|op| within(&op.destination, &spawn.cwd))
        || planner.innermost(&spawn.cwd, false).is_some_and(|op| Planner::is_bind(op.kind));
    if !cwd_visible || spawn.cwd == Path::new("/proc") || within(&spawn.cwd, Path::new("/proc")) {
        return Err(Error::argument(format!("cwd: {} is outside the sandbox's view", spawn.cwd.display())));
    }

    let expected = expected_mounts(profile, g, &planner);
    let plan = MountPlan { mounts: planner.ops, rootfs_symlinks };
    let landlock = landlock_rules(&plan, g.broad_port.filter(|_| broad_network), host_network);

    // Policy report entries shared by every backend.
    let mut policy_entries = Vec::new();
    policy_entries.push(if host_entries_bound || !replaced.is_empty() {
        let mut why = Vec::new();
        if host_entries_bound {
            why.push(String::from(
                "host read is allowed, but the host's /sys, /run, /tmp and the scratch root are withheld",
            ));
        }
        why.extend(replaced);
        ReportEntry::new("read-boundary", Status::Narrowed, why.join("; "))
    } else {
        ReportEntry::new("read-boundary", Status::Enforced, "only the bound areas are visible")
    });
    policy_entries.push(if write_narrowed.is_empty() {
        ReportEntry::new("write-boundary", Status::Enforced, "writable only where the policy allows writes")
    } else {
        ReportEntry::new("write-boundary", Status::Narrowed, write_narrowed.join("; "))
    });
    // The closure widens read wherever the policy would not let its entries be read.
    let widened: Vec<String> = host
        .closure
        .iter()
        .filter(|c| {
            !effective(Axis::Read, &c.path) || c.resolved.as_ref().is_some_and(|(r, _)| !effective(Axis::Read, r))
        })
        .map(|c| c.path.display().to_string())
        .collect();
    policy_entries.push(if widened.is_empty() {
        ReportEntry::new("runtime-closure", Status::Vacuous, "every runtime-closure entry is readable under the policy")
    } else {
        ReportEntry::new(
            "runtime-closure",
            Status::Widened,
            format!("read and execute of the runtime closure: {}", widened.join(" ")),
        )
    });

    let private_network = !host_network;
    let standard_guarantees = Guarantees {
        process_boundary: true,
        write_boundary: true,
        read_boundary: true,
        env_scrub: true,
        network_boundary: private_network,
        address_network: false,
        resource_limits: false,
        target_network: false,
    };
    let mut standard_report = standard_report(&policy_entries, private_network, host_network, config.network);
    let (network_detail, unix) = unix_sockets_entry(network_open, config.unix_sockets, true);
    if let Some(extra) = network_detail {
        if let Some(e) = standard_report.entries.iter_mut().find(|e| e.feature == "network-boundary") {
            e.detail = format!("{}; {extra}", e.detail);
        }
    }
    standard_report.set(unix);

    let spec = build_spec(
        profile,
        spawn,
        &plan,
        &landlock,
        private_network,
        seccomp_rules,
        &standard_report,
        standard_guarantees,
        &expected,
    )?;
    Ok(Bundle {
        spec,
        plan,
        landlock,
        host_network,
        broad_network,
        seccomp: seccomp_rules,
        policy_entries,
        standard_report,
        standard_guarantees,
        expected,
    })
}

/// The `unix-sockets` report entry (issue 12 class 4a) for a spawn whose network is open
/// (`network_open`: network `Allow` in the host namespace) or not, with the profile's
/// `unix_sockets` and `seccomp` saying whether the filter is in force; and, where the network is
/// otherwise closed but unix sockets are not, the words the `network-boundary` entry must add so
/// that it never claims more than it covers.
pub fn unix_sockets_entry(network_open: bool, unix_sockets: Access, seccomp: bool) -> (Option<String>, ReportEntry) {
    const OPEN: &str = "path-named unix sockets in readable areas are connectable";
    if network_open {
        return (None, ReportEntry::new("unix-sockets", Status::Vacuous, format!("network is allowed: {OPEN}")));
    }
    if unix_sockets == Access::Allow {
        return (
            Some(format!("except unix sockets: {OPEN} (unix_sockets allow)")),
            ReportEntry::new("unix-sockets", Status::Widened, format!("{OPEN} (unix_sockets allow)")),
        );
    }
    if !seccomp {
        return (
            Some(format!("except what seccomp would close: {OPEN}, and vsock is open")),
            ReportEntry::new("unix-sockets", Status::Unenforced, format!("seccomp is not in force: {OPEN}")),
        );
    }
    (
        None,
        ReportEntry::new(
            "unix-sockets",
            Status::Enforced,
            "no unix socket can be made (socket(AF_UNIX) and datagram socketpairs are refused; stream socketpairs work)",
        ),
    )
}

/// The checks the init makes after mounting: every bind of the workspace, a root, a pin or a
/// grant target must be a mount point of the recorded object; every mask of a root must be a
/// mount point over the recorded directory entry (when its parent is a host bind; over the
/// container's own skeleton or tmpfs there is nothing of the host to check).
fn expected_mounts(profile: &Profile, g: &GrantDeltas, planner: &Planner) -> Vec<ExpectedMount> {
    let mut out = Vec::new();
    for op in &planner.ops {
        let identity = profile.identities().iter().find(|i| i.path == op.destination);
        let what = |role: Option<crate::profile::IdentityRole>| match role {
            Some(crate::profile::IdentityRole::Workspace) => "workspace_root",
            Some(crate::profile::IdentityRole::Root) => "additional root",
            Some(crate::profile::IdentityRole::Pin) => "pinned ancestor of an additional root",
            None => "grant target",
        };
        // Over a host-backed parent, the name the mount sits on is checked too (see
        // `ExpectedMount::entry_ino`); over the container's own skeleton or tmpfs there is
        // nothing of the host to check.
        let host_parent = planner
            .innermost(&op.destination, true)
            .is_some_and(|p| Planner::is_bind(p.kind) && p.source.as_ref() == Some(&p.destination));
        let (parent, entry_ino) = match identity {
            Some(i) if host_parent => (i.parent, i.entry_ino),
            _ => (None, None),
        };
        match (op.origin, op.kind) {
            (Origin::Area, kind) if Planner::is_bind(kind) && op.source.as_ref() == Some(&op.destination) => {
                let grant = g.identities.iter().find(|(p, _, _)| *p == op.destination);
                // A grant target wins over the profile's record of the same path: the grant
                // code verified it at this spawn (its name is not tied: no record of it).
                let found = match grant {
                    Some((_, dev, ino)) => Some((*dev, *ino, what(None), None, None)),
                    None => identity.map(|i| (i.dev, i.ino, what(Some(i.role)), parent, entry_ino)),
                };
                if let Some((dev, ino, what, parent, entry_ino)) = found {
                    out.push(ExpectedMount {
                        path: op.destination.clone(),
                        what: what.to_owned(),
                        dev,
                        ino,
                        mask: false,
                        parent,
                        entry_ino,
                    });
                }
            }
            (Origin::AreaMask, MountKind::Mask) => {
                let Some(i) = identity.filter(|i| i.role == crate::profile::IdentityRole::Root) else { continue };
                out.push(ExpectedMount {
                    path: op.destination.clone(),
                    what: what(Some(i.role)).to_owned(),
                    dev: i.dev,
                    ino: i.ino,
                    mask: true,
                    parent,
                    entry_ino,
                });
            }
            _ => {}
        }
    }
    out
}

fn standard_report(
    policy: &[ReportEntry],
    private_network: bool,
    host_network: bool,
    network: Access,
) -> CompileReport {
    let mut r = CompileReport::default();
    r.set(ReportEntry::new("process-boundary", Status::Enforced, "user, mount, pid, ipc, uts and cgroup namespaces"));
    for e in policy.iter().filter(|e| e.feature != "runtime-closure") {
        r.set(e.clone());
    }
    r.set(ReportEntry::new("env-scrub", Status::Enforced, "the environment in config.json is the scrubbed one"));
    r.set(if network == Access::Allow && host_network {
        ReportEntry::new("network-boundary", Status::Vacuous, "network is allowed")
    } else if private_network {
        ReportEntry::new("network-boundary", Status::Enforced, "private network namespace")
    } else {
        ReportEntry::new("network-boundary", Status::Unenforced, "the broad grant's port scoping needs landlock")
    });
    r.set(if private_network {
        ReportEntry::new("loopback", Status::Enforced, "standard runtimes raise lo in the private namespace")
    } else {
        ReportEntry::new("loopback", Status::Vacuous, "host network namespace")
    });
    r.set(if host_network {
        ReportEntry::new(
            "abstract-unix",
            Status::Unenforced,
            "abstract unix socket scoping is a landlock rule, which standard runtimes do not apply",
        )
    } else {
        ReportEntry::new("abstract-unix", Status::Vacuous, "private network namespace")
    });
    r.set(ReportEntry::new(
        "landlock",
        Status::Unenforced,
        "standard oci runtimes do not apply the sandbox.landlock annotation",
    ));
    r.set(ReportEntry::new("seccomp", Status::Enforced, "linux.seccomp, applied by the oci runtime"));
    r.set(ReportEntry::new(
        "resource-limits",
        Status::Unenforced,
        "exported bundles carry no cgroupsPath and no resources",
    ));
    if let Some(c) = policy.iter().find(|e| e.feature == "runtime-closure") {
        r.set(c.clone());
    }
    r
}

fn landlock_rules(plan: &MountPlan, broad_port: Option<u16>, host_network: bool) -> LandlockRules {
    let fs = plan
        .mounts
        .iter()
        .filter_map(|m| {
            let access: Vec<&'static str> = match m.kind {
                MountKind::ReadOnly => RO_RIGHTS.iter().copied().filter(|r| !(m.file && *r == "read_dir")).collect(),
                MountKind::ReadWrite if m.destination == Path::new("/dev/null") => DEV_RIGHTS.to_vec(),
                MountKind::ReadWrite => RO_RIGHTS
                    .iter()
                    .chain(WRITE_RIGHTS)
                    .copied()
                    .filter(|r| !m.file || matches!(*r, "execute" | "read_file" | "write_file" | "truncate"))
                    .collect(),
                MountKind::WriteOnly => WRITE_RIGHTS
                    .iter()
                    .copied()
                    .filter(|r| !m.file || matches!(*r, "write_file" | "truncate"))
                    .collect(),
                MountKind::Private | MountKind::Tmp | MountKind::DevShm => ALL_RIGHTS.to_vec(),
                MountKind::Proc => PROC_RIGHTS.to_vec(),
                MountKind::Dev => DEV_RIGHTS.to_vec(),
                MountKind::DevPts => DEVPTS_RIGHTS.to_vec(),
                MountKind::Mask => return None,
            };
            Some(LandlockPathRule { path: m.destination.clone(), access })
        })
        .collect();
    LandlockRules {
        fs,
        tcp_connect: broad_port.map(|p| if p == 53 { vec![53] } else { vec![p, 53] }).unwrap_or_default(),
        scope_abstract_unix: host_network,
    }
}

fn path_str(p: &Path) -> Result<String, Error> {
    p.to_str().map(str::to_owned).ok_or_else(|| Error::argument(format!("path {} is not valid UTF-8", p.display())))
}

fn oci_mount(m: &PlannedMount) -> Result<Value, Error> {
    let dest = path_str(&m.destination)?;
    let bind = |options: &[&str]| -> Result<Value, Error> {
        let source = path_str(m.source.as_deref().unwrap_or(&m.destination))?;
        Ok(json!({"destination": dest, "type": "bind", "source": source, "options": options}))
    };
    let tmpfs = |options: &[&str]| json!({"destination": dest, "type": "tmpfs", "source": "tmpfs", "options": options});
    Ok(match (m.kind, m.file) {
        (MountKind::ReadOnly, false) => bind(&["rbind", "rro", "nosuid", "nodev"])?,
        (MountKind::ReadOnly, true) => bind(&["bind", "ro", "nosuid", "nodev"])?,
        (MountKind::ReadWrite, true) if m.destination == Path::new("/dev/null") => bind(&["bind", "nosuid"])?,
        (MountKind::ReadWrite | MountKind::WriteOnly, true) => bind(&["bind", "nosuid", "nodev"])?,
        (MountKind::ReadWrite | MountKind::WriteOnly | MountKind::Private, _) => bind(&["rbind", "nosuid", "nodev"])?,
        (MountKind::Mask, _) => tmpfs(&["nosuid", "nodev", "noexec", "mode=755", "size=64k"]),
        (MountKind::Tmp, _) => tmpfs(&["nosuid", "nodev", "mode=1777"]),
        (MountKind::Dev, _) => tmpfs(&["nosuid", "strictatime", "mode=755", "size=65536k"]),
        (MountKind::DevShm, _) => tmpfs(&["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]),
        (MountKind::Proc, _) => json!({"destination": dest, "type": "proc", "source": "proc",
            "options": ["nosuid", "noexec", "nodev"]}),
        (MountKind::DevPts, _) => json!({"destination": dest, "type": "devpts", "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]}),
    })
}

#[allow(clippy::too_many_arguments)]
fn build_spec(
    profile: &Profile,
    spawn: &SpawnContext,
    plan: &MountPlan,
    landlock: &LandlockRules,
    private_network: bool,
    seccomp_rules: seccomp::SpawnRules,
    standard_report: &CompileReport,
    standard_guarantees: Guarantees,
    expected: &[ExpectedMount],
) -> Result<Spec, Error> {
    let mounts = plan.mounts.iter().map(oci_mount).collect::<Result<Vec<_>, _>>()?;
    let mut namespaces = vec![
        json!({"type": "user"}),
        json!({"type": "mount"}),
        json!({"type": "pid"}),
        json!({"type": "ipc"}),
        json!({"type": "uts"}),
        json!({"type": "cgroup"}),
    ];
    if private_network {
        namespaces.push(json!({"type": "network"}));
    }
    let mut readonly: Vec<String> = READONLY_PATHS.iter().map(|s| (*s).to_owned()).collect();
    for m in plan.mounts.iter().filter(|m| m.kind == MountKind::Mask) {
        readonly.push(path_str(&m.destination)?);
    }
    let seccomp = seccomp::oci_section(seccomp_rules)?;
    let mut linux = json!({
        "namespaces": namespaces,
        "uidMappings": [{"containerID": 0, "hostID": spawn.uid, "size": 1}],
        "gidMappings": [{"containerID": 0, "hostID": spawn.gid, "size": 1}],
        "maskedPaths": MASKED_PATHS,
        "readonlyPaths": readonly,
        "seccomp": seccomp,
    });
    if let Launch::Embedded { cgroups_path: Some(path), pids_max, memory_max } = &spawn.launch {
        linux["cgroupsPath"] = json!(path);
        // No `resources` at all without limits: its mere presence makes a v1 runtime write
        // device rules, which only root may (rootless limits are then written by the helper).
        let mut resources = json!({});
        if let Some(pids) = pids_max {
            resources["pids"] = json!({"limit": pids});
        }
        if let Some(mem) = memory_max {
            resources["memory"] = json!({"limit": mem});
        }
        if pids_max.is_some() || memory_max.is_some() {
            linux["resources"] = resources;
        }
    }
    let empty: [&str; 0] = [];
    let env: Vec<String> = spawn.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let report_json =
        serde_json::to_string(&standard_report.entries).map_err(|e| Error::argument(format!("report: {e}")))?;
    let landlock_json = serde_json::to_string(landlock).map_err(|e| Error::argument(format!("landlock rules: {e}")))?;
    let identities_json = serde_json::to_string(expected).map_err(|e| Error::argument(format!("identities: {e}")))?;
    // Masks over other sets' scratch roots (issue 12, class 7): such a directory may be removed
    // between this compile and the mount (its set closed and its owner deleted it). A runtime
    // that finds one gone has nothing to hide there and may drop that mask (the Linux helper
    // does, instead of failing the spawn); every other mount stays mandatory.
    let optional_masks: Vec<String> = plan
        .mounts
        .iter()
        .filter(|m| m.origin == Origin::ScratchMask && m.destination != spawn.scratch_root)
        .map(|m| path_str(&m.destination))
        .collect::<Result<_, _>>()?;
    let mut value = json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": spawn.tty,
            "user": {"uid": 0, "gid": 0},
            "args": spawn.argv,
            "env": env,
            "cwd": path_str(&spawn.cwd)?,
            "capabilities": {
                "bounding": empty, "effective": empty, "inheritable": empty,
                "permitted": empty, "ambient": empty
            },
            "rlimits": [
                {"type": "RLIMIT_CORE", "hard": 0, "soft": 0},
                {"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 1024}
            ],
            "noNewPrivileges": true
        },
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "sandbox",
        "mounts": mounts,
        "linux": linux,
        "annotations": {
            "sandbox.version": "1",
            "sandbox.fingerprint": profile.fingerprint(),
            "sandbox.landlock": landlock_json,
            "sandbox.identities": identities_json,
            "sandbox.guarantees": standard_guarantees.bits().to_string(),
            "sandbox.report": report_json,
        }
    });
    if !optional_masks.is_empty() {
        value["annotations"]["sandbox.optional-masks"] =
            json!(serde_json::to_string(&optional_masks).unwrap_or_default());
    }
    serde_json::from_value(value).map_err(|e| Error::argument(format!("spec: {e}")))
}

/// The level a standard runtime reaches with a bundle: namespaces and seccomp, no Landlock.
pub fn standard_level() -> Level {
    Level::Degraded
}

/// The spec as deterministic, pretty JSON (keys sorted), as written to `config.json`.
pub fn spec_json(spec: &Spec) -> Result<String, Error> {
    let value = serde_json::to_value(spec).map_err(|e| Error::argument(format!("spec: {e}")))?;
    serde_json::to_string_pretty(&value).map_err(|e| Error::argument(format!("spec: {e}")))
}

#[cfg(test)]
mod tests {
    use super::within;
    use std::path::Path;

    #[test]
    fn within_agrees_with_path_starts_with() {
        let paths = [
            "/", "/a", "/a/b", "/ab", "/a/b/c", "/a/./b", "/a//b", "/a/b/", "/a/..", "a", "a/b", "", "/.git", "/a/.b",
            "/a/b..", "//", "/a/b/c/", "/a/b/./c",
        ];
        for p in paths {
            for r in paths {
                assert_eq!(within(Path::new(p), Path::new(r)), Path::new(p).starts_with(r), "{p} within {r}");
            }
        }
    }
}
