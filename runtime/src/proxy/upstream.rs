//! The way out, the same for both protocols: the allowlist check, name resolution (pins, then
//! the system resolver keeping only public addresses), the connection to the origin and the
//! byte relay between the workload and the origin.
//!
//! There is no fallback: a request that is not allowed, resolves to nothing usable or cannot
//! be connected is refused, and nothing else is tried.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use sandbox_bundle::Host;

use super::{Connection, ProxyPolicy, is_public};

/// How long one connection attempt to an origin may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a relay may see no bytes in either direction before it ends.
pub(super) const RELAY_IDLE: Duration = Duration::from_secs(300);

/// The size of a relay's buffer.
pub(super) const RELAY_BUFFER: usize = 16 * 1024;

/// Why no connection to the origin was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// No allowed pattern names the target.
    NotAllowed,
    /// The name resolved only to non-public addresses.
    NotPublic,
    /// The name did not resolve.
    NoSuchName,
    /// Every address failed; `refused` when the last one refused the connection.
    Unreachable {
        /// The last attempt was refused (rather than timing out or unreachable).
        refused: bool,
    },
    /// The proxy is stopping.
    Stopping,
}

/// Opens a connection to `host:port` for `conn` when the policy allows it.
pub(super) fn open(conn: &Connection<'_>, host: &Host, port: u16) -> Result<TcpStream, Refusal> {
    let policy = &conn.shared.policy;
    if !policy.allow.iter().any(|pattern| pattern.matches(host, port)) {
        return Err(Refusal::NotAllowed);
    }
    let addrs = addresses(policy, host, port)?;
    connect_any(conn, &addrs)
}

/// The addresses `/etc/hosts` gives `name` (its lines `<address> <name> <alias>…`, `#`
/// comments, names compared without case), None when it names none.
fn hosts_file(name: &str) -> Option<Vec<std::net::IpAddr>> {
    let text = std::fs::read_to_string("/etc/hosts").ok()?;
    hosts_lookup(&text, name)
}

/// [`hosts_file`] on the file's text.
pub(super) fn hosts_lookup(text: &str, name: &str) -> Option<Vec<std::net::IpAddr>> {
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(Ok(ip)) = words.next().map(str::parse::<std::net::IpAddr>) else { continue };
        if words.any(|w| w.trim_end_matches('.').eq_ignore_ascii_case(name)) && !found.contains(&ip) {
            found.push(ip);
        }
    }
    (!found.is_empty()).then_some(found)
}

/// The addresses to try for an allowed target: an IP literal as it is (an allowed pattern named
/// it), a pinned name's pinned addresses, else the public addresses the name resolves to.
fn addresses(policy: &ProxyPolicy, host: &Host, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
    let name = match host {
        Host::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, port)]),
        Host::Name(name) => name,
    };
    if let Some((_, ips)) = policy.pins.iter().find(|(pinned, _)| pinned == host) {
        return Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect());
    }
    // The host's own names first (`/etc/hosts`), then DNS fully qualified (a trailing dot): the
    // resolver's search list must not turn an allowed name into another one (`x.example.com`
    // into `x.example.com.corp.test` under `ndots`), and glibc's files lookup does not match a
    // name with its trailing dot.
    let found: Vec<SocketAddr> = match hosts_file(name) {
        Some(ips) => ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect(),
        None => match (format!("{name}.").as_str(), port).to_socket_addrs() {
            Ok(found) => found.collect(),
            Err(e) => {
                tracing::debug!(%name, "sandbox proxy: the name does not resolve: {e}");
                return Err(Refusal::NoSuchName);
            }
        },
    };
    if found.is_empty() {
        return Err(Refusal::NoSuchName);
    }
    let public: Vec<SocketAddr> = found.into_iter().filter(|addr| is_public(addr.ip())).collect();
    if public.is_empty() { Err(Refusal::NotPublic) } else { Ok(public) }
}

/// Connects to the first address that answers, in order.
fn connect_any(conn: &Connection<'_>, addrs: &[SocketAddr]) -> Result<TcpStream, Refusal> {
    let mut refused = false;
    for addr in addrs {
        if conn.shared.stopping() {
            return Err(Refusal::Stopping);
        }
        match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
            Ok(stream) if conn.shared.track(conn.id, &stream) => return Ok(stream),
            Ok(_) => return Err(Refusal::Stopping),
            Err(e) => {
                tracing::debug!(%addr, "sandbox proxy: connecting failed: {e}");
                refused = e.kind() == io::ErrorKind::ConnectionRefused;
            }
        }
    }
    Err(Refusal::Unreachable { refused })
}

/// When a relay ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RelayEnd {
    /// When both directions have ended (a tunnel; half-closes are passed on).
    BothClosed,
    /// When the origin has finished sending (one forwarded HTTP request and its response),
    /// and nothing more of the workload's goes to the origin (its request and body were sent
    /// whole before: a second, pipelined request must not ride along).
    OriginOnly,
}

/// What moving one chunk did.
enum Pumped {
    /// Bytes moved (or nothing, spuriously).
    Moved,
    /// The source ended.
    Ended,
    /// The destination failed: the relay is over.
    Broken,
}

/// Copies bytes both ways between the workload and the origin until `end` says, either side
/// fails, the proxy stops (it shuts both sockets down) or nothing moves for [`RELAY_IDLE`].
pub(super) fn relay(client: &TcpStream, origin: &TcpStream, end: RelayEnd) {
    for stream in [client, origin] {
        let set = stream.set_read_timeout(Some(RELAY_IDLE)).and_then(|()| stream.set_write_timeout(Some(RELAY_IDLE)));
        if let Err(e) = set {
            tracing::debug!("sandbox proxy: could not set relay timeouts: {e}");
            return;
        }
    }
    let streams = [client, origin];
    let mut open = [end != RelayEnd::OriginOnly, true];
    let mut buf = vec![0u8; RELAY_BUFFER];
    while open[0] || open[1] {
        let Some(ready) = wait(streams, open) else { return };
        for from in 0..2 {
            if !ready[from] {
                continue;
            }
            let to = 1 - from;
            match pump(streams[from], streams[to], &mut buf) {
                Pumped::Moved => {}
                Pumped::Broken => return,
                Pumped::Ended => {
                    open[from] = false;
                    let _ = streams[to].shutdown(Shutdown::Write);
                    if from == 1 && end != RelayEnd::BothClosed {
                        return;
                    }
                }
            }
        }
    }
}

/// Waits until a stream still open for reading has something (data, end or error); `None` on
/// idle timeout or a failed poll.
fn wait(streams: [&TcpStream; 2], open: [bool; 2]) -> Option<[bool; 2]> {
    let timeout = PollTimeout::try_from(RELAY_IDLE).unwrap_or(PollTimeout::MAX);
    loop {
        let which: Vec<usize> = (0..2).filter(|&i| open[i]).collect();
        let mut fds: Vec<PollFd<'_>> =
            which.iter().map(|&i| PollFd::new(streams[i].as_fd(), PollFlags::POLLIN)).collect();
        match poll(&mut fds, timeout) {
            Ok(0) => {
                tracing::debug!("sandbox proxy: a relay was idle too long");
                return None;
            }
            Ok(_) => {
                let mut ready = [false, false];
                for (fd, &i) in fds.iter().zip(which.iter()) {
                    ready[i] = fd.revents().is_some_and(|r| !r.is_empty());
                }
                return Some(ready);
            }
            Err(Errno::EINTR) => {}
            Err(e) => {
                tracing::debug!("sandbox proxy: poll failed in a relay: {e}");
                return None;
            }
        }
    }
}

/// Moves one chunk from `from` to `to`.
fn pump(mut from: &TcpStream, mut to: &TcpStream, buf: &mut [u8]) -> Pumped {
    match from.read(buf) {
        Ok(0) => Pumped::Ended,
        Ok(n) => match to.write_all(&buf[..n]) {
            Ok(()) => Pumped::Moved,
            Err(_) => Pumped::Broken,
        },
        Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock) => Pumped::Moved,
        Err(_) => Pumped::Ended,
    }
}
