//! # sandbox-seatbelt — the macOS backend: the same bundle, compiled to SBPL
//!
//! [`compile_sbpl`] turns a compiled bundle (its mount plan, network mode and grant deltas)
//! into a Seatbelt profile: deny by default; the process and startup allowances macOS needs; read
//! and exec of the macOS runtime closure; each area as its bind says (`subpath` for trees,
//! `literal` for files), masks as denies after the enclosing allow, the scratch root denied
//! except the executor's HOME and TMPDIR; literal metadata reads on every ancestor of an allowed
//! path; both the `/private/…` and the public spelling of `/tmp`, `/var` and `/etc`; last, the
//! protected paths (issue 14, `protect`): denies of writing, creating, removing and renaming
//! them, after every allow that could widen them. Network is
//! denied unless the profile allows it; a broad grant opens outbound TCP to its port plus the
//! mDNSResponder socket. Every path is a quoted, escaped SBPL string; a path with a control
//! character is refused, so no path can inject SBPL.
//!
//! [`assess`] gives the guarantees macOS can really give, through the same report types:
//! never `resource-limits` or `address-network`; lifetime containment is best effort.
//!
//! **What was verified.** The SBPL output is golden-tested on Linux, and the launcher
//! (`launch`, macOS only) is type-checked with `cargo check --target aarch64-apple-darwin`.
//! **Nothing in this project has run on macOS**: no claim here comes from a macOS run.
//!
//! MSRV: 1.87 (edition 2024).

#![deny(unsafe_code)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod protect;

use sandbox_bundle::{Bundle, CompileReport, Error, Guarantees, Level, MountKind, Origin, Profile};

/// The name reported for this backend.
pub const BACKEND_NAME: &str = "seatbelt";

/// The launcher.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The macOS runtime closure: read and exec everywhere (CONTRACT.md §16).
pub const CLOSURE_TREES: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/libexec",
    "/usr/share",
    "/System",
    "/Library/Apple",
    "/private/var/db/dyld",
    "/Library/Developer/CommandLineTools",
    "/Applications/Xcode.app",
];

/// The closure's exact files (the same `/etc` files as on Linux, and the standard devices).
pub const CLOSURE_FILES: &[&str] = &[
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/services",
    "/etc/protocols",
    "/etc/localtime",
    "/etc/ssl/cert.pem",
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/dtracehelper",
];

/// What the SBPL needs beyond the bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeatbeltContext {
    /// The scratch root, denied except HOME and TMPDIR.
    pub scratch_root: PathBuf,
    /// The executor's isolated HOME, if any.
    pub home_dir: Option<PathBuf>,
    /// The executor's TMPDIR.
    pub temp_dir: PathBuf,
    /// The loopback port of a live egress proxy (none in v1).
    pub proxy_port: Option<u16>,
}

/// Quotes `path` as an SBPL string: `"` and `\` escaped; control characters refused.
pub fn quote(path: &Path) -> Result<String, Error> {
    let text = path
        .to_str()
        .ok_or_else(|| Error::InvalidArgument { detail: format!("path {} is not UTF-8", path.display()) })?;
    quote_str("path", text)
}

/// Quotes `text` as an SBPL string (a path, or a regex): `"` and `\` escaped; control
/// characters refused.
fn quote_str(what: &str, text: &str) -> Result<String, Error> {
    if text.chars().any(char::is_control) {
        return Err(Error::InvalidArgument {
            detail: format!("{what} {text:?} contains a control character, which seatbelt rules cannot express"),
        });
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Ok(out)
}

/// Both spellings of a path under `/tmp`, `/var` or `/etc` (symlinks into `/private`).
fn spellings(path: &Path) -> Vec<PathBuf> {
    let mut out = vec![path.to_path_buf()];
    for top in ["tmp", "var", "etc"] {
        let public = Path::new("/").join(top);
        let private = Path::new("/private").join(top);
        let join =
            |base: &Path, rest: &Path| if rest.as_os_str().is_empty() { base.to_path_buf() } else { base.join(rest) };
        if let Ok(rest) = path.strip_prefix(&public) {
            out.push(join(&private, rest));
        } else if let Ok(rest) = path.strip_prefix(&private) {
            out.push(join(&public, rest));
        }
    }
    out
}

fn filter(path: &Path, file: bool) -> Result<String, Error> {
    let q = quote(path)?;
    Ok(if file { format!("(literal {q})") } else { format!("(subpath {q})") })
}

/// Adds `(op (filter …) …)` for every spelling of `path`.
fn rule(out: &mut String, op: &str, path: &Path, file: bool) -> Result<(), Error> {
    let filters = spellings(path).iter().map(|p| filter(p, file)).collect::<Result<Vec<_>, _>>()?;
    let _ = writeln!(out, "({op} {})", filters.join(" "));
    Ok(())
}

/// Process information, sysctls and Mach services (issue 12, class 12): never wholesale. An
/// unfiltered `mach-lookup` reaches every launchd service of the user's session (LaunchServices
/// opens applications outside the sandbox, Apple Events drive them, the pasteboard leaks);
/// unfiltered `process-info*` and `sysctl-read` describe every process and the whole machine.
/// Each name below carries its reason. Written after OpenAI Codex's base policy (itself derived
/// from Chromium's), not copied: nothing of it has run on macOS here.
const PREAMBLE: &str = r#";; process information: only about processes of this sandbox (ps, pgrep and a runtime's own
;; task info), never about the user's other processes
(allow process-info* (target same-sandbox))
;; sysctls: a named list only
(allow sysctl-read
  ;; CPU count and topology: build tools and runtimes size their job pools (make -j, cargo,
  ;; the Go and Node runtimes, Python's os.cpu_count)
  (sysctl-name "hw.ncpu")
  (sysctl-name "hw.activecpu")
  (sysctl-name "hw.logicalcpu")
  (sysctl-name "hw.logicalcpu_max")
  (sysctl-name "hw.physicalcpu")
  (sysctl-name "hw.physicalcpu_max")
  (sysctl-name "hw.packages")
  (sysctl-name "hw.nperflevels")
  (sysctl-name-prefix "hw.perflevel")
  ;; CPU identity and features: compilers, JITs and math libraries choose code paths
  (sysctl-name "hw.machine")
  (sysctl-name "hw.model")
  (sysctl-name "hw.cputype")
  (sysctl-name "hw.cpufamily")
  (sysctl-name "hw.byteorder")
  (sysctl-name "hw.vectorunit")
  (sysctl-name "sysctl.proc_cputype")
  (sysctl-name "machdep.cpu.brand_string")
  (sysctl-name-prefix "hw.optional.arm.")
  (sysctl-name-prefix "hw.optional.armv8_")
  ;; page and cache sizes: allocators and JITs
  (sysctl-name "hw.pagesize")
  (sysctl-name "hw.pagesize_compat")
  (sysctl-name "hw.cacheconfig")
  (sysctl-name "hw.cachelinesize_compat")
  (sysctl-name "hw.l1dcachesize_compat")
  (sysctl-name "hw.l1icachesize_compat")
  (sysctl-name "hw.l2cachesize_compat")
  (sysctl-name "hw.l3cachesize_compat")
  ;; clock frequencies: timers and benchmarks
  (sysctl-name "hw.cpufrequency")
  (sysctl-name "hw.cpufrequency_compat")
  (sysctl-name "hw.busfrequency_compat")
  (sysctl-name "hw.tbfrequency_compat")
  ;; memory size: build tools and the JVM size their heaps and caches
  (sysctl-name "hw.memsize")
  ;; OS identity: uname, sw_vers, build scripts that branch on the OS version
  (sysctl-name "kern.ostype")
  (sysctl-name "kern.osrelease")
  (sysctl-name "kern.osversion")
  (sysctl-name "kern.osproductversion")
  (sysctl-name "kern.version")
  (sysctl-name "kern.hostname")
  ;; read by libSystem and the dynamic loader at startup
  (sysctl-name "kern.osvariant_status")
  (sysctl-name "kern.secure_kernel")
  (sysctl-name "kern.usrstack64")
  ;; process limits: xargs and make size command lines, shells report ulimits
  (sysctl-name "kern.argmax")
  (sysctl-name "kern.maxfilesperproc")
  (sysctl-name "kern.maxproc")
  ;; load average: uptime, make -l
  (sysctl-name "vm.loadavg"))
;; not listed on purpose: kern.proc.* (the process table: every process of the host, with its
;; command), net.* (routes and interfaces; added below only where network is allowed)
;; Mach services: named ones only
(allow mach-lookup
  ;; user and group lookups (getpwuid, getgrgid: id, whoami, git, ssh, Python's pwd)
  (global-name "com.apple.system.opendirectoryd.libinfo"))
;; not listed on purpose: LaunchServices (open -a starts applications outside the sandbox),
;; Apple Events, the pasteboard, the window server, keychain and power management
"#;

/// Mach services and sysctls a spawn with network needs (host network, or a broad grant).
const NETWORK_SERVICES: &str = r#"(allow mach-lookup
  ;; the resolver configuration getaddrinfo reads (DNS servers, search domains)
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  ;; proxy settings and reachability (curl, git and package managers honour system proxies)
  (global-name "com.apple.SystemConfiguration.configd")
  ;; TLS certificate validation through Security.framework (curl, git, Python and Node on macOS)
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SecurityServer")
  ;; certificate revocation checks during that validation
  (global-name "com.apple.ocspd"))
(allow sysctl-read
  ;; the routing table: source address selection and interface listing
  (sysctl-name-prefix "net.routetable."))
"#;

/// The SBPL profile for `bundle` (CONTRACT.md §16).
pub fn compile_sbpl(bundle: &Bundle, ctx: &SeatbeltContext) -> Result<String, Error> {
    let mut out = String::new();
    out.push_str("(version 1)\n(deny default)\n");
    out.push_str(";; process and startup allowances\n");
    out.push_str("(allow process-fork)\n(allow signal (target same-sandbox))\n");
    out.push_str(PREAMBLE);
    out.push_str("(allow file-read* (literal \"/\") (literal \"/private/var/select\"))\n");
    out.push_str("(allow file-ioctl (regex #\"^/dev/ttys[0-9]+$\"))\n");

    out.push_str(";; runtime closure\n");
    for tree in CLOSURE_TREES {
        rule(&mut out, "allow file-read* process-exec", Path::new(tree), false)?;
    }
    for file in CLOSURE_FILES {
        rule(&mut out, "allow file-read*", Path::new(file), true)?;
    }
    rule(&mut out, "allow file-write-data", Path::new("/dev/null"), true)?;

    let mut allowed: Vec<PathBuf> = Vec::new();
    let mut masks: Vec<PathBuf> = Vec::new();
    let mut denied_files: Vec<PathBuf> = Vec::new();
    let mut host: Option<bool> = None; // Some(writable) when host entries are bound
    let mut area_rules = String::new();
    let mut writable: Vec<PathBuf> = Vec::new(); // the trees the profile allows writing
    for m in &bundle.plan.mounts {
        match (m.origin, m.kind) {
            (Origin::HostEntry, MountKind::ReadWrite) => host = Some(true),
            (Origin::HostEntry, MountKind::ReadOnly) => host = Some(host.unwrap_or(false)),
            (Origin::Area | Origin::Executor, kind) => {
                let op = match kind {
                    MountKind::ReadOnly => "allow file-read* process-exec",
                    MountKind::ReadWrite | MountKind::Private => "allow file-read* file-write* process-exec",
                    MountKind::WriteOnly => "allow file-write*",
                    _ => continue,
                };
                rule(&mut area_rules, op, &m.destination, m.file)?;
                // Read-only inside something writable (a file root like `.env` in the workspace,
                // a read-only root under a writable one or under a writable host): an allow of
                // reads alone would leave the enclosing allow of writes in force (later rules
                // win per operation), so writes are denied here; deeper areas come later.
                if kind == MountKind::ReadOnly {
                    rule(&mut area_rules, "deny file-write*", &m.destination, m.file)?;
                }
                allowed.push(m.destination.clone());
                if !m.file && kind != MountKind::ReadOnly {
                    writable.push(m.destination.clone());
                }
            }
            (Origin::AreaMask | Origin::ScratchMask, MountKind::Mask) => masks.push(m.destination.clone()),
            // A file root whose read is denied, covered by a placeholder on Linux: denied here.
            (Origin::Protected, MountKind::ReadOnly) if m.source.as_ref() != Some(&m.destination) => {
                denied_files.push(m.destination.clone());
            }
            // Closure binds are replaced by the macOS closure; /proc, /dev and the private /tmp
            // have no Seatbelt counterpart (only TMPDIR is granted, §16).
            _ => {}
        }
    }
    if let Some(writable) = host {
        out.push_str(";; host entries\n");
        let op = if writable { "allow file-read* file-write* process-exec" } else { "allow file-read* process-exec" };
        let _ = writeln!(out, "({op} (subpath \"/\"))");
    }
    out.push_str(";; workspace, roots, grants, HOME and TMPDIR\n");
    out.push_str(&area_rules);
    // Masks (and the scratch root) deny after the enclosing allows; the executor's own
    // directories and nested areas are allowed again after them (later rules win).
    let scratch = ctx.scratch_root.clone();
    if !masks.contains(&scratch) {
        masks.push(scratch);
    }
    out.push_str(";; masks\n");
    for mask in &masks {
        rule(&mut out, "deny file-read* file-write* process-exec", mask, false)?;
    }
    let nested: Vec<&PathBuf> = allowed.iter().filter(|a| masks.iter().any(|m| a.starts_with(m) && *a != m)).collect();
    if !nested.is_empty() {
        out.push_str(";; allowed again inside a mask\n");
        for m in &bundle.plan.mounts {
            if nested.contains(&&m.destination) {
                let op = match m.kind {
                    MountKind::ReadOnly => "allow file-read* process-exec",
                    MountKind::WriteOnly => "allow file-write*",
                    _ => "allow file-read* file-write* process-exec",
                };
                rule(&mut out, op, &m.destination, m.file)?;
            }
        }
    }
    out.push_str(";; ancestors of allowed paths: metadata only\n");
    let mut ancestors: Vec<PathBuf> = Vec::new();
    for a in &allowed {
        let mut p = a.clone();
        while p.pop() && p != Path::new("/") {
            if !ancestors.contains(&p) {
                ancestors.push(p.clone());
            }
        }
    }
    ancestors.sort();
    for a in &ancestors {
        rule(&mut out, "allow file-read-metadata", a, true)?;
    }

    out.push_str(";; network\n");
    if bundle.host_network && !bundle.broad_network {
        out.push_str("(allow network*)\n");
        out.push_str(NETWORK_SERVICES);
    } else if bundle.broad_network {
        out.push_str(NETWORK_SERVICES);
        // The granted port (Landlock's list adds 53 for DNS over TCP; macOS resolves through
        // mDNSResponder instead).
        if let Some(port) = bundle.landlock.tcp_connect.first() {
            let _ = writeln!(out, "(allow network-outbound (remote tcp \"*:{port}\"))");
        }
        out.push_str("(allow network-outbound (literal \"/private/var/run/mDNSResponder\"))\n");
    } else if let Some(port) = ctx.proxy_port {
        let _ = writeln!(out, "(allow network-outbound (remote tcp \"localhost:{port}\"))");
    }
    out.push_str(";; the per-user developer-tools cache (xcrun)\n");
    out.push_str("(allow file-read* file-write* (regex #\"^/private/var/folders/[^/]+/[^/]+/C/com\\.apple\\.DeveloperTools/\"))\n");
    // Protected paths last: denies after every allow that could widen them.
    if host == Some(true) {
        writable.push(PathBuf::from("/"));
    }
    if !denied_files.is_empty() {
        out.push_str(";; file roots whose read is denied\n");
        for f in &denied_files {
            rule(&mut out, "deny file-read* file-write* process-exec", f, true)?;
        }
    }
    protect::rules(&mut out, &bundle.protection, &writable)?;
    Ok(out)
}

/// The level, guarantees and report a Seatbelt executor gets for `profile` (CONTRACT.md §16),
/// from the one report builder ([`sandbox_bundle::assess`]).
pub fn assess(
    profile: &Profile,
    bundle: &Bundle,
    env_detail: String,
    proxy: bool,
) -> (Level, Guarantees, CompileReport) {
    sandbox_bundle::assess(&sandbox_bundle::Facts {
        profile,
        policy: &bundle.policy_entries,
        env_scrub: env_detail,
        confinement: sandbox_bundle::Confinement::Seatbelt { proxy },
    })
}

/// The argv that runs `argv` under `profile_text`.
pub fn command_line(profile_text: &str, argv: &[String]) -> Vec<String> {
    let mut out = vec![SANDBOX_EXEC.to_owned(), String::from("-p"), profile_text.to_owned(), String::from("--")];
    out.extend(argv.iter().cloned());
    out
}

/// Checks that `sandbox-exec` runs a trivial profile (the Seatbelt probe; macOS only).
#[cfg(target_os = "macos")]
pub fn probe() -> Result<(), Error> {
    let status = std::process::Command::new(SANDBOX_EXEC)
        .args(["-p", "(version 1)(allow default)", "/usr/bin/true"])
        .status()
        .map_err(|e| Error::SandboxUnavailable { detail: format!("{SANDBOX_EXEC}: {e}") })?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::SandboxUnavailable { detail: format!("{SANDBOX_EXEC} failed a trivial profile: {status}") })
    }
}

/// Without macOS there is no Seatbelt: a sandboxed profile fails closed.
#[cfg(not(target_os = "macos"))]
pub fn probe() -> Result<(), Error> {
    Err(Error::SandboxUnavailable { detail: String::from("seatbelt exists only on macos") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_quotes_and_backslashes_and_refuses_control_characters() {
        assert_eq!(quote(Path::new("/a b")).ok().as_deref(), Some("\"/a b\""));
        assert_eq!(quote(Path::new("/a\"b")).ok().as_deref(), Some("\"/a\\\"b\""));
        assert_eq!(quote(Path::new("/a\\b")).ok().as_deref(), Some("\"/a\\\\b\""));
        assert_eq!(quote(Path::new("/a)(b")).ok().as_deref(), Some("\"/a)(b\""));
        for bad in ["/a\nb", "/a\rb", "/a\tb", "/a\u{0}b", "/a\u{7f}b"] {
            assert!(quote(Path::new(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn both_spellings() {
        assert_eq!(spellings(Path::new("/tmp/x")), vec![PathBuf::from("/tmp/x"), PathBuf::from("/private/tmp/x")]);
        assert_eq!(
            spellings(Path::new("/private/var/y")),
            vec![PathBuf::from("/private/var/y"), PathBuf::from("/var/y")]
        );
        assert_eq!(spellings(Path::new("/Users/me")), vec![PathBuf::from("/Users/me")]);
    }
}
