//! Runs: every process of a study's matrix in its own fresh container, with the study's protocol;
//! each sample appended to `samples.jsonl` the moment it exists. Interrupted runs resume.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use crate::engine::{ContainerOutcome, ContainerSpec, Containers};
use crate::images::Manifest;
use crate::run::guest::{self, Guests};
use crate::run::plan::{self, Cell};
use crate::run::run_dir::{self, RunDir, RunState, Status};
use crate::run::warning::{self, Watch};
use crate::study::sample::{self, Sample, SampleLog, SamplerOutput};
use crate::study::{Placeholders, Study};
use crate::study::{cpuset, kind};

/// How to choose the CPUs the probes are pinned to.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuChoice {
    /// The study's list; refused when the host lacks any of its CPUs.
    Study,
    /// The first min(requested, available) CPUs of the host.
    Auto,
    /// An explicit list.
    List(String),
}

impl std::str::FromStr for CpuChoice {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        if s == "auto" {
            return Ok(Self::Auto);
        }
        cpuset::parse(s).context("--cpus takes `auto` or a CPU list such as 0-3 or 0,2")?;
        Ok(Self::List(s.to_string()))
    }
}

/// The result of `execute`.
pub struct RunResult {
    pub dir: RunDir,
    pub state: RunState,
    /// Samples measured in this invocation.
    pub measured: usize,
    /// Invalid samples in the whole run.
    pub invalid: usize,
    pub interrupted: bool,
    /// Wall time of this invocation's measuring loop, ms.
    pub wall_ms: f64,
    /// Sum of the probe processes' own lifetimes measured in this invocation, ms.
    pub probe_ms: f64,
}

impl RunResult {
    /// Wall time against the probes' own lifetimes: the kit's overhead factor.
    pub fn overhead(&self) -> Option<f64> {
        (self.probe_ms > 0.0).then(|| self.wall_ms / self.probe_ms)
    }
}

/// Chooses the CPU list in force from the study's request, the host's CPUs and the user's choice.
pub fn choose_cpus(
    requested: &str,
    available: &[usize],
    choice: &CpuChoice,
) -> Result<(Vec<usize>, Vec<String>)> {
    let want = cpuset::parse(requested)?;
    let have = cpuset::format(available);
    let chosen = match choice {
        CpuChoice::Study => {
            if let Some(missing) = want.iter().find(|c| !available.contains(c)) {
                bail!(
                    "the study pins to CPUs {requested} but this host has CPUs {have} (CPU {missing} is missing); \
                     pass --cpus auto to use the first {} of them, or --cpus LIST",
                    want.len().min(available.len())
                );
            }
            want.clone()
        }
        CpuChoice::Auto => available.iter().copied().take(want.len()).collect(),
        CpuChoice::List(list) => {
            let cpus = cpuset::parse(list)?;
            if let Some(missing) = cpus.iter().find(|c| !available.contains(c)) {
                bail!("--cpus {list}: this host has CPUs {have}, not CPU {missing}");
            }
            cpus
        }
    };
    let mut deviations = Vec::new();
    if chosen != want {
        deviations.push(format!(
            "pinned to CPUs {} ({} CPUs, {} workers) instead of the published {requested} ({} CPUs)",
            cpuset::format(&chosen),
            chosen.len(),
            chosen.len(),
            want.len()
        ));
    }
    Ok((chosen, deviations))
}

/// Runs every cell not yet in `samples.jsonl`, appending each sample as soon as it is measured;
/// then, when processes come on demand, rounds of one more process per cell that needs it
/// (`rounds::next`) until none does. A resume runs the missing planned cells first, then goes on
/// with the rounds from the samples it finds.
pub async fn execute(
    engine: &impl Containers,
    study: &Study,
    manifest: &Manifest,
    guests: &Guests,
    dir: &RunDir,
    state: &mut RunState,
    cancel: &CancellationToken,
) -> Result<RunResult> {
    let seccomp = seccomp_of(study, dir)?.map(|p| p.json);
    let log_path = dir.file(run_dir::SAMPLES);
    let existing = read_samples(&log_path)?;
    let mut round = missing_cells(study, &existing);
    let latest = dir.path().parent().map(|runs| runs.join(run_dir::LATEST));
    let not_run = study
        .probes
        .iter()
        .filter(|p| manifest.unavailable(&p.image).is_some())
        .map(|p| p.id.clone());
    let estimates = latest
        .map(|l| plan::Estimates::from_run(&l))
        .unwrap_or_default()
        .not_run(not_run);
    eprintln!(
        "{}",
        plan::describe(study, &round, existing.len(), &estimates)
    );
    let watch = watch_host(state).await?;
    let failed = |s: &Sample| !s.valid && !s.is_unavailable();
    let mut m = Measuring {
        invalid: existing.iter().filter(|s| failed(s)).count(),
        engine,
        study,
        manifest,
        guests,
        dir,
        cancel,
        seccomp,
        log: SampleLog::open(&log_path)?,
        estimates,
        bar: progress(round.len()),
        started: Instant::now(),
        watch,
        samples: existing,
        measured: 0,
        probe_ms: 0.0,
    };
    state.status = Status::Running;
    dir.save_state(state)?;
    let interrupted = loop {
        if round.is_empty() {
            round = rounds::next(study, &m.samples);
            if round.is_empty() {
                break false;
            }
            m.announce(&round);
        }
        if !m.cells(state, &round).await? {
            break true;
        }
        round.clear();
    };
    m.bar.finish_and_clear();
    let status = if interrupted {
        Status::Incomplete
    } else {
        Status::Complete
    };
    let wall_ms = stopped(dir, state, (m.started, &m.watch), status)?;
    Ok(RunResult {
        dir: dir.clone(),
        state: state.clone(),
        measured: m.measured,
        invalid: m.invalid,
        interrupted,
        wall_ms,
        probe_ms: m.probe_ms,
    })
}

/// The measuring loop of one invocation: what it runs with and what it has measured so far.
struct Measuring<'a, E> {
    engine: &'a E,
    study: &'a Study,
    manifest: &'a Manifest,
    /// The guest kernels and initramfs of probes that run in a VM.
    guests: &'a Guests,
    dir: &'a RunDir,
    cancel: &'a CancellationToken,
    /// The JSON of the study's seccomp profile, if any.
    seccomp: Option<String>,
    log: SampleLog,
    estimates: plan::Estimates,
    bar: ProgressBar,
    started: Instant,
    /// The host's CPU times at the start, for the steal warning when this invocation stops.
    watch: Watch,
    /// Every sample of the run: those found in `samples.jsonl`, then those measured now.
    samples: Vec<Sample>,
    measured: usize,
    invalid: usize,
    probe_ms: f64,
}

impl<E: Containers> Measuring<'_, E> {
    /// Runs `cells` in order, appending each sample as measured; false when interrupted. An Engine
    /// error or a sample that cannot be written stops the run (incomplete, resumable).
    async fn cells(&mut self, state: &mut RunState, cells: &[Cell]) -> Result<bool> {
        let study = self.study;
        for (i, cell) in cells.iter().enumerate() {
            let probe = &study.probes[cell.probe];
            self.bar.set_message(format!(
                "{}  {} × {} tasks, repeat {}",
                self.estimates.eta(study, &cells[i..]),
                probe.id,
                cell.tasks,
                cell.repeat
            ));
            let seccomp = self.seccomp.as_deref();
            let measured = measure(
                self.engine,
                (study, self.manifest, self.guests),
                state,
                cell,
                seccomp,
                self.cancel,
            )
            .await;
            let sample = match measured {
                Ok(Some(sample)) => sample,
                Ok(None) => return Ok(false),
                Err(e) => return Err(self.halt(state, e, cell)),
            };
            if let Err(e) = self.log.append(&sample) {
                self.bar.finish_and_clear();
                // The measurement is not lost: it goes to the terminal as the line it should have been.
                eprintln!(
                    "this sample could not be written to samples.jsonl:\n{}",
                    serde_json::to_string(&sample).unwrap_or_default()
                );
                return Err(self.halt(state, e, cell));
            }
            self.estimates.finished(&sample);
            self.measured += 1;
            self.probe_ms += sample.timings.probe_ms.unwrap_or(0.0);
            self.invalid += usize::from(!sample.valid && !sample.is_unavailable());
            let eta = self.estimates.eta(study, &cells[i + 1..]);
            report_line(&self.bar, &sample, &eta);
            self.bar.inc(1);
            self.samples.push(sample);
        }
        Ok(true)
    }

    /// Stops the run at `cell` after `error`: the bar is cleared and the run marked incomplete.
    fn halt(&self, state: &mut RunState, error: anyhow::Error, cell: &Cell) -> anyhow::Error {
        self.bar.finish_and_clear();
        let probe = &self.study.probes[cell.probe].id;
        stop(
            self.dir,
            state,
            (self.started, &self.watch),
            error,
            cell,
            probe,
        )
    }

    /// Says why a round of processes on demand runs, and counts it in the progress bar.
    fn announce(&self, round: &[Cell]) {
        let cells: Vec<String> = round
            .iter()
            .map(|c| format!("{} × {}", self.study.probes[c.probe].id, c.tasks))
            .collect();
        self.bar.inc_length(round.len() as u64);
        let line = match round.len() {
            1 => format!(
                "1 cell is above the target CV and gets one more process: {}",
                cells[0]
            ),
            n => format!(
                "{n} cells are above the target CV and get one more process each: {}",
                cells.join(", ")
            ),
        };
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }
}

/// The samples already in `samples.jsonl`; a malformed line stops the run before anything runs.
fn read_samples(log_path: &std::path::Path) -> Result<Vec<Sample>> {
    if !log_path.exists() {
        return Ok(Vec::new());
    }
    let (existing, bad) = sample::read_all(log_path)?;
    if let Some(b) = bad.first() {
        bail!(
            "{} line {} is malformed ({}); fix or remove that line, then resume",
            log_path.display(),
            b.line,
            b.error
        );
    }
    Ok(existing)
}

/// The cells of the plan that have no sample yet, in plan order.
fn missing_cells(study: &Study, existing: &[Sample]) -> Vec<Cell> {
    let done: BTreeSet<_> = existing.iter().map(Sample::cell).collect();
    plan::matrix(study)
        .into_iter()
        .filter(|c| !done.contains(&(study.probes[c.probe].id.clone(), c.tasks, c.repeat)))
        .collect()
}

/// Takes the host's validity warnings before measuring into `state` (one already recorded, by an
/// earlier invocation of this run, is not repeated) and returns the watch for this invocation's steal.
async fn watch_host(state: &mut RunState) -> Result<Watch> {
    let cpus = cpuset::parse(&state.cpus_pinned)?;
    // It sleeps while it samples the pinned CPUs.
    let (seen, watch) = tokio::task::spawn_blocking(move || warning::at_start(&cpus))
        .await
        .context("reading the host for validity warnings")?;
    for w in seen {
        if !state.warnings.contains(&w) {
            state.warnings.push(w);
        }
    }
    Ok(watch)
}

/// Records in run.json that this invocation, started at `began`, stopped with `status`, with its
/// steal warning if any; returns its wall time, ms.
fn stopped(
    dir: &RunDir,
    state: &mut RunState,
    began: (Instant, &Watch),
    status: Status,
) -> Result<f64> {
    let wall_ms = began.0.elapsed().as_secs_f64() * 1000.0;
    state.wall_ms += wall_ms;
    state.warnings.extend(began.1.steal());
    state.status = status;
    state.finished_at = Some(now());
    dir.save_state(state)?;
    Ok(wall_ms)
}

/// Marks the run incomplete after an Engine error and says where the samples so far are.
fn stop(
    dir: &RunDir,
    state: &mut RunState,
    began: (Instant, &Watch),
    error: anyhow::Error,
    cell: &Cell,
    probe: &str,
) -> anyhow::Error {
    if let Err(e) = stopped(dir, state, began, Status::Incomplete) {
        eprintln!("warning: {e:#}");
    }
    error.context(format!(
        "measuring {probe} × {} tasks, repeat {}: the run stopped; every sample so far is kept in {}; \
         fix the Engine, then run `parkbench run --resume {}`",
        cell.tasks,
        cell.repeat,
        dir.file(run_dir::SAMPLES).display(),
        dir.path().display()
    ))
}

/// The study's seccomp profile, from the run folder's copy (the bytes the run started with); `None`
/// when the study names none (the Engine's default profile).
pub fn seccomp_of(study: &Study, dir: &RunDir) -> Result<Option<crate::run::seccomp::Profile>> {
    let Some(file) = &study.protocol.seccomp else {
        return Ok(None);
    };
    let path = dir.file(run_dir::SECCOMP);
    let bytes = std::fs::read(&path).with_context(|| {
        format!(
            "reading {}, the run's copy of the seccomp profile {file:?}: a run of this study \
             keeps it there; start a new run",
            path.display()
        )
    })?;
    crate::run::seccomp::Profile::parse(file, &bytes)
        .map(Some)
        .with_context(|| format!("in {}", path.display()))
}

/// Runs one process in a fresh container (with `seccomp`, the JSON of the study's profile, if
/// any), or in a VM when the probe runs under a guest kernel; `None` when interrupted (the
/// container is gone, no sample).
pub async fn measure(
    engine: &impl Containers,
    (study, manifest, guests): (&Study, &Manifest, &Guests),
    state: &RunState,
    cell: &Cell,
    seccomp: Option<&str>,
    cancel: &CancellationToken,
) -> Result<Option<Sample>> {
    let probe = &study.probes[cell.probe];
    if let Some(why) = unavailable_reason(manifest, &probe.image) {
        let mut s = blank(study, state, cell, now());
        s.error = Some(format!("{}{why}", sample::UNAVAILABLE));
        return Ok(Some(s));
    }
    let image = manifest.get(&probe.image).with_context(|| {
        format!(
            "probe {:?} names image {:?}, which was not built",
            probe.id, probe.image
        )
    })?;
    let p = &study.protocol;
    let words = match placeholders(probe, state, cell.tasks) {
        Ok(words) => words,
        Err(why) => {
            let mut s = blank(study, state, cell, now());
            s.error = Some(why);
            return Ok(Some(s));
        }
    };
    // In a VM the probe sees vCPUs 0.., QEMU is pinned to the host CPUs.
    let (words, host_cpus) = match &probe.kernel {
        Some(_) => guest_words(words),
        None => (words, Vec::new()),
    };
    let args = probe.expand_args(&words);
    let env = probe.expand_env(&words);
    let mut cmd: Vec<String> = vec!["/usr/local/bin/sampler".into()];
    cmd.extend(sampler_args(probe, p, &cpuset::format(&words.cpus)));
    cmd.push(probe.program.clone());
    cmd.extend(args.iter().cloned());
    let labels = BTreeMap::from([
        ("parkbench.run".to_string(), state.run_id.clone()),
        ("parkbench.study".to_string(), study.id.clone()),
        ("parkbench.probe".to_string(), probe.id.clone()),
        ("parkbench.tasks".to_string(), cell.tasks.to_string()),
        ("parkbench.repeat".to_string(), cell.repeat.to_string()),
    ]);
    // The sampler enforces the study's timeout itself; this margin covers a sampler that cannot.
    let timeout = Duration::from_secs(p.timeout_s + 30);
    let (spec, accel) = match &probe.kernel {
        None => {
            let spec = ContainerSpec {
                image: image.tag.clone(),
                cmd,
                env: env.clone(),
                labels,
                timeout,
                seccomp: seccomp.map(str::to_owned),
                mounts: Vec::new(),
                devices: Vec::new(),
            };
            (spec, None)
        }
        Some(kernel) => {
            let (spec, accel) = guest::cell_spec(
                guests,
                kernel,
                &probe.image,
                &cmd,
                &env,
                &host_cpus,
                probe.thp.as_deref(),
                timeout,
                labels,
            )
            .with_context(|| {
                format!(
                    "kernel {kernel} or the initramfs of {} was not prepared",
                    probe.image
                )
            })?;
            if let Some(len) = guest::too_long(&spec) {
                let mut s = blank(study, state, cell, now());
                s.error = Some(format!(
                    "the guest's kernel command line would be {len} bytes, more than the {} the \
                     kernel keeps: shorten the probe's args or env",
                    guest::COMMAND_LINE_MAX
                ));
                return Ok(Some(s));
            }
            if accel == crate::study::kernel::Accel::Tcg && probe.kind.measure().measures_time() {
                let mut s = blank(study, state, cell, now());
                s.error = Some(format!(
                    "not timed under TCG: kernel {kernel} runs in QEMU's emulated CPU here (no \
                     working KVM), so times mean nothing; memory kinds are measured"
                ));
                return Ok(Some(s));
            }
            (spec, Some((kernel.clone(), accel)))
        }
    };
    let started_at = now();
    let outcome = engine.run(&spec, cancel).await?;
    if outcome.interrupted {
        return Ok(None);
    }
    let mut s = blank(study, state, cell, started_at);
    s.image_tag = image.tag.clone();
    s.image_id = image.id.clone();
    s.stderr_tail = tail(&outcome.stderr, 4096);
    s.exit_code = outcome.exit_code;
    s.oom_killed = outcome.oom_killed;
    s.timings.container_ms = Some(outcome.elapsed.as_secs_f64() * 1000.0);
    let mut error = fill(&mut s, &outcome);
    if let Some((kernel, accel)) = accel {
        error = guest_outcome(&mut s, &outcome, kernel, accel, error);
    }
    kind::judge_validity(&mut s, error.as_deref(), &probe.results);
    Ok(Some(s))
}

/// A guest cell's placeholder words in vCPU numbers (the probe's CPUs first, then its other
/// CPUs), and the host CPUs QEMU is pinned to, in the same order.
fn guest_words(words: Placeholders) -> (Placeholders, Vec<usize>) {
    let mut host: Vec<usize> = words.cpus.clone();
    host.extend(words.other_cpus.iter().filter(|c| !words.cpus.contains(c)));
    let index = |c: &usize| host.iter().position(|h| h == c).unwrap_or(0);
    let guest = Placeholders {
        tasks: words.tasks,
        cpus: words.cpus.iter().map(index).collect(),
        other_cpus: words.other_cpus.iter().map(index).collect(),
    };
    (guest, host)
}

/// What the guest's console adds to a sample: the guest's record, an OOM kill inside the guest,
/// and, when the sampler printed nothing, the console's last lines as the reason.
fn guest_outcome(
    s: &mut Sample,
    outcome: &ContainerOutcome,
    kernel: String,
    accel: crate::study::kernel::Accel,
    error: Option<String>,
) -> Option<String> {
    let console = guest::Console::read(&outcome.stdout);
    let line = console.guest.clone();
    s.guest = Some(sample::GuestSample {
        kernel,
        release: line
            .as_ref()
            .map(|l| l.kernel_release.clone())
            .unwrap_or_default(),
        thp: line.as_ref().map(|l| l.thp.clone()).unwrap_or_default(),
        accel,
        vcpus: line.as_ref().map_or(0, |l| l.cpus),
        memory_kib: line.as_ref().map_or(0, |l| l.memory_kib),
    });
    // The sampler's stderr went to the console with everything else.
    s.stderr_tail = tail(&console.last_lines.join("\n"), 4096);
    // QEMU exits 0 when the guest powers off: the sampler's own status is what init printed.
    s.exit_code = match console.ended.as_deref().and_then(|e| e.split_once(' ')) {
        Some(("exit", code)) => code.parse().ok(),
        _ => None,
    };
    if let Some(e) = console.ended.as_deref().filter(|e| e.starts_with("signal")) {
        return Some(format!("the sampler in the guest ended by {e}"));
    }
    if console.ended.is_none() && error.is_none() {
        return Some(format!(
            "the guest's init never reported the sampler's end (a kernel panic?); the guest's \
             console: {}",
            console.tail(&outcome.stderr)
        ));
    }
    if console.oom {
        s.oom_killed = true;
        return Some(
            "out of memory in the guest (its OOM killer killed a process): raise \
             protocol.guest_memory_mib"
                .into(),
        );
    }
    match error {
        Some(e) if s.rss_bytes.is_empty() && s.peak.is_none() && s.results.is_empty() => {
            Some(format!(
                "{e}; the guest's console: {}",
                console.tail(&outcome.stderr)
            ))
        }
        other => other,
    }
}

/// Why an image is unavailable, down to the pin at the root (an image below an unavailable one
/// says only that its parent is): `image toolchain-dotnet: pin dotnet (toolchains/dotnet.yaml) …`.
fn unavailable_reason(manifest: &Manifest, image: &str) -> Option<String> {
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
pub fn placeholders(
    probe: &crate::study::Probe,
    state: &RunState,
    tasks: u64,
) -> Result<Placeholders, String> {
    let run_cpus = cpuset::parse(&state.cpus_pinned).map_err(|e| format!("{e:#}"))?;
    Placeholders::of(probe, tasks, &run_cpus)
}

/// A sample of this cell with nothing measured yet: invalid until the sampler's output says otherwise.
fn blank(study: &Study, state: &RunState, cell: &Cell, started_at: String) -> Sample {
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
        notes: Vec::new(),
        guest: None,
    }
}

/// The sampler's options for this probe's kind, protocol and CPU list, ending with the `--` before
/// the probe.
pub fn sampler_args(
    probe: &crate::study::Probe,
    p: &crate::study::Protocol,
    cpus: &str,
) -> Vec<String> {
    let mut args = probe.kind.measure().sampler_args(p, cpus);
    args.push("--".into());
    args
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
        None if outcome.timed_out => return Some("timed out; container killed".into()),
        None if outcome.oom_killed => return Some("OOM-killed".into()),
        None => {
            return Some(format!(
                "the sampler printed no JSON (exit code {:?})",
                outcome.exit_code
            ));
        }
    };
    let unusable = kind::fill_from_sampler(s, &out);
    if outcome.timed_out {
        return Some("timed out; container killed".into());
    }
    out.error.clone().or(unusable)
}

fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

fn progress(todo: usize) -> ProgressBar {
    let bar = ProgressBar::new(todo as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} processes, {msg}")
            .expect("valid template"),
    );
    bar
}

/// One line per finished process; without a terminal it also carries the ETA of the rest.
fn report_line(bar: &ProgressBar, s: &Sample, eta: &str) {
    let line = format!(
        "{} tasks={} repeat={} {} {}",
        s.probe,
        s.tasks,
        s.repeat,
        s.kind.measure().progress(s),
        match s.error.as_deref() {
            None => "valid".to_string(),
            Some(e) if s.is_unavailable() => format!("NOT MEASURED: {e}"),
            Some(e) => format!("INVALID: {e}"),
        }
    );
    if bar.is_hidden() {
        eprintln!("{line}  [{eta}]")
    } else {
        bar.println(line)
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A fresh run state.
pub fn new_state(run_id: &str, study: &Study, cpus: &[usize], deviations: Vec<String>) -> RunState {
    RunState {
        run_id: run_id.to_string(),
        study: study.id.clone(),
        status: Status::Running,
        cpus_requested: study.protocol.cpus.clone(),
        cpus_pinned: cpuset::format(cpus),
        workers: cpus.len() as u32,
        deviations,
        started_at: now(),
        finished_at: None,
        wall_ms: 0.0,
        rerun_of: None,
        repeats: Some(study.protocol.repeats),
        warnings: Vec::new(),
        kernels: study.protocol.kernels.clone(),
        guests: Vec::new(),
    }
}

mod rounds;

#[cfg(test)]
mod loop_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_alternates_probes_between_repeats() {
        let study = Study::default_study();
        let cells = plan::matrix(&study);
        assert_eq!(cells.len(), 24);
        let first: Vec<_> = cells.iter().take(6).map(|c| (c.probe, c.repeat)).collect();
        assert_eq!(first, vec![(0, 1), (1, 1), (1, 2), (0, 2), (0, 3), (1, 3)]);
        assert!(
            cells
                .iter()
                .enumerate()
                .all(|(i, c)| c.position as usize == i)
        );
    }

    #[test]
    fn plan_runs_each_probe_at_its_own_scales() {
        let mut study = Study::default_study();
        study.probes[1].scales = Some(vec![1, 10_000]);
        let cells = plan::matrix(&study);
        let of = |p: usize| -> Vec<u64> {
            let mut t: Vec<u64> = cells
                .iter()
                .filter(|c| c.probe == p)
                .map(|c| c.tasks)
                .collect();
            t.dedup();
            t
        };
        assert_eq!(of(0), study.protocol.scales);
        assert_eq!(of(1), vec![10_000, 1]);
        assert_eq!(cells.len(), 3 * (4 + 2));
        assert!(
            cells
                .iter()
                .enumerate()
                .all(|(i, c)| c.position as usize == i)
        );
    }

    #[test]
    fn cpus_are_refused_auto_or_listed() {
        let err = choose_cpus("0-3", &[0, 1], &CpuChoice::Study)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--cpus auto"), "{err}");
        let (cpus, dev) = choose_cpus("0-3", &[0, 1], &CpuChoice::Auto).unwrap();
        assert_eq!(cpus, vec![0, 1]);
        assert_eq!(dev.len(), 1);
        let (cpus, dev) = choose_cpus("0-1", &[0, 1, 2], &CpuChoice::Study).unwrap();
        assert_eq!((cpus, dev.len()), (vec![0, 1], 0));
        assert!(choose_cpus("0-3", &[0, 1], &CpuChoice::List("5".into())).is_err());
    }
}
