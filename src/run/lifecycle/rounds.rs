//! Processes on demand (`protocol.repeats: {min, max, target_cv}`): after the planned matrix, rounds
//! of one more process for every cell whose process values still spread more than the target.

use std::collections::BTreeMap;

use crate::outputs::summary::{self, Headline};
use crate::run::plan::Cell;
use crate::study::sample::Sample;
use crate::study::{Order, Study};

/// The next round: one more process for every cell the study's rule says needs one
/// ([`crate::study::repeats::Repeats::wants_more`] on the cell's headline values and its sample count,
/// valid or not), as repeat n + 1 of that cell. Per scale, by repeat, probes in the listed order —
/// reversed on even repeats when the order alternates, as in the plan; positions follow the
/// samples'. Empty when no cell needs more (always, for a fixed count).
pub fn next(study: &Study, samples: &[Sample]) -> Vec<Cell> {
    let rule = study.protocol.repeats;
    if !rule.is_adaptive() {
        return Vec::new();
    }
    let summary = summary::summarize(study, samples);
    let mut last_repeat: BTreeMap<(&str, u64), u32> = BTreeMap::new();
    for s in samples {
        let r = last_repeat.entry((s.probe.as_str(), s.tasks)).or_default();
        *r = (*r).max(s.repeat);
    }
    let scales = study.all_scales();
    let mut wanted: Vec<Cell> = Vec::new();
    for c in &summary.cells {
        let values = Headline::judged(c).map(|h| h.values).unwrap_or_default();
        if !rule.wants_more(c.valid + c.invalid, &values) {
            continue;
        }
        let Some(probe) = study.probes.iter().position(|p| p.id == c.probe) else {
            continue;
        };
        let last = last_repeat.get(&(c.probe.as_str(), c.tasks)).copied();
        wanted.push(Cell {
            probe,
            tasks: c.tasks,
            repeat: last.unwrap_or(0).max(rule.min) + 1,
            position: 0,
        });
    }
    let reversed =
        |repeat: u32| study.protocol.order == Order::Alternate && repeat.is_multiple_of(2);
    wanted.sort_by_key(|c| {
        let scale = scales.iter().position(|&t| t == c.tasks);
        let listed = match reversed(c.repeat) {
            true => study.probes.len() - c.probe,
            false => c.probe,
        };
        (scale, c.repeat, listed)
    });
    let first = samples.iter().map(|s| s.position + 1).max().unwrap_or(0);
    for (c, position) in wanted.iter_mut().zip(first..) {
        c.position = position;
    }
    wanted
}
