//! The measuring loop of one invocation of a run: rounds of cells, each process measured where its
//! probe runs, each sample appended as it comes, the progress bar, and how the invocation stops.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use super::rounds;
use crate::engine::Containers;
use crate::files::is_disk_full;
use crate::images::Manifest;
use crate::run::guest::Guests;
use crate::run::plan::{self, Cell};
use crate::run::process::{self, Held, Setting, now};
use crate::run::run_dir::{self, RunDir, RunState, Status};
use crate::run::warning::{self, Watch};
use crate::study::Study;
use crate::study::cpuset;
use crate::study::sample::{self, Sample, SampleLog};

/// The measuring loop of one invocation: what it runs with and what it has measured so far.
pub(super) struct Measuring<'a, E> {
    pub engine: &'a E,
    pub cancel: &'a CancellationToken,
    pub study: &'a Study,
    pub manifest: &'a Manifest,
    /// The guest kernels and initramfs of probes that run in a VM.
    pub guests: &'a Guests,
    pub dir: &'a RunDir,
    /// The JSON of the study's seccomp profile, if any.
    pub seccomp: Option<String>,
    /// Create each next process's container while the one before is read and removed
    /// ([`process::measure_next`]); off, each is created just before it starts.
    pub create_ahead: bool,
    pub log: SampleLog,
    pub estimates: plan::Estimates,
    pub bar: ProgressBar,
    pub started: Instant,
    /// The host's CPU times at the start, for the steal warning when this invocation stops.
    pub watch: Watch,
    /// Every sample of the run: those found in `samples.jsonl`, then those measured now.
    pub samples: Vec<Sample>,
    pub measured: usize,
    pub invalid: usize,
    pub probe_ms: f64,
    /// This invocation's wall time, ms, once it stopped.
    pub wall_ms: f64,
}

impl<E: Containers> Measuring<'_, E> {
    /// Runs `round`, then rounds of processes on demand until none is wanted, and records in
    /// run.json how the invocation stopped; true when interrupted.
    pub async fn rounds(&mut self, state: &mut RunState, mut round: Vec<Cell>) -> Result<bool> {
        let interrupted = loop {
            if round.is_empty() {
                round = rounds::next(self.study, &self.samples);
                if round.is_empty() {
                    break false;
                }
                self.announce(&round);
            }
            if !self.cells(state, &round).await? {
                break true;
            }
            round.clear();
        };
        self.bar.finish_and_clear();
        let status = if interrupted {
            Status::Incomplete
        } else {
            Status::Complete
        };
        self.wall_ms = stopped(self.dir, state, (self.started, &self.watch), status)?;
        Ok(interrupted)
    }

    /// Runs `cells` in order, appending each sample as measured; false when interrupted. An Engine
    /// error or a sample that cannot be written stops the run (incomplete, resumable).
    async fn cells(&mut self, state: &mut RunState, cells: &[Cell]) -> Result<bool> {
        let study = self.study;
        // The next process's container, created (not started) between two processes, and the
        // containers kept up for cells isolated by process.
        let mut held = Held::new(self.create_ahead);
        for (i, cell) in cells.iter().enumerate() {
            let probe = &study.probes[cell.probe];
            self.bar.set_message(format!(
                "{}  {} × {} tasks, repeat {}",
                self.estimates.eta(study, &cells[i..]),
                probe.id,
                cell.tasks,
                cell.repeat
            ));
            let setting = Setting {
                study,
                manifest: self.manifest,
                guests: self.guests,
                state,
                seccomp: self.seccomp.as_deref(),
            };
            let rest = (cell, &cells[i + 1..]);
            let measured =
                process::measure_next(self.engine, &setting, rest, &mut held, self.cancel).await;
            let sample = match measured {
                Ok(Some(sample)) => sample,
                Ok(None) => {
                    held.clear().await;
                    return Ok(false);
                }
                Err(e) => {
                    held.clear().await;
                    return Err(self.halt(state, e, cell));
                }
            };
            if let Err(e) = self.log.append(&sample) {
                held.clear().await;
                self.bar.finish_and_clear();
                // The measurement is not lost: it goes to the terminal as the line it should have been.
                eprintln!(
                    "this sample could not be written to samples.jsonl:\n{}",
                    serde_json::to_string(&sample).unwrap_or_default()
                );
                return Err(self.halt(state, e, cell));
            }
            self.estimates.finished(&sample);
            self.estimates
                .elapsed(self.started.elapsed().as_secs_f64() * 1000.0);
            self.measured += 1;
            self.probe_ms += sample.timings.probe_ms.unwrap_or(0.0);
            self.invalid += usize::from(!sample.valid && !sample.is_unavailable());
            let eta = self.estimates.eta(study, &cells[i + 1..]);
            report_line(&self.bar, &sample, &eta);
            self.bar.inc(1);
            self.samples.push(sample);
        }
        held.clear().await;
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
pub(super) fn read_samples(log_path: &Path) -> Result<Vec<Sample>> {
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
pub(super) fn missing_cells(study: &Study, existing: &[Sample]) -> Vec<Cell> {
    let done: BTreeSet<_> = existing.iter().map(Sample::cell).collect();
    plan::matrix(study)
        .into_iter()
        .filter(|c| !done.contains(&(study.probes[c.probe].id.clone(), c.tasks, c.repeat)))
        .collect()
}

/// Takes the host's validity warnings before measuring into `state` (one already recorded, by an
/// earlier invocation of this run, is not repeated) and returns the watch for this invocation's steal.
pub(super) async fn watch_host(state: &mut RunState) -> Result<Watch> {
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
    let fix = match is_disk_full(&error) {
        true => "the disk is full: free space",
        false => "fix the Engine",
    };
    error.context(format!(
        "measuring {probe} × {} tasks, repeat {}: the run stopped; every sample so far is kept in {}; \
         {fix}, then run `{}`",
        cell.tasks,
        cell.repeat,
        dir.file(run_dir::SAMPLES).display(),
        run_dir::resume_command(dir.path(), state)
    ))
}

pub(super) fn progress(todo: usize) -> ProgressBar {
    let bar = ProgressBar::new(todo as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} processes, {msg}")
            .expect("valid template"),
    );
    bar
}

/// One line per finished process; without a terminal it also carries the ETA of the rest.
fn report_line(bar: &ProgressBar, s: &Sample, eta: &str) {
    let line = finished_line(s);
    if bar.is_hidden() {
        eprintln!("{line}  [{eta}]")
    } else {
        bar.println(line)
    }
}

/// What the progress line says of a finished process: its cell, its measure, and valid or why not
/// (with the last lines of its stderr, the program's own words, when it failed).
fn finished_line(s: &Sample) -> String {
    format!(
        "{} tasks={} repeat={} {} {}",
        s.probe,
        s.tasks,
        s.repeat,
        s.kind.measure().progress(s),
        match s.error.as_deref() {
            None => "valid".to_string(),
            Some(e) if s.is_unavailable() => format!("NOT MEASURED: {e}"),
            Some(e) => match s.stderr_line() {
                Some(said) => format!("INVALID: {e} — stderr: {}", crate::text::printable(&said)),
                None => format!("INVALID: {e}"),
            },
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_process_line_ends_with_its_last_stderr_lines() {
        let fixture = include_str!("../../../tests/fixtures/samples.jsonl");
        let (samples, _) = crate::study::sample::parse_lines(fixture.as_bytes()).unwrap();
        let mut s = samples.into_iter().find(|s| !s.valid).unwrap();
        s.stderr_tail = "Erlang/OTP 25\n\n** (SystemLimitError) a system limit has been reached\n\
                         \x1b[31m    (elixir) lib/task.ex:1: Task.async/1\n\n"
            .into();
        let line = finished_line(&s);
        assert!(line.contains("INVALID: container OOM-killed"), "{line}");
        let said = " — stderr: Erlang/OTP 25 ⏎ ** (SystemLimitError) a system limit has been \
                    reached ⏎ \\x1b[31m    (elixir) lib/task.ex:1: Task.async/1";
        assert!(
            line.ends_with(said),
            "the last three lines, escapes shown: {line:?}"
        );
        assert!(
            !line.contains('\x1b'),
            "no escape reaches the terminal: {line:?}"
        );
        s.stderr_tail = "\n  \n".into();
        assert!(
            !finished_line(&s).contains("stderr"),
            "nothing said, nothing shown"
        );
    }
}
