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
    /// Write docker/NAME/: a probe image whose program runs as it is, in the kind asked.
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
pub struct NewProbeArgs {
    /// The probe image's name (lowercase letters, digits, `-`, `_`): its folder under docker/.
    pub name: String,
    /// The program's language: rust, go, c, python, node, java, or binary (a prebuilt program
    /// pinned by its sha256).
    #[arg(long, value_name = "LANG")]
    pub lang: Lang,
    /// What the program is measured for: steady, peak, timed, latency or reported.
    #[arg(long, value_name = "KIND", default_value = "steady", value_parser = parse_kind)]
    pub kind: Kind,
}

fn parse_kind(s: &str) -> Result<Kind, String> {
    serde_yaml::from_str(s)
        .map_err(|_| format!("no kind {s:?}: take steady, peak, timed, latency or reported"))
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The study file.
    pub study: PathBuf,
    /// The CPUs a run would pin to: `auto` or a list such as `0-1` (as for `run`).
    #[arg(long, value_name = "LIST|auto")]
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
