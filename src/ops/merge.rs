//! `parkbench merge`: shards of a study (`run --shard i/N`) or independent reruns of it, joined
//! into one run folder and archive. Read every archive (checked like `check`: nothing of it is
//! extracted, no path or tag of it is used) → merge, refusing runs of other studies or binaries →
//! write the run folder (in `--out`, or under the study's `runs/`) → report, and the claims per
//! hardware class when the samples come from more than one → archive beside the folder.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Ending, Paths};
use crate::outputs::archive;
use crate::outputs::merge::{self, Input, Merged};
use crate::outputs::outcome;
use crate::run::run_dir::{self, RunDir, Status};
use crate::study::sample;

/// What to merge.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Archives (`<run-id>.tar.gz`) or run folders.
    pub runs: Vec<PathBuf>,
    /// The folder to write the merged run folder and its archive into; the study's `runs/` when
    /// `None`.
    pub out: Option<PathBuf>,
}

pub async fn command(paths: &Paths, options: &Options) -> Result<Ending> {
    let inputs: Vec<Input> = options
        .runs
        .iter()
        .map(|p| read(p))
        .collect::<Result<_>>()?;
    // Merged before a folder is made, so that a refused merge writes nothing; the run takes the
    // folder's id once there is one.
    let mut merged = merge::merge(&inputs, "")?;
    drop(inputs);
    let dir = match &options.out {
        Some(out) => RunDir::create_in(out)?,
        None => {
            let study = crate::study::Study::parse(&merged.study_yaml)?;
            RunDir::create(&paths.results, &study.id)?
        }
    };
    merged.state.run_id = dir.id();
    let written = write(&dir, &merged);
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(dir.path());
        return Err(e.context(format!("writing the merged run {}", dir.path().display())));
    }
    say(&merged);
    let info =
        super::archive::archive(&paths.repo, dir.path(), super::archive::Contents::DEFAULT).await?;
    if options.out.is_none() {
        dir.link_latest()?;
    }
    println!(
        "merged run: {}\narchive: {}",
        super::next_step::from_here(dir.path()).display(),
        super::next_step::from_here(&info.path).display()
    );
    Ok(Ending::Ok)
}

/// An archive, checked as `check` does and read without extracting; or a run folder.
fn read(path: &Path) -> Result<Input> {
    let files = if path.is_dir() {
        archive::read_folder(path)?
    } else {
        archive::read_run(path).with_context(|| format!("reading {}", path.display()))?
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok(Input { name, files })
}

/// The merged run's files, its report, and its claims per class (classes.json, classes.md) when
/// its samples come from more than one class or from hosts judged alone.
pub(crate) fn write(dir: &RunDir, merged: &Merged) -> Result<()> {
    dir.write(run_dir::STUDY, merged.study_yaml.as_bytes())?;
    dir.write(run_dir::MANIFEST, merged.manifest_json.as_bytes())?;
    if let Some(e) = &merged.env_json {
        dir.write(run_dir::ENV, e.as_bytes())?;
    }
    // Every sample exists already: written and synced once, not line by line as a run appends them.
    dir.write(run_dir::SAMPLES, &sample::jsonl(&merged.samples)?)?;
    dir.write_json(run_dir::MERGE_JSON, &merged.record)?;
    dir.save_state(&merged.state)?;
    let outcome = outcome::recompute(&dir.read_files()?)?;
    outcome.write_report(dir.path())?;
    print!("{}", outcome.terminal());
    // The claims per class (and host), which the report wrote beside it: shown after the table.
    if let Some(j) = &outcome.judged {
        print!("\n{}", merge::classes::markdown(j));
    }
    Ok(())
}

/// What the merge was made of, and whether it judges the whole matrix.
fn say(merged: &Merged) {
    let r = &merged.record;
    for run in &r.runs {
        let shard = run.shard.map(|s| format!(" shard {s}")).unwrap_or_default();
        let line = format!(
            "  {} (run {}{shard}, {}): {} samples on {}",
            run.name, run.run_id, run.status, run.samples, run.hardware
        );
        eprintln!("{}", crate::text::printable(&line));
    }
    if merged.state.status != Status::Complete {
        eprintln!("the merged run is INCOMPLETE: its verdicts judge less than the study's matrix");
        for d in merge::merge_deviations(r)
            .iter()
            .filter(|d| d.starts_with("incomplete"))
        {
            eprintln!("  {}", crate::text::printable(d));
        }
    }
}

#[cfg(test)]
mod tests;
