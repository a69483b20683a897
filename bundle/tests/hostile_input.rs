//! Hostile input never panics: arbitrary profile JSON, `access_for` queries and bundle inputs
//! yield values or errors naming the problem (proptest).
#![allow(clippy::unwrap_used, clippy::panic, clippy::tests_outside_test_module)]

use proptest::prelude::*;
use sandbox_bundle::*;

fn profile() -> Profile {
    let dir = std::env::temp_dir();
    Profile::new(ProfileConfig {
        workspace_root: dir,
        workspace_read: Access::Allow,
        workspace_write: Access::Gated,
        additional_roots: vec![RootAccess { path: "/".into(), read: Access::Gated, write: Access::Deny }],
        ..ProfileConfig::default()
    })
    .unwrap()
}

proptest! {
    #[test]
    fn any_text_as_a_profile_is_a_value_or_invalid_profile(text in "\\PC{0,200}") {
        match ProfileConfig::from_json(&text) {
            Ok(_) => {}
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::InvalidProfile),
        }
    }

    #[test]
    fn json_shaped_profiles_never_panic(
        key in "[a-z_]{0,20}",
        value in prop_oneof![Just("\"deny\"".to_owned()), Just("7".to_owned()), Just("null".to_owned()), Just("[1]".to_owned()), "\"\\PC{0,10}\"", "-?[0-9]{1,25}"],
    ) {
        let text = format!("{{\"workspace_root\": \"/\", \"{key}\": {value}}}");
        if let Err(e) = ProfileConfig::from_json(&text).and_then(Profile::new) {
            prop_assert_eq!(e.kind(), ErrorKind::InvalidProfile);
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn access_for_never_panics(kind in prop_oneof![Just("filesystem.read".to_owned()), Just("filesystem.write".to_owned()), Just("network".to_owned()), Just("command.execute".to_owned()), "\\PC{0,20}"], scope in "\\PC{0,60}") {
        let p = profile();
        match p.access_for(&kind, &scope) {
            Ok(_) => {}
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::InvalidProfile),
        }
    }

    #[test]
    fn hostile_argv_and_paths_compile_or_fail_cleanly(arg in "\\PC{0,40}", cwd in "/[\\PC]{0,40}") {
        let p = profile();
        let spawn = SpawnContext {
            argv: vec![arg],
            cwd: cwd.into(),
            env: vec![],
            tty: false,
            home_dir: None,
            temp_dir: "/var/tmp/t".into(),
            scratch_root: "/var/tmp".into(),
            other_scratch_roots: Vec::new(),
            uid: 0,
            gid: 0,
            landlock: false,
            egress_route: false,
            launch: Launch::Export,
            grants: GrantDeltas::default(),
            protected: Default::default(),
        };
        if let Err(e) = compile(&p, &spawn, &HostView::default()) {
            prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        }
    }
}
