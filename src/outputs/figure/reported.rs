//! Reported figures: one per result key the programs compute themselves (sizes, counts, limits),
//! one unit each; a labelled bar per probe at the median over processes, and a diamond at each
//! published value, named in the right column.

use std::collections::BTreeSet;

use super::draw::{Scale, color, unit_of};
use super::rows::{Chart, Mark, Row, draw};
use super::timed::label;
use super::{Design, Figure, Input, published};
use crate::outputs::summary::Cell;
use crate::study::Stat;
use crate::study::kind::Kind;

pub fn figures(input: &Input) -> Vec<Figure> {
    let cells: Vec<&Cell> = input
        .summary
        .cells
        .iter()
        .filter(|c| c.kind == Kind::Reported)
        .collect();
    let keys: BTreeSet<&str> = cells
        .iter()
        .flat_map(|c| c.stats.keys().map(String::as_str))
        .chain(
            input
                .study
                .probes
                .iter()
                .filter(|p| p.kind == Kind::Reported)
                .flat_map(|p| p.results.iter().map(String::as_str)),
        )
        .collect();
    keys.into_iter()
        .filter_map(|key| figure(input, &cells, key))
        .collect()
}

fn figure(input: &Input, cells: &[&Cell], key: &str) -> Option<Figure> {
    let with: Vec<&Cell> = cells
        .iter()
        .copied()
        .filter(|c| {
            c.stats.contains_key(key)
                || input
                    .study
                    .probe(&c.probe)
                    .is_some_and(|p| p.results.iter().any(|k| k == key))
        })
        .collect();
    if with.is_empty() {
        return None;
    }
    let published_of = |c: &Cell| {
        published(input, |cl| {
            cl.stat == Stat::ResultMedian
                && cl.probe == c.probe
                && cl.metric.as_deref() == Some(key)
                && cl.tasks.is_none_or(|t| t == c.tasks)
        })
    };
    let values: Vec<f64> = with
        .iter()
        .flat_map(|c| {
            let measured = c.stats.get(key).map(|s| s.max);
            let published: Vec<f64> = published_of(c).into_iter().flat_map(|(v, _)| v).collect();
            measured.into_iter().chain(published)
        })
        .collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    let (unit, per) = unit_of(key, max);
    // Bars start at zero: a linear axis, whatever the spread.
    let scale = Scale::linear(max, unit, per);
    let rows = with
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let s = c.stats.get(key);
            let value = s.map(|s| {
                let range = if s.min == s.max {
                    String::new()
                } else {
                    format!(", {}–{}", scale.show(s.min), scale.show(s.max))
                };
                let unit = if unit.is_empty() {
                    String::new()
                } else {
                    format!(" {unit}")
                };
                format!(
                    "{}{unit}{range} ({} of {} processes)",
                    scale.show(s.median),
                    s.values.len(),
                    input.summary.processes_of(c)
                )
            });
            Row {
                label: label(&with, c),
                color: color(i),
                marks: s.map(|s| vec![Mark::Bar(s.median)]).unwrap_or_default(),
                published: published_of(c),
                value,
                missing: s.is_none().then(|| "no valid process".to_string()),
            }
        })
        .collect();
    Some(draw(Chart {
        id: format!("reported-{key}"),
        design: Design::Reported,
        title: format!("Reported: {key}"),
        caption: vec![
            "A bar per probe at the median over processes of the value the program reports (its \
             range when processes differ); ◇ a published value."
                .into(),
        ],
        scale,
        rows,
        footer: Vec::new(),
    }))
}
