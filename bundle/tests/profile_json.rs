//! CONTRACT.md §3 and §21 for the JSON profile format: `ProfileConfig::from_json`,
//! `ProfileConfig::from_value` and `serde::Deserialize for ProfileConfig`.
//!
//! Keys are snake_case; access values are ABI numbers or lowercase names; `home` is
//! `isolated`/`isolated-home`/`real`/`real-home`; `isolation` is `sandboxed`/`unconfined`;
//! missing keys take the safe defaults; unknown keys are rejected; every decoding failure is
//! `InvalidProfile` naming the key.
#![allow(clippy::unwrap_used, clippy::panic, clippy::tests_outside_test_module)]

use std::fmt::Debug;
use std::path::PathBuf;

use sandbox_bundle::*;
use serde_json::{Value, json};

use Access::{Allow, Deny, Gated};

const ACCESS_KEYS: [&str; 6] = ["workspace_read", "workspace_write", "host_read", "host_write", "network", "command"];

fn access_field(c: &ProfileConfig, key: &str) -> Access {
    match key {
        "workspace_read" => c.workspace_read,
        "workspace_write" => c.workspace_write,
        "host_read" => c.host_read,
        "host_write" => c.host_write,
        "network" => c.network,
        "command" => c.command,
        other => panic!("not an access key: {other}"),
    }
}

/// Decodes through all three entry points and checks they agree.
fn decode(v: &Value) -> Result<ProfileConfig, Error> {
    let text = v.to_string();
    let a = ProfileConfig::from_json(&text);
    let b = ProfileConfig::from_value(v);
    let c = serde_json::from_str::<ProfileConfig>(&text);
    let d = serde_json::from_value::<ProfileConfig>(v.clone());
    match (&a, &b) {
        (Ok(x), Ok(y)) => assert_eq!(x, y),
        (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
        _ => panic!("from_json and from_value disagree on {text}: {a:?} vs {b:?}"),
    }
    match (&a, &c, &d) {
        (Ok(x), Ok(y), Ok(z)) => {
            assert_eq!(x, y);
            assert_eq!(x, z);
        }
        (Err(x), Err(y), Err(z)) => {
            // serde reports the same message (wrapped in its own error type).
            assert!(y.to_string().contains(&x.to_string()), "{y} vs {x}");
            assert!(z.to_string().contains(&x.to_string()), "{z} vs {x}");
        }
        _ => panic!("from_json and serde disagree on {text}: {a:?} vs {c:?} vs {d:?}"),
    }
    a
}

fn ok(v: Value) -> ProfileConfig {
    match decode(&v) {
        Ok(c) => c,
        Err(e) => panic!("decoding {v} failed: {e}"),
    }
}

fn invalid<T: Debug>(r: Result<T, Error>) -> String {
    match r {
        Err(Error::InvalidProfile { detail }) => {
            assert!(!detail.is_empty());
            assert!(!detail.ends_with('.'), "{detail:?}");
            detail
        }
        other => panic!("expected Err(InvalidProfile), got {other:?}"),
    }
}

/// Asserts that decoding fails with `InvalidProfile` naming `key`.
#[track_caller]
fn rejects(v: Value, key: &str) {
    let detail = invalid(decode(&v));
    assert!(detail.contains(key), "message {detail:?} for {v} does not name {key:?}");
}

fn with(key: &str, value: Value) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(key.to_owned(), value);
    Value::Object(m)
}

fn root_with(key: &str, value: Value) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("path".to_owned(), json!("/r"));
    m.insert(key.to_owned(), value);
    json!({ "additional_roots": [Value::Object(m)] })
}

// ---------------------------------------------------------------------------------------------
// Accepted forms
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_object_is_the_safe_default() {
    let c = ok(json!({}));
    assert_eq!(c, ProfileConfig::default());
    assert_eq!(c.workspace_root, PathBuf::new());
    for k in ACCESS_KEYS {
        assert_eq!(access_field(&c, k), Deny, "{k}");
    }
    assert_eq!(c.home, Home::IsolatedHome);
    assert_eq!(c.isolation, Isolation::Sandboxed);
    assert!(c.additional_roots.is_empty());
    assert!(!c.ack_unconfined);
    // An empty workspace is then rejected by Profile::new, naming the field.
    let detail = invalid(Profile::new(c));
    assert!(detail.contains("workspace_root"), "{detail}");
}

#[test]
fn full_document_with_names() {
    let c = ok(json!({
        "workspace_root": "/w",
        "workspace_read": "allow",
        "workspace_write": "gated",
        "host_read": "deny",
        "host_write": "gated",
        "network": "allow",
        "command": "gated",
        "home": "real-home",
        "isolation": "sandboxed",
        "additional_roots": [
            { "path": "/b", "read": "gated", "write": "deny" },
            { "path": "/a", "read": "allow", "write": "allow" }
        ],
        "ack_unconfined": false
    }));
    let want = ProfileConfig {
        workspace_root: PathBuf::from("/w"),
        workspace_read: Allow,
        workspace_write: Gated,
        host_read: Deny,
        host_write: Gated,
        network: Allow,
        command: Gated,
        home: Home::RealHome,
        isolation: Isolation::Sandboxed,
        // Decoding keeps the order and spelling; Profile::new canonicalises.
        additional_roots: vec![
            RootAccess { path: PathBuf::from("/b"), read: Gated, write: Deny },
            RootAccess { path: PathBuf::from("/a"), read: Allow, write: Allow },
        ],
        ack_unconfined: false,
        unix_sockets: Deny,
        protected_paths: sandbox_bundle::Protection::default(),
        network_targets: Vec::new(),
    };
    assert_eq!(c, want);
}

#[test]
fn network_targets_decode_normalize_and_need_a_gated_network() {
    let c = ok(json!({
        "workspace_root": "/",
        "network": "gated",
        "network_targets": ["tcp:Registry.NPMJS.org.:443", "tcp:*.crates.io:443", "tcp:registry.npmjs.org:443"]
    }));
    let p = Profile::new(c.clone()).unwrap();
    let printed: Vec<String> = p.config().network_targets.iter().map(ToString::to_string).collect();
    assert_eq!(printed, ["tcp:registry.npmjs.org:443", "tcp:*.crates.io:443"]);
    assert_eq!(p.settings().network_targets, printed);
    // The targets are part of the fingerprint; their order and spelling are not.
    let fewer = Profile::new(ProfileConfig { network_targets: vec![], ..c.clone() }).unwrap();
    assert_ne!(p.fingerprint(), fewer.fingerprint());
    let spelled = ok(json!({
        "workspace_root": "/",
        "network": "gated",
        "network_targets": ["tcp:*.crates.io:443", "tcp:registry.npmjs.org:443"]
    }));
    assert_eq!(Profile::new(spelled).unwrap().fingerprint(), p.fingerprint());
    // restrict keeps what both allow: a name under the other's wildcard, a shared pattern.
    let narrow = Profile::new(ProfileConfig {
        network_targets: vec![
            TargetPattern::parse("tcp:index.crates.io:443").unwrap(),
            TargetPattern::parse("tcp:evil.test:443").unwrap(),
        ],
        ..c.clone()
    })
    .unwrap();
    let both = sandbox_bundle::restrict(&p, &narrow).unwrap();
    let kept: Vec<String> = both.config().network_targets.iter().map(ToString::to_string).collect();
    assert_eq!(kept, ["tcp:index.crates.io:443"]);
    let denied = Profile::new(ProfileConfig { network: Deny, network_targets: vec![], ..c.clone() }).unwrap();
    assert!(sandbox_bundle::restrict(&p, &denied).unwrap().config().network_targets.is_empty());
    // Errors name the key.
    for (value, key) in [
        (json!({"workspace_root": "/", "network": "gated", "network_targets": "tcp:a.com:1"}), "network_targets"),
        (json!({"workspace_root": "/", "network": "gated", "network_targets": [7]}), "network_targets[0]"),
        (
            json!({"workspace_root": "/", "network": "gated", "network_targets": ["tcp:a.com:1", "x"]}),
            "network_targets[1]",
        ),
    ] {
        match ProfileConfig::from_value(&value) {
            Err(Error::InvalidProfile { detail }) => assert!(detail.starts_with(key), "{detail}"),
            other => panic!("{value}: {other:?}"),
        }
    }
    for network in ["deny", "allow"] {
        let c = ok(json!({"workspace_root": "/", "network": network, "network_targets": ["tcp:a.com:1"]}));
        match Profile::new(c) {
            Err(Error::InvalidProfile { detail }) => assert!(detail.starts_with("network_targets:"), "{detail}"),
            other => panic!("{network}: {other:?}"),
        }
    }
}

#[test]
fn access_values_as_names_and_abi_numbers() {
    for (name, num, want) in [("deny", 0, Deny), ("gated", 1, Gated), ("allow", 2, Allow)] {
        for k in ACCESS_KEYS {
            assert_eq!(access_field(&ok(with(k, json!(name))), k), want, "{k}: {name}");
            assert_eq!(access_field(&ok(with(k, json!(num))), k), want, "{k}: {num}");
        }
        let r = &ok(root_with("read", json!(name))).additional_roots[0];
        assert_eq!((r.read, r.write), (want, Deny));
        let r = &ok(root_with("write", json!(num))).additional_roots[0];
        assert_eq!((r.read, r.write), (Deny, want));
    }
}

#[test]
fn home_spellings() {
    for (v, want) in [
        (json!("isolated"), Home::IsolatedHome),
        (json!("isolated-home"), Home::IsolatedHome),
        (json!("real"), Home::RealHome),
        (json!("real-home"), Home::RealHome),
        (json!(0), Home::IsolatedHome),
        (json!(1), Home::RealHome),
    ] {
        assert_eq!(ok(with("home", v.clone())).home, want, "{v}");
    }
}

#[test]
fn isolation_spellings() {
    for (v, want) in [
        (json!("sandboxed"), Isolation::Sandboxed),
        (json!("unconfined"), Isolation::Unconfined),
        (json!(0), Isolation::Sandboxed),
        (json!(1), Isolation::Unconfined),
    ] {
        assert_eq!(ok(with("isolation", v.clone())).isolation, want, "{v}");
    }
}

#[test]
fn ack_and_roots_defaults() {
    assert!(ok(json!({ "ack_unconfined": true })).ack_unconfined);
    assert!(!ok(json!({ "ack_unconfined": false })).ack_unconfined);
    assert!(ok(json!({ "additional_roots": [] })).additional_roots.is_empty());
    // A root's missing read/write take the safe default.
    let c = ok(json!({ "additional_roots": [{ "path": "/r" }] }));
    assert_eq!(c.additional_roots, vec![RootAccess { path: PathBuf::from("/r"), read: Deny, write: Deny }]);
    // Any subset of keys: the others stay at their defaults.
    let c = ok(json!({ "network": "gated", "home": "real" }));
    assert_eq!(c, ProfileConfig { network: Gated, home: Home::RealHome, ..ProfileConfig::default() });
}

#[test]
fn decoded_config_builds_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let t = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(t.join("w/sub")).unwrap();
    std::fs::create_dir_all(t.join("data")).unwrap();
    let ws = t.join("w").display().to_string();
    let data = t.join("data").display().to_string();
    let p = Profile::new(ok(json!({
        "workspace_root": format!("{ws}/sub/.."),
        "workspace_read": 2,
        "workspace_write": "allow",
        "host_read": "allow",
        "host_write": 0,
        "network": "deny",
        "command": "gated",
        "additional_roots": [{ "path": data, "read": "gated", "write": 1 }]
    })))
    .unwrap();
    assert_eq!(p.workspace_root(), t.join("w").as_path());
    assert_eq!(p.access_for("filesystem.read", &data).unwrap(), Gated);
    assert_eq!(p.access_for("command.execute", "").unwrap(), Gated);
    assert_eq!(p.settings().host_write, "deny");

    let u = Profile::new(ok(json!({
        "workspace_root": ws,
        "workspace_read": "allow", "workspace_write": "allow", "host_read": "allow",
        "host_write": "allow", "network": "allow", "command": "deny",
        "isolation": "unconfined", "ack_unconfined": true
    })))
    .unwrap();
    assert_eq!(u.settings().isolation, "unconfined");

    // A root without a path is invalid, naming the root (at decode time or in Profile::new).
    let r = ProfileConfig::from_json(
        &json!({ "workspace_root": ws, "additional_roots": [{ "read": "allow" }] }).to_string(),
    )
    .and_then(Profile::new);
    let detail = invalid(r);
    assert!(detail.contains("additional_roots[0]"), "{detail}");
}

// ---------------------------------------------------------------------------------------------
// Rejected forms
// ---------------------------------------------------------------------------------------------

#[test]
fn not_json_or_not_an_object_is_invalid() {
    for text in ["", " ", "{", "}", "{\"network\": }", "{} {}", "{\"network\": \"allow\",}", "nul", "{'a': 1}"] {
        invalid(ProfileConfig::from_json(text));
        assert!(serde_json::from_str::<ProfileConfig>(text).is_err(), "{text}");
    }
    for v in [json!(null), json!([]), json!([{}]), json!("x"), json!(1), json!(true)] {
        invalid(decode(&v));
    }
}

#[test]
fn unknown_top_level_keys_are_rejected_naming_the_key() {
    for key in [
        "bogus",
        "workspace",
        "workspaceRoot",
        "Workspace_root",
        "workspace_root ",
        "ack",
        "roots",
        "additional_root",
        "read",
        "write",
        "path",
        "access_version",
        "fingerprint",
        "",
    ] {
        let v = with(key, json!("allow"));
        let detail = invalid(decode(&v));
        assert!(detail.contains(&format!("{key}:")) || detail.contains(&format!("{key:?}")), "{detail:?} for {key:?}");
        assert!(detail.contains("unknown"), "{detail}");
    }
    // Next to valid keys too.
    rejects(json!({ "workspace_root": "/w", "network": "allow", "extra": 1 }), "extra");
}

#[test]
fn unknown_root_keys_are_rejected_naming_the_key() {
    rejects(root_with("mode", json!("rw")), "additional_roots[0].mode");
    rejects(root_with("Read", json!("allow")), "additional_roots[0].Read");
    rejects(root_with("execute", json!("allow")), "additional_roots[0].execute");
    rejects(
        json!({ "additional_roots": [{ "path": "/a" }, { "path": "/b", "extra": true }] }),
        "additional_roots[1].extra",
    );
}

#[test]
fn invalid_access_values_name_the_key() {
    let bad = [
        json!("Allow"),
        json!("ALLOW"),
        json!(" allow"),
        json!("allow "),
        json!("allowed"),
        json!("yes"),
        json!(""),
        json!("2"),
        json!(3),
        json!(255),
        json!(256),
        json!(-1),
        json!(1.5),
        json!(2.0),
        json!(1e3),
        json!(u64::MAX),
        json!(true),
        json!(null),
        json!([]),
        json!(["allow"]),
        json!({}),
        json!({ "allow": true }),
    ];
    for v in &bad {
        for k in ACCESS_KEYS {
            rejects(with(k, v.clone()), k);
        }
        rejects(root_with("read", v.clone()), "additional_roots[0].read");
        rejects(root_with("write", v.clone()), "additional_roots[0].write");
        rejects(
            json!({ "additional_roots": [{ "path": "/a" }, { "path": "/b", "write": v }] }),
            "additional_roots[1].write",
        );
    }
    // Past u64 range (serde_json keeps it as a float).
    invalid(ProfileConfig::from_json(r#"{"network": 18446744073709551616}"#));
}

#[test]
fn invalid_home_values_name_the_key() {
    for v in [
        json!("isolated_home"),
        json!("real_home"),
        json!("Real"),
        json!("home"),
        json!("deny"),
        json!(""),
        json!(2),
        json!(-1),
        json!(0.5),
        json!(true),
        json!(null),
        json!([]),
        json!({}),
    ] {
        rejects(with("home", v), "home");
    }
}

#[test]
fn invalid_isolation_values_name_the_key() {
    for v in [
        json!("Sandboxed"),
        json!("unconfined "),
        json!("none"),
        json!("allow"),
        json!(""),
        json!(2),
        json!(-1),
        json!(false),
        json!(null),
        json!({}),
    ] {
        rejects(with("isolation", v), "isolation");
    }
}

#[test]
fn wrong_types_name_the_key() {
    for v in [json!(5), json!(true), json!(null), json!([]), json!(["/w"]), json!({})] {
        rejects(with("workspace_root", v), "workspace_root");
    }
    for v in [json!("true"), json!(1), json!(0), json!(null), json!([]), json!({})] {
        rejects(with("ack_unconfined", v), "ack_unconfined");
    }
    for v in [json!({}), json!("x"), json!(1), json!(true), json!(null), json!({ "path": "/r" })] {
        rejects(with("additional_roots", v), "additional_roots");
    }
    for v in [json!(1), json!("/r"), json!(null), json!([]), json!(["/r"])] {
        rejects(json!({ "additional_roots": [v] }), "additional_roots[0]");
    }
    rejects(json!({ "additional_roots": [{ "path": "/a" }, null] }), "additional_roots[1]");
    for v in [json!(1), json!(null), json!(true), json!([]), json!({})] {
        rejects(json!({ "additional_roots": [{ "path": v }] }), "additional_roots[0].path");
    }
}

#[test]
fn serde_deserialize_is_the_same_decoder() {
    let c: ProfileConfig =
        serde_json::from_str(r#"{"workspace_root": "/w", "network": 1, "home": "isolated"}"#).unwrap();
    assert_eq!(c, ProfileConfig { workspace_root: PathBuf::from("/w"), network: Gated, ..ProfileConfig::default() });
    // As a field of a larger document.
    #[derive(serde::Deserialize)]
    struct Outer {
        profile: ProfileConfig,
    }
    let o: Outer = serde_json::from_str(r#"{"profile": {"command": "allow"}}"#).unwrap();
    assert_eq!(o.profile.command, Allow);
    let e = serde_json::from_str::<Outer>(r#"{"profile": {"commands": "allow"}}"#).err().unwrap();
    assert!(e.to_string().contains("commands"), "{e}");
    let e =
        serde_json::from_str::<ProfileConfig>(r#"{"additional_roots": [{"path": "/r", "read": 7}]}"#).err().unwrap();
    assert!(e.to_string().contains("additional_roots[0].read"), "{e}");
    assert!(e.to_string().contains("invalid profile"), "{e}");
}

#[test]
fn duplicate_keys_are_rejected_naming_the_key() {
    for (json, key) in [
        (r#"{"network": "deny", "network": "allow"}"#, "network"),
        (r#"{"additional_roots": [{"path": "/", "read": "deny", "read": "allow"}]}"#, "read"),
    ] {
        let err = ProfileConfig::from_json(json).unwrap_err();
        assert!(matches!(err, Error::InvalidProfile { .. }), "{json}");
        assert!(err.to_string().contains(&format!("{key}: duplicate key")), "{json}: {err}");
        assert!(serde_json::from_str::<ProfileConfig>(json).is_err(), "{json}: serde path");
    }
}

/// Issue 12 class 4a: `unix_sockets` is `deny` (default) or `allow`; `gated` means nothing (no
/// grant lifts it) and is refused naming the key; only `allow` changes the fingerprint, and
/// `restrict` takes the smaller value.
#[test]
fn unix_sockets_is_deny_or_allow() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().display().to_string();
    let base = |v: Value| json!({"workspace_root": ws, "unix_sockets": v});
    assert_eq!(decode(&json!({"workspace_root": ws})).unwrap().unix_sockets, Deny);
    for (v, want) in [(json!("deny"), Deny), (json!(0), Deny), (json!("allow"), Allow), (json!(2), Allow)] {
        assert_eq!(decode(&base(v.clone())).unwrap().unix_sockets, want, "{v}");
    }
    for v in [json!("gated"), json!(1), json!("yes"), json!(true)] {
        let err = decode(&base(v.clone())).unwrap_err().to_string();
        assert!(err.contains("unix_sockets"), "{v}: {err}");
    }
    let config = ProfileConfig { workspace_root: dir.path().to_path_buf(), ..ProfileConfig::default() };
    let err = Profile::new(ProfileConfig { unix_sockets: Gated, ..config.clone() }).unwrap_err().to_string();
    assert!(err.contains("unix_sockets"), "{err}");
    let deny = Profile::new(config.clone()).unwrap();
    let allow = Profile::new(ProfileConfig { unix_sockets: Allow, ..config }).unwrap();
    assert_ne!(deny.fingerprint(), allow.fingerprint());
    assert_eq!(allow.settings().unix_sockets, "allow");
    assert_eq!(restrict(&allow, &deny).unwrap().config().unix_sockets, Deny);
    assert_eq!(restrict(&allow, &allow).unwrap().config().unix_sockets, Allow);
}
