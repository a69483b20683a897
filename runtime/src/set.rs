//! `ExecutorSet` and `Executor` (CONTRACT.md §9–§11): per-key executors with their own HOME,
//! TMPDIR and environment snapshot, synchronous runs, and close.

// The Linux backend uses every item here; other targets compile a subset.
#![cfg_attr(not(target_os = "linux"), allow(unused))]

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use sandbox_bundle::{
    Access, CompileReport, Error, GrantDeltas, Guarantees, Home, Isolation, Level, Profile, ScrubFlags,
    check_invariants, scrub,
};

use crate::grants::{self, Class, GrantRequest, GrantState, Payload, is_safe_text};
use crate::output::Output;
use crate::process::{
    LifetimeContainment, Process, ProcessAccess, ProcessAccessKind, ProcessOptions, ProcessReader, ProcessResult,
    ProcessStdin,
};
use crate::{Deadline, ExecutorSetOptions, direct, fsutil};

#[cfg(target_os = "linux")]
use crate::linux::{LinuxBackend, SpawnInput};

/// The backend a set selected, once, for every key.
#[derive(Debug)]
enum Backend {
    /// An acknowledged-unconfined profile: direct spawns on the host.
    Direct,
    /// Linux micro-containers.
    #[cfg(target_os = "linux")]
    Linux(Box<LinuxBackend>),
    /// macOS Seatbelt (`sandbox-exec`).
    #[cfg(target_os = "macos")]
    Seatbelt(crate::macos::MacBackend),
}

#[derive(Debug, Default)]
struct State {
    closed: bool,
    close_done: Option<Result<(), Error>>,
    executors: HashMap<String, Arc<Executor>>,
    building: Vec<String>,
    active: usize,
}

#[derive(Debug)]
struct SetInner {
    profile: Profile,
    options: ExecutorSetOptions,
    dir: PathBuf,
    backend: Backend,
    state: Mutex<State>,
    changed: Condvar,
    closing: AtomicBool,
    /// Held for the set's life: a sweep by a later set skips a locked directory.
    _lock: Option<nix::fcntl::Flock<std::fs::File>>,
}

impl SetInner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Per-key executors sharing one profile, one backend and one owner-only directory.
#[derive(Debug)]
pub struct ExecutorSet {
    inner: Arc<SetInner>,
}

/// Runs commands under the set's profile with its own HOME, TMPDIR and environment snapshot.
#[derive(Debug)]
pub struct Executor {
    set: Arc<SetInner>,
    key: String,
    home: PathBuf,
    home_dir: Option<PathBuf>,
    temp_dir: PathBuf,
    env: Vec<(String, String)>,
    level: Level,
    guarantees: Guarantees,
    report: CompileReport,
    grants: Mutex<GrantState>,
    /// Held handles on filesystem grant targets, by token nonce, with the token's expiry.
    #[cfg(target_os = "linux")]
    handles: Mutex<HashMap<String, (i64, sandbox_linux::TargetHandle)>>,
}

/// The verified grants of one spawn, not yet consumed.
#[derive(Debug, Default)]
struct Verified {
    command_start: bool,
    deltas: GrantDeltas,
    consume: Vec<([u8; 32], i64)>,
}

/// Admission of one run or process: counted until dropped, so that close can wait for it.
pub(crate) struct Admitted {
    set: Arc<SetInner>,
}

impl Admitted {
    /// Admits new work, unless the set is closed.
    fn new(set: &Arc<SetInner>) -> Option<Admitted> {
        let mut state = set.lock();
        if state.closed {
            return None;
        }
        state.active += 1;
        Some(Admitted { set: Arc::clone(set) })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut state = self.set.lock();
        state.active -= 1;
        self.set.changed.notify_all();
    }
}

impl ExecutorSet {
    /// Validates the options, selects and probes the backend, and creates the set directory
    /// `<scratch>/sandbox-executors-<random>` (0700). A sandboxed profile never falls back to a
    /// direct spawn: without a backend this fails with [`Error::SandboxUnavailable`].
    pub fn new(dl: &Deadline, profile: &Profile, options: ExecutorSetOptions) -> Result<ExecutorSet, Error> {
        dl.check(&[])?;
        options.validate(profile)?;
        let scratch = std::fs::canonicalize(&options.scratch_root).ok().filter(|p| p.is_dir()).ok_or_else(|| {
            Error::InvalidOptions {
                detail: format!("scratch_root: {} is not an existing directory", options.scratch_root.display()),
            }
        })?;
        let options = ExecutorSetOptions { scratch_root: scratch.clone(), ..options };
        if profile.config().isolation == Isolation::Sandboxed {
            select_sandboxed_backend()?;
            refuse_writable_scratch(profile, &scratch)?;
        }
        sweep_dead_sets(&scratch, &options);
        let dir = fsutil::private_dir(&scratch, SET_PREFIX)?;
        // Every other sandbox of this user masks this scratch root from now on (class 7).
        #[cfg(target_os = "linux")]
        if profile.config().isolation == Isolation::Sandboxed {
            if let Err(e) = crate::registry::register(&dir) {
                let _ = fsutil::remove_tree(&dir);
                return Err(e);
            }
        }
        let lock = match lock_set(&dir) {
            Ok(l) => l,
            Err(e) => {
                let _ = fsutil::remove_tree(&dir);
                #[cfg(target_os = "linux")]
                crate::registry::unregister(&dir);
                return Err(e);
            }
        };
        let backend = match profile.config().isolation {
            Isolation::Unconfined => Ok(Backend::Direct),
            Isolation::Sandboxed => sandboxed_backend(dl, profile, &options, &dir),
        };
        let backend = match backend {
            Ok(b) => b,
            Err(e) => {
                let _ = fsutil::remove_tree(&dir);
                #[cfg(target_os = "linux")]
                crate::registry::unregister(&dir);
                return Err(e);
            }
        };
        tracing::debug!(dir = %dir.display(), ?backend, "executor set created");
        Ok(ExecutorSet {
            inner: Arc::new(SetInner {
                profile: profile.clone(),
                options,
                dir,
                backend,
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                closing: AtomicBool::new(false),
                _lock: Some(lock),
            }),
        })
    }

    /// The set's directory (HOMEs, TMPDIRs, bundles and runtime state live beneath it).
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The executor for `key`, built on first use and memoised (also under concurrent calls).
    pub fn executor(&self, key: &str) -> Result<Arc<Executor>, Error> {
        if key.is_empty() || key.trim() != key || key.contains('\0') {
            return Err(Error::InvalidArgument {
                detail: String::from("key: empty, padded with whitespace or containing NUL"),
            });
        }
        let inner = &self.inner;
        {
            let mut state = inner.lock();
            loop {
                if state.closed {
                    return Err(Error::ExecutorSetClosed);
                }
                if let Some(e) = state.executors.get(key) {
                    return Ok(Arc::clone(e));
                }
                if !state.building.iter().any(|k| k == key) {
                    break;
                }
                state = inner.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            if state.executors.len() + state.building.len() >= inner.options.max_executors {
                return Err(Error::ExecutorLimit);
            }
            state.building.push(key.to_owned());
        }
        let built = Executor::build(inner, key);
        let mut state = inner.lock();
        state.building.retain(|k| k != key);
        inner.changed.notify_all();
        let executor = Arc::new(built?);
        if state.closed {
            let _ = executor.remove_dirs();
            return Err(Error::ExecutorSetClosed);
        }
        state.executors.insert(key.to_owned(), Arc::clone(&executor));
        Ok(executor)
    }

    /// Closes the set (CONTRACT.md §9): no new work, running trees killed, every admitted run
    /// drained, the set directory removed (the scratch root stays). Idempotent.
    pub fn close(&self) -> Result<(), Error> {
        let inner = &self.inner;
        let mut state = inner.lock();
        if state.closed {
            // A concurrent caller waits for the first and gets its result; a later one, Ok.
            if state.close_done.is_some() {
                return Ok(());
            }
            while state.close_done.is_none() {
                state = inner.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            return state.close_done.clone().unwrap_or(Ok(()));
        }
        state.closed = true;
        inner.closing.store(true, Ordering::SeqCst);
        let end = Instant::now() + Duration::from_secs(60);
        while state.active > 0 && Instant::now() < end {
            let (s, _) = inner
                .changed
                .wait_timeout(state, Duration::from_millis(100))
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            state = s;
        }
        let drained = state.active == 0;
        // Keys zeroed, replay memory dropped, target handles released: no token verifies again.
        for e in state.executors.values() {
            e.revoke_grants();
        }
        state.executors.clear();
        drop(state);
        let result = if drained {
            // Workers still removing their containers finish first; containers whose teardown
            // failed leave state and cgroups: sweep them before the directory that records
            // them goes.
            #[cfg(target_os = "linux")]
            {
                if let Backend::Linux(linux) = &inner.backend {
                    linux.settle();
                }
                let parent = crate::linux::configured_cgroup_parent(&inner.options);
                crate::linux::sweep_set_containers(&inner.dir, parent.as_deref());
            }
            let removed = fsutil::remove_tree(&inner.dir);
            // A set directory that could not be removed stays masked until a sweep removes it.
            #[cfg(target_os = "linux")]
            if removed.is_ok() {
                crate::registry::unregister(&inner.dir);
            }
            removed
        } else {
            // Runs still use the directory: it stays, and a later set sweeps it once we are gone.
            Err(Error::Runtime { detail: String::from("close: runs did not drain within 60 s") })
        };
        let mut state = inner.lock();
        state.close_done = Some(result.clone());
        inner.changed.notify_all();
        result
    }
}

impl Drop for ExecutorSet {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

const SET_PREFIX: &str = "sandbox-executors-";

/// Creates and locks `<set>/lock` for the set's life.
fn lock_set(dir: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, Error> {
    let path = dir.join("lock");
    let file = std::fs::File::create(&path).map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| Error::io(format!("locking {}", path.display()), e.into()))
}

/// A scratch root inside an area the profile makes writable (the workspace, a writable
/// additional root, the real HOME) is refused (issue 12, class 6): a workload could plant there
/// what a later set on that scratch root would find. (Each run's own scratch root is also
/// masked in its view, and live scratch roots are masked in every view: see `registry`.)
fn refuse_writable_scratch(profile: &Profile, scratch: &Path) -> Result<(), Error> {
    let c = profile.config();
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut writable: Vec<(String, PathBuf)> = Vec::new();
    if c.workspace_write != Access::Deny {
        writable.push((String::from("the workspace"), canonical(profile.workspace_root())));
    }
    for (i, r) in c.additional_roots.iter().enumerate() {
        if r.write != Access::Deny {
            writable.push((format!("additional_roots[{i}]"), canonical(&r.path)));
        }
    }
    if c.home == Home::RealHome {
        // The real HOME is the workload's HOME: refused too (a HOME of `/` would refuse every
        // scratch root, and says nothing about where the workload writes: skipped).
        let home = canonical(&real_home());
        if home != Path::new("/") {
            writable.push((String::from("the real HOME"), home));
        }
    }
    for (what, area) in writable {
        if scratch.starts_with(&area) {
            return Err(Error::InvalidOptions {
                detail: format!(
                    "scratch_root: {} lies inside {what} ({}), which the profile lets a workload write; \
                     choose a scratch root outside it",
                    scratch.display(),
                    area.display()
                ),
            });
        }
    }
    Ok(())
}

/// Removes sibling set directories whose owner is gone (their lock is free), with their
/// containers, cgroups and files (CONTRACT.md §15.8). Only directories at least 10 s old are
/// considered (a set between mkdir and lock holds no lock yet); one without a lock file only
/// once it is a minute old.
///
/// A scratch root may hold anything a workload could plant (issue 12, class 6): only real
/// directories (not symlinks) owned by this uid are considered; the lock is opened without
/// following a symlink or blocking (a FIFO never hangs the sweep) and must be a regular file;
/// no file of the set directory names what is killed (see `sweep_set_containers`).
fn sweep_dead_sets(scratch: &Path, options: &ExecutorSetOptions) {
    #[cfg(unix)]
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    #[cfg(unix)]
    let uid = nix::unistd::geteuid().as_raw();
    for entry in std::fs::read_dir(scratch).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if !meta.is_dir() || !name.to_string_lossy().starts_with(SET_PREFIX) {
            continue;
        }
        #[cfg(unix)]
        if meta.uid() != uid {
            tracing::warn!(set = %path.display(), "sweep: not owned by this user, left alone");
            continue;
        }
        // A set being created holds no lock for an instant: only older directories can be dead.
        let age = meta.modified().ok().and_then(|t| t.elapsed().ok());
        if age.is_none_or(|a| a < Duration::from_secs(10)) {
            continue;
        }
        let mut open = std::fs::OpenOptions::new();
        open.read(true);
        #[cfg(unix)]
        open.custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits());
        let dead = match open.open(path.join("lock")) {
            Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => {
                nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).is_ok()
            }
            Ok(_) => age.is_some_and(|a| a > Duration::from_secs(60)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => age.is_some_and(|a| a > Duration::from_secs(60)),
            Err(_) => age.is_some_and(|a| a > Duration::from_secs(60)),
        };
        if !dead {
            continue;
        }
        tracing::debug!(set = %path.display(), "sweeping a dead executor set");
        #[cfg(target_os = "linux")]
        {
            let parent = crate::linux::configured_cgroup_parent(options);
            crate::linux::sweep_set_containers(&path, parent.as_deref());
        }
        #[cfg(not(target_os = "linux"))]
        let _ = options;
        if let Err(e) = fsutil::remove_tree(&path) {
            tracing::warn!(set = %path.display(), "sweep: {e}");
        }
    }
}

#[cfg(target_os = "linux")]
fn select_sandboxed_backend() -> Result<(), Error> {
    if !crate::init_called() { Err(Error::InitNotCalled) } else { Ok(()) }
}

#[cfg(target_os = "macos")]
fn select_sandboxed_backend() -> Result<(), Error> {
    Ok(())
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn select_sandboxed_backend() -> Result<(), Error> {
    Err(Error::SandboxUnavailable {
        detail: format!("no sandbox backend for {} in this version of sandbox", std::env::consts::OS),
    })
}

#[cfg(target_os = "linux")]
fn sandboxed_backend(
    dl: &Deadline,
    profile: &Profile,
    options: &ExecutorSetOptions,
    dir: &Path,
) -> Result<Backend, Error> {
    Ok(Backend::Linux(Box::new(LinuxBackend::new(dl, profile, options, dir)?)))
}

#[cfg(target_os = "macos")]
fn sandboxed_backend(_: &Deadline, _: &Profile, options: &ExecutorSetOptions, _: &Path) -> Result<Backend, Error> {
    Ok(Backend::Seatbelt(crate::macos::MacBackend::new(&options.scratch_root)?))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn sandboxed_backend(_: &Deadline, _: &Profile, _: &ExecutorSetOptions, _: &Path) -> Result<Backend, Error> {
    select_sandboxed_backend().map(|()| Backend::Direct)
}

fn real_home() -> PathBuf {
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    #[cfg(unix)]
    if let Ok(Some(user)) = nix::unistd::User::from_uid(nix::unistd::getuid()) {
        return user.dir;
    }
    PathBuf::from("/")
}

impl Executor {
    fn build(set: &Arc<SetInner>, key: &str) -> Result<Executor, Error> {
        let profile = &set.profile;
        let isolated = profile.config().home == Home::IsolatedHome;
        let mut created = Vec::new();
        let result = (|| {
            let home_dir = if isolated {
                let dir = fsutil::private_dir(&set.dir, "home-")?;
                created.push(dir.clone());
                for (src, rel) in &set.options.seed_home {
                    seed(&dir, src, rel)?;
                }
                Some(dir)
            } else {
                None
            };
            let temp_dir = fsutil::private_dir(&set.dir, "tmp-")?;
            created.push(temp_dir.clone());
            let home = home_dir.clone().unwrap_or_else(real_home);
            let snapshot: Vec<(OsString, OsString)> = std::env::vars_os().collect();
            let container = !matches!(set.backend, Backend::Direct);
            let env = scrub(
                &snapshot,
                &set.options.env,
                &home,
                &temp_dir,
                ScrubFlags { linux_container: container && cfg!(target_os = "linux"), broad_dns: false },
            );
            let env_detail = env_detail(&set.options);
            let (level, guarantees, report) = match &set.backend {
                Backend::Direct => {
                    (Level::None, Guarantees { env_scrub: true, ..Guarantees::default() }, CompileReport::default())
                }
                #[cfg(target_os = "macos")]
                Backend::Seatbelt(mac) => mac.assess(profile, &env, (home_dir.as_deref(), &temp_dir), env_detail)?,
                #[cfg(target_os = "linux")]
                Backend::Linux(linux) => {
                    let input = SpawnInput {
                        tty: false,
                        grants: GrantDeltas::default(),
                        argv: vec![String::from("/bin/true")],
                        cwd: profile.workspace_root().to_path_buf(),
                        env: env.clone(),
                        home_dir: home_dir.as_deref(),
                        temp_dir: &temp_dir,
                    };
                    let bundle = linux.compile(profile, &input, "reference")?;
                    linux.assess(profile, &bundle.policy_entries, env_detail)
                }
            };
            if let Err(broken) = check_invariants(level, guarantees, Some(profile.config().isolation), Some(&report)) {
                return Err(Error::Runtime { detail: format!("inconsistent report: {}", broken.join(", ")) });
            }
            let required = profile.required_guarantees();
            if !guarantees.contains(required) {
                let missing = Guarantees::from_bits(required.bits() & !guarantees.bits());
                return Err(Error::SandboxUnavailable {
                    detail: format!("required guarantees missing: {}", missing.names().join(", ")),
                });
            }
            Ok(Executor {
                set: Arc::clone(set),
                key: key.to_owned(),
                home,
                home_dir,
                temp_dir,
                env,
                level,
                guarantees,
                report,
                grants: Mutex::new(GrantState::new()?),
                #[cfg(target_os = "linux")]
                handles: Mutex::new(HashMap::new()),
            })
        })();
        if result.is_err() {
            for dir in created {
                let _ = fsutil::remove_tree(&dir);
            }
        }
        result
    }

    fn remove_dirs(&self) -> Result<(), Error> {
        if let Some(h) = &self.home_dir {
            fsutil::remove_tree(h)?;
        }
        fsutil::remove_tree(&self.temp_dir)
    }

    /// The key this executor was made for.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The measured level.
    pub fn level(&self) -> Level {
        self.level
    }

    /// The measured guarantees.
    pub fn guarantees(&self) -> Guarantees {
        self.guarantees
    }

    /// [`Guarantees::bits`] of [`Executor::guarantees`].
    pub fn guarantee_bits(&self) -> u64 {
        self.guarantees.bits()
    }

    /// What was achieved, feature by feature.
    pub fn report(&self) -> &CompileReport {
        &self.report
    }

    /// The process's HOME (the isolated one, or the caller's with `RealHome`).
    pub fn home_dir(&self) -> &Path {
        &self.home
    }

    /// The process's TMPDIR.
    pub fn temp_dir(&self) -> &Path {
        &self.temp_dir
    }

    /// Always 1.
    pub fn grant_version(&self) -> u16 {
        1
    }

    /// Runs `/bin/sh -c command` in `cwd`.
    pub fn run_command(&self, dl: &Deadline, cwd: &Path, command: &str) -> Result<Output, Error> {
        if command.is_empty() {
            dl.check(&[])?;
            self.check_open()?;
            return Err(Error::InvalidArgument { detail: String::from("command: empty") });
        }
        self.run(dl, cwd, &[OsStr::new("/bin/sh"), OsStr::new("-c"), OsStr::new(command)], None)
    }

    /// Runs `argv` without a shell; a bare `argv[0]` is looked up on the sandbox's `PATH`.
    pub fn run_argv<S: AsRef<OsStr>>(&self, dl: &Deadline, cwd: &Path, argv: &[S]) -> Result<Output, Error> {
        self.run(dl, cwd, argv, None)
    }

    /// Like [`Executor::run_argv`], keeping at most `max_output` bytes: the first byte beyond
    /// kills the tree and fails with [`Error::OutputLimit`].
    pub fn run_argv_limited<S: AsRef<OsStr>>(
        &self,
        dl: &Deadline,
        cwd: &Path,
        argv: &[S],
        max_output: u64,
    ) -> Result<Output, Error> {
        self.run(dl, cwd, argv, Some(max_output))
    }

    /// Checks and consumes authority for one process and compiles it; spawns nothing
    /// (CONTRACT.md §12). `start` on the result spawns it.
    pub fn prepare_process(&self, dl: &Deadline, o: ProcessOptions) -> Result<PreparedProcess, Error> {
        dl.check(&[])?;
        self.check_open()?;
        if o.tty && !self.backend_has_pty() {
            return Err(Error::ProcessTtyUnsupported);
        }
        let bad = |detail: &str| Err(Error::InvalidArgument { detail: detail.to_owned() });
        match (o.command.is_empty(), o.argv.is_empty()) {
            (false, false) => return bad("command and argv: give exactly one"),
            (true, true) => return bad("command and argv: give exactly one"),
            _ => {}
        }
        if !o.argv.is_empty() && o.argv[0].is_empty() {
            return bad("argv: empty program");
        }
        if o.argv.iter().any(|a| a.as_encoded_bytes().contains(&0)) {
            return bad("argv: contains NUL");
        }
        let malformed = |detail: &str| Err(Error::GrantMalformed { detail: detail.to_owned() });
        if !is_safe_text(&o.execution_id) {
            return malformed("execution_id: empty, padded with whitespace or containing NUL");
        }
        if !o.command.is_empty() && !is_safe_text(&o.command) {
            return malformed("command: padded with whitespace or containing NUL");
        }
        if !o.grants.is_empty() && o.argv.iter().any(|a| a.to_str().is_none()) {
            return malformed("argv: not UTF-8 while grants are given");
        }
        let cwd = std::fs::canonicalize(&o.cwd).ok().filter(|p| p.is_dir()).ok_or_else(|| Error::GrantMalformed {
            detail: format!("cwd: {} does not resolve to a directory", o.cwd.display()),
        })?;
        match self.set.profile.config().command {
            Access::Deny => return Err(Error::GrantDenied { detail: String::from("command.execute is deny") }),
            Access::Gated if o.grants.is_empty() => return Err(Error::GrantRequired),
            _ => {}
        }
        let deltas = if o.grants.is_empty() {
            GrantDeltas::default()
        } else {
            let text = command_text(&o.command, &o.argv)?;
            let tokens: Vec<&str> = o.grants.iter().map(String::as_str).collect();
            self.verify_grants(&tokens, &o.execution_id, &text, &cwd)?.deltas
        };
        let argv: Vec<OsString> = if o.command.is_empty() {
            o.argv
        } else {
            vec![OsString::from("/bin/sh"), OsString::from("-c"), OsString::from(o.command)]
        };
        #[cfg(target_os = "linux")]
        if let Backend::Linux(linux) = &self.set.backend {
            // Compiled now so that a spawn that cannot be expressed fails before start.
            let mut input = self.spawn_input(&argv, cwd.clone())?;
            input.grants = deltas.clone();
            linux.compile(&self.set.profile, &input, "prepare")?;
        }
        Ok(PreparedProcess {
            set: Arc::clone(&self.set),
            argv,
            cwd,
            env: self.env.clone(),
            home_dir: self.home_dir.clone(),
            temp_dir: self.temp_dir.clone(),
            tty: o.tty,
            deltas,
            state: Mutex::new(Prepared::Ready),
        })
    }

    /// PTY mode: Linux containers (the PTY lives in the container's devpts) and direct spawns
    /// on Linux.
    fn backend_has_pty(&self) -> bool {
        match &self.set.backend {
            Backend::Direct => cfg!(target_os = "linux"),
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(_) => false,
            #[cfg(target_os = "linux")]
            Backend::Linux(_) => true,
        }
    }

    #[cfg(target_os = "linux")]
    fn spawn_input<'a>(&'a self, argv: &[OsString], cwd: PathBuf) -> Result<SpawnInput<'a>, Error> {
        spawn_input(argv, cwd, &self.env, self.home_dir.as_deref(), &self.temp_dir)
    }

    /// Runs `/bin/sh -c command` with grant tokens (CONTRACT.md §11, §13.4): the canonical cwd,
    /// every token verified and consumed first, Gated capabilities opened for this spawn only.
    pub fn run_command_with_grants<G: AsRef<str>>(
        &self,
        dl: &Deadline,
        execution_id: &str,
        cwd: &Path,
        command: &str,
        grants: &[G],
    ) -> Result<Output, Error> {
        dl.check(&[])?;
        self.check_open()?;
        let malformed = |detail: &str| Err(Error::GrantMalformed { detail: detail.to_owned() });
        if !is_safe_text(execution_id) {
            return malformed("execution_id: empty, padded with whitespace or containing NUL");
        }
        if !is_safe_text(command) {
            return malformed("command: empty, padded with whitespace or containing NUL");
        }
        let cwd = std::fs::canonicalize(cwd).ok().filter(|p| p.is_dir()).ok_or_else(|| Error::GrantMalformed {
            detail: format!("cwd: {} does not resolve to a directory", cwd.display()),
        })?;
        if self.set.profile.config().command == Access::Deny {
            return Err(Error::GrantDenied { detail: String::from("command.execute is deny") });
        }
        let tokens: Vec<&str> = grants.iter().map(AsRef::as_ref).collect();
        let verified = self.verify_grants(&tokens, execution_id, command, &cwd)?;
        let argv = [OsStr::new("/bin/sh"), OsStr::new("-c"), OsStr::new(command)];
        self.spawn_sync(dl, cwd, &argv, None, verified.deltas)
    }

    /// Issues a single-use grant for one Gated capability of one exact spawn (CONTRACT.md
    /// §13.2, checks in the contract's order). The token is valid on this executor only.
    pub fn issue_grant(&self, dl: &Deadline, r: &GrantRequest) -> Result<String, Error> {
        dl.check(&[])?;
        let malformed = |detail: &str| Err(Error::GrantMalformed { detail: detail.to_owned() });
        if !is_safe_text(&r.execution_id) {
            return malformed("execution_id: empty, padded with whitespace or containing NUL");
        }
        if !is_safe_text(&r.command) {
            return malformed("command: empty, padded with whitespace or containing NUL");
        }
        let cwd = std::fs::canonicalize(&r.cwd).ok().filter(|p| p.is_dir()).ok_or_else(|| Error::GrantMalformed {
            detail: format!("cwd: {} does not resolve to a directory", r.cwd.display()),
        })?;
        let Some(cwd_text) = cwd.to_str().map(str::to_owned) else { return malformed("cwd: not valid UTF-8") };
        let class = Class::parse(&r.class)
            .ok_or_else(|| Error::GrantUnsupported { detail: format!("class: unknown class {:?}", r.class) })?;
        let (scope, target) = grants::fit(class, &r.kind, &r.scope, &r.target, &r.command)?;
        if class == Class::ProxyTarget {
            return Err(Error::GrantUnsupported {
                detail: String::from("network.proxy-target.v1 needs an egress route, which this version does not have"),
            });
        }
        self.backend_supports(class, &target, &cwd)?;
        grants::gated(&self.set.profile, &r.kind, &scope)?;
        self.check_open()?;
        let now = grants::now_ms();
        let ttl = i64::try_from(self.set.options.grant_ttl.as_millis()).unwrap_or(i64::MAX);
        if r.expiry_unix_ms <= now || r.expiry_unix_ms > now.saturating_add(ttl) {
            return Err(Error::GrantExpired);
        }
        if !self.guarantees.contains(class.bits()) {
            return Err(Error::GrantGuaranteeMismatch {
                detail: format!("{} needs {}", r.class, class.bits().names().join(", ")),
            });
        }
        let path_binding =
            if class.is_path() || class.is_tree() { Some(grants::bind_target(Path::new(&target))?) } else { None };
        let nonce = grants::nonce()?;
        #[cfg(target_os = "linux")]
        if path_binding.is_some() && matches!(self.set.backend, Backend::Linux(_)) {
            let handle = sandbox_linux::TargetHandle::open(Path::new(&target))
                .map_err(|e| Error::GrantTargetChanged { detail: format!("{target}: {e}") })?;
            let mut handles = self.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            handles.retain(|_, (expiry, _)| *expiry >= now);
            handles.insert(nonce.clone(), (r.expiry_unix_ms, handle));
        }
        let payload = Payload {
            execution_id: r.execution_id.clone(),
            command: r.command.clone(),
            working_directory: cwd_text,
            profile_fingerprint: self.set.profile.fingerprint().to_owned(),
            route_fingerprint: String::from(crate::route::NO_ROUTE),
            guarantee_bits: self.guarantee_bits(),
            class: r.class.clone(),
            target,
            path_binding,
            expiry_unix_ms: r.expiry_unix_ms,
            nonce,
        };
        self.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner).sign(&payload)
    }

    /// Zeroes the key, forgets the replay memory and releases held target handles.
    fn revoke_grants(&self) {
        self.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner).revoke();
        #[cfg(target_os = "linux")]
        self.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }

    /// Whether this executor's backend can enforce `class` on `target` (§13.2 step 7, §13.6).
    fn backend_supports(&self, class: Class, target: &str, cwd: &Path) -> Result<(), Error> {
        let unsupported = |detail: String| Err::<(), Error>(Error::GrantUnsupported { detail });
        match &self.set.backend {
            Backend::Direct => Ok(()),
            // Seatbelt supports every class; targets may be missing (CONTRACT.md §16).
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(_) => Ok(()),
            #[cfg(target_os = "linux")]
            Backend::Linux(linux) => {
                use std::os::unix::fs::MetadataExt;
                let meta = std::fs::symlink_metadata(target);
                if class.is_path() && !meta.as_ref().is_ok_and(|m| m.is_file() && m.nlink() == 1) {
                    return unsupported(format!("{target}: a path grant needs an existing regular file with one link"));
                }
                if class.is_tree() && !meta.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
                    return unsupported(format!("{target}: a tree grant needs an existing directory"));
                }
                if class == Class::NetworkBroad && !linux.broad_grants_enforceable() {
                    return unsupported(String::from("network.broad.v1 needs landlock abi 6 or newer in force"));
                }
                if class.is_path() || class.is_tree() || matches!(class, Class::HostRead | Class::HostWrite) {
                    // Compile the spawn with this one grant: the target must get what it grants
                    // (a write-only area under a readable mount, for one, is masked instead).
                    let mut deltas = GrantDeltas::default();
                    add_delta(&mut deltas, class, target);
                    let mut input = self.spawn_input(&[OsString::from("/bin/true")], cwd.to_path_buf())?;
                    input.grants = deltas;
                    if let Err(why) = linux.grant_enforced(&self.set.profile, &input, class.is_write(), target) {
                        return unsupported(why);
                    }
                }
                Ok(())
            }
        }
    }

    /// Verification of §13.4 steps 1-4 and 6 (consumption) for one spawn.
    fn verify_grants(&self, tokens: &[&str], execution_id: &str, command: &str, cwd: &Path) -> Result<Verified, Error> {
        let mut verified = Verified::default();
        let mut bindings = Vec::new();
        {
            let state = self.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let cwd_text = cwd.to_string_lossy();
            let mut seen: Vec<[u8; 32]> = Vec::new();
            for token in tokens {
                let (id, p) = state.open(token, &seen)?;
                seen.push(id);
                if grants::now_ms() > p.expiry_unix_ms {
                    return Err(Error::GrantExpired);
                }
                if p.execution_id != execution_id {
                    return Err(Error::GrantWrongExecution);
                }
                if p.command != command {
                    return Err(Error::GrantWrongCommand);
                }
                if p.working_directory != cwd_text {
                    return Err(Error::GrantWrongWorkingDirectory);
                }
                if p.profile_fingerprint != self.set.profile.fingerprint() {
                    return Err(Error::GrantProfileMismatch);
                }
                if p.route_fingerprint != crate::route::NO_ROUTE {
                    return Err(Error::GrantRouteMismatch);
                }
                if p.guarantee_bits != self.guarantee_bits() {
                    return Err(Error::GrantGuaranteeMismatch {
                        detail: String::from("the executor's guarantees differ from the token's"),
                    });
                }
                let class = Class::parse(&p.class)
                    .ok_or_else(|| Error::GrantUnsupported { detail: format!("class: unknown class {:?}", p.class) })?;
                let scope = match class {
                    Class::PathRead | Class::PathWrite => p.target.clone(),
                    Class::TreeRead | Class::TreeWrite => format!("tree:{}", p.target),
                    Class::HostRead | Class::HostWrite => String::from("host:*"),
                    _ => String::new(),
                };
                grants::fit(class, class_kind(class), &scope, &p.target, &p.command).map_err(|e| match e {
                    // The token's text was checked at issue (and is MAC-verified): a bound
                    // target that no longer canonicalizes changed on disk (issue 12, 3b).
                    Error::GrantMalformed { detail } if p.path_binding.is_some() => {
                        Error::GrantTargetChanged { detail }
                    }
                    other => other,
                })?;
                if class == Class::ProxyTarget {
                    return Err(Error::GrantUnsupported { detail: String::from("no egress route") });
                }
                if p.path_binding.is_none() {
                    self.backend_supports(class, &p.target, cwd)?;
                }
                // A bound target's kind was checked at issue; what it is now is the identity
                // check's business (step 3): a swapped target is GrantTargetChanged, not a
                // different class of error.
                if !self.guarantees.contains(class.bits()) {
                    return Err(Error::GrantGuaranteeMismatch { detail: format!("{} needs more bits", p.class) });
                }
                if class == Class::CommandStart {
                    verified.command_start = true;
                } else {
                    add_delta(&mut verified.deltas, class, &p.target);
                }
                if let Some(b) = &p.path_binding {
                    bindings.push((b.clone(), p.nonce.clone()));
                }
                verified.consume.push((id, p.expiry_unix_ms));
            }
        }
        if self.set.profile.config().command == Access::Gated && !verified.command_start {
            return Err(Error::GrantRequired);
        }
        for (binding, nonce) in &bindings {
            let now = grants::bind_target(Path::new(&binding.canonical_path))?;
            if now != *binding {
                return Err(Error::GrantTargetChanged {
                    detail: format!("{} is not the object it was at issue", binding.canonical_path),
                });
            }
            #[cfg(target_os = "linux")]
            if matches!(self.set.backend, Backend::Linux(_)) {
                self.same_as_held(nonce, &binding.canonical_path)?;
            }
            // The init checks the mounted target against this identity (issue 12, 3b): a swap
            // between this check and the runtime's bind fails the spawn.
            if binding.existing_path == binding.canonical_path {
                verified.deltas.identities.push((
                    PathBuf::from(&binding.canonical_path),
                    binding.identity.dev,
                    binding.identity.ino,
                ));
            }
            #[cfg(not(target_os = "linux"))]
            let _ = nonce;
        }
        // The replay check of step 1 ran in an earlier lock section, so a concurrent call may
        // have verified the same token meanwhile: check and consume again under one lock
        // (`try_consume`), so that exactly one of them spawns (issue 12, class 3a).
        self.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner).try_consume(&verified.consume)?;
        Ok(verified)
    }

    /// The target reopened without following symlinks must be the object held since issue.
    #[cfg(target_os = "linux")]
    fn same_as_held(&self, nonce: &str, path: &str) -> Result<(), Error> {
        let changed = |detail: String| Error::GrantTargetChanged { detail };
        let handles = self.handles.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some((_, held)) = handles.get(nonce) else {
            return Err(changed(format!("{path}: no handle is held for this token")));
        };
        let again = sandbox_linux::TargetHandle::open(Path::new(path)).map_err(|e| changed(format!("{path}: {e}")))?;
        let (a, b) = (held.identity(), again.identity());
        match (a, b) {
            (Ok(a), Ok(b)) if a == b => Ok(()),
            _ => Err(changed(format!("{path} was replaced"))),
        }
    }

    /// A synchronous spawn of `argv` in `cwd` with the given grants.
    fn spawn_sync<S: AsRef<OsStr>>(
        &self,
        dl: &Deadline,
        cwd: PathBuf,
        argv: &[S],
        limit: Option<u64>,
        deltas: GrantDeltas,
    ) -> Result<Output, Error> {
        let Some(_admitted) = Admitted::new(&self.set) else {
            return Err(Error::ExecutorClosed { partial: Vec::new() });
        };
        match &self.set.backend {
            Backend::Direct => direct::run(dl, &cwd, argv, &self.env, limit, &self.set.closing),
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(mac) => {
                let argv: Vec<OsString> = argv.iter().map(|a| a.as_ref().to_os_string()).collect();
                let dirs = (self.home_dir.as_deref(), self.temp_dir.as_path());
                let wrapped = mac.wrap(&self.set.profile, &argv, &cwd, &self.env, dirs, deltas)?;
                direct::run(dl, &cwd, &wrapped, &self.env, limit, &self.set.closing)
            }
            #[cfg(target_os = "linux")]
            Backend::Linux(linux) => {
                let argv: Vec<OsString> = argv.iter().map(|a| a.as_ref().to_os_string()).collect();
                let mut input = self.spawn_input(&argv, cwd)?;
                input.grants = deltas;
                linux.spawn(dl, &self.set.profile, &input, limit, &self.set.closing, true).map(|(output, _)| output)
            }
        }
    }

    fn check_open(&self) -> Result<(), Error> {
        if self.set.lock().closed { Err(Error::ExecutorClosed { partial: Vec::new() }) } else { Ok(()) }
    }

    fn run<S: AsRef<OsStr>>(&self, dl: &Deadline, cwd: &Path, argv: &[S], limit: Option<u64>) -> Result<Output, Error> {
        dl.check(&[])?;
        self.check_open()?;
        let bad = |detail: &str| Err(Error::InvalidArgument { detail: detail.to_owned() });
        if argv.is_empty() || argv[0].as_ref().is_empty() {
            return bad("argv: empty");
        }
        if argv.iter().any(|a| a.as_ref().as_encoded_bytes().contains(&0)) {
            return bad("argv: contains NUL");
        }
        if cwd.as_os_str().as_encoded_bytes().contains(&0) {
            return bad("cwd: contains NUL");
        }
        let cwd = absolute_lexical(cwd);
        if !cwd.is_dir() {
            return Err(Error::InvalidArgument {
                detail: format!("cwd: {} is not an existing directory", cwd.display()),
            });
        }
        if limit == Some(0) {
            return Err(Error::OutputLimit { partial: Vec::new() });
        }
        match self.set.profile.config().command {
            Access::Deny => return Err(Error::GrantDenied { detail: String::from("command.execute is deny") }),
            Access::Gated => return Err(Error::GrantRequired),
            Access::Allow => {}
        }
        self.spawn_sync(dl, cwd, argv, limit, GrantDeltas::default())
    }
}

fn absolute_lexical(p: &Path) -> PathBuf {
    let joined = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(p) };
    sandbox_bundle::profile::lexically_clean(&joined)
}

fn seed(home: &Path, src: &Path, rel: &Path) -> Result<(), Error> {
    let dest = home.join(rel);
    let mut dir = home.to_path_buf();
    for c in rel.parent().into_iter().flat_map(Path::components) {
        dir.push(c);
        if !dir.is_dir() {
            let mut b = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.create(&dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        }
    }
    std::fs::copy(src, &dest).map_err(|e| Error::io(format!("seeding {}", dest.display()), e))?;
    Ok(())
}

fn env_detail(options: &ExecutorSetOptions) -> String {
    let mut parts =
        vec![String::from("allowlist PATH HOME TERM LANG USER LOGNAME SHELL TZ LC_*; HOME and TMPDIR forced")];
    if !options.env.pass_env.is_empty() {
        parts.push(format!("passed: {}", options.env.pass_env.join(" ")));
    }
    if !options.env.set_env.is_empty() {
        let names: Vec<&str> = options.env.set_env.iter().map(|(n, _)| n.as_str()).collect();
        parts.push(format!("set: {}", names.join(" ")));
    }
    if !options.seed_home.is_empty() {
        let files: Vec<String> = options.seed_home.iter().map(|(_, r)| r.display().to_string()).collect();
        parts.push(format!("seeded: {}", files.join(" ")));
    }
    parts.join("; ")
}

#[cfg(target_os = "linux")]
fn spawn_input<'a>(
    argv: &[OsString],
    cwd: PathBuf,
    env: &[(String, String)],
    home_dir: Option<&'a Path>,
    temp_dir: &'a Path,
) -> Result<SpawnInput<'a>, Error> {
    let argv = argv
        .iter()
        .map(|a| {
            a.to_str().map(str::to_owned).ok_or_else(|| Error::InvalidArgument {
                detail: String::from("argv: not valid UTF-8 (container arguments are text)"),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SpawnInput { tty: false, argv, cwd, env: env.to_vec(), home_dir, temp_dir, grants: GrantDeltas::default() })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prepared {
    Ready,
    Started,
    Closed,
}

/// A process that passed every check and may be started once.
#[derive(Debug)]
pub struct PreparedProcess {
    set: Arc<SetInner>,
    argv: Vec<OsString>,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    home_dir: Option<PathBuf>,
    temp_dir: PathBuf,
    tty: bool,
    deltas: GrantDeltas,
    state: Mutex<Prepared>,
}

impl PreparedProcess {
    /// Starts the process, at most once; returns once the container (or the direct child)
    /// exists. The deadline covers setup only.
    pub fn start(&self, dl: &Deadline) -> Result<Process, Error> {
        dl.check(&[])?;
        {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match *state {
                Prepared::Closed => return Err(Error::ProcessClosed),
                Prepared::Started => return Err(Error::ProcessAlreadyStarted),
                Prepared::Ready => *state = Prepared::Started,
            }
        }
        let Some(admitted) = Admitted::new(&self.set) else {
            return Err(Error::ProcessClosed);
        };
        match &self.set.backend {
            Backend::Direct => {
                let set = Arc::clone(&self.set);
                let closing = move || set.closing.load(Ordering::SeqCst);
                crate::direct::start(&self.argv, &self.cwd, &self.env, self.tty, admitted, closing)
            }
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(mac) => {
                let dirs = (self.home_dir.as_deref(), self.temp_dir.as_path());
                let wrapped =
                    mac.wrap(&self.set.profile, &self.argv, &self.cwd, &self.env, dirs, self.deltas.clone())?;
                let set = Arc::clone(&self.set);
                let closing = move || set.closing.load(Ordering::SeqCst);
                let mut process = crate::direct::start(&wrapped, &self.cwd, &self.env, false, admitted, closing)?;
                process.containment = LifetimeContainment::BestEffort;
                Ok(process)
            }
            #[cfg(target_os = "linux")]
            Backend::Linux(_) => self.start_linux(dl, admitted),
        }
    }

    #[cfg(target_os = "linux")]
    fn start_linux(&self, dl: &Deadline, admitted: Admitted) -> Result<Process, Error> {
        let Backend::Linux(linux) = &self.set.backend else { unreachable!("checked by the caller") };
        let pipe = crate::output::pipe;
        let null = || -> Result<std::os::fd::OwnedFd, Error> {
            Ok(File::open("/dev/null").map_err(|e| Error::io("opening /dev/null", e))?.into())
        };
        // Pipe mode: three pipes. PTY mode: the container's terminal carries all three.
        let (stdio, ours) = if self.tty {
            ((null()?, null()?, null()?), None)
        } else {
            let (in_r, in_w) = pipe()?;
            let (out_r, out_w) = pipe()?;
            let (err_r, err_w) = pipe()?;
            ((in_r, out_w, err_w), Some((in_w, out_r, err_r)))
        };
        let mut input = spawn_input(&self.argv, self.cwd.clone(), &self.env, self.home_dir.as_deref(), &self.temp_dir)?;
        input.tty = self.tty;
        input.grants = self.deltas.clone();
        let started_at = SystemTime::now();
        let mut launched = linux.launch(dl, &self.set.profile, &input, stdio.0, stdio.1, stdio.2, true)?;
        let master = if self.tty {
            match launched.running.take_console() {
                Ok(m) => Some(m),
                Err(e) => {
                    let _ = launched.running.signal(nix::sys::signal::Signal::SIGKILL as i32);
                    let finish = linux.finish(launched, &self.set.closing, None, true);
                    let detail = match finish {
                        Ok(f) => f.status.err().unwrap_or_else(|| format!("pty: {e}")),
                        Err(e) => e.to_string(),
                    };
                    return Err(Error::Runtime { detail });
                }
            }
        } else {
            None
        };
        linux.wait_started(&mut launched, dl, &self.set.closing)?;
        if launched.ended_early() {
            // The container was never created: that is a failed start, not a process.
            let finish = linux.finish(launched, &self.set.closing, None, false)?;
            let detail = finish.status.err().unwrap_or_else(|| String::from("the container ended before it started"));
            return Err(crate::linux::setup_failed(detail));
        }
        let outcome = Arc::new(crate::process::Outcome::default());
        let signaller: Arc<dyn crate::process::Signaller> = Arc::new(LinuxSignaller(launched.running.signal_handle()));
        let set = Arc::clone(&self.set);
        let out = Arc::clone(&outcome);
        std::thread::Builder::new()
            .name(String::from("sandbox-supervisor"))
            .spawn(move || {
                let Backend::Linux(linux) = &set.backend else { return };
                let result = match linux.finish(launched, &set.closing, None, false) {
                    Ok(f) if f.closed => Err(Error::ExecutorClosed { partial: Vec::new() }),
                    Ok(f) => match f.status {
                        Ok(status) => Ok(ProcessResult { status, started_at, finished_at: SystemTime::now() }),
                        Err(detail) => Err(crate::linux::setup_failed(detail)),
                    },
                    Err(e) => Err(e),
                };
                out.set(result);
                drop(admitted);
            })
            .map_err(|e| Error::io("starting the supervisor thread", e))?;
        let (stdout, stderr, stdin, pty) = match (ours, master) {
            (Some((in_w, out_r, err_r)), _) => (
                ProcessReader::new(File::from(out_r)),
                ProcessReader::new(File::from(err_r)),
                ProcessStdin::new(Some(File::from(in_w))),
                None,
            ),
            (None, Some(master)) => {
                let (stdout, stderr, stdin) = crate::process::pty_streams(&master)?;
                (stdout, stderr, stdin, Some(Arc::new(master)))
            }
            (None, None) => return Err(Error::Runtime { detail: String::from("pty: no master") }),
        };
        Ok(Process {
            stdout: Mutex::new(Some(stdout)),
            stderr: Mutex::new(Some(stderr)),
            stdin,
            containment: LifetimeContainment::Enforced,
            activities: Mutex::new(Some(std::sync::mpsc::channel().1)),
            outcome,
            signaller,
            killed: Arc::new(AtomicBool::new(false)),
            pty,
        })
    }

    /// Closes it without starting: `start` then fails with `ProcessClosed`. Idempotent; a no-op
    /// after `start`.
    pub fn close(&self) -> Result<(), Error> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if *state == Prepared::Ready {
            *state = Prepared::Closed;
        }
        Ok(())
    }

    /// Where the spawn may write, for change tracking (HOME and TMPDIR not listed).
    pub fn effective_access(&self) -> ProcessAccess {
        let c = self.set.profile.config();
        let d = &self.deltas;
        let mut write_trees: Vec<PathBuf> = d.write_trees.clone();
        write_trees.extend(c.additional_roots.iter().filter(|r| r.write == Access::Allow).map(|r| r.path.clone()));
        let kind = if c.host_write == Access::Allow || d.host_write || c.workspace_write == Access::Allow {
            ProcessAccessKind::BroadWrite
        } else if c.workspace_write == Access::Gated || !d.write_paths.is_empty() || !write_trees.is_empty() {
            ProcessAccessKind::ScopedWrite
        } else {
            ProcessAccessKind::ReadOnly
        };
        ProcessAccess { kind, write_paths: d.write_paths.clone(), write_trees }
    }
}

impl Drop for PreparedProcess {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(target_os = "linux")]
#[derive(Debug)]
struct LinuxSignaller(sandbox_linux::SignalHandle);

#[cfg(target_os = "linux")]
impl crate::process::Signaller for LinuxSignaller {
    fn send(&self, sig: nix::sys::signal::Signal) {
        let _ = self.0.send(sig as i32);
    }
}

fn class_kind(class: Class) -> &'static str {
    match class {
        Class::CommandStart => "command.execute",
        Class::PathRead | Class::TreeRead | Class::HostRead => "filesystem.read",
        Class::PathWrite | Class::TreeWrite | Class::HostWrite => "filesystem.write",
        Class::NetworkBroad | Class::ProxyTarget => "network",
    }
}

fn add_delta(d: &mut GrantDeltas, class: Class, target: &str) {
    let p = PathBuf::from(target);
    match class {
        Class::PathRead => d.read_paths.push(p),
        Class::PathWrite => d.write_paths.push(p),
        Class::TreeRead => d.read_trees.push(p),
        Class::TreeWrite => d.write_trees.push(p),
        Class::HostRead => d.host_read = true,
        Class::HostWrite => d.host_write = true,
        Class::NetworkBroad => d.broad_port = grants::broad_port(target),
        Class::CommandStart | Class::ProxyTarget => {}
    }
}

/// The command text grants bind (§12): the shell command, or the argv as a compact JSON array.
fn command_text(command: &str, argv: &[OsString]) -> Result<String, Error> {
    if !command.is_empty() {
        return Ok(command.to_owned());
    }
    let items: Vec<&str> = argv
        .iter()
        .map(|a| a.to_str().ok_or_else(|| Error::GrantMalformed { detail: String::from("argv: not UTF-8") }))
        .collect::<Result<_, _>>()?;
    serde_json::to_string(&items).map_err(|e| Error::GrantMalformed { detail: format!("argv: {e}") })
}
