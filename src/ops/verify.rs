//! `parkbench check` and `parkbench verify`, offline: an archive's SHA256SUMS lines and structure;
//! statistics and verdicts recomputed from an archive or a run folder.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::Ending;
use crate::outputs::archive::{self, Integrity};
use crate::outputs::outcome;
use crate::outputs::verdict::VerdictFile;
use crate::run::run_dir::{RunDir, RunFiles};
use crate::study::sample;

/// `check`: every SHA256SUMS line and the structure of the archive at `path`.
pub fn check(path: &Path) -> Result<Ending> {
    let report = archive::check(path).with_context(|| format!("checking {}", path.display()))?;
    println!("{report}");
    Ok(Ending::Ok)
}

/// `verify`: recomputes from raw samples; a stored verdicts.json that disagrees is an error.
pub fn verify(path: &Path) -> Result<Ending> {
    integrity(path)?;
    let files = if path.is_dir() {
        RunDir::at(path).read_files()?
    } else {
        archive::read_run(path)?
    };
    let outcome = outcome::recompute(&files)?;
    print!("{}", outcome.terminal());
    refuse_malformed(&files)?;
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

/// A folder unpacked from an archive is checked against its SHA256SUMS before anything in it is
/// read; a folder without one (a run folder before it is archived) is said to be unchecked.
/// An archive is checked as it is read.
fn integrity(path: &Path) -> Result<()> {
    if !path.is_dir() {
        return Ok(());
    }
    match archive::check_folder(path)? {
        Integrity::Matches(n) => eprintln!("{}: {n} files match SHA256SUMS", path.display()),
        Integrity::Unlisted => eprintln!(
            "{}: not integrity-checked (no SHA256SUMS): only the verdicts were recomputed",
            path.display()
        ),
    }
    Ok(())
}

/// A samples.jsonl line that cannot be read fails verify: the verdicts cover only part of the run.
fn refuse_malformed(files: &RunFiles) -> Result<()> {
    let (_, bad) = sample::parse_lines(files.samples_jsonl.as_bytes())?;
    if let Some(first) = bad.first() {
        bail!(
            "samples.jsonl has {} malformed line(s), the first is line {} ({}): the verdicts above \
             cover only the lines read; verify the archive, or unpack it again",
            bad.len(),
            first.line,
            first.error
        );
    }
    Ok(())
}
