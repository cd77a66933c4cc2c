//! parkbench probe for article 002 ("100 万个任务"): N Tokio tasks, task `i` sleeping
//! `500 + i % 100` ms, on the default multi-thread runtime; measured 50 ms after the last spawn.
//!
//! ```text
//! sleeping --tasks N
//! ```
//!
//! Probe protocol (see docker/README.md): prints `baseline`, waits for a line on stdin, spawns the
//! tasks, sleeps 50 ms (then, if some task has not run yet, waits until all have) and prints
//! `ready tasks=N created=A workers=W threads=T completed_before_ready=C
//! started_before_ready=S`, waits for a line on stdin, waits until every task has finished and
//! prints `done completed=N`. The release line releases nothing: the tasks end on their own
//! timers, 500 to 599 ms after each first ran, so with a long settle some have ended before the
//! release; `done` still comes only once all N have.
//!
//! The article's program, and what differs from it:
//!
//! - `#[tokio::main]` is written out as what it expands to,
//!   `Builder::new_multi_thread().enable_all().build()` and `block_on`, so that the handshake's
//!   stdin is read on the main thread outside the runtime. Workers: Tokio's default, the CPUs
//!   available to the process (its affinity, so the sampler's `--cpus`); `workers` is the count
//!   the runtime reports. The article had 12 cores: 12 workers + the main thread = 13 threads.
//! - The loop counts in `u64` (the article's `usize` `i` does not type-check against
//!   `Duration::from_millis`).
//! - Each task also adds one to two static counters, when it first runs and when its sleep ends,
//!   so that `started_before_ready`, `completed_before_ready` and `done` can be told; statics keep
//!   the task's captures as in the article (`i` only).
//! - The article prints threads and RSS itself; here the program prints its threads (as the
//!   article's `threads()`) and the sampler reads RSS, at `ready`.
//! - The article returns from `main` after measuring (its tasks are dropped with the runtime);
//!   here the tasks run to their end, as the protocol asks.
//!
//! Left open by the article: its Tokio features (it shows no Cargo.toml). This image has
//! `rt-multi-thread`, `sync` and `time`, so `enable_all()` starts the timer and no IO driver. The
//! article's "50 ms until every task is registered" is kept, and where it is not enough the program
//! waits on until every task has run (and so armed its timer). `created` is the tasks still
//! sleeping at `ready`: when the first ones ended their sleep before the last one ran, it is below
//! N, a `note` says so, and the reading (which does not hold N tasks) is invalid.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use probes::{Flags, os_threads, say, usage_error, wait_line};
use tokio::sync::Notify;
use tokio::time::sleep;

const USAGE: &str = "usage: sleeping --tasks N";

/// N, set before the first task is spawned.
static TASKS: AtomicU64 = AtomicU64::new(0);
/// Tasks that have run (and created their sleep).
static STARTED: AtomicU64 = AtomicU64::new(0);
/// Tasks whose sleep has ended.
static COMPLETED: AtomicU64 = AtomicU64::new(0);
/// Signalled (with a stored permit) by the task that completes last.
static ALL_COMPLETED: Notify = Notify::const_new();

fn run(n: u64) -> std::io::Result<()> {
    TASKS.store(n, Ordering::Release);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let workers = rt.metrics().num_workers();

    say("baseline")?;
    wait_line()?;

    rt.block_on(async {
        for i in 0..n {
            tokio::spawn(async move {
                STARTED.fetch_add(1, Ordering::Relaxed);
                sleep(Duration::from_millis(500 + i % 100)).await;
                if COMPLETED.fetch_add(1, Ordering::AcqRel) + 1 == TASKS.load(Ordering::Acquire) {
                    ALL_COMPLETED.notify_one();
                }
            });
        }
        sleep(Duration::from_millis(50)).await; // the article: until every task has registered
        // "Measured once all are registered": where 50 ms was not enough, wait until every task
        // has run and armed its timer.
        while STARTED.load(Ordering::Acquire) < n {
            sleep(Duration::from_millis(1)).await;
        }
    });
    let (started, completed) = (
        STARTED.load(Ordering::Acquire),
        COMPLETED.load(Ordering::Acquire),
    );
    let alive = started - completed;
    if alive < n {
        say(&format!(
            "note at ready {alive} of {n} tasks were sleeping: {completed} had already ended their \
             500-599 ms sleep before the last one was registered, so the reading does not hold N tasks"
        ))?;
    }
    say(&format!(
        "ready tasks={n} created={alive} workers={workers} threads={} \
         completed_before_ready={completed} started_before_ready={started}",
        os_threads(),
    ))?;
    wait_line()?;

    rt.block_on(async {
        if n > 0 {
            ALL_COMPLETED.notified().await;
        }
    });
    say(&format!(
        "done completed={}",
        COMPLETED.load(Ordering::Acquire)
    ))?;
    drop(rt);
    Ok(())
}

fn main() -> ExitCode {
    let tasks = Flags::parse(&["--tasks"]).and_then(|flags| flags.count("--tasks"));
    let n = match tasks {
        Ok(n) => n,
        Err(e) => return usage_error("sleeping", USAGE, &e),
    };
    match run(n) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sleeping: {e}");
            ExitCode::FAILURE
        }
    }
}
