//! `ProfileConfig::from_json` on arbitrary text, then `Profile::new` on whatever parses.
//! Non-UTF-8 bytes never reach the parser (the CLI reads the file as a `String` first).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_bundle::{ErrorKind, Profile, ProfileConfig, restrict};
use sandbox_fuzz::assert_named;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let config = match ProfileConfig::from_json(text) {
        Ok(c) => c,
        Err(e) => return assert_named(&e, ErrorKind::InvalidProfile),
    };
    let profile = match Profile::new(config) {
        Ok(p) => p,
        Err(e) => return assert_named(&e, ErrorKind::InvalidProfile),
    };
    assert_eq!(profile.access_version(), 1);
    let fp = profile.fingerprint();
    assert!(fp.len() == 64 && fp.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')), "{fp}");
    let _ = profile.settings();
    // A profile intersected with itself keeps its authority at every area it names.
    let same = match restrict(&profile, &profile) {
        Ok(p) => p,
        Err(e) => panic!("restrict(p, p) failed: {e}"),
    };
    let c = profile.config();
    let paths = std::iter::once(&c.workspace_root).chain(c.additional_roots.iter().map(|r| &r.path));
    for p in paths.filter_map(|p| p.to_str()) {
        for kind in ["filesystem.read", "filesystem.write"] {
            for scope in [p.to_owned(), format!("tree:{p}"), String::from("host:*")] {
                let (a, b) = (profile.access_for(kind, &scope), same.access_for(kind, &scope));
                assert_eq!(a.ok(), b.ok(), "{kind} {scope}");
            }
        }
    }
});
