//! The arguments of the commands that build and run: `build`, `run`, `reproduce`.

use std::path::PathBuf;

use clap::Args;

use crate::images::BuildOptions;
use crate::ops::{launch, reproduce, run};
use crate::run::shard::Shard;
use crate::study::cpus::CpuChoice;
use crate::study::repeats::RepeatsChoice;

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
    /// Stop at the first image whose build fails. Without it, a failed image and the images below
    /// it are recorded as failed and every other image is built (the command then exits 1).
    #[arg(long)]
    pub strict_build: bool,
    /// Refuse to build a root filesystem whose locked packages (toolchains/<pin>.lock) are
    /// neither cached nor served any more. Without it the served versions stand in, and the drift
    /// is recorded in the manifest.
    #[arg(long)]
    pub strict_pins: bool,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The study file; the embedded default study (article 000) when omitted.
    pub study: Option<PathBuf>,
    /// CPUs to pin to: `auto` (the first min(requested, available)) or a list such as `0-1`.
    #[arg(long, value_name = "LIST|auto", env = "PARKBENCH_CPUS")]
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
    /// Measure even when another run holds some of these CPUs (two runs then measure each other);
    /// recorded as a validity warning on every sample.
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
    /// Stop at the first image whose build fails. Without it, the probes of a failed image (and of
    /// the images below it) are `not measured: build failed: <its error line>` and the others run.
    #[arg(long)]
    pub strict_build: bool,
    /// Refuse to build a root filesystem whose locked packages (toolchains/<pin>.lock) are
    /// neither cached nor served any more. Without it the served versions stand in, and the run
    /// records the drift as a deviation (and a validity warning when the probes use a moved one).
    #[arg(long)]
    pub strict_pins: bool,
    /// Measure one slice of the matrix, for a batch scheduler: shard i (1 to N) of N. The probe ×
    /// scale cells are dealt round-robin in run order, a cell's processes together; join the
    /// shards' archives with `parkbench merge`.
    #[arg(long, value_name = "i/N", conflicts_with = "resume")]
    pub shard: Option<Shard>,
    /// A smoke run of these probes only (comma-separated): a partial run, marked so in run.json
    /// and the report, never a reference run.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "PROBE,…",
        conflicts_with = "resume"
    )]
    pub only: Vec<String>,
    /// A smoke run at these task counts only (comma-separated, each one of the study's scales): a
    /// partial run, marked so in run.json and the report, never a reference run.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "N,…",
        conflicts_with = "resume"
    )]
    pub scales: Vec<u64>,
    /// Run on these Docker Engines (comma-separated): `local`, a URL (`unix:///…`, `tcp://h:p`
    /// with the TLS files of DOCKER_CERT_PATH, `ssh://user@host`), a Docker context or a name of a
    /// hosts.yaml (docs/fleet.md, Hosts); one run folder, a sub-run per
    /// host in `hosts/<name>/`. With `--resume`: hosts of a lost host's class to finish its cells.
    #[arg(long, value_delimiter = ',', value_name = "NAME,…")]
    pub hosts: Vec<String>,
    /// With `--hosts` (the default): every cell on every host, the claims judged per hardware
    /// class (and per host when a class has several).
    #[arg(long, conflicts_with = "spread")]
    pub across: bool,
    /// With `--hosts`: the matrix dealt over hosts of one hardware class, host j measuring shard
    /// j/n, to finish sooner.
    #[arg(long)]
    pub spread: bool,
    /// How the probe images reach the hosts: `ship` (from this machine through the Engine API,
    /// image IDs kept) or `build` (built on each host from the same pins).
    #[arg(long, value_name = "ship|build", default_value = "ship")]
    pub images: ImagesChoice,
    /// Accept a `tcp://` host without TLS (neither authenticated nor encrypted); the report warns.
    #[arg(long)]
    pub allow_plain_tcp: bool,
}

/// `--images`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ImagesChoice {
    #[default]
    Ship,
    Build,
}

#[derive(Debug, Args)]
pub struct ReproduceArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Exit with code 4 when a claim is not reproduced.
    #[arg(long)]
    pub strict: bool,
    /// Add the probe images to the archive (and the locked .debs, as `--with-debs`).
    #[arg(long)]
    pub with_images: bool,
    /// Add the locked .debs of the root filesystems the run's images stand on to the archive.
    #[arg(long)]
    pub with_debs: bool,
    /// Leave out the self-contained driver (`<run-id>/parkbench`) the archive otherwise carries,
    /// keeping its record (`parkbench.json`), which names it by its sha256: `verify
    /// --rebuild-driver` rebuilds it from the archive's sources and compares.
    #[arg(long)]
    pub no_driver: bool,
    /// Make this run its study's reference run (`results/<study>/reference/`: report, figure and an
    /// archive of the run folder alone); refused when a build or a process failed, when the
    /// machine was not quiet (busy pinned CPUs, steal, memory pressure) or a file is over 1 MiB.
    #[arg(long)]
    pub reference: bool,
    /// Reproduce every study in `results/` in turn, then write `results/index.md`.
    #[arg(long, conflicts_with_all = ["study", "resume"])]
    pub all: bool,
    /// Sign the archive with this SSH private key, as `parkbench sign --key KEY` does.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<std::path::PathBuf>,
    /// Build the pinned driver at FILE (as `parkbench driver --or-host --out FILE`: where it cannot
    /// be built, this driver is copied there, and said) while the study's images build, then hand
    /// the whole command over to it: the run, its report and its archive are that driver's work
    /// (what `just reproduce` runs).
    #[arg(long, value_name = "FILE", env = "PARKBENCH_PINNED_DRIVER")]
    pub pinned_driver: Option<std::path::PathBuf>,
}

impl BuildArgs {
    pub fn options(&self) -> BuildOptions {
        BuildOptions {
            no_cache: self.no_cache,
            only: self.only.clone(),
            verbose: self.verbose,
            strict: self.strict_build,
            strict_pins: self.strict_pins,
            other_host: false,
            beside: false,
            built_before: Vec::new(),
        }
    }
}

impl From<RunArgs> for run::Options {
    fn from(a: RunArgs) -> Self {
        run::Options {
            study: a.study,
            cpus: a.cpus,
            resume: a.resume,
            repeats: a.repeats,
            kernel: a.kernel,
            shared_cpus: a.allow_shared_cpus,
            wait_for_cpus: a.wait_for_cpus && !a.allow_shared_cpus,
            strict_build: a.strict_build,
            strict_pins: a.strict_pins,
            shard: a.shard,
            slice: crate::run::slice::Slice::of(a.only, a.scales),
            fleet: launch::Hosts {
                names: a.hosts,
                across: a.across,
                spread: a.spread,
                build: a.images == ImagesChoice::Build,
                allow_plain_tcp: a.allow_plain_tcp,
            },
            estimates: None,
            built_before: Vec::new(),
        }
    }
}

impl From<ReproduceArgs> for reproduce::Options {
    fn from(a: ReproduceArgs) -> Self {
        reproduce::Options {
            run: a.run.into(),
            strict: a.strict,
            contents: crate::ops::archive::Contents {
                sources: true,
                images: a.with_images,
                driver: if a.no_driver {
                    crate::ops::archive::Driver::Named
                } else {
                    crate::ops::archive::Driver::Inside
                },
                debs: a.with_debs,
            },
            reference: a.reference,
            all: a.all,
            sign: a.sign,
            pinned_driver: a.pinned_driver,
        }
    }
}
