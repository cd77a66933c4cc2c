//! `compare.svg`: one panel per scale; per probe, A's process dots beside B's, a bar at each median,
//! and a dashed line at each claim's published value when it is a single value of the headline's
//! statistic about that probe and scale ([`claim::published`]). Fixed number formatting: the same
//! runs give the same bytes.

use std::fmt::Write as _;

use super::{CellRow, Side, cells};
use crate::outputs::figure::draw::{abbreviate, text_width};
use crate::outputs::figure::panel::{
    Axis, COLORS, FONT, HEADER_H, MARGIN, PANEL_H, PANEL_W, PLOT, Plot, nice_step, text, y_axis,
};
use crate::outputs::number::scale_label;
use crate::study::Study;
use crate::study::claim;

/// The figure of the comparison of `a` and `b`.
pub fn figure(a: &Side, b: &Side) -> String {
    let rows = cells(&a.outcome.summary, &b.outcome.summary);
    let mut scales: Vec<u64> = rows.iter().map(|r| r.tasks).collect();
    scales.dedup();
    // Panels widen with the probes (a slot of at least SLOT px each) and names that do not fit
    // across a slot turn vertical, below the panel, so that none overlaps another.
    let most = scales
        .iter()
        .map(|&n| rows.iter().filter(|r| r.tasks == n).count())
        .max()
        .unwrap_or(1)
        .max(1);
    let layout = Layout::new(&rows, most);
    let width = 2.0 * MARGIN + layout.panel_w * scales.len().max(1) as f64;
    let height = HEADER_H + PANEL_H + layout.names_h + MARGIN;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" {FONT}>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
    );
    let title = format!("A: {}  ·  B: {}", a.outcome.run_id, b.outcome.run_id);
    let _ = writeln!(
        out,
        "{}",
        text(MARGIN + 4.0, 26.0, 17, "start", "bold", &title)
    );
    let sub = "Per probe: A's processes (hollow) left, B's (filled) right; bar: median; \
               dashed: published value.";
    let _ = writeln!(
        out,
        "{}",
        text(MARGIN + 4.0, 48.0, 12, "start", "normal", sub)
    );
    for (i, &tasks) in scales.iter().enumerate() {
        let in_scale: Vec<&CellRow> = rows.iter().filter(|r| r.tasks == tasks).collect();
        let x0 = MARGIN + layout.panel_w * i as f64;
        out.push_str(&panel(x0, tasks, &in_scale, &a.outcome.study, &layout));
    }
    out.push_str("</svg>\n");
    out
}

/// The narrowest slot per probe, px.
const SLOT: f64 = 44.0;
/// Longest name shown whole, characters.
const NAME_MAX: usize = 28;

/// How wide the panels are and how the probes' names are set.
struct Layout {
    panel_w: f64,
    /// Extra height under the panels for vertical names, px.
    names_h: f64,
    vertical: bool,
}

impl Layout {
    fn new(rows: &[CellRow], most: usize) -> Self {
        let inner = (PLOT[1] - PLOT[0]).max(SLOT * most as f64);
        let panel_w = PANEL_W - (PLOT[1] - PLOT[0]) + inner;
        let slot = inner / most as f64;
        let widest = rows
            .iter()
            .map(|r| text_width(&abbreviate(&r.probe, NAME_MAX).0, 13.0))
            .fold(0.0, f64::max);
        let vertical = widest > slot - 4.0;
        Layout {
            panel_w,
            names_h: if vertical { widest } else { 0.0 },
            vertical,
        }
    }
}

/// A y axis from zero past `max`: MiB or GiB for bytes, the statistic's own unit otherwise.
fn axis(max: f64, bytes: bool) -> Axis {
    if bytes {
        return Axis::new(max);
    }
    let step = nice_step(max * 1.08, 5.0);
    Axis {
        unit: "",
        per_unit: 1.0,
        top: ((max * 1.08 / step).ceil() * step).max(step),
        step,
    }
}

fn panel(x0: f64, tasks: u64, rows: &[&CellRow], study: &Study, layout: &Layout) -> String {
    let marks: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| {
            let Some(stat) = r.a.stat else {
                return Vec::new();
            };
            let found = claim::published(&study.claims, stat, &r.probe, tasks);
            found.into_iter().map(|(_, bytes)| bytes).collect()
        })
        .collect();
    let max = rows
        .iter()
        .flat_map(|r| r.a.values.iter().chain(&r.b.values))
        .chain(marks.iter().flatten())
        .copied()
        .fold(0.0, f64::max);
    let plot = Plot {
        left: x0 + PLOT[0],
        right: x0 + layout.panel_w - (PANEL_W - PLOT[1]),
        top: HEADER_H + PLOT[2],
        bottom: HEADER_H + PLOT[3],
        axis: axis(max, rows.first().is_none_or(|r| r.a.is_bytes())),
    };
    let mut out = format!("<g class=\"panel\" data-tasks=\"{tasks}\">\n");
    let title = format!("{} tasks", scale_label(tasks));
    let mid = (plot.left + plot.right) / 2.0;
    let _ = writeln!(
        out,
        "{}",
        text(mid, HEADER_H + 20.0, 15, "middle", "bold", &title)
    );
    out.push_str(&y_axis(&plot));
    let slot = (plot.right - plot.left) / rows.len().max(1) as f64;
    for (k, (row, mark)) in rows.iter().zip(&marks).enumerate() {
        let cx = plot.left + slot * (k as f64 + 0.5);
        let color = COLORS[k % COLORS.len()];
        let name = abbreviate(&row.probe, NAME_MAX).0;
        let label = if layout.vertical {
            let y = plot.bottom + 8.0;
            text(cx + 4.0, y, 13, "end", "normal", &name).replacen(
                "<text",
                &format!("<text transform=\"rotate(-90 {:.1} {y:.1})\"", cx + 4.0),
                1,
            )
        } else {
            text(cx, plot.bottom + 20.0, 13, "middle", "normal", &name)
        };
        let _ = writeln!(out, "{label}");
        let half = (slot * 0.2).min(14.0);
        out.push_str(&column(
            &plot,
            cx - half,
            half,
            color,
            &row.a.values,
            row.a.value,
            false,
        ));
        out.push_str(&column(
            &plot,
            cx + half,
            half,
            color,
            &row.b.values,
            row.b.value,
            true,
        ));
        for bytes in mark {
            let (y, l, r) = (plot.y(*bytes), cx - 2.0 * half, cx + 2.0 * half);
            let _ = writeln!(
                out,
                "<line class=\"published\" x1=\"{l:.1}\" y1=\"{y:.1}\" x2=\"{r:.1}\" y2=\"{y:.1}\" \
                 stroke=\"#000000\" stroke-dasharray=\"4 3\"/>"
            );
        }
    }
    let (l, r, bottom) = (plot.left, plot.right, plot.bottom);
    let _ = writeln!(
        out,
        "<line x1=\"{l:.1}\" y1=\"{bottom:.1}\" x2=\"{r:.1}\" y2=\"{bottom:.1}\" stroke=\"#333333\"/>"
    );
    out.push_str("</g>\n");
    out
}

/// One run's dots of a cell around `cx`, and a bar at its median.
fn column(
    plot: &Plot,
    cx: f64,
    half: f64,
    color: &str,
    values: &[f64],
    median: f64,
    filled: bool,
) -> String {
    let fill = if filled { color } else { "#ffffff" };
    let mut out = String::new();
    let n = values.len().max(1) as f64;
    for (i, v) in values.iter().enumerate() {
        let x = cx - half * 0.6 + half * 1.2 * (i as f64 + 0.5) / n;
        let y = plot.y(*v);
        let _ = writeln!(
            out,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{fill}\" stroke=\"{color}\"/>"
        );
    }
    let (l, r, y) = (cx - half * 0.8, cx + half * 0.8, plot.y(median));
    let _ = writeln!(
        out,
        "<line x1=\"{l:.1}\" y1=\"{y:.1}\" x2=\"{r:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"3\"/>"
    );
    out
}
