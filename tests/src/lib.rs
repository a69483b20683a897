//! Shared helpers of the conformance suite.
