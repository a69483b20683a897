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
