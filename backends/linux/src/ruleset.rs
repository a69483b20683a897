//! Applies the bundle's Landlock rules (the `sandbox.landlock` annotation, CONTRACT.md §15.5)
//! inside the container, after pivot_root, and measures what the kernel enforced.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use serde::Deserialize;

use crate::protocol::LandlockStatus;

/// The annotation's shape (written by `sandbox_bundle::compile`).
#[derive(Debug, Default, Deserialize)]
pub struct Rules {
    /// Path rules.
    pub fs: Vec<PathRule>,
    /// TCP connect ports (handled only when non-empty).
    #[serde(default)]
    pub tcp_connect: Vec<u16>,
    /// Scope abstract unix sockets.
    #[serde(default)]
    pub scope_abstract_unix: bool,
}

/// One path rule.
#[derive(Debug, Deserialize)]
pub struct PathRule {
    /// Path inside the container.
    pub path: PathBuf,
    /// Right names.
    pub access: Vec<String>,
}

fn right(name: &str) -> Option<AccessFs> {
    Some(match name {
        "execute" => AccessFs::Execute,
        "write_file" => AccessFs::WriteFile,
        "read_file" => AccessFs::ReadFile,
        "read_dir" => AccessFs::ReadDir,
        "remove_dir" => AccessFs::RemoveDir,
        "remove_file" => AccessFs::RemoveFile,
        "make_char" => AccessFs::MakeChar,
        "make_dir" => AccessFs::MakeDir,
        "make_reg" => AccessFs::MakeReg,
        "make_sock" => AccessFs::MakeSock,
        "make_fifo" => AccessFs::MakeFifo,
        "make_block" => AccessFs::MakeBlock,
        "make_sym" => AccessFs::MakeSym,
        "refer" => AccessFs::Refer,
        "truncate" => AccessFs::Truncate,
        "ioctl_dev" => AccessFs::IoctlDev,
        _ => return None,
    })
}

/// The ABI the ruleset is built for: the kernel's, capped at the newest this build knows.
pub fn abi_for(kernel_abi: u32) -> ABI {
    ABI::from(i32::try_from(kernel_abi.min(7)).unwrap_or(0))
}

/// Opens a rule path without following a symlink in any component: the path must be
/// canonical (its resolution equals itself) and not a symlink itself. Missing paths and
/// symlinks are skipped (Landlock only narrows).
fn open_rule_path(path: &Path, file_rights_only: &mut bool) -> Option<PathFd> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() || std::fs::canonicalize(path).ok()? != path {
        return None;
    }
    *file_rights_only = !meta.is_dir();
    if meta.is_file() && meta.nlink() != 1 {
        return None; // a file rule needs a regular file with exactly one link
    }
    let fd = PathFd::new(path).ok()?;
    // Checked again after opening: the object must not have gained a link meanwhile.
    let again = std::fs::symlink_metadata(path).ok()?;
    if again.ino() != meta.ino() || again.dev() != meta.dev() || (again.is_file() && again.nlink() != 1) {
        return None;
    }
    Some(fd)
}

/// A ruleset built (rule paths opened, rules added) but not yet in force: the init prepares it,
/// then restricts itself with it before it reports `ready`.
pub struct Prepared(Option<landlock::RulesetCreated>);

/// Why the Landlock ruleset could not be built or put in force (the init then fails closed).
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    /// A step of the landlock crate failed (`what` names it: "handle filesystem access",
    /// "rule for /path", "restrict self", …).
    #[error("{what}: {source}")]
    Step {
        /// The step.
        what: String,
        /// The landlock crate's error.
        #[source]
        source: landlock::RulesetError,
    },
    /// Port rules were asked of a kernel without Landlock's network rules.
    #[error("tcp port scoping needs landlock abi 4")]
    NoNetworkRules,
    /// A right name the bundle carries that this crate does not know.
    #[error("unknown right {0}")]
    UnknownRight(String),
}

fn step(what: impl Into<String>) -> impl FnOnce(landlock::RulesetError) -> LandlockError {
    let what = what.into();
    move |source| LandlockError::Step { what, source }
}

/// Builds the ruleset for `rules` (nothing to build when the kernel has no Landlock).
pub fn prepare(rules: &Rules, kernel_abi: u32) -> Result<Prepared, LandlockError> {
    let abi = abi_for(kernel_abi);
    if abi == ABI::Unsupported {
        return Ok(Prepared(None));
    }
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(step("handle filesystem access"))?;
    if !rules.tcp_connect.is_empty() {
        if kernel_abi < 4 {
            return Err(LandlockError::NoNetworkRules);
        }
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp).map_err(step("handle tcp connect"))?;
    }
    if rules.scope_abstract_unix && kernel_abi >= 6 {
        ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(step("scope abstract unix"))?;
    }
    let mut created = ruleset.create().map_err(step("create ruleset"))?;
    for rule in &rules.fs {
        let mut access: BitFlags<AccessFs> = BitFlags::empty();
        for name in &rule.access {
            access |= right(name).ok_or_else(|| LandlockError::UnknownRight(name.clone()))?;
        }
        let mut file_only = false;
        let Some(fd) = open_rule_path(&rule.path, &mut file_only) else { continue };
        access &= all;
        if file_only {
            access &= AccessFs::from_file(abi);
        }
        if access.is_empty() {
            continue;
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(step(format!("rule for {}", rule.path.display())))?;
    }
    for port in &rules.tcp_connect {
        created =
            created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp)).map_err(step(format!("tcp rule {port}")))?;
    }
    Ok(Prepared(Some(created)))
}

/// Puts a prepared ruleset in force for this process and everything it starts.
pub fn restrict(prepared: Prepared) -> Result<LandlockStatus, LandlockError> {
    let Some(created) = prepared.0 else { return Ok(LandlockStatus::None) };
    let status = created.restrict_self().map_err(step("restrict self"))?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => LandlockStatus::Full,
        RulesetStatus::PartiallyEnforced => LandlockStatus::Partial,
        RulesetStatus::NotEnforced => LandlockStatus::None,
    })
}
