//! Kept probes (issue 16): a set whose host, binary, profile, cgroups and limits are those of
//! an earlier set of this user on this boot takes that set's probe measurements instead of
//! running a probe container of its own.
//!
//! **Decision.** Every set used to measure the host with a probe container before its first
//! spawn: half the time of a one-shot `sandbox run`. The measurements depend on nothing the
//! key ([`sandbox_linux::backend::LinuxBackend::probe_key`]) does not name: the boot, this
//! binary (device, inode, size, times), the ids, the profile's fingerprint, the cgroups found,
//! the limits asked, the kernel's Landlock ABI, the user-namespace sysctls and this process's
//! seccomp mode. A record is kept only when every layer held (Landlock fully, seccomp, `lo`),
//! and taken only when it still says so: every spawn requires exactly what the probe claimed
//! (Landlock fully enforced, seccomp installed, `lo` up, each limit read back), checked by the
//! helper and the init before the workload runs, so a stale or planted record can only fail
//! spawns closed, never let one run with less than the report says. A host where a layer is
//! missing probes at every set (its report is then always fresh). When a spawn's set-up fails
//! in a set that took a record, the record is removed and the next set probes afresh.
//!
//! **Where.** `<registry>/.probe-cache/` (the per-user scratch-root registry in the host's
//! `/tmp`, which no sandbox sees and every sandbox masks): owner-only, this uid, not a symlink,
//! else nothing is kept. A record is a file named `<boot>-<sha256 of the key>`, holding the key
//! and the measurements, written to a temporary name and renamed; records of other boots are
//! removed when one is written, and at most [`MAX_RECORDS`] are kept.
//!
//! The same store keeps the protected-paths scan's directory listings between processes
//! (`<registry>/.scan-cache/`, [`load_bytes`] and [`store_bytes`]; see
//! `crate::linux::keep_scan_memo`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil;

/// The most records kept at once (the oldest go first).
const MAX_RECORDS: usize = 64;

/// The longest record read.
const MAX_RECORD: u64 = 64 * 1024;

#[derive(Serialize, Deserialize)]
struct Record {
    key: String,
    measured: String,
}

/// Where the record for `key` is kept: (directory, file). `kind` names the directory
/// (`.probe-cache`, `.scan-cache`).
fn place(kind: &str, key: &str) -> Option<(PathBuf, PathBuf)> {
    use sha2::Digest;
    let boot = boot_prefix()?;
    let digest = sha2::Sha256::digest(key.as_bytes());
    let hash: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let dir = crate::registry::dir().join(kind);
    let file = dir.join(format!("{boot}-{hash}"));
    Some((dir, file))
}

fn boot_prefix() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let prefix: String = boot.trim().chars().filter(char::is_ascii_hexdigit).take(12).collect();
    (prefix.len() == 12).then_some(prefix)
}

/// Whether `dir` is an owner-only directory of this user (not a symlink).
fn owned_dir(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == nix::unistd::geteuid().as_raw() && m.mode() & 0o077 == 0)
}

/// The directory of probe records.
const PROBES: &str = ".probe-cache";

/// The measurements kept for `key`, and the file they came from.
pub(crate) fn load(key: &str) -> Option<(String, PathBuf)> {
    let (bytes, file) = load_bytes(PROBES, key, MAX_RECORD)?;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    (record.key == key).then_some((record.measured, file))
}

/// Keeps `measured` for `key` (best effort: a record that cannot be written is not kept).
pub(crate) fn store(key: &str, measured: String) {
    let stored = serde_json::to_vec(&Record { key: key.to_owned(), measured })
        .map_err(std::io::Error::other)
        .and_then(|bytes| try_store(PROBES, key, &bytes, MAX_RECORDS));
    if let Err(e) = stored {
        tracing::debug!("the probe was not kept: {e}");
    }
}

/// The bytes kept under `kind` for `key` (at most `max`), and their file: only from an
/// owner-only directory of this user, in a file of this user that no one else may read or
/// write, never through a symlink. (The record names its key itself where a hash collision
/// would matter: the probe's does.)
pub(crate) fn load_bytes(kind: &str, key: &str, max: u64) -> Option<(Vec<u8>, PathBuf)> {
    use std::os::unix::fs::MetadataExt;
    let (dir, file) = place(kind, key)?;
    if !owned_dir(&crate::registry::dir()) || !owned_dir(&dir) {
        return None;
    }
    let (bytes, meta) = fsutil::read_regular(&file, max)?;
    if meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o077 != 0 {
        return None;
    }
    Some((bytes, file))
}

/// Keeps `bytes` under `kind` for `key`, replacing what was kept (best effort).
pub(crate) fn store_bytes(kind: &str, key: &str, bytes: &[u8], max_records: usize) {
    if let Err(e) = try_store(kind, key, bytes, max_records) {
        tracing::debug!("{kind}: nothing was kept: {e}");
    }
}

fn try_store(kind: &str, key: &str, bytes: &[u8], max_records: usize) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let other = |what: &str| std::io::Error::other(what.to_owned());
    let (dir, file) = place(kind, key).ok_or_else(|| other("no boot id"))?;
    crate::registry::ensure_dir().map_err(|e| other(&e.to_string()))?;
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if !owned_dir(&dir) {
        return Err(other("not an owner-only directory of this user"));
    }
    prune(&dir, &file, max_records);
    fsutil::replace_file(&dir, &file, bytes)
}

/// Removes the records of other boots, and the oldest beyond `max` - 1.
fn prune(dir: &Path, keep: &Path, max: usize) {
    let Some(boot) = boot_prefix() else { return };
    let mut ours = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path == keep {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(&format!("{boot}-")) {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let age = entry.metadata().and_then(|m| m.modified()).ok();
        ours.push((age, path));
    }
    if ours.len() >= max {
        ours.sort();
        for (_, path) in ours.iter().take(ours.len() + 1 - max) {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn records_of_other_boots_and_the_oldest_beyond_the_bound_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let boot = boot_prefix().unwrap();
        std::fs::write(dir.path().join("000000000000-old-boot"), "x").unwrap();
        let keep = dir.path().join(format!("{boot}-keep"));
        std::fs::write(&keep, "x").unwrap();
        for i in 0..MAX_RECORDS + 5 {
            std::fs::write(dir.path().join(format!("{boot}-{i:03}")), "x").unwrap();
        }
        prune(dir.path(), &keep, MAX_RECORDS);
        let left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert!(!left.iter().any(|n| n.starts_with("000000000000-")), "another boot's record stayed");
        assert!(left.contains(&format!("{boot}-keep")), "the record being written was pruned");
        // The one being written, and at most MAX_RECORDS - 1 others.
        assert_eq!(left.len(), MAX_RECORDS, "{left:?}");
    }
}
