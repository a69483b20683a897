//! Small filesystem helpers: random names, owner-only directories and the contract's removal.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sandbox_bundle::Error;

/// `n` random bytes as lowercase hex.
pub(crate) fn random_hex(n: usize) -> Result<String, Error> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| Error::io("reading random bytes", io::Error::other(e.to_string())))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Creates `parent/<prefix><random>` with mode 0700.
pub(crate) fn private_dir(parent: &Path, prefix: &str) -> Result<PathBuf, Error> {
    let path = parent.join(format!("{prefix}{}", random_hex(8)?));
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(&path).map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
    Ok(path)
}

/// Writes `bytes` as `file` (a name in `dir`) whole or not at all: a new owner-only (0600)
/// file at a temporary name in `dir` (created exclusively, never through a symlink), renamed
/// over `file`. Nothing is left at the temporary name on failure.
#[cfg(target_os = "linux")]
pub(crate) fn replace_file(dir: &Path, file: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = dir.join(format!(".new-{}", random_hex(8).map_err(|e| io::Error::other(e.to_string()))?));
    let written = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&tmp)?;
        f.write_all(bytes)?;
        fs::rename(&tmp, file)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The first `max` bytes of the regular file `path` and its metadata, opened without following
/// a symlink or blocking (a FIFO planted at the name); None for anything else or any error.
#[cfg(target_os = "linux")]
pub(crate) fn read_regular(path: &Path, max: u64) -> Option<(Vec<u8>, fs::Metadata)> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes).ok()?;
    Some((bytes, meta))
}

/// Removes `path` (CONTRACT.md §9 *removal*): never follows a symlink, never crosses a mount
/// point, gives each directory owner `rwx` first so read-only trees go too. What cannot be
/// removed is left and reported as one `Io` error after the rest is gone.
///
/// On Unix it walks by descriptor (`openat`, `fstatat`, `unlinkat`) holding one directory open
/// at a time, so a tree deeper than `PATH_MAX` (a workload's `while mkdir d && cd d`) goes like
/// any other and the walk never runs out of descriptors (issue 12, class 8).
pub(crate) fn remove_tree(path: &Path) -> Result<(), Error> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("inspecting {}", path.display()), e)),
    };
    let mut failures = Vec::new();
    #[cfg(unix)]
    if meta.is_dir() {
        if let Err(e) = empty_dir_by_descriptor(path, &meta, &mut failures) {
            failures.push((path.to_path_buf(), e));
        }
        if let Err(e) = fs::remove_dir(path) {
            failures.push((path.to_path_buf(), e));
        }
    } else if let Err(e) = fs::remove_file(path) {
        failures.push((path.to_path_buf(), e));
    }
    #[cfg(not(unix))]
    remove_inner(path, &meta, &mut failures);
    // An entry that went away meanwhile is removed: another remover (the helper of a container
    // kept past its zygote's death, tearing its state down as the set closes) got there first.
    failures.retain(|(_, e)| e.kind() != io::ErrorKind::NotFound);
    match failures.into_iter().next() {
        None => Ok(()),
        Some((p, e)) => Err(Error::io(format!("removing {}", p.display()), e)),
    }
}

/// One directory of the walk below the root: its name in its parent, its identity, and the
/// subdirectories still to visit.
#[cfg(unix)]
struct Frame {
    name: std::ffi::OsString,
    id: (u64, u64),
    pending: Vec<std::ffi::OsString>,
}

/// Empties the directory `root` (whose metadata is `meta`) by descriptor. Failures of single
/// entries are collected in `failures` (the walk goes on); Err: the walk itself had to stop.
#[cfg(unix)]
fn empty_dir_by_descriptor(
    root: &Path,
    meta: &fs::Metadata,
    failures: &mut Vec<(PathBuf, io::Error)>,
) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;

    use nix::dir::Dir;
    use nix::fcntl::{AtFlags, OFlag};
    use nix::sys::stat::{Mode, SFlag, fchmod, fstat, fstatat};
    use nix::unistd::{UnlinkatFlags, unlinkat};
    use std::os::fd::AsRawFd;

    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let dev = meta.dev();
    let identity = |d: &Dir| -> io::Result<(u64, u64)> {
        let st = fstat(d.as_raw_fd())?;
        Ok(dev_ino(&st))
    };
    // Opens a directory, owner rwx, reads its entries: files are unlinked at once, directories
    // of the same filesystem returned for a visit, mount points reported and left.
    let visit = |d: &mut Dir, at: &dyn Fn() -> PathBuf, failures: &mut Vec<(PathBuf, io::Error)>| {
        if let Ok(st) = fstat(d.as_raw_fd()) {
            let mode = Mode::from_bits_truncate((st.st_mode & 0o7777) | 0o700);
            let _ = fchmod(d.as_raw_fd(), mode);
        }
        let names: Vec<std::ffi::OsString> = d
            .iter()
            .filter_map(Result::ok)
            .map(|e| std::ffi::OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
            .filter(|n| n != "." && n != "..")
            .collect();
        let fd = d.as_raw_fd();
        let mut dirs = Vec::new();
        for name in names {
            match fstatat(Some(fd), name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(st) if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFDIR => {
                    if dev_ino(&st).0 == dev {
                        dirs.push(name);
                    } else {
                        failures.push((at().join(&name), io::Error::other("a mount point is in the way")));
                    }
                }
                Ok(_) => {
                    if let Err(e) = unlinkat(Some(fd), name.as_os_str(), UnlinkatFlags::NoRemoveDir) {
                        failures.push((at().join(&name), e.into()));
                    }
                }
                Err(e) => failures.push((at().join(&name), e.into())),
            }
        }
        dirs
    };
    // Where an entry is, for error messages only (a deep path is shortened, never used).
    let shown = |stack: &[Frame]| -> PathBuf {
        let mut p = root.to_path_buf();
        if stack.len() > 8 {
            p.push(format!("…({} levels)…", stack.len() - 1));
            if let Some(last) = stack.last() {
                p.push(&last.name);
            }
        } else {
            for f in stack {
                p.push(&f.name);
            }
        }
        p
    };

    // A directory its owner cannot open (mode 0, 0100, 0300: a workload's `chmod 0 $HOME/d`) is
    // given owner rwx first, never through a symlink: as an ordinary user the walk otherwise
    // failed there, and the tree stayed in the scratch root (RAM under /dev/shm) for good,
    // sweeps included (the red team of 4 December, night). Root's opens ignore modes.
    let open_at = |dir: Option<std::os::fd::RawFd>, name: &std::ffi::OsStr| -> nix::Result<Dir> {
        match Dir::openat(dir, name, flags, Mode::empty()) {
            Err(nix::errno::Errno::EACCES) => {
                let rwx = Mode::from_bits_truncate(0o700);
                nix::sys::stat::fchmodat(dir, name, rwx, nix::sys::stat::FchmodatFlags::NoFollowSymlink)?;
                Dir::openat(dir, name, flags, Mode::empty())
            }
            other => other,
        }
    };
    let mut cur = open_at(None, root.as_os_str())?;
    if identity(&cur)? != (dev, meta.ino()) {
        return Err(io::Error::other("replaced while being removed"));
    }
    let root_pending = visit(&mut cur, &|| root.to_path_buf(), failures);
    let mut stack = vec![Frame { name: std::ffi::OsString::new(), id: (dev, meta.ino()), pending: root_pending }];
    loop {
        let Some(top) = stack.last_mut() else { return Ok(()) };
        if let Some(name) = top.pending.pop() {
            // Down: open the child relative to the directory we hold.
            match open_at(Some(cur.as_raw_fd()), name.as_os_str()) {
                Ok(mut child) => {
                    let id = identity(&child)?;
                    if id.0 != dev {
                        failures.push((shown(&stack).join(&name), io::Error::other("a mount point is in the way")));
                        continue;
                    }
                    let at = shown(&stack).join(&name);
                    let pending = visit(&mut child, &|| at.clone(), failures);
                    stack.push(Frame { name, id, pending });
                    cur = child;
                }
                Err(e) => failures.push((shown(&stack).join(&name), e.into())),
            }
            continue;
        }
        // Up: this directory is done. Its parent is reached through `..`, which must be the
        // directory we came from (nothing renamed it meanwhile), then the child is removed.
        if stack.len() == 1 {
            return Ok(());
        }
        let done = stack.pop().ok_or_else(|| io::Error::other("walk stack"))?;
        let parent = Dir::openat(Some(cur.as_raw_fd()), "..", flags, Mode::empty())?;
        let expected = stack.last().map(|f| f.id).ok_or_else(|| io::Error::other("walk stack"))?;
        if identity(&parent)? != expected {
            return Err(io::Error::other("a directory was moved while being removed"));
        }
        cur = parent;
        if let Err(e) = unlinkat(Some(cur.as_raw_fd()), done.name.as_os_str(), UnlinkatFlags::RemoveDir) {
            let mut at = shown(&stack);
            at.push(&done.name);
            failures.push((at, e.into()));
        }
    }
}

/// `(st_dev, st_ino)` as u64 (their C types differ between Linux and macOS).
#[cfg(unix)]
#[allow(clippy::useless_conversion, clippy::unnecessary_cast, clippy::cast_sign_loss)]
fn dev_ino(st: &nix::sys::stat::FileStat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

#[cfg(not(unix))]
fn remove_inner(path: &Path, meta: &fs::Metadata, failures: &mut Vec<(PathBuf, io::Error)>) {
    if !meta.is_dir() {
        if let Err(e) = fs::remove_file(path) {
            failures.push((path.to_path_buf(), e));
        }
        return;
    }
    if let Ok(entries) = fs::read_dir(path) {
        for entry in entries.flatten() {
            let child = entry.path();
            if let Ok(m) = fs::symlink_metadata(&child) {
                remove_inner(&child, &m, failures);
            }
        }
    }
    if let Err(e) = fs::remove_dir(path) {
        failures.push((path.to_path_buf(), e));
    }
}

/// A directory under the system's temporary directory, removed on drop.
#[derive(Debug)]
pub(crate) struct TempDir {
    path: PathBuf,
}

/// The directory for temporary files: `TMPDIR` when set and not empty (an empty one counts as
/// unset, as for the other variables), else `/tmp`; canonical. The error names `TMPDIR`.
pub fn temp_base() -> Result<PathBuf, Error> {
    let (name, dir) = match std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
        Some(t) => ("TMPDIR", PathBuf::from(t)),
        None => ("the temp dir", PathBuf::from("/tmp")),
    };
    fs::canonicalize(&dir).map_err(|e| Error::io(format!("{name}: {}", dir.display()), e))
}

impl TempDir {
    /// Creates `<tmp>/<prefix><random>` (0700), canonical.
    pub(crate) fn new(prefix: &str) -> Result<TempDir, Error> {
        Ok(TempDir { path: private_dir(&temp_base()?, prefix)? })
    }

    /// The path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = remove_tree(&self.path);
    }
}

#[cfg(test)]
#[cfg(unix)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// Makes `depth` nested directories `d` under `root` by descriptor (the path of the
    /// deepest one is far longer than PATH_MAX), with a file in the deepest.
    fn deep_tree(root: &Path, depth: usize) {
        use nix::fcntl::OFlag;
        use nix::sys::stat::Mode;
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let mut cur = nix::dir::Dir::open(root, flags, Mode::empty()).unwrap();
        for _ in 0..depth {
            nix::sys::stat::mkdirat(Some(cur.as_raw_fd()), "d", Mode::from_bits_truncate(0o755)).unwrap();
            cur = nix::dir::Dir::openat(Some(cur.as_raw_fd()), "d", flags, Mode::empty()).unwrap();
        }
        let fd = nix::fcntl::openat(
            Some(cur.as_raw_fd()),
            "leaf",
            OFlag::O_CREAT | OFlag::O_WRONLY | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        nix::unistd::close(fd).unwrap();
    }

    #[test]
    fn a_tree_deeper_than_path_max_is_removed() {
        let area = tempfile::tempdir().unwrap();
        let victim = area.path().join("home");
        fs::create_dir(&victim).unwrap();
        deep_tree(&victim, 2300);
        // Path-based removal fails on it: the problem is real.
        let deep: PathBuf = std::iter::repeat_n("d", 2300).collect();
        assert!(fs::metadata(victim.join(&deep)).is_err_and(|e| e.raw_os_error() == Some(libc_enametoolong())));
        remove_tree(&victim).unwrap();
        assert!(!victim.exists());
    }

    fn libc_enametoolong() -> i32 {
        nix::errno::Errno::ENAMETOOLONG as i32
    }

    #[test]
    fn read_only_dirs_go_symlinks_are_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let area = tempfile::tempdir().unwrap();
        let outside = area.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("keep"), "x").unwrap();
        let victim = area.path().join("set");
        fs::create_dir_all(victim.join("a/b/c")).unwrap();
        fs::write(victim.join("a/b/c/f"), "y").unwrap();
        std::os::unix::fs::symlink(&outside, victim.join("a/link")).unwrap();
        std::os::unix::fs::symlink(outside.join("keep"), victim.join("a/b/filelink")).unwrap();
        fs::set_permissions(victim.join("a/b/c"), fs::Permissions::from_mode(0o500)).unwrap();
        fs::set_permissions(victim.join("a/b"), fs::Permissions::from_mode(0o000)).unwrap();
        remove_tree(&victim).unwrap();
        assert!(!victim.exists());
        assert_eq!(fs::read_to_string(outside.join("keep")).unwrap(), "x", "a symlink was followed");
        // A file and a missing path.
        fs::write(area.path().join("f"), "z").unwrap();
        remove_tree(&area.path().join("f")).unwrap();
        remove_tree(&area.path().join("missing")).unwrap();
    }
}
