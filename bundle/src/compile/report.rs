//! The report entries the compiler derives from a plan: the policy facts every backend
//! reports, and what a standard OCI runtime achieves with the bundle.

use std::path::Path;

use crate::assessment::{Confinement, Facts, assess};
use crate::host::HostView;
use crate::profile::{Axis, Profile};
use crate::protect::Protected;
use crate::report::{CompileReport, Guarantees, ReportEntry, Status};

use super::plan::Authority;

/// The `read-boundary`, `write-boundary` and `runtime-closure` entries as the plan achieves
/// them (shared by every backend): `host_entries_bound`, `replaced` and `write_narrowed` are
/// what planning found (see `plan::Planned`).
pub(super) fn policy_entries(
    host: &HostView,
    authority: &Authority<'_>,
    host_entries_bound: bool,
    replaced: Vec<String>,
    write_narrowed: &[String],
) -> Vec<ReportEntry> {
    let effective = |axis: Axis, p: &Path| authority.effective(axis, p);
    let mut policy_entries = Vec::new();
    policy_entries.push(if host_entries_bound || !replaced.is_empty() {
        let mut why = Vec::new();
        if host_entries_bound {
            why.push(String::from(
                "host read is allowed, but the host's /sys, /run, /tmp and the scratch root are withheld",
            ));
        }
        why.extend(replaced);
        ReportEntry::new("read-boundary", Status::Narrowed, why.join("; "))
    } else {
        ReportEntry::new("read-boundary", Status::Enforced, "only the bound areas are visible")
    });
    policy_entries.push(if write_narrowed.is_empty() {
        ReportEntry::new("write-boundary", Status::Enforced, "writable only where the policy allows writes")
    } else {
        ReportEntry::new("write-boundary", Status::Narrowed, write_narrowed.join("; "))
    });
    // The closure widens read wherever the policy would not let its entries be read.
    let widened: Vec<String> = host
        .closure
        .iter()
        .filter(|c| {
            !effective(Axis::Read, &c.path) || c.resolved.as_ref().is_some_and(|(r, _)| !effective(Axis::Read, r))
        })
        .map(|c| c.path.display().to_string())
        .collect();
    policy_entries.push(if widened.is_empty() {
        ReportEntry::new("runtime-closure", Status::Vacuous, "every runtime-closure entry is readable under the policy")
    } else {
        ReportEntry::new(
            "runtime-closure",
            Status::Widened,
            format!("read and execute of the runtime closure: {}", widened.join(" ")),
        )
    });
    policy_entries
}

/// What a standard OCI runtime achieves with the bundle of a spawn (the `sandbox.report` and
/// `sandbox.guarantees` annotations).
pub(super) fn standard(
    profile: &Profile,
    policy_entries: &[ReportEntry],
    host_network: bool,
) -> (CompileReport, Guarantees) {
    let facts = Facts {
        profile,
        policy: policy_entries,
        env_scrub: String::from("the environment in config.json is the scrubbed one"),
        confinement: Confinement::Standard { host_network },
    };
    let (_, guarantees, report) = assess(&facts);
    (report, guarantees)
}

/// The `protected-paths` entry (issue 14): the list's version and entries, what is bound
/// read-only, and what could not be protected.
pub(super) fn protected_entry(p: &Protected) -> ReportEntry {
    if p.entries.is_empty() {
        return ReportEntry::new(
            "protected-paths",
            Status::Vacuous,
            "none: the profile turned the default list off and added nothing",
        );
    }
    let mut what = format!(
        "{} ({}): {} existing bound read-only, creation refused for the names at every depth and for {} paths",
        p.version,
        p.entries.join(" "),
        p.bound.len(),
        p.guard.paths.len()
    );
    for home in &p.guard.hidden_in {
        what.push_str(&format!(", and for every hidden entry of {}", home.display()));
    }
    if p.narrowed.is_empty() {
        ReportEntry::new("protected-paths", Status::Enforced, what)
    } else {
        ReportEntry::new("protected-paths", Status::Narrowed, format!("{what}; {}", p.narrowed.join("; ")))
    }
}
