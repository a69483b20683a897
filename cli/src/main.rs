//! The `sandbox` command line: thin verbs over the public facade (CONTRACT.md §18).
//!
//! Exit status: the workload's code; 128 + n for signal n; 125 for a sandbox error
//! (`sandbox: <error>` on stderr); 2 for a usage error (clap's own exit code).
//!
//! Our own output: when `run`'s stdout or stderr loses its reader (EPIPE, `| head -1`), the
//! CLI stops copying, ends the tree and exits 141, as a producer in a shell pipeline dies of
//! SIGPIPE; any other failed write of the workload's output (a full disk) ends the tree too and
//! is a sandbox error (125), as is a failed write of a final result (`--json`'s object, `--report`,
//! probe's JSON or text, the exported bundle's path).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

mod serve;
#[cfg(unix)]
mod signals;

use clap::{Parser, Subcommand};
use sandbox::export::{ExportRequest, export_bundle};
use sandbox::{
    Deadline, Error, ExecutorSet, ExecutorSetOptions, ExitStatus, Process, ProcessOptions, Profile, ProfileConfig,
    Signal,
};

#[derive(Parser, Debug)]
#[command(
    name = "sandbox",
    version,
    about = "Run agent tool calls in micro-containers and report what the OS enforced"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run ARGV in a fresh sandbox; stdout and stderr pass through; exit with its status.
    Run(RunArgs),
    /// OCI bundle operations.
    Bundle {
        #[command(subcommand)]
        command: BundleCommand,
    },
    /// Run the stage-11 proof: `echo confined` in a denied-network, isolated-home sandbox.
    Proof,
    /// Serve JSON-line requests on stdin (each a `run --json` object back, with its id) from
    /// one long-lived set: the warm path for harnesses in other languages.
    Serve(serve::ServeArgs),
    /// Say what this host can enforce, what the default profile gets here, and for each layer
    /// that is missing what it costs and the command or file that fixes it: for a person on a
    /// terminal, as JSON otherwise (CONTRACT.md §18) or with --json.
    Probe {
        /// Print JSON even on a terminal (errors too: {"error": kind, "message": text}).
        #[arg(long, conflicts_with = "text")]
        json: bool,
        /// Print for a person even when stdout is not a terminal.
        #[arg(long)]
        text: bool,
    },
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// A JSON profile file (ProfileConfig keys); default: the current directory as a
    /// read-write workspace, host read allow, host write deny, network deny.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// The working directory of the command (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The scratch root (default: `/dev/shm/sandbox-cli-<uid>` when `/dev/shm` is a tmpfs and
    /// `TMPDIR` is unset, else `<tmp>/sandbox-cli-<uid>`, owner-only; the next of `<tmp>`,
    /// `/var/tmp` and `/dev/shm` when one lies in a writable area of the profile; the run's own
    /// directory inside is removed afterwards, and one left by a killed run is swept).
    #[arg(long, value_name = "DIR")]
    scratch: Option<PathBuf>,
    /// The cgroup under which the spawn gets its own (needed as a non-root user on a cgroup v1
    /// or hybrid host: a subtree root delegated to you).
    #[arg(long, value_name = "PATH")]
    cgroup_parent: Option<PathBuf>,
    /// Kill the process tree this many seconds after start (exit 125): 0 (nothing is spawned)
    /// to 1000000000 (about 31 years), fractions allowed.
    #[arg(long, value_name = "SECONDS", value_parser = Utf8(parse_timeout), allow_negative_numbers = true)]
    timeout: Option<Duration>,
    /// Pass on at most N bytes of each stream; the first byte beyond kills the tree (exit 125).
    #[arg(long, value_name = "N", value_parser = Utf8(clap::value_parser!(u64)), allow_negative_numbers = true)]
    output_limit: Option<u64>,
    /// At most this many CPUs of CPU time (0.01-1000, for example 0.5; Linux: cgroup cpu.max or
    /// cpu.cfs_quota_us). Default: no bound beyond the low CPU weight.
    #[arg(long, value_name = "CPUS", value_parser = Utf8(parse_cpus), allow_negative_numbers = true)]
    cpus: Option<f64>,
    /// The CPU weight of the run (1-10000; a host process has 100; default 10).
    #[arg(long, value_name = "WEIGHT", value_parser = Utf8(cpu_weight_parser()), allow_negative_numbers = true)]
    cpu_weight: Option<u16>,
    /// Pin NAME to ADDR for the egress proxy's resolver (repeatable, like curl's --resolve): the
    /// proxy connects there instead of asking DNS, and a pinned address counts as named by you
    /// (loopback test servers, split-horizon DNS). Only allowed targets are reachable either way.
    #[arg(long, value_name = "NAME:ADDR", value_parser = text())]
    resolve: Vec<String>,
    /// Allow a network target through the egress proxy (repeatable): `tcp:<host>:<port>`,
    /// `tcp:*.<domain>:<port>` or `tcp:<ip>:<port>`. Makes the default profile's network gated;
    /// a --profile file must say `"network": "gated"` itself.
    #[arg(long, value_name = "TARGET", value_parser = text())]
    allow_target: Vec<String>,
    /// Print exactly one JSON object on stdout (exit_code, signal, stdout, stderr, error, level,
    /// guarantees, guarantee_bits, report, denials) and nothing else.
    #[arg(long)]
    json: bool,
    /// Print level, guarantees and report as JSON on stderr.
    #[arg(long)]
    report: bool,
    /// The command and its arguments (no shell).
    #[arg(last = true, required = true, value_name = "ARGV")]
    argv: Vec<OsString>,
}

#[derive(Subcommand, Debug)]
enum BundleCommand {
    /// Write the OCI bundle sandbox would run for ARGV into --out (missing or empty); prints it.
    Export {
        /// Output directory: missing (its parent must exist) or empty.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// A JSON profile file (ProfileConfig keys); default as for `run`.
        #[arg(long, value_name = "FILE")]
        profile: Option<PathBuf>,
        /// The working directory of the command (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// The command and its arguments (no shell).
        #[arg(last = true, required = true, value_name = "ARGV")]
        argv: Vec<OsString>,
    },
}

fn main() -> ExitCode {
    sandbox::init();
    // A usage error exits 2 with clap's text on stderr and nothing on stdout, with or without
    // `--json`: a command line that was not understood did not ask for JSON either
    // (`--allow-target --json` lacks a target), and a harness tells it by the status.
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Bundle { command: BundleCommand::Export { out, profile, cwd, argv } } => {
            export(&out, profile.as_deref(), cwd, argv).map(|()| 0)
        }
        Command::Proof => sandbox::proof::stage11(&mut std::io::stdout()).map(|()| 0),
        Command::Serve(args) => serve::serve(args),
        Command::Probe { json, text } => {
            use std::io::IsTerminal as _;
            probe(json || !(text || std::io::stdout().is_terminal()))
        }
    };
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            // Never a panic (`eprintln!` panics when stderr is gone); there is no one to tell then.
            let _ = emit(std::io::stderr(), &own_line(&format!("sandbox: {e}")));
            ExitCode::from(125)
        }
    }
}

/// Writes `text` whole to `out` and flushes it.
/// One line of the CLI's own on stderr: control characters in it (a newline, an escape
/// sequence) are written escaped (`\u{1b}`), so that a name a workload chose (a directory the
/// clean-up could not remove, a target it asked for) can neither forge a line of ours nor drive
/// the terminal (the red team of 4 December, night). The workload's own output is its own.
fn own_line(text: &str) -> String {
    let mut out: String =
        text.chars().map(|c| if c.is_control() { c.escape_default().collect() } else { c.to_string() }).collect();
    out.push('\n');
    out
}

fn emit(mut out: impl Write, text: &str) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes `text`, a final result (`what`), to stdout: a failed write, a reader gone included, is
/// an error (exit 125), never ignored and never a panic (`println!` panics on a broken pipe).
fn say(what: &str, text: &str) -> Result<(), Error> {
    emit(std::io::stdout().lock(), text).map_err(|e| Error::io(format!("writing {what}"), e))
}

/// A working directory that is not one (missing, a file, unreadable) is the caller's bad
/// argument, named by `what` (`--cwd`, serve's `request: cwd`): `InvalidArgument` (CONTRACT.md
/// §7, "a cwd that is not a directory"), checked before anything is created, the same on every
/// verb. The library's own check (`GrantMalformed` in its order of checks) stays for library
/// callers.
pub(crate) fn check_cwd(what: &str, cwd: &Path) -> Result<(), Error> {
    let detail = match std::fs::metadata(cwd) {
        Ok(m) if m.is_dir() => match std::fs::canonicalize(cwd) {
            // OCI paths are text, and `/proc` is the sandbox's own: refused before anything is
            // made (they failed only once the set existed, as `runtime` errors).
            Ok(real) if real.to_str().is_none() => format!("{what}: {} is not valid UTF-8", cwd.display()),
            Ok(real) if real.starts_with("/proc") => {
                format!("{what}: {} is outside the sandbox's view (/proc is the sandbox's own)", cwd.display())
            }
            _ => return Ok(()),
        },
        Ok(_) => format!("{what}: {} is not a directory", cwd.display()),
        Err(e) => format!("{what}: {} is not a directory: {e}", cwd.display()),
    };
    Err(Error::InvalidArgument { detail })
}

/// What `prepare_process` would refuse of the CLI's argv, checked before a set is made (its
/// directory, its sweep of the scratch root, its cgroups and its probe are all work done on
/// the host): an empty program. (A profile whose command access is `deny` or `gated` still
/// gets its set: the refusal reports the executor's level, as `--json` promises.)
/// The library names its options by field (`scratch_root: …`, `out_dir: …`); a CLI user set
/// them by flag, so a message that begins with such a field names the flag first
/// (`--scratch (scratch_root): …`).
pub(crate) fn as_flags(e: Error) -> Error {
    const FIELDS: [(&str, &str); 4] = [
        ("scratch_root", "--scratch"),
        ("cgroup_parent", "--cgroup-parent"),
        ("out_dir", "--out"),
        ("max_executors", "--max-executors"),
    ];
    let rename = |text: String| {
        FIELDS
            .iter()
            .find_map(|(field, flag)| {
                text.strip_prefix(field)?.strip_prefix(": ").map(|rest| format!("{flag} ({field}): {rest}"))
            })
            .unwrap_or(text)
    };
    match e {
        Error::InvalidOptions { detail } => Error::InvalidOptions { detail: rename(detail) },
        Error::InvalidArgument { detail } => Error::InvalidArgument { detail: rename(detail) },
        Error::Io { context, source } => Error::Io { context: rename(context), source },
        e => e,
    }
}

/// A value parser that names its flag when the value is not UTF-8 (clap's own text says only
/// "invalid UTF-8 was detected in one or more arguments"), then hands the text to `P`. Still a
/// usage error (exit 2).
#[derive(Clone)]
pub(crate) struct Utf8<P>(pub(crate) P);

impl<P: clap::builder::TypedValueParser> clap::builder::TypedValueParser for Utf8<P> {
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        if value.to_str().is_none() {
            let name = arg.map_or_else(|| String::from("an option"), |a| format!("'{a}'"));
            let text = format!("invalid value for {name}: not valid UTF-8\n\nFor more information, try '--help'.\n");
            return Err(clap::Error::raw(clap::error::ErrorKind::InvalidUtf8, text).with_cmd(cmd));
        }
        self.0.parse_ref(cmd, arg, value)
    }
}

/// `Utf8` over clap's text parser.
pub(crate) fn text() -> Utf8<clap::builder::StringValueParser> {
    Utf8(clap::builder::StringValueParser::new())
}

fn check_call(argv: &[OsString]) -> Result<(), Error> {
    if argv.first().is_none_or(|p| p.is_empty()) {
        return Err(Error::InvalidArgument { detail: String::from("argv: empty program") });
    }
    Ok(())
}

fn current_dir() -> Result<PathBuf, Error> {
    std::env::current_dir().map_err(|e| Error::io("current directory", e))
}

fn resolve(current: &Path, p: Option<PathBuf>) -> PathBuf {
    match p {
        Some(c) if c.is_relative() => current.join(c),
        Some(c) => c,
        None => current.to_path_buf(),
    }
}

fn export(out: &Path, profile: Option<&Path>, cwd: Option<PathBuf>, argv: Vec<OsString>) -> Result<(), Error> {
    let current = current_dir()?;
    let profile = load_profile(profile, &current)?;
    let cwd = resolve(&current, cwd);
    check_cwd("--cwd", &cwd)?;
    let (uid, gid) = ids();
    let request = ExportRequest {
        argv,
        cwd,
        env_snapshot: std::env::vars_os().collect(),
        real_home: std::env::var_os("HOME").map(PathBuf::from),
        uid,
        gid,
        ..ExportRequest::default()
    };
    export_bundle(&profile, &request, out).map_err(as_flags)?;
    say(&format!("the bundle's path (the bundle at {} is written)", out.display()), &format!("{}\n", out.display()))
}

fn probe(json: bool) -> Result<i32, Error> {
    let probe = match sandbox::probe(&Deadline::after(Duration::from_secs(60))) {
        Ok(p) => p,
        Err(e) if json => {
            let value = serde_json::json!({ "error": e.kind().as_str(), "message": e.to_string() });
            say("the probe", &format!("{value}\n"))?;
            return Ok(125);
        }
        Err(e) => return Err(e),
    };
    if json {
        let text = serde_json::to_string_pretty(&probe).map_err(|e| Error::io("encoding json", e.into()))?;
        say("the probe", &format!("{text}\n"))?;
    } else {
        say("the probe", &probe_text(&probe))?;
    }
    Ok(0)
}

/// `sandbox probe` for a person: the verdict, then each missing layer with its cost and fix,
/// then the default profile's report.
fn probe_text(p: &sandbox::HostProbe) -> String {
    use std::fmt::Write as _;
    let mut t = String::new();
    let backend = p.backend.unwrap_or("none");
    let _ = writeln!(t, "sandbox probe: {} {} (backend: {backend})", p.os, p.arch);
    if p.available {
        let _ = writeln!(t, "available: yes, level {} ({})", p.level, p.reason);
        let _ = writeln!(t, "guarantees: {}", p.guarantees.join(", "));
    } else {
        let _ = writeln!(t, "available: no: {}", p.reason);
    }
    let _ = writeln!(t, "lifetime containment: {}", p.lifetime_containment);
    let parent = p.cgroup.parent.as_deref().unwrap_or("none");
    let _ = writeln!(t, "cgroup: {}, parent {parent}", p.cgroup.version);
    let abi = p.landlock_abi.map_or_else(|| String::from("none"), |a| a.to_string());
    let _ = writeln!(t, "landlock abi: {abi}; user namespaces: {}; seccomp: {}", p.user_namespaces, p.seccomp);
    if p.findings.is_empty() {
        let _ = writeln!(t, "missing: nothing");
    } else {
        let _ = writeln!(t, "missing ({}):", p.findings.len());
        for f in &p.findings {
            let _ = writeln!(t, "- {}: {}", f.layer, f.missing);
            let _ = writeln!(t, "  costs: {}", f.costs);
            let _ = writeln!(t, "  fix: {}", f.fix.replace('\n', "\n  "));
        }
    }
    if !p.report.is_empty() {
        let _ = writeln!(t, "report of the default profile:");
        for e in &p.report {
            let _ = writeln!(t, "  {}: {}: {}", e.feature, e.status, e.detail);
        }
    }
    if !p.achievable.is_empty() {
        let _ = writeln!(t, "achievable here: {}", p.achievable.join(", "));
    }
    if let Some(e) = &p.target_network {
        let _ = writeln!(t, "target-network (network gated): {}: {}", e.status, e.detail);
    }
    if !p.grant_classes.is_empty() {
        let _ = writeln!(t, "grant classes: {}", p.grant_classes.join(", "));
    }
    t
}

/// A stream copied as it arrives: to our own stream, or captured for `--json`.
struct Copy {
    captured: Vec<u8>,
    exceeded: bool,
    /// The write to our own stream that failed (the tree was killed then, and nothing more
    /// was copied).
    failed: Option<std::io::Error>,
}

fn pump(
    mut reader: impl Read,
    mut sink: Option<Box<dyn Write + Send>>,
    limit: Option<u64>,
    process: &Arc<Process>,
    exceeded: &AtomicBool,
) -> Copy {
    let mut copy = Copy { captured: Vec::new(), exceeded: false, failed: None };
    let mut passed: u64 = 0;
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let allowed = limit.map_or(n, |l| usize::try_from(l.saturating_sub(passed)).unwrap_or(usize::MAX).min(n));
        let chunk = &buf[..allowed];
        passed += allowed as u64;
        match sink.as_mut() {
            Some(s) => {
                if let Err(e) = s.write_all(chunk).and_then(|()| s.flush()) {
                    // Nobody gets the output any more (the reader is gone, or the disk is
                    // full): the tree is ended at once, as a pipeline's producer dies of SIGPIPE
                    // or fails, instead of drained into failing writes for ever.
                    let _ = process.signal(&Deadline::none(), Signal::Kill);
                    copy.failed = Some(e);
                    break;
                }
            }
            None => copy.captured.extend_from_slice(chunk),
        }
        if allowed < n && !copy.exceeded {
            copy.exceeded = true;
            exceeded.store(true, Ordering::SeqCst);
            let _ = process.signal(&Deadline::none(), Signal::Kill);
        }
    }
    copy
}

fn run(args: RunArgs) -> Result<i32, Error> {
    let json = args.json;
    match run_inner(args) {
        Err(e) if json => {
            // Exactly one JSON object, also when nothing could run.
            say("the result", &format!("{}\n", error_json(&e)))?;
            Ok(125)
        }
        other => other,
    }
}

/// The `--json` object of a run that could not run.
fn error_json(e: &Error) -> serde_json::Value {
    serde_json::json!({
        "exit_code": null, "signal": null, "stdout": "", "stderr": "",
        "error": e.kind().as_str(), "message": e.to_string(),
        "level": "none", "guarantees": [], "guarantee_bits": 0, "report": [], "denials": [],
    })
}

/// The most seconds a timeout takes (`--timeout`, serve's `timeout`): about 31 years, far
/// beyond any run and far from `Instant`'s overflow.
pub(crate) const MAX_TIMEOUT_SECS: f64 = 1e9;

/// A timeout of `s` seconds: finite, 0 to [`MAX_TIMEOUT_SECS`].
pub(crate) fn timeout_seconds(s: f64) -> Option<Duration> {
    (s.is_finite() && (0.0..=MAX_TIMEOUT_SECS).contains(&s)).then(|| Duration::from_secs_f64(s))
}

/// `--timeout`'s value parser: a bad value is a usage error (exit 2) naming the flag, like an
/// unparsable one.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .and_then(timeout_seconds)
        .ok_or_else(|| format!("not a number of seconds from 0 to {MAX_TIMEOUT_SECS}"))
}

/// `--cpus`'s value parser (run and serve): a number of CPUs in 0.01-1000.
pub(crate) fn parse_cpus(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(c) if (0.01..=1000.0).contains(&c) => Ok(c),
        _ => Err(String::from("not a number of CPUs from 0.01 to 1000")),
    }
}

/// `--cpu-weight`'s value parser (run and serve): 1-10000.
pub(crate) fn cpu_weight_parser() -> impl clap::builder::TypedValueParser<Value = u16> {
    clap::value_parser!(u16).range(1..=10_000)
}

/// `--cpus` and `--cpu-weight` (run and serve), checked before anything is created (their
/// value parsers refuse what is out of range already; this is the library-facing conversion).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CpuFlags {
    millicpus: Option<u32>,
    weight: Option<u16>,
}

impl CpuFlags {
    pub(crate) fn check(cpus: Option<f64>, weight: Option<u16>) -> Result<CpuFlags, Error> {
        let millicpus = match cpus {
            // Thousandths of a CPU: the same arithmetic as seconds to milliseconds.
            Some(c) if (0.01..=1000.0).contains(&c) => u32::try_from(Duration::from_secs_f64(c).as_millis()).ok(),
            Some(c) => {
                return Err(Error::InvalidArgument {
                    detail: format!("--cpus: {c} is not a number of CPUs in 0.01-1000"),
                });
            }
            None => None,
        };
        if let Some(w) = weight {
            if !(1..=10_000).contains(&w) {
                return Err(Error::InvalidArgument { detail: format!("--cpu-weight: {w} is outside 1-10000") });
            }
        }
        Ok(CpuFlags { millicpus, weight })
    }

    pub(crate) fn apply(self, mut options: ExecutorSetOptions) -> ExecutorSetOptions {
        if let Some(m) = self.millicpus {
            options = options.cpu_max_millicpus(m);
        }
        if let Some(w) = self.weight {
            options = options.cpu_weight(w);
        }
        options
    }
}

fn run_inner(args: RunArgs) -> Result<i32, Error> {
    // Checked before anything is created or run.
    let timeout = args.timeout;
    let cpu = CpuFlags::check(args.cpus, args.cpu_weight)?;
    let pins = args.resolve.iter().map(|p| parse_resolve(p)).collect::<Result<Vec<_>, _>>()?;
    // The container's cgroup move waits out a kernel grace period unless one started earlier:
    // start it now, while the profile is read (a thread that moves nothing; no effect on error).
    sandbox::expect_spawn();
    let current = current_dir()?;
    let profile = load_profile_with_targets(args.profile.as_deref(), &current, &args.allow_target)?;
    let cwd = resolve(&current, args.cwd.clone());
    check_cwd("--cwd", &cwd)?;
    check_call(&args.argv)?;
    let scratch = match &args.scratch {
        Some(s) => resolve(&current, Some(s.clone())),
        None => default_scratch(&profile)?,
    };
    let setup = Deadline::after(Duration::from_secs(60));
    // One spawn per set: a fresh container that ends with its run, none kept or built ahead.
    let mut options = ExecutorSetOptions::new(&scratch).max_executors(1).reuse_containers(false);
    for (name, address) in pins {
        options = options.resolve(name, address);
    }
    if let Some(parent) = &args.cgroup_parent {
        options = options.cgroup_parent(parent);
    }
    let options = cpu.apply(options);
    let set = ExecutorSet::new(&setup, &profile, options).map_err(as_flags)?;
    let executor = set.executor("sandbox-cli")?;
    // A limit of 0 bytes: nothing is spawned (CONTRACT.md §11, `OutputLimit`), as a timeout of
    // 0 spawns nothing.
    let started = if args.output_limit == Some(0) {
        Err(Error::OutputLimit { partial: Vec::new() })
    } else {
        executor
            .prepare_process(
                &setup,
                ProcessOptions {
                    cwd,
                    argv: args.argv.clone(),
                    execution_id: String::from("sandbox-cli"),
                    ..ProcessOptions::default()
                },
            )
            .and_then(|prepared| prepared.start(&setup))
    };
    let process = match started {
        Ok(p) => Arc::new(p),
        // Refused once the executor exists (a grant required, say): the object carries the
        // executor's level, guarantees and report like any run's (CONTRACT.md §6), not `none`.
        Err(e) if args.json => {
            let mut v = error_json(&e);
            v["level"] = executor.level().to_string().into();
            v["guarantees"] = executor.guarantees().names().into();
            v["guarantee_bits"] = executor.guarantee_bits().into();
            v["report"] = serde_json::to_value(&executor.report().entries).unwrap_or_default();
            let written = say("the result", &format!("{v}\n"));
            drop(executor);
            let _ = set.close();
            if let Err(w) = written {
                let _ = emit(std::io::stderr(), &own_line(&format!("sandbox: {w}")));
            }
            return Ok(125);
        }
        Err(e) => return Err(e),
    };
    #[cfg(unix)]
    signals::forward(Arc::clone(&process));
    let sinks: [Option<Box<dyn Write + Send>>; 2] =
        if args.json { [None, None] } else { [Some(Box::new(std::io::stdout())), Some(Box::new(std::io::stderr()))] };
    let ran = drive(&process, timeout, args.output_limit, sinks);
    let status = ran.status;
    // A final write of ours that failed: an error once the set is closed.
    let mut unwritten: Option<Error> = None;
    if args.json {
        unwritten = say("the result", &format!("{}\n", ran.json(&executor))).err();
    } else if !ran.reader_gone[1] {
        // One line per refused request, after the workload's own output; then the report.
        let mut text = String::new();
        for d in &ran.denials {
            text.push_str(&own_line(&format!("sandbox: network denied: {}: {}", d.target, d.reason)));
        }
        if args.report {
            let report = serde_json::json!({
                "level": executor.level().to_string(),
                "guarantees": executor.guarantees().names(),
                "guarantee_bits": executor.guarantee_bits(),
                "report": executor.report().entries,
            });
            text.push_str(&format!("{report}\n"));
        }
        if !text.is_empty() {
            unwritten = emit(std::io::stderr(), &text).map_err(|e| Error::io("writing stderr", e)).err();
        }
    }
    let reader_gone = ran.reader_gone.contains(&true);
    let error = ran.error;
    drop(executor);
    if let Err(e) = set.close() {
        // The workload's status stands (issue 12, class 8): a clean-up failure is reported
        // apart, and what is left is swept by a later run on this scratch root.
        tracing::warn!("clean-up: {e}");
        let _ = emit(
            std::io::stderr(),
            &own_line(&format!("sandbox: warning: clean-up failed (a later run sweeps it): {e}")),
        );
    }
    if let Some(e) = unwritten {
        if args.json {
            // Not a second try at the same stdout (`run` writes an error object otherwise).
            let _ = emit(std::io::stderr(), &own_line(&format!("sandbox: {e}")));
            return Ok(125);
        }
        return Err(e);
    }
    if let Some(e) = error {
        if !args.json {
            return Err(e);
        }
        return Ok(125);
    }
    Ok(match status {
        // Killed because our reader went away: the status of a producer in a shell pipeline
        // whose reader went away (SIGPIPE, 13). A tree that ended by itself first keeps its own.
        Some(ExitStatus::Signal(SIGKILL)) if reader_gone => 128 + SIGPIPE,
        Some(ExitStatus::Code(c)) => c & 0xff,
        Some(ExitStatus::Signal(s)) => 128 + s,
        None => 125,
    })
}

/// What one started process came to: its status (none when it could not be waited for), its
/// captured streams (stdout, stderr; empty where they passed through) and the error, if any.
struct Ran {
    status: Option<ExitStatus>,
    copies: Vec<Copy>,
    error: Option<Error>,
    denials: Vec<sandbox::NetworkDenial>,
    /// Whether our stdout, our stderr lost its reader (EPIPE) while the output was copied.
    reader_gone: [bool; 2],
}

/// SIGKILL and SIGPIPE (the same numbers on Linux and macOS).
const SIGKILL: i32 = 9;
const SIGPIPE: i32 = 13;

impl Ran {
    /// The `--json` object of a run (CONTRACT.md §18), for `executor`'s level, guarantees and report.
    fn json(&self, executor: &sandbox::Executor) -> serde_json::Value {
        let text = |i: usize| {
            self.copies.get(i).map(|c| String::from_utf8_lossy(&c.captured).into_owned()).unwrap_or_default()
        };
        serde_json::json!({
            "exit_code": self.status.and_then(|s| s.code()),
            "signal": self.status.and_then(|s| s.signal()),
            "stdout": text(0),
            "stderr": text(1),
            "error": self.error.as_ref().map(|e| e.kind().as_str()),
            "message": self.error.as_ref().map(|e| e.to_string()),
            "level": executor.level().to_string(),
            "guarantees": executor.guarantees().names(),
            "guarantee_bits": executor.guarantee_bits(),
            "report": executor.report().entries,
            "denials": self.denials.iter().map(|d| serde_json::json!({
                "target": d.target, "reason": d.reason.as_str(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// Drives a started process to its end: stdin closed at once, stdout and stderr copied as they
/// arrive (to `sinks`, or captured where a sink is `None`) with at most `output_limit` bytes of
/// each passed on (the first byte beyond kills the tree), and the tree killed `timeout` after
/// the start.
fn drive(
    process: &Arc<Process>,
    timeout: Option<Duration>,
    output_limit: Option<u64>,
    sinks: [Option<Box<dyn Write + Send>>; 2],
) -> Ran {
    process.stdin().close();
    let deadline = timeout.map_or_else(Deadline::none, Deadline::after);
    let exceeded = Arc::new(AtomicBool::new(false));
    let streams: Vec<_> = [process.take_stdout(), process.take_stderr()]
        .into_iter()
        .zip(sinks)
        .filter_map(|(reader, sink)| {
            let reader = reader?;
            let (process, exceeded) = (Arc::clone(process), Arc::clone(&exceeded));
            Some(std::thread::spawn(move || pump(reader, sink, output_limit, &process, &exceeded)))
        })
        .collect();
    let mut error: Option<Error> = None;
    let result = match process.wait(&deadline) {
        Ok(r) => Some(r),
        Err(Error::DeadlineExceeded { .. }) => {
            let _ = process.signal(&Deadline::none(), Signal::Kill);
            error = Some(Error::DeadlineExceeded { partial: Vec::new() });
            process.wait(&Deadline::none()).ok()
        }
        Err(e) => {
            error = Some(e);
            None
        }
    };
    let mut copies: Vec<Copy> = streams.into_iter().filter_map(|t| t.join().ok()).collect();
    if error.is_none() && exceeded.load(Ordering::SeqCst) {
        error = Some(Error::OutputLimit { partial: Vec::new() });
    }
    let mut reader_gone = [false; 2];
    for (i, copy) in copies.iter_mut().enumerate() {
        match copy.failed.take() {
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => reader_gone[i] = true,
            Some(e) if error.is_none() => {
                let stream = if i == 0 { "stdout" } else { "stderr" };
                error = Some(Error::io(format!("writing the workload's {stream}"), e));
            }
            _ => {}
        }
    }
    let (status, denials) = result.map_or((None, Vec::new()), |r| (Some(r.status), r.denials));
    Ran { status, copies, error, denials, reader_gone }
}

/// Whether `dir` is on a tmpfs (RAM).
fn is_tmpfs(dir: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::statfs::statfs(dir).is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        false
    }
}

/// The default scratch root: `/dev/shm/sandbox-cli-<uid>` when `/dev/shm` is a tmpfs and
/// `TMPDIR` is not set, else `<tmp>/sandbox-cli-<uid>`, created owner-only, shared by this
/// user's runs. Each run's set directory inside is removed when the run ends, and one left by
/// a killed run is swept by the next (a per-run directory would be leaked by a killed run).
/// A scratch root the workload could write is refused by the library (issue 12, class 6), so
/// when the first lies inside an area the profile makes writable (a run from `/tmp` itself), the
/// next of `<tmp>`, `/var/tmp` and `/dev/shm` outside every such area is used instead; with none
/// (a workspace at `/`, host write allowed), `<tmp>` is kept and the library's error says why.
fn default_scratch(profile: &Profile) -> Result<PathBuf, Error> {
    let (uid, _) = ids();
    let tmp = sandbox::temp_base()?;
    let config = profile.config();
    let mut writable: Vec<&Path> = Vec::new();
    if config.workspace_write != sandbox::Access::Deny {
        writable.push(profile.workspace_root());
    }
    writable
        .extend(config.additional_roots.iter().filter(|r| r.write != sandbox::Access::Deny).map(|r| r.path.as_path()));
    let everything = config.host_write != sandbox::Access::Deny;
    // RAM first (issue 16): a run's set directory (its bundle, state, HOME and TMPDIR) lives
    // for one call, and on a disk filesystem creating its few dozen directories and files cost
    // about 6 ms of the call here (ext4's inode allocation). `TMPDIR`, when set, stays first.
    let ram = PathBuf::from("/dev/shm");
    let ram_first = std::env::var_os("TMPDIR").is_none_or(|t| t.is_empty()) && is_tmpfs(&ram);
    let mut bases = vec![tmp.clone(), PathBuf::from("/var/tmp"), ram.clone()];
    if ram_first {
        bases.insert(0, ram);
    }
    let candidates: Vec<PathBuf> = bases
        .into_iter()
        .filter_map(|b| std::fs::canonicalize(b).ok())
        .map(|b| b.join(format!("sandbox-cli-{uid}")))
        .collect();
    // The usable candidates in order; one that another user made first (squatted: not an
    // owner-only directory of ours) is passed over for the next, never used.
    let mut usable: Vec<PathBuf> =
        candidates.iter().filter(|c| !everything && !writable.iter().any(|w| c.starts_with(w))).cloned().collect();
    if usable.is_empty() {
        usable.push(tmp.join(format!("sandbox-cli-{uid}")));
    }
    let mut refused = Vec::new();
    for dir in usable {
        match own_private_dir(&dir, uid) {
            Ok(()) => return Ok(dir),
            Err(why) => refused.push(why),
        }
    }
    Err(Error::InvalidArgument { detail: format!("the default scratch root: {}; pass --scratch", refused.join("; ")) })
}

/// Makes `dir` (0700) or finds it, and checks that it is an owner-only directory of `uid`;
/// Err: why not.
fn own_private_dir(dir: &Path, uid: u32) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("creating {}: {e}", dir.display())),
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("inspecting {}: {e}", dir.display()))?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(format!(
                "{} is not an owner-only directory of this user (another user may have made it)",
                dir.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = uid;
    Ok(())
}

/// `--resolve NAME:ADDR` (ADDR an IPv4 or IPv6 address, brackets optional).
fn parse_resolve(text: &str) -> Result<(String, std::net::IpAddr), Error> {
    let bad = |why: &str| Err(Error::InvalidArgument { detail: format!("--resolve {text:?}: {why}") });
    let Some((name, address)) = text.split_once(':') else { return bad("expected NAME:ADDR") };
    let address = address.strip_prefix('[').and_then(|a| a.strip_suffix(']')).unwrap_or(address);
    let Ok(address) = address.parse::<std::net::IpAddr>() else { return bad("ADDR is not an IP address") };
    if address.to_canonical().is_unspecified() {
        return bad("ADDR is the unspecified address, which names no host");
    }
    match sandbox::Host::parse(name) {
        Ok(sandbox::Host::Name(n)) => Ok((n, address)),
        Ok(sandbox::Host::Ip(_)) => bad("NAME is an address, not a name"),
        Err(why) => bad(&format!("NAME: {why}")),
    }
}

/// [`load_profile`] with `--allow-target`s added: the default profile's network becomes gated;
/// a profile file's must be gated already (else an invalid argument naming `--allow-target`,
/// the input at fault: the file alone is a valid profile).
fn load_profile_with_targets(file: Option<&Path>, current: &Path, targets: &[String]) -> Result<Profile, Error> {
    if targets.is_empty() {
        return load_profile(file, current);
    }
    let mut config = profile_config(file, current)?;
    for t in targets {
        let target = sandbox::TargetPattern::parse(t).map_err(|e| match e {
            Error::InvalidArgument { detail } => Error::InvalidArgument { detail: format!("--allow-target: {detail}") },
            other => other,
        })?;
        config.network_targets.push(target);
    }
    if file.is_none() {
        config.network = sandbox::Access::Gated;
    } else if config.network != sandbox::Access::Gated {
        return Err(Error::InvalidArgument {
            detail: format!(
                "--allow-target: needs a profile whose network is \"gated\"; the --profile file's is {:?}",
                config.network.as_str()
            ),
        });
    }
    Profile::new(config)
}

/// The profile from `--profile`, or the CLI default for `current` (CONTRACT.md §18).
fn load_profile(file: Option<&Path>, current: &Path) -> Result<Profile, Error> {
    Profile::new(profile_config(file, current)?)
}

/// The configuration of `--profile`, or the CLI default's for `current`.
fn profile_config(file: Option<&Path>, current: &Path) -> Result<ProfileConfig, Error> {
    let config = match file {
        Some(path) => ProfileConfig::from_json(&read_profile(path)?)?,
        None => sandbox::proof::profile_config(current.to_path_buf()),
    };
    Ok(config)
}

/// The largest `--profile` file: far beyond any real profile (a few hundred bytes to a few
/// KiB), and small enough that `/dev/zero` or a runaway producer cannot exhaust memory.
const MAX_PROFILE: u64 = 1 << 20;

/// The text of the `--profile` file at `path`, read with the bound [`MAX_PROFILE`].
fn read_profile(path: &Path) -> Result<String, Error> {
    let bad = |why: String| Error::InvalidProfile { detail: format!("--profile {}: {why}", path.display()) };
    // Opened without waiting: a FIFO no one writes hung every verb (a black-box test, 5
    // December); it now reads as empty. Reads wait again afterwards, so that a pipe being
    // written (`--profile <(…)`) is read whole.
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(path)
            .map_err(|e| bad(e.to_string()))?
    };
    nix::fcntl::fcntl(
        std::os::fd::AsRawFd::as_raw_fd(&file),
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
    )
    .map_err(|e| bad(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_PROFILE + 1).read_to_end(&mut bytes).map_err(|e| bad(e.to_string()))?;
    if bytes.len() as u64 > MAX_PROFILE {
        return Err(bad(format!("larger than {MAX_PROFILE} bytes (1 MiB)")));
    }
    if bytes.is_empty() {
        return Err(bad(String::from("empty (an empty file, or a FIFO no one writes)")));
    }
    String::from_utf8(bytes).map_err(|_| bad(String::from("stream did not contain valid UTF-8")))
}

#[cfg(unix)]
fn ids() -> (u32, u32) {
    (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw())
}

#[cfg(not(unix))]
fn ids() -> (u32, u32) {
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::own_line;

    /// A name a workload chose can neither end our line nor reach the terminal as a control.
    #[test]
    fn own_lines_escape_control_characters() {
        let forged = "sandbox: warning: removing /h/x\u{1b}[2K\r\u{1b}]0;PWNED\u{7}\nsandbox: clean-up done";
        let line = own_line(forged);
        assert_eq!(line.matches('\n').count(), 1);
        assert!(line.ends_with("clean-up done\n"));
        assert!(!line.chars().any(|c| c.is_control() && c != '\n'), "{line:?}");
        assert!(line.contains("\\u{1b}[2K\\r"), "{line:?}");
        assert_eq!(own_line("sandbox: plain"), "sandbox: plain\n");
    }
}
