//! `PreparedProcess` (CONTRACT.md §12): a process that passed every check, started at most once.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use sandbox_bundle::{Access, Error, GrantDeltas};

use crate::Deadline;
#[cfg(target_os = "linux")]
use crate::backend::Spawn;
use crate::process::{Process, ProcessAccess, ProcessAccessKind};
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
                crate::direct::start(&self.argv, &self.cwd, &self.env, self.tty, admitted, closing, None)
            }
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(mac) => {
                let dirs = (self.home_dir.as_deref(), self.temp_dir.as_path());
                let egress = crate::macos::Egress::open(&self.set.profile, &self.deltas, &self.set.pins)?;
                let mut env = self.env.clone();
                env.extend(egress.as_ref().map(|e| e.env()).unwrap_or_default());
                let port = egress.as_ref().map(|e| e.port);
                let wrapped =
                    mac.wrap(&self.set.profile, &self.argv, &self.cwd, &env, dirs, self.deltas.clone(), port)?;
                let set = Arc::clone(&self.set);
                let closing = move || set.closing.load(Ordering::SeqCst);
                let proxy = egress.map(crate::macos::Egress::serve).transpose()?;
                let mut process = crate::direct::start(&wrapped, &self.cwd, &env, false, admitted, closing, proxy)?;
                process.containment = crate::process::LifetimeContainment::BestEffort;
                Ok(process)
            }
            #[cfg(target_os = "linux")]
            Backend::Linux(linux) => {
                let dirs = (self.home_dir.as_deref(), self.temp_dir.as_path());
                let spawn = Spawn {
                    argv: &self.argv,
                    cwd: &self.cwd,
                    env: &self.env,
                    dirs,
                    deltas: self.deltas.clone(),
                    pins: &self.set.pins,
                };
                crate::linux::start(linux, &self.set, dl, spawn, self.tty, admitted)
            }
        }
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
