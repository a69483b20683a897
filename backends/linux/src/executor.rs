//! The workload executor libcontainer runs as the container's pid 1 (CONTRACT.md §15.1).
//!
//! After pivot_root, with every capability dropped and `no_new_privs` set, it installs Landlock
//! and seccomp (so they bind the init and everything below it), reports what it measured on the
//! status pipe, then forks: the child execs the workload, the parent stays as a minimal init
//! that forwards signals to the whole pid namespace, reaps everything, and writes the
//! workload's outcome to the status pipe. When the bundle protects paths that do not exist
//! (issue 14), or its spawn reaches the network only through the egress proxy (issue 17), the
//! child first installs the guard's filter and the parent serves it from a second thread
//! (`guard.rs`), which reports the direct network calls it refused on the status pipe. It
//! never returns into libcontainer.

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use libcontainer::oci_spec::runtime::Spec;
use libcontainer::workload::{Executor, ExecutorError, ExecutorSetEnvsError, ExecutorValidationError};
use nix::unistd::{ForkResult, Pid, setsid};

use crate::protocol::{GoProcess, LandlockStatus};
use crate::status::{self, Stage};
use crate::{filter, guard, notify, ruleset, sys};

/// The descriptor number of the status pipe inside the container (kept by
/// `with_preserved_fds(2)`).
pub const STATUS_FD: i32 = 3;

/// The descriptor number of the `go` pipe: the init waits on it after reporting `ready`.
pub const GO_FD: i32 = 4;

/// The largest process description a warm container's `go` may carry (argv and environment).
const MAX_GO_BYTES: usize = 64 << 20;

/// What the helper asks of the init for one spawn.
#[derive(Clone, Debug)]
pub struct SandboxExecutor {
    /// Fail the spawn unless Landlock is fully enforced.
    pub require_landlock: bool,
    /// Fail the spawn unless the seccomp filter is installed.
    pub require_seccomp: bool,
    /// The kernel's Landlock ABI, measured by the helper.
    pub kernel_abi: u32,
}

impl Executor for SandboxExecutor {
    fn exec(&self, spec: &Spec) -> Result<(), ExecutorError> {
        run_init(self, spec)
    }

    fn validate(&self, _spec: &Spec) -> Result<(), ExecutorValidationError> {
        // The environment goes straight to exec: no PATH requirement (CONTRACT.md §15.8).
        Ok(())
    }

    fn setup_envs(&self, _envs: std::collections::HashMap<String, String>) -> Result<(), ExecutorSetEnvsError> {
        // Never touch std's environment (its lock may be held by a thread of the cloned
        // parent); the environment is passed to execve as is.
        Ok(())
    }
}

struct Status(File);

impl Status {
    /// Writes one line; a closed pipe means the helper is gone, and then so is this spawn.
    fn line(&mut self, text: &str) {
        if self.0.write_all(format!("{text}\n").as_bytes()).is_err() {
            sys::exit_now(1);
        }
    }

    /// Reports the failure of `stage` (one line of printable text within the channel's bound)
    /// and ends the init.
    fn fail(&mut self, stage: Stage, reason: &str) -> ! {
        self.line(&status::error_line(stage, reason));
        sys::exit_now(0)
    }
}

/// The status pipe once the workload exists: the init's main thread writes the outcome, the
/// guard's thread the direct network calls it refused (issue 17). One lock orders them: each
/// line is written whole, and nothing after the outcome (the init exits holding the lock).
struct Shared(Mutex<Out>);

struct Out {
    file: File,
    /// `direct` lines written.
    direct: usize,
    /// Records past [`status::MAX_DIRECT`], only counted.
    dropped: u32,
}

impl Shared {
    fn new(status: Status) -> Shared {
        Shared(Mutex::new(Out { file: status.0, direct: 0, dropped: 0 }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Out> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records one refused direct call: a `direct` line up to the bound, a count past it. A
    /// failed write is ignored here (the helper is gone; the main thread ends the init). The
    /// write never waits on a slow reader: 256 lines of at most 64 bytes fit in a pipe.
    fn direct(&self, record: &status::Direct) {
        let mut out = self.lock();
        if out.direct < status::MAX_DIRECT {
            out.direct += 1;
            let line = format!("{}\n", status::direct_line(record));
            let _ = out.file.write_all(line.as_bytes());
        } else {
            out.dropped = out.dropped.saturating_add(1);
        }
    }

    /// Writes the last line (`text`), after the count of dropped records if any, and ends the
    /// init, still holding the lock: no record follows the outcome.
    fn last(&self, text: &str) -> ! {
        let mut out = self.lock();
        let mut lines = String::new();
        if out.dropped > 0 {
            lines.push_str(&status::direct_dropped_line(out.dropped));
            lines.push('\n');
        }
        lines.push_str(text);
        lines.push('\n');
        if out.file.write_all(lines.as_bytes()).is_err() {
            sys::exit_now(1);
        }
        sys::exit_now(0)
    }
}

fn seccomp_mode() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("Seccomp:")).and_then(|v| v.trim().parse().ok())
}

fn cstring(s: &str, what: &str, status: &mut Status) -> CString {
    CString::new(s).unwrap_or_else(|_| status.fail(Stage::Exec, &format!("{what} contains NUL")))
}

/// What the helper's go asks of the init.
enum Go {
    /// Run the bundle's own process (a fresh container), then end.
    Bundle,
    /// Run this process, then end (a warm container).
    Warm(GoProcess),
    /// Run this process, then end everything it left, empty `/tmp` and `/dev/shm`, report
    /// `ready` again and wait for the next go (a kept container, issue 16).
    Kept(GoProcess),
}

/// Reads the helper's go: `g` (run the bundle's process; only as the first go), or `w` (the
/// last run) or `k` (a run after which the container is kept) with the workload's stdin,
/// stdout and stderr attached, then the length and JSON of the process to run instead. The
/// descriptors replace this init's 0, 1 and 2 (the workload inherits them; the init keeps its
/// copies until the run has ended, so readers see EOF only when every process of the run is
/// gone). EOF or anything else ends the init (the helper is gone, or gave up the container).
#[allow(unsafe_code, reason = "replacing the init's stdio (see the SAFETY comment)")]
fn receive_go(go: &mut File, status: &mut Status, first: bool) -> Go {
    let mut byte = [0u8; 1];
    let (n, fds) = sys::recv_with_fds(go.as_fd(), &mut byte).unwrap_or_else(|_| sys::exit_now(1));
    match (n, byte[0]) {
        (1, b'g') if first => Go::Bundle,
        (1, kind @ (b'w' | b'k')) if fds.len() == 3 => {
            let mut len = [0u8; 4];
            let mut json = Vec::new();
            let read = std::io::Read::read_exact(go, &mut len).and_then(|()| {
                let len = usize::try_from(u32::from_le_bytes(len)).unwrap_or(usize::MAX);
                if len > MAX_GO_BYTES {
                    return Err(std::io::Error::other("process too large"));
                }
                json.resize(len, 0);
                std::io::Read::read_exact(go, &mut json)
            });
            if read.is_err() {
                sys::exit_now(1);
            }
            for (fd, target) in fds.iter().zip(0..) {
                // SAFETY: no object of the init owns 0, 1 or 2: the runtime set them up by
                // number, and its frames never run again (`run_init` never returns).
                if let Err(e) = unsafe { sys::dup_to(fd.as_fd(), target) } {
                    status.fail(Stage::Stdio, &e.to_string());
                }
            }
            drop(fds);
            let process = serde_json::from_slice(&json).unwrap_or_else(|e| status.fail(Stage::Go, &e.to_string()));
            if kind == b'k' { Go::Kept(process) } else { Go::Warm(process) }
        }
        _ => sys::exit_now(1),
    }
}

#[allow(unsafe_code, reason = "the inherited descriptors and the fork (see the SAFETY comments)")]
fn run_init(cfg: &SandboxExecutor, spec: &Spec) -> ! {
    // The runtime only marked the helper's other descriptors close-on-exec, and this init never
    // execs: close them, so that the helper's death shows here as EOF on `go` and EPIPE on the
    // status pipe (and no helper descriptor ever reaches the workload).
    // SAFETY: this function never returns into libcontainer, so the objects of its frames that
    // own descriptors from GO_FD + 1 up are never used or dropped again; none is opened here yet.
    unsafe { sys::close_from(GO_FD + 1) };
    // SAFETY: the helper installed the status pipe at STATUS_FD and libcontainer kept it open
    // (`with_preserved_fds`) without wrapping it in any object: this is its only owner.
    let mut status = Status(File::from(unsafe { sys::own_fd(STATUS_FD) }));
    // SAFETY: likewise for the `go` socket at GO_FD.
    let mut go = Some(File::from(unsafe { sys::own_fd(GO_FD) }));
    if sys::die_with_parent().is_err() {
        status.fail(Stage::ParentDeath, "prctl failed");
    }
    // The runtime made this process non-dumpable, which keeps a non-root helper out of its
    // namespaces; the helper needs them to raise `lo`, which it does before `go`. The init
    // becomes non-dumpable again as soon as `go` arrives, before any workload exists.
    if sys::set_dumpable().is_err() {
        status.fail(Stage::Dumpable, "prctl failed");
    }
    // Every signal is blocked from here on (the raw mask: glibc's would leave 32 and 33 out):
    // the init takes them with rt_sigtimedwait; the workload child restores the original mask
    // before exec. SIGPIPE blocked turns a vanished helper into EPIPE on the status pipe.
    let old_mask = match sys::set_signal_mask(sys::ALL_SIGNALS) {
        Ok(old) => old,
        Err(e) => status.fail(Stage::Signals, &e.to_string()),
    };

    // The OOM killer must pick the workload, never this init: pages of the private /tmp belong
    // to no process, so under a memory limit filled through /tmp every process looks alike and
    // the init's death would lose the run's outcome. The init raises its own score to the
    // maximum just before the fork (the child inherits it) and restores it right after; an
    // unprivileged process may go back down to the value it started from. The descriptor is
    // opened before Landlock, which would refuse /proc later, and is close-on-exec.
    let mut oom = std::fs::read_to_string("/proc/self/oom_score_adj").ok().and_then(|original| {
        let file = std::fs::OpenOptions::new().write(true).open("/proc/self/oom_score_adj").ok()?;
        Some((file, original.trim().to_owned()))
    });

    // Landlock (from the bundle's annotation) and seccomp (from its linux.seccomp, the same rule
    // list standard runtimes apply) are built and put in force before `ready`: a warm container
    // has done all of it before its process is known.
    let annotations = spec.annotations().clone().unwrap_or_default();
    // The mounts are made: check that each area, pin and grant target is the object it was
    // checked to be (the runtime resolved their sources by path; issue 12, 1 and 3b).
    let expected: Vec<sandbox_bundle::ExpectedMount> = match annotations.get("sandbox.identities") {
        Some(text) => serde_json::from_str(text).unwrap_or_else(|e| status.fail(Stage::Identities, &e.to_string())),
        None => status.fail(Stage::Identities, "the bundle carries no sandbox.identities annotation"),
    };
    if let Err(e) = crate::verify::verify(&expected) {
        status.fail(Stage::Identities, &e.to_string());
    }
    let rules: ruleset::Rules = match annotations.get("sandbox.landlock") {
        Some(text) => serde_json::from_str(text).unwrap_or_else(|e| status.fail(Stage::Landlock, &e.to_string())),
        None => status.fail(Stage::Landlock, "the bundle carries no sandbox.landlock annotation"),
    };
    let prepared =
        ruleset::prepare(&rules, cfg.kernel_abi).unwrap_or_else(|e| status.fail(Stage::Landlock, &e.to_string()));
    // The creation guard of protected paths that do not exist (issue 14): none when the bundle
    // carries no `sandbox.protect` or refuses nothing; an annotation that does not parse fails
    // closed.
    let creation_guard = match annotations.get("sandbox.protect") {
        Some(text) => serde_json::from_str::<ProtectAnnotation>(text)
            .unwrap_or_else(|e| status.fail(Stage::Guard, &e.to_string()))
            .guard
            .filter(|g| !g.is_empty()),
        None => None,
    };
    // The watch on direct network calls (issue 17): when the spawn reaches the network only
    // through the egress proxy. Any other value fails closed.
    let watch_network = match annotations.get(sandbox_bundle::compile::EGRESS_PROXY_ANNOTATION).map(String::as_str) {
        None => false,
        Some("1") => true,
        Some(other) => status.fail(Stage::Guard, &format!("egress-proxy annotation {other:?}")),
    };
    let section = spec.linux().as_ref().and_then(|l| l.seccomp().clone());
    let programs = section
        .map(|section| filter::compile(&section).unwrap_or_else(|e| status.fail(Stage::Seccomp, &e.to_string())));

    // Landlock and seccomp are put in force on the init itself before it says it is ready: a
    // warm container then has nothing of them left to do once its process is known (the
    // filter's install is most of the time between `go` and exec), and the init lives its
    // remaining life (waiting for `go`, the fork, the supervision) already confined. Nothing
    // the init does after this needs a right the rules withhold: reading `go` from descriptors
    // it holds, chdir (Landlock has no right for it), fork, waiting, signalling its own
    // namespace and writing its status.
    let landlock = ruleset::restrict(prepared).unwrap_or_else(|e| status.fail(Stage::Landlock, &e.to_string()));
    if cfg.require_landlock && !matches!(landlock, LandlockStatus::Full) {
        status.fail(Stage::Landlock, &format!("ruleset {landlock}, full enforcement required"));
    }
    let mut seccomp = 0;
    if let Some(programs) = programs {
        for p in &programs {
            if let Err(e) = seccompiler::apply_filter(p) {
                status.fail(Stage::Seccomp, &e.to_string());
            }
        }
        seccomp = seccomp_mode().unwrap_or(0);
    }
    if cfg.require_seccomp && seccomp != 2 {
        status.fail(Stage::Seccomp, &format!("filter mode {seccomp} after install"));
    }

    // A handle on /dev/null, taken before Landlock: a kept container's init puts it in place
    // of the run's stdio once the run has ended (close-on-exec).
    let mut null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map(Some)
        .unwrap_or_else(|e| status.fail(Stage::Stdio, &format!("/dev/null: {e}")));
    let process = spec.process().clone().unwrap_or_else(|| status.fail(Stage::Exec, "the bundle has no process"));
    let tty = process.terminal() == Some(true);
    let setup = format!("setup landlock={landlock} abi={} seccomp={seccomp}", cfg.kernel_abi);
    let run = Run { tty, old_mask, setup, creation_guard, watch_network };

    // What a run could change in this init from outside (its limits, priorities, affinity):
    // a kept container whose init reads otherwise after a run is given up (issue 16).
    let attributes = sys::outside_attributes();
    // Read at the first `go`, once the helper has pinned the container's own directories.
    let mut private_dirs = None;

    // Ready; wait for the helper's go (EOF: the helper is gone, and so is this spawn). A warm
    // container's go carries the process to run and its stdio.
    status.line("ready");
    let mut first = true;
    loop {
        let Some(socket) = go.as_mut() else { sys::exit_now(1) };
        let go_now = receive_go(socket, &mut status, first);
        if first {
            // A container whose private `/tmp` or `/dev/shm` is not its own tmpfs (a workspace
            // at `/tmp`) is never cleaned: no state is read, and it is given up after its run.
            if matches!(go_now, Go::Kept(_)) && crate::fresh::planned_private(spec) {
                private_dirs = crate::fresh::mount_table().and_then(|t| crate::fresh::private_dirs_state(&t));
            }
            // From here on nothing joins this process: no descriptor (the status pipe, the
            // oom_score_adj handle), no memory and no environment of the init may reach the
            // workload through /proc/1, pidfd_getfd or process_vm_readv, which all need it
            // dumpable (or a capability the workload never has).
            if sys::set_non_dumpable().is_err() {
                status.fail(Stage::Dumpable, "prctl(PR_SET_DUMPABLE, 0) failed");
            }
        }
        if !first {
            // A signal the helper passed on for the last run (sent just as it ended) is not
            // this run's: gone before the fork. (Signals from inside the namespace are ignored
            // anyway; SIGCHLD of the last run's processes too.)
            sys::drain_signals(sys::ALL_SIGNALS);
        }
        first = false;
        let (keep, warm) = match go_now {
            Go::Bundle => (false, None),
            Go::Warm(p) => (false, Some(p)),
            Go::Kept(p) => (true, Some(p)),
        };
        if !keep {
            // The last run: the init holds nothing it needs only between runs.
            go = None;
            null = None;
        }
        // The run's cwd, entered now, after `go`: the helper's mount fixes came after the
        // runtime entered the bundle's cwd, and a pin above a workspace under `/tmp` stacks a
        // copy of its mounts over the ones that cwd was on; from there a rename to the same
        // directory by its absolute path crossed mounts (`EXDEV`: `git gc` failed, found by the
        // evening red team of 4 December).
        let cwd = match &warm {
            Some(w) => w.cwd.clone(),
            None => process.cwd().display().to_string(),
        };
        // Component by component, following no symlink: the path was resolved on the host (and
        // a grant checked against it) before the spawn, and a concurrent run that replaced a
        // component with a symlink since then led the run elsewhere, outside the workspace
        // too (red team AX, 6 December: a command granted for `ws/race/a` ran in `/etc`).
        if let Err(e) = sys::chdir_no_symlinks(&cwd) {
            let why = match e {
                nix::errno::Errno::ELOOP | nix::errno::Errno::ENOTDIR => {
                    " (a component is a symlink or no directory: changed since it was resolved?)"
                }
                _ => "",
            };
            status.fail(Stage::Cwd, &format!("{cwd}: {e}{why}"));
        }
        let (args, env): (Vec<String>, Vec<String>) = match warm {
            Some(w) => (w.args, w.env),
            None => (process.args().clone().unwrap_or_default(), process.env().clone().unwrap_or_default()),
        };
        status = run_once(&run, status, go.as_ref(), &mut oom, args, &env, keep);
        let Some(null) = null.as_ref() else { sys::exit_now(1) };
        // The run has ended and everything it started is gone (`sweep`): what it may have left
        // for the next run goes too, and the init is ready for the next go. A failure ends the
        // init (the helper then sees the end of the pipe instead of `ready` and gives the
        // container up).
        for fd in 0..3 {
            // SAFETY: as in `receive_go`: 0, 1 and 2 are owned by no object of the init.
            if unsafe { sys::dup_to(null.as_fd(), fd) }.is_err() {
                sys::exit_now(1);
            }
        }
        // A guard thread still performing a call for a process that is gone (an open of a
        // FIFO, say) would make the next fork unsafe: such a container is given up.
        // The mount table, read once: the state, the check and the times below all use it (no
        // process of the run is left to mount anything meanwhile).
        let table = crate::fresh::mount_table().unwrap_or_default();
        if !single_threaded()
            || attributes.is_none()
            || sys::outside_attributes() != attributes
            || private_dirs.is_none()
            || crate::fresh::private_dirs_state(&table) != private_dirs
            || !crate::fresh::private_dirs_are_private(&table)
            || crate::fresh::empty_private_dir("/tmp").is_err()
            || crate::fresh::empty_private_dir("/dev/shm").is_err()
        {
            sys::exit_now(0);
        }
        crate::fresh::reset_times(&table);
        status.line("ready");
    }
}

/// What every run of this init shares (built once, before `ready`).
struct Run {
    tty: bool,
    old_mask: sys::KernelSigset,
    setup: String,
    creation_guard: Option<sandbox_bundle::CreationGuard>,
    watch_network: bool,
}

/// One run: forks the workload child and follows it to its end. Without `keep` the init ends
/// with the run, as the namespace's end is the run's (its last line is the outcome). With
/// `keep` it kills whatever the run left, waits until its pid namespace holds no process but
/// itself, puts the run's stdio away, reports the outcome and returns the status pipe.
#[allow(unsafe_code, reason = "the fork (see the SAFETY comment)")]
fn run_once(
    run: &Run,
    mut status: Status,
    go: Option<&File>,
    oom: &mut Option<(File, String)>,
    args: Vec<String>,
    env: &[String],
    keep: bool,
) -> Status {
    // Everything the child needs, prepared before the fork.
    let Some(program) = args.first().cloned() else { status.fail(Stage::Exec, "empty argv") };
    let argv: Vec<CString> = args.iter().map(|a| cstring(a, "argv", &mut status)).collect();
    let envp: Vec<CString> = env.iter().map(|e| cstring(e, "environment", &mut status)).collect();
    let path_var = env.iter().find_map(|e| e.strip_prefix("PATH=")).unwrap_or("/usr/local/bin:/usr/bin:/bin");
    let candidates: Vec<CString> = if program.contains('/') {
        argv.first().cloned().into_iter().collect()
    } else {
        path_var
            .split(':')
            .map(|d| if d.is_empty() { "." } else { d })
            .filter_map(|d| CString::new(format!("{d}/{program}")).ok())
            .collect()
    };

    // With a guard or the network watch, the workload child installs the guard's filter and
    // hands its listener back over this pair (a stream pair: the base policy may refuse
    // datagram pairs).
    let creating = run.creation_guard.is_some();
    // Denied roots inside a bound area: every open goes to the guard, reads too.
    let reading = run.creation_guard.as_ref().is_some_and(|g| !g.denied.is_empty());
    let guard_pair = (creating || run.watch_network).then(|| {
        use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
        socketpair(AddressFamily::Unix, SockType::Stream, None, SockFlag::SOCK_CLOEXEC)
            .unwrap_or_else(|e| status.fail(Stage::Guard, &format!("socketpair: {e}")))
    });

    status.line(&run.setup);

    if let Some((file, _)) = oom.as_ref() {
        let _ = (&*file).write_all(b"1000");
    }
    // SAFETY: the init is single-threaded: libcontainer cloned it from a single-threaded process
    // (a clone copies only the calling thread), nothing in it starts a thread before this fork
    // (the creation guard's thread starts after it, in the parent), and a kept container's
    // init has joined that thread and seen its helpers end before the next run (`sweep`).
    match unsafe { sys::fork_single_threaded() } {
        Err(e) => status.fail(Stage::Fork, &e.to_string()),
        Ok(ForkResult::Child) => {
            let _ = nix::unistd::close(status.0.as_raw_fd());
            if let Some(go) = go {
                let _ = nix::unistd::close(go.as_raw_fd());
            }
            // A kept container's runs each get their own IPC namespace (System V objects and
            // POSIX message queues of one run never reach the next); then every capability the
            // init kept for it goes, bounding set included, before anything of the workload.
            if keep && nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWIPC).is_err() {
                let _ = std::io::stderr().write_all(b"sandbox: ipc namespace: unshare failed\n");
                sys::exit_now(127);
            }
            if let Err(e) = sys::drop_all_capabilities() {
                let _ = std::io::stderr().write_all(format!("sandbox: capabilities: {e}\n").as_bytes());
                sys::exit_now(127);
            }
            if let Some((init_end, child_end)) = guard_pair {
                drop(init_end);
                install_guard(child_end, creating, reading, run.watch_network);
            }
            exec_workload(run.old_mask, run.tty, &candidates, &argv, &envp, &program)
        }
        Ok(ForkResult::Parent { child }) => {
            if let Some((file, original)) = oom.as_ref() {
                let _ = (&*file).write_all(original.as_bytes());
            }
            if !keep {
                // The pre-Landlock handle goes now: nothing of it survives for the workload to
                // take (the child's copy is close-on-exec). A kept container's init keeps it for
                // its next runs (it is not dumpable, and seccomp refuses `pidfd_getfd`).
                drop(oom.take());
            }
            let listener = guard_pair.map(|(init_end, child_end)| {
                drop(child_end);
                receive_listener(&mut status, init_end)
            });
            let shared = Arc::new(Shared::new(status));
            let mut thread = None;
            let staging = guard::Staging::default();
            if let Some((listener, sock)) = listener {
                let direct: Option<guard::Record> = if run.watch_network {
                    let shared = Arc::clone(&shared);
                    Some(Box::new(move |record: &status::Direct| shared.direct(record)))
                } else {
                    None
                };
                let watch = guard::Watch { creation: run.creation_guard.clone(), direct, staging: staging.clone() };
                thread = start_guard(&shared, listener, watch);
                // The guard is served: the workload may start (see `install_guard`). A child
                // that is gone already shows in its exit status.
                let _ = sys::send_with_fds(sock.as_fd(), b"g", &[]);
            }
            let outcome = supervise(child);
            // What the run wrote to a worktree entry's `gitdir` since the guard's last call,
            // and the operations it left in host repositories (`Staging::finish`), once no
            // process of the run is left: a process left behind wrote on through a shared
            // mapping after the end's checks (tmpfs changes no time for that). Never after
            // waiting for the last of them without bound: a process in uninterruptible sleep
            // (threads reading with `O_DIRECT`) is reaped only when its I/O is done, and the
            // helper kills this init 3 s after it ends a run, so the checks never ran (red team
            // AT, 5 December: a change hidden from the host's git, a rebase's `exec` line run at
            // its `--continue`). Past `END_REAP` the checks run anyway, strictly (every entry
            // kept for a later look smudged and its file redated, unlooked at): what is still
            // in the kernel for a killed process may yet land. The guard thread repeats them
            // when its listener hangs up, after the sweep below (strict stays strict): a call
            // it was still serving for a process killed here is looked at too.
            if let Some(creation) = run.creation_guard.as_ref() {
                let gone = sweep_within(END_REAP);
                staging.finish(creation, !gone);
            }
            if !keep {
                shared.last(&outcome)
            }
            // Nothing of the run may outlive it: every process left is killed and reaped (the
            // guard's listener ends with the last of them, and its thread with it).
            if !sweep() {
                shared.last(&status::error_line(Stage::Fork, "the run's processes could not be ended"));
            }
            if let Some(thread) = thread {
                let _ = thread.join();
            }
            let Ok(shared) = Arc::try_unwrap(shared) else { sys::exit_now(1) };
            let mut out = shared.0.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut lines = String::new();
            if out.dropped > 0 {
                lines.push_str(&status::direct_dropped_line(out.dropped));
                lines.push('\n');
            }
            lines.push_str(&outcome);
            lines.push('\n');
            if out.file.write_all(lines.as_bytes()).is_err() {
                sys::exit_now(1);
            }
            Status(out.file)
        }
    }
}

/// How long the run's end waits for its processes to be reaped before its checks
/// ([`sweep_within`]): with the guard's own bound on an index being placed, well within the
/// helper's 3 s grace for the whole end.
const END_REAP: std::time::Duration = std::time::Duration::from_millis(800);

/// [`sweep`], for at most `limit`, never blocking in a wait: true when no process of the
/// namespace but this init is left.
fn sweep_within(limit: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    loop {
        let any = sys::kill_raw(-1, libc::SIGKILL).is_ok();
        let mut children = false;
        while sys::reap_any_nohang().is_some() {
            children = true;
        }
        if !any && !children {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Kills every process of the namespace but this init and reaps until none is left. True when
/// the namespace holds no other process (`kill(-1)` finds none and no child is left to reap).
/// A killed process forks no more, so this ends.
fn sweep() -> bool {
    for _ in 0..10_000 {
        let any = sys::kill_raw(-1, libc::SIGKILL).is_ok();
        let mut children = false;
        while let Some(reaped) = sys::reap_any_wait() {
            children = true;
            let _ = reaped;
        }
        if !any && !children {
            return true;
        }
    }
    false
}

/// Whether this process has a single thread (`/proc/self/status`), waiting up to 200 ms for
/// the guard's helper threads (each answers one call and ends; the callers are gone, so one
/// still there is blocked for good, in the open of a FIFO no one will open again: the
/// container is given up, and the next spawn of its shape, which waits for it to come back,
/// waited 2 s before).
fn single_threaded() -> bool {
    for _ in 0..200 {
        let threads = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse::<u32>().ok())
        });
        match threads {
            Some(1) => return true,
            Some(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
            None => return false,
        }
    }
    false
}

/// The part of the `sandbox.protect` annotation the init reads.
#[derive(serde::Deserialize)]
struct ProtectAnnotation {
    guard: Option<sandbox_bundle::CreationGuard>,
}

/// In the workload child, before exec: installs the guard's filter (for the watches the spawn
/// has) and sends its listener to the init over `sock` (or why it could not, after which the
/// child ends: the init then fails the spawn), then waits for the init's `g`: the workload
/// starts only once the init's thread serves the listener. Before, a workload that forked up to
/// its pids bound in the moment between the hand-over and that thread's creation made the
/// creation fail (EAGAIN), and with it the run ("helper: protect guard: thread", once in CI's
/// fork bomb test) instead of the bomb meeting its deadline.
fn install_guard(sock: OwnedFd, creating: bool, reading: bool, network: bool) {
    let sent = match notify::install_with_listener(&guard::program(creating, reading, network)) {
        Ok(listener) => sys::send_with_fds(sock.as_fd(), b"f", &[listener.as_fd()]),
        Err(e) => {
            let _ = sys::send_with_fds(sock.as_fd(), format!("e{e}").as_bytes(), &[]);
            sys::exit_now(127)
        }
    };
    if sent.is_err() {
        sys::exit_now(127);
    }
    let mut go = [0u8; 1];
    match sys::recv_with_fds(sock.as_fd(), &mut go) {
        Ok((1, fds)) if go == *b"g" && fds.is_empty() => {}
        // The init could not start its thread (it has ended the spawn) or is gone.
        _ => sys::exit_now(127),
    }
}

/// In the init after the fork: receives the child's listener (and gives back the socket, for
/// the `g` that lets the workload start). A child that could not install the filter fails the
/// spawn.
fn receive_listener(status: &mut Status, sock: OwnedFd) -> (OwnedFd, OwnedFd) {
    let mut buf = [0u8; 512];
    let (n, mut fds) = match sys::recv_with_fds(sock.as_fd(), &mut buf) {
        Ok(r) => r,
        Err(e) => status.fail(Stage::Guard, &format!("receiving the listener: {e}")),
    };
    let listener = match (buf.get(..n), fds.len()) {
        (Some([b'f']), 1) => fds.remove(0),
        (Some([b'e', reason @ ..]), _) => {
            status.fail(Stage::Guard, &format!("filter: {}", String::from_utf8_lossy(reason)))
        }
        _ => status.fail(Stage::Guard, "the workload did not hand over the listener"),
    };
    // The socket stays open until the workload may start, out of the way; the listener goes to
    // the lowest free number (4, where `go` was): the init's descriptors stay 0-4.
    let sock = match sys::dup_high_cloexec(sock.as_fd()) {
        Ok(high) => {
            drop(sock);
            high
        }
        Err(_) => sock,
    };
    let listener = match sys::dup_lowest_cloexec(listener.as_fd()) {
        Ok(low) => low,
        Err(_) => listener,
    };
    (listener, sock)
}

/// Serves the listener from a thread (the init is single-threaded until here, as the fork
/// required).
fn start_guard(shared: &Shared, listener: OwnedFd, watch: guard::Watch) -> Option<std::thread::JoinHandle<()>> {
    let spawned = std::thread::Builder::new().name("guard".into()).spawn(move || guard::serve(listener, watch));
    match spawned {
        Ok(handle) => Some(handle),
        Err(e) => shared.last(&status::error_line(Stage::Guard, &format!("thread: {e}"))),
    }
}

#[allow(clippy::too_many_arguments)]
fn exec_workload(
    old_mask: sys::KernelSigset,
    tty: bool,
    candidates: &[CString],
    argv: &[CString],
    envp: &[CString],
    name: &str,
) -> ! {
    // Dispositions the helper inherited from its embedder (Rust ignores SIGPIPE; a background
    // job ignores SIGINT) must not reach the workload.
    sys::reset_signal_dispositions();
    if tty {
        // Its own process group, in the foreground of the terminal the init controls (signals
        // are still blocked here, so tcsetpgrp from a background group is allowed).
        let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
        let _ = sys::take_foreground();
    } else {
        let _ = setsid();
    }
    let _ = sys::set_signal_mask(old_mask);
    let mut last = nix::Error::ENOENT;
    let mut found = false;
    for path in candidates {
        let e = sys::execve(path, argv, envp);
        match e {
            nix::Error::ENOENT | nix::Error::ENOTDIR => {}
            other => {
                found = true;
                last = other;
            }
        }
    }
    let code = if found { 126 } else { 127 };
    // One line whatever the name holds (a newline in argv[0] forged a second `sandbox:` line:
    // red team AK, 5 December).
    let name: String =
        name.chars().flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] }).collect();
    let _ = std::io::stderr().write_all(format!("sandbox: exec: {name}: {}\n", last.desc()).as_bytes());
    sys::exit_now(code)
}

/// Whether a signal taken by the init came from outside its pid namespace: `kill(2)` by the
/// helper (or another process of an ancestor namespace), or the kernel. Those senders appear
/// with `si_pid` 0. A process inside the namespace appears with its own pid, and cannot forge
/// `SI_USER` or `SI_KERNEL` (rt_sigqueueinfo refuses non-negative codes for other processes);
/// what it can make the kernel send on its behalf (F_SETSIG's `POLL_*` codes) is ignored too.
/// Except once its uid's pending signals are at `RLIMIT_SIGPENDING`: the kernel then queues a
/// signal without its sender, which reads as `SI_USER` from pid 0 (red team AM, 5 December);
/// what such a signal does here (forwarded to the workload's own processes, or the run ended
/// through the init's full end) the workload can do itself.
fn from_outside(info: &sys::SignalInfo) -> bool {
    info.pid == 0 && (info.code == libc::SI_USER || info.code == libc::SI_KERNEL)
}

/// The init's life after the fork: reaps everything, forwards signals from outside to the
/// whole namespace, ignores signals from inside, and returns the workload's end (the outcome
/// line). Nothing here can panic.
fn supervise(child: Pid) -> String {
    // Set when the helper ends the run: the workload's first process is then waited for at
    // most `END_REAP` (it may sleep in the kernel for long; see `run_once`), and the run's
    // outcome is its SIGKILL.
    let mut ended: Option<std::time::Instant> = None;
    loop {
        let info = match ended {
            None => sys::wait_signal(sys::ALL_SIGNALS),
            Some(at) => {
                let left = END_REAP.saturating_sub(at.elapsed());
                if left.is_zero() {
                    return format!("signalled {}", libc::SIGKILL);
                }
                sys::wait_signal_for(sys::ALL_SIGNALS, left)
            }
        };
        let Ok(info) = info else { continue };
        if info.signo == libc::SIGCHLD {
            // Reaping is harmless whoever sent it (a forged SIGCHLD finds nothing to reap).
            while let Some(reaped) = sys::reap_any_nohang() {
                match reaped {
                    sys::Reaped::Exited(pid, code) if pid == child.as_raw() => {
                        return format!("exited {code}");
                    }
                    sys::Reaped::Signalled(pid, sig) if pid == child.as_raw() => {
                        return format!("signalled {sig}");
                    }
                    _ => {}
                }
            }
        } else if from_outside(&info) && info.signo == sys::END_RUN_SIGNAL {
            // The helper ends the run (a deadline, an output limit, a kill): every process of
            // the namespace but this init goes now, and the run ends as any other does, after
            // the guard's last checks (the helper kills this init too if it is not done soon).
            let _ = sys::kill_raw(-1, libc::SIGKILL);
            ended.get_or_insert_with(std::time::Instant::now);
        } else if from_outside(&info) {
            // Forward to every process of the namespace (all but this init).
            let _ = sys::kill_raw(-1, info.signo);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_protect_annotation_yields_its_guard() {
        let protected = sandbox_bundle::protect::Protected {
            version: "protect-v1".into(),
            entries: vec![".envrc".into()],
            guard: sandbox_bundle::CreationGuard {
                version: "protect-v1".into(),
                names: vec![".envrc".into()],
                paths: vec!["/ws/.git/hooks".into()],
                exempt: vec!["/tmp".into()],
                no_new_repositories: vec!["/ws".into()],
                no_new_entries: vec!["/ws/.git/modules".into()],
                hidden_in: vec!["/home/u".into()],
                not_exempt: vec![],
                denied: vec![],
                reopened: vec![],
            },
            ..Default::default()
        };
        let text = serde_json::to_string(&protected).unwrap();
        let parsed: ProtectAnnotation = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed.guard, Some(protected.guard));
        let none: ProtectAnnotation = serde_json::from_str(r#"{"version":"none"}"#).unwrap();
        assert!(none.guard.is_none());
        assert!(serde_json::from_str::<ProtectAnnotation>("[1]").is_err());
    }
}
