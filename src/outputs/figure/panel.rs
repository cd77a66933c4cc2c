//! The panel primitives of the comparison figure (`compare.svg`): a panel's plot area, its y axis
//! in MiB or GiB from zero, and plain text. The run's own figures use `draw` and `rows`.

use std::fmt::Write as _;

use super::draw::escape;
use crate::outputs::number::{GIB, MIB, grouped};

pub(crate) const PANEL_W: f64 = 250.0;
pub(crate) const PANEL_H: f64 = 350.0;
pub(crate) const HEADER_H: f64 = 66.0;
pub(crate) const MARGIN: f64 = 10.0;
/// Plot area inside a panel: left, right, top, bottom offsets from the panel's corner.
pub(crate) const PLOT: [f64; 4] = [62.0, PANEL_W - 14.0, 48.0, PANEL_H - 56.0];
pub(crate) use super::draw::FONT;
pub(crate) use super::draw::PALETTE as COLORS;

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

pub(crate) use super::draw::nice_step;

/// A panel's plot area in pixels and its y axis.
pub(crate) struct Plot {
    pub(crate) left: f64,
    pub(crate) right: f64,
    pub(crate) top: f64,
    pub(crate) bottom: f64,
    pub(crate) axis: Axis,
}

impl Plot {
    /// The y pixel of a value in bytes.
    pub(crate) fn y(&self, bytes: f64) -> f64 {
        self.bottom - (bytes / self.axis.per_unit / self.axis.top) * (self.bottom - self.top)
    }
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

pub(crate) fn text(x: f64, y: f64, size: u32, anchor: &str, weight: &str, content: &str) -> String {
    format!(
        "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" text-anchor=\"{anchor}\" font-weight=\"{weight}\">{}</text>",
        escape(content)
    )
}
