//! Grants (CONTRACT.md §13) on the Linux backend: every class opens exactly its operation (the
//! in-sandbox probe shows it working and the neighbouring one still denied), every error of the
//! grant section has a case, tokens are bound and single-use, targets keep their identity.
//! Needs root or the rootless mode. `harness = false`: `main` calls `sandbox::init()` first.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::fs;
    use std::net::TcpListener;
    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use sandbox::{
        Access, Deadline, Error, Executor, ExecutorSet, ExitStatus, GrantRequest, ProcessAccessKind, ProcessOptions,
        Profile, ProfileConfig, RootAccess,
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
            let dirs = TestDirs::new("sbx-grants");
            fs::create_dir(dirs.ws.join("sub")).unwrap();
            fs::write(dirs.ws.join("f"), "old\n").unwrap();
            fs::write(dirs.ws.join("g"), "untouched\n").unwrap();
            fs::write(dirs.ws.join("sub/s.txt"), "in sub\n").unwrap();
            Fixture { dirs }
        }

        pub fn config(&self) -> ProfileConfig {
            ProfileConfig { workspace_write: Access::Gated, ..self.allow_config() }
        }

        pub fn set(&self, config: ProfileConfig) -> ExecutorSet {
            ExecutorSet::new(&dl(), &Profile::new(config).unwrap(), self.set_options(4)).unwrap()
        }

        pub fn request(&self, command: &str, kind: &str, scope: &str, class: &str, target: &str) -> GrantRequest {
            GrantRequest {
                execution_id: String::from("exec-1"),
                command: command.to_owned(),
                cwd: self.ws.clone(),
                kind: kind.to_owned(),
                scope: scope.to_owned(),
                class: class.to_owned(),
                target: target.to_owned(),
                expiry_unix_ms: in_ms(60_000),
            }
        }
    }

    pub use sandbox_tests::deadline as dl;

    fn in_ms(ms: i64) -> i64 {
        i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap() + ms
    }

    fn run(exec: &Executor, f: &Fixture, command: &str, grants: &[String]) -> Result<String, Error> {
        exec.run_command_with_grants(&dl(), "exec-1", &f.ws, command, grants)
            .map(|o| String::from_utf8_lossy(&o.bytes).into_owned())
    }

    pub fn the_gate_round_trip_and_single_use() {
        let f = Fixture::new();
        let set = f.set(ProfileConfig { command: Access::Gated, ..f.config() });
        let exec = set.executor("k").unwrap();
        let cmd = "echo approved";
        assert!(matches!(exec.run_command(&dl(), &f.ws, cmd), Err(Error::GrantRequired)));
        assert!(matches!(run(&exec, &f, cmd, &[]), Err(Error::GrantRequired)));
        let token = exec.issue_grant(&dl(), &f.request(cmd, "command.execute", "", "command.start.v1", cmd)).unwrap();
        assert!(token.starts_with("sbx1.") && token.split('.').count() == 3);
        assert_eq!(run(&exec, &f, cmd, std::slice::from_ref(&token)).unwrap(), "approved\n");
        assert!(matches!(run(&exec, &f, cmd, std::slice::from_ref(&token)), Err(Error::GrantReplay)));
        // Twice in one call.
        let t2 = exec.issue_grant(&dl(), &f.request(cmd, "command.execute", "", "command.start.v1", cmd)).unwrap();
        assert!(matches!(run(&exec, &f, cmd, &[t2.clone(), t2]), Err(Error::GrantReplay)));
        // An argv spawn binds its compact JSON text.
        let text = r#"["echo","a b"]"#;
        let t3 = exec.issue_grant(&dl(), &f.request(text, "command.execute", "", "command.start.v1", text)).unwrap();
        let p = exec
            .prepare_process(
                &dl(),
                ProcessOptions {
                    cwd: f.ws.clone(),
                    argv: vec!["echo".into(), "a b".into()],
                    execution_id: String::from("exec-1"),
                    grants: vec![t3],
                    ..ProcessOptions::default()
                },
            )
            .unwrap();
        let mut out = String::new();
        let process = p.start(&dl()).unwrap();
        std::io::Read::read_to_string(&mut process.take_stdout().unwrap(), &mut out).unwrap();
        assert_eq!(out, "a b\n");
        set.close().unwrap();
    }

    /// The red team of 4 December (night): the command text binds no mode, and an argv's text is
    /// also a shell command. A grant approved for the argv `["echo","$(touch pwned)"]` (which
    /// prints its argument) opened the shell command of the same text, where `$(…)` ran. A shell
    /// command of an argv's form never carries grants now (`GrantMalformed`, nothing consumed,
    /// nothing run), through `run_command_with_grants` and `prepare_process` alike. Controls: the
    /// same token then runs its argv, which prints the text literally; an ordinary shell command
    /// with brackets still takes its grant.
    pub fn an_argv_grant_never_opens_the_shell_command_of_its_text() {
        let f = Fixture::new();
        let set = f.set(ProfileConfig { command: Access::Gated, ..f.allow_config() });
        let exec = set.executor("k").unwrap();
        let text = r#"["echo","$(touch pwned)"]"#;
        let token = exec.issue_grant(&dl(), &f.request(text, "command.execute", "", "command.start.v1", text)).unwrap();
        let refused = run(&exec, &f, text, std::slice::from_ref(&token));
        assert!(
            matches!(&refused, Err(Error::GrantMalformed { detail }) if detail.contains("JSON array")),
            "{refused:?}"
        );
        let options = |command: &str, argv: Vec<std::ffi::OsString>| ProcessOptions {
            cwd: f.ws.clone(),
            command: command.to_owned(),
            argv,
            execution_id: String::from("exec-1"),
            grants: vec![token.clone()],
            ..ProcessOptions::default()
        };
        let prepared = exec.prepare_process(&dl(), options(text, Vec::new()));
        assert!(matches!(&prepared, Err(Error::GrantMalformed { .. })), "{:?}", prepared.err());
        assert!(!f.ws.join("pwned").exists(), "the shell ran the argv's text");
        // Control: nothing was consumed, and the argv it was approved for runs.
        let p = exec.prepare_process(&dl(), options("", vec!["echo".into(), "$(touch pwned)".into()])).unwrap();
        let mut out = String::new();
        let process = p.start(&dl()).unwrap();
        std::io::Read::read_to_string(&mut process.take_stdout().unwrap(), &mut out).unwrap();
        assert_eq!(out, "$(touch pwned)\n");
        assert!(!f.ws.join("pwned").exists());
        // Control: a shell command with brackets that is no argv text keeps its grant.
        let cmd = r#"[ -d sub ] && echo "[\"dir\"]""#;
        let t = exec.issue_grant(&dl(), &f.request(cmd, "command.execute", "", "command.start.v1", cmd)).unwrap();
        assert_eq!(run(&exec, &f, cmd, &[t]).unwrap(), "[\"dir\"]\n");
        set.close().unwrap();
        // Control: without grants (command allow) such a text is an ordinary shell command.
        let allow = f.set(ProfileConfig { command: Access::Allow, ..f.allow_config() });
        let exec = allow.executor("k").unwrap();
        let plain = exec.run_command_with_grants(&dl(), "exec-1", &f.ws, r#"["true"]"#, &[] as &[String]);
        assert!(plain.is_ok(), "{plain:?}");
        allow.close().unwrap();
    }

    /// Issue 12, class 3a: one single-use token presented by 8 and by 32 threads at once runs
    /// exactly one spawn each round; the others get `GrantReplay`. Many rounds through
    /// `prepare_process` (it consumes without spawning, so the race window is hit often), a few
    /// through `run_command_with_grants` with a workload that appends a line (the file counts the
    /// spawns that really ran). Control: 8 distinct tokens presented at once all run.
    pub fn a_single_use_token_presented_concurrently_runs_once() {
        let f = &Fixture::new();
        let set = f.set(ProfileConfig { command: Access::Gated, ..f.allow_config() });
        let exec = set.executor("k").unwrap();
        let log = f.ws.join("sub/runs.log");
        let cmd = "echo ran >> sub/runs.log";
        let issue = |exec: &Executor| {
            exec.issue_grant(&dl(), &f.request(cmd, "command.execute", "", "command.start.v1", cmd)).unwrap()
        };
        let race = |threads: usize, token: &str, via_run: bool| -> (usize, usize) {
            let barrier = std::sync::Barrier::new(threads);
            let results: Vec<Result<(), Error>> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..threads)
                    .map(|_| {
                        let (exec, barrier) = (&exec, &barrier);
                        s.spawn(move || {
                            barrier.wait();
                            if via_run {
                                run(exec, f, cmd, &[token.to_owned()]).map(|_| ())
                            } else {
                                exec.prepare_process(
                                    &dl(),
                                    ProcessOptions {
                                        cwd: f.ws.clone(),
                                        command: cmd.to_owned(),
                                        execution_id: String::from("exec-1"),
                                        grants: vec![token.to_owned()],
                                        ..ProcessOptions::default()
                                    },
                                )
                                .and_then(|p| p.close())
                            }
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for r in &results {
                assert!(matches!(r, Ok(()) | Err(Error::GrantReplay)), "{r:?}");
            }
            let ok = results.iter().filter(|r| r.is_ok()).count();
            (ok, threads - ok)
        };
        for threads in [8, 32] {
            for round in 0..40 {
                let token = issue(&exec);
                assert_eq!(race(threads, &token, false), (1, threads - 1), "prepare: {threads} threads, round {round}");
                // Spent for good: presenting it again is a replay.
                assert!(matches!(run(&exec, f, cmd, std::slice::from_ref(&token)), Err(Error::GrantReplay)));
            }
            for round in 0..3 {
                let _ = fs::remove_file(&log);
                let token = issue(&exec);
                assert_eq!(race(threads, &token, true), (1, threads - 1), "run: {threads} threads, round {round}");
                assert_eq!(fs::read_to_string(&log).unwrap(), "ran\n", "exactly one spawn ran");
            }
        }
        // Control: 8 distinct tokens presented at once all run.
        let _ = fs::remove_file(&log);
        let tokens: Vec<String> = (0..8).map(|_| issue(&exec)).collect();
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for token in &tokens {
                let (exec, barrier) = (&exec, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    run(exec, f, cmd, std::slice::from_ref(token)).unwrap();
                });
            }
        });
        assert_eq!(fs::read_to_string(&log).unwrap(), "ran\n".repeat(8));
        set.close().unwrap();
    }

    pub fn a_path_write_grant_opens_that_file_and_nothing_beside_it() {
        let f = Fixture::new();
        let set = f.set(f.config());
        let exec = set.executor("k").unwrap();
        let target = f.ws.join("f").display().to_string();
        let cmd = "(echo new > f) 2>/dev/null && echo wrote-f; mkdir f2 2>/dev/null || echo no-mkdir; (echo y > g) 2>/dev/null || echo no-g";
        // Without the grant the write fails inside (never an Error).
        assert_eq!(run(&exec, &f, cmd, &[]).unwrap(), "no-mkdir\nno-g\n");
        let token = exec
            .issue_grant(&dl(), &f.request(cmd, "filesystem.write", &target, "filesystem.path.write.v1", &target))
            .unwrap();
        assert_eq!(run(&exec, &f, cmd, &[token]).unwrap(), "wrote-f\nno-mkdir\nno-g\n");
        assert_eq!(fs::read_to_string(f.ws.join("f")).unwrap(), "new\n");
        assert_eq!(fs::read_to_string(f.ws.join("g")).unwrap(), "untouched\n");
        assert!(!f.ws.join("f2").exists());
        set.close().unwrap();
    }

    pub fn path_read_and_host_write_grants() {
        let f = Fixture::new();
        // Workspace read Gated: masked; a path-read grant shows f, never g.
        let set = f.set(ProfileConfig { workspace_read: Access::Gated, workspace_write: Access::Deny, ..f.config() });
        let exec = set.executor("k").unwrap();
        let target = f.ws.join("f").display().to_string();
        let cmd = "cat f; cat g 2>/dev/null || echo no-g";
        assert_eq!(run(&exec, &f, cmd, &[]).unwrap(), "cat: f: No such file or directory\nno-g\n");
        let token = exec
            .issue_grant(&dl(), &f.request(cmd, "filesystem.read", &target, "filesystem.path.read.v1", &target))
            .unwrap();
        assert_eq!(run(&exec, &f, cmd, &[token]).unwrap(), "old\nno-g\n");
        set.close().unwrap();
        // Host write Gated: a host-write grant opens the host entries, never the runtime closure.
        let set = f.set(ProfileConfig { host_write: Access::Gated, ..f.config() });
        let exec = set.executor("k").unwrap();
        let outside = f.root.join("host-written");
        let cmd = format!(
            "(echo h > {}) 2>/dev/null && echo host-ok || echo host-no; (echo u > /usr/sandbox-x) 2>/dev/null || echo closure-ro",
            outside.display()
        );
        assert_eq!(run(&exec, &f, &cmd, &[]).unwrap(), "host-no\nclosure-ro\n");
        let token = exec
            .issue_grant(&dl(), &f.request(&cmd, "filesystem.write", "host:*", "filesystem.host.write.v1", "host:*"))
            .unwrap();
        assert_eq!(run(&exec, &f, &cmd, &[token]).unwrap(), "host-ok\nclosure-ro\n");
        assert_eq!(fs::read_to_string(&outside).unwrap(), "h\n");
        assert!(!Path::new("/usr/sandbox-x").exists());
        set.close().unwrap();
    }

    pub fn tree_and_host_grants() {
        let f = Fixture::new();
        // Tree write on ws/sub: writes there, not in ws.
        let set = f.set(f.config());
        let exec = set.executor("k").unwrap();
        let sub = f.ws.join("sub").display().to_string();
        let cmd = "echo t > sub/new && echo in-sub; (echo t > top) 2>/dev/null || echo not-top";
        let token = exec
            .issue_grant(
                &dl(),
                &f.request(cmd, "filesystem.write", &format!("tree:{sub}"), "filesystem.tree.write.v1", &sub),
            )
            .unwrap();
        assert_eq!(run(&exec, &f, cmd, &[token]).unwrap(), "in-sub\nnot-top\n");
        assert!(f.ws.join("sub/new").exists() && !f.ws.join("top").exists());
        set.close().unwrap();

        // Tree read on a Gated root; host read on a Gated host.
        fs::create_dir_all(f.root.join("data/open")).unwrap();
        fs::create_dir_all(f.root.join("data/closed")).unwrap();
        fs::write(f.root.join("data/open/a"), "open\n").unwrap();
        fs::write(f.root.join("data/closed/b"), "closed\n").unwrap();
        let config = ProfileConfig {
            host_read: Access::Gated,
            workspace_write: Access::Allow,
            additional_roots: vec![RootAccess { path: f.root.join("data"), read: Access::Gated, write: Access::Deny }],
            ..f.config()
        };
        let set = f.set(config);
        let exec = set.executor("k").unwrap();
        let open = f.root.join("data/open").display().to_string();
        let cmd = format!("cat {open}/a; cat {}/data/closed/b 2>/dev/null || echo hidden", f.root.display());
        let token = exec
            .issue_grant(
                &dl(),
                &f.request(&cmd, "filesystem.read", &format!("tree:{open}"), "filesystem.tree.read.v1", &open),
            )
            .unwrap();
        assert_eq!(run(&exec, &f, &cmd, &[token]).unwrap(), "open\nhidden\n");
        let cmd = "ls /etc/hostname >/dev/null 2>&1 && echo host-visible || echo host-hidden";
        assert_eq!(run(&exec, &f, cmd, &[]).unwrap(), "host-hidden\n");
        let token = exec
            .issue_grant(&dl(), &f.request(cmd, "filesystem.read", "host:*", "filesystem.host.read.v1", "host:*"))
            .unwrap();
        assert_eq!(run(&exec, &f, cmd, &[token]).unwrap(), "host-visible\n");
        set.close().unwrap();
    }

    pub fn a_broad_network_grant_opens_one_port_over_tcp_only() {
        let f = Fixture::new();
        let open = TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        let (p_open, p_closed) = (open.local_addr().unwrap().port(), closed.local_addr().unwrap().port());
        let set = f.set(ProfileConfig { network: Access::Gated, ..f.config() });
        let exec = set.executor("k").unwrap();
        let probe = |port: u16| {
            format!(
                "if bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>/dev/null; then echo open-{port}; else echo shut-{port}; fi"
            )
        };
        let cmd = format!(
            "{}; {}; python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)' 2>/dev/null && echo udp || echo no-udp; echo $RES_OPTIONS",
            probe(p_open),
            probe(p_closed)
        );
        assert!(run(&exec, &f, &cmd, &[]).unwrap().starts_with(&format!("shut-{p_open}\nshut-{p_closed}\n")));
        let target = format!("tcp:*:{p_open}");
        let token = exec.issue_grant(&dl(), &f.request(&cmd, "network", "", "network.broad.v1", &target)).unwrap();
        let out = run(&exec, &f, &cmd, &[token]).unwrap();
        assert!(out.starts_with(&format!("open-{p_open}\nshut-{p_closed}\n")), "{out}");
        assert!(out.ends_with("use-vc\n"), "{out}");
        if Path::new("/usr/bin/python3").exists() || Path::new("/bin/python3").exists() {
            assert!(out.contains("no-udp"), "{out}");
        }
        set.close().unwrap();
    }

    /// A broad grant opens TCP only (red team AS, 5 December): Landlock's connect rule checks TCP
    /// sockets, and SMC falls back to TCP through a socket of the kernel's own, SCTP, DCCP,
    /// RxRPC, TIPC and RDS carry their own transports. Under the grant every family but
    /// AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK, every protocol but TCP, and the types SCTP
    /// and DCCP take by default are refused with EACCES (seccomp's answer; the kernel's own
    /// would be EAFNOSUPPORT or EPROTONOSUPPORT where a module is missing). Controls: TCP
    /// sockets (protocol 0 and 6, with flags) and a netlink socket are made.
    pub fn a_broad_grant_opens_tcp_sockets_only() {
        let f = Fixture::new();
        let open = TcpListener::bind("127.0.0.1:0").unwrap();
        let p_open = open.local_addr().unwrap().port();
        let set = f.set(ProfileConfig { network: Access::Gated, ..f.config() });
        let exec = set.executor("k").unwrap();
        let cmd = r#"python3 -c '
import errno, socket
for name, fam, typ, proto in [
    ("smc", 43, 1, 0), ("inet-smc", 2, 1, 256), ("inet-sctp", 2, 1, 132), ("inet6-sctp", 10, 5, 132),
    ("inet-seqpacket", 2, 5, 0), ("inet6-dccp", 10, 6, 0), ("inet-rdm", 2, 4, 0), ("mptcp6", 10, 1, 262),
    ("udplite", 2, 2, 136), ("rds", 21, 5, 0), ("tipc", 30, 5, 0), ("rxrpc", 33, 2, 2), ("bluetooth", 31, 1, 0),
    ("tcp", 2, 1, 0), ("tcp6-cloexec", 10, 1 | 0o2000000, 6), ("tcp-nonblock", 2, 1 | 0o4000, 6), ("netlink", 16, 3, 0),
]:
    try:
        socket.socket(fam, typ, proto).close()
        print(name, "made")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
'"#;
        let target = format!("tcp:*:{p_open}");
        let token = exec.issue_grant(&dl(), &f.request(cmd, "network", "", "network.broad.v1", &target)).unwrap();
        let out = run(&exec, &f, cmd, &[token]).unwrap();
        for refused in [
            "smc",
            "inet-smc",
            "inet-sctp",
            "inet6-sctp",
            "inet-seqpacket",
            "inet6-dccp",
            "inet-rdm",
            "mptcp6",
            "udplite",
            "rds",
            "tipc",
            "rxrpc",
            "bluetooth",
        ] {
            assert!(out.contains(&format!("{refused} EACCES\n")), "{refused}: {out}");
        }
        for made in ["tcp", "tcp6-cloexec", "tcp-nonblock", "netlink"] {
            assert!(out.contains(&format!("{made} made\n")), "{made}: {out}");
        }
        set.close().unwrap();
    }

    /// Issue 12 class 4, a route a broad grant hid: the grant opens outbound TCP to one port, but
    /// Landlock handles only connect, so a listener on any port of any host interface took
    /// connections (measured before the fix: `127.0.0.1:<free port>`, `0.0.0.0:0`, `[::1]:0` and
    /// `listen()` without `bind()` all accepted a host connection and its data): ingress from
    /// the network, and a host client of a service that is not running talks to the workload.
    /// Under the grant `listen()` is `EACCES`, and the host's connections find nothing. Controls:
    /// the granted port still connects; in a private namespace (network deny) the same listeners
    /// work and take a connection from inside; with the network allowed they take the host's.
    pub fn a_broad_grant_opens_no_listener() {
        use std::io::Write;
        let f = Fixture::new();
        let granted = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = granted.local_addr().unwrap().port();
        let free = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let script = r#"
import socket, sys, os
mode, free, granted = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ls = []
for name, fam, addr in (("explicit", socket.AF_INET, ("127.0.0.1", free)), ("any", socket.AF_INET, ("0.0.0.0", 0)),
                        ("v6", socket.AF_INET6, ("::1", 0)), ("autobind", socket.AF_INET, None)):
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        if addr: s.bind(addr)
        s.listen(1)
        ls.append((name, s, s.getsockname()[1])); print(name, "listening", flush=True)
    except OSError as e: print(name, "refused", e.errno, flush=True)
open("ports.tmp", "w").write("".join("%d %d\n" % (s.family, p) for _, s, p in ls)); os.rename("ports.tmp", "ports.txt")
for name, s, port in ls:
    if mode == "self":
        c = socket.socket(s.family); c.connect(("::1" if s.family == socket.AF_INET6 else "127.0.0.1", port)); c.send(b"fromself")
    s.settimeout(5)
    try: print(name, "accepted", s.accept()[0].recv(20).decode(), flush=True)
    except OSError as e: print(name, "no connection", e, flush=True)
try: socket.create_connection(("127.0.0.1", granted), timeout=5); print("granted connected")
except OSError as e: print("granted refused", e.errno)
"#;
        fs::write(f.ws.join("listen.py"), script).unwrap();
        // Runs the script; with `host`, connects from here to every port it listed and to `free`.
        let attempt = |exec: &Executor, mode: &str, grants: &[String], cmd: &str| {
            let _ = fs::remove_file(f.ws.join("ports.txt"));
            let ws = f.ws.clone();
            let host = mode == "host";
            let t = std::thread::spawn(move || {
                let mut reached = Vec::new();
                let deadline = Instant::now() + Duration::from_secs(30);
                while host && Instant::now() < deadline {
                    if let Ok(s) = fs::read_to_string(ws.join("ports.txt")) {
                        let mut ports: Vec<(bool, u16)> = s
                            .lines()
                            .map(|l| {
                                let (fam, port) = l.split_once(' ').unwrap();
                                (fam == "10", port.parse().unwrap())
                            })
                            .collect();
                        if !ports.contains(&(false, free)) {
                            ports.push((false, free));
                        }
                        for (v6, p) in ports {
                            let addr: std::net::SocketAddr =
                                if v6 { ([0, 0, 0, 0, 0, 0, 0, 1], p).into() } else { ([127, 0, 0, 1], p).into() };
                            if let Ok(mut c) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                                let _ = c.write_all(b"fromhost");
                                reached.push(addr);
                            }
                        }
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                reached
            });
            let out = run(exec, &f, cmd, grants).unwrap();
            (out, t.join().unwrap())
        };
        let names = ["explicit", "any", "v6", "autobind"];

        // The broad grant: every listener refused, the host reaches nothing, port A still works.
        let set = f.set(ProfileConfig { network: Access::Gated, ..f.allow_config() });
        let exec = set.executor("k").unwrap();
        let cmd = format!("python3 listen.py host {free} {a}");
        let token = exec
            .issue_grant(&dl(), &f.request(&cmd, "network", "", "network.broad.v1", &format!("tcp:*:{a}")))
            .unwrap();
        let (out, reached) = attempt(&exec, "host", &[token], &cmd);
        for n in names {
            assert!(out.contains(&format!("{n} refused 13\n")), "{n} under a broad grant: {out}");
        }
        assert!(out.contains("granted connected"), "the granted port: {out}");
        assert!(granted.accept().is_ok());
        assert_eq!(reached, Vec::new(), "the host reached a listener of the workload: {out}");
        set.close().unwrap();

        // Private namespace: the same listeners work, reached from inside.
        let set = f.set(ProfileConfig { network: Access::Deny, ..f.allow_config() });
        let exec = set.executor("k").unwrap();
        let (out, _) = attempt(&exec, "self", &[], &format!("python3 listen.py self {free} {a}"));
        for n in names {
            assert!(out.contains(&format!("{n} accepted fromself\n")), "{n} in a private namespace: {out}");
        }
        set.close().unwrap();

        // Network allow: the host's connections reach them.
        let set = f.set(ProfileConfig { network: Access::Allow, ..f.allow_config() });
        let exec = set.executor("k").unwrap();
        let (out, reached) = attempt(&exec, "host", &[], &format!("python3 listen.py host {free} {a}"));
        for n in names {
            assert!(out.contains(&format!("{n} accepted fromhost\n")), "{n} with the network allowed: {out}");
        }
        assert_eq!(reached.len(), 4, "{reached:?}: {out}");
        set.close().unwrap();
    }

    /// Issue 12 class 4c: under a broad grant to port A (Landlock's connect rule is the
    /// boundary), TCP Fast Open (sendto/sendmsg with MSG_FASTOPEN, TCP_FASTOPEN_CONNECT) reaches
    /// no other port: a loopback listener on port B gets no connection and no data. Port A still
    /// works (control), and with the network allowed the same sendto(MSG_FASTOPEN) does reach B
    /// (the control that Fast Open is real on this host). vsock and unix sockets stay refused
    /// under the grant.
    pub fn tcp_fast_open_does_not_pass_a_broad_grant() {
        use std::io::Read;
        let f = Fixture::new();
        let fastopen = fs::read_to_string("/proc/sys/net/ipv4/tcp_fastopen").unwrap_or_default();
        println!("net.ipv4.tcp_fastopen = {}", fastopen.trim());
        if fastopen.trim().parse::<u32>().unwrap_or(0) & 1 == 0 {
            println!(
                "!!!!!!!! the host's tcp_fastopen client bit is off: the Fast Open control below shows it !!!!!!!!"
            );
        }
        fs::copy(sandbox_tests::probe_bin(env!("CARGO_BIN_EXE_sandbox-probe")), f.ws.join("sandbox-probe")).unwrap();
        let open = TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        closed.set_nonblocking(true).unwrap();
        let (a, b) = (open.local_addr().unwrap(), closed.local_addr().unwrap());
        // Whatever reached B: connections and their data.
        let reached_b = || {
            let mut seen = Vec::new();
            while let Ok((mut c, _)) = closed.accept() {
                c.set_nonblocking(false).unwrap();
                c.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
                let mut data = Vec::new();
                let _ = c.read_to_end(&mut data);
                seen.push(String::from_utf8_lossy(&data).into_owned());
            }
            seen
        };
        let probe = f.ws.join("sandbox-probe").display().to_string();
        let cmd = format!(
            "{probe} tfo-sendto={b} tfo-connect={b} tfo-sendto={a} connect={a} socket=40:1 socket=1:1 socketpair=1"
        );
        let set = f.set(ProfileConfig { network: Access::Gated, ..f.config() });
        let exec = set.executor("k").unwrap();
        let target = format!("tcp:*:{}", a.port());
        let token = exec.issue_grant(&dl(), &f.request(&cmd, "network", "", "network.broad.v1", &target)).unwrap();
        let out = run(&exec, &f, &cmd, &[token]).unwrap();
        let v = sandbox_tests::verdicts(out.as_bytes());
        let get = |k: &str| v.get(k).cloned().unwrap_or_else(|| panic!("no verdict for {k}: {out}"));
        for key in [format!("tfo-sendto={b}"), format!("tfo-sendto={a}")] {
            assert_eq!(get(&key).errno, Some(95), "{key}: refused like a host without Fast Open: {out}");
        }
        let c = get(&format!("tfo-connect={b}"));
        assert!(!c.ok && c.detail.starts_with("setsockopt:") && c.errno == Some(95), "{c:?}");
        assert!(get(&format!("connect={a}")).ok, "the granted port works: {out}");
        assert!(open.accept().is_ok());
        assert_eq!(get("socket=40:1").errno, Some(13), "vsock under a broad grant: {out}");
        assert_eq!(get("socket=1:1").errno, Some(13), "unix sockets under a broad grant: {out}");
        assert!(get("socketpair=1").ok);
        assert_eq!(reached_b(), Vec::<String>::new(), "port B was reached through Fast Open");
        set.close().unwrap();

        // Network allow: the same Fast Open call reaches B with its data.
        let set = f.set(ProfileConfig { network: Access::Allow, ..f.config() });
        let exec = set.executor("k").unwrap();
        let out =
            String::from_utf8_lossy(&exec.run_command(&dl(), &f.ws, &format!("{probe} tfo-sendto={b}")).unwrap().bytes)
                .into_owned();
        let v = sandbox_tests::verdicts(out.as_bytes());
        assert!(v[&format!("tfo-sendto={b}")].ok, "{out}");
        assert_eq!(reached_b(), vec![String::from("probe")], "Fast Open is not real here: {out}");
        set.close().unwrap();
    }

    pub fn a_swapped_target_is_target_changed_and_nothing_runs() {
        let f = Fixture::new();
        let set = f.set(f.config());
        let exec = set.executor("k").unwrap();
        let target = f.ws.join("f").display().to_string();
        let marker = f.ws.join("ran").display().to_string();
        let cmd = format!("touch {marker}");
        let req = f.request(&cmd, "filesystem.write", &target, "filesystem.path.write.v1", &target);
        // Replaced by another file.
        let token = exec.issue_grant(&dl(), &req).unwrap();
        fs::remove_file(f.ws.join("f")).unwrap();
        fs::write(f.ws.join("f"), "impostor\n").unwrap();
        let got = run(&exec, &f, &cmd, &[token]);
        assert!(matches!(got, Err(Error::GrantTargetChanged { .. })), "{got:?}");
        assert!(!Path::new(&marker).exists());
        // Replaced by a symlink.
        let token = exec.issue_grant(&dl(), &req).unwrap();
        fs::remove_file(f.ws.join("f")).unwrap();
        std::os::unix::fs::symlink(f.ws.join("g"), f.ws.join("f")).unwrap();
        assert!(matches!(run(&exec, &f, &cmd, &[token]), Err(Error::GrantTargetChanged { .. })));
        assert!(!Path::new(&marker).exists());
        // A symlink at issue resolves (§13.2 step 4): the grant is for the file it points to.
        assert!(exec.issue_grant(&dl(), &req).is_ok());
        set.close().unwrap();
    }

    pub fn every_issue_error_has_a_case() {
        let f = Fixture::new();
        let set = f.set(ProfileConfig { command: Access::Gated, network: Access::Gated, ..f.config() });
        let exec = set.executor("k").unwrap();
        let cmd = "true";
        let ok = f.request(cmd, "command.execute", "", "command.start.v1", cmd);
        let issue = |r: &GrantRequest| exec.issue_grant(&dl(), r);
        assert!(matches!(exec.issue_grant(&Deadline::at(Instant::now()), &ok), Err(Error::DeadlineExceeded { .. })));
        for (r, want) in [
            (GrantRequest { execution_id: String::new(), ..ok.clone() }, "malformed"),
            (GrantRequest { execution_id: String::from(" x"), ..ok.clone() }, "malformed"),
            (GrantRequest { command: String::from("true\0"), ..ok.clone() }, "malformed"),
            (GrantRequest { cwd: f.ws.join("missing"), ..ok.clone() }, "malformed"),
            (GrantRequest { class: String::from("command.start.v9"), ..ok.clone() }, "unsupported"),
            (GrantRequest { kind: String::from("network"), ..ok.clone() }, "malformed"),
            (GrantRequest { target: String::from("false"), ..ok.clone() }, "wrong-command"),
            (f.request(cmd, "network", "", "network.broad.v1", "tcp:*:0"), "malformed"),
            (f.request(cmd, "network", "", "network.broad.v1", "tcp:host:80"), "malformed"),
            (f.request(cmd, "network", "", "network.proxy-target.v1", "tcp:Example.com:443"), "malformed"),
            // A wildcard or a name ending in a number is not one exact target (issue 17).
            (f.request(cmd, "network", "", "network.proxy-target.v1", "tcp:*.example.com:443"), "malformed"),
            (f.request(cmd, "network", "", "network.proxy-target.v1", "tcp:127.1:443"), "malformed"),
            (f.request(cmd, "filesystem.write", "relative", "filesystem.path.write.v1", "relative"), "malformed"),
            (f.request(cmd, "filesystem.write", "/a/../b", "filesystem.path.write.v1", "/a/../b"), "malformed"),
            (
                f.request(
                    cmd,
                    "filesystem.write",
                    &f.ws.join("g").display().to_string(),
                    "filesystem.path.write.v1",
                    &f.ws.join("f").display().to_string(),
                ),
                "malformed",
            ),
            // A directory is not a path target; a file is not a tree target.
            (
                f.request(
                    cmd,
                    "filesystem.write",
                    &f.ws.join("sub").display().to_string(),
                    "filesystem.path.write.v1",
                    &f.ws.join("sub").display().to_string(),
                ),
                "unsupported",
            ),
            (
                f.request(
                    cmd,
                    "filesystem.write",
                    &format!("tree:{}", f.ws.join("f").display()),
                    "filesystem.tree.write.v1",
                    &f.ws.join("f").display().to_string(),
                ),
                "unsupported",
            ),
            // Read is Allow here: nothing to grant. Host write is Deny: never.
            (
                f.request(
                    cmd,
                    "filesystem.read",
                    &f.ws.join("f").display().to_string(),
                    "filesystem.path.read.v1",
                    &f.ws.join("f").display().to_string(),
                ),
                "unsupported",
            ),
            (f.request(cmd, "filesystem.write", "host:*", "filesystem.host.write.v1", "host:*"), "denied"),
            (GrantRequest { expiry_unix_ms: in_ms(-1), ..ok.clone() }, "expired"),
            (GrantRequest { expiry_unix_ms: in_ms(16 * 60 * 1000), ..ok.clone() }, "expired"),
        ] {
            let got = issue(&r);
            let matches = match want {
                "malformed" => matches!(got, Err(Error::GrantMalformed { .. })),
                "unsupported" => matches!(got, Err(Error::GrantUnsupported { .. })),
                "wrong-command" => matches!(got, Err(Error::GrantWrongCommand)),
                "denied" => matches!(got, Err(Error::GrantDenied { .. })),
                "expired" => matches!(got, Err(Error::GrantExpired)),
                _ => false,
            };
            assert!(matches, "{r:?}: expected {want}, got {got:?}");
        }
        // Issue 17: a gated executor has the egress proxy, so a proxy-target grant is issued
        // (linux_egress uses one); where unix sockets stay open, nothing but the proxy leaving
        // cannot be claimed, and the grant is unsupported.
        let proxy = f.request(cmd, "network", "", "network.proxy-target.v1", "tcp:example.com:443");
        assert!(issue(&proxy).is_ok(), "{:?}", issue(&proxy));
        let open = f.set(ProfileConfig {
            command: Access::Gated,
            network: Access::Gated,
            unix_sockets: Access::Allow,
            ..f.config()
        });
        let open_exec = open.executor("k").unwrap();
        assert!(!open_exec.guarantees().target_network);
        let got = open_exec.issue_grant(&dl(), &proxy);
        assert!(matches!(got, Err(Error::GrantUnsupported { .. })), "{got:?}");
        open.close().unwrap();
        set.close().unwrap();
        assert!(matches!(issue(&ok), Err(Error::ExecutorClosed { .. })));
    }

    pub fn every_verification_error_has_a_case_and_consumes_nothing() {
        let f = Fixture::new();
        let set = f.set(ProfileConfig { command: Access::Gated, ..f.config() });
        let exec = set.executor("k").unwrap();
        let other = set.executor("other").unwrap();
        let cmd = "echo fine";
        let req = f.request(cmd, "command.execute", "", "command.start.v1", cmd);
        let token = exec.issue_grant(&dl(), &req).unwrap();
        let t = std::slice::from_ref(&token);
        // Wrong bindings: each fails and leaves the token unused.
        assert!(matches!(
            exec.run_command_with_grants(&dl(), "exec-2", &f.ws, cmd, t),
            Err(Error::GrantWrongExecution)
        ));
        assert!(matches!(
            exec.run_command_with_grants(&dl(), "exec-1", &f.ws, "echo other", t),
            Err(Error::GrantWrongCommand)
        ));
        let sub = f.ws.join("sub");
        assert!(matches!(
            exec.run_command_with_grants(&dl(), "exec-1", &sub, cmd, t),
            Err(Error::GrantWrongWorkingDirectory)
        ));
        assert!(matches!(other.run_command_with_grants(&dl(), "exec-1", &f.ws, cmd, t), Err(Error::GrantBadMac)));
        for bad in ["", "sbx1", "sbx1.a", "sbx2.a.b", "sbx1.a.b.c", "sbx1.!!.b", "sbx1.e30.!!"] {
            let got = exec.run_command_with_grants(&dl(), "exec-1", &f.ws, cmd, &[bad]);
            assert!(matches!(got, Err(Error::GrantMalformed { .. })), "{bad:?}: {got:?}");
        }
        // Every single-character change of the token is rejected, without a panic.
        let bytes = token.as_bytes();
        for i in 0..bytes.len() {
            for replacement in [b'A', b'-', b'.', b'_'] {
                if bytes[i] == replacement {
                    continue;
                }
                let mut t2 = bytes.to_vec();
                t2[i] = replacement;
                let t2 = String::from_utf8(t2).unwrap();
                let got = exec.run_command_with_grants(&dl(), "exec-1", &f.ws, cmd, &[t2.as_str()]);
                assert!(matches!(got, Err(Error::GrantMalformed { .. } | Error::GrantBadMac)), "position {i}: {got:?}");
            }
        }
        // Truncated and random tokens.
        for n in [1, token.len() / 2, token.len() - 1] {
            assert!(exec.run_command_with_grants(&dl(), "exec-1", &f.ws, cmd, &[&token[..n]]).is_err());
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200 {
            let len = usize::try_from(seed % 200).unwrap();
            let text: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    char::from(u8::try_from(seed % 95).unwrap() + 32)
                })
                .collect();
            assert!(exec.run_command_with_grants(&dl(), "exec-1", &f.ws, cmd, &[text.as_str()]).is_err());
        }
        // After all that the token is still unused and works with the right binding, once.
        assert_eq!(run(&exec, &f, cmd, t).unwrap(), "fine\n");
        assert!(matches!(run(&exec, &f, cmd, t), Err(Error::GrantReplay)));
        // An expired token.
        let short = exec.issue_grant(&dl(), &GrantRequest { expiry_unix_ms: in_ms(200), ..req.clone() }).unwrap();
        std::thread::sleep(Duration::from_millis(400));
        assert!(matches!(run(&exec, &f, cmd, &[short]), Err(Error::GrantExpired)));
        // A grant for something else but no command.start: still GrantRequired.
        let w = f.ws.join("f").display().to_string();
        let write =
            exec.issue_grant(&dl(), &f.request(cmd, "filesystem.write", &w, "filesystem.path.write.v1", &w)).unwrap();
        assert!(matches!(run(&exec, &f, cmd, &[write]), Err(Error::GrantRequired)));
        // Close revokes everything.
        let late = exec.issue_grant(&dl(), &req).unwrap();
        set.close().unwrap();
        assert!(matches!(run(&exec, &f, cmd, &[late]), Err(Error::ExecutorClosed { .. })));
    }

    pub fn command_deny_wins_and_effective_access_shows_write_grants() {
        let f = Fixture::new();
        let set = f.set(ProfileConfig { command: Access::Deny, ..f.config() });
        let exec = set.executor("k").unwrap();
        assert!(matches!(run(&exec, &f, "true", &[String::from("sbx1.a.b")]), Err(Error::GrantDenied { .. })));
        set.close().unwrap();
        let set = Arc::new(f.set(ProfileConfig { workspace_write: Access::Deny, ..f.config() }));
        let exec = set.executor("k").unwrap();
        let p = exec
            .prepare_process(
                &dl(),
                ProcessOptions {
                    cwd: f.ws.clone(),
                    command: String::from("true"),
                    execution_id: String::from("exec-1"),
                    ..ProcessOptions::default()
                },
            )
            .unwrap();
        assert_eq!(p.effective_access().kind(), ProcessAccessKind::ReadOnly);
        drop(p);
        drop(exec);
        let set = f.set(f.config());
        let exec = set.executor("k").unwrap();
        let w = f.ws.join("f").display().to_string();
        let cmd = "echo x > f";
        let token =
            exec.issue_grant(&dl(), &f.request(cmd, "filesystem.write", &w, "filesystem.path.write.v1", &w)).unwrap();
        let p = exec
            .prepare_process(
                &dl(),
                ProcessOptions {
                    cwd: f.ws.clone(),
                    command: cmd.to_owned(),
                    execution_id: String::from("exec-1"),
                    grants: vec![token],
                    ..ProcessOptions::default()
                },
            )
            .unwrap();
        assert_eq!(p.effective_access().kind(), ProcessAccessKind::ScopedWrite);
        assert_eq!(p.effective_access().write_paths(), &[f.ws.join("f")]);
        assert_eq!(p.start(&dl()).unwrap().wait(&dl()).unwrap().status, ExitStatus::Code(0));
        assert_eq!(fs::read_to_string(f.ws.join("f")).unwrap(), "x\n");
        set.close().unwrap();
    }
    /// Red team AX, 6 December: a grant binds the real cwd and is checked against it before the
    /// spawn, but the init entered the cwd by its name, following symlinks; a concurrent swap of
    /// one component for a symlink in between ran the granted command elsewhere (in `/etc`). The
    /// init now enters the resolved path component by component, following none: every run is
    /// in the granted directory or refused, never elsewhere. Control: once the swaps end, a
    /// granted run is in its directory.
    pub fn a_granted_cwd_swapped_for_a_symlink_is_never_entered_elsewhere() {
        use std::sync::Mutex;
        use std::sync::atomic::{AtomicBool, Ordering};
        let f = Fixture::new();
        let race = f.ws.join("race");
        let (a, parked) = (race.join("a"), race.join("a.d"));
        fs::create_dir_all(&a).unwrap();
        let elsewhere = f.root.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let set = f.set(ProfileConfig { command: Access::Gated, ..f.allow_config() });
        let exec = set.executor("k").unwrap();
        // Each round of swaps is made under the lock, and leaves `a` a directory: a grant issued
        // under it binds `a` itself.
        let lock = Arc::new(Mutex::new(()));
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (lock, stop, a, parked, elsewhere) =
                (Arc::clone(&lock), Arc::clone(&stop), a.clone(), parked.clone(), elsewhere.clone());
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let _held = lock.lock().unwrap();
                    fs::rename(&a, &parked).unwrap();
                    std::os::unix::fs::symlink(&elsewhere, &a).unwrap();
                    fs::remove_file(&a).unwrap();
                    fs::rename(&parked, &a).unwrap();
                    rounds += 1;
                }
                rounds
            })
        };
        let cmd = "pwd -P";
        let (mut inside, mut refused, mut outside) = (0, 0, Vec::new());
        for _ in 0..120 {
            let token = {
                let _held = lock.lock().unwrap();
                let req =
                    GrantRequest { cwd: a.clone(), ..f.request(cmd, "command.execute", "", "command.start.v1", cmd) };
                exec.issue_grant(&dl(), &req).unwrap()
            };
            match exec.run_command_with_grants(&dl(), "exec-1", &a, cmd, &[token]) {
                Ok(out) => {
                    let text = String::from_utf8_lossy(&out.bytes).trim().to_owned();
                    if text == a.display().to_string() || text == parked.display().to_string() {
                        inside += 1;
                    } else {
                        outside.push(text);
                    }
                }
                Err(_) => refused += 1,
            }
        }
        stop.store(true, Ordering::SeqCst);
        let rounds = swapper.join().unwrap();
        println!("swaps {rounds}; runs in the granted directory {inside}, refused {refused}, elsewhere {outside:?}");
        assert!(outside.is_empty(), "a granted command ran outside its directory: {outside:?}");
        assert!(rounds > 0, "the swaps never ran");
        // Control: with the swaps over, a granted run is in its directory (under load the
        // swaps may leave no window for one during the race).
        let req = GrantRequest { cwd: a.clone(), ..f.request(cmd, "command.execute", "", "command.start.v1", cmd) };
        let token = exec.issue_grant(&dl(), &req).unwrap();
        let out = exec.run_command_with_grants(&dl(), "exec-1", &a, cmd, &[token]).unwrap();
        assert_eq!(String::from_utf8_lossy(&out.bytes).trim(), a.display().to_string(), "control");
        set.close().unwrap();
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if !sandbox_tests::privileged("linux_grants") {
            return std::process::ExitCode::SUCCESS;
        }
        use linux::*;
        sandbox_tests::run_tests(&[
            ("the_gate_round_trip_and_single_use", the_gate_round_trip_and_single_use),
            (
                "an_argv_grant_never_opens_the_shell_command_of_its_text",
                an_argv_grant_never_opens_the_shell_command_of_its_text,
            ),
            (
                "a_single_use_token_presented_concurrently_runs_once",
                a_single_use_token_presented_concurrently_runs_once,
            ),
            (
                "a_path_write_grant_opens_that_file_and_nothing_beside_it",
                a_path_write_grant_opens_that_file_and_nothing_beside_it,
            ),
            ("tree_and_host_grants", tree_and_host_grants),
            ("path_read_and_host_write_grants", path_read_and_host_write_grants),
            ("a_broad_network_grant_opens_one_port_over_tcp_only", a_broad_network_grant_opens_one_port_over_tcp_only),
            ("a_broad_grant_opens_tcp_sockets_only", a_broad_grant_opens_tcp_sockets_only),
            ("tcp_fast_open_does_not_pass_a_broad_grant", tcp_fast_open_does_not_pass_a_broad_grant),
            ("a_broad_grant_opens_no_listener", a_broad_grant_opens_no_listener),
            (
                "a_swapped_target_is_target_changed_and_nothing_runs",
                a_swapped_target_is_target_changed_and_nothing_runs,
            ),
            ("every_issue_error_has_a_case", every_issue_error_has_a_case),
            (
                "every_verification_error_has_a_case_and_consumes_nothing",
                every_verification_error_has_a_case_and_consumes_nothing,
            ),
            (
                "command_deny_wins_and_effective_access_shows_write_grants",
                command_deny_wins_and_effective_access_shows_write_grants,
            ),
            (
                "a_granted_cwd_swapped_for_a_symlink_is_never_entered_elsewhere",
                a_granted_cwd_swapped_for_a_symlink_is_never_entered_elsewhere,
            ),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
