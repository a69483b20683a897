//! Host facts the compiler needs, gathered once and passed in as data so that compilation stays
//! pure and golden tests can use a synthetic host.

use std::fs;
use std::path::{Path, PathBuf};

/// Directories of the runtime closure (CONTRACT.md §15.2), bound read-only when present.
pub const CLOSURE_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ld.so.conf.d",
    "/opt",
];

/// Exact files of the runtime closure (CONTRACT.md §15.2).
pub const CLOSURE_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/services",
    "/etc/protocols",
    "/etc/localtime",
    "/etc/os-release",
    "/etc/mime.types",
];

/// Top-level host entries never bound as host entries: the container has its own.
pub const HOST_EXCLUDED: &[&str] = &["proc", "sys", "dev", "run", "tmp"];

/// What a path is, without following a final symlink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symlink with its link text.
    Symlink(PathBuf),
    /// A socket, fifo, device, …
    Other,
}

/// One top-level entry of the host `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEntry {
    /// The entry's name (UTF-8; other names are skipped by [`HostView::scan`]).
    pub name: String,
    /// Its kind.
    pub kind: EntryKind,
}

/// One present runtime-closure entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosureEntry {
    /// Its path.
    pub path: PathBuf,
    /// `lstat` kind.
    pub kind: EntryKind,
    /// For a symlink: the fully resolved path and whether it is a directory.
    pub resolved: Option<(PathBuf, bool)>,
}

/// The host facts one compilation uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostView {
    /// Top-level entries of `/`, sorted by name.
    pub entries: Vec<HostEntry>,
    /// Present closure entries, in closure order.
    pub closure: Vec<ClosureEntry>,
    /// `/var/run` is a real directory (not the usual symlink to `/run`).
    pub var_run_is_dir: bool,
}

fn kind_of(path: &Path) -> Option<EntryKind> {
    let meta = fs::symlink_metadata(path).ok()?;
    let ft = meta.file_type();
    Some(if ft.is_symlink() {
        EntryKind::Symlink(fs::read_link(path).ok()?)
    } else if ft.is_dir() {
        EntryKind::Dir
    } else if ft.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    })
}

impl HostView {
    /// Reads the host: the entries of `/` and the closure. Unreadable entries are skipped.
    pub fn scan() -> HostView {
        let mut entries: Vec<HostEntry> = fs::read_dir("/")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let kind = kind_of(&e.path())?;
                Some(HostEntry { name, kind })
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let closure = CLOSURE_DIRS
            .iter()
            .chain(CLOSURE_FILES)
            .filter_map(|p| {
                let path = PathBuf::from(p);
                let kind = kind_of(&path)?;
                let resolved = match kind {
                    EntryKind::Symlink(_) => {
                        let target = fs::canonicalize(&path).ok()?;
                        let is_dir = target.is_dir();
                        Some((target, is_dir))
                    }
                    _ => None,
                };
                Some(ClosureEntry { path, kind, resolved })
            })
            .collect();
        let var_run_is_dir = matches!(kind_of(Path::new("/var/run")), Some(EntryKind::Dir));
        HostView { entries, closure, var_run_is_dir }
    }
}
