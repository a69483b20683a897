//! Spawn latency, side by side in one interleaved run: `echo confined` through our library
//! (executor reused, as an agent uses it), our CLI (`sandbox run`, and `sandbox serve` driven
//! back to back over its JSON lines, as a harness in another language drives it), bwrap with equivalent
//! isolation, `runc run` and `crun run` on our exported bundle, `unshare` with the same
//! namespaces, and a plain fork+exec. Prints median, p95, the ratio to our library, CPU time per
//! call (user + system of the whole process tree: helpers, zygotes and peers included) and peak
//! RSS per contender; `--json FILE` writes the same (`contenders[].cpu_ms`). The egress row
//! (issue 17) times a small HTTPS GET from inside through the egress proxy against the same GET
//! with network allow (`egress`, `egress_ratio`). `--throughput` adds
//! N concurrent tool calls from a tokio program across 4 executors, against bwrap at the same
//! concurrency (`throughput`: rows of `name`, `calls_per_s`, `p95_ms`). The row "library cold
//! (new set)" times the first spawn of a set opened just before. Last, issue 16's targets as
//! this run measured them (`targets`: `value`, `limit`, `met`).
//!
//! Usage: `cargo run --release -p sandbox-tests --bin spawn-bench -- [--quick] [--runs N]
//! [--json FILE] [--throughput] [--only NAME-PREFIX] [--phases] [--workspace DIR]
//! [--cpu-weight N] [--dir DIR]`. `--cpu-weight` sets the spawns' CPU weight for the library's
//! sets, the CLI and serve (the library's default otherwise); `--dir` is where the bench makes
//! its directory, the library sets' scratch root included (default `/var/tmp`). Needs root for
//! the container contenders; missing peers are reported, never silently dropped.
#![allow(unsafe_code, clippy::print_stdout, clippy::unwrap_used, clippy::cast_precision_loss)]

#[cfg(target_os = "linux")]
mod bench {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use sandbox::export::{ExportRequest, export_bundle};
    use sandbox::{Access, Deadline, Executor, ExecutorSet, ExecutorSetOptions, Profile, ProfileConfig};

    /// The pause before each timed call: the library's cgroup keeper (60 ms after the last
    /// cold spawn) plus a grace period or two for the kernel to return to its quiet state.
    const QUIET: Duration = Duration::from_millis(120);

    pub struct Args {
        pub runs: usize,
        pub json: Option<PathBuf>,
        pub throughput: bool,
        /// Only the contenders whose name starts with this (profiling one path).
        pub only: Option<String>,
        /// Print where each library spawn's time went (the backend's `spawn phases` events).
        pub phases: bool,
        /// The library contenders' workspace (an existing tree, e.g. a large repository: the
        /// protected-paths scan walks it at every spawn); adds a contender without protection.
        pub workspace: Option<PathBuf>,
        /// The spawns' CPU weight for the library's sets, the CLI and serve (`--cpu-weight`;
        /// None: the library's default).
        pub cpu_weight: Option<u16>,
        /// Where the bench makes its directory (the library sets' scratch root, the default
        /// workspace, the exported bundle): `--dir`, default `/var/tmp` (a disk here; `/dev/shm`
        /// shows what a tmpfs scratch root changes).
        pub dir: PathBuf,
    }

    pub fn parse() -> Result<Args, String> {
        let mut args = Args {
            runs: 60,
            json: None,
            throughput: false,
            only: None,
            phases: false,
            workspace: None,
            cpu_weight: None,
            dir: PathBuf::from("/var/tmp"),
        };
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            match a.as_str() {
                "--quick" => args.runs = 5,
                "--runs" => args.runs = it.next().and_then(|n| n.parse().ok()).ok_or("--runs needs a number")?,
                "--json" => args.json = Some(it.next().ok_or("--json needs a file")?.into()),
                "--throughput" => args.throughput = true,
                "--phases" => args.phases = true,
                "--workspace" => {
                    let dir = PathBuf::from(it.next().ok_or("--workspace needs a directory")?);
                    args.workspace = Some(std::fs::canonicalize(&dir).map_err(|e| format!("--workspace: {e}"))?);
                }
                "--dir" => {
                    let dir = PathBuf::from(it.next().ok_or("--dir needs a directory")?);
                    args.dir = std::fs::canonicalize(&dir).map_err(|e| format!("--dir: {e}"))?;
                }
                "--only" => args.only = Some(it.next().ok_or("--only needs a contender name prefix")?),
                "--cpu-weight" => {
                    args.cpu_weight =
                        Some(it.next().and_then(|n| n.parse().ok()).ok_or("--cpu-weight needs a number (1-10000)")?);
                }
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(args)
    }

    /// The untimed pause after each library call (see the library contenders).
    const WARM_PAUSE: Duration = Duration::from_millis(25);

    /// `unshare` with the namespaces our containers get, running `echo confined`.
    const UNSHARE_ARGS: [&str; 11] = [
        "--user",
        "--map-root-user",
        "--pid",
        "--fork",
        "--net",
        "--ipc",
        "--uts",
        "--mount",
        "--mount-proc",
        "/bin/echo",
        "confined",
    ];

    /// One timed run: wall time and peak RSS in KiB if known.
    type RunFn = Box<dyn FnMut() -> Result<(Duration, Option<i64>), String>>;

    /// A contender: a name and one timed run returning (wall time, peak RSS in KiB if known).
    struct Contender {
        name: &'static str,
        run: RunFn,
        /// For external commands: the argv, run once more under GNU `time -f %M` to read the
        /// tool's own peak RSS (a child forked from this larger process would report ours).
        argv: Option<Vec<String>>,
        samples: Vec<Duration>,
        rss: i64,
        /// CPU time (user + system, ms) of this process's whole tree over all timed runs (printed
        /// per call).
        cpu_ms: f64,
        error: Option<String>,
    }

    /// CPU time (user + system) of this process and every descendant, in ms: this process and
    /// its reaped children from `getrusage` (microseconds), each live descendant from
    /// `/proc/<pid>/stat` (its own and its reaped children's, in clock ticks). A contender's
    /// CPU per call is the difference over its runs (the helpers, zygotes, serve and the peers
    /// are all descendants), averaged: the tick resolution averages out.
    fn tree_cpu_ms() -> f64 {
        fn rusage(who: i32) -> f64 {
            // SAFETY: rusage is plain old data (all-zero is valid); getrusage fills it.
            let mut u: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: `u` is valid for the call.
            if unsafe { libc::getrusage(who, &mut u) } != 0 {
                return 0.0;
            }
            let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
            ms(u.ru_utime) + ms(u.ru_stime)
        }
        fn children(pid: &str) -> Vec<String> {
            std::fs::read_dir(format!("/proc/{pid}/task"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
                .flat_map(|c| c.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
                .collect()
        }
        // SAFETY: sysconf has no preconditions.
        let tick = 1000.0 / (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64);
        let mut total = rusage(libc::RUSAGE_SELF) + rusage(libc::RUSAGE_CHILDREN);
        let mut stack = children("self");
        while let Some(pid) = stack.pop() {
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                // After the command's closing parenthesis: field 3 onwards; utime, stime,
                // cutime and cstime are fields 14-17.
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                let f: Vec<f64> = rest.split_whitespace().skip(11).take(4).filter_map(|v| v.parse().ok()).collect();
                total += f.iter().sum::<f64>() * tick;
            }
            stack.extend(children(&pid));
        }
        total
    }

    fn which(cmd: &str) -> bool {
        Command::new("sh")
            .args(["-c", &format!("command -v {cmd}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Runs `cmd` to its end with its output captured; wall time and the child's peak RSS.
    fn timed(cmd: &mut Command) -> Result<(Duration, Option<i64>), String> {
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let start = Instant::now();
        let child = cmd.spawn().map_err(|e| e.to_string())?;
        let pid = i32::try_from(child.id()).map_err(|e| e.to_string())?;
        let out = child.wait_with_output_rusage(pid)?;
        let took = start.elapsed();
        if out.0 != 0 || !out.1.starts_with(b"confined") {
            return Err(format!("exit {} output {:?}", out.0, String::from_utf8_lossy(&out.1)));
        }
        Ok((took, Some(out.2)))
    }

    trait WaitRusage {
        fn wait_with_output_rusage(self, pid: i32) -> Result<(i32, Vec<u8>, i64), String>;
    }

    impl WaitRusage for std::process::Child {
        fn wait_with_output_rusage(mut self, pid: i32) -> Result<(i32, Vec<u8>, i64), String> {
            use std::io::Read;
            let mut stdout = Vec::new();
            if let Some(mut s) = self.stdout.take() {
                s.read_to_end(&mut stdout).map_err(|e| e.to_string())?;
            }
            let mut status = 0;
            // SAFETY: rusage is plain old data (all-zero is valid); wait4 fills it and `status`
            // for our own child `pid`, which std has not reaped (we never called wait on it).
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: see above; both pointers are valid for the call.
            let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            if r < 0 {
                return Err(std::io::Error::last_os_error().to_string());
            }
            let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
            Ok((code, stdout, usage.ru_maxrss))
        }
    }

    /// The peak RSS (KiB) of `argv` as GNU time reports it: time is small, so its fork copy
    /// does not hide the tool's own peak.
    fn tool_rss(argv: &[String], cwd: &Path) -> Option<i64> {
        let out = Command::new("/usr/bin/time")
            .args(["-f", "%M"])
            .args(argv)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stderr).lines().last()?.trim().parse().ok()
    }

    fn median_p95(samples: &mut [Duration]) -> (f64, f64) {
        samples.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let n = samples.len();
        if n == 0 {
            return (f64::NAN, f64::NAN);
        }
        let median = if n % 2 == 1 { ms(samples[n / 2]) } else { (ms(samples[n / 2 - 1]) + ms(samples[n / 2])) / 2.0 };
        // The nearest-rank 95th percentile: the ceil(0.95 n)-th smallest sample.
        let rank = (n * 95).div_ceil(100);
        let p95 = ms(samples[rank.saturating_sub(1).min(n - 1)]);
        (median, p95)
    }

    /// The peak RSS (KiB) of our spawn's own process, the helper: sampled from
    /// `/proc/<helper>/status` (VmHWM) while a run that lasts 300 ms is in flight. (A child's
    /// `ru_maxrss` would report whatever its parent had at fork time.)
    fn helper_rss(exec: &Arc<Executor>, ws: &Path) -> i64 {
        let (exec2, ws2) = (Arc::clone(exec), ws.to_path_buf());
        let run = std::thread::spawn(move || {
            exec2.run_argv(&Deadline::after(Duration::from_secs(30)), &ws2, &["/bin/sh", "-c", "sleep 0.3"])
        });
        let me = std::process::id().to_string();
        let mut peak = 0;
        while !run.is_finished() {
            for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let path = entry.path();
                let Ok(cmd) = std::fs::read(path.join("cmdline")) else { continue };
                if !String::from_utf8_lossy(&cmd).contains("--sandbox-linux-helper") {
                    continue;
                }
                let Ok(status) = std::fs::read_to_string(path.join("status")) else { continue };
                let field = |name: &str| {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim().trim_end_matches(" kB").trim().to_owned())
                };
                // The set's zygote is our child; the spawn's helper is the zygote's worker.
                let ppid = field("PPid:").unwrap_or_default();
                let parent_is_zygote = std::fs::read(format!("/proc/{ppid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("zygote"))
                    && std::fs::read_to_string(format!("/proc/{ppid}/status"))
                        .is_ok_and(|s| s.lines().any(|l| l.strip_prefix("PPid:").map(str::trim) == Some(me.as_str())));
                if parent_is_zygote {
                    peak = peak.max(field("VmHWM:").and_then(|v| v.parse().ok()).unwrap_or(0));
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = run.join();
        peak
    }

    /// crun 1.8 refuses this hybrid cgroup host unless the unified hierarchy is unmounted in a
    /// private mount namespace (FIGURES.md P13). The whole benchmark moves into one, so every
    /// contender runs under the same conditions.
    fn private_mount_namespace_for_crun() {
        if !nix::unistd::getuid().is_root() || !Path::new("/sys/fs/cgroup/unified").is_dir() {
            return;
        }
        let private = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS).and_then(|()| {
            nix::mount::mount(
                None::<&str>,
                "/",
                None::<&str>,
                nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_PRIVATE,
                None::<&str>,
            )
        });
        match private.and_then(|()| nix::mount::umount2("/sys/fs/cgroup/unified", nix::mount::MntFlags::MNT_DETACH)) {
            Ok(()) => println!("(private mount namespace without /sys/fs/cgroup/unified, for crun)"),
            Err(e) => println!("(could not hide the unified cgroup hierarchy from crun: {e})"),
        }
    }

    /// One timed library call of `echo confined` in `ws`, then the untimed pause: the warm
    /// container for the next call builds now, not while the next contender is being timed (an
    /// agent thinks between calls anyway). `set` keeps the executor's set alive when nothing
    /// else does.
    fn library_run(exec: Arc<Executor>, ws: PathBuf, set: Option<Arc<ExecutorSet>>) -> RunFn {
        Box::new(move || {
            let _set = &set;
            let took = timed_echo(&exec, &ws)?;
            std::thread::sleep(WARM_PAUSE);
            Ok((took, None))
        })
    }

    /// One library call of `echo confined` in `ws`, timed, its output checked.
    fn timed_echo(exec: &Executor, ws: &Path) -> Result<Duration, String> {
        let start = Instant::now();
        let out = exec
            .run_argv(&Deadline::after(Duration::from_secs(30)), ws, &["/bin/echo", "confined"])
            .map_err(|e| e.to_string())?;
        let took = start.elapsed();
        if out.bytes != b"confined\n" {
            return Err(format!("output {:?}", out.bytes));
        }
        Ok(took)
    }

    /// `sandbox serve` (one long-lived process, JSON lines) driven back to back, as a harness in
    /// another language drives it: one untimed call, then the timed one right after it returns,
    /// then the pause (as for "library back-to-back"). None without the CLI beside this binary.
    fn serve_run(ws: &Path, weight: &[String]) -> Result<Option<RunFn>, String> {
        use std::io::{BufRead, Write};
        let Some(cli) = std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join("sandbox"))) else {
            return Ok(None);
        };
        if !cli.exists() {
            return Ok(None);
        }
        let mut child = Command::new(&cli)
            .current_dir(ws)
            .arg("serve")
            .args(weight)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("sandbox serve: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("sandbox serve: no stdin")?;
        let mut lines = std::io::BufReader::new(child.stdout.take().ok_or("sandbox serve: no stdout")?).lines();
        let mut n = 0u64;
        Ok(Some(Box::new(move || {
            // Kept alive by the closure: serve ends when its stdin closes with it.
            let _child = &child;
            let mut call = || -> Result<(), String> {
                n += 1;
                writeln!(stdin, r#"{{"id": {n}, "argv": ["/bin/echo", "confined"]}}"#).map_err(|e| e.to_string())?;
                let line = lines.next().ok_or("sandbox serve ended")?.map_err(|e| e.to_string())?;
                let v: serde_json::Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
                if v["stdout"] != "confined\n" {
                    return Err(format!("sandbox serve answered {line}"));
                }
                Ok(())
            };
            call()?;
            let start = Instant::now();
            call()?;
            let took = start.elapsed();
            std::thread::sleep(WARM_PAUSE);
            Ok((took, None))
        })))
    }

    /// The library sets' options: the bench's scratch root, and `--cpu-weight` if given.
    fn set_options(scratch: &Path, args: &Args) -> ExecutorSetOptions {
        let options = ExecutorSetOptions::new(scratch).max_executors(8);
        match args.cpu_weight {
            Some(w) => options.cpu_weight(w),
            None => options,
        }
    }

    pub fn run(args: &Args) -> Result<(), String> {
        if args.phases {
            use tracing_subscriber::Layer as _;
            use tracing_subscriber::layer::SubscriberExt;
            use tracing_subscriber::util::SubscriberInitExt;
            let only_phases =
                tracing_subscriber::filter::filter_fn(|m| m.target().starts_with("sandbox_linux::backend"));
            tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(only_phases))
                .init();
        }
        private_mount_namespace_for_crun();
        let root = tempfile::Builder::new().prefix("spawn-bench").tempdir_in(&args.dir).map_err(|e| e.to_string())?;
        let base = std::fs::canonicalize(root.path()).map_err(|e| e.to_string())?;
        let ws = args.workspace.clone().unwrap_or_else(|| base.join("ws"));
        let scratch = base.join("scratch");
        std::fs::create_dir_all(&ws).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
        let profile = Profile::new(ProfileConfig {
            workspace_root: ws.clone(),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            host_read: Access::Allow,
            host_write: Access::Deny,
            network: Access::Deny,
            command: Access::Allow,
            ..ProfileConfig::default()
        })
        .map_err(|e| e.to_string())?;
        let set = Arc::new(
            ExecutorSet::new(&Deadline::after(Duration::from_secs(60)), &profile, set_options(&scratch, args))
                .map_err(|e| e.to_string())?,
        );
        let exec = set.executor("bench").map_err(|e| e.to_string())?;
        println!("library: level {}, guarantees {}", exec.level(), exec.guarantees().names().join(","));

        // Warm-up, then the helper's peak RSS, measured alone.
        for _ in 0..3 {
            exec.run_argv(&Deadline::after(Duration::from_secs(30)), &ws, &["/bin/echo", "confined"])
                .map_err(|e| e.to_string())?;
        }
        let library_rss = helper_rss(&exec, &ws);

        let bundle = base.join("bundle");
        export_bundle(
            &profile,
            &ExportRequest {
                argv: vec!["/bin/echo".into(), "confined".into()],
                cwd: ws.clone(),
                env_snapshot: vec![("PATH".into(), "/usr/bin:/bin".into())],
                uid: nix::unistd::getuid().as_raw(),
                gid: nix::unistd::getgid().as_raw(),
                ..ExportRequest::default()
            },
            &bundle,
        )
        .map_err(|e| e.to_string())?;

        let mut contenders: Vec<Contender> = Vec::new();
        let mut missing: Vec<String> = Vec::new();
        let add = |contenders: &mut Vec<Contender>, name, run| {
            contenders.push(Contender { name, run, argv: None, samples: Vec::new(), rss: 0, cpu_ms: 0.0, error: None })
        };
        add(&mut contenders, "sandbox library", library_run(Arc::clone(&exec), ws.clone(), None));
        if args.workspace.is_some() {
            // The same workspace without protected paths: the difference is what the protections
            // cost (the scan and the creation guard).
            let off = Profile::new(ProfileConfig {
                protected_paths: sandbox::Protection { defaults: false, ..sandbox::Protection::default() },
                ..profile.config().clone()
            })
            .map_err(|e| e.to_string())?;
            let off_set = Arc::new(
                ExecutorSet::new(&Deadline::after(Duration::from_secs(60)), &off, set_options(&scratch, args))
                    .map_err(|e| e.to_string())?,
            );
            let exec = off_set.executor("bench").map_err(|e| e.to_string())?;
            add(&mut contenders, "sandbox library, protection off", library_run(exec, ws.clone(), Some(off_set)));
        }
        {
            // The same, but with no pause before the timed call: the previous call has just
            // returned, so the warm container prepared meanwhile may still be building (an
            // agent that fires calls back to back, rather than thinking between them).
            let (exec, ws) = (Arc::clone(&exec), ws.clone());
            add(
                &mut contenders,
                "library back-to-back",
                Box::new(move || {
                    timed_echo(&exec, &ws)?;
                    let took = timed_echo(&exec, &ws)?;
                    // Untimed: the warm container for the next call builds now, not while the
                    // next contender is being timed (an agent thinks between calls anyway).
                    std::thread::sleep(WARM_PAUSE);
                    Ok((took, None))
                }),
            );
        }
        {
            // Issue 16's cold library spawn: the first spawn of a set opened just before (so its
            // shape has no warm container, and the zygote starts with it). Opening the set (the
            // kept probe, the set's directory and cgroups) and closing it are not timed; their
            // CPU is in the row's CPU column.
            let (profile, ws, options) = (profile.clone(), ws.clone(), set_options(&scratch, args).max_executors(1));
            add(
                &mut contenders,
                "library cold (new set)",
                Box::new(move || {
                    let set = ExecutorSet::new(&Deadline::after(Duration::from_secs(60)), &profile, options.clone())
                        .map_err(|e| e.to_string())?;
                    let exec = set.executor("cold").map_err(|e| e.to_string())?;
                    let took = timed_echo(&exec, &ws)?;
                    drop(exec);
                    set.close().map_err(|e| e.to_string())?;
                    Ok((took, None))
                }),
            );
        }
        let weight: Vec<String> =
            args.cpu_weight.map(|w| vec![String::from("--cpu-weight"), w.to_string()]).unwrap_or_default();
        let mut cli_args = vec![String::from("run")];
        cli_args.extend(weight.iter().cloned());
        cli_args.extend(["--", "/bin/echo", "confined"].map(String::from));
        let cli = std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join("sandbox")));
        match cli.filter(|p| p.exists()) {
            Some(cli) => {
                let (ws, cli_args) = (ws.clone(), cli_args.clone());
                add(
                    &mut contenders,
                    "sandbox run (CLI)",
                    Box::new(move || timed(Command::new(&cli).current_dir(&ws).args(&cli_args))),
                );
            }
            None => missing.push(String::from("sandbox CLI (build it: cargo build --release -p sandbox)")),
        }
        if let Some(serve) = serve_run(&ws, &weight)? {
            add(&mut contenders, "serve back-to-back", serve);
        }
        if which("bwrap") {
            let ws_s = ws.display().to_string();
            add(&mut contenders, "bwrap", Box::new(move || timed(&mut bwrap(&ws_s))));
        } else {
            missing.push(String::from("bwrap (apt-get install bubblewrap)"));
        }
        for (runtime, name) in [("runc", "runc run"), ("crun", "crun run")] {
            if !which(runtime) {
                missing.push(format!("{runtime} (apt-get install {runtime})"));
                continue;
            }
            let b = bundle.clone();
            let mut n = 0u64;
            add(
                &mut contenders,
                name,
                Box::new(move || {
                    n += 1;
                    let id = format!("bench-{runtime}-{}-{n}", std::process::id());
                    timed(Command::new(runtime).arg("run").arg("--bundle").arg(&b).arg(id))
                }),
            );
        }
        if which("unshare") {
            add(&mut contenders, "unshare -Upfnimu", Box::new(|| timed(Command::new("unshare").args(UNSHARE_ARGS))));
        } else {
            missing.push(String::from("unshare (util-linux)"));
        }
        add(&mut contenders, "plain fork+exec", Box::new(|| timed(Command::new("/bin/echo").arg("confined"))));
        let bundle_s = bundle.display().to_string();
        let pid = std::process::id();
        for c in &mut contenders {
            c.argv = match c.name {
                "sandbox run (CLI)" => std::env::current_exe()
                    .ok()
                    .and_then(|p| p.parent().map(|d| d.join("sandbox")))
                    .map(|cli| std::iter::once(cli.display().to_string()).chain(cli_args.iter().cloned()).collect()),
                "bwrap" => {
                    Some(bwrap(&ws.display().to_string()).get_args().map(|a| a.to_string_lossy().into_owned()).fold(
                        vec![String::from("bwrap")],
                        |mut v, a| {
                            v.push(a);
                            v
                        },
                    ))
                }
                "runc run" => Some(vec![
                    "runc".into(),
                    "run".into(),
                    "--bundle".into(),
                    bundle_s.clone(),
                    format!("bench-rss-runc-{pid}"),
                ]),
                "crun run" => Some(vec![
                    "crun".into(),
                    "run".into(),
                    "--bundle".into(),
                    bundle_s.clone(),
                    format!("bench-rss-crun-{pid}"),
                ]),
                "unshare -Upfnimu" => Some(std::iter::once("unshare").chain(UNSHARE_ARGS).map(str::to_owned).collect()),
                "plain fork+exec" => Some(vec!["/bin/echo".into(), "confined".into()]),
                _ => None,
            };
        }

        if let Some(only) = &args.only {
            contenders.retain(|c| c.name.starts_with(only.as_str()));
            if contenders.first().map(|c| c.name) != Some("sandbox library") {
                return Err(format!("--only {only}: the library must be among the contenders (it is the reference)"));
            }
        }
        // Warm-up, then interleaved rounds.
        for c in contenders.iter_mut() {
            for _ in 0..2 {
                if let Err(e) = (c.run)() {
                    c.error = Some(e);
                    break;
                }
            }
        }
        for _ in 0..args.runs {
            for c in contenders.iter_mut().filter(|c| c.error.is_none()) {
                // Every call starts from a quiet kernel: the library keeps the kernel's cgroup-
                // attach lock on its writers' path for 60 ms after a cold spawn (in this process,
                // in the CLI's, in serve's), and a peer's cgroup move inside that window would
                // skip the grace period it pays on its own (issue 16). So no contender profits
                // from another's.
                std::thread::sleep(QUIET);
                let cpu = tree_cpu_ms();
                match (c.run)() {
                    Ok((d, rss)) => {
                        c.cpu_ms += tree_cpu_ms() - cpu;
                        c.samples.push(d);
                        c.rss = c.rss.max(rss.unwrap_or(0));
                    }
                    Err(e) => c.error = Some(e),
                }
            }
        }
        for c in contenders.iter_mut().filter(|c| c.name == "sandbox library" || c.name == "library back-to-back") {
            c.rss = library_rss;
        }
        if !Path::new("/usr/bin/time").exists() {
            missing.push(String::from("GNU time, for the peak RSS of the peers (apt-get install time)"));
        }
        for c in contenders.iter_mut().filter(|c| c.error.is_none()) {
            if let Some(argv) = &c.argv {
                c.rss = tool_rss(argv, &ws).unwrap_or(-1);
            }
        }

        let ours = median_p95(&mut contenders[0].samples.clone()).0;
        println!(
            "\n{:<24} {:>10} {:>10} {:>12} {:>10} {:>14} {:>6}",
            "contender", "median ms", "p95 ms", "vs library", "cpu ms", "peak RSS KiB", "runs"
        );
        let mut rows = Vec::new();
        // Each measured contender's (median ms, CPU ms per call), for issue 16's targets.
        let mut measured: std::collections::HashMap<&'static str, (f64, f64)> = std::collections::HashMap::new();
        for c in &mut contenders {
            let runs = c.samples.len();
            let (median, p95) = median_p95(&mut c.samples);
            // The back-to-back rows make two calls per run (one untimed, then the timed one).
            let calls = if c.name.ends_with("back-to-back") { 2.0 } else { 1.0 };
            let cpu = c.cpu_ms / runs.max(1) as f64 / calls;
            if c.error.is_none() && runs > 0 {
                measured.insert(c.name, (median, cpu));
            }
            match &c.error {
                Some(e) => println!("{:<24} failed: {e}", c.name),
                None => println!(
                    "{:<24} {:>10.2} {:>10.2} {:>11.2}x {:>10.2} {:>14} {:>6}",
                    c.name,
                    median,
                    p95,
                    median / ours,
                    cpu,
                    c.rss,
                    runs
                ),
            }
            rows.push(serde_json::json!({
                "name": c.name, "median_ms": median, "p95_ms": p95, "peak_rss_kb": c.rss, "runs": runs,
                "ratio_to_library": median / ours, "cpu_ms": (c.error.is_none() && runs > 0).then_some(cpu),
                "error": c.error,
            }));
        }
        for m in &missing {
            println!("missing: {m}");
        }
        let mut report = serde_json::json!({"contenders": rows, "missing": missing});

        // Issue 17: the same small HTTPS GET through the egress proxy and with network allow.
        let egress = if args.only.is_some() {
            Ok(Err(String::from("skipped with --only")))
        } else {
            egress::egress(&ws, &scratch, args.runs)
        };
        match egress? {
            Ok([proxy, direct]) => {
                println!("\negress, a small HTTPS GET from inside (library, warm):");
                for (name, median, p95) in [proxy, direct] {
                    println!("  {name:<26} median {median:>7.2} ms, p95 {p95:>7.2} ms");
                }
                println!("  proxy / allow: {:.2}x", proxy.1 / direct.1);
                report["egress"] = serde_json::json!([
                    {"name": proxy.0, "median_ms": proxy.1, "p95_ms": proxy.2},
                    {"name": direct.0, "median_ms": direct.1, "p95_ms": direct.2},
                ]);
                report["egress_ratio"] = serde_json::json!(proxy.1 / direct.1);
            }
            Err(why) => println!("egress row not measured: {why}"),
        }

        let mut calls_per_s = None;
        if args.throughput {
            let calls = args.runs.max(20) * 4;
            let (ours, bw) = throughput(&set, &ws, calls)?;
            calls_per_s = bw.map(|bw| (ours.0, bw.0));
            println!("\nthroughput, {calls} calls, 4 at a time:");
            println!("  sandbox library: {:.1} calls/s, p95 {:.2} ms", ours.0, ours.1);
            if let Some(bw) = bw {
                println!("  bwrap:           {:.1} calls/s, p95 {:.2} ms", bw.0, bw.1);
            }
            let mut rows =
                vec![serde_json::json!({"name": "sandbox library", "calls_per_s": ours.0, "p95_ms": ours.1})];
            if let Some(bw) = bw {
                rows.push(serde_json::json!({"name": "bwrap", "calls_per_s": bw.0, "p95_ms": bw.1}));
            }
            report["throughput"] = serde_json::json!(rows);
            report["throughput_calls"] = serde_json::json!(calls);
        }
        report["targets"] = targets(&measured, calls_per_s, library_rss);
        if let Some(path) = &args.json {
            std::fs::write(path, serde_json::to_string_pretty(&report).unwrap()).map_err(|e| e.to_string())?;
            println!("\nwrote {}", path.display());
        }
        drop(exec);
        if let Ok(set) = Arc::try_unwrap(set) {
            set.close().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Prints issue 16's targets as this run measured them (ratios between contenders of this
    /// run), and returns them as JSON rows. A target whose contenders did not run is "not
    /// measured", never met.
    fn targets(
        measured: &std::collections::HashMap<&'static str, (f64, f64)>,
        calls_per_s: Option<(f64, f64)>,
        helper_rss_kib: i64,
    ) -> serde_json::Value {
        let ratio = |a: &str, b: &str, cpu: bool| {
            let pick = |m: &(f64, f64)| if cpu { m.1 } else { m.0 };
            match (measured.get(a), measured.get(b)) {
                (Some(x), Some(y)) if pick(y) > 0.0 => Some(pick(x) / pick(y)),
                _ => None,
            }
        };
        // (target, what is compared, value, limit, at most the limit (true) or at least it)
        let rows: [(&str, &str, Option<f64>, f64, bool); 7] = [
            ("1", "sandbox run (CLI) / crun run, median", ratio("sandbox run (CLI)", "crun run", false), 1.0, true),
            ("1", "sandbox run (CLI) / bwrap, CPU per call", ratio("sandbox run (CLI)", "bwrap", true), 2.0, true),
            ("2", "library / bwrap, calls/s 4 at a time", calls_per_s.map(|(ours, bw)| ours / bw), 1.0, false),
            (
                "3",
                "library cold (new set) / crun run, median",
                ratio("library cold (new set)", "crun run", false),
                1.0,
                true,
            ),
            ("4", "sandbox library / bwrap, median", ratio("sandbox library", "bwrap", false), 1.0, true),
            (
                "4",
                "the helper's peak RSS, MiB",
                (helper_rss_kib > 0).then(|| helper_rss_kib as f64 / 1024.0),
                4.0,
                true,
            ),
            ("5", "serve back-to-back / bwrap, median", ratio("serve back-to-back", "bwrap", false), 1.0, true),
        ];
        println!("\nissue 16's targets, as measured in this run:");
        let mut json = Vec::new();
        for (target, what, value, limit, at_most) in rows {
            let met = value.map(|v| if at_most { v <= limit } else { v >= limit });
            let bound = if at_most { "<=" } else { ">=" };
            let shown = value.map_or_else(|| String::from("-"), |v| format!("{v:.2}"));
            let verdict = match met {
                Some(true) => "met",
                Some(false) => "not met",
                None => "not measured",
            };
            println!("  {target}. {what:<44} {shown:>7}  (target {bound} {limit:.2})  {verdict}");
            json.push(serde_json::json!({
                "target": target, "name": what, "value": value, "limit": limit,
                "at_most": at_most, "met": met.unwrap_or(false),
            }));
        }
        serde_json::json!(json)
    }

    fn bwrap(ws: &str) -> Command {
        let mut c = Command::new("bwrap");
        c.args([
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--symlink",
            "usr/sbin",
            "/sbin",
            "--ro-bind",
            "/etc",
            "/etc",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/root",
            "--bind",
            ws,
            ws,
            "--chdir",
            ws,
            "--cap-drop",
            "ALL",
            "/bin/echo",
            "confined",
        ]);
        c
    }

    // In `bench/` beside this file (an inline module's path starts at a directory named after it).
    #[path = "throughput.rs"]
    mod throughput;
    use throughput::throughput;

    #[path = "egress.rs"]
    mod egress;
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        let args = match bench::parse() {
            Ok(a) => a,
            Err(e) => {
                eprintln!("spawn-bench: {e}");
                return std::process::ExitCode::from(2);
            }
        };
        if let Err(e) = bench::run(&args) {
            eprintln!("spawn-bench: {e}");
            return std::process::ExitCode::FAILURE;
        }
    }
    std::process::ExitCode::SUCCESS
}
