//! `rocescope`: the command line over the library ([`rocescope::cli`]).
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Before anything else: may replace this process with itself.
    rocescope::heap::reexec_with_huge_pages();
    let cli = rocescope::cli::Cli::parse();
    match rocescope::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rocescope: error: {e}");
            ExitCode::FAILURE
        }
    }
}
