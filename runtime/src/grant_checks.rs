//! The grant checks of an executor: issue (CONTRACT.md §13.2), the backend's support of a
//! class (§13.6), and verification and consumption at spawn and prepare time (§13.4).

// The Linux backend uses every item here; other targets compile a subset.
#![cfg_attr(not(target_os = "linux"), allow(unused))]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sandbox_bundle::{Access, Error, GrantDeltas};

use crate::Deadline;
use crate::executor::Executor;
use crate::grants::{self, Class, GrantRequest, Payload, is_safe_text};
use crate::set::Backend;

/// The verified grants of one spawn, not yet consumed.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    command_start: bool,
    pub(crate) deltas: GrantDeltas,
    consume: Vec<([u8; 32], i64)>,
}

impl Executor {
    /// Issues a single-use grant for one Gated capability of one exact spawn (CONTRACT.md
    /// §13.2, checks in the contract's order). The token is valid on this executor only.
    pub fn issue_grant(&self, dl: &Deadline, r: &GrantRequest) -> Result<String, Error> {
        let issued = self.issue_grant_checked(dl, r);
        if issued.is_ok() {
            // Its key and any held target are this executor's: never let go as unused (red
            // team AO: a refused request discarded an executor with a live grant).
            self.mark_used();
        }
        issued
    }

    fn issue_grant_checked(&self, dl: &Deadline, r: &GrantRequest) -> Result<String, Error> {
        dl.check(&[])?;
        let malformed = |detail: &str| Err(Error::GrantMalformed { detail: detail.to_owned() });
        if !is_safe_text(&r.execution_id) {
            return malformed("execution_id: empty, padded with whitespace or containing NUL");
        }
        if !is_safe_text(&r.command) {
            return malformed("command: empty, padded with whitespace or containing NUL");
        }
        let cwd = std::fs::canonicalize(&r.cwd).ok().filter(|p| p.is_dir()).ok_or_else(|| Error::GrantMalformed {
            detail: format!("cwd: {} does not resolve to a directory", r.cwd.display()),
        })?;
        let Some(cwd_text) = cwd.to_str().map(str::to_owned) else { return malformed("cwd: not valid UTF-8") };
        let class = Class::parse(&r.class)
            .ok_or_else(|| Error::GrantUnsupported { detail: format!("class: unknown class {:?}", r.class) })?;
        let (scope, target) = grants::fit(class, &r.kind, &r.scope, &r.target, &r.command)?;
        self.backend_supports(class, &target, &cwd)?;
        grants::gated(&self.set.profile, &r.kind, &scope)?;
        self.check_open()?;
        let now = grants::now_ms();
        let ttl = i64::try_from(self.set.options.grant_ttl.as_millis()).unwrap_or(i64::MAX);
        if r.expiry_unix_ms <= now || r.expiry_unix_ms > now.saturating_add(ttl) {
            return Err(Error::GrantExpired);
        }
        if !self.guarantees.contains(class.bits()) {
            return Err(Error::GrantGuaranteeMismatch {
                detail: format!("{} needs {}", r.class, class.bits().names().join(", ")),
            });
        }
        let path_binding =
            if class.is_path() || class.is_tree() { Some(grants::bind_target(Path::new(&target))?) } else { None };
        let nonce = grants::nonce()?;
        #[cfg(target_os = "linux")]
        if path_binding.is_some() && self.set.backend.linux().is_some() {
            let handle = sandbox_linux::TargetHandle::open(Path::new(&target))
                .map_err(|e| Error::GrantTargetChanged { detail: format!("{target}: {e}") })?;
            let mut handles = self.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            handles.retain(|_, (expiry, _)| *expiry >= now);
            handles.insert(nonce.clone(), (r.expiry_unix_ms, handle));
        }
        let payload = Payload {
            execution_id: r.execution_id.clone(),
            command: r.command.clone(),
            working_directory: cwd_text,
            profile_fingerprint: self.set.profile.fingerprint().to_owned(),
            route_fingerprint: String::from(crate::route::NO_ROUTE),
            guarantee_bits: self.guarantee_bits(),
            class: r.class.clone(),
            target,
            path_binding,
            expiry_unix_ms: r.expiry_unix_ms,
            nonce,
        };
        self.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner).sign(&payload)
    }

    /// Zeroes the key, forgets the replay memory and releases held target handles.
    pub(crate) fn revoke_grants(&self) {
        self.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner).revoke();
        #[cfg(target_os = "linux")]
        self.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }

    /// Whether this executor's backend can enforce `class` on `target` (§13.2 step 7, §13.6).
    fn backend_supports(&self, class: Class, target: &str, cwd: &Path) -> Result<(), Error> {
        let unsupported = |detail: String| Err::<(), Error>(Error::GrantUnsupported { detail });
        match &self.set.backend {
            Backend::Direct => Ok(()),
            // Seatbelt supports every class; targets may be missing (CONTRACT.md §16).
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(_) => Ok(()),
            #[cfg(target_os = "linux")]
            Backend::Linux(linux) => {
                use std::os::unix::fs::MetadataExt;
                let meta = std::fs::symlink_metadata(target);
                if class.is_path() && !meta.as_ref().is_ok_and(|m| m.is_file() && m.nlink() == 1) {
                    return unsupported(format!("{target}: a path grant needs an existing regular file with one link"));
                }
                if class.is_tree() && !meta.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
                    return unsupported(format!("{target}: a tree grant needs an existing directory"));
                }
                if class == Class::NetworkBroad && !linux.broad_grants_enforceable() {
                    return unsupported(String::from("network.broad.v1 needs landlock abi 6 or newer in force"));
                }
                // The proxy is what enforces the target: without it there is no way out at all.
                if class == Class::ProxyTarget && !self.guarantees.target_network {
                    return unsupported(String::from(
                        "network.proxy-target.v1 needs the egress proxy (target-network), which this executor lacks",
                    ));
                }
                if class.is_path() || class.is_tree() || matches!(class, Class::HostRead | Class::HostWrite) {
                    // Compile the spawn with this one grant: the target must get what it grants
                    // (a write-only area under a readable mount, for one, is masked instead).
                    let mut deltas = GrantDeltas::default();
                    add_delta(&mut deltas, class, target);
                    let mut input = self.spawn_input(&[OsString::from("/bin/true")], cwd.to_path_buf())?;
                    input.grants = deltas;
                    if let Err(why) = linux.grant_enforced(&self.set.profile, &input, class.is_write(), target) {
                        return unsupported(why);
                    }
                }
                Ok(())
            }
        }
    }

    /// Verification of §13.4 steps 1-4 and 6 (consumption) for one spawn.
    pub(crate) fn verify_grants(
        &self,
        tokens: &[&str],
        execution_id: &str,
        command: &str,
        cwd: &Path,
    ) -> Result<Verified, Error> {
        let mut verified = Verified::default();
        let mut bindings = Vec::new();
        {
            let state = self.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let cwd_text = cwd.to_string_lossy();
            let mut seen: Vec<[u8; 32]> = Vec::new();
            for token in tokens {
                let (id, p) = state.open(token, &seen)?;
                seen.push(id);
                if grants::now_ms() > p.expiry_unix_ms {
                    return Err(Error::GrantExpired);
                }
                if p.execution_id != execution_id {
                    return Err(Error::GrantWrongExecution);
                }
                if p.command != command {
                    return Err(Error::GrantWrongCommand);
                }
                if p.working_directory != cwd_text {
                    return Err(Error::GrantWrongWorkingDirectory);
                }
                if p.profile_fingerprint != self.set.profile.fingerprint() {
                    return Err(Error::GrantProfileMismatch);
                }
                if p.route_fingerprint != crate::route::NO_ROUTE {
                    return Err(Error::GrantRouteMismatch);
                }
                if p.guarantee_bits != self.guarantee_bits() {
                    return Err(Error::GrantGuaranteeMismatch {
                        detail: String::from("the executor's guarantees differ from the token's"),
                    });
                }
                let class = Class::parse(&p.class)
                    .ok_or_else(|| Error::GrantUnsupported { detail: format!("class: unknown class {:?}", p.class) })?;
                let scope = match class {
                    Class::PathRead | Class::PathWrite => p.target.clone(),
                    Class::TreeRead | Class::TreeWrite => format!("tree:{}", p.target),
                    Class::HostRead | Class::HostWrite => String::from("host:*"),
                    _ => String::new(),
                };
                grants::fit(class, class_kind(class), &scope, &p.target, &p.command).map_err(|e| match e {
                    // The token's text was checked at issue (and is MAC-verified): a bound
                    // target that no longer canonicalizes changed on disk (issue 12, 3b).
                    Error::GrantMalformed { detail } if p.path_binding.is_some() => {
                        Error::GrantTargetChanged { detail }
                    }
                    other => other,
                })?;
                if p.path_binding.is_none() {
                    self.backend_supports(class, &p.target, cwd)?;
                }
                // A bound target's kind was checked at issue; what it is now is the identity
                // check's business (step 3): a swapped target is GrantTargetChanged, not a
                // different class of error.
                if !self.guarantees.contains(class.bits()) {
                    return Err(Error::GrantGuaranteeMismatch { detail: format!("{} needs more bits", p.class) });
                }
                if class == Class::CommandStart {
                    verified.command_start = true;
                } else {
                    add_delta(&mut verified.deltas, class, &p.target);
                }
                if let Some(b) = &p.path_binding {
                    bindings.push((b.clone(), p.nonce.clone()));
                }
                verified.consume.push((id, p.expiry_unix_ms));
            }
        }
        if self.set.profile.config().command == Access::Gated && !verified.command_start {
            return Err(Error::GrantRequired);
        }
        for (binding, nonce) in &bindings {
            let now = grants::bind_target(Path::new(&binding.canonical_path))?;
            if now != *binding {
                return Err(Error::GrantTargetChanged {
                    detail: format!("{} is not the object it was at issue", binding.canonical_path),
                });
            }
            #[cfg(target_os = "linux")]
            if self.set.backend.linux().is_some() {
                self.same_as_held(nonce, &binding.canonical_path)?;
            }
            // The init checks the mounted target against this identity (issue 12, 3b): a swap
            // between this check and the runtime's bind fails the spawn.
            if binding.existing_path == binding.canonical_path {
                verified.deltas.identities.push((
                    PathBuf::from(&binding.canonical_path),
                    binding.identity.dev,
                    binding.identity.ino,
                ));
            }
            #[cfg(not(target_os = "linux"))]
            let _ = nonce;
        }
        // The replay check of step 1 ran in an earlier lock section, so a concurrent call may
        // have verified the same token meanwhile: check and consume again under one lock
        // (`try_consume`), so that exactly one of them spawns (issue 12, class 3a).
        self.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner).try_consume(&verified.consume)?;
        Ok(verified)
    }

    /// The target reopened without following symlinks must be the object held since issue.
    #[cfg(target_os = "linux")]
    fn same_as_held(&self, nonce: &str, path: &str) -> Result<(), Error> {
        let changed = |detail: String| Error::GrantTargetChanged { detail };
        let handles = self.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some((_, held)) = handles.get(nonce) else {
            return Err(changed(format!("{path}: no handle is held for this token")));
        };
        let again = sandbox_linux::TargetHandle::open(Path::new(path)).map_err(|e| changed(format!("{path}: {e}")))?;
        let (a, b) = (held.identity(), again.identity());
        match (a, b) {
            (Ok(a), Ok(b)) if a == b => Ok(()),
            _ => Err(changed(format!("{path} was replaced"))),
        }
    }
}

fn class_kind(class: Class) -> &'static str {
    match class {
        Class::CommandStart => "command.execute",
        Class::PathRead | Class::TreeRead | Class::HostRead => "filesystem.read",
        Class::PathWrite | Class::TreeWrite | Class::HostWrite => "filesystem.write",
        Class::NetworkBroad | Class::ProxyTarget => "network",
    }
}

fn add_delta(d: &mut GrantDeltas, class: Class, target: &str) {
    let p = PathBuf::from(target);
    match class {
        Class::PathRead => d.read_paths.push(p),
        Class::PathWrite => d.write_paths.push(p),
        Class::TreeRead => d.read_trees.push(p),
        Class::TreeWrite => d.write_trees.push(p),
        Class::HostRead => d.host_read = true,
        Class::HostWrite => d.host_write = true,
        Class::NetworkBroad => d.broad_port = grants::broad_port(target),
        Class::ProxyTarget => {
            if let Ok(target) = sandbox_bundle::TargetPattern::parse(target) {
                d.proxy_targets.push(target);
            }
        }
        Class::CommandStart => {}
    }
}

/// Why a shell command that reads as an argv's command text cannot carry grants.
pub(crate) const ARGV_TEXT_AS_COMMAND: &str = "command: a shell command whose text is a JSON array of strings \
     (what an argv's command text is, §12) cannot carry grants: its grant would not say whether the argv or \
     the shell command was approved; run it as an argv";

/// Whether `text` is a JSON array of strings, the form of an argv's command text (§12). The
/// command text binds no mode, so a grant approved for the argv `["echo","$(id)"]` would
/// otherwise also open the shell command of the same text, where `$(id)` runs (the red team of
/// 4 December, night): a shell command of that form never carries grants, so a token whose text
/// has it is spent only on the argv it was approved for. (The other way round, a text approved
/// as a shell command in that form is refused here at its own spawn, and as an argv it runs
/// what the text reads as.)
pub(crate) fn is_argv_text(text: &str) -> bool {
    serde_json::from_str::<Vec<String>>(text).is_ok()
}

/// The command text grants bind (§12): the shell command, or the argv as a compact JSON array.
pub(crate) fn command_text(command: &str, argv: &[OsString]) -> Result<String, Error> {
    if !command.is_empty() {
        return Ok(command.to_owned());
    }
    let items: Vec<&str> = argv
        .iter()
        .map(|a| a.to_str().ok_or_else(|| Error::GrantMalformed { detail: String::from("argv: not UTF-8") }))
        .collect::<Result<_, _>>()?;
    serde_json::to_string(&items).map_err(|e| Error::GrantMalformed { detail: format!("argv: {e}") })
}
