//! The JSON the library reads besides profiles: the helper protocol (one message per line on
//! the control socket, both directions) and the bundle's `config.json` (an OCI `Spec`, as the
//! helper's runtime loads it). Arbitrary bytes are an error value or a message that survives
//! a round trip unchanged.
#![no_main]

use std::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use sandbox_bundle::oci_spec::runtime::Spec;
use sandbox_bundle::spec_json;
use sandbox_fuzz::assert_message;
use sandbox_linux::fuzzing::{Command, Event, Limit, Measured, Outcome, Request};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Decodes `data` as a `T`; what decodes must encode and decode back to itself.
fn round_trip<T: DeserializeOwned + Serialize + PartialEq + Debug>(data: &[u8]) -> Option<T> {
    match serde_json::from_slice::<T>(data) {
        Ok(value) => {
            let text = serde_json::to_string(&value).unwrap_or_else(|e| panic!("{value:?} does not encode: {e}"));
            match serde_json::from_str::<T>(&text) {
                Ok(again) => assert_eq!(again, value, "{text}"),
                Err(e) => panic!("{text} does not decode back: {e}"),
            }
            Some(value)
        }
        Err(e) => {
            assert_message(&e.to_string());
            None
        }
    }
}

fuzz_target!(|data: &[u8]| {
    round_trip::<Request>(data);
    round_trip::<Command>(data);
    round_trip::<Event>(data);
    round_trip::<Outcome>(data);
    round_trip::<Measured>(data);
    round_trip::<Limit>(data);
    if let Some(spec) = round_trip::<Spec>(data) {
        // The bundle compiler's renderer (sorted keys) takes any spec and keeps it intact.
        match spec_json(&spec) {
            Ok(text) => match serde_json::from_str::<Spec>(&text) {
                Ok(again) => assert_eq!(again, spec, "{text}"),
                Err(e) => panic!("spec_json output does not decode: {e}\n{text}"),
            },
            Err(e) => assert_message(&e.to_string()),
        }
    }
});
