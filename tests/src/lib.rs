//! Shared helpers of the conformance suite: privileged-suite gating, a tiny test runner for
//! `harness = false` test binaries (they must call `sandbox::init()` first), and the in-sandbox
//! probe's verdicts.

use std::collections::BTreeMap;

/// The suite runs as an unprivileged user with a root-made delegated cgroup subtree
/// (`SANDBOX_TEST_ROOTLESS=1`, set by `scripts/rootless.sh`).
pub fn rootless_mode() -> bool {
    std::env::var_os("SANDBOX_TEST_ROOTLESS").is_some_and(|v| v == "1")
}

/// The suite runs as a user for whom root prepared nothing (`SANDBOX_TEST_ROOTLESS=1` without a
/// cgroup parent; `SANDBOX_ROOTLESS_PLAIN=1 scripts/rootless.sh`): runs are confined without
/// cgroup limits (issue 15).
pub fn plain_mode() -> bool {
    rootless_mode() && cgroup_parent().is_none()
}

/// Whether the runs of this suite get cgroup limits (`resource-limits` enforced).
pub fn limits_expected() -> bool {
    !plain_mode()
}

/// In the plain mode, a test of a cgroup feature (CPU weight and bound, the sweep of a leftover
/// cgroup) has nothing to check: it says so loudly and returns true (the caller returns). What
/// such a run does claim, and bound, is checked by `linux_conformance`'s limits and fork-bomb
/// tests in the same mode.
pub fn needs_a_cgroup(what: &str) -> bool {
    if plain_mode() {
        println!("!!!! not applicable in the plain mode (no cgroup, resource-limits unenforced): {what} !!!!");
        return true;
    }
    false
}

/// The cgroup parent the tests pass to every set (`SANDBOX_TEST_CGROUP_PARENT`), if any.
pub fn cgroup_parent() -> Option<String> {
    std::env::var("SANDBOX_TEST_CGROUP_PARENT").ok().filter(|p| !p.is_empty())
}

/// The options every test set uses: `o`, plus the cgroup parent of the rootless mode.
pub fn test_options(o: sandbox::ExecutorSetOptions) -> sandbox::ExecutorSetOptions {
    match cgroup_parent() {
        Some(p) => o.cgroup_parent(p),
        None => o,
    }
}

/// The in-sandbox probe binary: `SANDBOX_PROBE_BIN`, else `built` (the test's
/// `CARGO_BIN_EXE_sandbox-probe`).
pub fn probe_bin(built: &str) -> std::path::PathBuf {
    std::env::var_os("SANDBOX_PROBE_BIN").map_or_else(|| std::path::PathBuf::from(built), std::path::PathBuf::from)
}

/// Whether the privileged suite can run here (root, or the rootless mode). Otherwise it prints
/// a loud SKIPPED line and returns false, unless `SANDBOX_REQUIRE_PRIVILEGED=1`, in which case
/// it panics.
pub fn privileged(what: &str) -> bool {
    if rootless_mode() {
        println!("running {what} rootless (cgroup parent {:?})", cgroup_parent());
        return true;
    }
    let required = std::env::var_os("SANDBOX_REQUIRE_PRIVILEGED").is_some_and(|v| v == "1");
    #[cfg(unix)]
    let is_root = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(u32::MAX) == 0
    };
    #[cfg(not(unix))]
    let is_root = false;
    if is_root {
        return true;
    }
    assert!(!required, "privileged suite {what} required (SANDBOX_REQUIRE_PRIVILEGED=1) but not running as root");
    eprintln!("!!!!!!!! SKIPPED privileged test {what} (not root); run scripts/test.sh as root !!!!!!!!");
    false
}

/// Runs named test functions in order (in this single thread), catching panics, and prints
/// one `test NAME ... ok|FAILED` line each and a closing `N passed, M failed` line. Returns the
/// process exit code.
pub fn run_tests(tests: &[(&str, fn())]) -> std::process::ExitCode {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let (mut passed, mut failed) = (0, 0);
    for (name, f) in tests {
        if !filter.is_empty() && !filter.iter().any(|x| name.contains(x.as_str())) {
            continue;
        }
        let start = std::time::Instant::now();
        match std::panic::catch_unwind(f) {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok ({} ms)", start.elapsed().as_millis());
            }
            Err(_) => {
                failed += 1;
                println!("test {name} ... FAILED");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
}

/// One verdict of the in-sandbox probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The operation succeeded.
    pub ok: bool,
    /// The errno when it failed.
    pub errno: Option<i32>,
    /// Details (content read, entries, …).
    pub detail: String,
}

/// Parses the probe's output: one JSON object per line, keyed by `check=arg`.
pub fn verdicts(output: &[u8]) -> BTreeMap<String, Verdict> {
    String::from_utf8_lossy(output)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            let check = v.get("check")?.as_str()?;
            let arg = v.get("arg")?.as_str()?;
            let key = if arg.is_empty() { check.to_owned() } else { format!("{check}={arg}") };
            Some((
                key,
                Verdict {
                    ok: v.get("ok")?.as_bool()?,
                    errno: v.get("errno").and_then(serde_json::Value::as_i64).and_then(|e| i32::try_from(e).ok()),
                    detail: v.get("detail").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned(),
                },
            ))
        })
        .collect()
}

/// A fresh test area under `/var/tmp` (the workload's `/tmp` is private, so the host's must not
/// hold the workspace): `root`, its `ws` (the workspace) and `scratch` (the scratch root), both
/// created empty. Removed on drop.
#[derive(Debug)]
pub struct TestDirs {
    _dir: tempfile::TempDir,
    /// The canonical root of the area.
    pub root: std::path::PathBuf,
    /// `root/ws`.
    pub ws: std::path::PathBuf,
    /// `root/scratch`.
    pub scratch: std::path::PathBuf,
}

impl TestDirs {
    /// Creates the area; panics (a test set-up failure) when `/var/tmp` is unusable.
    #[allow(clippy::panic)]
    pub fn new(prefix: &str) -> TestDirs {
        let made = tempfile::Builder::new().prefix(prefix).tempdir_in("/var/tmp").and_then(|dir| {
            let root = std::fs::canonicalize(dir.path())?;
            let (ws, scratch) = (root.join("ws"), root.join("scratch"));
            std::fs::create_dir(&ws)?;
            std::fs::create_dir(&scratch)?;
            Ok(TestDirs { _dir: dir, root, ws, scratch })
        });
        made.unwrap_or_else(|e| panic!("test area under /var/tmp: {e}"))
    }

    /// [`allow_config`] over this area's workspace.
    pub fn allow_config(&self) -> sandbox::ProfileConfig {
        allow_config(&self.ws)
    }

    /// The options of a test set over this area's scratch root (see [`test_options`]).
    pub fn set_options(&self, max_executors: usize) -> sandbox::ExecutorSetOptions {
        test_options(sandbox::ExecutorSetOptions::new(&self.scratch).max_executors(max_executors))
    }
}

/// The suites' usual profile over the workspace `ws`: the workspace readable and writable, the
/// host readable, commands allowed, everything else the contract's default.
pub fn allow_config(ws: &std::path::Path) -> sandbox::ProfileConfig {
    sandbox::ProfileConfig {
        workspace_root: ws.to_path_buf(),
        workspace_read: sandbox::Access::Allow,
        workspace_write: sandbox::Access::Allow,
        host_read: sandbox::Access::Allow,
        command: sandbox::Access::Allow,
        ..sandbox::ProfileConfig::default()
    }
}

/// Waits (up to 30 s) for `path` to exist: a marker a workload writes in its workspace when
/// it is ready for the host's next step. Whether it came.
pub fn wait_for_marker(path: &std::path::Path) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !path.exists() {
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    true
}

/// The deadline of one test step: 60 s.
pub fn deadline() -> sandbox::Deadline {
    sandbox::Deadline::after(std::time::Duration::from_secs(60))
}

/// `(ppid, comm)` of process `pid`, from `/proc/<pid>/stat`.
pub fn parent_and_name(pid: i32) -> Option<(i32, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let name = head.split_once('(')?.1.to_owned();
    let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
    Some((ppid, name))
}

/// The helper process (the zygote's worker, `sbx-worker`) of the run whose workload's command
/// line contains `needle`: the workload's nearest `sbx-worker` ancestor (the container's init
/// is the worker's child).
pub fn helper_of(needle: &str) -> Option<i32> {
    let workload = std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        String::from_utf8_lossy(&cmd).replace('\0', " ").contains(needle).then_some(pid)
    })?;
    let mut pid = workload;
    for _ in 0..8 {
        let (ppid, _) = parent_and_name(pid)?;
        if parent_and_name(ppid)?.1 == "sbx-worker" {
            return Some(ppid);
        }
        pid = ppid;
    }
    None
}

/// Every process on the host as `(pid, ppid, comm)`.
fn processes() -> Vec<(i32, i32, String)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let (ppid, name) = parent_and_name(pid)?;
            Some((pid, ppid, name))
        })
        .collect()
}

/// The helper processes of the embedding process `embedder`: its zygotes (its children named
/// `sbx-zygote`) and their workers (`sbx-worker`, one per spawn or warm container).
pub fn helpers_of(embedder: i32) -> (Vec<i32>, Vec<i32>) {
    let procs = processes();
    let zygotes: Vec<i32> = procs.iter().filter(|p| p.1 == embedder && p.2 == "sbx-zygote").map(|p| p.0).collect();
    let workers = procs.iter().filter(|p| p.2 == "sbx-worker" && zygotes.contains(&p.1)).map(|p| p.0).collect();
    (zygotes, workers)
}

/// Whether a warm container of this process's executor sets waits for a process: a helper
/// worker of this process whose child is a container init that has not started a workload.
pub fn warm_container_waiting() -> bool {
    let (_, workers) = helpers_of(i32::try_from(std::process::id()).unwrap_or(-1));
    let procs = processes();
    procs.iter().any(|(init, worker, name)| {
        name.starts_with("youki:[2:INIT]") && workers.contains(worker) && !procs.iter().any(|p| p.1 == *init)
    })
}

/// Waits (at most 10 s) until [`warm_container_waiting`]; false if it never does.
pub fn wait_for_warm_container() -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < end {
        if warm_container_waiting() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    false
}

/// Makes a self-signed certificate for `names` (DNS names; the first is the subject) in `dir`
/// with openssl, for the HTTPS origins of the egress tests and benchmark (issue 17): the paths
/// of the certificate and its key.
pub fn test_certificate(
    dir: &std::path::Path,
    names: &[&str],
) -> Result<(std::path::PathBuf, std::path::PathBuf), String> {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let subject = format!("/CN={}", names.first().copied().unwrap_or("localhost"));
    let alt: Vec<String> = names.iter().map(|n| format!("DNS:{n}")).collect();
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", &subject])
        .args(["-addext", &format!("subjectAltName={}", alt.join(","))])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("openssl: {e}"))?;
    if !made.success() {
        return Err(String::from("openssl could not make the test certificate"));
    }
    Ok((cert, key))
}

/// How the spawns made while a loop swapped or renamed paths ended (the swap tests of
/// `linux_protect` and `linux_roots`): each either ran, was refused before building
/// (`InvalidProfile`: the scan saw the change), was failed by the init's identity check after
/// mounting (a `Runtime` error naming `identities`), or was not built by the runtime (another
/// `Runtime` error). Any other error fails the test.
#[derive(Debug, Default)]
pub struct SwapTally {
    pub spawns: u32,
    pub ran: u32,
    pub refused: u32,
    pub caught_inside: u32,
    pub not_built: u32,
}

impl SwapTally {
    /// Counts one spawn's outcome and returns its output when it ran. The first of each kind of
    /// failure is printed under `label`; no error's detail may contain `secret`.
    #[allow(clippy::panic, reason = "a test helper: an unexpected error fails the test")]
    pub fn record(
        &mut self,
        label: &str,
        outcome: Result<(i32, String), sandbox::Error>,
        secret: &str,
    ) -> Option<String> {
        self.spawns += 1;
        let (count, kind, detail) = match outcome {
            Ok((_, out)) => {
                self.ran += 1;
                return Some(out);
            }
            Err(sandbox::Error::InvalidProfile { detail }) => (&mut self.refused, "refusal", detail),
            Err(sandbox::Error::Runtime { detail, .. }) if detail.contains("identities") => {
                (&mut self.caught_inside, "failure inside", detail)
            }
            Err(sandbox::Error::Runtime { detail, .. }) => (&mut self.not_built, "failure to build", detail),
            Err(e) => panic!("{label}: spawn {}: {e:?}", self.spawns),
        };
        assert!(!detail.contains(secret), "{label}: spawn {}'s error shows the secret: {detail}", self.spawns);
        if *count == 0 {
            println!("  {label}: first {kind}: {detail}");
        }
        *count += 1;
        None
    }

    /// The counts, for the test's output.
    pub fn summary(&self) -> String {
        format!(
            "{} spawns: {} ran, {} refused by the scan before building, {} failed by the init's check after \
             mounting, {} not built by the runtime",
            self.spawns, self.ran, self.refused, self.caught_inside, self.not_built
        )
    }

    /// At least one spawn was stopped by a check (the loop hit a spawn), and at least one ran
    /// (the positive control).
    pub fn assert_hit_and_ran(&self, label: &str) {
        assert!(self.refused + self.caught_inside > 0, "{label}: the swap never hit a spawn: {}", self.summary());
        assert!(self.ran > 0, "{label}: no spawn ran during the loop: {}", self.summary());
    }
}
