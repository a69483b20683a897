//! The facade's side of the Linux container backend: the probe, level/guarantees/report, and
//! synchronous spawns through the helper.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sandbox_bundle::{
    Access, Bundle, CompileReport, Error, GrantDeltas, Guarantees, HostView, Launch, Level, Profile, ReportEntry,
    SpawnContext, Status, compile, rootfs_key, write_bundle_on, write_rootfs,
};
use sandbox_linux::protocol::{Event, Limit, Measured, Outcome, Request};
use sandbox_linux::{CgroupLayout, WaitError};

use crate::output::{ExitStatus, Output, Stop, drain, pump};
use crate::{Deadline, ExecutorSetOptions, fsutil};

/// What the probe container measured on this host, once per set.
#[derive(Clone, Debug)]
pub(crate) struct Probe {
    pub landlock: String,
    pub landlock_abi: u32,
    pub seccomp: bool,
    pub loopback: Option<bool>,
    pub loopback_error: Option<String>,
    pub limits: Result<String, String>,
}

/// The Linux backend of one executor set.
#[derive(Debug)]
pub(crate) struct LinuxBackend {
    state_root: PathBuf,
    bundles: PathBuf,
    scratch_root: PathBuf,
    uid: u32,
    gid: u32,
    layout: CgroupLayout,
    cgroup_parent: Option<String>,
    pids_max: u32,
    memory_max: Option<u64>,
    /// CPU weight (cgroup v2 units) and optional bound (thousandths of a CPU) of every spawn.
    cpu_weight: u16,
    cpu_max_millicpus: Option<u32>,
    /// The parent was chosen by the library (`/sandbox` as root): its own CPU weight is then
    /// set too, since it is the parent's weight that competes with the host's processes.
    own_parent: bool,
    /// The run's inotify bound (instances, watches), set in its user namespace.
    inotify: (u64, u64),
    tag: String,
    counter: AtomicU64,
    /// The warm helper that forks one worker per spawn.
    zygote: sandbox_linux::Zygote,
    /// `<set>/rootfs`: one prepared rootfs skeleton per mount shape (see `rootfs_key`).
    skeletons: PathBuf,
    prepared: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Warm containers by spawn shape (see `shape_key`): built ahead, waiting for a process.
    warm: std::sync::Mutex<Warm>,
    pub probe: Probe,
}

/// The warm containers of a set, and whether the set has settled (no more are made).
#[derive(Debug, Default)]
struct Warm {
    ready: HashMap<String, std::collections::VecDeque<Launched>>,
    /// Shapes spawned at least once: only a shape seen before gets a warm container, so a
    /// one-shot set (the CLI) never builds one it would not use.
    seen: std::collections::HashSet<String>,
    settled: bool,
}

/// At most this many warm containers wait at once in a set.
const MAX_WARM: usize = 8;

/// Warm containers kept per spawn shape: two, so that calls fired back to back find one ready
/// while the next is still being built.
const WARM_PER_SHAPE: usize = 2;

/// One spawn's inputs beyond the profile.
pub(crate) struct SpawnInput<'a> {
    pub tty: bool,
    pub grants: GrantDeltas,
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub home_dir: Option<&'a Path>,
    pub temp_dir: &'a Path,
}

impl LinuxBackend {
    /// Selects and probes the backend for a set whose directory is `set_dir`.
    pub fn new(dl: &Deadline, profile: &Profile, options: &ExecutorSetOptions, set_dir: &Path) -> Result<Self, Error> {
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let layout = CgroupLayout::detect();
        let own_parent = options.cgroup_parent.is_none() && uid == 0;
        let cgroup_parent = configured_cgroup_parent(options);
        if cgroup_parent.is_none() {
            return Err(Error::SandboxUnavailable {
                detail: String::from(
                    "running as a non-root user needs a writable (delegated) cgroup subtree: create one as root, \
                     chown it to this user, and pass it as cgroup_parent",
                ),
            });
        }
        // The parent is not recorded in the set directory: a sweep uses its own configured
        // parent, never a file of the scratch root (issue 12, class 6).
        let state_root = set_dir.join("state");
        let bundles = set_dir.join("bundles");
        let skeletons = set_dir.join("rootfs");
        for d in [&state_root, &bundles, &skeletons] {
            std::fs::create_dir(d).map_err(|e| Error::io(format!("creating {}", d.display()), e))?;
        }
        let mut backend = LinuxBackend {
            state_root,
            bundles,
            scratch_root: options.scratch_root.clone(),
            uid,
            gid,
            layout,
            cgroup_parent,
            pids_max: options.pids_max,
            memory_max: options.memory_max,
            cpu_weight: options.cpu_weight,
            cpu_max_millicpus: options.cpu_max_millicpus,
            own_parent,
            inotify: inotify_bound(),
            tag: fsutil::random_hex(4)?,
            counter: AtomicU64::new(0),
            zygote: sandbox_linux::Zygote::new(),
            skeletons,
            prepared: std::sync::Mutex::default(),
            warm: std::sync::Mutex::default(),
            probe: Probe {
                landlock: String::from("none"),
                landlock_abi: 0,
                seccomp: false,
                loopback: None,
                loopback_error: None,
                limits: Err(String::from("not probed")),
            },
        };
        // The probe: run the profile's own bundle with nothing required and see what holds.
        let probe_tmp = fsutil::private_dir(set_dir, "probe-tmp-")?;
        let input = SpawnInput {
            tty: false,
            grants: GrantDeltas::default(),
            argv: vec![String::from("/bin/sh"), String::from("-c"), String::from("exit 0")],
            cwd: profile.workspace_root().to_path_buf(),
            env: vec![(String::from("PATH"), String::from("/usr/bin:/bin"))],
            home_dir: None,
            temp_dir: &probe_tmp,
        };
        let never = AtomicBool::new(false);
        let result = backend.spawn(dl, profile, &input, None, &never, false);
        let _ = fsutil::remove_tree(&probe_tmp);
        let (output, measured) = match result {
            Ok(r) => r,
            Err(e @ (Error::DeadlineExceeded { .. } | Error::Cancelled { .. })) => return Err(e),
            Err(e) => {
                return Err(Error::SandboxUnavailable {
                    detail: format!(
                        "the probe container could not run (it needs user namespaces, recursive read-only \
                         mounts from Linux 5.12 on, and a writable cgroup parent): {e}"
                    ),
                });
            }
        };
        if output.status != ExitStatus::Code(0) {
            return Err(Error::SandboxUnavailable {
                detail: format!(
                    "the probe container ran but its shell failed ({:?}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.bytes).trim()
                ),
            });
        }
        backend.probe = Probe {
            landlock: measured.landlock.clone().unwrap_or_else(|| String::from("none")),
            landlock_abi: measured.landlock_abi,
            seccomp: measured.seccomp == 2,
            loopback: measured.loopback,
            loopback_error: measured.loopback_error.clone(),
            limits: backend.check_readback(&measured),
        };
        Ok(backend)
    }

    fn cgroup_path(&self, id: &str) -> Option<String> {
        self.cgroup_parent.as_ref().map(|p| format!("{}/{id}", p.trim_end_matches('/')))
    }

    /// The spawn's cgroup limits. As root libcontainer applies them from `linux.resources`;
    /// rootless the helper writes them itself (libcontainer's v1 manager would also write
    /// device rules, which only root may).
    fn limits(&self, id: &str) -> Vec<Limit> {
        let Some(path) = self.cgroup_path(id) else { return Vec::new() };
        let (pids, memory) = self.layout.limit_files(&path);
        let write = self.uid != 0;
        let mut limits = vec![Limit { file: pids, value: u64::from(self.pids_max), write }];
        if let Some(value) = self.memory_max {
            limits.push(Limit { file: memory, value, write });
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
        if let (true, Some(parent)) = (self.own_parent, self.cgroup_parent.as_deref()) {
            limits.push(Limit { file: self.layout.cpu_files(parent).0, value: weight, write: true });
        }
        limits
    }

    fn check_readback(&self, measured: &Measured) -> Result<String, String> {
        let limits = self.limits("probe");
        if limits.is_empty() {
            return Err(String::from("no cgroup parent"));
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
        let mut detail = format!("pids.max {}", self.pids_max);
        if let Some(want) = self.memory_max {
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
        Ok(format!("{detail} (cgroup under {})", self.cgroup_parent.as_deref().unwrap_or("?")))
    }

    /// The CPU part of the resource-limits detail.
    fn cpu_detail(&self) -> String {
        let parent = self.cgroup_parent.as_deref().unwrap_or("?");
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
        self.probe.landlock == "full" && self.probe.landlock_abi >= 6
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

    /// The measured level, guarantees and report for `profile` (policy entries from a
    /// reference compile of the executor's own spawn shape).
    pub fn assess(
        &self,
        profile: &Profile,
        policy: &[ReportEntry],
        env_detail: String,
    ) -> (Level, Guarantees, CompileReport) {
        let p = &self.probe;
        let network = profile.config().network;
        let landlock_full = p.landlock == "full";
        let guarantees = Guarantees {
            process_boundary: true,
            write_boundary: true,
            read_boundary: true,
            env_scrub: true,
            network_boundary: network != Access::Allow,
            address_network: false,
            resource_limits: p.limits.is_ok(),
            target_network: false,
        };
        let level = if landlock_full && p.seccomp { Level::Full } else { Level::Degraded };
        let mut r = CompileReport::default();
        r.set(ReportEntry::new(
            "process-boundary",
            Status::Enforced,
            "user, mount, pid, ipc, uts and cgroup namespaces; network namespace unless network is allowed",
        ));
        for e in policy.iter().filter(|e| e.feature != "runtime-closure") {
            r.set(e.clone());
        }
        r.set(ReportEntry::new("env-scrub", Status::Enforced, env_detail));
        let (network_extra, unix) =
            sandbox_bundle::unix_sockets_entry(network == Access::Allow, profile.config().unix_sockets, p.seccomp);
        r.set(if network == Access::Allow {
            ReportEntry::new("network-boundary", Status::Vacuous, "network is allowed")
        } else {
            let base = if p.seccomp {
                "private network namespace with only lo; vsock refused by seccomp"
            } else {
                "private network namespace with only lo"
            };
            ReportEntry::new(
                "network-boundary",
                Status::Enforced,
                network_extra.map_or_else(|| base.to_owned(), |extra| format!("{base}; {extra}")),
            )
        });
        r.set(unix);
        r.set(match p.loopback {
            _ if network == Access::Allow => ReportEntry::new("loopback", Status::Vacuous, "host network namespace"),
            Some(true) => ReportEntry::new("loopback", Status::Enforced, "lo is up in the private namespace"),
            _ => ReportEntry::new(
                "loopback",
                Status::Unenforced,
                format!(
                    "lo could not be raised ({}): localhost does not work inside",
                    p.loopback_error.as_deref().unwrap_or("unknown reason")
                ),
            ),
        });
        r.set(if network != Access::Allow {
            ReportEntry::new("abstract-unix", Status::Vacuous, "private network namespace")
        } else if p.landlock_abi >= 6 && landlock_full {
            ReportEntry::new("abstract-unix", Status::Enforced, "landlock scopes abstract unix sockets to the sandbox")
        } else {
            ReportEntry::new(
                "abstract-unix",
                Status::Unenforced,
                format!("host abstract unix sockets stay reachable: landlock abi {} < 6", p.landlock_abi),
            )
        });
        r.set(if landlock_full {
            ReportEntry::new(
                "landlock",
                Status::Enforced,
                format!("abi {}, every filesystem right of this abi handled", p.landlock_abi),
            )
        } else {
            ReportEntry::new(
                "landlock",
                Status::Unenforced,
                format!(
                    "ruleset {} (kernel abi {}): the mount view alone holds the boundaries",
                    p.landlock, p.landlock_abi
                ),
            )
        });
        r.set(if p.seccomp {
            ReportEntry::new("seccomp", Status::Enforced, "filter installed by the sandbox init (Seccomp: 2)")
        } else {
            ReportEntry::new("seccomp", Status::Unenforced, "the filter could not be installed")
        });
        r.set(match &p.limits {
            Ok(detail) => ReportEntry::new("resource-limits", Status::Enforced, detail.clone()),
            Err(why) => ReportEntry::new(
                "resource-limits",
                Status::Unenforced,
                format!("{why}; delegate a writable cgroup subtree and pass it as cgroup_parent"),
            ),
        });
        if let Some(c) = policy.iter().find(|e| e.feature == "runtime-closure") {
            r.set(c.clone());
        }
        (level, guarantees, r)
    }

    /// Compiles the spawn (for the report or to run it).
    pub fn compile(&self, profile: &Profile, input: &SpawnInput<'_>, id: &str) -> Result<Bundle, Error> {
        let ctx = SpawnContext {
            argv: input.argv.clone(),
            cwd: input.cwd.clone(),
            env: with_broad_dns(&input.env, input.grants.broad_port.is_some()),
            tty: input.tty,
            home_dir: input.home_dir.map(Path::to_path_buf),
            temp_dir: input.temp_dir.to_path_buf(),
            scratch_root: self.scratch_root.clone(),
            other_scratch_roots: crate::registry::masked_roots(),
            uid: self.uid,
            gid: self.gid,
            landlock: self.probe.landlock == "full",
            egress_route: false,
            launch: Launch::Embedded {
                cgroups_path: self.cgroup_path(id),
                pids_max: (self.uid == 0).then_some(self.pids_max),
                memory_max: self.memory_max.filter(|_| self.uid == 0),
            },
            grants: input.grants.clone(),
        };
        compile(profile, &ctx, &HostView::scan()).map_err(|e| match e {
            Error::InvalidArgument { detail } => Error::Runtime { detail: format!("bundle: {detail}") },
            other => other,
        })
    }

    /// Compiles the spawn and starts it with the given stdio: in the warm container of its shape
    /// when one waits (it then only needs the process), else through a fresh helper; either way
    /// a warm container for the next spawn of this shape is prepared meanwhile. The container
    /// may not run yet: [`LinuxBackend::wait_started`] waits for it.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &self,
        dl: &Deadline,
        profile: &Profile,
        input: &SpawnInput<'_>,
        stdin: OwnedFd,
        stdout: OwnedFd,
        stderr: OwnedFd,
        require: bool,
    ) -> Result<Launched, Error> {
        dl.check(&[])?;
        check_identities(profile)?;
        // Grant spawns (single-use shapes) and PTY spawns (the terminal is made by the runtime)
        // always get a fresh container; so does the probe.
        let warmable = require && !input.tty && input.grants == GrantDeltas::default();
        if !warmable {
            return self.launch_fresh(dl, profile, input, [stdin, stdout, stderr], require, false, None);
        }
        let t0 = sandbox_linux::protocol::monotonic_us();
        let id = self.next_id();
        let bundle = self.compile(profile, input, &id)?;
        let key = shape_key(&bundle)?;
        let waiting = self
            .warm
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .ready
            .get_mut(&key)
            .and_then(std::collections::VecDeque::pop_front);
        let stdio = [stdin, stdout, stderr];
        let launched = match waiting {
            Some(warm) => match self.go_warm(warm, &bundle, dl, &stdio) {
                Ok(mut launched) => {
                    launched.marks.insert(0, ("call", t0));
                    launched
                }
                Err(why) => {
                    tracing::debug!(reason = %why, "the warm container was not used; starting a fresh one");
                    self.launch_fresh(dl, profile, input, stdio, require, false, Some((id, bundle)))?
                }
            },
            None => self.launch_fresh(dl, profile, input, stdio, require, false, Some((id, bundle)))?,
        };
        self.prewarm(profile, input, &key);
        Ok(launched)
    }

    /// Hands a warm container its process (waiting for it to be ready, within the deadline and
    /// 10 s). Err: why the warm container was not used (it is torn down; start fresh instead).
    fn go_warm(
        &self,
        mut warm: Launched,
        bundle: &Bundle,
        dl: &Deadline,
        stdio: &[OwnedFd; 3],
    ) -> Result<Launched, WarmMiss> {
        let limit = Instant::now() + Duration::from_secs(10);
        let miss = |warm: &mut Launched, why: WarmMiss| {
            self.abandon(warm, &why.to_string());
            why
        };
        if let Some(request) = warm.take_request() {
            if warm.running.send_request(&request).is_err() {
                return Err(miss(&mut warm, WarmMiss::HelperGone));
            }
        }
        if !matches!(warm.phase, Phase::Ready) {
            let ready = wait_event(
                &mut warm.running,
                |_| if dl.check(&[]).is_err() || Instant::now() >= limit { Err(()) } else { Ok(Some(limit)) },
                |event| Some(matches!(event, Event::Ready)),
            );
            match ready {
                Ok(true) => warm.phase = Phase::Ready,
                Err(NoEvent::Stopped(()) | NoEvent::TimedOut) => return Err(miss(&mut warm, WarmMiss::NotReady)),
                Ok(false) | Err(NoEvent::Died | NoEvent::Helper(_) | NoEvent::Unread) => {
                    return Err(miss(&mut warm, WarmMiss::Failed));
                }
            }
        }
        let process = bundle.spec.process().as_ref().map(|p| sandbox_linux::protocol::GoProcess {
            args: p.args().clone().unwrap_or_default(),
            env: p.env().clone().unwrap_or_default(),
            cwd: p.cwd().display().to_string(),
        });
        let Some(process) = process else {
            return Err(miss(&mut warm, WarmMiss::NoProcess));
        };
        if !warm.running.helper_alive() {
            return Err(miss(&mut warm, WarmMiss::HelperGone));
        }
        if let Err(e) = warm.running.go(process, stdio) {
            return Err(miss(&mut warm, WarmMiss::Handover(e)));
        }
        warm.marks.push(("go-sent", sandbox_linux::protocol::monotonic_us()));
        // The first answer tells whether the helper took the process. One that died without
        // reading it started nothing, so a fresh container may run the process instead; any
        // other failure is the run's (the workload may have started).
        warm.phase = match warm.running.next_event(Some(limit)) {
            Ok(Event::Started { .. }) => {
                warm.marks.push(("started-event", sandbox_linux::protocol::monotonic_us()));
                Phase::Started
            }
            Ok(Event::Finished { outcome, measured, teardown }) => Phase::Finished((outcome, measured, teardown)),
            Err(WaitError::Unread) => return Err(miss(&mut warm, WarmMiss::DiedUnread)),
            Ok(Event::Ready) | Err(WaitError::Timeout | WaitError::Helper(_)) => Phase::Lost,
        };
        Ok(warm)
    }

    /// Keeps [`WARM_PER_SHAPE`] warm containers ready for the next spawns of `key`'s shape,
    /// unless this is the shape's first spawn, the set is settling, or [`MAX_WARM`] wait in
    /// all. Their placeholder process (`/bin/true`) never runs: an unused warm container is torn
    /// down without starting it.
    fn prewarm(&self, profile: &Profile, input: &SpawnInput<'_>, key: &str) {
        let mut warm = self.warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if warm.seen.insert(key.to_owned()) {
            return;
        }
        loop {
            let total: usize = warm.ready.values().map(std::collections::VecDeque::len).sum();
            let here = warm.ready.get(key).map_or(0, std::collections::VecDeque::len);
            if warm.settled || here >= WARM_PER_SHAPE {
                return;
            }
            if total >= MAX_WARM {
                // Shapes come and go (another set's scratch root masked or not, class 7): a
                // warm container of another shape makes room, unused (dropping its control
                // socket lets its worker tear it down).
                let other = warm.ready.iter_mut().find(|(k, q)| k.as_str() != key && !q.is_empty());
                let Some(evicted) = other.and_then(|(_, q)| q.pop_front()) else { return };
                drop(evicted);
                warm.ready.retain(|_, q| !q.is_empty());
                continue;
            }
            let null = || std::fs::File::open("/dev/null").map(OwnedFd::from);
            let Ok(stdio) = (|| Ok::<_, std::io::Error>([null()?, null()?, null()?]))() else { return };
            let shape = SpawnInput {
                tty: false,
                grants: GrantDeltas::default(),
                argv: vec![String::from("/bin/true")],
                cwd: input.cwd.clone(),
                env: input.env.clone(),
                home_dir: input.home_dir,
                temp_dir: input.temp_dir,
            };
            match self.launch_fresh(&Deadline::none(), profile, &shape, stdio, true, true, None) {
                Ok(launched) if launched.shape() == Some(key) => {
                    warm.ready.entry(key.to_owned()).or_default().push_back(launched);
                }
                Ok(mut other) => {
                    self.abandon(&mut other, "the warm container's shape differs");
                    return;
                }
                Err(e) => {
                    tracing::debug!("no warm container: {e}");
                    return;
                }
            }
        }
    }

    /// Lets the warm containers prepared meanwhile be built: their helpers get their requests
    /// once a spawn has ended, so the builds run while the caller uses its result.
    fn release_warm(&self) {
        let mut warm = self.warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for queue in warm.ready.values_mut() {
            queue.retain_mut(|w| match w.take_request() {
                Some(request) => w.running.send_request(&request).is_ok(),
                None => true,
            });
        }
    }

    /// Compiles and writes the spawn's bundle and starts a fresh helper with the given stdio
    /// (`warm`: a container that waits for its process).
    #[allow(clippy::too_many_arguments)]
    fn launch_fresh(
        &self,
        dl: &Deadline,
        profile: &Profile,
        input: &SpawnInput<'_>,
        [stdin, stdout, stderr]: [OwnedFd; 3],
        require: bool,
        warm: bool,
        compiled: Option<(String, Bundle)>,
    ) -> Result<Launched, Error> {
        dl.check(&[])?;
        if compiled.is_none() {
            // (A compiled bundle comes from `launch`, which has just checked.)
            check_identities(profile)?;
        }
        let t0 = sandbox_linux::protocol::monotonic_us();
        let (id, bundle) = match compiled {
            Some(c) => c,
            None => {
                let id = self.next_id();
                let bundle = self.compile(profile, input, &id)?;
                (id, bundle)
            }
        };
        let key = if warm { Some(shape_key(&bundle)?) } else { None };
        let t1 = sandbox_linux::protocol::monotonic_us();
        let dir = self.bundles.join(&id);
        let rootfs = self.skeleton(&bundle)?;
        write_bundle_on(&bundle, &dir, &rootfs)?;
        let t2 = sandbox_linux::protocol::monotonic_us();
        let private_net = !bundle.host_network;
        let request = Request {
            bundle: dir.clone(),
            id: id.clone(),
            state_root: self.state_root.clone(),
            rootless: self.uid != 0,
            loopback: private_net,
            require_loopback: require && private_net && self.probe.loopback == Some(true),
            require_landlock: require && self.probe.landlock == "full",
            require_seccomp: require && self.probe.seccomp,
            limits: self.limits(&id),
            require_limits: require && self.probe.limits.is_ok(),
            inotify: Some(self.inotify),
            tty: input.tty,
            warm,
        };
        // A warm container's helper gets its request later (`release_warm`): its build must not
        // compete for the CPU with the workload of the spawn that asked for it.
        let within = dl.instant().map_or(Duration::from_secs(10), |d| d.saturating_duration_since(Instant::now()));
        match self.zygote.spawn(&request, stdin, stdout, stderr, warm, within) {
            Ok(running) => Ok(Launched {
                running,
                id,
                dir,
                phase: match key {
                    Some(shape) => Phase::Pending { request: Box::new(request), shape },
                    None => Phase::Building,
                },
                marks: vec![
                    ("launch", t0),
                    ("compiled", t1),
                    ("written", t2),
                    ("helper-spawned", sandbox_linux::protocol::monotonic_us()),
                ],
            }),
            Err(e) => {
                let _ = fsutil::remove_tree(&dir);
                dl.check(&[])?;
                Err(Error::Runtime { detail: format!("starting the helper: {e}") })
            }
        }
    }

    /// A fresh container id.
    fn next_id(&self) -> String {
        format!("sbx-{}-{}", self.tag, self.counter.fetch_add(1, Ordering::SeqCst))
    }

    /// The prepared rootfs skeleton for `bundle`'s mount shape, made on first use.
    fn skeleton(&self, bundle: &Bundle) -> Result<PathBuf, Error> {
        let key = rootfs_key(bundle);
        let dir = self.skeletons.join(&key);
        let mut prepared = self.prepared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !prepared.contains(&key) {
            let _ = fsutil::remove_tree(&dir);
            std::fs::create_dir(&dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
            write_rootfs(bundle, &dir)?;
            prepared.insert(key);
        }
        Ok(dir.join("rootfs"))
    }

    /// Ends the zygote once every run is over, waiting for the workers still removing their
    /// containers' cgroups, state and bundles.
    pub fn settle(&self) {
        let waiting = {
            let mut warm = self.warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            warm.settled = true;
            std::mem::take(&mut warm.ready)
        };
        // Dropping a warm container's control socket lets its worker tear it down unused.
        drop(waiting);
        if !self.zygote.shutdown(Duration::from_secs(10)) {
            tracing::warn!("the helper zygote did not finish within 10 s; the set sweeps what is left");
        }
    }

    /// Waits until the container exists and runs; a container that could not be created (or a
    /// setup step that failed before start) is `Runtime`, with everything torn down.
    pub fn wait_started(&self, launched: &mut Launched, dl: &Deadline, closing: &AtomicBool) -> Result<(), Error> {
        match launched.phase {
            Phase::Started | Phase::Finished(_) => return Ok(()),
            Phase::Lost => {
                let detail = self.abandon(launched, "the warm container's helper failed after it got its process");
                return Err(Error::Runtime { detail });
            }
            Phase::Pending { .. } | Phase::Building | Phase::Ready => {}
        }
        /// What stops the wait before the container started.
        enum Halt {
            Closed,
            Deadline(Error),
        }
        let limit = Instant::now() + Duration::from_secs(60);
        let started = wait_event(
            &mut launched.running,
            |_| {
                if closing.load(Ordering::SeqCst) {
                    return Err(Halt::Closed);
                }
                dl.check(&[]).map_err(Halt::Deadline)?;
                Ok(Some(limit))
            },
            |event| match event {
                Event::Started { .. } => Some(Phase::Started),
                Event::Finished { outcome, measured, teardown } => Some(Phase::Finished((outcome, measured, teardown))),
                Event::Ready => None,
            },
        );
        let why = match started {
            Ok(phase) => {
                if matches!(phase, Phase::Started) {
                    launched.marks.push(("started-event", sandbox_linux::protocol::monotonic_us()));
                }
                launched.phase = phase;
                return Ok(());
            }
            Err(NoEvent::Stopped(Halt::Closed)) => {
                self.abandon(launched, "the set closed before the container started");
                return Err(Error::ExecutorClosed { partial: Vec::new() });
            }
            Err(NoEvent::Stopped(Halt::Deadline(e))) => {
                self.abandon(launched, "deadline before the container started");
                return Err(e);
            }
            Err(NoEvent::Died) => String::from("the helper died before the container started"),
            Err(NoEvent::TimedOut) => String::from("the container did not start within 60 s"),
            Err(NoEvent::Helper(e)) => e,
            Err(NoEvent::Unread) => String::from("the helper ended without reading its commands"),
        };
        Err(Error::Runtime { detail: self.abandon(launched, &why) })
    }

    /// Kills a helper that failed or hangs (its container dies with it: parent-death signal)
    /// and sweeps what it left. Returns the detail for the error.
    fn abandon(&self, launched: &mut Launched, why: &str) -> String {
        launched.running.kill_helper();
        let swept = sandbox_linux::sweep_container(
            self.layout,
            self.cgroup_path(&launched.id).as_deref(),
            Some(&self.state_root.join(&launched.id)),
        );
        let _ = fsutil::remove_tree(&launched.dir);
        let swept = swept.map_or_else(|e| format!("; sweep: {e}"), |()| String::from("; leftovers swept"));
        format!("helper failed: {why}{swept}")
    }

    /// Waits for the end of the spawn and its proven teardown. While `closing` is unset it
    /// waits as long as the workload runs; once a kill was sent (by the caller or because the
    /// set closes) it waits at most 5 s more, then abandons the helper.
    pub fn finish(
        &self,
        mut launched: Launched,
        closing: &AtomicBool,
        dl: Option<&Deadline>,
        mut killed: bool,
    ) -> Result<Finish, Error> {
        let mut kill_deadline = killed.then(|| Instant::now() + Duration::from_secs(5));
        let mut closed = false;
        let mut expired = None;
        // An end that arrived before the start was already read (the phase is not read again).
        let result = match std::mem::replace(&mut launched.phase, Phase::Started) {
            Phase::Finished(ended) => Ok(ended),
            _ => wait_event(
                &mut launched.running,
                |running| {
                    // The run's deadline still holds after its output ended (a workload may close
                    // its stdout and keep running).
                    let done = dl.and_then(|d| d.check(&[]).err());
                    if !killed && (closing.load(Ordering::SeqCst) || done.is_some()) {
                        let _ = running.signal(libc_sigkill());
                        killed = true;
                        closed = done.is_none();
                        expired = done;
                        kill_deadline = Some(Instant::now() + Duration::from_secs(5));
                    }
                    Ok::<_, std::convert::Infallible>(kill_deadline)
                },
                |event| match event {
                    Event::Finished { outcome, measured, teardown } => Some((outcome, measured, teardown)),
                    Event::Started { .. } | Event::Ready => None,
                },
            )
            .map_err(|e| match e {
                NoEvent::Died => String::from("the helper died before reporting the end"),
                NoEvent::TimedOut => String::from("the helper did not finish within 5 s of a kill"),
                NoEvent::Helper(e) => e,
                NoEvent::Unread => String::from("the helper ended without reading its commands"),
                NoEvent::Stopped(never) => match never {},
            }),
        };
        self.release_warm();
        let (outcome, measured, teardown) = match result {
            Ok(f) => f,
            Err(e) => {
                let detail = self.abandon(&mut launched, &e);
                return Err(Error::Runtime { detail });
            }
        };
        launched.marks.push(("finished-event", sandbox_linux::protocol::monotonic_us()));
        if !teardown || launched.running.pid.is_none() {
            // Otherwise the worker removes the bundle after its container.
            let _ = fsutil::remove_tree(&launched.dir);
        }
        launched.marks.push(("bundle-removed", sandbox_linux::protocol::monotonic_us()));
        if tracing::enabled!(tracing::Level::DEBUG) {
            // Where the spawn's time went: parent (P) and helper (H) steps on one clock.
            let mut all: Vec<(String, u64)> = launched.marks.iter().map(|(n, t)| (format!("P {n}"), *t)).collect();
            all.extend(measured.phases.iter().map(|(n, t)| (format!("H {n}"), *t)));
            all.sort_by_key(|p| p.1);
            let first = all.first().map_or(0, |p| p.1);
            let mut last = first;
            let steps: Vec<String> = all
                .iter()
                .map(|(n, t)| {
                    let step = format!("{n} +{}us", t.saturating_sub(last));
                    last = *t;
                    step
                })
                .collect();
            tracing::debug!(id = %launched.id, total_us = last.saturating_sub(first), steps = %steps.join(" | "), "spawn phases");
        }
        if !teardown {
            // Not proven by the helper: sweep the container's cgroup and state now.
            let swept = sandbox_linux::sweep_container(
                self.layout,
                self.cgroup_path(&launched.id).as_deref(),
                Some(&self.state_root.join(&launched.id)),
            );
            let swept = swept.map_or_else(|e| format!("; sweep: {e}"), |()| String::from("; leftovers swept"));
            return Err(Error::Runtime { detail: format!("teardown unproven: the container was not deleted{swept}") });
        }
        let status = match outcome {
            Outcome::Exited { code } => Ok(ExitStatus::Code(code)),
            Outcome::Signalled { signal } => Ok(ExitStatus::Signal(signal)),
            Outcome::Failed { detail } => Err(detail),
        };
        Ok(Finish { status, measured, closed, expired })
    }

    /// Runs one spawn to its end: output combined, stdin `/dev/null`. With `require` the
    /// probe's measurements become requirements (a spawn getting less fails).
    pub fn spawn(
        &self,
        dl: &Deadline,
        profile: &Profile,
        input: &SpawnInput<'_>,
        limit: Option<u64>,
        closing: &AtomicBool,
        require: bool,
    ) -> Result<(Output, Measured), Error> {
        let (out_r, out_w) = crate::output::pipe()?;
        let err_w = out_w.try_clone().map_err(|e| Error::io("pipe", e))?;
        let stdin: OwnedFd = std::fs::File::open("/dev/null").map_err(|e| Error::io("opening /dev/null", e))?.into();
        let mut launched = self.launch(dl, profile, input, stdin, out_w, err_w, require)?;
        // Bounded start-up first (deadline, close, 60 s): nothing starts after either fired.
        self.wait_started(&mut launched, dl, closing)?;
        let mut bytes = Vec::new();
        let stop = if launched.ended_early() {
            None
        } else {
            let mut alive = || launched.running.helper_alive();
            pump(&out_r, dl, limit, closing, &mut alive, &mut bytes)
        };
        if matches!(stop, Some(Stop::Lost)) {
            let detail = self.abandon(&mut launched, "the helper died during the run");
            return Err(Error::Runtime { detail });
        }
        if stop.is_some() {
            let _ = launched.running.signal(libc_sigkill());
            drain(&out_r, Duration::from_secs(5));
        }
        let finish = self.finish(launched, closing, Some(dl), stop.is_some())?;
        match stop {
            Some(Stop::Deadline(e)) => return Err(with_partial(e, bytes)),
            Some(Stop::Limit) => return Err(Error::OutputLimit { partial: bytes }),
            Some(Stop::Closed) => return Err(Error::ExecutorClosed { partial: bytes }),
            None if finish.closed => return Err(Error::ExecutorClosed { partial: bytes }),
            None if finish.expired.is_some() => {
                return Err(with_partial(finish.expired.unwrap_or(Error::DeadlineExceeded { partial: vec![] }), bytes));
            }
            Some(Stop::Lost) | None => {}
        }
        let status = finish.status.map_err(setup_failed)?;
        Ok((Output { bytes, status }, finish.measured))
    }
}

impl Drop for LinuxBackend {
    fn drop(&mut self) {
        // Warm containers first: their helpers end when their control sockets close, and the
        // zygote waits for its helpers.
        self.settle();
    }
}

/// A spawn whose helper runs.
#[derive(Debug)]
pub(crate) struct Launched {
    pub running: sandbox_linux::Running,
    id: String,
    dir: PathBuf,
    phase: Phase,
    marks: Vec<(&'static str, u64)>,
}

/// Where a launched spawn's container is.
#[derive(Debug)]
enum Phase {
    /// A warm container whose helper waits for its request before building (sent once a spawn
    /// has ended, or at hand-over), and the container's shape (see `shape_key`).
    Pending { request: Box<Request>, shape: String },
    /// The helper has its request and builds the container: a warm one reports `Ready`, a
    /// fresh one `Started`.
    Building,
    /// A warm container reported `Ready`: built, waiting for its process.
    Ready,
    /// `Started` was read: the container runs its process.
    Started,
    /// A `Finished` that arrived before `Started`: the container never ran.
    Finished(Ended),
    /// The warm hand-over lost the helper after the process was sent.
    Lost,
}

/// A helper's `Finished`: the outcome, what it measured, and whether the teardown was proven.
type Ended = (Outcome, Measured, bool);

impl Launched {
    /// The helper reported the end before the container started (it was never created).
    pub fn ended_early(&self) -> bool {
        matches!(self.phase, Phase::Finished(_))
    }

    /// A pending warm container's shape.
    fn shape(&self) -> Option<&str> {
        match &self.phase {
            Phase::Pending { shape, .. } => Some(shape),
            _ => None,
        }
    }

    /// A warm container's request, not yet sent: taken once (the helper then builds).
    fn take_request(&mut self) -> Option<Box<Request>> {
        if !matches!(self.phase, Phase::Pending { .. }) {
            return None;
        }
        match std::mem::replace(&mut self.phase, Phase::Building) {
            Phase::Pending { request, .. } => Some(request),
            _ => None,
        }
    }
}

/// Why a warm container was not used: it is torn down, and the spawn starts fresh.
#[derive(Debug)]
enum WarmMiss {
    /// Its helper was gone before it got its request or its process.
    HelperGone,
    /// It was not ready within the deadline and 10 s.
    NotReady,
    /// It failed before it was used.
    Failed,
    /// The compiled spawn has no process.
    NoProcess,
    /// Handing over the process failed.
    Handover(std::io::Error),
    /// Its helper died before it read its process (which therefore never started).
    DiedUnread,
}

impl std::fmt::Display for WarmMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WarmMiss::HelperGone => f.write_str("the warm container's helper is gone"),
            WarmMiss::NotReady => f.write_str("the warm container was not ready in time"),
            WarmMiss::Failed => f.write_str("the warm container failed before it was used"),
            WarmMiss::NoProcess => f.write_str("no process"),
            WarmMiss::Handover(e) => write!(f, "handing over the process: {e}"),
            WarmMiss::DiedUnread => f.write_str("the warm container's helper died before it read its process"),
        }
    }
}

impl std::error::Error for WarmMiss {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WarmMiss::Handover(e) => Some(e),
            _ => None,
        }
    }
}

/// Why [`wait_event`] ended without an event its caller took.
#[derive(Debug)]
enum NoEvent<S> {
    /// The caller's check stopped the wait.
    Stopped(S),
    /// The wait's limit passed.
    TimedOut,
    /// The helper died without the event.
    Died,
    /// The helper reported an error.
    Helper(String),
    /// The helper ended without reading its commands.
    Unread,
}

/// Reads a helper's events until `take` takes one (returns `Some`); events it does not take are
/// skipped. Before each read of at most 100 ms, `check` may stop the wait, and gives its limit
/// (which may move). A dead helper's socket stays open while a half-made container holds a copy
/// of it, so the process itself is watched: a helper found dead gets 50 ms to deliver an event
/// it wrote just before it exited, and one `take` does not take then means it died.
fn wait_event<T, S>(
    running: &mut sandbox_linux::Running,
    mut check: impl FnMut(&mut sandbox_linux::Running) -> Result<Option<Instant>, S>,
    mut take: impl FnMut(Event) -> Option<T>,
) -> Result<T, NoEvent<S>> {
    loop {
        let limit = check(running).map_err(NoEvent::Stopped)?;
        let slice = Instant::now() + Duration::from_millis(100);
        match running.next_event(Some(limit.map_or(slice, |l| slice.min(l)))) {
            Ok(event) => {
                if let Some(taken) = take(event) {
                    return Ok(taken);
                }
            }
            Err(WaitError::Timeout) if !running.helper_alive() => {
                return match running.next_event(Some(Instant::now() + Duration::from_millis(50))) {
                    Ok(event) => take(event).ok_or(NoEvent::Died),
                    Err(_) => Err(NoEvent::Died),
                };
            }
            Err(WaitError::Timeout) if limit.is_none_or(|l| Instant::now() < l) => {}
            Err(WaitError::Timeout) => return Err(NoEvent::TimedOut),
            Err(WaitError::Helper(e)) => return Err(NoEvent::Helper(e)),
            Err(WaitError::Unread) => return Err(NoEvent::Unread),
        }
    }
}

/// The end of a spawn.
#[derive(Debug)]
pub(crate) struct Finish {
    /// The status, or the setup failure's detail.
    pub status: Result<ExitStatus, String>,
    /// What the helper measured.
    pub measured: Measured,
    /// The set's close killed it.
    pub closed: bool,
    /// The deadline killed it after its output had ended.
    pub expired: Option<Error>,
}

/// Issue 12, class 1: before a container is built, the workspace, every root and every pinned
/// ancestor must still be the directory the profile recorded, reached without any symlink. A
/// difference fails the spawn (`InvalidProfile`: the profile no longer describes the disk; make
/// a new one if the change was intended), never widens it. The init checks the mounts again
/// (`sandbox.identities`), which closes the window between this check and the runtime's binds.
pub(crate) fn check_identities(profile: &Profile) -> Result<(), Error> {
    use sandbox_bundle::IdentityRole;
    for i in profile.identities() {
        let what = match i.role {
            IdentityRole::Workspace => "workspace_root",
            IdentityRole::Root => "additional_roots",
            IdentityRole::Pin => "additional_roots (an ancestor pinned for a nested root)",
        };
        let now = sandbox_linux::TargetHandle::open(&i.path).and_then(|h| h.identity());
        let detail = match now {
            Ok(id) if id == (i.dev, i.ino) => continue,
            Ok((dev, ino)) => format!(
                "{what}: {} is not the directory the profile was made with (device {dev} inode {ino}, expected \
                 device {} inode {}); make a new profile if the change is intended",
                i.path.display(),
                i.dev,
                i.ino
            ),
            Err(e) => format!(
                "{what}: {} cannot be reached as the profile recorded it (opened without following symlinks): {e}",
                i.path.display()
            ),
        };
        return Err(Error::InvalidProfile { detail });
    }
    Ok(())
}

/// The error for a spawn whose container failed before exec: a grant target that the init
/// found swapped after it was verified is `GrantTargetChanged`, anything else `Runtime`.
pub(crate) fn setup_failed(detail: String) -> Error {
    if detail.starts_with("helper: identities: grant target") {
        Error::GrantTargetChanged { detail }
    } else {
        Error::Runtime { detail }
    }
}

fn libc_sigkill() -> i32 {
    nix::sys::signal::Signal::SIGKILL as i32
}

fn with_partial(e: Error, partial: Vec<u8>) -> Error {
    match e {
        Error::Cancelled { .. } => Error::Cancelled { partial },
        Error::DeadlineExceeded { .. } => Error::DeadlineExceeded { partial },
        other => other,
    }
}

/// The cgroup parent a set with `options` uses: the configured one, else `/sandbox` as root,
/// else none (rootless without a delegated subtree).
pub(crate) fn configured_cgroup_parent(options: &ExecutorSetOptions) -> Option<String> {
    match (&options.cgroup_parent, nix::unistd::getuid().as_raw()) {
        (Some(p), _) => Some(p.to_string_lossy().into_owned()),
        (None, 0) => Some(String::from("/sandbox")),
        (None, _) => None,
    }
}

/// Sweeps what a set left on Linux: the containers of its state directory, before the set
/// directory itself is removed. Nothing of the set directory decides what is killed (issue 12,
/// class 6): the cgroup parent is `parent`, the sweeping set's own configured one (a dead set
/// made under another parent is not killed in, only removed), entries are used only when their
/// names have the form of this library's container ids, and `sweep_container` kills only in
/// cgroups it verifies (cgroup filesystem, this uid, no symlink, normal path).
pub(crate) fn sweep_set_containers(set_dir: &Path, parent: Option<&str>) {
    let layout = CgroupLayout::detect();
    let state = set_dir.join("state");
    if !std::fs::symlink_metadata(&state).is_ok_and(|m| m.is_dir()) {
        return;
    }
    for entry in std::fs::read_dir(&state).into_iter().flatten().flatten() {
        let Some(id) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if !sandbox_linux::is_container_id(&id) {
            tracing::warn!(set = %set_dir.display(), ?id, "sweep: not a container id of this library, ignored");
            continue;
        }
        let cgroup = parent.map(|p| format!("{}/{id}", p.trim_end_matches('/')));
        // The state directory goes with the set directory (removed by descriptor, never
        // following a symlink): nothing is removed through a path here.
        if let Err(e) = sandbox_linux::sweep_container(layout, cgroup.as_deref(), None) {
            tracing::warn!(set = %set_dir.display(), %id, "sweep: {e}");
        }
    }
}

/// A spawn's shape: its bundle without what differs between spawns of one executor (the
/// process's argv, environment and working directory, and the container's own cgroup). Spawns
/// of one shape can run in one another's warm containers.
fn shape_key(bundle: &Bundle) -> Result<String, Error> {
    use std::hash::Hasher;
    /// Feeds serialized bytes straight into the hasher (no JSON value or string is built).
    struct HashWriter(std::collections::hash_map::DefaultHasher);
    impl std::io::Write for HashWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.write(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut spec = bundle.spec.clone();
    let mut writer = HashWriter(std::collections::hash_map::DefaultHasher::new());
    // Hash maps serialize in an order of their own: these go in sorted. The others the
    // compiler never sets; one there would only make equal shapes differ (no warm reuse).
    fn sorted(
        map: Option<&std::collections::HashMap<String, String>>,
    ) -> Option<std::collections::BTreeMap<&String, &String>> {
        map.map(|m| m.iter().collect())
    }
    let maps = (
        sorted(spec.annotations().as_ref()),
        spec.linux().as_ref().and_then(|l| sorted(l.sysctl().as_ref())),
        spec.linux().as_ref().and_then(|l| l.resources().as_ref()).and_then(|r| sorted(r.unified().as_ref())),
    );
    serde_json::to_writer(&mut writer, &maps).map_err(|e| Error::Runtime { detail: format!("spec: {e}") })?;
    spec.set_annotations(None);
    if let Some(mut process) = spec.process().clone() {
        process.set_args(None);
        process.set_env(None);
        process.set_cwd(PathBuf::new());
        spec.set_process(Some(process));
    }
    if let Some(mut linux) = spec.linux().clone() {
        linux.set_cgroups_path(None);
        linux.set_sysctl(None);
        if let Some(mut resources) = linux.resources().clone() {
            resources.set_unified(None);
            linux.set_resources(Some(resources));
        }
        spec.set_linux(Some(linux));
    }
    serde_json::to_writer(&mut writer, &spec).map_err(|e| Error::Runtime { detail: format!("spec: {e}") })?;
    Ok(format!("{:016x}", writer.0.finish()))
}

/// inotify instances a run may hold (issue 12, class 10). The host allows each uid 128 by
/// default (`fs.inotify.max_user_instances`), counted across every user namespace of that uid:
/// a watcher or dev server uses one to a few, so 16 leave room for several in one run, and a set
/// of up to 7 concurrent runs cannot take all of the uid's 128.
pub(crate) const INOTIFY_INSTANCES: u64 = 16;

/// The run's inotify bound: [`INOTIFY_INSTANCES`] instances, and a quarter of the host's
/// per-uid watches (`fs.inotify.max_user_watches`; at least 1024, 8192 when unreadable), enough
/// to watch a large tree while leaving most for the host.
fn inotify_bound() -> (u64, u64) {
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

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    fn backend(limits: Result<String, String>, landlock: &str, seccomp: bool) -> LinuxBackend {
        LinuxBackend {
            state_root: PathBuf::from("/nonexistent/state"),
            bundles: PathBuf::from("/nonexistent/bundles"),
            scratch_root: PathBuf::from("/nonexistent"),
            uid: 1000,
            gid: 1000,
            layout: CgroupLayout::V2,
            cgroup_parent: None,
            pids_max: 4096,
            memory_max: None,
            cpu_weight: crate::options::DEFAULT_CPU_WEIGHT,
            cpu_max_millicpus: None,
            own_parent: false,
            inotify: (16, 8192),
            tag: String::from("t"),
            counter: AtomicU64::new(0),
            zygote: sandbox_linux::Zygote::new(),
            skeletons: PathBuf::from("/nonexistent/rootfs"),
            prepared: std::sync::Mutex::default(),
            warm: std::sync::Mutex::default(),
            probe: Probe {
                landlock: landlock.to_owned(),
                landlock_abi: if landlock == "full" { 7 } else { 0 },
                seccomp,
                loopback: Some(true),
                loopback_error: None,
                limits,
            },
        }
    }

    fn profile() -> Profile {
        Profile::new(sandbox_bundle::ProfileConfig {
            workspace_root: PathBuf::from("/"),
            workspace_read: Access::Allow,
            command: Access::Allow,
            ..sandbox_bundle::ProfileConfig::default()
        })
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_shape_key_ignores_the_process_and_cgroup_and_sees_everything_else() {
        let ctx = |argv: &str, cwd: &str, id: &str| sandbox_bundle::SpawnContext {
            argv: vec![argv.to_owned()],
            cwd: PathBuf::from(cwd),
            env: vec![(String::from("X"), argv.to_owned())],
            tty: false,
            home_dir: None,
            temp_dir: PathBuf::from("/nonexistent/tmp"),
            scratch_root: PathBuf::from("/nonexistent"),
            other_scratch_roots: Vec::new(),
            uid: 1000,
            gid: 1000,
            landlock: true,
            egress_route: false,
            launch: sandbox_bundle::Launch::Embedded {
                cgroups_path: Some(format!("/sandbox/{id}")),
                pids_max: Some(128),
                memory_max: None,
            },
            grants: GrantDeltas::default(),
        };
        let host = HostView::scan();
        let key = |p: &Profile, c: &sandbox_bundle::SpawnContext| {
            shape_key(&compile(p, c, &host).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"))
        };
        let first = key(&profile(), &ctx("/bin/true", "/", "a"));
        // Each compile builds its annotation maps anew (a new hash order): the key holds.
        for i in 0..20 {
            assert_eq!(key(&profile(), &ctx(&format!("/bin/echo{i}"), "/usr", &format!("b{i}"))), first);
        }
        let writable = Profile::new(sandbox_bundle::ProfileConfig {
            workspace_root: PathBuf::from("/"),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            command: Access::Allow,
            ..sandbox_bundle::ProfileConfig::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(key(&writable, &ctx("/bin/true", "/", "a")), first);
        let mut tty = ctx("/bin/true", "/", "a");
        tty.tty = true;
        assert_ne!(key(&profile(), &tty), first);
    }

    #[test]
    fn limits_that_did_not_read_back_are_not_claimed_and_the_report_names_the_fix() {
        let b = backend(Err(String::from("no cgroup parent")), "full", true);
        let (level, g, report) = b.assess(&profile(), &[], String::from("env"));
        assert!(!g.resource_limits);
        assert_eq!(level, Level::Full, "limits never change the level");
        let entry = report.get("resource-limits").unwrap_or_else(|| panic!("no entry"));
        assert_eq!(entry.status, Status::Unenforced);
        assert!(entry.detail.contains("cgroup_parent"), "{}", entry.detail);
        let b = backend(Ok(String::from("pids.max 4096")), "full", true);
        assert!(b.assess(&profile(), &[], String::from("env")).1.resource_limits);
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
            let b = backend(Ok(String::from("x")), "full", seccomp);
            let (_, g, report) = b.assess(&config(unix, network), &[], String::from("env"));
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
    fn a_missing_layer_degrades_the_level_and_says_so() {
        for (landlock, seccomp, feature) in [("none", true, "landlock"), ("full", false, "seccomp")] {
            let b = backend(Ok(String::from("x")), landlock, seccomp);
            let (level, g, report) = b.assess(&profile(), &[], String::from("env"));
            assert_eq!(level, Level::Degraded);
            assert!(g.read_boundary && g.write_boundary, "the mount view still holds");
            assert_eq!(report.get(feature).map(|e| e.status), Some(Status::Unenforced));
        }
    }
}
