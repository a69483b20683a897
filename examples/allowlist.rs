//! Network by name through the allowlist (issue 17): a package-manager-like fetch. A tiny
//! "registry" serves a package on the host's loopback; the profile's network is gated and allows
//! only `tcp:registry.test:<port>`; the set pins `registry.test` (and, so that only the allowlist
//! refuses it, `evil.test`) to 127.0.0.1. Inside, curl goes through the egress proxy the
//! environment names: the registry's package lands in the workspace, and a request for
//! `evil.test` is refused by the proxy and comes back as a denial. Loopback only.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sandbox::{Access, Deadline, DenialReason, ExecutorSet, ExecutorSetOptions, Profile, ProfileConfig, TargetPattern};

const TARBALL: &str = "left-pad-1.0.0.tgz";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sandbox::init();
    let base = std::env::temp_dir().join(format!("sandbox-allowlist-example-{}", std::process::id()));
    std::fs::create_dir_all(base.join("ws"))?;
    std::fs::create_dir_all(base.join("scratch"))?;
    let result = run(&base);
    let _ = std::fs::remove_dir_all(&base);
    result?;
    println!("ok");
    Ok(())
}

/// The package's bytes (binary, so a byte-exact copy is checked).
fn package() -> Vec<u8> {
    (0u8..=255).cycle().take(1500).map(|b| b.wrapping_mul(7)).collect()
}

/// The registry: `/index.json` and the package, each answered once per connection; every
/// request line it gets goes into `seen`.
fn start_registry(seen: Arc<Mutex<Vec<String>>>) -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = serve(stream, &seen);
        }
    });
    Ok(port)
}

fn serve(mut stream: TcpStream, seen: &Mutex<Vec<String>>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
    if let Ok(mut seen) = seen.lock() {
        seen.push(request.trim_end().to_owned());
    }
    let (status, body) = match path.as_str() {
        "/index.json" => ("200 OK", br#"{"left-pad": {"latest": "1.0.0"}}"#.to_vec()),
        "/pkg/left-pad/-/left-pad-1.0.0.tgz" => ("200 OK", package()),
        _ => ("404 Not Found", b"no such package\n".to_vec()),
    };
    write!(stream, "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())?;
    stream.write_all(&body)
}

fn run(base: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let port = start_registry(Arc::clone(&seen))?;
    let profile = Profile::new(ProfileConfig {
        network: Access::Gated,
        network_targets: vec![TargetPattern::parse(&format!("tcp:registry.test:{port}"))?],
        ..sandbox::proof::profile_config(base.join("ws"))
    })?;
    let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let options = ExecutorSetOptions::new(base.join("scratch"))
        .max_executors(1)
        .resolve("registry.test", localhost)
        .resolve("evil.test", localhost);
    let dl = || Deadline::after(Duration::from_secs(30));
    let set = ExecutorSet::new(&dl(), &profile, options)?;
    let exec = set.executor("allowlist")?;
    let ws = profile.workspace_root();
    let registry = format!("http://registry.test:{port}");

    // The allowed name: the index, then the package into the workspace.
    let out = exec.run_command(&dl(), ws, &format!("curl -fsS --max-time 10 {registry}/index.json"))?;
    let text = String::from_utf8_lossy(&out.bytes);
    if !out.status.success() || !text.contains("\"latest\": \"1.0.0\"") || !out.denials.is_empty() {
        return Err(format!("the index: {:?} {text:?} {:?}", out.status, out.denials).into());
    }
    println!("index: {}", text.trim());
    let fetch = format!("curl -fsS --max-time 10 -o {TARBALL} {registry}/pkg/left-pad/-/{TARBALL}");
    let out = exec.run_command(&dl(), ws, &fetch)?;
    if !out.status.success() || !out.denials.is_empty() {
        let text = String::from_utf8_lossy(&out.bytes);
        return Err(format!("the package: {:?} {text:?} {:?}", out.status, out.denials).into());
    }
    let fetched = std::fs::read(ws.join(TARBALL))?;
    if fetched != package() {
        return Err(format!("{TARBALL}: {} bytes, not the registry's {}", fetched.len(), package().len()).into());
    }
    println!("fetched {TARBALL} ({} bytes)", fetched.len());

    // A name not on the list (pinned to the same loopback address): refused by the proxy, and
    // the registry never sees the request.
    let before = seen.lock().map_err(|_| "poisoned")?.len();
    let out = exec.run_command(&dl(), ws, &format!("curl -fsS --max-time 10 http://evil.test:{port}/"))?;
    let want = format!("tcp:evil.test:{port}");
    if out.status.success() || out.denials.is_empty() {
        let text = String::from_utf8_lossy(&out.bytes);
        return Err(format!("evil.test was not refused: {:?} {text:?} {:?}", out.status, out.denials).into());
    }
    for d in &out.denials {
        if d.target != want || d.reason != DenialReason::NotAllowed {
            return Err(format!("unexpected denial {d:?}").into());
        }
        println!("denied: {}: {}", d.target, d.reason);
    }
    if seen.lock().map_err(|_| "poisoned")?.len() != before {
        return Err("the registry saw the refused request".into());
    }

    // What the OS enforced for this executor.
    let entry = exec.report().get("target-network").cloned().ok_or("no target-network report entry")?;
    if !exec.guarantees().target_network || entry.status != sandbox::Status::Enforced {
        return Err(format!("target-network not enforced: {entry:?}").into());
    }
    println!("target-network: {}", entry.status);
    drop(exec);
    set.close()?;
    Ok(())
}
