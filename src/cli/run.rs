//! `parkbench run`: a study's matrix, every process in its own container, every sample kept; or
//! the missing cells of an interrupted run (`--resume`).

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Ending, Interrupt, Paths, Prepared, prepare};
use crate::cli::args::{BuildArgs, RunArgs};
use crate::engine::{Containers, Engine};
use crate::images::{self, Manifest};
use crate::run::env;
use crate::run::guest;
use crate::run::lifecycle::{self, CpuChoice, RunResult};
use crate::run::run_dir::RerunOf;
use crate::run::run_dir::{self, RunDir, RunState, Status};
use crate::run::seccomp::Profile;
use crate::study::{self, Repeats, Study};

pub async fn command(paths: &Paths, args: &RunArgs, interrupt: &Interrupt) -> Result<Ending> {
    let result = study_run(paths, args, interrupt).await?;
    Ok(Ending::of_run(&result))
}

/// Builds (a no-op when unchanged) and runs; returns where the samples are.
pub async fn study_run(paths: &Paths, args: &RunArgs, interrupt: &Interrupt) -> Result<RunResult> {
    let resume = args.resume.as_deref().map(RunDir::open).transpose()?;
    let study = match (&resume, &args.study) {
        (Some(dir), _) => Study::load(&dir.file(run_dir::STUDY))?,
        (None, Some(path)) => Study::load(path)?,
        (None, None) => Study::default_study(),
    };
    // The kernels: a resumed run's own, else `--kernel`, else the study's.
    let kernels = match &resume {
        Some(dir) => dir.load_state()?.kernels,
        None => args.kernel.clone(),
    };
    let study = study.under_kernels(&kernels)?;
    let named: Vec<String> = study.kernels().into_iter().map(String::from).collect();
    guest::check_names(&named, &guest::known(&paths.repo)?)?;
    let file = match (&resume, &args.study) {
        (Some(dir), _) => Some(dir.file(run_dir::STUDY)),
        (None, path) => path.clone(),
    };
    check_probe_images(&paths.repo, &study, file.as_deref())?;
    // A resumed run keeps the copy it started with.
    let seccomp = match (&resume, &study.protocol.seccomp) {
        (None, Some(file)) => Some(Profile::load(&paths.repo, file)?),
        _ => None,
    };
    let Prepared {
        engine, manifest, ..
    } = prepare(&paths.repo, &study_images(&study)).await?;
    check_runnable(&study, &manifest)?;
    let (dir, state) = match resume {
        Some(dir) => {
            let state = reopen(&engine, &dir, &study, &manifest, &paths.repo).await?;
            if let Some(of) = &state.rerun_of {
                bail!(
                    "{} reran the archive {}: resume it with `parkbench rerun {} --resume {}`",
                    dir.path().display(),
                    of.archive,
                    of.archive,
                    dir.path().display()
                );
            }
            (dir, state)
        }
        None => {
            let text = study_text(args)?;
            let fresh = Fresh {
                text: &text,
                cpus: args.cpus.as_ref(),
                seccomp,
                repo: &paths.repo,
                rerun_of: None,
                repeats: args
                    .repeats
                    .map(|c| c.apply(study.protocol.repeats, study.protocol.target_cv)),
            };
            new_run(&engine, paths, &study, &manifest, fresh).await?
        }
    };
    measure(&engine, &study, &manifest, dir, state, interrupt).await
}

/// The text of the study file (the embedded default study when none is named).
fn study_text(args: &RunArgs) -> Result<String> {
    match &args.study {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
        }
        None => Ok(study::DEFAULT_STUDY.to_string()),
    }
}

/// Runs the missing cells of a run folder, then says where the samples are and how precise and
/// costly the run was.
pub async fn measure(
    engine: &Engine,
    study: &Study,
    manifest: &Manifest,
    dir: RunDir,
    mut state: RunState,
    interrupt: &Interrupt,
) -> Result<RunResult> {
    // The processes per cell the run started with, whatever `--repeats` said (see RunState).
    let study = &state.in_force(study.clone())?;
    let cancel = interrupt.claim();
    let guests = match guests(engine, study, manifest, &dir, &mut state, &cancel).await {
        Ok(g) => g,
        Err(e) => {
            interrupt.release();
            return Err(e);
        }
    };
    let result =
        lifecycle::execute(engine, study, manifest, &guests, &dir, &mut state, &cancel).await;
    interrupt.release();
    let result = result?;
    dir.link_latest()?;
    if let Ok((samples, _)) = crate::study::sample::read_all(&dir.file(run_dir::SAMPLES)) {
        let summary = crate::outputs::summary::summarize(study, &samples);
        eprint!(
            "{}",
            crate::outputs::report::terminal::timed_precision(study, &summary)
        );
        eprint!("{}", crate::outputs::report::terminal::precision(&summary));
    }
    eprint!(
        "{}",
        crate::outputs::report::terminal::warnings(&result.state.warnings)
    );
    if let Some(ratio) = result.overhead() {
        eprintln!(
            "kit overhead: {:.1} s wall for {:.1} s of probe lifetimes ({ratio:.3}×)",
            result.wall_ms / 1000.0,
            result.probe_ms / 1000.0
        );
    }
    eprintln!("samples: {}", dir.file(run_dir::SAMPLES).display());
    Ok(result)
}

/// The run's guest kernels made ready (none on the host's kernel), recorded in run.json with a
/// deviation per kernel.
async fn guests(
    engine: &Engine,
    study: &Study,
    manifest: &Manifest,
    dir: &RunDir,
    state: &mut RunState,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<guest::Guests> {
    let cache = crate::images::cache::Cache::from_env()?;
    let guests = guest::prepare(engine, &cache, manifest, study, cancel).await?;
    if guests.kernels.is_empty() {
        return Ok(guests);
    }
    let now: Vec<_> = guests.kernels.values().map(|k| k.record.clone()).collect();
    guest::same_as_before(&state.guests, &now)
        .with_context(|| format!("resuming run {}", dir.id()))?;
    state.guests = now;
    for k in &state.guests {
        let d = guest::deviation(k, &study.source.environment);
        if !state.deviations.contains(&d) {
            state.deviations.push(d);
        }
    }
    dir.save_state(state)?;
    Ok(guests)
}

/// Every probe names a probe image (a `docker/` folder whose image.yaml says `probe: true`) and a
/// program among that image's `binaries`; checked before anything is built. The error names the
/// study file and the probe's line.
fn check_probe_images(repo: &Path, study: &Study, file: Option<&Path>) -> Result<()> {
    let recipes = images::recipe::discover(&repo.join("docker"))?;
    let (name, text) = match file {
        Some(f) => (
            f.display().to_string(),
            std::fs::read_to_string(f).unwrap_or_default(),
        ),
        None => ("the default study".into(), study::DEFAULT_STUDY.to_string()),
    };
    check_probes_against(&recipes, study, &name, &text)
}

/// [`check_probe_images`] on recipes already read; `name` and `text` are the study file's.
fn check_probes_against(
    recipes: &[images::recipe::Recipe],
    study: &Study,
    name: &str,
    text: &str,
) -> Result<()> {
    let line_of = |want: &str| {
        text.lines()
            .position(|l| l.trim().trim_start_matches("- ").trim_start_matches('{') == want)
            .map(|i| format!(" line {}", i + 1))
            .unwrap_or_default()
    };
    let probes: Vec<&str> = recipes
        .iter()
        .filter(|r| r.probe)
        .map(|r| r.name.as_str())
        .collect();
    for probe in &study.probes {
        let Some(recipe) = recipes.iter().find(|r| r.probe && r.name == probe.image) else {
            let line = line_of(&format!("image: {}", probe.image));
            bail!(
                "{name}{line}: probe {:?} names image {:?}, which is no probe image; add docker/{}/ \
                 with a Dockerfile and an image.yaml saying `probe: true`, or name one of: {}",
                probe.id,
                probe.image,
                probe.image,
                probes.join(", ")
            );
        };
        if !recipe.binaries.contains(&probe.program) {
            let line = match line_of(&format!("program: {}", probe.program)) {
                l if l.is_empty() => line_of(&format!("id: {}", probe.id)),
                l => l,
            };
            bail!(
                "{name}{line}: probe {:?} runs program {:?}, which is not among the binaries of \
                 image {:?} ({}); name one of them, or add it to `binaries` in docker/{}/image.yaml",
                probe.id,
                probe.program,
                probe.image,
                recipe.binaries.join(", "),
                probe.image
            );
        }
    }
    Ok(())
}

/// The build a study needs: its probe images and what they are built from.
pub fn study_images(study: &Study) -> BuildArgs {
    let mut only: Vec<String> = study.probes.iter().map(|p| p.image.clone()).collect();
    let kernels: Vec<String> = study.kernels().into_iter().map(String::from).collect();
    only.extend(guest::images_for(&kernels));
    only.sort();
    only.dedup();
    BuildArgs {
        only,
        ..BuildArgs::default()
    }
}

/// At least one probe's image was built (the others are unavailable: their cells are `not measured`).
pub fn check_runnable(study: &Study, manifest: &Manifest) -> Result<()> {
    if study
        .probes
        .iter()
        .all(|p| manifest.get(&p.image).is_none())
    {
        bail!(
            "no probe of study {} can run here: every image is unavailable (see the build's list)",
            study.id
        );
    }
    Ok(())
}

/// What a new run starts from besides the study and the images.
pub struct Fresh<'a> {
    /// The study file's text, copied into the run folder.
    pub text: &'a str,
    /// The CPU choice (`None`: the study's list).
    pub cpus: Option<&'a CpuChoice>,
    /// The study's seccomp profile, copied into the run folder.
    pub seccomp: Option<Profile>,
    /// The repository whose probe folders the environment record reads lockfiles from.
    pub repo: &'a Path,
    /// The archive a rerun reruns, and the deviations it brings (binaries that differ).
    pub rerun_of: Option<(RerunOf, Vec<String>)>,
    /// The processes per cell in force when not the study's own (`--repeats`, or a rerun's archive).
    pub repeats: Option<Repeats>,
}

/// A new run folder holding the study, the manifest, the run state and the environment record.
/// The state (`incomplete`) is saved before the environment is recorded, so that a run stopped
/// there (Ctrl-C drops this command) can be resumed.
pub async fn new_run(
    engine: &impl Containers,
    paths: &Paths,
    study: &Study,
    manifest: &Manifest,
    fresh: Fresh<'_>,
) -> Result<(RunDir, RunState)> {
    let available = engine.cpus().await?;
    let choice = fresh.cpus.cloned().unwrap_or(CpuChoice::Study);
    let (cpus, mut deviations) = lifecycle::choose_cpus(&study.protocol.cpus, &available, &choice)?;
    let rerun_of = fresh.rerun_of.map(|(of, more)| {
        deviations.extend(more);
        of
    });
    // `--repeats` goes into run.json with the deviation; the run's study.yaml stays as written.
    let mut study = study.clone();
    if let Some(chosen) = fresh.repeats {
        let p = &mut study.protocol;
        if chosen != p.repeats {
            deviations.push(repeats_deviation(&p.repeats, &chosen));
            p.repeats = chosen;
        }
    }
    let study = &study;
    let dir = RunDir::create(&paths.results, &study.id)?;
    dir.write(run_dir::STUDY, fresh.text.as_bytes())?;
    dir.write_json(run_dir::MANIFEST, manifest)?;
    if let Some(p) = &fresh.seccomp {
        dir.write(run_dir::SECCOMP, p.json.as_bytes())?;
    }
    let mut state = lifecycle::new_state(&dir.id(), study, &cpus, deviations);
    state.status = Status::Incomplete;
    state.rerun_of = rerun_of;
    dir.save_state(&state)?;
    record_env(engine, &dir, study, manifest, fresh.repo).await?;
    eprintln!(
        "run {}: CPUs {} ({} workers) in {}",
        state.run_id,
        state.cpus_pinned,
        state.workers,
        dir.path().display()
    );
    Ok((dir, state))
}

/// The protocol's processes per cell as `--repeats` changed them, in words.
fn repeats_deviation(study: &Repeats, chosen: &Repeats) -> String {
    // `--repeats`, or the archived run's rule a rerun keeps: either way not the study's own.
    let said = |r: &Repeats| match r.rule() {
        Some(rule) => format!("{r} processes per cell ({rule})"),
        None => format!("{r} processes per cell"),
    };
    format!(
        "processes per cell chosen for this run: {} instead of the study's {}",
        said(chosen),
        said(study)
    )
}

/// The state of a run to resume; its environment is recorded now if it was stopped before that.
pub async fn reopen(
    engine: &impl Containers,
    dir: &RunDir,
    study: &Study,
    manifest: &Manifest,
    repo: &Path,
) -> Result<RunState> {
    let state = dir.load_state()?;
    if !dir.file(run_dir::ENV).exists() {
        record_env(engine, dir, study, manifest, repo).await?;
    }
    Ok(state)
}

/// Writes the run's environment record, seen from the study's first built probe image.
async fn record_env(
    engine: &impl Containers,
    dir: &RunDir,
    study: &Study,
    manifest: &Manifest,
    repo: &Path,
) -> Result<()> {
    let probe_image = &study
        .probes
        .iter()
        .find_map(|p| manifest.get(&p.image))
        .context("probe image")?
        .tag;
    let mut environment = env::record(engine, manifest, probe_image, repo).await?;
    environment.seccomp = lifecycle::seccomp_of(study, dir)?.map(|p| p.record);
    dir.write_json(run_dir::ENV, &environment)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::engine::fake::{FakeEngine, Step};
    use crate::images::BuiltImage;

    fn manifest(study: &Study) -> Manifest {
        let images = study.probes.iter().map(|p| BuiltImage {
            name: p.image.clone(),
            tag: format!("parkbench/{}:0", p.image),
            id: "sha256:0".into(),
            layers: vec![],
            inputs: Default::default(),
            binaries: Default::default(),
            versions: Default::default(),
            notes: Vec::new(),
            built: false,
        });
        Manifest {
            images: images.collect(),
            unavailable: vec![],
        }
    }

    fn env_step() -> Step {
        Step::Exit {
            code: 0,
            stdout: "Linux c 6.1.0\n0-1\nldd 2.36\n".into(),
            stderr: String::new(),
        }
    }

    #[tokio::test]
    async fn a_run_stopped_while_its_environment_is_recorded_can_be_resumed() {
        let results = tempfile::tempdir().unwrap();
        let paths = Paths {
            repo: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            results: results.path().to_owned(),
        };
        let study = Study::default_study();
        let manifest = manifest(&study);
        let args = RunArgs {
            study: None,
            cpus: Some(CpuChoice::Auto),
            resume: None,
            repeats: None,
            kernel: Vec::new(),
        };
        // Ctrl-C before the run loop claims it drops the command (cli::dispatch), here while the
        // environment's container runs.
        let engine = FakeEngine::new([Step::Hang]);
        let fresh = Fresh {
            text: study::DEFAULT_STUDY,
            cpus: args.cpus.as_ref(),
            seccomp: None,
            repo: &paths.repo,
            rerun_of: None,
            repeats: None,
        };
        let stopped = tokio::time::timeout(
            Duration::from_millis(200),
            new_run(&engine, &paths, &study, &manifest, fresh),
        )
        .await;
        assert!(stopped.is_err(), "the environment record never ends");
        crate::engine::settle().await;
        assert!(engine.live().is_empty(), "its container is removed");

        let runs = results.path().join(&study.id).join("runs");
        let folders: Vec<_> = std::fs::read_dir(&runs).unwrap().collect();
        assert_eq!(folders.len(), 1);
        let dir = RunDir::open(&folders[0].as_ref().unwrap().path()).unwrap();
        let state = dir
            .load_state()
            .expect("run.json is saved before the environment record");
        assert_eq!(
            (state.status, state.run_id.as_str()),
            (Status::Incomplete, dir.id().as_str())
        );
        assert!(!dir.file(run_dir::ENV).exists());

        let engine = FakeEngine::new([env_step()]);
        let resumed = reopen(&engine, &dir, &study, &manifest, &paths.repo)
            .await
            .unwrap();
        assert_eq!(resumed, state);
        assert!(dir.file(run_dir::ENV).exists(), "the resume records it");
        assert_eq!(engine.runs().len(), 1);
        let engine = FakeEngine::new([]);
        reopen(&engine, &dir, &study, &manifest, &paths.repo)
            .await
            .unwrap();
        assert!(engine.runs().is_empty(), "recorded once");
    }
}
