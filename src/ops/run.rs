//! `parkbench run`: a study's matrix, every process in its own container, every sample kept; or
//! the missing cells of an interrupted run (`--resume`). Load the study → check its probe images →
//! choose its CPUs (refused here when another run holds them) → build → take the CPUs → start or
//! resume the run → measure → say how precise and costly it was.

use anyhow::Result;

use super::launch::{
    Checked, build_options, check, choose_cpus, reference_estimates, said, study_text,
};
use super::prepare::{check_repo, prepare_on};
use super::{Ending, Interrupt, Paths, Prepared, fleet};

pub use super::launch::Options;
use crate::engine::Engine;
use crate::images::cache::Cache;
use crate::run::cpu_lock::{self, CpuLock};
use crate::run::lifecycle::{Fresh, Run, RunResult};
use crate::run::needs;
use crate::run::run_dir::RunDir;
use crate::study::cpus::Chosen;
use crate::study::cpuset;

pub async fn command(paths: &Paths, options: &Options, interrupt: &Interrupt) -> Result<Ending> {
    let result = run(paths, options, interrupt).await?;
    if !result.incomplete() {
        eprint!("{}", paths.runnable(&next_steps(result.dir.path())));
    }
    Ok(Ending::of_run(&result))
}

/// Builds (a no-op when unchanged) and runs; returns where the samples are.
pub async fn run(paths: &Paths, options: &Options, interrupt: &Interrupt) -> Result<RunResult> {
    if fleet::is_fleet(options) {
        return fleet::run(paths, options, interrupt).await;
    }
    let resume = options.resume.as_deref().map(RunDir::open).transpose()?;
    let Checked {
        study,
        file,
        seccomp,
        measured,
    } = check(paths, options, resume.as_ref())?;
    check_repo(&paths.repo)?;
    let engine = Engine::connect().await?;
    let begin = match resume {
        Some(dir) => Begin::Resume(dir),
        None => Begin::New(choose_cpus(&engine, &study, options).await?),
    };
    let build = build_options(options, needs::images(&measured));
    let Prepared {
        engine, manifest, ..
    } = prepare_on(engine, &paths.repo, &build).await?;
    needs::check_runnable(&study, &manifest)?;
    // The CPUs are taken (or waited for) before the run's environment is recorded, which runs a
    // container on them: a run refused here has made nothing.
    let held = take_cpus(&begin, &study.id, options).await?;
    let mut run = match begin {
        Begin::Resume(dir) => Run::resume(&engine, dir, &study, &manifest, &paths.repo).await?,
        Begin::New(cpus) => {
            let text = study_text(options)?;
            let p = &study.protocol;
            let fresh = Fresh {
                text: &text,
                cpus,
                seccomp,
                repo: &paths.repo,
                rerun_of: None,
                repeats: options.repeats.map(|c| c.apply(p.repeats, p.target_cv)),
                shard: options.shard,
                slice: options.slice.clone(),
            };
            Run::start(&engine, &paths.results, &study, &manifest, fresh).await?
        }
    };
    run.share_cpus(options.shared_cpus);
    run.hold_cpus(held);
    let earlier = (options.estimates.clone())
        .or_else(|| reference_estimates(paths, file.as_deref(), &study.id));
    if let Some(earlier) = earlier {
        run.estimate_from(earlier);
    }
    measure(&engine, run, interrupt).await
}

/// The locks of the run's CPUs ([`cpu_lock::take_for_run`]); none for a rerun's folder, which
/// `rerun` resumes.
async fn take_cpus(begin: &Begin, study: &str, options: &Options) -> Result<Option<CpuLock>> {
    let cpus = match begin {
        Begin::New(chosen) => chosen.cpus.clone(),
        Begin::Resume(dir) => match dir.load_state()? {
            state if state.rerun_of.is_some() => return Ok(None),
            state => cpuset::parse(&state.cpus_pinned)?,
        },
    };
    let how = (options.shared_cpus, options.wait_for_cpus);
    cpu_lock::take_for_run(&cpus, study, how).await
}

/// A run resumed from its folder, or a new one on the CPUs chosen for it before any build.
enum Begin {
    Resume(RunDir),
    New(Chosen),
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

/// What comes after a run: its report, then its archive.
fn next_steps(dir: &std::path::Path) -> String {
    let dir = super::next_step::shell_path(&super::next_step::from_here(dir));
    format!("next: parkbench report {dir}, then parkbench archive {dir}\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_run_ends_with_its_next_steps_on_its_own_folder() {
        let said = super::next_steps(std::path::Path::new("results/s/runs/r1"));
        assert_eq!(
            said,
            "next: parkbench report results/s/runs/r1, then parkbench archive results/s/runs/r1\n"
        );
    }
}
