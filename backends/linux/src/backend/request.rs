//! A spawn's bundle, the helper's request for it, and the cgroup paths and limits of its
//! container.

use std::path::{Path, PathBuf};

use sandbox_bundle::{Bundle, Error, HostView, Launch, Profile, SpawnContext, compile};

use crate::protocol::{Limit, Request};

use super::probe::Landlock;
use super::{LinuxBackend, SpawnInput};

impl LinuxBackend {
    /// Compiles the spawn (for the report, to see that it can be expressed, or to run it).
    pub fn compile(&self, profile: &Profile, input: &SpawnInput<'_>, id: &str) -> Result<Bundle, Error> {
        self.compile_with(profile, input, id, true)
    }

    /// [`LinuxBackend::compile`] without the protected-paths scan: for a check that the spawn
    /// can be expressed at all (the scan walks the writable areas and only adds read-only
    /// binds; the spawn itself always scans).
    pub fn compile_unscanned(&self, profile: &Profile, input: &SpawnInput<'_>, id: &str) -> Result<Bundle, Error> {
        self.compile_with(profile, input, id, false)
    }

    fn compile_with(&self, profile: &Profile, input: &SpawnInput<'_>, id: &str, scan: bool) -> Result<Bundle, Error> {
        // The protected paths as they are now (issue 14), the `~/` entries in the caller's real
        // HOME (not the workload's HOME, which is the executor's own when isolated).
        let protected = if scan {
            sandbox_bundle::protect::scan_with(profile, self.real_home.as_deref(), Some(&self.scan_memo))
        } else {
            sandbox_bundle::protect::ProtectScan::default()
        };
        self.compile_scanned(profile, input, id, protected)
    }

    fn compile_scanned(
        &self,
        profile: &Profile,
        input: &SpawnInput<'_>,
        id: &str,
        mut protected: sandbox_bundle::protect::ProtectScan,
    ) -> Result<Bundle, Error> {
        protected.placeholder = Some(self.placeholder.clone());
        // The placeholder is checked where it is bound, like every bind a workload could
        // redirect by renaming its destination (the set's own file, in the masked scratch root).
        if let Ok((dev, ino)) = sandbox_bundle::protect::object_identity(&self.placeholder) {
            protected.identities.push((self.placeholder.clone(), dev, ino));
        }
        let ctx = SpawnContext {
            argv: input.argv.clone(),
            cwd: input.cwd.clone(),
            env: with_broad_dns(&input.env, input.grants.broad_port.is_some()),
            protected,
            tty: input.tty,
            home_dir: input.home_dir.map(Path::to_path_buf),
            temp_dir: input.temp_dir.to_path_buf(),
            scratch_root: self.scratch_root.clone(),
            other_scratch_roots: (self.masked_roots)(),
            uid: self.uid,
            gid: self.gid,
            landlock: self.probe.landlock == Landlock::Full,
            egress_route: false,
            launch: Launch::Embedded {
                cgroups_path: Some(self.runtime_cgroup_path(id)),
                pids_max: (self.uid == 0 && self.cgroups.parent.is_some()).then_some(self.pids_max),
                memory_max: self.memory_max.filter(|_| self.uid == 0 && self.cgroups.parent.is_some()),
                nproc: self.nproc,
            },
            grants: input.grants.clone(),
        };
        compile(profile, &ctx, &HostView::scan_with(Some(&self.host_memo))).map_err(|e| match e {
            Error::InvalidArgument { detail } => Error::runtime(format!("bundle: {detail}")),
            other => other,
        })
    }

    /// The helper's request for container `id` whose bundle is written in `dir`. With `require`
    /// the probe's measurements become requirements (a spawn getting less fails).
    pub(super) fn request(
        &self,
        id: &str,
        dir: &Path,
        bundle: &Bundle,
        tty: bool,
        require: bool,
        warm: bool,
    ) -> Request {
        let private_net = !bundle.host_network;
        let cgroup_path = self.cgroup_path(id);
        Request {
            bundle: dir.to_path_buf(),
            id: id.to_owned(),
            state_root: self.state_root.clone(),
            rootless: self.uid != 0,
            loopback: private_net,
            require_loopback: require && private_net && self.probe.loopback == Some(true),
            proxy_port: bundle.egress_proxy.then_some(sandbox_bundle::target::PROXY_PORT),
            require_proxy: require && bundle.egress_proxy && self.probe.proxy == Some(true),
            require_landlock: require && self.probe.landlock == Landlock::Full,
            require_seccomp: require && self.probe.seccomp,
            limits: self.limits(id),
            require_limits: require && self.probe.limits.is_ok(),
            procs: cgroup_path
                .as_deref()
                .and_then(|p| self.layout.limit_files(p).0.parent().map(|d| d.join("cgroup.procs"))),
            cgroup_path,
            cgroupless: self.cgroups.parent.is_none(),
            inotify: Some(self.inotify),
            mount_fixes: crate::protocol::MountFixes {
                pins: skeleton_pins(&bundle.plan.mounts),
                devices: if self.uid == 0 { device_binds(&bundle.spec) } else { Vec::new() },
            },
            tty,
            warm,
        }
    }

    pub(super) fn cgroup_path(&self, id: &str) -> Option<String> {
        self.cgroups.parent().map(|p| format!("{}/{id}", p.trim_end_matches('/')))
    }

    /// The cgroup path the runtime gets for container `id`: under the parent, or without a
    /// cgroup (issue 15) `/<id>`: the helper runs the runtime in a cgroup namespace of its own
    /// whose root it may not write, so the runtime's attempt to make `/<id>` there fails and
    /// leaves the process where it is (an absolute path keeps it off systemd).
    pub(super) fn runtime_cgroup_path(&self, id: &str) -> String {
        self.cgroup_path(id).unwrap_or_else(|| format!("/{id}"))
    }

    /// The configured or found cgroup parent, if any.
    pub(super) fn cgroup_parent(&self) -> Option<&str> {
        self.cgroups.parent()
    }

    /// The spawn's cgroup limits. As root libcontainer applies them from `linux.resources`;
    /// rootless the helper writes them itself (libcontainer's v1 manager would also write
    /// device rules, which only root may).
    pub(super) fn limits(&self, id: &str) -> Vec<Limit> {
        let Some(path) = self.cgroup_path(id) else { return Vec::new() };
        let (pids, memory) = self.layout.limit_files(&path);
        let write = self.uid != 0;
        // A v2 delegation without a controller gets no limit of it (the report says so).
        let has = |c: &str| !self.cgroups.missing.contains(&c);
        let mut limits = Vec::new();
        if has("pids") {
            limits.push(Limit { file: pids, value: u64::from(self.pids_max), write });
        }
        if let (Some(value), true) = (self.memory_max, has("memory")) {
            limits.push(Limit { file: memory, value, write });
        }
        if !has("cpu") {
            return limits;
        }
        // CPU (issue 12, class 13): always written by the helper, as root too (libcontainer
        // would convert an OCI `cpu.shares` into a different v2 weight). A spawn's weight only
        // divides its parent's share among siblings: against the host's processes it is the
        // parent's weight that counts, so the library's own parent gets the same weight.
        let (weight_file, quota_file) = self.layout.cpu_files(&path);
        let weight = self.layout.cpu_weight_value(self.cpu_weight);
        limits.push(Limit { file: weight_file, value: weight, write: true });
        if let Some(m) = self.cpu_max_millicpus {
            limits.push(Limit { file: quota_file, value: u64::from(m) * 100, write: true });
        }
        if let (true, Some(parent)) = (self.own_parent, self.cgroup_parent()) {
            limits.push(Limit { file: self.layout.cpu_files(parent).0, value: weight, write: true });
        }
        limits
    }
}

/// The cgroup parent a set with the `configured` one uses: that one, else `/sandbox` as root,
/// else the caller's own delegated cgroup v2, else none (see [`crate::cgroups`]). Changes
/// nothing.
pub fn configured_cgroup_parent(configured: Option<&Path>) -> Option<String> {
    crate::cgroups::discover(configured, false).parent().map(str::to_owned)
}

/// inotify instances a run may hold (issue 12, class 10). The host allows each uid 128 by
/// default (`fs.inotify.max_user_instances`), counted across every user namespace of that uid:
/// a watcher or dev server uses one to a few, so 16 leave room for several in one run, and a set
/// of up to 7 concurrent runs cannot take all of the uid's 128.
pub(super) const INOTIFY_INSTANCES: u64 = 16;

/// The run's inotify bound: [`INOTIFY_INSTANCES`] instances, and a quarter of the host's
/// per-uid watches (`fs.inotify.max_user_watches`; at least 1024, 8192 when unreadable), enough
/// to watch a large tree while leaving most for the host.
pub(super) fn inotify_bound() -> (u64, u64) {
    let host = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(32_768);
    (INOTIFY_INSTANCES, (host / 4).max(1024))
}

/// The environment of a broad-grant spawn gets `RES_OPTIONS=use-vc` (DNS over TCP, §10).
fn with_broad_dns(env: &[(String, String)], broad: bool) -> Vec<(String, String)> {
    let mut env = env.to_vec();
    if broad {
        match env.iter_mut().find(|(k, _)| k == "RES_OPTIONS") {
            Some(slot) => slot.1 = String::from("use-vc"),
            None => env.push((String::from("RES_OPTIONS"), String::from("use-vc"))),
        }
    }
    env
}

/// `RLIMIT_NPROC` of a run without a pids controller: `pids_max`, or the caller's own hard limit
/// when that is lower (the runtime may only lower it).
pub(super) fn nproc_bound(pids_max: u32) -> u64 {
    let hard = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NPROC).map_or(u64::MAX, |(_, h)| h);
    u64::from(pids_max).min(hard)
}

/// The directories the container makes itself between a tmpfs mount of its own (the private
/// `/tmp`, `/dev/shm`, `/dev`, a mask) and a mount nested in it (see
/// [`crate::protocol::MountFixes::pins`]), shallow first.
fn skeleton_pins(mounts: &[sandbox_bundle::compile::PlannedMount]) -> Vec<PathBuf> {
    use sandbox_bundle::compile::MountKind;
    // Each mount's enclosing one is its nearest ancestor among the destinations (looked up by
    // path: a scan finding thousands of entries made this quadratic, red team AN).
    let mut by_destination: std::collections::HashMap<&std::path::Path, &sandbox_bundle::compile::PlannedMount> =
        std::collections::HashMap::new();
    for m in mounts.iter().filter(|m| !m.below) {
        // The last of several at one destination, as before (`max_by_key` took the last).
        by_destination.insert(m.destination.as_path(), m);
    }
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    for m in mounts.iter().filter(|m| !m.below) {
        let enclosing = m.destination.ancestors().skip(1).find_map(|a| by_destination.get(a));
        let Some(e) = enclosing else { continue };
        if !matches!(e.kind, MountKind::Tmp | MountKind::DevShm | MountKind::Dev | MountKind::Mask) {
            continue;
        }
        for a in m.destination.ancestors().skip(1).take_while(|a| *a != e.destination.as_path()) {
            if seen.insert(a.to_path_buf()) {
                out.push(a.to_path_buf());
            }
        }
    }
    out.sort_by_key(|p| (p.components().count(), p.clone()));
    out
}

/// The paths that may be binds of the host's device nodes: the runtime's default devices and
/// the spec's masked paths (files among them are masked with a bind of `/dev/null`).
fn device_binds(spec: &sandbox_bundle::oci_spec::runtime::Spec) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom"]
        .iter()
        .map(PathBuf::from)
        .collect();
    if let Some(masked) = spec.linux().as_ref().and_then(|l| l.masked_paths().as_ref()) {
        out.extend(masked.iter().map(PathBuf::from));
    }
    out
}
