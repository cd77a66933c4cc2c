//! The drawing primitives every figure shares: escaped text whose box is recorded, the palette, and
//! linear and logarithmic axes with round ticks. Fixed number formatting, so the same input always
//! gives the same bytes.

use std::fmt::Write as _;

use crate::outputs::number::grouped;

/// The font of every figure: no web font, the first one the viewer has.
/// (Latin first; then a CJK font of each platform, for labels in Chinese or Japanese.)
pub const FONT: &str = "font-family=\"DejaVu Sans, Helvetica, Arial, PingFang SC, Hiragino Sans GB, \
                        Microsoft YaHei, Noto Sans CJK SC, Source Han Sans SC, WenQuanYi Micro Hei, sans-serif\"";

/// Twelve colours, one per probe of a figure, never repeated within it. The first eight are Okabe &
/// Ito's colour-universal-design palette (Okabe & Ito 2008, "Color Universal Design — how to make
/// figures and presentations that are friendly to colorblind people"), reordered so that its pale
/// yellow comes last; the extension is three colours of Paul Tol's "muted" qualitative scheme
/// (indigo #332288, wine #882255, olive #999933; Tol 2021, "Colour Schemes", SRON/EPS/TN/09-002) and
/// a mid grey, chosen darker or lighter than their Okabe–Ito neighbours so that they stay apart by
/// lightness under deuteranopia, protanopia and tritanopia. Colour is never the only cue: every mark
/// of a probe sits in the probe's own labelled row or column.
pub const PALETTE: [&str; 12] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
    "#332288", "#882255", "#999933", "#888888",
];

/// The colour of the `i`-th probe of a figure; past twelve probes colours repeat, but labels still
/// name every mark.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The colour of a probe in every figure of a run, by its place among the study's probes, so that
/// a probe keeps one colour from figure to figure. `label` is the probe's id, or a row's label
/// that begins with it and a space (`go ns_per_op @ 10`); a label naming no probe of the study
/// takes the colour after theirs. Past twelve probes colours repeat, but labels still name every
/// mark.
pub fn probe_color(study: &crate::study::Study, label: &str) -> &'static str {
    let names = |id: &str| {
        label == id
            || label
                .strip_prefix(id)
                .is_some_and(|rest| rest.starts_with(' '))
    };
    // The longest id that names the label, so that `go` does not take `go-sleep`'s row.
    let at = (study.probes.iter().enumerate())
        .filter(|(_, p)| names(&p.id))
        .max_by_key(|(_, p)| p.id.len())
        .map_or(study.probes.len(), |(i, _)| i);
    color(at)
}

/// A generous width of one character, as a share of the font size (DejaVu Sans averages ~0.55).
const CHAR_EM: f64 = 0.62;

/// The width of `s` in `size` px text, px (an upper estimate): a wide character (CJK ideographs,
/// kana, Hangul, fullwidth forms) takes a whole em.
pub fn text_width(s: &str, size: f64) -> f64 {
    use unicode_width::UnicodeWidthChar;
    let em = |c: char| match c.width() {
        Some(2) => 1.0,
        _ => CHAR_EM,
    };
    s.chars().map(em).sum::<f64>() * size
}

#[test]
fn a_wide_character_takes_a_whole_em() {
    assert_eq!(text_width("ab", 10.0), 2.0 * CHAR_EM * 10.0);
    assert_eq!(text_width("内存", 10.0), 20.0);
}

/// An axis-aligned box, px.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    /// Whether the two boxes share any area (touching edges do not).
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
}

/// How a text is anchored on its point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// An SVG being drawn, with the box of every label placed on it.
#[derive(Default)]
pub struct Canvas {
    pub out: String,
    /// The box of every label, for the tests that no two overlap.
    pub labels: Vec<Rect>,
}

impl Canvas {
    /// Horizontal text with its baseline at `y`; recorded as a label.
    /// One grey line of small text per entry of `lines`, each `step` below the one before, the
    /// first `step` below `y`; returns the last line's baseline.
    pub fn grey_lines(
        &mut self,
        x: f64,
        mut y: f64,
        size: f64,
        step: f64,
        lines: &[String],
    ) -> f64 {
        for line in lines {
            y += step;
            self.text(x, y, size, Anchor::Start, "fill=\"#444444\"", line);
        }
        y
    }

    pub fn text(&mut self, x: f64, y: f64, size: f64, anchor: Anchor, style: &str, s: &str) {
        let w = text_width(s, size);
        let left = match anchor {
            Anchor::Start => x,
            Anchor::Middle => x - w / 2.0,
            Anchor::End => x - w,
        };
        self.labels.push(Rect {
            x: left,
            y: y - size * 0.8,
            w,
            h: size,
        });
        self.raw_text(x, y, size, anchor, style, s, "");
    }

    /// Text read bottom to top, ending at (`x`, `y`) (its top-right end at the point); recorded as a label.
    pub fn vertical(&mut self, x: f64, y: f64, size: f64, style: &str, s: &str) {
        let w = text_width(s, size);
        self.labels.push(Rect {
            x: x - size * 0.8,
            y,
            w: size,
            h: w,
        });
        let rotate = format!(" transform=\"rotate(-90 {x:.1} {y:.1})\"");
        self.raw_text(x, y, size, Anchor::End, style, s, &rotate);
    }

    /// Text that is not a label (a title or a tick), recorded all the same.
    #[allow(clippy::too_many_arguments)]
    fn raw_text(
        &mut self,
        x: f64,
        y: f64,
        size: f64,
        a: Anchor,
        style: &str,
        s: &str,
        extra: &str,
    ) {
        let anchor = match a {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let _ = writeln!(
            self.out,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size:.0}\" text-anchor=\"{anchor}\"{}{extra}>{}</text>",
            if style.is_empty() {
                String::new()
            } else {
                format!(" {style}")
            },
            escape(s)
        );
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, style: &str) {
        let _ = writeln!(
            self.out,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" {style}/>"
        );
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, style: &str) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" {style}/>",
            w.max(0.0),
            h.max(0.0)
        );
    }

    pub fn circle(&mut self, x: f64, y: f64, r: f64, style: &str) {
        let _ = writeln!(
            self.out,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r:.1}\" {style}/>"
        );
    }

    /// The hollow diamond of a published value, centred on (`x`, `y`).
    pub fn diamond(&mut self, x: f64, y: f64) {
        let d = DIAMOND;
        let _ = writeln!(
            self.out,
            "<path class=\"published\" d=\"M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z\" \
             fill=\"#ffffff\" stroke=\"#000000\" stroke-width=\"1.5\"/>",
            y - d,
            x + d,
            y + d,
            x - d
        );
    }

    /// The figure's SVG, `width` × `height` px, with a white background and `title` on top.
    pub fn finish(self, width: f64, height: f64, class: &str) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"figure {class}\" width=\"{width:.0}\" \
             height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" {FONT}>\n\
             <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{}</svg>\n",
            self.out
        )
    }
}

/// Half the width of the published-value diamond, px.
pub const DIAMOND: f64 = 5.0;

/// Text safe inside SVG and HTML: `&`, `<`, `>`, `"` and `'` escaped.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// `s` cut to `max` characters with an ellipsis, and whether it was cut.
pub fn abbreviate(s: &str, max: usize) -> (String, bool) {
    if s.chars().count() <= max {
        return (s.to_string(), false);
    }
    let head: String = s.chars().take(max.saturating_sub(1)).collect();
    (format!("{head}…"), true)
}

/// A round tick step (1, 2, 2.5 or 5 × 10ⁿ) giving the number of intervals up to `max` closest to
/// `ticks`; on a tie, the larger step.
pub fn nice_step(max: f64, ticks: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
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

/// A value axis: linear from zero, or logarithmic over whole decades; values in base units shown
/// in one display unit (`per_unit` base units each).
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    pub unit: String,
    pub per_unit: f64,
    /// Linear: (0, top, step) in the unit; logarithmic: (10^lo, 10^hi, 0) in the unit.
    pub lo: f64,
    pub hi: f64,
    pub step: f64,
    pub log: bool,
}

/// The smallest positive value (infinite when there is none) and the largest (at least 0).
pub fn span(values: &[f64]) -> (f64, f64) {
    let max = values.iter().copied().fold(0.0, f64::max);
    let min = values
        .iter()
        .copied()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    (min, max)
}

impl Scale {
    /// A linear axis from zero past `max` (base units).
    pub fn linear(max: f64, unit: &str, per_unit: f64) -> Self {
        let max = (max / per_unit) * 1.08;
        let step = nice_step(max, 5.0);
        let top = ((max / step).ceil() * step).max(step);
        Scale {
            unit: unit.into(),
            per_unit,
            lo: 0.0,
            hi: top,
            step,
            log: false,
        }
    }

    /// A logarithmic axis over the whole decades around [`min`, `max`] (base units, positive).
    pub fn log(min: f64, max: f64, unit: &str, per_unit: f64) -> Self {
        let lo = (min / per_unit).max(f64::MIN_POSITIVE).log10().floor();
        let hi = (max / per_unit)
            .max(f64::MIN_POSITIVE)
            .log10()
            .ceil()
            .max(lo + 1.0);
        Scale {
            unit: unit.into(),
            per_unit,
            lo,
            hi,
            step: 0.0,
            log: true,
        }
    }

    /// Linear from zero, unless the values span more than 20× (then logarithmic).
    pub fn fitting(values: &[f64], unit: &str, per_unit: f64) -> Self {
        let (min, max) = span(values);
        if min.is_finite() && max / min > 20.0 {
            Scale::log(min, max, unit, per_unit)
        } else {
            Scale::linear(max, unit, per_unit)
        }
    }

    /// Where `v` (base units) falls, 0 at the axis' start to 1 at its end; clamped.
    pub fn at(&self, v: f64) -> f64 {
        let u = v / self.per_unit;
        let f = if self.log {
            (u.max(10f64.powf(self.lo)).log10() - self.lo) / (self.hi - self.lo)
        } else {
            u / self.hi
        };
        f.clamp(0.0, 1.0)
    }

    /// The ticks: (position 0..1, label).
    pub fn ticks(&self) -> Vec<(f64, String)> {
        if self.log {
            return (self.lo as i32..=self.hi as i32)
                .map(|e| {
                    let v = 10f64.powi(e);
                    let label = grouped(v, (-e).max(0) as usize);
                    ((f64::from(e) - self.lo) / (self.hi - self.lo), label)
                })
                .collect();
        }
        let decimals = (0..4)
            .find(|&d| ((self.step * 10f64.powi(d as i32)).fract()).abs() < 1e-9)
            .unwrap_or(4);
        let n = (self.hi / self.step).round() as usize;
        (0..=n)
            .map(|i| {
                let v = self.step * i as f64;
                (v / self.hi, grouped(v, decimals))
            })
            .collect()
    }

    /// A value in the axis' unit, with the decimals its size needs (`12.3`, `1,960`, `0.045`).
    pub fn show(&self, v: f64) -> String {
        show(v / self.per_unit)
    }
}

/// A plain value with three significant digits at least (`7.75`, `1,960`, `0.0452`).
pub fn show(u: f64) -> String {
    let a = u.abs();
    let decimals = if a == 0.0 || a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        (2 - a.log10().floor() as i32).clamp(2, 6) as usize
    };
    grouped(u, decimals)
}

/// The display unit of values named like `*_bytes`, `*_ns`, `*_ms` or plain, for a figure whose
/// largest value is `max` (base units): (unit, base units per unit).
pub fn unit_of(name: &str, max: f64) -> (&'static str, f64) {
    use crate::outputs::number::{GIB, MIB};
    if name.ends_with("_bytes") || name == "bytes" {
        match max {
            m if m >= GIB => ("GiB", GIB),
            m if m >= MIB => ("MiB", MIB),
            m if m >= 1024.0 => ("KiB", 1024.0),
            _ => ("B", 1.0),
        }
    } else if name.ends_with("_ns") || name.starts_with("ns_") || name == "ns" {
        match max {
            m if m >= 1e9 => ("s", 1e9),
            m if m >= 1e6 => ("ms", 1e6),
            m if m >= 1e4 => ("µs", 1e3),
            _ => ("ns", 1.0),
        }
    } else if name.ends_with("_ms") {
        ("ms", 1.0)
    } else {
        ("", 1.0)
    }
}
