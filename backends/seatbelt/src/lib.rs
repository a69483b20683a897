//! # sandbox-seatbelt — the macOS Seatbelt backend (not implemented yet)
//!
//! This crate will compile bundles to SBPL and launch them with `sandbox-exec`. Until then it
//! refuses honestly: [`probe`] fails with `SandboxUnavailable`. Nothing in this project has run
//! on macOS.
//!
//! MSRV: 1.87 (edition 2024).

#![deny(unsafe_code)]

use sandbox_bundle::{Error, Profile};

/// The name reported for this backend.
pub const BACKEND_NAME: &str = "seatbelt";

/// Checks whether this host can confine `profile`; in this version it never can.
pub fn probe(_profile: &Profile) -> Result<(), Error> {
    Err(Error::SandboxUnavailable {
        detail: String::from("the macos seatbelt backend is not implemented in this version of sandbox"),
    })
}
