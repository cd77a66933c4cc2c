//! `parkbench reproduce`: the whole job, each stage one line — for one study, or for every study in
//! `results/` followed by `results/index.md`.

use anyhow::{Result, bail};

use super::archive::archive;
use super::doctor::doctor;
use super::report::report;
use super::{Ending, Interrupt, Paths, run};

/// What to reproduce.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The study to run, as for `run`.
    pub run: run::Options,
    /// A claim not reproduced ends it as [`Ending::ClaimsDiffer`].
    pub strict: bool,
    /// Add the probe images to the archive.
    pub with_images: bool,
    /// Every study in `results/` in turn, then `results/index.md`.
    pub all: bool,
}

pub async fn command(paths: &Paths, args: &Options, interrupt: &Interrupt) -> Result<Ending> {
    if doctor().await? != Ending::Ok {
        bail!("the machine is not ready (see the FAIL lines above)");
    }
    if !args.all {
        return one(paths, args, &args.run, interrupt).await;
    }
    let files = crate::outputs::index::studies(&paths.results)?;
    eprintln!("reproducing {} studies", files.len());
    let (mut worst, mut failed) = (Ending::Ok, Vec::new());
    for file in files {
        eprintln!("\n== {}", file.display());
        let run = run::Options {
            study: Some(file.clone()),
            ..args.run.clone()
        };
        match one(paths, args, &run, interrupt).await {
            Ok(Ending::Interrupted) => return Ok(Ending::Interrupted),
            Ok(ending) => worst = worse(worst, ending),
            Err(e) => {
                eprintln!("error: study {}: {e:#}", file.display());
                failed.push(file.display().to_string());
            }
        }
    }
    let index = crate::outputs::index::write(&paths.results)?;
    println!("\nindex of every study: {}", index.display());
    if !failed.is_empty() {
        bail!(
            "{} could not be reproduced (see the errors above); the others are in the index",
            failed.join(", ")
        );
    }
    Ok(worst)
}

/// One study: run, report, archive.
async fn one(
    paths: &Paths,
    args: &Options,
    run_args: &run::Options,
    interrupt: &Interrupt,
) -> Result<Ending> {
    let run = run::run(paths, run_args, interrupt).await?;
    if run.interrupted {
        return Ok(Ending::of_run(&run));
    }
    let outcome = report(run.dir.path())?;
    let info = archive(&paths.repo, run.dir.path(), args.with_images).await?;
    println!(
        "\narchive: {}\ncheck it with: parkbench check {}",
        info.path.display(),
        info.path.display()
    );
    if args.strict && outcome.claims_differ() {
        eprintln!("--strict: some claims were not reproduced");
        return Ok(Ending::ClaimsDiffer);
    }
    Ok(Ending::of_run(&run))
}

/// The ending that says more: differing claims over failed probes over success.
fn worse(a: Ending, b: Ending) -> Ending {
    let rank = |e: Ending| match e {
        Ending::Ok => 0,
        Ending::ProbesFailed => 1,
        Ending::ClaimsDiffer | Ending::RunsDiffer => 2,
        Ending::NotReady | Ending::Interrupted => 3,
    };
    if rank(b) > rank(a) { b } else { a }
}
