//! What ties a run to its study: `verify` prints the study's sha256 and names every claim whose
//! published value, unit, tolerance or anything else it judges by differs from the checkout's
//! `results/<study>/study.yaml`, and every probe or protocol field; `compare` names the same
//! between its two runs. A claim edited
//! to match its measurement, the report written again, is caught. No Engine needed.

use crate::common;

use std::path::{Path, PathBuf};

use common::archive::reference_folder;
use common::*;

/// The reference run of wait-1m with rust-rss-1m's published 0.36 GiB edited to 0.42 (what it
/// measured), and its report and verdicts written again from the edited study.
fn edited(into: &Path) -> PathBuf {
    let run = reference_folder("wait-1m", into);
    let study = std::fs::read_to_string(run.join("study.yaml")).unwrap();
    assert!(study.contains("expected: 0.36\n"));
    std::fs::write(
        run.join("study.yaml"),
        study.replacen("expected: 0.36\n", "expected: 0.42\n", 1),
    )
    .unwrap();
    let out = parkbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    run
}

fn sha256(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn verify_names_a_published_value_that_differs_from_the_checkout() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = reference_folder("wait-1m", &tmp.path().join("plain"));
    let out = parkbench().arg("verify").arg(&plain).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        stdout.contains(&format!(
            "study wait-1m sha256 {}",
            sha256(&plain.join("study.yaml"))
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("claims (published values, units, tolerances and what they judge), probes and protocol match"),
        "{stdout}"
    );

    let run = edited(&tmp.path().join("edited"));
    let out = parkbench()
        .args(["verify", "--strict"])
        .arg(&run)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "study wait-1m sha256 {}",
            sha256(&run.join("study.yaml"))
        )) && stdout.contains("in 1 place(s)")
            && stdout.contains("claim \"rust-rss-1m\": published 0.42 \"GiB\""),
        "{}",
        describe(&out)
    );
    // Its exit code is 4 whatever the provenance (rust-rss-1m is not reproduced): see
    // strict_exits_4_when_only_the_provenance_differs for the one a provenance difference causes.

    // Outside a checkout that holds the study, the sha256 is all there is to compare.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = parkbench()
        .arg("--repo")
        .arg(elsewhere.path())
        .arg("verify")
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("holds no results/wait-1m/study.yaml"),
        "{}",
        describe(&out)
    );
}

#[test]
fn compare_names_the_claims_whose_published_values_differ() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = reference_folder("wait-1m", &tmp.path().join("plain"));
    let run = edited(&tmp.path().join("edited"));
    let out = parkbench()
        .arg("compare")
        .arg(&plain)
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("The two runs' studies differ in published values")
            && stdout.contains("rust-rss-1m")
            && stdout.contains("0.36")
            && stdout.contains("0.42"),
        "{stdout}"
    );
    let same = parkbench()
        .arg("compare")
        .arg(&plain)
        .arg(&plain)
        .output()
        .unwrap();
    assert!(!text(&same.stdout).contains("The two runs' studies differ"));
}

/// The reference run of wait-1m as if measured under two kernels: run.json names them, every
/// sample is there once per kernel (`go@host`, `go@debian-6.1`), and the report is written again.
fn under_two_kernels(into: &Path) -> PathBuf {
    let run = reference_folder("wait-1m", into);
    let path = run.join("run.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    state["kernels"] = serde_json::json!(["host", "debian-6.1"]);
    std::fs::write(&path, state.to_string()).unwrap();
    let samples = std::fs::read_to_string(run.join("samples.jsonl")).unwrap();
    let mut lines = String::new();
    for line in samples.lines() {
        for kernel in ["host", "debian-6.1"] {
            let mut sample: serde_json::Value = serde_json::from_str(line).unwrap();
            sample["probe"] = format!("{}@{kernel}", sample["probe"].as_str().unwrap()).into();
            lines.push_str(&format!("{sample}\n"));
        }
    }
    std::fs::write(run.join("samples.jsonl"), lines).unwrap();
    let out = parkbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    run
}

#[test]
fn a_run_under_several_kernels_matches_the_study_it_was_made_from() {
    let tmp = tempfile::tempdir().unwrap();
    let run = under_two_kernels(tmp.path());
    let out = parkbench().arg("verify").arg(&run).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", describe(&out));
    // The verdicts are per kernel, the provenance is of the study as written.
    assert!(stdout.contains("go-rss-1m@debian-6.1"), "{stdout}");
    assert!(
        stdout.contains("claims (published values, units, tolerances and what they judge), probes and protocol match")
            && !stdout.contains("is only in"),
        "{stdout}"
    );
}

/// The reference run of wait-1m with every claim's published value set to what the run measured,
/// and its report and verdicts written again: every claim reproduces.
fn published_as_measured(into: &Path) -> PathBuf {
    let run = reference_folder("wait-1m", into);
    let verdicts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("verdicts.json")).unwrap()).unwrap();
    let path = run.join("study.yaml");
    let mut study: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for claim in study["claims"].as_sequence_mut().unwrap() {
        let verdict = verdicts["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["claim"].as_str() == claim["id"].as_str())
            .unwrap();
        claim["expected"] = serde_yaml::to_value(&verdict["measured"]).unwrap();
    }
    std::fs::write(&path, serde_yaml::to_string(&study).unwrap()).unwrap();
    let out = parkbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    run
}

/// `--strict` exits 4 for a provenance difference alone: every claim of the run reproduces (so
/// outside the checkout `--strict` exits 0), and its published values differ from the checkout's.
#[test]
fn strict_exits_4_when_only_the_provenance_differs() {
    let tmp = tempfile::tempdir().unwrap();
    let run = published_as_measured(tmp.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let alone = parkbench()
        .arg("--repo")
        .arg(elsewhere.path())
        .args(["verify", "--strict"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(0), "{}", describe(&alone));
    assert!(
        !text(&alone.stdout).contains("differs"),
        "{}",
        describe(&alone)
    );
    let out = parkbench()
        .args(["verify", "--strict"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).contains("claim \"rust-rss-1m\": published 0.419"),
        "{}",
        describe(&out)
    );
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
}

/// `compare` compares the two runs' studies as their files say: a run under two kernels and the
/// same run under one have the same study.
#[test]
fn compare_of_runs_under_other_kernels_compares_their_studies_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = reference_folder("wait-1m", &tmp.path().join("plain"));
    let kernels = under_two_kernels(&tmp.path().join("kernels"));
    let out = parkbench()
        .arg("compare")
        .arg(&plain)
        .arg(&kernels)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        !text(&out.stdout).contains("The two runs' studies differ"),
        "{}",
        describe(&out)
    );
}
