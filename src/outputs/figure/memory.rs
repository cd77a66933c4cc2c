//! The memory figure (`figure.svg`): memory by scale. One panel per scale, each with its own y axis
//! from zero but one unit for the whole figure; a column per probe with a dot per valid process
//! (spread by repeat), a bar at the median and its value above; a hollow diamond beside the bar at
//! each claim's published value of the plotted statistic, numbered under the axis and named with its
//! value under the panels. Columns widen with the probes, names turn vertical when they do not fit
//! across, and panels wrap into rows, so 12 probes stay readable.

use std::collections::BTreeSet;

use super::draw::{Anchor, Canvas, DIAMOND, Scale, abbreviate, probe_color, show, text_width};
use super::{Design, Figure, Input};
use crate::outputs::number::{GIB, MIB, scale_label};
use crate::outputs::summary::{Cell, Memory, Summary};
use crate::study::claim;
use crate::study::kind::Kind;
use crate::study::{Claim, Stat, Study};

const MARGIN: f64 = 10.0;
const HEADER_H: f64 = 66.0;
const PLOT_H: f64 = 240.0;
/// Left of the plot in a panel (tick labels), and right of it.
const PAD_L: f64 = 62.0;
const PAD_R: f64 = 14.0;
const MIN_PANEL_W: f64 = 250.0;
/// The narrowest column per probe, px: room for its dots and a value label.
const MIN_SLOT: f64 = 50.0;
/// The widest a figure grows before its panels wrap into rows, px.
const MAX_W: f64 = 1120.0;
const NAME: f64 = 12.0;
const NAME_MAX: usize = 32;
const LINE: f64 = 16.0;

/// The memory figure, `None` when no probe has a memory figure.
pub fn figure(input: &Input) -> Option<Figure> {
    let probes = probes(input.study);
    if probes.is_empty() {
        return None;
    }
    Some(draw(input, &probes))
}

/// The study's title over the figure.
fn heading(c: &mut Canvas, study: &Study) {
    c.text(
        MARGIN + 4.0,
        26.0,
        17.0,
        Anchor::Start,
        "font-weight=\"bold\"",
        &study.title,
    );
}

/// The figure of a study without a memory probe: its title and a line saying so.
pub fn empty(study: &Study) -> Figure {
    let mut c = Canvas::default();
    heading(&mut c, study);
    c.text(
        MARGIN + 4.0,
        48.0,
        12.0,
        Anchor::Start,
        "",
        "No probe of this study measures memory; see report.html for its figures.",
    );
    let labels = c.labels.clone();
    Figure {
        id: "memory".into(),
        design: Design::Memory,
        title: study.title.clone(),
        svg: c.finish(620.0, 66.0, "memory"),
        labels,
    }
}

/// The probes with a memory figure and the statistic a claim names for it.
fn probes(study: &Study) -> Vec<(&str, Stat)> {
    study
        .probes
        .iter()
        .filter_map(|p| Some((p.id.as_str(), p.kind.measure().memory()?.stat)))
        .collect()
}

/// The probes' names as shown: whole up to [`NAME_MAX`] characters, else abbreviated (with a key
/// under the figure); when two abbreviations would read the same, `P1`, `P2` … for every probe.
fn names(probes: &[(&str, Stat)]) -> Vec<(String, bool)> {
    let names: Vec<(String, bool)> = probes
        .iter()
        .map(|(p, _)| abbreviate(p, NAME_MAX))
        .collect();
    let distinct: BTreeSet<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
    if distinct.len() == names.len() {
        return names;
    }
    (1..=names.len()).map(|i| (format!("P{i}"), true)).collect()
}

/// What the dots and bars are: the caption of the later memory kind when kinds mix.
fn caption(study: &Study) -> &'static str {
    let kinds: BTreeSet<Kind> = study.probes.iter().map(|p| p.kind).collect();
    kinds
        .into_iter()
        .rev()
        .chain([Kind::default()])
        .find_map(|k| k.measure().memory())
        .map_or("", |m| m.caption)
}

/// A published value on the figure: its number under the axis and its words under the panels.
struct Mark<'a> {
    claim: &'a Claim,
    bytes: f64,
}

/// The panel columns of a row: the run's summary, or each hardware class's (labelled) when the
/// samples come from more than one.
fn columns<'a>(input: &Input<'a>) -> Vec<(Option<&'a str>, &'a Summary)> {
    match input.classes.len() {
        0 | 1 => vec![(None, input.summary)],
        _ => (input.classes.iter())
            .map(|(label, _, s)| (Some(label.as_str()), s))
            .collect(),
    }
}

/// The largest value plotted at `tasks` in `summary`, bytes.
fn panel_max(probes: &[(&str, Stat)], summary: &Summary, tasks: u64) -> f64 {
    probes
        .iter()
        .filter_map(|(p, _)| summary.cell(p, tasks)?.memory().map(|m| m.max))
        .fold(0.0, f64::max)
}

/// The least top of the y axis of a row's panels: with a column per class, the row's largest
/// value, so that its columns share one y scale and the classes compare; else none.
fn floor(columns: &[(Option<&str>, &Summary)], probes: &[(&str, Stat)], tasks: u64) -> f64 {
    match columns.len() {
        1 => 0.0,
        _ => (columns.iter())
            .map(|(_, s)| panel_max(probes, s, tasks))
            .fold(0.0, f64::max),
    }
}

/// Per scale, per probe: the claims with a published value of its statistic there.
fn marks<'a>(study: &'a Study, probes: &[(&str, Stat)], scales: &[u64]) -> Vec<Vec<Vec<Mark<'a>>>> {
    scales
        .iter()
        .map(|&n| {
            probes
                .iter()
                .map(|&(p, stat)| {
                    claim::published(&study.claims, stat, p, n)
                        .into_iter()
                        .map(|(claim, bytes)| Mark { claim, bytes })
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// One unit for the whole figure: GiB only when every panel reaches 1 GiB, so that no panel reads
/// 0.00.
fn unit(probes: &[(&str, Stat)], summary: &Summary, scales: &[u64]) -> (&'static str, f64) {
    match scales.iter().all(|&n| panel_max(probes, summary, n) >= GIB) {
        true => ("GiB", GIB),
        false => ("MiB", MIB),
    }
}

/// The grey lines under the panels, the first at `y`; returns the baseline after the last.
fn lines(c: &mut Canvas, mut y: f64, footer: &[String]) -> f64 {
    for line in footer {
        c.text(
            MARGIN + 4.0,
            y,
            11.0,
            Anchor::Start,
            "fill=\"#444444\"",
            line,
        );
        y += LINE;
    }
    y
}

fn draw(input: &Input, probes: &[(&str, Stat)]) -> Figure {
    let (study, summary) = (input.study, input.summary);
    let scales: Vec<u64> = study
        .all_scales()
        .into_iter()
        .filter(|&n| probes.iter().any(|(p, _)| summary.cell(p, n).is_some()))
        .collect();
    let marks = marks(study, probes, &scales);
    let columns = columns(input);
    let (unit, per) = unit(probes, summary, &scales);
    let n = probes.len().max(1) as f64;
    let names = names(probes);
    let widest = names
        .iter()
        .map(|(s, _)| text_width(s, NAME))
        .fold(0.0, f64::max);
    let slot = ((MIN_PANEL_W - PAD_L - PAD_R) / n).max(MIN_SLOT);
    let vertical = widest > slot - 6.0;
    let names_h = if vertical { widest + 8.0 } else { 20.0 };
    let panel_w = PAD_L + PAD_R + slot * n;
    // With classes, a row per scale and a column per class; else the scales wrap into rows.
    let per_row = match columns.len() {
        1 => (((MAX_W - 2.0 * MARGIN) / panel_w).floor() as usize).max(1),
        k => k,
    };
    let panels = scales.len() * columns.len();
    let rows = panels.div_ceil(per_row).max(1);
    let panel_h = 30.0 + PLOT_H + 22.0 + names_h + 24.0;
    let width = 2.0 * MARGIN + panel_w * per_row.min(panels.max(1)) as f64;
    let width = width
        .max(2.0 * MARGIN + 8.0 + text_width(caption(study), 12.0))
        .max(2.0 * MARGIN + 8.0 + text_width(&study.title, 17.0));
    let mut c = Canvas::default();
    heading(&mut c, study);
    c.text(MARGIN + 4.0, 48.0, 12.0, Anchor::Start, "", caption(study));
    let mut footer: Vec<String> = Vec::new();
    let mut numbered: Vec<&str> = Vec::new();
    for (row, (&tasks, marks)) in scales.iter().zip(&marks).enumerate() {
        let floor = floor(&columns, probes, tasks);
        for (col, &(class, summary)) in columns.iter().enumerate() {
            let i = row * columns.len() + col;
            let p = Panel {
                x0: MARGIN + panel_w * (i % per_row) as f64,
                y0: HEADER_H + panel_h * (i / per_row) as f64,
                slot,
                vertical,
                unit,
                per,
                names: &names,
                class,
                floor,
            };
            let mut numbering = Numbering {
                numbered: &mut numbered,
                footer: &mut footer,
            };
            let at = (tasks, summary);
            p.draw(&mut c, at, probes, marks, &mut numbering, input);
        }
    }
    for ((short, cut), (id, _)) in names.iter().zip(probes) {
        if *cut {
            footer.push(format!("{short} = {id}"));
        }
    }
    for (label, class, _) in input.classes.iter().filter(|_| columns.len() > 1) {
        footer.push(format!("class {label} = {class}"));
    }
    let y = lines(&mut c, HEADER_H + panel_h * rows as f64, &footer);
    let labels = c.labels.clone();
    Figure {
        id: "memory".into(),
        design: Design::Memory,
        title: study.title.clone(),
        svg: c.finish(width.max(620.0), y + MARGIN, "memory"),
        labels,
    }
}

struct Panel<'a> {
    x0: f64,
    y0: f64,
    slot: f64,
    vertical: bool,
    unit: &'static str,
    per: f64,
    names: &'a [(String, bool)],
    /// The hardware class's label, when the figure has a column per class.
    class: Option<&'a str>,
    /// The least top of the y axis, bytes: the row's largest value when its columns share it.
    floor: f64,
}

/// A panel's plot area, px, and its y scale.
struct Plot {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    scale: Scale,
}

impl Plot {
    /// The y of `bytes`, px.
    fn y(&self, bytes: f64) -> f64 {
        self.bottom - self.scale.at(bytes) * PLOT_H
    }
}

/// The footer's numbering of published values, shared by every panel of the figure.
struct Numbering<'c, 'f> {
    numbered: &'f mut Vec<&'c str>,
    footer: &'f mut Vec<String>,
}

impl Panel<'_> {
    fn draw<'c>(
        &self,
        c: &mut Canvas,
        (tasks, summary): (u64, &Summary),
        probes: &[(&str, Stat)],
        marks: &[Vec<Mark<'c>>],
        numbering: &mut Numbering<'c, '_>,
        input: &Input,
    ) {
        let cells: Vec<Option<&Cell>> =
            probes.iter().map(|(p, _)| summary.cell(p, tasks)).collect();
        let max = cells
            .iter()
            .flatten()
            .filter_map(|c| c.memory().map(|m| m.max))
            .chain(marks.iter().flatten().map(|m| m.bytes))
            .fold(self.floor, f64::max);
        let left = self.x0 + PAD_L;
        let top = self.y0 + 30.0;
        let plot = Plot {
            left,
            right: left + self.slot * probes.len() as f64,
            top,
            bottom: top + PLOT_H,
            scale: Scale::linear(max, self.unit, self.per),
        };
        self.frame(c, tasks, &plot);
        for (k, cell) in cells.iter().enumerate() {
            let cx = left + self.slot * (k as f64 + 0.5);
            let bar_w = (self.slot * 0.55).min(48.0);
            if let Some(m) = cell.and_then(|c| c.memory()) {
                let repeats = cell.map_or(1, |c| summary.processes_of(c));
                let color = probe_color(input.study, probes[k].0);
                column(c, &|b| plot.y(b), cx, bar_w, color, &m, repeats);
                self.value(c, cx, plot.y(m.max).min(plot.y(m.median)) - 8.0, m.median);
            }
            let at = (cx, bar_w, tasks, probes[k].0);
            self.published(c, &plot, at, &marks[k], numbering, input);
            let valid = cell.map_or(0, |c| c.valid);
            let planned = cell.map_or(summary.repeats as usize, |c| summary.processes_of(c));
            self.name(c, cx, plot.bottom, k, (valid, planned));
        }
        c.line(
            left,
            plot.bottom,
            plot.right,
            plot.bottom,
            "stroke=\"#333333\"",
        );
        c.out.push_str("</g>\n");
    }

    /// The panel's group, title, ticks and y axis.
    fn frame(&self, c: &mut Canvas, tasks: u64, plot: &Plot) {
        let (left, right) = (plot.left, plot.right);
        let (data, title) = match self.class {
            None => (String::new(), format!("{} tasks", scale_label(tasks))),
            Some(l) => (
                format!(" data-class=\"{l}\""),
                format!("{} tasks · class {l}", scale_label(tasks)),
            ),
        };
        c.out.push_str(&format!(
            "<g class=\"panel\" data-tasks=\"{tasks}\"{data}>\n"
        ));
        c.text(
            (left + right) / 2.0,
            self.y0 + 16.0,
            15.0,
            Anchor::Middle,
            "font-weight=\"bold\"",
            &title,
        );
        for (pos, label) in plot.scale.ticks() {
            let ty = plot.bottom - pos * PLOT_H;
            c.line(left, ty, right, ty, "stroke=\"#e3e3e3\"");
            c.text(left - 6.0, ty + 4.0, 11.0, Anchor::End, "", &label);
        }
        c.line(left, plot.top, left, plot.bottom, "stroke=\"#333333\"");
        c.text(
            left - 6.0,
            plot.top - 10.0,
            11.0,
            Anchor::End,
            "font-weight=\"bold\"",
            self.unit,
        );
    }

    /// The median's value above its bar, turned vertical when it does not fit across.
    fn value(&self, c: &mut Canvas, cx: f64, vy: f64, median: f64) {
        let value = show(median / self.per);
        if text_width(&value, 11.0) > self.slot - 4.0 {
            let w = text_width(&value, 11.0);
            c.vertical(cx + 4.0, vy - w, 11.0, "font-weight=\"bold\"", &value);
        } else {
            c.text(cx, vy, 11.0, Anchor::Middle, "font-weight=\"bold\"", &value);
        }
    }

    /// The published values: a dashed tick across the bar and a diamond right of it, numbered under
    /// the axis and named in the footer the first time.
    fn published<'c>(
        &self,
        c: &mut Canvas,
        plot: &Plot,
        (cx, bar_w, tasks, probe): (f64, f64, u64, &str),
        marks: &[Mark<'c>],
        n: &mut Numbering<'c, '_>,
        input: &Input,
    ) {
        let mut refs = Vec::new();
        for mark in marks {
            let (py, mx) = (plot.y(mark.bytes), cx + bar_w / 2.0 + DIAMOND + 1.0);
            c.line(
                cx - bar_w / 2.0,
                py,
                mx - DIAMOND,
                py,
                "stroke=\"#222222\" stroke-dasharray=\"3 2\"",
            );
            c.diamond(mx, py);
            let number = match n.numbered.iter().position(|id| *id == mark.claim.id) {
                Some(i) => i + 1,
                None => {
                    n.numbered.push(&mark.claim.id);
                    let status = input
                        .verdicts
                        .iter()
                        .find(|v| v.claim == mark.claim.id)
                        .map(|v| format!(" · {}", v.status_label()))
                        .unwrap_or_default();
                    n.footer.push(format!(
                        "◇{} {probe} at {}: published {} · {}{status}",
                        n.numbered.len(),
                        scale_label(tasks),
                        crate::outputs::number::expected(&mark.claim.expected, mark.claim.unit),
                        mark.claim.id
                    ));
                    n.numbered.len()
                }
            };
            refs.push(format!("◇{number}"));
        }
        if !refs.is_empty() {
            let (s, _) = abbreviate(&refs.join(" "), (self.slot / 7.0) as usize);
            c.text(cx, plot.bottom + 15.0, 10.0, Anchor::Middle, "", &s);
        }
    }

    /// The probe's name under its column, and how many of its processes were valid when not all.
    fn name(
        &self,
        c: &mut Canvas,
        cx: f64,
        bottom: f64,
        k: usize,
        (valid, planned): (usize, usize),
    ) {
        let (name, _) = &self.names[k];
        let ny = bottom + 30.0;
        if self.vertical {
            c.vertical(cx + 4.0, ny - 10.0, NAME, "", name);
        } else {
            c.text(cx, ny, NAME, Anchor::Middle, "", name);
        }
        if valid < planned {
            let note = if valid == 0 {
                "none valid".to_string()
            } else {
                format!("{valid}/{planned} ok")
            };
            let ly = bottom
                + 22.0
                + if self.vertical {
                    text_width(name, NAME) + 22.0
                } else {
                    24.0
                };
            c.text(cx, ly, 10.0, Anchor::Middle, "fill=\"#aa3333\"", &note);
        }
    }
}

/// A bar at the median, a dot per process spread by repeat.
fn column(
    c: &mut Canvas,
    y: &dyn Fn(f64) -> f64,
    cx: f64,
    bar_w: f64,
    colour: &str,
    m: &Memory,
    repeats: usize,
) {
    let (my, x) = (y(m.median), cx - bar_w / 2.0);
    let bottom = y(0.0);
    c.rect(
        x,
        my,
        bar_w,
        bottom - my,
        &format!("fill=\"{colour}\" fill-opacity=\"0.22\""),
    );
    c.line(
        x,
        my,
        x + bar_w,
        my,
        &format!("stroke=\"{colour}\" stroke-width=\"3\""),
    );
    let repeats = repeats.max(1) as f64;
    let spacing = if repeats > 1.0 {
        (bar_w * 0.7 / (repeats - 1.0)).min(9.0)
    } else {
        0.0
    };
    for (repeat, value) in &m.each {
        let dx = (f64::from(*repeat) - (repeats + 1.0) / 2.0) * spacing;
        c.circle(
            cx + dx,
            y(*value),
            4.0,
            &format!("fill=\"{colour}\" stroke=\"#ffffff\" stroke-width=\"1.2\""),
        );
    }
}
