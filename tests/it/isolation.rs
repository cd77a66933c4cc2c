//! `protocol.isolation` against the real Engine: a process isolated by process starts afresh, in an
//! empty folder of its own, and leaves nothing running for the next; both isolations measure the
//! same memory and the same times; no container of a run is left behind.

use crate::common;

use common::*;
use parkbench::engine::{Containers, Engine};
use serde_json::Value;

fn build_images() {
    let out = parkbench()
        .args(["build", "--only", "c-costs,rust-tokio-154"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
}

/// No container of `study` is left in the Engine.
fn none_left(study: &str) {
    let left = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let engine = Engine::connect().await.unwrap();
        engine
            .containers_with_label("parkbench.study", study)
            .await
            .unwrap()
    });
    assert!(left.is_empty(), "containers of {study} left: {left:?}");
}

/// The `leftover` program says what it finds (files in its working folder, processes in its
/// container, whether `TMPDIR` is that folder), then leaves a file and a process behind.
const LOOK: &str = r#"id: isolation-fresh
title: each process starts afresh
source: {article: test, environment: test, cpus: "0"}
protocol: {scales: [1], repeats: 3, order: fixed, cpus: "0", interval_ms: 20, timeout_s: 60, isolation: process}
probes:
  - {id: look, image: c-costs, program: /usr/local/bin/leftover, kind: reported, args: []}
"#;

#[test]
fn a_process_starts_afresh_and_leaves_nothing_for_the_next() {
    build_images();
    let tmp = tempfile::tempdir().unwrap();
    let out = run_study(tmp.path(), LOOK);
    assert!(out.status.success(), "{}", describe(&out));
    let samples = samples(&only_run(tmp.path(), "isolation-fresh"));
    assert_eq!(samples.len(), 3);
    let mut procs = Vec::new();
    for s in &samples {
        assert_eq!(s["valid"], true, "{s}");
        assert_eq!(s["isolation"], "process", "{s}");
        let r = &s["results"][0];
        assert_eq!(
            r["files"], 0.0,
            "an empty folder, whatever the one before left: {s}"
        );
        assert_eq!(r["tmpdir_here"], 1.0, "TMPDIR is the working folder: {s}");
        procs.push(r["procs"].as_f64().unwrap());
    }
    assert!(
        procs.iter().all(|&p| p == procs[0]),
        "no process outlives its sample (processes seen: {procs:?})"
    );
    none_left("isolation-fresh");
}

/// Memory (a steady probe) and time (a timed one) with `isolation`.
fn alike(isolation: &str) -> String {
    format!(
        r#"id: isolation-alike
title: both isolations measure alike
source: {{article: test, environment: test, cpus: "0-1"}}
protocol: {{scales: [200000], repeats: 3, order: alternate, cpus: "0-1", settle_ms: 200, samples: 3, interval_ms: 50, timeout_s: 120, isolation: {isolation}}}
probes:
  - {{id: parked, image: rust-tokio-154, program: /usr/local/bin/parked, args: ["--tasks", "{{tasks}}", "--workers", "{{workers}}", "--wait", "notify"]}}
  - {{id: pingpong, image: c-costs, program: /usr/local/bin/pingpong, kind: timed, scales: [1], args: []}}
"#
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (v[(n - 1) / 2] + v[n / 2]) / 2.0
}

/// Per isolation, each process's value: the steady probe's RSS median, the timed probe's median
/// round trip over its batches.
fn values(samples: &[Value], probe: &str) -> Vec<f64> {
    samples
        .iter()
        .filter(|s| s["probe"] == probe)
        .map(|s| {
            assert_eq!(s["valid"], true, "{s}");
            match probe {
                "parked" => s["rss_median_bytes"].as_f64().unwrap(),
                _ => median(
                    (s["results"].as_array().unwrap().iter())
                        .map(|r| r["ns_per_round_trip"].as_f64().unwrap())
                        .collect(),
                ),
            }
        })
        .collect()
}

#[test]
fn both_isolations_measure_alike() {
    build_images();
    // Two runs of each, alternating, so that a drift of the machine falls on both; three processes
    // a run, so that one process slowed by the machine moves neither median far.
    let mut by: std::collections::BTreeMap<&str, Vec<Value>> = Default::default();
    for isolation in ["container", "process", "process", "container"] {
        let tmp = tempfile::tempdir().unwrap();
        let out = run_study(tmp.path(), &alike(isolation));
        assert!(out.status.success(), "{isolation}: {}", describe(&out));
        let samples = samples(&only_run(tmp.path(), "isolation-alike"));
        assert!(
            samples.iter().all(|s| s["isolation"] == isolation),
            "{samples:?}"
        );
        by.entry(isolation).or_default().extend(samples);
    }
    let (container, process) = (&by["container"], &by["process"]);
    let (c, p) = (values(container, "parked"), values(process, "parked"));
    let ratio = median(p.clone()) / median(c.clone());
    assert!(
        (ratio - 1.0).abs() <= 0.005,
        "RSS by process ÷ by container {ratio:.4} (container {c:?}, process {p:?})"
    );
    let (c, p) = (values(container, "pingpong"), values(process, "pingpong"));
    let range = |v: &[f64]| {
        v.iter().copied().fold(f64::MIN, f64::max) - v.iter().copied().fold(f64::MAX, f64::min)
    };
    let apart = (median(p.clone()) - median(c.clone())).abs();
    assert!(
        apart <= range(&c).max(range(&p)),
        "the medians differ by {apart:.1} ns, more than either isolation's own spread \
         (container {c:?}, process {p:?})"
    );
    none_left("isolation-alike");
}
