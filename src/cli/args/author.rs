//! The arguments of the author's commands: `new` (scaffolds) and `plan` (a study checked without
//! building or running).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::ops::new::Lang;
use crate::ops::plan;
use crate::study::Kind;
use crate::study::cpus::CpuChoice;

#[derive(Debug, Subcommand)]
pub enum NewCommand {
    /// Write results/ID/study.yaml, every section commented, and a README stub.
    Study(NewStudyArgs),
    /// Write docker/NAME/: a probe image whose program runs as it is, in the kind asked; or, with
    /// --debian, a root filesystem pin with Debian's packages of a runtime and a probe image on it
    /// whose command line you write.
    Probe(NewProbeArgs),
}

#[derive(Debug, Args)]
pub struct NewStudyArgs {
    /// The study's id (lowercase letters, digits, `-`, `_`, `.`): its folder under results/.
    pub id: String,
    /// A probe image made by `new probe` to list in the study (repeat for more); without one, the
    /// kit's own Go probe stands in.
    #[arg(long = "probe", value_name = "NAME")]
    pub probes: Vec<String>,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("runtime").required(true).args(["lang", "debian"]))]
pub struct NewProbeArgs {
    /// The probe image's name (lowercase letters, digits, `-`, `_`): its folder under docker/.
    pub name: String,
    /// The program's language: rust, go, c, python, node, java, or binary (a prebuilt program
    /// pinned by its sha256).
    #[arg(long, value_name = "LANG")]
    pub lang: Option<Lang>,
    /// A runtime the kit has no template for, from Debian's packages (`elixir`): writes the root
    /// filesystem pin toolchains/debian-NAME.yaml with these packages (its sha256 a placeholder
    /// that `parkbench pin update debian-NAME` records) and docker/NAME/ on it.
    #[arg(long, value_name = "PACKAGE,…", value_delimiter = ',')]
    pub debian: Vec<String>,
    // What the program is measured for: the help is `kind_help`'s, from the list of kinds.
    #[arg(long, value_name = "KIND", value_parser = parse_kind, help = kind_help())]
    pub kind: Option<Kind>,
}

/// `--kind`'s help: the kinds, and the default with each runtime.
fn kind_help() -> String {
    format!(
        "What the program is measured for: {} (default: {} with --lang; {} with --debian, which \
         runs any program unmodified)",
        Kind::listed(),
        Kind::default().name(),
        Kind::ANY_PROGRAM.name()
    )
}

fn parse_kind(s: &str) -> Result<Kind, String> {
    Kind::from_name(s).ok_or_else(|| format!("no kind {s:?}: take {}", Kind::listed()))
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The study file.
    pub study: PathBuf,
    /// The CPUs a run would pin to: `auto` or a list such as `0-1` (as for `run`).
    #[arg(long, value_name = "LIST|auto", env = "PARKBENCH_CPUS")]
    pub cpus: Option<CpuChoice>,
    /// The kernels a run would use instead of the study's (as for `run`).
    #[arg(long, value_delimiter = ',', value_name = "KERNEL,…")]
    pub kernel: Vec<String>,
}

impl From<PlanArgs> for plan::Options {
    fn from(a: PlanArgs) -> Self {
        plan::Options {
            study: a.study,
            cpus: a.cpus,
            kernel: a.kernel,
        }
    }
}
