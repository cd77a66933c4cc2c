//! The command line: one clap struct per subcommand, each turned into what its command in `ops`
//! takes. The commands that build and run (`run`), that go back to a run (`rerun`: rerun,
//! explain), that read run folders and archives (`files`), and `bench` have their arguments side
//! by side.

mod author;
mod bench;
mod doctor;
mod files;
mod fleet;
mod pin;
mod rerun;
mod run;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub use author::{NewCommand, NewProbeArgs, NewStudyArgs, PlanArgs};
pub use bench::{BenchCommand, FidelityArgs, ScaleArgs};
pub use doctor::DoctorArgs;
pub use files::{
    ArchiveArgs, CheckArgs, CleanArgs, CompareArgs, DriverArgs, ReportArgs, SignArgs, SigningArgs,
    VerifyArgs,
};
pub use fleet::{ExportArgs, ExportCommand, KubernetesArgs, MergeArgs, SlurmArgs};
pub use pin::{PinCommand, PinLockArgs, PinUpdateArgs};
pub use rerun::{ExplainArgs, RerunArgs};
pub use run::{BuildArgs, ReproduceArgs, RunArgs};

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
    /// Check that this machine can build and run: Engine, cgroups, CPUs, disk, tools; with
    /// `--hosts`, that other Docker Engines can run: each one's machine and hardware class.
    Doctor(DoctorArgs),
    /// Scaffolds for an author: a commented study file, or a probe image that runs as it is.
    #[command(subcommand)]
    New(NewCommand),
    /// Check a study, its images and this machine without building or running; print the matrix,
    /// the images to build and the expected time.
    Plan(PlanArgs),
    /// Build every pinned image (a no-op when nothing changed) and print the build manifest.
    Build(BuildArgs),
    /// Maintain the pins of toolchains/: lock a root filesystem's packages, record a pin's sha256.
    #[command(subcommand)]
    Pin(PinCommand),
    /// Run a study: every process of its matrix in its own container, every sample kept.
    Run(RunArgs),
    /// Recompute statistics, report, figure and verdicts of a run from its raw samples.
    Report(ReportArgs),
    /// Write a run's deterministic archive: samples, environment, manifest, report, sources, SHA256SUMS.
    Archive(ArchiveArgs),
    /// Check an archive's integrity: every SHA256SUMS line and its structure. Offline; nothing is extracted.
    Check(CheckArgs),
    /// Sign an archive with an SSH key: `<archive>.sig`, as `ssh-keygen -Y sign -n parkbench` writes it.
    Sign(SignArgs),
    /// Recompute statistics and verdicts from an archive or run directory, offline, and print them.
    Verify(VerifyArgs),
    /// Compare two runs (run folders or archives, any mix), each recomputed from its raw samples.
    Compare(CompareArgs),
    /// The whole job: doctor → build → run → report → verdicts → archive.
    Reproduce(ReproduceArgs),
    /// Rerun an archive's study here with its binaries (loaded from it, or rebuilt and checked), then
    /// compare the new run with the archived one.
    Rerun(RerunArgs),
    /// Join runs of one study — its shards (`run --shard i/N`) or reruns on other machines — into
    /// one run folder and archive, the claims judged per hardware class.
    Merge(MergeArgs),
    /// Write a batch scheduler's job that runs a study's shards.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Explain a claim that differs: rerun its probes with one declared factor changed at a time
    /// (the study's `factors:`), then say which factor, if any, accounts for the difference.
    Explain(ExplainArgs),
    /// Remove parkbench's images (`--images`), its artifact cache (`--cache`), or dead runs' leases on
    /// hosts (`--leases`). Runs are never touched.
    Clean(CleanArgs),
    /// Build the driver in the pinned Rust toolchain image: the same file on every machine from the
    /// same sources (`just driver`).
    Driver(DriverArgs),
    /// Benchmarks of the kit itself.
    #[command(subcommand)]
    Bench(BenchCommand),
}
