//! What the container init checks after mounting (the `sandbox.identities` annotation).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::GrantDeltas;
use super::plan::{MountKind, Origin, Planner};
use crate::profile::Profile;
use crate::protect::ProtectScan;

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
    /// How many mounts must sit at `path` at least (0: not counted): a protection made once
    /// more below a layer (`PlannedMount::below`) is made by path like every bind, so a swap can
    /// redirect the copy elsewhere; the copies are hidden under the layer, but they are listed
    /// at `path` in the mount table, and a redirected one leaves one fewer there.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stacked: usize,
    /// Only `stacked` is checked (a protection whose own mount has nothing recorded to check).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub count_only: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The checks the init makes after mounting: every bind of the workspace, a root, a pin, a grant
/// target, a protected entry (and the pins the protected-path scan adds), an alias of a root and
/// every unreadable placeholder must be a mount point of the recorded object; every mask of a
/// root must be a mount point over the recorded directory entry (when its parent is a host bind;
/// over the container's own skeleton or tmpfs there is nothing of the host to check).
///
/// The runtime resolves a bind's source on the host and its destination in the container by
/// path, following symlinks, so any self-bind whose path a workload (in another sandbox of the
/// same workspace) can rename could land the symlink's target, a host directory outside every
/// area, where the workload can reach it. Each such bind is therefore checked. One whose object
/// was not recorded (the scan found it but could not record it, which refuses the spawn first)
/// is checked against an identity no object has, so that it fails closed.
pub(super) fn expected_mounts(
    profile: &Profile,
    g: &GrantDeltas,
    scan: &ProtectScan,
    planner: &Planner,
) -> Vec<ExpectedMount> {
    let mut out = Vec::new();
    for op in planner.ops.iter().filter(|op| !op.below) {
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
        let bind = |dev: u64, ino: u64, what: &str, parent: Option<(u64, u64)>, entry_ino: Option<u64>| ExpectedMount {
            path: op.destination.clone(),
            what: what.to_owned(),
            dev,
            ino,
            mask: false,
            parent,
            entry_ino,
            stacked: 0,
            count_only: false,
        };
        match (op.origin, op.kind) {
            (Origin::Area | Origin::Protected | Origin::AreaMask, kind) if Planner::is_bind(kind) => {
                let Some(source) = op.source.as_ref() else { continue };
                let self_bind = *source == op.destination;
                let grant = g.identities.iter().find(|(p, _, _)| *p == op.destination);
                // A grant target wins over the profile's record of the same path: the grant
                // code verified it at this spawn (its name is not tied: no record of it).
                if let (Origin::Area, Some((_, dev, ino))) = (op.origin, grant) {
                    out.push(bind(*dev, *ino, what(None), None, None));
                    continue;
                }
                if let (Origin::Area, true, Some(i)) = (op.origin, self_bind, identity) {
                    out.push(bind(i.dev, i.ino, what(Some(i.role)), parent, entry_ino));
                    continue;
                }
                let granted = g.read_trees.iter().chain(&g.write_trees).chain(&g.read_paths).chain(&g.write_paths);
                if op.origin == Origin::Area && granted.into_iter().any(|t| *t == op.destination) {
                    continue; // a grant target the grant code did not record (not bound by its name)
                }
                // The object the bind must show: an alias shows its root's directory, a
                // placeholder the placeholder, anything else itself.
                let object = planner.object_of.iter().find(|(d, _)| *d == op.destination).map_or(source, |(_, o)| o);
                let recorded = profile
                    .identities()
                    .iter()
                    .find(|i| i.path == *object)
                    .map(|i| (i.dev, i.ino))
                    .or_else(|| scan.identities.iter().find(|(p, _, _)| p == object).map(|(_, d, i)| (*d, *i)));
                let what = match op.origin {
                    Origin::Protected if self_bind => "protected entry",
                    Origin::Protected => "unreadable placeholder over",
                    Origin::AreaMask => "alias of an additional root",
                    _ if scan.pins.contains(&op.destination) => "pinned ancestor of a protected entry",
                    _ => "additional root",
                };
                match recorded {
                    Some((dev, ino)) => out.push(bind(dev, ino, what, None, None)),
                    None => out.push(bind(0, 0, &format!("{what} (no identity was recorded)"), None, None)),
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
                    stacked: 0,
                    count_only: false,
                });
            }
            _ => {}
        }
    }
    // The copies below layers: the mount of record and each copy sit at the same path.
    for op in planner.ops.iter().filter(|op| !op.below) {
        let copies = planner.ops.iter().filter(|c| c.below && c.destination == op.destination).count();
        if copies == 0 {
            continue;
        }
        match out.iter_mut().find(|e| e.path == op.destination) {
            Some(e) => e.stacked = copies + 1,
            None => out.push(ExpectedMount {
                path: op.destination.clone(),
                what: String::from("protection copied below a nested bind"),
                dev: 0,
                ino: 0,
                mask: op.kind == MountKind::Mask,
                parent: None,
                entry_ino: None,
                stacked: copies + 1,
                count_only: true,
            }),
        }
    }
    out
}
