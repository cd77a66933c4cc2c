use super::*;
use crate::outputs::report::fixture;

fn claim(yaml: &str) -> Claim {
    serde_yaml::from_str(yaml).unwrap()
}

fn with_claims(claims: Vec<Claim>) -> Study {
    let mut study = fixture::study();
    study.claims = claims;
    study
}

fn one(yaml: &str) -> Verdict {
    judge(&with_claims(vec![claim(yaml)]), &fixture::summary()).remove(0)
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
fn a_claim_resting_on_one_that_differs_is_inconclusive() {
    let median = fixture::summary()
        .cell("go", 10_000)
        .unwrap()
        .rss_median_bytes
        .unwrap();
    let value = |id: &str, expected: f64, requires: &str| {
        claim(&format!(
            "{{id: {id}, text: t, probe: go, tasks: 10000, unit: B, stat: rss_median, \
             expected: {expected}, tolerance: {{relative: 0.01}}{requires}}}"
        ))
    };
    let claims = vec![
        value("holds", median, ""),
        value("fails", median * 2.0, ""),
        value("on-holds", median, ", requires: [holds]"),
        value("on-fails", median, ", requires: [holds, fails]"),
        value("off-on-fails", median * 2.0, ", requires: [fails]"),
    ];
    let v = judge(&with_claims(claims), &fixture::summary());
    let status: Vec<Status> = v.iter().map(|v| v.status).collect();
    use Status::*;
    assert_eq!(
        status,
        [Reproduced, Differs, Reproduced, Inconclusive, Inconclusive]
    );
    let note = v[3].note.as_deref().unwrap();
    assert!(note.contains("rests on fails (differs)"), "{note}");
    assert!(!note.contains("holds"), "{note}");
}

#[test]
fn baseline_median_is_the_median_of_the_processes_baselines() {
    let cell = fixture::summary().cell("go", 10_000).unwrap().clone();
    let mut baselines: Vec<f64> = cell
        .processes
        .iter()
        .map(|p| p.baseline_rss_bytes.unwrap() as f64)
        .collect();
    baselines.sort_by(f64::total_cmp);
    let want = baselines[baselines.len() / 2];
    let v = one(&format!(
        "{BASE} stat: baseline_median, expected: {want}, tolerance: {{absolute: 0}}}}"
    ));
    assert_eq!(v.status, Status::Reproduced, "{v:?}");
    assert_eq!(v.measured, Some(Measured::Value(want)));
}

#[test]
fn requires_names_claims_of_the_study_one_level_deep() {
    let study = |requires: &str| {
        let text = crate::study::DEFAULT_STUDY.replacen(
            "  - id: rust-rss-1m\n",
            &format!("  - id: rust-rss-1m\n    requires: {requires}\n"),
            1,
        );
        crate::study::Study::parse(&text).map_err(|e| format!("{e:#}"))
    };
    assert!(study("[go-rss-1m]").is_ok());
    let err = study("[nope]").unwrap_err();
    assert!(
        err.contains("claim \"rust-rss-1m\": requires \"nope\", which is not a claim"),
        "{err}"
    );
    assert!(
        study("[rust-rss-1m]")
            .unwrap_err()
            .contains("requires itself")
    );
    let text = crate::study::DEFAULT_STUDY
        .replacen(
            "  - id: rust-rss-1m\n",
            "  - id: rust-rss-1m\n    requires: [go-rss-1m]\n",
            1,
        )
        .replacen(
            "  - id: go-rss-1m\n",
            "  - id: go-rss-1m\n    requires: [rust-lower-1m]\n",
            1,
        );
    let err = format!("{:#}", crate::study::Study::parse(&text).unwrap_err());
    assert!(err.contains("has `requires` of its own"), "{err}");
}

#[test]
fn not_measured_says_why() {
    let mut samples = fixture::samples();
    samples.retain(|s| !(s.probe == "go" && s.tasks == 1_000_000));
    let summary = crate::outputs::summary::summarize(&fixture::study(), &samples);
    let v = judge(&fixture::study(), &summary);
    let go = v.iter().find(|v| v.claim == "go-rss-1m").unwrap();
    assert_eq!(
        (go.status, go.measured.clone(), go.delta),
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
        "{id: f, text: t, probe: rust-tokio, stat: metric_median, metric: future_size_64b, expected: 144, unit: B, tolerance: {absolute: 0}}",
    );
    assert_eq!(
        (v.status, v.measured),
        (Status::Reproduced, Some(Measured::Value(144.0)))
    );
    assert_eq!(
        v.note.as_deref(),
        Some("median of 12 valid processes, all scales")
    );
}

#[test]
fn default_study_on_fixtures() {
    let v = judge(&fixture::study(), &fixture::summary());
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

#[test]
fn a_cell_measured_by_two_hosts_counts_the_processes_each_was_to_run() {
    let one_host = fixture::samples();
    let mut both = one_host.clone();
    for s in &one_host {
        let mut other = s.clone();
        other.host = Some("b".into());
        both.push(other);
    }
    // Host b measured go at 1M once less than planned.
    let dropped = both
        .iter()
        .rposition(|s| s.host.is_some() && s.probe == "go" && s.tasks == 1_000_000)
        .unwrap();
    both.remove(dropped);
    let summary = crate::outputs::summary::summarize(&fixture::study(), &both);
    let v = judge(&fixture::study(), &summary);
    let go = v.iter().find(|v| v.claim == "go-rss-1m").unwrap();
    assert_eq!(
        go.note.as_deref(),
        Some("go: 3 of 6 processes valid at 1000000 tasks"),
        "3 planned on each host; 2 valid on the first, 1 of the 2 left on b"
    );
}

/// The fixture's run, with every process of Go at 1M failed as a runtime at its limit fails: exit
/// code 1 and its error on stderr (the fixture has one of them OOM-killed).
fn go_1m_failing(killed: bool) -> Summary {
    let mut samples = fixture::samples();
    for s in samples
        .iter_mut()
        .filter(|s| s.probe == "go" && s.tasks == 1_000_000)
    {
        s.valid = false;
        s.oom_killed = killed;
        s.exit_code = Some(if killed { 137 } else { 1 });
        s.error = Some("probe exited with code 1".into());
        s.stderr_tail =
            "runtime: program exceeds 10000-thread limit\nfatal error: thread exhaustion\n".into();
    }
    crate::outputs::summary::summarize(&fixture::study(), &samples)
}

fn outcome(summary: &Summary, tasks: u64, rest: &str) -> Verdict {
    let yaml = format!(
        "{{id: o, text: t, stat: outcome, probe: go, tasks: {tasks}, unit: count, {rest}}}"
    );
    judge(&with_claims(vec![claim(&yaml)]), summary).remove(0)
}

#[test]
fn a_claim_expecting_failure_is_reproduced_by_failed_processes_and_differs_by_successful_ones() {
    let failing = go_1m_failing(false);
    let v = outcome(&failing, 1_000_000, "expected: fails");
    assert_eq!(v.status, Status::Reproduced, "{v:?}");
    assert_eq!(v.measured, Some(Measured::Value(3.0)));
    let note = v.note.unwrap();
    assert!(
        note.contains("3 of 3 processes failed") && note.contains("thread exhaustion"),
        "{note}"
    );
    // A pattern the failure says, and one it does not.
    let v = outcome(
        &failing,
        1_000_000,
        "expected: fails, pattern: 'thread (limit|exhaustion)'",
    );
    assert_eq!(v.status, Status::Reproduced, "{v:?}");
    let v = outcome(
        &failing,
        1_000_000,
        "expected: fails, pattern: SystemLimitError",
    );
    assert_eq!(v.status, Status::Differs, "{v:?}");
    assert_eq!(v.measured, Some(Measured::Value(0.0)));
    // Exit code 1 is not a kill.
    let v = outcome(&failing, 1_000_000, "expected: killed");
    assert_eq!(v.status, Status::Differs, "{v:?}");
    let v = outcome(&go_1m_failing(true), 1_000_000, "expected: killed");
    assert_eq!(v.status, Status::Reproduced, "{v:?}");
    // Successful processes: a failure claim differs, a completion claim reproduces.
    let ok = fixture::summary();
    let v = outcome(&ok, 10_000, "expected: fails");
    assert_eq!(v.status, Status::Differs, "{v:?}");
    assert_eq!(v.measured, Some(Measured::Value(0.0)));
    let v = outcome(&ok, 10_000, "expected: completes");
    assert_eq!(v.status, Status::Reproduced, "{v:?}");
    assert_eq!(
        outcome(&failing, 1_000_000, "expected: completes").status,
        Status::Differs
    );
    // The fixture's 1M cell: one process of three OOM-killed, neither all failed nor all completed.
    assert_eq!(
        outcome(&ok, 1_000_000, "expected: fails").status,
        Status::Differs
    );
    assert_eq!(
        outcome(&ok, 1_000_000, "expected: completes").status,
        Status::Differs
    );
}

#[test]
fn wall_median_is_the_median_of_the_processes_wall_times_in_the_claims_unit() {
    let study = Study::parse(
        "id: w\ntitle: w\nsource: {article: a, environment: e, cpus: '0'}\n\
         protocol: {scales: [10], repeats: 3, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5}\n\
         probes:\n  - {id: p, image: x, kind: peak}\n\
         claims:\n  - {id: slow, text: more than 12 s, stat: wall_median, probe: p, tasks: 10, expected: {above: 12000}, unit: ms}\n\
         \x20 - {id: about, text: about 12.5 s, stat: wall_median, probe: p, tasks: 10, expected: 12.5, unit: ms, tolerance: {relative: 0.05}}\n",
    )
    .unwrap();
    let walls = [12_400.0, 12_600.0, 30_000.0];
    let samples: Vec<_> = (walls.iter().enumerate())
        .map(|(i, w)| {
            let mut s = fixture::samples()[0].clone();
            (s.probe, s.tasks, s.expected, s.kind) = ("p".into(), 10, 10, crate::study::Kind::Peak);
            (s.repeat, s.position) = (i as u32 + 1, i as u32);
            s.peak = Some(crate::study::sample::Peak {
                ru_maxrss_bytes: Some(1 << 20),
                wall_ms: Some(*w),
                exit_code: Some(0),
                ..Default::default()
            });
            s
        })
        .collect();
    let summary = crate::outputs::summary::summarize(&study, &samples);
    let v = judge(&study, &summary);
    assert_eq!(v[0].status, Status::Reproduced, "{:?}", v[0]);
    let Some(Measured::Value(ms)) = v[0].measured else {
        panic!("{:?}", v[0].measured)
    };
    assert!((ms - 12_600.0).abs() < 1e-6, "the median, in ms: {ms}");
    // 12.5 ms is not 12.6 s: the unit is the claim's.
    assert_eq!(v[1].status, Status::Differs, "{:?}", v[1]);
}
