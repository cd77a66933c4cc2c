//! `results/index.md`: every study in `results/`, with its latest run's verdict table and links to
//! the run's report and archive — recomputed from each run's raw files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::outcome;
use crate::report::markdown;
use crate::run_dir::{self, RunDir};
use crate::study::Study;

/// The study files under `results/`, sorted by folder name.
pub fn studies(results: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(results)
        .with_context(|| format!("listing studies in {}", results.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join(run_dir::STUDY))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Writes `results/index.md` and returns its path.
pub fn write(results: &Path) -> Result<PathBuf> {
    let mut out = String::from(
        "# Studies\n\nEvery study in this folder and the verdicts of its latest run, recomputed \
         from the run's raw samples.\n",
    );
    for file in studies(results)? {
        out.push_str(&section(results, &file)?);
    }
    let path = results.join("index.md");
    crate::cache::write_atomic(&path, out.as_bytes())?;
    Ok(path)
}

fn section(results: &Path, file: &Path) -> Result<String> {
    let study = Study::load(file)?;
    let mut out = format!("\n## {} (`{}`)\n\n", study.title, study.id);
    let _ = writeln!(out, "After *{}*.\n", study.source.article);
    let latest = results.join(&study.id).join("runs").join(run_dir::LATEST);
    if !latest.exists() {
        out.push_str("Not run yet: `parkbench reproduce ");
        let _ = writeln!(out, "results/{}/study.yaml`.", study.id);
        return Ok(out);
    }
    let dir = RunDir::open(&latest)?;
    let outcome = outcome::recompute(&dir.read_files()?)
        .with_context(|| format!("recomputing {}", latest.display()))?;
    let id = dir.id();
    let _ = write!(
        out,
        "Latest run `{id}`: [report]({0}/runs/{id}/report.md)",
        study.id
    );
    if dir.archive_path().is_file() {
        let _ = write!(out, ", [archive]({0}/runs/{id}.tar.gz)", study.id);
    }
    out.push_str(".\n\n");
    if let Some(p) = &outcome.partial {
        let _ = writeln!(out, "> Partial data: {p}.\n");
    }
    out.push_str(&markdown::verdicts(&outcome.verdicts).replacen("## Verdicts\n\n", "", 1));
    Ok(out)
}
