//! The report entries the compiler derives from a plan: the policy facts every backend
//! reports, and what a standard OCI runtime achieves with the bundle.

use std::path::Path;

use crate::access::Access;
use crate::host::HostView;
use crate::profile::{Axis, Profile};
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
    network_open: bool,
) -> (CompileReport, Guarantees) {
    let config = profile.config();
    let private_network = !host_network;
    let standard_guarantees = Guarantees {
        process_boundary: true,
        write_boundary: true,
        read_boundary: true,
        env_scrub: true,
        network_boundary: private_network,
        address_network: false,
        resource_limits: false,
        target_network: false,
    };
    let mut standard_report = standard_report(policy_entries, private_network, host_network, config.network);
    let (network_detail, unix) = unix_sockets_entry(network_open, config.unix_sockets, true);
    if let Some(extra) = network_detail {
        if let Some(e) = standard_report.entries.iter_mut().find(|e| e.feature == "network-boundary") {
            e.detail = format!("{}; {extra}", e.detail);
        }
    }
    standard_report.set(unix);

    (standard_report, standard_guarantees)
}

/// The `unix-sockets` report entry (issue 12 class 4a) for a spawn whose network is open
/// (`network_open`: network `Allow` in the host namespace) or not, with the profile's
/// `unix_sockets` and `seccomp` saying whether the filter is in force; and, where the network is
/// otherwise closed but unix sockets are not, the words the `network-boundary` entry must add so
/// that it never claims more than it covers.
pub fn unix_sockets_entry(network_open: bool, unix_sockets: Access, seccomp: bool) -> (Option<String>, ReportEntry) {
    const OPEN: &str = "path-named unix sockets in readable areas are connectable";
    if network_open {
        return (None, ReportEntry::new("unix-sockets", Status::Vacuous, format!("network is allowed: {OPEN}")));
    }
    if unix_sockets == Access::Allow {
        return (
            Some(format!("except unix sockets: {OPEN} (unix_sockets allow)")),
            ReportEntry::new("unix-sockets", Status::Widened, format!("{OPEN} (unix_sockets allow)")),
        );
    }
    if !seccomp {
        return (
            Some(format!("except what seccomp would close: {OPEN}, and vsock is open")),
            ReportEntry::new("unix-sockets", Status::Unenforced, format!("seccomp is not in force: {OPEN}")),
        );
    }
    (
        None,
        ReportEntry::new(
            "unix-sockets",
            Status::Enforced,
            "no unix socket can be made (socket(AF_UNIX) and datagram socketpairs are refused; stream socketpairs work)",
        ),
    )
}

fn standard_report(
    policy: &[ReportEntry],
    private_network: bool,
    host_network: bool,
    network: Access,
) -> CompileReport {
    let mut r = CompileReport::default();
    r.set(ReportEntry::new("process-boundary", Status::Enforced, "user, mount, pid, ipc, uts and cgroup namespaces"));
    for e in policy.iter().filter(|e| e.feature != "runtime-closure") {
        r.set(e.clone());
    }
    r.set(ReportEntry::new("env-scrub", Status::Enforced, "the environment in config.json is the scrubbed one"));
    r.set(if network == Access::Allow && host_network {
        ReportEntry::new("network-boundary", Status::Vacuous, "network is allowed")
    } else if private_network {
        ReportEntry::new("network-boundary", Status::Enforced, "private network namespace")
    } else {
        ReportEntry::new("network-boundary", Status::Unenforced, "the broad grant's port scoping needs landlock")
    });
    r.set(if private_network {
        ReportEntry::new("loopback", Status::Enforced, "standard runtimes raise lo in the private namespace")
    } else {
        ReportEntry::new("loopback", Status::Vacuous, "host network namespace")
    });
    r.set(if host_network {
        ReportEntry::new(
            "abstract-unix",
            Status::Unenforced,
            "abstract unix socket scoping is a landlock rule, which standard runtimes do not apply",
        )
    } else {
        ReportEntry::new("abstract-unix", Status::Vacuous, "private network namespace")
    });
    r.set(ReportEntry::new(
        "landlock",
        Status::Unenforced,
        "standard oci runtimes do not apply the sandbox.landlock annotation",
    ));
    r.set(ReportEntry::new("seccomp", Status::Enforced, "linux.seccomp, applied by the oci runtime"));
    r.set(ReportEntry::new(
        "resource-limits",
        Status::Unenforced,
        "exported bundles carry no cgroupsPath and no resources",
    ));
    if let Some(c) = policy.iter().find(|e| e.feature == "runtime-closure") {
        r.set(c.clone());
    }
    r
}
