//! The arguments of `bench`: benchmarks of the kit itself.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::ops::bench;
use crate::study::cpus::CpuChoice;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The same probe binaries measured in containers and natively, side by side; prints RSS ratios.
    Fidelity(FidelityArgs),
    /// Writes RUNS archives of a study, each a whole run of its reference run's samples on a
    /// hardware class of its own: what `merge` is timed on (`just bench-scale`).
    Scale(ScaleArgs),
}

#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// The study whose reference run (`reference/run.tar.gz` beside it) is copied (default: article 000).
    #[arg(long, value_name = "STUDY_FILE")]
    pub study: Option<PathBuf>,
    /// How many archives.
    #[arg(long)]
    pub runs: u32,
    /// The folder to write them into (made if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

impl From<ScaleArgs> for bench::Scale {
    fn from(a: ScaleArgs) -> Self {
        bench::Scale {
            study: a.study,
            runs: a.runs,
            out: a.out,
        }
    }
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
    #[arg(
        long,
        value_name = "LIST|auto",
        default_value = "auto",
        env = "PARKBENCH_CPUS"
    )]
    pub cpus: CpuChoice,
    /// Kernel mode: measure in a VM under this guest kernel (e.g. `debian-6.1`) instead of natively.
    #[arg(long, value_name = "KERNEL")]
    pub kernel: Option<String>,
}

impl From<FidelityArgs> for bench::Fidelity {
    fn from(a: FidelityArgs) -> Self {
        bench::Fidelity {
            study: a.study,
            probes: a.probes,
            tasks: a.tasks,
            repeats: a.repeats,
            cpus: a.cpus,
            kernel: a.kernel,
        }
    }
}
