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
    /// The host's mounts (`/proc/self/mountinfo`), in mount order: where one filesystem
    /// directory is visible at more than one path (see [`HostView::aliases`]).
    pub mounts: Vec<HostMount>,
    /// Where the host mounts a filesystem of the kernel's own interfaces ([`KERNEL_FILESYSTEMS`]:
    /// procfs, sysfs, cgroup, tracefs, devtmpfs, …), in mount order. One beneath a bound area
    /// (a chroot's `/dev` and `/sys` bound inside a workspace) is masked in every sandbox: a
    /// recursive bind brought it along, and through it a workload moved itself out of its
    /// cgroups and wrote to the host's sysfs and tracing (a red team, 5 December).
    pub kernel_mounts: Vec<PathBuf>,
}

/// The filesystem types whose mounts are the kernel's interfaces rather than files: never shown
/// inside a sandbox through a bind (see [`HostView::kernel_mounts`]).
pub const KERNEL_FILESYSTEMS: &[&str] = &[
    "autofs",
    "binfmt_misc",
    "bpf",
    "cgroup",
    "cgroup2",
    "configfs",
    "debugfs",
    "devpts",
    "devtmpfs",
    "efivarfs",
    "fusectl",
    "hugetlbfs",
    "mqueue",
    "nfsd",
    "nsfs",
    "proc",
    "pstore",
    "rpc_pipefs",
    "securityfs",
    "selinuxfs",
    "sysfs",
    "tracefs",
];

/// One host mount: which filesystem (`major:minor`), which of its directories (`root`) and
/// where it is visible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostMount {
    /// `major:minor` of the filesystem.
    pub device: String,
    /// The directory of the filesystem shown at `mount_point` (`/` for a whole filesystem).
    pub root: PathBuf,
    /// Where it is mounted.
    pub mount_point: PathBuf,
}

/// Undoes mountinfo's octal escapes (`\040` for a space, …).
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(unescape_mountinfo(field.as_bytes())))
}

/// Undoes the octal escapes (`\040` for a space, `\011` tab, `\012` newline, `\134`
/// backslash) the kernel writes into a path field of `/proc/<pid>/mountinfo`.
pub fn unescape_mountinfo(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |acc, c| acc.wrapping_mul(8).wrapping_add(c - b'0')));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// The mounts of `/proc/self/mountinfo` (none when unreadable), and the mount points of the
/// kernel's filesystems among them.
fn read_mounts() -> (Vec<HostMount>, Vec<PathBuf>) {
    let Ok(text) = fs::read_to_string("/proc/self/mountinfo") else { return (Vec::new(), Vec::new()) };
    parse_mounts(&text)
}

/// [`read_mounts`] of mountinfo's text.
fn parse_mounts(text: &str) -> (Vec<HostMount>, Vec<PathBuf>) {
    let mut mounts = Vec::new();
    let mut kernel = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let (Some(device), Some(root), Some(at)) = (f.get(2), f.get(3), f.get(4)) else { continue };
        let mount_point = unescape(at);
        // The filesystem type follows the optional fields' `-` separator.
        let fstype = f.iter().skip(6).skip_while(|x| **x != "-").nth(1);
        if fstype.is_some_and(|t| KERNEL_FILESYSTEMS.contains(t)) {
            kernel.push(mount_point.clone());
        }
        mounts.push(HostMount { device: (*device).to_owned(), root: unescape(root), mount_point });
    }
    (mounts, kernel)
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

/// A [`HostView`] kept for the next compilation while the host shows no change (issue 16: the
/// view took a warm spawn about 0.25 ms of its 5). It is reused while `/proc/self/mountinfo`
/// reads the same, byte for byte (a mount, an unmount, and a rename of a directory above a
/// mount point or a bind's source, which moves the mount without any mount event: red team
/// BC, 6 December, made a kept view's alias of a denied root stale that way and read the root
/// through the alias's new path), the process is in the same mount namespace, and every path
/// the view's lookups consulted (`/`, whose times change with any entry made, removed or
/// replaced there, and each directory and name on the way to the closure's entries and what
/// their symlinks lead to) has the stamp it had; a view with one of them changed in the two
/// seconds before it was read is not kept. What is saved is the view's lookups and the
/// parsing; the mount table is read at every compilation.
#[derive(Debug, Default)]
pub struct HostViewMemo {
    inner: std::sync::Mutex<Option<KeptView>>,
}

#[derive(Debug)]
struct KeptView {
    view: HostView,
    looked: Vec<(PathBuf, Option<crate::protect::Stamp>)>,
    mountinfo: String,
    mount_ns: Option<(u64, u64)>,
}

/// The calling process's mount namespace, by its device and inode numbers.
fn mount_ns() -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self/ns/mnt").ok().map(|m| (m.dev(), m.ino()))
}

impl HostView {
    /// [`HostView::scan`], reusing and refreshing `memo` ([`HostViewMemo`]).
    pub fn scan_with(memo: Option<&HostViewMemo>) -> HostView {
        let Some(memo) = memo else { return HostView::scan() };
        let mut kept = memo.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ns = mount_ns();
        let Ok(mountinfo) = fs::read_to_string("/proc/self/mountinfo") else {
            *kept = None;
            return HostView::scan();
        };
        if let Some(k) = kept.as_ref() {
            if ns.is_some()
                && k.mount_ns == ns
                && k.mountinfo == mountinfo
                && k.looked.iter().all(|(p, s)| crate::protect::any_stamp(p).is_ok_and(|now| now == *s))
            {
                return k.view.clone();
            }
        }
        *kept = None;
        let started =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        let mut view = HostView::scan_entries();
        (view.mounts, view.kernel_mounts) = parse_mounts(&mountinfo);
        let mut trail = Vec::new();
        let mut seen = std::collections::HashSet::new();
        // (`/var/run` is looked at, not followed: `/var` holds what it is.)
        for p in CLOSURE_DIRS.iter().chain(CLOSURE_FILES).chain(&["/var"]) {
            crate::protect::lookup_trail(Path::new(p), &mut trail, &mut seen);
        }
        let mut looked = Vec::with_capacity(trail.len());
        for path in trail {
            match crate::protect::any_stamp(&path) {
                Ok(s) if !s.is_some_and(|s| s.changed_since(started - 2)) => looked.push((path, s)),
                _ => return view,
            }
        }
        *kept = Some(KeptView { view: view.clone(), looked, mountinfo, mount_ns: ns });
        view
    }

    /// Reads the host: the entries of `/` and the closure. Unreadable entries are skipped.
    pub fn scan() -> HostView {
        let mut view = HostView::scan_entries();
        (view.mounts, view.kernel_mounts) = read_mounts();
        view
    }

    /// [`HostView::scan`] without the mounts.
    fn scan_entries() -> HostView {
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
        HostView { entries, closure, var_run_is_dir, mounts: Vec::new(), kernel_mounts: Vec::new() }
    }

    /// Other host paths where the directory `path` (or part of it) is visible: the same
    /// filesystem directory mounted again elsewhere (a bind mount of an ancestor, of `path`, or
    /// of a directory inside it; a filesystem mounted twice). A mask or a read-only bind at
    /// `path` alone would leave its contents open there (issue 12, class 1). Mounts at or
    /// under `path` itself are not aliases.
    pub fn aliases(&self, path: &Path) -> Vec<PathBuf> {
        // The mount that shows `path`: the deepest mount point above it, the last on ties
        // (the one on top).
        let Some((at, shown)) = self
            .mounts
            .iter()
            .enumerate()
            .filter(|(_, m)| path.starts_with(&m.mount_point))
            .max_by_key(|(i, m)| (m.mount_point.components().count(), *i))
        else {
            return Vec::new();
        };
        let Ok(rel) = path.strip_prefix(&shown.mount_point) else { return Vec::new() };
        let in_fs = shown.root.join(rel);
        let mut out: Vec<PathBuf> = Vec::new();
        for (i, m) in self.mounts.iter().enumerate() {
            if i == at || m.device != shown.device || m.mount_point.starts_with(path) {
                continue;
            }
            let alias = if let Ok(below) = in_fs.strip_prefix(&m.root) {
                if below.as_os_str().is_empty() { m.mount_point.clone() } else { m.mount_point.join(below) }
            } else if m.root.starts_with(&in_fs) {
                m.mount_point.clone()
            } else {
                continue;
            };
            // A later mount on the way (deeper, or stacked on the same point) shows something
            // else there: that mount is an alias in its own right or none.
            let depth = |p: &Path| p.components().count();
            let shadowed = self.mounts.iter().enumerate().any(|(j, o)| {
                j != i
                    && alias.starts_with(&o.mount_point)
                    && (depth(&o.mount_point) > depth(&m.mount_point) || (o.mount_point == m.mount_point && j > i))
            });
            if alias != path && !shadowed && !out.contains(&alias) {
                out.push(alias);
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A host view is kept and reused while the host shows no change (here it shows none
    /// unless `/`, `/etc`, `/usr` or the mounts change in the seconds before; then the test
    /// waits and tries again), and the view reused is the view read; a changed stamp or mount
    /// table is noticed.
    #[test]
    fn a_host_view_is_reused_while_the_host_shows_no_change() {
        let memo = HostViewMemo::default();
        let mut kept = false;
        for _ in 0..4 {
            let view = HostView::scan_with(Some(&memo));
            assert_eq!(view, HostView::scan());
            kept = memo.inner.lock().unwrap().is_some();
            if kept {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2100));
        }
        assert!(kept, "the view was never kept");
        // Reused: a mark put in the kept view comes back, and the next read is the host's again
        // once the kept one no longer matches (a path it depends on with other times).
        if let Some(k) = memo.inner.lock().unwrap().as_mut() {
            k.view.var_run_is_dir = !k.view.var_run_is_dir;
        }
        let marked = HostView::scan_with(Some(&memo));
        assert_ne!(marked.var_run_is_dir, HostView::scan().var_run_is_dir, "the kept view was not reused");
        if let Some(k) = memo.inner.lock().unwrap().as_mut() {
            k.looked[0].1 = None;
        }
        assert_eq!(HostView::scan_with(Some(&memo)), HostView::scan(), "a changed stamp was not noticed");
        // A mount table that reads otherwise (a mount, or a directory above one renamed).
        for _ in 0..4 {
            let _ = HostView::scan_with(Some(&memo));
            if memo.inner.lock().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2100));
        }
        if let Some(k) = memo.inner.lock().unwrap().as_mut() {
            k.view.var_run_is_dir = !k.view.var_run_is_dir;
            k.mountinfo.push_str("1 2 0:1 / /renamed rw - tmpfs tmpfs rw\n");
        }
        assert_eq!(HostView::scan_with(Some(&memo)), HostView::scan(), "a changed mount table was not noticed");
    }

    fn m(device: &str, root: &str, at: &str) -> HostMount {
        HostMount { device: device.into(), root: root.into(), mount_point: at.into() }
    }

    #[test]
    fn aliases_are_other_mounts_of_the_same_directory_above_at_or_below_it() {
        let host = HostView {
            mounts: vec![
                m("254:0", "/", "/"),
                m("0:5", "/", "/proc"),
                // The workspace bound elsewhere, the root itself bound elsewhere, a directory
                // inside the root bound elsewhere, the whole filesystem again, and a mount
                // under the root (not an alias).
                m("254:0", "/w/ws", "/alias"),
                m("254:0", "/w/ws/cfg/secrets", "/srv/s"),
                m("254:0", "/w/ws/cfg/secrets/sub", "/mnt/sub"),
                m("254:0", "/", "/mnt/all"),
                m("254:0", "/other", "/w/ws/cfg/secrets/inner"),
                // Another filesystem with the same directory names: not an alias.
                m("8:1", "/w/ws", "/media/x"),
            ],
            ..HostView::default()
        };
        let got = host.aliases(Path::new("/w/ws/cfg/secrets"));
        let want: Vec<PathBuf> = ["/alias/cfg/secrets", "/srv/s", "/mnt/sub", "/mnt/all/w/ws/cfg/secrets"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(got, want);
        // Under a mount of another directory: the filesystem path counts, not the host path.
        let host = HostView {
            mounts: vec![m("254:0", "/", "/"), m("254:1", "/data", "/home"), m("254:1", "/", "/mnt/disk")],
            ..HostView::default()
        };
        assert_eq!(host.aliases(Path::new("/home/u/.ssh")), vec![PathBuf::from("/mnt/disk/data/u/.ssh")]);
        assert!(host.aliases(Path::new("/etc")).is_empty());
        // An alias path that another mount covers shows that mount, not the directory.
        let host = HostView {
            mounts: vec![m("254:0", "/", "/"), m("254:0", "/", "/mnt/all"), m("8:1", "/", "/mnt/all/w")],
            ..HostView::default()
        };
        assert!(host.aliases(Path::new("/w/ws/secrets")).is_empty());
        assert_eq!(unescape("/a\\040b\\134c"), PathBuf::from("/a b\\c"));
    }
}
