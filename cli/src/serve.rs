//! `sandbox serve` (issue 16): one long-lived process speaking JSON lines on stdin and stdout,
//! so that a harness in another language (Python, TypeScript) gets the library's warm path
//! instead of a cold `sandbox run` per tool call.
//!
//! One executor set for the process (the profile of `--profile`, or `run`'s default), one
//! executor per `executor` key. Each request line is a JSON object:
//!
//! - `{"id": any, "argv": [...]}` or `{"id": any, "command": "shell text"}`, with optional `cwd`
//!   (default: serve's working directory), `executor` (default `"default"`), `timeout` (seconds),
//!   `output_limit` (bytes per stream), `grants` (tokens), `execution_id` (default
//!   `"sandbox-serve"`). The answer is `sandbox run --json`'s object plus `id`.
//! - `{"id": any, "op": "grant", "class": ..., "target": ..., "kind": ..., "scope": ...,
//!   "command": ..., "cwd": ..., "execution_id": ..., "expiry_unix_ms": ...}` issues a grant on
//!   the executor (`Executor::issue_grant`); the answer is `{"id", "token", "error", "message"}`.
//!
//! Requests run concurrently (at most 64 in flight; reading waits beyond that) and are answered
//! as they finish, one line each. Each answer's first key is `id`, the request's id as received
//! (its JSON text, tokens unchanged, the whitespace between them dropped so that the answer is
//! one line), or `null` when there is none (or it is repeated, or cannot be decoded). A value
//! no JSON value can hold (a lone surrogate escape, a number beyond f64) is refused naming its
//! key. SIGINT, SIGTERM and SIGHUP end serve (and so its runs) even when inherited ignored. Every line gets one
//! answer: a bad line (blank, not JSON, a repeated key, an unknown key, a wrong type) is
//! answered with `error` and a `message` naming the key, in the grant shape when the line asks
//! for `"op": "grant"`. When stdin closes, the requests in flight get 5 seconds to finish, then the set is closed
//! (what still runs is killed and answered `executor_closed`) and serve exits 0; a pipe or
//! socket closed while 64 are in flight is seen at once, and the requests read after it that
//! never started are answered `executor_set_closed`. A `timeout` of 0, like an `output_limit`
//! of 0, spawns nothing and keeps no executor. When the parent
//! dies, serve exits at once and its helpers kill every run (they watch the embedder).

use std::ffi::OsString;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sandbox::{Deadline, Error, ExecutorSet, ExecutorSetOptions, GrantRequest, ProcessOptions};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{current_dir, default_scratch, drive, error_json, load_profile_with_targets, parse_resolve, resolve};

/// Requests running at once; reading waits beyond it.
const MAX_IN_FLIGHT: usize = 64;
/// The longest request line; a longer one is answered with an error and skipped, so that a
/// runaway writer cannot grow serve's memory without bound.
const MAX_LINE: u64 = 16 << 20;
/// How long requests in flight may still run once stdin has closed.
const EOF_GRACE: Duration = Duration::from_secs(5);

#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// A JSON profile file (ProfileConfig keys); default as for `run`.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// The scratch root (default as for `run`).
    #[arg(long, value_name = "DIR")]
    scratch: Option<PathBuf>,
    /// The cgroup under which each spawn gets its own (default as for `run`).
    #[arg(long, value_name = "PATH")]
    cgroup_parent: Option<PathBuf>,
    /// The most executor keys (1-1024).
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = crate::Utf8(clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024)))]
    max_executors: usize,
    /// Pin NAME to ADDR for the egress proxy's resolver (repeatable; as for `run`).
    #[arg(long, value_name = "NAME:ADDR", value_parser = crate::text())]
    resolve: Vec<String>,
    /// Allow a network target through the egress proxy (repeatable; as for `run`).
    #[arg(long, value_name = "TARGET", value_parser = crate::text())]
    allow_target: Vec<String>,
    /// At most this many CPUs of CPU time for each run (0.01-1000; as for `run`).
    #[arg(long, value_name = "CPUS", value_parser = crate::Utf8(crate::parse_cpus), allow_negative_numbers = true)]
    cpus: Option<f64>,
    /// The CPU weight of each run (1-10000; a host process has 100; default 10; as for `run`).
    #[arg(long, value_name = "WEIGHT", value_parser = crate::Utf8(crate::cpu_weight_parser()), allow_negative_numbers = true)]
    cpu_weight: Option<u16>,
}

/// One parsed request.
enum Op {
    Run { executor: String, options: ProcessOptions, timeout: Option<Duration>, output_limit: Option<u64> },
    Grant { executor: String, request: GrantRequest },
}

const RUN_KEYS: &[&str] =
    &["id", "op", "argv", "command", "cwd", "executor", "timeout", "output_limit", "grants", "execution_id"];
const GRANT_KEYS: &[&str] =
    &["id", "op", "executor", "execution_id", "command", "cwd", "kind", "scope", "class", "target", "expiry_unix_ms"];

/// A request line's top-level keys in order, each with its value's text as received, and the
/// first repeated key, if any. A repeated key is refused, as in profiles (`ProfileConfig`'s
/// strict decoding): a gate or log reading the first of two `command`s would see another
/// request than the one that runs.
struct Fields {
    fields: Vec<(String, Box<RawValue>)>,
    repeated: Option<String>,
}

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
        d.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> serde::de::Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields: Vec<(String, Box<RawValue>)> = Vec::new();
        let mut repeated = None;
        while let Some(key) = map.next_key::<String>()? {
            let value: Box<RawValue> = map.next_value()?;
            if fields.iter().any(|(k, _)| *k == key) {
                repeated.get_or_insert(key);
            } else {
                fields.push((key, value));
            }
        }
        Ok(Fields { fields, repeated })
    }
}

/// One parsed line: the id to echo (its JSON text as received; `null` when there is none or it
/// is repeated), whether the line asks for a grant (its errors are answered in the grant's
/// shape), and the request or the message naming what is wrong.
struct Parsed {
    id: String,
    grant: bool,
    op: Result<Op, String>,
}

fn parse(line: &str, current: &Path) -> Parsed {
    let bad = |message: String| Parsed { id: String::from("null"), grant: false, op: Err(message) };
    if line.trim().is_empty() {
        return bad(String::from("request: a blank line (one JSON object per line)"));
    }
    let Fields { fields, repeated } = match serde_json::from_str::<Fields>(line) {
        Ok(f) => f,
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            return bad(String::from("request: not a JSON object"));
        }
        Err(e) => return bad(format!("request: not JSON: {e}")),
    };
    let raw = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.get());
    // Each value decoded; one the raw check accepts but a `Value` cannot hold (a lone surrogate
    // escape such as "\ud800", a number beyond f64 such as 1e400) is refused naming its key.
    // Before, it became null: a `command` with "\ud800" next to an `argv` ran the argv, a cwd
    // with one ran in serve's directory, `"timeout": 1e400` ran without a timeout.
    let mut map = Map::new();
    let mut undecodable: Option<String> = None;
    for (key, value) in &fields {
        match serde_json::from_str::<Value>(value.get()) {
            Ok(v) => {
                map.insert(key.clone(), v);
            }
            Err(e) if undecodable.is_none() => undecodable = Some(format!("request: {key}: {e}")),
            Err(_) => {}
        }
    }
    let id_ok = undecodable.is_none() || map.contains_key("id");
    let id = match (raw("id"), repeated.as_deref()) {
        (Some(id), r) if r != Some("id") && id_ok => compact(id),
        _ => String::from("null"),
    };
    let grant = repeated.as_deref() != Some("op") && raw("op").is_some_and(|op| op.trim() == r#""grant""#);
    if let Some(key) = repeated {
        return Parsed { id, grant, op: Err(format!("request: {key}: duplicate key")) };
    }
    if let Some(message) = undecodable {
        return Parsed { id, grant, op: Err(message) };
    }
    Parsed { id, grant, op: parse_map(&map, current) }
}

/// A JSON text without the whitespace between its tokens (spaces, tabs, CR and LF outside
/// strings; inside a string they cannot appear raw): the id is echoed with its tokens exactly
/// as received (numbers are not re-encoded) but on one line, so that a reader splitting on CR
/// (Python's universal newlines, Node's readline) sees one answer per line.
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\r' | '\n') {
            out.push(c);
        }
    }
    out
}

fn parse_map(map: &Map<String, Value>, current: &Path) -> Result<Op, String> {
    let text = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("request: {key}: expected a string, got {other}")),
        }
    };
    let op = text("op")?.unwrap_or_else(|| String::from("run"));
    let known = match op.as_str() {
        "run" => RUN_KEYS,
        "grant" => GRANT_KEYS,
        other => return Err(format!("request: op: {other:?} is not \"run\" or \"grant\"")),
    };
    if let Some(k) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("request: unknown key {k:?} for op {op:?} (known keys: {})", known.join(", ")));
    }
    let executor = text("executor")?.unwrap_or_else(|| String::from("default"));
    // An empty `cwd` names no directory (`run --cwd ''` is refused too); it ran in serve's own
    // directory before (a black-box test, 5 December).
    let cwd = match text("cwd")? {
        Some(c) if c.is_empty() => {
            return Err(String::from("request: cwd: empty (leave the key out for serve's directory)"));
        }
        c => c.map_or_else(|| current.to_path_buf(), |c| resolve(current, Some(PathBuf::from(c)))),
    };
    let execution_id = text("execution_id")?.unwrap_or_else(|| String::from("sandbox-serve"));
    let command = text("command")?;
    if op == "grant" {
        let required = |key: &str| text(key)?.ok_or_else(|| format!("request: {key}: required for op \"grant\""));
        let expiry_unix_ms = match map.get("expiry_unix_ms") {
            None | Some(Value::Null) => {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                i64::try_from(now.as_millis()).unwrap_or(i64::MAX).saturating_add(300_000)
            }
            Some(v) => v.as_i64().ok_or_else(|| format!("request: expiry_unix_ms: {v} is not an integer"))?,
        };
        return Ok(Op::Grant {
            executor,
            request: GrantRequest {
                execution_id,
                command: command.unwrap_or_default(),
                cwd,
                kind: required("kind")?,
                scope: text("scope")?.unwrap_or_default(),
                class: required("class")?,
                target: required("target")?,
                expiry_unix_ms,
            },
        });
    }
    let argv: Vec<OsString> = match map.get("argv") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|v| v.as_str().map(OsString::from))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| String::from("request: argv: every item must be a string"))?,
        Some(other) => return Err(format!("request: argv: expected a non-empty array of strings, got {other}")),
    };
    let command = match (command, argv.is_empty()) {
        (Some(_), false) => return Err(String::from("request: argv and command: give one, not both")),
        (None, true) => return Err(String::from("request: argv or command: one is required")),
        (c, _) => c.unwrap_or_default(),
    };
    let timeout = match map.get("timeout") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64().and_then(crate::timeout_seconds) {
            Some(d) => Some(d),
            None => {
                let max = crate::MAX_TIMEOUT_SECS;
                return Err(format!("request: timeout: {v} is not a number of seconds from 0 to {max}"));
            }
        },
    };
    let output_limit = match map.get("output_limit") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| format!("request: output_limit: {v} is not a number of bytes"))?),
    };
    let grants = match map.get("grants") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| String::from("request: grants: every item must be a token string"))?,
        Some(other) => return Err(format!("request: grants: expected an array of token strings, got {other}")),
    };
    Ok(Op::Run {
        executor,
        options: ProcessOptions { cwd, command, argv, execution_id, grants, tty: false },
        timeout,
        output_limit,
    })
}

/// An answer's keys after `id`, in order.
type Answer = Vec<(String, Value)>;

/// A run's answer: `sandbox run --json`'s object, its keys in that object's order.
fn run_answer(value: Value) -> Answer {
    match value {
        Value::Object(m) => m.into_iter().filter(|(k, _)| k != "id").collect(),
        other => vec![(String::from("value"), other)],
    }
}

/// A grant's answer: `token`, `error`, `message`.
fn grant_answer(issued: Result<String, &Error>) -> Answer {
    let (token, error, message) = match issued {
        Ok(token) => (Value::from(token), Value::Null, Value::Null),
        Err(e) => (Value::Null, Value::from(e.kind().as_str()), Value::from(e.to_string())),
    };
    vec![(String::from("token"), token), (String::from("error"), error), (String::from("message"), message)]
}

/// Answers one request (on its own thread).
fn answer(set: &ExecutorSet, op: Op) -> Answer {
    let setup = Deadline::after(Duration::from_secs(60));
    match op {
        Op::Grant { executor, request } => {
            let issued = set.executor(&executor).and_then(|e| e.issue_grant(&setup, &request));
            match issued {
                Ok(token) => grant_answer(Ok(token)),
                Err(e) => {
                    // An executor this refused grant made, for nothing: let go, as a refused
                    // run's is (red team AX, 6 December: every refused grant request on a new
                    // key kept a place under `--max-executors` and its directories).
                    set.discard_unused(&executor);
                    grant_answer(Err(&e))
                }
            }
        }
        Op::Run { executor, options, timeout, output_limit } => {
            run_answer(answer_run(set, &setup, &executor, options, timeout, output_limit))
        }
    }
}

/// A run's `sandbox run --json` object.
fn answer_run(
    set: &ExecutorSet,
    setup: &Deadline,
    executor: &str,
    options: ProcessOptions,
    timeout: Option<Duration>,
    output_limit: Option<u64>,
) -> Value {
    // A bad cwd is refused before an executor exists for the request.
    if let Err(e) = crate::check_cwd("request: cwd", &options.cwd) {
        return error_json(&e);
    }
    let key = executor;
    let executor = match set.executor(key) {
        Ok(e) => e,
        Err(e) => return error_json(&e),
    };
    // A limit of 0 bytes: nothing is spawned, no grant consumed (CONTRACT.md §11, `OutputLimit`);
    // a timeout of 0 is a deadline already past: the same (red team AS, 5 December: the run was
    // ended before it began, but its executor kept its place and directories).
    let started = if output_limit == Some(0) {
        Err(Error::OutputLimit { partial: Vec::new() })
    } else if timeout == Some(Duration::ZERO) {
        Err(Error::DeadlineExceeded { partial: Vec::new() })
    } else {
        executor.prepare_process(setup, options).and_then(|p| p.start(setup))
    };
    match started {
        Ok(process) => drive(&Arc::new(process), timeout, output_limit, [None, None]).json(&executor),
        Err(e) => {
            let mut value = error_json(&e);
            value["level"] = Value::from(executor.level().to_string());
            value["guarantees"] = serde_json::json!(executor.guarantees().names());
            value["guarantee_bits"] = Value::from(executor.guarantee_bits());
            value["report"] = serde_json::json!(executor.report().entries);
            // An executor this request made, for nothing: let go (its directories, its place).
            drop(executor);
            set.discard_unused(key);
            value
        }
    }
}

/// One answer line: `{"id": <id as received, compacted>, <answer's keys in order>}`.
///
/// Written in place (no copy of each value's text first): a captured stream of N bytes is up to
/// 6N bytes here (a control byte is `\u00XX`), so the answer of a run with `output_limit` N is
/// at most about 12N bytes plus the report.
fn answer_line(id: &str, answer: Answer) -> String {
    use std::fmt::Write as _;
    let mut line = format!("{{\"id\":{id}");
    for (key, value) in answer {
        let _ = write!(line, ",{}:{value}", Value::String(key));
    }
    line.push('}');
    // JSON lets these stand raw in a string, but Python's `str.splitlines()` and JavaScript
    // before ES2019 break lines at them: a harness reading serve's answers that way got six
    // pieces of two answers (red team AS, 5 December). Escaped, they can only be in strings.
    if line.contains(['\u{2028}', '\u{2029}', '\u{85}']) {
        line = line.replace('\u{2028}', "\\u2028").replace('\u{2029}', "\\u2029").replace('\u{85}', "\\u0085");
    }
    line
}

/// Writes one answer line (the id first, as received).
fn send(out: &Mutex<std::io::Stdout>, id: &str, answer: Answer) {
    let line = answer_line(id, answer);
    let mut out = out.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        // Answers are serve's only output: when they cannot be written (the harness is gone,
        // or a full disk) nothing more can be answered. Ended as on the parent's death: the
        // helpers see serve gone and kill every run.
        let _ = crate::emit(std::io::stderr(), &format!("sandbox: serve: writing an answer: {e}; exiting\n"));
        #[expect(clippy::exit, reason = "no answer can reach the harness any more")]
        std::process::exit(125);
    }
}

/// Whether every writer of serve's input has closed it (a pipe's or socket's hang-up; a file
/// never hangs up, and its end is read in turn). What is still buffered can be read.
#[cfg(unix)]
fn input_hung_up() -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|_| {
        fds[0].revents().is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL))
    })
}

#[cfg(not(unix))]
fn input_hung_up() -> bool {
    false
}

/// Exits at once when the parent goes (reparented): the helpers see the embedder gone and kill
/// every run, and a later run on the scratch root sweeps the set's directory.
#[cfg(unix)]
fn watch_parent() {
    let parent = nix::unistd::getppid();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(100));
            if nix::unistd::getppid() != parent {
                tracing::warn!("serve: the parent is gone; exiting");
                #[expect(clippy::exit, reason = "nothing of serve may outlive its parent")]
                std::process::exit(125);
            }
        }
    });
}

#[cfg(not(unix))]
fn watch_parent() {}

/// SIGINT, SIGTERM and SIGHUP end serve at once, whatever the parent left them as: their
/// default action (the process ends; its helpers see the embedder gone and kill every run, as
/// on the parent's death), unblocked. Before, a serve started with SIGINT and SIGHUP ignored (a
/// script's background job, `nohup`) kept running, and its runs with it, after either; SIGTERM
/// ended everything.
#[cfg(unix)]
fn default_signals() {
    use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal as Sig, pthread_sigmask, signal};
    let mut set = SigSet::empty();
    for s in [Sig::SIGINT, Sig::SIGTERM, Sig::SIGHUP] {
        // SAFETY: SIG_DFL installs no handler code of ours.
        let _ = unsafe { signal(s, SigHandler::SigDfl) };
        set.add(s);
    }
    let _ = pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
}

#[cfg(not(unix))]
fn default_signals() {}

pub(crate) fn serve(args: ServeArgs) -> Result<i32, Error> {
    default_signals();
    watch_parent();
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let set = match open(&args) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            send(&out, "null", run_answer(error_json(&e)));
            return Ok(125);
        }
    };
    let current = current_dir()?;
    let in_flight = Arc::new((Mutex::new(0usize), Condvar::new()));
    // Set when serve's input closed while requests waited for a place ([`input_hung_up`]).
    let mut closing = false;
    let mut threads = Vec::new();
    let mut stdin = std::io::stdin().lock();
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        match (&mut stdin).take(MAX_LINE + 1).read_until(b'\n', &mut bytes) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if bytes.len() as u64 > MAX_LINE && bytes.last() != Some(&b'\n') {
            let detail = format!("request: longer than {MAX_LINE} bytes");
            send(&out, "null", run_answer(error_json(&Error::InvalidArgument { detail })));
            // The rest of the line goes unread into a small buffer, a piece at a time.
            loop {
                bytes.clear();
                match (&mut stdin).take(64 << 10).read_until(b'\n', &mut bytes) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if bytes.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
            continue;
        }
        // A line that is not UTF-8 is answered like any bad line; it does not end the session.
        let Ok(line) = std::str::from_utf8(&bytes) else {
            let e = Error::InvalidArgument { detail: String::from("request: not UTF-8") };
            send(&out, "null", run_answer(error_json(&e)));
            continue;
        };
        let Parsed { id, grant, op } = parse(line, &current);
        let op = match op {
            Ok(op) => op,
            Err(message) => {
                let e = Error::InvalidArgument { detail: message };
                send(&out, &id, if grant { grant_answer(Err(&e)) } else { run_answer(error_json(&e)) });
                continue;
            }
        };
        let refuse = |id: &str| {
            let e = Error::ExecutorSetClosed;
            send(&out, id, if grant { grant_answer(Err(&e)) } else { run_answer(error_json(&e)) });
        };
        if closing {
            refuse(&id);
            continue;
        }
        {
            let (count, cv) = &*in_flight;
            let mut n = count.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Waiting for a place, serve still sees its input close: a harness that closed
            // it with more than 64 requests in flight had them run to their end, not for the
            // 5 s grace (red team AS, 5 December). What it sent that has not started is
            // answered `executor_set_closed`, and the grace begins.
            while *n >= MAX_IN_FLIGHT && !closing {
                closing = input_hung_up();
                if !closing {
                    n = cv
                        .wait_timeout(n, Duration::from_millis(100))
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                }
            }
            if !closing {
                *n += 1;
            }
        }
        if closing {
            refuse(&id);
            continue;
        }
        let (set, out, in_flight) = (Arc::clone(&set), Arc::clone(&out), Arc::clone(&in_flight));
        threads.push(std::thread::spawn(move || {
            let value = answer(&set, op);
            send(&out, &id, value);
            let (count, cv) = &*in_flight;
            *count.lock().unwrap_or_else(std::sync::PoisonError::into_inner) -= 1;
            cv.notify_all();
        }));
        threads.retain(|t| !t.is_finished());
    }
    // stdin closed: a grace for what is in flight, then close (kills the rest).
    let end = Instant::now() + EOF_GRACE;
    {
        let (count, cv) = &*in_flight;
        let mut n = count.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while *n > 0 {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            n = cv.wait_timeout(n, left).unwrap_or_else(std::sync::PoisonError::into_inner).0;
        }
    }
    let closed = set.close();
    for t in threads {
        let _ = t.join();
    }
    closed.map(|()| 0)
}

fn open(args: &ServeArgs) -> Result<ExecutorSet, Error> {
    if !(1..=1024).contains(&args.max_executors) {
        return Err(Error::InvalidArgument {
            detail: format!("--max-executors: {} is outside 1-1024", args.max_executors),
        });
    }
    let cpu = crate::CpuFlags::check(args.cpus, args.cpu_weight)?;
    let pins = args.resolve.iter().map(|p| parse_resolve(p)).collect::<Result<Vec<_>, _>>()?;
    let current = current_dir()?;
    let profile = load_profile_with_targets(args.profile.as_deref(), &current, &args.allow_target)?;
    let scratch = match &args.scratch {
        Some(s) => resolve(&current, Some(s.clone())),
        None => default_scratch(&profile)?,
    };
    let mut options = cpu.apply(ExecutorSetOptions::new(&scratch).max_executors(args.max_executors));
    for (name, address) in pins {
        options = options.resolve(name, address);
    }
    if let Some(parent) = &args.cgroup_parent {
        options = options.cgroup_parent(parent);
    }
    ExecutorSet::new(&Deadline::after(Duration::from_secs(60)), &profile, options).map_err(crate::as_flags)
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    fn err(line: &str) -> String {
        match parse(line, Path::new("/w")).op {
            Err(m) => m,
            Ok(_) => String::from("parsed"),
        }
    }

    #[test]
    fn bad_requests_name_the_key() {
        assert!(err("nope").starts_with("request: not JSON"));
        assert_eq!(err("[1]"), "request: not a JSON object");
        assert!(err(r#"{"id":1,"argv":["true"],"frob":1}"#).contains("unknown key \"frob\""));
        assert!(err(r#"{"argv":[]}"#).starts_with("request: argv:"));
        assert!(err(r#"{"argv":["a",1]}"#).starts_with("request: argv:"));
        assert!(err(r#"{"argv":["a"],"command":"b"}"#).contains("not both"));
        assert!(err(r#"{"id":2}"#).contains("one is required"));
        assert!(err(r#"{"command":"x","timeout":-1}"#).starts_with("request: timeout:"));
        assert!(err(r#"{"command":"x","output_limit":"a"}"#).starts_with("request: output_limit:"));
        assert!(err(r#"{"command":"x","grants":[1]}"#).starts_with("request: grants:"));
        assert!(err(r#"{"command":"x","op":"frob"}"#).starts_with("request: op:"));
        assert!(err(r#"{"op":"grant","class":"c","target":"t"}"#).contains("kind: required"));
        assert!(err(r#"{"op":"grant","argv":["x"]}"#).contains("unknown key \"argv\""));
    }

    /// A value the raw check accepts but a JSON value cannot hold (a lone surrogate escape, a
    /// number beyond f64) is refused naming its key; before, it became null (red team F5).
    #[test]
    fn undecodable_values_are_refused_naming_the_key() {
        for (line, key) in [
            (r#"{"id":1,"command":"echo approved \ud800","argv":["sh","-c","echo other"]}"#, "command"),
            (r#"{"id":1,"argv":["pwd"],"cwd":"/nonexistent/\udc00"}"#, "cwd"),
            (r#"{"id":1,"argv":["true"],"timeout":1e400}"#, "timeout"),
            (r#"{"id":1,"argv":["true"],"output_limit":-1e400}"#, "output_limit"),
            (r#"{"id":1,"argv":["true","\udfff"]}"#, "argv"),
            (r#"{"id":1,"op":"grant","kind":"k","class":"c","target":"\ud800x"}"#, "target"),
        ] {
            let p = parse(line, Path::new("/w"));
            let message = p.op.err().unwrap_or_else(|| panic!("parsed: {line}"));
            assert!(message.starts_with(&format!("request: {key}: ")), "{line}: {message}");
            assert_eq!(p.id, "1", "{line}");
        }
        // An undecodable id is not echoed (null), and the request is refused naming it.
        let p = parse(r#"{"id":"\ud800","argv":["true"]}"#, Path::new("/w"));
        assert_eq!(p.id, "null");
        assert!(p.op.err().is_some_and(|m| m.starts_with("request: id: ")));
    }

    #[test]
    fn good_requests_parse_with_their_defaults() {
        let Parsed { id, grant, op } =
            parse(r#"{"id":{"n": 7},"argv":["/bin/echo","hi"],"cwd":"sub","timeout":1.5}"#, Path::new("/w"));
        assert_eq!((id.as_str(), grant), (r#"{"n":7}"#, false));
        match op {
            Ok(Op::Run { executor, options, timeout, output_limit }) => {
                assert_eq!(executor, "default");
                assert_eq!(options.cwd, PathBuf::from("/w/sub"));
                assert_eq!(options.argv, vec![OsString::from("/bin/echo"), OsString::from("hi")]);
                assert_eq!(options.execution_id, "sandbox-serve");
                assert_eq!((timeout, output_limit), (Some(Duration::from_millis(1500)), None));
            }
            _ => panic!("not a run"),
        }
        let Parsed { id, grant, op } = parse(
            r#"{"op":"grant","kind":"command.execute","class":"command.start.v1","target":"x"}"#,
            Path::new("/w"),
        );
        assert_eq!((id.as_str(), grant), ("null", true));
        assert!(matches!(op, Ok(Op::Grant { .. })));
    }

    /// Ids come back as their JSON text as received (no re-encoding of numbers), first in the
    /// answer; a repeated key is refused naming it (a repeated id is not echoed); a blank line
    /// is answered; a bad grant request is answered in the grant's shape.
    #[test]
    fn answers_escape_the_characters_other_line_readers_break_at() {
        let answer: Answer = vec![(String::from("stdout"), Value::from("a\u{2028}b\u{2029}c\u{85}d\n"))];
        let line = answer_line("\"x\u{2028}\"", answer);
        assert!(!line.contains(['\u{2028}', '\u{2029}', '\u{85}']), "{line}");
        assert_eq!(line.lines().count(), 1);
        let v: Value = serde_json::from_str(&line).expect("one JSON line");
        assert_eq!(v["stdout"], "a\u{2028}b\u{2029}c\u{85}d\n");
        assert_eq!(v["id"], "x\u{2028}");
    }

    #[test]
    fn ids_are_echoed_as_received_and_repeated_keys_refused() {
        for id in ["1e2", "-0", "123456789012345678901234567890", r#""a\u0041""#, r#"{"b":[1,2.50]}"#, "null"] {
            let p = parse(&format!(r#"{{"argv": ["x"], "id":  {id} }}"#), Path::new("/w"));
            assert_eq!(p.id, id);
            let line = answer_line(&p.id, grant_answer(Ok(String::from("t"))));
            assert_eq!(line, format!(r#"{{"id":{id},"token":"t","error":null,"message":null}}"#));
            assert!(serde_json::from_str::<Value>(&line).is_ok(), "{line}");
        }
        // Whitespace between the id's tokens is dropped (a raw CR would split the answer for
        // readers that end lines at CR); inside strings it is kept as received.
        let p = parse("{\"argv\":[\"x\"],\"id\":{\"tag\":\r\"a b\\r\\\"\" ,\n\t\"n\": [1 ,\r2.50]}}", Path::new("/w"));
        assert_eq!(p.id, r#"{"tag":"a b\r\"","n":[1,2.50]}"#);
        let p = parse(r#"{"id":1,"command":"echo first","command":"echo second"}"#, Path::new("/w"));
        assert_eq!((p.id.as_str(), p.op.err().as_deref()), ("1", Some("request: command: duplicate key")));
        let p = parse(r#"{"id":13,"argv":["x"],"id":14}"#, Path::new("/w"));
        assert_eq!((p.id.as_str(), p.op.err().as_deref()), ("null", Some("request: id: duplicate key")));
        for blank in ["", " \t ", "\r"] {
            assert!(err(blank).contains("blank line"), "{blank:?}");
        }
        let p = parse(r#"{"id":5,"op":"grant","class":"c","target":"t"}"#, Path::new("/w"));
        assert!(p.grant && p.op.is_err());
        let p = parse(r#"{"id":5,"op":"grant","op":"grant"}"#, Path::new("/w"));
        assert!(!p.grant && p.op.is_err());
        let e = Error::InvalidArgument { detail: String::from("x") };
        let line = answer_line("7", run_answer(error_json(&e)));
        assert!(line.starts_with(r#"{"id":7,"denials":[],"error":"invalid_argument","#), "{line}");
    }
}
