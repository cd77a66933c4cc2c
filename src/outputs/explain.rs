//! An explanation of a claim that differs: a sweep study of the claim's probes with one factor's
//! level changed at a time (`sweep`), run like any study, and what each variant's measurement says
//! about the gap between the baseline and the published value (`explain`, `markdown`, `svg`).

mod render;
mod sweep;

use std::fmt::Write as _;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::outputs::number;
use crate::outputs::outcome::Outcome;
use crate::outputs::summary::Summary;
use crate::outputs::verdict::{Measured, Status, Verdict};
use crate::study::factor::{Factor, Level, declared_id};
use crate::study::{Claim, Expected};

pub use render::{markdown, svg};
pub use sweep::{Sweep, Variant, factors_for, is_sweep_of, sweep, sweep_id};

/// The file names an explanation writes in its sweep's run folder.
pub const MARKDOWN: &str = "explanation.md";
pub const SVG: &str = "tornado.svg";
pub const JSON: &str = crate::run::run_dir::EXPLANATION;
/// The explanation as one self-contained HTML page, its figure inline.
pub const HTML: &str = "explanation.html";

/// The explanation as one self-contained page: its Markdown with the figure inline.
pub fn html(e: &Explanation) -> String {
    let body = crate::outputs::html::markdown(&markdown(e), &[(SVG, svg(e).as_str())]);
    let body = if body.contains("<svg") {
        body
    } else {
        format!(
            "{body}<h2>Figure</h2>\n<figure data-design=\"tornado\">{}</figure>\n",
            svg(e)
        )
    };
    crate::outputs::html::page(&format!("Explanation of {}", e.claim), &body)
}

/// One row of an explanation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub factor: String,
    pub level: String,
    /// The claim's statistic measured on the variant, in the claim's unit; `None` when not measured.
    pub value: Option<f64>,
    /// The spread of the processes behind it: (max − min) ÷ median of the cell's per-process values.
    pub spread: Option<f64>,
    /// `value` − the baseline's value.
    pub change: Option<f64>,
    /// How much of the gap from the baseline to the published value the variant closes (1 = all of
    /// it; negative: it widens the gap).
    pub closes: Option<f64>,
    /// The variant claim's verdict (`reproduced` when the variant alone reaches the published value).
    pub status: Status,
    /// Why the variant was not measured (a failed build, invalid samples).
    pub note: Option<String>,
    /// The baseline `change` and `closes` are against, when it is not the explanation's own (a
    /// pair tried together in a second sweep, beside that sweep's own baseline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against: Option<f64>,
}

/// What a sweep's `explanation.json` says it explains, as `verify` reads it back.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Explains {
    /// The claim swept (the sweep's study judges it under the same id).
    pub claim: String,
    /// The explained run's study; empty in an explanation written before it was recorded.
    #[serde(default)]
    pub study: String,
    /// The explained run.
    pub explained_run: String,
}

/// An explanation of one claim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub claim: String,
    /// The explained run's study (its id).
    pub study: String,
    pub text: String,
    pub unit: crate::study::Unit,
    /// The run the claim was judged in, and the sweep's run.
    pub explained_run: String,
    pub sweep_run: String,
    pub published: f64,
    /// The baseline measured in the sweep, beside its variants.
    pub baseline: Option<f64>,
    pub baseline_spread: Option<f64>,
    pub rows: Vec<Row>,
    /// The finding, in words.
    pub finding: String,
    /// The factors left out of the default set because their images would take long to build
    /// here, one line each (what each needs and the flag that includes it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// The sweep runs' validity warnings (what may have touched their numbers: a busy machine,
    /// CPUs shared with another run), each once; their reports say which samples.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The value a verdict's measurement stands for: a single value, or a range's middle.
pub fn point(v: &Verdict) -> Option<f64> {
    match v.measured.as_ref()? {
        Measured::Value(x) => Some(*x),
        Measured::Range([a, b]) => Some((a + b) / 2.0),
        Measured::Order(_) => None,
    }
}

/// The published value the gap is measured to: the value, or the nearer end of a range or bound.
fn target(expected: &Expected, from: f64) -> Option<f64> {
    match expected {
        Expected::Value(x) => Some(*x),
        Expected::Range([a, b]) => Some(if (from - a).abs() < (from - b).abs() {
            *a
        } else {
            *b
        }),
        Expected::Bound(b) => b.above.or(b.below),
        Expected::Order(_) | Expected::Outcome(_) => None,
    }
}

/// The relative spread of the processes behind a verdict's cell.
fn spread(summary: &Summary, v: &Verdict) -> Option<f64> {
    let tasks = v.tasks?;
    let cell = summary.cell(&v.probe, tasks)?;
    // The spread of the statistics read per process; other claims show none.
    let values: Vec<f64> = match v.stat {
        crate::study::Stat::PerTaskBytes => cell
            .processes
            .iter()
            .filter_map(|p| p.per_task_bytes)
            .collect(),
        crate::study::Stat::RssMedian => cell
            .processes
            .iter()
            .filter_map(|p| p.rss_median_bytes)
            .collect(),
        _ => return None,
    };
    let s = crate::outputs::summary::Spread::of(values)?;
    (s.median != 0.0).then(|| (s.max - s.min) / s.median.abs())
}

/// What the sweep's outcome says: a row per variant (`failed` lists variants whose build failed,
/// with why), and the finding.
pub fn explain(
    claim: &Claim,
    (study, explained_run): (&str, &str),
    sweep: &Sweep,
    outcome: &Outcome,
    failed: &[(Variant, String)],
) -> Result<Explanation> {
    let verdict = |id: &str| outcome.verdicts.iter().find(|v| v.claim == id);
    let base =
        verdict(&claim.id).ok_or_else(|| anyhow::anyhow!("the sweep judged no {}", claim.id))?;
    let baseline = point(base);
    let published = target(&claim.expected, baseline.unwrap_or(0.0)).ok_or_else(|| {
        anyhow::anyhow!(
            "claim {:?} has no published value to close a gap to",
            claim.id
        )
    })?;
    let gap = baseline.map(|b| published - b);
    let mut rows = Vec::new();
    for variant in &sweep.variants {
        let v = verdict(&variant.claim);
        let value = v.and_then(point);
        let change = value.zip(baseline).map(|(x, b)| x - b);
        rows.push(Row {
            factor: variant.factor.clone(),
            level: variant.level.clone(),
            value,
            spread: v.and_then(|v| spread(&outcome.summary, v)),
            change,
            closes: change.zip(gap).and_then(|(c, g)| (g != 0.0).then(|| c / g)),
            status: v.map_or(Status::NotMeasured, |v| v.status),
            note: v.and_then(|v| v.note.clone()),
            against: None,
        });
    }
    for (variant, why) in failed {
        rows.push(Row {
            factor: variant.factor.clone(),
            level: variant.level.clone(),
            value: None,
            spread: None,
            change: None,
            closes: None,
            status: Status::NotMeasured,
            note: Some(why.clone()),
            against: None,
        });
    }
    let mut e = Explanation {
        claim: claim.id.clone(),
        study: study.to_string(),
        text: claim.text.clone(),
        unit: claim.unit,
        explained_run: explained_run.to_string(),
        sweep_run: outcome.run_id.clone(),
        published,
        baseline,
        baseline_spread: spread(&outcome.summary, base),
        rows,
        finding: String::new(),
        skipped: Vec::new(),
        warnings: Vec::new(),
    };
    e.add_warnings(outcome.warnings.iter().map(|w| w.what.as_str()));
    e.finding = finding(&e);
    Ok(e)
}

impl Explanation {
    /// Adds the rows of a second sweep (the pair tried together), and its warnings, and says the
    /// finding again.
    pub fn merge(&mut self, other: Explanation) {
        self.add_warnings(other.warnings.iter().map(String::as_str));
        let against = other.baseline.filter(|b| Some(*b) != self.baseline);
        self.rows.extend(other.rows.into_iter().map(|mut r| {
            r.against = r.against.or(against);
            r
        }));
        self.sweep_run = format!("{}, {}", self.sweep_run, other.sweep_run);
        self.finding = finding(self);
    }

    /// Adds the validity warnings of a sweep's run that are not said already.
    fn add_warnings<'a>(&mut self, warnings: impl IntoIterator<Item = &'a str>) {
        for w in warnings {
            if !self.warnings.iter().any(|said| said == w) {
                self.warnings.push(w.to_string());
            }
        }
    }
}

/// The finding in words: which single factor (or pair) reaches the published value, or none.
fn finding(e: &Explanation) -> String {
    let show = |v: f64| number::value(v, e.unit);
    let Some(baseline) = e.baseline else {
        return "The baseline was not measured in the sweep, so nothing can be said.".into();
    };
    let reached: Vec<&Row> = e
        .rows
        .iter()
        .filter(|r| r.status == Status::Reproduced)
        .collect();
    let (pairs, singles): (Vec<&Row>, Vec<&Row>) =
        reached.iter().partition(|r| r.factor.contains('+'));
    let mut out = String::new();
    // Single levels that reach the published value say it; else pairs that do.
    let alone = !singles.is_empty();
    let found = if alone { &singles } else { &pairs };
    for r in found.iter() {
        let lead = if alone {
            format!(
                "{} = {} alone accounts for the difference",
                r.factor, r.level
            )
        } else {
            format!(
                "No factor alone accounts for the difference; {} = {} together do",
                r.factor, r.level
            )
        };
        let _ = write!(
            out,
            "{lead}: {} against the baseline's {} (published {}). ",
            show(r.value.unwrap_or(f64::NAN)),
            show(baseline),
            show(e.published)
        );
    }
    if found.is_empty() {
        out.push_str(&none_found(e, baseline));
    }
    if let Some(past) = moved_past(e) {
        out = out.trim_end().to_string();
        let _ = write!(
            out,
            " Moved past the published value, out of its tolerance: {past}."
        );
    }
    out.trim().to_string()
}

/// The finding when no variant reaches the published value: the gap, and the variant that closes
/// most of it, if any does.
fn none_found(e: &Explanation, baseline: f64) -> String {
    let show = |v: f64| number::value(v, e.unit);
    let best = e
        .rows
        .iter()
        .filter_map(|r| Some((r, r.closes?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(r, _)| r);
    let mut out = format!(
        "None of the swept factors explains the difference: the baseline measures {} against the published {}",
        show(baseline),
        show(e.published)
    );
    match best {
        Some(r) if r.closes.is_some_and(|c| c > 0.0) => {
            let _ = write!(
                out,
                ", and the variant that comes closest, {} = {}, closes {:.1} % of the gap ({}).",
                r.factor,
                r.level,
                r.closes.unwrap_or(0.0) * 100.0,
                show(r.value.unwrap_or(f64::NAN))
            );
        }
        _ => out.push_str(", and no variant moves the value toward the published one."),
    }
    out
}

/// The variants that moved past the published value without reproducing it, listed.
fn moved_past(e: &Explanation) -> Option<String> {
    let past: Vec<String> = e
        .rows
        .iter()
        .filter(|r| r.status != Status::Reproduced && r.closes.is_some_and(|c| c > 1.0))
        .map(|r| {
            format!(
                "{} = {} ({})",
                r.factor,
                r.level,
                number::value(r.value.unwrap_or(f64::NAN), e.unit)
            )
        })
        .collect();
    (!past.is_empty()).then(|| past.join(", "))
}

/// The factor levels worth trying together: the two that closed most of the gap without reaching
/// the published value, from different factors of one probe, when their changes combine.
pub fn pair_to_try<'a>(
    e: &Explanation,
    factors: &[&'a Factor],
) -> Option<(&'a Factor, &'a Level, &'a Factor, &'a Level)> {
    if e.rows.iter().any(|r| r.status == Status::Reproduced) {
        return None;
    }
    let mut helpful: Vec<&Row> = e
        .rows
        .iter()
        .filter(|r| r.closes.is_some_and(|c| c > 0.0) && !r.factor.contains('+'))
        .collect();
    // Every `closes` here is set (filtered above).
    helpful.sort_by(|a, b| b.closes.unwrap_or(0.0).total_cmp(&a.closes.unwrap_or(0.0)));
    let find = |r: &Row| {
        let f = factors
            .iter()
            .copied()
            .find(|f| declared_id(&f.id) == r.factor)?;
        Some((f, f.levels.iter().find(|l| l.id == r.level)?))
    };
    for (i, a) in helpful.iter().enumerate() {
        for b in &helpful[i + 1..] {
            let (Some((fa, la)), Some((fb, lb))) = (find(a), find(b)) else {
                continue;
            };
            if fa.id != fb.id && fa.probe == fb.probe && la.combines_with(lb) {
                return Some((fa, la, fb, lb));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
