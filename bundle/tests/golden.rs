//! Golden (snapshot) tests of the generated `config.json` for many profile shapes.
//!
//! A change in the compiler's output is a visible diff of `tests/golden/*.json` in review.
//! Regenerate with `UPDATE_GOLDEN=1 cargo test -p sandbox-bundle --test golden` and review the
//! diff as a boundary change. Paths under the test's temporary directory print as `$T`, and the
//! fingerprint (which covers those paths) as `<fingerprint>`. The device and inode numbers of the
//! `sandbox.identities` annotation (host facts) print as 0; which mounts are checked stays visible.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::tests_outside_test_module)]

use std::fs;
use std::path::{Path, PathBuf};

use sandbox_bundle::*;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::Builder::new().prefix("golden").tempdir_in("/var/tmp").unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        for d in [
            "ws/sub",
            "ws/secret",
            "ws/cfg/secrets",
            "ws/.git/hooks",
            "data",
            "scratch/sandbox-executors-x/home-a",
            "scratch/sandbox-executors-x/tmp-a",
        ] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        Fixture { _dir: dir, root }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn config(&self) -> ProfileConfig {
        ProfileConfig {
            workspace_root: self.p("ws"),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            host_read: Access::Allow,
            host_write: Access::Deny,
            network: Access::Deny,
            command: Access::Allow,
            ..ProfileConfig::default()
        }
    }

    fn spawn(&self) -> SpawnContext {
        SpawnContext {
            argv: vec!["/bin/sh".into(), "-c".into(), "echo confined".into()],
            cwd: self.p("ws"),
            env: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("HOME".into(), self.p("scratch/sandbox-executors-x/home-a").display().to_string()),
                ("TMPDIR".into(), self.p("scratch/sandbox-executors-x/tmp-a").display().to_string()),
            ],
            tty: false,
            home_dir: Some(self.p("scratch/sandbox-executors-x/home-a")),
            temp_dir: self.p("scratch/sandbox-executors-x/tmp-a"),
            scratch_root: self.p("scratch"),
            other_scratch_roots: Vec::new(),
            uid: 0,
            gid: 0,
            landlock: false,
            egress_route: false,
            launch: Launch::Export,
            grants: GrantDeltas::default(),
            protected: Default::default(),
        }
    }
}

fn host() -> HostView {
    let dir = |n: &str| HostEntry { name: n.into(), kind: EntryKind::Dir };
    let link = |n: &str, t: &str| HostEntry { name: n.into(), kind: EntryKind::Symlink(t.into()) };
    let closure_dir = |p: &str| ClosureEntry { path: p.into(), kind: EntryKind::Dir, resolved: None };
    let closure_file = |p: &str| ClosureEntry { path: p.into(), kind: EntryKind::File, resolved: None };
    let closure_link = |p: &str, t: &str, is_dir: bool| ClosureEntry {
        path: p.into(),
        kind: EntryKind::Symlink(t.into()),
        resolved: Some((t.into(), is_dir)),
    };
    HostView {
        entries: vec![
            link("bin", "usr/bin"),
            dir("dev"),
            dir("etc"),
            dir("home"),
            link("lib", "usr/lib"),
            link("lib64", "usr/lib64"),
            dir("opt"),
            dir("proc"),
            dir("root"),
            dir("run"),
            link("sbin", "usr/sbin"),
            dir("srv"),
            dir("sys"),
            dir("tmp"),
            dir("usr"),
            dir("var"),
        ],
        closure: vec![
            closure_link("/bin", "/usr/bin", true),
            closure_link("/sbin", "/usr/sbin", true),
            closure_link("/lib", "/usr/lib", true),
            closure_link("/lib64", "/usr/lib64", true),
            closure_dir("/usr"),
            closure_dir("/etc/ssl"),
            closure_dir("/opt"),
            closure_file("/etc/ld.so.cache"),
            closure_file("/etc/hosts"),
            closure_link("/etc/resolv.conf", "/run/systemd/resolve/stub-resolv.conf", false),
            closure_file("/etc/passwd"),
            closure_file("/etc/group"),
        ],
        var_run_is_dir: false,
        mounts: Vec::new(),
        kernel_mounts: Vec::new(),
    }
}

fn check(name: &str, f: &Fixture, config: ProfileConfig, spawn: SpawnContext) {
    check_with_host(name, f, config, spawn, &host());
}

fn check_with_host(name: &str, f: &Fixture, config: ProfileConfig, spawn: SpawnContext, host: &HostView) {
    let profile = Profile::new(config).unwrap();
    let mut bundle = compile(&profile, &spawn, host).unwrap();
    if let Some(a) = bundle.spec.annotations().clone() {
        let mut a = a;
        let mut expected: Vec<ExpectedMount> = serde_json::from_str(&a["sandbox.identities"]).unwrap();
        for e in &mut expected {
            (e.dev, e.ino) = (0, 0);
            e.parent = e.parent.map(|_| (0, 0));
            e.entry_ino = e.entry_ino.map(|_| 0);
        }
        a.insert("sandbox.identities".into(), serde_json::to_string(&expected).unwrap());
        bundle.spec.set_annotations(Some(a));
    }
    let json = spec_json(&bundle.spec)
        .unwrap()
        .replace(&f.root.display().to_string(), "$T")
        .replace(profile.fingerprint(), "<fingerprint>")
        .replace(sandbox_bundle::seccomp::native_arch(), "<native-arch>")
        + "\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.json"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        fs::write(&path, &json).unwrap();
        return;
    }
    let want = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1 to create it)", path.display()));
    if want != json {
        let got = path.with_extension("actual.json");
        fs::write(&got, &json).unwrap();
        panic!("{name}: config.json differs from {}; actual output written to {}", path.display(), got.display());
    }
    // Every golden bundle is also a valid bundle by the report invariants.
    let level = Level::Degraded;
    check_invariants(level, bundle.standard_guarantees, Some(Isolation::Sandboxed), Some(&bundle.standard_report))
        .unwrap();
}

#[test]
fn host_read_allow_workspace_rw_network_deny_rootful_export() {
    let f = Fixture::new();
    check("default-cli", &f, f.config(), f.spawn());
}

#[test]
fn host_read_deny() {
    let f = Fixture::new();
    check("host-read-deny", &f, ProfileConfig { host_read: Access::Deny, ..f.config() }, f.spawn());
}

#[test]
fn workspace_read_only() {
    let f = Fixture::new();
    check("workspace-ro", &f, ProfileConfig { workspace_write: Access::Deny, ..f.config() }, f.spawn());
}

#[test]
fn workspace_denied() {
    let f = Fixture::new();
    let config = ProfileConfig { workspace_read: Access::Deny, workspace_write: Access::Gated, ..f.config() };
    check("workspace-deny", &f, config, f.spawn());
}

#[test]
fn network_allow_host_read_deny() {
    let f = Fixture::new();
    let config = ProfileConfig { network: Access::Allow, host_read: Access::Deny, ..f.config() };
    check("network-allow", &f, config, f.spawn());
}

#[test]
fn roots_nested_in_the_workspace_and_outside() {
    let f = Fixture::new();
    let config = ProfileConfig {
        host_read: Access::Deny,
        additional_roots: vec![
            RootAccess { path: f.p("ws/secret"), read: Access::Deny, write: Access::Deny },
            RootAccess { path: f.p("ws/sub"), read: Access::Allow, write: Access::Deny },
            RootAccess { path: f.p("data"), read: Access::Allow, write: Access::Gated },
        ],
        ..f.config()
    };
    check("nested-roots", &f, config, f.spawn());
}

/// Host read denied, a deny root and a read-only root nested two levels down in the workspace.
fn nested_roots(f: &Fixture) -> ProfileConfig {
    ProfileConfig {
        host_read: Access::Deny,
        additional_roots: vec![
            RootAccess { path: f.p("ws/cfg/secrets"), read: Access::Deny, write: Access::Deny },
            RootAccess { path: f.p("ws/.git/hooks"), read: Access::Allow, write: Access::Deny },
        ],
        ..f.config()
    }
}

#[test]
fn deeply_nested_roots_pin_their_ancestors() {
    let f = Fixture::new();
    check("nested-roots-pinned", &f, nested_roots(&f), f.spawn());
}

#[test]
fn real_home() {
    let f = Fixture::new();
    let mut spawn = f.spawn();
    spawn.home_dir = None;
    spawn.env[1].1 = "/root".into();
    check("real-home", &f, ProfileConfig { home: Home::RealHome, ..f.config() }, spawn);
}

#[test]
fn host_read_and_write_allow() {
    let f = Fixture::new();
    let config = ProfileConfig { host_write: Access::Allow, ..f.config() };
    check("host-rw", &f, config, f.spawn());
}

#[test]
fn rootless_embedded_with_limits_and_landlock_write_only_workspace() {
    let f = Fixture::new();
    let mut spawn = f.spawn();
    spawn.uid = 1000;
    spawn.gid = 1000;
    spawn.landlock = true;
    spawn.launch = Launch::Embedded {
        cgroups_path: Some("/sandbox/sbx-1".into()),
        pids_max: Some(4096),
        memory_max: Some(512 * 1024 * 1024),
        nproc: None,
    };
    let config = ProfileConfig { workspace_read: Access::Gated, host_read: Access::Deny, ..f.config() };
    check("rootless-limits-write-only", &f, config, spawn);
}

#[test]
fn rootless_embedded_without_cgroup_or_landlock() {
    let f = Fixture::new();
    let mut spawn = f.spawn();
    spawn.uid = 1000;
    spawn.gid = 1000;
    spawn.launch = Launch::Embedded { cgroups_path: None, pids_max: None, memory_max: None, nproc: Some(4096) };
    let config = ProfileConfig { workspace_read: Access::Gated, host_read: Access::Deny, ..f.config() };
    check("rootless-no-limits", &f, config, spawn);
}

#[test]
fn broad_network_grant_and_tree_write_grant() {
    let f = Fixture::new();
    let mut spawn = f.spawn();
    spawn.landlock = true;
    spawn.grants = GrantDeltas { write_trees: vec![f.p("ws/sub")], broad_port: Some(443), ..GrantDeltas::default() };
    spawn.env.push(("RES_OPTIONS".into(), "use-vc".into()));
    let config = ProfileConfig { workspace_write: Access::Gated, network: Access::Gated, ..f.config() };
    check("broad-grant", &f, config, spawn);
}

#[test]
fn workspace_at_the_root_is_carried_by_host_entries() {
    let f = Fixture::new();
    let config = ProfileConfig { workspace_root: "/".into(), host_read: Access::Deny, ..f.config() };
    check("workspace-slash", &f, config, f.spawn());
}

#[test]
fn a_deny_root_at_the_root_hides_every_host_entry() {
    let f = Fixture::new();
    let config = ProfileConfig {
        additional_roots: vec![RootAccess { path: "/".into(), read: Access::Deny, write: Access::Deny }],
        ..f.config()
    };
    check("root-slash-deny", &f, config, f.spawn());
}

#[test]
fn a_real_var_run_directory_is_masked() {
    let f = Fixture::new();
    let mut host = host();
    host.var_run_is_dir = true;
    check_with_host("var-run-dir", &f, f.config(), f.spawn(), &host);
}

#[test]
fn a_root_the_sandbox_replaces_with_its_own_mount_is_reported_narrowed() {
    let f = Fixture::new();
    for (root, what) in [
        (f.p("scratch"), "scratch root"),
        (f.p("scratch/sandbox-executors-x/tmp-a"), "TMPDIR"),
        (f.p("scratch/sandbox-executors-x/home-a"), "HOME"),
    ] {
        let config = ProfileConfig {
            additional_roots: vec![RootAccess { path: root.clone(), read: Access::Deny, write: Access::Deny }],
            ..f.config()
        };
        let profile = Profile::new(config).unwrap();
        let bundle = compile(&profile, &f.spawn(), &host()).unwrap();
        let entry = bundle.policy_entries.iter().find(|e| e.feature == "read-boundary").unwrap();
        assert_eq!(entry.status, Status::Narrowed, "{entry:?}");
        assert!(entry.detail.contains(&root.display().to_string()) && entry.detail.contains(what), "{entry:?}");
    }
    // Positive control: a root elsewhere adds no such reason.
    let config = ProfileConfig {
        additional_roots: vec![RootAccess { path: f.p("data"), read: Access::Deny, write: Access::Deny }],
        ..f.config()
    };
    let bundle = compile(&Profile::new(config).unwrap(), &f.spawn(), &host()).unwrap();
    let entry = bundle.policy_entries.iter().find(|e| e.feature == "read-boundary").unwrap();
    assert!(!entry.detail.contains("inside: the area"), "{entry:?}");
}

#[test]
fn pins_never_open_what_the_host_entries_withhold() {
    let f = Fixture::new();
    let mut spawn = f.spawn();
    spawn.landlock = true;
    let config = ProfileConfig {
        host_write: Access::Allow,
        additional_roots: vec![RootAccess { path: f.p("data"), read: Access::Deny, write: Access::Deny }],
        ..f.config()
    };
    // Host read and write allowed: the ancestors of the workspace and of the root are pinned,
    // read-write like the host entry (/var) that carries them.
    let profile = Profile::new(config.clone()).unwrap();
    let plan = compile(&profile, &spawn, &host()).unwrap().plan;
    for pin in [PathBuf::from("/var/tmp"), f.root.clone()] {
        let m = plan.mounts.iter().find(|m| m.destination == pin).unwrap_or_else(|| panic!("{pin:?} not pinned"));
        assert_eq!(m.kind, MountKind::ReadWrite);
    }
    // Host read gated (no grant): host write is withheld, and so are the pins (never write-only).
    let profile = Profile::new(ProfileConfig { host_read: Access::Gated, ..config }).unwrap();
    let plan = compile(&profile, &spawn, &host()).unwrap().plan;
    assert!(
        !plan.mounts.iter().any(|m| m.destination == Path::new("/var/tmp") || m.destination == f.root),
        "{:?}",
        plan.mounts
    );
}

/// A root that existed when the profile was made and is missing at the spawn's scan (renamed
/// away for a moment) fails the compile, naming it: with no mask planned, its contents would be
/// open at its own name once it is renamed back (an attack on the init's check read a deny root
/// that way). Controls: the same profile compiles with the mask while the root is in place, and a
/// root that did not exist when the profile was made is still left to the creation guard.
#[test]
fn a_recorded_root_missing_at_the_scan_fails_the_compile() {
    let f = Fixture::new();
    let secret = f.p("ws/secret");
    let missing = f.p("ws/never");
    let config = ProfileConfig {
        additional_roots: vec![
            RootAccess { path: secret.clone(), read: Access::Deny, write: Access::Deny },
            RootAccess { path: missing.clone(), read: Access::Deny, write: Access::Deny },
        ],
        ..f.config()
    };
    let profile = Profile::new(config).unwrap();
    let scanned = |profile: &Profile| SpawnContext { protected: protect::scan(profile, None), ..f.spawn() };
    let plan = compile(&profile, &scanned(&profile), &host()).unwrap().plan;
    assert!(plan.mounts.iter().any(|m| m.destination == secret && m.kind == MountKind::Mask), "{:?}", plan.mounts);
    assert!(!plan.mounts.iter().any(|m| m.destination == missing), "{:?}", plan.mounts);
    fs::rename(&secret, f.p("ws/aside")).unwrap();
    let spawn = scanned(&profile);
    fs::rename(f.p("ws/aside"), &secret).unwrap();
    match compile(&profile, &spawn, &host()) {
        Err(Error::InvalidProfile { detail }) => {
            assert!(detail.contains("additional_roots") && detail.contains(&secret.display().to_string()), "{detail}")
        }
        Ok(b) => panic!("compiled without the missing root's mask: {:?}", b.plan.mounts),
        Err(e) => panic!("{e:?}"),
    }
}

/// For the embedded runtime, a bind nested in a writable bind (the pins of `ws/cfg` and
/// `ws/.git`) is made through the root after what it holds: the mask and the read-only root are
/// mounted first onto the workspace's bind, and the pin then copies them (`rootfs/…`, made
/// absolute under the skeleton by `write_bundle_on`). So a protected directory moved by the host
/// to another parent during a run stays protected in every mount that shows it (THREAT-MODEL.md,
/// class 1). The export of the same profile (`nested-roots-pinned`) keeps host sources.
#[test]
fn nested_roots_embedded_are_made_through_the_root_after_what_they_hold() {
    let f = Fixture::new();
    let mut spawn = f.spawn();
    spawn.launch = Launch::Embedded { cgroups_path: None, pids_max: None, memory_max: None, nproc: Some(4096) };
    let config = nested_roots(&f);
    check("nested-roots-embedded", &f, config.clone(), spawn.clone());
    let bundle = compile(&Profile::new(config).unwrap(), &spawn, &host()).unwrap();
    let mounts = bundle.spec.mounts().clone().unwrap();
    let at = |p: PathBuf| mounts.iter().position(|m| *m.destination() == p).unwrap();
    let source = |i: usize| mounts[i].source().clone().unwrap();
    let inside = |rel: &str| Path::new("rootfs").join(f.p(rel).strip_prefix("/").unwrap());
    let (ws, mask, cfg, hooks, git) =
        (at(f.p("ws")), at(f.p("ws/cfg/secrets")), at(f.p("ws/cfg")), at(f.p("ws/.git/hooks")), at(f.p("ws/.git")));
    assert!(ws < mask && mask < cfg && ws < hooks && hooks < git, "{mounts:#?}");
    assert_eq!(source(cfg), inside("ws/cfg"));
    assert_eq!(source(git), inside("ws/.git"));
    assert!(mounts[cfg].options().as_ref().unwrap().iter().any(|o| o == "rbind"));
    // Not inside another bind (host read is denied), or holding nothing: host sources.
    assert_eq!(source(ws), f.p("ws"));
    assert_eq!(source(hooks), f.p("ws/.git/hooks"));
    // Written on a skeleton, the source is absolute under it.
    let out = tempfile::tempdir().unwrap();
    write_bundle_on(&bundle, &out.path().join("b"), Path::new("/skeleton")).unwrap();
    let written: serde_json::Value =
        serde_json::from_slice(&fs::read(out.path().join("b/config.json")).unwrap()).unwrap();
    let sources: Vec<&str> =
        written["mounts"].as_array().unwrap().iter().filter_map(|m| m["source"].as_str()).collect();
    let want = Path::new("/skeleton").join(f.p("ws/cfg").strip_prefix("/").unwrap());
    assert!(sources.contains(&want.to_str().unwrap()), "{sources:?}");
    assert!(!sources.iter().any(|s| s.starts_with("rootfs")), "{sources:?}");
}

/// The rights a bundle's Landlock rules grant at `p`: the union of every rule at `p` or above.
fn rights_at(bundle: &Bundle, p: &Path) -> Vec<&'static str> {
    let mut rights: Vec<&'static str> =
        bundle.landlock.fs.iter().filter(|r| p.starts_with(&r.path)).flat_map(|r| r.access.iter().copied()).collect();
    rights.sort_unstable();
    rights.dedup();
    rights
}

fn landlock_bundle(f: &Fixture, config: ProfileConfig) -> Bundle {
    let mut spawn = f.spawn();
    spawn.landlock = true;
    spawn.launch = Launch::Embedded { cgroups_path: None, pids_max: None, memory_max: None, nproc: None };
    compile(&Profile::new(config).unwrap(), &spawn, &host()).unwrap()
}

/// With unix sockets denied no rule grants `make_sock` (a stream socketpair's end bound to a
/// path would make a socket inode, at a protected name too); a profile or network that opens
/// unix sockets keeps it in the writable areas.
#[test]
fn make_sock_only_where_unix_sockets_are_open() {
    let f = Fixture::new();
    let ws = f.p("ws");
    let cases =
        [(Access::Deny, Access::Deny, false), (Access::Allow, Access::Deny, true), (Access::Deny, Access::Allow, true)];
    for (unix_sockets, network, open) in cases {
        let b = landlock_bundle(&f, ProfileConfig { unix_sockets, network, ..f.config() });
        assert!(b.landlock.fs.iter().all(|r| open || !r.access.contains(&"make_sock")), "{:?}", b.landlock);
        assert_eq!(rights_at(&b, &ws).contains(&"make_sock"), open, "{unix_sockets:?} {network:?}");
        assert!(rights_at(&b, &ws).contains(&"make_fifo") && rights_at(&b, &ws).contains(&"make_reg"));
    }
}

/// `/` is listable (as under a standard runtime) when nothing's listing must be withheld; with a
/// write-only area, neither `/` nor any mount above the area grants `read_dir` (or `read_file`),
/// while a mask beside it still lists its stubs.
#[test]
fn listing_is_granted_above_no_write_only_area() {
    let f = Fixture::new();
    let b = landlock_bundle(&f, f.config());
    assert!(rights_at(&b, Path::new("/")).contains(&"read_dir"), "{:?}", b.landlock);
    assert!(rights_at(&b, Path::new("/dev")).contains(&"read_dir"));
    let b = landlock_bundle(&f, ProfileConfig { host_read: Access::Deny, ..f.config() });
    assert!(rights_at(&b, Path::new("/etc")).contains(&"read_dir"), "{:?}", b.landlock);

    let b = landlock_bundle(&f, ProfileConfig { workspace_read: Access::Gated, host_read: Access::Deny, ..f.config() });
    let ws = f.p("ws");
    assert!(b.plan.mounts.iter().any(|m| m.destination == ws && m.kind == MountKind::WriteOnly), "{:?}", b.plan);
    for p in [Path::new("/"), ws.parent().unwrap(), ws.as_path(), &ws.join("sub")] {
        let rights = rights_at(&b, p);
        assert!(!rights.contains(&"read_dir") && !rights.contains(&"read_file"), "{}: {rights:?}", p.display());
    }
    assert!(rights_at(&b, &ws).contains(&"write_file"));
    assert!(rights_at(&b, Path::new("/etc")).contains(&"read_dir"), "{:?}", b.landlock);
    assert!(rights_at(&b, Path::new("/dev")).contains(&"read_dir"), "{:?}", b.landlock);
}

/// Copies below each layer multiply with the depth of nested layers (a read-only root holding a
/// writable root, in turn, many levels down): a profile nested so deep that a spawn would pass
/// the bound of mounts is refused naming `additional_roots`, quickly. Control: a few levels
/// compile.
#[test]
fn roots_nested_too_deep_for_the_mounts_are_refused() {
    let f = Fixture::new();
    let mut spawn = f.spawn();
    spawn.launch = Launch::Embedded { cgroups_path: None, pids_max: None, memory_max: None, nproc: Some(4096) };
    let chain = |levels: usize| {
        let mut roots = Vec::new();
        let mut path = f.p("ws");
        for level in 0..levels {
            path = path.join(format!("l{level}"));
            fs::create_dir_all(&path).unwrap();
            let write = if level % 2 == 0 { Access::Deny } else { Access::Allow };
            roots.push(RootAccess { path: path.clone(), read: Access::Allow, write });
        }
        ProfileConfig { host_read: Access::Deny, additional_roots: roots, ..f.config() }
    };
    let start = std::time::Instant::now();
    let few = compile(&Profile::new(chain(4)).unwrap(), &spawn, &host());
    assert!(few.is_ok(), "{:?}", few.err());
    match compile(&Profile::new(chain(36)).unwrap(), &spawn, &host()) {
        Err(Error::InvalidProfile { detail }) => {
            assert!(detail.starts_with("additional_roots: nested so deep"), "{detail}")
        }
        other => panic!("{:?}", other.map(|b| b.plan.mounts.len())),
    }
    assert!(start.elapsed() < std::time::Duration::from_secs(30), "{:?}", start.elapsed());
}

/// A file root is guarded at every host alias like a directory root (THREAT-MODEL.md, class 1):
/// with the workspace bound again at `/srv/alias`, a denied file root gets the unreadable
/// placeholder at `/srv/alias/...` too, next to the denied directory's mask there. Before, only
/// directory roots were collected for aliases, so the key was read through the alias.
#[test]
fn a_denied_file_root_is_covered_at_a_host_alias_like_a_denied_directory() {
    let f = Fixture::new();
    fs::create_dir_all(f.p("ws/.ssh")).unwrap();
    fs::write(f.p("ws/.ssh/id"), "KEY\n").unwrap();
    fs::write(f.p("ws/.ssh/id.pub"), "PUB\n").unwrap();
    fs::write(f.p("ws/.ssh/log"), "LOG\n").unwrap();
    let config = ProfileConfig {
        additional_roots: vec![
            RootAccess { path: f.p("ws/.ssh/id"), read: Access::Deny, write: Access::Deny },
            RootAccess { path: f.p("ws/.ssh/log"), read: Access::Deny, write: Access::Allow },
            RootAccess { path: f.p("ws/secret"), read: Access::Deny, write: Access::Deny },
        ],
        ..f.config()
    };
    let profile = Profile::new(config).unwrap();
    let spawn = SpawnContext { protected: protect::scan(&profile, None), ..f.spawn() };
    let mount = |root: &Path, at: &str| host::HostMount {
        device: String::from("254:0"),
        root: root.to_path_buf(),
        mount_point: PathBuf::from(at),
    };
    let host = HostView { mounts: vec![mount(Path::new("/"), "/"), mount(&f.p("ws"), "/srv/alias")], ..host() };
    let plan = compile(&profile, &spawn, &host).unwrap().plan;
    let at = |p: &Path| plan.mounts.iter().find(|m| m.destination == p && !m.below);
    let own = at(&f.p("ws/.ssh/id")).unwrap_or_else(|| panic!("no cover at the root: {:#?}", plan.mounts));
    let alias = Path::new("/srv/alias/.ssh/id");
    let cover = at(alias).unwrap_or_else(|| panic!("no cover at the alias: {:#?}", plan.mounts));
    assert!(cover.file && cover.kind == MountKind::ReadOnly, "{cover:?}");
    assert_eq!(cover.source, own.source, "the alias is covered by the root's own placeholder");
    assert_ne!(cover.source.as_deref(), Some(alias), "{cover:?}");
    // A write-only file root is denied (narrowed), at its alias too; with and without Landlock.
    for landlock in [false, true] {
        let spawn = SpawnContext { landlock, protected: protect::scan(&profile, None), ..f.spawn() };
        let plan = compile(&profile, &spawn, &host).unwrap().plan;
        let cover = plan.mounts.iter().find(|m| m.destination == Path::new("/srv/alias/.ssh/log") && !m.below);
        let cover = cover.unwrap_or_else(|| panic!("landlock {landlock}: no cover: {:#?}", plan.mounts));
        assert!(cover.file && cover.kind == MountKind::ReadOnly && cover.source == own.source, "{cover:?}");
    }
    let dir = at(Path::new("/srv/alias/secret")).unwrap_or_else(|| panic!("{:#?}", plan.mounts));
    assert_eq!(dir.kind, MountKind::Mask);
    // The readable file next to it is not covered.
    assert!(at(Path::new("/srv/alias/.ssh/id.pub")).is_none());
}

/// A mount of the kernel's interfaces beneath an area (a chroot's `/sys` and `/dev` bound into
/// the workspace) is masked, one beneath it is hidden with it, and binds are recursive
/// `nosuid`/`nodev` so that a device node on any filesystem a bind brings along cannot be used
/// (a red team, 5 December). The host's own `/sys`, `/proc` and `/dev` mounts, which the
/// sandbox replaces or withholds, add nothing.
#[test]
fn kernel_mounts_a_bind_brings_along_are_masked() {
    let f = Fixture::new();
    let profile = Profile::new(f.config()).unwrap();
    let spawn = SpawnContext { protected: protect::scan(&profile, None), ..f.spawn() };
    let view = HostView {
        kernel_mounts: vec![
            PathBuf::from("/proc"),
            PathBuf::from("/sys"),
            PathBuf::from("/sys/fs/cgroup/pids"),
            f.p("ws/sub/chroot/sys/fs/cgroup"),
            f.p("ws/sub/chroot/sys"),
            f.p("ws/sub/chroot/dev"),
            PathBuf::from("/dev/mqueue"),
            PathBuf::from("/proc/sys/fs/binfmt_misc"),
            PathBuf::from("/srv/chroot/sys"),
        ],
        ..host()
    };
    let plan = compile(&profile, &spawn, &view).unwrap().plan;
    let masks: Vec<&Path> =
        plan.mounts.iter().filter(|m| m.kind == MountKind::Mask).map(|m| m.destination.as_path()).collect();
    assert!(masks.contains(&f.p("ws/sub/chroot/sys").as_path()), "{masks:?}");
    assert!(masks.contains(&f.p("ws/sub/chroot/dev").as_path()), "{masks:?}");
    assert!(!masks.contains(&f.p("ws/sub/chroot/sys/fs/cgroup").as_path()), "hidden with its parent: {masks:?}");
    // Host read allow binds `/srv`: a kernel mount there is masked too.
    assert!(masks.contains(&Path::new("/srv/chroot/sys")), "{masks:?}");
    for p in ["/proc", "/sys", "/sys/fs/cgroup/pids", "/dev/mqueue", "/proc/sys/fs/binfmt_misc"] {
        assert!(!masks.contains(&Path::new(p)), "{p}: {masks:?}");
    }
    let without = compile(&profile, &spawn, &host()).unwrap().plan;
    assert_eq!(plan.mounts.len(), without.mounts.len() + 3, "three masks more, nothing else");
    let bundle = compile(&profile, &spawn, &view).unwrap();
    let text = serde_json::to_string(&bundle.spec).unwrap();
    assert!(text.contains("\"rnosuid\"") && text.contains("\"rnodev\""));
}
