//! The scan at spawn: which protected entries exist inside the writable areas, which are
//! missing, and what each additional root is (issue 14).
//!
//! The walk starts at every area whose write is not `deny`, does not follow symlinks, does not
//! enter other areas (each is walked as itself when writable), and stops descending at a
//! protected entry (its bind covers what lies beneath) and at `.git` (whose parts are looked
//! up by name). It is bounded: after [`MAX_DIRS`] directories it stops, and the spawn fails
//! (`InvalidProfile` naming `protected_paths`): entries beyond the bound would be neither bound
//! nor, for git's, refused, and a workload can create that many directories in one run to make
//! the next run's scan stop early. A directory the scan cannot read (a workload can `chmod` its
//! own directories) is bound read-only as a whole, never skipped.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{ProtectScan, Protection};
use crate::access::{Access, Home, Isolation};
use crate::profile::Axis;
use crate::profile::Profile;

/// How deep config includes are followed (git stops at 10).
const MAX_INCLUDE_DEPTH: usize = 10;

/// The most directories one scan reads; a scan that would read more fails the spawn.
pub const MAX_DIRS: usize = 200_000;

/// The longest path of a directory the scan walks, in bytes: an entry beneath a longer one
/// could not be named to be bound (PATH_MAX is 4096 with a name of up to 255 bytes after the
/// directory). A workload made a chain of directories past PATH_MAX in one run, and every
/// later spawn failed after 35 s with a message about a protected entry (red team AK, 5
/// December); a scan that meets one now fails the spawn at once, saying so.
const MAX_DIR_PATH: usize = 3800;

/// The most git config files one scan reads (each distinct file once, whatever the paths that
/// name it) and the most bytes it reads of them, and the most includes it follows: a scan past
/// one of them fails the spawn. A workload's own repository included one file through eight
/// symlinked directories, ten levels deep, and the next spawn read 8^10 paths of it, its
/// memory growing by 75 MB/s (red team AL, 5 December).
const MAX_CONFIG_FILES: usize = 4096;

/// The most names the scan reads in one hooks directory ([`Walker::hook_links`]); past it the
/// spawn is refused (a hooks directory git made holds about a dozen).
const MAX_HOOK_NAMES: usize = 4096;
const MAX_CONFIG_BYTES: usize = 64 << 20;
const MAX_INCLUDES: usize = 65_536;

/// The most path components of includes one scan resolves (each an `lstat`): 60 configs of
/// 1,000 includes spelled `d/../d/../…` 400 components long stayed under every other bound and
/// made every spawn take 14 s (red team AO, 5 December). About 0.6 s of work here.
const MAX_INCLUDE_WORK: usize = 1_000_000;

/// The most mounts the binds of entries and pins may come to: nested pins are each bound with
/// what lies beneath, so a mount under k pins is made 2^k times; an include naming a missing
/// file 16 directories deep gave the next spawn more mounts than the kernel allows (red team
/// AO, 5 December), every later spawn failing with the runtime's "failed to prepare rootfs".
/// The binds above the workspace (a workspace under the private `/tmp`) double them once or
/// twice more: 16,384 here is at most about 66,000 mounts (the kernel's bound is 100,000), made
/// in a fraction of a second; an entry up to 12 directories below its area passes, and so do
/// 4,000 entries beneath one pin.
const MAX_MOUNT_COPIES: u64 = 16_384;

/// The most entries (existing or not) and pins one scan finds: each is a mount of the container
/// or a rule of the guard (a bare repository found in the workspace is half a dozen), and a
/// workload made thousands of bare layouts in one run, after which every spawn took half a
/// minute or more, and past the kernel's mount bound would have failed only after minutes (red
/// team AN, 5 December). Past it the spawn is refused at once.
const MAX_ENTRIES: usize = 8_192;
/// The HOME's shell start-up files, read for the files they run ([`Walker::shell_file`]).
const SHELL_START_UP: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".bash_aliases",
    ".bash_logout",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".xprofile",
    ".xsessionrc",
    ".xinitrc",
    ".xsession",
    ".config/fish/config.fish",
];

/// Directories of a HOME whose every file is a start-up file ([`Walker::shell_file`]; the
/// first 64 of each).
const SHELL_START_UP_DIRS: &[&str] = &[".bashrc.d", ".config/fish/conf.d", ".config/environment.d"];

/// How deep the scripts a shell script sources are followed ([`Walker::script_file`]).
const MAX_SCRIPT_DEPTH: usize = 4;

/// The most entries [`Walker::home_links`] looks at.
const MAX_HOME_LINKS: usize = 8192;

/// Hidden directories of a HOME that [`Walker::home_links`] does not enter: caches and package
/// stores, large and written by tools, where no dotfile manager links.
const HOME_LINKS_SKIPPED: &[&str] =
    &[".cache", ".npm", ".cargo", ".rustup", ".local/share", ".local/state", ".git", ".m2", ".gradle", ".pyenv"];

/// The most hidden entries of a writable real HOME the scan binds read-only (`~/.*` of the
/// list); past it the spawn is refused (a HOME in use holds a few dozen to a few hundred).
const MAX_HIDDEN_IN_HOME: usize = 4096;

/// The entries that make a directory a git directory to git (with `objects/` a directory):
/// a bare repository is found by them.
const BARE_MARKERS: [&str; 3] = ["HEAD", "objects", "refs"];

/// A git directory's legacy remote definitions, which git still reads (`git push` to a remote
/// name no config defines takes `remotes/<name>` or `branches/<name>`).
const LEGACY_REMOTES: [&str; 2] = ["remotes", "branches"];

/// The path of the running program, canonical: the one it had when first asked (a long-lived
/// `sandbox serve` keeps protecting its path after the file was replaced on the host, when the
/// kernel names the running one `… (deleted)`; an attack on the first version of this check
/// replaced the binary a rebuild had put there).
fn running_program() -> Option<PathBuf> {
    static FIRST: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FIRST
        .get_or_init(|| {
            let exe = std::env::current_exe().ok()?;
            let text = exe.to_str().map(|t| t.strip_suffix(" (deleted)").unwrap_or(t).to_owned());
            let exe = text.map_or(exe, PathBuf::from);
            std::fs::canonicalize(&exe).ok()
        })
        .clone()
}

/// What an additional root is at a spawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RootKind {
    /// An existing directory.
    Dir,
    /// An existing file (or anything else that is not a directory).
    File,
    /// Nothing exists at the path.
    Missing,
}

/// Scans the writable areas of `profile` for protected entries (see the module docs). `home`
/// is the caller's real HOME (whatever HOME the workload gets): its `~/` entries apply when the
/// workload gets it (`Home::RealHome`) or can write there otherwise, and git's `~/` paths are
/// taken there.
pub fn scan(profile: &Profile, home: Option<&Path>) -> ProtectScan {
    scan_with(profile, home, None)
}

/// What earlier scans read of each directory, reused while the directory is unchanged: a
/// directory whose inode, change time and modification time are those recorded has the same
/// entries (adding, removing or renaming an entry changes both times). A directory changed
/// within the last two seconds is always read again (timestamps are coarser than the changes
/// they record: the "racy" case git's index knows). Besides directory listings, only what the
/// caller's HOME's readers found is kept ([`HomeRecord`], with the stamps of the files they
/// read); other files the scan reads (git's config and pointers, agent settings) are read at
/// every scan.
#[derive(Debug, Default)]
pub struct ScanMemo {
    inner: std::sync::Mutex<Memo>,
}

#[derive(Debug, Default)]
struct Memo {
    /// The names the listings were filtered by (a memo of other names is dropped).
    last: Vec<OsString>,
    dirs: HashMap<PathBuf, Listing>,
    /// Whether `dirs` changed since it was restored or last kept ([`ScanMemo::to_kept`]).
    changed: bool,
    /// What the HOME's readers found last ([`HomeRecord`]).
    home: Option<HomeRecord>,
    /// The caller's user name as last looked up, with the user id and the stamp of
    /// `/etc/passwd` it was looked up with (a lookup reads and parses that file; Linux only).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    user: Option<(u32, Option<Stamp>, Option<String>)>,
}

/// What the readers of the caller's HOME (its links, start-up files and `~/.ssh/config`)
/// found in one scan, with every path their lookups consulted: reused by the next scan of the
/// same HOME while each of those paths has the stamp it had (issue 16: reading them took a
/// warm spawn 0.65 ms of its 3.5 here, and grows with the HOME). A path's lookup depends only
/// on the directories it passes through (a name made, removed, renamed or replaced there
/// changes the directory's times, and a mount over a directory changes what its path stats
/// as), and a file's content only on the file (a write changes its times): each of them, by
/// its physical path, is in `looked`. A record with one of them changed in the two seconds
/// before the reading started is not kept (a change in the same tick of the timestamps as the
/// reading would not show).
#[derive(Clone, Debug)]
struct HomeRecord {
    key: HomeKey,
    looked: Vec<(PathBuf, Option<Stamp>)>,
    calls: Vec<HomeCall>,
}

/// What a [`HomeRecord`]'s findings depend on besides the files: the real HOME, the listed
/// `~/` entries, and the user and host names put in for `$USER` and `$(hostname)`.
type HomeKey = (PathBuf, Vec<String>, Option<String>, Option<String>);

/// One finding of the HOME's readers, replayed in order by a scan that reuses the record.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum HomeCall {
    CommandFile(PathBuf),
    /// A listed `~/` entry (relative to the HOME) and the real path it resolves to.
    Resolved(String, PathBuf),
    TopOnPath(PathBuf),
    ConfigRead(usize),
    Narrowed(String),
}

/// A [`HomeRecord`] being made: the paths looked up (each followed to its end when the record
/// is stamped) and the findings.
#[derive(Default)]
struct HomeTrace {
    looked: Vec<PathBuf>,
    calls: Vec<HomeCall>,
}

/// A memo as kept between processes ([`ScanMemo::to_kept`]).
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    version: u32,
    last: Vec<String>,
    dirs: Vec<KeptListing>,
    home: Option<KeptHome>,
}

/// A [`HomeRecord`] as kept (paths that are not UTF-8: not kept).
#[derive(serde::Serialize, serde::Deserialize)]
struct KeptHome {
    home: String,
    listed: Vec<String>,
    user: Option<String>,
    host: Option<String>,
    looked: Vec<(String, Option<KeptStamp>)>,
    calls: Vec<HomeCall>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct KeptStamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

#[derive(serde::Serialize, serde::Deserialize)]
struct KeptListing {
    dir: String,
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    hits: Vec<String>,
    subdirs: Vec<String>,
}

/// The format of [`Kept`].
const KEPT_VERSION: u32 = 2;

impl ScanMemo {
    /// The listings and the HOME's record ([`HomeRecord`]) as bytes another process can
    /// restore with [`ScanMemo::from_kept`], or None when nothing changed since they were
    /// restored or last taken (a one-shot CLI keeps its memo in a place no sandbox sees, so
    /// that its next call reads only what changed). Listings naming a path that is not UTF-8
    /// are left out, and so is such a record: they are read again.
    pub fn to_kept(&self) -> Option<Vec<u8>> {
        let mut m = self.inner.lock().ok()?;
        if !m.changed {
            return None;
        }
        let text = |o: &OsString| o.to_str().map(str::to_owned);
        let kept = Kept {
            version: KEPT_VERSION,
            last: m.last.iter().map(text).collect::<Option<_>>()?,
            dirs: m
                .dirs
                .iter()
                .filter_map(|(dir, l)| {
                    Some(KeptListing {
                        dir: dir.to_str()?.to_owned(),
                        dev: l.stamp.dev,
                        ino: l.stamp.ino,
                        mtime: l.stamp.mtime,
                        ctime: l.stamp.ctime,
                        hits: l.hits.iter().map(text).collect::<Option<_>>()?,
                        subdirs: l.subdirs.iter().map(text).collect::<Option<_>>()?,
                    })
                })
                .collect(),
            home: m.home.as_ref().and_then(|r| {
                let text = |p: &Path| p.to_str().map(str::to_owned);
                let path_ok = |c: &HomeCall| match c {
                    HomeCall::CommandFile(p) | HomeCall::TopOnPath(p) | HomeCall::Resolved(_, p) => {
                        p.to_str().is_some()
                    }
                    HomeCall::ConfigRead(_) | HomeCall::Narrowed(_) => true,
                };
                Some(KeptHome {
                    home: text(&r.key.0)?,
                    listed: r.key.1.clone(),
                    user: r.key.2.clone(),
                    host: r.key.3.clone(),
                    looked: r
                        .looked
                        .iter()
                        .map(|(p, s)| {
                            let stamp = s.map(|s| KeptStamp { dev: s.dev, ino: s.ino, mtime: s.mtime, ctime: s.ctime });
                            Some((text(p)?, stamp))
                        })
                        .collect::<Option<_>>()?,
                    calls: r.calls.iter().all(path_ok).then(|| r.calls.clone())?,
                })
            }),
        };
        let bytes = serde_json::to_vec(&kept).ok()?;
        m.changed = false;
        Some(bytes)
    }

    /// A memo restored from [`ScanMemo::to_kept`]'s bytes, or None when they are not such.
    /// Whoever keeps the bytes must keep them where no workload can write: a listing that
    /// leaves out a name the directory holds hides that entry from the scan while the
    /// directory's times stay as recorded.
    pub fn from_kept(bytes: &[u8]) -> Option<ScanMemo> {
        let kept: Kept = serde_json::from_slice(bytes).ok()?;
        if kept.version != KEPT_VERSION {
            return None;
        }
        let mut dirs = HashMap::with_capacity(kept.dirs.len());
        for l in kept.dirs {
            let dir = PathBuf::from(l.dir);
            // Only what a scan records: absolute paths, names of one component.
            let name_ok = |n: &String| !n.is_empty() && !n.contains('/') && n != "." && n != "..";
            if !dir.is_absolute() || !l.hits.iter().chain(&l.subdirs).all(name_ok) {
                return None;
            }
            let stamp = Stamp { dev: l.dev, ino: l.ino, mtime: l.mtime, ctime: l.ctime };
            let listing = Listing {
                stamp,
                hits: l.hits.into_iter().map(OsString::from).collect(),
                subdirs: l.subdirs.into_iter().map(OsString::from).collect(),
            };
            dirs.insert(dir, listing);
        }
        let last = kept.last.into_iter().map(OsString::from).collect();
        let home = match kept.home {
            None => None,
            Some(h) => {
                // Only what a scan records: absolute paths.
                let absolute = |p: &str| Path::new(p).is_absolute();
                let calls_ok = h.calls.iter().all(|c| match c {
                    HomeCall::CommandFile(p) | HomeCall::TopOnPath(p) | HomeCall::Resolved(_, p) => p.is_absolute(),
                    HomeCall::ConfigRead(_) | HomeCall::Narrowed(_) => true,
                });
                if !absolute(&h.home) || !h.looked.iter().all(|(p, _)| absolute(p)) || !calls_ok {
                    return None;
                }
                Some(HomeRecord {
                    key: (PathBuf::from(h.home), h.listed, h.user, h.host),
                    looked: h
                        .looked
                        .into_iter()
                        .map(|(p, s)| {
                            let stamp = s.map(|s| Stamp { dev: s.dev, ino: s.ino, mtime: s.mtime, ctime: s.ctime });
                            (PathBuf::from(p), stamp)
                        })
                        .collect(),
                    calls: h.calls,
                })
            }
        };
        Some(ScanMemo { inner: std::sync::Mutex::new(Memo { last, dirs, changed: false, home, user: None }) })
    }
}

#[derive(Clone, Debug)]
struct Listing {
    stamp: Stamp,
    /// Entries whose name is the last component of a pattern, or `.git`.
    hits: Vec<OsString>,
    /// Subdirectories (not followed through symlinks).
    subdirs: Vec<OsString>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// Whether its times are at or after `secs` (seconds since the epoch).
    pub(crate) fn changed_since(&self, secs: i64) -> bool {
        self.mtime.0 >= secs || self.ctime.0 >= secs
    }
}

/// A directory's stamp and entries (name, whether a directory), both of one inode: opened once
/// (never through a symlink), stamped and read through that descriptor. A red team (5
/// December) swapped an ancestor between a stamp taken by path and a listing read by path: the
/// memo paired one directory's times with another's entries, hiding a protected file from
/// every later scan once the listings were kept between processes.
#[cfg(target_os = "linux")]
fn read_listing(dir: &Path) -> std::io::Result<(Stamp, Vec<(OsString, bool)>)> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStringExt;

    use nix::fcntl::{AtFlags, OFlag};
    use nix::sys::stat::{Mode, SFlag};
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    let mut d = nix::dir::Dir::open(dir, flags, Mode::empty())?;
    let fd = d.as_raw_fd();
    let st = nix::sys::stat::fstat(fd)?;
    let stamp = Stamp {
        dev: st.st_dev,
        ino: st.st_ino,
        mtime: (st.st_mtime, st.st_mtime_nsec),
        ctime: (st.st_ctime, st.st_ctime_nsec),
    };
    let mut entries = Vec::new();
    for e in d.iter() {
        let e = e?;
        let name = e.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let is_dir = match e.file_type() {
            Some(t) => t == nix::dir::Type::Directory,
            // The filesystem gives no type in its listing: asked of the same directory.
            None => {
                let st = nix::sys::stat::fstatat(Some(fd), name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
                SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR
            }
        };
        entries.push((OsString::from_vec(name.to_bytes().to_vec()), is_dir));
    }
    Ok((stamp, entries))
}

/// [`read_listing`] where no descriptor-based listing is at hand: stamped, then read, by
/// path (listings are kept between processes on Linux only).
#[cfg(not(target_os = "linux"))]
fn read_listing(dir: &Path) -> std::io::Result<(Stamp, Vec<(OsString, bool)>)> {
    let listed = std::fs::read_dir(dir)?;
    let stamp = stamp(dir).ok_or_else(|| std::io::Error::other("its metadata cannot be read"))?;
    let mut entries = Vec::new();
    for e in listed {
        let e = e?;
        entries.push((e.file_name(), e.file_type()?.is_dir()));
    }
    Ok((stamp, entries))
}

/// The stamp of whatever `path` names, not followed through a symlink: None where nothing is
/// there (or a component is no directory), an error where it cannot be known.
pub(crate) fn any_stamp(path: &Path) -> std::io::Result<Option<Stamp>> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every path a lookup of the absolute `path`, followed through symlinks to its end (at most
/// 40), consults, by its physical path, appended to `trail` once (`seen`): the root, each
/// directory it passes through and each name it finds there, up to the first missing one
/// (whose directory, in the trail, changes its times when the name is made).
pub(crate) fn lookup_trail(path: &Path, trail: &mut Vec<PathBuf>, seen: &mut HashSet<PathBuf>) {
    use std::path::Component;
    let mut add = |p: &Path, trail: &mut Vec<PathBuf>| {
        if seen.insert(p.to_path_buf()) {
            trail.push(p.to_path_buf());
        }
    };
    let mut out = PathBuf::from("/");
    add(&out, trail);
    let mut rest: std::collections::VecDeque<PathBuf> =
        path.components().map(|c| PathBuf::from(c.as_os_str())).collect();
    let mut hops = 0;
    while let Some(c) = rest.pop_front() {
        match c.components().next() {
            Some(Component::RootDir) => out = PathBuf::from("/"),
            Some(Component::CurDir) | None | Some(Component::Prefix(_)) => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::Normal(name)) => {
                let next = out.join(name);
                let found = std::fs::symlink_metadata(&next);
                if found.is_ok() {
                    add(&next, trail);
                }
                match found {
                    Ok(m) if m.file_type().is_symlink() => {
                        hops += 1;
                        if hops > 40 {
                            return;
                        }
                        let Ok(target) = std::fs::read_link(&next) else { return };
                        for t in target.components().rev() {
                            rest.push_front(PathBuf::from(t.as_os_str()));
                        }
                    }
                    Ok(_) => out = next,
                    Err(_) => return,
                }
            }
        }
    }
}

fn stamp(dir: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).ok()?;
    m.is_dir().then(|| Stamp {
        dev: m.dev(),
        ino: m.ino(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    })
}

/// [`scan`] reusing (and refreshing) `memo`'s directory listings.
pub fn scan_with(profile: &Profile, home: Option<&Path>, memo: Option<&ScanMemo>) -> ProtectScan {
    scan_bounded(profile, home, memo, MAX_DIRS)
}

/// [`scan_with`] with another bound than [`MAX_DIRS`].
fn scan_bounded(profile: &Profile, home: Option<&Path>, memo: Option<&ScanMemo>, max_dirs: usize) -> ProtectScan {
    let c = profile.config();
    let mut out = ProtectScan::default();
    if c.isolation == Isolation::Unconfined {
        return out;
    }
    for r in &c.additional_roots {
        let kind = match std::fs::symlink_metadata(&r.path) {
            Ok(m) if m.is_dir() => RootKind::Dir,
            Ok(_) => RootKind::File,
            Err(_) => RootKind::Missing,
        };
        if kind == RootKind::Missing {
            out.missing.push(r.path.clone());
        }
        out.roots.push((r.path.clone(), kind));
    }
    let p = &c.protected_paths;
    // The caller's real HOME by its real path (a HOME spelled through a symlink would name
    // entries no bind or guard path matches: an attack on the first version).
    let home: Option<PathBuf> = home
        .filter(|h| h.is_absolute())
        .map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| crate::profile::lexically_clean(h)))
        .filter(|h| h != Path::new("/"));
    let areas: Vec<PathBuf> = profile.areas().map(|(a, _, _)| a.to_path_buf()).collect();
    let writable: Vec<PathBuf> =
        profile.areas().filter(|(a, _, w)| *w != Access::Deny && a.is_dir()).map(|(a, _, _)| a.to_path_buf()).collect();
    let names = split(&p.names());
    let last: HashSet<OsString> = names.iter().filter_map(|n| n.last()).map(OsString::from).collect();
    // The other components of multi-part names (`.claude` of `.claude/settings.json`): such a
    // component that is a symlink hands the names beneath it to another directory.
    let intermediate: HashSet<OsString> =
        names.iter().flat_map(|n| n.iter().rev().skip(1)).map(OsString::from).collect();
    let mut sorted_last: Vec<OsString> = last
        .iter()
        .chain(&intermediate)
        .cloned()
        .chain(BARE_MARKERS.iter().chain(&["config"]).map(OsString::from))
        .collect();
    sorted_last.sort();
    sorted_last.dedup();
    let mut guard = memo.and_then(|m| m.inner.lock().ok());
    let old = match guard.as_deref_mut() {
        Some(m) if m.last == sorted_last => std::mem::take(&mut m.dirs),
        _ => HashMap::new(),
    };
    let old_len = old.len();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let mut walker = Walker {
        p,
        names,
        last,
        intermediate,
        areas: &areas,
        writable: &writable,
        out: &mut out,
        dirs: 0,
        max_dirs,
        stopped: false,
        too_deep: None,
        config_reads: (0, 0),
        includes: 0,
        include_work: 0,
        configs_stopped: false,
        hooks_stopped: None,
        old,
        new: HashMap::new(),
        fresh: 0,
        now,
        home: home.clone(),
        repositories: Vec::new(),
        config_refs: HashMap::new(),
        existing: HashSet::new(),
        who: None,
        trace: None,
        home_resolved: HashMap::new(),
        memo,
    };
    // The writable areas that are, or lie inside, a repository (see below): known before the
    // walk, which refuses bare layouts beneath them.
    let area_repos: Vec<PathBuf> = writable
        .iter()
        .filter(|_| !p.git_entries().is_empty())
        .filter(|a| std::fs::symlink_metadata(a.join(".git")).is_ok() || in_a_repository(a))
        .cloned()
        .collect();
    walker.repositories.extend(area_repos.iter().cloned());
    // Nothing to look for (the list is off): no walk at all.
    let looking = !walker.last.is_empty() || !p.git_entries().is_empty();
    for area in writable.iter().filter(|_| looking) {
        walker.walk(area);
    }
    // The running program (the CLI, or the embedding program its helper re-executes) inside a
    // writable area: the workload could replace what the user runs next, outside any sandbox
    // (a red team replaced `./target/release/sandbox`, the README's own example). Bound
    // read-only like an entry, whatever the list says.
    if let Some(exe) = running_program() {
        if writable.iter().any(|a| exe.starts_with(a)) {
            walker.entry(&exe);
        }
    }
    if let Some(m) = guard.as_deref_mut() {
        m.changed |= m.last != sorted_last || walker.fresh > 0 || walker.new.len() != old_len;
        m.last = sorted_last;
        m.dirs = std::mem::take(&mut walker.new);
    }
    drop(guard);
    // Dotfile managers link the HOME's start-up files into a repository (`~/.bashrc ->
    // .dotfiles/bashrc`), which a user may make the workspace (`cd ~/.dotfiles && sandbox
    // run`): what such a link leads to is protected where it lies in a writable area, existing
    // (bound read-only) or not (an optional `~/.bash_local -> dotfiles/bash_local` that
    // `.bashrc` sources when present: refused creation). Red team AY, 6 December: the workload
    // wrote `bashrc`, `gitconfig` and `config/tmux/tmux.conf` of the dotfiles workspace, and
    // the host's next terminal ran them. The shell start-up files are read for the files they
    // run in turn (`~/miniconda3/bin/conda`, `. ~/.bash_local`, `PATH=~/tools/bin:$PATH`).
    // (First: they also resolve the listed entries, which the HOME entries below need.)
    let real_home = home.as_ref().map(|h| resolve(h).0);
    if let Some(real) = &real_home {
        walker.home_readers(real, &p.home_entries(), memo);
    }
    // The HOME entries, against the caller's real HOME: wherever the workload gets it as its
    // HOME, and wherever else an entry can be written (the workspace or a writable root
    // covering the real HOME, `cd ~ && sandbox run`, or host write): the host's sshd and git
    // read them whatever HOME the workload had (an attack on the first version, which applied
    // them with the real HOME only).
    if let Some(home) = &home {
        let writable_at = |e: &Path| {
            profile.path_value(Axis::Write, e) != Access::Deny
                || profile.areas().any(|(a, _, w)| w != Access::Deny && a.starts_with(e))
        };
        for rel in p.home_entries() {
            if rel == ".*" {
                // Every hidden entry, where the HOME's own entries are writable (a workspace or
                // root covering it, or host write): each existing one bound read-only (the
                // first [`MAX_HIDDEN_IN_HOME`]; past them the spawn is refused), and no new one
                // made (`CreationGuard::hidden_in`).
                let (real, _) = resolve(home);
                if writable_at(&home.join(".x")) || writable_at(&real.join(".x")) {
                    use std::os::unix::ffi::OsStrExt as _;
                    // A writable area the profile names inside a hidden entry (a root at
                    // `~/.cache/pip`) stays the profile's: the entry holding it is not bound,
                    // new hidden entries are not refused, and the report says so.
                    let hidden = |p: &Path| {
                        p.strip_prefix(&real)
                            .ok()
                            .and_then(|r| r.components().next())
                            .is_some_and(|first| first.as_os_str().as_bytes().starts_with(b"."))
                    };
                    let inner: Vec<PathBuf> = profile
                        .areas()
                        .filter(|(a, _, w)| *w != Access::Deny && hidden(a))
                        .map(|(a, _, _)| a.to_path_buf())
                        .collect();
                    let mut count = 0;
                    for e in std::fs::read_dir(&real).into_iter().flatten().flatten() {
                        if !e.file_name().as_bytes().starts_with(b".") {
                            continue;
                        }
                        if inner.iter().any(|a| a.starts_with(e.path())) {
                            continue;
                        }
                        count += 1;
                        if count > MAX_HIDDEN_IN_HOME {
                            walker.out.refused.get_or_insert_with(|| {
                                format!(
                                    "protected_paths: {} holds more than {MAX_HIDDEN_IN_HOME} hidden entries, which \
                                     ~/.* protects; say \"except\": [\"~/.*\"] to protect the listed ones only",
                                    real.display()
                                )
                            });
                            break;
                        }
                        walker.entry(&e.path());
                    }
                    if inner.is_empty() {
                        walker.out.hidden_in.push(real);
                    } else {
                        walker.out.narrowed.push(format!(
                            "~/.*: {} is an area of the profile inside a hidden entry of the HOME: that entry is not \
                             bound read-only and new hidden entries of {} are not refused (the listed ~/ entries hold)",
                            inner[0].display(),
                            real.display()
                        ));
                    }
                }
                continue;
            }
            let e = home.join(rel);
            let resolved = || match walker.home_resolved.get(rel).filter(|_| real_home.as_ref() == Some(home)) {
                Some(r) => r.clone(),
                None => resolve(&e).0,
            };
            if c.home == Home::RealHome || writable_at(&e) || writable_at(&resolved()) {
                walker.entry(&e);
            }
        }
    }
    // The caller's global git configuration, which the host's git reads in every repository:
    // the files it includes (`[include] path = ~/dotfiles/gitconfig`, a common layout) and the
    // absolute or `~/` hooks paths it sets are entries like a repository's (the files
    // themselves are HOME entries above).
    if let Some(home) = home.as_ref().filter(|_| looking) {
        let parts = p.git_entries();
        // Relative paths in it (`core.hooksPath = .githooks`, `filter.x.clean = sh tools/f.sh`)
        // git takes in the repository it runs in: each is placed in every work tree the scan
        // found (a red team's global `core.hooksPath = .githooks` ran the workload's hooks at
        // the host's next commit, 4 December, night).
        // Without a repository, only its absolute and `~/` paths can be placed.
        let roots: Vec<Option<PathBuf>> = if walker.repositories.is_empty() {
            vec![None]
        } else {
            walker.repositories.iter().cloned().map(Some).collect()
        };
        for root in &roots {
            let mut seen = SeenConfigs::default();
            for global in [home.join(".gitconfig"), home.join(".config/git/config")] {
                if !parts.is_empty() {
                    walker.config_file(&global, root.as_deref(), &parts, 0, &mut seen);
                }
            }
        }
    }
    // A workspace (or writable root) that is, or lies inside, a repository. `git init` at its
    // root would make the host's next git command there find the new repository first and run
    // what its config says (`core.fsmonitor` at `git status`): `.git` at the area's root is
    // refused creation. Git also takes a directory with `HEAD`, `objects/` and `refs/` for a
    // bare repository, and falls back to it when the `.git` there is broken (a `.git/HEAD`
    // overwritten, an attack on the first version, which looked only at areas inside a
    // repository): `HEAD` at the root is refused too, or bound read-only when it exists,
    // unless the root is a git directory itself (whose `HEAD` git writes).
    for area in &area_repos {
        let holds_git = std::fs::symlink_metadata(area.join(".git")).is_ok();
        if !holds_git {
            walker.entry(&area.join(".git"));
        }
        let is_gitdir = ["objects", "refs"].iter().all(|d| area.join(d).is_dir());
        if !is_gitdir {
            walker.entry(&area.join("HEAD"));
        }
    }
    // Beneath every work tree found and every such area, no new `.git` at any depth (a nested
    // repository made during a run, staged as a submodule in the writable index, is entered by
    // the host's `git status` at the work tree's root), nor a `HEAD` outside a `.git` (a bare
    // layout in a subdirectory is the repository of the host's git run there): see
    // `CreationGuard::no_new_repositories`.
    let mut repositories = std::mem::take(&mut walker.repositories);
    repositories.sort();
    repositories.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    let mut kept_set: HashSet<PathBuf> = HashSet::new();
    for r in repositories {
        if !r.ancestors().any(|a| kept_set.contains(a)) {
            kept_set.insert(r.clone());
            kept.push(r);
        }
    }
    walker.out.repositories = kept;
    // Every bound is judged here, after the last read of configuration (the caller's global
    // config above included: a bound first reached there left its hooks path unprotected, and
    // the spawn went ahead, red team AN, 5 December).
    let (stopped, too_deep, configs_stopped) = (walker.stopped, walker.too_deep.take(), walker.configs_stopped);
    if let Some(hooks) = walker.hooks_stopped.take() {
        out.refused = Some(format!(
            "protected_paths: the hooks directory {} holds more than {MAX_HOOK_NAMES} names, the scan's bound: a \
             hook beyond it that links to a file of the workspace could be neither bound read-only nor refused, so \
             nothing runs; remove names from it, narrow the workspace, or turn the list off (protected_paths)",
            hooks.display()
        ));
    }
    if stopped {
        let n = max_dirs;
        out.refused = Some(format!(
            "protected_paths: the writable areas hold more than {n} directories, the scan's bound: protected \
             entries beyond it could be neither bound read-only nor refused, so nothing runs; remove directories, \
             narrow the workspace, or turn the list off (protected_paths)"
        ));
    }
    if let Some(deep) = too_deep {
        let shown: String = deep.to_string_lossy().chars().take(120).collect();
        out.refused = Some(format!(
            "protected_paths: the writable areas hold a directory whose path is longer than {MAX_DIR_PATH} bytes \
             ({shown}…): protected entries beneath it could not be bound by name, so nothing runs; remove or \
             shorten it, narrow the workspace, or turn the list off (protected_paths)"
        ));
    }
    if configs_stopped {
        out.refused = Some(format!(
            "protected_paths: the git configuration in reach includes more than the scan reads ({MAX_CONFIG_FILES} \
             files, {} MiB, {MAX_INCLUDES} includes, {MAX_INCLUDE_WORK} path components of includes): what it \
             names beyond could be neither bound read-only nor refused, so nothing runs; remove the includes, \
             narrow the workspace, or turn the list off (protected_paths)",
            MAX_CONFIG_BYTES >> 20
        ));
    }
    if c.host_write != Access::Deny {
        out.narrowed.push(String::from(
            "host write is not deny: protected names outside the workspace and roots are refused creation, but \
             existing ones there are not looked for",
        ));
    }
    out.existing.sort();
    out.existing.dedup();
    out.missing.sort();
    out.missing.dedup();
    out.no_new_entries.sort();
    out.no_new_entries.dedup();
    // The directories between each entry and the innermost writable area holding it (or the
    // top-level host entry, itself a mount), shallow first.
    let mut pins: Vec<PathBuf> = Vec::new();
    let mut pinned: HashSet<PathBuf> = HashSet::new();
    for path in out.existing.iter().map(|(p, _)| p).chain(&out.missing) {
        let stop = profile
            .areas()
            .filter(|(r, _, w)| *w != Access::Deny && path.starts_with(r))
            .map(|(r, _, _)| r.components().count())
            .max()
            .unwrap_or(2)
            .max(2);
        for anc in path.ancestors().skip(1).take_while(|a| a.components().count() > stop) {
            if !pinned.contains(anc) && anc.is_dir() && !areas.iter().any(|a| a == anc) {
                pinned.insert(anc.to_path_buf());
                pins.push(anc.to_path_buf());
            }
        }
    }
    pins.sort_by_key(|p| (p.components().count(), p.clone()));
    out.pins = pins;
    // Each entry and pin is a mount of the container, or a rule of the guard.
    if out.existing.len() + out.missing.len() + out.pins.len() > MAX_ENTRIES {
        out.refused = Some(format!(
            "protected_paths: the writable areas hold more than {MAX_ENTRIES} protected entries and the directories \
             above them (git directories, hooks, configs and the files they name), each a mount or a rule of the \
             run: so many could not be set up in reasonable time, so nothing runs; remove repositories, narrow the \
             workspace, or turn the list off (protected_paths)"
        ));
    }
    record_identities(&mut out);
    // What the binds come to: a mount beneath k pins is made 2^k times.
    let pinned: HashSet<&Path> = out.pins.iter().map(PathBuf::as_path).collect();
    let copies = out.pins.iter().chain(out.existing.iter().map(|(p, _)| p)).fold(0u64, |sum, m| {
        let above = m.ancestors().skip(1).filter(|a| pinned.contains(a)).count();
        sum.saturating_add(1u64 << above.min(62))
    });
    if copies > MAX_MOUNT_COPIES {
        out.refused = Some(format!(
            "protected_paths: protected entries lie beneath so many nested directories (pinned so that they cannot \
             be moved away) that the run's mounts would come to {copies}, more than {MAX_MOUNT_COPIES}: nothing runs; \
             remove the deep entry (a `.git`, a config or what an include names), narrow the workspace, or turn the \
             list off (protected_paths)"
        ));
    }
    out
}

/// Fills `out.identities` (see [`ProtectScan::identities`]): each existing entry, pin and
/// existing root by [`super::object_identity`]. An entry gone since it was found is refused
/// creation instead of bound, a pin gone is dropped (nothing beneath it to pin), and anything
/// else (a component that is a symlink now, an error) refuses the spawn: the path changed while
/// the spawn was being prepared, and binding it by path would bind whatever it leads to.
fn record_identities(out: &mut ProtectScan) {
    use std::io::ErrorKind::NotFound;
    let mut failed: Option<String> = None;
    let mut fail = |what: &str, p: &Path, e: std::io::Error| {
        failed.get_or_insert_with(|| {
            format!("{what} {}: changed while the spawn was prepared ({e}); not bound by its name", p.display())
        });
    };
    let mut gone: Vec<PathBuf> = Vec::new();
    for (p, _) in &out.existing {
        match super::object_identity(p) {
            Ok((dev, ino)) => out.identities.push((p.clone(), dev, ino)),
            Err(e) if e.kind() == NotFound => gone.push(p.clone()),
            Err(e) => fail("protected entry", p, e),
        }
    }
    out.existing.retain(|(p, _)| !gone.contains(p));
    out.missing.extend(gone);
    out.missing.sort();
    out.missing.dedup();
    let mut kept = Vec::new();
    for p in std::mem::take(&mut out.pins) {
        match super::object_identity(&p) {
            Ok((dev, ino)) => {
                out.identities.push((p.clone(), dev, ino));
                kept.push(p);
            }
            Err(e) if e.kind() == NotFound => {}
            Err(e) => fail("pinned ancestor of a protected entry", &p, e),
        }
    }
    out.pins = kept;
    for (p, kind) in &out.roots {
        if *kind == RootKind::Missing {
            continue;
        }
        match super::object_identity(p) {
            Ok((dev, ino)) => out.identities.push((p.clone(), dev, ino)),
            Err(e) => fail("additional root", p, e),
        }
    }
    if out.refused.is_none() {
        out.refused = failed;
    }
}

/// Whether a proper ancestor of `dir` holds `.git` (a repository git would find from `dir`).
fn in_a_repository(dir: &Path) -> bool {
    dir.ancestors().skip(1).any(|a| std::fs::symlink_metadata(a.join(".git")).is_ok())
}

/// `path` as the kernel resolves it, and the symlinks met on the way: every existing component
/// resolved (a symlinked ancestor of a hooks path or a HOME names another directory than its
/// spelling, and binds and guard paths are real paths), the last one kept when it is a symlink
/// itself ([`Walker::entry`] handles that), the missing rest cleaned lexically. A missing
/// component followed by `..` is returned among the links: once created (as a symlink), it
/// would decide where the path leads.
fn resolve(path: &Path) -> (PathBuf, Vec<PathBuf>) {
    use std::path::Component;
    let mut links = Vec::new();
    let mut out = PathBuf::from("/");
    let mut rest: std::collections::VecDeque<PathBuf> =
        path.components().map(|c| PathBuf::from(c.as_os_str())).collect();
    let mut hops = 0;
    let mut missing = false;
    while let Some(c) = rest.pop_front() {
        match c.components().next() {
            Some(Component::RootDir) => out = PathBuf::from("/"),
            Some(Component::CurDir) | None | Some(Component::Prefix(_)) => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::Normal(name)) => {
                let next = out.join(name);
                if missing {
                    out = next;
                    continue;
                }
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() && !rest.is_empty() && hops < 40 => {
                        hops += 1;
                        links.push(next.clone());
                        let Ok(target) = std::fs::read_link(&next) else {
                            out = next;
                            continue;
                        };
                        // Relative to the link's directory, which `out` is; an absolute
                        // target starts with the root.
                        for t in target.components().rev() {
                            rest.push_front(PathBuf::from(t.as_os_str()));
                        }
                    }
                    Ok(_) => out = next,
                    Err(_) => {
                        if rest.iter().any(|r| r.as_os_str() == "..") {
                            links.push(next.clone());
                        }
                        missing = true;
                        out = next;
                    }
                }
            }
        }
    }
    (out, links)
}

/// The project of an agent's JSON configuration that starts commands: the directory holding
/// The packages a command line runs through npx and its kin ([`Walker::npx_files`]): the first
/// word after `npx`, `bunx`, `pnpx`, `pnpm dlx`, `yarn dlx`, `npm exec` or `bun x` that is no
/// option, and every `--package`/`-p` value, each without its version (`pkg@1`, `@s/pkg@1`).
fn npx_packages(command: &str) -> Vec<String> {
    let words: Vec<&str> = command
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|'))
        .map(|w| w.trim_matches(['"', '\'']))
        .collect();
    let unversioned = |spec: &str| -> String {
        let (scope, rest) = if let Some(r) = spec.strip_prefix('@') { ("@", r) } else { ("", spec) };
        format!("{scope}{}", rest.split('@').next().unwrap_or(rest))
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].rsplit('/').next().unwrap_or(words[i]);
        // The subcommand after the tool's own options (`pnpm --silent dlx`, `yarn -s dlx`).
        let sub = (i + 1..words.len()).find(|&k| !words[k].starts_with('-'));
        let start = match (w, sub.map(|k| words[k])) {
            ("npx" | "bunx" | "pnpx", _) => Some(i + 1),
            ("pnpm" | "yarn", Some("dlx")) | ("npm", Some("exec" | "x")) | ("bun", Some("x")) => sub.map(|k| k + 1),
            _ => None,
        };
        if let Some(mut j) = start {
            while j < words.len() {
                let a = words[j];
                if let Some(p) = a.strip_prefix("--package=") {
                    out.push(unversioned(p));
                } else if (a == "-p" || a == "--package") && j + 1 < words.len() {
                    out.push(unversioned(words[j + 1]));
                    j += 1;
                } else if a == "--" {
                } else if !a.starts_with('-') && !a.is_empty() {
                    out.push(unversioned(a));
                    break;
                }
                j += 1;
            }
        }
        i += 1;
    }
    out.retain(|p| !p.is_empty() && !p.starts_with('.') && !p.contains(['$', '`', '*']));
    out
}

/// Whether `name` is pre-commit's configuration or one of lefthook's in YAML.
fn is_hook_yaml(name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else { return false };
    let stem = name.trim_start_matches('.');
    name == ".pre-commit-config.yaml"
        || ((stem.starts_with("lefthook.") || stem.starts_with("lefthook-local."))
            && (stem.ends_with(".yml") || stem.ends_with(".yaml")))
}

/// Where the symlink `path` leads, followed to the end (at most 40 links): its parts resolved
/// as [`resolve`] does, a missing part kept as named; and the links on the way after the first
/// (`dotfiles/bashrc` of `~/.bashrc -> dotfiles/bashrc -> hosts/laptop/bashrc`).
fn link_end(path: &Path) -> (PathBuf, Vec<PathBuf>) {
    let mut at = path.to_path_buf();
    let mut hops = Vec::new();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                if at != path {
                    hops.push(at.clone());
                }
                let Ok(target) = std::fs::read_link(&at) else { break };
                let joined =
                    if target.is_absolute() { target } else { at.parent().unwrap_or(Path::new("/")).join(target) };
                let (resolved, links) = resolve(&joined);
                hops.extend(links);
                at = resolved;
            }
            _ => break,
        }
    }
    (at, hops)
}

/// The directory of a word that holds a pattern or an expansion (one of `marks`): its
/// components before the first that holds one (`env.d` of `env.d/*.sh`), where there are any.
fn pattern_dir(word: &str, marks: &[char]) -> Option<PathBuf> {
    if !word.contains(marks) {
        return None;
    }
    let dir: PathBuf =
        Path::new(word).components().take_while(|c| !c.as_os_str().to_string_lossy().contains(marks)).collect();
    (!dir.as_os_str().is_empty()).then_some(dir)
}

/// The directory above the last `bin` of `path` (`~/venvs/tools` of
/// `~/venvs/tools/bin/activate`), where it has one: a virtual environment's or a toolchain's
/// root, whose libraries run with what its `bin` runs.
fn above_bin(path: &Path) -> Option<PathBuf> {
    let comps: Vec<_> = path.components().collect();
    let at = comps.iter().rposition(|c| c.as_os_str() == "bin")?;
    let above: PathBuf = comps[..at].iter().collect();
    above.components().any(|c| matches!(c, std::path::Component::Normal(_))).then_some(above)
}

/// The words of a shell line in a position that runs or reads a file/// The words of a shell line in a position that runs or reads a file ([`Walker::script_file`]
/// for a HOME's start-up files): the program of each command (after assignments and `exec`,
/// `eval`, `command`, `builtin`, `then`, `do`, `else`, `if`, `!`), the first word inside `$(…)`,
/// backquotes and `(`, and the file `.` or `source` reads; quotes removed.
fn run_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let separated = line.replace("$(", ";").replace(['`', '(', ')', '{', '}'], ";");
    for statement in separated.split([';', '&', '|']) {
        let mut words = statement.split_whitespace().map(|w| w.trim_matches(['"', '\'']));
        let mut word = words.next();
        while let Some(w) = word {
            let skip =
                matches!(w, "exec" | "eval" | "command" | "builtin" | "then" | "do" | "else" | "if" | "!" | "export")
                    || (w.contains('=') && !w.starts_with(['/', '~', '.']));
            if !skip {
                break;
            }
            word = words.next();
        }
        match word {
            Some("." | "source") => {
                if let Some(file) = words.next() {
                    out.push(file.to_owned());
                }
            }
            Some(program) if !program.is_empty() && !program.starts_with('-') => out.push(program.to_owned()),
            _ => {}
        }
    }
    out.retain(|w| !w.contains(['*', '?', '[', '$']));
    out
}

/// A line of a shell script ([`Walker::script_file`]) with what the scan knows put in: the/// A line of a shell script ([`Walker::script_file`]) with what the scan knows put in: the
/// variables assigned before (`$d`, `${d}`), `$HOME`/`${HOME}` (the real HOME), and, in a
/// `.envrc` (`relative`), `${DIRENV_DIR#-}`, `$DIRENV_DIR`, `$PWD`, `${PWD}` and `$(pwd)` as the
/// project's directory (`.`) and `$(direnv_layout_dir)` as `.direnv`.
fn expand_script_words(
    line: &str,
    vars: &HashMap<String, String>,
    home: Option<&Path>,
    who: &(Option<String>, Option<String>),
    relative: bool,
) -> String {
    let mut out = line.to_owned();
    if relative {
        for (from, to) in [
            ("${DIRENV_DIR#-}", "."),
            ("$DIRENV_DIR", "."),
            ("${PWD}", "."),
            ("$PWD", "."),
            ("$(pwd)", "."),
            ("$(pwd -P)", "."),
            ("$(direnv_layout_dir)", ".direnv"),
        ] {
            out = out.replace(from, to);
        }
    }
    // The caller's user and host, as the host's shell has them (`.envrc.$(whoami)`).
    let (user, host) = who;
    if let Some(user) = user {
        for from in ["${USER}", "$USER", "${LOGNAME}", "$LOGNAME", "$(whoami)", "$(id -un)", "`whoami`"] {
            out = out.replace(from, user);
        }
    }
    if let Some(host) = host {
        for from in ["${HOSTNAME}", "$HOSTNAME", "$(hostname)", "$(hostname -s)", "$(uname -n)", "`hostname`"] {
            out = out.replace(from, host.split('.').next().filter(|_| from.contains("-s")).unwrap_or(host));
        }
    }
    if let Some(home) = home.and_then(Path::to_str) {
        out = out.replace("${HOME}", home).replace("$HOME", home);
    }
    for (name, value) in vars {
        out = out.replace(&format!("${{{name}}}"), value);
        // `$name` not followed by more of a name.
        let mut replaced = String::with_capacity(out.len());
        let mut rest = out.as_str();
        let pattern = format!("${name}");
        while let Some(at) = rest.find(&pattern) {
            let after = &rest[at + pattern.len()..];
            replaced.push_str(&rest[..at]);
            if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                replaced.push_str(&pattern);
            } else {
                replaced.push_str(value);
            }
            rest = after;
        }
        replaced.push_str(rest);
        out = replaced;
    }
    out
}

/// `.mcp.json`, `.devcontainer.json`, `opencode.json` or `opencode.jsonc`, or the one holding
/// the configuration directory for `.claude/settings.json`, `.claude/settings.local.json`,
/// `.cursor/mcp.json`, `.vscode/mcp.json`, `.vscode/tasks.json`,
/// `.devcontainer/devcontainer.json`, `.gemini/settings.json`, `.zed/settings.json`,
/// `.zed/tasks.json`, `.continue/config.json`, `.roo/mcp.json`, `.amazonq/mcp.json`,
/// `.kilocode/mcp.json`, `.qwen/settings.json`, `.kiro/settings/mcp.json`,
/// `.junie/mcp/mcp.json`, `.windsurf/hooks.json`, `.factory/{settings,hooks,mcp}.json`,
/// `.augment/settings.json` and any `.github/hooks/*.json` (and `crush.json`, `.crush.json`
/// beside the project).
fn agent_project(file: &Path) -> Option<PathBuf> {
    let name = file.file_name()?.to_str()?;
    let dir = file.parent()?;
    if [".mcp.json", ".devcontainer.json", "opencode.json", "opencode.jsonc", "crush.json", ".crush.json"]
        .contains(&name)
    {
        return Some(dir.to_path_buf());
    }
    let in_dir = |d: &str| dir.file_name() == Some(std::ffi::OsStr::new(d));
    // `.kiro/settings/mcp.json`, `.junie/mcp/mcp.json`.
    if (in_dir("settings") || in_dir("mcp")) && name == "mcp.json" {
        let tool = dir.parent()?;
        let known = (in_dir("settings") && tool.file_name() == Some(std::ffi::OsStr::new(".kiro")))
            || (in_dir("mcp") && tool.file_name() == Some(std::ffi::OsStr::new(".junie")));
        return known.then(|| tool.parent().map(Path::to_path_buf))?;
    }
    let known = (in_dir(".claude") && (name == "settings.json" || name == "settings.local.json"))
        || ((in_dir(".cursor") || in_dir(".roo") || in_dir(".amazonq") || in_dir(".kilocode")) && name == "mcp.json")
        || (in_dir(".vscode") && (name == "mcp.json" || name == "tasks.json"))
        || (in_dir(".devcontainer") && name == "devcontainer.json")
        || ((in_dir(".gemini") || in_dir(".qwen")) && name == "settings.json")
        || (in_dir(".zed") && (name == "settings.json" || name == "tasks.json"))
        || (in_dir(".continue") && name == "config.json")
        || (in_dir(".windsurf") && name == "hooks.json")
        || (in_dir(".factory") && (name == "settings.json" || name == "hooks.json" || name == "mcp.json"))
        || (in_dir(".augment") && name == "settings.json");
    // `.github/hooks/<any>.json` (GitHub Copilot's hooks): the project is above `.github`.
    if in_dir("hooks") && dir.parent().and_then(Path::file_name) == Some(std::ffi::OsStr::new(".github")) {
        return name.ends_with(".json").then(|| dir.parent()?.parent().map(Path::to_path_buf)).flatten();
    }
    known.then(|| dir.parent().map(Path::to_path_buf)).flatten()
}

/// The top of the Mercurial or Sapling repository whose config `file` is (`.hg/hgrc`,
/// `.hg/hgrc-not-shared`, `.sl/config`).
fn hg_repository(file: &Path) -> Option<PathBuf> {
    let name = file.file_name()?.to_str()?;
    let dir = file.parent()?;
    let dir_name = dir.file_name()?.to_str()?;
    let known =
        (dir_name == ".hg" && (name == "hgrc" || name == "hgrc-not-shared")) || (dir_name == ".sl" && name == "config");
    known.then(|| dir.parent().map(Path::to_path_buf)).flatten()
}

/// The agent configurations inside a protected directory (`.cursor`, `.vscode`, `.devcontainer`,
/// `.gemini`, `.zed`, `.continue`, `.roo`, `.amazonq`, `.kiro`, `.qwen`, `.kilocode`, `.junie`) whose commands
/// [`Walker::json_commands`] reads.
const AGENT_FILES_IN_DIRS: &[&str] = &[
    "mcp.json",
    "tasks.json",
    "devcontainer.json",
    "settings.json",
    "config.json",
    "settings/mcp.json",
    "mcp/mcp.json",
    "hooks.json",
];

/// JSON with comments and trailing commas (VS Code's and dev containers' files) as JSON:
/// `//` and `/* */` comments outside strings removed, a comma before `}` or `]` dropped.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
            }
            ('}' | ']', _) => {
                // A trailing comma before the close (whitespace between) is dropped.
                let end = out.trim_end().len();
                if out[..end].ends_with(',') {
                    out.replace_range(end - 1..end, "");
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn split(names: &[String]) -> Vec<Vec<String>> {
    names.iter().map(|n| n.split('/').filter(|c| !c.is_empty()).map(str::to_owned).collect()).collect()
}

struct Walker<'a> {
    p: &'a Protection,
    names: Vec<Vec<String>>,
    /// The last component of every name pattern: an entry is compared in full only when its
    /// name is one of these (the walk's per-entry cost is one set lookup).
    last: HashSet<OsString>,
    /// The other components of multi-part name patterns.
    intermediate: HashSet<OsString>,
    areas: &'a [PathBuf],
    /// The areas whose write access is not `deny`.
    writable: &'a [PathBuf],
    out: &'a mut ProtectScan,
    dirs: usize,
    max_dirs: usize,
    stopped: bool,
    /// The first directory the walk met whose path is longer than [`MAX_DIR_PATH`].
    too_deep: Option<PathBuf>,
    /// How many config files this scan read, and how many bytes of them.
    config_reads: (usize, usize),
    /// How many includes this scan followed, and their path components.
    includes: usize,
    include_work: usize,
    /// Whether a bound of the config reads was reached ([`MAX_CONFIG_FILES`]).
    configs_stopped: bool,
    /// A hooks directory holding more than [`MAX_HOOK_NAMES`] names, if one was met.
    hooks_stopped: Option<PathBuf>,
    /// The memo's listings from earlier scans, and the ones of this scan.
    old: HashMap<PathBuf, Listing>,
    new: HashMap<PathBuf, Listing>,
    /// How many listings this scan read and recorded in `new`.
    fresh: usize,
    /// Seconds since the epoch when the scan started (for the racy check).
    now: i64,
    /// The caller's real HOME, canonical (git expands `~/` in paths against it).
    home: Option<PathBuf>,
    /// The work trees found (directories holding `.git`), and the writable areas inside a
    /// repository.
    repositories: Vec<PathBuf>,
    /// What each config file read in this scan points at, by the file's identity.
    config_refs: HashMap<FileId, ConfigRefs>,
    /// The paths in `out.existing` (looked up for every directory the walk meets).
    existing: HashSet<PathBuf>,
    /// The caller's user and host names ([`expand_script_words`]), looked up once per scan.
    who: Option<(Option<String>, Option<String>)>,
    /// While the HOME's readers run for a record ([`HomeRecord`]): what they look up and find.
    trace: Option<HomeTrace>,
    /// The real path of each listed `~/` entry, by its name relative to the HOME
    /// ([`Walker::home_readers`]).
    home_resolved: HashMap<String, PathBuf>,
    /// The memo this scan reuses and refreshes, if any (for the user name: Linux only).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    memo: Option<&'a ScanMemo>,
}

/// A file's identity: its device and inode numbers.
type FileId = (u64, u64);

/// The config files one repository's walk of its configuration took, by identity with the
/// real directory its relative includes are taken from (a file named by many paths
/// through symlinked directories is taken once; one hard-linked into another directory is
/// taken there too, since its relative includes name other files there).
#[derive(Default)]
struct SeenConfigs {
    /// With the shallowest depth each was taken at: one met again nearer the top is taken
    /// again (its includes were cut at the depth bound the first time).
    files: HashMap<(FileId, PathBuf), usize>,
}

impl Walker<'_> {
    fn walk(&mut self, dir: &Path) {
        if self.dirs >= self.max_dirs {
            self.stopped = true;
            return;
        }
        if dir.as_os_str().len() > MAX_DIR_PATH {
            self.too_deep.get_or_insert_with(|| dir.to_path_buf());
            return;
        }
        self.dirs += 1;
        let Some(listing) = self.listing(dir) else { return };
        for name in &listing.hits {
            let path = dir.join(name);
            if self.last.contains(name) && self.matches(&path) {
                self.entry(&path);
                if let Some(project) = agent_project(&path) {
                    self.json_commands(&path, &project);
                } else if let Some(root) = hg_repository(&path) {
                    let mut seen = HashSet::new();
                    self.hg_config(&path, &root, 0, &mut seen);
                } else if name == ".envrc" {
                    self.envrc(&path);
                } else if is_hook_yaml(name) || name == ".yarnrc.yml" {
                    self.yaml_commands(&path, dir);
                } else if name == ".npmrc" {
                    self.npmrc(&path, dir);
                } else if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                    for file in AGENT_FILES_IN_DIRS {
                        let inside = path.join(file);
                        if let Some(project) = agent_project(&inside) {
                            self.json_commands(&inside, &project);
                        }
                    }
                    // GitHub Copilot's hooks: every JSON file of `.github/hooks` (the first
                    // [`MAX_HOOK_NAMES`]; past them the spawn is refused).
                    if path.ends_with(".github/hooks") {
                        for (n, e) in std::fs::read_dir(&path).into_iter().flatten().flatten().enumerate() {
                            if n >= MAX_HOOK_NAMES {
                                self.hooks_stopped.get_or_insert_with(|| path.clone());
                                break;
                            }
                            if let Some(project) = agent_project(&e.path()) {
                                self.json_commands(&e.path(), &project);
                            }
                        }
                    }
                }
            } else if name == ".git" {
                self.repositories.push(dir.to_path_buf());
                self.git(&path);
            }
            if self.intermediate.contains(name) && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) {
                // `.claude -> elsewhere`: `.claude/settings.json` is a file of `elsewhere`,
                // which the walk (never following symlinks) does not enter and the guard knows
                // by its real path only: the link is refused re-creation and its target bound
                // read-only as a whole where it exists (narrower than the names beneath it).
                self.entry(&path);
                if let Ok(target) = std::fs::canonicalize(&path) {
                    if target.is_dir() {
                        self.out.narrowed.push(format!(
                            "{} is a symlink on the way to protected names: its target {} is read-only as a whole",
                            path.display(),
                            target.display()
                        ));
                    }
                }
            }
        }
        // A bare repository (a git directory not named `.git`): its hooks run on the host's
        // `git push` to it. Found as git finds one (`HEAD`, `objects/`, `refs/`), or by its
        // config (a `[core]` section with `repositoryformatversion`): the config is bound
        // read-only once found, while the others may be renamed for a run to hide the
        // repository from the next spawn's scan (an attack on the first version).
        let has = |m: &str| listing.hits.iter().any(|h| h == m);
        let by_layout = BARE_MARKERS.iter().all(|m| has(m)) && dir.join("objects").is_dir();
        // A `HEAD` that exists beneath a work tree (a test fixture, say) is one step from a
        // bare repository there: `objects/` and `refs/` beside it (or a `commondir`, which
        // stands for both) are refused creation (a new `HEAD` is refused by the guard).
        if has("HEAD") && !by_layout && self.repositories.iter().any(|w| dir.starts_with(w)) {
            for m in ["objects", "refs", "commondir"] {
                if !has(m) {
                    self.out.missing.push(dir.join(m));
                }
            }
        }
        if by_layout || (has("config") && is_git_config(&dir.join("config"))) {
            let parts = self.p.git_entries();
            if !parts.is_empty() {
                self.gitdir(dir, dir, &parts, 0);
            }
        }
        for name in &listing.subdirs {
            let path = dir.join(name);
            if !self.areas.contains(&path) && name != ".git" && !self.existing.contains(&path) {
                self.walk(&path);
            }
        }
    }

    /// The directory's listing: the memo's while the directory is unchanged, else read now.
    fn listing(&mut self, dir: &Path) -> Option<Listing> {
        // Stamped by path only where the memo has a listing to compare (a directory read now is
        // stamped through its descriptor below).
        if let Some(old) = self.old.get(dir) {
            if stamp(dir) == Some(old.stamp) {
                let listing = old.clone();
                self.new.insert(dir.to_path_buf(), listing.clone());
                return Some(listing);
            }
        }
        let (stamp, entries) = match read_listing(dir) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                self.unreadable(dir, &e);
                return None;
            }
        };
        let mut hits = Vec::new();
        let mut subdirs = Vec::new();
        for (name, is_dir) in entries {
            if self.last.contains(&name)
                || self.intermediate.contains(&name)
                || name == ".git"
                || name == "config"
                || BARE_MARKERS.iter().any(|m| name == *m)
            {
                hits.push(name.clone());
            }
            if is_dir {
                subdirs.push(name);
            }
        }
        subdirs.sort();
        let listing = Listing { stamp, hits, subdirs };
        // A directory changed in the last two seconds may change again within the same tick
        // of its timestamps: it is read again next time.
        let recent = |t: (i64, i64)| t.0 >= self.now - 2;
        if !recent(listing.stamp.mtime) && !recent(listing.stamp.ctime) {
            self.new.insert(dir.to_path_buf(), listing.clone());
            self.fresh += 1;
        }
        Some(listing)
    }

    /// The caller's user and host names, as the host's shell has them, looked up on first use.
    fn who(&mut self) -> (Option<String>, Option<String>) {
        if let Some(who) = &self.who {
            return who.clone();
        }
        #[cfg(target_os = "linux")]
        let (user, host) = {
            let uid = nix::unistd::geteuid().as_raw();
            let passwd = any_stamp(Path::new("/etc/passwd")).ok().flatten();
            // (`try_lock`: the walk of the writable areas holds the memo while it reads a
            // `.envrc`.)
            let memo = self.memo.and_then(|m| m.inner.try_lock().ok());
            let known = memo.as_ref().and_then(|m| m.user.clone()).filter(|(u, s, _)| *u == uid && *s == passwd);
            drop(memo);
            let user = match known {
                Some((_, _, user)) => user,
                None => {
                    let user = nix::unistd::User::from_uid(nix::unistd::geteuid()).ok().flatten().map(|u| u.name);
                    if let Some(m) = self.memo.and_then(|m| m.inner.try_lock().ok()).as_deref_mut() {
                        m.user = Some((uid, passwd, user.clone()));
                    }
                    user
                }
            };
            (user, nix::unistd::gethostname().ok().map(|h| h.to_string_lossy().into_owned()))
        };
        #[cfg(not(target_os = "linux"))]
        let (user, host): (Option<String>, Option<String>) = (None, None);
        let who = (user.or_else(|| std::env::var("USER").ok()), host);
        self.who = Some(who.clone());
        who
    }

    /// A path the HOME's readers look up (followed to its end), while a record is made.
    fn looked(&mut self, path: &Path) {
        if let Some(trace) = &mut self.trace {
            trace.looked.push(path.to_path_buf());
        }
    }

    /// The HOME's readers ([`Walker::home_links`], the shell start-up files, `~/.ssh/config`),
    /// for the real HOME `real`: their findings replayed from `memo`'s record where every path
    /// it depends on is unchanged, else read again (and recorded for the next scan).
    fn home_readers(&mut self, real: &Path, listed: &[&str], memo: Option<&ScanMemo>) {
        let who = self.who();
        let key: HomeKey = (real.to_path_buf(), listed.iter().map(|s| (*s).to_owned()).collect(), who.0, who.1);
        // A scan past its bounds already reads nothing more: nothing to record either. Nor is
        // one taken or made while the HOME's canonical path (what `~/` expands to) and its
        // real path differ (a symlink made in between): the key names the real path only.
        let memo = memo.filter(|_| !self.configs_stopped && self.home.as_deref() == Some(real));
        let old = memo.and_then(|m| m.inner.lock().ok().and_then(|mut m| m.home.take()));
        let had_old = old.is_some();
        if let Some(old) = old.filter(|r| r.key == key) {
            if old.looked.iter().all(|(path, stamp)| any_stamp(path).is_ok_and(|s| s == *stamp)) {
                for call in &old.calls {
                    match call {
                        HomeCall::CommandFile(p) => self.command_file(p),
                        HomeCall::TopOnPath(p) => self.top_on_path(p),
                        HomeCall::ConfigRead(bytes) => {
                            self.config_read(*bytes);
                        }
                        HomeCall::Narrowed(why) => self.out.narrowed.push(why.clone()),
                        HomeCall::Resolved(rel, p) => {
                            self.home_resolved.insert(rel.clone(), p.clone());
                        }
                    }
                }
                if let Some(m) = memo.and_then(|m| m.inner.lock().ok()).as_deref_mut() {
                    m.home = Some(old);
                }
                return;
            }
        }
        // (A record dropped is a change of the memo: kept, it would be checked again in vain.)
        if had_old {
            if let Some(m) = memo.and_then(|m| m.inner.lock().ok()).as_deref_mut() {
                m.changed = true;
            }
        }
        let started =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        if memo.is_some() {
            self.trace = Some(HomeTrace::default());
        }
        for rel in listed.iter().filter(|r| **r != ".*") {
            let e = real.join(rel);
            self.looked(&e);
            let resolved = resolve(&e).0;
            if let Some(trace) = &mut self.trace {
                trace.calls.push(HomeCall::Resolved((*rel).to_owned(), resolved.clone()));
            }
            self.home_resolved.insert((*rel).to_owned(), resolved);
        }
        self.home_links(real, listed);
        for name in SHELL_START_UP {
            self.shell_file(&real.join(name), real, false);
        }
        self.ssh_config(&real.join(".ssh/config"), real, 0);
        for dir in SHELL_START_UP_DIRS {
            self.looked(&real.join(dir));
            let mut files: Vec<PathBuf> =
                std::fs::read_dir(real.join(dir)).into_iter().flatten().flatten().map(|e| e.path()).collect();
            files.sort();
            for file in files.iter().take(64) {
                self.shell_file(file, real, false);
            }
        }
        let Some(trace) = self.trace.take() else { return };
        if self.configs_stopped {
            return;
        }
        let mut trail: Vec<PathBuf> = Vec::new();
        let mut seen: HashSet<PathBuf> = HashSet::new();
        for path in &trace.looked {
            lookup_trail(path, &mut trail, &mut seen);
        }
        let mut looked = Vec::with_capacity(trail.len());
        for path in trail {
            // An error other than a missing path (a directory that cannot be searched): no record.
            let Ok(stamp) = any_stamp(&path) else { return };
            if stamp.is_some_and(|s| s.changed_since(started - 2)) {
                return;
            }
            looked.push((path, stamp));
        }
        if let Some(m) = memo.and_then(|m| m.inner.lock().ok()).as_deref_mut() {
            m.home = Some(HomeRecord { key, looked, calls: trace.calls });
            m.changed = true;
        }
    }

    /// Whether `path` ends with one of the name patterns.
    fn matches(&self, path: &Path) -> bool {
        let comps: Vec<&std::ffi::OsStr> = path.iter().collect();
        self.names.iter().any(|pat| {
            comps.len() >= pat.len()
                && comps[comps.len() - pat.len()..].iter().zip(pat).all(|(c, p)| *c == std::ffi::OsStr::new(p))
        })
    }

    /// A protected entry that exists (bound read-only) or not (refused creation). A symlink is
    /// refused re-creation by its name and its target is bound where it exists.
    fn entry(&mut self, path: &Path) {
        // By its real path (the way to it may go through symlinks: each is refused
        // re-creation, so that it keeps leading where it leads now).
        let (path, links) = resolve(path);
        self.out.missing.extend(links);
        let path = path.as_path();
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                self.out.missing.push(path.to_path_buf());
                if let Ok(target) = std::fs::canonicalize(path).map(|t| t.to_path_buf()) {
                    // (Never `/` itself: nothing is mounted there.)
                    if target != Path::new("/") {
                        let file = !target.is_dir();
                        self.existing.insert(target.clone());
                        self.out.existing.push((target, file));
                    }
                }
            }
            Ok(m) => {
                self.existing.insert(path.to_path_buf());
                self.out.existing.push((path.to_path_buf(), !m.is_dir()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.out.missing.push(path.to_path_buf()),
            // Not known to be missing (its directory cannot be searched): that directory is
            // bound read-only as a whole, and the name refused creation.
            Err(e) => {
                self.out.missing.push(path.to_path_buf());
                if let Some(parent) = path.parent() {
                    self.unreadable(parent, &e);
                }
            }
        }
    }

    /// The `rr-cache` of `gitdir`, where it is a directory: unreadable to the run
    /// ([`ProtectScan::unreadable`]).
    fn rerere_cache(&mut self, gitdir: &Path) {
        let cache = gitdir.join("rr-cache");
        if std::fs::symlink_metadata(&cache).is_ok_and(|m| m.is_dir()) {
            let cache = std::fs::canonicalize(&cache).unwrap_or(cache);
            if !self.out.unreadable.contains(&cache) {
                self.out.unreadable.push(cache);
            }
        }
    }

    /// A directory the scan cannot read (a workload can `chmod` its own directories to hide
    /// what lies beneath from a scan that runs as the caller): bound read-only as a whole, so
    /// that nothing beneath it can be written, instead of skipped.
    fn unreadable(&mut self, dir: &Path, e: &std::io::Error) {
        if !self.existing.insert(dir.to_path_buf()) {
            return;
        }
        self.out.existing.push((dir.to_path_buf(), false));
        self.out.narrowed.push(format!(
            "{} cannot be read by the scan ({e}): it is read-only as a whole (make it readable to write there)",
            dir.display()
        ));
    }

    /// A `.git` directory, or a `.git` file (a linked worktree's or a submodule's pointer).
    fn git(&mut self, dot_git: &Path) {
        let parts = self.p.git_entries();
        if parts.is_empty() {
            return;
        }
        let Some(worktree) = dot_git.parent().map(Path::to_path_buf) else { return };
        let Ok(meta) = std::fs::symlink_metadata(dot_git) else { return };
        let gitdir = if meta.is_dir() {
            dot_git.to_path_buf()
        } else if meta.file_type().is_symlink() && dot_git.is_dir() {
            // A `.git` symlink to a directory is a git directory to git: the link is refused
            // re-creation and the directory it names is protected like any other.
            self.out.missing.push(dot_git.to_path_buf());
            match std::fs::canonicalize(dot_git) {
                Ok(t) => t,
                Err(_) => return,
            }
        } else {
            // The pointer itself is protected: redirected, it would hand git another directory.
            self.entry(dot_git);
            let Some(target) = read_gitdir(dot_git) else { return };
            let target = if target.is_absolute() { target } else { worktree.join(target) };
            match std::fs::canonicalize(&target) {
                Ok(t) => t,
                Err(_) => return,
            }
        };
        self.gitdir(&gitdir, &worktree, &parts, 0);
        if let Some(common) = read_small(&gitdir.join("commondir")).and_then(|b| String::from_utf8(b).ok()) {
            let common = PathBuf::from(common.trim());
            let common = if common.is_absolute() { common } else { gitdir.join(common) };
            if let Ok(common) = std::fs::canonicalize(common) {
                self.gitdir(&common, &worktree, &parts, 0);
            }
        }
    }

    /// The hooks and config of one git directory, its `config.worktree`, the hooks directory
    /// its config designates, and (below `modules/`) every submodule's git directory.
    fn gitdir(&mut self, gitdir: &Path, worktree: &Path, parts: &[&str], depth: usize) {
        for part in parts {
            self.entry(&gitdir.join(part));
            if *part == "hooks" {
                self.hook_links(&gitdir.join(part));
            }
        }
        // `commondir` hands git another directory's config and hooks, in any git directory
        // (not only a linked worktree's): it is protected wherever hooks or config are. So are
        // the legacy remote definitions git still reads (`remotes/<name>`, `branches/<name>`):
        // one written there sent the host's plain `git push` to a repository the workload made
        // inside `.git`, whose hooks ran (a red team, 4 December).
        self.entry(&gitdir.join("commondir"));
        for legacy in LEGACY_REMOTES {
            self.entry(&gitdir.join(legacy));
        }
        self.rerere_cache(gitdir);
        if parts.contains(&"config") {
            self.entry(&gitdir.join("config.worktree"));
        }
        match std::fs::read_dir(gitdir.join("worktrees")) {
            Ok(wts) => {
                for wt in wts.flatten() {
                    if wt.path().is_dir() {
                        self.entry(&wt.path().join("commondir"));
                        if parts.contains(&"config") {
                            self.entry(&wt.path().join("config.worktree"));
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.kind() == std::io::ErrorKind::NotADirectory => {}
            Err(e) => self.unreadable(&gitdir.join("worktrees"), &e),
        }
        // The config and the worktree configs, with every file they include (at any depth):
        // each included file is configuration too, protected whether it exists or not (git
        // ignores a missing one, which the workload could otherwise create), and every hooks
        // path any of them sets is protected (not only the last: which one git takes depends
        // on conditions and order a scan need not decide).
        let mut configs = vec![(gitdir.join("config"), worktree.to_path_buf())];
        if parts.contains(&"config") {
            configs.push((gitdir.join("config.worktree"), worktree.to_path_buf()));
            for wt in std::fs::read_dir(gitdir.join("worktrees")).into_iter().flatten().flatten() {
                // A linked worktree's root is where its `gitdir` file says its `.git` is.
                let root = read_first_line(&wt.path().join("gitdir"))
                    .map(PathBuf::from)
                    .filter(|p| p.is_absolute())
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or_else(|| worktree.to_path_buf());
                configs.push((wt.path().join("config.worktree"), root));
            }
        }
        let mut seen = SeenConfigs::default();
        for (config, root) in configs {
            self.config_file(&config, Some(&root), parts, 0, &mut seen);
        }
        if depth < 8 {
            self.modules(&gitdir.join("modules"), parts, depth);
        }
    }

    /// Counts one config file read (`bytes` long) against the scan's bounds
    /// ([`MAX_CONFIG_FILES`], [`MAX_CONFIG_BYTES`]): false, and configs stopped (the spawn is
    /// refused at the end), once either is passed.
    fn config_read(&mut self, bytes: usize) -> bool {
        if let Some(trace) = &mut self.trace {
            trace.calls.push(HomeCall::ConfigRead(bytes));
        }
        self.config_reads.0 += 1;
        self.config_reads.1 += bytes;
        if self.config_reads.0 > MAX_CONFIG_FILES || self.config_reads.1 > MAX_CONFIG_BYTES {
            self.configs_stopped = true;
        }
        !self.configs_stopped
    }

    /// One config file: the hooks paths it sets (relative to `root`, the worktree's; without
    /// one, as for the global config, relative hooks paths are not placed) and the files it
    /// includes, followed to [`MAX_INCLUDE_DEPTH`] (git's own bound is 10) and each protected
    /// as an entry; `[includeIf]` conditions are all taken as true.
    fn config_file(
        &mut self,
        config: &Path,
        root: Option<&Path>,
        parts: &[&str],
        depth: usize,
        seen: &mut SeenConfigs,
    ) {
        if self.configs_stopped {
            return;
        }
        // The file, as git finds it (symlinks followed): nothing there, nothing to read.
        let Some(id) = file_id(config) else { return };
        let dir = config.parent().unwrap_or(Path::new("/"));
        let real_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        match seen.files.entry((id, real_dir)) {
            std::collections::hash_map::Entry::Occupied(at) if *at.get() <= depth => return,
            std::collections::hash_map::Entry::Occupied(mut at) => {
                at.insert(depth);
            }
            std::collections::hash_map::Entry::Vacant(at) => {
                at.insert(depth);
            }
        }
        // Read once a scan (the global config is applied in every repository).
        let refs = match self.config_refs.get(&id) {
            Some(refs) => refs.clone(),
            None => {
                let (refs, bytes) = config_refs_sized(config);
                if !self.config_read(bytes) {
                    return;
                }
                self.config_refs.insert(id, refs.clone());
                refs
            }
        };
        if parts.contains(&"hooks") {
            for hooks in refs.hooks_paths {
                let Some(root) = root.or(hooks.is_absolute().then_some(Path::new("/"))) else {
                    continue;
                };
                if let Some(hooks) = self.expand(&hooks, root) {
                    // husky (v9 and later) sets `core.hooksPath = .husky/_`, whose generated
                    // hooks run the user's scripts one level up (`.husky/pre-commit`): the
                    // parent is what the hooks run, and is protected with them (a red team
                    // wrote `.husky/pre-commit`, and the host's next commit ran it). Never an
                    // area's root or anything above one.
                    if hooks.file_name() == Some(std::ffi::OsStr::new("_")) {
                        if let Some(parent) = hooks.parent().filter(|p| !self.areas.iter().any(|a| a.starts_with(p))) {
                            self.entry(parent);
                            self.hook_links(parent);
                        }
                    }
                    self.entry(&hooks);
                    self.hook_links(&hooks);
                }
            }
        }
        if parts.contains(&"config") {
            for file in &refs.files {
                // Relative to the worktree's root, as git takes them; without one (the global
                // config) only absolute and `~/` ones can be placed.
                let Some(root) = root.or(file.is_absolute().then_some(Path::new("/"))) else { continue };
                if let Some(path) = self.expand(file, root) {
                    self.command_file(&path);
                }
            }
        }
        // Files that the commands this config names run (`core.fsmonitor = ./fsmon.sh`, a
        // filter's `clean = tools/clean.sh`, `!sh scripts/x.sh` aliases): the config is
        // protected, but a red team rewrote the scripts it names in the workspace, and the
        // host's next `git status` or `git add` ran them. Each word of such a value that can
        // name a file ([`command_paths`]; relative ones from the worktree's root, where git
        // runs them) is protected where it lies inside a writable area of the profile.
        if parts.contains(&"config") {
            for command in &refs.commands {
                // `init.templateDir` is a path, not a command line.
                for word in command_paths(command, None, !command.starts_with(['~', '/', '.'])) {
                    let Some(root) = root.or(word.is_absolute().then_some(Path::new("/"))) else { continue };
                    if let Some(path) = self.expand(&word, root) {
                        self.command_file(&path);
                    }
                }
            }
        }
        if !parts.contains(&"config") || depth >= MAX_INCLUDE_DEPTH {
            return;
        }
        let dir = config.parent().unwrap_or(Path::new("/")).to_path_buf();
        for inc in refs.includes {
            self.includes += 1;
            self.include_work += inc.components().count() + dir.components().count();
            // (Past the entries' bound too: the spawn is refused at the end, after no more
            // reading.)
            if self.includes > MAX_INCLUDES
                || self.include_work > MAX_INCLUDE_WORK
                || self.existing.len() + self.out.missing.len() > MAX_ENTRIES
            {
                self.configs_stopped = true;
                return;
            }
            let Some(inc) = self.expand(&inc, &dir) else { continue };
            if inc.is_dir() {
                continue; // not configuration git can read
            }
            self.entry(&inc);
            self.config_file(&inc, root, parts, depth + 1, seen);
        }
    }

    /// The files the hooks in `hooks` (a hooks directory, protected as an entry) lead to: a hook
    /// that is a symlink (`pre-commit -> ../../scripts/pre-commit`, a common set-up) runs its
    /// target, which the directory's read-only bind does not cover (red team AR, 5 December:
    /// the workload rewrote the target and the host's next commit ran it). Every link of each
    /// chain (at most 40 hops, as the kernel follows) is resolved as the kernel would from its
    /// own directory, and what it names is protected where it lies in a writable area, whether
    /// it exists or not (a dangling hook is skipped by git until its target is made). More than
    /// [`MAX_HOOK_NAMES`] names refuse the spawn.
    fn hook_links(&mut self, hooks: &Path) {
        let Ok(list) = std::fs::read_dir(hooks) else { return };
        for (n, name) in list.flatten().enumerate() {
            if n >= MAX_HOOK_NAMES {
                self.hooks_stopped.get_or_insert_with(|| hooks.to_path_buf());
                return;
            }
            let mut link = name.path();
            for _ in 0..40 {
                if !std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()) {
                    break;
                }
                let Ok(target) = std::fs::read_link(&link) else { break };
                // From the link's directory as the kernel reaches it (`..` taken physically).
                let dir = link.parent().map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
                let (next, links) = resolve(&dir.join(target));
                // The symlinks on the way (`scripts -> tools`) are refused re-creation, so that
                // the way keeps leading where it leads now (red team AT, 5 December: `scripts`
                // removed and made again as a directory of the workload's, and the host's commit
                // ran the hook written there).
                self.protect_names(links);
                // A directory is no hook git runs itself, but hook managers run the scripts of
                // a `<hook>.d`: the guard refuses its re-creation and every creation or write
                // beneath it (it is not bound). AT (5 December) removed an empty one a hook
                // named and put a file in its place, which ran at the host's commit.
                if next.is_dir() {
                    self.protect_names(vec![next]);
                    break;
                }
                self.command_file(&next);
                link = next;
            }
        }
    }

    /// Names refused creation (never bound) where they lie strictly inside an area the workload
    /// may write.
    fn protect_names(&mut self, names: Vec<PathBuf>) {
        for name in names {
            let name = crate::profile::lexically_clean(&name);
            if self.writable.iter().any(|a| name.starts_with(a) && name != *a) {
                self.out.missing.push(name);
            }
        }
    }

    /// A file a protected configuration names as a command to run: protected as an entry
    /// when it lies strictly inside an area the workload may write (elsewhere it cannot write
    /// it anyway, and an area's root is never bound over).
    fn command_file(&mut self, path: &Path) {
        if let Some(trace) = &mut self.trace {
            trace.calls.push(HomeCall::CommandFile(path.to_path_buf()));
        }
        // `./tools/../x.sh`: git resolves `tools` physically, and a workload could make it a
        // symlink elsewhere (a red team did): every directory before a `..` is protected too.
        let protect = |walker: &mut Self, p: &Path| {
            let p = crate::profile::lexically_clean(p);
            if walker.writable.iter().any(|a| p.starts_with(a) && p != *a) {
                walker.entry(&p);
            }
        };
        let mut prefix = PathBuf::new();
        for c in path.components() {
            if c == std::path::Component::ParentDir {
                protect(self, &prefix);
            }
            prefix.push(c);
        }
        protect(self, path);
    }

    /// An agent's JSON configuration that starts commands (Claude Code's settings carry hooks
    /// and a status line, MCP servers, VS Code tasks, dev containers): every word of each
    /// command value and `args` element that can name a file is a command file (relative ones from `project`, where the agent
    /// runs them; `$CLAUDE_PROJECT_DIR` is `project`). A red team wrote the hook script that
    /// the protected settings named (`.claude/hooks/fmt.sh`), which the host's agent then ran.
    fn json_commands(&mut self, file: &Path, project: &Path) {
        // Claude Code runs hooks' and the status line's `command` and the helpers that produce
        // credentials and headers; MCP servers (`.mcp.json`, `.cursor/mcp.json`,
        // `.vscode/mcp.json`) and VS Code tasks are `command` with `args`; a dev container's
        // `initializeCommand` runs on the host (and the others in its container).
        const COMMAND_KEYS: &[&str] = &[
            "command",
            // GitHub Copilot's hooks name their command by the shell that runs it.
            "bash",
            "powershell",
            "apiKeyHelper",
            "awsAuthRefresh",
            "awsCredentialExport",
            "otelHeadersHelper",
            "initializeCommand",
            "onCreateCommand",
            "updateContentCommand",
            "postCreateCommand",
            "postStartCommand",
            "postAttachCommand",
        ];
        /// `(text, starts with a program)` of every command value, and every working directory
        /// (`cwd`) a server or task names. The values of an `env` are words too
        /// (`NODE_OPTIONS: "--require ./inj.js"` runs `inj.js`: a red team, 5 December).
        fn collect(v: &serde_json::Value, key: Option<&str>, out: &mut Vec<(String, bool)>, cwds: &mut Vec<String>) {
            let command = key.is_some_and(|k| COMMAND_KEYS.contains(&k));
            match v {
                serde_json::Value::String(s) if command => out.push((s.clone(), true)),
                serde_json::Value::String(s) if key == Some("args") => out.push((s.clone(), false)),
                serde_json::Value::String(s) if key == Some("cwd") => cwds.push(s.clone()),
                // The exec form (`["node", "server.js"]`) and parallel commands (`{"a": "…"}`).
                serde_json::Value::Array(items) if command => {
                    items.iter().for_each(|i| collect(i, Some("args"), out, cwds));
                    out.push((joined(items), true));
                }
                // Also as one line: `["-m", "srv"]` runs `srv.py` (red team AW, 6 December: each
                // word alone named `srv`, which Python never loads for `-m`).
                serde_json::Value::Array(items) if key == Some("args") => {
                    items.iter().for_each(|i| collect(i, key, out, cwds));
                    out.push((joined(items), false));
                }
                serde_json::Value::Object(map) if command => map.values().for_each(|v| collect(v, key, out, cwds)),
                serde_json::Value::Object(map) if key == Some("env") => {
                    map.values().for_each(|v| collect(v, Some("args"), out, cwds));
                }
                serde_json::Value::Array(items) => items.iter().for_each(|i| collect(i, key, out, cwds)),
                serde_json::Value::Object(map) => {
                    // A server's command with its arguments, as one line (`npx -y pkg`).
                    if let (Some(serde_json::Value::String(c)), Some(serde_json::Value::Array(a))) =
                        (map.get("command"), map.get("args"))
                    {
                        out.push((format!("'{c}' {}", joined(a)), true));
                    }
                    map.iter().for_each(|(k, v)| collect(v, Some(k), out, cwds));
                }
                _ => {}
            }
        }
        /// The string items of an exec form or `args` as one command line (each quoted).
        fn joined(items: &[serde_json::Value]) -> String {
            let words: Vec<String> = items
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(|w| if w.contains('\'') { format!("\"{w}\"") } else { format!("'{w}'") })
                .collect();
            words.join(" ")
        }
        let Some(bytes) = read_small(file) else { return };
        let text = String::from_utf8_lossy(&bytes);
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&strip_jsonc(&text)) else { return };
        let (mut commands, mut cwds) = (Vec::new(), Vec::new());
        collect(&value, None, &mut commands, &mut cwds);
        // A relative word from the project, and from each working directory named (which
        // server it belongs to is not followed: each is tried).
        let mut bases = vec![project.to_path_buf()];
        bases.extend(cwds.iter().filter_map(|c| self.expand(Path::new(c), project)));
        for (command, program) in commands {
            for word in command_paths(&command, Some(project), program) {
                // A program in a virtual environment (`.venv/bin/python`): the environment
                // whole, whose `site-packages` (a `.pth` there) runs with it (red team BA).
                for word in above_bin(&word).into_iter().chain([word.clone()]) {
                    for base in &bases {
                        if let Some(path) = self.expand(&word, base) {
                            self.command_file(&path);
                        }
                    }
                }
            }
            self.npx_files(&command, project);
        }
    }

    /// The packages a command line runs through `npx` (`bunx`, `pnpx`, `pnpm dlx`, `yarn dlx`,
    /// `npm exec`) that the project's `package.json` does not depend on: npx takes a copy in the
    /// project's `node_modules` (or a program of that name in `node_modules/.bin`) before the
    /// registry's, so `node_modules/<package>` and `node_modules/.bin/<name>` are protected
    /// (red team AY, 6 December: an MCP server `npx -y @modelcontextprotocol/server-filesystem`
    /// ran a copy the workload planted in the ignored `node_modules`). A package the project
    /// depends on is its code, which it installs and runs as it will.
    fn npx_files(&mut self, command: &str, project: &Path) {
        let packages = npx_packages(command);
        if packages.is_empty() {
            return;
        }
        let manifest = read_small(&project.join("package.json"))
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .unwrap_or(serde_json::Value::Null);
        let depends = |name: &str| {
            ["dependencies", "devDependencies", "optionalDependencies", "peerDependencies"]
                .iter()
                .any(|k| manifest.get(k).and_then(|d| d.get(name)).is_some())
        };
        for package in packages {
            if depends(&package) {
                continue;
            }
            let modules = project.join("node_modules");
            let base = package.rsplit('/').next().unwrap_or(&package).to_owned();
            for path in [modules.join(&package), modules.join(".bin").join(&package), modules.join(".bin").join(base)] {
                self.command_file(&path);
            }
        }
    }

    /// A pre-commit or lefthook configuration (YAML, protected): the commands its hooks run
    /// (`entry:`, `run:`, on the key's line or in the block beneath it) are read for command
    /// files from the project's directory, and for packages run through npx. Red team AY (6
    /// December): a `repo: local` hook's `entry: node_modules/.bin/eslint` was rewritten, and
    /// the host's next commit ran it.
    fn yaml_commands(&mut self, file: &Path, project: &Path) {
        let Some(bytes) = read_small(file) else { return };
        if !self.config_read(bytes.len()) {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut commands: Vec<String> = Vec::new();
        let mut block: Option<usize> = None;
        for line in text.lines() {
            let indent = line.len() - line.trim_start().len();
            let trimmed = line.trim().trim_start_matches("- ").trim();
            if let Some(at) = block {
                if trimmed.is_empty() || indent > at {
                    if !trimmed.is_empty() {
                        commands.push(trimmed.to_owned());
                    }
                    continue;
                }
                block = None;
            }
            for key in ["entry:", "run:", "script:", "yarnPath:"] {
                if let Some(value) = trimmed.strip_prefix(key) {
                    let value = value.trim().trim_matches(['"', '\'']);
                    if value.is_empty() || value.starts_with(['|', '>']) {
                        block = Some(indent);
                    } else {
                        commands.push(value.to_owned());
                    }
                    continue;
                }
                // Flow style (`- {id: lint, entry: ./hooks/lint.sh, language: script}`): the
                // key after `{`, `,` or a space, its value to the next `,` or `}`.
                let mut rest = trimmed;
                while let Some(at) = rest.find(key) {
                    let before = rest[..at].chars().last();
                    let after = &rest[at + key.len()..];
                    if matches!(before, Some('{' | ',' | ' ')) {
                        let value = after.split([',', '}']).next().unwrap_or("").trim().trim_matches(['"', '\'']);
                        if !value.is_empty() {
                            commands.push(value.to_owned());
                        }
                    }
                    rest = after;
                }
            }
        }
        for command in commands {
            for word in command_paths(&command, None, true) {
                for word in above_bin(&word).into_iter().chain([word.clone()]) {
                    if let Some(path) = self.expand(&word, project) {
                        self.command_file(&path);
                    }
                }
            }
            self.npx_files(&command, project);
        }
    }

    /// A project's `.npmrc` (protected): the programs its `script-shell`, `node-options`,
    /// `shell`, `git` and `editor` name, which npm runs at every script and `npx` (red team BA,
    /// 6 December: `node-options=--require ./.hook.js` ran at an MCP server's `npx -y`).
    fn npmrc(&mut self, file: &Path, project: &Path) {
        let Some(bytes) = read_small(file) else { return };
        if !self.config_read(bytes.len()) {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else { continue };
            if matches!(key.trim(), "script-shell" | "node-options" | "shell" | "git" | "editor" | "onload-script") {
                for word in command_paths(value.trim(), None, false) {
                    if let Some(path) = self.expand(&word, project) {
                        self.command_file(&path);
                    }
                }
            }
        }
    }

    /// The symlinks among the real HOME's hidden entries and the listed `~/` entries, and
    /// beneath the HOME's hidden directories to three levels (caches and package stores not
    /// entered, [`HOME_LINKS_SKIPPED`]), the first [`MAX_HOME_LINKS`] looked at (past them the
    /// report says `narrowed`): every link of each chain and what it ends at (followed to the
    /// end, lexically past a missing part) are command files, protected where they lie strictly
    /// inside a writable area. A link that is a directory (`~/bin -> dotfiles/bin`) is protected
    /// whole; nothing beneath a link is entered.
    fn home_links(&mut self, home: &Path, listed: &[&str]) {
        use std::os::unix::ffi::OsStrExt as _;
        self.looked(home);
        let mut looked = 0usize;
        let mut queue: std::collections::VecDeque<(PathBuf, usize)> = std::collections::VecDeque::new();
        let mut tops: Vec<PathBuf> = Vec::new();
        for e in std::fs::read_dir(home).into_iter().flatten().flatten() {
            if e.file_name().as_bytes().starts_with(b".") {
                tops.push(e.path());
            }
        }
        tops.sort();
        tops.extend(listed.iter().filter(|r| **r != ".*").map(|r| home.join(r)));
        for path in tops {
            looked += 1;
            if looked > MAX_HOME_LINKS {
                break;
            }
            self.looked(&path);
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => self.link_chain(&path),
                Ok(m) if m.is_dir() && !HOME_LINKS_SKIPPED.iter().any(|s| path.ends_with(s)) => {
                    queue.push_back((path, 1));
                }
                _ => {}
            }
        }
        while let Some((dir, depth)) = queue.pop_front() {
            self.looked(&dir);
            let Ok(listing) = std::fs::read_dir(&dir) else { continue };
            let mut entries: Vec<std::fs::DirEntry> = listing.flatten().collect();
            entries.sort_by_key(std::fs::DirEntry::file_name);
            for e in entries {
                looked += 1;
                if looked > MAX_HOME_LINKS {
                    break;
                }
                let Ok(kind) = e.file_type() else { continue };
                let path = e.path();
                if kind.is_symlink() {
                    self.link_chain(&path);
                } else if kind.is_dir() && depth < 3 && !HOME_LINKS_SKIPPED.iter().any(|s| path.ends_with(s)) {
                    queue.push_back((path, depth + 1));
                }
            }
        }
        if looked > MAX_HOME_LINKS {
            let why = format!(
                "{} holds more than {MAX_HOME_LINKS} entries where dotfile links are looked for: links beyond them \
                 into a writable area are not followed",
                home.display()
            );
            if let Some(trace) = &mut self.trace {
                trace.calls.push(HomeCall::Narrowed(why.clone()));
            }
            self.out.narrowed.push(why);
        }
    }

    /// The symlink `path` of the HOME: every link of its chain and what it ends at are command
    /// files ([`Walker::home_links`]).
    fn link_chain(&mut self, path: &Path) {
        self.looked(path);
        let (end, hops) = link_end(path);
        for hop in hops {
            self.command_file(&hop);
        }
        self.command_file(&end);
    }

    /// A shell start-up file of the HOME (`~/.bashrc`), followed through links: the files it
    /// sources or runs and the directories it puts on PATH, where they lie in a writable area
    /// (see [`Walker::envrc`]'s reading). Only words that name a place whatever the shell's
    /// directory count (absolute, `~/`, `$HOME/`): a bare word in a start-up file is a command
    /// or an argument, not a file of the HOME.
    fn shell_file(&mut self, file: &Path, home: &Path, relative: bool) {
        self.looked(file);
        let Ok(meta) = std::fs::metadata(file) else { return };
        if !meta.is_file() {
            return;
        }
        self.script_file(file, home, relative);
    }

    /// A direnv `.envrc` (protected: direnv runs it on `cd`, and its approval covers its own
    /// text only): what it loads or puts on PATH in turn is a command file, relative to its
    /// directory ([`Walker::script_file`]). Red team AW, 6 December: the workload wrote
    /// `.envrc.local`, `.env` (`GIT_CONFIG_*` naming a `core.fsmonitor`) and a `git` in
    /// `node_modules/.bin`, each run at the host's next `cd` or `git status`; red team AY then
    /// planted in `.direnv/go/bin` (`layout go`), in a directory named through a variable
    /// (`d=tools; PATH_add "$d"`), a continued line, and a glob (`source env.d/*.sh`).
    fn envrc(&mut self, file: &Path) {
        let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        self.script_file(file, &dir, true);
    }

    /// A shell script the host runs on its own (a `.envrc` from `base`, its directory, with
    /// `relative`; a HOME's start-up file without), and the scripts it sources, to a depth of
    /// [`MAX_SCRIPT_DEPTH`] (bounded with git's configs): every word of each line that can name
    /// a file ([`command_paths`]; with `relative` also bare and relative words, from `base`;
    /// else only what runs or is read by `.` and `source`, [`run_words`], and a path given to an
    /// option, `-I$HOME/perl5/lib/perl5`), quotes removed, lines continued with a backslash
    /// joined, simple assignments (`d=tools`) and `$PWD`, `$HOME`, `$USER`, `$(whoami)`,
    /// `$(hostname)`, `${DIRENV_DIR#-}`, `$(pwd)` and `$(direnv_layout_dir)` put in; a glob's or
    /// an unknown expansion's directory (`env.d/*.sh`, `lib/$1.sh` → the directory whole); `.env`
    /// for a bare `dotenv`; what direnv's layouts and `use` functions put on PATH or evaluate;
    /// each directory of a `PATH=` it sets; and, out of a start-up file, the directory above a
    /// `bin` it runs from (`~/venvs/tools` of `~/venvs/tools/bin/activate`, a conda root: their
    /// `site-packages` run too). Each is protected where it lies strictly inside a writable
    /// area. A `.envrc` that puts its own directory on PATH is reported `narrowed`.
    fn script_file(&mut self, file: &Path, base: &Path, relative: bool) {
        let mut seen = HashSet::new();
        self.script_file_at(file, base, relative, 0, &mut seen);
    }

    fn script_file_at(&mut self, file: &Path, base: &Path, relative: bool, depth: usize, seen: &mut HashSet<PathBuf>) {
        if self.configs_stopped || depth > MAX_SCRIPT_DEPTH {
            return;
        }
        self.looked(file);
        let Ok(real) = std::fs::canonicalize(file) else { return };
        if !real.is_file() || !seen.insert(real) {
            return;
        }
        let Some(bytes) = read_small(file) else { return };
        if !self.config_read(bytes.len()) {
            return;
        }
        let text = String::from_utf8_lossy(&bytes).replace("\\\n", " ");
        let home = self.home.clone();
        let who = self.who();
        let mut vars: HashMap<String, String> = HashMap::new();
        let mut paths: Vec<PathBuf> = Vec::new();
        let mut sourced: Vec<PathBuf> = Vec::new();
        let statements: Vec<&str> = text.lines().flat_map(|l| l.split(';')).map(str::trim).collect();
        for raw in statements {
            if raw.is_empty() || raw.starts_with('#') {
                continue;
            }
            let line = expand_script_words(raw, &vars, home.as_deref(), &who, relative);
            let unquoted = line.replace(['"', '\''], "");
            // `NAME=value` statements (`export`, `local` and `declare` too): later ones see them.
            for statement in unquoted.split(['&', '|']) {
                let mut words = statement.split_whitespace();
                let mut first = words.next();
                if matches!(first, Some("export" | "local" | "declare" | "readonly" | "set")) {
                    first = words.next();
                }
                if let Some((name, value)) = first.and_then(|w| w.split_once('=')) {
                    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        vars.insert(name.to_owned(), value.to_owned());
                    }
                }
            }
            let words: Vec<&str> = unquoted.split_whitespace().collect();
            let keep = |p: &Path| relative || p.is_absolute() || p.starts_with("~");
            let run = run_words(&unquoted);
            if relative {
                paths.extend(command_paths(&line, None, true));
                paths.extend(command_paths(&unquoted, None, true));
            } else {
                for w in &run {
                    let path = PathBuf::from(w);
                    if keep(&path) {
                        paths.extend(above_bin(&path));
                        paths.push(path);
                    }
                }
            }
            // What is sourced is read in turn.
            for (i, w) in words.iter().enumerate() {
                let source =
                    matches!(*w, "." | "source" | "source_env" | "source_env_if_exists" | "source_up_if_exists");
                if let Some(next) = words.get(i + 1).filter(|_| source) {
                    sourced.push(PathBuf::from(next));
                }
            }
            // A path given to an option (`-I/x`, `-javaagent:/x.jar`, `--x=/y`): code loaded.
            for w in &words {
                if w.starts_with('-') || w.contains("=-") {
                    let start = (0..w.len()).filter(|&i| w.is_char_boundary(i)).find(|&i| {
                        let rest = &w[i..];
                        rest.starts_with('/')
                            || rest.starts_with("~/")
                            || rest.starts_with("./")
                            || rest.starts_with("../")
                    });
                    if let Some(at) = start {
                        let path = w[at..].split([':', ',', ';']).next().unwrap_or("");
                        if keep(Path::new(path)) {
                            paths.push(PathBuf::from(path));
                        }
                    }
                }
            }
            // A glob's, a brace's or an unknown expansion's directory, whole (`source env.d/*.sh`,
            // `source "lib/$1.sh"`).
            for w in &words {
                if let Some(dir) = pattern_dir(w, &['*', '?', '[', '{', '$', '`']) {
                    if dir != Path::new(".") && keep(&dir) {
                        paths.push(dir);
                    }
                }
            }
            if relative {
                let python = |k: &str| {
                    k.starts_with("python")
                        || matches!(
                            k,
                            "pyenv" | "anaconda" | "pipenv" | "poetry" | "uv" | "pdm" | "hatch" | "virtualenv"
                        )
                };
                let mut named: Vec<&str> = match words.as_slice() {
                    ["dotenv" | "dotenv_if_exists"] => vec![".env"],
                    // Every layout lives in `.direnv` (`direnv_layout_dir`), node's and php's
                    // tools in the project.
                    ["layout", kind, ..] if python(kind) => vec![".direnv", ".venv"],
                    ["layout", "node", ..] | ["layout_node", ..] => vec![".direnv", "node_modules/.bin"],
                    ["layout", "php", ..] => vec![".direnv", "vendor/bin"],
                    ["layout", ..] => vec![".direnv"],
                    ["use", "node" | "nodenv", ..] => vec!["node_modules/.bin"],
                    ["use", "flake", ..] => vec!["flake.nix", "flake.lock"],
                    ["use", "nix", ..] => vec!["shell.nix", "default.nix"],
                    ["use", "devenv", ..] => vec!["devenv.nix", "devenv.yaml", "devenv.lock", ".devenv"],
                    ["use", "vim", ..] => vec![".vimrc.local"],
                    _ => vec![],
                };
                if line.contains("direnv_layout_dir") {
                    named.push(".direnv");
                }
                paths.extend(named.iter().map(PathBuf::from));
                if matches!(words.as_slice(), ["PATH_add" | "path_add", .., "." | "./"]) {
                    self.top_on_path(base);
                }
            }
            for value in words.iter().filter_map(|w| w.split_once("PATH=").map(|(_, v)| v)) {
                for part in value.split(':') {
                    if relative && (part == "." || part == "./") {
                        self.top_on_path(base);
                        continue;
                    }
                    if !part.is_empty() && !part.contains(['$', '`']) && keep(Path::new(part)) {
                        if !relative {
                            paths.extend(above_bin(Path::new(part)));
                        }
                        paths.push(PathBuf::from(part));
                    }
                }
            }
        }
        for path in paths {
            if let Some(p) = self.expand(&path, base) {
                self.command_file(&p);
            }
        }
        for path in sourced {
            if path.as_os_str().to_string_lossy().contains(['$', '*', '?', '{', '`']) {
                continue;
            }
            if let Some(p) = self.expand(&path, base) {
                self.looked(&p);
                // A directory is read as direnv reads one (`source_env dir` → `dir/.envrc`).
                let p = if p.is_dir() { p.join(".envrc") } else { p };
                self.script_file_at(&p, base, relative, depth + 1, seen);
            }
        }
    }

    /// A `.envrc` puts its own directory `dir` on PATH (`PATH_add "$PWD"`): a program made there
    /// (`git`) would run at the host's next command in the project (red team BA, 6 December).
    /// No new entry may be made in `dir` ([`CreationGuard::no_new_entries`]); what exists there
    /// is written as before (a tracked file's change shows to git).
    fn top_on_path(&mut self, dir: &Path) {
        if let Some(trace) = &mut self.trace {
            trace.calls.push(HomeCall::TopOnPath(dir.to_path_buf()));
        }
        let dir = crate::profile::lexically_clean(dir);
        if self.writable.iter().any(|a| dir.starts_with(a)) {
            self.out.no_new_entries.push(dir);
        }
    }

    /// The HOME's `~/.ssh/config` and what it includes (`Include`, globs by their directory, to
    /// [`MAX_SCRIPT_DEPTH`]): each included file is protected, and the programs its
    /// `ProxyCommand`, `LocalCommand`, `Match exec` and `KnownHostsCommand` run are command
    /// files (red team BA, 6 December: an `Include ~/dotfiles/ssh/extra.conf` of a dotfiles
    /// workspace gained a `Match exec`, run by the host's next `ssh`).
    fn ssh_config(&mut self, file: &Path, home: &Path, depth: usize) {
        if depth > MAX_SCRIPT_DEPTH || self.configs_stopped {
            return;
        }
        self.looked(file);
        let Some(bytes) = read_small(file) else { return };
        if !self.config_read(bytes.len()) {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines().map(str::trim) {
            let Some((key, value)) = line.split_once(|c: char| c.is_whitespace() || c == '=') else { continue };
            let key = key.to_ascii_lowercase();
            let value = value.trim();
            if key == "include" {
                for word in value.split_whitespace().map(|w| w.trim_matches('"')) {
                    let base = home.join(".ssh");
                    if word.contains(['*', '?', '[']) {
                        // A pattern: its directory, whole.
                        if let Some(p) = pattern_dir(word, &['*', '?', '[']).and_then(|d| self.expand(&d, &base)) {
                            self.command_file(&p);
                        }
                    } else if let Some(p) = self.expand(Path::new(word), &base) {
                        self.command_file(&p);
                        self.ssh_config(&p, home, depth + 1);
                    }
                }
            } else if matches!(key.as_str(), "proxycommand" | "localcommand" | "knownhostscommand" | "match") {
                for word in command_paths(value, None, key != "match") {
                    if word.is_absolute() || word.starts_with("~") {
                        if let Some(p) = self.expand(&word, home) {
                            self.command_file(&p);
                        }
                    }
                }
            }
        }
    }

    /// A Mercurial (or Sapling) repository's config, `root` the repository's top: every file it
    /// includes (`%include`, relative to the including file) is protected as an entry and
    /// read in turn, and the files its hooks and extensions name are command files (red team
    /// AT, 5 December: an existing `.hg/hgrc` ran `sh tools/hook.sh` and included
    /// `../team.rc`, and the workload rewrote both). Hooks run from the repository's top;
    /// `python:` hooks and extension paths are taken from there and from the config's
    /// directory. Bounded with git's configs ([`MAX_CONFIG_FILES`], [`MAX_INCLUDE_DEPTH`]).
    fn hg_config(&mut self, file: &Path, root: &Path, depth: usize, seen: &mut HashSet<PathBuf>) {
        if self.configs_stopped || depth > MAX_INCLUDE_DEPTH {
            return;
        }
        let Ok(real) = std::fs::canonicalize(file) else { return };
        if !seen.insert(real) {
            return;
        }
        let Some(bytes) = read_small(file) else { return };
        if !self.config_read(bytes.len()) {
            return;
        }
        let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let text = String::from_utf8_lossy(&bytes);
        let mut section = String::new();
        let mut last_key: Option<String> = None;
        let mut values: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some(inc) = line.strip_prefix("%include") {
                let inc = inc.trim();
                if let Some(path) = self.expand(Path::new(inc), &dir) {
                    self.entry(&path);
                    self.hg_config(&path, root, depth + 1, seen);
                }
                continue;
            }
            if trimmed.is_empty() || trimmed.starts_with(['#', ';']) || line.starts_with('%') {
                continue;
            }
            if line.starts_with([' ', '\t']) {
                // A continuation of the last value.
                if let (Some(key), Some(last)) = (&last_key, values.last_mut()) {
                    if &last.0 == key {
                        last.1.push(' ');
                        last.1.push_str(trimmed);
                    }
                }
                continue;
            }
            if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.split(']').next()) {
                section = name.trim().to_ascii_lowercase();
                last_key = None;
                continue;
            }
            if let Some((key, value)) = trimmed.split_once('=') {
                let key = format!("{section}.{}", key.trim());
                last_key = Some(key.clone());
                values.push((key, value.trim().to_owned()));
            }
        }
        for (key, value) in values {
            if key.starts_with("hooks.") {
                if let Some(py) = value.strip_prefix("python:") {
                    // `python:path/to/file.py:function` (or a module name, not a file).
                    let path = py.rsplit_once(':').map_or(py, |(p, _)| p);
                    for base in [root, dir.as_path()] {
                        if let Some(p) = self.expand(Path::new(path), base) {
                            self.command_file(&p);
                        }
                    }
                    continue;
                }
                for word in command_paths(&value, None, !value.starts_with(['~', '/', '.'])) {
                    if let Some(p) = self.expand(&word, root) {
                        self.command_file(&p);
                    }
                }
            } else if key.starts_with("extensions.") && !value.is_empty() && !value.starts_with('!') {
                for base in [root, dir.as_path()] {
                    if let Some(p) = self.expand(Path::new(&value), base) {
                        self.command_file(&p);
                    }
                }
            }
        }
    }

    /// A path from a git config as git takes it: `~/` in the real HOME, relative ones in
    /// `base`. `None` for what cannot be placed (`~user/`, `%(prefix)/`, no HOME known).
    fn expand(&self, value: &Path, base: &Path) -> Option<PathBuf> {
        let text = value.to_str()?;
        let path = if text == "~" {
            self.home.clone()?
        } else if let Some(rest) = text.strip_prefix("~/") {
            self.home.as_ref()?.join(rest)
        } else if text.starts_with('~') || text.starts_with("%(") {
            return None;
        } else if value.is_absolute() {
            value.to_path_buf()
        } else {
            base.join(value)
        };
        Some(path)
    }

    /// Every git directory below a `modules/` directory (nested paths, nested modules).
    fn modules(&mut self, dir: &Path, parts: &[&str], depth: usize) {
        // No module's git directory can be planted for the host's `git submodule update
        // --init` to take: a missing `modules` is refused creation, an existing one (and each
        // directory on the way to a module, whose name may hold slashes) takes no new entry.
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if depth == 0 || dir.file_name() == Some(std::ffi::OsStr::new("modules")) {
                    self.out.missing.push(dir.to_path_buf());
                }
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return,
            Err(e) => return self.unreadable(dir, &e),
        };
        self.out.no_new_entries.push(dir.to_path_buf());
        // Counted with the walk's directories: a tree of modules is no way around the bound.
        if self.dirs >= self.max_dirs {
            self.stopped = true;
            return;
        }
        self.dirs += 1;
        for e in entries.flatten() {
            let path = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if path.join("HEAD").is_file() {
                // A submodule's hooks path is relative to its checkout, which is elsewhere:
                // only its hooks, config and common-directory pointer are protected here.
                for part in parts {
                    self.entry(&path.join(part));
                }
                self.entry(&path.join("commondir"));
                for legacy in LEGACY_REMOTES {
                    self.entry(&path.join(legacy));
                }
                self.rerere_cache(&path);
                self.modules(&path.join("modules"), parts, depth + 1);
            } else if depth < 8 {
                self.modules(&path, parts, depth + 1);
            }
        }
    }
}

/// Whether `dir` is a git directory by its contents, as git finds a bare repository (`HEAD`,
/// `objects/`, `refs/`), by a `commondir` (a linked worktree's git directory, which stands for
/// `objects/` and `refs/`; a red team found one in a bare repository's `worktrees`), or by its
/// config ([`is_git_config`]): the last two stay when `HEAD` is renamed away. The Linux guard asks this about a directory whose `config`, `commondir` or
/// hooks a run writes outside any `.git` (a bare repository or separate git directory the host
/// made during the run, which the spawn's scan could not know).
pub fn is_git_directory(dir: &Path) -> bool {
    let is_dir = |m: &str| std::fs::symlink_metadata(dir.join(m)).is_ok_and(|m| m.is_dir());
    let layout = std::fs::symlink_metadata(dir.join("HEAD")).is_ok() && is_dir("objects") && is_dir("refs");
    layout || std::fs::symlink_metadata(dir.join("commondir")).is_ok() || is_git_config(&dir.join("config"))
}

/// Whether `file` is a git directory's config: a regular file (at most 1 MiB) with a `[core]`
/// section that sets `repositoryformatversion`, as every git writes.
fn is_git_config(file: &Path) -> bool {
    let Ok(m) = std::fs::symlink_metadata(file) else { return false };
    if !m.is_file() || m.len() > 1 << 20 {
        return false;
    }
    let Some(text) = read_small(file).and_then(|b| String::from_utf8(b).ok()) else { return false };
    let mut core = false;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.split(|c: char| c == ']' || c.is_whitespace() || c == '"').next().unwrap_or("");
            core = name.eq_ignore_ascii_case("core");
            let after = rest.split_once(']').map_or("", |(_, a)| a.trim());
            if core && after.to_ascii_lowercase().starts_with("repositoryformatversion") {
                return true;
            }
        } else if core && line.to_ascii_lowercase().starts_with("repositoryformatversion") {
            return true;
        }
    }
    false
}

/// The `gitdir:` line of a `.git` file.
fn read_gitdir(file: &Path) -> Option<PathBuf> {
    // Never blocking: a FIFO named `.git` stalled every later scan, so every spawn and export
    // of the workspace (a red team, 4 December, night).
    let text = String::from_utf8(read_small(file)?).ok()?;
    text.lines().find_map(|l| l.strip_prefix("gitdir:")).map(|p| PathBuf::from(p.trim()))
}

/// What a git config file points at: every `core.hooksPath` and the `path` of every
/// `[include]` and `[includeIf "…"]` section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct ConfigRefs {
    hooks_paths: Vec<PathBuf>,
    /// `core.excludesFile` and `core.attributesFile`.
    files: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    /// The values of keys that name a command git runs (see [`names_a_command`]).
    commands: Vec<String>,
}

/// The first line of a small file, trimmed.
fn read_first_line(file: &Path) -> Option<String> {
    let bytes = read_small(file)?;
    let text = String::from_utf8(bytes).ok()?;
    Some(text.lines().next()?.trim().to_owned())
}

/// The content of a regular file, at most its first MiB. On Linux the file is found first
/// without being opened for reading (`O_PATH`, symlinks followed as git follows them), and
/// read only when it is a regular file on a filesystem that stores files
/// ([`stores_files`]), through that handle: a config the workload wrote named `/proc/kmsg`
/// and a device, and the scan, on the host and as the caller, opened the device and consumed
/// the kernel log (red team AL, 5 December). Elsewhere it is opened without blocking (a FIFO
/// named by a config never stalls the scan) and checked to be a regular file once open.
#[cfg(target_os = "linux")]
pub fn read_small(file: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // O_PATH: the access mode is ignored, nothing of the file's own open runs.
    let found = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_PATH | nix::libc::O_CLOEXEC)
        .open(file)
        .ok()?;
    if !found.metadata().ok()?.is_file() || !stores_files(&found) {
        return None;
    }
    // The same file opened for reading (never another put at the path meanwhile); without a
    // /proc, by its path, and read only when it is that file.
    let flags = nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY;
    let reopen = |path: &Path| std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path);
    let f = match reopen(Path::new(&format!("/proc/self/fd/{}", found.as_raw_fd()))) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !Path::new("/proc/self").exists() => {
            let f = reopen(file).ok()?;
            let same = |a: &std::fs::File| a.metadata().ok().map(|m| (m.dev(), m.ino()));
            if same(&f) != same(&found) {
                return None;
            }
            f
        }
        Err(_) => return None,
    };
    let mut out = Vec::new();
    f.take(1 << 20).read_to_end(&mut out).ok()?;
    Some(out)
}

/// Whether the file behind `fd` lies on a filesystem that stores files, not one whose files
/// are the kernel's interfaces (reading `/proc/kmsg` takes the messages away from the host's
/// logger; sysfs, debugfs and the like act on the kernel when read).
#[cfg(target_os = "linux")]
fn stores_files(fd: &std::fs::File) -> bool {
    use nix::sys::statfs::{
        BPF_FS_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, DEBUGFS_MAGIC, DEVPTS_SUPER_MAGIC, FsType, NSFS_MAGIC,
        OPENPROM_SUPER_MAGIC, PROC_SUPER_MAGIC, RDTGROUP_SUPER_MAGIC, SECURITYFS_MAGIC, SELINUX_MAGIC, SMACK_MAGIC,
        SYSFS_MAGIC, TRACEFS_MAGIC, USBDEVICE_SUPER_MAGIC, XENFS_SUPER_MAGIC,
    };
    let Ok(fs) = nix::sys::statfs::fstatfs(fd) else { return false };
    let kind = fs.filesystem_type();
    let interfaces = [
        PROC_SUPER_MAGIC,
        SYSFS_MAGIC,
        DEBUGFS_MAGIC,
        TRACEFS_MAGIC,
        SECURITYFS_MAGIC,
        CGROUP_SUPER_MAGIC,
        CGROUP2_SUPER_MAGIC,
        BPF_FS_MAGIC,
        DEVPTS_SUPER_MAGIC,
        NSFS_MAGIC,
        SELINUX_MAGIC,
        SMACK_MAGIC,
        RDTGROUP_SUPER_MAGIC,
        USBDEVICE_SUPER_MAGIC,
        OPENPROM_SUPER_MAGIC,
        XENFS_SUPER_MAGIC,
        // efivarfs, pstore, configfs, binfmt_misc, fusectl, mqueue.
        FsType(0xde5e_81e4),
        FsType(0x6165_676c),
        FsType(0x6265_6570),
        FsType(0x4249_4e4d),
        FsType(0x6573_5543),
        FsType(0x1980_0202),
    ];
    !interfaces.contains(&kind)
}

/// See the Linux version.
#[cfg(not(target_os = "linux"))]
pub fn read_small(file: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Not a terminal's controlling one either (a file swapped for a link to one after the
    // caller looked: the Linux guard's init may be a session leader).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const FLAGS: i32 = 0o4000 | 0o400;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const FLAGS: i32 = 0x0004 | 0x20000;
    let f = std::fs::OpenOptions::new().read(true).custom_flags(FLAGS).open(file).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut out = Vec::new();
    f.take(1 << 20).read_to_end(&mut out).ok()?;
    Some(out)
}

/// The identity of the file at `path` (symlinks followed).
fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Reads `config` as git does (see [`parse_config`]) for what it points at. A file over 1 MiB
/// or not text is read as far as it is text (git would refuse it whole).
#[cfg(test)]
fn config_refs(config: &Path) -> ConfigRefs {
    config_refs_sized(config).0
}

/// [`config_refs`], and how many bytes were read.
fn config_refs_sized(config: &Path) -> (ConfigRefs, usize) {
    let mut out = ConfigRefs::default();
    let Some(bytes) = read_small(config) else { return (out, 0) };
    let size = bytes.len();
    let text = String::from_utf8_lossy(&bytes);
    for (key, value) in parse_config(&text) {
        if value.is_empty() {
            continue;
        }
        if key == "core.hookspath" {
            out.hooks_paths.push(PathBuf::from(value));
        } else if key == "core.excludesfile" || key == "core.attributesfile" {
            // Files that decide what git shows: a line added to them hid a new file from the
            // host's `git status`, or made `git diff` print "Binary files differ" (red team AW,
            // 6 December). Protected as entries.
            out.files.push(PathBuf::from(value));
        } else if names_a_command(&key, &value) {
            out.commands.push(value.strip_prefix("ext::").map(str::to_owned).unwrap_or(value));
        } else if key == "include.path"
            || (key.starts_with("includeif.") && key.ends_with(".path") && key.len() > "includeif..path".len())
        {
            out.includes.push(PathBuf::from(value));
        }
    }
    (out, size)
}

/// Whether the config key `key` (as [`parse_config`] names it) with `value` is a command git
/// runs: `core.fsmonitor`, editors, pagers, `sshCommand`, `askPass`, credential helpers, GPG
/// programs, `diff.external`, a filter's `clean`, `smudge` or `process`, a diff driver's
/// `textconv` or `command`, a merge driver, a diff or merge tool's `cmd`, a browser's `cmd`,
/// `uploadpack.packObjectsHook`, and `!` aliases.
fn names_a_command(key: &str, value: &str) -> bool {
    // Keys whose last part says the value is run (`filter.<driver>.clean`, `trailer.<t>.cmd`,
    // `difftool.<t>.path`, `gpg.ssh.defaultKeyCommand`, `remote.<r>.uploadpack`, …), and the
    // few whose name does not say so.
    const LAST: &[&str] = &[
        "cmd",
        "command",
        "program",
        "helper",
        "driver",
        "textconv",
        "clean",
        "smudge",
        "process",
        "editor",
        "pager",
        "sshcommand",
        "askpass",
        "fsmonitor",
        "gitproxy",
        "uploadpack",
        "receivepack",
        "packobjectshook",
        "defaultkeycommand",
        "alternaterefscommand",
        "sendmailcmd",
        "tocmd",
        "cccmd",
        "browser",
        "external",
        // `interactive.diffFilter` (run by `git add -p`), `sendemail.smtpServer` (a path is run
        // as sendmail), `instaweb.httpd` (red team AW, 6 December).
        "difffilter",
        "smtpserver",
        "httpd",
        // Not a command, but what the host's next `git init` or `git clone` copies hooks from.
        "templatedir",
    ];
    let Some((section, rest)) = key.split_once('.') else { return false };
    let last = rest.rsplit('.').next().unwrap_or(rest);
    match section {
        "alias" => value.starts_with('!'),
        "submodule" => last == "update" && value.starts_with('!'),
        "pager" => true,
        // `remote.<r>.url = ext::<command>` (git runs the command where `protocol.ext.allow`
        // lets it).
        "remote" => matches!(last, "url" | "pushurl") && value.starts_with("ext::") || LAST.contains(&last),
        "difftool" | "mergetool" | "man" | "browser" => matches!(last, "cmd" | "path"),
        "include" | "includeif" => false,
        _ => LAST.contains(&last),
    }
}

/// The words of a command line that may name files, for [`Walker::command_file`]: split at
/// unquoted whitespace and `;&|()`, quotes removed, the words of a quoted command line
/// (`sh -c './x.sh --fix'`) too, `$CLAUDE_PROJECT_DIR` (also `${…}`) put as `project` when
/// one is given, a leading `!` (a git alias) dropped. Kept: words with a `/`, and bare words
/// (`sh fsmon.sh`, `python3 -m pkg`: a file or module in the directory it runs in) except the
/// command's own first word (found on PATH) when `program` says the line starts with one.
/// Skipped: options, `%` placeholders, `NAME=value` assignments and globs. A word with `$` or a
/// backquote (`"$(git rev-parse --show-toplevel)/top.sh"`) stands for what follows the last
/// expansion in it, relative.
fn command_paths(command: &str, project: Option<&Path>, program: bool) -> Vec<PathBuf> {
    let mut text = command.trim_start().trim_start_matches('!').to_owned();
    if let Some(project) = project.and_then(Path::to_str) {
        for var in ["${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"] {
            text = text.replace(var, project);
        }
    }
    let separator = |c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')');
    let mut words: Vec<String> = Vec::new();
    let (mut word, mut quote) = (String::new(), None::<char>);
    for c in text.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, c) if separator(c) => words.push(std::mem::take(&mut word)),
            _ => word.push(c),
        }
    }
    words.push(word);
    let first = words.iter().position(|w| !w.is_empty());
    let inner: Vec<String> = words
        .iter()
        .filter(|w| w.contains(char::is_whitespace))
        .flat_map(|w| w.split(separator))
        .map(str::to_owned)
        .collect();
    let program_word = first.filter(|_| program).map(|i| words[i].clone());
    words.extend(inner);
    // What a shell expansion gives when its variable is unset (`${NOPE:-srv.js}`), an option's
    // value (`--import=./imp.mjs`), and the files of a module Python runs (`-m pkg.mod`: the
    // package's directory and `pkg/mod.py`) are words too (a red team, 5 December).
    let mut more = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let mut rest = w.as_str();
        while let Some(at) = rest.find("${") {
            let inner = &rest[at + 2..];
            let Some(end) = inner.find('}') else { break };
            if let Some((_, default)) = inner[..end].split_once([':', '-', '=', '+']) {
                more.push(default.trim_start_matches([':', '-', '=', '+']).to_owned());
            }
            rest = &inner[end + 1..];
        }
        if w.starts_with('-') {
            // A value that looks like a path (`--x=1` names no file).
            if let Some((_, value)) = w.split_once('=').filter(|(_, v)| v.contains(['/', '.'])) {
                more.push(value.to_owned());
            }
        }
        if i > 0 && words[i - 1] == "-m" && !w.is_empty() && !w.starts_with('-') {
            let module = w.replace('.', "/");
            more.push(format!("{module}.py"));
            if let Some((package, _)) = module.split_once('/') {
                more.push(package.to_owned());
            } else {
                // Python runs `__pycache__/<module>.cpython-*.pyc` in place of `<module>.py`
                // when its stamp matches the source's (red team AW, 6 December: a planted one,
                // ignored by git, ran at the host's `python3 -m`). A package's cache lies in
                // its directory, protected whole above.
                more.push(format!("{module}/__main__.py"));
                more.push(String::from("__pycache__"));
            }
        }
    }
    words.extend(more);
    let mut out = Vec::new();
    for (i, w) in words.into_iter().enumerate() {
        let w = if w.contains(['$', '`']) {
            let after = w.rfind([')', '}', '`']).map_or_else(
                || w.split_once('/').map_or("", |(_, rest)| rest),
                |at| w[at + 1..].trim_start_matches('/'),
            );
            after.to_owned()
        } else {
            w
        };
        let bare_program = Some(i) == first && program_word.as_deref() == Some(w.as_str()) && !w.contains('/');
        if w.is_empty()
            || bare_program
            || w.starts_with('-')
            || w.contains(['%', '*', '?', '[', '{', '$', '`'])
            || (w.contains('=') && !w.contains('/'))
        {
            continue;
        }
        out.push(PathBuf::from(w));
    }
    out.sort();
    out.dedup();
    out
}

/// The `(name, value)` pairs of a git config text, as git's parser reads them (config.c):
/// names `section.key` or `section.subsection.key` (section and key lower-cased, the
/// subsection as written, and the old `[section.sub]` form lower-cased whole); a key on a
/// header's line (`[core] hooksPath = x`); comments from an unquoted `;` or `#`; double quotes;
/// the escapes `\\`, `\"`, `\n`, `\t`, `\b`; a backslash at the end of a line continuing the
/// value on the next; runs of unquoted whitespace inside a value kept as spaces, at its ends
/// dropped; CRLF line ends. A key without `=` has the empty value. Where git would stop at a
/// syntax error this reads on (what follows is at worst protected too).
fn parse_config(text: &str) -> Vec<(String, String)> {
    let chars: Vec<char> = text.replace("\r\n", "\n").chars().collect();
    let mut out = Vec::new();
    let mut section = String::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' || c.is_whitespace() {
            i += 1;
        } else if c == '#' || c == ';' {
            while at(i).is_some_and(|c| c != '\n') {
                i += 1;
            }
        } else if c == '[' {
            // `[name]`, `[name "sub"]` or `[name.sub]`.
            i += 1;
            let mut name = String::new();
            while let Some(c) = at(i).filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.') {
                name.push(c.to_ascii_lowercase());
                i += 1;
            }
            while at(i).is_some_and(|c| c == ' ' || c == '\t') {
                i += 1;
            }
            if at(i) == Some('"') {
                i += 1;
                let mut sub = String::new();
                while let Some(c) = at(i).filter(|c| *c != '"' && *c != '\n') {
                    if c == '\\' {
                        i += 1;
                        if let Some(e) = at(i).filter(|c| *c != '\n') {
                            sub.push(e);
                        }
                    } else {
                        sub.push(c);
                    }
                    i += 1;
                }
                i += 1; // the closing quote
                name = format!("{name}.{sub}");
            }
            while at(i).is_some_and(|c| c != ']' && c != '\n') {
                i += 1;
            }
            if at(i) == Some(']') {
                i += 1;
            }
            section = name;
        } else if c.is_ascii_alphabetic() {
            let mut key = String::new();
            while let Some(c) = at(i).filter(|c| c.is_ascii_alphanumeric() || *c == '-') {
                key.push(c.to_ascii_lowercase());
                i += 1;
            }
            while at(i).is_some_and(|c| c == ' ' || c == '\t') {
                i += 1;
            }
            let mut value = String::new();
            if at(i) == Some('=') {
                i += 1;
                let (mut quote, mut comment, mut space) = (false, false, 0usize);
                while let Some(c) = at(i) {
                    i += 1;
                    if c == '\n' {
                        break;
                    }
                    if comment {
                        continue;
                    }
                    if c.is_whitespace() && !quote {
                        if !value.is_empty() {
                            space += 1;
                        }
                        continue;
                    }
                    if !quote && (c == ';' || c == '#') {
                        comment = true;
                        continue;
                    }
                    value.extend(std::iter::repeat_n(' ', space));
                    space = 0;
                    match c {
                        '\\' => {
                            let e = at(i);
                            i += 1;
                            match e {
                                Some('\n') => {}
                                Some('t') => value.push('\t'),
                                Some('b') => value.push('\u{8}'),
                                Some('n') => value.push('\n'),
                                Some(e @ ('\\' | '"')) => value.push(e),
                                // git refuses the file; read on
                                Some(e) => value.push(e),
                                None => {}
                            }
                        }
                        '"' => quote = !quote,
                        c => value.push(c),
                    }
                }
            } else {
                // A boolean key, or garbage: skipped to the line's end.
                while at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
            }
            if !section.is_empty() {
                out.push((format!("{section}.{key}"), value));
            }
        } else {
            // Not git's syntax: skipped to the line's end.
            while at(i).is_some_and(|c| c != '\n') {
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    /// A workspace in a fresh temporary directory and a profile that writes it.
    fn writable_workspace() -> (tempfile::TempDir, PathBuf, crate::Profile) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let profile = crate::Profile::new(crate::ProfileConfig {
            workspace_root: ws.clone(),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            ..crate::ProfileConfig::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        (dir, ws, profile)
    }

    #[test]
    fn keys_that_name_commands_are_known_as_in_git() {
        for (key, value) in [
            ("core.fsmonitor", "./x"),
            ("core.pager", "less"),
            ("core.sshcommand", "ssh"),
            ("filter.lfs.clean", "x"),
            ("filter.a.b.smudge", "x"),
            ("filter.x.process", "x"),
            ("diff.bin.textconv", "x"),
            ("merge.ours.driver", "x"),
            ("alias.hi", "!sh x"),
            ("credential.https://h.example.helper", "x"),
            ("gpg.ssh.program", "x"),
            ("pager.log", "x"),
            ("difftool.k.cmd", "x"),
            ("submodule.lib.update", "!./up.sh"),
            ("init.templatedir", "~/tpl"),
        ] {
            assert!(names_a_command(key, value), "{key}");
        }
        for (key, value) in [
            ("alias.st", "status"),
            ("core.bare", "false"),
            ("user.name", "./x"),
            ("remote.origin.url", "./x"),
            ("submodule.lib.update", "rebase"),
        ] {
            assert!(!names_a_command(key, value), "{key}");
        }
    }

    #[test]
    fn jsonc_reads_as_json_and_agent_files_are_known() {
        let text = "{\n // tasks\n \"tasks\": [{\"command\": \"sh x.sh // not a comment\", /* c */ \"args\": [\"a/b\",],},],\n}";
        let v: serde_json::Value = serde_json::from_str(&strip_jsonc(text)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["tasks"][0]["command"], "sh x.sh // not a comment");
        assert_eq!(v["tasks"][0]["args"][0], "a/b");
        for (file, project) in [
            ("/p/.mcp.json", Some("/p")),
            ("/p/.devcontainer.json", Some("/p")),
            ("/p/.claude/settings.json", Some("/p")),
            ("/p/.cursor/mcp.json", Some("/p")),
            ("/p/.vscode/tasks.json", Some("/p")),
            ("/p/.devcontainer/devcontainer.json", Some("/p")),
            ("/p/opencode.json", Some("/p")),
            ("/p/opencode.jsonc", Some("/p")),
            ("/p/.gemini/settings.json", Some("/p")),
            ("/p/.zed/settings.json", Some("/p")),
            ("/p/.zed/tasks.json", Some("/p")),
            ("/p/.continue/config.json", Some("/p")),
            ("/p/.roo/mcp.json", Some("/p")),
            ("/p/.amazonq/mcp.json", Some("/p")),
            ("/p/.kiro/settings/mcp.json", Some("/p")),
            ("/p/.junie/mcp/mcp.json", Some("/p")),
            ("/p/.qwen/settings.json", Some("/p")),
            ("/p/.kilocode/mcp.json", Some("/p")),
            ("/p/crush.json", Some("/p")),
            ("/p/.crush.json", Some("/p")),
            ("/p/.windsurf/hooks.json", Some("/p")),
            ("/p/.factory/hooks.json", Some("/p")),
            ("/p/.factory/mcp.json", Some("/p")),
            ("/p/.augment/settings.json", Some("/p")),
            ("/p/.github/hooks/pre-tool.json", Some("/p")),
            ("/p/.github/hooks/notes.md", None),
            ("/p/hooks/x.json", None),
            ("/p/.kiro/mcp/mcp.json", None),
            ("/p/.junie/settings/mcp.json", None),
            ("/p/other/settings/mcp.json", None),
            ("/p/.gemini/config.json", None),
            ("/p/.vscode/launch.json", None),
            ("/p/settings.json", None),
        ] {
            assert_eq!(agent_project(Path::new(file)), project.map(PathBuf::from), "{file}");
        }
    }

    #[test]
    fn command_words_that_name_files() {
        let words = |c: &str, p: Option<&str>| -> Vec<String> {
            command_paths(c, p.map(Path::new), true).iter().map(|w| w.display().to_string()).collect()
        };
        assert_eq!(words("./fsmon.sh", None), ["./fsmon.sh"]);
        assert_eq!(words("sh fsmon.sh", None), ["fsmon.sh"]);
        assert_eq!(words("python3 -m mcpsrv", None), ["__pycache__", "mcpsrv", "mcpsrv/__main__.py", "mcpsrv.py"]);
        assert_eq!(words("python3 -m pkg.srv", None), ["pkg", "pkg/srv.py", "pkg.srv"]);
        assert_eq!(words("node ${NOPE:-srv5.js}", None), ["srv5.js"]);
        assert_eq!(words("node ${A-x/a.js} ${B:=b.js}", None), ["b.js", "x/a.js"]);
        assert_eq!(words("node --import=./imp.mjs srv.js", None), ["./imp.mjs", "srv.js"]);
        assert_eq!(words("!sh tools/a.sh --x=1 && bin/b", None), ["bin/b", "tools/a.sh"]);
        assert_eq!(words("'my tools/c.sh' %f", None), ["my", "my tools/c.sh", "tools/c.sh"]);
        assert_eq!(words("sh -c './x.sh --fix; b/y'", None), ["./x.sh", "./x.sh --fix; b/y", "b/y"]);
        assert_eq!(words("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/f.sh", Some("/p")), ["/p/.claude/hooks/f.sh"]);
        assert_eq!(words("${CLAUDE_PROJECT_DIR}/h.sh;x/y", Some("/p")), ["/p/h.sh", "x/y"]);
        assert_eq!(words("git-lfs filter-process", None), ["filter-process"]);
        // (The inner words are taken too; `/top.sh` lies outside every area and is dropped later.)
        assert_eq!(
            words("\"$(git rev-parse --show-toplevel)/top.sh\"", None),
            ["/top.sh", "git", "rev-parse", "top.sh"]
        );
        assert_eq!(words("FOO=1 ./x.sh *.sh -o", None), ["./x.sh"]);
        let args: Vec<String> =
            command_paths("server.js", None, false).iter().map(|w| w.display().to_string()).collect();
        assert_eq!(args, ["server.js"], "an argument is no program");
    }

    #[test]
    fn hooks_path_and_includes_are_read_from_their_sections_only() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cfg = dir.path().join("config");
        let text = "[user]\n\thooksPath = nope\n[core]\n\tbare = false\n\tHooksPath = \".husky\"\n\
                    [include]\n\tpath = ../shared.gitconfig\n[includeIf \"gitdir:/x/\"]\n\tpath = /etc/x\n\
                    [include \"not-an-include\"]\n\tpath = /nope\n[includeIf]\n\tpath = /nope2\n";
        std::fs::write(&cfg, text).unwrap_or_else(|e| panic!("{e}"));
        let refs = config_refs(&cfg);
        assert_eq!(refs.hooks_paths, vec![PathBuf::from(".husky")]);
        assert_eq!(refs.includes, vec![PathBuf::from("../shared.gitconfig"), PathBuf::from("/etc/x")]);
        std::fs::write(&cfg, "[core]\n\tbare = false\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config_refs(&cfg), ConfigRefs::default());
        // A key on the header's line, as git accepts it.
        std::fs::write(&cfg, "[core] hooksPath = h2\n[include] path = inc\n").unwrap_or_else(|e| panic!("{e}"));
        let refs = config_refs(&cfg);
        assert_eq!(refs.hooks_paths, vec![PathBuf::from("h2")]);
        assert_eq!(refs.includes, vec![PathBuf::from("inc")]);
    }

    /// The value git gives `core.hooksPath` in `text` (after a `[core]` header).
    fn hooks_value(text: &str) -> Vec<(String, String)> {
        parse_config(&format!("[core]\n{text}")).into_iter().filter(|(k, _)| k == "core.hookspath").collect()
    }

    #[test]
    fn values_lose_their_comments_as_in_git() {
        let v = |t: &str| hooks_value(t).pop().map(|(_, v)| v);
        assert_eq!(v("\thooksPath = .githooks ; team hooks\n").as_deref(), Some(".githooks"));
        assert_eq!(v("\thooksPath = .githooks # team hooks\n").as_deref(), Some(".githooks"));
        assert_eq!(v("\thooksPath = .githooks;x\n").as_deref(), Some(".githooks"));
        assert_eq!(v("\thooksPath = \"a;b\" # c\n").as_deref(), Some("a;b"));
        // Whole-line comments, and a comment after a header.
        assert_eq!(v("; hooksPath = no\n# hooksPath = no\n\thooksPath = yes\n").as_deref(), Some("yes"));
        assert_eq!(hooks_value("; hooksPath = no\n"), vec![]);
        let p = parse_config("[core] # comment\n\thooksPath = h\n");
        assert_eq!(p, vec![(String::from("core.hookspath"), String::from("h"))]);
    }

    #[test]
    fn values_are_unquoted_unescaped_and_continued_as_in_git() {
        let v = |t: &str| hooks_value(t).pop().map(|(_, v)| v);
        assert_eq!(v("\thooksPath = \"my hooks\"\n").as_deref(), Some("my hooks"));
        assert_eq!(v("\thooksPath = my\"  \"hooks\n").as_deref(), Some("my  hooks"));
        assert_eq!(v("\thooksPath = my \t hooks   \n").as_deref(), Some("my   hooks"));
        assert_eq!(v("\thooksPath = a\\\\b\\\"c\n").as_deref(), Some("a\\b\"c"));
        assert_eq!(v("\thooksPath = a\\tb\n").as_deref(), Some("a\tb"));
        // A backslash at a line's end continues the value; CRLF ends a line too.
        assert_eq!(v("\thooksPath = .git\\\nhooks ; x\n").as_deref(), Some(".githooks"));
        assert_eq!(v("\thooksPath = .githooks\r\n\tbare = false\r\n").as_deref(), Some(".githooks"));
        assert_eq!(v("\thooksPath = \".git\\\nhooks\"\n").as_deref(), Some(".githooks"));
        // Keys are case-insensitive; a boolean key has no value.
        assert_eq!(v("\tHOOKSPATH=x\n").as_deref(), Some("x"));
        assert_eq!(v("\thooksPath\n").as_deref(), Some(""));
    }

    #[test]
    fn sections_are_named_as_in_git() {
        let names = |t: &str| parse_config(t).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(names("[Core]\nHooksPath = x\n"), vec!["core.hookspath"]);
        assert_eq!(names("[core.Sub]\nk = x\n"), vec!["core.sub.k"]);
        assert_eq!(names("[includeIf \"gitdir:~/W/\"]\npath = x\n"), vec!["includeif.gitdir:~/W/.path"]);
        assert_eq!(names("[includeIf \"a\\\"b\"]\npath = x\n"), vec!["includeif.a\"b.path"]);
        assert_eq!(names("[include]path=x\n[core]hooksPath=y\n"), vec!["include.path", "core.hookspath"]);
        // Outside any section nothing is a key.
        assert_eq!(names("hooksPath = x\n"), Vec::<String>::new());
    }

    #[test]
    fn every_hooks_path_and_nested_include_is_followed_once() {
        let (_dir, ws, profile) = writable_workspace();
        repo_with(
            &ws,
            "\thooksPath = first\n\thooksPath = second\n[include]\n\tpath = ../a.inc\n",
            &[
                // A loop of includes ends (each file is read once), and depth is bounded.
                ("repo/a.inc", "[include]\n\tpath = b.inc\n[core]\n\thooksPath = third\n"),
                ("repo/b.inc", "[include]\n\tpath = a.inc\n\tpath = /dev/null\n"),
            ],
        );
        let found = scan(&profile, None);
        for rel in ["repo/first", "repo/second", "repo/third", "repo/b.inc"] {
            assert!(protects(&found, &ws.join(rel)), "{rel}: {found:?}");
        }
    }

    #[test]
    fn a_config_that_is_a_fifo_does_not_stall_the_scan() {
        let (_dir, ws, profile) = writable_workspace();
        repo_with(&ws, "[include]\n\tpath = ../fifo\n", &[]);
        let made = std::process::Command::new("mkfifo").arg(ws.join("repo/fifo")).status();
        assert!(made.is_ok_and(|s| s.success()));
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("repo/fifo"), true)), "{found:?}");
    }

    #[test]
    fn a_memo_scan_finds_what_a_fresh_scan_finds_after_every_change() {
        let (_dir, ws, profile) = writable_workspace();
        let mk = |p: &str| std::fs::create_dir_all(ws.join(p)).unwrap_or_else(|e| panic!("{e}"));
        mk("a/b/c");
        mk("pkg/.vscode");
        mk("repo/.git/hooks");
        std::fs::write(ws.join("repo/.git/config"), "[core]\n\thooksPath = .husky\n").unwrap_or_else(|e| panic!("{e}"));
        let memo = ScanMemo::default();
        let same = |what: &str| {
            let (a, b) = (scan_with(&profile, None, Some(&memo)), scan(&profile, None));
            assert_eq!(a, b, "{what}");
            a
        };
        let first = same("first");
        assert!(first.existing.contains(&(ws.join("pkg/.vscode"), false)));
        assert!(first.missing.contains(&ws.join("repo/.husky")));
        mk("a/b/c/.envrc");
        assert!(same("added deep").existing.contains(&(ws.join("a/b/c/.envrc"), false)));
        std::fs::rename(ws.join("a"), ws.join("z")).unwrap_or_else(|e| panic!("{e}"));
        assert!(same("renamed").existing.contains(&(ws.join("z/b/c/.envrc"), false)));
        std::fs::remove_dir(ws.join("pkg/.vscode")).unwrap_or_else(|e| panic!("{e}"));
        assert!(!same("removed").existing.iter().any(|(p, _)| p.ends_with(".vscode")));
    }

    /// What the HOME's readers found is reused while nothing it depends on changed, and read
    /// again after any change: a file a start-up file sources written, a dotfile link
    /// re-pointed, the directory holding a sourced file swapped for another, a new start-up
    /// file, a listed entry's directory made a link into the workspace. Each case's record is marked (a finding added to it) to tell a reuse from a read.
    #[test]
    fn a_home_record_is_reused_until_what_it_depends_on_changes() {
        type Change = fn(&Path, &Path);
        let cases: [(&str, Change); 5] = [
            ("a sourced file written", |_, ws| {
                let mut text = std::fs::read_to_string(ws.join("env/a.sh")).unwrap_or_else(|e| panic!("{e}"));
                text.push_str(&format!(". {}/env/c.sh\n", ws.display()));
                std::fs::write(ws.join("env/a.sh"), text).unwrap_or_else(|e| panic!("{e}"));
            }),
            ("a link re-pointed", |home, ws| {
                std::fs::remove_file(home.join(".config/tmux")).unwrap_or_else(|e| panic!("{e}"));
                std::os::unix::fs::symlink(ws.join("dot/tmux2"), home.join(".config/tmux"))
                    .unwrap_or_else(|e| panic!("{e}"));
            }),
            ("a directory swapped", |_, ws| {
                std::fs::rename(ws.join("env"), ws.join("env.old")).unwrap_or_else(|e| panic!("{e}"));
                std::fs::create_dir(ws.join("env")).unwrap_or_else(|e| panic!("{e}"));
                std::fs::write(ws.join("env/a.sh"), format!(". {}/env/d.sh\n", ws.display()))
                    .unwrap_or_else(|e| panic!("{e}"));
            }),
            ("a start-up file made", |home, ws| {
                std::fs::write(home.join(".zshrc"), format!("{}/tools/z\n", ws.display()))
                    .unwrap_or_else(|e| panic!("{e}"));
            }),
            ("a listed entry's directory made a link into the workspace", |home, ws| {
                std::fs::create_dir_all(ws.join("ssh")).unwrap_or_else(|e| panic!("{e}"));
                std::os::unix::fs::symlink(ws.join("ssh"), home.join(".ssh")).unwrap_or_else(|e| panic!("{e}"));
            }),
        ];
        // Under `/var/tmp`: the directories a record depends on include every one on the way
        // to the files, and `/tmp` changes all the time while the other tests run.
        let parent = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap_or_else(|e| panic!("{e}"));
        let parent_path = std::fs::canonicalize(parent.path()).unwrap_or_else(|e| panic!("{e}"));
        let mut made = Vec::new();
        for (i, _) in cases.iter().enumerate() {
            let ws = parent_path.join(format!("ws{i}"));
            let home_path = parent_path.join(format!("home{i}"));
            std::fs::create_dir_all(&home_path).unwrap_or_else(|e| panic!("{e}"));
            std::fs::create_dir_all(&ws).unwrap_or_else(|e| panic!("{e}"));
            let profile = crate::Profile::new(crate::ProfileConfig {
                workspace_root: ws.clone(),
                workspace_read: Access::Allow,
                workspace_write: Access::Allow,
                ..crate::ProfileConfig::default()
            })
            .unwrap_or_else(|e| panic!("{e}"));
            std::fs::create_dir_all(ws.join("env")).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(home_path.join(".bashrc"), format!(". {}/env/a.sh\n", ws.display()))
                .unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(ws.join("env/a.sh"), format!(". {}/env/b.sh\n", ws.display()))
                .unwrap_or_else(|e| panic!("{e}"));
            std::fs::create_dir_all(home_path.join(".config")).unwrap_or_else(|e| panic!("{e}"));
            std::os::unix::fs::symlink(ws.join("dot/tmux"), home_path.join(".config/tmux"))
                .unwrap_or_else(|e| panic!("{e}"));
            made.push((ws, home_path, profile));
        }
        for ((what, change), (ws, home, profile)) in cases.iter().zip(&made) {
            // A record is kept only where nothing it depends on changed in the two seconds
            // before the reading (`/var/tmp` itself may have, now and then).
            let memo = ScanMemo::default();
            let mut first = None;
            for _ in 0..5 {
                std::thread::sleep(std::time::Duration::from_millis(2100));
                first = Some(scan_with(profile, Some(home), Some(&memo)));
                if memo.inner.lock().unwrap_or_else(|e| panic!("{e}")).home.is_some() {
                    break;
                }
            }
            let first = first.unwrap_or_else(|| panic!("{what}: scanned"));
            assert_eq!(first, scan(profile, Some(home)), "{what}: first");
            for p in ["env/a.sh", "env/b.sh", "dot/tmux"] {
                assert!(protects(&first, &ws.join(p)), "{what}: {p}: {first:?}");
            }
            let mark = |memo: &ScanMemo| {
                let mut m = memo.inner.lock().unwrap_or_else(|e| panic!("{e}"));
                let record = m.home.as_mut().unwrap_or_else(|| panic!("{what}: a record was kept"));
                record.calls.push(HomeCall::CommandFile(ws.join("marker")));
            };
            // Unchanged: the record is reused (the mark is found), and then found again.
            mark(&memo);
            for round in 0..2 {
                let again = scan_with(profile, Some(home), Some(&memo));
                assert!(protects(&again, &ws.join("marker")), "{what}: round {round}: not reused");
            }
            // Kept between processes (the CLI's memo), it is reused there too; one naming a
            // relative path is refused.
            let bytes = memo.to_kept().unwrap_or_else(|| panic!("{what}: a new memo is kept"));
            let restored = ScanMemo::from_kept(&bytes).unwrap_or_else(|| panic!("{what}: the bytes are a memo"));
            assert!(protects(&scan_with(profile, Some(home), Some(&restored)), &ws.join("marker")), "{what}: kept");
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let relative =
                text.replacen(&format!("{{\"command_file\":\"{}", ws.display()), "{\"command_file\":\"rel", 1);
            assert_ne!(relative, text, "{what}");
            assert!(ScanMemo::from_kept(relative.as_bytes()).is_none(), "{what}: a relative path was taken");
            change(home, ws);
            let restored = ScanMemo::from_kept(&bytes).unwrap_or_else(|| panic!("{what}: the bytes are a memo"));
            let after = scan_with(profile, Some(home), Some(&restored));
            assert!(!protects(&after, &ws.join("marker")), "{what}: the kept record was reused after the change");
            let after = scan_with(profile, Some(home), Some(&memo));
            assert!(!protects(&after, &ws.join("marker")), "{what}: reused after the change");
            assert_eq!(after, scan(profile, Some(home)), "{what}: after");
        }
        let found = |i: usize, p: &str| {
            let (ws, home, profile) = &made[i];
            protects(&scan(profile, Some(home)), &ws.join(p))
        };
        assert!(found(0, "env/c.sh") && found(1, "dot/tmux2") && found(2, "env/d.sh") && found(3, "tools/z"));
        assert!(found(4, "ssh/authorized_keys") && found(4, "ssh/rc"));
    }

    /// A memo kept between processes (`to_kept`, `from_kept`): restored, it reuses the listings
    /// of directories unchanged for two seconds (nothing to keep again afterwards), finds what
    /// was added since in a directory it had recorded, and refuses bytes that are not a memo.
    #[test]
    fn a_kept_memo_is_reused_and_still_finds_what_was_added_since() {
        let (_dir, ws, profile) = writable_workspace();
        let mk = |p: &str| std::fs::create_dir_all(ws.join(p)).unwrap_or_else(|e| panic!("{e}"));
        mk("deep/a/b");
        mk("pkg/.vscode");
        // Listings are recorded only of directories unchanged for two whole seconds.
        std::thread::sleep(std::time::Duration::from_millis(3100));
        let memo = ScanMemo::default();
        let first = scan_with(&profile, None, Some(&memo));
        assert_eq!(first, scan(&profile, None));
        let bytes = memo.to_kept().unwrap_or_else(|| panic!("a new memo is kept"));
        assert!(String::from_utf8_lossy(&bytes).contains(&ws.join("deep/a/b").display().to_string()));
        assert!(memo.to_kept().is_none(), "an unchanged memo is not kept again");
        // Another process restores it: the same result, and nothing was read again.
        let restored = ScanMemo::from_kept(&bytes).unwrap_or_else(|| panic!("the bytes are a memo"));
        assert_eq!(scan_with(&profile, None, Some(&restored)), first);
        assert!(restored.to_kept().is_none(), "the restored listings were read again");
        // Something added to a recorded directory (by the host, or by a run) is found.
        mk("deep/a/b/.envrc");
        let again = ScanMemo::from_kept(&bytes).unwrap_or_else(|| panic!("the bytes are a memo"));
        let after = scan_with(&profile, None, Some(&again));
        assert!(after.existing.contains(&(ws.join("deep/a/b/.envrc"), false)), "{after:?}");
        assert_eq!(after, scan(&profile, None));
        // Bytes that are not a memo, or name what no scan records, are refused.
        assert!(ScanMemo::from_kept(b"not json").is_none());
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let relative = text.replacen(&format!("\"dir\":\"{}", ws.display()), "\"dir\":\"rel", 1);
        assert_ne!(relative, text);
        assert!(ScanMemo::from_kept(relative.as_bytes()).is_none(), "a relative directory was taken");
        let slash = text.replacen("\"subdirs\":[\"", "\"subdirs\":[\"x/", 1);
        assert_ne!(slash, text);
        assert!(ScanMemo::from_kept(slash.as_bytes()).is_none(), "a name with a slash was taken");
    }

    /// A red team (5 December): an ancestor swapped (`RENAME_EXCHANGE`) between the stamp and
    /// the listing of a directory paired one directory's times with another's entries, and the
    /// kept memo hid a `.envrc` from every later scan. Scans race a thread that swaps `a` and
    /// `c` (whose children differ: `a/bN/.envrc`, `c/bN` empty) for a while; every listing the
    /// memo then holds is that of the directory with its inode. A path that is a symlink is not
    /// read through it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_listing_is_always_that_of_the_inode_it_is_recorded_with() {
        use std::os::unix::fs::MetadataExt;
        let (_dir, ws, profile) = writable_workspace();
        for i in 0..40 {
            std::fs::create_dir_all(ws.join(format!("a/b{i}"))).unwrap_or_else(|e| panic!("{e}"));
            std::fs::create_dir_all(ws.join(format!("c/b{i}"))).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(ws.join(format!("a/b{i}/.envrc")), "x").unwrap_or_else(|e| panic!("{e}"));
        }
        std::thread::sleep(std::time::Duration::from_millis(3100));
        // Each child directory's real listing, by inode.
        let mut truth: HashMap<u64, bool> = HashMap::new();
        for side in ["a", "c"] {
            for i in 0..40 {
                let d = ws.join(format!("{side}/b{i}"));
                let ino = std::fs::symlink_metadata(&d).unwrap_or_else(|e| panic!("{e}")).ino();
                truth.insert(ino, d.join(".envrc").exists());
            }
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, ws) = (std::sync::Arc::clone(&stop), ws.clone());
            std::thread::spawn(move || {
                let (a, c) = (ws.join("a"), ws.join("c"));
                let mut swaps = 0u32;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let _ = nix::fcntl::renameat2(None, &a, None, &c, nix::fcntl::RenameFlags::RENAME_EXCHANGE);
                    swaps += 1;
                }
                // Back in place.
                if swaps % 2 == 1 {
                    let _ = nix::fcntl::renameat2(None, &a, None, &c, nix::fcntl::RenameFlags::RENAME_EXCHANGE);
                }
            })
        };
        let memo = ScanMemo::default();
        let started = std::time::Instant::now();
        let mut checked = 0;
        while started.elapsed() < std::time::Duration::from_millis(1500) {
            let _ = scan_with(&profile, None, Some(&memo));
            let kept = memo.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for listing in kept.dirs.values() {
                if let Some(has) = truth.get(&listing.stamp.ino) {
                    checked += 1;
                    let listed = listing.hits.iter().any(|h| h == ".envrc");
                    assert_eq!(listed, *has, "a listing paired with another directory's inode");
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        swapper.join().unwrap_or_else(|_| panic!("the swapper"));
        assert!(checked > 0, "no listing of the swapped children was kept");
        std::os::unix::fs::symlink(ws.join("a"), ws.join("link")).unwrap_or_else(|e| panic!("{e}"));
        assert!(read_listing(&ws.join("link")).is_err(), "a symlink was read through");
    }

    #[test]
    fn commondir_is_protected_in_every_git_directory_and_its_worktrees() {
        let (_dir, ws, profile) = writable_workspace();
        let mk = |p: &str| std::fs::create_dir_all(ws.join(p)).unwrap_or_else(|e| panic!("{e}"));
        mk("repo/.git/hooks");
        mk("repo/.git/worktrees/wt");
        mk("repo/.git/modules/sub/hooks");
        std::fs::write(ws.join("repo/.git/modules/sub/HEAD"), "ref: refs/heads/main\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join("repo/.git/worktrees/wt/commondir"), "../..\n").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        assert!(found.missing.contains(&ws.join("repo/.git/commondir")), "{found:?}");
        assert!(found.existing.contains(&(ws.join("repo/.git/worktrees/wt/commondir"), true)), "{found:?}");
        assert!(found.missing.contains(&ws.join("repo/.git/modules/sub/commondir")), "{found:?}");
    }

    #[test]
    fn a_symlink_on_the_way_to_a_protected_name_protects_its_target() {
        let (_dir, ws, profile) = writable_workspace();
        let mk = |p: &str| std::fs::create_dir_all(ws.join(p)).unwrap_or_else(|e| panic!("{e}"));
        mk("claude-config");
        mk("pkg/real");
        mk("plain");
        std::os::unix::fs::symlink("claude-config", ws.join(".claude")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("real", ws.join("pkg/.claude")).unwrap_or_else(|e| panic!("{e}"));
        // A symlink whose name is on no protected name's way: left alone (the control).
        std::os::unix::fs::symlink("plain", ws.join("elsewhere")).unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("claude-config"), false)), "{found:?}");
        assert!(found.existing.contains(&(ws.join("pkg/real"), false)), "{found:?}");
        assert!(found.missing.contains(&ws.join(".claude")) && found.missing.contains(&ws.join("pkg/.claude")));
        assert!(!found.existing.iter().any(|(p, _)| p.ends_with("plain")), "{found:?}");
        assert!(found.narrowed.iter().any(|n| n.contains("claude-config")), "{found:?}");
    }

    #[test]
    fn the_rerere_caches_of_the_git_directories_found_are_unreadable() {
        let (_dir, ws, profile) = writable_workspace();
        let mk = |p: &str| std::fs::create_dir_all(ws.join(p)).unwrap_or_else(|e| panic!("{e}"));
        let put = |p: &str, t: &str| std::fs::write(ws.join(p), t).unwrap_or_else(|e| panic!("{e}"));
        mk("a/.git/rr-cache/x");
        mk("a/.git/modules/m/rr-cache");
        put("a/.git/modules/m/HEAD", "ref: refs/heads/main\n");
        for d in ["b.git/objects", "b.git/refs", "b.git/rr-cache"] {
            mk(d);
        }
        put("b.git/HEAD", "ref: refs/heads/main\n");
        // A file named rr-cache, and a directory of that name outside any git directory.
        mk("c/.git");
        put("c/.git/rr-cache", "x");
        mk("d/rr-cache");
        let found = scan(&profile, None);
        let mut got = found.unreadable.clone();
        got.sort();
        let want = ["a/.git/modules/m/rr-cache", "a/.git/rr-cache", "b.git/rr-cache"].map(|p| ws.join(p));
        assert_eq!(got, want, "{found:?}");
    }

    #[test]
    fn a_bare_repository_is_a_git_directory() {
        let (_dir, ws, profile) = writable_workspace();
        let mk = |p: &str| std::fs::create_dir_all(ws.join(p)).unwrap_or_else(|e| panic!("{e}"));
        mk("remote.git/objects");
        mk("remote.git/refs");
        mk("remote.git/hooks");
        std::fs::write(ws.join("remote.git/HEAD"), "ref: refs/heads/main\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join("remote.git/config"), "[core]\n\tbare = true\n").unwrap_or_else(|e| panic!("{e}"));
        // Not a git directory: `objects` is a file here (the control).
        mk("notes/refs");
        std::fs::write(ws.join("notes/HEAD"), "x").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join("notes/objects"), "x").unwrap_or_else(|e| panic!("{e}"));
        // Hidden by a rename of what git recognises it by: still found by its config.
        mk("hidden.git/objects-aside");
        mk("hidden.git/hooks");
        std::fs::write(ws.join("hidden.git/config"), "[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
            .unwrap_or_else(|e| panic!("{e}"));
        // A file named config that is not git's (the control).
        mk("app");
        std::fs::write(ws.join("app/config"), "[core]\nname = x\n").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("remote.git/hooks"), false)), "{found:?}");
        assert!(found.existing.contains(&(ws.join("remote.git/config"), true)), "{found:?}");
        assert!(found.existing.contains(&(ws.join("hidden.git/hooks"), false)), "{found:?}");
        assert!(!found.existing.iter().any(|(p, _)| p.starts_with(ws.join("app"))), "{found:?}");
        assert!(
            !found.missing.iter().chain(found.existing.iter().map(|(p, _)| p)).any(|p| p.starts_with(ws.join("notes")))
        );
    }

    #[test]
    fn a_scan_past_its_bound_refuses_the_spawn() {
        let (_dir, ws, profile) = writable_workspace();
        for i in 0..20 {
            std::fs::create_dir_all(ws.join(format!("d{i:02}"))).unwrap_or_else(|e| panic!("{e}"));
        }
        let within = scan_bounded(&profile, None, None, 100);
        assert_eq!(within.refused, None);
        let past = scan_bounded(&profile, None, None, 10);
        assert!(past.refused.as_deref().is_some_and(|r| r.starts_with("protected_paths:")), "{past:?}");
    }

    /// A repository at `ws/repo` whose `.git/config` is `config` (after a `[core]` line), with
    /// `extra` files written relative to `ws`.
    fn repo_with(ws: &Path, config: &str, extra: &[(&str, &str)]) {
        std::fs::create_dir_all(ws.join("repo/.git/hooks")).unwrap_or_else(|e| panic!("{e}"));
        let text = format!("[core]\n\trepositoryformatversion = 0\n{config}");
        std::fs::write(ws.join("repo/.git/config"), text).unwrap_or_else(|e| panic!("{e}"));
        for (rel, body) in extra {
            if let Some(parent) = ws.join(rel).parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(ws.join(rel), body).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// Red team AW (6 December): what a protected `.envrc` loads or puts on PATH, what an MCP
    /// server's `-m` module runs (its bytecode cache too), the files `core.excludesFile` and
    /// `core.attributesFile` name, and the commands of `interactive.diffFilter` and an `ext::`
    /// remote are protected. Control: a file none of them names stays writable.
    #[test]
    fn what_protected_configs_load_in_turn_is_protected() {
        let (_dir, ws, profile) = writable_workspace();
        let envrc = "source_env_if_exists .envrc.local\ndotenv_if_exists\nlayout node\nlayout python3\n\
                     PATH_add tools/bin\nexport PATH=$PWD/scripts:$PATH\nuse flake\n# source nope.sh\n";
        std::fs::write(ws.join(".envrc"), envrc).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join(".mcp.json"), r#"{"mcpServers":{"s":{"command":"python3","args":["-m","mcpsrv"]}}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        repo_with(
            &ws,
            "\texcludesFile = .myignore\n\tattributesFile = attrs/all\n[interactive]\n\tdiffFilter = ./tools/color.sh\n\
             [remote \"o\"]\n\turl = ext::sh tools/remote.sh\n",
            &[],
        );
        let found = scan(&profile, None);
        assert!(found.refused.is_none(), "{found:?}");
        for rel in [
            ".envrc.local",
            ".env",
            "node_modules/.bin",
            ".direnv",
            ".venv",
            "tools/bin",
            "scripts",
            "flake.nix",
            "mcpsrv.py",
            "__pycache__",
            "repo/.myignore",
            "repo/attrs/all",
            "repo/tools/color.sh",
            "repo/tools/remote.sh",
        ] {
            assert!(protects(&found, &ws.join(rel)), "{rel}: {found:?}");
        }
        assert!(!protects(&found, &ws.join("nope.sh")), "a comment names nothing");
        assert!(!protects(&found, &ws.join("repo/tools/other.sh")), "control");
    }

    /// Red team AY (6 December): a dotfiles repository as the workspace, the HOME's links into
    /// it (one dangling, one under `.config`) protect what they lead to; the shell start-up
    /// files protect the absolute and `~/` files they run (conda's); more of a `.envrc` (a
    /// layout, a variable, a continued line, a glob, `${DIRENV_DIR#-}`); packages run through
    /// npx that the project does not depend on; pre-commit's `entry:`. Controls beside each.
    #[test]
    fn what_the_home_and_hooks_run_in_turn_is_protected() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let (home, ws) = (root.join("home"), root.join("home/.dotfiles"));
        let mk = |p: &Path, text: &str| {
            std::fs::create_dir_all(p.parent().unwrap_or(Path::new("/"))).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(p, text).unwrap_or_else(|e| panic!("{e}"));
        };
        mk(
            &ws.join("bashrc"),
            &format!(
                "__c=\"$('{0}/miniconda3/bin/conda' 'shell.bash' 'hook')\"\n. ~/.bash_local\ncd {0}/miniconda3/envs\n\
                 export PATH=\"{0}/miniconda3/condabin:$PATH\"\n",
                home.display()
            ),
        );
        mk(&ws.join("config/tmux/tmux.conf"), "");
        mk(&ws.join("other"), "");
        std::fs::create_dir_all(home.join(".config")).unwrap_or_else(|e| panic!("{e}"));
        let link =
            |from: &str, to: &str| std::os::unix::fs::symlink(to, home.join(from)).unwrap_or_else(|e| panic!("{e}"));
        link(".bashrc", ".dotfiles/bashrc");
        link(".bash_local", ".dotfiles/bash_local");
        link(".config/tmux", "../.dotfiles/config/tmux");
        std::fs::create_dir_all(home.join("miniconda3/bin")).unwrap_or_else(|e| panic!("{e}"));
        let profile = crate::Profile::new(crate::ProfileConfig {
            workspace_root: ws.clone(),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            additional_roots: vec![crate::RootAccess {
                path: home.join("miniconda3"),
                read: Access::Allow,
                write: Access::Allow,
            }],
            ..crate::ProfileConfig::default()
        });
        let profile = profile.unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, Some(&home));
        assert!(found.refused.is_none(), "{found:?}");
        for p in [ws.join("bashrc"), ws.join("bash_local"), ws.join("config/tmux"), home.join("miniconda3/bin/conda")] {
            assert!(protects(&found, &p), "{}: {found:?}", p.display());
        }
        assert!(!protects(&found, &ws.join("other")), "control");
        assert!(protects(&found, &home.join("miniconda3/condabin")), "{found:?}");
        assert!(!protects(&found, &home.join("miniconda3/envs")), "a directory `cd` enters is no program: {found:?}");

        let (_dir, ws, profile) = writable_workspace();
        let envrc = "layout go\nd=tools\nPATH_add \"$d\"\nPATH_add \\\n  more\nfor f in env.d/*.sh; do source \"$f\"; done\n\
                     export PATH=\"${DIRENV_DIR#-}/bin2:$PATH\"\nuse devenv\n";
        mk(&ws.join(".envrc"), envrc);
        mk(&ws.join("package.json"), r#"{"devDependencies":{"prettier":"3"}}"#);
        mk(&ws.join(".mcp.json"), r#"{"mcpServers":{"f":{"command":"npx","args":["-y","@mcp/server-fs@1.2","."]}}}"#);
        mk(
            &ws.join(".claude/settings.json"),
            r#"{"hooks":{"PostToolUse":[{"hooks":[{"type":"command","command":"npx prettier --write ."}]}]}}"#,
        );
        mk(
            &ws.join(".pre-commit-config.yaml"),
            "repos:\n- repo: local\n  hooks:\n  - id: lint\n    entry: node_modules/.bin/eslint\n    language: system\n  - id: b\n    entry: |\n      sh tools/check.sh\n",
        );
        let found = scan(&profile, None);
        assert!(found.refused.is_none(), "{found:?}");
        for rel in [
            ".direnv",
            "tools",
            "more",
            "env.d",
            "bin2",
            "devenv.nix",
            "node_modules/@mcp/server-fs",
            "node_modules/.bin/server-fs",
            "node_modules/.bin/eslint",
            "tools/check.sh",
        ] {
            assert!(protects(&found, &ws.join(rel)), "{rel}: {found:?}");
        }
        assert!(!protects(&found, &ws.join("node_modules/prettier")), "a dependency of the project is its own");
        assert_eq!(npx_packages("pnpm dlx -p a@2 b --x"), ["a", "b"]);
        assert_eq!(npx_packages("'npx' '-y' '@s/p@latest' '.'"), ["@s/p"]);
        assert!(npx_packages("node x.js").is_empty());
        assert_eq!(run_words("a=1 exec /x/y z; . ~/s.sh && $(/p/q r) `/b/c`"), ["/x/y", "~/s.sh", "/p/q", "/b/c"]);
    }

    /// Red team BA (6 December): more of what start-up files, a `.envrc` and hook configs run.
    /// A HOME workspace whose `.bashrc` loads perl's local::lib by `-I$HOME/…`, puts a quoted
    /// `"$HOME"/tools` on PATH, sources a script that sources another, and activates a virtual
    /// environment; fish's config; a `.envrc` naming `.envrc.$(whoami)` and `lib/$1.sh`;
    /// pre-commit in flow style; `npm x`; a project's `.npmrc` and `.yarnrc.yml`. Controls: a
    /// file none of them names.
    #[test]
    fn what_start_up_files_and_hook_configs_run_is_protected_ba() {
        let (_dir, home, profile) = writable_workspace();
        let mk = |p: &Path, text: &str| {
            std::fs::create_dir_all(p.parent().unwrap_or(Path::new("/"))).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(p, text).unwrap_or_else(|e| panic!("{e}"));
        };
        mk(
            &home.join(".bashrc"),
            "eval \"$(perl -I$HOME/perl5/lib/perl5 -Mlocal::lib)\"\nPATH=\"$HOME\"/tools:$PATH\n. ~/sh/init.sh\n\
             source ~/venvs/t/bin/activate\n",
        );
        mk(&home.join("sh/init.sh"), ". ~/sh/aliases.sh\n");
        mk(&home.join("sh/aliases.sh"), "alias x=y\n");
        mk(&home.join("venvs/t/bin/activate"), "");
        mk(&home.join(".config/fish/config.fish"), "source ~/fish/extra.fish\n");
        mk(&home.join("other.sh"), "");
        mk(&home.join(".ssh/config"), "Include ~/dots/ssh/*.conf\nInclude ~/dots/extra.conf\n");
        let found = scan(&profile, Some(&home));
        assert!(found.refused.is_none(), "{found:?}");
        for rel in [
            "perl5/lib/perl5",
            "tools",
            "sh/init.sh",
            "sh/aliases.sh",
            "venvs/t",
            "fish/extra.fish",
            "dots/ssh",
            "dots/extra.conf",
        ] {
            assert!(protects(&found, &home.join(rel)), "{rel}: {found:?}");
        }
        assert!(!protects(&found, &home.join("other.sh")), "control");

        let (_dir, ws, profile) = writable_workspace();
        mk(
            &ws.join(".envrc"),
            "source_env_if_exists .envrc.$(whoami)\nload() { source \"lib/$1.sh\"; }\nd=tools; PATH_add \"$d\"/bin\nPATH_add \"$PWD\"\n",
        );
        mk(&ws.join(".vscode/mcp.json"), r#"{"servers":{"p":{"command":".venv/bin/python","args":["-m","m"]}}}"#);
        mk(
            &ws.join(".pre-commit-config.yaml"),
            "repos:\n- repo: local\n  hooks:\n  - {id: lint, entry: ./hooks/lint.sh, language: script}\n",
        );
        mk(&ws.join(".mcp.json"), r#"{"mcpServers":{"a":{"command":"npm","args":["x","-y","@acme/srv"]}}}"#);
        mk(&ws.join(".npmrc"), "node-options=--require ./.hook.js\nscript-shell=./.sh-wrap\n");
        mk(&ws.join("sub/.envrc"), "export NODE_OPTIONS=--require=./inj.js\n");
        mk(&ws.join(".yarnrc.yml"), "yarnPath: .yarn/releases/yarn-4.js\n");
        let found = scan(&profile, None);
        assert!(found.refused.is_none(), "{found:?}");
        let user = nix::unistd::User::from_uid(nix::unistd::geteuid()).ok().flatten().map(|u| u.name);
        let user = user.unwrap_or_else(|| panic!("no user name"));
        for rel in [
            format!(".envrc.{user}"),
            "lib".to_owned(),
            "hooks/lint.sh".to_owned(),
            "node_modules/@acme/srv".to_owned(),
            ".hook.js".to_owned(),
            ".sh-wrap".to_owned(),
            ".yarn/releases/yarn-4.js".to_owned(),
            "tools/bin".to_owned(),
            ".venv".to_owned(),
            "sub/inj.js".to_owned(),
        ] {
            assert!(protects(&found, &ws.join(&rel)), "{rel}: {found:?}");
        }
        assert!(found.no_new_entries.contains(&ws), "the project's top on PATH takes no new entry: {found:?}");
    }

    /// Red teams AV and AW (6 December): a workspace that covers the real HOME protects every
    /// hidden entry there, existing (bound) or not (`hidden_in`), and nothing else of it.
    #[test]
    fn a_writable_real_home_has_every_hidden_entry_protected() {
        let (_dir, ws, profile) = writable_workspace();
        for d in [".config/tmux", ".local/share/direnv/allow", "proj"] {
            std::fs::create_dir_all(ws.join(d)).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(ws.join(".inputrc"), "x").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, Some(&ws));
        assert!(found.refused.is_none(), "{found:?}");
        assert_eq!(found.hidden_in, vec![ws.clone()]);
        for rel in [".config", ".local", ".inputrc"] {
            assert!(found.existing.iter().any(|(p, _)| *p == ws.join(rel)), "{rel}: {found:?}");
        }
        assert!(!found.existing.iter().any(|(p, _)| *p == ws.join("proj")), "control: {found:?}");
        let guard = crate::protect::CreationGuard { hidden_in: found.hidden_in.clone(), ..Default::default() };
        assert!(guard.refuses(&ws.join(".direnvrc"), crate::protect::CreateOp::Create));
        assert!(guard.refuses(&ws.join(".config/gdb/gdbinit"), crate::protect::CreateOp::Create));
        assert!(!guard.refuses(&ws.join("proj/.x"), crate::protect::CreateOp::Create), "control");
        assert!(!guard.refuses(&ws.join("notes"), crate::protect::CreateOp::Create), "control");
        // Elsewhere than a writable HOME, nothing of the kind.
        let found = scan(&profile, Some(Path::new("/nonexistent-home")));
        assert!(found.hidden_in.is_empty(), "{found:?}");
        // A read-denied file root in a hidden entry changes nothing; a writable root inside one
        // keeps its entry unbound and new hidden entries allowed, reported narrowed.
        std::fs::create_dir_all(ws.join(".cache/pip")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join(".config/key"), "k").unwrap_or_else(|e| panic!("{e}"));
        let with_root = |path: &str, read: Access, write: Access| {
            let mut config = profile.config().clone();
            config.additional_roots = vec![crate::RootAccess { path: ws.join(path), read, write }];
            crate::Profile::new(config).unwrap_or_else(|e| panic!("{e}"))
        };
        let found = scan(&with_root(".config/key", Access::Deny, Access::Deny), Some(&ws));
        assert_eq!(found.hidden_in, vec![ws.clone()], "{found:?}");
        let found = scan(&with_root(".cache/pip", Access::Allow, Access::Allow), Some(&ws));
        assert!(found.hidden_in.is_empty(), "{found:?}");
        assert!(found.narrowed.iter().any(|n| n.starts_with("~/.*")), "{found:?}");
        assert!(!found.existing.iter().any(|(p, _)| *p == ws.join(".cache")), "{found:?}");
        assert!(found.existing.iter().any(|(p, _)| *p == ws.join(".config")), "{found:?}");
    }

    /// Whether the scan protects `path` (bound when it exists, refused when not).
    fn protects(found: &ProtectScan, path: &Path) -> bool {
        found.existing.iter().any(|(p, _)| p == path) || found.missing.iter().any(|p| p == path)
    }

    /// Red team AL (5 December): a config including one file through eight symlinked
    /// directories, ten levels deep, had the scan read 8^10 paths. Each file is read once by
    /// its identity now: the scan ends at once and protects the file and the links on the way to it
    /// (control). Past the bounds on files and includes, the spawn is refused.
    #[test]
    fn an_include_graph_is_read_once_per_file_and_bounded() {
        let (_dir, ws, profile) = writable_workspace();
        let mut inc = String::new();
        for i in 1..=8 {
            std::os::unix::fs::symlink(".", ws.join(format!("i{i}"))).unwrap_or_else(|e| panic!("{e}"));
            inc.push_str(&format!("[include]\n\tpath = i{i}/x\n"));
        }
        repo_with(&ws, "[include]\n\tpath = ../../x\n", &[("x", &inc)]);
        let start = std::time::Instant::now();
        let found = scan(&profile, None);
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "took {:?}", start.elapsed());
        assert_eq!(found.refused, None);
        assert!(protects(&found, &ws.join("x")), "{found:?}");
        // The symlinks on the way are protected too (as before).
        assert!(protects(&found, &ws.join("i3")), "{found:?}");

        // The same file hard-linked into another directory: its relative include names another
        // file there, which git reads, and is protected too.
        let (_dir, ws, profile) = writable_workspace();
        repo_with(
            &ws,
            "[include]\n\tpath = ../../a/x\n\tpath = ../../b/x\n",
            &[("a/x", "[include]\n\tpath = y\n"), ("a/y", ""), ("b/y", "")],
        );
        std::fs::hard_link(ws.join("a/x"), ws.join("b/x")).unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        assert!(protects(&found, &ws.join("a/y")) && protects(&found, &ws.join("b/y")), "{found:?}");

        // Distinct files, more than the scan reads: refused, naming the list.
        let (_dir, ws, profile) = writable_workspace();
        let many: String = (0..=MAX_CONFIG_FILES).map(|i| format!("[include]\n\tpath = ../../c/{i}\n")).collect();
        std::fs::create_dir(ws.join("c")).unwrap_or_else(|e| panic!("{e}"));
        for i in 0..=MAX_CONFIG_FILES {
            std::fs::write(ws.join(format!("c/{i}")), "[core]\n").unwrap_or_else(|e| panic!("{e}"));
        }
        repo_with(&ws, &many, &[]);
        let found = scan(&profile, None);
        assert!(
            found.refused.as_deref().is_some_and(|r| r.starts_with("protected_paths:") && r.contains("includes more")),
            "{:?}",
            found.refused
        );
    }

    /// Red team AN (5 December): the bounds are judged after the last config is read. A
    /// workspace whose configs came to exactly the file bound made the caller's global config
    /// the one past it, and its hooks path went unprotected while the spawn went ahead: it is
    /// refused now. Control: one fewer file in the workspace and the global config's relative
    /// hooks path is protected in the repository.
    #[test]
    fn a_bound_first_reached_in_the_global_config_refuses_the_spawn() {
        let (_dir, ws, profile) = writable_workspace();
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = std::fs::canonicalize(home.path()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(home.join(".gitconfig"), "[core]\n\thooksPath = .githooks\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(ws.join("c")).unwrap_or_else(|e| panic!("{e}"));
        let layout = |n: usize| {
            let many: String = (0..n).map(|i| format!("[include]\n\tpath = ../../c/{i}\n")).collect();
            for i in 0..n {
                std::fs::write(ws.join(format!("c/{i}")), "[core]\n").unwrap_or_else(|e| panic!("{e}"));
            }
            repo_with(&ws, &many, &[]);
        };
        // The repository's config and n included files: n + 1 reads in the walk.
        layout(MAX_CONFIG_FILES - 2);
        let found = scan(&profile, Some(&home));
        assert_eq!(found.refused, None);
        assert!(protects(&found, &ws.join("repo/.githooks")), "{:?}", found.missing);
        layout(MAX_CONFIG_FILES - 1);
        let found = scan(&profile, Some(&home));
        assert!(found.refused.as_deref().is_some_and(|r| r.contains("includes more")), "{:?}", found.refused);
    }

    /// Red team AN (5 December): thousands of bare layouts made in one run had every later
    /// spawn take half a minute (each a handful of mounts). Past the bound on entries the scan
    /// refuses at once; a few hundred are scanned (control).
    #[test]
    fn too_many_entries_are_refused_at_once() {
        let (_dir, ws, profile) = writable_workspace();
        let bare = |from: usize, to: usize| {
            for i in from..to {
                let d = ws.join(format!("d{i}"));
                std::fs::create_dir(&d).unwrap_or_else(|e| panic!("{e}"));
                std::fs::write(d.join("config"), "[core]\n\trepositoryformatversion = 0\n")
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        };
        bare(0, 300);
        let found = scan(&profile, None);
        assert_eq!(found.refused, None);
        assert!(protects(&found, &ws.join("d7/config")), "{found:?}");
        bare(300, 3000);
        let start = std::time::Instant::now();
        let found = scan(&profile, None);
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "took {:?}", start.elapsed());
        assert!(found.refused.as_deref().is_some_and(|r| r.contains("protected entries")), "{:?}", found.refused);
    }

    /// Red team AO (5 December): includes 400 components long under every other bound made
    /// every spawn take 14 s, and an include naming a missing file 16 directories deep gave the
    /// next spawn more mounts than the kernel allows (nested pins each bound with what lies
    /// beneath). Both are refused at once now; an entry 8 directories deep passes (control).
    #[test]
    fn long_includes_and_deeply_nested_entries_are_refused_at_once() {
        let (_dir, ws, profile) = writable_workspace();
        // Ten files of 150 includes 2,000 components long (each file under 1 MiB, read whole).
        let long = format!("{}x", "d/../".repeat(1000));
        let lines: String = (0..150).map(|_| format!("[include]\n\tpath = {long}\n")).collect();
        let files: Vec<(String, &str)> = (0..10).map(|i| (format!("c{i}"), lines.as_str())).collect();
        let extra: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let top: String = (0..10).map(|i| format!("[include]\n\tpath = ../../c{i}\n")).collect();
        std::fs::create_dir(ws.join("d")).unwrap_or_else(|e| panic!("{e}"));
        repo_with(&ws, &top, &extra);
        let start = std::time::Instant::now();
        let found = scan(&profile, None);
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "took {:?}", start.elapsed());
        assert!(found.refused.as_deref().is_some_and(|r| r.contains("path components")), "{:?}", found.refused);

        for (depth, refused) in [(8, false), (16, true)] {
            let (_dir, ws, profile) = writable_workspace();
            let deep = "d/".repeat(depth);
            std::fs::create_dir_all(ws.join(&deep)).unwrap_or_else(|e| panic!("{e}"));
            repo_with(&ws, &format!("[include]\n\tpath = ../../{deep}x\n"), &[]);
            let found = scan(&profile, None);
            assert_eq!(
                found.refused.as_deref().is_some_and(|r| r.contains("nested directories")),
                refused,
                "{depth}: {:?}",
                found.refused
            );
            if !refused {
                assert!(protects(&found, &ws.join(format!("{deep}x"))), "{found:?}");
            }
        }
    }

    /// A file met first at the include depth bound (its includes not followed) and again nearer
    /// the top has its includes followed then (red team AN, 5 December: the first look decided).
    #[test]
    fn a_config_met_again_nearer_the_top_has_its_includes_followed() {
        let (_dir, ws, profile) = writable_workspace();
        // .git/config includes c1 (…, c9 includes x: x at depth 10), then x at depth 1.
        let mut extra: Vec<(String, String)> =
            (1..9).map(|i| (format!("c{i}"), format!("[include]\n\tpath = c{}\n", i + 1))).collect();
        extra.push((String::from("c9"), String::from("[include]\n\tpath = x\n")));
        extra.push((String::from("x"), String::from("[include]\n\tpath = y\n")));
        extra.push((String::from("y"), String::new()));
        let extra: Vec<(&str, &str)> = extra.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        repo_with(&ws, "[include]\n\tpath = ../../c1\n\tpath = ../../x\n", &extra);
        let found = scan(&profile, None);
        assert!(protects(&found, &ws.join("x")), "{found:?}");
        assert!(protects(&found, &ws.join("y")), "{found:?}");
    }

    /// Red team AL (5 December): a config the workload wrote named `/proc/kmsg` and a device,
    /// and the scan (on the host, as the caller) opened and read them. Only regular files on
    /// filesystems that store files are read; a FIFO is not opened (the scan never waits).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_scan_reads_only_regular_files_that_a_filesystem_stores() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("file");
        std::fs::write(&file, "[core]\n").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&file, dir.path().join("link")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_small(&file).as_deref(), Some(&b"[core]\n"[..]));
        assert_eq!(read_small(&dir.path().join("link")).as_deref(), Some(&b"[core]\n"[..]), "followed, as git does");
        for other in ["/proc/self/status", "/proc/version", "/sys/kernel/uevent_seqnum", "/dev/null", "/dev/zero", "/"]
        {
            assert_eq!(read_small(Path::new(other)), None, "{other}");
        }
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        assert!(made, "mkfifo");
        assert_eq!(read_small(&fifo), None);
    }

    /// Red team AK (5 December): a chain of directories past PATH_MAX had every later spawn
    /// fail after 35 s, blaming a protected entry. The scan refuses such a tree at once, saying
    /// why; a deep tree within the bound is walked (control).
    #[test]
    fn a_directory_too_deep_to_be_named_is_refused_at_once() {
        let (_dir, ws, profile) = writable_workspace();
        let name = "d".repeat(200);
        let mut deep = ws.clone();
        for _ in 0..10 {
            deep.push(&name);
        }
        std::fs::create_dir_all(&deep).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(deep.join(".envrc"), "x\n").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        assert_eq!(found.refused, None);
        assert!(protects(&found, &deep.join(".envrc")), "{found:?}");
        for _ in 0..10 {
            deep.push(&name);
        }
        // Made by its relative name from within (the whole path is over PATH_MAX).
        let mut at = ws.clone();
        for _ in 0..10 {
            at.push(&name);
        }
        let made = std::process::Command::new("mkdir")
            .current_dir(&at)
            .arg("-p")
            .arg(std::iter::repeat_n(name.as_str(), 10).collect::<Vec<_>>().join("/"))
            .status()
            .is_ok_and(|s| s.success());
        assert!(made, "mkdir -p");
        let start = std::time::Instant::now();
        let found = scan(&profile, None);
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "took {:?}", start.elapsed());
        assert!(
            found.refused.as_deref().is_some_and(|r| r.starts_with("protected_paths:") && r.contains("longer than")),
            "{:?}",
            found.refused
        );
    }

    #[test]
    fn the_real_homes_entries_apply_when_a_writable_area_covers_it_whatever_the_home_mode() {
        // The workspace is the caller's real HOME (`cd ~ && sandbox run`), the HOME isolated.
        let (_dir, home, profile) = writable_workspace();
        assert_eq!(profile.config().home, Home::IsolatedHome);
        std::fs::create_dir_all(home.join(".ssh")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(home.join(".ssh/authorized_keys"), "key\n").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, Some(&home));
        assert!(found.existing.contains(&(home.join(".ssh/authorized_keys"), true)), "{found:?}");
        for rel in [".ssh/config", ".ssh/rc", ".config/git", ".gitconfig"] {
            assert!(found.missing.contains(&home.join(rel)), "{rel}: {found:?}");
        }
        // The control: a HOME no writable area covers is left alone (the isolated HOME is the
        // executor's own, and the real one is read-only or invisible anyway).
        let (_other, _ws, elsewhere) = writable_workspace();
        let found = scan(&elsewhere, Some(&home));
        assert!(!protects(&found, &home.join(".ssh/authorized_keys")), "{found:?}");
        assert!(!protects(&found, &home.join(".config/git")), "{found:?}");
    }

    #[test]
    fn a_home_spelled_through_a_symlink_is_protected_at_its_real_path() {
        let (_dir, home, profile) = writable_workspace();
        let links = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let link = links.path().join("home-link");
        std::os::unix::fs::symlink(&home, &link).unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, Some(&link));
        for rel in [".ssh/authorized_keys", ".ssh/config", ".config/git"] {
            assert!(found.missing.contains(&home.join(rel)), "{rel}: {found:?}");
        }
    }

    #[test]
    fn a_hooks_path_through_a_symlinked_ancestor_is_protected_at_its_real_path() {
        let (_dir, ws, profile) = writable_workspace();
        let links = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let link = links.path().join("repo-link");
        std::os::unix::fs::symlink(ws.join("repo"), &link).unwrap_or_else(|e| panic!("{e}"));
        let hooks = format!("\thooksPath = {}\n", link.join("myhooks").display());
        repo_with(&ws, &hooks, &[("repo/myhooks/pre-commit", "#!/bin/sh\n")]);
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("repo/myhooks"), false)), "{found:?}");
    }

    #[test]
    fn a_hooks_path_set_in_an_included_file_is_protected() {
        let (_dir, ws, profile) = writable_workspace();
        repo_with(
            &ws,
            "[include]\n\tpath = ../.gitconfig-project\n",
            &[("repo/.gitconfig-project", "[core]\n\thooksPath = .githooks\n"), ("repo/.githooks/x", "")],
        );
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("repo/.gitconfig-project"), true)), "{found:?}");
        assert!(found.existing.contains(&(ws.join("repo/.githooks"), false)), "{found:?}");
    }

    #[test]
    fn a_hooks_path_with_an_inline_comment_is_protected() {
        let (_dir, ws, profile) = writable_workspace();
        repo_with(&ws, "\thooksPath = .githooks ; team hooks\n", &[("repo/.githooks/x", "")]);
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("repo/.githooks"), false)), "{found:?}");
    }

    #[test]
    fn a_hooks_path_in_config_worktree_is_protected() {
        let (_dir, ws, profile) = writable_workspace();
        repo_with(
            &ws,
            "[extensions]\n\tworktreeConfig = true\n",
            &[("repo/.git/config.worktree", "[core]\n\thooksPath = .githooks\n"), ("repo/.githooks/x", "")],
        );
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("repo/.githooks"), false)), "{found:?}");
    }

    #[test]
    fn a_missing_file_an_included_file_includes_is_refused_creation() {
        let (_dir, ws, profile) = writable_workspace();
        repo_with(
            &ws,
            "[include]\n\tpath = ../.gitconfig-project\n",
            &[("repo/.gitconfig-project", "[include]\n\tpath = .gitconfig-local\n")],
        );
        let found = scan(&profile, None);
        assert!(found.missing.contains(&ws.join("repo/.gitconfig-local")), "{found:?}");
    }

    #[test]
    fn include_if_and_home_relative_includes_are_followed() {
        let (_dir, ws, profile) = writable_workspace();
        let home = ws.join("home");
        repo_with(
            &ws,
            "[includeIf \"gitdir:/nowhere/\"]\n\tpath = ~/team.gitconfig\n",
            &[("home/team.gitconfig", "[core]\n\thooksPath = ~/hooks\n"), ("home/hooks/x", "")],
        );
        let found = scan(&profile, Some(&home));
        assert!(found.existing.contains(&(home.join("team.gitconfig"), true)), "{found:?}");
        assert!(found.existing.contains(&(home.join("hooks"), false)), "{found:?}");
    }

    #[test]
    fn quoted_escaped_and_continued_hooks_paths_are_read_as_git_reads_them() {
        let (_dir, ws, profile) = writable_workspace();
        repo_with(&ws, "\thooksPath = \"my hooks\" # quoted\n", &[("repo/my hooks/x", "")]);
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("repo/my hooks"), false)), "{found:?}");
        repo_with(&ws, "\thooksPath = ho\\\noks;x\n", &[("repo/hooks2/x", "")]);
        let found = scan(&profile, None);
        assert!(found.missing.contains(&ws.join("repo/hooks")), "{found:?}");
    }

    #[test]
    fn the_global_configs_includes_and_hooks_paths_are_protected() {
        let (_dir, ws, profile) = writable_workspace();
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = std::fs::canonicalize(home.path()).unwrap_or_else(|e| panic!("{e}"));
        let global = format!(
            "[include]\n\tpath = {}\n[core]\n\thooksPath = {}\n\thooksPath = relative\n",
            ws.join("dotfiles/gitconfig").display(),
            ws.join("global-hooks").display()
        );
        std::fs::write(home.join(".gitconfig"), global).unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, Some(&home));
        assert!(found.missing.contains(&ws.join("dotfiles/gitconfig")), "{found:?}");
        assert!(found.missing.contains(&ws.join("global-hooks")), "{found:?}");
        assert!(!found.missing.iter().any(|p| p.ends_with("relative")), "{found:?}");
    }

    #[test]
    fn a_workspace_inside_a_repository_cannot_gain_a_repository_of_its_own() {
        let outer = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let outer = std::fs::canonicalize(outer.path()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(outer.join("repo/.git")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(outer.join("repo/pkg")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(outer.join("plain/pkg")).unwrap_or_else(|e| panic!("{e}"));
        let profile_at = |ws: PathBuf| {
            crate::Profile::new(crate::ProfileConfig {
                workspace_root: ws,
                workspace_read: Access::Allow,
                workspace_write: Access::Allow,
                ..crate::ProfileConfig::default()
            })
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let found = scan(&profile_at(outer.join("repo/pkg")), None);
        assert!(found.missing.contains(&outer.join("repo/pkg/.git")), "{found:?}");
        // The control: no repository encloses this workspace, so `git init` there stays open.
        let found = scan(&profile_at(outer.join("plain/pkg")), None);
        assert!(!protects(&found, &outer.join("plain/pkg/.git")), "{found:?}");
    }

    /// A workspace that is a repository: its root cannot become a bare repository beside a
    /// `.git` the workload broke (`HEAD` refused, or read-only where it exists), and no `.git`
    /// can be made beneath it; a workspace holding repositories only deeper gets the rule
    /// beneath each of them; a workspace with none gets neither (`git init` stays open).
    #[test]
    fn a_repository_workspace_gains_no_bare_root_and_no_nested_repository() {
        let mk = |p: &Path| std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("{e}"));
        let (_dir, ws, profile) = writable_workspace();
        mk(&ws.join(".git/hooks"));
        let found = scan(&profile, None);
        assert!(found.missing.contains(&ws.join("HEAD")), "{found:?}");
        assert_eq!(found.repositories, std::slice::from_ref(&ws));
        std::fs::write(ws.join("HEAD"), "a project file\n").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("HEAD"), true)), "{found:?}");

        let (_dir, ws, profile) = writable_workspace();
        mk(&ws.join("b/c/.git"));
        mk(&ws.join("a/.git"));
        mk(&ws.join("a/sub/.git"));
        let found = scan(&profile, None);
        assert_eq!(found.repositories, [ws.join("a"), ws.join("b/c")]);
        assert!(!protects(&found, &ws.join("HEAD")) && !protects(&found, &ws.join(".git")), "{found:?}");

        let (_dir, ws, profile) = writable_workspace();
        mk(&ws.join("src"));
        let found = scan(&profile, None);
        assert!(found.repositories.is_empty(), "{found:?}");
        assert!(!protects(&found, &ws.join("HEAD")), "{found:?}");

        // A `HEAD` beneath a work tree (a fixture): nothing may make its directory a bare
        // repository. Modules: a missing `modules` is refused, an existing one takes nothing new.
        let (_dir, ws, profile) = writable_workspace();
        mk(&ws.join(".git/hooks"));
        mk(&ws.join("fixtures/f1/objects"));
        std::fs::write(ws.join("fixtures/f1/HEAD"), "ref: refs/heads/main\n").unwrap_or_else(|e| panic!("{e}"));
        mk(&ws.join("a/.git/modules/lib/hooks"));
        std::fs::write(ws.join("a/.git/modules/lib/HEAD"), "ref: refs/heads/main\n").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        for m in ["refs", "commondir"] {
            assert!(found.missing.contains(&ws.join("fixtures/f1").join(m)), "{m}: {found:?}");
        }
        assert!(!found.missing.contains(&ws.join("fixtures/f1/objects")), "{found:?}");
        assert!(found.missing.contains(&ws.join(".git/modules")), "{found:?}");
        assert!(found.no_new_entries.contains(&ws.join("a/.git/modules")), "{found:?}");
        assert!(found.missing.contains(&ws.join("a/.git/modules/lib/modules")), "{found:?}");
        // The legacy remote definitions, missing or not.
        mk(&ws.join(".git/branches"));
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join(".git/branches"), false)), "{found:?}");
        assert!(found.missing.contains(&ws.join(".git/remotes")), "{found:?}");
    }

    /// husky's layout (`core.hooksPath = .husky/_`, whose hooks run `.husky/<hook>`): the
    /// parent is protected with the hooks path; a hooks path `_` at the root protects no root.
    #[test]
    fn a_husky_hooks_path_protects_the_scripts_its_hooks_run() {
        let (_dir, ws, profile) = writable_workspace();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(ws.join(".husky/_")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join(".git/config"), "[core]\n\thooksPath = .husky/_\n").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join(".husky"), false)), "{found:?}");
        assert!(found.existing.contains(&(ws.join(".husky/_"), false)), "{found:?}");

        std::fs::write(ws.join(".git/config"), "[core]\n\thooksPath = _\n").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        assert!(protects(&found, &ws.join("_")), "{found:?}");
        assert!(!protects(&found, &ws), "{found:?}");
    }

    #[test]
    fn a_git_symlink_to_a_directory_is_followed_and_a_pointer_file_too() {
        let (_dir, ws, profile) = writable_workspace();
        let mk = |p: &str| std::fs::create_dir_all(ws.join(p)).unwrap_or_else(|e| panic!("{e}"));
        mk("store/g1/hooks");
        mk("store/g2");
        mk("a");
        mk("b");
        std::os::unix::fs::symlink(ws.join("store/g1"), ws.join("a/.git")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(ws.join("b/.git"), "gitdir: ../store/g2\n").unwrap_or_else(|e| panic!("{e}"));
        let found = scan(&profile, None);
        assert!(found.existing.contains(&(ws.join("store/g1/hooks"), false)), "{found:?}");
        assert!(found.missing.contains(&ws.join("a/.git")), "{found:?}");
        assert!(found.existing.contains(&(ws.join("b/.git"), true)), "{found:?}");
        assert!(found.missing.contains(&ws.join("store/g2/hooks")), "{found:?}");
        assert!(found.missing.contains(&ws.join("store/g2/config")), "{found:?}");
    }
}
