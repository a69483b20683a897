//! CONTRACT.md §6: guarantee bits and names, `Level`, `Status`, `CompileReport` and the
//! self-consistency invariants checked by `check_invariants`.
#![allow(clippy::unwrap_used, clippy::panic, clippy::tests_outside_test_module)]

use sandbox_bundle::*;

/// The §6 table: bit index, value, name.
const TABLE: [(u32, u64, &str); 8] = [
    (0, 1, "process-boundary"),
    (1, 2, "write-boundary"),
    (2, 4, "read-boundary"),
    (3, 8, "env-scrub"),
    (4, 16, "network-boundary"),
    (5, 32, "address-network"),
    (6, 64, "resource-limits"),
    (7, 128, "target-network"),
];

fn single(bit: u32) -> Guarantees {
    let mut g = Guarantees::default();
    let slot = match bit {
        0 => &mut g.process_boundary,
        1 => &mut g.write_boundary,
        2 => &mut g.read_boundary,
        3 => &mut g.env_scrub,
        4 => &mut g.network_boundary,
        5 => &mut g.address_network,
        6 => &mut g.resource_limits,
        _ => &mut g.target_network,
    };
    *slot = true;
    g
}

fn union(a: Guarantees, b: Guarantees) -> Guarantees {
    Guarantees::from_bits(a.bits() | b.bits())
}

// ---------------------------------------------------------------------------------------------
// Guarantees
// ---------------------------------------------------------------------------------------------

#[test]
fn each_field_has_its_bit_and_name() {
    for (i, value, name) in TABLE {
        let g = single(i);
        assert_eq!(g.bits(), value, "{name}");
        assert_eq!(value, 1 << i);
        assert_eq!(g.names(), vec![name]);
        assert_eq!(Guarantees::from_bits(value), g);
        assert_eq!(Guarantees::bit_for_name(name), Some(value));
    }
    for bad in ["", "env_scrub", "Env-Scrub", "network", "process-boundary ", "bogus"] {
        assert_eq!(Guarantees::bit_for_name(bad), None, "{bad}");
    }
}

#[test]
fn default_is_empty() {
    let g = Guarantees::default();
    assert_eq!(g.bits(), 0);
    assert!(g.names().is_empty());
    assert_eq!(Guarantees::from_bits(0), g);
}

#[test]
fn bits_and_from_bits_round_trip_for_every_combination() {
    for b in 0..=255u64 {
        let g = Guarantees::from_bits(b);
        assert_eq!(g.bits(), b);
        assert_eq!(Guarantees::from_bits(g.bits()), g);
        // Names are the set bits, in bit order.
        let want: Vec<&str> = TABLE.iter().filter(|(_, v, _)| b & v != 0).map(|(_, _, n)| *n).collect();
        assert_eq!(g.names(), want, "{b}");
        let back = g.names().iter().map(|n| Guarantees::bit_for_name(n).unwrap()).fold(0, |a, v| a | v);
        assert_eq!(back, b);
    }
}

#[test]
fn from_bits_ignores_unknown_bits() {
    for (b, known) in [
        (256u64, 0u64),
        (1 << 8 | 8, 8),
        (1 << 63, 0),
        (1 << 63 | 1, 1),
        (u64::MAX, 255),
        (u64::MAX - 255, 0),
        (0xdead_beef_0000_0012, 0x12),
    ] {
        let g = Guarantees::from_bits(b);
        assert_eq!(g.bits(), known, "{b:#x}");
        assert_eq!(g, Guarantees::from_bits(known));
    }
    let all = Guarantees::from_bits(u64::MAX);
    assert_eq!(all.names(), TABLE.iter().map(|(_, _, n)| *n).collect::<Vec<_>>());
}

#[test]
fn contains_is_bitwise_superset() {
    for a in 0..=255u64 {
        let ga = Guarantees::from_bits(a);
        assert!(ga.contains(ga));
        assert!(ga.contains(Guarantees::default()));
        assert!(Guarantees::from_bits(255).contains(ga));
        for b in 0..=255u64 {
            assert_eq!(ga.contains(Guarantees::from_bits(b)), a & b == b, "{a:#x} contains {b:#x}");
        }
    }
    let required = union(single(3), single(1));
    assert!(union(required, single(0)).contains(required));
    assert!(!single(3).contains(required));
}

#[test]
fn guarantees_value_traits() {
    fn traits<T: Clone + Copy + std::fmt::Debug + Default + PartialEq + Eq + std::hash::Hash>() {}
    traits::<Guarantees>();
    let set: std::collections::HashSet<Guarantees> = (0..=255u64).map(Guarantees::from_bits).collect();
    assert_eq!(set.len(), 256);
}

// ---------------------------------------------------------------------------------------------
// Level and Status
// ---------------------------------------------------------------------------------------------

#[test]
fn level_numbers_order_and_display() {
    assert_eq!([Level::None as u8, Level::Degraded as u8, Level::Full as u8], [0, 1, 2]);
    assert!(Level::None < Level::Degraded && Level::Degraded < Level::Full);
    assert_eq!(
        [Level::None.to_string(), Level::Degraded.to_string(), Level::Full.to_string()],
        ["none", "degraded", "full"]
    );
    assert_eq!(serde_json::to_value(Level::Degraded).unwrap(), "degraded");
    assert_eq!(serde_json::to_value(Level::None).unwrap(), "none");
    assert_eq!(Level::Full.max(Level::None), Level::Full);
}

#[test]
fn status_display_is_lowercase() {
    let all = [Status::Enforced, Status::Narrowed, Status::Unenforced, Status::Widened, Status::Vacuous];
    let names: Vec<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["enforced", "narrowed", "unenforced", "widened", "vacuous"]);
    for s in all {
        assert_eq!(serde_json::to_value(s).unwrap(), s.to_string());
    }
}

#[test]
fn compile_report_get_and_set() {
    let mut r = CompileReport::default();
    assert!(r.entries.is_empty());
    assert!(r.get("landlock").is_none());
    r.set(ReportEntry::new("landlock", Status::Enforced, "abi 6"));
    r.set(ReportEntry::new("seccomp", Status::Unenforced, "not supported"));
    r.set(ReportEntry::new("landlock", Status::Narrowed, "abi 3: no network rules"));
    assert_eq!(r.entries.len(), 2);
    assert_eq!(r.entries[0].feature, "landlock", "set keeps the position");
    assert_eq!(r.get("landlock").unwrap().status, Status::Narrowed);
    assert_eq!(r.get("landlock").unwrap().detail, "abi 3: no network rules");
    assert_eq!(r.get("seccomp").unwrap().status, Status::Unenforced);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["entries"][0]["status"], "narrowed");
    assert_eq!(v["entries"][1]["feature"], "seccomp");
}

// ---------------------------------------------------------------------------------------------
// check_invariants
// ---------------------------------------------------------------------------------------------

const LEVELS: [Level; 3] = [Level::None, Level::Degraded, Level::Full];

/// The §6 invariants on a (level, bits) pair, written independently; one name per violation.
fn violations(level: Level, g: Guarantees) -> Vec<&'static str> {
    let mut v = Vec::new();
    if level == Level::None && g.bits() & !8 != 0 {
        v.push("none");
    }
    if g.address_network && !g.network_boundary {
        v.push("address");
    }
    if g.target_network && !g.network_boundary {
        v.push("target");
    }
    if g.write_boundary && level < Level::Degraded {
        v.push("write");
    }
    if level == Level::Full && !g.write_boundary {
        v.push("full");
    }
    if !g.env_scrub {
        v.push("env");
    }
    v
}

#[test]
fn check_invariants_matches_the_rules_for_every_pair() {
    for level in LEVELS {
        for b in 0..=255u64 {
            let g = Guarantees::from_bits(b);
            let want = violations(level, g);
            match check_invariants(level, g, None, None) {
                Ok(()) => assert!(want.is_empty(), "{level} {b:#x}: expected {want:?}"),
                Err(got) => {
                    assert_eq!(got.len(), want.len(), "{level} {b:#x}: got {got:?}, expected {want:?}");
                    assert!(got.iter().all(|m| !m.is_empty()));
                }
            }
        }
    }
}

#[test]
fn check_invariants_accepts_typical_valid_pairs() {
    let env = single(3);
    let write = single(1);
    let read = single(2);
    let net = single(4);
    let process = single(0);
    let full_linux = union(union(union(union(process, write), read), env), net);
    let cases = [
        (Level::None, env, Some(Isolation::Unconfined)),
        (Level::None, env, None),
        (Level::Degraded, env, Some(Isolation::Sandboxed)),
        (Level::Degraded, union(process, env), Some(Isolation::Sandboxed)),
        (Level::Degraded, union(union(process, env), write), Some(Isolation::Sandboxed)),
        (Level::Full, union(write, env), Some(Isolation::Sandboxed)),
        (Level::Full, full_linux, Some(Isolation::Sandboxed)),
        (Level::Full, union(full_linux, single(6)), Some(Isolation::Sandboxed)),
        (Level::Full, union(union(full_linux, single(5)), single(7)), Some(Isolation::Sandboxed)),
    ];
    for (level, g, iso) in cases {
        assert_eq!(check_invariants(level, g, iso, None), Ok(()), "{level} {:?}", g.names());
    }
}

/// Asserts exactly one violation whose text mentions every word of `words`.
#[track_caller]
fn one_violation(r: Result<(), Vec<&'static str>>, words: &[&str]) {
    let got = r.expect_err("expected a violation");
    assert_eq!(got.len(), 1, "{got:?}");
    for w in words {
        assert!(got[0].contains(w), "{:?} does not mention {w:?}", got[0]);
    }
}

#[test]
fn check_invariants_reports_each_violation() {
    let env = single(3);
    let write = union(single(1), env);
    // Level::None => no bit but env-scrub.
    for bit in [0, 2, 4, 6] {
        one_violation(check_invariants(Level::None, union(env, single(bit)), None, None), &["none"]);
    }
    // address-network => network-boundary.
    one_violation(check_invariants(Level::Degraded, union(env, single(5)), None, None), &["address-network"]);
    // target-network => network-boundary.
    one_violation(check_invariants(Level::Degraded, union(env, single(7)), None, None), &["target-network"]);
    // write-boundary => level >= Degraded (also breaks the Level::None rule).
    let got = check_invariants(Level::None, write, None, None).expect_err("write-boundary at level none");
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.iter().any(|m| m.contains("write-boundary") && m.contains("degraded")), "{got:?}");
    // Full => write-boundary.
    one_violation(check_invariants(Level::Full, env, None, None), &["full", "write-boundary"]);
    // env-scrub always.
    for level in LEVELS {
        let g = if level == Level::None { Guarantees::default() } else { single(1) };
        one_violation(check_invariants(level, g, None, None), &["env-scrub"]);
    }
    // Sandboxed => level != None.
    one_violation(check_invariants(Level::None, env, Some(Isolation::Sandboxed), None), &["sandboxed"]);
    assert_eq!(check_invariants(Level::None, env, Some(Isolation::Unconfined), None), Ok(()));
    // Several at once are all reported.
    let all = Guarantees::from_bits(0b1010_0000);
    let got = check_invariants(Level::None, all, Some(Isolation::Sandboxed), None).expect_err("many");
    // none-rule, address, target, env-scrub, sandboxed.
    assert_eq!(got.len(), 5, "{got:?}");
}

#[test]
fn check_invariants_on_reports() {
    let env = single(3);
    let sandboxed = union(union(single(0), single(1)), env);
    let empty = CompileReport::default();
    let mut one = CompileReport::default();
    one.set(ReportEntry::new("landlock", Status::Enforced, "abi 6"));
    one.set(ReportEntry::new("network", Status::Vacuous, "network is allow"));

    // The report is empty only for Unconfined (and an Unconfined report is empty, §17).
    assert_eq!(check_invariants(Level::None, env, Some(Isolation::Unconfined), Some(&empty)), Ok(()));
    assert_eq!(check_invariants(Level::Full, sandboxed, Some(Isolation::Sandboxed), Some(&one)), Ok(()));
    one_violation(check_invariants(Level::Full, sandboxed, Some(Isolation::Sandboxed), Some(&empty)), &["empty"]);
    one_violation(check_invariants(Level::None, env, Some(Isolation::Unconfined), Some(&one)), &["empty"]);

    // feature and detail are never empty.
    for (feature, detail) in [("", "x"), ("landlock", "")] {
        let r = CompileReport { entries: vec![ReportEntry::new(feature, Status::Enforced, detail)] };
        one_violation(check_invariants(Level::Full, sandboxed, Some(Isolation::Sandboxed), Some(&r)), &["never empty"]);
    }
    // One entry per feature.
    let r = CompileReport {
        entries: vec![
            ReportEntry::new("landlock", Status::Enforced, "a"),
            ReportEntry::new("seccomp", Status::Enforced, "b"),
            ReportEntry::new("landlock", Status::Narrowed, "c"),
        ],
    };
    one_violation(check_invariants(Level::Full, sandboxed, Some(Isolation::Sandboxed), Some(&r)), &["one"]);
}

#[test]
fn required_guarantees_of_every_profile_shape_are_consistent_with_the_invariants() {
    // Whatever a profile requires, an executor claiming exactly that at a fitting level passes.
    let dir = tempfile::tempdir().unwrap();
    let w = std::fs::canonicalize(dir.path()).unwrap();
    for a in [Access::Deny, Access::Gated, Access::Allow] {
        let c = ProfileConfig {
            workspace_root: w.clone(),
            workspace_read: a,
            workspace_write: a,
            host_read: a,
            host_write: a,
            network: a,
            ..ProfileConfig::default()
        };
        let g = Profile::new(c).unwrap().required_guarantees();
        assert!(g.env_scrub);
        let level = if g.write_boundary { Level::Full } else { Level::Degraded };
        assert_eq!(check_invariants(level, union(g, single(0)), Some(Isolation::Sandboxed), None), Ok(()));
    }
    let u = ProfileConfig {
        workspace_root: w,
        workspace_read: Access::Allow,
        workspace_write: Access::Allow,
        host_read: Access::Allow,
        host_write: Access::Allow,
        network: Access::Allow,
        isolation: Isolation::Unconfined,
        ack_unconfined: true,
        ..ProfileConfig::default()
    };
    let g = Profile::new(u).unwrap().required_guarantees();
    assert_eq!(g.bits(), 8);
    assert_eq!(check_invariants(Level::None, g, Some(Isolation::Unconfined), Some(&CompileReport::default())), Ok(()));
}
