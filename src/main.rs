//! parkbench: rerun published runtime benchmarks in pinned containers, with evidence attached.
//!
//! The pipeline, one module per stage: pins → base rootfs and images (`pin`, `artifact`, `image`) →
//! runs and raw samples (`run`, `sample`, `env`) → statistics and report (`summary`, `report`) →
//! verdicts (`verdict`) → archive (`archive`). Only `engine` talks to the Docker Engine.

mod archive;
mod artifact;
mod bench;
mod cache;
mod cli;
mod context;
mod cpuset;
mod doctor;
mod engine;
mod env;
mod image;
mod pin;
mod report;
mod run;
mod sample;
mod study;
mod summary;
mod verdict;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
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
