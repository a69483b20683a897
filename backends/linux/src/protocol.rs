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
    /// The egress proxy's port (issue 17): the helper makes a listener on `127.0.0.1:<port>`
    /// in the container's network namespace, after `lo`, and passes it to the parent over the
    /// descriptor socket before `Started`. The parent serves it; nothing inside does.
    #[serde(default)]
    pub proxy_port: Option<u16>,
    /// Fail the spawn when the proxy's listener cannot be made.
    #[serde(default)]
    pub require_proxy: bool,
    /// Fail the spawn unless Landlock is fully enforced.
    pub require_landlock: bool,
    /// Fail the spawn unless seccomp is installed.
    pub require_seccomp: bool,
    /// cgroup limits: written by the helper where `write` is set (rootless: the runtime would
    /// also write device rules it may not), then read back.
    pub limits: Vec<Limit>,
    /// Fail the spawn unless every limit reads back as set.
    pub require_limits: bool,
    /// The spawn's own `cgroup.procs` (its processes are killed through it, and the teardown is
    /// proven when it is empty); none without a cgroup.
    #[serde(default)]
    pub procs: Option<PathBuf>,
    /// The spawn's cgroup path (`<parent>/<id>`, the same in every hierarchy); none without a
    /// cgroup. With one, the helper removes the container itself once its init is gone, as a
    /// sweep removes a container (see `Host::delete_container`).
    #[serde(default)]
    pub cgroup_path: Option<String>,
    /// No usable cgroup: the helper enters its own user, mount and cgroup namespaces first
    /// (see `enter_cgroupless`), so that the runtime makes none.
    #[serde(default)]
    pub cgroupless: bool,
    /// The run's own bound on inotify (instances, watches), written in the container's user
    /// namespace (`/proc/sys/user/max_inotify_{instances,watches}`); part of the limits: a
    /// failure fails the spawn when `require_limits` is set.
    #[serde(default)]
    pub inotify: Option<(u64, u64)>,
    /// Mounts the helper fixes in the container's mount namespace before `go` (see
    /// [`MountFixes`]); nothing to do when empty.
    #[serde(default)]
    pub mount_fixes: MountFixes,
    /// The process gets a PTY (`process.terminal`): the helper collects the master from the
    /// runtime's console socket and passes it to the parent over the descriptor socket.
    #[serde(default)]
    pub tty: bool,
    /// A warm container: build it, raise `lo`, report [`Event::Ready`] and wait for
    /// [`Command::Go`] (which carries the real process) before anything runs.
    #[serde(default)]
    pub warm: bool,
}

/// One cgroup limit file and its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    /// The file (`pids.max`, `memory.limit_in_bytes`, `memory.max`, `cpu.shares`, `cpu.weight`,
    /// `cpu.cfs_quota_us`, `cpu.max`).
    pub file: PathBuf,
    /// The value to set.
    pub value: u64,
    /// The helper writes it (otherwise the runtime did, from `linux.resources`).
    pub write: bool,
}

impl Limit {
    /// Whether `read` (the file's content) shows the limit in force: equal, or for memory
    /// rounded down to whole pages by the kernel. Only the first word counts (`cpu.max` reads
    /// `<quota> <period>`).
    pub fn holds(&self, read: &str) -> bool {
        let memory = self.file.file_name().is_some_and(|n| n.to_string_lossy().starts_with("memory."));
        let slack = if memory { 4096 * 16 } else { 1 };
        read.split_whitespace()
            .next()
            .and_then(|w| w.parse::<u64>().ok())
            .is_some_and(|got| got <= self.value && self.value - got < slack)
    }
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
    /// Run this process in the warm container. The workload's stdin, stdout and stderr follow
    /// on the descriptor socket (SCM_RIGHTS).
    Go(GoProcess),
}

/// The process a warm container runs: what `config.json`'s `process` would have said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoProcess {
    /// argv (non-empty).
    pub args: Vec<String>,
    /// `KEY=value` entries, passed to exec as they are.
    pub env: Vec<String>,
    /// The working directory inside the container.
    pub cwd: String,
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

/// How much of its Landlock ruleset the kernel enforces on a container (on the wire: `full`,
/// `partial`, `none`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LandlockStatus {
    /// Every handled right is enforced.
    Full,
    /// Some are.
    Partial,
    /// None (no Landlock in this kernel).
    None,
}

impl LandlockStatus {
    /// Every status.
    pub const ALL: [LandlockStatus; 3] = [LandlockStatus::Full, LandlockStatus::Partial, LandlockStatus::None];

    /// The wire name (the JSON value, the status pipe's `landlock=` and the report's text).
    pub fn as_str(self) -> &'static str {
        match self {
            LandlockStatus::Full => "full",
            LandlockStatus::Partial => "partial",
            LandlockStatus::None => "none",
        }
    }
}

impl std::fmt::Display for LandlockStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the helper measured for the spawn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    /// Landlock as the init measured it (absent when setup failed).
    pub landlock: Option<LandlockStatus>,
    /// The kernel's Landlock ABI.
    pub landlock_abi: u32,
    /// The seccomp mode read from `/proc/self/status` after install (2 = filter).
    pub seccomp: u32,
    /// Whether `lo` was raised (None when not asked).
    pub loopback: Option<bool>,
    /// Why `lo` could not be raised.
    #[serde(default)]
    pub loopback_error: Option<String>,
    /// Whether the proxy's listener was made and passed (None when not asked).
    #[serde(default)]
    pub proxy: Option<bool>,
    /// Why it was not.
    #[serde(default)]
    pub proxy_error: Option<String>,
    /// Why the inotify bound of `Request::inotify` could not be set (None: set, or not asked).
    #[serde(default)]
    pub inotify_error: Option<String>,
    /// The workload's direct connections and datagrams the init refused (issue 17: with the
    /// egress proxy on, a call to an address off the sandbox's loopback), as their targets
    /// (`tcp:192.0.2.1:443`, `udp:[2001:db8::1]:53`, `ip:…`), in order, at most
    /// [`crate::status::MAX_DIRECT`].
    #[serde(default)]
    pub direct: Vec<String>,
    /// How many more were refused past that bound (only counted).
    #[serde(default)]
    pub direct_dropped: u32,
    /// The read-back values of `Request::readback`, in order (None when unreadable).
    pub readback: Vec<Option<String>>,
    /// When the helper reached each step of the spawn (microseconds of `CLOCK_MONOTONIC`, the
    /// clock the parent's `Instant` reads), for profiling the spawn path.
    #[serde(default)]
    pub phases: Vec<(String, u64)>,
}

/// Microseconds of `CLOCK_MONOTONIC` now (comparable across processes on one host).
pub fn monotonic_us() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_nsec()).unwrap_or(0) / 1000)
        .unwrap_or(0)
}

/// Helper → parent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A warm container is ready and waits for [`Command::Go`].
    Ready,
    /// The container exists and was started.
    Started {
        /// The init's pid (in the helper's pid namespace).
        pid: i32,
    },
    /// The run is over and every process of it is gone, but its container is kept for the next
    /// run of its shape (issue 16): it reports [`Event::Ready`] once its `/tmp` and `/dev/shm`
    /// are emptied, and takes another [`Command::Go`].
    Kept {
        /// The outcome.
        outcome: Outcome,
        /// The measurements.
        measured: Measured,
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_landlock_status_keeps_its_lowercase_wire_names() {
        for status in LandlockStatus::ALL {
            let measured = Measured { landlock: Some(status), ..Measured::default() };
            let json = serde_json::to_string(&measured).unwrap();
            assert!(json.contains(&format!("\"landlock\":\"{status}\"")), "{json}");
            assert_eq!(serde_json::from_str::<Measured>(&json).unwrap(), measured);
        }
        let json = serde_json::to_string(&Measured::default()).unwrap();
        assert!(json.contains("\"landlock\":null"), "{json}");
        assert!(serde_json::from_str::<LandlockStatus>("\"Full\"").is_err());
        assert_eq!(LandlockStatus::ALL.map(LandlockStatus::as_str), ["full", "partial", "none"]);
    }
}

/// What the helper does in the container's mount namespace between `ready` and `go`, from a
/// short-lived child that joins it (issue 16's round-2 red team, 4 December).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountFixes {
    /// Directories the container made itself (on its private `/tmp`, `/dev/shm` or a mask)
    /// between such a mount and a mount nested in it, shallow first: each is bound onto itself
    /// (recursively), so that it is a mount point the workload cannot rename or remove. Renamed,
    /// it moved a workspace bound beneath to another path, where the creation guard (which
    /// decides by path) no longer knew it, and in a kept container it moved HOME, TMPDIR or a
    /// root for every later run.
    pub pins: Vec<PathBuf>,
    /// Paths that may be binds of the host's device nodes (the runtime's default devices and
    /// the `/dev/null` binds masking `/proc` files): each that is a mount point is remounted
    /// read-only (device reads and writes still work; `chmod`, `chown` and `utimes` of the
    /// host's node fail). Root only: as root the container's uid 0 owns the host's nodes.
    pub devices: Vec<PathBuf>,
}

impl MountFixes {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.pins.is_empty() && self.devices.is_empty()
    }
}
