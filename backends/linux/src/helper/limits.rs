//! The spawn's cgroup limits as the helper applies them: written where the request says so,
//! read back, and checked against what was asked.

use super::host::Host;
use super::spawn::SetupError;
use crate::protocol::Request;

/// Writes the limits the helper is to write (rootless: the runtime would also write device
/// rules it may not), every one of them even after a failure. A failure counts only when the
/// limits are required; the last one is the error.
pub(super) fn write<H: Host>(host: &mut H, request: &Request) -> Result<(), SetupError> {
    let mut failure = Ok(());
    for limit in request.limits.iter().filter(|l| l.write) {
        if let Err(error) = host.write_cgroup(&limit.file, &limit.value.to_string()) {
            if request.require_limits {
                failure = Err(SetupError::LimitNotWritten { file: limit.file.clone(), error });
            }
        }
    }
    failure
}

/// What each limit file of the request reads now, trimmed, in order (None: unreadable).
pub(super) fn read_back<H: Host>(host: &mut H, request: &Request) -> Vec<Option<String>> {
    request.limits.iter().map(|l| host.read_cgroup(&l.file).ok().map(|s| s.trim().to_owned())).collect()
}

/// Whether every limit reads back as set (`readback` from [`read_back`]); the error names the
/// last one that does not.
pub(super) fn check(request: &Request, readback: &[Option<String>]) -> Result<(), SetupError> {
    let mut failure = Ok(());
    for (limit, read) in request.limits.iter().zip(readback) {
        if !read.as_deref().is_some_and(|r| limit.holds(r)) {
            failure =
                Err(SetupError::LimitNotHeld { file: limit.file.clone(), read: read.clone(), expected: limit.value });
        }
    }
    failure
}
