//! The egress row (issue 17): a small HTTPS GET through the egress proxy (network `gated`, the
//! origin's name allowed and pinned to the host's loopback) against the same GET with network
//! `allow` (the host's namespace, curl connecting directly), both by the library's warm path, in
//! the same run. The origin is a Python HTTPS server on 127.0.0.1 with a certificate made for
//! the run; nothing leaves the host.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sandbox::{Access, Deadline, ExecutorSet, ExecutorSetOptions, Profile, ProfileConfig, TargetPattern};

use super::median_p95;

const ORIGIN: &str = r#"
import http.server, socketserver, ssl, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"name":"left-pad","version":"1.0.0"}\n'
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(('127.0.0.1', 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
threading.Thread(target=s.serve_forever, daemon=True).start()
print(s.server_address[1], flush=True)
sys.stdin.read()
"#;

/// The origin process, killed on drop.
struct Origin(Child);

impl Drop for Origin {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One row: the contender's name, its median and p95 (ms).
pub type Row = (&'static str, f64, f64);

/// Times `runs` GETs each way; None (with the reason) when curl, python3 or openssl is missing.
pub fn egress(ws: &Path, scratch: &Path, runs: usize) -> Result<Result<[Row; 2], String>, String> {
    for tool in ["curl", "openssl", "python3"] {
        if !super::which(tool) {
            return Ok(Err(format!("{tool} (apt-get install {tool})")));
        }
    }
    let (cert, key) = sandbox_tests::test_certificate(ws, &["registry.test"])?;
    let mut child = Command::new("python3")
        .args(["-c", ORIGIN])
        .arg(&cert)
        .arg(&key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let origin = Origin(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).map_err(|e| e.to_string())?;
    let port: u16 = line.trim().parse().map_err(|_| format!("origin said {line:?}"))?;

    let base = ProfileConfig {
        workspace_root: ws.to_path_buf(),
        workspace_read: Access::Allow,
        workspace_write: Access::Allow,
        host_read: Access::Allow,
        command: Access::Allow,
        ..ProfileConfig::default()
    };
    let target = TargetPattern::parse(&format!("tcp:registry.test:{port}")).map_err(|e| e.to_string())?;
    let gated = ProfileConfig { network: Access::Gated, network_targets: vec![target], ..base.clone() };
    let allow = ProfileConfig { network: Access::Allow, ..base };
    let url = format!("https://registry.test:{port}/left-pad");
    let cacert = cert.display().to_string();
    let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
    // Through the proxy: curl takes HTTPS_PROXY from the environment; the proxy resolves the
    // name by its pin. Direct: curl's own --resolve, in the host's namespace.
    let via_proxy: Vec<String> = ["curl", "-fsS", "--cacert", &cacert, &url].map(str::to_owned).to_vec();
    let pin = format!("registry.test:{port}:127.0.0.1");
    let direct: Vec<String> =
        ["curl", "-fsS", "--cacert", &cacert, "--resolve", &pin, &url].map(str::to_owned).to_vec();
    let mut rows = Vec::new();
    for (name, config, argv) in [("HTTPS GET via proxy", gated, via_proxy), ("HTTPS GET, network allow", allow, direct)]
    {
        let profile = Profile::new(config).map_err(|e| e.to_string())?;
        let options = ExecutorSetOptions::new(scratch).max_executors(1).resolve("registry.test", localhost);
        let set = ExecutorSet::new(&Deadline::after(Duration::from_secs(60)), &profile, options)
            .map_err(|e| e.to_string())?;
        let exec = set.executor("egress").map_err(|e| e.to_string())?;
        let dl = || Deadline::after(Duration::from_secs(30));
        let mut samples = Vec::new();
        for i in 0..runs + 2 {
            let start = Instant::now();
            let out = exec.run_argv(&dl(), ws, &argv).map_err(|e| e.to_string())?;
            let took = start.elapsed();
            if !out.status.success() || !out.denials.is_empty() {
                return Err(format!(
                    "{name}: {:?} {:?}: {}",
                    out.status,
                    out.denials,
                    String::from_utf8_lossy(&out.bytes)
                ));
            }
            // Two warm-up calls; a pause so that each call gets a warm container.
            if i >= 2 {
                samples.push(took);
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        let (median, p95) = median_p95(&mut samples);
        rows.push((name, median, p95));
        drop(exec);
        set.close().map_err(|e| e.to_string())?;
    }
    drop(origin);
    let _ = std::fs::remove_file(&cert);
    let _ = std::fs::remove_file(&key);
    Ok(Ok([rows[0], rows[1]]))
}
