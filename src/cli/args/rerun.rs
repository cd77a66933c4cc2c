//! The arguments of the commands that go back to a run: `rerun` an archive, `explain` a claim.

use std::path::PathBuf;

use clap::Args;

use crate::ops::{explain, rerun};
use crate::study::cpus::CpuChoice;
use crate::study::repeats::RepeatsChoice;

#[derive(Debug, Args)]
pub struct RerunArgs {
    /// The archive to rerun (`<run-id>.tar.gz`, written by `parkbench archive` or `reproduce`).
    pub archive: PathBuf,
    /// CPUs to pin to: `auto` (the first min(requested, available)) or a list such as `0-1`; the
    /// archived study's list when neither this nor `PARKBENCH_CPUS` gives one.
    #[arg(long, value_name = "LIST|auto", env = "PARKBENCH_CPUS")]
    pub cpus: Option<CpuChoice>,
    /// Run images rebuilt from the archive's sources even when a binary's sha256 differs from the
    /// archive's (each difference is recorded as a deviation).
    #[arg(long)]
    pub accept_different_binaries: bool,
    /// Rerun with the archive's seccomp profile even when it lets containers do more than the
    /// Engine's default profile (recorded as a deviation and a validity warning).
    #[arg(long)]
    pub accept_seccomp_from_archive: bool,
    /// Leave the archive's images in the Engine after the rerun, under their rerun-only tags
    /// (`parkbench-rerun/<archive>/<image>:<hash>`); they are removed by default.
    #[arg(long)]
    pub keep_images: bool,
    /// Measure even when another run holds some of these CPUs (recorded as a validity warning).
    #[arg(long)]
    pub allow_shared_cpus: bool,
    /// When another run holds some of these CPUs, wait for it to end, then measure (said once per
    /// CPU waited for). --allow-shared-cpus, which takes no lock, goes before it.
    #[arg(
        long,
        env = "PARKBENCH_WAIT_FOR_CPUS",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub wait_for_cpus: bool,
    /// Resume an interrupted rerun of this archive: run only its missing cells.
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// Processes per probe and scale, as for `run`; the archived run's own when omitted.
    #[arg(long, value_name = "N|auto", conflicts_with = "resume")]
    pub repeats: Option<RepeatsChoice>,
    /// When the archive carries no images and they are rebuilt: stop at the first image whose
    /// build fails (otherwise the probes of a failed image are `not measured`).
    #[arg(long)]
    pub strict_build: bool,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The run whose claim is explained (e.g. `results/wait-1m/runs/latest`).
    pub run_dir: PathBuf,
    /// The claim to explain (an id of the run's study).
    #[arg(long)]
    pub claim: String,
    /// Only these factors (comma-separated ids of the study's `factors:`); when omitted, all that
    /// bear on the claim's probes but those whose images would take minutes to build here (each
    /// named); `all` for every one.
    #[arg(long, value_delimiter = ',', value_name = "FACTOR,…")]
    pub factors: Vec<String>,
    /// Sweep even when the claim reproduced in the run.
    #[arg(long)]
    pub force: bool,
    /// Processes per variant; the study's `protocol.repeats` when omitted.
    #[arg(long, value_name = "N|auto")]
    pub repeats: Option<RepeatsChoice>,
    /// CPUs to pin to, as for `run` (default `auto`).
    #[arg(long, value_name = "LIST|auto", env = "PARKBENCH_CPUS")]
    pub cpus: Option<CpuChoice>,
    /// Do not try the two closest levels together when no single one reaches the published value.
    #[arg(long)]
    pub no_pairs: bool,
    /// Measure even when another run holds some of these CPUs (recorded as a validity warning on
    /// every sample of the sweep).
    #[arg(long)]
    pub allow_shared_cpus: bool,
    /// When another run holds some of the CPUs, wait for it to end, then measure (said once per
    /// CPU waited for). --allow-shared-cpus, which takes no lock, goes before it.
    #[arg(
        long,
        env = "PARKBENCH_WAIT_FOR_CPUS",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub wait_for_cpus: bool,
}

impl From<RerunArgs> for rerun::Options {
    fn from(a: RerunArgs) -> Self {
        rerun::Options {
            archive: a.archive,
            cpus: a.cpus,
            accept_different_binaries: a.accept_different_binaries,
            accept_seccomp_from_archive: a.accept_seccomp_from_archive,
            keep_images: a.keep_images,
            shared_cpus: a.allow_shared_cpus,
            wait_for_cpus: a.wait_for_cpus && !a.allow_shared_cpus,
            resume: a.resume,
            repeats: a.repeats,
            strict_build: a.strict_build,
        }
    }
}

impl From<ExplainArgs> for explain::Options {
    fn from(a: ExplainArgs) -> Self {
        explain::Options {
            run_dir: a.run_dir,
            claim: a.claim,
            factors: a.factors,
            force: a.force,
            repeats: a.repeats,
            cpus: a.cpus,
            no_pairs: a.no_pairs,
            shared_cpus: a.allow_shared_cpus,
            wait_for_cpus: a.wait_for_cpus && !a.allow_shared_cpus,
        }
    }
}
