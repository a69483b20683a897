//! Path resolution on behalf of a workload thread, done by the guard in the init.
//!
//! The init shares the workload's mount namespace, root, credentials and Landlock domain, so
//! the kernel resolves a path for it as for the workload, except where a path names the caller:
//! `/proc/self` and `/proc/thread-self` (and every symlink through them: `/dev/fd`, `/dev/stdout`,
//! `/proc/mounts`, `/proc/net`) would reach the init's own descriptors and memory. So the guard
//! walks every path one component at a time (`openat` with `O_PATH | O_NOFOLLOW`), reads each
//! symlink and walks its text, replaces `self` and `thread-self` at the procfs root by the
//! notifying thread's ids, and follows procfs magic links (`/proc/<tid>/fd/<n>`, `cwd`, `root`)
//! with the kernel's own `openat`. A relative path starts at the thread's cwd
//! (`/proc/<tid>/cwd`) or at its descriptor (`/proc/<tid>/fd/<n>`).

use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use nix::errno::Errno;

use crate::notify;

/// The most symlinks one resolution follows (the kernel's limit).
const MAX_LINKS: u32 = 40;

/// The inode number of the procfs root.
const PROC_ROOT_INO: u64 = 1;

/// A path cut into the directory part and the final name.
#[derive(Debug, PartialEq, Eq)]
pub struct Split<'a> {
    /// Everything before the final name (`""`: the start directory; `"/"`: the root).
    pub dir: &'a [u8],
    /// The final name, without trailing slashes (`.` for the root itself).
    pub name: &'a [u8],
    /// Whether the path ended with one or more slashes.
    pub slash: bool,
}

/// Cuts `path` as the kernel does for a creating call; None for the empty path.
pub fn split(path: &[u8]) -> Option<Split<'_>> {
    if path.is_empty() {
        return None;
    }
    let kept = path.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    let slash = kept < path.len();
    if kept == 0 {
        return Some(Split { dir: b"/", name: b".", slash });
    }
    let trimmed = &path[..kept];
    Some(match trimmed.iter().rposition(|&b| b == b'/') {
        Some(i) => Split { dir: &trimmed[..=i], name: &trimmed[i + 1..], slash },
        None => Split { dir: b"", name: trimmed, slash },
    })
}

/// Whether `name` is `.` or `..` (nothing can be created under such a name).
pub fn is_dot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

/// The components of `path`, last first (a stack: `pop` yields them in order).
fn push_components(stack: &mut Vec<Vec<u8>>, path: &[u8]) {
    for c in path.split(|&b| b == b'/').filter(|c| !c.is_empty()).rev() {
        stack.push(c.to_vec());
    }
}

/// A C string of `bytes` (a name copied from the workload has no NUL: it ended there).
pub fn cstr(bytes: &[u8]) -> Result<CString, Errno> {
    CString::new(bytes).map_err(|_| Errno::EINVAL)
}

/// The real path of an open directory or file of this process (`/proc/self/fd/<n>`). A
/// directory deeper than `PATH_MAX` (which a workload may make with relative calls) gets its
/// path from its nearest ancestor that has one, and the names found walking up to it.
pub fn real_path(fd: BorrowedFd<'_>) -> Result<PathBuf, Errno> {
    match nix::fcntl::readlink(format!("/proc/self/fd/{}", fd.as_raw_fd()).as_str()) {
        Ok(link) => Ok(undeleted(fd, PathBuf::from(link))),
        Err(Errno::ENAMETOOLONG) => deep_path(fd),
        Err(e) => Err(e),
    }
}

/// The kernel names a removed file or directory `<path> (deleted)`: its path when it had one
/// (a descriptor a workload opened before the host replaced a denied file was read through its
/// link with that suffix, which no denied root matched; a red team, 5 December). Only for an
/// object without links: a live file may be named so.
fn undeleted(fd: BorrowedFd<'_>, link: PathBuf) -> PathBuf {
    use std::os::unix::ffi::OsStrExt as _;
    let bytes = link.as_os_str().as_bytes();
    match bytes.strip_suffix(b" (deleted)") {
        Some(stem) if nix::sys::stat::fstat(fd.as_raw_fd()).is_ok_and(|st| st.st_nlink == 0) => {
            PathBuf::from(std::ffi::OsStr::from_bytes(stem))
        }
        _ => link,
    }
}

/// The most levels [`deep_path`] walks up.
const MAX_DEEP: usize = 1 << 16;

/// The path of a directory deeper than `PATH_MAX`: walks up through `..`, finding each level's
/// name in its parent by inode number, until an ancestor's path can be read. Fails closed
/// (ENAMETOOLONG) at a mount boundary or when a name is not found (the guard's thread is the
/// only one of the sandbox that renames, so the names do not move meanwhile).
fn deep_path(fd: BorrowedFd<'_>) -> Result<PathBuf, Errno> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    let start = open_path(fd, b".", libc::O_DIRECTORY)?;
    let first = nix::sys::stat::fstat(start.as_raw_fd())?;
    let mut cur = open_path(start.as_fd(), b".", libc::O_DIRECTORY)?;
    let mut start = Some(start);
    let mut done = |base: PathBuf, names: &[Vec<u8>]| {
        let mut path = base;
        for n in names.iter().rev() {
            path.push(os(n));
        }
        if let Some(held) = start.take() {
            DEEP.with(|d| {
                *d.borrow_mut() = Some(Deep { _held: held, dev: first.st_dev, ino: first.st_ino, path: path.clone() })
            });
        }
        path
    };
    for _ in 0..MAX_DEEP {
        let st = nix::sys::stat::fstat(cur.as_raw_fd())?;
        let up = open_path(cur.as_fd(), b"..", libc::O_DIRECTORY)?;
        let ust = nix::sys::stat::fstat(up.as_raw_fd())?;
        if ust.st_dev != st.st_dev || ust.st_ino == st.st_ino {
            return Err(Errno::ENAMETOOLONG);
        }
        let listing = notify::open_at(Some(up.as_fd()), c".", libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)?;
        names.push(notify::entry_with_ino(listing, st.st_ino)?.ok_or(Errno::ENAMETOOLONG)?);
        let cached = DEEP.with(|d| {
            d.borrow().as_ref().filter(|c| (c.dev, c.ino) == (ust.st_dev, ust.st_ino)).map(|c| c.path.clone())
        });
        if let Some(base) = cached {
            return Ok(done(base, &names));
        }
        match nix::fcntl::readlink(format!("/proc/self/fd/{}", up.as_raw_fd()).as_str()) {
            Ok(link) => return Ok(done(PathBuf::from(link), &names)),
            Err(Errno::ENAMETOOLONG) => cur = up,
            Err(e) => return Err(e),
        }
    }
    Err(Errno::ENAMETOOLONG)
}

/// The last directory [`deep_path`] named: a workload going down one level at a time then costs
/// one level per call. Held open, so that its inode number cannot name another directory while
/// remembered; forgotten at every rename (the guard's thread performs all of the sandbox's).
struct Deep {
    _held: OwnedFd,
    dev: u64,
    ino: u64,
    path: PathBuf,
}

thread_local! {
    static DEEP: std::cell::RefCell<Option<Deep>> = const { std::cell::RefCell::new(None) };
}

/// Forgets what [`deep_path`] remembered (a rename may have moved it).
pub fn forget_deep_path() {
    DEEP.with(|d| *d.borrow_mut() = None);
}

/// A directory and a name in it, where a call creates or places something.
#[derive(Debug)]
pub struct Parent {
    /// The directory (an `O_PATH` handle).
    pub dir: OwnedFd,
    /// The final name.
    pub name: Vec<u8>,
    /// Whether the path ended with a slash.
    pub slash: bool,
}

impl Parent {
    /// The name as the kernel should see it relative to `dir`: with its trailing slash.
    pub fn kernel_name(&self) -> Result<CString, Errno> {
        let mut n = self.name.clone();
        if self.slash {
            n.push(b'/');
        }
        cstr(&n)
    }
}

/// Where a final symlink led.
#[derive(Debug)]
pub enum Followed {
    /// An ordinary symlink: its text, resolved to a new directory and name.
    Name(Parent),
    /// A procfs magic link (or `self`): the object, opened by the kernel (`O_PATH`).
    Object(OwnedFd),
}

/// The notifying thread: its id and its `/proc/<tid>` directory.
#[derive(Debug)]
pub struct Thread {
    /// The thread id (in the init's pid namespace).
    pub tid: i32,
    /// `/proc/<tid>`, opened while the notification was valid (pinned to that thread).
    pub proc_dir: OwnedFd,
    tgid: std::cell::OnceCell<i32>,
}

impl Thread {
    /// The thread `tid`, whose `/proc/<tid>` is `proc_dir`.
    pub fn new(tid: i32, proc_dir: OwnedFd) -> Thread {
        Thread { tid, proc_dir, tgid: std::cell::OnceCell::new() }
    }

    /// Its thread-group id (`Tgid:` of its status, read when first needed; its own id when
    /// unreadable, which then names the thread's directory).
    pub fn tgid(&self) -> i32 {
        *self.tgid.get_or_init(|| {
            read_status(self)
                .ok()
                .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok()))
                .unwrap_or(self.tid)
        })
    }
}

/// One resolution: counts the symlinks it follows.
#[derive(Debug)]
pub struct Resolver<'a> {
    thread: &'a Thread,
    links: u32,
}

pub fn open_path(dir: BorrowedFd<'_>, name: &[u8], flags: i32) -> Result<OwnedFd, Errno> {
    notify::open_at(Some(dir), &cstr(name)?, flags | libc::O_PATH | libc::O_CLOEXEC, 0)
}

fn root() -> Result<OwnedFd, Errno> {
    notify::open_at(None, c"/", libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)
}

fn is_procfs(fd: BorrowedFd<'_>) -> bool {
    nix::sys::statfs::fstatfs(fd).is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::PROC_SUPER_MAGIC)
}

/// EACCES for anything in a procfs directory of the init's own thread group (`/proc/1`, the
/// guard thread's `/proc/<tid>`): the init may open its own descriptors, memory and
/// environment there, which the workload may not (the init is not dumpable). A procfs object
/// whose path does not start with `/proc/` is refused too (the container has one procfs, there).
fn refuse_own_proc(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    if !is_procfs(fd) {
        return Ok(());
    }
    let path = real_path(fd)?;
    let rest = path.strip_prefix("/proc").map_err(|_| Errno::EACCES)?;
    let Some(first) = rest.components().next() else { return Ok(()) };
    let Some(n) = first.as_os_str().to_str().and_then(|s| s.parse::<u32>().ok()) else { return Ok(()) };
    if n == std::process::id() || std::fs::symlink_metadata(format!("/proc/self/task/{n}")).is_ok() {
        return Err(Errno::EACCES);
    }
    Ok(())
}

fn is_proc_root(fd: BorrowedFd<'_>) -> bool {
    is_procfs(fd) && nix::sys::stat::fstat(fd.as_raw_fd()).is_ok_and(|s| s.st_ino == PROC_ROOT_INO)
}

impl<'a> Resolver<'a> {
    /// A resolution for `thread`.
    pub fn new(thread: &'a Thread) -> Resolver<'a> {
        Resolver { thread, links: 0 }
    }

    fn count_link(&mut self) -> Result<(), Errno> {
        self.links += 1;
        if self.links > MAX_LINKS { Err(Errno::ELOOP) } else { Ok(()) }
    }

    /// What `self` or `thread-self` at the procfs root means for the thread.
    fn proc_self(&self, name: &[u8]) -> Option<String> {
        match name {
            b"self" => Some(self.thread.tgid().to_string()),
            b"thread-self" => Some(format!("{}/task/{}", self.thread.tgid(), self.thread.tid)),
            _ => None,
        }
    }

    /// The directory a relative path of the thread starts from: its cwd for `AT_FDCWD`, else
    /// its descriptor `dirfd`.
    pub fn base(&self, dirfd: i32) -> Result<OwnedFd, Errno> {
        let name = if dirfd == libc::AT_FDCWD {
            "cwd".to_owned()
        } else if dirfd < 0 {
            return Err(Errno::EBADF);
        } else {
            format!("fd/{dirfd}")
        };
        let fd = open_path(self.thread.proc_dir.as_fd(), name.as_bytes(), 0).map_err(|e| match e {
            Errno::ENOENT => Errno::EBADF,
            other => other,
        })?;
        refuse_own_proc(fd.as_fd())?;
        Ok(fd)
    }

    /// Walks `path` from `start`, following every symlink (the last component's too). The
    /// result is a directory unless `last_may_be_file`.
    pub fn walk(&mut self, start: OwnedFd, path: &[u8], last_may_be_file: bool) -> Result<OwnedFd, Errno> {
        refuse_own_proc(start.as_fd())?;
        let mut cur = start;
        let mut stack = Vec::new();
        push_components(&mut stack, path);
        while let Some(c) = stack.pop() {
            let last = stack.is_empty();
            if let Some(sub) = self.proc_self(&c).filter(|_| is_proc_root(cur.as_fd())) {
                self.count_link()?;
                push_components(&mut stack, sub.as_bytes());
                continue;
            }
            match open_path(cur.as_fd(), &c, libc::O_NOFOLLOW | libc::O_DIRECTORY) {
                Ok(fd) => {
                    refuse_own_proc(fd.as_fd())?;
                    cur = fd;
                }
                Err(Errno::ENOTDIR) => {
                    let cname = cstr(&c)?;
                    let st = nix::sys::stat::fstatat(
                        Some(cur.as_raw_fd()),
                        cname.as_c_str(),
                        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                    )?;
                    if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
                        self.count_link()?;
                        match self.follow_link(cur.as_fd(), &c)? {
                            Some(object) => {
                                refuse_own_proc(object.as_fd())?;
                                cur = object;
                            }
                            None => {
                                let text = nix::fcntl::readlinkat(Some(cur.as_raw_fd()), cname.as_c_str())?;
                                let text = text.as_bytes();
                                if text.is_empty() {
                                    return Err(Errno::ENOENT);
                                }
                                if text.first() == Some(&b'/') {
                                    cur = root()?;
                                }
                                push_components(&mut stack, text);
                            }
                        }
                    } else if last && last_may_be_file {
                        cur = open_path(cur.as_fd(), &c, libc::O_NOFOLLOW)?;
                    } else {
                        return Err(Errno::ENOTDIR);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(cur)
    }

    /// A symlink `name` in `dir` that the kernel must follow itself: a procfs magic link (every
    /// symlink of procfs below its root). None: an ordinary symlink, to be read and walked.
    fn follow_link(&self, dir: BorrowedFd<'_>, name: &[u8]) -> Result<Option<OwnedFd>, Errno> {
        if is_procfs(dir) && !is_proc_root(dir) { open_path(dir, name, 0).map(Some) } else { Ok(None) }
    }

    /// Resolves `path` of the thread (relative to `dirfd`) to the directory that holds its
    /// final name, and that name. Empty path: ENOENT.
    pub fn parent(&mut self, dirfd: i32, path: &[u8]) -> Result<Parent, Errno> {
        let s = split(path).ok_or(Errno::ENOENT)?;
        let start = if path.first() == Some(&b'/') { root()? } else { self.base(dirfd)? };
        let dir = self.walk(start, s.dir, false)?;
        Ok(Parent { dir, name: s.name.to_vec(), slash: s.slash })
    }

    /// Resolves `path` of the thread to the object it names, following the final symlink
    /// when `follow` (else the final name itself), as an `O_PATH` handle.
    pub fn object(&mut self, dirfd: i32, path: &[u8], follow: bool) -> Result<OwnedFd, Errno> {
        if follow {
            let start = if path.first() == Some(&b'/') { root()? } else { self.base(dirfd)? };
            if path.is_empty() {
                return Err(Errno::ENOENT);
            }
            return self.walk(start, path, true);
        }
        let p = self.parent(dirfd, path)?;
        if is_dot(&p.name) {
            return self.walk(p.dir, &p.name, false);
        }
        open_path(p.dir.as_fd(), &p.kernel_name()?.into_bytes(), libc::O_NOFOLLOW)
    }

    /// Follows the final symlink `p.name` of `p.dir` one step, as the kernel does for
    /// `open(O_CREAT)` without `O_EXCL` or `O_NOFOLLOW`.
    pub fn follow_final(&mut self, p: &Parent) -> Result<Followed, Errno> {
        self.count_link()?;
        let text = match self.proc_self(&p.name).filter(|_| is_proc_root(p.dir.as_fd())) {
            Some(sub) => sub.into_bytes(),
            None => {
                if let Some(object) = self.follow_link(p.dir.as_fd(), &p.name)? {
                    refuse_own_proc(object.as_fd())?;
                    return Ok(Followed::Object(object));
                }
                let name = cstr(&p.name)?;
                nix::fcntl::readlinkat(Some(p.dir.as_raw_fd()), name.as_c_str())?.as_bytes().to_vec()
            }
        };
        let s = split(&text).ok_or(Errno::ENOENT)?;
        let start =
            if text.first() == Some(&b'/') { root()? } else { open_path(p.dir.as_fd(), b".", libc::O_DIRECTORY)? };
        let dir = self.walk(start, s.dir, false)?;
        Ok(Followed::Name(Parent { dir, name: s.name.to_vec(), slash: s.slash }))
    }
}

/// The `Umask:` of `/proc/<tid>/status`.
pub fn umask_of(thread: &Thread) -> Result<u32, Errno> {
    parse_umask(&read_status(thread)?).ok_or(Errno::EIO)
}

fn read_status(thread: &Thread) -> Result<String, Errno> {
    let fd = notify::open_at(Some(thread.proc_dir.as_fd()), c"status", libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::fs::File::from(fd), &mut text).map_err(|_| Errno::EIO)?;
    Ok(text)
}

/// The `Umask:` field of a `status` text.
pub fn parse_umask(status: &str) -> Option<u32> {
    let v = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(v.trim(), 8).ok().filter(|m| *m <= 0o777)
}

/// The bytes of a name as an `OsStr`.
pub fn os(name: &[u8]) -> &OsStr {
    OsStr::from_bytes(name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use nix::sys::stat::Mode;

    fn s(path: &str) -> (String, String, bool) {
        let s = split(path.as_bytes()).unwrap();
        (String::from_utf8_lossy(s.dir).into(), String::from_utf8_lossy(s.name).into(), s.slash)
    }

    #[test]
    fn splits_like_the_kernel() {
        assert!(split(b"").is_none());
        assert_eq!(s(".envrc"), ("".into(), ".envrc".into(), false));
        assert_eq!(s("a/b/.envrc"), ("a/b/".into(), ".envrc".into(), false));
        assert_eq!(s("/.envrc"), ("/".into(), ".envrc".into(), false));
        assert_eq!(s("dir/"), ("".into(), "dir".into(), true));
        assert_eq!(s("a//dir//"), ("a//".into(), "dir".into(), true));
        assert_eq!(s("/"), ("/".into(), ".".into(), true));
        assert_eq!(s("//"), ("/".into(), ".".into(), true));
        assert_eq!(s("a/.."), ("a/".into(), "..".into(), false));
        assert_eq!(s("."), ("".into(), ".".into(), false));
        assert!(is_dot(b".") && is_dot(b"..") && !is_dot(b"...") && !is_dot(b".envrc"));
    }

    #[test]
    fn components_pop_in_order() {
        let mut stack = Vec::new();
        push_components(&mut stack, b"/a//b/./c/");
        let order: Vec<Vec<u8>> = std::iter::from_fn(|| stack.pop()).collect();
        assert_eq!(order, vec![b"a".to_vec(), b"b".to_vec(), b".".to_vec(), b"c".to_vec()]);
    }

    #[test]
    fn umask_is_read_from_status() {
        assert_eq!(parse_umask("Name:\tsh\nUmask:\t0022\nState:\tR\n"), Some(0o022));
        assert_eq!(parse_umask("Umask:\t0777\n"), Some(0o777));
        assert_eq!(parse_umask("Umask:\t9\n"), None);
        assert_eq!(parse_umask("Name:\tsh\n"), None);
    }

    fn this_thread() -> Thread {
        let tid = nix::unistd::gettid().as_raw();
        let proc_dir = notify::open_at(
            None,
            &cstr(format!("/proc/{tid}").as_bytes()).unwrap(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            0,
        )
        .unwrap();
        let t = Thread::new(tid, proc_dir);
        assert_eq!(t.tgid(), std::process::id() as i32);
        t
    }

    #[test]
    fn resolves_through_symlinks_dots_and_proc_self() {
        let dir = tempfile_dir();
        let base = std::fs::canonicalize(&dir).unwrap();
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        std::os::unix::fs::symlink("a/b", base.join("l")).unwrap();
        std::os::unix::fs::symlink(base.join("a"), base.join("abs")).unwrap();
        std::os::unix::fs::symlink("loop", base.join("loop")).unwrap();
        std::os::unix::fs::symlink("new-name", base.join("dangling")).unwrap();
        let t = this_thread();
        let mut r = Resolver::new(&t);
        let path = |p: &str| format!("{}/{p}", base.display()).into_bytes();
        let p = r.parent(libc::AT_FDCWD, &path("l/../b/x")).unwrap();
        assert_eq!(real_path(p.dir.as_fd()).unwrap(), base.join("a/b"));
        assert_eq!(p.name, b"x");
        let p = r.parent(libc::AT_FDCWD, &path("abs/b/y/")).unwrap();
        assert_eq!(real_path(p.dir.as_fd()).unwrap(), base.join("a/b"));
        assert!(p.slash);
        assert_eq!(Resolver::new(&t).parent(libc::AT_FDCWD, &path("loop/x")).unwrap_err(), Errno::ELOOP);
        assert_eq!(Resolver::new(&t).parent(libc::AT_FDCWD, &path("none/x")).unwrap_err(), Errno::ENOENT);
        assert_eq!(Resolver::new(&t).parent(libc::AT_FDCWD, b"").unwrap_err(), Errno::ENOENT);
        assert_eq!(Resolver::new(&t).base(12345).unwrap_err(), Errno::EBADF);
        // A dangling final symlink leads to its target's name.
        let p = Resolver::new(&t).parent(libc::AT_FDCWD, &path("dangling")).unwrap();
        match Resolver::new(&t).follow_final(&p).unwrap() {
            Followed::Name(q) => {
                assert_eq!(real_path(q.dir.as_fd()).unwrap(), base);
                assert_eq!(q.name, b"new-name");
            }
            Followed::Object(_) => panic!("an ordinary symlink"),
        }
        // /proc/self and /proc/thread-self name the notifying thread (another process here:
        // the test process plays the init), through /dev/fd too.
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "exec 7<\"$0\"; exec sleep 10"])
            .arg(base.join("a"))
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let fd7 = format!("/proc/{pid}/fd/7");
        for _ in 0..100 {
            if std::fs::read_link(&fd7).is_ok_and(|l| l == base.join("a")) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let proc_dir = notify::open_at(
            None,
            &cstr(format!("/proc/{pid}").as_bytes()).unwrap(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            0,
        )
        .unwrap();
        let c = Thread::new(pid, proc_dir);
        for p in ["/proc/self/fd/7/b/z", "/proc/thread-self/fd/7/b/z", "/dev/fd/7/b/z"] {
            let q = Resolver::new(&c).parent(libc::AT_FDCWD, p.as_bytes()).unwrap();
            assert_eq!(real_path(q.dir.as_fd()).unwrap(), base.join("a/b"), "{p}");
        }
        let object = Resolver::new(&c).object(libc::AT_FDCWD, b"/dev/fd/7", true).unwrap();
        assert_eq!(real_path(object.as_fd()).unwrap(), base.join("a"));
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn the_inits_own_proc_directories_are_refused() {
        // Here the test process plays the init: its own /proc entries are refused, however
        // they are reached; another process's are not.
        let t = this_thread();
        let me = std::process::id();
        let tid = nix::unistd::gettid().as_raw();
        for p in [format!("/proc/{me}/fd/0"), format!("/proc/{tid}/x"), format!("/proc/{me}/task/{tid}/fd/1")] {
            assert_eq!(Resolver::new(&t).parent(libc::AT_FDCWD, p.as_bytes()).unwrap_err(), Errno::EACCES, "{p}");
        }
        let own = std::fs::File::open(format!("/proc/{me}")).unwrap();
        let fd = own.as_raw_fd();
        assert_eq!(Resolver::new(&t).parent(fd, b"fd/0").unwrap_err(), Errno::EACCES);
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let p = format!("/proc/{}/x", child.id());
        assert!(Resolver::new(&t).parent(libc::AT_FDCWD, p.as_bytes()).is_ok());
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn a_directory_deeper_than_path_max_has_a_path() {
        let base = std::fs::canonicalize(tempfile_dir()).unwrap();
        let mut cur = std::fs::File::open(&base).unwrap();
        let mut want = base.clone();
        let name = "d".repeat(200);
        for _ in 0..25 {
            nix::sys::stat::mkdirat(Some(cur.as_raw_fd()), name.as_str(), Mode::from_bits_truncate(0o755)).unwrap();
            let next = notify::open_at(
                Some(cur.as_fd()),
                &cstr(name.as_bytes()).unwrap(),
                libc::O_RDONLY | libc::O_DIRECTORY,
                0,
            )
            .unwrap();
            cur = std::fs::File::from(next);
            want.push(&name);
        }
        assert!(want.as_os_str().len() > 4096);
        assert_eq!(real_path(cur.as_fd()).unwrap(), want);
        let _ = std::process::Command::new("rm").arg("-rf").arg(&base).status();
    }

    #[test]
    fn a_dirfd_is_followed() {
        let dir = tempfile_dir();
        let base = std::fs::canonicalize(&dir).unwrap();
        let t = this_thread();
        let d = std::fs::File::open(&base).unwrap();
        let p = Resolver::new(&t).parent(d.as_raw_fd(), b"new").unwrap();
        assert_eq!(real_path(p.dir.as_fd()).unwrap(), base);
        let _ = std::fs::remove_dir_all(&base);
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "guard-resolve-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
