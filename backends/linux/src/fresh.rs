//! Between two runs of a kept container (issue 16): the run's private `/tmp` and `/dev/shm`
//! are emptied, never crossing into another mount (a workspace or scratch bind under `/tmp`
//! lies above the private tmpfs and is never touched).
//!
//! Runs in the container's init, confined like the workload, after every process of the run
//! is gone: nothing moves under it. What cannot be removed (a mount point's stub, or an entry
//! the init may not remove) fails the clean-up, and the container is given up.

use std::os::fd::{AsFd, AsRawFd, IntoRawFd, OwnedFd};

use nix::dir::Dir;
use nix::fcntl::AtFlags;
use nix::sys::stat::{FchmodatFlags, Mode, SFlag, fchmodat, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};

/// How deep a tree of the run's may be: past it the clean-up fails (the container is given up).
const MAX_DEPTH: usize = 256;

/// The directories a run of a kept container may change themselves (not only what they hold):
/// the private `/tmp` and `/dev/shm`, and `/dev` with `/dev/pts` and `/dev/mqueue`.
const PRIVATE_DIRS: [&str; 5] = ["/tmp", "/dev/shm", "/dev", "/dev/pts", "/dev/mqueue"];

/// One private directory's mode, owner, group and extended attribute names.
pub type DirState = (u32, u32, u32, Vec<u8>);

/// What a run could change in the private directories themselves and hand on to the next run
/// of a kept container: each one's mode, owner and extended attributes (a default POSIX ACL on
/// `/tmp` widened the next run's new files to 0666; a mode of 0555 refused them; a `user.*`
/// attribute carried data). Compared before and after each run, like the init's own attributes:
/// a difference gives the container up. Times are not compared (every file made there changes
/// them); None when one cannot be read.
pub fn private_dirs_state() -> Option<Vec<DirState>> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    for dir in PRIVATE_DIRS {
        let path = std::path::Path::new(dir);
        match std::fs::symlink_metadata(path) {
            Ok(m) => out.push((m.mode(), m.uid(), m.gid(), crate::sys::xattr_names(path).ok()?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.push((0, 0, 0, Vec::new())),
            Err(_) => return None,
        }
    }
    Some(out)
}

/// Empties the directory at `path` (an absolute path of the container's own tmpfs), keeping
/// every entry that lies on another mount, and every directory on the way to one. True when
/// only those remain.
pub fn empty_private_dir(path: &str) -> Result<(), String> {
    let fd = crate::sys::open_dir_at(None, std::ffi::OsStr::new(path)).map_err(|e| format!("open: {e}"))?;
    let root = crate::sys::statx_identity(&fd).map_err(|e| format!("statx: {e}"))?;
    empty(fd, root.dev, 0).map(|_| ())
}

/// Removes what `dir` holds on device `dev`; Ok(true) when it is empty afterwards, Ok(false)
/// when a mount (or a directory holding one) stays.
fn empty(dir: OwnedFd, dev: u64, depth: usize) -> Result<bool, String> {
    if depth > MAX_DEPTH {
        return Err(String::from("depth"));
    }
    let names: Vec<std::ffi::OsString> = {
        let reopened =
            crate::sys::open_dir_at(Some(dir.as_fd()), std::ffi::OsStr::new(".")).map_err(|e| format!("step1: {e}"))?;
        let mut listing = Dir::from_fd(reopened.into_raw_fd()).map_err(|e| format!("step2: {e}"))?;
        listing
            .iter()
            .filter_map(Result::ok)
            .map(|e| std::ffi::OsStr::from_bytes(e.file_name().to_bytes()).to_owned())
            .filter(|n| n != "." && n != "..")
            .collect()
    };
    let mut all_gone = true;
    for name in names {
        let st = fstatat(Some(dir.as_raw_fd()), name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
            .map_err(|e| format!("fstatat {name:?}: {e}"))?;
        if st.st_dev != dev {
            // A mount: never entered, never removed.
            all_gone = false;
            continue;
        }
        let is_dir = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR;
        if is_dir {
            if st.st_mode & 0o700 != 0o700 {
                fchmodat(
                    Some(dir.as_raw_fd()),
                    name.as_os_str(),
                    Mode::from_bits_truncate((st.st_mode & 0o7777) | 0o700),
                    FchmodatFlags::NoFollowSymlink,
                )
                .map_err(|e| format!("step3: {e}"))?;
            }
            let sub = crate::sys::open_dir_at(Some(dir.as_fd()), &name).map_err(|e| format!("step4: {e}"))?;
            let identity = crate::sys::statx_identity(&sub).map_err(|e| format!("step5: {e}"))?;
            if identity.dev != dev || identity.mount_root == Some(true) {
                all_gone = false;
                continue;
            }
            if !empty(sub, dev, depth + 1)? {
                all_gone = false;
                continue;
            }
            unlinkat(Some(dir.as_fd().as_raw_fd()), name.as_os_str(), UnlinkatFlags::RemoveDir)
                .map_err(|e| format!("step6: {e}"))?;
        } else {
            unlinkat(Some(dir.as_fd().as_raw_fd()), name.as_os_str(), UnlinkatFlags::NoRemoveDir)
                .map_err(|e| format!("step7: {e}"))?;
        }
    }
    Ok(all_gone)
}

use std::os::unix::ffi::OsStrExt;
