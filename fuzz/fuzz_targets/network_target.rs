//! `NetworkTarget::parse` on arbitrary text: `InvalidArgument` or a target that is normalized
//! (it prints back unchanged and parses to itself).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox::NetworkTarget;
use sandbox_bundle::ErrorKind;
use sandbox_fuzz::assert_named;

fuzz_target!(|text: &str| {
    let target = match NetworkTarget::parse(text) {
        Ok(t) => t,
        Err(e) => return assert_named(&e, ErrorKind::InvalidArgument),
    };
    assert!(target.port() >= 1);
    assert!(!target.host().is_empty());
    let printed = target.to_string();
    match NetworkTarget::parse(&printed) {
        Ok(again) => {
            assert_eq!(again, target, "{text:?} -> {printed:?}");
            assert_eq!(again.to_string(), printed);
        }
        Err(e) => panic!("{text:?} printed as {printed:?}, which does not parse: {e}"),
    }
});
