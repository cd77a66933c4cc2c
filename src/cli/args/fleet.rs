//! The arguments of the commands for runs on many machines: `merge` and `export`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::ops::{export, merge};

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
}

#[derive(Debug, Args)]
pub struct KubernetesArgs {
    /// The study file, inside the repository.
    pub study: PathBuf,
    /// How many shards (pods).
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// Write the manifest to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The kit's image, already loaded on every node (never pulled); `parkbench/kit:<version>`
    /// when omitted.
    #[arg(long)]
    pub image: Option<String>,
}

impl From<MergeArgs> for merge::Options {
    fn from(a: MergeArgs) -> Self {
        merge::Options {
            runs: a.runs,
            out: a.out,
        }
    }
}

impl From<KubernetesArgs> for export::Options {
    fn from(a: KubernetesArgs) -> Self {
        export::Options {
            study: a.study,
            shards: a.shards,
            out: a.out,
            image: a.image,
        }
    }
}
