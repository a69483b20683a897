//! Issue 14, protected paths on the Linux backend through the library: every default entry of
//! `protect-v1` that exists, at the top of the workspace and deeper, cannot be written,
//! created in, removed, renamed over, moved away with an ancestor or replaced by a symlink from
//! inside; the git workflow keeps working on a real repository and on a linked worktree while
//! hooks and config stay read-only; an opt-out profile writes them (the control); file roots
//! deny read or write of one file; a root that does not exist cannot be created. Needs root or
//! the rootless mode. The creation guard's own attacks on names that do not exist are in
//! `linux_protect_guard`.
//!
//! `harness = false`: `main` calls `sandbox::init()` first, as every embedder must.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::fs;
    use std::path::Path;
    use std::process::Command;
    use std::sync::Arc;

    use sandbox::{
        Access, Error, Executor, ExecutorSet, ExitStatus, Profile, ProfileConfig, Protection, RootAccess, Status,
    };
    use sandbox_tests::TestDirs;

    pub use sandbox_tests::deadline as dl;

    /// Workspace read-write, host readable (git and sh come from there), network denied.
    fn config(dirs: &TestDirs) -> ProfileConfig {
        ProfileConfig { network: Access::Deny, ..dirs.allow_config() }
    }

    fn executor(dirs: &TestDirs, config: ProfileConfig) -> (ExecutorSet, Arc<Executor>) {
        let profile = Profile::new(config).unwrap();
        let set = ExecutorSet::new(&dl(), &profile, dirs.set_options(4)).unwrap();
        let exec = set.executor("k").unwrap();
        (set, exec)
    }

    /// Runs `script` with `sh -c` in `cwd`; (exit code, combined output).
    fn sh_in(exec: &Executor, cwd: &Path, script: &str) -> Result<(i32, String), Error> {
        exec.run_argv(&dl(), cwd, &["/bin/sh", "-c", script]).map(|o| {
            let code = match o.status {
                ExitStatus::Code(c) => c,
                other => panic!("{script}: {other:?}"),
            };
            (code, String::from_utf8_lossy(&o.bytes).into_owned())
        })
    }

    fn sh_ok(exec: &Executor, cwd: &Path, script: &str) -> String {
        let (code, out) = sh_in(exec, cwd, script).unwrap();
        assert_eq!(code, 0, "{script}: {out}");
        out
    }

    fn attempt(name: &str, cmd: &str) -> String {
        format!("({cmd}) >/dev/null 2>&1; echo {name}=$?; ")
    }

    /// Each attack line `<name>=<code>` must show a failure.
    fn all_failed(out: &str, names: &[String]) {
        for n in names {
            let line = out.lines().find(|l| l.starts_with(&format!("{n}="))).unwrap_or_else(|| panic!("no {n}: {out}"));
            assert_ne!(line, format!("{n}=0"), "attack {n} succeeded: {out}");
        }
    }

    /// The default entries that are plain names (git's are tested with a real repository),
    /// with whether each is a directory.
    const NAMES: &[(&str, bool)] = &[
        (".envrc", false),
        (".vscode", true),
        (".idea", true),
        (".mcp.json", false),
        (".codex", true),
        (".agents", true),
        (".cursor", true),
        (".claude/commands", true),
        (".claude/agents", true),
        (".claude/settings.json", false),
        (".claude/settings.local.json", false),
        (".bashrc", false),
        (".bash_profile", false),
        (".bash_login", false),
        (".profile", false),
        (".zshrc", false),
        (".zprofile", false),
        (".zshenv", false),
        (".zlogin", false),
        (".gitconfig", false),
        (".gitmodules", false),
        (".ripgreprc", false),
        (".pre-commit-config.yaml", false),
        ("lefthook.yml", false),
        ("lefthook.yaml", false),
        (".lefthook.yml", false),
        (".lefthook.yaml", false),
        ("lefthook-local.yml", false),
        ("lefthook-local.yaml", false),
        (".lefthook-local.yml", false),
        (".lefthook-local.yaml", false),
        ("lefthook.json", false),
        ("lefthook.jsonc", false),
        ("lefthook.toml", false),
        (".lefthook.json", false),
        (".lefthook.jsonc", false),
        (".lefthook.toml", false),
        ("lefthook-local.json", false),
        ("lefthook-local.toml", false),
        (".devcontainer", true),
        (".devcontainer.json", false),
        (".gemini", true),
        (".zed", true),
        ("opencode.json", false),
        ("opencode.jsonc", false),
        (".opencode", true),
        (".continue", true),
        (".kiro", true),
        (".roo", true),
        (".amazonq", true),
        (".aider.conf.yml", false),
        (".qwen", true),
        (".kilocode", true),
        (".junie", true),
        ("crush.json", false),
        (".crush.json", false),
        ("mise.toml", false),
        (".mise.toml", false),
        ("mise.local.toml", false),
        (".mise.local.toml", false),
        (".mise", true),
        (".helix", true),
        (".nvim.lua", false),
        (".nvimrc", false),
        (".exrc", false),
        (".vimrc", false),
        (".gvimrc", false),
        (".pdbrc", false),
        (".dir-locals.el", false),
        (".dir-locals-2.el", false),
        (".hg/hgrc", false),
        (".sl/config", false),
        (".hg/hgrc-not-shared", false),
        (".hg/sharedpath", false),
        (".hg/requires", false),
        (".sl/sharedpath", false),
        (".sl/requires", false),
        (".cargo/config.toml", false),
        (".cargo/config", false),
        (".jj/repo/config.toml", false),
        ("rust-toolchain.toml", false),
        ("rust-toolchain", false),
        (".claude/skills", true),
        (".github/hooks", true),
        (".windsurf", true),
        (".clinerules/hooks", true),
        (".cline", true),
        (".factory", true),
        (".augment", true),
    ];

    fn plant(base: &Path, entry: &str, dir: bool) {
        let p = base.join(entry);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        if dir {
            fs::create_dir_all(&p).unwrap();
            fs::write(p.join("keep"), "ORIGINAL\n").unwrap();
        } else {
            fs::write(&p, "ORIGINAL\n").unwrap();
        }
    }

    fn untouched(base: &Path, entry: &str, dir: bool) {
        let p = base.join(entry);
        let file = if dir { p.join("keep") } else { p.clone() };
        assert_eq!(fs::read_to_string(&file).unwrap_or_default(), "ORIGINAL\n", "{} changed", file.display());
        if dir {
            let names: Vec<_> = fs::read_dir(&p).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, vec![std::ffi::OsString::from("keep")], "{} gained entries", p.display());
        }
    }

    /// The attacks on one existing entry at `rel` (relative to the workspace), by name prefix.
    fn attacks(tag: &str, rel: &str, dir: bool) -> (String, Vec<String>) {
        let parent = Path::new(rel).parent().map(|p| p.display().to_string()).filter(|p| !p.is_empty());
        let mut script = String::new();
        let mut names = Vec::new();
        let mut add = |n: &str, cmd: String| {
            let name = format!("{tag}-{n}");
            script.push_str(&attempt(&name, &cmd));
            names.push(name);
        };
        if dir {
            add("create-in", format!("echo evil > '{rel}/new'"));
            add("write", format!("echo evil >> '{rel}/keep'"));
            add("remove", format!("rm -rf '{rel}' && test ! -e '{rel}'"));
            add("rename-over", format!("mkdir -p evil-{tag} && mv -T evil-{tag} '{rel}'"));
            add("rename-away", format!("mv '{rel}' moved-{tag}"));
        } else {
            add("write", format!("echo evil >> '{rel}'"));
            add("truncate", format!(": > '{rel}' && test ! -s '{rel}'"));
            add("remove", format!("rm -f '{rel}' && test ! -e '{rel}'"));
            add("rename-over", format!("echo evil > evil-{tag} && mv -f evil-{tag} '{rel}'"));
            add("rename-away", format!("mv '{rel}' moved-{tag}"));
        }
        add("symlink", format!("ln -sfn /tmp '{rel}' && test -L '{rel}'"));
        add("chmod", format!("chmod 777 '{rel}'"));
        if let Some(parent) = parent {
            add("rename-ancestor", format!("mv '{parent}' renamed-{tag}"));
            add("symlink-ancestor", format!("mv '{parent}' gone-{tag}; ln -s /tmp '{parent}' && test -L '{parent}'"));
        }
        (script, names)
    }

    /// Every default name entry, existing at the top of the workspace and three levels deeper
    /// (a monorepo package), survives every attack; the control writes an ordinary sibling.
    pub fn every_existing_default_entry_is_read_only_at_every_depth() {
        let d = TestDirs::new("sbx-protect");
        for (entry, dir) in NAMES {
            plant(&d.ws, entry, *dir);
            plant(&d.ws.join("packages/app/src"), entry, *dir);
        }
        let (_set, exec) = executor(&d, config(&d));
        let mut script = String::new();
        let mut names = Vec::new();
        for (i, (entry, dir)) in NAMES.iter().enumerate() {
            for (tag, rel) in
                [(format!("top{i}"), entry.to_string()), (format!("deep{i}"), format!("packages/app/src/{entry}"))]
            {
                let (s, n) = attacks(&tag, &rel, *dir);
                script.push_str(&s);
                names.extend(n);
            }
        }
        script.push_str(
            "echo ok > ordinary && mkdir -p packages/app/src/lib && echo ok > packages/app/src/lib/x && echo CONTROL",
        );
        // A file (the list's attacks are more than one argument may hold).
        fs::write(d.ws.join("attacks.sh"), &script).unwrap();
        let out = sh_ok(&exec, &d.ws, "sh ./attacks.sh");
        assert!(out.contains("CONTROL"), "{out}");
        all_failed(&out, &names);
        for (entry, dir) in NAMES {
            untouched(&d.ws, entry, *dir);
            untouched(&d.ws.join("packages/app/src"), entry, *dir);
        }
        assert_eq!(fs::read_to_string(d.ws.join("packages/app/src/lib/x")).unwrap(), "ok\n");
        let entry = exec.report().get("protected-paths").unwrap().clone();
        assert_eq!(entry.status, Status::Enforced, "{entry:?}");
        assert!(entry.detail.starts_with("protect-v1 ("), "{entry:?}");
    }

    /// The opt-out control: with the default list off, the same entries are writable.
    pub fn the_opt_out_writes_them() {
        let d = TestDirs::new("sbx-protect");
        for (entry, dir) in NAMES {
            plant(&d.ws, entry, *dir);
        }
        git(&d.ws, &["init", "-q", "repo"]);
        let off = Protection { defaults: false, ..Protection::default() };
        let (_set, exec) = executor(&d, ProfileConfig { protected_paths: off, ..config(&d) });
        let mut script = String::new();
        for (entry, dir) in NAMES {
            if *dir {
                script.push_str(&format!("echo w > '{entry}/new' && "));
            } else {
                script.push_str(&format!("echo w >> '{entry}' && "));
            }
        }
        script.push_str("echo w > repo/.git/hooks/pre-commit && echo '[x]' >> repo/.git/config && echo DONE");
        let out = sh_ok(&exec, &d.ws, &script);
        assert!(out.contains("DONE"), "{out}");
        assert_eq!(fs::read_to_string(d.ws.join("repo/.git/hooks/pre-commit")).unwrap(), "w\n");
        assert_eq!(exec.report().get("protected-paths").unwrap().status, Status::Vacuous);
        // An extra entry is protected like the defaults, at every depth.
        fs::create_dir_all(d.ws.join("a/b")).unwrap();
        fs::write(d.ws.join("a/b/Makefile"), "ORIGINAL\n").unwrap();
        let extra = Protection { defaults: false, extra: vec![String::from("Makefile")], except: Vec::new() };
        let (_set2, exec2) = executor(&d, ProfileConfig { protected_paths: extra, ..config(&d) });
        let (code, out) = sh_in(&exec2, &d.ws, "echo evil >> a/b/Makefile").unwrap();
        assert_ne!(code, 0, "{out}");
        assert_eq!(fs::read_to_string(d.ws.join("a/b/Makefile")).unwrap(), "ORIGINAL\n");
    }

    fn git(cwd: &Path, args: &[&str]) {
        let st = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(cwd)
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    }

    const GIT: &str = "git -c user.name=t -c user.email=t@t -c init.defaultBranch=main";

    /// The git workflow inside a sandbox on a real repository and on a linked worktree: init (a
    /// new repository), add, commit, branch, checkout, stash, worktree add, fetch into objects
    /// and refs; the repository's hooks and config (and the common directory's, seen from the
    /// worktree) can be neither created, changed nor replaced; a nested repository's too.
    pub fn git_keeps_working_while_hooks_and_config_stay_read_only() {
        let d = TestDirs::new("sbx-protect");
        let repo = d.ws.join("repo");
        fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        fs::write(repo.join("f"), "1\n").unwrap();
        git(&repo, &["add", "f"]);
        git(&repo, &["commit", "-qm", "init"]);
        git(&repo, &["branch", "other"]);
        // A nested repository deeper in the workspace, with hooks designated by its config.
        let nested = d.ws.join("vendor/lib");
        fs::create_dir_all(&nested).unwrap();
        git(&nested, &["init", "-q"]);
        fs::create_dir(nested.join(".husky")).unwrap();
        fs::write(nested.join(".husky/pre-commit"), "ORIGINAL\n").unwrap();
        git(&nested, &["config", "core.hooksPath", ".husky"]);
        let config_before = fs::read_to_string(repo.join(".git/config")).unwrap();

        let (_set, exec) = executor(&d, config(&d));
        let workflow = format!(
            "set -e; cd repo; echo 2 >> f; {GIT} commit -qam msg; {GIT} branch feature; {GIT} checkout -q feature; \
             echo 3 >> f; {GIT} stash -q; {GIT} stash pop -q; {GIT} commit -qam more; {GIT} checkout -q main; \
             {GIT} worktree add -q ../wt other; {GIT} fetch -q . feature:refs/remotes/local/feature; \
             cd ../wt; echo w > g; {GIT} add g; {GIT} commit -qm in-worktree; cd ..; \
             mkdir fresh; cd fresh; {GIT} init -q; echo x > x; {GIT} add x; {GIT} commit -qm first; echo WORKFLOW"
        );
        let out = sh_ok(&exec, &d.ws, &workflow);
        assert!(out.contains("WORKFLOW"), "{out}");
        let log = Command::new("git").args(["log", "--oneline", "--all"]).current_dir(&repo).output().unwrap();
        let log = String::from_utf8_lossy(&log.stdout);
        assert!(log.contains("msg") && log.contains("more") && log.contains("in-worktree"), "{log}");

        // The attacks, from the repository, from the linked worktree (the common directory's
        // hooks and config) and on the nested repository.
        let mut script = String::new();
        let mut names = Vec::new();
        for (tag, cmd) in [
            ("hook-create", "echo evil > repo/.git/hooks/pre-commit"),
            ("hook-change", "echo evil >> repo/.git/hooks/pre-commit.sample"),
            (
                "hook-chmod",
                "chmod +x repo/.git/hooks/pre-commit.sample && test -x repo/.git/hooks/pre-commit.sample && mv repo/.git/hooks/pre-commit.sample repo/.git/hooks/pre-commit",
            ),
            ("hooks-replace", "mv repo/.git/hooks repo/.git/hooks-old"),
            ("hooks-symlink", "rm -rf repo/.git/hooks; ln -s /tmp repo/.git/hooks && test -L repo/.git/hooks"),
            ("config-write", "echo '[core]' >> repo/.git/config && echo fsmonitor=evil >> repo/.git/config"),
            ("config-git", "cd repo && git config core.fsmonitor evil"),
            ("config-rename-over", "cp repo/.git/config c2 && echo evil >> c2 && mv -f c2 repo/.git/config"),
            ("hooks-remove", "rm -rf repo/.git/hooks && test ! -e repo/.git/hooks"),
            ("config-remove", "rm -f repo/.git/config && test ! -e repo/.git/config"),
            ("config-symlink", "ln -sfn /tmp/evil repo/.git/config && test -L repo/.git/config"),
            ("config-truncate", ": > repo/.git/config && test ! -s repo/.git/config"),
            ("gitdir-rename", "mv repo/.git repo/.git-old"),
            ("gitdir-symlink", "mv repo/.git repo/g2; ln -s /tmp repo/.git && test -L repo/.git"),
            ("repo-rename", "mv repo repo-old"),
            ("wt-hook", "cd wt && echo evil > \"$(git rev-parse --git-common-dir)/hooks/post-checkout\""),
            ("wt-config", "cd wt && git config core.hooksPath /tmp"),
            ("wt-pointer", "echo 'gitdir: /tmp/evil' > wt/.git"),
            ("nested-hook", "echo evil >> vendor/lib/.husky/pre-commit"),
            ("nested-husky-new", "echo evil > vendor/lib/.husky/post-merge"),
            ("nested-config", "echo evil >> vendor/lib/.git/config"),
            ("nested-hooks-dir", "echo evil > vendor/lib/.git/hooks/pre-commit"),
        ] {
            script.push_str(&attempt(tag, cmd));
            names.push(tag.to_owned());
        }
        let out = sh_ok(&exec, &d.ws, &script);
        all_failed(&out, &names);
        assert!(!repo.join(".git/hooks/pre-commit").exists());
        assert!(repo.join(".git/hooks").is_dir() && !repo.join(".git/hooks").is_symlink());
        assert_eq!(fs::read_to_string(repo.join(".git/config")).unwrap(), config_before);
        assert!(!repo.join(".git/hooks/post-checkout").exists());
        assert_eq!(fs::read_to_string(nested.join(".husky/pre-commit")).unwrap(), "ORIGINAL\n");
        assert!(!nested.join(".husky/post-merge").exists());
    }

    /// `sandbox` as a user runs it: a repository as the workspace, the default profile of the
    /// CLI (`sandbox run`), `git commit -am msg` works and `.git/hooks/pre-commit` can neither
    /// be created nor changed.
    pub fn sandbox_run_in_a_repository_commits_and_keeps_hooks() {
        let d = TestDirs::new("sbx-protect");
        git(&d.ws, &["init", "-q"]);
        fs::write(d.ws.join("f"), "1\n").unwrap();
        git(&d.ws, &["add", "f"]);
        git(&d.ws, &["commit", "-qm", "init"]);
        fs::write(d.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        let (_set, exec) = executor(&d, config(&d));
        let script = format!(
            "echo 2 >> f; {GIT} commit -qam msg && echo COMMITTED; {} {}",
            attempt("create", "echo evil > .git/hooks/post-commit"),
            attempt("change", "echo evil >> .git/hooks/pre-commit")
        );
        let out = sh_ok(&exec, &d.ws, &script);
        assert!(out.contains("COMMITTED"), "{out}");
        all_failed(&out, &[String::from("create"), String::from("change")]);
        assert_eq!(fs::read_to_string(d.ws.join(".git/hooks/pre-commit")).unwrap(), "#!/bin/sh\nexit 0\n");
    }

    /// File roots: a denied file inside a readable directory cannot be read (its sibling can);
    /// a `.env` denied write inside the writable workspace cannot be written, removed or
    /// replaced (its sibling can); a read-only `Makefile` reads but does not change.
    pub fn file_roots_deny_one_file() {
        let d = TestDirs::new("sbx-protect");
        let keys = d.root.join("keys");
        fs::create_dir(&keys).unwrap();
        fs::write(keys.join("id_ed25519"), "SECRET\n").unwrap();
        fs::write(keys.join("id_ed25519.pub"), "PUBLIC\n").unwrap();
        fs::write(d.ws.join(".env"), "TOKEN=1\n").unwrap();
        fs::write(d.ws.join("Makefile"), "all:\n").unwrap();
        let roots = vec![
            RootAccess { path: keys.join("id_ed25519"), read: Access::Deny, write: Access::Deny },
            RootAccess { path: d.ws.join(".env"), read: Access::Allow, write: Access::Deny },
            RootAccess { path: d.ws.join("Makefile"), read: Access::Allow, write: Access::Deny },
        ];
        let (_set, exec) = executor(&d, ProfileConfig { additional_roots: roots, ..config(&d) });
        let k = keys.display();
        let script = format!(
            "cat {k}/id_ed25519.pub; cat .env; cat Makefile; echo ok > sibling && echo CONTROL; {}{}{}{}{}{}{}",
            attempt("read-key", &format!("cat {k}/id_ed25519 | grep -q SECRET")),
            attempt("copy-key", &format!("cp {k}/id_ed25519 stolen && grep -q SECRET stolen")),
            attempt("env-write", "echo EVIL=1 >> .env"),
            attempt("env-remove", "rm -f .env && test ! -e .env"),
            attempt("env-replace", "echo EVIL=1 > e2 && mv -f e2 .env"),
            attempt("make-write", "echo evil >> Makefile"),
            attempt("make-replace", "rm -f Makefile; echo evil > Makefile && grep -q evil Makefile"),
        );
        let out = sh_ok(&exec, &d.ws, &script);
        assert!(
            out.contains("PUBLIC") && out.contains("TOKEN=1") && out.contains("all:") && out.contains("CONTROL"),
            "{out}"
        );
        assert!(!out.contains("SECRET"), "{out}");
        let names: Vec<String> =
            ["read-key", "copy-key", "env-write", "env-remove", "env-replace", "make-write", "make-replace"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        all_failed(&out, &names);
        assert_eq!(fs::read_to_string(d.ws.join(".env")).unwrap(), "TOKEN=1\n");
        assert_eq!(fs::read_to_string(d.ws.join("Makefile")).unwrap(), "all:\n");
    }

    /// A deny or read-only root that does not exist yet is honoured: the workload cannot create
    /// it, nor an ancestor by rename or symlink; a sibling is created freely. Created on the
    /// host later, the next spawn binds it with its access.
    pub fn a_root_that_does_not_exist_cannot_be_created() {
        let d = TestDirs::new("sbx-protect");
        let missing = d.ws.join("secrets/prod.key");
        let roots = vec![RootAccess { path: missing.clone(), read: Access::Deny, write: Access::Deny }];
        let (_set, exec) = executor(&d, ProfileConfig { additional_roots: roots, ..config(&d) });
        let script = format!(
            "mkdir -p secrets && echo ok > secrets/other && echo CONTROL; {}{}{}",
            attempt("create", "echo evil > secrets/prod.key"),
            attempt("rename-in", "echo evil > k && mv k secrets/prod.key"),
            attempt(
                "ancestor",
                "mkdir -p s2 && echo evil > s2/prod.key && rm -rf secrets && mv s2 secrets && test -e secrets/prod.key"
            ),
        );
        let out = sh_ok(&exec, &d.ws, &script);
        assert!(out.contains("CONTROL"), "{out}");
        all_failed(&out, &[String::from("create"), String::from("rename-in"), String::from("ancestor")]);
        assert!(!missing.exists());
        // Created on the host: the next spawn denies reading it.
        fs::create_dir_all(missing.parent().unwrap()).unwrap();
        fs::write(&missing, "SECRET\n").unwrap();
        let (code, out) = sh_in(&exec, &d.ws, "cat secrets/prod.key").unwrap();
        assert!(code != 0 && !out.contains("SECRET"), "{out}");
    }
    /// A repository whose hooks directory is missing: it cannot be created (nor moved into
    /// place, nor the `.git` directory swapped for one that has it) while commits still work.
    pub fn a_missing_hooks_directory_of_an_existing_repository_cannot_be_created() {
        let d = TestDirs::new("sbx-protect");
        git(&d.ws, &["init", "-q"]);
        fs::remove_dir_all(d.ws.join(".git/hooks")).unwrap();
        fs::write(d.ws.join("f"), "1\n").unwrap();
        git(&d.ws, &["add", "f"]);
        git(&d.ws, &["commit", "-qm", "init"]);
        let (_set, exec) = executor(&d, config(&d));
        let script = format!(
            "echo 2 >> f; {GIT} commit -qam msg && echo COMMITTED; {}{}{}",
            attempt("mkdir", "mkdir .git/hooks"),
            attempt("move-in", "mkdir h && echo evil > h/pre-commit && mv h .git/hooks"),
            attempt("swap-gitdir", "cp -r .git g2 && mkdir -p g2/hooks && mv .git g-old && mv g2 .git"),
        );
        let out = sh_ok(&exec, &d.ws, &script);
        assert!(out.contains("COMMITTED"), "{out}");
        all_failed(&out, &[String::from("mkdir"), String::from("move-in"), String::from("swap-gitdir")]);
        assert!(!d.ws.join(".git/hooks").exists());
    }
    /// Every default name that does not exist cannot be created, at the top of the workspace
    /// and deeper, as a file, a directory or a symlink (the creation guard); the control
    /// creates ordinary names beside them.
    pub fn every_missing_default_name_cannot_be_created_at_any_depth() {
        let d = TestDirs::new("sbx-protect");
        fs::create_dir_all(d.ws.join("packages/app/src")).unwrap();
        let (_set, exec) = executor(&d, config(&d));
        let mut script = String::new();
        let mut names = Vec::new();
        for (i, (entry, _)) in NAMES.iter().enumerate() {
            for (tag, base) in
                [(format!("top{i}"), String::from(".")), (format!("deep{i}"), String::from("packages/app/src"))]
            {
                let parent = Path::new(entry).parent().filter(|p| !p.as_os_str().is_empty());
                let prep = parent.map(|p| format!("mkdir -p '{base}/{}' && ", p.display())).unwrap_or_default();
                for (how, cmd) in [
                    ("file", format!("{prep}echo x > '{base}/{entry}'")),
                    ("dir", format!("{prep}mkdir '{base}/{entry}'")),
                    ("symlink", format!("{prep}ln -s /tmp '{base}/{entry}'")),
                ] {
                    let name = format!("{tag}-{how}");
                    script.push_str(&attempt(&name, &cmd));
                    names.push(name);
                }
            }
        }
        script.push_str("echo ok > packages/app/src/ordinary && mkdir packages/app/src/dir && echo CONTROL");
        let out = sh_ok(&exec, &d.ws, &script);
        assert!(out.contains("CONTROL"), "{out}");
        all_failed(&out, &names);
        for (entry, _) in NAMES {
            for base in [d.ws.clone(), d.ws.join("packages/app/src")] {
                assert!(fs::symlink_metadata(base.join(entry)).is_err(), "{} was created", base.join(entry).display());
            }
        }
    }

    /// Ways a repository's config designates hooks or configuration the scan missed (red team,
    /// 3 December, second round), each from inside: (a) an absolute `core.hooksPath` through a
    /// symlinked ancestor; (b) `core.hooksPath` set in an `[include]`d file; (c) a value with an
    /// inline comment (`.githooks ; team hooks`, git strips it); (d) `core.hooksPath` in
    /// `.git/config.worktree`; (e) a file an included file includes that does not exist yet (git
    /// ignores it; created, it would carry `core.fsmonitor`); (f) an `[includeIf]` whose
    /// condition does not hold today, naming a missing file. Positive controls: an ordinary file
    /// beside each hooks directory and include is written, and a sibling directory too.
    pub fn git_config_evasions_are_closed() {
        let d = TestDirs::new("sbx-protect");
        let ws = &d.ws;
        let repo = |name: &str| {
            let dir = ws.join(name);
            fs::create_dir_all(dir.join(".githooks")).unwrap();
            fs::create_dir_all(dir.join("other")).unwrap();
            git(&dir, &["init", "-q"]);
            dir
        };
        let a = repo("a");
        std::os::unix::fs::symlink(&a, d.root.join("a-link")).unwrap();
        let through_link = d.root.join("a-link/.githooks");
        git(&a, &["config", "core.hooksPath", through_link.to_str().unwrap()]);
        let b = repo("b");
        fs::write(b.join(".gitconfig-project"), "[core]\n\thooksPath = .githooks\n").unwrap();
        git(&b, &["config", "include.path", "../.gitconfig-project"]);
        let c = repo("c");
        let mut text = fs::read_to_string(c.join(".git/config")).unwrap();
        text.push_str("[core]\n\thooksPath = .githooks ; team hooks\n");
        fs::write(c.join(".git/config"), text).unwrap();
        let dd = repo("d");
        git(&dd, &["config", "extensions.worktreeConfig", "true"]);
        git(&dd, &["config", "--worktree", "core.hooksPath", ".githooks"]);
        let e = repo("e");
        fs::write(e.join(".gitconfig-project"), "[include]\n\tpath = .gitconfig-local\n").unwrap();
        git(&e, &["config", "include.path", "../.gitconfig-project"]);
        let f = repo("f");
        git(&f, &["config", "includeIf.gitdir:/nowhere/.path", "../team.inc"]);
        // Git itself takes each hooks path as designated (the attacks are real ones).
        for (r, want) in [(&b, ".githooks"), (&c, ".githooks"), (&dd, ".githooks")] {
            let o = Command::new("git").args(["config", "core.hooksPath"]).current_dir(r).output().unwrap();
            assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), want, "{}", r.display());
        }
        let (_set, exec) = executor(&d, config(&d));
        let mut script = String::new();
        let attacks = [
            ("a-symlinked-hooks-path", "echo evil > a/.githooks/pre-commit"),
            ("b-included-hooks-path", "echo evil > b/.githooks/pre-commit"),
            ("b-included-file", "echo evil >> b/.gitconfig-project"),
            ("c-commented-hooks-path", "echo evil > c/.githooks/pre-commit"),
            ("d-worktree-hooks-path", "echo evil > d/.githooks/pre-commit"),
            ("d-config-worktree", "echo evil >> d/.git/config.worktree"),
            ("e-missing-nested-include", "printf '[core]\\n\\tfsmonitor = evil\\n' > e/.gitconfig-local"),
            ("f-missing-include-if", "printf '[core]\\n\\tfsmonitor = evil\\n' > f/team.inc"),
        ];
        for (name, cmd) in attacks {
            script.push_str(&attempt(name, cmd));
        }
        script.push_str(
            "for r in a b c d e f; do echo ok > $r/ordinary && echo ok > $r/other/x || exit 1; done; echo controls-ok",
        );
        let out = sh_ok(&exec, ws, &script);
        all_failed(&out, &attacks.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>());
        assert!(out.ends_with("controls-ok\n"), "{out}");
        for r in [&a, &b, &c, &dd] {
            assert!(!r.join(".githooks/pre-commit").exists(), "{}", r.display());
            assert_eq!(fs::read_to_string(r.join("other/x")).unwrap(), "ok\n");
        }
        assert_eq!(fs::read_to_string(b.join(".gitconfig-project")).unwrap(), "[core]\n\thooksPath = .githooks\n");
        assert!(!e.join(".gitconfig-local").exists() && !f.join("team.inc").exists());
    }

    /// A repository cannot be made where the host's git would enter it (red teams of 3 and 4
    /// December): in a workspace inside a repository, not at its root (`git init`, a `.git`
    /// pointer file, a bare layout); in a workspace that is a repository, not beside a `.git`
    /// the workload broke (`.git/HEAD` overwritten, then `HEAD`, `objects/`, `refs/` and a
    /// `config` with `core.fsmonitor` at the root: git falls back to the root as a bare
    /// repository), and not beneath it (`git init vendor/lib`, a pointer file, a directory
    /// renamed to `.git`, `git clone`), where a gitlink staged in the writable index made the
    /// host's `git status` at the root enter it and run its `core.fsmonitor`; nor as a bare
    /// layout in a subdirectory, beside a nested repository's broken `.git`, or beside a `HEAD`
    /// that was there (git takes the directory itself before it looks further up), nor as a
    /// module's git directory planted in `.git/modules` for the host's `git submodule update
    /// --init`, nor a legacy remote definition (`.git/remotes/<name>`, `.git/branches/<name>`)
    /// for the host's plain `git push`. Each attack is followed by the host's own `git status` where it would run,
    /// which must run nothing.
    ///
    /// Positive controls: `git init` in the private `/tmp`, at the root of a workspace no
    /// repository encloses and beneath it; a nested repository the host made before the run
    /// commits; an ordinary `HEADER` file at the root; `git add`, `commit` and `checkout -b`.
    pub fn a_repository_cannot_be_made_where_the_hosts_git_would_enter_it() {
        let d = TestDirs::new("sbx-protect");
        git(&d.root, &["init", "-q"]);
        let (_set, exec) = executor(&d, config(&d));
        let attacks = [
            ("init-root", format!("{GIT} init -q . && test -d .git")),
            ("gitfile-root", String::from("echo 'gitdir: /tmp/evil' > .git")),
            ("bare-root", String::from("mkdir -p objects refs && echo 'ref: refs/heads/main' > HEAD")),
            ("init-deeper", format!("mkdir -p sub && cd sub && {GIT} init -q . && test -d .git")),
        ];
        let mut script = String::new();
        for (name, cmd) in &attacks {
            script.push_str(&attempt(name, cmd));
        }
        script.push_str(&format!("cd /tmp && {GIT} init -q t && test -d t/.git && echo tmp-ok"));
        let out = sh_ok(&exec, &d.ws, &script);
        all_failed(&out, &attacks.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>());
        assert!(out.ends_with("tmp-ok\n"), "{out}");
        assert!(fs::symlink_metadata(d.ws.join(".git")).is_err() && !d.ws.join("HEAD").exists());
        assert!(fs::symlink_metadata(d.ws.join("sub/.git")).is_err());
        let o = Command::new("git").args(["rev-parse", "--show-toplevel"]).current_dir(&d.ws).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), d.root.display().to_string());

        // A workspace that is a repository, with a nested one the host made before the run.
        let r = TestDirs::new("sbx-protect");
        git(&r.ws, &["init", "-q"]);
        fs::write(r.ws.join("a.txt"), "a\n").unwrap();
        git(&r.ws, &["add", "a.txt"]);
        git(&r.ws, &["commit", "-qm", "a"]);
        fs::create_dir_all(r.ws.join("pre")).unwrap();
        git(&r.ws.join("pre"), &["init", "-q"]);
        fs::write(r.ws.join("pre/p.txt"), "p\n").unwrap();
        git(&r.ws.join("pre"), &["add", "p.txt"]);
        git(&r.ws.join("pre"), &["commit", "-qm", "p"]);
        fs::create_dir_all(r.ws.join("fixture")).unwrap();
        fs::write(r.ws.join("fixture/HEAD"), "ref: refs/heads/main\n").unwrap();
        let marker = r.root.join("fsmonitor-ran");
        let monitor = format!("touch {}; false", marker.display());
        let (_set2, exec2) = executor(&r, config(&r));
        let attacks = [
            (
                "bare-beside-broken-git",
                format!(
                    "echo garbage > .git/HEAD; mkdir -p objects refs && echo 'ref: refs/heads/main' > HEAD && \
                     printf '[core]\\n\\trepositoryformatversion = 0\\n\\tworktree = .\\n\\tfsmonitor = \"{monitor}\"\\n' > config && \
                     test -f HEAD"
                ),
            ),
            ("nested-init", format!("{GIT} init -q vendor/lib && test -d vendor/lib/.git")),
            ("nested-gitfile", String::from("mkdir -p vendor/x && echo 'gitdir: ../../objects' > vendor/x/.git")),
            (
                "nested-rename",
                format!("{GIT} init -q --bare vendor/y-git && mkdir -p vendor/y && mv vendor/y-git vendor/y/.git"),
            ),
            ("nested-symlink", String::from("mkdir -p vendor/z && ln -s /tmp vendor/z/.git")),
            ("clone", format!("{GIT} clone -q pre vendor/c && test -d vendor/c/.git")),
            (
                "bare-in-subdir",
                format!(
                    "mkdir -p src/objects src/refs && printf '[core]\\n\\tworktree = .\\n\\tfsmonitor = \"{monitor}\"\\n' > src/config && \
                     echo 'ref: refs/heads/main' > src/HEAD"
                ),
            ),
            (
                "bare-beside-broken-nested-git",
                format!(
                    "echo garbage > pre/.git/HEAD; mkdir -p pre/objects pre/refs && \
                     printf '[core]\\n\\tworktree = .\\n\\tfsmonitor = \"{monitor}\"\\n' > pre/config && \
                     echo 'ref: refs/heads/main' > pre/HEAD"
                ),
            ),
            ("bare-fixture", String::from("mkdir -p fixture/refs && test -f fixture/HEAD && mkdir fixture/objects")),
            ("planted-module", format!("{GIT} clone -q --bare pre .git/modules/libfoo && test -d .git/modules/libfoo")),
            ("legacy-remotes", String::from("mkdir -p .git/remotes && echo 'URL: /tmp/evil' > .git/remotes/origin")),
            ("legacy-branches", String::from("echo '/tmp/evil#main' > .git/branches/origin")),
            // A bare layout inside `.git` (where git itself makes such names), reached through a
            // link from the work tree: the user's git in `linked` took it for a repository and
            // ran its fsmonitor (a red team, 5 December). The link is refused.
            (
                "bare-in-dotgit-linked",
                format!(
                    "mkdir -p .git/x/objects .git/x/refs && echo 'ref: refs/heads/main' > .git/x/HEAD && \
                     printf '[core]\\n\\tfsmonitor = \"{monitor}\"\\n' > .git/x/config && ln -s .git/x linked"
                ),
            ),
            ("abs-link-into-dotgit", String::from("ln -s \"$PWD/.git/refs\" linked2")),
            // Symlinks inside `.git`: the host's git writes through them in place (a reflog,
            // `COMMIT_EDITMSG`) onto any file the user may write; `worktrees` out of `.git`.
            ("symlink-reflog", String::from("rm -f .git/logs/HEAD; ln -s /tmp/x .git/logs/HEAD")),
            ("symlink-worktrees", String::from("ln -s ../elsewhere .git/worktrees")),
            (
                "symlink-moved-in",
                String::from("ln -s /tmp/y l && rm -f .git/COMMIT_EDITMSG && mv l .git/COMMIT_EDITMSG"),
            ),
        ];
        let mut script = String::new();
        for (name, cmd) in &attacks {
            script.push_str(&attempt(name, cmd));
        }
        // The gitlink the red team staged (harmless now that nothing is there to enter).
        script.push_str(&format!(
            "echo 'ref: refs/heads/main' > .git/HEAD; echo 'ref: refs/heads/main' > pre/.git/HEAD; mkdir -p vendor/lib; \
             {GIT} update-index --add --cacheinfo 160000,$({GIT} -C pre hash-object -t commit --stdin </dev/null 2>/dev/null || echo 1111111111111111111111111111111111111111),vendor/lib; \
             echo x > pre/f && {GIT} -C pre add f && {GIT} -C pre commit -qm f && echo pre-ok; \
             echo h > HEADER && echo header-ok; ln -s a.txt a-link && echo link-ok; \
             {GIT} checkout -qb feature && echo b > b.txt && {GIT} add b.txt && {GIT} commit -qm b && echo commit-ok"
        ));
        let out = sh_ok(&exec2, &r.ws, &script);
        all_failed(&out, &attacks.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>());
        for control in ["pre-ok", "header-ok", "link-ok", "commit-ok"] {
            assert!(out.contains(control), "{control}: {out}");
        }
        for nested in ["vendor/lib/.git", "vendor/x/.git", "vendor/y/.git", "vendor/z/.git", "vendor/c/.git"] {
            assert!(fs::symlink_metadata(r.ws.join(nested)).is_err(), "{nested} exists: {out}");
        }
        // The host's git, as an IDE or a prompt runs it after the run, at the root and in each
        // directory the workload prepared: nothing of the workload's runs.
        for dir in [r.ws.clone(), r.ws.join("src"), r.ws.join("pre"), r.ws.join("fixture")] {
            let o = Command::new("git").args(["status", "--porcelain"]).current_dir(&dir).output().unwrap();
            assert!(!marker.exists(), "the host's git status in {} ran the workload's fsmonitor: {o:?}", dir.display());
        }
        assert!(!r.ws.join(".git/modules/libfoo").exists() && !r.ws.join("src/HEAD").exists());
        assert!(
            fs::symlink_metadata(r.ws.join("linked")).is_err() && fs::symlink_metadata(r.ws.join("linked2")).is_err()
        );
        for p in [".git/logs/HEAD", ".git/worktrees", ".git/COMMIT_EDITMSG"] {
            assert!(fs::symlink_metadata(r.ws.join(p)).map_or(true, |m| !m.file_type().is_symlink()), "{p}");
        }
        let o = Command::new("git").args(["rev-parse", "--show-toplevel"]).current_dir(&r.ws).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), r.ws.display().to_string());

        // The control: no repository encloses this workspace, so `git init` there stays open,
        // at its root and beneath it.
        let control = TestDirs::new("sbx-protect");
        let (_set3, exec3) = executor(&control, config(&control));
        let out = sh_ok(
            &exec3,
            &control.ws,
            &format!(
                "{GIT} init -q . && test -d .git && mkdir sub && {GIT} init -q sub && test -d sub/.git && echo init-ok"
            ),
        );
        assert!(out.ends_with("init-ok\n"), "{out}");
    }

    /// husky's layout (v9: `core.hooksPath = .husky/_`, whose generated hooks run the user's
    /// `.husky/<hook>` one level up): the evening red team of 4 December wrote
    /// `.husky/pre-commit`, and the host's next `git commit` ran it. The parent of a hooks path
    /// named `_` is protected with it: the scripts can be neither written, replaced nor made;
    /// the host's commit afterwards runs the original hook only. Control: a file beside
    /// `.husky` is written, and the commit inside the sandbox works.
    pub fn a_husky_layout_keeps_the_scripts_its_hooks_run() {
        let d = TestDirs::new("sbx-protect");
        let ws = &d.ws;
        git(ws, &["init", "-q"]);
        git(ws, &["config", "core.hooksPath", ".husky/_"]);
        fs::create_dir_all(ws.join(".husky/_")).unwrap();
        fs::write(
            ws.join(".husky/_/h"),
            "#!/bin/sh\nexec sh -e \"$(dirname \"$(dirname \"$0\")\")/$(basename \"$0\")\" \"$@\"\n",
        )
        .unwrap();
        fs::write(ws.join(".husky/_/pre-commit"), "#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n").unwrap();
        fs::write(ws.join(".husky/pre-commit"), "echo lint ok\n").unwrap();
        for f in [".husky/_/h", ".husky/_/pre-commit"] {
            fs::set_permissions(ws.join(f), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
        let marker = d.root.join("husky-ran");
        let (_set, exec) = executor(&d, config(&d));
        let attacks = [
            ("write", format!("echo 'touch {}' >> .husky/pre-commit", marker.display())),
            ("replace", format!("echo 'touch {}' > /tmp/p && mv /tmp/p .husky/pre-commit", marker.display())),
            ("new-hook", format!("echo 'touch {}' > .husky/commit-msg", marker.display())),
            ("remove", String::from("rm -f .husky/pre-commit")),
        ];
        let mut script = String::new();
        for (name, cmd) in &attacks {
            script.push_str(&attempt(name, cmd));
        }
        script.push_str(&format!(
            "echo x > beside.txt && {GIT} add beside.txt && {GIT} commit -qm x && echo controls-ok"
        ));
        let out = sh_ok(&exec, ws, &script);
        all_failed(&out, &attacks.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>());
        assert!(out.contains("lint ok") && out.contains("controls-ok"), "{out}");
        assert_eq!(fs::read_to_string(ws.join(".husky/pre-commit")).unwrap(), "echo lint ok\n");
        fs::write(ws.join("host.txt"), "h\n").unwrap();
        git(ws, &["add", "host.txt"]);
        git(ws, &["commit", "-qm", "host"]);
        assert!(!marker.exists(), "the host's commit ran what the workload wrote");
    }

    /// Hooks that are symlinks to files of the work tree (`.git/hooks/pre-commit ->
    /// ../../scripts/pre-commit`, a common set-up; red team AR, 5 December: the target stayed
    /// writable and the host's next commit ran what the workload wrote there): the target of
    /// every link of the chain is read-only, a dangling hook's target cannot be made, a link on
    /// the way cannot be replaced, in `.git/hooks` and in a `core.hooksPath` directory alike.
    /// The host's commit afterwards runs the original hooks only. Controls: a script beside
    /// them is written and made, and the commit inside the sandbox works (and runs the hooks).
    pub fn hooks_that_link_into_the_work_tree_keep_their_targets() {
        let d = TestDirs::new("sbx-protect");
        let ws = &d.ws;
        git(ws, &["init", "-q"]);
        for dir in ["scripts", "a", ".githooks", "tools", "scripts/pm"] {
            fs::create_dir_all(ws.join(dir)).unwrap();
        }
        for (f, text) in [
            ("scripts/pre-commit", "echo pre-commit ok\n"),
            ("scripts/real", "echo real ok\n"),
            ("scripts/commit-msg", "echo commit-msg ok\n"),
            ("scripts/other.sh", "echo other\n"),
            ("tools/pre-rebase", "echo pre-rebase ok\n"),
        ] {
            fs::write(ws.join(f), format!("#!/bin/sh\n{text}")).unwrap();
            fs::set_permissions(ws.join(f), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
        let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, ws.join(at)).unwrap();
        // `.git/hooks`: a link to a script, a dangling one, and a chain through `a/link1`.
        link("../../scripts/pre-commit", ".git/hooks/pre-commit");
        link("../../scripts/post-commit", ".git/hooks/post-commit");
        link("../../a/link1", ".git/hooks/pre-push");
        link("../scripts/real", "a/link1");
        // Through a linked directory (`lib -> tools`), and to a directory (red team AT).
        link("tools", "lib");
        link("../../lib/pre-rebase", ".git/hooks/pre-rebase");
        link("../../scripts/pm", ".git/hooks/post-merge");
        let marker = d.root.join("hook-ran");
        let touch = format!("touch {}", marker.display());
        let (_set, exec) = executor(&d, config(&d));
        let attacks = [
            ("write-linked", format!("echo '{touch}' >> scripts/pre-commit")),
            ("replace-linked", format!("printf '#!/bin/sh\\n{touch}\\n' > /tmp/p && mv /tmp/p scripts/pre-commit")),
            ("make-dangling-target", format!("printf '#!/bin/sh\\n{touch}\\n' > scripts/post-commit")),
            ("write-chain-end", format!("echo '{touch}' >> scripts/real")),
            ("relink-chain", String::from("ln -sfn ../scripts/other.sh a/link1")),
            ("remake-linked-dir", format!("rm lib && mkdir lib && printf '#!/bin/sh\\n{touch}\\n' > lib/pre-rebase")),
            (
                "move-linked-dir",
                format!("mv lib lib2 && mkdir lib && printf '#!/bin/sh\\n{touch}\\n' > lib/pre-rebase"),
            ),
            ("dir-target-to-file", format!("rmdir scripts/pm && printf '#!/bin/sh\\n{touch}\\n' > scripts/pm")),
            // A `<hook>.d` a hook manager runs the scripts of: nothing made beneath it.
            ("into-dir-target", format!("printf '#!/bin/sh\\n{touch}\\n' > scripts/pm/10-x")),
        ];
        let mut script = String::new();
        for (name, cmd) in &attacks {
            script.push_str(&attempt(name, cmd));
        }
        script.push_str(&format!(
            "echo more >> scripts/other.sh && echo x > scripts/new.sh && echo x > beside.txt && {GIT} add beside.txt \
             && {GIT} commit -qm x && echo controls-ok"
        ));
        let out = sh_ok(&exec, ws, &script);
        all_failed(&out, &attacks.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>());
        assert!(out.contains("pre-commit ok") && out.contains("controls-ok"), "{out}");
        assert!(!ws.join("scripts/post-commit").exists());
        git(ws, &["commit", "-q", "--allow-empty", "-m", "host"]);
        assert!(!marker.exists(), "the host's commit ran what the workload wrote");
        // The same under `core.hooksPath`, a link one level up.
        git(ws, &["config", "core.hooksPath", ".githooks"]);
        link("../scripts/commit-msg", ".githooks/commit-msg");
        let (_set, exec) = executor(&d, config(&d));
        let attack = [("write-hookspath-linked", format!("echo '{touch}' >> scripts/commit-msg"))];
        let mut script = attempt(attack[0].0, &attack[0].1);
        script.push_str("echo more >> scripts/other.sh && echo controls-ok");
        let out = sh_ok(&exec, ws, &script);
        all_failed(&out, &[attack[0].0.to_owned()]);
        assert!(out.contains("controls-ok"), "{out}");
        git(ws, &["commit", "-q", "--allow-empty", "-m", "host again"]);
        assert!(!marker.exists(), "the host's commit ran what the workload wrote");
    }

    /// A Mercurial repository's config is configuration like git's (red team AT, 5 December):
    /// an existing `.hg/hgrc` whose hook runs `sh tools/hook.sh`, whose `%include` names
    /// `../team.rc` (itself naming a hook) and whose extension is `tools/ext.py`: each of those
    /// files is read-only, and a missing included file cannot be made; the share pointers
    /// (`sharedpath`, `requires`) and `hgrc-not-shared` cannot be made. Controls: another file
    /// in `tools` is written, a new one made.
    pub fn a_mercurial_config_keeps_the_files_it_runs() {
        let d = TestDirs::new("sbx-protect");
        let ws = &d.ws;
        let repo = ws.join("hgrepo");
        fs::create_dir_all(repo.join(".hg")).unwrap();
        fs::create_dir_all(repo.join("tools")).unwrap();
        fs::write(
            repo.join(".hg/hgrc"),
            "[ui]\nusername = t\n%include ../team.rc\n%include ../missing.rc\n[hooks]\npre-status = sh tools/hook.sh\n\
             commit.py = python:tools/pyhook.py:run\n[extensions]\nevil = tools/ext.py\n",
        )
        .unwrap();
        fs::write(repo.join("team.rc"), "[hooks]\npost-pull = tools/team-hook\n").unwrap();
        for f in ["tools/hook.sh", "tools/pyhook.py", "tools/ext.py", "tools/team-hook", "tools/other.sh"] {
            fs::write(repo.join(f), "ORIGINAL\n").unwrap();
        }
        let (_set, exec) = executor(&d, config(&d));
        let attacks = [
            ("hook-script", "echo evil >> hgrepo/tools/hook.sh"),
            ("python-hook", "echo evil >> hgrepo/tools/pyhook.py"),
            ("extension", "echo evil >> hgrepo/tools/ext.py"),
            ("included", "echo '[hooks]' >> hgrepo/team.rc"),
            ("included-hook", "echo evil >> hgrepo/tools/team-hook"),
            ("missing-include", "echo '[hooks]' > hgrepo/missing.rc"),
            ("not-shared", "echo '[hooks]' > hgrepo/.hg/hgrc-not-shared"),
            ("sharedpath", "echo /tmp/x > hgrepo/.hg/sharedpath"),
            ("requires", "echo share-safe > hgrepo/.hg/requires"),
        ];
        let mut script = String::new();
        for (name, cmd) in &attacks {
            script.push_str(&attempt(name, cmd));
        }
        script.push_str("echo more >> hgrepo/tools/other.sh && echo x > hgrepo/tools/new.sh && echo controls-ok");
        let out = sh_ok(&exec, ws, &script);
        all_failed(&out, &attacks.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>());
        assert!(out.contains("controls-ok"), "{out}");
        for f in ["tools/hook.sh", "tools/pyhook.py", "tools/ext.py", "tools/team-hook"] {
            assert_eq!(fs::read_to_string(repo.join(f)).unwrap(), "ORIGINAL\n", "{f}");
        }
        assert!(!repo.join("missing.rc").exists() && !repo.join(".hg/sharedpath").exists());
    }

    /// Red team AW (6 December): files a protected configuration loads in turn, which the
    /// host ran later. A direnv `.envrc` (`source_env_if_exists .envrc.local`, a bare
    /// `dotenv_if_exists`, `layout node`, `PATH_add bin`), `.env` itself (read by pipenv,
    /// aider and editors), an MCP server run as `python3 -m mcpsrv` (its module and its bytecode
    /// cache), and a repository's `core.excludesFile` (a new file hidden from `git status`) and
    /// `interactive.diffFilter` (run by `git add -p`). Controls: a file none of them names is
    /// written, and a new ordinary file is made.
    pub fn files_that_protected_configs_load_in_turn_are_protected() {
        let d = TestDirs::new("sbx-protect");
        let ws = &d.ws;
        fs::write(
            ws.join(".envrc"),
            "source_env_if_exists .envrc.local\ndotenv_if_exists\nlayout node\nPATH_add bin\n",
        )
        .unwrap();
        fs::write(ws.join(".mcp.json"), r#"{"mcpServers":{"s":{"command":"python3","args":["-m","mcpsrv"]}}}"#)
            .unwrap();
        fs::write(ws.join("mcpsrv.py"), "ORIGINAL\n").unwrap();
        fs::create_dir_all(ws.join("repo/.git")).unwrap();
        fs::create_dir_all(ws.join("repo/tools")).unwrap();
        fs::write(
            ws.join("repo/.git/config"),
            "[core]\n\trepositoryformatversion = 0\n\texcludesFile = .myignore\n[interactive]\n\tdiffFilter = tools/color.sh\n",
        )
        .unwrap();
        fs::write(ws.join("repo/.myignore"), "ORIGINAL\n").unwrap();
        fs::write(ws.join("repo/tools/color.sh"), "ORIGINAL\n").unwrap();
        fs::write(ws.join("repo/tools/other.sh"), "ORIGINAL\n").unwrap();
        let (_set, exec) = executor(&d, config(&d));
        let attacks = [
            ("envrc-local", "echo 'id > /tmp/pwned' > .envrc.local"),
            ("dotenv", "echo GIT_CONFIG_COUNT=1 > .env"),
            ("layout-node", "mkdir -p node_modules/.bin && echo evil > node_modules/.bin/git"),
            ("path-add", "mkdir -p bin && echo evil > bin/git"),
            ("python-m", "echo evil >> mcpsrv.py"),
            ("pycache", "mkdir -p __pycache__ && echo evil > __pycache__/mcpsrv.cpython-311.pyc"),
            ("excludes", "echo new.sh >> repo/.myignore"),
            ("diff-filter", "echo evil >> repo/tools/color.sh"),
        ];
        let mut script = String::new();
        for (name, cmd) in &attacks {
            script.push_str(&attempt(name, cmd));
        }
        script.push_str("echo more >> repo/tools/other.sh && echo x > ordinary.txt && echo controls-ok");
        let out = sh_ok(&exec, ws, &script);
        all_failed(&out, &attacks.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>());
        assert!(out.contains("controls-ok"), "{out}");
        for f in ["mcpsrv.py", "repo/.myignore", "repo/tools/color.sh"] {
            assert_eq!(fs::read_to_string(ws.join(f)).unwrap(), "ORIGINAL\n", "{f}");
        }
        for f in [".envrc.local", ".env", "node_modules/.bin", "bin", "__pycache__"] {
            assert!(!ws.join(f).exists(), "{f}");
        }
    }

    /// The servers further agents' JSON configurations name (see
    /// `files_that_protected_configs_name_as_commands_are_read_only`), each a file in the
    /// workspace.
    const SERVERS: [&str; 16] = [
        "gemini.js",
        "oc.js",
        "zed.js",
        "kiro.js",
        "roo.js",
        "q.js",
        "cont.js",
        "qwen.js",
        "kilo.js",
        "junie.js",
        "crush.js",
        "srv5.js",
        "sub/srv7.js",
        "inj.js",
        "mymod.py",
        "imp.mjs",
    ];

    /// The red team of 4 December (night): the protected configuration names commands that live
    /// in the writable workspace (`core.fsmonitor = ./fsmon.sh`, a filter's `clean =
    /// tools/clean.sh`, a `!` alias, a Claude Code hook `"$CLAUDE_PROJECT_DIR"/.claude/hooks/fmt.sh`,
    /// an MCP server's `args: ["tools/mcp.js"]`). The workload rewrote those scripts, and the
    /// host's `git status` and `git add` ran them. Each named file is read-only now (and a named
    /// file that is missing cannot be made): every rewrite, replacement and creation fails, and
    /// the host's git runs the originals. Controls: an unnamed script beside them is written,
    /// and git inside works with the filter and fsmonitor.
    pub fn files_that_protected_configs_name_as_commands_are_read_only() {
        let d = TestDirs::new("sbx-protect");
        let ws = &d.ws;
        git(ws, &["init", "-q"]);
        for dir in [
            "tools",
            ".claude/hooks",
            ".cursor",
            ".vscode",
            ".devcontainer",
            ".gemini",
            ".zed",
            ".kiro/settings",
            ".roo",
            ".amazonq",
            ".continue",
            ".qwen",
            ".kilocode",
            ".junie/mcp",
            "sub",
        ] {
            fs::create_dir_all(ws.join(dir)).unwrap();
        }
        let script = |rel: &str, body: &str| {
            fs::write(ws.join(rel), body).unwrap();
            fs::set_permissions(ws.join(rel), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        };
        script("fsmon.sh", "#!/bin/sh\nexit 1\n");
        script("tools/clean.sh", "#!/bin/sh\ncat\n");
        script("clean2.sh", "cat\n");
        script("tools/alias.sh", "#!/bin/sh\necho alias\n");
        script("other.sh", "#!/bin/sh\necho other\n");
        script("up.sh", "#!/bin/sh\nexec git-upload-pack \"$@\"\n");
        script("top.sh", "#!/bin/sh\nexit 0\n");
        script("dd.sh", "#!/bin/sh\nexit 0\n");
        script(".claude/hooks/fmt.sh", "#!/bin/sh\nexit 0\n");
        script("tools/mcp.js", "// server\n");
        script("server.js", "// server\n");
        script("cursor.js", "// server\n");
        script("task.sh", "#!/bin/sh\n");
        script("init.sh", "#!/bin/sh\n");
        for js in SERVERS {
            script(js, "// server\n");
        }
        git(ws, &["config", "core.fsmonitor", "./fsmon.sh"]);
        git(ws, &["config", "filter.strip.clean", "./tools/clean.sh %f"]);
        git(ws, &["config", "filter.bare.clean", "sh clean2.sh"]);
        git(ws, &["config", "alias.hi", "!sh tools/alias.sh"]);
        git(ws, &["config", "alias.top", "!\"$(git rev-parse --show-toplevel)/top.sh\""]);
        git(ws, &["config", "alias.dd", "!./tools/../dd.sh"]);
        git(ws, &["config", "remote.origin.uploadpack", "./up.sh"]);
        git(ws, &["config", "diff.bin.textconv", "tools/missing-textconv.sh"]);
        fs::write(ws.join(".gitattributes"), "*.txt filter=strip\n*.md filter=bare\n").unwrap();
        fs::write(
            ws.join(".claude/settings.json"),
            r#"{"hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/fmt.sh"}]}]}}"#,
        )
        .unwrap();
        fs::write(
            ws.join(".mcp.json"),
            r#"{"mcpServers": {"t": {"command": "node", "args": ["tools/mcp.js"]}, "u": {"command": "node server.js"}, "m": {"command": "python3 -m mcpsrv"}}}"#,
        )
        .unwrap();
        fs::write(ws.join(".cursor/mcp.json"), r#"{"mcpServers": {"c": {"command": "node", "args": ["cursor.js"]}}}"#)
            .unwrap();
        fs::write(
            ws.join(".vscode/tasks.json"),
            "{\n // VS Code\n \"tasks\": [{\"label\": \"t\", \"command\": \"sh task.sh\",},],\n}\n",
        )
        .unwrap();
        fs::write(ws.join(".devcontainer/devcontainer.json"), r#"{"initializeCommand": ["sh", "init.sh"]}"#).unwrap();
        // Further agents' and editors' MCP servers, each in its own file's shape.
        for (file, json) in [
            (".gemini/settings.json", r#"{"mcpServers": {"g": {"command": "node", "args": ["gemini.js"]}}}"#),
            ("opencode.json", r#"{"mcp": {"o": {"type": "local", "command": ["node", "oc.js"]}}}"#),
            (".zed/settings.json", r#"{"context_servers": {"z": {"command": {"path": "node", "args": ["zed.js"]}}}}"#),
            (".kiro/settings/mcp.json", r#"{"mcpServers": {"k": {"command": "node", "args": ["kiro.js"]}}}"#),
            (".roo/mcp.json", r#"{"mcpServers": {"r": {"command": "node", "args": ["roo.js"]}}}"#),
            (".amazonq/mcp.json", r#"{"mcpServers": {"q": {"command": "node", "args": ["q.js"]}}}"#),
            (".qwen/settings.json", r#"{"mcpServers": {"w": {"command": "node", "args": ["qwen.js"]}}}"#),
            (".kilocode/mcp.json", r#"{"mcpServers": {"k": {"command": "node", "args": ["kilo.js"]}}}"#),
            (".junie/mcp/mcp.json", r#"{"mcpServers": {"j": {"command": "node", "args": ["junie.js"]}}}"#),
            ("crush.json", r#"{"mcp": {"c": {"type": "stdio", "command": "node", "args": ["crush.js"]}}}"#),
            // Forms a red team found unread (5 December): a shell default, a working directory,
            // an environment that loads a file, a module, an option's value.
            (
                ".cursor/mcp.json",
                r#"{"mcpServers": {"c": {"command": "node", "args": ["cursor.js"]},
                    "b": {"command": "node ${NOPE:-srv5.js}"},
                    "e": {"command": "node", "args": ["srv7.js"], "cwd": "sub"},
                    "f": {"command": "node", "args": ["cursor.js"], "env": {"NODE_OPTIONS": "--require ./inj.js"}},
                    "h": {"command": "python3 -m mymod"},
                    "i": {"command": "node --import=./imp.mjs cursor.js"}}}"#,
            ),
            (
                ".continue/config.json",
                r#"{"experimental": {"modelContextProtocolServers": [{"transport": {"type": "stdio", "command": "node", "args": ["cont.js"]}}]}}"#,
            ),
        ] {
            fs::write(ws.join(file), json).unwrap();
        }
        fs::write(ws.join("a.txt"), "hi\n").unwrap();
        git(ws, &["add", "-A"]);
        git(ws, &["commit", "-qm", "init"]);
        let marker = d.root.join("config-command-ran");
        let m = marker.display();
        let (_set, exec) = executor(&d, config(&d));
        let mut attacks = Vec::new();
        let named: Vec<&str> = [
            "fsmon.sh",
            "tools/clean.sh",
            "clean2.sh",
            "tools/alias.sh",
            "up.sh",
            "top.sh",
            "dd.sh",
            ".claude/hooks/fmt.sh",
            "tools/mcp.js",
            "server.js",
            "cursor.js",
            "task.sh",
            "init.sh",
        ]
        .into_iter()
        .chain(SERVERS)
        .collect();
        for (i, rel) in named.iter().enumerate() {
            attacks.push((format!("write{i}"), format!("printf '#!/bin/sh\\ntouch {m}\\ncat\\n' > {rel}")));
            attacks.push((
                format!("replace{i}"),
                format!("printf '#!/bin/sh\\ntouch {m}\\n' > /tmp/r && mv /tmp/r {rel}"),
            ));
            attacks.push((format!("remove{i}"), format!("rm -f {rel}")));
        }
        attacks
            .push((String::from("create"), format!("printf '#!/bin/sh\\ntouch {m}\\n' > tools/missing-textconv.sh")));
        attacks.push((String::from("module"), String::from("mkdir mcpsrv")));
        // `./tools/../dd.sh`: `tools` made a symlink to a directory holding another `dd.sh`.
        attacks.push((String::from("dotdot"), String::from("mkdir -p x/y && mv tools tools-away && ln -s x/y tools")));
        let mut text = String::new();
        for (name, cmd) in &attacks {
            text.push_str(&attempt(name, cmd));
        }
        text.push_str(
            "echo other > other.sh && echo more >> a.txt && git status --short >/dev/null && echo controls-ok",
        );
        let out = sh_ok(&exec, ws, &text);
        all_failed(&out, &attacks.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>());
        assert!(out.contains("controls-ok"), "{out}");
        assert_eq!(fs::read_to_string(ws.join("other.sh")).unwrap(), "other\n", "control: an unnamed script");
        // The host's git runs what the config names: the originals.
        git(ws, &["status", "--short"]);
        git(ws, &["add", "a.txt"]);
        git(ws, &["hi"]);
        git(ws, &["top"]);
        git(ws, &["dd"]);
        assert!(!marker.exists(), "the host's git ran what the workload wrote");
        assert_eq!(fs::read_to_string(ws.join("fsmon.sh")).unwrap(), "#!/bin/sh\nexit 1\n");
        assert!(!ws.join("tools/missing-textconv.sh").exists() && !ws.join("mcpsrv").exists());
    }

    /// Attacks on the scan found by a red team (3 December), each from inside, run by run:
    /// - a `.git/commondir` written by the workload hands git another directory's config and
    ///   hooks (git reads it in every repository): it is refused creation, and an existing one
    ///   (a linked worktree's) is read-only;
    /// - `.claude` a symlink to another directory: `.claude/settings.json` was written through
    ///   it; now the target is read-only as a whole;
    /// - a bare repository's hooks and config (`git push` to it runs them): read-only, also
    ///   when the previous run renamed its `objects/` to hide it;
    /// - a directory the scan cannot read (the workload `chmod 0311`s it in one run, and a scan
    ///   running as an ordinary user skipped it in the next): read-only as a whole, its hooks,
    ///   config and `.vscode` not writable; root's scan reads it anyway and binds them.
    ///
    /// Positive controls: an ordinary file beside each is written; a plain symlinked directory
    /// stays writable.
    pub fn scan_evasions_are_closed() {
        let d = TestDirs::new("sbx-protect");
        let ws = &d.ws;
        let git = |dir: &Path, args: &[&str]| {
            let st = Command::new("git").args(args).current_dir(dir).status().unwrap();
            assert!(st.success(), "git {args:?}");
        };
        fs::create_dir_all(ws.join("repo")).unwrap();
        git(&ws.join("repo"), &["init", "-q"]);
        git(ws, &["init", "-q", "--bare", "remote.git"]);
        fs::create_dir_all(ws.join("claude-config")).unwrap();
        fs::write(ws.join("claude-config/settings.json"), "{}\n").unwrap();
        std::os::unix::fs::symlink("claude-config", ws.join(".claude")).unwrap();
        fs::create_dir_all(ws.join("plain-target")).unwrap();
        std::os::unix::fs::symlink("plain-target", ws.join("plain-link")).unwrap();
        fs::create_dir_all(ws.join("d/pkg/.vscode")).unwrap();
        fs::write(ws.join("d/pkg/.vscode/tasks.json"), "{}\n").unwrap();
        fs::create_dir_all(ws.join("d/inner")).unwrap();
        git(&ws.join("d/inner"), &["init", "-q"]);
        let (_set, exec) = executor(&d, config(&d));
        // Run 1: hide `d` from a scan that cannot read what it cannot list. Moving the bare
        // repository's `objects` away (to hide it from a scan that recognised it by `objects/`
        // alone) is refused now (no directory moves within a git directory the run did not
        // make); the host does it instead, and the scan must still know the repository.
        let (code, said) = sh_in(&exec, ws, "mv remote.git/objects remote.git/objects-aside").unwrap();
        assert_ne!(code, 0, "{said}");
        sh_ok(&exec, ws, "chmod 0311 d");
        fs::rename(ws.join("remote.git/objects"), ws.join("remote.git/objects-aside")).unwrap();
        let mut script = String::new();
        let attacks = [
            ("commondir", "mkdir -p evil/hooks && echo ../evil > repo/.git/commondir"),
            ("claude-settings", "echo '{\"hooks\":1}' > .claude/settings.json"),
            ("claude-commands", "mkdir .claude/commands"),
            ("bare-hook", "echo evil > remote.git/hooks/pre-receive"),
            ("bare-config", "echo evil >> remote.git/config"),
            ("hidden-hook", "echo evil > d/inner/.git/hooks/pre-commit"),
            ("hidden-config", "echo evil >> d/inner/.git/config"),
            ("hidden-vscode", "python3 -c 'open(\"d/pkg/.vscode/tasks.json\", \"r+\").write(\"evil\")'"),
        ];
        for (name, cmd) in attacks {
            script.push_str(&attempt(name, cmd));
        }
        script.push_str(
            "echo ok > repo/ordinary && echo ok > plain-link/f && echo ok > remote.git/description && echo controls-ok",
        );
        let out = sh_ok(&exec, ws, &script);
        all_failed(&out, &attacks.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>());
        assert!(out.ends_with("controls-ok\n"), "{out}");
        fs::set_permissions(ws.join("d"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert!(!ws.join("repo/.git/commondir").exists());
        assert_eq!(fs::read_to_string(ws.join("claude-config/settings.json")).unwrap(), "{}\n");
        assert!(!ws.join("remote.git/hooks/pre-receive").exists());
        assert!(!ws.join("d/inner/.git/hooks/pre-commit").exists());
        assert_eq!(fs::read_to_string(ws.join("d/pkg/.vscode/tasks.json")).unwrap(), "{}\n");
        assert_eq!(fs::read_to_string(ws.join("plain-target/f")).unwrap(), "ok\n");
    }

    /// A pin or a protected entry swapped with a symlink while spawns run (the attack: a
    /// workload in another sandbox of the same workspace exchanges `a/.git`, a repository it
    /// made, or `x/.vscode` with a symlink to a host directory outside every area, in a loop).
    /// The runtime resolves a bind's source on the host by path, so a spawn that scanned while
    /// the name was a directory and mounted while it was the symlink bound the host directory
    /// read-write at the symlink's target inside the container (19 of 50 spawns, by the
    /// attacker's count). Now every such self-bind is checked by the init against the object the
    /// scan recorded without following a symlink: a spawn either fails (the scan saw the change:
    /// `InvalidProfile`; the init's check: `Runtime`) or runs without the target. The target's
    /// secret is never read and nothing is written there. Positive control: spawns still run
    /// during the loop, and after it.
    pub fn a_pin_or_protected_entry_swapped_with_a_symlink_never_binds_its_target() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::{Duration, Instant};
        for (what, dir) in [("pin", "a/.git"), ("protected entry", "x/.vscode")] {
            let d = sandbox_tests::TestDirs::new("sbx-pin-swap");
            let ws = d.ws.as_path();
            let target = tempfile::Builder::new().prefix("sbx-pin-target").tempdir_in("/dev/shm").unwrap();
            let t = fs::canonicalize(target.path()).unwrap();
            fs::write(t.join("secret"), "SECRET\n").unwrap();
            let parent = ws.join(dir).parent().unwrap().to_path_buf();
            fs::create_dir_all(ws.join(dir)).unwrap();
            std::os::unix::fs::symlink(&t, parent.join("l")).unwrap();
            let (_set, exec) = executor(&d, config(&d));
            let probe = format!(
                "cat {t}/secret 2>/dev/null; (echo pwned > {t}/written) 2>/dev/null; echo ran",
                t = t.display()
            );
            assert_eq!(sh_ok(&exec, ws, &probe), "ran\n", "{what}: control before the loop");
            let stop = Arc::new(AtomicBool::new(false));
            let swapper = {
                let (stop, a, b) = (Arc::clone(&stop), ws.join(dir), parent.join("l"));
                std::thread::spawn(move || {
                    let a = std::ffi::CString::new(a.to_str().unwrap()).unwrap();
                    let b = std::ffi::CString::new(b.to_str().unwrap()).unwrap();
                    let mut swaps = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        // SAFETY: both paths are NUL-terminated and alive for the call.
                        let rc = unsafe {
                            libc::renameat2(
                                libc::AT_FDCWD,
                                a.as_ptr(),
                                libc::AT_FDCWD,
                                b.as_ptr(),
                                libc::RENAME_EXCHANGE,
                            )
                        };
                        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
                        swaps += 1;
                        std::thread::sleep(Duration::from_micros(500));
                    }
                    swaps
                })
            };
            let mut tally = sandbox_tests::SwapTally::default();
            let end = Instant::now() + Duration::from_secs(12);
            while Instant::now() < end && tally.spawns < 1000 {
                std::thread::sleep(Duration::from_micros(200 * u64::from(tally.spawns % 5)));
                if let Some(out) = tally.record(what, sh_in(&exec, ws, &probe), "SECRET") {
                    assert!(!out.contains("SECRET"), "{what}: spawn {} read the host directory: {out}", tally.spawns);
                }
                assert!(!t.join("written").exists(), "{what}: spawn {} wrote into the host directory", tally.spawns);
            }
            stop.store(true, Ordering::SeqCst);
            let swaps = swapper.join().unwrap();
            println!("  {what}: {swaps} swaps, {}", tally.summary());
            tally.assert_hit_and_ran(what);
            assert_eq!(fs::read_to_string(t.join("secret")).unwrap(), "SECRET\n");
            if ws.join(dir).is_symlink() {
                fs::rename(ws.join(dir), ws.join("tmp-link")).unwrap();
                fs::rename(parent.join("l"), ws.join(dir)).unwrap();
                fs::rename(ws.join("tmp-link"), parent.join("l")).unwrap();
            }
            assert_eq!(sh_ok(&exec, ws, &probe), "ran\n", "{what}: control after the loop");
        }
    }

    /// A tree-write grant's target under `/tmp` is the host's directory bound over the private
    /// tmpfs: the protected names are refused creation there (the private `/tmp` is no longer
    /// exempt), as in the workspace. Before, `.envrc`, `.vscode/tasks.json` and
    /// `.claude/settings.json` were written into the host directory. (A repository made during a
    /// run, with its hooks, is the workload's own there as in the workspace: THREAT-MODEL.md.)
    /// Control: an ordinary file is written.
    pub fn protected_names_are_refused_in_a_granted_tree_under_tmp() {
        let d = sandbox_tests::TestDirs::new("sbx-grant-tmp");
        let target = tempfile::Builder::new().prefix("sbx-granted").tempdir_in("/tmp").unwrap();
        let g = fs::canonicalize(target.path()).unwrap();
        let profile = Profile::new(ProfileConfig { host_write: Access::Gated, ..config(&d) }).unwrap();
        let set = ExecutorSet::new(&dl(), &profile, d.set_options(4)).unwrap();
        let exec = set.executor("k").unwrap();
        let cmd = format!(
            "cd {g} && {} {} {} echo ok > plain && echo controls-ok",
            attempt("envrc", "echo 'echo PWNED' > .envrc"),
            attempt("vscode", "mkdir -p .vscode && echo '{}' > .vscode/tasks.json"),
            attempt("claude", "mkdir -p .claude && echo '{}' > .claude/settings.json"),
            g = g.display()
        );
        let target = g.display().to_string();
        let request = sandbox::GrantRequest {
            execution_id: String::from("exec-1"),
            command: cmd.clone(),
            cwd: d.ws.clone(),
            kind: String::from("filesystem.write"),
            scope: format!("tree:{target}"),
            class: String::from("filesystem.tree.write.v1"),
            target: target.clone(),
            expiry_unix_ms: i64::try_from(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis(),
            )
            .unwrap()
                + 60_000,
        };
        let token = exec.issue_grant(&dl(), &request).unwrap();
        let out = exec.run_command_with_grants(&dl(), "exec-1", &d.ws, &cmd, &[token]).unwrap();
        let text = String::from_utf8_lossy(&out.bytes).into_owned();
        all_failed(&text, &["envrc".to_owned(), "vscode".to_owned(), "claude".to_owned()]);
        assert!(text.ends_with("controls-ok\n"), "{text}");
        assert_eq!(fs::read_to_string(g.join("plain")).unwrap(), "ok\n");
        assert!(!g.join(".envrc").exists() && !g.join(".vscode/tasks.json").exists());
        assert!(!g.join(".claude/settings.json").exists());
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if !sandbox_tests::privileged("linux_protect") {
            return std::process::ExitCode::SUCCESS;
        }
        use linux::*;
        sandbox_tests::run_tests(&[
            ("scan_evasions_are_closed", scan_evasions_are_closed),
            ("a_husky_layout_keeps_the_scripts_its_hooks_run", a_husky_layout_keeps_the_scripts_its_hooks_run),
            (
                "hooks_that_link_into_the_work_tree_keep_their_targets",
                hooks_that_link_into_the_work_tree_keep_their_targets,
            ),
            ("a_mercurial_config_keeps_the_files_it_runs", a_mercurial_config_keeps_the_files_it_runs),
            (
                "files_that_protected_configs_load_in_turn_are_protected",
                files_that_protected_configs_load_in_turn_are_protected,
            ),
            (
                "files_that_protected_configs_name_as_commands_are_read_only",
                files_that_protected_configs_name_as_commands_are_read_only,
            ),
            ("git_config_evasions_are_closed", git_config_evasions_are_closed),
            (
                "a_repository_cannot_be_made_where_the_hosts_git_would_enter_it",
                a_repository_cannot_be_made_where_the_hosts_git_would_enter_it,
            ),
            (
                "every_existing_default_entry_is_read_only_at_every_depth",
                every_existing_default_entry_is_read_only_at_every_depth,
            ),
            (
                "every_missing_default_name_cannot_be_created_at_any_depth",
                every_missing_default_name_cannot_be_created_at_any_depth,
            ),
            ("the_opt_out_writes_them", the_opt_out_writes_them),
            (
                "git_keeps_working_while_hooks_and_config_stay_read_only",
                git_keeps_working_while_hooks_and_config_stay_read_only,
            ),
            (
                "sandbox_run_in_a_repository_commits_and_keeps_hooks",
                sandbox_run_in_a_repository_commits_and_keeps_hooks,
            ),
            ("file_roots_deny_one_file", file_roots_deny_one_file),
            (
                "a_pin_or_protected_entry_swapped_with_a_symlink_never_binds_its_target",
                a_pin_or_protected_entry_swapped_with_a_symlink_never_binds_its_target,
            ),
            (
                "protected_names_are_refused_in_a_granted_tree_under_tmp",
                protected_names_are_refused_in_a_granted_tree_under_tmp,
            ),
            ("a_root_that_does_not_exist_cannot_be_created", a_root_that_does_not_exist_cannot_be_created),
            (
                "a_missing_hooks_directory_of_an_existing_repository_cannot_be_created",
                a_missing_hooks_directory_of_an_existing_repository_cannot_be_created,
            ),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
