//! Claims on a single value that no kind's figure draws — per-task bytes, baseline memory, a
//! program's metric, a range of process values, a latency probe's other results — one figure per unit, a row per claim: the
//! measured value (a dot, or a whisker over a measured range), a diamond at the published value
//! or at each end of a published range or bound, and both written beside it with the finding.

use super::draw::{Scale, probe_color, unit_of};
use super::rows::{Chart, Mark, Row, draw};
use super::{Design, Figure, Input, drawn_as};
use crate::outputs::number;
use crate::outputs::verdict::Measured;
use crate::study::kind::FigureStyle;
use crate::study::unit::Dimension;
use crate::study::{Expected, Stat};

/// The statistics drawn here: those no kind's figure or claim figure shows.
const DRAWN_HERE: [Stat; 6] = [
    Stat::PerTaskBytes,
    Stat::BaselineMedian,
    Stat::MetricMedian,
    Stat::RssRange,
    Stat::PeakRange,
    Stat::WallMedian,
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
/// (its requests per second, CPU or memory beside the percentiles the latency figure draws: any
/// probe whose kind that figure draws).
fn drawn_here(input: &Input, c: &crate::study::Claim) -> bool {
    let latency = input
        .study
        .probe(&c.probe)
        .is_some_and(|p| drawn_as(p.kind, FigureStyle::Percentiles));
    DRAWN_HERE.contains(&c.stat) || (c.stat == Stat::ResultMedian && latency)
}

pub fn figures(input: &Input) -> Vec<Figure> {
    FAMILIES
        .iter()
        .flat_map(|&(dim, name, title)| family(input, dim, name, title))
        .collect()
}

/// How many times larger than the smallest value of its figure a claim's values may be: beyond
/// it, one log axis would squeeze the small claims into its first tick (144 B beside 1 GiB).
const SPAN: f64 = 1000.0;

/// The figures of one family of units: one, or one per scale when its claims' values lie too far
/// apart to share an axis (per-task bytes beside process memory).
fn family(input: &Input, dim: Dimension, name: &str, title: &str) -> Vec<Figure> {
    let mut claims: Vec<(&crate::study::Claim, f64)> = (input.study.claims.iter())
        .filter(|c| drawn_here(input, c) && c.unit.dimension() == dim)
        .map(|c| (c, size(input, c)))
        .collect();
    claims.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut groups: Vec<(f64, Vec<&crate::study::Claim>)> = Vec::new();
    for (c, size) in claims {
        match groups.last_mut() {
            // A claim with no value yet (0) goes with the next one that has one.
            Some((least, group)) if *least <= 0.0 || size <= *least * SPAN => {
                if *least <= 0.0 {
                    *least = size;
                }
                group.push(c);
            }
            _ => groups.push((size, vec![c])),
        }
    }
    // The claims of a figure in the study's order.
    let order = |c: &&crate::study::Claim| input.study.claims.iter().position(|o| o.id == c.id);
    let split = groups.len() > 1;
    (groups.into_iter().enumerate())
        .map(|(i, (_, mut group))| {
            group.sort_by_key(order);
            let id = match i {
                0 => format!("values-{}", title.replace(' ', "-")),
                _ => format!("values-{}-{}", title.replace(' ', "-"), i + 1),
            };
            figure(input, &group, dim, name, (&id, title, split))
        })
        .collect()
}

/// The largest value a claim's row draws (published or measured), in base units; 0 when none.
fn size(input: &Input, c: &crate::study::Claim) -> f64 {
    (published(c).into_iter())
        .chain(measured(input, c).into_iter().flatten())
        .map(f64::abs)
        .fold(0.0, f64::max)
}

fn base(v: f64, c: &crate::study::Claim) -> f64 {
    v * c.unit.scale()
}

fn published(c: &crate::study::Claim) -> Vec<f64> {
    match &c.expected {
        Expected::Value(v) => vec![base(*v, c)],
        Expected::Range(r) => r.iter().map(|v| base(*v, c)).collect(),
        Expected::Bound(b) => [b.above, b.below]
            .into_iter()
            .flatten()
            .map(|v| base(v, c))
            .collect(),
        Expected::Order(_) | Expected::Outcome(_) => Vec::new(),
    }
}

fn measured(input: &Input, c: &crate::study::Claim) -> Option<[f64; 2]> {
    let v = input.verdicts.iter().find(|v| v.claim == c.id)?;
    let [lo, hi] = v.measured.as_ref()?.bounds()?;
    Some([base(lo, c), base(hi, c)])
}

/// One figure of `claims`; `(id, title, split)`: a figure of a family split by scale names its
/// unit in its title.
fn figure(
    input: &Input,
    claims: &[&crate::study::Claim],
    dim: Dimension,
    name: &str,
    (id, title, split): (&str, &str, bool),
) -> Figure {
    let verdict = |id: &str| input.verdicts.iter().find(|v| v.claim == id);
    let measured = |c: &crate::study::Claim| measured(input, c);
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
                color: probe_color(input.study, &c.probe),
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
    draw(Chart {
        id: id.to_string(),
        design: Design::Value,
        title: match split {
            true => format!("Claims on {title}, in {unit}"),
            false => format!("Claims on {title}"),
        },
        caption: vec![
            "A row per claim on a value no other figure draws (per-task bytes, baseline, a metric, \
             a range): ● the measured value or a whisker over the measured range, ◇ the published \
             value."
                .into(),
        ],
        scale,
        rows,
        footer: Vec::new(),
    })
}
