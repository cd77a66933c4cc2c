//! Verdicts: each published claim judged against the run's statistics.
//!
//! Every claim is compared as an interval: a published value `v` is the interval [v, v], a range is
//! [low, high]; the measured side is a value or, for `rss_range`, [min, max] of the process medians.
//! A claim is reproduced when the measured interval lies inside the published one widened by the
//! tolerance on each side. With both a relative and an absolute tolerance, the wider one applies
//! (either suffices). Delta and ratio compare the midpoints.

use serde::{Deserialize, Serialize};

use crate::study::{Claim, Expected, Stat, Tolerance, Unit};
use crate::summary::{Cell, Summary};

/// The verdicts of a run (`verdicts.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictFile {
    /// True when the data is partial (a sample log line could not be read, the run was cut short…).
    pub partial: bool,
    /// Why the data is partial; `None` when it is complete.
    pub partial_reason: Option<String>,
    /// One verdict per claim, in the study's order.
    pub verdicts: Vec<Verdict>,
}

/// One claim, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Claim identifier.
    pub claim: String,
    /// The article's words.
    pub text: String,
    /// The statistic compared.
    pub stat: Stat,
    /// The probe the claim is about.
    pub probe: String,
    /// For `lower_by_percent`: the probe compared against.
    pub than: Option<String>,
    /// The scale (task count); `None` for scale-free statistics.
    pub tasks: Option<u64>,
    /// For `metric_median`: the metric's name.
    pub metric: Option<String>,
    /// Unit of `expected`, `measured`, `accepted` and `delta`.
    pub unit: Unit,
    /// The published value or [low, high] range, in `unit`.
    pub expected: Expected,
    /// The measured value or [min, max] range, in `unit`; `None` when not measured.
    pub measured: Option<Measured>,
    /// Measured values reproduce the claim inside [low, high], in `unit`.
    pub accepted: [f64; 2],
    /// Measured midpoint − published midpoint, signed, in `unit`.
    pub delta: Option<f64>,
    /// Measured midpoint ÷ published midpoint, a plain ratio; `None` when the published one is 0.
    pub ratio: Option<f64>,
    /// The tolerance in words (e.g. `±5 %`, `±2 pp`, `±0 B`).
    pub tolerance: String,
    /// The finding.
    pub status: Status,
    /// What qualifies the finding (e.g. `2 of 3 processes valid`), or why nothing was measured.
    pub note: Option<String>,
}

/// A measured value or [min, max] range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Measured {
    /// A single value, in the claim's unit.
    Value(f64),
    /// [min, max] of the process medians, in the claim's unit.
    Range([f64; 2]),
}

/// The finding of a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The measurement lies within the tolerance of the claim.
    Reproduced,
    /// The measurement lies outside it.
    Differs,
    /// Nothing to compare (no valid sample, missing metric or baseline); the note says why.
    NotMeasured,
}

impl Status {
    /// The status as written in reports.
    pub fn label(self) -> &'static str {
        match self {
            Status::Reproduced => "reproduced",
            Status::Differs => "differs",
            Status::NotMeasured => "not measured",
        }
    }
}

impl Measured {
    /// [low, high]; a value is [v, v].
    pub fn bounds(self) -> [f64; 2] {
        match self {
            Measured::Value(v) => [v, v],
            Measured::Range(r) => r,
        }
    }
}

/// Judges every claim against the statistics, in the claims' order.
pub fn judge(claims: &[Claim], summary: &Summary) -> Vec<Verdict> {
    claims.iter().map(|c| judge_one(c, summary)).collect()
}

fn judge_one(claim: &Claim, summary: &Summary) -> Verdict {
    let expected = bounds(&claim.expected);
    let accepted = accepted(expected, &claim.tolerance);
    let (measured, notes) = match measure(claim, summary) {
        Ok((m, notes)) => (Some(m), notes),
        Err(why) => (None, vec![why]),
    };
    let status = match measured.map(Measured::bounds) {
        None => Status::NotMeasured,
        Some(m) if within(m, accepted) => Status::Reproduced,
        Some(_) => Status::Differs,
    };
    let mid_expected = midpoint(expected);
    let mid_measured = measured.map(|m| midpoint(m.bounds()));
    Verdict {
        claim: claim.id.clone(),
        text: claim.text.clone(),
        stat: claim.stat,
        probe: claim.probe.clone(),
        than: claim.than.clone(),
        tasks: claim.tasks,
        metric: claim.metric.clone(),
        unit: claim.unit,
        expected: claim.expected.clone(),
        measured,
        accepted,
        delta: mid_measured.map(|m| m - mid_expected),
        ratio: mid_measured
            .filter(|_| mid_expected != 0.0)
            .map(|m| m / mid_expected),
        tolerance: describe(&claim.tolerance, claim.unit),
        status,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}

/// The measured value in the claim's unit with qualifying notes, or why there is none.
fn measure(claim: &Claim, summary: &Summary) -> Result<(Measured, Vec<String>), String> {
    let scale = claim.unit.scale();
    if claim.stat == Stat::MetricMedian && claim.tasks.is_none() {
        return metric_all_scales(claim, summary);
    }
    let tasks = claim
        .tasks
        .ok_or_else(|| format!("claim names no task count for {:?}", claim.stat))?;
    let cell = valid_cell(summary, &claim.probe, tasks)?;
    let mut notes = coverage_note(cell, summary.repeats)
        .into_iter()
        .collect::<Vec<_>>();
    let value = match claim.stat {
        Stat::RssMedian => Measured::Value(cell.rss_median_bytes.unwrap_or_default() / scale),
        Stat::RssRange => Measured::Range([
            cell.rss_min_bytes.unwrap_or_default() / scale,
            cell.rss_max_bytes.unwrap_or_default() / scale,
        ]),
        Stat::PerTaskBytes => {
            let v = cell.per_task_bytes.ok_or_else(|| {
                format!(
                    "no valid process of {} at {tasks} tasks has a baseline RSS",
                    claim.probe
                )
            })?;
            Measured::Value(v / scale)
        }
        Stat::LowerByPercent => {
            let than = claim
                .than
                .as_deref()
                .ok_or("claim names no probe to compare against")?;
            let other = valid_cell(summary, than, tasks)?;
            notes.extend(coverage_note(other, summary.repeats));
            let r = summary
                .ratio(&claim.probe, than, tasks)
                .ok_or_else(|| format!("no ratio of {} to {than} at {tasks} tasks", claim.probe))?;
            Measured::Value(r.lower_by_percent)
        }
        Stat::MetricMedian => {
            let name = claim.metric.as_deref().ok_or("claim names no metric")?;
            let m = cell.metrics.get(name).ok_or_else(|| {
                format!(
                    "no valid sample of {} at {tasks} tasks reports metric {name}",
                    claim.probe
                )
            })?;
            if m.count < cell.valid {
                notes.push(format!(
                    "{name} reported by {} of {} valid processes",
                    m.count, cell.valid
                ));
            }
            Measured::Value(m.median / scale)
        }
    };
    Ok((value, notes))
}

fn metric_all_scales(claim: &Claim, summary: &Summary) -> Result<(Measured, Vec<String>), String> {
    let name = claim.metric.as_deref().ok_or("claim names no metric")?;
    let probe = summary
        .probe(&claim.probe)
        .ok_or_else(|| format!("probe {} is not in the study", claim.probe))?;
    let m = probe
        .metrics
        .get(name)
        .ok_or_else(|| format!("no valid sample of {} reports metric {name}", claim.probe))?;
    let note = format!("median of {} valid processes, all scales", m.count);
    Ok((Measured::Value(m.median / claim.unit.scale()), vec![note]))
}

fn valid_cell<'a>(summary: &'a Summary, probe: &str, tasks: u64) -> Result<&'a Cell, String> {
    match summary.cell(probe, tasks) {
        None => Err(format!("{probe} at {tasks} tasks is not in the study")),
        Some(c) if c.valid == 0 => Err(format!("no valid sample of {probe} at {tasks} tasks")),
        Some(c) => Ok(c),
    }
}

fn coverage_note(cell: &Cell, repeats: u32) -> Option<String> {
    (cell.valid != repeats as usize).then(|| {
        format!(
            "{}: {} of {repeats} processes valid at {} tasks",
            cell.probe, cell.valid, cell.tasks
        )
    })
}

fn bounds(e: &Expected) -> [f64; 2] {
    match e {
        Expected::Value(v) => [*v, *v],
        Expected::Range([lo, hi]) => [lo.min(*hi), lo.max(*hi)],
    }
}

fn midpoint([lo, hi]: [f64; 2]) -> f64 {
    f64::midpoint(lo, hi)
}

/// The published interval widened by the tolerance on each side.
fn accepted([lo, hi]: [f64; 2], tol: &Tolerance) -> [f64; 2] {
    let widen = |v: f64| {
        let rel = tol.relative.map_or(0.0, |r| r * v.abs());
        rel.max(tol.absolute.unwrap_or(0.0))
    };
    [lo - widen(lo), hi + widen(hi)]
}

/// Whether the measured interval lies inside the accepted one; a hair of slack (10⁻⁹ relative)
/// absorbs float noise from unit conversion so that an exact match is never judged off.
fn within([lo, hi]: [f64; 2], [a, b]: [f64; 2]) -> bool {
    let slack = |v: f64| 1e-9 * v.abs().max(1.0);
    lo >= a - slack(a) && hi <= b + slack(b)
}

fn describe(tol: &Tolerance, unit: Unit) -> String {
    let rel = tol.relative.map(|r| {
        let pct = trim(r * 100.0);
        if unit == Unit::Percent {
            format!("±{pct} % rel.")
        } else {
            format!("±{pct} %")
        }
    });
    let abs = tol.absolute.map(|a| match unit {
        Unit::Percent => format!("±{} pp", trim(a)),
        _ => format!("±{} {}", trim(a), unit_label(unit)),
    });
    match (rel, abs) {
        (Some(r), Some(a)) => format!("{r} or {a}"),
        (r, a) => r.or(a).unwrap_or_default(),
    }
}

/// A tolerance number without trailing zeros (5, 2.5, 0.1).
fn trim(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The unit as written in reports.
pub fn unit_label(unit: Unit) -> &'static str {
    match unit {
        Unit::B => "B",
        Unit::KiB => "KiB",
        Unit::MiB => "MiB",
        Unit::GiB => "GiB",
        Unit::Percent => "%",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    fn claim(yaml: &str) -> Claim {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn one(yaml: &str) -> Verdict {
        judge(&[claim(yaml)], &fixture::summary()).remove(0)
    }

    const BASE: &str = "{id: c, text: t, probe: go, tasks: 10000, unit: B, ";

    #[test]
    fn value_reproduced_and_differs_with_signed_delta() {
        let median = fixture::summary()
            .cell("go", 10_000)
            .unwrap()
            .rss_median_bytes
            .unwrap();
        let ok = one(&format!(
            "{BASE} stat: rss_median, expected: {}, tolerance: {{relative: 0.01}}}}",
            median * 1.005
        ));
        assert_eq!(ok.status, Status::Reproduced);
        assert!(ok.delta.unwrap() < 0.0);
        let off = one(&format!(
            "{BASE} stat: rss_median, expected: {}, tolerance: {{absolute: 1000}}}}",
            median - 5000.0
        ));
        assert_eq!(off.status, Status::Differs);
        assert!(
            (off.delta.unwrap() - 5000.0).abs() < 1e-6,
            "measured − expected, signed"
        );
        assert!(off.ratio.unwrap() > 1.0);
        assert_eq!(off.tolerance, "±1000 B");
    }

    #[test]
    fn either_tolerance_suffices() {
        let median = fixture::summary()
            .cell("go", 10_000)
            .unwrap()
            .rss_median_bytes
            .unwrap();
        let yaml = format!(
            "{BASE} stat: rss_median, expected: {}, tolerance: {{relative: 0.0001, absolute: 100000}}}}",
            median + 50_000.0
        );
        let v = one(&yaml);
        assert_eq!(v.status, Status::Reproduced);
        assert_eq!(v.tolerance, "±0.01 % or ±100000 B");
    }

    #[test]
    fn range_inside_and_outside() {
        let cell = fixture::summary().cell("go", 10_000).unwrap().clone();
        let mib = |b: Option<f64>| b.unwrap() / Unit::MiB.scale();
        let (lo, hi) = (mib(cell.rss_min_bytes), mib(cell.rss_max_bytes));
        let yaml = |a: f64, b: f64| {
            format!(
                "{{id: r, text: t, probe: go, tasks: 10000, unit: MiB, stat: rss_range, expected: [{a}, {b}], tolerance: {{relative: 0.001}}}}"
            )
        };
        let inside = one(&yaml(lo - 0.01, hi + 0.01));
        assert_eq!(inside.status, Status::Reproduced);
        assert_eq!(inside.measured, Some(Measured::Range([lo, hi])));
        let outside = one(&yaml(lo + 0.2, hi + 0.3));
        assert_eq!(outside.status, Status::Differs);
        assert!(
            (outside.delta.unwrap() + 0.25).abs() < 1e-9,
            "delta on midpoints"
        );
    }

    #[test]
    fn not_measured_says_why() {
        let mut samples = fixture::samples();
        samples.retain(|s| !(s.probe == "go" && s.tasks == 1_000_000));
        let summary = crate::summary::summarize(&fixture::study(), &samples);
        let v = judge(&fixture::study().claims, &summary);
        let go = v.iter().find(|v| v.claim == "go-rss-1m").unwrap();
        assert_eq!(
            (go.status, go.measured, go.delta),
            (Status::NotMeasured, None, None)
        );
        assert_eq!(
            go.note.as_deref(),
            Some("no valid sample of go at 1000000 tasks")
        );
        let lower = v.iter().find(|v| v.claim == "rust-lower-1m").unwrap();
        assert_eq!(lower.status, Status::NotMeasured);
        let missing = one(&format!(
            "{BASE} stat: metric_median, metric: nope, expected: 1, tolerance: {{absolute: 0}}}}"
        ));
        assert_eq!(
            missing.note.as_deref(),
            Some("no valid sample of go at 10000 tasks reports metric nope")
        );
    }

    #[test]
    fn metric_without_tasks_uses_every_scale() {
        let v = one(
            "{id: f, text: t, probe: rust-tokio, stat: metric_median, metric: future_size_64b, expected: 152, unit: B, tolerance: {absolute: 0}}",
        );
        assert_eq!(
            (v.status, v.measured),
            (Status::Reproduced, Some(Measured::Value(152.0)))
        );
        assert_eq!(
            v.note.as_deref(),
            Some("median of 12 valid processes, all scales")
        );
    }

    #[test]
    fn default_study_on_fixtures() {
        let v = judge(&fixture::study().claims, &fixture::summary());
        let status = |id: &str| v.iter().find(|v| v.claim == id).unwrap().status;
        assert_eq!(status("go-rss-1m"), Status::Reproduced);
        assert_eq!(status("rust-range-1m"), Status::Differs);
        let lower = v.iter().find(|v| v.claim == "rust-lower-1m").unwrap();
        assert_eq!(
            lower.note.as_deref(),
            Some("go: 2 of 3 processes valid at 1000000 tasks")
        );
        assert_eq!(lower.tolerance, "±2 pp");
    }
}
