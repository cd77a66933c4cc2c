//! An explanation of a claim that differs: a sweep study of the claim's probes with one factor's
//! level changed at a time (`sweep`), run like any study, and what each variant's measurement says
//! about the gap between the baseline and the published value (`explain`, `markdown`, `svg`).

use std::fmt::Write as _;

use anyhow::{Result, bail, ensure};
use serde::Serialize;

use crate::outputs::outcome::Outcome;
use crate::outputs::report::number;
use crate::outputs::summary::Summary;
use crate::outputs::verdict::{Measured, Status, Verdict};
use crate::study::factor::{Factor, Level, declared_id};
use crate::study::{Claim, Expected, Study, Than};

/// The file names an explanation writes in its sweep's run folder.
pub const MARKDOWN: &str = "explanation.md";
pub const SVG: &str = "tornado.svg";
pub const JSON: &str = "explanation.json";

/// One variant of a sweep: a factor's level applied to one probe of the claim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    /// The factor (two joined by `+` for a pair tried together).
    pub factor: String,
    /// The level (`a+b` for a pair).
    pub level: String,
    /// The variant probe's id in the sweep study: `<probe>~<factor>=<level>`.
    pub probe: String,
    /// The variant claim's id: `<claim>~<factor>=<level>`.
    pub claim: String,
}

/// A sweep study and its variants.
pub struct Sweep {
    pub study: Study,
    pub variants: Vec<Variant>,
}

/// The factors of `study` that bear on `claim` (they vary one of its probes), or those named in
/// `only`; an unknown or unrelated name is an error that lists the declared ones.
pub fn factors_for<'a>(
    study: &'a Study,
    claim: &Claim,
    only: &[String],
) -> Result<Vec<&'a Factor>> {
    let probes = probes_of(claim);
    let related: Vec<&Factor> = study
        .factors
        .iter()
        .filter(|f| probes.contains(&f.probe.as_str()))
        .collect();
    let names = || {
        related
            .iter()
            .map(|f| f.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    ensure!(
        !related.is_empty(),
        "claim {:?} is about {}, and study {} declares no factors for {}: add `factors:` to the study",
        claim.id,
        probes.join(", "),
        study.id,
        if probes.len() == 1 { "it" } else { "them" }
    );
    if only.is_empty() {
        return Ok(related);
    }
    only.iter()
        .map(|name| {
            let found = related.iter().copied().find(|f| &f.id == name);
            let found = found.or_else(|| {
                related
                    .iter()
                    .copied()
                    .find(|f| declared_id(&f.id) == name)
            });
            found.ok_or_else(|| {
                anyhow::anyhow!(
                    "factor {name:?} is not declared for the probes of claim {:?} ({}); declared: {}",
                    claim.id,
                    probes.join(", "),
                    names()
                )
            })
        })
        .collect()
}

/// The probes a claim is judged on.
fn probes_of(claim: &Claim) -> Vec<&str> {
    let mut out = vec![claim.probe.as_str()];
    match &claim.than {
        Some(Than::One(id)) if id != "lowest" && id != "highest" => out.push(id),
        Some(Than::Each(ids)) => out.extend(ids.iter().map(String::as_str)),
        _ => {}
    }
    out.retain(|p| !p.is_empty());
    out
}

/// The sweep for `claim`: its probes at its scale, and per factor level a variant probe and a
/// variant claim judged on it. `pairs` adds levels tried together (factor, level, factor, level).
pub fn sweep(
    study: &Study,
    claim: &Claim,
    factors: &[&Factor],
    pairs: &[(&Factor, &Level, &Factor, &Level)],
) -> Result<Sweep> {
    if matches!(&claim.than, Some(Than::One(w)) if w == "lowest" || w == "highest") {
        bail!(
            "claim {:?} compares its probe with the lowest or highest of the study's probes: a sweep \
             runs only the claim's probes and its variants, so it cannot judge such a claim",
            claim.id
        );
    }
    if matches!(claim.expected, Expected::Order(_)) {
        bail!(
            "claim {:?} is an order of probes: a sweep explains a value, not a ranking",
            claim.id
        );
    }
    let tasks = match claim.tasks {
        Some(t) => t,
        None => {
            let probe = study
                .probe(&claim.probe)
                .expect("a claim's probe is validated");
            *study
                .scales_of(probe)
                .iter()
                .min()
                .expect("a probe has a scale")
        }
    };
    let mut out = study.clone();
    // The sweep's folder is named for the claim (`<claim>.<kernel>` for `<claim>@<kernel>`).
    out.id = claim.id.replace('@', ".");
    out.title = format!("Explaining {}: {}", claim.id, study.title);
    out.factors.clear();
    // The probes keep the kernels the run gave them; the sweep is not laid out again.
    out.protocol.kernels.clear();
    out.protocol.scales = vec![tasks];
    if let Some(than) = claim.than_tasks.filter(|n| *n != tasks) {
        out.protocol.scales.push(than);
    }
    let names = probes_of(claim);
    out.probes.retain(|p| names.contains(&p.id.as_str()));
    for p in &mut out.probes {
        p.scales = None;
    }
    let mut base_claim = claim.clone();
    base_claim.requires.clear();
    out.claims = vec![base_claim.clone()];
    let mut variants = Vec::new();
    let mut add = |factor: String, probe: &str, level: &Level, out: &mut Study| {
        let base = out.probe(probe).expect("a claim's probe").clone();
        let key = format!("{factor}={}", level.id);
        let variant = Variant {
            factor,
            level: level.id.clone(),
            probe: format!("{probe}~{key}"),
            claim: format!("{}~{key}", claim.id),
        };
        out.probes.push(level.apply(&base, variant.probe.clone()));
        out.claims.push(renamed(&base_claim, probe, &variant));
        variants.push(variant);
    };
    let name = |f: &Factor| declared_id(&f.id).to_string();
    for f in factors {
        for level in &f.levels {
            add(name(f), &f.probe, level, &mut out);
        }
    }
    for (fa, la, fb, lb) in pairs {
        ensure!(fa.probe == fb.probe, "a pair varies one probe");
        let both = format!("{}+{}", name(fa), name(fb));
        add(both, &fa.probe, &la.with(lb), &mut out);
    }
    let text = serde_yaml::to_string(&out)?;
    let out = Study::parse(&text).map_err(|e| {
        anyhow::anyhow!(
            "the sweep study of claim {:?} is not valid: {e:#}",
            claim.id
        )
    })?;
    Ok(Sweep {
        study: out,
        variants,
    })
}

/// `claim` judged on the variant probe instead of `probe`.
fn renamed(claim: &Claim, probe: &str, variant: &Variant) -> Claim {
    let mut c = claim.clone();
    c.id = variant.claim.clone();
    let swap = |id: &mut String| {
        if id == probe {
            *id = variant.probe.clone();
        }
    };
    swap(&mut c.probe);
    match &mut c.than {
        Some(Than::One(id)) => swap(id),
        Some(Than::Each(ids)) => ids.iter_mut().for_each(swap),
        None => {}
    }
    c
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

/// An explanation of one claim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub claim: String,
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
        Expected::Order(_) => None,
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
    explained_run: &str,
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
        text: claim.text.clone(),
        unit: claim.unit,
        explained_run: explained_run.to_string(),
        sweep_run: outcome.run_id.clone(),
        published,
        baseline,
        baseline_spread: spread(&outcome.summary, base),
        rows,
        finding: String::new(),
    };
    e.finding = finding(&e);
    Ok(e)
}

impl Explanation {
    /// Adds the rows of a second sweep (the pair tried together) and says the finding again.
    pub fn merge(&mut self, other: Explanation) {
        let against = other.baseline.filter(|b| Some(*b) != self.baseline);
        self.rows.extend(other.rows.into_iter().map(|mut r| {
            r.against = r.against.or(against);
            r
        }));
        self.sweep_run = format!("{}, {}", self.sweep_run, other.sweep_run);
        self.finding = finding(self);
    }
}

/// The finding in words: which single factor (or pair) reaches the published value, or none.
fn finding(e: &Explanation) -> String {
    let unit = e.unit;
    let show = |v: f64| number::value(v, unit);
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
        let best = e
            .rows
            .iter()
            .filter_map(|r| Some((r, r.closes?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(r, _)| r);
        let _ = write!(
            out,
            "None of the swept factors explains the difference: the baseline measures {} against the published {}",
            show(baseline),
            show(e.published)
        );
        match best {
            Some(r) if r.closes.is_some_and(|c| c > 0.0) => {
                let _ = write!(
                    out,
                    ", and the variant that comes closest, {} = {}, closes {:.0} % of the gap ({}).",
                    r.factor,
                    r.level,
                    r.closes.unwrap_or(0.0) * 100.0,
                    show(r.value.unwrap_or(f64::NAN))
                );
            }
            _ => out.push_str(", and no variant moves the value toward the published one."),
        }
    }
    let past: Vec<String> = e
        .rows
        .iter()
        .filter(|r| r.status != Status::Reproduced && r.closes.is_some_and(|c| c > 1.0))
        .map(|r| {
            format!(
                "{} = {} ({})",
                r.factor,
                r.level,
                show(r.value.unwrap_or(f64::NAN))
            )
        })
        .collect();
    if !past.is_empty() {
        out = out.trim_end().to_string();
        let _ = write!(
            out,
            " Moved past the published value, out of its tolerance: {}.",
            past.join(", ")
        );
    }
    out.trim().to_string()
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

/// The explanation as Markdown.
pub fn markdown(e: &Explanation) -> String {
    let unit = e.unit;
    let show = |v: Option<f64>| v.map_or("—".to_string(), |v| number::value(v, unit));
    // Rounded first, so that a change too small to show reads 0.0 %, not -0.0 %.
    let pct = |v: Option<f64>| {
        v.map_or("—".to_string(), |v| {
            format!("{:.1} %", (v * 1000.0).round() / 10.0 + 0.0)
        })
    };
    let mut out = format!("# Explaining {}\n\n> {}\n\n", e.claim, e.text);
    let _ = writeln!(
        out,
        "Explained run: `{}`. Sweep run: `{}` (its own archive holds every variant's manifest, \
         samples and environment).\n",
        e.explained_run, e.sweep_run
    );
    let _ = writeln!(out, "**{}**\n", e.finding);
    out.push_str("| Factor | Level | Measured | Spread | Change | Gap closed | Verdict |\n|---|---|---|---|---|---|---|\n");
    let _ = writeln!(
        out,
        "| published | — | {} | — | — | — | — |",
        show(Some(e.published))
    );
    let _ = writeln!(
        out,
        "| baseline | (the probe as in the run) | {} | {} | — | — | — |",
        show(e.baseline),
        pct(e.baseline_spread)
    );
    for r in &e.rows {
        let change = r.change.map_or("—".to_string(), |c| {
            let shown = number::value(c.abs(), unit);
            // No sign on a change that shows as zero.
            let zero = !shown.bytes().any(|b| (b'1'..=b'9').contains(&b));
            let sign = if zero {
                ""
            } else if c > 0.0 {
                "+"
            } else {
                "−"
            };
            match r.against {
                Some(b) => format!(
                    "{sign}{shown} (against its sweep's baseline {})",
                    number::value(b, unit)
                ),
                None => format!("{sign}{shown}"),
            }
        });
        let status = match &r.note {
            Some(n) if r.value.is_none() => format!("{} ({n})", r.status.label()),
            _ => r.status.label().to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {change} | {} | {status} |",
            r.factor,
            r.level,
            show(r.value),
            pct(r.spread),
            pct(r.closes)
        );
    }
    out.push_str(
        "\nSpread: (max − min) ÷ median of the cell's processes. Gap closed: the variant's change \
         divided by (published − baseline); 100 % reaches the published value, a negative share \
         moves away from it.\n\nFigure: [tornado.svg](tornado.svg)\n",
    );
    out
}

/// A tornado chart: a bar per variant from the baseline to its value, the published value as a line.
pub fn svg(e: &Explanation) -> String {
    let unit = e.unit;
    let rows: Vec<&Row> = e.rows.iter().filter(|r| r.value.is_some()).collect();
    let Some(base) = e.baseline else {
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"40\"><text x=\"10\" y=\"25\">baseline not measured</text></svg>\n".into();
    };
    let mut lo = base.min(e.published);
    let mut hi = base.max(e.published);
    for r in &rows {
        let v = r.value.unwrap_or(base);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 1e-3).max(1e-9);
    let (lo, hi) = (lo - pad, hi + pad);
    let (left, width, row_h) = (230.0, 460.0, 26.0);
    let x = |v: f64| left + (v - lo) / (hi - lo) * width;
    let height = 60.0 + row_h * rows.len() as f64;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n",
        left + width + 20.0
    );
    let _ = writeln!(
        out,
        "<text x=\"10\" y=\"18\" font-weight=\"bold\">{}: change against the baseline</text>",
        xml(&e.claim)
    );
    for (i, r) in rows.iter().enumerate() {
        let y = 34.0 + row_h * i as f64;
        let v = r.value.unwrap_or(base);
        let (a, b) = (x(base.min(v)), x(base.max(v)));
        let colour = if r.status == Status::Reproduced {
            "#2a7"
        } else {
            "#58a"
        };
        let _ = writeln!(
            out,
            "<text x=\"10\" y=\"{:.1}\">{} = {}</text>",
            y + 14.0,
            xml(&r.factor),
            xml(&r.level)
        );
        let _ = writeln!(
            out,
            "<rect x=\"{a:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{colour}\"><title>{}</title></rect>",
            (b - a).max(1.0),
            number::value(v, unit)
        );
    }
    let bottom = 34.0 + row_h * rows.len() as f64;
    for (v, label, colour) in [
        (base, "baseline", "#333"),
        (e.published, "published", "#c33"),
    ] {
        let _ = writeln!(
            out,
            "<line x1=\"{0:.1}\" y1=\"26\" x2=\"{0:.1}\" y2=\"{bottom:.1}\" stroke=\"{colour}\" stroke-dasharray=\"4 3\"/>\n<text x=\"{0:.1}\" y=\"{1:.1}\" fill=\"{colour}\" text-anchor=\"middle\">{label} {2}</text>",
            x(v),
            bottom + 16.0,
            xml(&number::value(v, unit))
        );
    }
    out.push_str("</svg>\n");
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests;
