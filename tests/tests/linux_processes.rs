//! Executor sets, runs and asynchronous processes on the Linux backend (CONTRACT.md §9–§12):
//! concurrency, deadlines, output caps, close ordering, the process lifecycle and signals.
//! Needs root or the rootless mode. `harness = false`: `main` calls `sandbox::init()` first.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsString;
    use std::fs;
    use std::io::Read;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use sandbox::{
        Access, Deadline, Error, ExecutorSet, ExitStatus, LifetimeContainment, ProcessAccessKind, ProcessOptions,
        Profile, ProfileConfig, RootAccess, Signal, StreamMode,
    };

    use sandbox_tests::TestDirs;

    pub struct Fixture {
        dirs: TestDirs,
    }

    impl std::ops::Deref for Fixture {
        type Target = TestDirs;
        fn deref(&self) -> &TestDirs {
            &self.dirs
        }
    }

    impl Fixture {
        pub fn new() -> Fixture {
            Fixture { dirs: TestDirs::new("sbx-proc") }
        }

        pub fn config(&self) -> ProfileConfig {
            self.allow_config()
        }

        pub fn set_with(&self, config: ProfileConfig, max: usize) -> ExecutorSet {
            ExecutorSet::new(&dl(), &Profile::new(config).unwrap(), self.set_options(max)).unwrap()
        }

        pub fn set(&self) -> ExecutorSet {
            self.set_with(self.config(), 8)
        }

        pub fn options(&self, command: &str) -> ProcessOptions {
            ProcessOptions {
                cwd: self.ws.clone(),
                command: command.to_owned(),
                execution_id: String::from("exec-1"),
                ..ProcessOptions::default()
            }
        }
    }

    pub use sandbox_tests::deadline as dl;

    fn no_process_matching(needle: &str) -> bool {
        fs::read_dir("/proc").unwrap().flatten().all(|e| {
            fs::read(e.path().join("cmdline"))
                .map(|c| !String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
                .unwrap_or(true)
        })
    }

    pub fn fifty_concurrent_runs_across_eight_executors_keep_their_output_apart() {
        let f = Fixture::new();
        let set = Arc::new(f.set());
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(8).build().unwrap();
        let ws = f.ws.clone();
        let results = runtime.block_on(async move {
            let tasks: Vec<_> = (0..50)
                .map(|i| {
                    let (set, ws) = (Arc::clone(&set), ws.clone());
                    tokio::task::spawn_blocking(move || {
                        let exec = set.executor(&format!("k{}", i % 8)).unwrap();
                        let cmd = format!("for n in 1 2 3 4 5; do echo run-{i}-$n; done; echo err-{i} >&2");
                        (i, exec.run_command(&dl(), &ws, &cmd).unwrap())
                    })
                })
                .collect();
            let mut results = Vec::new();
            for t in tasks {
                results.push(t.await.unwrap());
            }
            results
        });
        assert_eq!(results.len(), 50);
        for (i, out) in results {
            let want: String = (1..=5).map(|n| format!("run-{i}-{n}\n")).collect::<String>() + &format!("err-{i}\n");
            assert_eq!(String::from_utf8_lossy(&out.bytes), want);
            assert_eq!(out.status, ExitStatus::Code(0));
        }
    }

    pub fn a_fifty_ms_deadline_returns_promptly_and_leaves_nothing() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let start = Instant::now();
        let err = exec.run_command(&Deadline::after(Duration::from_millis(50)), &f.ws, "sleep 30.5").unwrap_err();
        let took = start.elapsed();
        assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
        assert!(took < Duration::from_secs(1), "took {took:?}");
        assert!(no_process_matching("sleep 30.5"), "the workload outlived its deadline");
        // A deadline that is already done spawns nothing.
        let marker = f.ws.join("never");
        let err =
            exec.run_command(&Deadline::at(Instant::now()), &f.ws, &format!("touch {}", marker.display())).unwrap_err();
        assert!(matches!(err, Error::DeadlineExceeded { .. }));
        assert!(!marker.exists());
        set.close().unwrap();
    }

    pub fn a_deadline_holds_after_the_workload_closed_its_output() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        // A first run, so that the timed one does not pay the executor's first container (under
        // a loaded machine that alone took more than a short deadline, and "bye" never ran).
        assert_eq!(
            exec.run_command(&Deadline::after(Duration::from_secs(60)), &f.ws, "echo warm").unwrap().bytes,
            b"warm\n"
        );
        let start = Instant::now();
        let err = exec
            .run_command(&Deadline::after(Duration::from_millis(1500)), &f.ws, "echo bye; exec >&- 2>&-; sleep 30.75")
            .unwrap_err();
        match err {
            Error::DeadlineExceeded { partial } => assert_eq!(partial, b"bye\n"),
            other => panic!("{other:?}"),
        }
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        assert!(no_process_matching("sleep 30.75"));
        set.close().unwrap();
    }

    pub fn nothing_starts_after_a_deadline_or_close_that_came_first() {
        let f = Fixture::new();
        let set = Arc::new(f.set());
        let exec = set.executor("k").unwrap();
        // A container takes well over 2 ms to start: the deadline fires before it does.
        let marker = f.ws.join("after-deadline");
        let err = exec
            .run_command(&Deadline::after(Duration::from_millis(2)), &f.ws, &format!("touch {}", marker.display()))
            .unwrap_err();
        assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
        let marker2 = f.ws.join("after-close");
        let runner = {
            let (exec, ws, m) = (Arc::clone(&exec), f.ws.clone(), marker2.clone());
            std::thread::spawn(move || exec.run_command(&dl(), &ws, &format!("touch {}", m.display())))
        };
        std::thread::sleep(Duration::from_millis(2));
        set.close().unwrap();
        let result = runner.join().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        assert!(!marker.exists(), "the command ran after its deadline");
        if matches!(result, Err(Error::ExecutorClosed { ref partial }) if partial.is_empty()) {
            assert!(!marker2.exists(), "the command ran after close");
        }
    }

    pub fn a_stopped_then_killed_helper_never_hangs_a_run() {
        let f = Fixture::new();
        let set = Arc::new(f.set());
        let exec = set.executor("k").unwrap();
        let runner = {
            let (exec, ws) = (Arc::clone(&exec), f.ws.clone());
            std::thread::spawn(move || exec.run_command(&Deadline::none(), &ws, "sleep 0.3; sleep 31.25"))
        };
        let helper = loop {
            if let Some(pid) = sandbox_tests::helper_of("sleep 0.3") {
                break nix::unistd::Pid::from_raw(pid);
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        nix::sys::signal::kill(helper, nix::sys::signal::Signal::SIGSTOP).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        nix::sys::signal::kill(helper, nix::sys::signal::Signal::SIGKILL).unwrap();
        let start = Instant::now();
        let result = runner.join().unwrap();
        assert!(matches!(result, Err(Error::Runtime { .. })), "{result:?}");
        assert!(start.elapsed() < Duration::from_secs(15), "took {:?}", start.elapsed());
        std::thread::sleep(Duration::from_millis(200));
        assert!(no_process_matching("sleep 31.25"), "the workload outlived its helper");
        drop(exec);
        if let Ok(set) = Arc::try_unwrap(set) {
            set.close().unwrap();
        }
    }

    pub fn the_workload_inherits_no_ignored_signal() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let out = exec.run_command(&dl(), &f.ws, "grep SigIgn /proc/self/status").unwrap();
        let text = String::from_utf8_lossy(&out.bytes);
        let mask = u64::from_str_radix(text.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
        // Signals 1-31 (the ones programs use; 32 and up are libc's real-time internals).
        assert_eq!(mask & 0x7fff_ffff, 0, "{text}");
        // SIGPIPE kills a writer to a closed pipe, as on the host.
        let out = exec.run_command(&dl(), &f.ws, "yes | head -c1 >/dev/null; echo done").unwrap();
        assert_eq!(out.bytes, b"done\n");
        set.close().unwrap();
    }

    pub fn sixty_four_mib_with_a_sixteen_byte_cap_is_an_output_limit() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let start = Instant::now();
        let err = exec.run_argv_limited(&dl(), &f.ws, &["head", "-c", "67108864", "/dev/zero"], 16).unwrap_err();
        match err {
            Error::OutputLimit { partial } => assert!(partial.len() <= 16 && partial.len() == 16, "{}", partial.len()),
            other => panic!("{other:?}"),
        }
        assert!(start.elapsed() < Duration::from_secs(10));
        set.close().unwrap();
    }

    pub fn close_during_a_run_waits_for_it_and_its_later_effects_never_happen() {
        let f = Fixture::new();
        let set = Arc::new(f.set());
        let exec = set.executor("k").unwrap();
        let marker = f.ws.join("late-effect");
        let begun = f.ws.join("begun");
        let runner = {
            let (exec, ws, marker, begun) = (Arc::clone(&exec), f.ws.clone(), marker.clone(), begun.clone());
            std::thread::spawn(move || {
                let cmd = format!("echo started; touch {}; sleep 1; touch {}", begun.display(), marker.display());
                let r = exec.run_command(&dl(), &ws, &cmd);
                (r, Instant::now())
            })
        };
        // Close once the workload has begun (its start may take longer than a fixed pause on a
        // loaded host, where sandboxed work runs at a low CPU weight).
        let end = Instant::now() + Duration::from_secs(20);
        while !begun.exists() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(begun.exists(), "the workload never began");
        std::thread::sleep(Duration::from_millis(100));
        set.close().unwrap();
        let closed_at = Instant::now();
        let (result, returned_at) = runner.join().unwrap();
        assert!(returned_at <= closed_at, "close returned before the run did");
        match result {
            Err(Error::ExecutorClosed { partial }) => assert_eq!(partial, b"started\n"),
            other => panic!("{other:?}"),
        }
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "a side effect happened after close");
        assert!(matches!(exec.run_command(&dl(), &f.ws, "true"), Err(Error::ExecutorClosed { .. })));
        assert!(matches!(exec.prepare_process(&dl(), f.options("true")), Err(Error::ExecutorClosed { .. })));
    }

    pub fn processes_have_separate_streams_stdin_and_a_cached_wait() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let p =
            exec.prepare_process(&dl(), f.options("read line; echo \"got $line\"; echo to-err >&2; exit 5")).unwrap();
        let process = Arc::new(p.start(&dl()).unwrap());
        assert_eq!(process.stream_mode(), StreamMode::Pipes);
        assert_eq!(process.lifetime_containment(), LifetimeContainment::Enforced);
        let mut stdout = process.take_stdout().unwrap();
        let mut stderr = process.take_stderr().unwrap();
        assert!(process.take_stdout().is_none() && process.take_stderr().is_none());
        let stdin = process.stdin();
        stdin.write(b"hello\n").unwrap();
        stdin.close();
        stdin.close();
        let err = stdin.write(b"more").unwrap_err();
        assert!(
            err.get_ref()
                .and_then(|e| e.downcast_ref::<Error>())
                .is_some_and(|e| matches!(e, Error::ProcessStdinClosed))
        );
        let (mut out, mut err_text) = (String::new(), String::new());
        stdout.read_to_string(&mut out).unwrap();
        stderr.read_to_string(&mut err_text).unwrap();
        assert_eq!(out, "got hello\n");
        assert_eq!(err_text, "to-err\n");
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let p = Arc::clone(&process);
                std::thread::spawn(move || p.wait(&dl()).unwrap())
            })
            .collect();
        let results: Vec<_> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        assert!(results.iter().all(|r| *r == results[0]));
        assert_eq!(results[0].status, ExitStatus::Code(5));
        assert!(results[0].finished_at >= results[0].started_at);
        assert!(process.take_activities().is_some_and(|rx| rx.recv().is_err()));
        // After the end every signal is a no-op.
        process.signal(&dl(), Signal::Kill).unwrap();
        assert!(matches!(process.resize(&dl(), 24, 80), Err(Error::ProcessResizeUnsupported)));
        process.close(&dl()).unwrap();
        set.close().unwrap();
    }

    pub fn a_wait_deadline_gives_up_without_killing() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let process = exec.prepare_process(&dl(), f.options("sleep 0.6; echo survived")).unwrap().start(&dl()).unwrap();
        let err = process.wait(&Deadline::after(Duration::from_millis(100))).unwrap_err();
        assert!(matches!(err, Error::DeadlineExceeded { .. }));
        let result = process.wait(&dl()).unwrap();
        assert_eq!(result.status, ExitStatus::Code(0));
        let mut out = String::new();
        process.take_stdout().unwrap().read_to_string(&mut out).unwrap();
        assert_eq!(out, "survived\n");
        set.close().unwrap();
    }

    pub fn signals_reach_the_whole_tree() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        // Interrupt: a handler in a grandchild proves the tree got it.
        let p = exec
            .prepare_process(
                &dl(),
                f.options(
                    "trap 'echo outer-int' INT; sh -c 'trap \"echo child-int; exit 7\" INT; while :; do sleep 0.05; done'",
                ),
            )
            .unwrap()
            .start(&dl())
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        p.signal(&dl(), Signal::Interrupt).unwrap();
        let mut out = String::new();
        p.take_stdout().unwrap().read_to_string(&mut out).unwrap();
        assert!(out.contains("child-int") && out.contains("outer-int"), "{out:?}");
        p.wait(&dl()).unwrap();
        // Terminate with a grace: a process that ignores SIGTERM is killed after the grace.
        let p = exec
            .prepare_process(&dl(), f.options("trap '' TERM; echo ready; while :; do sleep 0.05; done"))
            .unwrap()
            .start(&dl())
            .unwrap();
        let mut stdout = p.take_stdout().unwrap();
        let mut ready = [0u8; 6];
        stdout.read_exact(&mut ready).unwrap();
        let start = Instant::now();
        p.signal(&dl(), Signal::Terminate(Duration::from_millis(300))).unwrap();
        let r = p.wait(&dl()).unwrap();
        assert_eq!(r.status, ExitStatus::Signal(9));
        assert!(start.elapsed() >= Duration::from_millis(250) && start.elapsed() < Duration::from_secs(5));
        // Kill: at once.
        let p = exec.prepare_process(&dl(), f.options("sleep 30.25")).unwrap().start(&dl()).unwrap();
        p.signal(&dl(), Signal::Kill).unwrap();
        p.signal(&dl(), Signal::Kill).unwrap();
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Signal(9));
        assert!(no_process_matching("sleep 30.25"));
        // A done deadline fails the call before anything is sent.
        let p = exec.prepare_process(&dl(), f.options("sleep 0.3; echo alive")).unwrap().start(&dl()).unwrap();
        assert!(p.signal(&Deadline::at(Instant::now()), Signal::Kill).is_err());
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Code(0));
        set.close().unwrap();
    }

    pub fn prepare_checks_come_in_the_contract_order_and_spawn_nothing() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let marker = f.ws.join("spawned");
        let touch = format!("touch {}", marker.display());
        let base = f.options(&touch);
        assert!(matches!(
            exec.prepare_process(&Deadline::at(Instant::now()), base.clone()),
            Err(Error::DeadlineExceeded { .. })
        ));
        let both = ProcessOptions { argv: vec![OsString::from("true")], ..base.clone() };
        assert!(matches!(exec.prepare_process(&dl(), both), Err(Error::InvalidArgument { .. })));
        let neither = ProcessOptions { command: String::new(), ..base.clone() };
        assert!(matches!(exec.prepare_process(&dl(), neither), Err(Error::InvalidArgument { .. })));
        let empty_prog = ProcessOptions { command: String::new(), argv: vec![OsString::new()], ..base.clone() };
        assert!(matches!(exec.prepare_process(&dl(), empty_prog), Err(Error::InvalidArgument { .. })));
        let nul = ProcessOptions { command: String::new(), argv: vec![OsString::from("a\0b")], ..base.clone() };
        assert!(matches!(exec.prepare_process(&dl(), nul), Err(Error::InvalidArgument { .. })));
        for id in ["", " x", "x ", "a\0b"] {
            let bad = ProcessOptions { execution_id: id.to_owned(), ..base.clone() };
            assert!(matches!(exec.prepare_process(&dl(), bad), Err(Error::GrantMalformed { .. })), "{id:?}");
        }
        let padded = ProcessOptions { command: format!(" {touch}"), ..base.clone() };
        assert!(matches!(exec.prepare_process(&dl(), padded), Err(Error::GrantMalformed { .. })));
        let bad_cwd = ProcessOptions { cwd: f.ws.join("missing"), ..base.clone() };
        assert!(matches!(exec.prepare_process(&dl(), bad_cwd), Err(Error::GrantMalformed { .. })));
        // Prepared, closed, never started: nothing ran.
        let p = exec.prepare_process(&dl(), base.clone()).unwrap();
        p.close().unwrap();
        p.close().unwrap();
        assert!(matches!(p.start(&dl()), Err(Error::ProcessClosed)));
        drop(exec.prepare_process(&dl(), base.clone()).unwrap());
        assert!(!marker.exists(), "prepare or close spawned something");
        // Started exactly once.
        let p = exec.prepare_process(&dl(), base.clone()).unwrap();
        assert!(matches!(p.start(&Deadline::at(Instant::now())), Err(Error::DeadlineExceeded { .. })));
        assert!(!marker.exists());
        let process = p.start(&dl()).unwrap();
        assert!(matches!(p.start(&dl()), Err(Error::ProcessAlreadyStarted)));
        process.wait(&dl()).unwrap();
        assert!(marker.exists());
        // A set closed before start: ProcessClosed.
        let p = exec.prepare_process(&dl(), f.options("true")).unwrap();
        set.close().unwrap();
        assert!(matches!(p.start(&dl()), Err(Error::ProcessClosed)));
    }

    pub fn command_access_and_effective_access() {
        let f = Fixture::new();
        let gated = f.set_with(ProfileConfig { command: Access::Gated, ..f.config() }, 1);
        let exec = gated.executor("k").unwrap();
        assert!(matches!(exec.prepare_process(&dl(), f.options("true")), Err(Error::GrantRequired)));
        gated.close().unwrap();
        let denied = f.set_with(ProfileConfig { command: Access::Deny, ..f.config() }, 1);
        let exec = denied.executor("k").unwrap();
        let with_grants = ProcessOptions { grants: vec![String::from("sbx1.x.y")], ..f.options("true") };
        assert!(matches!(exec.prepare_process(&dl(), with_grants), Err(Error::GrantDenied { .. })));
        denied.close().unwrap();

        let set = f.set();
        let p = set.executor("k").unwrap().prepare_process(&dl(), f.options("true")).unwrap();
        assert_eq!(p.effective_access().kind(), ProcessAccessKind::BroadWrite);
        set.close().unwrap();
        let ro = f.set_with(ProfileConfig { workspace_write: Access::Deny, ..f.config() }, 1);
        let p = ro.executor("k").unwrap().prepare_process(&dl(), f.options("true")).unwrap();
        assert_eq!(p.effective_access().kind(), ProcessAccessKind::ReadOnly);
        ro.close().unwrap();
        fs::create_dir(f.ws.join("out")).unwrap();
        let scoped = f.set_with(
            ProfileConfig {
                workspace_write: Access::Gated,
                additional_roots: vec![RootAccess {
                    path: f.ws.join("out"),
                    read: Access::Allow,
                    write: Access::Allow,
                }],
                ..f.config()
            },
            1,
        );
        let p = scoped.executor("k").unwrap().prepare_process(&dl(), f.options("true")).unwrap();
        assert_eq!(p.effective_access().kind(), ProcessAccessKind::ScopedWrite);
        assert_eq!(p.effective_access().write_trees(), &[f.ws.join("out")]);
        assert!(p.effective_access().write_paths().is_empty());
        scoped.close().unwrap();
    }

    fn read_until(reader: &mut impl Read, needle: &str, within: Duration) -> String {
        let end = Instant::now() + within;
        let mut text = String::new();
        let mut buf = [0u8; 4096];
        while !text.contains(needle) {
            assert!(Instant::now() < end, "no {needle:?} in {text:?}");
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(e) => panic!("{e}"),
            }
        }
        text
    }

    pub fn pty_mode_gives_a_controlling_terminal_with_line_discipline() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let tty = |command: &str| ProcessOptions { tty: true, ..f.options(command) };
        let p = exec
            // `/dev/tty` is the controlling terminal also when opened for writing, which the
            // creation guard performs for the workload (it reopens the caller's own terminal).
            .prepare_process(
                &dl(),
                tty("tty; echo via-dev-tty > /dev/tty; stty size </dev/tty; read x; echo got-$x; read y; stty size"),
            )
            .unwrap()
            .start(&dl())
            .unwrap();
        assert_eq!(p.stream_mode(), StreamMode::Pty);
        let mut out = p.take_stdout().unwrap();
        let mut err = String::new();
        p.take_stderr().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(err, "", "stderr is at EOF at once in PTY mode");
        let text = read_until(&mut out, "24 80", Duration::from_secs(10));
        assert!(text.contains("/dev/pts/"), "{text:?}");
        assert!(text.contains("via-dev-tty"), "{text:?}");
        p.stdin().write(b"hello\n").unwrap();
        let text = read_until(&mut out, "got-hello", Duration::from_secs(10));
        assert!(text.contains("hello"), "the terminal echoes input: {text:?}");
        p.resize(&dl(), 30, 100).unwrap();
        p.stdin().write(b"\n").unwrap();
        read_until(&mut out, "30 100", Duration::from_secs(10));
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Code(0));

        // ^C interrupts the foreground group; ^D (stdin close) ends input.
        let p = exec.prepare_process(&dl(), tty("sleep 30")).unwrap().start(&dl()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        p.stdin().write(&[0x03]).unwrap();
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Signal(2));
        let p = exec.prepare_process(&dl(), tty("cat >/dev/null; echo eof-seen")).unwrap().start(&dl()).unwrap();
        let mut out = p.take_stdout().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        p.stdin().close();
        p.stdin().close();
        read_until(&mut out, "eof-seen", Duration::from_secs(10));
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Code(0));
        set.close().unwrap();
    }

    pub fn a_dropped_reader_never_blocks_the_process() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let p = exec.prepare_process(&dl(), f.options("head -c 1000000 /dev/zero; echo done >&2")).unwrap();
        let process = p.start(&dl()).unwrap();
        drop(process.take_stdout());
        let mut err = String::new();
        process.take_stderr().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(err, "done\n");
        assert_eq!(process.wait(&dl()).unwrap().status, ExitStatus::Code(0));
        set.close().unwrap();
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if !sandbox_tests::privileged("linux_processes") {
            return std::process::ExitCode::SUCCESS;
        }
        use linux::*;
        sandbox_tests::run_tests(&[
            (
                "fifty_concurrent_runs_across_eight_executors_keep_their_output_apart",
                fifty_concurrent_runs_across_eight_executors_keep_their_output_apart,
            ),
            (
                "a_fifty_ms_deadline_returns_promptly_and_leaves_nothing",
                a_fifty_ms_deadline_returns_promptly_and_leaves_nothing,
            ),
            (
                "sixty_four_mib_with_a_sixteen_byte_cap_is_an_output_limit",
                sixty_four_mib_with_a_sixteen_byte_cap_is_an_output_limit,
            ),
            (
                "nothing_starts_after_a_deadline_or_close_that_came_first",
                nothing_starts_after_a_deadline_or_close_that_came_first,
            ),
            ("a_stopped_then_killed_helper_never_hangs_a_run", a_stopped_then_killed_helper_never_hangs_a_run),
            (
                "a_deadline_holds_after_the_workload_closed_its_output",
                a_deadline_holds_after_the_workload_closed_its_output,
            ),
            ("the_workload_inherits_no_ignored_signal", the_workload_inherits_no_ignored_signal),
            (
                "close_during_a_run_waits_for_it_and_its_later_effects_never_happen",
                close_during_a_run_waits_for_it_and_its_later_effects_never_happen,
            ),
            (
                "processes_have_separate_streams_stdin_and_a_cached_wait",
                processes_have_separate_streams_stdin_and_a_cached_wait,
            ),
            ("a_wait_deadline_gives_up_without_killing", a_wait_deadline_gives_up_without_killing),
            ("signals_reach_the_whole_tree", signals_reach_the_whole_tree),
            (
                "prepare_checks_come_in_the_contract_order_and_spawn_nothing",
                prepare_checks_come_in_the_contract_order_and_spawn_nothing,
            ),
            ("command_access_and_effective_access", command_access_and_effective_access),
            ("a_dropped_reader_never_blocks_the_process", a_dropped_reader_never_blocks_the_process),
            (
                "pty_mode_gives_a_controlling_terminal_with_line_discipline",
                pty_mode_gives_a_controlling_terminal_with_line_discipline,
            ),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
