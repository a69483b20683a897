//! Sweeping what containers and dead sets left: cgroups, runtime state and bundles.

use std::path::Path;

use crate::{CgroupLayout, is_container_id, sweep_container};

use super::LinuxBackend;

impl LinuxBackend {
    /// Sweeps the cgroup and state container `id` left.
    pub(super) fn sweep_leftovers(&self, id: &str) -> Result<(), SweepFailed> {
        sweep_container(self.layout, self.cgroup_path(id).as_deref(), Some(&self.state_root.join(id)))
            .map_err(SweepFailed)
    }
}

/// A sweep after a failed spawn that did not get everything: the clean-up failure an error
/// keeps beside its cause ([`Error::with_cleanup`](sandbox_bundle::Error::with_cleanup)).
#[derive(Debug, thiserror::Error)]
#[error("sweep: {0}")]
pub(super) struct SweepFailed(#[source] crate::SweepError);

/// The error for `detail` after a sweep: a successful sweep is said in the detail, a failed one
/// is the error's clean-up failure.
pub(super) fn after_sweep(detail: String, swept: Result<(), SweepFailed>) -> sandbox_bundle::Error {
    match swept {
        Ok(()) => sandbox_bundle::Error::runtime(format!("{detail}; leftovers swept")),
        Err(failed) => sandbox_bundle::Error::runtime(detail).with_cleanup(failed),
    }
}

/// Sweeps what a set left on Linux: the containers of its state directory, before the set
/// directory itself is removed. Nothing of the set directory decides what is killed (issue 12,
/// class 6): the cgroup parent is `parent`, the sweeping set's own configured one (a dead set
/// made under another parent is not killed in, only removed), entries are used only when their
/// names have the form of this library's container ids, and `sweep_container` kills only in
/// cgroups it verifies (cgroup filesystem, this uid, no symlink, normal path). False when the
/// cgroups of a container could not all be removed: the set directory, whose state names it,
/// is then to be kept for a later sweep.
pub fn sweep_set(set_dir: &Path, parent: Option<&str>) -> bool {
    let layout = CgroupLayout::detect();
    let state = set_dir.join("state");
    if !std::fs::symlink_metadata(&state).is_ok_and(|m| m.is_dir()) {
        return true;
    }
    let mut swept = true;
    for entry in std::fs::read_dir(&state).into_iter().flatten().flatten() {
        let Some(id) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if !is_container_id(&id) {
            tracing::warn!(set = %set_dir.display(), ?id, "sweep: not a container id of this library, ignored");
            continue;
        }
        let cgroup = parent.map(|p| format!("{}/{id}", p.trim_end_matches('/')));
        // The state directory goes with the set directory (removed by descriptor, never
        // following a symlink): nothing is removed through a path here.
        if let Err(e) = sweep_container(layout, cgroup.as_deref(), None) {
            tracing::warn!(set = %set_dir.display(), %id, "sweep: {e}");
            swept = false;
        }
    }
    swept
}
