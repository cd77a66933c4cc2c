//! The study's source (the article and its published environment) and its measuring protocol.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::study::repeats::Repeats;

/// The published article and the environment it reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The article (title or file name).
    pub article: String,
    /// Published environment, free text (CPU, OS, kernel).
    pub environment: String,
    /// Published toolchain versions by name (e.g. `rustc: 1.97.1`); default none.
    #[serde(default)]
    pub toolchains: BTreeMap<String, String>,
    /// Published CPU list the processes were pinned to (e.g. `0-3`), as the article gives it.
    pub cpus: String,
}

/// The measuring protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocol {
    /// Task counts, one per scale; a probe may run its own (`probes[].scales`). Default none, which
    /// only a study whose every probe lists its own scales may leave.
    #[serde(default)]
    pub scales: Vec<u64>,
    /// Independent processes per probe and scale: a count (`3`), or processes on demand
    /// (`{min: 3, max: 10, target_cv: 0.005}`: `min` planned, then one more at a time while the
    /// cell's CV is above `target_cv`, up to `max`; see `repeats`).
    pub repeats: Repeats,
    /// Order of probes within a repeat (`fixed` or `alternate`).
    pub order: Order,
    /// CPU list every probe is pinned to with sched_setaffinity (e.g. `0-3`).
    pub cpus: String,
    /// Steady kind: wait after every task reported ready, before the first RSS reading, ms
    /// (default 500).
    #[serde(default = "default_settle_ms")]
    pub settle_ms: u64,
    /// Steady kind: RSS readings per process (default 5).
    #[serde(default = "default_samples")]
    pub samples: u32,
    /// Interval between RSS readings (steady) or between polls of a running program (other kinds),
    /// ms.
    pub interval_ms: u64,
    /// A process still running after this many seconds (s) is killed and recorded invalid.
    pub timeout_s: u64,
    /// How long every process runs at least, s, where the article's programs say so (each task
    /// sleeps 10 s): a process's expected time before any has ended, and the floor of every
    /// estimate the ETA makes. Optional; > 0 and below `timeout_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Timed and latency kinds: the coefficient of variation across processes a cell should stay under,
    /// a fraction (0.02 = 2 %); a cell above it is flagged in the report and the run's output.
    /// Optional: without it nothing is flagged (the CV is still reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cv: Option<f64>,
    /// A seccomp profile (JSON) every probe container is started with instead of the Engine's
    /// default: a path absolute or relative to the repository. Recorded, with its sha256, in the
    /// environment and the report (see `seccomp`). Without it: the Engine's default profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp: Option<String>,
    /// The kernels the matrix runs under, each in turn: `host` (containers on the host's kernel,
    /// the default) or a guest kernel (`debian-6.1`: a VM booted from `docker/kernel-debian-6.1/`).
    /// With more than one, every probe and claim is repeated per kernel as `<id>@<kernel>`.
    /// `--kernel` overrides it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<String>,
    /// Guest memory, MiB, under a guest kernel. Default: twice the largest probe image's
    /// initramfs, plus 4 KiB per task of the largest scale, plus 512 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_memory_mib: Option<u64>,
    /// Tasks (processes and threads, the sampler's and its supervisor's included) each probe's
    /// container may hold at once, > 0 (default 25,000); past it `fork` and `pthread_create` fail
    /// with EAGAIN. A runaway probe so stops inside its container, short of the host's own limit
    /// (kernel.pid_max is 32,768 on many machines); article 002's thread-limit probe creates up to
    /// 24,000 threads.
    #[serde(default = "default_pids_limit")]
    pub pids_limit: u64,
    /// Timed kind: when a batch (one `result` line) is dropped from its process's value — steal on
    /// the pinned CPUs, run-queue wait or involuntary switches above a threshold; see
    /// [`DropBatches`]. Default: steal above 5 % or wait above 5 % (beyond the median batch's).
    #[serde(default, skip_serializing_if = "DropBatches::is_default")]
    pub drop_batches: DropBatches,
    /// How each process is kept apart from the one before (see [`Isolation`]): `container` (a
    /// fresh container per process) or `process` (a fresh process in a container kept up for its
    /// cell). Default: by the probe's kind, `process` for timed, latency and reported, `container`
    /// for steady and peak (the articles' protocol). A probe under a guest kernel always boots its
    /// own VM in its own container. Recorded in every sample and the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
}

/// How each process of a cell is kept apart from the others (`protocol.isolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// A fresh container per process, created, started and removed around it.
    Container,
    /// One container per probe and cell stays up while the cell has processes left, holding the
    /// same confinement (no network, no capabilities, read-only root, nobody, the tasks limit, the
    /// study's seccomp); in it the sampler, as a small supervisor, starts each process afresh on
    /// the pinned CPUs, in its own empty working folder with `TMPDIR` there and the probe's
    /// environment, and once it has ended kills whatever it left and deletes the folder. A
    /// process that fails, times out or is OOM-killed takes its container with it.
    Process,
}

impl Isolation {
    /// Its name in study files, samples and reports.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Container => "container",
            Isolation::Process => "process",
        }
    }
}

/// When a batch of a timed program is dropped (`protocol.drop_batches`): any threshold passed drops
/// it; a threshold set to `null` is not applied. Declared before the run, recorded with each sample.
/// When more than half of a process's batches pass it, none is dropped: the process is judged on
/// all of them, with a warning.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropBatches {
    /// Steal time of the pinned CPUs during the batch, less one clock tick (10 ms) per pinned CPU
    /// (`/proc/stat` charges steal in whole ticks, so that is its lower bound), ÷ (the batch's
    /// window × pinned CPUs), a fraction (default 0.05).
    #[serde(default = "five_percent")]
    pub steal_above: Option<f64>,
    /// Time the program's threads waited, runnable, for a CPU during the batch (summed over them)
    /// ÷ (its window × the CPUs it could keep busy: the fewer of its most threads and the pinned
    /// CPUs), beyond the program's own wait, a fraction (default 0.05). Its own wait is none when
    /// it never had more threads than pinned CPUs, else that of its median batch (its threads
    /// sharing a CPU).
    #[serde(default = "five_percent")]
    pub wait_above: Option<f64>,
    /// Involuntary context switches of the program's threads during the batch, a count (default
    /// `null`: not applied, since threads sharing a CPU switch involuntarily at every hand-off).
    #[serde(default)]
    pub involuntary_switches_above: Option<u64>,
}

fn five_percent() -> Option<f64> {
    Some(0.05)
}

impl Default for DropBatches {
    fn default() -> Self {
        DropBatches {
            steal_above: five_percent(),
            wait_above: five_percent(),
            involuntary_switches_above: None,
        }
    }
}

impl DropBatches {
    /// For `skip_serializing_if`: the default rule is not written.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The rule in one line: `steal_above: 0.05, wait_above: 0.05, involuntary_switches_above: null`.
    pub fn describe(&self) -> String {
        let f = |v: Option<f64>| v.map_or("null".into(), |v| v.to_string());
        let n = self
            .involuntary_switches_above
            .map_or("null".into(), |v| v.to_string());
        format!(
            "steal_above: {}, wait_above: {}, involuntary_switches_above: {n}",
            f(self.steal_above),
            f(self.wait_above)
        )
    }

    /// The first threshold that is not a fraction from 0 to 1 (nor `null`), named.
    pub fn invalid(&self) -> Option<String> {
        [
            ("steal_above", self.steal_above),
            ("wait_above", self.wait_above),
        ]
        .into_iter()
        .find(|(_, v)| v.is_some_and(|f| !(0.0..=1.0).contains(&f)))
        .map(|(name, v)| {
            format!(
                "protocol.drop_batches.{name} must be a fraction from 0 to 1 (0.05 = 5 %), \
                     got {}",
                v.unwrap_or_default()
            )
        })
    }
}

fn default_settle_ms() -> u64 {
    500
}

fn default_samples() -> u32 {
    5
}

/// The tasks a probe's container may hold when the study does not say.
pub const DEFAULT_PIDS_LIMIT: u64 = 25_000;

fn default_pids_limit() -> u64 {
    DEFAULT_PIDS_LIMIT
}

/// Order of probes within each repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Probes in the order listed, every repeat.
    Fixed,
    /// Listed order on odd repeats, reversed on even repeats.
    Alternate,
}

#[cfg(test)]
mod tests {
    use crate::study::{DEFAULT_STUDY, Study};

    fn with_pids_limit(line: &str) -> String {
        DEFAULT_STUDY.replacen(
            "  timeout_s: 300\n",
            &format!("  timeout_s: 300\n{line}"),
            1,
        )
    }

    #[test]
    fn the_pids_limit_is_the_studys_or_25000() {
        assert_eq!(Study::default_study().protocol.pids_limit, 25_000);
        let study = Study::parse(&with_pids_limit("  pids_limit: 64\n")).unwrap();
        assert_eq!(study.protocol.pids_limit, 64);
    }

    #[test]
    fn a_pids_limit_of_zero_or_less_is_refused_at_its_value() {
        // Line 22, inserted after `timeout_s`; the value starts at column 15.
        let err = format!(
            "{:#}",
            Study::parse(&with_pids_limit("  pids_limit: 0\n")).unwrap_err()
        );
        assert!(
            err.starts_with("study.yaml:22:15: protocol.pids_limit must be > 0"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            Study::parse(&with_pids_limit("  pids_limit: -1\n")).unwrap_err()
        );
        assert!(
            err.starts_with("study.yaml:22:15: protocol.pids_limit"),
            "{err}"
        );
    }
}
