//! `sandbox::probe` (CONTRACT.md §18): what this host can enforce, and what the default profile
//! gets here. Computed once per process (a probe container per call would cost a spawn).

// The Linux backend uses every item here; other targets compile a subset.
#![cfg_attr(not(target_os = "linux"), allow(unused))]

use std::sync::OnceLock;

#[cfg(target_os = "linux")]
mod doctor;

use serde::Serialize;

use crate::{Deadline, Error, ExecutorSet, ExecutorSetOptions, Profile, ProfileConfig, ReportEntry};

/// The cgroup facts of [`HostProbe`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CgroupProbe {
    /// `"v1"` (v1 or hybrid: the runtime uses v1), `"v2"`, or `"none"`.
    pub version: &'static str,
    /// Whether the caller can create cgroups (root, or a delegated parent).
    pub delegated: bool,
    /// The default `cgroup_parent`, if any.
    pub parent: Option<String>,
}

/// What this host can enforce (the JSON of `sandbox probe`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostProbe {
    /// `std::env::consts::OS`.
    pub os: &'static str,
    /// `std::env::consts::ARCH`.
    pub arch: &'static str,
    /// `linux-container`, `seatbelt`, or none.
    pub backend: Option<&'static str>,
    /// Whether a sandboxed profile can run here.
    pub available: bool,
    /// Why not (and what to change), or what was measured.
    pub reason: String,
    /// User namespaces can be created.
    pub user_namespaces: bool,
    /// Recursive read-only binds (`mount_setattr`) worked in the probe container.
    pub recursive_read_only: bool,
    /// The kernel's Landlock ABI, if it has Landlock.
    pub landlock_abi: Option<u32>,
    /// The seccomp filter was installed in the probe container.
    pub seccomp: bool,
    /// cgroup layout and delegation.
    pub cgroup: CgroupProbe,
    /// `lo` came up in the probe container's private network namespace.
    pub loopback: bool,
    /// PTYs are available (`/dev/ptmx`).
    pub pty: bool,
    /// `sandbox::init()` ran in this process.
    pub init_called: bool,
    /// The level the default profile gets.
    pub level: &'static str,
    /// Its guarantee names.
    pub guarantees: Vec<&'static str>,
    /// Its guarantee bits.
    pub guarantee_bits: u64,
    /// Lifetime containment of its processes.
    pub lifetime_containment: &'static str,
    /// Every guarantee some profile gets here: the default profile's, and `target-network`
    /// when a probe container with network `gated` got the egress proxy (issue 17).
    pub achievable: Vec<&'static str>,
    /// The `target-network` entry of that gated probe's report (absent when it could not run).
    pub target_network: Option<ReportEntry>,
    /// Grant classes a backend here can enforce (none when no sandbox runs here;
    /// `network.proxy-target.v1` only where `target-network` is achievable).
    pub grant_classes: Vec<&'static str>,
    /// Its report.
    pub report: Vec<ReportEntry>,
    /// The doctor (issue 15): each layer that is missing here, what it costs and the fix.
    pub findings: Vec<Finding>,
}

/// One missing layer found by [`probe`]: what is missing (as measured), which guarantee that
/// costs, and the exact command or file that fixes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `user-namespaces`, `landlock`, `seccomp`, `cgroup`, `container` or `wsl`.
    pub layer: &'static str,
    /// What is missing, as measured.
    pub missing: String,
    /// Which guarantee that costs.
    pub costs: String,
    /// The exact command or file that fixes it.
    pub fix: String,
}

static PROBE: OnceLock<HostProbe> = OnceLock::new();

/// Probes this host once per process; later calls return the cached result.
pub fn probe(dl: &Deadline) -> Result<HostProbe, Error> {
    dl.check(&[])?;
    if let Some(p) = PROBE.get() {
        return Ok(p.clone());
    }
    let p = measure(dl)?;
    Ok(PROBE.get_or_init(|| p).clone())
}

#[cfg(not(target_os = "linux"))]
fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

fn measure(dl: &Deadline) -> Result<HostProbe, Error> {
    // Measured on Linux (a user namespace is made and dropped), read from the sysctl elsewhere.
    // The doctor gets the same measurements (the errno, the cgroups found).
    #[cfg(target_os = "linux")]
    let userns = sandbox_linux::hostcheck::user_namespace();
    #[cfg(target_os = "linux")]
    let user_namespaces = userns.is_ok();
    #[cfg(not(target_os = "linux"))]
    let user_namespaces = read_trim("/proc/sys/user/max_user_namespaces").is_some_and(|v| v != "0");
    #[cfg(target_os = "linux")]
    let found = sandbox_linux::cgroups::discover(crate::options::env_cgroup_parent().as_deref(), false);
    #[cfg(target_os = "linux")]
    let (backend, landlock_abi, cgroup) = {
        let layout = sandbox_linux::CgroupLayout::detect();
        let version = match layout {
            sandbox_linux::CgroupLayout::V2 => "v2",
            sandbox_linux::CgroupLayout::V1OrHybrid => "v1",
            sandbox_linux::CgroupLayout::None => "none",
        };
        let abi = sandbox_linux::landlock_abi();
        let parent = found.parent().map(str::to_owned);
        (
            Some(sandbox_linux::BACKEND_NAME),
            (abi > 0).then_some(abi),
            CgroupProbe { version, delegated: parent.is_some(), parent },
        )
    };
    #[cfg(not(target_os = "linux"))]
    let (backend, landlock_abi, cgroup) = (None, None, CgroupProbe { version: "none", delegated: false, parent: None });

    let mut probe = HostProbe {
        os: std::env::consts::OS,
        arch: std::env::consts::ARCH,
        backend,
        available: false,
        reason: String::new(),
        user_namespaces,
        recursive_read_only: false,
        landlock_abi,
        seccomp: false,
        cgroup,
        loopback: false,
        pty: std::path::Path::new("/dev/ptmx").exists(),
        init_called: crate::init_called(),
        level: "none",
        guarantees: Vec::new(),
        guarantee_bits: 0,
        lifetime_containment: "unspecified",
        achievable: Vec::new(),
        target_network: None,
        grant_classes: Vec::new(),
        report: Vec::new(),
        findings: Vec::new(),
    };

    // Without its temporary directories no container runs: that is an answer too (the probe
    // prints JSON and exits 0 whenever it can say why), not an error.
    let dirs = crate::fsutil::TempDir::new("sandbox-probe-workspace-")
        .and_then(|w| Ok((w, crate::fsutil::TempDir::new("sandbox-probe-scratch-")?)));
    let (workspace, scratch) = match dirs {
        Ok(d) => d,
        Err(e) => {
            probe.reason = e.to_string();
            probe.findings.push(unmeasured(&probe.reason));
            return Ok(probe);
        }
    };
    let profile = Profile::new(crate::proof::profile_config(workspace.path().to_path_buf()))?;
    let outcome =
        ExecutorSet::new(dl, &profile, ExecutorSetOptions::new(scratch.path()).max_executors(1)).and_then(|set| {
            let executor = set.executor("probe")?;
            let containment = measure_containment(dl, &executor, workspace.path());
            let result = (executor.level(), executor.guarantees(), executor.report().clone(), containment);
            drop(executor);
            set.close()?;
            Ok(result)
        });
    match outcome {
        Ok((level, guarantees, report, containment)) => {
            let status = |f: &str| report.get(f).map(|e| e.status);
            probe.available = true;
            probe.reason = String::from("a probe container ran with the default profile");
            probe.recursive_read_only = true; // the probe container's read-only binds are `rro`
            probe.seccomp = status("seccomp") == Some(crate::Status::Enforced);
            probe.loopback = status("loopback") == Some(crate::Status::Enforced);
            probe.level = match level {
                crate::Level::None => "none",
                crate::Level::Degraded => "degraded",
                crate::Level::Full => "full",
            };
            probe.guarantees = guarantees.names();
            probe.guarantee_bits = guarantees.bits();
            probe.lifetime_containment = containment;
            // The classes `Executor::issue_grant` accepts and the Linux backend enforces
            // (linux_grants covers each).
            #[cfg(target_os = "linux")]
            {
                probe.grant_classes = vec![
                    "command.start.v1",
                    "filesystem.path.read.v1",
                    "filesystem.path.write.v1",
                    "filesystem.tree.read.v1",
                    "filesystem.tree.write.v1",
                    "filesystem.host.read.v1",
                    "filesystem.host.write.v1",
                    "network.broad.v1",
                ];
            }
            probe.report = report.entries;
        }
        Err(e @ (Error::DeadlineExceeded { .. } | Error::Cancelled { .. })) => return Err(e),
        Err(e) => probe.reason = e.to_string(),
    }
    if probe.available {
        // The same profile with network gated: does the egress proxy come up (issue 17)?
        let gated = Profile::new(ProfileConfig { network: crate::Access::Gated, ..profile.config().clone() })?;
        let options = ExecutorSetOptions::new(scratch.path()).max_executors(1);
        let measured = ExecutorSet::new(dl, &gated, options).and_then(|set| {
            let executor = set.executor("probe-gated")?;
            let result = (executor.guarantees().target_network, executor.report().get("target-network").cloned());
            drop(executor);
            set.close()?;
            Ok(result)
        });
        probe.achievable = probe.guarantees.clone();
        match measured {
            Ok((held, entry)) => {
                probe.target_network = entry;
                if held {
                    probe.achievable.push("target-network");
                    probe.grant_classes.push("network.proxy-target.v1");
                }
            }
            Err(e @ (Error::DeadlineExceeded { .. } | Error::Cancelled { .. })) => return Err(e),
            Err(e) => {
                probe.target_network =
                    Some(ReportEntry::new("target-network", crate::Status::Unenforced, e.to_string()));
            }
        }
    }
    #[cfg(target_os = "linux")]
    {
        probe.findings = doctor::findings(&probe, userns, &found);
    }
    // No container ran and no measured layer explains it (an option or a variable the set
    // refused, say): the probe never says that nothing is missing then (a black-box audit saw
    // `available: false` next to "missing: nothing").
    if !probe.available && probe.findings.is_empty() {
        probe.findings.push(unmeasured(&probe.reason));
    }
    Ok(probe)
}

/// The finding of a probe that ran no container for `reason`.
fn unmeasured(reason: &str) -> Finding {
    Finding {
        layer: "container",
        missing: format!("no probe container ran: {reason}"),
        costs: String::from(
            "every sandboxed run on this host with these settings; the layers the probe could not run are \
             reported false, unmeasured",
        ),
        fix: String::from("correct what the reason names, then run `sandbox probe` again"),
    }
}

/// Lifetime containment, measured: a run leaves a child behind (`sleep` in the background, the
/// shell exits at once); once the run has ended, no process with that child's unique argument
/// may be left on the host.
fn measure_containment(dl: &Deadline, executor: &crate::Executor, cwd: &std::path::Path) -> &'static str {
    if !cfg!(target_os = "linux") {
        return "unmeasured";
    }
    let marker = format!("61.{}", std::process::id());
    let ran = executor.run_command(dl, cwd, &format!("sleep {marker} & exit 0"));
    if !ran.is_ok_and(|o| o.status.success()) {
        return "unspecified";
    }
    let left = std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == marker.as_bytes()))
    });
    if left { "unenforced" } else { "enforced" }
}
