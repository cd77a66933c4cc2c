//! Processes on demand (`protocol.repeats: {min, max, target_cv}`): after the planned matrix, rounds
//! of one more process for every cell whose process values still spread more than the target.

use std::collections::BTreeMap;

use crate::run::plan::Cell;
use crate::study::kind;
use crate::study::sample::Sample;
use crate::study::{Order, Probe, Repeats, Study};

/// The next round: one more process for every cell the study's rule says needs one
/// ([`crate::study::repeats::Repeats::wants_more`] on the values its kind judges
/// ([`kind::Measure::judged`], as the summary's precision does) and its sample count, valid or
/// not), as repeat n + 1 of that cell. Per scale, by repeat, probes in the listed order — reversed
/// on even repeats when the order alternates, as in the plan; positions follow the samples'. Empty
/// when no cell needs more (always, for a fixed count).
pub fn next(study: &Study, samples: &[Sample]) -> Vec<Cell> {
    let rule = study.protocol.repeats;
    if !rule.is_adaptive() {
        return Vec::new();
    }
    let mut last_repeat: BTreeMap<(&str, u64), u32> = BTreeMap::new();
    for s in samples {
        let r = last_repeat.entry((s.probe.as_str(), s.tasks)).or_default();
        *r = (*r).max(s.repeat);
    }
    let scales = study.all_scales();
    let mut wanted: Vec<Cell> = Vec::new();
    for &tasks in &scales {
        for (probe, p) in study.probes.iter().enumerate() {
            if !study.runs(&p.id, tasks) || !wants_more(&rule, p, tasks, samples) {
                continue;
            }
            let last = last_repeat.get(&(p.id.as_str(), tasks)).copied();
            wanted.push(Cell {
                probe,
                tasks,
                repeat: last.unwrap_or(0).max(rule.min) + 1,
                position: 0,
            });
        }
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

/// Whether the cell of `probe` at `tasks` needs one more process: the rule on the values its kind
/// judges from the samples that count (as in the run's statistics) and on its sample count.
fn wants_more(rule: &Repeats, probe: &Probe, tasks: u64, samples: &[Sample]) -> bool {
    let of_cell: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.probe == probe.id && s.tasks == tasks)
        .collect();
    let valid: Vec<&Sample> = of_cell
        .iter()
        .copied()
        .filter(|s| kind::left_out(s, &probe.results).is_none())
        .collect();
    let judged = probe.kind.measure().judged(&valid);
    let values = judged.map(|j| j.values).unwrap_or_default();
    rule.wants_more(of_cell.len(), &values)
}
