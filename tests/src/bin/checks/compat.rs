//! The foreign-ABI checks (`i386-*` through `int 0x80`, `x32-*` with the x32 bit): each runs
//! in a forked child, which the policy is expected to kill.

use super::Verdict;
#[cfg(target_arch = "x86_64")]
use super::{from_ret, sys};

/// One `int 0x80` (i386 ABI) syscall with three arguments.
///
/// # Safety
/// Pointer arguments must point below 4 GiB (the i386 ABI passes 32-bit words) to memory the
/// caller owns, of the size the syscall uses.
#[cfg(target_arch = "x86_64")]
unsafe fn int80(nr: i64, a: i64, b: i64, c: i64) -> i64 {
    let ret: i64;
    // SAFETY: the caller vouches for the pointers; rbx (reserved by LLVM) is swapped in and
    // restored around the trap, and r8-r11 are declared clobbered (older kernels zeroed them).
    unsafe {
        std::arch::asm!(
            "xchg {a}, rbx",
            "int 0x80",
            "xchg {a}, rbx",
            a = inout(reg) a => _,
            inlateout("rax") nr => ret,
            in("rcx") b,
            in("rdx") c,
            out("r8") _, out("r9") _, out("r10") _, out("r11") _,
        );
    }
    ret
}

#[cfg(target_arch = "x86_64")]
pub fn compat(arg: &str) -> Option<Verdict> {
    let (what, path) = arg.split_once(':').unwrap_or((arg, ""));
    // A page below 4 GiB for the i386 ABI's 32-bit pointers: the path, or socketcall's args.
    // SAFETY: an anonymous private mapping; nothing else uses the range.
    let low = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_32BIT,
            -1,
            0,
        )
    };
    if low == libc::MAP_FAILED || path.len() >= 4096 {
        return Some(from_ret(-1));
    }
    let low = low.cast::<u8>();
    // SAFETY: `path` fits in the page just mapped (checked above); the byte after it stays 0.
    unsafe { std::ptr::copy_nonoverlapping(path.as_ptr(), low, path.len()) };
    let addr = low as i64;
    let cpath = std::ffi::CString::new(path).ok()?;
    // SAFETY: fork in this single-threaded probe; the child only makes one syscall and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Some(from_ret(-1));
    }
    if pid == 0 {
        let ret: i64 = match what {
            // SAFETY: getpid takes no argument.
            "i386-getpid" => unsafe { int80(20, 0, 0, 0) },
            // SAFETY: the path is NUL-terminated in the low page above.
            "i386-chmod" => unsafe { int80(15, addr, 0o4755, 0) },
            "i386-socketcall-unix" => {
                // socketcall's three u32 arguments (AF_UNIX, SOCK_STREAM, 0) at the start of
                // the page we own (the path is empty here).
                let words: [u32; 3] = [1, 1, 0];
                // SAFETY: 12 bytes into the 4096-byte page mapped above.
                unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), low.cast::<u32>(), 3) };
                // SAFETY: socketcall(SYS_SOCKET = 1, args in the low page).
                unsafe { int80(102, 1, addr, 0) }
            }
            "i386-personality" => {
                // SAFETY: personality takes an integer; the old one is restored at once.
                let old = unsafe { int80(136, 0x0040_0000, 0, 0) };
                if old >= 0 {
                    // SAFETY: as above.
                    unsafe { int80(136, old, 0, 0) };
                }
                old
            }
            // SAFETY: getpid with the x32 bit; no arguments.
            "x32-getpid" => unsafe { sys(0x4000_0000 | 39, &[]) },
            // SAFETY: chmod with the x32 bit, on a NUL-terminated path we own.
            "x32-chmod" => unsafe { sys(0x4000_0000 | 90, &[cpath.as_ptr() as libc::c_long, 0o4755]) },
            _ => -1,
        };
        // libc::syscall answers -1 and sets errno; int 0x80 answers -errno itself.
        let ret = if what.starts_with("x32") && ret == -1 {
            -i64::from(std::io::Error::last_os_error().raw_os_error().unwrap_or(200))
        } else {
            ret
        };
        let code = if ret >= 0 { 0 } else { i32::try_from((-ret).min(200)).unwrap_or(200) };
        // SAFETY: leaves the child at once, running no destructor of the parent's state.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked, writing its status into `status`.
    if unsafe { libc::waitpid(pid, &raw mut status, 0) } < 0 {
        return Some(from_ret(-1));
    }
    Some(if libc::WIFSIGNALED(status) {
        Verdict { ok: false, errno: None, detail: format!("killed by signal {}", libc::WTERMSIG(status)) }
    } else {
        let code = libc::WEXITSTATUS(status);
        let errno = (code != 0).then_some(code);
        Verdict { ok: code == 0, errno, detail: format!("exited {code}") }
    })
}

#[cfg(not(target_arch = "x86_64"))]
pub fn compat(_arg: &str) -> Option<Verdict> {
    Some(Verdict { ok: false, errno: None, detail: String::from("not x86_64") })
}
