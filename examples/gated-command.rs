//! The gate seam (CONTRACT.md §14), round trip: with `command: Gated` a plain run is
//! `GrantRequired`; the application makes its own decision; on approval it issues a single-use
//! grant for that exact command, cwd and execution id, runs with it, and a replay is refused.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sandbox::{Access, Deadline, Error, ExecutorSet, ExecutorSetOptions, GrantRequest, Profile, ProfileConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sandbox::init();
    let base = std::env::temp_dir().join(format!("sandbox-gated-example-{}", std::process::id()));
    std::fs::create_dir_all(base.join("ws"))?;
    std::fs::create_dir_all(base.join("scratch"))?;
    let result = run(&base);
    let _ = std::fs::remove_dir_all(&base);
    result
}

/// The application's own approval (a prompt, a saved rule, a policy server …).
fn approve(command: &str) -> bool {
    command.starts_with("echo ")
}

fn run(base: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let profile = Profile::new(ProfileConfig {
        workspace_root: base.join("ws"),
        workspace_read: Access::Allow,
        workspace_write: Access::Allow,
        host_read: Access::Allow,
        command: Access::Gated,
        ..ProfileConfig::default()
    })?;
    println!("access_version: {}", profile.access_version());
    println!("command.execute: {}", profile.access_for("command.execute", "")?);
    let dl = Deadline::after(Duration::from_secs(30));
    let set = ExecutorSet::new(&dl, &profile, ExecutorSetOptions::new(base.join("scratch")).max_executors(1))?;
    let exec = set.executor("gated")?;
    let cwd = profile.workspace_root();
    let command = "echo approved and confined";
    match exec.run_command(&dl, cwd, command) {
        Err(Error::GrantRequired) => println!("run_command: grant required (nothing was spawned)"),
        other => return Err(format!("expected GrantRequired, got {other:?}").into()),
    }
    if !approve(command) {
        return Err("the application refused".into());
    }
    let expiry = i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis())? + 60_000;
    let token = exec.issue_grant(
        &dl,
        &GrantRequest {
            execution_id: String::from("tool-call-1"),
            command: command.to_owned(),
            cwd: cwd.to_path_buf(),
            kind: String::from("command.execute"),
            scope: String::new(),
            class: String::from("command.start.v1"),
            target: command.to_owned(),
            expiry_unix_ms: expiry,
        },
    )?;
    println!("issued a command.start.v1 grant");
    let out = exec.run_command_with_grants(&dl, "tool-call-1", cwd, command, std::slice::from_ref(&token))?;
    print!("with the grant: {}", String::from_utf8_lossy(&out.bytes));
    match exec.run_command_with_grants(&dl, "tool-call-1", cwd, command, &[token]) {
        Err(Error::GrantReplay) => println!("replay: refused"),
        other => return Err(format!("expected GrantReplay, got {other:?}").into()),
    }
    drop(exec);
    set.close()?;
    Ok(())
}
