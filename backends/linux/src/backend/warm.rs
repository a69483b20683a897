//! The warm pool: containers built ahead per spawn shape, waiting for a process.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use sandbox_bundle::{Bundle, Error, GrantDeltas, Profile};

use crate::WaitError;
use crate::protocol::{Event, GoProcess, monotonic_us};

use super::spawn::{Launched, NoEvent, Phase, wait_event};
use super::{Deadline, LinuxBackend, NoDeadline, SpawnInput};

/// The warm containers of a set, and whether the set has settled (no more are made).
#[derive(Debug, Default)]
pub(super) struct Warm {
    ready: HashMap<String, std::collections::VecDeque<Launched>>,
    /// Shapes spawned at least once: only a shape seen before gets a warm container, so a
    /// one-shot set (the CLI) never builds one it would not use.
    seen: std::collections::HashSet<String>,
    settled: bool,
    /// Per shape, the runs going on in containers that may be kept (issue 16): each comes back
    /// to the queue unless it is killed or fails, so it counts as a warm container to come.
    in_flight: HashMap<String, std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

/// A run in a container that may be kept, counted while it lasts (see `Warm::in_flight`).
#[derive(Debug)]
pub(super) struct InFlight(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// At most this many warm containers wait at once in a set.
const MAX_WARM: usize = 8;

/// Warm containers kept per spawn shape: two, so that calls fired back to back find one ready
/// while the next is still being built.
const WARM_PER_SHAPE: usize = 2;

/// Warm containers built ahead per spawn shape, counting the runs in flight that may bring
/// theirs back (issue 16): one. A shape's kept container serves its calls one after another;
/// a second call at the same time builds one for itself, which is then kept as well.
const PREWARM_PER_SHAPE: usize = 1;

impl LinuxBackend {
    /// Counts a run of `key`'s shape that has taken a warm container (and may bring it back).
    pub(super) fn in_flight(&self, key: &str) -> InFlight {
        let mut warm = self.warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = std::sync::Arc::clone(warm.in_flight.entry(key.to_owned()).or_default());
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        InFlight(count)
    }

    /// Lets a warm container go unused: its worker tears down what it built, and the bundle of
    /// one never built (its request not sent yet) is removed here.
    fn discard(&self, mut launched: Launched) {
        if launched.take_request().is_some() {
            let _ = (self.remove_tree)(&launched.dir);
        }
        drop(launched);
    }

    /// A warm container of `key`'s shape, if one waits.
    pub(super) fn take_warm(&self, key: &str) -> Option<Launched> {
        let mut warm = self.warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        warm.ready.get_mut(key).and_then(std::collections::VecDeque::pop_front)
    }

    /// Hands a warm container its process (waiting for it to be ready, within the deadline and
    /// 10 s). Err: why the warm container was not used (it is torn down; start fresh instead).
    pub(super) fn go_warm(
        &self,
        mut warm: Launched,
        bundle: &Bundle,
        dl: &dyn Deadline,
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
                |_| if dl.check().is_err() || Instant::now() >= limit { Err(()) } else { Ok(Some(limit)) },
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
        let process = bundle.spec.process().as_ref().map(|p| GoProcess {
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
        warm.marks.push(("go-sent", monotonic_us()));
        // The first answer tells whether the helper took the process. One that died without
        // reading it started nothing, so a fresh container may run the process instead; any
        // other failure is the run's (the workload may have started).
        warm.phase = match warm.running.next_event(Some(limit)) {
            Ok(Event::Started { .. }) => {
                warm.marks.push(("started-event", monotonic_us()));
                Phase::Started
            }
            Ok(Event::Finished { outcome, measured, teardown }) => Phase::Finished((outcome, measured, teardown)),
            Err(WaitError::Unread) => return Err(miss(&mut warm, WarmMiss::DiedUnread)),
            Ok(Event::Ready | Event::Kept { .. }) | Err(WaitError::Timeout | WaitError::Helper(_)) => Phase::Lost,
        };
        Ok(warm)
    }

    /// Keeps [`PREWARM_PER_SHAPE`] warm containers ready for the next spawns of `key`'s shape,
    /// unless this is the shape's first spawn, the set is settling, or [`MAX_WARM`] wait in
    /// all. Each is built from `bundle`, the spawn of that shape just compiled (see
    /// [`warm_bundle`]): a later spawn compiles and scans again and takes a warm container only
    /// if its own bundle has the same shape. Their placeholder process (`/bin/true`) never
    /// runs: an unused warm container is torn down without starting it.
    pub(super) fn prewarm(&self, profile: &Profile, input: &SpawnInput<'_>, key: &str, bundle: &Bundle) {
        let mut warm = self.warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if warm.seen.insert(key.to_owned()) {
            return;
        }
        loop {
            let total: usize = warm.ready.values().map(std::collections::VecDeque::len).sum();
            let coming = warm.in_flight.get(key).map_or(0, |n| n.load(std::sync::atomic::Ordering::SeqCst));
            let here = warm.ready.get(key).map_or(0, std::collections::VecDeque::len) + coming;
            if warm.settled || here >= PREWARM_PER_SHAPE {
                return;
            }
            if total >= MAX_WARM {
                // Shapes come and go (another set's scratch root masked or not, class 7): a
                // warm container of another shape makes room, unused (dropping its control
                // socket lets its worker tear it down).
                let other = warm.ready.iter_mut().find(|(k, q)| k.as_str() != key && !q.is_empty());
                let Some(evicted) = other.and_then(|(_, q)| q.pop_front()) else { return };
                self.discard(evicted);
                warm.ready.retain(|_, q| !q.is_empty());
                continue;
            }
            match self.warm_container(&NoDeadline, profile, input, key, bundle) {
                Ok(launched) => {
                    warm.ready.entry(key.to_owned()).or_default().push_back(launched);
                }
                Err(e) => {
                    tracing::debug!("no warm container: {e}");
                    return;
                }
            }
        }
    }

    /// Takes back a container whose run is over and which its helper kept (issue 16): it goes
    /// first in its shape's queue (it reports `Ready` once its `/tmp` and `/dev/shm` are
    /// emptied); a queue past [`WARM_PER_SHAPE`] loses its newest, usually a build not yet
    /// started. Dropped (torn down by its helper) once the set settles.
    pub(super) fn keep(&self, mut launched: Launched) {
        let Some(key) = launched.key.clone() else { return };
        launched.running.end_run();
        launched.phase = Phase::Building;
        launched.marks.clear();
        launched.in_flight = None;
        let mut surplus = Vec::new();
        {
            let mut warm = self.warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if warm.settled {
                return;
            }
            let queue = warm.ready.entry(key.clone()).or_default();
            queue.push_front(launched);
            while queue.len() > WARM_PER_SHAPE {
                surplus.extend(queue.pop_back());
            }
            // The set's bound holds too: other shapes make room, their newest first.
            while warm.ready.values().map(std::collections::VecDeque::len).sum::<usize>() > MAX_WARM {
                let other = warm.ready.iter_mut().find(|(k, q)| **k != key && !q.is_empty());
                let Some((_, queue)) = other else { break };
                surplus.extend(queue.pop_back());
            }
            warm.ready.retain(|_, q| !q.is_empty());
        }
        for launched in surplus {
            self.discard(launched);
        }
    }

    /// A warm container of `key`'s shape built from `bundle` (see [`warm_bundle`]), its helper
    /// started and waiting for its request.
    pub(super) fn warm_container(
        &self,
        dl: &dyn Deadline,
        profile: &Profile,
        input: &SpawnInput<'_>,
        key: &str,
        bundle: &Bundle,
    ) -> Result<Launched, Error> {
        let null = || std::fs::File::open("/dev/null").map(OwnedFd::from);
        let stdio = (|| Ok::<_, std::io::Error>([null()?, null()?, null()?]))()
            .map_err(|e| Error::io("opening /dev/null", e))?;
        let shape = SpawnInput {
            tty: false,
            grants: GrantDeltas::default(),
            argv: vec![String::from(PLACEHOLDER)],
            cwd: input.cwd.clone(),
            env: Vec::new(),
            home_dir: input.home_dir,
            temp_dir: input.temp_dir,
        };
        let id = self.next_id();
        let compiled = warm_bundle(bundle, &self.runtime_cgroup_path(&id));
        let mut launched = self.launch_fresh(dl, profile, &shape, stdio, true, true, Some((id, compiled)))?;
        if launched.shape() != Some(key) {
            return Err(self.abandon(&mut launched, "the warm container's shape differs"));
        }
        Ok(launched)
    }

    /// Lets the warm containers prepared meanwhile be built: their helpers get their requests
    /// once a spawn has ended, so the builds run while the caller uses its result.
    pub(super) fn release_warm(&self) {
        let mut warm = self.warm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for queue in warm.ready.values_mut() {
            queue.retain_mut(|w| match w.take_request() {
                Some(request) => w.running.send_request(&request).is_ok(),
                None => true,
            });
        }
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
        // No thread of ours outlives the set (another set's next cold spawn starts it again).
        crate::cgroups::stop_keeping();
    }
}

/// Why a warm container was not used: it is torn down, and the spawn starts fresh.
#[derive(Debug)]
pub(super) enum WarmMiss {
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

/// The process a warm container is built with (it never runs: `go` brings the real one).
const PLACEHOLDER: &str = "/bin/true";

/// The bundle of a warm container for `bundle`'s shape, with `cgroups_path` its own: `bundle`
/// with only what [`shape_key`] leaves out replaced. The process is the placeholder, with no
/// environment (not the spawn's: its egress-proxy credential, issue 17, and any other secret of
/// a finished run have no business in another bundle) and the spawn's working directory.
///
/// Its init keeps `CAP_SYS_ADMIN` and `CAP_SETPCAP` of the container's user namespace, and no
/// other capability: a kept container's run gets an IPC namespace of its own (issue 16), and
/// every run's child drops both, bounding set included, before the workload exists
/// (`executor.rs`). The workload never holds a capability, as in a fresh container.
fn warm_bundle(bundle: &Bundle, cgroups_path: &str) -> Bundle {
    use libcontainer::oci_spec::runtime::{Capability, LinuxCapabilities};
    let mut warm = bundle.clone();
    if let Some(mut process) = warm.spec.process().clone() {
        process.set_args(Some(vec![String::from(PLACEHOLDER)]));
        process.set_env(Some(Vec::new()));
        let kept: std::collections::HashSet<Capability> = [Capability::SysAdmin, Capability::Setpcap].into();
        let mut caps = process.capabilities().clone().unwrap_or_else(LinuxCapabilities::default);
        caps.set_bounding(Some(kept.clone()));
        caps.set_effective(Some(kept.clone()));
        caps.set_permitted(Some(kept));
        process.set_capabilities(Some(caps));
        warm.spec.set_process(Some(process));
    }
    if let Some(mut linux) = warm.spec.linux().clone() {
        linux.set_cgroups_path(Some(PathBuf::from(cgroups_path)));
        warm.spec.set_linux(Some(linux));
    }
    warm
}

/// A spawn's shape: its bundle without what differs between spawns of one executor (the
/// process's argv, environment and working directory, and the container's own cgroup). Spawns
/// of one shape can run in one another's warm containers.
pub(super) fn shape_key(bundle: &Bundle) -> Result<String, Error> {
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
    serde_json::to_writer(&mut writer, &maps).map_err(|e| Error::runtime_with("spec", e))?;
    spec.set_annotations(None);
    if let Some(mut process) = spec.process().clone() {
        process.set_args(None);
        process.set_env(None);
        process.set_cwd(PathBuf::new());
        // A warm container's init keeps two capabilities its runs drop (`warm_bundle`).
        process.set_capabilities(None);
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
    serde_json::to_writer(&mut writer, &spec).map_err(|e| Error::runtime_with("spec", e))?;
    Ok(format!("{:016x}", writer.0.finish()))
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use sandbox_bundle::{Access, HostView, compile};

    use super::*;

    /// A spawn of `argv` in `cwd` whose container is `id`, with `env`.
    fn spawn(argv: &str, cwd: &str, id: &str, env: &[(&str, &str)]) -> sandbox_bundle::SpawnContext {
        sandbox_bundle::SpawnContext {
            argv: vec![argv.to_owned()],
            cwd: PathBuf::from(cwd),
            env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
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
                nproc: None,
            },
            grants: GrantDeltas::default(),
            protected: Default::default(),
        }
    }

    #[test]
    fn the_shape_key_ignores_the_process_and_cgroup_and_sees_everything_else() {
        let ctx = |argv: &str, cwd: &str, id: &str| spawn(argv, cwd, id, &[("X", argv)]);
        let host = HostView::scan();
        let key = |p: &Profile, c: &sandbox_bundle::SpawnContext| {
            shape_key(&compile(p, c, &host).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"))
        };
        let first = key(&super::super::test_profile(), &ctx("/bin/true", "/", "a"));
        // Each compile builds its annotation maps anew (a new hash order): the key holds.
        for i in 0..20 {
            assert_eq!(
                key(&super::super::test_profile(), &ctx(&format!("/bin/echo{i}"), "/usr", &format!("b{i}"))),
                first
            );
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
        assert_ne!(key(&super::super::test_profile(), &tty), first);
    }

    #[test]
    fn a_warm_bundle_has_the_spawns_shape_its_own_cgroup_and_none_of_its_process() {
        // What the scrub passes of the spawn's environment (PATH here) stays the spawn's.
        let env = [("PATH", "/opt/secret-1/bin:/usr/bin:/bin")];
        let bundle = compile(&super::super::test_profile(), &spawn("/bin/echo", "/usr", "a", &env), &HostView::scan())
            .unwrap_or_else(|e| panic!("{e}"));
        let warm = warm_bundle(&bundle, "/sandbox/b");
        let key = |b: &Bundle| shape_key(b).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(key(&warm), key(&bundle));
        let process = warm.spec.process().clone().unwrap_or_else(|| panic!("no process"));
        assert_eq!(process.args().clone(), Some(vec![String::from(PLACEHOLDER)]));
        assert_eq!(process.env().clone(), Some(Vec::new()), "nothing of the spawn's environment");
        assert_eq!(process.cwd(), &PathBuf::from("/usr"));
        let cgroups = |b: &Bundle| b.spec.linux().as_ref().and_then(|l| l.cgroups_path().clone());
        assert_eq!(cgroups(&warm), Some(PathBuf::from("/sandbox/b")));
        assert_eq!(cgroups(&bundle), Some(PathBuf::from("/sandbox/a")), "the spawn's own bundle is untouched");
        // Everything else is the spawn's: the same config.json but for the process and cgroup.
        let json = |b: &Bundle| {
            let mut spec = b.spec.clone();
            spec.set_process(None);
            if let Some(mut linux) = spec.linux().clone() {
                linux.set_cgroups_path(None);
                spec.set_linux(Some(linux));
            }
            serde_json::to_value(&spec).unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(json(&warm), json(&bundle));
        let written = |b: &Bundle| serde_json::to_string(&b.spec).unwrap_or_else(|e| panic!("{e}"));
        assert!(written(&bundle).contains("secret-1"));
        assert!(!written(&warm).contains("secret-1"), "{}", written(&warm));
    }
}
