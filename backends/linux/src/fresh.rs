//! Between two runs of a kept container (issue 16): the run's private `/tmp` and `/dev/shm`
//! are emptied, never crossing into another filesystem (a workspace or scratch bind under
//! `/tmp` lies above the private tmpfs and is never touched; a pin, a directory of the tmpfs
//! bound onto itself, is emptied and kept).
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
/// the private `/tmp` and `/dev/shm`, and `/dev` with `/dev/pts` and `/dev/mqueue`; and the
/// devpts multiplexer `/dev/pts/ptmx` (a `chmod 0` of it denied every later run a terminal, an
/// attack of the evening red team of 4 December).
const PRIVATE_DIRS: [&str; 6] = ["/tmp", "/dev/shm", "/dev", "/dev/pts", "/dev/mqueue", "/dev/pts/ptmx"];

/// The private directories whose pins are looked for (see [`pins_in`]).
const PINNED_IN: [&str; 2] = ["/tmp", "/dev/shm"];

/// One private directory's path, mode, owner, group and extended attribute names.
pub type DirState = (std::path::PathBuf, u32, u32, u32, Vec<u8>);

/// What a run could change in the private directories themselves and hand on to the next run
/// of a kept container: each one's mode, owner and extended attributes (a default POSIX ACL on
/// `/tmp` widened the next run's new files to 0666; a mode of 0555 refused them; a `user.*`
/// attribute carried data), for [`PRIVATE_DIRS`] and for every pin (a directory of the
/// container's own `/tmp` or `/dev/shm` that the helper bound onto itself, which the clean-up
/// empties but cannot remove). Compared before and after each run, like the init's own
/// attributes: a difference gives the container up. Times are not compared (every file made
/// there changes them; [`reset_times`] sets them after each clean-up); None when one cannot be
/// read.
pub fn private_dirs_state(table: &[u8]) -> Option<Vec<DirState>> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let paths = PRIVATE_DIRS.iter().map(std::path::PathBuf::from).chain(pins_in(table));
    for path in paths {
        match std::fs::symlink_metadata(&path) {
            Ok(m) => {
                let xattrs = crate::sys::xattr_names(&path).ok()?;
                out.push((path, m.mode(), m.uid(), m.gid(), xattrs));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.push((path, 0, 0, 0, Vec::new())),
            Err(_) => return None,
        }
    }
    Some(out)
}

/// The container's mount table (`/proc/self/mountinfo`), read once per clean-up and handed to
/// the functions below. None when it cannot be read.
pub fn mount_table() -> Option<Vec<u8>> {
    std::fs::read("/proc/self/mountinfo").ok()
}

/// The pins of the private `/tmp` and `/dev/shm` in the mount table `table`: the mounts beneath
/// each whose filesystem is that directory's own (a host bind, the workspace or the scratch
/// root, is another one).
fn pins_in(table: &[u8]) -> Vec<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    // (device, mount point) of every mount, in the table's order (a later one is on top).
    let mounts: Vec<(&[u8], std::path::PathBuf)> = table
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let mut fields = line.split(|&b| b == b' ');
            let device = fields.nth(2)?;
            let point = sandbox_bundle::host::unescape_mountinfo(fields.nth(1)?);
            Some((device, std::path::PathBuf::from(std::ffi::OsString::from_vec(point))))
        })
        .collect();
    let mut out = Vec::new();
    for base in PINNED_IN {
        let Some((device, _)) = mounts.iter().rev().find(|(_, p)| p.as_os_str() == base) else { continue };
        for (d, point) in &mounts {
            if d == device && point.starts_with(base) && point.as_os_str() != base && !out.contains(point) {
                out.push(point.clone());
            }
        }
    }
    out
}

/// Whether the bundle gives the container a private `/tmp` and `/dev/shm` of its own that
/// nothing covers: each is the destination of exactly one mount, a tmpfs, and no later mount
/// lands on one of their ancestors. A workspace at `/tmp` replaces the private tmpfs there (the
/// compiler mounts none), and the host's own `/tmp` may be a tmpfs too: only the plan tells
/// them apart.
pub fn planned_private(spec: &libcontainer::oci_spec::runtime::Spec) -> bool {
    let mounts = spec.mounts().clone().unwrap_or_default();
    PINNED_IN.iter().all(|dir| {
        let dir = std::path::Path::new(dir);
        let at: Vec<usize> =
            mounts.iter().enumerate().filter(|(_, m)| m.destination() == dir).map(|(i, _)| i).collect();
        let [only] = at[..] else { return false };
        mounts[only].typ().as_deref() == Some("tmpfs")
            && !mounts[only + 1..].iter().any(|m| dir.starts_with(m.destination()))
    })
}

/// Whether the private `/tmp` and `/dev/shm` are the container's own: at each, exactly one
/// mount, a tmpfs. A workspace (or any bind) exactly at `/tmp` lies over the private tmpfs,
/// and emptying `/tmp` would then empty the host's directory (a red team's `cd /tmp && sandbox
/// serve` lost the host's `/tmp` at the first run's clean-up): such a container is never
/// cleaned, only given up. `table` is the mount table.
pub fn private_dirs_are_private(table: &[u8]) -> bool {
    sole_tmpfs(table, "/tmp") && sole_tmpfs(table, "/dev/shm")
}

/// Whether exactly one mount of `table` is at `point`, and it is a tmpfs.
fn sole_tmpfs(table: &[u8], point: &str) -> bool {
    let mut found = table.split(|&b| b == b'\n').filter_map(|line| {
        let text = String::from_utf8_lossy(line);
        let mut halves = text.splitn(2, " - ");
        let left = halves.next()?;
        let fstype = halves.next()?.split(' ').next()?.to_owned();
        let field = left.split(' ').nth(4)?;
        (sandbox_bundle::host::unescape_mountinfo(field.as_bytes()) == point.as_bytes()).then_some(fstype)
    });
    matches!((found.next(), found.next()), (Some(fstype), None) if fstype == "tmpfs")
}

/// Sets the access and modification times of the private directories, their pins and the
/// entries of the container's own `/dev` (its symlinks) to now, after each clean-up: `touch -d`
/// on them carried chosen data from one run to the next (the evening red team of 4 December).
/// Never an entry of `/dev` on another filesystem: the host's device nodes bound there are the
/// host's (rootless, where they are not read-only mounts, `/dev/null`'s times changed on the
/// host). Best effort: an entry whose times cannot be set is left.
pub fn reset_times(table: &[u8]) {
    use std::os::unix::fs::MetadataExt;
    let mut paths: Vec<std::path::PathBuf> = PRIVATE_DIRS.iter().map(std::path::PathBuf::from).collect();
    paths.extend(pins_in(table));
    if let (Ok(dev), Ok(entries)) = (std::fs::symlink_metadata("/dev"), std::fs::read_dir("/dev")) {
        paths.extend(
            entries
                .filter_map(Result::ok)
                .filter(|e| std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.dev() == dev.dev()))
                .map(|e| e.path()),
        );
    }
    for path in paths {
        let _ = nix::sys::stat::utimensat(
            None,
            &path,
            &nix::sys::time::TimeSpec::UTIME_NOW,
            &nix::sys::time::TimeSpec::UTIME_NOW,
            nix::sys::stat::UtimensatFlags::NoFollowSymlink,
        );
    }
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
            if identity.dev != dev {
                all_gone = false;
                continue;
            }
            if identity.mount_root == Some(true) {
                // A pin: a directory of this tmpfs bound onto itself. What it holds besides the
                // mounts in it is the runs' and goes (a red team kept files there from one run
                // to the next); the pin itself stays.
                empty(sub, dev, depth + 1)?;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TABLE: &[u8] = b"\
        22 1 0:20 / / ro - overlay overlay ro\n\
        30 22 0:40 / /tmp rw,nosuid - tmpfs tmpfs rw\n\
        31 30 0:40 /a /tmp/a rw - tmpfs tmpfs rw\n\
        32 31 0:40 /a/b /tmp/a/b rw - tmpfs tmpfs rw\n\
        33 32 8:1 /home/u/ws /tmp/a/b/ws rw - ext4 /dev/vda rw\n\
        34 22 0:41 / /dev/shm rw - tmpfs shm rw\n\
        35 34 0:41 /x\\040y /dev/shm/x\\040y rw - tmpfs shm rw\n\
        36 22 0:42 / /dev rw - tmpfs tmpfs rw\n";

    /// The pins are the mounts of the private tmpfs's own directories beneath it, never a
    /// host bind, with the mount table's escapes undone.
    #[test]
    fn pins_are_the_private_tmpfs_own_mounts() {
        assert_eq!(
            pins_in(TABLE),
            [
                std::path::PathBuf::from("/tmp/a"),
                std::path::PathBuf::from("/tmp/a/b"),
                std::path::PathBuf::from("/dev/shm/x y")
            ]
        );
    }

    /// The plan decides: a tmpfs at `/tmp` and at `/dev/shm` that nothing later covers; a
    /// workspace at `/tmp` (no private tmpfs there, or a bind over it) or a bind on `/` is not.
    #[test]
    fn only_a_plan_with_uncovered_private_tmpfs_is_cleaned() {
        use libcontainer::oci_spec::runtime::{Mount, MountBuilder, Spec};
        let tmpfs = |d: &str| MountBuilder::default().destination(d).typ("tmpfs").source("tmpfs").build().unwrap();
        let bind = |d: &str| MountBuilder::default().destination(d).typ("bind").source(d).build().unwrap();
        let spec = |mounts: Vec<Mount>| {
            let mut spec = Spec::default();
            spec.set_mounts(Some(mounts));
            spec
        };
        let base = || vec![tmpfs("/dev"), tmpfs("/dev/shm"), tmpfs("/tmp")];
        assert!(planned_private(&spec(base())));
        assert!(planned_private(&spec([base(), vec![bind("/tmp/ws"), bind("/dev/shm/x")]].concat())));
        assert!(!planned_private(&spec(vec![tmpfs("/dev"), tmpfs("/dev/shm"), bind("/tmp")])));
        assert!(!planned_private(&spec([base(), vec![bind("/tmp")]].concat())));
        assert!(!planned_private(&spec([base(), vec![bind("/")]].concat())));
        assert!(!planned_private(&spec(vec![tmpfs("/dev"), tmpfs("/tmp")])));
    }

    /// A private directory with a bind exactly over it (a workspace at `/tmp`) is not the
    /// container's own, nor is one that is no tmpfs.
    #[test]
    fn a_private_dir_covered_by_a_bind_is_not_private() {
        assert!(sole_tmpfs(TABLE, "/tmp") && sole_tmpfs(TABLE, "/dev/shm"));
        let mut covered = TABLE.to_vec();
        covered.extend_from_slice(b"40 30 8:1 /tmp /tmp rw - ext4 /dev/vda rw\n");
        assert!(!sole_tmpfs(&covered, "/tmp"));
        let mut covered = TABLE.to_vec();
        covered.extend_from_slice(b"40 30 0:50 / /tmp rw - tmpfs tmpfs rw\n");
        assert!(!sole_tmpfs(&covered, "/tmp"));
        assert!(!sole_tmpfs(b"30 22 8:1 / /tmp rw - ext4 /dev/vda rw\n", "/tmp"));
        assert!(!sole_tmpfs(TABLE, "/run"));
    }
}
