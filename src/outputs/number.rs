//! Number formatting shared by every format: fixed decimals, thousands separators, units. Output is
//! deterministic: the same value always gives the same text.

use crate::outputs::verdict::{Measured, unit_label};
use crate::study::{Expected, Unit};

/// Bytes per MiB.
pub const MIB: f64 = 1024.0 * 1024.0;
/// Bytes per GiB.
pub const GIB: f64 = 1024.0 * MIB;

/// `v` with `decimals` decimals and `,` between thousands; never `-0`.
pub fn grouped(v: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, v.abs());
    let negative = v < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0');
    let (int, frac) = text
        .split_once('.')
        .map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    if negative { format!("-{out}") } else { out }
}

/// Decimals used for a value in a unit: bytes as whole numbers when whole, else one decimal.
fn decimals(v: f64, unit: Unit) -> usize {
    match unit {
        Unit::GiB | Unit::Times => 3,
        Unit::MiB
        | Unit::KiB
        | Unit::Kb
        | Unit::Mb
        | Unit::Percent
        | Unit::Ns
        | Unit::Us
        | Unit::Ms
        | Unit::S => 2,
        Unit::B | Unit::Count | Unit::Rank if v.fract() == 0.0 => 0,
        Unit::B | Unit::Count | Unit::Rank => 1,
    }
}

/// A number in a unit without the unit (`2,619.10`).
pub fn number(v: f64, unit: Unit) -> String {
    grouped(v, decimals(v, unit))
}

/// A value with its unit (`2.537 GiB`, `85.70 %`, `13.200×`).
pub fn value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Times => format!("{}×", number(v, unit)),
        Unit::Count | Unit::Rank => number(v, unit),
        _ => format!("{} {}", number(v, unit), unit_label(unit)),
    }
}

/// A signed difference with its unit (`+0.012 GiB`, `-19.4 B`); percentages in points (`-0.20 pp`).
pub fn signed(v: f64, unit: Unit) -> String {
    let text = match unit {
        Unit::Percent => format!("{} pp", number(v, unit)),
        _ => value(v, unit),
    };
    let zero = !text.chars().any(|c| c.is_ascii_digit() && c != '0');
    if v > 0.0 && !zero {
        format!("+{text}")
    } else {
        text
    }
}

/// A published value or range with its unit (`2,619.10–2,620.82 MiB`).
pub fn expected(e: &Expected, unit: Unit) -> String {
    match e {
        Expected::Value(v) => value(*v, unit),
        Expected::Range([lo, hi]) => range(*lo, *hi, unit),
        Expected::Bound(b) => {
            let sides: Vec<String> = [(b.above, ">"), (b.below, "<")]
                .into_iter()
                .filter_map(|(v, op)| Some(format!("{op} {}", value(v?, unit))))
                .collect();
            sides.join(" and ")
        }
        Expected::Order(ids) => ids.join(" < "),
        Expected::Outcome(o) => o.label().into(),
    }
}

/// A measured value or range with its unit; `—` when nothing was measured.
pub fn measured(m: Option<&Measured>, unit: Unit) -> String {
    match m {
        None => "—".into(),
        Some(Measured::Value(v)) => value(*v, unit),
        Some(Measured::Range([lo, hi])) => range(*lo, *hi, unit),
        Some(Measured::Order(ids)) => ids.join(" < "),
    }
}

/// `lo–hi` with the unit; one value when both ends are the same (a cell of one process).
fn range(lo: f64, hi: f64, unit: Unit) -> String {
    if lo == hi {
        return value(lo, unit);
    }
    let text = format!("{}–{}", number(lo, unit), number(hi, unit));
    match unit {
        Unit::Times => format!("{text}×"),
        Unit::Count | Unit::Rank => text,
        _ => format!("{text} {}", unit_label(unit)),
    }
}

/// A plain ratio with three decimals; `—` when absent.
pub fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "—".into(), |r| format!("{r:.3}"))
}

/// Bytes in MiB with two decimals, no unit (`2,601.67`).
pub fn mib(bytes: f64) -> String {
    grouped(bytes / MIB, 2)
}

/// A task count in short form: `10k`, `500k`, `1M`, `1.5M`, `750`.
pub fn scale_label(tasks: u64) -> String {
    let short = |v: f64, suffix: &str| {
        let t = format!("{v:.1}");
        format!("{}{suffix}", t.trim_end_matches(".0"))
    };
    match tasks {
        n if n >= 1_000_000 => short(n as f64 / 1e6, "M"),
        n if n >= 1_000 => short(n as f64 / 1e3, "k"),
        n => n.to_string(),
    }
}

/// Text safe inside a table cell, and shown as written: [`crate::text::markdown`].
pub(crate) fn cell_text(s: &str) -> String {
    crate::text::markdown(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(grouped(2619.1, 2), "2,619.10");
        assert_eq!(grouped(1_000_000.0, 0), "1,000,000");
        assert_eq!(grouped(-1234.5, 1), "-1,234.5");
        assert_eq!(grouped(-0.0001, 2), "0.00");
        assert_eq!(grouped(999.0, 0), "999");
        assert_eq!(value(152.0, Unit::B), "152 B");
        assert_eq!(value(2745.26, Unit::B), "2,745.3 B");
        assert_eq!(signed(0.0123, Unit::GiB), "+0.012 GiB");
        assert_eq!(signed(-19.43, Unit::B), "-19.4 B");
        assert_eq!(signed(0.0, Unit::B), "0 B");
        assert_eq!(signed(-0.2, Unit::Percent), "-0.20 pp");
        assert_eq!(
            expected(&Expected::Range([2619.1, 2620.82]), Unit::MiB),
            "2,619.10–2,620.82 MiB"
        );
        assert_eq!(measured(None, Unit::B), "—");
        let one = Measured::Range([152.0, 152.0]);
        assert_eq!(
            measured(Some(&one), Unit::B),
            "152 B",
            "one value, no range"
        );
        assert_eq!(value(13.2, Unit::Times), "13.200×");
        assert_eq!(ratio(Some(0.99123)), "0.991");
    }

    #[test]
    fn scale_labels() {
        let got: Vec<String> = [750, 10_000, 100_000, 500_000, 1_000_000, 1_500_000]
            .map(scale_label)
            .into();
        assert_eq!(got, ["750", "10k", "100k", "500k", "1M", "1.5M"]);
    }
}
