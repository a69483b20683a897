//! The OCI runtime spec of one spawn, built field by field from its plan with oci-spec's typed
//! builders (a mistyped field does not compile), never from `Spec::default()`; and its
//! deterministic JSON form.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use oci_spec::OciSpecError;
use oci_spec::runtime::{
    Capabilities, Linux, LinuxBuilder, LinuxCapabilitiesBuilder, LinuxIdMappingBuilder, LinuxMemoryBuilder,
    LinuxNamespaceBuilder, LinuxNamespaceType, LinuxPidsBuilder, LinuxResourcesBuilder, Mount, MountBuilder,
    PosixRlimitBuilder, PosixRlimitType, Process, ProcessBuilder, RootBuilder, Spec, SpecBuilder, UserBuilder,
};

use super::expected::ExpectedMount;
use super::landlock::LandlockRules;
use super::plan::{MountKind, MountPlan, Origin, PlannedMount};
use super::{Launch, SpawnContext};
use crate::error::Error;
use crate::profile::Profile;
use crate::protect::Protected;
use crate::report::{CompileReport, Guarantees};
use crate::seccomp;

/// The OCI default masked `/proc` paths (`/sys` is never mounted), and the host's memory views.
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
    // Root-only views of the host's memory (page flags and counts, kernel heap and vmalloc
    // layouts): the container's uid 0 is the host's when run as root (a red team, 5 December).
    "/proc/kpagecgroup",
    "/proc/kpagecount",
    "/proc/kpageflags",
    "/proc/pagetypeinfo",
    "/proc/slabinfo",
    "/proc/vmallocinfo",
];
/// The most signals a run's processes may have queued at once (`RLIMIT_SIGPENDING`).
pub const SIGPENDING: u64 = 1024;
/// The OCI default read-only `/proc` paths.
const READONLY_PATHS: &[&str] = &["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

/// The device nodes a standard runtime binds from the host into a container with a user
/// namespace (runc and crun alike), writable. The container's uid 0 is the exporting user, who
/// owns them: under `runc run` an exported bundle's workload changed the host's `/dev/full`
/// mode and times (the red team of 4 December, night). An exported bundle lists them as
/// read-only paths, which runc and crun make read-only binds after creating the devices
/// (reading and writing a device works on one; `chmod`, `chown` and `touch` fail). A spawn of
/// the embedded runtime does not list them: its helper already makes these binds read-only
/// (round 2), and the run path stays as it was tested.
const EXPORT_READONLY_DEVICES: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

/// The most pseudo-terminals one run may hold at once (its devpts instance's `max`).
const DEVPTS_MAX_OPTION: &str = "max=64";

/// The root filesystem's directory in a bundle (`root.path`), which relative bind sources of
/// binds made through the root start with.
pub const ROOTFS: &str = "rootfs";

fn path_str(p: &Path) -> Result<String, Error> {
    p.to_str().map(str::to_owned).ok_or_else(|| Error::argument(format!("path {} is not valid UTF-8", p.display())))
}

/// A builder's failure (a field it refused) as the compile error it always was.
fn spec_error(e: OciSpecError) -> Error {
    Error::argument(format!("spec: {e}"))
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn oci_mount(m: &PlannedMount) -> Result<Mount, Error> {
    let dest = PathBuf::from(path_str(&m.destination)?);
    let mount = |typ: &str, source: PathBuf, options: &[&str]| {
        MountBuilder::default()
            .destination(dest.clone())
            .typ(typ)
            .source(source)
            .options(strings(options))
            .build()
            .map_err(spec_error)
    };
    let bind = |options: &[&str]| -> Result<Mount, Error> {
        // A bind through the root (see `plan::order`) names its source in the bundle's root
        // filesystem, relative to the bundle as OCI runtimes read a relative bind source; the
        // embedded runtime's bundle writer makes it absolute (`export::root_sources`).
        let source = if m.through_root {
            let inside = m.destination.strip_prefix("/").unwrap_or(&m.destination);
            path_str(&Path::new(ROOTFS).join(inside))?
        } else {
            path_str(m.source.as_deref().unwrap_or(&m.destination))?
        };
        mount("bind", PathBuf::from(source), options)
    };
    let tmpfs = |options: &[&str]| mount("tmpfs", PathBuf::from("tmpfs"), options);
    match (m.kind, m.file) {
        // `rnosuid` and `rnodev` reach the mounts a recursive bind brings along (a device node
        // on a filesystem mounted beneath an area opened the host's disks: a red team, 5
        // December); `nosuid`/`nodev` cover only the top mount.
        (MountKind::ReadOnly, false) => bind(&["rbind", "rro", "nosuid", "nodev", "rnosuid", "rnodev"]),
        (MountKind::ReadOnly, true) => bind(&["bind", "ro", "nosuid", "nodev"]),
        (MountKind::ReadWrite, true) if m.destination == Path::new("/dev/null") => bind(&["bind", "nosuid"]),
        (MountKind::ReadWrite | MountKind::WriteOnly, true) => bind(&["bind", "nosuid", "nodev"]),
        (MountKind::ReadWrite | MountKind::WriteOnly | MountKind::Private, _) => {
            bind(&["rbind", "nosuid", "nodev", "rnosuid", "rnodev"])
        }
        (MountKind::Mask, _) => tmpfs(&["nosuid", "nodev", "noexec", "mode=755", "size=64k"]),
        (MountKind::Tmp, _) => tmpfs(&["nosuid", "nodev", "mode=1777"]),
        (MountKind::Dev, _) => tmpfs(&["nosuid", "strictatime", "mode=755", "size=65536k"]),
        (MountKind::DevShm, _) => tmpfs(&["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]),
        (MountKind::Proc, _) => mount("proc", PathBuf::from("proc"), &["nosuid", "noexec", "nodev"]),
        // `max`: the host's pool of pseudo-terminals outside its own devpts instance is
        // `kernel.pty.max - kernel.pty.reserve` (3072 by default), shared by every container; one
        // run took it all and every other sandbox's `openpty` failed (the red team of 4 December,
        // night). A run gets at most 64 of them.
        (MountKind::DevPts, _) => mount(
            "devpts",
            PathBuf::from("devpts"),
            &["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", DEVPTS_MAX_OPTION],
        ),
    }
}

/// The process: the spawn's argv, env and cwd as uid 0 of the user namespace, with no
/// capability in any set, no new privileges, no core files and 1024/4096 open files.
fn process(spawn: &SpawnContext) -> Result<Process, Error> {
    let env: Vec<String> = spawn.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let no_capabilities = LinuxCapabilitiesBuilder::default()
        .bounding(Capabilities::new())
        .effective(Capabilities::new())
        .inheritable(Capabilities::new())
        .permitted(Capabilities::new())
        .ambient(Capabilities::new())
        .build()
        .map_err(spec_error)?;
    let rlimit = |typ: PosixRlimitType, soft: u64, hard: u64| {
        PosixRlimitBuilder::default().typ(typ).soft(soft).hard(hard).build().map_err(spec_error)
    };
    // Queued signals are counted per user at every user namespace up to the host's: with the
    // caller's limit (about 96,000 here) one process of a run queued enough to make the host
    // uid's own `sigqueue` and `timer_create` fail. 1024 bounds what a run can charge there.
    let mut rlimits = vec![
        rlimit(PosixRlimitType::RlimitCore, 0, 0)?,
        rlimit(PosixRlimitType::RlimitNofile, 1024, 4096)?,
        rlimit(PosixRlimitType::RlimitSigpending, SIGPENDING, SIGPENDING)?,
    ];
    if let Launch::Embedded { nproc: Some(n), .. } = &spawn.launch {
        rlimits.push(rlimit(PosixRlimitType::RlimitNproc, *n, *n)?);
    }
    let mut process = ProcessBuilder::default()
        .terminal(spawn.tty)
        .user(UserBuilder::default().uid(0u32).gid(0u32).build().map_err(spec_error)?)
        .args(spawn.argv.clone())
        .env(env)
        .cwd(PathBuf::from(path_str(&spawn.cwd)?))
        .capabilities(no_capabilities)
        .rlimits(rlimits)
        .no_new_privileges(true)
        .build()
        .map_err(spec_error)?;
    // `terminal` only for a PTY spawn (CONTRACT.md §18); absent, runtimes take `false`.
    if !spawn.tty {
        process.set_terminal(None);
    }
    Ok(process)
}

/// The `linux` section: namespaces (network only when private), the one-id user mapping,
/// masked and read-only paths, the seccomp filter and, with a cgroup, its path and limits.
fn linux(
    spawn: &SpawnContext,
    plan: &MountPlan,
    private_network: bool,
    seccomp_rules: seccomp::SpawnRules,
) -> Result<Linux, Error> {
    let mut kinds = vec![
        LinuxNamespaceType::User,
        LinuxNamespaceType::Mount,
        LinuxNamespaceType::Pid,
        LinuxNamespaceType::Ipc,
        LinuxNamespaceType::Uts,
        LinuxNamespaceType::Cgroup,
    ];
    if private_network {
        kinds.push(LinuxNamespaceType::Network);
    }
    let namespaces = kinds
        .into_iter()
        .map(|typ| LinuxNamespaceBuilder::default().typ(typ).build().map_err(spec_error))
        .collect::<Result<Vec<_>, _>>()?;
    let mut readonly = strings(READONLY_PATHS);
    if matches!(spawn.launch, Launch::Export) {
        readonly.extend(strings(EXPORT_READONLY_DEVICES));
    }
    for m in plan.mounts.iter().filter(|m| m.kind == MountKind::Mask && !m.below) {
        readonly.push(path_str(&m.destination)?);
    }
    let one = |id: u32| {
        LinuxIdMappingBuilder::default().container_id(0u32).host_id(id).size(1u32).build().map_err(spec_error)
    };
    let mut linux = LinuxBuilder::default()
        .namespaces(namespaces)
        .uid_mappings(vec![one(spawn.uid)?])
        .gid_mappings(vec![one(spawn.gid)?])
        .masked_paths(strings(MASKED_PATHS))
        .readonly_paths(readonly)
        .seccomp(seccomp::oci_section(seccomp_rules)?)
        .build()
        .map_err(spec_error)?;
    // The builder fills unset fields from oci-spec's `Linux::default()`, whose `resources` is
    // not empty (an empty device list): both are cleared and set only as below.
    linux.set_cgroups_path(None);
    linux.set_resources(None);
    if let Launch::Embedded { cgroups_path: Some(path), pids_max, memory_max, .. } = &spawn.launch {
        linux.set_cgroups_path(Some(PathBuf::from(path)));
        // No `resources` at all without limits: its mere presence makes a v1 runtime write
        // device rules, which only root may (rootless limits are then written by the helper).
        if pids_max.is_some() || memory_max.is_some() {
            let mut resources = LinuxResourcesBuilder::default().build().map_err(spec_error)?;
            if let Some(pids) = pids_max {
                resources
                    .set_pids(Some(LinuxPidsBuilder::default().limit(i64::from(*pids)).build().map_err(spec_error)?));
            }
            if let Some(mem) = memory_max {
                let limit = i64::try_from(*mem)
                    .map_err(|_| Error::argument(format!("spec: memory limit {mem} is too large")))?;
                resources.set_memory(Some(LinuxMemoryBuilder::default().limit(limit).build().map_err(spec_error)?));
            }
            linux.set_resources(Some(resources));
        }
    }
    Ok(linux)
}

/// The spec of one spawn, built with oci-spec's builders so that every field is a typed one.
///
/// A builder takes every field left unset from oci-spec's `Default` (youki's shell, default
/// capabilities, mounts and hostname): every field is set here, and the goldens catch one that
/// is not.
#[allow(clippy::too_many_arguments)]
pub(super) fn build_spec(
    profile: &Profile,
    spawn: &SpawnContext,
    plan: &MountPlan,
    landlock: &LandlockRules,
    private_network: bool,
    egress_proxy: bool,
    seccomp_rules: seccomp::SpawnRules,
    standard_report: &CompileReport,
    standard_guarantees: Guarantees,
    expected: &[ExpectedMount],
    protection: &Protected,
) -> Result<Spec, Error> {
    let mounts = plan.mounts.iter().map(oci_mount).collect::<Result<Vec<_>, _>>()?;
    let report_json =
        serde_json::to_string(&standard_report.entries).map_err(|e| Error::argument(format!("report: {e}")))?;
    let landlock_json = serde_json::to_string(landlock).map_err(|e| Error::argument(format!("landlock rules: {e}")))?;
    let identities_json = serde_json::to_string(expected).map_err(|e| Error::argument(format!("identities: {e}")))?;
    let protect_json =
        serde_json::to_string(protection).map_err(|e| Error::argument(format!("protected paths: {e}")))?;
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
    let mut annotations: HashMap<String, String> = [
        ("sandbox.version", String::from("1")),
        ("sandbox.fingerprint", profile.fingerprint().to_owned()),
        ("sandbox.landlock", landlock_json),
        ("sandbox.identities", identities_json),
        ("sandbox.protect", protect_json),
        ("sandbox.guarantees", standard_guarantees.bits().to_string()),
        ("sandbox.report", report_json),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    if egress_proxy {
        annotations.insert(String::from(super::EGRESS_PROXY_ANNOTATION), String::from("1"));
    }
    if !optional_masks.is_empty() {
        annotations
            .insert(String::from("sandbox.optional-masks"), serde_json::to_string(&optional_masks).unwrap_or_default());
    }
    SpecBuilder::default()
        .version("1.0.2")
        .process(process(spawn)?)
        .root(RootBuilder::default().path(ROOTFS).readonly(true).build().map_err(spec_error)?)
        .hostname("sandbox")
        .mounts(mounts)
        .linux(linux(spawn, plan, private_network, seccomp_rules)?)
        .annotations(annotations)
        .build()
        .map_err(spec_error)
}

/// The spec as deterministic, pretty JSON (keys sorted), as written to `config.json`.
pub fn spec_json(spec: &Spec) -> Result<String, Error> {
    let value = serde_json::to_value(spec).map_err(|e| Error::argument(format!("spec: {e}")))?;
    serde_json::to_string_pretty(&value).map_err(|e| Error::argument(format!("spec: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;

    use oci_spec::runtime::Spec;

    use super::spec_json;
    use crate::access::Access;
    use crate::compile::{GrantDeltas, Launch, SpawnContext, compile};
    use crate::host::HostView;
    use crate::profile::{Profile, ProfileConfig};

    /// `/bin/true` in `/` as uid 1000 with Landlock, no HOME and no grants, under `launch`.
    fn test_spawn(launch: Launch) -> SpawnContext {
        SpawnContext {
            argv: vec![String::from("/bin/true")],
            cwd: PathBuf::from("/"),
            env: vec![(String::from("PATH"), String::from("/bin"))],
            tty: false,
            home_dir: None,
            temp_dir: PathBuf::from("/nonexistent/tmp"),
            scratch_root: PathBuf::from("/nonexistent"),
            other_scratch_roots: Vec::new(),
            uid: 1000,
            gid: 1000,
            landlock: true,
            egress_route: false,
            launch,
            grants: GrantDeltas::default(),
            protected: Default::default(),
        }
    }

    /// The builders take an unset field from oci-spec's defaults: `config.json` has exactly the
    /// fields set here (no shell, capabilities, hostname or resources of youki's), and the spec
    /// read back from it is the spec, with and without a cgroup and limits.
    #[test]
    fn the_built_spec_is_what_its_json_says() {
        let profile = Profile::new(ProfileConfig {
            workspace_root: PathBuf::from("/"),
            workspace_read: Access::Allow,
            ..ProfileConfig::default()
        })
        .unwrap();
        let launches = [
            Launch::Export,
            Launch::Embedded { cgroups_path: None, pids_max: None, memory_max: None, nproc: Some(64) },
            Launch::Embedded {
                cgroups_path: Some(String::from("/sandbox/c")),
                pids_max: None,
                memory_max: None,
                nproc: None,
            },
            Launch::Embedded {
                cgroups_path: Some(String::from("/sandbox/c")),
                pids_max: Some(64),
                memory_max: Some(1 << 30),
                nproc: None,
            },
        ];
        for launch in launches {
            let spawn =
                SpawnContext { home_dir: Some(PathBuf::from("/nonexistent/home")), ..test_spawn(launch.clone()) };
            let bundle = compile(&profile, &spawn, &HostView::default()).unwrap();
            let json = spec_json(&bundle.spec).unwrap();
            let back: Spec = serde_json::from_str(&json).unwrap();
            assert_eq!(back, bundle.spec, "{launch:?}");
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            let keys = |v: &serde_json::Value| -> Vec<String> {
                v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
            };
            let (cgroup, limits) = match &launch {
                Launch::Embedded { cgroups_path: Some(_), pids_max, memory_max, .. } => {
                    (true, pids_max.is_some() || memory_max.is_some())
                }
                _ => (false, false),
            };
            assert_eq!(
                keys(&v),
                ["annotations", "hostname", "linux", "mounts", "ociVersion", "process", "root"],
                "{launch:?}"
            );
            assert_eq!(
                keys(&v["process"]),
                ["args", "capabilities", "cwd", "env", "noNewPrivileges", "rlimits", "user"]
            );
            let mut linux = vec!["gidMappings", "maskedPaths", "namespaces", "readonlyPaths", "seccomp", "uidMappings"];
            if cgroup {
                linux.push("cgroupsPath");
            }
            if limits {
                linux.push("resources");
            }
            linux.sort_unstable();
            assert_eq!(keys(&v["linux"]), linux, "{launch:?}");
            assert_eq!(v["hostname"], "sandbox");
            for set in ["ambient", "bounding", "effective", "inheritable", "permitted"] {
                assert_eq!(v["process"]["capabilities"][set], serde_json::json!([]), "{set}");
            }
        }
    }

    /// The init watches direct network calls exactly when the spawn reaches the network only
    /// through the egress proxy: network `gated` without a broad grant or an egress route.
    #[test]
    fn only_a_proxied_spawn_carries_the_egress_proxy_annotation() {
        let spawn = |grants: GrantDeltas, egress_route: bool| SpawnContext {
            grants,
            egress_route,
            ..test_spawn(Launch::Export)
        };
        let broad = GrantDeltas { broad_port: Some(443), ..GrantDeltas::default() };
        for (network, grants, egress_route, want) in [
            (Access::Gated, GrantDeltas::default(), false, true),
            (Access::Gated, broad, false, false),
            (Access::Deny, GrantDeltas::default(), false, false),
            (Access::Allow, GrantDeltas::default(), false, false),
            (Access::Allow, GrantDeltas::default(), true, false),
        ] {
            let profile = Profile::new(ProfileConfig {
                workspace_root: PathBuf::from("/"),
                workspace_read: Access::Allow,
                network,
                ..ProfileConfig::default()
            })
            .unwrap();
            let bundle = compile(&profile, &spawn(grants.clone(), egress_route), &HostView::default()).unwrap();
            let annotations = bundle.spec.annotations().clone().unwrap_or_default();
            let got = annotations.get(crate::compile::EGRESS_PROXY_ANNOTATION).map(String::as_str);
            assert_eq!(got, want.then_some("1"), "{network} {grants:?} {egress_route}");
            assert_eq!(bundle.egress_proxy, want, "{network}");
        }
    }
}
