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
    assert!(
        containers_of("small").is_empty(),
        "every container of the run is removed, each next one created ahead included"
    );
}

/// A run on CPUs another run holds is refused before it builds or makes anything, naming the holder
/// and `--wait-for-cpus` (`reproduce` before it builds the driver it would hand over to); with
/// `PARKBENCH_WAIT_FOR_CPUS=1` (that flag's variable) it waits for them, says so once, makes nothing while it waits (its environment record runs a container on those
/// CPUs), and measures once they are free. The test holds CPU 0 itself, once other runs let it go.
#[test]
fn a_run_waits_for_cpus_another_run_holds_when_asked() {
    use std::io::{BufRead, BufReader};
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let study = write_study(
        tmp.path(),
        "waits.yaml",
        &small_study("waits", "1000", 1, "0", 50, ""),
    );
    let run = || {
        Invocation::run(tmp.path(), &study)
            .cpus("0")
            .env_remove("PARKBENCH_WAIT_FOR_CPUS")
    };
    let holder = "run 1 of study holds (pid 1)";
    let held = common::hold_cpus(&[0], holder);
    let runs = tmp.path().join("waits/runs");

    let refused = run().output();
    let err = text(&refused.stderr);
    assert!(!refused.status.success(), "{}", describe(&refused));
    assert!(
        err.contains(&format!("CPU 0 is in use by {holder}")),
        "{err}"
    );
    assert!(err.contains("--wait-for-cpus"), "{err}");
    assert!(!runs.exists(), "a refused run made a folder");
    // Refused before its images are built: no image table.
    assert_eq!(text(&refused.stdout), "", "{}", describe(&refused));
    // `reproduce` refuses before it builds the driver it would hand the command over to.
    let driver = tmp.path().join("driver/parkbench");
    let refused = (Invocation::reproduce(tmp.path(), &study).cpus("0"))
        .env_remove("PARKBENCH_WAIT_FOR_CPUS")
        .arg("--pinned-driver")
        .arg(&driver)
        .output();
    let err = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    assert!(
        err.contains(&format!("CPU 0 is in use by {holder}")),
        "{err}"
    );
    assert!(!driver.exists() && !runs.exists(), "{}", describe(&refused));

    let mut waits = (run().env("PARKBENCH_WAIT_FOR_CPUS", "1"))
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut lines = BufReader::new(waits.stderr.take().unwrap()).lines();
    let said = format!("CPU 0 is in use by {holder}: waiting for it (--wait-for-cpus)");
    let mut before = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line == said {
            break;
        }
        before.push(line);
    }
    std::thread::sleep(Duration::from_secs(1));
    assert!(waits.try_wait().unwrap().is_none(), "{before:?}");
    assert!(!runs.exists(), "a waiting run made its folder");
    drop(held);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(waits.wait().unwrap().success(), "{before:?}\n{rest:?}");
    assert!(!rest.contains(&said), "said once: {rest:?}");
    let samples = samples(&only_run(tmp.path(), "waits"));
    assert_eq!(samples.len(), 2);
    assert!(samples.iter().all(|s| s["valid"] == true), "{samples:?}");
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
    // The run's folder is made once its CPU is free (another test's run may hold it), and its
    // first sample comes within two minutes of that.
    let (mut deadline, mut made) = (Instant::now() + Duration::from_secs(1800), false);
    let run = loop {
        assert!(
            Instant::now() < deadline,
            "the run never measured its first sample (its folder made: {made})"
        );
        std::thread::sleep(Duration::from_millis(200));
        let runs = tmp.path().join("interrupted/runs");
        let first = std::fs::read_dir(&runs).ok().and_then(|mut d| d.next());
        let Some(dir) = first.map(|e| e.unwrap().path()) else {
            continue;
        };
        if !made {
            (deadline, made) = (Instant::now() + Duration::from_secs(120), true);
        }
        if log(&dir).lines().count() == 1 {
            break dir;
        }
    };
    std::thread::sleep(Duration::from_secs(2)); // the second container is running now
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        containers_of("interrupted").is_empty(),
        "a container of the run is left"
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

/// The containers of `study` in the Engine: its ID is this file's alone, so they are its runs'
/// (run IDs are times to the second: another test's run may have the same).
fn containers_of(study: &str) -> Vec<String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use parkbench::engine::{Containers, Engine};
        let engine = Engine::connect().await.unwrap();
        engine
            .containers_with_label("parkbench.study", study)
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
