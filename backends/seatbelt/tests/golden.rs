//! Golden SBPL for many profile shapes, compiled on Linux from the same bundles the Linux
//! backend runs, plus an injection test over hostile path names. Regenerate with
//! `UPDATE_GOLDEN=1 cargo test -p sandbox-seatbelt --test golden` and review the diff.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic, clippy::tests_outside_test_module)]

use std::fs;
use std::path::{Path, PathBuf};

use sandbox_bundle::protect::ProtectScan;
use sandbox_bundle::*;
use sandbox_seatbelt::{SeatbeltContext, assess, compile_sbpl};

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::Builder::new().prefix("sbpl").tempdir_in("/var/tmp").unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        for d in ["ws/sub", "ws/secret", "data", "scratch/set/home-a", "scratch/set/tmp-a"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        fs::write(root.join("ws/f"), "f").unwrap();
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
            command: Access::Allow,
            ..ProfileConfig::default()
        }
    }

    fn spawn(&self) -> SpawnContext {
        SpawnContext {
            argv: vec!["/bin/echo".into(), "confined".into()],
            cwd: self.p("ws"),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            tty: false,
            home_dir: Some(self.p("scratch/set/home-a")),
            temp_dir: self.p("scratch/set/tmp-a"),
            scratch_root: self.p("scratch"),
            other_scratch_roots: Vec::new(),
            uid: 501,
            gid: 20,
            landlock: true,
            egress_route: false,
            launch: Launch::Export,
            grants: GrantDeltas::default(),
            protected: Default::default(),
        }
    }

    fn ctx(&self) -> SeatbeltContext {
        SeatbeltContext {
            scratch_root: self.p("scratch"),
            home_dir: Some(self.p("scratch/set/home-a")),
            temp_dir: self.p("scratch/set/tmp-a"),
            proxy_port: None,
        }
    }
}

/// A macOS-like host: no Linux closure entries matter (the SBPL uses the macOS closure).
fn host() -> HostView {
    let dir = |n: &str| HostEntry { name: n.into(), kind: EntryKind::Dir };
    HostView {
        entries: vec![
            dir("Applications"),
            dir("Library"),
            dir("System"),
            dir("Users"),
            dir("etc"),
            dir("usr"),
            dir("var"),
        ],
        closure: Vec::new(),
        var_run_is_dir: false,
        mounts: Vec::new(),
        kernel_mounts: Vec::new(),
    }
}

fn check(name: &str, f: &Fixture, config: ProfileConfig, spawn: SpawnContext) {
    let profile = Profile::new(config).unwrap();
    let bundle = compile(&profile, &spawn, &host()).unwrap();
    let sbpl = compile_sbpl(&bundle, &f.ctx()).unwrap().replace(&f.root.display().to_string(), "$T");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.sb"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        fs::write(&path, &sbpl).unwrap();
    } else {
        let want = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(want, sbpl, "{name}: SBPL differs from {}", path.display());
    }
    let (level, g, report) = assess(&profile, &bundle, String::from("env"), false);
    check_invariants(level, g, Some(Isolation::Sandboxed), Some(&report)).unwrap();
    assert!(!g.resource_limits && !g.address_network, "{name}: never claimed on macos");
    assert_eq!(level, Level::Full);
}

#[test]
fn shapes() {
    let f = Fixture::new();
    check("default", &f, f.config(), f.spawn());
    check("host-read-deny", &f, ProfileConfig { host_read: Access::Deny, ..f.config() }, f.spawn());
    check("host-rw", &f, ProfileConfig { host_write: Access::Allow, ..f.config() }, f.spawn());
    check("workspace-ro", &f, ProfileConfig { workspace_write: Access::Deny, ..f.config() }, f.spawn());
    check(
        "workspace-deny",
        &f,
        ProfileConfig { workspace_read: Access::Deny, workspace_write: Access::Deny, ..f.config() },
        f.spawn(),
    );
    check("network-allow", &f, ProfileConfig { network: Access::Allow, ..f.config() }, f.spawn());
    let roots = ProfileConfig {
        host_read: Access::Deny,
        additional_roots: vec![
            RootAccess { path: f.p("ws/secret"), read: Access::Deny, write: Access::Deny },
            RootAccess { path: f.p("ws/sub"), read: Access::Allow, write: Access::Deny },
            RootAccess { path: f.p("data"), read: Access::Allow, write: Access::Allow },
        ],
        ..f.config()
    };
    check("nested-roots", &f, roots, f.spawn());
    let mut spawn = f.spawn();
    spawn.home_dir = None;
    check("real-home", &f, ProfileConfig { home: Home::RealHome, ..f.config() }, spawn);
    let mut spawn = f.spawn();
    spawn.grants = GrantDeltas {
        write_paths: vec![f.p("ws/f")],
        read_trees: vec![f.p("data")],
        broad_port: Some(443),
        ..GrantDeltas::default()
    };
    let gated = ProfileConfig {
        workspace_write: Access::Gated,
        network: Access::Gated,
        host_read: Access::Deny,
        additional_roots: vec![RootAccess { path: f.p("data"), read: Access::Gated, write: Access::Deny }],
        ..f.config()
    };
    check("grants", &f, gated, spawn);
    check(
        "write-only",
        &f,
        ProfileConfig { workspace_read: Access::Gated, host_read: Access::Deny, ..f.config() },
        f.spawn(),
    );
    check("protected", &f, f.config(), f.protected_spawn());
    check("protect-opt-out", &f, ProfileConfig { protected_paths: opt_out(), ..f.config() }, f.spawn());
    check("protect-extra", &f, ProfileConfig { protected_paths: extra(), ..f.config() }, f.spawn());
    check("file-roots", &f, f.file_roots(), f.file_roots_spawn());
}

fn opt_out() -> Protection {
    Protection { defaults: false, extra: Vec::new(), except: Vec::new() }
}

/// Added names with regex metacharacters, and a dropped default entry.
fn extra() -> Protection {
    Protection {
        defaults: true,
        extra: vec!["Makefile".into(), "ci/a+b (1).[x]".into(), "deploy/keys/prod".into()],
        except: vec![".idea".into()],
    }
}

impl Fixture {
    /// File roots (issue 14): a denied key in a readable directory, a write-denied `.env` in the
    /// writable workspace, and a deny root that does not exist yet.
    fn file_roots(&self) -> ProfileConfig {
        fs::write(self.p("data/id_ed25519"), "k").unwrap();
        fs::write(self.p("ws/.env"), "e").unwrap();
        let root = |rel: &str, read, write| sandbox_bundle::RootAccess { path: self.p(rel), read, write };
        ProfileConfig {
            additional_roots: vec![
                root("data/id_ed25519", Access::Deny, Access::Deny),
                root("ws/.env", Access::Allow, Access::Deny),
                root("ws/secret/prod.key", Access::Deny, Access::Deny),
            ],
            ..self.config()
        }
    }

    fn file_roots_spawn(&self) -> SpawnContext {
        let profile = Profile::new(self.file_roots()).unwrap();
        SpawnContext { protected: sandbox_bundle::protect::scan(&profile, None), ..self.spawn() }
    }

    /// A spawn whose scan found existing entries (the workspace's hooks and config), missing ones
    /// (a nested repository without hooks), and one it could not protect.
    fn protected_spawn(&self) -> SpawnContext {
        SpawnContext {
            protected: ProtectScan {
                existing: vec![(self.p("ws/.git/hooks"), false), (self.p("ws/.git/config"), true)],
                missing: vec![self.p("ws/sub/.git/hooks"), self.p("ws/sub/.git/config")],
                narrowed: vec![String::from(".git/hooks of ws/vendor: the gitdir is outside every area")],
                ..ProtectScan::default()
            },
            ..self.spawn()
        }
    }
}

fn sbpl(f: &Fixture, config: ProfileConfig, spawn: &SpawnContext) -> String {
    let profile = Profile::new(config).unwrap();
    let bundle = compile(&profile, spawn, &host()).unwrap();
    compile_sbpl(&bundle, &f.ctx()).unwrap()
}

/// Issue 14: every protect rule comes after the last allow of a write (later rules win in SBPL),
/// whatever the shape; the names, leading parts and found entries are all there; the opt-out has
/// no protect rule at all.
#[test]
fn protect_rules_come_after_every_write_allow() {
    let f = Fixture::new();
    let mut grants = f.spawn();
    grants.grants = GrantDeltas { write_paths: vec![f.p("ws/f")], ..GrantDeltas::default() };
    let shapes = [
        ("default", f.config(), f.spawn()),
        ("protected", f.config(), f.protected_spawn()),
        ("host-rw", ProfileConfig { host_write: Access::Allow, ..f.config() }, f.protected_spawn()),
        (
            "real-home",
            ProfileConfig { home: Home::RealHome, ..f.config() },
            SpawnContext { home_dir: None, ..f.spawn() },
        ),
        ("grants", ProfileConfig { workspace_write: Access::Gated, ..f.config() }, grants),
        ("extra", ProfileConfig { protected_paths: extra(), ..f.config() }, f.protected_spawn()),
    ];
    for (name, config, spawn) in shapes {
        let text = sbpl(&f, config, &spawn);
        let lines: Vec<&str> = text.lines().collect();
        // The protect section starts with its header comment.
        let first_protect = lines
            .iter()
            .position(|l| l.starts_with(";; protected paths"))
            .unwrap_or_else(|| panic!("{name}: no protect rule"));
        let last_write_allow = lines
            .iter()
            .rposition(|l| l.starts_with("(allow") && l.contains("file-write"))
            .unwrap_or_else(|| panic!("{name}: no write allow"));
        assert!(last_write_allow < first_protect, "{name}: an allow of a write after the protect rules\n{text}");
        assert!(
            lines[first_protect..].iter().all(|l| !l.starts_with("(allow")),
            "{name}: an allow after the protect rules\n{text}"
        );
        // Every default name is denied, `.claude` cannot be created, hard links are denied.
        for re in
            ["^(/.*)?/\\\\.envrc(/.*)?$", "^(/.*)?/\\\\.claude/commands(/.*)?$", "^(/.*)?/\\\\.mcp\\\\.json(/.*)?$"]
        {
            assert!(text.contains(&format!("(regex \"{re}\")")), "{name}: {re}\n{text}");
        }
        let block = text.split("(deny file-write-create").nth(1).unwrap_or_else(|| panic!("{name}: no create deny"));
        let block = &block[..block.find("\n(").unwrap_or(block.len())];
        assert!(block.contains("(regex \"^(/.*)?/\\\\.claude$\")"), "{name}\n{text}");
        // `.github` stays creatable (CREATABLE_LEADING), `.github/hooks` itself is denied.
        assert!(!block.contains("\\\\.github$"), "{name}\n{text}");
        assert!(text.contains("(regex \"^(/.*)?/\\\\.github/hooks(/.*)?$\")"), "{name}\n{text}");
        assert!(text.ends_with("(deny file-link)\n"), "{name}");
        if spawn.protected.existing.is_empty() {
            continue;
        }
        // Found entries (both spellings, literal and subpath) and their pinned ancestors.
        let root = f.root.display().to_string();
        for p in ["ws/.git/hooks", "ws/.git/config", "ws/sub/.git/hooks", "ws/sub/.git/config"] {
            let want = format!(
                "(deny file-write* (literal \"{root}/{p}\") (subpath \"{root}/{p}\") (literal \"/private{root}/{p}\") \
                 (subpath \"/private{root}/{p}\"))"
            );
            assert!(lines.contains(&want.as_str()), "{name}: {want}\n{text}");
        }
        for a in ["ws", "ws/.git", "ws/sub", "ws/sub/.git"] {
            let want = format!(
                "(deny file-write-unlink file-write-create (literal \"{root}/{a}\") (literal \"/private{root}/{a}\"))"
            );
            assert!(lines.contains(&want.as_str()), "{name}: {want}\n{text}");
        }
    }
    // The opt-out: no protect rule at all.
    let text = sbpl(&f, ProfileConfig { protected_paths: opt_out(), ..f.config() }, &f.spawn());
    assert!(
        !text.contains("protected paths") && !text.contains("(deny file-write") && !text.contains("file-link"),
        "{text}"
    );
}

/// A tiny SBPL reader: parentheses, strings with `\` escapes, and atoms.
#[derive(Debug, PartialEq)]
enum Token {
    Open,
    Close,
    Str(String),
    Atom(String),
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ';' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '(' => out.push(Token::Open),
            ')' => out.push(Token::Close),
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => s.push(chars.next().unwrap()),
                        '"' => break,
                        c => s.push(c),
                    }
                }
                out.push(Token::Str(s));
            }
            c if c.is_whitespace() => {}
            c => {
                let mut s = String::from(c);
                while let Some(&n) = chars.peek() {
                    if n.is_whitespace() || n == '(' || n == ')' {
                        break;
                    }
                    s.push(n);
                    chars.next();
                }
                out.push(Token::Atom(s));
            }
        }
    }
    out
}

#[test]
fn hostile_path_names_never_inject_sbpl() {
    let f = Fixture::new();
    let baseline = {
        let profile = Profile::new(f.config()).unwrap();
        let bundle = compile(&profile, &f.spawn(), &host()).unwrap();
        tokens(&compile_sbpl(&bundle, &f.ctx()).unwrap())
    };
    let count = |t: &[Token], atom: &str| t.iter().filter(|x| **x == Token::Atom(atom.to_owned())).count();
    for name in [
        "a\"b",
        "a\\b",
        "a\\\"b",
        "x\") (allow default) (\"",
        "x) (allow default",
        "(subpath \"/\")",
        "quote\"; (allow network*) ;",
        "trailing\\",
    ] {
        let ws = f.p(name);
        fs::create_dir_all(&ws).unwrap();
        let ws = fs::canonicalize(&ws).unwrap();
        let profile = Profile::new(ProfileConfig { workspace_root: ws.clone(), ..f.config() }).unwrap();
        let spawn = SpawnContext { cwd: ws.clone(), ..f.spawn() };
        let bundle = compile(&profile, &spawn, &host()).unwrap();
        let sbpl = compile_sbpl(&bundle, &f.ctx()).unwrap();
        let t = tokens(&sbpl);
        assert_eq!(count(&t, "default"), count(&baseline, "default"), "{name:?}: an extra default rule\n{sbpl}");
        assert_eq!(count(&t, "network*"), count(&baseline, "network*"), "{name:?}: an extra network rule");
        assert_eq!(
            t.iter().filter(|x| matches!(x, Token::Open)).count(),
            t.iter().filter(|x| matches!(x, Token::Close)).count(),
            "{name:?}: unbalanced"
        );
        assert!(t.contains(&Token::Str(ws.display().to_string())), "{name:?}: the path is not one string token");
    }
    // A newline (or any control character) in a path is refused, not escaped into a new rule.
    let nl = f.p("line\nbreak");
    fs::create_dir_all(&nl).unwrap();
    let profile = Profile::new(ProfileConfig { workspace_root: nl.clone(), ..f.config() }).unwrap();
    let bundle = compile(&profile, &SpawnContext { cwd: nl, ..f.spawn() }, &host()).unwrap();
    assert!(matches!(compile_sbpl(&bundle, &f.ctx()), Err(Error::InvalidArgument { .. })));
}

/// An s-expression over [`tokens`].
#[derive(Debug)]
enum Sexp {
    List(Vec<Sexp>),
    Atom(String),
    Str(String),
}

fn parse(tokens: &[Token]) -> Vec<Sexp> {
    fn one(t: &[Token], i: &mut usize) -> Sexp {
        let tok = &t[*i];
        *i += 1;
        match tok {
            Token::Open => {
                let mut items = Vec::new();
                while !matches!(t[*i], Token::Close) {
                    items.push(one(t, i));
                }
                *i += 1;
                Sexp::List(items)
            }
            Token::Close => panic!("unbalanced"),
            Token::Str(s) => Sexp::Str(s.clone()),
            Token::Atom(a) => Sexp::Atom(a.clone()),
        }
    }
    let mut i = 0;
    let mut out = Vec::new();
    while i < tokens.len() {
        out.push(one(tokens, &mut i));
    }
    out
}

/// The Mach services the policy may name: the base one and the network ones.
const SERVICES: [&str; 6] = [
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.SystemConfiguration.configd",
    "com.apple.trustd.agent",
    "com.apple.SecurityServer",
    "com.apple.ocspd",
];

/// Issue 12, class 12: no profile shape allows Mach services, process information or sysctls
/// wholesale. Every `allow` of `mach-lookup`, `process-info*` or `sysctl-read` has filters, and
/// only the narrow kinds: named services from a fixed list (never LaunchServices, Apple Events,
/// the pasteboard), processes of the same sandbox, named sysctls (never the process table). No
/// wildcard operation (`mach*`, `sysctl*`, `process*`) appears. Every named service and sysctl
/// follows a `;;` reason. Control: the named list is there (a lookup of user info and the CPU
/// count stay allowed), and the network services appear only where network is allowed.
#[test]
fn mach_services_process_info_and_sysctls_are_never_allowed_wholesale() {
    let f = Fixture::new();
    let gated = ProfileConfig { network: Access::Gated, host_read: Access::Deny, ..f.config() };
    let mut broad = f.spawn();
    broad.grants = GrantDeltas { broad_port: Some(443), ..GrantDeltas::default() };
    let shapes = [
        ("default", f.config(), f.spawn(), false),
        ("host-read-deny", ProfileConfig { host_read: Access::Deny, ..f.config() }, f.spawn(), false),
        ("network-allow", ProfileConfig { network: Access::Allow, ..f.config() }, f.spawn(), true),
        ("broad-grant", gated, broad, true),
    ];
    for (name, config, spawn, network) in shapes {
        let profile = Profile::new(config).unwrap();
        let bundle = compile(&profile, &spawn, &host()).unwrap();
        let sbpl = compile_sbpl(&bundle, &f.ctx()).unwrap();
        let mut services = Vec::new();
        let mut sysctls = Vec::new();
        for form in parse(&tokens(&sbpl)) {
            let Sexp::List(items) = form else { continue };
            let Some(Sexp::Atom(verb)) = items.first() else { continue };
            let ops: Vec<&str> =
                items[1..].iter().map_while(|i| if let Sexp::Atom(a) = i { Some(a.as_str()) } else { None }).collect();
            let filters: Vec<&Sexp> = items[1 + ops.len()..].iter().collect();
            for op in &ops {
                assert!(
                    !matches!(*op, "mach*" | "sysctl*" | "process*" | "default") || verb == "deny",
                    "{name}: ({verb} {op}) is a wildcard\n{sbpl}"
                );
            }
            if verb != "allow" {
                continue;
            }
            let narrowed = |op: &str, kinds: &[&str]| {
                if !ops.contains(&op) {
                    return;
                }
                assert!(!filters.is_empty(), "{name}: an unfiltered (allow {op})\n{sbpl}");
                for filter in &filters {
                    let Sexp::List(parts) = filter else { panic!("{name}: {op}: {filter:?}") };
                    let Some(Sexp::Atom(kind)) = parts.first() else { panic!("{name}: {op}: {filter:?}") };
                    assert!(kinds.contains(&kind.as_str()), "{name}: ({op} ({kind} …)) is not a narrow filter");
                }
            };
            narrowed("mach-lookup", &["global-name"]);
            narrowed("process-info*", &["target"]);
            narrowed("sysctl-read", &["sysctl-name", "sysctl-name-prefix"]);
            for op in ["mach-lookup", "sysctl-read", "process-info*"] {
                if !ops.contains(&op) {
                    continue;
                }
                for filter in &filters {
                    let Sexp::List(parts) = filter else { continue };
                    match (op, &parts[..]) {
                        ("mach-lookup", [_, Sexp::Str(s)]) => services.push(s.clone()),
                        ("sysctl-read", [_, Sexp::Str(s)]) => sysctls.push(s.clone()),
                        ("process-info*", [_, Sexp::Atom(a)]) => assert_eq!(a, "same-sandbox", "{name}"),
                        _ => panic!("{name}: {op}: {parts:?}"),
                    }
                }
            }
        }
        for s in &services {
            assert!(SERVICES.contains(&s.as_str()), "{name}: mach service {s} is not on the reviewed list");
        }
        for s in &sysctls {
            assert!(!s.starts_with("kern.proc"), "{name}: the process table sysctl {s}");
        }
        // Controls: the base list is there; network services only with network.
        assert!(services.iter().any(|s| s == "com.apple.system.opendirectoryd.libinfo"), "{name}");
        assert!(sysctls.iter().any(|s| s == "hw.ncpu") && sysctls.iter().any(|s| s == "kern.argmax"), "{name}");
        assert_eq!(services.iter().any(|s| s == "com.apple.trustd.agent"), network, "{name}: network services");
        assert_eq!(sysctls.iter().any(|s| s == "net.routetable."), network, "{name}: net sysctls");
        // Every named service and sysctl follows a reason: walking up from its line reaches a
        // `;;` comment before the `(allow` that opens its block.
        let lines: Vec<&str> = sbpl.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if !(t.starts_with("(global-name") || t.starts_with("(sysctl-name")) {
                continue;
            }
            let reason = lines[..i]
                .iter()
                .rev()
                .map(|l| l.trim_start())
                .find(|l| l.starts_with(";;") || l.starts_with("(allow"));
            assert!(reason.is_some_and(|l| l.starts_with(";;")), "{name}: no reason above {t:?}");
        }
    }
}

/// Issue 17: a gated profile with the egress proxy on the host's loopback: outbound only to the
/// proxy's port (no DNS service, no other port), and `target-network` claimed.
#[test]
fn the_egress_proxy_is_the_only_way_out() {
    let f = Fixture::new();
    let config = ProfileConfig {
        network: Access::Gated,
        network_targets: vec![sandbox_bundle::TargetPattern::parse("tcp:registry.npmjs.org:443").unwrap()],
        ..f.config()
    };
    let profile = Profile::new(config).unwrap();
    let bundle = compile(&profile, &f.spawn(), &host()).unwrap();
    let ctx = SeatbeltContext { proxy_port: Some(49152), ..f.ctx() };
    let sbpl = compile_sbpl(&bundle, &ctx).unwrap().replace(&f.root.display().to_string(), "$T");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/egress-proxy.sb");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        fs::write(&path, &sbpl).unwrap();
    } else {
        let want = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(want, sbpl, "SBPL differs from {}", path.display());
    }
    let outbound: Vec<&str> =
        sbpl.lines().filter(|l| l.contains("network-outbound") || l.contains("network*")).collect();
    assert_eq!(outbound, ["(allow network-outbound (remote tcp \"localhost:49152\"))"], "{sbpl}");
    assert!(!sbpl.contains("mDNSResponder"), "no DNS service: the proxy resolves names");
    let (level, g, report) = assess(&profile, &bundle, String::from("env"), true);
    check_invariants(level, g, Some(Isolation::Sandboxed), Some(&report)).unwrap();
    assert!(g.target_network && g.network_boundary, "{g:?}");
    // Without a live proxy nothing leaves at all.
    let closed = compile_sbpl(&bundle, &f.ctx()).unwrap();
    assert!(!closed.contains("network-outbound"), "{closed}");
    assert!(!assess(&profile, &bundle, String::from("env"), false).1.target_network);
}
