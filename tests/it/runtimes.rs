//! Article 003's programs (the `runtime-*` and `echo-load` images) against the real Engine: every
//! runtime parks its tasks in both shapes, times its spawns into a histogram and serves the load
//! generator; a seccomp profile that refuses io_uring makes glommio's samples invalid, with why.

use crate::common;

use common::*;
use serde_json::Value;

const RUNTIMES: [&str; 4] = ["tokio", "async-std", "smol", "glommio"];

fn study(extra_protocol: &str, probes: &str) -> String {
    format!(
        r#"id: runtimes
title: runtimes test
source: {{article: test, environment: test, cpus: "0-1"}}
protocol: {{scales: [1000], repeats: 1, order: alternate, cpus: "0-1", settle_ms: 100, samples: 2, interval_ms: 50, timeout_s: 120{extra_protocol}}}
probes:
{probes}"#
    )
}

fn every_probe() -> String {
    let mut out = String::new();
    for r in RUNTIMES {
        out += &format!(
            r#"  - {{id: {r}-parked, image: runtime-{r}, program: /usr/local/bin/parked, args: ["--tasks", "{{tasks}}", "--wait", "signal"]}}
  - {{id: {r}-sleeping, image: runtime-{r}, program: /usr/local/bin/parked, args: ["--tasks", "{{tasks}}", "--wait", "sleep", "--sleep-ms", "3000"]}}
  - {{id: {r}-spawn, image: runtime-{r}, program: /usr/local/bin/spawn-latency, kind: latency, scales: [1], args: ["500"]}}
  - {{id: {r}-echo, image: runtime-{r}, program: /usr/local/bin/echo-server, kind: latency, scales: [1], cpus: 1, args: ["--", "/usr/local/bin/echo-load", "--cpus", "{{other_cpus}}", "--connections", "8", "--warmup-s", "0", "--seconds", "1"]}}
"#
        );
    }
    out + r#"  - {id: echo-baseline, image: echo-load, program: /usr/local/bin/echo-baseline, kind: latency, scales: [1], cpus: 1, args: ["--", "/usr/local/bin/echo-load", "--cpus", "{other_cpus}", "--connections", "8", "--warmup-s", "0", "--seconds", "1"]}
"#
}

fn build_images() {
    let out = parkbench()
        .args(["build", "--only"])
        .arg(RUNTIMES.map(|r| format!("runtime-{r}")).join(","))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
}

/// Runs a study in a fresh results folder; its samples by probe.
fn run(yaml: &str) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_study(tmp.path(), yaml);
    assert!(out.status.success(), "{}", describe(&out));
    samples(&only_run(tmp.path(), "runtimes"))
}

fn one<'a>(samples: &'a [Value], probe: &str) -> &'a Value {
    let found: Vec<&Value> = samples.iter().filter(|s| s["probe"] == probe).collect();
    assert_eq!(found.len(), 1, "one sample of {probe}");
    found[0]
}

fn number(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

#[test]
fn every_runtime_parks_times_its_spawns_and_echoes() {
    build_images();
    let samples = run(&study("", &every_probe()));
    for s in &samples {
        assert_eq!(s["valid"], true, "{s}");
    }
    for r in RUNTIMES {
        for shape in ["parked", "sleeping"] {
            let s = one(&samples, &format!("{r}-{shape}"));
            assert_eq!(s["completed"], 1000, "{s}");
            assert_eq!(number(&s["metrics"], "created"), 1000.0, "{s}");
            assert!(
                s["rss_median_bytes"].as_u64().unwrap() > s["baseline_rss_bytes"].as_u64().unwrap(),
                "1000 tasks take memory: {s}"
            );
        }
        let spawn = one(&samples, &format!("{r}-spawn"));
        let counted: u64 = spawn["latency_ns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[1].as_u64().unwrap())
            .sum();
        assert_eq!(counted, 500, "one latency per spawn: {spawn}");
    }
    for probe in RUNTIMES
        .map(|r| format!("{r}-echo"))
        .into_iter()
        .chain(["echo-baseline".to_string()])
    {
        let s = one(&samples, &probe);
        let r = &s["results"][0];
        assert!(number(r, "messages") > 0.0, "{s}");
        assert!(number(r, "server_cpu_pct") > 0.0, "{s}");
        assert!(number(r, "server_hwm_bytes") > 0.0, "{s}");
        assert!(number(r, "load_cpus") >= 1.0, "{s}");
        // Requests per server CPU-second: the window's messages over the server's CPU seconds.
        let cpu_s = number(r, "server_cpu_pct") / 100.0 * number(r, "seconds");
        let per_cpu_s = number(r, "requests_per_server_cpu_s");
        assert!(
            (per_cpu_s - number(r, "messages") / cpu_s).abs() <= 0.01 * per_cpu_s,
            "{s}"
        );
        let counted: u64 = s["latency_ns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[1].as_u64().unwrap())
            .sum();
        assert_eq!(
            counted as f64,
            number(r, "messages"),
            "{probe}: every echo timed"
        );
        assert_eq!(s["cpus_pinned"], "0", "the server has the first CPU: {s}");
    }
}

#[test]
fn a_profile_refusing_io_uring_makes_glommio_invalid_and_says_so() {
    build_images();
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("no-io-uring.json");
    std::fs::write(
        &profile,
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["io_uring_setup"],"action":"SCMP_ACT_ERRNO"}]}"#,
    )
    .unwrap();
    let probes = r#"  - {id: glommio-spawn, image: runtime-glommio, program: /usr/local/bin/spawn-latency, kind: latency, scales: [1], args: ["100"]}
  - {id: tokio-spawn, image: runtime-tokio, program: /usr/local/bin/spawn-latency, kind: latency, scales: [1], args: ["100"]}
"#;
    let yaml = study(
        &format!(", seccomp: {:?}", profile.display().to_string()),
        probes,
    );
    let results = tempfile::tempdir().unwrap();
    let file = write_study(results.path(), "s.yaml", &yaml);
    let out = Invocation::run(results.path(), &file).cpus("auto").output();
    assert_eq!(
        out.status.code(),
        Some(3),
        "an invalid sample: {}",
        describe(&out)
    );
    let dir = only_run(results.path(), "runtimes");
    let got = samples(&dir);
    let glommio = one(&got, "glommio-spawn");
    assert_eq!(glommio["valid"], false, "{glommio}");
    let why = glommio["error"].as_str().unwrap();
    assert!(
        why.contains("io_uring refused: io_uring_setup failed"),
        "{why}"
    );
    assert_eq!(
        one(&got, "tokio-spawn")["valid"],
        true,
        "tokio needs no io_uring"
    );
    let copy = std::fs::read(dir.join("seccomp.json")).unwrap();
    assert_eq!(
        copy,
        std::fs::read(&profile).unwrap(),
        "the run keeps the profile it ran with"
    );
    let env: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("env.json")).unwrap()).unwrap();
    assert_eq!(
        env["seccomp"]["sha256"].as_str().unwrap().len(),
        64,
        "{}",
        env["seccomp"]
    );

    let bad = write_study(
        results.path(),
        "bad.yaml",
        &study(", seccomp: nowhere.json", probes),
    );
    let out = Invocation::run(results.path(), &bad).cpus("auto").output();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("protocol.seccomp \"nowhere.json\""),
        "{}",
        describe(&out)
    );
}
