//! The verdict table as plain aligned text, for the terminal (`parkbench run`, `parkbench verify`).

use std::fmt::Write as _;

use crate::report::number;
use crate::verdict::Verdict;

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
    let rows: Vec<[String; 7]> = verdicts.iter().map(row).collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = line(&HEADER.map(String::from), &widths);
    for r in &rows {
        out.push_str(&line(r, &widths));
    }
    for v in verdicts {
        if let Some(note) = &v.note {
            let _ = writeln!(out, "  {}: {note}", v.claim);
        }
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

fn line(cells: &[String; 7], widths: &[usize; 7]) -> String {
    let padded: Vec<String> = cells
        .iter()
        .zip(widths)
        .map(|(c, &w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
        .collect();
    format!("{}\n", padded.join("  ").trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    #[test]
    fn table_snapshot() {
        let v = fixture::verdicts();
        let text = verdict_table(&v);
        assert_eq!(text, verdict_table(&v), "deterministic");
        insta::assert_snapshot!("verdict_table", text);
    }

    #[test]
    fn no_claims() {
        assert_eq!(
            verdict_table(&[]),
            "This study states no claims; no verdicts.\n"
        );
    }
}
