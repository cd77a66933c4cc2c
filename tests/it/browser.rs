//! report.html of a real run, opened in a real browser: Debian's Chromium, headless, driven through
//! chromedriver by the W3C WebDriver protocol (a dozen JSON commands over HTTP, spoken here
//! directly). A small study with a probe of every kind and a claim of every kind runs on the real
//! Engine; its report.html is opened from a file URL and checked: no console error, every figure
//! drawn with a size, one verdict row per claim, sorting by a header, and not one request leaving
//! the page — though the study's title and a claim's words hold a script, an image and a frame. A
//! screenshot of each figure design is kept under `target/browser-screenshots/`.

use crate::common;

use std::io::{BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::*;
use serde_json::{Value, json};

const STUDY: &str = r#"id: browser
title: "Every figure of a run <script>window.pwned = 1</script><img src=\"http://192.0.2.1/x.png\" onerror=\"window.pwned = 2\">"
source: {article: test, environment: test, cpus: "0-1"}
protocol: {scales: [100, 1000], repeats: 2, order: alternate, cpus: "0-1", settle_ms: 50, samples: 2, interval_ms: 20, timeout_s: 120}
probes:
  - {id: pthreads, image: c-costs, program: /usr/local/bin/pthreads, args: ["{tasks}"]}
  - {id: ucontext, image: c-costs, program: /usr/local/bin/ucontext, kind: timed, scales: [1], cpus: 1, results: [ns_per_switch, ns_per_round_trip]}
  - {id: asm-switch, image: c-costs, program: /usr/local/bin/asm-switch, kind: timed, scales: [1], cpus: 1, results: [ns_per_switch, ns_per_round_trip]}
  - {id: thread-limit, image: c-costs, program: /usr/local/bin/thread-limit, kind: reported, scales: [1], args: ["200"]}
  - {id: tokio-spawn, image: runtime-tokio, program: /usr/local/bin/spawn-latency, kind: latency, scales: [1], args: ["100"]}
claims:
  - {id: pthreads-1k, text: "1,000 threads — 10.1 MB", stat: rss_median, probe: pthreads, tasks: 1000, expected: 10.1, unit: MB, tolerance: {relative: 0.05}}
  - {id: per-thread, text: "about 8 KiB per thread", stat: per_task_bytes, probe: pthreads, tasks: 1000, expected: 8, unit: KiB, tolerance: {relative: 0.5}}
  - {id: asm, text: "7.75 ns per switch", stat: result_median, probe: asm-switch, metric: ns_per_switch, expected: 7.75, unit: ns, tolerance: {relative: 0.1}}
  - {id: limit, text: "at most 200 threads", stat: result_median, probe: thread-limit, metric: threads, expected: {below: 201}, unit: count}
  - {id: spawn-p99, text: "P99 spawn under 1 ms", stat: percentile, probe: tokio-spawn, percentile: 99, expected: {below: 1}, unit: ms}
  - {id: ucontext-vs-asm, text: "swapcontext 20x a hand-written switch", stat: ratio, of: result_median, metric: ns_per_switch, probe: ucontext, than: asm-switch, expected: 20, unit: x, tolerance: {relative: 0.5}}
  - {id: cheapest, text: "the assembly switch is the cheapest <iframe src=\"http://192.0.2.1/\"></iframe>", stat: order, of: result_median, metric: ns_per_switch, tasks: 1, expected: [asm-switch, ucontext], unit: rank}
"#;

/// The designs the study above must show, one screenshot each.
const DESIGNS: [&str; 7] = [
    "memory", "timed", "latency", "reported", "ratio", "order", "value",
];

/// chromedriver in its own process group; dropping it ends the session and kills the group
/// (chromedriver and every Chromium process it started), on every path.
struct Driver {
    child: Child,
    port: u16,
    session: Option<String>,
    _profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(id) = self.session.take() {
            let _ = request(self.port, "DELETE", &format!("/session/{id}"), None);
        }
        let pgid = self.child.id() as i32;
        // SAFETY: kill(2) on the process group this test created for chromedriver.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.1 exchange with chromedriver; the JSON body of its answer.
fn request(port: u16, method: &str, path: &str, body: Option<&Value>) -> std::io::Result<Value> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json; \
         charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    // Read the head, then exactly the body its Content-Length (or chunks) announce: chromedriver
    // may keep the connection open.
    let mut r = std::io::BufReader::new(s);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line.to_ascii_lowercase());
    }
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let mut body = Vec::new();
    if let Some(n) = length {
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    } else if head.contains("transfer-encoding: chunked") {
        loop {
            let mut size = String::new();
            r.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        r.read_to_end(&mut body)?;
    }
    let payload = String::from_utf8_lossy(&body);
    serde_json::from_str(&payload).map_err(std::io::Error::other)
}

impl Driver {
    fn start() -> Driver {
        let port = free_port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("starting chromedriver (apt-get install chromium chromium-driver)");
        let profile = tempfile::tempdir().unwrap();
        let mut driver = Driver {
            child,
            port,
            session: None,
            _profile: profile,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while request(port, "GET", "/status", None).map_or(true, |v| v["value"]["ready"] != true) {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer in 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = driver._profile.path().display().to_string();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         format!("--user-data-dir={profile}"), "--window-size=1400,1000"]
            },
            "goog:loggingPrefs": {"browser": "ALL"}
        }}});
        let v = driver.cmd("POST", "/session", Some(caps));
        driver.session = Some(v["sessionId"].as_str().expect("a session id").to_string());
        driver
    }

    /// A command; panics with the driver's error.
    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let v = request(self.port, method, path, body.as_ref())
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert!(v["value"]["error"].is_null(), "{method} {path}: {v}");
        v["value"].clone()
    }

    fn session(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let id = self.session.as_deref().unwrap();
        self.cmd(method, &format!("/session/{id}{path}"), body)
    }

    fn script(&self, js: &str) -> Value {
        self.session(
            "POST",
            "/execute/sync",
            Some(json!({"script": js, "args": []})),
        )
    }

    fn element(&self, css: &str) -> String {
        let v = self.session(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// The browser's console, through chromedriver's log endpoint.
    fn console(&self) -> Vec<Value> {
        let id = self.session.as_deref().unwrap();
        let v = request(
            self.port,
            "POST",
            &format!("/session/{id}/se/log"),
            Some(&json!({"type": "browser"})),
        )
        .unwrap();
        v["value"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("no browser log: {v}"))
    }
}

fn screenshots_dir() -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| repo().join("target"), PathBuf::from)
        .join("browser-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn column(d: &Driver, index: usize) -> Vec<String> {
    let js = format!(
        "return Array.from(document.querySelectorAll('#verdict-table tbody tr')).map(r => r.cells[{index}].textContent.trim())"
    );
    serde_json::from_value(d.script(&js)).unwrap()
}

fn check_report(report: &Path, claims: usize) {
    let started = Instant::now();
    let d = Driver::start();
    let url = format!("file://{}", report.display());
    d.session("POST", "/url", Some(json!({"url": url})));
    let state = d.script("return document.readyState");
    assert_eq!(state, "complete");

    let console: Vec<Value> = d
        .console()
        .into_iter()
        .filter(|e| e["level"] == "SEVERE" || e["level"] == "WARNING")
        .collect();
    assert!(console.is_empty(), "console errors: {console:?}");

    let requests = d.script(
        "return performance.getEntriesByType('resource').map(e => e.name).concat(\
         performance.getEntriesByType('navigation').map(e => e.name).filter(n => !n.startsWith('file:')))",
    );
    assert_eq!(requests, json!([]), "requests left the page");

    let figures = d.script(
        "return Array.from(document.querySelectorAll('figure')).map(f => { const s = f.querySelector('svg'); \
         const r = s ? s.getBoundingClientRect() : {width: 0, height: 0}; \
         return [f.id, f.dataset.design || '', r.width, r.height]; })",
    );
    let figures = figures.as_array().unwrap();
    for f in figures {
        assert!(
            f[2].as_f64().unwrap() > 0.0 && f[3].as_f64().unwrap() > 0.0,
            "figure drawn without a size: {f}"
        );
    }
    for design in DESIGNS {
        assert!(
            figures.iter().any(|f| f[1] == design),
            "no {design} figure among {figures:?}"
        );
    }

    let rows = d.script("return document.querySelectorAll('#verdict-table tbody tr').length");
    assert_eq!(rows, json!(claims), "one verdict row per claim");
    // The only script is the page's own sorter: the study's markup (its title and a claim's words
    // hold a script, an image and a frame) shows as text and runs nothing.
    assert_eq!(d.script("return document.scripts.length"), json!(1));
    assert_eq!(d.script("return typeof window.pwned"), json!("undefined"));
    assert_eq!(
        d.script("return document.querySelectorAll('img, iframe').length"),
        json!(0)
    );
    let h1 = d.script("return document.querySelector('h1').textContent");
    assert!(
        h1.as_str()
            .unwrap()
            .contains("<script>window.pwned = 1</script>"),
        "the title as text: {h1}"
    );

    let header = d.element("#verdict-table thead th:nth-child(1)");
    d.session("POST", &format!("/element/{header}/click"), Some(json!({})));
    let ids = column(&d, 0);
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "ascending after one click");
    d.session("POST", &format!("/element/{header}/click"), Some(json!({})));
    let ids = column(&d, 0);
    sorted.reverse();
    assert_eq!(ids, sorted, "descending after a second click");
    let ratio = d.element("#verdict-table thead th:nth-child(7)");
    d.session("POST", &format!("/element/{ratio}/click"), Some(json!({})));
    let ratios: Vec<f64> = column(&d, 6)
        .iter()
        .filter_map(|r| r.parse().ok())
        .collect();
    assert!(ratios.len() >= 2, "ratios {ratios:?}");
    assert!(
        ratios.windows(2).all(|w| w[0] <= w[1]),
        "numeric sort: {ratios:?}"
    );

    let dir = screenshots_dir();
    for design in DESIGNS {
        let el = d.element(&format!("figure[data-design='{design}'] svg"));
        let png = d.session("GET", &format!("/element/{el}/screenshot"), None);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{design}: not a PNG");
        let path = dir.join(format!("{design}.png"));
        std::fs::write(&path, bytes).unwrap();
        eprintln!("screenshot: {}", path.display());
    }
    drop(d);
    // The page itself too, for a look at the whole (its links point into the deleted run folder).
    std::fs::copy(report, dir.join("report.html")).unwrap();
    eprintln!(
        "browser checks took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn report_html_of_a_real_run_in_chromium() {
    let out = parkbench()
        .args(["build", "--only", "c-costs,runtime-tokio"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let tmp = tempfile::tempdir().unwrap();
    let out = run_study(tmp.path(), STUDY);
    assert!(out.status.success(), "{}", describe(&out));
    let run = only_run(tmp.path(), "browser");
    let out = parkbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let report = run.join("report.html");
    assert!(report.is_file(), "no report.html in {}", run.display());
    let claims = STUDY
        .lines()
        .filter(|l| l.starts_with("  - {id:") && l.contains("stat:"))
        .count();
    assert_eq!(claims, 7);
    check_report(&report, claims);
}
