//! HTTP/1.x: `CONNECT host:port` tunnels and absolute-URL (`http://`) forwarding.
//!
//! The request head (at most [`MAX_HEAD`] bytes, within the handshake timeout) is parsed with
//! `httparse`. The request is classified first (what target it names), then its
//! `Proxy-Authorization` is checked, then the policy. A forwarded request goes to the origin in
//! origin-form with the hop-by-hop headers removed and `Connection: close` added, followed by
//! exactly its `Content-Length` of body (a body in `Transfer-Encoding` is refused) and nothing
//! else of the workload's; the response is copied as it comes, and the connection ends with it. Every
//! refusal is a small `Connection: close` response naming the reason.

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sandbox_bundle::Host;

use super::upstream::{self, Refusal, RelayEnd};
use super::{Connection, DenialReason, HANDSHAKE_TIMEOUT, printable, target_text};

/// The longest request head read.
const MAX_HEAD: usize = 64 * 1024;

/// The most header fields a request head may have.
const MAX_HEADERS: usize = 128;

/// Headers never forwarded to an origin (hop-by-hop, lowercase).
const HOP_BY_HOP: [&str; 7] =
    ["proxy-authorization", "proxy-connection", "connection", "keep-alive", "te", "trailer", "upgrade"];

/// How long an error response waits for the workload to stop sending before closing.
const LINGER: Duration = Duration::from_millis(500);

/// What reading a request head gave.
enum Head {
    /// A complete head of `len` bytes at the start of `buf` (the rest came after it).
    Complete {
        /// The bytes read.
        buf: Vec<u8>,
        /// The head's length.
        len: usize,
    },
    /// Not HTTP `httparse` accepts; says why.
    Malformed(String),
    /// Longer than [`MAX_HEAD`].
    TooLong,
    /// The workload closed or went quiet before a complete head.
    Gone,
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ask {
    /// `CONNECT host:port`.
    Connect {
        /// The normalized host.
        host: Host,
        /// The port.
        port: u16,
    },
    /// `METHOD http://host[:port]/path`.
    Forward {
        /// The normalized host.
        host: Host,
        /// The port (80 when the URL has none).
        port: u16,
        /// The origin-form target (`/path?query`).
        path: String,
    },
    /// Anything else: a 400.
    Refuse {
        /// The target for the denial (normalized, raw made printable, or empty).
        target: String,
        /// What the response says.
        why: String,
    },
}

/// Serves an HTTP connection whose first byte was `first`.
pub(super) fn serve(conn: &Connection<'_>, first: u8) {
    let (buf, len) = match read_head(&conn.client, first) {
        Head::Complete { buf, len } => (buf, len),
        Head::Malformed(why) => return refuse_unsupported(conn, String::new(), &why),
        Head::TooLong => {
            conn.deny(String::new(), DenialReason::Unsupported);
            let body = format!("sandbox proxy: the request head is longer than {MAX_HEAD} bytes");
            return respond(conn, 431, "Request Header Fields Too Large", &body, false);
        }
        Head::Gone => {
            tracing::debug!("sandbox proxy: a connection closed before a complete request");
            return;
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match (request.parse(&buf[..len]), request.method, request.path, request.version) {
        (Ok(httparse::Status::Complete(_)), Some(method), Some(path), Some(version)) => {
            let parsed = Parsed { method, path, version, headers: request.headers };
            answer(conn, &parsed, &buf[len..]);
        }
        _ => refuse_unsupported(conn, String::new(), "a malformed request"),
    }
}

/// A parsed request head.
struct Parsed<'h, 'b> {
    /// The method.
    method: &'b str,
    /// The request target as sent.
    path: &'b str,
    /// The minor version (`HTTP/1.x`).
    version: u8,
    /// The header fields.
    headers: &'h [httparse::Header<'b>],
}

/// Answers a parsed request; `early` are the bytes that came after its head.
fn answer(conn: &Connection<'_>, request: &Parsed<'_, '_>, early: &[u8]) {
    let ask = classify(request.method, request.path);
    let target = match &ask {
        Ask::Connect { host, port } | Ask::Forward { host, port, .. } => target_text(host, *port),
        Ask::Refuse { target, .. } => target.clone(),
    };
    if !authenticated(conn, request.headers, &target) {
        return;
    }
    match ask {
        Ask::Refuse { target, why } => refuse_unsupported(conn, target, &why),
        // A Host header is optional with CONNECT; one that names another target is refused,
        // so that nothing downstream can be told one target while the tunnel goes to another.
        Ask::Connect { host, port } if !connect_host_matches(request.headers, &host, port) => {
            conn.deny(target.clone(), DenialReason::HostMismatch);
            respond(conn, 403, "Forbidden", &format!("sandbox proxy: the Host header does not name {target}"), false);
        }
        Ask::Connect { host, port } => tunnel(conn, &host, port, early),
        Ask::Forward { host, port, .. } if !host_header_matches(request.headers, &host, port) => {
            conn.deny(target.clone(), DenialReason::HostMismatch);
            respond(conn, 403, "Forbidden", &format!("sandbox proxy: the Host header does not name {target}"), false);
        }
        Ask::Forward { host, port, path } => {
            let body = match body_length(request.headers) {
                Ok(len) => len,
                Err(why) => return refuse_unsupported(conn, target, why),
            };
            let expects = request.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("expect")
                    && String::from_utf8_lossy(h.value).trim().eq_ignore_ascii_case("100-continue")
            });
            let headers: Vec<httparse::Header<'_>> =
                request.headers.iter().filter(|h| !h.name.eq_ignore_ascii_case("expect")).copied().collect();
            let head = origin_head(request.method, &path, request.version, &headers, (&host, port));
            forward(conn, &host, port, &head, early, body, expects);
        }
    }
}

/// Reads a request head that starts with `first`.
fn read_head(mut client: &TcpStream, first: u8) -> Head {
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut buf = vec![first];
    let mut chunk = [0u8; 4096];
    let mut reads: usize = 0;
    let mut checked: usize = 0;
    loop {
        // Parse the first read (to answer non-HTTP at once) and then whenever a blank line may
        // have arrived, not after every byte a slow client sends.
        if reads <= 1 || may_end_head(&buf[checked.saturating_sub(3)..]) {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            match httparse::Request::new(&mut headers).parse(&buf) {
                Ok(httparse::Status::Complete(len)) => return Head::Complete { buf, len },
                Ok(httparse::Status::Partial) => {}
                Err(e) => return Head::Malformed(format!("a malformed request ({e})")),
            }
        }
        checked = buf.len();
        if buf.len() >= MAX_HEAD {
            return Head::TooLong;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || client.set_read_timeout(Some(left)).is_err() {
            return Head::Gone;
        }
        let want = chunk.len().min(MAX_HEAD - buf.len());
        match client.read(&mut chunk[..want]) {
            Ok(0) => return Head::Gone,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                reads += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Head::Gone,
        }
    }
}

/// Whether `bytes` hold the blank line that ends a head (`\n\n` or `\n\r\n`).
fn may_end_head(bytes: &[u8]) -> bool {
    bytes.windows(2).any(|w| w == b"\n\n") || bytes.windows(3).any(|w| w == b"\n\r\n")
}

/// Classifies a request by its method and request target.
pub(super) fn classify(method: &str, target: &str) -> Ask {
    if method == "CONNECT" {
        return match parse_authority(target, None) {
            Some((host, port)) => Ask::Connect { host, port },
            None => Ask::Refuse { target: printable(target), why: String::from("CONNECT needs host:port") },
        };
    }
    let Some((scheme, rest)) = target.split_once("://") else {
        let why = format!(
            "{} is not a proxy request (send CONNECT host:port or an absolute http:// URL)",
            printable(&format!("{method} {target}"))
        );
        return Ask::Refuse { target: String::new(), why };
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" {
        let default_port = if scheme == "https" { Some(443) } else { None };
        let target = match parse_authority(authority, default_port) {
            Some((host, port)) => target_text(&host, port),
            None => printable(authority),
        };
        let why = format!("only http:// URLs are forwarded (use CONNECT for {})", printable(&scheme));
        return Ask::Refuse { target, why };
    }
    let Some((host, port)) = parse_authority(authority, Some(80)) else {
        return Ask::Refuse { target: printable(authority), why: String::from("the URL has no valid host:port") };
    };
    Ask::Forward { host, port, path: origin_path(path) }
}

/// The origin-form target of the part of a URL after its authority.
fn origin_path(path: &str) -> String {
    let path = path.split('#').next().unwrap_or("");
    if path.starts_with('/') { path.to_owned() } else { format!("/{path}") }
}

/// Parses `host[:port]` (IPv6 in brackets) with `host` normalized by [`Host::parse`]; without a
/// port (or with an empty one) the port is `default_port`, and `None` there means it is
/// required. Ports are 1–65535.
pub(super) fn parse_authority(text: &str, default_port: Option<u16>) -> Option<(Host, u16)> {
    let text = text.trim();
    let (host, port) = if text.starts_with('[') {
        let close = text.find(']')?;
        let (host, rest) = text.split_at(close + 1);
        if rest.is_empty() { (host, None) } else { (host, Some(rest.strip_prefix(':')?)) }
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match port.filter(|p| !p.is_empty()) {
        Some(p) if p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => p.parse::<u16>().ok().filter(|&p| p > 0)?,
        Some(_) => return None,
        None => default_port?,
    };
    Some((Host::parse(host).ok()?, port))
}

/// Checks `Proxy-Authorization`; on failure answers 407 (recording a denial when a credential
/// was presented) and returns false.
fn authenticated(conn: &Connection<'_>, headers: &[httparse::Header<'_>], target: &str) -> bool {
    let mut values = headers.iter().filter(|h| h.name.eq_ignore_ascii_case("proxy-authorization"));
    let body = match (values.next(), values.next()) {
        (Some(value), None) if basic_matches(conn, value.value) => return true,
        (None, _) => "sandbox proxy: proxy authentication required",
        _ => {
            conn.deny(target.to_owned(), DenialReason::BadCredential);
            "sandbox proxy: the proxy credential is not this execution's"
        }
    };
    respond(conn, 407, "Proxy Authentication Required", body, true);
    false
}

/// Whether a `Proxy-Authorization` value is `Basic` with this execution's `id:secret`.
fn basic_matches(conn: &Connection<'_>, value: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(value) else { return false };
    let Some((scheme, encoded)) = text.trim().split_once(' ') else { return false };
    if !scheme.eq_ignore_ascii_case("basic") {
        return false;
    }
    let Ok(decoded) = STANDARD.decode(encoded.trim()) else { return false };
    let Some(colon) = decoded.iter().position(|&b| b == b':') else { return false };
    conn.shared.verifier.check(&decoded[..colon], &decoded[colon + 1..])
}

/// Whether the request has exactly one Host header and it names `host:port` (port 80 when it
/// has none).
pub(super) fn host_header_matches(headers: &[httparse::Header<'_>], host: &Host, port: u16) -> bool {
    let mut hosts = headers.iter().filter(|h| h.name.eq_ignore_ascii_case("host"));
    let (Some(header), None) = (hosts.next(), hosts.next()) else { return false };
    let Ok(text) = std::str::from_utf8(header.value) else { return false };
    parse_authority(text, Some(80)).is_some_and(|(h, p)| &h == host && p == port)
}

/// Whether a `CONNECT host:port`'s `Host` headers, if any, all name the same target (a port
/// left out is the CONNECT's).
fn connect_host_matches(headers: &[httparse::Header<'_>], host: &Host, port: u16) -> bool {
    headers.iter().filter(|h| h.name.eq_ignore_ascii_case("host")).all(|h| {
        std::str::from_utf8(h.value)
            .ok()
            .and_then(|text| parse_authority(text, Some(port)))
            .is_some_and(|(h, p)| &h == host && p == port)
    })
}

/// The head sent to the origin: the request line in origin-form, the headers minus the
/// hop-by-hop ones and those `Connection` names (never `Host` or `Content-Length`), and
/// `Connection: close`. The `Host` header is the target the proxy checked, in its normal form
/// (`host_header_matches` compares the normal forms: `ａ.test`, `a\u{ad}.test` and `a.test.`
/// passed as `a.test` and reached the origin as sent, a red team's note of 5 December).
pub(super) fn origin_head(
    method: &str,
    path: &str,
    version: u8,
    headers: &[httparse::Header<'_>],
    (host, port): (&Host, u16),
) -> Vec<u8> {
    let mut named: Vec<String> = Vec::new();
    for header in headers.iter().filter(|h| h.name.eq_ignore_ascii_case("connection")) {
        named.extend(String::from_utf8_lossy(header.value).split(',').map(|t| t.trim().to_ascii_lowercase()));
    }
    let mut head = format!("{method} {path} HTTP/1.{version}\r\n").into_bytes();
    for header in headers {
        let name = header.name.to_ascii_lowercase();
        // What frames the request (`Host`, `Content-Length`) is never dropped for being named
        // (`body_length` refuses such a request anyway).
        let end_to_end = name == "host" || name == "content-length";
        if HOP_BY_HOP.contains(&name.as_str()) || (!end_to_end && named.contains(&name)) {
            continue;
        }
        head.extend_from_slice(header.name.as_bytes());
        head.extend_from_slice(b": ");
        if name == "host" {
            let authority = if port == 80 { host.to_string() } else { format!("{host}:{port}") };
            head.extend_from_slice(authority.as_bytes());
        } else {
            head.extend_from_slice(header.value);
        }
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    head
}

/// Opens the origin or answers the refusal; `None` when refused.
fn open_or_refuse(conn: &Connection<'_>, host: &Host, port: u16) -> Option<TcpStream> {
    let target = target_text(host, port);
    let (status, reason, why) = match upstream::open(conn, host, port) {
        Ok(origin) => return Some(origin),
        Err(Refusal::Stopping) => return None,
        Err(Refusal::NotAllowed) => {
            conn.deny(target.clone(), DenialReason::NotAllowed);
            (403, "Forbidden", "is not allowed")
        }
        Err(Refusal::NotPublic) => {
            conn.deny(target.clone(), DenialReason::NotPublic);
            (403, "Forbidden", "resolves only to non-public addresses")
        }
        Err(Refusal::NoSuchName) => (502, "Bad Gateway", "does not resolve"),
        Err(Refusal::Unreachable { .. }) => (502, "Bad Gateway", "could not be connected"),
    };
    respond(conn, status, reason, &format!("sandbox proxy: {target} {why}"), false);
    None
}

/// Serves an allowed-or-not `CONNECT`: on success `200` and a tunnel; `early` came after the
/// head and goes to the origin first.
fn tunnel(conn: &Connection<'_>, host: &Host, port: u16, early: &[u8]) {
    let Some(origin) = open_or_refuse(conn, host, port) else { return };
    if !conn.send(b"HTTP/1.1 200 Connection Established\r\n\r\n") || !write_origin(&origin, early) {
        return;
    }
    upstream::relay(&conn.client, &origin, RelayEnd::BothClosed);
}

/// The length of a forwarded request's body: its `Content-Length` (0 without one). A body in
/// `Transfer-Encoding`, or a length that is malformed or given twice with different values, is
/// refused: the proxy sends the origin exactly one request, its head and that many bytes, so
/// that nothing after them (a second, pipelined request, or one smuggled in a body whose length
/// the origin would read otherwise) reaches the origin on an allowed connection.
///
/// A `Connection` header that names `Content-Length` or `Transfer-Encoding` is refused too:
/// the head sent on drops what `Connection` names, so the origin would get the body without
/// its length, and read it as a second request (the evening red team of 4 December). RFC 9110 forbids
/// naming a header meant for every recipient there.
fn body_length(headers: &[httparse::Header<'_>]) -> Result<u64, &'static str> {
    if headers.iter().any(|h| h.name.eq_ignore_ascii_case("transfer-encoding")) {
        return Err("a request body in Transfer-Encoding (send it with Content-Length)");
    }
    let framing = |token: &str| {
        let token = token.trim();
        token.eq_ignore_ascii_case("content-length") || token.eq_ignore_ascii_case("transfer-encoding")
    };
    if headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("connection"))
        .any(|h| String::from_utf8_lossy(h.value).split(',').any(framing))
    {
        return Err("a Connection header naming the body's framing (Content-Length or Transfer-Encoding)");
    }
    let mut length: Option<u64> = None;
    for h in headers.iter().filter(|h| h.name.eq_ignore_ascii_case("content-length")) {
        let text = std::str::from_utf8(h.value).map(str::trim).unwrap_or("");
        let value = (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u64>().ok())
            .flatten()
            .ok_or("a malformed Content-Length")?;
        if length.is_some_and(|l| l != value) {
            return Err("two different Content-Length values");
        }
        length = Some(value);
    }
    Ok(length.unwrap_or(0))
}

/// Serves an absolute-URL request: sends `head` and exactly `body` bytes of its body (`early`
/// first: what came after the head) to the origin, then copies the origin's answer back until
/// the origin closes. Nothing else the workload sends reaches the origin. With `expects`
/// (`Expect: 100-continue`, not passed on) the proxy itself tells the workload to go on.
fn forward(conn: &Connection<'_>, host: &Host, port: u16, head: &[u8], early: &[u8], body: u64, expects: bool) {
    let Some(origin) = open_or_refuse(conn, host, port) else { return };
    let first = usize::try_from(body).map_or(early.len(), |b| b.min(early.len()));
    if !write_origin(&origin, head) || !write_origin(&origin, &early[..first]) {
        return;
    }
    let mut remaining = body - first as u64;
    if remaining > 0 {
        if expects && !conn.send(b"HTTP/1.1 100 Continue\r\n\r\n") {
            return;
        }
        if conn.client.set_read_timeout(Some(upstream::RELAY_IDLE)).is_err() {
            return;
        }
        let mut buf = vec![0u8; upstream::RELAY_BUFFER];
        while remaining > 0 {
            let want = usize::try_from(remaining).map_or(buf.len(), |r| r.min(buf.len()));
            match (&conn.client).read(&mut buf[..want]) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if !write_origin(&origin, &buf[..n]) {
                        return;
                    }
                    remaining -= n as u64;
                }
            }
        }
    }
    upstream::relay(&conn.client, &origin, RelayEnd::OriginOnly);
}

/// Writes all of `bytes` to the origin; false when it fails.
fn write_origin(mut origin: &TcpStream, bytes: &[u8]) -> bool {
    io::Write::write_all(&mut origin, bytes).is_ok()
}

/// Records an `Unsupported` denial and answers 400.
fn refuse_unsupported(conn: &Connection<'_>, target: String, why: &str) {
    conn.deny(target, DenialReason::Unsupported);
    respond(conn, 400, "Bad Request", &format!("sandbox proxy: {why}"), false);
}

/// Answers with a small `Connection: close` response whose body is `body` and a newline, then
/// closes after letting the workload finish sending (so that it reads the answer, not a reset).
fn respond(conn: &Connection<'_>, status: u16, reason: &str, body: &str, challenge: bool) {
    let challenge = if challenge { "Proxy-Authenticate: Basic realm=\"sandbox\"\r\n" } else { "" };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\n{challenge}Content-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}\n",
        body.len() + 1
    );
    if conn.send(response.as_bytes()) {
        linger(&conn.client);
    }
}

/// Half-closes and reads (and drops) what the workload still sends, for at most [`LINGER`].
fn linger(mut client: &TcpStream) {
    if client.shutdown(Shutdown::Write).is_err() || client.set_read_timeout(Some(LINGER)).is_err() {
        return;
    }
    let deadline = Instant::now() + LINGER;
    let mut sink = [0u8; 4096];
    while Instant::now() < deadline {
        match client.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}
