//! The egress proxy (issue 17): the only way out of a sandbox whose profile names network
//! targets (CONTRACT: authenticated, allowlisting, no direct fallback).
//!
//! The sandbox has no route and no DNS; its workload reaches this proxy through a listening TCP
//! socket at `127.0.0.1:3128` inside the sandbox's own network namespace, made elsewhere and
//! handed to [`Proxy::start`] as a descriptor. The proxy runs in the library's process, outside
//! the sandbox, and opens the connections the workload asks for when the policy allows them.
//!
//! Design:
//! - One port speaks both protocols: a first byte `0x05` is SOCKS5 ([`socks`]), anything else
//!   HTTP/1.x ([`http`]: `CONNECT host:port` tunnels and absolute `http://` URLs).
//! - Every request carries this execution's [`Credential`] (Basic `id:secret`, or SOCKS5
//!   username/password); the proxy keeps only a SHA-256 digest of it and compares digests in
//!   constant time.
//! - A request's host is normalized with [`Host::parse`] and allowed only when a
//!   [`TargetPattern`] of the [`ProxyPolicy`] matches it. Names are resolved here ([`upstream`]):
//!   pinned names use their pinned addresses; other names keep only their public addresses
//!   ([`is_public`]), so a name cannot lead into the host's loopback or private networks. An IP
//!   literal is allowed only when a pattern names it exactly. Nothing falls back to a direct
//!   connection.
//! - Every refusal is a [`NetworkDenial`], recorded in order and logged with `tracing`.
//! - One acceptor thread polls the listener; one thread serves each accepted connection (at
//!   most [`MAX_CONNECTIONS`] at once). [`Proxy::finish`] stops accepting, shuts every open
//!   socket down and waits a bounded time for the threads.

mod http;
mod socks;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
mod upstream;

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use sandbox_bundle::{Error, Host, TargetPattern};
use sha2::{Digest, Sha256};

/// The port the proxy listens on inside every sandbox's own network namespace (the bundle's
/// constant: the bundle compiler and the backend name the same port).
#[cfg_attr(not(target_os = "linux"), allow(dead_code, reason = "the Linux proxy's port; macOS picks one"))]
pub(crate) const PROXY_PORT: u16 = sandbox_bundle::target::PROXY_PORT;

/// The most connections served at once; more are closed at once.
const MAX_CONNECTIONS: usize = 64;

/// The connections every run may have open whatever the other runs of this process hold:
/// they do not count against [`MAX_CONNECTIONS_IN_PROCESS`].
///
/// **Decision (5 December).** The process-wide bound alone let eight runs of one `serve` (64
/// connections each, idle ones included) take all 512, and every other run's proxy then closed
/// its connections unserved and reported nothing (a red team). Each run now keeps this many for
/// itself, only the connections beyond them come from the shared pool, and a connection closed
/// at either bound is reported once per run (`busy`).
const RESERVED_PER_RUN: usize = 8;

/// The most connections beyond their runs' reserves that all the proxies of this process
/// serve at once (each costs a thread and up to four descriptors): a few busy runs cannot take
/// the embedder's descriptors. With `serve`'s 64 requests in flight the process serves at most
/// 64 × 8 + 512 connections.
const MAX_CONNECTIONS_IN_PROCESS: usize = 512;

/// Connections beyond their runs' reserves, served by every proxy of this process.
static POOLED_IN_PROCESS: AtomicUsize = AtomicUsize::new(0);

/// The most denials kept; later ones are logged but not kept (a workload can make any number).
const MAX_DENIALS: usize = 10_000;

/// How long a request head (HTTP) or handshake (SOCKS5) may take to arrive.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long [`Proxy::finish`] waits for its threads before leaving them behind.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// How often the acceptor looks at the stop flag (milliseconds).
const ACCEPT_POLL_MS: u16 = 100;

/// The longest raw target text a denial keeps (characters).
const MAX_TARGET_CHARS: usize = 300;

/// Why the proxy refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DenialReason {
    /// The target matches no allowed pattern and no grant.
    NotAllowed,
    /// A name resolved to a non-public address the target does not name.
    NotPublic,
    /// An absolute-URL request whose Host header differs from its URL.
    HostMismatch,
    /// A connection closed unserved: the run had [`MAX_CONNECTIONS`] open, or the proxies of
    /// this process had every shared connection in use. Recorded once per run (target
    /// `connections`).
    Busy,
    /// A credential that is not this execution's.
    BadCredential,
    /// Not a request the proxy speaks (malformed, unsupported method/command/scheme, headers
    /// too long).
    Unsupported,
    /// A connection or datagram that did not go through the proxy: the namespace has no
    /// route, the kernel refused it. The target is `tcp:`, `udp:` or `ip:` (the socket's
    /// protocol could not be told) with the address and port; `... and N more` once past
    /// 256 such records of one run.
    Direct,
}

impl DenialReason {
    /// The reason as a short kebab-case word (`not-allowed`, `not-public`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            DenialReason::NotAllowed => "not-allowed",
            DenialReason::NotPublic => "not-public",
            DenialReason::HostMismatch => "host-mismatch",
            DenialReason::Busy => "busy",
            DenialReason::BadCredential => "bad-credential",
            DenialReason::Unsupported => "unsupported",
            DenialReason::Direct => "direct",
        }
    }
}

impl fmt::Display for DenialReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One refused request, recorded in order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NetworkDenial {
    /// The target as asked: `tcp:<host>:<port>` normalized when it parses (host per
    /// [`Host`]'s `Display`), else the raw host text made printable (control characters
    /// escaped, at most 300 characters); empty when no target was read.
    pub target: String,
    /// Why.
    pub reason: DenialReason,
}

impl fmt::Display for NetworkDenial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.target.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.target, self.reason)
        }
    }
}

/// What one execution's proxy allows.
#[derive(Clone, Debug)]
pub(crate) struct ProxyPolicy {
    /// Allowed targets (the profile's `network_targets` plus granted targets for this spawn).
    pub allow: Vec<TargetPattern>,
    /// Names pinned to addresses (like curl `--resolve`): used instead of DNS for that name; a
    /// pinned address counts as named by the user (it may be non-public).
    pub pins: Vec<(Host, Vec<IpAddr>)>,
}

/// One execution's credential: Basic `id:secret`.
///
/// The secret lives only in the environment built at creation (what [`Credential::env`]
/// returns); [`Proxy::start`] consumes the credential and keeps only a SHA-256 digest.
pub(crate) struct Credential {
    /// `sbx-` + 8 random hex digits (the user name).
    id: String,
    /// The digest the proxy compares presented credentials with.
    digest: [u8; 32],
    /// The proxy variables of the spawn (they hold the secret).
    env: Vec<(String, String)>,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential").field("id", &self.id).finish_non_exhaustive()
    }
}

impl Credential {
    /// A fresh credential: id `sbx-` + 8 random hex digits, secret 32 random bytes hex-encoded.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code, reason = "the Linux proxy's port; macOS picks one"))]
    pub(crate) fn new() -> Result<Credential, Error> {
        Credential::new_at(PROXY_PORT)
    }

    /// A fresh credential for a proxy on `127.0.0.1:<port>` (the Seatbelt backend's proxy
    /// listens on the host's loopback at a port the kernel chose).
    pub(crate) fn new_at(port: u16) -> Result<Credential, Error> {
        let id = format!("sbx-{}", hex(&random::<4>()?));
        let secret = hex(&random::<32>()?);
        let digest = credential_digest(id.as_bytes(), secret.as_bytes());
        let env = proxy_env(&id, &secret, port);
        Ok(Credential { id, digest, env })
    }

    /// The environment the spawn gets: `HTTP_PROXY`, `HTTPS_PROXY`, `http_proxy`,
    /// `https_proxy` = `http://<id>:<secret>@127.0.0.1:3128`; `ALL_PROXY`, `all_proxy` =
    /// `socks5h://<id>:<secret>@127.0.0.1:3128`; `NO_PROXY` and `no_proxy` empty.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        self.env.clone()
    }
}

/// `n` random bytes.
fn random<const N: usize>() -> Result<[u8; N], Error> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::io("reading random bytes for the proxy credential", io::Error::other(e.to_string())))?;
    Ok(bytes)
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The proxy variables for `id:secret`.
fn proxy_env(id: &str, secret: &str, port: u16) -> Vec<(String, String)> {
    let http = format!("http://{id}:{secret}@127.0.0.1:{port}");
    let socks = format!("socks5h://{id}:{secret}@127.0.0.1:{port}");
    let mut env = Vec::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        env.push((name.to_owned(), http.clone()));
    }
    for name in ["ALL_PROXY", "all_proxy"] {
        env.push((name.to_owned(), socks.clone()));
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name.to_owned(), String::new()));
    }
    env
}

/// SHA-256 over the id's length, the id and the secret (the length keeps `a` + `b:c` apart
/// from `a:b` + `c`).
fn credential_digest(id: &[u8], secret: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(u64::try_from(id.len()).unwrap_or(u64::MAX).to_be_bytes());
    hasher.update(id);
    hasher.update(secret);
    hasher.finalize().into()
}

/// Checks presented credentials against the digest of this execution's.
struct Verifier {
    /// [`credential_digest`] of the real id and secret.
    digest: [u8; 32],
}

impl Verifier {
    /// Whether `id` and `secret` are this execution's (digests compared in constant time).
    fn check(&self, id: &[u8], secret: &[u8]) -> bool {
        let presented = credential_digest(id, secret);
        presented.iter().zip(self.digest.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

/// Whether connections to `ip` may follow from a name: false for loopback, private, link-local,
/// CGNAT, documentation, benchmarking, multicast, reserved, NAT64, discard and IPv4-compatible
/// ranges (an IPv4-mapped IPv6 address is judged by its IPv4 address).
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// The IPv4 ranges that are not public (network, prefix length).
const NON_PUBLIC_V4: [(Ipv4Addr, u32); 15] = [
    (Ipv4Addr::new(0, 0, 0, 0), 8),
    (Ipv4Addr::new(10, 0, 0, 0), 8),
    (Ipv4Addr::new(100, 64, 0, 0), 10),
    (Ipv4Addr::new(127, 0, 0, 0), 8),
    (Ipv4Addr::new(169, 254, 0, 0), 16),
    (Ipv4Addr::new(172, 16, 0, 0), 12),
    (Ipv4Addr::new(192, 0, 0, 0), 24),
    (Ipv4Addr::new(192, 0, 2, 0), 24),
    // The deprecated 6to4 relay anycast.
    (Ipv4Addr::new(192, 88, 99, 0), 24),
    (Ipv4Addr::new(192, 168, 0, 0), 16),
    (Ipv4Addr::new(198, 18, 0, 0), 15),
    (Ipv4Addr::new(198, 51, 100, 0), 24),
    (Ipv4Addr::new(203, 0, 113, 0), 24),
    (Ipv4Addr::new(224, 0, 0, 0), 4),
    // 240/4 includes 255.255.255.255.
    (Ipv4Addr::new(240, 0, 0, 0), 4),
];

/// The IPv6 ranges that are not public (network, prefix length); IPv4-mapped addresses are
/// judged apart.
const NON_PUBLIC_V6: [(Ipv6Addr, u32); 11] = [
    // ::/96: the unspecified address, loopback and IPv4-compatible addresses.
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 96),
    // ::ffff:0:0:0/96 (IPv4-translated, RFC 2765).
    (Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, 0, 0), 96),
    // Teredo (2001::/32) tunnels to an address it hides; site-local (fec0::/10, deprecated).
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10),
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8),
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32),
    (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96),
    (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48),
    (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64),
];

/// [`is_public`] for IPv4.
fn is_public_v4(ip: Ipv4Addr) -> bool {
    let bits = u32::from(ip);
    !NON_PUBLIC_V4.iter().any(|&(net, len)| {
        let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
        bits & mask == u32::from(net) & mask
    })
}

/// [`is_public`] for IPv6.
fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    // 6to4 (2002::/16) carries an IPv4 address in its next 32 bits: judged by that.
    let segments = ip.segments();
    if segments[0] == 0x2002 {
        let embedded = (u32::from(segments[1]) << 16) | u32::from(segments[2]);
        return is_public_v4(Ipv4Addr::from(embedded));
    }
    let bits = u128::from(ip);
    !NON_PUBLIC_V6.iter().any(|&(net, len)| {
        let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
        bits & mask == u128::from(net) & mask
    })
}

/// `tcp:<host>:<port>`, the normalized form of a target.
fn target_text(host: &Host, port: u16) -> String {
    format!("tcp:{host}:{port}")
}

/// Raw text made printable: anything but printable ASCII escaped, at most
/// [`MAX_TARGET_CHARS`] characters in all.
fn printable(raw: &str) -> String {
    let mut out = String::new();
    let mut count = 0;
    for c in raw.chars() {
        let piece: String = if c == ' ' || c.is_ascii_graphic() { c.to_string() } else { c.escape_default().collect() };
        count += piece.len();
        if count > MAX_TARGET_CHARS {
            break;
        }
        out.push_str(&piece);
    }
    out
}

/// The state the acceptor and the connection threads share.
struct Shared {
    /// What this execution allows.
    policy: ProxyPolicy,
    /// This execution's credential, as a digest.
    verifier: Verifier,
    /// The denials so far, in order.
    denials: Mutex<Vec<NetworkDenial>>,
    /// Set once by [`Proxy::finish`] (or drop).
    stopping: AtomicBool,
    /// Clones of every open socket, by connection, so that stopping can shut them down.
    sockets: Mutex<HashMap<u64, Vec<TcpStream>>>,
    /// Connections being served.
    active: AtomicUsize,
    /// Whether a connection was closed unserved at a bound (reported once).
    busy: AtomicBool,
    /// The shared pool of connections beyond the runs' reserves ([`POOLED_IN_PROCESS`]).
    pool: &'static AtomicUsize,
}

impl Shared {
    /// Records and logs a denial.
    fn deny(&self, target: String, reason: DenialReason) {
        let denial = NetworkDenial { target, reason };
        tracing::info!(target = %denial.target, reason = %denial.reason, "sandbox proxy refused a request");
        let mut denials = lock(&self.denials);
        if denials.len() < MAX_DENIALS {
            denials.push(denial);
        } else if denials.len() == MAX_DENIALS {
            tracing::warn!("sandbox proxy: more than {MAX_DENIALS} denials; later ones are only logged");
        }
    }

    /// The denials so far.
    fn denials(&self) -> Vec<NetworkDenial> {
        lock(&self.denials).clone()
    }

    /// Whether the proxy is stopping.
    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Registers a socket of connection `conn` to be shut down when the proxy stops; false
    /// (and the socket shut down) when it is already stopping or cannot be registered.
    fn track(&self, conn: u64, stream: &TcpStream) -> bool {
        let mut sockets = lock(&self.sockets);
        let clone = match stream.try_clone() {
            Ok(clone) if !self.stopping() => clone,
            _ => {
                let _ = stream.shutdown(Shutdown::Both);
                return false;
            }
        };
        sockets.entry(conn).or_default().push(clone);
        true
    }

    /// Forgets the sockets of a connection that ended.
    fn untrack(&self, conn: u64) {
        lock(&self.sockets).remove(&conn);
    }

    /// Sets the stop flag and shuts every open socket down, which wakes every connection
    /// thread blocked on one.
    fn stop(&self) {
        let sockets = lock(&self.sockets);
        self.stopping.store(true, Ordering::SeqCst);
        for stream in sockets.values().flatten() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// Locks a mutex, ignoring poisoning (the data stays consistent: every critical section is a
/// push, a remove or a read).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running proxy for one execution.
pub(crate) struct Proxy {
    /// What the threads share.
    shared: Arc<Shared>,
    /// The acceptor, which returns the connection threads still running when it stops; `None`
    /// once stopped.
    acceptor: Option<JoinHandle<Vec<JoinHandle<()>>>>,
    /// The write end of the acceptor's wake pipe: closing it wakes the acceptor at once.
    wake: Option<OwnedFd>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("running", &self.acceptor.is_some())
            .field("denials", &lock(&self.shared.denials).len())
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// Starts serving `listener` (a listening TCP socket) on a thread; one thread per accepted
    /// connection, at most 64 connections at once (more are closed at once).
    pub(crate) fn start(listener: OwnedFd, policy: ProxyPolicy, credential: Credential) -> Result<Proxy, Error> {
        Proxy::start_in(listener, policy, credential, &POOLED_IN_PROCESS)
    }

    /// [`Proxy::start`] drawing its connections beyond the reserve from `pool` (a test's own
    /// pool: the process's is shared by every test thread).
    fn start_in(
        listener: OwnedFd,
        policy: ProxyPolicy,
        credential: Credential,
        pool: &'static AtomicUsize,
    ) -> Result<Proxy, Error> {
        let listener = TcpListener::from(listener);
        listener.set_nonblocking(true).map_err(|e| Error::io("making the proxy's listening socket non-blocking", e))?;
        let shared = Arc::new(Shared {
            policy,
            verifier: Verifier { digest: credential.digest },
            denials: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
            sockets: Mutex::new(HashMap::new()),
            active: AtomicUsize::new(0),
            busy: AtomicBool::new(false),
            pool,
        });
        drop(credential);
        // std's pipe is close-on-exec on every Unix (nix's pipe2 is not on macOS).
        let (wake_r, wake_w) = io::pipe().map_err(|e| Error::io("the proxy's wake pipe", e))?;
        let (wake_r, wake_w) = (OwnedFd::from(wake_r), OwnedFd::from(wake_w));
        let acceptor_shared = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name(String::from("sandbox-proxy"))
            .spawn(move || accept_loop(&listener, &wake_r, &acceptor_shared))
            .map_err(|e| Error::io("starting the proxy thread", e))?;
        Ok(Proxy { shared, acceptor: Some(acceptor), wake: Some(wake_w) })
    }

    /// The denials so far.
    #[cfg(test)]
    pub(crate) fn denials(&self) -> Vec<NetworkDenial> {
        self.shared.denials()
    }

    /// Stops: no more accepts, open connections shut down, threads joined (giving up after
    /// about 2 s); returns every denial in order.
    pub(crate) fn finish(mut self) -> Vec<NetworkDenial> {
        self.stop();
        self.shared.denials()
    }

    /// Stops once; later calls do nothing.
    fn stop(&mut self) {
        let Some(acceptor) = self.acceptor.take() else { return };
        self.shared.stop();
        // The acceptor sees the pipe's end at once (it also looks at the flag every
        // ACCEPT_POLL_MS): a run's end does not wait for a poll to time out.
        drop(self.wake.take());
        let deadline = Instant::now() + STOP_WAIT;
        if !ended_by(&acceptor, deadline) {
            tracing::warn!("sandbox proxy: the acceptor did not stop in time; left behind");
            return;
        }
        let workers = acceptor.join().unwrap_or_default();
        let mut left = 0;
        for worker in workers {
            if ended_by(&worker, deadline) {
                let _ = worker.join();
            } else {
                left += 1;
            }
        }
        if left > 0 {
            tracing::warn!("sandbox proxy: {left} connection thread(s) did not stop in time; left behind");
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits until the thread of `handle` ends or `deadline` passes; whether it ended.
fn ended_by<T>(handle: &JoinHandle<T>, deadline: Instant) -> bool {
    while !handle.is_finished() {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Accepts connections until the proxy stops; returns the connection threads still running.
fn accept_loop(listener: &TcpListener, wake: &OwnedFd, shared: &Arc<Shared>) -> Vec<JoinHandle<()>> {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id: u64 = 0;
    while !shared.stopping() {
        workers.retain(|w| !w.is_finished());
        if !wait_readable(listener, wake) {
            continue;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                next_id += 1;
                if let Some(worker) = admit(shared, stream, next_id) {
                    workers.push(worker);
                }
            }
            Err(e) if is_transient(&e) => {}
            Err(e) => {
                tracing::warn!("sandbox proxy: accept failed: {e}");
                thread::sleep(Duration::from_millis(u64::from(ACCEPT_POLL_MS)));
            }
        }
    }
    workers
}

/// Whether an accept error just means "try again".
fn is_transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted)
}

/// Waits up to [`ACCEPT_POLL_MS`] for a connection to accept, or for the wake pipe's end (then
/// false: the caller looks at the stop flag).
fn wait_readable(listener: &TcpListener, wake: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN), PollFd::new(wake.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::from(ACCEPT_POLL_MS)) {
        Ok(_) if fds[1].revents().is_some_and(|r| !r.is_empty()) => false,
        Ok(n) => n > 0,
        Err(nix::errno::Errno::EINTR) => false,
        Err(e) => {
            tracing::warn!("sandbox proxy: poll on the listening socket failed: {e}");
            thread::sleep(Duration::from_millis(u64::from(ACCEPT_POLL_MS)));
            false
        }
    }
}

/// Ends a connection's bookkeeping when its thread ends (or never starts).
struct ConnectionGuard {
    /// What the threads share.
    shared: Arc<Shared>,
    /// The connection.
    id: u64,
    /// Whether it came from the shared pool ([`POOLED_IN_PROCESS`]).
    pooled: bool,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.shared.untrack(self.id);
        self.shared.active.fetch_sub(1, Ordering::SeqCst);
        if self.pooled {
            self.shared.pool.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Starts a thread serving `stream`, unless [`MAX_CONNECTIONS`] are being served, or the run's
/// reserve ([`RESERVED_PER_RUN`]) and the process's shared pool are used up, or the proxy is
/// stopping (then the connection is closed at once, and the first such is reported).
fn admit(shared: &Arc<Shared>, stream: TcpStream, id: u64) -> Option<JoinHandle<()>> {
    let busy = |why: &str| {
        tracing::debug!("sandbox proxy: {why}; a connection closed unserved");
        if !shared.busy.swap(true, Ordering::SeqCst) {
            shared.deny(String::from("connections"), DenialReason::Busy);
        }
        None
    };
    // Only this thread admits: `active` grows nowhere else.
    let active = shared.active.load(Ordering::SeqCst);
    if active >= MAX_CONNECTIONS {
        return busy("the run has its most connections open");
    }
    let pooled = active >= RESERVED_PER_RUN;
    if pooled
        && shared
            .pool
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < MAX_CONNECTIONS_IN_PROCESS).then_some(n + 1))
            .is_err()
    {
        return busy("every shared connection of this process is in use");
    }
    let release = || {
        if pooled {
            shared.pool.fetch_sub(1, Ordering::SeqCst);
        }
    };
    // A socket accepted from a non-blocking listener is non-blocking on some systems.
    if stream.set_nonblocking(false).is_err() || !shared.track(id, &stream) {
        release();
        return None;
    }
    shared.active.fetch_add(1, Ordering::SeqCst);
    let guard = ConnectionGuard { shared: Arc::clone(shared), id, pooled };
    let spawned = thread::Builder::new().name(String::from("sandbox-proxy-conn")).spawn(move || {
        let guard = guard;
        let deadline = std::time::Instant::now() + HANDSHAKE_TIMEOUT;
        serve(Connection { shared: &guard.shared, id: guard.id, client: stream, deadline });
    });
    match spawned {
        Ok(worker) => Some(worker),
        Err(e) => {
            tracing::warn!("sandbox proxy: could not start a connection thread: {e}");
            None
        }
    }
}

/// One accepted connection, as its thread sees it.
struct Connection<'a> {
    /// What the threads share.
    shared: &'a Shared,
    /// The connection's id (for [`Shared::track`]).
    id: u64,
    /// The workload's socket.
    client: TcpStream,
    /// When the request head or handshake must have arrived.
    deadline: std::time::Instant,
}

impl Connection<'_> {
    /// Before a read of the head or handshake: the time left until [`Connection::deadline`]
    /// as the socket's read timeout (a client that drips bytes cannot hold the connection past
    /// it); `TimedOut` once it has passed.
    fn before_handshake_read(&self) -> io::Result<()> {
        let left = self.deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.client.set_read_timeout(Some(left))
    }

    /// Records and logs a denial.
    fn deny(&self, target: String, reason: DenialReason) {
        self.shared.deny(target, reason);
    }

    /// Writes all of `bytes` to the workload; false when it is gone.
    fn send(&self, bytes: &[u8]) -> bool {
        (&self.client).write_all(bytes).and_then(|()| (&self.client).flush()).is_ok()
    }
}

/// Serves one connection: reads the first byte and hands over to SOCKS5 or HTTP.
fn serve(conn: Connection<'_>) {
    let timeouts = conn
        .client
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .and_then(|()| conn.client.set_write_timeout(Some(HANDSHAKE_TIMEOUT)));
    if let Err(e) = timeouts {
        tracing::debug!("sandbox proxy: could not set socket timeouts: {e}");
        return;
    }
    let mut first = [0u8; 1];
    match (&conn.client).read(&mut first) {
        Ok(1) if first[0] == socks::VERSION => socks::serve(&conn),
        Ok(1) => http::serve(&conn, first[0]),
        _ => tracing::debug!("sandbox proxy: a connection closed before its first byte"),
    }
}
