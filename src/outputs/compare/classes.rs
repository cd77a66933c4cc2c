//! A comparison class by class: when either run's samples come from more than one hardware class,
//! each class present in both runs is compared with itself (its cells and claims on its samples
//! alone), and a class present in only one run is named as not compared.

use std::fmt::Write as _;

use super::markdown::{cell_table, claim_rows};
use super::{Side, cells, claims, lone_cells};
use crate::outputs::merge::{self, ClassRun};
use crate::outputs::number::cell_text;

/// The classes of both runs: those of both, paired, and those of one run only.
pub struct Paired {
    /// Classes of both runs, in A's order: (A's share, B's share).
    pub both: Vec<(ClassRun, ClassRun)>,
    /// Classes of A only.
    pub only_a: Vec<ClassRun>,
    /// Classes of B only.
    pub only_b: Vec<ClassRun>,
}

/// `None` when both runs are of one class each (the comparison of the whole runs says it all).
pub fn pair(a: &Side, b: &Side) -> Option<Paired> {
    let split = |s: &Side| merge::split(&s.outcome.study, &s.outcome.samples);
    let (ca, cb) = (split(a), split(b));
    if ca.len() < 2 && cb.len() < 2 {
        return None;
    }
    let mut only_b = cb;
    let mut both = Vec::new();
    let mut only_a = Vec::new();
    for x in ca {
        match only_b.iter().position(|y| y.class == x.class) {
            Some(i) => both.push((x, only_b.remove(i))),
            None => only_a.push(x),
        }
    }
    Some(Paired {
        both,
        only_a,
        only_b,
    })
}

/// The class's name as a heading shows it: the class and each run's label of it.
fn named(x: &ClassRun, side: &str) -> String {
    format!("{}'s class {} ({})", side, x.label, cell_text(&x.class))
}

/// The section `## Per hardware class`: each class of both runs compared alone, then the classes
/// not compared.
pub fn markdown(p: &Paired) -> String {
    let mut out = String::from(
        "## Per hardware class\n\nThe runs' samples come from more than one hardware class: each \
         class is compared with the same class of the other run (its cells and claims on its \
         samples alone); a class of one run only is not compared.\n\n",
    );
    for (x, y) in &p.both {
        let _ = writeln!(
            out,
            "### {} — A's class {}, B's class {}\n",
            cell_text(&x.class),
            x.label,
            y.label
        );
        let rows = cells(&x.summary, &y.summary);
        let lone = lone_cells(&x.summary, &y.summary);
        out.push_str(&cell_table(&rows, &lone).replacen("## Cells\n\n", "", 1));
        out.push_str(&claim_rows(&claims(&x.verdicts, &y.verdicts)));
    }
    let not: Vec<String> = (p.only_a.iter().map(|x| named(x, "A")))
        .chain(p.only_b.iter().map(|y| named(y, "B")))
        .collect();
    if !not.is_empty() {
        let _ = writeln!(out, "Not compared (in one run only):\n");
        for n in not {
            let _ = writeln!(out, "- {n}");
        }
        out.push('\n');
    }
    out
}

/// The classes in the one-line summary: how many were compared, with their claims' agreement, and
/// how many were not.
pub fn one_line(p: &Paired) -> String {
    let compared: Vec<String> = (p.both.iter())
        .map(|(x, y)| {
            let pairs = claims(&x.verdicts, &y.verdicts);
            let same = pairs.iter().filter(|(v, w)| v.status == w.status).count();
            format!("{} {same} of {} claims same", x.label, pairs.len())
        })
        .collect();
    let mut out = format!("; per class: {} compared", p.both.len());
    if !compared.is_empty() {
        let _ = write!(out, " ({})", compared.join(", "));
    }
    let not = p.only_a.len() + p.only_b.len();
    if not > 0 {
        let _ = write!(out, ", {not} in one run only (not compared)");
    }
    out
}

/// The cells of the classes of both runs that fail `--fail-above percent` ([`super::over_threshold`]
/// class by class), each named with its class: `go at 1000000 tasks (on CPU X · …)`.
pub fn over_threshold(p: &Paired, percent: f64) -> Vec<String> {
    (p.both.iter())
        .flat_map(|(x, y)| {
            (super::over_threshold(&x.summary, &y.summary, percent).into_iter())
                .map(move |cell| format!("{cell} (on {})", x.class))
        })
        .collect()
}
