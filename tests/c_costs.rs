//! Article 002's C programs (the `c-costs` image) against the real Engine: each timed program
//! prints its batches, the threads probe gets through the protocol, the reported programs count.
//!
//! Needs `probes[].program`, `probes[].scales` and the `reported` kind of the study schema.

mod common;

use common::*;
use serde_json::Value;

const STUDY: &str = r#"id: c-costs
title: c-costs test
source: {article: test, environment: test, cpus: "0-1"}
protocol: {scales: [1000], repeats: 1, order: alternate, cpus: "0-1", settle_ms: 100, samples: 2, interval_ms: 50, timeout_s: 120}
probes:
  - {id: pthreads, image: c-costs, program: /usr/local/bin/pthreads, args: ["{tasks}"]}
  - {id: pingpong, image: c-costs, program: /usr/local/bin/pingpong, kind: timed, scales: [1], args: []}
  - {id: ucontext, image: c-costs, program: /usr/local/bin/ucontext, kind: timed, scales: [1], args: []}
  - {id: asm-switch, image: c-costs, program: /usr/local/bin/asm-switch, kind: timed, scales: [1], args: []}
  - {id: ucontext-syscalls, image: c-costs, program: /usr/local/bin/ucontext-syscalls, kind: reported, scales: [1], args: []}
  - {id: thread-limit, image: c-costs, program: /usr/local/bin/thread-limit, kind: reported, scales: [1], args: ["2000"]}
"#;

fn build_c_costs() {
    let out = parkbench()
        .args(["build", "--only", "c-costs"])
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
#[ignore = "needs probes[].program, probes[].scales and the reported kind in the driver"]
fn c_programs_time_switches_park_threads_and_count_syscalls() {
    build_c_costs();
    let tmp = tempfile::tempdir().unwrap();
    let study = write_study(tmp.path(), "s.yaml", STUDY);
    let out = parkbench()
        .args(["run", "--cpus", "auto", "--results"])
        .arg(tmp.path())
        .arg(&study)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let samples = samples(&only_run(tmp.path(), "c-costs"));
    let of = |probe: &str| -> &Value {
        let found: Vec<&Value> = samples.iter().filter(|s| s["probe"] == probe).collect();
        assert_eq!(found.len(), 1, "one sample of {probe}: {samples:?}");
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
            assert!(
                (round_trip - 2.0 * switch).abs() <= 0.01 * round_trip,
                "{probe}: a round trip is two switches: {r}"
            );
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
}
