//! The seccomp policy as reviewed data (`seccomp-policy.json`), and its OCI form.
//!
//! The same rule list is written into `linux.seccomp` for standard runtimes and compiled by the
//! Linux backend with seccompiler (CONTRACT.md §15.6).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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
    /// `EACCES` or `ENOSYS`.
    pub errno: String,
    /// When the rule applies: always (absent) or `broad-network` (a spawn sharing the host
    /// network namespace under a broad grant).
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
    /// `eq` or `masked_eq`.
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
            "ENOSYS" => 38,
            _ => 13, // EACCES, checked by the policy tests
        }
    }
}

/// The committed policy.
pub fn policy() -> SeccompPolicy {
    serde_json::from_str(POLICY_JSON).unwrap_or_else(|_| SeccompPolicy {
        comment: String::from("unparsable policy: every rule dropped (caught by the policy tests)"),
        rules: Vec::new(),
    })
}

/// The rules that apply to one spawn.
pub fn rules_for(broad_network: bool) -> Vec<SeccompRule> {
    policy()
        .rules
        .into_iter()
        .filter(|r| match r.when.as_deref() {
            None => true,
            Some("broad-network") => broad_network,
            Some(_) => false,
        })
        .collect()
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

/// The `linux.seccomp` section for one spawn.
pub(crate) fn oci_section(broad_network: bool) -> Value {
    let syscalls: Vec<Value> = rules_for(broad_network)
        .iter()
        .map(|r| {
            let mut entry = json!({
                "names": r.syscalls,
                "action": "SCMP_ACT_ERRNO",
                "errnoRet": r.errno_number(),
            });
            if !r.args.is_empty() {
                entry["args"] = r
                    .args
                    .iter()
                    .map(|a| match a.op.as_str() {
                        "masked_eq" => json!({"index": a.index, "value": a.value,
                            "valueTwo": a.value_two.unwrap_or(0), "op": "SCMP_CMP_MASKED_EQ"}),
                        _ => json!({"index": a.index, "value": a.value, "op": "SCMP_CMP_EQ"}),
                    })
                    .collect();
            }
            entry
        })
        .collect();
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": [native_arch()],
        "syscalls": syscalls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_parses_and_every_rule_is_explained() {
        let p: SeccompPolicy = serde_json::from_str(POLICY_JSON).expect("policy parses");
        assert!(!p.rules.is_empty());
        for r in &p.rules {
            assert!(!r.comment.is_empty() && !r.syscalls.is_empty());
            assert_eq!(r.action, "errno");
            assert!(matches!(r.errno.as_str(), "EACCES" | "ENOSYS"), "{}", r.errno);
            assert!(matches!(r.when.as_deref(), None | Some("broad-network")));
            for a in &r.args {
                assert!(a.index < 6 && !a.comment.is_empty());
                assert!(matches!(a.op.as_str(), "eq" | "masked_eq"));
                assert_eq!(a.op == "masked_eq", a.value_two.is_some());
            }
        }
    }

    #[test]
    fn contract_syscalls_are_covered() {
        let all: Vec<String> = rules_for(false).into_iter().flat_map(|r| r.syscalls).collect();
        for s in [
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "pidfd_getfd",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
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
            "unshare",
            "clone",
            "setns",
            "clone3",
        ] {
            assert!(all.iter().any(|n| n == s), "{s} missing");
        }
        assert!(!all.iter().any(|n| n == "socket"), "udp is filtered only under a broad grant");
        assert_eq!(rules_for(true).iter().filter(|r| r.syscalls == ["socket"]).count(), 3);
    }
}
