//! Statistics of a run, computed from the raw samples only, so they can be recomputed at any time.
//!
//! Only valid samples count. Each process's median RSS is recomputed from its readings (`rss_bytes`);
//! the stored `rss_median_bytes` is only compared against it. A median of an even count is the mean of
//! the two middle values.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::stats::{cv, median};
use crate::study::Study;
use crate::study::kind::{self, Fields, Kind};
use crate::study::sample::Sample;

mod cell;
mod dropped;
mod headline;
pub mod outlier;
mod precision;

pub use dropped::DroppedBatches;
pub use headline::Headline;
pub use precision::Precision;

/// Statistics of one run (`summary.json`). Memory is in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Study identifier.
    pub study: String,
    /// Processes the study plans per probe and scale (`protocol.repeats`, its `min` when processes
    /// come on demand).
    pub repeats: u32,
    /// Samples read, whatever their state.
    pub samples: usize,
    /// Samples counted in the statistics.
    pub valid: usize,
    /// Samples not counted because they are invalid; each is listed in `invalid_samples`.
    pub invalid: usize,
    /// Of the invalid samples, those never measured because the probe's toolchain is unavailable
    /// here (`not measured`, not a failed process).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_measured: usize,
    /// Samples whose probe or task count is not in the study; not counted, listed in `notes`.
    pub outside: usize,
    /// One cell per scale and probe that runs it: scales in study order (`protocol.scales`, then
    /// the probes' own), probes in study order within a scale.
    pub cells: Vec<Cell>,
    /// Per probe, over every scale: medians of the probe's metrics (for scale-free metrics).
    pub probes: Vec<ProbeSummary>,
    /// (1 − a / b) × 100 for every ordered pair of probes at each scale, from unrounded medians.
    pub ratios: Vec<Ratio>,
    /// Every sample not counted because it is invalid, with the reason.
    pub invalid_samples: Vec<InvalidSample>,
    /// Anomalies in the samples: duplicates, samples outside the study, stored medians that differ.
    pub notes: Vec<String>,
    /// Processes on demand only (`protocol.repeats: {min, max, target_cv}`): per cell, in cell
    /// order, the processes it ran and the CV its headline values reached. Empty for a fixed count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precision: Vec<Precision>,
}

/// One probe at one scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Probe identifier.
    pub probe: String,
    /// Task count of the scale.
    pub tasks: u64,
    /// Valid processes, counted below.
    pub valid: usize,
    /// Invalid processes, not counted.
    pub invalid: usize,
    /// Each valid process, by repeat.
    pub processes: Vec<Process>,
    /// The runs that measured it (hosts, shards or reruns joined into one run), each with its
    /// planned processes; written only when more than one.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub sources: usize,
    /// Median of the process medians, bytes; `None` without a valid process.
    pub rss_median_bytes: Option<f64>,
    /// Smallest process median, bytes.
    pub rss_min_bytes: Option<f64>,
    /// Largest process median, bytes.
    pub rss_max_bytes: Option<f64>,
    /// Coefficient of variation of the process medians: population standard deviation ÷ mean,
    /// a fraction (0.01 = 1 %).
    pub rss_cv: Option<f64>,
    /// Steady: median over processes of (process median − baseline), divided by tasks, bytes per
    /// task; processes without a baseline are left out. Peak: (median peak at this scale − median
    /// peak at the smallest scale) ÷ (tasks − the smallest scale's tasks); `None` at the smallest scale.
    pub per_task_bytes: Option<f64>,
    /// Medians of the probe's metrics over the valid processes that report them, by name.
    pub metrics: BTreeMap<String, Metric>,
    /// The kind of measurement of the probe.
    #[serde(default, skip_serializing_if = "Kind::is_steady")]
    pub kind: Kind,
    /// The kind's per-process values and their spread, by name (peak: `peak_bytes`, `vm_hwm_bytes`,
    /// `wall_ms`…; timed and reported: each result key; latency: `p50_ns`, `p99_ns`, `p99.9_ns`…).
    /// Empty for steady, whose statistics are the fields above. A timed cell's `cv` of a key is its
    /// precision across processes, judged against `protocol.target_cv`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stats: BTreeMap<String, Spread>,
    /// The programs' `note` lines in this cell (valid and invalid processes), each distinct text
    /// once, in order of first appearance, with how many processes printed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_notes: Vec<NoteCount>,
    /// Timed kind: the batches dropped by `protocol.drop_batches` and the CV had they been kept;
    /// absent when no process of the cell recorded what disturbed its batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_batches: Option<DroppedBatches>,
    /// Valid processes far from the cell's others (see `outlier`): named in the reports, still
    /// counted in every statistic. Left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outliers: Vec<outlier::Outlier>,
}

/// One distinct `note` text of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoteCount {
    /// The note, verbatim.
    pub text: String,
    /// Processes of the cell that printed it.
    pub processes: usize,
}

/// One value per valid process and its spread: bytes, ms or ns as the value's name says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// One value per valid process that has it, in repeat order.
    pub values: Vec<f64>,
    /// Median of `values`.
    pub median: f64,
    /// Smallest of `values`.
    pub min: f64,
    /// Largest of `values`.
    pub max: f64,
    /// Population standard deviation ÷ mean, a fraction; `None` when the mean is 0.
    pub cv: Option<f64>,
}

impl Spread {
    /// The spread of some values; `None` when there are none.
    pub fn of(values: Vec<f64>) -> Option<Self> {
        Some(Spread {
            median: median(&values)?,
            min: values.iter().copied().reduce(f64::min)?,
            max: values.iter().copied().reduce(f64::max)?,
            cv: cv(&values),
            values,
        })
    }
}

/// One valid process of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    /// Repeat number, 1-based.
    pub repeat: u32,
    /// Position in the run order, 0-based.
    pub position: u32,
    /// Median of the process's RSS readings, recomputed from `rss_bytes`, bytes (steady kind).
    pub rss_median_bytes: Option<f64>,
    /// RSS before any task was created, bytes.
    pub baseline_rss_bytes: Option<u64>,
    /// (rss_median_bytes − baseline_rss_bytes) / tasks, bytes per task.
    pub per_task_bytes: Option<f64>,
    /// Timed, latency and reported kinds: the `result` lines (batches) the process printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<usize>,
    /// Timed kind: of `batches`, those dropped by `protocol.drop_batches` (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<usize>,
    /// Timed kind, per result key: the bootstrap 95 % interval [low, high] of the median of the
    /// process's kept batches (see `bootstrap`: 2000 resamples, seeded from the sample, so the same
    /// samples.jsonl gives the same intervals).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intervals: BTreeMap<String, [f64; 2]>,
}

/// The median of one metric and how many processes reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Median of the metric, in the metric's own unit (bytes for `*_bytes` and sizes).
    pub median: f64,
    /// Valid processes that reported the metric.
    pub count: usize,
}

/// A probe over every scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    /// Probe identifier.
    pub probe: String,
    /// Valid processes of the probe, all scales.
    pub valid: usize,
    /// Medians of the probe's metrics over every valid process that reports them, by name.
    pub metrics: BTreeMap<String, Metric>,
}

/// How much lower one probe's median RSS is than another's at one scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// Task count of the scale.
    pub tasks: u64,
    /// The probe said to be lower.
    pub probe: String,
    /// The probe compared against.
    pub than: String,
    /// Median RSS of `probe` ÷ median RSS of `than`, a plain ratio.
    pub ratio: f64,
    /// (1 − ratio) × 100, percent; negative when `probe` is higher.
    pub lower_by_percent: f64,
}

/// A sample left out of the statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvalidSample {
    /// Probe identifier.
    pub probe: String,
    /// Task count.
    pub tasks: u64,
    /// Repeat number, 1-based.
    pub repeat: u32,
    /// Why it was left out.
    pub error: String,
    /// The last lines of its stderr that say something (the sample's `stderr_tail`), at most
    /// three: the program's own words on why it failed. Left out when it printed nothing there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<String>,
    /// Killed by the OOM killer or by a signal; left out when it was not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub killed: bool,
}

/// Computes every statistic of a run from its raw samples.
pub fn summarize(study: &Study, samples: &[Sample]) -> Summary {
    let mut notes = duplicate_notes(samples);
    let (counted, outside) = split_outside(study, samples, &mut notes);
    let invalid_samples: Vec<InvalidSample> = counted
        .iter()
        .filter_map(|s| invalid_sample(study, s))
        .collect();
    let valid: Vec<&Sample> = counted
        .iter()
        .copied()
        .filter(|s| invalid_sample(study, s).is_none())
        .collect();
    notes.extend(valid.iter().filter_map(|s| cell::stored_median_note(s)));
    let mut cells = Vec::new();
    let mut judged = Vec::new();
    for tasks in study.all_scales() {
        for probe in study.probes.iter().filter(|p| study.runs(&p.id, tasks)) {
            let of_cell = |s: &&Sample| s.probe == probe.id && s.tasks == tasks;
            let cell_valid: Vec<&Sample> = valid.iter().copied().filter(of_cell).collect();
            let all: Vec<&Sample> = counted.iter().copied().filter(of_cell).collect();
            let invalid = all.len() - cell_valid.len();
            let mut c = cell::cell(probe, tasks, &cell_valid, invalid);
            c.probe_notes = cell::note_counts(&all);
            let runs: BTreeSet<(&str, Option<&str>)> = all
                .iter()
                .map(|s| (s.run_id.as_str(), s.host.as_deref()))
                .collect();
            c.sources = runs.len().max(1);
            cells.push(c);
            judged.push(Headline::judged(probe.kind, &cell_valid));
        }
    }
    cell::per_task_growth(study, &mut cells);
    let probes = study
        .probes
        .iter()
        .map(|p| cell::probe_summary(&p.id, &valid))
        .collect();
    Summary {
        study: study.id.clone(),
        repeats: study.protocol.repeats.min,
        precision: precision::of(&study.protocol.repeats, &cells, &judged),
        samples: samples.len(),
        valid: valid.len(),
        invalid: invalid_samples.len(),
        not_measured: counted.iter().filter(|s| s.is_unavailable()).count(),
        outside,
        ratios: ratios(&cells),
        cells,
        probes,
        invalid_samples,
        notes,
    }
}

/// A cell's memory for figures: the median, the largest process, and each process's value, bytes.
pub struct Memory {
    /// Median over processes, bytes.
    pub median: f64,
    /// Largest process, bytes.
    pub max: f64,
    /// (repeat, bytes) of each valid process.
    pub each: Vec<(u32, f64)>,
}

impl Cell {
    /// The kind's memory figure ([`kind::Measure::memory`]). Steady: RSS with every task parked;
    /// peak: the peak. `None` for a kind without one or without data.
    pub fn memory(&self) -> Option<Memory> {
        let kind = self.kind.measure();
        let figure = kind.memory()?;
        match kind.fields() {
            Fields::Rss => {
                let each = self
                    .processes
                    .iter()
                    .filter_map(|p| Some((p.repeat, p.rss_median_bytes?)))
                    .collect();
                Some(Memory {
                    median: self.rss_median_bytes?,
                    max: self.rss_max_bytes?,
                    each,
                })
            }
            Fields::Stats => {
                let s = self.stats.get(figure.name)?;
                let repeats = self.processes.iter().map(|p| p.repeat);
                Some(Memory {
                    median: s.median,
                    max: s.max,
                    each: repeats.zip(s.values.iter().copied()).collect(),
                })
            }
        }
    }
}

impl Cell {
    /// Steady kind: the median of the valid processes' baseline RSS, bytes; `None` without one.
    pub fn baseline_median_bytes(&self) -> Option<f64> {
        let baselines: Vec<f64> = self
            .processes
            .iter()
            .filter_map(|p| Some(p.baseline_rss_bytes? as f64))
            .collect();
        median(&baselines)
    }

    /// A kind that flags its CV (timed, latency): the keys (result keys, percentiles) whose CV
    /// across processes exceeds `target` (a fraction), with that CV. Empty for other kinds or
    /// without a target.
    pub fn above_target_cv(&self, target: Option<f64>) -> Vec<(&str, f64)> {
        let precise = self.kind.measure().flags_target_cv();
        let Some(target) = target.filter(|_| precise) else {
            return Vec::new();
        };
        self.stats
            .iter()
            .filter_map(|(k, s)| Some((k.as_str(), s.cv?)))
            .filter(|(_, cv)| *cv > target)
            .collect()
    }
}

impl Summary {
    /// The cell of a probe at a scale, if the study has it.
    pub fn cell(&self, probe: &str, tasks: u64) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.probe == probe && c.tasks == tasks)
    }

    /// The processes a cell was to have: the planned count for each run that measured it (hosts,
    /// shards or reruns joined into one), or as many as it ran when processes came on demand.
    pub fn processes_of(&self, cell: &Cell) -> usize {
        let planned = self.repeats as usize * cell.sources.max(1);
        match self.precision.is_empty() {
            true => planned,
            false => planned.max(cell.valid + cell.invalid),
        }
    }

    /// The all-scale summary of a probe, if the study has it.
    pub fn probe(&self, probe: &str) -> Option<&ProbeSummary> {
        self.probes.iter().find(|p| p.probe == probe)
    }

    /// How much lower `probe` is than `than` at a scale, if both have a median there.
    pub fn ratio(&self, probe: &str, than: &str, tasks: u64) -> Option<&Ratio> {
        self.ratios
            .iter()
            .find(|r| r.probe == probe && r.than == than && r.tasks == tasks)
    }
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Why a sample is left out ([`kind::left_out`]); `None` when it counts.
fn invalid_sample(study: &Study, s: &Sample) -> Option<InvalidSample> {
    let keys = study
        .probe(&s.probe)
        .map(|p| p.results.as_slice())
        .unwrap_or_default();
    Some(InvalidSample {
        probe: s.probe.clone(),
        tasks: s.tasks,
        repeat: s.repeat,
        error: kind::left_out(s, keys)?,
        stderr: s.stderr_last_lines(),
        killed: s.killed(),
    })
}

/// Samples inside the study, and how many were outside it (each noted).
fn split_outside<'a>(
    study: &Study,
    samples: &'a [Sample],
    notes: &mut Vec<String>,
) -> (Vec<&'a Sample>, usize) {
    let mut inside = Vec::new();
    for s in samples {
        if study.runs(&s.probe, s.tasks) {
            inside.push(s);
        } else {
            notes.push(format!(
                "sample of probe {} at {} tasks, repeat {} is not in the study; not counted",
                s.probe, s.tasks, s.repeat
            ));
        }
    }
    let outside = samples.len() - inside.len();
    (inside, outside)
}

fn duplicate_notes(samples: &[Sample]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut notes = Vec::new();
    for s in samples {
        if !seen.insert(s.cell()) {
            notes.push(format!(
                "more than one sample of {} at {} tasks, repeat {}; each is counted",
                s.probe, s.tasks, s.repeat
            ));
        }
    }
    notes.dedup();
    notes
}

fn ratios(cells: &[Cell]) -> Vec<Ratio> {
    let mut out = Vec::new();
    for a in cells {
        for b in cells
            .iter()
            .filter(|b| b.tasks == a.tasks && b.probe != a.probe)
        {
            let (Some(ma), Some(mb)) = (a.rss_median_bytes, b.rss_median_bytes) else {
                continue;
            };
            if mb == 0.0 {
                continue;
            }
            out.push(Ratio {
                tasks: a.tasks,
                probe: a.probe.clone(),
                than: b.probe.clone(),
                ratio: ma / mb,
                lower_by_percent: (1.0 - ma / mb) * 100.0,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests;
