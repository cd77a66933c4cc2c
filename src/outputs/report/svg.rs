//! `figure.svg`: the article's figure. One panel per scale side by side, each with its own y axis from
//! zero; a dot per valid process (jittered by repeat), a bar at the median, probes along x, and a
//! hollow diamond beside the bar at each claim's published value of the plotted statistic
//! ([`crate::study::claim::published`]). Under the panels, a legend of the diamond and the claims not on
//! the figure. Values in MiB, or GiB when the panel reaches 1 GiB (measured or published).
//! Hand-written SVG with fixed number formatting, so the same input always gives the same bytes.

mod published;

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::Result;

use crate::outputs::report::number::{GIB, MIB, grouped, scale_label};
use crate::outputs::report::{Format, ReportInput};
use crate::outputs::summary::{Cell, Memory, Summary};
use crate::study::kind::Kind;
use crate::study::{Stat, Study};

/// `figure.svg`.
pub struct Figure;

pub(crate) const PANEL_W: f64 = 250.0;
pub(crate) const PANEL_H: f64 = 350.0;
pub(crate) const HEADER_H: f64 = 66.0;
pub(crate) const MARGIN: f64 = 10.0;
/// Plot area inside a panel: left, right, top, bottom offsets from the panel's corner.
pub(crate) const PLOT: [f64; 4] = [62.0, PANEL_W - 14.0, 48.0, PANEL_H - 56.0];
pub(crate) const COLORS: [&str; 6] = [
    "#00758f", "#b7410e", "#6a51a3", "#238b45", "#b8860b", "#525252",
];
pub(crate) const FONT: &str = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";

impl Format for Figure {
    fn name(&self) -> &'static str {
        "figure.svg"
    }

    fn render(&self, input: &ReportInput) -> Result<Vec<u8>> {
        let study = input.study;
        // The probes with a memory figure, and a panel per scale where one of them was measured.
        let probes: Vec<(&str, Stat)> = study
            .probes
            .iter()
            .filter_map(|p| Some((p.id.as_str(), p.kind.measure().memory()?.stat)))
            .collect();
        let scales: Vec<u64> = study
            .all_scales()
            .into_iter()
            .filter(|&n| {
                input
                    .summary
                    .cells
                    .iter()
                    .any(|c| c.tasks == n && probes.iter().any(|(p, _)| *p == c.probe))
            })
            .collect();
        let marks: Vec<published::Marks> = scales
            .iter()
            .map(|&tasks| published::marks(study, &probes, tasks))
            .collect();
        let placed: Vec<&str> = marks
            .iter()
            .flatten()
            .flatten()
            .map(|(c, _)| c.id.as_str())
            .collect();
        let width = 2.0 * MARGIN + PANEL_W * scales.len() as f64;
        let footer = published::footer(study, &placed, width);
        let height = HEADER_H + PANEL_H + published::LINE * footer.len() as f64 + MARGIN;
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
             viewBox=\"0 0 {width:.0} {height:.0}\" {FONT}>\n"
        );
        let _ = writeln!(
            out,
            "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>"
        );
        let _ = writeln!(
            out,
            "{}",
            text(MARGIN + 4.0, 26.0, 17, "start", "bold", &study.title)
        );
        let _ = writeln!(
            out,
            "{}",
            text(MARGIN + 4.0, 48.0, 12, "start", "normal", caption(study))
        );
        let ids: Vec<&str> = probes.iter().map(|(p, _)| *p).collect();
        for (i, (&tasks, marks)) in scales.iter().zip(&marks).enumerate() {
            let x0 = MARGIN + PANEL_W * i as f64;
            out.push_str(&panel(x0, HEADER_H, tasks, &ids, marks, input.summary));
        }
        for (i, line) in footer.iter().enumerate() {
            let y = HEADER_H + PANEL_H + published::LINE * (i as f64 + 0.5);
            out.push_str(&line.render(MARGIN + 4.0, y));
        }
        out.push_str("</svg>\n");
        Ok(out.into_bytes())
    }
}

/// What the dots and bars are: the caption of the study's memory figure, the later kind's when
/// kinds with one mix (peak over steady); the default kind's when no probe has one.
fn caption(study: &Study) -> &'static str {
    let kinds: BTreeSet<Kind> = study.probes.iter().map(|p| p.kind).collect();
    kinds
        .into_iter()
        .rev()
        .chain([Kind::default()])
        .find_map(|k| k.measure().memory())
        .map_or("", |m| m.caption)
}

/// The y axis of a panel: unit name, bytes per unit, top value and tick step (in the unit).
pub(crate) struct Axis {
    pub(crate) unit: &'static str,
    pub(crate) per_unit: f64,
    pub(crate) top: f64,
    pub(crate) step: f64,
}

impl Axis {
    pub(crate) fn new(max_bytes: f64) -> Self {
        let (unit, per_unit) = if max_bytes >= GIB {
            ("GiB", GIB)
        } else {
            ("MiB", MIB)
        };
        let max = (max_bytes / per_unit) * 1.08;
        let step = nice_step(max, 5.0);
        let top = ((max / step).ceil() * step).max(step);
        Axis {
            unit,
            per_unit,
            top,
            step,
        }
    }

    /// Decimals that show every tick exactly.
    fn decimals(&self) -> usize {
        (0..4)
            .find(|&d| ((self.step * 10f64.powi(d as i32)).fract()).abs() < 1e-9)
            .unwrap_or(4)
    }
}

/// A round tick step (1, 2, 2.5 or 5 × 10ⁿ) giving the number of intervals up to `max` closest to
/// `ticks`; on a tie, the larger step.
pub(crate) fn nice_step(max: f64, ticks: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let base = max.log10().floor() as i32;
    let mut best = (f64::INFINITY, 1.0);
    for exp in base - 2..=base + 1 {
        for n in [1.0, 2.0, 2.5, 5.0] {
            let step = n * 10f64.powi(exp);
            let score = ((max / step).ceil() - ticks).abs();
            if score <= best.0 {
                best = (score, step);
            }
        }
    }
    best.1
}

/// A panel's plot area in pixels and its y axis.
pub(crate) struct Plot {
    pub(crate) left: f64,
    pub(crate) right: f64,
    pub(crate) top: f64,
    pub(crate) bottom: f64,
    pub(crate) axis: Axis,
}

impl Plot {
    /// The plot area of the panel at (`x0`, `y0`), its axis up to the largest measured value of
    /// `cells` — and the published values too, however far they are from the measured ones.
    fn of_panel(x0: f64, y0: f64, cells: &[Option<&Cell>], marks: &published::Marks) -> Self {
        let max = cells
            .iter()
            .flatten()
            .filter_map(|c| c.memory().map(|m| m.max))
            .chain(marks.iter().flatten().map(|(_, bytes)| *bytes))
            .fold(0.0, f64::max);
        Plot {
            left: x0 + PLOT[0],
            right: x0 + PLOT[1],
            top: y0 + PLOT[2],
            bottom: y0 + PLOT[3],
            axis: Axis::new(max),
        }
    }

    /// The y pixel of a value in bytes.
    pub(crate) fn y(&self, bytes: f64) -> f64 {
        self.bottom - (bytes / self.axis.per_unit / self.axis.top) * (self.bottom - self.top)
    }
}

fn panel(
    x0: f64,
    y0: f64,
    tasks: u64,
    probes: &[&str],
    marks: &published::Marks,
    summary: &Summary,
) -> String {
    let cells: Vec<Option<&Cell>> = probes.iter().map(|p| summary.cell(p, tasks)).collect();
    let plot = Plot::of_panel(x0, y0, &cells, marks);
    let mut out = format!("<g class=\"panel\" data-tasks=\"{tasks}\">\n");
    let title = format!("{} tasks", scale_label(tasks));
    let _ = writeln!(
        out,
        "{}",
        text(
            (plot.left + plot.right) / 2.0,
            y0 + 20.0,
            15,
            "middle",
            "bold",
            &title
        )
    );
    out.push_str(&y_axis(&plot));
    let slot = (plot.right - plot.left) / probes.len() as f64;
    for (k, cell) in cells.iter().enumerate() {
        let cx = plot.left + slot * (k as f64 + 0.5);
        let color = COLORS[k % COLORS.len()];
        out.push_str(&label(
            &plot,
            cx,
            probes[k],
            cell.map_or(0, |c| c.valid),
            cell.map_or(summary.repeats as usize, |c| summary.processes_of(c)),
        ));
        let bar_w = (slot * 0.6).min(56.0);
        if let Some(cell) = cell {
            out.push_str(&column(
                &plot,
                cx,
                bar_w,
                color,
                cell,
                summary.processes_of(cell) as u32,
            ));
        }
        // Right of the bar, inside the probe's slot.
        let mx =
            (cx + bar_w / 2.0 + published::DIAMOND + 2.0).min(cx + slot / 2.0 - published::DIAMOND);
        for (claim, bytes) in &marks[k] {
            out.push_str(&published::marker(
                &plot,
                cx - bar_w / 2.0,
                mx,
                claim,
                *bytes,
            ));
        }
    }
    let (l, r, b) = (plot.left, plot.right, plot.bottom);
    let _ = writeln!(
        out,
        "<line x1=\"{l:.1}\" y1=\"{b:.1}\" x2=\"{r:.1}\" y2=\"{b:.1}\" stroke=\"#333333\"/>"
    );
    out.push_str("</g>\n");
    out
}

pub(crate) fn y_axis(plot: &Plot) -> String {
    let (axis, left, right) = (&plot.axis, plot.left, plot.right);
    let mut out = String::new();
    let ticks = (axis.top / axis.step).round() as usize;
    for i in 0..=ticks {
        let v = axis.step * i as f64;
        let ty = plot.y(v * axis.per_unit);
        let _ = writeln!(
            out,
            "<line x1=\"{left:.1}\" y1=\"{ty:.1}\" x2=\"{right:.1}\" y2=\"{ty:.1}\" stroke=\"#e3e3e3\"/>"
        );
        let label = grouped(v, axis.decimals());
        let _ = writeln!(
            out,
            "{}",
            text(left - 6.0, ty + 4.0, 11, "end", "normal", &label)
        );
    }
    let (top, bottom) = (plot.top, plot.bottom);
    let _ = writeln!(
        out,
        "<line x1=\"{left:.1}\" y1=\"{top:.1}\" x2=\"{left:.1}\" y2=\"{bottom:.1}\" stroke=\"#333333\"/>"
    );
    let _ = writeln!(
        out,
        "{}",
        text(left - 6.0, top - 12.0, 11, "end", "bold", axis.unit)
    );
    out
}

/// The probe's name under its column, and how many processes are missing.
fn label(plot: &Plot, cx: f64, probe: &str, valid: usize, repeats: usize) -> String {
    let mut out = format!(
        "{}\n",
        text(cx, plot.bottom + 20.0, 13, "middle", "normal", probe)
    );
    if valid < repeats {
        let note = if valid == 0 {
            "no valid process".into()
        } else {
            format!("{valid} of {repeats} valid")
        };
        let note = text(cx, plot.bottom + 36.0, 11, "middle", "normal", &note);
        let _ = writeln!(
            out,
            "{}",
            note.replacen("<text", "<text fill=\"#aa3333\"", 1)
        );
    }
    out
}

/// A bar at the median, a dot per process jittered by repeat, and the median's value above.
fn column(plot: &Plot, cx: f64, bar_w: f64, color: &str, cell: &Cell, repeats: u32) -> String {
    let mut out = String::new();
    let Some(Memory { median, max, each }) = cell.memory() else {
        return out;
    };
    let (my, bottom, x) = (plot.y(median), plot.bottom, cx - bar_w / 2.0);
    let _ = writeln!(
        out,
        "<rect x=\"{x:.1}\" y=\"{my:.1}\" width=\"{bar_w:.1}\" height=\"{:.1}\" fill=\"{color}\" \
         fill-opacity=\"0.22\"/>",
        bottom - my
    );
    let _ = writeln!(
        out,
        "<line x1=\"{x:.1}\" y1=\"{my:.1}\" x2=\"{:.1}\" y2=\"{my:.1}\" stroke=\"{color}\" stroke-width=\"3\"/>",
        x + bar_w
    );
    let spacing = if repeats > 1 {
        (bar_w * 0.7 / f64::from(repeats - 1)).min(9.0)
    } else {
        0.0
    };
    for (repeat, value) in each {
        let dx = (f64::from(repeat) - f64::from(repeats + 1) / 2.0) * spacing;
        let _ = writeln!(
            out,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4.5\" fill=\"{color}\" stroke=\"#ffffff\" \
             stroke-width=\"1.2\"/>",
            cx + dx,
            plot.y(value)
        );
    }
    let label_y = plot.y(max).min(my) - 9.0;
    let decimals = if plot.axis.unit == "GiB" { 2 } else { 1 };
    let value = grouped(median / plot.axis.per_unit, decimals);
    let _ = writeln!(out, "{}", text(cx, label_y, 12, "middle", "bold", &value));
    out
}

pub(crate) fn text(x: f64, y: f64, size: u32, anchor: &str, weight: &str, content: &str) -> String {
    format!(
        "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" text-anchor=\"{anchor}\" font-weight=\"{weight}\">{}</text>",
        escape(content)
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::report::fixture;

    #[test]
    fn nice_axes() {
        assert_eq!(nice_step(28.5, 5.0), 5.0);
        assert_eq!(nice_step(2.8, 5.0), 0.5);
        assert_eq!(nice_step(410.0, 5.0), 100.0);
        assert_eq!(nice_step(45.0, 5.0), 10.0);
        assert_eq!(nice_step(0.0, 5.0), 1.0);
        let a = Axis::new(2.6 * GIB);
        assert_eq!((a.unit, a.step, a.top), ("GiB", 0.5, 3.0));
        let a = Axis::new(0.0);
        assert_eq!((a.unit, a.top), ("MiB", 1.0));
        assert_eq!(
            Axis {
                unit: "MiB",
                per_unit: MIB,
                top: 1.0,
                step: 0.25
            }
            .decimals(),
            2
        );
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn snapshot() {
        let (study, samples) = (fixture::study(), fixture::samples());
        let (summary, verdicts) = (fixture::summary(), fixture::verdicts());
        let input = fixture::input(&study, &samples, &summary, &verdicts);
        let svg = String::from_utf8(Figure.render(&input).unwrap()).unwrap();
        assert_eq!(
            svg.matches("<circle").count(),
            23,
            "a dot per valid process"
        );
        assert_eq!(svg.matches("class=\"panel\"").count(), 4);
        for c in &study.claims {
            let wanted = usize::from(matches!(c.stat, Stat::RssMedian) && c.tasks.is_some());
            let found = svg.matches(&format!("data-claim=\"{}\"", c.id)).count();
            assert_eq!(found, wanted, "{}", c.id);
        }
        insta::assert_snapshot!("figure_svg", svg);
    }
}
