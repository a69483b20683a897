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
            "read" => from_io(std::fs::read_to_string(arg), |s| s.trim().chars().take(200).collect()),
            "list" => from_io(std::fs::read_dir(arg).map(|d| d.count()), |n| format!("{n} entries")),
            "mkdir" => from_io(std::fs::create_dir(arg), |_| String::from("created")),
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
            _ => return None,
        })
    }
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
