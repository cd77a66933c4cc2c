//! Statistics of a run, computed from the raw samples only, so they can be recomputed at any time.
//!
//! Only valid samples count. Each process's median RSS is recomputed from its readings (`rss_bytes`);
//! the stored `rss_median_bytes` is only compared against it. A median of an even count is the mean of
//! the two middle values.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::stats::{cv, median};

use crate::study::Study;
use crate::study::kind::Kind;
use crate::study::sample::Sample;

mod headline;
mod precision;

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
    /// Timed kind, per result key: the bootstrap 95 % interval [low, high] of the median of the
    /// process's batches (see `bootstrap`: 2000 resamples, seeded from the sample, so the same
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
}

/// Computes every statistic of a run from its raw samples.
pub fn summarize(study: &Study, samples: &[Sample]) -> Summary {
    let mut notes = duplicate_notes(samples);
    let (counted, outside) = split_outside(study, samples, &mut notes);
    let invalid_samples: Vec<InvalidSample> = counted
        .iter()
        .filter_map(|s| invalid_reason(study, s))
        .collect();
    let valid: Vec<&Sample> = counted
        .iter()
        .copied()
        .filter(|s| invalid_reason(study, s).is_none())
        .collect();
    notes.extend(valid.iter().filter_map(|s| stored_median_note(s)));
    let mut cells = Vec::new();
    for tasks in study.all_scales() {
        for probe in study.probes.iter().filter(|p| study.runs(&p.id, tasks)) {
            let of_cell = |s: &&Sample| s.probe == probe.id && s.tasks == tasks;
            let cell_valid: Vec<&Sample> = valid.iter().copied().filter(of_cell).collect();
            let all: Vec<&Sample> = counted.iter().copied().filter(of_cell).collect();
            let invalid = all.len() - cell_valid.len();
            let mut c = cell(probe, tasks, &cell_valid, invalid);
            c.probe_notes = note_counts(&all);
            cells.push(c);
        }
    }
    peak_per_task(study, &mut cells);
    let probes = study
        .probes
        .iter()
        .map(|p| probe_summary(&p.id, &valid))
        .collect();
    Summary {
        study: study.id.clone(),
        repeats: study.protocol.repeats.min,
        precision: precision::of(&study.protocol.repeats, &cells),
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
    /// The memory figure of a memory kind. Steady: RSS with every task parked; peak: `ru_maxrss`.
    /// `None` for other kinds or without data.
    pub fn memory(&self) -> Option<Memory> {
        match self.kind {
            Kind::Steady => {
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
            Kind::Peak => {
                let s = self.stats.get("peak_bytes")?;
                let repeats = self.processes.iter().map(|p| p.repeat);
                Some(Memory {
                    median: s.median,
                    max: s.max,
                    each: repeats.zip(s.values.iter().copied()).collect(),
                })
            }
            Kind::Timed | Kind::Latency | Kind::Reported => None,
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

    /// Timed and latency kinds: the keys (result keys, percentiles) whose CV across processes
    /// exceeds `target` (a fraction), with that CV. Empty for other kinds or without a target.
    pub fn above_target_cv(&self, target: Option<f64>) -> Vec<(&str, f64)> {
        let precise = matches!(self.kind, Kind::Timed | Kind::Latency);
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

    /// The processes a cell was to have: the planned count, or as many as it ran when processes
    /// came on demand.
    pub fn processes_of(&self, cell: &Cell) -> usize {
        let planned = self.repeats as usize;
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

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Median of a process's RSS readings, bytes.
fn process_median(s: &Sample) -> Option<f64> {
    median(&s.rss_bytes.iter().map(|&b| b as f64).collect::<Vec<_>>())
}

/// Why a sample is left out; `None` when it counts. A sample marked valid is checked again by its
/// kind (a hand-edited log must not slip an empty sample in).
fn invalid_reason(study: &Study, s: &Sample) -> Option<InvalidSample> {
    let keys = study
        .probe(&s.probe)
        .map(|p| p.results.as_slice())
        .unwrap_or_default();
    let error = if !s.valid {
        s.error
            .clone()
            .unwrap_or_else(|| "marked invalid, no reason recorded".into())
    } else if s.kind == Kind::Steady && s.rss_bytes.is_empty() {
        "marked valid but has no RSS readings".into()
    } else if let Some(why) = s.kind.measure().invalid(s, keys) {
        format!("marked valid, but {why}")
    } else {
        return None;
    };
    Some(InvalidSample {
        probe: s.probe.clone(),
        tasks: s.tasks,
        repeat: s.repeat,
        error,
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

fn stored_median_note(s: &Sample) -> Option<String> {
    let recomputed = process_median(s)?;
    let stored = s.rss_median_bytes? as f64;
    ((stored - recomputed).abs() > 1.0).then(|| {
        format!(
            "{} at {} tasks, repeat {}: stored rss_median_bytes {stored} differs from the median of \
             its readings {recomputed}; the recomputed value is used",
            s.probe, s.tasks, s.repeat
        )
    })
}

fn process(s: &Sample) -> Process {
    let rss = process_median(s);
    let per_task = rss
        .zip(s.baseline_rss_bytes)
        .map(|(rss, b)| (rss - b as f64) / s.tasks as f64);
    let has_results = matches!(s.kind, Kind::Timed | Kind::Latency | Kind::Reported);
    Process {
        repeat: s.repeat,
        position: s.position,
        rss_median_bytes: rss,
        baseline_rss_bytes: s.baseline_rss_bytes,
        per_task_bytes: per_task,
        batches: has_results.then_some(s.results.len()),
        intervals: if s.kind == Kind::Timed {
            intervals(s)
        } else {
            BTreeMap::new()
        },
    }
}

/// Per result key, the bootstrap 95 % interval of the median of the process's batches.
fn intervals(s: &Sample) -> BTreeMap<String, [f64; 2]> {
    let mut by_key: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (k, &v) in s.results.iter().flatten() {
        by_key.entry(k).or_default().push(v);
    }
    by_key
        .into_iter()
        .filter_map(|(k, v)| {
            let i = crate::stats::bootstrap::median_interval(&v, s.bootstrap_seed())?;
            Some((k.to_string(), i))
        })
        .collect()
}

/// Each distinct note of these processes once, in order of first appearance, with how many
/// processes printed it.
fn note_counts(samples: &[&Sample]) -> Vec<NoteCount> {
    let mut out: Vec<NoteCount> = Vec::new();
    for s in samples {
        let mut seen = BTreeSet::new();
        for text in s.notes.iter().filter(|n| seen.insert(*n)) {
            match out.iter_mut().find(|n| &n.text == text) {
                Some(n) => n.processes += 1,
                None => out.push(NoteCount {
                    text: text.clone(),
                    processes: 1,
                }),
            }
        }
    }
    out
}

fn cell(probe: &crate::study::Probe, tasks: u64, valid: &[&Sample], invalid: usize) -> Cell {
    let mut valid = valid.to_vec();
    valid.sort_by_key(|s| (s.repeat, s.position));
    let processes: Vec<Process> = valid.iter().map(|s| process(s)).collect();
    let medians: Vec<f64> = processes
        .iter()
        .filter_map(|p| p.rss_median_bytes)
        .collect();
    let above_baseline: Vec<f64> = processes
        .iter()
        .filter_map(|p| Some(p.rss_median_bytes? - p.baseline_rss_bytes? as f64))
        .collect();
    Cell {
        probe: probe.id.clone(),
        tasks,
        valid: processes.len(),
        invalid,
        rss_median_bytes: median(&medians),
        rss_min_bytes: medians.iter().copied().reduce(f64::min),
        rss_max_bytes: medians.iter().copied().reduce(f64::max),
        rss_cv: cv(&medians),
        per_task_bytes: median(&above_baseline).map(|d| d / tasks as f64),
        metrics: metric_medians(&valid),
        kind: probe.kind,
        stats: kind_stats(probe.kind, &valid),
        processes,
        probe_notes: Vec::new(),
    }
}

/// The spread of each of the kind's per-process values.
fn kind_stats(kind: Kind, valid: &[&Sample]) -> BTreeMap<String, Spread> {
    let mut by_name: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for s in valid {
        for (name, v) in kind.measure().values(s) {
            by_name.entry(name).or_default().push(v);
        }
    }
    by_name
        .into_iter()
        .filter_map(|(name, v)| Some((name, Spread::of(v)?)))
        .collect()
}

/// Peak kind: per task = (median peak at N − median peak at the smallest scale) ÷ (N − that N).
fn peak_per_task(study: &Study, cells: &mut [Cell]) {
    for probe in study.probes.iter().filter(|p| p.kind == Kind::Peak) {
        let Some(&smallest) = study.scales_of(probe).iter().min() else {
            continue;
        };
        let peak = |c: &Cell| c.stats.get("peak_bytes").map(|s| s.median);
        let base = cells
            .iter()
            .find(|c| c.probe == probe.id && c.tasks == smallest)
            .and_then(peak);
        for c in cells.iter_mut().filter(|c| c.probe == probe.id) {
            c.per_task_bytes = match (peak(c), base) {
                (Some(p), Some(b)) if c.tasks > smallest => {
                    Some((p - b) / (c.tasks - smallest) as f64)
                }
                _ => None,
            };
        }
    }
}

fn probe_summary(probe: &str, valid: &[&Sample]) -> ProbeSummary {
    let of_probe: Vec<&Sample> = valid.iter().copied().filter(|s| s.probe == probe).collect();
    ProbeSummary {
        probe: probe.to_owned(),
        valid: of_probe.len(),
        metrics: metric_medians(&of_probe),
    }
}

fn metric_medians(samples: &[&Sample]) -> BTreeMap<String, Metric> {
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for s in samples {
        for (name, &v) in &s.metrics {
            values.entry(name.clone()).or_default().push(v);
        }
    }
    values
        .into_iter()
        .filter_map(|(name, v)| {
            Some((
                name,
                Metric {
                    median: median(&v)?,
                    count: v.len(),
                },
            ))
        })
        .collect()
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
mod tests {
    use super::*;
    use crate::outputs::report::fixture;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn cv_is_population() {
        // mean 4, population variance ((2² + 0 + 2²) / 3) = 8/3.
        let got = cv(&[2.0, 4.0, 6.0]).unwrap();
        assert!((got - (8.0f64 / 3.0).sqrt() / 4.0).abs() < 1e-12);
        assert_eq!(cv(&[5.0]), Some(0.0));
        assert_eq!(cv(&[]), None);
        assert_eq!(cv(&[0.0, 0.0]), None);
    }

    #[test]
    fn cell_statistics_from_fixtures() {
        let s = fixture::summary();
        assert_eq!((s.samples, s.valid, s.invalid, s.outside), (24, 23, 1, 0));
        let go = s.cell("go", 1_000_000).unwrap();
        assert_eq!((go.valid, go.invalid), (2, 1));
        let m: Vec<f64> = go
            .processes
            .iter()
            .filter_map(|p| p.rss_median_bytes)
            .collect();
        // Even count: the mean of both process medians.
        assert_eq!(go.rss_median_bytes, Some((m[0] + m[1]) / 2.0));
        assert_eq!(go.rss_min_bytes, Some(m[0].min(m[1])));
        let per_task: Vec<f64> = go
            .processes
            .iter()
            .map(|p| (p.rss_median_bytes.unwrap() - p.baseline_rss_bytes.unwrap() as f64) / 1e6)
            .collect();
        let expected = (per_task[0] + per_task[1]) / 2.0;
        assert!((go.per_task_bytes.unwrap() - expected).abs() < 1e-9);
        assert_eq!(
            go.metrics["goroutines"],
            Metric {
                median: 1_000_001.0,
                count: 2
            }
        );
        assert_eq!(s.invalid_samples[0].repeat, 2);
        assert!(s.notes.is_empty(), "{:?}", s.notes);
    }

    #[test]
    fn recomputes_median_from_readings() {
        let mut samples = fixture::samples();
        samples[0].rss_bytes = vec![10, 40, 20, 30];
        samples[0].baseline_rss_bytes = Some(0);
        let s = summarize(&fixture::study(), &samples);
        let p = &s
            .cell(&samples[0].probe, samples[0].tasks)
            .unwrap()
            .processes[0];
        assert_eq!(p.rss_median_bytes, Some(25.0));
        assert_eq!(s.notes.len(), 1, "the stored median differs: {:?}", s.notes);
    }

    #[test]
    fn empty_cells_and_outside_samples() {
        let mut samples = fixture::samples();
        samples.retain(|s| s.tasks != 10_000);
        samples[0].tasks = 42;
        samples[1].rss_bytes.clear();
        let s = summarize(&fixture::study(), &samples);
        let empty = s.cell("rust-tokio", 10_000).unwrap();
        assert_eq!(
            (empty.valid, empty.rss_median_bytes, empty.rss_cv),
            (0, None, None)
        );
        assert!(s.ratio("rust-tokio", "go", 10_000).is_none());
        assert_eq!(s.outside, 1);
        assert!(
            s.invalid_samples
                .iter()
                .any(|i| i.error.contains("no RSS readings"))
        );
    }

    fn timed(probe: &str, tasks: u64, repeat: u32, batches: &[f64], notes: &[&str]) -> Sample {
        let mut s = fixture::samples()[0].clone();
        (s.probe, s.tasks, s.expected, s.repeat, s.kind) =
            (probe.into(), tasks, tasks, repeat, Kind::Timed);
        s.peak = Some(crate::study::sample::Peak {
            ru_maxrss_bytes: Some(1),
            exit_code: Some(0),
            ..Default::default()
        });
        s.results = batches
            .iter()
            .map(|&v| BTreeMap::from([("ns".to_string(), v)]))
            .collect();
        s.notes = notes.iter().map(|n| n.to_string()).collect();
        s
    }

    const TIMED: &str = "id: t\ntitle: t\nsource: {article: a, environment: e, cpus: '0'}\n\
        protocol: {scales: [10, 100], repeats: 2, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5, target_cv: 0.05}\n\
        probes:\n  - {id: sw, image: x, kind: timed, scales: [1]}\n  - {id: st, image: y}\n";

    #[test]
    fn timed_cells_have_intervals_batches_and_notes_at_their_own_scales() {
        let study = Study::parse(TIMED).unwrap();
        let samples = vec![
            timed(
                "sw",
                1,
                1,
                &[10.0, 11.0, 10.5, 10.2],
                &["pinned", "pinned", "warm"],
            ),
            timed("sw", 1, 2, &[20.0, 21.0, 20.5], &["pinned"]),
            timed("sw", 10, 1, &[1.0], &[]),
        ];
        let s = summarize(&study, &samples);
        assert_eq!(s.outside, 1, "sw does not run 10 tasks");
        let scales: Vec<(&str, u64)> = s
            .cells
            .iter()
            .map(|c| (c.probe.as_str(), c.tasks))
            .collect();
        assert_eq!(scales, [("st", 10), ("st", 100), ("sw", 1)]);
        let c = s.cell("sw", 1).unwrap();
        assert_eq!(c.processes[0].batches, Some(4));
        let i = c.processes[0].intervals["ns"];
        assert!(i[0] >= 10.0 && i[1] <= 11.0 && i[0] <= i[1], "{i:?}");
        let again = summarize(&study, &samples);
        assert_eq!(
            again.cell("sw", 1).unwrap().processes,
            c.processes,
            "reproducible"
        );
        assert_eq!(
            c.probe_notes,
            [
                NoteCount {
                    text: "pinned".into(),
                    processes: 2
                },
                NoteCount {
                    text: "warm".into(),
                    processes: 1
                },
            ]
        );
        // Medians 10.35 and 20.5: far apart, CV about 33 % > 5 %.
        let flagged = c.above_target_cv(study.protocol.target_cv);
        assert_eq!(flagged.len(), 1);
        assert!((flagged[0].1 - c.stats["ns"].cv.unwrap()).abs() < 1e-12);
        assert!(c.above_target_cv(None).is_empty());
    }

    #[test]
    fn processes_on_demand_judge_a_timed_cells_least_precise_statistic() {
        let study = Study::parse(TIMED).unwrap();
        let with_allocs = |repeat: u32, ns: f64| {
            let mut s = timed("sw", 1, repeat, &[ns], &[]);
            s.results[0].insert("allocs".into(), 7.0);
            s
        };
        let s = summarize(&study, &[with_allocs(1, 10.0), with_allocs(2, 20.0)]);
        let c = s.cell("sw", 1).unwrap();
        assert_eq!(Headline::of(c).unwrap().name, "allocs", "first by name");
        let judged = Headline::judged(c).unwrap();
        assert_eq!(
            judged.name, "ns",
            "the constant count does not stand for the cell"
        );
        assert_eq!(judged.values.len(), 2);
    }

    #[test]
    fn latency_percentiles_far_apart_are_flagged_against_the_target() {
        let study = Study::parse(&TIMED.replace("kind: timed", "kind: latency")).unwrap();
        let latency = |repeat: u32, ns: u64| {
            let mut s = timed("sw", 1, repeat, &[], &[]);
            s.kind = Kind::Latency;
            s.results.clear();
            s.latency_ns = vec![[ns, 10]];
            s
        };
        let s = summarize(&study, &[latency(1, 1000), latency(2, 3000)]);
        let c = s.cell("sw", 1).unwrap();
        let flagged: Vec<&str> = c
            .above_target_cv(study.protocol.target_cv)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert!(flagged.contains(&"p50_ns"), "{flagged:?}");
        let same = summarize(&study, &[latency(1, 1000), latency(2, 1000)]);
        assert!(
            same.cell("sw", 1)
                .unwrap()
                .above_target_cv(study.protocol.target_cv)
                .is_empty()
        );
    }

    #[test]
    fn ratios_for_every_ordered_pair() {
        let s = fixture::summary();
        assert_eq!(s.ratios.len(), 2 * 4);
        let r = s.ratio("rust-tokio", "go", 1_000_000).unwrap();
        let (a, b) = (
            s.cell("rust-tokio", 1_000_000)
                .unwrap()
                .rss_median_bytes
                .unwrap(),
            s.cell("go", 1_000_000).unwrap().rss_median_bytes.unwrap(),
        );
        assert_eq!(r.lower_by_percent, (1.0 - a / b) * 100.0);
        assert!(
            s.ratio("go", "rust-tokio", 1_000_000)
                .unwrap()
                .lower_by_percent
                < 0.0
        );
        assert_eq!(
            s.probe("rust-tokio").unwrap().metrics["future_size_64b"].count,
            12
        );
    }
}
