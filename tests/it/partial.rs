//! `run --only --scales`: a smoke run of one probe at one scale of the default study, on the real
//! Engine; a probe the study lacks is refused before anything runs.

use crate::common;

use common::*;

const STUDY: &str = "results/wait-1m/study.yaml";

#[test]
fn a_partial_run_measures_only_its_slice_and_says_it_is_partial() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let out = Invocation::run(&results, STUDY)
        .args(["--only", "go", "--scales", "10000"])
        .args(["--repeats", "1"])
        .cpus("auto")
        .succeeds();
    let run = only_run(&results, "wait-1m");
    let samples = samples(&run);
    assert!(!samples.is_empty(), "{}", describe(&out));
    for s in &samples {
        assert_eq!(
            (s["probe"].as_str(), s["tasks"].as_u64()),
            (Some("go"), Some(10_000))
        );
    }
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(state["partial"]["probes"], serde_json::json!(["go"]));
    assert_eq!(state["partial"]["scales"], serde_json::json!([10_000]));
    let out = parkbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("a partial run (--only go --scales 10000)"),
        "{report}"
    );
    assert!(report.contains("not in this partial run"), "{report}");
}

#[test]
fn a_probe_or_scale_the_study_lacks_is_refused_naming_those_it_has() {
    let tmp = tempfile::tempdir().unwrap();
    for (flag, value, names) in [
        ("--only", "cobol", "go, rust-tokio"),
        ("--scales", "7", "10000"),
    ] {
        let out = Invocation::run(tmp.path(), STUDY)
            .args([flag, value])
            .output();
        assert!(!out.status.success(), "{}", describe(&out));
        let err = text(&out.stderr);
        assert!(err.contains(value) && err.contains(names), "{err}");
    }
    assert!(!tmp.path().join("wait-1m").exists(), "nothing ran");
}
