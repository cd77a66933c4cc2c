//! `parkbench compare A B`: two runs side by side, recomputed from their raw files.

use anyhow::{Context, Result};

use super::Ending;
use crate::cli::args::CompareArgs;
use crate::outputs::compare;

/// Prints the comparison; with `--out`, also writes compare.md and compare.svg there. Both runs are
/// read before anything is written.
pub fn command(args: &CompareArgs) -> Result<Ending> {
    let a = compare::load(&args.a)?;
    let b = compare::load(&args.b)?;
    let md = compare::markdown(&a, &b);
    if let Some(dir) = &args.out {
        let svg = compare::figure(&a, &b);
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the output folder {}", dir.display()))?;
        crate::images::cache::write_atomic(&dir.join("compare.md"), md.as_bytes())?;
        crate::images::cache::write_atomic(&dir.join("compare.svg"), svg.as_bytes())?;
    }
    print!("{md}");
    let Some(percent) = args.fail_above else {
        return Ok(Ending::Ok);
    };
    let over = compare::over_threshold(&a.outcome.summary, &b.outcome.summary, percent);
    if over.is_empty() {
        return Ok(Ending::Ok);
    }
    eprintln!(
        "B ÷ A differs from 1 by more than {percent} %, or the cell was lost in B, for: {}",
        over.join(", ")
    );
    Ok(Ending::RunsDiffer)
}
