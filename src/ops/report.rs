//! `parkbench report`: statistics, report, figure and verdicts recomputed from a run's raw samples.

use std::path::Path;

use anyhow::Result;

use crate::outputs::archive;
use crate::outputs::outcome::{self, Outcome};
use crate::run::run_dir::{self, RunDir};

/// Recomputes and writes a run's report and verdicts, prints the verdict table.
pub fn report(run_dir: &Path) -> Result<Outcome> {
    write(run_dir, true)
}

/// As [`report`]; the validity warnings are printed only when `warnings` (`reproduce` printed them
/// after its run already).
pub fn write(run_dir: &Path, warnings: bool) -> Result<Outcome> {
    // `runs/latest` is a link: the report names the run it points at.
    let run = RunDir::open(run_dir)?;
    let outcome = outcome::recompute(&archive::read_folder(run.path())?)?;
    outcome.write_report(run.path())?;
    print!("{}", outcome.terminal_with(warnings));
    eprintln!(
        "report: {}",
        super::next_step::from_here(&run.file(run_dir::REPORT)).display()
    );
    Ok(outcome)
}
