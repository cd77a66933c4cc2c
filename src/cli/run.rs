//! `parkbench run`: a study's matrix, every process in its own container, every sample kept; or
//! the missing cells of an interrupted run (`--resume`).

use anyhow::{Context, Result};

use super::{Ending, Interrupt, Paths, Prepared, prepare};
use crate::cli::args::{BuildArgs, RunArgs};
use crate::engine::Engine;
use crate::images::cache::Cache;
use crate::run::guest;
use crate::run::lifecycle::{Fresh, Run, RunResult};
use crate::run::needs;
use crate::run::run_dir::{self, RunDir};
use crate::run::seccomp::Profile;
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
    needs::check_probe_images(&paths.repo, &study, file.as_deref())?;
    // A resumed run keeps the copy it started with.
    let seccomp = match (&resume, &study.protocol.seccomp) {
        (None, Some(file)) => Some(Profile::load(&paths.repo, file)?),
        _ => None,
    };
    let Prepared {
        engine, manifest, ..
    } = prepare(&paths.repo, &study_images(&study)).await?;
    needs::check_runnable(&study, &manifest)?;
    let run = match resume {
        Some(dir) => Run::resume(&engine, dir, &study, &manifest, &paths.repo).await?,
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
            Run::start(&engine, &paths.results, &study, &manifest, fresh).await?
        }
    };
    measure(&engine, run, interrupt).await
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
pub async fn measure(engine: &Engine, mut run: Run, interrupt: &Interrupt) -> Result<RunResult> {
    let cancel = interrupt.claim();
    let measured = async {
        let guests = run.guests(engine, &Cache::from_env()?, &cancel).await?;
        run.measure(engine, &guests, &cancel).await
    }
    .await;
    interrupt.release();
    let result = measured?;
    let (dir, study) = (&result.dir, &result.study);
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

/// The build a study needs: its probe images and what they are built from.
pub fn study_images(study: &Study) -> BuildArgs {
    BuildArgs {
        only: needs::images(study),
        ..BuildArgs::default()
    }
}
