//! Compiles the bundle's `linux.seccomp` section (the one policy, CONTRACT.md §15.6) with
//! seccompiler: one stacked filter per errno, behind a hand-written check that kills x32
//! syscalls (seccompiler's own architecture check kills every foreign architecture).

use std::collections::BTreeMap;

use sandbox_bundle::oci_spec::runtime::{LinuxSeccomp, LinuxSeccompAction, LinuxSeccompOperator};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};

/// Policy names with no syscall on some architecture (aarch64 has only the `*at` forms); the
/// filter skips them there, as libseccomp does for runc.
const LEGACY_ONLY: &[&str] = &["open", "creat", "chmod", "mknod", "mkdir", "iopl", "ioperm"];

/// The syscall number of a policy name on this architecture.
pub fn syscall_number(name: &str) -> Option<i64> {
    #[cfg(target_arch = "x86_64")]
    let legacy = match name {
        "open" => Some(libc::SYS_open),
        "creat" => Some(libc::SYS_creat),
        "chmod" => Some(libc::SYS_chmod),
        "mknod" => Some(libc::SYS_mknod),
        "mkdir" => Some(libc::SYS_mkdir),
        "iopl" => Some(libc::SYS_iopl),
        "ioperm" => Some(libc::SYS_ioperm),
        _ => None,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let legacy = None;
    if legacy.is_some() {
        return legacy;
    }
    let n = match name {
        "ptrace" => libc::SYS_ptrace,
        "process_vm_readv" => libc::SYS_process_vm_readv,
        "process_vm_writev" => libc::SYS_process_vm_writev,
        "pidfd_getfd" => libc::SYS_pidfd_getfd,
        "io_uring_setup" => libc::SYS_io_uring_setup,
        "io_uring_enter" => libc::SYS_io_uring_enter,
        "io_uring_register" => libc::SYS_io_uring_register,
        "io_setup" => libc::SYS_io_setup,
        "init_module" => libc::SYS_init_module,
        "finit_module" => libc::SYS_finit_module,
        "delete_module" => libc::SYS_delete_module,
        "add_key" => libc::SYS_add_key,
        "request_key" => libc::SYS_request_key,
        "keyctl" => libc::SYS_keyctl,
        "bpf" => libc::SYS_bpf,
        "mount" => libc::SYS_mount,
        "umount2" => libc::SYS_umount2,
        "pivot_root" => libc::SYS_pivot_root,
        "move_mount" => libc::SYS_move_mount,
        "open_tree" => libc::SYS_open_tree,
        "fsopen" => libc::SYS_fsopen,
        "fsconfig" => libc::SYS_fsconfig,
        "fsmount" => libc::SYS_fsmount,
        "fspick" => libc::SYS_fspick,
        "mount_setattr" => libc::SYS_mount_setattr,
        // Linux 6.15, the same number on every architecture; not in libc yet.
        "open_tree_attr" => 467,
        "unshare" => libc::SYS_unshare,
        "clone" => libc::SYS_clone,
        "clone3" => libc::SYS_clone3,
        "setns" => libc::SYS_setns,
        "socket" => libc::SYS_socket,
        "socketpair" => libc::SYS_socketpair,
        "sendto" => libc::SYS_sendto,
        "sendmsg" => libc::SYS_sendmsg,
        "sendmmsg" => libc::SYS_sendmmsg,
        "setsockopt" => libc::SYS_setsockopt,
        "listen" => libc::SYS_listen,
        "fchmod" => libc::SYS_fchmod,
        "fchmodat" => libc::SYS_fchmodat,
        // 452 on x86_64 and aarch64 alike; the libc crate lacks the aarch64 constant.
        "fchmodat2" => 452,
        "openat" => libc::SYS_openat,
        "openat2" => libc::SYS_openat2,
        "mknodat" => libc::SYS_mknodat,
        "mkdirat" => libc::SYS_mkdirat,
        "fcntl" => libc::SYS_fcntl,
        "ioctl" => libc::SYS_ioctl,
        "userfaultfd" => libc::SYS_userfaultfd,
        "perf_event_open" => libc::SYS_perf_event_open,
        "fanotify_init" => libc::SYS_fanotify_init,
        "name_to_handle_at" => libc::SYS_name_to_handle_at,
        "open_by_handle_at" => libc::SYS_open_by_handle_at,
        "personality" => libc::SYS_personality,
        "kcmp" => libc::SYS_kcmp,
        "process_madvise" => libc::SYS_process_madvise,
        "prlimit64" => libc::SYS_prlimit64,
        "syslog" => libc::SYS_syslog,
        "acct" => libc::SYS_acct,
        "vhangup" => libc::SYS_vhangup,
        "quotactl" => libc::SYS_quotactl,
        "quotactl_fd" => libc::SYS_quotactl_fd,
        "lookup_dcookie" => libc::SYS_lookup_dcookie,
        "kexec_load" => libc::SYS_kexec_load,
        "kexec_file_load" => libc::SYS_kexec_file_load,
        "reboot" => libc::SYS_reboot,
        "swapon" => libc::SYS_swapon,
        "swapoff" => libc::SYS_swapoff,
        "settimeofday" => libc::SYS_settimeofday,
        "clock_settime" => libc::SYS_clock_settime,
        _ => return None,
    };
    Some(n)
}

/// Why a bundle's seccomp section could not be compiled (the init then fails closed).
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// seccompiler does not know this machine.
    #[error("unsupported architecture: {0}")]
    Arch(#[source] seccompiler::BackendError),
    /// The section's default action is not `SCMP_ACT_ALLOW`.
    #[error("unsupported default action {0:?}")]
    DefaultAction(LinuxSeccompAction),
    /// A rule's action is not `SCMP_ACT_ERRNO`.
    #[error("unsupported action {0:?}")]
    Action(LinuxSeccompAction),
    /// A syscall name this crate has no number for.
    #[error("unknown syscall {0}")]
    Syscall(String),
    /// An argument index beyond what a condition can hold.
    #[error("argument index {0}")]
    ArgIndex(usize),
    /// A comparison operator the compiler does not translate.
    #[error("unsupported operator {0:?}")]
    Operator(LinuxSeccompOperator),
    /// seccompiler refused a condition.
    #[error("condition: {0}")]
    Condition(#[source] seccompiler::BackendError),
    /// seccompiler refused a rule.
    #[error("rule: {0}")]
    Rule(#[source] seccompiler::BackendError),
    /// seccompiler refused the filter or its translation to BPF.
    #[error("filter: {0}")]
    Filter(#[source] seccompiler::BackendError),
}

fn target_arch() -> Result<TargetArch, FilterError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(FilterError::Arch)
}

/// The programs to install, in order. Fails (closed) on anything the policy compiler does not
/// understand: an unknown syscall name, action or operator.
pub fn compile(section: &LinuxSeccomp) -> Result<Vec<BpfProgram>, FilterError> {
    if section.default_action() != LinuxSeccompAction::ScmpActAllow {
        return Err(FilterError::DefaultAction(section.default_action()));
    }
    let arch = target_arch()?;
    // errno -> syscall -> (unconditional, rules): an unconditional entry wins over conditions.
    let mut by_errno: BTreeMap<u32, BTreeMap<i64, (bool, Vec<SeccompRule>)>> = BTreeMap::new();
    for syscall in section.syscalls().as_deref().unwrap_or_default() {
        if syscall.action() != LinuxSeccompAction::ScmpActErrno {
            return Err(FilterError::Action(syscall.action()));
        }
        let errno = syscall.errno_ret().unwrap_or(libc::EPERM as u32);
        for name in syscall.names() {
            let nr = match syscall_number(name) {
                Some(nr) => nr,
                None if LEGACY_ONLY.contains(&name.as_str()) => continue,
                None => return Err(FilterError::Syscall(name.clone())),
            };
            // socket(2) takes ints and personality(2) an unsigned int: compare the low 32 bits,
            // the ones the kernel reads (glibc's personality() takes an unsigned long, so a
            // caller's -1 arrives sign-extended and is still the query). clone and unshare take
            // unsigned longs. Every other int argument of the policy is compared through a
            // 32-bit mask (the policy's own rule), so a full-width comparison sees those bits.
            let dword = matches!(name.as_str(), "socket" | "socketpair" | "personality");
            let mut conditions = Vec::new();
            for arg in syscall.args().as_deref().unwrap_or_default() {
                let index = u8::try_from(arg.index()).map_err(|_| FilterError::ArgIndex(arg.index()))?;
                let (op, value) = match arg.op() {
                    LinuxSeccompOperator::ScmpCmpEq => (SeccompCmpOp::Eq, arg.value()),
                    LinuxSeccompOperator::ScmpCmpNe => (SeccompCmpOp::Ne, arg.value()),
                    LinuxSeccompOperator::ScmpCmpMaskedEq => {
                        (SeccompCmpOp::MaskedEq(arg.value()), arg.value_two().unwrap_or(0))
                    }
                    other => return Err(FilterError::Operator(other)),
                };
                conditions.push(
                    SeccompCondition::new(
                        index,
                        if dword { SeccompCmpArgLen::Dword } else { SeccompCmpArgLen::Qword },
                        op,
                        value,
                    )
                    .map_err(FilterError::Condition)?,
                );
            }
            let entry = by_errno.entry(errno).or_default().entry(nr).or_default();
            if conditions.is_empty() {
                entry.0 = true;
            } else {
                entry.1.push(SeccompRule::new(conditions).map_err(FilterError::Rule)?);
            }
        }
    }
    let mut programs = Vec::new();
    if std::env::consts::ARCH == "x86_64" {
        programs.push(x32_killer());
    }
    for (errno, rules) in by_errno {
        // An empty rule vector matches the syscall whatever its arguments.
        let rules = rules
            .into_iter()
            .map(|(nr, (unconditional, rules))| (nr, if unconditional { Vec::new() } else { rules }))
            .collect();
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno), arch)
            .map_err(FilterError::Filter)?;
        programs.push(BpfProgram::try_from(filter).map_err(FilterError::Filter)?);
    }
    Ok(programs)
}

/// x32 syscalls carry the x86_64 audit architecture with bit 30 set in the number: kill them.
fn x32_killer() -> BpfProgram {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    vec![
        sock_filter { code: LD_W_ABS, jt: 0, jf: 0, k: 0 }, // seccomp_data.nr
        sock_filter { code: JGE_K, jt: 0, jf: 1, k: 0x4000_0000 },
        sock_filter { code: RET_K, jt: 0, jf: 0, k: libc::SECCOMP_RET_KILL_PROCESS },
        sock_filter { code: RET_K, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_syscall_resolves_here() {
        for rule in sandbox_bundle::seccomp::policy().expect("policy parses").rules {
            for name in rule.syscalls {
                let legacy = cfg!(not(target_arch = "x86_64")) && LEGACY_ONLY.contains(&name.as_str());
                assert!(legacy || syscall_number(&name).is_some(), "{name}");
            }
        }
    }
}
