//! What the profile's paths resolved to when it was made, and the ancestors pinned for nested
//! areas (CONTRACT.md §4, issue 12 class 1).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ProfileConfig;
use crate::access::Access;
use crate::error::Error;
use crate::host::HOST_EXCLUDED;

/// What a recorded identity belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdentityRole {
    /// The workspace root.
    Workspace,
    /// An additional root.
    Root,
    /// An ancestor of an area, between it and the innermost enclosing writable area (exclusive
    /// both ends): bound onto itself so that it is a mount point inside, which the workload
    /// cannot rename or remove.
    Pin,
}

/// The object a profile path resolved to when the profile was made (CONTRACT.md §4, issue 12
/// class 1): every spawn checks it before building the container and again inside, after
/// mounting; a mismatch fails the spawn, never widens it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PathIdentity {
    /// Which kind of path this is.
    pub role: IdentityRole,
    /// The canonical path.
    pub path: PathBuf,
    /// `st_dev` of the directory.
    pub dev: u64,
    /// `st_ino` of the directory.
    pub ino: u64,
    /// `(st_dev, st_ino)` of the lexical parent, and the inode number the parent's directory
    /// entry names (`d_ino`, the covered inode when the path is a host mount point): they tie a
    /// mount inside to its name (None where they could not be read).
    pub parent: Option<(u64, u64)>,
    /// See `parent`.
    pub entry_ino: Option<u64>,
}

/// The ancestors to pin, and the identities of every area and pin (see [`PathIdentity`]).
///
/// An area's ancestors are pinned up to the innermost enclosing area when that area may be
/// written (its write is not deny), or up to the top-level host entry when no area encloses it
/// and the host may be read and written: renaming any of them would move the area's
/// protection away from its name (issue 12, 1a-1c). Top-level entries are host binds (mount
/// points) already; nothing is pinned where the sandbox never binds the host (`HOST_EXCLUDED`).
pub(super) fn identities(c: &ProfileConfig) -> Result<Vec<PathIdentity>, Error> {
    let areas: Vec<(&Path, Access)> = std::iter::once((c.workspace_root.as_path(), c.workspace_write))
        .chain(c.additional_roots.iter().map(|r| (r.path.as_path(), r.write)))
        .collect();
    let mut pins: Vec<PathBuf> = Vec::new();
    for (area, _) in &areas {
        let enclosing =
            areas.iter().filter(|(r, _)| area.starts_with(r) && r != area).max_by_key(|(r, _)| r.components().count());
        let (stop, writable) = match enclosing {
            Some((r, write)) => (r.components().count().max(2), *write != Access::Deny),
            None => (2, c.host_write != Access::Deny && c.host_read != Access::Deny),
        };
        // Where the host entries (not an area's bind) carry the ancestors, never under the
        // top-level entries the sandbox does not bind from the host: a pin there would expose
        // the host's /tmp, /run, … (and an area there sits in the sandbox's own mount anyway).
        let carried_by_host = enclosing.is_none_or(|(r, _)| *r == Path::new("/"));
        let excluded = area.components().nth(1).is_some_and(|top| HOST_EXCLUDED.iter().any(|x| top.as_os_str() == *x));
        if !writable || (carried_by_host && excluded) {
            continue;
        }
        for p in area.ancestors().skip(1).take_while(|p| p.components().count() > stop) {
            if !pins.iter().any(|q| q == p) && !areas.iter().any(|(r, _)| r == &p) {
                pins.push(p.to_path_buf());
            }
        }
    }
    pins.sort_by_key(|p| (p.components().count(), p.as_os_str().as_encoded_bytes().to_vec()));
    let mut out = Vec::new();
    let stat = |field: &str, p: &Path| -> Result<(u64, u64), Error> {
        let m = std::fs::metadata(p).map_err(|e| Error::profile(format!("{field}: {}: {e}", p.display())))?;
        Ok(dev_ino(&m))
    };
    // The object, its parent's identity and the name's `d_ino` there (they tie a mount to its
    // name), read as one: the parent's entries first, then the name's lookup, while the parent
    // (by path) keeps its identity and ctime. A rename changes the ctime and the entries before
    // the lookup's cache, under the directory's lock, which a listing waits for and a lookup
    // does not. Read otherwise, a profile made while another process swaps a root with a decoy
    // could record the root's inode with the decoy's entry, and the init's check of a mask
    // (tied to the entry) would then pass a mask that landed on the decoy.
    let record = |field: &str, p: &Path| -> Result<Recorded, Error> {
        let Some(parent_dir) = p.parent() else { return Ok((stat(field, p)?, None, None)) };
        let start = std::time::Instant::now();
        let mut attempts = 0usize;
        loop {
            attempts += 1;
            let before = std::fs::metadata(parent_dir).ok().map(|m| stamp(&m));
            let entry_ino = p.file_name().and_then(|name| {
                std::fs::read_dir(parent_dir)
                    .ok()?
                    .flatten()
                    .find(|e| e.file_name() == name)
                    .and_then(|e| entry_ino(&e))
            });
            let object = stat(field, p);
            let after = std::fs::metadata(parent_dir).ok().map(|m| stamp(&m));
            if before == after {
                return Ok((object?, before.map(|(dev, ino, _)| (dev, ino)), entry_ino));
            }
            if attempts >= RECORD_ATTEMPTS && start.elapsed() >= RECORD_FOR {
                return Err(Error::profile(format!(
                    "{field}: {}: its parent kept changing while the profile was made ({attempts} attempts in {} ms)",
                    p.display(),
                    start.elapsed().as_millis()
                )));
            }
            std::thread::yield_now();
        }
    };
    let ((dev, ino), parent, entry_ino) = record("workspace_root", &c.workspace_root)?;
    out.push(PathIdentity {
        role: IdentityRole::Workspace,
        path: c.workspace_root.clone(),
        dev,
        ino,
        parent,
        entry_ino,
    });
    for (i, r) in c.additional_roots.iter().enumerate() {
        if std::fs::symlink_metadata(&r.path).is_err() {
            continue; // a root that does not exist yet (write deny): nothing to pin down
        }
        let ((dev, ino), parent, entry_ino) = record(&format!("additional_roots[{i}].path"), &r.path)?;
        out.push(PathIdentity { role: IdentityRole::Root, path: r.path.clone(), dev, ino, parent, entry_ino });
    }
    for p in pins {
        if !p.is_dir() {
            continue; // an ancestor of a root that does not exist yet
        }
        let ((dev, ino), parent, entry_ino) = record("additional_roots", &p)?;
        out.push(PathIdentity { role: IdentityRole::Pin, path: p, dev, ino, parent, entry_ino });
    }
    Ok(out)
}

/// What is recorded of a path: `(st_dev, st_ino)`, its parent's and the name's `d_ino` there
/// (see [`PathIdentity`]).
type Recorded = ((u64, u64), Option<(u64, u64)>, Option<u64>);

/// A parent that keeps changing while a path is recorded is read again for at least this many
/// attempts and at most `RECORD_FOR` (the container init's check uses the same bounds).
const RECORD_ATTEMPTS: usize = 16;
/// See `RECORD_ATTEMPTS`.
const RECORD_FOR: std::time::Duration = std::time::Duration::from_secs(2);

/// Device, inode and ctime (nanoseconds) of a directory: a rename in it changes the ctime.
#[cfg(unix)]
fn stamp(m: &std::fs::Metadata) -> (u64, u64, (i64, i64)) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino(), (m.ctime(), m.ctime_nsec()))
}

#[cfg(not(unix))]
fn stamp(_: &std::fs::Metadata) -> (u64, u64, (i64, i64)) {
    (0, 0, (0, 0))
}

#[cfg(unix)]
fn dev_ino(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn dev_ino(_: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

#[cfg(unix)]
fn entry_ino(e: &std::fs::DirEntry) -> Option<u64> {
    use std::os::unix::fs::DirEntryExt;
    Some(e.ino())
}

#[cfg(not(unix))]
fn entry_ino(_: &std::fs::DirEntry) -> Option<u64> {
    None
}
