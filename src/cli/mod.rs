//! Argument plumbing: the command line (`args`, one clap struct per subcommand) handed to what the
//! command does (`ops`), and the one place that maps how a command ended to an exit code.
//!
//! May import every stage below; holds no logic a command shares with another.

pub mod args;
#[cfg(test)]
mod suggested;

use anyhow::Result;

use crate::cli::args::{BenchCommand, Cli, Command, NewCommand, PinCommand};
use crate::engine;
use crate::ops::{self, Ending, Interrupt, Paths};

/// Exit code: everything worked.
pub const EXIT_OK: u8 = 0;
/// Exit code: the kit itself failed (bad input, Engine unreachable, build failed…).
pub const EXIT_KIT: u8 = 1;
/// Exit code: the run finished but some probe processes failed (invalid samples) that no `outcome`
/// claim expects to fail, or a probe's image failed to build (an unavailable toolchain is this
/// machine's limit: [`EXIT_OK`]).
pub const EXIT_PROBES_FAILED: u8 = 3;
/// Exit code: with `--strict`, a claim was not reproduced; with `compare --fail-above`, a cell moved.
pub const EXIT_CLAIMS_DIFFER: u8 = 4;
/// Exit code: a host of a run across hosts stopped answering; the run is kept, incomplete, and
/// `run --resume` finishes it.
pub const EXIT_HOSTS_LOST: u8 = 5;
/// Exit code: interrupted; the run is kept and can be resumed.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The exit code of a command that ended so (an `Err` is [`EXIT_KIT`]).
pub fn code(ending: Ending) -> u8 {
    match ending {
        Ending::Ok => EXIT_OK,
        Ending::NotReady => EXIT_KIT,
        Ending::ProbesFailed => EXIT_PROBES_FAILED,
        Ending::ClaimsDiffer | Ending::RunsDiffer => EXIT_CLAIMS_DIFFER,
        Ending::HostsLost => EXIT_HOSTS_LOST,
        Ending::Interrupted => EXIT_INTERRUPTED,
    }
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
    let interrupt = Interrupt::install(EXIT_INTERRUPTED);
    let (ended, dropped) = tokio::select! {
        ended = command(cli.command, &paths, &interrupt) => (ended, false),
        () = interrupt.unclaimed() => (Ok(Ending::Interrupted), true),
    };
    engine::settle().await;
    if dropped {
        // A run loop says how to resume its run; a command dropped by Ctrl-C says this once the
        // removals of its containers are done.
        eprintln!(
            "stopped by Ctrl-C: the containers it had started are removed (any that could not be \
             is named above)"
        );
    }
    // A command an error names runs as pasted, as the closing lines' do.
    ended
        .map(code)
        .map_err(|e| anyhow::anyhow!("{}", paths.said(&e)))
}

async fn command(command: Command, paths: &Paths, interrupt: &Interrupt) -> Result<Ending> {
    let repo = &paths.repo;
    match command {
        Command::Doctor(a) => ops::doctor::command(&a.into()).await,
        Command::New(NewCommand::Study(a)) => ops::new::study(paths, &a.id, &a.probes),
        Command::New(NewCommand::Probe(a)) => match a.lang {
            Some(lang) => {
                let kind = a.kind.unwrap_or_default();
                ops::new::probe(paths, &a.name, lang, kind)
            }
            None => {
                let kind = a.kind.unwrap_or(crate::study::Kind::ANY_PROGRAM);
                ops::new::debian_probe(paths, &a.name, &a.debian, kind)
            }
        },
        Command::Plan(a) => ops::plan::plan(paths, &a.into()).await,
        Command::Build(a) => ops::prepare::build(repo, &a.options(), a.manifest.as_deref()).await,
        Command::Pin(PinCommand::Lock(a)) => {
            tokio::task::block_in_place(|| ops::pin::lock(repo, &a.name))
        }
        Command::Pin(PinCommand::Update(a)) => {
            tokio::task::block_in_place(|| ops::pin::update(repo, &a.name))
        }
        Command::Run(a) => ops::run::command(paths, &a.into(), interrupt).await,
        Command::Report(a) => ops::report::report(&a.run_dir).map(|_| Ending::Ok),
        Command::Archive(a) => ops::archive::archive(repo, &a.run_dir, a.contents())
            .await
            .map(|_| Ending::Ok),
        Command::Check(a) => {
            ops::sign::check_signature(&a.archive, &a.signing.into())?;
            ops::verify::check(paths, &a.archive)
        }
        Command::Sign(a) => ops::sign::sign(&a.archive, a.key.as_deref()),
        Command::Verify(a) => {
            ops::sign::check_signature(&a.path, &a.signing.into())?;
            if a.rebuild_driver {
                ops::driver::rebuild(&a.path, repo).await
            } else {
                ops::verify::verify(&a.path, repo, a.strict)
            }
        }
        Command::Driver(a) => ops::driver::build(repo, &a.out, a.no_cache, a.or_host).await,
        Command::Compare(a) => ops::compare::compare(&a.a, &a.b, a.out.as_deref(), a.fail_above),
        Command::Reproduce(a) => ops::reproduce::command(paths, &a.into(), interrupt).await,
        Command::Rerun(a) => ops::rerun::command(paths, &a.into(), interrupt).await,
        Command::Merge(a) => ops::merge::command(paths, &a.into()).await,
        Command::Export(a) => {
            let (options, format) = a.into_parts();
            ops::export::export(paths, &options, format.as_ref())
        }
        Command::Explain(a) => ops::explain::command(paths, &a.into(), interrupt).await,
        Command::Clean(a) => ops::clean::clean(&a.into()).await,
        Command::Bench(BenchCommand::Fidelity(a)) => ops::bench::fidelity(repo, &a.into()).await,
        Command::Bench(BenchCommand::Scale(a)) => ops::bench::scale(paths, &a.into()),
    }
}
