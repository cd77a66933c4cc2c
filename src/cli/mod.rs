//! The commands, one file each, and the one place that maps how a command ended to an exit code.
//! Their arguments are in `args`; the commands that need images share one [`prepare`] step.

mod archive;
pub mod args;
mod bench;
mod build;
mod check;
mod clean;
mod compare;
mod doctor;
mod explain;
mod interrupt;
mod prepare;
mod report;
mod reproduce;
mod rerun;
mod run;
mod verify;

use std::path::PathBuf;

use anyhow::Result;

use crate::cli::args::{BenchCommand, Cli, Command};
use crate::engine;

pub use interrupt::Interrupt;
pub use prepare::{Prepared, prepare};

/// Exit code: everything worked.
pub const EXIT_OK: u8 = 0;
/// Exit code: the kit itself failed (bad input, Engine unreachable, build failed…).
pub const EXIT_KIT: u8 = 1;
/// Exit code: the run finished but some probe processes failed (invalid samples).
pub const EXIT_PROBES_FAILED: u8 = 3;
/// Exit code: with `--strict`, a claim was not reproduced; with `compare --fail-above`, a cell moved.
pub const EXIT_CLAIMS_DIFFER: u8 = 4;
/// Exit code: interrupted; the run is kept and can be resumed.
pub const EXIT_INTERRUPTED: u8 = 130;

/// How a command ended; [`Ending::code`] is the one mapping to exit codes (an `Err` is [`EXIT_KIT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The kit worked (claims may still differ: that is a finding).
    Ok,
    /// A check of the machine failed (`doctor`).
    NotReady,
    /// The run finished with invalid samples.
    ProbesFailed,
    /// `--strict` and a claim was not reproduced.
    ClaimsDiffer,
    /// `compare --fail-above` and a cell's B ÷ A moved past the threshold.
    RunsDiffer,
    /// Ctrl-C: the running container was removed, the run is kept.
    Interrupted,
}

impl Ending {
    pub fn code(self) -> u8 {
        match self {
            Ending::Ok => EXIT_OK,
            Ending::NotReady => EXIT_KIT,
            Ending::ProbesFailed => EXIT_PROBES_FAILED,
            Ending::ClaimsDiffer | Ending::RunsDiffer => EXIT_CLAIMS_DIFFER,
            Ending::Interrupted => EXIT_INTERRUPTED,
        }
    }

    /// How a run ended, saying what to do about it.
    pub fn of_run(result: &crate::run::lifecycle::RunResult) -> Ending {
        if result.interrupted {
            eprintln!(
                "run incomplete; resume with: parkbench run --resume {}",
                result.dir.path().display()
            );
            Ending::Interrupted
        } else if result.invalid > 0 {
            eprintln!("{} invalid sample(s): see samples.jsonl", result.invalid);
            Ending::ProbesFailed
        } else {
            Ending::Ok
        }
    }
}

/// Where the repository and the results are.
pub struct Paths {
    pub repo: PathBuf,
    pub results: PathBuf,
}

/// Runs the command. Ctrl-C stops it: a run in progress keeps its samples and is marked incomplete;
/// anything else is dropped, and the containers it had started are removed before this returns.
pub async fn dispatch(cli: Cli) -> Result<u8> {
    let paths = Paths {
        results: cli
            .results
            .clone()
            .unwrap_or_else(|| cli.repo.join("results")),
        repo: cli.repo,
    };
    let interrupt = Interrupt::install();
    let ended = tokio::select! {
        ended = command(cli.command, &paths, &interrupt) => ended,
        () = interrupt.unclaimed() => Ok(Ending::Interrupted),
    };
    engine::settle().await;
    ended.map(Ending::code)
}

async fn command(command: Command, paths: &Paths, interrupt: &Interrupt) -> Result<Ending> {
    match command {
        Command::Doctor => doctor::command().await,
        Command::Build(args) => build::command(&paths.repo, &args).await,
        Command::Run(args) => run::command(paths, &args, interrupt).await,
        Command::Report(args) => report::command(&args.run_dir).map(|_| Ending::Ok),
        Command::Archive(args) => archive::command(&paths.repo, &args.run_dir, args.with_images)
            .await
            .map(|_| Ending::Ok),
        Command::Check(args) => check::command(&args.archive),
        Command::Verify(args) => verify::command(&args.path),
        Command::Compare(args) => compare::command(&args),
        Command::Reproduce(args) => reproduce::command(paths, &args, interrupt).await,
        Command::Rerun(args) => rerun::command(paths, &args, interrupt).await,
        Command::Explain(args) => explain::command(paths, &args, interrupt).await,
        Command::Clean(args) => clean::command(&args).await,
        Command::Bench(BenchCommand::Fidelity(args)) => bench::fidelity(&paths.repo, &args).await,
    }
}
