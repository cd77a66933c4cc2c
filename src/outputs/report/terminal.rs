//! The verdict table as plain aligned text, for the terminal (`parkbench run`, `parkbench verify`).

use std::fmt::Write as _;

use crate::outputs::number;
use crate::outputs::summary::{Cell, Summary};
use crate::outputs::verdict::Verdict;
use crate::run::warning::Warning;
use crate::study::Study;
use crate::text::printable;

const HEADER: [&str; 7] = [
    "CLAIM",
    "STATUS",
    "EXPECTED",
    "MEASURED",
    "DELTA",
    "RATIO",
    "TOLERANCE",
];

/// The verdicts as an aligned table followed by their notes; the same verdicts give the same text.
pub fn verdict_table(verdicts: &[Verdict]) -> String {
    if verdicts.is_empty() {
        return "This study states no claims; no verdicts.\n".into();
    }
    let rows: Vec<Vec<String>> = std::iter::once(HEADER.map(String::from).to_vec())
        .chain(verdicts.iter().map(|v| row(v).to_vec()))
        .collect();
    let mut out = crate::text::columns(&rows, "", "  ", &[]);
    for v in verdicts {
        if let Some(note) = &v.note {
            let (claim, note) = (printable(&v.claim), printable(note));
            let _ = writeln!(out, "  {claim}: {note}");
        }
    }
    out
}

/// Each cell of a kind that flags its CV (timed, latency): its CV across processes, per key,
/// flagged when above `protocol.target_cv`; empty when the study has no such cell.
pub fn timed_precision(study: &Study, summary: &Summary) -> String {
    let target = study.protocol.target_cv;
    let mut out = String::new();
    let precise = |c: &&Cell| c.kind.measure().flags_target_cv();
    for c in summary.cells.iter().filter(precise) {
        let flagged = c.above_target_cv(target);
        for (key, s) in &c.stats {
            let cv = match (s.values.len(), s.cv) {
                (1, _) => "no CV".into(),
                (_, None) => "CV —".into(),
                (_, Some(v)) => format!("CV {:.2} %", v * 100.0),
            };
            let flag = if flagged.iter().any(|(k, _)| k == key) {
                format!("  ABOVE TARGET {:.2} %", target.unwrap_or_default() * 100.0)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  {} × {} tasks  {} median {:.3}  {cv} over {}{flag}",
                printable(&c.probe),
                c.tasks,
                printable(key),
                s.median,
                match s.values.len() {
                    1 => "1 process".to_string(),
                    n => format!("{n} processes"),
                }
            );
        }
    }
    for line in summary
        .cells
        .iter()
        .filter_map(|c| super::dropped::line(c, target))
    {
        let _ = writeln!(out, "  {}", printable(&line));
    }
    if out.is_empty() {
        return out;
    }
    format!("timed and latency cells (CV across processes):\n{out}")
}

/// Processes on demand: how many cells met the target CV, and each that did not; empty for a fixed
/// count.
pub fn precision(summary: &Summary) -> String {
    let Some(first) = summary.precision.first() else {
        return String::new();
    };
    let met = summary.precision.iter().filter(|p| p.met).count();
    let mut out = format!(
        "processes on demand: {met} of {} cells met the target CV of {:.2} %\n",
        summary.precision.len(),
        first.target_cv * 100.0
    );
    for p in summary.precision.iter().filter(|p| !p.met) {
        let cv =
            p.cv.map_or("CV —".into(), |v| format!("CV {:.2} %", v * 100.0));
        let _ = writeln!(
            out,
            "  {} × {} tasks  {cv} over {} valid of {} processes (max {})",
            printable(&p.probe),
            p.tasks,
            p.valid,
            p.processes,
            p.max
        );
    }
    out
}

/// Valid processes far from their cell's others, each named; empty when there are none.
pub fn outliers(summary: &Summary) -> String {
    let mut out = String::new();
    for c in &summary.cells {
        for o in &c.outliers {
            let _ = writeln!(
                out,
                "  - {} at {} tasks, repeat {}: {}",
                printable(&c.probe),
                c.tasks,
                o.repeat,
                o.words()
            );
        }
    }
    match out.is_empty() {
        true => out,
        false => {
            format!("\nOutliers (far from their cell's others, kept in the statistics):\n{out}")
        }
    }
}

/// The validity warnings, each with the figures it may touch; empty when there are none.
pub fn warnings(list: &[Warning]) -> String {
    if list.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("\nValidity warnings (they explain samples, never invalidate them):\n");
    for w in list {
        let what = printable(&w.what);
        let _ = writeln!(out, "  - {what} [may touch {}]", w.touches.label());
    }
    out
}

fn row(v: &Verdict) -> [String; 7] {
    [
        v.claim.clone(),
        v.status_label().to_owned(),
        number::expected(&v.expected, v.unit),
        number::measured(v.measured.as_ref(), v.unit),
        v.delta
            .map_or_else(|| "—".into(), |d| number::signed(d, v.unit)),
        number::ratio(v.ratio),
        v.tolerance.clone(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::report::fixture;

    #[test]
    fn table_snapshot() {
        let v = fixture::verdicts();
        let text = verdict_table(&v);
        assert_eq!(text, verdict_table(&v), "deterministic");
        insta::assert_snapshot!("verdict_table", text);
    }

    #[test]
    fn warnings_name_what_they_may_touch() {
        assert_eq!(warnings(&[]), "", "nothing printed without one");
        let study = fixture::study();
        let (samples, summary, verdicts) =
            (fixture::samples(), fixture::summary(), fixture::verdicts());
        let input = fixture::input(&study, &samples, &summary, &verdicts);
        let text = warnings(&input.warnings);
        assert_eq!(text.lines().filter(|l| l.starts_with("  - ")).count(), 2);
        assert!(
            text.contains("2 MiB steps [may touch memory figures]"),
            "{text}"
        );
        assert!(
            text.contains("noisy neighbour) [may touch timings]"),
            "{text}"
        );
    }

    #[test]
    fn timed_cells_print_their_cv_and_flag() {
        let mut study = Study::default_study();
        study.protocol.target_cv = Some(0.01);
        let mut summary = fixture::summary();
        assert_eq!(timed_precision(&study, &summary), "", "no timed cell");
        let c = &mut summary.cells[0];
        c.kind = crate::study::kind::Kind::Timed;
        c.stats.insert(
            "ns".into(),
            crate::outputs::summary::Spread::of(vec![10.0, 12.0]).unwrap(),
        );
        let text = timed_precision(&study, &summary);
        assert!(
            text.contains("ns median 11.000  CV 9.09 % over 2 processes  ABOVE TARGET 1.00 %"),
            "{text}"
        );
        study.protocol.target_cv = Some(0.5);
        assert!(!timed_precision(&study, &summary).contains("ABOVE"));
        let one = crate::outputs::summary::Spread::of(vec![10.0]).unwrap();
        summary.cells[0].stats.insert("ns".into(), one);
        let text = timed_precision(&study, &summary);
        assert!(
            text.contains("ns median 10.000  no CV over 1 process\n"),
            "{text}"
        );
    }

    #[test]
    fn processes_on_demand_say_how_many_cells_met_the_target() {
        let mut study = fixture::study();
        let samples = fixture::samples();
        assert_eq!(
            precision(&crate::outputs::summary::summarize(&study, &samples)),
            ""
        );
        study.protocol.repeats = crate::study::Repeats {
            min: 3,
            max: 3,
            target_cv: Some(0.005),
        };
        let summary = crate::outputs::summary::summarize(&study, &samples);
        let text = precision(&summary);
        let met = summary.precision.iter().filter(|p| p.met).count();
        assert!(
            text.starts_with(&format!(
                "processes on demand: {met} of {} cells met the target CV of 0.50 %\n",
                summary.cells.len()
            )),
            "{text}"
        );
        assert_eq!(
            text.lines().count(),
            1 + summary.cells.len() - met,
            "one line per cell that did not: {text}"
        );
    }

    #[test]
    fn no_claims() {
        assert_eq!(
            verdict_table(&[]),
            "This study states no claims; no verdicts.\n"
        );
    }
}
