//! Writing a bundle to a directory that a standard OCI runtime runs unchanged (CONTRACT.md §18).

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::access::Home;
use crate::compile::{Bundle, GrantDeltas, Launch, ROOTFS, SpawnContext, compile, spec_json};
use crate::env::{EnvOptions, ScrubFlags, scrub};
use crate::error::Error;
use crate::host::HostView;
use crate::profile::Profile;

/// What to export: one argv in one cwd, with the caller's environment and HOME seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportRequest {
    /// The program and its arguments (no shell).
    pub argv: Vec<OsString>,
    /// The working directory (absolute, an existing directory).
    pub cwd: PathBuf,
    /// A snapshot of the caller's environment, scrubbed per CONTRACT.md §10.
    pub env_snapshot: Vec<(OsString, OsString)>,
    /// `pass_env` / `set_env` options.
    pub env_options: EnvOptions,
    /// `(src_file, rel_dest)` copied into the bundle's `home/` (`IsolatedHome` only).
    pub seed_home: Vec<(PathBuf, PathBuf)>,
    /// The HOME the process gets with `RealHome`.
    pub real_home: Option<PathBuf>,
    /// The uid mapped to container uid 0 (the user who will run the runtime).
    pub uid: u32,
    /// The gid mapped to container gid 0.
    pub gid: u32,
}

/// Checks a `seed_home` pair (CONTRACT.md §10); the error names the option.
pub fn check_seed(src: &Path, rel: &Path) -> Result<(), Error> {
    let bad = |why: String| Err(Error::InvalidOptions { detail: format!("seed_home: {why}") });
    if !src.is_absolute() {
        return bad(format!("{} is not absolute", src.display()));
    }
    match fs::metadata(src) {
        Ok(m) if m.is_file() => {}
        _ => return bad(format!("{} is not an existing regular file", src.display())),
    }
    let raw = rel.as_os_str().as_encoded_bytes();
    if raw.is_empty()
        || rel.is_absolute()
        || raw.split(|b| *b == b'/').any(|c| c.is_empty() || c == b"." || c == b"..")
        || !rel.components().all(|c| matches!(c, Component::Normal(_)))
    {
        return bad(format!("{} is not a clean relative path", rel.display()));
    }
    Ok(())
}

/// Writes `rootfs/` (0755, holding the plan's top-level symlinks) into the existing `dir`.
pub fn write_rootfs(bundle: &Bundle, dir: &Path) -> Result<(), Error> {
    let rootfs = dir.join(ROOTFS);
    fs::create_dir(&rootfs).map_err(|e| Error::io(format!("creating {}", rootfs.display()), e))?;
    set_mode(&rootfs, 0o755)?;
    for (name, target) in &bundle.plan.rootfs_symlinks {
        let link = rootfs.join(name);
        symlink(target, &link).map_err(|e| Error::io(format!("creating symlink {}", link.display()), e))?;
    }
    Ok(())
}

/// Writes `config.json` (already rendered by [`spec_json`]) into the existing `dir`.
pub fn write_config(config: &str, dir: &Path) -> Result<(), Error> {
    let path = dir.join("config.json");
    fs::write(&path, config.as_bytes()).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// Writes a bundle the embedded runtime runs: `dir` (created, 0700), `rootfs/` and
/// `config.json`.
pub fn write_bundle(bundle: &Bundle, dir: &Path) -> Result<(), Error> {
    let mut spec = bundle.spec.clone();
    let dir_abs = std::path::absolute(dir).map_err(|e| Error::io(format!("resolving {}", dir.display()), e))?;
    root_sources(&mut spec, &dir_abs.join(ROOTFS));
    let config = spec_json(&spec)?;
    fs::create_dir(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    set_mode(dir, 0o700)?;
    write_rootfs(bundle, dir)?;
    write_config(&config, dir)
}

/// Makes the relative sources of binds through the root (`rootfs/…`, relative to the bundle as
/// OCI runtimes read them: what an exported bundle keeps) absolute under `root`, the root
/// filesystem the embedded runtime is given: it resolves a source from its own working
/// directory, not the bundle's.
fn root_sources(spec: &mut oci_spec::runtime::Spec, root: &Path) {
    let Some(mounts) = spec.mounts().clone() else { return };
    let mounts = mounts
        .into_iter()
        .map(|mut m| {
            let inside = m.source().as_ref().and_then(|s| s.strip_prefix(ROOTFS).ok()).map(|rest| root.join(rest));
            if let Some(source) = inside {
                m.set_source(Some(source));
            }
            m
        })
        .collect();
    spec.set_mounts(Some(mounts));
}

/// A key for the rootfs skeleton `bundle` needs: equal keys mean equal top-level symlinks and
/// mount destinations, so one prepared skeleton serves every spawn with that key.
pub fn rootfs_key(bundle: &Bundle) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bundle.plan.rootfs_symlinks.hash(&mut hasher);
    let mut destinations: Vec<&Path> = bundle.plan.mounts.iter().map(|m| m.destination.as_path()).collect();
    destinations.sort();
    destinations.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// Writes a bundle whose root is the prepared skeleton `rootfs` (an absolute path, made by
/// [`write_rootfs`] for a bundle with the same [`rootfs_key`]): `dir` (created, 0700) holds only
/// `config.json`. The embedded runtime creates its mount points in the skeleton once; later
/// spawns find them. The skeleton is never writable from inside (the root is read-only).
pub fn write_bundle_on(bundle: &Bundle, dir: &Path, rootfs: &Path) -> Result<(), Error> {
    if !rootfs.is_absolute() {
        return Err(Error::argument(format!("rootfs: {} is not absolute", rootfs.display())));
    }
    let mut spec = bundle.spec.clone();
    let root = oci_spec::runtime::RootBuilder::default()
        .path(rootfs)
        .readonly(true)
        .build()
        .map_err(|e| Error::argument(format!("root: {e}")))?;
    spec.set_root(Some(root));
    root_sources(&mut spec, rootfs);
    let config = spec_json(&spec)?;
    fs::create_dir(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    set_mode(dir, 0o700)?;
    write_config(&config, dir)
}

/// What [`plan_export`] checked and compiled, for the caller to write by descriptor: the
/// bundle's directory `out`, `config.json`'s text, `rootfs/`'s symlinks, `home/` and its seeds
/// (`IsolatedHome`) and `tmp/`. The identities are those the checks saw, so that the writer can
/// refuse a directory that was replaced (renamed away, a symlink put in its place) meanwhile.
#[derive(Clone, Debug)]
pub struct ExportPlan {
    /// The compiled bundle.
    pub bundle: Bundle,
    /// `config.json`'s text.
    pub config: String,
    /// The bundle directory (canonical parent joined with its name).
    pub out: PathBuf,
    /// `(st_dev, st_ino)` of `out`'s parent when checked.
    pub parent_identity: (u64, u64),
    /// `(st_dev, st_ino)` of `out` when checked, if it existed (an empty directory); else
    /// the writer makes it.
    pub out_identity: Option<(u64, u64)>,
    /// Whether `home/` is written (`IsolatedHome`).
    pub isolated_home: bool,
    /// `(src_file, rel_dest)` copied into `home/`.
    pub seed_home: Vec<(PathBuf, PathBuf)>,
}

/// Checks and compiles the export of `request` into `out_dir`, which must be missing or an
/// empty directory; writes nothing (the caller writes the [`ExportPlan`], by descriptor).
///
/// The bundle gets `rootfs/` (the host's top-level symlinks when host read is allowed, else
/// empty), `home/` with the seeded files (`IsolatedHome`) and `tmp/` (0700), which replace the
/// executor's HOME and TMPDIR in binds and environment. `other_scratch_roots` are masked as in
/// a run (the scratch roots of the sets that live now).
pub fn plan_export(
    profile: &Profile,
    host: &HostView,
    request: &ExportRequest,
    out_dir: &Path,
    other_scratch_roots: Vec<PathBuf>,
) -> Result<ExportPlan, Error> {
    let argv = request
        .argv
        .iter()
        .map(|a| {
            a.to_str().map(str::to_owned).ok_or_else(|| Error::argument("argv: not valid UTF-8 (OCI args are text)"))
        })
        .collect::<Result<Vec<String>, Error>>()?;
    if argv.is_empty() || argv[0].is_empty() {
        return Err(Error::argument("argv: empty"));
    }
    if !request.cwd.is_absolute() || !request.cwd.is_dir() {
        return Err(Error::argument(format!("cwd: {} is not an absolute directory", request.cwd.display())));
    }
    let cwd = fs::canonicalize(&request.cwd).map_err(|e| Error::argument(format!("cwd: {e}")))?;
    request.env_options.validate()?;
    let isolated = profile.config().home == Home::IsolatedHome;
    for (src, rel) in &request.seed_home {
        if !isolated {
            return Err(Error::InvalidOptions { detail: String::from("seed_home: needs an isolated home") });
        }
        check_seed(src, rel)?;
    }

    // out_dir: missing (its parent must exist) or an empty directory.
    if out_dir.as_os_str().is_empty() {
        return Err(Error::argument("out_dir: empty path"));
    }
    let absolute = if out_dir.is_absolute() {
        out_dir.to_path_buf()
    } else {
        std::env::current_dir().map_err(|e| Error::io("current directory", e))?.join(out_dir)
    };
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return Err(Error::argument(format!("out_dir: {} has no parent", absolute.display())));
    };
    // A symlink on the way that lies where this profile's workloads write could have been
    // planted by one (`build -> /elsewhere`, then `--out build/bundle` wrote elsewhere: a red
    // team, 4 December, night): refused. Symlinks elsewhere (`/var/run`) are the host's own.
    for ancestor in parent.ancestors() {
        if !fs::symlink_metadata(ancestor).is_ok_and(|m| m.file_type().is_symlink()) {
            continue;
        }
        let real = match (ancestor.parent().map(fs::canonicalize), ancestor.file_name()) {
            (Some(Ok(dir)), Some(file)) => dir.join(file),
            _ => ancestor.to_path_buf(),
        };
        if profile.areas().any(|(area, _, write)| write != crate::access::Access::Deny && real.starts_with(area)) {
            return Err(Error::argument(format!(
                "out_dir: {} is a symlink where this profile's workloads may write (one could have planted it); \
                 name the directory it leads to",
                ancestor.display()
            )));
        }
    }
    if name == ".." || name == "." {
        return Err(Error::argument(format!("out_dir: {} is not clean", absolute.display())));
    }
    let parent = fs::canonicalize(parent)
        .map_err(|e| Error::argument(format!("out_dir: parent of {}: {e}", absolute.display())))?;
    let parent_identity = fs::metadata(&parent)
        .map(|m| identity(&m))
        .map_err(|e| Error::argument(format!("out_dir: parent of {}: {e}", absolute.display())))?;
    let out = parent.join(name);
    let out_identity = match fs::symlink_metadata(&out) {
        Ok(m) if m.is_dir() => {
            let mut entries = fs::read_dir(&out).map_err(|e| Error::io(format!("reading {}", out.display()), e))?;
            if entries.next().is_some() {
                return Err(Error::argument(format!("out_dir: {} is not empty", out.display())));
            }
            Some(identity(&m))
        }
        Ok(_) => {
            return Err(Error::argument(format!("out_dir: {} is not a directory", out.display())));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("inspecting {}", out.display()), e)),
    };

    if out == profile.workspace_root() || out == cwd {
        return Err(Error::argument(format!(
            "out_dir: {} is the workspace or the working directory, which the bundle would hide",
            out.display()
        )));
    }
    let home =
        if isolated { out.join("home") } else { request.real_home.clone().unwrap_or_else(|| PathBuf::from("/")) };
    let tmp = out.join("tmp");
    let env = scrub(&request.env_snapshot, &request.env_options, &home, &tmp, ScrubFlags { linux_container: true });
    let protected = crate::protect::scan(profile, request.real_home.as_deref());
    let spawn = SpawnContext {
        argv,
        cwd,
        env,
        tty: false,
        home_dir: isolated.then(|| home.clone()),
        temp_dir: tmp.clone(),
        scratch_root: out.clone(),
        other_scratch_roots,
        uid: request.uid,
        gid: request.gid,
        landlock: false,
        egress_route: false,
        launch: Launch::Export,
        grants: GrantDeltas::default(),
        protected,
    };
    let bundle = compile(profile, &spawn, host)?;
    let config = spec_json(&bundle.spec)?;
    // What the executor would run without grants (CONTRACT.md §18): with `command` deny or
    // gated it runs nothing, so nothing is written (checked after the inputs, as a run does).
    match profile.config().command {
        crate::access::Access::Deny => {
            return Err(Error::GrantDenied { detail: String::from("command.execute is deny") });
        }
        crate::access::Access::Gated => return Err(Error::GrantRequired),
        crate::access::Access::Allow => {}
    }
    Ok(ExportPlan {
        bundle,
        config,
        out,
        parent_identity,
        out_identity,
        isolated_home: isolated,
        seed_home: request.seed_home.clone(),
    })
}

/// `(st_dev, st_ino)` of `meta`.
#[cfg(unix)]
fn identity(meta: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn identity(_: &fs::Metadata) -> (u64, u64) {
    (0, 0)
}

#[cfg(unix)]
fn set_mode(p: &Path, mode: u32) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).map_err(|e| Error::io(format!("chmod {}", p.display()), e))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> Result<(), Error> {
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "symlinks need unix"))
}
