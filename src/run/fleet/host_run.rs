//! One host's part of a fleet run: a normal run folder (`hosts/<name>/`), started or resumed on
//! that host's Engine and measured like any run. When the host stops answering, the process it was
//! running is recorded as an invalid sample with the reason and its remaining cells are `lost`;
//! every sample the host measured is marked with its name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use super::record::{self, HostStatus};
use crate::engine::{Containers, Engine, Images};
use crate::images::Manifest;
use crate::images::cache::Cache;
use crate::run::env::{self, Environment};
use crate::run::guest::Guests;
use crate::run::lifecycle::{self, Fresh, Run, RunResult};
use crate::run::process::Setting;
use crate::run::run_dir::{self, RunDir};
use crate::run::seccomp::Profile;
use crate::run::shard::Shard;
use crate::study::cpus::CpuChoice;
use crate::study::sample::SampleLog;
use crate::study::{Repeats, Study};

/// What one host's sub-run starts from.
pub struct HostPlan<E = Engine> {
    /// The host's name, written into each sample it measures.
    pub name: String,
    pub engine: E,
    /// The sub-run's folder (`<run>/hosts/<name>/`); resumed when it holds a run.
    pub folder: PathBuf,
    /// The slice of the matrix it measures (`--spread`).
    pub shard: Option<Shard>,
    /// Whether this machine's CPU locks describe its CPUs (it is this machine).
    pub lock_here: bool,
    /// The host's machine as read through its Engine, for its env.json when it is another machine
    /// than this one (whose facts the environment record reads from here).
    pub machine: Option<env::Host>,
}

/// What the study brings to every host's sub-run.
pub struct Common {
    pub study: Study,
    pub text: String,
    pub manifest: Manifest,
    pub cpus: CpuChoice,
    pub seccomp: Option<Profile>,
    pub repo: PathBuf,
    pub repeats: Option<Repeats>,
    /// On this machine's Engine, wait for CPUs another run holds (`--wait-for-cpus`).
    pub wait_cpus: bool,
}

/// How a host's part ended.
pub struct HostEnd {
    pub status: HostStatus,
    /// The Engine's error, when the host was lost.
    pub reason: Option<String>,
    /// Its cells left unmeasured (`probe@tasks#repeat`).
    pub lost: Vec<String>,
    /// The measuring loop's result, when it ended without an error.
    pub result: Option<RunResult>,
}

/// Starts or resumes the host's sub-run and measures it.
pub async fn measure<E: Containers + Images>(
    plan: &HostPlan<E>,
    common: &Common,
    cancel: &CancellationToken,
) -> HostEnd {
    // Whether a process may have been running when an error came: only then is one in flight.
    let mut measuring = false;
    let measured = async {
        let mut run = open(plan, common).await?;
        run.lock_cpus_here(plan.lock_here);
        run.wait_for_cpus(common.wait_cpus);
        if let Some(machine) = &plan.machine {
            own_machine(run.dir(), machine)?;
        }
        let guests: Guests = run
            .guests(&plan.engine, &Cache::from_env()?, cancel)
            .await?;
        measuring = true;
        run.measure(&plan.engine, &guests, cancel).await
    }
    .await;
    let end = match measured {
        Ok(result) => HostEnd {
            status: HostStatus::Ok,
            reason: None,
            lost: Vec::new(),
            result: Some(result),
        },
        Err(e) => lost(plan, common, e, measuring).await,
    };
    if let Err(e) = mark_host(&plan.folder, &plan.name) {
        eprintln!("warning: host `{}`: {e:#}", plan.name);
    }
    end
}

async fn open<E: Containers>(plan: &HostPlan<E>, common: &Common) -> Result<Run> {
    if plan.folder.join(run_dir::STATE).exists() {
        let dir = RunDir::open(&plan.folder)?;
        return Run::resume(
            &plan.engine,
            dir,
            &common.study,
            &common.manifest,
            &common.repo,
        )
        .await;
    }
    let fresh = Fresh {
        text: &common.text,
        cpus: lifecycle::choose(&plan.engine, &common.study, Some(&common.cpus)).await?,
        seccomp: common.seccomp.clone(),
        repo: &common.repo,
        rerun_of: None,
        repeats: common.repeats,
        shard: plan.shard,
        slice: None,
    };
    let folder = || {
        std::fs::create_dir_all(&plan.folder)
            .with_context(|| format!("creating {}", plan.folder.display()))?;
        Ok(RunDir::at(&plan.folder))
    };
    let (s, m) = (&common.study, &common.manifest);
    Run::start_with(&plan.engine, folder, s, m, fresh).await
}

/// The host stopped (its Engine's error `e`): the process it was running becomes an invalid sample
/// with the reason, the cells after it are lost.
async fn lost<E: Containers>(
    plan: &HostPlan<E>,
    common: &Common,
    e: anyhow::Error,
    measuring: bool,
) -> HostEnd {
    let answers = tokio::time::timeout(Duration::from_secs(10), Containers::facts(&plan.engine))
        .await
        .is_ok_and(|r| r.is_ok());
    let reason = record::lost_reason(&plan.name, answers, &e);
    eprintln!("{reason}");
    let lost = match record_lost(
        &plan.folder,
        plan.shard,
        common,
        measuring.then_some(reason.as_str()),
    ) {
        Ok(lost) => lost,
        Err(e) => {
            eprintln!("warning: host `{}`: {e:#}", plan.name);
            Vec::new()
        }
    };
    HostEnd {
        status: HostStatus::Lost,
        reason: Some(reason),
        lost,
        result: None,
    }
}

/// The cells of the sub-run left unmeasured; when a process was in flight (`in_flight`: the
/// reason), the first of them is that process, appended as an invalid sample, and the rest are
/// returned.
fn record_lost(
    folder: &Path,
    shard: Option<Shard>,
    common: &Common,
    in_flight: Option<&str>,
) -> Result<Vec<String>> {
    let dir = RunDir::at(folder);
    let state = dir.load_state().ok();
    let study = match (&state, shard) {
        (Some(state), _) => state.in_force(common.study.clone())?,
        (None, Some(s)) => crate::run::shard::restrict(common.study.clone(), s),
        (None, None) => common.study.clone(),
    };
    let log = dir.file(run_dir::SAMPLES);
    let samples = match log.exists() {
        true => dir.samples()?.0,
        false => Vec::new(),
    };
    let left = record::unmeasured(&study, &samples);
    let names = |cells: &[crate::run::plan::Cell]| {
        (cells.iter())
            .map(|c| record::cell_name(&study, c))
            .collect::<Vec<_>>()
    };
    let (Some(state), Some(reason), Some((running, rest))) =
        (&state, in_flight, left.split_first())
    else {
        return Ok(names(&left));
    };
    let guests = Guests::default();
    let setting = Setting {
        study: &study,
        manifest: &common.manifest,
        guests: &guests,
        state,
        seccomp: None,
    };
    SampleLog::open(&log)?.append(&setting.invalid(running, reason.to_string()))?;
    Ok(names(rest))
}

/// Writes the host's name into every sample of its sub-run that has none (those it measured in
/// this invocation).
fn mark_host(folder: &Path, name: &str) -> Result<()> {
    let folder = RunDir::at(folder);
    if !folder.file(run_dir::SAMPLES).exists() {
        return Ok(());
    }
    let (mut samples, bad) = folder.samples()?;
    if !bad.is_empty() || samples.iter().all(|s| s.host.is_some()) {
        return Ok(());
    }
    let mut text = String::new();
    for s in &mut samples {
        s.host.get_or_insert_with(|| name.to_string());
        text.push_str(&serde_json::to_string(s)?);
        text.push('\n');
    }
    folder.write(run_dir::SAMPLES, text.as_bytes())
}

/// The sub-run's env.json describes the host's own machine, not the coordinator's.
fn own_machine(dir: &RunDir, machine: &env::Host) -> Result<()> {
    let Ok(text) = dir.read(run_dir::ENV) else {
        return Ok(());
    };
    let mut environment: Environment = serde_json::from_str(&text)
        .with_context(|| format!("parsing {}", dir.file(run_dir::ENV).display()))?;
    if environment.host != *machine {
        environment.host = machine.clone();
        dir.write_json(run_dir::ENV, &environment)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
