//! Processes on demand: the precision each cell reached, against the study's target.

use serde::{Deserialize, Serialize};

use super::{Cell, Headline};
use crate::study::repeats::Repeats;

/// The precision one cell reached under processes on demand (`protocol.repeats: {min, max,
/// target_cv}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    /// Probe identifier.
    pub probe: String,
    /// Task count of the scale.
    pub tasks: u64,
    /// The statistic judged: `rss_median_bytes` (steady), `peak_bytes` (peak), or the kind's least
    /// precise statistic (largest CV); empty without a valid process.
    pub stat: String,
    /// Processes the cell ran, valid or not.
    pub processes: usize,
    /// Valid processes with a value of `stat`.
    pub valid: usize,
    /// Standard deviation ÷ mean of those values (the population form of every CV in the report),
    /// a fraction; `None` with fewer than 2 of them.
    pub cv: Option<f64>,
    /// The CV the cell should be under, a fraction.
    pub target_cv: f64,
    /// Most processes the cell could get.
    pub max: u32,
    /// True when `cv` is at or under `target_cv`.
    pub met: bool,
}

/// Every cell's precision when `rule` is adaptive, from what processes on demand judged in each
/// (`judged`, in cell order); empty for a fixed count.
pub(super) fn of(rule: &Repeats, cells: &[Cell], judged: &[Option<Headline>]) -> Vec<Precision> {
    let Some(target_cv) = rule.target_cv else {
        return Vec::new();
    };
    cells
        .iter()
        .zip(judged)
        .map(|(c, headline)| {
            let values = headline.as_ref().map_or(&[][..], |h| &h.values[..]);
            // The same CV as the precision rule's: none until two values agree or differ.
            let cv = crate::stats::cv(values).filter(|_| values.len() >= 2);
            Precision {
                probe: c.probe.clone(),
                tasks: c.tasks,
                stat: headline.as_ref().map_or(String::new(), |h| h.name.clone()),
                processes: c.valid + c.invalid,
                valid: values.len(),
                cv,
                target_cv,
                max: rule.max,
                met: cv.is_some_and(|v| v <= target_cv),
            }
        })
        .collect()
}
