//! The `parkbench` command: parses the command line and maps outcomes to exit codes (see `cli`).

use std::process::ExitCode;

use parkbench::cli::{self, args};

use clap::Parser;

fn main() -> ExitCode {
    // A reader that stops early (`parkbench plan | head -1`) closes stdout: end quietly, as other
    // command-line tools do, instead of panicking on the failed write.
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
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
            // An error may quote an archive: every line of it printable, the lines kept.
            let message = format!("{e:#}");
            let lines: Vec<_> = message
                .split('\n')
                .map(parkbench::text::printable)
                .collect();
            eprintln!("error: {}", lines.join("\n"));
            ExitCode::from(cli::EXIT_KIT)
        }
    }
}
