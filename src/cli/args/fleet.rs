//! The arguments of the commands for runs on many machines: `merge` and `export`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::ops::{export, merge};
use crate::study::repeats::RepeatsChoice;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The runs to join: archives (`<run-id>.tar.gz`) or run folders of one study — its shards
    /// (`run --shard i/N`) or independent reruns.
    #[arg(required = true, value_name = "ARCHIVE")]
    pub runs: Vec<PathBuf>,
    /// Write the merged run folder and its archive into this folder (nothing is written outside
    /// it); the study's `runs/` when omitted.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// A Kubernetes Indexed Job (YAML) that runs a study's shards, one pod per shard, no two on one
    /// node.
    Kubernetes(KubernetesArgs),
    /// A Slurm batch script: a job array of one task per shard, each owning its node
    /// (`--exclusive`), then a job that merges the shards' archives into `<results>/merged/` and
    /// verifies it. The shards write under the global `--results` folder, which every node must see.
    Slurm(SlurmArgs),
}

/// What every format takes.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The study file.
    pub study: PathBuf,
    /// How many shards (one machine each).
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// Processes per probe and scale in every shard instead of the study's `protocol.repeats`:
    /// `auto` or a number, as on `run`.
    #[arg(long, value_name = "auto|N")]
    pub repeats: Option<RepeatsChoice>,
    /// Write the job to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct KubernetesArgs {
    #[command(flatten)]
    pub job: ExportArgs,
    /// The kit's image, already loaded on every node (never pulled); `parkbench/kit:<version>`
    /// when omitted.
    #[arg(long)]
    pub image: Option<String>,
}

#[derive(Debug, Args)]
pub struct SlurmArgs {
    #[command(flatten)]
    pub job: ExportArgs,
    /// The partition (or partitions, comma-separated) to run in; the cluster's default when
    /// omitted.
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,
    /// Each job's time limit as sbatch reads it (`90`, `1:30:00`, `2-00:00:00`); the partition's
    /// default when omitted.
    #[arg(long, value_name = "T")]
    pub time: Option<String>,
}

impl ExportCommand {
    /// What to export, and the format to write it in.
    pub fn into_parts(self) -> (export::Options, Box<dyn export::Format>) {
        match self {
            ExportCommand::Kubernetes(a) => (
                a.job.into(),
                Box::new(export::Kubernetes { image: a.image }),
            ),
            ExportCommand::Slurm(a) => (
                a.job.into(),
                Box::new(export::Slurm {
                    partition: a.partition,
                    time: a.time,
                }),
            ),
        }
    }
}

impl From<MergeArgs> for merge::Options {
    fn from(a: MergeArgs) -> Self {
        merge::Options {
            runs: a.runs,
            out: a.out,
        }
    }
}

impl From<ExportArgs> for export::Options {
    fn from(a: ExportArgs) -> Self {
        export::Options {
            study: a.study,
            shards: a.shards,
            repeats: a.repeats,
            out: a.out,
        }
    }
}
