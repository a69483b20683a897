use super::*;

/// Runs the classic-BPF subset the guard's program uses over one `seccomp_data`.
fn run(prog: &[sock_filter], nr: i32, arch: u32, args: [u64; 6]) -> u32 {
    let mut data = Vec::new();
    data.extend(nr.to_le_bytes());
    data.extend(arch.to_le_bytes());
    data.extend(0u64.to_le_bytes());
    for a in args {
        data.extend(a.to_le_bytes());
    }
    let mut acc = 0u32;
    let mut pc = 0usize;
    loop {
        let i = &prog[pc];
        match i.code {
            LD_W_ABS => {
                let k = i.k as usize;
                acc = u32::from_le_bytes(data[k..k + 4].try_into().unwrap());
                pc += 1;
            }
            JEQ_K | JGE_K | JSET_K => {
                let taken = match i.code {
                    JEQ_K => acc == i.k,
                    JGE_K => acc >= i.k,
                    _ => acc & i.k != 0,
                };
                pc += 1 + usize::from(if taken { i.jt } else { i.jf });
            }
            RET_K => return i.k,
            other => panic!("unexpected instruction {other:#x}"),
        }
    }
}

fn n(x: libc::c_long) -> i32 {
    i32::try_from(x).unwrap()
}

#[test]
fn the_filter_sends_creating_and_writing_calls_and_allows_the_rest() {
    let p = program(true, false, false);
    assert!(p.len() < 100);
    let notify = libc::SECCOMP_RET_USER_NOTIF;
    let allow = libc::SECCOMP_RET_ALLOW;
    let kill = libc::SECCOMP_RET_KILL_PROCESS;
    let creat = u64::try_from(libc::O_CREAT).unwrap();
    let wr = u64::try_from(libc::O_WRONLY).unwrap();
    let a = |i: usize, v: u64| {
        let mut args = [0u64; 6];
        args[i] = v;
        args
    };
    let flag = |f: i32| u64::try_from(f).unwrap();
    assert_eq!(run(&p, n(libc::SYS_openat), NATIVE_ARCH, a(2, creat | wr)), notify);
    // Opens for writing too (a protected file the host replaced is no mount point).
    for f in [libc::O_WRONLY, libc::O_RDWR, libc::O_TRUNC, libc::O_WRONLY | libc::O_APPEND] {
        assert_eq!(run(&p, n(libc::SYS_openat), NATIVE_ARCH, a(2, flag(f))), notify, "{f:#x}");
    }
    // Reads, O_PATH and O_TMPFILE go to the kernel.
    for f in [
        libc::O_RDONLY,
        libc::O_RDONLY | libc::O_DIRECTORY,
        libc::O_PATH | libc::O_CREAT | libc::O_WRONLY,
        libc::O_TMPFILE | libc::O_RDWR,
    ] {
        assert_eq!(run(&p, n(libc::SYS_openat), NATIVE_ARCH, a(2, flag(f))), allow, "{f:#x}");
    }
    // Only the low 32 bits of the int flags count.
    assert_eq!(run(&p, n(libc::SYS_openat), NATIVE_ARCH, a(2, creat << 32)), allow);
    assert_eq!(run(&p, n(libc::SYS_openat), NATIVE_ARCH, a(2, (1 << 32) | creat)), notify);
    assert_eq!(
        run(&p, n(libc::SYS_openat2), NATIVE_ARCH, [0; 6]),
        libc::SECCOMP_RET_ERRNO | u32::try_from(libc::ENOSYS).unwrap()
    );
    for &call in NOTIFIED {
        assert_eq!(run(&p, n(call), NATIVE_ARCH, [0; 6]), notify, "{call}");
    }
    for call in [libc::SYS_read, libc::SYS_write, libc::SYS_close, libc::SYS_fchmodat] {
        assert_eq!(run(&p, n(call), NATIVE_ARCH, [creat; 6]), allow, "{call}");
    }
    assert_eq!(run(&p, n(libc::SYS_mkdirat), 0x4000_0003, [0; 6]), kill);
    // With denied roots, every open but O_PATH and O_TMPFILE.
    let r = program(true, true, false);
    for f in [libc::O_RDONLY, libc::O_RDONLY | libc::O_DIRECTORY, libc::O_WRONLY, libc::O_CREAT] {
        assert_eq!(run(&r, n(libc::SYS_openat), NATIVE_ARCH, a(2, flag(f))), notify, "{f:#x}");
    }
    for f in [libc::O_PATH, libc::O_TMPFILE | libc::O_RDWR] {
        assert_eq!(run(&r, n(libc::SYS_openat), NATIVE_ARCH, a(2, flag(f))), allow, "{f:#x}");
    }
    assert_eq!(run(&r, n(libc::SYS_read), NATIVE_ARCH, [0; 6]), allow);
    #[cfg(target_arch = "x86_64")]
    {
        assert_eq!(run(&p, n(libc::SYS_open), NATIVE_ARCH, a(1, creat)), notify);
        assert_eq!(run(&p, n(libc::SYS_open), NATIVE_ARCH, a(2, creat)), allow);
        assert_eq!(run(&r, n(libc::SYS_open), NATIVE_ARCH, a(1, 0)), notify);
        assert_eq!(run(&p, 0x4000_0000 | n(libc::SYS_mkdir), NATIVE_ARCH, [0; 6]), kill);
    }
}

#[test]
fn the_network_watch_sends_connect_and_addressed_sendto() {
    let notify = libc::SECCOMP_RET_USER_NOTIF;
    let allow = libc::SECCOMP_RET_ALLOW;
    let kill = libc::SECCOMP_RET_KILL_PROCESS;
    let sendto = |addr: u64| [3, 0x1000, 10, 0, addr, 16];
    for creating in [false, true] {
        let p = program(creating, false, true);
        assert!(p.len() < 100);
        assert_eq!(run(&p, n(libc::SYS_connect), NATIVE_ARCH, [3, 0x1000, 16, 0, 0, 0]), notify);
        assert_eq!(run(&p, n(libc::SYS_connect), NATIVE_ARCH, [0; 6]), notify);
        assert_eq!(run(&p, n(libc::SYS_sendto), NATIVE_ARCH, sendto(0x7fff_0000_1000)), notify);
        // Either half of the pointer counts.
        assert_eq!(run(&p, n(libc::SYS_sendto), NATIVE_ARCH, sendto(0x1000)), notify);
        assert_eq!(run(&p, n(libc::SYS_sendto), NATIVE_ARCH, sendto(1 << 32)), notify);
        // `send` (a null address) is not sent.
        assert_eq!(run(&p, n(libc::SYS_sendto), NATIVE_ARCH, sendto(0)), allow);
        for call in [libc::SYS_sendmsg, libc::SYS_socket, libc::SYS_bind, libc::SYS_read, libc::SYS_recvfrom] {
            assert_eq!(run(&p, n(call), NATIVE_ARCH, [1; 6]), allow, "{call}");
        }
        assert_eq!(run(&p, n(libc::SYS_connect), 0x4000_0003, [0; 6]), kill);
        let creat = u64::try_from(libc::O_CREAT).unwrap();
        let mut open_args = [0u64; 6];
        open_args[2] = creat;
        let expected = if creating { notify } else { allow };
        assert_eq!(run(&p, n(libc::SYS_openat), NATIVE_ARCH, open_args), expected);
        assert_eq!(run(&p, n(libc::SYS_mkdirat), NATIVE_ARCH, [0; 6]), expected);
        let openat2 = if creating { libc::SECCOMP_RET_ERRNO | u32::try_from(libc::ENOSYS).unwrap() } else { allow };
        assert_eq!(run(&p, n(libc::SYS_openat2), NATIVE_ARCH, [0; 6]), openat2);
    }
    // Without the network watch, network calls are not sent.
    let p = program(true, false, false);
    assert_eq!(run(&p, n(libc::SYS_connect), NATIVE_ARCH, [0; 6]), allow);
    assert_eq!(run(&p, n(libc::SYS_sendto), NATIVE_ARCH, sendto(0x1000)), allow);
}

#[test]
fn addresses_are_read_whole_or_not_at_all() {
    let mem = std::fs::File::open("/proc/self/mem").unwrap();
    let data: Vec<u8> = (0..200u8).collect();
    assert_eq!(read_bytes(mem.as_fd(), data.as_ptr() as u64, 128).unwrap(), data[..128]);
    assert_eq!(read_bytes(mem.as_fd(), data.as_ptr() as u64, 0).unwrap(), Vec::<u8>::new());
    assert_eq!(read_bytes(mem.as_fd(), 8, 16).unwrap_err(), Errno::EFAULT);
    assert_eq!(read_bytes(mem.as_fd(), u64::MAX - 4, 16).unwrap_err(), Errno::EFAULT);
}

#[test]
fn calls_decode_with_int_arguments_truncated() {
    let fdcwd = u64::from(libc::AT_FDCWD.cast_unsigned());
    let creat = u64::try_from(libc::O_CREAT).unwrap();
    assert_eq!(
        decode(libc::SYS_openat, &[fdcwd | (7 << 32), 0x1000, creat | (1 << 40), 0o644, 0, 0]),
        Some(Call::Open { dirfd: libc::AT_FDCWD, path: 0x1000, flags: libc::O_CREAT, mode: 0o644 })
    );
    assert_eq!(
        decode(libc::SYS_renameat2, &[3, 1, 4, 2, 2, 0]),
        Some(Call::Rename { olddirfd: 3, old: 1, newdirfd: 4, new: 2, flags: 2 })
    );
    assert_eq!(decode(libc::SYS_symlinkat, &[1, 5, 2, 0, 0, 0]), Some(Call::Symlink { target: 1, dirfd: 5, path: 2 }));
    assert_eq!(
        decode(libc::SYS_unlinkat, &[fdcwd, 9, u64::from(libc::AT_REMOVEDIR.cast_unsigned()) | (1 << 33), 0, 0, 0]),
        Some(Call::Unlink { dirfd: libc::AT_FDCWD, path: 9, flags: libc::AT_REMOVEDIR })
    );
    #[cfg(target_arch = "x86_64")]
    {
        assert_eq!(
            decode(libc::SYS_rmdir, &[9, 0, 0, 0, 0, 0]),
            Some(Call::Unlink { dirfd: libc::AT_FDCWD, path: 9, flags: libc::AT_REMOVEDIR })
        );
        assert_eq!(
            decode(libc::SYS_unlink, &[9, 0, 0, 0, 0, 0]),
            Some(Call::Unlink { dirfd: libc::AT_FDCWD, path: 9, flags: 0 })
        );
    }
    assert_eq!(decode(libc::SYS_read, &[0; 6]), None);
}

#[test]
fn strings_are_read_from_memory_up_to_their_nul() {
    let mem = std::fs::File::open("/proc/self/mem").unwrap();
    let text = b"hello/.envrc\0tail".to_vec();
    let addr = text.as_ptr() as u64;
    assert_eq!(read_string(mem.as_fd(), addr).unwrap(), b"hello/.envrc");
    assert_eq!(read_string(mem.as_fd(), 0).unwrap_err(), Errno::EFAULT);
    assert_eq!(read_string(mem.as_fd(), 8).unwrap_err(), Errno::EFAULT);
    let long = vec![b'a'; PATH_MAX + 10];
    assert_eq!(read_string(mem.as_fd(), long.as_ptr() as u64).unwrap_err(), Errno::ENAMETOOLONG);
    let mut exact = vec![b'a'; PATH_MAX - 1];
    exact.push(0);
    assert_eq!(read_string(mem.as_fd(), exact.as_ptr() as u64).unwrap().len(), PATH_MAX - 1);
}

#[test]
fn a_sockets_protocol_is_read_through_its_threads_proc_directory() {
    use std::os::fd::AsRawFd;
    let proc_dir =
        notify::open_at(None, c"/proc/thread-self", libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("[::1]:0").unwrap();
    let (unix, _) = std::os::unix::net::UnixStream::pair().unwrap();
    let file = std::fs::File::open("/proc/self/status").unwrap();
    let name = |fd: i32| notify::sock_proto_name(proc_dir.as_fd(), fd);
    assert_eq!(name(tcp.as_raw_fd()).as_deref(), Some("TCP"));
    assert_eq!(name(udp.as_raw_fd()).as_deref(), Some("UDPv6"));
    assert!(name(unix.as_raw_fd()).is_some_and(|n| n.starts_with("UNIX")), "{:?}", name(unix.as_raw_fd()));
    assert_eq!(name(file.as_raw_fd()), None);
    assert_eq!(name(-1), None);
    assert_eq!(name(1 << 20), None);
    assert_eq!(direct::transport(name(tcp.as_raw_fd()).as_deref()), crate::status::Transport::Tcp);
}

/// A directory number given out again at once (ext4 hands the number a removed directory freed
/// to the next one made beside it, often in the same tick of the clock birth times come from)
/// names another directory by [`born`]: the generation differs. The control: the numbers were
/// the same (on ext4; elsewhere printed), and the birth times sometimes.
#[test]
fn a_number_given_out_again_names_another_directory() {
    let area = std::path::PathBuf::from(format!("/var/tmp/sbx-born-{}", std::process::id()));
    std::fs::create_dir(&area).unwrap();
    let identity = |name: &str| {
        let path = area.join(name);
        std::fs::create_dir(&path).unwrap();
        let fd = std::fs::File::open(&path).map(OwnedFd::from).unwrap();
        let b = born(&fd);
        drop(fd);
        std::fs::remove_dir(&path).unwrap();
        b
    };
    let (mut same_number, mut same_birth, mut same) = (0, 0, 0);
    for _ in 0..200 {
        let (Some(a), Some(b)) = (identity("a"), identity("b")) else {
            println!("no birth times on /var/tmp: nothing to compare");
            std::fs::remove_dir(&area).unwrap();
            return;
        };
        same_number += usize::from((a.0, a.1) == (b.0, b.1));
        same_birth += usize::from((a.0, a.1, a.2, a.3) == (b.0, b.1, b.2, b.3));
        same += usize::from(a == b);
    }
    let ext4 = nix::sys::statfs::statfs(&area).unwrap().filesystem_type() == nix::sys::statfs::EXT4_SUPER_MAGIC;
    std::fs::remove_dir(&area).unwrap();
    println!(
        "200 pairs: {same_number} with the same number, {same_birth} with the same birth too, {same} the same by born()"
    );
    assert_eq!(same, 0);
    assert!(!ext4 || same_number > 0, "no number was given out again on ext4: nothing was compared");
}

/// A directory the run made and then removed is not the run's any more: another made with its
/// number during the run is the host's, until the run makes one with it again.
#[test]
fn a_directory_the_run_removed_is_not_the_runs() {
    let mut owned = Owned::new();
    let later = (owned.since.0 + 1, 0);
    let b: Born = (1, 42, later.0, later.1, None);
    owned.dirs.insert(b);
    assert!(owned.run_made(&b) && !owned.host_born(&b));
    owned.removed(&b);
    assert!(!owned.run_made(&b) && owned.host_born(&b));
    // Removing a directory the run did not make records nothing.
    let other: Born = (1, 43, later.0, later.1, None);
    owned.removed(&other);
    assert!(!owned.freed.contains(&(1, 43)));
    // Made again by the run (see `Guard::made_dir`).
    owned.freed.remove(&(b.0, b.1));
    owned.dirs.insert(b);
    assert!(owned.run_made(&b));
    // Born before the run: never the host's of this run.
    let old: Born = (1, 44, owned.since.0 - 1, 0, None);
    assert!(!owned.host_born(&old));
}

/// What the run made its own holds a handle while there are handles to spare, counts without one
/// beyond, and lets its handle go when the run removes it.
#[test]
fn the_runs_own_hold_handles_up_to_a_bound_and_let_them_go_when_removed() {
    let mut owned = Owned::new();
    let handle = || std::fs::File::open("/").map(OwnedFd::from).unwrap();
    let key = |i: u64| -> Born { (1, i, 1, 0, Some(7)) };
    for i in 0..(MAX_HELD as u64 + 10) {
        owned.make_own(key(i), handle());
    }
    assert_eq!(owned.own.len(), MAX_HELD + 10);
    assert_eq!(owned.held, MAX_HELD);
    assert!(owned.own[&key(0)].is_some() && owned.own[&key(MAX_HELD as u64 + 1)].is_none());
    // Recorded twice: once.
    owned.make_own(key(0), handle());
    assert_eq!((owned.own.len(), owned.held), (MAX_HELD + 10, MAX_HELD));
    // Removed by the run: gone, its handle free for the next.
    owned.removed(&key(0));
    assert!(!owned.own.contains_key(&key(0)));
    assert_eq!(owned.held, MAX_HELD - 1);
    owned.make_own(key(100_000), handle());
    assert!(owned.own[&key(100_000)].is_some());
    // The same number with another generation (given out again) is not the run's own.
    assert!(!owned.own.contains_key(&(1, 1, 1, 0, Some(8))));
}

/// What the user's `--continue` would take from an operation's state: a todo without a line that
/// runs a program or writes a ref, however git would read its command, and strategies and ref
/// names that stay names.
#[test]
fn an_operations_state_is_safe_only_without_a_program_or_another_ref() {
    let dir = std::env::temp_dir().join(format!("sandbox-op-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = |files: &[(&str, &str)]| {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            std::fs::remove_file(e.path()).unwrap();
        }
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let fd = std::fs::File::open(&dir).unwrap();
        operation_is_safe(std::os::fd::AsFd::as_fd(&fd), b"rebase-merge")
    };
    let todo = "pick 1234 a\nbreak\n# exec in a comment\nlabel onto\nreset onto\nmerge -C 5678 x\nfixup -C 9 y\n";
    assert!(state(&[("git-rebase-todo", todo), ("head-name", "refs/heads/topic\n"), ("strategy", "ort\n")]));
    assert!(state(&[("head-name", "detached HEAD\n")]), "a detached rebase");
    for bad in [
        "exec id\n",
        "x id\n",
        "  \tx\tid\n",
        "exec\r\n",
        "\u{feff}exec id\n",
        "exec\0",
        "update-ref refs/replace/1\n",
        "u refs/x\n",
    ] {
        assert!(!state(&[("git-rebase-todo", &format!("pick 1 a\n{bad}"))]), "{bad:?}");
        assert!(!state(&[("todo", bad)]), "sequencer: {bad:?}");
    }
    assert!(!state(&[("strategy", "../evil\n")]));
    assert!(!state(&[("strategy_opts", "--x=a\\b\n")]));
    assert!(!state(&[("head-name", "refs/replace/1234\n")]));
    assert!(!state(&[("head-name", "refs/heads/../../x\n")]));
    assert!(!state(&[("update-refs", "refs/heads/a\n1\n2\nrefs/tags/v1\n1\n2\n")]));
    assert!(state(&[("update-refs", "refs/heads/a\n1\n2\n")]));
    for bad in [
        " '--unsafe-paths'",
        " '--uns'",
        "'--directory=../x'",
        "'--dir=/x'",
        "'--directory=/x'",
        "'--build-fake-ancestor=/home/u/.profile'",
        "'--b=/x'",
        "'-C3' '--output=x'",
        "--reject",
        "'--reject",
        "'-C'",
    ] {
        assert!(!state(&[("apply-opt", bad)]), "{bad}");
    }
    for good in
        ["", "\n", "'--whitespace=fix' '-C3' '-p2'\n", "'--directory=sub/dir' '--exclude=a'\\''b'", "'--reject'"]
    {
        assert!(state(&[("apply-opt", good)]), "{good}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
