//! The mount plan: the effective authority of one spawn lowered to an ordered, typed list of
//! mounts, one winner per destination (CONTRACT.md §15).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::GrantDeltas;
use super::SpawnContext;
use crate::access::{Access, Home};
use crate::error::Error;
use crate::host::{EntryKind, HOST_EXCLUDED, HostView};
use crate::path::is_clean_absolute;
use crate::profile::{Axis, IdentityRole, Profile};
use crate::protect::{ProtectScan, RootKind};

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
    /// A protected path bound read-only onto itself (issue 14).
    Protected,
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
    /// Whether the bind is made from the container's own view of its source (`rootfs/` and the
    /// destination, recursively) after the mounts nested in it, instead of from the host path
    /// before them: see [`order`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub through_root: bool,
    /// Whether this is a protection made once more below a nested bind that shows its
    /// directory too (see [`order`]); the one at the top is the mount of record (checks,
    /// Landlock, reports).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub below: bool,
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
    /// Denied roots that lie inside a bound area, and their aliases (see
    /// [`crate::CreationGuard::denied`]).
    pub denied: Vec<PathBuf>,
    /// Areas and grant targets bound inside one of them (see
    /// [`crate::CreationGuard::reopened`]).
    pub reopened: Vec<PathBuf>,
}

/// The most mounts one spawn's plan may hold (the kernel's default `fs.mount-max` is 100,000
/// per namespace, shared with what the container inherits).
const MAX_MOUNTS: usize = 20_000;

fn depth(p: &Path) -> usize {
    p.components().count()
}

/// `p.starts_with(r)`, by bytes when both are clean absolute paths ([`is_clean_absolute`]:
/// what the planner's canonical paths are), which the planner's quadratic lookups call
/// thousands of times per compile; anything else by components.
pub(super) fn within(p: &Path, r: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (a, b) = (p.as_os_str().as_bytes(), r.as_os_str().as_bytes());
    if is_clean_absolute(p) && is_clean_absolute(r) {
        b == b"/" || (a.starts_with(b) && (a.len() == b.len() || a[b.len()] == b'/'))
    } else {
        p.starts_with(r)
    }
}

/// What one spawn may do where: the profile, lifted by this spawn's grants.
pub(super) struct Authority<'a> {
    profile: &'a Profile,
    grants: &'a GrantDeltas,
    host_read: bool,
    host_write: bool,
}

impl<'a> Authority<'a> {
    pub(super) fn new(profile: &'a Profile, grants: &'a GrantDeltas) -> Self {
        let config = profile.config();
        Authority {
            profile,
            grants,
            host_read: config.host_read == Access::Allow || grants.host_read,
            host_write: config.host_write == Access::Allow || grants.host_write,
        }
    }

    /// Whether `p` may be read (`Axis::Read`) or written at this spawn.
    pub(super) fn effective(&self, axis: Axis, p: &Path) -> bool {
        let g = self.grants;
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
        let in_area = self.profile.areas().any(|(r, _, _)| within(p, r));
        let host = match axis {
            Axis::Read => self.host_read,
            Axis::Write => self.host_write,
        };
        if in_area { self.profile.path_value(axis, p) == Access::Allow } else { host }
    }
}

pub(super) struct Planner {
    pub(super) ops: Vec<PlannedMount>,
    /// `(destination, path)`: the bind at `destination` shows the object recorded for `path`
    /// (an alias of a root shows the root's directory).
    pub(super) object_of: Vec<(PathBuf, PathBuf)>,
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
        self.ops.push(PlannedMount {
            destination,
            source,
            kind,
            file,
            origin,
            through_root: false,
            below: false,
            rank,
        });
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
    pub(super) fn innermost(&self, p: &Path, strict: bool) -> Option<&PlannedMount> {
        self.ops
            .iter()
            .filter(|op| within(p, &op.destination) && !(strict && op.destination == p))
            .max_by_key(|op| (depth(&op.destination), op.origin))
    }

    pub(super) fn is_bind(kind: MountKind) -> bool {
        matches!(kind, MountKind::ReadOnly | MountKind::ReadWrite | MountKind::WriteOnly | MountKind::Private)
    }

    fn covered_read_only(&self, p: &Path) -> bool {
        self.innermost(p, false).is_some_and(|op| op.kind == MountKind::ReadOnly && (!op.file || op.destination == p))
    }
}

/// The plan of one spawn, with the facts the report entries are made of.
pub(super) struct Planned {
    /// The mounts, deduplicated and in mount order.
    pub(super) planner: Planner,
    /// `(name, link text)` of top-level host symlinks recreated in the container root.
    pub(super) rootfs_symlinks: Vec<(String, PathBuf)>,
    /// Some top-level host entry is bound.
    pub(super) host_entries_bound: bool,
    /// Areas the sandbox replaces with its own mount, and with what.
    pub(super) replaced: Vec<String>,
    /// Where the plan writes less than the policy allows, and why.
    pub(super) write_narrowed: Vec<String>,
    /// Denied roots (and aliases) whose mask or cover lies inside a bind (see
    /// [`MountPlan::denied`]), and the areas bound inside them.
    pub(super) denied: Vec<PathBuf>,
    pub(super) reopened: Vec<PathBuf>,
}

/// Plans the mounts of one spawn (validated by the caller); fails with
/// [`Error::InvalidArgument`] when the cwd is outside the sandbox's view.
pub(super) fn plan(
    profile: &Profile,
    spawn: &SpawnContext,
    host: &HostView,
    authority: &Authority<'_>,
) -> Result<Planned, Error> {
    let config = profile.config();
    let g = &spawn.grants;
    let effective = |axis: Axis, p: &Path| authority.effective(axis, p);

    let mut planner = Planner { ops: Vec::new(), object_of: Vec::new() };
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
    // (Kept for 8: nothing of a masked place is bound over its mask.)
    let area_paths: Vec<PathBuf> = areas.iter().map(|(p, _)| p.clone()).collect();
    let scan = &spawn.protected;
    // File roots covered by an unreadable placeholder (read denied, or write-only narrowed to
    // denied): their aliases get the same cover in 2c.
    let mut denied_files: Vec<PathBuf> = Vec::new();
    let mut denied: Vec<PathBuf> = Vec::new();
    for (path, mut file) in areas {
        if path == Path::new("/") {
            continue; // no mount at `/`: the host entries above carry an area at `/`
        }
        // A root's kind at this spawn: a missing root is not bound (the creation guard refuses
        // its path), a file root is bound as a file. A root that existed when the profile was
        // made (it has a recorded identity) and is missing now fails the spawn: it may only be
        // renamed away for a moment (the spawn's earlier identity check saw it), and with no
        // mask planned its contents would be open at its own name once it is renamed back.
        match scan.roots.iter().find(|(r, _)| *r == path).map(|(_, k)| *k) {
            Some(RootKind::Missing)
                if profile.identities().iter().any(|i| i.path == path && i.role == IdentityRole::Root) =>
            {
                return Err(Error::profile(format!(
                    "additional_roots: {} existed when the profile was made and is missing now; make a new \
                     profile if the change is intended",
                    path.display()
                )));
            }
            // Denied and missing: the host may make it during a run, where no mask covers it
            // (the guard refuses it, see `MountPlan::denied`).
            Some(RootKind::Missing) => {
                if !effective(Axis::Read, &path) {
                    denied.push(path.clone());
                }
                continue;
            }
            Some(RootKind::File) => file = true,
            _ => {}
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
            // A write-only file: Landlock has no file rule that withholds read beneath a
            // readable directory, so it is denied instead (narrowed).
            Some(MountKind::WriteOnly) if file => {
                write_narrowed.push(format!("{} is a write-only file: denied instead", path.display()));
                denied_files.push(path.clone());
                deny_file(&mut planner, &mut write_narrowed, scan, path);
            }
            Some(kind) => planner.push(path.clone(), Some(path), kind, file, Origin::Area, 2),
            // A file cannot be masked with a tmpfs: an unreadable file is covered by an
            // unreadable placeholder (a file root inside a readable directory stays unreadable);
            // an unreadable grant target is simply not bound.
            None if file && profile.areas().any(|(r, _, _)| r == path) => {
                denied_files.push(path.clone());
                deny_file(&mut planner, &mut write_narrowed, scan, path);
            }
            None if file => {}
            None => {
                denied.push(path.clone());
                planner.push(path, None, MountKind::Mask, false, Origin::AreaMask, 9);
            }
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

    // 2d. Protected paths (issue 14): each existing entry where it could be written is bound
    // read-only onto itself, and every directory between it (or a missing entry) and its
    // writable area is pinned like 2b, so that no entry can be moved away with an ancestor and
    // replaced by a writable one.
    for (path, file) in &scan.existing {
        if !(effective(Axis::Read, path) && effective(Axis::Write, path)) {
            continue; // not writable here: read-only or invisible already
        }
        planner.push(path.clone(), Some(path.clone()), MountKind::ReadOnly, *file, Origin::Protected, 2);
    }
    for pin in &scan.pins {
        let exists = planner.ops.iter().any(|op| op.destination == *pin);
        if exists || !(effective(Axis::Read, pin) && effective(Axis::Write, pin)) {
            continue;
        }
        planner.push(pin.clone(), Some(pin.clone()), MountKind::ReadWrite, false, Origin::Area, 2);
    }

    // 2c. Aliases: where the host shows a masked, read-only or write-only root's directory at
    // another path too (a bind mount of the workspace or of an ancestor elsewhere, the same
    // filesystem mounted twice), that path gets the same treatment wherever the plan makes it
    // visible: a mask or a bind at the root's own path protects only that path, and Landlock
    // has no deny rule to catch the other one (issue 12, class 1).
    // A file root is treated the same way: a read-only one is bound read-only at its alias, a
    // denied one (read denied, or write-only and so denied) is covered there by the same
    // unreadable placeholder (before, a denied file root was read through a bind of the
    // workspace elsewhere while a denied directory next to it was masked there).
    let guarded: Vec<(PathBuf, MountKind, bool)> = planner
        .ops
        .iter()
        .filter(|op| op.origin == Origin::Area || op.origin == Origin::AreaMask)
        .filter(|op| matches!(op.kind, MountKind::Mask | MountKind::ReadOnly | MountKind::WriteOnly))
        .filter(|op| config.additional_roots.iter().any(|r| r.path == op.destination))
        .map(|op| (op.destination.clone(), op.kind, op.file))
        .chain(denied_files.iter().map(|p| (p.clone(), MountKind::Mask, true)))
        .collect();
    for (root, kind, file) in guarded {
        for alias in host.aliases(&root) {
            let visible = planner.innermost(&alias, false).is_some_and(|op| Planner::is_bind(op.kind));
            if !visible {
                continue;
            }
            match kind {
                MountKind::ReadOnly if effective(Axis::Write, &alias) => {
                    planner.object_of.push((alias.clone(), root.clone()));
                    planner.push(alias.clone(), Some(alias), MountKind::ReadOnly, file, Origin::AreaMask, 9);
                }
                MountKind::ReadOnly => {}
                // An alias that is itself configured keeps its configured access, as a
                // directory's mask (the lowest origin) loses to the area there.
                _ if file && profile.areas().any(|(r, _, _)| r == alias) => {}
                _ if file => {
                    denied.push(alias.clone());
                    deny_file(&mut planner, &mut write_narrowed, scan, alias);
                }
                _ => {
                    denied.push(alias.clone());
                    planner.push(alias, None, MountKind::Mask, false, Origin::AreaMask, 9);
                }
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
    // Nothing of a masked place (the per-user registry, another live set) is bound over its
    // mask: the mounts go shallow first, so a bind beneath a mask shows through it. A
    // workspace, root or grant target inside one is refused (a red team, 5 December, made a
    // root of the registry's scan cache and rewrote what later scans trust). A protected entry
    // or a pin the scan found beneath any scratch mask (a workspace holding the host's `/tmp`
    // finds other sets' HOMEs) is dropped unless an area beneath the mask holds it: the mask
    // hides it, and nothing there is writable.
    for other in &spawn.other_scratch_roots {
        if !is_clean_absolute(other) || other.as_path() == Path::new("/") || *other == spawn.scratch_root {
            continue;
        }
        if let Some(area) = area_paths.iter().find(|a| within(a, other)) {
            return Err(Error::profile(format!(
                "{} lies inside {}, which every sandbox masks (the per-user registry, or the directory of a live \
                 executor set): it cannot be a workspace, an additional root or a grant target",
                area.display(),
                other.display()
            )));
        }
    }
    let masks: Vec<PathBuf> =
        planner.ops.iter().filter(|op| op.origin == Origin::ScratchMask).map(|op| op.destination.clone()).collect();
    planner.ops.retain(|op| {
        let found =
            op.origin == Origin::Protected || (op.origin == Origin::Area && !area_paths.contains(&op.destination));
        !(found
            && masks.iter().any(|m| {
                op.destination != *m
                    && within(&op.destination, m)
                    && !area_paths.iter().any(|a| a != m && within(a, m) && within(&op.destination, a))
            }))
    });
    let var_run = PathBuf::from("/var/run");
    if host.var_run_is_dir && exposed(&planner, &var_run) {
        planner.push(var_run, None, MountKind::Mask, false, Origin::AreaMask, 9);
    }
    // A mount of the kernel's own interfaces (sysfs, cgroup, tracefs, procfs, devtmpfs, …)
    // that a recursive bind of an area brings along is masked: a chroot's `/dev` and `/sys`
    // bound inside a workspace let a workload move itself out of its cgroups, freeze other
    // runs and write the host's sysfs (a red team, 5 December). Shallow first: one beneath
    // another's mask is hidden with it.
    let mut kernel: Vec<&PathBuf> = host.kernel_mounts.iter().filter(|p| is_clean_absolute(p)).collect();
    kernel.sort_by_key(|p| depth(p));
    for at in kernel {
        if exposed(&planner, at) && !planner.ops.iter().any(|op| op.destination == *at) {
            planner.push(at.clone(), None, MountKind::Mask, false, Origin::AreaMask, 9);
        }
    }
    planner.dedupe();
    planner.ops.sort_by_key(|op| (depth(&op.destination), op.rank));
    // Binds through the root only for the embedded runtime: runc opens the sources of a
    // container with a user namespace before it mounts anything (from the host's view), so a
    // source inside the root is not there yet. Exported bundles keep host sources and the gap
    // (THREAT-MODEL.md, class 1).
    if matches!(spawn.launch, super::Launch::Embedded { .. }) {
        planner.ops = order(std::mem::take(&mut planner.ops));
        // Copies below each layer multiply with the depth of nested layers; a profile nested
        // so deep that the mounts would run into the kernel's limit is refused by name.
        if planner.ops.len() > MAX_MOUNTS {
            return Err(Error::profile(format!(
                "additional_roots: nested so deep that a spawn would make {} mounts (at most {MAX_MOUNTS})",
                planner.ops.len()
            )));
        }
    }

    // The cwd must exist inside: under a bind, or a mount point (or an ancestor of one).
    let cwd_visible = planner.ops.iter().any(|op| within(&op.destination, &spawn.cwd))
        || planner.innermost(&spawn.cwd, false).is_some_and(|op| Planner::is_bind(op.kind));
    if !cwd_visible || spawn.cwd == Path::new("/proc") || within(&spawn.cwd, Path::new("/proc")) {
        return Err(Error::argument(format!("cwd: {} is outside the sandbox's view", spawn.cwd.display())));
    }

    // A denied root's mask or cover is detached when the host replaces what it covers only
    // where a bind shows the host's directory around it.
    denied.extend(denied_files);
    denied.retain(|d| planner.innermost(d, true).is_some_and(|op| Planner::is_bind(op.kind)));
    denied.sort();
    denied.dedup();
    let mut reopened: Vec<PathBuf> = planner
        .ops
        .iter()
        .filter(|op| op.origin == Origin::Area && Planner::is_bind(op.kind) && !op.below)
        .filter(|op| denied.iter().any(|d| op.destination != *d && within(&op.destination, d)))
        .map(|op| op.destination.clone())
        .collect();
    reopened.sort();
    reopened.dedup();
    Ok(Planned { planner, rootfs_symlinks, host_entries_bound, replaced, write_narrowed, denied, reopened })
}

/// The mount order: parents before what is nested in them (by depth, then rank), except that a
/// bind made *through the root* comes after everything nested in it.
///
/// A mask or a read-only bind is attached to its directory in one mount only: the mount that
/// shows the directory when it is made. Made inside a nested bind (a root, or the pin of a
/// nested root's ancestor), it is not in the enclosing bind underneath (the workspace's), which
/// shows the same directory too. When the host (or another sandbox) then moves the directory
/// to another parent during the run, the workload reaches it through the enclosing bind, where
/// nothing covers it. So a nested directory bind whose source is its own host path, inside a
/// bind of the host path too, is made last instead: everything nested in it is mounted first,
/// onto the enclosing bind (the same directories, since both show the host path), and the bind
/// itself then copies that tree (`rbind` of `rootfs/<destination>`), so that every mount showing
/// a protected directory carries its protection, wherever the directory is moved within them.
///
/// Only where the copy keeps the flags the bind needs: a read-only bind that holds nothing
/// writable (its copy is read-only all through) anywhere, a writable one only inside a writable
/// bind (the runtime sets flags on a copy and never clears one); and only for the embedded
/// runtime (see [`plan`]).
fn order(ops: Vec<PlannedMount>) -> Vec<PlannedMount> {
    // Destinations are unique (deduplicated): each one's parent is its nearest ancestor path
    // that is a destination too.
    let index: HashMap<&Path, usize> = ops.iter().enumerate().map(|(i, op)| (op.destination.as_path(), i)).collect();
    let parent: Vec<Option<usize>> =
        ops.iter().map(|op| op.destination.ancestors().skip(1).find_map(|a| index.get(a).copied())).collect();
    let host_self_bind =
        |op: &PlannedMount| Planner::is_bind(op.kind) && !op.file && op.source.as_ref() == Some(&op.destination);
    // Whether anything is nested in each mount, and anything that must stay writable: a
    // read-only bind through the root is recursively read-only (`rro`, for the host's own
    // submounts it copies), which would make such a mount read-only too.
    let mut has_nested = vec![false; ops.len()];
    let mut writable_nested = vec![false; ops.len()];
    for (i, op) in ops.iter().enumerate() {
        let writable = !matches!(op.kind, MountKind::ReadOnly | MountKind::Mask);
        let mut up = parent[i];
        while let Some(j) = up {
            has_nested[j] = true;
            writable_nested[j] |= writable;
            up = parent[j];
        }
    }
    let through: Vec<bool> = (0..ops.len())
        .map(|i| {
            let op = &ops[i];
            let Some(j) = parent[i] else { return false };
            let outer = &ops[j];
            host_self_bind(op)
                && has_nested[i]
                && host_self_bind(outer)
                && outer.kind != MountKind::Private
                && if op.kind == MountKind::ReadOnly {
                    // Its copy is read-only all through (`rro`).
                    !writable_nested[i]
                } else {
                    matches!(outer.kind, MountKind::ReadWrite | MountKind::WriteOnly)
                }
        })
        .collect();
    // The depth order, with each bind through the root moved to just after the last mount
    // nested in it (the deepest first, so that an enclosing one moves after the nested one's
    // new place). Nothing else moves: a mount depends only on those it is nested in.
    let mut order: Vec<usize> = (0..ops.len()).collect();
    let mut moving: Vec<usize> = (0..ops.len()).filter(|&i| through[i]).collect();
    moving.sort_by_key(|&i| std::cmp::Reverse(depth(&ops[i].destination)));
    for x in moving {
        let Some(from) = order.iter().position(|&i| i == x) else { continue };
        order.remove(from);
        let nested = |i: usize| within(&ops[i].destination, &ops[x].destination);
        let last = order.iter().rposition(|&i| nested(i)).map_or(from, |p| p + 1);
        order.insert(last, x);
    }
    // A nested bind that cannot be made through the root (a writable one inside a read-only
    // bind, a read-only one holding writable mounts), or a mask, covers directories its
    // enclosing bind shows too: the protections nested in it are made once more just before
    // it, onto the enclosing bind (and, for one nested deeper, onto each layer), as copies
    // (`below`), so that a protected directory moved out from under it stays protected.
    let protection = |op: &PlannedMount| {
        matches!(op.kind, MountKind::Mask | MountKind::ReadOnly)
            && matches!(op.origin, Origin::Area | Origin::AreaMask | Origin::Protected)
    };
    let layered: Vec<bool> = (0..ops.len())
        .map(|i| {
            let nested_cover = host_self_bind(&ops[i]) || ops[i].kind == MountKind::Mask;
            !through[i] && nested_cover && parent[i].is_some_and(|j| host_self_bind(&ops[j]))
        })
        .collect();
    // The copies below a layer repeat how the protections are built on top of it, restricted
    // to protections: each in order, a bind through the root as such (it then copies what was
    // put below it), a layer's own copies first (an attack on the first version, which put
    // them flat in that order, read a deny root inside a read-only root inside the layer).
    struct Layers<'a> {
        ops: &'a [PlannedMount],
        order: &'a [usize],
        through: &'a [bool],
        layered: &'a [bool],
    }
    impl Layers<'_> {
        fn copies(&self, a: &Path, protection: &dyn Fn(&PlannedMount) -> bool, out: &mut Vec<PlannedMount>) {
            for &p in self.order {
                if out.len() > MAX_MOUNTS {
                    return; // refused by `plan`, which sees the count
                }
                let op = &self.ops[p];
                if op.destination != a && within(&op.destination, a) && protection(op) {
                    if self.layered[p] {
                        self.copies(&op.destination, protection, out);
                    }
                    out.push(PlannedMount { through_root: self.through[p], below: true, ..op.clone() });
                }
            }
        }
    }
    let layers = Layers { ops: &ops, order: &order, through: &through, layered: &layered };
    let mut out = Vec::with_capacity(ops.len());
    for &i in &order {
        if layered[i] {
            layers.copies(&ops[i].destination, &protection, &mut out);
        }
        out.push(PlannedMount { through_root: through[i], ..ops[i].clone() });
    }
    out
}

/// Covers a file whose read is denied with the scan's unreadable placeholder, or `/dev/null`.
fn deny_file(planner: &mut Planner, narrowed: &mut Vec<String>, scan: &ProtectScan, path: PathBuf) {
    let source = match &scan.placeholder {
        Some(p) => p.clone(),
        None => {
            narrowed.push(format!(
                "{} is covered by /dev/null (no unreadable placeholder here): it reads as empty",
                path.display()
            ));
            PathBuf::from("/dev/null")
        }
    };
    planner.push(path, Some(source), MountKind::ReadOnly, true, Origin::Protected, 2);
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
