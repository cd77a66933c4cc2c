//! Kinds of measurement: how a probe process is driven and sampled, what its sample holds, which
//! statistics its cells have, how the report lays them out and which of them claims may name. A
//! study says the kind per probe; the run, the summary, the report and the verdicts ask the kind's
//! [`Measure`], never match on it: so do `new probe` (its [`Scaffold`]) and the figures (its
//! [`FigureStyle`]). A new kind is one type that implements [`Measure`] (a file beside
//! `steady.rs`), its variant in [`Kind`] (`study::sample`), and its line in [`Kind::ALL`] and in
//! [`Kind::measure`], the only matches on a kind's variants.
//!
//! - `steady`: the probe speaks the handshake protocol (`docker/README.md`); RSS is read after every
//!   task is parked.
//! - `peak`: any program, unmodified; the sampler polls `/proc/<pid>/status` and records `ru_maxrss`
//!   from `wait4` at exit.
//! - `timed`: the program prints `result key=value…` lines from its own loop (e.g. `ns_per_op=…`).
//! - `latency`: the program prints its latency histogram as `latency value_ns=… count=…` lines;
//!   percentiles are recomputed from it.
//! - `reported`: the program prints `result key=value…` lines with values it computes itself that
//!   do not depend on time (sizes, counts, limits); zero is a value. The sampler runs it as `timed`.
//!
//! Every kind keeps the program's `note <text>` lines (`Sample::notes`).
//!
//! This module sits above the sample record (`study::sample`), which only names its kind.

use std::collections::BTreeMap;

use crate::study::protocol::{Isolation, Protocol};
use crate::study::sample::{Sample, SamplerOutput};
use crate::study::stat::Stat;

pub mod batches;
mod peak;
mod results;
mod steady;

pub use crate::study::sample::Kind;
pub use results::{PERCENTILES, percentile_name};

impl Kind {
    /// Every kind, in the order lists of kinds show them: the one list (`new probe --kind`'s
    /// choices, its errors and the tests derive from it).
    pub const ALL: [Kind; 5] = [
        Kind::Steady,
        Kind::Peak,
        Kind::Timed,
        Kind::Latency,
        Kind::Reported,
    ];

    /// How a process of this kind is isolated under `p`: the study's choice, else the kind's own.
    pub fn isolation(self, p: &Protocol) -> Isolation {
        p.isolation.unwrap_or_else(|| self.measure().isolation())
    }

    /// The kind that runs any program unmodified to its end: what stands in for a program that
    /// does not say what it is measured for.
    pub const ANY_PROGRAM: Kind = Kind::Peak;

    /// The kind's implementation: the one place that maps a name to it.
    pub fn measure(self) -> &'static dyn Measure {
        match self {
            Kind::Steady => &steady::Steady,
            Kind::Peak => &peak::PeakKind,
            Kind::Timed => &results::Timed,
            Kind::Latency => &results::Latency,
            Kind::Reported => &results::Reported,
        }
    }

    /// The kind as written in study files.
    pub fn name(self) -> &'static str {
        self.measure().name()
    }

    /// The kind named `word` as study files write it.
    pub fn from_name(word: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == word)
    }

    /// Every kind's name, for messages: `steady, peak, timed, latency or reported`.
    pub fn listed() -> String {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        let (last, init) = names.split_last().expect("a kind");
        format!("{} or {last}", init.join(", "))
    }
}

/// Where a cell of a kind keeps its statistics, and so which table the report shows them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields {
    /// The cell's RSS fields: median, min, max and CV of the process medians, per task, metrics.
    Rss,
    /// The cell's `stats`: the spread of each value the kind records per process, by name.
    Stats,
}

/// A kind's memory figure: what the figure plots for its cells and what processes on demand judge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryFigure {
    /// The per-process value, in bytes: `rss_median_bytes` (steady), `peak_bytes` (peak).
    pub name: &'static str,
    /// The statistic a claim names for its median over processes (`rss_median`, `peak_median`).
    pub stat: Stat,
    /// What the figure's dots and bars are, one line under its title.
    pub caption: &'static str,
}

/// Which figure draws a kind's cells, in the study's terms; the figures (`outputs::figure`) draw
/// each style with its own design and never ask which kind it was.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FigureStyle {
    /// Memory by scale, a panel per scale and a column per probe: what it plots.
    Memory(MemoryFigure),
    /// Per result key, each process's median with its bootstrap interval, a row per probe.
    Intervals,
    /// The latency percentiles (`PERCENTILES`) per probe on a logarithmic axis.
    Percentiles,
    /// Per family of units, the values the programs report as labelled bars.
    Bars,
}

/// What `parkbench new probe` writes for a kind: which parts of the language templates make its
/// program, and the program's entry in a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scaffold {
    /// The word of the template parts (`@kind WORD`) that write its program: the kind's own name,
    /// or that of a kind whose program already prints what this kind reads.
    pub program: &'static str,
    /// The program's `args` in the study's entry (`["{tasks}"]`).
    pub args: &'static str,
    /// The entry's `scales`, for a program that runs at one scale only (`[1]`); `None`: the
    /// study's.
    pub scales: Option<&'static str>,
}

/// What processes on demand judge for a cell: a statistic and its value per valid process.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The statistic's name (`rss_median_bytes`, `peak_bytes`, a result key, `p99_ns`…).
    pub name: String,
    /// One value per valid process that has it, in repeat order.
    pub values: Vec<f64>,
}

/// One way of measuring a process.
pub trait Measure: Sync {
    /// The kind's name.
    fn name(&self) -> &'static str;
    /// The sampler's options for this kind, up to (not including) the `--` before the probe.
    fn sampler_args(&self, p: &Protocol, cpus: &str) -> Vec<String>;
    /// Fills the kind's fields of a sample; returns what makes the output unusable, if anything.
    fn fill(&self, s: &mut Sample, out: &SamplerOutput) -> Option<String>;
    /// Why a sample that ran to the end is still invalid; `keys` are the result keys the probe may
    /// report (empty: any).
    fn invalid(&self, s: &Sample, keys: &[String]) -> Option<String>;
    /// Why a sample marked valid does not count after all: a hand-edited log must not slip an
    /// empty sample into the statistics.
    fn recheck(&self, s: &Sample, keys: &[String]) -> Option<String> {
        let why = self.invalid(s, keys)?;
        Some(format!("marked valid, but {why}"))
    }
    /// The per-process values whose spread over processes each cell reports, by name, in base units
    /// (bytes, ms for times of the process, ns for results and latencies).
    fn values(&self, s: &Sample) -> BTreeMap<String, f64>;
    /// Where a cell keeps the kind's statistics.
    fn fields(&self) -> Fields {
        Fields::Stats
    }
    /// The statistics a claim may name for a probe of this kind.
    fn stats(&self) -> &'static [Stat];
    /// The figure that draws the kind's cells.
    fn figure(&self) -> FigureStyle;
    /// The kind's memory figure, which figures plot; `None` for a kind without one.
    fn memory(&self) -> Option<MemoryFigure> {
        match self.figure() {
            FigureStyle::Memory(m) => Some(m),
            _ => None,
        }
    }
    /// What `parkbench new probe` writes for the kind.
    ///
    /// By default the program is the kind's own template part and takes the scale (`["{tasks}"]`,
    /// at the study's scales); the templates' peak programs sleep 500 ms unless told, and a program
    /// of your own takes only what its entry gives it.
    fn scaffold(&self) -> Scaffold {
        Scaffold {
            program: self.name(),
            args: r#"["{tasks}"]"#,
            scales: None,
        }
    }
    /// The process's memory as the kind measures it, recomputed from its raw sample, bytes: for a
    /// program run unmodified, its peak ([`crate::study::sample::Peak::peak_bytes`]). The value of
    /// the memory figure for a kind with one.
    fn memory_bytes(&self, s: &Sample) -> Option<f64> {
        Some(s.peak.as_ref()?.peak_bytes()? as f64)
    }
    /// What processes on demand judge for a cell, from its valid processes: the memory figure of a
    /// memory kind, else the least precise of the kind's values (the largest CV across processes;
    /// fewer than 2 values count as least precise), so that a constant count cannot stand for a
    /// spread timing. `None` without any value.
    fn judged(&self, valid: &[&Sample]) -> Option<Judged> {
        let mut valid = valid.to_vec();
        valid.sort_by_key(|s| (s.repeat, s.position));
        if let Some(figure) = self.memory() {
            let values: Vec<f64> = valid.iter().filter_map(|s| self.memory_bytes(s)).collect();
            if !values.is_empty() {
                let name = figure.name.to_string();
                return Some(Judged { name, values });
            }
        }
        let mut by_name: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for s in &valid {
            for (name, v) in self.values(s) {
                by_name.entry(name).or_default().push(v);
            }
        }
        let cv = |values: &[f64]| {
            crate::stats::cv(values)
                .filter(|_| values.len() >= 2)
                .unwrap_or(f64::INFINITY)
        };
        let (name, values) = by_name
            .into_iter()
            .max_by(|a, b| cv(&a.1).total_cmp(&cv(&b.1)))?;
        Some(Judged { name, values })
    }
    /// The value whose growth from the probe's smallest scale gives a cell's per-task bytes (peak:
    /// `peak_bytes`); `None` when each process's own baseline gives it.
    fn per_task_growth(&self) -> Option<&'static str> {
        None
    }
    /// Whether the program prints `result` lines, counted per process as batches.
    fn prints_results(&self) -> bool {
        false
    }
    /// Whether each process gets the bootstrap interval of the median of its batches, listed after
    /// the kind's tables.
    fn bootstrap_intervals(&self) -> bool {
        false
    }
    /// Whether a cell's values are flagged when their CV across processes is above
    /// `protocol.target_cv`.
    fn flags_target_cv(&self) -> bool {
        false
    }
    /// Whether the kind's values are times, which an emulated CPU (a guest under TCG) makes
    /// meaningless.
    fn measures_time(&self) -> bool {
        false
    }
    /// Why a process that ran cleanly to its end (exit 0, the whole protocol) still does not count,
    /// by the protocol's own rule rather than by a fault: its reading does not stand for the cell
    /// on this machine (steady: some tasks ended before the last one was created). `None` for a
    /// reading that counts, or fails otherwise. A reference run may hold such a process.
    fn by_protocol(&self, _s: &Sample) -> Option<String> {
        None
    }
    /// The least time a process of this kind takes by the protocol alone, ms, whatever the program
    /// does (the steady kind's settle and readings); 0 when the protocol sets none.
    fn least_ms(&self, _p: &Protocol) -> f64 {
        0.0
    }
    /// How a process of this kind is kept apart from the one before when the study does not say
    /// (`protocol.isolation`): a fresh container, the articles' protocol for memory.
    fn isolation(&self) -> Isolation {
        Isolation::Container
    }
    /// The report's words above the kind's tables: what the values are and their units.
    fn legend(&self) -> &'static str;
    /// A short account of a measured process for progress lines.
    fn progress(&self, s: &Sample) -> String;
    /// How a process of this kind is measured, one sentence for the report's protocol section.
    fn describe(&self, p: &Protocol) -> String;
}

/// The measured part of a sample, filled from the sampler's output by the sample's kind; returns
/// what makes the output unusable, if anything.
pub fn fill_from_sampler(sample: &mut Sample, out: &SamplerOutput) -> Option<String> {
    sample.cpus_in_force = out.cpus_in_force.clone();
    sample.notes = out.notes.clone();
    sample.kind.measure().fill(sample, out)
}

/// Decides validity: the sampler ran to the end, exit 0, not OOM-killed, then the kind's own checks
/// (for steady: completed = expected and RSS readings). `result_keys` are the keys a timed or
/// latency probe may report (empty: any).
pub fn judge_validity(sample: &mut Sample, sampler_error: Option<&str>, result_keys: &[String]) {
    let reason = if let Some(e) = sampler_error {
        Some(e.to_string())
    } else if sample.oom_killed {
        Some("OOM-killed".to_string())
    } else if sample.exit_code != Some(0) {
        Some(format!("sampler exited with {:?}", sample.exit_code))
    } else {
        sample.kind.measure().invalid(sample, result_keys)
    };
    sample.valid = reason.is_none();
    sample.error = reason.map(|r| with_notes(r, &sample.notes));
}

/// True when the sample is invalid by its protocol's own rule alone ([`Measure::by_protocol`]): it
/// exited 0, unkilled, with no sampler error, and its recorded reason is the rule's.
pub fn invalid_by_protocol(sample: &Sample) -> bool {
    let rule = sample.kind.measure().by_protocol(sample);
    !sample.valid
        && sample.exit_code == Some(0)
        && !sample.oom_killed
        && rule.is_some_and(|r| sample.error.as_deref().is_some_and(|e| e.starts_with(&r)))
}

/// Why a sample is left out of a run's statistics; `None` when it counts. A sample marked valid is
/// checked again by its kind ([`Measure::recheck`]). `result_keys` as for [`judge_validity`].
pub fn left_out(sample: &Sample, result_keys: &[String]) -> Option<String> {
    if !sample.valid {
        let why = sample.error.as_deref();
        return Some(why.unwrap_or("marked invalid, no reason recorded").into());
    }
    sample.kind.measure().recheck(sample, result_keys)
}

/// Notes of the program shown after an invalid sample's reason.
const NOTES_IN_REASON: usize = 4;

/// `reason; note: …; note: …`: the program's own words after why its sample is invalid (the
/// first few; how many more there are).
pub fn with_notes(reason: String, notes: &[String]) -> String {
    let mut out = reason;
    for n in notes.iter().take(NOTES_IN_REASON) {
        out.push_str(&format!("; note: {n}"));
    }
    if notes.len() > NOTES_IN_REASON {
        out.push_str(&format!("; {} more notes", notes.len() - NOTES_IN_REASON));
    }
    out
}

/// `1.23 MiB`, or `-` without a value: sizes in progress lines.
fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("-".into(), |b| format!("{:.2} MiB", b as f64 / 1048576.0))
}

#[cfg(test)]
mod tests;
