//! The results tables of the kinds other than steady: per scale, a row per probe with every value the
//! kind records per process — its median over processes, range and CV — and the per-task value.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::outputs::report::number::{cell_text, grouped, mib};
use crate::outputs::summary::{Cell, Spread, Summary};
use crate::study::Study;
use crate::study::kind::Kind;

/// One table per kind and scale, for every cell that is not steady; empty when there is none.
pub fn tables(study: &Study, summary: &Summary) -> String {
    let kinds: BTreeSet<Kind> = study
        .probes
        .iter()
        .map(|p| p.kind)
        .filter(|k| *k != Kind::Steady)
        .collect();
    let mut out = String::new();
    for kind in kinds {
        let _ = writeln!(out, "\n### {} kind\n", kind.name());
        out.push_str(legend(kind));
        for tasks in study.all_scales() {
            let cells: Vec<&Cell> = summary
                .cells
                .iter()
                .filter(|c| c.kind == kind && c.tasks == tasks)
                .collect();
            if cells.is_empty() {
                continue;
            }
            let target = study.protocol.target_cv;
            out.push_str(&table(tasks, &cells, summary, target));
            if kind == Kind::Timed {
                out.push_str(&precision(&cells));
            }
            out.push_str(&probe_notes(&cells));
        }
    }
    out
}

fn legend(kind: Kind) -> &'static str {
    match kind {
        Kind::Peak => {
            "A process's peak is the larger of `ru_maxrss` (from wait4 at exit) and the largest \
             VmHWM seen while polling; both are listed. Values are medians over processes (range, \
             CV); MiB = 1,048,576 bytes; times in ms. Per task = (peak at N − peak at the smallest \
             scale) ÷ (N − that N).\n"
        }
        Kind::Timed => {
            "Each value is the median over processes of each process's own value (range, CV); \
             times in the unit their name says. Batches: `result` lines per process. A process's \
             interval is the bootstrap 95 % interval of the median of its batches (2000 \
             resamples, seeded from the sample). ⚠ marks a CV above `protocol.target_cv`.\n"
        }
        _ => {
            "Each value is the median over processes of each process's own value (range, CV); \
             times in the unit their name says.\n"
        }
    }
}

fn table(tasks: u64, cells: &[&Cell], summary: &Summary, target_cv: Option<f64>) -> String {
    let names: BTreeSet<&str> = cells
        .iter()
        .flat_map(|c| c.stats.keys().map(String::as_str))
        .collect();
    let mut out = format!(
        "\n#### {} tasks\n\n| Probe | Valid |",
        grouped(tasks as f64, 0)
    );
    for n in &names {
        let _ = write!(out, " {n} |");
    }
    out.push_str(" Per task |\n|---|--:|");
    out.push_str(&"--:|".repeat(names.len() + 1));
    out.push('\n');
    for c in cells {
        let of = summary.processes_of(c);
        let _ = write!(out, "| {} | {} of {of} |", c.probe, c.valid);
        let flagged = c.above_target_cv(target_cv);
        for n in &names {
            let mut cell = c.stats.get(*n).map_or("—".into(), |s| spread(n, s));
            if flagged.iter().any(|(k, _)| k == n) {
                let t = target_cv.unwrap_or_default();
                cell.push_str(&format!(" ⚠ CV above {} %", grouped(t * 100.0, 2)));
            }
            let _ = write!(out, " {cell} |");
        }
        let per_task = c
            .per_task_bytes
            .map_or("—".into(), |v| format!("{} B", grouped(v, 1)));
        let _ = writeln!(out, " {per_task} |");
    }
    out
}

/// Timed cells: per process, its batches and the bootstrap interval of each key's median.
fn precision(cells: &[&Cell]) -> String {
    let mut out = String::new();
    for c in cells.iter().filter(|c| !c.processes.is_empty()) {
        let each: Vec<String> = c
            .processes
            .iter()
            .map(|p| {
                let intervals: Vec<String> = p
                    .intervals
                    .iter()
                    .map(|(k, [lo, hi])| format!("{k} {}–{}", number(*lo), number(*hi)))
                    .collect();
                format!(
                    "r{} {} batches{}",
                    p.repeat,
                    p.batches.unwrap_or(0),
                    if intervals.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", intervals.join(", "))
                    }
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "{}- {}: {}",
            if out.is_empty() { "\n" } else { "" },
            c.probe,
            each.join("; ")
        );
    }
    out
}

/// A result value as written: up to 3 decimals, without trailing zeros.
fn number(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `median (min–max, CV)` in the value's unit: `_bytes` in MiB, `_ms` in ms, `_ns` in µs.
fn spread(name: &str, s: &Spread) -> String {
    let (f, unit): (fn(f64) -> String, &str) = if name.ends_with("_bytes") {
        (mib, " MiB")
    } else if name.ends_with("_ns") {
        (|v| grouped(v / 1000.0, 2), " µs")
    } else {
        (|v| grouped(v, if v.fract() == 0.0 { 0 } else { 2 }), "")
    };
    let cv = s.cv.map_or(String::new(), |c| {
        format!(", CV {} %", grouped(c * 100.0, 2))
    });
    format!("{}{unit} ({}–{}{cv})", f(s.median), f(s.min), f(s.max))
}

/// The programs' notes of these cells, one line per cell that has any: each distinct note with
/// how many processes printed it. Empty when no cell has a note.
pub(crate) fn probe_notes(cells: &[&Cell]) -> String {
    let mut out = String::new();
    for c in cells.iter().filter(|c| !c.probe_notes.is_empty()) {
        if out.is_empty() {
            out.push('\n');
        }
        let notes: Vec<String> = c
            .probe_notes
            .iter()
            .map(|n| {
                let who = match n.processes {
                    1 => "1 process".to_string(),
                    k => format!("{k} processes"),
                };
                format!("“{}” ({who})", cell_text(&n.text))
            })
            .collect();
        let _ = writeln!(
            out,
            "- Notes of {} at {} tasks: {}",
            c.probe,
            grouped(c.tasks as f64, 0),
            notes.join("; ")
        );
    }
    out
}
