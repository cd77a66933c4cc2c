//! `parkbench check` and `parkbench verify`, offline: an archive's SHA256SUMS lines and structure;
//! statistics and verdicts recomputed from an archive or a run folder.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::Ending;
use crate::outputs::archive;
use crate::outputs::outcome;
use crate::outputs::verdict::VerdictFile;
use crate::run::run_dir::RunDir;

/// `check`: every SHA256SUMS line and the structure of the archive at `path`.
pub fn check(path: &Path) -> Result<Ending> {
    let report = archive::check(path).with_context(|| format!("checking {}", path.display()))?;
    println!("{report}");
    Ok(Ending::Ok)
}

/// `verify`: recomputes from raw samples; a stored verdicts.json that disagrees is an error.
pub fn verify(path: &Path) -> Result<Ending> {
    let files = if path.is_dir() {
        RunDir::at(path).read_files()?
    } else {
        archive::read_run(path)?
    };
    let outcome = outcome::recompute(&files)?;
    print!("{}", outcome.terminal());
    if let Some(stored) = &files.verdicts_json {
        let stored: VerdictFile =
            serde_json::from_str(stored).context("parsing the stored verdicts.json")?;
        if stored.verdicts != outcome.verdicts {
            bail!(
                "the verdicts recomputed from samples.jsonl differ from the stored verdicts.json: the run was altered or the statistics changed"
            );
        }
        eprintln!("verdicts recomputed from the raw samples match the stored verdicts.json");
    }
    Ok(Ending::Ok)
}
