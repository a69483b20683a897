//! Lifecycle and fault tests of the Linux backend: nothing leaks over many spawns, a
//! multithreaded embedder never deadlocks, a killed helper or embedder leaves no process, and
//! leftovers are swept. Needs root (CI is root). `harness = false`: `main` calls
//! `sandbox::init()` first.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use sandbox::{Error, ExecutorSet, ExecutorSetOptions, ExitStatus, Profile};

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
            Fixture { dirs: TestDirs::new("sbx-life") }
        }

        pub fn profile(&self) -> Profile {
            Profile::new(self.allow_config()).unwrap()
        }

        pub fn set(&self) -> ExecutorSet {
            ExecutorSet::new(&dl(), &self.profile(), self.set_options(8)).unwrap()
        }
    }

    pub use sandbox_tests::deadline as dl;

    fn count_dir(p: &Path) -> usize {
        fs::read_dir(p).map(|d| d.count()).unwrap_or(0)
    }

    fn processes_matching(needle: &str) -> Vec<u32> {
        fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let cmd = fs::read(e.path().join("cmdline")).ok()?;
                String::from_utf8_lossy(&cmd).replace('\0', " ").contains(needle).then_some(pid)
            })
            .collect()
    }

    fn wait_until(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
        let end = Instant::now() + within;
        while !f() {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Zombie children of this process.
    fn zombies() -> usize {
        let me = std::process::id().to_string();
        fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
            .filter(|stat| {
                let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
                let fields: Vec<&str> = after.split_whitespace().collect();
                fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str())
            })
            .count()
    }

    #[derive(Debug, PartialEq, Eq)]
    struct Counts {
        state: usize,
        bundles: usize,
        cgroups: usize,
        mounts: usize,
        fds: usize,
        threads: usize,
        zombies: usize,
    }

    fn counts(set: &ExecutorSet) -> Counts {
        Counts {
            state: count_dir(&set.dir().join("state")),
            bundles: count_dir(&set.dir().join("bundles")),
            cgroups: cgroups(),
            mounts: fs::read_to_string("/proc/self/mountinfo").unwrap().lines().count(),
            fds: count_dir(Path::new("/proc/self/fd")),
            threads: threads(),
            zombies: zombies(),
        }
    }

    /// What the host shows of this process and its containers: (cgroups, mounts, fds, threads,
    /// zombies).
    fn host_counts() -> (usize, usize, usize, usize, usize) {
        (
            cgroups(),
            fs::read_to_string("/proc/self/mountinfo").unwrap().lines().count(),
            count_dir(Path::new("/proc/self/fd")),
            threads(),
            zombies(),
        )
    }

    /// This process's threads, but for the library's cgroup keeper ("sandbox-cgroup"), which
    /// runs from a set's opening or a cold spawn until that container's process starts (60 ms at
    /// most) and ends by itself: a count taken while a set lives may or may not see it.
    fn threads() -> usize {
        fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(Result::ok)
            .filter(|t| fs::read_to_string(t.path().join("comm")).map_or(true, |c| c.trim_end() != "sandbox-cgroup"))
            .count()
    }

    fn cgroups() -> usize {
        count_dir(Path::new("/sys/fs/cgroup/pids/sandbox")) + count_dir(Path::new("/sys/fs/cgroup/sandbox"))
    }

    /// Sequential spawns (200; `SANDBOX_SOAK_RUNS=1000` for the full soak) leave nothing behind:
    /// while the set lives the counts return to their level after the first spawns (one warm
    /// container at most, its worker's deferred teardown done within a few seconds), and after
    /// close every count is back to where it was before the set existed.
    pub fn two_hundred_sequential_spawns_leave_nothing_behind() {
        let runs: usize = std::env::var("SANDBOX_SOAK_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
        let f = Fixture::new();
        let baseline = host_counts();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        // The second spawn of a shape prepares a warm container for the third.
        exec.run_command(&dl(), &f.ws, "true").unwrap();
        exec.run_command(&dl(), &f.ws, "true").unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let before = counts(&set);
        let start = Instant::now();
        for i in 0..runs {
            let out = exec.run_command(&dl(), &f.ws, &format!("echo {i}")).unwrap();
            assert_eq!(out.bytes, format!("{i}\n").into_bytes());
        }
        println!("{runs} spawns in {:?}", start.elapsed());
        let end = Instant::now() + Duration::from_secs(10);
        let mut after = counts(&set);
        while after != before && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
            after = counts(&set);
        }
        println!("counts before {before:?} after {after:?}");
        assert_eq!(before, after);
        assert!(after.state <= 2 && after.bundles <= 2, "more than the two warm containers of the shape: {after:?}");
        set.close().unwrap();
        drop(exec);
        drop(set);
        let end = Instant::now() + Duration::from_secs(10);
        let mut now = host_counts();
        while now != baseline && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
            now = host_counts();
        }
        assert_eq!(now, baseline, "(cgroups, mounts, fds, threads, zombies) after close vs before the set");
    }

    /// `reuse_containers(false)` (the CLI's sets): every spawn gets a fresh container whose
    /// init runs the process and ends with it, so the workload's shell is always the pid
    /// namespace's second process and nothing a run leaves in `/tmp` is there for the next.
    /// Positive control: the default set of the same profile keeps its containers (a later run's
    /// shell is not the namespace's second process).
    pub fn a_set_that_reuses_no_containers_runs_each_spawn_fresh() {
        let f = Fixture::new();
        let pids = |reuse: bool| -> Vec<u32> {
            let set = ExecutorSet::new(&dl(), &f.profile(), f.set_options(8).reuse_containers(reuse)).unwrap();
            let exec = set.executor("k").unwrap();
            let pids = (0..4)
                .map(|i| {
                    let out = exec
                        .run_command(
                            &dl(),
                            &f.ws,
                            &format!("test -e /tmp/left && echo left; echo {i} > /tmp/left; echo $$"),
                        )
                        .unwrap();
                    let text = String::from_utf8(out.bytes).unwrap();
                    assert!(!text.contains("left"), "run {i} found what an earlier run left in /tmp: {text}");
                    text.trim().parse::<u32>().unwrap()
                })
                .collect();
            set.close().unwrap();
            pids
        };
        let fresh = pids(false);
        println!("reuse_containers(false): the shells' pids {fresh:?}");
        assert!(fresh.iter().all(|&p| p <= 2), "a spawn ran in a container used before: {fresh:?}");
        let kept = pids(true);
        println!("default: the shells' pids {kept:?}");
        assert!(kept.iter().any(|&p| p > 2), "the default set kept no container: {kept:?}");
    }

    /// Issue 16: runs of one executor reuse a kept container, and consecutive runs share
    /// nothing the contract keeps per run. Run A leaves a process (setsid, detached), files in
    /// `/tmp` (one in a directory it made unreadable) and `/dev/shm`, System V shared memory, a
    /// message queue and a semaphore set, a POSIX message queue, an exported variable and a cwd;
    /// run B, in the same container (its shell is not the namespace's second process), finds
    /// none of them. A run cannot change the init's limits (prlimit on pid 1 is refused since
    /// red team AL set its CPU limit to kill it), and its nice value and I/O priority are
    /// refused too; any of them changed would have the container given up: the next runs get
    /// the defaults.
    /// A run's umask reaches neither the next run nor the init.
    pub fn runs_in_a_kept_container_share_nothing() {
        let f = Fixture::new();
        fs::copy(sandbox_tests::probe_bin(env!("CARGO_BIN_EXE_sandbox-probe")), f.ws.join("sandbox-probe")).unwrap();
        fs::create_dir(f.ws.join("sub")).unwrap();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        // The first spawn of a shape is fresh; the second prepares its warm containers.
        exec.run_command(&dl(), &f.ws, "true").unwrap();
        exec.run_command(&dl(), &f.ws, "true").unwrap();
        let text = |cmd: &str| {
            let out = exec.run_command(&dl(), &f.ws, cmd).unwrap();
            assert_eq!(out.status, ExitStatus::Code(0), "{cmd}: {}", String::from_utf8_lossy(&out.bytes));
            String::from_utf8(out.bytes).unwrap()
        };
        let pid = |out: &str| -> u32 {
            out.lines().find_map(|l| l.strip_prefix("pid=")).and_then(|p| p.trim().parse().ok()).unwrap()
        };
        let leave = "echo pid=$$; (setsid sleep 1000 >/dev/null 2>&1 </dev/null &); \
            echo secret > /tmp/left && mkdir -p /tmp/d/e && echo secret > /tmp/d/e/f && chmod 0 /tmp/d && echo made-tmp; \
            echo secret > /dev/shm/left && echo made-shm; \
            ipcmk -M 4096 >/dev/null && ipcmk -Q >/dev/null && ipcmk -S 1 >/dev/null && echo made-sysv=$(ipcs | grep -c '^0x'); \
            ./sandbox-probe mq-create=left; export LEFT=1; cd sub; \
            sleep 0.2; echo sleepers=$(ps -e -o comm= | grep -c '^sleep$')";
        let look = "echo pid=$$; echo cwd=$(pwd); echo env=${LEFT:-none}; \
            test -e /tmp/left && echo tmp-left; test -e /tmp/d && echo tmp-dir-left; test -e /dev/shm/left && echo shm-left; \
            echo sysv=$(ipcs | grep -c '^0x'); ./sandbox-probe mq-open=left; \
            echo sleepers=$(ps -e -o comm= | grep -c '^sleep$'); echo procs=$(ps -e -o pid= | wc -l)";
        let mut kept = 0;
        for round in 0..3 {
            let a = text(leave);
            // Positive controls: everything was made.
            // (POSIX message queues: their creation is refused in a container here, EACCES, in
            // a fresh one too; should it succeed, run B must still not find the queue.)
            for made in ["made-tmp", "made-shm", "made-sysv=3", "sleepers=1", "\"check\":\"mq-create\""] {
                assert!(a.contains(made), "round {round}: run A did not leave {made}: {a}");
            }
            let b = text(look);
            println!("round {round}: A pid {} B pid {}", pid(&a), pid(&b));
            if pid(&b) > 2 {
                kept += 1;
            }
            for left in ["tmp-left", "tmp-dir-left", "shm-left", "\"ok\":true", "env=1"] {
                assert!(!b.contains(left), "round {round}: run B found {left}: {b}");
            }
            for fresh in ["sysv=0", "sleepers=0", "env=none", &format!("cwd={}", f.ws.display())] {
                assert!(b.contains(fresh), "round {round}: run B lacks {fresh}: {b}");
            }
            // The init, the shell, the command substitution's subshell and the `ps | wc`
            // pipeline: nothing else.
            let procs: u32 = b.lines().find_map(|l| l.strip_prefix("procs=")).unwrap().trim().parse().unwrap();
            assert!(procs <= 5, "round {round}: {b}");
        }
        assert!(kept >= 2, "run B ran in run A's kept container in only {kept} of 3 rounds");

        // A run's umask (its creating calls go through the init's creation guard, which makes
        // them with the caller's umask) never reaches the next run, nor the init's own (a red
        // team, 5 December: `umask 000` in one run made the next run's files world-writable).
        let before = text("umask; grep Umask /proc/1/status; echo pid=$$");
        let made =
            text("umask 000 && touch /tmp/u && mkdir /tmp/ud && stat -c %a /tmp/u /tmp/ud && umask; echo pid=$$");
        // Positive control: the run's own umask held for its own files.
        assert!(made.starts_with("666\n777\n0000\n"), "{made}");
        for later in 0..2 {
            let after = text("umask; grep Umask /proc/1/status; touch /tmp/v && stat -c %a /tmp/v; echo pid=$$");
            let umask = before.lines().next().unwrap();
            let expected_mode = format!("{:o}", 0o666 & !u32::from_str_radix(umask, 8).unwrap());
            assert_eq!(
                after.lines().take(2).collect::<Vec<_>>(),
                before.lines().take(2).collect::<Vec<_>>(),
                "run {later}: {after}"
            );
            assert_eq!(after.lines().nth(2), Some(expected_mode.as_str()), "run {later}: {after}");
            println!("umask after a run's `umask 000`: {after}");
        }

        // The init's limits: refused (seccomp: prlimit64 sets only the caller's own).
        for (attack, check) in
            [("prlimit --pid 1 --nofile=64:64", "ulimit -n"), ("prlimit --pid 1 --stack=1048576:1048576", "ulimit -s")]
        {
            let before = text(&format!("{check}; echo pid=$$"));
            let a = text(&format!("{attack} 2>/dev/null && echo changed; echo pid=$$"));
            assert!(!a.contains("changed"), "{attack}: {a}");
            let b = text(&format!("{check}; echo pid=$$"));
            assert_eq!(b.lines().next(), before.lines().next(), "{attack} reached the next run: {b}");
        }
        // What a run may try to change in its init from outside (refused here; were one let
        // through, the container would be given up: the next runs get the defaults).
        for (attack, check) in [("renice -n 5 -p 1", "nice"), ("ionice -c 3 -p 1", "ionice")] {
            let before = text(&format!("{check}; echo pid=$$"));
            let a = text(&format!("{attack} >/dev/null 2>&1 && echo changed; echo pid=$$"));
            println!("{attack}: {}", if a.contains("changed") { "changed" } else { "refused" });
            for later in 0..2 {
                let b = text(&format!("{check}; echo pid=$$"));
                assert_eq!(b.lines().next(), before.lines().next(), "{attack} reached run {later} after it: {b}");
            }
        }
        set.close().unwrap();
    }

    /// Issue 16: emptying a kept container's `/tmp` never crosses into a bind above it. The
    /// workspace (and the scratch root, with the executor's HOME and TMPDIR) lie under the
    /// host's `/tmp`, so inside they are binds in the private `/tmp`; their files survive every
    /// clean-up, while what a run left in the private `/tmp` beside them goes.
    pub fn emptying_a_kept_containers_tmp_leaves_binds_under_it_alone() {
        let root = tempfile::Builder::new().prefix("sbx-keep").tempdir_in("/tmp").unwrap();
        let (ws, scratch) = (root.path().join("ws"), root.path().join("scratch"));
        fs::create_dir_all(ws.join("sub/deeper")).unwrap();
        fs::create_dir(&scratch).unwrap();
        fs::write(ws.join("keep.txt"), "mine\n").unwrap();
        fs::write(ws.join("sub/deeper/keep2.txt"), "mine too\n").unwrap();
        if sandbox_tests::rootless_mode() {
            // The unprivileged user of the rootless suite must reach its own areas.
            for p in [root.path(), &ws, &scratch, &ws.join("sub"), &ws.join("sub/deeper")] {
                fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
            }
        }
        let profile = Profile::new(sandbox_tests::allow_config(&ws)).unwrap();
        let options = sandbox_tests::test_options(ExecutorSetOptions::new(&scratch).max_executors(2));
        let set = ExecutorSet::new(&dl(), &profile, options).unwrap();
        let exec = set.executor("k").unwrap();
        let mut kept = 0;
        for i in 0..6 {
            let out = exec
                .run_command(
                    &dl(),
                    &ws,
                    &format!(
                        "echo pid=$$; ls -A /tmp | tr '\\n' ' '; echo; echo left > /tmp/junk-{i}; \
                         echo home > \"$HOME/h-{i}\"; echo tmpdir > \"$TMPDIR/t-{i}\"; echo ws > {}/w-{i}",
                        ws.display()
                    ),
                )
                .unwrap();
            let text = String::from_utf8_lossy(&out.bytes).into_owned();
            assert_eq!(out.status, ExitStatus::Code(0), "{text}");
            let pid: u32 = text.lines().find_map(|l| l.strip_prefix("pid=")).unwrap().trim().parse().unwrap();
            if pid > 2 {
                kept += 1;
            }
            assert!(!text.contains("junk-"), "run {i} found what an earlier run left in /tmp: {text}");
        }
        assert!(kept >= 3, "only {kept} of 6 runs in a kept container");
        // Everything in the binds is there: the caller's files and what each run wrote.
        assert_eq!(fs::read_to_string(ws.join("keep.txt")).unwrap(), "mine\n");
        assert_eq!(fs::read_to_string(ws.join("sub/deeper/keep2.txt")).unwrap(), "mine too\n");
        for i in 0..6 {
            assert!(ws.join(format!("w-{i}")).exists(), "w-{i} gone from the workspace");
        }
        let out = exec.run_command(&dl(), &ws, "ls \"$HOME\" \"$TMPDIR\" | grep -c -- '-[0-9]$'").unwrap();
        assert_eq!(String::from_utf8_lossy(&out.bytes).trim(), "12", "the executor's HOME and TMPDIR keep their files");
        set.close().unwrap();
    }

    /// A workspace and a scratch root under the host's `/tmp` (`<root>/<ws>`, `<root>/scratch`):
    /// inside the container they are binds below directories the container made on its private
    /// `/tmp` (the pins). The rootless suite's user must reach them.
    struct UnderTmp {
        _dir: tempfile::TempDir,
        root: PathBuf,
        ws: PathBuf,
        scratch: PathBuf,
    }

    impl UnderTmp {
        fn new(prefix: &str, ws: &str) -> UnderTmp {
            let dir = tempfile::Builder::new().prefix(prefix).tempdir_in("/tmp").unwrap();
            let root = fs::canonicalize(dir.path()).unwrap();
            let (ws, scratch) = (root.join(ws), root.join("scratch"));
            fs::create_dir_all(&ws).unwrap();
            fs::create_dir(&scratch).unwrap();
            if sandbox_tests::rootless_mode() {
                for p in ws.ancestors().take_while(|p| p.starts_with(&root)).chain([scratch.as_path()]) {
                    fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
                }
            }
            UnderTmp { _dir: dir, root, ws, scratch }
        }

        /// A set of the workspace's allow profile (keeping containers or not).
        fn set(&self, reuse: bool) -> ExecutorSet {
            let profile = Profile::new(sandbox_tests::allow_config(&self.ws)).unwrap();
            let options = sandbox_tests::test_options(ExecutorSetOptions::new(&self.scratch).max_executors(2))
                .reuse_containers(reuse);
            ExecutorSet::new(&dl(), &profile, options).unwrap()
        }
    }

    /// The `pid=N` line a test script printed (its shell's pid: 2 in a fresh container).
    fn pid_line(out: &str) -> u32 {
        out.lines().find_map(|l| l.strip_prefix("pid=")).and_then(|p| p.trim().parse().ok()).unwrap()
    }

    /// Round-2 red team of issue 16 (4 December). A workspace under the host's `/tmp` lies, inside,
    /// below directories the container made on its private `/tmp`: renamed, they moved the
    /// workspace to another path, where the creation guard (which decides by path) let
    /// `.githooks` be made for the host's next `git commit`, and in a kept container they moved
    /// the workspace, HOME or TMPDIR for every later run. They are mount points now: renaming or
    /// removing one fails (`EBUSY`). And what a run changes in the private directories
    /// themselves (mode, extended attributes) is never handed on: the container is given up.
    /// Controls: ordinary renames in `/tmp` work, and a later run still runs in a kept container.
    pub fn the_directories_above_binds_and_the_private_dirs_themselves_are_not_handed_on() {
        let t = UnderTmp::new("sbx-skel", "ws");
        let (root_path, ws) = (&t.root, &t.ws);
        fs::write(ws.join("keep.txt"), "mine\n").unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git").args(args).current_dir(ws).status().unwrap().success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q", "."]);
        git(&["config", "core.hooksPath", ".githooks"]);
        let set = t.set(true);
        let exec = set.executor("k").unwrap();
        let text = |cmd: &str| {
            let out = exec.run_command(&dl(), ws, cmd).unwrap();
            String::from_utf8_lossy(&out.bytes).into_owned()
        };
        let pid = pid_line;
        text("true");
        text("true");
        let r = root_path.display();
        let a = text(&format!(
            "echo pid=$$; mkdir /tmp/own && mv /tmp/own /tmp/own2 && echo own-mv-ok; cd /; \
             (mv {r} {r}-x) 2>/dev/null; echo mv=$?; (rmdir {r}) 2>/dev/null; echo rmdir=$?; \
             (mv /tmp /tmp2) 2>/dev/null; echo mv-tmp=$?; \
             (mkdir {r}/ws/.githooks) 2>/dev/null; echo hooks=$?; (mkdir {r}-x/ws/.githooks) 2>/dev/null; echo hooks2=$?"
        ));
        assert!(a.contains("own-mv-ok"), "control: an ordinary rename in /tmp: {a}");
        for refused in ["mv=0", "rmdir=0", "mv-tmp=0", "hooks=0", "hooks2=0"] {
            assert!(!a.contains(&format!("{refused}\n")), "{refused}: {a}");
        }
        assert!(!ws.join(".githooks").exists());
        let b = text("echo pid=$$; stat -c '%a' /tmp /dev/shm; echo home > \"$HOME/h\" && echo home-ok; cat keep.txt");
        assert!(pid(&b) > 2, "control: the second run runs in the kept container: {a} / {b}");
        assert!(b.contains("home-ok") && b.contains("mine"), "{b}");
        // The private directories themselves: each change gives the container up.
        for (change, check) in [
            ("chmod 0555 /tmp", "stat -c '%a' /tmp"),
            ("chmod 0500 /dev/shm", "stat -c '%a' /dev/shm"),
            ("chmod 0 /dev/pts", "stat -c '%a' /dev/pts"),
            (
                "python3 -c 'import os; os.setxattr(\"/tmp\", \"user.leak\", b\"run1\")' 2>/dev/null || chmod 0700 /tmp",
                "python3 -c 'import os; print(os.listxattr(\"/tmp\"))'; stat -c '%a' /tmp",
            ),
        ] {
            let before = text(&format!("{check}; echo pid=$$"));
            let changed = text(&format!("{change}; {check}; echo pid=$$"));
            assert_ne!(before.lines().next(), changed.lines().next(), "{change} changed nothing: {changed}");
            let after = text(&format!("{check}; echo pid=$$"));
            assert_eq!(before.lines().next(), after.lines().next(), "{change} reached the next run: {after}");
        }
        set.close().unwrap();
        assert_eq!(fs::read_to_string(ws.join("keep.txt")).unwrap(), "mine\n");
    }

    /// The evening red team of 4 December, on kept containers. (1) The pins (directories the
    /// container made on its private `/tmp` above a bind, bound onto themselves) were skipped
    /// by the clean-up as mounts: files, a `node_modules` and a changed mode left in one stayed
    /// for the next run. Now a pin is emptied (the binds in it stay) and its mode and extended
    /// attributes are compared like the private directories'. (2) `chmod 0 /dev/pts/ptmx` denied
    /// every later run a terminal: compared too, the container is given up. (3) `touch -d` on
    /// `/tmp`, `/dev/shm`, a pin and `/dev/fd` carried chosen times to the next run: they are
    /// set to the time of the clean-up. Controls: the workspace's files and what each run wrote
    /// there stay, and later runs still run in a kept container.
    pub fn nothing_is_handed_on_through_pins_ptmx_or_times() {
        let t = UnderTmp::new("sbx-pin", "ws");
        let (root_path, ws) = (&t.root, &t.ws);
        fs::write(ws.join("keep.txt"), "mine\n").unwrap();
        let set = t.set(true);
        let exec = set.executor("k").unwrap();
        let text = |cmd: &str| {
            let out = exec.run_command(&dl(), ws, cmd).unwrap();
            String::from_utf8_lossy(&out.bytes).into_owned()
        };
        let pid = pid_line;
        let r = root_path.display();
        text("true");
        // (1) What a run leaves in a pin, and the pin's own mode.
        let planted = text(&format!(
            "echo pid=$$; echo run0 > {r}/planted && mkdir -p {r}/node_modules/lodash && echo ok > {r}/node_modules/lodash/index.js && echo planted-ok"
        ));
        assert!(planted.contains("planted-ok"), "control: a pin's directory is writable: {planted}");
        let next = text(&format!("echo pid=$$; ls -A {r} | tr '\\n' ' '; echo; cat keep.txt"));
        assert!(pid(&next) > 2, "control: the next run runs in the kept container: {next}");
        assert!(!next.contains("planted") && !next.contains("node_modules"), "a pin handed on a run's files: {next}");
        assert!(next.contains("ws") && next.contains("mine"), "the binds in the pin stay: {next}");
        let mode = |out: &str| out.lines().find_map(|l| l.strip_prefix("mode=")).map(str::to_owned);
        let before = text(&format!("echo mode=$(stat -c '%a' {r})"));
        let changed = text(&format!("chmod 0700 {r}; echo mode=$(stat -c '%a' {r})"));
        assert_ne!(mode(&before), mode(&changed), "chmod of a pin changed nothing: {changed}");
        let after = text(&format!("echo mode=$(stat -c '%a' {r})"));
        assert_eq!(mode(&before), mode(&after), "a pin's mode reached the next run");
        // (2) The devpts multiplexer.
        let ptmx = text("chmod 0 /dev/pts/ptmx; echo mode=$(stat -c '%a' /dev/pts/ptmx)");
        assert_eq!(mode(&ptmx).as_deref(), Some("0"), "chmod 0 of ptmx: {ptmx}");
        let pty =
            text("echo mode=$(stat -c '%a' /dev/pts/ptmx); python3 -c 'import os; os.openpty(); print(\"pty-ok\")'");
        assert!(
            pty.contains("pty-ok") && mode(&pty).as_deref() != Some("0"),
            "ptmx's mode reached the next run: {pty}"
        );
        // (3) Chosen times.
        let stamp = "1234567890";
        let set_times = text(&format!(
            "touch -d @{stamp} /tmp /dev/shm {r}; touch -h -d @{stamp} /dev/fd; stat -c '%Y' /tmp /dev/shm {r}; stat -L -c '%Y' /dev/fd >/dev/null; stat -c '%Y' /dev/fd"
        ));
        assert_eq!(set_times.matches(stamp).count(), 4, "control: the times were set: {set_times}");
        let times = text(&format!("echo pid=$$; stat -c '%Y' /tmp /dev/shm {r} /dev/fd"));
        assert!(pid(&times) > 2, "control: still a kept container: {times}");
        assert!(!times.contains(stamp), "chosen times reached the next run: {times}");
        set.close().unwrap();
        assert_eq!(fs::read_to_string(ws.join("keep.txt")).unwrap(), "mine\n");
    }

    /// A workspace under the host's `/tmp`, in fresh (the CLI's) and kept containers, and each
    /// run's first and later spawns: (1) the run's cwd is on the mounts its absolute path names,
    /// so a rename from a relative to an absolute path works (the helper's pins came after the
    /// runtime entered the cwd, and such a rename failed with `EXDEV`: `git gc` in such a
    /// workspace failed; the evening red team of 4 December); (2) the rest of the private `/tmp`
    /// stays exempt from the protected names (a clone into `/tmp` of a repository with
    /// `.gitmodules` failed), while the workspace itself is not (`.envrc` refused there).
    pub fn a_workspace_under_tmp_keeps_its_cwd_and_tmp_its_exemption() {
        let t = UnderTmp::new("sbx-cwd", "a/ws");
        let ws = &t.ws;
        for reuse in [false, true] {
            let set = t.set(reuse);
            let exec = set.executor("k").unwrap();
            for i in 0..3 {
                let script = format!(
                    "python3 -c \"import os; open('t{i}', 'w').close(); os.rename('t{i}', os.getcwd() + '/r{i}'); print('rename-ok')\"; \
                     mkdir -p /tmp/clone-{i} && touch /tmp/clone-{i}/.gitmodules /tmp/.envrc && echo exempt-ok; \
                     (touch .envrc) 2>/dev/null; echo ws-envrc=$?"
                );
                let out = exec.run_command(&dl(), ws, &script).unwrap();
                let text = String::from_utf8_lossy(&out.bytes).into_owned();
                assert!(text.contains("rename-ok"), "reuse {reuse}, run {i}: {text}");
                assert!(text.contains("exempt-ok"), "reuse {reuse}, run {i}: {text}");
                assert!(!text.contains("ws-envrc=0"), "reuse {reuse}, run {i}: .envrc made in the workspace: {text}");
                assert!(ws.join(format!("r{i}")).exists());
                fs::remove_file(ws.join(format!("r{i}"))).unwrap();
            }
            set.close().unwrap();
        }
        assert!(!ws.join(".envrc").exists());
    }

    /// The evening red team of 4 December: with the workspace at `/tmp` itself (`cd /tmp &&
    /// sandbox serve`), the workspace's bind lay over the private `/tmp`, and the clean-up after
    /// the first run of a kept container emptied the host's `/tmp`. Now a container whose
    /// private `/tmp` or `/dev/shm` is not its own tmpfs is never cleaned, only given up. Run in
    /// a private mount namespace with a tmpfs of its own on `/tmp` (this host's `/tmp` is never
    /// at stake): what it held, and what each run wrote there, is all there afterwards; each
    /// run sees the files (control).
    pub fn a_workspace_at_tmp_is_never_emptied() {
        if std::env::var_os("SANDBOX_TEST_TMP_WORKSPACE").is_some() {
            // The child, in its own mount namespace: /tmp must be the fresh tmpfs.
            let table = fs::read_to_string("/proc/self/mountinfo").unwrap();
            assert!(table.lines().any(|l| l.split(' ').nth(4) == Some("/tmp") && l.contains(" - tmpfs ")), "{table}");
            assert_eq!(fs::read_to_string("/tmp/canary").unwrap(), "canary\n");
            let scratch = tempfile::Builder::new().prefix("sbx-tmpws").tempdir_in("/var/tmp").unwrap();
            let profile = Profile::new(sandbox_tests::allow_config(Path::new("/tmp"))).unwrap();
            let options = sandbox_tests::test_options(ExecutorSetOptions::new(scratch.path()).max_executors(2));
            let set = ExecutorSet::new(&dl(), &profile, options).unwrap();
            let exec = set.executor("k").unwrap();
            for i in 0..4 {
                let out =
                    exec.run_command(&dl(), Path::new("/tmp"), &format!("ls /tmp; echo run > /tmp/w-{i}")).unwrap();
                let listing = String::from_utf8_lossy(&out.bytes).into_owned();
                assert!(listing.contains("canary") && listing.contains("alice"), "run {i}: {listing}");
                for j in 0..i {
                    assert!(listing.contains(&format!("w-{j}")), "run {i} lost w-{j}: {listing}");
                }
            }
            set.close().unwrap();
            assert_eq!(fs::read_to_string("/tmp/alice/notes").unwrap(), "notes\n");
            for i in 0..4 {
                assert!(Path::new(&format!("/tmp/w-{i}")).exists(), "w-{i} is gone");
            }
            return;
        }
        if sandbox_tests::rootless_mode() {
            println!(
                "!!!! not applicable in the rootless mode (a tmpfs mounted on /tmp needs root): a workspace at /tmp !!!!"
            );
            return;
        }
        // A copy of this binary outside `/tmp` (a checkout under `/tmp` is hidden by the tmpfs).
        let copy = tempfile::Builder::new().prefix("sbx-tmpws-bin").tempdir_in("/var/tmp").unwrap();
        let exe = copy.path().join("linux_lifecycle");
        fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
        let out = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(
                "mount -t tmpfs tmpfs /tmp && echo canary > /tmp/canary && mkdir /tmp/alice && \
                 echo notes > /tmp/alice/notes && exec \"$0\" a_workspace_at_tmp_is_never_emptied",
            )
            .arg(&exe)
            .env("SANDBOX_TEST_TMP_WORKSPACE", "1")
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("1 passed, 0 failed"), "{text}");
    }

    /// Round-2 red team of issue 16 (4 December): as root, the container's uid 0 owns the host's
    /// device nodes that the runtime binds into `/dev` (and that mask `/proc` files): a workload
    /// changed the host's `/dev/full` mode and times (`chmod 0 /dev/null` would have broken it
    /// for every host process). They are read-only mounts now: `chmod`, `touch` and `chown`
    /// fail, the host's nodes keep their mode and times; reading and writing the devices works
    /// (control).
    pub fn the_hosts_device_nodes_cannot_be_changed() {
        use std::os::unix::fs::MetadataExt;
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let nodes = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];
        let before: Vec<(u32, i64)> =
            nodes.iter().map(|n| fs::metadata(n).map(|m| (m.mode(), m.mtime())).unwrap()).collect();
        for _ in 0..3 {
            let mut script = String::new();
            for n in nodes.iter().chain(&["/proc/keys", "/proc/timer_list"]) {
                script.push_str(&format!(
                    "(chmod 0600 {n}) 2>/dev/null && echo chmod-ok-{n}; (touch -m -d 2002-02-02 {n}) 2>/dev/null && \
                     echo touch-ok-{n}; (chown 1:1 {n}) 2>/dev/null && echo chown-ok-{n}; "
                ));
            }
            script.push_str(
                "echo x > /dev/null && head -c 3 /dev/zero | wc -c && (echo x > /dev/full) 2>/dev/null; echo full=$?",
            );
            let out = exec.run_command(&dl(), &f.ws, &script).unwrap();
            let text = String::from_utf8_lossy(&out.bytes).into_owned();
            assert!(!text.contains("-ok-"), "a device node was changed: {text}");
            assert!(text.contains("3\n") && text.contains("full=1"), "control: the devices work: {text}");
        }
        let after: Vec<(u32, i64)> =
            nodes.iter().map(|n| fs::metadata(n).map(|m| (m.mode(), m.mtime())).unwrap()).collect();
        assert_eq!(before, after, "the host's device nodes changed");
        set.close().unwrap();
    }

    pub fn multithreaded_embedder_never_deadlocks() {
        let f = Fixture::new();
        let set = Arc::new(ExecutorSet::new(&dl(), &f.profile(), f.set_options(8).cpu_weight(100)).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        // Eight threads that allocate and read the environment the whole time. What this test
        // checks is that forks and builds never deadlock while the embedder's other threads
        // hold its allocator's and environment's locks, not how a CPU-bound embedder shares the
        // CPU with its spawns: at the default spawn weight of 10 (issue 12, and the set's parent
        // cgroup gets it too) against an embedder whose threads never sleep, the containers'
        // builds starve (57 s here for the 200 spawns, over 240 s on a slower CI machine; 5.3 s
        // with no busy thread). So this set runs at a host process's weight, 100 (7 s here),
        // and the busy threads at nice 19, which wins the spawns the CPU where the scheduler
        // compares threads one by one (no autogroup, or the same cgroup).
        let busy: Vec<_> = (0..8)
            .map(|i| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    lowest_priority();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let v: Vec<u8> = vec![i; 4096 + usize::try_from(n % 8192).unwrap_or(0)];
                        n = n.wrapping_add(v.len() as u64);
                        let _ = std::env::var("PATH");
                        let _ = std::env::vars().count();
                    }
                    n
                })
            })
            .collect();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
        // However the test ends (a panic too), the busy threads stop: left spinning, they would
        // starve every later test of this binary. Declared after the runtime, so that on a panic
        // it is dropped first and the runtime's drop (which waits for the blocking tasks) runs
        // without them.
        struct StopOnDrop(Arc<AtomicBool>);
        impl Drop for StopOnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop_on_drop = StopOnDrop(Arc::clone(&stop));
        let ws = f.ws.clone();
        let start = Instant::now();
        let done = runtime.block_on(async move {
            let mut tasks = Vec::new();
            for t in 0..4 {
                let set = Arc::clone(&set);
                let ws = ws.clone();
                tasks.push(tokio::task::spawn_blocking(move || {
                    let exec = set.executor(&format!("k{t}")).unwrap();
                    for i in 0..50 {
                        let out = exec.run_command(&dl(), &ws, &format!("echo {t}-{i}")).unwrap();
                        assert_eq!(out.bytes, format!("{t}-{i}\n").into_bytes());
                    }
                    50
                }));
            }
            let mut total = 0;
            for task in tasks {
                total +=
                    tokio::time::timeout(Duration::from_secs(240), task).await.expect("deadlock: timed out").unwrap();
            }
            total
        });
        stop.store(true, Ordering::Relaxed);
        for b in busy {
            b.join().unwrap();
        }
        println!("{done} spawns from a multithreaded embedder in {:?}", start.elapsed());
        assert_eq!(done, 200);
    }

    /// Puts the calling thread at nice 19 (Linux keeps a nice value per thread).
    #[allow(unsafe_code, reason = "setpriority for the calling thread")]
    fn lowest_priority() {
        let me = nix::unistd::gettid().as_raw().cast_unsigned();
        // SAFETY: setpriority reads only its integer arguments; `me` names this thread.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, me, 19) };
        assert_eq!(rc, 0, "setpriority: {}", std::io::Error::last_os_error());
    }

    pub fn killing_the_helper_mid_run_leaves_no_process_and_sweeps_leftovers() {
        let f = Fixture::new();
        let set = Arc::new(f.set());
        let exec = set.executor("k").unwrap();
        // The probe's worker removes its container after answering: wait for that first.
        wait_until("the probe's teardown", Duration::from_secs(10), || {
            let c = counts(&set);
            c.state == 0 && c.bundles == 0
        });
        let before = counts(&set);
        let runner = {
            let exec = Arc::clone(&exec);
            let ws = f.ws.clone();
            std::thread::spawn(move || exec.run_command(&dl(), &ws, "sleep 401"))
        };
        wait_until("the workload", Duration::from_secs(10), || !processes_matching("sleep 401").is_empty());
        let helper = sandbox_tests::helper_of("sleep 401").expect("the run's helper (sbx-worker)");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(helper), nix::sys::signal::Signal::SIGKILL).unwrap();
        let result = runner.join().unwrap();
        assert!(matches!(result, Err(Error::Runtime { .. })), "{result:?}");
        wait_until("no workload left", Duration::from_secs(5), || processes_matching("sleep 401").is_empty());
        assert_eq!(counts(&set), before, "leftovers were not swept");
        // The executor still works afterwards.
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo again").unwrap().bytes, b"again\n");
        set.close().unwrap();
    }

    /// The zygote (the set's warm helper) killed mid-run: the running spawn's worker is not its
    /// zygote's child in any way that matters, so the run completes normally; the next spawn
    /// starts a fresh zygote.
    pub fn killing_the_zygote_mid_run_loses_nothing() {
        let f = Fixture::new();
        let set = Arc::new(f.set());
        let exec = set.executor("k").unwrap();
        let runner = {
            let exec = Arc::clone(&exec);
            let ws = f.ws.clone();
            std::thread::spawn(move || exec.run_command(&dl(), &ws, "sleep 1.403; echo done"))
        };
        wait_until("the workload", Duration::from_secs(10), || !processes_matching("sleep 1.403").is_empty());
        let me = i32::try_from(std::process::id()).unwrap();
        let (zygotes, _) = sandbox_tests::helpers_of(me);
        assert_eq!(zygotes.len(), 1, "one zygote per set: {zygotes:?}");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(zygotes[0]), nix::sys::signal::Signal::SIGKILL).unwrap();
        let out = runner.join().unwrap().unwrap();
        assert_eq!((out.bytes.as_slice(), out.status), (&b"done\n"[..], ExitStatus::Code(0)));
        for i in 0..3 {
            assert_eq!(
                exec.run_command(&dl(), &f.ws, &format!("echo {i}")).unwrap().bytes,
                format!("{i}\n").into_bytes()
            );
        }
        // The containers alive now, the dead zygote's kept one among them: its orphaned helper
        // removes it while the set removes its directory, state included. It must still remove
        // the container's cgroups (libcontainer's delete, which found them through that state,
        // left them behind).
        let ids = live_containers(&set);
        drop(exec);
        if let Ok(set) = Arc::try_unwrap(set) {
            set.close().unwrap();
        }
        wait_until("no helper left", Duration::from_secs(10), || {
            processes_matching("sleep 1.403").is_empty() && sandbox_tests::helpers_of(me).0.is_empty()
        });
        no_cgroups_left(&ids);
    }

    /// A cgroup planted inside a container's cgroup (only its owner, root or the parent's
    /// owner, can make one) cannot be removed by waiting: the teardown gives up within its
    /// bounds instead of waiting per hierarchy (a red-team finding: 26 s with one planted in
    /// each of eight hierarchies), keeps the container's state, and `close` keeps the set
    /// directory and says so; once the planted cgroup is gone, the next set on the scratch root
    /// sweeps the container's cgroups and the directory.
    pub fn a_cgroup_planted_in_a_containers_cgroup_keeps_the_set_for_a_later_sweep() {
        let f = Fixture::new();
        let set = Arc::new(f.set());
        let exec = set.executor("k").unwrap();
        let runner = {
            let (exec, ws) = (Arc::clone(&exec), f.ws.clone());
            std::thread::spawn(move || exec.run_command(&dl(), &ws, "sleep 1.517; echo done"))
        };
        wait_until("the workload", Duration::from_secs(10), || !processes_matching("sleep 1.517").is_empty());
        let ids = live_containers(&set);
        let dirs: Vec<PathBuf> = ids.iter().flat_map(|id| cgroup_dirs_of(id)).collect();
        if dirs.is_empty() {
            println!("SKIPPED (loud): this run has no cgroups of its own (no cgroup parent), nothing to plant in");
            drop(exec);
            let _ = runner.join();
            return;
        }
        let planted: Vec<PathBuf> = dirs.iter().map(|d| d.join("planted")).collect();
        for p in &planted {
            fs::create_dir(p).unwrap();
        }
        let out = runner.join().unwrap().unwrap();
        assert_eq!(out.bytes, b"done\n");
        drop(exec);
        let set = Arc::try_unwrap(set).unwrap_or_else(|_| panic!("the set is still shared"));
        let dir = set.dir().to_path_buf();
        let start = Instant::now();
        let closed = set.close();
        let took = start.elapsed();
        println!("close with {} planted cgroups took {took:?}: {closed:?}", planted.len());
        assert!(took < Duration::from_secs(10), "close took {took:?}");
        let err = closed.unwrap_err();
        assert!(err.to_string().contains("kept for a later sweep"), "{err}");
        drop(set);
        assert!(ids.iter().any(|id| dir.join("state").join(id).is_dir()), "the state naming the container is gone");
        for p in &planted {
            fs::remove_dir(p).unwrap();
        }
        // Old enough to be taken for dead by the next set on this scratch root.
        let old = std::time::SystemTime::now() - Duration::from_secs(600);
        fs::File::open(&dir).unwrap().set_modified(old).unwrap();
        let next = f.set();
        assert!(!dir.exists(), "the kept set directory was not swept");
        no_cgroups_left(&ids);
        next.close().unwrap();
    }

    /// The containers of `set` alive now (its state directory's entries); at least one.
    fn live_containers(set: &ExecutorSet) -> Vec<String> {
        let ids: Vec<String> = std::fs::read_dir(set.dir().join("state"))
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        assert!(!ids.is_empty(), "no container alive");
        ids
    }

    /// Waits (10 s at most) until no cgroup directory of the containers `ids` is left.
    fn no_cgroups_left(ids: &[String]) {
        wait_until("no cgroup of the set's containers left", Duration::from_secs(10), || {
            ids.iter().all(|id| cgroup_dirs_of(id).is_empty())
        });
    }

    /// The cgroup directories of container `id` that exist under this run's cgroup parent (the
    /// tests' own, else `/sandbox` as root; none without one), in every v1 hierarchy or the v2
    /// tree.
    fn cgroup_dirs_of(id: &str) -> Vec<PathBuf> {
        let parent = sandbox_tests::cgroup_parent()
            .or_else(|| nix::unistd::getuid().is_root().then(|| String::from("/sandbox")));
        let Some(parent) = parent else { return Vec::new() };
        let rel = format!("{}/{id}", parent.trim_matches('/'));
        let root = Path::new("/sys/fs/cgroup");
        let mut roots = vec![root.to_path_buf()];
        roots.extend(
            std::fs::read_dir(root).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| !p.is_symlink()),
        );
        roots.into_iter().map(|r| r.join(&rel)).filter(|d| d.is_dir()).collect()
    }

    /// A zygote that stops answering (SIGSTOP) never hangs a spawn: the spawn's deadline (or a
    /// 10 s answer limit) ends the wait, the zygote is replaced, and the next spawn works.
    pub fn a_stopped_zygote_never_hangs_a_spawn_and_is_replaced() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        let me = i32::try_from(std::process::id()).unwrap();
        let zygote = *sandbox_tests::helpers_of(me).0.first().expect("this set's zygote");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(zygote), nix::sys::signal::Signal::SIGSTOP).unwrap();
        let start = Instant::now();
        let err = exec.run_command(&sandbox::Deadline::after(Duration::from_secs(1)), &f.ws, "echo never").unwrap_err();
        assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
        assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
        // The failed spawn killed and reaped the stopped zygote before it returned.
        assert!(!Path::new(&format!("/proc/{zygote}")).exists(), "the stopped zygote is still there");
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo again").unwrap().bytes, b"again\n");
        set.close().unwrap();
    }

    /// A warm container's helper killed while it waits for a process: the next run notices,
    /// tears the dead one down and starts fresh; nothing of the dead one is left.
    pub fn a_killed_idle_warm_container_is_replaced() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        for _ in 0..2 {
            exec.run_command(&dl(), &f.ws, "true").unwrap();
        }
        let me = i32::try_from(std::process::id()).unwrap();
        // A worker that just finished a run may still be exiting when the list is taken (ESRCH
        // on the kill, seen in CI): wait for a warm container that waits, and count only the
        // kills that found their process.
        let mut killed = 0;
        wait_until("a warm container's helper to kill", Duration::from_secs(10), || {
            if !sandbox_tests::warm_container_waiting() {
                return false;
            }
            for pid in sandbox_tests::helpers_of(me).1 {
                match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL) {
                    Ok(()) => killed += 1,
                    Err(nix::errno::Errno::ESRCH) => {}
                    Err(e) => panic!("kill {pid}: {e}"),
                }
            }
            killed > 0
        });
        for i in 0..3 {
            let out = exec.run_command(&dl(), &f.ws, &format!("echo {i}")).unwrap();
            assert_eq!(out.bytes, format!("{i}\n").into_bytes());
        }
        set.close().unwrap();
        assert!(!set.dir().exists());
    }

    /// A helper killed while libcontainer builds its container: the runtime's intermediate
    /// process (which has no parent-death signal and would block forever on its channel) goes
    /// with it, and the executor keeps working.
    pub fn a_helper_killed_mid_build_leaves_no_intermediate_process() {
        let f = Fixture::new();
        // Every run has a container built for it (none is kept).
        let set = Arc::new(ExecutorSet::new(&dl(), &f.profile(), f.set_options(8).reuse_containers(false)).unwrap());
        let exec = set.executor("k").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let runner = {
            let (exec, ws, stop) = (Arc::clone(&exec), f.ws.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut runs = 0;
                while !stop.load(Ordering::SeqCst) && runs < 4000 {
                    let _ = exec.run_command(&dl(), &ws, "true");
                    runs += 1;
                }
            })
        };
        let me = i32::try_from(std::process::id()).unwrap();
        // Caught where it would hang: blocked on its channel (a datagram socket, which never
        // reports the peer's end) waiting for its worker.
        let blocked = |pid: i32| {
            fs::read_to_string(format!("/proc/{pid}/wchan"))
                .is_ok_and(|w| w.contains("wait_for_more_packets") || w.contains("dgram_recvmsg"))
        };
        let end = Instant::now() + Duration::from_secs(45);
        let mut caught = None;
        let mut tries = 0;
        while caught.is_none() && Instant::now() < end {
            let (_, workers) = sandbox_tests::helpers_of(me);
            let Some((inter, worker)) = fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
                let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                let (worker, name) = sandbox_tests::parent_and_name(pid)?;
                (name.starts_with("youki:[1:INTER]") && workers.contains(&worker)).then_some((pid, worker))
            }) else {
                continue;
            };
            // The window in which the intermediate process waits for its worker (the user
            // namespace's maps) is well under a millisecond; stopping the worker as soon as
            // an intermediate process shows holds it open. Stopped before its answer, the
            // worker leaves the intermediate process blocked; stopped after, the intermediate
            // process ends on its own and the worker goes on.
            tries += 1;
            let worker_pid = nix::unistd::Pid::from_raw(worker);
            if nix::sys::signal::kill(worker_pid, nix::sys::signal::Signal::SIGSTOP).is_err() {
                continue;
            }
            let until = Instant::now() + Duration::from_millis(300);
            while Instant::now() < until && Path::new(&format!("/proc/{inter}")).exists() && !blocked(inter) {
                std::thread::sleep(Duration::from_millis(1));
            }
            let still_ours = sandbox_tests::parent_and_name(inter)
                .is_some_and(|(p, name)| p == worker && name.starts_with("youki:[1:INTER]"));
            if still_ours && blocked(inter) {
                caught = Some((inter, worker));
            } else {
                let _ = nix::sys::signal::kill(worker_pid, nix::sys::signal::Signal::SIGCONT);
            }
        }
        println!("stopped a worker {tries} time(s) before its intermediate process was caught blocked");
        let (inter, worker) = caught.expect("an intermediate process of ours within 45 s");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(worker), nix::sys::signal::Signal::SIGKILL).unwrap();
        wait_until("the intermediate process to go", Duration::from_secs(5), || {
            !Path::new(&format!("/proc/{inter}")).exists()
                || sandbox_tests::parent_and_name(inter).is_none_or(|(_, name)| !name.starts_with("youki:[1:INTER]"))
        });
        stop.store(true, Ordering::SeqCst);
        runner.join().unwrap();
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo after").unwrap().bytes, b"after\n");
        drop(exec);
        if let Ok(set) = Arc::try_unwrap(set) {
            set.close().unwrap();
        }
    }

    pub fn killing_the_embedder_mid_run_leaves_no_process_and_the_next_set_sweeps() {
        let f = Fixture::new();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("SANDBOX_TEST_ROLE", "embedder")
            .env("SANDBOX_TEST_WS", &f.ws)
            .env("SANDBOX_TEST_SCRATCH", &f.scratch)
            .spawn()
            .unwrap();
        wait_until("the embedder's workload", Duration::from_secs(20), || !processes_matching("sleep 402").is_empty());
        // The embedder's helpers: its zygote and the zygote's workers (other suites may run
        // helpers of their own on this host at the same time).
        let (mut helpers, workers) = sandbox_tests::helpers_of(i32::try_from(child.id()).unwrap());
        helpers.extend(workers);
        assert!(helpers.len() >= 2, "the embedder's zygote and worker: {helpers:?}");
        child.kill().unwrap();
        child.wait().unwrap();
        wait_until("no workload left", Duration::from_secs(5), || processes_matching("sleep 402").is_empty());
        wait_until("no helper left", Duration::from_secs(5), || {
            helpers.iter().all(|p| !Path::new(&format!("/proc/{p}")).exists())
        });
        assert_eq!(count_dir(&f.scratch), 1, "the dead embedder's set directory is still there");
        // A sweep skips sets younger than 10 s (one being created holds no lock yet): age it.
        let dead = fs::read_dir(&f.scratch).unwrap().next().unwrap().unwrap().path();
        let old = std::time::SystemTime::now() - Duration::from_secs(30);
        fs::File::open(&dead).unwrap().set_modified(old).unwrap();
        let set = f.set();
        assert_eq!(count_dir(&f.scratch), 1, "the new set swept the dead one");
        let out = set.executor("k").unwrap().run_command(&dl(), &f.ws, "echo swept").unwrap();
        assert_eq!(out.status, ExitStatus::Code(0));
        set.close().unwrap();
        assert_eq!(count_dir(&f.scratch), 0);
    }

    pub fn a_set_directory_removed_under_us_gives_errors_not_panics() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo ok").unwrap().bytes, b"ok\n");
        let ids = live_containers(&set);
        fs::remove_dir_all(set.dir()).unwrap();
        let err = exec.run_command(&dl(), &f.ws, "echo never").unwrap_err();
        assert!(matches!(err, Error::Io { .. } | Error::Runtime { .. }), "{err:?}");
        assert!(
            exec.prepare_process(
                &dl(),
                sandbox::ProcessOptions {
                    cwd: f.ws.clone(),
                    command: String::from("true"),
                    execution_id: String::from("e"),
                    ..sandbox::ProcessOptions::default()
                }
            )
            .and_then(|p| p.start(&dl()))
            .is_err()
        );
        // Close still finishes (nothing left to remove), and the kept container's helper
        // removed its cgroups all the same: they are not found through the state that is gone
        // (libcontainer's delete, which looked there, left them behind for good).
        set.close().unwrap();
        no_cgroups_left(&ids);
    }

    /// The whole scratch root removed under a live set: a spawn fails with an error naming what
    /// is missing, nothing panics, close finishes, and a set made once the root exists again
    /// works.
    pub fn the_scratch_root_removed_under_us_gives_errors_not_panics() {
        let f = Fixture::new();
        let set = f.set();
        let exec = set.executor("k").unwrap();
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo ok").unwrap().bytes, b"ok\n");
        let ids = live_containers(&set);
        fs::remove_dir_all(&f.scratch).unwrap();
        let err = exec.run_command(&dl(), &f.ws, "echo never").unwrap_err();
        assert!(matches!(err, Error::Io { .. } | Error::Runtime { .. }), "{err:?}");
        println!("a spawn with the scratch root gone: {err}");
        set.close().unwrap();
        no_cgroups_left(&ids);
        drop(exec);
        drop(set);
        fs::create_dir(&f.scratch).unwrap();
        let set = f.set();
        assert_eq!(set.executor("k").unwrap().run_command(&dl(), &f.ws, "echo back").unwrap().bytes, b"back\n");
        set.close().unwrap();
        assert_eq!(count_dir(&f.scratch), 0);
    }

    /// Plants, in `scratch`, dead-looking set directories a workload could have made where a
    /// scratch root is later used (issue 12, class 6), all naming `victim` (a host process) as
    /// a kill target in every way the v1 sweep trusted: a `cgroup-parent` that climbs out of
    /// the cgroup tree to a fake `cgroup.procs` naming the victim, FIFOs as
    /// the lock, the parent file, the state directory and the fake `cgroup.procs`, a set
    /// directory that is a symlink, and a `state` that is a symlink to a host directory. Returns
    /// the host paths that must survive.
    pub fn plant_fake_dead_sets(root: &Path, scratch: &Path, victim: u32) -> Vec<PathBuf> {
        let fake = root.join("fake-cgroup");
        let id = "sbx-0000dead-1";
        fs::create_dir_all(fake.join(id)).unwrap();
        // Only the sacrificial process: `-1`, `0` and `1` are refused by a unit test of the pid
        // parser (`sandbox-linux` `tests::kill_targets_are_never_one_or_less`), never planted
        // here, where a regression would signal every process of the host.
        fs::write(fake.join(id).join("cgroup.procs"), format!("{victim}\n")).unwrap();
        let climb = format!("/../../../../../..{}", fake.display());
        let make = |name: &str| {
            let dir = scratch.join(format!("sandbox-executors-{name}"));
            fs::create_dir_all(dir.join("state").join(id)).unwrap();
            dir
        };
        // The traversal, with a free lock file.
        let d = make("0000000000000001");
        fs::write(d.join("cgroup-parent"), &climb).unwrap();
        fs::write(d.join("lock"), "").unwrap();
        // The same with an id that is not ours, and an absolute parent.
        let d = make("0000000000000002");
        fs::write(d.join("cgroup-parent"), fake.display().to_string()).unwrap();
        fs::create_dir(d.join("state").join("victim")).unwrap();
        // FIFOs everywhere a file is read.
        let d = scratch.join("sandbox-executors-0000000000000003");
        fs::create_dir(&d).unwrap();
        for name in ["lock", "cgroup-parent", "state"] {
            nix::unistd::mkfifo(&d.join(name), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        }
        let fifo_cg = root.join("fifo-cgroup").join(id);
        fs::create_dir_all(&fifo_cg).unwrap();
        nix::unistd::mkfifo(&fifo_cg.join("cgroup.procs"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let d = make("0000000000000004");
        fs::write(d.join("cgroup-parent"), format!("/../../../../../..{}", root.join("fifo-cgroup").display()))
            .unwrap();
        // A set directory that is a symlink to a host directory, and a state that is one.
        let host_dir = root.join("host-dir");
        fs::create_dir_all(host_dir.join("state").join(id)).unwrap();
        fs::write(host_dir.join("keep"), "keep").unwrap();
        std::os::unix::fs::symlink(&host_dir, scratch.join("sandbox-executors-0000000000000005")).unwrap();
        let d = scratch.join("sandbox-executors-0000000000000006");
        fs::create_dir(&d).unwrap();
        std::os::unix::fs::symlink(host_dir.join("state"), d.join("state")).unwrap();
        fs::write(d.join("cgroup-parent"), &climb).unwrap();
        // Every planted directory looks old enough to be dead.
        let old = std::time::SystemTime::now() - Duration::from_secs(600);
        for e in fs::read_dir(scratch).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                fs::File::open(e.path()).unwrap().set_modified(old).unwrap();
            }
        }
        vec![fake.join(id).join("cgroup.procs"), host_dir.join("keep"), host_dir.join("state").join(id)]
    }

    /// The cgroup directory, in the pids hierarchy (v1) or the unified one (v2), of a container
    /// `id` under the tests' cgroup parent.
    fn container_cgroup(id: &str) -> PathBuf {
        let parent = sandbox_tests::cgroup_parent().unwrap_or_else(|| String::from("/sandbox"));
        let root = if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            PathBuf::from("/sys/fs/cgroup")
        } else {
            PathBuf::from("/sys/fs/cgroup/pids")
        };
        root.join(parent.trim_start_matches('/')).join(id)
    }

    fn alive(pid: u32) -> bool {
        fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
    }

    /// Issue 12, class 6: the next `ExecutorSet::new` on a scratch root holding planted dead
    /// sets kills nothing outside this library's own verified cgroups, never hangs on a FIFO,
    /// follows no symlink, and still sweeps a genuine leftover: a container cgroup of this uid
    /// under the configured parent, holding a process, recorded by a dead set (the positive
    /// control: that process is killed and the cgroup removed).
    pub fn planted_dead_sets_kill_nothing_and_never_hang() {
        if sandbox_tests::needs_a_cgroup("the positive control is a leftover container cgroup") {
            return;
        }
        let f = Fixture::new();
        // The parent cgroup exists once a set has run under it.
        let set = f.set();
        assert_eq!(set.executor("k").unwrap().run_command(&dl(), &f.ws, "true").unwrap().status, ExitStatus::Code(0));
        set.close().unwrap();
        let mut victim = Command::new("sleep").arg("1000.111").spawn().unwrap();
        let survivors = plant_fake_dead_sets(&f.root, &f.scratch, victim.id());
        // The genuine leftover: a cgroup of ours with a process in it, named by a dead set.
        let mut leftover = Command::new("sleep").arg("1000.222").spawn().unwrap();
        let id = "sbx-0000beef-7";
        let cg = container_cgroup(id);
        fs::create_dir(&cg).unwrap();
        fs::write(cg.join("cgroup.procs"), leftover.id().to_string()).unwrap();
        let genuine = f.scratch.join("sandbox-executors-00000000000000ff");
        fs::create_dir_all(genuine.join("state").join(id)).unwrap();
        fs::File::create(genuine.join("lock")).unwrap();
        fs::File::open(&genuine)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(600))
            .unwrap();

        // A container-named cgroup under our parent that this uid did not create (root only:
        // chown needs it), holding a host process and named by a dead set: left alone.
        let mut foreign_victim = Command::new("sleep").arg("1000.999").spawn().unwrap();
        let foreign = container_cgroup("sbx-0000f00d-3");
        if sandbox_tests::rootless_mode() {
            println!("ROOTLESS: the cgroup-of-another-uid variant needs chown (root); the root run checks it");
        } else {
            fs::create_dir(&foreign).unwrap();
            fs::write(foreign.join("cgroup.procs"), foreign_victim.id().to_string()).unwrap();
            nix::unistd::chown(&foreign, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            let d = f.scratch.join("sandbox-executors-00000000000000fe");
            fs::create_dir_all(d.join("state").join("sbx-0000f00d-3")).unwrap();
            fs::File::open(&d).unwrap().set_modified(std::time::SystemTime::now() - Duration::from_secs(600)).unwrap();
        }
        let start = Instant::now();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let (profile, options) = (f.profile(), f.set_options(8));
        std::thread::spawn(move || {
            let made = ExecutorSet::new(&dl(), &profile, options);
            let _ = done_tx.send(made.map(|s| s.close()));
        });
        let made = done_rx.recv_timeout(Duration::from_secs(60)).expect("ExecutorSet::new hung on the planted sets");
        made.unwrap().unwrap();
        println!("the sweep took {:?}", start.elapsed());
        assert!(alive(victim.id()), "the sweep killed a host process named by a planted file");
        for path in &survivors {
            assert!(fs::symlink_metadata(path).is_ok(), "the sweep removed {} through a planted path", path.display());
        }
        assert!(
            fs::symlink_metadata(f.scratch.join("sandbox-executors-0000000000000005")).is_ok_and(|m| m.is_symlink())
        );
        // Control: the genuine leftover's process was killed and its cgroup removed.
        let status = leftover.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9), "{status:?}");
        assert!(!cg.exists(), "the leftover cgroup is still there");
        assert!(!genuine.exists());
        // The planted directories that are real directories are gone too (they looked dead).
        for n in 1..=4 {
            assert!(!f.scratch.join(format!("sandbox-executors-000000000000000{n}")).exists(), "plant {n} left");
        }
        victim.kill().unwrap();
        victim.wait().unwrap();
        assert!(alive(foreign_victim.id()), "the sweep killed in a cgroup this uid did not create");
        foreign_victim.kill().unwrap();
        foreign_victim.wait().unwrap();
        if !sandbox_tests::rootless_mode() {
            wait_until("the foreign cgroup empties", Duration::from_secs(5), || {
                fs::read_to_string(foreign.join("cgroup.procs")).is_ok_and(|p| p.trim().is_empty())
            });
            fs::remove_dir(&foreign).unwrap();
        }
    }

    /// Issue 12, class 6: a scratch root inside an area the profile lets a workload write (the
    /// workspace, a writable additional root) is refused with `InvalidOptions` naming
    /// `scratch_root`, and nothing is created there. Control: the same directory under a
    /// read-only workspace, and a sibling of the workspace, are accepted.
    pub fn a_scratch_root_the_workload_could_write_is_refused() {
        let f = Fixture::new();
        let inner = f.ws.join("scratch-inside");
        fs::create_dir(&inner).unwrap();
        let extra = f.root.join("extra");
        fs::create_dir_all(extra.join("scratch")).unwrap();
        let writable_root = sandbox::ProfileConfig {
            additional_roots: vec![sandbox::RootAccess {
                path: extra.clone(),
                read: sandbox::Access::Allow,
                write: sandbox::Access::Allow,
            }],
            ..f.allow_config()
        };
        // A scratch root inside the real HOME of a RealHome profile.
        let home = fs::canonicalize(std::env::var_os("HOME").unwrap()).unwrap();
        let in_home = tempfile::Builder::new().prefix("sbx-life-scratch").tempdir_in(&home).unwrap();
        let real_home = sandbox::ProfileConfig { home: sandbox::Home::RealHome, ..f.allow_config() };
        for (config, scratch) in [
            (f.allow_config(), inner.clone()),
            (writable_root, extra.join("scratch")),
            (real_home, in_home.path().to_path_buf()),
        ] {
            let profile = Profile::new(config).unwrap();
            let options = sandbox_tests::test_options(ExecutorSetOptions::new(&scratch).max_executors(2));
            match ExecutorSet::new(&dl(), &profile, options) {
                Err(Error::InvalidOptions { detail }) => {
                    assert!(detail.starts_with("scratch_root:"), "{detail}");
                }
                other => panic!("{}: {other:?}", scratch.display()),
            }
            assert_eq!(count_dir(&scratch), 0, "something was created in a refused scratch root");
        }
        let read_only = sandbox::ProfileConfig { workspace_write: sandbox::Access::Deny, ..f.allow_config() };
        let options = sandbox_tests::test_options(ExecutorSetOptions::new(&inner).max_executors(2));
        let set = ExecutorSet::new(&dl(), &Profile::new(read_only).unwrap(), options).unwrap();
        set.close().unwrap();
        let set = f.set();
        set.close().unwrap();
    }

    /// The `embedder` role: a process that runs a long command and gets SIGKILLed.
    /// The kept probe records of this user (issue 16): `(path, key, measured)`.
    fn probe_records() -> Vec<(PathBuf, String, serde_json::Value)> {
        let dir = PathBuf::from(format!("/tmp/sandbox-registry-{}/.probe-cache", nix::unistd::geteuid()));
        fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let record: serde_json::Value = serde_json::from_slice(&fs::read(e.path()).ok()?).ok()?;
                let key = record["key"].as_str()?.to_owned();
                let measured = serde_json::from_str(record["measured"].as_str()?).ok()?;
                Some((e.path(), key, measured))
            })
            .collect()
    }

    /// The record kept for sets of `profile` (its key names the profile's fingerprint).
    fn record_of(profile: &Profile) -> Option<(PathBuf, serde_json::Value)> {
        let needle = format!("|profile {}|", profile.fingerprint());
        probe_records().into_iter().find(|(_, key, _)| key.contains(&needle)).map(|(p, _, m)| (p, m))
    }

    /// Replaces the record at `path` (a new file renamed over it) with `measured` changed by `f`.
    fn tamper(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
        use std::os::unix::fs::PermissionsExt;
        let mut record: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
        let mut measured: serde_json::Value = serde_json::from_str(record["measured"].as_str().unwrap()).unwrap();
        f(&mut measured);
        record["measured"] = serde_json::Value::String(measured.to_string());
        let tmp = path.with_extension("tampered");
        fs::write(&tmp, record.to_string()).unwrap();
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600)).unwrap();
        fs::rename(&tmp, path).unwrap();
    }

    fn ino(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        fs::symlink_metadata(path).unwrap().ino()
    }

    /// A set takes the probe kept by an earlier set of the same conditions instead of running
    /// a probe container (issue 16), with the same level and report; a record that claims less
    /// than everything, a symlink or a file others may read is not taken (the set probes and
    /// keeps a fresh record); a spawn whose set-up fails drops the record it was opened with.
    pub fn a_kept_probe_is_taken_only_while_it_claims_everything() {
        let f = Fixture::new();
        let profile = f.profile();
        let first = f.set();
        let exec = first.executor("k").unwrap();
        let (level, report) = (exec.level(), exec.report().entries.clone());
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo first").unwrap().bytes, b"first\n");
        let (path, measured) = record_of(&profile).expect("the first set keeps its probe");
        assert_eq!(measured["landlock"], "full", "{measured}");
        assert_eq!(measured["seccomp"], 2, "{measured}");
        drop(exec);
        first.close().unwrap();

        // Taken: the record is not rewritten, and the set claims what the first one measured.
        let before = ino(&path);
        let second = f.set();
        assert_eq!(ino(&path), before, "the second set probed instead of taking the record");
        let exec = second.executor("k").unwrap();
        assert_eq!((exec.level(), exec.report().entries.clone()), (level, report.clone()));
        assert_eq!(exec.run_command(&dl(), &f.ws, "echo second").unwrap().bytes, b"second\n");
        drop(exec);
        second.close().unwrap();

        // Claiming less is not taken (a kept record may only claim what spawns then require):
        // the set probes, reports what it measured, and keeps a fresh record.
        for (field, value) in [("landlock", serde_json::json!("partial")), ("seccomp", serde_json::json!(0))] {
            tamper(&path, |m| m[field] = value.clone());
            let set = f.set();
            let exec = set.executor("k").unwrap();
            assert_eq!(exec.level(), level, "a record with {field} {value} lowered the level");
            let (_, kept) = record_of(&profile).expect("a fresh record");
            assert_eq!((&kept["landlock"], &kept["seccomp"]), (&measured["landlock"], &measured["seccomp"]));
            drop(exec);
            set.close().unwrap();
        }
        // A symlink, or a record others may read, is not read at all.
        {
            use std::os::unix::fs::PermissionsExt;
            let elsewhere = f.root.join("planted-record");
            fs::copy(&path, &elsewhere).unwrap();
            fs::remove_file(&path).unwrap();
            std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
            f.set().close().unwrap();
            assert!(fs::symlink_metadata(&path).unwrap().is_file(), "the symlinked record was kept");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
            let before = ino(&path);
            f.set().close().unwrap();
            assert_ne!(ino(&path), before, "a record others may read was taken");
            assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }

        // A spawn whose set-up fails drops the record its set took; the next set probes.
        let set = f.set();
        let exec = set.executor("k").unwrap();
        fs::remove_dir_all(exec.temp_dir()).unwrap();
        let err = exec.run_command(&dl(), &f.ws, "echo never").unwrap_err();
        assert!(matches!(err, Error::Runtime { .. }), "{err:?}");
        assert!(record_of(&profile).is_none(), "the record survived a failed set-up");
        drop(exec);
        let _ = set.close();
        f.set().close().unwrap();
        assert!(record_of(&profile).is_some(), "the next set kept a fresh record");
    }

    pub fn embedder_role() {
        let ws = PathBuf::from(std::env::var_os("SANDBOX_TEST_WS").unwrap());
        let scratch = PathBuf::from(std::env::var_os("SANDBOX_TEST_SCRATCH").unwrap());
        let options = sandbox_tests::test_options(ExecutorSetOptions::new(&scratch).max_executors(8));
        let set = ExecutorSet::new(&dl(), &Profile::new(sandbox_tests::allow_config(&ws)).unwrap(), options).unwrap();
        let _ = set.executor("k").unwrap().run_command(&dl(), &ws, "sleep 402");
        #[expect(clippy::exit, reason = "the embedder role must never return into the test runner")]
        std::process::exit(3);
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if std::env::var_os("SANDBOX_TEST_ROLE").is_some_and(|r| r == "embedder") {
            linux::embedder_role();
        }
        if !sandbox_tests::privileged("linux_lifecycle") {
            return std::process::ExitCode::SUCCESS;
        }
        use linux::*;
        sandbox_tests::run_tests(&[
            ("two_hundred_sequential_spawns_leave_nothing_behind", two_hundred_sequential_spawns_leave_nothing_behind),
            ("multithreaded_embedder_never_deadlocks", multithreaded_embedder_never_deadlocks),
            ("runs_in_a_kept_container_share_nothing", runs_in_a_kept_container_share_nothing),
            (
                "a_set_that_reuses_no_containers_runs_each_spawn_fresh",
                a_set_that_reuses_no_containers_runs_each_spawn_fresh,
            ),
            (
                "emptying_a_kept_containers_tmp_leaves_binds_under_it_alone",
                emptying_a_kept_containers_tmp_leaves_binds_under_it_alone,
            ),
            (
                "the_directories_above_binds_and_the_private_dirs_themselves_are_not_handed_on",
                the_directories_above_binds_and_the_private_dirs_themselves_are_not_handed_on,
            ),
            ("the_hosts_device_nodes_cannot_be_changed", the_hosts_device_nodes_cannot_be_changed),
            ("nothing_is_handed_on_through_pins_ptmx_or_times", nothing_is_handed_on_through_pins_ptmx_or_times),
            ("a_workspace_at_tmp_is_never_emptied", a_workspace_at_tmp_is_never_emptied),
            (
                "a_workspace_under_tmp_keeps_its_cwd_and_tmp_its_exemption",
                a_workspace_under_tmp_keeps_its_cwd_and_tmp_its_exemption,
            ),
            (
                "killing_the_helper_mid_run_leaves_no_process_and_sweeps_leftovers",
                killing_the_helper_mid_run_leaves_no_process_and_sweeps_leftovers,
            ),
            ("killing_the_zygote_mid_run_loses_nothing", killing_the_zygote_mid_run_loses_nothing),
            ("a_killed_idle_warm_container_is_replaced", a_killed_idle_warm_container_is_replaced),
            (
                "a_stopped_zygote_never_hangs_a_spawn_and_is_replaced",
                a_stopped_zygote_never_hangs_a_spawn_and_is_replaced,
            ),
            (
                "a_helper_killed_mid_build_leaves_no_intermediate_process",
                a_helper_killed_mid_build_leaves_no_intermediate_process,
            ),
            (
                "killing_the_embedder_mid_run_leaves_no_process_and_the_next_set_sweeps",
                killing_the_embedder_mid_run_leaves_no_process_and_the_next_set_sweeps,
            ),
            (
                "a_set_directory_removed_under_us_gives_errors_not_panics",
                a_set_directory_removed_under_us_gives_errors_not_panics,
            ),
            (
                "the_scratch_root_removed_under_us_gives_errors_not_panics",
                the_scratch_root_removed_under_us_gives_errors_not_panics,
            ),
            ("planted_dead_sets_kill_nothing_and_never_hang", planted_dead_sets_kill_nothing_and_never_hang),
            ("a_scratch_root_the_workload_could_write_is_refused", a_scratch_root_the_workload_could_write_is_refused),
            (
                "a_kept_probe_is_taken_only_while_it_claims_everything",
                a_kept_probe_is_taken_only_while_it_claims_everything,
            ),
            (
                "a_cgroup_planted_in_a_containers_cgroup_keeps_the_set_for_a_later_sweep",
                a_cgroup_planted_in_a_containers_cgroup_keeps_the_set_for_a_later_sweep,
            ),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
