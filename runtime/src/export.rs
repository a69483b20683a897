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
pub fn export_bundle(profile: &Profile, request: &ExportRequest, out_dir: &Path) -> Result<Exported, Error> {
    let bundle = sandbox_bundle::export_bundle(profile, &sandbox_bundle::HostView::scan(), request, out_dir)?;
    Ok(Exported {
        mounts: bundle.plan.mounts.len(),
        standard_guarantees: bundle.standard_guarantees,
        standard_report: bundle.standard_report,
    })
}
