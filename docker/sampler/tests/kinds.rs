//! Runs the built sampler against small programs every Linux has (`sh`, `head`, `tr`, `sleep`)
//! and checks what its JSON says about them.

use std::process::Command;
use std::time::{Duration, Instant};

/// The sampler's JSON line and its exit status.
struct Run {
    json: String,
    success: bool,
    took: Duration,
}

fn sampler(args: &[&str]) -> Run {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_sampler"))
        .args(args)
        .output()
        .expect("running the sampler");
    let json = String::from_utf8(out.stdout).expect("UTF-8 output");
    assert!(
        json.ends_with('\n') && json.matches('\n').count() == 1,
        "one line of JSON: {json:?}"
    );
    Run {
        json: json.trim_end().to_owned(),
        success: out.status.success(),
        took: started.elapsed(),
    }
}

impl Run {
    /// The raw text of the value of `"key":` (the first one in the output).
    fn raw(&self, key: &str) -> &str {
        let pat = format!("\"{key}\":");
        let start = self.json.find(&pat).unwrap_or_else(|| {
            panic!("no {key:?} in {}", self.json);
        }) + pat.len();
        let rest = &self.json[start..];
        let (mut depth, mut in_str, mut escaped) = (0i32, false, false);
        for (i, c) in rest.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_str => escaped = true,
                '"' => in_str = !in_str,
                _ if in_str => {}
                '[' | '{' => depth += 1,
                ']' | '}' if depth > 0 => depth -= 1,
                ',' | ']' | '}' if depth == 0 => return &rest[..i],
                _ => {}
            }
        }
        rest
    }

    fn num(&self, key: &str) -> f64 {
        let raw = self.raw(key);
        raw.parse()
            .unwrap_or_else(|_| panic!("{key} is {raw}, not a number, in {}", self.json))
    }

    fn error(&self) -> &str {
        self.raw("error")
    }
}

const PEAK_KEYS: &str = r#"{"schema":1,"kind":"peak","cpus_requested":null,"cpus_in_force":"#;

#[test]
fn peak_of_a_shell_that_holds_20_mb() {
    let r = sampler(&[
        "--kind",
        "peak",
        "--interval-ms",
        "10",
        "--",
        "sh",
        "-c",
        r#"x=$(head -c 20000000 /dev/zero | tr "\0" a); sleep 0.2"#,
    ]);
    assert!(r.success, "{}", r.json);
    assert!(r.json.starts_with(PEAK_KEYS), "{}", r.json);
    assert_eq!(r.error(), "null");
    assert_eq!((r.raw("exit_code"), r.raw("signal")), ("0", "null"));
    // The shell holds 20 000 000 bytes in `x` for 0.2 s, during which it is polled.
    let held_kib = 20_000_000.0 / 1024.0;
    let (hwm, rss) = (r.num("vm_hwm_kib"), r.num("vm_rss_max_kib"));
    assert!(r.num("polls") >= 1.0);
    assert!(hwm >= held_kib, "{}", r.json);
    assert!(hwm >= rss, "{}", r.json);
    // ru_maxrss and VmHWM come from different kernel counters (lazy high-water marks, per-CPU
    // RSS counters that /proc reads approximately), so neither bounds the other: only that the
    // kernel reported one.
    assert!(r.num("ru_maxrss_kib") > 0.0, "{}", r.json);
    assert!(r.num("threads_max") >= 1.0);
    assert!(r.num("wall_ms") >= 200.0, "{}", r.json);
    assert!(r.num("user_ms") + r.num("sys_ms") > 0.0, "{}", r.json);
    assert_eq!(r.raw("results"), "[]");
    assert_eq!(r.raw("latency"), "[]");
}

#[test]
fn a_program_that_ends_before_the_first_interval() {
    let r = sampler(&["--kind", "peak", "--interval-ms", "5000", "--", "true"]);
    assert!(r.success, "{}", r.json);
    assert!(r.num("polls") <= 1.0);
    assert!(r.num("ru_maxrss_kib") > 0.0);
    assert!(r.num("wall_ms") < 5000.0);
    assert!(r.took < Duration::from_secs(4), "{:?}", r.took);
}

#[test]
fn exit_code_and_signal() {
    let r = sampler(&["--kind", "peak", "--", "sh", "-c", "exit 3"]);
    assert!(!r.success);
    assert_eq!((r.raw("exit_code"), r.raw("signal")), ("3", "null"));
    assert_eq!(r.error(), r#""probe exited with code 3""#);
    assert!(r.num("ru_maxrss_kib") > 0.0);

    let r = sampler(&["--kind", "timed", "--", "sh", "-c", "kill -9 $$"]);
    assert!(!r.success);
    assert_eq!((r.raw("exit_code"), r.raw("signal")), ("null", "9"));
    assert_eq!(r.error(), r#""probe was killed by signal 9""#);
}

#[test]
fn timeout_kills_the_program() {
    let r = sampler(&["--kind", "peak", "--timeout-s", "1", "--", "sleep", "5"]);
    assert!(!r.success);
    assert_eq!(r.error(), r#""timeout after 1 s""#);
    assert_eq!((r.raw("exit_code"), r.raw("signal")), ("null", "9"));
    assert!(r.num("wall_ms") >= 1000.0, "{}", r.json);
    assert!(r.took < Duration::from_secs(4), "{:?}", r.took);
}

#[test]
fn timed_keeps_result_lines_in_order() {
    let r = sampler(&[
        "--kind",
        "timed",
        "--",
        "sh",
        "-c",
        "echo result ns_per_op=1.5; echo warming up; echo result ns_per_op=2 name=x; echo",
    ]);
    assert!(r.success, "{}", r.json);
    assert!(r.json.contains(r#""kind":"timed""#));
    assert_eq!(
        r.raw("results"),
        r#"[{"ns_per_op":1.5},{"ns_per_op":2,"name":"x"}]"#
    );
    assert_eq!(r.raw("latency"), "[]");
    assert_eq!(r.raw("other_lines"), "2");
}

#[test]
fn latency_merges_buckets() {
    let script = "echo latency value_ns=500 count=2; echo result ops=3; \
                  echo latency value_ns=100 count=1; echo latency value_ns=500 count=1";
    let r = sampler(&["--kind", "latency", "--", "sh", "-c", script]);
    assert!(r.success, "{}", r.json);
    assert_eq!(r.raw("latency"), "[[100,1],[500,3]]");
    assert_eq!(r.raw("results"), r#"[{"ops":3}]"#);
    assert_eq!(r.raw("other_lines"), "0");

    // For the timed kind, latency lines are other lines.
    let r = sampler(&["--kind", "timed", "--", "sh", "-c", script]);
    assert_eq!((r.raw("latency"), r.raw("other_lines")), ("[]", "3"));

    let r = sampler(&[
        "--kind",
        "latency",
        "--",
        "sh",
        "-c",
        "echo latency value_ns=1 count=0",
    ]);
    assert!(!r.success);
    assert!(
        r.error()
            .starts_with(r#""protocol: malformed `latency` line"#),
        "{}",
        r.json
    );
}

#[test]
fn a_malformed_result_line_is_an_error() {
    let r = sampler(&[
        "--kind",
        "timed",
        "--",
        "sh",
        "-c",
        "echo result 12ns; echo result a=1",
    ]);
    assert!(!r.success);
    assert_eq!(
        r.error(),
        r#""protocol: malformed `result` line \"result 12ns\": \"12ns\" is not key=value""#
    );
    // The program still ran to its end.
    assert_eq!(r.raw("exit_code"), "0");
    assert_eq!(r.raw("results"), r#"[{"a":1}]"#);
}

#[test]
fn stdin_is_empty_and_long_lines_are_skipped() {
    // `read` gets end of file at once; a 100 000-byte line is counted and skipped.
    let script = r#"read x; echo result read_status=$?; head -c 100000 /dev/zero | tr "\0" a; echo; echo result after=1"#;
    let r = sampler(&[
        "--kind",
        "timed",
        "--timeout-s",
        "10",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert!(r.success, "{}", r.json);
    assert_eq!(r.raw("results"), r#"[{"read_status":1},{"after":1}]"#);
    assert_eq!(r.raw("other_lines"), "1");
}

#[test]
fn pinned_to_cpu_0() {
    let r = sampler(&["--kind", "peak", "--cpus", "0", "--", "sleep", "0.1"]);
    assert!(r.success, "{}", r.json);
    assert_eq!(r.raw("cpus_requested"), r#""0""#);
    assert_eq!(r.raw("cpus_in_force"), r#""0""#);
}

#[test]
fn bad_command_lines() {
    let r = sampler(&["--kind", "fast", "--", "true"]);
    assert!(!r.success);
    assert_eq!(
        r.error(),
        r#""usage: --kind: unknown kind \"fast\" (accepted: steady, peak, timed, latency)""#
    );
    let r = sampler(&["--kind", "peak", "--", "/nonexistent/program"]);
    assert!(!r.success);
    assert!(r.json.starts_with(PEAK_KEYS), "{}", r.json);
    assert!(r.error().starts_with(r#""starting probe"#), "{}", r.json);
    assert_eq!(r.raw("ru_maxrss_kib"), "null");
}

#[test]
fn steady_output_has_no_kind() {
    let script = "echo baseline; read x; echo ready tasks=1; read x; echo done completed=1";
    let r = sampler(&[
        "--settle-ms",
        "1",
        "--samples",
        "1",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert!(r.success, "{}", r.json);
    assert!(
        r.json
            .starts_with(r#"{"schema":1,"cpus_requested":null,"cpus_in_force":"#)
    );
    assert!(!r.json.contains(r#""kind""#), "{}", r.json);
    assert_eq!(r.raw("done"), r#"{"completed":1}"#);
}

#[test]
fn note_lines_are_kept_in_every_phase_of_the_handshake() {
    let r = sampler(&[
        "--settle-ms",
        "0",
        "--samples",
        "1",
        "--interval-ms",
        "1",
        "--",
        "sh",
        "-c",
        r#"echo "note starting"; echo baseline; read x; echo "ready tasks=10 created=3"; echo "note limit: pids.max 3 reached"; read x; echo "done completed=3"; echo "note bye""#,
    ]);
    assert!(r.success, "{}", r.json);
    assert_eq!(r.error(), "null");
    assert_eq!(
        r.raw("notes"),
        r#"["starting","limit: pids.max 3 reached","bye"]"#
    );
    assert_eq!(r.num("created"), 3.0);
    // Any other line between ready and release is still a protocol error.
    let r = sampler(&[
        "--settle-ms",
        "200",
        "--samples",
        "1",
        "--",
        "sh",
        "-c",
        r#"echo baseline; read x; echo "ready tasks=1"; echo chatter; read x; echo "done completed=1""#,
    ]);
    assert!(!r.success);
    assert!(r.error().contains("unexpected output"), "{}", r.json);
}

#[test]
fn note_lines_of_a_timed_program_are_not_other_lines() {
    let r = sampler(&[
        "--kind",
        "timed",
        "--",
        "sh",
        "-c",
        r#"echo "note 0 system calls seen"; echo "result syscalls_per_switch=0"; echo hello"#,
    ]);
    assert!(r.success, "{}", r.json);
    assert_eq!(r.raw("notes"), r#"["0 system calls seen"]"#);
    assert_eq!(r.num("other_lines"), 1.0);
    assert_eq!(r.raw("results"), r#"[{"syscalls_per_switch":0}]"#);
}

#[test]
fn timed_reads_what_disturbed_each_batch() {
    // Each line is read while the shell still runs (it ends after the last sleep).
    let script = "echo note calibrated; sleep 0.05; echo result ns=1; sleep 0.05; echo other; \
                  sleep 0.05; echo result ns=2; sleep 0.05";
    let r = sampler(&[
        "--kind",
        "timed",
        "--cpus",
        "0",
        "--drop-steal",
        "0.01",
        "--drop-involuntary",
        "0",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert!(r.success, "{}", r.json);
    let batches = r.raw("batches");
    // One object per result line, each with its window and counters (known on Linux).
    assert_eq!(batches.matches("\"window_ms\":").count(), 2, "{batches}");
    assert!(!batches.contains("null"), "{batches}");
    assert_eq!(
        r.raw("batch_rule"),
        r#"{"steal_above":0.01,"wait_above":null,"involuntary_switches_above":0}"#
    );
    // Other kinds, and a timed program without a rule (a reported one), read no batches.
    for kind in ["peak", "timed"] {
        let r = sampler(&["--kind", kind, "--", "sh", "-c", script]);
        assert_eq!((r.raw("batches"), r.raw("batch_rule")), ("[]", "null"));
    }
}
