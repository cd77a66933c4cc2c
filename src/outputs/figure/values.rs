//! Claims on a single value that no kind's figure draws — per-task bytes, baseline memory, a
//! program's metric, a range of process values, a latency probe's other results — one figure per unit, a row per claim: the
//! measured value (a dot, or a whisker over a measured range), a diamond at the published value
//! or at each end of a published range or bound, and both written beside it with the finding.

use super::draw::{Scale, color, unit_of};
use super::rows::{Chart, Mark, Row, draw};
use super::{Design, Figure, Input};
use crate::outputs::report::number;
use crate::outputs::verdict::Measured;
use crate::study::unit::Dimension;
use crate::study::{Expected, Stat};

/// The statistics drawn here: those no kind's figure or claim figure shows.
const DRAWN_HERE: [Stat; 5] = [
    Stat::PerTaskBytes,
    Stat::BaselineMedian,
    Stat::MetricMedian,
    Stat::RssRange,
    Stat::PeakRange,
];

/// The families of units, by what the claim's unit measures: (dimension, a name whose suffix
/// gives the display unit, title).
const FAMILIES: [(Dimension, &str, &str); 4] = [
    (Dimension::Memory, "bytes", "memory"),
    (Dimension::Time, "ns", "time"),
    (Dimension::Percent, "", "percentages"),
    (Dimension::Plain, "", "plain values"),
];

/// Whether claim `c` is drawn here: a statistic of [`DRAWN_HERE`], or a result of a latency probe
/// (its requests per second, CPU or memory beside the percentiles the latency figure draws).
fn drawn_here(input: &Input, c: &crate::study::Claim) -> bool {
    let latency = input
        .study
        .probe(&c.probe)
        .is_some_and(|p| p.kind == crate::study::kind::Kind::Latency);
    DRAWN_HERE.contains(&c.stat) || (c.stat == Stat::ResultMedian && latency)
}

pub fn figures(input: &Input) -> Vec<Figure> {
    FAMILIES
        .iter()
        .filter_map(|&(dim, name, title)| figure(input, dim, name, title))
        .collect()
}

fn figure(input: &Input, dim: Dimension, name: &str, title: &str) -> Option<Figure> {
    let probes: Vec<&str> = input.study.probes.iter().map(|p| p.id.as_str()).collect();
    let claims: Vec<_> = input
        .study
        .claims
        .iter()
        .filter(|c| drawn_here(input, c) && c.unit.dimension() == dim)
        .collect();
    if claims.is_empty() {
        return None;
    }
    let base = |v: f64, c: &crate::study::Claim| v * c.unit.scale();
    let published = |c: &crate::study::Claim| -> Vec<f64> {
        match &c.expected {
            Expected::Value(v) => vec![base(*v, c)],
            Expected::Range(r) => r.iter().map(|v| base(*v, c)).collect(),
            Expected::Bound(b) => [b.above, b.below]
                .into_iter()
                .flatten()
                .map(|v| base(v, c))
                .collect(),
            Expected::Order(_) => Vec::new(),
        }
    };
    let verdict = |id: &str| input.verdicts.iter().find(|v| v.claim == id);
    let measured = |c: &crate::study::Claim| -> Option<[f64; 2]> {
        let m = verdict(&c.id)?.measured.as_ref()?;
        let [lo, hi] = m.bounds()?;
        Some([base(lo, c), base(hi, c)])
    };
    let values: Vec<f64> = claims
        .iter()
        .flat_map(|c| {
            published(c)
                .into_iter()
                .chain(measured(c).into_iter().flatten())
        })
        .collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    let (unit, per) = match dim {
        Dimension::Percent => ("%", 1.0),
        _ => unit_of(name, max),
    };
    let scale = Scale::fitting(&values, unit, per);
    let rows = claims
        .iter()
        .map(|c| {
            let v = verdict(&c.id);
            let marks = match (measured(c), v.and_then(|v| v.measured.as_ref())) {
                (Some([lo, hi]), Some(Measured::Range(_))) => {
                    vec![Mark::Process((lo + hi) / 2.0, Some([lo, hi]))]
                }
                (Some([x, _]), _) => vec![Mark::Process(x, None)],
                _ => Vec::new(),
            };
            let status = v
                .map(|v| format!(" · {}", v.status_label()))
                .unwrap_or_default();
            let at = c.tasks.map(|t| format!(" @ {t}")).unwrap_or_default();
            Row {
                label: format!("{} ({}{at})", c.id, c.probe),
                color: color(probes.iter().position(|p| *p == c.probe).unwrap_or(0)),
                value: v
                    .and_then(|v| v.measured.as_ref().map(|m| (v, m)))
                    .map(|(v, m)| {
                        format!("measured {}{status}", number::measured(Some(m), v.unit))
                    }),
                missing: marks.is_empty().then(|| format!("not measured{status}")),
                marks,
                published: vec![(
                    published(c),
                    format!("published {}", number::expected(&c.expected, c.unit)),
                )],
            }
        })
        .collect();
    Some(draw(Chart {
        id: format!("values-{}", title.replace(' ', "-")),
        design: Design::Value,
        title: format!("Claims on {title}"),
        caption: vec![
            "A row per claim on a value no other figure draws (per-task bytes, baseline, a metric, \
             a range): ● the measured value or a whisker over the measured range, ◇ the published \
             value."
                .into(),
        ],
        scale,
        rows,
        footer: Vec::new(),
    }))
}
