//! The one public error enum of the project: failure classes callers branch on (CONTRACT.md §7).

use std::fmt;
use std::io;
use std::sync::Arc;

/// Every failure of every public entry point, as a class a caller can branch on.
///
/// Messages are lowercase, without a trailing period, and may change: branch on the variant or on
/// [`Error::kind`], never on the text. Variants with a `detail` name the offending field or step.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub enum Error {
    /// A profile, profile file, `access_for` query, `restrict` pair or ABI number is invalid; or,
    /// at a spawn, a root of the profile is no longer the directory it was made with (issue 12).
    InvalidProfile {
        /// What is wrong, naming the field or key.
        detail: String,
    },
    /// An `ExecutorSetOptions` value or a route is invalid.
    InvalidOptions {
        /// What is wrong, naming the option.
        detail: String,
    },
    /// Caller input that no grant rule covers is invalid.
    InvalidArgument {
        /// What is wrong, naming the argument.
        detail: String,
    },
    /// No backend can confine a sandboxed profile on this host.
    SandboxUnavailable {
        /// The missing prerequisite and, where one exists, the fix.
        detail: String,
    },
    /// The Linux backend needs its helper and `sandbox::init()` never ran.
    InitNotCalled,
    /// The backend cannot deliver its declared lifetime containment for this spawn.
    LifetimeContainmentUnavailable {
        /// Why.
        detail: String,
    },
    /// A new executor key while `max_executors` keys exist.
    ExecutorLimit,
    /// `executor(key)` on a closed set.
    ExecutorSetClosed,
    /// Work on an executor whose set is closing or closed.
    ExecutorClosed {
        /// Output captured before the run was killed.
        partial: Vec<u8>,
    },
    /// The command is Gated and no valid `command.start.v1` grant came with the call.
    GrantRequired,
    /// The capability is Deny.
    GrantDenied {
        /// Which capability.
        detail: String,
    },
    /// The class, target or capability cannot be granted here.
    GrantUnsupported {
        /// Why.
        detail: String,
    },
    /// A structurally bad grant request or token.
    GrantMalformed {
        /// What is wrong.
        detail: String,
    },
    /// The token's MAC does not verify on this executor.
    GrantBadMac,
    /// The grant's expiry is out of range at issue, or has passed at use.
    GrantExpired,
    /// The token was consumed already, or appears twice in one call.
    GrantReplay,
    /// The execution id differs from the token's.
    GrantWrongExecution,
    /// The command text differs from the token's.
    GrantWrongCommand,
    /// The canonical working directory differs from the token's.
    GrantWrongWorkingDirectory,
    /// The profile fingerprint differs from the token's.
    GrantProfileMismatch,
    /// The route fingerprint differs from the token's.
    GrantRouteMismatch,
    /// Guarantee bits differ from the token's or from what the class needs.
    GrantGuaranteeMismatch {
        /// Which bits.
        detail: String,
    },
    /// The grant's target changed identity between issue and spawn.
    GrantTargetChanged {
        /// Which path.
        detail: String,
    },
    /// Output exceeded the limit (or the limit was 0).
    OutputLimit {
        /// The first `max_output` bytes.
        partial: Vec<u8>,
    },
    /// The deadline's cancel token was cancelled.
    Cancelled {
        /// Output captured so far.
        partial: Vec<u8>,
    },
    /// The deadline's instant passed.
    DeadlineExceeded {
        /// Output captured so far.
        partial: Vec<u8>,
    },
    /// `start` after the prepared process was closed.
    ProcessClosed,
    /// A second `start`.
    ProcessAlreadyStarted,
    /// A TTY was requested where the platform has no PTY.
    ProcessTtyUnsupported,
    /// A write after `stdin.close()`.
    ProcessStdinClosed,
    /// `resize` on a pipe-mode process.
    ProcessResizeUnsupported,
    /// The proxy denied a network target (later versions).
    NetworkTargetDenied {
        /// Output of the finished run.
        output: Vec<u8>,
    },
    /// A route resolver had no valid selection (later versions).
    EgressRouteDenied {
        /// Why.
        detail: String,
    },
    /// A host I/O failure.
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        source: Arc<io::Error>,
    },
    /// The container runtime or helper failed outside the workload.
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

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidProfile { detail } => write!(f, "invalid profile: {detail}"),
            Error::InvalidOptions { detail } => write!(f, "invalid options: {detail}"),
            Error::InvalidArgument { detail } => write!(f, "invalid argument: {detail}"),
            Error::SandboxUnavailable { detail } => write!(f, "sandbox unavailable: {detail}"),
            Error::InitNotCalled => write!(f, "sandbox::init() was not called first in main"),
            Error::LifetimeContainmentUnavailable { detail } => write!(f, "lifetime containment unavailable: {detail}"),
            Error::ExecutorLimit => write!(f, "executor limit reached"),
            Error::ExecutorSetClosed => write!(f, "executor set closed"),
            Error::ExecutorClosed { .. } => write!(f, "executor closed"),
            Error::GrantRequired => write!(f, "grant required"),
            Error::GrantDenied { detail } => write!(f, "grant denied: {detail}"),
            Error::GrantUnsupported { detail } => write!(f, "grant unsupported: {detail}"),
            Error::GrantMalformed { detail } => write!(f, "grant malformed: {detail}"),
            Error::GrantBadMac => write!(f, "grant mac does not verify"),
            Error::GrantExpired => write!(f, "grant expired"),
            Error::GrantReplay => write!(f, "grant replayed"),
            Error::GrantWrongExecution => write!(f, "grant bound to another execution"),
            Error::GrantWrongCommand => write!(f, "grant bound to another command"),
            Error::GrantWrongWorkingDirectory => write!(f, "grant bound to another working directory"),
            Error::GrantProfileMismatch => write!(f, "grant bound to another profile"),
            Error::GrantRouteMismatch => write!(f, "grant bound to another egress route"),
            Error::GrantGuaranteeMismatch { detail } => write!(f, "grant guarantee mismatch: {detail}"),
            Error::GrantTargetChanged { detail } => write!(f, "grant target changed: {detail}"),
            Error::OutputLimit { .. } => write!(f, "output limit"),
            Error::Cancelled { .. } => write!(f, "cancelled"),
            Error::DeadlineExceeded { .. } => write!(f, "deadline exceeded"),
            Error::ProcessClosed => write!(f, "process closed"),
            Error::ProcessAlreadyStarted => write!(f, "process already started"),
            Error::ProcessTtyUnsupported => write!(f, "process tty unsupported"),
            Error::ProcessStdinClosed => write!(f, "process stdin closed"),
            Error::ProcessResizeUnsupported => write!(f, "process resize unsupported in pipe mode"),
            Error::NetworkTargetDenied { .. } => write!(f, "network target denied"),
            Error::EgressRouteDenied { detail } => write!(f, "egress route denied: {detail}"),
            Error::Io { context, source, .. } => write!(f, "{context}: {source}"),
            Error::Runtime { detail, .. } => write!(f, "runtime: {detail}"),
        }
    }
}

impl std::error::Error for Error {
    /// The underlying `io::Error` of [`Error::Io`]; none for the other classes.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.as_ref()),
            _ => None,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn every_variant() -> Vec<Error> {
        let d = || String::from("detail");
        let p = || b"partial".to_vec();
        vec![
            Error::InvalidProfile { detail: d() },
            Error::InvalidOptions { detail: d() },
            Error::InvalidArgument { detail: d() },
            Error::SandboxUnavailable { detail: d() },
            Error::InitNotCalled,
            Error::LifetimeContainmentUnavailable { detail: d() },
            Error::ExecutorLimit,
            Error::ExecutorSetClosed,
            Error::ExecutorClosed { partial: p() },
            Error::GrantRequired,
            Error::GrantDenied { detail: d() },
            Error::GrantUnsupported { detail: d() },
            Error::GrantMalformed { detail: d() },
            Error::GrantBadMac,
            Error::GrantExpired,
            Error::GrantReplay,
            Error::GrantWrongExecution,
            Error::GrantWrongCommand,
            Error::GrantWrongWorkingDirectory,
            Error::GrantProfileMismatch,
            Error::GrantRouteMismatch,
            Error::GrantGuaranteeMismatch { detail: d() },
            Error::GrantTargetChanged { detail: d() },
            Error::OutputLimit { partial: p() },
            Error::Cancelled { partial: p() },
            Error::DeadlineExceeded { partial: p() },
            Error::ProcessClosed,
            Error::ProcessAlreadyStarted,
            Error::ProcessTtyUnsupported,
            Error::ProcessStdinClosed,
            Error::ProcessResizeUnsupported,
            Error::NetworkTargetDenied { output: p() },
            Error::EgressRouteDenied { detail: d() },
            Error::io("reading x", io::Error::new(io::ErrorKind::NotFound, "gone")),
            Error::Runtime { detail: d() },
        ]
    }

    #[test]
    fn messages_are_lowercase_without_a_period_and_kinds_are_distinct() {
        let mut kinds = std::collections::HashSet::new();
        for e in every_variant() {
            let msg = e.to_string();
            assert!(!msg.is_empty() && !msg.ends_with('.'), "{msg}");
            assert_eq!(msg.chars().next(), msg.chars().next().map(|c| c.to_ascii_lowercase()), "{msg}");
            assert!(kinds.insert(e.kind()), "{:?} twice", e.kind());
            assert_eq!(e.clone().kind(), e.kind());
            let name = e.kind().as_str();
            assert!(name.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{name}");
        }
        assert_eq!(kinds.len(), 35);
    }

    #[test]
    fn display_texts_are_pinned() {
        let expected = [
            "invalid profile: detail",
            "invalid options: detail",
            "invalid argument: detail",
            "sandbox unavailable: detail",
            "sandbox::init() was not called first in main",
            "lifetime containment unavailable: detail",
            "executor limit reached",
            "executor set closed",
            "executor closed",
            "grant required",
            "grant denied: detail",
            "grant unsupported: detail",
            "grant malformed: detail",
            "grant mac does not verify",
            "grant expired",
            "grant replayed",
            "grant bound to another execution",
            "grant bound to another command",
            "grant bound to another working directory",
            "grant bound to another profile",
            "grant bound to another egress route",
            "grant guarantee mismatch: detail",
            "grant target changed: detail",
            "output limit",
            "cancelled",
            "deadline exceeded",
            "process closed",
            "process already started",
            "process tty unsupported",
            "process stdin closed",
            "process resize unsupported in pipe mode",
            "network target denied",
            "egress route denied: detail",
            "reading x: gone",
            "runtime: detail",
        ];
        let all = every_variant();
        assert_eq!(all.len(), expected.len());
        for (e, text) in all.iter().zip(expected) {
            assert_eq!(e.to_string(), text, "{:?}", e.kind());
        }
    }

    #[test]
    fn partial_output_only_for_the_partial_variants() {
        for e in every_variant() {
            let has = matches!(
                e.kind(),
                ErrorKind::ExecutorClosed | ErrorKind::OutputLimit | ErrorKind::Cancelled | ErrorKind::DeadlineExceeded
            );
            assert_eq!(e.partial_output(), if has { &b"partial"[..] } else { &[][..] }, "{:?}", e.kind());
        }
    }

    #[test]
    fn io_keeps_its_source() {
        use std::error::Error as _;
        let e = Error::io("reading x", io::Error::new(io::ErrorKind::NotFound, "gone"));
        let source = e.source().expect("io error has a source");
        assert_eq!(source.downcast_ref::<io::Error>().map(io::Error::kind), Some(io::ErrorKind::NotFound));
        assert!(Error::GrantReplay.source().is_none());
        let cloned = e.clone();
        assert_eq!(cloned.to_string(), "reading x: gone");
    }
}
