use super::*;
use crate::outputs::report::fixture;

#[test]
fn median_of_odd_even_and_empty() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    assert_eq!(median(&[7.0]), Some(7.0));
    assert_eq!(median(&[]), None);
}

#[test]
fn cv_is_population() {
    // mean 4, population variance ((2² + 0 + 2²) / 3) = 8/3.
    let got = cv(&[2.0, 4.0, 6.0]).unwrap();
    assert!((got - (8.0f64 / 3.0).sqrt() / 4.0).abs() < 1e-12);
    assert_eq!(cv(&[5.0]), Some(0.0));
    assert_eq!(cv(&[]), None);
    assert_eq!(cv(&[0.0, 0.0]), None);
}

#[test]
fn cell_statistics_from_fixtures() {
    let s = fixture::summary();
    assert_eq!((s.samples, s.valid, s.invalid, s.outside), (24, 23, 1, 0));
    let go = s.cell("go", 1_000_000).unwrap();
    assert_eq!((go.valid, go.invalid), (2, 1));
    let m: Vec<f64> = go
        .processes
        .iter()
        .filter_map(|p| p.rss_median_bytes)
        .collect();
    // Even count: the mean of both process medians.
    assert_eq!(go.rss_median_bytes, Some((m[0] + m[1]) / 2.0));
    assert_eq!(go.rss_min_bytes, Some(m[0].min(m[1])));
    let per_task: Vec<f64> = go
        .processes
        .iter()
        .map(|p| (p.rss_median_bytes.unwrap() - p.baseline_rss_bytes.unwrap() as f64) / 1e6)
        .collect();
    let expected = (per_task[0] + per_task[1]) / 2.0;
    assert!((go.per_task_bytes.unwrap() - expected).abs() < 1e-9);
    assert_eq!(
        go.metrics["goroutines"],
        Metric {
            median: 1_000_001.0,
            count: 2
        }
    );
    assert_eq!(s.invalid_samples[0].repeat, 2);
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}

#[test]
fn recomputes_median_from_readings() {
    let mut samples = fixture::samples();
    samples[0].rss_bytes = vec![10, 40, 20, 30];
    samples[0].baseline_rss_bytes = Some(0);
    let s = summarize(&fixture::study(), &samples);
    let p = &s
        .cell(&samples[0].probe, samples[0].tasks)
        .unwrap()
        .processes[0];
    assert_eq!(p.rss_median_bytes, Some(25.0));
    assert_eq!(s.notes.len(), 1, "the stored median differs: {:?}", s.notes);
}

#[test]
fn empty_cells_and_outside_samples() {
    let mut samples = fixture::samples();
    samples.retain(|s| s.tasks != 10_000);
    samples[0].tasks = 42;
    samples[1].rss_bytes.clear();
    let s = summarize(&fixture::study(), &samples);
    let empty = s.cell("rust-tokio", 10_000).unwrap();
    assert_eq!(
        (empty.valid, empty.rss_median_bytes, empty.rss_cv),
        (0, None, None)
    );
    assert!(s.ratio("rust-tokio", "go", 10_000).is_none());
    assert_eq!(s.outside, 1);
    assert!(
        s.invalid_samples
            .iter()
            .any(|i| i.error.contains("no RSS readings"))
    );
}

fn timed(probe: &str, tasks: u64, repeat: u32, batches: &[f64], notes: &[&str]) -> Sample {
    let mut s = fixture::samples()[0].clone();
    (s.probe, s.tasks, s.expected, s.repeat, s.kind) =
        (probe.into(), tasks, tasks, repeat, Kind::Timed);
    s.peak = Some(crate::study::sample::Peak {
        ru_maxrss_bytes: Some(1),
        exit_code: Some(0),
        ..Default::default()
    });
    s.results = batches
        .iter()
        .map(|&v| BTreeMap::from([("ns".to_string(), v)]))
        .collect();
    s.notes = notes.iter().map(|n| n.to_string()).collect();
    s
}

const TIMED: &str = "id: t\ntitle: t\nsource: {article: a, environment: e, cpus: '0'}\n\
    protocol: {scales: [10, 100], repeats: 2, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5, target_cv: 0.05}\n\
    probes:\n  - {id: sw, image: x, kind: timed, scales: [1]}\n  - {id: st, image: y}\n";

#[test]
fn timed_cells_have_intervals_batches_and_notes_at_their_own_scales() {
    let study = Study::parse(TIMED).unwrap();
    let samples = vec![
        timed(
            "sw",
            1,
            1,
            &[10.0, 11.0, 10.5, 10.2],
            &["pinned", "pinned", "warm"],
        ),
        timed("sw", 1, 2, &[20.0, 21.0, 20.5], &["pinned"]),
        timed("sw", 10, 1, &[1.0], &[]),
    ];
    let s = summarize(&study, &samples);
    assert_eq!(s.outside, 1, "sw does not run 10 tasks");
    let scales: Vec<(&str, u64)> = s
        .cells
        .iter()
        .map(|c| (c.probe.as_str(), c.tasks))
        .collect();
    assert_eq!(scales, [("st", 10), ("st", 100), ("sw", 1)]);
    let c = s.cell("sw", 1).unwrap();
    assert_eq!(c.processes[0].batches, Some(4));
    let i = c.processes[0].intervals["ns"];
    assert!(i[0] >= 10.0 && i[1] <= 11.0 && i[0] <= i[1], "{i:?}");
    let again = summarize(&study, &samples);
    assert_eq!(
        again.cell("sw", 1).unwrap().processes,
        c.processes,
        "reproducible"
    );
    assert_eq!(
        c.probe_notes,
        [
            NoteCount {
                text: "pinned".into(),
                processes: 2
            },
            NoteCount {
                text: "warm".into(),
                processes: 1
            },
        ]
    );
    // Medians 10.35 and 20.5: far apart, CV about 33 % > 5 %.
    let flagged = c.above_target_cv(study.protocol.target_cv);
    assert_eq!(flagged.len(), 1);
    assert!((flagged[0].1 - c.stats["ns"].cv.unwrap()).abs() < 1e-12);
    assert!(c.above_target_cv(None).is_empty());
}

#[test]
fn processes_on_demand_judge_a_timed_cells_least_precise_statistic() {
    let study = Study::parse(TIMED).unwrap();
    let with_allocs = |repeat: u32, ns: f64| {
        let mut s = timed("sw", 1, repeat, &[ns], &[]);
        s.results[0].insert("allocs".into(), 7.0);
        s
    };
    let samples = [with_allocs(2, 20.0), with_allocs(1, 10.0)];
    let s = summarize(&study, &samples);
    let c = s.cell("sw", 1).unwrap();
    assert_eq!(Headline::of(c).unwrap().name, "allocs", "first by name");
    let valid: Vec<&Sample> = samples.iter().collect();
    let judged = Headline::judged(c.kind, &valid).unwrap();
    assert_eq!(
        judged.name, "ns",
        "the constant count does not stand for the cell"
    );
    assert_eq!(judged.values, [10.0, 20.0], "in repeat order");
    assert_eq!(judged.value, 15.0);
    let adaptive = TIMED.replace("repeats: 2", "repeats: {min: 2, max: 4, target_cv: 0.05}");
    let s = summarize(&Study::parse(&adaptive).unwrap(), &samples);
    let sw = s.precision.iter().find(|p| p.probe == "sw").unwrap();
    assert_eq!(
        (sw.stat.as_str(), sw.valid),
        ("ns", 2),
        "the precision judges it too"
    );
}

#[test]
fn latency_percentiles_far_apart_are_flagged_against_the_target() {
    let study = Study::parse(&TIMED.replace("kind: timed", "kind: latency")).unwrap();
    let latency = |repeat: u32, ns: u64| {
        let mut s = timed("sw", 1, repeat, &[], &[]);
        s.kind = Kind::Latency;
        s.results.clear();
        s.latency_ns = vec![[ns, 10]];
        s
    };
    let s = summarize(&study, &[latency(1, 1000), latency(2, 3000)]);
    let c = s.cell("sw", 1).unwrap();
    let flagged: Vec<&str> = c
        .above_target_cv(study.protocol.target_cv)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert!(flagged.contains(&"p50_ns"), "{flagged:?}");
    let same = summarize(&study, &[latency(1, 1000), latency(2, 1000)]);
    assert!(
        same.cell("sw", 1)
            .unwrap()
            .above_target_cv(study.protocol.target_cv)
            .is_empty()
    );
}

#[test]
fn ratios_for_every_ordered_pair() {
    let s = fixture::summary();
    assert_eq!(s.ratios.len(), 2 * 4);
    let r = s.ratio("rust-tokio", "go", 1_000_000).unwrap();
    let (a, b) = (
        s.cell("rust-tokio", 1_000_000)
            .unwrap()
            .rss_median_bytes
            .unwrap(),
        s.cell("go", 1_000_000).unwrap().rss_median_bytes.unwrap(),
    );
    assert_eq!(r.lower_by_percent, (1.0 - a / b) * 100.0);
    assert!(
        s.ratio("go", "rust-tokio", 1_000_000)
            .unwrap()
            .lower_by_percent
            < 0.0
    );
    assert_eq!(
        s.probe("rust-tokio").unwrap().metrics["future_size_64b"].count,
        12
    );
}

/// `timed` with counters: batches whose run-queue wait is `wait` ms of a 10 ms window.
fn with_counters(mut s: Sample, waits: &[f64]) -> Sample {
    s.batches = waits
        .iter()
        .map(|&w| crate::study::sample::BatchCounters {
            window_ms: 10.0,
            steal_ms: Some(0.0),
            involuntary_switches: Some(1),
            runqueue_wait_ms: Some(w),
            window_batches: 1,
        })
        .collect();
    s.drop_batches = Some(crate::study::protocol::DropBatches::default());
    s
}

#[test]
fn dropped_batches_leave_the_values_and_are_counted_with_the_cv_had_they_been_kept() {
    let study = Study::parse(TIMED).unwrap();
    // Repeat 1's slow batch (30) waited 5 ms of 10 on the run queue: dropped.
    let old = vec![
        timed("sw", 1, 1, &[10.0, 30.0, 30.0, 10.0, 10.0], &[]),
        timed("sw", 1, 2, &[10.0, 10.0, 10.0], &[]),
    ];
    let new = vec![
        with_counters(old[0].clone(), &[0.0, 5.0, 5.0, 0.0, 0.0]),
        with_counters(old[1].clone(), &[0.0, 0.0, 0.0]),
    ];
    let before = summarize(&study, &old);
    let c = before.cell("sw", 1).unwrap();
    assert_eq!(c.dropped_batches, None, "no counters: nothing dropped");
    assert_eq!(c.processes[0].dropped, None);
    let after = summarize(&study, &new);
    let d = after.cell("sw", 1).unwrap();
    let dropped = d.dropped_batches.as_ref().unwrap();
    assert_eq!((dropped.batches, dropped.dropped), (8, 2));
    assert_eq!(dropped.by_reason["run-queue wait"], 2);
    assert_eq!(d.processes[0].dropped, Some(2));
    // Kept: medians 10 and 10; all: 10 and 10 as well, so the CV is the same here.
    assert_eq!(d.stats["ns"].values, [10.0, 10.0]);
    assert_eq!(dropped.cv_with_dropped["ns"], c.stats["ns"].cv.unwrap());
    let i = d.processes[0].intervals["ns"];
    assert_eq!(i, [10.0, 10.0], "the interval is of the kept batches");
}

#[test]
fn the_dropped_batches_change_the_value_and_the_report_says_whether_they_explain_the_spread() {
    let study = Study::parse(TIMED).unwrap();
    let samples = vec![
        with_counters(
            timed("sw", 1, 1, &[30.0, 30.0, 30.0, 10.0, 10.0], &[]),
            &[5.0, 5.0, 0.0, 0.0, 0.0],
        ),
        with_counters(timed("sw", 1, 2, &[10.0, 10.0, 10.0], &[]), &[0.0; 3]),
    ];
    let s = summarize(&study, &samples);
    let c = s.cell("sw", 1).unwrap();
    assert_eq!(c.stats["ns"].values, [10.0, 10.0]);
    assert!(c.dropped_batches.as_ref().unwrap().cv_with_dropped["ns"] > 0.4);
    let line = crate::outputs::report::dropped_line(c, study.protocol.target_cv).unwrap();
    assert!(
        line.starts_with("sw × 1 tasks: 2 of 8 batches dropped (run-queue wait 2)"),
        "{line}"
    );
    assert!(
        line.contains("CV 50.00 % with them, 0.00 % without"),
        "{line}"
    );
    assert!(!line.contains("do not explain"), "{line}");

    let samples = vec![
        with_counters(
            timed("sw", 1, 1, &[30.0, 30.0, 30.0, 10.0, 10.0], &[]),
            &[5.0, 5.0, 0.0, 0.0, 0.0],
        ),
        with_counters(timed("sw", 1, 2, &[20.0, 20.0, 20.0], &[]), &[0.0; 3]),
    ];
    let s = summarize(&study, &samples);
    let line = crate::outputs::report::dropped_line(s.cell("sw", 1).unwrap(), None).unwrap();
    assert!(
        line.ends_with(
            "the dropped batches do not explain the spread (CV without them still above 2.00 %)"
        ),
        "{line}"
    );
}

#[test]
fn a_process_whose_batches_were_mostly_disturbed_keeps_them_all_stays_valid_and_says_so() {
    let study = Study::parse(TIMED).unwrap();
    let mut mostly = with_counters(timed("sw", 1, 1, &[30.0, 30.0, 10.0], &[]), &[0.0; 3]);
    // Two of three batches had at least 20 ms of steal in 100 ms on their one CPU.
    mostly.cpus_pinned = "0".into();
    for b in &mut mostly.batches[..2] {
        (b.window_ms, b.steal_ms) = (100.0, Some(30.0));
    }
    let quiet = with_counters(timed("sw", 1, 2, &[20.0, 20.0, 20.0], &[]), &[0.0; 3]);
    let summary = summarize(&study, &[mostly, quiet]);
    assert_eq!(summary.valid, 2);
    let c = summary.cell("sw", 1).unwrap();
    let d = c.dropped_batches.as_ref().unwrap();
    assert_eq!((d.batches, d.dropped), (6, 0));
    assert_eq!(
        d.not_dropped,
        [
            "repeat 1: 2 of 3 batches disturbed (steal/wait): not dropped, the process is judged \
          on all of them"
        ]
    );
    // Nothing dropped: the CV with and without are the same, over the same two processes.
    assert_eq!(c.stats["ns"].values, [30.0, 20.0]);
    assert_eq!(d.cv_with_dropped["ns"], c.stats["ns"].cv.unwrap());
    let line = crate::outputs::report::dropped_line(c, None).unwrap();
    assert!(
        line.contains("⚠ repeat 1: 2 of 3 batches disturbed"),
        "{line}"
    );
}

/// A result key is archive text: the terminal shows its control characters as escapes, report.md
/// its Markdown as text.
#[test]
fn a_result_key_reaches_the_terminal_and_the_report_escaped() {
    let study = Study::parse(TIMED).unwrap();
    let key = "ns\x1b]52;c;cm0=\x07[x](https://evil.example/)";
    let rekey = |mut s: Sample| {
        for batch in &mut s.results {
            let v = batch.remove("ns").unwrap();
            batch.insert(key.to_string(), v);
        }
        s
    };
    let samples = vec![
        rekey(with_counters(
            timed("sw", 1, 1, &[30.0, 30.0, 30.0, 10.0, 10.0], &[]),
            &[5.0, 5.0, 0.0, 0.0, 0.0],
        )),
        rekey(with_counters(
            timed("sw", 1, 2, &[10.0, 10.0, 10.0], &[]),
            &[0.0; 3],
        )),
    ];
    let s = summarize(&study, &samples);
    let shown = crate::outputs::report::terminal::timed_precision(&study, &s);
    assert!(shown.contains("ns\\x1b]52;c;cm0=\\x07"), "{shown}");
    assert!(
        shown.contains("dropped") && !shown.contains(['\x1b', '\x07']),
        "{shown}"
    );
    let md = crate::outputs::report::kinds::tables(&study, &s);
    assert!(md.contains("Dropped batches"), "{md}");
    assert!(
        !md.contains("[x](") && md.contains("\\[x\\](https\\://evil.example/)"),
        "{md}"
    );
}
