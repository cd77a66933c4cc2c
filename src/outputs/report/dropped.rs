//! The line a timed cell gets for its dropped batches, in the terminal and the report: how many
//! were dropped and why, each value's CV across processes with them and without them, and whether
//! the dropped batches explain the spread.

use crate::outputs::summary::Cell;

/// The CV above which a cell's spread is not explained when the study sets no `target_cv`.
pub const UNEXPLAINED_CV: f64 = 0.02;

/// `probe × N tasks: d of n batches dropped (why…); key CV a % with them, b % without`, and, when a
/// value's CV without them is still above `target` (or 2 %), that the dropped batches do not
/// explain the spread, and each process whose batches were mostly disturbed and so all kept.
/// `None` for a cell without counters.
pub fn line(c: &Cell, target: Option<f64>) -> Option<String> {
    let d = c.dropped_batches.as_ref()?;
    let limit = target.unwrap_or(UNEXPLAINED_CV);
    let reasons: Vec<String> = d
        .by_reason
        .iter()
        .map(|(w, n)| format!("{w} {n}"))
        .collect();
    let mut out = format!(
        "{} × {} tasks: {} of {} batches dropped{}",
        c.probe,
        c.tasks,
        d.dropped,
        d.batches,
        if reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", reasons.join(", "))
        }
    );
    let mut unexplained = false;
    for (key, with) in &d.cv_with_dropped {
        let without = c.stats.get(key).and_then(|s| s.cv);
        let without_text = without.map_or("—".into(), |v| format!("{:.2} %", v * 100.0));
        out.push_str(&format!(
            "; {key} CV {:.2} % with them, {without_text} without",
            with * 100.0
        ));
        unexplained |= without.is_some_and(|v| v > limit);
    }
    if unexplained {
        out.push_str(&format!(
            " — the dropped batches do not explain the spread (CV without them still above {:.2} %)",
            limit * 100.0
        ));
    }
    for w in &d.not_dropped {
        out.push_str(&format!("; ⚠ {w}"));
    }
    Some(out)
}
