//! One process of a cell, measured: its sampler command, where it runs, and the sample its
//! outcome gives. Where is an [`Execution`]: a container on the host's kernel ([`Host`]) or a VM
//! under a guest kernel ([`crate::run::guest::InGuest`]), which says what its outcome adds to the
//! sample. How it is kept apart from the others is its [`Isolation`]: a container of its own, or a
//! fresh process in a container kept up for its cell ([`Containers::serve`]).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

use crate::engine::{ContainerOutcome, ContainerSpec, Containers, Created, SERVE, Serving};
use crate::images::Manifest;
use crate::run::execution::{Execution, Host, Launch, Process, tail};
use crate::run::guest::{Guests, InGuest};
use crate::run::plan::Cell;
use crate::run::run_dir::RunState;
use crate::study::sample::{self, Sample, SamplerOutput};
use crate::study::{Isolation, Placeholders, Probe, Protocol, Study};
use crate::study::{cpuset, kind};

/// What every process of a run is measured with.
#[derive(Clone, Copy)]
pub struct Setting<'a> {
    pub study: &'a Study,
    pub manifest: &'a Manifest,
    /// The guest kernels and initramfs of probes that run in a VM.
    pub guests: &'a Guests,
    pub state: &'a RunState,
    /// The JSON of the study's seccomp profile, if any.
    pub seccomp: Option<&'a str>,
}

/// Runs one process of `cell` where its probe runs (a fresh container, a fresh process in a
/// container kept up for it alone, or a VM under its guest kernel); `None` when interrupted (the
/// container is gone, no sample). An `Err` is the Engine's
/// failure, or what the process needed was not made ready.
pub async fn measure<E: Containers>(
    engine: &E,
    with: &Setting<'_>,
    cell: &Cell,
    cancel: &CancellationToken,
) -> Result<Option<Sample>> {
    measure_next(engine, with, (cell, &[]), &mut Held::off(), cancel).await
}

/// The containers held between two processes: one created ahead for the next process, not
/// started (see [`measure_next`]), and those kept up for cells measured `isolation: process`
/// while they have processes left (the next cell's started ahead too).
pub struct Held<E: Containers> {
    /// Whether containers are created ahead at all (off: each is created on the critical path).
    on: bool,
    ahead: Option<Created<E>>,
    serving: Vec<Serving<E>>,
}

impl<E: Containers> Held<E> {
    /// Containers created ahead when `on`.
    pub fn new(on: bool) -> Self {
        Self {
            on,
            ahead: None,
            serving: Vec::new(),
        }
    }

    /// Never creates ahead.
    pub fn off() -> Self {
        Self::new(false)
    }

    /// The container created ahead for `spec`; one created for anything else is removed.
    async fn take(&mut self, spec: &ContainerSpec) -> Option<Created<E>> {
        let held = self.ahead.take()?;
        if held.spec == *spec {
            return Some(held);
        }
        held.remove().await;
        None
    }

    /// Holds what was made ready; what failed is tried again on the critical path, where its
    /// error stops the run.
    fn keep(&mut self, ready: Vec<Ready<E>>) {
        for r in ready {
            match r {
                Ready::Created(created) => {
                    debug_assert!(self.ahead.is_none(), "one created ahead at a time");
                    self.ahead = Some(created)
                }
                Ready::Serving(serving) => self.serving.push(serving),
            }
        }
    }

    /// Removes every container held, side by side: no process of theirs will run (an interrupt,
    /// an error, the end of the cells). A dropped `Held` removes them too, through their guards.
    pub async fn clear(&mut self) {
        let ahead = self.ahead.take().map(Created::remove);
        let serving = self.serving.drain(..).map(|s| s.created.remove());
        join_all(serving.chain(ahead)).await;
    }
}

/// [`measure`] of `cell`, with the `rest` of the cells after it in view. A process isolated by
/// container: once it has ended and while nothing is measured, the container of the next cell's
/// process is created (not started) into `held`, alongside reading this one's output and removing
/// it, and used when it was created from the very same spec. A process isolated by process: it
/// runs in its cell's container kept up in `held`, started once the process before its first one
/// has ended (or for it, when containers are not made ready ahead); once no cell of `rest` needs
/// it, it is removed the next time the Engine works between two processes, or at the end of the
/// cells. The Engine never works while a process runs.
pub async fn measure_next<E: Containers>(
    engine: &E,
    with: &Setting<'_>,
    (cell, rest): (&Cell, &[Cell]),
    held: &mut Held<E>,
    cancel: &CancellationToken,
) -> Result<Option<Sample>> {
    let process = match with.process(cell)? {
        Ok(process) => process,
        Err(not_measured) => return Ok(Some(not_measured)),
    };
    let guest;
    let execution: &dyn Execution = match &process.probe.kernel {
        None => &Host,
        Some(kernel) => {
            guest = InGuest {
                guests: with.guests,
                kernel,
            };
            &guest
        }
    };
    let spec = match execution.launch(&process)? {
        Launch::Container(spec) => spec,
        Launch::Refused(why) => return Ok(Some(with.invalid(cell, why))),
    };
    let isolation = isolation_of(process.probe, process.protocol);
    let ran = match isolation {
        Isolation::Container => in_container(engine, with, spec, rest, held, cancel).await,
        Isolation::Process => in_process(engine, with, spec, rest, held, cancel).await,
    };
    let Some((started_at, outcome)) = ran? else {
        return Ok(None);
    };
    let mut s = with.blank(cell, started_at);
    s.isolation = Some(isolation);
    s.image_tag = process.image.tag.clone();
    s.image_id = process.image.id.clone();
    s.stderr_tail = tail(&outcome.stderr, 4096);
    s.exit_code = outcome.exit_code;
    s.oom_killed = outcome.oom_killed;
    s.timings.container_ms = Some(outcome.elapsed.as_secs_f64() * 1000.0);
    let error = fill(&mut s, &outcome);
    let error = execution.judge(&mut s, &outcome, error);
    kind::judge_validity(&mut s, error.as_deref(), &process.probe.results);
    Ok(Some(s))
}

/// How a process of `probe` is kept apart from the others under `protocol`: the study's choice or
/// the kind's, and under a guest kernel always a container (a VM) of its own.
pub fn isolation_of(probe: &Probe, protocol: &Protocol) -> Isolation {
    match probe.kernel {
        Some(_) => Isolation::Container,
        None => probe.kind.isolation(protocol),
    }
}

/// When a process starts, and how it ended; `None` when interrupted (nothing is left of it).
type Ran = Option<(String, ContainerOutcome)>;

/// The process of `spec` in a container of its own, which is then removed; what the next cell's
/// process needs is made ready meanwhile ([`next_ready`]).
async fn in_container<E: Containers>(
    engine: &E,
    with: &Setting<'_>,
    spec: ContainerSpec,
    rest: &[Cell],
    held: &mut Held<E>,
    cancel: &CancellationToken,
) -> Result<Ran> {
    let container = match held.take(&spec).await {
        Some(created) => created,
        None => engine.create_container(&spec).await?,
    };
    let started_at = now();
    let outcome = match engine.start_and_wait(&container, cancel).await {
        Ok(outcome) if !outcome.interrupted => outcome,
        ended => {
            container.remove().await;
            return ended.map(|_| None);
        }
    };
    // The process has ended: nothing is measured until the next one starts.
    let next = next_ready(with, rest, held);
    let (outcome, ready) = tokio::join!(engine.finish(container, outcome), ready(engine, next));
    held.keep(ready);
    Ok(Some((started_at, outcome?)))
}

/// The process of `spec` as a fresh process in its cell's container, kept up in `held` while a
/// cell of `rest` needs it; a process that did not exit 0 takes its container with it.
async fn in_process<E: Containers>(
    engine: &E,
    with: &Setting<'_>,
    spec: ContainerSpec,
    rest: &[Cell],
    held: &mut Held<E>,
    cancel: &CancellationToken,
) -> Result<Ran> {
    let serve = kept_up(&spec);
    let mut serving = match held.serving.iter().position(|s| *s.spec() == serve) {
        Some(at) => held.serving.swap_remove(at),
        None => engine.serve(&serve).await?,
    };
    let started_at = now();
    let outcome = engine.sample(&mut serving, &spec.cmd, cancel).await?;
    let failed = outcome.exit_code != Some(0) || outcome.oom_killed;
    if failed || outcome.interrupted || outcome.timed_out {
        // It may still hold the process (timed out, interrupted): it goes now.
        serving.created.remove().await;
    } else {
        held.serving.push(serving);
    }
    if outcome.interrupted {
        return Ok(None);
    }
    // The process has ended. When the next process needs containers started (or none is made
    // ready ahead), the kept containers no cell left needs are removed alongside; otherwise they
    // wait, idle, for the next such moment or the end of the cells.
    let next = next_ready(with, rest, held);
    if !next.is_empty() || !held.on {
        // The cells left, as the probe and tasks labels of the containers kept up for them.
        let left: Vec<(&str, String)> = (rest.iter())
            .map(|c| (with.study.probes[c.probe].id.as_str(), c.tasks.to_string()))
            .collect();
        let wanted = |s: &Serving<E>| {
            let labels = &s.spec().labels;
            let cell = (
                labels["parkbench.probe"].as_str(),
                &labels["parkbench.tasks"],
            );
            left.iter().any(|(probe, tasks)| (*probe, tasks) == cell)
        };
        let (keep, done): (Vec<_>, Vec<_>) = held.serving.drain(..).partition(wanted);
        held.serving = keep;
        let remove = join_all(done.into_iter().map(|s| s.created.remove()));
        let (_, ready) = tokio::join!(remove, ready(engine, next));
        held.keep(ready);
    }
    Ok(Some((started_at, outcome)))
}

/// What is made ready for the next process between two: its own container created (not started),
/// or kept-up containers started (idle until their first request).
enum Ready<E: Containers> {
    Created(Created<E>),
    Serving(Serving<E>),
}

/// Most kept-up containers started at once ahead of their first process.
const READY_AT_ONCE: usize = 8;

/// What to make ready for the processes after this one, when containers are made ready ahead: the
/// next cell's own container, when it gets one; or, when it runs in a kept-up container not yet
/// started, that one and those of the cells that follow it until a cell comes again or one gets a
/// container of its own or cannot be measured (one repeat's worth, at most [`READY_AT_ONCE`]), to
/// be started side by side.
fn next_ready<E: Containers>(
    with: &Setting<'_>,
    rest: &[Cell],
    held: &Held<E>,
) -> Vec<(Isolation, ContainerSpec)> {
    let Some(first) = rest.first().filter(|_| held.on).and_then(|c| with.spec(c)) else {
        return Vec::new();
    };
    if first.0 == Isolation::Container {
        return vec![first];
    }
    let mut seen: Vec<ContainerSpec> = Vec::new();
    for cell in rest {
        let Some((Isolation::Process, spec)) = with.spec(cell) else {
            break;
        };
        let serve = kept_up(&spec);
        if seen.contains(&serve) || seen.len() == READY_AT_ONCE {
            break;
        }
        seen.push(serve);
    }
    seen.into_iter()
        .filter(|serve| !held.serving.iter().any(|s| s.spec() == serve))
        .map(|serve| (Isolation::Process, serve))
        .collect()
}

/// Makes `next` ready ([`next_ready`]), side by side; what fails is left out.
async fn ready<E: Containers>(engine: &E, next: Vec<(Isolation, ContainerSpec)>) -> Vec<Ready<E>> {
    let each = next.into_iter().map(|(isolation, spec)| async move {
        match isolation {
            Isolation::Container => engine
                .create_container(&spec)
                .await
                .ok()
                .map(Ready::Created),
            Isolation::Process => engine.serve(&spec).await.ok().map(Ready::Serving),
        }
    });
    join_all(each).await.into_iter().flatten().collect()
}

/// The container kept up for the processes of `spec`'s cell: the same, but for its command (the
/// sampler as their supervisor) and the repeat's label.
fn kept_up(spec: &ContainerSpec) -> ContainerSpec {
    let mut labels = spec.labels.clone();
    labels.remove("parkbench.repeat");
    ContainerSpec {
        cmd: SERVE.map(String::from).to_vec(),
        labels,
        ..spec.clone()
    }
}

impl<'a> Setting<'a> {
    /// The process of `cell`, or its sample when it cannot run (its image unavailable here or its
    /// build failed, its CPUs not among the run's); an error when its image was not built.
    fn process(&self, cell: &Cell) -> Result<Result<Process<'a>, Sample>> {
        let probe = &self.study.probes[cell.probe];
        if let Some(why) = unavailable_reason(self.manifest, &probe.image) {
            return Ok(Err(
                self.invalid(cell, format!("{}{why}", sample::UNAVAILABLE))
            ));
        }
        if let Some(failed) = self.manifest.failed(&probe.image) {
            let why = format!("{}{}", sample::BUILD_FAILED, failed.reason());
            return Ok(Err(self.invalid(cell, why)));
        }
        let image = self.manifest.get(&probe.image).with_context(|| {
            format!(
                "probe {:?} names image {:?}, which was not built",
                probe.id, probe.image
            )
        })?;
        let words = match placeholders(probe, self.state, cell.tasks) {
            Ok(words) => words,
            Err(why) => return Ok(Err(self.invalid(cell, why))),
        };
        let labels = BTreeMap::from([
            ("parkbench.run".to_string(), self.state.run_id.clone()),
            ("parkbench.study".to_string(), self.study.id.clone()),
            ("parkbench.probe".to_string(), probe.id.clone()),
            ("parkbench.tasks".to_string(), cell.tasks.to_string()),
            ("parkbench.repeat".to_string(), cell.repeat.to_string()),
        ]);
        Ok(Ok(Process {
            probe,
            protocol: &self.study.protocol,
            image,
            words,
            labels,
            timeout: Duration::from_secs(self.study.protocol.timeout_s + 30),
            seccomp: self.seccomp,
        }))
    }

    /// How `cell`'s process is isolated, and the spec of its container, when it runs in one (not
    /// when it is not measured, refused or its needs were not made ready: those show when it is
    /// measured).
    fn spec(&self, cell: &Cell) -> Option<(Isolation, ContainerSpec)> {
        let process = self.process(cell).ok()?.ok()?;
        let launch = match &process.probe.kernel {
            None => Host.launch(&process),
            Some(kernel) => InGuest {
                guests: self.guests,
                kernel,
            }
            .launch(&process),
        };
        match launch.ok()? {
            Launch::Container(spec) => Some((isolation_of(process.probe, process.protocol), spec)),
            Launch::Refused(_) => None,
        }
    }

    /// The sample of a cell that was not measured, with why.
    pub fn invalid(&self, cell: &Cell, why: String) -> Sample {
        let mut s = self.blank(cell, now());
        s.error = Some(why);
        s
    }

    /// A sample of this cell with nothing measured yet: invalid until the sampler's output says
    /// otherwise.
    fn blank(&self, cell: &Cell, started_at: String) -> Sample {
        let (study, state) = (self.study, self.state);
        let probe = &study.probes[cell.probe];
        // A probe the run cannot pin is recorded with the run's CPUs.
        let words = placeholders(probe, state, cell.tasks).unwrap_or_else(|_| Placeholders {
            tasks: cell.tasks,
            cpus: cpuset::parse(&state.cpus_pinned).unwrap_or_default(),
            other_cpus: Vec::new(),
        });
        let cpus = cpuset::format(&words.cpus);
        let workers = if words.cpus.is_empty() {
            state.workers
        } else {
            words.cpus.len() as u32
        };
        Sample {
            run_id: state.run_id.clone(),
            study: study.id.clone(),
            probe: probe.id.clone(),
            image_tag: String::new(),
            image_id: String::new(),
            tasks: cell.tasks,
            repeat: cell.repeat,
            position: cell.position,
            cpus_requested: state.cpus_requested.clone(),
            cpus_pinned: cpus,
            cpus_in_force: None,
            workers,
            env: probe.expand_env(&words),
            args: probe.expand_args(&words),
            program: Some(probe.program.clone()),
            baseline_rss_bytes: None,
            rss_bytes: Vec::new(),
            rss_median_bytes: None,
            per_task_bytes: None,
            vm_hwm_bytes: None,
            rss_anon_bytes: None,
            rss_file_bytes: None,
            threads: None,
            completed: None,
            expected: cell.tasks,
            valid: false,
            error: None,
            stderr_tail: String::new(),
            metrics: BTreeMap::new(),
            timings: Default::default(),
            started_at,
            exit_code: None,
            oom_killed: false,
            kind: probe.kind,
            peak: None,
            results: Vec::new(),
            latency_ns: Vec::new(),
            batches: Vec::new(),
            drop_batches: None,
            notes: Vec::new(),
            isolation: None,
            guest: None,
            host: None,
            hardware: None,
        }
    }
}

/// Why an image is unavailable, down to the pin at the root (an image below an unavailable one
/// says only that its parent is): `image toolchain-dotnet: pin dotnet (toolchains/dotnet.yaml) …`.
pub(crate) fn unavailable_reason(manifest: &Manifest, image: &str) -> Option<String> {
    let mut name = image;
    let mut why = manifest.unavailable(name)?;
    for _ in 0..16 {
        let parent = why
            .strip_prefix("its parent image ")
            .and_then(|r| r.split_whitespace().next());
        match parent.and_then(|p| Some((p, manifest.unavailable(p)?))) {
            Some((p, w)) => (name, why) = (p, w),
            None => break,
        }
    }
    let first = why.lines().next().unwrap_or_default().trim_end_matches(':');
    Some(if name == image {
        first.to_string()
    } else {
        format!("image {name}: {first}")
    })
}

/// A cell's placeholder words; its CPUs are the run's pinned list, or its first `cpus` when the
/// probe asks for fewer.
pub fn placeholders(probe: &Probe, state: &RunState, tasks: u64) -> Result<Placeholders, String> {
    let run_cpus = cpuset::parse(&state.cpus_pinned).map_err(|e| format!("{e:#}"))?;
    Placeholders::of(probe, tasks, &run_cpus)
}

/// Fills the sample from the sampler's JSON; returns why the process failed, if it did.
fn fill(s: &mut Sample, outcome: &ContainerOutcome) -> Option<String> {
    let json = outcome
        .stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'));
    let parsed = json.map(serde_json::from_str::<SamplerOutput>);
    let out = match parsed {
        Some(Ok(out)) => out,
        Some(Err(e)) => return Some(format!("the sampler's output is not valid JSON: {e}")),
        None => return Some(no_json(outcome)),
    };
    let unusable = kind::fill_from_sampler(s, &out);
    if outcome.timed_out {
        return Some("timed out; container killed".into());
    }
    out.error.clone().or(unusable)
}

/// Why the sampler printed no JSON, as far as the container's outcome tells.
fn no_json(outcome: &ContainerOutcome) -> String {
    if outcome.timed_out {
        "timed out; container killed".into()
    } else if outcome.oom_killed {
        "OOM-killed".into()
    } else if outcome.exit_code == Some(137) {
        // 128 + 9: the sampler itself got SIGKILL, and neither the container's OOM killer nor
        // our timeout sent it (`docker kill`, a host-wide OOM kill).
        "killed by SIGKILL (exit 137), from outside the sampler".into()
    } else {
        format!(
            "the sampler printed no JSON (exit code {:?})",
            outcome.exit_code
        )
    }
}

/// Now, RFC 3339 UTC to the millisecond.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests;
