//! The facade's side of the macOS Seatbelt backend: each spawn's bundle compiled to SBPL and
//! run by `sandbox-exec` in its own process group (lifetime containment: best effort). Compiled
//! and type-checked for macOS in CI; never run there (CONTRACT.md §16).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sandbox_bundle::{
    Bundle, CompileReport, Error, GrantDeltas, Guarantees, HostView, Launch, Level, Profile, SpawnContext, compile,
};
use sandbox_seatbelt::{SeatbeltContext, assess, command_line, compile_sbpl};

/// The Seatbelt backend of one executor set.
#[derive(Debug)]
pub(crate) struct MacBackend {
    scratch_root: PathBuf,
}

impl MacBackend {
    /// Probes `sandbox-exec` with a trivial profile.
    pub fn new(scratch_root: &Path) -> Result<Self, Error> {
        sandbox_seatbelt::probe()?;
        Ok(MacBackend { scratch_root: scratch_root.to_path_buf() })
    }

    fn bundle(
        &self,
        profile: &Profile,
        argv: &[OsString],
        cwd: &Path,
        env: &[(String, String)],
        dirs: (Option<&Path>, &Path),
        grants: GrantDeltas,
    ) -> Result<Bundle, Error> {
        let argv = argv
            .iter()
            .map(|a| {
                a.to_str()
                    .map(str::to_owned)
                    .ok_or_else(|| Error::InvalidArgument { detail: String::from("argv: not UTF-8") })
            })
            .collect::<Result<Vec<_>, _>>()?;
        // The `~/` entries in the caller's real HOME, whatever HOME the workload gets.
        let home = crate::set::real_home();
        let protected = sandbox_bundle::protect::scan(profile, Some(home.as_path()));
        let ctx = SpawnContext {
            argv,
            cwd: cwd.to_path_buf(),
            env: env.to_vec(),
            tty: false,
            home_dir: dirs.0.map(Path::to_path_buf),
            temp_dir: dirs.1.to_path_buf(),
            scratch_root: self.scratch_root.clone(),
            other_scratch_roots: Vec::new(),
            uid: 0,
            gid: 0,
            // Seatbelt expresses write-only access natively.
            landlock: true,
            egress_route: false,
            launch: Launch::Export,
            grants,
            protected,
        };
        compile(profile, &ctx, &HostView::scan()).map_err(|e| match e {
            Error::InvalidArgument { detail } => Error::runtime(format!("bundle: {detail}")),
            other => other,
        })
    }

    /// The measured level, guarantees and report for the executor.
    pub fn assess(
        &self,
        profile: &Profile,
        env: &[(String, String)],
        dirs: (Option<&Path>, &Path),
        env_detail: String,
    ) -> Result<(Level, Guarantees, CompileReport), Error> {
        let bundle = self.bundle(
            profile,
            &[OsString::from("/usr/bin/true")],
            profile.workspace_root(),
            env,
            dirs,
            GrantDeltas::default(),
        )?;
        // Every spawn of a gated profile gets the egress proxy (see `Egress`).
        let proxy = sandbox_bundle::egress_proxy(profile, &GrantDeltas::default());
        Ok(assess(profile, &bundle, env_detail, proxy))
    }

    /// `argv` wrapped in `sandbox-exec -p <profile> --`.
    pub fn wrap(
        &self,
        profile: &Profile,
        argv: &[OsString],
        cwd: &Path,
        env: &[(String, String)],
        dirs: (Option<&Path>, &Path),
        grants: GrantDeltas,
        proxy_port: Option<u16>,
    ) -> Result<Vec<OsString>, Error> {
        let bundle = self.bundle(profile, argv, cwd, env, dirs, grants)?;
        let ctx = SeatbeltContext {
            scratch_root: self.scratch_root.clone(),
            home_dir: dirs.0.map(Path::to_path_buf),
            temp_dir: dirs.1.to_path_buf(),
            proxy_port,
        };
        let sbpl = compile_sbpl(&bundle, &ctx)?;
        let argv: Vec<String> = bundle.spec.process().as_ref().and_then(|p| p.args().clone()).unwrap_or_default();
        Ok(command_line(&sbpl, &argv).into_iter().map(OsString::from).collect())
    }
}

/// The egress proxy of one Seatbelt spawn (issue 17): macOS has no private network namespace,
/// so the proxy listens on the host's loopback at a port the kernel chooses, the SBPL allows
/// outbound only to that port, and the per-execution credential keeps every other local process
/// (and every other sandbox) out of it.
#[derive(Debug)]
pub(crate) struct Egress {
    /// The port on `127.0.0.1`.
    pub port: u16,
    listener: std::net::TcpListener,
    credential: crate::proxy::Credential,
    policy: crate::proxy::ProxyPolicy,
}

impl Egress {
    /// None unless the spawn reaches the network only through the proxy (network `Gated`
    /// without a broad grant).
    pub(crate) fn open(
        profile: &Profile,
        grants: &GrantDeltas,
        pins: &[(sandbox_bundle::Host, Vec<std::net::IpAddr>)],
    ) -> Result<Option<Egress>, Error> {
        if !sandbox_bundle::egress_proxy(profile, grants) {
            return Ok(None);
        }
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
            .map_err(|e| Error::io("binding the egress proxy on 127.0.0.1", e))?;
        let port = listener.local_addr().map_err(|e| Error::io("the egress proxy's port", e))?.port();
        let credential = crate::proxy::Credential::new_at(port)?;
        let allow = profile.config().network_targets.iter().chain(&grants.proxy_targets).cloned().collect();
        let policy = crate::proxy::ProxyPolicy { allow, pins: pins.to_vec() };
        Ok(Some(Egress { port, listener, credential, policy }))
    }

    /// The proxy variables of the spawn.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        self.credential.env()
    }

    /// Starts serving.
    pub(crate) fn serve(self) -> Result<crate::proxy::Proxy, Error> {
        crate::proxy::Proxy::start(std::os::fd::OwnedFd::from(self.listener), self.policy, self.credential)
    }
}
