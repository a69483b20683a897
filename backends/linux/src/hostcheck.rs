//! Direct measurements of the host's layers for `sandbox probe`'s doctor (issue 15): whether
//! this process may create a user namespace, why Landlock is absent, whether the kernel has
//! seccomp filters, and what this process itself runs under.

/// Tries to create a user namespace: a child cloned with `CLONE_NEWUSER` that exits at once.
/// Err: the errno of the clone.
#[allow(unsafe_code, reason = "clone(2) of a child that only returns (see the SAFETY comment)")]
pub fn user_namespace() -> Result<(), nix::errno::Errno> {
    use nix::sched::CloneFlags;
    let mut stack = vec![0u8; 64 * 1024];
    // SAFETY: the child shares nothing with this process (no CLONE_VM: it has its own copy of the
    // memory) and only returns 0 from the callback, which nix turns into `_exit(0)`: it takes no
    // lock and allocates nothing, so cloning a multithreaded process is sound.
    let child =
        unsafe { nix::sched::clone(Box::new(|| 0), &mut stack, CloneFlags::CLONE_NEWUSER, Some(libc::SIGCHLD)) }?;
    let _ = nix::sys::wait::waitpid(child, None);
    Ok(())
}

/// Why Landlock is absent: the errno of `landlock_create_ruleset(NULL, 0, VERSION)` (ENOSYS: not
/// built in, or hidden by a filter; EOPNOTSUPP: built in but not enabled at boot); None when it
/// answers.
pub fn landlock_errno() -> Option<i32> {
    (crate::sys::landlock_abi() == 0).then(|| std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// Whether the kernel has seccomp filters (`/proc/sys/kernel/seccomp/actions_avail`).
pub fn seccomp_filters() -> bool {
    std::path::Path::new("/proc/sys/kernel/seccomp/actions_avail").exists()
}

/// This process's own seccomp mode (`Seccomp:` in `/proc/self/status`: 0 none, 2 a filter).
pub fn own_seccomp_mode() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("Seccomp:")).and_then(|v| v.trim().parse().ok())
}
