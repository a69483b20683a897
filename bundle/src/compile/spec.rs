//! The OCI runtime spec of one spawn, built field by field from its plan (never from
//! `Spec::default()`), and its deterministic JSON form.

use std::path::Path;

use oci_spec::runtime::Spec;
use serde_json::{Value, json};

use super::expected::ExpectedMount;
use super::landlock::LandlockRules;
use super::plan::{MountKind, MountPlan, Origin, PlannedMount};
use super::{Launch, SpawnContext};
use crate::error::Error;
use crate::profile::Profile;
use crate::report::{CompileReport, Guarantees};
use crate::seccomp;

/// The OCI default masked `/proc` paths (`/sys` is never mounted).
const MASKED_PATHS: &[&str] = &[
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
];
/// The OCI default read-only `/proc` paths.
const READONLY_PATHS: &[&str] = &["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

fn path_str(p: &Path) -> Result<String, Error> {
    p.to_str().map(str::to_owned).ok_or_else(|| Error::argument(format!("path {} is not valid UTF-8", p.display())))
}

fn oci_mount(m: &PlannedMount) -> Result<Value, Error> {
    let dest = path_str(&m.destination)?;
    let bind = |options: &[&str]| -> Result<Value, Error> {
        let source = path_str(m.source.as_deref().unwrap_or(&m.destination))?;
        Ok(json!({"destination": dest, "type": "bind", "source": source, "options": options}))
    };
    let tmpfs = |options: &[&str]| json!({"destination": dest, "type": "tmpfs", "source": "tmpfs", "options": options});
    Ok(match (m.kind, m.file) {
        (MountKind::ReadOnly, false) => bind(&["rbind", "rro", "nosuid", "nodev"])?,
        (MountKind::ReadOnly, true) => bind(&["bind", "ro", "nosuid", "nodev"])?,
        (MountKind::ReadWrite, true) if m.destination == Path::new("/dev/null") => bind(&["bind", "nosuid"])?,
        (MountKind::ReadWrite | MountKind::WriteOnly, true) => bind(&["bind", "nosuid", "nodev"])?,
        (MountKind::ReadWrite | MountKind::WriteOnly | MountKind::Private, _) => bind(&["rbind", "nosuid", "nodev"])?,
        (MountKind::Mask, _) => tmpfs(&["nosuid", "nodev", "noexec", "mode=755", "size=64k"]),
        (MountKind::Tmp, _) => tmpfs(&["nosuid", "nodev", "mode=1777"]),
        (MountKind::Dev, _) => tmpfs(&["nosuid", "strictatime", "mode=755", "size=65536k"]),
        (MountKind::DevShm, _) => tmpfs(&["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]),
        (MountKind::Proc, _) => json!({"destination": dest, "type": "proc", "source": "proc",
            "options": ["nosuid", "noexec", "nodev"]}),
        (MountKind::DevPts, _) => json!({"destination": dest, "type": "devpts", "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]}),
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn build_spec(
    profile: &Profile,
    spawn: &SpawnContext,
    plan: &MountPlan,
    landlock: &LandlockRules,
    private_network: bool,
    seccomp_rules: seccomp::SpawnRules,
    standard_report: &CompileReport,
    standard_guarantees: Guarantees,
    expected: &[ExpectedMount],
) -> Result<Spec, Error> {
    let mounts = plan.mounts.iter().map(oci_mount).collect::<Result<Vec<_>, _>>()?;
    let mut namespaces = vec![
        json!({"type": "user"}),
        json!({"type": "mount"}),
        json!({"type": "pid"}),
        json!({"type": "ipc"}),
        json!({"type": "uts"}),
        json!({"type": "cgroup"}),
    ];
    if private_network {
        namespaces.push(json!({"type": "network"}));
    }
    let mut readonly: Vec<String> = READONLY_PATHS.iter().map(|s| (*s).to_owned()).collect();
    for m in plan.mounts.iter().filter(|m| m.kind == MountKind::Mask) {
        readonly.push(path_str(&m.destination)?);
    }
    let seccomp = seccomp::oci_section(seccomp_rules)?;
    let mut linux = json!({
        "namespaces": namespaces,
        "uidMappings": [{"containerID": 0, "hostID": spawn.uid, "size": 1}],
        "gidMappings": [{"containerID": 0, "hostID": spawn.gid, "size": 1}],
        "maskedPaths": MASKED_PATHS,
        "readonlyPaths": readonly,
        "seccomp": seccomp,
    });
    if let Launch::Embedded { cgroups_path: Some(path), pids_max, memory_max } = &spawn.launch {
        linux["cgroupsPath"] = json!(path);
        // No `resources` at all without limits: its mere presence makes a v1 runtime write
        // device rules, which only root may (rootless limits are then written by the helper).
        let mut resources = json!({});
        if let Some(pids) = pids_max {
            resources["pids"] = json!({"limit": pids});
        }
        if let Some(mem) = memory_max {
            resources["memory"] = json!({"limit": mem});
        }
        if pids_max.is_some() || memory_max.is_some() {
            linux["resources"] = resources;
        }
    }
    let empty: [&str; 0] = [];
    let env: Vec<String> = spawn.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let report_json =
        serde_json::to_string(&standard_report.entries).map_err(|e| Error::argument(format!("report: {e}")))?;
    let landlock_json = serde_json::to_string(landlock).map_err(|e| Error::argument(format!("landlock rules: {e}")))?;
    let identities_json = serde_json::to_string(expected).map_err(|e| Error::argument(format!("identities: {e}")))?;
    // Masks over other sets' scratch roots (issue 12, class 7): such a directory may be removed
    // between this compile and the mount (its set closed and its owner deleted it). A runtime
    // that finds one gone has nothing to hide there and may drop that mask (the Linux helper
    // does, instead of failing the spawn); every other mount stays mandatory.
    let optional_masks: Vec<String> = plan
        .mounts
        .iter()
        .filter(|m| m.origin == Origin::ScratchMask && m.destination != spawn.scratch_root)
        .map(|m| path_str(&m.destination))
        .collect::<Result<_, _>>()?;
    let mut value = json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": spawn.tty,
            "user": {"uid": 0, "gid": 0},
            "args": spawn.argv,
            "env": env,
            "cwd": path_str(&spawn.cwd)?,
            "capabilities": {
                "bounding": empty, "effective": empty, "inheritable": empty,
                "permitted": empty, "ambient": empty
            },
            "rlimits": [
                {"type": "RLIMIT_CORE", "hard": 0, "soft": 0},
                {"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 1024}
            ],
            "noNewPrivileges": true
        },
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "sandbox",
        "mounts": mounts,
        "linux": linux,
        "annotations": {
            "sandbox.version": "1",
            "sandbox.fingerprint": profile.fingerprint(),
            "sandbox.landlock": landlock_json,
            "sandbox.identities": identities_json,
            "sandbox.guarantees": standard_guarantees.bits().to_string(),
            "sandbox.report": report_json,
        }
    });
    if !optional_masks.is_empty() {
        value["annotations"]["sandbox.optional-masks"] =
            json!(serde_json::to_string(&optional_masks).unwrap_or_default());
    }
    serde_json::from_value(value).map_err(|e| Error::argument(format!("spec: {e}")))
}

/// The spec as deterministic, pretty JSON (keys sorted), as written to `config.json`.
pub fn spec_json(spec: &Spec) -> Result<String, Error> {
    let value = serde_json::to_value(spec).map_err(|e| Error::argument(format!("spec: {e}")))?;
    serde_json::to_string_pretty(&value).map_err(|e| Error::argument(format!("spec: {e}")))
}
