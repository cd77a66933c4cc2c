//! A probe: one program under test, the image it runs in, and how it is measured.

use std::collections::BTreeMap;

use anyhow::{Result, ensure};
use serde::{Deserialize, Serialize};

use crate::study::kind::Kind;

/// The program a probe runs unless it names another.
pub const DEFAULT_PROGRAM: &str = "/usr/local/bin/probe";

fn default_program() -> String {
    DEFAULT_PROGRAM.to_string()
}

fn is_default_program(p: &String) -> bool {
    p == DEFAULT_PROGRAM
}

/// One program under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// Identifier used in samples, claims and the report.
    pub id: String,
    /// Probe image name: a folder under `docker/` built by `parkbench build`.
    pub image: String,
    /// Absolute path of the program run in the image (default `/usr/local/bin/probe`); must be one
    /// of the image's `binaries` in `docker/<image>/image.yaml`.
    #[serde(
        default = "default_program",
        skip_serializing_if = "is_default_program"
    )]
    pub program: String,
    /// Task counts this probe runs, instead of `protocol.scales` (the default; scale-free probes,
    /// e.g. timed or reported ones, use `[1]`). A claim about a probe with exactly one scale may
    /// omit `tasks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scales: Option<Vec<u64>>,
    /// Arguments to the probe; `{tasks}`, `{workers}` (how many CPUs the probe has), `{cpus}` (its
    /// CPU list) and `{other_cpus}` (the run's CPUs it does not have) are replaced. Default none.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment of the probe, over the image's; values may use the words of `args`. Default
    /// none.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How the probe is measured (`steady`, `peak`, `timed`, `latency`, `reported`; see `kind`).
    /// Default `steady`.
    #[serde(default, skip_serializing_if = "Kind::is_steady")]
    pub kind: Kind,
    /// Timed, latency and reported kinds: the keys its `result` lines may carry; any other key makes
    /// the sample invalid. Empty: any key is accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<String>,
    /// Pin this probe to the first N of the run's CPUs instead of all of them (its `{workers}` is
    /// then N). A one-thread timed program is steadier on one CPU; a two-thread ping-pong can be
    /// measured on one CPU and on two. A run with fewer CPUs records the probe's cells invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<usize>,
    /// The kernel this probe runs under (`None`: the host's, in a container): set from
    /// `protocol.kernels` or `--kernel` ([`Study::under_kernels`](crate::study::Study::under_kernels)) for probes that do not name
    /// their own. A probe may name one (`kernel: debian-6.1`; an explanation's kernel variants
    /// do), unless the study runs under several kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Under a guest kernel: the transparent huge pages mode the guest's init sets before the
    /// probe starts (`always`, `madvise` or `never`); without it the kernel's own default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp: Option<String>,
}

/// The THP modes a guest's init can set.
pub const THP_MODES: [&str; 3] = ["always", "madvise", "never"];

/// Fails unless `mode` is one of [`THP_MODES`], naming them.
pub fn check_thp_mode(mode: &str) -> Result<()> {
    ensure!(
        THP_MODES.contains(&mode),
        "thp: {mode:?} is not a THP mode: it is not one of {}",
        THP_MODES.join(", ")
    );
    Ok(())
}

/// Fails when `name`, a probe's or a factor level's environment variable, would steer the dynamic
/// loader (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`, any `LD_*`): a container's environment reaches
/// every process in it, the sampler's included, which would then measure under code loaded from
/// outside the program the study names.
pub fn check_env_name(name: &str) -> Result<()> {
    ensure!(
        !name.starts_with("LD_"),
        "env: {name} would load code into every process of the container, the sampler's included, \
         which would then measure under foreign code; build what the probe needs into a variant \
         image instead (a docker/<image>.<variant>/ folder, named by a factor level's `image`)"
    );
    Ok(())
}

impl Probe {
    /// The CPUs this probe runs on, from the run's pinned list: the first `cpus` of them, or all.
    /// `Err` says why the run cannot give the probe what it asks for.
    pub fn pinned_cpus(&self, run_cpus: &[usize]) -> std::result::Result<Vec<usize>, String> {
        match self.cpus {
            None => Ok(run_cpus.to_vec()),
            Some(n) if n <= run_cpus.len() => Ok(run_cpus[..n].to_vec()),
            Some(n) => Err(format!(
                "probe {:?} asks for {n} CPUs but this run has {} ({}); pass --cpus with more",
                self.id,
                run_cpus.len(),
                crate::study::cpuset::format(run_cpus)
            )),
        }
    }
}
