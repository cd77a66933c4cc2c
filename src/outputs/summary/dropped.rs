//! A timed cell's dropped batches: how many of its valid processes' batches were dropped, and why
//! ([`crate::study::kind::batches`]), and the CV across processes of each value had they been
//! kept, beside the cell's own CV (the value without them, which the verdicts use). Both CVs are
//! over the same processes: the cell's valid ones (dropping batches never makes one invalid).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::cv;
use crate::study::kind::batches;
use crate::study::sample::Sample;

/// The dropped batches of one cell (`dropped_batches` of a cell); only for a cell with at least
/// one process whose sampler read what disturbed its batches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DroppedBatches {
    /// Batches (`result` lines) of the cell's valid processes.
    pub batches: usize,
    /// Of them, those dropped.
    pub dropped: usize,
    /// Dropped batches by reason (`steal`, `run-queue wait`, `involuntary switches`).
    pub by_reason: BTreeMap<String, usize>,
    /// Per value, the CV across processes of each process's median over all its batches, the
    /// dropped ones included: a fraction. The cell's `stats` hold the CV without them.
    pub cv_with_dropped: BTreeMap<String, f64>,
    /// The valid processes more than half of whose batches were disturbed past the rule, so that
    /// none of theirs was dropped: per process, `repeat R: N of M batches disturbed (steal/wait):
    /// not dropped, the process is judged on all of them`. Such a process stays valid. Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_dropped: Vec<String>,
}

/// The dropped batches of a cell's valid processes; `None` when none of them has counters.
pub fn of(valid: &[&Sample]) -> Option<DroppedBatches> {
    if valid.iter().all(|s| s.batches.is_empty()) {
        return None;
    }
    let mut by_reason: BTreeMap<String, usize> = BTreeMap::new();
    let mut all: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut not_dropped = Vec::new();
    for s in valid {
        if let Some(w) = batches::kept_disturbed(s) {
            not_dropped.push(format!("repeat {}: {w}", s.repeat));
        }
        for why in batches::dropped(s).into_iter().flatten() {
            *by_reason.entry(why.name().to_string()).or_default() += 1;
        }
        for (k, v) in batches::medians(&s.results) {
            all.entry(k).or_default().push(v);
        }
    }
    Some(DroppedBatches {
        batches: valid.iter().map(|s| s.results.len()).sum(),
        dropped: by_reason.values().sum(),
        by_reason,
        cv_with_dropped: all
            .into_iter()
            .filter_map(|(k, v)| Some((k, cv(&v)?)))
            .collect(),
        not_dropped,
    })
}
