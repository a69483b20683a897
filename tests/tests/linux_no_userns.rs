//! A host without user namespaces, simulated: a seccomp filter on this test process (inherited
//! by the re-executed helper) refuses `unshare`/`clone` with `CLONE_NEWUSER` (EPERM, as a kernel
//! with them disabled does) and makes `clone3` ENOSYS (its flags cannot be inspected; the
//! runtime falls back to `clone`). The set must fail closed with `SandboxUnavailable` and
//! nothing may run. Needs root or the rootless mode. `harness = false`.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::fs;
    use std::time::Duration;

    use sandbox::{Access, Deadline, Error, ExecutorSet, ExecutorSetOptions, Profile, ProfileConfig};
    use seccompiler::{SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule};

    const CLONE_NEWUSER: u64 = 0x1000_0000;

    fn install(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(u32::try_from(errno).unwrap()),
            std::env::consts::ARCH.try_into().unwrap(),
        )
        .unwrap();
        let program: seccompiler::BpfProgram = filter.try_into().unwrap();
        seccompiler::apply_filter(&program).unwrap();
    }

    pub fn hide_user_namespaces() {
        let newuser = || {
            vec![
                SeccompRule::new(vec![
                    SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Qword,
                        SeccompCmpOp::MaskedEq(CLONE_NEWUSER),
                        CLONE_NEWUSER,
                    )
                    .unwrap(),
                ])
                .unwrap(),
            ]
        };
        install([(libc::SYS_unshare, newuser()), (libc::SYS_clone, newuser())].into_iter().collect(), libc::EPERM);
        install([(libc::SYS_clone3, Vec::new())].into_iter().collect(), libc::ENOSYS);
    }

    pub fn a_set_fails_closed_and_nothing_runs() {
        let dir = tempfile::Builder::new().prefix("sbx-nouserns").tempdir_in("/var/tmp").unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let (ws, scratch) = (root.join("ws"), root.join("scratch"));
        fs::create_dir(&ws).unwrap();
        fs::create_dir(&scratch).unwrap();
        // Control: without a user namespace the same filter still lets a plain process run.
        let plain = std::process::Command::new("/bin/echo").arg("plain works").output().unwrap();
        assert_eq!(plain.stdout, b"plain works\n");
        let profile = Profile::new(ProfileConfig {
            workspace_root: ws.clone(),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            command: Access::Allow,
            ..ProfileConfig::default()
        })
        .unwrap();
        let options = sandbox_tests::test_options(ExecutorSetOptions::new(&scratch).max_executors(1));
        match ExecutorSet::new(&Deadline::after(Duration::from_secs(60)), &profile, options) {
            Err(Error::SandboxUnavailable { detail }) => {
                println!("fails closed: {detail}");
                assert!(detail.contains("probe container"), "{detail}");
            }
            other => panic!("expected SandboxUnavailable, got {other:?}"),
        }
        assert_eq!(fs::read_dir(&scratch).unwrap().count(), 0, "the failed set left files behind");
        assert_eq!(fs::read_dir(&ws).unwrap().count(), 0, "something ran");
    }

    pub fn the_host_probe_says_unavailable_and_why() {
        let p = sandbox::probe(&Deadline::after(Duration::from_secs(60))).unwrap();
        assert!(!p.available, "{p:?}");
        assert!(!p.reason.is_empty());
        assert_eq!(p.level, "none");
        assert!(p.guarantees.is_empty());
        assert!(!p.user_namespaces, "measured, not read from a sysctl");
        // The doctor (issue 15): what is missing, measured; what it costs; the fix (here a
        // seccomp filter on this process refuses CLONE_NEWUSER, as a container's profile would).
        let f = p.findings.iter().find(|f| f.layer == "user-namespaces").unwrap_or_else(|| panic!("{p:?}"));
        assert!(f.missing.contains("clone(CLONE_NEWUSER): EPERM"), "{f:?}");
        assert!(f.costs.contains("no sandboxed profile runs here"), "{f:?}");
        assert!(f.fix.contains("Seccomp: 2 in /proc/self/status") && f.fix.contains("CLONE_NEWUSER"), "{f:?}");
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if !sandbox_tests::privileged("linux_no_userns") {
            return std::process::ExitCode::SUCCESS;
        }
        linux::hide_user_namespaces();
        sandbox_tests::run_tests(&[
            ("a_set_fails_closed_and_nothing_runs", linux::a_set_fails_closed_and_nothing_runs),
            ("the_host_probe_says_unavailable_and_why", linux::the_host_probe_says_unavailable_and_why),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
