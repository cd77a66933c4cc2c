//! Articles 002 and 004's programs (the `c-costs`, `rust-costs` and `rust-tokio-154` images) against
//! the real Engine: each timed program prints its batches, the thread and task probes get through the
//! protocol, the reported programs count and measure what they say.

use crate::common;

use common::*;
use serde_json::Value;

const STUDY: &str = r#"id: costs
title: costs test
source: {article: test, environment: test, cpus: "0-1"}
protocol: {scales: [1000], repeats: 1, order: alternate, cpus: "0-1", settle_ms: 100, samples: 2, interval_ms: 50, timeout_s: 120}
probes:
  - {id: pthreads, image: c-costs, program: /usr/local/bin/pthreads, args: ["{tasks}"]}
  - {id: pingpong, image: c-costs, program: /usr/local/bin/pingpong, kind: timed, scales: [1], args: []}
  - {id: ucontext, image: c-costs, program: /usr/local/bin/ucontext, kind: timed, scales: [1], args: []}
  - {id: asm-switch, image: c-costs, program: /usr/local/bin/asm-switch, kind: timed, scales: [1], args: []}
  - {id: ucontext-syscalls, image: c-costs, program: /usr/local/bin/ucontext-syscalls, kind: reported, scales: [1], args: []}
  - {id: thread-limit, image: c-costs, program: /usr/local/bin/thread-limit, kind: reported, scales: [1], args: ["2000"]}
  - {id: busy-poll, image: rust-costs, program: /usr/local/bin/busy-poll, kind: timed, scales: [1], results: [ns_per_poll]}
  - {id: std-threads, image: rust-costs, program: /usr/local/bin/threads, args: ["--tasks", "{tasks}"]}
  - {id: layouts-002, image: rust-costs, program: /usr/local/bin/layouts, kind: reported, scales: [1], results: [small, big]}
  - {id: layouts-004, image: rust-tokio-154, program: /usr/local/bin/layouts, kind: reported, scales: [1]}
  - {id: parked-notify, image: rust-tokio-154, program: /usr/local/bin/parked, args: ["--tasks", "{tasks}", "--workers", "{workers}", "--wait", "notify"]}
  - {id: parked-oneshot, image: rust-tokio-154, program: /usr/local/bin/parked, args: ["--tasks", "{tasks}", "--workers", "{workers}", "--wait", "oneshot"]}
  - {id: sleeping, image: rust-tokio-154, program: /usr/local/bin/sleeping, args: ["--tasks", "{tasks}"]}
"#;

fn build_images() {
    let out = parkbench()
        .args(["build", "--only", "c-costs,rust-costs,rust-tokio-154"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
}

fn number(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

#[test]
fn programs_time_switches_park_threads_and_tasks_and_report_sizes() {
    build_images();
    let tmp = tempfile::tempdir().unwrap();
    let out = run_study(tmp.path(), STUDY);
    assert!(out.status.success(), "{}", describe(&out));
    let samples = samples(&only_run(tmp.path(), "costs"));
    let of = |probe: &str| -> &Value {
        let found: Vec<&Value> = samples.iter().filter(|s| s["probe"] == probe).collect();
        assert_eq!(found.len(), 1, "one sample of {probe}: {samples:?}");
        // Valid however busy the machine: disturbed batches are dropped or, when most of a
        // process's are, all kept with a warning; never a reason to be invalid.
        assert_eq!(found[0]["valid"], true, "{}", found[0]);
        found[0]
    };

    for probe in ["pingpong", "ucontext", "asm-switch"] {
        let s = of(probe);
        assert_eq!(s["kind"], "timed", "{s}");
        let results = s["results"].as_array().unwrap();
        assert!(results.len() >= 30, "{probe}: {} batches", results.len());
        for r in results {
            let (switch, round_trip) = (number(r, "ns_per_switch"), number(r, "ns_per_round_trip"));
            assert!(switch > 0.0 && round_trip > 0.0, "{probe}: {r}");
        }
    }

    let threads = of("pthreads");
    assert_eq!(number(&threads["metrics"], "created"), 1000.0, "{threads}");
    assert_eq!(
        number(&threads["metrics"], "stack_bytes"),
        65536.0,
        "{threads}"
    );
    assert_eq!(threads["completed"], 1000, "{threads}");

    let syscalls = of("ucontext-syscalls");
    let r = &syscalls["results"][0];
    assert!(number(r, "syscalls_per_switch") >= 1.0, "{syscalls}");
    assert!(number(r, "rt_sigprocmask_per_switch") >= 1.0, "{syscalls}");
    assert_eq!(number(r, "switches"), 2000.0, "{syscalls}");

    let limit = of("thread-limit");
    let r = &limit["results"][0];
    assert_eq!(number(r, "threads"), 2000.0, "{limit}");
    assert_eq!(number(r, "errno"), 0.0, "{limit}");

    let poll = of("busy-poll");
    let batches = poll["results"].as_array().unwrap();
    assert!(batches.len() >= 30, "busy-poll: {} batches", batches.len());
    assert!(
        batches.iter().all(|r| number(r, "ns_per_poll") > 0.0),
        "{poll}"
    );

    for (probe, id) in [
        ("std-threads", "std"),
        ("parked-notify", "notify"),
        ("parked-oneshot", "oneshot"),
        ("sleeping", "sleeping"),
    ] {
        let s = of(probe);
        assert_eq!(s["completed"], 1000, "{id}: {s}");
        assert!(
            s["rss_median_bytes"].as_u64().unwrap() > s["baseline_rss_bytes"].as_u64().unwrap(),
            "{id}: 1000 parked units take memory: {s}"
        );
    }
    let std_threads = of("std-threads");
    assert_eq!(number(&std_threads["metrics"], "created"), 1000.0);
    assert!(
        std_threads["threads"].as_u64().unwrap() > 1000,
        "{std_threads}"
    );
    let sleeping = &of("sleeping")["metrics"];
    assert_eq!(
        number(sleeping, "threads"),
        number(sleeping, "workers") + 1.0,
        "the workers and the main thread: {sleeping}"
    );

    let small_big = &of("layouts-002")["results"][0];
    assert_eq!(
        number(small_big, "big") - number(small_big, "small"),
        4096.0,
        "big() holds its 4,096-byte buffer across the await: {small_big}"
    );
    let sizes = &of("layouts-004")["results"][0];
    assert!(number(sizes, "nho") >= 1.0, "{sizes}");
    for shape in ["vua_yield_now", "vua_own_yield", "vua_oneshot", "vua_sleep"] {
        assert!(
            number(sizes, shape) > 64.0,
            "vua() holds [u64; 8] across its await ({shape}): {sizes}"
        );
    }
}
