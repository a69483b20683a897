//! Resource abuse and faults on the Linux backend (issue 8): a workload filling its isolated
//! HOME, a full or read-only scratch root, very many files in the private `/tmp`, a process that
//! ignores SIGTERM and one that closes its output and keeps running. Every call returns (a
//! status or a clear error, never a hang or a panic), nothing survives, and runs work again once
//! the fault is gone. Needs root or the rootless mode. `harness = false`: `main` calls
//! `sandbox::init()` first.
//!
//! - **Small filesystem.** The disk-full and read-only cases put the scratch root on a 32 MiB
//!   tmpfs. As root the test mounts it itself (and unmounts it after); in the rootless rerun
//!   `scripts/rootless.sh` (which runs as root) mounts one owned by the rootless user and passes
//!   its path in `SANDBOX_TEST_SMALL_FS`. Rootless without that variable the tests fail rather
//!   than skip. Remounting read-only mid-test needs root: rootless, that one test prints
//!   `SKIPPED (rootless): …` and checks nothing.
//! - **Many files.** CI creates 100,000 files; the full million is
//!   `SANDBOX_ABUSE_FILES=1000000 cargo test -p sandbox-tests --test linux_abuse -- many_files`
//!   (the memory limit grows with the count, 2 KiB a file; should it still be too small the
//!   workload is OOM-killed, which the test accepts as long as the run reports it).
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::fs;
    use std::io::Read;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use sandbox::{Deadline, Error, ExecutorSet, ExecutorSetOptions, ExitStatus, ProcessOptions, Profile, Signal};

    use sandbox_tests::TestDirs;

    pub use sandbox_tests::deadline as dl;

    /// The size of the small filesystem the tests mount as root.
    const SMALL_FS_MIB: u64 = 32;

    /// A small tmpfs for the scratch root: mounted by this test (root), or a fresh directory
    /// on the one `scripts/rootless.sh` prepared (`SANDBOX_TEST_SMALL_FS`).
    pub struct SmallFs {
        /// The scratch root on it.
        pub path: PathBuf,
        /// Mounted by us (so we may remount and must unmount it).
        mounted: bool,
        /// A read-only bind is stacked on it.
        read_only_bind: bool,
        _sub: Option<tempfile::TempDir>,
    }

    impl SmallFs {
        fn new(under: &Path) -> SmallFs {
            if let Some(shared) = std::env::var_os("SANDBOX_TEST_SMALL_FS").filter(|v| !v.is_empty()) {
                let sub = tempfile::Builder::new().prefix("abuse").tempdir_in(&shared).unwrap();
                let path = fs::canonicalize(sub.path()).unwrap();
                return SmallFs { path, mounted: false, read_only_bind: false, _sub: Some(sub) };
            }
            assert!(
                !sandbox_tests::rootless_mode(),
                "rootless: SANDBOX_TEST_SMALL_FS must name a small tmpfs owned by this user (scripts/rootless.sh)"
            );
            let path = under.join("small");
            fs::create_dir(&path).unwrap();
            nix::mount::mount(
                Some("tmpfs"),
                &path,
                Some("tmpfs"),
                nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
                Some(format!("size={SMALL_FS_MIB}m,mode=0700").as_str()),
            )
            .unwrap_or_else(|e| panic!("mounting a {SMALL_FS_MIB} MiB tmpfs on {}: {e}", path.display()));
            SmallFs { path, mounted: true, read_only_bind: false, _sub: None }
        }

        /// Makes it read-only (root only). A plain read-only remount fails with `EBUSY` while
        /// the set holds a file open for writing (its lock), so a read-only bind of the scratch
        /// root is stacked on it: every later lookup goes through the read-only mount.
        fn make_read_only(&mut self) {
            use nix::mount::MsFlags;
            nix::mount::mount(Some(&self.path), &self.path, None::<&str>, MsFlags::MS_BIND, None::<&str>).unwrap();
            self.read_only_bind = true;
            let flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY;
            nix::mount::mount(None::<&str>, &self.path, None::<&str>, flags, None::<&str>).unwrap();
        }

        /// Removes the read-only bind: the filesystem is writable again.
        fn make_writable(&mut self) {
            nix::mount::umount2(&self.path, nix::mount::MntFlags::empty()).unwrap();
            self.read_only_bind = false;
        }

        /// Free bytes on it.
        fn free(&self) -> u64 {
            let s = nix::sys::statvfs::statvfs(&self.path).unwrap();
            s.blocks_available() * s.fragment_size()
        }

        /// Its total size in bytes.
        fn size(&self) -> u64 {
            let s = nix::sys::statvfs::statvfs(&self.path).unwrap();
            s.blocks() * s.fragment_size()
        }
    }

    impl Drop for SmallFs {
        fn drop(&mut self) {
            if self.read_only_bind {
                let _ = nix::mount::umount2(&self.path, nix::mount::MntFlags::MNT_DETACH);
            }
            if self.mounted {
                let _ = nix::mount::umount2(&self.path, nix::mount::MntFlags::MNT_DETACH);
            }
        }
    }

    /// The test area: a workspace on the host's disk and, when asked, a scratch root on a small
    /// filesystem (dropped, and so unmounted, before the area is removed).
    pub struct Fixture {
        pub small: Option<SmallFs>,
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
            Fixture { small: None, dirs: TestDirs::new("sbx-abuse") }
        }

        pub fn with_small_fs() -> Fixture {
            let dirs = TestDirs::new("sbx-abuse");
            let small = SmallFs::new(&dirs.root);
            Fixture { small: Some(small), dirs }
        }

        fn small(&self) -> &SmallFs {
            self.small.as_ref().unwrap()
        }

        /// The scratch root: on the small filesystem when there is one.
        pub fn scratch_root(&self) -> &Path {
            self.small.as_ref().map_or(&self.dirs.scratch, |s| &s.path)
        }

        pub fn options(&self) -> ExecutorSetOptions {
            sandbox_tests::test_options(ExecutorSetOptions::new(self.scratch_root()).max_executors(4))
        }

        pub fn set(&self, options: impl FnOnce(ExecutorSetOptions) -> ExecutorSetOptions) -> ExecutorSet {
            self.try_set(options).unwrap()
        }

        pub fn try_set(
            &self,
            options: impl FnOnce(ExecutorSetOptions) -> ExecutorSetOptions,
        ) -> Result<ExecutorSet, Error> {
            ExecutorSet::new(&dl(), &Profile::new(self.allow_config()).unwrap(), options(self.options()))
        }

        pub fn process(&self, command: &str) -> ProcessOptions {
            ProcessOptions {
                cwd: self.ws.clone(),
                command: command.to_owned(),
                execution_id: String::from("abuse"),
                ..ProcessOptions::default()
            }
        }

        /// Every entry under the workspace with its size (the host side must not change).
        pub fn workspace(&self) -> BTreeMap<PathBuf, u64> {
            fn walk(dir: &Path, into: &mut BTreeMap<PathBuf, u64>) {
                for e in fs::read_dir(dir).unwrap().flatten() {
                    let meta = e.metadata().unwrap();
                    into.insert(e.path(), meta.len());
                    if meta.is_dir() {
                        walk(&e.path(), into);
                    }
                }
            }
            let mut map = BTreeMap::new();
            walk(&self.ws, &mut map);
            map
        }
    }

    fn processes_matching(needle: &str) -> Vec<String> {
        fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(needle))
            .collect()
    }

    fn wait_until(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
        let end = Instant::now() + within;
        while !f() {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn count_dir(p: &Path) -> usize {
        fs::read_dir(p).map(|d| d.count()).unwrap_or(0)
    }

    /// A spawn failure caused by the filesystem: `Io` or `Runtime`, and its text names it.
    fn assert_filesystem_error(err: &Error, words: &[&str]) {
        assert!(matches!(err, Error::Io { .. } | Error::Runtime { .. }), "{err:?}");
        let text = err.to_string().to_lowercase();
        assert!(words.iter().any(|w| text.contains(w)), "the error does not name the problem ({words:?}): {text}");
    }

    const NO_SPACE: &[&str] = &["no space left", "os error 28", "enospc"];
    const READ_ONLY: &[&str] = &["read-only file system", "os error 30", "erofs"];

    /// A workload fills its isolated HOME (on a 32 MiB scratch filesystem) until ENOSPC: the run
    /// returns its status, the write landed on that filesystem only, a spawn while it is full
    /// returns (a clear error, or it runs and removes the file), and once the file is gone runs
    /// work again.
    pub fn filling_the_isolated_home_returns_and_runs_work_again_once_cleaned() {
        let f = Fixture::with_small_fs();
        let ws_before = f.workspace();
        let set = f.set(|o| o);
        let exec = set.executor("k").unwrap();
        let home = exec.home_dir().to_path_buf();
        assert!(home.starts_with(&f.small().path), "HOME {} is not on the scratch root", home.display());
        let start = Instant::now();
        let out =
            exec.run_command(&dl(), &f.ws, "head -c 100000000 /dev/zero > \"$HOME/fill\"; echo status $?").unwrap();
        let text = String::from_utf8_lossy(&out.bytes);
        println!("fill: {:?} in {:?}, {} bytes left", out.status, start.elapsed(), f.small().free());
        assert_eq!(out.status, ExitStatus::Code(0), "{text}");
        assert!(text.ends_with("status 1\n") && text.contains("No space left on device"), "{text}");
        assert!(start.elapsed() < Duration::from_secs(30), "the fill took {:?}", start.elapsed());
        let filled = fs::metadata(home.join("fill")).unwrap().len();
        assert!(filled > f.small().size() / 2 && filled <= f.small().size(), "{filled} bytes");
        assert!(f.small().free() < 1024 * 1024, "the filesystem is not full: {}", f.small().free());
        assert_eq!(f.workspace(), ws_before, "the fill reached the workspace");

        // A spawn while the scratch filesystem is full: it returns promptly either way.
        let start = Instant::now();
        match exec.run_command(&dl(), &f.ws, "rm -f \"$HOME/fill\"; echo cleaned") {
            Ok(out) => {
                println!("a spawn on a full scratch root ran: {:?}", out.status);
                assert_eq!(out.bytes, b"cleaned\n");
            }
            Err(err) => {
                println!("a spawn on a full scratch root failed: {err}");
                assert_filesystem_error(&err, NO_SPACE);
                fs::remove_file(home.join("fill")).unwrap();
            }
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the spawn on a full disk took {:?}", start.elapsed());
        assert!(!home.join("fill").exists());
        let out = exec.run_command(&dl(), &f.ws, "echo again > \"$HOME/x\" && cat \"$HOME/x\"").unwrap();
        assert_eq!(out.bytes, b"again\n");
        set.close().unwrap();
        assert_eq!(count_dir(&f.small().path), 0, "close left the set directory");
        assert_eq!(f.workspace(), ws_before);
    }

    /// Fills the small filesystem from the host (the test itself) and returns the filler's path.
    fn fill_from_the_host(dir: &Path) -> PathBuf {
        use std::io::Write;
        let path = dir.join("host-fill");
        let mut file = fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 1024 * 1024];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
        // The last partial blocks: byte by byte is too slow, small writes until none fits.
        let small = [0u8; 512];
        while file.write(&small).is_ok_and(|n| n > 0) {}
        path
    }

    /// The scratch filesystem full before the spawn and before `ExecutorSet::new`: both return a
    /// clear error (or work), never panic or hang, leave nothing half-made, and work again once
    /// space is freed.
    pub fn a_full_scratch_root_gives_clear_errors_and_recovers() {
        let f = Fixture::with_small_fs();
        let set = f.set(|o| o);
        let exec = set.executor("k").unwrap();
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo before").unwrap().bytes, b"before\n");
        let filler = fill_from_the_host(&f.small().path);
        println!("{} bytes left", f.small().free());
        let start = Instant::now();
        match exec.run_command(&dl(), &f.ws, "echo full") {
            Ok(out) => println!("a spawn on a full scratch root ran: {out:?}"),
            Err(err) => {
                println!("a spawn on a full scratch root failed: {err}");
                assert_filesystem_error(&err, NO_SPACE);
            }
        }
        let process = exec.prepare_process(&dl(), f.process("echo full")).and_then(|p| p.start(&dl()));
        match process {
            Ok(p) => println!("a process on a full scratch root ran: {:?}", p.wait(&dl())),
            Err(err) => {
                println!("a process on a full scratch root failed: {err}");
                assert_filesystem_error(&err, NO_SPACE);
            }
        }
        let entries_before = count_dir(&f.small().path);
        match f.try_set(|o| o) {
            Ok(other) => {
                println!("a set on a full scratch root was made");
                other.close().unwrap();
            }
            Err(err) => {
                println!("a set on a full scratch root failed: {err}");
                assert!(
                    matches!(err, Error::Io { .. } | Error::Runtime { .. } | Error::SandboxUnavailable { .. }),
                    "{err:?}"
                );
                let text = err.to_string().to_lowercase();
                assert!(NO_SPACE.iter().any(|w| text.contains(w)), "the error does not name the problem: {text}");
            }
        }
        assert_eq!(count_dir(&f.small().path), entries_before, "a failed set left its directory");
        assert!(start.elapsed() < Duration::from_secs(30), "the calls on a full disk took {:?}", start.elapsed());
        assert!(processes_matching("echo full").is_empty());

        fs::remove_file(&filler).unwrap();
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo after").unwrap().bytes, b"after\n");
        let state = set.dir().join("state");
        set.close().unwrap();
        assert!(!state.exists());
        assert_eq!(count_dir(&f.small().path), 0, "leftovers on the scratch root");
    }

    /// The scratch root remounted read-only between runs (root only): the next run fails with a
    /// clear error and no panic; once it is read-write again runs work and `close()` succeeds.
    pub fn a_read_only_scratch_root_gives_clear_errors_and_recovers() {
        if sandbox_tests::rootless_mode() {
            println!(
                "SKIPPED (rootless): remounting the scratch filesystem read-only mid-test needs root; \
                 the root run covers it"
            );
            return;
        }
        let mut f = Fixture::with_small_fs();
        let set = f.set(|o| o);
        let exec = set.executor("k").unwrap();
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo before").unwrap().bytes, b"before\n");
        // A run's container is kept for the next run of its shape (issue 16), which then needs
        // nothing of the scratch root: this run is killed at its deadline, so its container is
        // given up and the next run needs a new one.
        let killed = exec.run_command(&sandbox::Deadline::after(Duration::from_millis(500)), &f.ws, "sleep 5");
        assert!(matches!(killed, Err(Error::DeadlineExceeded { .. })), "{killed:?}");
        f.small.as_mut().unwrap().make_read_only();
        let start = Instant::now();
        let err = exec.run_command(&dl(), &f.ws, "echo read-only").unwrap_err();
        println!("a run on a read-only scratch root: {err}");
        assert_filesystem_error(&err, READ_ONLY);
        let err = exec.prepare_process(&dl(), f.process("echo read-only")).and_then(|p| p.start(&dl())).unwrap_err();
        assert_filesystem_error(&err, READ_ONLY);
        // A new executor needs a new HOME: a clear error, nothing memoised.
        let err = set.executor("other").unwrap_err();
        println!("a new executor on a read-only scratch root: {err}");
        assert_filesystem_error(&err, READ_ONLY);
        assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
        assert!(processes_matching("echo read-only").is_empty());
        f.small.as_mut().unwrap().make_writable();
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo after").unwrap().bytes, b"after\n");
        let other = set.executor("other").unwrap();
        assert_eq!(other.run_command(&dl(), &f.ws, "echo other").unwrap().bytes, b"other\n");
        set.close().unwrap();
        assert_eq!(count_dir(&f.small().path), 0, "close left the set directory");
    }

    /// Very many files in the private `/tmp` (`SANDBOX_ABUSE_FILES`, default 100,000) under a
    /// memory limit (2 KiB a file, 512 MiB at least): the run returns (all made, or the workload
    /// OOM-killed and reported),
    /// the next run's `/tmp` is empty, and no process or container state is left.
    pub fn many_files_in_the_private_tmp_return_and_leave_nothing() {
        let n: u64 = std::env::var("SANDBOX_ABUSE_FILES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
        let f = Fixture::new();
        // tmpfs inodes and dentries are charged to the run: about 2 KiB a file, 512 MiB at least.
        let memory = (n * 2048).max(512 * 1024 * 1024);
        let set = f.set(|o| o.memory_max(memory));
        let exec = set.executor("k").unwrap();
        let start = Instant::now();
        let out = exec
            .run_command(
                &Deadline::after(Duration::from_secs(600)),
                &f.ws,
                &format!(
                    "mkdir /tmp/many && cd /tmp/many && seq 1 {n} | xargs touch; echo status $?; \
                     ls -f | wc -l; sleep 1000.125 & sleep 0.1"
                ),
            )
            .unwrap();
        let took = start.elapsed();
        let text = String::from_utf8_lossy(&out.bytes);
        println!("{n} files: {:?} {text:?} in {took:?}", out.status);
        let words: Vec<&str> = text.split_whitespace().collect();
        let all_made = out.status.success() && words == ["status", "0", &(n + 2).to_string()];
        let oom_killed = out.status.signal() == Some(9) || text.contains("status 137") || text.contains("status 125");
        assert!(all_made || oom_killed, "{:?} {text:?}", out.status);
        // Bounded, not a benchmark: each creation is a round trip to the creation guard (about
        // 0.2 ms here when idle; 21 s alone, 35 s once in a loaded CI run), so the bound only
        // says that the run returns, with room for a slow machine.
        if n <= 200_000 {
            assert!(took < Duration::from_secs(90), "{n} files took {took:?}");
        }
        assert!(processes_matching("sleep 1000.125").is_empty(), "a background process outlived the run");
        let out = exec.run_command(&dl(), &f.ws, "ls -A /tmp | wc -l").unwrap();
        assert_eq!(String::from_utf8_lossy(&out.bytes).trim(), "0", "the next run's /tmp is not empty");
        // Beyond the executor's warm containers (two per shape), no container state or bundle
        // is left once the helpers' removals are done; after close, nothing at all.
        let end = Instant::now() + Duration::from_secs(10);
        let left = || (count_dir(&set.dir().join("state")), count_dir(&set.dir().join("bundles")));
        while (left().0 > 2 || left().1 > 2) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        let (state, bundles) = left();
        assert!(state <= 2 && bundles <= 2, "container state or bundles left: {state} {bundles}");
        set.close().unwrap();
        assert_eq!(count_dir(&f.scratch), 0);
    }

    /// A workload that ignores SIGTERM: a 1 s deadline still ends it promptly; through the
    /// process API a TERM (with a long grace) does not end it, `Kill` and set close do, promptly,
    /// and nothing of it survives.
    pub fn a_process_ignoring_sigterm_is_still_ended_promptly() {
        let f = Fixture::new();
        let set = f.set(|o| o);
        let exec = set.executor("k").unwrap();
        let start = Instant::now();
        let err = exec
            .run_command(&Deadline::after(Duration::from_secs(1)), &f.ws, "trap '' TERM; echo ready; sleep 1000.25")
            .unwrap_err();
        let took = start.elapsed();
        match err {
            Error::DeadlineExceeded { partial } => assert_eq!(partial, b"ready\n"),
            other => panic!("{other:?}"),
        }
        assert!(took < Duration::from_secs(5), "the deadline took {took:?}");
        assert!(processes_matching("sleep 1000.25").is_empty(), "the workload outlived its deadline");

        let cmd = "trap '' TERM; echo ready; sleep 1000.5";
        let p = exec.prepare_process(&dl(), f.process(cmd)).unwrap().start(&dl()).unwrap();
        let mut stdout = p.take_stdout().unwrap();
        let mut ready = [0u8; 6];
        stdout.read_exact(&mut ready).unwrap();
        assert!(!processes_matching("sleep 1000.5").is_empty());
        // SIGTERM alone (the grace is long): it keeps running.
        p.signal(&dl(), Signal::Terminate(Duration::from_secs(120))).unwrap();
        let err = p.wait(&Deadline::after(Duration::from_millis(800))).unwrap_err();
        assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
        assert!(!processes_matching("sleep 1000.5").is_empty(), "SIGTERM ended a process that ignores it");
        let start = Instant::now();
        p.signal(&dl(), Signal::Kill).unwrap();
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Signal(9));
        assert!(start.elapsed() < Duration::from_secs(5), "kill took {:?}", start.elapsed());
        p.close(&dl()).unwrap();
        assert!(processes_matching("sleep 1000.5").is_empty());

        // Set close ends one that ignores SIGTERM too.
        let p = exec
            .prepare_process(&dl(), f.process("trap '' TERM; echo ready; sleep 1000.75"))
            .unwrap()
            .start(&dl())
            .unwrap();
        let mut stdout = p.take_stdout().unwrap();
        stdout.read_exact(&mut ready).unwrap();
        let start = Instant::now();
        set.close().unwrap();
        assert!(start.elapsed() < Duration::from_secs(5), "close took {:?}", start.elapsed());
        let result = p.wait(&dl());
        assert!(matches!(result, Err(Error::ExecutorClosed { .. })), "{result:?}");
        p.close(&dl()).unwrap();
        wait_until("no survivor", Duration::from_secs(2), || processes_matching("sleep 1000.75").is_empty());
    }

    /// A workload that closes stdout and stderr and keeps running (CONTRACT.md §11–§12): EOF is
    /// not its end. A run without a deadline waits for its exit; with a short deadline it ends
    /// promptly; through the process API what it wrote before arrives, a wait deadline gives up
    /// while it runs on, and `Kill` ends it (the readers then see EOF); nothing survives. (`linux_processes::
    /// a_deadline_holds_after_the_workload_closed_its_output` covers the run's partial output.)
    pub fn a_process_that_closes_its_output_and_keeps_running() {
        let f = Fixture::new();
        let set = f.set(|o| o);
        let exec = set.executor("k").unwrap();
        let marker = f.ws.join("after-close");
        let start = Instant::now();
        let out =
            exec.run_command(&dl(), &f.ws, &format!("exec >&- 2>&-; sleep 1; touch {}", marker.display())).unwrap();
        assert_eq!(out.status, ExitStatus::Code(0));
        assert!(out.bytes.is_empty());
        assert!(start.elapsed() >= Duration::from_millis(900), "the run returned at EOF, before the exit");
        assert!(marker.exists(), "the run returned before the workload finished");

        let start = Instant::now();
        let err = exec
            .run_command(&Deadline::after(Duration::from_secs(1)), &f.ws, "exec >&- 2>&-; sleep 1000.875")
            .unwrap_err();
        assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
        assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
        assert!(processes_matching("sleep 1000.875").is_empty());

        let p = exec
            .prepare_process(&dl(), f.process("echo out; echo err >&2; exec >&- 2>&-; sleep 1001.125"))
            .unwrap()
            .start(&dl())
            .unwrap();
        // The sandbox init holds the other ends of the pipes, so EOF comes with the exit.
        let (mut stdout, mut stderr) = (p.take_stdout().unwrap(), p.take_stderr().unwrap());
        let (mut out, mut err) = ([0u8; 4], [0u8; 4]);
        stdout.read_exact(&mut out).unwrap();
        stderr.read_exact(&mut err).unwrap();
        assert_eq!((&out, &err), (b"out\n", b"err\n"));
        let waited = p.wait(&Deadline::after(Duration::from_millis(500)));
        assert!(matches!(waited, Err(Error::DeadlineExceeded { .. })), "{waited:?}");
        assert!(!processes_matching("sleep 1001.125").is_empty(), "the process ended with its output");
        let start = Instant::now();
        p.signal(&dl(), Signal::Kill).unwrap();
        assert_eq!(p.wait(&dl()).unwrap().status, ExitStatus::Signal(9));
        assert!(start.elapsed() < Duration::from_secs(5));
        let (mut rest_out, mut rest_err) = (Vec::new(), Vec::new());
        stdout.read_to_end(&mut rest_out).unwrap();
        stderr.read_to_end(&mut rest_err).unwrap();
        assert!(rest_out.is_empty() && rest_err.is_empty());
        p.close(&dl()).unwrap();
        assert!(processes_matching("sleep 1001.125").is_empty());
        set.close().unwrap();
    }

    /// `n` nested `d` directories as one relative path (longer than PATH_MAX for n > 2048).
    fn nested(n: usize) -> PathBuf {
        std::iter::repeat_n("d", n).collect()
    }

    /// The red team of 4 December (night): as an ordinary user, a directory its owner cannot
    /// open (`chmod 0`, 0100, 0300) stopped the removal of the run's HOME and TMPDIR, and the
    /// sweep of the dead set failed the same way: 200 MB a run stayed in `/dev/shm` for good.
    /// Each such directory (nested, and the HOME itself) is given owner rwx and removed: the
    /// set's directory is gone after close, and a dead set holding such a tree is swept.
    /// (As root the opens ignore modes; the rootless suite runs this as an ordinary user.)
    /// Control: the runs wrote the files (the workload saw them).
    pub fn directories_their_owner_cannot_open_do_not_defeat_removal() {
        use std::os::unix::fs::PermissionsExt;
        let f = Fixture::new();
        let set = f.set(|o| o);
        let exec = set.executor("k").unwrap();
        let out = exec
            .run_command(
                &dl(),
                &f.ws,
                "for m in 0 100 300 500; do mkdir -p \"$HOME/keep-$m/sub\" && echo data > \"$HOME/keep-$m/sub/blob\" && \
                 chmod 0 \"$HOME/keep-$m/sub\" && chmod $m \"$HOME/keep-$m\"; done; \
                 mkdir -p \"$TMPDIR/t/u\" && chmod 0 \"$TMPDIR/t/u\" \"$TMPDIR/t\"; ls \"$HOME\" | wc -l; chmod 0 \"$HOME\"",
            )
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.bytes).trim(), "4", "control: the workload made the directories");
        let dir = set.dir().to_path_buf();
        drop(exec);
        set.close().unwrap();
        assert!(!dir.exists(), "the set directory survived close");
        assert_eq!(count_dir(&f.scratch), 0);

        // A dead set (no lock, old) holding such directories: the next set sweeps it.
        let dead = f.scratch.join("sandbox-executors-00deadbeef00beef");
        fs::create_dir_all(dead.join("home-x/d/e")).unwrap();
        fs::write(dead.join("home-x/d/e/blob"), "data").unwrap();
        for (p, mode) in [("home-x/d/e", 0), ("home-x/d", 0o100), ("home-x", 0)] {
            fs::set_permissions(dead.join(p), fs::Permissions::from_mode(mode)).unwrap();
        }
        let old = std::time::SystemTime::now() - Duration::from_secs(120);
        fs::File::open(&dead).unwrap().set_modified(old).unwrap();
        let set = f.set(|o| o);
        assert!(!dead.exists(), "the dead set with directories its owner cannot open was not swept");
        set.close().unwrap();
        assert_eq!(count_dir(&f.scratch), 0);
    }

    /// The red team of 4 December (night): each container's devpts instance had no `max`, so
    /// one run took the host's whole pool of pseudo-terminals outside its own instance (3071
    /// here) and every other sandbox's `openpty` failed with ENOSPC. A run now gets at most 64:
    /// the 65th fails with ENOSPC, and while it holds them another run still gets one (control).
    pub fn a_run_holds_at_most_64_pseudo_terminals_and_others_still_get_theirs() {
        use std::io::{BufRead, BufReader};
        let f = Fixture::new();
        let set = f.set(|o| o);
        let hog = set.executor("hog").unwrap();
        let other = set.executor("other").unwrap();
        let script = "import os, errno, sys, time\nfds = []\ntry:\n    while len(fds) < 4000:\n        \
             fds.append(os.open('/dev/ptmx', os.O_RDWR | os.O_NOCTTY))\nexcept OSError as e:\n    \
             print('opened', len(fds), errno.errorcode[e.errno], flush=True)\ntime.sleep(30)\n";
        fs::write(f.ws.join("pty_hog.py"), script).unwrap();
        let p = hog.prepare_process(&dl(), f.process("python3 pty_hog.py")).unwrap();
        let process = p.start(&dl()).unwrap();
        let mut line = String::new();
        BufReader::new(process.take_stdout().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "opened 64 ENOSPC", "the run's bound");
        let out = other.run_command(&dl(), &f.ws, "python3 -c 'import os; os.openpty(); print(\"pty-ok\")'").unwrap();
        assert_eq!(String::from_utf8_lossy(&out.bytes), "pty-ok\n", "control: another run gets a terminal");
        process.signal(&dl(), Signal::Kill).unwrap();
        process.wait(&dl()).unwrap();
        set.close().unwrap();
    }

    /// A HOME tree deeper than PATH_MAX (issue 12, class 8), made by the workload, must not
    /// defeat removal: the run returns the workload's own status, `close()` removes the set
    /// directory (by descriptor), and a dead set left with such a tree is swept by the next
    /// set. Controls: the tree is really beyond path-based access (ENAMETOOLONG on the host),
    /// and the workload may make it (its HOME is its own).
    pub fn a_home_deeper_than_path_max_does_not_defeat_removal() {
        let f = Fixture::new();
        let set = f.set(|o| o);
        let exec = set.executor("k").unwrap();
        let home = exec.home_dir().to_path_buf();
        let out = exec
            .run_command(
                &dl(),
                &f.ws,
                // Relative mkdir and chdir have no depth limit (a shell's `cd` stops near
                // PATH_MAX, about 2000 levels: the CLI test runs that one).
                "python3 -c 'import os\nos.chdir(os.environ[\"HOME\"])\nfor i in range(2300):\n    \
                 os.mkdir(\"d\"); os.chdir(\"d\")\nopen(\"leaf\", \"w\").close()\nprint(\"depth\", i + 1)'; exit 3",
            )
            .unwrap();
        assert_eq!(out.status, ExitStatus::Code(3), "{}", String::from_utf8_lossy(&out.bytes));
        let text = String::from_utf8_lossy(&out.bytes).into_owned();
        let depth: usize = text.trim().strip_prefix("depth ").and_then(|d| d.parse().ok()).unwrap_or(0);
        assert!(depth > 2048, "the workload made only {depth} levels: {text}");
        let deep = home.join(nested(depth));
        let err = fs::symlink_metadata(&deep).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENAMETOOLONG), "the tree is reachable by path: {err}");
        // Another run of the executor is unaffected.
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo still").unwrap().bytes, b"still\n");
        let dir = set.dir().to_path_buf();
        drop(exec);
        set.close().unwrap();
        assert!(!dir.exists(), "the set directory survived close");
        assert_eq!(count_dir(&f.scratch), 0);

        // A dead set (no lock, old) holding such a tree: the next set sweeps it.
        let dead = f.scratch.join("sandbox-executors-00deadbeef00dead");
        fs::create_dir(&dead).unwrap();
        let held = fs::File::open(&dead).unwrap();
        {
            use nix::fcntl::OFlag;
            use nix::sys::stat::Mode;
            use std::os::fd::AsRawFd;
            let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
            let mut cur = nix::dir::Dir::open(&dead, flags, Mode::empty()).unwrap();
            for _ in 0..2200 {
                nix::sys::stat::mkdirat(Some(cur.as_raw_fd()), "d", Mode::from_bits_truncate(0o700)).unwrap();
                cur = nix::dir::Dir::openat(Some(cur.as_raw_fd()), "d", flags, Mode::empty()).unwrap();
            }
        }
        held.set_modified(std::time::SystemTime::now() - Duration::from_secs(120)).unwrap();
        drop(held);
        let set = f.set(|o| o);
        assert!(!dead.exists(), "the dead set with a deep tree was not swept");
        set.close().unwrap();
        assert_eq!(count_dir(&f.scratch), 0);
    }
}

#[cfg(target_os = "linux")]
mod cpu {
    use std::fs;
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    use sandbox::{Deadline, Error, ExecutorSet, ProcessOptions, Profile, Signal};
    use sandbox_tests::TestDirs;

    use super::linux::dl;

    /// Host pids whose command line contains `marker`.
    fn pids_with(marker: &str) -> Vec<i32> {
        let me = std::process::id().to_string();
        fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
            .filter(|pid| pid.to_string() != me)
            .filter(|pid| {
                fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(marker))
            })
            .collect()
    }

    /// Whether the host's cpu controller is on cgroup v2.
    fn v2() -> bool {
        std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
    }

    /// The directory of `pid`'s cgroup in the cpu controller's hierarchy.
    fn cpu_cgroup(pid: i32) -> Option<PathBuf> {
        let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let rel = path.trim_start_matches('/');
            if v2() && controllers.is_empty() {
                return Some(PathBuf::from("/sys/fs/cgroup").join(rel));
            }
            if !v2() && controllers.split(',').any(|c| c == "cpu") {
                return Some(PathBuf::from("/sys/fs/cgroup/cpu").join(rel));
            }
        }
        None
    }

    /// The weight file's expected content for a v2 weight.
    fn weight_text(weight: u64) -> (String, String) {
        if v2() {
            (String::from("cpu.weight"), weight.to_string())
        } else {
            (String::from("cpu.shares"), (weight * 1024 / 100).max(2).to_string())
        }
    }

    /// Host spawns (`/bin/true`) timed every 50 ms until `stop`: (median, max, count); the
    /// three slowest are printed with when they started (seconds after the first).
    /// A spawn that takes over 500 ms has its kernel stack printed once (where it waits).
    fn time_host_spawns(stop: &std::sync::atomic::AtomicBool) -> (Duration, Duration, usize) {
        use std::sync::atomic::{AtomicU64, Ordering};
        let begin = Instant::now();
        let mut times = Vec::new();
        let tid = nix::unistd::gettid();
        // Microseconds since `begin` when the current spawn started, 0 between spawns.
        let started = AtomicU64::new(0);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut shown = 0;
                while !done.load(Ordering::SeqCst) {
                    let at = started.load(Ordering::SeqCst);
                    let now = u64::try_from(begin.elapsed().as_micros()).unwrap_or(u64::MAX);
                    if at != 0 && at != shown && now.saturating_sub(at) > 500_000 {
                        shown = at;
                        let mut stack = fs::read_to_string(format!("/proc/self/task/{tid}/stack")).unwrap_or_default();
                        // The child, when the spawn waits in its exec or its start.
                        let children =
                            fs::read_to_string(format!("/proc/self/task/{tid}/children")).unwrap_or_default();
                        for child in children.split_whitespace() {
                            let own = fs::read_to_string(format!("/proc/{child}/stack")).unwrap_or_default();
                            stack.push_str(&format!("child {child}:\n{own}"));
                        }
                        println!("a host spawn waits (started at {:.1}s):\n{stack}", at as f64 / 1e6);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
            while !stop.load(Ordering::SeqCst) {
                let t = Instant::now();
                started.store(u64::try_from(begin.elapsed().as_micros()).unwrap_or(u64::MAX).max(1), Ordering::SeqCst);
                std::process::Command::new("/bin/true").status().unwrap();
                started.store(0, Ordering::SeqCst);
                times.push((t.elapsed(), t.duration_since(begin)));
                std::thread::sleep(Duration::from_millis(50));
            }
            done.store(true, Ordering::SeqCst);
        });
        times.sort();
        let slowest: Vec<String> =
            times.iter().rev().take(3).map(|(d, at)| format!("{d:?} at {:.1}s", at.as_secs_f64())).collect();
        println!("slowest host spawns: {}", slowest.join(", "));
        (times[times.len() / 2].0, times[times.len() - 1].0, times.len())
    }

    /// Issue 12, class 13: a shell fork bomb under a deadline (pids.max at its default)
    /// no longer starves the host: the spawn's cgroup has the low CPU weight (read back from the
    /// host, and from the library's own parent as root), host spawns stay fast while the bomb
    /// runs (median and max printed; before this fix one took 52 s on this 2-core machine), and
    /// the bomb ends at its deadline (killed member by member, not only through its init) leaving
    /// no process and no cgroup. Control: the same workload primitive (forking) works, and a
    /// process of the run is where the weight says.
    pub fn a_fork_bomb_gets_a_low_cpu_weight_and_ends_at_its_deadline() {
        if sandbox_tests::needs_a_cgroup("the CPU weight is a cgroup's") {
            return;
        }
        let dirs = TestDirs::new("sbx-cpu");
        let set = ExecutorSet::new(&dl(), &Profile::new(dirs.allow_config()).unwrap(), dirs.set_options(2)).unwrap();
        let exec = set.executor("k").unwrap();
        assert!(exec.guarantees().resource_limits);
        let detail = &exec.report().get("resource-limits").unwrap().detail;
        // The default pids.max: 128 per CPU within 1024-4096 (1024 on this 2-core host).
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let pids = (cpus * 128).clamp(1024, 4096);
        assert!(detail.contains(&format!("pids.max {pids},")) && detail.contains("cpu weight 10 "), "{detail}");
        // Read back: a process of the run sits in a cgroup with the low weight.
        let marker = format!("sbx-cpu-weight-{}", std::process::id());
        let p = exec
            .prepare_process(
                &dl(),
                ProcessOptions {
                    cwd: dirs.ws.clone(),
                    command: format!("sh -c 'sleep 30; : {marker}' & sleep 1; echo forked; wait"),
                    execution_id: String::from("e"),
                    ..ProcessOptions::default()
                },
            )
            .unwrap();
        let process = p.start(&dl()).unwrap();
        let mut line = [0u8; 7];
        std::io::Read::read_exact(&mut process.take_stdout().unwrap(), &mut line).unwrap();
        assert_eq!(&line, b"forked\n", "forking works (control)");
        let pid = *pids_with(&marker).first().expect("the run's process is visible from the host");
        let dir = cpu_cgroup(pid).expect("the run's cpu cgroup");
        let (file, want) = weight_text(10);
        assert_eq!(fs::read_to_string(dir.join(&file)).unwrap().trim(), want, "{}", dir.display());
        if !sandbox_tests::rootless_mode() {
            // The library's own parent (/sandbox) has it too: against the host it is the
            // parent's weight that counts.
            assert_eq!(fs::read_to_string(dir.parent().unwrap().join(&file)).unwrap().trim(), want);
        } else {
            println!("ROOTLESS: the delegated parent's weight is the delegator's (scripts/rootless.sh sets it)");
        }
        process.signal(&dl(), Signal::Kill).unwrap();
        process.wait(&dl()).unwrap();
        assert!(pids_with(&marker).is_empty());

        // The bomb, with host spawns timed meanwhile. A host fork can wait for a kernel lock
        // that a preempted task of the bomb holds (the global cgroup threadgroup lock once any
        // process on the host changes cgroup, the i_mmap lock of the shared libc, a page of
        // a shared file being faulted in): THREAT-MODEL 13, "What remains". CI saw such waits
        // of 5.9 s and 2.96 s. A wait is printed with its kernel stack; a bomb with one over
        // the bound is measured once more: a bomb that starves the host by itself (52 s and
        // 14.9 s before the low weight) does so both times.
        const HOST_WAIT_BOUND: Duration = Duration::from_secs(5);
        let marker = format!("sbx-cpu-bomb-{}", std::process::id());
        let deadline = Duration::from_secs(8);
        let bomb = || {
            let stop = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                let timer = s.spawn(|| time_host_spawns(&stop));
                let watcher = s.spawn(|| {
                    let end = Instant::now() + deadline;
                    while Instant::now() < end {
                        // Any process of the bomb will do: most live for a moment only. One that
                        // exits between the two reads shows the root cgroup (a v1 task leaves its
                        // cgroups as it exits, after its memory, with its command line): its
                        // cgroup counts only when its command line still reads after it.
                        let alive_in = |pid: i32| {
                            let dir = cpu_cgroup(pid)?;
                            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                            String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(&marker).then_some(dir)
                        };
                        if let Some(dir) = pids_with(&marker).into_iter().find_map(alive_in) {
                            return Some(dir);
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    None
                });
                let start = Instant::now();
                let result = exec.run_command(
                    &Deadline::after(deadline),
                    &dirs.ws,
                    &format!("(f() {{ f | f & }}; f); while :; do :; done; : {marker}"),
                );
                let elapsed = start.elapsed();
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
                (result, elapsed, watcher.join().unwrap(), timer.join().unwrap())
            })
        };
        let mut attempt = 0;
        let (bomb_cgroup, max) = loop {
            attempt += 1;
            let (result, elapsed, bomb_cgroup, (median, max, n)) = bomb();
            println!(
                "fork bomb {attempt} for {deadline:?}: run returned after {elapsed:?}; host /bin/true spawns \
                 meanwhile: n={n} median={median:?} max={max:?}"
            );
            // Every bomb ends at its deadline, the one measured again too.
            assert!(matches!(result, Err(Error::DeadlineExceeded { .. })), "{result:?}");
            assert!(elapsed < deadline + Duration::from_secs(10), "the bomb outlived its deadline: {elapsed:?}");
            if max < HOST_WAIT_BOUND || attempt == 2 {
                break (bomb_cgroup, max);
            }
            println!("a host spawn waited {max:?}: measuring a second bomb");
        };
        assert!(max < HOST_WAIT_BOUND, "a host spawn took {max:?} during each of two bombs");
        // Nothing left: no process of the bomb, its cgroup gone (removed off the caller's path:
        // wait a little).
        assert!(pids_with(&marker).is_empty(), "bomb processes survived");
        let dir = bomb_cgroup.expect("the bomb's cgroup was seen");
        let end = Instant::now() + Duration::from_secs(10);
        while dir.exists() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!dir.exists(), "{} was left", dir.display());
        // Control: the executor runs work again.
        assert_eq!(exec.run_command(&dl(), &dirs.ws, "echo ok").unwrap().bytes, b"ok\n");
        set.close().unwrap();
    }

    /// Burns CPU for 1.5 s of wall time and prints the fraction of one CPU it got.
    const BURN: &str = "python3 -c 'import time\nt=time.time(); c=time.process_time()\nwhile time.time()-t<1.5: pass\nprint(round((time.process_time()-c)/1.5, 3))'";

    /// `cpu_max_millicpus` bounds a run's CPU time: the bound reads back from the host
    /// (`cpu.max` or `cpu.cfs_quota_us`), the kernel throttles the burner (`nr_throttled` in
    /// `cpu.stat` grows) and it gets at most about 0.2 of a CPU. Control: the same burner without
    /// the bound has no quota and is never throttled (how much CPU it then gets depends on the
    /// host's other load: printed, asserted only when the host is idle enough to show it).
    pub fn a_cpu_bound_holds_and_its_absence_does_not_bound() {
        if sandbox_tests::needs_a_cgroup("the CPU bound is a cgroup's") {
            return;
        }
        let dirs = TestDirs::new("sbx-cpumax");
        let profile = Profile::new(dirs.allow_config()).unwrap();
        let burn = |bound: Option<u32>| -> (f64, u64) {
            let mut o = dirs.set_options(1).cpu_weight(10_000);
            if let Some(m) = bound {
                o = o.cpu_max_millicpus(m);
            }
            let set = ExecutorSet::new(&dl(), &profile, o).unwrap();
            let exec = set.executor("k").unwrap();
            let detail = exec.report().get("resource-limits").unwrap().detail.clone();
            assert_eq!(detail.contains("cpu max 0.200 cpus"), bound.is_some(), "{detail}");
            let marker = format!("sbx-cpumax-{}-{}", std::process::id(), bound.is_some());
            let cmd = format!("{BURN} # {marker}");
            // (quota file, cpu.stat) as last read while the run lived.
            let (out, seen) = std::thread::scope(|s| {
                let reader = s.spawn(|| {
                    let end = Instant::now() + Duration::from_secs(15);
                    let mut dir = None;
                    let mut seen: Option<(String, String)> = None;
                    while Instant::now() < end {
                        if dir.is_none() {
                            dir = pids_with(&marker).first().and_then(|p| cpu_cgroup(*p));
                        }
                        if let Some(d) = &dir {
                            let file = if v2() { "cpu.max" } else { "cpu.cfs_quota_us" };
                            match (fs::read_to_string(d.join(file)), fs::read_to_string(d.join("cpu.stat"))) {
                                (Ok(q), Ok(stat)) => seen = Some((q, stat)),
                                _ if seen.is_some() => break,
                                _ => {}
                            }
                            if pids_with(&marker).is_empty() {
                                break;
                            }
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    seen
                });
                let out = exec.run_command(&dl(), &dirs.ws, &cmd).unwrap();
                (out, reader.join().unwrap())
            });
            let (quota, stat) = seen.expect("the run's cgroup was seen");
            let first = quota.split_whitespace().next().unwrap_or("").to_owned();
            match bound {
                Some(m) => assert_eq!(first, (u64::from(m) * 100).to_string(), "{quota}"),
                None => assert!(first == "max" || first == "-1", "{quota}"),
            }
            let throttled = stat
                .lines()
                .find_map(|l| l.strip_prefix("nr_throttled ").and_then(|v| v.trim().parse::<u64>().ok()))
                .unwrap_or_else(|| panic!("no nr_throttled in {stat}"));
            set.close().unwrap();
            (String::from_utf8_lossy(&out.bytes).trim().parse().unwrap(), throttled)
        };
        let (bounded, bounded_throttled) = burn(Some(200));
        let (free, free_throttled) = burn(None);
        println!(
            "cpu fraction with cpu_max 0.2: {bounded} (throttled {bounded_throttled} times); without: {free} \
             (throttled {free_throttled} times)"
        );
        assert!(bounded < 0.3, "the bound did not hold: {bounded}");
        assert!(bounded_throttled > 0, "the bounded burner was never throttled");
        assert_eq!(free_throttled, 0, "the control was throttled without a bound");
        if free < 0.35 {
            println!("LOADED HOST: the control got {free} of a CPU; its share is not asserted");
        }
    }
}

#[cfg(target_os = "linux")]
mod inotify {
    use std::io::{BufRead, BufReader};
    use std::time::Duration;

    use sandbox::{ExecutorSet, ProcessOptions, Profile, Signal};
    use sandbox_tests::TestDirs;

    use super::linux::dl;

    /// Inside the sandbox: tries to raise the run's bound (a write to its user namespace's
    /// sysctl, a nested user namespace), creates inotify instances until refused (in this process
    /// and in 3 children at once), adds a watch on one (control), fills the watch bound when it is
    /// small enough to fill quickly, prints what it saw and holds everything until killed.
    const HOG: &str = r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def grab(limit=100000):
    fds = []
    while len(fds) < limit:
        fd = libc.inotify_init()
        if fd < 0:
            return fds, ctypes.get_errno()
        fds.append(fd)
    return fds, 0
bound = open('/proc/sys/user/max_inotify_instances').read().strip()
try:
    open('/proc/sys/user/max_inotify_instances', 'w').write('100000')
    raised = 'yes'
except OSError as e:
    raised = 'no:%d' % e.errno
nested = libc.unshare(0x10000000)
print('bound', bound, 'raise', raised, 'nested', nested, ctypes.get_errno(), flush=True)
# Children first: three processes grab at once; the bound counts them all together.
kids = []
for i in range(3):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        fds, err = grab()
        os.write(w, b'%d ' % len(fds))
        time.sleep(3600)
        os._exit(0)
    os.close(w)
    kids.append((pid, r))
counts = [int(os.read(r, 32)) for _, r in kids]
fds, err = grab()
print('children', sum(counts), 'self', len(fds), 'errno', err, flush=True)
for pid, _ in kids:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
more, err = grab()
fds += more
wd = libc.inotify_add_watch(fds[0], b'/tmp', 0x100) if fds else -1
print('total', len(fds), 'errno', err, 'watch', wd, flush=True)
wbound = int(open('/proc/sys/user/max_inotify_watches').read())
if wbound <= 300000:
    os.makedirs('/tmp/w', exist_ok=True)
    n = 0
    while True:
        p = '/tmp/w/%d' % n
        open(p, 'w').close()
        if libc.inotify_add_watch(fds[1], p.encode(), 0x100) < 0:
            print('watches', n + 1, 'of', wbound, 'errno', ctypes.get_errno(), flush=True)
            break
        n += 1
else:
    print('watches skipped', wbound, flush=True)
print('holding', flush=True)
time.sleep(3600)
"#;

    /// Issue 12, class 10: a run holds at most its own inotify bound (16 instances, in its
    /// user namespace) however it tries (one process, several, after trying to raise the bound
    /// or to escape into a nested user namespace), while the host's processes of the same uid
    /// still create instances. Control: the run creates instances and watches up to the bound.
    pub fn inotify_instances_stop_at_the_run_bound_and_the_host_keeps_its_own() {
        let dirs = TestDirs::new("sbx-inotify");
        let set = ExecutorSet::new(&dl(), &Profile::new(dirs.allow_config()).unwrap(), dirs.set_options(1)).unwrap();
        let exec = set.executor("k").unwrap();
        let detail = &exec.report().get("resource-limits").unwrap().detail;
        assert!(detail.contains("inotify 16 instances"), "{detail}");
        let p = exec
            .prepare_process(
                &dl(),
                ProcessOptions {
                    cwd: dirs.ws.clone(),
                    argv: vec!["python3".into(), "-c".into(), HOG.into()],
                    execution_id: String::from("e"),
                    ..ProcessOptions::default()
                },
            )
            .unwrap();
        let process = p.start(&dl()).unwrap();
        let mut out = BufReader::new(process.take_stdout().unwrap());
        let mut seen = Vec::new();
        loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "the hog ended early: {seen:?}");
            seen.push(line.trim().to_owned());
            if line.starts_with("holding") {
                break;
            }
        }
        println!("inside: {seen:?}");
        let words = |prefix: &str| -> Vec<String> {
            let line = seen.iter().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {seen:?}"));
            line.split(' ').map(str::to_owned).collect()
        };
        let b = words("bound");
        assert_eq!(b[1], "16", "{b:?}");
        assert!(b[3].starts_with("no:"), "the run raised its own bound: {b:?}");
        assert_eq!(b[5], "-1", "a nested user namespace was created: {b:?}");
        let c = words("children");
        let (children, own): (u64, u64) = (c[1].parse().unwrap(), c[3].parse().unwrap());
        assert!(children + own <= 16, "four processes together held {} instances", children + own);
        assert_eq!(c[5], "24", "refused with EMFILE: {c:?}");
        let t = words("total");
        assert_eq!(t[1], "16", "control: the run holds exactly its bound once alone: {t:?}");
        assert_eq!(t[3], "24");
        assert!(t[5].parse::<i64>().unwrap() >= 1, "control: a watch works: {t:?}");
        let w = words("watches");
        if w[1] != "skipped" {
            assert_eq!(w[1], w[3], "the watch bound: {w:?}");
            assert_eq!(w[5], "28", "refused with ENOSPC: {w:?}");
        }
        // The host's processes of the same uid still get instances while the run holds its
        // maximum (before the bound a run could take all 128 of them).
        let mut host = Vec::new();
        for _ in 0..8 {
            // SAFETY: inotify_init1 takes flags only and returns a new descriptor or -1.
            let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
            assert!(fd >= 0, "the host uid got no inotify instance: {}", std::io::Error::last_os_error());
            host.push(fd);
        }
        for fd in host {
            // SAFETY: fd is a descriptor this test opened above and closes once.
            unsafe { libc::close(fd) };
        }
        process.signal(&dl(), Signal::Kill).unwrap();
        process.wait(&dl()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        set.close().unwrap();
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if !sandbox_tests::privileged("linux_abuse") {
            return std::process::ExitCode::SUCCESS;
        }
        use linux::*;
        sandbox_tests::run_tests(&[
            (
                "filling_the_isolated_home_returns_and_runs_work_again_once_cleaned",
                filling_the_isolated_home_returns_and_runs_work_again_once_cleaned,
            ),
            (
                "a_full_scratch_root_gives_clear_errors_and_recovers",
                a_full_scratch_root_gives_clear_errors_and_recovers,
            ),
            (
                "a_read_only_scratch_root_gives_clear_errors_and_recovers",
                a_read_only_scratch_root_gives_clear_errors_and_recovers,
            ),
            (
                "many_files_in_the_private_tmp_return_and_leave_nothing",
                many_files_in_the_private_tmp_return_and_leave_nothing,
            ),
            ("a_process_ignoring_sigterm_is_still_ended_promptly", a_process_ignoring_sigterm_is_still_ended_promptly),
            ("a_process_that_closes_its_output_and_keeps_running", a_process_that_closes_its_output_and_keeps_running),
            (
                "a_fork_bomb_gets_a_low_cpu_weight_and_ends_at_its_deadline",
                cpu::a_fork_bomb_gets_a_low_cpu_weight_and_ends_at_its_deadline,
            ),
            ("a_cpu_bound_holds_and_its_absence_does_not_bound", cpu::a_cpu_bound_holds_and_its_absence_does_not_bound),
            (
                "inotify_instances_stop_at_the_run_bound_and_the_host_keeps_its_own",
                inotify::inotify_instances_stop_at_the_run_bound_and_the_host_keeps_its_own,
            ),
            (
                "a_home_deeper_than_path_max_does_not_defeat_removal",
                a_home_deeper_than_path_max_does_not_defeat_removal,
            ),
            (
                "directories_their_owner_cannot_open_do_not_defeat_removal",
                directories_their_owner_cannot_open_do_not_defeat_removal,
            ),
            (
                "a_run_holds_at_most_64_pseudo_terminals_and_others_still_get_theirs",
                a_run_holds_at_most_64_pseudo_terminals_and_others_still_get_theirs,
            ),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
