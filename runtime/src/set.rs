//! `ExecutorSet` (CONTRACT.md §9): per-key executors sharing one profile, one backend and one
//! owner-only directory; admission of runs, close, and the sweep of dead sets. The executors
//! live in `executor`, their grant checks in `grant_checks`, prepared processes in `prepared`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sandbox_bundle::{Access, Error, Home, Isolation, Profile};

use crate::executor::Executor;
use crate::{Deadline, ExecutorSetOptions, fsutil};

pub(crate) use crate::backend::Backend;

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) closed: bool,
    close_done: Option<Result<(), Error>>,
    executors: HashMap<String, Arc<Executor>>,
    building: Vec<String>,
    active: usize,
}

#[derive(Debug)]
pub(crate) struct SetInner {
    pub(crate) profile: Profile,
    pub(crate) options: ExecutorSetOptions,
    pub(crate) dir: PathBuf,
    pub(crate) backend: Backend,
    /// The options' `resolve` pins, normalized once (issue 17).
    pub(crate) pins: Vec<(sandbox_bundle::Host, Vec<std::net::IpAddr>)>,
    state: Mutex<State>,
    changed: Condvar,
    pub(crate) closing: AtomicBool,
    /// Held for the set's life: a sweep by a later set skips a locked directory.
    _lock: Option<nix::fcntl::Flock<std::fs::File>>,
}

impl SetInner {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Per-key executors sharing one profile, one backend and one owner-only directory.
#[derive(Debug)]
pub struct ExecutorSet {
    inner: Arc<SetInner>,
}

/// Runs commands under the set's profile with its own HOME, TMPDIR and environment snapshot.
/// Admission of one run or process: counted until dropped, so that close can wait for it.
pub(crate) struct Admitted {
    set: Arc<SetInner>,
}

impl Admitted {
    /// Admits new work, unless the set is closed.
    pub(crate) fn new(set: &Arc<SetInner>) -> Option<Admitted> {
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
        // Every sandbox hides the scratch roots in its view with a mask, and nothing can mask
        // `/`: with it, one executor's HOME and TMPDIR, and the set's bundles and state, were
        // open to every other executor and set (a black-box audit, 3 December).
        if scratch == Path::new("/") {
            return Err(Error::InvalidOptions {
                detail: String::from(
                    "scratch_root: / cannot be hidden from the sandboxes (every path lies beneath it); choose a \
                     directory below it",
                ),
            });
        }
        let options = ExecutorSetOptions { scratch_root: scratch.clone(), ..options };
        if profile.config().isolation == Isolation::Sandboxed {
            crate::backend::select_sandboxed()?;
            refuse_writable_scratch(profile, &scratch)?;
        }
        sweep_dead_sets(&scratch, &options);
        // Named by its option: a scratch root where nothing can be made (`/proc`, a read-only
        // mount) is the caller's choice to fix.
        let dir = fsutil::private_dir(&scratch, SET_PREFIX).map_err(|e| match e {
            Error::Io { context, source } => Error::Io { context: format!("scratch_root: {context}"), source },
            e => e,
        })?;
        // Every other sandbox of this user masks this scratch root from now on (class 7).
        if let Err(e) = crate::backend::mask(profile, &dir) {
            let _ = fsutil::remove_tree(&dir);
            return Err(e);
        }
        let lock = match lock_set(&dir) {
            Ok(l) => l,
            Err(e) => {
                let _ = fsutil::remove_tree(&dir);
                crate::backend::unmask(&dir);
                return Err(e);
            }
        };
        let backend = match Backend::open(dl, profile, &options, &dir) {
            Ok(b) => b,
            Err(e) => {
                let _ = fsutil::remove_tree(&dir);
                crate::backend::unmask(&dir);
                return Err(e);
            }
        };
        tracing::debug!(dir = %dir.display(), ?backend, "executor set created");
        Ok(ExecutorSet {
            inner: Arc::new(SetInner {
                profile: profile.clone(),
                pins: options.pins(),
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

    /// Lets go of the executor for `key` when nothing was ever run, prepared or granted with it
    /// and nobody holds it (drop yours first): its HOME and TMPDIR are removed and its place
    /// counts no more against `max_executors`. True when it was let go. For a caller whose
    /// first request for an executor was refused before anything ran (`sandbox serve`: a bad
    /// `cwd` or grant), so that the refusal leaves nothing behind.
    pub fn discard_unused(&self, key: &str) -> bool {
        let executor = {
            let mut state = self.inner.lock();
            let unused = state
                .executors
                .get(key)
                .is_some_and(|e| Arc::strong_count(e) == 1 && !e.used.load(std::sync::atomic::Ordering::SeqCst));
            if !unused {
                return false;
            }
            state.executors.remove(key)
        };
        self.inner.changed.notify_all();
        executor.is_some_and(|e| e.remove_dirs().is_ok())
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
        // The scan's listings, for the next set of this profile (see `keep_scan_memo`).
        #[cfg(target_os = "linux")]
        if let Some(linux) = inner.backend.linux() {
            crate::linux::keep_scan_memo(linux, &inner.profile);
        }
        let result = if drained {
            // Workers still removing their containers finish first; containers whose teardown
            // failed leave state and cgroups: sweep them before the directory that records
            // them goes.
            let t0 = Instant::now();
            let swept = inner.backend.settle(&inner.dir, &inner.options);
            let t1 = t0.elapsed();
            let removed = if swept {
                fsutil::remove_tree(&inner.dir)
            } else {
                // Its state names containers whose cgroups are left: kept (and masked) for the
                // sweep of a later set on this scratch root.
                Err(Error::runtime(format!(
                    "close: the cgroups of a container could not all be removed; {} is kept for a later sweep",
                    inner.dir.display()
                )))
            };
            tracing::debug!(
                settle_us = t1.as_micros(),
                remove_us = (t0.elapsed() - t1).as_micros(),
                "executor set closed"
            );
            // A set directory that could not be removed stays masked until a sweep removes it.
            if removed.is_ok() {
                crate::backend::unmask(&inner.dir);
            }
            removed
        } else {
            // Runs still use the directory: it stays, and a later set sweeps it once we are gone.
            Err(Error::runtime("close: runs did not drain within 60 s"))
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
/// no file of the set directory names what is killed (see `sandbox_linux::backend::sweep_set`).
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
        if !crate::backend::sweep_set(&path, options) {
            // Kept: its state still names the containers whose cgroups are left.
            continue;
        }
        if let Err(e) = fsutil::remove_tree(&path) {
            tracing::warn!(set = %path.display(), "sweep: {e}");
        }
    }
}

/// The caller's HOME: `$HOME`, else the user database's, else `/`.
pub(crate) fn real_home() -> PathBuf {
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    #[cfg(unix)]
    if let Ok(Some(user)) = nix::unistd::User::from_uid(nix::unistd::getuid()) {
        return user.dir;
    }
    PathBuf::from("/")
}
