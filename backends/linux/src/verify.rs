//! The container init's check of its own mounts (issue 12, classes 1 and 3b), after pivot_root
//! and before Landlock: every bind of the workspace, a root, a pinned ancestor or a grant target
//! must be a mount point of the object recorded when the profile was made (or the grant was
//! verified), and every mask of a root must be a mount point over the recorded directory entry.
//! The runtime resolves bind sources and destinations by path, so a swap between the facade's
//! check and the mount is possible; mounts are fixed objects once made, so what this check
//! finds holds for the whole run. Names can still move (the host, or a sandbox of another
//! profile, may rename in a host-backed parent while this runs), so a check that ties a mount
//! to its name reads the parent's ctime before and after and retries when a rename happened
//! (the entries first, then the name's lookup: see `check`).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use sandbox_bundle::ExpectedMount;

use crate::sys;

/// A check is retried while the parent changes (a rename there, but also any file created or
/// removed: the ctime cannot tell them apart) for at least this many attempts and at most
/// `RETRY_FOR`: a parent that a concurrent process keeps changing (a build or `git` writing
/// in a workspace root while the spawn starts) must not fail the spawn after a few attempts,
/// as 16 attempts did for about half of the spawns while another sandbox created and removed
/// files in the workspace root in a Python loop.
const MIN_ATTEMPTS: usize = 16;
/// See `MIN_ATTEMPTS`.
const RETRY_FOR: Duration = Duration::from_secs(2);

/// The first expected mount that does not hold: its kind, its path and why.
#[derive(Debug, thiserror::Error)]
#[error("{what} {}: {why}", path.display())]
pub struct VerifyError {
    what: String,
    path: std::path::PathBuf,
    #[source]
    why: Mismatch,
}

/// Checks every expected mount; Err names the first that does not hold.
pub fn verify(expected: &[ExpectedMount]) -> Result<(), VerifyError> {
    let table = if expected.iter().any(|e| e.stacked > 0) {
        Some(std::fs::read("/proc/self/mountinfo").map_err(|source| VerifyError {
            what: String::from("mount table"),
            path: std::path::PathBuf::from("/proc/self/mountinfo"),
            why: Mismatch::Io { step: "reading", source },
        })?)
    } else {
        None
    };
    for e in expected {
        let fail = |why| VerifyError { what: e.what.to_string(), path: e.path.clone(), why };
        if let (Some(table), true) = (&table, e.stacked > 0) {
            let found = mounts_at(table, &e.path);
            if found < e.stacked {
                return Err(fail(Mismatch::Stacked { found, expected: e.stacked }));
            }
        }
        if !e.count_only {
            check(e).map_err(fail)?;
        }
    }
    Ok(())
}

/// How many entries of the mount table `table` (`/proc/self/mountinfo`) have their mount point
/// at `path` (the fifth field, with the kernel's octal escapes undone).
fn mounts_at(table: &[u8], path: &Path) -> usize {
    let path = path.as_os_str().as_bytes();
    table
        .split(|&b| b == b'\n')
        .filter_map(|line| line.split(|&b| b == b' ').nth(4))
        .filter(|field| sandbox_bundle::host::unescape_mountinfo(field) == path)
        .count()
}

fn check(e: &ExpectedMount) -> Result<(), Mismatch> {
    let (Some(parent_id), Some(entry_ino)) = (e.parent, e.entry_ino) else {
        let fd = sys::open_path_no_symlinks(&e.path).map_err(io("opening without following symlinks"))?;
        return check_object(e, &fd);
    };
    let parent = e.path.parent().ok_or(Mismatch::NoParent)?;
    let name = e.path.file_name().ok_or(Mismatch::NoName)?;
    let pfd = sys::open_path_no_symlinks(parent).map_err(io("opening its parent"))?;
    match entry_and_object(&pfd, Some(parent_id), name.as_bytes(), |fd| check_object(e, fd))? {
        (Some(ino), ()) if ino == entry_ino => Ok(()),
        (Some(ino), ()) => Err(Mismatch::OtherEntry { found: ino, expected: entry_ino }),
        (None, ()) => Err(Mismatch::Missing),
    }
}

/// The `d_ino` of the entry `name` in the directory `pfd` (None: no such entry) and what
/// `look` says of the object at that name (opened from `pfd` without following a symlink),
/// both read while no rename happens in the directory: the object `look` saw is the one
/// mounted on that entry, or the entry's own. With `parent_id`, the directory must be that
/// object.
///
/// The order matters. A rename changes the directory's ctime and entries first and the name
/// lookup's cache (the dentries) last, all under the directory's lock, which reading the
/// entries waits for and a lookup does not. A lookup made in the middle of a rename sees the
/// old name, entries read after it the new one, and the ctime is the same before and after:
/// a mask on the wrong directory passed the check that way (a CI run of issue 16: a deny root
/// swapped in a loop was read once). Entries read first wait for a rename in progress, and a
/// rename that starts after them has changed the ctime before a lookup can see it.
fn entry_and_object<T>(
    pfd: &std::os::fd::OwnedFd,
    parent_id: Option<(u64, u64)>,
    name: &[u8],
    look: impl Fn(&std::os::fd::OwnedFd) -> Result<T, Mismatch>,
) -> Result<(Option<u64>, T), Mismatch> {
    let start = Instant::now();
    let mut attempts = 0usize;
    loop {
        attempts += 1;
        let before = sys::statx_identity(pfd).map_err(io("statx of its parent"))?;
        if let Some(expected) = parent_id.filter(|id| *id != (before.dev, before.ino)) {
            return Err(Mismatch::OtherParent { found: (before.dev, before.ino), expected });
        }
        let found = sys::reopen_dir(pfd)
            .and_then(|dir| sys::dir_entry_ino(dir, name))
            .map_err(io("reading its parent"))
            .and_then(|ino| {
                let fd = sys::open_path_at_no_symlinks(pfd, Path::new(std::ffi::OsStr::from_bytes(name)))
                    .map_err(io("opening without following symlinks"))?;
                Ok((ino, look(&fd)?))
            });
        let after = sys::statx_identity(pfd).map_err(io("statx of its parent"))?;
        if after.ctime == before.ctime {
            return found;
        }
        if attempts >= MIN_ATTEMPTS && start.elapsed() >= RETRY_FOR {
            return Err(Mismatch::KeptChanging { attempts, millis: start.elapsed().as_millis() });
        }
        std::thread::yield_now();
    }
}

/// The object open at `fd` (opened at the expected path, the last component not followed):
/// a mount root; for a bind the recorded object, for a mask a tmpfs.
fn check_object(e: &ExpectedMount, fd: &std::os::fd::OwnedFd) -> Result<(), Mismatch> {
    let st = sys::statx_identity(fd).map_err(io("statx"))?;
    if st.mount_root == Some(false) {
        return Err(Mismatch::NotMountPoint);
    }
    if e.mask {
        // A mask is the sandbox's own empty tmpfs: a mount point of the host's directory (the
        // runtime's read-only self-bind of a masked path, landed on the real directory while the
        // mask itself went elsewhere) is not one.
        if !sys::is_tmpfs(fd).map_err(io("statfs"))? {
            return Err(Mismatch::NotMask);
        }
    } else if (st.dev, st.ino) != (e.dev, e.ino) {
        return Err(Mismatch::OtherObject { found: (st.dev, st.ino), expected: (e.dev, e.ino) });
    }
    Ok(())
}

/// Why one expected mount does not hold (the message follows the mount's kind and path).
#[derive(Debug, thiserror::Error)]
enum Mismatch {
    #[error("has no parent")]
    NoParent,
    #[error("has no name")]
    NoName,
    #[error("{step}: {source}")]
    Io { step: &'static str, source: std::io::Error },
    #[error(
        "lies in a directory other than the one the profile was made with (device {} inode {}, expected device {} \
         inode {})",
        .found.0, .found.1, .expected.0, .expected.1
    )]
    OtherParent { found: (u64, u64), expected: (u64, u64) },
    #[error("is mounted over inode {found}, not the recorded directory (inode {expected})")]
    OtherEntry { found: u64, expected: u64 },
    #[error("is missing from its parent")]
    Missing,
    #[error("its parent kept changing while it was checked ({attempts} attempts in {millis} ms)")]
    KeptChanging { attempts: usize, millis: u128 },
    #[error("is not a mount point inside the container")]
    NotMountPoint,
    #[error(
        "carries {found} mounts, not the {expected} its protection and the copies below its layers make (a copy \
         landed elsewhere)"
    )]
    Stacked { found: usize, expected: usize },
    #[error("is not the sandbox's mask (not a tmpfs)")]
    NotMask,
    #[error(
        "is not the directory the profile was made with (device {} inode {}, expected device {} inode {})",
        .found.0, .found.1, .expected.0, .expected.1
    )]
    OtherObject { found: (u64, u64), expected: (u64, u64) },
}

/// The failure of the I/O step `step`.
fn io(step: &'static str) -> impl Fn(std::io::Error) -> Mismatch {
    move |source| Mismatch::Io { step, source }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use std::os::unix::fs::MetadataExt;
    use std::path::PathBuf;

    use super::*;

    fn expect(path: &Path, mask: bool) -> ExpectedMount {
        let m = std::fs::metadata(path).unwrap();
        ExpectedMount {
            path: path.to_path_buf(),
            what: String::from("additional root"),
            dev: m.dev(),
            ino: m.ino(),
            mask,
            parent: None,
            entry_ino: None,
            stacked: 0,
            count_only: false,
        }
    }

    #[test]
    fn mounts_are_counted_at_their_escaped_mount_point() {
        let table = b"22 1 0:21 / /proc rw - proc proc rw\n\
            30 22 0:5 / /a\\040b rw - tmpfs tmpfs rw\n\
            31 30 0:6 / /a\\040b rw - tmpfs tmpfs rw\n\
            32 30 0:7 / /a\\040b/c rw - tmpfs tmpfs rw\n";
        assert_eq!(mounts_at(table, Path::new("/a b")), 2);
        assert_eq!(mounts_at(table, Path::new("/a b/c")), 1);
        assert_eq!(mounts_at(table, Path::new("/a")), 0);
        assert_eq!(mounts_at(table, Path::new("/proc")), 1);
    }

    #[test]
    fn a_protection_short_of_its_copies_fails() {
        // One more mount expected at /proc than there are (a copy below a layer redirected
        // elsewhere) fails; as many as there are, it holds.
        let n = mounts_at(&std::fs::read("/proc/self/mountinfo").unwrap(), Path::new("/proc"));
        assert!(n >= 1);
        let e = ExpectedMount { stacked: n + 1, count_only: true, ..expect(Path::new("/proc"), false) };
        let err = verify(std::slice::from_ref(&e)).unwrap_err().to_string();
        assert!(err.contains(&format!("carries {n} mounts, not the {}", n + 1)), "{err}");
        verify(&[ExpectedMount { stacked: n, ..e }]).unwrap();
    }

    #[test]
    fn mismatches_keep_their_words() {
        let e = Mismatch::OtherParent { found: (1, 2), expected: (3, 4) };
        assert_eq!(
            e.to_string(),
            "lies in a directory other than the one the profile was made with (device 1 inode 2, expected device 3 inode \
             4)"
        );
        let e = Mismatch::OtherObject { found: (1, 2), expected: (3, 4) };
        assert_eq!(
            e.to_string(),
            "is not the directory the profile was made with (device 1 inode 2, expected device 3 inode 4)"
        );
        let e = io("statx")(std::io::Error::from_raw_os_error(2));
        assert!(e.to_string().starts_with("statx: ") && std::error::Error::source(&e).is_some(), "{e}");
    }

    #[test]
    fn a_bind_must_be_a_mount_root_of_the_recorded_object() {
        // `/` is a mount root here with its own identity: it passes, a wrong inode does not.
        let root = expect(Path::new("/"), false);
        verify(std::slice::from_ref(&root)).unwrap();
        let wrong = ExpectedMount { ino: root.ino + 1, ..root.clone() };
        let e = verify(&[wrong]).unwrap_err().to_string();
        assert!(e.contains("additional root /") && e.contains("not the directory"), "{e}");
        // A plain directory with the right identity is not a mount point.
        let dir = std::env::temp_dir().join(format!("sbx-verify-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let plain = verify(&[expect(&dir, false)]);
        // A symlink anywhere on the way is refused.
        let link = dir.join("link");
        std::os::unix::fs::symlink("/", &link).unwrap();
        let last = verify(&[ExpectedMount { path: link.clone(), ..root.clone() }]);
        let middle = verify(&[ExpectedMount { path: link.join("proc"), ..root }]);
        std::fs::remove_dir_all(&dir).unwrap();
        let e = plain.unwrap_err().to_string();
        assert!(e.contains("not a mount point"), "{e}");
        // The last component is opened as the link itself (not a mount root, not the object).
        assert!(last.is_err());
        let e = middle.unwrap_err().to_string();
        assert!(e.contains("without following symlinks"), "{e}");
    }

    #[test]
    fn a_mask_must_be_a_tmpfs_over_the_recorded_entry() {
        let shm = PathBuf::from("/dev/shm");
        let is_tmpfs_root = sys::open_path_no_symlinks(&shm)
            .ok()
            .and_then(|fd| Some((sys::is_tmpfs(&fd).ok()?, sys::statx_identity(&fd).ok()?.mount_root)))
            .is_some_and(|(tmpfs, root)| tmpfs && root == Some(true));
        if !is_tmpfs_root {
            eprintln!("!!!!!!!! /dev/shm is not a tmpfs mount here: mask check not exercised !!!!!!!!");
            return;
        }
        let dev = std::fs::metadata("/dev").unwrap();
        let entry = std::fs::read_dir("/dev")
            .unwrap()
            .flatten()
            .find(|e| e.file_name() == "shm")
            .map(|e| std::os::unix::fs::DirEntryExt::ino(&e))
            .unwrap();
        let mask = ExpectedMount { parent: Some((dev.dev(), dev.ino())), entry_ino: Some(entry), ..expect(&shm, true) };
        verify(std::slice::from_ref(&mask)).unwrap();
        let e = verify(&[ExpectedMount { entry_ino: Some(entry + 1), ..mask.clone() }]).unwrap_err().to_string();
        assert!(e.contains("mounted over inode"), "{e}");
        let e = verify(&[ExpectedMount { parent: Some((dev.dev(), dev.ino() + 1)), ..mask }]).unwrap_err().to_string();
        assert!(e.contains("other than the one"), "{e}");
        // A mount root that is not a tmpfs is not a mask.
        let e = verify(&[expect(Path::new("/"), true)]).unwrap_err().to_string();
        assert!(e.contains("not a tmpfs") || e.contains("not a mount point"), "{e}");
    }

    /// The entry and the lookup are read as one: while a thread swaps two directories in a
    /// loop (rename exchange, as an attacker would around a spawn), every answer pairs the
    /// entry's inode with the object the lookup found at the same name. Read in the other
    /// order (lookup, then entries), this test counted 22 mismatched answers in its 3 seconds.
    #[test]
    fn the_entry_and_the_lookup_are_read_as_one_while_names_are_swapped() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let dir = std::env::temp_dir().join(format!("sbx-verify-swap-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("x")).unwrap();
        std::fs::create_dir_all(dir.join("y")).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let swapper = {
            let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
            let (x, y) = (dir.join("x"), dir.join("y"));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let flags = nix::fcntl::RenameFlags::RENAME_EXCHANGE;
                    nix::fcntl::renameat2(None, &x, None, &y, flags).unwrap();
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let pfd = sys::open_path_no_symlinks(&dir).unwrap();
        let look = |fd: &std::os::fd::OwnedFd| Ok(sys::statx_identity(fd).map_err(io("statx"))?.ino);
        let (mut answers, mut mismatched, mut kept_changing) = (0u64, 0u64, 0u64);
        let end = Instant::now() + Duration::from_secs(3);
        while Instant::now() < end {
            match entry_and_object(&pfd, None, b"x", look) {
                Ok((Some(entry), object)) => {
                    answers += 1;
                    if entry != object {
                        mismatched += 1;
                    }
                }
                Err(Mismatch::KeptChanging { .. }) => kept_changing += 1,
                other => panic!("{other:?}"),
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        let swaps = swaps.load(Ordering::Relaxed);
        std::fs::remove_dir_all(&dir).unwrap();
        println!("{answers} answers, {mismatched} mismatched, {kept_changing} kept changing, {swaps} swaps");
        // Positive controls: the swaps ran, and answers came between them.
        assert!(swaps > 1000 && answers > 100, "{swaps} swaps, {answers} answers");
        assert_eq!(mismatched, 0, "{mismatched} of {answers} answers paired an entry with another object");
    }
}
