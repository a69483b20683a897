//! The bundle compiler: one profile + one spawn → one OCI bundle (CONTRACT.md §15, §18).
//!
//! Compilation lowers the effective per-spawn policy to an ordered, typed mount plan
//! ([`MountPlan`]), checks it, and writes one OCI `mounts` entry per planned mount. The spec is
//! built explicitly, field by field; nothing starts from `Spec::default()`.
//!
//! The parts: `plan` (the effective authority and the mount plan), `landlock` (the Landlock
//! rules derived from the plan), `expected` (what the init checks after mounting), `report`
//! (the policy entries and the standard runtime's report) and `spec` (the OCI spec).

use std::path::PathBuf;

use oci_spec::runtime::Spec;

use crate::access::{Access, Isolation};
use crate::error::Error;
use crate::host::HostView;
use crate::profile::Profile;
use crate::protect::{CreationGuard, ProtectScan, Protected};
use crate::report::{CompileReport, Guarantees, ReportEntry};
use crate::seccomp;

mod expected;
mod landlock;
mod plan;
mod report;
mod spec;

pub use expected::ExpectedMount;
pub use landlock::{LandlockPathRule, LandlockRules};
pub use plan::{MountKind, MountPlan, Origin, PlannedMount};
pub use spec::ROOTFS;
pub use spec::spec_json;

use crate::path::is_clean_absolute;
use plan::{Authority, Planned};

/// Grants that apply to one spawn, already verified by the runtime: each lifts one Gated axis.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrantDeltas {
    /// `filesystem.path.read.v1` targets (canonical regular files).
    pub read_paths: Vec<PathBuf>,
    /// `filesystem.path.write.v1` targets.
    pub write_paths: Vec<PathBuf>,
    /// `filesystem.tree.read.v1` targets (canonical directories).
    pub read_trees: Vec<PathBuf>,
    /// `filesystem.tree.write.v1` targets.
    pub write_trees: Vec<PathBuf>,
    /// `filesystem.host.read.v1`.
    pub host_read: bool,
    /// `filesystem.host.write.v1`.
    pub host_write: bool,
    /// `network.broad.v1`: the granted TCP port.
    pub broad_port: Option<u16>,
    /// `network.proxy-target.v1` targets: reachable through the egress proxy for this spawn.
    pub proxy_targets: Vec<crate::target::TargetPattern>,
    /// `(target, st_dev, st_ino)` of every path and tree target verified at this spawn: the
    /// init checks the mounted destination against them (issue 12, 3b).
    pub identities: Vec<(PathBuf, u64, u64)>,
}

/// How the bundle will be run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// By the embedded runtime: a per-spawn cgroup when a usable parent exists.
    Embedded {
        /// The absolute per-spawn `cgroupsPath` (`<parent>/<container id>`), or none.
        cgroups_path: Option<String>,
        /// `pids.max`, applied only with a cgroup.
        pids_max: Option<u32>,
        /// `memory.max` in bytes, applied only with a cgroup.
        memory_max: Option<u64>,
        /// `RLIMIT_NPROC` (soft and hard) of the run's processes, when no pids controller bounds
        /// them: counted per user namespace (Linux 5.14 on), so it bounds this run alone.
        nproc: Option<u64>,
    },
    /// Exported for a standard OCI runtime: no `cgroupsPath`, no `resources`.
    Export,
}

/// Everything about one spawn that is not the profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnContext {
    /// The program and its arguments (no shell is added here).
    pub argv: Vec<String>,
    /// The working directory, absolute; it must lie inside the container's view.
    pub cwd: PathBuf,
    /// The scrubbed environment, in order.
    pub env: Vec<(String, String)>,
    /// Whether the process gets a terminal.
    pub tty: bool,
    /// The executor's isolated HOME, bound read-write (`IsolatedHome` only).
    pub home_dir: Option<PathBuf>,
    /// The executor's TMPDIR, bound read-write.
    pub temp_dir: PathBuf,
    /// The scratch root, masked wherever a bind covers it.
    pub scratch_root: PathBuf,
    /// Other executor sets' scratch roots (and the registry that lists them), masked wherever
    /// a bind covers them: no sandbox reads another set's HOME, TMPDIR, bundles or state.
    /// Entries that are not clean absolute paths, `/`, or the own scratch root are ignored.
    pub other_scratch_roots: Vec<PathBuf>,
    /// The caller's uid, mapped to container uid 0.
    pub uid: u32,
    /// The caller's gid, mapped to container gid 0.
    pub gid: u32,
    /// Landlock will be applied inside (the embedded runtime on a kernel with Landlock).
    pub landlock: bool,
    /// An egress route is set (§19): the network is private whatever the profile says.
    pub egress_route: bool,
    /// How the bundle is run.
    pub launch: Launch,
    /// Verified grants for this spawn.
    pub grants: GrantDeltas,
    /// What the protected-paths scan found at this spawn ([`crate::protect::scan`]).
    pub protected: ProtectScan,
}

/// A compiled bundle: the OCI spec, its plan and what a runtime can achieve with it.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// The OCI runtime spec (`config.json`).
    pub spec: Spec,
    /// The mount plan the spec's `mounts` were written from.
    pub plan: MountPlan,
    /// The Landlock rules (also in the `sandbox.landlock` annotation).
    pub landlock: LandlockRules,
    /// The process shares the host network namespace.
    pub host_network: bool,
    /// The spawn runs under a broad network grant (UDP and MPTCP filtered, TCP ports scoped).
    pub broad_network: bool,
    /// The spawn's only way out is the egress proxy (issue 17): network `Gated` without a broad
    /// grant. The runner puts the proxy's listener in the private network namespace.
    pub egress_proxy: bool,
    /// Which conditional seccomp rules the spawn carries (unix sockets, vsock, broad network).
    pub seccomp: seccomp::SpawnRules,
    /// Policy facts every backend reports: `read-boundary`, `write-boundary` and
    /// `runtime-closure` entries as the plan achieves them.
    pub policy_entries: Vec<ReportEntry>,
    /// What a standard OCI runtime achieves with this bundle (the `sandbox.report` annotation).
    pub standard_report: CompileReport,
    /// The guarantee bits a standard OCI runtime achieves (the `sandbox.guarantees` annotation).
    pub standard_guarantees: Guarantees,
    /// What the init verifies after mounting (the `sandbox.identities` annotation).
    pub expected: Vec<ExpectedMount>,
    /// The protected paths of this spawn (issue 14): bound read-only where they exist, refused
    /// creation where they do not (the `sandbox.protect` annotation carries `guard`).
    pub protection: Protected,
}

/// The annotation (value `1`) of a bundle whose spawn reaches the network only through the
/// egress proxy ([`Bundle::egress_proxy`]): the Linux backend's init then watches the
/// workload's direct network calls, and reports those it refused (issue 17). Absent otherwise.
pub const EGRESS_PROXY_ANNOTATION: &str = "sandbox.egress-proxy";

/// Whether a spawn of `profile` with `grants` reaches the network only through the egress proxy
/// (issue 17): a sandboxed profile whose network is `Gated`, without a broad grant (which opens
/// its port in the host's namespace instead).
pub fn egress_proxy(profile: &Profile, grants: &GrantDeltas) -> bool {
    let config = profile.config();
    config.isolation == Isolation::Sandboxed && config.network == Access::Gated && grants.broad_port.is_none()
}

/// Compiles one spawn of `profile` into a bundle.
///
/// Fails with [`Error::InvalidArgument`] when the spawn itself is unusable (empty argv, relative
/// or invisible cwd, an unconfined profile), with [`Error::Runtime`] when the embedded seccomp
/// policy is invalid (no bundle runs with an empty filter), and never touches the filesystem:
/// host facts come from `host`.
pub fn compile(profile: &Profile, spawn: &SpawnContext, host: &HostView) -> Result<Bundle, Error> {
    let config = profile.config();
    if config.isolation == Isolation::Unconfined {
        return Err(Error::argument("profile: an unconfined profile has no bundle"));
    }
    if spawn.argv.is_empty() || spawn.argv[0].is_empty() {
        return Err(Error::argument("argv: empty"));
    }
    if spawn.argv.iter().any(|a| a.contains('\0')) {
        return Err(Error::argument("argv: contains NUL"));
    }
    let paths =
        [("cwd", Some(&spawn.cwd)), ("temp_dir", Some(&spawn.temp_dir)), ("scratch_root", Some(&spawn.scratch_root))];
    for (name, path) in paths.into_iter().chain([("home_dir", spawn.home_dir.as_ref())]) {
        if let Some(path) = path.filter(|p| !is_clean_absolute(p)) {
            return Err(Error::argument(format!("{name}: {} is not a clean absolute path", path.display())));
        }
    }
    if let Some(why) = &spawn.protected.refused {
        return Err(Error::profile(why.clone()));
    }
    let g = &spawn.grants;
    let authority = Authority::new(profile, g);
    let host_network = (config.network == Access::Allow || g.broad_port.is_some()) && !spawn.egress_route;
    let broad_network = host_network && config.network != Access::Allow;
    let network_open = host_network && !broad_network;
    let seccomp_rules = seccomp::SpawnRules {
        broad_network,
        network_open,
        unix_sockets_open: network_open || config.unix_sockets == Access::Allow,
    };

    let Planned { planner, rootfs_symlinks, host_entries_bound, replaced, write_narrowed, denied, reopened } =
        plan::plan(profile, spawn, host, &authority)?;
    let expected = expected::expected_mounts(profile, g, &spawn.protected, &planner);
    let plan = MountPlan { mounts: planner.ops, rootfs_symlinks, denied, reopened };
    let landlock = landlock::landlock_rules(
        &plan,
        g.broad_port.filter(|_| broad_network),
        host_network,
        seccomp_rules.unix_sockets_open,
    );
    let protection = protection(profile, spawn, &plan);
    let mut policy_entries = report::policy_entries(host, &authority, host_entries_bound, replaced, &write_narrowed);
    policy_entries.insert(2.min(policy_entries.len()), report::protected_entry(&protection));
    let (standard_report, standard_guarantees) = report::standard(profile, &policy_entries, host_network);
    let private_network = !host_network;
    let proxied = egress_proxy(profile, g) && !host_network;

    let spec = spec::build_spec(
        profile,
        spawn,
        &plan,
        &landlock,
        private_network,
        proxied,
        seccomp_rules,
        &standard_report,
        standard_guarantees,
        &expected,
        &protection,
    )?;
    Ok(Bundle {
        spec,
        plan,
        landlock,
        host_network,
        broad_network,
        egress_proxy: proxied,
        seccomp: seccomp_rules,
        policy_entries,
        standard_report,
        standard_guarantees,
        expected,
        protection,
    })
}

/// The protections of one spawn: the profile's entries, what the plan bound read-only, and
/// what the creation guard refuses: the missing entries and, so that none can be made again
/// after its object was moved, the bound ones too.
fn protection(profile: &Profile, spawn: &SpawnContext, plan: &MountPlan) -> Protected {
    let scan = &spawn.protected;
    let p = &profile.config().protected_paths;
    let bound: Vec<PathBuf> = plan
        .mounts
        .iter()
        .filter(|m| !m.below && m.origin == Origin::Protected && m.source.as_ref() == Some(&m.destination))
        .map(|m| m.destination.clone())
        .collect();
    let (exempt, not_exempt) = exempt(profile, spawn);
    let mut paths: Vec<PathBuf> = scan.missing.iter().chain(&bound).cloned().collect();
    paths.sort();
    paths.dedup();
    Protected {
        version: p.version().to_owned(),
        entries: p.entries(),
        bound,
        guard: CreationGuard {
            version: p.version().to_owned(),
            names: p.names(),
            paths,
            exempt,
            not_exempt,
            no_new_repositories: scan.repositories.clone(),
            no_new_entries: scan.no_new_entries.clone(),
            hidden_in: scan.hidden_in.clone(),
            denied: plan.denied.iter().chain(&scan.unreadable).cloned().collect(),
            reopened: plan.reopened.clone(),
        },
        narrowed: scan.narrowed.clone(),
    }
}

/// The sandbox's private directories, where the names are not refused (see
/// [`CreationGuard::exempt`]).
fn exempt(profile: &Profile, spawn: &SpawnContext) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut out = vec![PathBuf::from("/tmp"), PathBuf::from("/dev/shm"), spawn.temp_dir.clone()];
    if let Some(home) = spawn.home_dir.as_ref().filter(|_| profile.config().home == crate::access::Home::IsolatedHome) {
        out.push(home.clone());
    }
    // A private directory that holds (or lies in) an area or a grant target is not exempt: a
    // workspace or a granted tree under `/tmp` is the host's, bound over the private tmpfs.
    let g = &spawn.grants;
    let targets: Vec<&std::path::Path> = profile
        .areas()
        .map(|(a, _, _)| a)
        .chain(
            g.read_trees.iter().chain(&g.write_trees).chain(&g.read_paths).chain(&g.write_paths).map(PathBuf::as_path),
        )
        .collect();
    // Only where the area or target holds the private directory (a workspace at `/tmp`) is
    // the whole directory not exempt; one that lies beneath it (`/tmp/x/ws`) is listed in
    // `not_exempt`, and the rest of the private directory stays exempt (a clone into `/tmp`
    // of a repository with `.gitmodules` worked again, the evening red team of 4 December).
    out.retain(|e| !targets.iter().any(|a| e.starts_with(a)));
    let mut not_exempt: Vec<PathBuf> =
        targets.iter().filter(|a| out.iter().any(|e| a.starts_with(e))).map(|a| a.to_path_buf()).collect();
    not_exempt.sort();
    not_exempt.dedup();
    (out, not_exempt)
}
