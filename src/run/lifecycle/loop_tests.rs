//! The run loop on a scripted Engine: failures, Engine errors, interrupts, resumes and timeouts.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::engine::ContainerSpec;
use crate::engine::fake::{FakeEngine, Step, sampler_json_rss};
use crate::images::BuiltImage;
use crate::study::sample::{self, Sample};

/// Two probes at one scale, `repeats` repeats, alternating.
fn study(repeats: u32) -> Study {
    study_with(&repeats.to_string())
}

/// [`study`] with `protocol.repeats` written as `repeats`.
pub(super) fn study_with(repeats: &str) -> Study {
    Study::parse(&format!(
        r#"id: loop
title: loop test
source:
  article: test
  environment: test
  cpus: "0"
protocol:
  scales: [1000]
  repeats: {repeats}
  order: alternate
  cpus: "0"
  settle_ms: 0
  samples: 2
  interval_ms: 1
  timeout_s: 5
probes:
  - id: go
    image: go
    args: ["--tasks", "{{tasks}}"]
  - id: rust-tokio
    image: rust-tokio
    args: ["--tasks", "{{tasks}}", "--workers", "{{workers}}"]
"#
    ))
    .unwrap()
}

pub(super) fn manifest() -> Manifest {
    let image = BuiltImage::named;
    Manifest {
        images: vec![image("go"), image("rust-tokio")],
        ..Manifest::default()
    }
}

/// A fresh run folder with its state, in a temporary results folder.
pub(super) fn new_run(study: &Study) -> (tempfile::TempDir, RunDir) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunDir::create(tmp.path(), &study.id).unwrap();
    let state = new_state(&dir.id(), study, &[0], vec![]);
    dir.save_state(&state).unwrap();
    (tmp, dir)
}

/// Measures the run in `dir` on `engine`, every probe on the host's kernel.
async fn execute(
    engine: &FakeEngine,
    study: &Study,
    manifest: &Manifest,
    dir: &RunDir,
    cancel: &CancellationToken,
) -> Result<RunResult> {
    let run = Run::new(dir.clone(), dir.load_state()?, study, manifest)?;
    run.measure(engine, &Guests::default(), cancel).await
}

pub(super) fn samples(dir: &RunDir) -> Vec<Sample> {
    let (good, bad) = sample::read_all(&dir.file(run_dir::SAMPLES)).unwrap();
    assert!(bad.is_empty());
    good
}

fn exit(code: i64, stderr: &str) -> Step {
    Step::Exit {
        code,
        stdout: String::new(),
        stderr: stderr.into(),
    }
}

/// The run stopped at its second process (rust-tokio × 1000, repeat 1) on an Engine error "the
/// Engine went away": the first sample kept, the run incomplete and resumable, nothing run after.
pub(super) fn assert_halted_at_second(err: &anyhow::Error, dir: &RunDir, engine: &FakeEngine) {
    let err = format!("{err:#}");
    assert!(err.contains("the Engine went away"), "{err}");
    assert!(
        err.contains("rust-tokio × 1000 tasks, repeat 1") && err.contains("--resume"),
        "{err}"
    );
    assert_eq!(samples(dir).len(), 1);
    assert_eq!(dir.load_state().unwrap().status, Status::Incomplete);
    assert_eq!(engine.runs().len(), 2, "nothing runs after the error");
}

#[tokio::test]
async fn a_failing_process_is_an_invalid_sample_and_the_run_goes_on() {
    let study = study(2);
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([exit(2, "unknown flag"), Step::Oom, Step::Valid, Step::Valid]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &manifest(), &dir, &cancel)
        .await
        .unwrap();
    assert_eq!((result.measured, result.invalid), (4, 2));
    assert!(!result.interrupted);
    let got = samples(&dir);
    assert_eq!(got.len(), 4);
    assert!(
        !got[0].valid && got[0].stderr_tail == "unknown flag",
        "{:?}",
        got[0]
    );
    assert!(
        got[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("no JSON"))
    );
    assert_eq!(got[1].error.as_deref(), Some("OOM-killed"));
    assert!(got[2].valid && got[3].valid, "{:?}", got[2]);
    assert_eq!(dir.load_state().unwrap().status, Status::Complete);
    assert!(engine.live().is_empty(), "every container is removed");
}

#[tokio::test]
async fn an_engine_error_stops_the_run_and_keeps_the_samples() {
    let study = study(2);
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([
        Step::Valid,
        Step::EngineError("the Engine went away".into()),
    ]);
    let cancel = CancellationToken::new();
    let err = execute(&engine, &study, &manifest(), &dir, &cancel)
        .await
        .err()
        .expect("an Engine error stops the run");
    assert_halted_at_second(&err, &dir, &engine);
}

#[tokio::test]
async fn an_interrupt_stops_incomplete_and_resume_runs_exactly_the_missing_cells() {
    let study = study(2);
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([Step::Valid, Step::Interrupt, Step::Valid]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &manifest(), &dir, &cancel)
        .await
        .unwrap();
    assert!(result.interrupted && cancel.is_cancelled());
    assert_eq!((result.measured, engine.runs().len()), (1, 2));
    let first = samples(&dir);
    assert_eq!(first.len(), 1);
    assert_eq!(dir.load_state().unwrap().status, Status::Incomplete);

    let engine = FakeEngine::new([Step::Valid, Step::Valid, Step::Valid]);
    let result = execute(
        &engine,
        &study,
        &manifest(),
        &dir,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(result.measured, 3);
    let cell = |labels: &BTreeMap<String, String>| {
        (
            labels["parkbench.probe"].clone(),
            labels["parkbench.repeat"].clone(),
        )
    };
    let ran: Vec<_> = engine.runs().iter().map(|s| cell(&s.labels)).collect();
    let missing = [("rust-tokio", "1"), ("rust-tokio", "2"), ("go", "2")]
        .map(|(p, r)| (p.to_string(), r.to_string()));
    assert_eq!(ran, missing, "exactly the missing cells, in plan order");
    let all = samples(&dir);
    assert_eq!(all.len(), 4);
    assert_eq!(all[0], first[0], "a measured sample is never rewritten");
    assert_eq!(dir.load_state().unwrap().status, Status::Complete);
}

#[tokio::test]
async fn a_timeout_is_an_invalid_sample() {
    let study = study(1);
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([Step::TimedOut, Step::Valid]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &manifest(), &dir, &cancel)
        .await
        .unwrap();
    assert_eq!(result.invalid, 1);
    let got = samples(&dir);
    assert_eq!(got[0].error.as_deref(), Some("timed out; container killed"));
    assert!(got[1].valid);
    let spec = &engine.runs()[0];
    assert!(
        spec.timeout > Duration::from_secs(study.protocol.timeout_s),
        "the sampler's timeout comes first"
    );
}

#[tokio::test]
async fn an_unavailable_toolchain_is_not_measured_and_starts_no_container() {
    let study = study(1);
    let (_tmp, dir) = new_run(&study);
    let mut manifest = manifest();
    manifest.images.retain(|i| i.name != "go");
    manifest.unavailable.push(crate::images::UnavailableImage {
        name: "go".into(),
        reason: "pin go cannot be produced here\n  - url: unreachable".into(),
        notes: Vec::new(),
    });
    let engine = FakeEngine::new([Step::Valid]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &manifest, &dir, &cancel)
        .await
        .unwrap();
    assert_eq!(
        (result.measured, result.invalid),
        (2, 0),
        "not measured is no failure"
    );
    assert!(result.build_failed.is_empty(), "this machine's limit");
    let got = samples(&dir);
    let go = got.iter().find(|s| s.probe == "go").unwrap();
    assert!(go.is_unavailable(), "{go:?}");
    assert_eq!(
        go.error.as_deref(),
        Some("toolchain unavailable: pin go cannot be produced here")
    );
    manifest.unavailable.push(crate::images::UnavailableImage {
        name: "child".into(),
        reason: "its parent image go is unavailable".into(),
        notes: Vec::new(),
    });
    assert_eq!(
        crate::run::process::unavailable_reason(&manifest, "child").as_deref(),
        Some("image go: pin go cannot be produced here")
    );
    assert!(got.iter().any(|s| s.probe == "rust-tokio" && s.valid));
    assert_eq!(engine.runs().len(), 1, "only the available probe ran");
}

#[tokio::test]
async fn a_failed_build_is_not_measured_with_its_error_line_and_starts_no_container() {
    let study = study(1);
    let (_tmp, dir) = new_run(&study);
    let mut manifest = manifest();
    manifest.images.retain(|i| i.name != "go");
    manifest.failed.push(crate::images::FailedImage {
        name: "go".into(),
        error: "./main.go:4:2: \"os\" imported and not used".into(),
        parent: Some("toolchain-go".into()),
        output: vec![],
    });
    let engine = FakeEngine::new([Step::Valid]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &manifest, &dir, &cancel)
        .await
        .unwrap();
    assert_eq!((result.measured, result.invalid), (2, 0));
    assert_eq!(
        result.build_failed,
        ["go"],
        "the run ends failed, naming it"
    );
    let got = samples(&dir);
    let go = got.iter().find(|s| s.probe == "go").unwrap();
    assert!(go.is_unavailable(), "never ran: {go:?}");
    assert_eq!(
        go.error.as_deref(),
        Some(
            "build failed: parent image toolchain-go: ./main.go:4:2: \"os\" imported and not used"
        )
    );
    assert_eq!(engine.runs().len(), 1, "only the built probe ran");
}

#[tokio::test]
async fn every_container_gets_the_run_folders_seccomp_profile() {
    let mut study = study(1);
    study.protocol.seccomp = Some("deny.json".into());
    let (_tmp, dir) = new_run(&study);
    let cancel = CancellationToken::new();
    let engine = FakeEngine::new([]);
    let Err(err) = execute(&engine, &study, &manifest(), &dir, &cancel).await else {
        panic!("a run without its profile's copy must not start");
    };
    let err = format!("{err:#}");
    assert!(
        err.contains("the run's copy of the seccomp profile \"deny.json\""),
        "{err}"
    );
    assert!(engine.runs().is_empty(), "nothing runs without it");

    // The Engine is given the profile as the kit read it, written anew, not the file's text.
    let written = r#"{ "syscalls": [], "defaultAction": "SCMP_ACT_ALLOW" }"#;
    let profile = r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}"#;
    dir.write(run_dir::SECCOMP, written.as_bytes()).unwrap();
    let engine = FakeEngine::new([Step::Valid, Step::Valid]);
    execute(&engine, &study, &manifest(), &dir, &cancel)
        .await
        .unwrap();
    let runs = engine.runs();
    assert_eq!(runs.len(), 2);
    for spec in runs {
        assert_eq!(spec.seccomp.as_deref(), Some(profile));
    }
    let none = study_without_profile_runs_with_the_default().await;
    assert!(none.iter().all(|s| s.seccomp.is_none()));
}

async fn study_without_profile_runs_with_the_default() -> Vec<ContainerSpec> {
    let study = study(1);
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([Step::Valid, Step::Valid]);
    execute(
        &engine,
        &study,
        &manifest(),
        &dir,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    engine.runs()
}

/// A valid process whose RSS readings are all `kib`.
fn rss(kib: u64) -> Step {
    Step::Exit {
        code: 0,
        stdout: sampler_json_rss(1000, kib),
        stderr: String::new(),
    }
}

/// (probe, repeat) of every container the engine ran, in order.
fn ran(engine: &FakeEngine) -> Vec<(String, u32)> {
    let runs = engine.runs();
    let cell = |s: &ContainerSpec| {
        let repeat = s.labels["parkbench.repeat"].parse().unwrap();
        (s.labels["parkbench.probe"].clone(), repeat)
    };
    runs.iter().map(cell).collect()
}

fn cells(list: &[(&str, u32)]) -> Vec<(String, u32)> {
    list.iter().map(|(p, r)| (p.to_string(), *r)).collect()
}

#[tokio::test]
async fn dispersed_cells_get_processes_in_alternating_rounds_up_to_max_and_resume_goes_on() {
    let study = study_with("{min: 2, max: 4, target_cv: 0.005}");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([
        rss(2048),
        rss(2048),
        rss(1024),
        rss(1024),
        rss(2048),
        rss(2048),
        Step::Interrupt,
    ]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &manifest(), &dir, &cancel)
        .await
        .unwrap();
    assert!(result.interrupted);
    assert_eq!(dir.load_state().unwrap().status, Status::Incomplete);
    let planned = [("go", 1), ("rust-tokio", 1), ("rust-tokio", 2), ("go", 2)];
    let mut want = cells(&planned);
    want.extend(cells(&[("go", 3), ("rust-tokio", 3), ("rust-tokio", 4)]));
    assert_eq!(ran(&engine), want, "rounds alternate like the plan");
    assert_eq!(
        samples(&dir).len(),
        6,
        "the interrupted process left no sample"
    );

    let engine = FakeEngine::new([rss(2048), rss(2048)]);
    let result = execute(
        &engine,
        &study,
        &manifest(),
        &dir,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(result.measured, 2);
    let resumed = cells(&[("rust-tokio", 4), ("go", 4)]);
    assert_eq!(ran(&engine), resumed, "the resume goes on with the rounds");
    let all = samples(&dir);
    assert_eq!(all.len(), 8, "max 4 processes per cell, then it stops");
    let positions: Vec<u32> = all.iter().map(|s| s.position).collect();
    assert_eq!(positions, (0..8).collect::<Vec<_>>());
    assert_eq!(dir.load_state().unwrap().status, Status::Complete);
    let summary = crate::outputs::summary::summarize(&study, &all);
    assert!(summary.precision.iter().all(|p| !p.met && p.processes == 4));
}

#[tokio::test]
async fn agreeing_cells_stop_at_min_and_cells_never_measured_get_nothing_more() {
    let study = study_with("{min: 2, max: 4, target_cv: 0.005}");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([rss(2048), rss(2048), rss(2049), rss(2048)]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &manifest(), &dir, &cancel)
        .await
        .unwrap();
    assert_eq!((result.measured, engine.runs().len()), (4, 4));
    let summary = crate::outputs::summary::summarize(&study, &samples(&dir));
    assert!(summary.precision.iter().all(|p| p.met), "{summary:?}");

    let (_tmp, dir) = new_run(&study);
    let mut manifest = manifest();
    manifest.images.retain(|i| i.name != "go");
    manifest.unavailable.push(crate::images::UnavailableImage {
        name: "go".into(),
        reason: "pin go cannot be produced here".into(),
        notes: Vec::new(),
    });
    let engine = FakeEngine::new([rss(2048), rss(1024), rss(2048), rss(2048)]);
    execute(&engine, &study, &manifest, &dir, &cancel)
        .await
        .unwrap();
    let want = cells(&[
        ("rust-tokio", 1),
        ("rust-tokio", 2),
        ("rust-tokio", 3),
        ("rust-tokio", 4),
    ]);
    assert_eq!(
        ran(&engine),
        want,
        "go is not measured and gets nothing more"
    );
    let go = samples(&dir)
        .into_iter()
        .filter(|s| s.probe == "go")
        .count();
    assert_eq!(go, 2, "only its planned cells, each recorded not measured");
}

#[tokio::test]
async fn a_crashing_probe_stops_at_max() {
    let study = study_with("{min: 2, max: 3, target_cv: 0.005}");
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([rss(2048), Step::Oom, Step::Oom, rss(1024), rss(2048)]);
    let cancel = CancellationToken::new();
    execute(&engine, &study, &manifest(), &dir, &cancel)
        .await
        .unwrap();
    let want = cells(&[
        ("go", 1),
        ("rust-tokio", 1),
        ("rust-tokio", 2),
        ("go", 2),
        ("go", 3),
    ]);
    assert_eq!(ran(&engine), want, "invalid processes count toward max");
}

/// The lock of CPU 0, as another run would hold it.
fn another_run_on_cpu_0() -> crate::run::cpu_lock::CpuLock {
    let folder = crate::run::cpu_lock::folder();
    crate::run::cpu_lock::CpuLock::acquire(&folder, &[0], "run X of study other (pid 1)").unwrap()
}

#[tokio::test]
async fn a_run_on_cpus_another_run_holds_is_refused_and_a_new_one_leaves_no_folder() {
    let study = study(1);
    let (_tmp, dir) = new_run(&study);
    let held = another_run_on_cpu_0();
    let engine = FakeEngine::new([]);
    let cancel = CancellationToken::new();
    // A resumed run that measured nothing yet is kept as it was.
    let err = match execute(&engine, &study, &manifest(), &dir, &cancel).await {
        Ok(_) => panic!("measured beside another run"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        err.contains("CPU 0 is in use by run X of study other") && err.contains("kept as it was"),
        "{err}"
    );
    assert!(dir.path().exists(), "a resumed run's folder is removed");
    // A run this invocation made leaves no folder.
    let mut run = Run::new(dir.clone(), dir.load_state().unwrap(), &study, &manifest()).unwrap();
    run.made_here = true;
    let err = match run.measure(&engine, &Guests::default(), &cancel).await {
        Ok(_) => panic!("measured beside another run"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("folder is removed"), "{err}");
    assert!(
        !dir.path().exists(),
        "a run that measured nothing leaves no folder"
    );
    assert!(engine.runs().is_empty(), "no container started");
    drop(held);
}

#[tokio::test]
async fn a_run_waits_for_cpus_another_run_holds_and_ctrl_c_while_it_waits_keeps_it() {
    let study = study(1);
    let (_tmp, dir) = new_run(&study);
    let held = another_run_on_cpu_0();
    let soon = || tokio::time::sleep(crate::files::lock::RETRY * 2);

    // Ctrl-C while it waits: interrupted, nothing measured, its folder kept (even one made now).
    let engine = FakeEngine::new([]);
    let cancel = CancellationToken::new();
    let mut run = Run::new(dir.clone(), dir.load_state().unwrap(), &study, &manifest()).unwrap();
    (run.made_here, run.wait_cpus) = (true, true);
    let stop = async {
        soon().await;
        cancel.cancel();
    };
    let guests = Guests::default();
    let (result, ()) = tokio::join!(run.measure(&engine, &guests, &cancel), stop);
    let result = result.unwrap();
    assert!(result.interrupted && result.measured == 0);
    assert!(dir.path().exists(), "an interrupted wait removed the run");
    assert!(
        engine.runs().is_empty(),
        "a container started while waiting"
    );

    // Measured once the other run lets the CPU go.
    let engine = FakeEngine::new([Step::Valid, Step::Valid]);
    let cancel = CancellationToken::new();
    let mut run = Run::new(dir.clone(), dir.load_state().unwrap(), &study, &manifest()).unwrap();
    run.wait_for_cpus(true);
    let release = async move {
        soon().await;
        drop(held);
    };
    let (result, ()) = tokio::join!(run.measure(&engine, &guests, &cancel), release);
    assert_eq!(result.unwrap().measured, 2);
}

#[tokio::test]
async fn shared_cpus_measure_beside_another_run_and_say_so() {
    let study = study(1);
    let (_tmp, dir) = new_run(&study);
    let _held = another_run_on_cpu_0();
    let engine = FakeEngine::new([Step::Valid, Step::Valid]);
    let cancel = CancellationToken::new();
    let mut run = Run::new(dir.clone(), dir.load_state().unwrap(), &study, &manifest()).unwrap();
    run.share_cpus(true);
    let result = run
        .measure(&engine, &Guests::default(), &cancel)
        .await
        .unwrap();
    assert_eq!(result.measured, 2);
    let state = dir.load_state().unwrap();
    assert!(
        state
            .warnings
            .iter()
            .any(|w| w.what.contains("--allow-shared-cpus")),
        "{:?}",
        state.warnings
    );
}
