//! Claims that compare: `ratio` (a probe ÷ another, the lowest or highest of the others, each of a
//! list, or itself at another scale), `order` (a ranking) and `lower_by_percent`. Participants that
//! could not be measured are left out and named; the verdict is then partial.

use crate::outputs::summary::Summary;
use crate::study::{Bound, Claim, Expected, Stat, Study, Than};

use super::value::{coverage_note, scalar, valid_cell};
use super::{Found, Measured, Settled};

/// `than` in words for the verdict (`go`, `lowest of a, b`, `each of a, b`, `itself at 1 tasks`).
pub(super) fn than_words(study: &Study, claim: &Claim) -> Option<String> {
    match (claim.than_tasks, &claim.than) {
        (Some(n), None) => return Some(format!("itself at {n} tasks")),
        (Some(n), Some(Than::One(id))) => return Some(format!("{id} at {n} tasks")),
        _ => {}
    }
    match claim.than.as_ref()? {
        Than::One(w) if w == "lowest" || w == "highest" => {
            let others = study.than_probes(claim).unwrap_or_default();
            Some(format!("{w} of {}", others.join(", ")))
        }
        Than::One(id) => Some(id.clone()),
        Than::Each(ids) => Some(format!("each of {}", ids.join(", "))),
    }
}

/// `of` of the probe ÷ `of` of what it is compared with.
pub(super) fn ratio(study: &Study, claim: &Claim, summary: &Summary) -> Result<Found, String> {
    let of = claim.of.ok_or("ratio names no `of`")?;
    let tasks = claim.tasks.ok_or("ratio names no task count")?;
    let (a, mut notes) = scalar(of, claim, &claim.probe, tasks, summary)?;
    let than_claim = compared_with(claim);
    let claim_b = than_claim.as_ref().unwrap_or(claim);
    if let Some(n) = claim.than_tasks {
        // Itself at another scale, or the one probe named by `than` at that scale.
        let other = match &claim.than {
            Some(Than::One(id)) => id.as_str(),
            _ => claim.probe.as_str(),
        };
        let (b, more) = scalar(of, claim_b, other, n, summary)?;
        notes.extend(more);
        notes.push(format!(
            "{} at {tasks} tasks {} ÷ {} at {n} tasks {}",
            claim.probe,
            show(of, a),
            with_metric(claim, other),
            show(of, b)
        ));
        return Ok(Found {
            measured: Measured::Value(divide(a, b)?),
            notes,
            missing: Vec::new(),
            settled: None,
            accepted: None,
        });
    }
    let others = study.than_probes(claim).map_err(|e| format!("{e:#}"))?;
    let (values, more, missing) = scalars(of, claim_b, &others, tasks, summary);
    notes.extend(more);
    if values.is_empty() {
        return Err(format!("nothing to compare with: {}", missing.join("; ")));
    }
    let (id, ratio) = binding(claim, a, &values)?;
    let b = values.iter().find(|(v, _)| *v == id).map_or(0.0, |x| x.1);
    notes.push(format!(
        "{} {} ÷ {} {}",
        claim.probe,
        show(of, a),
        with_metric(claim, &id),
        show(of, b)
    ));
    let settled = (!missing.is_empty()).then(|| settled_ratio(claim));
    Ok(Found {
        measured: Measured::Value(ratio),
        notes,
        missing,
        settled,
        accepted: None,
    })
}

/// The values measured (probe, value), their notes, and why each probe left out was not measured.
type Scalars = (Vec<(String, f64)>, Vec<String>, Vec<String>);

/// `of` of each probe of `ids` at `tasks`.
fn scalars(of: Stat, claim: &Claim, ids: &[String], tasks: u64, summary: &Summary) -> Scalars {
    let (mut values, mut notes, mut missing) = (Vec::new(), Vec::new(), Vec::new());
    for id in ids {
        match scalar(of, claim, id, tasks, summary) {
            Ok((v, more)) => {
                notes.extend(more);
                values.push((id.clone(), v));
            }
            Err(e) => missing.push(why_missing(summary, id, tasks, &e)),
        }
    }
    (values, notes, missing)
}

/// The other side of a ratio for a note: the probe, and its metric when `than_metric` names one.
fn with_metric(claim: &Claim, probe: &str) -> String {
    match &claim.than_metric {
        Some(m) => format!("{probe} {m}"),
        None => probe.to_string(),
    }
}

/// The claim as read for the other side of a ratio: with `than_metric` as its metric, if it names one.
fn compared_with(claim: &Claim) -> Option<Claim> {
    let metric = claim.than_metric.clone()?;
    Some(Claim {
        metric: Some(metric),
        requires: Vec::new(),
        ..claim.clone()
    })
}

/// Which finding of a ratio stands whatever the probes not measured would show: against the
/// lowest, another probe can only lower the denominator (raise the ratio); against the highest,
/// only raise it; against each of a list, only add a ratio that fails.
fn settled_ratio(claim: &Claim) -> Settled {
    let (above, below) = match &claim.expected {
        Expected::Bound(b) => (b.above.is_some(), b.below.is_some()),
        _ => return Settled::Neither,
    };
    let raises = match &claim.than {
        Some(Than::One(w)) if w == "lowest" => true,
        Some(Than::One(w)) if w == "highest" => false,
        _ => return Settled::Differs,
    };
    match (above, below, raises) {
        (true, false, true) | (false, true, false) => Settled::Reproduced,
        (false, true, true) | (true, false, false) => Settled::Differs,
        _ => Settled::Neither,
    }
}

/// The ratio that decides the claim: against the lowest or highest other, or the tightest of each.
fn binding(claim: &Claim, a: f64, values: &[(String, f64)]) -> Result<(String, f64), String> {
    let by_value = |min: bool| {
        values
            .iter()
            .min_by(|x, y| {
                let o = x.1.total_cmp(&y.1);
                if min { o } else { o.reverse() }
            })
            .cloned()
            .expect("values is not empty")
    };
    let (id, b) = match (&claim.than, &claim.expected) {
        (Some(Than::One(w)), _) if w == "lowest" => by_value(true),
        (Some(Than::One(w)), _) if w == "highest" => by_value(false),
        // Against each of several: the one that makes the ratio tightest against the bound.
        (_, Expected::Bound(Bound { above: Some(_), .. })) => by_value(false),
        (_, Expected::Bound(Bound { below: Some(_), .. })) => by_value(true),
        _ if values.len() == 1 => values[0].clone(),
        _ => return Err("a ratio against several probes needs a bound (`above`/`below`)".into()),
    };
    Ok((id, divide(a, b)?))
}

/// A participant left out, in short: `csharp (toolchain unavailable: …)`, `go (no valid sample)`,
/// or, when the probe has valid samples, why its value could not be had (`error`, e.g. a missing key).
fn why_missing(summary: &Summary, probe: &str, tasks: u64, error: &str) -> String {
    let measured = summary
        .cells
        .iter()
        .any(|c| c.probe == probe && c.tasks == tasks && c.valid > 0);
    if measured {
        return format!("{probe} ({error})");
    }
    let why = summary
        .invalid_samples
        .iter()
        .find(|i| i.probe == probe && i.tasks == tasks)
        .map_or("no valid sample", |i| i.error.as_str());
    format!("{probe} ({why})")
}

/// A value of statistic `of` for a note: memory in MiB, anything else as a plain number.
fn show(of: Stat, v: f64) -> String {
    match of {
        Stat::RssMedian | Stat::PeakMedian | Stat::BaselineMedian => {
            format!("{:.2} MiB", v / 1048576.0)
        }
        Stat::PerTaskBytes => format!("{v:.1} B"),
        _ => format!("{v:.3}"),
    }
}

fn divide(a: f64, b: f64) -> Result<f64, String> {
    if b == 0.0 {
        Err("the denominator is 0".into())
    } else {
        Ok(a / b)
    }
}

/// The participants of a ratio, `lower_by_percent` or order claim, as a figure draws them: each
/// one's name (with its scale and metric when they differ from the claim's) and its value of the
/// compared statistic in base units, `None` when it was not measured. The claim's probe comes first.
pub(crate) fn sides(study: &Study, claim: &Claim, summary: &Summary) -> Vec<(String, Option<f64>)> {
    let Some(tasks) = claim.tasks else {
        return Vec::new();
    };
    let value = |of: Stat, c: &Claim, probe: &str, n: u64| {
        scalar(of, c, probe, n, summary).ok().map(|v| v.0)
    };
    match claim.stat {
        Stat::LowerByPercent => {
            let than = match &claim.than {
                Some(Than::One(t)) => vec![t.clone()],
                _ => Vec::new(),
            };
            std::iter::once(claim.probe.clone())
                .chain(than)
                .map(|p| {
                    let v = value(Stat::RssMedian, claim, &p, tasks);
                    (p, v)
                })
                .collect()
        }
        Stat::Order => match (&claim.expected, claim.of) {
            (Expected::Order(ids), Some(of)) => ids
                .iter()
                .map(|id| (id.clone(), value(of, claim, id, tasks)))
                .collect(),
            _ => Vec::new(),
        },
        Stat::Ratio => {
            let Some(of) = claim.of else {
                return Vec::new();
            };
            let b_claim = compared_with(claim);
            let b_claim = b_claim.as_ref().unwrap_or(claim);
            let name = |c: &Claim, p: &str, n: u64| {
                let metric = c
                    .metric
                    .as_deref()
                    .map(|m| format!(" {m}"))
                    .unwrap_or_default();
                format!("{p}{metric} @ {n}")
            };
            let mut out = vec![(
                name(claim, &claim.probe, tasks),
                value(of, claim, &claim.probe, tasks),
            )];
            let others: Vec<(String, u64)> = match claim.than_tasks {
                Some(n) => {
                    let other = match &claim.than {
                        Some(Than::One(id)) => id.clone(),
                        _ => claim.probe.clone(),
                    };
                    vec![(other, n)]
                }
                None => study
                    .than_probes(claim)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|p| (p, tasks))
                    .collect(),
            };
            for (p, n) in others {
                out.push((name(b_claim, &p, n), value(of, b_claim, &p, n)));
            }
            out
        }
        _ => Vec::new(),
    }
}

/// The measured ranking, lowest first, of the probes in the expected order that were measured.
pub(super) fn order(claim: &Claim, summary: &Summary) -> Result<Found, String> {
    let of = claim.of.ok_or("order names no `of`")?;
    let tasks = claim.tasks.ok_or("order names no task count")?;
    let Expected::Order(ids) = &claim.expected else {
        return Err("order needs a list of probes".into());
    };
    let (mut values, mut notes, missing) = scalars(of, claim, ids, tasks, summary);
    if values.len() < 2 {
        return Err(format!(
            "fewer than two probes measured: {}",
            missing.join("; ")
        ));
    }
    values.sort_by(|x, y| x.1.total_cmp(&y.1));
    notes.push(
        values
            .iter()
            .map(|(id, v)| format!("{id} {}", show(of, *v)))
            .collect::<Vec<_>>()
            .join(" < "),
    );
    // A probe not measured could only break the ranking, never mend it.
    let settled = (!missing.is_empty()).then_some(Settled::Differs);
    Ok(Found {
        measured: Measured::Order(values.into_iter().map(|(id, _)| id).collect()),
        notes,
        missing,
        settled,
        accepted: None,
    })
}

/// `lower_by_percent`: (1 − probe ÷ than) × 100 from the RSS medians.
pub(super) fn lower_by(
    claim: &Claim,
    summary: &Summary,
) -> Result<(Measured, Vec<String>), String> {
    let tasks = claim.tasks.ok_or("claim names no task count")?;
    let cell = valid_cell(summary, &claim.probe, tasks)?;
    let mut notes: Vec<String> = coverage_note(cell, summary).into_iter().collect();
    let than = match &claim.than {
        Some(Than::One(t)) => t.as_str(),
        _ => return Err("lower_by_percent compares with one probe".into()),
    };
    let other = valid_cell(summary, than, tasks)?;
    notes.extend(coverage_note(other, summary));
    let r = summary
        .ratio(&claim.probe, than, tasks)
        .ok_or_else(|| format!("no ratio of {} to {than} at {tasks} tasks", claim.probe))?;
    debug_assert_eq!(claim.stat, Stat::LowerByPercent);
    Ok((Measured::Value(r.lower_by_percent), notes))
}

#[cfg(test)]
mod tests {
    use crate::outputs::verdict::{Measured, Status, judge};
    use crate::study::Study;
    use crate::study::kind::Kind;
    use crate::study::sample::{Peak, Sample};

    const STUDY: &str = "id: t\ntitle: t\nsource: {article: a, environment: e, cpus: '0'}\n\
        protocol: {scales: [1, 10], repeats: 1, order: fixed, cpus: '0', settle_ms: 0, samples: 1, interval_ms: 1, timeout_s: 5}\n\
        probes:\n  - {id: go, image: x, kind: peak}\n  - {id: rust, image: y, kind: peak}\n  - {id: cs, image: z, kind: peak}\n\
        claims:\n\
        \x20 - {id: r, text: t, stat: ratio, of: peak_median, probe: go, than: lowest, tasks: 10, expected: {above: 13}, unit: x}\n\
        \x20 - {id: each, text: t, stat: ratio, of: peak_median, probe: go, than: [rust, cs], tasks: 10, expected: {above: 1}, unit: x}\n\
        \x20 - {id: grow, text: t, stat: ratio, of: peak_median, probe: rust, than_tasks: 1, tasks: 10, expected: {below: 1.5}, unit: x}\n\
        \x20 - {id: o, text: t, stat: order, of: peak_median, tasks: 10, expected: [rust, cs, go], unit: rank}\n\
        \x20 - {id: pt, text: t, stat: per_task_bytes, probe: go, tasks: 10, expected: 100, unit: B, tolerance: {relative: 0.01}}\n";

    fn sample(probe: &str, tasks: u64, peak: Option<u64>) -> Sample {
        let mut s = crate::outputs::report::fixture::samples()[0].clone();
        (s.probe, s.tasks, s.repeat, s.kind) = (probe.into(), tasks, 1, Kind::Peak);
        s.peak = peak.map(|b| Peak {
            ru_maxrss_bytes: Some(b),
            exit_code: Some(0),
            ..Peak::default()
        });
        (s.valid, s.error) = match peak {
            Some(_) => (true, None),
            None => (false, Some("toolchain unavailable: no .NET SDK".into())),
        };
        s
    }

    const ACROSS: &str = "id: t\ntitle: t\nsource: {article: a, environment: e, cpus: '0'}\n\
        protocol: {scales: [1, 10], repeats: 1, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5}\n\
        probes:\n  - {id: go, image: x, kind: peak}\n  - {id: one, image: y, kind: peak, scales: [1]}\n\
        claims:\n\
        \x20 - {id: x, text: t, stat: ratio, of: peak_median, probe: go, tasks: 10, than: one, than_tasks: 1, expected: 19, unit: x, tolerance: {relative: 0.01}}\n\
        \x20 - {id: y, text: t, stat: ratio, of: peak_median, probe: one, than: go, than_tasks: 10, expected: {below: 1}, unit: x}\n\
        \x20 - {id: z, text: t, stat: peak_median, probe: one, expected: 100, unit: B, tolerance: {absolute: 0}}\n";

    #[test]
    fn ratio_of_two_probes_at_two_scales() {
        let study = Study::parse(ACROSS).unwrap();
        assert_eq!(
            study.claims[1].tasks,
            Some(1),
            "one scale: tasks may be left out"
        );
        let samples = vec![
            sample("go", 1, Some(1000)),
            sample("go", 10, Some(1900)),
            sample("one", 1, Some(100)),
        ];
        let v = judge(
            &study,
            &crate::outputs::summary::summarize(&study, &samples),
        );
        assert_eq!(v[0].measured, Some(Measured::Value(19.0)));
        assert_eq!(v[0].status, Status::Reproduced);
        assert_eq!(v[0].than.as_deref(), Some("one at 1 tasks"));
        assert!(v[0].note.as_deref().unwrap().contains("÷ one at 1 tasks"));
        assert_eq!(v[1].measured, Some(Measured::Value(100.0 / 1900.0)));
        assert_eq!(v[2].measured, Some(Measured::Value(100.0)));
        assert_eq!(v[2].tasks, Some(1));
    }

    #[test]
    fn ratio_of_two_result_keys() {
        let study = Study::parse(
            "id: t\ntitle: t\nsource: {article: a, environment: e, cpus: '0'}\n\
             protocol: {scales: [1], repeats: 1, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5}\n\
             probes:\n  - {id: poll, image: x, kind: timed}\n  - {id: asm, image: y, kind: timed}\n\
             claims:\n\
             \x20 - {id: r, text: t, stat: ratio, of: result_median, metric: ns_per_poll, than: asm, than_metric: ns_per_switch, probe: poll, expected: 2, unit: x, tolerance: {relative: 0.01}}\n",
        )
        .unwrap();
        let timed = |probe: &str, key: &str, v: f64| {
            let mut s = sample(probe, 1, Some(1));
            s.kind = crate::study::kind::Kind::Timed;
            s.results = vec![std::collections::BTreeMap::from([(key.to_string(), v)])];
            s
        };
        let samples = vec![
            timed("poll", "ns_per_poll", 9.0),
            timed("asm", "ns_per_switch", 4.5),
        ];
        let v = judge(
            &study,
            &crate::outputs::summary::summarize(&study, &samples),
        );
        assert_eq!(v[0].measured, Some(Measured::Value(2.0)), "{:?}", v[0]);
        let refused = Study::parse(&study_text_with(
            "stat: result_median, metric: ns_per_poll, than_metric: ns_per_switch, probe: poll",
        ));
        assert!(format!("{:#}", refused.unwrap_err()).contains("than_metric"));
    }

    fn study_text_with(claim: &str) -> String {
        format!(
            "id: t\ntitle: t\nsource: {{article: a, environment: e, cpus: '0'}}\n\
             protocol: {{scales: [1], repeats: 1, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5}}\n\
             probes:\n  - {{id: poll, image: x, kind: timed}}\n\
             claims:\n  - {{id: r, text: t, {claim}, expected: 2, unit: x, tolerance: {{relative: 0.01}}}}\n"
        )
    }

    #[test]
    fn ratios_orders_and_partial_participants() {
        let study = Study::parse(STUDY).unwrap();
        let samples = vec![
            sample("go", 1, Some(1000)),
            sample("go", 10, Some(1900)),
            sample("rust", 1, Some(100)),
            sample("rust", 10, Some(120)),
            sample("cs", 10, None),
        ];
        let summary = crate::outputs::summary::summarize(&study, &samples);
        let v = judge(&study, &summary);
        let by = |id: &str| v.iter().find(|v| v.claim == id).unwrap().clone();
        let r = by("r");
        assert_eq!(r.measured, Some(Measured::Value(1900.0 / 120.0)));
        assert_eq!(r.status, Status::Reproduced);
        assert_eq!(r.missing.len(), 1, "cs is not measured: {:?}", r.missing);
        assert!(r.note.unwrap().contains("toolchain unavailable"));
        assert_eq!(
            by("each").status,
            Status::Inconclusive,
            "cs, not measured, could fail the claim"
        );
        assert_eq!(by("grow").measured, Some(Measured::Value(1.2)));
        assert_eq!(by("grow").than.as_deref(), Some("itself at 1 tasks"));
        assert_eq!(by("grow").status, Status::Reproduced);
        let o = by("o");
        assert_eq!(
            o.measured,
            Some(Measured::Order(vec!["rust".into(), "go".into()]))
        );
        assert_eq!(o.status, Status::Inconclusive, "cs could break the ranking");
        // (1900 − 1000) ÷ (10 − 1)
        assert_eq!(by("pt").measured, Some(Measured::Value(100.0)));
        let mut reversed = samples.clone();
        reversed[3].peak.as_mut().unwrap().ru_maxrss_bytes = Some(5000);
        let v = judge(
            &study,
            &crate::outputs::summary::summarize(&study, &reversed),
        );
        let o = v.iter().find(|v| v.claim == "o").unwrap();
        assert_eq!(o.status, Status::Differs, "a broken ranking stays broken");
        let r = v.iter().find(|v| v.claim == "r").unwrap();
        assert_eq!(
            r.status,
            Status::Inconclusive,
            "1900 ÷ 5000 is not above 13, but cs might be lower still"
        );
    }
}
