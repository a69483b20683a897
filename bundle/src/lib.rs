//! # sandbox-bundle — the pure core of sandbox
//!
//! Data in, data out: the profile vocabulary and its validation ([`Profile`], [`restrict`],
//! `access_for`, fingerprints), the report types ([`Level`], [`Guarantees`], [`CompileReport`]),
//! the environment scrub, and the compiler from one profile plus one spawn to an OCI bundle
//! ([`compile()`]), with bundle export ([`plan_export`]).
//!
//! **Guarantees.** Every [`Profile`] value is valid and canonical; compilation never spawns a
//! process and never reads the host except through a [`HostView`] handed in; a spec is built
//! field by field with oci-spec's typed builders (every field set, so none comes from oci-spec's
//! defaults), never from `Spec::default()`. Bad input is an [`Error`] naming the field,
//! never a panic.
//!
//! **Not here.** Nothing in this crate enforces anything: the Linux backend runs bundles with
//! an embedded runtime and measures what was enforced; standard OCI runtimes (runc, crun) run
//! exported bundles without Landlock and without the sandbox init. Kernel exploits and side
//! channels are out of scope for the whole project.
//!
//! **Decisions recorded here** (where the contract is silent): every bundle sets `RLIMIT_CORE`
//! to 0 (no core files in the workspace) and `RLIMIT_NOFILE` to 1024 soft / 4096 hard; the
//! private `/tmp` has no size cap beyond the kernel's tmpfs default; mask tmpfs are 64 KiB; at a
//! shared destination the executor's HOME/TMPDIR win over the scratch-root mask, which wins over
//! the workspace and roots, which win over the runtime closure, which wins over area masks and
//! host entries (so a `Deny` root never hides the closure, and an explicit root may widen it).
//!
//! MSRV: 1.87 (edition 2024).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use oci_spec;

pub mod access;
pub mod assessment;
pub mod compile;
pub mod env;
pub mod error;
pub mod export;
pub mod host;
pub mod path;
pub mod profile;
pub mod protect;
pub mod report;
pub mod seccomp;
pub mod target;

pub use access::{Access, Home, Isolation, RootAccess};
pub use assessment::{Confinement, Facts, assess, unix_sockets_entry};
pub use compile::{
    Bundle, ExpectedMount, GrantDeltas, LandlockPathRule, LandlockRules, Launch, MountKind, MountPlan, Origin,
    PlannedMount, ROOTFS, SpawnContext, compile, egress_proxy, spec_json,
};
pub use env::{EnvOptions, ScrubFlags, scrub};
pub use error::{Cause, Error, ErrorKind};
pub use export::{
    ExportPlan, ExportRequest, check_seed, plan_export, rootfs_key, write_bundle, write_bundle_on, write_config,
    write_rootfs,
};
pub use host::{ClosureEntry, EntryKind, HostEntry, HostView, HostViewMemo};
pub use profile::{
    ACCESS_VERSION, Axis, IdentityRole, PRIVATE_PATHS, PathIdentity, Profile, ProfileConfig, RootSettings, Settings,
    restrict,
};
pub use protect::{CreateOp, CreationGuard, PROTECT_V1, Protection};
pub use report::{CompileReport, Guarantees, Level, ReportEntry, Status, check_invariants};
pub use target::{Host, HostPattern, TargetPattern};
