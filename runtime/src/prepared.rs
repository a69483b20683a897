//! `PreparedProcess` (CONTRACT.md §12): a process that passed every check, started at most once.

// The Linux backend uses every item here; other targets compile a subset.
#![cfg_attr(not(target_os = "linux"), allow(unused))]

use std::ffi::OsString;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use sandbox_bundle::{Access, Error, GrantDeltas};

use crate::Deadline;
use crate::process::{
    LifetimeContainment, Process, ProcessAccess, ProcessAccessKind, ProcessReader, ProcessResult, ProcessStdin,
};
use crate::set::{Admitted, Backend, SetInner};

/// Whether a prepared process may still start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prepared {
    Ready,
    Started,
    Closed,
}

/// A process that passed every check and may be started once.
#[derive(Debug)]
pub struct PreparedProcess {
    pub(crate) set: Arc<SetInner>,
    pub(crate) argv: Vec<OsString>,
    pub(crate) cwd: PathBuf,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) home_dir: Option<PathBuf>,
    pub(crate) temp_dir: PathBuf,
    pub(crate) tty: bool,
    pub(crate) deltas: GrantDeltas,
    pub(crate) state: Mutex<Prepared>,
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
            Backend::Linux(linux) => self.start_linux(linux, dl, admitted),
        }
    }

    #[cfg(target_os = "linux")]
    fn start_linux(
        &self,
        linux: &crate::linux::LinuxBackend,
        dl: &Deadline,
        admitted: Admitted,
    ) -> Result<Process, Error> {
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
        let dirs = (self.home_dir.as_deref(), self.temp_dir.as_path());
        let mut input = crate::linux::spawn_input(&self.argv, self.cwd.clone(), &self.env, dirs)?;
        input.tty = self.tty;
        input.grants = self.deltas.clone();
        let started_at = SystemTime::now();
        let mut launched = linux.launch(dl, &self.set.profile, &input, stdio.0, stdio.1, stdio.2, true)?;
        let master = if self.tty {
            match launched.take_console() {
                Ok(m) => Some(m),
                Err(e) => {
                    let _ = launched.kill();
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
        let signaller: Arc<dyn crate::process::Signaller> = Arc::new(LinuxSignaller(launched.signal_handle()));
        let set = Arc::clone(&self.set);
        let out = Arc::clone(&outcome);
        std::thread::Builder::new()
            .name(String::from("sandbox-supervisor"))
            .spawn(move || {
                let Some(linux) = set.backend.linux() else { return };
                let result = match linux.finish(launched, &set.closing, None, false) {
                    Ok(f) if f.closed => Err(Error::ExecutorClosed { partial: Vec::new() }),
                    Ok(f) => match f.status {
                        Ok(status) => {
                            Ok(ProcessResult { status: status.into(), started_at, finished_at: SystemTime::now() })
                        }
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
