//! The stage-11 proof (CONTRACT.md §20): `echo confined` in a denied-network, isolated-home
//! sandbox, then the level, guarantees and report the OS actually enforced.

use std::process::ExitCode;

fn main() -> ExitCode {
    sandbox::init();
    match sandbox::proof::stage11(&mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stage-11: {e}");
            ExitCode::FAILURE
        }
    }
}
