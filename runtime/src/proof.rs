//! The stage-11 proof (CONTRACT.md §20), shared by the `stage-11-sandbox-process` example and
//! `sandbox proof`.

use std::io::Write;
use std::time::Duration;

use crate::{Access, Deadline, Error, ExecutorSet, ExecutorSetOptions, Home, Isolation, Level, Profile, ProfileConfig};

/// The profile of the stage-11 proof, which is also the CLI's default and the one `probe`
/// reports on (CONTRACT.md §18, §20): `workspace_root` read-write, the rest of the host
/// read-only, network and host writes denied, commands allowed, an isolated HOME, sandboxed.
pub fn profile_config(workspace_root: impl Into<std::path::PathBuf>) -> ProfileConfig {
    ProfileConfig {
        workspace_root: workspace_root.into(),
        workspace_read: Access::Allow,
        workspace_write: Access::Allow,
        host_read: Access::Allow,
        host_write: Access::Deny,
        network: Access::Deny,
        command: Access::Allow,
        home: Home::IsolatedHome,
        isolation: Isolation::Sandboxed,
        additional_roots: Vec::new(),
        ack_unconfined: false,
        unix_sockets: Access::Deny,
        protected_paths: crate::Protection::default(),
        network_targets: Vec::new(),
    }
}

/// Runs `echo confined` in a denied-network, isolated-home sandbox over a fresh temporary
/// workspace and prints, in order: the output, `level: …`, `guarantees: …`, one `report: …`
/// line per entry and `exit status: 0`. Any failed check is an error; nothing ever runs
/// unconfined (without a backend this fails at `ExecutorSet::new` with `SandboxUnavailable`).
pub fn stage11(out: &mut dyn Write) -> Result<(), Error> {
    let workspace = crate::fsutil::TempDir::new("sandbox-stage11-workspace-")?;
    let scratch = crate::fsutil::TempDir::new("sandbox-stage11-scratch-")?;
    let profile = Profile::new(profile_config(workspace.path().to_path_buf()))?;
    let set = ExecutorSet::new(
        &Deadline::after(Duration::from_secs(30)),
        &profile,
        ExecutorSetOptions::new(scratch.path()).max_executors(1),
    )?;
    let executor = set.executor("stage-11")?;
    let output =
        executor.run_command(&Deadline::after(Duration::from_secs(30)), profile.workspace_root(), "echo confined")?;
    let check = |ok: bool, what: &str| if ok { Ok(()) } else { Err(Error::runtime(format!("proof: {what}"))) };
    check(output.bytes == b"confined\n", &format!("unexpected output {:?}", String::from_utf8_lossy(&output.bytes)))?;
    check(output.status.success(), &format!("unexpected status {:?}", output.status))?;
    check(executor.level() != Level::None, "level is none")?;
    check(!executor.report().entries.is_empty(), "the report is empty")?;
    let io = |e: std::io::Error| Error::io("writing the proof", e);
    out.write_all(&output.bytes).map_err(io)?;
    writeln!(out, "level: {}", executor.level()).map_err(io)?;
    writeln!(out, "guarantees: {}", executor.guarantees().names().join(",")).map_err(io)?;
    for e in &executor.report().entries {
        writeln!(out, "report: {}: {}: {}", e.feature, e.status, e.detail).map_err(io)?;
    }
    writeln!(out, "exit status: {}", output.status.code().unwrap_or(-1)).map_err(io)?;
    drop(executor);
    set.close()
}
