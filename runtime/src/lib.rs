//! # sandbox — run an agent's tool calls in micro-containers, report what the OS enforced
//!
//! This is the facade users depend on. An application decides that an effect may run; sandbox
//! then decides what the process can reach: a [`Profile`] (workspace, host, network and command
//! access as `Deny` / `Gated` / `Allow`, isolated or real HOME, sandboxed or
//! acknowledged-unconfined) compiles into a minimal OCI bundle that a backend runs, and the
//! caller gets [`Level`], [`Guarantees`] and a [`CompileReport`] of what was achieved.
//!
//! **State of this version.** The profile vocabulary, reports, errors, the bundle compiler,
//! bundle export ([`export::export_bundle`], `sandbox bundle export`, runnable by `runc run`),
//! executor sets, executors, grants and processes are complete. The Linux backend runs bundles
//! with an embedded runtime (libcontainer, our own init, Landlock, seccomp, cgroup limits,
//! protected paths); the macOS Seatbelt backend compiles the same bundle to a Seatbelt profile
//! and has not been run on macOS here. An acknowledged-unconfined profile runs directly.
//!
//! **Not defended against:** kernel exploits, side channels, CPU and disk exhaustion,
//! exfiltration over network a profile or grant opens (CONTRACT.md §1).
//!
//! **Scratch roots (Linux).** A set's directory (`<scratch>/sandbox-executors-<random>`, 0700)
//! holds its HOMEs, TMPDIRs, bundles and runtime state. Nothing in a scratch root is trusted
//! (issue 12): a scratch root inside an area the profile lets a workload write (the workspace,
//! a writable additional root, the real HOME) is refused with `InvalidOptions` naming
//! `scratch_root`; the sweep of dead sets takes no kill target from files there (it kills only
//! in this library's own container cgroups under the set's configured cgroup parent, verified
//! on the cgroup filesystem and owned by this uid, with pids from their `cgroup.procs`) and
//! never blocks on or follows a planted file; removal walks descriptors, so no tree a workload
//! makes (deeper than `PATH_MAX`, read-only, full of symlinks) defeats it, and a clean-up
//! failure never replaces a run's status. Every sandboxed set registers its directory in an
//! owner-only registry in the host's `/tmp` (`/tmp/sandbox-registry-<uid>`, which no sandbox
//! sees) until it closes, and every spawn masks the scratch root of every registered set its
//! view would expose: no sandbox reads another set's HOME, TMPDIR, bundles or state. A
//! container's mounts are fixed when it is made, so a sandbox that started while no set lived
//! on a scratch root can see a set made there later (with host read allowed) until it ends.
//!
//! Call [`init`] as the first statement of `main` in every binary that uses sandbox.
//!
//! MSRV: 1.87 (edition 2024).

#![deny(unsafe_code)]

mod backend;
mod deadline;
mod direct;
mod executor;
pub mod export;
mod fsutil;
mod grant_checks;
mod grants;
#[cfg(target_os = "linux")]
mod kept_probe;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
mod options;
mod output;
mod prepared;
mod probe;
mod process;
pub mod proof;
mod proxy;
#[cfg(target_os = "linux")]
mod registry;
mod route;
mod set;

use std::sync::atomic::{AtomicBool, Ordering};

pub use deadline::{CancelToken, Deadline};
pub use executor::Executor;
pub use fsutil::temp_base;
pub use grants::GrantRequest;
pub use options::{CGROUP_PARENT_ENV, ExecutorSetOptions};
pub use output::{ExitStatus, Output};
pub use prepared::PreparedProcess;
pub use probe::{CgroupProbe, HostProbe, probe};
pub use process::{
    LifetimeContainment, Process, ProcessAccess, ProcessAccessKind, ProcessActivity, ProcessActivityKind,
    ProcessOptions, ProcessReader, ProcessResult, ProcessStdin, Signal, StreamMode,
};
pub use proxy::{DenialReason, NetworkDenial};
pub use route::NetworkTarget;
pub use sandbox_bundle::{
    ACCESS_VERSION, Access, Cause, CompileReport, Error, ErrorKind, Guarantees, Home, Host, HostPattern, Isolation,
    Level, PROTECT_V1, Profile, ProfileConfig, Protection, ReportEntry, RootAccess, Settings, Status, TargetPattern,
    check_invariants, restrict,
};
pub use set::ExecutorSet;

static INIT_CALLED: AtomicBool = AtomicBool::new(false);

/// Must be the first statement of every `main` that uses sandbox.
///
/// When sandbox started this process as its Linux helper (a private argv marker that never
/// reaches a workload), `init` runs the helper and never returns. Otherwise it records the call
/// and returns. Idempotent.
///
/// It also raises this process's soft limit on open files to its hard limit (at most 65,536),
/// as Go's runtime does: each egress proxy connection holds up to four descriptors and a run's
/// pipes a few more, and the usual soft limit of 1,024 would let a few busy runs starve the
/// embedder. Sandboxed processes get their own limits from the bundle.
pub fn init() {
    #[cfg(target_os = "linux")]
    sandbox_linux::dispatch_if_helper();
    #[cfg(unix)]
    raise_open_files();
    INIT_CALLED.store(true, Ordering::SeqCst);
}

/// A hint that this process is about to open a set and spawn in it, within a few tens of
/// milliseconds (the CLI calls it as soon as its arguments parse, issue 16). On Linux it starts
/// the kernel's grace period that the first move of a process into a cgroup otherwise waits
/// out in the runtime's intermediate process (7-15 ms here), on a short-lived thread that
/// moves nothing (`sandbox_linux::cgroups::keep_attach_cheap`); elsewhere it does nothing.
/// Optional: a set opened without it starts the same itself, only later.
///
/// Call it after [`init`] (before, it does nothing): a thread started before `init` would make
/// the re-executed helper refuse to run, since the helper must start single-threaded.
pub fn expect_spawn() {
    if !init_called() {
        return;
    }
    #[cfg(target_os = "linux")]
    sandbox_linux::cgroups::keep_attach_cheap(sandbox_linux::CgroupLayout::detect());
}

/// The soft `RLIMIT_NOFILE` raised to the hard one, capped at 65,536 (never lowered).
#[cfg(unix)]
fn raise_open_files() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let want = hard.min(65_536);
        if soft < want {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, want, hard);
        }
    }
}

/// Whether [`init`] ran in this process.
pub fn init_called() -> bool {
    INIT_CALLED.load(Ordering::SeqCst)
}
