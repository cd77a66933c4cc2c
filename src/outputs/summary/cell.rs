//! One cell's statistics from its valid samples, each process's own, and the per-task value across
//! scales; the kind of the probe says what a process records ([`crate::study::kind::Measure`]).

use std::collections::{BTreeMap, BTreeSet};

use super::{Cell, Metric, NoteCount, ProbeSummary, Process, Spread};
use crate::stats::{cv, median};
use crate::study::kind::{Kind, batches};
use crate::study::sample::Sample;
use crate::study::{Probe, Study};

/// The note of a sample whose stored `rss_median_bytes` differs from the median of its readings.
pub(super) fn stored_median_note(s: &Sample) -> Option<String> {
    let recomputed = s.rss_median()?;
    let stored = s.rss_median_bytes? as f64;
    ((stored - recomputed).abs() > 1.0).then(|| {
        format!(
            "{} at {} tasks, repeat {}: stored rss_median_bytes {stored} differs from the median of \
             its readings {recomputed}; the recomputed value is used",
            s.probe, s.tasks, s.repeat
        )
    })
}

/// The cell of `probe` at `tasks` from its valid samples; `invalid` counts the others.
pub(super) fn cell(probe: &Probe, tasks: u64, valid: &[&Sample], invalid: usize) -> Cell {
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
        sources: 1,
        probe_notes: Vec::new(),
        dropped_batches: super::dropped::of(&valid),
        outliers: super::outlier::of_cell(&valid),
    }
}

fn process(s: &Sample) -> Process {
    let kind = s.kind.measure();
    let rss = s.rss_median();
    let per_task = rss
        .zip(s.baseline_rss_bytes)
        .map(|(rss, b)| (rss - b as f64) / s.tasks as f64);
    Process {
        repeat: s.repeat,
        position: s.position,
        rss_median_bytes: rss,
        baseline_rss_bytes: s.baseline_rss_bytes,
        per_task_bytes: per_task,
        batches: kind.prints_results().then_some(s.results.len()),
        dropped: Some(batches::dropped(s).iter().flatten().count()).filter(|&n| n > 0),
        intervals: if kind.bootstrap_intervals() {
            intervals(s)
        } else {
            BTreeMap::new()
        },
    }
}

/// Per result key, the bootstrap 95 % interval of the median of the process's kept batches.
fn intervals(s: &Sample) -> BTreeMap<String, [f64; 2]> {
    let mut by_key: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (k, &v) in batches::kept(s).into_iter().flatten() {
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
pub(super) fn note_counts(samples: &[&Sample]) -> Vec<NoteCount> {
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

/// For a kind whose per task comes from growth across scales (peak): per task = (median value at
/// N − median value at the probe's smallest scale) ÷ (N − that N); `None` at the smallest scale.
pub(super) fn per_task_growth(study: &Study, cells: &mut [Cell]) {
    for probe in &study.probes {
        let Some(name) = probe.kind.measure().per_task_growth() else {
            continue;
        };
        let Some(&smallest) = study.scales_of(probe).iter().min() else {
            continue;
        };
        let value = |c: &Cell| c.stats.get(name).map(|s| s.median);
        let base = cells
            .iter()
            .find(|c| c.probe == probe.id && c.tasks == smallest)
            .and_then(value);
        for c in cells.iter_mut().filter(|c| c.probe == probe.id) {
            c.per_task_bytes = match (value(c), base) {
                (Some(v), Some(b)) if c.tasks > smallest => {
                    Some((v - b) / (c.tasks - smallest) as f64)
                }
                _ => None,
            };
        }
    }
}

pub(super) fn probe_summary(probe: &str, valid: &[&Sample]) -> ProbeSummary {
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
