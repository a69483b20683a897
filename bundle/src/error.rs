//! The one public error enum of the project: failure classes callers branch on (CONTRACT.md §7).

use std::fmt;
use std::io;
use std::sync::Arc;

/// Every failure of every public entry point, as a class a caller can branch on.
///
/// Messages are lowercase, without a trailing period, and may change: branch on the variant or on
/// [`Error::kind`], never on the text. Variants with a `detail` name the offending field or step.
#[non_exhaustive]
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// A profile, profile file, `access_for` query, `restrict` pair or ABI number is invalid.
    #[error("invalid profile: {detail}")]
    InvalidProfile {
        /// What is wrong, naming the field or key.
        detail: String,
    },
    /// An `ExecutorSetOptions` value or a route is invalid.
    #[error("invalid options: {detail}")]
    InvalidOptions {
        /// What is wrong, naming the option.
        detail: String,
    },
    /// Caller input that no grant rule covers is invalid.
    #[error("invalid argument: {detail}")]
    InvalidArgument {
        /// What is wrong, naming the argument.
        detail: String,
    },
    /// No backend can confine a sandboxed profile on this host.
    #[error("sandbox unavailable: {detail}")]
    SandboxUnavailable {
        /// The missing prerequisite and, where one exists, the fix.
        detail: String,
    },
    /// The Linux backend needs its helper and `sandbox::init()` never ran.
    #[error("sandbox::init() was not called first in main")]
    InitNotCalled,
    /// The backend cannot deliver its declared lifetime containment for this spawn.
    #[error("lifetime containment unavailable: {detail}")]
    LifetimeContainmentUnavailable {
        /// Why.
        detail: String,
    },
    /// A new executor key while `max_executors` keys exist.
    #[error("executor limit reached")]
    ExecutorLimit,
    /// `executor(key)` on a closed set.
    #[error("executor set closed")]
    ExecutorSetClosed,
    /// Work on an executor whose set is closing or closed.
    #[error("executor closed")]
    ExecutorClosed {
        /// Output captured before the run was killed.
        partial: Vec<u8>,
    },
    /// The command is Gated and no valid `command.start.v1` grant came with the call.
    #[error("grant required")]
    GrantRequired,
    /// The capability is Deny.
    #[error("grant denied: {detail}")]
    GrantDenied {
        /// Which capability.
        detail: String,
    },
    /// The class, target or capability cannot be granted here.
    #[error("grant unsupported: {detail}")]
    GrantUnsupported {
        /// Why.
        detail: String,
    },
    /// A structurally bad grant request or token.
    #[error("grant malformed: {detail}")]
    GrantMalformed {
        /// What is wrong.
        detail: String,
    },
    /// The token's MAC does not verify on this executor.
    #[error("grant mac does not verify")]
    GrantBadMac,
    /// The grant's expiry is out of range at issue, or has passed at use.
    #[error("grant expired")]
    GrantExpired,
    /// The token was consumed already, or appears twice in one call.
    #[error("grant replayed")]
    GrantReplay,
    /// The execution id differs from the token's.
    #[error("grant bound to another execution")]
    GrantWrongExecution,
    /// The command text differs from the token's.
    #[error("grant bound to another command")]
    GrantWrongCommand,
    /// The canonical working directory differs from the token's.
    #[error("grant bound to another working directory")]
    GrantWrongWorkingDirectory,
    /// The profile fingerprint differs from the token's.
    #[error("grant bound to another profile")]
    GrantProfileMismatch,
    /// The route fingerprint differs from the token's.
    #[error("grant bound to another egress route")]
    GrantRouteMismatch,
    /// Guarantee bits differ from the token's or from what the class needs.
    #[error("grant guarantee mismatch: {detail}")]
    GrantGuaranteeMismatch {
        /// Which bits.
        detail: String,
    },
    /// The grant's target changed identity between issue and spawn.
    #[error("grant target changed: {detail}")]
    GrantTargetChanged {
        /// Which path.
        detail: String,
    },
    /// Output exceeded the limit (or the limit was 0).
    #[error("output limit")]
    OutputLimit {
        /// The first `max_output` bytes.
        partial: Vec<u8>,
    },
    /// The deadline's cancel token was cancelled.
    #[error("cancelled")]
    Cancelled {
        /// Output captured so far.
        partial: Vec<u8>,
    },
    /// The deadline's instant passed.
    #[error("deadline exceeded")]
    DeadlineExceeded {
        /// Output captured so far.
        partial: Vec<u8>,
    },
    /// `start` after the prepared process was closed.
    #[error("process closed")]
    ProcessClosed,
    /// A second `start`.
    #[error("process already started")]
    ProcessAlreadyStarted,
    /// A TTY was requested where the platform has no PTY.
    #[error("process tty unsupported")]
    ProcessTtyUnsupported,
    /// A write after `stdin.close()`.
    #[error("process stdin closed")]
    ProcessStdinClosed,
    /// `resize` on a pipe-mode process.
    #[error("process resize unsupported in pipe mode")]
    ProcessResizeUnsupported,
    /// The proxy denied a network target (later versions).
    #[error("network target denied")]
    NetworkTargetDenied {
        /// Output of the finished run.
        output: Vec<u8>,
    },
    /// A route resolver had no valid selection (later versions).
    #[error("egress route denied: {detail}")]
    EgressRouteDenied {
        /// Why.
        detail: String,
    },
    /// A host I/O failure.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        #[source]
        source: Arc<io::Error>,
    },
    /// The container runtime or helper failed outside the workload.
    #[error("runtime: {detail}")]
    Runtime {
        /// The failing step (`helper: <step>: <reason>`) or the runtime's message.
        detail: String,
    },
}

/// The variant of an [`Error`] without its data.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ErrorKind {
    InvalidProfile,
    InvalidOptions,
    InvalidArgument,
    SandboxUnavailable,
    InitNotCalled,
    LifetimeContainmentUnavailable,
    ExecutorLimit,
    ExecutorSetClosed,
    ExecutorClosed,
    GrantRequired,
    GrantDenied,
    GrantUnsupported,
    GrantMalformed,
    GrantBadMac,
    GrantExpired,
    GrantReplay,
    GrantWrongExecution,
    GrantWrongCommand,
    GrantWrongWorkingDirectory,
    GrantProfileMismatch,
    GrantRouteMismatch,
    GrantGuaranteeMismatch,
    GrantTargetChanged,
    OutputLimit,
    Cancelled,
    DeadlineExceeded,
    ProcessClosed,
    ProcessAlreadyStarted,
    ProcessTtyUnsupported,
    ProcessStdinClosed,
    ProcessResizeUnsupported,
    NetworkTargetDenied,
    EgressRouteDenied,
    Io,
    Runtime,
}

impl ErrorKind {
    /// The snake_case name used in JSON output (`deadline_exceeded`, `grant_required`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidProfile => "invalid_profile",
            ErrorKind::InvalidOptions => "invalid_options",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::SandboxUnavailable => "sandbox_unavailable",
            ErrorKind::InitNotCalled => "init_not_called",
            ErrorKind::LifetimeContainmentUnavailable => "lifetime_containment_unavailable",
            ErrorKind::ExecutorLimit => "executor_limit",
            ErrorKind::ExecutorSetClosed => "executor_set_closed",
            ErrorKind::ExecutorClosed => "executor_closed",
            ErrorKind::GrantRequired => "grant_required",
            ErrorKind::GrantDenied => "grant_denied",
            ErrorKind::GrantUnsupported => "grant_unsupported",
            ErrorKind::GrantMalformed => "grant_malformed",
            ErrorKind::GrantBadMac => "grant_bad_mac",
            ErrorKind::GrantExpired => "grant_expired",
            ErrorKind::GrantReplay => "grant_replay",
            ErrorKind::GrantWrongExecution => "grant_wrong_execution",
            ErrorKind::GrantWrongCommand => "grant_wrong_command",
            ErrorKind::GrantWrongWorkingDirectory => "grant_wrong_working_directory",
            ErrorKind::GrantProfileMismatch => "grant_profile_mismatch",
            ErrorKind::GrantRouteMismatch => "grant_route_mismatch",
            ErrorKind::GrantGuaranteeMismatch => "grant_guarantee_mismatch",
            ErrorKind::GrantTargetChanged => "grant_target_changed",
            ErrorKind::OutputLimit => "output_limit",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::DeadlineExceeded => "deadline_exceeded",
            ErrorKind::ProcessClosed => "process_closed",
            ErrorKind::ProcessAlreadyStarted => "process_already_started",
            ErrorKind::ProcessTtyUnsupported => "process_tty_unsupported",
            ErrorKind::ProcessStdinClosed => "process_stdin_closed",
            ErrorKind::ProcessResizeUnsupported => "process_resize_unsupported",
            ErrorKind::NetworkTargetDenied => "network_target_denied",
            ErrorKind::EgressRouteDenied => "egress_route_denied",
            ErrorKind::Io => "io",
            ErrorKind::Runtime => "runtime",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The failure class.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidProfile { .. } => ErrorKind::InvalidProfile,
            Error::InvalidOptions { .. } => ErrorKind::InvalidOptions,
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::SandboxUnavailable { .. } => ErrorKind::SandboxUnavailable,
            Error::InitNotCalled => ErrorKind::InitNotCalled,
            Error::LifetimeContainmentUnavailable { .. } => ErrorKind::LifetimeContainmentUnavailable,
            Error::ExecutorLimit => ErrorKind::ExecutorLimit,
            Error::ExecutorSetClosed => ErrorKind::ExecutorSetClosed,
            Error::ExecutorClosed { .. } => ErrorKind::ExecutorClosed,
            Error::GrantRequired => ErrorKind::GrantRequired,
            Error::GrantDenied { .. } => ErrorKind::GrantDenied,
            Error::GrantUnsupported { .. } => ErrorKind::GrantUnsupported,
            Error::GrantMalformed { .. } => ErrorKind::GrantMalformed,
            Error::GrantBadMac => ErrorKind::GrantBadMac,
            Error::GrantExpired => ErrorKind::GrantExpired,
            Error::GrantReplay => ErrorKind::GrantReplay,
            Error::GrantWrongExecution => ErrorKind::GrantWrongExecution,
            Error::GrantWrongCommand => ErrorKind::GrantWrongCommand,
            Error::GrantWrongWorkingDirectory => ErrorKind::GrantWrongWorkingDirectory,
            Error::GrantProfileMismatch => ErrorKind::GrantProfileMismatch,
            Error::GrantRouteMismatch => ErrorKind::GrantRouteMismatch,
            Error::GrantGuaranteeMismatch { .. } => ErrorKind::GrantGuaranteeMismatch,
            Error::GrantTargetChanged { .. } => ErrorKind::GrantTargetChanged,
            Error::OutputLimit { .. } => ErrorKind::OutputLimit,
            Error::Cancelled { .. } => ErrorKind::Cancelled,
            Error::DeadlineExceeded { .. } => ErrorKind::DeadlineExceeded,
            Error::ProcessClosed => ErrorKind::ProcessClosed,
            Error::ProcessAlreadyStarted => ErrorKind::ProcessAlreadyStarted,
            Error::ProcessTtyUnsupported => ErrorKind::ProcessTtyUnsupported,
            Error::ProcessStdinClosed => ErrorKind::ProcessStdinClosed,
            Error::ProcessResizeUnsupported => ErrorKind::ProcessResizeUnsupported,
            Error::NetworkTargetDenied { .. } => ErrorKind::NetworkTargetDenied,
            Error::EgressRouteDenied { .. } => ErrorKind::EgressRouteDenied,
            Error::Io { .. } => ErrorKind::Io,
            Error::Runtime { .. } => ErrorKind::Runtime,
        }
    }

    /// Output captured before the failure; empty except for the variants carrying `partial`.
    pub fn partial_output(&self) -> &[u8] {
        match self {
            Error::ExecutorClosed { partial }
            | Error::OutputLimit { partial }
            | Error::Cancelled { partial }
            | Error::DeadlineExceeded { partial } => partial,
            _ => &[],
        }
    }

    pub(crate) fn profile(detail: impl Into<String>) -> Self {
        Error::InvalidProfile { detail: detail.into() }
    }

    pub(crate) fn argument(detail: impl Into<String>) -> Self {
        Error::InvalidArgument { detail: detail.into() }
    }

    /// An [`Error::Io`] with its context.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io { context: context.into(), source: Arc::new(source) }
    }
}
