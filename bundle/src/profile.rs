//! What the caller asks for ([`ProfileConfig`], with its JSON form in `json`) and the immutable,
//! canonical, fingerprinted [`Profile`] made from it (CONTRACT.md §3, §4, §5); the identities
//! of its paths are in `identity`, the read side (`access_for`) in [`crate::access`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::access::{Access, Home, Isolation, RootAccess};
use crate::error::Error;
use crate::path::is_clean_absolute;
use crate::protect::Protection;
use crate::report::Guarantees;
use crate::target::TargetPattern;

mod identity;
mod json;

use identity::identities;
pub use identity::{IdentityRole, PathIdentity};

/// The version of the access vocabulary `access_for` answers in. Consumers fail closed on any
/// other value; 0 is reserved for "no valid profile".
pub const ACCESS_VERSION: u16 = 1;

/// A validated, canonical profile: cheap to clone, immutable, equal by fingerprint.
///
/// Made only by [`Profile::new`] or [`restrict`], so every value is valid.
#[derive(Clone)]
pub struct Profile {
    inner: Arc<Inner>,
}

struct Inner {
    config: ProfileConfig,
    required: Guarantees,
    fingerprint: String,
    /// What each area and pinned ancestor resolved to when the profile was made (not part of
    /// the fingerprint: the same configuration gives the same fingerprint).
    identities: Vec<PathIdentity>,
}

/// Paths that are always private inside a sandbox (the compiler mounts its own there): an
/// additional root exactly there would be replaced silently, so it is refused (issue 12, 11).
pub const PRIVATE_PATHS: &[&str] = &["/tmp", "/dev", "/dev/pts", "/dev/shm", "/proc", "/sys", "/run"];

/// Where a workspace would be replaced by the sandbox's own `/dev`, `/dev/pts` or `/dev/shm`
/// (a workspace at `/proc` or under it is refused too): the compiler's mounts there win.
const WORKSPACE_REPLACED: &[&str] = &["/dev", "/dev/pts", "/dev/shm"];

/// What the caller asks for; [`crate::Profile::new`] validates and canonicalises it.
///
/// `Default` is the safest value on every axis (everything `Deny`, isolated HOME, sandboxed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileConfig {
    /// The workspace tree (absolute, existing directory).
    pub workspace_root: PathBuf,
    /// Read access to the workspace.
    pub workspace_read: Access,
    /// Write access to the workspace.
    pub workspace_write: Access,
    /// Read access to everything not covered by the workspace, a root or the executor's own dirs.
    pub host_read: Access,
    /// Write access to the same.
    pub host_write: Access,
    /// Outbound network.
    pub network: Access,
    /// Whether a command may start at all.
    pub command: Access,
    /// Which HOME the process gets.
    pub home: Home,
    /// Sandboxed or acknowledged-unconfined.
    pub isolation: Isolation,
    /// Extra trees with their own authority.
    pub additional_roots: Vec<RootAccess>,
    /// Required (and only allowed) with `Isolation::Unconfined`.
    pub ack_unconfined: bool,
    /// Whether the workload may make unix sockets (`socket(AF_UNIX)`) while the network is not
    /// `Allow`: `Deny` (default) or `Allow`, which makes path-named unix sockets in readable
    /// areas connectable (reported `unix-sockets/widened`). `Gated` is refused: no grant lifts it.
    /// With network `Allow` unix sockets are open whatever this says. `socketpair` works always.
    pub unix_sockets: Access,
    /// What stays read-only inside every writable area whether it exists or not (issue 14):
    /// `protect-v1` by default, extendable, and opted out of only explicitly.
    pub protected_paths: Protection,
    /// With network `Gated`: the targets reachable through the sandbox's egress proxy without a
    /// grant (issue 17); any other target needs a `network.proxy-target.v1` grant. Normalized,
    /// sorted and deduplicated by [`Profile::new`]; not empty with network `Deny` or `Allow`.
    pub network_targets: Vec<TargetPattern>,
}

/// Which filesystem axis a question is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// Reading.
    Read,
    /// Writing.
    Write,
}

/// The normalized configuration, required guarantees and fingerprint, for display and JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// Always 1.
    pub access_version: u16,
    /// The canonical workspace.
    pub workspace_root: PathBuf,
    /// Access values by name.
    pub workspace_read: String,
    #[allow(missing_docs)]
    pub workspace_write: String,
    #[allow(missing_docs)]
    pub host_read: String,
    #[allow(missing_docs)]
    pub host_write: String,
    #[allow(missing_docs)]
    pub network: String,
    #[allow(missing_docs)]
    pub command: String,
    #[allow(missing_docs)]
    pub home: String,
    #[allow(missing_docs)]
    pub isolation: String,
    /// Sorted, deduplicated roots.
    pub additional_roots: Vec<RootSettings>,
    #[allow(missing_docs)]
    pub ack_unconfined: bool,
    /// `deny` or `allow`.
    pub unix_sockets: String,
    /// `protect-v1`, or `none` when the default list is off.
    pub protect_version: String,
    /// The protected entries in force, sorted.
    pub protected_paths: Vec<String>,
    /// The allowed network targets (`tcp:<host-pattern>:<port>`), sorted.
    pub network_targets: Vec<String>,
    /// Names of the required guarantee bits.
    pub required_guarantees: Vec<&'static str>,
    /// The bit-mask form of the same.
    pub required_guarantee_bits: u64,
    /// 64 lowercase hex digits.
    pub fingerprint: String,
}

/// One root in [`Settings`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RootSettings {
    #[allow(missing_docs)]
    pub path: PathBuf,
    #[allow(missing_docs)]
    pub read: String,
    #[allow(missing_docs)]
    pub write: String,
}

impl Profile {
    /// Validates and canonicalises `config` (CONTRACT.md §4); fails with
    /// [`Error::InvalidProfile`] naming the field.
    pub fn new(config: ProfileConfig) -> Result<Profile, Error> {
        let workspace = canonical_dir("workspace_root", &config.workspace_root)?;
        if WORKSPACE_REPLACED.iter().any(|p| workspace == Path::new(p)) || workspace.starts_with("/proc") {
            return Err(Error::profile(format!(
                "workspace_root: {} is always private inside the sandbox (its own /dev or procfs), so a workspace \
                 there cannot be honoured",
                workspace.display()
            )));
        }
        // Rule 2 for every root before rule 3 for any (the order of checks is fixed, §4, §21).
        let mut paths: Vec<PathBuf> = Vec::with_capacity(config.additional_roots.len());
        for (i, root) in config.additional_roots.iter().enumerate() {
            let field = format!("additional_roots[{i}].path");
            let path = canonical_root(&field, &root.path, root.write)?;
            // A root protects a name: one configured through a symlink would protect whatever
            // the link points to at the time, and the link itself can be replaced.
            if lexically_clean(&root.path) != path {
                return Err(Error::profile(format!(
                    "{field}: {} goes through a symlink; the real path is {} (list that instead)",
                    root.path.display(),
                    path.display()
                )));
            }
            if let Some(reason) = private_reason(&path) {
                return Err(Error::profile(format!("{field}: {} {reason}", path.display())));
            }
            if path == workspace {
                return Err(Error::profile(format!("{field}: {} is the workspace root", root.path.display())));
            }
            paths.push(path);
        }
        let mut roots: Vec<RootAccess> = Vec::with_capacity(config.additional_roots.len());
        for (i, (root, path)) in config.additional_roots.iter().zip(paths).enumerate() {
            let field = format!("additional_roots[{i}].path");
            match roots.iter().find(|r| r.path == path) {
                Some(r) if (r.read, r.write) != (root.read, root.write) => {
                    return Err(Error::profile(format!(
                        "{field}: {} is listed twice with different access",
                        path.display()
                    )));
                }
                Some(_) => {}
                None => roots.push(RootAccess { path, read: root.read, write: root.write }),
            }
        }
        roots.sort_by(|a, b| a.path.as_os_str().as_encoded_bytes().cmp(b.path.as_os_str().as_encoded_bytes()));

        if config.unix_sockets == Access::Gated {
            return Err(Error::profile("unix_sockets: must be deny or allow (no grant lifts it)"));
        }
        match (config.isolation, config.ack_unconfined) {
            (Isolation::Sandboxed, true) => {
                return Err(Error::profile("ack_unconfined: only allowed with isolation unconfined"));
            }
            (Isolation::Unconfined, false) => {
                return Err(Error::profile("ack_unconfined: isolation unconfined must be acknowledged"));
            }
            _ => {}
        }
        if config.isolation == Isolation::Unconfined {
            let fields = [
                ("workspace_read", config.workspace_read),
                ("workspace_write", config.workspace_write),
                ("host_read", config.host_read),
                ("host_write", config.host_write),
                ("network", config.network),
            ];
            if let Some((name, _)) = fields.iter().find(|(_, a)| *a != Access::Allow) {
                return Err(Error::profile(format!("{name}: must be allow when isolation is unconfined")));
            }
            if let Some(i) =
                config.additional_roots.iter().position(|r| r.read != Access::Allow || r.write != Access::Allow)
            {
                return Err(Error::profile(format!(
                    "additional_roots[{i}]: read and write must be allow when isolation is unconfined"
                )));
            }
        }

        if !config.network_targets.is_empty() && config.network != Access::Gated {
            return Err(Error::profile(format!(
                "network_targets: only allowed with network gated (network is {}): with deny nothing leaves, with \
                 allow everything does",
                config.network
            )));
        }
        let mut network_targets = config.network_targets.clone();
        network_targets.sort();
        network_targets.dedup();

        let protected_paths = config.protected_paths.canonical()?;
        let config = ProfileConfig {
            workspace_root: workspace,
            additional_roots: roots,
            protected_paths,
            network_targets,
            ..config
        };
        let required = required_guarantees(&config);
        let fingerprint = fingerprint(&config, required);
        let identities = if config.isolation == Isolation::Sandboxed { identities(&config)? } else { Vec::new() };
        Ok(Profile { inner: Arc::new(Inner { config, required, fingerprint, identities }) })
    }

    /// What the workspace, every root and every pinned ancestor resolved to when the profile
    /// was made (none for an unconfined profile). Not part of the fingerprint.
    pub fn identities(&self) -> &[PathIdentity] {
        &self.inner.identities
    }

    /// The pinned ancestors (see [`IdentityRole::Pin`]), shallow first.
    pub fn pins(&self) -> impl Iterator<Item = &Path> {
        self.inner.identities.iter().filter(|i| i.role == IdentityRole::Pin).map(|i| i.path.as_path())
    }

    /// The canonical configuration (paths resolved, roots sorted and deduplicated).
    pub fn config(&self) -> &ProfileConfig {
        &self.inner.config
    }

    /// The canonical workspace root.
    pub fn workspace_root(&self) -> &Path {
        &self.inner.config.workspace_root
    }

    /// Always [`ACCESS_VERSION`] (1).
    pub fn access_version(&self) -> u16 {
        ACCESS_VERSION
    }

    /// 64 lowercase hex digits of SHA-256 over the profile's authority.
    pub fn fingerprint(&self) -> &str {
        &self.inner.fingerprint
    }

    /// The guarantee bits an executor for this profile must have.
    pub fn required_guarantees(&self) -> Guarantees {
        self.inner.required
    }

    /// The normalized config, required guarantees and fingerprint.
    pub fn settings(&self) -> Settings {
        let c = &self.inner.config;
        Settings {
            access_version: ACCESS_VERSION,
            workspace_root: c.workspace_root.clone(),
            workspace_read: c.workspace_read.to_string(),
            workspace_write: c.workspace_write.to_string(),
            host_read: c.host_read.to_string(),
            host_write: c.host_write.to_string(),
            network: c.network.to_string(),
            command: c.command.to_string(),
            home: c.home.to_string(),
            isolation: c.isolation.to_string(),
            additional_roots: c
                .additional_roots
                .iter()
                .map(|r| RootSettings { path: r.path.clone(), read: r.read.to_string(), write: r.write.to_string() })
                .collect(),
            ack_unconfined: c.ack_unconfined,
            unix_sockets: c.unix_sockets.to_string(),
            protect_version: c.protected_paths.version().to_owned(),
            protected_paths: c.protected_paths.entries(),
            network_targets: c.network_targets.iter().map(ToString::to_string).collect(),
            required_guarantees: self.inner.required.names(),
            required_guarantee_bits: self.inner.required.bits(),
            fingerprint: self.inner.fingerprint.clone(),
        }
    }

    pub(crate) fn host(&self, axis: Axis) -> Access {
        pick(axis, self.inner.config.host_read, self.inner.config.host_write)
    }

    /// Every area with its own authority: the workspace first, then the sorted roots.
    pub(crate) fn areas(&self) -> impl Iterator<Item = (&Path, Access, Access)> {
        let c = &self.inner.config;
        std::iter::once((c.workspace_root.as_path(), c.workspace_read, c.workspace_write))
            .chain(c.additional_roots.iter().map(|r| (r.path.as_path(), r.read, r.write)))
    }

    /// The `<p>` rule: the value of the longest area containing `p`, else the host value.
    pub fn path_value(&self, axis: Axis, p: &Path) -> Access {
        self.areas()
            .filter(|(r, _, _)| p.starts_with(r))
            .max_by_key(|(r, _, _)| r.components().count())
            .map(|(_, read, write)| pick(axis, read, write))
            .unwrap_or_else(|| self.host(axis))
    }

    /// The `tree:<p>` rule: the minimum of the `<p>` value and every area strictly inside `p`.
    pub fn tree_value(&self, axis: Axis, p: &Path) -> Access {
        self.areas()
            .filter(|(r, _, _)| r.starts_with(p) && *r != p)
            .map(|(_, read, write)| pick(axis, read, write))
            .fold(self.path_value(axis, p), Access::min)
    }
}

fn pick(axis: Axis, read: Access, write: Access) -> Access {
    match axis {
        Axis::Read => read,
        Axis::Write => write,
    }
}

impl PartialEq for Profile {
    fn eq(&self, other: &Self) -> bool {
        self.inner.fingerprint == other.inner.fingerprint
    }
}

impl Eq for Profile {}

impl std::hash::Hash for Profile {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.fingerprint.hash(state);
    }
}

impl fmt::Debug for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Profile")
            .field("config", &self.inner.config)
            .field("fingerprint", &self.inner.fingerprint)
            .finish()
    }
}

/// Intersects two profiles with byte-identical canonical workspaces (CONTRACT.md §5).
pub fn restrict(base: &Profile, ceiling: &Profile) -> Result<Profile, Error> {
    let (b, c) = (base.config(), ceiling.config());
    if b.workspace_root.as_os_str().as_encoded_bytes() != c.workspace_root.as_os_str().as_encoded_bytes() {
        return Err(Error::profile(format!(
            "workspace_root: {} and {} differ",
            b.workspace_root.display(),
            c.workspace_root.display()
        )));
    }
    let isolation = b.isolation.min(c.isolation);
    let mut config = ProfileConfig {
        workspace_root: b.workspace_root.clone(),
        workspace_read: b.workspace_read.min(c.workspace_read),
        workspace_write: b.workspace_write.min(c.workspace_write),
        host_read: b.host_read.min(c.host_read),
        host_write: b.host_write.min(c.host_write),
        network: b.network.min(c.network),
        command: b.command.min(c.command),
        home: b.home.min(c.home),
        isolation,
        additional_roots: Vec::new(),
        ack_unconfined: isolation == Isolation::Unconfined && b.ack_unconfined && c.ack_unconfined,
        unix_sockets: b.unix_sockets.min(c.unix_sockets),
        protected_paths: Protection::union(&b.protected_paths, &c.protected_paths),
        network_targets: Vec::new(),
    };
    if config.network == Access::Gated {
        config.network_targets = intersect_targets(&b.network_targets, &c.network_targets);
    }
    let mut paths: Vec<&Path> =
        b.additional_roots.iter().chain(c.additional_roots.iter()).map(|r| r.path.as_path()).collect();
    // Shallow first, so that each root is compared with the enclosing roots already kept.
    paths.sort_by_key(|p| (p.components().count(), p.as_os_str().as_encoded_bytes().to_vec()));
    paths.dedup();
    for p in paths {
        let read = base.path_value(Axis::Read, p).min(ceiling.path_value(Axis::Read, p));
        let write = base.path_value(Axis::Write, p).min(ceiling.path_value(Axis::Write, p));
        let enclosing =
            std::iter::once((config.workspace_root.as_path(), config.workspace_read, config.workspace_write))
                .chain(config.additional_roots.iter().map(|r| (r.path.as_path(), r.read, r.write)))
                .filter(|(r, _, _)| p.starts_with(r))
                .max_by_key(|(r, _, _)| r.components().count())
                .map(|(_, r, w)| (r, w))
                .unwrap_or((config.host_read, config.host_write));
        if enclosing != (read, write) {
            config.additional_roots.push(RootAccess { path: p.to_path_buf(), read, write });
        }
    }
    Profile::new(config)
}

/// The targets both lists allow: each pattern of one list that a pattern of the other covers.
fn intersect_targets(a: &[TargetPattern], b: &[TargetPattern]) -> Vec<TargetPattern> {
    let covered = |p: &TargetPattern, by: &[TargetPattern]| by.iter().any(|q| q.covers(p));
    let mut out: Vec<TargetPattern> =
        a.iter().filter(|p| covered(p, b)).chain(b.iter().filter(|p| covered(p, a))).cloned().collect();
    out.sort();
    out.dedup();
    out
}

/// `path` with `.` and empty components dropped and `..` applied lexically (absolute input; a
/// relative one is taken from `/`).
pub fn lexically_clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// Why a root at `path` cannot be honoured: the sandbox always has its own mount there (or,
/// under `/proc`, the container's own procfs, whose host counterpart is never bound).
fn private_reason(path: &Path) -> Option<&'static str> {
    if PRIVATE_PATHS.iter().any(|p| path == Path::new(p)) {
        return Some(
            "is always private inside the sandbox (its own tmpfs, /dev, procfs or nothing), so a root \
             there cannot be honoured; list a directory under it instead",
        );
    }
    if path.starts_with("/proc") {
        return Some("lies under /proc, which is the sandbox's own procfs: the host's cannot be bound there");
    }
    None
}

/// An additional root: an existing directory or file, canonical; or, for a root whose write is
/// `deny` (deny or read-only), a path that does not exist yet under an existing directory,
/// canonical as far as it exists (issue 14: the workload cannot create it).
fn canonical_root(field: &str, path: &Path, write: Access) -> Result<PathBuf, Error> {
    if path.as_os_str().is_empty() {
        return Err(Error::profile(format!("{field}: must not be empty")));
    }
    if !path.is_absolute() {
        return Err(Error::profile(format!("{field}: {} is not absolute", path.display())));
    }
    let shown = || path.display().to_string().replace('\0', "\\0");
    match std::fs::symlink_metadata(path) {
        Ok(_) => std::fs::canonicalize(path).map_err(|e| Error::profile(format!("{field}: {}: {e}", shown()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if write != Access::Deny {
                return Err(Error::profile(format!(
                    "{field}: {}: does not exist (only a root whose write is deny may name a path that does not \
                     exist yet)",
                    shown()
                )));
            }
            let clean = lexically_clean(path);
            // The deepest ancestor that is there at all (a dangling symlink counts: it fails to
            // resolve below, rather than being skipped and resolved later by the workload).
            let existing = clean.ancestors().find(|a| std::fs::symlink_metadata(a).is_ok()).unwrap_or(Path::new("/"));
            let base =
                std::fs::canonicalize(existing).map_err(|e| Error::profile(format!("{field}: {}: {e}", shown())))?;
            if !base.is_dir() {
                return Err(Error::profile(format!("{field}: {} is not a directory", existing.display())));
            }
            let rest = clean.strip_prefix(existing).unwrap_or(Path::new(""));
            Ok(base.join(rest))
        }
        Err(e) => Err(Error::profile(format!("{field}: {}: {e}", shown()))),
    }
}

fn canonical_dir(field: &str, path: &Path) -> Result<PathBuf, Error> {
    if path.as_os_str().is_empty() {
        return Err(Error::profile(format!("{field}: must not be empty")));
    }
    if !path.is_absolute() {
        return Err(Error::profile(format!("{field}: {} is not absolute", path.display())));
    }
    let canonical = std::fs::canonicalize(path)
        .map_err(|e| Error::profile(format!("{field}: {}: {e}", path.display().to_string().replace('\0', "\\0"))))?;
    if !canonical.is_dir() {
        return Err(Error::profile(format!("{field}: {} is not a directory", path.display())));
    }
    Ok(canonical)
}

/// Checks that `text` is a clean absolute path ([`is_clean_absolute`]) without NUL, naming
/// what is wrong.
pub(crate) fn clean_path(field: &str, text: &str) -> Result<PathBuf, Error> {
    if text.is_empty() {
        return Err(Error::profile(format!("{field}: path is empty")));
    }
    if !text.starts_with('/') {
        return Err(Error::profile(format!("{field}: {text:?} is not absolute")));
    }
    if !is_clean_absolute(Path::new(text)) {
        return Err(Error::profile(format!("{field}: {text:?} is not a clean path")));
    }
    if text.contains('\0') {
        return Err(Error::profile(format!("{field}: path contains NUL")));
    }
    Ok(PathBuf::from(text))
}

fn required_guarantees(c: &ProfileConfig) -> Guarantees {
    let mut g = Guarantees { env_scrub: true, ..Guarantees::default() };
    if c.isolation == Isolation::Sandboxed {
        let roots_read = c.additional_roots.iter().any(|r| r.read != Access::Allow);
        let roots_write = c.additional_roots.iter().any(|r| r.write != Access::Allow);
        g.read_boundary = c.workspace_read != Access::Allow || c.host_read != Access::Allow || roots_read;
        g.write_boundary = c.workspace_write != Access::Allow || c.host_write != Access::Allow || roots_write;
        g.network_boundary = c.network != Access::Allow;
    }
    g
}

fn fingerprint(c: &ProfileConfig, required: Guarantees) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    field(b"sandbox-profile-v1");
    field(c.workspace_root.as_os_str().as_encoded_bytes());
    for a in [c.workspace_read, c.workspace_write, c.host_read, c.host_write, c.network, c.command] {
        field(&[a as u8]);
    }
    field(&[c.home as u8]);
    field(&[c.isolation as u8]);
    field(&(c.additional_roots.len() as u64).to_be_bytes());
    for r in &c.additional_roots {
        field(r.path.as_os_str().as_encoded_bytes());
        field(&[r.read as u8, r.write as u8]);
    }
    field(&[u8::from(c.ack_unconfined)]);
    field(&required.bits().to_be_bytes());
    // Only a non-default value is hashed, so that profiles made before the key existed keep
    // their fingerprints.
    if c.unix_sockets != Access::Deny {
        field(b"unix_sockets");
        field(&[c.unix_sockets as u8]);
    }
    if c.protected_paths != Protection::default() {
        field(b"protected_paths");
        field(&c.protected_paths.fingerprint_bytes());
    }
    if !c.network_targets.is_empty() {
        field(b"network_targets");
        field(&(c.network_targets.len() as u64).to_be_bytes());
        for t in &c.network_targets {
            field(t.to_string().as_bytes());
        }
    }
    let digest = h.finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
