//! Verdicts: each published claim judged against the run's statistics.
//!
//! Every claim is compared as an interval: a published value `v` is the interval [v, v], a range is
//! [low, high]; the measured side is a value or, for `rss_range`, [min, max] of the process medians.
//! A claim is reproduced when the measured interval lies inside the published one widened by the
//! tolerance on each side. With both a relative and an absolute tolerance, the wider one applies
//! (either suffices). Delta and ratio compare the midpoints.

mod compare;
pub(crate) use compare::sides;
mod outcome;
mod value;

use serde::{Deserialize, Serialize};

use crate::outputs::summary::Summary;
use crate::study::{Claim, Expected, Stat, Study, Tolerance, Unit};

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
    /// For `lower_by_percent` and `ratio`: what the probe was compared against, in words.
    pub than: Option<String>,
    /// For `ratio` and `order`: the statistic compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<Stat>,
    /// Participants of a comparison that could not be measured, each with the reason; the verdict
    /// is then judged on the others and is partial.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
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
    /// Measured values reproduce the claim inside [low, high], in `unit`; an open side of a bound is
    /// `null`. [null, null] for an order.
    pub accepted: [Option<f64>; 2],
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

/// A measured value, [min, max] range or ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Measured {
    /// A single value, in the claim's unit.
    Value(f64),
    /// [min, max] of the process values, in the claim's unit.
    Range([f64; 2]),
    /// Probes from the lowest to the highest measured value.
    Order(Vec<String>),
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
    /// Judged without some participants, and one of them could turn the finding around (e.g.
    /// "Go uses more than 13× the lowest" when the lowest probe was not measured); or measured, but
    /// resting on a claim (`requires`) that did not reproduce.
    Inconclusive,
}

impl Status {
    /// The status as written in reports.
    pub fn label(self) -> &'static str {
        match self {
            Status::Reproduced => "reproduced",
            Status::Differs => "differs",
            Status::NotMeasured => "not measured",
            Status::Inconclusive => "inconclusive",
        }
    }
}

impl Measured {
    /// [low, high]; a value is [v, v]; `None` for a ranking.
    pub fn bounds(&self) -> Option<[f64; 2]> {
        match self {
            Measured::Value(v) => Some([*v, *v]),
            Measured::Range(r) => Some(*r),
            Measured::Order(_) => None,
        }
    }
}

/// What measuring a claim found: the value, notes that qualify it, and participants left out.
struct Found {
    measured: Measured,
    notes: Vec<String>,
    missing: Vec<String>,
    /// With participants missing: which findings they could not turn around (`None`: no effect).
    settled: Option<Settled>,
    /// What the measurement must lie in when the claim's published side does not say it (an
    /// outcome: every process that ran); `None`: the published value widened by the tolerance.
    accepted: Option<[f64; 2]>,
}

/// Which finding of a partial comparison the missing participants cannot change.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Settled {
    /// Adding participants can only make the claim fail more: a `differs` stands.
    Differs,
    /// Adding participants can only help the claim: a `reproduced` stands.
    Reproduced,
    /// Adding participants could move the value either way: no finding stands.
    Neither,
}

impl Verdict {
    /// The status as written in tables, with `(partial)` when participants were missing.
    pub fn status_label(&self) -> String {
        if self.missing.is_empty() {
            self.status.label().to_string()
        } else {
            format!("{} (partial)", self.status.label())
        }
    }
}

/// Judges every claim of the study against the statistics, in the claims' order.
pub fn judge(study: &Study, summary: &Summary) -> Vec<Verdict> {
    let mut verdicts: Vec<Verdict> = study
        .claims
        .iter()
        .map(|c| judge_one(study, c, summary))
        .collect();
    let premises = verdicts.clone();
    for (v, claim) in verdicts.iter_mut().zip(&study.claims) {
        rest_on(v, &claim.requires, &premises);
    }
    verdicts
}

/// A finding resting on a claim that did not reproduce (`requires`) cannot stand: it becomes
/// `inconclusive`, and the note names that claim. Nothing measured stays `not measured`.
fn rest_on(v: &mut Verdict, requires: &[String], premises: &[Verdict]) {
    let failed: Vec<String> = requires
        .iter()
        .filter_map(|id| premises.iter().find(|p| &p.claim == id))
        .filter(|p| p.status != Status::Reproduced)
        .map(|p| format!("{} ({})", p.claim, p.status_label()))
        .collect();
    if failed.is_empty() || v.status == Status::NotMeasured {
        return;
    }
    let why = format!(
        "rests on {}, which did not reproduce: this finding cannot stand",
        failed.join(", ")
    );
    v.note = Some(match v.note.take() {
        Some(n) => format!("{n}; {why}"),
        None => why,
    });
    v.status = Status::Inconclusive;
}

fn judge_one(study: &Study, claim: &Claim, summary: &Summary) -> Verdict {
    let (found, mut notes) = match measure(study, claim, summary) {
        Ok(f) => {
            let notes = f.notes.clone();
            (Some(f), notes)
        }
        Err(why) => (None, vec![why]),
    };
    let missing = found
        .as_ref()
        .map(|f| f.missing.clone())
        .unwrap_or_default();
    let settled = found.as_ref().and_then(|f| f.settled);
    let own_accepted = found.as_ref().and_then(|f| f.accepted);
    if !missing.is_empty() {
        notes.push(format!("partial, not measured: {}", missing.join("; ")));
    }
    let measured = found.map(|f| f.measured);
    let accepted = match own_accepted {
        Some([lo, hi]) => [Some(lo), Some(hi)],
        None => accepted(&claim.expected, &claim.tolerance),
    };
    let status = match &measured {
        None => Status::NotMeasured,
        Some(m) if holds(&claim.expected, m, accepted) => Status::Reproduced,
        Some(_) => Status::Differs,
    };
    let status = match (status, settled) {
        (Status::Reproduced, Some(Settled::Differs | Settled::Neither))
        | (Status::Differs, Some(Settled::Reproduced | Settled::Neither)) => {
            notes.push("a probe not measured could turn this finding around".into());
            Status::Inconclusive
        }
        (s, _) => s,
    };
    let mid_expected = midpoint_of(&claim.expected);
    let mid_measured = measured.as_ref().and_then(Measured::bounds).map(midpoint);
    let (delta, ratio) = match (mid_measured, mid_expected) {
        (Some(m), Some(e)) => (Some(m - e), (e != 0.0).then(|| m / e)),
        _ => (None, None),
    };
    Verdict {
        claim: claim.id.clone(),
        text: claim.text.clone(),
        stat: claim.stat,
        probe: claim.probe.clone(),
        than: compare::than_words(study, claim),
        of: claim.of,
        missing,
        tasks: claim.tasks,
        metric: claim.metric.clone(),
        unit: claim.unit,
        expected: claim.expected.clone(),
        measured,
        accepted,
        delta,
        ratio,
        tolerance: match claim.expected {
            Expected::Bound(_) | Expected::Order(_) | Expected::Outcome(_) => "—".into(),
            _ => describe(&claim.tolerance, claim.unit),
        },
        status,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}

/// The measured value in the claim's unit with qualifying notes, or why there is none.
fn measure(study: &Study, claim: &Claim, summary: &Summary) -> Result<Found, String> {
    let plain = |measured, notes| Found {
        measured,
        notes,
        missing: Vec::new(),
        settled: None,
        accepted: None,
    };
    match claim.stat {
        Stat::Outcome => outcome::judge(claim, summary).map(|(matched, ran, note)| Found {
            accepted: Some([ran as f64; 2]),
            ..plain(Measured::Value(matched as f64), vec![note])
        }),
        Stat::Ratio => compare::ratio(study, claim, summary),
        Stat::Order => compare::order(claim, summary),
        Stat::LowerByPercent => compare::lower_by(claim, summary).map(|(m, n)| plain(m, n)),
        Stat::MetricMedian if claim.tasks.is_none() => {
            value::metric_all_scales(claim, summary).map(|(m, n)| plain(m, n))
        }
        Stat::RssRange | Stat::PeakRange => value::range(claim, summary).map(|(m, n)| plain(m, n)),
        stat => {
            let tasks = claim
                .tasks
                .ok_or_else(|| format!("claim names no task count for {stat:?}"))?;
            let (v, notes) = value::scalar(stat, claim, &claim.probe, tasks, summary)?;
            Ok(plain(Measured::Value(v / claim.unit.scale()), notes))
        }
    }
}

/// Whether the measurement reproduces the claim.
fn holds(expected: &Expected, measured: &Measured, accepted: [Option<f64>; 2]) -> bool {
    match (expected, measured) {
        (Expected::Order(want), Measured::Order(got)) => {
            let want: Vec<&String> = want.iter().filter(|p| got.contains(p)).collect();
            want.iter().copied().eq(got.iter())
        }
        (Expected::Bound(_), m) => m.bounds().is_some_and(|[lo, hi]| {
            accepted[0].is_none_or(|a| lo > a) && accepted[1].is_none_or(|b| hi < b)
        }),
        (_, m) => match (m.bounds(), accepted) {
            (Some(m), [Some(a), Some(b)]) => within(m, [a, b]),
            _ => false,
        },
    }
}

/// The published midpoint; `None` for bounds and orders.
fn midpoint_of(e: &Expected) -> Option<f64> {
    match e {
        Expected::Value(_) | Expected::Range(_) => bounds(e).map(midpoint),
        _ => None,
    }
}

fn bounds(e: &Expected) -> Option<[f64; 2]> {
    match e {
        Expected::Value(v) => Some([*v, *v]),
        Expected::Range([lo, hi]) => Some([lo.min(*hi), lo.max(*hi)]),
        Expected::Bound(_) | Expected::Order(_) | Expected::Outcome(_) => None,
    }
}

fn midpoint([lo, hi]: [f64; 2]) -> f64 {
    f64::midpoint(lo, hi)
}

/// The published interval widened by the tolerance on each side; a bound's open side is `None`.
fn accepted(e: &Expected, tol: &Tolerance) -> [Option<f64>; 2] {
    let widen = |v: f64| {
        let rel = tol.relative.map_or(0.0, |r| r * v.abs());
        rel.max(tol.absolute.unwrap_or(0.0))
    };
    match (e, bounds(e)) {
        (_, Some([lo, hi])) => [Some(lo - widen(lo)), Some(hi + widen(hi))],
        (Expected::Bound(b), None) => [b.above, b.below],
        _ => [None, None],
    }
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
        Unit::Kb => "kB",
        Unit::Mb => "MB",
        Unit::Percent => "%",
        Unit::Ns => "ns",
        Unit::Us => "µs",
        Unit::Ms => "ms",
        Unit::S => "s",
        Unit::Times => "×",
        Unit::Count => "",
        Unit::Rank => "",
    }
}

#[cfg(test)]
mod tests;
