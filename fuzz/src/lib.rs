//! Shared checks of the fuzz targets: errors are values whose message names the problem.

use sandbox_bundle::{Error, ErrorKind};

/// Panics (the fuzz failure) unless `e` is of `kind` and its message names the problem: not
/// empty, and a `<class>: <detail>` message has a non-empty detail.
pub fn assert_named(e: &Error, kind: ErrorKind) {
    assert_eq!(e.kind(), kind, "unexpected error class: {e}");
    assert_message(&e.to_string());
}

/// Panics unless `msg` is non-empty and does not end in an empty detail (`"<class>: "`).
pub fn assert_message(msg: &str) {
    assert!(!msg.trim().is_empty(), "empty error message");
    assert!(!msg.ends_with(": "), "error message without a detail: {msg:?}");
}
