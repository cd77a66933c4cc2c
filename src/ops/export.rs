//! `parkbench export FORMAT`: a batch scheduler's job that runs a study's shards (`reproduce
//! --shard i/N`, one per machine), written from the study alone — nothing here talks to a
//! scheduler. One format per file behind [`Format`]: a Kubernetes Indexed Job (`kubernetes`), a
//! Slurm job array with a dependent merge (`slurm`); docs/fleet.md.

pub mod kubernetes;
pub mod slurm;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{Ending, Paths};
use crate::study::Study;
use crate::study::repeats::RepeatsChoice;

pub use kubernetes::Kubernetes;
pub use slurm::Slurm;

/// What every format exports.
#[derive(Debug, Clone)]
pub struct Options {
    /// The study file.
    pub study: PathBuf,
    /// Shards, one machine each.
    pub shards: u32,
    /// Processes per cell instead of the study's `protocol.repeats`, passed to every shard.
    pub repeats: Option<RepeatsChoice>,
    /// Where to write the job; stdout when `None`.
    pub out: Option<PathBuf>,
}

/// What a shard runs, the same in every format.
pub struct Job<'a> {
    pub study: &'a Study,
    /// The study file as given.
    pub file: &'a Path,
    pub shards: u32,
    pub repeats: Option<RepeatsChoice>,
}

/// One scheduler's job file.
pub trait Format {
    /// What the file is, for the line that says where it was written: `an Indexed Job`.
    fn what(&self) -> &'static str;
    /// The job file's text.
    fn write(&self, paths: &Paths, job: &Job) -> Result<String>;
}

pub fn export(paths: &Paths, options: &Options, format: &dyn Format) -> Result<Ending> {
    if options.shards == 0 {
        bail!("--shards 0: a matrix cannot be dealt into 0 shards; give 1 or more");
    }
    let study = Study::load(&options.study)?;
    let job = Job {
        study: &study,
        file: &options.study,
        shards: options.shards,
        repeats: options.repeats,
    };
    let text = format.write(paths, &job)?;
    match &options.out {
        Some(file) => {
            crate::files::write_atomic(file, text.as_bytes())?;
            eprintln!(
                "wrote {} ({}: {} shards of study {})",
                file.display(),
                format.what(),
                options.shards,
                study.id
            );
        }
        None => print!("{text}"),
    }
    Ok(Ending::Ok)
}

/// The arguments after `--shard i/N` that every shard passes to `reproduce`: `--cpus auto` (a
/// machine with fewer CPUs than the study pins runs on the first of its own, a deviation in the
/// report) and the `--repeats` in force.
fn reproduce_flags(job: &Job) -> String {
    let mut flags = "--cpus auto".to_string();
    if let Some(repeats) = job.repeats {
        flags.push_str(&format!(" --repeats {repeats}"));
    }
    flags
}

/// `path` as text a shell reads as one word without quotes; anything else is refused, naming it.
fn shell_word(what: &str, path: &Path) -> Result<String> {
    let text = path
        .to_str()
        .with_context(|| format!("{what} {} is not UTF-8", path.display()))?;
    if text.is_empty()
        || !text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
    {
        bail!("{what} {text:?} has characters a shell would read; rename its folder");
    }
    Ok(text.to_string())
}

/// A job name from the study id: lower-case letters, digits and `-`, at most 50 characters.
fn job_name(study: &str) -> String {
    let mut name: String = format!("parkbench-{study}")
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.truncate(50);
    name.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests;
