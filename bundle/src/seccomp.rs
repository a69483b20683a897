//! The seccomp policy as reviewed data (`seccomp-policy.json`), and its OCI form.
//!
//! The same rule list is written into `linux.seccomp` for standard runtimes and compiled by the
//! Linux backend with seccompiler (CONTRACT.md §15.6).

use oci_spec::OciSpecError;
use oci_spec::runtime::{
    Arch, LinuxSeccomp, LinuxSeccompAction, LinuxSeccompArgBuilder, LinuxSeccompBuilder, LinuxSeccompOperator,
    LinuxSyscallBuilder,
};
use serde::{Deserialize, Serialize};

use crate::error::Error;

const POLICY_JSON: &str = include_str!("seccomp-policy.json");

/// The whole policy: a list of rules on top of a default `allow`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SeccompPolicy {
    /// Why the policy is what it is.
    pub comment: String,
    /// The rules, in order.
    pub rules: Vec<SeccompRule>,
}

/// One rule: the named syscalls fail with `errno` when every argument condition holds.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SeccompRule {
    /// Syscall names.
    pub syscalls: Vec<String>,
    /// Always `errno` in v1.
    pub action: String,
    /// `EPERM`, `EACCES`, `ENOSYS` or `EOPNOTSUPP`.
    pub errno: String,
    /// When the rule applies: always (absent), `broad-network` (a spawn sharing the host
    /// network namespace under a broad grant), `network-closed` (every spawn but one with the
    /// network allowed, see [`SpawnRules`]) or `unix-sockets-closed` (unix sockets not opened
    /// by the network or the profile's `unix_sockets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Argument conditions, all of which must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<SeccompArg>,
    /// Why.
    pub comment: String,
}

/// One argument condition.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SeccompArg {
    /// Argument index (0-5).
    pub index: u8,
    /// `eq`, `ne` or `masked_eq`.
    pub op: String,
    /// The value (`eq`) or the mask (`masked_eq`).
    pub value: u64,
    /// For `masked_eq`: the value the masked argument must equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_two: Option<u64>,
    /// What the value means.
    pub comment: String,
}

impl SeccompRule {
    /// The errno number of the rule's action.
    pub fn errno_number(&self) -> u32 {
        match self.errno.as_str() {
            "EPERM" => 1,
            "ENOSYS" => 38,
            "EOPNOTSUPP" => 95,
            _ => 13, // EACCES, checked by `parse_policy`
        }
    }
}

/// What selects the conditional rules of one spawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpawnRules {
    /// The spawn shares the host network namespace under a broad grant (Landlock's TCP port
    /// rules are the boundary): `broad-network` rules apply.
    pub broad_network: bool,
    /// The network is open: profile network `Allow`, in the host namespace (no route). Else
    /// `network-closed` rules apply.
    pub network_open: bool,
    /// Unix sockets may be made: the network is open or the profile's `unix_sockets` is
    /// `Allow`. Else `unix-sockets-closed` rules apply.
    pub unix_sockets_open: bool,
}

/// Parses and checks a policy text: it must decode, have rules, and every rule must name a
/// syscall, act by `errno` with a known errno, and have a known `when` and known argument
/// operators. A policy that fails here would filter less than was reviewed, so it is an
/// [`Error::Runtime`]: the sandbox itself is broken, not the caller's input.
pub(crate) fn parse_policy(text: &str) -> Result<SeccompPolicy, Error> {
    check_policy(text).map_err(|e| Error::runtime_with("the embedded seccomp policy is invalid", e))
}

/// Why a policy text is not the reviewed kind of policy.
#[derive(Debug, thiserror::Error)]
enum PolicyError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("it has no rules")]
    NoRules,
    #[error("a rule names no syscall: {0:?}")]
    NoSyscall(Vec<String>),
    #[error("{syscalls:?}: unknown action {action:?} or errno {errno:?}")]
    Action { syscalls: Vec<String>, action: String, errno: String },
    #[error("{syscalls:?}: unknown when {when:?}")]
    When { syscalls: Vec<String>, when: Option<String> },
    #[error("{syscalls:?}: bad argument condition {index} {op:?}")]
    Argument { syscalls: Vec<String>, index: u8, op: String },
}

fn check_policy(text: &str) -> Result<SeccompPolicy, PolicyError> {
    let policy: SeccompPolicy = serde_json::from_str(text)?;
    if policy.rules.is_empty() {
        return Err(PolicyError::NoRules);
    }
    for r in &policy.rules {
        if r.syscalls.is_empty() || r.syscalls.iter().any(String::is_empty) {
            return Err(PolicyError::NoSyscall(r.syscalls.clone()));
        }
        if r.action != "errno" || !matches!(r.errno.as_str(), "EPERM" | "EACCES" | "ENOSYS" | "EOPNOTSUPP") {
            return Err(PolicyError::Action {
                syscalls: r.syscalls.clone(),
                action: r.action.clone(),
                errno: r.errno.clone(),
            });
        }
        if !matches!(r.when.as_deref(), None | Some("broad-network" | "network-closed" | "unix-sockets-closed")) {
            return Err(PolicyError::When { syscalls: r.syscalls.clone(), when: r.when.clone() });
        }
        for a in &r.args {
            let known = match a.op.as_str() {
                "eq" | "ne" => a.value_two.is_none(),
                "masked_eq" => a.value_two.is_some(),
                _ => false,
            };
            if a.index >= 6 || !known {
                return Err(PolicyError::Argument { syscalls: r.syscalls.clone(), index: a.index, op: a.op.clone() });
            }
        }
    }
    Ok(policy)
}

/// The committed policy, parsed once per process (every compile needs it); an invalid one is
/// an error at every use, never an empty filter.
fn parsed() -> Result<&'static SeccompPolicy, Error> {
    static POLICY: std::sync::OnceLock<Result<SeccompPolicy, Error>> = std::sync::OnceLock::new();
    POLICY.get_or_init(|| parse_policy(POLICY_JSON)).as_ref().map_err(Clone::clone)
}

/// The committed policy; [`Error::Runtime`] when the embedded text is invalid.
pub fn policy() -> Result<SeccompPolicy, Error> {
    parsed().cloned()
}

/// The rules that apply to one spawn; [`Error::Runtime`] when the embedded policy is invalid.
pub fn rules_for(spawn: SpawnRules) -> Result<Vec<SeccompRule>, Error> {
    Ok(parsed()?
        .rules
        .iter()
        .filter(|r| match r.when.as_deref() {
            None => true,
            Some("broad-network") => spawn.broad_network,
            Some("network-closed") => !spawn.network_open,
            Some("unix-sockets-closed") => !spawn.unix_sockets_open,
            Some(_) => false,
        })
        .cloned()
        .collect())
}

/// The libseccomp architecture name of the target this crate was built for.
pub fn native_arch() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "SCMP_ARCH_X86_64"
    } else if cfg!(target_arch = "aarch64") {
        "SCMP_ARCH_AARCH64"
    } else {
        "SCMP_ARCH_NATIVE"
    }
}

/// The seccomp architecture of [`native_arch`], as oci-spec's type.
fn native_oci_arch() -> Arch {
    if cfg!(target_arch = "x86_64") {
        Arch::ScmpArchX86_64
    } else if cfg!(target_arch = "aarch64") {
        Arch::ScmpArchAarch64
    } else {
        Arch::ScmpArchNative
    }
}

/// The `linux.seccomp` section for one spawn; [`Error::Runtime`] when the embedded policy is
/// invalid (no spec is built with a filter that lost its rules).
pub(crate) fn oci_section(spawn: SpawnRules) -> Result<LinuxSeccomp, Error> {
    let built = |e: OciSpecError| Error::argument(format!("spec: {e}"));
    let syscalls = rules_for(spawn)?
        .iter()
        .map(|r| {
            let mut syscall = LinuxSyscallBuilder::default()
                .names(r.syscalls.clone())
                .action(LinuxSeccompAction::ScmpActErrno)
                .errno_ret(r.errno_number());
            if !r.args.is_empty() {
                let args = r
                    .args
                    .iter()
                    .map(|a| {
                        let arg = LinuxSeccompArgBuilder::default().index(usize::from(a.index)).value(a.value);
                        match a.op.as_str() {
                            "masked_eq" => {
                                arg.value_two(a.value_two.unwrap_or(0)).op(LinuxSeccompOperator::ScmpCmpMaskedEq)
                            }
                            "ne" => arg.op(LinuxSeccompOperator::ScmpCmpNe),
                            _ => arg.op(LinuxSeccompOperator::ScmpCmpEq),
                        }
                        .build()
                        .map_err(built)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                syscall = syscall.args(args);
            }
            syscall.build().map_err(built)
        })
        .collect::<Result<Vec<_>, _>>()?;
    LinuxSeccompBuilder::default()
        .default_action(LinuxSeccompAction::ScmpActAllow)
        .architectures(vec![native_oci_arch()])
        .syscalls(syscalls)
        .build()
        .map_err(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_parses_and_every_rule_is_explained() {
        let p = parse_policy(POLICY_JSON).expect("policy parses");
        assert!(!p.rules.is_empty());
        for r in &p.rules {
            assert!(!r.comment.is_empty() && !r.syscalls.is_empty());
            assert_eq!(r.action, "errno");
            assert!(matches!(r.errno.as_str(), "EPERM" | "EACCES" | "ENOSYS" | "EOPNOTSUPP"), "{}", r.errno);
            assert!(matches!(
                r.when.as_deref(),
                None | Some("broad-network" | "network-closed" | "unix-sockets-closed")
            ));
            for a in &r.args {
                assert!(a.index < 6 && !a.comment.is_empty());
                assert!(matches!(a.op.as_str(), "eq" | "ne" | "masked_eq"));
                assert_eq!(a.op == "masked_eq", a.value_two.is_some());
            }
            // A standard runtime ORs conditions on one argument (runc splits them into rules):
            // only `ne` conditions may share an argument, which makes that form stricter.
            let mut seen = std::collections::BTreeMap::new();
            for a in &r.args {
                if let Some(op) = seen.insert(a.index, a.op.as_str()) {
                    assert!(op == "ne" && a.op == "ne", "{:?}: two conditions on argument {}", r.syscalls, a.index);
                }
            }
        }
    }

    #[test]
    fn contract_syscalls_are_covered() {
        let rules_for = |s: SpawnRules| rules_for(s).expect("policy parses");
        let all: Vec<String> =
            rules_for(SpawnRules { network_open: true, unix_sockets_open: true, ..SpawnRules::default() })
                .into_iter()
                .flat_map(|r| r.syscalls)
                .collect();
        for s in [
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "pidfd_getfd",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
            "io_setup",
            "init_module",
            "finit_module",
            "delete_module",
            "add_key",
            "request_key",
            "keyctl",
            "bpf",
            "mount",
            "umount2",
            "pivot_root",
            "move_mount",
            "open_tree",
            "fsopen",
            "fsconfig",
            "fsmount",
            "fspick",
            "mount_setattr",
            "open_tree_attr",
            "unshare",
            "clone",
            "setns",
            "clone3",
            // issue 12 class 2
            "chmod",
            "fchmod",
            "fchmodat",
            "fchmodat2",
            "open",
            "openat",
            "creat",
            "mknod",
            "mknodat",
            "mkdir",
            "mkdirat",
            "openat2",
            // issue 12 class 9
            "userfaultfd",
            "perf_event_open",
            "name_to_handle_at",
            "open_by_handle_at",
            "fanotify_init",
            "personality",
            "prlimit64",
        ] {
            assert!(all.iter().any(|n| n == s), "{s} missing");
        }
        assert!(!all.iter().any(|n| n == "socket"), "with the network open no socket is filtered");
        let sockets = |s: SpawnRules| rules_for(s).into_iter().filter(|r| r.syscalls == ["socket"]).count();
        // Private namespace, unix sockets closed: AF_UNIX and AF_VSOCK.
        assert_eq!(sockets(SpawnRules::default()), 2);
        // unix_sockets allow: AF_VSOCK only.
        assert_eq!(sockets(SpawnRules { unix_sockets_open: true, ..SpawnRules::default() }), 1);
        // Broad grant: UDP, UDP6, MPTCP, every family but AF_UNIX/INET/INET6/NETLINK, other
        // protocols and the types 4-6 over IPv4 and IPv6, AF_UNIX, AF_VSOCK.
        assert_eq!(sockets(SpawnRules { broad_network: true, ..SpawnRules::default() }), 10);
        let tfo = |s: SpawnRules| {
            rules_for(s)
                .into_iter()
                .filter(|r| r.errno == "EOPNOTSUPP" && r.when.as_deref() == Some("broad-network"))
                .count()
        };
        assert_eq!(tfo(SpawnRules { broad_network: true, ..SpawnRules::default() }), 4);
        assert_eq!(tfo(SpawnRules::default()), 0);
        // A broad grant serves nothing (listen refused); elsewhere listen is untouched.
        let listen = |s: SpawnRules| rules_for(s).into_iter().filter(|r| r.syscalls == ["listen"]).count();
        assert_eq!(listen(SpawnRules { broad_network: true, ..SpawnRules::default() }), 1);
        assert_eq!(listen(SpawnRules::default()), 0);
        assert_eq!(listen(SpawnRules { network_open: true, unix_sockets_open: true, ..SpawnRules::default() }), 0);
    }

    #[test]
    fn set_id_modes_are_caught_on_every_creating_and_chmod_call() {
        let policy = || policy().expect("policy parses");
        for (bit, name) in [(0o4000u64, "S_ISUID"), (0o2000, "S_ISGID")] {
            for s in [
                "chmod",
                "fchmod",
                "fchmodat",
                "fchmodat2",
                "open",
                "openat",
                "creat",
                "mknod",
                "mknodat",
                "mkdir",
                "mkdirat",
            ] {
                let hit = policy().rules.iter().any(|r| {
                    r.errno == "EPERM"
                        && r.when.is_none()
                        && r.syscalls.iter().any(|n| n == s)
                        && r.args.len() == 1
                        && r.args[0].op == "masked_eq"
                        && r.args[0].value == bit
                        && r.args[0].value_two == Some(bit)
                });
                assert!(hit, "{s}: no {name} rule");
            }
        }
    }

    #[test]
    fn personality_allows_exactly_dockers_values() {
        let r = policy()
            .expect("policy parses")
            .rules
            .into_iter()
            .find(|r| r.syscalls == ["personality"])
            .expect("personality rule");
        let allowed: Vec<u64> = r.args.iter().map(|a| a.value).collect();
        assert!(r.args.iter().all(|a| a.op == "ne" && a.index == 0));
        assert_eq!(allowed, [0, 8, 0x20000, 0x20008, 0xffff_ffff]);
    }

    #[test]
    fn a_bad_policy_is_a_runtime_error_not_an_empty_filter() {
        let rule = |body: &str| format!(r#"{{"comment": "c", "rules": [{body}]}}"#);
        let good = r#"{"syscalls": ["ptrace"], "action": "errno", "errno": "EPERM", "comment": "c"}"#;
        assert_eq!(parse_policy(&rule(good)).map(|p| p.rules.len()).ok(), Some(1));
        for bad in [
            String::new(),
            String::from("not json"),
            String::from(r#"{"comment": "c", "rules": []}"#),
            String::from(r#"{"comment": "c", "rules": [], "extra": 1}"#),
            rule(r#"{"syscalls": [], "action": "errno", "errno": "EPERM", "comment": "c"}"#),
            rule(r#"{"syscalls": ["ptrace"], "action": "allow", "errno": "EPERM", "comment": "c"}"#),
            rule(r#"{"syscalls": ["ptrace"], "action": "errno", "errno": "EWHAT", "comment": "c"}"#),
            rule(
                r#"{"syscalls": ["ptrace"], "action": "errno", "errno": "EPERM", "when": "sometimes", "comment": "c"}"#,
            ),
            rule(
                r#"{"syscalls": ["ptrace"], "action": "errno", "errno": "EPERM", "comment": "c",
                    "args": [{"index": 6, "op": "eq", "value": 0, "comment": "c"}]}"#,
            ),
            rule(
                r#"{"syscalls": ["ptrace"], "action": "errno", "errno": "EPERM", "comment": "c",
                    "args": [{"index": 0, "op": "masked_eq", "value": 0, "comment": "c"}]}"#,
            ),
        ] {
            let e = parse_policy(&bad).expect_err(&bad);
            assert_eq!(e.kind(), crate::ErrorKind::Runtime, "{bad}: {e}");
            assert!(e.to_string().contains("seccomp policy"), "{e}");
        }
    }
}
