//! The per-user registry of scratch roots (issue 12, class 7): no sandbox reads another set's
//! HOME, TMPDIR, bundles or state, wherever the scratch roots are.
//!
//! **Decision.** Every sandboxed set registers its set directory in
//! `/tmp/sandbox-registry-<uid>/` before its first spawn, and every spawn masks (a 64 KiB
//! tmpfs, like its own scratch root) the scratch root of every registered set whose directory
//! exists, wherever its view would otherwise expose it: so while any set lives on a scratch
//! root, that whole root is hidden from every other sandbox of the user, including sets made
//! there later. The registry lives in the host's `/tmp`, which no sandbox sees (each gets a
//! private `/tmp`), and is masked itself as well. It is owner-only (0700, this uid, not a
//! symlink, else sets fail with `SandboxUnavailable` naming it); an entry is one file, named by
//! the SHA-256 of the set directory's path and holding that path, written to a temporary name
//! and renamed (atomic). A set removes its entry when it closes; an entry whose set directory is
//! gone (a crashed embedder's, once swept) is pruned when read.
//!
//! **What remains.** A container's mounts are fixed when it is made: a sandbox that started
//! while no set lived on a scratch root sees a set made there later if its view exposes it
//! (host read allowed), until its run ends. Set directories are owner-only (0700) as well,
//! which keeps other users out but not the same user's other processes outside any sandbox.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sandbox_bundle::Error;

use crate::fsutil;

/// The registry directory of this user.
pub(crate) fn dir() -> PathBuf {
    PathBuf::from(format!("/tmp/sandbox-registry-{}", nix::unistd::geteuid().as_raw()))
}

/// The longest entry read (a path).
const MAX_ENTRY: u64 = 8192;

/// Creates (or checks) the registry directory: owner-only, this uid, a real directory.
pub(crate) fn ensure_dir() -> Result<PathBuf, Error> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = dir();
    let mut builder = std::fs::DirBuilder::new();
    builder.mode(0o700);
    match builder.create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(format!("creating the scratch-root registry {}", dir.display()), e)),
    }
    let meta = std::fs::symlink_metadata(&dir)
        .map_err(|e| Error::io(format!("inspecting the scratch-root registry {}", dir.display()), e))?;
    if !meta.is_dir() || meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o077 != 0 {
        return Err(Error::SandboxUnavailable {
            detail: format!(
                "the scratch-root registry {} is not an owner-only directory of this user; remove it",
                dir.display()
            ),
        });
    }
    Ok(dir)
}

fn entry_name(path: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(path.as_os_str().as_encoded_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Registers the set directory `set_dir` (canonical, in its scratch root) until
/// [`unregister`] or its removal.
pub(crate) fn register(set_dir: &Path) -> Result<(), Error> {
    let dir = ensure_dir()?;
    let name = entry_name(set_dir);
    fsutil::replace_file(&dir, &dir.join(name), set_dir.as_os_str().as_encoded_bytes())
        .map_err(|e| Error::io(format!("registering the set directory in {}", dir.display()), e))
}

/// Removes the entry of `set_dir` (at close, once the directory is gone or being removed).
pub(crate) fn unregister(set_dir: &Path) {
    let _ = std::fs::remove_file(dir().join(entry_name(set_dir)));
}

/// Registry entries: (file name, registered scratch root).
type Entries = Vec<(String, PathBuf)>;

/// The entries last read, keyed by the registry directory's modification time.
static CACHE: Mutex<Option<((i64, i64), Entries)>> = Mutex::new(None);

fn read_entry(path: &Path) -> Option<PathBuf> {
    let (bytes, _) = fsutil::read_regular(path, MAX_ENTRY)?;
    let text = String::from_utf8(bytes).ok()?;
    let p = PathBuf::from(text);
    // `register` writes canonical set directories, which are clean; an entry that is not (a
    // planted one) masks nothing, as the compiler ignores unclean scratch roots anyway.
    sandbox_bundle::path::is_clean_absolute(&p).then_some(p)
}

/// The scratch root of every registered set whose directory exists now as a real directory,
/// and the registry itself (the masks a spawn adds). Entries whose set directory is gone are
/// pruned. Never fails: an unreadable registry yields only itself.
pub(crate) fn masked_roots() -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dir = dir();
    let mut out = vec![dir.clone()];
    let Ok(meta) = std::fs::symlink_metadata(&dir) else { return out };
    if !meta.is_dir() || meta.uid() != nix::unistd::geteuid().as_raw() {
        return out;
    }
    let stamp = (meta.mtime(), meta.mtime_nsec());
    let entries = {
        let mut cache = CACHE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match cache.as_ref() {
            Some((s, e)) if *s == stamp => e.clone(),
            _ => {
                let e: Entries = std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter_map(|e| {
                        let name = e.file_name().to_str()?.to_owned();
                        if name.starts_with('.') {
                            return None;
                        }
                        Some((name, read_entry(&e.path())?))
                    })
                    .collect();
                *cache = Some((stamp, e.clone()));
                e
            }
        }
    };
    for (name, set_dir) in entries {
        match std::fs::symlink_metadata(&set_dir) {
            Ok(m) if m.is_dir() => {
                if let Some(root) = set_dir.parent().filter(|r| *r != Path::new("/")) {
                    if !out.iter().any(|o| o == root) {
                        out.push(root.to_path_buf());
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = std::fs::remove_file(dir.join(name));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn registered_sets_mask_their_scratch_root_until_they_are_gone() {
        let area = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(area.path()).unwrap();
        let set = root.join("sandbox-executors-0123456789abcdef");
        std::fs::create_dir(&set).unwrap();
        register(&set).unwrap();
        let entry = dir().join(entry_name(&set));
        assert_eq!(std::fs::read(&entry).unwrap(), set.as_os_str().as_encoded_bytes());
        let masked = masked_roots();
        assert_eq!(masked.first(), Some(&dir()), "the registry masks itself");
        assert!(masked.contains(&root), "the set's scratch root is masked");
        // Registering again is idempotent; unregistering ends the mask.
        register(&set).unwrap();
        unregister(&set);
        assert!(!masked_roots().contains(&root));
        // A set directory that is gone (its embedder crashed, a sweep removed it) is pruned.
        register(&set).unwrap();
        std::fs::remove_dir(&set).unwrap();
        assert!(!masked_roots().contains(&root));
        assert!(!entry.exists(), "the stale entry was not pruned");
        // A planted entry that is not a clean absolute path, or a symlink, masks nothing.
        std::fs::write(dir().join("planted"), "relative/../x").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir().join("planted-link")).unwrap();
        let masked = masked_roots();
        assert!(!masked.iter().any(|p| p == Path::new("relative/..") || p == Path::new("/etc")));
        std::fs::remove_file(dir().join("planted")).unwrap();
        std::fs::remove_file(dir().join("planted-link")).unwrap();
    }
}
