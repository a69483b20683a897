//! Examples of sandbox, one per user story (see the `*.rs` files beside this crate's manifest
//! and `scripts/docs/examples.json`, which `scripts/docs/run-examples.mjs` checks):
//!
//! - `stage-11-sandbox-process`: the stage-11 proof.
//! - `tokio-harness`: an async agent harness running several tool calls concurrently.
//! - `export-bundle`: export the bundle of one tool call for inspection by `runc`.
//! - `gated-command`: the gate round trip: `GrantRequired`, the application decides, a grant, a run, a refused replay.
