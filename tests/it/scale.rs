//! `just bench-scale`'s commands on a few archives, so that the benchmark cannot rot: `bench scale`
//! writes runs of the default study that `check` passes, `merge` joins them with one hardware class
//! per run, `verify` recomputes the merged run (its claims per class included), and `compare` sets
//! it beside the study's reference run. No Engine needed.

use crate::common;

use common::*;

#[test]
fn the_generated_runs_merge_verify_and_compare_as_the_benchmark_runs_them() {
    let tmp = tempfile::tempdir().unwrap();
    let archives = tmp.path().join("archives");
    let out = parkbench()
        .args(["bench", "scale", "--runs", "3", "--out"])
        .arg(&archives)
        .output()
        .unwrap();
    assert!(out.status.success(), "bench scale: {}", describe(&out));
    let mut written: Vec<_> = std::fs::read_dir(&archives)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    written.sort();
    assert_eq!(
        written.len(),
        3,
        "three archives and nothing else: {written:?}"
    );
    for a in &written {
        let out = parkbench().arg("check").arg(a).output().unwrap();
        assert!(
            out.status.success(),
            "check {}: {}",
            a.display(),
            describe(&out)
        );
    }

    let merged_dir = tmp.path().join("merged");
    let out = parkbench()
        .arg("merge")
        .args(&written)
        .arg("--out")
        .arg(&merged_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "merge: {}", describe(&out));
    let stdout = text(&out.stdout);
    let merged = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("archive: "))
        .next_back()
        .unwrap_or_else(|| panic!("merge named no archive: {stdout}"));
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(merged.replace(".tar.gz", "/merge.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["runs"].as_array().unwrap().len(), 3, "{record}");
    assert_eq!(
        record["classes"].as_array().unwrap().len(),
        3,
        "one hardware class per run: {record}"
    );
    assert!(
        record["missing_cells"].as_array().unwrap().is_empty(),
        "{record}"
    );

    let out = parkbench().args(["verify", merged]).output().unwrap();
    let said = text(&out.stdout);
    assert!(
        out.status.success()
            && said.contains("match the stored verdicts.json")
            && said.contains("match the stored classes.json"),
        "verify: {}",
        describe(&out)
    );

    let out = parkbench()
        .args([
            "compare",
            "results/wait-1m/reference/run.tar.gz",
            merged,
            "--out",
        ])
        .arg(tmp.path().join("compare"))
        .output()
        .unwrap();
    assert!(out.status.success(), "compare: {}", describe(&out));
    assert!(
        text(&out.stderr).contains("same binaries: yes"),
        "{}",
        describe(&out)
    );
}
