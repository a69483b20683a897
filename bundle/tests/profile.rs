//! CONTRACT.md §3-§5 for `Profile`: validation, canonicalisation, required guarantees,
//! fingerprint, `access_for`, `access_version` and `restrict`, plus the ABI of the §3 enums.
//!
//! Every fixture lives under a fresh, canonicalised temporary directory `T`; the workspace is
//! usually `T/w`. Every failure is asserted as `Err(Error::InvalidProfile { .. })` whose message
//! names the field.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic, clippy::tests_outside_test_module)]

use std::collections::HashSet;
use std::fmt::Debug;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use sandbox_bundle::*;

use Access::{Allow, Deny, Gated};

const ACCESS: [Access; 3] = [Deny, Gated, Allow];
const FIELDS: [&str; 6] = ["workspace_read", "workspace_write", "host_read", "host_write", "network", "command"];

// ---------------------------------------------------------------------------------------------
// Fixture and helpers
// ---------------------------------------------------------------------------------------------

struct Fx {
    _dir: tempfile::TempDir,
    t: PathBuf,
}

impl Fx {
    fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let t = fs::canonicalize(dir.path()).unwrap();
        Fx { _dir: dir, t }
    }

    /// Creates `T/rel` (and parents) and returns it.
    fn dir(&self, rel: &str) -> PathBuf {
        let p = self.t.join(rel);
        fs::create_dir_all(&p).unwrap();
        p
    }

    /// Creates the regular file `T/rel` and returns it.
    fn file(&self, rel: &str) -> PathBuf {
        let p = self.t.join(rel);
        fs::write(&p, b"x").unwrap();
        p
    }

    /// Creates the symlink `T/rel` -> `target` and returns it.
    fn link(&self, target: &Path, rel: &str) -> PathBuf {
        let p = self.t.join(rel);
        symlink(target, &p).unwrap();
        p
    }

    /// `T/rel` as a string (for `access_for` scopes); need not exist.
    fn s(&self, rel: &str) -> String {
        if rel.is_empty() { self.t.display().to_string() } else { self.t.join(rel).display().to_string() }
    }
}

fn config(ws: &Path) -> ProfileConfig {
    ProfileConfig { workspace_root: ws.to_path_buf(), ..ProfileConfig::default() }
}

fn all_allow(ws: &Path) -> ProfileConfig {
    ProfileConfig {
        workspace_read: Allow,
        workspace_write: Allow,
        host_read: Allow,
        host_write: Allow,
        network: Allow,
        command: Allow,
        ..config(ws)
    }
}

fn unconfined(ws: &Path) -> ProfileConfig {
    ProfileConfig { isolation: Isolation::Unconfined, ack_unconfined: true, ..all_allow(ws) }
}

fn root(path: &Path, read: Access, write: Access) -> RootAccess {
    RootAccess { path: path.to_path_buf(), read, write }
}

fn field(c: &ProfileConfig, i: usize) -> Access {
    [c.workspace_read, c.workspace_write, c.host_read, c.host_write, c.network, c.command][i]
}

fn set_field(c: &mut ProfileConfig, i: usize, a: Access) {
    let slot = match i {
        0 => &mut c.workspace_read,
        1 => &mut c.workspace_write,
        2 => &mut c.host_read,
        3 => &mut c.host_write,
        4 => &mut c.network,
        _ => &mut c.command,
    };
    *slot = a;
}

fn new(c: ProfileConfig) -> Profile {
    match Profile::new(c.clone()) {
        Ok(p) => p,
        Err(e) => panic!("Profile::new({c:?}) failed: {e}"),
    }
}

/// Asserts `Err(Error::InvalidProfile { .. })` with a well-formed message; returns the detail.
fn invalid<T: Debug>(r: Result<T, Error>) -> String {
    match r {
        Err(Error::InvalidProfile { detail }) => {
            let e = Error::InvalidProfile { detail: detail.clone() };
            assert_eq!(e.kind(), ErrorKind::InvalidProfile);
            assert!(e.partial_output().is_empty());
            assert!(std::error::Error::source(&e).is_none());
            assert_eq!(e.to_string(), format!("invalid profile: {detail}"));
            assert!(!detail.is_empty());
            assert!(!detail.ends_with('.'), "message ends with a period: {detail:?}");
            assert!(!detail.starts_with(char::is_uppercase), "message is not lowercase: {detail:?}");
            detail
        }
        other => panic!("expected Err(InvalidProfile), got {other:?}"),
    }
}

/// Asserts `InvalidProfile` whose message names `name`.
#[track_caller]
fn invalid_naming<T: Debug>(r: Result<T, Error>, name: &str) {
    let detail = invalid(r);
    assert!(detail.contains(name), "message {detail:?} does not name {name:?}");
}

fn fp(c: ProfileConfig) -> String {
    new(c).fingerprint().to_owned()
}

fn read(p: &Profile, scope: &str) -> Access {
    p.access_for("filesystem.read", scope).unwrap_or_else(|e| panic!("read {scope:?}: {e}"))
}

fn write(p: &Profile, scope: &str) -> Access {
    p.access_for("filesystem.write", scope).unwrap_or_else(|e| panic!("write {scope:?}: {e}"))
}

fn rw(p: &Profile, scope: &str) -> (Access, Access) {
    (read(p, scope), write(p, scope))
}

// ---------------------------------------------------------------------------------------------
// §3: the ABI of Access, Home, Isolation
// ---------------------------------------------------------------------------------------------

#[test]
fn abi_numbers_and_names() {
    assert_eq!([Deny as u8, Gated as u8, Allow as u8], [0, 1, 2]);
    assert_eq!([u8::from(Deny), u8::from(Gated), u8::from(Allow)], [0, 1, 2]);
    assert_eq!([Home::IsolatedHome as u8, Home::RealHome as u8], [0, 1]);
    assert_eq!([Isolation::Sandboxed as u8, Isolation::Unconfined as u8], [0, 1]);
    assert_eq!([Deny.to_string(), Gated.to_string(), Allow.to_string()], ["deny", "gated", "allow"]);
    assert_eq!([Home::IsolatedHome.to_string(), Home::RealHome.to_string()], ["isolated-home", "real-home"]);
    assert_eq!([Isolation::Sandboxed.to_string(), Isolation::Unconfined.to_string()], ["sandboxed", "unconfined"]);
}

#[test]
fn abi_try_from_round_trips_and_rejects_out_of_range() {
    for a in ACCESS {
        assert_eq!(Access::try_from(a as u8).unwrap(), a);
    }
    for h in [Home::IsolatedHome, Home::RealHome] {
        assert_eq!(Home::try_from(h as u8).unwrap(), h);
    }
    for i in [Isolation::Sandboxed, Isolation::Unconfined] {
        assert_eq!(Isolation::try_from(i as u8).unwrap(), i);
    }
    for n in 3..=u8::MAX {
        invalid(Access::try_from(n));
    }
    for n in 2..=u8::MAX {
        invalid(Home::try_from(n));
        invalid(Isolation::try_from(n));
    }
    invalid_naming(Access::try_from(3), "access");
    invalid_naming(Home::try_from(2), "home");
    invalid_naming(Isolation::try_from(2), "isolation");
}

#[test]
fn abi_defaults_are_safe_and_orders_are_as_specified() {
    assert_eq!(Access::default(), Deny);
    assert_eq!(Home::default(), Home::IsolatedHome);
    assert_eq!(Isolation::default(), Isolation::Sandboxed);
    assert!(Deny < Gated && Gated < Allow);
    assert!(Home::IsolatedHome < Home::RealHome);
    assert!(Isolation::Sandboxed < Isolation::Unconfined);
    assert_eq!(Allow.min(Gated), Gated);
    assert_eq!(Deny.min(Allow), Deny);

    let c = ProfileConfig::default();
    assert_eq!(c.workspace_root, PathBuf::new());
    for (i, name) in FIELDS.iter().enumerate() {
        assert_eq!(field(&c, i), Deny, "{name}");
    }
    assert_eq!(c.home, Home::IsolatedHome);
    assert_eq!(c.isolation, Isolation::Sandboxed);
    assert!(c.additional_roots.is_empty());
    assert!(!c.ack_unconfined);
    let r = RootAccess::default();
    assert_eq!((r.read, r.write), (Deny, Deny));
}

#[test]
fn public_types_are_send_sync_and_cheap_values() {
    fn send_sync<T: Send + Sync + Clone>() {}
    send_sync::<Profile>();
    send_sync::<Error>();
    send_sync::<ProfileConfig>();
    fn copy<T: Copy + Ord + std::hash::Hash + Default>() {}
    copy::<Access>();
    copy::<Home>();
    copy::<Isolation>();
}

// ---------------------------------------------------------------------------------------------
// §4 validation rule 1: the workspace
// ---------------------------------------------------------------------------------------------

#[test]
fn workspace_empty_is_invalid() {
    invalid_naming(Profile::new(ProfileConfig::default()), "workspace_root");
    invalid_naming(Profile::new(config(Path::new(""))), "workspace_root");
}

#[test]
fn workspace_relative_is_invalid() {
    let fx = Fx::new();
    fx.dir("w");
    for rel in ["w", ".", "./w", "..", "rel/dir"] {
        invalid_naming(Profile::new(config(Path::new(rel))), "workspace_root");
    }
    // Relative even when it would resolve to an existing directory from the current directory.
    let cwd = std::env::current_dir().unwrap();
    assert!(cwd.is_dir());
    invalid_naming(Profile::new(config(Path::new("."))), "workspace_root");
}

#[test]
fn workspace_missing_is_invalid() {
    let fx = Fx::new();
    invalid_naming(Profile::new(config(&fx.t.join("missing"))), "workspace_root");
    invalid_naming(Profile::new(config(&fx.t.join("missing/deeper"))), "workspace_root");
    // A dangling symlink is missing too (symlinks are followed).
    let dangling = fx.link(&fx.t.join("nowhere"), "dangling");
    invalid_naming(Profile::new(config(&dangling)), "workspace_root");
}

#[test]
fn workspace_not_a_directory_is_invalid() {
    let fx = Fx::new();
    let file = fx.file("f");
    invalid_naming(Profile::new(config(&file)), "workspace_root");
    // Followed symlink to a file.
    let link = fx.link(&file, "link-to-file");
    invalid_naming(Profile::new(config(&link)), "workspace_root");
    // A path through a file.
    invalid_naming(Profile::new(config(&file.join("x"))), "workspace_root");
}

#[test]
fn workspace_nul_is_invalid_not_a_panic() {
    let fx = Fx::new();
    let mut p = fx.t.clone().into_os_string();
    p.push("/w\0x");
    invalid_naming(Profile::new(config(Path::new(&p))), "workspace_root");
}

#[test]
fn workspace_symlink_to_directory_is_followed() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let link = fx.link(&w, "link");
    let p = new(config(&link));
    assert_eq!(p.workspace_root(), w.as_path());
}

// ---------------------------------------------------------------------------------------------
// §4 validation rule 2: root paths
// ---------------------------------------------------------------------------------------------

#[test]
fn root_empty_relative_dangling_or_through_a_symlink_is_invalid() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let ok = fx.dir("ok");
    let file = fx.file("f");
    let dangling = fx.link(&fx.t.join("nowhere"), "dangling");
    let file_link = fx.link(&file, "file-link");
    let bad: Vec<PathBuf> =
        vec![PathBuf::new(), PathBuf::from("ok"), PathBuf::from("./ok"), PathBuf::from("."), dangling, file_link];
    // Issue 14: a file is a valid root, and a missing path is valid for a root whose write is
    // deny (the workload cannot create it) but not for a writable one.
    for (path, read, write) in [(file.clone(), Deny, Deny), (file, Allow, Allow), (fx.t.join("missing"), Allow, Deny)] {
        let c = ProfileConfig { additional_roots: vec![root(&path, read, write)], ..config(&w) };
        assert!(Profile::new(c).is_ok(), "{}", path.display());
    }
    let c = ProfileConfig { additional_roots: vec![root(&fx.t.join("missing"), Allow, Allow)], ..config(&w) };
    invalid_naming(Profile::new(c), "additional_roots[0]");
    // A missing root below a dangling symlink, or below a symlink to a directory, is refused:
    // the workload could create the target the link names.
    let dangling_dir = fx.link(&fx.t.join("nowhere-dir"), "dangling-dir");
    let dir_link = fx.link(&ok, "dir-link");
    for base in [dangling_dir, dir_link] {
        let c = ProfileConfig { additional_roots: vec![root(&base.join("key"), Deny, Deny)], ..config(&w) };
        invalid_naming(Profile::new(c), "additional_roots[0]");
    }
    for path in bad {
        // As the only root: index 0.
        let c = ProfileConfig { additional_roots: vec![root(&path, Deny, Deny)], ..config(&w) };
        invalid_naming(Profile::new(c), "additional_roots[0]");
        // After a valid root: index 1.
        let c =
            ProfileConfig { additional_roots: vec![root(&ok, Deny, Deny), root(&path, Allow, Allow)], ..config(&w) };
        invalid_naming(Profile::new(c), "additional_roots[1]");
    }
}

#[test]
fn root_equal_to_workspace_is_invalid_however_spelled() {
    let fx = Fx::new();
    let w = fx.dir("w");
    fx.dir("w/x");
    let link = fx.link(&w, "link");
    let spellings = [w.clone(), w.join("."), w.join("x/.."), link.clone(), link.join("."), fx.t.join("w/x/../.")];
    for s in &spellings {
        for (read, write) in [(Deny, Deny), (Allow, Allow), (Gated, Deny)] {
            let c = ProfileConfig { additional_roots: vec![root(s, read, write)], ..config(&w) };
            invalid_naming(Profile::new(c), "additional_roots[0]");
        }
    }
    // Also when the workspace itself is given through the symlink.
    let c = ProfileConfig { additional_roots: vec![root(&w, Deny, Deny)], ..config(&link) };
    invalid_naming(Profile::new(c), "additional_roots[0]");
    // Nesting in every direction is fine.
    let inner = fx.dir("w/inner");
    let c = ProfileConfig {
        additional_roots: vec![
            root(&fx.t, Deny, Deny),
            root(&inner, Gated, Gated),
            root(&inner.join(".."), Gated, Allow),
        ],
        ..config(&w)
    };
    invalid_naming(Profile::new(c), "additional_roots[2]");
    let deeper = fx.dir("w/inner/deeper");
    let c = ProfileConfig {
        additional_roots: vec![root(&fx.t, Deny, Deny), root(&inner, Gated, Gated), root(&deeper, Allow, Deny)],
        ..config(&w)
    };
    assert_eq!(new(c).config().additional_roots.len(), 3);
}

// ---------------------------------------------------------------------------------------------
// §4 validation rule 3: duplicate roots
// ---------------------------------------------------------------------------------------------

#[test]
fn duplicate_roots_with_different_access_are_invalid() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let d = fx.dir("d");
    fx.dir("d/x");
    for alias in [d.clone(), d.join("."), d.join("x/..")] {
        for (r2, w2) in [(Gated, Deny), (Deny, Gated), (Allow, Allow)] {
            let c = ProfileConfig { additional_roots: vec![root(&d, Deny, Deny), root(&alias, r2, w2)], ..config(&w) };
            invalid_naming(Profile::new(c), "additional_roots[1]");
        }
    }
    // The conflict is found whatever lies between the two spellings.
    let other = fx.dir("other");
    let c = ProfileConfig {
        additional_roots: vec![root(&d.join("."), Gated, Gated), root(&other, Deny, Deny), root(&d, Gated, Allow)],
        ..config(&w)
    };
    invalid_naming(Profile::new(c), "additional_roots[2]");
}

#[test]
fn duplicate_roots_with_equal_access_merge() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let d = fx.dir("d");
    fx.dir("d/x");
    let c = ProfileConfig {
        additional_roots: vec![
            root(&d, Gated, Deny),
            root(&d.join("x/.."), Gated, Deny),
            root(&d.join("."), Gated, Deny),
        ],
        ..config(&w)
    };
    let p = new(c);
    assert_eq!(p.config().additional_roots, vec![root(&d, Gated, Deny)]);
    let single = new(ProfileConfig { additional_roots: vec![root(&d, Gated, Deny)], ..config(&w) });
    assert_eq!(p.fingerprint(), single.fingerprint());
    assert_eq!(p, single);
}

// ---------------------------------------------------------------------------------------------
// §4 validation rules 4 and 5: isolation and acknowledgement
// ---------------------------------------------------------------------------------------------

#[test]
fn sandboxed_with_ack_is_invalid() {
    let fx = Fx::new();
    let w = fx.dir("w");
    invalid_naming(Profile::new(ProfileConfig { ack_unconfined: true, ..config(&w) }), "ack_unconfined");
    invalid_naming(Profile::new(ProfileConfig { ack_unconfined: true, ..all_allow(&w) }), "ack_unconfined");
}

#[test]
fn unconfined_without_ack_is_invalid() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let c = ProfileConfig { ack_unconfined: false, ..unconfined(&w) };
    invalid_naming(Profile::new(c), "ack_unconfined");
    // Rule 4 is checked before rule 5.
    let c = ProfileConfig { isolation: Isolation::Unconfined, ..config(&w) };
    invalid_naming(Profile::new(c), "ack_unconfined");
}

#[test]
fn unconfined_requires_allow_on_every_field_but_command() {
    let fx = Fx::new();
    let w = fx.dir("w");
    // Every field but `command` (the last).
    for (i, name) in FIELDS.iter().enumerate().take(5) {
        for a in [Deny, Gated] {
            let mut c = unconfined(&w);
            set_field(&mut c, i, a);
            invalid_naming(Profile::new(c), name);
        }
    }
}

#[test]
fn unconfined_command_and_home_may_be_anything() {
    let fx = Fx::new();
    let w = fx.dir("w");
    for command in ACCESS {
        for home in [Home::IsolatedHome, Home::RealHome] {
            let p = new(ProfileConfig { command, home, ..unconfined(&w) });
            assert_eq!(p.access_for("command.execute", "").unwrap(), command);
            assert_eq!(p.config().home, home);
            assert_eq!(p.config().isolation, Isolation::Unconfined);
            assert!(p.config().ack_unconfined);
        }
    }
}

#[test]
fn unconfined_roots_must_be_allow() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("a");
    let b = fx.dir("b");
    for (read, write) in [(Deny, Allow), (Gated, Allow), (Allow, Deny), (Allow, Gated), (Deny, Deny)] {
        let c = ProfileConfig { additional_roots: vec![root(&a, read, write)], ..unconfined(&w) };
        invalid_naming(Profile::new(c), "additional_roots[0]");
        let c =
            ProfileConfig { additional_roots: vec![root(&a, Allow, Allow), root(&b, read, write)], ..unconfined(&w) };
        invalid_naming(Profile::new(c), "additional_roots[1]");
    }
    let p = new(ProfileConfig { additional_roots: vec![root(&a, Allow, Allow)], ..unconfined(&w) });
    assert_eq!(p.config().additional_roots, vec![root(&a, Allow, Allow)]);
}

#[test]
fn checks_run_in_contract_order() {
    let fx = Fx::new();
    let w = fx.dir("w");
    // Rule 1 before everything else.
    let c = ProfileConfig {
        additional_roots: vec![root(&fx.t.join("missing"), Deny, Deny)],
        ack_unconfined: true,
        ..config(&fx.t.join("missing-ws"))
    };
    invalid_naming(Profile::new(c), "workspace_root");
    // Rule 2 before rule 4.
    let c = ProfileConfig {
        additional_roots: vec![root(Path::new("rel"), Deny, Deny)],
        ack_unconfined: true,
        ..config(&w)
    };
    invalid_naming(Profile::new(c), "additional_roots[0]");
    // Rule 4 before rule 5.
    let c = ProfileConfig { isolation: Isolation::Unconfined, ack_unconfined: false, ..config(&w) };
    invalid_naming(Profile::new(c), "ack_unconfined");
    // Rule 3 before rule 5.
    let d = fx.dir("d");
    let c = ProfileConfig { additional_roots: vec![root(&d, Deny, Deny), root(&d, Gated, Gated)], ..unconfined(&w) };
    invalid_naming(Profile::new(c), "additional_roots[1]");
}

#[test]
fn every_root_path_is_checked_before_duplicates() {
    // Rule 2 (each root path) comes before rule 3 (duplicates), whatever the root order.
    let fx = Fx::new();
    let w = fx.dir("w");
    let d = fx.dir("d");
    for bad in [fx.t.join("missing"), PathBuf::from("rel"), w.clone(), PathBuf::new()] {
        let c = ProfileConfig {
            additional_roots: vec![root(&d, Deny, Deny), root(&d, Allow, Allow), root(&bad, Allow, Allow)],
            ..config(&w)
        };
        invalid_naming(Profile::new(c), "additional_roots[2]");
    }
}

#[test]
fn profile_has_no_default() {
    use std::marker::PhantomData;
    trait Fallback {
        fn has_default(&self) -> bool {
            false
        }
    }
    struct Probe<T>(PhantomData<T>);
    impl<T> Fallback for &Probe<T> {}
    impl<T: Default> Probe<T> {
        fn has_default(&self) -> bool {
            true
        }
    }
    let with_default = Probe::<ProfileConfig>(PhantomData);
    let without_default = Probe::<Profile>(PhantomData);
    assert!(with_default.has_default());
    assert!(!(&without_default).has_default());
}

// ---------------------------------------------------------------------------------------------
// §4 canonicalisation
// ---------------------------------------------------------------------------------------------

#[test]
fn workspace_spellings_canonicalise_to_one_path() {
    let fx = Fx::new();
    let w = fx.dir("w");
    fx.dir("w/x");
    let link = fx.link(&w, "link");
    let link2 = fx.link(&link, "link2");
    let reference = new(config(&w));
    let mut trailing = w.clone().into_os_string();
    trailing.push("/");
    for s in [w.join("."), w.join("x/.."), link.clone(), link2, link.join("x/.."), PathBuf::from(trailing)] {
        let p = new(config(&s));
        assert_eq!(p.workspace_root(), w.as_path(), "{}", s.display());
        assert_eq!(p.config().workspace_root, w);
        assert_eq!(p.settings().workspace_root, w);
        assert_eq!(p.fingerprint(), reference.fingerprint(), "{}", s.display());
        assert_eq!(p, reference);
    }
}

#[test]
fn roots_are_canonical_sorted_by_bytes_and_deduplicated() {
    let fx = Fx::new();
    let w = fx.dir("w");
    // Byte order differs from Path's component order here: "a-b" < "a.b" < "a/c" bytewise,
    // while component-wise "a/c" sorts before "a-b".
    let names = ["b", "a/c", "a.b", "B", "a-b", "a"];
    for n in names {
        fx.dir(n);
    }
    let mut roots: Vec<RootAccess> = names.iter().map(|n| root(&fx.t.join(n), Gated, Deny)).collect();
    roots.push(root(&fx.t.join("b/."), Gated, Deny));
    roots.push(root(&fx.t.join("a/c/.."), Gated, Deny));
    let p = new(ProfileConfig { additional_roots: roots.clone(), ..config(&w) });
    let got: Vec<PathBuf> = p.config().additional_roots.iter().map(|r| r.path.clone()).collect();
    let want: Vec<PathBuf> = ["B", "a", "a-b", "a.b", "a/c", "b"].iter().map(|n| fx.t.join(n)).collect();
    assert_eq!(got, want);
    let settings: Vec<PathBuf> = p.settings().additional_roots.iter().map(|r| r.path.clone()).collect();
    assert_eq!(settings, want);

    // Any input order gives the same profile.
    roots.reverse();
    let q = new(ProfileConfig { additional_roots: roots.clone(), ..config(&w) });
    assert_eq!(q.config(), p.config());
    assert_eq!(q.fingerprint(), p.fingerprint());
    roots.rotate_left(3);
    let q = new(ProfileConfig { additional_roots: roots, ..config(&w) });
    assert_eq!(q.config(), p.config());
}

#[test]
fn profile_owns_copies_of_its_config() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("a");
    let mut c = ProfileConfig { additional_roots: vec![root(&a, Gated, Deny)], ..config(&w) };
    let p = new(c.clone());
    let before = (p.config().clone(), p.fingerprint().to_owned(), p.settings());
    c.workspace_read = Allow;
    c.workspace_root = fx.dir("other");
    c.additional_roots[0].read = Allow;
    c.additional_roots.push(root(&fx.dir("more"), Deny, Deny));
    let clone = p.clone();
    drop(c);
    assert_eq!((p.config().clone(), p.fingerprint().to_owned(), p.settings()), before);
    assert_eq!(clone, p);
}

#[test]
fn later_disk_changes_do_not_alter_the_profile() {
    let fx = Fx::new();
    let w1 = fx.dir("w1");
    let w2 = fx.dir("w2");
    let r1 = fx.dir("r1");
    let r2 = fx.dir("r2");
    let ws_link = fx.link(&w1, "ws-link");
    let p = new(ProfileConfig { additional_roots: vec![root(&r1, Deny, Gated)], ..config(&ws_link) });
    let before = (p.config().clone(), p.fingerprint().to_owned(), p.required_guarantees());
    let identities = p.identities().to_vec();

    // Re-point the workspace link and replace the root directory.
    fs::remove_file(&ws_link).unwrap();
    symlink(&w2, &ws_link).unwrap();
    fs::remove_dir(&r1).unwrap();
    fs::rename(&r2, &r1).unwrap();

    assert_eq!((p.config().clone(), p.fingerprint().to_owned(), p.required_guarantees()), before);
    assert_eq!(p.workspace_root(), w1.as_path());
    assert_eq!(p.config().additional_roots, vec![root(&r1, Deny, Gated)]);
    // access_for is lexical and keeps answering from the frozen profile.
    assert_eq!(rw(&p, &r1.display().to_string()), (Deny, Gated));
    // The recorded identities are those of the objects at profile time.
    assert_eq!(p.identities(), identities.as_slice());
    // A new profile from the same config now sees the new targets.
    let q = new(ProfileConfig { additional_roots: vec![root(&r1, Deny, Gated)], ..config(&ws_link) });
    assert_eq!(q.workspace_root(), w2.as_path());
    assert_ne!(q, p);
    assert_ne!(q.identities()[1].ino, identities[1].ino);
}

// ---------------------------------------------------------------------------------------------
// §4 required guarantees
// ---------------------------------------------------------------------------------------------

fn bits(names: &[&str]) -> u64 {
    names.iter().map(|n| Guarantees::bit_for_name(n).unwrap()).fold(0, |a, b| a | b)
}

/// The §4 rule, written independently of the implementation.
fn expected_required(c: &ProfileConfig) -> Guarantees {
    let mut g = Guarantees { env_scrub: true, ..Guarantees::default() };
    if c.isolation == Isolation::Sandboxed {
        g.read_boundary =
            c.workspace_read != Allow || c.host_read != Allow || c.additional_roots.iter().any(|r| r.read != Allow);
        g.write_boundary =
            c.workspace_write != Allow || c.host_write != Allow || c.additional_roots.iter().any(|r| r.write != Allow);
        g.network_boundary = c.network != Allow;
    }
    g
}

#[test]
fn required_guarantees_for_named_shapes() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("a");
    let env = ["env-scrub"];
    let cases: Vec<(ProfileConfig, Vec<&str>)> = vec![
        (config(&w), vec!["write-boundary", "read-boundary", "env-scrub", "network-boundary"]),
        (all_allow(&w), env.to_vec()),
        (ProfileConfig { command: Deny, ..all_allow(&w) }, env.to_vec()),
        (ProfileConfig { command: Gated, ..all_allow(&w) }, env.to_vec()),
        (ProfileConfig { home: Home::RealHome, ..all_allow(&w) }, env.to_vec()),
        (ProfileConfig { workspace_read: Gated, ..all_allow(&w) }, vec!["read-boundary", "env-scrub"]),
        (ProfileConfig { host_read: Deny, ..all_allow(&w) }, vec!["read-boundary", "env-scrub"]),
        (ProfileConfig { workspace_write: Deny, ..all_allow(&w) }, vec!["write-boundary", "env-scrub"]),
        (ProfileConfig { host_write: Gated, ..all_allow(&w) }, vec!["write-boundary", "env-scrub"]),
        (ProfileConfig { network: Gated, ..all_allow(&w) }, vec!["env-scrub", "network-boundary"]),
        (ProfileConfig { network: Deny, ..all_allow(&w) }, vec!["env-scrub", "network-boundary"]),
        (
            ProfileConfig { additional_roots: vec![root(&a, Gated, Allow)], ..all_allow(&w) },
            vec!["read-boundary", "env-scrub"],
        ),
        (
            ProfileConfig { additional_roots: vec![root(&a, Allow, Deny)], ..all_allow(&w) },
            vec!["write-boundary", "env-scrub"],
        ),
        (ProfileConfig { additional_roots: vec![root(&a, Allow, Allow)], ..all_allow(&w) }, env.to_vec()),
        // An Allow root never removes a bit.
        (
            ProfileConfig { additional_roots: vec![root(&a, Allow, Allow)], ..config(&w) },
            vec!["write-boundary", "read-boundary", "env-scrub", "network-boundary"],
        ),
        (unconfined(&w), env.to_vec()),
        (ProfileConfig { command: Deny, home: Home::RealHome, ..unconfined(&w) }, env.to_vec()),
        (ProfileConfig { additional_roots: vec![root(&a, Allow, Allow)], ..unconfined(&w) }, env.to_vec()),
    ];
    for (c, names) in cases {
        let p = new(c.clone());
        let g = p.required_guarantees();
        assert_eq!(g.names(), names, "{c:?}");
        assert_eq!(g.bits(), bits(&names));
        assert_eq!(g, expected_required(&c));
        let s = p.settings();
        assert_eq!(s.required_guarantees, names);
        assert_eq!(s.required_guarantee_bits, g.bits());
        assert!(!g.process_boundary && !g.address_network && !g.resource_limits && !g.target_network);
    }
}

#[test]
fn required_guarantees_for_every_sandboxed_combination() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("a");
    // Every value of the six fields (729 shapes), with and without a root.
    let mut n = 0usize;
    for code in 0..729usize {
        let mut c = config(&w);
        let mut k = code;
        for i in 0..6 {
            set_field(&mut c, i, ACCESS[k % 3]);
            k /= 3;
        }
        let g = new(c.clone()).required_guarantees();
        assert_eq!(g, expected_required(&c), "{c:?}");
        assert!(g.env_scrub);
        let r = ACCESS[code % 3];
        let wr = ACCESS[(code / 3) % 3];
        let c = ProfileConfig { additional_roots: vec![root(&a, r, wr)], ..c };
        assert_eq!(new(c.clone()).required_guarantees(), expected_required(&c), "{c:?}");
        n += 1;
    }
    assert_eq!(n, 729);
}

// ---------------------------------------------------------------------------------------------
// §4 fingerprint
// ---------------------------------------------------------------------------------------------

fn assert_hex64(f: &str) {
    assert_eq!(f.len(), 64, "{f}");
    assert!(f.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{f}");
}

#[test]
fn fingerprint_is_64_lowercase_hex_and_deterministic() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("a");
    for c in [
        config(&w),
        all_allow(&w),
        unconfined(&w),
        ProfileConfig { additional_roots: vec![root(&a, Gated, Allow)], ..config(&w) },
    ] {
        let p = new(c.clone());
        assert_hex64(p.fingerprint());
        assert_eq!(p.settings().fingerprint, p.fingerprint());
        assert_eq!(fp(c.clone()), p.fingerprint());
        assert_eq!(p.clone().fingerprint(), p.fingerprint());
    }
}

/// Stable across processes and builds of v1 (tokens and exported bundles carry it): a profile
/// whose every input is fixed has a fixed fingerprint.
#[test]
fn fingerprint_golden_values() {
    let p = new(config(Path::new("/")));
    assert_eq!(p.fingerprint(), "06b3a75709e7e0dc67d5051beac1bf89a358d9ca00d6e2811eb4598d1878b6d6");
    let p = new(unconfined(Path::new("/")));
    assert_eq!(p.fingerprint(), "06eb68baf8e2813553f4f840d1e9a7dcaeab469c3c5a1411eb21b52ce7769e94");
}

/// The v1 encoding, written out independently: length-prefixed (u64 big-endian) fields, in the
/// contract's order — tag, canonical workspace, the six access values, home, isolation, the
/// sorted roots (count, then path and `[read, write]` each), the ack, the required bits.
fn reference_fingerprint(c: &ProfileConfig, required: Guarantees) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut put = |bytes: &[u8]| {
        h.update(u64::try_from(bytes.len()).unwrap().to_be_bytes());
        h.update(bytes);
    };
    put(b"sandbox-profile-v1");
    put(c.workspace_root.as_os_str().as_encoded_bytes());
    for i in 0..6 {
        put(&[field(c, i) as u8]);
    }
    put(&[c.home as u8]);
    put(&[c.isolation as u8]);
    put(&u64::try_from(c.additional_roots.len()).unwrap().to_be_bytes());
    for r in &c.additional_roots {
        put(r.path.as_os_str().as_encoded_bytes());
        put(&[r.read as u8, r.write as u8]);
    }
    put(&[u8::from(c.ack_unconfined)]);
    put(&required.bits().to_be_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn fingerprint_matches_the_v1_encoding() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("a");
    let b = fx.dir("w/b");
    for c in [
        config(&w),
        all_allow(&w),
        unconfined(&w),
        ProfileConfig { command: Gated, home: Home::RealHome, ..unconfined(&w) },
        ProfileConfig {
            workspace_read: Gated,
            network: Allow,
            additional_roots: vec![root(&b, Allow, Deny), root(&a, Gated, Allow)],
            ..config(&w)
        },
    ] {
        let p = new(c);
        assert_eq!(p.fingerprint(), reference_fingerprint(p.config(), p.required_guarantees()));
    }
}

#[test]
fn fingerprint_equal_for_equal_authority_spelled_differently() {
    let fx = Fx::new();
    let w = fx.dir("w");
    fx.dir("w/x");
    let a = fx.dir("a");
    let b = fx.dir("w/b");
    let ws_link = fx.link(&w, "ws-link");
    let reference = new(ProfileConfig {
        additional_roots: vec![root(&a, Deny, Gated), root(&b, Gated, Allow)],
        workspace_read: Gated,
        ..config(&w)
    });
    let spellings = [
        ProfileConfig {
            additional_roots: vec![root(&b, Gated, Allow), root(&a, Deny, Gated)],
            workspace_read: Gated,
            ..config(&w)
        },
        ProfileConfig {
            additional_roots: vec![root(&a.join("."), Deny, Gated), root(&b, Gated, Allow)],
            workspace_read: Gated,
            ..config(&ws_link)
        },
        ProfileConfig {
            additional_roots: vec![
                root(&a, Deny, Gated),
                root(&b.join("."), Gated, Allow),
                root(&a, Deny, Gated),
                root(&w.join("x/../b"), Gated, Allow),
            ],
            workspace_read: Gated,
            ..config(&w.join("x/.."))
        },
    ];
    for c in spellings {
        let p = new(c.clone());
        assert_eq!(p.fingerprint(), reference.fingerprint(), "{c:?}");
        assert_eq!(p, reference);
        assert_eq!(p.config(), reference.config());
    }
}

#[test]
fn fingerprint_changes_with_every_change_of_authority() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let w2 = fx.dir("w2");
    let r1 = fx.dir("r1");
    let r2 = fx.dir("r2");
    let r1_sub = fx.dir("r1/sub");
    let base = ProfileConfig {
        workspace_read: Gated,
        workspace_write: Gated,
        host_read: Gated,
        host_write: Gated,
        network: Gated,
        command: Gated,
        additional_roots: vec![root(&r1, Allow, Deny)],
        ..config(&w)
    };
    let mut variants: Vec<(String, ProfileConfig)> = vec![("base".into(), base.clone())];
    for (i, name) in FIELDS.iter().enumerate() {
        for a in [Deny, Allow] {
            let mut c = base.clone();
            set_field(&mut c, i, a);
            variants.push((format!("{name} {a}"), c));
        }
    }
    variants.push(("home".into(), ProfileConfig { home: Home::RealHome, ..base.clone() }));
    variants.push(("workspace".into(), ProfileConfig { workspace_root: w2, ..base.clone() }));
    for (name, read, write) in [
        ("root read deny", Deny, Deny),
        ("root read gated", Gated, Deny),
        ("root write gated", Allow, Gated),
        ("root write allow", Allow, Allow),
    ] {
        variants.push((name.into(), ProfileConfig { additional_roots: vec![root(&r1, read, write)], ..base.clone() }));
    }
    variants
        .push(("root path".into(), ProfileConfig { additional_roots: vec![root(&r2, Allow, Deny)], ..base.clone() }));
    variants.push((
        "root path nested".into(),
        ProfileConfig { additional_roots: vec![root(&r1_sub, Allow, Deny)], ..base.clone() },
    ));
    variants.push((
        "root added".into(),
        ProfileConfig { additional_roots: vec![root(&r1, Allow, Deny), root(&r2, Deny, Allow)], ..base.clone() },
    ));
    variants.push(("root removed".into(), ProfileConfig { additional_roots: vec![], ..base.clone() }));
    // Isolation and ack change together in every valid profile.
    variants.push(("all allow sandboxed".into(), all_allow(&w)));
    variants.push(("all allow unconfined + ack".into(), unconfined(&w)));
    variants.push(("unconfined command gated".into(), ProfileConfig { command: Gated, ..unconfined(&w) }));
    variants.push(("unconfined real home".into(), ProfileConfig { home: Home::RealHome, ..unconfined(&w) }));
    variants.push((
        "unconfined with root".into(),
        ProfileConfig { additional_roots: vec![root(&r1, Allow, Allow)], ..unconfined(&w) },
    ));

    let mut seen: Vec<(String, String)> = Vec::new();
    for (name, c) in variants {
        let f = fp(c);
        assert_hex64(&f);
        if let Some((other, _)) = seen.iter().find(|(_, g)| *g == f) {
            panic!("{name} and {other} have the same fingerprint");
        }
        seen.push((name, f));
    }
}

#[test]
fn profile_equality_and_hash_are_by_fingerprint() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let link = fx.link(&w, "link");
    let p = new(config(&w));
    let q = new(config(&link));
    let r = new(all_allow(&w));
    assert_eq!(p, q);
    assert_ne!(p, r);
    assert_eq!(p == r, p.fingerprint() == r.fingerprint());
    let set: HashSet<Profile> = [p.clone(), q, r.clone(), p.clone(), r.clone()].into_iter().collect();
    assert_eq!(set.len(), 2);
    assert!(set.contains(&p) && set.contains(&r));
}

#[test]
fn settings_are_the_normalized_config() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("a");
    let b = fx.dir("b");
    let link = fx.link(&w, "link");
    let p = new(ProfileConfig {
        workspace_read: Allow,
        workspace_write: Gated,
        network: Gated,
        command: Allow,
        home: Home::RealHome,
        additional_roots: vec![root(&b, Allow, Deny), root(&a, Gated, Allow)],
        ..config(&link)
    });
    let s = p.settings();
    assert_eq!(s.access_version, 1);
    assert_eq!(s.workspace_root, w);
    assert_eq!(
        [&s.workspace_read, &s.workspace_write, &s.host_read, &s.host_write, &s.network, &s.command],
        ["allow", "gated", "deny", "deny", "gated", "allow"]
    );
    assert_eq!(s.home, "real-home");
    assert_eq!(s.isolation, "sandboxed");
    assert!(!s.ack_unconfined);
    let roots: Vec<(PathBuf, &str, &str)> =
        s.additional_roots.iter().map(|r| (r.path.clone(), r.read.as_str(), r.write.as_str())).collect();
    assert_eq!(roots, vec![(a, "gated", "allow"), (b, "allow", "deny")]);
    assert_eq!(s.required_guarantees, p.required_guarantees().names());
    assert_eq!(s.required_guarantee_bits, p.required_guarantees().bits());
    assert_eq!(s.fingerprint, p.fingerprint());

    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["access_version"], 1);
    assert_eq!(v["workspace_write"], "gated");
    assert_eq!(v["home"], "real-home");
    assert_eq!(v["fingerprint"], p.fingerprint());
    assert_eq!(v["additional_roots"][0]["read"], "gated");

    let u = new(unconfined(&w)).settings();
    assert_eq!(u.isolation, "unconfined");
    assert!(u.ack_unconfined);
    assert_eq!(u.required_guarantees, vec!["env-scrub"]);
}

// ---------------------------------------------------------------------------------------------
// §5 access_for and access_version
// ---------------------------------------------------------------------------------------------

#[test]
fn access_version_is_one() {
    let fx = Fx::new();
    let w = fx.dir("w");
    assert_eq!(ACCESS_VERSION, 1);
    assert_eq!(new(config(&w)).access_version(), 1);
    assert_eq!(new(unconfined(&w)).access_version(), 1);
}

#[test]
fn access_for_command_and_network() {
    let fx = Fx::new();
    let w = fx.dir("w");
    for a in ACCESS {
        for b in ACCESS {
            let p = new(ProfileConfig { command: a, network: b, ..config(&w) });
            assert_eq!(p.access_for("command.execute", "").unwrap(), a);
            assert_eq!(p.access_for("network", "").unwrap(), b);
        }
    }
}

#[test]
fn access_for_rejects_scope_for_command_and_network() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let p = new(all_allow(&w));
    for kind in ["command.execute", "network"] {
        for scope in ["x", " ", "/", "host:*", "tree:/", &w.display().to_string()] {
            invalid_naming(p.access_for(kind, scope), "scope");
        }
    }
}

#[test]
fn access_for_rejects_unknown_kinds() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let p = new(all_allow(&w));
    for kind in [
        "",
        "filesystem",
        "filesystem.",
        "filesystem.execute",
        "filesystem.read ",
        " filesystem.read",
        "Filesystem.read",
        "FILESYSTEM.WRITE",
        "filesystem.read.v1",
        "command",
        "command.start",
        "command.start.v1",
        "network.connect",
        "Network",
    ] {
        for scope in ["", "/", "host:*"] {
            invalid_naming(p.access_for(kind, scope), "kind");
        }
    }
}

#[test]
fn access_for_host_scope() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let any = fx.dir("any");
    for hr in ACCESS {
        for hw in ACCESS {
            let p = new(ProfileConfig {
                host_read: hr,
                host_write: hw,
                workspace_read: Allow,
                additional_roots: vec![root(Path::new("/"), Gated, Gated), root(&any, Deny, Deny)],
                ..config(&w)
            });
            assert_eq!(rw(&p, "host:*"), (hr, hw));
        }
    }
    let p = new(config(&w));
    for scope in ["host:", "host:**", "host:* ", "host: *", "host:/", "host:/a", "host:a", "host:*/a", "host:*:*"] {
        for kind in ["filesystem.read", "filesystem.write"] {
            invalid_naming(p.access_for(kind, scope), "scope");
        }
    }
    // Not the host prefix at all: a relative path.
    invalid_naming(p.access_for("filesystem.read", "HOST:*"), "scope");
    invalid_naming(p.access_for("filesystem.read", "host*"), "scope");
}

const UNCLEAN: [&str; 22] = [
    "", "a", "a/b", "./a", "../a", "~/a", " /a", "*", "/a/", "/a/b/", "//", "//a", "/a//b", "/a/./b", "/./a", "/a/.",
    "/.", "/a/../b", "/..", "/a/..", "/../a", "/a/b//",
];

const CLEAN: [&str; 9] = ["/", "/a", "/a/b", "/a.b", "/.a", "/..a", "/a..", "/...", "/a b/c"];

#[test]
fn access_for_rejects_empty_relative_and_unclean_paths() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let p = new(all_allow(&w));
    let ws = w.display().to_string();
    for kind in ["filesystem.read", "filesystem.write"] {
        for bad in UNCLEAN {
            invalid_naming(p.access_for(kind, bad), "scope");
            invalid_naming(p.access_for(kind, &format!("tree:{bad}")), "scope");
        }
        for bad in [format!("{ws}/"), format!("{ws}/./x"), format!("{ws}/x/.."), format!("{ws}//x")] {
            invalid_naming(p.access_for(kind, &bad), "scope");
            invalid_naming(p.access_for(kind, &format!("tree:{bad}")), "scope");
        }
        invalid_naming(p.access_for(kind, "tree:"), "scope");
        invalid_naming(p.access_for(kind, "tree:host:*"), "scope");
        invalid_naming(p.access_for(kind, "/a\0b"), "scope");
        invalid_naming(p.access_for(kind, "tree:/a\0b"), "scope");
        for good in CLEAN {
            assert_eq!(p.access_for(kind, good).unwrap(), Allow, "{good}");
            assert_eq!(p.access_for(kind, &format!("tree:{good}")).unwrap(), Allow, "tree:{good}");
        }
    }
}

/// T/w (workspace), T/w/a, T/w/a/b and T/o as roots, host Gated.
fn nested(fx: &Fx) -> Profile {
    let w = fx.dir("w");
    let a = fx.dir("w/a");
    let b = fx.dir("w/a/b");
    let o = fx.dir("o");
    fx.dir("w2");
    new(ProfileConfig {
        workspace_read: Allow,
        workspace_write: Allow,
        host_read: Gated,
        host_write: Gated,
        // Given out of order on purpose.
        additional_roots: vec![root(&b, Allow, Gated), root(&o, Deny, Allow), root(&a, Gated, Deny)],
        ..config(&w)
    })
}

#[test]
fn access_for_path_longest_root_wins() {
    let fx = Fx::new();
    let p = nested(&fx);
    let cases = [
        ("w", (Allow, Allow)),
        ("w/x", (Allow, Allow)),
        ("w/x/y/z", (Allow, Allow)),
        ("w/a", (Gated, Deny)),
        ("w/a/x", (Gated, Deny)),
        ("w/a/b", (Allow, Gated)),
        ("w/a/b/c/d", (Allow, Gated)),
        ("o", (Deny, Allow)),
        ("o/deep/er", (Deny, Allow)),
        ("", (Gated, Gated)),
        ("elsewhere", (Gated, Gated)),
    ];
    for (rel, want) in cases {
        assert_eq!(rw(&p, &fx.s(rel)), want, "{rel}");
    }
    assert_eq!(rw(&p, "/"), (Gated, Gated));
    assert_eq!(rw(&p, "/definitely/not/here"), (Gated, Gated));
}

#[test]
fn access_for_matching_is_lexical() {
    let fx = Fx::new();
    let p = nested(&fx);
    // A sibling sharing a byte prefix is not inside.
    for rel in ["w2", "w2/x", "wx", "w-", "w.", "o2", "oo/x"] {
        assert_eq!(rw(&p, &fx.s(rel)), (Gated, Gated), "{rel}");
    }
    for rel in ["w/ab", "w/a-b", "w/a.b"] {
        assert_eq!(rw(&p, &fx.s(rel)), (Allow, Allow), "{rel}");
    }
    for rel in ["w/a/bc", "w/a/b-", "w/a/bb/c"] {
        assert_eq!(rw(&p, &fx.s(rel)), (Gated, Deny), "{rel}");
    }
    // Symlinks are never resolved: a link to the workspace is host, a link inside the
    // workspace is the workspace whatever it points to.
    let link_to_w = fx.link(&fx.t.join("w"), "link-to-w");
    let link_in_w = fx.link(&fx.t.join("o"), "w/link-to-o");
    assert_eq!(rw(&p, &link_to_w.display().to_string()), (Gated, Gated));
    assert_eq!(rw(&p, &format!("{}/a/b", link_to_w.display())), (Gated, Gated));
    assert_eq!(rw(&p, &link_in_w.display().to_string()), (Allow, Allow));
    // Paths need not exist.
    assert_eq!(rw(&p, &fx.s("w/a/b/never/created")), (Allow, Gated));
}

#[test]
fn access_for_tree_takes_the_minimum_over_roots_strictly_inside() {
    let fx = Fx::new();
    let p = nested(&fx);
    let cases = [
        // min(w, a, b)
        ("w", (Gated, Deny)),
        // min(a, b)
        ("w/a", (Gated, Deny)),
        // only b itself
        ("w/a/b", (Allow, Gated)),
        ("w/a/b/c", (Allow, Gated)),
        ("w/a/x", (Gated, Deny)),
        ("w/x", (Allow, Allow)),
        ("o", (Deny, Allow)),
        ("o/x", (Deny, Allow)),
        // min(host, w, a, b, o)
        ("", (Deny, Deny)),
        // lexical: w is not strictly inside w2
        ("w2", (Gated, Gated)),
        ("elsewhere", (Gated, Gated)),
    ];
    for (rel, want) in cases {
        assert_eq!(rw(&p, &format!("tree:{}", fx.s(rel))), want, "tree:{rel}");
    }
    assert_eq!(rw(&p, "tree:/"), (Deny, Deny));
}

#[test]
fn tree_grant_never_covers_a_deny_root() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let gated = fx.dir("w/gated");
    let secret = fx.dir("w/gated/inner/secret");
    let p = new(ProfileConfig {
        workspace_read: Allow,
        workspace_write: Allow,
        additional_roots: vec![root(&gated, Gated, Gated), root(&secret, Deny, Deny)],
        ..config(&w)
    });
    assert_eq!(rw(&p, &format!("tree:{}", fx.s("w/gated/other"))), (Gated, Gated));
    assert_eq!(rw(&p, &format!("tree:{}", fx.s("w/gated/inner/x"))), (Gated, Gated));
    for rel in ["w/gated", "w/gated/inner", "w/gated/inner/secret", "w", ""] {
        assert_eq!(rw(&p, &format!("tree:{}", fx.s(rel))), (Deny, Deny), "tree:{rel}");
    }
    assert_eq!(rw(&p, &fx.s("w/gated/inner")), (Gated, Gated));
}

#[test]
fn access_for_with_a_root_enclosing_the_workspace() {
    let fx = Fx::new();
    let outer = fx.dir("outer");
    let w = fx.dir("outer/w");
    let p = new(ProfileConfig {
        workspace_read: Gated,
        workspace_write: Allow,
        host_read: Allow,
        host_write: Allow,
        additional_roots: vec![root(&outer, Deny, Deny)],
        ..config(&w)
    });
    assert_eq!(rw(&p, &fx.s("outer")), (Deny, Deny));
    assert_eq!(rw(&p, &fx.s("outer/x")), (Deny, Deny));
    assert_eq!(rw(&p, &fx.s("outer/w")), (Gated, Allow));
    assert_eq!(rw(&p, &fx.s("outer/w/x")), (Gated, Allow));
    assert_eq!(rw(&p, &format!("tree:{}", fx.s("outer"))), (Deny, Deny));
    assert_eq!(rw(&p, &format!("tree:{}", fx.s("outer/w"))), (Gated, Allow));
    assert_eq!(rw(&p, &format!("tree:{}", fx.s(""))), (Deny, Deny));
    assert_eq!(rw(&p, &fx.s("")), (Allow, Allow));
    assert_eq!(rw(&p, "host:*"), (Allow, Allow));
}

#[test]
fn access_for_with_slash_as_root_or_workspace() {
    let fx = Fx::new();
    let w = fx.dir("w");
    // A root at "/" contains every path; host:* still answers the host values.
    let p = new(ProfileConfig {
        host_read: Allow,
        host_write: Allow,
        workspace_read: Allow,
        additional_roots: vec![root(Path::new("/"), Gated, Deny)],
        ..config(&w)
    });
    assert_eq!(rw(&p, "/"), (Gated, Deny));
    assert_eq!(rw(&p, "/etc"), (Gated, Deny));
    assert_eq!(rw(&p, &fx.s("w/x")), (Allow, Deny));
    assert_eq!(rw(&p, "host:*"), (Allow, Allow));
    assert_eq!(rw(&p, "tree:/"), (Gated, Deny));

    // The workspace at "/" contains every path.
    let p = new(ProfileConfig { workspace_read: Gated, host_read: Allow, host_write: Allow, ..config(Path::new("/")) });
    assert_eq!(rw(&p, "/"), (Gated, Deny));
    assert_eq!(rw(&p, "/usr/bin"), (Gated, Deny));
    assert_eq!(rw(&p, "host:*"), (Allow, Allow));
}

#[test]
fn access_for_unconfined_is_allow_everywhere_but_command() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("a");
    let p = new(ProfileConfig { command: Gated, additional_roots: vec![root(&a, Allow, Allow)], ..unconfined(&w) });
    for scope in ["host:*", "/", "tree:/", &fx.s("w"), &fx.s("a/b"), &format!("tree:{}", fx.s(""))] {
        assert_eq!(rw(&p, scope), (Allow, Allow), "{scope}");
    }
    assert_eq!(p.access_for("network", "").unwrap(), Allow);
    assert_eq!(p.access_for("command.execute", "").unwrap(), Gated);
}

// ---------------------------------------------------------------------------------------------
// §5 restrict
// ---------------------------------------------------------------------------------------------

fn restricted(base: &Profile, ceiling: &Profile) -> Profile {
    match restrict(base, ceiling) {
        Ok(p) => p,
        Err(e) => panic!("restrict failed: {e}"),
    }
}

#[test]
fn restrict_requires_identical_canonical_workspaces() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let w2 = fx.dir("w2");
    let inner = fx.dir("w/inner");
    let link = fx.link(&w, "link");
    let p = new(all_allow(&w));
    invalid_naming(restrict(&p, &new(all_allow(&w2))), "workspace_root");
    invalid_naming(restrict(&new(all_allow(&w2)), &p), "workspace_root");
    invalid_naming(restrict(&p, &new(all_allow(&inner))), "workspace_root");
    invalid_naming(restrict(&p, &new(all_allow(&fx.t))), "workspace_root");
    // The same workspace spelled differently is the same canonical workspace.
    let q = restricted(&p, &new(config(&link)));
    assert_eq!(q.workspace_root(), w.as_path());
}

#[test]
fn restrict_takes_the_minimum_of_each_field() {
    let fx = Fx::new();
    let w = fx.dir("w");
    for i in 0..6 {
        for a in ACCESS {
            for b in ACCESS {
                let mut bc = all_allow(&w);
                set_field(&mut bc, i, a);
                let mut cc = all_allow(&w);
                set_field(&mut cc, i, b);
                let r = restricted(&new(bc), &new(cc));
                for (j, name) in FIELDS.iter().enumerate() {
                    let want = if i == j { a.min(b) } else { Allow };
                    assert_eq!(field(r.config(), j), want, "{name} with {a} and {b}");
                }
            }
        }
    }
    for ha in [Home::IsolatedHome, Home::RealHome] {
        for hb in [Home::IsolatedHome, Home::RealHome] {
            let r = restricted(
                &new(ProfileConfig { home: ha, ..config(&w) }),
                &new(ProfileConfig { home: hb, ..config(&w) }),
            );
            assert_eq!(r.config().home, ha.min(hb));
        }
    }
    // All six at once, mixed.
    let base = new(ProfileConfig {
        workspace_read: Allow,
        workspace_write: Deny,
        host_read: Gated,
        host_write: Allow,
        network: Deny,
        command: Gated,
        ..config(&w)
    });
    let ceiling = new(ProfileConfig {
        workspace_read: Deny,
        workspace_write: Allow,
        host_read: Allow,
        host_write: Gated,
        network: Gated,
        command: Deny,
        home: Home::RealHome,
        ..config(&w)
    });
    let r = restricted(&base, &ceiling);
    let got: Vec<Access> = (0..6).map(|i| field(r.config(), i)).collect();
    assert_eq!(got, vec![Deny, Deny, Gated, Gated, Deny, Deny]);
    assert_eq!(r.config().home, Home::IsolatedHome);
    assert_eq!(r.required_guarantees(), expected_required(r.config()));
}

#[test]
fn restrict_isolation_and_ack() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let s = new(all_allow(&w));
    let u = new(unconfined(&w));
    let u_gated = new(ProfileConfig { command: Gated, home: Home::RealHome, ..unconfined(&w) });

    let r = restricted(&u, &u_gated);
    assert_eq!(r.config().isolation, Isolation::Unconfined);
    assert!(r.config().ack_unconfined);
    assert_eq!(r.config().command, Gated);
    assert_eq!(r.config().home, Home::IsolatedHome);
    assert_eq!(r.required_guarantees().names(), vec!["env-scrub"]);

    for (a, b) in [(&s, &u), (&u, &s), (&s, &s)] {
        let r = restricted(a, b);
        assert_eq!(r.config().isolation, Isolation::Sandboxed);
        assert!(!r.config().ack_unconfined);
        assert_eq!(r, s);
    }
    let r = restricted(&u, &u);
    assert_eq!(r, u);
}

#[test]
fn restrict_roots_union_minimum_and_redundancy() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("w/a");
    let ab = fx.dir("w/a/b");
    let c = fx.dir("w/c");
    let o = fx.dir("o");
    let h = fx.dir("h");
    let base = new(ProfileConfig {
        workspace_read: Allow,
        workspace_write: Allow,
        additional_roots: vec![root(&a, Gated, Allow), root(&o, Allow, Deny), root(&h, Deny, Deny)],
        ..config(&w)
    });
    let ceiling = new(ProfileConfig {
        workspace_read: Allow,
        workspace_write: Allow,
        additional_roots: vec![root(&ab, Deny, Allow), root(&o, Gated, Gated), root(&c, Allow, Allow)],
        ..config(&w)
    });
    let r = restricted(&base, &ceiling);
    // w/c: (allow, allow) equals the workspace -> dropped; h: (deny, deny) equals host -> dropped.
    assert_eq!(
        r.config().additional_roots,
        vec![root(&o, Gated, Deny), root(&a, Gated, Allow), root(&ab, Deny, Allow)]
    );
    assert_eq!(restricted(&ceiling, &base), r);

    // A root that the ceiling's minimum makes equal to its enclosing area is dropped.
    let e = fx.dir("w/e");
    let base = new(ProfileConfig {
        workspace_read: Gated,
        workspace_write: Gated,
        additional_roots: vec![root(&e, Allow, Allow)],
        ..config(&w)
    });
    let ceiling = new(config(&w));
    let r = restricted(&base, &ceiling);
    assert!(r.config().additional_roots.is_empty());
    assert_eq!(r, ceiling);

    // Roots redundant in both inputs are dropped from the result, nested ones kept when they differ.
    let base = new(ProfileConfig {
        workspace_read: Allow,
        workspace_write: Allow,
        additional_roots: vec![root(&a, Allow, Allow), root(&ab, Deny, Deny)],
        ..config(&w)
    });
    let r = restricted(&base, &base);
    assert_eq!(r.config().additional_roots, vec![root(&ab, Deny, Deny)]);
    assert_ne!(r, base);
    for rel in ["w", "w/a", "w/a/b", "w/a/b/x", "w/a/x", "o", ""] {
        assert_eq!(rw(&r, &fx.s(rel)), rw(&base, &fx.s(rel)), "{rel}");
        let t = format!("tree:{}", fx.s(rel));
        assert_eq!(rw(&r, &t), rw(&base, &t), "{t}");
    }
}

#[test]
fn restrict_leaves_inputs_untouched_and_validates_the_result() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let a = fx.dir("w/a");
    let o = fx.dir("o");
    let base = new(ProfileConfig { workspace_read: Allow, additional_roots: vec![root(&a, Deny, Deny)], ..config(&w) });
    let ceiling = new(ProfileConfig {
        workspace_read: Gated,
        host_read: Gated,
        additional_roots: vec![root(&o, Gated, Gated)],
        ..all_allow(&w)
    });
    let before = [
        (base.config().clone(), base.fingerprint().to_owned()),
        (ceiling.config().clone(), ceiling.fingerprint().to_owned()),
    ];
    let r = restricted(&base, &ceiling);
    let after = [
        (base.config().clone(), base.fingerprint().to_owned()),
        (ceiling.config().clone(), ceiling.fingerprint().to_owned()),
    ];
    assert_eq!(before, after);
    assert_ne!(r, base);
    assert_ne!(r, ceiling);
    // The result is a valid profile in its own right: re-validating its config changes nothing.
    let again = new(r.config().clone());
    assert_eq!(again, r);
    assert_eq!(again.config(), r.config());
    assert_eq!(r.required_guarantees(), expected_required(r.config()));

    // The result goes through Profile::new: a deny root that vanished on disk is honoured as a
    // root that does not exist yet (issue 14), and still denies.
    fs::remove_dir(&a).unwrap();
    let vanished = restrict(&base, &ceiling).unwrap();
    assert_eq!(rw(&vanished, &a.display().to_string()), (Deny, Deny));
    // The inputs still answer from their frozen state.
    assert_eq!(rw(&base, &a.display().to_string()), (Deny, Deny));
}

/// A tiny deterministic generator (xorshift64*), so the property tests need no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> usize {
        usize::try_from(self.next() % n).unwrap()
    }

    fn access(&mut self) -> Access {
        ACCESS[self.below(3)]
    }
}

#[test]
fn restrict_properties_on_generated_profiles() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let dirs = ["w/a", "w/a/b", "w/a/b/c", "w/d", "o", "o/p", "q", ""];
    let dir_paths: Vec<PathBuf> = dirs.iter().map(|d| fx.dir(d)).collect();
    let mut queries: Vec<String> = Vec::new();
    for d in [
        "w",
        "w/a",
        "w/a/b",
        "w/a/b/c",
        "w/a/b/c/x",
        "w/a/y",
        "w/d",
        "w/dd",
        "w/z",
        "o",
        "o/p",
        "o/p/x",
        "o/r",
        "q",
        "q2",
        "",
    ] {
        queries.push(fx.s(d));
        queries.push(format!("tree:{}", fx.s(d)));
    }
    queries.extend(["/".to_owned(), "tree:/".to_owned(), "host:*".to_owned()]);

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let gen_profile = |rng: &mut Rng| {
        if rng.below(8) == 0 {
            // Acknowledged Unconfined: everything Allow but command; roots Allow.
            let mut c = ProfileConfig { command: rng.access(), ..unconfined(&w) };
            for p in &dir_paths {
                if rng.below(3) == 0 {
                    c.additional_roots.push(root(p, Allow, Allow));
                }
            }
            return new(c);
        }
        let mut c = config(&w);
        for i in 0..6 {
            set_field(&mut c, i, rng.access());
        }
        c.home = if rng.below(2) == 0 { Home::IsolatedHome } else { Home::RealHome };
        for p in &dir_paths {
            if rng.below(3) == 0 {
                c.additional_roots.push(root(p, rng.access(), rng.access()));
            }
        }
        new(c)
    };

    let mut unconfined_rounds = 0usize;
    for round in 0..300 {
        let base = gen_profile(&mut rng);
        let ceiling = gen_profile(&mut rng);
        let r = restricted(&base, &ceiling);
        // Commutative.
        assert_eq!(restricted(&ceiling, &base), r, "round {round}");
        // Every answer is the minimum of both inputs' answers.
        for q in &queries {
            for kind in ["filesystem.read", "filesystem.write"] {
                let want = base.access_for(kind, q).unwrap().min(ceiling.access_for(kind, q).unwrap());
                assert_eq!(r.access_for(kind, q).unwrap(), want, "round {round}: {kind} {q}");
            }
        }
        for kind in ["network", "command.execute"] {
            let want = base.access_for(kind, "").unwrap().min(ceiling.access_for(kind, "").unwrap());
            assert_eq!(r.access_for(kind, "").unwrap(), want);
        }
        // No kept root is redundant: dropping any one of them changes what its path gets.
        let rc = r.config();
        for (i, kept) in rc.additional_roots.iter().enumerate() {
            let mut without = rc.clone();
            without.additional_roots.remove(i);
            let without = new(without);
            let s = kept.path.display().to_string();
            assert_ne!(rw(&without, &s), (kept.read, kept.write), "round {round}: {s} is redundant");
        }
        // Every kept root comes from one of the inputs.
        for kept in &rc.additional_roots {
            assert!(
                base.config()
                    .additional_roots
                    .iter()
                    .chain(&ceiling.config().additional_roots)
                    .any(|x| x.path == kept.path)
            );
        }
        // Idempotent on its own output, and a lower bound of both inputs.
        assert_eq!(restricted(&r, &r), r, "round {round}");
        assert_eq!(restricted(&r, &base), r, "round {round}");
        assert_eq!(restricted(&ceiling, &r), r, "round {round}");
        assert_eq!(r.required_guarantees(), expected_required(rc));
        // Unconfined (and acknowledged) exactly when both inputs are.
        let both = [&base, &ceiling].iter().all(|p| p.config().isolation == Isolation::Unconfined);
        assert_eq!(rc.isolation == Isolation::Unconfined, both);
        assert_eq!(rc.ack_unconfined, both);
        unconfined_rounds += usize::from(both);
    }
    assert!(unconfined_rounds > 0, "the generator never produced two unconfined inputs");
}

#[cfg(target_os = "linux")]
#[test]
fn non_utf8_roots_sort_by_bytes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let fx = Fx::new();
    let w = fx.dir("w");
    let high = fx.t.join(OsStr::from_bytes(b"\xff\xfe"));
    fs::create_dir(&high).unwrap();
    let z = fx.dir("z");
    let upper = fx.dir("Z");
    let p = new(ProfileConfig {
        additional_roots: vec![root(&high, Deny, Deny), root(&z, Gated, Gated), root(&upper, Allow, Allow)],
        ..config(&w)
    });
    let got: Vec<&Path> = p.config().additional_roots.iter().map(|r| r.path.as_path()).collect();
    assert_eq!(got, vec![upper.as_path(), z.as_path(), high.as_path()]);
    assert_hex64(p.fingerprint());
    assert_eq!(p.fingerprint(), reference_fingerprint(p.config(), p.required_guarantees()));
}

// ---------------------------------------------------------------------------------------------
// Issue 12, classes 1 and 11: root identities, symlinked roots, pinned ancestors, private paths
// ---------------------------------------------------------------------------------------------

#[test]
fn a_root_given_through_a_symlink_is_refused_naming_the_field_and_the_real_path() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let decoy = fx.dir("w/decoy");
    fx.dir("w/decoy/sub");
    let codex = fx.link(&decoy, "w/.codex");
    let w_link = fx.link(&w, "w-link");
    // The link as the last component, in the middle, and `..` taken after a link.
    for (path, real) in [
        (codex.clone(), decoy.clone()),
        (codex.join("sub"), decoy.join("sub")),
        (w_link.join("decoy"), decoy.clone()),
        (codex.join("sub/.."), decoy.clone()),
    ] {
        let c = ProfileConfig {
            additional_roots: vec![root(&decoy.join("sub"), Allow, Allow), root(&path, Allow, Deny)],
            ..all_allow(&w)
        };
        let detail = invalid(Profile::new(c));
        assert!(detail.contains("additional_roots[1].path"), "{detail}");
        assert!(detail.contains("symlink"), "{detail}");
        assert!(detail.contains(&real.display().to_string()), "{detail}");
    }
    // Positive control: the real path, spelled with `.` and `..` that pass no link, is kept.
    let p = new(ProfileConfig {
        additional_roots: vec![root(&decoy.join("sub/.."), Allow, Deny), root(&decoy.join("./sub"), Deny, Deny)],
        ..all_allow(&w)
    });
    assert_eq!(p.config().additional_roots[0].path, decoy);
    // The workspace itself keeps being canonicalized (links above it are the host's layout).
    assert_eq!(new(config(&w_link)).workspace_root(), w.as_path());
}

#[test]
fn a_root_at_a_path_that_is_always_private_inside_is_refused() {
    let fx = Fx::new();
    let w = fx.dir("w");
    for private in ["/tmp", "/dev", "/dev/shm", "/dev/pts", "/proc", "/sys", "/run", "/proc/sys"] {
        if !Path::new(private).is_dir() || fs::canonicalize(private).unwrap() != Path::new(private) {
            continue;
        }
        for (r, wr) in [(Deny, Deny), (Allow, Allow), (Allow, Deny)] {
            let c = ProfileConfig { additional_roots: vec![root(Path::new(private), r, wr)], ..all_allow(&w) };
            let detail = invalid(Profile::new(c));
            assert!(detail.contains("additional_roots[0].path") && detail.contains(private), "{detail}");
        }
    }
    // The same for a workspace the sandbox's own /dev, /dev/shm or procfs would replace.
    for private in ["/dev", "/dev/shm", "/proc", "/proc/sys"] {
        if Path::new(private).is_dir() && fs::canonicalize(private).unwrap() == Path::new(private) {
            invalid_naming(Profile::new(all_allow(Path::new(private))), "workspace_root");
        }
    }
    // Positive control: a root under /tmp (this fixture lives there) is honoured as before.
    let under_tmp = fx.dir("under-tmp");
    assert!(under_tmp.starts_with("/tmp") || std::env::temp_dir() != Path::new("/tmp"));
    let p = new(ProfileConfig { additional_roots: vec![root(&under_tmp, Deny, Deny)], ..all_allow(&w) });
    assert_eq!(p.config().additional_roots[0].path, under_tmp);
}

/// A root exchanged with a decoy in a loop (`renameat2(RENAME_EXCHANGE)`, as another process
/// with write access to the workspace could) while profiles are made: every profile made records
/// the root's inode and its name's entry from the same moment, so the container init's check of
/// a mask (tied to the entry) cannot pass a mask that landed on the decoy. Read lookup first, a
/// profile made in the middle of a rename recorded the root with the decoy's entry.
#[test]
#[cfg(target_os = "linux")]
fn a_root_swapped_while_profiles_are_made_is_recorded_as_one_object() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let fx = Fx::new();
    let w = fx.dir("w");
    let (a, b) = (fx.dir("w/a"), fx.dir("w/b"));
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        let x = std::ffi::CString::new(a.to_str().unwrap()).unwrap();
        let y = std::ffi::CString::new(b.to_str().unwrap()).unwrap();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: both paths are NUL-terminated and alive for the call.
                let rc = unsafe {
                    libc::renameat2(libc::AT_FDCWD, x.as_ptr(), libc::AT_FDCWD, y.as_ptr(), libc::RENAME_EXCHANGE)
                };
                assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let config = ProfileConfig { additional_roots: vec![root(&a, Deny, Deny)], ..all_allow(&w) };
    let (mut made, mut mismatched, mut refused) = (0u64, 0u64, 0u64);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while std::time::Instant::now() < end {
        match Profile::new(config.clone()) {
            Ok(p) => {
                made += 1;
                let i = p.identities().iter().find(|i| i.path == a).unwrap();
                if i.entry_ino != Some(i.ino) {
                    mismatched += 1;
                }
            }
            Err(Error::InvalidProfile { detail }) => {
                assert!(detail.contains("additional_roots[0].path"), "{detail}");
                refused += 1;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    println!("{made} profiles made, {mismatched} mismatched, {refused} refused, {swaps} swaps");
    // Positive controls: the swaps ran, and profiles were made between them.
    assert!(swaps > 1000 && made > 50, "{swaps} swaps, {made} profiles");
    assert_eq!(mismatched, 0, "{mismatched} of {made} profiles recorded the root with another entry");
}

#[test]
fn identities_record_every_area_and_pin_the_ancestors_up_to_the_enclosing_writable_area() {
    use std::os::unix::fs::MetadataExt;
    let fx = Fx::new();
    let w = fx.dir("w");
    let secrets = fx.dir("w/cfg/deep/secrets");
    let hooks = fx.dir("w/.git/hooks");
    let ro = fx.dir("w/ro");
    let inner = fx.dir("w/ro/x/inner");
    let outside = fx.dir("o/p/q");
    let c = ProfileConfig {
        additional_roots: vec![
            root(&secrets, Deny, Deny),
            root(&hooks, Allow, Deny),
            root(&ro, Allow, Deny),
            root(&inner, Deny, Deny),
            root(&outside, Deny, Deny),
        ],
        ..all_allow(&w)
    };
    let p = new(c.clone());
    let pins: Vec<PathBuf> = p.pins().map(Path::to_path_buf).collect();
    // Up to the writable workspace (exclusive), not inside the read-only root; nothing outside
    // the areas although the host is writable (all_allow): the fixture lies under /tmp, which
    // the sandbox never binds from the host.
    let mut got = pins.clone();
    got.sort();
    assert_eq!(got, vec![w.join(".git"), w.join("cfg"), w.join("cfg/deep")]);
    assert!(!pins.contains(&ro.join("x")), "no pin inside a read-only root");
    for i in p.identities() {
        let m = fs::metadata(&i.path).unwrap();
        assert_eq!((i.dev, i.ino), (m.dev(), m.ino()), "{}", i.path.display());
        if i.role == IdentityRole::Root {
            let parent = fs::metadata(i.path.parent().unwrap()).unwrap();
            assert_eq!(i.parent, Some((parent.dev(), parent.ino())));
            assert_eq!(i.entry_ino, Some(m.ino()));
        }
    }
    assert_eq!(p.identities().iter().filter(|i| i.role == IdentityRole::Root).count(), 5);
    assert_eq!(p.identities()[0].role, IdentityRole::Workspace);

    // Host not writable: nothing outside the areas is pinned; a read-only workspace pins nothing.
    let q = new(ProfileConfig { host_write: Deny, ..c.clone() });
    let mut got: Vec<PathBuf> = q.pins().map(Path::to_path_buf).collect();
    got.sort();
    assert_eq!(got, vec![w.join(".git"), w.join("cfg"), w.join("cfg/deep")]);
    let r = new(ProfileConfig { host_write: Deny, workspace_write: Deny, ..c.clone() });
    assert_eq!(r.pins().count(), 0);
    // Identities are not authority: the fingerprint ignores them.
    let moved = fx.dir("w/cfg2");
    fs::remove_dir(&moved).unwrap();
    fs::rename(w.join("cfg"), &moved).unwrap();
    fs::create_dir_all(&secrets).unwrap();
    let again = new(c);
    assert_eq!(again.fingerprint(), p.fingerprint());
    assert_eq!(again, p);
    assert_ne!(again.identities(), p.identities());

    // Under a bound host entry with the host writable, ancestors are pinned up to the top-level
    // entry (exclusive); with host write deny, none.
    let var = tempfile::Builder::new().prefix("pins").tempdir_in("/var/tmp").unwrap();
    let v = fs::canonicalize(var.path()).unwrap();
    fs::create_dir_all(v.join("ws/a/b")).unwrap();
    let c = ProfileConfig { additional_roots: vec![root(&v.join("ws/a/b"), Deny, Deny)], ..all_allow(&v.join("ws")) };
    let mut got: Vec<PathBuf> = new(c.clone()).pins().map(Path::to_path_buf).collect();
    got.sort();
    let mut want = vec![v.join("ws/a"), PathBuf::from("/var/tmp"), v.clone()];
    want.sort();
    assert_eq!(got, want);
    let got: Vec<PathBuf> = new(ProfileConfig { host_write: Deny, ..c }).pins().map(Path::to_path_buf).collect();
    assert_eq!(got, vec![v.join("ws/a")]);

    // A workspace at `/`: its nested roots are pinned up to the top-level entries, but never
    // under the entries the sandbox does not bind from the host (/tmp here).
    let c = ProfileConfig {
        additional_roots: vec![root(&v.join("ws/a/b"), Deny, Deny), root(&secrets, Deny, Deny)],
        ..all_allow(Path::new("/"))
    };
    let pins: Vec<PathBuf> = new(c).pins().map(Path::to_path_buf).collect();
    assert!(pins.contains(&v.join("ws/a")) && pins.contains(&PathBuf::from("/var/tmp")), "{pins:?}");
    assert!(!pins.iter().any(|p| p.starts_with("/tmp") || p == Path::new("/var")), "{pins:?}");
}

/// Issue 14: `protected_paths` in JSON (every key optional, errors name the key), in the
/// fingerprint (the default keeps old fingerprints; a change makes a new one), in `settings`,
/// and `restrict` never drops an entry either side keeps.
#[test]
fn protected_paths_decode_fingerprint_and_restrict_keeps_every_entry() {
    let fx = Fx::new();
    let w = fx.dir("w");
    let json = |extra: &str| {
        format!(r#"{{"workspace_root": {:?}, "workspace_write": "allow"{extra}}}"#, w.display().to_string())
    };
    let default = new(ProfileConfig::from_json(&json("")).unwrap());
    let explicit = new(ProfileConfig::from_json(&json(r#", "protected_paths": {"defaults": "protect-v1"}"#)).unwrap());
    assert_eq!(default.fingerprint(), explicit.fingerprint());
    assert_eq!(default.settings().protect_version, "protect-v1");
    assert!(default.settings().protected_paths.contains(&String::from(".git/hooks")));
    let off = new(ProfileConfig::from_json(&json(r#", "protected_paths": {"defaults": "none"}"#)).unwrap());
    assert_ne!(off.fingerprint(), default.fingerprint());
    assert!(off.settings().protected_paths.is_empty());
    let extra =
        new(ProfileConfig::from_json(&json(r#", "protected_paths": {"extra": ["Makefile"], "except": [".idea"]}"#))
            .unwrap());
    assert_ne!(extra.fingerprint(), default.fingerprint());
    assert!(extra.settings().protected_paths.contains(&String::from("Makefile")));
    assert!(!extra.settings().protected_paths.contains(&String::from(".idea")));
    for (bad, field) in [
        (r#", "protected_paths": {"defaults": "v2"}"#, "protected_paths.defaults"),
        (r#", "protected_paths": {"extra": ["/abs"]}"#, "protected_paths.extra[0]"),
        (r#", "protected_paths": {"extra": ["a/../b"]}"#, "protected_paths.extra[0]"),
        (r#", "protected_paths": {"except": [".nope"]}"#, "protected_paths.except[0]"),
        (r#", "protected_paths": {"defaults": "none", "except": [".idea"]}"#, "protected_paths.except[0]"),
        (r#", "protected_paths": {"other": 1}"#, "protected_paths.other"),
        (r#", "protected_paths": []"#, "protected_paths"),
    ] {
        let made = ProfileConfig::from_json(&json(bad)).and_then(Profile::new);
        let e = made.map(|_| ()).unwrap_err().to_string();
        assert!(e.contains(field), "{bad}: {e}");
    }
    // restrict keeps every entry either side keeps, whichever side opted out.
    for (a, b) in [(&off, &default), (&default, &off), (&extra, &off)] {
        let r = restricted(a, b);
        let entries = r.settings().protected_paths;
        for e in a.settings().protected_paths.iter().chain(&b.settings().protected_paths) {
            assert!(entries.contains(e), "{e} dropped");
        }
    }
}
