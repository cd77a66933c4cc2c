//! The latency figure: a row per latency probe and scale, its P50, P90, P99 and P99.9 (each the
//! median over processes of the percentile recomputed from each process's histogram) joined left
//! to right on one logarithmic axis, and a diamond at each published percentile, named in the right
//! column.

use super::draw::{Scale, probe_color, span, unit_of};
use super::rows::{Chart, Mark, Row, draw};
use super::timed::label;
use super::{Design, Figure, Input, cells_drawn_as, published};
use crate::outputs::summary::Cell;
use crate::study::Stat;
use crate::study::kind::{FigureStyle, PERCENTILES, percentile_name};

/// The shapes' names, in [`PERCENTILES`] order (see `rows::shape_at`).
const SHAPES: [&str; 4] = ["●", "■", "▲", "✕"];

pub fn figure(input: &Input) -> Option<Figure> {
    let cells = cells_drawn_as(input, FigureStyle::Percentiles);
    if cells.is_empty() {
        return None;
    }
    let points = |c: &Cell| -> Vec<(usize, f64)> {
        PERCENTILES
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((i, c.stats.get(&percentile_name(*p))?.median)))
            .collect()
    };
    let published_of = |c: &Cell| {
        let of = |cl: &crate::study::Claim| {
            cl.stat == Stat::Percentile
                && cl.probe == c.probe
                && cl.tasks.is_none_or(|t| t == c.tasks)
        };
        let which = input
            .study
            .claims
            .iter()
            .filter(|cl| of(cl))
            .map(|cl| cl.percentile.unwrap_or(0.0));
        published(input, of)
            .into_iter()
            .zip(which)
            .map(|((v, words), p)| {
                (
                    v,
                    words.replacen("published", &format!("published P{}", trim(p)), 1),
                )
            })
            .collect::<Vec<_>>()
    };
    let mut values: Vec<f64> = cells
        .iter()
        .flat_map(|c| points(c).into_iter().map(|p| p.1))
        .collect();
    values.extend(
        cells
            .iter()
            .flat_map(|c| published_of(c).into_iter().flat_map(|p| p.0)),
    );
    let (min, max) = span(&values);
    let (unit, per) = unit_of("ns", max);
    let scale = Scale::log(
        if min.is_finite() { min } else { 1.0 },
        max.max(1.0),
        unit,
        per,
    );
    let rows = cells
        .iter()
        .map(|c| {
            let pts = points(c);
            let value = (!pts.is_empty()).then(|| {
                pts.iter()
                    .map(|(k, v)| format!("P{} {}", trim(PERCENTILES[*k]), scale.show(*v)))
                    .collect::<Vec<_>>()
                    .join(" · ")
                    + &format!(" {unit}")
            });
            Row {
                label: label(&cells, c),
                color: probe_color(input.study, &c.probe),
                marks: if pts.is_empty() {
                    Vec::new()
                } else {
                    vec![Mark::Percentiles(pts)]
                },
                published: published_of(c),
                value,
                missing: (c.valid == 0).then(|| "no valid process".to_string()),
            }
        })
        .collect();
    let legend: Vec<String> = PERCENTILES
        .iter()
        .zip(SHAPES)
        .map(|(p, s)| format!("{s} P{}", trim(*p)))
        .collect();
    Some(draw(Chart {
        id: "latency".into(),
        design: Design::Latency,
        title: "Latency percentiles".into(),
        caption: vec![format!(
            "Per probe, {} — each the median over processes of the percentile of each \
                 process's own histogram; ◇ a published percentile.",
            legend.join(", ")
        )],
        scale,
        rows,
        footer: Vec::new(),
    }))
}

/// A percentile as written (`50`, `99.9`).
fn trim(p: f64) -> String {
    let s = format!("{p:.1}");
    s.trim_end_matches(".0").to_string()
}
