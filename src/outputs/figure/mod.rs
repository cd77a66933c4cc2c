//! The figures of a run, one design per kind of measurement and per kind of claim, each chosen for
//! what its kind claims:
//!
//! - `memory`: memory by scale (steady and peak probes), a panel per scale, a column per probe;
//! - `timed`: per result key, each process's median with its bootstrap interval, a row per probe;
//! - `latency`: P50, P90, P99 and P99.9 per probe on a logarithmic axis;
//! - `reported`: per unit, the values the programs report as labelled bars;
//!
//! (the first four draw the probes whose kind answers `FigureStyle::Memory`, `Intervals`,
//! `Percentiles` and `Bars`, [`drawn_as`]: a figure asks a kind's style, never its name)
//! - `claims`: each ratio, `lower_by_percent` and order claim as what it claims — its sides side by
//!   side, with the measured and the published ratio or ranking;
//! - `values`: every other claim on a single value (per-task bytes, baseline, a metric, a range),
//!   a row per claim with its measured and published value.
//!
//! Every figure has one unit, names each published value in the picture (not in a tooltip), gives
//! each probe its one colour of the run (`draw::probe_color`: its place among the study's probes,
//! in a palette that does not repeat over twelve probes, `draw::PALETTE`), and records
//! the box of every label it places, so tests can check that no two overlap. Imports the summary, the
//! verdicts and the study; the report formats (`report`) embed the figures.

mod claims;
pub mod draw;
mod latency;
mod memory;
pub mod panel;
mod reported;
mod rows;
mod timed;
mod values;

#[cfg(test)]
pub(crate) mod tests;

use crate::outputs::summary::{Cell, Summary};
use crate::outputs::verdict::Verdict;
use crate::study::Study;
use crate::study::kind::{FigureStyle, Kind};

/// Whether the figure of `style` draws probes of `kind` (the memory figure asks
/// `Measure::memory`).
fn drawn_as(kind: Kind, style: FigureStyle) -> bool {
    kind.measure().figure() == style
}

/// The summary's cells the figure of `style` draws.
fn cells_drawn_as<'a>(input: &Input<'a>, style: FigureStyle) -> Vec<&'a Cell> {
    let cells = input.summary.cells.iter();
    cells.filter(|c| drawn_as(c.kind, style)).collect()
}

/// Which design a figure follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Design {
    Memory,
    Timed,
    Latency,
    Reported,
    Ratio,
    Order,
    Value,
}

impl Design {
    /// The design's name, as the SVG's class and the report's anchors carry it.
    pub fn class(self) -> &'static str {
        match self {
            Design::Memory => "memory",
            Design::Timed => "timed",
            Design::Latency => "latency",
            Design::Reported => "reported",
            Design::Ratio => "ratio",
            Design::Order => "order",
            Design::Value => "value",
        }
    }
}

/// One figure: its SVG and the boxes of its labels.
pub struct Figure {
    /// Unique in the run (`memory`, `timed-ns_per_switch`, `claim-go-vs-rust`).
    pub id: String,
    pub design: Design,
    pub title: String,
    /// The SVG document.
    pub svg: String,
    /// The box of every text placed, px.
    pub labels: Vec<draw::Rect>,
}

/// What the figures are drawn from.
pub struct Input<'a> {
    pub study: &'a Study,
    pub summary: &'a Summary,
    pub verdicts: &'a [Verdict],
    /// Samples of more than one hardware class: each class's label (`A`, `B`, …), class and
    /// summary, for one panel column per class in the memory figure; empty for one class.
    pub classes: &'a [(String, String, Summary)],
}

/// Every figure of a run, in design order: memory, timed, latency, reported, then the claims'.
pub fn all(input: &Input) -> Vec<Figure> {
    let mut out = Vec::new();
    out.extend(memory::figure(input));
    out.extend(timed::figures(input));
    out.extend(latency::figure(input));
    out.extend(reported::figures(input));
    out.extend(claims::figures(input));
    out.extend(values::figures(input));
    out
}

/// The memory figure (`figure.svg`): drawn even without a memory probe, so the file always exists.
pub fn memory(input: &Input) -> Figure {
    memory::figure(input).unwrap_or_else(|| memory::empty(input.study))
}

/// The published values of the claims `on` selects, each as the values to mark (one, or both ends
/// of a range or bound, in base units) and its words: `published 1,960 ns · pingpong-switch · differs`.
pub(crate) fn published(
    input: &Input,
    on: impl Fn(&crate::study::Claim) -> bool,
) -> Vec<(Vec<f64>, String)> {
    use crate::outputs::number;
    use crate::study::Expected;
    input
        .study
        .claims
        .iter()
        .filter(|c| on(c))
        .filter_map(|c| {
            let scale = c.unit.scale();
            let at: Vec<f64> = match &c.expected {
                Expected::Value(v) => vec![v * scale],
                Expected::Range(r) => r.iter().map(|v| v * scale).collect(),
                Expected::Bound(b) => [b.above, b.below]
                    .into_iter()
                    .flatten()
                    .map(|v| v * scale)
                    .collect(),
                Expected::Order(_) | Expected::Outcome(_) => return None,
            };
            let status = input
                .verdicts
                .iter()
                .find(|v| v.claim == c.id)
                .map(|v| format!(" · {}", v.status_label()))
                .unwrap_or_default();
            let words = format!(
                "published {} · {}{status}",
                number::expected(&c.expected, c.unit),
                c.id
            );
            Some((at, words))
        })
        .collect()
}
