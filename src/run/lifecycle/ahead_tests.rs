//! Containers created ahead on a scripted Engine: each next process's container is created only
//! once the process before it has ended, is started only after that one is removed, and is removed
//! on every way the run stops — an interrupt, an Engine error, a dropped run, the end of the cells.

use std::time::Duration;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use super::loop_tests::{assert_halted_at_second, manifest, new_run, samples, study_with};
use super::*;
use crate::engine::fake::{FakeEngine, Step};

async fn execute(
    engine: &FakeEngine,
    study: &Study,
    dir: &RunDir,
    ahead: bool,
) -> Result<RunResult> {
    execute_with(
        engine,
        study,
        &manifest(),
        dir,
        ahead,
        &CancellationToken::new(),
    )
    .await
}

async fn execute_with(
    engine: &FakeEngine,
    study: &Study,
    manifest: &Manifest,
    dir: &RunDir,
    ahead: bool,
    cancel: &CancellationToken,
) -> Result<RunResult> {
    let mut run = Run::new(dir.clone(), dir.load_state()?, study, manifest)?;
    run.create_ahead(ahead);
    run.measure(engine, &Guests::default(), cancel).await
}

/// The Engine's events as (verb, container).
fn events(engine: &FakeEngine) -> Vec<(String, String)> {
    engine
        .events()
        .iter()
        .map(|e| {
            let (verb, id) = e.split_once(' ').unwrap();
            (verb.to_string(), id.to_string())
        })
        .collect()
}

/// While a container runs (from its start to its end) the Engine does nothing else, and when it
/// starts every other container created before it is already removed: nothing else exists
/// beside a process while it is measured.
fn assert_alone_while_measured(engine: &FakeEngine) {
    let events = events(engine);
    let mut live: Vec<&str> = Vec::new();
    for (i, (verb, id)) in events.iter().enumerate() {
        match verb.as_str() {
            "create" => live.push(id),
            "remove" => live.retain(|l| l != id),
            "start" => {
                assert_eq!(live, [id.as_str()], "alone at its start: {events:?}");
                if let Some((next, next_id)) = events.get(i + 1) {
                    assert_eq!((next.as_str(), next_id), ("end", id), "{events:?}");
                }
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn the_next_container_is_created_after_a_process_ends_and_started_after_its_removal() {
    let study = study_with("2");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new(vec![Step::Valid; 4]);
    let result = execute(&engine, &study, &dir, true).await.unwrap();
    assert_eq!((result.measured, result.invalid), (4, 0));
    assert_alone_while_measured(&engine);
    let events = events(&engine);
    // Process 1 ends; then (in either order) its removal and the create of process 2.
    let at = |verb: &str, id: &str| events.iter().position(|(v, i)| v == verb && i == id);
    let (c1, c2) = ("fake-1", "fake-2");
    assert!(at("end", c1) < at("create", c2), "{events:?}");
    assert!(at("start", c1) < at("create", c2), "{events:?}");
    assert!(at("remove", c1) < at("start", c2), "{events:?}");
    let creates = events.iter().filter(|(v, _)| v == "create").count();
    assert_eq!(
        creates, 4,
        "one container per process, none spare at the end"
    );
    assert!(engine.live().is_empty(), "no container left behind");
    let specs = engine.runs();
    let repeats: Vec<_> = specs
        .iter()
        .map(|s| &s.labels["parkbench.repeat"])
        .collect();
    assert_eq!(
        repeats,
        ["1", "1", "2", "2"],
        "each container is its own cell's"
    );
}

#[tokio::test]
async fn serial_containers_are_created_just_before_they_start() {
    let study = study_with("2");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new(vec![Step::Valid; 4]);
    execute(&engine, &study, &dir, false).await.unwrap();
    assert_alone_while_measured(&engine);
    let verbs: Vec<String> = events(&engine).into_iter().map(|(v, _)| v).collect();
    let one = ["create", "start", "end", "remove"];
    assert_eq!(verbs, one.repeat(4));
}

#[tokio::test]
async fn an_interrupt_removes_the_container_created_ahead() {
    let study = study_with("2");
    let (_tmp, dir) = new_run(&study);
    // The second process is interrupted while it runs; the first one created it ahead.
    let engine = FakeEngine::new([Step::Valid, Step::Interrupt, Step::Valid]);
    let cancel = CancellationToken::new();
    let result = execute_with(&engine, &study, &manifest(), &dir, true, &cancel)
        .await
        .unwrap();
    assert!(result.interrupted);
    assert_eq!((result.measured, engine.runs().len()), (1, 2));
    assert!(engine.live().is_empty(), "{:?}", engine.events());
    assert_alone_while_measured(&engine);
}

#[tokio::test]
async fn an_interrupt_between_processes_starts_nothing_and_leaves_nothing() {
    let study = study_with("2");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new(vec![Step::Valid; 4]);
    // Ctrl-C came before the run: the container created for the first process is not started.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = execute_with(&engine, &study, &manifest(), &dir, true, &cancel)
        .await
        .unwrap();
    assert!(result.interrupted);
    assert_eq!(result.measured, 0);
    assert!(engine.live().is_empty(), "{:?}", engine.events());
    assert_eq!(samples(&dir).len(), 0);
}

#[tokio::test]
async fn an_engine_error_removes_the_container_created_ahead() {
    let study = study_with("2");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([
        Step::Valid,
        Step::EngineError("the Engine went away".into()),
    ]);
    let err = execute(&engine, &study, &dir, true)
        .await
        .err()
        .expect("an Engine error stops the run");
    assert_halted_at_second(&err, &dir, &engine);
    assert!(engine.live().is_empty(), "{:?}", engine.events());
}

#[tokio::test]
async fn a_dropped_run_removes_every_container_it_created() {
    let study = study_with("2");
    let (_tmp, dir) = new_run(&study);
    // The second process never ends; the run is dropped (a second Ctrl-C) while it runs.
    let engine = FakeEngine::new([Step::Valid, Step::Hang]);
    let second_runs = async {
        while engine.runs().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::select! {
        _ = execute(&engine, &study, &dir, true) => panic!("the second process never ends"),
        () = second_runs => {}
    }
    crate::engine::settle().await;
    assert!(engine.live().is_empty(), "{:?}", engine.events());
    assert_eq!(samples(&dir).len(), 1);
}

#[tokio::test]
async fn no_container_is_created_ahead_for_a_process_that_will_not_run() {
    let study = study_with("1");
    let (_tmp, dir) = new_run(&study);
    let mut manifest = manifest();
    // go runs first, rust-tokio second; rust-tokio's image is unavailable.
    manifest.images.retain(|i| i.name != "rust-tokio");
    manifest.unavailable.push(crate::images::UnavailableImage {
        name: "rust-tokio".into(),
        reason: "pin tokio cannot be produced here".into(),
        notes: Vec::new(),
    });
    let engine = FakeEngine::new([Step::Valid]);
    let cancel = CancellationToken::new();
    let result = execute_with(&engine, &study, &manifest, &dir, true, &cancel)
        .await
        .unwrap();
    assert_eq!(result.measured, 2);
    let creates = events(&engine)
        .iter()
        .filter(|(v, _)| v == "create")
        .count();
    assert_eq!(creates, 1, "{:?}", engine.events());
    assert!(engine.live().is_empty());
}
