//! The peak kind against the real Engine: article 001's unmodified programs at tiny scales with a
//! short sleep, an unavailable toolchain, a crashing program and one that outlives its timeout.

use crate::common;

use common::*;

fn peak_study(id: &str, probes: &[(&str, &[&str])], timeout_s: u64, claims: &str) -> String {
    let mut yaml = format!(
        r#"id: {id}
title: peak test
source: {{article: test, environment: test, cpus: "0-1"}}
protocol: {{scales: [1, 2000], repeats: 1, order: alternate, cpus: "0-1", interval_ms: 20, timeout_s: {timeout_s}}}
probes:
"#
    );
    for (probe, args) in probes {
        let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
        yaml.push_str(&format!(
            "  - {{id: {probe}, image: {probe}, kind: peak, args: [{}]}}\n",
            args.join(", ")
        ));
    }
    yaml.push_str(claims);
    yaml
}

#[test]
fn unmodified_programs_give_peaks_and_verdicts_with_unavailable_toolchains_named() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let short: &[&str] = &["{tasks}", "300"];
    let claims = r#"claims:
  - {id: go-lowest, text: t, stat: ratio, of: peak_median, probe: go-sleep, than: lowest, tasks: 1, expected: {below: 1}, unit: x}
  - {id: tokio-per-task, text: t, stat: per_task_bytes, probe: rust-tokio-join, tasks: 2000, expected: 100, unit: B, tolerance: {relative: 10}}
"#;
    let yaml = peak_study(
        "peak",
        &[
            ("rust-tokio-join", short),
            ("go-sleep", short),
            ("python-asyncio", short),
            ("csharp", short),
        ],
        60,
        claims,
    );
    let study = write_study(tmp.path(), "s.yaml", &yaml);
    Invocation::reproduce(tmp.path(), &study)
        .cpus("auto")
        .succeeds();
    let run = only_run(tmp.path(), "peak");
    let samples = samples(&run);
    assert_eq!(samples.len(), 8, "every cell has a sample, measured or not");
    for s in &samples {
        assert_eq!(s["kind"], "peak", "{s}");
        if s["probe"] == "csharp" {
            assert_eq!(s["valid"], false);
            let e = s["error"].as_str().unwrap();
            assert!(e.starts_with("toolchain unavailable"), "{e}");
            continue;
        }
        assert_eq!(s["valid"], true, "{s}");
        let peak = &s["peak"];
        let ru = peak["ru_maxrss_bytes"].as_u64().unwrap();
        let hwm = peak["vm_hwm_bytes"].as_u64().unwrap_or(0);
        assert!(ru > 0 && peak["polls"].as_u64().unwrap() > 0, "{s}");
        assert!(hwm >= peak["vm_rss_max_bytes"].as_u64().unwrap_or(0), "{s}");
        assert!(
            peak["wall_ms"].as_f64().unwrap() >= 300.0,
            "the program slept: {s}"
        );
        assert_eq!(s["cpus_in_force"], s["cpus_pinned"], "{s}");
    }
    let verdicts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("verdicts.json")).unwrap()).unwrap();
    let lowest = &verdicts["verdicts"][0];
    assert_ne!(lowest["status"], "not_measured", "{lowest}");
    let missing = lowest["missing"].as_array().unwrap();
    assert!(
        missing
            .iter()
            .any(|m| m.as_str().unwrap().contains("csharp")),
        "{lowest}"
    );
    assert!(verdicts["verdicts"][1]["measured"].is_number());
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    // Names from the samples are archive text, escaped in Markdown (`peak\_bytes` renders `peak_bytes`).
    let rendered = report.replace("\\_", "_");
    assert!(rendered.contains("peak_bytes") && report.contains("toolchain unavailable"));
    let archive = run.with_extension("tar.gz");
    for cmd in ["check", "verify"] {
        let out = parkbench().arg(cmd).arg(&archive).output().unwrap();
        assert!(out.status.success(), "{cmd}: {}", describe(&out));
    }
}

#[test]
fn a_crash_and_a_timeout_are_invalid_samples_and_the_run_goes_on() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let yaml = peak_study(
        "peak-bad",
        &[
            ("rust-tokio-join", &["not-a-number"]),
            ("go-sleep", &["{tasks}", "30000"]),
            ("rust-async-std", &["{tasks}", "10"]),
        ],
        // Long enough for rust-async-std's 10 ms on a machine busy with another test, not for
        // go-sleep's 30 s.
        10,
        "",
    );
    let out = run_study(tmp.path(), &yaml);
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let samples = samples(&only_run(tmp.path(), "peak-bad"));
    assert_eq!(samples.len(), 6);
    let error = |probe: &str| {
        samples
            .iter()
            .find(|s| s["probe"] == probe)
            .map(|s| s["error"].as_str().unwrap_or("").to_string())
            .unwrap()
    };
    assert!(
        error("rust-tokio-join").contains("exited with code"),
        "{samples:?}"
    );
    assert!(error("go-sleep").contains("timeout"), "{samples:?}");
    assert!(
        samples
            .iter()
            .filter(|s| s["probe"] == "rust-async-std")
            .all(|s| s["valid"] == true)
    );
}

#[test]
fn a_failure_a_claim_expects_is_judged_and_the_run_exits_0() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let claims = "claims:
  - {id: fails-1, text: t, stat: outcome, probe: rust-tokio-join, tasks: 1, expected: fails, pattern: ParseIntError, unit: count}
  - {id: fails-2000, text: t, stat: outcome, probe: rust-tokio-join, tasks: 2000, expected: fails, unit: count}
  - {id: completes, text: t, stat: outcome, probe: rust-async-std, tasks: 2000, expected: completes, unit: count}
  - {id: wall, text: t, stat: wall_median, probe: rust-async-std, tasks: 2000, expected: {above: 200}, unit: ms}
  - {id: not-killed, text: t, stat: outcome, probe: rust-tokio-join, tasks: 1, expected: killed, unit: count}
";
    let yaml = peak_study(
        "peak-expected",
        &[
            ("rust-tokio-join", &["not-a-number"]),
            ("rust-async-std", &["{tasks}", "200"]),
        ],
        30,
        claims,
    );
    let out = run_study(tmp.path(), &yaml);
    // The failures are the findings of claims, not faults: no exit code 3.
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("failed as a claim expects"),
        "{}",
        describe(&out)
    );
    let run = only_run(tmp.path(), "peak-expected");
    let out = parkbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let verdicts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("verdicts.json")).unwrap()).unwrap();
    let status = |id: &str| {
        let v = (verdicts["verdicts"].as_array().unwrap().iter())
            .find(|v| v["claim"] == id)
            .unwrap();
        (v["status"].as_str().unwrap().to_string(), v.to_string())
    };
    for id in ["fails-1", "fails-2000", "completes", "wall"] {
        let (s, v) = status(id);
        assert_eq!(s, "reproduced", "{v}");
    }
    // A program that exits with an error is not killed: that claim differs.
    let (s, v) = status("not-killed");
    assert_eq!(s, "differs", "{v}");
}
