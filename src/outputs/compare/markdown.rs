//! `compare.md`: the comparison as Markdown tables.

use std::fmt::Write as _;

use super::{
    CellRow, Headline, LoneCell, RULE, Side, cells, claims, lone_cells, rootfs_drift, same_binaries,
};
use crate::outputs::number::{grouped, measured, mib, ratio, scale_label};
use crate::outputs::outcome::Outcome;
use crate::outputs::provenance;
use crate::outputs::verdict::Verdict;
use crate::text::{markdown as md, markdown_code as code};

/// The whole comparison of `a` (the reference) and `b`, with the section per hardware class when
/// there is one.
pub fn markdown(a: &Side, b: &Side, classes: Option<String>) -> String {
    let (oa, ob) = (&a.outcome, &b.outcome);
    let mut out = format!(
        "# Comparison of two runs\n\n- A: {} (run {})\n",
        code(&a.path),
        md(&oa.run_id)
    );
    let _ = writeln!(out, "- B: {} (run {})", code(&b.path), md(&ob.run_id));
    if let Some(d) = rootfs_drift(a, b) {
        let _ = writeln!(out, "- Root filesystems: {}", md(&d));
    }
    if oa.study.id != ob.study.id {
        let _ = writeln!(
            out,
            "- Different studies: A is {}, B is {}",
            code(&oa.study.id),
            code(&ob.study.id)
        );
    }
    for (name, side) in [("A", oa), ("B", ob)] {
        if let Some(p) = &side.partial {
            let _ = writeln!(out, "- {name} is partial: {}", md(p));
        }
    }
    let published = provenance::differences(&a.written, "A", &b.written, "B");
    if !published.is_empty() {
        let _ = writeln!(
            out,
            "- The two runs' studies differ in published values, claims, probes or protocol \
             (their verdicts judge different claims):"
        );
        for line in &published {
            let _ = writeln!(out, "  - {}", md(line));
        }
    }
    let _ = writeln!(out, "- Same binaries: {}\n", same_binaries(a, b));
    let (rows, lone) = (
        cells(&oa.summary, &ob.summary),
        lone_cells(&oa.summary, &ob.summary),
    );
    out.push_str(&cell_table(&rows, &lone));
    out.push_str(&claim_table(a, b));
    out.push_str(&classes.unwrap_or_default());
    out.push_str(&environment_table(&with_warnings(oa), &with_warnings(ob)));
    out
}

/// A run's environment rows with its validity warnings as one more row (when it has either).
fn with_warnings(o: &Outcome) -> Vec<(String, String)> {
    let mut rows = o.environment.clone();
    if !rows.is_empty() || !o.warnings.is_empty() {
        let seen: Vec<&str> = o.warnings.iter().map(|w| w.what.as_str()).collect();
        let text = if seen.is_empty() {
            "none".to_string()
        } else {
            seen.join("; ")
        };
        rows.push(("Validity warnings".into(), text));
    }
    rows
}

pub(super) fn cell_table(rows: &[CellRow], lone: &[LoneCell]) -> String {
    let mut out = String::from("## Cells\n\n");
    let _ = writeln!(out, "Rule: {RULE}.\n");
    if rows.is_empty() && lone.is_empty() {
        out.push_str("No probe and scale was measured in both runs.\n\n");
        return out;
    }
    out.push_str("| Probe | Tasks | Statistic | A | B | B ÷ A | Difference |\n");
    out.push_str("|---|---:|---|---:|---:|---:|---|\n");
    for row in rows {
        let finding = if row.beyond_dispersion() {
            "beyond dispersion"
        } else {
            "within dispersion"
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {finding} |",
            md(&row.probe),
            scale_label(row.tasks),
            statistic(&row.a),
            shown(&row.a),
            shown(&row.b),
            ratio(row.ratio()),
        );
    }
    for cell in lone {
        let (a, b) = match cell.presence {
            super::Presence::LostInB => (shown(&cell.headline), "—".to_string()),
            super::Presence::NewInB => ("—".to_string(), shown(&cell.headline)),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {a} | {b} | — | {} |",
            md(&cell.probe),
            scale_label(cell.tasks),
            statistic(&cell.headline),
            cell.presence.label(),
        );
    }
    out.push('\n');
    out
}

/// The statistic's name, with the unit the table prints it in.
fn statistic(h: &Headline) -> String {
    if h.is_bytes() {
        format!("{} (MiB)", md(&h.name))
    } else {
        md(&h.name)
    }
}

/// The value and its half-range: MiB for bytes, else the statistic's own unit.
/// `value ± half-range`; the value alone for a cell of one process (it has no range).
pub(super) fn shown(h: &Headline) -> String {
    if h.values.len() == 1 {
        return if h.is_bytes() {
            mib(h.value)
        } else {
            grouped(h.value, 2)
        };
    }
    let (value, half) = if h.is_bytes() {
        (mib(h.value), mib(h.half_range()))
    } else {
        (grouped(h.value, 2), grouped(h.half_range(), 2))
    };
    format!("{value} ± {half}")
}

fn claim_table(a: &Side, b: &Side) -> String {
    let mut out = String::from("## Claims\n\n");
    out.push_str(&claim_rows(&claims(
        &a.outcome.verdicts,
        &b.outcome.verdicts,
    )));
    out
}

/// The claims judged in both, a row each: both findings and measured values.
pub(super) fn claim_rows(pairs: &[(&Verdict, &Verdict)]) -> String {
    let mut out = String::new();
    if pairs.is_empty() {
        out.push_str("No claim was judged in both runs.\n\n");
        return out;
    }
    out.push_str("| Claim | A | A measured | B | B measured |\n|---|---|---:|---|---:|\n");
    for (va, vb) in pairs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            code(&va.claim),
            va.status.label(),
            measured(va.measured.as_ref(), va.unit),
            vb.status.label(),
            measured(vb.measured.as_ref(), vb.unit),
        );
    }
    out.push('\n');
    out
}

fn environment_table(a: &[(String, String)], b: &[(String, String)]) -> String {
    let mut out = String::from("## Environment\n\n");
    let mut labels: Vec<&str> = a.iter().map(|(k, _)| k.as_str()).collect();
    for (k, _) in b {
        if !labels.contains(&k.as_str()) {
            labels.push(k);
        }
    }
    if labels.is_empty() {
        out.push_str("Neither run recorded its environment (env.json).\n");
        return out;
    }
    out.push_str("| | A | B | |\n|---|---|---|---|\n");
    let find = |side: &[(String, String)], label: &str| {
        side.iter()
            .find(|(k, _)| k == label)
            .map_or("—".to_string(), |(_, v)| md(v))
    };
    for label in labels {
        let (va, vb) = (find(a, label), find(b, label));
        let same = if va == vb { "same" } else { "differs" };
        let _ = writeln!(out, "| {} | {va} | {vb} | {same} |", md(label));
    }
    out
}
