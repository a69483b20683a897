//! The gate seam (CONTRACT.md §14): with `command: Gated`, a plain run is `GrantRequired`; the
//! application's own approval decides. (Issuing the single-use grant that opens it for one
//! spawn comes with the grants issue; until then the gated path stops here, fail-closed.)

use std::time::Duration;

use sandbox::{Access, Deadline, Error, ExecutorSet, ExecutorSetOptions, Profile, ProfileConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sandbox::init();
    let base = std::env::temp_dir().join(format!("sandbox-gated-example-{}", std::process::id()));
    std::fs::create_dir_all(base.join("ws"))?;
    std::fs::create_dir_all(base.join("scratch"))?;
    let result = run(&base);
    let _ = std::fs::remove_dir_all(&base);
    result
}

fn run(base: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let profile = Profile::new(ProfileConfig {
        workspace_root: base.join("ws"),
        workspace_read: Access::Allow,
        workspace_write: Access::Allow,
        command: Access::Gated,
        ..ProfileConfig::default()
    })?;
    println!("access_version: {}", profile.access_version());
    println!("command.execute: {}", profile.access_for("command.execute", "")?);
    let dl = Deadline::after(Duration::from_secs(30));
    let set = ExecutorSet::new(&dl, &profile, ExecutorSetOptions::new(base.join("scratch")).max_executors(1))?;
    let exec = set.executor("gated")?;
    match exec.run_command(&dl, profile.workspace_root(), "echo should-not-run") {
        Err(Error::GrantRequired) => println!("run_command: grant required (nothing was spawned)"),
        other => return Err(format!("expected GrantRequired, got {other:?}").into()),
    }
    drop(exec);
    set.close()?;
    Ok(())
}
