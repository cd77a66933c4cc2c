//! A run: the one owner of a run folder's life. It is made new ([`Run::start`]) or reopened
//! ([`Run::resume`], or [`Run::resume_rerun`] for a rerun of an archive), its guest kernels are made
//! ready ([`Run::guests`]), then every cell not yet in `samples.jsonl` is measured
//! ([`Run::measure`]): each process in its own fresh container or VM, with the study's protocol,
//! each sample appended the moment it exists. An interrupted run resumes.

mod measuring;
mod rerun;
mod rounds;
mod setup;

use std::time::Instant;

use anyhow::{Context, Result, bail};
use tokio_util::sync::CancellationToken;

use crate::engine::{Containers, Images};
use crate::images::Manifest;
use crate::images::cache::Cache;
use crate::run::cpu_lock::{self, CpuLock};
use crate::run::guest::{self, Guests};
use crate::run::plan;
use crate::run::run_dir::{self, RunDir, RunState, Status};
use crate::study::sample::{Sample, SampleLog};
use crate::study::{Isolation, Study, cpuset};
use measuring::Measuring;

pub use rerun::{differences, rerun_folder};
pub use setup::{Fresh, choose, new_state};

/// A run folder, its state, the study as it measures it and the images it runs.
pub struct Run {
    dir: RunDir,
    state: RunState,
    /// The study with the processes per cell and the kernels the run started with (see
    /// [`RunState::in_force`]), whatever `--repeats` says now.
    study: Study,
    manifest: Manifest,
    /// Measure even when another run holds some of the CPUs (`--allow-shared-cpus`).
    shared_cpus: bool,
    /// Wait for CPUs another run holds instead of being refused (`--wait-for-cpus`).
    wait_cpus: bool,
    /// The CPUs' locks, when taken before the run was made or opened ([`Run::hold_cpus`]).
    held: Option<CpuLock>,
    /// Whether this invocation made the run's folder: only then is a run refused before it
    /// measured anything removed.
    made_here: bool,
    /// Process times to estimate from when the study has no earlier run (its reference run's).
    earlier: Option<plan::Estimates>,
    /// Create each next process's container between two processes, off the critical path (see
    /// [`crate::run::process::measure_next`]); off with [`SERIAL_CONTAINERS`] set.
    create_ahead: bool,
    /// Take this machine's CPU locks ([`cpu_lock`]); off for an Engine on another machine, which
    /// a fleet run's lease guards instead.
    lock_here: bool,
}

/// When this environment variable is set, each process's container is created just before it
/// starts, as before containers were created ahead: `just bench-overhead` compares the two.
pub const SERIAL_CONTAINERS: &str = "PARKBENCH_SERIAL_CONTAINERS";

/// When this environment variable is set (`container` or `process`), every process is isolated
/// so, whatever the study says: `just bench-overhead` measures both side by side. Each sample
/// records the isolation it had.
pub const ISOLATION: &str = "PARKBENCH_ISOLATION";

/// The isolation [`ISOLATION`] asks for, if any.
fn isolation_override() -> Result<Option<Isolation>> {
    let Some(value) = std::env::var_os(ISOLATION) else {
        return Ok(None);
    };
    match value.to_str() {
        Some("container") => Ok(Some(Isolation::Container)),
        Some("process") => Ok(Some(Isolation::Process)),
        _ => bail!("{ISOLATION} is {value:?}: set it to `container` or `process`, or unset it"),
    }
}

/// Refuses to go on with a run whose earlier processes of a probe were isolated otherwise than
/// this invocation would isolate the rest ([`ISOLATION`] set, or unset, unlike before): one cell
/// would mix both.
fn same_isolation(study: &Study, existing: &[Sample]) -> Result<()> {
    for s in existing {
        let Some(probe) = study.probes.iter().find(|p| p.id == s.probe) else {
            continue;
        };
        let now = crate::run::process::isolation_of(probe, &study.protocol);
        // A process measured before isolation was recorded had a container of its own.
        let measured = !s.image_id.is_empty();
        let before = s.isolation.or(measured.then_some(Isolation::Container));
        if let Some(before) = before.filter(|&b| b != now) {
            bail!(
                "the run's processes of {} were isolated by {}, and this invocation would isolate \
                 the rest by {}: one cell would mix both. Resume with {ISOLATION}={}",
                s.probe,
                before.name(),
                now.name(),
                before.name()
            );
        }
    }
    Ok(())
}

/// What one invocation of [`Run::measure`] did.
pub struct RunResult {
    pub dir: RunDir,
    pub state: RunState,
    /// The study as the run measured it.
    pub study: Study,
    /// Samples measured in this invocation.
    pub measured: usize,
    /// Invalid samples in the whole run (a probe whose image failed to build is not one: its
    /// cells are `not measured`).
    pub invalid: usize,
    /// The images of the study's probes whose build failed: those probes went unmeasured.
    pub build_failed: Vec<String>,
    /// Ctrl-C stopped it before its end: resumable.
    pub interrupted: bool,
    /// The hosts of a run across hosts (`--hosts`) that stopped answering, their cells left for
    /// `run --resume`: the run is incomplete. Empty for a run on one Engine.
    pub lost_hosts: Vec<String>,
    /// Wall time of this invocation's measuring loop, ms.
    pub wall_ms: f64,
    /// Sum of the probe processes' own lifetimes measured in this invocation, ms.
    pub probe_ms: f64,
}

impl RunResult {
    /// Stopped before its end, by Ctrl-C or a lost host: `run --resume` finishes it.
    pub fn incomplete(&self) -> bool {
        self.interrupted || !self.lost_hosts.is_empty()
    }

    /// Wall time against the probes' own lifetimes: the kit's overhead factor.
    pub fn overhead(&self) -> Option<f64> {
        (self.probe_ms > 0.0).then(|| self.wall_ms / self.probe_ms)
    }
}

/// The CPUs a run measures on, taken.
enum Taken {
    /// Their locks (none when the run does not lock them here, or shares them).
    Locks(Option<CpuLock>),
    /// Ctrl-C came while the run waited for them: nothing measured, the run as it was.
    Interrupted,
}

impl Run {
    /// The run in `dir` at `state`, measuring `study` with the images of `manifest`; nothing is
    /// written.
    pub fn new(dir: RunDir, state: RunState, study: &Study, manifest: &Manifest) -> Result<Run> {
        let mut study = state.in_force(study.clone())?;
        if let Some(isolation) = isolation_override()? {
            study.protocol.isolation = Some(isolation);
        }
        Ok(Run {
            dir,
            state,
            study,
            manifest: manifest.clone(),
            shared_cpus: false,
            wait_cpus: false,
            held: None,
            made_here: false,
            earlier: None,
            create_ahead: std::env::var_os(SERIAL_CONTAINERS).is_none(),
            lock_here: true,
        })
    }

    /// Process times for the ETA when the study has no earlier run here (its reference run's).
    pub fn estimate_from(&mut self, earlier: plan::Estimates) {
        self.earlier = Some(earlier);
    }

    /// Lets the run measure beside another run on the same CPUs (`--allow-shared-cpus`); every
    /// sample then carries a validity warning.
    pub fn share_cpus(&mut self, shared: bool) {
        self.shared_cpus = shared;
    }

    /// Lets the run wait for CPUs another run holds (`--wait-for-cpus`) instead of being refused.
    pub fn wait_for_cpus(&mut self, wait: bool) {
        self.wait_cpus = wait;
    }

    /// The run's CPUs, locked by the caller before the run's environment was recorded (which runs
    /// a container on them): measured under these locks, not taken again (`None`: taken when it
    /// measures, if at all).
    pub fn hold_cpus(&mut self, locks: Option<CpuLock>) {
        self.held = locks;
    }

    /// Whether each next process's container is created ahead (the default) or just before it
    /// starts.
    pub fn create_ahead(&mut self, on: bool) {
        self.create_ahead = on;
    }

    /// Whether the run takes this machine's CPU locks (the default): off for an Engine on another
    /// machine, whose CPUs these locks do not describe.
    pub fn lock_cpus_here(&mut self, on: bool) {
        self.lock_here = on;
    }

    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// The run's guest kernels made ready (none on the host's kernel), recorded in run.json with a
    /// deviation per kernel; a resume refuses kernels other than those it started with.
    pub async fn guests(
        &mut self,
        engine: &(impl Containers + Images),
        cache: &Cache,
        cancel: &CancellationToken,
    ) -> Result<Guests> {
        let guests = guest::prepare(engine, cache, &self.manifest, &self.study, cancel).await?;
        if guests.kernels.is_empty() {
            return Ok(guests);
        }
        let state = &mut self.state;
        let now: Vec<_> = guests.kernels.values().map(|k| k.record.clone()).collect();
        guest::same_as_before(&state.guests, &now)
            .with_context(|| format!("resuming run {}", self.dir.id()))?;
        state.guests = now;
        for k in &state.guests {
            let d = guest::deviation(k, &self.study.source.environment);
            if !state.deviations.contains(&d) {
                state.deviations.push(d);
            }
        }
        self.dir.save_state(state)?;
        Ok(guests)
    }

    /// Runs every cell not yet in `samples.jsonl`, appending each sample as soon as it is measured;
    /// then, when processes come on demand, rounds of one more process per cell that needs it
    /// (`rounds::next`) until none does. A resume runs the missing planned cells first, then goes on
    /// with the rounds from the samples it finds. An Engine error or a sample that cannot be written
    /// stops the run (incomplete, resumable); so does `cancel` (then the result says interrupted).
    pub async fn measure(
        mut self,
        engine: &impl Containers,
        guests: &Guests,
        cancel: &CancellationToken,
    ) -> Result<RunResult> {
        // Held until the run stops measuring, however it stops.
        let _cpus = match self.held.take() {
            Some(held) => Some(held),
            None => match self.lock_cpus(cancel).await? {
                Taken::Locks(locks) => locks,
                Taken::Interrupted => return Ok(self.ended(0, 0, true, (0.0, 0.0))),
            },
        };
        let seccomp = setup::seccomp_of(&self.study, &self.dir)?.map(|p| p.json);
        let log = self.dir.file(run_dir::SAMPLES);
        let existing = measuring::read_samples(&log)?;
        same_isolation(&self.study, &existing)?;
        let round = measuring::missing_cells(&self.study, &existing);
        let estimates = self.estimates();
        let study = &self.study;
        eprintln!(
            "{}",
            plan::describe(study, &round, existing.len(), &estimates)
        );
        let watch = measuring::watch_host(&mut self.state).await?;
        let failed = |s: &Sample| !s.valid && !s.is_unavailable();
        let mut m = Measuring {
            engine,
            cancel,
            study,
            manifest: &self.manifest,
            guests,
            dir: &self.dir,
            seccomp,
            create_ahead: self.create_ahead,
            log: SampleLog::open(&log)?,
            estimates,
            bar: measuring::progress(round.len()),
            started: Instant::now(),
            watch,
            invalid: existing.iter().filter(|s| failed(s)).count(),
            samples: existing,
            measured: 0,
            probe_ms: 0.0,
            wall_ms: 0.0,
        };
        self.state.status = Status::Running;
        self.dir.save_state(&self.state)?;
        let interrupted = m.rounds(&mut self.state, round).await?;
        let (measured, invalid, times) = (m.measured, m.invalid, (m.probe_ms, m.wall_ms));
        Ok(self.ended(measured, invalid, interrupted, times))
    }

    /// The run's result once it stopped measuring: `times` are the processes' own milliseconds and
    /// the wall's.
    fn ended(
        self,
        measured: usize,
        invalid: usize,
        interrupted: bool,
        (probe_ms, wall_ms): (f64, f64),
    ) -> RunResult {
        let mut build_failed: Vec<String> = (self.study.probes.iter())
            .filter(|p| self.manifest.failed(&p.image).is_some())
            .map(|p| p.image.clone())
            .collect();
        build_failed.sort();
        build_failed.dedup();
        RunResult {
            build_failed,
            dir: self.dir,
            state: self.state,
            study: self.study,
            measured,
            invalid,
            interrupted,
            lost_hosts: Vec::new(),
            wall_ms,
            probe_ms,
        }
    }

    /// Takes the run's CPUs for itself ([`cpu_lock`]); with `--allow-shared-cpus`, records that it
    /// may share them instead; with `--wait-for-cpus`, waits for those another run holds (until
    /// `cancel`: then interrupted). A refused run that has measured nothing leaves no folder behind
    /// when this invocation made it.
    async fn lock_cpus(&mut self, cancel: &CancellationToken) -> Result<Taken> {
        if !self.lock_here {
            return Ok(Taken::Locks(None));
        }
        if self.shared_cpus {
            let w = cpu_lock::shared_warning(&self.state.cpus_pinned);
            if !self.state.warnings.contains(&w) {
                self.state.warnings.push(w);
            }
            return Ok(Taken::Locks(None));
        }
        let cpus = cpuset::parse(&self.state.cpus_pinned)?;
        let holder = format!(
            "run {} of study {} (pid {})",
            self.dir.id(),
            self.study.id,
            std::process::id()
        );
        let dir = cpu_lock::folder();
        let taken = match self.wait_cpus {
            true => CpuLock::wait(&dir, &cpus, &holder, cancel.cancelled()).await,
            false => CpuLock::acquire(&dir, &cpus, &holder).map(Some),
        };
        let made_now = self.made_here
            && self.state.wall_ms == 0.0
            && !self.dir.file(run_dir::SAMPLES).exists();
        match taken {
            Ok(Some(lock)) => Ok(Taken::Locks(Some(lock))),
            Ok(None) => Ok(Taken::Interrupted),
            Err(e) if made_now => {
                // Nothing measured yet: the folder was made moments ago by this invocation.
                let _ = std::fs::remove_dir_all(self.dir.path());
                Err(e.context(format!(
                    "run {} did not start; its folder is removed",
                    self.dir.id()
                )))
            }
            Err(e) => Err(e.context(format!(
                "run {} kept as it was; resume it later with `{}`",
                self.dir.id(),
                run_dir::resume_command(self.dir.path(), &self.state)
            ))),
        }
    }

    /// How long each probe's processes took in the study's latest run, for the ETA; a probe whose
    /// image is unavailable or failed to build is not run.
    fn estimates(&self) -> plan::Estimates {
        let latest = self
            .dir
            .path()
            .parent()
            .map(|runs| runs.join(run_dir::LATEST));
        let not_run = self
            .study
            .probes
            .iter()
            .filter(|p| self.manifest.get(&p.image).is_none())
            .map(|p| p.id.clone());
        let latest = latest.map(|l| RunDir::at(&l).estimates());
        let estimates = match (latest, &self.earlier) {
            (Some(e), _) if e.source.is_some() => e,
            (_, Some(earlier)) => earlier.clone(),
            (latest, None) => latest.unwrap_or_default(),
        };
        estimates.not_run(not_run)
    }
}

#[cfg(test)]
mod loop_tests;

#[cfg(test)]
mod served_tests;

#[cfg(test)]
mod guest_tests;

#[cfg(test)]
mod ahead_tests;
