use super::{published, published_bytes};
use crate::study::Study;
use crate::study::claim::Expected;
use crate::study::stat::Stat;

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
    load(
        "stat: peak_median, probe: a, tasks: 1, expected: 3, unit: MiB, tolerance: {relative: 0.1}",
    )
    .unwrap();
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
    assert!(e.contains("in `than`: unknown probe \"nobody\""), "{e}");
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
    // The file, the line and the column of the claim's `tasks` value.
    assert!(
        e.starts_with(&format!(
            "{}:10:73: claim \"bad\": tasks 10 is not in probe a's own scales (1)",
            file.display()
        )),
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
        e.starts_with("study.yaml:10:107: claim \"r\"")
            && e.contains("probe a does not run 10 tasks"),
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
        e.starts_with("study.yaml:6:47: probe \"a\": scales is empty"),
        "{e}"
    );
}

#[test]
fn outcome_claims_load_with_their_own_fields_only() {
    load("stat: outcome, probe: a, tasks: 10, expected: fails, unit: count").unwrap();
    load("stat: outcome, probe: s, tasks: 10, expected: completes, unit: count").unwrap();
    load("stat: outcome, probe: a, tasks: 10, expected: killed, pattern: 'Limit(Error)?', unit: count").unwrap();
    let e = err(
        "stat: outcome, probe: a, tasks: 10, expected: 3, unit: count, tolerance: {absolute: 0}",
    );
    assert!(e.contains("takes `expected: fails`"), "{e}");
    let e = err("stat: peak_median, probe: a, tasks: 10, expected: fails, unit: MiB");
    assert!(e.contains("stat outcome, and only it"), "{e}");
    let e = err("stat: outcome, probe: a, tasks: 10, expected: completes, pattern: x, unit: count");
    assert!(e.contains("`pattern` is for an outcome claim"), "{e}");
    let e = err("stat: outcome, probe: a, tasks: 10, expected: fails, pattern: '(', unit: count");
    assert!(e.contains("is not a regular expression"), "{e}");
    let e = err("stat: wall_median, probe: s, tasks: 10, expected: {above: 1}, unit: ms");
    assert!(e.contains("does not apply to a steady probe"), "{e}");
    load("stat: wall_median, probe: a, tasks: 10, expected: {above: 12000}, unit: ms").unwrap();
}

#[test]
fn a_failure_is_expected_only_by_an_outcome_claim_on_its_probe_scale_and_words() {
    use super::failure_expected;
    let study = load(
        "stat: outcome, probe: a, tasks: 10, expected: fails, pattern: SystemLimit, unit: count",
    )
    .unwrap();
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    (s.probe, s.tasks, s.valid) = ("a".into(), 10, false);
    s.error = Some("probe exited with code 1".into());
    s.stderr_tail = "** (SystemLimitError) a system limit has been reached\n".into();
    assert!(failure_expected(&study.claims, &s));
    let mut other = s.clone();
    other.stderr_tail = "Segmentation fault\n".into();
    assert!(
        !failure_expected(&study.claims, &other),
        "not the words expected"
    );
    let mut other = s.clone();
    other.tasks = 1;
    assert!(!failure_expected(&study.claims, &other), "another scale");
    let mut other = s.clone();
    other.probe = "b".into();
    assert!(!failure_expected(&study.claims, &other), "another probe");
    let mut other = s.clone();
    other.valid = true;
    assert!(!failure_expected(&study.claims, &other), "not a failure");
    let peak = load("stat: peak_median, probe: a, tasks: 10, expected: 3, unit: MiB, tolerance: {relative: 0.1}").unwrap();
    assert!(!failure_expected(&peak.claims, &s), "no outcome claim");
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
