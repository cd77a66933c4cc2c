//! The load generator against servers made here: one that echoes, one that answers wrongly, one
//! that drops its connections, one that never answers. Every echoed byte is checked; a failure is
//! a `note` and exit status 1.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};

/// A server on a free port; `serve` runs on each accepted connection, on a thread of its own.
fn server(serve: fn(TcpStream)) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    port
}

fn echo(mut s: TcpStream) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 || s.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

fn generator(port: u16, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_echo-load"))
        .args(["--cpus", "0", "--connections", "4", "--bytes", "32"])
        .args([
            "--warmup-s",
            "0",
            "--seconds",
            "1",
            "--port",
            &port.to_string(),
        ])
        .args(extra)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_echo_server_gives_a_rate_and_a_histogram_of_every_message() {
    let out = generator(server(echo), &[]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    let result = text.lines().find(|l| l.starts_with("result ")).unwrap();
    let value = |key: &str| -> f64 {
        result
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} in {result}"))
            .parse()
            .unwrap()
    };
    assert!(value("qps") > 0.0, "{result}");
    assert_eq!(value("connections"), 4.0);
    let counted: u64 = text
        .lines()
        .filter_map(|l| l.strip_prefix("latency "))
        .map(|l| {
            let count = l.split_whitespace().nth(1).unwrap();
            count
                .strip_prefix("count=")
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        counted as f64,
        value("messages"),
        "one value per echoed message"
    );
    assert!(
        value("server_hwm_bytes") > 0.0,
        "the test process's VmHWM: {result}"
    );
}

#[test]
fn a_wrong_byte_is_caught() {
    fn flips_one(mut s: TcpStream) {
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                return;
            }
            buf[n - 1] ^= 0x40;
            let _ = s.write_all(&buf[..n]);
        }
    }
    let out = generator(server(flips_one), &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("note connection "), "{text}");
    assert!(text.contains("of echo 0 is "), "{text}");
    assert!(!text.contains("result "), "{text}");
}

#[test]
fn a_dropped_connection_is_caught() {
    fn drops(s: TcpStream) {
        drop(s);
    }
    let out = generator(server(drops), &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("was closed by the server after 0 messages") || text.contains("failed"),
        "{text}"
    );
}

#[test]
fn bad_arguments_and_no_cpu_are_said() {
    let out = generator(server(echo), &["--connections", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_echo-load"))
        .args(["--cpus", "", "--port", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("(the run's CPUs besides the server's): the list is empty"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_connection_that_never_echoes_is_caught() {
    fn swallows(mut s: TcpStream) {
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                return;
            }
        }
    }
    let out = generator(server(swallows), &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("echoed nothing in the measured window"),
        "{text}"
    );
}

/// A server whose `serve` also gets the connection's place in the accept order (0, 1, …): the
/// generator opens its connections one after another, so that is the generator's connection id.
fn server_by_order(serve: fn(usize, TcpStream)) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().flatten().enumerate() {
            std::thread::spawn(move || serve(n, stream));
        }
    });
    port
}

/// Echoes `limit` messages of 32 bytes (whole, in order), then `then` happens.
fn echo_messages(s: &mut TcpStream, limit: usize) -> bool {
    let mut msg = [0u8; 32];
    for _ in 0..limit {
        if s.read_exact(&mut msg).is_err() || s.write_all(&msg).is_err() {
            return false;
        }
    }
    true
}

fn result_value(text: &str, key: &str) -> Option<f64> {
    let result = text.lines().find(|l| l.starts_with("result "))?;
    result
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .map(|v| v.parse().unwrap())
}

#[test]
fn several_loops_answer_every_request_and_count_it_once() {
    let out = generator(
        server(echo),
        &["--threads", "3", "--connections", "7", "--cpus", "0"],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    let value = |k: &str| result_value(&text, k).unwrap_or_else(|| panic!("{k} in {text}"));
    assert_eq!(value("connections"), 7.0, "{text}");
    assert_eq!(
        value("load_cpus"),
        1.0,
        "three loops on one CPU use one: {text}"
    );
    let counted: u64 = text
        .lines()
        .filter_map(|l| l.strip_prefix("latency "))
        .map(|l| l.split("count=").nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(counted > 0, "{text}");
    assert_eq!(
        counted as f64,
        value("messages"),
        "one value per echo, over every loop"
    );
    // The server is this test process: the rate per server CPU-second is the window's messages
    // over the CPU seconds that server_cpu_pct says it used.
    if let Some(per_cpu_s) = result_value(&text, "requests_per_server_cpu_s") {
        let cpu_s = value("server_cpu_pct") / 100.0 * value("seconds");
        let expected = value("messages") / cpu_s;
        assert!((per_cpu_s - expected).abs() <= 0.01 * expected, "{text}");
    } else {
        assert!(
            text.contains("note requests_per_server_cpu_s not measured"),
            "{text}"
        );
    }
}

#[test]
fn a_wrong_byte_on_any_loop_is_caught() {
    fn flips_on_the_sixth(n: usize, mut s: TcpStream) {
        if !echo_messages(&mut s, if n == 5 { 30 } else { usize::MAX }) {
            return;
        }
        let mut msg = [0u8; 32];
        if s.read_exact(&mut msg).is_ok() {
            msg[17] ^= 1;
            let _ = s.write_all(&msg);
        }
        let _ = echo_messages(&mut s, usize::MAX);
    }
    let out = generator(
        server_by_order(flips_on_the_sixth),
        &["--threads", "4", "--connections", "8"],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("note connection 5: byte 17 of echo 30 is "),
        "{text}"
    );
    assert!(!text.contains("result "), "{text}");
}

#[test]
fn a_server_that_drops_one_connection_midway_is_reported() {
    fn drops_the_fifth(n: usize, mut s: TcpStream) {
        echo_messages(&mut s, if n == 4 { 20 } else { usize::MAX });
    }
    for threads in ["1", "3"] {
        let out = generator(
            server_by_order(drops_the_fifth),
            &["--threads", threads, "--connections", "6"],
        );
        assert_eq!(out.status.code(), Some(1), "{threads} loops");
        let text = stdout(&out);
        // The server's close reaches the client as an end of stream, or as a reset when a message
        // the client had sent was still unread: either way it is connection 4, after 20 messages.
        assert!(
            text.contains("note connection 4 was closed by the server after 20 messages")
                || text
                    .contains("note connection 4: read failed after 20 messages: Connection reset"),
            "{threads} loops: {text}"
        );
        assert!(!text.contains("result "), "{text}");
    }
}

#[test]
fn a_thread_count_outside_one_to_the_connections_is_refused() {
    for bad in ["0", "5"] {
        let out = generator(server(echo), &["--threads", bad]);
        assert_eq!(out.status.code(), Some(2), "--threads {bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--threads"),
            "{out:?}"
        );
    }
}
