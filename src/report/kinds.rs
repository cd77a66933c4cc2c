//! The results tables of the kinds other than steady: per scale, a row per probe with every value the
//! kind records per process — its median over processes, range and CV — and the per-task value.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::kind::Kind;
use crate::report::number::{grouped, mib};
use crate::study::Study;
use crate::summary::{Cell, Spread, Summary};

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
        for &tasks in &study.protocol.scales {
            let cells: Vec<&Cell> = summary
                .cells
                .iter()
                .filter(|c| c.kind == kind && c.tasks == tasks)
                .collect();
            out.push_str(&table(tasks, &cells, summary.repeats));
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
        _ => {
            "Each value is the median over processes of each process's own value (range, CV); \
             times in the unit their name says.\n"
        }
    }
}

fn table(tasks: u64, cells: &[&Cell], repeats: u32) -> String {
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
        let _ = write!(out, "| {} | {} of {repeats} |", c.probe, c.valid);
        for n in &names {
            let cell = c.stats.get(*n).map_or("—".into(), |s| spread(n, s));
            let _ = write!(out, " {cell} |");
        }
        let per_task = c
            .per_task_bytes
            .map_or("—".into(), |v| format!("{} B", grouped(v, 1)));
        let _ = writeln!(out, " {per_task} |");
    }
    out
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
