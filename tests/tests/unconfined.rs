//! The acknowledged-unconfined direct backend (CONTRACT.md §17): level none, only env-scrub,
//! an empty report, the scrubbed environment, shell exit semantics, process-group teardown.
//! Needs no privilege. `harness = false`: `main` calls `sandbox::init()` first.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(unix)]
mod direct {
    use std::fs;
    use std::io::Read;
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    use sandbox::{
        Access, Deadline, Error, ExecutorSet, ExecutorSetOptions, ExitStatus, Isolation, Level, LifetimeContainment,
        ProcessOptions, Profile, ProfileConfig, Signal,
    };

    struct Fixture {
        _dir: tempfile::TempDir,
        ws: PathBuf,
        scratch: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let (ws, scratch) = (root.join("ws"), root.join("scratch"));
        fs::create_dir(&ws).unwrap();
        fs::create_dir(&scratch).unwrap();
        Fixture { _dir: dir, ws, scratch }
    }

    fn config(f: &Fixture) -> ProfileConfig {
        ProfileConfig {
            workspace_root: f.ws.clone(),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            host_read: Access::Allow,
            host_write: Access::Allow,
            network: Access::Allow,
            command: Access::Allow,
            isolation: Isolation::Unconfined,
            ack_unconfined: true,
            ..ProfileConfig::default()
        }
    }

    fn dl() -> Deadline {
        Deadline::after(Duration::from_secs(30))
    }

    fn set(f: &Fixture, config: ProfileConfig) -> ExecutorSet {
        ExecutorSet::new(&dl(), &Profile::new(config).unwrap(), ExecutorSetOptions::new(&f.scratch).max_executors(2))
            .unwrap()
    }

    pub fn level_none_env_scrub_only_and_an_empty_report() {
        let f = fixture();
        let set = set(&f, config(&f));
        let exec = set.executor("k").unwrap();
        assert_eq!(exec.level(), Level::None);
        assert_eq!(exec.guarantees().names(), ["env-scrub"]);
        assert!(exec.report().entries.is_empty());
        sandbox::check_invariants(exec.level(), exec.guarantees(), Some(Isolation::Unconfined), Some(exec.report()))
            .unwrap();
        let out = exec.run_command(&dl(), &f.ws, "echo direct; exit 4").unwrap();
        assert_eq!((out.bytes.as_slice(), out.status), (&b"direct\n"[..], ExitStatus::Code(4)));
        set.close().unwrap();
    }

    pub fn the_environment_is_scrubbed_here_too() {
        // SAFETY: this runner is single-threaded; no other thread reads the environment now.
        unsafe { std::env::set_var("SANDBOX_TEST_SECRET_TOKEN", "s3cr3t") };
        let f = fixture();
        let set = set(&f, config(&f));
        let exec = set.executor("k").unwrap();
        let out = exec.run_command(&dl(), &f.ws, "env").unwrap();
        let env = String::from_utf8_lossy(&out.bytes);
        assert!(!env.contains("s3cr3t") && !env.contains("SANDBOX_TEST_SECRET_TOKEN"), "{env}");
        assert!(env.contains(&format!("HOME={}", exec.home_dir().display())), "{env}");
        assert!(env.contains(&format!("TMPDIR={}", exec.temp_dir().display())), "{env}");
        assert!(!env.contains("TAR_OPTIONS"), "TAR_OPTIONS is for Linux containers only");
        set.close().unwrap();
    }

    pub fn exec_failures_follow_the_shell() {
        let f = fixture();
        let set = set(&f, config(&f));
        let exec = set.executor("k").unwrap();
        let out = exec.run_argv(&dl(), &f.ws, &["no-such-program-here"]).unwrap();
        assert_eq!(out.status, ExitStatus::Code(127));
        assert!(String::from_utf8_lossy(&out.bytes).starts_with("sandbox: exec: "));
        fs::write(f.ws.join("plain"), "x").unwrap();
        let out = exec.run_argv(&dl(), &f.ws, &[f.ws.join("plain")]).unwrap();
        assert_eq!(out.status, ExitStatus::Code(126));
        set.close().unwrap();
    }

    pub fn background_children_are_killed_with_the_group() {
        let f = fixture();
        let set = set(&f, config(&f));
        let exec = set.executor("k").unwrap();
        let start = Instant::now();
        let out = exec.run_command(&dl(), &f.ws, "sleep 123.5 & echo started").unwrap();
        assert_eq!(out.bytes, b"started\n");
        assert!(start.elapsed() < Duration::from_secs(5));
        let alive = fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .any(|e| fs::read(e.path().join("cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains("123.5")));
        assert!(!alive, "a background child outlived the run");
        let err = exec.run_command(&Deadline::after(Duration::from_millis(100)), &f.ws, "sleep 30").unwrap_err();
        assert!(matches!(err, Error::DeadlineExceeded { .. }));
        // Also once the workload closed its output and keeps running.
        let start = Instant::now();
        let err = exec
            .run_command(&Deadline::after(Duration::from_millis(300)), &f.ws, "exec >&- 2>&-; sleep 30.5")
            .unwrap_err();
        assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
        assert!(start.elapsed() < Duration::from_secs(3));
        set.close().unwrap();
    }

    pub fn processes_work_directly() {
        let f = fixture();
        let set = set(&f, config(&f));
        let exec = set.executor("k").unwrap();
        let opts = ProcessOptions {
            cwd: f.ws.clone(),
            command: String::from("read x; echo out-$x; echo err >&2"),
            execution_id: String::from("e"),
            ..ProcessOptions::default()
        };
        let p = exec.prepare_process(&dl(), opts).unwrap().start(&dl()).unwrap();
        assert_eq!(p.lifetime_containment(), LifetimeContainment::Unspecified);
        p.stdin().write(b"1\n").unwrap();
        p.stdin().close();
        let (mut o, mut e) = (String::new(), String::new());
        p.take_stdout().unwrap().read_to_string(&mut o).unwrap();
        p.take_stderr().unwrap().read_to_string(&mut e).unwrap();
        assert_eq!((o.as_str(), e.as_str()), ("out-1\n", "err\n"));
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Code(0));
        let opts = ProcessOptions {
            cwd: f.ws.clone(),
            argv: vec!["sleep".into(), "30".into()],
            execution_id: String::from("e"),
            ..ProcessOptions::default()
        };
        let p = exec.prepare_process(&dl(), opts).unwrap().start(&dl()).unwrap();
        p.signal(&dl(), Signal::Terminate(Duration::ZERO)).unwrap();
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Signal(15));
        set.close().unwrap();
    }

    #[cfg(target_os = "linux")]
    pub fn pty_mode_works_directly() {
        let f = fixture();
        let set = set(&f, config(&f));
        let exec = set.executor("k").unwrap();
        let opts = ProcessOptions {
            cwd: f.ws.clone(),
            command: String::from("tty >/dev/null && stty size; read x; echo got-$x"),
            execution_id: String::from("e"),
            tty: true,
            ..ProcessOptions::default()
        };
        let p = exec.prepare_process(&dl(), opts).unwrap().start(&dl()).unwrap();
        assert_eq!(p.stream_mode(), sandbox::StreamMode::Pty);
        p.stdin().write(b"x\n").unwrap();
        let mut out = String::new();
        p.take_stdout().unwrap().read_to_string(&mut out).unwrap();
        assert!(out.contains("24 80") && out.contains("got-x"), "{out:?}");
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Code(0));
        set.close().unwrap();
    }

    /// `ExecutorSet::new` checks every option (CONTRACT.md §9 step 2, §10) before creating
    /// anything; seeds land in an isolated HOME; concurrent first calls share one executor.
    pub fn options_are_checked_and_seeds_land() {
        let f = fixture();
        let profile = Profile::new(config(&f)).unwrap();
        let real = Profile::new(ProfileConfig { home: sandbox::Home::RealHome, ..config(&f) }).unwrap();
        let seed = f.ws.join("gitconfig");
        fs::write(&seed, "[user]\n\tname = agent\n").unwrap();
        let base = || ExecutorSetOptions::new(&f.scratch).max_executors(2);
        let bad: Vec<(ExecutorSetOptions, &Profile)> = vec![
            (ExecutorSetOptions::new("").max_executors(1), &profile),
            (ExecutorSetOptions::new(&f.scratch), &profile),
            (base().grant_ttl(Duration::ZERO), &profile),
            (base().pids_max(0), &profile),
            (base().memory_max(0), &profile),
            (base().cgroup_parent("relative/parent"), &profile),
            (base().cgroup_parent("/a/../b"), &profile),
            (base().pass_env(["LD_PRELOAD"]), &profile),
            (base().pass_env(["A=B"]), &profile),
            (base().pass_env(["https_proxy"]), &profile),
            (base().set_env("HOME", "/x"), &profile),
            (base().set_env("SANDBOX_X", "1"), &profile),
            (base().set_env("X", "a\0b"), &profile),
            (base().seed_home(&seed, ".gitconfig"), &real),
            (base().seed_home("relative", ".gitconfig"), &profile),
            (base().seed_home(f.ws.join("missing"), ".gitconfig"), &profile),
            (base().seed_home(&seed, "../escape"), &profile),
            (base().seed_home(&seed, "/abs"), &profile),
            (base().seed_home(&seed, "a").seed_home(&seed, "a"), &profile),
            (ExecutorSetOptions::new(f.scratch.join("missing")).max_executors(1), &profile),
        ];
        for (i, (options, p)) in bad.into_iter().enumerate() {
            let got = ExecutorSet::new(&dl(), p, options);
            assert!(matches!(got, Err(Error::InvalidOptions { .. })), "case {i}: {got:?}");
        }
        assert_eq!(fs::read_dir(&f.scratch).unwrap().count(), 0, "a failed set created something");
        let set = std::sync::Arc::new(
            ExecutorSet::new(&dl(), &profile, base().seed_home(&seed, ".config/git/config").set_env("GIT_X", "y"))
                .unwrap(),
        );
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let set = std::sync::Arc::clone(&set);
                std::thread::spawn(move || set.executor("same").unwrap())
            })
            .collect();
        let execs: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(execs.iter().all(|e| std::sync::Arc::ptr_eq(e, &execs[0])), "one executor per key");
        let exec = &execs[0];
        let seeded = exec.home_dir().join(".config/git/config");
        assert_eq!(fs::read_to_string(&seeded).unwrap(), "[user]\n\tname = agent\n");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(exec.home_dir()).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(fs::metadata(exec.home_dir().join(".config")).unwrap().permissions().mode() & 0o777, 0o700);
        let out = exec.run_command(&dl(), &f.ws, "echo $GIT_X").unwrap();
        assert_eq!(out.bytes, b"y\n");
        assert!(exec.report().entries.is_empty(), "unconfined: an empty report");
        drop(execs);
        if let Ok(set) = std::sync::Arc::try_unwrap(set) {
            set.close().unwrap();
            set.close().unwrap();
        }
    }

    pub fn unconfined_needs_its_acknowledgement_and_allow_everywhere() {
        let f = fixture();
        assert!(matches!(
            Profile::new(ProfileConfig { ack_unconfined: false, ..config(&f) }),
            Err(Error::InvalidProfile { .. })
        ));
        assert!(matches!(
            Profile::new(ProfileConfig { network: Access::Deny, ..config(&f) }),
            Err(Error::InvalidProfile { .. })
        ));
        // command may be anything; Gated stops a plain run.
        let set = set(&f, ProfileConfig { command: Access::Gated, ..config(&f) });
        let exec = set.executor("k").unwrap();
        assert!(matches!(exec.run_command(&dl(), &f.ws, "true"), Err(Error::GrantRequired)));
        set.close().unwrap();
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(unix)]
    {
        use direct::*;
        sandbox_tests::run_tests(&[
            ("level_none_env_scrub_only_and_an_empty_report", level_none_env_scrub_only_and_an_empty_report),
            ("the_environment_is_scrubbed_here_too", the_environment_is_scrubbed_here_too),
            ("exec_failures_follow_the_shell", exec_failures_follow_the_shell),
            ("background_children_are_killed_with_the_group", background_children_are_killed_with_the_group),
            ("processes_work_directly", processes_work_directly),
            #[cfg(target_os = "linux")]
            ("pty_mode_works_directly", pty_mode_works_directly),
            (
                "unconfined_needs_its_acknowledgement_and_allow_everywhere",
                unconfined_needs_its_acknowledgement_and_allow_everywhere,
            ),
            ("options_are_checked_and_seeds_land", options_are_checked_and_seeds_land),
        ])
    }
    #[cfg(not(unix))]
    std::process::ExitCode::SUCCESS
}
