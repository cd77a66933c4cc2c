use std::collections::BTreeMap;

use super::results::{Reported, Timed};
use super::*;
use crate::stats::percentile;
use crate::study::sample::Peak;

#[test]
fn nearest_rank_percentiles() {
    let h = [[30, 1], [10, 98], [20, 1]];
    assert_eq!(percentile(&h, 50.0), Some(10));
    assert_eq!(percentile(&h, 99.0), Some(20));
    assert_eq!(percentile(&h, 99.9), Some(30));
    assert_eq!(percentile(&[], 50.0), None);
    // 1000 values 1..=1000: P99.9 is the 999th, P99 the 990th, P50 the 500th.
    let h: Vec<[u64; 2]> = (1..=1000).map(|v| [v, 1]).collect();
    assert_eq!(percentile(&h, 99.9), Some(999));
    assert_eq!(percentile(&h, 99.0), Some(990));
    assert_eq!(percentile(&h, 50.0), Some(500));
    let h: Vec<[u64; 2]> = (1..=100_000).map(|v| [v, 1]).collect();
    assert_eq!(percentile(&h, 99.9), Some(99_900));
    assert_eq!(percentile_name(99.9), "p99.9_ns");
    assert_eq!(percentile_name(50.0), "p50_ns");
}

#[test]
fn timed_results_are_checked() {
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    s.kind = Kind::Timed;
    s.peak = Some(Peak {
        ru_maxrss_bytes: Some(1),
        exit_code: Some(0),
        ..Peak::default()
    });
    let keys = vec!["ns_per_op".to_string()];
    assert!(
        Timed
            .invalid(&s, &keys)
            .unwrap()
            .contains("no `result` line")
    );
    s.results = vec![BTreeMap::from([("ns_per_op".into(), 2.0)])];
    assert_eq!(Timed.invalid(&s, &keys), None);
    s.results.push(BTreeMap::from([("ns_per_op".into(), 0.0)]));
    assert!(
        Timed
            .invalid(&s, &keys)
            .unwrap()
            .contains("positive finite")
    );
    s.results[1] = BTreeMap::from([("bogus".into(), 1.0)]);
    assert!(
        Timed
            .invalid(&s, &keys)
            .unwrap()
            .contains("unknown result key")
    );
    s.results.pop();
    s.results.push(BTreeMap::from([("ns_per_op".into(), 4.0)]));
    assert_eq!(Timed.values(&s)["ns_per_op"], 3.0);
}

#[test]
fn reported_results_may_be_zero_but_not_negative() {
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    s.kind = Kind::Reported;
    s.peak = Some(Peak {
        ru_maxrss_bytes: Some(1),
        exit_code: Some(0),
        ..Peak::default()
    });
    let keys = vec!["syscalls_per_switch".to_string()];
    assert!(
        Reported
            .invalid(&s, &keys)
            .unwrap()
            .contains("no `result` line")
    );
    s.results = vec![BTreeMap::from([("syscalls_per_switch".into(), 0.0)])];
    assert_eq!(Reported.invalid(&s, &keys), None, "zero is a value");
    assert_eq!(Reported.values(&s)["syscalls_per_switch"], 0.0);
    s.results[0] = BTreeMap::from([("syscalls_per_switch".into(), -1.0)]);
    assert!(Reported.invalid(&s, &keys).unwrap().contains(">= 0"));
    s.results[0] = BTreeMap::from([("syscalls_per_switch".into(), f64::INFINITY)]);
    assert!(Reported.invalid(&s, &keys).unwrap().contains(">= 0"));
    s.results[0] = BTreeMap::from([("other".into(), 1.0)]);
    assert!(
        Reported
            .invalid(&s, &keys)
            .unwrap()
            .contains("unknown result key")
    );
    assert_eq!(Reported.invalid(&s, &[]), None, "no declared keys: any key");
    let args = Reported.sampler_args(&crate::study::Study::default_study().protocol, "0");
    assert_eq!(args[..2], ["--kind".to_string(), "timed".to_string()]);
}

#[test]
fn kinds_round_trip_by_name() {
    for k in [
        Kind::Steady,
        Kind::Peak,
        Kind::Timed,
        Kind::Latency,
        Kind::Reported,
    ] {
        let yaml = serde_yaml::to_string(&k).unwrap();
        assert_eq!(yaml.trim(), k.name());
        assert_eq!(serde_yaml::from_str::<Kind>(&yaml).unwrap(), k);
    }
    assert!(serde_yaml::from_str::<Kind>("bogus").is_err());
}

fn steady(created: Option<f64>, completed: u64, notes: &[&str]) -> Sample {
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    (s.tasks, s.expected, s.completed) = (10, 10, Some(completed));
    s.metrics.clear();
    if let Some(k) = created {
        s.metrics.insert("created".into(), k);
    }
    s.notes = notes.iter().map(|n| n.to_string()).collect();
    s.exit_code = Some(0);
    s
}

#[test]
fn fewer_created_than_asked_is_one_reason_with_the_notes() {
    let mut s = steady(
        Some(3.0),
        3,
        &["pthread_create failed: EAGAIN", "limit: pids.max 3"],
    );
    judge_validity(&mut s, None, &[]);
    assert!(!s.valid);
    assert_eq!(
        s.error.as_deref(),
        Some(
            "created 3 of 10 tasks; note: pthread_create failed: EAGAIN; \
             note: limit: pids.max 3"
        )
    );
    let mut s = steady(Some(10.0), 10, &["all fine"]);
    judge_validity(&mut s, None, &[]);
    assert!(s.valid, "{:?}", s.error);
    let mut s = steady(None, 9, &[]);
    judge_validity(&mut s, None, &[]);
    assert_eq!(s.error.as_deref(), Some("completed Some(9) of 10 tasks"));
    let notes: Vec<String> = (0..6).map(|i| format!("n{i}")).collect();
    assert_eq!(
        with_notes("x".into(), &notes),
        "x; note: n0; note: n1; note: n2; note: n3; 2 more notes"
    );
}

#[test]
fn notes_come_from_the_sampler_and_round_trip() {
    let out: SamplerOutput =
        serde_json::from_str(r#"{"notes":["a b","c"],"exit_code":0}"#).unwrap();
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    assert!(
        !serde_json::to_string(&s).unwrap().contains("\"notes\""),
        "no notes, no field"
    );
    fill_from_sampler(&mut s, &out);
    assert_eq!(s.notes, ["a b", "c"]);
    let line = serde_json::to_string(&s).unwrap();
    let back: Sample = serde_json::from_str(&line).unwrap();
    assert_eq!(back.notes, s.notes);
}

/// Every kind, in order.
const KINDS: [Kind; 5] = [
    Kind::Steady,
    Kind::Peak,
    Kind::Timed,
    Kind::Latency,
    Kind::Reported,
];

/// A valid process of `kind` that ran unmodified, with a peak of `peak` bytes and `ns` as its one
/// timed value.
fn unmodified(kind: Kind, repeat: u32, peak: u64, ns: f64) -> Sample {
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    (s.kind, s.repeat, s.rss_bytes, s.baseline_rss_bytes) = (kind, repeat, Vec::new(), None);
    s.peak = Some(Peak {
        ru_maxrss_bytes: Some(peak),
        exit_code: Some(0),
        wall_ms: Some(ns / 1000.0),
        ..Peak::default()
    });
    s.results = vec![BTreeMap::from([("ns".into(), ns), ("allocs".into(), 7.0)])];
    s.latency_ns = vec![[ns as u64, 1]];
    s
}

#[test]
fn a_memory_figure_kept_in_stats_is_one_of_the_kinds_values() {
    for kind in KINDS {
        let m = kind.measure();
        let (Fields::Stats, Some(figure)) = (m.fields(), m.memory()) else {
            continue;
        };
        let s = unmodified(kind, 1, 4096, 10.0);
        assert_eq!(m.values(&s).get(figure.name), Some(&4096.0), "{kind:?}");
        assert_eq!(m.memory_bytes(&s), Some(4096.0), "{kind:?}");
        assert!(m.stats().contains(&figure.stat), "{kind:?}");
    }
}

#[test]
fn judged_is_the_memory_figure_else_the_least_precise_value_in_repeat_order() {
    let steady = crate::study::sample::fixture::samples();
    let go: Vec<&Sample> = steady
        .iter()
        .filter(|s| s.probe == "go" && s.tasks == 10_000)
        .rev()
        .collect();
    let j = Kind::Steady.measure().judged(&go).unwrap();
    assert_eq!(j.name, "rss_median_bytes");
    let mut by_repeat = go.clone();
    by_repeat.sort_by_key(|s| s.repeat);
    let medians: Vec<f64> = by_repeat.iter().filter_map(|s| s.rss_median()).collect();
    assert_eq!(j.values, medians);

    let (a, b) = (
        unmodified(Kind::Peak, 2, 2000, 30.0),
        unmodified(Kind::Peak, 1, 1000, 10.0),
    );
    let j = Kind::Peak.measure().judged(&[&a, &b]).unwrap();
    assert_eq!(
        (j.name.as_str(), j.values),
        ("peak_bytes", vec![1000.0, 2000.0])
    );

    let (a, b) = (
        unmodified(Kind::Timed, 1, 1000, 10.0),
        unmodified(Kind::Timed, 2, 1000, 30.0),
    );
    let j = Kind::Timed.measure().judged(&[&a, &b]).unwrap();
    assert_eq!(
        j.name, "ns",
        "the constant count does not stand for the cell"
    );
    let j = Kind::Latency.measure().judged(&[&a]).unwrap();
    assert_eq!(
        j.name, "p99_ns",
        "one value each: all least precise, the last by name"
    );
    assert_eq!(Kind::Reported.measure().judged(&[]), None);
}

#[test]
fn left_out_names_why_and_rechecks_samples_marked_valid() {
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    assert_eq!(left_out(&s, &[]), None);
    s.rss_bytes.clear();
    assert_eq!(
        left_out(&s, &[]).as_deref(),
        Some("marked valid but has no RSS readings")
    );
    s.valid = false;
    assert_eq!(
        left_out(&s, &[]).as_deref(),
        Some("marked invalid, no reason recorded")
    );
    let mut t = unmodified(Kind::Timed, 1, 1000, 10.0);
    t.results.clear();
    assert_eq!(
        left_out(&t, &[]).as_deref(),
        Some("marked valid, but the program printed no `result` line")
    );
}
