//! The row chart the timed, latency, reported and claim figures share: one row per probe (or side
//! of a claim), its name on the left, its marks on one value axis across, and its numbers — the
//! measured value and each published value with its claim — in a column on the right. Names,
//! marks and numbers never share space, so nothing overlaps however many rows there are.

use super::draw::{Anchor, Canvas, Scale, abbreviate, escape, text_width};
use super::{Design, Figure};

/// One mark on a row, in base units.
pub enum Mark {
    /// A bar from zero (or the axis' start) to the value.
    Bar(f64),
    /// One process: its median and, when known, its bootstrap interval [low, high].
    Process(f64, Option<[f64; 2]>),
    /// The median over processes: a tall tick.
    Median(f64),
    /// Percentiles, connected left to right, each with its shape (0 circle, 1 square, 2 triangle, 3 cross).
    Percentiles(Vec<(usize, f64)>),
}

/// One row of the chart.
pub struct Row {
    pub label: String,
    pub color: &'static str,
    pub marks: Vec<Mark>,
    /// Published values on this row: (a value, or both ends of a range, in base units; the text
    /// beside it in the right column).
    pub published: Vec<(Vec<f64>, String)>,
    /// The measured value as text for the right column; `None` when nothing was measured.
    pub value: Option<String>,
    /// Why the row has no marks (`no valid process`).
    pub missing: Option<String>,
}

/// What a row chart says above and below its rows.
pub struct Chart {
    pub id: String,
    pub design: Design,
    pub title: String,
    /// Lines under the title: what the marks are, the unit, a claim's finding.
    pub caption: Vec<String>,
    pub scale: Scale,
    pub rows: Vec<Row>,
    /// Lines under the chart.
    pub footer: Vec<String>,
}

const SIZE: f64 = 12.0;
const LINE: f64 = 16.0;
const PLOT_W: f64 = 460.0;
const MARGIN: f64 = 12.0;
/// Longest row name before it is abbreviated (the full name then goes under the chart).
const NAME_MAX: usize = 40;

/// The SVG of a row chart.
pub fn draw(chart: Chart) -> Figure {
    let mut c = Canvas::default();
    let mut footer = chart.footer;
    let names: Vec<(String, bool)> = chart
        .rows
        .iter()
        .map(|r| abbreviate(&r.label, NAME_MAX))
        .collect();
    for ((short, cut), row) in names.iter().zip(&chart.rows) {
        if *cut {
            footer.push(format!("{short} = {}", row.label));
        }
    }
    let name_w = names
        .iter()
        .map(|(n, _)| text_width(n, SIZE))
        .fold(60.0, f64::max);
    let right_lines = |r: &Row| -> Vec<String> {
        let mut lines: Vec<String> = r.value.iter().cloned().collect();
        lines.extend(r.published.iter().map(|(_, t)| format!("◇ {t}")));
        lines.extend(r.missing.iter().cloned());
        lines
    };
    let right_w = chart
        .rows
        .iter()
        .flat_map(right_lines)
        .map(|l| text_width(&l, SIZE - 1.0))
        .fold(120.0, f64::max);
    let left = MARGIN + name_w + 10.0;
    let right = left + PLOT_W;
    let width = (right + 14.0 + right_w + MARGIN).max(
        MARGIN * 2.0
            + chart
                .caption
                .iter()
                .chain([&chart.title])
                .map(|l| text_width(l, SIZE))
                .fold(0.0, f64::max),
    );
    let mut y = MARGIN + 16.0;
    c.text(
        MARGIN,
        y,
        15.0,
        Anchor::Start,
        "font-weight=\"bold\"",
        &chart.title,
    );
    y = c.grey_lines(MARGIN, y, SIZE - 1.0, LINE, &chart.caption);
    y += LINE + 8.0;
    // The unit over the value axis.
    let unit = if chart.scale.unit.is_empty() {
        String::new()
    } else if chart.scale.log {
        format!("{} (log scale)", chart.scale.unit)
    } else {
        chart.scale.unit.clone()
    };
    if !unit.is_empty() {
        c.text(
            left,
            y,
            SIZE - 1.0,
            Anchor::Start,
            "font-weight=\"bold\"",
            &unit,
        );
    }
    y += 6.0;
    let top = y;
    let xs = |v: f64| left + chart.scale.at(v) * PLOT_W;
    // Row bands first, then ticks on top of them.
    let mut bands = Vec::new();
    for row in &chart.rows {
        let lines = right_lines(row).len().max(processes(row)).max(1);
        let h = LINE * lines as f64 + 8.0;
        bands.push((y, h));
        y += h;
    }
    let bottom = y;
    for (pos, label) in chart.scale.ticks() {
        let x = left + pos * PLOT_W;
        c.line(x, top, x, bottom, "stroke=\"#e3e3e3\"");
        c.text(
            x,
            bottom + 14.0,
            SIZE - 2.0,
            Anchor::Middle,
            "fill=\"#333333\"",
            &label,
        );
    }
    for (i, ((row, (name, _)), (y0, h))) in chart.rows.iter().zip(&names).zip(&bands).enumerate() {
        if i % 2 == 1 {
            c.rect(left, *y0, PLOT_W, *h, "fill=\"#f6f6f6\"");
        }
        let mid = y0 + h / 2.0;
        c.out.push_str(&format!(
            "<g class=\"row\" data-row=\"{}\">\n",
            escape(&row.label)
        ));
        c.text(left - 8.0, mid + 4.0, SIZE, Anchor::End, "", name);
        marks(&mut c, row, &xs, *y0, *h, left);
        for v in row.published.iter().flat_map(|(v, _)| v) {
            c.line(
                xs(*v),
                y0 + 2.0,
                xs(*v),
                y0 + h - 2.0,
                "stroke=\"#222222\" stroke-dasharray=\"3 2\"",
            );
            c.diamond(xs(*v), mid);
        }
        let mut ty = mid + 4.0 - (right_lines(row).len() as f64 - 1.0) * LINE / 2.0;
        for (k, line) in right_lines(row).iter().enumerate() {
            let style = if k == 0 && row.value.is_some() {
                "font-weight=\"bold\""
            } else if row.missing.as_ref() == Some(line) {
                "fill=\"#aa3333\""
            } else {
                "fill=\"#333333\""
            };
            c.text(right + 14.0, ty, SIZE - 1.0, Anchor::Start, style, line);
            ty += LINE;
        }
        c.out.push_str("</g>\n");
    }
    c.line(left, top, left, bottom, "stroke=\"#333333\"");
    c.line(left, bottom, right, bottom, "stroke=\"#333333\"");
    let y = c.grey_lines(MARGIN, bottom + 22.0, SIZE - 1.0, LINE, &footer);
    let height = y + MARGIN;
    let labels = c.labels.clone();
    Figure {
        id: chart.id,
        design: chart.design,
        title: chart.title,
        svg: c.finish(width, height, chart.design.class()),
        labels,
    }
}

/// How many process lines a row's marks need.
fn processes(row: &Row) -> usize {
    row.marks
        .iter()
        .filter(|m| matches!(m, Mark::Process(..)))
        .count()
}

fn marks(c: &mut Canvas, row: &Row, xs: &dyn Fn(f64) -> f64, y0: f64, h: f64, left: f64) {
    let color = row.color;
    let n = processes(row);
    let mut k = 0;
    for m in &row.marks {
        match m {
            Mark::Bar(v) => {
                let x = xs(*v);
                c.rect(
                    left,
                    y0 + 4.0,
                    x - left,
                    h - 8.0,
                    &format!("fill=\"{color}\" fill-opacity=\"0.35\" stroke=\"{color}\""),
                );
            }
            Mark::Process(v, interval) => {
                let y = y0 + 4.0 + (h - 8.0) * (k as f64 + 0.5) / n as f64;
                k += 1;
                if let Some([lo, hi]) = interval {
                    c.line(
                        xs(*lo),
                        y,
                        xs(*hi),
                        y,
                        &format!("stroke=\"{color}\" stroke-width=\"2\""),
                    );
                    for e in [lo, hi] {
                        c.line(
                            xs(*e),
                            y - 4.0,
                            xs(*e),
                            y + 4.0,
                            &format!("stroke=\"{color}\" stroke-width=\"1.5\""),
                        );
                    }
                }
                c.circle(
                    xs(*v),
                    y,
                    4.0,
                    &format!("fill=\"{color}\" stroke=\"#ffffff\" stroke-width=\"1\""),
                );
            }
            Mark::Median(v) => {
                let x = xs(*v);
                c.line(
                    x,
                    y0 + 1.0,
                    x,
                    y0 + h - 1.0,
                    &format!("stroke=\"{color}\" stroke-width=\"3\""),
                );
            }
            Mark::Percentiles(points) => {
                let y = y0 + h / 2.0;
                let path: Vec<String> = points
                    .iter()
                    .map(|(_, v)| format!("{:.1},{y:.1}", xs(*v)))
                    .collect();
                c.out.push_str(&format!(
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>\n",
                    path.join(" ")
                ));
                for (shape, v) in points {
                    c.out.push_str(&shape_at(*shape, xs(*v), y, color));
                }
            }
        }
    }
}

/// A percentile's marker: 0 circle, 1 square, 2 triangle, 3 cross; centred on (`x`, `y`).
pub fn shape_at(shape: usize, x: f64, y: f64, color: &str) -> String {
    let r = 4.5;
    let style = format!("fill=\"{color}\" stroke=\"#ffffff\" stroke-width=\"1\"");
    match shape {
        0 => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r:.1}\" {style}/>\n"),
        1 => format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" {style}/>\n",
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        2 => format!(
            "<path d=\"M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z\" {style}/>\n",
            y - r - 1.0,
            x + r + 1.0,
            y + r,
            x - r - 1.0,
            y + r
        ),
        _ => format!(
            "<path d=\"M{:.1} {:.1}L{:.1} {:.1}M{:.1} {:.1}L{:.1} {:.1}\" stroke=\"{color}\" stroke-width=\"3\"/>\n",
            x - r,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r,
            x + r,
            y - r
        ),
    }
}
