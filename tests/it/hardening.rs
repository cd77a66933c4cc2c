//! The confinement of a probe's container, against the real Engine: a running probe's container as
//! the Engine reports it and as the host's kernel sees its first process, and a runaway probe (the
//! `c-costs` image's fork-bomb) stopped by the study's `pids_limit` inside its container.

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::*;
use parkbench::engine::{Containers, Engine};
use serde_json::Value;

fn build_c_costs() {
    let out = parkbench()
        .args(["build", "--only", "c-costs"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
}

/// A steady probe that stays up a few seconds (3 s of settling), so that its container can be
/// looked at while it runs.
const STEADY: &str = r#"id: hardening-inspect
title: a running probe's container is confined
source: {article: test, environment: test, cpus: "0"}
protocol: {scales: [100], repeats: 1, order: fixed, cpus: "0", settle_ms: 3000, samples: 2, interval_ms: 50, timeout_s: 60}
probes:
  - {id: pthreads, image: c-costs, program: /usr/local/bin/pthreads, args: ["{tasks}"]}
"#;

/// The first container of `study` the Engine runs, once its first process has a host PID; `run`
/// is the `parkbench run` that starts it (which may first wait for its CPUs).
async fn running_probe(engine: &Engine, study: &str, run: &mut Child, log: &Path) -> (String, u32) {
    loop {
        for id in engine
            .containers_with_label("parkbench.study", study)
            .await
            .unwrap()
        {
            if let Ok((_, Some(pid))) = engine.isolation(&id).await {
                return (id, pid);
            }
        }
        if let Some(status) = run.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before a container of {study} was seen running:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_running_probe_container_is_confined() {
    build_c_costs();
    let tmp = tempfile::tempdir().unwrap();
    let study = write_study(tmp.path(), "s.yaml", STEADY);
    let log = tmp.path().join("run.log");
    let mut run = Invocation::run(tmp.path(), &study)
        .cpus("auto")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (isolation, status) = rt.block_on(async {
        let engine = Engine::connect().await.unwrap();
        let (id, pid) = running_probe(&engine, "hardening-inspect", &mut run, &log).await;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        (engine.isolation(&id).await.unwrap().0, status)
    });
    let ended = run.wait().unwrap();
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(ended.success(), "{ended}: {log}");

    // As the Engine reports the container.
    assert_eq!(isolation.user, "65534:65534");
    assert_eq!(isolation.cap_drop, ["ALL"]);
    assert!(isolation.cap_add.is_empty(), "{isolation:?}");
    assert_eq!(
        isolation.pids_limit, 25_000,
        "the default protocol.pids_limit"
    );
    assert!(isolation.read_only_root && !isolation.privileged);
    assert_eq!(isolation.tmpfs["/tmp"], "size=256m,nosuid,nodev");
    assert_eq!(isolation.network, "none");
    assert!(isolation.no_new_privileges);

    // As the host's kernel sees the container's first process, the sampler.
    for uid in status_line(&status, "Uid").split_whitespace() {
        assert_eq!(uid, "65534", "real, effective, saved and fs uid: {status}");
    }
    for caps in ["CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(status_line(&status, caps), "0000000000000000", "{caps}");
    }
    assert_eq!(status_line(&status, "NoNewPrivs"), "1");

    // The probe was measured as nobody, and the run's records say how it was confined.
    let run = only_run(tmp.path(), "hardening-inspect");
    let samples = samples(&run);
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0]["valid"], true, "{}", samples[0]);
    let env: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("env.json")).unwrap()).unwrap();
    assert_eq!(
        env["isolation"]["user"], "65534:65534",
        "{}",
        env["isolation"]
    );
    assert_eq!(env["isolation"]["pids_limit"], 25_000);
    let out = parkbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("- Isolation: each probe container holds at most 25,000 tasks"),
        "{report}"
    );
}

/// The fork-bomb under a 64-task limit: it would make 1,000 children if nothing stopped it.
const BOMB: &str = r#"id: hardening-bomb
title: a runaway probe stops at its container's tasks limit
source: {article: test, environment: test, cpus: "0"}
protocol: {scales: [1], repeats: 1, order: fixed, cpus: "0", interval_ms: 50, timeout_s: 60, pids_limit: 64}
probes:
  - {id: fork-bomb, image: c-costs, program: /usr/local/bin/fork-bomb, kind: reported, args: ["1000"]}
"#;

/// Host processes running `name`, and all of the host's processes.
fn host_processes(name: &str) -> (usize, usize) {
    let mut named = 0;
    let mut all = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name();
        if !pid.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        all += 1;
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        named += usize::from(comm.trim_end() == name);
    }
    (named, all)
}

#[test]
fn a_fork_bomb_stops_at_the_pids_limit_and_leaves_the_host_alone() {
    build_c_costs();
    let (bombs_before, before) = host_processes("fork-bomb");
    let tmp = tempfile::tempdir().unwrap();
    let out = run_study(tmp.path(), BOMB);
    // The run goes to its end: an invalid sample is the probe's failure (exit 3), not the kit's.
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let (bombs_after, after) = host_processes("fork-bomb");

    let samples = samples(&only_run(tmp.path(), "hardening-bomb"));
    assert_eq!(samples.len(), 1);
    let s = &samples[0];
    assert_eq!(s["valid"], false, "{s}");
    assert_eq!(s["exit_code"], 1, "the sampler's status: {s}");
    let error = s["error"].as_str().unwrap_or_default();
    assert!(error.contains("exited with code 1"), "{error}");
    let notes: Vec<&str> = s["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("fork failed after") && n.contains("EAGAIN")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("limit: pids cgroup pids.max 64 reached")),
        "{notes:?}"
    );
    let result = &s["results"][0];
    let children = result["children"].as_f64().unwrap();
    assert!(children > 0.0 && children < 64.0, "{result}");
    assert_eq!(result["pids_max"], 64.0, "{result}");

    // Nothing of it is left on the host.
    assert_eq!((bombs_before, bombs_after), (0, 0));
    eprintln!("host processes: {before} before, {after} after ({children} children made)");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let left = rt.block_on(async {
        let engine = Engine::connect().await.unwrap();
        engine
            .containers_with_label("parkbench.study", "hardening-bomb")
            .await
            .unwrap()
    });
    assert!(left.is_empty(), "containers left: {left:?}");
}
