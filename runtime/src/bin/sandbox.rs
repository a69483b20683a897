//! The `sandbox` command line: thin verbs over the public facade (CONTRACT.md §18).
//!
//! Exit status: 0 on success; 125 for a sandbox error (`sandbox: <error>` on stderr); 2 for a
//! usage error (clap's own exit code).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sandbox::bundle::{ExportRequest, HostView, export_bundle};
use sandbox::{Access, Error, Home, Isolation, Profile, ProfileConfig};

#[derive(Parser, Debug)]
#[command(
    name = "sandbox",
    version,
    about = "Run agent tool calls in micro-containers and report what the OS enforced"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// OCI bundle operations.
    Bundle {
        #[command(subcommand)]
        command: BundleCommand,
    },
}

#[derive(Subcommand, Debug)]
enum BundleCommand {
    /// Write the OCI bundle sandbox would run for ARGV into --out (missing or empty); prints it.
    Export {
        /// Output directory: missing (its parent must exist) or empty.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// A JSON profile file (ProfileConfig keys); default: the current directory as a
        /// read-write workspace, host read allow, host write deny, network deny.
        #[arg(long, value_name = "FILE")]
        profile: Option<PathBuf>,
        /// The working directory of the command (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// The command and its arguments (no shell).
        #[arg(last = true, required = true, value_name = "ARGV")]
        argv: Vec<OsString>,
    },
}

fn main() -> ExitCode {
    sandbox::init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sandbox: {e}");
            ExitCode::from(125)
        }
    }
}

fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Bundle { command: BundleCommand::Export { out, profile, cwd, argv } } => {
            let current = std::env::current_dir().map_err(|e| Error::io("current directory", e))?;
            let profile = load_profile(profile.as_deref(), &current)?;
            let cwd = match cwd {
                Some(c) if c.is_relative() => current.join(c),
                Some(c) => c,
                None => current,
            };
            let (uid, gid) = ids();
            let request = ExportRequest {
                argv,
                cwd,
                env_snapshot: std::env::vars_os().collect(),
                real_home: std::env::var_os("HOME").map(PathBuf::from),
                uid,
                gid,
                ..ExportRequest::default()
            };
            export_bundle(&profile, &HostView::scan(), &request, &out)?;
            println!("{}", out.display());
            Ok(())
        }
    }
}

/// The profile from `--profile`, or the CLI default for `current` (CONTRACT.md §18).
fn load_profile(file: Option<&std::path::Path>, current: &std::path::Path) -> Result<Profile, Error> {
    let config = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Error::InvalidProfile { detail: format!("--profile {}: {e}", path.display()) })?;
            ProfileConfig::from_json(&text)?
        }
        None => ProfileConfig {
            workspace_root: current.to_path_buf(),
            workspace_read: Access::Allow,
            workspace_write: Access::Allow,
            host_read: Access::Allow,
            host_write: Access::Deny,
            network: Access::Deny,
            command: Access::Allow,
            home: Home::IsolatedHome,
            isolation: Isolation::Sandboxed,
            additional_roots: Vec::new(),
            ack_unconfined: false,
        },
    };
    Profile::new(config)
}

#[cfg(unix)]
fn ids() -> (u32, u32) {
    (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw())
}

#[cfg(not(unix))]
fn ids() -> (u32, u32) {
    (0, 0)
}
