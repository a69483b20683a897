//! Messages between the library (parent) and its helper, one JSON object per line on the
//! control socket.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What one spawn needs from the helper.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The bundle directory (holds `config.json` and `rootfs/`).
    pub bundle: PathBuf,
    /// A unique container id.
    pub id: String,
    /// The runtime's state root (one per executor set).
    pub state_root: PathBuf,
    /// The caller is not root: join the container's user namespace to raise `lo`.
    pub rootless: bool,
    /// Raise `lo` in the container's private network namespace.
    pub loopback: bool,
    /// Fail the spawn when `lo` cannot be raised.
    pub require_loopback: bool,
    /// Fail the spawn unless Landlock is fully enforced.
    pub require_landlock: bool,
    /// Fail the spawn unless seccomp is installed.
    pub require_seccomp: bool,
    /// cgroup files to read back after start (`pids.max`, `memory.limit_in_bytes`, …).
    pub readback: Vec<PathBuf>,
}

/// Parent → helper, after the request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Send a signal to the container's init (which forwards it to the namespace).
    Signal {
        /// The signal number.
        signal: i32,
    },
}

/// How the workload ended, as the helper saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The workload exited with a code.
    Exited {
        /// The code.
        code: i32,
    },
    /// A signal ended the workload (or the init was killed outright).
    Signalled {
        /// The signal number.
        signal: i32,
    },
    /// A setup step failed before exec (`helper: <step>: <reason>`) or the runtime failed.
    Failed {
        /// The detail.
        detail: String,
    },
}

/// What the helper measured for the spawn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    /// Landlock as the init measured it: `full`, `partial`, `none` (absent when setup failed).
    pub landlock: Option<String>,
    /// The kernel's Landlock ABI.
    pub landlock_abi: u32,
    /// The seccomp mode read from `/proc/self/status` after install (2 = filter).
    pub seccomp: u32,
    /// Whether `lo` was raised (None when not asked).
    pub loopback: Option<bool>,
    /// The read-back values of `Request::readback`, in order (None when unreadable).
    pub readback: Vec<Option<String>>,
}

/// Helper → parent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The container exists and was started.
    Started {
        /// The init's pid (in the helper's pid namespace).
        pid: i32,
    },
    /// Everything is over and torn down.
    Finished {
        /// The outcome.
        outcome: Outcome,
        /// The measurements.
        measured: Measured,
        /// Teardown was proven (init reaped, container deleted).
        teardown: bool,
    },
}
