//! The study: what to measure, how, and what the article claimed. Read from `results/<id>/study.yaml`;
//! the default study (article 000) is embedded in the binary.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

/// The default study, article 000: 1M tasks waiting, Rust/Tokio vs Go.
pub const DEFAULT_STUDY: &str = include_str!("../results/wait-1m/study.yaml");

/// A study file. Unknown fields are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    /// Short identifier; also the folder name under `results/`.
    pub id: String,
    /// One-line title.
    pub title: String,
    /// Where the study comes from and the environment it was published with.
    pub source: Source,
    /// How every process is measured.
    pub protocol: Protocol,
    /// The programs measured, each a probe image built by `parkbench build`.
    pub probes: Vec<Probe>,
    /// The published claims to judge; may be empty (report without verdicts).
    #[serde(default)]
    pub claims: Vec<Claim>,
}

/// The published article and the environment it reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The article (title or file name).
    pub article: String,
    /// Published environment, free text (CPU, OS, kernel).
    pub environment: String,
    /// Published toolchain versions by name (e.g. `rustc: 1.97.1`).
    #[serde(default)]
    pub toolchains: BTreeMap<String, String>,
    /// Published CPU list the processes were pinned to.
    pub cpus: String,
}

/// The measuring protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocol {
    /// Task counts, one per scale.
    pub scales: Vec<u64>,
    /// Independent processes per probe and scale.
    pub repeats: u32,
    /// Order of probes within a repeat.
    pub order: Order,
    /// CPU list every probe is pinned to with sched_setaffinity (e.g. `0-3`).
    pub cpus: String,
    /// Wait after every task reported ready, before the first RSS reading, ms.
    pub settle_ms: u64,
    /// RSS readings per process.
    pub samples: u32,
    /// Interval between RSS readings, ms.
    pub interval_ms: u64,
    /// A process still running after this many seconds is killed and recorded invalid.
    pub timeout_s: u64,
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

/// One program under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// Identifier used in samples, claims and the report.
    pub id: String,
    /// Probe image name: a folder under `docker/` built by `parkbench build`.
    pub image: String,
    /// Arguments to the probe; `{tasks}` and `{workers}` are replaced.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment of the probe; values may use `{tasks}` and `{workers}`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A published claim and how to judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// Identifier, unique in the study.
    pub id: String,
    /// The article's words.
    pub text: String,
    /// The statistic measured.
    pub stat: Stat,
    /// The probe the statistic is about.
    pub probe: String,
    /// For `lower_by_percent`: the probe compared against.
    #[serde(default)]
    pub than: Option<String>,
    /// The scale (task count); omitted for scale-free statistics (e.g. a future size).
    #[serde(default)]
    pub tasks: Option<u64>,
    /// For `metric_median`: the probe metric's name (e.g. `stack_inuse_bytes`).
    #[serde(default)]
    pub metric: Option<String>,
    /// The published value, or `[low, high]` range, in `unit`.
    pub expected: Expected,
    /// Unit of `expected` and of the tolerance when absolute.
    pub unit: Unit,
    /// How far the measurement may be from `expected` and still reproduce it.
    pub tolerance: Tolerance,
}

/// Statistics a claim can name; all computed from raw samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    /// Median over processes of each process's median RSS.
    RssMedian,
    /// The [min, max] of the per-process median RSS.
    RssRange,
    /// Median over processes of (median RSS − baseline), divided by tasks.
    PerTaskBytes,
    /// (1 − probe median RSS / `than` median RSS) × 100.
    LowerByPercent,
    /// Median over processes of a probe metric.
    MetricMedian,
}

/// A published value or range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Expected {
    Value(f64),
    Range([f64; 2]),
}

/// Units of claims. 1 KiB = 1,024 B, 1 MiB = 1,024 KiB, 1 GiB = 1,024 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    B,
    KiB,
    MiB,
    GiB,
    #[serde(rename = "%")]
    Percent,
}

impl Unit {
    /// Bytes per unit; 1 for percent.
    pub fn scale(self) -> f64 {
        match self {
            Unit::B | Unit::Percent => 1.0,
            Unit::KiB => 1024.0,
            Unit::MiB => 1024.0 * 1024.0,
            Unit::GiB => 1024.0 * 1024.0 * 1024.0,
        }
    }
}

/// Allowed distance from the published value: relative (fraction, 0.05 = 5 %) or absolute (in `unit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    #[serde(default)]
    pub relative: Option<f64>,
    #[serde(default)]
    pub absolute: Option<f64>,
}

impl Study {
    /// Reads and validates a study file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading study {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in study {}", path.display()))
    }

    /// The embedded default study.
    pub fn default_study() -> Self {
        Self::parse(DEFAULT_STUDY).expect("the embedded default study is valid")
    }

    /// Parses and validates study YAML. Syntax errors and unknown fields carry line and column.
    pub fn parse(text: &str) -> Result<Self> {
        let study: Study = crate::yaml::parse(text)?;
        study.validate()?;
        Ok(study)
    }

    fn validate(&self) -> Result<()> {
        let p = &self.protocol;
        ensure!(!self.id.is_empty(), "study id is empty");
        ensure!(
            !p.scales.is_empty(),
            "protocol.scales is empty: list at least one task count"
        );
        ensure!(
            p.scales.iter().all(|&n| n > 0),
            "protocol.scales: task counts must be > 0"
        );
        ensure!(p.repeats > 0, "protocol.repeats must be > 0");
        ensure!(p.samples > 0, "protocol.samples must be > 0");
        ensure!(p.timeout_s > 0, "protocol.timeout_s must be > 0");
        crate::cpuset::parse(&p.cpus).context("protocol.cpus")?;
        ensure!(
            !self.probes.is_empty(),
            "probes is empty: list at least one probe"
        );
        let mut ids = std::collections::BTreeSet::new();
        for probe in &self.probes {
            ensure!(
                ids.insert(&probe.id),
                "probe id {:?} appears twice",
                probe.id
            );
        }
        let mut claim_ids = std::collections::BTreeSet::new();
        for c in &self.claims {
            ensure!(claim_ids.insert(&c.id), "claim id {:?} appears twice", c.id);
            ensure!(
                ids.contains(&c.probe),
                "claim {:?}: unknown probe {:?}",
                c.id,
                c.probe
            );
            match c.stat {
                Stat::LowerByPercent => match &c.than {
                    Some(t) if ids.contains(t) => {}
                    Some(t) => bail!("claim {:?}: unknown probe {t:?} in `than`", c.id),
                    None => bail!("claim {:?}: stat lower_by_percent needs `than`", c.id),
                },
                Stat::MetricMedian => {
                    ensure!(
                        c.metric.is_some(),
                        "claim {:?}: stat metric_median needs `metric`",
                        c.id
                    )
                }
                _ => {}
            }
            if let Some(n) = c.tasks {
                ensure!(
                    p.scales.contains(&n),
                    "claim {:?}: tasks {n} is not in protocol.scales",
                    c.id
                );
            }
            ensure!(
                c.tolerance.relative.is_some() || c.tolerance.absolute.is_some(),
                "claim {:?}: tolerance needs `relative` or `absolute`",
                c.id
            );
        }
        Ok(())
    }
}

impl Probe {
    /// Arguments with `{tasks}` and `{workers}` replaced.
    pub fn expand_args(&self, tasks: u64, workers: u32) -> Vec<String> {
        self.args
            .iter()
            .map(|a| expand(a, tasks, workers))
            .collect()
    }

    /// Environment with `{tasks}` and `{workers}` replaced.
    pub fn expand_env(&self, tasks: u64, workers: u32) -> BTreeMap<String, String> {
        self.env
            .iter()
            .map(|(k, v)| (k.clone(), expand(v, tasks, workers)))
            .collect()
    }
}

fn expand(s: &str, tasks: u64, workers: u32) -> String {
    s.replace("{tasks}", &tasks.to_string())
        .replace("{workers}", &workers.to_string())
}
