//! `parkbench explain` against the real Engine: a small study whose Go claim differs is explained
//! by sweeping a declared factor; the explanation is written, indexed, archived and verifiable.

mod common;

use common::{describe, ensure_built, only_run, parkbench, small_study, write_study};

/// A study of the Go probe at 10k tasks with a claim that differs (1 B per task, ±5 %), one that
/// reproduces (anything from 0 to 1 GiB of RSS), and a GOGC factor.
fn study() -> String {
    let mut text = small_study("explain-test", "10000", 1, "0", 100, "");
    let rust = text
        .find("  - id: rust-tokio")
        .expect("the small study has a Rust probe");
    text.truncate(rust);
    text.push_str(
        r#"claims:
  - id: go-per-task
    text: Go needs 1 byte per waiting task (it does not).
    stat: per_task_bytes
    probe: go
    tasks: 10000
    expected: 1
    unit: B
    tolerance: {relative: 0.05}
  - id: go-rss
    text: Go's RSS at 10k tasks is under 1 GiB.
    stat: rss_median
    probe: go
    tasks: 10000
    expected: {below: 1}
    unit: GiB
factors:
  - id: gogc
    probe: go
    text: Go's GC target.
    levels:
      - {id: "off", env: {GOGC: "off"}}
"#,
    );
    text
}

#[test]
fn a_differing_claim_is_explained_archived_and_verifiable() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let file = write_study(tmp.path(), "study.yaml", &study());
    let out = parkbench()
        .env("PARKBENCH_RESULTS", &results)
        .args(["run", "--cpus", "0"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let run = only_run(&results, "explain-test");

    // A claim that reproduced has nothing to explain; an undeclared factor is named.
    let explain = |extra: &[&str]| {
        parkbench()
            .env("PARKBENCH_RESULTS", &results)
            .arg("explain")
            .arg(&run)
            .args(["--cpus", "0"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = explain(&["--claim", "go-rss"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing to explain"),
        "{}",
        describe(&out)
    );
    let out = explain(&["--claim", "go-per-task", "--factors", "workers"]);
    assert!(!out.status.success(), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"workers\"") && err.contains("declared: gogc"),
        "{err}"
    );

    let out = explain(&["--claim", "go-per-task"]);
    assert!(out.status.success(), "{}", describe(&out));
    let sweep = only_run(&results.join("explain-test").join("explain"), "go-per-task");
    let md = std::fs::read_to_string(sweep.join("explanation.md")).unwrap();
    assert!(md.contains("| gogc | off |"), "{md}");
    assert!(
        std::fs::read_to_string(sweep.join("tornado.svg"))
            .unwrap()
            .starts_with("<svg")
    );
    let html = std::fs::read_to_string(sweep.join("explanation.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("<td>off</td>"),
        "{html}"
    );
    // Both the baseline and the variant ran every task.
    let samples = common::samples(&sweep);
    let probes: std::collections::BTreeSet<&str> =
        samples.iter().filter_map(|s| s["probe"].as_str()).collect();
    assert_eq!(probes.len(), 2, "{probes:?}");
    let index = std::fs::read_to_string(run.join("explanations.md")).unwrap();
    assert!(index.contains("go-per-task"), "{index}");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("explanations.md"),
        "the report links its explanations"
    );
    let archive = sweep.with_extension("tar.gz");
    let out = parkbench().arg("verify").arg(&archive).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
}

/// An incomplete run (here: made, then stopped before any sample) is refused by `explain` before
/// anything is built or written, and its folder is left exactly as it was.
#[test]
fn an_incomplete_run_is_refused_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("explain-test/runs/20260101T000000Z");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("study.yaml"), study()).unwrap();
    std::fs::write(run.join("samples.jsonl"), "").unwrap();
    let state = serde_json::json!({
        "run_id": "20260101T000000Z", "study": "explain-test", "status": "incomplete",
        "cpus_requested": "0", "cpus_pinned": "0", "workers": 1, "wall_ms": 0.0,
        "deviations": [], "started_at": "2026-01-01T00:00:00Z"
    });
    std::fs::write(run.join("run.json"), state.to_string()).unwrap();
    let before: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let out = parkbench()
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .args(["explain"])
        .arg(&run)
        .args(["--claim", "go-per-task"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = common::text(&out.stderr);
    assert!(
        err.contains("is incomplete") && err.contains("parkbench run --resume"),
        "{err}"
    );
    let mut after: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let mut before = before;
    before.sort();
    after.sort();
    assert_eq!(before, after, "nothing written into the refused run");
}
