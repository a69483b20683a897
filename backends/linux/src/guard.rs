//! The creation guard (issue 14): protected names that do not exist are refused creation from
//! inside the container, at every depth, without touching the host filesystem.
//!
//! The workload child installs one more seccomp filter ([`program`]) before exec, with a
//! user-notification listener it hands to the init. The filter sends every call that brings a
//! name into being or writes a named file to the init: `open`/`openat` with `O_CREAT` or for
//! writing (`O_WRONLY`, `O_RDWR`, `O_TRUNC`; not `O_PATH` nor `O_TMPFILE`), `creat`,
//! `truncate`, `mkdir(at)`, `mknod(at)`, `symlink(at)`, `link(at)`, `rename(at|at2)`,
//! `unlink(at)` and `rmdir` (a protected entry or a git directory the host made during the run
//! is not removed to make room for one of the run's own); `openat2`
//! (whose flags seccomp cannot see) answers ENOSYS so that libc falls back to `openat`. The
//! writes are watched because a protected file's read-only bind covers only the file of the
//! spawn: one the host replaces (git's `config.lock` renamed over `config`, an editor's save)
//! or creates while the run goes on is no mount point in the run's view, and without the guard
//! the workload wrote it (a red team, 5 December). So a protected file ([`CreationGuard::protects`])
//! is never opened for writing, truncated, linked or renamed elsewhere by the guard. The init's guard thread
//! ([`serve`]) copies the paths out of the caller's memory, resolves the directory that will
//! hold the new name as the kernel would ([`resolve`]), asks [`CreationGuard::refuses`] about
//! its real path joined with the name, and answers EACCES or performs the call itself relative
//! to the directory it resolved, with the names it copied, and answers with the result (an
//! opened file is installed in the caller with `SECCOMP_IOCTL_NOTIF_ADDFD`). It never lets the
//! kernel continue the caller's call: the path lives in the caller's memory, which another
//! thread may change after the check.
//!
//! The init runs with the workload's credentials, mount namespace, root and Landlock domain
//! (it applied them to itself before forking), so a call it performs is checked by the kernel
//! exactly as the workload's own would be. It reads the caller's memory through
//! `/proc/<tid>/mem` (the base seccomp policy refuses `process_vm_readv` to the init as to the
//! workload; Landlock grants `read_file` beneath `/proc`), after pinning `/proc/<tid>` and
//! checking that the notification is still pending, and checks again after reading. A creating
//! call runs under the caller's umask (`Umask:` of `/proc/<tid>/status`).
//!
//! With the egress proxy on (issue 17), the same filter and thread also watch direct network
//! calls: `connect`, and `sendto` with an address, go to the init, which records and refuses
//! those to an address off the loopback and lets the kernel perform every other one
//! ([`direct`]). Either watch may run alone: the filter sends only the calls of the watches
//! the spawn has.

mod direct;
mod index;
mod object;
mod resolve;

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::AtFlags;
use nix::sys::stat::{Mode, SFlag};
use sandbox_bundle::protect::{GIT_FILES, GitPart, is_git_directory, is_git_symlink_test, read_small};
use sandbox_bundle::{CreateOp, CreationGuard};
use seccompiler::sock_filter;

use crate::notify;
use crate::status::Direct;
use direct::{NetCall, Verdict};
use object::{Store, StorePath};
use resolve::{Followed, Parent, Resolver, Thread, cstr, is_dot, open_path, os, real_path};

/// `AUDIT_ARCH_*` of the native architecture (what `seccomp_data.arch` carries).
#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7;

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

/// The calls sent to the guard whatever their arguments. The time-setting calls are among
/// them because a foreign index's mtime is what git compares its entries' times with: an index
/// made newer without being written took the entries the host had left racily clean for
/// clean, so that a file rewritten in place in their second, its mtime set back, was never
/// read again (red team AR, 5 December; [`Guard::utime`]).
#[cfg(target_arch = "x86_64")]
const NOTIFIED: &[libc::c_long] = &[
    libc::SYS_creat,
    libc::SYS_mkdir,
    libc::SYS_mkdirat,
    libc::SYS_mknod,
    libc::SYS_mknodat,
    libc::SYS_symlink,
    libc::SYS_symlinkat,
    libc::SYS_link,
    libc::SYS_linkat,
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_truncate,
    libc::SYS_unlink,
    libc::SYS_unlinkat,
    libc::SYS_rmdir,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
    libc::SYS_utimensat,
];
#[cfg(target_arch = "aarch64")]
const NOTIFIED: &[libc::c_long] = &[
    libc::SYS_truncate,
    libc::SYS_mkdirat,
    libc::SYS_mknodat,
    libc::SYS_symlinkat,
    libc::SYS_linkat,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_unlinkat,
    libc::SYS_utimensat,
];

/// `MAP_ANONYMOUS`, and the bit `MAP_SHARED` and `MAP_SHARED_VALIDATE` share (`MAP_PRIVATE`
/// lacks it).
#[allow(clippy::cast_sign_loss, reason = "positive flag bits")]
const MAP_ANONYMOUS: u32 = libc::MAP_ANONYMOUS as u32;
const MAP_SHARED_BIT: u32 = 0x01;

/// The opens sent to the guard when their flags (this argument) carry `O_CREAT` or ask to
/// write ([`WRITING`]), unless they carry `O_PATH` or `O_TMPFILE` ([`NO_NAME`]).
#[cfg(target_arch = "x86_64")]
const OPENS: &[(libc::c_long, u32)] = &[(libc::SYS_open, 1), (libc::SYS_openat, 2)];
#[cfg(target_arch = "aarch64")]
const OPENS: &[(libc::c_long, u32)] = &[(libc::SYS_openat, 2)];

/// Open flags that create or write: such an open goes to the guard. Writing counts as much as
/// creating: a protected file the host replaced or created during the run is no mount point in
/// the run's view, so only the guard keeps it read-only (a red team, 5 December).
#[allow(clippy::cast_sign_loss, reason = "positive flag bits")]
const WRITING: u32 = (libc::O_CREAT | libc::O_WRONLY | libc::O_RDWR | libc::O_TRUNC) as u32;

/// Open flags under which nothing named is opened for writing or created: `O_PATH` (the
/// kernel ignores every other flag) and `O_TMPFILE`'s own bit (an unnamed file; naming it is a
/// `linkat`, which the guard sees). Such an open goes to the kernel.
#[allow(clippy::cast_sign_loss, reason = "positive flag bits")]
const NO_NAME: u32 = (libc::O_PATH | (libc::O_TMPFILE & !libc::O_DIRECTORY)) as u32;

fn ins(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

fn nr(n: libc::c_long) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The offset of the low 32 bits of argument `arg` in `seccomp_data` (the supported
/// architectures are little-endian); the high 32 bits follow.
const fn arg_low(arg: u32) -> u32 {
    16 + 8 * arg
}

/// The workload's extra filter, for the watches the spawn has: `creating` (protected names,
/// issue 14; with `reading`, every open, for denied roots), `network` (direct network calls,
/// issue 17). A foreign architecture or an x32
/// number kills the process (as the base filters do). Creating: `openat2` answers ENOSYS; the
/// creating calls go to the guard (the opens only with `O_CREAT` in the low 32 bits of their
/// flags, the int the kernel reads). Network: `connect` goes to the guard, and `sendto` when
/// its address (a pointer: all 64 bits) is not null. Everything else is allowed (the base
/// filters still apply: of two answers the stricter wins, so a set-id creation mode they
/// refuse is never notified).
pub fn program(creating: bool, reading: bool, network: bool) -> Vec<sock_filter> {
    let kill = libc::SECCOMP_RET_KILL_PROCESS;
    let notify = libc::SECCOMP_RET_USER_NOTIF;
    let allow = libc::SECCOMP_RET_ALLOW;
    let mut p = vec![ins(LD_W_ABS, 0, 0, 4), ins(JEQ_K, 1, 0, NATIVE_ARCH), ins(RET_K, 0, 0, kill)];
    p.push(ins(LD_W_ABS, 0, 0, 0));
    if cfg!(target_arch = "x86_64") {
        p.push(ins(JGE_K, 0, 1, 0x4000_0000));
        p.push(ins(RET_K, 0, 0, kill));
    }
    if creating {
        p.push(ins(JEQ_K, 0, 1, nr(libc::SYS_openat2)));
        p.push(ins(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32));
        // mmap(addr, len, prot, flags, fd, off): a shared mapping of a file (flags, an int,
        // with MAP_SHARED's bit, MAP_SHARED_VALIDATE's too, and without MAP_ANONYMOUS) goes
        // to the guard ([`Staging::hold_writable`]); every other mapping is allowed here.
        p.push(ins(JEQ_K, 0, 5, nr(libc::SYS_mmap)));
        p.push(ins(LD_W_ABS, 0, 0, arg_low(3)));
        p.push(ins(JSET_K, 2, 0, MAP_ANONYMOUS));
        p.push(ins(JSET_K, 0, 1, MAP_SHARED_BIT));
        p.push(ins(RET_K, 0, 0, notify));
        p.push(ins(RET_K, 0, 0, allow));
        for &n in NOTIFIED {
            p.push(ins(JEQ_K, 0, 1, nr(n)));
            p.push(ins(RET_K, 0, 0, notify));
        }
        // Each block leaves the number in the accumulator when it does not match.
        for &(n, arg) in OPENS {
            if reading {
                // Every open but `O_PATH`/`O_TMPFILE` (see `CreationGuard::denied`).
                p.push(ins(JEQ_K, 0, 4, nr(n)));
                p.push(ins(LD_W_ABS, 0, 0, arg_low(arg)));
                p.push(ins(JSET_K, 1, 0, NO_NAME));
                p.push(ins(RET_K, 0, 0, notify));
                p.push(ins(RET_K, 0, 0, allow));
                continue;
            }
            p.push(ins(JEQ_K, 0, 5, nr(n)));
            p.push(ins(LD_W_ABS, 0, 0, arg_low(arg)));
            p.push(ins(JSET_K, 2, 0, NO_NAME));
            p.push(ins(JSET_K, 0, 1, WRITING));
            p.push(ins(RET_K, 0, 0, notify));
            p.push(ins(RET_K, 0, 0, allow));
        }
    }
    if network {
        p.push(ins(JEQ_K, 0, 1, nr(libc::SYS_connect)));
        p.push(ins(RET_K, 0, 0, notify));
        // sendto(fd, buf, len, flags, addr, addrlen): notified unless `addr` is null.
        p.push(ins(JEQ_K, 0, 6, nr(libc::SYS_sendto)));
        p.push(ins(LD_W_ABS, 0, 0, arg_low(4)));
        p.push(ins(JEQ_K, 0, 2, 0));
        p.push(ins(LD_W_ABS, 0, 0, arg_low(4) + 4));
        p.push(ins(JEQ_K, 1, 0, 0));
        p.push(ins(RET_K, 0, 0, notify));
        p.push(ins(RET_K, 0, 0, allow));
    }
    p.push(ins(RET_K, 0, 0, allow));
    p
}

/// One call sent to the guard, its path arguments still addresses in the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Open {
        dirfd: i32,
        path: u64,
        flags: i32,
        mode: u32,
    },
    Mkdir {
        dirfd: i32,
        path: u64,
        mode: u32,
    },
    Mknod {
        dirfd: i32,
        path: u64,
        mode: u32,
        dev: u64,
    },
    Symlink {
        target: u64,
        dirfd: i32,
        path: u64,
    },
    Link {
        olddirfd: i32,
        old: u64,
        newdirfd: i32,
        new: u64,
        flags: i32,
    },
    Rename {
        olddirfd: i32,
        old: u64,
        newdirfd: i32,
        new: u64,
        flags: u32,
    },
    Truncate {
        path: u64,
        length: u64,
    },
    /// A shared mapping of the file at descriptor `fd` (see [`program`]).
    Mmap {
        fd: i32,
    },
    /// A change of a file's times (`utimensat`, and on x86-64 `utime`, `utimes`, `futimesat`):
    /// `path` 0 names the descriptor `dirfd` itself; `times` 0 means now.
    Utime {
        dirfd: i32,
        path: u64,
        times: u64,
        flags: i32,
        form: TimeForm,
    },
    Unlink {
        dirfd: i32,
        path: u64,
        flags: i32,
    },
}

/// How a time-setting call spells its two times ([`Call::Utime`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimeForm {
    /// `struct timespec[2]` (`utimensat`).
    Spec,
    /// `struct timeval[2]` (`utimes`, `futimesat`).
    Val,
    /// `struct utimbuf` (`utime`: two `time_t`, in seconds).
    Buf,
}

/// An int argument: the low 32 bits, as the kernel reads them.
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap, reason = "the kernel reads an int")]
fn int(a: u64) -> i32 {
    a as u32 as i32
}

/// An unsigned int argument (a mode, rename flags): the low 32 bits.
#[allow(clippy::cast_possible_truncation, reason = "the kernel reads an unsigned int")]
fn uint(a: u64) -> u32 {
    a as u32
}

fn decode(n: libc::c_long, a: &[u64; 6]) -> Option<Call> {
    const FDCWD: i32 = libc::AT_FDCWD;
    #[cfg(target_arch = "x86_64")]
    {
        let legacy = match n {
            libc::SYS_open => Some(Call::Open { dirfd: FDCWD, path: a[0], flags: int(a[1]), mode: uint(a[2]) }),
            libc::SYS_creat => Some(Call::Open {
                dirfd: FDCWD,
                path: a[0],
                flags: libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
                mode: uint(a[1]),
            }),
            libc::SYS_mkdir => Some(Call::Mkdir { dirfd: FDCWD, path: a[0], mode: uint(a[1]) }),
            libc::SYS_mknod => Some(Call::Mknod { dirfd: FDCWD, path: a[0], mode: uint(a[1]), dev: a[2] }),
            libc::SYS_symlink => Some(Call::Symlink { target: a[0], dirfd: FDCWD, path: a[1] }),
            libc::SYS_link => Some(Call::Link { olddirfd: FDCWD, old: a[0], newdirfd: FDCWD, new: a[1], flags: 0 }),
            libc::SYS_rename => Some(Call::Rename { olddirfd: FDCWD, old: a[0], newdirfd: FDCWD, new: a[1], flags: 0 }),
            libc::SYS_unlink => Some(Call::Unlink { dirfd: FDCWD, path: a[0], flags: 0 }),
            libc::SYS_rmdir => Some(Call::Unlink { dirfd: FDCWD, path: a[0], flags: libc::AT_REMOVEDIR }),
            libc::SYS_utime => {
                Some(Call::Utime { dirfd: FDCWD, path: a[0], times: a[1], flags: 0, form: TimeForm::Buf })
            }
            libc::SYS_utimes => {
                Some(Call::Utime { dirfd: FDCWD, path: a[0], times: a[1], flags: 0, form: TimeForm::Val })
            }
            libc::SYS_futimesat => {
                Some(Call::Utime { dirfd: int(a[0]), path: a[1], times: a[2], flags: 0, form: TimeForm::Val })
            }
            _ => None,
        };
        if legacy.is_some() {
            return legacy;
        }
    }
    Some(match n {
        libc::SYS_openat => Call::Open { dirfd: int(a[0]), path: a[1], flags: int(a[2]), mode: uint(a[3]) },
        libc::SYS_mkdirat => Call::Mkdir { dirfd: int(a[0]), path: a[1], mode: uint(a[2]) },
        libc::SYS_mknodat => Call::Mknod { dirfd: int(a[0]), path: a[1], mode: uint(a[2]), dev: a[3] },
        libc::SYS_symlinkat => Call::Symlink { target: a[0], dirfd: int(a[1]), path: a[2] },
        libc::SYS_linkat => {
            Call::Link { olddirfd: int(a[0]), old: a[1], newdirfd: int(a[2]), new: a[3], flags: int(a[4]) }
        }
        libc::SYS_renameat => Call::Rename { olddirfd: int(a[0]), old: a[1], newdirfd: int(a[2]), new: a[3], flags: 0 },
        libc::SYS_renameat2 => {
            Call::Rename { olddirfd: int(a[0]), old: a[1], newdirfd: int(a[2]), new: a[3], flags: uint(a[4]) }
        }
        libc::SYS_truncate => Call::Truncate { path: a[0], length: a[1] },
        libc::SYS_mmap => Call::Mmap { fd: int(a[4]) },
        libc::SYS_unlinkat => Call::Unlink { dirfd: int(a[0]), path: a[1], flags: int(a[2]) },
        libc::SYS_utimensat => {
            Call::Utime { dirfd: int(a[0]), path: a[1], times: a[2], flags: int(a[3]), form: TimeForm::Spec }
        }
        _ => return None,
    })
}

/// The answer to one notification.
#[derive(Debug)]
enum Answer {
    /// The kernel performs the call (only for calls the guard merely observes).
    Continue,
    /// The call returns this value.
    Value(i64),
    /// The call fails with this errno.
    Error(Errno),
    /// The call returns a copy of this descriptor, installed in the caller (close-on-exec when
    /// the flag says so).
    Fd(OwnedFd, bool),
}

impl From<Errno> for Answer {
    fn from(e: Errno) -> Answer {
        Answer::Error(e)
    }
}

/// What handling a notification came to.
enum Outcome {
    /// Answer now.
    Answer(Answer),
    /// The caller is gone (the notification is no longer pending): no answer.
    Gone,
    /// An open that may block (a FIFO): run it on its own thread, then answer.
    Blocking(Box<dyn FnOnce() -> Answer + Send>),
}

/// A directory's identity with its birth time and generation: `(st_dev, st_ino, seconds,
/// nanoseconds, generation)`. An inode number is given out again at once (ext4 hands the
/// number a removed directory freed to the next one made beside it), and often in the same
/// tick of the clock birth times come from: the generation ([`crate::sys::generation`])
/// tells the two apart where the filesystem keeps one; where it keeps none, [`Owned::freed`]
/// does for the numbers the run frees itself.
type Born = (u64, u64, i64, u32, Option<u32>);

/// The identity, birth and generation of the object `fd` refers to; None where the filesystem
/// keeps no birth time.
fn born(fd: &OwnedFd) -> Option<Born> {
    identity(fd).and_then(|(b, birth)| birth.then_some(b))
}

/// The identity of the object `fd` refers to as [`Born`] (a birth of `(0, 0)` where the
/// filesystem keeps none), and whether the filesystem keeps birth times.
fn identity(fd: &OwnedFd) -> Option<(Born, bool)> {
    let st = crate::sys::statx_identity(fd).ok()?;
    let (sec, nsec) = st.btime.unwrap_or((0, 0));
    Some(((st.dev, st.ino, sec, nsec, crate::sys::generation(fd, st.mode)), st.btime.is_some()))
}

/// What a run made that is its own to configure (see [`Guard::made`]), and what the host made
/// during it.
struct Owned {
    /// Each `.git`, worktree directory and bare git directory this run made (at most
    /// [`MAX_RUN_DIRS`]; beyond, nothing more is the run's own: closed), by [`identity`], the
    /// first [`MAX_HELD`] with a handle that keeps their numbers from naming anything else
    /// while they are the run's (the rest are told from a later object with their number by
    /// birth and generation). Removed when the run removes the object (see [`Owned::removed`]).
    own: std::collections::HashMap<Born, Option<OwnedFd>>,
    /// How many entries of [`Owned::own`] hold a handle.
    held: usize,
    /// Every directory this run made (at most
    /// [`MAX_RUN_DIRS`]; a directory made beyond counts as the host's: closed).
    dirs: std::collections::HashSet<Born>,
    /// `(st_dev, st_ino)` of each directory of [`Owned::dirs`] the run removed (or replaced by
    /// a rename) since it made it: the next directory anyone makes there may get the number,
    /// and on a filesystem without generations, in the same clock tick, the same [`Born`]. A
    /// directory with such a number is not the run's unless the run made it after (a workload
    /// made and removed directories in a loop while the host's git was about to make one).
    freed: std::collections::HashSet<(u64, u64)>,
    /// When the run began: a directory born since that the run did not make, the host made
    /// during the run (see [`Guard::check_host_made`]). Birth times come from the kernel's
    /// coarse clock, which lags this one by up to a tick: a directory the host makes in the
    /// tick the run begins may read as older (never one made before as newer: no run is
    /// refused what an older directory allows).
    since: (i64, u32),
}

/// The `gitdir` files of foreign worktree entries the run opened for writing (see
/// [`Guard::stage_entry_file`]), at most [`MAX_STAGED`]: shared by the guard's thread, which
/// publishes them before each call it serves and when the run is over, and the init, which
/// publishes them a last time when it ends with the run ([`Staging::publish`]).
///
/// Also the operations (a rebase, `git am`, a cherry-pick or revert: `rebase-merge`,
/// `rebase-apply`, `sequencer`) the run began in a git directory it did not make, checked when
/// the run is over ([`Staging::finish`]).
#[derive(Clone, Default)]
pub struct Staging(Arc<StagingShared>);

#[derive(Default)]
struct StagingShared {
    inner: std::sync::Mutex<StagingInner>,
    /// Set when the run's end begins ([`Staging::recheck`] with `wait`): an index being placed
    /// stops reading files (what is left unread is smudged), so that the end, which waits for
    /// it, is not held up by a file the workload made huge (red team AH, 5 December).
    ending: std::sync::atomic::AtomicBool,
    /// Set when the run's end checks without having seen every process of the run reaped
    /// ([`Staging::finish`]).
    strict: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct StagingInner {
    staged: Vec<Staged>,
    operations: Vec<Operation>,
    /// Indexes put in place with entries to check again ([`RacyIndex`]).
    racy: Vec<RacyIndex>,
    /// Whether [`Staging::finish`] ran: nothing is checked again after.
    finished: bool,
    /// Indexes being placed now ([`Staging::begin_placing`]).
    placing: usize,
    /// Checks under way outside the lock ([`Staging::recheck`]).
    checking: usize,
    /// Files the run mapped shared from a descriptor open for reading and writing
    /// ([`Staging::hold_writable`]), held to be given a new ctime at its end, by identity.
    writable: Vec<OwnedFd>,
    writable_ids: std::collections::HashSet<(u64, u64)>,
    /// Regular files the run opened for reading and writing through the guard on a filesystem
    /// that never write-protects a page for write-notify ([`Staging::note_writable`]): their
    /// identity, and the identity of the directory and the name they were opened by, to be
    /// given a new ctime at the end.
    noted: std::collections::HashMap<FileId, (FileId, Vec<u8>)>,
    /// Those directories, each held (`O_PATH`): found again wherever they were moved.
    noted_dirs: std::collections::HashMap<FileId, OwnedFd>,
}

/// Gives the file held at `file` (an `O_PATH` handle) a ctime of now by setting its mode to what
/// it is (a `chown` would drop a file capability: red team AJ); a symlink, which has no mode to
/// set again nor privileges to lose, by a `chown` to its owner. Needs ownership (or
/// CAP_FOWNER).
fn set_mode_again(file: BorrowedFd<'_>) -> nix::Result<()> {
    let st = nix::sys::stat::fstat(file.as_raw_fd())?;
    if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
        return nix::unistd::fchownat(
            Some(file.as_raw_fd()),
            "",
            None,
            None,
            nix::unistd::FchownatFlags::AT_EMPTY_PATH,
        );
    }
    let via = cstr(format!("/proc/self/fd/{}", file.as_raw_fd()).as_bytes())?;
    nix::sys::stat::fchmodat(
        None,
        via.as_c_str(),
        Mode::from_bits_truncate(st.st_mode & 0o7777),
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )
}

/// A file's identity: `(st_dev, st_ino)`.
type FileId = (u64, u64);

/// Gives the file held at `held` (an `O_PATH` handle) a new ctime ([`set_mode_again`]); where
/// the init does not own it (a file of another user's that the run could write), its times set
/// to now, which needs only write access (red team AP).
fn redate_held(held: BorrowedFd<'_>) {
    if set_mode_again(held).is_err() {
        let Ok(via) = cstr(format!("/proc/self/fd/{}", held.as_raw_fd()).as_bytes()) else { return };
        let now = nix::sys::time::TimeSpec::new(0, libc::UTIME_NOW);
        let _ =
            nix::sys::stat::utimensat(None, via.as_c_str(), &now, &now, nix::sys::stat::UtimensatFlags::FollowSymlink);
    }
}

/// The most files [`Staging::hold_writable`] holds in one run (each a descriptor of the init,
/// whose limit is the container's); a shared mapping of one more is refused (ENOMEM).
const MAX_HELD_WRITABLE: usize = 256;

/// The most files [`Staging::note_writable`] notes in one run (identities and a name each, no
/// descriptor); an open for reading and writing of one more on such a filesystem is refused
/// (ENOMEM).
const MAX_NOTED_WRITABLE: usize = 65_536;

/// The most directories [`Staging::note_writable`] holds in one run (a descriptor of the init
/// each, beside [`MAX_HELD_WRITABLE`]); an open for reading and writing in one more such
/// directory is refused (ENOMEM).
const MAX_NOTED_DIRS: usize = 512;

/// Whether the open object's filesystem writes through a shared mapping without ever changing
/// a time: tmpfs and ramfs never write-protect a page for write-notify, hugetlbfs neither, and
/// an overlay's file maps its upper layer's (tmpfs in a live system).
fn maps_without_times(fd: BorrowedFd<'_>) -> bool {
    use nix::sys::statfs::{FsType, HUGETLBFS_MAGIC, OVERLAYFS_SUPER_MAGIC, TMPFS_MAGIC};
    // ramfs's (nix names none).
    const RAMFS_MAGIC: FsType = FsType(0x8584_58f6);
    // Not known: taken as one that does.
    nix::sys::statfs::fstatfs(fd).map_or(true, |st| {
        [TMPFS_MAGIC, RAMFS_MAGIC, OVERLAYFS_SUPER_MAGIC, HUGETLBFS_MAGIC].contains(&st.filesystem_type())
    })
}

/// An operation's state directory the run made in a foreign git directory: the git directory
/// (an `O_PATH` handle), the directory's name there, and its identity when made.
struct Operation {
    git: OwnedFd,
    name: Vec<u8>,
    born: Born,
}

impl Operation {
    /// The directory, opened with `flags` (never followed), while it is the one the run made.
    fn open(&self, flags: i32) -> Option<OwnedFd> {
        let name = cstr(&self.name).ok()?;
        let dir = notify::open_at(Some(self.git.as_fd()), &name, flags | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0).ok()?;
        (born(&dir) == Some(self.born)).then_some(dir)
    }
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging").finish_non_exhaustive()
    }
}

impl Staging {
    fn lock(&self) -> std::sync::MutexGuard<'_, StagingInner> {
        self.0.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Puts what the workload wrote into each staged `gitdir` under the name in its entry,
    /// where it changed since and names a `.git` in a directory the run may write
    /// ([`gitdir_allowed`]); anything else is not published (the entry keeps what it had).
    pub fn publish(&self, guard: &CreationGuard) {
        let mut inner = self.lock();
        for s in &mut inner.staged {
            s.publish(guard);
        }
    }

    /// What is left when the run is over: the staged `gitdir`s published ([`Staging::publish`]),
    /// and each operation the run began in a foreign git directory and left in progress checked
    /// ([`operation_is_safe`]): one whose state would have the user's `git rebase --continue`
    /// (or `git am`, `git cherry-pick --continue`) run a program or write a ref outside the
    /// branches is moved aside (`<name>.refused-by-sandbox`), so that no git command takes it
    /// for an operation in progress (red team AE, 5 December: a rebase the workload stopped at
    /// a `break`, with an `exec` line further down its todo, ran the command on the host at the
    /// user's `git rebase --continue`). Called when the run's first process ends (a one-shot
    /// run), and again when the guard's thread ends, after the run's last process: what a
    /// process left behind wrote in between is checked too.
    ///
    /// `strict` when processes of the run may still be in the kernel (killed, not yet reaped):
    /// every entry kept for a later look is then smudged and its file redated without being
    /// looked at, since a write already under way may land after the look.
    pub fn finish(&self, guard: &CreationGuard, strict: bool) {
        if strict {
            self.0.strict.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // What would run a program in a host repository first, then the redates (each a look in
        // a held directory): the steps after may be made slow by the run (red team BB, 6
        // December: redating thousands of files by long paths took the helper's grace, the
        // init was killed, and a rebase's `exec` line ran at the host's `--continue`; a racy
        // index's entries are hashed). Operations again last, for what the steps between
        // publish.
        self.move_operations_aside();
        self.redate_writable();
        self.publish(guard);
        self.recheck(true);
        self.move_operations_aside();
    }

    /// The operations the run left in host repositories that would run a program (a rebase's
    /// `exec` line): moved aside ([`Staging::finish`]).
    fn move_operations_aside(&self) {
        let inner = self.lock();
        for op in &inner.operations {
            // Ended (or moved: the run cannot move it into a git directory again).
            let Some(dir) = op.open(libc::O_RDONLY | libc::O_DIRECTORY) else { continue };
            if operation_is_safe(dir.as_fd(), &op.name) {
                continue;
            }
            let Ok(name) = cstr(&op.name) else { continue };
            for n in 0..16 {
                let aside = format!(
                    "{}.refused-by-sandbox{}",
                    String::from_utf8_lossy(&op.name),
                    if n == 0 { String::new() } else { format!("-{n}") }
                );
                let Ok(aside) = cstr(aside.as_bytes()) else { break };
                match nix::fcntl::renameat2(
                    Some(op.git.as_raw_fd()),
                    name.as_c_str(),
                    Some(op.git.as_raw_fd()),
                    aside.as_c_str(),
                    nix::fcntl::RenameFlags::RENAME_NOREPLACE,
                ) {
                    Err(Errno::EEXIST) => {}
                    done => {
                        tracing::warn!(operation = %String::from_utf8_lossy(&op.name), moved = done.is_ok(), "an operation the run left in a host repository would run a program: moved aside");
                        break;
                    }
                }
            }
        }
    }

    /// Holds the file open at `fd` (open for reading and writing in the run), to give it a new
    /// ctime at the run's end ([`Staging::redate_writable`]): what the run wrote through a
    /// shared mapping of it then shows to the host's `git status` (git compares the ctime).
    /// Held whatever its filesystem: tmpfs and ramfs never write-protect a page for
    /// write-notify, and an overlay's file maps its upper layer's (on tmpfs in a live system).
    /// Each is a descriptor of the init's; ENOMEM past [`MAX_HELD_WRITABLE`]. (Holding every
    /// file opened for reading and writing, the first version, ran the init out of descriptors
    /// after a thousand: git creates each loose object so.)
    fn hold_writable(&self, fd: BorrowedFd<'_>) -> Result<(), Errno> {
        let st = nix::sys::stat::fstat(fd.as_raw_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Ok(());
        }
        let mut inner = self.lock();
        #[allow(clippy::useless_conversion, reason = "dev_t and ino_t widths differ by target")]
        let id = (u64::from(st.st_dev), u64::from(st.st_ino));
        if inner.writable_ids.contains(&id) {
            return Ok(());
        }
        if inner.writable.len() >= MAX_HELD_WRITABLE {
            return Err(Errno::ENOMEM);
        }
        let via = cstr(format!("/proc/self/fd/{}", fd.as_raw_fd()).as_bytes())?;
        let held = notify::open_at(None, &via, libc::O_PATH | libc::O_CLOEXEC, 0)?;
        inner.writable_ids.insert(id);
        inner.writable.push(held);
        Ok(())
    }

    /// Notes the regular file open at `fd` (opened for reading and writing through the guard,
    /// by the name `name` in the directory `dir`) where its filesystem writes through a shared
    /// mapping without changing a time ([`maps_without_times`]), to give it a new ctime at the
    /// run's end ([`Staging::redate_writable`]). A shared mapping needs a descriptor open for
    /// reading and writing, and every such open goes through the guard: what it opened is known
    /// whatever descriptor the later `mmap` names. Checking the descriptor at the `mmap` alone
    /// ([`Staging::hold_writable`]) left a race: red team AZ (6 December) made the guard's look
    /// at it slow (an epoll descriptor with 4,000 entries), saw from inside when it was under
    /// way, and put the file's descriptor in its place before the kernel's call (22 of 30
    /// changes on a tmpfs workspace hidden from the host's git). The directory is held, not its
    /// path: red team BB moved a parent directory away and back around the open, and the
    /// recorded path led nowhere at the end. ENOMEM past [`MAX_NOTED_WRITABLE`] files or
    /// [`MAX_NOTED_DIRS`] directories.
    fn note_writable(&self, fd: BorrowedFd<'_>, dir: BorrowedFd<'_>, name: &[u8]) -> Result<(), Errno> {
        let st = nix::sys::stat::fstat(fd.as_raw_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || !maps_without_times(fd) {
            return Ok(());
        }
        let dst = nix::sys::stat::fstat(dir.as_raw_fd())?;
        #[allow(clippy::useless_conversion, reason = "dev_t and ino_t widths differ by target")]
        let (id, dir_id) =
            ((u64::from(st.st_dev), u64::from(st.st_ino)), (u64::from(dst.st_dev), u64::from(dst.st_ino)));
        let mut inner = self.lock();
        if !inner.noted.contains_key(&id) && inner.noted.len() >= MAX_NOTED_WRITABLE {
            return Err(Errno::ENOMEM);
        }
        if !inner.noted_dirs.contains_key(&dir_id) {
            if inner.noted_dirs.len() >= MAX_NOTED_DIRS {
                return Err(Errno::ENOMEM);
            }
            let via = cstr(format!("/proc/self/fd/{}", dir.as_raw_fd()).as_bytes())?;
            let held = notify::open_at(None, &via, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)?;
            inner.noted_dirs.insert(dir_id, held);
        }
        inner.noted.insert(id, (dir_id, name.to_vec()));
        Ok(())
    }

    /// Gives every file [`Staging::hold_writable`] holds, and every file
    /// [`Staging::note_writable`] noted that is still in its directory by its name (found
    /// through the held directory, one component: never slow), a new ctime, by setting its
    /// mode to what it is (as [`RacyIndex::redate_changed`] does). Called at the run's end, once
    /// no process of the run is left to write through a mapping. (A noted file renamed or
    /// linked elsewhere got a new ctime from that.)
    fn redate_writable(&self) {
        let inner = self.lock();
        for held in &inner.writable {
            redate_held(held.as_fd());
        }
        for (id, (dir_id, name)) in &inner.noted {
            if inner.writable_ids.contains(id) {
                continue;
            }
            let Some(dir) = inner.noted_dirs.get(dir_id) else { continue };
            let Ok(name) = cstr(name) else { continue };
            let Ok(file) =
                notify::open_at(Some(dir.as_fd()), &name, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0)
            else {
                continue;
            };
            #[allow(clippy::useless_conversion, reason = "dev_t and ino_t widths differ by target")]
            let same = nix::sys::stat::fstat(file.as_raw_fd())
                .is_ok_and(|st| (u64::from(st.st_dev), u64::from(st.st_ino)) == *id);
            if same {
                redate_held(file.as_fd());
            }
        }
    }

    fn is_empty(&self) -> bool {
        let inner = self.lock();
        inner.staged.is_empty() && inner.racy.is_empty()
    }

    /// An index is being placed (its entries to check again come in [`Staging::end_placing`]):
    /// false once the run is over (nothing would check them again).
    fn begin_placing(&self) -> bool {
        let mut inner = self.lock();
        if inner.finished {
            return false;
        }
        inner.placing += 1;
        true
    }

    /// The placing begun by [`Staging::begin_placing`] is done: `index`, with entries to check
    /// again ([`RacyIndex`]), recorded; checked at once (their second waited out) when
    /// [`MAX_STAGED`] are recorded.
    fn end_placing(&self, index: Option<RacyIndex>) {
        let mut inner = self.lock();
        let Some(index) = index else {
            inner.placing -= 1;
            return;
        };
        let held: usize = inner.racy.iter().map(|r| r.entries.len()).sum();
        if inner.racy.len() < MAX_STAGED && held + index.entries.len() <= MAX_RACY_TOTAL {
            inner.racy.push(index);
            inner.placing -= 1;
            return;
        }
        // Checked here, outside the lock (the run's end waits for the placing to end).
        drop(inner);
        let _ = index.recheck(true, &self.0.ending, false);
        self.lock().placing -= 1;
    }

    /// Checks again the recorded indexes whose entries' seconds are over ([`RacyIndex::recheck`]);
    /// with `wait`, every one, after waiting out their seconds (at most one second in all): when
    /// the run is over, before its outcome is told (an index a host `git` reads after the run
    /// hides nothing, whatever another process does to the files within the second).
    ///
    /// The checks run outside the lock, so that a check the guard's thread makes (which may
    /// wait for git's lock on each index) never holds up the run's end; the end waits for one
    /// under way, which waits for no lock once the end has begun. A one-shot run's init ends
    /// the run's namespace once this returns. Red team AM (5 December) had the guard's thread
    /// check 62 indexes behind a stale `index.lock` (100 ms each) while holding the lock: the
    /// killed run's end waited behind it until the helper killed the init, and a change of the
    /// run's last second stayed hidden.
    fn recheck(&self, wait: bool) {
        let ending = &self.0.ending;
        let mut inner = self.lock();
        if wait {
            // No placing begins now; one under way ends first (its entries are recorded then),
            // reading no more files, and so does a check under way.
            inner.finished = true;
            ending.store(true, std::sync::atomic::Ordering::SeqCst);
            // Bounded all the same: a placing held up by something unforeseen must not keep
            // the end's other checks (an operation moved aside, shared mappings redated) from
            // running before the helper's grace runs out (red team AU, 5 December: a FIFO read
            // while placing stalled the end for good). What it places later has every entry it
            // had not judged smudged (`ending`).
            let waited = std::time::Instant::now();
            while (inner.placing > 0 || inner.checking > 0) && waited.elapsed() < END_WAIT {
                drop(inner);
                std::thread::sleep(std::time::Duration::from_millis(1));
                inner = self.lock();
            }
            if inner.placing > 0 || inner.checking > 0 {
                tracing::warn!(
                    placing = inner.placing,
                    checking = inner.checking,
                    "guard: the run's end did not wait longer"
                );
            }
        }
        if inner.racy.is_empty() {
            return;
        }
        let (due, later): (Vec<RacyIndex>, _) =
            std::mem::take(&mut inner.racy).into_iter().partition(|r| wait || second_over(r.until()));
        inner.racy = later;
        if due.is_empty() {
            return;
        }
        inner.checking += 1;
        drop(inner);
        let strict = self.0.strict.load(std::sync::atomic::Ordering::SeqCst);
        if wait && !strict {
            wait_out(due.iter().map(RacyIndex::until).max().unwrap_or(0));
        }
        // Every changed file gets its new ctime first (nothing else is needed for git to read
        // it; their seconds are over): the smudges that follow may wait for locks, and the
        // helper kills an init that takes too long to end a killed run. Strictly, every file.
        for index in &due {
            index.redate_changed(strict);
        }
        let mut again = Vec::new();
        for index in due {
            // One that could not be read stays for the next look (the run's end tries once more).
            if !index.recheck(wait, ending, strict) && !wait {
                again.push(index);
            }
        }
        let mut inner = self.lock();
        inner.racy.extend(again);
        inner.checking -= 1;
    }

    /// Adds `s`; the oldest goes, published a last time, when [`MAX_STAGED`] are there.
    fn push(&self, guard: &CreationGuard, s: Staged) {
        let mut inner = self.lock();
        if inner.staged.len() >= MAX_STAGED {
            let mut oldest = inner.staged.remove(0);
            oldest.publish(guard);
        }
        inner.staged.push(s);
    }

    /// Records an operation's state directory the run just made in a foreign git directory;
    /// false when [`MAX_STAGED`] are recorded that are still there (the caller removes it: an
    /// operation that is not recorded is not checked when the run ends).
    fn began(&self, op: Operation) -> bool {
        let mut inner = self.lock();
        if inner.operations.len() >= MAX_STAGED {
            inner.operations.retain(|o| o.open(libc::O_PATH).is_some());
        }
        if inner.operations.len() >= MAX_STAGED {
            return false;
        }
        inner.operations.push(op);
        true
    }
}

/// Whether the state in `dir` (an operation's: `name` is `rebase-merge`, `rebase-apply` or
/// `sequencer`) is one the user's `--continue` may take: its todo (`git-rebase-todo`, `todo`)
/// has no `exec` (`x`) or `update-ref` (`u`) line, its strategy and strategy options no slash
/// or backslash (a strategy with one is a program's path: `git-merge-<strategy>`), its
/// `head-name` is a branch or `detached HEAD`, every ref in `update-refs` a branch, and `git
/// am`'s `apply-opt` holds only options that change how a patch applies, never where
/// ([`apply_opts_safe`]). A file that cannot be read counts as unsafe.
fn operation_is_safe(dir: BorrowedFd<'_>, name: &[u8]) -> bool {
    let read = |file: &str| -> Result<Option<Vec<u8>>, ()> {
        let Ok(c) = cstr(file.as_bytes()) else { return Err(()) };
        match notify::open_at(Some(dir), &c, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC, 0)
        {
            Ok(fd) => {
                let mut data = Vec::new();
                let f = std::fs::File::from(fd);
                if !f.metadata().is_ok_and(|m| m.is_file() && m.len() <= 16 << 20) {
                    return Err(());
                }
                std::io::Read::read_to_end(&mut &f, &mut data).map_err(|_| ())?;
                Ok(Some(data))
            }
            Err(Errno::ENOENT) => Ok(None),
            Err(_) => Err(()),
        }
    };
    let todo_safe = |data: &[u8]| {
        data.split(|b| *b == b'\n').all(|line| {
            // git skips spaces and tabs before the command, and takes a space, tab, CR or the
            // line's end after it; a byte-order mark or a NUL is taken as git might take it.
            let mut line = line.trim_ascii_start();
            while let Some(rest) = line.strip_prefix(b"\xEF\xBB\xBF") {
                line = rest.trim_ascii_start();
            }
            let word = line.split(|b| b.is_ascii_whitespace() || *b == 0).next().unwrap_or_default();
            !matches!(word, b"exec" | b"x" | b"update-ref" | b"u")
        })
    };
    let no_slash = |data: &[u8]| !data.iter().any(|b| *b == b'/' || *b == b'\\');
    let branch = |data: &[u8]| {
        let text = data.trim_ascii();
        text == b"detached HEAD" || (text.starts_with(b"refs/heads/") && !text.windows(2).any(|w| w == b".."))
    };
    type Check<'c> = &'c dyn Fn(&[u8]) -> bool;
    let checks: [(&str, Check<'_>); 8] = [
        ("git-rebase-todo", &todo_safe),
        ("todo", &todo_safe),
        ("strategy", &no_slash),
        ("strategy_opts", &no_slash),
        ("head-name", &branch),
        ("update-refs", &|d: &[u8]| {
            d.split(|b| *b == b'\n').all(|l| {
                !l.starts_with(b"refs/") || (l.starts_with(b"refs/heads/") && !l.windows(2).any(|w| w == b".."))
            })
        }),
        ("apply-opt", &apply_opts_safe),
        ("opts", &|d: &[u8]| name != b"sequencer" || no_slash(d)),
    ];
    checks.iter().all(|(file, ok)| match read(file) {
        Ok(Some(data)) => ok(&data),
        Ok(None) => true,
        Err(()) => false,
    })
}

/// Whether `git am`'s `apply-opt` (shell-quoted words, as git's `sq_quote` writes them, passed to
/// `git apply` for every patch the user's `git am --continue` applies) holds only `git am`'s own
/// options that change how a patch applies: `--whitespace=<action>`, `-C<n>`, `-p<n>`,
/// `--ignore-whitespace`, `--ignore-space-change`, `--reject`, `--exclude=`/`--include=` (which
/// only leave paths out) and `--directory=` with a relative path that does not climb. Any other
/// option is refused, abbreviations too: red team AF (5 December) had `--build-fake-ancestor=`
/// write an index, with lines of its choosing in its path names, over `~/.profile` and
/// `~/.ssh/authorized_keys` at the user's `git am --continue`.
fn apply_opts_safe(data: &[u8]) -> bool {
    let data = data.trim_ascii_end();
    let mut words: Vec<Vec<u8>> = Vec::new();
    let mut i = 0;
    loop {
        while data.get(i) == Some(&b' ') {
            i += 1;
        }
        if i >= data.len() {
            break;
        }
        if data[i] != b'\'' {
            return false;
        }
        i += 1;
        let mut word = Vec::new();
        loop {
            match data.get(i) {
                None => return false,
                Some(b'\'') if data.get(i + 1..i + 4) == Some(b"\\''".as_slice()) => {
                    word.push(b'\'');
                    i += 4;
                }
                Some(b'\'') => {
                    i += 1;
                    break;
                }
                Some(&c) => {
                    word.push(c);
                    i += 1;
                }
            }
        }
        words.push(word);
    }
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    words.iter().all(|w| {
        let w = w.as_slice();
        if let Some(action) = w.strip_prefix(b"--whitespace=") {
            return !action.is_empty() && action.iter().all(|c| c.is_ascii_lowercase() || *c == b'-');
        }
        if let Some(dir) = w.strip_prefix(b"--directory=") {
            return !dir.starts_with(b"/") && !dir.split(|c| *c == b'/').any(|part| part == b"..");
        }
        matches!(w, b"--ignore-whitespace" | b"--ignore-space-change" | b"--reject")
            || w.strip_prefix(b"-C").is_some_and(digits)
            || w.strip_prefix(b"-p").is_some_and(digits)
            || w.starts_with(b"--exclude=")
            || w.starts_with(b"--include=")
    })
}

/// A worktree entry's `gitdir` as the workload writes it: what it wrote goes to `file` (no
/// name); [`Staging::publish`] puts it under the name in `entry` when it names a place the run
/// may write.
struct Staged {
    /// The entry directory (an `O_PATH` handle).
    entry: OwnedFd,
    /// The caller's unnamed file (another handle of it).
    file: OwnedFd,
    /// What was last put under the name.
    published: Option<Vec<u8>>,
}

/// The most staged `gitdir`s one run keeps; the oldest goes (published a last time) when another
/// comes.
const MAX_STAGED: usize = 64;

impl Owned {
    /// Whether the directory born `b` was made by this run (and not removed by it since).
    fn run_made(&self, b: &Born) -> bool {
        self.dirs.contains(b) && !self.freed.contains(&(b.0, b.1))
    }

    /// Whether the directory born `b` was made during the run by another than the run.
    fn host_born(&self, b: &Born) -> bool {
        (b.2, b.3) >= self.since && !self.run_made(b)
    }

    /// Records that the run removed the object `b` (see [`Owned::freed`]): it is no longer the
    /// run's own either, and its handle, if any, is let go.
    fn removed(&mut self, b: &Born) {
        if self.dirs.contains(b) {
            self.freed.insert((b.0, b.1));
        }
        if let Some(handle) = self.own.remove(b) {
            self.held -= usize::from(handle.is_some());
        }
    }

    /// Records `b` as made by the run in [`Owned::dirs`] (no longer freed, if its number was).
    fn made_by_run(&mut self, b: Born) {
        if self.dirs.len() < MAX_RUN_DIRS {
            self.freed.remove(&(b.0, b.1));
            self.dirs.insert(b);
        }
    }

    /// Records the object `b` (open as `fd`) as the run's own (see [`Owned::own`]).
    fn make_own(&mut self, b: Born, fd: OwnedFd) {
        if self.own.len() >= MAX_RUN_DIRS || self.own.contains_key(&b) {
            return;
        }
        let handle = (self.held < MAX_HELD).then_some(fd);
        self.held += usize::from(handle.is_some());
        self.own.insert(b, handle);
    }

    fn new() -> Owned {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Owned {
            own: std::collections::HashMap::new(),
            held: 0,
            dirs: std::collections::HashSet::new(),
            freed: std::collections::HashSet::new(),
            since: (i64::try_from(now.as_secs()).unwrap_or(i64::MAX), now.subsec_nanos()),
        }
    }
}

type Made = std::cell::RefCell<Owned>;

/// What git's set-up of a git directory makes before (or beside) its config: its templates
/// (`hooks`, `info`, `description`, `branches`), its config's lock, `HEAD`, `objects`, `refs`.
const SETUP_MARKS: [&str; 9] =
    ["hooks", "info", "description", "branches", "config.lock", "HEAD", "objects", "refs", "packed-refs"];

/// The most directories one run records as made by it (see [`Owned::dirs`]): about 10 MiB.
const MAX_RUN_DIRS: usize = 250_000;

/// The most entries of [`Owned::own`] that hold a handle (each a descriptor of the init's).
const MAX_HELD: usize = 256;

/// The longest path the kernel accepts, its NUL included.
const PATH_MAX: usize = 4096;

/// Copies the NUL-terminated string at `addr` out of the caller's memory, page by page (a
/// string may end just before an unmapped page). EFAULT for an unreadable address,
/// ENAMETOOLONG past [`PATH_MAX`], as the kernel answers.
fn read_string(mem: BorrowedFd<'_>, addr: u64) -> Result<Vec<u8>, Errno> {
    if addr == 0 {
        return Err(Errno::EFAULT);
    }
    let mut out = Vec::new();
    let mut at = addr;
    let mut buf = [0u8; 4096];
    while out.len() < PATH_MAX {
        let in_page = 4096 - usize::try_from(at % 4096).unwrap_or(0);
        let want = in_page.min(PATH_MAX - out.len());
        let offset = i64::try_from(at).map_err(|_| Errno::EFAULT)?;
        let n = nix::sys::uio::pread(mem, &mut buf[..want], offset).map_err(|_| Errno::EFAULT)?;
        if n == 0 {
            return Err(Errno::EFAULT);
        }
        if let Some(i) = buf[..n].iter().position(|&b| b == 0) {
            out.extend_from_slice(&buf[..i]);
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
        at = at.checked_add(n as u64).ok_or(Errno::EFAULT)?;
    }
    Err(Errno::ENAMETOOLONG)
}

/// Copies `len` bytes at `addr` out of the caller's memory (EFAULT when they are not all
/// readable, as the kernel answers).
fn read_bytes(mem: BorrowedFd<'_>, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
    let mut out = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let at = addr.checked_add(done as u64).ok_or(Errno::EFAULT)?;
        let offset = i64::try_from(at).map_err(|_| Errno::EFAULT)?;
        let n = nix::sys::uio::pread(mem, &mut out[done..], offset).map_err(|_| Errno::EFAULT)?;
        if n == 0 {
            return Err(Errno::EFAULT);
        }
        done += n;
    }
    Ok(out)
}

/// The two times (access, modification) of a time-setting call at `addr` in the caller's
/// memory, as `(seconds, nanoseconds)` in `utimensat`'s terms (`UTIME_NOW`, `UTIME_OMIT` kept);
/// None for a null pointer (both now). EINVAL where the kernel refuses them.
#[allow(clippy::type_complexity, reason = "two (seconds, nanoseconds) pairs")]
fn read_times(mem: BorrowedFd<'_>, addr: u64, form: TimeForm) -> Result<Option<[(i64, i64); 2]>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let bytes = read_bytes(mem, addr, if form == TimeForm::Buf { 16 } else { 32 })?;
    let word = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[8 * i..8 * i + 8]);
        i64::from_ne_bytes(b)
    };
    let pair = |sec: i64, frac: i64| -> Result<(i64, i64), Errno> {
        match form {
            TimeForm::Spec if frac == libc::UTIME_NOW || frac == libc::UTIME_OMIT => Ok((sec, frac)),
            TimeForm::Spec if (0..1_000_000_000).contains(&frac) => Ok((sec, frac)),
            TimeForm::Val if (0..1_000_000).contains(&frac) => Ok((sec, frac * 1000)),
            TimeForm::Buf => Ok((sec, 0)),
            _ => Err(Errno::EINVAL),
        }
    };
    Ok(Some(match form {
        TimeForm::Buf => [pair(word(0), 0)?, pair(word(1), 0)?],
        TimeForm::Spec | TimeForm::Val => [pair(word(0), word(1))?, pair(word(2), word(3))?],
    }))
}

/// Where the guard records a refused direct network call.
pub type Record = Box<dyn FnMut(&Direct) + Send>;

/// What the guard thread watches for one spawn.
pub struct Watch {
    /// The creation guard of protected paths (issue 14); None: no creating call is sent.
    pub creation: Option<CreationGuard>,
    /// Where refused direct network calls are recorded (issue 17), before their caller gets
    /// its answer; None: no network call is sent.
    pub direct: Option<Record>,
    /// The staged `gitdir`s of the run (see [`Staging`]): the init keeps a handle too.
    pub staging: Staging,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("creation", &self.creation)
            .field("direct", &self.direct.is_some())
            .field("staging", &self.staging)
            .finish()
    }
}

/// Serves the listener until it fails (then it is closed, and every call the filter sends to
/// it fails with ENOSYS: closed). Never panics on what a workload sends.
pub fn serve(listener: OwnedFd, mut watch: Watch) {
    // A creating call is made with its caller's umask, set here: on this thread's own
    // filesystem attributes (and its helper threads', which share them), never the init's.
    // The umask is per process otherwise: one run's `umask 000` reached the next run of a
    // kept container, and showed in the init's `/proc/1/status` (a red team, 5 December).
    // Without them nothing is served: every call the filter sends fails (ENOSYS).
    if nix::sched::unshare(nix::sched::CloneFlags::CLONE_FS).is_err() {
        return;
    }
    let listener = Arc::new(listener);
    // The `.git`s this run made: their config and hooks are the run's own (see `check_git`).
    let made = Made::new(Owned::new());
    serve_calls(&listener, &mut watch, &made);
    // What the run wrote last to a staged `gitdir`; the operations it left.
    if let Some(guard) = watch.creation.as_ref() {
        watch.staging.finish(guard, false);
    }
}

/// The loop of [`serve`], until the listener hangs up or fails.
fn serve_calls(listener: &Arc<OwnedFd>, watch: &mut Watch, made: &Made) {
    loop {
        // The listener hangs up once no process uses the filter any more: the run is over
        // (a kept container's init joins this thread before its next run, issue 16).
        let mut fds = [nix::poll::PollFd::new(listener.as_fd(), nix::poll::PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE) {
            Ok(_) => {
                let revents = fds[0].revents().unwrap_or(nix::poll::PollFlags::empty());
                if !revents.contains(nix::poll::PollFlags::POLLIN)
                    && revents.intersects(nix::poll::PollFlags::POLLHUP | nix::poll::PollFlags::POLLERR)
                {
                    return;
                }
            }
            Err(Errno::EINTR) => continue,
            Err(_) => return,
        }
        let req = match notify::recv(listener.as_fd()) {
            Ok(r) => r,
            // A caller interrupted before we took its call, or a signal here.
            Err(Errno::EINTR | Errno::ENOENT) => continue,
            Err(_) => return,
        };
        let net = direct::decode(libc::c_long::from(req.data.nr), &req.data.args);
        let outcome = match (net, watch.direct.as_mut(), watch.creation.as_ref()) {
            (Some(call), Some(record), _) => handle_net(listener.as_fd(), &req, call, record.as_mut()),
            (None, _, Some(guard)) => handle(guard, made, &watch.staging, listener.as_fd(), &req),
            _ => Outcome::Answer(Answer::Error(Errno::ENOSYS)),
        };
        match outcome {
            Outcome::Answer(a) => answer(listener.as_fd(), req.id, a),
            Outcome::Gone => {}
            Outcome::Blocking(job) => {
                let l = Arc::clone(listener);
                let id = req.id;
                let spawned = std::thread::Builder::new().name("guard-open".into()).spawn(move || {
                    let a = job();
                    answer(l.as_fd(), id, a);
                });
                if spawned.is_err() {
                    answer(listener.as_fd(), id, Answer::Error(Errno::EAGAIN));
                }
            }
        }
    }
}

fn answer(listener: BorrowedFd<'_>, id: u64, a: Answer) {
    let _ = match a {
        Answer::Continue => notify::continue_call(listener, id),
        Answer::Value(v) => notify::send(listener, id, v, 0),
        Answer::Error(e) => notify::send(listener, id, 0, e as i32),
        Answer::Fd(fd, cloexec) => match notify::add_fd_and_send(listener, id, fd.as_fd(), cloexec) {
            Ok(_) | Err(Errno::ENOENT) => Ok(()),
            Err(e) => notify::send(listener, id, 0, e as i32),
        },
    };
}

/// Opens `/proc/<tid>` of the thread waiting in `req`, and checks that the notification is
/// still pending afterwards, so that the directory is that thread's (a thread id is reused
/// only once its thread is gone). Err: the answer (or [`Outcome::Gone`]).
fn pin(listener: BorrowedFd<'_>, req: &libc::seccomp_notif) -> Result<Thread, Outcome> {
    let Ok(tid) = i32::try_from(req.pid) else { return Err(Outcome::Answer(Answer::Error(Errno::ESRCH))) };
    let proc_dir = cstr(format!("/proc/{tid}").as_bytes())
        .and_then(|p| notify::open_at(None, &p, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0))
        .map_err(|e| Outcome::Answer(e.into()))?;
    // `/proc/<tid>` is now pinned to the thread that is waiting in this notification.
    if !notify::id_valid(listener, req.id) {
        return Err(Outcome::Gone);
    }
    Ok(Thread::new(tid, proc_dir))
}

/// A shared mapping of the file at the caller's descriptor `fd`: when the descriptor is open for
/// reading and writing (only such a one maps shared and writable, or can be made so with
/// `mprotect`), its file is held and given a new ctime at the run's end
/// ([`Staging::hold_writable`]): on tmpfs (or an overlay on it) a write through the mapping,
/// once its page was read, changes no time at all, and the host's git took the file for
/// unchanged (red teams AO and AP, 5 December; AP passed such a descriptor from one run to
/// another over a unix socket, which an open the guard holds did not cover). The kernel then
/// makes the call. ENOMEM when the guard holds as many files as it may.
fn handle_mmap(
    staging: &Staging,
    listener: BorrowedFd<'_>,
    req: &libc::seccomp_notif,
    thread: &Thread,
    fd: i32,
) -> Outcome {
    let kernel = Outcome::Answer(Answer::Continue);
    if fd < 0 {
        return kernel;
    }
    // The descriptor through the pinned thread's table (its `fd/<n>` link: the file itself),
    // and its access mode.
    // A descriptor that is not there is the kernel's to refuse (EBADF); one the guard cannot
    // look at is refused here (never mapped unheld).
    let (file, flags) = match caller_fd(thread, fd) {
        Ok(Some(found)) => found,
        Ok(None) => return kernel,
        Err(e) => return Outcome::Answer(Answer::Error(e)),
    };
    let Some(flags) = flags else { return Outcome::Answer(Answer::Error(Errno::EACCES)) };
    if flags & libc::O_ACCMODE != libc::O_RDWR {
        return kernel;
    }
    if !notify::id_valid(listener, req.id) {
        return Outcome::Gone;
    }
    match staging.hold_writable(file.as_fd()) {
        Ok(()) => kernel,
        Err(e) => Outcome::Answer(Answer::Error(e)),
    }
}

/// The caller's descriptor `fd` (`fd >= 0`) through the pinned thread's table: a handle of the
/// guard's own on its file (the `fd/<n>` link, opened `O_PATH`) and the descriptor's open flags
/// (its `fdinfo/<n>`), `None` where they cannot be read (the descriptor was closed between the
/// two reads). `Ok(None)` where nothing is open at `fd`.
fn caller_fd(thread: &Thread, fd: i32) -> Result<Option<(OwnedFd, Option<i32>)>, Errno> {
    let link = cstr(format!("fd/{fd}").as_bytes())?;
    let file = match notify::open_at(Some(thread.proc_dir.as_fd()), &link, libc::O_PATH | libc::O_CLOEXEC, 0) {
        Ok(file) => file,
        Err(Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(e),
    };
    let info = std::fs::read_to_string(format!("/proc/self/fd/{}/fdinfo/{fd}", thread.proc_dir.as_raw_fd()));
    let flags = info.ok().and_then(|t| {
        t.lines().find_map(|l| l.strip_prefix("flags:")).and_then(|v| i32::from_str_radix(v.trim(), 8).ok())
    });
    Ok(Some((file, flags)))
}

/// The memory of a pinned thread (`/proc/<tid>/mem`).
fn open_mem(thread: &Thread) -> Result<OwnedFd, Errno> {
    notify::open_at(Some(thread.proc_dir.as_fd()), c"mem", libc::O_RDONLY | libc::O_CLOEXEC, 0)
}

/// A `connect` or `sendto` (see [`direct`]): the address is copied as the creating calls'
/// paths are (pinned thread, still pending before and after); a call off the loopback is
/// recorded and answered ENETUNREACH, everything else continues into the kernel, which also
/// gives its own answer wherever the guard cannot read what it needs.
fn handle_net(
    listener: BorrowedFd<'_>,
    req: &libc::seccomp_notif,
    call: NetCall,
    record: &mut (dyn FnMut(&Direct) + Send),
) -> Outcome {
    let kernel = Outcome::Answer(Answer::Continue);
    let len = match usize::try_from(call.len) {
        Ok(len) if call.addr != 0 && len <= direct::SOCKADDR_STORAGE => len,
        _ => return kernel,
    };
    let thread = match pin(listener, req) {
        Ok(t) => t,
        Err(Outcome::Gone) => return Outcome::Gone,
        Err(_) => return kernel,
    };
    let Ok(mem) = open_mem(&thread) else { return kernel };
    let Ok(bytes) = read_bytes(mem.as_fd(), call.addr, len) else { return kernel };
    drop(mem);
    // The common case, the loopback (the proxy's port) or a Unix socket, continues at once:
    // what the kernel does with it does not depend on anything read here.
    if direct::destination(&bytes).is_none_or(|a| direct::is_local(a.ip())) {
        return kernel;
    }
    let proto = notify::sock_proto_name(thread.proc_dir.as_fd(), call.fd);
    // What was read belongs to the thread still waiting in this call.
    if !notify::id_valid(listener, req.id) {
        return Outcome::Gone;
    }
    match direct::judge(&call, &bytes, proto.as_deref()) {
        Verdict::Continue => kernel,
        Verdict::Refuse(d) => {
            record(&d);
            Outcome::Answer(Answer::Error(direct::REFUSED))
        }
    }
}

fn handle(
    guard: &CreationGuard,
    made: &Made,
    staging: &Staging,
    listener: BorrowedFd<'_>,
    req: &libc::seccomp_notif,
) -> Outcome {
    if !staging.is_empty() {
        staging.publish(guard);
        staging.recheck(false);
    }
    let Some(call) = decode(libc::c_long::from(req.data.nr), &req.data.args) else {
        return Outcome::Answer(Answer::Error(Errno::ENOSYS));
    };
    let thread = match pin(listener, req) {
        Ok(t) => t,
        Err(o) => return o,
    };
    if let Call::Mmap { fd } = call {
        return handle_mmap(staging, listener, req, &thread, fd);
    }
    if let Call::Utime { dirfd, path, times, flags, form } = call {
        let g = Guard { guard, thread: &thread, made, staging };
        return Outcome::Answer(match g.utime(listener, req, (dirfd, path), (times, form), flags) {
            Ok(()) => Answer::Value(0),
            Err(e) => Answer::Error(e),
        });
    }
    let mem = match open_mem(&thread) {
        Ok(m) => m,
        Err(e) => return Outcome::Answer(e.into()),
    };
    let read = |addr| read_string(mem.as_fd(), addr);
    let strings = match call {
        Call::Open { path, .. }
        | Call::Mkdir { path, .. }
        | Call::Mknod { path, .. }
        | Call::Truncate { path, .. }
        | Call::Unlink { path, .. } => read(path).map(|p| (p, None)),
        Call::Mmap { .. } | Call::Utime { .. } => Err(Errno::ENOSYS),
        Call::Symlink { target, path, .. } => read(target).and_then(|t| Ok((read(path)?, Some(t)))),
        Call::Link { old, new, .. } | Call::Rename { old, new, .. } => {
            read(new).and_then(|n| Ok((n, Some(read(old)?))))
        }
    };
    let (path, other) = match strings {
        Ok(s) => s,
        Err(e) => return Outcome::Answer(e.into()),
    };
    drop(mem);
    // What was read belongs to the thread still waiting in this call.
    if !notify::id_valid(listener, req.id) {
        return Outcome::Gone;
    }
    let g = Guard { guard, thread: &thread, made, staging };
    let other = other.unwrap_or_default();
    let result = match call {
        Call::Open { dirfd, flags, mode, .. } => return g.open(dirfd, &path, flags, mode),
        Call::Mkdir { dirfd, mode, .. } => g.mkdir(dirfd, &path, mode),
        Call::Mknod { dirfd, mode, dev, .. } => g.mknod(dirfd, &path, mode, dev),
        Call::Symlink { dirfd, .. } => g.symlink(&other, dirfd, &path),
        Call::Link { olddirfd, newdirfd, flags, .. } => g.link(olddirfd, &other, newdirfd, &path, flags),
        Call::Rename { olddirfd, newdirfd, flags, .. } => g.rename(olddirfd, &other, newdirfd, &path, flags),
        Call::Truncate { length, .. } => g.truncate(&path, length),
        Call::Unlink { dirfd, flags, .. } => g.unlink(dirfd, &path, flags),
        Call::Mmap { .. } | Call::Utime { .. } => Err(Errno::ENOSYS),
    };
    Outcome::Answer(match result {
        Ok(()) => Answer::Value(0),
        Err(e) => Answer::Error(e),
    })
}

/// Opens `object` (a handle the guard resolved) again through `/proc/self/fd` with `flags`, for
/// the caller. A FIFO, reached by name or through a link to a descriptor (`/proc/self/fd/N`),
/// waits for its other end: not on the guard's thread, which a blocked open stopped for good (a
/// red team, 5 December: the run's outcome was lost); the job keeps the object open.
fn reopen(object: OwnedFd, kind: libc::mode_t, flags: i32, cloexec: bool) -> Result<Outcome, Errno> {
    let via = cstr(format!("/proc/self/fd/{}", object.as_raw_fd()).as_bytes())?;
    if kind == libc::S_IFIFO {
        let job = move || match notify::open_at(None, &via, flags, 0) {
            Ok(fd) => {
                drop(object);
                Answer::Fd(fd, cloexec)
            }
            Err(e) => Answer::Error(e),
        };
        return Ok(Outcome::Blocking(Box::new(job)));
    }
    let fd = notify::open_at(None, &via, flags, 0)?;
    Ok(Outcome::Answer(Answer::Fd(fd, cloexec)))
}

/// Whether `st` is `/dev/tty` (character device 5:0), which names the opener's controlling
/// terminal.
fn is_dev_tty(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFCHR && libc::major(st.st_rdev) == 5 && libc::minor(st.st_rdev) == 0
}

/// EEXIST when `p` names something that exists (`.`, `..`, or an entry): nothing is created,
/// and the kernel answers so before any permission check.
fn new_name(p: &Parent) -> Result<(), Errno> {
    if is_dot(&p.name) {
        return Err(Errno::EEXIST);
    }
    match nix::sys::stat::fstatat(Some(p.dir.as_raw_fd()), cstr(&p.name)?.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(_) => Err(Errno::EEXIST),
        Err(_) => Ok(()),
    }
}

/// The file type (`S_IF*`) of what `p` names, not followed; None when nothing is there (or
/// the name cannot be read).
fn kind_of(p: &Parent) -> Option<libc::mode_t> {
    let name = cstr(&p.name).ok()?;
    nix::sys::stat::fstatat(Some(p.dir.as_raw_fd()), name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
        .ok()
        .map(|st| st.st_mode & libc::S_IFMT)
}

/// Whether `p` names a symlink (not followed).
fn is_symlink(p: &Parent) -> bool {
    kind_of(p) == Some(libc::S_IFLNK)
}

/// Whether the file type `kind` (`S_IF*`) is a FIFO, a socket or a device: nothing git makes in
/// a git directory (its fsmonitor's socket comes by `bind`). In a host repository's `.git`,
/// a FIFO under a name git opens (`HEAD`, `ORIG_HEAD`, a ref) left the user's `git status`
/// waiting for ever (red team AG, 5 December): none comes into a git directory.
fn is_special(kind: libc::mode_t) -> bool {
    matches!(kind & libc::S_IFMT, libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFCHR | libc::S_IFBLK)
}

/// Whether `p` names a symlink, a FIFO, a socket or a device ([`is_special`]), not followed.
fn is_symlink_or_special(p: &Parent) -> bool {
    kind_of(p).is_some_and(|kind| kind == libc::S_IFLNK || is_special(kind))
}

/// The work tree's files git opens wherever they are (`.gitignore` and `.gitattributes` in any
/// directory of a repository, `.gitmodules` and `.mailmap` at its top): a FIFO under one of
/// these names left the user's `git status` waiting for ever in its open (red team AH, 5
/// December), so none is made, renamed or linked to such a name, wherever (a repository may
/// come later).
const GIT_OPENS: [&[u8]; 4] = [b".gitignore", b".gitattributes", b".gitmodules", b".mailmap"];

/// Whether giving `p` the name of `to` makes a FIFO, socket or device one of [`GIT_OPENS`].
fn special_named_for_git(p: &Parent, to: &Parent) -> bool {
    GIT_OPENS.contains(&to.name.as_slice()) && kind_of(p).is_some_and(is_special)
}

/// The most entries [`Guard::holds_foreign`] looks at in one directory tree; a bigger tree
/// is not moved (closed).
const MAX_MOVED_ENTRIES: usize = 200_000;

struct Guard<'a> {
    guard: &'a CreationGuard,
    thread: &'a Thread,
    /// Every `.git` and worktree directory this run made, held (see [`Guard::made`]).
    made: &'a Made,
    /// The run's staged `gitdir`s.
    staging: &'a Staging,
}

impl Guard<'_> {
    /// EACCES when bringing `p` into being by `op` is refused.
    fn check(&self, p: &Parent, op: CreateOp) -> Result<(), Errno> {
        let full = real_path(p.dir.as_fd())?.join(os(&p.name));
        // A worktree entry's `commondir` or `gitdir` in a repository the run did not make comes
        // into being only through [`Guard::stage_entry_file`]: never made by another call,
        // linked or renamed there.
        if self.guarded_content(&full)
            || (op == CreateOp::Place && self.is_foreign_entry(&full))
            || self.replaces_history(&full)
        {
            return Err(Errno::EACCES);
        }
        self.check_full(p, &full, op)
    }

    /// [`Guard::check`] for `p` at `full` (its real path), without the rule on a worktree
    /// entry's `commondir`.
    fn check_full(&self, p: &Parent, full: &std::path::Path, op: CreateOp) -> Result<(), Errno> {
        let placing_denied = op == CreateOp::Place && self.guard.holds_denied(full);
        if self.guard.refuses(full, op) || self.guard.denies(full) || placing_denied {
            return Err(Errno::EACCES);
        }
        self.check_host_made(p, full)?;
        self.check_git(full, op == CreateOp::Create)
    }

    /// The parts of `full` (a real path) inside a worktree entry (`<G>/worktrees/<n>/<part>`) of a
    /// git directory `G` the run did not make: a `.git`, or a bare repository or separate git
    /// directory by its contents, outside the exempt directories; `part` is the first name
    /// below the entry. The entry itself may be the run's (`git worktree add` in the host's
    /// repository makes one), but it is the host's repository's: what its `commondir` names is
    /// where the host's git takes its config and hooks from once it works in that worktree, an
    /// entry without one is a git directory of its own if it holds `objects`, and its `gitdir`
    /// names where the host's `git worktree repair` writes a `.git` file (red teams W and X,
    /// 5 December: a `commondir` naming a directory of the workload's with a `core.fsmonitor`; a
    /// `commondir` removed and a `config` and `objects` put in the entry; a `gitdir` naming a
    /// directory outside the workspace: the host's git ran the fsmonitor, or wrote the file).
    ///
    /// Every `worktrees` on the way counts (an entry may itself be named `worktrees`); for each
    /// whose `G` is foreign, the name below its entry, or None where `full` is the entry itself.
    fn foreign_entry_parts<'p>(&self, full: &'p std::path::Path) -> Vec<Option<&'p std::ffi::OsStr>> {
        let comps: Vec<&std::ffi::OsStr> = full.iter().collect();
        let mut parts = Vec::new();
        if !comps.contains(&std::ffi::OsStr::new("worktrees")) || self.guard.is_exempt(full) {
            return parts;
        }
        for (at, _) in comps.iter().enumerate().filter(|(at, c)| **c == "worktrees" && at + 2 <= comps.len()) {
            let git: std::path::PathBuf = comps[..at].iter().collect();
            if git.parent().is_none() {
                continue;
            }
            if self.unmade_git_dir(&git) {
                parts.push(comps.get(at + 2).copied());
            }
        }
        parts
    }

    /// Whether `full` is the `commondir` or `gitdir` of a foreign worktree entry
    /// ([`Guard::foreign_entry_parts`]): written only through [`Guard::stage_entry_file`].
    fn foreign_staged(&self, full: &std::path::Path) -> bool {
        let name = full.file_name();
        let staged = name == Some(std::ffi::OsStr::new("commondir")) || name == Some(std::ffi::OsStr::new("gitdir"));
        staged && self.foreign_entry_parts(full).contains(&name)
    }

    /// EACCES when `full` would be, in a foreign worktree entry ([`Guard::foreign_entry_parts`]),
    /// an `objects` (of any type: with it and no `commondir` the entry is a git directory of
    /// its own), `hooks` (that git directory's), or a config (`config`, `config.worktree`,
    /// their lock files: the worktree's own configuration where the repository has
    /// `extensions.worktreeConfig`). `git worktree add` makes none of them.
    fn check_foreign_entry(&self, full: &std::path::Path) -> Result<(), Errno> {
        const REFUSED: [&str; 6] =
            ["objects", "hooks", "config", "config.lock", "config.worktree", "config.worktree.lock"];
        let named = full.iter().any(|c| REFUSED.iter().any(|r| c == *r));
        if named && self.foreign_entry_parts(full).iter().flatten().any(|p| REFUSED.iter().any(|r| p == r)) {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// Whether `full` is a foreign worktree entry itself ([`Guard::foreign_entry_parts`]): no
    /// directory comes there by a rename (over an empty entry of the run's, or exchanged with
    /// one), which would bring what it holds (an `objects` made elsewhere in the `.git`, where
    /// the name is free) past [`Guard::check_foreign_entry`]. git never renames an entry.
    fn is_foreign_entry(&self, full: &std::path::Path) -> bool {
        full.parent().and_then(std::path::Path::file_name) == Some(std::ffi::OsStr::new("worktrees"))
            && self.foreign_entry_parts(full).contains(&None)
    }

    /// Where `full` is the index (`index`, or a split index's `sharedindex.*`) of a git
    /// directory the run did not make (a `.git`, a worktree entry of a foreign one, a bare
    /// repository, a separate or a module's git directory), the length of that repository's
    /// object names (20, or 32 for SHA-256). Such an index comes only by a rename that
    /// [`Guard::place_index`] checks: git writes it so (`index.lock`, renamed).
    fn foreign_index(&self, full: &std::path::Path) -> Option<usize> {
        let name = full.file_name()?.as_encoded_bytes();
        if name != b"index" && !name.starts_with(b"sharedindex.") {
            return None;
        }
        let dir = full.parent()?;
        self.foreign_git_dir(dir).then(|| object_name_len(dir))
    }

    /// Whether `dir` is a git directory the run did not make (or one the host began setting
    /// up in it), outside the exempt directories: a `.git`, a bare, separate or module git
    /// directory by its contents, or a foreign worktree entry ([`Guard::foreign_entry_parts`]).
    fn foreign_git_dir(&self, dir: &std::path::Path) -> bool {
        if self.guard.is_exempt(dir) || dir.parent().is_none() {
            return false;
        }
        self.unmade_git_dir(dir) || self.foreign_entry_parts(dir).contains(&None)
    }

    /// Whether `dir` is a git directory ([`named_or_git_directory`]) the run did not make, or
    /// one another began setting up in a directory the run made ([`Guard::host_setting_up`]).
    fn unmade_git_dir(&self, dir: &std::path::Path) -> bool {
        named_or_git_directory(dir) && (!self.is_own(dir) || self.host_setting_up(dir))
    }

    /// Whether `full` is rerere's state in a foreign git directory ([`Guard::foreign_git_dir`]):
    /// its `MERGE_RR` (and lock), or its `rr-cache` or anything beneath it. git's rerere writes
    /// the resolution it recorded for each path `MERGE_RR` names into that path at the user's
    /// next `git commit` (or merge, cherry-pick, rebase, `git rerere`), with `fopen`, which
    /// follows a symlink anywhere in the work tree, and copies a file into `rr-cache`; an
    /// `rr-cache` that exists turns rerere on where the host's config does not say. Red teams
    /// (5 December) had it rewrite `.git/config` with a `core.fsmonitor`, write files outside
    /// the workspace and into protected ones through work-tree symlinks, read a file the sandbox
    /// hides, and pass a check of the paths by a variant git reads with `strtol` (a tab before
    /// it). A host repository's rerere state is the host's: the run makes, writes, moves and
    /// removes none of it (a merge of the workload's in a host repository with rerere on fails
    /// to record its conflicts).
    fn rerere_state(&self, full: &std::path::Path) -> bool {
        let merge_rr = |name: &std::ffi::OsStr| name == "MERGE_RR" || name == "MERGE_RR.lock";
        if full.file_name().is_some_and(merge_rr) && full.parent().is_some_and(|d| self.foreign_git_dir(d)) {
            return true;
        }
        full.ancestors().any(|a| {
            a.file_name() == Some(std::ffi::OsStr::new("rr-cache"))
                && a.parent().is_some_and(|g| self.foreign_git_dir(g))
        })
    }

    /// Whether `full` is, or lies beneath, the `info` or `reftable` directory of a foreign git
    /// directory ([`Guard::foreign_git_dir`]): what the host's git takes rules and refs from
    /// without showing them. `info/exclude` hid a new file from the user's `git status`,
    /// `info/attributes` can hide a change's content from `git diff` (`-diff`), and a reftable
    /// (`extensions.refStorage = reftable`) holds `refs/replace/` records as any other ref: a
    /// red team (AD, 5 December) had `git replace` make the host's `git checkout` write the
    /// workload's content under the user's commit. Nothing there is made, written or moved by
    /// the run (in a reftable repository of the host's the run updates no ref).
    ///
    /// Also its `shallow` (and lock): the commits git shows without parents, which made the
    /// workload's commits on top of the user's history show as whole new trees, their changes
    /// nowhere in `git log -p` (red team AE, 5 December). A `git fetch --depth` of the
    /// workload's in a host repository fails.
    fn hosts_only(&self, full: &std::path::Path) -> bool {
        let shallow = full.file_name().is_some_and(|n| n == "shallow" || n == "shallow.lock")
            && full.parent().is_some_and(|g| self.foreign_git_dir(g));
        shallow
            || full.ancestors().any(|a| {
                a.file_name().is_some_and(|n| n == "info" || n == "reftable")
                    && a.parent().is_some_and(|g| self.foreign_git_dir(g))
            })
    }

    /// Whether `full` is, or lies in, the state of an operation in progress that another than
    /// the run began in a foreign git directory: its `rebase-merge`, `rebase-apply` or
    /// `sequencer` directory that existed before the run or that the host made during it (one
    /// the run makes is its own: the workload's own rebase or cherry-pick works, and one it
    /// leaves in progress is continued by the user at the user's word). The user's `git rebase
    /// --continue` runs what that state says: a red team (5 December) wrote `../evil` into the
    /// `strategy` of the user's rebase stopped on a conflict, and git ran `git-merge-../evil`, a
    /// script in the work tree; its todo's `exec` lines, `rebase-apply/apply-opt` for `git am`
    /// (`--unsafe-paths`), the same. The workload may resolve the conflict's files and stage
    /// them; the user continues.
    fn in_hosts_operation(&self, full: &std::path::Path) -> bool {
        const STATE: [&str; 3] = ["rebase-merge", "rebase-apply", "sequencer"];
        full.ancestors().any(|a| {
            let named = a.file_name().is_some_and(|n| STATE.iter().any(|s| n == *s));
            named
                && a.parent().is_some_and(|g| self.foreign_git_dir(g))
                && cstr(std::os::unix::ffi::OsStrExt::as_bytes(a.as_os_str()))
                    .and_then(|c| notify::open_at(None, &c, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0))
                    .is_ok_and(|dir| !born(&dir).is_some_and(|b| self.made.borrow().run_made(&b)))
        })
    }

    /// Whether `full` is the `packed-refs` of a foreign git directory: it comes only by a
    /// rename the guard checks (no replace ref: see [`Guard::replaces_history`]).
    fn foreign_packed_refs(&self, full: &std::path::Path) -> bool {
        full.file_name() == Some(std::ffi::OsStr::new("packed-refs"))
            && full.parent().is_some_and(|d| self.foreign_git_dir(d))
    }

    /// Whether `full` is, or lies beneath, the `refs/replace` of a foreign git directory, or is
    /// its `info/grafts`: what replaces a commit with another for every git command. A red team
    /// (5 December) hid a change to a tracked file from the host's `git status`, `git diff` and
    /// `git log` with a replace ref, and the user's next `git commit -a` carried it.
    fn replaces_history(&self, full: &std::path::Path) -> bool {
        let grafts = full.file_name() == Some(std::ffi::OsStr::new("grafts"))
            && full.parent().is_some_and(|info| {
                info.file_name() == Some(std::ffi::OsStr::new("info"))
                    && info.parent().is_some_and(|g| self.foreign_git_dir(g))
            });
        grafts
            || full.ancestors().any(|a| {
                a.file_name() == Some(std::ffi::OsStr::new("replace"))
                    && a.parent().is_some_and(|refs| {
                        refs.file_name() == Some(std::ffi::OsStr::new("refs"))
                            && refs.parent().is_some_and(|g| self.foreign_git_dir(g))
                    })
            })
    }

    /// Whether a directory renamed to `full` would come to lie inside a foreign git directory
    /// ([`Guard::foreign_git_dir`]). git makes the directories of its administrative state
    /// there with `mkdir`, never by a rename; a directory built elsewhere and moved in brings
    /// its files past every check on their names (a red team, 5 December: a `sequencer`
    /// holding an `opts` with a strategy path, moved into the host's `.git`).
    fn lies_in_foreign_git_dir(&self, full: &std::path::Path) -> bool {
        full.ancestors().skip(1).any(|a| self.foreign_git_dir(a))
    }

    /// Whether `full` is written only through the guard's own paths: a foreign worktree
    /// entry's `commondir` or `gitdir` ([`Guard::stage_entry_file`]), a foreign index
    /// ([`Guard::place_index`]) or `sequencer/opts` ([`Guard::place_sequencer_opts`]). No other call makes, links, replaces or writes it, and no
    /// second name is made for it.
    fn guarded_content(&self, full: &std::path::Path) -> bool {
        self.foreign_staged(full)
            || self.foreign_index(full).is_some()
            || self.foreign_sequencer_opts(full)
            || self.foreign_packed_refs(full)
    }

    /// Whether `full` is the `sequencer/opts` of a git directory the run did not make (or of a
    /// foreign worktree entry): a file in git's config format, with no checks at all, that
    /// `git cherry-pick --continue` and `git revert --continue` read; its `strategy` names the
    /// program git runs as `git-merge-<strategy>`, and a name with a slash is a path (a red
    /// team, 5 December: `x/../.git/info/evil` ran a script of the workload's on the host).
    fn foreign_sequencer_opts(&self, full: &std::path::Path) -> bool {
        let Some(sequencer) = full.parent() else { return false };
        let Some(git) = sequencer.parent() else { return false };
        full.file_name() == Some(std::ffi::OsStr::new("opts"))
            && sequencer.file_name() == Some(std::ffi::OsStr::new("sequencer"))
            && self.foreign_git_dir(git)
    }

    /// A rename of `o` onto a foreign index `n` ([`Guard::foreign_index`]; `hash`: the length
    /// of its repository's object names): every entry of the index must be named as git
    /// itself would let it into one ([`index::check`]).
    ///
    /// What comes under the name is [`index::sanitize`]d against the index it replaces: no
    /// entry the run changed keeps stat data that would let git take the file for unchanged
    /// without reading it, nor an "assume unchanged" or "skip worktree" mark the host had not
    /// set, and no cache tree, untracked cache or fsmonitor record of the run's comes along.
    fn place_index(&self, o: &Parent, n: &Parent, hash: usize) -> Result<(), Errno> {
        // Entries whose files changed within the second they were read are kept, and checked
        // again once it is over (`entry_verdict`), unless the run is over: nothing would check
        // them then (a process left behind after a one-shot run's first ended).
        let deferred = self.staging.begin_placing();
        let placed = self.place_index_with(o, n, hash, deferred);
        if deferred {
            let (placed, racy) = match placed {
                Ok(racy) => (Ok(()), racy),
                Err(e) => (Err(e), None),
            };
            self.staging.end_placing(racy);
            return placed;
        }
        placed.map(|_| ())
    }

    /// [`Guard::place_index`]'s work: the index placed, and its entries to check again where
    /// `deferred` (else the second is waited out before an entry is kept).
    fn place_index_with(
        &self,
        o: &Parent,
        n: &Parent,
        hash: usize,
        deferred: bool,
    ) -> Result<Option<RacyIndex>, Errno> {
        let old = notify::open_at(
            Some(n.dir.as_fd()),
            &cstr(&n.name)?,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
            0,
        )
        .ok()
        .map(std::fs::File::from)
        .and_then(|mut f| {
            // With its mtime: the second its racily clean entries are told by ([`index::sanitize`]).
            let m = f.metadata().ok().filter(|m| m.is_file() && m.len() <= MAX_INDEX.unsigned_abs())?;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "git keeps the low 32 bits")]
            let mtime = std::os::unix::fs::MetadataExt::mtime(&m) as u32;
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut data).ok().map(|_| (data, mtime))
        });
        // The work tree, opened once: an entry the run changed is kept where the file there
        // has its stat data and content (`entry_verdict`), and nothing the guard denies is read.
        let git = real_path(n.dir.as_fd())?;
        let tree = work_tree_of(&git).and_then(|t| {
            let path = cstr(std::os::unix::ffi::OsStrExt::as_bytes(t.as_os_str())).ok()?;
            notify::open_at(None, &path, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0).ok()
        });
        let top = tree.as_ref().and_then(|t| real_path(t.as_fd()).ok());
        // Taken before anything is placed: a kept entry is always checked again.
        let git = if deferred { Some(n.dir.try_clone().map_err(|_| Errno::EIO)?) } else { None };
        let mut racy = Vec::new();
        let ending = &self.staging.0.ending;
        let mut honest = |name: &[u8], mode: u32, stat: &[u8], oid: &[u8]| match (&tree, &top) {
            (Some(t), Some(top)) if !ending.load(std::sync::atomic::Ordering::SeqCst) => entry_verdict(
                self.guard,
                (t.as_fd(), top),
                (name, mode, stat, oid),
                deferred.then_some(&mut racy),
                ending,
            ),
            _ => index::Verdict::Smudge,
        };
        self.place_checked(o, n, MAX_INDEX, &mut |data| {
            index::sanitize(&data, old.as_ref().map(|(d, m)| (d.as_slice(), *m)), hash, &mut honest)
        })?;
        Ok(match (racy.is_empty(), git) {
            (false, Some(git)) => {
                let mode = |st: Result<libc::stat, Errno>| st.map_or(0o700, |st| st.st_mode & 0o700);
                let placed = nix::sys::stat::fstatat(
                    Some(git.as_raw_fd()),
                    cstr(&n.name)?.as_c_str(),
                    AtFlags::AT_SYMLINK_NOFOLLOW,
                );
                let modes = (mode(nix::sys::stat::fstat(git.as_raw_fd())), mode(placed) & 0o600);
                Some(RacyIndex { git, name: n.name.clone(), hash, entries: racy, modes })
            }
            _ => None,
        })
    }

    /// A rename of `o` onto a foreign `sequencer/opts` ([`Guard::foreign_sequencer_opts`]): no
    /// slash or backslash anywhere in it (a strategy is a name on git's path, never a path;
    /// a value cannot hide one from this: git's escapes make no slash).
    fn place_sequencer_opts(&self, o: &Parent, n: &Parent) -> Result<(), Errno> {
        self.place_checked(o, n, MAX_OPTS, &mut |data| {
            if data.iter().any(|b| *b == b'/' || *b == b'\\') { Err("a slash in sequencer/opts") } else { Ok(data) }
        })
    }

    /// A rename of `o` onto a foreign `packed-refs` ([`Guard::foreign_packed_refs`]): no replace
    /// ref in it ([`Guard::replaces_history`]).
    fn place_packed_refs(&self, o: &Parent, n: &Parent) -> Result<(), Errno> {
        self.place_checked(o, n, MAX_INDEX, &mut |data| {
            if data.split(|b| *b == b'\n').any(|l| l.windows(13).any(|w| w == b"refs/replace/")) {
                Err("a replace ref in packed-refs")
            } else {
                Ok(data)
            }
        })
    }

    /// A rename of `o` onto `n`, a name written only through the guard ([`Guard::guarded_content`]):
    /// `o` (a regular file of at most `max` bytes) must pass `valid`, and what comes under the
    /// name is a copy of what `valid` returns that the guard writes (with `o`'s mode and times),
    /// so that a descriptor the workload kept of `o` writes nothing there. `o` goes, as with
    /// any rename.
    fn place_checked(
        &self,
        o: &Parent,
        n: &Parent,
        max: i64,
        valid: &mut dyn FnMut(Vec<u8>) -> Result<Vec<u8>, index::Refusal>,
    ) -> Result<(), Errno> {
        let to = real_path(n.dir.as_fd())?.join(os(&n.name));
        self.check_full(n, &to, CreateOp::Place)?;
        self.check_content(o)?;
        let source = open_source(o)?;
        let st = nix::sys::stat::fstat(source.as_raw_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_size > max {
            return Err(Errno::EACCES);
        }
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(source), &mut data).map_err(|_| Errno::EIO)?;
        let data = match valid(data) {
            Ok(data) => data,
            Err(why) => {
                tracing::debug!(file = %to.display(), why, "refused a rename");
                return Err(Errno::EACCES);
            }
        };
        put_copy(n, &st, false, &mut |file| std::io::Write::write_all(file, &data).map_err(|_| Errno::EIO))?;
        nix::unistd::unlinkat(
            Some(o.dir.as_raw_fd()),
            o.kernel_name()?.as_c_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        )
    }

    /// EACCES when a loose object may not come to `to` (`n`'s real path) whatever its content:
    /// what [`Guard::check_full`] asks of any new name but the store's own rule.
    fn check_loose_target(&self, n: &Parent, to: &std::path::Path) -> Result<(), Errno> {
        if self.guard.refuses(to, CreateOp::Place) || self.guard.denies(to) || self.guard.holds_denied(to) {
            return Err(Errno::EACCES);
        }
        self.check_host_made(n, to)?;
        self.check_foreign_entry(to)?;
        if self.rerere_state(to) || self.in_hosts_operation(to) || self.replaces_history(to) {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// Where `full` (a real path) lies in an object store of a foreign git directory `G`
    /// ([`Guard::foreign_git_dir`], the deepest such): git's (`<G>/objects/...`, its object
    /// names' length read from the repository) or Git LFS's (`<G>/lfs/objects/...`), and what
    /// it is there ([`object::classify`]).
    fn in_foreign_store(&self, full: &std::path::Path) -> Option<(StorePath, Store)> {
        use std::os::unix::ffi::OsStrExt as _;
        if !full.iter().any(|c| c == "objects") || self.guard.is_exempt(full) {
            return None;
        }
        let (dir, store) = full.ancestors().skip(1).find_map(|a| {
            if a.file_name() != Some(std::ffi::OsStr::new("objects")) {
                return None;
            }
            let parent = a.parent()?;
            if self.foreign_git_dir(parent) {
                return Some((a, Store::Git(object_name_len(parent))));
            }
            let lfs = parent.file_name() == Some(std::ffi::OsStr::new("lfs"))
                && parent.parent().is_some_and(|g| self.foreign_git_dir(g));
            lfs.then_some((a, Store::Lfs))
        })?;
        let rel: Vec<&[u8]> = full.strip_prefix(dir).ok()?.iter().map(|c| c.as_bytes()).collect();
        Some((object::classify(&rel, store), store))
    }

    /// A loose object brought under its name `n` (at `to`, [`StorePath::Loose`]) in a foreign
    /// object store, from `source` (opened for reading): checked as `git index-pack` would
    /// ([`object::copy_loose`]: its content hashes to its name; in Git LFS's store the file's
    /// SHA-256, [`object::copy_lfs`]) while it is copied, and the
    /// copy is what comes under the name (with `source`'s mode and times), so that a descriptor
    /// the workload kept of the source writes nothing there. `noreplace`: an existing name
    /// answers EEXIST (a link; git's own way, which takes EEXIST for "already there").
    fn place_object(
        &self,
        source: OwnedFd,
        n: &Parent,
        to: &std::path::Path,
        store: Store,
        noreplace: bool,
    ) -> Result<(), Errno> {
        use std::os::unix::ffi::OsStrExt as _;
        let st = nix::sys::stat::fstat(source.as_raw_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(Errno::EACCES);
        }
        if noreplace
            && nix::sys::stat::fstatat(Some(n.dir.as_raw_fd()), cstr(&n.name)?.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                .is_ok()
        {
            return Err(Errno::EEXIST);
        }
        let dir = to.parent().and_then(std::path::Path::file_name).ok_or(Errno::EACCES)?;
        let name = [dir.as_bytes(), &n.name].concat();
        let mut source = std::fs::File::from(source);
        let mut refused = None;
        let placed = put_copy(n, &st, noreplace, &mut |file| {
            let copied = match store {
                Store::Git(hash) => object::copy_loose(&mut source, file, &name, hash),
                Store::Lfs => object::copy_lfs(&mut source, file, &n.name),
            };
            match copied {
                Ok(()) => Ok(()),
                Err(object::Failure::Io) => Err(Errno::EIO),
                Err(object::Failure::Refused(why)) => {
                    refused = Some(why);
                    Err(Errno::EACCES)
                }
            }
        });
        if let Some(why) = refused {
            tracing::debug!(file = %to.display(), why, "refused an object");
        }
        placed
    }

    /// An open for writing (or creating) of the `commondir` or `gitdir` of a foreign worktree
    /// entry ([`Guard::foreign_staged`]). The caller's writes go to a file of its own with no
    /// name in the same directory, which is dropped when the caller closes it; an open that
    /// does not write gets the file itself.
    /// - `commondir` holds what git writes there, `../..` (the repository that holds the
    ///   entry), made here if it is not there yet: no other common directory can be named.
    /// - `gitdir` gets what the caller wrote once it names a `.git` in a directory the run may
    ///   write, outside the exempt directories ([`Staging::publish`], at the run's next call the guard
    ///   serves and at its end): the host's `git worktree repair` writes a `.git` file there.
    ///
    /// `git worktree add`, `move` and `repair` work as before.
    fn stage_entry_file(&self, p: &Parent, full: &std::path::Path, flags: i32, mode: u32) -> Result<Outcome, Errno> {
        let creating = flags & libc::O_CREAT != 0;
        if creating {
            self.check_full(p, full, CreateOp::Create)?;
        } else {
            self.check_content(p)?;
        }
        // An entry the run made is its own as its first git file would make it (see
        // `made_git_file`, which a `commondir` made here comes too late for: the entry is then a
        // git directory by its contents).
        if let Some(b) = born(&p.dir) {
            let mut made = self.made.borrow_mut();
            if made.run_made(&b) {
                if let Ok(fd) = p.dir.try_clone() {
                    made.make_own(b, fd);
                }
            }
        }
        let cloexec = flags & libc::O_CLOEXEC != 0;
        let commondir = p.name == b"commondir";
        let name = cstr(&p.name)?;
        let exists =
            match nix::sys::stat::fstatat(Some(p.dir.as_raw_fd()), name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(_) if creating && flags & libc::O_EXCL != 0 => return Err(Errno::EEXIST),
                Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG => true,
                Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => return Err(Errno::EISDIR),
                Ok(_) => return Err(Errno::EACCES),
                Err(Errno::ENOENT) if creating => false,
                Err(e) => return Err(e),
            };
        if !exists && commondir {
            self.check_completes_git_directory(p, || Ok(false))?;
            self.caller_umask()?;
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            let file = notify::open_at(Some(p.dir.as_fd()), &name, flags, mode & 0o7777)?;
            self.made(p);
            if let Err(e) = nix::unistd::write(&file, b"../..\n") {
                drop(file);
                let _ = nix::unistd::unlinkat(
                    Some(p.dir.as_raw_fd()),
                    name.as_c_str(),
                    nix::unistd::UnlinkatFlags::NoRemoveDir,
                );
                return Err(e);
            }
        }
        let access = flags & libc::O_ACCMODE;
        if access == libc::O_RDONLY {
            let fd =
                notify::open_at(Some(p.dir.as_fd()), &name, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0)?;
            return Ok(Outcome::Answer(Answer::Fd(fd, cloexec)));
        }
        let own = libc::O_TMPFILE | access | (flags & libc::O_APPEND) | libc::O_CLOEXEC;
        let fd = notify::open_at(Some(p.dir.as_fd()), c".", own, 0o600)?;
        if !commondir {
            // A handle of the guard's own that reads what the caller writes (the caller's may
            // not read).
            let via = cstr(format!("/proc/self/fd/{}", fd.as_raw_fd()).as_bytes())?;
            let file = notify::open_at(None, &via, libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
            let staged = Staged { entry: p.dir.try_clone().map_err(|_| Errno::EMFILE)?, file, published: None };
            self.staging.push(self.guard, staged);
        }
        Ok(Outcome::Answer(Answer::Fd(fd, cloexec)))
    }

    /// EACCES when `full` is a file git takes commands or locations from, or a `.git`
    /// ([`CreationGuard::git_sensitive`]), in a `.git` this run did not make: one the host made
    /// during the run (a clone, `git init`, a worktree, a submodule's gitfile), which the spawn's
    /// scan could not know. A `.git` that does not exist yet may be made (where a repository may
    /// come into being at all, see `refuses`); the run's own repositories work as before.
    ///
    /// Outside a `.git`, the same files of a bare repository or separate git directory the run
    /// did not make ([`CreationGuard::bare_candidates`], [`is_git_directory`]).
    fn check_git(&self, full: &std::path::Path, new: bool) -> Result<(), Errno> {
        self.check_foreign_entry(full)?;
        // In a foreign object store only temporaries are made or written by a call of the
        // workload's own; a loose object comes by a checked rename or link (`place_object`).
        if self.in_foreign_store(full).is_some_and(|(part, _)| part != StorePath::Free) || self.hosts_only(full) {
            return Err(Errno::EACCES);
        }
        if self.rerere_state(full) || self.in_hosts_operation(full) {
            return Err(Errno::EACCES);
        }
        let made = |p: &std::path::Path| self.is_own(p);
        let bare_name = full.file_name() == Some(std::ffi::OsStr::new("HEAD")) && !full.iter().any(|c| c == ".git");
        if bare_name && self.beneath_foreign_work_tree(full) {
            return Err(Errno::EACCES);
        }
        let Some((git, part)) = self.guard.git_sensitive(full) else {
            let foreign = self
                .guard
                .bare_candidates(full)
                .iter()
                .any(|d| self.host_setting_up(d) || (!made(d) && is_git_directory(d)));
            return if foreign { Err(Errno::EACCES) } else { Ok(()) };
        };
        if part == GitPart::Itself {
            return match nix::sys::stat::lstat(&git) {
                Ok(_) if made(&git) => Ok(()),
                // A new `.git`, where the host's git would not take it for a repository nested
                // in one of its own (see `beneath_foreign_work_tree`).
                Err(Errno::ENOENT) if !self.beneath_foreign_work_tree(&git) => Ok(()),
                _ => Err(Errno::EACCES),
            };
        }
        // A new worktree directory may be made (`git worktree add`); one that exists is the
        // run's own only if the run made it.
        if part == GitPart::Entry && new && nix::sys::stat::lstat(full) == Err(Errno::ENOENT) {
            return Ok(());
        }
        // The run's own: its `.git`, or a worktree directory the run made (`git worktree add`
        // in an existing repository). No other directory counts: a `modules` or `worktrees`
        // the run made in the host's `.git` does not make what the host puts there its own (a
        // red team, 5 December).
        let worktree = full.strip_prefix(git.join("worktrees")).ok().and_then(|r| r.iter().next());
        // A `.git` the run made in which another began setting a repository up (the host's
        // `git init` of a path the run prepared: its `HEAD`, `objects`, templates) is no longer
        // the run's to configure.
        let own = (made(&git) && !self.host_setting_up(&git))
            || worktree.is_some_and(|n| made(&git.join("worktrees").join(n)))
            || self.in_own_entry(full);
        if own { Ok(()) } else { Err(Errno::EACCES) }
    }

    /// Whether `full` lies in a worktree entry the run made (`<G>/worktrees/<n>`, `G` a git
    /// directory: a module's too, `.git/modules/<m>/worktrees/<n>`, where a red team's `git
    /// worktree add` in a host submodule failed). What such an entry of a repository the run
    /// did not make may hold is narrowed by [`Guard::check_foreign_entry`] and
    /// [`Guard::stage_entry_file`].
    fn in_own_entry(&self, full: &std::path::Path) -> bool {
        full.ancestors().skip(1).any(|entry| {
            let Some(worktrees) = entry.parent() else { return false };
            let Some(git) = worktrees.parent() else { return false };
            worktrees.file_name() == Some(std::ffi::OsStr::new("worktrees"))
                && named_or_git_directory(git)
                && self.is_own(entry)
        })
    }

    /// Whether a directory above `path` holds a `.git` this run did not make: a work tree the
    /// host made during the run (the spawn's scan knows the ones that existed then: see
    /// `CreationGuard::no_new_repositories`), where a new `.git` or a bare `HEAD` is a
    /// repository nested in the host's, which its git enters.
    fn beneath_foreign_work_tree(&self, path: &std::path::Path) -> bool {
        path.ancestors().skip(1).any(|dir| {
            let git = dir.join(".git");
            git != path && nix::sys::stat::lstat(&git).is_ok() && !self.is_own(&git)
        })
    }

    /// Whether `path` (not followed) is a git directory, `.git` or worktree directory this run
    /// made (see [`Guard::made`]).
    fn is_own(&self, path: &std::path::Path) -> bool {
        use std::os::unix::ffi::OsStrExt as _;
        let Ok(path) = cstr(path.as_os_str().as_bytes()) else { return false };
        notify::open_at(None, &path, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0)
            .is_ok_and(|fd| self.owns(&fd))
    }

    /// Whether the object `fd` refers to is one of [`Owned::own`].
    fn owns(&self, fd: &OwnedFd) -> bool {
        identity(fd).is_some_and(|(b, _)| self.made.borrow().own.contains_key(&b))
    }

    /// Records `p`, a directory this run just made, in [`Owned::dirs`]; its identity.
    fn made_dir(&self, p: &Parent) -> Option<Born> {
        let name = cstr(&p.name).ok()?;
        let fd = notify::open_at(
            Some(p.dir.as_fd()),
            &name,
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC,
            0,
        )
        .ok()?;
        // Also in the exempt directories: one made there and moved into the workspace (the
        // same filesystem) stays the run's.
        let b = born(&fd)?;
        self.made.borrow_mut().made_by_run(b);
        Some(b)
    }

    /// Whether `dir` was made during the run, by the host: born since the run began, and not
    /// by the run. False where the filesystem keeps no birth time.
    fn host_made(&self, dir: &OwnedFd) -> bool {
        born(dir).is_some_and(|b| self.made.borrow().host_born(&b))
    }

    /// EACCES when `p` would bring a part of a git directory into being (a `.git`, `HEAD`, a
    /// config or `commondir` …, `hooks`, `worktrees`, `modules`, or anything in a `hooks`) in a
    /// directory the host made during the run. While the host's git sets up a git directory
    /// (copying its templates, then writing its config, then `HEAD`), it is none by its
    /// contents, and what the workload put there meanwhile became the host's: a config with a
    /// `core.fsmonitor` that `git init --separate-git-dir` kept, a `pre-receive` in the
    /// template's `hooks` of `git init --bare` (a red team, 5 December, won the race 5 times
    /// in 6), a `.git` made first in the directory of the host's `git init`.
    fn check_host_made(&self, p: &Parent, full: &std::path::Path) -> Result<(), Errno> {
        const PARTS: [&str; 5] = [".git", "HEAD", "hooks", "worktrees", "modules"];
        let in_hooks = full.parent().and_then(std::path::Path::file_name) == Some(std::ffi::OsStr::new("hooks"));
        let part = in_hooks || PARTS.iter().chain(&GIT_FILES).any(|n| p.name == n.as_bytes());
        if part && !self.guard.is_exempt(full) && self.host_made(&p.dir) {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// Records `p`, just made by this run, when it is a `.git` or a worktree directory (see
    /// [`Guard::check_git`]) in [`Owned::own`]: by identity, birth and generation, and for the
    /// first [`MAX_HELD`] with a handle, since an inode number names the same object only while
    /// it is held (a red team, 5 December: directories made and removed in a loop gave their
    /// numbers to the `.git` the host made next). A run that made 256 repositories could make
    /// no more (a functional check, 5 December: 300 `git init`s in a test loop).
    ///
    /// Only what the run made itself counts, never what it moved: a rename of the host's bare
    /// repository onto a worktree name in a `.git` of the run's made it the run's own (a red
    /// team, 5 December); see [`Guard::made_git_file`].
    fn made(&self, p: &Parent) {
        self.made_mark(p);
        let full = match real_path(p.dir.as_fd()) {
            Ok(dir) => dir.join(os(&p.name)),
            Err(_) => return,
        };
        if self.made_git_file(p, &full) {
            return;
        }
        let entry = self.guard.git_sensitive(&full).is_some_and(|(_, part)| part == GitPart::Entry)
            || self.foreign_entry_parts(&full).contains(&None);
        if p.name != b".git" && !entry {
            return;
        }
        let Ok(name) = cstr(&p.name) else { return };
        let Ok(fd) = notify::open_at(Some(p.dir.as_fd()), &name, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0)
        else {
            return;
        };
        if let Some((b, _)) = identity(&fd) {
            self.made.borrow_mut().make_own(b, fd);
        }
    }

    /// Records `p`, a directory just made (`born`: its identity), with [`Staging::began`] when
    /// it is an operation's state (`rebase-merge`, `rebase-apply`, `sequencer`) in a foreign git
    /// directory. One that cannot be recorded is removed again (EACCES): it would not be checked.
    fn began_operation(&self, p: &Parent, born: Option<Born>) -> Result<(), Errno> {
        const STATE: [&[u8]; 3] = [b"rebase-merge", b"rebase-apply", b"sequencer"];
        if !STATE.contains(&p.name.as_slice()) || !real_path(p.dir.as_fd()).is_ok_and(|d| self.foreign_git_dir(&d)) {
            return Ok(());
        }
        let name = cstr(&p.name)?;
        let recorded =
            p.dir.try_clone().ok().zip(born).and_then(|(git, born)| {
                self.staging.began(Operation { git, name: p.name.clone(), born }).then_some(())
            });
        if recorded.is_none() {
            let _ =
                nix::unistd::unlinkat(Some(p.dir.as_raw_fd()), name.as_c_str(), nix::unistd::UnlinkatFlags::RemoveDir);
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// Records `p` in [`Owned::dirs`] when it is an entry of git's set-up ([`SETUP_MARKS`], or
    /// the lock file git writes one through: `HEAD.lock`, renamed to `HEAD`) that the run just
    /// made or moved there: [`Guard::host_setting_up`] then knows it for the run's. A `.git`
    /// the run made, in which the host's `git init` then set a repository up, was the run's to
    /// configure (a red team, 5 December).
    fn made_mark(&self, p: &Parent) {
        let stem = p.name.strip_suffix(b".lock").unwrap_or(&p.name);
        if !SETUP_MARKS.iter().any(|m| m.as_bytes() == stem || m.as_bytes() == p.name.as_slice()) {
            return;
        }
        let Ok(object) = open_path(p.dir.as_fd(), &p.name, libc::O_NOFOLLOW) else { return };
        if let Some(b) = born(&object) {
            self.made.borrow_mut().made_by_run(b);
        }
    }

    /// A part of a git directory (a `HEAD`, a config: [`GIT_FILES`], [`SETUP_MARKS`]) made or
    /// moved by the run into a directory it made (outside any `.git`) makes that directory a
    /// git directory of the run's own (its `git init --bare`, which writes its templates, then
    /// its config, then its `HEAD`), while it is no git directory yet. Whether `p` names such a
    /// part.
    ///
    /// Only the first part counts: a directory the run made in which another made one first
    /// (the host's `git clone --bare` into an empty directory the run made) is not the run's,
    /// whatever the run makes there next.
    fn made_git_file(&self, p: &Parent, full: &std::path::Path) -> bool {
        let git_file = SETUP_MARKS.iter().chain(&GIT_FILES).any(|f| p.name == f.as_bytes());
        if !git_file || full.iter().any(|c| c == ".git") {
            return false;
        }
        let Some(dir) = full.parent() else { return true };
        if self.is_own(dir) || is_git_directory(dir) {
            return true;
        }
        let others = SETUP_MARKS
            .iter()
            .chain(&["config"])
            .any(|m| m.as_bytes() != p.name.as_slice() && nix::sys::stat::lstat(&dir.join(m)).is_ok());
        if others {
            return true;
        }
        let Some(b) = born(&p.dir) else { return true };
        if self.made.borrow().run_made(&b) {
            if let Ok(fd) = p.dir.try_clone() {
                self.made.borrow_mut().make_own(b, fd);
            }
        }
        true
    }

    /// Whether a git directory is being set up in `dir` by another than this run: an entry git's
    /// set-up makes ([`SETUP_MARKS`]) was born there during the run and not made by the run as
    /// a directory. Until its config and `HEAD` exist it is no git directory by its contents,
    /// and a config the workload made in the meantime was kept and merged by the host's `git
    /// clone --bare` or `git init --separate-git-dir` into a directory that existed, or that the
    /// run had made empty (a red team, 5 December, won 10 times in 13).
    fn host_setting_up(&self, dir: &std::path::Path) -> bool {
        SETUP_MARKS.iter().any(|m| {
            let Ok(path) = cstr(std::os::unix::ffi::OsStrExt::as_bytes(dir.join(m).as_os_str())) else { return false };
            let Ok(fd) = notify::open_at(None, &path, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0) else {
                return false;
            };
            born(&fd).is_some_and(|b| self.made.borrow().host_born(&b))
        })
    }

    /// EACCES when the content of `p` is protected ([`CreationGuard::protects`]): a protected
    /// file is not opened for writing, truncated, linked or renamed elsewhere.
    fn check_content(&self, p: &Parent) -> Result<(), Errno> {
        let full = real_path(p.dir.as_fd())?.join(os(&p.name));
        if self.guard.protects(&full) || self.guard.denies(&full) {
            return Err(Errno::EACCES);
        }
        self.check_git(&full, false)
    }

    /// [`Self::check_content`] for an object already resolved (through a magic link or an
    /// `AT_EMPTY_PATH` descriptor).
    fn check_object(&self, object: BorrowedFd<'_>) -> Result<(), Errno> {
        let path = real_path(object)?;
        if self.guard.protects(&path) || self.guard.denies(&path) || self.guarded_content(&path) {
            return Err(Errno::EACCES);
        }
        self.check_git(&path, false)
    }

    /// `truncate(path, length)`: the path is resolved here, following symlinks as the kernel
    /// does; a protected file is refused, anything else truncated through its handle.
    fn truncate(&self, path: &[u8], length: u64) -> Result<(), Errno> {
        let length = i64::try_from(length).map_err(|_| Errno::EINVAL)?;
        let object = Resolver::new(self.thread).object(libc::AT_FDCWD, path, true)?;
        if nix::sys::stat::fstat(object.as_raw_fd())?.st_mode & libc::S_IFMT == libc::S_IFDIR {
            return Err(Errno::EISDIR);
        }
        self.check_object(object.as_fd())?;
        let via = cstr(format!("/proc/self/fd/{}", object.as_raw_fd()).as_bytes())?;
        nix::unistd::truncate(via.as_c_str(), length)
    }

    /// A change of a file's times ([`Call::Utime`]): the file is resolved here as the kernel
    /// would (the descriptor itself where `path` is null, or empty with `AT_EMPTY_PATH`), a
    /// foreign index ([`Guard::foreign_index`]) is refused, and anything else is given its
    /// times through the guard's handle, the times copied from the caller as the kernel reads
    /// them. git never sets its index's times; a workload that did made the entries the host
    /// had left racily clean look clean (red team AR, 5 December: a tracked file rewritten in
    /// place in the second of the host's `git clone`, its mtime set back, and the index
    /// touched a second later, was shown to no `git status`, `git diff` or `git commit -a`).
    fn utime(
        &self,
        listener: BorrowedFd<'_>,
        req: &libc::seccomp_notif,
        (dirfd, path): (i32, u64),
        (times, form): (u64, TimeForm),
        flags: i32,
    ) -> Result<(), Errno> {
        let known = libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH;
        if flags & !known != 0 || (form != TimeForm::Spec && flags != 0) {
            return Err(Errno::EINVAL);
        }
        let mem = open_mem(self.thread)?;
        let times = read_times(mem.as_fd(), times, form)?;
        let path = if path == 0 { None } else { Some(read_string(mem.as_fd(), path)?) };
        drop(mem);
        let object = match path {
            // The descriptor itself: null is `futimens`, which takes no flag; `utimes` has no
            // descriptor to name (the kernel reads the null name: EFAULT).
            None if form == TimeForm::Spec && flags != 0 => return Err(Errno::EINVAL),
            None if dirfd == libc::AT_FDCWD => return Err(Errno::EFAULT),
            None => self.caller_descriptor(dirfd)?,
            // `AT_EMPTY_PATH`: the descriptor, or the caller's cwd for `AT_FDCWD`.
            Some(p) if p.is_empty() && flags & libc::AT_EMPTY_PATH != 0 => Resolver::new(self.thread).base(dirfd)?,
            Some(p) => Resolver::new(self.thread).object(dirfd, &p, flags & libc::AT_SYMLINK_NOFOLLOW == 0)?,
        };
        // What was read belongs to the thread still waiting in this call.
        if !notify::id_valid(listener, req.id) {
            return Err(Errno::ESRCH);
        }
        if self.foreign_index(&real_path(object.as_fd())?).is_some() {
            return Err(Errno::EACCES);
        }
        // Null times are both now (the same rule for who may set them).
        let [a, m] = times.unwrap_or([(0, libc::UTIME_NOW); 2]);
        let spec = |(sec, nsec): (i64, i64)| nix::sys::time::TimeSpec::new(sec, nsec);
        // Through the handle's link: the object itself (a symlink too), never what a name
        // would now lead to.
        let via = cstr(format!("/proc/self/fd/{}", object.as_raw_fd()).as_bytes())?;
        nix::sys::stat::utimensat(
            None,
            via.as_c_str(),
            &spec(a),
            &spec(m),
            nix::sys::stat::UtimensatFlags::FollowSymlink,
        )
    }

    /// The caller's descriptor `fd`, as a handle of its own (through the pinned thread's
    /// `fd/<n>`): EBADF where it is not open, or is an `O_PATH` one (the kernel's `futimens`
    /// needs a real open file; `AT_EMPTY_PATH`, which takes either, goes by [`Resolver::base`]).
    fn caller_descriptor(&self, fd: i32) -> Result<OwnedFd, Errno> {
        if fd < 0 {
            return Err(Errno::EBADF);
        }
        let (object, flags) = caller_fd(self.thread, fd)?.ok_or(Errno::EBADF)?;
        let flags = flags.ok_or(Errno::EBADF)?;
        if flags & libc::O_PATH != 0 {
            return Err(Errno::EBADF);
        }
        Ok(object)
    }

    /// An open that neither creates nor writes (sent only when the spawn has denied roots): the
    /// object is resolved here as the kernel would, refused when it is or lies beneath a denied
    /// root, and opened again through its handle with the caller's flags.
    fn open_read(&self, dirfd: i32, path: &[u8], flags: i32) -> Result<Outcome, Errno> {
        let cloexec = flags & libc::O_CLOEXEC != 0;
        let nofollow = flags & libc::O_NOFOLLOW != 0;
        let object = Resolver::new(self.thread).object(dirfd, path, !nofollow)?;
        let st = nix::sys::stat::fstat(object.as_raw_fd())?;
        let kind = st.st_mode & libc::S_IFMT;
        if kind == libc::S_IFLNK {
            return Err(Errno::ELOOP);
        }
        if is_dev_tty(&st) {
            return self.caller_tty(flags | libc::O_CLOEXEC, cloexec);
        }
        // Protected files are readable: only a denied root is refused here.
        if self.guard.denies(&real_path(object.as_fd())?) {
            return Err(Errno::EACCES);
        }
        reopen(object, kind, (flags & !libc::O_NOFOLLOW) | libc::O_NOCTTY | libc::O_CLOEXEC, cloexec)
    }

    /// `/dev/tty` means the caller's controlling terminal, which the guard's process does not
    /// share: the caller's own descriptor of that terminal is opened again (through
    /// `/proc/<tid>/fd`), with the caller's flags; ENXIO when it has none, as the kernel answers.
    fn caller_tty(&self, flags: i32, cloexec: bool) -> Result<Outcome, Errno> {
        let stat = notify::open_at(Some(self.thread.proc_dir.as_fd()), c"stat", libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(stat), &mut text).map_err(|_| Errno::EIO)?;
        // After the command's `)`: state, ppid, pgrp, session, tty_nr.
        let tty: u64 = text
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(4))
            .and_then(|t| t.parse().ok())
            .ok_or(Errno::EIO)?;
        if tty == 0 {
            return Err(Errno::ENXIO);
        }
        let (major, minor) = ((tty >> 8) & 0xfff, (tty & 0xff) | ((tty >> 12) & 0xf_ff00));
        let fd_dir = notify::open_at(
            Some(self.thread.proc_dir.as_fd()),
            c"fd",
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            0,
        )?;
        let names: Vec<std::ffi::CString> = std::fs::read_dir(format!("/proc/self/fd/{}", fd_dir.as_raw_fd()))
            .map_err(|_| Errno::EIO)?
            .flatten()
            .filter_map(|e| {
                std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(e.file_name().as_os_str())).ok()
            })
            .collect();
        for name in names {
            let Ok(st) = nix::sys::stat::fstatat(Some(fd_dir.as_raw_fd()), name.as_c_str(), AtFlags::empty()) else {
                continue;
            };
            if st.st_mode & libc::S_IFMT == libc::S_IFCHR
                && u64::from(libc::major(st.st_rdev)) == major
                && u64::from(libc::minor(st.st_rdev)) == minor
            {
                let fd = notify::open_at(Some(fd_dir.as_fd()), &name, flags & !(libc::O_CREAT | libc::O_NOFOLLOW), 0)?;
                return Ok(Outcome::Answer(Answer::Fd(fd, cloexec)));
            }
        }
        Err(Errno::ENXIO)
    }

    /// Sets this thread's umask to the caller's, for the creating call that follows (the
    /// guard's thread has filesystem attributes of its own: see [`serve`]).
    fn caller_umask(&self) -> Result<(), Errno> {
        let mask = resolve::umask_of(self.thread)?;
        nix::sys::stat::umask(Mode::from_bits_truncate(mask as libc::mode_t));
        Ok(())
    }

    fn mkdir(&self, dirfd: i32, path: &[u8], mode: u32) -> Result<(), Errno> {
        let p = Resolver::new(self.thread).parent(dirfd, path)?;
        new_name(&p)?;
        self.check(&p, CreateOp::Create)?;
        self.check_completes_git_directory(&p, || Ok(false))?;
        self.caller_umask()?;
        let mode = Mode::from_bits_truncate((mode & 0o7777) as libc::mode_t);
        nix::sys::stat::mkdirat(Some(p.dir.as_raw_fd()), cstr(&p.name)?.as_c_str(), mode)?;
        self.made(&p);
        let born = self.made_dir(&p);
        self.began_operation(&p, born)
    }

    fn mknod(&self, dirfd: i32, path: &[u8], mode: u32, dev: u64) -> Result<(), Errno> {
        let p = Resolver::new(self.thread).parent(dirfd, path)?;
        new_name(&p)?;
        self.check(&p, CreateOp::Create)?;
        // No FIFO, socket or device in a git directory ([`is_special`]), nor under a name git
        // opens in a work tree ([`GIT_OPENS`]).
        if is_special(mode as libc::mode_t) {
            let full = real_path(p.dir.as_fd())?.join(os(&p.name));
            if GIT_OPENS.contains(&p.name.as_slice())
                || self.guard.in_git_dir(&full)
                || self.beneath_git_directory(&full)
            {
                return Err(Errno::EACCES);
            }
        }
        self.check_completes_git_directory(&p, || Ok(false))?;
        self.caller_umask()?;
        let kind = SFlag::from_bits_truncate(mode as libc::mode_t & libc::S_IFMT);
        let perm = Mode::from_bits_truncate((mode & 0o7777) as libc::mode_t);
        nix::sys::stat::mknodat(Some(p.dir.as_raw_fd()), p.kernel_name()?.as_c_str(), kind, perm, dev)?;
        self.made(&p);
        Ok(())
    }

    fn symlink(&self, target: &[u8], dirfd: i32, path: &[u8]) -> Result<(), Errno> {
        let p = Resolver::new(self.thread).parent(dirfd, path)?;
        new_name(&p)?;
        self.check(&p, CreateOp::Place)?;
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        let full = real_path(p.dir.as_fd())?.join(os(&p.name));
        // No symlink is named `.git` outside the exempt directories: the host's `git worktree
        // repair` writes a worktree's `.git` through one, wherever it leads (a red team, 5
        // December: a shell start-up file got `gitdir: …;<command>;#`).
        if p.name == b".git" && !self.guard.is_exempt(&full) {
            return Err(Errno::EACCES);
        }
        // git's own test of symlink support (`tXXXXXX -> testing` in the git directory, removed
        // at once: see `CreationGuard::refuses_link`) is let through here as there.
        let test = is_git_symlink_test(&p.name, target);
        if self.guard.refuses_link(&full, target) || (!test && self.beneath_git_directory(&full)) {
            return Err(Errno::EACCES);
        }
        self.check_completes_git_directory(&p, || Ok(true))?;
        nix::unistd::symlinkat(cstr(target)?.as_c_str(), Some(p.dir.as_raw_fd()), p.kernel_name()?.as_c_str())?;
        self.made(&p);
        Ok(())
    }

    fn link(&self, olddirfd: i32, old: &[u8], newdirfd: i32, new: &[u8], flags: i32) -> Result<(), Errno> {
        if flags & !(libc::AT_SYMLINK_FOLLOW | libc::AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let p = Resolver::new(self.thread).parent(newdirfd, new)?;
        new_name(&p)?;
        // git's way to a loose object (`tmp_obj_*` linked to its name, EEXIST taken for "already
        // there"): in a foreign object store, checked and copied.
        if p.name.len() > 30 {
            let to = real_path(p.dir.as_fd())?.join(os(&p.name));
            if let Some((StorePath::Loose, store)) = self.in_foreign_store(&to) {
                self.check_loose_target(&p, &to)?;
                let mut r = Resolver::new(self.thread);
                let object = if old.is_empty() {
                    if flags & libc::AT_EMPTY_PATH == 0 {
                        return Err(Errno::ENOENT);
                    }
                    r.base(olddirfd)?
                } else {
                    r.object(olddirfd, old, flags & libc::AT_SYMLINK_FOLLOW != 0)?
                };
                self.check_object(object.as_fd())?;
                if nix::sys::stat::fstat(object.as_raw_fd())?.st_mode & libc::S_IFMT != libc::S_IFREG {
                    return Err(Errno::EACCES);
                }
                let via = cstr(format!("/proc/self/fd/{}", object.as_raw_fd()).as_bytes())?;
                let source = notify::open_at(None, &via, libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
                return self.place_object(source, &p, &to, store, true);
            }
        }
        self.check(&p, CreateOp::Place)?;
        let newname = p.kernel_name()?;
        // A second name for a symlink inside a `.git` is a symlink there (see
        // `CreationGuard::in_git_dir`), whichever way the symlink is named: by its path, or as
        // an `O_PATH` descriptor (`AT_EMPTY_PATH`, or `/proc/self/fd/N` followed: a red team,
        // 5 December).
        let full = real_path(p.dir.as_fd())?.join(os(&p.name));
        let into_git = self.guard.in_git_dir(&full)
            || self.beneath_git_directory(&full)
            || (p.name == b".git" && !self.guard.is_exempt(&full));
        let mut r = Resolver::new(self.thread);
        let object = if old.is_empty() {
            if flags & libc::AT_EMPTY_PATH == 0 {
                return Err(Errno::ENOENT);
            }
            r.base(olddirfd)?
        } else if flags & libc::AT_SYMLINK_FOLLOW != 0 {
            r.object(olddirfd, old, true)?
        } else {
            let o = r.parent(olddirfd, old)?;
            // A second name for a protected file would be a writable one; so would one for a
            // worktree entry's `commondir` or `gitdir`, or a foreign index (`guarded_content`).
            self.check_content(&o)?;
            if self.guarded_content(&real_path(o.dir.as_fd())?.join(os(&o.name))) {
                return Err(Errno::EACCES);
            }
            if (into_git && is_symlink_or_special(&o)) || special_named_for_git(&o, &p) {
                return Err(Errno::EACCES);
            }
            self.check_completes_git_directory(&p, || Ok(is_symlink(&o)))?;
            nix::unistd::linkat(
                Some(o.dir.as_raw_fd()),
                o.kernel_name()?.as_c_str(),
                Some(p.dir.as_raw_fd()),
                newname.as_c_str(),
                AtFlags::empty(),
            )?;
            self.made_mark(&p);
            return Ok(());
        };
        self.check_object(object.as_fd())?;
        let kind = nix::sys::stat::fstat(object.as_raw_fd()).map(|st| st.st_mode & libc::S_IFMT);
        let object_is_link = kind.is_ok_and(|k| k == libc::S_IFLNK);
        let special = kind.is_ok_and(is_special);
        if (into_git && (object_is_link || special)) || (special && GIT_OPENS.contains(&p.name.as_slice())) {
            return Err(Errno::EACCES);
        }
        self.check_completes_git_directory(&p, || Ok(object_is_link))?;
        let via = cstr(format!("/proc/self/fd/{}", object.as_raw_fd()).as_bytes())?;
        nix::unistd::linkat(
            None,
            via.as_c_str(),
            Some(p.dir.as_raw_fd()),
            newname.as_c_str(),
            AtFlags::AT_SYMLINK_FOLLOW,
        )?;
        self.made_mark(&p);
        // A file named by its descriptor (`O_TMPFILE`'s way, whose open the guard never sees)
        // may be open for reading and writing: noted as such an open is.
        if kind.is_ok_and(|k| k == libc::S_IFREG) {
            self.note_writable(object.as_fd(), p.dir.as_fd(), &p.name)?;
        }
        Ok(())
    }

    /// [`Staging::note_writable`], except in the sandbox's private directories (`/tmp`,
    /// `/dev/shm`, the executor's HOME and TMPDIR, [`CreationGuard::is_exempt`]): nothing there
    /// is the host's, and a test suite's temporary files (`mkstemp` opens for reading and
    /// writing) in hundreds of directories would pass the bound.
    fn note_writable(&self, fd: BorrowedFd<'_>, dir: BorrowedFd<'_>, name: &[u8]) -> Result<(), Errno> {
        let regular = nix::sys::stat::fstat(fd.as_raw_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG);
        if !regular || !maps_without_times(fd) {
            return Ok(());
        }
        if self.guard.is_exempt(&real_path(dir)?.join(os(name))) {
            return Ok(());
        }
        self.staging.note_writable(fd, dir, name)
    }

    fn rename(&self, olddirfd: i32, old: &[u8], newdirfd: i32, new: &[u8], flags: u32) -> Result<(), Errno> {
        let r = self.rename_inner(olddirfd, old, newdirfd, new, flags);
        // A directory may have moved, and with it what deep_path remembers.
        resolve::forget_deep_path();
        r
    }

    fn rename_inner(&self, olddirfd: i32, old: &[u8], newdirfd: i32, new: &[u8], flags: u32) -> Result<(), Errno> {
        let flags = nix::fcntl::RenameFlags::from_bits(flags).ok_or(Errno::EINVAL)?;
        // A whiteout is a device node the guard would make at the old name.
        if flags.contains(nix::fcntl::RenameFlags::RENAME_WHITEOUT) {
            return Err(Errno::EPERM);
        }
        let n = Resolver::new(self.thread).parent(newdirfd, new)?;
        let o = Resolver::new(self.thread).parent(olddirfd, old)?;
        if is_dot(&n.name) || is_dot(&o.name) {
            return Err(Errno::EBUSY);
        }
        let exchange = flags.contains(nix::fcntl::RenameFlags::RENAME_EXCHANGE);
        // No symlink is named `.git` (see `symlink`), by either side of an exchange.
        if (n.name == b".git" && is_symlink(&o)) || (exchange && o.name == b".git" && is_symlink(&n)) {
            return Err(Errno::EACCES);
        }
        // What `place_checked` does replaces the name: with RENAME_NOREPLACE, an existing one
        // answers as the kernel would.
        if flags.contains(nix::fcntl::RenameFlags::RENAME_NOREPLACE)
            && nix::sys::stat::fstatat(Some(n.dir.as_raw_fd()), cstr(&n.name)?.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                .is_ok()
        {
            return Err(Errno::EEXIST);
        }
        // A loose object renamed to its name in a foreign object store (git's `tmp_obj_*`):
        // checked and copied (an exchange with one is refused by `check`).
        if !exchange && n.name.len() > 30 {
            let to = real_path(n.dir.as_fd())?.join(os(&n.name));
            if let Some((StorePath::Loose, store)) = self.in_foreign_store(&to) {
                self.check_loose_target(&n, &to)?;
                self.check_content(&o)?;
                self.place_object(open_source(&o)?, &n, &to, store, false)?;
                return nix::unistd::unlinkat(
                    Some(o.dir.as_raw_fd()),
                    o.kernel_name()?.as_c_str(),
                    nix::unistd::UnlinkatFlags::NoRemoveDir,
                );
            }
        }
        // git's `index.lock` renamed to a foreign index: checked and copied (an exchange with
        // one is refused by `check`).
        if !exchange && (n.name == b"index" || n.name.starts_with(b"sharedindex.")) {
            let to = real_path(n.dir.as_fd())?.join(os(&n.name));
            if let Some(hash) = self.foreign_index(&to) {
                return self.place_index(&o, &n, hash);
            }
        }
        if !exchange && (n.name == b"opts" || n.name == b"packed-refs") {
            let to = real_path(n.dir.as_fd())?.join(os(&n.name));
            if self.foreign_sequencer_opts(&to) {
                return self.place_sequencer_opts(&o, &n);
            }
            if self.foreign_packed_refs(&to) {
                return self.place_packed_refs(&o, &n);
            }
        }
        // No directory comes into a foreign git directory by a rename, by either side of an
        // exchange (`lies_in_foreign_git_dir`).
        let is_dir = |p: &Parent| {
            cstr(&p.name).is_ok_and(|name| {
                nix::sys::stat::fstatat(Some(p.dir.as_raw_fd()), name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
            })
        };
        let dir_into = |moved: &Parent, to: &Parent| -> Result<bool, Errno> {
            Ok(is_dir(moved) && self.lies_in_foreign_git_dir(&real_path(to.dir.as_fd())?.join(os(&to.name))))
        };
        if dir_into(&o, &n)? || (exchange && dir_into(&n, &o)?) {
            return Err(Errno::EACCES);
        }
        self.check(&n, CreateOp::Place)?;
        // A protected file moved elsewhere would be writable there; a denied root (or a
        // directory holding one) readable.
        self.check_content(&o)?;
        // No symlink comes to lie inside a `.git` (see `CreationGuard::in_git_dir`), by either
        // side of an exchange: neither a symlink moved there nor one inside a directory moved
        // there or renamed to `.git` (a red team, 5 December, renamed a directory holding
        // `COMMIT_EDITMSG -> <a host file>` to `.git`; the host's `git commit` wrote the file).
        if self.brings_symlink(&o, &n)? || (exchange && self.brings_symlink(&n, &o)?) {
            return Err(Errno::EACCES);
        }
        if special_named_for_git(&o, &n) || (exchange && special_named_for_git(&n, &o)) {
            return Err(Errno::EACCES);
        }
        // Nor does a directory become a git directory by the name a rename brings while a
        // symlink lies in it or in what comes.
        self.check_completes_git_directory(&n, || self.holds_symlink(&o))?;
        if exchange {
            self.check_completes_git_directory(&o, || self.holds_symlink(&n))?;
        }
        // Nor does a git directory the run did not make, or a directory the host made during
        // the run, move with a directory above it, nor is one replaced by the new name (an
        // empty directory: the host's `git clone` between its `mkdir` and its `.git`) or
        // exchanged.
        self.holds_foreign(&o)?;
        self.holds_foreign(&n)?;
        let from = real_path(o.dir.as_fd())?.join(os(&o.name));
        if self.guard.holds_denied(&from) {
            return Err(Errno::EACCES);
        }
        if flags.contains(nix::fcntl::RenameFlags::RENAME_EXCHANGE) {
            self.check(&o, CreateOp::Place)?;
        }
        // What the new name replaces is removed with the call.
        let victim = (!flags
            .intersects(nix::fcntl::RenameFlags::RENAME_EXCHANGE | nix::fcntl::RenameFlags::RENAME_NOREPLACE))
        .then(|| open_path(n.dir.as_fd(), &n.name, libc::O_NOFOLLOW).ok())
        .flatten()
        .filter(|v| {
            n.name == b".git"
                || nix::sys::stat::fstat(v.as_raw_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
        });
        let gone = victim.as_ref().and_then(identity).map(|(b, _)| b);
        nix::fcntl::renameat2(
            Some(o.dir.as_raw_fd()),
            o.kernel_name()?.as_c_str(),
            Some(n.dir.as_raw_fd()),
            n.kernel_name()?.as_c_str(),
            flags,
        )?;
        self.freed(victim, gone);
        self.made_mark(&n);
        if let Ok(dir) = real_path(n.dir.as_fd()) {
            self.made_git_file(&n, &dir.join(os(&n.name)));
        }
        Ok(())
    }

    /// `unlink(at)`/`rmdir`: a protected entry, a denied root (or a directory holding one), and
    /// what git takes commands or locations from in a git directory the run did not make (the
    /// `.git` itself, a worktree directory, `worktrees`) are not removed. The host's worktree
    /// made during the run, emptied and removed, was made again as the run's own, with a
    /// `commondir` of its choosing (a red team, 5 December); a protected file the host created
    /// during the run is no mount point the kernel would keep. `.` and `..` go to the kernel,
    /// which removes neither.
    fn unlink(&self, dirfd: i32, path: &[u8], flags: i32) -> Result<(), Errno> {
        if flags & !libc::AT_REMOVEDIR != 0 {
            return Err(Errno::EINVAL);
        }
        let p = Resolver::new(self.thread).parent(dirfd, path)?;
        let mut victim = None;
        if !is_dot(&p.name) {
            self.check_content(&p)?;
            if self.guard.holds_denied(&real_path(p.dir.as_fd())?.join(os(&p.name))) {
                return Err(Errno::EACCES);
            }
            // Nor is a directory the host made during the run removed (its name then free for
            // one of the run's, while the host's git sets it up).
            if let Ok(object) = open_path(p.dir.as_fd(), &p.name, libc::O_NOFOLLOW) {
                let dir = nix::sys::stat::fstat(object.as_raw_fd())
                    .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
                if flags & libc::AT_REMOVEDIR != 0
                    && dir
                    && self.host_made(&object)
                    && !self.guard.is_exempt(&real_path(object.as_fd())?)
                {
                    return Err(Errno::EACCES);
                }
                // What the run may have recorded: its directories, and `.git` files (see
                // `Owned::own`).
                victim = (dir || p.name == b".git").then_some(object);
            }
        }
        let how = if flags & libc::AT_REMOVEDIR != 0 {
            nix::unistd::UnlinkatFlags::RemoveDir
        } else {
            nix::unistd::UnlinkatFlags::NoRemoveDir
        };
        let gone = victim.as_ref().and_then(identity).map(|(b, _)| b);
        nix::unistd::unlinkat(Some(p.dir.as_raw_fd()), p.kernel_name()?.as_c_str(), how)?;
        self.freed(victim, gone);
        Ok(())
    }

    /// Records ([`Owned::removed`]) the object `victim` (identity `gone`, read before the call
    /// that removed or replaced it) once it is gone: no name links it any more. An object
    /// another thread swapped in under the name meanwhile is still linked: not recorded.
    fn freed(&self, victim: Option<OwnedFd>, gone: Option<Born>) {
        let (Some(victim), Some(gone)) = (victim, gone) else { return };
        if nix::sys::stat::fstat(victim.as_raw_fd()).is_ok_and(|st| st.st_nlink == 0) {
            self.made.borrow_mut().removed(&gone);
        }
    }

    /// Whether renaming `moved` to the name of `to` brings a symlink (or a FIFO, socket or
    /// device: [`is_special`]) into a git directory: a `.git`'s inside, or beneath a git
    /// directory by its contents ([`Guard::beneath_git_directory`]). A regular file (git's lock
    /// files, most renames) brings none, and is asked nothing more.
    fn brings_symlink(&self, moved: &Parent, to: &Parent) -> Result<bool, Errno> {
        let kind = nix::sys::stat::fstatat(
            Some(moved.dir.as_raw_fd()),
            cstr(&moved.name)?.as_c_str(),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map(|st| st.st_mode & libc::S_IFMT);
        match kind {
            Ok(libc::S_IFLNK | libc::S_IFDIR) => {}
            Ok(k) if is_special(k) => {}
            // Nothing there: the kernel answers. A name the guard cannot look at is asked on.
            Ok(_) | Err(Errno::ENOENT) => return Ok(false),
            Err(_) => {}
        }
        let full = real_path(to.dir.as_fd())?.join(os(&to.name));
        let into_git = self.guard.in_git_dir(&full.join("x")) || self.beneath_git_directory(&full);
        Ok(into_git && self.holds_symlink(moved)?)
    }

    /// Whether `p` is a symlink (or a FIFO, socket or device: [`is_special`]) or a directory
    /// holding one at any depth (symlinks not followed).
    /// A tree of more than [`MAX_MOVED_ENTRIES`] entries, or with a directory the guard cannot
    /// read, counts as holding one (closed).
    fn holds_symlink(&self, p: &Parent) -> Result<bool, Errno> {
        if is_symlink_or_special(p) {
            return Ok(true);
        }
        let name = cstr(&p.name)?;
        let open = |dir: Option<BorrowedFd<'_>>, name: &std::ffi::CStr| {
            notify::open_at(dir, name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0)
        };
        let top = match open(Some(p.dir.as_fd()), &name) {
            Ok(top) => top,
            // Not a directory, or nothing (the kernel answers).
            Err(Errno::ENOTDIR | Errno::ENOENT) => return Ok(false),
            Err(_) => return Ok(true),
        };
        tree_holds_symlink(top)
    }

    /// Whether an object at `full` would lie inside a git directory that is no `.git` and
    /// none's child: a bare repository, a separate git directory, a linked worktree's
    /// (`r.git/worktrees/wt`), the host's or the run's; an ancestor is one by its contents
    /// ([`is_git_directory`]), outside the exempt directories. The host's git writes through a
    /// symlink there as in a `.git` (a red team, 5 December: `r.git/worktrees/wt/COMMIT_EDITMSG
    /// -> ../../config`, and the host's next commit replaced the config with its message).
    ///
    /// By git's own measure, looser than [`is_git_directory`]'s: `HEAD`, `objects` and `refs`
    /// of any type (git asks only that it may search them: an executable file named `objects`,
    /// or a symlink, will do until it writes an object; `COMMIT_EDITMSG` comes first).
    fn beneath_git_directory(&self, full: &std::path::Path) -> bool {
        let git_like = |a: &std::path::Path| {
            ["HEAD", "objects", "refs"].iter().all(|m| nix::sys::stat::lstat(&a.join(m)).is_ok()) || is_git_directory(a)
        };
        full.ancestors().skip(1).take_while(|a| a.parent().is_some()).any(|a| !self.guard.is_exempt(a) && git_like(a))
    }

    /// EACCES when `p`, about to be made (its object a symlink or holding one: `symlink`, asked
    /// only when it matters), would make
    /// its directory a git directory by its contents (`HEAD`, `objects` and `refs` all there,
    /// or a `commondir`) while a symlink lies anywhere in it: a directory `evil` with
    /// `COMMIT_EDITMSG -> <a host file>`, then made a repository's git directory (a `.git` file
    /// `gitdir: evil`), had the host's `git commit` write the file (a red team, 5 December). In
    /// a `.git` no symlink comes to lie anyway.
    fn check_completes_git_directory(
        &self,
        p: &Parent,
        symlink: impl FnOnce() -> Result<bool, Errno>,
    ) -> Result<(), Errno> {
        const DEFINING: [&str; 3] = ["HEAD", "objects", "refs"];
        let name = p.name.as_slice();
        let trio = DEFINING.iter().any(|d| d.as_bytes() == name);
        if !trio && name != b"commondir" {
            return Ok(());
        }
        // Already there (git's `HEAD.lock` renamed over `HEAD`): the directory was one before.
        if nix::sys::stat::fstatat(Some(p.dir.as_raw_fd()), cstr(name)?.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
            .is_ok()
        {
            return Ok(());
        }
        let dir = real_path(p.dir.as_fd())?;
        if self.guard.in_git_dir(&dir.join(os(&p.name))) || self.guard.is_exempt(&dir) {
            return Ok(());
        }
        let others = |m: &&str| m.as_bytes() == name || nix::sys::stat::lstat(&dir.join(m)).is_ok();
        if trio && !DEFINING.iter().all(others) {
            return Ok(());
        }
        let here = notify::open_at(Some(p.dir.as_fd()), c".", libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)
            .map_err(|_| Errno::EACCES)?;
        if symlink()? || tree_holds_symlink(here)? {
            return Err(Errno::EACCES);
        }
        Ok(())
    }
}

impl Staged {
    /// Puts what the workload wrote under the name `gitdir` in the entry, where it changed since
    /// and [`gitdir_allowed`] says so.
    fn publish(&mut self, guard: &CreationGuard) {
        let mut text = vec![0u8; PATH_MAX + 1];
        let Ok(n) = nix::sys::uio::pread(&self.file, &mut text, 0) else { return };
        text.truncate(n);
        if n > PATH_MAX || self.published.as_ref() == Some(&text) || !gitdir_allowed(guard, self.entry.as_fd(), &text) {
            return;
        }
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let Ok(file) = notify::open_at(Some(self.entry.as_fd()), c"gitdir", flags, 0o644) else { return };
        if nix::unistd::write(&file, &text).is_ok_and(|w| w == text.len()) {
            self.published = Some(text);
        }
    }
}

/// Whether `text`, written to the `gitdir` of a worktree entry, names a `.git` in a directory
/// the run may write (as the kernel answers the guard, which has the workload's credentials
/// and mounts: a read-only bind of the host is not), by its canonical absolute path (no `.`,
/// `..` or symlink on the way: git 2.47 takes a relative one from its own working directory,
/// not from the entry, and a red team's `../../../../tmp/x/.git` had the host's `git worktree
/// repair` write outside the workspace), outside the exempt directories (the private `/tmp`
/// and HOME are other places on the host) and the sandbox's own `/dev`, `/proc`, `/sys` and
/// `/run`; and that `.git` is there already, a file naming `entry` back (git writes it first).
/// A `.git` in a directory keeps the directory where it is for the runs after (a directory
/// holding a `.git` they did not make is neither removed, renamed nor replaced): without one, a
/// later run swapped the directory for a symlink to elsewhere, and the host's `git worktree
/// repair` wrote a `.git` there (a red team, 5 December).
fn gitdir_allowed(guard: &CreationGuard, entry: BorrowedFd<'_>, text: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(text));
    if text.is_empty() || text.contains(&0) || text.contains(&b'\n') || !path.is_absolute() {
        return false;
    }
    if path.file_name() != Some(std::ffi::OsStr::new(".git")) {
        return false;
    }
    let Some(dir) = path.parent() else { return false };
    let plain = dir.components().all(|c| matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_)));
    let private = ["/dev", "/proc", "/sys", "/run"].iter().any(|p| dir.starts_with(p));
    if !plain || private || dir.as_os_str().as_bytes().ends_with(b"/") || dir == std::path::Path::new("/") {
        return false;
    }
    let Ok(name) = cstr(dir.as_os_str().as_bytes()) else { return false };
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    let Ok(opened) = notify::open_at(None, &name, flags, 0) else { return false };
    let Ok(real) = real_path(opened.as_fd()) else { return false };
    let Ok(via) = cstr(format!("/proc/self/fd/{}", opened.as_raw_fd()).as_bytes()) else { return false };
    let names_back = || {
        // Not waiting on a FIFO named `.git`: only a regular file is read.
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        let Ok(file) = notify::open_at(Some(opened.as_fd()), c".git", flags, 0) else { return false };
        if !nix::sys::stat::fstat(file.as_raw_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG) {
            return false;
        }
        let mut back = Vec::new();
        let read = std::io::Read::read_to_end(&mut std::io::Read::take(std::fs::File::from(file), 4096), &mut back);
        let entry = real_path(entry).map(|e| format!("gitdir: {}", e.display()));
        read.is_ok() && entry.is_ok_and(|e| back.trim_ascii_end() == e.as_bytes())
    };
    real == dir
        && !guard.is_exempt(&real.join(".git"))
        && nix::unistd::access(via.as_c_str(), nix::unistd::AccessFlags::W_OK).is_ok()
        && names_back()
}

/// Whether `dir` is a `.git` by its name, or a git directory by its contents
/// ([`is_git_directory`]: a bare, separate, module git directory or worktree entry).
fn named_or_git_directory(dir: &std::path::Path) -> bool {
    dir.file_name() == Some(std::ffi::OsStr::new(".git")) || is_git_directory(dir)
}

/// The largest index [`Guard::place_index`] reads, 512 MiB (a repository of a few million
/// files; a larger one is refused: closed).
const MAX_INDEX: i64 = 1 << 29;

/// The longest the run's end waits for an index being placed or checked ([`Staging::recheck`]):
/// below the helper's 3 s grace for the whole end.
const END_WAIT: std::time::Duration = std::time::Duration::from_millis(1000);

/// The largest `sequencer/opts` [`Guard::place_sequencer_opts`] reads (git's holds a few lines).
const MAX_OPTS: i64 = 1 << 16;

/// The length of the object names of the repository whose git directory is `dir`: 32 where
/// its common directory's config says `objectFormat = sha256`, else 20.
///
/// Every file the guard reads by a name the workload may have chosen is read with
/// [`read_small`]: a regular file of a filesystem that stores files, its first MiB, never
/// blocking. Red team AU (5 December) had a `commondir` name a directory whose `config` was a
/// FIFO (the guard's thread waited for ever, and every guarded call of the run with it) or a
/// 1 GiB file (the init grew to 2.7 GB), and a worktree entry's `gitdir` a FIFO, which stalled
/// an index's placing and with it the run's end: none of its checks ran.
fn object_name_len(dir: &std::path::Path) -> usize {
    let common = read_small(&dir.join("commondir"))
        .map(|c| dir.join(String::from_utf8_lossy(&c).trim_end_matches('\n')))
        .unwrap_or_else(|| dir.to_path_buf());
    let config = read_small(&common.join("config")).unwrap_or_default();
    let text = String::from_utf8_lossy(&config).to_ascii_lowercase();
    let sha256 = text.lines().any(|l| {
        let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
        l.starts_with("objectformat=") && l.contains("sha256")
    });
    if sha256 { 32 } else { 20 }
}

/// The work tree of the git directory `git` (a real path), as git finds it from there: a
/// `core.worktree` in its config (a module's, relative to it), the directory holding a `.git`,
/// or the one a worktree entry's `gitdir` names the `.git` of. None for a bare repository or a
/// separate git directory (whose work tree git finds from the work tree's side): its index
/// keeps no entry the run changed unsmudged.
fn work_tree_of(git: &std::path::Path) -> Option<std::path::PathBuf> {
    // Read as [`object_name_len`] reads.
    let config = read_small(&git.join("config")).map(|c| String::from_utf8_lossy(&c).into_owned()).unwrap_or_default();
    let mut in_core = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line.to_ascii_lowercase().starts_with("[core]");
        } else if in_core {
            if let Some((key, value)) = line.split_once('=') {
                if key.trim().eq_ignore_ascii_case("worktree") {
                    return std::fs::canonicalize(git.join(value.trim())).ok();
                }
            }
        }
    }
    if git.file_name() == Some(std::ffi::OsStr::new(".git")) {
        return git.parent().map(std::path::Path::to_path_buf);
    }
    if git.parent().and_then(std::path::Path::file_name) == Some(std::ffi::OsStr::new("worktrees")) {
        let named = String::from_utf8(read_small(&git.join("gitdir"))?).ok()?;
        let dot_git = std::path::PathBuf::from(named.trim_end_matches('\n'));
        return dot_git.is_absolute().then(|| dot_git.parent().map(std::path::Path::to_path_buf)).flatten();
    }
    None
}

/// The file of the index entry `name` (mode `mode`) beneath the work tree `tree` (open, and its
/// real path `top`): beneath it by the way it was reached (a symlink on the way may lead
/// anywhere, `/proc/<pid>/fd/N` to a descriptor) and not denied to the run; its `O_PATH`
/// handle, and for a regular file a handle open for reading whose dirty pages are written out,
/// so that a write through a shared mapping made before is a new change with a new ctime, not
/// a silent one (red team AE, 5 December: a page kept dirty took later writes without any time
/// changing).
fn entry_file(
    guard: &CreationGuard,
    (tree, top): (BorrowedFd<'_>, &std::path::Path),
    name: &[u8],
    mode: u32,
) -> Option<(OwnedFd, Option<std::fs::File>)> {
    let name = cstr(name).ok()?;
    let object = notify::open_at(Some(tree), &name, libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0).ok()?;
    let at = real_path(object.as_fd()).ok()?;
    if !at.starts_with(top) || guard.denies(&at) {
        return None;
    }
    if mode & 0o170_000 == 0o120_000 {
        return Some((object, None));
    }
    let via = cstr(format!("/proc/self/fd/{}", object.as_raw_fd()).as_bytes()).ok()?;
    let file =
        std::fs::File::from(notify::open_at(None, &via, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC, 0).ok()?);
    crate::sys::write_out(file.as_fd()).ok()?;
    Some((object, Some(file)))
}

/// The stat data of the file `handle` (a symlink's where `link`) where they are, as git
/// records them, the entry's `stat` (its 40 bytes; nanoseconds compared where recorded).
fn stat_matching(handle: RawFd, link: bool, stat: &[u8]) -> Option<libc::stat> {
    let field = |i: usize| u32::from_be_bytes([stat[4 * i], stat[4 * i + 1], stat[4 * i + 2], stat[4 * i + 3]]);
    let st = nix::sys::stat::fstat(handle).ok()?;
    let kind = st.st_mode & libc::S_IFMT;
    if kind != if link { libc::S_IFLNK } else { libc::S_IFREG } {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "git keeps the low 32 bits")]
    let now = [
        st.st_ctime as u32,
        st.st_ctime_nsec as u32,
        st.st_mtime as u32,
        st.st_mtime_nsec as u32,
        st.st_dev as u32,
        st.st_ino as u32,
        0,
        st.st_uid,
        st.st_gid,
        st.st_size as u32,
    ];
    (0..10).all(|i| i == 6 || field(i) == now[i] || ((i == 1 || i == 3) && field(i) == 0)).then_some(st)
}

/// The time since the epoch.
fn now() -> std::time::Duration {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default()
}

/// Whether the second `second` is over for file times: no change made from now on is dated in
/// it. The kernel dates a change by its coarse clock (`CLOCK_REALTIME_COARSE`, advanced at
/// each tick; a finer time only where that one is not past the file's last), which lags the
/// clock a process reads by up to a tick or more: with the finer clock past the second and the
/// coarse one not, a change was still dated in it (red team AG, 5 December: an entry checked
/// again in that window, then its file rewritten, stayed hidden). So the coarse clock decides.
fn second_over(second: u64) -> bool {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME_COARSE)
        .is_ok_and(|t| u64::try_from(t.tv_sec()).is_ok_and(|s| s > second))
}

/// What becomes of an index entry the run changed ([`index::Verdict`]): kept only where the file
/// `name` ([`entry_file`]) has the entry's stat data `stat` (as git records them: the
/// nanoseconds where recorded) and mode `mode`, and a content whose blob's name is `oid`.
///
/// git compares whole seconds, so a second change within the second the file last changed
/// (its status, ctime, which no call sets at will), its mtime set back, would leave every field
/// git looks at as it was (red team AE, 5 December). Such an entry is kept now and added to
/// `racy` (with its second), and checked again once that second is over
/// ([`RacyIndex::recheck`]): smudged then if its file changed since. Where nothing will check
/// it again (`racy` is `None`: the run is over), the second is waited out here. Once `ending`
/// is set (the run's end has begun, and waits for this index), no more of the file is read:
/// the entry is smudged. (Until 5 December the
/// guard waited out the second here, up to a second per index write; smudging at once instead
/// has git take the file for changed where it does not refresh first: a `git cherry-pick` right
/// after a commit failed with "Your local changes would be overwritten".)
fn entry_verdict(
    guard: &CreationGuard,
    (tree, top): (BorrowedFd<'_>, &std::path::Path),
    entry: (&[u8], u32, &[u8], &[u8]),
    racy: Option<&mut Vec<Racy>>,
    ending: &std::sync::atomic::AtomicBool,
) -> index::Verdict {
    use index::Verdict::{Keep, Smudge};
    let (name, mode, stat, oid) = entry;
    let link = mode & 0o170_000 == 0o120_000;
    let Some((object, file)) = entry_file(guard, (tree, top), name, mode) else { return Smudge };
    let handle = file.as_ref().map_or(object.as_raw_fd(), AsRawFd::as_raw_fd);
    let Some(st) = stat_matching(handle, link, stat) else { return Smudge };
    // The blob's header, then its content: the link's target, or the file read in pieces (a
    // large file is never held whole).
    let mut hasher = object::Hasher::new(oid.len());
    let mut feed = |data: &[u8]| hasher.update(data);
    // (`file` stays open until the last `stat_matching`: `handle` is its number.)
    match &file {
        None => {
            let Ok(target) = nix::fcntl::readlinkat(Some(object.as_raw_fd()), "") else { return Smudge };
            let target = std::os::unix::ffi::OsStringExt::into_vec(target);
            feed(format!("blob {}\0", target.len()).as_bytes());
            feed(&target);
        }
        Some(file) => {
            let mut file: &std::fs::File = file;
            feed(format!("blob {}\0", st.st_size).as_bytes());
            let mut buf = vec![0u8; 64 * 1024];
            let mut read: i64 = 0;
            loop {
                // The run's end has begun: what is not read yet is not kept.
                if ending.load(std::sync::atomic::Ordering::Relaxed) {
                    return Smudge;
                }
                match std::io::Read::read(&mut file, &mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        feed(&buf[..n]);
                        read = read.saturating_add(i64::try_from(n).unwrap_or(i64::MAX));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return Smudge,
                }
            }
            // Changed while it was read: not the size hashed in the header.
            if read != st.st_size {
                return Smudge;
            }
        }
    }
    let digest = hasher.finish();
    // Unchanged while it was read (a change then has a new ctime, in this second or later).
    let after = stat_matching(handle, link, stat);
    let same = after.is_some_and(|a| (a.st_ctime, a.st_ctime_nsec) == (st.st_ctime, st.st_ctime_nsec));
    if digest != oid || !same {
        return Smudge;
    }
    let second = u64::try_from(st.st_ctime).unwrap_or(u64::MAX);
    if second_over(second) {
        return Keep;
    }
    match racy {
        // The file held open (`object`): the checks again look at this file, wherever it is
        // moved and whatever is done to the directories on its way (red team AJ, 5 December:
        // its directory made unreadable at the end, the file was not given a new ctime).
        Some(racy) if racy.len() < MAX_RACY_ENTRIES => racy.push(Racy {
            name: name.to_vec(),
            mode,
            record: [stat, oid].concat(),
            second,
            ctime: (st.st_ctime, st.st_ctime_nsec),
            file: object,
        }),
        // Nothing checks it again (or as many are held as may be): the second is waited out
        // here (a second at most), and the file must be as it was read.
        _ => {
            wait_out(second);
            let again = stat_matching(handle, link, stat);
            if !second_over(second)
                || again.is_none_or(|a| (a.st_ctime, a.st_ctime_nsec) != (st.st_ctime, st.st_ctime_nsec))
            {
                return Smudge;
            }
        }
    }
    Keep
}

/// Waits until the second `second` is over ([`second_over`]), where it is the current one or
/// the next: until the finer clock is past it, then for the coarse one (at most 200 ms more).
fn wait_out(second: u64) {
    let now = now();
    if second_over(second) || second > now.as_secs() + 1 {
        return;
    }
    let over = std::time::Duration::from_secs(second.saturating_add(1));
    std::thread::sleep(over.saturating_sub(now) + std::time::Duration::from_millis(2));
    for _ in 0..200 {
        if second_over(second) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// What [`RacyIndex::smudged`] found.
enum Smudged {
    /// The index's stat and its content with entries smudged.
    Index(libc::stat, Vec<u8>),
    /// Nothing to smudge (none of the entries there as kept, or no index).
    Nothing,
    /// The index could not be read.
    Unread,
}

/// An index entry [`entry_verdict`] kept although its file last changed within the second it
/// was read: its name, mode, record (stat data and object name), that second, and the file's
/// ctime as read (to the nanosecond, which the record may lack).
struct Racy {
    name: Vec<u8>,
    mode: u32,
    record: Vec<u8>,
    second: u64,
    ctime: (i64, i64),
    /// The file, held (`O_PATH`).
    file: OwnedFd,
}

impl Racy {
    /// Whether the file held has the entry's stat data and the ctime read, to the nanosecond.
    fn unchanged(&self) -> bool {
        let link = self.mode & 0o170_000 == 0o120_000;
        stat_matching(self.file.as_raw_fd(), link, &self.record[..40])
            .is_some_and(|st| (st.st_ctime, st.st_ctime_nsec) == self.ctime)
    }
}

/// The most entries one index keeps for a later check ([`Racy`]: each holds its file open);
/// beyond them, the second is waited out in the index write.
const MAX_RACY_ENTRIES: usize = 16;

/// The most entries all recorded indexes keep for a later check; an index that would bring
/// more is checked at once (its second waited out).
const MAX_RACY_TOTAL: usize = 256;

/// An index put in place in a foreign git directory with [`Racy`] entries, to check again once
/// their seconds are over: the git directory (an `O_PATH` handle), the index's name there and
/// the object names' length.
///
/// Also the owner's permission bits of the git directory and of the index as placed: where the
/// run takes them away (`chmod`), the last check puts them back to read and write the index
/// (red team AH, 5 December: a `.git` made read-only, or an index made unreadable, had the
/// last check give up, and the host's `git` as root, which minds no mode, took the entry).
struct RacyIndex {
    git: OwnedFd,
    name: Vec<u8>,
    hash: usize,
    entries: Vec<Racy>,
    modes: (libc::mode_t, libc::mode_t),
}

impl RacyIndex {
    /// The last second in which one of the entries' files changed.
    fn until(&self) -> u64 {
        self.entries.iter().map(|e| e.second).max().unwrap_or(0)
    }

    /// Smudges, in the index now at the name, every entry that still has the record kept and
    /// whose file no longer has those stat data and the ctime read, to the nanosecond (changed
    /// since it was read: such a file is also given a new ctime, [`RacyIndex::redate_changed`]),
    /// or whose second is not over yet ([`second_over`], after a wait of at most a second when
    /// `wait`). An entry whose file is unchanged, its second over, is as git would keep it: a
    /// later change has a later ctime second. With `wait` (the run's end), an index that cannot
    /// be read or written has the owner's permissions the run took away given back
    /// ([`RacyIndex::restore_modes`]) and is looked at once more.
    ///
    /// False when the index could not be read (it may be read later: a mode changed back).
    ///
    /// Once `ending` is set (the run's end has begun), git's lock on the index is not waited for.
    ///
    /// `strict`: every entry kept here is smudged, looked at or not ([`Staging::finish`]).
    fn recheck(&self, wait: bool, ending: &std::sync::atomic::AtomicBool, strict: bool) -> bool {
        let until = self.until();
        if wait && !strict {
            wait_out(until);
        }
        if self.recheck_once(ending, strict) {
            return true;
        }
        if !wait {
            return false;
        }
        // The last look: the owner's permissions the run took away put back, once more.
        self.restore_modes();
        let done = self.recheck_once(ending, strict);
        if !done {
            tracing::warn!("an index entry changed within its second could not be checked again");
        }
        done
    }

    /// Gives every file of an entry kept here that changed since it was read (the file held
    /// since) a ctime in the current second, by setting its mode to what it is (a `chown` would
    /// drop a file capability: red team AJ): then no index that carries the entry as kept,
    /// whichever guard or process puts it in place later, matches the file in git's whole
    /// seconds, and git reads it. Smudging the index alone was undone by a second
    /// run whose index write had read the index before the smudge (red team AI, 5 December: two
    /// runs at once, 9 of 11). Called once the entries' second is over.
    fn redate_changed(&self, every: bool) {
        for e in &self.entries {
            if !every && e.unchanged() {
                continue;
            }
            let redated = set_mode_again(e.file.as_fd());
            tracing::debug!(
                redated = redated.is_ok(),
                "a file changed within its entry's second was given a new ctime"
            );
        }
    }

    /// Gives the git directory and the index back the owner's permission bits they had when
    /// the index was placed, where the run took them away.
    fn restore_modes(&self) {
        let (dir, index) = self.modes;
        if let (Ok(st), Ok(via)) = (
            nix::sys::stat::fstat(self.git.as_raw_fd()),
            cstr(format!("/proc/self/fd/{}", self.git.as_raw_fd()).as_bytes()),
        ) {
            if st.st_mode & dir != dir {
                let mode = Mode::from_bits_truncate((st.st_mode & 0o7777) | dir);
                let _ =
                    nix::sys::stat::fchmodat(None, via.as_c_str(), mode, nix::sys::stat::FchmodatFlags::FollowSymlink);
            }
        }
        let Ok(name) = cstr(&self.name) else { return };
        if let Ok(st) =
            nix::sys::stat::fstatat(Some(self.git.as_raw_fd()), name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
        {
            // A file of one name only: an index git wrote, never a file of the user's linked
            // there to have its mode changed.
            if st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_nlink == 1 && st.st_mode & index != index {
                let mode = Mode::from_bits_truncate((st.st_mode & 0o7777) | index);
                let _ = nix::sys::stat::fchmodat(
                    Some(self.git.as_raw_fd()),
                    name.as_c_str(),
                    mode,
                    nix::sys::stat::FchmodatFlags::FollowSymlink,
                );
            }
        }
    }

    /// One look of [`RacyIndex::recheck`]: false when the index could not be read or written.
    fn recheck_once(&self, ending: &std::sync::atomic::AtomicBool, strict: bool) -> bool {
        let until = self.until();
        let over = second_over(until);
        if over || strict {
            self.redate_changed(strict);
        }
        // Strictly, as if no second were over: every entry kept here is smudged.
        let over = over && !strict;
        let Ok(name) = cstr(&self.name) else { return true };
        // git's own lock on the index, taken as git takes it, so that an index a host `git`
        // writes meanwhile is neither lost nor read half-changed; one held for long (a lock the
        // workload left) is not waited for: the index is rewritten without it then.
        let Ok(lock_name) = cstr(&[self.name.as_slice(), b".lock"].concat()) else { return true };
        let lock_flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let mut lock = None;
        for _ in 0..20 {
            match notify::open_at(Some(self.git.as_fd()), &lock_name, lock_flags, 0o644) {
                Ok(fd) => {
                    lock = Some(std::fs::File::from(fd));
                    break;
                }
                Err(Errno::EEXIST) if !ending.load(std::sync::atomic::Ordering::SeqCst) => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(_) => break,
            }
        }
        let unlock = || {
            let _ = nix::unistd::unlinkat(
                Some(self.git.as_raw_fd()),
                lock_name.as_c_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        };
        let (st, out) = match self.smudged(&name, over) {
            Smudged::Index(st, out) => (st, out),
            other => {
                if lock.is_some() {
                    unlock();
                }
                return !matches!(other, Smudged::Unread);
            }
        };
        let written = match lock {
            Some(mut file) => {
                let times = [
                    nix::sys::time::TimeSpec::new(st.st_atime, st.st_atime_nsec),
                    nix::sys::time::TimeSpec::new(st.st_mtime, st.st_mtime_nsec),
                ];
                let done = std::io::Write::write_all(&mut file, &out)
                    .map_err(|_| Errno::EIO)
                    .and_then(|()| {
                        nix::sys::stat::fchmod(file.as_raw_fd(), Mode::from_bits_truncate(st.st_mode & 0o777))
                    })
                    .and_then(|()| nix::sys::stat::futimens(file.as_raw_fd(), &times[0], &times[1]))
                    .and_then(|()| {
                        nix::fcntl::renameat(
                            Some(self.git.as_raw_fd()),
                            lock_name.as_c_str(),
                            Some(self.git.as_raw_fd()),
                            name.as_c_str(),
                        )
                    });
                if done.is_err() {
                    unlock();
                }
                done
            }
            None => match self.git.try_clone() {
                Ok(dir) => {
                    let at = Parent { dir, name: self.name.clone(), slash: false };
                    put_copy(&at, &st, false, &mut |f| std::io::Write::write_all(f, &out).map_err(|_| Errno::EIO))
                }
                Err(_) => Err(Errno::EMFILE),
            },
        };
        tracing::debug!(written = written.is_ok(), "an index entry changed within its second was smudged");
        written.is_ok()
    }

    /// The index now at `name` (its stat, and its content with the entries [`RacyIndex::recheck`]
    /// smudges smudged; `over`: whether their second is over), where any is to be smudged.
    fn smudged(&self, name: &std::ffi::CStr, over: bool) -> Smudged {
        let fd = match notify::open_at(
            Some(self.git.as_fd()),
            name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
            0,
        ) {
            Ok(fd) => fd,
            // None there: nothing is kept (git sees every file as new).
            Err(Errno::ENOENT) => return Smudged::Nothing,
            Err(_) => return Smudged::Unread,
        };
        let mut file = std::fs::File::from(fd);
        let Ok(st) = nix::sys::stat::fstat(file.as_raw_fd()) else { return Smudged::Unread };
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_size > MAX_INDEX {
            return Smudged::Unread;
        }
        let mut data = Vec::new();
        if std::io::Read::read_to_end(&mut file, &mut data).is_err() {
            return Smudged::Unread;
        }
        let kept: std::collections::HashMap<&[u8], &Racy> =
            self.entries.iter().map(|e| (e.name.as_slice(), e)).collect();
        let mut changed = |entry: &[u8], mode: u32, record: &[u8]| {
            let Some(r) = kept.get(entry) else { return false };
            if r.record != record || r.mode != mode {
                return false;
            }
            !over || !r.unchanged()
        };
        match index::smudge(&data, self.hash, &mut changed) {
            Ok(Some(out)) => Smudged::Index(st, out),
            Ok(None) => Smudged::Nothing,
            Err(why) => {
                tracing::debug!(why, "an index to check again could not be read");
                Smudged::Unread
            }
        }
    }
}

/// `o` opened for reading, not followed (a symlink: EACCES), and without waiting (a FIFO's
/// open waits for a writer: the guard's thread, and the run's end that waits for an index
/// being placed, would wait for ever; its callers take only regular files).
fn open_source(o: &Parent) -> Result<OwnedFd, Errno> {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    notify::open_at(Some(o.dir.as_fd()), &cstr(&o.name)?, flags, 0)
        .map_err(|e| if e == Errno::ELOOP { Errno::EACCES } else { e })
}

/// Puts a file the guard writes under the name `n`: a new file in `n`'s directory with the mode
/// and times of `st` (git tells a racily clean index entry by the index's mtime), filled by
/// `fill`, renamed over the name (`noreplace`: an existing name answers EEXIST). On failure
/// nothing stays.
fn put_copy(
    n: &Parent,
    st: &libc::stat,
    noreplace: bool,
    fill: &mut dyn FnMut(&mut std::fs::File) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let mut attempt = 0u32;
    let (temp, file) = loop {
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let temp = cstr(format!(".sandbox-copy-{:x}-{attempt}", stamp.as_nanos()).as_bytes())?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        match notify::open_at(Some(n.dir.as_fd()), &temp, flags, st.st_mode & 0o777) {
            Ok(file) => break (temp, file),
            Err(Errno::EEXIST) if attempt < 8 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let gone = || {
        let _ =
            nix::unistd::unlinkat(Some(n.dir.as_raw_fd()), temp.as_c_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
    };
    let mut file = std::fs::File::from(file);
    let times = [
        nix::sys::time::TimeSpec::new(st.st_atime, st.st_atime_nsec),
        nix::sys::time::TimeSpec::new(st.st_mtime, st.st_mtime_nsec),
    ];
    let written = fill(&mut file).and_then(|()| nix::sys::stat::futimens(file.as_raw_fd(), &times[0], &times[1]));
    if let Err(e) = written {
        gone();
        return Err(e);
    }
    drop(file);
    let flags = if noreplace { nix::fcntl::RenameFlags::RENAME_NOREPLACE } else { nix::fcntl::RenameFlags::empty() };
    if let Err(e) = nix::fcntl::renameat2(
        Some(n.dir.as_raw_fd()),
        temp.as_c_str(),
        Some(n.dir.as_raw_fd()),
        n.kernel_name()?.as_c_str(),
        flags,
    ) {
        gone();
        return Err(e);
    }
    Ok(())
}

/// Whether the directory tree `top` holds a symlink (or a FIFO, socket or device: [`is_special`])
/// at any depth (symlinks not followed). A tree
/// of more than [`MAX_MOVED_ENTRIES`] entries, or with a directory that cannot be read, counts
/// as holding one (closed).
fn tree_holds_symlink(top: OwnedFd) -> Result<bool, Errno> {
    let open = |dir: BorrowedFd<'_>, name: &std::ffi::CStr| {
        notify::open_at(Some(dir), name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0)
    };
    {
        let mut pending = vec![top];
        let mut seen = 0usize;
        while let Some(dir) = pending.pop() {
            let at = std::path::PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
            let Ok(entries) = std::fs::read_dir(&at) else { return Ok(true) };
            for entry in entries {
                let Ok(entry) = entry else { return Ok(true) };
                seen += 1;
                let Ok(kind) = entry.file_type() else { return Ok(true) };
                if seen > MAX_MOVED_ENTRIES || kind.is_symlink() || !(kind.is_dir() || kind.is_file()) {
                    return Ok(true);
                }
                if kind.is_dir() {
                    let sub = cstr(std::os::unix::ffi::OsStrExt::as_bytes(entry.file_name().as_os_str()))?;
                    match open(dir.as_fd(), &sub) {
                        Ok(sub) => pending.push(sub),
                        Err(_) => return Ok(true),
                    }
                }
            }
        }
        Ok(false)
    }
}

impl Guard<'_> {
    /// EACCES when `p` is a directory (outside the exempt directories) that is, or holds at any
    /// depth, something of the host's the run may not move, replace or take the name of: a
    /// `.git` this run did not make, or a git directory by its contents (a bare repository, a
    /// separate git directory, a worktree's), or a directory the host made during the run
    /// ([`Guard::host_made`]). Moving one would free its name for a repository of the run's
    /// own, which the user's next `git` there enters: the host's clone renamed away and
    /// replaced; or, while the host's git still sets its new directory up (before it is a git
    /// directory by its contents), that directory exchanged for a repository the workload made,
    /// which the host's git then filled and took for its own (a red team, 5 December, won 5
    /// times in 6 against `git clone --bare`). The guard performs every rename, one at a time,
    /// so no directory holding one moves while the tree is read. A tree of more than
    /// [`MAX_MOVED_ENTRIES`] entries, or with a directory the guard cannot read, is not moved
    /// (closed); symlinks are not followed.
    fn holds_foreign(&self, p: &Parent) -> Result<(), Errno> {
        if is_dot(&p.name) || p.name == b".git" {
            return Ok(());
        }
        let name = cstr(&p.name)?;
        match nix::sys::stat::fstatat(Some(p.dir.as_raw_fd()), name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => {}
            // Not a directory, or nothing (the kernel answers).
            _ => return Ok(()),
        }
        // A directory the guard cannot read (`chmod 000` of the host's repository itself, or
        // of one above it) could hide one: it is not moved.
        let open = |dir: Option<BorrowedFd<'_>>, name: &std::ffi::CStr| {
            notify::open_at(dir, name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC, 0)
                .map_err(|_| Errno::EACCES)
        };
        let top = open(Some(p.dir.as_fd()), &name)?;
        if self.guard.is_exempt(&real_path(top.as_fd())?) {
            return Ok(());
        }
        let mut pending = vec![top];
        let mut seen = 0usize;
        while let Some(dir) = pending.pop() {
            if self.host_made(&dir) {
                return Err(Errno::EACCES);
            }
            let at = std::path::PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
            let mut marked = false;
            for entry in std::fs::read_dir(&at).map_err(|_| Errno::EACCES)? {
                let entry = entry.map_err(|_| Errno::EIO)?;
                seen += 1;
                if seen > MAX_MOVED_ENTRIES {
                    return Err(Errno::EACCES);
                }
                let name = entry.file_name();
                if name == ".git" {
                    if !self.is_own(&entry.path()) {
                        return Err(Errno::EACCES);
                    }
                } else if entry.file_type().map_err(|_| Errno::EACCES)?.is_dir() {
                    let sub = cstr(std::os::unix::ffi::OsStrExt::as_bytes(name.as_os_str()))?;
                    pending.push(open(Some(dir.as_fd()), &sub)?);
                }
                marked |= name == "HEAD" || name == "config" || name == "commondir";
            }
            // A bare repository, a separate git directory or a worktree's (by what
            // `is_git_directory` looks at).
            let own_dir = self.owns(&dir);
            if marked && is_git_directory(&at) && !own_dir {
                return Err(Errno::EACCES);
            }
        }
        Ok(())
    }

    /// `open(O_CREAT)`: a final symlink is followed here, one step at a time (each name it
    /// leads to is checked), never by the kernel on creation (`O_NOFOLLOW` is always added).
    fn open(&self, dirfd: i32, path: &[u8], flags: i32, mode: u32) -> Outcome {
        match self.open_inner(dirfd, path, flags, mode) {
            Ok(o) => o,
            Err(e) => Outcome::Answer(Answer::Error(e)),
        }
    }

    fn open_inner(&self, dirfd: i32, path: &[u8], flags: i32, mode: u32) -> Result<Outcome, Errno> {
        if flags & (libc::O_CREAT | libc::O_WRONLY | libc::O_RDWR | libc::O_TRUNC) == 0 && flags & libc::O_PATH == 0 {
            return self.open_read(dirfd, path, flags);
        }
        if flags & libc::O_PATH != 0 {
            // O_PATH ignores O_CREAT (and every flag but O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW):
            // nothing is created, so the kernel makes the call itself (a descriptor opened
            // here could not be handed over: the kernel's `ADDFD` takes no O_PATH file, and
            // the caller got EBADF, a red team's note of 5 December).
            return Ok(Outcome::Answer(Answer::Continue));
        }
        let cloexec = flags & libc::O_CLOEXEC != 0;
        let nofollow = flags & libc::O_NOFOLLOW != 0;
        let mut r = Resolver::new(self.thread);
        // An open that only writes (no O_CREAT) creates nothing: O_EXCL means nothing to it.
        let creating = flags & libc::O_CREAT != 0;
        let excl = creating && flags & libc::O_EXCL != 0;
        let base = (flags & !libc::O_CLOEXEC) | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC;
        let mode = mode & 0o7777;
        let mut p = r.parent(dirfd, path)?;
        loop {
            if p.slash || is_dot(&p.name) {
                return Err(Errno::EISDIR);
            }
            if p.name == b"commondir" || p.name == b"gitdir" {
                let full = real_path(p.dir.as_fd())?.join(os(&p.name));
                if self.foreign_staged(&full) {
                    return self.stage_entry_file(&p, &full, flags, mode);
                }
            }
            // A foreign index or `sequencer/opts` is written by a rename only (`place_checked`).
            const RENAMED_ONLY: [&[u8]; 3] = [b"index", b"opts", b"packed-refs"];
            if RENAMED_ONLY.contains(&p.name.as_slice()) || p.name.starts_with(b"sharedindex.") {
                let full = real_path(p.dir.as_fd())?.join(os(&p.name));
                if self.guarded_content(&full) {
                    return Err(Errno::EACCES);
                }
            }
            if creating {
                self.check(&p, CreateOp::Create)?;
            } else {
                self.check_content(&p)?;
            }
            let name = cstr(&p.name)?;
            let existing =
                match nix::sys::stat::fstatat(Some(p.dir.as_raw_fd()), name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                    Ok(st) => Some(st),
                    Err(Errno::ENOENT) => None,
                    Err(e) => return Err(e),
                };
            if existing.is_some_and(|st| is_dev_tty(&st)) {
                return self.caller_tty(base, cloexec);
            }
            let opened = match existing.map(|st| st.st_mode & libc::S_IFMT) {
                Some(_) if excl => return Err(Errno::EEXIST),
                Some(libc::S_IFLNK) => Err(Errno::ELOOP),
                Some(libc::S_IFDIR) => return Err(Errno::EISDIR),
                Some(libc::S_IFIFO) => {
                    // Opening a FIFO waits for its other end: not on the guard's thread. (The
                    // container's devices do not wait in their open, and `> /dev/null` is
                    // common: they are opened here.)
                    let dir = p.dir;
                    let job = move || match notify::open_at(Some(dir.as_fd()), &name, base & !libc::O_CREAT, 0) {
                        Ok(fd) => Answer::Fd(fd, cloexec),
                        Err(e) => Answer::Error(e),
                    };
                    return Ok(Outcome::Blocking(Box::new(job)));
                }
                // It exists: nothing is created (gone meanwhile: ENOENT, never a creation).
                Some(_) => notify::open_at(Some(p.dir.as_fd()), &name, base & !libc::O_CREAT, 0),
                None if !creating => Err(Errno::ENOENT),
                None => {
                    self.check_completes_git_directory(&p, || Ok(false))?;
                    self.caller_umask()?;
                    let made = notify::open_at(Some(p.dir.as_fd()), &name, base, mode);
                    if made.is_ok() {
                        self.made(&p);
                    }
                    made
                }
            };
            match opened {
                Ok(fd) => {
                    if flags & libc::O_ACCMODE == libc::O_RDWR {
                        self.note_writable(fd.as_fd(), p.dir.as_fd(), &p.name)?;
                    }
                    return Ok(Outcome::Answer(Answer::Fd(fd, cloexec)));
                }
                Err(Errno::ELOOP) if !nofollow && !excl => match r.follow_final(&p)? {
                    Followed::Name(next) => p = next,
                    Followed::Object(object) => {
                        let st = nix::sys::stat::fstat(object.as_raw_fd())?;
                        if is_dev_tty(&st) {
                            return self.caller_tty(base, cloexec);
                        }
                        let kind = st.st_mode & libc::S_IFMT;
                        if kind == libc::S_IFDIR {
                            return Err(Errno::EISDIR);
                        }
                        self.check_object(object.as_fd())?;
                        if flags & libc::O_ACCMODE == libc::O_RDWR {
                            // By the directory and name it has now (the link's end).
                            let at = real_path(object.as_fd())?;
                            let (Some(parent), Some(name)) = (at.parent(), at.file_name()) else {
                                return Err(Errno::EACCES);
                            };
                            let parent = cstr(parent.as_os_str().as_encoded_bytes())?;
                            let dir =
                                notify::open_at(None, &parent, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0)?;
                            self.note_writable(object.as_fd(), dir.as_fd(), name.as_encoded_bytes())?;
                        }
                        return reopen(object, kind, base & !(libc::O_CREAT | libc::O_NOFOLLOW), cloexec);
                    }
                },
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests;
