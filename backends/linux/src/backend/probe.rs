//! The probe container's measurements and what they make of a profile: level, guarantees and
//! the report, and whether a grant can be enforced.

use std::path::{Path, PathBuf};

use sandbox_bundle::{CompileReport, Error, Guarantees, Level, Profile, ReportEntry};

use crate::protocol::{LandlockStatus, Measured};

use super::{ExitStatus, LinuxBackend, SpawnInput};

/// What a helper measured in its container (opaque to the facade: the probe's is given back
/// to [`LinuxBackend::record_probe`]).
#[derive(Debug)]
pub struct Measurement(pub(super) Measured);

impl Measurement {
    /// The direct connections and datagrams the container's init refused (issue 17: with the
    /// egress proxy on, calls to addresses off the sandbox's loopback), as targets
    /// (`tcp:192.0.2.1:443`, `udp:[2001:db8::1]:53`, `ip:…`) in order, and how many more were
    /// refused past the bound of 256 (only counted).
    pub fn direct(&self) -> (&[String], u32) {
        (&self.0.direct, self.0.direct_dropped)
    }
}

/// What the probe container measured on this host, once per set.
#[derive(Clone, Debug)]
pub(super) struct Probe {
    pub landlock: Landlock,
    pub landlock_abi: u32,
    pub seccomp: bool,
    pub loopback: Option<bool>,
    pub loopback_error: Option<String>,
    pub limits: Result<String, String>,
    /// Whether the egress proxy's listener was made (None: the profile has no proxy).
    pub proxy: Option<bool>,
    pub proxy_error: Option<String>,
}

/// How much of its Landlock ruleset the probe container got in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Landlock {
    /// Every filesystem right of the kernel's ABI handled.
    Full,
    /// Some rights could not be handled.
    Partial,
    /// No ruleset in force (or nothing measured).
    None,
}

impl Landlock {
    /// The helper's measurement (absent: not measured, so nothing is claimed).
    fn from_measured(measured: Option<LandlockStatus>) -> Landlock {
        match measured {
            Some(LandlockStatus::Full) => Landlock::Full,
            Some(LandlockStatus::Partial) => Landlock::Partial,
            Some(LandlockStatus::None) | None => Landlock::None,
        }
    }
}

impl std::fmt::Display for Landlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Landlock::Full => "full",
            Landlock::Partial => "partial",
            Landlock::None => "none",
        })
    }
}

impl Probe {
    /// Nothing measured yet: no layer and no limit claimed.
    pub(super) fn unmeasured() -> Probe {
        Probe {
            landlock: Landlock::None,
            landlock_abi: 0,
            seccomp: false,
            loopback: None,
            loopback_error: None,
            limits: Err(String::from("not probed")),
            proxy: None,
            proxy_error: None,
        }
    }
}

impl LinuxBackend {
    /// Takes the probe's run: the profile's own bundle with nothing required
    /// ([`SpawnInput::probe`], launched with `require` unset), its output, status and what
    /// its helper measured. A probe that could not run, or whose shell failed, makes the
    /// backend unavailable (a deadline, a cancellation or an invalid profile stays what it is).
    pub fn record_probe(&mut self, run: Result<(Vec<u8>, ExitStatus, Measurement), Error>) -> Result<(), Error> {
        let (bytes, status, Measurement(measured)) = match run {
            Ok(r) => r,
            // The profile's own fault (the protected-paths scan refused the workspace) is told
            // as such, not as a layer this host lacks.
            Err(e @ (Error::DeadlineExceeded { .. } | Error::Cancelled { .. } | Error::InvalidProfile { .. })) => {
                return Err(e);
            }
            Err(e) => {
                return Err(Error::SandboxUnavailable {
                    // The cause first: it may be the profile's own (a path that is not UTF-8
                    // in a workspace), not a layer this host lacks.
                    detail: format!(
                        "the probe container could not run: {e} (where a layer is missing here, user namespaces \
                         or recursive read-only mounts of Linux 5.12 on, `sandbox probe` says which and how to fix \
                         it)"
                    ),
                });
            }
        };
        if status != ExitStatus::Code(0) {
            return Err(Error::SandboxUnavailable {
                detail: format!(
                    "the probe container ran but its shell failed ({status:?}): {}",
                    String::from_utf8_lossy(&bytes).trim()
                ),
            });
        }
        self.apply_measured(&measured);
        self.probe_measured = Some(measured);
        Ok(())
    }

    fn apply_measured(&mut self, measured: &Measured) {
        self.probe = Probe {
            landlock: Landlock::from_measured(measured.landlock),
            landlock_abi: measured.landlock_abi,
            seccomp: measured.seccomp == 2,
            loopback: measured.loopback,
            loopback_error: measured.loopback_error.clone(),
            limits: self.check_readback(measured),
            proxy: measured.proxy,
            proxy_error: measured.proxy_error.clone(),
        };
    }

    /// What identifies the probe's conditions (issue 16): everything its measurements depend on
    /// that can differ between two sets of this user on this boot: the boot, this binary, the
    /// ids, the profile, the cgroups found and the limits asked, the kernel's Landlock ABI, the
    /// user-namespace sysctls and this process's own seccomp mode. Two sets with equal keys
    /// measure the same; the facade keeps the probe by the key's hash. None when the boot or
    /// this binary cannot be identified (nothing is then reused).
    pub fn probe_key(&self, profile: &Profile) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let exe = std::fs::metadata("/proc/self/exe").ok()?;
        let sysctl = |p: &str| std::fs::read_to_string(p).map(|t| t.trim().to_owned()).unwrap_or_default();
        Some(format!(
            "probe-v1|boot {}|exe {}:{}:{}:{}.{}:{}.{}|ids {}:{}|profile {}|cgroups {:?} {:?} own {}|limits {} {:?} {} {:?} {:?} \
             {:?}|landlock {}|userns {} {} {}|seccomp {:?}",
            boot.trim(),
            exe.dev(),
            exe.ino(),
            exe.size(),
            exe.mtime(),
            exe.mtime_nsec(),
            exe.ctime(),
            exe.ctime_nsec(),
            self.uid,
            self.gid,
            profile.fingerprint(),
            self.layout,
            self.cgroups,
            self.own_parent,
            self.pids_max,
            self.memory_max,
            self.cpu_weight,
            self.cpu_max_millicpus,
            self.nproc,
            self.inotify,
            crate::sys::landlock_abi(),
            sysctl("/proc/sys/user/max_user_namespaces"),
            sysctl("/proc/sys/kernel/unprivileged_userns_clone"),
            sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
            crate::hostcheck::own_seccomp_mode(),
        ))
    }

    /// The protected-paths scan's memo as bytes to keep for a later process of this user,
    /// when it changed (see [`sandbox_bundle::protect::ScanMemo::to_kept`]).
    pub fn scan_memo_to_keep(&self) -> Option<Vec<u8>> {
        self.scan_memo.to_kept()
    }

    /// Takes the scan memo an earlier process kept (before the first spawn). False (and
    /// nothing taken) when the bytes are not a memo.
    pub fn restore_scan_memo(&mut self, bytes: &[u8]) -> bool {
        match sandbox_bundle::protect::ScanMemo::from_kept(bytes) {
            Some(memo) => {
                self.scan_memo = memo;
                true
            }
            None => false,
        }
    }

    /// The probe's measurements as a record the facade may keep for later sets with the same
    /// [`LinuxBackend::probe_key`]: only when every layer held (Landlock fully, seccomp, `lo`),
    /// so that a kept record can only claim what every spawn then requires (see
    /// [`LinuxBackend::restore_probe`]). None for a host where something was missing: its sets
    /// always probe.
    pub fn probe_record(&self) -> Option<String> {
        let measured = self.probe_measured.as_ref()?;
        if !self.fully_measured() {
            return None;
        }
        // Its timings are this probe's own, not a measurement of the host.
        let measured = Measured { phases: Vec::new(), ..measured.clone() };
        serde_json::to_string(&measured).ok()
    }

    fn fully_measured(&self) -> bool {
        self.probe.landlock == Landlock::Full
            && self.probe.seccomp
            && self.probe.loopback == Some(true)
            && self.probe.proxy != Some(false)
            && self.probe.landlock_abi == crate::sys::landlock_abi()
            && self.probe.landlock_abi > 0
    }

    /// Takes a record of [`LinuxBackend::probe_record`] kept from an earlier set with the same
    /// key instead of running the probe container. Accepted only when it says every layer held
    /// and its Landlock ABI is this kernel's: each spawn then requires exactly what it claims
    /// (Landlock fully, seccomp, `lo`, the limits read back), so a wrong record fails spawns
    /// closed, never runs one with less than the report says. `from` is where it was kept,
    /// removed by [`LinuxBackend::forget_kept_probe`] when a spawn's set-up fails. False (and
    /// nothing taken): probe instead.
    pub fn restore_probe(&mut self, record: &str, from: PathBuf) -> bool {
        let Ok(measured) = serde_json::from_str::<Measured>(record) else { return false };
        let before = self.probe.clone();
        self.apply_measured(&measured);
        if !self.fully_measured() {
            self.probe = before;
            return false;
        }
        self.probe_measured = Some(measured);
        self.kept_probe = Some(from);
        true
    }

    /// Removes the kept probe record this set used, if any: a spawn's set-up failed, and the
    /// record may be what no longer holds, so the next set probes afresh.
    pub fn forget_kept_probe(&self) {
        if let Some(file) = &self.kept_probe {
            if std::fs::remove_file(file).is_ok() {
                tracing::debug!(file = %file.display(), "a spawn's set-up failed: the kept probe is dropped");
            }
        }
    }

    fn check_readback(&self, measured: &Measured) -> Result<String, String> {
        let limits = self.limits("probe");
        if self.cgroups.parent.is_none() {
            let why = self.cgroups.why.clone().unwrap_or_else(|| String::from("no cgroup parent"));
            return Err(format!("no cgroup: {why}. {}", self.without_cgroup_detail(measured)));
        }
        for (limit, read) in limits.iter().zip(measured.readback.iter().chain(std::iter::repeat(&None))) {
            if !read.as_deref().is_some_and(|r| limit.holds(r)) {
                let name = limit.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let cpu = if name.starts_with("cpu.") {
                    " (the cpu controller must be enabled and delegated in the cgroup parent)"
                } else {
                    ""
                };
                return Err(format!("{} read back as {read:?}, expected {}{cpu}", limit.file.display(), limit.value));
            }
        }
        let missing = |c: &str| self.cgroups.missing.contains(&c);
        let mut detail =
            if missing("pids") { String::from("no pids.max") } else { format!("pids.max {}", self.pids_max) };
        if let (Some(want), false) = (self.memory_max, missing("memory")) {
            detail.push_str(&format!(", memory {want} bytes"));
        }
        if let Some(e) = &measured.inotify_error {
            return Err(format!("the inotify bound could not be set: {e}"));
        }
        detail.push_str(&self.cpu_detail());
        detail.push_str(&format!(
            ", inotify {} instances and {} watches per run (its user namespace's own bound; the host's \
             per-uid limits are shared by every run of this uid)",
            self.inotify.0, self.inotify.1
        ));
        let parent = self.cgroup_parent().unwrap_or("?");
        if let Some(why) = &self.cgroups.why {
            let nproc = if self.cgroups.needs_nproc() {
                format!(". {}", self.without_cgroup_detail(measured))
            } else {
                String::new()
            };
            return Err(format!(
                "cgroup under {parent}, but not every limit can be set there: {why}{nproc}. What was set: {detail}"
            ));
        }
        Ok(format!("{detail} (cgroup under {parent})"))
    }

    /// What bounds a run whose process count has no cgroup (the probe's `measured` says whether
    /// the inotify bound took).
    fn without_cgroup_detail(&self, measured: &Measured) -> String {
        let inotify = match &measured.inotify_error {
            None => format!(
                "inotify {} instances and {} watches (its user namespace's own bound)",
                self.inotify.0, self.inotify.1
            ),
            Some(e) => format!("no inotify bound (it could not be set: {e})"),
        };
        format!(
            "What applies without it: RLIMIT_NPROC {} (counted in the run's own user namespace: one run's processes \
             and threads), {inotify}, and the run's pid namespace (killing its init ends every process of the run); \
             memory and CPU are not bounded",
            self.nproc.unwrap_or_else(|| super::request::nproc_bound(self.pids_max)),
        )
    }

    /// The CPU part of the resource-limits detail.
    fn cpu_detail(&self) -> String {
        if self.cgroups.missing.contains(&"cpu") {
            return String::new();
        }
        let parent = self.cgroup_parent().unwrap_or("?");
        let mut detail = format!(", cpu weight {} (a host process has 100)", self.cpu_weight);
        if self.own_parent {
            detail.push_str(&format!(" on each spawn and on {parent}, which all spawns share"));
        } else {
            let file = self.layout.cpu_files(parent).0;
            let read =
                std::fs::read_to_string(&file).map_or_else(|_| String::from("unreadable"), |t| t.trim().to_owned());
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            detail.push_str(&format!(
                " on each spawn, among its siblings: against the host, the weight of the caller's {parent} counts \
                 (its {name}: {read})"
            ));
        }
        if let Some(m) = self.cpu_max_millicpus {
            detail.push_str(&format!(", cpu max {}.{:03} cpus", m / 1000, m % 1000));
        }
        detail
    }

    /// A broad network grant needs Landlock's TCP rules (ABI 4) and abstract unix scoping (ABI 6)
    /// in force.
    pub fn broad_grants_enforceable(&self) -> bool {
        self.probe.landlock == Landlock::Full && self.probe.landlock_abi >= 6
    }

    /// Whether a spawn compiled with one filesystem grant binds its target as granted.
    pub fn grant_enforced(
        &self,
        profile: &Profile,
        input: &SpawnInput<'_>,
        write: bool,
        target: &str,
    ) -> Result<(), String> {
        let bundle = self.compile(profile, input, "grant-check").map_err(|e| e.to_string())?;
        let ok = |m: &sandbox_bundle::PlannedMount| {
            use sandbox_bundle::MountKind as K;
            if write {
                matches!(m.kind, K::ReadWrite | K::WriteOnly)
            } else {
                matches!(m.kind, K::ReadOnly | K::ReadWrite)
            }
        };
        let granted = if target == "host:*" {
            bundle.plan.mounts.iter().any(|m| m.origin == sandbox_bundle::Origin::HostEntry && ok(m))
        } else {
            bundle.plan.mounts.iter().any(|m| m.destination == Path::new(target) && ok(m))
        };
        if granted {
            Ok(())
        } else {
            Err(format!("this backend cannot give {target} what the grant opens here (see the write-boundary report)"))
        }
    }

    /// The measured level, guarantees and report for `profile`, with the policy entries of a
    /// reference compile of the executor's own spawn shape (`input`).
    pub fn assess(
        &self,
        profile: &Profile,
        input: &SpawnInput<'_>,
        env_detail: String,
    ) -> Result<(Level, Guarantees, CompileReport), Error> {
        let bundle = self.compile(profile, input, "reference")?;
        Ok(self.assess_with(profile, &bundle.policy_entries, env_detail))
    }

    /// [`LinuxBackend::assess`] with the policy entries given.
    fn assess_with(
        &self,
        profile: &Profile,
        policy: &[ReportEntry],
        env_detail: String,
    ) -> (Level, Guarantees, CompileReport) {
        let p = &self.probe;
        sandbox_bundle::assess(&sandbox_bundle::Facts {
            profile,
            policy,
            env_scrub: env_detail,
            confinement: sandbox_bundle::Confinement::Embedded {
                landlock_full: p.landlock == Landlock::Full,
                landlock_abi: p.landlock_abi,
                landlock_status: p.landlock.to_string(),
                seccomp: p.seccomp,
                loopback: if p.loopback == Some(true) {
                    Ok(())
                } else {
                    Err(p.loopback_error.clone().unwrap_or_else(|| String::from("unknown reason")))
                },
                limits: p.limits.clone(),
                proxy: match p.proxy {
                    Some(true) => Ok(()),
                    _ => Err(p.proxy_error.clone().unwrap_or_else(|| String::from("not measured"))),
                },
            },
        })
    }
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use std::path::PathBuf;
    use std::sync::atomic::AtomicU64;

    use crate::CgroupLayout;

    use super::*;
    use sandbox_bundle::{Access, Status};

    fn backend(limits: Result<String, String>, landlock: Landlock, seccomp: bool) -> LinuxBackend {
        LinuxBackend {
            made_parents: Vec::new(),
            state_root: PathBuf::from("/nonexistent/state"),
            bundles: PathBuf::from("/nonexistent/bundles"),
            scratch_root: PathBuf::from("/nonexistent"),
            uid: 1000,
            gid: 1000,
            layout: CgroupLayout::V2,
            cgroups: crate::cgroups::Cgroups {
                parent: None,
                missing: Vec::new(),
                why: Some(String::from("no cgroup parent; fix: x")),
            },
            pids_max: 4096,
            memory_max: None,
            cpu_weight: 10,
            cpu_max_millicpus: None,
            nproc: Some(4096),
            own_parent: false,
            inotify: (16, 8192),
            tag: String::from("t"),
            masked_roots: Vec::new,
            remove_tree: |_| Ok(()),
            real_home: None,
            keep_containers: true,
            counter: AtomicU64::new(0),
            zygote: crate::Zygote::new(),
            skeletons: PathBuf::from("/nonexistent/rootfs"),
            placeholder: PathBuf::from("/nonexistent/denied"),
            scan_memo: sandbox_bundle::protect::ScanMemo::default(),
            host_memo: sandbox_bundle::HostViewMemo::default(),
            prepared: std::sync::Mutex::default(),
            warm: std::sync::Mutex::default(),
            probe: Probe {
                landlock,
                landlock_abi: if landlock == Landlock::Full { 7 } else { 0 },
                seccomp,
                loopback: Some(true),
                loopback_error: None,
                limits,
                proxy: None,
                proxy_error: None,
            },
            probe_measured: None,
            kept_probe: None,
        }
    }

    #[test]
    fn limits_that_did_not_read_back_are_not_claimed_and_the_report_names_the_fix() {
        // Without a cgroup (issue 15): the reason with its fix, and what applies instead.
        let mut b = backend(Err(String::from("not probed")), Landlock::Full, true);
        let measured = b.check_readback(&Measured::default());
        let why = measured.as_ref().err().cloned().unwrap_or_default();
        assert!(why.contains("no cgroup parent; fix: x") && why.contains("RLIMIT_NPROC"), "{why}");
        b.probe.limits = measured;
        let (level, g, report) = b.assess_with(&super::super::test_profile(), &[], String::from("env"));
        assert!(!g.resource_limits);
        assert_eq!(level, Level::Full, "limits never change the level");
        let entry = report.get("resource-limits").unwrap_or_else(|| panic!("no entry"));
        assert_eq!(entry.status, Status::Unenforced);
        assert!(entry.detail.contains("fix: x"), "{}", entry.detail);
        let b = backend(Ok(String::from("pids.max 4096")), Landlock::Full, true);
        assert!(b.assess_with(&super::super::test_profile(), &[], String::from("env")).1.resource_limits);
    }

    #[test]
    fn the_unix_sockets_entry_says_what_is_reachable() {
        let config = |unix_sockets, network| {
            Profile::new(sandbox_bundle::ProfileConfig {
                workspace_root: PathBuf::from("/"),
                workspace_read: Access::Allow,
                command: Access::Allow,
                network,
                unix_sockets,
                ..sandbox_bundle::ProfileConfig::default()
            })
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let cases = [
            (Access::Deny, Access::Deny, true, Status::Enforced, false),
            (Access::Allow, Access::Deny, true, Status::Widened, true),
            (Access::Deny, Access::Deny, false, Status::Unenforced, true),
            (Access::Deny, Access::Allow, true, Status::Vacuous, false),
        ];
        for (unix, network, seccomp, want, caveat) in cases {
            let b = backend(Ok(String::from("x")), Landlock::Full, seccomp);
            let (_, g, report) = b.assess_with(&config(unix, network), &[], String::from("env"));
            let entry = report.get("unix-sockets").unwrap_or_else(|| panic!("no unix-sockets entry"));
            assert_eq!(entry.status, want, "{unix:?} {network:?} seccomp {seccomp}: {entry:?}");
            if want != Status::Enforced {
                assert!(
                    entry.detail.contains("path-named unix sockets in readable areas are connectable"),
                    "{entry:?}"
                );
            }
            let net = report.get("network-boundary").unwrap_or_else(|| panic!("no network-boundary entry"));
            assert_eq!(net.detail.contains("unix sockets"), caveat, "{net:?}");
            assert_eq!(g.network_boundary, network != Access::Allow);
        }
    }

    #[test]
    fn the_landlock_status_reads_and_shows_the_helpers_words() {
        let cases = [
            (Some(LandlockStatus::Full), Landlock::Full, "full"),
            (Some(LandlockStatus::Partial), Landlock::Partial, "partial"),
            (Some(LandlockStatus::None), Landlock::None, "none"),
            (None, Landlock::None, "none"),
        ];
        for (measured, want, shown) in cases {
            let got = Landlock::from_measured(measured);
            assert_eq!(got, want);
            assert_eq!(got.to_string(), shown);
        }
    }

    #[test]
    fn a_missing_layer_degrades_the_level_and_says_so() {
        for (landlock, seccomp, feature) in [(Landlock::None, true, "landlock"), (Landlock::Full, false, "seccomp")] {
            let b = backend(Ok(String::from("x")), landlock, seccomp);
            let (level, g, report) = b.assess_with(&super::super::test_profile(), &[], String::from("env"));
            assert_eq!(level, Level::Degraded);
            assert!(g.read_boundary && g.write_boundary, "the mount view still holds");
            assert_eq!(report.get(feature).map(|e| e.status), Some(Status::Unenforced));
        }
    }
}
