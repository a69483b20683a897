//! Exporting a profile as an OCI bundle that a standard runtime (`runc run`, `crun run`) runs
//! unchanged (CONTRACT.md §17). The facade's whole export surface: the request, the call and a
//! summary of what was written; the bundle itself is on disk (`config.json`, `rootfs/`, `home/`,
//! `tmp/`), and the compiler's internal types stay in the `sandbox-bundle` crate.

use std::path::Path;

pub use sandbox_bundle::{EnvOptions, ExportRequest};

use crate::{CompileReport, Error, Guarantees, Profile};

/// What an export wrote, and what a standard OCI runtime achieves with it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Exported {
    /// The mounts of `config.json`.
    pub mounts: usize,
    /// The guarantees a standard runtime delivers with the bundle (the `sandbox.guarantees`
    /// annotation): no Landlock, no resource limits.
    pub standard_guarantees: Guarantees,
    /// The report of what a standard runtime enforces (the `sandbox.report` annotation).
    pub standard_report: CompileReport,
}

/// Exports the bundle for `request` into `out_dir`, which must be missing or an empty directory;
/// the host is read now (its top-level entries and runtime closure). Everything is checked before
/// the first write; on a failure while writing, what this call created is removed again.
///
/// The bundle is what the executor would run for that argv without grants: a profile whose
/// `command` is `deny` is refused (`GrantDenied`), one whose `command` is `gated`
/// (`GrantRequired`: an export carries no grant), as a run would be, before anything is written.
pub fn export_bundle(profile: &Profile, request: &ExportRequest, out_dir: &Path) -> Result<Exported, Error> {
    let bundle = sandbox_bundle::export_bundle(profile, &sandbox_bundle::HostView::scan(), request, out_dir)?;
    Ok(Exported {
        mounts: bundle.plan.mounts.len(),
        standard_guarantees: bundle.standard_guarantees,
        standard_report: bundle.standard_report,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::{Access, ProfileConfig};

    /// A bundle the executor would not run is not written: `command` deny and gated are
    /// refused like a run without grants, and nothing is created; allow (the control) writes it.
    #[test]
    fn a_command_the_executor_would_refuse_is_not_exported() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        let request = ExportRequest { argv: vec!["/bin/true".into()], cwd: ws.clone(), ..ExportRequest::default() };
        for (command, want) in [(Access::Deny, "grant denied"), (Access::Gated, "grant required")] {
            let profile = Profile::new(ProfileConfig {
                workspace_root: ws.clone(),
                workspace_read: Access::Allow,
                command,
                ..ProfileConfig::default()
            })
            .unwrap();
            let out = ws.join(format!("out-{command:?}"));
            let e = export_bundle(&profile, &request, &out).err().unwrap();
            assert!(e.to_string().starts_with(want), "{e}");
            assert!(!out.exists());
        }
        let profile = Profile::new(ProfileConfig {
            workspace_root: ws.clone(),
            workspace_read: Access::Allow,
            command: Access::Allow,
            ..ProfileConfig::default()
        })
        .unwrap();
        export_bundle(&profile, &request, &ws.join("out")).unwrap();
        assert!(ws.join("out/config.json").is_file());
    }
}
