//! `run --shard` and `merge` on a tiny real study: shards 1/2 and 2/2 merged judge the claims as
//! the samples of both shards judged together; a missing shard is named; another study is refused.

use crate::common;

use std::path::Path;

use common::*;

const CLAIMS: &str = "claims:
  - {id: go-rss, text: t, stat: rss_median, probe: go, tasks: 1000, expected: 5, unit: MiB, tolerance: {relative: 100}}
  - {id: ratio, text: t, stat: ratio, of: rss_median, probe: go, than: rust-tokio, tasks: 1000, expected: {above: 0}, unit: x}
";

fn verdicts(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("verdicts.json")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    file["verdicts"].clone()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn two_shards_merged_judge_as_their_samples_together() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let yaml = small_study("tiny", "1000, 10000", 1, "0", 100, "") + CLAIMS;
    let study = write_study(tmp.path(), "s.yaml", &yaml);
    let mut archives = Vec::new();
    for shard in ["1/2", "2/2"] {
        let results = tmp.path().join(format!("shard-{}", &shard[..1]));
        Invocation::run(&results, &study)
            .cpus("auto")
            .args(["--shard", shard])
            .succeeds();
        let run = only_run(&results, "tiny");
        for then in ["report", "archive"] {
            let out = parkbench().arg(then).arg(&run).output().unwrap();
            assert!(out.status.success(), "{then}: {}", describe(&out));
        }
        let state = json(&run.join("run.json"));
        assert_eq!(
            state["shard"]["index"].as_u64(),
            Some(shard[..1].parse().unwrap())
        );
        assert_eq!(state["shard"]["count"].as_u64(), Some(2));
        assert_eq!(samples(&run).len(), 2, "{shard}: two of the four cells");
        archives.push(run.with_extension("tar.gz"));
    }
    let runs: Vec<_> = archives
        .iter()
        .map(|a| a.with_extension("").with_extension(""))
        .collect();
    let matrix = |r: &Path| json(&r.join("run.json"))["shard"]["matrix"].clone();
    assert_eq!(matrix(&runs[0]), matrix(&runs[1]), "one matrix");

    let out_dir = tmp.path().join("merged");
    let out = parkbench()
        .arg("merge")
        .args(&archives)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let merged: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let run = merged
        .iter()
        .find(|p| p.is_dir())
        .expect("a run folder")
        .clone();
    let archive = merged
        .iter()
        .find(|p| p.is_file())
        .expect("its archive")
        .clone();
    assert_eq!(merged.len(), 2, "only the run and its archive: {merged:?}");
    assert_eq!(json(&run.join("run.json"))["status"], "complete");
    let record = json(&run.join("merge.json"));
    assert_eq!(record["missing_shards"].as_array().unwrap().len(), 0);
    assert_eq!(record["classes"].as_array().unwrap().len(), 1);
    let all = samples(&run);
    assert_eq!(all.len(), 4);
    assert!(all.iter().all(|s| s["hardware"].is_string()), "{all:?}");
    let check = parkbench().arg("check").arg(&archive).output().unwrap();
    assert!(check.status.success(), "{}", describe(&check));

    // The samples of both shards judged together, by hand: one folder, both sample logs.
    let together = tmp.path().join("together");
    std::fs::create_dir(&together).unwrap();
    for f in ["study.yaml", "env.json", "manifest.json"] {
        std::fs::copy(runs[0].join(f), together.join(f)).unwrap();
    }
    let both: String = runs
        .iter()
        .map(|r| std::fs::read_to_string(r.join("samples.jsonl")).unwrap())
        .collect();
    std::fs::write(together.join("samples.jsonl"), both).unwrap();
    let out = parkbench().arg("report").arg(&together).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let want = verdicts(&together);
    assert_eq!(want.as_array().unwrap().len(), 2);
    assert_eq!(
        want[1]["status"], "reproduced",
        "the ratio needs both shards: {want}"
    );
    assert_eq!(verdicts(&run), want);
    // Each shard alone cannot judge the ratio.
    assert_ne!(verdicts(&runs[0])[1]["status"], "reproduced");

    // Shard 2 measured on another machine: two hardware classes, the claims judged per class.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    for f in ["study.yaml", "samples.jsonl", "run.json", "manifest.json"] {
        std::fs::copy(runs[1].join(f), elsewhere.join(f)).unwrap();
    }
    let mut env = json(&runs[1].join("env.json"));
    env["host"]["cpu_model"] = "Other CPU".into();
    std::fs::write(elsewhere.join("env.json"), env.to_string()).unwrap();
    let out_two = tmp.path().join("two");
    let out = parkbench()
        .arg("merge")
        .arg(&archives[0])
        .arg(&elsewhere)
        .arg("--out")
        .arg(&out_two)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let two = std::fs::read_dir(&out_two)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    assert_eq!(
        json(&two.join("merge.json"))["classes"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let per = json(&two.join("classes.json"));
    assert_eq!(per["classes"].as_array().unwrap().len(), 2);
    assert_eq!(per["classes"][1]["label"], "B", "{per}");
    assert!(
        per["classes"][1]["class"]
            .as_str()
            .unwrap()
            .starts_with("Other CPU"),
        "{per}"
    );
    let md = std::fs::read_to_string(two.join("classes.md")).unwrap();
    assert!(
        md.contains("`ratio`: reproduced on 0 of 2 classes"),
        "each class has one probe: {md}"
    );
    let report = std::fs::read_to_string(two.join("report.md")).unwrap();
    let at = |s: &str| report.find(s).unwrap_or_else(|| panic!("{s}: {report}"));
    assert!(
        at("## Verdicts per hardware class") < at("## Verdicts\n"),
        "{report}"
    );
    assert!(
        at("| Run | Hardware class |") > at("## Environment"),
        "{report}"
    );
    // verify recomputes the claims per class of the merged archive.
    let out = parkbench()
        .arg("verify")
        .arg(two.with_extension("tar.gz"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("verdicts per hardware class recomputed"),
        "{}",
        describe(&out)
    );

    // One shard alone: merged, but incomplete, the missing shard named.
    let out_one = tmp.path().join("one");
    let out = parkbench()
        .arg("merge")
        .arg(&archives[0])
        .arg("--out")
        .arg(&out_one)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("INCOMPLETE") && err.contains("shard 2/2 missing"),
        "{err}"
    );

    // Another study: refused, naming both, nothing written.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    for f in [
        "study.yaml",
        "samples.jsonl",
        "run.json",
        "env.json",
        "manifest.json",
    ] {
        let text = std::fs::read_to_string(runs[1].join(f)).unwrap();
        std::fs::write(other.join(f), text.replace("tiny", "tinier")).unwrap();
    }
    let nowhere = tmp.path().join("nowhere");
    let out = parkbench()
        .arg("merge")
        .arg(&archives[0])
        .arg(&other)
        .arg("--out")
        .arg(&nowhere)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("\"tiny\"") && err.contains("\"tinier\""),
        "{err}"
    );
    assert!(!nowhere.exists());
}

#[test]
fn bad_shard_specs_stop_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let study = write_study(
        tmp.path(),
        "s.yaml",
        &small_study("tiny", "1000", 1, "0", 100, ""),
    );
    for bad in ["3/2", "0/2", "1/0", "a/b"] {
        let out = Invocation::run(tmp.path(), &study)
            .args(["--shard", bad])
            .output();
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", describe(&out));
        assert!(text(&out.stderr).contains("i/N"), "{}", describe(&out));
        assert!(!tmp.path().join("tiny").exists(), "{bad}: nothing ran");
    }
}
