//! The published values on `figure.svg`: a marker beside the bar for each claim with a single value
//! of the plotted statistic, and under the panels what the marker is and every claim that is not on
//! the figure (a range, a bound, a ratio, an order, another statistic, a scale not drawn), so that no
//! claim is dropped without a word.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{Plot, escape, text};
use crate::outputs::report::number::{self, grouped};
use crate::study::claim;
use crate::study::{Claim, Stat, Study};

/// Per probe of a panel, the claims with a published value of its memory statistic there, in bytes.
pub(super) type Marks<'a> = Vec<Vec<(&'a Claim, f64)>>;

pub(super) fn marks<'a>(study: &'a Study, probes: &[(&str, Stat)], tasks: u64) -> Marks<'a> {
    probes
        .iter()
        .map(|&(probe, stat)| claim::published(&study.claims, stat, probe, tasks))
        .collect()
}

/// Half the width of the published marker, px.
pub(super) const DIAMOND: f64 = 5.0;

/// A claim's published value: a dashed tick across the bar from `left` and a hollow diamond at `x`,
/// one element with the claim's id and its value as the article gives it in the tooltip.
pub(super) fn marker(plot: &Plot, left: f64, x: f64, claim: &Claim, bytes: f64) -> String {
    let y = plot.y(bytes);
    let mut title = format!(
        "published: {}",
        number::expected(&claim.expected, claim.unit)
    );
    if crate::outputs::verdict::unit_label(claim.unit) != plot.axis.unit {
        let decimals = if plot.axis.unit == "GiB" { 2 } else { 1 };
        let shown = grouped(bytes / plot.axis.per_unit, decimals);
        let _ = write!(title, " = {shown} {}", plot.axis.unit);
    }
    let _ = write!(title, " ({})", claim.id);
    let d = DIAMOND;
    format!(
        "<g class=\"published\" data-claim=\"{}\"><title>{}</title>\
         <line x1=\"{left:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#222222\" \
         stroke-dasharray=\"3 2\"/>{}</g>\n",
        escape(&claim.id),
        escape(&title),
        x - d,
        diamond(x, y)
    )
}

/// The hollow diamond of a published value, centred on (`x`, `y`).
fn diamond(x: f64, y: f64) -> String {
    let d = DIAMOND;
    format!(
        "<path d=\"M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z\" fill=\"#ffffff\" \
         stroke=\"#000000\" stroke-width=\"1.5\"/>",
        y - d,
        x + d,
        y + d,
        x - d
    )
}

/// The height of a line under the panels, px.
pub(super) const LINE: f64 = 16.0;
/// Lines the claims not on the figure may take by id before they are counted per statistic instead.
const MAX_LINES: usize = 3;
/// A generous width of one character of 11 px text, px, for wrapping.
const CHAR_W: f64 = 6.3;
/// Where the text of the marker's legend starts, right of the marker, px.
const INDENT: f64 = 2.0 * DIAMOND + 6.0;

/// One line under the panels.
pub(super) struct Line {
    /// Whether the line starts with the published marker it explains.
    marker: bool,
    /// Whether the line continues one that starts with the marker, and so starts where its text does.
    indent: bool,
    text: String,
}

impl Line {
    /// The line's SVG with its middle at height `y`.
    pub(super) fn render(&self, x: f64, y: f64) -> String {
        let mut out = String::new();
        let tx = if self.marker || self.indent {
            x + INDENT
        } else {
            x
        };
        if self.marker {
            out.push_str(&diamond(x + DIAMOND, y));
            out.push('\n');
        }
        let line = text(tx, y + 4.0, 11, "start", "normal", &self.text);
        out.push_str(&line.replacen("<text", "<text fill=\"#444444\"", 1));
        out.push('\n');
        out
    }
}

/// The lines under a figure `width` px wide on which the claims `placed` have a marker.
pub(super) fn footer(study: &Study, placed: &[&str], width: f64) -> Vec<Line> {
    let columns = (((width - 2.0 * super::MARGIN - 8.0) / CHAR_W) as usize).max(20);
    let mut out = Vec::new();
    if !placed.is_empty() {
        let legend = "published: a claim's value of the plotted statistic for that probe and \
                      scale (its id and value in the tooltip)";
        let lines = wrap(legend, columns - (INDENT / CHAR_W).ceil() as usize);
        out.extend(lines.into_iter().enumerate().map(|(i, text)| Line {
            marker: i == 0,
            indent: i > 0,
            text,
        }));
    }
    let placed: BTreeSet<&str> = placed.iter().copied().collect();
    // Statistic name → the ids of its claims not placed, in study order.
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for c in study
        .claims
        .iter()
        .filter(|c| !placed.contains(c.id.as_str()))
    {
        let stat = claim::name(c.stat);
        match groups.iter_mut().find(|(s, _)| *s == stat) {
            Some((_, ids)) => ids.push(&c.id),
            None => groups.push((stat, vec![&c.id])),
        }
    }
    if groups.is_empty() {
        return out;
    }
    let by_id: Vec<String> = groups
        .iter()
        .map(|(stat, ids)| format!("{stat}: {}", ids.join(", ")))
        .collect();
    let mut lines = wrap(
        &format!("Not on the figure — {}.", by_id.join("; ")),
        columns,
    );
    if lines.len() > MAX_LINES {
        let counted: Vec<String> = groups
            .iter()
            .map(|(stat, ids)| format!("{stat} ×{}", ids.len()))
            .collect();
        let note = format!(
            "Not on the figure — {} claims: {}; report.md judges each.",
            groups.iter().map(|(_, ids)| ids.len()).sum::<usize>(),
            counted.join(", ")
        );
        lines = wrap(&note, columns);
    }
    out.extend(lines.into_iter().map(|text| Line {
        marker: false,
        indent: false,
        text,
    }));
    out
}

/// `s` in lines of at most `columns` characters, broken at spaces (a longer word gets a line of its own).
fn wrap(s: &str, columns: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in s.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= columns => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::super::{Figure, HEADER_H, PLOT};
    use super::*;
    use crate::outputs::report::{Format, fixture};
    use crate::outputs::summary::{Cell, Summary};
    use crate::study::kind::{Fields, Kind};

    /// The figure of `study` over `summary`.
    fn render(study: &Study, summary: &Summary) -> String {
        let (samples, verdicts) = (fixture::samples(), fixture::verdicts());
        let input = fixture::input(study, &samples, summary, &verdicts);
        String::from_utf8(Figure.render(&input).unwrap()).unwrap()
    }

    /// The markers carrying claim `id`, and the y of each diamond's centre.
    fn markers(svg: &str, id: &str) -> Vec<f64> {
        let tag = format!("<g class=\"published\" data-claim=\"{id}\">");
        svg.match_indices(&tag)
            .map(|(at, _)| {
                let path = &svg[at..][svg[at..].find("<path d=\"M").unwrap() + 10..];
                let mut xy = path.split(['L', ' ']);
                let (_, top) = (xy.next(), xy.next().unwrap());
                top.parse::<f64>().unwrap() + DIAMOND
            })
            .collect()
    }

    fn claim(yaml: &str) -> Claim {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn a_published_value_is_one_marker_inside_the_axis() {
        let mut study = fixture::study();
        // Published far above what was measured at 10k, in another unit than the panel's.
        study.claims.push(claim(
            "{id: far, text: t, stat: rss_median, probe: go, tasks: 10000, expected: 2.56, \
             unit: GiB, tolerance: {relative: 0.05}}",
        ));
        study.claims.push(claim(
            "{id: ranked, text: t, stat: order, of: rss_median, tasks: 10000, \
             expected: [rust-tokio, go], unit: rank}",
        ));
        let svg = render(&study, &fixture::summary());
        let ys = markers(&svg, "far");
        assert_eq!(ys.len(), 1, "one marker for the claim");
        let (top, bottom) = (HEADER_H + PLOT[2], HEADER_H + PLOT[3]);
        assert!(
            (top..bottom).contains(&ys[0]),
            "{} in {top}..{bottom}",
            ys[0]
        );
        assert!(svg.contains("<title>published: 2.560 GiB (far)</title>"));
        let panel = &svg[svg.find("data-tasks=\"10000\"").unwrap()..];
        let panel = &panel[..panel.find("</g>\n<g class=\"panel\"").unwrap()];
        assert!(
            panel.contains("font-weight=\"bold\">GiB</text>"),
            "the axis reaches 2.56 GiB"
        );
        assert!(markers(&svg, "ranked").is_empty(), "an order has no marker");
        let note = &svg[svg.find("Not on the figure").unwrap()..];
        assert!(note.contains("order: ranked"), "{note}");
    }

    /// A cell of `probe` at `tasks` measured like the fixture's `like`, of `kind`.
    fn cell_like(like: &Cell, probe: &str, tasks: u64, kind: Kind) -> Cell {
        let mut cell = like.clone();
        (cell.probe, cell.tasks, cell.kind) = (probe.into(), tasks, kind);
        let measure = kind.measure();
        if let (Fields::Stats, Some(figure)) = (measure.fields(), measure.memory()) {
            let values = like.processes.iter().filter_map(|p| p.rss_median_bytes);
            let spread = crate::outputs::summary::Spread::of(values.collect()).unwrap();
            cell.stats.insert(figure.name.into(), spread);
        }
        cell
    }

    #[test]
    fn every_study_places_or_names_every_claim() {
        let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
        let like = fixture::summary().cells[0].clone();
        for entry in std::fs::read_dir(results).unwrap() {
            let file = entry.unwrap().path().join("study.yaml");
            if !file.is_file() {
                continue;
            }
            let study = Study::load(&file).unwrap();
            let mut summary = fixture::summary();
            summary.cells = study
                .probes
                .iter()
                .filter(|p| p.kind.measure().memory().is_some())
                .flat_map(|p| study.scales_of(p).iter().map(move |&n| (p, n)))
                .map(|(p, n)| cell_like(&like, &p.id, n, p.kind))
                .collect();
            let svg = render(&study, &summary);
            let (top, bottom) = (HEADER_H + PLOT[2], HEADER_H + PLOT[3]);
            let note: Vec<&str> = svg
                .split("<text fill=\"#444444\"")
                .skip(1)
                .flat_map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].split(' '))
                .map(|w| w.trim_end_matches([',', ';', '.']))
                .collect();
            let counted = note.join(" ").contains("report.md judges each");
            for c in &study.claims {
                let ys = markers(&svg, &c.id);
                let memory = study
                    .probe(&c.probe)
                    .and_then(|p| Some(p.kind.measure().memory()?.stat));
                let placeable = memory.is_some_and(|stat| {
                    c.tasks
                        .and_then(|n| claim::published_bytes(c, stat, &c.probe, n))
                        .is_some()
                });
                assert_eq!(ys.len(), usize::from(placeable), "{}: {}", study.id, c.id);
                assert!(ys.iter().all(|y| (top..bottom).contains(y)), "{}", c.id);
                let named = note.contains(&c.id.as_str());
                assert!(
                    placeable || named || counted,
                    "{}: {} is dropped",
                    study.id,
                    c.id
                );
            }
            assert_eq!(svg.matches("<g").count(), svg.matches("</g>").count());
        }
    }

    #[test]
    fn wraps_at_spaces() {
        assert_eq!(wrap("a bb ccc dddd", 6), ["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("toolongword x", 4), ["toolongword", "x"]);
    }
}
