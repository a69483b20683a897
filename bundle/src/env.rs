//! The environment scrub (CONTRACT.md §10): an allowlist, then the forced variables.

use std::ffi::OsString;
use std::path::Path;

use crate::error::Error;

/// Names that always pass (besides `LC_*` and the caller's `pass_env`).
pub const PASSED: &[&str] = &["PATH", "HOME", "TERM", "LANG", "USER", "LOGNAME", "SHELL", "TZ"];

/// Names no option may pass or set: they belong to the proxy of §19.
const PROXY_NAMES: &[&str] = &["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"];

/// The caller's environment options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvOptions {
    /// Extra names to pass through.
    pub pass_env: Vec<String>,
    /// Values to set, last one wins.
    pub set_env: Vec<(String, OsString)>,
}

/// Checks a `pass_env`/`set_env` name; the error names the option.
pub fn check_name(option: &str, name: &str) -> Result<(), Error> {
    let bad = |why: &str| Err(Error::InvalidOptions { detail: format!("{option}: {name:?} {why}") });
    if name.is_empty() {
        return bad("is empty");
    }
    if name.contains('=') || name.contains('\0') {
        return bad("contains '=' or NUL");
    }
    if ["LD_", "DYLD_", "SANDBOX_"].iter().any(|p| name.starts_with(p)) {
        return bad("starts with a reserved prefix (LD_, DYLD_, SANDBOX_)");
    }
    if PROXY_NAMES.iter().any(|p| p.eq_ignore_ascii_case(name)) {
        return bad("is a proxy variable managed by sandbox");
    }
    Ok(())
}

impl EnvOptions {
    /// Checks every option (CONTRACT.md §10), failing with [`Error::InvalidOptions`].
    pub fn validate(&self) -> Result<(), Error> {
        for n in &self.pass_env {
            check_name("pass_env", n)?;
        }
        for (n, v) in &self.set_env {
            check_name("set_env", n)?;
            if matches!(n.as_str(), "HOME" | "TMPDIR" | "RES_OPTIONS") {
                return Err(Error::InvalidOptions { detail: format!("set_env: {n} is set by sandbox") });
            }
            if v.as_encoded_bytes().contains(&0) {
                return Err(Error::InvalidOptions { detail: format!("set_env: the value of {n} contains NUL") });
            }
        }
        Ok(())
    }
}

/// What the scrub adds beyond the options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScrubFlags {
    /// The spawn runs in a Linux container (adds `TAR_OPTIONS=--no-same-owner`).
    pub linux_container: bool,
}

/// The child environment from a snapshot of the caller's: only allowlisted names pass; then
/// `HOME`, `TMPDIR`, the `set_env` values and the flag variables replace an inherited value in
/// place or are appended. Variables that are not UTF-8 are dropped (OCI environments are text).
pub fn scrub(
    snapshot: &[(OsString, OsString)],
    options: &EnvOptions,
    home: &Path,
    tmpdir: &Path,
    flags: ScrubFlags,
) -> Vec<(String, String)> {
    let passes =
        |name: &str| PASSED.contains(&name) || name.starts_with("LC_") || options.pass_env.iter().any(|p| p == name);
    let mut env: Vec<(String, String)> = Vec::new();
    for (k, v) in snapshot {
        let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else {
            continue;
        };
        if passes(k) && !env.iter().any(|(e, _)| e == k) {
            env.push((k.to_owned(), v.to_owned()));
        }
    }
    let mut force = |k: &str, v: String| match env.iter_mut().find(|(e, _)| e == k) {
        Some(slot) => slot.1 = v,
        None => env.push((k.to_owned(), v)),
    };
    force("HOME", home.to_string_lossy().into_owned());
    force("TMPDIR", tmpdir.to_string_lossy().into_owned());
    for (k, v) in &options.set_env {
        if let Some(v) = v.to_str() {
            force(k, v.to_owned());
        }
    }
    if flags.linux_container && !options.set_env.iter().any(|(k, _)| k == "TAR_OPTIONS") {
        force("TAR_OPTIONS", String::from("--no-same-owner"));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(k: &str, v: &str) -> (OsString, OsString) {
        (k.into(), v.into())
    }

    #[test]
    fn secrets_are_dropped_and_allowlist_passes() {
        let snap = vec![
            os("PATH", "/usr/bin"),
            os("AWS_SECRET_ACCESS_KEY", "x"),
            os("GITHUB_TOKEN", "y"),
            os("SSH_AUTH_SOCK", "/s"),
            os("LD_PRELOAD", "/evil.so"),
            os("LC_ALL", "C"),
            os("HOME", "/root"),
            os("KEEP", "1"),
        ];
        let opts = EnvOptions { pass_env: vec!["KEEP".into()], set_env: vec![("A".into(), "b".into())] };
        let env = scrub(&snap, &opts, Path::new("/h"), Path::new("/t"), ScrubFlags { linux_container: true });
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["PATH", "LC_ALL", "HOME", "KEEP", "TMPDIR", "A", "TAR_OPTIONS"]);
        assert_eq!(env[2].1, "/h", "HOME replaced in place");
    }

    #[test]
    fn options_are_checked() {
        for bad in ["", "A=B", "LD_X", "DYLD_X", "SANDBOX_X", "http_proxy", "No_Proxy"] {
            let o = EnvOptions { pass_env: vec![bad.into()], set_env: vec![] };
            assert!(matches!(o.validate(), Err(Error::InvalidOptions { .. })), "{bad}");
        }
        for bad in ["HOME", "TMPDIR", "RES_OPTIONS"] {
            let o = EnvOptions { pass_env: vec![], set_env: vec![(bad.into(), "x".into())] };
            assert!(matches!(o.validate(), Err(Error::InvalidOptions { .. })), "{bad}");
        }
        let o = EnvOptions { pass_env: vec![], set_env: vec![("X".into(), "a\0b".into())] };
        assert!(o.validate().is_err());
        assert!(EnvOptions { pass_env: vec!["X".into()], set_env: vec![("Y".into(), "1".into())] }.validate().is_ok());
    }
}
