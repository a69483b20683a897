//! Post-decision grants (CONTRACT.md §13): single-use, short-lived tokens that lift one Gated
//! capability for one exact spawn, MAC'd with a per-executor key that never leaves the process.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::route::NetworkTarget;
use crate::{Access, Error, Guarantees, Profile};

/// What the application asks a grant for (CONTRACT.md §13.2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrantRequest {
    /// The execution the grant is bound to.
    pub execution_id: String,
    /// The exact command text (§12) of the spawn.
    pub command: String,
    /// The spawn's working directory.
    pub cwd: PathBuf,
    /// `command.execute`, `filesystem.read`, `filesystem.write` or `network`.
    pub kind: String,
    /// The `access_for` scope.
    pub scope: String,
    /// The class (`command.start.v1`, `filesystem.path.read.v1`, …).
    pub class: String,
    /// The class's target.
    pub target: String,
    /// Expiry, milliseconds since the Unix epoch.
    pub expiry_unix_ms: i64,
}

/// The grant classes (wire strings are ABI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Class {
    CommandStart,
    PathRead,
    PathWrite,
    TreeRead,
    TreeWrite,
    HostRead,
    HostWrite,
    NetworkBroad,
    ProxyTarget,
}

impl Class {
    pub(crate) fn parse(s: &str) -> Option<Class> {
        Some(match s {
            "command.start.v1" => Class::CommandStart,
            "filesystem.path.read.v1" => Class::PathRead,
            "filesystem.path.write.v1" => Class::PathWrite,
            "filesystem.tree.read.v1" => Class::TreeRead,
            "filesystem.tree.write.v1" => Class::TreeWrite,
            "filesystem.host.read.v1" => Class::HostRead,
            "filesystem.host.write.v1" => Class::HostWrite,
            "network.broad.v1" => Class::NetworkBroad,
            "network.proxy-target.v1" => Class::ProxyTarget,
            _ => return None,
        })
    }

    fn kind(self) -> &'static str {
        match self {
            Class::CommandStart => "command.execute",
            Class::PathRead | Class::TreeRead | Class::HostRead => "filesystem.read",
            Class::PathWrite | Class::TreeWrite | Class::HostWrite => "filesystem.write",
            Class::NetworkBroad | Class::ProxyTarget => "network",
        }
    }

    /// The guarantee bits the class needs.
    pub(crate) fn bits(self) -> Guarantees {
        let mut g = Guarantees::default();
        match self {
            Class::CommandStart => {}
            Class::PathRead | Class::TreeRead | Class::HostRead => g.read_boundary = true,
            Class::PathWrite | Class::TreeWrite | Class::HostWrite => g.write_boundary = true,
            Class::NetworkBroad => g.network_boundary = true,
            Class::ProxyTarget => {
                g.network_boundary = true;
                g.target_network = true;
            }
        }
        g
    }

    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn is_write(self) -> bool {
        matches!(self, Class::PathWrite | Class::TreeWrite | Class::HostWrite)
    }

    pub(crate) fn is_path(self) -> bool {
        matches!(self, Class::PathRead | Class::PathWrite)
    }

    pub(crate) fn is_tree(self) -> bool {
        matches!(self, Class::TreeRead | Class::TreeWrite)
    }
}

/// The identity of the deepest existing component of a target (§13.5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub file_type: String,
}

/// Where a filesystem grant points and what was there at issue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PathBinding {
    pub canonical_path: String,
    pub existing_path: String,
    pub identity: Identity,
}

/// The token payload (§13.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Payload {
    pub execution_id: String,
    pub command: String,
    pub working_directory: String,
    pub profile_fingerprint: String,
    pub route_fingerprint: String,
    pub guarantee_bits: u64,
    pub class: String,
    pub target: String,
    pub path_binding: Option<PathBinding>,
    pub expiry_unix_ms: i64,
    pub nonce: String,
}

/// The per-executor key and replay memory.
pub(crate) struct GrantState {
    key: [u8; 32],
    /// Token id (SHA-256 of the text) → its expiry; pruned once the expiry has passed.
    consumed: HashMap<[u8; 32], i64>,
}

impl std::fmt::Debug for GrantState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantState").field("consumed", &self.consumed.len()).finish_non_exhaustive()
    }
}

impl Drop for GrantState {
    fn drop(&mut self) {
        self.key = [0; 32];
    }
}

impl GrantState {
    pub(crate) fn new() -> Result<GrantState, Error> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)
            .map_err(|e| Error::io("reading random bytes", std::io::Error::other(e.to_string())))?;
        Ok(GrantState { key, consumed: HashMap::new() })
    }

    /// Zeroes the key and forgets the replay memory (set close): no token verifies afterwards.
    pub(crate) fn revoke(&mut self) {
        self.key = [0; 32];
        self.consumed.clear();
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC accepts a key of any length; a 32-byte key cannot fail.
        <Hmac<Sha256> as Mac>::new_from_slice(&self.key).unwrap_or_else(|_| unreachable!("hmac takes any key length"))
    }

    pub(crate) fn sign(&self, payload: &Payload) -> Result<String, Error> {
        let json =
            serde_json::to_vec(payload).map_err(|e| Error::GrantMalformed { detail: format!("payload: {e}") })?;
        let body = URL_SAFE_NO_PAD.encode(&json);
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        Ok(format!("sbx1.{body}.{tag}"))
    }

    /// Replay, structure, MAC and JSON (the first checks of §13.4 step 1).
    pub(crate) fn open(&self, token: &str, seen: &[[u8; 32]]) -> Result<([u8; 32], Payload), Error> {
        let id: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if self.consumed.contains_key(&id) || seen.contains(&id) {
            return Err(Error::GrantReplay);
        }
        let malformed = |detail: &str| Error::GrantMalformed { detail: detail.to_owned() };
        let mut parts = token.split('.');
        let (Some(prefix), Some(body), Some(tag), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed("a token has three parts separated by dots"));
        };
        if prefix != "sbx1" {
            return Err(malformed("the token does not start with sbx1"));
        }
        let json = URL_SAFE_NO_PAD.decode(body).map_err(|_| malformed("the payload is not unpadded base64url"))?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| malformed("the mac is not unpadded base64url"))?;
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).map_err(|_| Error::GrantBadMac)?;
        let payload: Payload = serde_json::from_slice(&json).map_err(|e| malformed(&format!("payload: {e}")))?;
        Ok((id, payload))
    }

    /// Consumes tokens atomically (§13.4 step 6): under the one lock that guards this state,
    /// every id is checked unconsumed and only then are all marked consumed until their expiry.
    /// If any was consumed meanwhile (the same token presented by a concurrent call that verified
    /// it too), nothing is marked and the answer is `GrantReplay`: of any number of concurrent
    /// presentations of one token exactly one gets here first and wins. Expired entries are
    /// pruned (a reuse at the expiry instant is still a replay: `expiry >= now` is kept).
    pub(crate) fn try_consume(&mut self, ids: &[([u8; 32], i64)]) -> Result<(), Error> {
        if ids.iter().any(|(id, _)| self.consumed.contains_key(id)) {
            return Err(Error::GrantReplay);
        }
        let now = now_ms();
        self.consumed.retain(|_, expiry| *expiry >= now);
        for (id, expiry) in ids {
            self.consumed.insert(*id, *expiry);
        }
        Ok(())
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// 16 random bytes, base64url.
pub(crate) fn nonce() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::io("reading random bytes", std::io::Error::other(e.to_string())))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// Safe text: non-empty, no leading or trailing whitespace, no NUL.
pub(crate) fn is_safe_text(s: &str) -> bool {
    !s.is_empty() && s.trim() == s && !s.contains('\0')
}

/// Canonicalizes a clean absolute path, resolving symlinks in its existing part and keeping a
/// missing trailing part lexically (§13.2 step 4).
pub(crate) fn canonical_target(text: &str) -> Result<PathBuf, Error> {
    if !sandbox_bundle::path::is_clean_absolute(Path::new(text)) {
        return Err(Error::GrantMalformed { detail: format!("target: {text:?} is not a clean absolute path") });
    }
    let path = Path::new(text);
    let mut existing = path.to_path_buf();
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        let Some(name) = existing.file_name().map(ToOwned::to_owned) else { break };
        missing.push(name);
        existing.pop();
    }
    let mut canonical = std::fs::canonicalize(&existing)
        .map_err(|e| Error::GrantMalformed { detail: format!("target: {}: {e}", existing.display()) })?;
    for name in missing.iter().rev() {
        canonical.push(name);
    }
    if canonical.to_str().is_none() {
        return Err(Error::GrantMalformed { detail: String::from("target: not valid UTF-8") });
    }
    Ok(canonical)
}

fn file_type(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        "dir"
    } else if ft.is_file() {
        "file"
    } else if ft.is_symlink() {
        "symlink"
    } else {
        "other"
    }
}

/// Walks `canonical` from `/` with `lstat`, never following a symlink (a symlink component is
/// `GrantTargetChanged`), and records the deepest existing component (§13.5).
pub(crate) fn bind_target(canonical: &Path) -> Result<PathBinding, Error> {
    let changed = |detail: String| Error::GrantTargetChanged { detail };
    let mut at = PathBuf::from("/");
    let mut meta = std::fs::symlink_metadata(&at).map_err(|e| changed(format!("/: {e}")))?;
    for c in canonical.components() {
        let Component::Normal(name) = c else { continue };
        let next = at.join(name);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => return Err(changed(format!("{} is a symlink", next.display()))),
            Ok(m) => {
                at = next;
                meta = m;
            }
            Err(_) => break,
        }
    }
    use std::os::unix::fs::MetadataExt;
    Ok(PathBinding {
        canonical_path: canonical.to_string_lossy().into_owned(),
        existing_path: at.to_string_lossy().into_owned(),
        identity: Identity { dev: meta.dev(), ino: meta.ino(), file_type: file_type(&meta).to_owned() },
    })
}

/// The row check of §13.2 step 5 for an already parsed class: kind, scope and target fit, and
/// the canonical scope (for `access_for`) and target.
pub(crate) fn fit(
    class: Class,
    kind: &str,
    scope: &str,
    target: &str,
    command: &str,
) -> Result<(String, String), Error> {
    let malformed = |detail: String| Err(Error::GrantMalformed { detail });
    if kind != class.kind() {
        return malformed(format!("kind: {kind:?} does not fit the class (expected {:?})", class.kind()));
    }
    match class {
        Class::CommandStart => {
            if !scope.is_empty() {
                return malformed(String::from("scope: command.start.v1 takes an empty scope"));
            }
            if target != command {
                return Err(Error::GrantWrongCommand);
            }
            Ok((String::new(), target.to_owned()))
        }
        Class::PathRead | Class::PathWrite => {
            let t = canonical_target(target)?;
            let s = canonical_target(scope)?;
            if s != t {
                return malformed(format!("scope: {scope:?} is not the target {target:?}"));
            }
            let t = t.to_string_lossy().into_owned();
            Ok((t.clone(), t))
        }
        Class::TreeRead | Class::TreeWrite => {
            let Some(rest) = scope.strip_prefix("tree:") else {
                return malformed(format!("scope: {scope:?} is not tree:<path>"));
            };
            let t = canonical_target(target)?;
            if canonical_target(rest)? != t {
                return malformed(format!("scope: {scope:?} is not tree: and the target {target:?}"));
            }
            let t = t.to_string_lossy().into_owned();
            Ok((format!("tree:{t}"), t))
        }
        Class::HostRead | Class::HostWrite => {
            if scope != "host:*" || target != "host:*" {
                return malformed(String::from("scope and target: host classes take host:*"));
            }
            Ok((scope.to_owned(), target.to_owned()))
        }
        Class::NetworkBroad => {
            if !scope.is_empty() {
                return malformed(String::from("scope: network classes take an empty scope"));
            }
            broad_port(target).ok_or_else(|| Error::GrantMalformed {
                detail: format!("target: {target:?} is not tcp:*:<1-65535>"),
            })?;
            Ok((String::new(), target.to_owned()))
        }
        Class::ProxyTarget => {
            if !scope.is_empty() {
                return malformed(String::from("scope: network classes take an empty scope"));
            }
            // One exact target (no wildcard), normalized, as the proxy matches it.
            let exact = sandbox_bundle::TargetPattern::parse(target)
                .is_ok_and(|p| p.to_string() == target && matches!(p.host(), sandbox_bundle::HostPattern::Exact(_)));
            match NetworkTarget::parse(target) {
                Ok(t) if t.to_string() == target && exact => Ok((String::new(), target.to_owned())),
                _ => malformed(format!("target: {target:?} is not a normalized tcp:<host>:<port>")),
            }
        }
    }
}

/// The port of a `tcp:*:<1-65535>` target.
pub(crate) fn broad_port(target: &str) -> Option<u16> {
    let port = target.strip_prefix("tcp:*:")?;
    if port.is_empty() || port.starts_with('0') || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    port.parse::<u16>().ok().filter(|p| *p >= 1)
}

/// `access_for` on the canonical scope: only Gated continues (§13.2 step 8).
pub(crate) fn gated(profile: &Profile, kind: &str, scope: &str) -> Result<(), Error> {
    match profile.access_for(kind, scope) {
        Ok(Access::Gated) => Ok(()),
        Ok(Access::Deny) => Err(Error::GrantDenied { detail: format!("{kind} {scope} is deny") }),
        Ok(Access::Allow) => Err(Error::GrantUnsupported { detail: format!("{kind} {scope} is already allow") }),
        Err(e) => Err(Error::GrantMalformed { detail: e.to_string() }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn payload() -> Payload {
        Payload {
            execution_id: String::from("e"),
            command: String::from("true"),
            working_directory: String::from("/"),
            profile_fingerprint: String::from("f"),
            route_fingerprint: String::from(crate::route::NO_ROUTE),
            guarantee_bits: 8,
            class: String::from("command.start.v1"),
            target: String::from("true"),
            path_binding: None,
            expiry_unix_ms: 1,
            nonce: String::from("n"),
        }
    }

    /// Arbitrary token strings never panic the parser; only a signed one opens.
    #[test]
    fn arbitrary_tokens_are_rejected_without_a_panic() {
        let state = GrantState::new().unwrap();
        let good = state.sign(&payload()).unwrap();
        assert_eq!(state.open(&good, &[]).unwrap().1, payload());
        let other = GrantState::new().unwrap();
        assert!(matches!(other.open(&good, &[]), Err(Error::GrantBadMac)));
        let alphabet: Vec<char> = "sbx1.-_=+/AZaz09 \u{0}\u{e9}{}\"".chars().collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..5000 {
            let len = usize::try_from(next() % 120).unwrap();
            let text: String = (0..len).map(|_| alphabet[usize::try_from(next()).unwrap() % alphabet.len()]).collect();
            assert!(state.open(&text, &[]).is_err(), "{text:?}");
        }
        // Mutations of a valid token, and a valid-looking body with a wrong mac.
        for i in 0..good.len() {
            let mut t = good.clone().into_bytes();
            t[i] = if t[i] == b'x' { b'y' } else { b'x' };
            if let Ok(t) = String::from_utf8(t) {
                assert!(state.open(&t, &[]).is_err());
            }
        }
        let (id, _) = state.open(&good, &[]).unwrap();
        assert!(matches!(state.open(&good, &[id]), Err(Error::GrantReplay)));
    }

    /// Single use is atomic (issue 12, class 3a): 8 and 32 threads open the same token (each
    /// passes the early replay check, as concurrent verifications do) and then consume it;
    /// exactly one consumption wins each round, the others get `GrantReplay`. Control: distinct
    /// tokens consumed concurrently all win, and a token consumed with a fresh one in one call
    /// fails the whole call and marks neither.
    #[test]
    fn concurrent_presentations_of_one_token_consume_it_once() {
        use std::sync::{Arc, Barrier, Mutex};
        let state = Arc::new(Mutex::new(GrantState::new().unwrap()));
        let later = now_ms() + 60_000;
        for threads in [8usize, 32] {
            for round in 0..50 {
                let mut p = payload();
                p.nonce = format!("n-{threads}-{round}");
                p.expiry_unix_ms = later;
                let token = state.lock().unwrap().sign(&p).unwrap();
                let barrier = Arc::new(Barrier::new(threads));
                let handles: Vec<_> = (0..threads)
                    .map(|_| {
                        let (state, barrier, token) = (Arc::clone(&state), Arc::clone(&barrier), token.clone());
                        std::thread::spawn(move || {
                            let (id, p) = state.lock().unwrap().open(&token, &[]).unwrap();
                            barrier.wait();
                            state.lock().unwrap().try_consume(&[(id, p.expiry_unix_ms)])
                        })
                    })
                    .collect();
                let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
                assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{threads} threads, round {round}");
                assert!(results.iter().all(|r| matches!(r, Ok(()) | Err(Error::GrantReplay))));
            }
        }
        // Control: distinct tokens all consume.
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (state, barrier) = (Arc::clone(&state), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let mut p = payload();
                    p.nonce = format!("distinct-{i}");
                    p.expiry_unix_ms = later;
                    let token = state.lock().unwrap().sign(&p).unwrap();
                    let (id, p) = state.lock().unwrap().open(&token, &[]).unwrap();
                    barrier.wait();
                    state.lock().unwrap().try_consume(&[(id, p.expiry_unix_ms)])
                })
            })
            .collect();
        assert!(handles.into_iter().all(|h| h.join().unwrap().is_ok()));
        // All or nothing: a spent token next to a fresh one marks neither.
        let mut st = state.lock().unwrap();
        let mut p = payload();
        p.expiry_unix_ms = later;
        p.nonce = String::from("spent");
        let (spent, _) = st.open(&st.sign(&p).unwrap(), &[]).unwrap();
        st.try_consume(&[(spent, later)]).unwrap();
        p.nonce = String::from("fresh");
        let fresh_token = st.sign(&p).unwrap();
        let (fresh, _) = st.open(&fresh_token, &[]).unwrap();
        assert!(matches!(st.try_consume(&[(fresh, later), (spent, later)]), Err(Error::GrantReplay)));
        assert!(st.open(&fresh_token, &[]).is_ok(), "the fresh token stays unused");
        st.try_consume(&[(fresh, later)]).unwrap();
    }

    proptest::proptest! {
        /// The token parser takes any string without a panic and opens none it did not sign.
        #[test]
        fn any_string_is_rejected_without_a_panic(text in ".{0,300}") {
            let state = GrantState::new().unwrap();
            proptest::prop_assert!(state.open(&text, &[]).is_err());
        }

        /// Tokens of the right shape with arbitrary parts fail as malformed or bad mac.
        #[test]
        fn shaped_tokens_fail_cleanly(body in "[A-Za-z0-9_-]{0,200}", tag in "[A-Za-z0-9_-]{0,60}") {
            let state = GrantState::new().unwrap();
            let got = state.open(&format!("sbx1.{body}.{tag}"), &[]);
            let clean = matches!(got, Err(Error::GrantMalformed { .. } | Error::GrantBadMac));
            proptest::prop_assert!(clean, "unexpected result");
        }

        /// Network targets parse or fail with InvalidArgument, never panic; normalized ones
        /// print back unchanged.
        #[test]
        fn network_targets_never_panic(text in "tcp:.{0,80}") {
            if let Ok(t) = NetworkTarget::parse(&text) {
                let again = NetworkTarget::parse(&t.to_string()).unwrap();
                proptest::prop_assert_eq!(again.to_string(), t.to_string());
            }
        }
    }

    #[test]
    fn broad_targets_and_canonical_targets() {
        assert_eq!(broad_port("tcp:*:443"), Some(443));
        for bad in ["tcp:*:0", "tcp:*:65536", "tcp:*:080", "tcp:*:", "tcp:host:1", "tcp:*:1a", "udp:*:1"] {
            assert_eq!(broad_port(bad), None, "{bad}");
        }
        assert!(canonical_target("relative").is_err());
        assert!(canonical_target("/a/./b").is_err());
        assert_eq!(canonical_target("/").unwrap(), PathBuf::from("/"));
        let missing = canonical_target("/nonexistent-sandbox-test/a/b").unwrap();
        assert_eq!(missing, PathBuf::from("/nonexistent-sandbox-test/a/b"), "a missing tail stays lexical");
    }
}
