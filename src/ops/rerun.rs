//! `parkbench rerun ARCHIVE`: an archive's study run again here with the archive's binaries, each
//! stage one line: open and check the archive → judge its seccomp profile → its images (loaded in
//! quarantine and verified, or rebuilt and compared) → start or resume the run → measure → report →
//! compare with the archived run → archive → remove the loaded images.
//!
//! An archive is someone else's file: it may name any image and carry any profile. Its images are
//! loaded only under a rerun-only namespace and removed when the rerun is over (`quarantine`); its
//! seccomp profile may not let containers do more than the Engine's default (`profile`).

mod images;
mod profile;
mod quarantine;
mod source;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::archive::{Contents, archive};
use super::report::report;
use super::{Ending, Interrupt, Paths, run};
use crate::outputs::compare;
use crate::run::cpu_lock;
use crate::run::lifecycle::{self, Fresh, Run};
use crate::run::needs::check_runnable;
use crate::run::run_dir::{self, RunDir, RunState};
use crate::study::cpus::CpuChoice;
use crate::study::cpuset;
use crate::study::repeats::{Repeats, RepeatsChoice};

pub use images::{Images, images, refuse, verify_loaded};
pub use profile::{Seccomp, judge};
pub use quarantine::{check_saved_tags, quarantine_tag};
pub use source::{Source, open};

/// What to rerun, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The archive (`<run-id>.tar.gz`).
    pub archive: PathBuf,
    /// The CPUs to pin to; the archived study's list when `None`.
    pub cpus: Option<CpuChoice>,
    /// Run rebuilt images even when a binary differs from the archive's (a deviation each).
    pub accept_different_binaries: bool,
    /// Run with the archive's seccomp profile even when it lets containers do more than the
    /// Engine's default profile (a deviation and a validity warning).
    pub accept_seccomp_from_archive: bool,
    /// Leave the archive's images in the Engine (under their quarantine tags) after the rerun.
    pub keep_images: bool,
    /// Measure even when another run holds some of the CPUs (`--allow-shared-cpus`).
    pub shared_cpus: bool,
    /// Wait for CPUs another run holds instead of being refused (`--wait-for-cpus`).
    pub wait_for_cpus: bool,
    /// An interrupted rerun of this archive to resume.
    pub resume: Option<PathBuf>,
    /// Processes per probe and scale; the archived run's own when `None`.
    pub repeats: Option<RepeatsChoice>,
    /// Images rebuilt from the archive's sources: stop at the first failed build
    /// (`--strict-build`).
    pub strict_build: bool,
}

pub async fn command(paths: &Paths, args: &Options, interrupt: &Interrupt) -> Result<Ending> {
    let source = open(&args.archive)?;
    let what = format!(
        "rerunning {} (run {} of study {}, sha256 {})",
        args.archive.display(),
        source.files.run_id,
        source.study.id,
        source.sha256
    );
    eprintln!("{}", crate::text::printable(&what));
    let seccomp = judge(&source, args.accept_seccomp_from_archive)?;
    let resumed = args
        .resume
        .as_deref()
        .map(|d| lifecycle::rerun_folder(d, &source.path, &source.sha256))
        .transpose()?;
    let images = images(
        &source,
        &paths.repo,
        args.accept_different_binaries,
        args.strict_build,
    )
    .await?;
    // An error or an interrupt from here on still ends with the images removed: here, or by the
    // guard they are held by when this command is dropped.
    let ended = rerun(paths, args, &source, &images, seccomp, resumed, interrupt).await;
    images.release(args.keep_images).await;
    ended
}

/// Runs the archive's study with `images` into a new run folder (or the resumed one), then reports,
/// compares and archives it.
async fn rerun(
    paths: &Paths,
    args: &Options,
    source: &Source,
    images: &Images,
    seccomp: Seccomp,
    resumed: Option<RunDir>,
    interrupt: &Interrupt,
) -> Result<Ending> {
    check_runnable(&source.study, &images.manifest)?;
    let mut run = run_folder(paths, args, source, images, seccomp, resumed).await?;
    run.share_cpus(args.shared_cpus);
    let run = run::measure(&images.engine, run, interrupt).await?;
    if run.interrupted {
        return Ok(Ending::of_run(&run));
    }
    report(run.dir.path())?;
    compare_with_archive(source, run.dir.path())?;
    let info = archive(&source.repo(), run.dir.path(), Contents::DEFAULT).await?;
    let archive = super::next_step::from_here(&info.path);
    println!("\narchive: {}", archive.display());
    println!(
        "{}",
        paths.runnable(&format!(
            "check it with: parkbench check {}",
            super::next_step::shell_path(&archive)
        ))
    );
    Ok(Ending::of_run(&run))
}

/// A new run folder naming the archive it reruns, or (`--resume`) the interrupted rerun of it.
/// An accepted seccomp profile beyond the Engine's default is a deviation and a warning of the run.
async fn run_folder(
    paths: &Paths,
    args: &Options,
    source: &Source,
    images: &Images,
    seccomp: Seccomp,
    resumed: Option<RunDir>,
) -> Result<Run> {
    let (engine, manifest, study) = (&images.engine, &images.manifest, &source.study);
    // The CPUs are taken (or waited for) before the run's environment is recorded, which runs a
    // container on them: a run refused here has made nothing.
    let how = (args.shared_cpus, args.wait_for_cpus);
    if let Some(dir) = resumed {
        let cpus = cpuset::parse(&dir.load_state()?.cpus_pinned)?;
        let held = cpu_lock::take_for_run(&cpus, &study.id, how).await?;
        let (images, repo) = (&source.images, &source.repo());
        let mut run = Run::resume_rerun(engine, dir, study, manifest, images, repo).await?;
        run.hold_cpus(held);
        return Ok(run);
    }
    let deviations = images
        .different
        .iter()
        .map(|d| format!("binary rebuilt here differs from the archive's: {d}"))
        .chain(seccomp.deviation)
        .collect();
    let fresh = Fresh {
        text: &source.files.study_yaml,
        seccomp: seccomp.profile,
        repo: &source.repo(),
        rerun_of: Some((
            source.rerun_of(images.origin, images.different.clone()),
            deviations,
        )),
        repeats: repeats(source, args)?,
        // A shard's archive is rerun as the same shard.
        shard: archived_state(source)?
            .and_then(|s| s.shard)
            .map(|s| s.shard())
            .transpose()?,
        // And a partial run's as the same slice.
        slice: archived_state(source)?.and_then(|s| s.partial),
        // Chosen once the archive's records are read: a broken one is said first.
        cpus: lifecycle::choose(engine, study, args.cpus.as_ref()).await?,
    };
    let held = cpu_lock::take_for_run(&fresh.cpus.cpus, &study.id, how).await?;
    let mut run = Run::start(engine, &paths.results, study, manifest, fresh).await?;
    run.hold_cpus(held);
    if let Some(warning) = seccomp.warning {
        run.warn(warning)?;
    }
    Ok(run)
}

/// The processes per cell: `--repeats` applied to the study's rule, else the rule the archived run
/// had in force (its `run.json`), else the study's.
fn repeats(source: &Source, args: &Options) -> Result<Option<Repeats>> {
    let p = &source.study.protocol;
    if let Some(choice) = args.repeats {
        return Ok(Some(choice.apply(p.repeats, p.target_cv)));
    }
    Ok(archived_state(source)?.and_then(|s| s.repeats))
}

/// The archived run's `run.json`, when it has one.
fn archived_state(source: &Source) -> Result<Option<RunState>> {
    let Some(text) = &source.files.run_json else {
        return Ok(None);
    };
    let state: RunState = serde_json::from_str(text).with_context(|| {
        format!(
            "{}: parsing {}/{}",
            source.path.display(),
            source.files.run_id,
            run_dir::STATE
        )
    })?;
    Ok(Some(state))
}

/// Compares the archived run (A) with the rerun (B): prints the Markdown and writes it, the figure
/// and the page into the rerun's folder.
fn compare_with_archive(source: &Source, run_dir: &Path) -> Result<()> {
    // The archive was checked and read when it was opened: no need to read it again.
    let a = compare::from_files(source.path.display().to_string(), &source.files)?;
    let b = compare::load(run_dir)?;
    let dir = RunDir::open(run_dir)?;
    let (md, path) = compare::write_all(dir.path(), &a, &b)?;
    println!();
    for line in md.lines() {
        println!("{}", crate::text::printable(line));
    }
    eprintln!(
        "comparison: {}",
        super::next_step::from_here(&path).display()
    );
    Ok(())
}

#[cfg(test)]
mod tests;
