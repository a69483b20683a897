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

/// Removes `path` (CONTRACT.md §9 *removal*): never follows a symlink, never crosses a mount
/// point, gives each directory owner `rwx` first so read-only trees go too. What cannot be
/// removed is left and reported as one `Io` error after the rest is gone.
pub(crate) fn remove_tree(path: &Path) -> Result<(), Error> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("inspecting {}", path.display()), e)),
    };
    let mut failures = Vec::new();
    remove_inner(path, &meta, &mut failures);
    match failures.into_iter().next() {
        None => Ok(()),
        Some((p, e)) => Err(Error::io(format!("removing {}", p.display()), e)),
    }
}

fn remove_inner(path: &Path, meta: &fs::Metadata, failures: &mut Vec<(PathBuf, io::Error)>) {
    if !meta.is_dir() {
        if let Err(e) = fs::remove_file(path) {
            failures.push((path.to_path_buf(), e));
        }
        return;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let _ = fs::set_permissions(path, fs::Permissions::from_mode((meta.mode() & 0o7777) | 0o700));
        let dev = meta.dev();
        if let Ok(entries) = fs::read_dir(path) {
            for entry in entries.flatten() {
                let child = entry.path();
                match fs::symlink_metadata(&child) {
                    Ok(m) if m.is_dir() && m.dev() != dev => {
                        failures.push((child, io::Error::other("a mount point is in the way")));
                    }
                    Ok(m) => remove_inner(&child, &m, failures),
                    Err(e) => failures.push((child, e)),
                }
            }
        }
    }
    #[cfg(not(unix))]
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

impl TempDir {
    /// Creates `<tmp>/<prefix><random>` (0700), canonical.
    pub(crate) fn new(prefix: &str) -> Result<TempDir, Error> {
        let tmp = fs::canonicalize(std::env::temp_dir()).map_err(|e| Error::io("resolving the temp dir", e))?;
        Ok(TempDir { path: private_dir(&tmp, prefix)? })
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
