//! The per-user registry of scratch roots (issue 12, class 7): no sandbox reads another set's
//! HOME, TMPDIR, bundles or state, wherever the scratch roots are.
//!
//! **Decision.** Every sandboxed set registers its (canonical) scratch root in
//! `/tmp/sandbox-registry-<uid>/` and every spawn masks every registered scratch root that its
//! view would otherwise expose (a 64 KiB tmpfs over it, like its own scratch root). The
//! registry lives in the host's `/tmp`, which no sandbox sees (each gets a private `/tmp`), and
//! is masked itself as well. It is owner-only (0700, this uid, not a symlink, else sets fail
//! with `SandboxUnavailable` naming it); an entry is one file, named by the SHA-256 of the
//! path and holding the path, written to a temporary name and renamed (atomic). Entries stay
//! while their scratch root exists (a later set on a scratch root is then covered at once) and
//! are pruned when it is gone.
//!
//! **What remains.** A container's mounts are fixed when it is made: a sandbox that started
//! before another set first registered a new scratch root sees that root if its view exposes
//! it (host read allowed), until its run ends. Set directories are owner-only (0700) as well,
//! which keeps other users out but not the same user's other processes outside any sandbox.

use std::io::Read;
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
fn ensure_dir() -> Result<PathBuf, Error> {
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

/// Registers `scratch` (canonical) for the life of the directory.
pub(crate) fn register(scratch: &Path) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = ensure_dir()?;
    let name = entry_name(scratch);
    let tmp = dir.join(format!(".new-{}", fsutil::random_hex(8)?));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&tmp)?;
        file.write_all(scratch.as_os_str().as_encoded_bytes())?;
        std::fs::rename(&tmp, dir.join(&name))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(format!("registering the scratch root in {}", dir.display()), e));
    }
    Ok(())
}

/// Registry entries: (file name, registered scratch root).
type Entries = Vec<(String, PathBuf)>;

/// The entries last read, keyed by the registry directory's modification time.
static CACHE: Mutex<Option<((i64, i64), Entries)>> = Mutex::new(None);

fn read_entry(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_ENTRY).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let p = PathBuf::from(text);
    let clean = p.is_absolute() && p.components().all(|c| !matches!(c, std::path::Component::ParentDir));
    clean.then_some(p)
}

/// Every registered scratch root that exists now as a real directory, and the registry itself
/// (the masks a spawn adds). Entries whose scratch root is gone are pruned. Never fails: an
/// unreadable registry yields only itself.
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
    for (name, root) in entries {
        match std::fs::symlink_metadata(&root) {
            Ok(m) if m.is_dir() => out.push(root),
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
    fn registered_roots_are_masked_until_they_are_gone() {
        let area = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(area.path()).unwrap();
        register(&root).unwrap();
        let entry = dir().join(entry_name(&root));
        assert_eq!(std::fs::read(&entry).unwrap(), root.as_os_str().as_encoded_bytes());
        let masked = masked_roots();
        assert_eq!(masked.first(), Some(&dir()), "the registry masks itself");
        assert!(masked.contains(&root));
        // Registering again is idempotent.
        register(&root).unwrap();
        drop(area);
        assert!(!masked_roots().contains(&root));
        assert!(!entry.exists(), "the stale entry was not pruned");
        // A planted entry that is not a clean absolute path, or a symlink, masks nothing.
        std::fs::write(dir().join("planted"), "relative/../x").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir().join("planted-link")).unwrap();
        let masked = masked_roots();
        assert!(!masked.iter().any(|p| p == Path::new("relative/../x") || p == Path::new("/etc/hostname")));
        std::fs::remove_file(dir().join("planted")).unwrap();
        std::fs::remove_file(dir().join("planted-link")).unwrap();
    }
}
