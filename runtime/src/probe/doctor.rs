//! `sandbox probe` as a doctor (issue 15): for each layer missing on this host, what is missing
//! (measured here, never assumed), which guarantee that costs, and the exact command or file
//! that fixes it.

use super::{Finding, HostProbe};

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

const SYSCTL_FILE: &str = "/etc/sysctl.d/60-sandbox-userns.conf";

/// The findings for a host whose probe gave `probe`, with the probe's own measurements: the
/// attempt to create a user namespace and the cgroups found.
pub(super) fn findings(
    probe: &HostProbe,
    userns: Result<(), nix::errno::Errno>,
    cgroups: &sandbox_linux::cgroups::Cgroups,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let in_container = ["/.dockerenv", "/run/.containerenv"].iter().any(|p| std::path::Path::new(p).exists());
    let wsl = read_trim("/proc/sys/kernel/osrelease").is_some_and(|r| r.to_lowercase().contains("microsoft"));
    let own_filter = sandbox_linux::hostcheck::own_seccomp_mode() == Some(2);
    let no_sandbox = "every guarantee: no sandboxed profile runs here (a sandboxed run fails closed with \
                      sandbox unavailable; only an acknowledged-unconfined profile runs)";

    // User namespaces: measured by creating one.
    match userns {
        Err(errno) => {
            let max = read_trim("/proc/sys/user/max_user_namespaces");
            let clone = read_trim("/proc/sys/kernel/unprivileged_userns_clone");
            let fix = if max.as_deref() == Some("0") {
                format!(
                    "user.max_user_namespaces is 0: sudo sysctl -w user.max_user_namespaces=15000 && echo \
                     user.max_user_namespaces=15000 | sudo tee {SYSCTL_FILE}"
                )
            } else if clone.as_deref() == Some("0") {
                format!(
                    "kernel.unprivileged_userns_clone is 0: sudo sysctl -w kernel.unprivileged_userns_clone=1 && echo \
                     kernel.unprivileged_userns_clone=1 | sudo tee {SYSCTL_FILE}"
                )
            } else if own_filter && in_container {
                String::from(
                    "this container's seccomp profile refuses them (Seccomp: 2 in /proc/self/status): run the \
                     container with --security-opt seccomp=unconfined (or a profile that allows clone and unshare \
                     with CLONE_NEWUSER), and --security-opt apparmor=unconfined",
                )
            } else if own_filter {
                String::from(
                    "a seccomp filter on this process refuses them (Seccomp: 2 in /proc/self/status: a sandbox or \
                     supervisor around this one): run it outside that filter, or allow clone and unshare with \
                     CLONE_NEWUSER in it",
                )
            } else {
                String::from("a kernel built with CONFIG_USER_NS=y (every mainstream distribution kernel has it)")
            };
            out.push(Finding {
                layer: "user-namespaces",
                missing: format!("a user namespace cannot be created here (clone(CLONE_NEWUSER): {errno})"),
                costs: String::from(no_sandbox),
                fix,
            });
        }
        Ok(()) => {
            // Ubuntu 23.10 on: the namespace is made, but AppArmor takes its capabilities unless
            // the binary has a profile that allows `userns`.
            let restricted =
                read_trim("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1");
            if restricted && !probe.available {
                let exe = std::env::current_exe()
                    .map_or_else(|_| String::from("/path/to/sandbox"), |p| p.display().to_string());
                out.push(Finding {
                    layer: "user-namespaces",
                    missing: String::from(
                        "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns \
                         = 1) and this binary has no profile that allows them",
                    ),
                    costs: String::from(no_sandbox),
                    fix: format!(
                        "write /etc/apparmor.d/sandbox with:\n  abi <abi/4.0>,\n  include <tunables/global>\n  profile \
                         sandbox {exe} flags=(unconfined) {{\n    userns,\n    include if exists <local/sandbox>\n  }}\n\
                         then: sudo apparmor_parser -r /etc/apparmor.d/sandbox"
                    ),
                });
            }
        }
    }

    // Landlock: the errno of the version query says why it is absent.
    if probe.landlock_abi.is_none() {
        let lsm = read_trim("/sys/kernel/security/lsm").unwrap_or_default();
        let (missing, fix) = match sandbox_linux::hostcheck::landlock_errno() {
            Some(e) if e == nix::errno::Errno::EOPNOTSUPP as i32 => (
                format!("Landlock is built into this kernel but not enabled at boot (the active LSMs: {lsm})"),
                format!(
                    "add landlock to the lsm= kernel parameter: lsm={}landlock (for GRUB: append it to \
                     GRUB_CMDLINE_LINUX in /etc/default/grub, then sudo update-grub and reboot)",
                    if lsm.is_empty() { String::new() } else { format!("{lsm},") }
                ),
            ),
            errno => (
                format!(
                    "this kernel has no Landlock (landlock_create_ruleset: {}), or a filter hides it",
                    errno.map_or_else(
                        || String::from("no answer"),
                        |e| std::io::Error::from_raw_os_error(e).to_string()
                    )
                ),
                format!(
                    "Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK=y and landlock in its lsm= list \
                     (active now: {})",
                    if lsm.is_empty() { "unknown" } else { lsm.as_str() }
                ),
            ),
        };
        out.push(Finding {
            layer: "landlock",
            missing,
            costs: String::from(
                "level degraded: no Landlock layer under the mount view (a write-only workspace is masked, broad \
                 network grants are refused, abstract unix sockets and signals are not scoped)",
            ),
            fix,
        });
    }

    // seccomp: the kernel's, then the probe container's.
    if !sandbox_linux::hostcheck::seccomp_filters() || (probe.available && !probe.seccomp) {
        out.push(Finding {
            layer: "seccomp",
            missing: String::from("seccomp filters are not available (no /proc/sys/kernel/seccomp/actions_avail)"),
            costs: String::from(
                "level degraded: the kernel surface is not narrowed, unix sockets and vsock are not closed",
            ),
            fix: String::from("a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y"),
        });
    }

    // cgroup: what the backend found, and why not.
    if let Some(why) = cgroups.why.clone() {
        let (missing, fix) = match why.split_once("; fix: ") {
            Some((m, f)) => (m.to_owned(), f.to_owned()),
            None => (why.clone(), why),
        };
        let costs = if cgroups.parent.is_none() {
            String::from(
                "resource-limits is not claimed: memory and CPU are unbounded; the process count is bounded by \
                 RLIMIT_NPROC in the run's own user namespace, and the pid namespace still ends every process of a \
                 run",
            )
        } else {
            format!(
                "resource-limits is not claimed: no {} limit{}",
                cgroups.missing.join(", no "),
                if cgroups.needs_nproc() { " (the process count is bounded by RLIMIT_NPROC instead)" } else { "" }
            )
        };
        out.push(Finding { layer: "cgroup", missing, costs, fix });
    }

    if in_container && out.iter().any(|f| f.layer != "cgroup") {
        out.push(Finding {
            layer: "container",
            missing: String::from(
                "this process runs inside a container (/.dockerenv or /run/.containerenv) without what the layers \
                 above need",
            ),
            costs: String::from("the layers above"),
            fix: String::from(
                "docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt \
                 systempaths=unconfined --cgroupns=private ... (podman: the same options), or run on the host",
            ),
        });
    }
    if wsl && !out.is_empty() {
        out.push(Finding {
            layer: "wsl",
            missing: String::from("this is WSL2, whose default kernel set-up lacks some of the layers above"),
            costs: String::from("the layers above"),
            fix: String::from(
                "in %UserProfile%\\.wslconfig: [wsl2] kernelCommandLine = cgroup_no_v1=all \
                 systemd.unified_cgroup_hierarchy=1; in /etc/wsl.conf: [boot] systemd=true; then wsl --shutdown",
            ),
        });
    }
    out
}
