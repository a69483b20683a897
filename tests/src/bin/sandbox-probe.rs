//! The in-sandbox probe: run *inside* a sandbox, it tries one operation per check and prints a
//! machine-readable verdict per check, one JSON object per line:
//! `{"check": NAME, "arg": ARG, "ok": BOOL, "errno": N|null, "detail": TEXT}`.
//! `ok` means the operation succeeded. The driver decides which outcome each claim needs.
//! Exit status: 0 when every check ran, 2 for an unknown check name or a missing argument.
//!
//! Usage: `sandbox-probe CHECK[=ARG] …`
#![allow(unsafe_code)]

#[cfg(target_os = "linux")]
mod checks {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
    use std::os::fd::FromRawFd;
    use std::time::Duration;

    pub struct Verdict {
        pub ok: bool,
        pub errno: Option<i32>,
        pub detail: String,
    }

    fn from_io<T>(r: std::io::Result<T>, detail: impl FnOnce(&T) -> String) -> Verdict {
        match r {
            Ok(v) => Verdict { ok: true, errno: None, detail: detail(&v) },
            Err(e) => Verdict { ok: false, errno: e.raw_os_error(), detail: e.to_string() },
        }
    }

    fn from_ret(ret: libc::c_long) -> Verdict {
        if ret < 0 {
            let e = std::io::Error::last_os_error();
            Verdict { ok: false, errno: e.raw_os_error(), detail: e.to_string() }
        } else {
            Verdict { ok: true, errno: None, detail: format!("returned {ret}") }
        }
    }

    /// One raw syscall; missing arguments are 0.
    ///
    /// # Safety
    /// Every argument that is a pointer must point to memory the caller owns, of the size the
    /// syscall reads or writes.
    unsafe fn sys(nr: libc::c_long, args: &[libc::c_long]) -> libc::c_long {
        let a = |i: usize| args.get(i).copied().unwrap_or(0);
        // SAFETY: the caller vouches for the pointer arguments (see above).
        unsafe { libc::syscall(nr, a(0), a(1), a(2), a(3), a(4), a(5)) }
    }

    /// Closes `fd` if a call returned one.
    fn close(fd: libc::c_long) {
        if let Ok(fd) = i32::try_from(fd)
            && fd >= 0
        {
            // SAFETY: `fd` is a descriptor this probe just received and nothing else holds.
            drop(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
        }
    }

    fn tcp_socket() -> std::io::Result<std::os::fd::OwnedFd> {
        nix::sys::socket::socket(
            nix::sys::socket::AddressFamily::Inet,
            nix::sys::socket::SockType::Stream,
            nix::sys::socket::SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(std::io::Error::from)
    }

    fn status_field(name: &str) -> String {
        std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")).map(|v| v.trim().to_owned()))
            .unwrap_or_default()
    }

    pub fn run(check: &str, arg: &str) -> Option<Verdict> {
        Some(match check {
            "write" => from_io(std::fs::write(arg, b"probe\n"), |_| String::from("written")),
            // A POSIX message queue `/ARG`: made (and left), or opened if it exists.
            "mq-create" | "mq-open" => {
                let Ok(name) = std::ffi::CString::new(format!("/{arg}")) else { return None };
                let flags = if check == "mq-create" { libc::O_CREAT | libc::O_RDWR } else { libc::O_RDWR };
                // SAFETY: `name` is a NUL-terminated string alive for the call; mode 0600 and a
                // null attribute pointer (the defaults) are what O_CREAT reads.
                let mq = unsafe {
                    libc::mq_open(name.as_ptr(), flags, 0o600 as libc::mode_t, std::ptr::null::<libc::mq_attr>())
                };
                let verdict = from_ret(libc::c_long::from(mq));
                if mq >= 0 {
                    // SAFETY: `mq` is the descriptor mq_open just returned.
                    unsafe { libc::mq_close(mq) };
                }
                verdict
            }
            "read" => from_io(std::fs::read_to_string(arg), |s| s.trim().chars().take(200).collect()),
            "list" => from_io(std::fs::read_dir(arg).map(|d| d.count()), |n| format!("{n} entries")),
            "mkdir" => from_io(std::fs::create_dir(arg), |_| String::from("created")),
            // A stream socketpair's end (seccomp lets those be made) bound to a filesystem path.
            "bind-unix" => from_io(
                (|| {
                    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, bind, socketpair};
                    use std::os::fd::AsRawFd;
                    let (a, _b) = socketpair(AddressFamily::Unix, SockType::Stream, None, SockFlag::SOCK_CLOEXEC)?;
                    bind(a.as_raw_fd(), &UnixAddr::new(arg)?)?;
                    Ok(())
                })(),
                |()| String::from("bound"),
            ),
            "exists" => Verdict {
                ok: std::fs::symlink_metadata(arg).is_ok(),
                errno: None,
                detail: String::from("symlink_metadata"),
            },
            "connect" => {
                let addr: SocketAddr = arg.parse().ok()?;
                from_io(TcpStream::connect_timeout(&addr, Duration::from_secs(2)), |_| String::from("connected"))
            }
            "loopback-tcp" => from_io(
                (|| {
                    let l = TcpListener::bind("127.0.0.1:0")?;
                    let mut c = TcpStream::connect(l.local_addr()?)?;
                    let (mut s, _) = l.accept()?;
                    c.write_all(b"ping")?;
                    let mut buf = [0u8; 4];
                    s.read_exact(&mut buf)?;
                    Ok(buf)
                })(),
                |b| String::from_utf8_lossy(b).into_owned(),
            ),
            "loopback-udp" => from_io(
                (|| {
                    let a = UdpSocket::bind("127.0.0.1:0")?;
                    let b = UdpSocket::bind("127.0.0.1:0")?;
                    a.send_to(b"ping", b.local_addr()?)?;
                    let mut buf = [0u8; 4];
                    b.set_read_timeout(Some(Duration::from_secs(2)))?;
                    b.recv_from(&mut buf)?;
                    Ok(buf)
                })(),
                |b| String::from_utf8_lossy(b).into_owned(),
            ),
            "udp-send" => {
                let addr: SocketAddr = arg.parse().ok()?;
                from_io(UdpSocket::bind("0.0.0.0:0").and_then(|s| s.send_to(b"probe", addr)), |n| format!("sent {n}"))
            }
            "interfaces" => from_io(std::fs::read_to_string("/proc/net/dev"), |s| {
                s.lines().skip(2).filter_map(|l| l.split(':').next()).map(str::trim).collect::<Vec<_>>().join(",")
            }),
            "raw-socket" => {
                // SAFETY: socket(2) with constant arguments; the descriptor is closed at once.
                let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP) };
                let v = from_ret(libc::c_long::from(fd));
                if fd >= 0 {
                    // SAFETY: closing the descriptor just created.
                    unsafe { libc::close(fd) };
                }
                v
            }
            "netlink-route" => {
                // SAFETY: socket(2) with constant arguments; the descriptor is closed at once.
                let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE) };
                let v = from_ret(libc::c_long::from(fd));
                if fd >= 0 {
                    // SAFETY: closing the descriptor just created.
                    unsafe { libc::close(fd) };
                }
                v
            }
            // SAFETY: PTRACE_TRACEME takes no pointers.
            "ptrace" => from_ret(unsafe { libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) }),
            "io-uring" => {
                let mut params = [0u8; 120];
                // SAFETY: io_uring_setup reads and writes a 120-byte io_uring_params we own.
                from_ret(unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) })
            }
            "io-setup" => {
                let mut ctx: libc::c_ulong = 0;
                // SAFETY: io_setup writes one aio_context_t into `ctx`, which we own.
                let r = unsafe { libc::syscall(libc::SYS_io_setup, 1u32, &mut ctx as *mut libc::c_ulong) };
                if r == 0 {
                    // SAFETY: io_destroy takes the context io_setup returned, by value.
                    unsafe { libc::syscall(libc::SYS_io_destroy, ctx) };
                }
                from_ret(r)
            }
            "sigpending" => {
                let mut l: libc::rlimit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                // SAFETY: getrlimit writes one rlimit into `l`, which we own.
                let r = unsafe { libc::getrlimit(libc::RLIMIT_SIGPENDING, &mut l) };
                if r == 0 {
                    Verdict { ok: true, errno: None, detail: format!("{} {}", l.rlim_cur, l.rlim_max) }
                } else {
                    from_ret(libc::c_long::from(r))
                }
            }
            // SAFETY: KEYCTL_GET_KEYRING_ID with a constant keyring id and no pointers.
            "keyctl" => from_ret(unsafe { libc::syscall(libc::SYS_keyctl, 0, -3i32, 0) }),
            "bpf" => {
                let mut attr = [0u8; 128];
                // SAFETY: bpf(BPF_MAP_CREATE) reads a zeroed 128-byte attribute buffer we own.
                from_ret(unsafe { libc::syscall(libc::SYS_bpf, 0, attr.as_mut_ptr(), 128u32) })
            }
            "perf-event" => {
                let mut attr = [0u8; 128];
                attr[4..8].copy_from_slice(&128u32.to_ne_bytes());
                // SAFETY: perf_event_open reads a 128-byte attribute buffer we own.
                from_ret(unsafe { libc::syscall(libc::SYS_perf_event_open, attr.as_mut_ptr(), 0, -1, -1, 0) })
            }
            // The generation of the directory `arg` (FS_IOC_GETVERSION), then setting it to what it
            // is (FS_IOC_SETVERSION, and ext4's own request for it).
            "get-generation" | "set-generation" | "ext4-set-generation" => {
                use std::os::fd::AsRawFd;
                let dir = match std::fs::File::open(arg) {
                    Ok(d) => d,
                    Err(e) => return Some(Verdict { ok: false, errno: e.raw_os_error(), detail: e.to_string() }),
                };
                let mut generation: libc::c_long = 0;
                // SAFETY: the descriptor is open; the request writes one long into `generation`.
                let got = unsafe { libc::ioctl(dir.as_raw_fd(), libc::FS_IOC_GETVERSION, &mut generation) };
                if check == "get-generation" || got != 0 {
                    return Some(from_ret(libc::c_long::from(got)));
                }
                let request: libc::Ioctl = if check == "set-generation" { 0x4008_7602 } else { 0x4008_6604 };
                // SAFETY: the descriptor is open; the request reads one long from `generation`.
                from_ret(libc::c_long::from(unsafe { libc::ioctl(dir.as_raw_fd(), request, &generation) }))
            }
            // open_tree_attr (Linux 6.15: 467 on every architecture) cloning `/` as a detached
            // mount; no attributes.
            "open-tree-attr" => {
                // SAFETY: the path is a NUL-terminated literal; a null attribute pointer with size
                // 0 asks for no attribute change; a returned descriptor is closed by the exit.
                from_ret(unsafe {
                    libc::syscall(467, libc::AT_FDCWD, c"/".as_ptr(), 1u32, std::ptr::null::<u8>(), 0usize)
                })
            }
            "mount" => {
                let v =
                    nix::mount::mount(Some("tmpfs"), arg, Some("tmpfs"), nix::mount::MsFlags::empty(), None::<&str>);
                match v {
                    Ok(()) => Verdict { ok: true, errno: None, detail: String::from("mounted") },
                    Err(e) => Verdict { ok: false, errno: Some(e as i32), detail: e.desc().to_owned() },
                }
            }
            "unshare-user" => match nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER) {
                Ok(()) => Verdict { ok: true, errno: None, detail: String::from("new user namespace") },
                Err(e) => Verdict { ok: false, errno: Some(e as i32), detail: e.desc().to_owned() },
            },
            "unshare-mount" => match nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS) {
                Ok(()) => Verdict { ok: true, errno: None, detail: String::from("new mount namespace") },
                Err(e) => Verdict { ok: false, errno: Some(e as i32), detail: e.desc().to_owned() },
            },
            "chroot" => match nix::unistd::chroot(arg) {
                Ok(()) => Verdict { ok: true, errno: None, detail: String::from("chrooted") },
                Err(e) => Verdict { ok: false, errno: Some(e as i32), detail: e.desc().to_owned() },
            },
            "status" => Verdict {
                ok: true,
                errno: None,
                detail: ["CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"]
                    .iter()
                    .map(|f| format!("{f}={}", status_field(f)))
                    .collect::<Vec<_>>()
                    .join(" "),
            },
            "pids" => from_io(std::fs::read_dir("/proc"), |_| {
                let pids: Vec<String> = std::fs::read_dir("/proc")
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.chars().all(|c| c.is_ascii_digit()))
                    .collect();
                format!("{} self={} ppid={}", pids.len(), std::process::id(), nix::unistd::getppid())
            }),
            "symlink" => {
                let (link, target) = arg.split_once(':')?;
                from_io(std::os::unix::fs::symlink(target, link), |_| String::from("created"))
            }
            "hardlink" => {
                let (src, dst) = arg.split_once(':')?;
                from_io(std::fs::hard_link(src, dst), |_| String::from("linked"))
            }
            "abstract-connect" => {
                use std::os::linux::net::SocketAddrExt;
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(arg.as_bytes()).ok()?;
                from_io(std::os::unix::net::UnixStream::connect_addr(&addr), |_| String::from("connected"))
            }
            "open-rw" => {
                from_io(std::fs::OpenOptions::new().read(true).write(true).open(arg), |_| String::from("opened"))
            }
            "exec-status" => {
                // Runs `arg` (a copy of this probe, possibly setuid) with the `status` check.
                let out = std::process::Command::new(arg).arg("status").output();
                from_io(out, |o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .next()
                        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                        .and_then(|v| v.get("detail").and_then(serde_json::Value::as_str).map(str::to_owned))
                        .unwrap_or_default()
                })
            }
            "uid" => Verdict {
                ok: true,
                errno: None,
                detail: format!("uid={} gid={}", nix::unistd::getuid(), nix::unistd::getgid()),
            },
            "env" => Verdict {
                ok: true,
                errno: None,
                detail: std::env::vars().map(|(k, _)| k).collect::<Vec<_>>().join(","),
            },
            "hostname" => from_io(std::fs::read_to_string("/proc/sys/kernel/hostname"), |s| s.trim().to_owned()),
            "kill" => {
                let pid: i32 = arg.parse().ok()?;
                match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
                    Ok(()) => Verdict { ok: true, errno: None, detail: String::from("signal 0 delivered") },
                    Err(e) => Verdict { ok: false, errno: Some(e as i32), detail: e.desc().to_owned() },
                }
            }
            // Issue 12 class 2: one set-id attempt through the named call, `CALL:PATH:MODE`
            // (mode in octal). `mknod` makes a regular file; `openat-tmpfile` makes an unnamed
            // one in the directory PATH; `openat-nocreat` passes the mode without O_CREAT.
            "mode-call" => {
                let mut parts = arg.splitn(3, ':');
                let (call, path, mode) = (parts.next()?, parts.next()?, parts.next()?);
                let mode = libc::c_long::from_str_radix(mode, 8).ok()?;
                let c = std::ffi::CString::new(path).ok()?;
                let p = c.as_ptr() as libc::c_long;
                let cwd = libc::c_long::from(libc::AT_FDCWD);
                let creat = libc::c_long::from(libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC);
                let reg = libc::c_long::from(libc::S_IFREG);
                let (nr, args): (libc::c_long, Vec<libc::c_long>) = match call {
                    #[cfg(target_arch = "x86_64")]
                    "chmod" => (libc::SYS_chmod, vec![p, mode]),
                    "fchmodat" => (libc::SYS_fchmodat, vec![cwd, p, mode]),
                    "fchmodat2" => (
                        452, // SYS_fchmodat2 on x86_64 and aarch64
                        vec![cwd, p, mode, 0],
                    ),
                    #[cfg(target_arch = "x86_64")]
                    "open" => (libc::SYS_open, vec![p, creat, mode]),
                    "openat" => (libc::SYS_openat, vec![cwd, p, creat, mode]),
                    "openat-nocreat" => (libc::SYS_openat, vec![cwd, p, libc::c_long::from(libc::O_RDONLY), mode]),
                    "openat-tmpfile" => {
                        (libc::SYS_openat, vec![cwd, p, libc::c_long::from(libc::O_TMPFILE | libc::O_WRONLY), mode])
                    }
                    #[cfg(target_arch = "x86_64")]
                    "creat" => (libc::SYS_creat, vec![p, mode]),
                    #[cfg(target_arch = "x86_64")]
                    "mknod" => (libc::SYS_mknod, vec![p, reg | mode, 0]),
                    "mknodat" => (libc::SYS_mknodat, vec![cwd, p, reg | mode, 0]),
                    #[cfg(target_arch = "x86_64")]
                    "mkdir" => (libc::SYS_mkdir, vec![p, mode]),
                    "mkdirat" => (libc::SYS_mkdirat, vec![cwd, p, mode]),
                    "fchmod" => {
                        let file = std::fs::File::open(path);
                        let Ok(file) = file else { return Some(from_io(file, |_| String::new())) };
                        let fd = libc::c_long::from(std::os::fd::AsRawFd::as_raw_fd(&file));
                        // SAFETY: fchmod of a descriptor we own, with an integer mode.
                        return Some(from_ret(unsafe { sys(libc::SYS_fchmod, &[fd, mode]) }));
                    }
                    _ => return None,
                };
                // SAFETY: the only pointer is `p`, the NUL-terminated path `c` owns.
                let ret = unsafe { sys(nr, &args) };
                let v = from_ret(ret);
                if call.starts_with("open") || call == "creat" {
                    close(ret);
                }
                v
            }
            "openat2" => {
                let c = std::ffi::CString::new(arg).ok()?;
                // struct open_how { u64 flags; u64 mode; u64 resolve; }: O_RDONLY.
                let how = [0u64; 3];
                let args =
                    [libc::c_long::from(libc::AT_FDCWD), c.as_ptr() as libc::c_long, how.as_ptr() as libc::c_long, 24];
                // SAFETY: openat2 reads the 24-byte open_how and the NUL-terminated path we own.
                let ret = unsafe { sys(libc::SYS_openat2, &args) };
                let v = from_ret(ret);
                close(ret);
                v
            }
            // `PATH:NAME`: sets NAME to a valid VFS_CAP_REVISION_2 blob granting CAP_NET_RAW
            // (security.capability is refused without CAP_SETFCAP whatever the value).
            "setxattr" => {
                let (path, name) = arg.split_once(':')?;
                let mut blob = [0u8; 20];
                blob[0..4].copy_from_slice(&0x0200_0001u32.to_le_bytes()); // revision 2, effective
                blob[4..8].copy_from_slice(&(1u32 << 13).to_le_bytes()); // permitted: CAP_NET_RAW
                let (c, n) = (std::ffi::CString::new(path).ok()?, std::ffi::CString::new(name).ok()?);
                // SAFETY: setxattr with NUL-terminated strings and a 20-byte value we own.
                let ret = unsafe { libc::setxattr(c.as_ptr(), n.as_ptr(), blob.as_ptr().cast(), blob.len(), 0) };
                from_ret(libc::c_long::from(ret))
            }
            // Issue 12 class 9. `userfaultfd=FLAGS` (UFFD_USER_MODE_ONLY = 1, O_CLOEXEC).
            "userfaultfd" => {
                let flags: libc::c_long = arg.parse().ok()?;
                // SAFETY: userfaultfd takes integer flags.
                let ret = unsafe { sys(libc::SYS_userfaultfd, &[flags]) };
                let v = from_ret(ret);
                close(ret);
                v
            }
            "name-to-handle" => {
                let c = std::ffi::CString::new(arg).ok()?;
                // struct file_handle { u32 handle_bytes; i32 handle_type; u8 f_handle[128]; }
                let mut handle = [0u8; 8 + 128];
                handle[0..4].copy_from_slice(&128u32.to_ne_bytes());
                let mut mount_id = [0i32; 1];
                let args = [
                    libc::c_long::from(libc::AT_FDCWD),
                    c.as_ptr() as libc::c_long,
                    handle.as_mut_ptr() as libc::c_long,
                    mount_id.as_mut_ptr() as libc::c_long,
                    0,
                ];
                // SAFETY: name_to_handle_at writes at most 128 handle bytes into `handle` and
                // one i32 into `mount_id`, both ours.
                from_ret(unsafe { sys(libc::SYS_name_to_handle_at, &args) })
            }
            "open-by-handle" => {
                // A made-up handle: the call is refused before the handle matters.
                let mut handle = [0u8; 8 + 8];
                handle[0..4].copy_from_slice(&8u32.to_ne_bytes());
                handle[4..8].copy_from_slice(&1i32.to_ne_bytes());
                let args = [
                    libc::c_long::from(libc::AT_FDCWD),
                    handle.as_mut_ptr() as libc::c_long,
                    libc::c_long::from(libc::O_RDONLY),
                ];
                // SAFETY: open_by_handle_at reads the 16-byte file_handle we own.
                let ret = unsafe { sys(libc::SYS_open_by_handle_at, &args) };
                let v = from_ret(ret);
                close(ret);
                v
            }
            "fanotify" => {
                // SAFETY: fanotify_init takes integer flags.
                let ret = unsafe { sys(libc::SYS_fanotify_init, &[0, libc::c_long::from(libc::O_RDONLY)]) };
                let v = from_ret(ret);
                close(ret);
                v
            }
            // `personality=HEX`: sets (or, for ffffffff, queries) the personality; a set that
            // succeeds is undone at once.
            "personality" => {
                let value = libc::c_long::from_str_radix(arg, 16).ok()?;
                // SAFETY: personality takes an integer.
                let ret = unsafe { sys(libc::SYS_personality, &[value]) };
                let v = from_ret(ret);
                if ret >= 0 && value != 0xffff_ffff {
                    // SAFETY: restores the previous personality (an integer).
                    unsafe { sys(libc::SYS_personality, &[ret]) };
                }
                v
            }
            // `prlimit=PID` sets RLIMIT_CPU of PID (`self`: this process by its pid) to what it
            // is (read first, so nothing changes); `prlimit=read:PID` only reads it.
            "prlimit" => {
                let (read, pid) = arg.strip_prefix("read:").map_or((false, arg), |p| (true, p));
                let pid = if pid == "self" {
                    libc::c_long::from(nix::unistd::getpid().as_raw())
                } else {
                    pid.parse::<libc::c_long>().ok()?
                };
                // SAFETY: rlimit64 is plain old data.
                let mut old: libc::rlimit64 = unsafe { std::mem::zeroed() };
                let cpu = libc::c_long::from(libc::RLIMIT_CPU as i32);
                let old_ptr = std::ptr::addr_of_mut!(old) as libc::c_long;
                // SAFETY: prlimit64 writes the old limits to `old`, which outlives the call.
                let ret = unsafe { sys(libc::SYS_prlimit64, &[pid, cpu, 0, old_ptr]) };
                if read || ret < 0 {
                    return Some(from_ret(ret));
                }
                let new_ptr = std::ptr::addr_of!(old) as libc::c_long;
                // SAFETY: prlimit64 reads the new limits from `old`, which outlives the call.
                from_ret(unsafe { sys(libc::SYS_prlimit64, &[pid, cpu, new_ptr, 0]) })
            }
            "kcmp" => {
                let pid = libc::c_long::from(nix::unistd::getpid().as_raw());
                // SAFETY: kcmp(KCMP_FILE) of this process's stdin with itself; integers only.
                from_ret(unsafe { sys(libc::SYS_kcmp, &[pid, pid, 0, 0, 0]) })
            }
            "pidfd-getfd" => {
                let pid = libc::c_long::from(nix::unistd::getpid().as_raw());
                // SAFETY: pidfd_open of this process; integers only.
                let pidfd = unsafe { sys(libc::SYS_pidfd_open, &[pid, 0]) };
                if pidfd < 0 {
                    return Some(from_ret(pidfd));
                }
                // SAFETY: pidfd_getfd duplicates our own stdin through the pidfd just opened.
                let ret = unsafe { sys(libc::SYS_pidfd_getfd, &[pidfd, 0, 0]) };
                let v = from_ret(ret);
                close(ret);
                close(pidfd);
                v
            }
            // SAFETY: SYSLOG_ACTION_SIZE_BUFFER (10) takes no buffer.
            "syslog" => from_ret(unsafe { sys(libc::SYS_syslog, &[10, 0, 0]) }),
            // Issue 12 class 4: `socket=FAMILY:TYPE` (numbers).
            "socket" => {
                let (family, ty) = arg.split_once(':')?;
                let (family, ty): (libc::c_long, libc::c_long) = (family.parse().ok()?, ty.parse().ok()?);
                // SAFETY: socket(2) with integer arguments.
                let ret = unsafe { sys(libc::SYS_socket, &[family, ty, 0]) };
                let v = from_ret(ret);
                close(ret);
                v
            }
            // `socketpair=TYPE`: an AF_UNIX pair that carries one message.
            "socketpair" => {
                let ty = nix::sys::socket::SockType::try_from(arg.parse::<i32>().ok()?).ok()?;
                let pair = nix::sys::socket::socketpair(
                    nix::sys::socket::AddressFamily::Unix,
                    ty,
                    None,
                    nix::sys::socket::SockFlag::SOCK_CLOEXEC,
                )
                .map_err(std::io::Error::from);
                from_io(
                    pair.and_then(|(a, b)| {
                        std::fs::File::from(a).write_all(b"ping")?;
                        let mut buf = [0u8; 4];
                        std::fs::File::from(b).read_exact(&mut buf)?;
                        Ok(buf)
                    }),
                    |b| String::from_utf8_lossy(b).into_owned(),
                )
            }
            // `unix-send=PATH`: connects a stream socket to a path-named unix socket and sends
            // "probe".
            "unix-send" => {
                from_io(std::os::unix::net::UnixStream::connect(arg).and_then(|mut s| s.write_all(b"probe")), |_| {
                    String::from("sent")
                })
            }
            // `unix-dgram-pair-send=PATH`: a datagram socketpair's end sends "probe" to PATH.
            "unix-dgram-pair-send" => {
                from_io(std::os::unix::net::UnixDatagram::pair().and_then(|(a, _b)| a.send_to(b"probe", arg)), |n| {
                    format!("sent {n}")
                })
            }
            // `tfo-sendto=ADDR`: TCP Fast Open through sendto(MSG_FASTOPEN) to ADDR with "probe".
            "tfo-sendto" => {
                let addr: SocketAddr = arg.parse().ok()?;
                let sa = nix::sys::socket::SockaddrStorage::from(addr);
                let fd = match tcp_socket() {
                    Ok(fd) => fd,
                    Err(e) => return Some(from_io(Err::<(), _>(e), |_| String::new())),
                };
                let r = nix::sys::socket::sendto(
                    std::os::fd::AsRawFd::as_raw_fd(&fd),
                    b"probe",
                    &sa,
                    nix::sys::socket::MsgFlags::from_bits_retain(libc::MSG_FASTOPEN),
                );
                std::thread::sleep(Duration::from_millis(200));
                match r {
                    Ok(n) => Verdict { ok: true, errno: None, detail: format!("returned {n}") },
                    Err(e) => Verdict { ok: false, errno: Some(e as i32), detail: e.desc().to_owned() },
                }
            }
            // `tfo-connect=ADDR`: TCP_FASTOPEN_CONNECT, then connect and write "probe".
            "tfo-connect" => {
                let addr: SocketAddr = arg.parse().ok()?;
                let sa = nix::sys::socket::SockaddrStorage::from(addr);
                let fd = match tcp_socket() {
                    Ok(fd) => fd,
                    Err(e) => return Some(from_io(Err::<(), _>(e), |_| String::new())),
                };
                let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
                let one: libc::c_int = 1;
                let len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).unwrap_or(4);
                // SAFETY: setsockopt reads the int `one` we own.
                let r = unsafe {
                    libc::setsockopt(
                        raw,
                        libc::IPPROTO_TCP,
                        libc::TCP_FASTOPEN_CONNECT,
                        std::ptr::from_ref(&one).cast(),
                        len,
                    )
                };
                let step = if r < 0 {
                    Err(("setsockopt", std::io::Error::last_os_error()))
                } else if let Err(e) = nix::sys::socket::connect(raw, &sa) {
                    Err(("connect", std::io::Error::from(e)))
                } else {
                    std::fs::File::from(fd.try_clone().ok()?).write_all(b"probe").map_err(|e| ("write", e))
                };
                std::thread::sleep(Duration::from_millis(200));
                match step {
                    Ok(()) => Verdict { ok: true, errno: None, detail: String::from("sent") },
                    Err((what, e)) => Verdict { ok: false, errno: e.raw_os_error(), detail: format!("{what}: {e}") },
                }
            }
            // Foreign-ABI syscalls (x86_64 only), each in a forked child, since the filter kills
            // the process: `compat=i386-getpid`, `compat=i386-chmod:PATH` (chmod 04755 through
            // `int 0x80`), `compat=i386-socketcall-unix` (socketcall(SYS_SOCKET, AF_UNIX)),
            // `compat=i386-personality` (READ_IMPLIES_EXEC, undone), `compat=x32-getpid`,
            // `compat=x32-chmod:PATH` (the x32 bit on chmod 04755). The detail is `killed by
            // signal N` or `returned N`.
            "compat" => compat(arg)?,
            _ => return None,
        })
    }

    // In `checks/` beside this file (an inline module's path starts at a directory named after
    // it).
    #[path = "compat.rs"]
    mod compat;
    use compat::compat;
}

fn main() -> std::process::ExitCode {
    #[cfg(target_os = "linux")]
    for spec in std::env::args().skip(1) {
        let (check, arg) = spec.split_once('=').unwrap_or((spec.as_str(), ""));
        let Some(v) = checks::run(check, arg) else {
            eprintln!("sandbox-probe: unknown check or bad argument: {spec}");
            return std::process::ExitCode::from(2);
        };
        let line = serde_json::json!({"check": check, "arg": arg, "ok": v.ok, "errno": v.errno, "detail": v.detail});
        println!("{line}");
    }
    std::process::ExitCode::SUCCESS
}
