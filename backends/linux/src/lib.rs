//! # sandbox-linux — the Linux container backend (not implemented yet)
//!
//! This crate will run compiled bundles with an embedded OCI runtime (libcontainer) from a
//! single-threaded helper, apply Landlock and seccomp inside, and measure what was enforced.
//! Until then it refuses honestly: [`probe`] fails with `SandboxUnavailable`, so a sandboxed
//! profile never runs, confined or not.
//!
//! MSRV: 1.85 (edition 2024).

#![deny(unsafe_code)]

use sandbox_bundle::{Error, Profile};

/// The name reported for this backend.
pub const BACKEND_NAME: &str = "linux-container";

/// Checks whether this host can confine `profile`; in this version it never can.
pub fn probe(_profile: &Profile) -> Result<(), Error> {
    Err(Error::SandboxUnavailable {
        detail: String::from("the linux container backend is not implemented in this version of sandbox"),
    })
}
