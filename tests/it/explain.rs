//! `parkbench explain` against the real Engine: a small study whose Go claim differs is explained
//! by sweeping a declared factor; the explanation is written, indexed, archived and verifiable.

use crate::common;

use common::{
    Invocation, describe, ensure_built, only_run, parkbench, small_study, text, write_study,
};

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
    Invocation::new("run")
        .env("PARKBENCH_RESULTS", &results)
        .cpus("0")
        .arg(&file)
        .succeeds();
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

    // With its CPU held by another run, the sweep is refused before it builds, naming
    // --allow-shared-cpus, which then measures beside that run, with a validity warning.
    let holder = "run 1 of study explain-holds (pid 1)";
    let held = common::hold_cpus(&[0], holder);
    let refused = parkbench()
        .env("PARKBENCH_RESULTS", &results)
        .env_remove("PARKBENCH_WAIT_FOR_CPUS")
        .args(["explain", "--claim", "go-per-task", "--cpus", "0"])
        .arg(&run)
        .output()
        .unwrap();
    let err = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    assert!(
        err.contains(&format!("CPU 0 is in use by {holder}"))
            && err.contains("--allow-shared-cpus"),
        "{err}"
    );
    assert!(!results.join("explain-test/explain").exists(), "{err}");
    // The refusal is all it says, on standard error.
    assert_eq!(text(&refused.stdout), "", "{}", describe(&refused));
    let out = explain(&["--claim", "go-per-task", "--allow-shared-cpus"]);
    drop(held);
    assert!(out.status.success(), "{}", describe(&out));
    // The baseline's and the variant's builds print no table: the sweep's run prints one of them all.
    let tables = text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("IMAGE "))
        .count();
    assert_eq!(tables, 1, "{}", describe(&out));
    let sweep = only_run(&results.join("explain-test").join("explain"), "go-per-task");
    let md = std::fs::read_to_string(sweep.join("explanation.md")).unwrap();
    assert!(md.contains("| gogc | off |"), "{md}");
    assert!(md.contains("not locked (--allow-shared-cpus)"), "{md}");
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
    let state = std::fs::read_to_string(sweep.join("run.json")).unwrap();
    assert!(
        state.contains("not locked (--allow-shared-cpus)"),
        "{state}"
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

/// A study of both probes that publishes a Go and a Rust version, with a Go claim that differs and
/// a factor of the Go probe: the sweep runs Go alone, whose images record no Rust version.
fn two_languages() -> String {
    let text = small_study("next-steps", "10000", 1, "0", 100, "");
    let text = text.replace(
        "  environment: test\n",
        "  environment: test\n  toolchains: {go: 1.26.1, rustc: 1.97.1}\n",
    );
    let claims = study();
    let claims = &claims[claims.find("claims:").unwrap()..];
    format!("{text}{claims}")
}

/// The driver's subcommands, as its help lists them.
fn subcommands() -> Vec<String> {
    let out = parkbench().arg("help").output().unwrap();
    let help = common::text(&out.stdout);
    let listed = help.split("Commands:").nth(1).expect("help lists commands");
    listed
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

/// Every `parkbench SUBCOMMAND …` in a command's output, as words.
fn next_steps(out: &std::process::Output) -> Vec<Vec<String>> {
    let text = format!(
        "{}\n{}",
        common::text(&out.stdout),
        common::text(&out.stderr)
    );
    let subcommands = subcommands();
    let mut steps = Vec::new();
    for line in text.lines() {
        for (at, _) in line.match_indices("parkbench ") {
            // The program as printed: `parkbench`, or the driver's path when it is not on PATH.
            let program = line[..at].rfind([' ', ':', '`']).map_or(0, |i| i + 1);
            let rest = &line[program..];
            let word = rest.split_whitespace().nth(1).unwrap_or("");
            if !subcommands.iter().any(|s| s == word) {
                continue;
            }
            let end = ["`", ",", " (", ")"]
                .iter()
                .filter_map(|t| rest.find(t))
                .min()
                .unwrap_or(rest.len());
            let words: Vec<String> = rest[..end].split_whitespace().map(String::from).collect();
            if words.len() > 2 {
                steps.push(words);
            }
        }
    }
    steps
}

/// Runs a printed command as a user would, from the repository, with the test's results folder:
/// `parkbench` as the driver on PATH, a path to the driver as printed.
fn run_step(step: &[String], results: &std::path::Path) -> std::process::Output {
    let mut command = match step[0].as_str() {
        "parkbench" => parkbench(),
        path => {
            let mut c = std::process::Command::new(path);
            c.current_dir(common::repo());
            c
        }
    };
    command
        .env("PARKBENCH_RESULTS", results)
        .args(&step[1..])
        .output()
        .unwrap()
}

/// The commands `reproduce`, `run`, `check` and `explain` print as the next step are run as
/// printed, and each works: the closing lines of a reproduce (check, explain), of a run (report,
/// archive), check's pointer to verify for a folder, and explain's own (verify).
#[test]
fn every_next_step_the_kit_prints_runs_as_printed() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let file = write_study(tmp.path(), "study.yaml", &two_languages());
    let out = Invocation::new("reproduce")
        .env("PARKBENCH_RESULTS", &results)
        .cpus("0")
        .arg(&file)
        .succeeds();
    let steps = next_steps(&out);
    let subcommands: Vec<&str> = steps.iter().map(|s| s[1].as_str()).collect();
    assert!(
        subcommands.contains(&"check") && subcommands.contains(&"explain"),
        "reproduce names check and explain: {steps:?}\n{}",
        describe(&out)
    );
    let explain = steps.iter().find(|s| s[1] == "explain").unwrap();
    assert!(
        explain.join(" ").ends_with("--claim go-per-task"),
        "explain is suggested for the differing claim its factor can sweep: {explain:?}"
    );
    let mut more = Vec::new();
    for step in &steps {
        let out = run_step(step, &results);
        assert!(out.status.success(), "{step:?}:\n{}", describe(&out));
        more.extend(next_steps(&out));
    }
    // explain's closing line names verify on the sweep's archive.
    assert!(more.iter().any(|s| s[1] == "verify"), "{more:?}");
    for step in &more {
        let out = run_step(step, &results);
        assert!(out.status.success(), "{step:?}:\n{}", describe(&out));
    }

    // `run`'s closing line: report, then archive.
    let out = Invocation::new("run")
        .env("PARKBENCH_RESULTS", &results)
        .cpus("0")
        .arg(&file)
        .succeeds();
    let steps = next_steps(&out);
    let names: Vec<&str> = steps.iter().map(|s| s[1].as_str()).collect();
    assert_eq!(names, ["report", "archive"], "{}", describe(&out));
    for step in &steps {
        let out = run_step(step, &results);
        assert!(out.status.success(), "{step:?}:\n{}", describe(&out));
    }

    // `check` given a run folder names verify for it.
    let run = steps[0][2].clone();
    let out = parkbench().args(["check", &run]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let steps = next_steps(&out);
    assert!(steps.iter().any(|s| s[1] == "verify"), "{}", describe(&out));
    for step in &steps {
        let out = run_step(step, &results);
        assert!(out.status.success(), "{step:?}:\n{}", describe(&out));
    }
}
