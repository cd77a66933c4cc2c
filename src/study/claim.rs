//! Load-time checks of claims: every statistic belongs to a kind of measurement, every unit measures
//! what its statistic measures, and a comparison never mixes kinds (a peak ÷ a steady value). And
//! which claims have a single published value a memory figure can mark beside the measured cell.

use anyhow::{Result, bail, ensure};

use crate::study::kind::Kind;
use crate::study::{Claim, Dimension, Expected, Stat};

/// Statistics with one value per cell, which `ratio` and `order` can compare.
pub const SCALAR: &[Stat] = &[
    Stat::RssMedian,
    Stat::PerTaskBytes,
    Stat::BaselineMedian,
    Stat::MetricMedian,
    Stat::PeakMedian,
    Stat::ResultMedian,
    Stat::Percentile,
];

/// Fails unless `kind` offers `stat`.
pub fn check_stat(stat: Stat, kind: Kind) -> Result<()> {
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

/// Fails unless every probe compared has the same kind, and that kind offers the scalar `of`.
pub fn check_same_kind(of: Stat, ids: &[String], kinds: &[Kind]) -> Result<()> {
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
    if let Some(first) = kinds.first()
        && kinds.iter().any(|k| k != first)
    {
        let each: Vec<String> = ids
            .iter()
            .zip(kinds)
            .map(|(id, k)| format!("{id} is {}", k.name()))
            .collect();
        bail!(
            "the claim mixes kinds of measurement ({}); compare probes of one kind",
            each.join(", ")
        );
    }
    match kinds.first() {
        Some(kind) => check_stat(of, *kind),
        None => Ok(()),
    }
}

/// Tolerances are non-negative and finite; values and ranges need one, bounds and orders take none.
pub fn check_tolerance(c: &Claim) -> Result<()> {
    let t = &c.tolerance;
    for (field, v) in [("relative", t.relative), ("absolute", t.absolute)] {
        if let Some(v) = v {
            ensure!(
                v.is_finite() && v >= 0.0,
                "tolerance.{field} is {v}: a tolerance is a non-negative distance (0.05 = ±5 %)"
            );
        }
    }
    let has = t.relative.is_some() || t.absolute.is_some();
    match c.expected {
        Expected::Value(_) | Expected::Range(_) => ensure!(
            has,
            "tolerance needs `relative` or `absolute` for a published value or range"
        ),
        Expected::Bound(b) => {
            ensure!(!has, "a bound (`above`/`below`) takes no tolerance");
            ensure!(
                b.above.is_some() || b.below.is_some(),
                "a bound needs `above`, `below` or both"
            );
        }
        Expected::Order(_) => ensure!(!has, "an order takes no tolerance"),
    }
    Ok(())
}

/// The fields a statistic needs, and a unit that measures what it measures.
pub fn check_fields(c: &Claim) -> Result<()> {
    let inner = match c.stat {
        Stat::Ratio | Stat::Order => c.of.unwrap_or(c.stat),
        s => s,
    };
    if matches!(inner, Stat::MetricMedian | Stat::ResultMedian) {
        ensure!(
            c.metric.is_some(),
            "stat {} needs `metric`: the name of the value",
            name(inner)
        );
    }
    ensure!(
        c.than_metric.is_none()
            || (c.stat == Stat::Ratio && matches!(inner, Stat::MetricMedian | Stat::ResultMedian)),
        "`than_metric` is for a ratio of metric_median or result_median: the other side's metric"
    );
    if inner == Stat::Percentile {
        let known = crate::study::kind::PERCENTILES;
        match c.percentile {
            Some(p) if known.contains(&p) => {}
            Some(p) => bail!("percentile {p} is not one the latency kind computes: {known:?}"),
            None => bail!("stat percentile needs `percentile`, one of {known:?}"),
        }
    }
    ensure!(
        matches!(c.expected, Expected::Order(_)) == (c.stat == Stat::Order),
        "only stat order takes a list of probes as `expected`"
    );
    let allowed = dimensions(c.stat);
    ensure!(
        allowed.contains(&c.unit.dimension()),
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
        Stat::Percentile => &[Dimension::Time],
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
    }
}

#[cfg(test)]
mod tests {
    use super::{published, published_bytes};
    use crate::study::{Expected, Stat, Study};

    const HEAD: &str = "id: t\ntitle: t\nsource: {article: a, environment: e, cpus: '0'}\n\
        protocol: {scales: [1, 10], repeats: 1, order: fixed, cpus: '0', settle_ms: 0, samples: 1, interval_ms: 1, timeout_s: 5}\n\
        probes:\n  - {id: a, image: x, kind: peak}\n  - {id: b, image: y, kind: peak}\n  - {id: s, image: z}\n\
        claims:\n";

    fn load(claim: &str) -> anyhow::Result<Study> {
        Study::parse(&format!("{HEAD}  - {{id: c, text: t, {claim}}}\n"))
    }

    fn err(claim: &str) -> String {
        format!("{:#}", load(claim).unwrap_err())
    }

    #[test]
    fn comparisons_of_one_kind_load() {
        load("stat: ratio, of: peak_median, probe: a, than: lowest, tasks: 10, expected: {above: 13}, unit: x").unwrap();
        load("stat: ratio, of: peak_median, probe: a, than: [b], tasks: 10, expected: {below: 1}, unit: x").unwrap();
        load("stat: ratio, of: peak_median, probe: a, than_tasks: 1, tasks: 10, expected: {below: 1.5}, unit: x").unwrap();
        load("stat: order, of: peak_median, tasks: 10, expected: [a, b], unit: rank").unwrap();
        load("stat: peak_median, probe: a, tasks: 1, expected: 3, unit: MiB, tolerance: {relative: 0.1}").unwrap();
    }

    #[test]
    fn mixing_kinds_is_refused() {
        let e = err(
            "stat: ratio, of: peak_median, probe: a, than: s, tasks: 10, expected: {above: 2}, unit: x",
        );
        assert!(
            e.contains("mixes kinds") && e.contains("s is steady"),
            "{e}"
        );
        let e = err("stat: order, of: peak_median, tasks: 10, expected: [a, s], unit: rank");
        assert!(e.contains("mixes kinds"), "{e}");
    }

    #[test]
    fn stats_units_and_fields_are_checked() {
        let e = err(
            "stat: rss_median, probe: a, tasks: 1, expected: 3, unit: MiB, tolerance: {relative: 0.1}",
        );
        assert!(e.contains("does not apply to a peak probe"), "{e}");
        let e = err(
            "stat: peak_median, probe: a, tasks: 1, expected: 3, unit: ms, tolerance: {relative: 0.1}",
        );
        assert!(e.contains("does not fit"), "{e}");
        let e = err("stat: ratio, probe: a, than: b, tasks: 10, expected: {above: 2}, unit: x");
        assert!(e.contains("needs `of`"), "{e}");
        let e = err(
            "stat: ratio, of: peak_median, probe: a, than: nobody, tasks: 10, expected: {above: 2}, unit: x",
        );
        assert!(e.contains("unknown probe \"nobody\""), "{e}");
        let e = err(
            "stat: peak_median, probe: a, tasks: 7, expected: 3, unit: MiB, tolerance: {relative: 0.1}",
        );
        assert!(e.contains("not in protocol.scales"), "{e}");
    }

    const OWN: &str = "id: t\ntitle: t\nsource: {article: a, environment: e, cpus: '0'}\n\
        protocol: {scales: [1, 10], repeats: 1, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5}\n\
        probes:\n  - {id: a, image: x, kind: reported, scales: [1]}\n  - {id: b, image: y, kind: reported}\n\
        claims:\n  - {id: ok, text: t, stat: result_median, probe: a, metric: k, expected: 0, unit: count, tolerance: {absolute: 0}}\n";

    #[test]
    fn a_scale_the_probe_does_not_run_is_refused_with_file_and_line() {
        let study = Study::parse(OWN).unwrap();
        assert_eq!(study.claims[0].tasks, Some(1), "single scale taken");
        let bad = format!(
            "{OWN}  - {{id: bad, text: t, stat: result_median, probe: a, metric: k, tasks: 10, expected: 0, unit: count, tolerance: {{absolute: 0}}}}\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("study.yaml");
        std::fs::write(&file, &bad).unwrap();
        let e = format!("{:#}", Study::load(&file).unwrap_err());
        assert!(
            e.contains(&file.display().to_string())
                && e.contains("line 10: claim \"bad\"")
                && e.contains("probe a's own scales (1)"),
            "{e}"
        );
        // Several scales: `tasks` is still needed.
        let e = format!(
            "{:#}",
            Study::parse(&OWN.replace("probe: a,", "probe: b,")).unwrap_err()
        );
        assert!(e.contains("needs `tasks`"), "{e}");
        // A ratio across two probes at two scales checks the other probe's scale.
        let e = format!(
            "{:#}",
            Study::parse(&format!(
                "{OWN}  - {{id: r, text: t, stat: ratio, of: result_median, metric: k, probe: b, tasks: 10, than: a, than_tasks: 10, expected: {{above: 1}}, unit: x}}\n"
            ))
            .unwrap_err()
        );
        assert!(
            e.contains("line 10: claim \"r\"") && e.contains("probe a does not run 10 tasks"),
            "{e}"
        );
        Study::parse(&format!(
            "{OWN}  - {{id: r, text: t, stat: ratio, of: result_median, metric: k, probe: b, tasks: 10, than: a, than_tasks: 1, expected: {{above: 1}}, unit: x}}\n"
        ))
        .unwrap();
        let e = format!(
            "{:#}",
            Study::parse(&format!(
                "{OWN}  - {{id: r, text: t, stat: ratio, of: result_median, metric: k, probe: b, tasks: 10, than: lowest, than_tasks: 1, expected: {{above: 1}}, unit: x}}\n"
            ))
            .unwrap_err()
        );
        assert!(e.contains("name the probe"), "{e}");
        let e = format!(
            "{:#}",
            Study::parse(&OWN.replace("scales: [1]}", "scales: []}")).unwrap_err()
        );
        assert!(
            e.contains("line 6: probe \"a\"") && e.contains("scales is empty"),
            "{e}"
        );
    }

    #[test]
    fn tolerances_are_non_negative_and_fit_the_expectation() {
        let e = err(
            "stat: peak_median, probe: a, tasks: 1, expected: 3, unit: MiB, tolerance: {relative: -0.05}",
        );
        assert!(e.contains("non-negative"), "{e}");
        let e = err("stat: peak_median, probe: a, tasks: 1, expected: 3, unit: MiB");
        assert!(e.contains("tolerance needs"), "{e}");
        let e = err(
            "stat: ratio, of: peak_median, probe: a, than: b, tasks: 10, expected: {above: 2}, unit: x, tolerance: {relative: 0.1}",
        );
        assert!(e.contains("takes no tolerance"), "{e}");
    }

    #[test]
    fn a_published_value_is_a_single_size_of_the_statistic_probe_and_scale() {
        let mut study = Study::default_study();
        let rss = study
            .claims
            .iter()
            .find(|c| c.stat == Stat::RssMedian)
            .unwrap()
            .clone();
        let Expected::Value(v) = rss.expected else {
            panic!("the rss_median claim has a single value");
        };
        let (probe, tasks) = (rss.probe.as_str(), rss.tasks.unwrap());
        let mut per_task = rss.clone();
        per_task.id = "per-task".into();
        per_task.stat = Stat::PerTaskBytes;
        per_task.expected = Expected::Value(v * 7.0);
        let mut range = rss.clone();
        range.expected = Expected::Range([v, v * 2.0]);
        study.claims.insert(0, per_task);
        let found = published(&study.claims, Stat::RssMedian, probe, tasks);
        assert_eq!(found.len(), 1, "only the rss_median claim");
        assert_eq!(
            (found[0].0.id.as_str(), found[0].1),
            (rss.id.as_str(), v * rss.unit.scale())
        );
        assert_eq!(published_bytes(&rss, Stat::PeakMedian, probe, tasks), None);
        assert_eq!(
            published_bytes(&rss, Stat::RssMedian, "elsewhere", tasks),
            None
        );
        assert_eq!(
            published_bytes(&rss, Stat::RssMedian, probe, tasks + 1),
            None
        );
        assert_eq!(published_bytes(&range, Stat::RssMedian, probe, tasks), None);
    }
}
