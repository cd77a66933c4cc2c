//! One host's sub-run on a scripted Engine: the Engine fails mid-run, the process in flight becomes
//! an invalid sample with the reason, the cells after it are lost, and a resume on another Engine
//! measures exactly those.

use super::*;
use crate::engine::fake::{FakeEngine, Step};
use crate::images::BuiltImage;
use crate::run::run_dir::Status;

const STUDY: &str = r#"id: lost
title: lost host test
source:
  article: test
  environment: test
  cpus: "0"
protocol:
  scales: [1000]
  repeats: 2
  order: alternate
  cpus: "0"
  settle_ms: 0
  samples: 2
  interval_ms: 1
  timeout_s: 5
probes:
  - id: go
    image: go
    args: ["--tasks", "{tasks}"]
  - id: rust-tokio
    image: rust-tokio
    args: ["--tasks", "{tasks}", "--workers", "{workers}"]
"#;

fn common() -> Common {
    let image = BuiltImage::named;
    Common {
        study: Study::parse(STUDY).unwrap(),
        text: STUDY.to_string(),
        manifest: Manifest {
            images: vec![image("go"), image("rust-tokio")],
            ..Manifest::default()
        },
        cpus: CpuChoice::Auto,
        seccomp: None,
        repo: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        repeats: None,
        wait_cpus: false,
    }
}

fn env_step() -> Step {
    Step::Exit {
        code: 0,
        stdout: "Linux c 6.1.0\n0-1\nldd 2.36\n".into(),
        stderr: String::new(),
    }
}

fn plan(name: &str, engine: FakeEngine, folder: &Path) -> HostPlan<FakeEngine> {
    HostPlan {
        name: name.into(),
        engine,
        folder: folder.to_owned(),
        shard: None,
        lock_here: true,
        machine: None,
    }
}

#[tokio::test]
async fn a_host_that_fails_mid_run_loses_its_cells_and_a_resume_elsewhere_measures_them() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("hosts").join("b");
    let common = common();
    let cancel = CancellationToken::new();
    let engine = FakeEngine::new([
        env_step(),
        Step::Valid,
        Step::EngineError("the Engine went away".into()),
    ]);
    let end = measure(&plan("b", engine.clone(), &folder), &common, &cancel).await;
    assert_eq!(end.status, HostStatus::Lost);
    let reason = end.reason.unwrap();
    assert!(reason.starts_with("host `b` stopped"), "{reason}");
    assert!(reason.contains("the Engine went away"), "{reason}");
    assert_eq!(end.lost, ["rust-tokio@1000#2", "go@1000#2"], "run order");
    assert!(engine.live().is_empty(), "no container left");
    let dir = RunDir::at(&folder);
    assert_eq!(dir.load_state().unwrap().status, Status::Incomplete);
    let (got, _) = dir.samples().unwrap();
    assert_eq!(got.len(), 2);
    assert!(got[0].valid);
    assert_eq!(
        (got[1].valid, got[1].error.as_deref()),
        (false, Some(reason.as_str())),
        "the process in flight"
    );
    assert!(got.iter().all(|s| s.host.as_deref() == Some("b")));

    // Another Engine of its class: only the lost cells, each marked with its name.
    let spare = FakeEngine::new([Step::Valid, Step::Valid]);
    let end = measure(&plan("c", spare.clone(), &folder), &common, &cancel).await;
    assert_eq!(end.status, HostStatus::Ok);
    assert!(end.lost.is_empty());
    assert_eq!(spare.runs().len(), 2, "the environment is recorded once");
    let (got, _) = dir.samples().unwrap();
    assert_eq!(got.len(), 4);
    let hosts: Vec<_> = got.iter().map(|s| s.host.clone().unwrap()).collect();
    assert_eq!(hosts, ["b", "b", "c", "c"]);
    assert_eq!(dir.load_state().unwrap().status, Status::Complete);
}

#[tokio::test]
async fn a_host_lost_before_it_measures_loses_every_cell_of_its_shard_and_no_sample_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("hosts").join("b");
    let common = common();
    let engine = FakeEngine::new([Step::EngineError("no route to host".into())]);
    let mut p = plan("b", engine, &folder);
    p.shard = Some("2/2".parse().unwrap());
    let end = measure(&p, &common, &CancellationToken::new()).await;
    assert_eq!(end.status, HostStatus::Lost);
    // Shard 2 of 2 of one probe × scale cell per probe: rust-tokio's, both its repeats.
    assert_eq!(end.lost, ["rust-tokio@1000#1", "rust-tokio@1000#2"]);
    assert!(
        !folder.join(run_dir::SAMPLES).exists(),
        "no process was in flight"
    );
}
