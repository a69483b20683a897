//! The one report builder (issue 13): each backend states what it measured (a [`Facts`]), and
//! [`assess`] turns that into the level, the guarantee bits and the report, with every entry's
//! status and words decided here, in one fixed order. The policy entries (`read-boundary`,
//! `write-boundary`, `runtime-closure`) come from the compiler's plan and pass through.
//!
//! Order of the report: `process-boundary`, the policy's boundaries and `protected-paths`, `env-scrub`,
//! `network-boundary`, `unix-sockets`, `loopback`, `abstract-unix`, `landlock`, `seccomp`,
//! `resource-limits`, `runtime-closure`, then what only one backend reports.

use crate::access::Access;
use crate::profile::Profile;
use crate::report::{CompileReport, Guarantees, Level, ReportEntry, Status};

/// What confines the workload, with what that confinement measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confinement {
    /// The embedded runtime: namespaces, the sandbox's own init, and Landlock, seccomp,
    /// loopback and cgroup limits as the probe container measured them.
    Embedded {
        /// Landlock enforced every handled right.
        landlock_full: bool,
        /// The kernel's Landlock ABI.
        landlock_abi: u32,
        /// The ruleset's status in words (`full`, `partial`, `none`).
        landlock_status: String,
        /// The seccomp filter was in force (`Seccomp: 2`).
        seccomp: bool,
        /// `lo` came up in the private namespace; else why not.
        loopback: Result<(), String>,
        /// The cgroup limits that were applied and read back; else why not.
        limits: Result<String, String>,
        /// The egress proxy's listener was made in the private namespace (network `Gated`);
        /// else why not.
        proxy: Result<(), String>,
    },
    /// A standard OCI runtime (`runc`, `crun`) running an exported bundle.
    Standard {
        /// The bundle shares the host's network namespace (network allowed, or a broad grant).
        host_network: bool,
    },
    /// Seatbelt (`sandbox-exec`) on macOS.
    Seatbelt {
        /// Egress goes only through the authenticated proxy.
        proxy: bool,
    },
}

/// One backend's facts for one profile.
#[derive(Clone, Debug)]
pub struct Facts<'a> {
    /// The profile assessed.
    pub profile: &'a Profile,
    /// The compiler's policy entries for the profile (`Bundle::policy_entries`).
    pub policy: &'a [ReportEntry],
    /// How the environment was scrubbed, in words.
    pub env_scrub: String,
    /// What confines the workload.
    pub confinement: Confinement,
}

/// The level, guarantees and report that `facts` achieve.
pub fn assess(facts: &Facts<'_>) -> (Level, Guarantees, CompileReport) {
    let config = facts.profile.config();
    let network = config.network;
    let mut r = CompileReport::default();
    r.set(ReportEntry::new("process-boundary", Status::Enforced, process_boundary(&facts.confinement)));
    for e in facts.policy.iter().filter(|e| e.feature != "runtime-closure") {
        r.set(e.clone());
    }
    r.set(ReportEntry::new("env-scrub", Status::Enforced, facts.env_scrub.clone()));
    let mut guarantees = Guarantees {
        process_boundary: true,
        write_boundary: true,
        read_boundary: true,
        env_scrub: true,
        network_boundary: network != Access::Allow,
        address_network: false,
        resource_limits: false,
        target_network: false,
    };
    let level = match &facts.confinement {
        Confinement::Embedded { landlock_full, landlock_abi, landlock_status, seccomp, loopback, limits, proxy } => {
            let (extra, unix) =
                unix_sockets_entry(network == Access::Allow, config.unix_sockets, *seccomp, *landlock_full);
            r.set(if network == Access::Allow {
                ReportEntry::new("network-boundary", Status::Vacuous, "network is allowed")
            } else {
                let base = if *seccomp {
                    "private network namespace with only lo; vsock refused by seccomp"
                } else {
                    "private network namespace with only lo"
                };
                ReportEntry::new(
                    "network-boundary",
                    Status::Enforced,
                    extra.map_or_else(|| base.to_owned(), |extra| format!("{base}; {extra}")),
                )
            });
            r.set(unix);
            let (held, entry) = target_network_entry(config, *seccomp, proxy);
            guarantees.target_network = held;
            if let Some(entry) = entry {
                r.set(entry);
            }
            r.set(match loopback {
                _ if network == Access::Allow => {
                    ReportEntry::new("loopback", Status::Vacuous, "host network namespace")
                }
                Ok(()) => ReportEntry::new("loopback", Status::Enforced, "lo is up in the private namespace"),
                Err(why) => ReportEntry::new(
                    "loopback",
                    Status::Unenforced,
                    format!("lo could not be raised ({why}): localhost does not work inside"),
                ),
            });
            r.set(if network != Access::Allow {
                ReportEntry::new("abstract-unix", Status::Vacuous, "private network namespace")
            } else if *landlock_abi >= 6 && *landlock_full {
                ReportEntry::new(
                    "abstract-unix",
                    Status::Enforced,
                    "landlock scopes abstract unix sockets to the sandbox",
                )
            } else {
                ReportEntry::new(
                    "abstract-unix",
                    Status::Unenforced,
                    format!("host abstract unix sockets stay reachable: landlock abi {landlock_abi} < 6"),
                )
            });
            r.set(if *landlock_full {
                ReportEntry::new(
                    "landlock",
                    Status::Enforced,
                    format!("abi {landlock_abi}, every filesystem right of this abi handled"),
                )
            } else {
                ReportEntry::new(
                    "landlock",
                    Status::Unenforced,
                    format!(
                        "ruleset {landlock_status} (kernel abi {landlock_abi}): the mount view alone holds the boundaries"
                    ),
                )
            });
            r.set(if *seccomp {
                ReportEntry::new("seccomp", Status::Enforced, "filter installed by the sandbox init (Seccomp: 2)")
            } else {
                ReportEntry::new("seccomp", Status::Unenforced, "the filter could not be installed")
            });
            guarantees.resource_limits = limits.is_ok();
            r.set(match limits {
                Ok(detail) => ReportEntry::new("resource-limits", Status::Enforced, detail.clone()),
                // The backend's words name the reason and the fix for this host.
                Err(why) => ReportEntry::new("resource-limits", Status::Unenforced, why.clone()),
            });
            if *landlock_full && *seccomp { Level::Full } else { Level::Degraded }
        }
        Confinement::Standard { host_network } => {
            let private_network = !*host_network;

            guarantees.network_boundary = private_network;
            let (extra, unix) =
                unix_sockets_entry(network == Access::Allow && *host_network, config.unix_sockets, true, false);
            let base = if network == Access::Allow && *host_network {
                ReportEntry::new("network-boundary", Status::Vacuous, "network is allowed")
            } else if private_network {
                ReportEntry::new("network-boundary", Status::Enforced, "private network namespace")
            } else {
                ReportEntry::new(
                    "network-boundary",
                    Status::Unenforced,
                    "the broad grant's port scoping needs landlock",
                )
            };
            r.set(match extra {
                Some(extra) => ReportEntry::new("network-boundary", base.status, format!("{}; {extra}", base.detail)),
                None => base,
            });
            r.set(unix);
            if network == Access::Gated && private_network {
                r.set(ReportEntry::new(
                    "target-network",
                    Status::Unenforced,
                    "a standard runtime runs no egress proxy: the private network namespace lets nothing out",
                ));
            }
            r.set(if private_network {
                ReportEntry::new("loopback", Status::Enforced, "standard runtimes raise lo in the private namespace")
            } else {
                ReportEntry::new("loopback", Status::Vacuous, "host network namespace")
            });
            r.set(if *host_network {
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
            // The read-only binds are mounts, which a standard runtime makes; the creation
            // guard is the sandbox init's, which it does not run. Without it the list does not
            // hold what it promises (red team AS, 5 December: under runc a workload wrote a
            // repository's `commondir` naming a config of its own, and the host's next
            // `git status` ran its fsmonitor; a symlink put where git writes `COMMIT_EDITMSG`
            // had the host's commit overwrite a file of the workload's choosing): unenforced.
            if let Some(e) = r.get("protected-paths").filter(|e| e.status != Status::Vacuous).cloned() {
                r.set(ReportEntry::new(
                    "protected-paths",
                    Status::Unenforced,
                    format!(
                        "{}; a standard runtime does not run the sandbox init's creation guard: the existing entries \
                         are bound read-only, but entries that do not exist can be created (an `.envrc`, a \
                         repository's `commondir`, a new repository's hooks) and nothing else in a git directory is \
                         guarded (a symlink where the host's git writes): the host may later run what the workload \
                         wrote; run the bundle with `sandbox run` for the guard",
                        e.detail
                    ),
                ));
            }
            r.set(ReportEntry::new(
                "resource-limits",
                Status::Unenforced,
                "exported bundles carry no cgroupsPath and no resources",
            ));
            // Namespaces and seccomp, no Landlock.
            Level::Degraded
        }
        Confinement::Seatbelt { proxy } => {
            // Only a closed network can be one that the proxy alone opens.
            guarantees.target_network = *proxy && network != Access::Allow;
            r.set(if network == Access::Allow {
                ReportEntry::new("network-boundary", Status::Vacuous, "network is allowed")
            } else {
                ReportEntry::new("network-boundary", Status::Enforced, "seatbelt denies network, localhost included")
            });
            r.set(if network == Access::Allow {
                ReportEntry::new("loopback", Status::Vacuous, "network is allowed")
            } else {
                ReportEntry::new(
                    "loopback",
                    Status::Unenforced,
                    "macos has no private loopback: localhost is denied too",
                )
            });
            r.set(ReportEntry::new(
                "resource-limits",
                Status::Unenforced,
                "seatbelt enforces no resource limits (no cgroups on macos)",
            ));
            Level::Full
        }
    };
    match &facts.confinement {
        Confinement::Seatbelt { .. } => {
            r.set(ReportEntry::new(
                "runtime-closure",
                Status::Widened,
                "read and execute of the macos system closure (/usr/lib, /usr/bin, /System, the dyld cache, …)",
            ));
            r.set(ReportEntry::new(
                "xcrun-cache",
                Status::Widened,
                "the per-user developer-tools cache is readable and writable",
            ));
            r.set(ReportEntry::new("pty-slave-ioctl", Status::Widened, "terminal ioctls on the pty"));
        }
        _ => {
            if let Some(c) = facts.policy.iter().find(|e| e.feature == "runtime-closure") {
                r.set(c.clone());
            }
        }
    }
    (level, guarantees, r)
}

/// Whether `target-network` holds for an embedded run, and its report entry: network `Gated`,
/// the proxy's listener made in the private namespace, seccomp in force (vsock closed) and unix
/// sockets closed, so that nothing but the proxy leaves the namespace. No entry unless the
/// network is `Gated` (with `Deny` nothing leaves, with `Allow` everything does).
fn target_network_entry(
    config: &crate::ProfileConfig,
    seccomp: bool,
    proxy: &Result<(), String>,
) -> (bool, Option<ReportEntry>) {
    let entry = |status, detail: String| Some(ReportEntry::new("target-network", status, detail));
    if config.network != Access::Gated {
        return (false, None);
    }
    if let Err(why) = proxy {
        return (
            false,
            entry(Status::Unenforced, format!("the egress proxy could not be set up ({why}): nothing leaves")),
        );
    }
    if !seccomp {
        return (
            false,
            entry(Status::Unenforced, String::from("seccomp is not in force: vsock stays open beside the proxy")),
        );
    }
    if config.unix_sockets == Access::Allow {
        return (
            false,
            entry(
                Status::Unenforced,
                String::from("unix_sockets allow: host unix sockets stay reachable beside the proxy"),
            ),
        );
    }
    let n = config.network_targets.len();
    let targets = if n == 0 {
        String::from("no target without a grant")
    } else {
        let list: Vec<String> = config.network_targets.iter().map(ToString::to_string).collect();
        list.join(", ")
    };
    (
        true,
        entry(
            Status::Enforced,
            format!(
                "egress only through the authenticated proxy at 127.0.0.1:{} in the private namespace ({targets}); \
                 names resolved by the proxy, non-public addresses refused unless named; a network.broad.v1 grant \
                 opens its port directly for its spawn",
                crate::target::PROXY_PORT
            ),
        ),
    )
}

fn process_boundary(confinement: &Confinement) -> &'static str {
    match confinement {
        Confinement::Embedded { .. } => {
            "user, mount, pid, ipc, uts and cgroup namespaces; network namespace unless network is allowed"
        }
        Confinement::Standard { .. } => "user, mount, pid, ipc, uts and cgroup namespaces",
        Confinement::Seatbelt { .. } => {
            "seatbelt profile applied by sandbox-exec: process info of this sandbox only, a named list of \
             sysctls and mach services; compiled and type-checked on linux only, nothing of this backend has \
             run on macos"
        }
    }
}

/// The `unix-sockets` report entry (issue 12 class 4a) for a spawn whose network is open
/// (`network_open`: network `Allow` in the host namespace) or not, with the profile's
/// `unix_sockets`, `seccomp` saying whether the filter is in force and `landlock` whether the
/// ruleset is (it withholds `make_sock`, so that a stream socketpair's end cannot be bound to a
/// path); and, where the network is otherwise closed but unix sockets are not, the words the
/// `network-boundary` entry must add so that it never claims more than it covers.
pub fn unix_sockets_entry(
    network_open: bool,
    unix_sockets: Access,
    seccomp: bool,
    landlock: bool,
) -> (Option<String>, ReportEntry) {
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
    const MADE: &str = "no unix socket can be made (socket(AF_UNIX) and datagram socketpairs are refused; stream and seqpacket socketpairs work";
    let bind = if landlock {
        "binding one to a path is refused by landlock)"
    } else {
        "one can be bound to a path in a writable area, making a socket file nothing can connect to: landlock is \
         not in force)"
    };
    (None, ReportEntry::new("unix-sockets", Status::Enforced, format!("{MADE}; {bind}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::access::{Access, Isolation};
    use crate::profile::ProfileConfig;
    use crate::report::check_invariants;

    const ORDER: [&str; 15] = [
        "process-boundary",
        "read-boundary",
        "write-boundary",
        "env-scrub",
        "network-boundary",
        "unix-sockets",
        "target-network",
        "loopback",
        "abstract-unix",
        "landlock",
        "seccomp",
        "resource-limits",
        "runtime-closure",
        "xcrun-cache",
        "pty-slave-ioctl",
    ];

    fn profile(network: Access) -> Profile {
        Profile::new(ProfileConfig {
            workspace_root: std::path::PathBuf::from("/"),
            workspace_read: Access::Allow,
            command: Access::Allow,
            network,
            ..ProfileConfig::default()
        })
        .unwrap()
    }

    fn policy() -> Vec<ReportEntry> {
        vec![
            ReportEntry::new("read-boundary", Status::Enforced, "r"),
            ReportEntry::new("write-boundary", Status::Enforced, "w"),
            ReportEntry::new("runtime-closure", Status::Vacuous, "c"),
        ]
    }

    fn embedded(landlock_full: bool, seccomp: bool, limits: Result<String, String>) -> Confinement {
        Confinement::Embedded {
            landlock_full,
            landlock_abi: if landlock_full { 7 } else { 0 },
            landlock_status: String::from(if landlock_full { "full" } else { "none" }),
            seccomp,
            loopback: Ok(()),
            limits,
            proxy: Ok(()),
        }
    }

    fn every_case() -> Vec<(Access, Confinement)> {
        let mut cases = Vec::new();
        for network in [Access::Deny, Access::Gated, Access::Allow] {
            for (l, s) in [(true, true), (true, false), (false, true), (false, false)] {
                cases.push((network, embedded(l, s, Ok(String::from("pids.max 128")))));
                cases.push((network, embedded(l, s, Err(String::from("no cgroup parent")))));
                let mut no_proxy = embedded(l, s, Ok(String::from("pids.max 128")));
                if let Confinement::Embedded { proxy, .. } = &mut no_proxy {
                    *proxy = Err(String::from("EADDRINUSE"));
                }
                cases.push((network, no_proxy));
            }
            cases.push((network, Confinement::Standard { host_network: network == Access::Allow }));
            cases.push((network, Confinement::Standard { host_network: true }));
            cases.push((network, Confinement::Seatbelt { proxy: false }));
            cases.push((network, Confinement::Seatbelt { proxy: true }));
        }
        cases
    }

    #[test]
    fn every_backend_reports_in_the_one_order_and_keeps_the_invariants() {
        let policy = policy();
        for (network, confinement) in every_case() {
            let p = profile(network);
            let facts = Facts { profile: &p, policy: &policy, env_scrub: String::from("e"), confinement };
            let (level, g, report) = assess(&facts);
            let positions: Vec<usize> = report
                .entries
                .iter()
                .map(|e| ORDER.iter().position(|o| *o == e.feature).unwrap_or_else(|| panic!("{}", e.feature)))
                .collect();
            assert!(positions.windows(2).all(|w| w[0] < w[1]), "{:?}: {positions:?}", facts.confinement);
            assert!(
                check_invariants(level, g, Some(Isolation::Sandboxed), Some(&report)).is_ok(),
                "{:?}: {:?}",
                facts.confinement,
                check_invariants(level, g, Some(Isolation::Sandboxed), Some(&report))
            );
            assert_eq!(report.get("env-scrub").map(|e| e.detail.as_str()), Some("e"));
        }
    }

    #[test]
    fn target_network_is_claimed_only_with_a_live_proxy_and_nothing_else_open() {
        let policy = policy();
        let claim = |p: &Profile, confinement| {
            let (_, g, r) = assess(&Facts { profile: p, policy: &policy, env_scrub: String::new(), confinement });
            let entry = r.get("target-network").map(|e| e.status);
            (g.target_network, entry)
        };
        let gated = profile(Access::Gated);
        assert_eq!(claim(&gated, embedded(true, true, Ok(String::new()))), (true, Some(Status::Enforced)));
        let mut dead = embedded(true, true, Ok(String::new()));
        if let Confinement::Embedded { proxy, .. } = &mut dead {
            *proxy = Err(String::from("x"));
        }
        assert_eq!(claim(&gated, dead), (false, Some(Status::Unenforced)));
        assert_eq!(claim(&gated, embedded(true, false, Ok(String::new()))), (false, Some(Status::Unenforced)));
        let unix = Profile::new(ProfileConfig { unix_sockets: Access::Allow, ..gated.config().clone() }).unwrap();
        assert_eq!(claim(&unix, embedded(true, true, Ok(String::new()))), (false, Some(Status::Unenforced)));
        for network in [Access::Deny, Access::Allow] {
            assert_eq!(claim(&profile(network), embedded(true, true, Ok(String::new()))), (false, None), "{network}");
        }
        let standard = claim(&gated, Confinement::Standard { host_network: false });
        assert_eq!(standard, (false, Some(Status::Unenforced)));
    }

    #[test]
    fn the_level_and_bits_follow_the_measured_facts() {
        let policy = policy();
        let p = profile(Access::Deny);
        let assess_with =
            |confinement| assess(&Facts { profile: &p, policy: &policy, env_scrub: String::new(), confinement });
        let (level, g, _) = assess_with(embedded(true, true, Ok(String::from("x"))));
        assert_eq!(level, Level::Full);
        assert!(g.resource_limits && g.network_boundary);
        for (l, s) in [(true, false), (false, true)] {
            assert_eq!(assess_with(embedded(l, s, Ok(String::from("x")))).0, Level::Degraded, "{l} {s}");
        }
        let (_, g, r) = assess_with(embedded(true, true, Err(String::from("why"))));
        assert!(!g.resource_limits);
        assert_eq!(r.get("resource-limits").map(|e| e.status), Some(Status::Unenforced));
        let (level, g, r) = assess_with(Confinement::Standard { host_network: true });
        assert_eq!(level, Level::Degraded);
        assert!(!g.network_boundary, "a broad grant in a standard runtime has no port scoping");
        assert_eq!(r.get("landlock").map(|e| e.status), Some(Status::Unenforced));
        let (level, g, r) = assess_with(Confinement::Seatbelt { proxy: true });
        assert_eq!(level, Level::Full);
        assert!(g.target_network && !g.resource_limits);
        assert!(r.get("landlock").is_none() && r.get("seccomp").is_none());
        assert_eq!(r.get("runtime-closure").map(|e| e.status), Some(Status::Widened));
    }
}
