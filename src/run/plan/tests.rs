//! The plan's matrix and its estimates.

use super::*;

/// The default study with no least time per process (no settle, one reading), so that the
/// estimates below are this run's and the earlier run's alone; see
/// `a_declared_duration_estimates_every_process_before_any_ends_and_floors_the_rest`.
fn unfloored() -> Study {
    let mut study = Study::default_study();
    (study.protocol.settle_ms, study.protocol.samples) = (0, 1);
    study
}

/// The first repeat's cell of `probe` at `tasks`.
fn cell_of(study: &Study, probe: &str, tasks: u64) -> Cell {
    Cell {
        probe: study.probes.iter().position(|p| p.id == probe).unwrap(),
        tasks,
        repeat: 1,
        position: 0,
    }
}

/// Tells `est` that a process of `probe` at `tasks` ended after `ms`.
fn finish(est: &mut Estimates, probe: &str, tasks: u64, ms: f64) {
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    (s.probe, s.tasks, s.timings.container_ms) = (probe.into(), tasks, Some(ms));
    est.finished(&s);
}

#[test]
fn estimates_prefer_this_run_then_the_earlier_one() {
    let study = unfloored();
    let cells = matrix(&study);
    let mut est = Estimates::default();
    assert_eq!(est.total(&study, &cells).1, cells.len());
    assert!(describe(&study, &cells, 0, &est).contains("not known yet"));
    est.by_cell.insert(("go".into(), 10_000), 2000.0);
    est.source = Some("r1".into());
    let (t, unknown) = est.total(&study, &cells[..2]);
    assert_eq!(
        (t.as_secs(), unknown),
        (2, 1),
        "rust-tokio at 10k has no estimate"
    );
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    (s.probe, s.tasks, s.timings.container_ms) = ("rust-tokio".into(), 10_000, Some(1000.0));
    est.finished(&s);
    let (t, unknown) = est.total(&study, &cells[..2]);
    assert_eq!((t.as_secs(), unknown), (3, 0));
    assert_eq!(clock(Duration::from_secs(3725)), "1 h 02 min");
    assert_eq!(clock(Duration::from_secs(725)), "12 min 05 s");
}

#[test]
fn a_declared_duration_estimates_every_process_before_any_ends_and_floors_the_rest() {
    let mut study = Study::default_study();
    study.protocol.duration_s = Some(10.0);
    let cells = matrix(&study);
    let mut est = Estimates::default();
    let (t, unknown) = est.total(&study, &cells);
    assert_eq!((t.as_secs(), unknown), (10 * cells.len() as u64, 0));
    let plan = describe(&study, &cells, 0, &est);
    assert!(
        plan.contains("expected ≥ 4 min 00 s (no earlier run of this study; 24 at their least"),
        "{plan}"
    );
    // A quicker process of another probe does not bring an estimate under the declared time.
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    (s.probe, s.tasks, s.timings.container_ms) = ("go".into(), 10_000, Some(2_000.0));
    est.finished(&s);
    let rust = study
        .probes
        .iter()
        .position(|p| p.id == "rust-tokio")
        .unwrap();
    let cell = Cell {
        probe: rust,
        tasks: 10_000,
        repeat: 1,
        position: 0,
    };
    assert_eq!(est.of(&study, &cell), Some(10_000.0));
    // A longer one raises it.
    (s.probe, s.timings.container_ms) = ("rust-tokio".into(), Some(12_500.0));
    est.finished(&s);
    assert_eq!(est.of(&study, &cell), Some(12_500.0));
    // Without a declared duration the steady kind's own protocol is the floor: 500 ms of
    // settle and 4 readings 50 ms apart.
    study.protocol.duration_s = None;
    assert_eq!(Estimates::default().of(&study, &cell), Some(700.0));
}

#[test]
fn processes_on_demand_plan_their_minimum() {
    let text = crate::study::DEFAULT_STUDY.replacen(
        "  repeats: 3\n",
        "  repeats: {min: 3, max: 10, target_cv: 0.005}\n",
        1,
    );
    let study = Study::parse(&text).unwrap();
    assert_eq!(matrix(&study).len(), 24, "min processes are planned");
}

#[test]
fn plan_alternates_probes_between_repeats() {
    let study = unfloored();
    let cells = matrix(&study);
    assert_eq!(cells.len(), 24);
    let first: Vec<_> = cells.iter().take(6).map(|c| (c.probe, c.repeat)).collect();
    assert_eq!(first, vec![(0, 1), (1, 1), (1, 2), (0, 2), (0, 3), (1, 3)]);
    assert!(
        cells
            .iter()
            .enumerate()
            .all(|(i, c)| c.position as usize == i)
    );
}

#[test]
fn plan_runs_each_probe_at_its_own_scales() {
    let mut study = Study::default_study();
    study.probes[1].scales = Some(vec![1, 10_000]);
    let cells = matrix(&study);
    let of = |p: usize| -> Vec<u64> {
        let mut t: Vec<u64> = cells
            .iter()
            .filter(|c| c.probe == p)
            .map(|c| c.tasks)
            .collect();
        t.dedup();
        t
    };
    assert_eq!(of(0), study.protocol.scales);
    assert_eq!(of(1), vec![10_000, 1]);
    assert_eq!(cells.len(), 3 * (4 + 2));
    assert!(
        cells
            .iter()
            .enumerate()
            .all(|(i, c)| c.position as usize == i)
    );
}

#[test]
fn a_scale_not_yet_run_is_modelled_from_the_probes_other_scales() {
    let study = unfloored();
    let go = study.probes.iter().position(|p| p.id == "go").unwrap();
    let mut est = Estimates::default();
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    s.probe = "go".into();
    for (tasks, ms) in [(10_000, 500.0), (100_000, 1_400.0)] {
        s.tasks = tasks;
        s.timings.container_ms = Some(ms);
        est.finished(&s);
    }
    let cell = |tasks| Cell {
        probe: go,
        tasks,
        repeat: 1,
        position: 0,
    };
    // 500 ms + 0.01 ms per task: 1M tasks ≈ 10.4 s.
    let t = est.of(&study, &cell(1_000_000)).unwrap();
    assert!((t - 10_400.0).abs() < 1.0, "{t}");
    // Never below the quickest finished process.
    assert_eq!(est.of(&study, &cell(1)), Some(500.0));
    // Nothing finished of the probe, nor at the scale: unknown.
    assert_eq!(Estimates::default().of(&study, &cell(1_000_000)), None);
}

#[test]
fn the_kits_own_time_per_process_is_added_to_every_process_left() {
    let study = unfloored();
    let cells = matrix(&study);
    let mut est = Estimates::default();
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    for probe in ["go", "rust-tokio"] {
        (s.probe, s.tasks, s.timings.container_ms) = (probe.into(), 10_000, Some(1_000.0));
        est.finished(&s);
    }
    let left = &cells[..4];
    assert_eq!(est.total(&study, left).0.as_secs_f64(), 4.0);
    // Two processes of 1 s took 2.5 s of wall time: 250 ms of the kit's own per process.
    est.elapsed(2_500.0);
    assert_eq!(est.total(&study, left).0.as_secs_f64(), 5.0);
    // A probe that starts no process takes none of it.
    let est = est.not_run(["go".to_string()]);
    let go_cells = left
        .iter()
        .filter(|c| study.probes[c.probe].id == "go")
        .count();
    assert_eq!(
        est.total(&study, left).0.as_secs_f64(),
        (left.len() - go_cells) as f64 * 1.25
    );
}

#[test]
fn one_finished_process_estimates_every_scale_of_its_probe() {
    let study = unfloored();
    let cell = |tasks| cell_of(&study, "go", tasks);
    let mut est = Estimates::default();
    // One process of go, none of any other probe at two scales: every scale as long as it.
    finish(&mut est, "go", 1, 10_200.0);
    assert_eq!(est.of(&study, &cell(1_000_000)), Some(10_200.0));
    // A probe that starts 190 ms quicker at 1 task says nothing of go's time per task: no
    // extrapolation of startup differences to 1M tasks.
    finish(&mut est, "rust-tokio", 1, 10_010.0);
    assert_eq!(est.of(&study, &cell(1_000_000)), Some(10_200.0));
    // Once rust-tokio has two scales, go borrows its slope: 10 ms over 9,999 tasks.
    finish(&mut est, "rust-tokio", 10_000, 10_020.0);
    let t = est.of(&study, &cell(1_000_000)).unwrap();
    assert!(
        (t - (10_200.0 + 10.0 / 9_999.0 * 999_999.0)).abs() < 1e-6,
        "{t}"
    );
    // A probe quicker at more tasks lends no negative time per task.
    let mut quick = Estimates::default();
    finish(&mut quick, "rust-tokio", 1, 100.0);
    finish(&mut quick, "rust-tokio", 10_000, 50.0);
    finish(&mut quick, "go", 10_000, 80.0);
    assert_eq!(quick.of(&study, &cell(1_000_000)), Some(80.0));
    // So the first run has an ETA from its first finished process.
    let cells = matrix(&study);
    let mut alone = Estimates::default();
    assert_eq!(alone.eta(&study, &cells), "ETA unknown", "nothing ended");
    finish(&mut alone, "go", 10_000, 800.0);
    assert!(
        alone.eta(&study, &cells).starts_with("ETA "),
        "{}",
        alone.eta(&study, &cells)
    );
}

#[test]
fn the_earlier_runs_times_follow_this_machines_pace() {
    let study = unfloored();
    let go = study.probes.iter().position(|p| p.id == "go").unwrap();
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    let mut earlier = Vec::new();
    for (tasks, ms) in [(10_000, 100.0), (1_000_000, 2_000.0)] {
        (s.probe, s.tasks, s.timings.container_ms) = ("go".into(), tasks, Some(ms));
        earlier.push(s.clone());
    }
    let mut est = Estimates::from_samples(&earlier, Some("r0".into()));
    let at_1m = Cell {
        probe: go,
        tasks: 1_000_000,
        repeat: 1,
        position: 0,
    };
    assert_eq!(
        est.of(&study, &at_1m),
        Some(2_000.0),
        "the earlier run's own"
    );
    // Here the same cell at 10k took 1.5× as long: so will 1M.
    (s.tasks, s.timings.container_ms) = (10_000, Some(150.0));
    est.finished(&s);
    let t = est.of(&study, &at_1m).unwrap();
    assert!((t - 3_000.0).abs() < 1e-6, "{t}");
}

#[test]
fn the_pace_stretches_only_the_time_beyond_the_protocols_own() {
    // The default study: 700 ms of settle and readings in every steady process.
    let study = Study::default_study();
    let go = study.probes.iter().position(|p| p.id == "go").unwrap();
    let mut s = crate::study::sample::fixture::samples()[0].clone();
    let mut earlier = Vec::new();
    for (tasks, ms) in [(10_000, 900.0), (1_000_000, 4_700.0)] {
        (s.probe, s.tasks, s.timings.container_ms) = ("go".into(), tasks, Some(ms));
        earlier.push(s.clone());
    }
    let mut est = Estimates::from_samples(&earlier, Some("r0".into()));
    // Here 10k took 1,100 ms: 400 ms of work against the earlier 200, twice as long.
    (s.tasks, s.timings.container_ms) = (10_000, Some(1_100.0));
    est.finished(&s);
    let at_1m = Cell {
        probe: go,
        tasks: 1_000_000,
        repeat: 1,
        position: 0,
    };
    // 700 + 2 × 4,000, not 4,700 × 1,100 / 900 ≈ 5,744.
    let t = est.of(&study, &at_1m).unwrap();
    assert!((t - 8_700.0).abs() < 1e-6, "{t}");
}

#[test]
fn a_probe_not_yet_started_is_estimated_from_the_others_scaled_by_tasks() {
    let study = unfloored();
    let cell = |tasks| cell_of(&study, "rust-tokio", tasks);
    let mut est = Estimates::default();
    assert_eq!(est.of(&study, &cell(1_000_000)), None);
    // go at two scales: 100 ms + 0.01 ms per task; rust-tokio, not started, at 1M: go's line.
    finish(&mut est, "go", 10_000, 200.0);
    finish(&mut est, "go", 100_000, 1_100.0);
    let t = est.of(&study, &cell(1_000_000)).unwrap();
    assert!((t - 10_100.0).abs() < 1e-6, "{t}");
    // A process of its own at another scale comes first.
    finish(&mut est, "rust-tokio", 10_000, 150.0);
    let own = est.of(&study, &cell(1_000_000)).unwrap();
    assert!((own - (150.0 + 0.01 * 990_000.0)).abs() < 1e-6, "{own}");
    // A probe that starts no process lends no time.
    let mut skipped = Estimates::default().not_run(["go".to_string()]);
    finish(&mut skipped, "go", 10_000, 200.0);
    assert_eq!(skipped.of(&study, &cell(1_000_000)), None);
}

#[test]
fn probes_at_scales_of_their_own_are_said_as_cells_over_probes_or_one_scale_each() {
    let mut study = Study::default_study();
    for (probe, scales) in study.probes.iter_mut().zip([vec![1_000], vec![10, 20]]) {
        probe.scales = Some(scales);
    }
    study.probes.truncate(2);
    let cells = matrix(&study);
    let plan = describe(&study, &cells, 0, &Estimates::default());
    assert!(
        plan.contains("(3 probe × scale cells over 2 probes, × "),
        "{plan}"
    );
    study.probes[1].scales = Some(vec![10]);
    let cells = matrix(&study);
    let plan = describe(&study, &cells, 0, &Estimates::default());
    assert!(plan.contains("(2 probes at one scale each, × "), "{plan}");
}
