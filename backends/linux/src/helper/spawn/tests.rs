//! The spawn state machine driven through a recording [`Host`] double: no root, no container,
//! no process. The double keeps a small fake cgroup file system (a write sets what a read
//! returns; a SIGKILL removes the pid from every `cgroup.procs`), replays the init's status
//! pipe and the embedder's commands from a script, and records every side effect in order.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, VecDeque};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use libcontainer::error::LibcontainerError;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::{SetupError, drive};
use crate::helper::GoMessage;
use crate::helper::host::Host;
use crate::protocol::{Command, Event, LandlockStatus, Limit, Measured, Outcome, Request};
use crate::status::{Failure, Stage};

const INIT: i32 = 4242;

/// One side effect, as the double saw it (polls and reads are not effects and are not kept).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    ForwardPty,
    Write(PathBuf, String),
    Read(PathBuf),
    Start,
    CloseStatus,
    Loopback { pid: i32, rootless: bool },
    Proxy { pid: i32, rootless: bool, port: u16 },
    Inotify { pid: i32, instances: u64, watches: u64 },
    Mounts { pid: i32, pins: usize, devices: usize },
    StillWanted,
    WaitForGo,
    SendGo { payload: Vec<u8>, fds: usize },
    Ready,
    Started(i32),
    Finished { outcome: Outcome, teardown: bool },
    Kept { outcome: Outcome },
    HangUp,
    Kill(i32, Signal),
    EndRun(i32),
    Reap(i32),
    Delete,
    RemoveBundle(PathBuf),
}

/// The recording double, with its script.
#[derive(Debug)]
struct Recorder {
    calls: Vec<Call>,
    /// The fake cgroup file system: what each file reads.
    files: BTreeMap<PathBuf, String>,
    /// Files whose writes fail (EACCES).
    unwritable: Vec<PathBuf>,
    pty: Result<(), String>,
    start_fails: bool,
    /// What the init writes to its status pipe, chunk by chunk; then the pipe ends.
    status: VecDeque<Vec<u8>>,
    loopback: Result<(), String>,
    inotify: Result<(), String>,
    /// The mount fixes' outcome.
    mounts: Result<(), String>,
    wanted: bool,
    /// A warm container's process (its payload and stdio); None: let go unused.
    go: std::io::Result<Option<GoMessage>>,
    /// The embedder's commands during the run (None: its end); nothing more is ever readable.
    control: VecDeque<Option<Command>>,
    /// The embedder is gone: every send fails.
    embedder_gone: bool,
    reaped: bool,
    delete_fails: bool,
    /// What the last `Finished` carried.
    measured: Option<Measured>,
}

impl Recorder {
    fn new() -> Recorder {
        Recorder {
            calls: Vec::new(),
            files: BTreeMap::new(),
            unwritable: Vec::new(),
            pty: Ok(()),
            start_fails: false,
            status: VecDeque::from([b"ready\n".to_vec(), b"setup landlock=full abi=4 seccomp=2\nexited 0\n".to_vec()]),
            loopback: Ok(()),
            inotify: Ok(()),
            mounts: Ok(()),
            wanted: true,
            go: Ok(None),
            control: VecDeque::new(),
            embedder_gone: false,
            reaped: true,
            delete_fails: false,
            measured: None,
        }
    }

    /// The calls from the container's start on.
    fn since_start(&self) -> Vec<Call> {
        self.calls.iter().skip_while(|c| !matches!(c, Call::Started(_))).cloned().collect()
    }

    fn count(&self, call: &Call) -> usize {
        self.calls.iter().filter(|c| *c == call).count()
    }

    fn phases(&self) -> Vec<String> {
        self.measured.as_ref().unwrap().phases.iter().map(|(name, _)| name.clone()).collect()
    }

    /// The one answer the embedder got.
    fn finished(&self) -> (Outcome, bool) {
        let answers: Vec<_> = self
            .calls
            .iter()
            .filter_map(|c| match c {
                Call::Finished { outcome, teardown } => Some((outcome.clone(), *teardown)),
                _ => None,
            })
            .collect();
        assert_eq!(answers.len(), 1, "exactly one Finished: {:?}", self.calls);
        answers.into_iter().next().unwrap()
    }
}

impl Host for Recorder {
    fn forward_pty(&mut self) -> Result<(), String> {
        self.calls.push(Call::ForwardPty);
        self.pty.clone()
    }

    fn write_cgroup(&mut self, file: &Path, value: &str) -> std::io::Result<()> {
        self.calls.push(Call::Write(file.to_owned(), value.to_owned()));
        if self.unwritable.iter().any(|f| f == file) {
            return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        }
        self.files.insert(file.to_owned(), format!("{value}\n"));
        Ok(())
    }

    fn read_cgroup(&mut self, file: &Path) -> std::io::Result<String> {
        self.calls.push(Call::Read(file.to_owned()));
        self.files.get(file).cloned().ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    }

    fn start_container(&mut self) -> Result<(), LibcontainerError> {
        self.calls.push(Call::Start);
        if self.start_fails { Err(LibcontainerError::InvalidInput(String::from("no"))) } else { Ok(()) }
    }

    fn poll_status(&mut self, _ms: u16) -> nix::Result<i32> {
        Ok(1)
    }

    fn read_status(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(chunk) = self.status.pop_front() else { return Ok(0) };
        assert!(chunk.len() <= buf.len());
        buf[..chunk.len()].copy_from_slice(&chunk);
        Ok(chunk.len())
    }

    fn close_status(&mut self) {
        self.calls.push(Call::CloseStatus);
    }

    fn raise_loopback(&mut self, pid: Pid, rootless: bool) -> Result<(), String> {
        self.calls.push(Call::Loopback { pid: pid.as_raw(), rootless });
        self.loopback.clone()
    }

    fn open_proxy(&mut self, pid: Pid, rootless: bool, port: u16) -> Result<(), String> {
        self.calls.push(Call::Proxy { pid: pid.as_raw(), rootless, port });
        Ok(())
    }

    fn in_user_namespace(
        &mut self,
        pid: Pid,
        inotify: Option<(u64, u64)>,
        fixes: &crate::protocol::MountFixes,
    ) -> (Result<(), String>, Result<(), String>) {
        let bound = inotify.map_or(Ok(()), |(instances, watches)| {
            self.calls.push(Call::Inotify { pid: pid.as_raw(), instances, watches });
            self.inotify.clone()
        });
        if !fixes.is_empty() {
            self.calls.push(Call::Mounts { pid: pid.as_raw(), pins: fixes.pins.len(), devices: fixes.devices.len() });
        }
        (bound, self.mounts.clone())
    }

    fn still_wanted(&mut self) -> bool {
        self.calls.push(Call::StillWanted);
        self.wanted
    }

    fn wait_for_go(&mut self, _keep: bool) -> std::io::Result<Option<GoMessage>> {
        self.calls.push(Call::WaitForGo);
        self.send(&Event::Ready)?;
        std::mem::replace(&mut self.go, Ok(None))
    }

    fn send_go(&mut self, (payload, stdio): GoMessage) {
        self.calls.push(Call::SendGo { payload, fds: stdio.len() });
    }

    fn send(&mut self, event: &Event) -> std::io::Result<()> {
        self.calls.push(match event {
            Event::Ready => Call::Ready,
            Event::Started { pid } => Call::Started(*pid),
            Event::Finished { outcome, measured, teardown } => {
                self.measured = Some(measured.clone());
                Call::Finished { outcome: outcome.clone(), teardown: *teardown }
            }
            Event::Kept { outcome, measured } => {
                self.measured = Some(measured.clone());
                Call::Kept { outcome: outcome.clone() }
            }
        });
        if self.embedder_gone { Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe)) } else { Ok(()) }
    }

    fn poll_run(&mut self, control: bool, _ms: Option<u16>) -> nix::Result<(bool, bool)> {
        // The status pipe is always readable (a chunk, or its end), and so is the control
        // socket while a command (or its end) is scripted.
        Ok((true, control && !self.control.is_empty()))
    }

    fn read_control(&mut self, line: &mut String) -> std::io::Result<usize> {
        match self.control.pop_front().flatten() {
            Some(command) => {
                line.push_str(&serde_json::to_string(&command).unwrap());
                line.push('\n');
                Ok(line.len())
            }
            None => Ok(0),
        }
    }

    fn hang_up(&mut self) {
        self.calls.push(Call::HangUp);
    }

    fn end_run(&mut self, pid: Pid) -> std::io::Result<()> {
        self.calls.push(Call::EndRun(pid.as_raw()));
        Ok(())
    }

    fn kill(&mut self, pid: Pid, signal: Signal) -> nix::Result<()> {
        self.calls.push(Call::Kill(pid.as_raw(), signal));
        if signal == Signal::SIGKILL {
            let gone = pid.as_raw().to_string();
            for (file, text) in &mut self.files {
                if file.ends_with("cgroup.procs") {
                    *text = text.lines().filter(|l| *l != gone).map(|l| format!("{l}\n")).collect();
                }
            }
        }
        Ok(())
    }

    fn reap(&mut self, pid: Pid) -> bool {
        self.calls.push(Call::Reap(pid.as_raw()));
        if self.reaped {
            // A reaped init has left its cgroup.
            let gone = pid.as_raw().to_string();
            for (file, text) in &mut self.files {
                if file.ends_with("cgroup.procs") {
                    *text = text.lines().filter(|l| *l != gone).map(|l| format!("{l}\n")).collect();
                }
            }
        }
        self.reaped
    }

    fn delete_container(&mut self) -> Result<(), String> {
        self.calls.push(Call::Delete);
        if self.delete_fails { Err(String::from("busy")) } else { Ok(()) }
    }

    fn remove_bundle(&mut self, bundle: &Path) -> std::io::Result<()> {
        self.calls.push(Call::RemoveBundle(bundle.to_owned()));
        Ok(())
    }
}

fn request() -> Request {
    Request {
        bundle: PathBuf::from("/fake/bundle"),
        id: String::from("c1"),
        state_root: PathBuf::from("/fake/state"),
        rootless: true,
        loopback: false,
        require_loopback: false,
        proxy_port: None,
        require_proxy: false,
        require_landlock: true,
        require_seccomp: true,
        limits: Vec::new(),
        require_limits: false,
        procs: None,
        cgroup_path: None,
        cgroupless: false,
        inotify: None,
        mount_fixes: crate::protocol::MountFixes::default(),
        tty: false,
        warm: false,
    }
}

const PIDS: &str = "/fake/cg/pids.max";
const MEMORY: &str = "/fake/cg/memory.max";
const PROCS: &str = "/fake/cg/cgroup.procs";

/// A request with two limits (`pids.max` written by the helper, `memory.max` by the runtime),
/// all of them required, `lo` and the inotify bound asked for.
fn limited() -> Request {
    Request {
        loopback: true,
        require_loopback: true,
        limits: vec![
            Limit { file: PathBuf::from(PIDS), value: 64, write: true },
            Limit { file: PathBuf::from(MEMORY), value: 1 << 20, write: false },
        ],
        require_limits: true,
        procs: Some(PathBuf::from(PROCS)),
        inotify: Some((16, 1024)),
        ..request()
    }
}

/// A double whose cgroup holds the runtime's memory limit and no process.
fn cgroup() -> Recorder {
    let mut host = Recorder::new();
    host.files.insert(PathBuf::from(MEMORY), String::from("1048576\n"));
    host.files.insert(PathBuf::from(PROCS), String::new());
    host
}

fn run(host: &mut Recorder, request: &Request) -> std::io::Result<()> {
    drive(host, request, Pid::from_raw(INIT), Measured::default())
}

/// The single failure path, after `calls_before`: the init is killed once, reaped, its
/// container deleted once, and the embedder told once.
fn assert_failed_once(host: &Recorder, request: &Request, calls_before: &[Call], detail: &str) {
    let mut expected = calls_before.to_vec();
    expected.extend([Call::Kill(INIT, Signal::SIGKILL), Call::Reap(INIT), Call::Delete]);
    if request.warm {
        expected.push(Call::RemoveBundle(request.bundle.clone()));
    }
    expected.push(Call::Finished { outcome: Outcome::Failed { detail: detail.to_owned() }, teardown: true });
    assert_eq!(host.calls, expected);
    assert_eq!(host.count(&Call::Kill(INIT, Signal::SIGKILL)), 1);
    assert_eq!(host.count(&Call::Delete), 1);
}

#[test]
fn a_cold_spawn_runs_every_step_in_order() {
    let mut host = cgroup();
    let request = limited();
    run(&mut host, &request).unwrap();
    assert_eq!(
        host.calls,
        [
            Call::ForwardPty,
            Call::Write(PathBuf::from(PIDS), String::from("64")),
            Call::Read(PathBuf::from(PIDS)),
            Call::Read(PathBuf::from(MEMORY)),
            Call::Start,
            Call::Loopback { pid: INIT, rootless: true },
            Call::Inotify { pid: INIT, instances: 16, watches: 1024 },
            Call::StillWanted,
            Call::SendGo { payload: b"g".to_vec(), fds: 0 },
            Call::Started(INIT),
            Call::CloseStatus,
            Call::Reap(INIT),
            Call::Read(PathBuf::from(PROCS)),
            Call::Finished { outcome: Outcome::Exited { code: 0 }, teardown: true },
            Call::HangUp,
            Call::Delete,
            Call::RemoveBundle(PathBuf::from("/fake/bundle")),
        ]
    );
    assert_eq!(host.phases(), ["limits", "ready", "loopback", "inotify", "go", "status-eof", "reaped"]);
    let measured = host.measured.unwrap();
    assert_eq!(measured.readback, [Some(String::from("64")), Some(String::from("1048576"))]);
    assert_eq!((measured.loopback, measured.landlock, measured.seccomp), (Some(true), Some(LandlockStatus::Full), 2));
}

#[test]
fn the_proxy_listener_is_made_after_lo_and_before_anything_runs() {
    let mut host = cgroup();
    let request = Request { proxy_port: Some(3128), require_proxy: true, ..limited() };
    run(&mut host, &request).unwrap();
    let at = |call: &Call| host.calls.iter().position(|c| c == call).unwrap();
    let proxy = at(&Call::Proxy { pid: INIT, rootless: true, port: 3128 });
    assert!(at(&Call::Loopback { pid: INIT, rootless: true }) < proxy);
    assert!(proxy < at(&Call::SendGo { payload: b"g".to_vec(), fds: 0 }));
    assert_eq!(host.phases(), ["limits", "ready", "loopback", "proxy", "inotify", "go", "status-eof", "reaped"]);
    assert_eq!(host.measured.unwrap().proxy, Some(true));
}

#[test]
fn a_limit_not_written_fails_before_the_start_through_the_one_failure_path() {
    let mut host = cgroup();
    host.unwritable.push(PathBuf::from(PIDS));
    host.pty = Err(String::from("accept: EIO"));
    let request = limited();
    run(&mut host, &request).unwrap();
    let before = [
        Call::ForwardPty,
        Call::Write(PathBuf::from(PIDS), String::from("64")),
        Call::Read(PathBuf::from(PIDS)),
        Call::Read(PathBuf::from(MEMORY)),
    ];
    // The write failure outranks the PTY's; the container never starts.
    let detail = format!(
        "helper: cgroup limits: writing {PIDS}: {}",
        std::io::Error::from(std::io::ErrorKind::PermissionDenied)
    );
    assert_failed_once(&host, &request, &before, &detail);
    assert_eq!(host.phases(), ["limits", "ready"]);
    assert_eq!(host.measured.unwrap().readback, [None, Some(String::from("1048576"))]);
}

#[test]
fn a_limit_that_does_not_hold_fails_only_when_required() {
    let mut host = cgroup();
    host.files.insert(PathBuf::from(MEMORY), String::from("max\n"));
    let request = limited();
    run(&mut host, &request).unwrap();
    let before = [
        Call::ForwardPty,
        Call::Write(PathBuf::from(PIDS), String::from("64")),
        Call::Read(PathBuf::from(PIDS)),
        Call::Read(PathBuf::from(MEMORY)),
    ];
    assert_failed_once(
        &host,
        &request,
        &before,
        &format!("helper: cgroup limits: {MEMORY} reads Some(\"max\"), expected 1048576"),
    );

    // Not required: read back and reported, and the run goes on.
    let mut host = cgroup();
    host.files.insert(PathBuf::from(MEMORY), String::from("max\n"));
    host.unwritable.push(PathBuf::from(PIDS));
    let request = Request { require_limits: false, ..limited() };
    run(&mut host, &request).unwrap();
    assert_eq!(host.finished(), (Outcome::Exited { code: 0 }, true));
    assert_eq!(host.measured.unwrap().readback, [None, Some(String::from("max"))]);
}

#[test]
fn an_init_that_fails_or_never_starts_takes_the_failure_path() {
    // A PTY master that cannot be forwarded: the container never starts.
    let mut host = Recorder::new();
    host.pty = Err(String::from("accept: EIO"));
    let tty = Request { tty: true, ..request() };
    run(&mut host, &tty).unwrap();
    assert_failed_once(&host, &tty, &[Call::ForwardPty], "helper: pty: accept: EIO");

    let before = [Call::ForwardPty, Call::Start];
    let mut host = Recorder::new();
    host.status = VecDeque::from([b"error helper: identities: grant target x\n".to_vec()]);
    run(&mut host, &request()).unwrap();
    assert_failed_once(&host, &request(), &before, "helper: identities: grant target x");

    let mut host = Recorder::new();
    host.start_fails = true;
    run(&mut host, &request()).unwrap();
    assert_failed_once(&host, &request(), &before, "container start: InvalidInput(\"no\")");

    let mut host = Recorder::new();
    host.status.clear();
    run(&mut host, &request()).unwrap();
    assert_failed_once(&host, &request(), &before, "helper: start: the init did not report ready");

    let mut host = Recorder::new();
    host.status = VecDeque::from([b"exited 0\n".to_vec()]);
    run(&mut host, &request()).unwrap();
    assert_failed_once(&host, &request(), &before, "helper: start: status channel: Exited(0) before `ready`");
}

#[test]
fn a_loopback_or_inotify_failure_fails_only_when_required() {
    let armed = [
        Call::ForwardPty,
        Call::Write(PathBuf::from(PIDS), String::from("64")),
        Call::Read(PathBuf::from(PIDS)),
        Call::Read(PathBuf::from(MEMORY)),
        Call::Start,
        Call::Loopback { pid: INIT, rootless: true },
    ];
    let mut host = cgroup();
    host.loopback = Err(String::from("SIOCSIFFLAGS on lo failed"));
    let request = limited();
    run(&mut host, &request).unwrap();
    assert_failed_once(&host, &request, &armed, "helper: loopback: SIOCSIFFLAGS on lo failed");
    let measured = host.measured.as_ref().unwrap();
    assert_eq!(
        (measured.loopback, measured.loopback_error.as_deref()),
        (Some(false), Some("SIOCSIFFLAGS on lo failed"))
    );
    assert_eq!(host.phases(), ["limits", "ready", "loopback"]);

    let mut host = cgroup();
    host.inotify = Err(String::from("max_inotify_watches did not take the value"));
    run(&mut host, &request).unwrap();
    let mut before = armed.to_vec();
    before.push(Call::Inotify { pid: INIT, instances: 16, watches: 1024 });
    assert_failed_once(&host, &request, &before, "helper: inotify bound: max_inotify_watches did not take the value");

    // Neither required: measured, and the run goes on.
    let mut host = cgroup();
    host.loopback = Err(String::from("setns into the container's namespaces failed"));
    host.inotify = Err(String::from("max_inotify_watches did not take the value"));
    let request = Request { require_loopback: false, require_limits: false, ..limited() };
    run(&mut host, &request).unwrap();
    assert_eq!(host.finished(), (Outcome::Exited { code: 0 }, true));
    let measured = host.measured.unwrap();
    assert_eq!(measured.loopback, Some(false));
    assert_eq!(measured.inotify_error.as_deref(), Some("max_inotify_watches did not take the value"));
}

/// The inotify bound and the mount fixes come from one visit to the container's user
/// namespace, after `lo` and before anything runs; a fix that failed ends the run (whatever
/// the limits ask), a tolerated inotify failure does not skip the fixes.
#[test]
fn the_mount_fixes_go_with_the_inotify_bound_and_a_failed_one_ends_the_run() {
    let fixes = crate::protocol::MountFixes {
        pins: vec![PathBuf::from("/tmp/a")],
        devices: vec![PathBuf::from("/dev/null"), PathBuf::from("/dev/zero")],
    };
    let request = Request { mount_fixes: fixes.clone(), ..limited() };
    let mut host = cgroup();
    run(&mut host, &request).unwrap();
    let at = |call: &Call| host.calls.iter().position(|c| c == call).unwrap();
    let mounts = at(&Call::Mounts { pid: INIT, pins: 1, devices: 2 });
    assert_eq!(at(&Call::Inotify { pid: INIT, instances: 16, watches: 1024 }) + 1, mounts);
    assert!(at(&Call::Loopback { pid: INIT, rootless: true }) < mounts);
    assert!(mounts < at(&Call::SendGo { payload: b"g".to_vec(), fds: 0 }));
    assert_eq!(host.phases(), ["limits", "ready", "loopback", "inotify", "mounts", "go", "status-eof", "reaped"]);

    // A failed fix: the run ends before `go`, limits required or not.
    for require_limits in [true, false] {
        let mut host = cgroup();
        host.mounts = Err(String::from("/tmp/a could not be bound onto itself"));
        let request = Request { mount_fixes: fixes.clone(), require_limits, ..limited() };
        run(&mut host, &request).unwrap();
        assert!(!host.calls.iter().any(|c| matches!(c, Call::SendGo { .. })), "{:?}", host.calls);
        assert!(matches!(host.finished().0, Outcome::Failed { .. }), "{:?}", host.finished());
    }

    // A tolerated inotify failure: measured, and the fixes still made.
    let mut host = cgroup();
    host.inotify = Err(String::from("max_inotify_watches did not take the value"));
    let request = Request { mount_fixes: fixes, require_limits: false, ..limited() };
    run(&mut host, &request).unwrap();
    assert!(host.calls.contains(&Call::Mounts { pid: INIT, pins: 1, devices: 2 }));
    assert_eq!(host.finished(), (Outcome::Exited { code: 0 }, true));
    assert!(host.measured.unwrap().inotify_error.is_some());
}

#[test]
fn an_embedder_that_no_longer_wants_the_run_gets_no_workload() {
    let mut host = Recorder::new();
    host.wanted = false;
    run(&mut host, &request()).unwrap();
    let before = [Call::ForwardPty, Call::Start, Call::StillWanted];
    assert_failed_once(&host, &request(), &before, "helper: start: cancelled before the workload started");
    assert!(!host.calls.iter().any(|c| matches!(c, Call::SendGo { .. } | Call::Started(_))));
}

#[test]
fn a_warm_container_goes_with_its_process_or_removes_its_bundle_unused() {
    let stdio: Vec<OwnedFd> = (0..3).map(|_| OwnedFd::from(std::fs::File::open("/dev/null").unwrap())).collect();
    let mut host = Recorder::new();
    host.go = Ok(Some((b"w\x02\0\0\0{}".to_vec(), stdio)));
    let request = Request { warm: true, ..request() };
    run(&mut host, &request).unwrap();
    assert_eq!(
        host.calls,
        [
            Call::ForwardPty,
            Call::Start,
            Call::StillWanted,
            Call::WaitForGo,
            Call::Ready,
            Call::SendGo { payload: b"w\x02\0\0\0{}".to_vec(), fds: 3 },
            Call::Started(INIT),
            Call::CloseStatus,
            Call::Reap(INIT),
            Call::Finished { outcome: Outcome::Exited { code: 0 }, teardown: true },
            Call::HangUp,
            Call::Delete,
            Call::RemoveBundle(PathBuf::from("/fake/bundle")),
        ]
    );

    // Let go without a process: the unused container's bundle goes too, before the answer.
    let mut host = Recorder::new();
    run(&mut host, &request).unwrap();
    let before = [Call::ForwardPty, Call::Start, Call::StillWanted, Call::WaitForGo, Call::Ready];
    assert_failed_once(&host, &request, &before, "helper: start: the warm container was not used");

    // A process that cannot be received: the same path, with its reason.
    let mut host = Recorder::new();
    host.go = Err(std::io::Error::other("2 stdio descriptors, expected 3"));
    run(&mut host, &request).unwrap();
    assert_failed_once(&host, &request, &before, "helper: go: 2 stdio descriptors, expected 3");
}

#[test]
fn a_kept_containers_run_is_answered_kept_and_the_container_waits_for_the_next() {
    let stdio = || (0..3).map(|_| OwnedFd::from(std::fs::File::open("/dev/null").unwrap())).collect::<Vec<_>>();
    let go = b"k\x02\0\0\0{}".to_vec();
    // The outcome and the next run's `ready` in one read: the run ends at its outcome, and the
    // rest is the next run's.
    let mut host = cgroup();
    host.files.insert(PathBuf::from(PROCS), format!("{INIT}\n"));
    host.status =
        VecDeque::from([b"ready\n".to_vec(), b"setup landlock=full abi=4 seccomp=2\nexited 3\nready\n".to_vec()]);
    host.go = Ok(Some((go.clone(), stdio())));
    let request = Request { warm: true, procs: Some(PathBuf::from(PROCS)), ..request() };
    run(&mut host, &request).unwrap();
    let kept = Call::Kept { outcome: Outcome::Exited { code: 3 } };
    assert_eq!(host.count(&kept), 1, "{:?}", host.calls);
    assert!(!host.calls.iter().any(|c| matches!(c, Call::Finished { .. })), "{:?}", host.calls);
    // Proven over (the cgroup read: the init alone) before the answer; then the next `ready`,
    // the embedder asked, and (let go: no process) the container torn down, unanswered.
    let after: Vec<Call> = host.calls.iter().skip_while(|c| **c != Call::Started(INIT)).cloned().collect();
    assert_eq!(
        after,
        [
            Call::Started(INIT),
            Call::Read(PathBuf::from(PROCS)),
            kept.clone(),
            Call::StillWanted,
            Call::WaitForGo,
            Call::Ready,
            Call::Kill(INIT, Signal::SIGKILL),
            Call::Read(PathBuf::from(PROCS)),
            Call::CloseStatus,
            Call::Reap(INIT),
            Call::HangUp,
            Call::Delete,
            Call::RemoveBundle(PathBuf::from("/fake/bundle")),
        ]
    );
    assert!(host.calls.contains(&Call::SendGo { payload: go.clone(), fds: 3 }));

    // Another process left in the cgroup: not proven over, so not kept; the answer comes after
    // the teardown, as a fresh container's.
    let mut host = cgroup();
    host.files.insert(PathBuf::from(PROCS), format!("{INIT}\n4343\n"));
    host.status = VecDeque::from([b"ready\n".to_vec(), b"setup landlock=full abi=4 seccomp=2\nexited 0\n".to_vec()]);
    host.go = Ok(Some((go.clone(), stdio())));
    run(&mut host, &request).unwrap();
    assert_eq!(host.count(&kept), 0);
    assert!(!host.calls.iter().any(|c| matches!(c, Call::Kept { .. })), "{:?}", host.calls);
    assert_eq!(host.finished(), (Outcome::Exited { code: 0 }, true));
    assert!(host.calls.contains(&Call::Kill(4343, Signal::SIGKILL)), "{:?}", host.calls);

    // The init ends instead of reporting the next `ready` (its clean-up failed): torn down.
    let mut host = cgroup();
    host.files.insert(PathBuf::from(PROCS), format!("{INIT}\n"));
    host.status = VecDeque::from([b"ready\n".to_vec(), b"setup landlock=full abi=4 seccomp=2\nexited 0\n".to_vec()]);
    host.go = Ok(Some((go, stdio())));
    run(&mut host, &request).unwrap();
    let tail: Vec<Call> = host.calls.iter().skip_while(|c| !matches!(c, Call::Kept { .. })).cloned().collect();
    assert_eq!(
        tail,
        [
            Call::Kept { outcome: Outcome::Exited { code: 0 } },
            Call::Kill(INIT, Signal::SIGKILL),
            Call::Read(PathBuf::from(PROCS)),
            Call::CloseStatus,
            Call::Reap(INIT),
            Call::HangUp,
            Call::Delete,
            Call::RemoveBundle(PathBuf::from("/fake/bundle")),
        ]
    );
}

#[test]
fn an_embedder_gone_at_the_start_ends_the_run_and_kills_its_cgroup() {
    let mut host = cgroup();
    host.files.insert(PathBuf::from(PROCS), String::from("4242\n7\n8\n"));
    host.embedder_gone = true;
    host.status = VecDeque::from([b"ready\n".to_vec()]);
    let request = Request {
        limits: vec![Limit { file: PathBuf::from(PIDS), value: 64, write: true }],
        procs: Some(PathBuf::from(PROCS)),
        ..request()
    };
    // The answer is lost; the clean-up still runs.
    run(&mut host, &request).unwrap();
    let procs = PathBuf::from(PROCS);
    assert_eq!(
        host.calls[4..],
        [
            Call::StillWanted,
            Call::SendGo { payload: b"g".to_vec(), fds: 0 },
            Call::Started(INIT),
            // The init is told to end the run, everything else goes at once.
            Call::EndRun(INIT),
            Call::Read(procs.clone()),
            Call::Kill(7, Signal::SIGKILL),
            Call::Kill(8, Signal::SIGKILL),
            Call::Read(procs.clone()),
            Call::CloseStatus,
            Call::Reap(INIT),
            Call::Read(procs),
            Call::Finished { outcome: Outcome::Signalled { signal: 9 }, teardown: true },
            Call::HangUp,
            Call::Delete,
            Call::RemoveBundle(PathBuf::from("/fake/bundle")),
        ]
    );
}

#[test]
fn a_kill_request_or_the_embedder_gone_during_the_run_ends_it_through_the_init() {
    for command in [Some(Command::Signal { signal: Signal::SIGKILL as i32 }), None] {
        let mut host = cgroup();
        host.files.insert(PathBuf::from(PROCS), String::from("9\n"));
        host.control.push_back(command);
        let request = Request {
            limits: vec![Limit { file: PathBuf::from(PIDS), value: 64, write: true }],
            procs: Some(PathBuf::from(PROCS)),
            ..request()
        };
        host.status = VecDeque::from([b"ready\n".to_vec(), b"setup landlock=full abi=4 seccomp=2\n".to_vec()]);
        run(&mut host, &request).unwrap();
        let procs = PathBuf::from(PROCS);
        let run_calls = host.since_start();
        assert_eq!(
            run_calls,
            [
                Call::Started(INIT),
                Call::EndRun(INIT),
                Call::Read(procs.clone()),
                Call::Kill(9, Signal::SIGKILL),
                Call::Read(procs.clone()),
                Call::CloseStatus,
                Call::Reap(INIT),
                Call::Read(procs),
                Call::Finished { outcome: Outcome::Signalled { signal: 9 }, teardown: true },
                Call::HangUp,
                Call::Delete,
                Call::RemoveBundle(PathBuf::from("/fake/bundle")),
            ]
        );
    }
}

#[test]
fn other_signals_are_passed_on_and_the_run_goes_on() {
    let mut host = Recorder::new();
    host.control.push_back(Some(Command::Signal { signal: Signal::SIGTERM as i32 }));
    host.status = VecDeque::from([
        b"ready\n".to_vec(),
        b"setup landlock=partial abi=4 seccomp=2\n".to_vec(),
        b"signalled 15\n".to_vec(),
    ]);
    run(&mut host, &request()).unwrap();
    assert_eq!(host.count(&Call::Kill(INIT, Signal::SIGTERM)), 1);
    assert_eq!(host.count(&Call::Kill(INIT, Signal::SIGKILL)), 0);
    assert_eq!(host.finished(), (Outcome::Signalled { signal: 15 }, true));
    assert_eq!(host.measured.unwrap().landlock, Some(LandlockStatus::Partial));
}

#[test]
fn a_status_channel_violation_fails_the_run_closed() {
    let mut host = Recorder::new();
    host.status = VecDeque::from([b"ready\n".to_vec(), b"exited 0\nexited 1\n".to_vec()]);
    run(&mut host, &request()).unwrap();
    let after_start = host.since_start();
    assert_eq!(
        after_start,
        [
            Call::Started(INIT),
            Call::Kill(INIT, Signal::SIGKILL),
            Call::CloseStatus,
            Call::Reap(INIT),
            Call::Finished {
                outcome: Outcome::Failed {
                    detail: String::from("helper: status channel: a message after the outcome")
                },
                teardown: true,
            },
            Call::HangUp,
            Call::Delete,
            Call::RemoveBundle(PathBuf::from("/fake/bundle")),
        ]
    );
}

#[test]
fn a_spawn_not_proven_over_is_answered_after_its_delete() {
    // A process is left in the spawn's cgroup: delete first, answer with what it achieved,
    // leave the bundle to the set's sweep.
    let mut host = cgroup();
    host.files.insert(PathBuf::from(PROCS), String::from("77\n"));
    host.delete_fails = true;
    let one_limit = Request {
        limits: vec![Limit { file: PathBuf::from(PIDS), value: 64, write: true }],
        procs: Some(PathBuf::from(PROCS)),
        ..request()
    };
    run(&mut host, &one_limit).unwrap();
    let tail = &host.calls[host.calls.len() - 4..];
    assert_eq!(
        tail,
        [
            Call::Reap(INIT),
            Call::Read(PathBuf::from(PROCS)),
            Call::Delete,
            Call::Finished { outcome: Outcome::Exited { code: 0 }, teardown: false },
        ]
    );
    assert_eq!(host.count(&Call::HangUp), 0);

    // An init that cannot be reaped is neither deleted nor torn down, on the failure path too.
    let mut host = Recorder::new();
    host.reaped = false;
    host.wanted = false;
    run(&mut host, &request()).unwrap();
    assert_eq!(host.count(&Call::Delete), 0);
    assert!(!host.finished().1);
}

#[test]
fn setup_failures_read_as_the_runtime_expects() {
    let file = PathBuf::from("/sys/fs/cgroup/x/pids.max");
    let cases = [
        (SetupError::Pty(String::from("accept: EIO")), "helper: pty: accept: EIO"),
        (
            SetupError::LimitNotWritten { file: file.clone(), error: std::io::Error::other("denied") },
            "helper: cgroup limits: writing /sys/fs/cgroup/x/pids.max: denied",
        ),
        (
            SetupError::LimitNotHeld { file, read: Some(String::from("max")), expected: 64 },
            "helper: cgroup limits: /sys/fs/cgroup/x/pids.max reads Some(\"max\"), expected 64",
        ),
        (SetupError::NotReady(String::from("no")), "helper: start: no"),
        (
            SetupError::Init(Failure { stage: Stage::Identities, reason: String::from("grant target x") }),
            "helper: identities: grant target x",
        ),
        (SetupError::Loopback(String::from("down")), "helper: loopback: down"),
        (SetupError::Inotify(String::from("no")), "helper: inotify bound: no"),
        (SetupError::Cancelled, "helper: start: cancelled before the workload started"),
        (SetupError::Unused, "helper: start: the warm container was not used"),
        (
            SetupError::Go(std::io::Error::other("2 stdio descriptors, expected 3")),
            "helper: go: 2 stdio descriptors, expected 3",
        ),
    ];
    for (error, text) in cases {
        assert_eq!(error.to_string(), text);
    }
}
