//! `parkbench run`: a study's matrix, every process in its own container, every sample kept; or
//! the missing cells of an interrupted run (`--resume`).

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Ending, Interrupt, Paths, Prepared, prepare};
use crate::args::{BuildArgs, RunArgs};
use crate::engine::Engine;
use crate::env;
use crate::image::{self, Manifest};
use crate::run::{self, CpuChoice, RunResult};
use crate::run_dir::{self, RunDir, RunState};
use crate::study::{self, Study};

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
    let Prepared {
        engine, manifest, ..
    } = prepare(&paths.repo, &BuildArgs::default()).await?;
    check_images(&paths.repo, &study, &manifest)?;
    let (dir, mut state) = match resume {
        Some(dir) => {
            let state = dir.load_state()?;
            (dir, state)
        }
        None => new_run(&engine, paths, &study, args, &manifest).await?,
    };
    let cancel = interrupt.claim();
    let result = run::execute(&engine, &study, &manifest, &dir, &mut state, &cancel).await?;
    dir.link_latest()?;
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

/// Every probe names an image the build made or found unavailable (whose cells become `not
/// measured`); at least one can run.
fn check_images(repo: &Path, study: &Study, manifest: &Manifest) -> Result<()> {
    let probes = image::probe_names(repo)?;
    for probe in &study.probes {
        let known =
            manifest.get(&probe.image).is_some() || manifest.unavailable(&probe.image).is_some();
        if !known || !probes.contains(&probe.image) {
            bail!(
                "probe {:?} names image {:?}, which is no probe image; add docker/{}/ with an \
                 image.yaml saying `probe: true`, or name one of: {}",
                probe.id,
                probe.image,
                probe.image,
                probes.join(", ")
            );
        }
    }
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

/// A new run folder holding the study, the manifest, the environment record and the run state.
async fn new_run(
    engine: &Engine,
    paths: &Paths,
    study: &Study,
    args: &RunArgs,
    manifest: &Manifest,
) -> Result<(RunDir, RunState)> {
    let available = engine.cpus().await?;
    let choice = args.cpus.clone().unwrap_or(CpuChoice::Study);
    let (cpus, deviations) = run::choose_cpus(&study.protocol.cpus, &available, &choice)?;
    let dir = RunDir::create(&paths.results, &study.id)?;
    let text = match &args.study {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => study::DEFAULT_STUDY.to_string(),
    };
    dir.write(run_dir::STUDY, text.as_bytes())?;
    dir.write_json(run_dir::MANIFEST, manifest)?;
    let probe_image = &study
        .probes
        .iter()
        .find_map(|p| manifest.get(&p.image))
        .context("probe image")?
        .tag;
    let environment = env::record(engine, manifest, probe_image, &paths.repo).await?;
    dir.write_json(run_dir::ENV, &environment)?;
    let state = run::new_state(&dir.id(), study, &cpus, deviations);
    dir.save_state(&state)?;
    eprintln!(
        "run {}: CPUs {} ({} workers) in {}",
        state.run_id,
        state.cpus_pinned,
        state.workers,
        dir.path().display()
    );
    Ok((dir, state))
}
