//! The one public error enum of the project: failure classes callers branch on (CONTRACT.md §7).

use std::fmt;
use std::io;
use std::sync::Arc;

/// Every failure of every public entry point, as a class a caller can branch on.
///
/// Messages are lowercase, without a trailing period, and may change: branch on the variant or on
/// [`Error::kind`], never on the text. Variants with a `detail` name the offending field or step.
/// [`std::error::Error::source`] gives the underlying error of [`Error::Io`] (an `io::Error`) and
/// of an [`Error::Runtime`] built with one; none for the other classes.
#[non_exhaustive]
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// A profile, profile file, `access_for` query, `restrict` pair or ABI number is invalid; or,
    /// at a spawn, a root of the profile is no longer the directory it was made with (issue 12).
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
        /// The underlying error ([`std::error::Error::source`] yields the `io::Error` itself).
        #[source]
        source: Cause<io::Error>,
    },
    /// The container runtime or helper failed outside the workload.
    ///
    /// Built with [`Error::runtime`] or [`Error::runtime_with`]; a failed clean-up after it is
    /// attached with [`Error::with_cleanup`]. The message is `runtime: <detail>`, then
    /// `: <source>` and `; <cleanup>` for those present.
    #[error("runtime: {detail}{}{}", suffix(": ", .source), suffix("; ", .cleanup))]
    Runtime {
        /// The failing step (`helper: <step>: <reason>`) or the runtime's message.
        detail: String,
        /// The error that caused it, when there is one.
        #[source]
        source: Option<Cause>,
        /// What failed while cleaning up after it (a sweep of what the container left), when
        /// the clean-up failed too.
        cleanup: Option<Cause>,
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
        Error::Io { context: context.into(), source: Cause::from(source) }
    }

    /// An [`Error::Runtime`] naming the failing step, without an underlying error.
    pub fn runtime(detail: impl Into<String>) -> Self {
        Error::Runtime { detail: detail.into(), source: None, cleanup: None }
    }

    /// An [`Error::Runtime`] naming the failing step, caused by `source` (the message is
    /// `runtime: <detail>: <source>`).
    pub fn runtime_with(detail: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Runtime { detail: detail.into(), source: Some(Cause::new(source)), cleanup: None }
    }

    /// This error with the failure of the clean-up that followed it kept beside it (the message
    /// gains `; <cleanup>`). Only [`Error::Runtime`] carries one: any other class is returned
    /// unchanged.
    #[must_use]
    pub fn with_cleanup(self, failure: impl std::error::Error + Send + Sync + 'static) -> Self {
        match self {
            Error::Runtime { detail, source, .. } => {
                Error::Runtime { detail, source, cleanup: Some(Cause::new(failure)) }
            }
            other => other,
        }
    }

    /// The failure of the clean-up after this error, if one is kept ([`Error::with_cleanup`]).
    pub fn cleanup(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        match self {
            Error::Runtime { cleanup: Some(c), .. } => Some(&**c),
            _ => None,
        }
    }
}

/// An underlying error held by an [`Error`], shared between its clones (an [`Error`] is `Clone`,
/// most errors are not).
///
/// It derefs to the error it holds, so [`std::error::Error::source`] of an [`Error`] yields that
/// error itself (`downcast_ref::<io::Error>()` works on an [`Error::Io`]'s source).
pub struct Cause<E: ?Sized + 'static = dyn std::error::Error + Send + Sync>(Arc<E>);

impl Cause {
    /// Holds `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Cause(Arc::new(error))
    }
}

impl From<io::Error> for Cause<io::Error> {
    fn from(error: io::Error) -> Self {
        Cause(Arc::new(error))
    }
}

impl<E: ?Sized> From<Arc<E>> for Cause<E> {
    fn from(error: Arc<E>) -> Self {
        Cause(error)
    }
}

impl<E: ?Sized> Clone for Cause<E> {
    fn clone(&self) -> Self {
        Cause(Arc::clone(&self.0))
    }
}

impl<E: ?Sized> std::ops::Deref for Cause<E> {
    type Target = E;
    fn deref(&self) -> &E {
        &self.0
    }
}

impl<E: ?Sized> AsRef<E> for Cause<E> {
    fn as_ref(&self) -> &E {
        &self.0
    }
}

impl<E: ?Sized + fmt::Debug> fmt::Debug for Cause<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl<E: ?Sized + fmt::Display> fmt::Display for Cause<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

/// `<separator><cause>` when there is a cause, nothing otherwise (for the `Runtime` message).
fn suffix<'a>(separator: &'a str, cause: &'a Option<Cause>) -> impl fmt::Display + 'a {
    struct Suffix<'a>(&'a str, &'a Option<Cause>);
    impl fmt::Display for Suffix<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.1 {
                Some(cause) => write!(f, "{}{cause}", self.0),
                None => Ok(()),
            }
        }
    }
    Suffix(separator, cause)
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
            Error::runtime(d()),
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
    fn runtime_keeps_its_source_and_its_cleanup_beside_it() {
        use std::error::Error as _;
        let cause = io::Error::new(io::ErrorKind::BrokenPipe, "pipe closed");
        let e = Error::runtime_with("starting the helper", cause);
        assert_eq!(e.to_string(), "runtime: starting the helper: pipe closed");
        let source = e.source().expect("runtime_with has a source");
        assert_eq!(source.downcast_ref::<io::Error>().map(io::Error::kind), Some(io::ErrorKind::BrokenPipe));
        assert!(e.cleanup().is_none());
        let sweep = io::Error::other("sweep: /sys/fs/cgroup/x still has processes");
        let e = Error::runtime("teardown unproven").with_cleanup(sweep);
        assert_eq!(e.to_string(), "runtime: teardown unproven; sweep: /sys/fs/cgroup/x still has processes");
        assert!(e.source().is_none());
        assert_eq!(
            e.cleanup().map(ToString::to_string).as_deref(),
            Some("sweep: /sys/fs/cgroup/x still has processes")
        );
        assert_eq!(e.clone().to_string(), e.to_string());
        assert_eq!(Error::runtime("x").kind(), ErrorKind::Runtime);
        assert!(Error::GrantReplay.with_cleanup(io::Error::other("y")).cleanup().is_none());
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
