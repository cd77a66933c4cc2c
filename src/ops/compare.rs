//! `parkbench compare A B`: two runs side by side, recomputed from their raw files.

use std::path::Path;

use anyhow::{Context, Result};

use super::Ending;
use crate::outputs::compare;
use crate::text::printable;

/// Prints the comparison of `a` (the reference) and `b`; with `out`, also writes compare.md,
/// compare.svg and compare.html there. Both runs are read before anything is written. With `fail_above` (percent),
/// a cell whose B ÷ A moved further, or was lost in B — pooled, and in each hardware class of both
/// runs — ends it as [`Ending::RunsDiffer`].
pub fn compare(a: &Path, b: &Path, out: Option<&Path>, fail_above: Option<f64>) -> Result<Ending> {
    let a = compare::load(a)?;
    let b = compare::load(b)?;
    let md = match out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the output folder {}", dir.display()))?;
            compare::write_all(dir, &a, &b)?.0
        }
        None => compare::markdown(&a, &b),
    };
    for line in md.lines() {
        println!("{}", printable(line));
    }
    eprintln!("in one line: {}", printable(&compare::one_line(&a, &b)));
    let Some(percent) = fail_above else {
        return Ok(Ending::Ok);
    };
    let mut over = compare::over_threshold(&a.outcome.summary, &b.outcome.summary, percent);
    // Runs of several classes: each class against itself too, like with like.
    if let Some(p) = compare::classes::pair(&a, &b) {
        over.extend(compare::classes::over_threshold(&p, percent));
    }
    if over.is_empty() {
        return Ok(Ending::Ok);
    }
    eprintln!(
        "B ÷ A differs from 1 by more than {percent} %, or the cell was lost in B, for: {}",
        printable(&over.join(", "))
    );
    Ok(Ending::RunsDiffer)
}
