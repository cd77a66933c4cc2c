//! An explanation as Markdown (a table of its rows under the finding) and as a tornado chart.

use std::fmt::Write as _;

use super::{Explanation, Row};
use crate::outputs::number;
use crate::outputs::verdict::Status;

/// The explanation as Markdown.
pub fn markdown(e: &Explanation) -> String {
    let unit = e.unit;
    let show = |v: Option<f64>| v.map_or("—".to_string(), |v| number::value(v, unit));
    // Rounded first, so that a change too small to show reads 0.0 %, not -0.0 %.
    let pct = |v: Option<f64>| {
        v.map_or("—".to_string(), |v| {
            format!("{:.1} %", (v * 1000.0).round() / 10.0 + 0.0)
        })
    };
    let mut out = format!(
        "# Explaining {}\n\n> {}\n\n",
        crate::text::markdown_code(&e.claim),
        crate::text::markdown(&e.text)
    );
    let _ = writeln!(
        out,
        "Explained run: {}. Sweep run: {} (its own archive holds every variant's manifest, \
         samples and environment).\n",
        crate::text::markdown_code(&e.explained_run),
        crate::text::markdown_code(&e.sweep_run)
    );
    let _ = writeln!(out, "**{}**\n", crate::text::markdown(&e.finding));
    if !e.warnings.is_empty() {
        out.push_str("Validity warnings of the sweeps (what may have touched their numbers):\n\n");
        for line in &e.warnings {
            let _ = writeln!(out, "- {}", crate::text::markdown(line));
        }
        out.push('\n');
    }
    if !e.skipped.is_empty() {
        out.push_str("Not swept, their images would take long to build here:\n\n");
        for line in &e.skipped {
            let _ = writeln!(out, "- {}", crate::text::markdown(line));
        }
        out.push('\n');
    }
    out.push_str("| Factor | Level | Measured | Spread | Change | Gap closed | Verdict |\n|---|---|---|---|---|---|---|\n");
    let _ = writeln!(
        out,
        "| published | — | {} | — | — | — | — |",
        show(Some(e.published))
    );
    let _ = writeln!(
        out,
        "| baseline | (the probe as in the run) | {} | {} | — | — | — |",
        show(e.baseline),
        pct(e.baseline_spread)
    );
    for r in &e.rows {
        let change = r.change.map_or("—".to_string(), |c| {
            let shown = number::value(c.abs(), unit);
            // No sign on a change that shows as zero.
            let zero = !shown.bytes().any(|b| (b'1'..=b'9').contains(&b));
            let sign = if zero {
                ""
            } else if c > 0.0 {
                "+"
            } else {
                "−"
            };
            match r.against {
                Some(b) => format!(
                    "{sign}{shown} (against its sweep's baseline {})",
                    number::value(b, unit)
                ),
                None => format!("{sign}{shown}"),
            }
        });
        let status = match &r.note {
            Some(n) if r.value.is_none() => {
                format!("{} ({})", r.status.label(), number::cell_text(n))
            }
            _ => r.status.label().to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {change} | {} | {status} |",
            number::cell_text(&r.factor),
            number::cell_text(&r.level),
            show(r.value),
            pct(r.spread),
            pct(r.closes)
        );
    }
    out.push_str(
        "\nSpread: (max − min) ÷ median of the cell's processes. Gap closed: the variant's change \
         divided by (published − baseline); 100 % reaches the published value, a negative share \
         moves away from it.\n\nFigure: [tornado.svg](tornado.svg)\n",
    );
    out
}

/// A tornado chart: a bar per variant from the baseline to its value, the published value as a line.
pub fn svg(e: &Explanation) -> String {
    let unit = e.unit;
    let rows: Vec<&Row> = e.rows.iter().filter(|r| r.value.is_some()).collect();
    let Some(base) = e.baseline else {
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"40\"><text x=\"10\" y=\"25\">baseline not measured</text></svg>\n".into();
    };
    let mut lo = base.min(e.published);
    let mut hi = base.max(e.published);
    for r in &rows {
        let v = r.value.unwrap_or(base);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 1e-3).max(1e-9);
    let (lo, hi) = (lo - pad, hi + pad);
    let (left, width, row_h) = (230.0, 460.0, 26.0);
    let x = |v: f64| left + (v - lo) / (hi - lo) * width;
    let height = 60.0 + row_h * rows.len() as f64;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n",
        left + width + 20.0
    );
    let _ = writeln!(
        out,
        "<text x=\"10\" y=\"18\" font-weight=\"bold\">{}: change against the baseline</text>",
        xml(&e.claim)
    );
    for (i, r) in rows.iter().enumerate() {
        let y = 34.0 + row_h * i as f64;
        let v = r.value.unwrap_or(base);
        let (a, b) = (x(base.min(v)), x(base.max(v)));
        let colour = if r.status == Status::Reproduced {
            "#2a7"
        } else {
            "#58a"
        };
        let _ = writeln!(
            out,
            "<text x=\"10\" y=\"{:.1}\">{} = {}</text>",
            y + 14.0,
            xml(&r.factor),
            xml(&r.level)
        );
        let _ = writeln!(
            out,
            "<rect x=\"{a:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{colour}\"><title>{}</title></rect>",
            (b - a).max(1.0),
            number::value(v, unit)
        );
    }
    let bottom = 34.0 + row_h * rows.len() as f64;
    for (v, label, colour) in [
        (base, "baseline", "#333"),
        (e.published, "published", "#c33"),
    ] {
        let _ = writeln!(
            out,
            "<line x1=\"{0:.1}\" y1=\"26\" x2=\"{0:.1}\" y2=\"{bottom:.1}\" stroke=\"{colour}\" stroke-dasharray=\"4 3\"/>\n<text x=\"{0:.1}\" y=\"{1:.1}\" fill=\"{colour}\" text-anchor=\"middle\">{label} {2}</text>",
            x(v),
            bottom + 16.0,
            xml(&number::value(v, unit))
        );
    }
    out.push_str("</svg>\n");
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
