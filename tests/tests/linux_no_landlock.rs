//! A host without Landlock, simulated: a seccomp filter on this test process (inherited by the
//! re-executed helper and the container) makes every Landlock syscall fail with ENOSYS, as on a
//! kernel built without it. The probe, level, guarantees and report must say exactly that, and
//! what needs Landlock must narrow (never widen). Needs root. `harness = false`.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::fs;
    use std::path::PathBuf;
    use std::time::Duration;

    use sandbox::{
        Access, Deadline, ExecutorSet, ExecutorSetOptions, ExitStatus, Level, Profile, ProfileConfig, Status,
    };

    /// Installs the filter on this (still single-threaded) process.
    pub fn hide_landlock() {
        let rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> =
            [libc::SYS_landlock_create_ruleset, libc::SYS_landlock_add_rule, libc::SYS_landlock_restrict_self]
                .into_iter()
                .map(|nr| (nr, Vec::new()))
                .collect();
        let filter = seccompiler::SeccompFilter::new(
            rules,
            seccompiler::SeccompAction::Allow,
            seccompiler::SeccompAction::Errno(libc::ENOSYS as u32),
            std::env::consts::ARCH.try_into().unwrap(),
        )
        .unwrap();
        let program: seccompiler::BpfProgram = filter.try_into().unwrap();
        seccompiler::apply_filter(&program).unwrap();
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        ws: PathBuf,
        scratch: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::Builder::new().prefix("sbx-nolandlock").tempdir_in("/var/tmp").unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let (ws, scratch) = (root.join("ws"), root.join("scratch"));
        fs::create_dir(&ws).unwrap();
        fs::create_dir(&scratch).unwrap();
        fs::write(ws.join("f.txt"), "workspace file\n").unwrap();
        Fixture { _dir: dir, ws, scratch }
    }

    fn dl() -> Deadline {
        Deadline::after(Duration::from_secs(60))
    }

    fn config(f: &Fixture) -> ProfileConfig {
        ProfileConfig {
            workspace_root: f.ws.clone(),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            host_read: Access::Deny,
            command: Access::Allow,
            ..ProfileConfig::default()
        }
    }

    pub fn level_is_degraded_and_the_report_says_why() {
        let f = fixture();
        let set = ExecutorSet::new(
            &dl(),
            &Profile::new(config(&f)).unwrap(),
            sandbox_tests::test_options(ExecutorSetOptions::new(&f.scratch).max_executors(1)),
        )
        .unwrap();
        let exec = set.executor("k").unwrap();
        assert_eq!(exec.level(), Level::Degraded);
        let landlock = exec.report().get("landlock").unwrap();
        assert_eq!(landlock.status, Status::Unenforced, "{landlock:?}");
        assert!(landlock.detail.contains("abi 0"), "{landlock:?}");
        assert_eq!(exec.report().get("seccomp").unwrap().status, Status::Enforced);
        // The mount view still holds both boundaries.
        let g = exec.guarantees();
        assert!(g.read_boundary && g.write_boundary && g.process_boundary && g.network_boundary);
        sandbox::check_invariants(exec.level(), g, Some(sandbox::Isolation::Sandboxed), Some(exec.report())).unwrap();
        let bind = "import socket; s, _ = socket.socketpair(); s.bind('bound.sock'); print('bound')";
        let out = exec
            .run_command(
                &dl(),
                &f.ws,
                &format!("echo confined; cat f.txt; ls / >/dev/null && echo listed; python3 -c \"{bind}\""),
            )
            .unwrap();
        assert_eq!(out.status, ExitStatus::Code(0), "{}", String::from_utf8_lossy(&out.bytes));
        // Without Landlock a stream socketpair's end can be bound to a path in a writable area
        // (the conformance suite's Landlock probe is the negative of this control), as the
        // unix-sockets entry says.
        assert_eq!(String::from_utf8_lossy(&out.bytes), "confined\nworkspace file\nlisted\nbound\n");
        assert!(f.ws.join("bound.sock").exists());
        let unix = exec.report().get("unix-sockets").unwrap();
        assert!(unix.detail.contains("landlock is not in force"), "{unix:?}");
        let out = exec.run_command(&dl(), &f.ws, "echo x > /etc/nope || echo refused").unwrap();
        assert!(String::from_utf8_lossy(&out.bytes).ends_with("refused\n"));
        set.close().unwrap();
    }

    pub fn a_write_only_workspace_is_masked_and_reported_narrowed() {
        let f = fixture();
        let cfg = ProfileConfig { workspace_read: Access::Gated, ..config(&f) };
        let set = ExecutorSet::new(
            &dl(),
            &Profile::new(cfg).unwrap(),
            sandbox_tests::test_options(ExecutorSetOptions::new(&f.scratch).max_executors(1)),
        )
        .unwrap();
        let exec = set.executor("k").unwrap();
        let wb = exec.report().get("write-boundary").unwrap();
        assert_eq!(wb.status, Status::Narrowed, "{wb:?}");
        let out = exec
            .run_command(
                &dl(),
                &f.ws,
                "cat f.txt 2>/dev/null || echo unreadable; (echo x > new.txt) 2>/dev/null || echo unwritable",
            )
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.bytes), "unreadable\nunwritable\n");
        assert!(!f.ws.join("new.txt").exists());
        set.close().unwrap();
    }

    pub fn the_host_probe_reports_no_landlock() {
        let p = sandbox::probe(&dl()).unwrap();
        assert_eq!(p.landlock_abi, None);
        // Rootless, the probe's default options have no cgroup parent on this v1 host: it runs
        // all the same (issue 15), and the doctor names that fix too.
        assert!(p.available, "{p:?}");
        let cgroup = p.findings.iter().any(|f| f.layer == "cgroup" && f.fix.contains("SANDBOX_CGROUP_PARENT"));
        assert_eq!(cgroup, sandbox_tests::rootless_mode(), "{:?}", p.findings);
        // The doctor: Landlock's absence as measured (ENOSYS here: the filter stands in for a
        // kernel without it), what it costs, and the fix.
        let f = p.findings.iter().find(|f| f.layer == "landlock").unwrap_or_else(|| panic!("{p:?}"));
        assert!(f.missing.contains("no Landlock") && f.missing.contains("os error 38"), "{f:?}");
        assert!(f.costs.contains("level degraded"), "{f:?}");
        assert!(f.fix.contains("CONFIG_SECURITY_LANDLOCK=y") && f.fix.contains("lsm="), "{f:?}");
        assert_eq!(p.landlock_abi, None);
        assert_eq!(p.level, "degraded");
        assert!(p.report.iter().any(|e| e.feature == "landlock" && e.status == Status::Unenforced));
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if !sandbox_tests::privileged("linux_no_landlock") {
            return std::process::ExitCode::SUCCESS;
        }
        linux::hide_landlock();
        sandbox_tests::run_tests(&[
            ("level_is_degraded_and_the_report_says_why", linux::level_is_degraded_and_the_report_says_why),
            (
                "a_write_only_workspace_is_masked_and_reported_narrowed",
                linux::a_write_only_workspace_is_masked_and_reported_narrowed,
            ),
            ("the_host_probe_reports_no_landlock", linux::the_host_probe_reports_no_landlock),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
