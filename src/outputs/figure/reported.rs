//! Reported figures: the values programs compute themselves (sizes, counts, limits) as labelled
//! bars, one figure per unit — sizes, times, plain numbers — so that one figure never mixes units.
//! A row per probe and result key at the median over processes, its value (and its range when
//! processes differ) written beside it, and a diamond at each published value, named there too.
//! The axis turns logarithmic when the values span more than 20×, so a small count stays visible
//! beside a large limit.

use std::collections::BTreeSet;

use super::draw::{Scale, probe_color, unit_of};
use super::rows::{Chart, Mark, Row, draw};
use super::{Design, Figure, Input, cells_drawn_as, published};
use crate::outputs::summary::Cell;
use crate::study::Stat;
use crate::study::kind::FigureStyle;

/// The families of units a reported value may have, by its key's name: (name, title).
const FAMILIES: [(&str, &str); 3] = [
    ("bytes", "sizes"),
    ("ns", "times"),
    ("", "counts and other plain values"),
];

/// The family of a key (`x_bytes` → `bytes`, `ns_per_x` → `ns`, anything else plain).
fn family(key: &str) -> &'static str {
    match unit_of(key, 0.0).0 {
        "B" => "bytes",
        "ns" => "ns",
        _ => "",
    }
}

pub fn figures(input: &Input) -> Vec<Figure> {
    let cells = cells_drawn_as(input, FigureStyle::Bars);
    FAMILIES
        .iter()
        .filter_map(|(fam, title)| figure(input, &cells, fam, title))
        .collect()
}

/// The keys of a cell: those it reported, those its probe declares and those its claims name.
fn keys<'a>(input: &'a Input, c: &'a Cell) -> BTreeSet<&'a str> {
    let declared = input.study.probe(&c.probe).map(|p| p.results.as_slice());
    let claimed = input.study.claims.iter().filter_map(|cl| {
        let on = cl.stat == Stat::ResultMedian && cl.probe == c.probe;
        if on { cl.metric.as_deref() } else { None }
    });
    c.stats
        .keys()
        .map(String::as_str)
        .chain(declared.unwrap_or_default().iter().map(String::as_str))
        .chain(claimed)
        .collect()
}

fn figure(input: &Input, cells: &[&Cell], fam: &str, title: &str) -> Option<Figure> {
    // (cell, key) for every row of this family; a probe's colour is its own in every figure.
    let rows: Vec<(&Cell, &str)> = cells
        .iter()
        .flat_map(|c| keys(input, c).into_iter().map(move |k| (*c, k)))
        .filter(|(_, k)| family(k) == fam)
        .collect();
    if rows.is_empty() {
        return None;
    }
    let published_of = |c: &Cell, key: &str| {
        published(input, |cl| {
            cl.stat == Stat::ResultMedian
                && cl.probe == c.probe
                && cl.metric.as_deref() == Some(key)
                && cl.tasks.is_none_or(|t| t == c.tasks)
        })
    };
    let values: Vec<f64> = rows
        .iter()
        .flat_map(|(c, k)| {
            let measured = c.stats.get(*k).map(|s| s.max);
            let published: Vec<f64> = published_of(c, k)
                .into_iter()
                .flat_map(|(v, _)| v)
                .collect();
            measured.into_iter().chain(published)
        })
        .collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    let (unit, per) = unit_of(if fam.is_empty() { "x" } else { fam }, max);
    let scale = Scale::fitting(&values, unit, per);
    let one_probe = rows.iter().all(|(c, _)| c.probe == rows[0].0.probe);
    let several_scales = |c: &Cell| cells.iter().filter(|o| o.probe == c.probe).count() > 1;
    let rows = rows
        .iter()
        .map(|&(c, key)| {
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
            let mut label = if one_probe {
                key.to_string()
            } else {
                format!("{} · {key}", c.probe)
            };
            if several_scales(c) {
                label.push_str(&format!(" @ {}", c.tasks));
            }
            Row {
                label,
                color: probe_color(input.study, &c.probe),
                marks: s.map(|s| vec![Mark::Bar(s.median)]).unwrap_or_default(),
                published: published_of(c, key),
                value,
                missing: s
                    .is_none()
                    .then(|| "no valid process reports it".to_string()),
            }
        })
        .collect();
    let who = if one_probe {
        format!(" of {}", cells[0].probe)
    } else {
        String::new()
    };
    Some(draw(Chart {
        id: format!("reported-{}", if fam.is_empty() { "plain" } else { fam }),
        design: Design::Reported,
        title: format!("Reported {title}{who}"),
        caption: vec![
            "A bar per result key at the median over processes of the value the program reports \
             (its range when processes differ); ◇ a published value."
                .into(),
        ],
        scale,
        rows,
        footer: Vec::new(),
    }))
}
