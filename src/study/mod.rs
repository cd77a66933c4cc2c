//! The study: what to measure, how, and what the article claimed. Read from `results/<id>/study.yaml`;
//! the default study (article 000) is embedded in the binary.

use std::collections::BTreeMap;
use std::path::Path;

pub mod claim;
pub mod cpuset;
pub mod factor;
pub mod kernel;
pub mod kind;
pub mod repeats;
pub mod sample;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

pub use crate::study::kind::Kind;
pub use crate::study::repeats::Repeats;

/// The default study, article 000: 1M tasks waiting, Rust/Tokio vs Go.
pub const DEFAULT_STUDY: &str = include_str!("../../results/wait-1m/study.yaml");

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
    /// Alternatives `parkbench explain` can sweep, one factor at a time (see `factor`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub factors: Vec<crate::study::factor::Factor>,
    /// Set once [`Study::under_kernels`] has laid the study out per kernel (it is applied once).
    #[serde(skip)]
    pub per_kernel: bool,
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
    /// Task counts, one per scale; a probe may run its own (`probes[].scales`). May be empty only
    /// when every probe lists its own scales.
    #[serde(default)]
    pub scales: Vec<u64>,
    /// Independent processes per probe and scale: a count (`3`), or processes on demand
    /// (`{min: 3, max: 10, target_cv: 0.005}`: `min` planned, then one more at a time while the
    /// cell's CV is above `target_cv`, up to `max`; see `repeats`).
    pub repeats: Repeats,
    /// Order of probes within a repeat.
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
    /// A process still running after this many seconds is killed and recorded invalid.
    pub timeout_s: u64,
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
}

/// The program a probe runs unless it names another.
pub const DEFAULT_PROGRAM: &str = "/usr/local/bin/probe";

fn default_program() -> String {
    DEFAULT_PROGRAM.to_string()
}

fn is_default_program(p: &String) -> bool {
    p == DEFAULT_PROGRAM
}

fn default_settle_ms() -> u64 {
    500
}

fn default_samples() -> u32 {
    5
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
    /// Absolute path of the program run in the image (default `/usr/local/bin/probe`); must be one
    /// of the image's `binaries` in `docker/<image>/image.yaml`.
    #[serde(
        default = "default_program",
        skip_serializing_if = "is_default_program"
    )]
    pub program: String,
    /// Task counts this probe runs, instead of `protocol.scales` (scale-free probes, e.g. timed or
    /// reported ones, use `[1]`). A claim about a probe with exactly one scale may omit `tasks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scales: Option<Vec<u64>>,
    /// Arguments to the probe; `{tasks}`, `{workers}` (how many CPUs the probe has), `{cpus}` (its
    /// CPU list) and `{other_cpus}` (the run's CPUs it does not have) are replaced.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment of the probe; values may use the words of `args`.
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
    /// `protocol.kernels` or `--kernel` ([`Study::under_kernels`]) for probes that do not name
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
    /// The probe the statistic is about; empty for `order` (its probes are in `expected`).
    #[serde(default)]
    pub probe: String,
    /// For `lower_by_percent` and `ratio`: what the probe is compared against.
    #[serde(default)]
    pub than: Option<Than>,
    /// For `ratio`: the scale of what the probe is compared with: the probe itself at this other
    /// scale (without `than`), or the one probe named by `than` at this scale (with it).
    #[serde(default)]
    pub than_tasks: Option<u64>,
    /// For `ratio` and `order`: the statistic compared (`rss_median`, `peak_median`, `result_median`, …).
    #[serde(default)]
    pub of: Option<Stat>,
    /// The scale (task count); omitted for scale-free statistics (e.g. a future size), or when the
    /// probe runs exactly one scale (that one is taken).
    #[serde(default)]
    pub tasks: Option<u64>,
    /// For `metric_median` and `result_median`: the metric's or result key's name (e.g. `ns_per_op`).
    #[serde(default)]
    pub metric: Option<String>,
    /// For `ratio`: the metric or result key of what the probe is compared against, when it is not
    /// `metric` (e.g. `ns_per_poll` of one program ÷ `ns_per_switch` of another).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub than_metric: Option<String>,
    /// For `percentile`: which one (50, 99, 99.9).
    #[serde(default)]
    pub percentile: Option<f64>,
    /// The published value, `[low, high]` range, bound (`{above: 13}`) or, for `order`, the probes
    /// from lowest to highest.
    pub expected: Expected,
    /// Unit of `expected` and of the tolerance when absolute (`x` for ratios, `rank` for orders).
    pub unit: Unit,
    /// How far the measurement may be from `expected` and still reproduce it; bounds and orders
    /// take none.
    #[serde(default)]
    pub tolerance: Tolerance,
    /// Claims of this study whose finding this one's measurement rests on (e.g. a check that the
    /// load generator was not what limited a server): unless every one of them reproduced, this
    /// claim is `inconclusive`, with the one that did not named. A claim named here may not itself
    /// have `requires`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
}

/// What a `ratio` or `lower_by_percent` claim compares its probe against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Than {
    /// One probe, or `lowest` / `highest`: the lowest or highest of every other probe of the same
    /// kind measured at the scale.
    One(String),
    /// Each of these probes; the claim must hold against every one (the tightest ratio is judged).
    Each(Vec<String>),
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
    /// Steady kind: median over processes of the baseline RSS, read at the probe's `baseline` line
    /// (the runtime up, no task created yet): what an article calls base memory.
    BaselineMedian,
    /// (1 − probe median RSS / `than` median RSS) × 100.
    LowerByPercent,
    /// Median over processes of a probe metric.
    MetricMedian,
    /// Peak kind: median over processes of the peak RSS (`ru_maxrss`).
    PeakMedian,
    /// Peak kind: the [min, max] of the processes' peak RSS.
    PeakRange,
    /// Timed and latency kinds: median over processes of each process's median `result` value.
    ResultMedian,
    /// Latency kind: median over processes of a percentile recomputed from each histogram, ns.
    Percentile,
    /// `of` of the probe ÷ `of` of `than` (or of the probe at `than_tasks`), a plain ratio.
    Ratio,
    /// The ranking of probes by `of`, lowest first.
    Order,
}

/// A published value, range, bound or ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Expected {
    Value(f64),
    Range([f64; 2]),
    /// "more than" / "less than": the measurement must lie above and/or below these values.
    Bound(Bound),
    /// Probe identifiers from the lowest to the highest value.
    Order(Vec<String>),
}

/// A one- or two-sided bound, in the claim's unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bound {
    /// The measurement must be greater than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above: Option<f64>,
    /// The measurement must be less than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below: Option<f64>,
}

/// Units of claims. 1 KiB = 1,024 B, 1 MiB = 1,024 KiB, 1 GiB = 1,024 MiB; 1 kB = 1,000 B and
/// 1 MB = 1,000,000 B, for articles that count in decimal; times are based on ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    B,
    KiB,
    MiB,
    GiB,
    /// 1,000 bytes.
    #[serde(rename = "kB")]
    Kb,
    /// 1,000,000 bytes.
    #[serde(rename = "MB")]
    Mb,
    #[serde(rename = "%")]
    Percent,
    /// Nanoseconds.
    #[serde(rename = "ns")]
    Ns,
    /// Microseconds.
    #[serde(rename = "us")]
    Us,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Ms,
    /// A plain ratio ("13×").
    #[serde(rename = "x")]
    Times,
    /// A plain count (threads, operations).
    #[serde(rename = "count")]
    Count,
    /// A ranking (for `order` claims).
    #[serde(rename = "rank")]
    Rank,
}

/// What a unit measures; a claim's unit must measure what its statistic measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// Bytes.
    Memory,
    /// Nanoseconds.
    Time,
    /// A percentage.
    Percent,
    /// A plain number: ratios, counts, metrics without a unit.
    Plain,
    /// A ranking.
    Rank,
}

impl Unit {
    /// Base units (bytes, ns, 1) per unit.
    pub fn scale(self) -> f64 {
        match self {
            Unit::KiB => 1024.0,
            Unit::MiB => 1024.0 * 1024.0,
            Unit::GiB => 1024.0 * 1024.0 * 1024.0,
            Unit::Kb => 1e3,
            Unit::Mb => 1e6,
            Unit::Us => 1e3,
            Unit::Ms => 1e6,
            _ => 1.0,
        }
    }

    /// What the unit measures.
    pub fn dimension(self) -> Dimension {
        match self {
            Unit::B | Unit::KiB | Unit::MiB | Unit::GiB | Unit::Kb | Unit::Mb => Dimension::Memory,
            Unit::Ns | Unit::Us | Unit::Ms => Dimension::Time,
            Unit::Percent => Dimension::Percent,
            Unit::Times | Unit::Count => Dimension::Plain,
            Unit::Rank => Dimension::Rank,
        }
    }
}

/// Allowed distance from the published value: relative (fraction, 0.05 = 5 %) or absolute (in `unit`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
        let mut study: Study = crate::yaml::parse(text)?;
        study.take_single_scales();
        study.validate(text)?;
        Ok(study)
    }

    fn validate(&self, text: &str) -> Result<()> {
        let p = &self.protocol;
        ensure!(
            valid_id(&self.id),
            "study id {:?}: an id names the study's folder under results/, so it is lowercase \
             letters, digits, `-`, `_` and `.`, starting with a letter or digit (e.g. wait-1m)",
            self.id
        );
        ensure!(
            p.scales.iter().all(|&n| n > 0),
            "protocol.scales: task counts must be > 0"
        );
        if let Some(t) = p.target_cv {
            ensure!(
                t.is_finite() && t > 0.0,
                "protocol.target_cv is {t}: a positive fraction (0.02 = 2 %)"
            );
        }
        p.repeats.check()?;
        ensure!(p.samples > 0, "protocol.samples must be > 0");
        ensure!(p.interval_ms > 0, "protocol.interval_ms must be > 0");
        ensure!(p.timeout_s > 0, "protocol.timeout_s must be > 0");
        crate::study::cpuset::parse(&p.cpus).context("protocol.cpus")?;
        for (i, k) in p.kernels.iter().enumerate() {
            ensure!(
                valid_id(k) && !p.kernels[..i].contains(k),
                "protocol.kernels: {k:?} is {}: name each kernel once, `host` or a guest kernel \
                 such as debian-6.1 (a docker/kernel-<name>/ folder)",
                if valid_id(k) {
                    "named twice"
                } else {
                    "not a kernel name"
                }
            );
        }
        ensure!(
            p.guest_memory_mib.is_none_or(|m| m >= 256),
            "protocol.guest_memory_mib must be at least 256 (MiB)"
        );
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
            self.validate_probe(probe)
                .with_context(|| format!("{}probe {:?}", line_of_id(text, &probe.id), probe.id))?;
        }
        let mut claim_ids = std::collections::BTreeSet::new();
        for c in &self.claims {
            ensure!(claim_ids.insert(&c.id), "claim id {:?} appears twice", c.id);
            self.validate_claim(c)
                .and_then(|()| self.validate_requires(c))
                .with_context(|| format!("{}claim {:?}", line_of_id(text, &c.id), c.id))?;
        }
        crate::study::factor::validate(&self.factors, &self.probes).context("factors")?;
        Ok(())
    }

    fn validate_requires(&self, c: &Claim) -> Result<()> {
        for id in &c.requires {
            let Some(r) = self.claims.iter().find(|r| &r.id == id) else {
                bail!("requires {id:?}, which is not a claim of this study");
            };
            ensure!(id != &c.id, "requires itself");
            ensure!(
                r.requires.is_empty(),
                "requires {id:?}, which has `requires` of its own; name what it requires here instead"
            );
        }
        Ok(())
    }
}

impl Study {
    /// The study under `kernels` (empty: `protocol.kernels`, else host): with one kernel every probe
    /// runs under it and ids stay; with several, every probe, claim and factor is repeated per
    /// kernel as `<id>@<kernel>`, each claim judged on the probes of its own kernel.
    pub fn under_kernels(mut self, kernels: &[String]) -> Result<Study> {
        if self.per_kernel {
            return Ok(self);
        }
        self.per_kernel = true;
        let kernels: Vec<String> = match (kernels, self.protocol.kernels.as_slice()) {
            ([], []) => vec![crate::study::kernel::HOST.to_string()],
            ([], own) => own.to_vec(),
            (given, _) => given.to_vec(),
        };
        self.protocol.kernels = kernels.clone();
        let guest = |k: &str| (k != crate::study::kernel::HOST).then(|| k.to_string());
        if let [k] = kernels.as_slice() {
            for p in self.probes.iter_mut().filter(|p| p.kernel.is_none()) {
                p.kernel = guest(k);
            }
            if let Some(p) = self
                .probes
                .iter()
                .find(|p| p.thp.is_some() && p.kernel.is_none())
            {
                bail!(
                    "probe {:?} sets thp, which only a guest kernel's init can set: give it a \
                     `kernel:` or run it under one (--kernel debian-6.1)",
                    p.id
                );
            }
            return Ok(self);
        }
        if let Some(p) = self.probes.iter().find(|p| p.kernel.is_some()) {
            bail!(
                "probe {:?} names its own kernel, and the study runs under several ({}): \
                 drop the probe's `kernel:` or run under one kernel",
                p.id,
                kernels.join(", ")
            );
        }
        if kernels.iter().any(|k| k == crate::study::kernel::HOST)
            && let Some(p) = self.probes.iter().find(|p| p.thp.is_some())
        {
            bail!(
                "probe {:?} sets thp, which only a guest kernel's init can set, and the study also \
                 runs under host: drop `host` from the kernels or the probe's `thp:`",
                p.id
            );
        }
        let at = |id: &str, k: &str| format!("{id}@{k}");
        let probes = std::mem::take(&mut self.probes);
        let claims = std::mem::take(&mut self.claims);
        let factors = std::mem::take(&mut self.factors);
        for k in &kernels {
            self.factors.extend(factors.iter().cloned().map(|mut f| {
                f.id = at(&f.id, k);
                f.probe = at(&f.probe, k);
                f
            }));
            self.probes.extend(probes.iter().cloned().map(|mut p| {
                p.id = at(&p.id, k);
                p.kernel = guest(k);
                p
            }));
            self.claims.extend(claims.iter().cloned().map(|mut c| {
                c.id = at(&c.id, k);
                if !c.probe.is_empty() {
                    c.probe = at(&c.probe, k);
                }
                if let Expected::Order(ids) = &mut c.expected {
                    ids.iter_mut().for_each(|id| *id = at(id, k));
                }
                c.than = c.than.map(|t| match t {
                    Than::One(w) if w == "lowest" || w == "highest" => Than::One(w),
                    Than::One(id) => Than::One(at(&id, k)),
                    Than::Each(ids) => Than::Each(ids.iter().map(|id| at(id, k)).collect()),
                });
                c.requires = c.requires.iter().map(|id| at(id, k)).collect();
                c
            }));
        }
        self.validate("")
            .context("the study laid out per kernel (`<id>@<kernel>`)")?;
        Ok(self)
    }

    /// The kernels the probes run under, in study order (`host` for the host's).
    pub fn kernels(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in &self.probes {
            let k = p.kernel.as_deref().unwrap_or(crate::study::kernel::HOST);
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }

    /// The task counts a probe runs: its own `scales`, or `protocol.scales`.
    pub fn scales_of<'a>(&'a self, probe: &'a Probe) -> &'a [u64] {
        probe.scales.as_deref().unwrap_or(&self.protocol.scales)
    }

    /// Whether the probe with this identifier runs at this scale.
    pub fn runs(&self, probe: &str, tasks: u64) -> bool {
        self.probe(probe)
            .is_some_and(|p| self.scales_of(p).contains(&tasks))
    }

    /// Every scale some probe runs: `protocol.scales` in their order, then the probes' own
    /// scales that are not among them, smallest first.
    pub fn all_scales(&self) -> Vec<u64> {
        let mut out = self.protocol.scales.clone();
        let mut extra: Vec<u64> = self
            .probes
            .iter()
            .flat_map(|p| self.scales_of(p).iter().copied())
            .filter(|n| !out.contains(n))
            .collect();
        extra.sort_unstable();
        extra.dedup();
        out.extend(extra);
        out
    }

    /// Fails unless probe `id` runs `tasks`, naming the scales it runs.
    fn check_runs(&self, id: &str, tasks: u64) -> Result<()> {
        let Some(p) = self.probe(id) else {
            return Ok(());
        };
        let scales = self.scales_of(p);
        let list = scales
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let whose = if p.scales.is_some() {
            format!("probe {id}'s own scales")
        } else {
            "protocol.scales".to_string()
        };
        ensure!(
            scales.contains(&tasks),
            "tasks {tasks} is not in {whose} ({list}): probe {id} does not run {tasks} tasks"
        );
        Ok(())
    }

    /// A claim about a probe that runs exactly one scale may omit `tasks`: that scale is taken
    /// (except for `metric_median`, whose omitted `tasks` means every scale).
    fn take_single_scales(&mut self) {
        let mut filled = Vec::new();
        for (i, c) in self.claims.iter().enumerate() {
            let skip = matches!(c.stat, Stat::Order | Stat::MetricMedian);
            if c.tasks.is_some() || skip {
                continue;
            }
            if let Some(p) = self.probe(&c.probe)
                && let [only] = self.scales_of(p)
            {
                filled.push((i, *only));
            }
        }
        for (i, n) in filled {
            self.claims[i].tasks = Some(n);
        }
    }

    /// A probe's own scales and program path.
    fn validate_probe(&self, probe: &Probe) -> Result<()> {
        if let Some(mode) = &probe.thp {
            check_thp_mode(mode)?;
        }
        match &probe.scales {
            Some(s) => {
                ensure!(
                    !s.is_empty(),
                    "scales is empty: list at least one task count, or leave it out"
                );
                ensure!(s.iter().all(|&n| n > 0), "scales: task counts must be > 0");
            }
            None => ensure!(
                !self.protocol.scales.is_empty(),
                "protocol.scales is empty and the probe lists no `scales`: list at least one task count"
            ),
        }
        ensure!(
            probe.program.starts_with('/'),
            "program {:?} must be an absolute path inside the image",
            probe.program
        );
        ensure!(
            probe.cpus != Some(0),
            "cpus: 0 — a probe needs at least one CPU (leave it out to use all of the run's)"
        );
        for text in probe.args.iter().chain(probe.env.values()) {
            if let Some(word) = unknown_placeholder(text) {
                bail!(
                    "{word} in {text:?} is not a placeholder; use {}",
                    PLACEHOLDERS.join(", ")
                );
            }
        }
        Ok(())
    }

    /// The probe with this identifier.
    pub fn probe(&self, id: &str) -> Option<&Probe> {
        self.probes.iter().find(|p| p.id == id)
    }

    /// The kind of a probe named by a claim, or an error naming the unknown probe.
    fn kind_of(&self, id: &str) -> Result<Kind> {
        match self.probe(id) {
            Some(p) => Ok(p.kind),
            None => {
                let known: Vec<&str> = self.probes.iter().map(|p| p.id.as_str()).collect();
                bail!("unknown probe {id:?} (probes: {})", known.join(", "))
            }
        }
    }

    /// Checks one claim against the probes, their kinds and the scales.
    fn validate_claim(&self, c: &Claim) -> Result<()> {
        let named: Vec<&String> = match (&c.expected, c.stat) {
            (Expected::Order(ids), Stat::Order) => ids.iter().collect(),
            _ => vec![&c.probe],
        };
        if let Some(n) = c.tasks {
            for id in named.into_iter().filter(|id| self.probe(id).is_some()) {
                self.check_runs(id, n)?;
            }
        }
        match (c.than_tasks.or(c.tasks), &c.than) {
            (Some(n), None) if c.than_tasks.is_some() => self.check_runs(&c.probe, n)?,
            (Some(n), Some(Than::One(id))) if id != "lowest" && id != "highest" => {
                self.check_runs(id, n)?
            }
            (Some(n), Some(Than::Each(ids))) => {
                for id in ids {
                    self.check_runs(id, n)?;
                }
            }
            _ => {}
        }
        crate::study::claim::check_tolerance(c)?;
        match c.stat {
            Stat::Order => {
                let Expected::Order(ids) = &c.expected else {
                    bail!("stat order needs `expected` as a list of probes, lowest first");
                };
                ensure!(ids.len() >= 2, "an order needs at least two probes");
                let of =
                    c.of.context("stat order needs `of`: the statistic ranked")?;
                let kinds = ids
                    .iter()
                    .map(|id| self.kind_of(id))
                    .collect::<Result<Vec<_>>>()?;
                crate::study::claim::check_same_kind(of, ids, &kinds)?;
                ensure!(c.tasks.is_some(), "stat order needs `tasks`");
            }
            Stat::Ratio | Stat::LowerByPercent => {
                if let Some(Than::Each(ids)) = &c.than {
                    ensure!(
                        ids.len() == 1 || matches!(c.expected, Expected::Bound(_)),
                        "a ratio against each of several probes needs a bound as `expected` \
                         ({{above: …}} or {{below: …}}): one value cannot hold for every ratio"
                    );
                }
                let kind = self.kind_of(&c.probe)?;
                let of = match c.stat {
                    Stat::Ratio => {
                        c.of.context("stat ratio needs `of`: the statistic divided")?
                    }
                    _ => Stat::RssMedian,
                };
                let others = self.than_probes(c)?;
                let mut ids = vec![c.probe.clone()];
                ids.extend(others.iter().cloned());
                let mut kinds = vec![kind];
                for id in &others {
                    kinds.push(self.kind_of(id)?);
                }
                crate::study::claim::check_same_kind(of, &ids, &kinds)?;
                ensure!(c.tasks.is_some(), "stat {:?} needs `tasks`", c.stat);
            }
            stat => {
                let kind = self.kind_of(&c.probe)?;
                crate::study::claim::check_stat(stat, kind)?;
                ensure!(
                    c.tasks.is_some() || stat == Stat::MetricMedian,
                    "stat {stat:?} needs `tasks`"
                );
            }
        }
        crate::study::claim::check_fields(c)
    }

    /// The probes a `ratio` or `lower_by_percent` claim compares against (`lowest`/`highest`: every
    /// other probe of the same kind).
    pub fn than_probes(&self, c: &Claim) -> Result<Vec<String>> {
        let kind = self.kind_of(&c.probe)?;
        match (&c.than, c.than_tasks) {
            (None, Some(_)) => Ok(Vec::new()),
            (None, None) => {
                bail!("needs `than` (a probe, a list, `lowest` or `highest`) or `than_tasks`")
            }
            (Some(Than::One(w)), Some(_)) if w == "lowest" || w == "highest" => {
                bail!("`than_tasks` names the scale of one probe, not of the {w}: name the probe")
            }
            (Some(Than::One(id)), Some(_)) => Ok(vec![id.clone()]),
            (Some(Than::Each(_)), Some(_)) => {
                bail!("`than_tasks` names the scale of one probe, not of a list: name one probe")
            }
            (Some(Than::One(w)), None) if w == "lowest" || w == "highest" => Ok(self
                .probes
                .iter()
                .filter(|p| p.id != c.probe && p.kind == kind)
                .filter(|p| p.kernel == self.probe(&c.probe).and_then(|q| q.kernel.clone()))
                .filter(|p| c.tasks.is_none_or(|n| self.scales_of(p).contains(&n)))
                .map(|p| p.id.clone())
                .collect()),
            (Some(Than::One(id)), None) => Ok(vec![id.clone()]),
            (Some(Than::Each(ids)), None) => {
                ensure!(!ids.is_empty(), "`than` is an empty list");
                Ok(ids.clone())
            }
        }
    }
}

/// `line N: ` of the first `id: <id>` in the study text (block or flow style), or nothing.
fn line_of_id(text: &str, id: &str) -> String {
    let want = [format!("id: {id}"), format!("id: \"{id}\"")];
    text.lines()
        .position(|l| {
            let l = l.trim().trim_start_matches("- ").trim_start_matches("{");
            want.iter()
                .any(|w| l == w || l.starts_with(&format!("{w},")))
        })
        .map(|i| format!("line {}: ", i + 1))
        .unwrap_or_default()
}

/// The words `args` and `env` may hold, each replaced per cell.
pub const PLACEHOLDERS: &[&str] = &["{tasks}", "{workers}", "{cpus}", "{other_cpus}"];

/// The first `{word}` of `text` (a word of lowercase letters and `_`) that is not one of
/// [`PLACEHOLDERS`]; other braces (`{}`, JSON, `${VAR}`) are left alone.
fn unknown_placeholder(text: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(at) = text[from..].find('{').map(|i| i + from) {
        let len = text[at + 1..]
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(text.len() - at - 1);
        let end = at + 1 + len;
        if len > 0 && text[end..].starts_with('}') {
            let word = &text[at..=end];
            if !PLACEHOLDERS.contains(&word) {
                return Some(word);
            }
        }
        from = at + 1;
    }
    None
}

/// What the `{…}` words of a probe's arguments and environment stand for in one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Placeholders {
    /// `{tasks}`: the cell's task count.
    pub tasks: u64,
    /// `{cpus}`: the CPUs the probe is pinned to; `{workers}` is how many.
    pub cpus: Vec<usize>,
    /// `{other_cpus}`: the run's CPUs the probe is not pinned to (empty when it has them all), for
    /// a helper the probe starts on CPUs of its own, such as a load generator.
    pub other_cpus: Vec<usize>,
}

impl Placeholders {
    /// The words of a cell of `probe` at `tasks` in a run pinned to `run_cpus`; `Err` says why the
    /// run cannot give the probe its CPUs.
    pub fn of(probe: &Probe, tasks: u64, run_cpus: &[usize]) -> std::result::Result<Self, String> {
        let cpus = probe.pinned_cpus(run_cpus)?;
        let other_cpus = run_cpus
            .iter()
            .filter(|c| !cpus.contains(c))
            .copied()
            .collect();
        Ok(Self {
            tasks,
            cpus,
            other_cpus,
        })
    }

    fn expand(&self, s: &str) -> String {
        s.replace("{tasks}", &self.tasks.to_string())
            .replace("{workers}", &self.cpus.len().to_string())
            .replace(
                "{other_cpus}",
                &crate::study::cpuset::format(&self.other_cpus),
            )
            .replace("{cpus}", &crate::study::cpuset::format(&self.cpus))
    }
}

impl Probe {
    /// Arguments with `{tasks}`, `{workers}`, `{cpus}` and `{other_cpus}` replaced.
    pub fn expand_args(&self, words: &Placeholders) -> Vec<String> {
        self.args.iter().map(|a| words.expand(a)).collect()
    }

    /// Environment with the same words replaced.
    pub fn expand_env(&self, words: &Placeholders) -> BTreeMap<String, String> {
        self.env
            .iter()
            .map(|(k, v)| (k.clone(), words.expand(v)))
            .collect()
    }
}

/// A study id is one plain folder name: `[a-z0-9][a-z0-9._-]*` (so never `..`, `/` or absolute).
fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_study_id_is_one_plain_folder_name() {
        for bad in ["../../tmp/evil", "/abs", "a/b", "..", ".hidden", "Wait", ""] {
            let text = DEFAULT_STUDY.replacen("id: wait-1m", &format!("id: {bad:?}"), 1);
            let err = format!("{:#}", Study::parse(&text).unwrap_err());
            assert!(err.contains("names the study's folder"), "{bad}: {err}");
        }
        for good in ["wait-1m", "sleep-peak-2024", "v1.2_x"] {
            let text = DEFAULT_STUDY.replacen("id: wait-1m", &format!("id: {good}"), 1);
            assert_eq!(Study::parse(&text).unwrap().id, good);
        }
    }

    #[test]
    fn every_checked_in_study_loads() {
        let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
        let mut seen = 0;
        for entry in std::fs::read_dir(&results).unwrap() {
            let file = entry.unwrap().path().join("study.yaml");
            if file.is_file() {
                let study = Study::load(&file).unwrap_or_else(|e| panic!("{e:#}"));
                assert_eq!(
                    file.parent().unwrap().file_name().unwrap().to_str(),
                    Some(study.id.as_str()),
                    "a study's folder is named after its id"
                );
                seen += 1;
            }
        }
        assert!(seen >= 2, "results/ holds the studies");
    }

    #[test]
    fn repeats_are_a_count_or_processes_on_demand() {
        let with =
            |r: &str| DEFAULT_STUDY.replacen("  repeats: 3\n", &format!("  repeats: {r}\n"), 1);
        let study = Study::parse(&with("{min: 3, max: 10, target_cv: 0.005}")).unwrap();
        assert_eq!(
            study.protocol.repeats,
            Repeats {
                min: 3,
                max: 10,
                target_cv: Some(0.005)
            }
        );
        let err = |r: &str| format!("{:#}", Study::parse(&with(r)).unwrap_err());
        let e = err("{min: 1, max: 10, target_cv: 0.005}");
        assert!(e.contains("protocol.repeats.min is 1"), "{e}");
        let e = err("{min: 3, max: 10}");
        assert!(e.contains("line 15") && e.contains("target_cv"), "{e}");
        let e = err("three");
        assert!(e.contains("{min: 3, max: 10, target_cv: 0.005}"), "{e}");
        assert!(err("0").contains("protocol.repeats must be > 0"));
    }

    #[test]
    fn a_probe_takes_the_first_of_the_runs_cpus() {
        let mut probe = Study::default_study().probes[0].clone();
        assert_eq!(probe.pinned_cpus(&[2, 3]).unwrap(), vec![2, 3]);
        probe.cpus = Some(1);
        assert_eq!(probe.pinned_cpus(&[2, 3]).unwrap(), vec![2]);
        probe.cpus = Some(4);
        let err = probe.pinned_cpus(&[2, 3]).unwrap_err();
        assert!(
            err.contains("asks for 4 CPUs but this run has 2 (2-3)"),
            "{err}"
        );
        let text = DEFAULT_STUDY.replacen("    image: go\n", "    image: go\n    cpus: 0\n", 1);
        let err = format!("{:#}", Study::parse(&text).unwrap_err());
        assert!(err.contains("cpus: 0"), "{err}");
    }

    #[test]
    fn placeholders_name_the_cells_cpus_and_the_others() {
        let mut probe = Study::default_study().probes[1].clone();
        probe.args = vec![
            "-n={tasks}".into(),
            "{workers}".into(),
            "{cpus}".into(),
            "{other_cpus}".into(),
        ];
        probe.env = BTreeMap::from([("CPUS".to_string(), "{cpus}/{other_cpus}".to_string())]);
        let all = Placeholders::of(&probe, 10, &[0, 1, 2, 3]).unwrap();
        assert_eq!(probe.expand_args(&all), ["-n=10", "4", "0-3", ""]);
        probe.cpus = Some(1);
        let one = Placeholders::of(&probe, 10, &[0, 1, 2, 3]).unwrap();
        assert_eq!(probe.expand_args(&one), ["-n=10", "1", "0", "1-3"]);
        assert_eq!(probe.expand_env(&one)["CPUS"], "0/1-3");
        probe.cpus = Some(5);
        assert!(Placeholders::of(&probe, 10, &[0, 1]).is_err());
    }

    #[test]
    fn an_unknown_placeholder_is_refused_at_load() {
        let text = DEFAULT_STUDY.replacen(
            "\"--workers\", \"{workers}\"",
            "\"--workers\", \"{worker}\"",
            1,
        );
        assert_ne!(text, DEFAULT_STUDY);
        let err = format!("{:#}", Study::parse(&text).unwrap_err());
        assert!(err.contains("probe \"rust-tokio\""), "{err}");
        assert!(
            err.contains("{worker} in \"{worker}\" is not a placeholder; use {tasks}"),
            "{err}"
        );
        assert_eq!(unknown_placeholder("a {tasks} {cpus}"), None);
        assert_eq!(unknown_placeholder("{tasks}{x}"), Some("{x}"));
        assert_eq!(
            unknown_placeholder("{\"a\": {}} ${HOME} {Tasks} {tasks"),
            None
        );
        assert_eq!(unknown_placeholder("{{cpu}}"), Some("{cpu}"));
    }

    #[test]
    fn decimal_units_count_in_powers_of_ten() {
        let unit = |name: &str| serde_yaml::from_str::<Unit>(name).unwrap();
        assert_eq!(unit("kB").scale(), 1e3);
        assert_eq!(unit("MB").scale(), 1e6);
        assert_eq!(unit("MB").dimension(), Dimension::Memory);
        assert!(serde_yaml::from_str::<Unit>("mb").is_err());
    }

    #[test]
    fn unknown_kind_is_named_with_its_line() {
        let text = DEFAULT_STUDY.replacen("    image: go\n", "    image: go\n    kind: fast\n", 1);
        let err = format!("{:#}", Study::parse(&text).unwrap_err());
        assert!(err.contains("fast") && err.contains("line"), "{err}");
    }

    #[test]
    fn steady_study_keeps_its_defaults() {
        let study = Study::default_study();
        assert!(study.probes.iter().all(|p| p.kind == Kind::Steady));
        let yaml = serde_yaml::to_string(&study.probes[0]).unwrap();
        assert!(!yaml.contains("kind"), "steady is not written: {yaml}");
    }

    #[test]
    fn a_probe_may_name_its_kernel_and_thp_but_thp_needs_a_guest() {
        let own = DEFAULT_STUDY.replacen(
            "    image: go\n",
            "    image: go\n    kernel: debian-6.1\n    thp: never\n",
            1,
        );
        let study = Study::parse(&own).unwrap();
        let host = study.clone().under_kernels(&[]).unwrap();
        let go = host.probe("go").unwrap();
        assert_eq!(
            (go.kernel.as_deref(), go.thp.as_deref()),
            (Some("debian-6.1"), Some("never"))
        );
        assert!(host.probe("rust-tokio").unwrap().kernel.is_none());
        let err = format!(
            "{:#}",
            study
                .under_kernels(&["host".into(), "debian-6.1".into()])
                .unwrap_err()
        );
        assert!(err.contains("names its own kernel"), "{err}");
        let bad = DEFAULT_STUDY.replacen("    image: go\n", "    image: go\n    thp: big\n", 1);
        let err = format!("{:#}", Study::parse(&bad).unwrap_err());
        assert!(err.contains("not a THP mode"), "{err}");
        let hostless =
            DEFAULT_STUDY.replacen("    image: go\n", "    image: go\n    thp: never\n", 1);
        let err = format!(
            "{:#}",
            Study::parse(&hostless)
                .unwrap()
                .under_kernels(&[])
                .unwrap_err()
        );
        assert!(err.contains("only a guest kernel"), "{err}");
    }

    #[test]
    fn one_kernel_keeps_the_ids_and_several_repeat_probes_and_claims_per_kernel() {
        let study = Study::default_study();
        let one = study.clone().under_kernels(&["debian-6.1".into()]).unwrap();
        assert_eq!(one.probes.len(), study.probes.len());
        assert!(
            one.probes
                .iter()
                .all(|p| p.kernel.as_deref() == Some("debian-6.1"))
        );
        assert_eq!(one.claims, study.claims);
        let host = study.clone().under_kernels(&[]).unwrap();
        assert!(host.probes.iter().all(|p| p.kernel.is_none()));
        assert_eq!(host.kernels(), ["host"]);
        let both = study
            .clone()
            .under_kernels(&["host".into(), "wsl-like".into()])
            .unwrap();
        assert_eq!(both.probes.len(), 2 * study.probes.len());
        assert_eq!(both.kernels(), ["host", "wsl-like"]);
        let c = both
            .claims
            .iter()
            .find(|c| c.id == "rust-lower-1m@wsl-like")
            .unwrap();
        assert_eq!(c.probe, "rust-tokio@wsl-like");
        assert_eq!(c.than, Some(Than::One("go@wsl-like".into())));
        let f = both
            .factors
            .iter()
            .find(|f| f.id == "gogc@wsl-like")
            .unwrap();
        assert_eq!(f.probe, "go@wsl-like");
        assert_eq!(both.factors.len(), 2 * study.factors.len());
        assert!(both.probe("go@host").unwrap().kernel.is_none());
        // Applied once: a second call changes nothing.
        assert_eq!(both.clone().under_kernels(&["host".into()]).unwrap(), both);
    }

    #[test]
    fn an_order_claim_per_kernel_names_the_probes_of_its_kernel_and_the_layout_is_checked() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let study = Study::load(&root.join("results/runtimes-compared/study.yaml")).unwrap();
        let both = study
            .under_kernels(&["host".into(), "debian-6.1".into()])
            .unwrap();
        let c = both
            .claims
            .iter()
            .find(|c| c.id == "memory-order-parked@debian-6.1")
            .unwrap();
        assert_eq!(
            c.probe, "",
            "an order claim names its probes in `expected` only"
        );
        let Expected::Order(ids) = &c.expected else {
            panic!("{:?}", c.expected)
        };
        assert!(ids.iter().all(|id| id.ends_with("@debian-6.1")), "{ids:?}");
        assert!(ids.iter().all(|id| both.probe(id).is_some()), "{ids:?}");
    }

    #[test]
    fn a_kernel_named_twice_or_badly_is_refused() {
        for (kernels, want) in [
            ("[host, host]", "named twice"),
            ("[\"Deb ian\"]", "not a kernel name"),
        ] {
            let text = DEFAULT_STUDY.replacen(
                "  timeout_s: 300\n",
                &format!("  timeout_s: 300\n  kernels: {kernels}\n"),
                1,
            );
            let err = format!("{:#}", Study::parse(&text).unwrap_err());
            assert!(
                err.contains("protocol.kernels") && err.contains(want),
                "{err}"
            );
        }
    }
}
