//! A published claim and how it is judged: the statistic, the probes it is about, the published
//! value and the tolerance. And the load-time checks of a claim on its own: every statistic belongs
//! to a kind of measurement, every unit measures what its statistic measures, and a comparison
//! never mixes kinds (a peak ÷ a steady value). And which claims have a single published value a
//! memory figure can mark beside the measured cell.

use anyhow::{Result, ensure};
use serde::{Deserialize, Serialize};

use crate::study::kind::Kind;
use crate::study::stat::Stat;
use crate::study::unit::{Dimension, Unit};
use crate::yaml::{Invalid, bail_at, ensure_at};

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
    /// For `percentile`: which one, a percent (50, 99, 99.9).
    #[serde(default)]
    pub percentile: Option<f64>,
    /// The published value, `[low, high]` range, bound (`{above: 13}`) or, for `order`, the probes
    /// from lowest to highest.
    pub expected: Expected,
    /// Unit of `expected` and of the tolerance when absolute (`x` for ratios, `rank` for orders).
    pub unit: Unit,
    /// How far the measurement may be from `expected` and still reproduce it; bounds and orders
    /// take none (the default).
    #[serde(default)]
    pub tolerance: Tolerance,
    /// Claims of this study whose finding this one's measurement rests on (e.g. a check that the
    /// load generator was not what limited a server): unless every one of them reproduced, this
    /// claim is `inconclusive`, with the one that did not named. A claim named here may not itself
    /// have `requires`. Default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// For `outcome` with `expected: fails` or `killed`: a regular expression a failed process's
    /// reason or the last lines of its stderr must match (e.g. `SystemLimitError`). Default none:
    /// any failure of that sort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
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

/// A published value, range, bound or ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Expected {
    /// One published value, in the claim's unit.
    Value(f64),
    /// A published `[low, high]` range, in the claim's unit.
    Range([f64; 2]),
    /// "more than" / "less than": the measurement must lie above and/or below these values.
    Bound(Bound),
    /// Probe identifiers from the lowest to the highest value.
    Order(Vec<String>),
    /// For `outcome`: how every process of the probe at the scale ends.
    Outcome(Outcome),
}

/// How a process ends, as an `outcome` claim expects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It fails: an exit code other than 0, killed (OOM or a signal), or the run found it invalid.
    Fails,
    /// It is killed: by the OOM killer or by a signal.
    Killed,
    /// It runs to its end and is valid.
    Completes,
}

impl Outcome {
    /// The outcome as written in study files and reports.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Fails => "fails",
            Outcome::Killed => "killed",
            Outcome::Completes => "completes",
        }
    }
}

/// How one process ended, as an `outcome` claim reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ended<'a> {
    /// It was valid: ran to its end, exit code 0.
    pub valid: bool,
    /// It was killed by the OOM killer or a signal.
    pub killed: bool,
    /// Why it failed, and the last lines of its stderr: what `pattern` is matched against.
    pub said: &'a [String],
}

/// Whether a process that ended so is what claim `c` (an `outcome` claim) expects. A claim of
/// another statistic expects nothing.
pub fn expects(c: &Claim, ended: Ended) -> bool {
    let Expected::Outcome(want) = c.expected else {
        return false;
    };
    let failed_so = |killed_needed: bool| {
        !ended.valid
            && (ended.killed || !killed_needed)
            && c.pattern.as_deref().is_none_or(|p| {
                regex::Regex::new(p).is_ok_and(|re| ended.said.iter().any(|l| re.is_match(l)))
            })
    };
    match want {
        Outcome::Completes => ended.valid,
        Outcome::Fails => failed_so(false),
        Outcome::Killed => failed_so(true),
    }
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

/// Allowed distance from the published value: relative (fraction, 0.05 = 5 %) or absolute (in `unit`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    /// Largest distance as a fraction of the published value (0.05 = ±5 %); default none.
    #[serde(default)]
    pub relative: Option<f64>,
    /// Largest distance in the claim's `unit`; default none.
    #[serde(default)]
    pub absolute: Option<f64>,
}

/// Statistics with one value per cell, which `ratio` and `order` can compare.
pub const SCALAR: &[Stat] = &[
    Stat::RssMedian,
    Stat::PerTaskBytes,
    Stat::BaselineMedian,
    Stat::MetricMedian,
    Stat::PeakMedian,
    Stat::ResultMedian,
    Stat::Percentile,
    Stat::WallMedian,
];

/// Whether a failed process is what a claim of `claims` expects: an `outcome` claim about its probe
/// at its scale expecting it to fail (or be killed) as it did. Such a process is the finding, not
/// a failure of the run.
pub fn failure_expected(claims: &[Claim], s: &crate::study::sample::Sample) -> bool {
    let said = s.said();
    let ended = Ended {
        valid: s.valid,
        killed: s.killed(),
        said: &said,
    };
    !s.valid
        && claims.iter().any(|c| {
            c.stat == Stat::Outcome
                && c.probe == s.probe
                && c.tasks == Some(s.tasks)
                && expects(c, ended)
        })
}

/// Fails unless `kind` offers `stat`.
pub fn check_stat(stat: Stat, kind: Kind) -> Result<()> {
    if stat == Stat::Outcome {
        return Ok(());
    }
    let offered = kind.measure().stats();
    ensure!(
        offered.contains(&stat),
        "stat {} does not apply to a {} probe (it offers: {})",
        name(stat),
        kind.name(),
        offered
            .iter()
            .map(|s| name(*s))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// Fails unless `of` is a single value per cell, which `ratio` and `order` can compare.
pub fn check_scalar(of: Stat) -> Result<()> {
    ensure!(
        SCALAR.contains(&of),
        "`of: {}` is not a single value per cell; compare one of: {}",
        name(of),
        SCALAR
            .iter()
            .map(|s| name(*s))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// Fails unless every probe compared (`ids`, of these `kinds`) has the same kind.
pub fn check_one_kind(ids: &[String], kinds: &[Kind]) -> Result<()> {
    if let Some(first) = kinds.first()
        && kinds.iter().any(|k| k != first)
    {
        let each: Vec<String> = ids
            .iter()
            .zip(kinds)
            .map(|(id, k)| format!("{id} is {}", k.name()))
            .collect();
        anyhow::bail!(
            "the claim mixes kinds of measurement ({}); compare probes of one kind",
            each.join(", ")
        );
    }
    Ok(())
}

/// Tolerances are non-negative and finite; values and ranges need one, bounds and orders take none.
/// Errors name the field of the claim they are about.
pub fn check_tolerance(c: &Claim) -> Result<(), Invalid> {
    let t = &c.tolerance;
    for (field, v) in [("relative", t.relative), ("absolute", t.absolute)] {
        if let Some(v) = v {
            ensure_at!(
                v.is_finite() && v >= 0.0,
                format!("tolerance.{field}"),
                "tolerance.{field} is {v}: a tolerance is a non-negative distance (0.05 = ±5 %)"
            );
        }
    }
    let has = t.relative.is_some() || t.absolute.is_some();
    match c.expected {
        Expected::Value(_) | Expected::Range(_) => ensure_at!(
            has,
            "tolerance",
            "tolerance needs `relative` or `absolute` for a published value or range"
        ),
        Expected::Bound(b) => {
            ensure_at!(
                !has,
                "tolerance",
                "a bound (`above`/`below`) takes no tolerance"
            );
            ensure_at!(
                b.above.is_some() || b.below.is_some(),
                "expected",
                "a bound needs `above`, `below` or both"
            );
        }
        Expected::Order(_) => ensure_at!(!has, "tolerance", "an order takes no tolerance"),
        Expected::Outcome(_) => ensure_at!(!has, "tolerance", "an outcome takes no tolerance"),
    }
    Ok(())
}

/// The fields a statistic needs, and a unit that measures what it measures. Errors name the field
/// of the claim they are about.
pub fn check_fields(c: &Claim) -> Result<(), Invalid> {
    let inner = match c.stat {
        Stat::Ratio | Stat::Order => c.of.unwrap_or(c.stat),
        s => s,
    };
    if matches!(inner, Stat::MetricMedian | Stat::ResultMedian) {
        ensure_at!(
            c.metric.is_some(),
            "metric",
            "stat {} needs `metric`: the name of the value",
            name(inner)
        );
    }
    ensure_at!(
        c.than_metric.is_none()
            || (c.stat == Stat::Ratio && matches!(inner, Stat::MetricMedian | Stat::ResultMedian)),
        "than_metric",
        "`than_metric` is for a ratio of metric_median or result_median: the other side's metric"
    );
    if inner == Stat::Percentile {
        let known = crate::study::kind::PERCENTILES;
        match c.percentile {
            Some(p) if known.contains(&p) => {}
            Some(p) => bail_at!(
                "percentile",
                "percentile {p} is not one the latency kind computes: {known:?}"
            ),
            None => bail_at!(
                "percentile",
                "stat percentile needs `percentile`, one of {known:?}"
            ),
        }
    }
    ensure_at!(
        matches!(c.expected, Expected::Order(_)) == (c.stat == Stat::Order),
        "expected",
        "only stat order takes a list of probes as `expected`"
    );
    ensure_at!(
        matches!(c.expected, Expected::Outcome(_)) == (c.stat == Stat::Outcome),
        "expected",
        "stat outcome, and only it, takes `expected: fails`, `killed` or `completes`"
    );
    if let Some(p) = &c.pattern {
        ensure_at!(
            matches!(
                c.expected,
                Expected::Outcome(Outcome::Fails | Outcome::Killed)
            ),
            "pattern",
            "`pattern` is for an outcome claim expecting `fails` or `killed`: what the failure says"
        );
        if let Err(e) = regex::Regex::new(p) {
            bail_at!("pattern", "pattern {p:?} is not a regular expression: {e}");
        }
    }
    let allowed = dimensions(c.stat);
    ensure_at!(
        allowed.contains(&c.unit.dimension()),
        "unit",
        "unit {:?} does not fit stat {} (it measures {:?})",
        c.unit,
        name(c.stat),
        allowed
    );
    Ok(())
}

/// What a statistic measures (a metric or result may be a size, a time or a plain number).
fn dimensions(stat: Stat) -> &'static [Dimension] {
    match stat {
        Stat::RssMedian
        | Stat::RssRange
        | Stat::PerTaskBytes
        | Stat::BaselineMedian
        | Stat::PeakMedian
        | Stat::PeakRange => &[Dimension::Memory],
        Stat::LowerByPercent => &[Dimension::Percent],
        Stat::MetricMedian | Stat::ResultMedian => &[
            Dimension::Memory,
            Dimension::Time,
            Dimension::Percent,
            Dimension::Plain,
        ],
        Stat::Percentile | Stat::WallMedian => &[Dimension::Time],
        Stat::Outcome => &[Dimension::Plain],
        Stat::Ratio => &[Dimension::Plain],
        Stat::Order => &[Dimension::Rank],
    }
}

/// The published value of claim `c` in bytes when it is a single value of `stat` about `probe` at
/// `tasks` in a unit of size; `None` for a range, a bound, a ratio or an order, another statistic,
/// probe or scale.
pub fn published_bytes(c: &Claim, stat: Stat, probe: &str, tasks: u64) -> Option<f64> {
    match c.expected {
        Expected::Value(v)
            if c.stat == stat
                && c.probe == probe
                && c.tasks == Some(tasks)
                && c.unit.dimension() == Dimension::Memory =>
        {
            Some(v * c.unit.scale())
        }
        _ => None,
    }
}

/// Every claim of `claims` with a single published value of `stat` about `probe` at `tasks`, in
/// study order, each with that value in bytes (see [`published_bytes`]).
pub fn published<'a>(
    claims: &'a [Claim],
    stat: Stat,
    probe: &str,
    tasks: u64,
) -> Vec<(&'a Claim, f64)> {
    claims
        .iter()
        .filter_map(|c| Some((c, published_bytes(c, stat, probe, tasks)?)))
        .collect()
}

/// The statistic as written in study files.
pub fn name(stat: Stat) -> &'static str {
    match stat {
        Stat::RssMedian => "rss_median",
        Stat::RssRange => "rss_range",
        Stat::PerTaskBytes => "per_task_bytes",
        Stat::BaselineMedian => "baseline_median",
        Stat::LowerByPercent => "lower_by_percent",
        Stat::MetricMedian => "metric_median",
        Stat::PeakMedian => "peak_median",
        Stat::PeakRange => "peak_range",
        Stat::ResultMedian => "result_median",
        Stat::Percentile => "percentile",
        Stat::Ratio => "ratio",
        Stat::Order => "order",
        Stat::WallMedian => "wall_median",
        Stat::Outcome => "outcome",
    }
}

#[cfg(test)]
mod tests;
