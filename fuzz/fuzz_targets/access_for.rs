//! `Profile::access_for(kind, scope)` on a fixed profile with nested roots; the input is
//! `kind` and `scope` separated by the first newline.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sandbox_bundle::{Access, ErrorKind, Profile, ProfileConfig, RootAccess};
use sandbox_fuzz::assert_named;

/// `<tmp>/sandbox-fuzz-access/{ws, ws/gated, ws/gated/deny, other}`: a workspace holding a
/// Gated root holding a Deny root, and a write-Gated root beside it.
fn profile() -> &'static Profile {
    static PROFILE: OnceLock<Profile> = OnceLock::new();
    PROFILE.get_or_init(|| {
        let base = std::env::temp_dir().join("sandbox-fuzz-access");
        let dir = |rel: &str| -> PathBuf {
            let p = base.join(rel);
            std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("fuzz setup: {}: {e}", p.display()));
            p
        };
        let root = |rel: &str, read, write| RootAccess { path: dir(rel), read, write };
        let config = ProfileConfig {
            workspace_root: dir("ws"),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            host_read: Access::Allow,
            host_write: Access::Deny,
            network: Access::Gated,
            command: Access::Allow,
            additional_roots: vec![
                root("ws/gated", Access::Gated, Access::Gated),
                root("ws/gated/deny", Access::Deny, Access::Deny),
                root("other", Access::Deny, Access::Gated),
            ],
            ..ProfileConfig::default()
        };
        Profile::new(config).unwrap_or_else(|e| panic!("fuzz setup: {e}"))
    })
}

fuzz_target!(|text: &str| {
    let (kind, scope) = text.split_once('\n').unwrap_or((text, ""));
    let profile = profile();
    let value = match profile.access_for(kind, scope) {
        Ok(v) => v,
        Err(e) => return assert_named(&e, ErrorKind::InvalidProfile),
    };
    // A tree is never more open than its top (§5: the minimum over the tree).
    if let Some(path) = scope.strip_prefix("tree:") {
        let top = profile.access_for(kind, path);
        assert!(top.as_ref().is_ok_and(|top| value <= *top), "{kind} {scope}: {value:?} vs {top:?}");
    } else if scope.starts_with('/') {
        let tree = profile.access_for(kind, &format!("tree:{scope}"));
        assert!(tree.as_ref().is_ok_and(|tree| *tree <= value), "{kind} {scope}: {value:?} vs {tree:?}");
    }
});
