//! The Landlock rules of one spawn, derived from its mount plan (the `sandbox.landlock`
//! annotation, applied by the Linux backend's init).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::plan::{MountKind, MountPlan};

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

/// The rules of a plan: each mount's rights beneath its destination (masks get only the
/// listing of their stubs), the TCP ports of a broad grant, and abstract unix scoping in the
/// host network namespace.
///
/// Listing: a rule grants its rights to the whole hierarchy beneath its path, so `read_dir` on
/// `/` or on any directory above a write-only area would let the workload list that area, whose
/// read Landlock withholds. Without a write-only area, `/` gets `read_dir`, so that listings work
/// as under a standard runtime (CONTRACT.md §18). With one, `read_dir` goes instead to `/dev`, each
/// mask and each directory of the container root that holds a mount, wherever it lies neither
/// above nor inside a write-only area; `/` and the directories above the area stay unlistable.
///
/// Sockets: unless `unix_sockets_open` (the network or the profile's `unix_sockets` opens them,
/// [`crate::seccomp::SpawnRules`]), no rule carries `make_sock`. Seccomp refuses
/// `socket(AF_UNIX)`, but a stream socketpair's end can still be bound to a path, which makes a
/// socket inode without any call the creation guard watches (at a protected name, too): without
/// `make_sock` that `bind` is `EACCES` everywhere.
pub(super) fn landlock_rules(
    plan: &MountPlan,
    broad_port: Option<u16>,
    host_network: bool,
    unix_sockets_open: bool,
) -> LandlockRules {
    let write_only: Vec<&Path> =
        plan.mounts.iter().filter(|m| m.kind == MountKind::WriteOnly).map(|m| m.destination.as_path()).collect();
    let listable = |p: &Path| !write_only.iter().any(|w| w.starts_with(p) || p.starts_with(w));
    let mut lists = Vec::new();
    if write_only.is_empty() {
        lists.push(PathBuf::from("/"));
    } else {
        // A directory beneath a mount that grants `read_dir` needs no rule of its own.
        let mounted = |a: &Path| {
            plan.mounts.iter().any(|m| {
                a.starts_with(&m.destination)
                    && !matches!(m.kind, MountKind::Mask | MountKind::WriteOnly | MountKind::Dev)
            })
        };
        lists = plan
            .mounts
            .iter()
            .flat_map(|m| m.destination.ancestors().skip(1))
            .filter(|a| a.parent().is_some() && listable(a) && !mounted(a))
            .filter(|a| !plan.mounts.iter().any(|m| m.destination == *a))
            .map(Path::to_path_buf)
            .collect();
        lists.sort();
        lists.dedup();
    }
    let lists = lists.into_iter().map(|path| LandlockPathRule { path, access: vec!["read_dir"] });
    let mounts = plan.mounts.iter().filter(|m| !m.below).filter_map(|m| {
        let access: Vec<&'static str> = match m.kind {
            MountKind::ReadOnly => RO_RIGHTS.iter().copied().filter(|r| !(m.file && *r == "read_dir")).collect(),
            MountKind::ReadWrite if m.destination == Path::new("/dev/null") => DEV_RIGHTS.to_vec(),
            MountKind::ReadWrite => RO_RIGHTS
                .iter()
                .chain(WRITE_RIGHTS)
                .copied()
                .filter(|r| !m.file || matches!(*r, "execute" | "read_file" | "write_file" | "truncate"))
                .collect(),
            MountKind::WriteOnly => {
                WRITE_RIGHTS.iter().copied().filter(|r| !m.file || matches!(*r, "write_file" | "truncate")).collect()
            }
            MountKind::Private | MountKind::Tmp | MountKind::DevShm => ALL_RIGHTS.to_vec(),
            MountKind::Proc => PROC_RIGHTS.to_vec(),
            MountKind::Dev if write_only.is_empty() || !listable(&m.destination) => DEV_RIGHTS.to_vec(),
            MountKind::Dev => DEV_RIGHTS.iter().chain(&["read_dir"]).copied().collect(),
            MountKind::DevPts => DEVPTS_RIGHTS.to_vec(),
            MountKind::Mask if write_only.is_empty() || m.file || !listable(&m.destination) => return None,
            MountKind::Mask => vec!["read_dir"],
        };
        let access: Vec<&'static str> = access.into_iter().filter(|r| unix_sockets_open || *r != "make_sock").collect();
        Some(LandlockPathRule { path: m.destination.clone(), access })
    });
    LandlockRules {
        fs: lists.chain(mounts).collect(),
        tcp_connect: broad_port.map(|p| if p == 53 { vec![53] } else { vec![p, 53] }).unwrap_or_default(),
        scope_abstract_unix: host_network,
    }
}
