//! Asynchronous processes (CONTRACT.md §12): `prepare_process` checks and consumes authority
//! and spawns nothing; `start` spawns once; a supervisor reaps and proves teardown whether or
//! not anyone waits.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::output::ExitStatus;
use crate::{Deadline, Error};

/// What to run: a shell `command` or an `argv`, never both.
#[derive(Clone, Debug, Default)]
pub struct ProcessOptions {
    /// The working directory.
    pub cwd: PathBuf,
    /// Run through `/bin/sh -c`.
    pub command: String,
    /// Run without a shell.
    pub argv: Vec<OsString>,
    /// The execution id grants are bound to.
    pub execution_id: String,
    /// Grant tokens for this spawn.
    pub grants: Vec<String>,
    /// Give the process a PTY.
    pub tty: bool,
}

/// A signal for the whole process tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT.
    Interrupt,
    /// SIGTERM, then one SIGKILL after the grace period (zero means 5 s) if still alive.
    Terminate(Duration),
    /// SIGKILL.
    Kill,
}

impl Signal {
    /// The ABI code: 1, 2, 3.
    pub fn code(&self) -> u8 {
        match self {
            Signal::Interrupt => 1,
            Signal::Terminate(_) => 2,
            Signal::Kill => 3,
        }
    }
}

/// How the process's stdio is connected.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamMode {
    /// Separate stdout and stderr pipes.
    Pipes = 1,
    /// One PTY.
    Pty = 2,
}

/// Whether every descendant is gone once the process is finished.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LifetimeContainment {
    /// No claim.
    Unspecified = 0,
    /// Enforced (Linux: the pid namespace).
    Enforced = 1,
    /// Best effort (macOS).
    BestEffort = 2,
}

impl fmt::Display for LifetimeContainment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LifetimeContainment::Unspecified => "unspecified",
            LifetimeContainment::Enforced => "enforced",
            LifetimeContainment::BestEffort => "best-effort",
        })
    }
}

/// What a process did (v1 has no producer).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProcessActivityKind {
    /// A write.
    Write = 1,
    /// A write anywhere.
    BroadWrite = 2,
}

impl ProcessActivityKind {
    /// Maps a code; unknown codes are `BroadWrite`.
    pub fn from_code(code: u8) -> Self {
        if code == 1 { ProcessActivityKind::Write } else { ProcessActivityKind::BroadWrite }
    }
}

/// One activity record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessActivity {
    /// What kind.
    pub kind: ProcessActivityKind,
    /// Where.
    pub path: PathBuf,
}

/// Where a spawn may write, for change tracking.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProcessAccessKind {
    /// Nowhere (HOME and TMPDIR aside).
    ReadOnly = 1,
    /// Only the listed paths and trees.
    ScopedWrite = 2,
    /// Anywhere writable in the host or the workspace.
    BroadWrite = 3,
}

/// [`crate::PreparedProcess::effective_access`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessAccess {
    pub(crate) kind: ProcessAccessKind,
    pub(crate) write_paths: Vec<PathBuf>,
    pub(crate) write_trees: Vec<PathBuf>,
}

impl ProcessAccess {
    /// The kind.
    pub fn kind(&self) -> ProcessAccessKind {
        self.kind
    }

    /// Path-write grant targets.
    pub fn write_paths(&self) -> &[PathBuf] {
        &self.write_paths
    }

    /// Tree-write grant targets and roots with write `Allow`.
    pub fn write_trees(&self) -> &[PathBuf] {
        &self.write_trees
    }
}

/// The outcome of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessResult {
    /// How it ended.
    pub status: ExitStatus,
    /// When it was started.
    pub started_at: SystemTime,
    /// When it was reaped.
    pub finished_at: SystemTime,
    /// Every request the egress proxy refused during the run, in order (see
    /// [`crate::Output::denials`]).
    pub denials: Vec<crate::NetworkDenial>,
}

/// A readable stream of the process (stdout or stderr). Dropping it drains the stream in the
/// background, so the process never blocks on it.
#[derive(Debug)]
pub struct ProcessReader {
    file: Option<File>,
}

impl ProcessReader {
    pub(crate) fn new(file: File) -> Self {
        ProcessReader { file: Some(file) }
    }
}

impl Read for ProcessReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.file {
            Some(f) => f.read(buf),
            None => Ok(0),
        }
    }
}

impl Drop for ProcessReader {
    fn drop(&mut self) {
        if let Some(mut f) = self.file.take() {
            let _ = std::thread::Builder::new().name(String::from("sandbox-drain")).spawn(move || {
                let _ = io::copy(&mut f, &mut io::sink());
            });
        }
    }
}

/// The process's stdin: writes from several threads, an idempotent `close` that delivers EOF.
#[derive(Clone, Debug)]
pub struct ProcessStdin {
    inner: Arc<Mutex<Option<File>>>,
    /// PTY mode: `close` writes this byte (VEOF) once instead of closing the terminal.
    eof: Option<u8>,
}

impl ProcessStdin {
    pub(crate) fn new(file: Option<File>) -> Self {
        ProcessStdin { inner: Arc::new(Mutex::new(file)), eof: None }
    }

    /// Writes all of `buf`; after `close` fails with [`Error::ProcessStdinClosed`] (wrapped in
    /// an `io::Error`).
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        // The write happens outside the lock, on a duplicate: a blocked write never blocks
        // `close` (which then returns at once; EOF reaches the process when the write ends).
        let file = {
            let guard = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match guard.as_ref() {
                Some(f) => f.try_clone()?,
                None => return Err(io::Error::other(Error::ProcessStdinClosed)),
            }
        };
        (&file).write_all(buf).map(|()| buf.len())
    }

    /// Closes stdin (EOF for the process; in PTY mode one VEOF, 0x04, without a hang-up);
    /// idempotent.
    pub fn close(&self) {
        let taken = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let (Some(mut f), Some(eof)) = (taken, self.eof) {
            let _ = f.write_all(&[eof]);
        }
    }
}

impl Write for ProcessStdin {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        ProcessStdin::write(self, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// How the supervisor delivers signals to the process tree.
pub(crate) trait Signaller: Send + Sync + fmt::Debug {
    /// Sends `sig` to the whole tree.
    fn send(&self, sig: nix::sys::signal::Signal);
}

/// The cached outcome, shared between the supervisor and every waiter.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub result: Mutex<Option<Result<ProcessResult, Error>>>,
    pub changed: Condvar,
}

impl Outcome {
    pub(crate) fn set(&self, r: Result<ProcessResult, Error>) {
        *self.result.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(r);
        self.changed.notify_all();
    }

    fn finished(&self) -> bool {
        self.result.lock().unwrap_or_else(std::sync::PoisonError::into_inner).is_some()
    }
}

/// A started process.
#[derive(Debug)]
pub struct Process {
    pub(crate) stdout: Mutex<Option<ProcessReader>>,
    pub(crate) stderr: Mutex<Option<ProcessReader>>,
    pub(crate) stdin: ProcessStdin,
    pub(crate) containment: LifetimeContainment,
    pub(crate) activities: Mutex<Option<Receiver<ProcessActivity>>>,
    pub(crate) outcome: Arc<Outcome>,
    pub(crate) signaller: Arc<dyn Signaller>,
    pub(crate) killed: Arc<AtomicBool>,
    /// The PTY master in PTY mode.
    pub(crate) pty: Option<Arc<std::os::fd::OwnedFd>>,
}

impl Process {
    /// stdout, exactly once.
    pub fn take_stdout(&self) -> Option<ProcessReader> {
        self.stdout.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// stderr, exactly once.
    pub fn take_stderr(&self) -> Option<ProcessReader> {
        self.stderr.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// stdin.
    pub fn stdin(&self) -> ProcessStdin {
        self.stdin.clone()
    }

    /// Pipes, or one PTY.
    pub fn stream_mode(&self) -> StreamMode {
        if self.pty.is_some() { StreamMode::Pty } else { StreamMode::Pipes }
    }

    /// What the backend guarantees about descendants.
    pub fn lifetime_containment(&self) -> LifetimeContainment {
        self.containment
    }

    /// The activity stream, exactly once (v1: never yields, disconnected).
    pub fn take_activities(&self) -> Option<Receiver<ProcessActivity>> {
        self.activities.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// Waits for the outcome (cached: every caller gets the same). A done deadline ends only
    /// this caller's wait and kills nothing.
    pub fn wait(&self, dl: &Deadline) -> Result<ProcessResult, Error> {
        let mut guard = self.outcome.result.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if let Some(r) = guard.as_ref() {
                return r.clone();
            }
            dl.check(&[])?;
            let wait = dl.instant().map_or(Duration::from_millis(100), |t| {
                t.saturating_duration_since(Instant::now()).min(Duration::from_millis(100))
            });
            guard = self.outcome.changed.wait_timeout(guard, wait).unwrap_or_else(std::sync::PoisonError::into_inner).0;
        }
    }

    /// Signals the whole tree (CONTRACT.md §12). After the outcome is known it is a no-op.
    pub fn signal(&self, dl: &Deadline, s: Signal) -> Result<(), Error> {
        dl.check(&[])?;
        if self.outcome.finished() {
            return Ok(());
        }
        use nix::sys::signal::Signal as Sig;
        match s {
            Signal::Interrupt => self.signaller.send(Sig::SIGINT),
            Signal::Kill => {
                if !self.killed.swap(true, Ordering::SeqCst) {
                    self.signaller.send(Sig::SIGKILL);
                }
            }
            Signal::Terminate(grace) => {
                self.signaller.send(Sig::SIGTERM);
                let grace = if grace.is_zero() { Duration::from_secs(5) } else { grace };
                let (outcome, signaller, killed) =
                    (Arc::clone(&self.outcome), Arc::clone(&self.signaller), Arc::clone(&self.killed));
                let _ = std::thread::Builder::new().name(String::from("sandbox-terminate")).spawn(move || {
                    let end = Instant::now() + grace;
                    let mut guard = outcome.result.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    while guard.is_none() && Instant::now() < end {
                        guard = outcome
                            .changed
                            .wait_timeout(guard, end.saturating_duration_since(Instant::now()))
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .0;
                    }
                    if guard.is_none() && !killed.swap(true, Ordering::SeqCst) {
                        signaller.send(Sig::SIGKILL);
                    }
                });
            }
        }
        Ok(())
    }

    /// Sets the PTY's window size; pipe-mode processes fail with
    /// [`Error::ProcessResizeUnsupported`].
    pub fn resize(&self, dl: &Deadline, rows: u16, cols: u16) -> Result<(), Error> {
        dl.check(&[])?;
        let Some(master) = &self.pty else { return Err(Error::ProcessResizeUnsupported) };
        set_winsize(master, rows, cols)
    }

    /// Closes the caller's stream ends (readers drained in the background, stdin closed); sends
    /// no signal, except that in PTY mode closing the terminal hangs it up (SIGHUP).
    pub fn close(&self, dl: &Deadline) -> Result<(), Error> {
        dl.check(&[])?;
        drop(self.take_stdout());
        drop(self.take_stderr());
        if self.pty.is_some() {
            if !self.outcome.finished() {
                self.signaller.send(nix::sys::signal::Signal::SIGHUP);
            }
            self.stdin.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        } else {
            self.stdin.close();
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn set_winsize(master: &std::os::fd::OwnedFd, rows: u16, cols: u16) -> Result<(), Error> {
    use std::os::fd::AsFd;
    sandbox_linux::set_winsize(master.as_fd(), rows, cols).map_err(|e| Error::io("setting the window size", e))
}

#[cfg(not(target_os = "linux"))]
fn set_winsize(_: &std::os::fd::OwnedFd, _: u16, _: u16) -> Result<(), Error> {
    Err(Error::ProcessResizeUnsupported)
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
/// The streams of a PTY-mode process: stdout fed by an internal pump from the master (so
/// nothing written before exit is lost; EIO reads as EOF), stderr at EOF at once, stdin writing
/// to the master with VEOF on close.
pub(crate) fn pty_streams(
    master: &std::os::fd::OwnedFd,
) -> Result<(ProcessReader, ProcessReader, ProcessStdin), Error> {
    let dup = |what: &str| master.try_clone().map_err(|e| Error::io(format!("duplicating the pty master ({what})"), e));
    let mut reader = File::from(dup("reader")?);
    let (out_r, out_w) = crate::output::pipe()?;
    let mut out_w = File::from(out_w);
    std::thread::Builder::new()
        .name(String::from("sandbox-pty-pump"))
        .spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if out_w.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break, // EIO: the terminal's last user is gone
                }
            }
        })
        .map_err(|e| Error::io("starting the pty pump", e))?;
    let (err_r, err_w) = crate::output::pipe()?;
    drop(err_w);
    let stdin = ProcessStdin { inner: Arc::new(Mutex::new(Some(File::from(dup("stdin")?)))), eof: Some(0x04) };
    Ok((ProcessReader::new(File::from(out_r)), ProcessReader::new(File::from(err_r)), stdin))
}
