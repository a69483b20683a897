//! Grant requests and tokens against one Unconfined executor (direct backend, no helper, no
//! root) whose command is Gated. `issue_grant` takes an arbitrary request; `prepare_process`
//! (which checks and consumes grants but spawns nothing) takes arbitrary tokens mixed with
//! fresh, mutated and repeated ones. Only an unmodified token this executor issued for exactly
//! this spawn may open it, once.
#![no_main]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sandbox::{Deadline, Executor, ExecutorSet, ExecutorSetOptions, GrantRequest, ProcessOptions};
use sandbox_bundle::{Access, ErrorKind, Isolation, Profile, ProfileConfig};
use sandbox_fuzz::{assert_message, assert_named};

const TTL: Duration = Duration::from_secs(2);

fn executor() -> &'static Arc<Executor> {
    static SET: OnceLock<(ExecutorSet, Arc<Executor>)> = OnceLock::new();
    let (_, executor) = SET.get_or_init(|| {
        let base = std::env::temp_dir().join("sandbox-fuzz-grant");
        let (ws, scratch) = (base.join("ws"), base.join("scratch"));
        for d in [&ws, &scratch] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("fuzz setup: {}: {e}", d.display()));
        }
        let config = ProfileConfig {
            workspace_root: ws,
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            host_read: Access::Allow,
            host_write: Access::Allow,
            network: Access::Allow,
            command: Access::Gated,
            isolation: Isolation::Unconfined,
            ack_unconfined: true,
            ..ProfileConfig::default()
        };
        let setup = || -> Result<_, sandbox::Error> {
            let profile = Profile::new(config)?;
            let options = ExecutorSetOptions::new(scratch).max_executors(1).grant_ttl(TTL);
            let set = ExecutorSet::new(&Deadline::after(Duration::from_secs(30)), &profile, options)?;
            let executor = set.executor("fuzz")?;
            Ok((set, executor))
        };
        setup().unwrap_or_else(|e| panic!("fuzz setup: {e}"))
    });
    executor
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn deadline() -> Deadline {
    Deadline::after(Duration::from_secs(10))
}

#[derive(Arbitrary, Debug)]
enum Expiry {
    /// Milliseconds from now (the valid window is 1..=2000).
    FromNow(i16),
    Absolute(i64),
}

#[derive(Arbitrary, Debug)]
struct Request {
    execution_id: String,
    command: String,
    cwd: String,
    kind: String,
    scope: String,
    class: String,
    target: String,
    expiry: Expiry,
}

#[derive(Arbitrary, Debug)]
enum Token {
    /// Arbitrary text.
    Raw(String),
    /// A fresh token for the matching spawn.
    Fresh,
    /// A fresh token with one byte replaced.
    Mutated { at: usize, byte: u8 },
    /// The token issued for the arbitrary request, if any.
    Requested,
    /// Another token of this list again.
    Repeat(u8),
}

#[derive(Arbitrary, Debug)]
enum Spawn {
    /// `execution_id` "fuzz", command "true", cwd "/": what fresh tokens are bound to.
    Matching,
    Custom {
        execution_id: String,
        command: String,
        argv: Vec<String>,
        cwd: String,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    request: Request,
    tokens: Vec<Token>,
    spawn: Spawn,
}

/// Issues a token for the matching spawn.
fn fresh() -> String {
    let r = GrantRequest {
        execution_id: String::from("fuzz"),
        command: String::from("true"),
        cwd: PathBuf::from("/"),
        kind: String::from("command.execute"),
        scope: String::new(),
        class: String::from("command.start.v1"),
        target: String::from("true"),
        expiry_unix_ms: now_ms() + 1000,
    };
    executor().issue_grant(&deadline(), &r).unwrap_or_else(|e| panic!("issuing a valid grant failed: {e}"))
}

fuzz_target!(|input: Input| {
    let executor = executor();
    let r = input.request;
    let request = GrantRequest {
        execution_id: r.execution_id,
        command: r.command,
        cwd: PathBuf::from(r.cwd),
        kind: r.kind,
        scope: r.scope,
        class: r.class,
        target: r.target,
        expiry_unix_ms: match r.expiry {
            Expiry::FromNow(ms) => now_ms() + i64::from(ms),
            Expiry::Absolute(ms) => ms,
        },
    };
    let requested = match executor.issue_grant(&deadline(), &request) {
        Ok(token) => {
            // Unconfined: only command.start.v1 can be issued (CONTRACT.md §17).
            assert_eq!(request.class, "command.start.v1", "{request:?}");
            assert!(token.starts_with("sbx1."), "{token}");
            Some(token)
        }
        Err(e) => {
            assert_message(&e.to_string());
            None
        }
    };

    // (text, issued by this executor and unmodified)
    let mut tokens: Vec<(String, bool)> = Vec::new();
    for t in input.tokens.into_iter().take(8) {
        let token = match t {
            Token::Raw(text) => (text, false),
            Token::Fresh => (fresh(), true),
            Token::Mutated { at, byte } => {
                let good = fresh();
                let mut bytes = good.clone().into_bytes();
                let at = at % bytes.len();
                bytes[at] = byte;
                match String::from_utf8(bytes) {
                    Ok(text) => {
                        let same = text == good;
                        (text, same)
                    }
                    Err(_) => continue,
                }
            }
            Token::Requested => match &requested {
                Some(t) => (t.clone(), true),
                None => continue,
            },
            Token::Repeat(i) if !tokens.is_empty() => tokens[usize::from(i) % tokens.len()].clone(),
            Token::Repeat(_) => continue,
        };
        tokens.push(token);
    }

    let options = match input.spawn {
        Spawn::Matching => ProcessOptions {
            cwd: PathBuf::from("/"),
            command: String::from("true"),
            execution_id: String::from("fuzz"),
            ..ProcessOptions::default()
        },
        Spawn::Custom { execution_id, command, argv, cwd } => ProcessOptions {
            cwd: PathBuf::from(cwd),
            command,
            argv: argv.into_iter().map(Into::into).collect(),
            execution_id,
            ..ProcessOptions::default()
        },
    };
    let options = ProcessOptions { grants: tokens.iter().map(|(t, _)| t.clone()).collect(), ..options };
    let again = options.clone();
    match executor.prepare_process(&deadline(), options) {
        Ok(prepared) => {
            // Nothing is spawned: `start` is never called.
            drop(prepared);
            // Verification fails on the first bad token: every one was issued and is unmodified.
            assert!(tokens.iter().all(|(_, issued)| *issued), "opened with a foreign token: {tokens:?}");
            let mut texts: Vec<&str> = tokens.iter().map(|(t, _)| t.as_str()).collect();
            texts.sort_unstable();
            let n = texts.len();
            texts.dedup();
            assert_eq!(texts.len(), n, "a repeated token opened a spawn");
            // Every token is now consumed: the same call again is a replay.
            match executor.prepare_process(&deadline(), again) {
                Ok(_) => panic!("consumed tokens opened a second spawn"),
                Err(e) => assert_named(&e, ErrorKind::GrantReplay),
            }
        }
        Err(e) => assert_message(&e.to_string()),
    }
});
