//! Timed figures: one per result key (one unit each), a row per probe and scale; on each row a dot
//! per process at its median with its bootstrap 95 % interval as a whisker, a tall tick at the
//! median over processes, and a diamond at each published value, named in the right column.

use std::collections::BTreeSet;

use super::draw::{Scale, probe_color, unit_of};
use super::rows::{Chart, Mark, Row, draw};
use super::{Design, Figure, Input, cells_drawn_as, drawn_as, published};
use crate::outputs::number::grouped;
use crate::outputs::summary::Cell;
use crate::study::Stat;
use crate::study::kind::FigureStyle;

pub fn figures(input: &Input) -> Vec<Figure> {
    let cells = cells_drawn_as(input, FigureStyle::Intervals);
    let keys: BTreeSet<&str> = input
        .study
        .probes
        .iter()
        .filter(|p| drawn_as(p.kind, FigureStyle::Intervals))
        .flat_map(|p| p.results.iter().map(String::as_str))
        .chain(
            cells
                .iter()
                .flat_map(|c| c.stats.keys().map(String::as_str)),
        )
        .chain(claimed(input, FigureStyle::Intervals))
        .collect();
    keys.into_iter()
        .filter_map(|key| figure(input, &cells, key))
        .collect()
}

/// Rows of `cells` for `key`, labelled by probe, and by scale too when a probe has several.
pub(super) fn label(cells: &[&Cell], c: &Cell) -> String {
    let scales = cells.iter().filter(|o| o.probe == c.probe).count();
    if scales > 1 {
        format!("{} @ {} tasks", c.probe, grouped(c.tasks as f64, 0))
    } else {
        c.probe.clone()
    }
}

fn figure(input: &Input, cells: &[&Cell], key: &str) -> Option<Figure> {
    let with: Vec<&Cell> = cells
        .iter()
        .copied()
        .filter(|c| c.stats.contains_key(key) || declares(input, &c.probe, key))
        .collect();
    if with.is_empty() {
        return None;
    }
    let mut values = Vec::new();
    let mut rows = Vec::new();
    for c in &with {
        let marks_of = |c: &Cell| -> Vec<Mark> {
            let Some(s) = c.stats.get(key) else {
                return Vec::new();
            };
            let intervals: Vec<[f64; 2]> = c
                .processes
                .iter()
                .filter_map(|p| p.intervals.get(key).copied())
                .collect();
            let mut marks: Vec<Mark> = s
                .values
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    let iv = (intervals.len() == s.values.len()).then(|| intervals[k]);
                    Mark::Process(*v, iv)
                })
                .collect();
            marks.push(Mark::Median(s.median));
            marks
        };
        let published = published(input, |cl| {
            cl.stat == Stat::ResultMedian
                && cl.probe == c.probe
                && cl.metric.as_deref() == Some(key)
                && cl.tasks.is_none_or(|t| t == c.tasks)
        });
        if let Some(s) = c.stats.get(key) {
            values.extend(s.values.iter().copied());
            for p in &c.processes {
                values.extend(p.intervals.get(key).into_iter().flatten().copied());
            }
        }
        values.extend(published.iter().flat_map(|(v, _)| v.iter().copied()));
        rows.push((c, marks_of(c), published));
    }
    let max = values.iter().copied().fold(0.0, f64::max);
    let (unit, per) = unit_of(key, max);
    let scale = Scale::fitting(&values, unit, per);
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|(c, marks, published)| {
            let s = c.stats.get(key);
            Row {
                label: label(&with, c),
                color: probe_color(input.study, &c.probe),
                value: s.map(|s| {
                    format!(
                        "median {} {unit} ({} of {} processes)",
                        scale.show(s.median),
                        s.values.len(),
                        input.summary.processes_of(c)
                    )
                }),
                missing: s.is_none().then(|| "no valid process".to_string()),
                marks,
                published,
            }
        })
        .collect();
    Some(draw(Chart {
        id: format!("timed-{key}"),
        design: Design::Timed,
        title: format!("Timed: {key}"),
        caption: vec![
            "A dot per process at the median of its batches, its whisker the bootstrap 95 % interval \
             of that median; the tall tick is the median over processes; ◇ a published value."
                .into(),
        ],
        scale,
        rows,
        footer: Vec::new(),
    }))
}

/// Whether the study says `probe` reports `key`, in its `results` or a claim's `metric`.
pub(super) fn declares(input: &Input, probe: &str, key: &str) -> bool {
    let claimed = input.study.claims.iter().any(|c| {
        c.stat == Stat::ResultMedian && c.probe == probe && c.metric.as_deref() == Some(key)
    });
    claimed
        || input
            .study
            .probe(probe)
            .is_some_and(|p| p.results.iter().any(|k| k == key))
}

/// The result keys claims name for probes the figure of `style` draws.
pub(super) fn claimed<'a>(input: &'a Input, style: FigureStyle) -> impl Iterator<Item = &'a str> {
    input.study.claims.iter().filter_map(move |c| {
        let of_kind = (input.study.probe(&c.probe)).is_some_and(|p| drawn_as(p.kind, style));
        if c.stat == Stat::ResultMedian && of_kind {
            c.metric.as_deref()
        } else {
            None
        }
    })
}
