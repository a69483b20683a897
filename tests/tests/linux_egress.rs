//! Issue 17: network by name through the egress proxy, from inside a sandbox. Real origins on
//! the host's loopback (plain HTTP and HTTPS with a certificate made for the test names) are
//! reached under names pinned with `resolve`; curl and Python inside go through the proxy's
//! loopback port in the sandbox's own network namespace. Every refused request is checked
//! twice: the client fails, and the run's `denials` names the target and the reason. Positive
//! controls sit next to each refusal. Loopback only: nothing here sends a packet elsewhere.
//! Needs root or the rootless mode. `harness = false`: `main` calls `sandbox::init()` first.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, clippy::tests_outside_test_module)]

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{BufRead, BufReader};
    use std::net::{IpAddr, Ipv4Addr};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use sandbox::{
        Access, DenialReason, Error, Executor, ExecutorSet, ExitStatus, GrantRequest, Output, Profile, ProfileConfig,
        Status, TargetPattern,
    };
    use sandbox_tests::TestDirs;

    pub use sandbox_tests::deadline as dl;

    const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    /// The origins: a plain HTTP and an HTTPS server on the host's loopback, each answering
    /// `origin <scheme> <path> host=<Host> auth=<whether a Proxy-Authorization arrived>`.
    const ORIGIN: &str = r#"
import http.server, socketserver, ssl, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        auth = 'yes' if self.headers.get('Proxy-Authorization') else 'no'
        body = ('origin %s %s host=%s auth=%s\n' % (self.server.scheme, self.path, self.headers.get('Host'), auth)).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
plain = S(('127.0.0.1', 0), H); plain.scheme = 'http'
tls = S(('127.0.0.1', 0), H); tls.scheme = 'https'
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[1], sys.argv[2])
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
for s in (plain, tls):
    threading.Thread(target=s.serve_forever, daemon=True).start()
print(plain.server_address[1], tls.server_address[1], flush=True)
sys.stdin.read()
"#;

    /// The test area, its certificate and the two origins (killed on drop).
    pub struct Origins {
        pub dirs: TestDirs,
        pub http: u16,
        pub https: u16,
        child: Child,
    }

    impl Drop for Origins {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    impl Origins {
        pub fn start() -> Origins {
            let dirs = TestDirs::new("sbx-egress");
            let names = ["origin.test", "a.origin.test", "other.test", "localhost"];
            let (cert, key) = sandbox_tests::test_certificate(&dirs.ws, &names).unwrap();
            let mut child = Command::new("/usr/bin/python3")
                .args(["-c", ORIGIN])
                .arg(&cert)
                .arg(&key)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            let ports: Vec<u16> = line.split_whitespace().map(|p| p.parse().unwrap()).collect();
            Origins { dirs, http: ports[0], https: ports[1], child }
        }

        /// A gated profile allowing `targets`.
        pub fn profile(&self, targets: &[String]) -> Profile {
            let network_targets = targets.iter().map(|t| TargetPattern::parse(t).unwrap()).collect();
            Profile::new(ProfileConfig { network: Access::Gated, network_targets, ..self.dirs.allow_config() }).unwrap()
        }

        /// A set of `profile` with the test names pinned to the host's loopback.
        pub fn set(&self, profile: &Profile) -> ExecutorSet {
            let options = self
                .dirs
                .set_options(4)
                .resolve("origin.test", LOCALHOST)
                .resolve("a.origin.test", LOCALHOST)
                .resolve("other.test", LOCALHOST);
            ExecutorSet::new(&dl(), profile, options).unwrap()
        }
    }

    /// Runs `script` with `sh -c` in the workspace.
    fn sh(exec: &Executor, o: &Origins, script: &str) -> Output {
        exec.run_argv(&dl(), &o.dirs.ws, &["/bin/sh", "-c", script]).unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    fn text(out: &Output) -> String {
        String::from_utf8_lossy(&out.bytes).into_owned()
    }

    fn code(out: &Output) -> i32 {
        match out.status {
            ExitStatus::Code(c) => c,
            other => panic!("{other:?}: {}", text(out)),
        }
    }

    /// curl through the proxy the environment names, trusting the test certificate.
    fn curl(url: &str) -> String {
        format!("curl -fsS --max-time 10 --cacert cert.pem {url}")
    }

    fn denied(out: &Output, target: &str, reason: DenialReason) {
        assert!(
            out.denials.iter().any(|d| d.target == target && d.reason == reason),
            "expected {target} {reason} among {:?}: {}",
            out.denials,
            text(out)
        );
    }

    pub fn allowed_names_work_through_the_proxy_with_curl_and_python() {
        let o = Origins::start();
        let targets = [format!("tcp:origin.test:{}", o.https), format!("tcp:origin.test:{}", o.http)];
        let set = o.set(&o.profile(&targets));
        let exec = set.executor("k").unwrap();
        assert!(exec.guarantees().target_network, "{:?}", exec.report());
        let entry = exec.report().get("target-network").cloned().unwrap();
        assert_eq!(entry.status, Status::Enforced, "{entry:?}");

        let out = sh(&exec, &o, &curl(&format!("https://origin.test:{}/tls", o.https)));
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert!(text(&out).contains("origin https /tls"), "{}", text(&out));
        assert!(out.denials.is_empty(), "{:?}", out.denials);

        // Plain HTTP goes as an absolute-URL request: the origin sees origin-form, the Host it
        // asked for, and no credential.
        let out = sh(&exec, &o, &curl(&format!("http://origin.test:{}/plain", o.http)));
        assert_eq!(code(&out), 0, "{}", text(&out));
        let want = format!("origin http /plain host=origin.test:{} auth=no", o.http);
        assert!(text(&out).contains(&want), "{}", text(&out));

        let py = format!(
            "/usr/bin/python3 -c \"import ssl, urllib.request as u; \
             c = ssl.create_default_context(cafile='cert.pem'); \
             print(u.urlopen('https://origin.test:{}/py', context=c, timeout=10).read().decode()); \
             print(u.urlopen('http://origin.test:{}/py2', timeout=10).read().decode())\"",
            o.https, o.http
        );
        let out = sh(&exec, &o, &py);
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert!(text(&out).contains("origin https /py") && text(&out).contains("origin http /py2"), "{}", text(&out));
        assert!(out.denials.is_empty(), "{:?}", out.denials);
    }

    /// Red team of 4 December: the proxy forwarded whatever followed a request on the same
    /// connection (a pipelined second request naming another Host, or one smuggled in a body
    /// framed by both `Content-Length` and `Transfer-Encoding`), and a raw origin answered both.
    /// Now exactly one request reaches the origin: its head and `Content-Length` bytes of body
    /// (the positive control: a POST body arrives whole), nothing after them; a body in
    /// `Transfer-Encoding` is refused (400, an `Unsupported` denial) and nothing reaches the
    /// origin, and so is a request whose `Connection` header names `Content-Length` (evening red team
    /// of 4 December: the head sent on lost its length, and its body reached the origin as a
    /// second request). The origin here is a raw listener on the host's loopback that records every byte
    /// it gets and answers after the first request's head.
    pub fn one_request_per_connection_reaches_the_origin() {
        use std::io::{Read, Write};
        let o = Origins::start();
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
        let recorder = {
            let received = std::sync::Arc::clone(&received);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    let Ok(mut stream) = stream else { return };
                    stream.set_read_timeout(Some(Duration::from_millis(1500))).unwrap();
                    let mut got = Vec::new();
                    let mut buf = [0u8; 4096];
                    let mut answered = false;
                    loop {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                        if !answered && got.windows(4).any(|w| w == b"\r\n\r\n") {
                            answered = true;
                            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n");
                        }
                    }
                    let last = got.starts_with(b"GET /stop");
                    received.lock().unwrap().push(got);
                    if last {
                        return;
                    }
                }
            })
        };
        let set = o.set(&o.profile(&[format!("tcp:origin.test:{port}")]));
        let exec = set.executor("k").unwrap();
        let py = format!(
            "/usr/bin/python3 - <<'EOF'
import os, socket, urllib.parse, base64
p = urllib.parse.urlsplit(os.environ['HTTP_PROXY'])
auth = 'Proxy-Authorization: Basic ' + base64.b64encode(('%s:%s' % (p.username, p.password)).encode()).decode() + '\\r\\n'
t = 'http://origin.test:{port}'
h = 'Host: origin.test:{port}\\r\\n'
for name, req in [
    ('pipelined', 'GET ' + t + '/first HTTP/1.1\\r\\n' + h + auth + '\\r\\nGET /second HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n'),
    ('post', 'POST ' + t + '/post HTTP/1.1\\r\\n' + h + auth + 'Content-Length: 11\\r\\n\\r\\nhello worldGET /after-body HTTP/1.1\\r\\n\\r\\n'),
    ('clte', 'POST ' + t + '/clte HTTP/1.1\\r\\n' + h + auth + 'Content-Length: 4\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\nGET /smuggled HTTP/1.1\\r\\n\\r\\n'),
    ('conncl', 'POST ' + t + '/conncl HTTP/1.1\\r\\n' + h + auth + 'Connection: content-length\\r\\nContent-Length: 39\\r\\n\\r\\nGET /conncl-smuggled HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'),
    ('conncl2', 'POST ' + t + '/conncl2 HTTP/1.1\\r\\n' + h + auth + 'Connection: keep-alive, Content-Length \\r\\nContent-Length: 4\\r\\n\\r\\nabcd'),
    ('stop', 'GET ' + t + '/stop HTTP/1.1\\r\\n' + h + auth + '\\r\\n'),
]:
    s = socket.create_connection((p.hostname, p.port), timeout=10)
    s.sendall(req.encode())
    got = b''
    while True:
        b = s.recv(4096)
        if not b:
            break
        got += b
    print(name, got.decode(errors='replace').splitlines()[0], got.count(b'HTTP/1.1 200'))
EOF"
        );
        let out = sh(&exec, &o, &py);
        let answer = text(&out);
        // The recorder ends at a `/stop` request: if the script never sent one, send it here
        // (when it did, the listener is closed and this connection is refused).
        if let Ok(mut s) = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)) {
            let _ = s.write_all(b"GET /stop HTTP/1.1\r\n\r\n");
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
        recorder.join().unwrap();
        let received: Vec<String> =
            received.lock().unwrap().iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
        let all = received.join("\n---\n");
        assert!(answer.contains("pipelined HTTP/1.1 200 OK 1"), "{answer}");
        assert!(answer.contains("post HTTP/1.1 200 OK 1"), "{answer}");
        assert!(answer.contains("clte HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("conncl HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("conncl2 HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("stop HTTP/1.1 200 OK 1"), "{answer}");
        // What the origin got: the first request, the POST with its whole body (control), and
        // nothing after either; nothing of the refused one.
        assert!(all.contains("GET /first HTTP/1.1") && all.contains("hello world"), "{all}");
        for never in ["/second", "evil.example", "/after-body", "/clte", "/smuggled", "/conncl"] {
            assert!(!all.contains(never), "the origin got {never}: {all}");
        }
        denied(&out, &format!("tcp:origin.test:{port}"), DenialReason::Unsupported);
        set.close().unwrap();
    }

    pub fn a_wildcard_allows_subdomains_only() {
        let o = Origins::start();
        let set = o.set(&o.profile(&[format!("tcp:*.origin.test:{}", o.https)]));
        let exec = set.executor("k").unwrap();
        let out = sh(&exec, &o, &curl(&format!("https://a.origin.test:{}/sub", o.https)));
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert!(text(&out).contains("origin https /sub"), "{}", text(&out));
        let py = format!(
            "/usr/bin/python3 -c \"import ssl, urllib.request as u; \
             c = ssl.create_default_context(cafile='cert.pem'); \
             print(u.urlopen('https://a.origin.test:{}/pysub', context=c, timeout=10).read().decode())\"",
            o.https
        );
        let out = sh(&exec, &o, &py);
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert!(text(&out).contains("origin https /pysub"), "{}", text(&out));
        let out = sh(&exec, &o, &curl(&format!("https://origin.test:{}/apex", o.https)));
        assert_ne!(code(&out), 0, "{}", text(&out));
        denied(&out, &format!("tcp:origin.test:{}", o.https), DenialReason::NotAllowed);
    }

    pub fn every_other_target_is_refused_and_reported() {
        let o = Origins::start();
        let set = o.set(&o.profile(&[format!("tcp:origin.test:{}", o.https), format!("tcp:localhost:{}", o.https)]));
        let exec = set.executor("k").unwrap();
        // A name not allowed (HTTPS: CONNECT).
        let out = sh(&exec, &o, &curl(&format!("https://other.test:{}/", o.https)));
        assert_ne!(code(&out), 0, "{}", text(&out));
        denied(&out, &format!("tcp:other.test:{}", o.https), DenialReason::NotAllowed);
        // Plain HTTP to a name not allowed (an absolute-URL request).
        let out = sh(
            &exec,
            &o,
            &format!("curl -sS --max-time 10 -o /dev/null -w '%{{http_code}}' http://other.test:{}/", o.http),
        );
        assert!(text(&out).contains("403"), "{}", text(&out));
        denied(&out, &format!("tcp:other.test:{}", o.http), DenialReason::NotAllowed);
        // The allowed name on another port.
        let out = sh(&exec, &o, &curl(&format!("http://origin.test:{}/", o.http)));
        assert_ne!(code(&out), 0, "{}", text(&out));
        denied(&out, &format!("tcp:origin.test:{}", o.http), DenialReason::NotAllowed);
        // An IP literal not listed.
        let out = sh(&exec, &o, &curl(&format!("-k https://127.0.0.1:{}/", o.https)));
        assert_ne!(code(&out), 0, "{}", text(&out));
        denied(&out, &format!("tcp:127.0.0.1:{}", o.https), DenialReason::NotAllowed);
        // An allowed name that resolves to a non-public address (not pinned: the host's DNS).
        let out = sh(&exec, &o, &curl(&format!("https://localhost:{}/", o.https)));
        assert_ne!(code(&out), 0, "{}", text(&out));
        denied(&out, &format!("tcp:localhost:{}", o.https), DenialReason::NotPublic);
        // CONNECT to an allowed target whose Host header names another, and an absolute URL
        // whose Host header differs from it.
        let py = format!(
            "/usr/bin/python3 - <<'EOF'
import os, socket, urllib.parse
p = urllib.parse.urlsplit(os.environ['HTTP_PROXY'])
import base64
auth = base64.b64encode(('%s:%s' % (p.username, p.password)).encode()).decode()
for head in ['CONNECT origin.test:{https} HTTP/1.1\\r\\nHost: other.test:{https}\\r\\n',
             'GET http://origin.test:{http}/x HTTP/1.1\\r\\nHost: other.test:{http}\\r\\n']:
    s = socket.create_connection((p.hostname, p.port), timeout=10)
    s.sendall((head + 'Proxy-Authorization: Basic ' + auth + '\\r\\n\\r\\n').encode())
    print(s.recv(100).decode().splitlines()[0])
EOF",
            https = o.https,
            http = o.http
        );
        let out = sh(&exec, &o, &py);
        assert_eq!(text(&out).matches(" 403 ").count(), 2, "{}", text(&out));
        let mismatches = out.denials.iter().filter(|d| d.reason == DenialReason::HostMismatch).count();
        assert_eq!(mismatches, 2, "{:?}", out.denials);
        // The positive control in the same executor still works.
        let out = sh(&exec, &o, &curl(&format!("https://origin.test:{}/ok", o.https)));
        assert_eq!(code(&out), 0, "{}", text(&out));
    }

    pub fn a_credential_belongs_to_one_execution() {
        let o = Origins::start();
        let set = o.set(&o.profile(&[format!("tcp:origin.test:{}", o.https)]));
        let exec = set.executor("k").unwrap();
        let first = text(&sh(&exec, &o, "printf %s \"$HTTPS_PROXY\""));
        assert!(first.starts_with("http://") && first.ends_with("@127.0.0.1:3128"), "{first}");
        let env = text(&sh(&exec, &o, "env | grep -i _proxy= | sort"));
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
            assert!(env.contains(&format!("{name}=")), "{name}: {env}");
        }
        // Another execution's credential (the first run's) is refused.
        let url = format!("https://origin.test:{}/", o.https);
        let out = sh(&exec, &o, &format!("curl -sS --max-time 10 --cacert cert.pem -x '{first}' {url}"));
        assert_ne!(code(&out), 0, "{}", text(&out));
        denied(&out, &format!("tcp:origin.test:{}", o.https), DenialReason::BadCredential);
        // No credential at all: 407, and the run's own credential works.
        let out = sh(&exec, &o, &format!("curl -sS --max-time 10 --cacert cert.pem -x http://127.0.0.1:3128 {url}"));
        assert_ne!(code(&out), 0, "{}", text(&out));
        let out = sh(&exec, &o, &curl(&url));
        assert_eq!(code(&out), 0, "{}", text(&out));
        // Another set's credential too.
        let other_set = o.set(&o.profile(&[format!("tcp:origin.test:{}", o.https)]));
        let other = other_set.executor("k").unwrap();
        let theirs = text(&sh(&other, &o, "printf %s \"$HTTPS_PROXY\""));
        let out = sh(&exec, &o, &format!("curl -sS --max-time 10 --cacert cert.pem -x '{theirs}' {url}"));
        assert_ne!(code(&out), 0, "{}", text(&out));
        denied(&out, &format!("tcp:origin.test:{}", o.https), DenialReason::BadCredential);
    }

    pub fn nothing_else_leaves_the_namespace() {
        let o = Origins::start();
        let set = o.set(&o.profile(&[format!("tcp:origin.test:{}", o.https)]));
        let exec = set.executor("k").unwrap();
        // No route but lo: the IPv4 and IPv6 routing tables inside (read, not tried).
        let routes = text(&sh(&exec, &o, "cat /proc/net/route; echo ==; cat /proc/net/ipv6_route"));
        let (v4, v6) = routes.split_once("==").unwrap();
        assert_eq!(v4.lines().filter(|l| !l.trim().is_empty()).count(), 1, "only the header: {v4}");
        assert!(v6.lines().filter(|l| !l.trim().is_empty()).all(|l| l.trim_end().ends_with(" lo")), "{v6}");
        // Direct TCP to the origin's port on the host's loopback: inside, 127.0.0.1 is the
        // sandbox's own lo; the proxy's port answers there and nothing else does.
        let script = format!(
            "/usr/bin/python3 - <<'EOF'
import socket, time
for port in ({https}, 3128):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(('127.0.0.1', port)); print(port, 'connected')
    except OSError as e:
        print(port, 'refused', e.errno)
start = time.time()
try:
    socket.getaddrinfo('origin.test', 443)
    print('dns resolved')
except OSError as e:
    print('dns failed %.1f' % (time.time() - start))
EOF",
            https = o.https
        );
        let out = sh(&exec, &o, &script);
        let t = text(&out);
        assert!(t.contains(&format!("{} refused", o.https)), "{t}");
        assert!(t.contains("3128 connected"), "the positive control: {t}");
        let dns = t.lines().find(|l| l.starts_with("dns ")).unwrap();
        let secs: f64 = dns.strip_prefix("dns failed ").unwrap_or_else(|| panic!("{t}")).parse().unwrap();
        assert!(secs < 5.0, "a name lookup inside fails fast: {t}");
        // A relay run inside reaches nothing but the proxy, which applies the same allowlist.
        let relay = format!(
            "/usr/bin/python3 - <<'EOF'
import os, socket, threading, urllib.parse
p = urllib.parse.urlsplit(os.environ['HTTP_PROXY'])
srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)
def relay():
    c, _ = srv.accept()
    u = socket.create_connection((p.hostname, p.port))
    u.sendall(c.recv(65536)); c.sendall(u.recv(65536)); c.close(); u.close()
threading.Thread(target=relay, daemon=True).start()
import base64
auth = base64.b64encode(('%s:%s' % (p.username, p.password)).encode()).decode()
s = socket.create_connection(srv.getsockname())
s.sendall(('CONNECT other.test:{https} HTTP/1.1\\r\\nProxy-Authorization: Basic ' + auth + '\\r\\n\\r\\n').encode())
print(s.recv(100).decode().splitlines()[0])
EOF",
            https = o.https
        );
        let out = sh(&exec, &o, &relay);
        assert!(text(&out).contains(" 403 "), "{}", text(&out));
        denied(&out, &format!("tcp:other.test:{}", o.https), DenialReason::NotAllowed);
    }

    pub fn a_proxy_target_grant_opens_one_target_for_one_spawn() {
        let o = Origins::start();
        let set = o.set(&o.profile(&[]));
        let exec = set.executor("k").unwrap();
        let url = format!("https://origin.test:{}/granted", o.https);
        let command = curl(&url);
        let out = sh(&exec, &o, &command);
        assert_ne!(code(&out), 0, "{}", text(&out));
        denied(&out, &format!("tcp:origin.test:{}", o.https), DenialReason::NotAllowed);
        let expiry = i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap() + 60_000;
        let grant = |target: &str| GrantRequest {
            execution_id: String::from("e1"),
            command: command.clone(),
            cwd: o.dirs.ws.clone(),
            kind: String::from("network"),
            scope: String::new(),
            class: String::from("network.proxy-target.v1"),
            target: target.to_owned(),
            expiry_unix_ms: expiry,
        };
        let target = format!("tcp:origin.test:{}", o.https);
        let token = exec.issue_grant(&dl(), &grant(&target)).unwrap();
        let out =
            exec.run_command_with_grants(&dl(), "e1", &o.dirs.ws, &command, std::slice::from_ref(&token)).unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert!(text(&out).contains("origin https /granted"), "{}", text(&out));
        // Single use, and the next spawn without it is refused again.
        let again = exec.run_command_with_grants(&dl(), "e1", &o.dirs.ws, &command, &[token]);
        assert!(matches!(again, Err(Error::GrantReplay)), "{again:?}");
        let out = exec.run_command(&dl(), &o.dirs.ws, &command).unwrap();
        assert_ne!(code(&out), 0, "{}", text(&out));
        // A wildcard is no grant target.
        let wild = exec.issue_grant(&dl(), &grant(&format!("tcp:*.origin.test:{}", o.https)));
        assert!(matches!(wild, Err(Error::GrantMalformed { .. })), "{wild:?}");
    }

    pub fn targets_need_a_gated_network() {
        let o = Origins::start();
        for network in [Access::Deny, Access::Allow] {
            let config = ProfileConfig {
                network,
                network_targets: vec![TargetPattern::parse("tcp:origin.test:443").unwrap()],
                ..o.dirs.allow_config()
            };
            match Profile::new(config) {
                Err(Error::InvalidProfile { detail }) => assert!(detail.starts_with("network_targets"), "{detail}"),
                other => panic!("{network}: {other:?}"),
            }
        }
        // Deny: no proxy, no target-network, nothing in the environment.
        let deny = Profile::new(ProfileConfig { network: Access::Deny, ..o.dirs.allow_config() }).unwrap();
        let set = o.set(&deny);
        let exec = set.executor("k").unwrap();
        assert!(!exec.guarantees().target_network);
        let start = Instant::now();
        let out = sh(&exec, &o, "env | grep -ci _proxy=; curl -sS --max-time 5 http://127.0.0.1:3128/ 2>&1");
        assert!(text(&out).starts_with('0'), "{}", text(&out));
        assert!(start.elapsed() < Duration::from_secs(5), "refused at once: {}", text(&out));
    }

    /// Direct calls: each attempt prints `<name> <errno name or ok> <seconds>`. Documentation
    /// addresses and the sandbox's own loopback only; `CLOSED` is a loopback port nothing
    /// inside listens on.
    const DIRECT: &str = r#"
import errno, socket, sys, time
CLOSED = 9
def attempt(name, f):
    start = time.time()
    try:
        f(); r = 'ok'
    except socket.gaierror as e:
        r = 'gaierror'
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    print(name, r, '%.3f' % (time.time() - start), flush=True)
def tcp(family, host, port):
    s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(5)
    try: s.connect((host, port))
    finally: s.close()
QUERY = b'\x124\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x04test\x00\x00\x01\x00\x01'
def udp_sendto(host):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try: s.sendto(QUERY, (host, 53))
    finally: s.close()
def udp_connect(host):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try: s.connect((host, 53)); s.send(QUERY)
    finally: s.close()
attempt('tcp-remote', lambda: tcp(socket.AF_INET, '192.0.2.1', 443))
attempt('tcp-closed', lambda: tcp(socket.AF_INET, '127.0.0.1', CLOSED))
attempt('tcp-proxy', lambda: tcp(socket.AF_INET, '127.0.0.1', 3128))
attempt('udp-sendto', lambda: udp_sendto('192.0.2.53'))
attempt('udp-connect', lambda: udp_connect('192.0.2.54'))
attempt('udp-loopback', lambda: udp_sendto('127.0.0.1'))
try:
    socket.socket(socket.AF_INET6).close(); v6 = True
except OSError:
    v6 = False
if v6:
    attempt('tcp6-remote', lambda: tcp(socket.AF_INET6, '2001:db8::1', 443))
if 'dns' in sys.argv:
    attempt('dns', lambda: socket.getaddrinfo('example.test', 443))
"#;

    /// The attempts `DIRECT` printed: name → (result, seconds).
    fn attempts(out: &Output) -> std::collections::HashMap<String, (String, f64)> {
        text(out)
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let (name, result, secs) = (w.next()?, w.next()?, w.next()?.parse().ok()?);
                Some((name.to_owned(), (result.to_owned(), secs)))
            })
            .collect()
    }

    fn run_direct(exec: &Executor, o: &Origins, dns: bool) -> Output {
        let mut argv = vec!["/usr/bin/python3", "-c", DIRECT];
        if dns {
            argv.push("dns");
        }
        exec.run_argv(&dl(), &o.dirs.ws, &argv).unwrap()
    }

    /// The direct attempts' results, the same whether the init watches them or not.
    fn assert_refused_as_before(out: &Output, proxy: &str) {
        let a = attempts(out);
        let t = text(out);
        for (name, want) in [
            ("tcp-remote", "ENETUNREACH"),
            ("tcp-closed", "ECONNREFUSED"),
            ("tcp-proxy", proxy),
            ("udp-sendto", "ENETUNREACH"),
            ("udp-connect", "ENETUNREACH"),
            ("udp-loopback", "ok"),
            ("tcp6-remote", "ENETUNREACH"),
        ] {
            if name == "tcp6-remote" && !a.contains_key(name) {
                continue; // No IPv6 here.
            }
            let (got, secs) = a.get(name).unwrap_or_else(|| panic!("{name} missing: {t}"));
            assert_eq!(got, want, "{name}: {t}");
            assert!(*secs < 1.0, "{name} answered at once: {t}");
        }
    }

    pub fn direct_calls_are_refused_and_reported() {
        let o = Origins::start();
        let set = o.set(&o.profile(&[format!("tcp:origin.test:{}", o.https)]));
        let exec = set.executor("k").unwrap();
        let out = run_direct(&exec, &o, true);
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert_refused_as_before(&out, "ok");
        let direct: Vec<&str> =
            out.denials.iter().filter(|d| d.reason == DenialReason::Direct).map(|d| d.target.as_str()).collect();
        for target in ["tcp:192.0.2.1:443", "udp:192.0.2.53:53", "udp:192.0.2.54:53"] {
            denied(&out, target, DenialReason::Direct);
        }
        if attempts(&out).contains_key("tcp6-remote") {
            denied(&out, "tcp:[2001:db8::1]:443", DenialReason::Direct);
        }
        assert!(
            !direct.iter().any(|t| t.contains(":127.") || t.contains("[::1]")),
            "none for the loopback: {direct:?}"
        );
        assert_eq!(DenialReason::Direct.as_str(), "direct");
        // glibc's resolver: refused at once, and reported when /etc/resolv.conf names a server
        // off the loopback (it connects a UDP socket to it).
        let t = text(&out);
        let (dns, secs) = attempts(&out).remove("dns").unwrap_or_else(|| panic!("{t}"));
        assert_ne!(dns, "ok", "{t}");
        assert!(secs < 5.0, "a name lookup inside fails fast: {t}");
        let resolv = text(&sh(&exec, &o, "cat /etc/resolv.conf 2>/dev/null; true"));
        for ns in resolv.lines().filter_map(|l| l.strip_prefix("nameserver")).map(str::trim) {
            let Ok(ip) = ns.parse::<IpAddr>() else { continue };
            let at = std::net::SocketAddr::new(ip, 53).to_string();
            let reported =
                direct.iter().any(|d| d.strip_prefix("udp:").or(d.strip_prefix("tcp:")) == Some(at.as_str()));
            assert_eq!(reported, !ip.is_loopback() && !ip.is_unspecified(), "nameserver {ns}: {direct:?}: {t}");
        }
        // The denials follow the calls' order, after the proxy's (none here).
        let first = ["tcp:192.0.2.1:443", "udp:192.0.2.53:53", "udp:192.0.2.54:53"];
        assert_eq!(direct[..3], first, "{direct:?}");

        // A started process gets them too.
        let options = sandbox::ProcessOptions {
            cwd: o.dirs.ws.clone(),
            argv: ["/usr/bin/python3", "-c", DIRECT].iter().map(std::ffi::OsString::from).collect(),
            execution_id: String::from("e1"),
            ..Default::default()
        };
        let process = exec.prepare_process(&dl(), options).unwrap().start(&dl()).unwrap();
        let result = process.wait(&dl()).unwrap();
        assert_eq!(result.status, ExitStatus::Code(0));
        let targets: Vec<&str> = result.denials.iter().map(|d| d.target.as_str()).collect();
        assert_eq!(targets[..3], first, "{:?}", result.denials);

        // Past 256 records of one run: one count.
        let many = "/usr/bin/python3 -c \"import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n = 0
for i in range(300):
    try: s.sendto(b'x', ('192.0.2.99', 9))
    except OSError: n += 1
print(n)\"";
        let out = sh(&exec, &o, many);
        assert_eq!(text(&out).trim(), "300", "{}", text(&out));
        assert_eq!(out.denials.len(), 257, "{:?}", &out.denials[250..]);
        assert!(out.denials[..256].iter().all(|d| d.target == "udp:192.0.2.99:9" && d.reason == DenialReason::Direct));
        assert_eq!(out.denials[256].target, "... and 44 more");
        // The positive control after all of it.
        let out = sh(&exec, &o, &curl(&format!("https://origin.test:{}/after", o.https)));
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert!(out.denials.is_empty(), "{:?}", out.denials);

        // The watch alone, without protected paths (so without the creation guard).
        let config = ProfileConfig {
            network: Access::Gated,
            network_targets: vec![TargetPattern::parse(&format!("tcp:origin.test:{}", o.https)).unwrap()],
            protected_paths: sandbox::Protection { defaults: false, ..sandbox::Protection::default() },
            ..o.dirs.allow_config()
        };
        let set = o.set(&Profile::new(config).unwrap());
        let exec = set.executor("k").unwrap();
        let out = run_direct(&exec, &o, false);
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert_refused_as_before(&out, "ok");
        let targets: Vec<&str> = out.denials.iter().map(|d| d.target.as_str()).collect();
        assert_eq!(targets[..3], first, "{:?}", out.denials);
        let out = sh(&exec, &o, "echo x > .envrc && cat .envrc && rm .envrc");
        assert_eq!(text(&out), "x\n", "{}", text(&out));
    }

    pub fn direct_calls_are_not_watched_without_the_proxy() {
        let o = Origins::start();
        // Deny: the same private namespace without the proxy; the same answers, nothing recorded.
        let deny = Profile::new(ProfileConfig { network: Access::Deny, ..o.dirs.allow_config() }).unwrap();
        let set = o.set(&deny);
        let exec = set.executor("k").unwrap();
        let out = run_direct(&exec, &o, false);
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert_refused_as_before(&out, "ECONNREFUSED");
        assert!(out.denials.is_empty(), "{:?}", out.denials);
        // Allow: the host's network; only the loopback is tried (the origin on the host's).
        let allow = Profile::new(ProfileConfig { network: Access::Allow, ..o.dirs.allow_config() }).unwrap();
        let set = o.set(&allow);
        let exec = set.executor("k").unwrap();
        let script = format!(
            "/usr/bin/python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {}), timeout=5); \
             print('connected'); s.close()\"",
            o.https
        );
        let out = sh(&exec, &o, &script);
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert!(text(&out).contains("connected"), "{}", text(&out));
        assert!(out.denials.is_empty(), "{:?}", out.denials);
    }
}

fn main() -> std::process::ExitCode {
    sandbox::init();
    #[cfg(target_os = "linux")]
    {
        if !sandbox_tests::privileged("linux_egress") {
            return std::process::ExitCode::SUCCESS;
        }
        use linux::*;
        sandbox_tests::run_tests(&[
            (
                "allowed_names_work_through_the_proxy_with_curl_and_python",
                allowed_names_work_through_the_proxy_with_curl_and_python,
            ),
            ("a_wildcard_allows_subdomains_only", a_wildcard_allows_subdomains_only),
            ("one_request_per_connection_reaches_the_origin", one_request_per_connection_reaches_the_origin),
            ("every_other_target_is_refused_and_reported", every_other_target_is_refused_and_reported),
            ("a_credential_belongs_to_one_execution", a_credential_belongs_to_one_execution),
            ("nothing_else_leaves_the_namespace", nothing_else_leaves_the_namespace),
            (
                "a_proxy_target_grant_opens_one_target_for_one_spawn",
                a_proxy_target_grant_opens_one_target_for_one_spawn,
            ),
            ("targets_need_a_gated_network", targets_need_a_gated_network),
            ("direct_calls_are_refused_and_reported", direct_calls_are_refused_and_reported),
            ("direct_calls_are_not_watched_without_the_proxy", direct_calls_are_not_watched_without_the_proxy),
        ])
    }
    #[cfg(not(target_os = "linux"))]
    std::process::ExitCode::SUCCESS
}
