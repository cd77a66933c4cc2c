//! The results tables, one section per kind of the study in kind order: the kind's legend, then a
//! table per scale of its cells. The kind says where its cells keep their statistics
//! ([`Fields`]), and so which table shows them: the RSS fields (steady) in a row of process
//! medians, median, range, CV, per task and metrics; the others, a row per probe with every value
//! the kind records per process — its median over processes, range and CV — and the per-task value.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::outputs::number::{self, cell_text, grouped, mib};
use crate::outputs::summary::{Cell, Spread, Summary};
use crate::study::kind::{Fields, Kind};
use crate::study::{Study, Unit};

/// Every kind's section, in kind order; empty for a study without probes.
pub fn tables(study: &Study, summary: &Summary) -> String {
    let kinds: BTreeSet<Kind> = study.probes.iter().map(|p| p.kind).collect();
    let mut out = String::new();
    for kind in kinds {
        out.push_str(&match kind.measure().fields() {
            Fields::Rss => rss_section(kind, study, summary),
            Fields::Stats => stats_section(kind, study, summary),
        });
    }
    out
}

/// A kind whose cells keep RSS fields: its legend, then a table per scale, without a heading of
/// its own (the results section opens with it).
fn rss_section(kind: Kind, study: &Study, summary: &Summary) -> String {
    let mut out = kind.measure().legend().to_string();
    for tasks in study.all_scales() {
        let cells = cells_of(summary, kind, tasks);
        if cells.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n### {} tasks\n", grouped(tasks as f64, 0));
        out.push_str("| Probe | Valid | Process medians (MiB) | Median | Min | Max | CV | Per task | Metrics (median) |\n");
        out.push_str("|---|--:|---|--:|--:|--:|--:|--:|---|\n");
        for cell in &cells {
            out.push_str(&cell_row(cell, summary.processes_of(cell)));
        }
        out.push_str(&probe_notes(&cells));
    }
    out
}

/// A kind whose cells keep their values in `stats`: a heading and its legend, then per scale a
/// table, each process's batches and intervals when the kind has them, and the programs' notes.
fn stats_section(kind: Kind, study: &Study, summary: &Summary) -> String {
    let measure = kind.measure();
    let mut out = format!("\n### {} kind\n\n{}", kind.name(), measure.legend());
    for tasks in study.all_scales() {
        let cells = cells_of(summary, kind, tasks);
        if cells.is_empty() {
            continue;
        }
        let target = study.protocol.target_cv;
        out.push_str(&table(tasks, &cells, summary, target));
        if measure.bootstrap_intervals() {
            out.push_str(&precision(&cells));
        }
        out.push_str(&dropped_lines(&cells, target));
        out.push_str(&probe_notes(&cells));
    }
    out
}

/// The cells of a kind at one scale, in summary order.
fn cells_of(summary: &Summary, kind: Kind, tasks: u64) -> Vec<&Cell> {
    summary
        .cells
        .iter()
        .filter(|c| c.kind == kind && c.tasks == tasks)
        .collect()
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
        let _ = write!(out, " {} |", cell_text(n));
    }
    out.push_str(" Per task |\n|---|--:|");
    out.push_str(&"--:|".repeat(names.len() + 1));
    out.push('\n');
    for c in cells {
        let of = summary.processes_of(c);
        let _ = write!(out, "| {} | {} of {of} |", cell_text(&c.probe), c.valid);
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

/// Per process, its batches and the bootstrap interval of each key's median.
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
                    .map(|(k, [lo, hi])| {
                        format!("{} {}–{}", cell_text(k), number(*lo), number(*hi))
                    })
                    .collect();
                let dropped = p
                    .dropped
                    .map_or(String::new(), |d| format!(" ({d} dropped)"));
                format!(
                    "r{} {} batches{dropped}{}",
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
            cell_text(&c.probe),
            each.join("; ")
        );
    }
    out
}

/// Per cell whose sampler read what disturbed its batches, its dropped batches and CV with and
/// without them ([`super::dropped::line`]).
fn dropped_lines(cells: &[&Cell], target: Option<f64>) -> String {
    let lines: Vec<String> = cells
        .iter()
        .filter_map(|c| super::dropped::line(c, target))
        .map(|l| format!("- {}\n", cell_text(&l)))
        .collect();
    match lines.is_empty() {
        true => String::new(),
        false => format!(
            "\nDropped batches (`protocol.drop_batches`):\n\n{}",
            lines.concat()
        ),
    }
}

/// A result value as written: up to 3 decimals, without trailing zeros.
fn number(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `median (min–max, CV)` in the value's unit: `_bytes` in MiB, `_ms` in ms, `_ns` in µs; the
/// value alone when one process gave it (one value has no range and no dispersion).
fn spread(name: &str, s: &Spread) -> String {
    let (f, unit): (fn(f64) -> String, &str) = if name.ends_with("_bytes") {
        (mib, " MiB")
    } else if name.ends_with("_ns") {
        (|v| grouped(v / 1000.0, 2), " µs")
    } else {
        (|v| grouped(v, if v.fract() == 0.0 { 0 } else { 2 }), "")
    };
    if s.values.len() == 1 {
        return format!("{}{unit}", f(s.median));
    }
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
                let who = crate::text::count(n.processes, "process", "processes");
                format!("“{}” ({who})", cell_text(&n.text))
            })
            .collect();
        let _ = writeln!(
            out,
            "- Notes of {} at {} tasks: {}",
            cell_text(&c.probe),
            grouped(c.tasks as f64, 0),
            notes.join("; ")
        );
    }
    out
}

/// A steady cell's row; with one valid process its min, max and CV are `—` (one value has no range
/// and no dispersion).
fn cell_row(c: &Cell, repeats: usize) -> String {
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "—".into(), f);
    let spread = |v: Option<f64>| v.filter(|_| c.valid > 1);
    let processes: Vec<String> = c
        .processes
        .iter()
        .filter_map(|p| Some(format!("r{} {}", p.repeat, mib(p.rss_median_bytes?))))
        .collect();
    let metrics: Vec<String> = c
        .metrics
        .iter()
        .map(|(name, m)| {
            let share = if m.count < c.valid {
                format!(" ({} of {})", m.count, c.valid)
            } else {
                String::new()
            };
            format!(
                "{} {}{share}",
                cell_text(name),
                metric_value(name, m.median)
            )
        })
        .collect();
    format!(
        "| {} | {} of {repeats} | {} | {} | {} | {} | {} | {} | {} |\n",
        cell_text(&c.probe),
        c.valid,
        if processes.is_empty() {
            "—".into()
        } else {
            processes.join("; ")
        },
        opt(c.rss_median_bytes, &mib),
        opt(spread(c.rss_min_bytes), &mib),
        opt(spread(c.rss_max_bytes), &mib),
        opt(spread(c.rss_cv), &|v| format!(
            "{} %",
            grouped(v * 100.0, 2)
        )),
        opt(c.per_task_bytes, &|v| number::value(v, Unit::B)),
        if metrics.is_empty() {
            "—".into()
        } else {
            metrics.join("; ")
        },
    )
}

/// Metrics named `*_bytes` in MiB; others as plain numbers.
fn metric_value(name: &str, v: f64) -> String {
    if name.ends_with("_bytes") {
        format!("{} MiB", mib(v))
    } else {
        grouped(v, if v.fract() == 0.0 { 0 } else { 2 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::report::fixture;
    use crate::outputs::summary::summarize;

    #[test]
    fn a_cell_of_one_process_shows_its_value_without_range_or_cv() {
        let mut study = fixture::study();
        study.protocol.repeats.min = 1;
        let samples: Vec<_> = fixture::samples()
            .into_iter()
            .filter(|s| s.repeat == 1)
            .collect();
        let summary = summarize(&study, &samples);
        let text = tables(&study, &summary);
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| go |")).collect();
        assert!(!rows.is_empty(), "{text}");
        for row in rows {
            let cols: Vec<&str> = row.split('|').map(str::trim).collect();
            // Probe, valid, process medians, median, min, max, CV.
            assert_ne!(cols[4], "—", "{row}");
            assert_eq!(&cols[5..8], ["—", "—", "—"], "{row}");
        }
        assert!(!text.contains("0.00 %"), "{text}");
        let one = Spread::of(vec![12.5]).unwrap();
        assert_eq!(spread("switch_ns", &one), "0.01 µs");
        assert_eq!(spread("ops", &one), "12.50");
        let two = Spread::of(vec![10.0, 12.0]).unwrap();
        assert_eq!(spread("ops", &two), "11 (10–12, CV 9.09 %)");
    }
}
