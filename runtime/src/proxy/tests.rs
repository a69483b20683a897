//! The proxy over real loopback sockets: a tiny origin on `127.0.0.1:0`, a proxy serving a
//! listener on `127.0.0.1:0`, and clients speaking HTTP and SOCKS5 to it. Only names that are
//! pinned, refused before resolution, or `localhost` are used, so nothing leaves loopback.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sandbox_bundle::{Host, TargetPattern};

use super::http::{Ask, classify, parse_authority};
use super::*;

/// What a test response from the HTTP origin says.
const ORIGIN_RESPONSE: &str = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";

/// A running proxy and what a client needs to use it.
struct Fixture {
    /// The proxy.
    proxy: Proxy,
    /// Where it listens.
    addr: SocketAddr,
    /// This execution's id.
    id: String,
    /// This execution's secret.
    secret: String,
}

impl Fixture {
    /// A proxy allowing `allow` with `pins`.
    fn new(allow: &[String], pins: &[(&str, IpAddr)]) -> Fixture {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let policy = ProxyPolicy {
            allow: allow.iter().map(|t| TargetPattern::parse(t).unwrap()).collect(),
            pins: pins.iter().map(|(name, ip)| (Host::parse(name).unwrap(), vec![*ip])).collect(),
        };
        let credential = Credential::new().unwrap();
        let (id, secret) = id_and_secret(&credential);
        let proxy = Proxy::start(OwnedFd::from(listener), policy, credential).unwrap();
        Fixture { proxy, addr, id, secret }
    }

    /// A proxy allowing `tcp:origin.test:<port>` with `origin.test` pinned to 127.0.0.1.
    fn for_origin(port: u16) -> Fixture {
        Fixture::new(&[format!("tcp:origin.test:{port}")], &[("origin.test", LOOPBACK)])
    }

    /// The `Proxy-Authorization` header line of this execution.
    fn auth(&self) -> String {
        basic_header(&self.id, &self.secret)
    }

    /// Connects to the proxy.
    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        stream
    }

    /// Sends `request` and reads until the proxy closes.
    fn exchange(&self, request: &str) -> String {
        let mut stream = self.connect();
        stream.write_all(request.as_bytes()).unwrap();
        read_to_end(&mut stream)
    }
}

/// 127.0.0.1.
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The id and secret in a credential's `HTTP_PROXY`, checking the rest of its environment.
fn id_and_secret(credential: &Credential) -> (String, String) {
    let env = credential.env();
    let get = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap();
    let http = get("HTTP_PROXY");
    let userinfo = http.strip_prefix("http://").unwrap().strip_suffix("@127.0.0.1:3128").unwrap();
    for name in ["HTTPS_PROXY", "http_proxy", "https_proxy"] {
        assert_eq!(get(name), http);
    }
    for name in ["ALL_PROXY", "all_proxy"] {
        assert_eq!(get(name), format!("socks5h://{userinfo}@127.0.0.1:3128"));
    }
    assert_eq!(get("NO_PROXY"), "");
    assert_eq!(get("no_proxy"), "");
    let (id, secret) = userinfo.split_once(':').unwrap();
    assert!(id.starts_with("sbx-") && id.len() == 12, "{id}");
    assert_eq!(secret.len(), 64);
    (id.to_owned(), secret.to_owned())
}

/// A `Proxy-Authorization: Basic` header line.
fn basic_header(id: &str, secret: &str) -> String {
    format!("Proxy-Authorization: Basic {}\r\n", STANDARD.encode(format!("{id}:{secret}")))
}

/// Reads until the peer closes (or the read timeout).
fn read_to_end(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads a response head (through the blank line).
fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "head so far: {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// An origin that echoes every connection's bytes back; its port.
fn echo_origin() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            thread::spawn(move || {
                let mut reader = stream.try_clone().unwrap();
                let _ = std::io::copy(&mut reader, &mut stream);
            });
        }
    });
    port
}

/// An HTTP origin that sends each request head it gets on the channel and answers
/// [`ORIGIN_RESPONSE`]; its port.
fn http_origin() -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let head = read_head(&mut stream);
            stream.write_all(ORIGIN_RESPONSE.as_bytes()).unwrap();
            let _ = tx.send(head);
        }
    });
    (port, rx)
}

/// A SOCKS5 client handshake with `id`/`password` and a CONNECT to a domain; the stream and
/// the auth and request reply bytes (the request reply empty when auth failed).
fn socks_connect(fixture: &Fixture, password: &str, domain: &str, port: u16) -> (TcpStream, [u8; 2], Vec<u8>) {
    let mut stream = fixture.connect();
    stream.write_all(&[5, 1, 2]).unwrap();
    let mut method = [0u8; 2];
    stream.read_exact(&mut method).unwrap();
    assert_eq!(method, [5, 2]);
    let mut auth = vec![1, u8::try_from(fixture.id.len()).unwrap()];
    auth.extend_from_slice(fixture.id.as_bytes());
    auth.push(u8::try_from(password.len()).unwrap());
    auth.extend_from_slice(password.as_bytes());
    stream.write_all(&auth).unwrap();
    let mut status = [0u8; 2];
    stream.read_exact(&mut status).unwrap();
    if status != [1, 0] {
        return (stream, status, Vec::new());
    }
    let mut request = vec![5, 1, 0, 3, u8::try_from(domain.len()).unwrap()];
    request.extend_from_slice(domain.as_bytes());
    request.extend_from_slice(&port.to_be_bytes());
    stream.write_all(&request).unwrap();
    let mut reply = vec![0u8; 10];
    stream.read_exact(&mut reply).unwrap();
    (stream, status, reply)
}

/// A denial.
fn denial(target: &str, reason: DenialReason) -> NetworkDenial {
    NetworkDenial { target: target.to_owned(), reason }
}

/// Checks that a tunnel echoes.
fn assert_echoes(stream: &mut TcpStream, text: &[u8]) {
    stream.write_all(text).unwrap();
    let mut back = vec![0u8; text.len()];
    stream.read_exact(&mut back).unwrap();
    assert_eq!(back, text);
}

#[test]
fn connect_allowed_tunnels_and_forwards_early_bytes() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let mut stream = fx.connect();
    let request = format!("CONNECT origin.test:{port} HTTP/1.1\r\nHost: origin.test:{port}\r\n{}\r\nearly", fx.auth());
    stream.write_all(request.as_bytes()).unwrap();
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let mut early = [0u8; 5];
    stream.read_exact(&mut early).unwrap();
    assert_eq!(&early, b"early");
    assert_echoes(&mut stream, b"ping");
    drop(stream);
    assert_eq!(fx.proxy.finish(), vec![]);
}

#[test]
fn a_head_in_pieces_is_read() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let mut stream = fx.connect();
    let request = format!("CONNECT origin.test:{port} HTTP/1.1\r\n{}\r\n", fx.auth());
    let (start, end) = request.split_at(request.len() - 3);
    for piece in [start, &end[..1], &end[1..2], &end[2..]] {
        stream.write_all(piece.as_bytes()).unwrap();
        thread::sleep(Duration::from_millis(30));
    }
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200 "));
    assert_echoes(&mut stream, b"slow");
    drop(stream);
    assert_eq!(fx.proxy.finish(), vec![]);
}

#[test]
fn connect_not_allowed_is_403() {
    let fx = Fixture::for_origin(echo_origin());
    let response = fx.exchange(&format!("CONNECT Evil.Test:443 HTTP/1.1\r\n{}\r\n", fx.auth()));
    assert!(response.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{response}");
    assert!(response.contains("Connection: close\r\n"), "{response}");
    assert!(response.ends_with("sandbox proxy: tcp:evil.test:443 is not allowed\n"), "{response}");
    assert_eq!(fx.proxy.finish(), vec![denial("tcp:evil.test:443", DenialReason::NotAllowed)]);
}

#[test]
fn wrong_credential_is_407_and_recorded() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let other = Credential::new().unwrap();
    let (other_id, other_secret) = id_and_secret(&other);
    for auth in [
        basic_header(&other_id, &other_secret),
        basic_header(&fx.id, &other_secret),
        String::from("Proxy-Authorization: Basic !!!\r\n"),
        String::from("Proxy-Authorization: Bearer x\r\n"),
    ] {
        let response = fx.exchange(&format!("CONNECT origin.test:{port} HTTP/1.1\r\n{auth}\r\n"));
        assert!(response.starts_with("HTTP/1.1 407 "), "{response}");
    }
    let want = denial(&format!("tcp:origin.test:{port}"), DenialReason::BadCredential);
    assert_eq!(fx.proxy.finish(), vec![want; 4]);
}

#[test]
fn missing_credential_is_407_without_denial() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let response = fx.exchange(&format!("CONNECT origin.test:{port} HTTP/1.1\r\n\r\n"));
    assert!(response.starts_with("HTTP/1.1 407 Proxy Authentication Required\r\n"), "{response}");
    assert!(response.contains("Proxy-Authenticate: Basic realm=\"sandbox\"\r\n"), "{response}");
    assert_eq!(fx.proxy.finish(), vec![]);
}

#[test]
fn absolute_url_is_forwarded_in_origin_form() {
    let (port, heads) = http_origin();
    let fx = Fixture::for_origin(port);
    let request = format!(
        "GET http://origin.test:{port}/path?q=1 HTTP/1.1\r\nHost: ORIGIN.test:{port}\r\n{}\
         Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nX-Kept: 2\r\n\r\n",
        fx.auth()
    );
    let response = fx.exchange(&request);
    assert_eq!(response, ORIGIN_RESPONSE);
    let head = heads.recv_timeout(Duration::from_secs(10)).unwrap();
    // The Host header the origin gets is the target checked, in its normal form.
    assert_eq!(
        head,
        format!("GET /path?q=1 HTTP/1.1\r\nHost: origin.test:{port}\r\nX-Kept: 2\r\nConnection: close\r\n\r\n")
    );
    // Spellings that name the same target (fullwidth letters, a soft hyphen, a trailing dot)
    // pass the check and reach the origin as that target, never as sent.
    for spelled in ["\u{ff4f}rigin.test", "ori\u{ad}gin.test", "origin.test."] {
        let request =
            format!("GET http://origin.test:{port}/x HTTP/1.1\r\nHost: {spelled}:{port}\r\n{}\r\n", fx.auth());
        assert_eq!(fx.exchange(&request), ORIGIN_RESPONSE, "{spelled}");
        let head = heads.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(
            head,
            format!("GET /x HTTP/1.1\r\nHost: origin.test:{port}\r\nConnection: close\r\n\r\n"),
            "{spelled}"
        );
    }
    assert_eq!(fx.proxy.finish(), vec![]);
}

#[test]
fn absolute_url_with_a_body_is_forwarded() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let mut stream = fx.connect();
    let head = format!(
        "POST http://origin.test:{port} HTTP/1.1\r\nHost: origin.test:{port}\r\n{}Content-Length: 4\r\n\r\nbo",
        fx.auth()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(b"dy").unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let echoed = read_to_end(&mut stream);
    let want =
        format!("POST / HTTP/1.1\r\nHost: origin.test:{port}\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody");
    assert_eq!(echoed, want);
    assert_eq!(fx.proxy.finish(), vec![]);
}

#[test]
fn absolute_url_not_allowed_is_403() {
    let fx = Fixture::for_origin(echo_origin());
    let response = fx.exchange(&format!("GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n{}\r\n", fx.auth()));
    assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    assert_eq!(fx.proxy.finish(), vec![denial("tcp:evil.test:80", DenialReason::NotAllowed)]);
}

#[test]
fn host_header_differing_from_the_url_is_403() {
    let (port, _heads) = http_origin();
    let fx = Fixture::for_origin(port);
    let url = format!("http://origin.test:{port}/");
    for host in [String::from("evil.test"), format!("origin.test:{}", port.wrapping_add(1)), String::new()] {
        let host = if host.is_empty() { host } else { format!("Host: {host}\r\n") };
        let response = fx.exchange(&format!("GET {url} HTTP/1.1\r\n{host}{}\r\n", fx.auth()));
        assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    }
    let want = denial(&format!("tcp:origin.test:{port}"), DenialReason::HostMismatch);
    assert_eq!(fx.proxy.finish(), vec![want; 3]);
}

#[test]
fn a_connect_whose_host_header_names_another_target_is_403() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    for host in
        [String::from("evil.test"), format!("evil.test:{port}"), format!("origin.test:{}", port.wrapping_add(1))]
    {
        let response =
            fx.exchange(&format!("CONNECT origin.test:{port} HTTP/1.1\r\nHost: {host}\r\n{}\r\n", fx.auth()));
        assert!(response.starts_with("HTTP/1.1 403 "), "{host}: {response}");
    }
    // The same target with or without its port, and no Host at all, are tunnels.
    for host in [format!("Host: origin.test:{port}\r\n"), String::from("Host: ORIGIN.test\r\n"), String::new()] {
        let mut stream = fx.connect();
        let head = format!("CONNECT origin.test:{port} HTTP/1.1\r\n{host}{}\r\n", fx.auth());
        stream.write_all(head.as_bytes()).unwrap();
        let mut buf = [0u8; 12];
        stream.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"HTTP/1.1 200", "{host}");
    }
    let want = denial(&format!("tcp:origin.test:{port}"), DenialReason::HostMismatch);
    assert_eq!(fx.proxy.finish(), vec![want; 3]);
}

#[test]
fn unsupported_requests_are_400() {
    let fx = Fixture::for_origin(echo_origin());
    let auth = fx.auth();
    for request in [
        format!("GET / HTTP/1.1\r\nHost: origin.test\r\n{auth}\r\n"),
        format!("GET https://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n{auth}\r\n"),
        format!("CONNECT origin.test HTTP/1.1\r\n{auth}\r\n"),
        String::from("\x16\x03\x01garbage\r\n\r\n"),
    ] {
        let response = fx.exchange(&request);
        assert!(response.starts_with("HTTP/1.1 400 "), "{request:?}: {response}");
    }
    let reasons: Vec<_> = fx.proxy.finish().into_iter().map(|d| (d.target, d.reason)).collect();
    assert_eq!(
        reasons,
        [
            (String::new(), DenialReason::Unsupported),
            (String::from("tcp:origin.test:443"), DenialReason::Unsupported),
            (String::from("origin.test"), DenialReason::Unsupported),
            (String::new(), DenialReason::Unsupported),
        ]
    );
}

#[test]
fn a_head_too_long_is_refused() {
    let fx = Fixture::for_origin(echo_origin());
    let request = format!("GET http://origin.test/ HTTP/1.1\r\nX-Long: {}\r\n\r\n", "a".repeat(70 * 1024));
    let response = fx.exchange(&request);
    assert!(response.starts_with("HTTP/1.1 431 "), "{response}");
    assert_eq!(fx.proxy.finish(), vec![denial("", DenialReason::Unsupported)]);
}

#[test]
fn ip_literals_must_be_named_exactly() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let response = fx.exchange(&format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n{}\r\n", fx.auth()));
    assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    assert_eq!(fx.proxy.finish(), vec![denial(&format!("tcp:127.0.0.1:{port}"), DenialReason::NotAllowed)]);

    // Named exactly, a non-public address is fine.
    let fx = Fixture::new(&[format!("tcp:127.0.0.1:{port}")], &[]);
    let mut stream = fx.connect();
    stream.write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n{}\r\n", fx.auth()).as_bytes()).unwrap();
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200 "));
    assert_echoes(&mut stream, b"direct");
    drop(stream);
    assert_eq!(fx.proxy.finish(), vec![]);
}

#[test]
fn names_resolving_to_non_public_addresses_are_refused() {
    let port = echo_origin();
    let fx = Fixture::new(&[format!("tcp:localhost:{port}")], &[]);
    let response = fx.exchange(&format!("CONNECT localhost:{port} HTTP/1.1\r\n{}\r\n", fx.auth()));
    assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    assert!(response.contains("non-public"), "{response}");
    assert_eq!(fx.proxy.finish(), vec![denial(&format!("tcp:localhost:{port}"), DenialReason::NotPublic)]);
}

#[test]
fn a_pin_to_a_closed_port_is_502_without_denial() {
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let fx = Fixture::for_origin(closed);
    let response = fx.exchange(&format!("CONNECT origin.test:{closed} HTTP/1.1\r\n{}\r\n", fx.auth()));
    assert!(response.starts_with("HTTP/1.1 502 "), "{response}");
    assert_eq!(fx.proxy.finish(), vec![]);
}

#[test]
fn wildcard_patterns_allow_subdomains() {
    let port = echo_origin();
    let fx = Fixture::new(&[format!("tcp:*.origin.test:{port}")], &[("a.origin.test", LOOPBACK)]);
    let mut stream = fx.connect();
    stream.write_all(format!("CONNECT A.Origin.Test:{port} HTTP/1.1\r\n{}\r\n", fx.auth()).as_bytes()).unwrap();
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200 "));
    assert_echoes(&mut stream, b"wild");
    drop(stream);
    let response = fx.exchange(&format!("CONNECT origin.test:{port} HTTP/1.1\r\n{}\r\n", fx.auth()));
    assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    assert_eq!(fx.proxy.finish(), vec![denial(&format!("tcp:origin.test:{port}"), DenialReason::NotAllowed)]);
}

#[test]
fn socks5_domain_connect_tunnels() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let secret = fx.secret.clone();
    let (mut stream, _, reply) = socks_connect(&fx, &secret, "origin.test", port);
    assert_eq!(reply, [5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    assert_echoes(&mut stream, b"socks");
    drop(stream);
    assert_eq!(fx.proxy.finish(), vec![]);
}

#[test]
fn socks5_wrong_password_is_refused() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let (mut stream, status, _) = socks_connect(&fx, "not-the-secret", "origin.test", port);
    assert_eq!(status, [1, 1]);
    assert_eq!(read_to_end(&mut stream), "");
    assert_eq!(fx.proxy.finish(), vec![denial("", DenialReason::BadCredential)]);
}

#[test]
fn socks5_without_password_method_is_refused() {
    let fx = Fixture::for_origin(echo_origin());
    let mut stream = fx.connect();
    stream.write_all(&[5, 1, 0]).unwrap();
    let mut method = [0u8; 2];
    stream.read_exact(&mut method).unwrap();
    assert_eq!(method, [5, 0xFF]);
    assert_eq!(fx.proxy.finish(), vec![denial("", DenialReason::BadCredential)]);
}

#[test]
fn socks5_not_allowed_is_refused_by_ruleset() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let secret = fx.secret.clone();
    let (_stream, _, reply) = socks_connect(&fx, &secret, "evil.test", 443);
    assert_eq!(reply[..2], [5, 2]);
    let (_stream, _, reply) = socks_connect(&fx, &secret, "localhost", port);
    assert_eq!(reply[..2], [5, 2]);
    assert_eq!(
        fx.proxy.finish(),
        vec![
            denial("tcp:evil.test:443", DenialReason::NotAllowed),
            denial(&format!("tcp:localhost:{port}"), DenialReason::NotAllowed)
        ]
    );
}

#[test]
fn finish_is_prompt_with_a_tunnel_open() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let mut tunnel = fx.connect();
    tunnel.write_all(format!("CONNECT origin.test:{port} HTTP/1.1\r\n{}\r\n", fx.auth()).as_bytes()).unwrap();
    assert!(read_head(&mut tunnel).starts_with("HTTP/1.1 200 "));
    assert_echoes(&mut tunnel, b"open");
    let mut idle = fx.connect();
    idle.write_all(b"GET http://origin.test/ HTTP/1.1\r\n").unwrap();
    thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    assert_eq!(fx.proxy.finish(), vec![]);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(read_to_end(&mut tunnel), "");
    assert_eq!(read_to_end(&mut idle), "");
}

#[test]
fn denials_come_back_in_order() {
    let port = echo_origin();
    let fx = Fixture::for_origin(port);
    let auth = fx.auth();
    fx.exchange(&format!("CONNECT one.test:1 HTTP/1.1\r\n{auth}\r\n"));
    fx.exchange(&format!("CONNECT origin.test:{port} HTTP/1.1\r\n{}\r\n", basic_header("x", "y")));
    fx.exchange(&format!("CONNECT two.test:2 HTTP/1.1\r\n{auth}\r\n"));
    let want = vec![
        denial("tcp:one.test:1", DenialReason::NotAllowed),
        denial(&format!("tcp:origin.test:{port}"), DenialReason::BadCredential),
        denial("tcp:two.test:2", DenialReason::NotAllowed),
    ];
    assert_eq!(fx.proxy.denials(), want);
    assert_eq!(fx.proxy.finish(), want);
}

#[test]
fn connections_beyond_the_limit_are_closed() {
    let fx = Fixture::for_origin(echo_origin());
    let held: Vec<TcpStream> = (0..MAX_CONNECTIONS).map(|_| fx.connect()).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while fx.proxy.shared.active.load(Ordering::SeqCst) < MAX_CONNECTIONS {
        assert!(Instant::now() < deadline, "the held connections were not all accepted");
        thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..2 {
        let mut extra = fx.connect();
        let started = Instant::now();
        assert_eq!(read_to_end(&mut extra), "");
        assert!(started.elapsed() < Duration::from_secs(3));
    }
    drop(held);
    // Reported, once.
    assert_eq!(fx.proxy.finish(), vec![denial("connections", DenialReason::Busy)]);
}

/// A red team, 5 December: eight runs of one process holding 64 idle connections each took
/// the process's whole budget, and every other run's proxy closed its connections unserved
/// without a word. With the shared pool used up (a pool of the test's own, full), a run still
/// gets its reserve: its first connections are served (a tunnel through each works), the one
/// beyond is closed, and the report says `busy`.
#[test]
fn a_run_keeps_its_reserve_when_the_shared_pool_is_used_up() {
    let port = echo_origin();
    let full: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(MAX_CONNECTIONS_IN_PROCESS)));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let policy = ProxyPolicy {
        allow: vec![TargetPattern::parse(&format!("tcp:origin.test:{port}")).unwrap()],
        pins: vec![(Host::parse("origin.test").unwrap(), vec![LOOPBACK])],
    };
    let credential = Credential::new().unwrap();
    let (id, secret) = id_and_secret(&credential);
    let proxy = Proxy::start_in(OwnedFd::from(listener), policy, credential, full).unwrap();
    let fx = Fixture { proxy, addr, id, secret };
    let auth = fx.auth();
    let mut tunnels = Vec::new();
    for i in 0..RESERVED_PER_RUN {
        let mut s = fx.connect();
        s.write_all(format!("CONNECT origin.test:{port} HTTP/1.1\r\n{auth}\r\n").as_bytes()).unwrap();
        let mut head = [0u8; 39];
        s.read_exact(&mut head).unwrap();
        assert!(head.starts_with(b"HTTP/1.1 200"), "reserved connection {i}: {:?}", String::from_utf8_lossy(&head));
        tunnels.push(s);
    }
    let mut extra = fx.connect();
    assert_eq!(read_to_end(&mut extra), "");
    drop(tunnels);
    assert_eq!(fx.proxy.finish(), vec![denial("connections", DenialReason::Busy)]);
    assert_eq!(full.load(Ordering::SeqCst), MAX_CONNECTIONS_IN_PROCESS, "the pool was drawn on or given back to");
}

#[test]
fn dropping_a_proxy_stops_it() {
    let fx = Fixture::for_origin(echo_origin());
    let mut idle = fx.connect();
    let started = Instant::now();
    drop(fx.proxy);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(read_to_end(&mut idle), "");
}

#[test]
fn denials_print_target_and_reason() {
    assert_eq!(denial("tcp:a.test:1", DenialReason::NotPublic).to_string(), "tcp:a.test:1: not-public");
    assert_eq!(denial("", DenialReason::BadCredential).to_string(), "bad-credential");
    assert_eq!(DenialReason::HostMismatch.to_string(), "host-mismatch");
    assert_eq!(DenialReason::Unsupported.as_str(), "unsupported");
    assert_eq!(DenialReason::NotAllowed.as_str(), "not-allowed");
    assert_eq!(printable("a\r\nb\u{202e}"), "a\\r\\nb\\u{202e}");
    assert_eq!(printable(&"x".repeat(400)).len(), 300);
}

#[test]
fn credentials_are_fresh_and_checked_by_digest() {
    let a = Credential::new().unwrap();
    let b = Credential::new().unwrap();
    let (a_id, a_secret) = id_and_secret(&a);
    assert_ne!(id_and_secret(&b), (a_id.clone(), a_secret.clone()));
    let verifier = Verifier { digest: a.digest };
    assert!(verifier.check(a_id.as_bytes(), a_secret.as_bytes()));
    assert!(!verifier.check(a_id.as_bytes(), b"nope"));
    assert!(!verifier.check(b"", format!("{a_id}:{a_secret}").as_bytes()));
    assert!(!format!("{a:?}").contains(&a_secret));
}

#[test]
fn requests_are_classified() {
    let host = |s: &str| Host::parse(s).unwrap();
    assert_eq!(classify("CONNECT", "[::1]:443"), Ask::Connect { host: host("::1"), port: 443 });
    assert_eq!(
        classify("GET", "HTTP://Example.COM?x"),
        Ask::Forward { host: host("example.com"), port: 80, path: String::from("/?x") }
    );
    assert_eq!(
        classify("PUT", "http://example.com:8080/a#frag"),
        Ask::Forward { host: host("example.com"), port: 8080, path: String::from("/a") }
    );
    assert!(matches!(classify("GET", "http://user@example.com/"), Ask::Refuse { .. }));
    assert!(matches!(classify("CONNECT", "example.com:0"), Ask::Refuse { .. }));
    assert_eq!(parse_authority("example.com:", Some(80)), Some((host("example.com"), 80)));
    assert_eq!(parse_authority("::1:80", Some(80)), None);
    assert_eq!(parse_authority("[::1]x", Some(80)), None);
    assert_eq!(parse_authority("a.test:65536", Some(80)), None);
}

#[test]
fn a_socks_handshake_dripped_byte_by_byte_ends_at_the_deadline() {
    let fx = Fixture::for_origin(echo_origin());
    let mut stream = fx.connect();
    let start = Instant::now();
    // Version, then a method count of 255, then one method byte every 2 s: each read alone is
    // well within the per-read timeout, the whole handshake is not.
    stream.write_all(&[0x05, 0xff]).unwrap();
    let mut closed = false;
    while start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_secs(2));
        if stream.write_all(&[0x00]).is_err() {
            closed = true;
            break;
        }
        let mut buf = [0u8; 1];
        stream.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => closed = true,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => closed = true,
            _ => {}
        }
        if closed {
            break;
        }
    }
    assert!(closed && start.elapsed() < Duration::from_secs(15), "closed {closed} after {:?}", start.elapsed());
    assert_eq!(fx.proxy.finish(), vec![]);
}

#[test]
fn the_hosts_file_is_read_like_the_resolver_reads_it() {
    let text = "127.0.0.1 localhost\n::1 localhost ip6-localhost # comment\n# 10.0.0.1 commented\n\
                10.1.2.3 Build.Internal build\nnot-an-ip name\n";
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    assert_eq!(upstream::hosts_lookup(text, "localhost"), Some(vec![ip("127.0.0.1"), ip("::1")]));
    assert_eq!(upstream::hosts_lookup(text, "build.internal"), Some(vec![ip("10.1.2.3")]));
    assert_eq!(upstream::hosts_lookup(text, "commented"), None);
    assert_eq!(upstream::hosts_lookup(text, "name"), None);
    assert_eq!(upstream::hosts_lookup(text, "other.test"), None);
}

#[test]
fn is_public_table() {
    let v4 = |a, b, c, d| IpAddr::V4(Ipv4Addr::new(a, b, c, d));
    let v6 = |s: &str| IpAddr::V6(s.parse::<Ipv6Addr>().unwrap());
    let table = [
        (v4(0, 1, 2, 3), false),
        (v4(10, 1, 2, 3), false),
        (v4(100, 64, 0, 1), false),
        (v4(100, 127, 255, 255), false),
        (v4(100, 128, 0, 1), true),
        (v4(127, 0, 0, 1), false),
        (v4(169, 254, 169, 254), false),
        (v4(172, 16, 0, 1), false),
        (v4(172, 31, 255, 255), false),
        (v4(172, 32, 0, 1), true),
        (v4(192, 0, 0, 9), false),
        (v4(192, 0, 2, 1), false),
        (v4(192, 168, 1, 1), false),
        (v4(192, 88, 99, 1), false),
        (v4(198, 18, 0, 1), false),
        (v4(198, 19, 255, 255), false),
        (v4(198, 20, 0, 1), true),
        (v4(198, 51, 100, 1), false),
        (v4(203, 0, 113, 1), false),
        (v4(224, 0, 0, 1), false),
        (v4(239, 255, 255, 255), false),
        (v4(240, 0, 0, 1), false),
        (v4(255, 255, 255, 255), false),
        (v4(1, 1, 1, 1), true),
        (v4(8, 8, 8, 8), true),
        (v4(93, 184, 216, 34), true),
        (v4(9, 255, 255, 255), true),
        (v4(11, 0, 0, 0), true),
        (v6("::"), false),
        (v6("::1"), false),
        (v6("::7f00:1"), false),
        (v6("::808:808"), false),
        (v6("fc00::1"), false),
        (v6("fdff::1"), false),
        (v6("fe80::1"), false),
        (v6("febf::1"), false),
        (v6("fec0::1"), false),
        (v6("2002:7f00:1::"), false),
        (v6("2002:a00:1::1"), false),
        (v6("2002:808:808::1"), true),
        (v6("2001::1"), false),
        (v6("2001:0:ffff::1"), false),
        (v6("::ffff:0:808:808"), false),
        (v6("ff02::1"), false),
        (v6("2001:db8::1"), false),
        (v6("64:ff9b::808:808"), false),
        (v6("64:ff9b:1::1"), false),
        (v6("100::1"), false),
        (v6("100:0:0:1::1"), true),
        (v6("::ffff:127.0.0.1"), false),
        (v6("::ffff:10.0.0.1"), false),
        (v6("::ffff:8.8.8.8"), true),
        (v6("2606:4700:4700::1111"), true),
        (v6("2001:4860:4860::8888"), true),
    ];
    for (ip, want) in table {
        assert_eq!(is_public(ip), want, "{ip}");
    }
}
