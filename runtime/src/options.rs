//! `ExecutorSetOptions` (CONTRACT.md §9, §10): builders that never fail; `ExecutorSet::new`
//! checks every value.

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sandbox_bundle::{EnvOptions, Error, Home, Host, Profile, check_seed};

/// The default CPU weight of a spawn (cgroup v2 units; a host process has 100).
pub(crate) const DEFAULT_CPU_WEIGHT: u16 = 10;
/// The smallest CPU bound: 1 ms of CPU per 100 ms period (the kernel's minimum quota).
pub(crate) const MIN_MILLICPUS: u32 = 10;
/// The largest CPU bound: a thousand CPUs.
pub(crate) const MAX_MILLICPUS: u32 = 1_000_000;

/// The default `pids.max` (issue 12, class 13): 128 tasks per CPU, at least 1024 and at most
/// 4096 (threads count). What builds need grows with the CPU count (`cargo build` and `make -j`
/// run a job or a few tasks per CPU; a small `cargo build` here peaked at 14 tasks; JVM and Node
/// toolchains take tens of threads per worker), while what a fork bomb costs the host is worst
/// on small machines: on this 2-core host a bomb at 1024 ended 0.1-0.5 s after an 8 s deadline
/// and delayed host spawns by at most 0.2-0.4 s, at 4096 it ended 1.8-4.6 s late with host
/// spawns delayed up to 2.3 s (both at the low CPU weight, with other load on the host).
pub(crate) fn default_pids_max() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    u32::try_from(cpus.saturating_mul(128)).unwrap_or(u32::MAX).clamp(1024, 4096)
}

/// Options of an [`crate::ExecutorSet`].
#[derive(Clone, Debug)]
pub struct ExecutorSetOptions {
    pub(crate) scratch_root: PathBuf,
    pub(crate) max_executors: usize,
    pub(crate) grant_ttl: Duration,
    pub(crate) pids_max: u32,
    pub(crate) memory_max: Option<u64>,
    pub(crate) cpu_weight: u16,
    pub(crate) cpu_max_millicpus: Option<u32>,
    pub(crate) cgroup_parent: Option<PathBuf>,
    pub(crate) env: EnvOptions,
    pub(crate) seed_home: Vec<(PathBuf, PathBuf)>,
    pub(crate) resolve: Vec<(String, IpAddr)>,
    /// Read by the Linux backend only (Seatbelt has no containers to keep).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) reuse_containers: bool,
}

impl ExecutorSetOptions {
    /// Options with the required scratch root (an existing directory the caller owns).
    pub fn new(scratch_root: impl Into<PathBuf>) -> Self {
        ExecutorSetOptions {
            scratch_root: scratch_root.into(),
            max_executors: 0,
            grant_ttl: Duration::from_secs(15 * 60),
            pids_max: default_pids_max(),
            memory_max: None,
            cpu_weight: DEFAULT_CPU_WEIGHT,
            cpu_max_millicpus: None,
            cgroup_parent: None,
            env: EnvOptions::default(),
            seed_home: Vec::new(),
            resolve: Vec::new(),
            reuse_containers: true,
        }
    }

    /// Whether the set may keep a container whose run has ended for the next spawn of the same
    /// shape, and build warm ones ahead (default true; issue 16: from a shape's second spawn on
    /// a call then costs a fork and an exec, not a container build). What stays per run either
    /// way: `THREAT-MODEL.md`, "Kept containers". A caller that makes one spawn per set (the
    /// CLI) sets false: each spawn then gets a fresh container whose init runs the process and
    /// ends with it, which saves the hand-over round trip and the clean-up for a next run.
    pub fn reuse_containers(self, reuse: bool) -> Self {
        ExecutorSetOptions { reuse_containers: reuse, ..self }
    }

    /// The most executor keys the set holds (required, at least 1).
    pub fn max_executors(self, n: usize) -> Self {
        ExecutorSetOptions { max_executors: n, ..self }
    }

    /// The longest grant lifetime (default 15 minutes).
    pub fn grant_ttl(self, ttl: Duration) -> Self {
        ExecutorSetOptions { grant_ttl: ttl, ..self }
    }

    /// `pids.max` of every spawn's cgroup (default: 128 per CPU, at least 1024 and at most
    /// 4096; see `default_pids_max`).
    pub fn pids_max(self, n: u32) -> Self {
        ExecutorSetOptions { pids_max: n, ..self }
    }

    /// `memory.max` of every spawn's cgroup in bytes (default: none).
    pub fn memory_max(self, bytes: u64) -> Self {
        ExecutorSetOptions { memory_max: Some(bytes), ..self }
    }

    /// The CPU weight of every spawn's cgroup, in cgroup v2 units (1-10000; the host's
    /// processes have 100): default 10, so that under contention sandboxed work gets about a
    /// tenth of what a host process gets, and all idle CPU when nothing else wants it. Written
    /// as `cpu.weight` on cgroup v2 and as `cpu.shares` (weight × 1024 / 100) on v1.
    pub fn cpu_weight(self, weight: u16) -> Self {
        ExecutorSetOptions { cpu_weight: weight, ..self }
    }

    /// A hard CPU bound of every spawn's cgroup, in thousandths of a CPU (1000 = one CPU;
    /// 10-1,000,000), over a 100 ms period: `cpu.max` on cgroup v2, `cpu.cfs_quota_us` on v1.
    /// Default: none (the weight alone).
    pub fn cpu_max_millicpus(self, millicpus: u32) -> Self {
        ExecutorSetOptions { cpu_max_millicpus: Some(millicpus), ..self }
    }

    /// The cgroup under which each spawn gets its own (Linux; absolute and clean, relative to
    /// the cgroup root). Default: `SANDBOX_CGROUP_PARENT` from the environment when set, else
    /// `/sandbox` as root, else the caller's own cgroup v2 when this user may write it (a
    /// delegated systemd unit or scope, a container's own cgroup namespace), else none: the
    /// runs are then confined all the same, and `resource-limits` is reported unenforced with
    /// the reason and the fix.
    pub fn cgroup_parent(self, path: impl Into<PathBuf>) -> Self {
        ExecutorSetOptions { cgroup_parent: Some(path.into()), ..self }
    }

    /// The configured cgroup parent: the option, else `SANDBOX_CGROUP_PARENT` when set and not
    /// empty.
    pub(crate) fn configured_cgroup_parent(&self) -> Option<PathBuf> {
        self.cgroup_parent.clone().or_else(env_cgroup_parent)
    }

    /// Adds names that pass the environment scrub.
    pub fn pass_env(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.env.pass_env.extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets a variable in every child (last one wins).
    pub fn set_env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        let name = name.into();
        self.env.set_env.retain(|(n, _)| *n != name);
        self.env.set_env.push((name, value.into()));
        self
    }

    /// Copies `src_file` into every isolated HOME at `rel_dest`.
    pub fn seed_home(mut self, src_file: impl Into<PathBuf>, rel_dest: impl Into<PathBuf>) -> Self {
        self.seed_home.push((src_file.into(), rel_dest.into()));
        self
    }

    /// Pins `name` to `address` for the egress proxy's resolver (issue 17), like curl's
    /// `--resolve`: the proxy connects there instead of asking DNS, and a pinned address counts
    /// as named by the caller, so a loopback or private address is allowed for that name (test
    /// servers, split-horizon DNS). A name may be pinned to several addresses (tried in order).
    /// Only the targets the profile or a grant allows are reachable either way.
    pub fn resolve(mut self, name: impl Into<String>, address: IpAddr) -> Self {
        self.resolve.push((name.into(), address));
        self
    }

    /// The pins of [`ExecutorSetOptions::resolve`], normalized and grouped by name (names were
    /// checked by `validate`).
    pub(crate) fn pins(&self) -> Vec<(Host, Vec<IpAddr>)> {
        let mut pins: Vec<(Host, Vec<IpAddr>)> = Vec::new();
        for (name, address) in &self.resolve {
            let Ok(host) = Host::parse(name) else { continue };
            match pins.iter_mut().find(|(h, _)| *h == host) {
                Some((_, addresses)) if !addresses.contains(address) => addresses.push(*address),
                Some(_) => {}
                None => pins.push((host, vec![*address])),
            }
        }
        pins
    }

    /// Checks every value (CONTRACT.md §9 step 2), failing with [`Error::InvalidOptions`].
    pub(crate) fn validate(&self, profile: &Profile) -> Result<(), Error> {
        let bad = |detail: &str| Err(Error::InvalidOptions { detail: detail.to_owned() });
        if self.scratch_root.as_os_str().is_empty() {
            return bad("scratch_root: empty");
        }
        if profile.config().isolation == crate::Isolation::Sandboxed && self.scratch_root.to_str().is_none() {
            // Bundles, mounts and Landlock rules under it are text (OCI paths are UTF-8).
            return Err(Error::InvalidOptions {
                detail: format!("scratch_root: {:?} is not valid UTF-8", self.scratch_root),
            });
        }
        if self.max_executors == 0 {
            return bad("max_executors: must be set and at least 1");
        }
        if self.grant_ttl.is_zero() {
            return bad("grant_ttl: must not be zero");
        }
        if self.pids_max == 0 {
            return bad("pids_max: must not be zero");
        }
        if self.memory_max == Some(0) {
            return bad("memory_max: must not be zero");
        }
        if !(1..=10_000).contains(&self.cpu_weight) {
            return Err(Error::InvalidOptions {
                detail: format!("cpu_weight: {} is outside 1-10000", self.cpu_weight),
            });
        }
        if let Some(m) = self.cpu_max_millicpus {
            if !(MIN_MILLICPUS..=MAX_MILLICPUS).contains(&m) {
                return Err(Error::InvalidOptions {
                    detail: format!(
                        "cpu_max_millicpus: {m} is outside {MIN_MILLICPUS}-{MAX_MILLICPUS} (thousandths of a CPU)"
                    ),
                });
            }
        }
        if let Some(parent) = &self.configured_cgroup_parent() {
            if !is_clean_absolute(parent) {
                let name = if self.cgroup_parent.is_some() { "cgroup_parent" } else { CGROUP_PARENT_ENV };
                return Err(Error::InvalidOptions {
                    detail: format!("{name}: {} is not an absolute, clean path", parent.display()),
                });
            }
            if parent.starts_with("/sys/fs/cgroup") {
                let name = if self.cgroup_parent.is_some() { "cgroup_parent" } else { CGROUP_PARENT_ENV };
                return Err(Error::InvalidOptions {
                    detail: format!(
                        "{name}: {} is a path of the cgroup filesystem; give the cgroup's path from its hierarchy's \
                         root (for /sys/fs/cgroup/pids/sandbox, /sandbox)",
                        parent.display()
                    ),
                });
            }
        }
        for (i, (name, address)) in self.resolve.iter().enumerate() {
            if sandbox_bundle::target::names_no_host(*address) {
                return Err(Error::InvalidOptions {
                    detail: format!("resolve[{i}]: {address} is the unspecified address, which names no host"),
                });
            }
            match Host::parse(name) {
                Ok(Host::Name(_)) => {}
                Ok(Host::Ip(_)) => {
                    return Err(Error::InvalidOptions {
                        detail: format!("resolve[{i}]: {name:?} is an address, not a name"),
                    });
                }
                Err(why) => return Err(Error::InvalidOptions { detail: format!("resolve[{i}]: {name:?}: {why}") }),
            }
        }
        self.env.validate()?;
        for (i, (src, rel)) in self.seed_home.iter().enumerate() {
            if profile.config().home != Home::IsolatedHome {
                return bad("seed_home: needs an isolated home");
            }
            check_seed(src, rel)?;
            if self.seed_home[..i].iter().any(|(_, r)| r == rel) {
                return Err(Error::InvalidOptions { detail: format!("seed_home: {} is repeated", rel.display()) });
            }
        }
        Ok(())
    }
}

/// The environment variable that sets the default cgroup parent (issue 15).
pub const CGROUP_PARENT_ENV: &str = "SANDBOX_CGROUP_PARENT";

/// `SANDBOX_CGROUP_PARENT` when set and not empty.
pub(crate) fn env_cgroup_parent() -> Option<PathBuf> {
    std::env::var_os(CGROUP_PARENT_ENV).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// A cgroup parent is written into cgroup files as text: clean, absolute and UTF-8.
fn is_clean_absolute(p: &Path) -> bool {
    p.to_str().is_some() && sandbox_bundle::path::is_clean_absolute(p)
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    /// The CPU options (issue 12, class 13): out-of-range values name the option; the edges and
    /// the defaults pass.
    #[test]
    fn cpu_options_are_checked_and_name_the_option() {
        let profile = Profile::new(sandbox_bundle::ProfileConfig {
            workspace_root: PathBuf::from("/"),
            workspace_read: sandbox_bundle::Access::Allow,
            command: sandbox_bundle::Access::Allow,
            ..sandbox_bundle::ProfileConfig::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let base = || ExecutorSetOptions::new("/tmp").max_executors(1);
        assert!(base().validate(&profile).is_ok(), "the defaults");
        assert_eq!(base().cpu_weight, DEFAULT_CPU_WEIGHT);
        assert!((1024..=4096).contains(&base().pids_max), "{}", base().pids_max);
        for ok in [base().cpu_weight(1), base().cpu_weight(10_000), base().cpu_max_millicpus(10)] {
            assert!(ok.validate(&profile).is_ok(), "{ok:?}");
        }
        assert!(base().cpu_max_millicpus(MAX_MILLICPUS).validate(&profile).is_ok());
        for (bad, name) in [
            (base().cpu_weight(0), "cpu_weight"),
            (base().cpu_weight(10_001), "cpu_weight"),
            (base().cpu_max_millicpus(0), "cpu_max_millicpus"),
            (base().cpu_max_millicpus(9), "cpu_max_millicpus"),
            (base().cpu_max_millicpus(MAX_MILLICPUS + 1), "cpu_max_millicpus"),
        ] {
            match bad.validate(&profile) {
                Err(Error::InvalidOptions { detail }) => assert!(detail.starts_with(name), "{detail}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
