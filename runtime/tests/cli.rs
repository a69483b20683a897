//! The `sandbox` CLI's error paths: usage errors exit 2, sandbox errors exit 125 with
//! `sandbox: <error>` on stderr, and nothing is created on error.
#![allow(clippy::unwrap_used, clippy::panic, clippy::tests_outside_test_module)]

use std::fs;
use std::process::Command;

const SANDBOX: &str = env!("CARGO_BIN_EXE_sandbox");

fn export(args: &[&str], profile_json: Option<&str>) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(SANDBOX);
    cmd.current_dir(dir.path()).args(["bundle", "export", "--out", "out"]);
    if let Some(json) = profile_json {
        fs::write(dir.path().join("p.json"), json).unwrap();
        cmd.args(["--profile", "p.json"]);
    }
    cmd.args(args);
    (cmd.output().unwrap(), dir)
}

#[test]
fn invalid_profile_file_names_the_key_exits_125_and_creates_nothing() {
    let cases = [
        (r#"{"workspace_root": "/", "netwrk": "deny"}"#, "netwrk"),
        (r#"{"workspace_root": "/", "network": "maybe"}"#, "network"),
        (r#"{"workspace_root": "/", "host_read": 7}"#, "host_read"),
        (r#"{"workspace_root": "/", "home": "shared"}"#, "home"),
        (
            r#"{"workspace_root": "/", "additional_roots": [{"path": "/", "read": "allow", "wrte": "deny"}]}"#,
            "additional_roots[0].wrte",
        ),
        (r#"{"workspace_root": "relative/dir"}"#, "workspace_root"),
        (r#"{"network": "deny"}"#, "workspace_root"),
        (r#"{"workspace_root": "/", "isolation": "unconfined"}"#, "ack_unconfined"),
        (r#"[1, 2]"#, "object"),
        (r#"{"workspace_root": "/", "#, "json"),
    ];
    for (json, key) in cases {
        let (o, dir) = export(&["--", "/bin/true"], Some(json));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(125), "{json}: {err}");
        assert!(err.starts_with("sandbox: invalid profile"), "{json}: {err}");
        assert!(err.contains(key), "{json}: error does not name {key}: {err}");
        assert!(!dir.path().join("out").exists(), "{json}: out dir created on error");
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn missing_profile_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(SANDBOX)
        .current_dir(dir.path())
        .args(["bundle", "export", "--out", "out", "--profile", "nope.json", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nope.json"));
    assert!(!dir.path().join("out").exists());
}

#[test]
fn non_empty_out_dir_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("out")).unwrap();
    fs::write(dir.path().join("out/keep"), "mine").unwrap();
    let o = Command::new(SANDBOX)
        .current_dir(dir.path())
        .args(["bundle", "export", "--out", "out", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"));
    let entries: Vec<_> = fs::read_dir(dir.path().join("out")).unwrap().collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(fs::read_to_string(dir.path().join("out/keep")).unwrap(), "mine");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["bundle", "export", "--", "/bin/true"][..],
        &["bundle", "export", "--out", "x"][..],
        &["bundle", "frobnicate"][..],
        &["--no-such-flag"][..],
        &[][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new(SANDBOX).current_dir(dir.path()).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(!dir.path().join("x").exists());
    }
}

#[test]
fn a_cwd_outside_the_view_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    fs::create_dir(&ws).unwrap();
    let other = tempfile::tempdir().unwrap();
    let profile = format!(r#"{{"workspace_root": "{}", "workspace_read": "allow"}}"#, ws.display());
    fs::write(dir.path().join("p.json"), profile).unwrap();
    let o = Command::new(SANDBOX)
        .current_dir(dir.path())
        .args(["bundle", "export", "--out", "out", "--profile", "p.json", "--cwd"])
        .arg(other.path())
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cwd"));
    assert!(!dir.path().join("out").exists());
}

#[test]
fn export_writes_the_documented_layout() {
    let (o, dir) = export(&["--", "/bin/echo", "hi"], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = dir.path().join("out");
    let config: serde_json::Value = serde_json::from_slice(&fs::read(out.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["process"]["args"], serde_json::json!(["/bin/echo", "hi"]));
    assert_eq!(config["root"]["readonly"], true);
    assert_eq!(config["annotations"]["sandbox.version"], "1");
    assert!(config["linux"].get("cgroupsPath").is_none() && config["linux"].get("resources").is_none());
    use std::os::unix::fs::PermissionsExt;
    for (d, mode) in [("rootfs", 0o755), ("home", 0o700), ("tmp", 0o700)] {
        let m = fs::metadata(out.join(d)).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.permissions().mode() & 0o777, mode, "{d}");
    }
    // rootfs holds only symlinks (host read is allowed by the CLI default profile).
    for e in fs::read_dir(out.join("rootfs")).unwrap() {
        assert!(e.unwrap().file_type().unwrap().is_symlink());
    }
    // The environment is scrubbed: a secret in ours never reaches the bundle.
    let env = config["process"]["env"].to_string();
    assert!(env.contains("HOME=") && env.contains("TMPDIR=") && !env.contains("CARGO_"), "{env}");
}

#[test]
fn out_dir_equal_to_the_workspace_or_cwd_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(SANDBOX)
        .current_dir(dir.path())
        .args(["bundle", "export", "--out", ".", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("out_dir"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
}

#[test]
fn duplicate_keys_in_the_profile_are_refused() {
    let (o, dir) =
        export(&["--", "/bin/true"], Some(r#"{"workspace_root": "/", "network": "deny", "network": "allow"}"#));
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("network: duplicate key"));
    assert!(!dir.path().join("out").exists());
}

#[test]
fn hostile_cli_arguments_get_clear_errors() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&std::ffi::OsStr]| Command::new(SANDBOX).current_dir(dir.path()).args(args).output().unwrap();
    let os = |s: &str| std::ffi::OsString::from(s);
    // A non-UTF-8 profile path: a clear error naming it, nothing written.
    let bad = std::ffi::OsStr::from_bytes(b"p\xff.json");
    let o = run(&[
        &os("bundle"),
        &os("export"),
        &os("--out"),
        &os("out"),
        &os("--profile"),
        bad,
        &os("--"),
        &os("/bin/true"),
    ]);
    assert_eq!(o.status.code(), Some(125), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--profile"));
    // A newline in the output path works (it is just a name) and prints it back.
    let o = run(&[&os("bundle"), &os("export"), &os("--out"), &os("out\nx"), &os("--"), &os("/bin/true")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.path().join("out\nx/config.json").exists());
    // A non-UTF-8 argv cannot go into an OCI bundle: a clear error.
    let o = run(&[
        &os("bundle"),
        &os("export"),
        &os("--out"),
        &os("out2"),
        &os("--"),
        std::ffi::OsStr::from_bytes(b"/bin/\xfe"),
    ]);
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("argv"));
    assert!(!dir.path().join("out2").exists());
    // Huge and negative numbers are usage errors or clear errors, never a panic.
    for args in [
        ["--timeout", "-1"],
        ["--timeout", "1e400"],
        ["--output-limit", "99999999999999999999999"],
        ["--timeout", "abc"],
    ] {
        let mut full = vec![os("run"), os("--json")];
        full.extend(args.iter().map(|a| os(a)));
        full.extend([os("--"), os("/bin/true")]);
        let refs: Vec<&std::ffi::OsStr> = full.iter().map(|s| s.as_os_str()).collect();
        let o = run(&refs);
        let code = o.status.code();
        assert!(code == Some(2) || code == Some(125), "{args:?}: {code:?} {}", String::from_utf8_lossy(&o.stderr));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"), "{args:?}");
    }
}

/// Every entry below `dir` (symlinks not followed) with its size, for "nothing was written".
fn tree(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, u64> {
    fn walk(dir: &std::path::Path, into: &mut std::collections::BTreeMap<std::path::PathBuf, u64>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let meta = fs::symlink_metadata(e.path()).unwrap();
            into.insert(e.path(), if meta.is_dir() { 0 } else { meta.len() });
            if meta.is_dir() {
                walk(&e.path(), into);
            }
        }
    }
    let mut map = std::collections::BTreeMap::new();
    walk(dir, &mut map);
    map
}

/// A hostile-argument area under `/var/tmp` (a workload's `/tmp` is private, so the host's must
/// not hold the workspace): `ws` (the CLI's current directory and default workspace) and
/// `scratch` beside it.
struct Area {
    dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    scratch: std::path::PathBuf,
}

impl Area {
    fn new() -> Area {
        let dir = tempfile::Builder::new().prefix("sbx-cli").tempdir_in("/var/tmp").unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let (ws, scratch) = (root.join("ws"), root.join("scratch"));
        fs::create_dir(&ws).unwrap();
        fs::create_dir(&scratch).unwrap();
        fs::write(ws.join("keep.txt"), "mine\n").unwrap();
        Area { dir, ws, scratch }
    }

    /// Runs the CLI in `ws` with `args`.
    fn sandbox(&self, args: &[&std::ffi::OsStr]) -> std::process::Output {
        Command::new(SANDBOX).current_dir(&self.ws).args(args).output().unwrap()
    }

    /// Everything in the area but the scratch roots' contents, which must be empty again.
    fn snapshot(&self) -> std::collections::BTreeMap<std::path::PathBuf, u64> {
        tree(self.dir.path())
    }
}

/// Whether `sandbox run` can confine here (the probe says so). Otherwise a loud SKIPPED line,
/// or a failure when `SANDBOX_REQUIRE_PRIVILEGED=1` (scripts/test.sh as root).
fn sandbox_runs_here(what: &str) -> bool {
    let o = Command::new(SANDBOX).arg("probe").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    if v["available"] == serde_json::Value::Bool(true) {
        return true;
    }
    let required = std::env::var_os("SANDBOX_REQUIRE_PRIVILEGED").is_some_and(|r| r == "1");
    assert!(!required, "cli::{what} needs a sandbox here (SANDBOX_REQUIRE_PRIVILEGED=1): {}", v["reason"]);
    eprintln!("!!!!!!!! SKIPPED privileged test cli::{what} ({}) !!!!!!!!", v["reason"]);
    false
}

fn os(s: &str) -> std::ffi::OsString {
    std::ffi::OsString::from(s)
}

fn refs(v: &[std::ffi::OsString]) -> Vec<&std::ffi::OsStr> {
    v.iter().map(std::ffi::OsString::as_os_str).collect()
}

#[test]
fn relative_paths_and_paths_with_newlines_work_and_write_only_the_scratch_root() {
    if !sandbox_runs_here("relative_paths_and_paths_with_newlines_work_and_write_only_the_scratch_root") {
        return;
    }
    let area = Area::new();
    fs::create_dir(area.ws.join("sub")).unwrap();
    fs::create_dir(area.ws.join("a\nb")).unwrap();
    fs::create_dir(area.scratch.join("s\nt")).unwrap();
    let before = area.snapshot();
    // Relative --cwd and --scratch (with `..`) resolve against the current directory.
    let o = area.sandbox(&refs(&[
        os("run"),
        os("--cwd"),
        os("sub"),
        os("--scratch"),
        os("../scratch"),
        os("--"),
        os("/bin/pwd"),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, format!("{}\n", area.ws.join("sub").display()).into_bytes());
    // A newline in --cwd and in --scratch is just a byte of the name.
    let o = area.sandbox(&refs(&[
        os("run"),
        os("--cwd"),
        os("a\nb"),
        os("--scratch"),
        os("../scratch/s\nt"),
        os("--"),
        os("/bin/pwd"),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, format!("{}\n", area.ws.join("a\nb").display()).into_bytes());
    assert_eq!(area.snapshot(), before, "a run wrote outside its scratch root or left something in it");
}

#[test]
fn non_utf8_paths_get_clear_errors_and_write_nothing() {
    use std::os::unix::ffi::OsStrExt;
    let area = Area::new();
    let bad_dir = std::ffi::OsStr::from_bytes(b"d\xff");
    fs::create_dir(area.ws.join(bad_dir)).unwrap();
    fs::create_dir(area.scratch.join(bad_dir)).unwrap();
    let before = area.snapshot();
    // `bundle export` needs no sandbox: an OCI config.json holds only UTF-8 paths.
    let mut out = std::ffi::OsString::from("../out");
    out.push(bad_dir);
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec![os("bundle"), os("export"), os("--out"), out.clone(), os("--"), os("/bin/true")],
        vec![
            os("bundle"),
            os("export"),
            os("--out"),
            os("../out"),
            os("--cwd"),
            bad_dir.into(),
            os("--"),
            os("/bin/true"),
        ],
    ];
    for args in &cases {
        let o = area.sandbox(&refs(args));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(125), "{args:?}: {err}");
        assert!(err.contains("not valid UTF-8") && !err.contains("panicked"), "{args:?}: {err}");
    }
    assert_eq!(area.snapshot(), before, "a refused export wrote something");
    if !sandbox_runs_here("non_utf8_paths_get_clear_errors_and_write_nothing") {
        return;
    }
    let mut scratch = std::ffi::OsString::from("../scratch/");
    scratch.push(bad_dir);
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec![os("run"), os("--cwd"), bad_dir.into(), os("--scratch"), os("../scratch"), os("--"), os("/bin/pwd")],
        vec![os("run"), os("--scratch"), scratch, os("--"), os("/bin/pwd")],
    ];
    for args in &cases {
        let o = area.sandbox(&refs(args));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(125), "{args:?}: {err}");
        assert!(err.contains("not valid UTF-8") && !err.contains("panicked"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: the workload ran");
    }
    assert_eq!(area.snapshot(), before, "a refused run wrote outside its scratch root or left something in it");
}

#[test]
fn a_one_mib_argv_and_the_largest_output_limit_work() {
    if !sandbox_runs_here("a_one_mib_argv_and_the_largest_output_limit_work") {
        return;
    }
    let area = Area::new();
    let before = area.snapshot();
    // Linux caps one argument at 128 KiB (MAX_ARG_STRLEN: execve fails with E2BIG before the
    // CLI runs), so the mebibyte comes as sixteen 64 KiB arguments.
    let chunk = "a".repeat(64 * 1024);
    let mut args = vec![
        os("run"),
        os("--scratch"),
        os("../scratch"),
        os("--output-limit"),
        os(&u64::MAX.to_string()),
        os("--"),
        os("/bin/sh"),
        os("-c"),
        os("printf %s \"$@\" | wc -c"),
        os("sh"),
    ];
    args.extend(std::iter::repeat_n(os(&chunk), 16));
    let o = area.sandbox(&refs(&args));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "1048576");
    assert_eq!(area.snapshot(), before);
}

#[test]
fn huge_and_non_finite_numbers_name_their_flag_and_write_nothing() {
    let area = Area::new();
    let before = area.snapshot();
    for (value, flag, code) in [
        ("NaN", "--timeout", 125),
        ("inf", "--timeout", 125),
        ("1e400", "--timeout", 125),
        ("1e300", "--timeout", 125),
        ("", "--timeout", 2),
        ("99999999999999999999999", "--output-limit", 2),
        ("18446744073709551616", "--output-limit", 2),
    ] {
        for json in [false, true] {
            let mut args = vec![os("run"), os("--scratch"), os("../scratch")];
            if json {
                args.push(os("--json"));
            }
            args.extend([os(flag), os(value), os("--"), os("/bin/true")]);
            let o = area.sandbox(&refs(&args));
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(code), "{flag} {value:?}: {err}");
            assert!(!err.contains("panicked"), "{flag} {value:?}: {err}");
            if json && code == 125 {
                // Exactly one JSON object naming the error kind.
                let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                assert_eq!(v["error"], "invalid_argument", "{flag} {value:?}");
            } else {
                assert!(err.contains(flag), "{flag} {value:?}: {err}");
            }
        }
    }
    assert_eq!(area.snapshot(), before, "a refused number wrote something");
}

/// `argv` cannot carry a NUL byte (execve takes C strings), so NUL comes only through text the
/// CLI reads: the `--profile` JSON file. Each case names the field (or says where the JSON is
/// broken), exits 125, and nothing is created.
#[test]
fn nul_bytes_in_the_profile_json_name_the_field_and_write_nothing() {
    let area = Area::new();
    let ws = area.ws.display().to_string();
    let cases = [
        (format!(r#"{{"workspace_root": "{ws}\u0000x"}}"#), "workspace_root"),
        (format!(r#"{{"workspace_root": "{ws}", "netw\u0000ork": "deny"}}"#), "unknown key"),
        (format!(r#"{{"workspace_root": "{ws}", "network": "de\u0000ny"}}"#), "network"),
        (
            format!(
                r#"{{"workspace_root": "{ws}", "additional_roots": [{{"path": "/va\u0000r", "read": "allow", "write": "deny"}}]}}"#
            ),
            "additional_roots[0].path",
        ),
        (format!("{{\"workspace_root\": \"{ws}\0\"}}"), "profile json"),
        (format!("{{\"workspace_root\": \"{ws}\"}}\0"), "profile json"),
    ];
    let before = area.snapshot();
    for (i, (json, field)) in cases.iter().enumerate() {
        let file = area.dir.path().join(format!("p{i}.json"));
        fs::write(&file, json).unwrap();
        for verb in [&["run", "--scratch", "../scratch"][..], &["bundle", "export", "--out", "../out"][..]] {
            let mut args: Vec<std::ffi::OsString> = verb.iter().map(|a| os(a)).collect();
            args.extend([os("--profile"), file.clone().into_os_string(), os("--"), os("/bin/true")]);
            let o = area.sandbox(&refs(&args));
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(125), "{verb:?} {json:?}: {err}");
            assert!(err.starts_with("sandbox: invalid profile") && err.contains(field), "{verb:?} {json:?}: {err}");
            assert!(o.stdout.is_empty(), "{verb:?} {json:?}");
        }
        fs::remove_file(&file).unwrap();
    }
    assert_eq!(area.snapshot(), before, "a refused profile wrote something");
}

/// Writes the issue's `P(roots…)` profile (workspace read-write, host read deny) into the area
/// and returns its path.
fn roots_profile(area: &Area, name: &str, roots: &[(&std::path::Path, &str, &str)]) -> std::path::PathBuf {
    let roots: Vec<serde_json::Value> = roots
        .iter()
        .map(|(p, r, w)| serde_json::json!({"path": p.display().to_string(), "read": r, "write": w}))
        .collect();
    let profile = serde_json::json!({
        "workspace_root": area.ws.display().to_string(),
        "workspace_read": "allow",
        "workspace_write": "allow",
        "host_read": "deny",
        "command": "allow",
        "additional_roots": roots,
    });
    let file = area.dir.path().join(name);
    fs::write(&file, profile.to_string()).unwrap();
    file
}

fn run_sh(area: &Area, profile: &std::path::Path, script: &str) -> std::process::Output {
    area.sandbox(&refs(&[
        os("run"),
        os("--scratch"),
        os("../scratch"),
        os("--profile"),
        profile.as_os_str().to_owned(),
        os("--"),
        os("/bin/sh"),
        os("-c"),
        os(script),
    ]))
}

/// Issue 12, 1a-1c through the CLI, which loads the same profile file for every run: run 1
/// cannot rename, remove or replace a nested deny root, a read-only `.git/hooks` or their
/// ancestors (positive control: ordinary entries move freely), so run 2 reads nothing; a root
/// replaced by a symlink between runs (by the host) is refused before anything runs.
#[test]
fn nested_roots_survive_their_runs_through_the_cli() {
    if !sandbox_runs_here("nested_roots_survive_their_runs_through_the_cli") {
        return;
    }
    let area = Area::new();
    fs::create_dir_all(area.ws.join("cfg/secrets")).unwrap();
    fs::write(area.ws.join("cfg/secrets/key"), "TOP\n").unwrap();
    fs::create_dir_all(area.ws.join(".git/hooks")).unwrap();
    fs::write(area.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    fs::create_dir_all(area.ws.join("a/ro")).unwrap();
    let (secrets, hooks, ro) = (area.ws.join("cfg/secrets"), area.ws.join(".git/hooks"), area.ws.join("a/ro"));
    let p = roots_profile(
        &area,
        "p.json",
        &[(&secrets, "deny", "deny"), (&hooks, "allow", "deny"), (&ro, "allow", "deny")],
    );
    let o = run_sh(
        &area,
        &p,
        "for c in 'mv cfg cfg-moved' 'mkdir -p cfg2 && mv -T cfg2 cfg' 'mv .git .git-real' 'rmdir cfg/secrets' \
         'mv a a-old' 'ln -sfn / a/ro' 'echo x >> .git/hooks/pre-commit'; do \
           (eval \"$c\") >/dev/null 2>&1 && echo \"ESCAPED: $c\"; done; \
         mkdir d && mv d d2 && rmdir d2 && echo controls-ok",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out} {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out, "controls-ok\n");
    let o = run_sh(&area, &p, "cat cfg-moved/secrets/key cfg/secrets/key .git-real/hooks/pre-commit 2>&1; true");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("TOP"), "{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(fs::read_to_string(area.ws.join(".git/hooks/pre-commit")).unwrap(), "#!/bin/sh\n");
    // The host replaces the read-only root by a symlink to / between runs: refused, nothing runs.
    fs::rename(area.ws.join("a"), area.ws.join("a-old")).unwrap();
    fs::create_dir(area.ws.join("a")).unwrap();
    std::os::unix::fs::symlink("/", &ro).unwrap();
    let o = run_sh(&area, &p, "touch ran; cat a/ro/etc/hostname");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(
        err.starts_with("sandbox: invalid profile") && err.contains("additional_roots[") && err.contains("symlink"),
        "{err}"
    );
    assert!(o.stdout.is_empty() && !area.ws.join("ran").exists());
}

/// Issue 12, 1d and 11 through the CLI: a root through a symlink, and a root exactly at a path
/// the sandbox always makes private, are refused naming the root, before anything is written.
/// Positive control: the real path, and a root under /tmp, run.
#[test]
fn symlinked_and_always_private_roots_are_refused_by_the_cli() {
    let area = Area::new();
    fs::create_dir(area.ws.join("decoy")).unwrap();
    std::os::unix::fs::symlink(area.ws.join("decoy"), area.ws.join(".codex")).unwrap();
    let before = area.snapshot();
    let codex = area.ws.join(".codex");
    let cases: Vec<(std::path::PathBuf, String)> = [
        (codex.clone(), String::from("symlink")),
        (std::path::PathBuf::from("/tmp"), String::from("private")),
        (std::path::PathBuf::from("/dev/shm"), String::from("private")),
        (std::path::PathBuf::from("/proc"), String::from("private")),
        (std::path::PathBuf::from("/proc/self"), String::from("/proc")),
    ]
    .into_iter()
    .filter(|(p, _)| p.exists())
    .collect();
    for (i, (path, why)) in cases.iter().enumerate() {
        for (r, w) in [("deny", "deny"), ("allow", "allow")] {
            let p = roots_profile(&area, &format!("p{i}.json"), &[(path, r, w)]);
            let o = run_sh(&area, &p, "touch ran");
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(125), "{}: {err}", path.display());
            assert!(err.starts_with("sandbox: invalid profile") && err.contains("additional_roots[0].path"), "{err}");
            assert!(err.contains(why.as_str()), "{}: {err}", path.display());
            fs::remove_file(&p).unwrap();
        }
    }
    assert_eq!(area.snapshot(), before, "a refused profile wrote something");
    if !sandbox_runs_here("symlinked_and_always_private_roots_are_refused_by_the_cli") {
        return;
    }
    let tmp = tempfile::Builder::new().prefix("sbx-cli").tempdir_in("/tmp").unwrap();
    let t = fs::canonicalize(tmp.path()).unwrap();
    fs::write(t.join("f"), "under tmp\n").unwrap();
    let p = roots_profile(&area, "ok.json", &[(&area.ws.join("decoy"), "allow", "deny"), (&t, "allow", "deny")]);
    let o = run_sh(&area, &p, &format!("cat {}/f; (echo x > decoy/f) 2>/dev/null || echo decoy-ro", t.display()));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "under tmp\ndecoy-ro\n", "{}", String::from_utf8_lossy(&o.stderr));
}
