//! `Executor` (CONTRACT.md §10–§11): one key's HOME, TMPDIR and environment snapshot, its
//! measured level and report, synchronous runs, and `prepare_process`.

#[cfg(target_os = "linux")]
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sandbox_bundle::{
    Access, CompileReport, Error, GrantDeltas, Guarantees, Home, Level, ScrubFlags, check_invariants, scrub,
};

use crate::backend::Spawn;

use crate::grant_checks::{ARGV_TEXT_AS_COMMAND, command_text, is_argv_text};
use crate::grants::{GrantState, is_safe_text};
use crate::output::Output;
use crate::prepared::{Prepared, PreparedProcess};
use crate::process::ProcessOptions;
use crate::set::{Admitted, SetInner, real_home};
use crate::{Deadline, ExecutorSetOptions, fsutil};

#[cfg(target_os = "linux")]
use crate::linux::SpawnInput;

/// Runs commands under the set's profile with its own HOME, TMPDIR and environment snapshot.
#[derive(Debug)]
pub struct Executor {
    pub(crate) set: Arc<SetInner>,
    key: String,
    home: PathBuf,
    home_dir: Option<PathBuf>,
    temp_dir: PathBuf,
    env: Vec<(String, String)>,
    level: Level,
    pub(crate) guarantees: Guarantees,
    report: CompileReport,
    pub(crate) grants: Mutex<GrantState>,
    /// Held handles on filesystem grant targets, by token nonce, with the token's expiry.
    #[cfg(target_os = "linux")]
    pub(crate) handles: Mutex<HashMap<String, (i64, sandbox_linux::TargetHandle)>>,
    /// Whether anything was run, prepared or granted with it ([`crate::ExecutorSet::discard_unused`]).
    pub(crate) used: std::sync::atomic::AtomicBool,
}

impl Executor {
    pub(crate) fn build(set: &Arc<SetInner>, key: &str) -> Result<Executor, Error> {
        let profile = &set.profile;
        let isolated = profile.config().home == Home::IsolatedHome;
        let mut created = Vec::new();
        let result = (|| {
            let home_dir = if isolated {
                let dir = fsutil::private_dir(&set.dir, "home-")?;
                created.push(dir.clone());
                for (src, rel) in &set.options.seed_home {
                    seed(&dir, src, rel)?;
                }
                Some(dir)
            } else {
                None
            };
            let temp_dir = fsutil::private_dir(&set.dir, "tmp-")?;
            created.push(temp_dir.clone());
            let home = home_dir.clone().unwrap_or_else(real_home);
            let snapshot: Vec<(OsString, OsString)> = std::env::vars_os().collect();
            let container = set.backend.confines();
            let env = scrub(
                &snapshot,
                &set.options.env,
                &home,
                &temp_dir,
                ScrubFlags { linux_container: container && cfg!(target_os = "linux") },
            );
            let env_detail = env_detail(&set.options);
            let (level, guarantees, report) =
                set.backend.assess(profile, &env, (home_dir.as_deref(), &temp_dir), env_detail)?;
            if let Err(broken) = check_invariants(level, guarantees, Some(profile.config().isolation), Some(&report)) {
                return Err(Error::runtime(format!("inconsistent report: {}", broken.join(", "))));
            }
            let required = profile.required_guarantees();
            if !guarantees.contains(required) {
                let missing = Guarantees::from_bits(required.bits() & !guarantees.bits());
                return Err(Error::SandboxUnavailable {
                    detail: format!("required guarantees missing: {}", missing.names().join(", ")),
                });
            }
            Ok(Executor {
                set: Arc::clone(set),
                key: key.to_owned(),
                home,
                home_dir,
                temp_dir,
                env,
                level,
                guarantees,
                report,
                grants: Mutex::new(GrantState::new()?),
                #[cfg(target_os = "linux")]
                handles: Mutex::new(HashMap::new()),
                used: std::sync::atomic::AtomicBool::new(false),
            })
        })();
        if result.is_err() {
            for dir in created {
                let _ = fsutil::remove_tree(&dir);
            }
        }
        result
    }

    /// Records that something was run, prepared or granted with this executor.
    pub(crate) fn mark_used(&self) {
        self.used.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn remove_dirs(&self) -> Result<(), Error> {
        if let Some(h) = &self.home_dir {
            fsutil::remove_tree(h)?;
        }
        fsutil::remove_tree(&self.temp_dir)
    }

    /// The key this executor was made for.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The measured level.
    pub fn level(&self) -> Level {
        self.level
    }

    /// The measured guarantees.
    pub fn guarantees(&self) -> Guarantees {
        self.guarantees
    }

    /// [`Guarantees::bits`] of [`Executor::guarantees`].
    pub fn guarantee_bits(&self) -> u64 {
        self.guarantees.bits()
    }

    /// What was achieved, feature by feature.
    pub fn report(&self) -> &CompileReport {
        &self.report
    }

    /// The process's HOME (the isolated one, or the caller's with `RealHome`).
    pub fn home_dir(&self) -> &Path {
        &self.home
    }

    /// The process's TMPDIR.
    pub fn temp_dir(&self) -> &Path {
        &self.temp_dir
    }

    /// Always 1.
    pub fn grant_version(&self) -> u16 {
        1
    }

    /// Runs `/bin/sh -c command` in `cwd`.
    pub fn run_command(&self, dl: &Deadline, cwd: &Path, command: &str) -> Result<Output, Error> {
        if command.is_empty() {
            dl.check(&[])?;
            self.check_open()?;
            return Err(Error::InvalidArgument { detail: String::from("command: empty") });
        }
        self.run(dl, cwd, &[OsStr::new("/bin/sh"), OsStr::new("-c"), OsStr::new(command)], None)
    }

    /// Runs `argv` without a shell; a bare `argv[0]` is looked up on the sandbox's `PATH`.
    pub fn run_argv<S: AsRef<OsStr>>(&self, dl: &Deadline, cwd: &Path, argv: &[S]) -> Result<Output, Error> {
        self.run(dl, cwd, argv, None)
    }

    /// Like [`Executor::run_argv`], keeping at most `max_output` bytes: the first byte beyond
    /// kills the tree and fails with [`Error::OutputLimit`].
    pub fn run_argv_limited<S: AsRef<OsStr>>(
        &self,
        dl: &Deadline,
        cwd: &Path,
        argv: &[S],
        max_output: u64,
    ) -> Result<Output, Error> {
        self.run(dl, cwd, argv, Some(max_output))
    }

    /// Checks and consumes authority for one process and compiles it; spawns nothing
    /// (CONTRACT.md §12). `start` on the result spawns it.
    pub fn prepare_process(&self, dl: &Deadline, o: ProcessOptions) -> Result<PreparedProcess, Error> {
        dl.check(&[])?;
        self.check_open()?;
        if o.tty && !self.set.backend.has_pty() {
            return Err(Error::ProcessTtyUnsupported);
        }
        let bad = |detail: &str| Err(Error::InvalidArgument { detail: detail.to_owned() });
        match (o.command.is_empty(), o.argv.is_empty()) {
            (false, false) => return bad("command and argv: give exactly one"),
            (true, true) => return bad("command and argv: give exactly one"),
            _ => {}
        }
        if !o.argv.is_empty() && o.argv[0].is_empty() {
            return bad("argv: empty program");
        }
        if o.argv.iter().any(|a| a.as_encoded_bytes().contains(&0)) {
            return bad("argv: contains NUL");
        }
        let malformed = |detail: &str| Err(Error::GrantMalformed { detail: detail.to_owned() });
        if !is_safe_text(&o.execution_id) {
            return malformed("execution_id: empty, padded with whitespace or containing NUL");
        }
        if !o.command.is_empty() && !is_safe_text(&o.command) {
            return malformed("command: padded with whitespace or containing NUL");
        }
        if !o.grants.is_empty() && o.argv.iter().any(|a| a.to_str().is_none()) {
            return malformed("argv: not UTF-8 while grants are given");
        }
        if !o.grants.is_empty() && is_argv_text(&o.command) {
            return malformed(ARGV_TEXT_AS_COMMAND);
        }
        let cwd = std::fs::canonicalize(&o.cwd).ok().filter(|p| p.is_dir()).ok_or_else(|| Error::GrantMalformed {
            detail: format!("cwd: {} does not resolve to a directory", o.cwd.display()),
        })?;
        match self.set.profile.config().command {
            Access::Deny => return Err(Error::GrantDenied { detail: String::from("command.execute is deny") }),
            Access::Gated if o.grants.is_empty() => return Err(Error::GrantRequired),
            _ => {}
        }
        let deltas = if o.grants.is_empty() {
            GrantDeltas::default()
        } else {
            let text = command_text(&o.command, &o.argv)?;
            let tokens: Vec<&str> = o.grants.iter().map(String::as_str).collect();
            let verified = self.verify_grants(&tokens, &o.execution_id, &text, &cwd)?;
            self.mark_used();
            verified.deltas
        };
        let argv: Vec<OsString> = if o.command.is_empty() {
            o.argv
        } else {
            vec![OsString::from("/bin/sh"), OsString::from("-c"), OsString::from(o.command)]
        };
        #[cfg(target_os = "linux")]
        if let Some(linux) = self.set.backend.linux() {
            // Compiled now so that a spawn that cannot be expressed fails before start.
            let mut input = self.spawn_input(&argv, cwd.clone())?;
            input.grants = deltas.clone();
            linux.compile_unscanned(&self.set.profile, &input, "prepare")?;
        }
        self.mark_used();
        Ok(PreparedProcess {
            set: Arc::clone(&self.set),
            argv,
            cwd,
            env: self.env.clone(),
            home_dir: self.home_dir.clone(),
            temp_dir: self.temp_dir.clone(),
            tty: o.tty,
            deltas,
            state: Mutex::new(Prepared::Ready),
        })
    }

    #[cfg(target_os = "linux")]
    pub(crate) fn spawn_input<'a>(&'a self, argv: &[OsString], cwd: PathBuf) -> Result<SpawnInput<'a>, Error> {
        crate::linux::spawn_input(argv, cwd, &self.env, (self.home_dir.as_deref(), &self.temp_dir))
    }

    /// Runs `/bin/sh -c command` with grant tokens (CONTRACT.md §11, §13.4): the canonical cwd,
    /// every token verified and consumed first, Gated capabilities opened for this spawn only.
    pub fn run_command_with_grants<G: AsRef<str>>(
        &self,
        dl: &Deadline,
        execution_id: &str,
        cwd: &Path,
        command: &str,
        grants: &[G],
    ) -> Result<Output, Error> {
        dl.check(&[])?;
        self.check_open()?;
        let malformed = |detail: &str| Err(Error::GrantMalformed { detail: detail.to_owned() });
        if !is_safe_text(execution_id) {
            return malformed("execution_id: empty, padded with whitespace or containing NUL");
        }
        if !is_safe_text(command) {
            return malformed("command: empty, padded with whitespace or containing NUL");
        }
        if !grants.is_empty() && is_argv_text(command) {
            return malformed(ARGV_TEXT_AS_COMMAND);
        }
        let cwd = std::fs::canonicalize(cwd).ok().filter(|p| p.is_dir()).ok_or_else(|| Error::GrantMalformed {
            detail: format!("cwd: {} does not resolve to a directory", cwd.display()),
        })?;
        if self.set.profile.config().command == Access::Deny {
            return Err(Error::GrantDenied { detail: String::from("command.execute is deny") });
        }
        let tokens: Vec<&str> = grants.iter().map(AsRef::as_ref).collect();
        let verified = self.verify_grants(&tokens, execution_id, command, &cwd)?;
        self.mark_used();
        let argv = [OsStr::new("/bin/sh"), OsStr::new("-c"), OsStr::new(command)];
        self.spawn_sync(dl, cwd, &argv, None, verified.deltas)
    }

    /// A synchronous spawn of `argv` in `cwd` with the given grants.
    fn spawn_sync<S: AsRef<OsStr>>(
        &self,
        dl: &Deadline,
        cwd: PathBuf,
        argv: &[S],
        limit: Option<u64>,
        deltas: GrantDeltas,
    ) -> Result<Output, Error> {
        let Some(_admitted) = Admitted::new(&self.set) else {
            return Err(Error::ExecutorClosed { partial: Vec::new() });
        };
        self.mark_used();
        let argv: Vec<OsString> = argv.iter().map(|a| a.as_ref().to_os_string()).collect();
        let dirs = (self.home_dir.as_deref(), self.temp_dir.as_path());
        let pins = &self.set.pins;
        let spawn = Spawn { argv: &argv, cwd: &cwd, env: &self.env, dirs, deltas, pins };
        self.set.backend.run(dl, &self.set.profile, spawn, limit, &self.set.closing)
    }

    pub(crate) fn check_open(&self) -> Result<(), Error> {
        if self.set.lock().closed { Err(Error::ExecutorClosed { partial: Vec::new() }) } else { Ok(()) }
    }

    fn run<S: AsRef<OsStr>>(&self, dl: &Deadline, cwd: &Path, argv: &[S], limit: Option<u64>) -> Result<Output, Error> {
        dl.check(&[])?;
        self.check_open()?;
        let bad = |detail: &str| Err(Error::InvalidArgument { detail: detail.to_owned() });
        if argv.is_empty() || argv[0].as_ref().is_empty() {
            return bad("argv: empty");
        }
        if argv.iter().any(|a| a.as_ref().as_encoded_bytes().contains(&0)) {
            return bad("argv: contains NUL");
        }
        if cwd.as_os_str().as_encoded_bytes().contains(&0) {
            return bad("cwd: contains NUL");
        }
        // Resolved here, as the grant paths resolve theirs: the sandbox enters the resolved path
        // and follows no symlink on the way (see the Linux init's `chdir_no_symlinks`).
        let lexical = absolute_lexical(cwd);
        let Some(cwd) = std::fs::canonicalize(&lexical).ok().filter(|p| p.is_dir()) else {
            return Err(Error::InvalidArgument {
                detail: format!("cwd: {} is not an existing directory", lexical.display()),
            });
        };
        if limit == Some(0) {
            return Err(Error::OutputLimit { partial: Vec::new() });
        }
        match self.set.profile.config().command {
            Access::Deny => return Err(Error::GrantDenied { detail: String::from("command.execute is deny") }),
            Access::Gated => return Err(Error::GrantRequired),
            Access::Allow => {}
        }
        self.spawn_sync(dl, cwd, argv, limit, GrantDeltas::default())
    }
}

fn absolute_lexical(p: &Path) -> PathBuf {
    let joined = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(p) };
    sandbox_bundle::profile::lexically_clean(&joined)
}

fn seed(home: &Path, src: &Path, rel: &Path) -> Result<(), Error> {
    let dest = home.join(rel);
    let mut dir = home.to_path_buf();
    for c in rel.parent().into_iter().flat_map(Path::components) {
        dir.push(c);
        if !dir.is_dir() {
            let mut b = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.create(&dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        }
    }
    std::fs::copy(src, &dest).map_err(|e| Error::io(format!("seeding {}", dest.display()), e))?;
    Ok(())
}

fn env_detail(options: &ExecutorSetOptions) -> String {
    let mut parts =
        vec![String::from("allowlist PATH HOME TERM LANG USER LOGNAME SHELL TZ LC_*; HOME and TMPDIR forced")];
    if !options.env.pass_env.is_empty() {
        parts.push(format!("passed: {}", options.env.pass_env.join(" ")));
    }
    if !options.env.set_env.is_empty() {
        let names: Vec<&str> = options.env.set_env.iter().map(|(n, _)| n.as_str()).collect();
        parts.push(format!("set: {}", names.join(" ")));
    }
    if !options.seed_home.is_empty() {
        let files: Vec<String> = options.seed_home.iter().map(|(_, r)| r.display().to_string()).collect();
        parts.push(format!("seeded: {}", files.join(" ")));
    }
    parts.join("; ")
}
