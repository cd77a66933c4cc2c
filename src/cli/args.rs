//! The command line: one clap struct per subcommand.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::run::lifecycle::CpuChoice;
use crate::study::repeats::RepeatsChoice;

/// Rerun published runtime benchmarks in pinned containers, with evidence attached.
#[derive(Debug, Parser)]
#[command(name = "parkbench", version)]
pub struct Cli {
    /// The parkbench repository (holds docker/, toolchains/ and results/).
    #[arg(long, global = true, default_value = ".", env = "PARKBENCH_REPO")]
    pub repo: PathBuf,
    /// Where studies keep their runs; `<repo>/results` when omitted.
    #[arg(long, global = true, env = "PARKBENCH_RESULTS")]
    pub results: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check that this machine can build and run: Engine, cgroups, CPUs, disk, tools.
    Doctor,
    /// Build every pinned image (a no-op when nothing changed) and print the build manifest.
    Build(BuildArgs),
    /// Run a study: every process of its matrix in its own container, every sample kept.
    Run(RunArgs),
    /// Recompute statistics, report, figure and verdicts of a run from its raw samples.
    Report(ReportArgs),
    /// Write a run's deterministic archive: samples, environment, manifest, report, sources, SHA256SUMS.
    Archive(ArchiveArgs),
    /// Verify an archive: every SHA256SUMS line and its structure. Offline; nothing is extracted.
    Check(CheckArgs),
    /// Recompute statistics and verdicts from an archive or run directory, offline, and print them.
    Verify(VerifyArgs),
    /// Compare two runs (run folders or archives, any mix), each recomputed from its raw samples.
    Compare(CompareArgs),
    /// The whole job: doctor → build → run → report → verdicts → archive.
    Reproduce(ReproduceArgs),
    /// Rerun an archive's study here with its binaries (loaded from it, or rebuilt and checked), then
    /// compare the new run with the archived one.
    Rerun(RerunArgs),
    /// Explain a claim that differs: rerun its probes with one declared factor changed at a time
    /// (the study's `factors:`), then say which factor, if any, accounts for the difference.
    Explain(ExplainArgs),
    /// Remove parkbench's images (`--images`) and its artifact cache (`--cache`). Runs are never touched.
    Clean(CleanArgs),
    /// Benchmarks of the kit itself.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run directory (`results/<study>/runs/<run-id>`).
    pub run_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Also add the probe images, exported through the Engine, for bit-exact reruns elsewhere.
    #[arg(long)]
    pub with_images: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The archive (`<run-id>.tar.gz`).
    pub archive: PathBuf,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// An archive (`<run-id>.tar.gz`) or a run directory.
    pub path: PathBuf,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The reference run: an archive (`<run-id>.tar.gz`) or a run directory.
    pub a: PathBuf,
    /// The run compared with it: an archive or a run directory.
    pub b: PathBuf,
    /// Also write `compare.md` and `compare.svg` into this folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Exit with code 4 when any cell's B ÷ A differs from 1 by more than this many percent.
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<f64>,
}

#[derive(Debug, Args)]
pub struct RerunArgs {
    /// The archive to rerun (`<run-id>.tar.gz`, written by `parkbench archive` or `reproduce`).
    pub archive: PathBuf,
    /// CPUs to pin to: `auto` (the first min(requested, available)) or a list such as `0-1`; the
    /// archived study's list when omitted.
    #[arg(long, value_name = "LIST|auto")]
    pub cpus: Option<CpuChoice>,
    /// Run images rebuilt from the archive's sources even when a binary's sha256 differs from the
    /// archive's (each difference is recorded as a deviation).
    #[arg(long)]
    pub accept_different_binaries: bool,
    /// Resume an interrupted rerun of this archive: run only its missing cells.
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// Processes per probe and scale, as for `run`; the archived run's own when omitted.
    #[arg(long, value_name = "N|auto", conflicts_with = "resume")]
    pub repeats: Option<RepeatsChoice>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The run whose claim is explained (e.g. `results/wait-1m/runs/latest`).
    pub run_dir: PathBuf,
    /// The claim to explain (an id of the run's study).
    #[arg(long)]
    pub claim: String,
    /// Only these factors (comma-separated ids of the study's `factors:`); all that bear on the
    /// claim's probes when omitted.
    #[arg(long, value_delimiter = ',', value_name = "FACTOR,…")]
    pub factors: Vec<String>,
    /// Sweep even when the claim reproduced in the run.
    #[arg(long)]
    pub force: bool,
    /// Processes per variant; the study's `protocol.repeats` when omitted.
    #[arg(long, value_name = "N|auto")]
    pub repeats: Option<RepeatsChoice>,
    /// CPUs to pin to, as for `run` (default `auto`).
    #[arg(long, value_name = "LIST|auto")]
    pub cpus: Option<CpuChoice>,
    /// Do not try the two closest levels together when no single one reaches the published value.
    #[arg(long)]
    pub no_pairs: bool,
}

#[derive(Debug, Args)]
pub struct ReproduceArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Exit with code 4 when a claim is not reproduced.
    #[arg(long)]
    pub strict: bool,
    /// Add the probe images to the archive.
    #[arg(long)]
    pub with_images: bool,
    /// Reproduce every study in `results/` in turn, then write `results/index.md`.
    #[arg(long, conflicts_with_all = ["study", "resume"])]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Remove every image tagged under the parkbench namespace.
    #[arg(long)]
    pub images: bool,
    /// Remove the artifact cache (pinned artifacts, vendored crates).
    #[arg(long)]
    pub cache: bool,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The same probe binaries measured in containers and natively, side by side; prints RSS ratios.
    Fidelity(FidelityArgs),
}

#[derive(Debug, Args)]
pub struct FidelityArgs {
    /// The study whose probes are measured (default: article 000).
    #[arg(long, value_name = "STUDY_FILE")]
    pub study: Option<PathBuf>,
    /// Only these probes of the study (comma-separated ids); each must be a single binary.
    #[arg(long, value_delimiter = ',', value_name = "ID,…")]
    pub probes: Vec<String>,
    /// Tasks per process.
    #[arg(long, default_value_t = 1_000_000)]
    pub tasks: u64,
    /// Processes per probe and way of running.
    #[arg(long, default_value_t = 3)]
    pub repeats: u32,
    /// CPUs to pin to (as for `run`).
    #[arg(long, value_name = "LIST|auto", default_value = "auto")]
    pub cpus: CpuChoice,
    /// Kernel mode: measure in a VM under this guest kernel (e.g. `debian-6.1`) instead of natively.
    #[arg(long, value_name = "KERNEL")]
    pub kernel: Option<String>,
}

#[derive(Debug, Default, Args)]
pub struct BuildArgs {
    /// Rebuild every image without the Engine's build cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Also write the manifest as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Print every line of the builds.
    #[arg(long, short)]
    pub verbose: bool,
    /// Build only these images (comma-separated) and the images they are built from.
    #[arg(long, value_delimiter = ',', value_name = "IMAGE,…")]
    pub only: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The study file; the embedded default study (article 000) when omitted.
    pub study: Option<PathBuf>,
    /// CPUs to pin to: `auto` (the first min(requested, available)) or a list such as `0-1`.
    #[arg(long, value_name = "LIST|auto")]
    pub cpus: Option<CpuChoice>,
    /// Resume an interrupted run: run only its missing cells.
    #[arg(long, value_name = "RUN_DIR", conflicts_with = "study")]
    pub resume: Option<PathBuf>,
    /// Processes per probe and scale instead of the study's `protocol.repeats`: `auto` (the study's
    /// count, then one more at a time while a cell's CV is above `protocol.target_cv` or 0.5 %, up
    /// to 10) or a number. A resumed run keeps the rule it started with.
    #[arg(long, value_name = "auto|N", conflicts_with = "resume")]
    pub repeats: Option<RepeatsChoice>,
    /// The kernels to run under instead of the study's `protocol.kernels` (comma-separated):
    /// `host` (containers on this host's kernel) or a guest kernel such as `debian-6.1` or
    /// `wsl-like` (a VM per process). A resumed run keeps the kernels it started with.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "KERNEL,…",
        conflicts_with = "resume"
    )]
    pub kernel: Vec<String>,
}
