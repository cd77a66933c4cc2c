//! `parkbench run` against the real Engine: a small study, a failing probe, Ctrl-C and resume, bad input.

use crate::common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn small_study_gives_valid_alternating_samples() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let study = write_study(
        tmp.path(),
        "s.yaml",
        &small_study("small", "10000", 2, "0-1", 500, ""),
    );
    Invocation::run(tmp.path(), &study).cpus("auto").succeeds();
    let run = only_run(tmp.path(), "small");
    let samples = samples(&run);
    assert_eq!(samples.len(), 4);
    for s in &samples {
        assert_eq!(s["valid"], true, "{s}");
        assert_eq!(s["completed"], s["expected"]);
        assert_eq!(s["completed"], 10000);
        assert_eq!(s["cpus_in_force"], s["cpus_requested"], "{s}");
        assert_eq!(s["rss_bytes"].as_array().unwrap().len(), 5);
    }
    let order: Vec<_> = samples
        .iter()
        .map(|s| s["probe"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(order, ["go", "rust-tokio", "rust-tokio", "go"]);
    let go = samples.iter().find(|s| s["probe"] == "go").unwrap();
    assert_eq!(
        go["metrics"]["goroutines"], 10001.0,
        "Go counts its N tasks plus main"
    );
    assert!(run.join("env.json").is_file() && run.join("manifest.json").is_file());
    assert!(tmp.path().join("small/runs/latest").exists());
    let run_id = run.file_name().unwrap().to_str().unwrap();
    assert!(
        labelled_containers(run_id).is_empty(),
        "every container of the run is removed, each next one created ahead included"
    );
}

/// A run on CPUs another run holds is refused, naming it and `--wait-for-cpus`; with that flag (or
/// `PARKBENCH_WAIT_FOR_CPUS=1`) it waits for them, says so once, and measures when they are free. The CPU locks are in a folder of
/// this test's own (`PARKBENCH_LOCKS`), so no other run of this machine is waited for.
#[test]
fn a_run_waits_for_cpus_another_run_holds_when_asked() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let locks = tmp.path().join("locks");
    let study = |id: &str, settle_ms| {
        write_study(
            tmp.path(),
            &format!("{id}.yaml"),
            &small_study(id, "1000", 1, "0", settle_ms, ""),
        )
    };
    let (first, second) = (study("holds", 3000), study("waits", 50));
    let run = |study: &std::path::Path| {
        Invocation::run(tmp.path(), study)
            .cpus("0")
            .env("PARKBENCH_LOCKS", &locks)
            .env_remove("PARKBENCH_WAIT_FOR_CPUS")
    };
    let quiet = || std::process::Stdio::null();
    let mut holds = run(&first).stdout(quiet()).stderr(quiet()).spawn();
    let lock = locks.join("cpu0.lock");
    let since = Instant::now();
    while !std::fs::read_to_string(&lock).is_ok_and(|l| l.contains("of study holds")) {
        assert!(
            holds.try_wait().unwrap().is_none(),
            "the first run ended first"
        );
        assert!(
            since.elapsed() < Duration::from_secs(120),
            "CPU 0 never taken"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let refused = run(&second).output();
    let err = text(&refused.stderr);
    assert!(!refused.status.success(), "{}", describe(&refused));
    assert!(
        err.contains("CPU 0 is in use by run ") && err.contains("of study holds"),
        "{err}"
    );
    assert!(err.contains("--wait-for-cpus"), "{err}");
    assert!(
        holds.try_wait().unwrap().is_none(),
        "the first run ended before the refusal"
    );

    // `--wait-for-cpus`, here as its variable (as `just test` sets it).
    let waited = run(&second).env("PARKBENCH_WAIT_FOR_CPUS", "1").succeeds();
    let err = text(&waited.stderr);
    let said = "of study holds (pid ";
    assert_eq!(err.matches(said).count(), 1, "said once: {err}");
    assert!(err.contains("waiting for it (--wait-for-cpus)"), "{err}");
    assert!(holds.wait().unwrap().success());
    for (id, n) in [("holds", 2), ("waits", 2)] {
        let samples = samples(&only_run(tmp.path(), id));
        assert_eq!(samples.len(), n, "{id}");
        assert!(
            samples.iter().all(|s| s["valid"] == true),
            "{id}: {samples:?}"
        );
    }
}

#[test]
fn a_failing_probe_is_an_invalid_sample_and_the_run_goes_on() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let yaml = small_study("failing", "1000", 1, "0", 100, r#", "--no-such-flag""#);
    let study = write_study(tmp.path(), "s.yaml", &yaml);
    let out = Invocation::run(tmp.path(), &study).output();
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let samples = samples(&only_run(tmp.path(), "failing"));
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[0]["probe"], "go");
    assert_eq!(samples[0]["valid"], false);
    assert!(samples[0]["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(samples[1]["probe"], "rust-tokio");
    assert_eq!(samples[1]["valid"], true, "{}", samples[1]);
}

#[test]
fn sigint_removes_the_container_and_resume_fills_the_missing_cells() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    // Each process lives a few seconds (settle 4 s), so the interrupt lands while a container runs.
    let yaml = small_study("interrupted", "1000", 2, "0", 4000, "");
    let study = write_study(tmp.path(), "s.yaml", &yaml);
    let mut child = Invocation::run(tmp.path(), &study).spawn();
    let log =
        |p: &std::path::Path| std::fs::read_to_string(p.join("samples.jsonl")).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(120);
    let run = loop {
        assert!(
            Instant::now() < deadline,
            "the run never measured its first sample"
        );
        std::thread::sleep(Duration::from_millis(200));
        let runs = tmp.path().join("interrupted/runs");
        let first = std::fs::read_dir(&runs).ok().and_then(|mut d| d.next());
        if let Some(dir) = first.map(|e| e.unwrap().path())
            && log(&dir).lines().count() == 1
        {
            break dir;
        }
    };
    std::thread::sleep(Duration::from_secs(2)); // the second container is running now
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let run_id = run.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        labelled_containers(&run_id).is_empty(),
        "a container with the run's label is left"
    );
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(state["status"], "incomplete");
    let before = samples(&run);
    assert_eq!(before.len(), 1);

    Invocation::resume(tmp.path(), &run).succeeds();
    let after = samples(&run);
    assert_eq!(after.len(), 4, "2 probes × 2 repeats");
    assert_eq!(after[0], before[0], "a measured sample is never rewritten");
    let mut cells: Vec<_> = after
        .iter()
        .map(|s| (s["probe"].to_string(), s["repeat"].to_string()))
        .collect();
    cells.sort();
    cells.dedup();
    assert_eq!(cells.len(), 4, "each cell exactly once");
}

fn labelled_containers(run_id: &str) -> Vec<String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use parkbench::engine::{Containers, Engine};
        let engine = Engine::connect().await.unwrap();
        engine
            .containers_with_label("parkbench.run", run_id)
            .await
            .unwrap()
    })
}

#[test]
fn a_malformed_study_fails_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = small_study("bad", "1000", 1, "0", 100, "")
        .replace("  repeats: 1\n", "  repeats: 1\n  colour: blue\n");
    let line = yaml.lines().position(|l| l.contains("colour")).unwrap() + 1;
    let study = write_study(tmp.path(), "bad.yaml", &yaml);
    let out = Invocation::run(tmp.path(), &study).output();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "bad.yaml:{line}:3: protocol: unknown field `colour`"
        )),
        "{err}"
    );
    assert!(
        !tmp.path().join("bad").exists(),
        "nothing is written for a bad study"
    );
}

#[test]
fn a_cpu_list_the_host_lacks_is_refused() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let study = write_study(
        tmp.path(),
        "s.yaml",
        &small_study("cpus", "1000", 1, "0-511", 100, ""),
    );
    let out = Invocation::run(tmp.path(), &study).output();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--cpus auto"),
        "{}",
        describe(&out)
    );
    let out = Invocation::run(tmp.path(), &study).cpus("0,511").output();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("CPU 511"), "{}", describe(&out));
}
