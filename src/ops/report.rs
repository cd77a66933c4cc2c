//! `parkbench report`: statistics, report, figure and verdicts recomputed from a run's raw samples.

use std::path::Path;

use anyhow::Result;

use crate::outputs::outcome::{self, Outcome};
use crate::run::run_dir::{self, RunDir};

/// Recomputes and writes a run's report and verdicts, prints the verdict table.
pub fn report(run_dir: &Path) -> Result<Outcome> {
    // `runs/latest` is a link: the report names the run it points at.
    let run = RunDir::open(run_dir)?;
    let outcome = outcome::recompute(&run.read_files()?)?;
    outcome.write_report(run.path())?;
    print!("{}", outcome.terminal());
    eprintln!("report: {}", run.file(run_dir::REPORT).display());
    Ok(outcome)
}
