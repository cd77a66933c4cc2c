//! Processes isolated by process (`protocol.isolation: process`) on a scripted Engine: one
//! container per probe and cell is started for its first process and serves the rest of its
//! cell's processes; it is removed once no process left needs it, when a process of it fails, and
//! on every way the run stops.

use std::time::Duration;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use super::loop_tests::{manifest, new_run, samples, study_with};
use super::*;
use crate::engine::SERVE;
use crate::engine::fake::{FakeEngine, Step};

/// `study_with(repeats)`, its processes isolated by process.
fn served(repeats: &str) -> Study {
    let mut study = study_with(repeats);
    study.protocol.isolation = Some(Isolation::Process);
    study
}

async fn execute(
    engine: &FakeEngine,
    study: &Study,
    dir: &RunDir,
    cancel: &CancellationToken,
) -> Result<RunResult> {
    let run = Run::new(dir.clone(), dir.load_state()?, study, &manifest())?;
    run.measure(engine, &Guests::default(), cancel).await
}

#[tokio::test]
async fn a_cells_processes_share_its_container_which_goes_at_the_end_of_the_cells() {
    let study = served("3");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new(vec![Step::Valid; 6]);
    let result = execute(&engine, &study, &dir, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!((result.measured, result.invalid), (6, 0));
    // Two cells (go and rust-tokio at 1,000 tasks): two containers, three processes each.
    let events = engine.events();
    let creates: Vec<&String> = events.iter().filter(|e| e.starts_with("create")).collect();
    assert_eq!(creates.len(), 2, "{events:?}");
    assert_eq!(events.iter().filter(|e| e.starts_with("sample")).count(), 6);
    // The second cell's container is started once the first process has ended, before the second
    // process is asked for: made ready between two processes, as a container created ahead is.
    let first_sample = events.iter().position(|e| e.starts_with("sample")).unwrap();
    let second_create = events
        .iter()
        .rposition(|e| e.starts_with("create"))
        .unwrap();
    let second_sample = first_sample
        + 1
        + events[first_sample + 1..]
            .iter()
            .position(|e| e.starts_with("sample"))
            .unwrap();
    assert!(
        first_sample < second_create && second_create < second_sample,
        "{events:?}"
    );
    // Both are removed at the end of the cells.
    assert_eq!(
        &events[events.len() - 2..],
        ["remove fake-1", "remove fake-2"]
    );
    assert!(engine.live().is_empty(), "nothing left: {events:?}");
    for s in samples(&dir) {
        assert_eq!(s.isolation, Some(Isolation::Process));
    }
    // The container runs the supervisor; each process is the sampler's own command line.
    let runs = engine.runs();
    assert!(
        runs.iter()
            .all(|r| r.cmd[0] == "/usr/local/bin/sampler" && r.cmd != SERVE)
    );
    assert!(
        runs.iter()
            .all(|r| !r.labels.contains_key("parkbench.repeat"))
    );
}

#[tokio::test]
async fn a_process_that_fails_takes_its_container_with_it() {
    let study = served("3");
    let (_tmp, dir) = new_run(&study);
    let failed = Step::Exit {
        code: 1,
        stdout: String::new(),
        stderr: "boom".into(),
    };
    // go 1, rust-tokio 1, then (alternate order) rust-tokio 2 fails, go 2, go 3, rust-tokio 3.
    let steps = [
        Step::Valid,
        Step::Valid,
        failed,
        Step::Valid,
        Step::Valid,
        Step::Oom,
    ];
    let engine = FakeEngine::new(steps);
    let result = execute(&engine, &study, &dir, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!((result.measured, result.invalid), (6, 2));
    let creates = engine
        .events()
        .iter()
        .filter(|e| e.starts_with("create"))
        .count();
    assert_eq!(
        creates, 3,
        "rust-tokio's third process had a fresh container"
    );
    assert!(engine.live().is_empty(), "{:?}", engine.events());
    let oom = samples(&dir).into_iter().filter(|s| s.oom_killed).count();
    assert_eq!(oom, 1);
}

#[tokio::test]
async fn an_interrupt_an_engine_error_or_a_drop_leaves_no_container() {
    for steps in [
        vec![Step::Valid, Step::Valid, Step::Interrupt],
        vec![Step::Valid, Step::TimedOut, Step::Valid, Step::Interrupt],
        vec![
            Step::Valid,
            Step::EngineError("the Engine went away".into()),
        ],
    ] {
        let study = served("3");
        let (_tmp, dir) = new_run(&study);
        let engine = FakeEngine::new(steps.clone());
        let _ = execute(&engine, &study, &dir, &CancellationToken::new()).await;
        crate::engine::settle().await;
        assert!(engine.live().is_empty(), "{steps:?}: {:?}", engine.events());
    }
    let study = served("3");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([Step::Valid, Step::Hang]);
    let second_runs = async {
        while engine.runs().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let cancel = CancellationToken::new();
    tokio::select! {
        _ = execute(&engine, &study, &dir, &cancel) => panic!("the second process never ends"),
        () = second_runs => {}
    }
    crate::engine::settle().await;
    assert!(engine.live().is_empty(), "{:?}", engine.events());
}

#[tokio::test]
async fn the_kind_chooses_unless_the_study_says() {
    let study = study_with("1");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new(vec![Step::Valid; 2]);
    execute(&engine, &study, &dir, &CancellationToken::new())
        .await
        .unwrap();
    for s in samples(&dir) {
        assert_eq!(
            s.isolation,
            Some(Isolation::Container),
            "steady: a container each"
        );
    }
    assert!(!engine.events().iter().any(|e| e.starts_with("sample")));
}

#[tokio::test]
async fn a_run_is_not_resumed_with_the_other_isolation() {
    let study = served("2");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([Step::Valid, Step::Interrupt]);
    let result = execute(&engine, &study, &dir, &CancellationToken::new())
        .await
        .unwrap();
    assert!(result.interrupted);
    // Resumed with each process in a container of its own (as PARKBENCH_ISOLATION=container would).
    let mut other = study.clone();
    other.protocol.isolation = Some(Isolation::Container);
    let err = execute(
        &FakeEngine::new(vec![Step::Valid; 3]),
        &other,
        &dir,
        &CancellationToken::new(),
    )
    .await
    .err()
    .expect("refused");
    let said = format!("{err:#}");
    assert!(
        said.contains("isolated by process") && said.contains("PARKBENCH_ISOLATION=process"),
        "{said}"
    );
    assert_eq!(samples(&dir).len(), 1, "nothing measured is lost");
}

#[tokio::test]
async fn the_next_cells_containers_start_together_as_those_done_go() {
    let mut study = served("1");
    study.protocol.scales = vec![1000, 2000];
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new(vec![Step::Valid; 4]);
    execute(&engine, &study, &dir, &CancellationToken::new())
        .await
        .unwrap();
    let events = engine.events();
    // go and rust-tokio at 1,000, then at 2,000, each once. Once the first process has ended,
    // the other three cells' containers are started side by side and the first one's removed,
    // all before the next process; then the Engine does nothing until the last has ended.
    let expected: Vec<String> = [
        "create fake-1",
        "start fake-1",
        "sample fake-1",
        "remove fake-1",
        "create fake-2",
        "start fake-2",
        "create fake-3",
        "start fake-3",
        "create fake-4",
        "start fake-4",
        "sample fake-2",
        "sample fake-3",
        "sample fake-4",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(events[..expected.len()], expected[..], "{events:?}");
    assert!(engine.live().is_empty(), "{events:?}");
}
