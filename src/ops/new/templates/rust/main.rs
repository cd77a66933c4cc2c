//! {{name}}: a {{kind}} probe, as `parkbench new probe` wrote it. A task here is an OS thread
//! (std only); replace the work with your program's. What a {{kind}} probe prints: docs/study-files.md
//! (kinds of measurement) and docker/README.md (the probe protocol, `result`, `latency` and `note`
//! lines).
use std::io::Write;
use std::thread;

/// The first argument as a number, or `default`.
fn arg(index: usize, default: u64) -> u64 {
    match std::env::args().nth(index) {
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("probe: argument {index} must be a whole number, got {a:?}");
            std::process::exit(2)
        }),
        None => default,
    }
}

/// Prints a line on stdout and flushes it: the sampler reads stdout line by line.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|_| out.flush())
        .expect("stdout");
}

// @kind steady
use std::io::BufRead;
use std::sync::{Arc, Condvar, Mutex};

/// Waits for one line on stdin (the sampler's go-ahead).
fn wait_line() {
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        eprintln!("probe: stdin closed");
        std::process::exit(1);
    }
}

/// How many threads are parked, and whether the gate is open.
type Gate = (Mutex<(u64, bool)>, Condvar);

/// probe N: the probe protocol. N threads parked on one condition variable, released at once.
fn main() {
    let n = arg(1, 1000);
    say("baseline");
    wait_line();
    let gate: Arc<Gate> = Arc::new((Mutex::new((0, false)), Condvar::new()));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let gate = gate.clone();
            thread::spawn(move || {
                let (state, cv) = &*gate;
                let mut state = state.lock().unwrap();
                state.0 += 1;
                cv.notify_all();
                while !state.1 {
                    state = cv.wait(state).unwrap();
                }
            })
        })
        .collect();
    let (state, cv) = &*gate;
    drop(cv.wait_while(state.lock().unwrap(), |s| s.0 < n).unwrap());
    say(&format!("ready tasks={n}"));
    wait_line();
    state.lock().unwrap().1 = true;
    cv.notify_all();
    let completed = threads.into_iter().filter_map(|t| t.join().ok()).count();
    say(&format!("done completed={completed}"));
}
// @end
// @kind peak
use std::time::Duration;

/// probe N [SLEEP_MS]: N threads, each sleeping SLEEP_MS (500), joined; the sampler measures the
/// peak memory of the whole run.
fn main() {
    let (n, sleep_ms) = (arg(1, 1000), arg(2, 500));
    let threads: Vec<_> = (0..n)
        .map(|_| thread::spawn(move || thread::sleep(Duration::from_millis(sleep_ms))))
        .collect();
    for t in threads {
        t.join().expect("a thread panicked");
    }
    say("note all threads slept and were joined");
}
// @end
// @kind timed
use std::time::Instant;

/// probe [BATCHES [OPS]]: BATCHES (20) batches of OPS (200) thread spawns and joins, one `result`
/// line each.
fn main() {
    let (batches, ops) = (arg(1, 20), arg(2, 200));
    for _ in 0..batches {
        let start = Instant::now();
        for _ in 0..ops {
            thread::spawn(|| ()).join().expect("a thread panicked");
        }
        let ns = start.elapsed().as_nanos() as f64 / ops as f64;
        say(&format!("result ns_per_op={ns:.1}"));
    }
}
// @end
// @kind latency
use std::time::Instant;

/// probe [OPS]: OPS (1000) times, the time from spawning a thread to its first instruction, each
/// printed as one `latency` line (the sampler merges them into one histogram).
fn main() {
    let ops = arg(1, 1000);
    for _ in 0..ops {
        let start = Instant::now();
        let started = thread::spawn(move || start.elapsed())
            .join()
            .expect("a thread panicked");
        say(&format!("latency value_ns={} count=1", started.as_nanos()));
    }
}
// @end
// @kind reported
use std::sync::{Arc, Mutex};

/// probe N: N threads, each counting itself; prints what it counted as one `result` line (values
/// the program computes itself: sizes, counts, limits).
fn main() {
    let n = arg(1, 1000);
    let count = Arc::new(Mutex::new(0u64));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let count = count.clone();
            thread::spawn(move || *count.lock().unwrap() += 1)
        })
        .collect();
    for t in threads {
        t.join().expect("a thread panicked");
    }
    let completed = *count.lock().unwrap();
    say(&format!(
        "result completed={completed} thread_bytes={}",
        std::mem::size_of::<thread::JoinHandle<()>>()
    ));
}
// @end
