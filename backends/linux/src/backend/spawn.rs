//! One spawn through a helper: the fresh launch, its phases, and the waits for its start and
//! its end.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sandbox_bundle::{Bundle, Error, Profile, write_bundle_on};

use crate::protocol::{Event, Measured, Outcome, Request, monotonic_us};
use crate::{Running, SignalHandle, WaitError};

use super::probe::Measurement;
use super::warm::shape_key;
use super::{Deadline, LinuxBackend, SpawnInput, check_identities};

impl LinuxBackend {
    /// Compiles and writes the spawn's bundle and starts a fresh helper with the given stdio
    /// (`warm`: a container that waits for its process).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch_fresh(
        &self,
        dl: &dyn Deadline,
        profile: &Profile,
        input: &SpawnInput<'_>,
        [stdin, stdout, stderr]: [OwnedFd; 3],
        require: bool,
        warm: bool,
        compiled: Option<(String, Bundle)>,
    ) -> Result<Launched, Error> {
        dl.check()?;
        // A caller waits for this container: the grace period of its move into a cgroup starts
        // now, and is kept passed until its process has started (`wait_started`).
        let keeper = if warm { None } else { crate::cgroups::hold_attach_cheap(self.layout, self.cgroups.parent()) };
        if compiled.is_none() {
            // (A compiled bundle comes from `launch`, which has just checked.)
            check_identities(profile)?;
        }
        let t0 = monotonic_us();
        let (id, bundle) = match compiled {
            Some(c) => c,
            None => {
                let id = self.next_id();
                let bundle = self.compile(profile, input, &id)?;
                (id, bundle)
            }
        };
        let key = if warm { Some(shape_key(&bundle)?) } else { None };
        let t1 = monotonic_us();
        let dir = self.bundles.join(&id);
        let rootfs = self.skeleton(&bundle)?;
        write_bundle_on(&bundle, &dir, &rootfs)?;
        let t2 = monotonic_us();
        let request = self.request(&id, &dir, &bundle, input.tty, require, warm);
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
                key: None,
                in_flight: None,
                keeper,
                marks: vec![("launch", t0), ("compiled", t1), ("written", t2), ("helper-spawned", monotonic_us())],
            }),
            Err(e) => {
                let _ = (self.remove_tree)(&dir);
                dl.check()?;
                Err(Error::runtime_with("starting the helper", e))
            }
        }
    }

    /// Waits until the container exists and runs; a container that could not be created (or a
    /// setup step that failed before start) is `Runtime`, with everything torn down.
    pub fn wait_started(&self, launched: &mut Launched, dl: &dyn Deadline, closing: &AtomicBool) -> Result<(), Error> {
        // Past its cgroup move, whatever this returns: the keeper's window may end.
        let _keeper = launched.keeper.take();
        match launched.phase {
            Phase::Started | Phase::Finished(_) => return Ok(()),
            Phase::Lost => {
                return Err(self.abandon(launched, "the warm container's helper failed after it got its process"));
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
                dl.check().map_err(Halt::Deadline)?;
                Ok(Some(limit))
            },
            |event| match event {
                Event::Started { .. } => Some(Phase::Started),
                Event::Finished { outcome, measured, teardown } => Some(Phase::Finished((outcome, measured, teardown))),
                // Only after `Started`; the container is not kept then (its helper tears it down
                // once this spawn lets it go).
                Event::Kept { outcome, measured } => Some(Phase::Finished((outcome, measured, true))),
                Event::Ready => None,
            },
        );
        let why = match started {
            Ok(phase) => {
                if matches!(phase, Phase::Started) {
                    launched.marks.push(("started-event", monotonic_us()));
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
        Err(self.abandon(launched, &why))
    }

    /// Kills a helper that failed or hangs (its container dies with it: parent-death signal)
    /// and sweeps what it left. Returns the error: `Runtime`, with a failed sweep as its clean-up
    /// failure.
    pub fn abandon(&self, launched: &mut Launched, why: &str) -> Error {
        launched.running.kill_helper();
        let swept = self.sweep_leftovers(&launched.id);
        let _ = (self.remove_tree)(&launched.dir);
        super::sweep::after_sweep(format!("helper failed: {why}"), swept)
    }

    /// Waits for the end of the spawn and its proven teardown. While `closing` is unset it
    /// waits as long as the workload runs; once a kill was sent (by the caller or because the
    /// set closes) it waits at most 5 s more, then abandons the helper.
    pub fn finish(
        &self,
        mut launched: Launched,
        closing: &AtomicBool,
        dl: Option<&dyn Deadline>,
        mut killed: bool,
    ) -> Result<Finish, Error> {
        let mut kill_deadline = killed.then(|| Instant::now() + Duration::from_secs(5));
        let mut closed = false;
        let mut expired = None;
        // An end that arrived before the start was already read (the phase is not read again).
        let result = match std::mem::replace(&mut launched.phase, Phase::Started) {
            Phase::Finished((outcome, measured, teardown)) => Ok((outcome, measured, teardown, false)),
            _ => wait_event(
                &mut launched.running,
                |running| {
                    // The run's deadline still holds after its output ended (a workload may close
                    // its stdout and keep running).
                    let done = dl.and_then(|d| d.check().err());
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
                    Event::Finished { outcome, measured, teardown } => Some((outcome, measured, teardown, false)),
                    Event::Kept { outcome, measured } => Some((outcome, measured, true, true)),
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
        launched.marks.push(("finished-event", monotonic_us()));
        let (outcome, measured, teardown, kept) = match result {
            Ok(f) => f,
            Err(e) => {
                self.release_warm();
                return Err(self.abandon(&mut launched, &e));
            }
        };
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
        if kept && !killed {
            // Its run is over (every process of it gone); the container waits for the next
            // run of its shape (issue 16). Returned before the warm builds are let go, so that
            // a build it makes unnecessary never starts.
            self.keep(launched);
            self.release_warm();
            let status = match outcome {
                Outcome::Exited { code } => Ok(ExitStatus::Code(code)),
                Outcome::Signalled { signal } => Ok(ExitStatus::Signal(signal)),
                Outcome::Failed { detail } => Err(detail),
            };
            return Ok(Finish { status, measured: Measurement(measured), closed, expired });
        }
        self.release_warm();
        if !teardown || launched.running.pid.is_none() {
            // Otherwise the worker removes the bundle after its container.
            let _ = (self.remove_tree)(&launched.dir);
        }
        launched.marks.push(("bundle-removed", monotonic_us()));
        if !teardown {
            // Not proven by the helper: sweep the container's cgroup and state now.
            let swept = self.sweep_leftovers(&launched.id);
            return Err(super::sweep::after_sweep(
                String::from("teardown unproven: the container was not deleted"),
                swept,
            ));
        }
        let status = match outcome {
            Outcome::Exited { code } => Ok(ExitStatus::Code(code)),
            Outcome::Signalled { signal } => Ok(ExitStatus::Signal(signal)),
            Outcome::Failed { detail } => Err(detail),
        };
        Ok(Finish { status, measured: Measurement(measured), closed, expired })
    }
}

/// A spawn whose helper runs.
#[derive(Debug)]
pub struct Launched {
    pub(super) running: Running,
    id: String,
    pub(super) dir: PathBuf,
    pub(super) phase: Phase,
    pub(super) marks: Vec<(&'static str, u64)>,
    /// The shape of a warm container that ran a spawn: it may be kept for the next (issue 16).
    pub(super) key: Option<String>,
    /// That run, counted while it lasts (it may bring its container back).
    pub(super) in_flight: Option<super::warm::InFlight>,
    /// Keeps cgroup moves cheap while this cold container is built (dropped once its process
    /// started: `wait_started`).
    pub(super) keeper: Option<crate::cgroups::KeepGuard>,
}

/// Where a launched spawn's container is.
#[derive(Debug)]
pub(super) enum Phase {
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
pub(super) type Ended = (Outcome, Measured, bool);

impl Launched {
    /// The helper reported the end before the container started (it was never created).
    pub fn ended_early(&self) -> bool {
        matches!(self.phase, Phase::Finished(_))
    }

    /// Whether the helper still runs.
    pub fn helper_alive(&mut self) -> bool {
        self.running.helper_alive()
    }

    /// Sends SIGKILL to the container's process.
    pub fn kill(&mut self) -> std::io::Result<()> {
        self.running.signal(libc_sigkill())
    }

    /// A handle that signals the container's process from another thread.
    pub fn signal_handle(&self) -> SignalHandle {
        self.running.signal_handle()
    }

    /// The master of the container's terminal (PTY mode), taken once.
    pub fn take_console(&mut self) -> std::io::Result<OwnedFd> {
        self.running.take_console()
    }

    /// The egress proxy's listener in the container's network namespace (issue 17), taken once
    /// the container started (after [`LinuxBackend::wait_started`]): None when the spawn has
    /// no proxy or its listener could not be made (only a probe runs on without it).
    pub fn take_proxy_listener(&mut self) -> std::io::Result<Option<OwnedFd>> {
        self.running.take_proxy_listener()
    }

    /// A pending warm container's shape.
    pub(super) fn shape(&self) -> Option<&str> {
        match &self.phase {
            Phase::Pending { shape, .. } => Some(shape),
            _ => None,
        }
    }

    /// A warm container's request, not yet sent: taken once (the helper then builds).
    pub(super) fn take_request(&mut self) -> Option<Box<Request>> {
        if !matches!(self.phase, Phase::Pending { .. }) {
            return None;
        }
        match std::mem::replace(&mut self.phase, Phase::Building) {
            Phase::Pending { request, .. } => Some(request),
            _ => None,
        }
    }
}

/// Why [`wait_event`] ended without an event its caller took.
#[derive(Debug)]
pub(super) enum NoEvent<S> {
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
pub(super) fn wait_event<T, S>(
    running: &mut Running,
    mut check: impl FnMut(&mut Running) -> Result<Option<Instant>, S>,
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

/// How a container's process ended: its exit code, or the signal that ended it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// Exited with this code.
    Code(i32),
    /// Ended by this signal.
    Signal(i32),
}

/// The end of a spawn.
#[derive(Debug)]
pub struct Finish {
    /// The status, or the setup failure's detail.
    pub status: Result<ExitStatus, String>,
    /// What the helper measured.
    pub measured: Measurement,
    /// The set's close killed it.
    pub closed: bool,
    /// The deadline killed it after its output had ended.
    pub expired: Option<Error>,
}

/// The error for a spawn whose container failed before exec: a grant target that the init
/// found swapped after it was verified is `GrantTargetChanged`, anything else `Runtime`.
pub fn setup_failed(detail: String) -> Error {
    if detail.starts_with("helper: identities: grant target") {
        Error::GrantTargetChanged { detail }
    } else {
        Error::runtime(detail)
    }
}

fn libc_sigkill() -> i32 {
    nix::sys::signal::Signal::SIGKILL as i32
}
