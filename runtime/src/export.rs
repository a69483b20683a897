//! Exporting a profile as an OCI bundle that a standard runtime (`runc run`, `crun run`) runs
//! unchanged (CONTRACT.md §17). The facade's whole export surface: the request, the call and a
//! summary of what was written; the bundle itself is on disk (`config.json`, `rootfs/`, `home/`,
//! `tmp/`), and the compiler's internal types stay in the `sandbox-bundle` crate.

use std::path::Path;

pub use sandbox_bundle::{EnvOptions, ExportRequest};

use crate::{CompileReport, Error, Guarantees, Profile};

/// What an export wrote, and what a standard OCI runtime achieves with it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Exported {
    /// The mounts of `config.json`.
    pub mounts: usize,
    /// The guarantees a standard runtime delivers with the bundle (the `sandbox.guarantees`
    /// annotation): no Landlock, no resource limits.
    pub standard_guarantees: Guarantees,
    /// The report of what a standard runtime enforces (the `sandbox.report` annotation).
    pub standard_report: CompileReport,
}

/// Exports the bundle for `request` into `out_dir`, which must be missing or an empty directory;
/// the host is read now (its top-level entries and runtime closure). Everything is checked before
/// the first write; on a failure while writing, what this call created is removed again.
///
/// The bundle is what the executor would run for that argv without grants: a profile whose
/// `command` is `deny` is refused (`GrantDenied`), one whose `command` is `gated`
/// (`GrantRequired`: an export carries no grant), as a run would be, before anything is written.
///
/// **Written by descriptor.** `out_dir` may lie where a running sandbox writes (the workspace):
/// the directory is opened once (never through a symlink, and it must be the one the checks
/// saw) and every entry is made relative to it, new (`O_EXCL`, no symlink followed): a
/// workload that plants `config.json` as a symlink to a host file, or swaps `out_dir` for a
/// symlink, makes the export fail, never write elsewhere (the red team of 4 December, night).
/// The scratch roots of the sets that live at export time are masked as in a run; a set made
/// later is not known to the bundle.
pub fn export_bundle(profile: &Profile, request: &ExportRequest, out_dir: &Path) -> Result<Exported, Error> {
    #[cfg(target_os = "linux")]
    let masked = crate::registry::masked_roots();
    #[cfg(not(target_os = "linux"))]
    let masked = Vec::new();
    let plan = sandbox_bundle::plan_export(profile, &sandbox_bundle::HostView::scan(), request, out_dir, masked)?;
    #[cfg(unix)]
    write::write_plan(&plan)?;
    #[cfg(not(unix))]
    return Err(Error::io("bundle export", std::io::Error::from(std::io::ErrorKind::Unsupported)));
    let bundle = plan.bundle;
    Ok(Exported {
        mounts: bundle.plan.mounts.len(),
        standard_guarantees: bundle.standard_guarantees,
        standard_report: bundle.standard_report,
    })
}

/// Writing an [`sandbox_bundle::ExportPlan`] by descriptor.
#[cfg(unix)]
mod write {
    use std::ffi::OsStr;
    use std::fs;
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::{Path, PathBuf};

    use rustix::fs::{AtFlags, CWD, Mode, OFlags};
    use sandbox_bundle::{ExportPlan, ROOTFS};

    use crate::Error;

    const DIR: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
    const NEW_FILE: OFlags =
        OFlags::WRONLY.union(OFlags::CREATE).union(OFlags::EXCL).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

    /// `bits` (at most 0o777) as a mode (its C type is 16 bits wide on macOS).
    #[allow(clippy::useless_conversion)]
    fn raw_mode(bits: u32) -> Mode {
        Mode::from_bits_truncate((bits & 0o777).try_into().unwrap_or(0o700))
    }

    fn identity(fd: impl AsFd) -> io::Result<(u64, u64)> {
        let st = rustix::fs::fstat(fd)?;
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast, clippy::cast_sign_loss)]
        Ok((st.st_dev as u64, st.st_ino as u64))
    }

    /// Makes the directory `name` in `dir` (new: an entry there already is an error) with
    /// exactly `mode`, and opens it.
    fn new_dir(dir: &OwnedFd, name: &OsStr, mode: u32, shown: &Path) -> Result<OwnedFd, Error> {
        rustix::fs::mkdirat(dir, name, raw_mode(0o700)).map_err(|e| match e {
            rustix::io::Errno::EXIST => {
                Error::InvalidArgument { detail: format!("out_dir: {} appeared meanwhile", shown.display()) }
            }
            e => Error::io(format!("out_dir: creating {}", shown.display()), e.into()),
        })?;
        let fd = rustix::fs::openat(dir, name, DIR, Mode::empty())
            .map_err(|e| Error::io(format!("opening {}", shown.display()), e.into()))?;
        rustix::fs::fchmod(&fd, raw_mode(mode))
            .map_err(|e| Error::io(format!("chmod {}", shown.display()), e.into()))?;
        Ok(fd)
    }

    /// Makes the regular file `name` in `dir` (new, never through a symlink) with `mode`.
    fn new_file(dir: &OwnedFd, name: &OsStr, mode: u32, shown: &Path) -> Result<fs::File, Error> {
        let fd = rustix::fs::openat(dir, name, NEW_FILE, raw_mode(0o600)).map_err(|e| match e {
            rustix::io::Errno::EXIST => {
                Error::InvalidArgument { detail: format!("out_dir: {} appeared meanwhile", shown.display()) }
            }
            e => Error::io(format!("out_dir: creating {}", shown.display()), e.into()),
        })?;
        rustix::fs::fchmod(&fd, raw_mode(mode))
            .map_err(|e| Error::io(format!("chmod {}", shown.display()), e.into()))?;
        Ok(fs::File::from(fd))
    }

    /// Where `name` in the open directory `dir` is, for a removal that must not resolve the
    /// bundle's path again: the descriptor's own link on Linux.
    fn at(dir: &OwnedFd, name: &OsStr, out: &Path) -> PathBuf {
        #[cfg(target_os = "linux")]
        {
            let _ = out;
            use std::os::fd::AsRawFd;
            PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = dir;
            out.join(name)
        }
    }

    /// Writes `plan`; on failure removes exactly what it created (by descriptor) and returns the
    /// first error.
    pub(super) fn write_plan(plan: &ExportPlan) -> Result<(), Error> {
        let out = plan.out.as_path();
        let (Some(parent_path), Some(name)) = (out.parent(), out.file_name()) else {
            return Err(Error::InvalidArgument { detail: format!("out_dir: {} has no parent", out.display()) });
        };
        let replaced =
            || Error::InvalidArgument { detail: format!("out_dir: {} was replaced meanwhile", out.display()) };
        let parent = rustix::fs::openat(CWD, parent_path, DIR, Mode::empty()).map_err(|e| match e {
            rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP => replaced(),
            e => Error::io(format!("opening {}", parent_path.display()), e.into()),
        })?;
        if identity(&parent).map_err(|e| Error::io(format!("inspecting {}", parent_path.display()), e))?
            != plan.parent_identity
        {
            return Err(replaced());
        }
        let dir = match plan.out_identity {
            Some(id) => {
                let dir = rustix::fs::openat(&parent, name, DIR, Mode::empty()).map_err(|_| replaced())?;
                if identity(&dir).map_err(|e| Error::io(format!("inspecting {}", out.display()), e))? != id {
                    return Err(replaced());
                }
                dir
            }
            None => new_dir(&parent, name, 0o755, out)?,
        };
        let mut created: Vec<&OsStr> = Vec::new();
        let result = fill(plan, &dir, &mut created);
        if result.is_err() {
            for entry in created.iter().rev() {
                let _ = crate::fsutil::remove_tree(&at(&dir, entry, out));
            }
            if plan.out_identity.is_none() {
                let _ = rustix::fs::unlinkat(&parent, name, AtFlags::REMOVEDIR);
            }
        }
        result
    }

    fn fill(plan: &ExportPlan, dir: &OwnedFd, created: &mut Vec<&OsStr>) -> Result<(), Error> {
        let out = plan.out.as_path();
        let rootfs = new_dir(dir, OsStr::new(ROOTFS), 0o755, &out.join(ROOTFS))?;
        created.push(OsStr::new(ROOTFS));
        for (name, target) in &plan.bundle.plan.rootfs_symlinks {
            rustix::fs::symlinkat(target.as_path(), &rootfs, name.as_str()).map_err(|e| {
                Error::io(format!("out_dir: creating symlink {}", out.join(ROOTFS).join(name).display()), e.into())
            })?;
        }
        if plan.isolated_home {
            let home_path = out.join("home");
            let home = new_dir(dir, OsStr::new("home"), 0o700, &home_path)?;
            created.push(OsStr::new("home"));
            // The directories this call made in `home/`, by relative path, kept open.
            let mut made: Vec<(PathBuf, OwnedFd)> = Vec::new();
            for (src, rel) in &plan.seed_home {
                let mut cur: Option<usize> = None;
                let mut sub = PathBuf::new();
                for c in rel.parent().into_iter().flat_map(Path::components) {
                    sub.push(c);
                    cur = Some(match made.iter().position(|(p, _)| *p == sub) {
                        Some(i) => i,
                        None => {
                            let base = cur.map_or(&home, |i| &made[i].1);
                            let fd = new_dir(base, c.as_os_str(), 0o700, &home_path.join(&sub))?;
                            made.push((sub.clone(), fd));
                            made.len() - 1
                        }
                    });
                }
                let base = cur.map_or(&home, |i| &made[i].1);
                let Some(file_name) = rel.file_name() else {
                    return Err(Error::InvalidOptions {
                        detail: format!("seed_home: {} has no file name", rel.display()),
                    });
                };
                let dest = home_path.join(rel);
                let mut from = fs::File::open(src).map_err(|e| Error::io(format!("reading {}", src.display()), e))?;
                let mode = {
                    use std::os::unix::fs::PermissionsExt;
                    from.metadata()
                        .map_err(|e| Error::io(format!("reading {}", src.display()), e))?
                        .permissions()
                        .mode()
                        & 0o777
                };
                let mut to = new_file(base, file_name, mode, &dest)?;
                io::copy(&mut from, &mut to).map_err(|e| Error::io(format!("copying to {}", dest.display()), e))?;
            }
        }
        let _tmp = new_dir(dir, OsStr::new("tmp"), 0o700, &out.join("tmp"))?;
        created.push(OsStr::new("tmp"));
        let config_path = out.join("config.json");
        let mut config = new_file(dir, OsStr::new("config.json"), 0o644, &config_path)?;
        created.push(OsStr::new("config.json"));
        io::Write::write_all(&mut config, plan.config.as_bytes())
            .map_err(|e| Error::io(format!("writing {}", config_path.display()), e))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::{Access, ProfileConfig};

    /// A bundle the executor would not run is not written: `command` deny and gated are
    /// refused like a run without grants, and nothing is created; allow (the control) writes it.
    #[test]
    fn a_command_the_executor_would_refuse_is_not_exported() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        let request = ExportRequest { argv: vec!["/bin/true".into()], cwd: ws.clone(), ..ExportRequest::default() };
        for (command, want) in [(Access::Deny, "grant denied"), (Access::Gated, "grant required")] {
            let profile = Profile::new(ProfileConfig {
                workspace_root: ws.clone(),
                workspace_read: Access::Allow,
                command,
                ..ProfileConfig::default()
            })
            .unwrap();
            let out = ws.join(format!("out-{command:?}"));
            let e = export_bundle(&profile, &request, &out).err().unwrap();
            assert!(e.to_string().starts_with(want), "{e}");
            assert!(!out.exists());
        }
        let profile = Profile::new(ProfileConfig {
            workspace_root: ws.clone(),
            workspace_read: Access::Allow,
            command: Access::Allow,
            ..ProfileConfig::default()
        })
        .unwrap();
        export_bundle(&profile, &request, &ws.join("out")).unwrap();
        assert!(ws.join("out/config.json").is_file());
    }

    /// The red team of 4 December (night): a workload that can write where the bundle goes
    /// (`out` in its workspace) planted `out/config.json` as a symlink to a host file between the
    /// export's check and its write, and the export overwrote that file. Each plant is made here
    /// between `plan_export` (the checks) and the write: the export fails, the planted target is
    /// untouched, and what the export had made is gone again. Control: unplanted, it writes.
    #[cfg(unix)]
    #[test]
    fn an_export_never_writes_through_what_was_planted_after_its_checks() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        std::fs::create_dir(&ws).unwrap();
        let victim = root.join("victim");
        std::fs::write(&victim, "original\n").unwrap();
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let profile = Profile::new(ProfileConfig {
            workspace_root: ws.clone(),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            command: Access::Allow,
            ..ProfileConfig::default()
        })
        .unwrap();
        let request = ExportRequest { argv: vec!["/bin/true".into()], cwd: ws.clone(), ..ExportRequest::default() };
        let plan_for = |out: &Path| {
            sandbox_bundle::plan_export(&profile, &sandbox_bundle::HostView::scan(), &request, out, Vec::new()).unwrap()
        };
        // (1) An empty `out` that existed: `config.json`, `tmp` or `rootfs` planted as symlinks.
        for planted in ["config.json", "tmp", "rootfs", "home"] {
            let out = ws.join(format!("out-{planted}"));
            std::fs::create_dir(&out).unwrap();
            let plan = plan_for(&out);
            symlink(&victim, out.join(planted)).unwrap();
            let e = write::write_plan(&plan).err().unwrap();
            assert!(e.to_string().contains("appeared meanwhile"), "{planted}: {e}");
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original\n", "{planted}");
            let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(left, [std::ffi::OsString::from(planted)], "what the export made is removed again");
        }
        // (2) `out` (existing) renamed away and replaced by a symlink to another directory, and a
        // missing `out` made a symlink: nothing is written there.
        let out = ws.join("out-swapped");
        std::fs::create_dir(&out).unwrap();
        let plan = plan_for(&out);
        std::fs::rename(&out, ws.join("moved")).unwrap();
        symlink(&elsewhere, &out).unwrap();
        let e = write::write_plan(&plan).err().unwrap();
        assert!(e.to_string().contains("replaced meanwhile"), "{e}");
        let out = ws.join("out-missing");
        let plan = plan_for(&out);
        symlink(&elsewhere, &out).unwrap();
        let e = write::write_plan(&plan).err().unwrap();
        assert!(e.to_string().contains("appeared meanwhile"), "{e}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "written through a symlinked out");
        // (3) The parent replaced: a directory of the same name elsewhere.
        let sub = ws.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let plan = plan_for(&sub.join("out"));
        std::fs::rename(&sub, ws.join("sub-moved")).unwrap();
        symlink(&elsewhere, &sub).unwrap();
        let e = write::write_plan(&plan).err().unwrap();
        assert!(e.to_string().contains("replaced meanwhile"), "{e}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "written through a replaced parent");
        // (4) A symlink on the way to `out` inside the workspace (a workload could have made
        // it) is refused before anything is written; one outside the profile's writable areas
        // is followed (control).
        symlink(&elsewhere, ws.join("build")).unwrap();
        let e = sandbox_bundle::plan_export(
            &profile,
            &sandbox_bundle::HostView::scan(),
            &request,
            &ws.join("build/bundle"),
            Vec::new(),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("is a symlink where this profile's workloads may write"), "{e}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        let outside = root.join("outside-link");
        symlink(&elsewhere, &outside).unwrap();
        write::write_plan(&plan_for(&outside.join("bundle"))).unwrap();
        assert!(elsewhere.join("bundle/config.json").is_file());
        // Control: nothing planted, the bundle is written with its modes.
        let out = ws.join("out-ok");
        write::write_plan(&plan_for(&out)).unwrap();
        for (name, mode) in [("", 0o755), ("rootfs", 0o755), ("tmp", 0o700), ("home", 0o700), ("config.json", 0o644)] {
            let m = std::fs::symlink_metadata(out.join(name)).unwrap();
            assert_eq!(m.permissions().mode() & 0o7777, mode, "{name}");
        }
        assert!(std::fs::read_to_string(out.join("config.json")).unwrap().contains("\"ociVersion\""));
    }
}
