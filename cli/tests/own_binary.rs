//! The running `sandbox` binary inside the workspace (the README's examples run
//! `./target/release/sandbox` from the repository, which is then the writable workspace): the
//! workload cannot replace or modify it, so the user's next `sandbox run` is still the sandbox
//! (a red team replaced it with a script, which the next invocation ran on the host). Control:
//! an ordinary file beside it is written.
//!
//! Needs root (namespaces). Without root it prints a loud SKIPPED line and passes, unless
//! `SANDBOX_REQUIRE_PRIVILEGED=1` (set by `scripts/test.sh` as root, hence in CI).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::tests_outside_test_module)]

use std::fs;
use std::process::Command;

const SANDBOX: &str = env!("CARGO_BIN_EXE_sandbox");

fn privileged() -> bool {
    use std::os::unix::fs::MetadataExt;
    let required = std::env::var_os("SANDBOX_REQUIRE_PRIVILEGED").is_some_and(|v| v == "1");
    let is_root = fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(u32::MAX) == 0;
    if is_root {
        return true;
    }
    if required {
        panic!("privileged suite required (SANDBOX_REQUIRE_PRIVILEGED=1) but cannot run: not root");
    }
    eprintln!("!!!!!!!! SKIPPED privileged test (not root); run scripts/test.sh as root to run it !!!!!!!!");
    false
}

#[test]
fn the_running_binary_in_the_workspace_cannot_be_replaced() {
    if !privileged() {
        return;
    }
    let dir = tempfile::Builder::new().prefix("sbx-own").tempdir_in("/var/tmp").unwrap();
    let ws = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir_all(ws.join("target/release")).unwrap();
    let exe = ws.join("target/release/sandbox");
    fs::copy(SANDBOX, &exe).unwrap();
    let original = fs::read(&exe).unwrap();
    let script = "for a in 'printf \"#!/bin/sh\\necho PWNED\\n\" > t && chmod 755 t && mv t target/release/sandbox' \
                  'echo x >> target/release/sandbox' 'rm -f target/release/sandbox' 'mv target target2' \
                  'mv target/release target/r2'; do \
                  if sh -c \"$a\" 2>/dev/null; then echo \"done: $a\"; else echo refused; fi; done; \
                  echo ok > target/release/beside && echo control-ok";
    let o = Command::new(&exe).args(["run", "--", "/bin/sh", "-c", script]).current_dir(&ws).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out, "refused\n".repeat(5) + "control-ok\n", "{}", String::from_utf8_lossy(&o.stderr));
    assert!(fs::read(&exe).unwrap() == original, "the binary was changed");
    assert_eq!(fs::read_to_string(ws.join("target/release/beside")).unwrap(), "ok\n");
    // The next invocation is still the sandbox.
    let o = Command::new(&exe).args(["run", "--", "/bin/echo", "confined"]).current_dir(&ws).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "confined\n");
}

/// A long-lived `sandbox serve` keeps protecting its binary's path after the host replaced the
/// file (a rebuild): the kernel then names the running one `… (deleted)`, and the first
/// version of the check found nothing to protect (an attack replaced the new binary from the
/// next request). Control: the first request's attempt is refused too, and a file beside it is
/// written.
#[test]
fn serve_keeps_protecting_its_path_after_a_rebuild() {
    use std::io::{BufRead, Write};
    if !privileged() {
        return;
    }
    let dir = tempfile::Builder::new().prefix("sbx-own").tempdir_in("/var/tmp").unwrap();
    let ws = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir_all(ws.join("target/release")).unwrap();
    let exe = ws.join("target/release/sandbox");
    fs::copy(SANDBOX, &exe).unwrap();
    let mut child = Command::new(&exe)
        .arg("serve")
        .current_dir(&ws)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let attack = "if printf 'x' > t && chmod 755 t && mv t target/release/sandbox 2>/dev/null; then echo replaced; \
                  else echo refused; fi; echo ok > target/release/beside";
    let mut ask = |id: u32| -> serde_json::Value {
        let line = serde_json::json!({"id": id, "command": attack}).to_string();
        writeln!(stdin, "{line}").unwrap();
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    assert_eq!(ask(1)["stdout"], "refused\n");
    // The host rebuilds: a new file at the same path.
    let new = ws.join("target/release/.new");
    fs::copy(SANDBOX, &new).unwrap();
    fs::rename(&new, &exe).unwrap();
    let rebuilt = fs::read(&exe).unwrap();
    assert_eq!(ask(2)["stdout"], "refused\n");
    assert!(fs::read(&exe).unwrap() == rebuilt, "the rebuilt binary was replaced");
    assert_eq!(fs::read_to_string(ws.join("target/release/beside")).unwrap(), "ok\n");
    let _ = child.kill();
    let _ = child.wait();
}
