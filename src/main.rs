//! The `parkbench` command: parses the command line and maps outcomes to exit codes (see `cli`).

use std::process::ExitCode;

use parkbench::cli::{self, args};

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return ExitCode::from(cli::EXIT_KIT);
        }
    };
    match runtime.block_on(cli::dispatch(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(cli::EXIT_KIT)
        }
    }
}
