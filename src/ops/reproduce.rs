//! `parkbench reproduce`: the whole job, each stage one line — for one study, or for every study in
//! `results/` followed by `results/index.md`. Each run ends compared with its study's reference
//! run, and `--reference` makes it the new one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::archive::{Contents, archive, archive_to};
use super::doctor::doctor_brief;
use super::hand_over::{hand_over, handed_over, running_from};
use super::next_step::{from_here, shell_path, shell_word};
use super::report;
use super::sign::SigningKey;
use super::{Ending, Interrupt, Paths, run};
use crate::engine::Engine;
use crate::outputs::outcome::Outcome;
use crate::outputs::{compare, reference};
use crate::run::run_dir::RunDir;

/// What to reproduce.
#[derive(Debug, Clone)]
pub struct Options {
    /// The study to run, as for `run`.
    pub run: run::Options,
    /// A claim not reproduced ends it as [`Ending::ClaimsDiffer`].
    pub strict: bool,
    /// What the archive holds besides the run and its sources (images, the driver).
    pub contents: Contents,
    /// Make the run its study's reference run (`results/<study>/reference/`); refused for a run
    /// with a failed build, an invalid sample, partial data or warnings that the machine was not
    /// quiet, or a reference file over 1 MiB.
    pub reference: bool,
    /// Every study in `results/` in turn, then `results/index.md`.
    pub all: bool,
    /// Sign each archive with this SSH private key (`<archive>.sig`, as `parkbench sign` writes it).
    pub sign: Option<PathBuf>,
    /// The pinned driver, built here beside the study's images and then given the whole command
    /// ([`super::hand_over`]); the driver running from this file does the command itself.
    pub pinned_driver: Option<PathBuf>,
}

pub async fn command(paths: &Paths, args: &Options, interrupt: &Interrupt) -> Result<Ending> {
    // A key that cannot sign fails now, not after the run.
    let key = (args.sign.as_deref())
        .map(|k| SigningKey::find(Some(k), Path::new("<run-id>.tar.gz")))
        .transpose()?;
    let key = key.as_ref();
    refuse_partial(args)?;
    // A study that cannot be read, or laid out under its kernels, fails before the machine check
    // (a resumed run's is its folder's, which the run reads).
    let study = (!args.all && args.run.resume.is_none())
        .then(|| super::launch::load(paths, &args.run, None))
        .transpose()?;
    let hand_to = (args.pinned_driver.as_deref()).filter(|out| !running_from(out));
    // A driver handed the command over runs on a machine its builder has just checked.
    let handed = args.pinned_driver.is_some() && hand_to.is_none() && handed_over();
    if !handed && doctor_brief().await? != Ending::Ok {
        bail!("the machine is not ready (see the FAIL lines above)");
    }
    // A new run here that would be refused its CPUs is refused before the driver it is handed over
    // to and the images build (a run's own check comes before its images build).
    if let Some((study, _)) = &study
        && hand_to.is_some()
        && !super::fleet::is_fleet(&args.run)
    {
        super::launch::choose_cpus(&Engine::connect().await?, study, &args.run).await?;
    }
    if let Some(out) = hand_to {
        return hand_over(paths, &args.run, args.all, out).await;
    }
    if !args.all {
        return one(paths, args, &args.run, key, interrupt).await;
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
        match one(paths, args, &run, key, interrupt).await {
            Ok(e @ (Ending::Interrupted | Ending::HostsLost)) => return Ok(e),
            Ok(ending) => worst = worse(worst, ending),
            Err(e) => {
                eprintln!("error: study {}: {e:#}", file.display());
                failed.push(file.display().to_string());
            }
        }
    }
    let index = crate::outputs::index::write(&paths.results)?;
    println!("\nindex of every study: {}", from_here(&index).display());
    if !failed.is_empty() {
        bail!(
            "{} could not be reproduced (see the errors above); the others are in the index",
            failed.join(", ")
        );
    }
    Ok(worst)
}

/// Refuses a partial run (`--only`, `--scales`) as a reference, or over every study, before
/// anything runs.
fn refuse_partial(args: &Options) -> Result<()> {
    let Some(slice) = &args.run.slice else {
        return Ok(());
    };
    if args.reference {
        bail!(
            "--reference with {}: a partial run is never a reference run, which must measure the \
             whole matrix; leave out --only and --scales to make one",
            slice.flags()
        );
    }
    if args.all {
        bail!(
            "--all with {}: every study has its own probes and scales; name one study instead",
            slice.flags()
        );
    }
    Ok(())
}

#[cfg(test)]
mod partial_tests {
    use super::*;

    #[test]
    fn a_partial_run_is_refused_as_a_reference_before_it_runs() {
        let mut args = Options {
            run: run::Options::default(),
            strict: false,
            contents: crate::ops::archive::Contents {
                sources: true,
                images: false,
                driver: crate::ops::archive::Driver::Left,
                debs: false,
            },
            reference: false,
            all: false,
            sign: None,
            pinned_driver: None,
        };
        args.run.slice = crate::run::slice::Slice::of(vec!["go".into()], vec![10_000]);
        assert!(refuse_partial(&args).is_ok(), "a smoke run alone");
        args.reference = true;
        let err = refuse_partial(&args).unwrap_err().to_string();
        assert!(
            err.contains("--reference with --only go --scales 10000"),
            "{err}"
        );
        assert!(err.contains("never a reference"), "{err}");
    }
}

/// One study: run, report, comparison with the reference, archive (and the new reference).
async fn one(
    paths: &Paths,
    args: &Options,
    run_args: &run::Options,
    key: Option<&SigningKey>,
    interrupt: &Interrupt,
) -> Result<Ending> {
    let run = run::run(paths, run_args, interrupt).await?;
    if run.incomplete() {
        return Ok(Ending::of_run(&run));
    }
    // The run printed its validity warnings; the report's verdict table follows without them.
    let outcome = report::write(run.dir.path(), false)?;
    compare_with_reference(&paths.results, &run.study.id, run.dir.path());
    let info = archive(&paths.repo, run.dir.path(), args.contents).await?;
    if let Some(key) = key {
        key.sign(&info.path)?;
    }
    // `archive` said where it wrote it, with its size and sha256.
    println!(
        "{}",
        paths.runnable(&format!(
            "check it with: parkbench check {}",
            shell_path(&from_here(&info.path))
        ))
    );
    if args.reference {
        make_reference(paths, &outcome, run.dir.path()).await?;
    }
    if let Some(claim) = super::explain::first_explainable(paths, run.dir.path(), &outcome).await {
        println!("{}", paths.runnable(&explain_hint(run.dir.path(), &claim)));
    }
    if args.strict && outcome.claims_differ() {
        eprintln!("--strict: some claims were not reproduced");
        return Ok(Ending::ClaimsDiffer);
    }
    Ok(Ending::of_run(&run))
}

/// Compares the run (B) with its study's reference run (A), when the study has one: prints the
/// one-line summary and writes compare.md, compare.svg and compare.html into the run folder. A reference that
/// cannot be read is said, and the run goes on.
fn compare_with_reference(results: &Path, study: &str, run_dir: &Path) {
    let Some(path) = reference::archive(results, study) else {
        println!(
            "no reference run of {study} to compare with ({} is missing)",
            from_here(&reference::dir(results, study).join(reference::ARCHIVE)).display()
        );
        return;
    };
    let compared = (|| -> Result<(String, std::path::PathBuf)> {
        let (a, b) = (compare::load(&path)?, compare::load(run_dir)?);
        let dir = RunDir::open(run_dir)?;
        let (_, path) = compare::write_all(dir.path(), &a, &b)?;
        Ok((compare::one_line(&a, &b), path))
    })();
    match compared {
        Ok((line, full)) => println!(
            "\ncompared with the reference run ({}): {line}\nfull comparison: {}",
            from_here(&path).display(),
            from_here(&full).display()
        ),
        Err(e) => eprintln!(
            "warning: the reference run {} could not be compared with this run: {e:#}",
            from_here(&path).display()
        ),
    }
}

/// Writes the run's report, figure and an archive of the run folder alone (no source bundle,
/// images or driver) as its study's reference run.
async fn make_reference(paths: &Paths, outcome: &Outcome, run_dir: &Path) -> Result<()> {
    reference::refuse_unless_complete(outcome)?;
    reference::refuse_unless_quiet(outcome)?;
    let study = &outcome.study.id;
    let run = RunDir::open(run_dir)?;
    let parent = run
        .path()
        .parent()
        .context("the run folder has no parent")?;
    let temp = tempfile::Builder::new()
        .prefix(".reference-archive-")
        .tempdir_in(parent)
        .context("creating a temporary folder for the reference archive")?;
    let out = temp.path().join(reference::ARCHIVE);
    archive_to(&paths.repo, &run, &out, Contents::RUN_ONLY).await?;
    let dest = reference::dir(&paths.results, study);
    reference::install(run.path(), &out, &dest)?;
    println!("reference run of {study}: {}", from_here(&dest).display());
    Ok(())
}

/// Where to look next when a claim differs: `explain` on the first one it can sweep, as a line a
/// shell reads as written (the run's path and the claim quoted where they need it).
fn explain_hint(run_dir: &Path, claim: &str) -> String {
    format!(
        "why a claim differs: parkbench explain {} --claim {} (see docs/explain.md)",
        shell_path(&from_here(run_dir)),
        shell_word(claim)
    )
}

/// The ending that says more: differing claims over failed probes over success.
fn worse(a: Ending, b: Ending) -> Ending {
    let rank = |e: Ending| match e {
        Ending::Ok => 0,
        Ending::ProbesFailed => 1,
        Ending::ClaimsDiffer | Ending::RunsDiffer => 2,
        Ending::NotReady | Ending::Interrupted | Ending::HostsLost => 3,
    };
    if rank(b) > rank(a) { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_differing_claim_points_at_explain_with_the_run_and_the_claim() {
        let hint = explain_hint(Path::new("results/s/runs/r1"), "c1");
        assert!(
            hint.contains("parkbench explain results/s/runs/r1 --claim c1")
                && hint.contains("docs/explain.md"),
            "{hint}"
        );
        let hint = explain_hint(Path::new("runs/a b"), "c; rm -rf x");
        assert!(
            hint.contains("explain 'runs/a b' --claim 'c; rm -rf x' (see"),
            "{hint}"
        );
    }
}
