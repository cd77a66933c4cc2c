//! `parkbench run`: a study's matrix, every process in its own container, every sample kept; or
//! the missing cells of an interrupted run (`--resume`). Load the study → check its probe images →
//! build → start or resume the run → measure → say how precise and costly it was.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{Ending, Interrupt, Paths, Prepared, prepare};
use crate::engine::Engine;
use crate::images::BuildOptions;
use crate::images::cache::Cache;
use crate::outputs::report::terminal;
use crate::outputs::summary;
use crate::outputs::{archive, reference};
use crate::run::guest;
use crate::run::lifecycle::{CpuChoice, Fresh, Run, RunResult, choose_cpus};
use crate::run::needs;
use crate::run::plan::Estimates;
use crate::run::run_dir::{self, RunDir};
use crate::run::seccomp::Profile;
use crate::run::shard::Shard;
use crate::study::repeats::RepeatsChoice;
use crate::study::sample;
use crate::study::{self, Study};

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The study file; the embedded default study when `None`.
    pub study: Option<PathBuf>,
    /// The CPUs to pin to; the study's list when `None`.
    pub cpus: Option<CpuChoice>,
    /// An interrupted run to resume instead of a new one.
    pub resume: Option<PathBuf>,
    /// Processes per probe and scale instead of the study's.
    pub repeats: Option<RepeatsChoice>,
    /// The kernels to run under instead of the study's.
    pub kernel: Vec<String>,
    /// Measure even when another run holds some of the CPUs (`--allow-shared-cpus`).
    pub shared_cpus: bool,
    /// Stop at the first image whose build fails (`--strict-build`); otherwise its probes are
    /// `not measured`.
    pub strict_build: bool,
    /// Refuse a root filesystem whose locked packages moved (`--strict-pins`).
    pub strict_pins: bool,
    /// Measure only this slice of the matrix (`--shard i/N`); a resumed run keeps its own.
    pub shard: Option<Shard>,
    /// The Docker Engines to run on (`--hosts`), and how; none: this machine's Engine alone.
    pub fleet: super::fleet::Hosts,
}

pub async fn command(paths: &Paths, options: &Options, interrupt: &Interrupt) -> Result<Ending> {
    let result = run(paths, options, interrupt).await?;
    if !result.incomplete() {
        eprint!(
            "{}",
            super::next_step::runnable(&next_steps(result.dir.path()))
        );
    }
    Ok(Ending::of_run(&result))
}

/// Builds (a no-op when unchanged) and runs; returns where the samples are.
pub async fn run(paths: &Paths, options: &Options, interrupt: &Interrupt) -> Result<RunResult> {
    if super::fleet::is_fleet(options) {
        return super::fleet::run(paths, options, interrupt).await;
    }
    let resume = options.resume.as_deref().map(RunDir::open).transpose()?;
    let (study, file) = load(paths, options, resume.as_ref())?;
    needs::check_probe_images(&paths.repo, &study, file.as_deref())?;
    // A resumed run keeps the copy it started with.
    let seccomp = match (&resume, &study.protocol.seccomp) {
        (None, Some(file)) => Some(Profile::load(&paths.repo, file)?),
        _ => None,
    };
    if resume.is_none() {
        check_cpus(&study, options).await?;
    }
    let build = BuildOptions {
        strict: options.strict_build,
        strict_pins: options.strict_pins,
        ..super::prepare::for_study(&study)
    };
    let Prepared {
        engine, manifest, ..
    } = prepare(&paths.repo, &build).await?;
    needs::check_runnable(&study, &manifest)?;
    let mut run = match resume {
        Some(dir) => Run::resume(&engine, dir, &study, &manifest, &paths.repo).await?,
        None => {
            let text = study_text(options)?;
            let p = &study.protocol;
            let fresh = Fresh {
                text: &text,
                cpus: options.cpus.as_ref(),
                seccomp,
                repo: &paths.repo,
                rerun_of: None,
                repeats: options.repeats.map(|c| c.apply(p.repeats, p.target_cv)),
                shard: options.shard,
            };
            Run::start(&engine, &paths.results, &study, &manifest, fresh).await?
        }
    };
    run.share_cpus(options.shared_cpus);
    if let Some(earlier) = reference_estimates(&paths.results, &study.id) {
        run.estimate_from(earlier);
    }
    measure(&engine, run, interrupt).await
}

/// Refuses CPUs the Engine does not have before any image is built, with what `Run::start` would
/// say (and `plan` says) later.
async fn check_cpus(study: &Study, options: &Options) -> Result<()> {
    let available = Engine::connect().await?.cpus().await?;
    let choice = options.cpus.clone().unwrap_or(CpuChoice::Study);
    choose_cpus(&study.protocol.cpus, &available, &choice)?;
    Ok(())
}

/// Process times from the study's reference run (`results/<study>/reference/`), for the first
/// estimate of a study not yet run here; `None` without one, or when it cannot be read (the estimate
/// is then only unknown).
pub(super) fn reference_estimates(results: &std::path::Path, study: &str) -> Option<Estimates> {
    let path = reference::archive(results, study)?;
    let files = archive::read_run(&path).ok()?;
    let (samples, _) = sample::parse_lines(files.samples_jsonl.as_bytes()).ok()?;
    let source = format!("{}, the study's reference run", files.run_id);
    let estimates = Estimates::from_samples(&samples, Some(source));
    estimates.source.is_some().then_some(estimates)
}

/// The study to run, under its kernels (a resumed run's own, else `--kernel`, else the study's),
/// and its file (`None`: the default study).
pub(super) fn load(
    paths: &Paths,
    options: &Options,
    resume: Option<&RunDir>,
) -> Result<(Study, Option<PathBuf>)> {
    let file = match (resume, &options.study) {
        (Some(dir), _) => Some(dir.file(run_dir::STUDY)),
        (None, path) => path.clone(),
    };
    let study = match &file {
        Some(path) => Study::load(path)?,
        None => Study::default_study(),
    };
    let kernels = match resume {
        Some(dir) => dir.load_state()?.kernels,
        None => options.kernel.clone(),
    };
    let study = study.under_kernels(&kernels)?;
    let named: Vec<String> = study.kernels().into_iter().map(String::from).collect();
    guest::check_names(&named, &guest::known(&paths.repo)?)?;
    Ok((study, file))
}

/// The text of the study file (the embedded default study when none is named).
pub(super) fn study_text(options: &Options) -> Result<String> {
    match &options.study {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
        }
        None => Ok(study::DEFAULT_STUDY.to_string()),
    }
}

/// Runs the missing cells of a run folder (Ctrl-C stops it between processes and keeps its
/// samples), then says where the samples are and how precise and costly the run was.
pub async fn measure(engine: &Engine, mut run: Run, interrupt: &Interrupt) -> Result<RunResult> {
    let cancel = interrupt.claim();
    let measured = async {
        let guests = run.guests(engine, &Cache::from_env()?, &cancel).await?;
        run.measure(engine, &guests, &cancel).await
    }
    .await;
    interrupt.release();
    let result = measured?;
    result.dir.link_latest()?;
    eprint!("{}", said(&result));
    Ok(result)
}

/// How precise the run's cells are, what may have touched the numbers, the kit's overhead, and
/// where the samples are.
pub(super) fn said(result: &RunResult) -> String {
    let (dir, study) = (&result.dir, &result.study);
    let mut out = String::new();
    if let Ok((samples, _)) = dir.samples() {
        let summary = summary::summarize(study, &samples);
        out.push_str(&terminal::timed_precision(study, &summary));
        out.push_str(&terminal::precision(&summary));
    }
    out.push_str(&terminal::warnings(&result.state.warnings));
    if let Some(ratio) = result.overhead() {
        out.push_str(&format!(
            "kit overhead: {:.1} s wall for {:.1} s of probe lifetimes ({ratio:.3}×), {:.0} ms per process\n",
            result.wall_ms / 1000.0,
            result.probe_ms / 1000.0,
            (result.wall_ms - result.probe_ms) / result.measured.max(1) as f64
        ));
    }
    out.push_str(&format!(
        "samples: {}\n",
        dir.file(run_dir::SAMPLES).display()
    ));
    out
}

/// What comes after a run: its report, then its archive.
fn next_steps(dir: &std::path::Path) -> String {
    let dir = dir.display();
    format!("next: parkbench report {dir}, then parkbench archive {dir}\n")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn a_study_not_run_here_is_estimated_from_its_reference_run() {
        let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
        let estimates = super::reference_estimates(&results, "wait-1m").unwrap();
        let source = estimates.source.unwrap();
        assert!(source.ends_with(", the study's reference run"), "{source}");
        assert!(super::reference_estimates(&results, "no-such-study").is_none());
    }
    #[test]
    fn a_run_ends_with_its_next_steps_on_its_own_folder() {
        let said = super::next_steps(std::path::Path::new("results/s/runs/r1"));
        assert_eq!(
            said,
            "next: parkbench report results/s/runs/r1, then parkbench archive results/s/runs/r1\n"
        );
    }
}
