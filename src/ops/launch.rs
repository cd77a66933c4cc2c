//! The steps every command that starts a run shares (`run`, `run --hosts` and its resume, `rerun`,
//! `explain`, `reproduce --pinned-driver`): what to run, the study under its kernels and its text,
//! its checks before anything builds and the build it needs, the first estimate from the study's
//! reference run, and what a finished run says.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::Paths;
use crate::engine::Engine;
use crate::images::BuildOptions;
use crate::outputs::report::terminal;
use crate::outputs::summary;
use crate::outputs::{archive, reference};
use crate::run::cpu_lock;
use crate::run::guest;
use crate::run::lifecycle::{self, RunResult};
use crate::run::needs;
use crate::run::plan::Estimates;
use crate::run::run_dir::{self, RunDir};
use crate::run::seccomp::Profile;
use crate::run::shard::Shard;
use crate::study::cpus::{Chosen, CpuChoice};
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
    /// Wait for CPUs another run holds instead of being refused (`--wait-for-cpus`).
    pub wait_for_cpus: bool,
    /// Stop at the first image whose build fails (`--strict-build`); otherwise its probes are
    /// `not measured`.
    pub strict_build: bool,
    /// Refuse a root filesystem whose locked packages moved (`--strict-pins`).
    pub strict_pins: bool,
    /// Measure only this slice of the matrix (`--shard i/N`); a resumed run keeps its own.
    pub shard: Option<Shard>,
    /// Measure only these probes and scales (`--only`, `--scales`): a partial run, never a
    /// reference; a resumed run keeps its own.
    pub slice: Option<crate::run::slice::Slice>,
    /// The Docker Engines to run on (`--hosts`), and how; none: this machine's Engine alone.
    pub fleet: Hosts,
    /// Process times to estimate a new run by before it has measured any (an explain sweep: the
    /// explained run's); when `None`, the study's reference run's ([`reference_estimates`]).
    pub estimates: Option<Estimates>,
    /// Tags this command built before the run's own build (an explain sweep's variants): the run's
    /// image table and manifest say `built` for them.
    pub built_before: Vec<String>,
}

/// `--hosts` and how to use them.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    /// The hosts as named (`local`, URLs); empty: this machine's Engine alone.
    pub names: Vec<String>,
    /// Every cell on every host (`--across`, the default).
    pub across: bool,
    /// The matrix dealt over the hosts (`--spread`).
    pub spread: bool,
    /// Build the images on each host instead of shipping them (`--images build`).
    pub build: bool,
    /// Accept plain `tcp://` (`--allow-plain-tcp`).
    pub allow_plain_tcp: bool,
}

/// The study's committed reference run: beside its file (`<the study's folder>/reference/`),
/// whatever `--results` says; else in the results folder; the default study's in the checkout's
/// `results/`. `None` without one.
pub fn reference_of(paths: &Paths, file: Option<&Path>, study: &str) -> Option<PathBuf> {
    let beside = file
        .and_then(Path::parent)
        .map(|folder| folder.join(reference::DIR).join(reference::ARCHIVE));
    (beside.into_iter())
        .chain(reference::archive(&paths.results, study))
        .chain(reference::archive(&paths.repo.join("results"), study))
        .find(|p| p.is_file())
}

/// Process times from the study's reference run ([`reference_of`]), for the first estimate of a
/// study not yet run here; `None` without one, or when it cannot be read (the estimate is then the
/// study's own processes').
pub fn reference_estimates(paths: &Paths, file: Option<&Path>, study: &str) -> Option<Estimates> {
    let path = reference_of(paths, file, study)?;
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
    if let Some(dir) = resume.filter(|d| !d.file(run_dir::STATE).is_file()) {
        bail!(
            "{} is no run folder (it has no {}): resume the folder a stopped run named, \
             results/<study>/runs/<id>",
            dir.path().display(),
            run_dir::STATE
        );
    }
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

/// A run's study as the run checks it before it builds anything.
pub(super) struct Checked {
    /// The study under its kernels.
    pub study: Study,
    /// Its file (`None`: the default study).
    pub file: Option<PathBuf>,
    /// A new run's seccomp profile (a resumed run keeps the copy it started with).
    pub seccomp: Option<Profile>,
    /// What the run measures: a new partial run's probes and scales alone, else the study.
    pub measured: Study,
}

/// The study `options` name (or `resume`'s copy) loaded and checked: its probes' images, a new
/// run's seccomp profile and its slice.
pub(super) fn check(paths: &Paths, options: &Options, resume: Option<&RunDir>) -> Result<Checked> {
    let (study, file) = load(paths, options, resume)?;
    needs::check_probe_images(&paths.repo, &study, file.as_deref())?;
    let seccomp = match (resume, &study.protocol.seccomp) {
        (None, Some(file)) => Some(Profile::load(&paths.repo, file)?),
        _ => None,
    };
    // A partial run builds the images of its probes alone.
    let measured = match (resume, &options.slice) {
        (None, Some(slice)) => {
            slice.check(&study)?;
            slice.restrict(study.clone())
        }
        _ => study.clone(),
    };
    Ok(Checked {
        study,
        file,
        seccomp,
        measured,
    })
}

/// The CPUs a new run of `study` pins to on `engine` ([`lifecycle::choose`]), refused now, before
/// anything builds, when another run holds one of them and this run would be refused on taking them
/// ([`cpu_lock::refuse_if_taken`]).
pub(super) async fn choose_cpus(
    engine: &Engine,
    study: &Study,
    options: &Options,
) -> Result<Chosen> {
    let chosen = lifecycle::choose(engine, study, options.cpus.as_ref()).await?;
    let how = (options.shared_cpus, options.wait_for_cpus);
    cpu_lock::refuse_if_taken(&chosen.cpus, &study.id, how)?;
    Ok(chosen)
}

/// The build of `images` with the run's strictness.
pub(super) fn build_options(options: &Options, images: Vec<String>) -> BuildOptions {
    BuildOptions {
        only: images,
        strict: options.strict_build,
        strict_pins: options.strict_pins,
        built_before: options.built_before.clone(),
        ..BuildOptions::default()
    }
}

/// The text of the study file (the embedded default study when none is named).
pub(super) fn study_text(options: &Options) -> Result<String> {
    match &options.study {
        Some(path) => crate::files::read_text(path),
        None => Ok(study::DEFAULT_STUDY.to_string()),
    }
}

/// How precise the run's cells are, the processes far from their cell's others, what may have
/// touched the numbers, the kit's overhead, and where the samples are.
pub fn said(result: &RunResult) -> String {
    let (dir, study) = (&result.dir, &result.study);
    let mut out = String::new();
    if let Ok((samples, _)) = dir.samples() {
        let summary = summary::summarize(study, &samples);
        out.push_str(&terminal::timed_precision(study, &summary));
        out.push_str(&terminal::precision(&summary));
        out.push_str(&terminal::outliers(&summary));
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
        super::next_step::from_here(&dir.file(run_dir::SAMPLES)).display()
    ));
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::Paths;

    #[test]
    fn a_study_not_run_here_is_estimated_from_its_reference_run() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let paths = Paths {
            repo: repo.into(),
            results: repo.join("results"),
        };
        let estimates = super::reference_estimates(&paths, None, "wait-1m").unwrap();
        let source = estimates.source.unwrap();
        assert!(source.ends_with(", the study's reference run"), "{source}");
        assert!(super::reference_estimates(&paths, None, "no-such-study").is_none());
    }

    #[test]
    fn the_reference_run_is_found_beside_the_study_file_whatever_results_says() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let elsewhere = tempfile::tempdir().unwrap();
        let paths = Paths {
            repo: elsewhere.path().into(),
            results: elsewhere.path().join("results"),
        };
        let file = repo.join("results/tasks-vs-threads/study.yaml");
        let found = super::reference_of(&paths, Some(&file), "tasks-vs-threads").unwrap();
        assert_eq!(
            found,
            repo.join("results/tasks-vs-threads/reference/run.tar.gz")
        );
        assert!(super::reference_estimates(&paths, Some(&file), "tasks-vs-threads").is_some());
        assert!(super::reference_of(&paths, None, "tasks-vs-threads").is_none());
    }
}
