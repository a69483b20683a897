//! Issue 14, the creation guard of the Linux init: a protected name that does not exist cannot
//! be created from inside, at any depth and by any creating call (open with O_CREAT, mkdir,
//! mknod, symlink, link, rename), and nothing of it reaches the host; ordinary work next to it
//! (files, directories, links, renames, umask, git) is untouched, and a profile that opts out
//! of the default list creates the names freely. Needs root or the rootless mode.
//!
//! `harness = false`: `main` calls `sandbox::init()` first, as every embedder must.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::fs;
    use std::os::unix::fs::FileTypeExt;
    use std::path::Path;
    use std::time::Instant;

    use sandbox::{Access, Executor, ExecutorSet, ExitStatus, Profile, ProfileConfig, Protection, RootAccess};
    use sandbox_tests::TestDirs;

    pub use sandbox_tests::deadline as dl;

    fn set_of(dirs: &TestDirs, config: ProfileConfig) -> ExecutorSet {
        ExecutorSet::new(&dl(), &Profile::new(config).unwrap(), dirs.set_options(2)).unwrap()
    }

    /// Runs `script` with `sh -c` in `cwd`; (exit code, combined output).
    fn sh_in(exec: &Executor, cwd: &Path, script: &str) -> (i32, String) {
        let o = exec.run_argv(&dl(), cwd, &["/bin/sh", "-c", script]).unwrap();
        let code = match o.status {
            ExitStatus::Code(c) => c,
            other => panic!("{script}: {other:?}"),
        };
        (code, String::from_utf8_lossy(&o.bytes).into_owned())
    }

    fn sh_ok(exec: &Executor, cwd: &Path, script: &str) -> String {
        let (code, out) = sh_in(exec, cwd, script);
        assert_eq!(code, 0, "{script}: {out}");
        out
    }

    /// What the scripts of the tests where the host acts during a run share: waiting for the
    /// host's marker, writing a file, a libc call's error as an exception, and trying each of a
    /// list of attacks (printing `<name> ok` or `<name> <errno name>`).
    const PY_HOST_STEPS: &str = r##"
import ctypes, errno, os, subprocess, time
libc = ctypes.CDLL(None, use_errno=True)
def wait_for(name):
    end = time.time() + 30
    while not os.path.exists(name) and time.time() < end:
        time.sleep(0.02)
def write(t, flags):
    fd = os.open(t, flags, 0o755)
    try:
        os.write(fd, b"# planted\n")
    finally:
        os.close(fd)
def checked(r):
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
def exchange(a, b):
    checked(libc.renameat2(-100, a.encode(), -100, b.encode(), 2))
def attempt(attacks):
    for name, attack in attacks:
        try:
            attack()
            print(name, "ok")
        except OSError as e:
            print(name, errno.errorcode[e.errno])
"##;

    /// Runs `PY_HOST_STEPS` and `script` with python in the workspace of `exec` while `host`
    /// acts on the host (given the workspace); the output, once both are done and the script
    /// exited 0.
    fn while_host_acts(exec: &Executor, ws: &Path, script: &str, host: impl FnOnce(&Path) + Send + 'static) -> String {
        fs::write(ws.join("g.py"), format!("{PY_HOST_STEPS}{script}")).unwrap();
        let at = ws.to_path_buf();
        let host = std::thread::spawn(move || host(&at));
        let (code, out) = sh_in(exec, ws, "/usr/bin/python3 g.py");
        host.join().unwrap();
        println!("{out}");
        assert_eq!(code, 0, "{out}");
        out
    }

    /// Runs `PY_HOST_STEPS` and `script` in the workspace of `d` with the allow profile, the host
    /// doing nothing meanwhile (see [`while_host_acts`]).
    fn attacks(d: &TestDirs, script: &str) -> String {
        let set = set_of(d, d.allow_config());
        let exec = set.executor("k").unwrap();
        while_host_acts(&exec, &d.ws, script, |_| {})
    }

    /// Runs the host's git in `dir`; it must succeed.
    fn git_in(dir: &Path, args: &[&str]) {
        let o = std::process::Command::new("git").args(args).current_dir(dir).output().unwrap();
        assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }

    /// Each of `names` printed `<name> EACCES` (see `PY_HOST_STEPS`).
    fn assert_refused(out: &str, names: &[&str]) {
        for name in names {
            assert!(out.contains(&format!("{name} EACCES\n")), "{name}: {out}");
        }
    }

    /// The attacks: each prints `<name>=<exit code>` and its error text.
    const ATTACKS: &[(&str, &str)] = &[
        ("redirect", "echo x > .envrc"),
        ("append", "echo x >> .mcp.json"),
        ("mkdir", "mkdir .vscode"),
        ("mkdir-p-deep", "mkdir -p deep/er/.vscode"),
        ("touch-deep", "touch sub/deeper/.envrc"),
        ("abs-path", "touch \"$PWD/sub/.envrc\""),
        ("symlink", "ln -s /etc/passwd .envrc"),
        ("hardlink", "ln existing .envrc"),
        ("rename", "mv file .envrc"),
        ("rename-deep", "mv file sub/deeper/.envrc"),
        ("claude-commands", "mkdir -p .claude && mkdir .claude/commands"),
        ("claude-commands-file", "mkdir -p .claude && echo x > .claude/commands"),
        ("leading-part", "mkdir x && mkdir x/commands && mv x .claude2 && mv .claude2 .claude/commands"),
        ("place-leading", "mkdir -p z/y/commands && mv z/y z/.claude"),
        ("mkfifo", "mkfifo .envrc"),
        ("dangling", "ln -s .envrc link && echo x > link"),
        ("dangling-abs", "ln -s \"$PWD/sub/.vscode\" link2 && echo x > link2"),
        ("through-dev-fd", "exec 7<sub && echo x > /dev/fd/7/.envrc"),
        ("through-proc-self", "exec 8<sub && echo x > /proc/self/fd/8/.envrc"),
        ("dotdot", "cd sub/deeper && echo x > ../../sub/./.envrc"),
        ("trailing-slash", "mkdir .vscode/"),
        // The private /tmp is exempt from the names (a control below), but what is made there
        // cannot be carried into the workspace: another mount, so mv copies, and the copy's
        // .vscode is refused.
        ("from-tmp", "mkdir -p /tmp/mv/.vscode && mv /tmp/mv moved && test -d moved/.vscode"),
        // The init's own descriptors and memory stay out of reach (it is not dumpable; the
        // guard resolves these paths for the workload, never as itself).
        ("init-status-pipe", "echo 'exited 7' >> /proc/1/fd/3"),
        ("init-memory", ": >> /proc/1/mem"),
        ("init-cwd", "echo x > /proc/1/cwd/init-file"),
        ("python-open", "/usr/bin/python3 -c 'import os; os.open(\".envrc\", os.O_CREAT|os.O_WRONLY)'"),
        ("python-mknod", "/usr/bin/python3 -c 'import os; os.mknod(\".mcp.json\")'"),
        (
            "python-exchange",
            "touch plain && /usr/bin/python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True); r=l.renameat2(-100,b\"plain\",-100,b\"sub/.envrc\",2); os._exit(0 if r==0 else 1)'",
        ),
    ];

    /// With the default list: every attack fails with "Permission denied" and leaves nothing on
    /// the host; the positive controls of the same run work.
    pub fn protected_names_cannot_be_created_at_any_depth() {
        let d = TestDirs::new("sbx-guard");
        fs::write(d.ws.join("existing"), "E\n").unwrap();
        fs::write(d.ws.join("file"), "F\n").unwrap();
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        sh_ok(&exec, &d.ws, "mkdir -p sub/deeper && test -d sub/deeper");
        let mut script = String::new();
        for (name, cmd) in ATTACKS {
            script.push_str(&format!(
                "({cmd}) >/tmp/err 2>&1; echo \"{name}=$? $(head -c 200 /tmp/err | tr '\\n' ' ')\"; "
            ));
        }
        let out = sh_ok(&exec, &d.ws, &script);
        for (name, _) in ATTACKS {
            let line =
                out.lines().find(|l| l.starts_with(&format!("{name}="))).unwrap_or_else(|| panic!("no {name}: {out}"));
            assert!(!line.starts_with(&format!("{name}=0")), "attack {name} succeeded: {out}");
            // Failures the guard made say so (the python exchange exits 1 without text).
            if !matches!(*name, "python-exchange") {
                assert!(line.contains("Permission denied"), "{name} failed otherwise: {line}");
            }
        }
        for p in [
            "init-file",
            ".envrc",
            ".mcp.json",
            ".vscode",
            "deep/er/.vscode",
            "sub/deeper/.envrc",
            "sub/.envrc",
            ".claude/commands",
            "z/.claude",
            "sub/.vscode",
        ] {
            assert!(fs::symlink_metadata(d.ws.join(p)).is_err(), "{p} exists on the host: {out}");
        }
        assert_eq!(fs::read_to_string(d.ws.join("file")).unwrap(), "F\n");

        // Positive controls in the same executor.
        let ok = sh_ok(
            &exec,
            &d.ws,
            "set -e; echo a > f1 && mkdir d1 && ! mkdir d1 2>/tmp/e && grep -q 'File exists' /tmp/e && mkdir -p d1 && ln -s f1 s1 && ln f1 h1 && mv h1 h2 && cat s1 h2; \
             echo b > existing && cat existing; \
             ln -s new-target dangling-ok && echo c > dangling-ok && cat new-target; \
             set -C; echo d > excl && ! (echo e > excl) 2>/dev/null; set +C; cat excl; \
             umask 077 && touch um && mkdir umd && stat -c %a um umd; umask 022; \
             mkdir -p .claude && echo ok > .claude/notes.md && mkfifo fifo && (cat fifo > fifo.out &) && echo via-fifo > fifo && sleep 0.2 && cat fifo.out; \
             cd sub/deeper && echo g > rel && mkdir reldir && mv rel ../rel2 && cd ../.. && cat sub/rel2; \
             echo h > /dev/stdout; echo h2 > /proc/self/fd/1; echo i > /dev/null; echo tmp > /tmp/t && cat /tmp/t; echo exempt > /tmp/.envrc && cat /tmp/.envrc; \
             /usr/bin/python3 -c 'import os; fd=os.open(\"py\", os.O_CREAT|os.O_WRONLY|os.O_EXCL, 0o640); os.write(fd, b\"p\"); os.close(fd); print(oct(os.stat(\"py\").st_mode & 0o777))'; \
             echo controls-ok",
        );
        for want in [
            "a\na\n",
            "b\n",
            "c\n",
            "d\n",
            "600\n700\n",
            "via-fifo\n",
            "g\n",
            "h\nh2\n",
            "tmp\n",
            "exempt\n",
            "0o640\n",
        ] {
            assert!(ok.contains(want), "{want:?} missing: {ok}");
        }
        assert!(ok.ends_with("controls-ok\n"), "{ok}");
        assert_eq!(fs::read_to_string(d.ws.join("new-target")).unwrap(), "c\n");
        assert_eq!(fs::read_to_string(d.ws.join("sub/rel2")).unwrap(), "g\n");
        assert_eq!(fs::read_to_string(d.ws.join(".claude/notes.md")).unwrap(), "ok\n");
    }

    /// Binds a stream socketpair's end (seccomp allows those) to each name; prints
    /// `<name>=<errno or 0>`, then the controls: data over the pair, an abstract address, a fifo.
    const BIND: &str = r#"
import os, socket, sys
for n in sys.argv[1:]:
    s, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(n)
        print(n + "=0")
    except OSError as e:
        print(n + "=" + str(e.errno))
a, b = socket.socketpair()
a.sendall(b"pair")
print("pair", b.recv(4).decode())
a.bind("\0sbx-abstract-" + str(os.getpid()))
print("abstract bound")
os.mkfifo("fifo-ok")
print("fifo made")
"#;

    /// With `unix_sockets: deny` (the default) `bind()` of a socketpair's end to a path is
    /// refused everywhere (Landlock withholds make_sock): the creation guard does not watch
    /// `bind`, so otherwise a socket inode would appear at a protected name. The pair, abstract
    /// addresses and fifos keep working; with `unix_sockets: allow` an ordinary name binds.
    pub fn a_socket_cannot_be_bound_to_a_path_while_unix_sockets_are_denied() {
        let d = TestDirs::new("sbx-guard");
        fs::write(d.ws.join("bind.py"), BIND).unwrap();
        fs::create_dir_all(d.ws.join(".git/objects")).unwrap(); // a git dir whose hooks are missing
        fs::write(d.ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let names = [".envrc", ".mcp.json", ".gitmodules", ".git/hooks", "sub/.envrc", "plain.sock", "sub/plain.sock"];
        let run = |exec: &Executor, extra: &[String]| {
            let mut argv: Vec<String> = ["/usr/bin/python3", "bind.py"].map(String::from).to_vec();
            argv.extend(names.iter().map(|n| (*n).to_owned()));
            argv.extend(extra.iter().cloned());
            let o = exec.run_argv(&dl(), &d.ws, &argv).unwrap();
            let out = String::from_utf8_lossy(&o.bytes).into_owned();
            assert_eq!(o.status, ExitStatus::Code(0), "{out}");
            assert!(out.ends_with("pair pair\nabstract bound\nfifo made\n"), "controls: {out}");
            fs::remove_file(d.ws.join("fifo-ok")).unwrap();
            out
        };
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        sh_ok(&exec, &d.ws, "mkdir sub");
        let private = [String::from("/tmp/t.sock"), exec.home_dir().join("h.sock").display().to_string()];
        let out = run(&exec, &private);
        for n in names.iter().copied().chain(private.iter().map(String::as_str)) {
            assert!(out.contains(&format!("{n}=13\n")), "{n} was not refused with EACCES: {out}");
        }
        for n in names {
            assert!(fs::symlink_metadata(d.ws.join(n)).is_err(), "{n} exists on the host: {out}");
        }
        assert!(fs::symlink_metadata(exec.home_dir().join("h.sock")).is_err());
        set.close().unwrap();

        // Positive control: unix sockets allowed, an ordinary name binds (a socket on the host).
        let set = set_of(&d, ProfileConfig { unix_sockets: Access::Allow, ..d.allow_config() });
        let exec = set.executor("k").unwrap();
        let out = run(&exec, &[]);
        for n in ["plain.sock", "sub/plain.sock"] {
            assert!(out.contains(&format!("{n}=0\n")), "{n} did not bind: {out}");
            assert!(fs::symlink_metadata(d.ws.join(n)).unwrap().file_type().is_socket(), "{n}");
        }
        set.close().unwrap();
    }

    /// The path lives in the caller's memory, which another thread rewrites while the call
    /// waits: the guard decides and acts on one copy, so a name flipping between an allowed
    /// one and `.envrc` is created only as the allowed one (a guard letting the kernel continue
    /// the call after its check would lose this race).
    const FLIP: &str = r#"
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(16)
ok, bad = b"okname\0", b".envrc\0"
stop = []
def flip():
    while not stop:
        ctypes.memmove(buf, ok, 7)
        ctypes.memmove(buf, bad, 7)
def clean():
    # A torn read makes a mix of both names: remove whatever was made.
    for n in os.listdir("."):
        if n != "flip.py":
            (os.rmdir if os.path.isdir(n) else os.unlink)(n)
t = threading.Thread(target=flip, daemon=True)
t.start()
made = refused = 0
envrc = False
for i in range(3000):
    r = libc.mkdir(buf, 0o755)
    fd = libc.open(buf, os.O_CREAT | os.O_WRONLY, 0o644)
    if fd >= 0:
        os.close(fd)
    made += (r == 0) + (fd >= 0)
    refused += (r != 0) + (fd < 0)
    if os.path.lexists(".envrc"):
        envrc = True
        break
    clean()
stop.append(1)
print("made", made > 0, "refused", refused > 0, "envrc", envrc)
"#;

    pub fn a_path_rewritten_during_the_call_is_decided_once() {
        let d = TestDirs::new("sbx-guard");
        fs::write(d.ws.join("flip.py"), FLIP).unwrap();
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let out = sh_ok(&exec, &d.ws, "/usr/bin/python3 flip.py");
        assert_eq!(out, "made True refused True envrc False\n");
        assert!(!d.ws.join(".envrc").exists());
    }

    /// git keeps working next to the guard: init, add, commit in a fresh subdirectory.
    pub fn git_works_under_the_guard() {
        let d = TestDirs::new("sbx-guard");
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let out = sh_ok(
            &exec,
            &d.ws,
            "set -e; mkdir repo && cd repo && /usr/bin/git init -q . && echo one > a.txt && /usr/bin/git add a.txt && \
             /usr/bin/git -c user.name=t -c user.email=t@example.invalid commit -q -m first && \
             /usr/bin/git checkout -q -b topic && echo two >> a.txt && \
             /usr/bin/git -c user.name=t -c user.email=t@example.invalid commit -q -am second && \
             /usr/bin/git log --oneline | wc -l && ! (echo x > .envrc) 2>/dev/null && echo git-ok && \
             ln -s a.txt link && /usr/bin/git add link && \
             /usr/bin/git -c user.name=t -c user.email=t@example.invalid commit -q -m link && \
             cd .. && /usr/bin/git clone -q repo clone && test -L clone/link && \
             echo symlinks=$(/usr/bin/git -C clone config core.symlinks || echo unset) && \
             ! ln -s /etc/passwd repo/.git/tAbc123 2>/dev/null && ! ln -s testing repo/.git/logs/tAbc123 2>/dev/null",
        );
        // git's test of symlink support passed at `init` and `clone` (a failed one writes
        // `core.symlinks = false` and checks symlinks out as files); links like it elsewhere in
        // a `.git` are refused.
        assert!(out.ends_with("2\ngit-ok\nsymlinks=unset\n"), "{out}");
        assert!(fs::symlink_metadata(d.ws.join("clone/link")).unwrap().file_type().is_symlink());
        assert!(d.ws.join("repo/.git/HEAD").exists());
        assert!(!d.ws.join("repo/.envrc").exists());
    }

    /// The opt-out: no default list, no guard; the names are created like any other.
    pub fn the_opt_out_creates_the_names() {
        let d = TestDirs::new("sbx-guard");
        let config = ProfileConfig {
            protected_paths: Protection { defaults: false, ..Protection::default() },
            ..d.allow_config()
        };
        let set = set_of(&d, config);
        let exec = set.executor("k").unwrap();
        sh_ok(&exec, &d.ws, "echo x > .envrc && mkdir .vscode && mkdir -p .claude/commands && ln -s .envrc .mcp.json");
        assert_eq!(fs::read_to_string(d.ws.join(".envrc")).unwrap(), "x\n");
        assert!(d.ws.join(".vscode").is_dir() && d.ws.join(".claude/commands").is_dir());
    }

    /// The workload starts only once the init serves the guard. Its first act sees the init's
    /// guard thread (two threads in `/proc/1/status`; one without a guard, the control), and a
    /// fork bomb started at once under a small pids bound meets its deadline every time. Before,
    /// the workload could run before that thread existed, and a bomb that reached the bound first
    /// made the thread's creation fail (EAGAIN) and the run with it ("helper: protect guard:
    /// thread", once in CI's fork bomb test in `linux_abuse`).
    pub fn the_guard_is_served_before_the_workload_starts() {
        let d = TestDirs::new("sbx-guard");
        let threads = |config: ProfileConfig| -> Vec<String> {
            let set = set_of(&d, config);
            let exec = set.executor("k").unwrap();
            (0..10).map(|_| sh_ok(&exec, &d.ws, "grep '^Threads:' /proc/1/status")).collect()
        };
        for out in threads(d.allow_config()) {
            assert_eq!(out, "Threads:\t2\n");
        }
        let off = ProfileConfig {
            protected_paths: Protection { defaults: false, ..Protection::default() },
            ..d.allow_config()
        };
        for out in threads(off) {
            assert_eq!(out, "Threads:\t1\n");
        }
        let profile = Profile::new(d.allow_config()).unwrap();
        let set = ExecutorSet::new(&dl(), &profile, d.set_options(2).pids_max(16)).unwrap();
        let exec = set.executor("k").unwrap();
        for i in 0..5 {
            let deadline = sandbox::Deadline::after(std::time::Duration::from_secs(1));
            let r = exec.run_argv(&deadline, &d.ws, &["/bin/sh", "-c", "(f() { f | f & }; f); while :; do :; done"]);
            assert!(matches!(r, Err(sandbox::Error::DeadlineExceeded { .. })), "bomb {i}: {r:?}");
        }
        // Control: the executor runs work again.
        assert_eq!(sh_ok(&exec, &d.ws, "echo ok"), "ok\n");
    }

    /// Two opens the guard serves without creating anything (a red team, 5 December). An
    /// `O_CREAT` open of a FIFO reached through `/proc/self/fd/N` waits for the FIFO's other end:
    /// it waited on the guard's own thread, so the run's outcome was lost (a kept container
    /// reported the deadline although the workload had exited 0). Now it waits on a thread of
    /// its own: the run ends with its own status, and the next run works. And `O_PATH|O_CREAT`
    /// (which creates nothing) gave EBADF: it now gets a descriptor, or ENOENT for a missing name,
    /// which stays missing.
    pub fn opens_that_create_nothing_leave_the_guard_serving() {
        let d = TestDirs::new("sbx-guard");
        fs::create_dir(d.ws.join("sub")).unwrap();
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let script = r#"
import errno, os, threading, time
for name in ["/tmp", "sub"]:
    fd = os.open(name, os.O_PATH | os.O_CREAT)
    print(name, "o_path", fd >= 0)
try:
    os.open("missing", os.O_PATH | os.O_CREAT)
    print("missing", "opened")
except OSError as e:
    print("missing", errno.errorcode[e.errno], os.path.lexists("missing"))
os.mkfifo("/tmp/pp")
fd = os.open("/tmp/pp", os.O_PATH)
threading.Thread(target=lambda: os.open("/proc/self/fd/%d" % fd, os.O_RDONLY | os.O_CREAT), daemon=True).start()
time.sleep(0.5)
print("main exits", flush=True)
os._exit(3)
"#;
        fs::write(d.ws.join("fifo.py"), script).unwrap();
        for round in 0..3 {
            let t0 = Instant::now();
            let deadline = sandbox::Deadline::after(std::time::Duration::from_secs(20));
            let o = exec.run_argv(&deadline, &d.ws, &["/usr/bin/python3", "fifo.py"]).unwrap();
            let out = String::from_utf8_lossy(&o.bytes).into_owned();
            println!("round {round}: {:?} in {:?}: {out}", o.status, t0.elapsed());
            assert_eq!(o.status, ExitStatus::Code(3), "round {round}: {out}");
            assert_eq!(out, "/tmp o_path True\nsub o_path True\nmissing ENOENT False\nmain exits\n", "round {round}");
            assert!(t0.elapsed() < std::time::Duration::from_secs(10), "round {round}: {:?}", t0.elapsed());
            // Control: the executor runs work again.
            let t1 = Instant::now();
            assert_eq!(sh_ok(&exec, &d.ws, "echo ok"), "ok\n");
            println!("round {round}: the next run in {:?}", t1.elapsed());
        }
        assert!(!d.ws.join("missing").exists());
    }

    /// A protected file the host replaces or creates while a run goes on (a red team, 5
    /// December). The spawn binds each existing entry read-only, but the kernel detaches a
    /// mount whose file another mount namespace renames over (git writes `config.lock` and
    /// renames it over `config`; editors save so), and a file the host creates during the run
    /// was never bound: before, the workload then wrote `.git/config` (`core.fsmonitor`, run by
    /// the host's next `git status`), `.envrc` and a hook the host had just installed. Now the
    /// guard refuses opening a protected file for writing (`O_WRONLY`, `O_RDWR`, `O_TRUNC`,
    /// also through `/proc/self/fd`), `truncate`, and linking or renaming it elsewhere; the
    /// host's files keep their content. Controls in the same run: an unprotected file beside
    /// them (`.git/description`) is written, a new file is made, and O_TMPFILE works.
    pub fn protected_files_the_host_replaces_or_creates_during_a_run_stay_read_only() {
        let d = TestDirs::new("sbx-guard");
        let git = |args: &[&str]| git_in(&d.ws, args);
        git(&["init", "-q", "."]);
        fs::remove_dir_all(d.ws.join(".git/hooks")).unwrap();
        fs::write(d.ws.join(".mcp.json"), "{}\n").unwrap();
        let script = r##"
import errno, os, time
open("ready", "w").close()
end = time.time() + 30
while not os.path.exists("done") and time.time() < end:
    time.sleep(0.02)
def write(flags):
    def f(t):
        fd = os.open(t, flags)
        try:
            os.write(fd, b"# planted\n")
        finally:
            os.close(fd)
    return f
def reopen(t):
    fd = os.open(t, os.O_RDONLY)
    try:
        os.close(os.open("/proc/self/fd/%d" % fd, os.O_WRONLY | os.O_APPEND))
    finally:
        os.close(fd)
def link(t):
    os.link(t, "second-name")
def tmpfile(t):
    fd = os.open(".", os.O_TMPFILE | os.O_RDWR)
    os.write(fd, b"x")
    os.close(fd)
ways = [("append", write(os.O_WRONLY | os.O_APPEND)), ("rdwr", write(os.O_RDWR)),
        ("trunc", lambda t: os.close(os.open(t, os.O_RDONLY | os.O_TRUNC))),
        ("truncate", lambda t: os.truncate(t, 0)), ("reopen", reopen), ("link", link),
        ("rename", lambda t: os.rename(t, "moved"))]
for t in [".git/config", ".envrc", ".git/hooks/pre-commit", ".mcp.json", ".git/config.lock", ".git/description", "new.txt"]:
    for name, way in ways + [("tmpfile", tmpfile)]:
        if t in (".git/description", "new.txt") and name in ("link", "rename"):
            continue
        try:
            way(t)
            print(t, name, "ok")
        except OSError as e:
            print(t, name, errno.errorcode[e.errno])
    if t == ".git/description":
        open("new.txt", "w").close()
"##;
        fs::write(d.ws.join("w.py"), script).unwrap();
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let ws = d.ws.clone();
        let host = std::thread::spawn(move || {
            sandbox_tests::wait_for_marker(&ws.join("ready"));
            // git rewrites its config by renaming a new file over it.
            git_in(&ws, &["config", "user.name", "host"]);
            // An editor's save of the bound `.mcp.json`, and files the host creates.
            fs::write(ws.join(".mcp.json.tmp"), "{\"host\": 1}\n").unwrap();
            fs::rename(ws.join(".mcp.json.tmp"), ws.join(".mcp.json")).unwrap();
            fs::write(ws.join(".envrc"), "echo host\n").unwrap();
            fs::create_dir(ws.join(".git/hooks")).unwrap();
            fs::write(ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
            // git's lock file, as its `git config` holds it before renaming it over the config:
            // a descriptor opened on it would write the next config.
            fs::write(ws.join(".git/config.lock"), "[core]\n").unwrap();
            fs::write(ws.join("done"), "").unwrap();
        });
        let (code, out) = sh_in(&exec, &d.ws, "/usr/bin/python3 w.py");
        host.join().unwrap();
        println!("{out}");
        assert_eq!(code, 0, "{out}");
        for t in [".git/config", ".envrc", ".git/hooks/pre-commit", ".mcp.json", ".git/config.lock"] {
            for way in ["append", "rdwr", "trunc", "truncate", "reopen", "link", "rename"] {
                assert!(out.contains(&format!("{t} {way} EACCES\n")), "{t} {way}: {out}");
            }
        }
        for way in ["append", "rdwr", "trunc", "truncate", "reopen", "tmpfile"] {
            assert!(out.contains(&format!(".git/description {way} ok\n")), "control {way}: {out}");
            assert!(out.contains(&format!("new.txt {way} ok\n")), "control {way}: {out}");
        }
        let config = fs::read_to_string(d.ws.join(".git/config")).unwrap();
        assert!(config.contains("name = host") && !config.contains("planted"), "{config}");
        assert_eq!(fs::read_to_string(d.ws.join(".envrc")).unwrap(), "echo host\n");
        assert_eq!(fs::read_to_string(d.ws.join(".mcp.json")).unwrap(), "{\"host\": 1}\n");
        assert_eq!(fs::read_to_string(d.ws.join(".git/hooks/pre-commit")).unwrap(), "#!/bin/sh\nexit 0\n");
        assert_eq!(fs::read_to_string(d.ws.join(".git/config.lock")).unwrap(), "[core]\n");
        assert!(!d.ws.join("second-name").exists() && !d.ws.join("moved").exists());
        // The controls wrote, then truncated, the unprotected file.
        assert_eq!(fs::metadata(d.ws.join(".git/description")).unwrap().len(), 0);
    }

    /// Git directories the host makes while a run goes on (a red team, 5 December): the scan at
    /// spawn protects the config, hooks, `commondir` and gitfiles of the repositories that exist
    /// then, and a waiting workload wrote those of a repository the host cloned or made during
    /// the run, of a worktree it added (`commondir`), of a submodule's new gitfile; the host's
    /// next `git status` ran the planted `core.fsmonitor`. The guard now refuses writing or
    /// making such files in any `.git` this run did not make (a `worktrees` directory the run
    /// made in the host's `.git` does not make the host's worktree its own; a worktree named
    /// `logs` is no exemption; legacy remotes and a new `modules` count). Control in the same run: a
    /// repository the workload makes itself is written as before (`git init`, `git config`, a
    /// hook).
    pub fn git_directories_the_host_makes_during_a_run_are_protected() {
        let d = TestDirs::new("sbx-guard");
        let script = r##"
open("ready", "w").close()
wait_for("stage1")
# A `worktrees` the run would make in the host's new `.git` before the host adds a worktree
# there (which made the host's worktree the run's own in a first version; now refused: the
# directory is the host's, made during the run).
attempt([("worktrees-first", lambda: os.mkdir("proj/.git/worktrees"))])
open("stage2", "w").close()
wait_for("done")
attacks = [
    ("config", lambda: write("proj/.git/config", os.O_WRONLY | os.O_APPEND)),
    ("config-lock", lambda: write("proj/.git/config.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
    ("hook", lambda: write("proj/.git/hooks/pre-commit", os.O_WRONLY | os.O_CREAT)),
    ("commondir", lambda: write("proj/.git/worktrees/wt/commondir", os.O_WRONLY | os.O_TRUNC)),
    ("gitfile", lambda: write("sub/.git", os.O_WRONLY | os.O_TRUNC)),
    ("gitfile-rename", lambda: (write("gf", os.O_WRONLY | os.O_CREAT), os.rename("gf", "sub/.git"))),
    ("dotgit-rename", lambda: os.rename("proj/.git", "proj/old-git")),
    ("worktree-move", lambda: os.rename("proj/.git/worktrees/wt", "proj/.git/worktrees/wt-old")),
    ("worktree-exchange", lambda: exchange("proj/.git/worktrees/mine", "proj/.git/worktrees/wt")),
    ("nested-repo", lambda: os.mkdir("proj/inner/.git")),
    ("nested-gitfile", lambda: write("proj/inner/.git", os.O_WRONLY | os.O_CREAT)),
    ("bare-head", lambda: write("proj/inner/HEAD", os.O_WRONLY | os.O_CREAT)),
    ("worktree-named-logs", lambda: write("proj/.git/worktrees/logs/commondir", os.O_WRONLY | os.O_TRUNC)),
    ("legacy-remote", lambda: (os.makedirs("proj/.git/remotes", exist_ok=True), write("proj/.git/remotes/origin", os.O_WRONLY | os.O_CREAT))),
    ("modules", lambda: os.mkdir("proj/.git/modules")),
]
# A new worktree directory is the run's own (`git worktree add` makes one).
os.mkdir("proj/.git/worktrees/mine")
write("proj/.git/worktrees/mine/commondir", os.O_WRONLY | os.O_CREAT)
os.mkdir("proj/inner")
print("new-worktree-ok")
attempt(attacks)
r = subprocess.run("git init -q own && git -C own config user.name me && echo '#!/bin/sh' > own/.git/hooks/post-commit && echo own-ok",
                   shell=True, capture_output=True, text=True)
print(r.stdout.strip(), r.stderr.strip())
"##;
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let out = while_host_acts(&exec, &d.ws, script, |ws| {
            sandbox_tests::wait_for_marker(&ws.join("ready"));
            git_in(ws, &["init", "-q", "proj"]);
            fs::write(ws.join("stage1"), "").unwrap();
            sandbox_tests::wait_for_marker(&ws.join("stage2"));
            for wt in ["wt", "logs"] {
                fs::create_dir_all(ws.join("proj/.git/worktrees").join(wt)).unwrap();
                fs::write(ws.join("proj/.git/worktrees").join(wt).join("commondir"), "../..\n").unwrap();
            }
            fs::create_dir(ws.join("sub")).unwrap();
            fs::write(ws.join("sub/.git"), "gitdir: ../proj/.git\n").unwrap();
            fs::write(ws.join("done"), "").unwrap();
        });
        assert_refused(
            &out,
            &[
                "worktrees-first",
                "config",
                "config-lock",
                "hook",
                "commondir",
                "gitfile",
                "gitfile-rename",
                "dotgit-rename",
                "worktree-move",
                "worktree-exchange",
                "nested-repo",
                "nested-gitfile",
                "bare-head",
                "worktree-named-logs",
                "legacy-remote",
                "modules",
            ],
        );
        assert!(out.contains("own-ok") && out.contains("new-worktree-ok"), "controls: {out}");
        let config = fs::read_to_string(d.ws.join("proj/.git/config")).unwrap();
        assert!(!config.contains("planted"), "{config}");
        assert!(!d.ws.join("proj/.git/hooks/pre-commit").exists() && !d.ws.join("proj/.git/config.lock").exists());
        assert_eq!(fs::read_to_string(d.ws.join("proj/.git/worktrees/wt/commondir")).unwrap(), "../..\n");
        assert_eq!(fs::read_to_string(d.ws.join("sub/.git")).unwrap(), "gitdir: ../proj/.git\n");
        assert!(fs::read_to_string(d.ws.join("own/.git/config")).unwrap().contains("name = me"));
    }

    /// What the host made or had is not removed or moved away to free its name for the run's
    /// own (a red team, 5 December): a worktree directory the host added during the run,
    /// emptied and removed, was made again as the run's own with a `commondir` of its choosing;
    /// `worktrees` renamed away did the same to a worktree of the spawn; a directory holding
    /// the host's new clone, renamed, left its name to a repository the run made; a protected
    /// file the host created went. Nor does a symlink come into a `.git` as a second name of an
    /// `O_PATH` descriptor (`AT_EMPTY_PATH`, `/proc/self/fd/N`). Controls in the same run: the
    /// run's own repositories and worktree directories, plain files and directories, are
    /// removed and moved, and a symlink is linked elsewhere by descriptor.
    pub fn what_the_host_made_is_not_removed_or_moved_away() {
        let d = TestDirs::new("sbx-guard");
        let script = r##"
def linkat(ofd, old, new, flags):
    checked(libc.linkat(ofd, old.encode(), -100, new.encode(), flags))
os.symlink("/etc/passwd", "lnk")
lfd = os.open("lnk", os.O_PATH | os.O_NOFOLLOW)
# An empty directory, which the host's `git init --bare` takes.
os.mkdir("pre.git")
open("ready", "w").close()
wait_for("done")
AT_SYMLINK_FOLLOW, AT_EMPTY_PATH = 0x400, 0x1000
def unreadable(path, then):
    # Mode 0 for `then` (the host's test, unprivileged in the rootless mode, reads it after).
    os.chmod(path, 0)
    try:
        then()
    finally:
        os.chmod(path, 0o755)
def launder():
    # The host's bare repository moved onto a worktree name in a `.git` of the run's (which
    # made what came there the run's own), then back.
    os.makedirs("own9/.git/worktrees")
    os.chmod("remote.git", 0o300)
    try:
        os.rename("remote.git", "own9/.git/worktrees/foo")
    finally:
        os.chmod("remote.git", 0o755)
attacks = [
    ("unlink-commondir", lambda: os.unlink("proj/.git/worktrees/wt/commondir")),
    ("rmdir-worktree", lambda: (os.unlink("proj/.git/worktrees/wt2/HEAD"), os.rmdir("proj/.git/worktrees/wt2"))),
    ("rename-worktrees", lambda: os.rename("proj/.git/worktrees", "proj/.git/wt-old")),
    ("rename-worktrees-of-spawn", lambda: os.rename("old/.git/worktrees", "old/.git/wt-old")),
    ("unlink-gitfile", lambda: os.unlink("sub/.git")),
    ("rmdir-dotgit", lambda: os.rmdir("proj/.git")),
    ("unlink-config", lambda: os.unlink("proj/.git/config")),
    ("unlink-hook", lambda: os.unlink("proj/.git/hooks/pre-push")),
    ("unlink-envrc", lambda: os.unlink(".envrc")),
    ("move-repo", lambda: os.rename("proj", "proj-old")),
    ("move-repo-deep", lambda: os.rename("outer", "outer-old")),
    ("move-gitfile-holder", lambda: os.rename("sub", "sub-old")),
    ("move-repo-of-spawn", lambda: os.rename("keep", "keep-old")),
    ("move-unreadable-holder", lambda: unreadable("outer/inner", lambda: os.rename("outer", "outer-old"))),
    ("link-empty-path", lambda: linkat(lfd, "", "proj/.git/x", AT_EMPTY_PATH)),
    ("link-proc-fd", lambda: linkat(-100, "/proc/self/fd/%d" % lfd, "proj/.git/y", AT_SYMLINK_FOLLOW)),
    # A bare repository and a separate git directory the host made during the run.
    ("bare-config", lambda: write("remote.git/config", os.O_WRONLY | os.O_APPEND)),
    ("bare-config-lock", lambda: write("remote.git/config.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
    ("bare-hook", lambda: write("remote.git/hooks/pre-receive", os.O_WRONLY | os.O_CREAT)),
    ("bare-unlink-config", lambda: os.unlink("remote.git/config")),
    ("bare-move", lambda: os.rename("remote.git", "remote-old.git")),
    ("bare-holder-move", lambda: os.rename("remotes", "remotes-old")),
    ("sep-hook", lambda: write("sep.git/hooks/post-checkout", os.O_WRONLY | os.O_CREAT)),
    ("sep-move", lambda: os.rename("sep.git", "sep-old.git")),
    # Its `HEAD` moved away, then made again by the run: still the host's.
    ("bare-head-moved", lambda: (os.rename("remote.git/HEAD", "remote.git/HEAD.x"), write("remote.git/hooks/post-receive", os.O_WRONLY | os.O_CREAT))),
    ("bare-head-remade", lambda: (write("remote.git/HEAD", os.O_WRONLY | os.O_CREAT), write("remote.git/config", os.O_WRONLY | os.O_APPEND))),
    ("bare-in-runs-directory", lambda: (os.rename("pre.git/HEAD", "pre.git/HEAD.x"), write("pre.git/HEAD", os.O_WRONLY | os.O_CREAT), write("pre.git/config", os.O_WRONLY | os.O_APPEND))),
    # A worktree of a bare repository (no `.git` in its path; its `HEAD` removed first).
    ("bare-worktree-commondir", lambda: write("remote.git/worktrees/wt/commondir", os.O_WRONLY | os.O_TRUNC)),
    ("bare-worktree-headless", lambda: (os.unlink("remote.git/worktrees/wt/HEAD"), write("remote.git/worktrees/wt/commondir", os.O_WRONLY | os.O_TRUNC))),
    ("bare-worktree-move", lambda: os.rename("remote.git/worktrees/wt", "remote.git/worktrees/wt-old")),
    ("move-unreadable-repo", lambda: unreadable("solo", lambda: os.rename("solo", "solo-old"))),
    ("launder-via-worktrees", launder),
]
attempt(attacks)
controls = """
set -e
git init -q own
mv own own2
rm -rf own2
mkdir -p own3/in
git init -q own3/in/r
mv own3 own4
rm -rf own4
mkdir proj/.git/worktrees/mine
echo x > proj/.git/worktrees/mine/HEAD
rm -r proj/.git/worktrees/mine
mkdir -p plain/a
echo x > plain/a/f
mv plain plain2
rm -rf plain2
echo x > f
mv f g
rm g
git init -q --bare mine.git
git -C mine.git config a.b c
echo '#!/bin/sh' > mine.git/hooks/post-receive
mkdir mine
git -C mine init -q
git -C mine -c user.name=u -c user.email=u@x commit -q --allow-empty -m m
git -C mine push -q ../mine.git HEAD:refs/heads/main
mv mine.git mine2.git
rm -rf mine2.git
echo controls-ok
"""
r = subprocess.run(controls, shell=True, capture_output=True, text=True)
print(r.stdout.strip(), r.stderr.strip())
try:
    linkat(lfd, "", "lnk2", AT_EMPTY_PATH)
    print("link-elsewhere-ok", os.readlink("lnk2"))
except OSError as e:
    print("link-elsewhere", errno.errorcode[e.errno])
"##;
        let git = |args: &[&str]| git_in(&d.ws, args);
        // Of the spawn: a repository with a worktree, and one nested in a plain directory.
        git(&["init", "-q", "old"]);
        fs::create_dir_all(d.ws.join("old/.git/worktrees/swt")).unwrap();
        fs::write(d.ws.join("old/.git/worktrees/swt/commondir"), "../..\n").unwrap();
        fs::create_dir(d.ws.join("keep")).unwrap();
        git(&["init", "-q", "keep/inner"]);
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let out = while_host_acts(&exec, &d.ws, script, |ws| {
            sandbox_tests::wait_for_marker(&ws.join("ready"));
            for repo in ["proj", "outer/inner", "solo"] {
                fs::create_dir_all(ws.join(repo)).unwrap();
                git_in(ws, &["init", "-q", repo]);
            }
            fs::write(ws.join("proj/.git/hooks/pre-push"), "#!/bin/sh\n").unwrap();
            fs::create_dir_all(ws.join("proj/.git/worktrees/wt")).unwrap();
            fs::write(ws.join("proj/.git/worktrees/wt/commondir"), "../..\n").unwrap();
            fs::create_dir_all(ws.join("proj/.git/worktrees/wt2")).unwrap();
            fs::write(ws.join("proj/.git/worktrees/wt2/HEAD"), "ref: refs/heads/x\n").unwrap();
            fs::create_dir(ws.join("sub")).unwrap();
            fs::write(ws.join("sub/.git"), "gitdir: ../proj/.git/worktrees/wt\n").unwrap();
            for args in [
                &["init", "-q", "--bare", "remote.git"][..],
                &["init", "-q", "--bare", "pre.git"][..],
                &["init", "-q", "--bare", "remotes/r.git"][..],
                &["init", "-q", "--separate-git-dir", "sep.git", "wtree"][..],
            ] {
                git_in(ws, args);
            }
            fs::create_dir_all(ws.join("remote.git/worktrees/wt")).unwrap();
            for (f, text) in
                [("HEAD", "ref: refs/heads/wt\n"), ("commondir", "../..\n"), ("gitdir", "/elsewhere/.git\n")]
            {
                fs::write(ws.join("remote.git/worktrees/wt").join(f), text).unwrap();
            }
            fs::write(ws.join(".envrc"), "echo host\n").unwrap();
            fs::write(ws.join("done"), "").unwrap();
        });
        assert_refused(
            &out,
            &[
                "unlink-commondir",
                "rmdir-worktree",
                "rename-worktrees",
                "rename-worktrees-of-spawn",
                "unlink-gitfile",
                "rmdir-dotgit",
                "unlink-config",
                "unlink-hook",
                "unlink-envrc",
                "move-repo",
                "move-repo-deep",
                "move-gitfile-holder",
                "move-repo-of-spawn",
                "move-unreadable-holder",
                "link-empty-path",
                "link-proc-fd",
                "bare-config",
                "bare-config-lock",
                "bare-hook",
                "bare-unlink-config",
                "bare-move",
                "bare-holder-move",
                "sep-hook",
                "sep-move",
                "bare-head-moved",
                "bare-head-remade",
                "bare-in-runs-directory",
                "bare-worktree-commondir",
                "bare-worktree-headless",
                "bare-worktree-move",
                "move-unreadable-repo",
                "launder-via-worktrees",
            ],
        );
        assert!(out.contains("controls-ok") && out.contains("link-elsewhere-ok /etc/passwd"), "controls: {out}");
        for kept in [
            "proj/.git/worktrees/wt/commondir",
            "proj/.git/worktrees/wt2",
            "old/.git/worktrees/swt/commondir",
            "sub/.git",
            "proj/.git/config",
            "proj/.git/hooks/pre-push",
            ".envrc",
            "outer/inner/.git",
            "keep/inner/.git",
            "remote.git/config",
            "remotes/r.git/config",
            "sep.git/config",
            "solo/.git",
            "remote.git/worktrees/wt",
        ] {
            assert!(d.ws.join(kept).exists(), "{kept}: {out}");
        }
        assert_eq!(fs::read_to_string(d.ws.join("remote.git/worktrees/wt/commondir")).unwrap(), "../..\n");
        for planted in ["remote.git/config", "sep.git/config", "wtree/.git", "pre.git/config"] {
            assert!(!fs::read_to_string(d.ws.join(planted)).unwrap().contains("planted"), "{planted}");
        }
        for gone in [
            "proj/.git/x",
            "proj/.git/y",
            "proj-old",
            "own2",
            "plain2",
            "proj/.git/worktrees/mine",
            "remote.git/hooks/pre-receive",
            "remote.git/hooks/post-receive",
            "sep.git/hooks/post-checkout",
            "mine2.git",
        ] {
            assert!(fs::symlink_metadata(d.ws.join(gone)).is_err(), "{gone}: {out}");
        }
    }

    /// What the host is making during a run stays the host's (a red team, 5 December): while
    /// its git sets up a git directory (templates first, then the config, then `HEAD`) that
    /// directory is none by its contents, and a config or hook the workload put there won the
    /// race 5 times in 6 (`git init --bare`, `git init --separate-git-dir`). In a directory the
    /// host made during the run, the workload makes no `.git`, `HEAD`, config, `commondir`,
    /// `hooks`, `worktrees` or `modules`, and nothing in a `hooks`: first against a directory
    /// the host leaves half made, then against the host's real `git init --bare` racing a
    /// workload that tries without pause. Controls: other files in the host's new directory,
    /// and the same names in a directory the workload made.
    pub fn what_the_host_is_making_during_a_run_stays_the_hosts() {
        let d = TestDirs::new("sbx-guard");
        let script = r##"
# An empty directory of the run's, into which the host's git will set a repository up.
os.mkdir("runs.git")
open("ready", "w").close()
wait_for("done")
attacks = [
    # Once the host's git began (its templates there), a config is the host's to make, in a
    # directory that existed before the run and in one the run made.
    ("existing-config", lambda: write("existing.git/config", os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
    ("runs-config", lambda: write("runs.git/config", os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
    ("runs-hook", lambda: write("runs.git/hooks/pre-receive", os.O_WRONLY | os.O_CREAT)),
    ("config", lambda: write("half.git/config", os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
    ("config-lock", lambda: write("half.git/config.lock", os.O_WRONLY | os.O_CREAT)),
    ("hook", lambda: write("half.git/hooks/pre-receive", os.O_WRONLY | os.O_CREAT)),
    ("head", lambda: write("half.git/HEAD", os.O_WRONLY | os.O_CREAT)),
    ("commondir", lambda: write("half.git/commondir", os.O_WRONLY | os.O_CREAT)),
    ("worktrees", lambda: os.mkdir("half.git/worktrees")),
    ("dotgit", lambda: os.mkdir("scaffold/.git")),
    ("gitfile", lambda: write("scaffold/.git", os.O_WRONLY | os.O_CREAT)),
    ("hooks-dir", lambda: os.mkdir("scaffold/hooks")),
    ("moved-in", lambda: (os.makedirs("mine/hooks", exist_ok=True), os.rename("mine/hooks", "scaffold/hooks"))),
    # The host's new directory exchanged for, or replaced by, a repository of the workload's,
    # removed, or moved with a directory above it.
    ("exchange", lambda: exchange("W", "half.git")),
    ("replace-empty", lambda: os.rename("W", "empty")),
    ("rmdir", lambda: os.rmdir("empty")),
    ("move-holder", lambda: os.rename("pre", "pre-old")),
]
subprocess.run(["git", "init", "-q", "--bare", "W"], check=True)
attempt(attacks)
write("scaffold/notes.txt", os.O_WRONLY | os.O_CREAT)
os.mkdir("W2")
exchange("W", "W2")
os.rename("W", "W3")
os.rmdir("W3")
os.makedirs("mine2/hooks")
write("mine2/config", os.O_WRONLY | os.O_CREAT)
write("mine2/hooks/x", os.O_WRONLY | os.O_CREAT)
os.mkdir("mine2/.git")
print("controls-ok")
# The host's own `git init --bare` while the workload tries without pause.
open("race-go", "w").close()
tries = {}
end = time.time() + 20
while not os.path.exists("race.git/HEAD") and time.time() < end:
    for t in ("race.git/config", "race.git/hooks/pre-receive", "race.git/HEAD", "exchange"):
        try:
            if t == "exchange":
                exchange("W", "race.git")
            else:
                write(t, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            tries["made " + t] = tries.get("made " + t, 0) + 1
        except OSError as e:
            tries[errno.errorcode[e.errno]] = tries.get(errno.errorcode[e.errno], 0) + 1
print("race", sorted(tries.items()))
"##;
        for dir in ["pre", "existing.git"] {
            fs::create_dir(d.ws.join(dir)).unwrap();
        }
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let out = while_host_acts(&exec, &d.ws, script, |ws| {
            sandbox_tests::wait_for_marker(&ws.join("ready"));
            for dir in ["empty", "pre/new"] {
                fs::create_dir(ws.join(dir)).unwrap();
            }
            // Half made, as `git init` leaves it after its templates.
            for half in ["half.git", "existing.git", "runs.git"] {
                fs::create_dir_all(ws.join(half).join("hooks")).unwrap();
                fs::write(ws.join(half).join("description"), "Unnamed repository\n").unwrap();
            }
            fs::create_dir(ws.join("scaffold")).unwrap();
            fs::write(ws.join("done"), "").unwrap();
            sandbox_tests::wait_for_marker(&ws.join("race-go"));
            git_in(ws, &["init", "-q", "--bare", "race.git"]);
        });
        assert_refused(
            &out,
            &[
                "existing-config",
                "runs-config",
                "runs-hook",
                "config",
                "config-lock",
                "hook",
                "head",
                "commondir",
                "worktrees",
                "dotgit",
                "gitfile",
                "hooks-dir",
                "moved-in",
                "exchange",
                "replace-empty",
                "rmdir",
                "move-holder",
            ],
        );
        assert!(out.contains("controls-ok"), "controls: {out}");
        assert!(!out.contains("made "), "{out}");
        assert!(!d.ws.join("race.git/hooks/pre-receive").exists(), "{out}");
        assert!(!fs::read_to_string(d.ws.join("race.git/config")).unwrap().contains("planted"), "{out}");
        assert!(d.ws.join("mine2/.git").is_dir() && d.ws.join("scaffold/notes.txt").is_file());
        assert!(!d.ws.join("half.git/config").exists() && !d.ws.join("scaffold/.git").exists());
    }

    /// An inode number the run frees (a directory it made and removed, or replaced by
    /// renaming another over it) goes, on ext4, to the next directory anyone makes beside it:
    /// by number and birth time the host's new directory could be one the run made, and the
    /// workload would set a git directory up in it (hooks, config) before the host's git did.
    /// Each round frees a number, the host makes its directory as soon as it sees that, and the
    /// workload tries. The host's directory getting the number the run freed is the control
    /// that the case arose (required on ext4). On this kernel (multigrain timestamps, Linux
    /// 6.13 and later) the birth times differ as well once the guard has read the removed
    /// directory's attributes; on older kernels they came from the same coarse tick, and only
    /// the generation and the record of what the run removed tell the directories apart (see
    /// the unit test `guard::tests::a_number_given_out_again_names_another_directory`). Four
    /// more rounds remove a `.git` of the run's own, and the host makes its `.git` there with
    /// the number: its config and hooks are the host's (the run's own `.git`s are no longer
    /// held open for the whole run, which capped a run at 256 repositories).
    pub fn a_number_the_run_freed_names_nothing_of_the_hosts() {
        const ROUNDS: usize = 8;
        let d = TestDirs::new("sbx-guard");
        let script = r##"
for i in range(8):
    open("m%d" % i, "w").close()
    if i % 2 == 0:
        os.mkdir("x%d" % i)
        freed = os.stat("x%d" % i).st_ino
        os.rmdir("x%d" % i)
    else:
        os.mkdir("y%d" % i)
        os.mkdir("x%d" % i)
        freed = os.stat("x%d" % i).st_ino
        os.rename("y%d" % i, "x%d" % i)
    print("freed-ino", i, freed)
    # A rename brings no inode into being: the marker takes no number from the host.
    os.rename("m%d" % i, "freed%d" % i)
    while not os.path.exists("r%d.git" % i):
        pass
    attempt([
        ("hooks-dir-%d" % i, lambda: os.mkdir("r%d.git/hooks" % i)),
        ("config-%d" % i, lambda: write("r%d.git/config" % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
        ("head-%d" % i, lambda: write("r%d.git/HEAD" % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
    ])
    # Control: a directory of the run's own takes them.
    os.makedirs("own%d.git/hooks" % i)
    write("own%d.git/config" % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    open("tried%d" % i, "w").close()
# A `.git` of the run's own, removed: the host's `.git` made there next (with its number) is the
# host's.
for i in range(8, 12):
    os.mkdir("o%d" % i)
    open("m%d" % i, "w").close()
    os.mkdir("o%d/.git" % i)
    freed = os.stat("o%d/.git" % i).st_ino
    os.rmdir("o%d/.git" % i)
    print("freed-ino", i, freed)
    os.rename("m%d" % i, "freed%d" % i)
    while not os.path.exists("o%d/.git" % i):
        pass
    attempt([
        ("own-config-%d" % i, lambda: write("o%d/.git/config" % i, os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
        ("own-hooks-%d" % i, lambda: os.mkdir("o%d/.git/hooks" % i)),
    ])
    open("tried%d" % i, "w").close()
print("controls-ok")
"##;
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let out = while_host_acts(&exec, &d.ws, script, move |ws| {
            use std::os::unix::fs::MetadataExt;
            for i in 0..ROUNDS + 4 {
                let freed = ws.join(format!("freed{i}"));
                let end = Instant::now() + std::time::Duration::from_secs(30);
                while !freed.exists() && Instant::now() < end {
                    std::thread::yield_now();
                }
                let dir = if i < ROUNDS { ws.join(format!("r{i}.git")) } else { ws.join(format!("o{i}/.git")) };
                fs::create_dir(&dir).unwrap();
                tx.send(fs::metadata(&dir).unwrap().ino()).unwrap();
                sandbox_tests::wait_for_marker(&ws.join(format!("tried{i}")));
            }
        });
        let hosts: Vec<u64> = rx.iter().collect();
        let mut reused = 0;
        for (i, ino) in hosts.iter().enumerate() {
            reused += usize::from(out.contains(&format!("freed-ino {i} {ino}\n")));
            if i < ROUNDS {
                assert_refused(&out, &[&format!("hooks-dir-{i}"), &format!("config-{i}"), &format!("head-{i}")]);
                assert!(!d.ws.join(format!("r{i}.git/config")).exists(), "{out}");
            } else {
                assert_refused(&out, &[&format!("own-config-{i}"), &format!("own-hooks-{i}")]);
                assert!(!d.ws.join(format!("o{i}/.git/config")).exists(), "{out}");
            }
        }
        assert!(out.contains("controls-ok"), "{out}");
        println!("the host's directory took the number the run freed in {reused} of {} rounds", ROUNDS + 4);
        let ext4 = nix::sys::statfs::statfs(&d.ws).unwrap().filesystem_type() == nix::sys::statfs::EXT4_SUPER_MAGIC;
        assert!(!ext4 || reused > 0, "on ext4 no number was reused: the attack was not tried\n{out}");
    }

    /// A run makes as many repositories as it likes: 270 `git init`s with a commit each, and a
    /// repository removed and made again 270 times under one name (a functional check of 5
    /// December: the 257th repository of a run failed, its half-made `.git` left for the host
    /// to remove). The control on the other side: every one of them is the run's own (its
    /// config written by `git config`), and a repository the host made before the run still
    /// refuses `git config`.
    pub fn a_run_makes_as_many_repositories_as_it_likes() {
        let d = TestDirs::new("sbx-guard");
        git_in(&d.ws, &["init", "-q", "hosts"]);
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let script = "set -e; g() { git -c user.name=t -c user.email=t@t \"$@\"; }; \
            for i in $(seq 270); do git init -q r$i; g -C r$i commit -q --allow-empty -m x; done; \
            for i in $(seq 270); do rm -rf again; git init -q again; g -C again commit -q --allow-empty -m x; done; \
            git -C r270 config x.y z && git -C again config x.y z && echo MANY-OK; \
            if git -C hosts config x.y z 2>/dev/null; then echo HOSTS-WRITTEN; else echo HOSTS-REFUSED; fi";
        let out = sh_ok(&exec, &d.ws, script);
        assert!(out.contains("MANY-OK") && out.contains("HOSTS-REFUSED"), "{out}");
        assert_eq!(fs::read_dir(&d.ws).unwrap().count(), 272, "270 repositories, `again` and the host's");
    }

    /// No symlink comes into a git directory: not inside a directory renamed to `.git`, moved
    /// into a `.git` or exchanged with one (a red team, 5 December: `mv y .git` with
    /// `y/COMMIT_EDITMSG -> <a host file>`, and the host's `git commit` wrote the file); not into
    /// a git directory that is no `.git` (a bare repository, its worktree's directory, by
    /// contents: `r.git/worktrees/wt/COMMIT_EDITMSG -> ../../config` had the host's commit
    /// replace the config); and no directory holding one becomes a git directory (`HEAD`,
    /// `objects` and `refs` completed, which a `.git` file `gitdir: evil` then named). Controls:
    /// the same trees without the symlink become `.git`, move into one or complete a git
    /// directory, and a tree with a symlink moves anywhere else.
    pub fn symlinks_do_not_come_into_a_git_directory_inside_a_directory() {
        let d = TestDirs::new("sbx-guard");
        let victim = d.root.join("victim.txt");
        fs::write(&victim, "ORIGINAL\n").unwrap();
        // The host's bare repository with a worktree, made before the run.
        git_in(&d.ws, &["init", "-q", "src"]);
        git_in(
            &d.ws,
            &["-C", "src", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
        );
        git_in(&d.ws, &["clone", "-q", "--bare", "src", "hostbare.git"]);
        git_in(&d.ws, &["-C", "hostbare.git", "worktree", "add", "-q", "../wt"]);
        let v = victim.display();
        let script = format!(
            r##"
for repo in ("own", "own2"):
    subprocess.run(["git", "init", "-q", repo], check=True)
os.makedirs("y/objects")
os.makedirs("y/refs/heads")
os.symlink("{v}", "y/COMMIT_EDITMSG")
os.makedirs("x/logs")
os.symlink("{v}", "x/logs/HEAD")
os.mkdir("newB")
for tree in ("deep", "deep2"):
    os.makedirs(tree + "/a/b")
    os.symlink("{v}", tree + "/a/b/c")
os.mkdir("w")
os.symlink("{v}", "w/COMMIT_EDITMSG")
os.makedirs("evil/refs/heads")
os.makedirs("evil/objects")
os.symlink("{v}", "evil/COMMIT_EDITMSG")
os.makedirs("evil2/refs")
write("evil2/HEAD", os.O_WRONLY | os.O_CREAT)
# git takes an executable file named `objects` (it asks only to search it) until it writes one.
os.makedirs("evil3/refs")
write("evil3/HEAD", os.O_WRONLY | os.O_CREAT)
write("evil3/objects", os.O_WRONLY | os.O_CREAT)
wt = [n for n in os.listdir("hostbare.git/worktrees")][0]
attempt([
    ("renamed-to-dotgit", lambda: os.rename("y", ".git")),
    ("into-new-dotgit", lambda: os.rename("x", "newB/.git")),
    ("deep-into-own-dotgit", lambda: os.rename("deep", "own/.git/deep")),
    ("exchanged-with-dotgit", lambda: exchange("w", "own2/.git")),
    ("completed-with-head", lambda: write("evil/HEAD", os.O_WRONLY | os.O_CREAT)),
    ("completed-with-objects-link", lambda: os.symlink("/tmp", "evil2/objects")),
    ("link-beside-objects-file", lambda: os.symlink("{v}", "evil3/COMMIT_EDITMSG")),
    ("bare-message-link", lambda: os.symlink("{v}", "hostbare.git/COMMIT_EDITMSG")),
    ("bare-objects-link", lambda: os.symlink("/tmp", "hostbare.git/objects/ab")),
    ("worktree-admin-link", lambda: os.symlink("../../config", "hostbare.git/worktrees/%s/COMMIT_EDITMSG" % wt)),
    ("tree-into-bare", lambda: os.rename("deep2", "hostbare.git/objects/cd")),
])
# Controls: without the symlink, and elsewhere.
os.unlink("y/COMMIT_EDITMSG")
os.rename("y", "plain-git")
os.makedirs("made")
os.rename("plain-git", "made/.git")
os.unlink("deep/a/b/c")
os.rename("deep", "own/.git/deep")
os.rename("x", "x-moved")
os.unlink("evil/COMMIT_EDITMSG")
write("evil/HEAD", os.O_WRONLY | os.O_CREAT)
print("controls-ok")
"##
        );
        let out = attacks(&d, &script);
        assert_refused(
            &out,
            &[
                "renamed-to-dotgit",
                "into-new-dotgit",
                "deep-into-own-dotgit",
                "exchanged-with-dotgit",
                "completed-with-head",
                "completed-with-objects-link",
                "link-beside-objects-file",
                "bare-message-link",
                "bare-objects-link",
                "worktree-admin-link",
                "tree-into-bare",
            ],
        );
        assert!(out.contains("controls-ok"), "{out}");
        assert!(!d.ws.join(".git").exists() && !d.ws.join("newB/.git").exists(), "{out}");
        assert!(fs::symlink_metadata(d.ws.join("x-moved/logs/HEAD")).unwrap().file_type().is_symlink());
        // The host's git in the repositories the run made, and in the worktree of its bare
        // repository, writes no file through a link.
        for repo in ["own", "own2", "made", "wt"] {
            let _ = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"])
                .current_dir(d.ws.join(repo))
                .output()
                .unwrap();
        }
        assert_eq!(fs::read_to_string(&victim).unwrap(), "ORIGINAL\n");
        assert!(fs::read_to_string(d.ws.join("hostbare.git/config")).unwrap().contains("bare"));
    }

    /// A `.git` (or a bare directory with `hooks`) the run made ahead, in which the host's
    /// `git init` then sets a repository up during the run, is no longer the run's to
    /// configure: its config and hooks are refused once an entry of git's set-up that the run
    /// did not make is there (a red team, 5 December: the host's `git init newB` said
    /// "Initialized empty Git repository", and the workload then set `core.fsmonitor` and a
    /// `pre-commit`). Control: the run's own `git init` in a `.git` it made ahead works, and
    /// writes its config.
    pub fn a_git_directory_the_run_prepared_is_the_hosts_once_the_host_sets_it_up() {
        let d = TestDirs::new("sbx-guard");
        let script = r##"
os.makedirs("newB/.git/hooks")
os.makedirs("newE/hooks")
os.makedirs("mine/.git")
open("ready", "w").close()
wait_for("done")
attempt([
    ("config", lambda: write("newB/.git/config", os.O_WRONLY | os.O_APPEND)),
    ("hook", lambda: write("newB/.git/hooks/pre-commit", os.O_WRONLY | os.O_CREAT)),
    ("bare-hook", lambda: write("newE/hooks/pre-receive", os.O_WRONLY | os.O_CREAT)),
    ("bare-config", lambda: write("newE/config", os.O_WRONLY | os.O_APPEND)),
])
subprocess.run(["git", "init", "-q", "mine"], check=True)
subprocess.run(["git", "-C", "mine", "config", "x.y", "z"], check=True)
subprocess.run(["git", "init", "-q", "--bare", "mine.git"], check=True)
subprocess.run(["git", "-C", "mine.git", "config", "x.y", "z"], check=True)
print("controls-ok")
"##;
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        let out = while_host_acts(&exec, &d.ws, script, |ws| {
            sandbox_tests::wait_for_marker(&ws.join("ready"));
            git_in(ws, &["init", "-q", "newB"]);
            git_in(ws, &["init", "-q", "--bare", "newE"]);
            fs::write(ws.join("done"), "").unwrap();
        });
        assert_refused(&out, &["config", "hook", "bare-hook", "bare-config"]);
        assert!(out.contains("controls-ok"), "{out}");
        assert!(!fs::read_to_string(d.ws.join("newB/.git/config")).unwrap().contains("planted"));
        assert!(!d.ws.join("newB/.git/hooks/pre-commit").exists() && !d.ws.join("newE/hooks/pre-receive").exists());
    }

    /// A worktree entry the run adds to a repository it did not make (`git worktree add` in the
    /// host's checkout, or in the host's bare repository) names that repository as its common
    /// directory, whatever the workload writes there: a red team (5 December) wrote a
    /// `commondir` naming a directory of its own with a `core.fsmonitor` and a branch's reflog
    /// linked to a host file; after the user's `git worktree repair`, the host's `git commit`
    /// in the worktree ran the one and wrote the other. Every way to bring other content under
    /// that name is tried: writing it new, rewriting and appending to it, a rename, link or
    /// exchange onto it, `mknod`, a symlink, a second name for it, a reopen through
    /// `/proc/self/fd`, `truncate`, and a rename away and back. Controls: `git worktree add` in
    /// both repositories, a commit in the new worktree, and the same writes in a repository of
    /// the run's own, which keep what was written.
    pub fn a_worktree_entry_names_the_repository_that_holds_it() {
        let d = TestDirs::new("sbx-guard");
        let victim = d.root.join("victim.txt");
        fs::write(&victim, "ORIGINAL\n").unwrap();
        let commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"];
        git_in(&d.ws, &["init", "-q", "-b", "main", "proj"]);
        git_in(&d.ws.join("proj"), &commit);
        git_in(&d.ws, &["clone", "-q", "--bare", "proj", "hb.git"]);
        fs::create_dir(d.root.join("outside")).unwrap();
        // A host repository with a submodule (its git directory `super/.git/modules/sm`).
        git_in(&d.ws, &["init", "-q", "-b", "main", "super"]);
        git_in(&d.ws.join("super"), &["-c", "protocol.file.allow=always", "submodule", "add", "-q", "../hb.git", "sm"]);
        git_in(&d.ws.join("super"), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "sm"]);
        let (ws, v, root) = (d.ws.display(), victim.display(), d.root.display());
        let script = format!(
            r##"
import stat
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
def put(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, text.encode())
    os.close(fd)
def put_into(path, text, flags):
    fd = os.open(path, flags, 0o644)
    os.write(fd, text.encode())
    os.close(fd)
def reopen(path):
    fd = os.open(path, os.O_PATH)
    put_into("/proc/self/fd/%d" % fd, "{ws}/X\n", os.O_WRONLY | os.O_TRUNC)
# Controls: worktrees in the host's checkout and bare repository, a commit in one.
subprocess.run(GIT + ["-C", "proj", "worktree", "add", "-q", "-b", "wa", "../wtA"], check=True)
subprocess.run(GIT + ["-C", "hb.git", "worktree", "add", "-q", "-b", "wb", "../wtB"], check=True)
subprocess.run(GIT + ["-C", "wtA", "commit", "-q", "--allow-empty", "-m", "in-wtA"], check=True)
subprocess.run(GIT + ["-C", "super/sm", "worktree", "add", "-q", "-b", "smw", "../../smwt"], check=True)
subprocess.run(GIT + ["-C", "smwt", "commit", "-q", "--allow-empty", "-m", "in-smwt"], check=True)
SM = "super/.git/modules/sm/worktrees/smwt/"
attempt([
    ("module-entry-config", lambda: put(SM + "config", "[core]\n\tfsmonitor = {ws}/fsmon.sh\n")),
    ("module-entry-commondir", lambda: put(SM + "commondir", "{ws}/X\n")),
])
# A common directory of the run's: no HEAD, a config with an fsmonitor, a reflog linked out.
os.makedirs("X/refs/heads")
os.makedirs("X/objects/info")
os.makedirs("X/logs/refs/heads")
put("X/objects/info/alternates", "{ws}/proj/.git/objects\n")
os.symlink("{v}", "X/logs/refs/heads/side")
# The config last: with it, X is a git directory by its contents, where no symlink may come.
put("X/config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = {ws}/fsmon.sh\n")
put("fsmon.sh", "#!/bin/sh\necho ran >> {ws}/FSMON\n")
os.chmod("fsmon.sh", 0o755)
main = open("proj/.git/refs/heads/main").read()
put("X/refs/heads/side", main)
# Inside the repository's `.git` (its own mount in the sandbox: a rename from outside crosses).
put("proj/.git/cd2", "{ws}/X\n")
E = "proj/.git/worktrees/"
for n in ("sub", "e1", "e2", "e3", "e4", "e5"):
    os.mkdir(E + n)
put(E + "sub/gitdir", "{ws}/proj/sub/.git\n")
put(E + "sub/HEAD", "ref: refs/heads/side\n")
os.mkdir("proj/sub")
os.mkdir("hb.git/worktrees/e6")
attempt([
    ("write-new", lambda: put(E + "sub/commondir", "../../../../X\n")),
    ("rewrite", lambda: put_into(E + "wtA/commondir", "{ws}/X\n", os.O_WRONLY | os.O_TRUNC)),
    ("append", lambda: put_into(E + "wtA/commondir", "X\n", os.O_WRONLY | os.O_APPEND)),
    ("read-write", lambda: put_into(E + "wtA/commondir", "{ws}/X\n", os.O_RDWR)),
    ("bare-write-new", lambda: put("hb.git/worktrees/e6/commondir", "{ws}/X\n")),
    ("bare-rewrite", lambda: put_into("hb.git/worktrees/wtB/commondir", "{ws}/X\n", os.O_WRONLY | os.O_TRUNC)),
])
attempt([
    ("rename-onto", lambda: os.rename("proj/.git/cd2", E + "e1/commondir")),
    ("rename-over", lambda: os.rename("proj/.git/cd2", E + "wtA/commondir")),
    ("link-onto", lambda: os.link("proj/.git/cd2", E + "e2/commondir")),
    ("exchange", lambda: exchange("proj/.git/cd2", E + "wtA/commondir")),
    ("mknod", lambda: os.mknod(E + "e3/commondir", 0o644 | stat.S_IFREG)),
    ("symlink", lambda: os.symlink("{ws}/X", E + "e4/commondir")),
    ("second-name", lambda: os.link(E + "wtA/commondir", E + "wtA/alias")),
    ("proc-fd", lambda: reopen(E + "wtA/commondir")),
    ("truncate", lambda: os.truncate(E + "wtA/commondir", 0)),
])
# Red team X: an entry without a `commondir` is a git directory of its own once it holds
# `objects`; its `config` then counts. Nor is a `config.worktree` written; a `gitdir` naming a
# place the run may not write (where the host's `git worktree repair` writes a `.git` file) is
# not published, and none comes under the name by a rename.
os.unlink(E + "sub/commondir")
put("proj/.git/gd", "{root}/outside/.git\n")
attempt([
    ("entry-objects", lambda: os.mkdir(E + "sub/objects")),
    ("entry-objects-file", lambda: put(E + "sub/objects", "x")),
    ("entry-config", lambda: put(E + "sub/config", "[core]\n\tfsmonitor = {ws}/fsmon.sh\n")),
    ("entry-config-worktree", lambda: put(E + "wtA/config.worktree", "[core]\n\tfsmonitor = {ws}/fsmon.sh\n")),
    ("bare-entry-objects", lambda: os.mkdir("hb.git/worktrees/wtB/objects")),
    ("bare-entry-config", lambda: put("hb.git/worktrees/wtB/config", "[core]\n\tfsmonitor = {ws}/fsmon.sh\n")),
    ("gitdir-rename", lambda: os.rename("proj/.git/gd", E + "e1/gitdir")),
])
# An entry named `worktrees`; a tree built elsewhere in the `.git` (where `objects` is free) and
# moved onto an entry by a rename over an empty one or an exchange.
for n in ("worktrees", "m", "m2"):
    os.mkdir(E + n)
os.makedirs("proj/.git/tmpx/objects")
attempt([
    ("entry-named-worktrees-objects", lambda: os.mkdir(E + "worktrees/objects")),
    ("entry-named-worktrees-config", lambda: put(E + "worktrees/config", "[core]\n")),
    ("entry-hooks", lambda: os.mkdir(E + "m/hooks")),
    ("tree-over-entry", lambda: os.rename("proj/.git/tmpx", E + "m2")),
    ("tree-exchanged-with-entry", lambda: exchange("proj/.git/tmpx", E + "m")),
])
os.makedirs("/tmp/x")
os.makedirs("real")
os.symlink("real", "lnk")
for n in ("e7", "e8", "e9", "e10", "e11"):
    os.mkdir(E + n)
# Red team Y: git 2.47 takes a relative `gitdir` from its own working directory; the sandbox's
# `/dev` and `/proc` are its own; a symlink on the way leads elsewhere on the host. And no
# worktree's `.git` is a symlink (the host's `git worktree repair` writes through it).
put("{ws}/wtA-link-target", "x")
attempt([
    ("gitdir-relative", lambda: put(E + "e7/gitdir", "../../../../real/.git\n")),
    ("gitdir-dev", lambda: put(E + "e8/gitdir", "/dev/.git\n")),
    ("gitdir-through-link", lambda: put(E + "e9/gitdir", "{ws}/lnk/.git\n")),
    ("gitdir-proc", lambda: put(E + "e10/gitdir", "/proc/self/cwd/.git\n")),
    # Red team Z: a directory with no `.git` naming the entry back may be swapped for a symlink
    # by a later run; the host's repair then writes through it.
    ("gitdir-no-dotgit", lambda: put(E + "e11/gitdir", "{ws}/real/.git\n")),
    ("dotgit-symlink", lambda: (os.unlink("wtA/.git"), os.symlink("{v}", "wtA/.git"))),
    ("dotgit-symlink-renamed", lambda: (os.symlink("{v}", "sl"), os.rename("sl", "real/.git"))),
    ("dotgit-symlink-linked", lambda: (os.symlink("{v}", "sl2"), os.link("sl2", "real/.git"))),
])
put("wtA/.git", "gitdir: {ws}/proj/.git/worktrees/wtA\n")
attempt([
    ("gitdir-outside", lambda: put(E + "wtA/gitdir", "{root}/outside/.git\n")),
    ("gitdir-private-tmp", lambda: put(E + "e1/gitdir", "/tmp/x/.git\n")),
    ("gitdir-relative-outside", lambda: put(E + "e2/gitdir", "../../../../../outside/.git\n")),
    ("gitdir-bare-outside", lambda: put("hb.git/worktrees/wtB/gitdir", "{root}/outside/.git\n")),
])
subprocess.run(GIT + ["-C", "proj", "worktree", "add", "-q", "-b", "wc", "../wtC"], check=True)
subprocess.run(GIT + ["-C", "proj", "worktree", "move", "../wtC", "../wtD"], check=True)
put("after-move", "x")
put(E + "e5/commondir", "ignored\n")
os.rename(E + "e5/commondir", E + "e5/away")
put(E + "e5/away", "{ws}/X\n")
attempt([("back", lambda: os.rename(E + "e5/away", E + "e5/commondir"))])
# The run's own repository: its worktree entries are its own to write.
subprocess.run(GIT + ["init", "-q", "-b", "main", "own"], check=True)
subprocess.run(GIT + ["-C", "own", "commit", "-q", "--allow-empty", "-m", "x"], check=True)
subprocess.run(GIT + ["-C", "own", "worktree", "add", "-q", "-b", "wo", "../wtO"], check=True)
put("own/.git/worktrees/wtO/commondir", "../../own-kept\n")
print("own-kept:", open("own/.git/worktrees/wtO/commondir").read().strip())
subprocess.run(["rm", "-rf", "wtO"], check=True)
subprocess.run(GIT + ["-C", "wtA", "status", "--short"], check=True)
print("controls-ok")
"##
        );
        let out = attacks(&d, &script);
        for name in ["write-new", "rewrite", "append", "read-write", "bare-write-new", "bare-rewrite"] {
            assert!(out.contains(&format!("{name} ok\n")), "{name}: {out}");
        }
        assert_refused(
            &out,
            &[
                "rename-onto",
                "rename-over",
                "link-onto",
                "exchange",
                "mknod",
                "symlink",
                "second-name",
                "proc-fd",
                "truncate",
                "back",
                "entry-objects",
                "entry-objects-file",
                "entry-config",
                "entry-config-worktree",
                "bare-entry-objects",
                "bare-entry-config",
                "gitdir-rename",
                "entry-named-worktrees-objects",
                "entry-named-worktrees-config",
                "entry-hooks",
                "tree-over-entry",
                "tree-exchanged-with-entry",
                "dotgit-symlink",
                "dotgit-symlink-renamed",
                "dotgit-symlink-linked",
                "module-entry-config",
            ],
        );
        for name in ["gitdir-outside", "gitdir-private-tmp", "gitdir-relative-outside", "gitdir-bare-outside"] {
            assert!(out.contains(&format!("{name} ok\n")), "{name}: {out}");
        }
        // What git wrote is published; what names a place the run may not write is not.
        for (entry, wt) in
            [("proj/.git/worktrees/wtA", "wtA"), ("hb.git/worktrees/wtB", "wtB"), ("proj/.git/worktrees/wtC", "wtD")]
        {
            let text = fs::read_to_string(d.ws.join(entry).join("gitdir")).unwrap();
            assert_eq!(text, format!("{}/.git\n", d.ws.join(wt).display()), "{entry}");
        }
        for entry in ["e1", "e2", "e7", "e8", "e9", "e10", "e11"] {
            assert!(!d.ws.join("proj/.git/worktrees").join(entry).join("gitdir").exists(), "{entry}");
        }
        for name in ["gitdir-relative", "gitdir-dev", "gitdir-through-link", "gitdir-proc", "gitdir-no-dotgit"] {
            assert!(out.contains(&format!("{name} ok\n")), "{name}: {out}");
        }
        assert!(out.contains("own-kept: ../../own-kept\n") && out.contains("controls-ok"), "{out}");
        // `sub`'s was removed (above): it is no git directory without `objects`.
        assert!(out.contains("module-entry-commondir ok\n"), "{out}");
        for entry in [
            "proj/.git/worktrees/wtA",
            "hb.git/worktrees/e6",
            "hb.git/worktrees/wtB",
            "super/.git/modules/sm/worktrees/smwt",
        ] {
            let text = fs::read_to_string(d.ws.join(entry).join("commondir")).unwrap();
            assert_eq!(text, "../..\n", "{entry}");
        }
        for entry in ["e1", "e2", "e3", "e4", "e5"] {
            assert!(
                fs::symlink_metadata(d.ws.join("proj/.git/worktrees").join(entry).join("commondir")).is_err(),
                "{entry}"
            );
        }
        // The user repairs the worktrees and commits in them: the workload's fsmonitor does not
        // run, no file is written through its link, and both worktrees work.
        let _ = std::process::Command::new("git").args(["worktree", "repair"]).current_dir(d.ws.join("proj")).output();
        for wt in ["proj/sub", "wtA", "wtB"] {
            let _ = std::process::Command::new("git").args(commit).current_dir(d.ws.join(wt)).output().unwrap();
        }
        let _ = std::process::Command::new("git").args(["status"]).current_dir(d.ws.join("proj/sub")).output().unwrap();
        assert!(!d.ws.join("FSMON").exists(), "the workload's fsmonitor ran");
        assert!(!d.root.join("outside/.git").exists(), "the host's repair wrote outside the workspace");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "ORIGINAL\n");
        let log = std::process::Command::new("git")
            .args(["log", "--oneline", "wa"])
            .current_dir(d.ws.join("proj"))
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&log.stdout).contains("in-wtA"));
        git_in(&d.ws.join("wtB"), &["status", "--short"]);
    }

    /// The index of a repository the run did not make holds only names git itself would let
    /// into one: git trusts the index it reads, and an entry named by an absolute path or with
    /// `..`, written into the host's index, was written there by the host's next `git restore .`
    /// (red team Y, 5 December, 4 of 4). Every way in is tried: a direct write, git's own way
    /// (`index.lock` renamed), a worktree entry's index, a link onto it, a second name for it,
    /// and writing through a descriptor of `index.lock` kept after the rename. Controls: `git
    /// add` and `git commit` in the host's repository and its worktree, and a malformed index
    /// in a repository of the run's own.
    pub fn the_index_of_a_host_repository_names_only_what_git_checks_out() {
        let d = TestDirs::new("sbx-guard");
        let victim = d.root.join("victim_rc");
        fs::write(&victim, "original\n").unwrap();
        git_in(&d.ws, &["init", "-q", "-b", "main", "proj"]);
        fs::write(d.ws.join("proj/f"), "1\n").unwrap();
        git_in(&d.ws.join("proj"), &["add", "f"]);
        git_in(&d.ws.join("proj"), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x"]);
        for (repo, version) in [("thr2", "2"), ("thr4", "4")] {
            git_in(&d.ws, &["init", "-q", repo]);
            for (key, value) in [
                ("index.threads", "4"),
                ("index.recordOffsetTable", "true"),
                ("index.recordEndOfIndexEntries", "true"),
                ("index.version", version),
                ("core.untrackedCache", "true"),
            ] {
                git_in(&d.ws.join(repo), &["config", key, value]);
            }
        }
        git_in(&d.ws, &["init", "-q", "--object-format=sha256", "r256"]);
        // The user's rebase, stopped on a conflict before the run; a repository with the same
        // history where the workload starts its own.
        for repo in ["rb", "rb2"] {
            let r = d.ws.join(repo);
            let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
            git_in(&d.ws, &["init", "-q", "-b", "main", repo]);
            fs::write(r.join("f"), "a\n").unwrap();
            git_in(&r, &["add", "f"]);
            git_in(&r, &[&id[..], &["commit", "-qm", "a"]].concat());
            git_in(&r, &["checkout", "-qb", "topic"]);
            for (file, text) in [("f", "topic\n"), ("t2", "2\n"), ("t3", "3\n")] {
                fs::write(r.join(file), text).unwrap();
                git_in(&r, &["add", file]);
                git_in(&r, &[&id[..], &["commit", "-qm", file]].concat());
            }
            git_in(&r, &["checkout", "-q", "main"]);
            fs::write(r.join("f"), "main\n").unwrap();
            git_in(&r, &[&id[..], &["commit", "-qam", "m"]].concat());
            git_in(&r, &["checkout", "-q", "topic"]);
        }
        let stopped = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "rebase", "-q", "main"])
            .current_dir(d.ws.join("rb"))
            .output()
            .unwrap();
        assert!(!stopped.status.success() && d.ws.join("rb/.git/rebase-merge").is_dir());
        let v = victim.display();
        let script = format!(
            r##"
import hashlib, struct
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
def blob(repo, text):
    return subprocess.run(["git", "-C", repo, "hash-object", "-w", "--stdin"], input=text, capture_output=True, text=True, check=True).stdout.strip()
def mkindex(names, sha):
    body = b"DIRC" + struct.pack(">II", 2, len(names))
    for name in names:
        n = name.encode()
        e = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 0) + bytes.fromhex(sha) + struct.pack(">H", min(len(n), 0xfff)) + n
        e += b"\0" * (8 - len(e) % 8)
        body += e
    return body + hashlib.sha1(body).digest()
def put_bytes(path, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fd = os.open(path, flags, 0o644)
    os.write(fd, data)
    os.close(fd)
def via_lock(git_dir, data):
    put_bytes(git_dir + "/index.lock", data, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.rename(git_dir + "/index.lock", git_dir + "/index")
    finally:
        if os.path.exists(git_dir + "/index.lock"):
            os.unlink(git_dir + "/index.lock")
def with_ext(index, exts):
    body = index[:-20]
    for sig, data in exts:
        body += sig + struct.pack(">I", len(data)) + data
    return body + hashlib.sha1(body).digest()
def entry(name, sha):
    n = name.encode()
    e = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 0) + bytes.fromhex(sha) + struct.pack(">H", len(n)) + n
    return e + b"\0" * (8 - len(e) % 8)
def kept_fd():
    fd = os.open("proj/.git/index.lock", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, good)
    os.rename("proj/.git/index.lock", "proj/.git/index")
    os.lseek(fd, 0, 0)
    os.write(fd, bad)
    os.close(fd)
# Controls: git's own work in the host's repository and a worktree of it.
subprocess.run(["sh", "-c", "cd proj && echo 2 >> f && git add f && git -c user.name=t -c user.email=t@t commit -qm two"], check=True)
subprocess.run(GIT + ["-C", "proj", "worktree", "add", "-q", "-b", "wa", "../wtA"], check=True)
subprocess.run(["sh", "-c", "cd wtA && echo w > g && git add g && git -c user.name=t -c user.email=t@t commit -qm in-wt"], check=True)
sha = blob("proj", "echo planted\n")
bad = mkindex(["f", "{v}"], sha)
good = mkindex(["f"], sha)
os.makedirs("proj/.git/tmp")
put_bytes("proj/.git/tmp/bad", bad)
# Red team Z: git's threads read from an offset table (`index.threads`); one pointing into an
# extension git ignores, where a `../x` entry waits, and an end-of-entries record that agrees.
three = mkindex(["f", "g", "h"], sha)
hidden = entry("../x", sha)
ends = len(three) - 20
ieot = struct.pack(">IIIII", 1, ends + 8, 1, 12 + 64, 2)
threaded = with_ext(three, [(b"ZZZZ", hidden), (b"IEOT", ieot), (b"EOIE", struct.pack(">I", ends) + b"\0" * 20)])
# `git cherry-pick --continue` reads `sequencer/opts`: a strategy with a slash is a path.
os.makedirs("proj/.git/sequencer", exist_ok=True)
put_bytes("proj/.git/tmp/opts", b"[options]\n\tstrategy = x/../.git/info/evil\n")
# Red team AA: a whole `sequencer` built elsewhere and moved in; rerere's `MERGE_RR` naming
# `.git/config`, a file outside or a protected name (the host's next `git commit` writes the
# recorded resolution there); replace refs and grafts (what every git command shows instead).
os.makedirs("proj/.git/tmp/seq")
put_bytes("proj/.git/tmp/seq/opts", b"[options]\n\tstrategy = x/y\n")
H = "89abcdef0123456789abcdef0123456789abcdef"
for tag, path in (("config", ".git/config"), ("absolute", "{v}"), ("protected", ".envrc"), ("dotdot", "../x"), ("any", "f")):
    put_bytes("proj/.git/tmp/rr-" + tag, ("%s.-1\t%s\0" % (H, path)).encode())
# Red team AB: git reads the variant with `strtol` (a tab before it passes a check of the path),
# and rerere writes through a work-tree symlink: a host repository's rerere state is the host's.
put_bytes("proj/.git/tmp/rr-tab", ("%s.\t-1\t.git/config\0" % H).encode())
os.symlink("{v}", "proj/victim-link")
put_bytes("proj/.git/tmp/packed", b"# pack-refs with: peeled fully-peeled sorted \n%s refs/replace/%s\n" % (sha.encode(), sha.encode()))
def git_or_eacces(args):
    r = subprocess.run(GIT + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise PermissionError(errno.EACCES, r.stderr)
attempt([
    ("direct", lambda: put_bytes("proj/.git/index", bad)),
    ("via-lock", lambda: via_lock("proj/.git", bad)),
    ("via-lock-dotdot", lambda: via_lock("proj/.git", mkindex(["f", "../../x"], sha))),
    ("via-lock-dotgit", lambda: via_lock("proj/.git", mkindex(["f", "sub/.Git/config"], sha))),
    ("worktree-index", lambda: via_lock("proj/.git/worktrees/wtA", bad)),
    ("link-onto", lambda: (os.unlink("proj/.git/worktrees/wtA/index"), os.link("proj/.git/tmp/bad", "proj/.git/worktrees/wtA/index"))),
    ("second-name", lambda: os.link("proj/.git/index", "proj/.git/tmp/alias")),
    ("exchange", lambda: exchange("proj/.git/tmp/bad", "proj/.git/index")),
    ("offset-table", lambda: via_lock("proj/.git", threaded)),
    ("opts-rename", lambda: os.rename("proj/.git/tmp/opts", "proj/.git/sequencer/opts")),
    ("opts-direct", lambda: put_bytes("proj/.git/sequencer/opts", b"[options]\n\tstrategy = x/../evil\n")),
    ("sequencer-dir", lambda: (os.rmdir("proj/.git/sequencer"), os.rename("proj/.git/tmp/seq", "proj/.git/sequencer"))),
    ("merge-rr-config", lambda: os.rename("proj/.git/tmp/rr-config", "proj/.git/MERGE_RR")),
    ("merge-rr-absolute", lambda: os.rename("proj/.git/tmp/rr-absolute", "proj/.git/MERGE_RR")),
    ("merge-rr-protected", lambda: os.rename("proj/.git/tmp/rr-protected", "proj/.git/MERGE_RR")),
    ("merge-rr-dotdot", lambda: os.rename("proj/.git/tmp/rr-dotdot", "proj/.git/MERGE_RR")),
    ("merge-rr-direct", lambda: put_bytes("proj/.git/MERGE_RR", b"x.-1\t.git/config\0")),
    ("merge-rr-tab", lambda: os.rename("proj/.git/tmp/rr-tab", "proj/.git/MERGE_RR")),
    ("merge-rr-any", lambda: os.rename("proj/.git/tmp/rr-any", "proj/.git/MERGE_RR")),
    ("merge-rr-lock", lambda: put_bytes("proj/.git/MERGE_RR.lock", b"")),
    ("rr-cache", lambda: os.makedirs("proj/.git/rr-cache/" + H)),
    ("replace-ref", lambda: os.makedirs("proj/.git/refs/replace")),
    ("replace-ref-git", lambda: git_or_eacces(["-C", "proj", "replace", "-f", "HEAD", "HEAD~1"])),
    ("packed-replace", lambda: os.rename("proj/.git/tmp/packed", "proj/.git/packed-refs")),
    ("grafts", lambda: put_bytes("proj/.git/info/grafts", b"x\n")),
])
# Red team AC: the user's rebase stopped on a conflict runs what its state says at `git rebase
# --continue`: a strategy path, a todo `exec`. The workload resolves and stages; the user goes on.
os.makedirs("git-merge-..", exist_ok=True)
put_bytes("git-merge-../evil", b"#!/bin/sh\necho ran > strategy-ran\nexit 2\n")
os.chmod("git-merge-../evil", 0o755)
attempt([
    ("rebase-strategy", lambda: put_bytes("rb/.git/rebase-merge/strategy", b"../evil\n")),
    ("rebase-todo-exec", lambda: put_bytes("rb/.git/rebase-merge/git-rebase-todo", b"exec touch exec-ran\n", os.O_WRONLY | os.O_APPEND)),
    ("rebase-state-removed", lambda: os.unlink("rb/.git/rebase-merge/git-rebase-todo")),
    ("rebase-state-moved", lambda: os.rename("rb/.git/rebase-merge", "rb/.git/old-rebase")),
])
put_bytes("rb/f", b"resolved\n")
subprocess.run(GIT + ["-C", "rb", "add", "f"], check=True)
# The workload's own rebase in a host repository: its state is its own.
r = subprocess.run(GIT + ["-C", "rb2", "rebase", "-q", "main"], capture_output=True)
put_bytes("rb2/.git/rebase-merge/strategy", b"ort\n")
subprocess.run(GIT + ["-C", "rb2", "rebase", "--abort"], check=True)
print("own-rebase-ok", r.returncode != 0)
# The run's own repository: its rerere state is its own.
subprocess.run(GIT + ["init", "-q", "rr-own"], check=True)
os.makedirs("rr-own/.git/rr-cache/" + H)
put_bytes("rr-own/.git/MERGE_RR", ("%s.-1\tf\0" % H).encode())
print("rerere-own-ok")
subprocess.run(GIT + ["-C", "proj", "pack-refs", "--all"], check=True)
os.makedirs("proj/.git/sequencer", exist_ok=True)
os.rmdir("proj/.git/sequencer")
# Controls: `git pack-refs` above; git's own threaded indexes (versions 2 and 4, offset tables, untracked cache) and a
# SHA-256 repository of the host's take the workload's `git add`; a cherry-pick that stops on a
# conflict writes its `sequencer/opts`, and is aborted.
for repo in ("thr2", "thr4", "r256"):
    subprocess.run(["sh", "-c", "cd %s && mkdir -p d && for i in $(seq 2000); do echo $i > d/f$i; done && git add . && git -c user.name=t -c user.email=t@t commit -qm x" % repo], check=True)
subprocess.run(["sh", "-c", "cd proj && git checkout -q -b side && echo s > f && git -c user.name=t -c user.email=t@t commit -qam s1 && echo t > g && git add g && git -c user.name=t -c user.email=t@t commit -qm s2 && git checkout -q main && echo m > f && git -c user.name=t -c user.email=t@t commit -qam m1"], check=True)
r = subprocess.run(GIT + ["-C", "proj", "cherry-pick", "--strategy", "ort", "-X", "patience", "side~1", "side"], capture_output=True, text=True)
print("cherry-pick:", r.returncode, os.path.exists("proj/.git/sequencer/opts"))
subprocess.run(GIT + ["-C", "proj", "cherry-pick", "--abort"], capture_output=True)
kept_fd()
print("kept-fd-done")
subprocess.run(["sh", "-c", "cd proj && echo 3 >> f && git add f && git -c user.name=t -c user.email=t@t commit -qm three"], check=True)
# The run's own repository: its index is its own.
subprocess.run(GIT + ["init", "-q", "own"], check=True)
put_bytes("own/.git/index", bad)
print("controls-ok")
"##
        );
        let out = attacks(&d, &script);
        assert_refused(
            &out,
            &[
                "direct",
                "via-lock",
                "via-lock-dotdot",
                "via-lock-dotgit",
                "worktree-index",
                "link-onto",
                "second-name",
                "exchange",
                "offset-table",
                "opts-rename",
                "opts-direct",
                "sequencer-dir",
                "merge-rr-config",
                "merge-rr-absolute",
                "merge-rr-protected",
                "merge-rr-dotdot",
                "merge-rr-direct",
                "merge-rr-tab",
                "merge-rr-any",
                "merge-rr-lock",
                "rr-cache",
                "rebase-strategy",
                "rebase-todo-exec",
                "rebase-state-removed",
                "rebase-state-moved",
                "replace-ref",
                "replace-ref-git",
                "packed-replace",
                "grafts",
            ],
        );
        assert!(out.contains("kept-fd-done") && out.contains("controls-ok"), "{out}");
        assert!(out.contains("cherry-pick: 1 True\n") && out.contains("rerere-own-ok\n"), "{out}");
        assert!(out.contains("own-rebase-ok True\n"), "{out}");
        // The user continues the rebase: nothing of the workload's runs.
        let _ = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.editor=true", "rebase", "--continue"])
            .current_dir(d.ws.join("rb"))
            .output()
            .unwrap();
        assert!(!d.ws.join("rb/strategy-ran").exists() && !d.ws.join("rb/exec-ran").exists());
        // The user restores the work trees: nothing is written outside them.
        for wt in ["proj", "wtA"] {
            let _ =
                std::process::Command::new("git").args(["restore", "."]).current_dir(d.ws.join(wt)).output().unwrap();
            let _ = std::process::Command::new("git")
                .args(["checkout", "--", "."])
                .current_dir(d.ws.join(wt))
                .output()
                .unwrap();
        }
        assert_eq!(fs::read_to_string(&victim).unwrap(), "original\n");
        assert!(!d.root.join("x").exists() && !d.ws.join("x").exists());
        let files =
            std::process::Command::new("git").args(["ls-files"]).current_dir(d.ws.join("proj")).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&files.stdout), "f\n");
        let log = std::process::Command::new("git")
            .args(["log", "--oneline"])
            .current_dir(d.ws.join("proj"))
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&log.stdout).contains("three"));
    }

    /// The object store of a repository the run did not make takes loose objects only, each
    /// named by its content: git reads an object without comparing it with its name, so a blob
    /// replaced by another's, or planted ahead under the name a later content will have, or a
    /// pack, commit graph or `alternates` of the workload's, made the host's `git checkout`
    /// write the workload's content into a tracked file while `git diff` showed nothing (found
    /// on 5 December). Every way in is tried (a direct write, git's rename and link of a
    /// temporary, an unnamed file linked, a SHA-256 store, a bare repository's, a kept
    /// descriptor, Git LFS's store, whose objects are named by their SHA-256); controls: the workload's `git commit` in the host's repositories, its `git
    /// push` into the host's bare repository (git's quarantine), and `git gc` in its own.
    pub fn the_object_store_of_a_host_repository_takes_only_objects_named_by_their_content() {
        let d = TestDirs::new("sbx-guard");
        let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
        git_in(&d.ws, &["init", "-q", "-b", "main", "proj"]);
        fs::write(d.ws.join("proj/f"), "original\n").unwrap();
        git_in(&d.ws.join("proj"), &["add", "f"]);
        git_in(&d.ws.join("proj"), &[&id[..], &["commit", "-qm", "one"]].concat());
        git_in(&d.ws, &["clone", "-q", "--bare", "proj", "bare.git"]);
        git_in(&d.ws, &["init", "-q", "-b", "main", "--object-format=sha256", "r256"]);
        fs::write(d.ws.join("r256/f"), "original\n").unwrap();
        git_in(&d.ws.join("r256"), &["add", "f"]);
        git_in(&d.ws.join("r256"), &[&id[..], &["commit", "-qm", "one"]].concat());
        let blob_of = |repo: &str| {
            let o =
                std::process::Command::new("git").args(["rev-parse", "HEAD:f"]).current_dir(d.ws.join(repo)).output();
            String::from_utf8(o.unwrap().stdout).unwrap().trim().to_string()
        };
        let (blob, blob256) = (blob_of("proj"), blob_of("r256"));
        let script = format!(
            r##"
import hashlib, zlib
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
def put_bytes(path, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fd = os.open(path, flags, 0o644)
    os.write(fd, data)
    os.close(fd)
def loose(text):
    return zlib.compress(b"blob %d\0" % len(text) + text)
def name(text, h=hashlib.sha1):
    return h(b"blob %d\0" % len(text) + text).hexdigest()
def at(objects, n):
    return "%s/%s/%s" % (objects, n[:2], n[2:])
def temp(objects, n, data, tag="evil"):
    os.makedirs("%s/%s" % (objects, n[:2]), exist_ok=True)
    path = "%s/%s/tmp_obj_%s" % (objects, n[:2], tag)
    put_bytes(path, data)
    return path
def tmpfile_link(objects, n, data):
    fd = os.open("%s/%s" % (objects, n[:2]), os.O_TMPFILE | os.O_WRONLY, 0o444)
    os.write(fd, data)
    checked(libc.linkat(fd, b"", -100, at(objects, n).encode(), 0x1000))
def git_or_eacces(args):
    r = subprocess.run(GIT + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise PermissionError(errno.EACCES, r.stderr)
def lfs_at(oid):
    return "proj/.git/lfs/objects/%s/%s/%s" % (oid[:2], oid[2:4], oid)
def lfs_put(oid, data):
    os.makedirs(os.path.dirname(lfs_at(oid)), exist_ok=True)
    os.makedirs("proj/.git/lfs/tmp", exist_ok=True)
    put_bytes("proj/.git/lfs/tmp/obj", data)
    os.rename("proj/.git/lfs/tmp/obj", lfs_at(oid))
P = "proj/.git/objects"
B = "bare.git/objects"
blob = "{blob}"
evil = loose(b"evil\n")
ahead = name(b"future\n")
ahead256 = name(b"future\n", hashlib.sha256)
os.chmod(at(P, blob), 0o644)
os.makedirs(P + "/pack", exist_ok=True)
put_bytes(P + "/pack/tmp_pack_x", b"PACK")
attempt([
    ("object-write", lambda: put_bytes(at(P, blob), evil)),
    ("object-append", lambda: put_bytes(at(P, blob), b"x", os.O_WRONLY | os.O_APPEND)),
    ("object-truncate", lambda: os.truncate(at(P, blob), 0)),
    ("object-rename", lambda: os.rename(temp(P, blob, evil), at(P, blob))),
    ("ahead-rename", lambda: os.rename(temp(P, ahead, evil), at(P, ahead))),
    ("ahead-link", lambda: os.link(temp(P, ahead, evil), at(P, ahead))),
    ("ahead-create", lambda: put_bytes(at(P, ahead), evil)),
    ("ahead-tmpfile", lambda: tmpfile_link(P, ahead, evil)),
    ("ahead-trailing", lambda: os.rename(temp(P, ahead, loose(b"future\n") + b"x"), at(P, ahead))),
    ("ahead-from-outside", lambda: (put_bytes("outside", evil), os.link("outside", at(P, ahead)))),
    ("second-name", lambda: os.link(at(P, blob), "alias")),
    ("moved-out", lambda: os.rename(at(P, blob), "moved")),
    ("pack", lambda: put_bytes(P + "/pack/pack-%s.pack" % ahead, b"PACK")),
    ("pack-index-rename", lambda: os.rename(P + "/pack/tmp_pack_x", P + "/pack/pack-%s.idx" % ahead)),
    ("multi-pack-index", lambda: put_bytes(P + "/pack/multi-pack-index", b"MIDX")),
    ("alternates", lambda: put_bytes(P + "/info/alternates", b"/tmp/store\n")),
    ("commit-graph", lambda: put_bytes(P + "/info/commit-graph", b"CGPH")),
    ("repack", lambda: git_or_eacces(["-C", "proj", "repack", "-a", "-d"])),
    ("bare-ahead", lambda: os.rename(temp(B, ahead, evil), at(B, ahead))),
    ("bare-alternates", lambda: put_bytes(B + "/info/alternates", b"/tmp/store\n")),
    ("sha256-ahead", lambda: os.rename(temp("r256/.git/objects", ahead256, evil), at("r256/.git/objects", ahead256))),
    ("lfs-forged", lambda: lfs_put(hashlib.sha256(b"large\n").hexdigest(), b"EVIL\n")),
    ("lfs-create", lambda: put_bytes(lfs_at(hashlib.sha256(b"large\n").hexdigest()), b"EVIL\n")),
])
# Git LFS's own way (a temporary renamed to its SHA-256): the right content goes in.
lfs_put(hashlib.sha256(b"large\n").hexdigest(), b"large\n")
print("lfs-ok", open(lfs_at(hashlib.sha256(b"large\n").hexdigest()), "rb").read() == b"large\n")
# git's own way with a descriptor kept of the temporary: the name gets what was checked.
kept = name(b"kept\n")
os.makedirs("%s/%s" % (P, kept[:2]), exist_ok=True)
fd = os.open("%s/%s/tmp_obj_kept" % (P, kept[:2]), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o444)
os.write(fd, loose(b"kept\n"))
os.link("%s/%s/tmp_obj_kept" % (P, kept[:2]), at(P, kept))
os.unlink("%s/%s/tmp_obj_kept" % (P, kept[:2]))
os.lseek(fd, 0, 0)
os.write(fd, zlib.compress(b"blob 5\0evil\n"))
os.close(fd)
r = subprocess.run(["git", "-C", "proj", "cat-file", "blob", kept], capture_output=True, text=True)
print("kept:", r.stdout.strip())
# Controls: git's own writes in the host's repositories (loose objects linked and renamed,
# `git hash-object -w`), a push into the host's bare repository (a quarantine moved object by
# object), a SHA-256 repository, and `git gc` (packs) in the run's own repository.
subprocess.run(["sh", "-c", "cd proj && echo 2 >> f && echo n > new && git add f new && git -c user.name=t -c user.email=t@t commit -qm two && echo future | git hash-object -w --stdin >/dev/null"], check=True)
subprocess.run(["sh", "-c", "git clone -q bare.git c && cd c && echo p > p && git add p && git -c user.name=t -c user.email=t@t commit -qm pushed && git push -q origin HEAD:main"], check=True)
subprocess.run(["sh", "-c", "cd r256 && echo 2 >> f && git add f && git -c user.name=t -c user.email=t@t commit -qm two"], check=True)
subprocess.run(["sh", "-c", "git init -q own && cd own && echo o > o && git add o && git -c user.name=t -c user.email=t@t commit -qm o && git gc -q && ls .git/objects/pack | grep -q pack-"], check=True)
subprocess.run(["git", "-C", "proj", "fsck", "--no-dangling"], check=True)
print("controls-ok")
"##,
            blob = blob,
        );
        let out = attacks(&d, &script);
        assert_refused(
            &out,
            &[
                "object-write",
                "object-append",
                "object-truncate",
                "object-rename",
                "ahead-rename",
                "ahead-link",
                "ahead-create",
                "ahead-tmpfile",
                "ahead-trailing",
                "ahead-from-outside",
                "second-name",
                "moved-out",
                "pack",
                "pack-index-rename",
                "multi-pack-index",
                "alternates",
                "commit-graph",
                "repack",
                "bare-ahead",
                "bare-alternates",
                "sha256-ahead",
                "lfs-forged",
                "lfs-create",
            ],
        );
        assert!(out.contains("kept: kept\n") && out.contains("controls-ok"), "{out}");
        assert!(out.contains("lfs-ok True\n"), "{out}");
        // On the host: every object is its name, and the history holds what was committed.
        for repo in ["proj", "bare.git", "r256"] {
            git_in(&d.ws.join(repo), &["fsck", "--no-dangling"]);
        }
        let show = |repo: &str, what: &str| {
            let o =
                std::process::Command::new("git").args(["cat-file", "-p", what]).current_dir(d.ws.join(repo)).output();
            String::from_utf8_lossy(&o.unwrap().stdout).into_owned()
        };
        assert_eq!(show("proj", &blob), "original\n");
        assert_eq!(show("r256", &blob256), "original\n");
        assert_eq!(show("proj", "HEAD:f"), "original\n2\n");
        assert_eq!(show("bare.git", "main:p"), "p\n");
        git_in(&d.ws.join("proj"), &["checkout", "HEAD~1", "--", "f"]);
        assert_eq!(fs::read_to_string(d.ws.join("proj/f")).unwrap(), "original\n");
    }

    /// A host repository's `rr-cache` is unreadable to runs (red team AC, 5 December): where
    /// the host turned rerere on, a conflicted file the workload replaced with a symlink to a
    /// file it may not read was copied by the user's `git commit` into `rr-cache/<id>/postimage`,
    /// which a later run read. The attack end to end, in a kept container and in a fresh one;
    /// every way to the copy is tried (a read, a listing, `O_PATH` reopened, a link, a copy of
    /// the directory, `git rerere` itself); controls: the repository's other files, the
    /// workload's own repository's `rr-cache`.
    pub fn a_host_repositorys_rerere_cache_is_unreadable_to_runs() {
        let d = TestDirs::new("sbx-guard");
        let secret = d.root.join("secret");
        fs::create_dir(&secret).unwrap();
        fs::write(secret.join("key"), "TOPSECRET\n").unwrap();
        let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
        let rr = d.ws.join("rr");
        git_in(&d.ws, &["init", "-q", "-b", "main", "rr"]);
        git_in(&rr, &["config", "rerere.enabled", "true"]);
        fs::write(rr.join("f"), "base\n").unwrap();
        git_in(&rr, &["add", "f"]);
        git_in(&rr, &[&id[..], &["commit", "-qm", "base"]].concat());
        git_in(&rr, &["checkout", "-qb", "other"]);
        fs::write(rr.join("f"), "other\n").unwrap();
        git_in(&rr, &[&id[..], &["commit", "-qam", "other"]].concat());
        git_in(&rr, &["checkout", "-q", "main"]);
        fs::write(rr.join("f"), "mine\n").unwrap();
        git_in(&rr, &[&id[..], &["commit", "-qam", "mine"]].concat());
        let merge = std::process::Command::new("git").args(["merge", "-q", "other"]).current_dir(&rr).output().unwrap();
        assert!(!merge.status.success(), "the merge stops on a conflict");
        let config = ProfileConfig {
            additional_roots: vec![RootAccess { path: secret.clone(), read: Access::Deny, write: Access::Deny }],
            ..d.allow_config()
        };
        let set = set_of(&d, config.clone());
        let exec = set.executor("k").unwrap();
        let key = secret.join("key");
        let k = key.display();
        let out = sh_ok(
            &exec,
            &rr,
            &format!("cat {k} 2>/dev/null && echo read-directly; rm f && ln -s {k} f && echo linked"),
        );
        assert!(out.contains("linked") && !out.contains("read-directly"), "{out}");
        // The user concludes the merge; rerere records f's resolution through the symlink.
        git_in(&rr, &["add", "f"]);
        git_in(&rr, &[&id[..], &["commit", "-qm", "merged"]].concat());
        let recorded = fs::read_dir(rr.join(".git/rr-cache"))
            .unwrap()
            .flatten()
            .any(|e| fs::read_to_string(e.path().join("postimage")).is_ok_and(|t| t.contains("TOPSECRET")));
        if !recorded {
            // As the suites' unprivileged user the host's git recorded no resolution at all (its
            // `rr-cache` stayed empty): what rerere would have copied is put there by hand, and
            // the reads below are tried against it the same way.
            println!("!!!! rerere recorded nothing here: rr-cache/<id>/postimage written by the test !!!!");
            let id = rr.join(".git/rr-cache/0123456789abcdef0123456789abcdef01234567");
            fs::create_dir_all(&id).unwrap();
            fs::write(id.join("postimage"), "TOPSECRET\n").unwrap();
        }
        let ids: Vec<String> = fs::read_dir(rr.join(".git/rr-cache"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let script = r#"
cd rr
for p in $IDS; do cat ".git/rr-cache/$p/postimage"; done; echo "cat=$?"
ls .git/rr-cache; echo "ls=$?"
grep -r TOPSECRET .git; echo "grep=$?"
cp -r .git/rr-cache /tmp/copy && cat /tmp/copy/*/postimage; echo "cp=$?"
git rerere diff; echo "rerere=$?"
python3 -c '
import os
for p in [".git/rr-cache/%s/postimage" % i for i in os.environ["IDS"].split()]:
    for way in ("path", "reopen", "link"):
        try:
            if way == "path":
                data = open(p).read()
            elif way == "reopen":
                fd = os.open(p, os.O_PATH)
                data = open("/proc/self/fd/%d" % fd).read()
            else:
                os.link(p, "alias")
                data = open("alias").read()
            print(way, "read", data)
        except OSError as e:
            print(way, "refused", e.strerror)
'
test "$(cat .git/HEAD)" = "ref: refs/heads/main" && echo head-ok
cd .. && git init -q own && mkdir -p own/.git/rr-cache/x && echo mine > own/.git/rr-cache/x/postimage && cat own/.git/rr-cache/x/postimage
"#;
        for (which, exec) in [("kept", &exec), ("fresh", &set_of(&d, config.clone()).executor("k").unwrap())] {
            let (_, out) = sh_in(exec, &d.ws, &format!("IDS='{}'; export IDS; {script}", ids.join(" ")));
            println!("{which}: {out}");
            assert!(!out.contains("TOPSECRET"), "{which}: the secret was read: {out}");
            for way in ["path", "reopen", "link"] {
                assert!(out.contains(&format!("{way} refused Permission denied")), "{which}, {way}: {out}");
            }
            assert!(out.contains("head-ok") && out.contains("mine\n"), "{which}: controls: {out}");
            fs::remove_dir_all(d.ws.join("own")).unwrap();
        }
    }

    /// A change the workload makes to a host repository's tracked files is never hidden from
    /// the user's `git status` and `git diff` by the index it writes (found on 5 December): git
    /// takes a file whose stat data match its entry for unchanged without reading it, skips an
    /// entry marked "assume unchanged" or "skip worktree", builds its next commit's trees from
    /// the cache tree, and compares whole seconds (a file added, then changed again within the
    /// second with its mtime set back). Each attack is tried after changing a tracked file; controls: the
    /// workload's own `git add` and `git commit` there, and the marks in its own repository.
    pub fn a_change_to_a_tracked_file_is_never_hidden_by_the_index() {
        let d = TestDirs::new("sbx-guard");
        let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
        let repo = d.ws.join("proj");
        git_in(&d.ws, &["init", "-q", "-b", "main", "proj"]);
        fs::create_dir(repo.join("sub")).unwrap();
        for f in ["stat", "assume", "skip", "sub/f", "kept", "racy", "lag"] {
            fs::write(repo.join(f), "original\n").unwrap();
        }
        git_in(&repo, &["add", "."]);
        git_in(&repo, &[&id[..], &["commit", "-qm", "one"]].concat());
        let rt = d.ws.join("rt");
        git_in(&d.ws, &["init", "-q", "-b", "main", "--ref-format=reftable", "rt"]);
        fs::write(rt.join("f"), "original\n").unwrap();
        git_in(&rt, &["add", "f"]);
        git_in(&rt, &[&id[..], &["commit", "-qm", "one"]].concat());
        let script = r##"
import hashlib, struct
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
def git(*args):
    return subprocess.run(GIT + list(args), cwd="proj", check=True, capture_output=True, text=True).stdout.strip()
def entries(data):
    n = struct.unpack(">I", data[8:12])[0]
    at, out = 12, {}
    for _ in range(n):
        name = at + 62 + (2 if struct.unpack(">H", data[at + 60:at + 62])[0] & 0x4000 else 0)
        end = data.index(b"\0", name)
        out[data[name:end].decode()] = at
        at += ((end + 1 - at) + 7) // 8 * 8
    return out, at
def put_index(data):
    body = data[:-20]
    fd = os.open("proj/.git/index.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, body + hashlib.sha1(body).digest())
    os.close(fd)
    os.rename("proj/.git/index.lock", "proj/.git/index")
# The stat cache: f changed (same size), its entry given the changed file's stat data.
with open("proj/stat", "w") as f:
    f.write("CHANGED!\n")
git("update-index", "--index-version", "2")
data = bytearray(open("proj/.git/index", "rb").read())
at = entries(data)[0]["stat"]
# Dated back: git reads a file whose mtime is not before the index's ("racily clean").
os.utime("proj/stat", (1700000000, 1700000000))
st = os.stat("proj/stat")
data[at:at + 40] = struct.pack(">10I", int(st.st_ctime), st.st_ctime_ns % 10**9, int(st.st_mtime), st.st_mtime_ns % 10**9, st.st_dev & 0xffffffff, st.st_ino & 0xffffffff, 0o100644, st.st_uid, st.st_gid, st.st_size)
put_index(bytes(data))
# The marks: a changed file marked so that git does not look at it.
with open("proj/assume", "w") as f:
    f.write("CHANGED!\n")
git("update-index", "--assume-unchanged", "assume")
with open("proj/skip", "w") as f:
    f.write("CHANGED!\n")
git("update-index", "--skip-worktree", "skip")
# The cache tree: sub's tree as one with the workload's content, the entries as they were.
evil = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd="proj", input="EVIL\n", capture_output=True, text=True, check=True).stdout.strip()
tree = subprocess.run(["git", "mktree"], cwd="proj", input="100644 blob %s\tf\n" % evil, capture_output=True, text=True, check=True).stdout.strip()
data = open("proj/.git/index", "rb").read()
_, end = entries(data)
cache = b"\0-1 1\n" + b"sub\0" + b"1 0\n" + bytes.fromhex(tree)
exts, at = b"", end
while at < len(data) - 20:
    size = struct.unpack(">I", data[at + 4:at + 8])[0]
    if data[at:at + 4] != b"TREE":
        exts += data[at:at + 8 + size]
    at += 8 + size
put_index(data[:end] + b"TREE" + struct.pack(">I", len(cache)) + cache + exts + b"\0" * 20)
print("ls-files:", git("ls-files", "-v").replace("\n", " "))
# What git takes rules and refs from without showing them: `info/exclude` (a new file hidden),
# `info/attributes` (a change's content hidden from `git diff`), a reftable's replace refs.
def put(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, data)
    os.close(fd)
with open("proj/sitecustomize.py", "w") as f:
    f.write("import os\n")
def replace_in(repo, tree):
    r = subprocess.run(GIT + ["-C", repo, "replace", "-f", "HEAD^{tree}", tree], capture_output=True, text=True)
    if r.returncode != 0:
        raise PermissionError(errno.EACCES, r.stderr)
tree_rt = subprocess.run(["git", "-C", "rt", "mktree"], input="100644 blob %s\tf\n" % subprocess.run(["git", "-C", "rt", "hash-object", "-w", "--stdin"], input="EVIL\n", capture_output=True, text=True, check=True).stdout.strip(), capture_output=True, text=True, check=True).stdout.strip()
attempt([
    ("info-exclude", lambda: put("proj/.git/info/exclude", b"sitecustomize.py\n")),
    ("info-attributes", lambda: put("proj/.git/info/attributes", b"* -diff\n")),
    ("info-renamed", lambda: (put("proj/.git/attrs", b"* -diff\n"), os.rename("proj/.git/attrs", "proj/.git/info/attributes"))),
    ("reftable-replace", lambda: replace_in("rt", tree_rt)),
    ("shallow", lambda: put("proj/.git/shallow", (git("rev-parse", "HEAD") + "\n").encode())),
    ("shallow-renamed", lambda: (put("proj/.git/sh", b"x\n"), os.rename("proj/.git/sh", "proj/.git/shallow"))),
    # A FIFO for the index: the guard's open of it waited for a writer, and every guarded call
    # of the run with it.
    # (The FIFO made outside: none is made in a git directory.)
    ("index-fifo", lambda: (os.mkfifo("proj/il"), os.rename("proj/il", "proj/.git/index"))),
    # A FIFO under a name git opens: the user's `git status` waited for ever (red team AG).
    ("head-fifo", lambda: (os.mkfifo("proj/x.lock"), os.rename("proj/x.lock", "proj/.git/ORIG_HEAD"))),
    ("ref-fifo", lambda: os.mkfifo("proj/.git/refs/heads/fifo")),
    ("fifo-linked", lambda: (os.mkfifo("proj/ff"), os.link("proj/ff", "proj/.git/FETCH_HEAD"))),
    ("fifo-in-dir", lambda: (os.mkdir("proj/dd"), os.mkfifo("proj/dd/x"), os.rename("proj/dd", "proj/.git/refs/heads/dd"))),
    # In the work tree, under a name git opens (red team AH).
    ("gitignore-fifo", lambda: os.mkfifo("proj/sub/.gitignore")),
    ("gitattributes-fifo", lambda: (os.mkfifo("proj/ga"), os.rename("proj/ga", "proj/.gitattributes"))),
    ("mailmap-fifo", lambda: (os.mkfifo("proj/mm"), os.link("proj/mm", "proj/.mailmap"))),
])
for leftover in ("proj/il", "proj/x.lock", "proj/ff", "proj/dd/x", "proj/ga", "proj/mm"):
    os.unlink(leftover)
os.rmdir("proj/dd")
os.mkfifo("proj/sub/fifo-control")
os.unlink("proj/sub/fifo-control")
print("fifo-control ok")
r = subprocess.run(["git", "-C", "rt", "replace", "-l"], capture_output=True, text=True)
print("rt-replaced:", repr(r.stdout))
subprocess.run(["sh", "-c", "git init -q --ref-format=reftable own-rt && cd own-rt && echo a > a && git add a && git -c user.name=t -c user.email=t@t commit -qm a && git replace -f HEAD^{tree} $(git write-tree) && echo own-reftable-ok"], check=True)
# Controls: the workload's own add and commit; the marks in its own repository.
with open("proj/kept", "w") as f:
    f.write("committed\n")
git("add", "kept")
git("commit", "-qm", "by the run")
# Within one second: a file changed, dated back (else git, seeing an mtime not before the
# index's, reads it anyway) and added (git's index write takes its stat data), then changed
# again to the same size and dated back again: git compares whole seconds.
with open("proj/racy", "w") as f:
    f.write("CHANGED1\n")
os.utime("proj/racy", (1700000000, 1700000000))
git("add", "racy")
st = os.stat("proj/racy")
with open("proj/racy", "w") as f:
    f.write("CHANGED2\n")
os.utime("proj/racy", ns=(st.st_atime_ns, st.st_mtime_ns))
print("racy-same-second:", int(os.stat("proj/racy").st_ctime) == int(st.st_ctime))
# The index with that entry kept, as another run's index write that read it before the entry
# was checked again could put it back afterwards (red team AI).
with open("proj/.git/index", "rb") as f:
    open("stale-index", "wb").write(f.read())
# The same, the second rewrite made once the clock a process reads has left the second while
# the kernel's coarse clock, which dates file changes, has not (red team AG): a guarded call
# in that window had the guard check the entry again too early.
import ctypes
libc = ctypes.CDLL(None)
class TS(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
def clock(c):
    t = TS()
    libc.clock_gettime(c, ctypes.byref(t))
    return t.s
def lag_attack():
    with open("proj/lag", "w") as f:
        f.write("CHANGED1\n")
    os.utime("proj/lag", (1700000000, 1700000000))
    git("add", "lag")
    x = os.stat("proj/lag").st_ctime_ns // 10**9
    if clock(0) != x:
        return "missed"
    while clock(0) == x:
        pass
    if clock(5) != x:
        return "missed"
    try:
        os.rename("/nonexistent-a", "/nonexistent-b")
    except OSError:
        pass
    fd = os.open("proj/lag", os.O_WRONLY)
    os.pwrite(fd, b"CHANGED2\n", 0)
    os.close(fd)
    os.utime("proj/lag", (1700000000, 1700000000))
    return "tried" if os.stat("proj/lag").st_ctime_ns // 10**9 == x else "missed"
for _ in range(5):
    lag = lag_attack()
    if lag == "tried":
        break
    git("reset", "-q", "lag")
print("lag:", lag)
subprocess.run(["sh", "-c", "git init -q own && cd own && echo a > a && git add a && git update-index --assume-unchanged a && git ls-files -v | grep -q '^h a' && echo own-marks-ok"], check=True)
"##;
        let out = attacks(&d, script);
        assert!(
            out.contains("own-marks-ok") && out.contains("own-reftable-ok") && out.contains("fifo-control ok"),
            "{out}"
        );
        assert_refused(
            &out,
            &[
                "info-exclude",
                "info-attributes",
                "info-renamed",
                "shallow",
                "shallow-renamed",
                "index-fifo",
                "head-fifo",
                "ref-fifo",
                "fifo-linked",
                "fifo-in-dir",
                "gitignore-fifo",
                "gitattributes-fifo",
                "mailmap-fifo",
            ],
        );
        assert!(out.contains("rt-replaced: ''\n"), "{out}");
        // The user looks: every change shows, nothing is marked, the cache tree is gone.
        let run = |args: &[&str]| {
            let o = std::process::Command::new("git").args(args).current_dir(&repo).output().unwrap();
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        let status = run(&["status", "--porcelain"]);
        for f in ["stat", "assume", "skip"] {
            assert!(status.contains(&format!(" M {f}\n")), "{f} hidden: {status}");
        }
        // Added, then changed again within the second: both changes show.
        assert!(status.contains("MM racy\n"), "racy hidden: {status}");
        if out.contains("lag: tried") {
            assert!(status.contains("MM lag\n"), "lag hidden: {status}");
        } else {
            println!("note: the coarse clock's window was missed five times: the lag attack was not tried");
        }
        assert!(!repo.join(".git/index.lock").exists(), "the check took git's lock and let it go");
        assert!(run(&["diff"]).contains("+CHANGED2"), "the second change's content shows");
        assert!(status.contains("?? sitecustomize.py\n"), "{status}");
        assert!(run(&["diff"]).contains("+CHANGED!"), "the diff shows the content");
        let o = std::process::Command::new("git").args(["show", "HEAD:f"]).current_dir(&rt).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), "original\n");
        assert!(!status.contains("kept") && !status.contains("sub/"), "{status}");
        let marks = run(&["ls-files", "-v"]);
        assert!(marks.lines().all(|l| l.starts_with("H ")), "{marks}");
        assert!(run(&["log", "--oneline"]).contains("by the run"));
        // The user's next commit of another change carries sub/f as the index has it.
        fs::write(repo.join("other"), "x\n").unwrap();
        git_in(&repo, &["add", "other"]);
        git_in(&repo, &[&id[..], &["commit", "-qm", "user"]].concat());
        assert_eq!(run(&["show", "HEAD:sub/f"]), "original\n");
        // The stale index put back: the change to racy still shows (its file left the second).
        fs::rename(d.ws.join("stale-index"), repo.join(".git/index")).unwrap();
        let status = run(&["status", "--porcelain"]);
        let line = status.lines().find(|l| l.ends_with(" racy")).unwrap_or_default();
        assert_eq!(line.as_bytes().get(1), Some(&b'M'), "racy hidden by the stale index: {status}");
    }

    /// Entries the host's git left racily clean (its file and its index written in one second)
    /// are never made to look clean by the run (red team AR, 5 December): git reads such an
    /// entry's file because the index is not older than it, so a workload that rewrote the
    /// file in place in that second (same size, mtime set back: nothing git compares differs)
    /// and then made the index newer hid the change from `git status`, `git diff` and
    /// `git commit -a`. Both ways are closed: setting a host index's times is refused (`touch`,
    /// `utime`, `utimes`, `futimens`), and an index the run writes keeps such an entry only where
    /// the file is as the entry says. Controls: the other file's times are set, and without
    /// either step git's own check shows the change. The run must begin in the second of the
    /// host's commit: tried up to five times.
    pub fn entries_the_host_left_racily_clean_stay_read_by_git() {
        let d = TestDirs::new("sbx-guard");
        let repo = d.ws.join("proj");
        let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
        git_in(&d.ws, &["init", "-q", "-b", "main", "proj"]);
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        // Warm: the timed runs start within milliseconds.
        sh_ok(&exec, &d.ws, "true");
        let script = r##"
import hashlib, os, subprocess, sys, time
st = os.stat("proj/app.sh")
if int(st.st_ctime) != int(time.time()) or int(os.stat("proj/.git/index").st_mtime) != int(st.st_ctime):
    print("missed")
    sys.exit(0)
data = open("proj/app.sh", "rb").read()
fd = os.open("proj/app.sh", os.O_WRONLY)
os.pwrite(fd, b"PAYLOAD".ljust(len(data) - 1, b"#") + b"\n", 0)
os.close(fd)
os.utime("proj/app.sh", ns=(st.st_atime_ns, st.st_mtime_ns))
if int(os.stat("proj/app.sh").st_ctime) != int(st.st_ctime):
    print("missed")
    sys.exit(0)
while int(time.time()) == int(st.st_ctime):
    time.sleep(0.01)
time.sleep(0.05)
fd = os.open("proj/.git/index", os.O_RDONLY)
attempt([
    ("touch-index", lambda: os.utime("proj/.git/index")),
    ("touch-index-ahead", lambda: os.utime("proj/.git/index", (st.st_mtime + 100, st.st_mtime + 100))),
    ("futimens-index", lambda: os.utime(fd, None)),
    ("utimes-index", lambda: checked(libc.utimes(b"proj/.git/index", None))),
    ("utime-index", lambda: checked(libc.utime(b"proj/.git/index", None))),
    ("touch-index-at", lambda: os.utime("index", dir_fd=os.open("proj/.git", os.O_RDONLY))),
    ("touch-index-proc", lambda: os.utime("/proc/self/fd/%d" % fd)),
])
os.utime("proj/other", (1, 1))
print("other-touched", os.stat("proj/other").st_mtime == 1)
if sys.argv[1:] == ["rewrite"]:
    # The index written again as it was (what a `git update-index` that changed nothing does).
    body = open("proj/.git/index", "rb").read()
    w = os.open("proj/.git/index.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(w, body)
    os.close(w)
    os.rename("proj/.git/index.lock", "proj/.git/index")
print("tried")
"##;
        let status = || {
            let o =
                std::process::Command::new("git").args(["status", "--porcelain"]).current_dir(&repo).output().unwrap();
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        for way in ["rewrite", "touch-only"] {
            let mut tried = false;
            for attempt in 0..5 {
                // The host commits at the start of a second, and the run follows at once.
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
                std::thread::sleep(
                    std::time::Duration::from_millis(1005)
                        - std::time::Duration::from_nanos(u64::from(now.subsec_nanos())),
                );
                fs::write(repo.join("app.sh"), format!("echo safe {way} {attempt} #####################\n")).unwrap();
                fs::write(repo.join("other"), "x\n").unwrap();
                git_in(&repo, &["add", "app.sh", "other"]);
                git_in(&repo, &[&id[..], &["commit", "-qm", "host"]].concat());
                fs::write(d.ws.join("g.py"), format!("{PY_HOST_STEPS}{script}")).unwrap();
                let out = sh_ok(&exec, &d.ws, &format!("/usr/bin/python3 g.py {way}"));
                if out.contains("missed") {
                    continue;
                }
                assert!(out.contains("tried") && out.contains("other-touched True"), "{way}: {out}");
                assert_refused(
                    &out,
                    &[
                        "touch-index",
                        "touch-index-ahead",
                        "futimens-index",
                        "utimes-index",
                        "utime-index",
                        "touch-index-at",
                        "touch-index-proc",
                    ],
                );
                let shown = status();
                assert!(
                    shown.contains(" M proj/app.sh\n") || shown.contains(" M app.sh\n"),
                    "{way}: the change is hidden: {shown}"
                );
                let o = std::process::Command::new("git").args(["diff"]).current_dir(&repo).output().unwrap();
                assert!(String::from_utf8_lossy(&o.stdout).contains("+PAYLOAD"), "{way}: the diff shows the content");
                git_in(&repo, &["checkout", "--", "app.sh"]);
                tried = true;
                break;
            }
            if !tried {
                println!("note: {way}: the host's second was missed five times: not tried");
            }
        }
    }

    /// A file the guard reads by a name the workload chose never stalls it (red team AU, 5
    /// December): a worktree entry made in one run with a FIFO as its `gitdir`, made a git
    /// directory by its `config` in the next, had an index placed in it, and the guard's read
    /// of the FIFO stalled the placing and with it the run's end, so that a rebase left with an
    /// `exec` line was never moved aside (the host's `git rebase --continue` ran it); a
    /// `commondir` naming a directory whose `config` is a FIFO stalled every guarded call. Now
    /// the run ends at once, the rebase is moved aside, and the `touch` of the index is refused
    /// at once. Controls: a directory is made after it; the host's `--continue` finds nothing.
    pub fn files_the_guard_reads_never_stall_it() {
        let d = TestDirs::new("sbx-guard");
        let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
        let r = d.ws.join("r");
        git_in(&d.ws, &["init", "-q", "-b", "main", "r"]);
        for i in ["1", "2"] {
            fs::write(r.join(i), format!("{i}\n")).unwrap();
            git_in(&r, &["add", i]);
            git_in(&r, &[&id[..], &["commit", "-qm", i]].concat());
        }
        let set = set_of(&d, d.allow_config());
        let exec = set.executor("k").unwrap();
        sh_ok(&exec, &r, "mkdir -p wt/worktrees/z && mkfifo wt/worktrees/z/gitdir && mkdir sub && : > sub/index");
        let marker = d.root.join("ran");
        let script = format!(
            r#"export GIT_SEQUENCE_EDITOR="printf 'break\npick %s\nexec touch {}\n' $(git rev-parse --short HEAD) > "
git -c user.name=t -c user.email=t@t rebase -i HEAD~1 >/dev/null 2>&1; test -d .git/rebase-merge && echo rebase-left
mkdir -p /tmp/evil && mkfifo /tmp/evil/config && printf '/tmp/evil\n' > sub/commondir
timeout 10 touch sub/index; echo "touch-index=$?"
mkdir made-after && echo control-made
printf '[core]\n\trepositoryformatversion = 0\n' > wt/worktrees/z/config
cp .git/index wt/worktrees/z/index.lock && (mv wt/worktrees/z/index.lock wt/worktrees/z/index &)
sleep 0.5; echo ended"#,
            marker.display()
        );
        let start = std::time::Instant::now();
        let out = sh_ok(&exec, &r, &script);
        assert!(start.elapsed() < std::time::Duration::from_secs(9), "the run's end stalled: {:?}", start.elapsed());
        assert!(out.contains("rebase-left") && out.contains("control-made") && out.contains("ended"), "{out}");
        let touched = out.lines().find(|l| l.starts_with("touch-index=")).unwrap_or_default();
        assert!(touched != "touch-index=0" && touched != "touch-index=124", "{out}");
        assert!(!r.join(".git/rebase-merge").exists(), "the rebase with its exec line was left in place");
        let o = std::process::Command::new("git").args(["rebase", "--continue"]).current_dir(&r).output().unwrap();
        assert!(!o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        assert!(!marker.exists(), "the host ran the workload's exec line");
    }

    /// An operation the workload begins in a host repository and leaves in progress is one the
    /// user's `--continue` may take, or none (red team AE, 5 December): a rebase stopped at a
    /// `break` with an `exec` line further down its todo ran the command on the host at the
    /// user's `git rebase --continue`. Such state is moved aside when the run ends (also a
    /// `sequencer/todo` with an `exec` line, a strategy with a slash, a `head-name` outside the
    /// branches, and an `exec` line a process left behind appends after the workload's end);
    /// controls: a rebase stopped on a conflict with safe state stays in progress, and the user
    /// continues it.
    pub fn an_operation_the_run_leaves_in_a_host_repository_runs_nothing() {
        let d = TestDirs::new("sbx-guard");
        let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
        for repo in ["rx", "rs", "rh", "rl", "ok", "cp"] {
            let r = d.ws.join(repo);
            git_in(&d.ws, &["init", "-q", "-b", "main", repo]);
            fs::write(r.join("f"), "a\n").unwrap();
            git_in(&r, &["add", "f"]);
            git_in(&r, &[&id[..], &["commit", "-qm", "a"]].concat());
            git_in(&r, &["checkout", "-qb", "topic"]);
            fs::write(r.join("f"), "topic\n").unwrap();
            git_in(&r, &[&id[..], &["commit", "-qam", "t"]].concat());
            git_in(&r, &["checkout", "-q", "main"]);
            fs::write(r.join("f"), "main\n").unwrap();
            git_in(&r, &[&id[..], &["commit", "-qam", "m"]].concat());
            git_in(&r, &["checkout", "-q", "topic"]);
        }
        let script = r##"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
def sh(cmd, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(["sh", "-c", cmd], env=e, capture_output=True, text=True).returncode
def editor(todo):
    return {"GIT_SEQUENCE_EDITOR": "printf '%s' >" % todo.replace("'", "")}
# An interactive rebase stopped at a break, an exec line further down.
sh("cd rx && git -c user.name=t -c user.email=t@t rebase -i main", editor("break\nexec true\nexec touch ../ran-rx\npick HEAD\n"))
# Rebases stopped on the conflict, their state then changed by the workload.
for repo in ("rs", "rh", "rl", "ok"):
    sh("cd %s && git -c user.name=t -c user.email=t@t rebase main" % repo)
with open("rs/.git/rebase-merge/strategy", "w") as f:
    f.write("../evil\n")
with open("rh/.git/rebase-merge/head-name", "w") as f:
    f.write("refs/replace/0123456789012345678901234567890123456789\n")
# A process the workload leaves behind appends an exec line as the workload ends (`rl-go`,
# made last): between the first process's end and the sweep of the rest.
subprocess.Popen(["sh", "-c", "while [ ! -e rl-go ]; do :; done; echo 'exec touch ../ran-rl' >> rl/.git/rebase-merge/git-rebase-todo"], start_new_session=True)
# A cherry-pick of two commits stopped on a conflict, its todo given an exec line.
sh("cd cp && git checkout -q main && git -c user.name=t -c user.email=t@t cherry-pick topic~1 topic")
if os.path.exists("cp/.git/sequencer/todo"):
    with open("cp/.git/sequencer/todo", "a") as f:
        f.write("exec touch ../ran-cp\n")
print("states:", sorted(n for n in ("rx", "rs", "rh", "rl", "ok") if os.path.isdir(n + "/.git/rebase-merge")), os.path.isdir("cp/.git/sequencer"))
open("rl-go", "w").close()
"##;
        let out = attacks(&d, script);
        assert!(out.contains("states: ['ok', 'rh', 'rl', 'rs', 'rx'] True"), "{out}");
        for repo in ["rx", "rs", "rh"] {
            let r = d.ws.join(repo);
            assert!(!r.join(".git/rebase-merge").exists(), "{repo}: still in progress");
            assert!(r.join(".git/rebase-merge.refused-by-sandbox").is_dir(), "{repo}: not kept aside");
        }
        // The process left behind either appended before the sweep ended it (then the state
        // is moved aside) or did not (then the rebase in progress holds no exec line).
        let rl = d.ws.join("rl/.git");
        let todo = fs::read_to_string(rl.join("rebase-merge/git-rebase-todo")).unwrap_or_default();
        let aside = rl.join("rebase-merge.refused-by-sandbox").is_dir();
        println!("rl: {}", if aside { "appended, moved aside" } else { "killed before it appended" });
        assert!(aside || !todo.contains("exec"), "rl: an exec line in a rebase in progress: {todo}");
        assert!(!d.ws.join("cp/.git/sequencer").exists() && d.ws.join("cp/.git/sequencer.refused-by-sandbox").is_dir());
        // The user: continuing runs nothing of the workload's; the safe rebase goes on.
        for repo in ["rx", "rs", "rh", "rl", "cp"] {
            let verb = if repo == "cp" { "cherry-pick" } else { "rebase" };
            let _ = std::process::Command::new("git")
                .args([&id[..], &["-c", "core.editor=true", verb, "--continue"]].concat())
                .current_dir(d.ws.join(repo))
                .output()
                .unwrap();
        }
        for ran in ["ran-rx", "ran-rl", "ran-cp"] {
            assert!(!d.ws.join(ran).exists(), "{ran}: the host ran the workload's command");
        }
        let ok = d.ws.join("ok");
        assert!(ok.join(".git/rebase-merge").is_dir(), "control: a safe rebase stays in progress");
        fs::write(ok.join("f"), "resolved\n").unwrap();
        git_in(&ok, &["add", "f"]);
        git_in(&ok, &[&id[..], &["-c", "core.editor=true", "rebase", "--continue"]].concat());
        assert!(!ok.join(".git/rebase-merge").exists());
    }

    /// The cost, roughly: 1000 file creations with and without the guard, the best of three
    /// runs each (printed only: the machines that run the suite vary too much for a bound).
    pub fn cost_of_the_guard() {
        let d = TestDirs::new("sbx-guard");
        let script = "for i in $(seq 1000); do : > f$i; done; rm f*";
        let mut best = [u128::MAX; 2];
        let sets: Vec<ExecutorSet> = [true, false]
            .into_iter()
            .map(|defaults| {
                let protected_paths = Protection { defaults, ..Protection::default() };
                set_of(&d, ProfileConfig { protected_paths, ..d.allow_config() })
            })
            .collect();
        let execs: Vec<_> = sets.iter().map(|s| s.executor("k").unwrap()).collect();
        for (i, e) in execs.iter().enumerate() {
            fs::create_dir(d.ws.join(format!("d{i}"))).unwrap();
            sh_ok(e, &d.ws.join(format!("d{i}")), "true");
        }
        for _ in 0..3 {
            for (i, e) in execs.iter().enumerate() {
                let start = Instant::now();
                sh_ok(e, &d.ws.join(format!("d{i}")), script);
                best[i] = best[i].min(start.elapsed().as_millis());
            }
        }
        println!("cost: 1000 creations, best of 3 runs: with the guard {} ms, without {} ms", best[0], best[1]);
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if !sandbox_tests::privileged("linux_protect_guard") {
            return std::process::ExitCode::SUCCESS;
        }
        use linux::*;
        sandbox_tests::run_tests(&[
            ("protected_names_cannot_be_created_at_any_depth", protected_names_cannot_be_created_at_any_depth),
            ("a_path_rewritten_during_the_call_is_decided_once", a_path_rewritten_during_the_call_is_decided_once),
            (
                "a_socket_cannot_be_bound_to_a_path_while_unix_sockets_are_denied",
                a_socket_cannot_be_bound_to_a_path_while_unix_sockets_are_denied,
            ),
            ("git_works_under_the_guard", git_works_under_the_guard),
            ("the_opt_out_creates_the_names", the_opt_out_creates_the_names),
            ("the_guard_is_served_before_the_workload_starts", the_guard_is_served_before_the_workload_starts),
            ("opens_that_create_nothing_leave_the_guard_serving", opens_that_create_nothing_leave_the_guard_serving),
            (
                "protected_files_the_host_replaces_or_creates_during_a_run_stay_read_only",
                protected_files_the_host_replaces_or_creates_during_a_run_stay_read_only,
            ),
            (
                "git_directories_the_host_makes_during_a_run_are_protected",
                git_directories_the_host_makes_during_a_run_are_protected,
            ),
            ("what_the_host_made_is_not_removed_or_moved_away", what_the_host_made_is_not_removed_or_moved_away),
            (
                "what_the_host_is_making_during_a_run_stays_the_hosts",
                what_the_host_is_making_during_a_run_stays_the_hosts,
            ),
            ("a_number_the_run_freed_names_nothing_of_the_hosts", a_number_the_run_freed_names_nothing_of_the_hosts),
            ("a_run_makes_as_many_repositories_as_it_likes", a_run_makes_as_many_repositories_as_it_likes),
            (
                "symlinks_do_not_come_into_a_git_directory_inside_a_directory",
                symlinks_do_not_come_into_a_git_directory_inside_a_directory,
            ),
            (
                "a_git_directory_the_run_prepared_is_the_hosts_once_the_host_sets_it_up",
                a_git_directory_the_run_prepared_is_the_hosts_once_the_host_sets_it_up,
            ),
            (
                "a_worktree_entry_names_the_repository_that_holds_it",
                a_worktree_entry_names_the_repository_that_holds_it,
            ),
            (
                "the_index_of_a_host_repository_names_only_what_git_checks_out",
                the_index_of_a_host_repository_names_only_what_git_checks_out,
            ),
            (
                "the_object_store_of_a_host_repository_takes_only_objects_named_by_their_content",
                the_object_store_of_a_host_repository_takes_only_objects_named_by_their_content,
            ),
            (
                "a_host_repositorys_rerere_cache_is_unreadable_to_runs",
                a_host_repositorys_rerere_cache_is_unreadable_to_runs,
            ),
            (
                "a_change_to_a_tracked_file_is_never_hidden_by_the_index",
                a_change_to_a_tracked_file_is_never_hidden_by_the_index,
            ),
            (
                "entries_the_host_left_racily_clean_stay_read_by_git",
                entries_the_host_left_racily_clean_stay_read_by_git,
            ),
            ("files_the_guard_reads_never_stall_it", files_the_guard_reads_never_stall_it),
            (
                "an_operation_the_run_leaves_in_a_host_repository_runs_nothing",
                an_operation_the_run_leaves_in_a_host_repository_runs_nothing,
            ),
            ("cost_of_the_guard", cost_of_the_guard),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
