//! parkbench probe for article 003's memory table on Tokio: N tasks alive at once, each waiting.
//!
//! ```text
//! parked --tasks N --wait signal|sleep [--sleep-ms 5000]
//! ```
//!
//! Probe protocol (docker/README.md): `baseline`, a line on stdin, N tasks spawned (detached,
//! `tokio::spawn`), `ready tasks=N created=K workers=W threads=T wait=…` once every task has run
//! to its wait, a line on stdin, the release, `done completed=N`.
//!
//! The article ("同时维护 10 万个异步任务", base memory, memory per task, total) does not say what
//! its tasks do. Two shapes, both measured:
//!
//! - `--wait signal`: every task waits on one shared `tokio::sync::Notify` (pinned and enabled
//!   before the task counts itself), released by `notify_waiters()`.
//! - `--wait sleep`: every task sleeps `--sleep-ms` in `tokio::time::sleep` (polled once, so that
//!   its timer is registered, before the task counts itself); the release line
//!   releases nothing, `done` comes once every sleep has ended. `created` is the tasks still asleep
//!   at `ready` (below N, with a `note`, when the sleeps began to end before the last task ran).
//!
//! The runtime is `#[tokio::main]`'s (a multi-thread runtime, one worker per CPU of the process's
//! affinity, IO and timer drivers on) written out as `Builder::new_multi_thread().enable_all()`, so
//! that stdin is read on the main thread outside the runtime.

use std::future::poll_fn;
use std::pin::pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use probes::{note, os_threads, parked_args, say, usage_error, wait_line};
use tokio::sync::Notify;

const USAGE: &str = "usage: parked --tasks N --wait signal|sleep [--sleep-ms MS]";

struct Shared {
    tasks: u64,
    release: Notify,
    started: AtomicU64,
    all_started: Notify,
    completed: AtomicU64,
    all_completed: Notify,
}

impl Shared {
    fn count(&self, counter: &AtomicU64, all: &Notify) {
        if counter.fetch_add(1, Ordering::AcqRel) + 1 == self.tasks {
            all.notify_one();
        }
    }
}

async fn wait_signal(s: Arc<Shared>) {
    let mut notified = pin!(s.release.notified());
    notified.as_mut().enable();
    s.count(&s.started, &s.all_started);
    notified.await;
    s.count(&s.completed, &s.all_completed);
}

async fn wait_sleep(s: Arc<Shared>, sleep: Duration) {
    // Polled once, so that the timer is registered before the task counts itself.
    let mut timer = pin!(tokio::time::sleep(sleep));
    let first = poll_fn(|cx| Poll::Ready(timer.as_mut().poll(cx))).await;
    s.count(&s.started, &s.all_started);
    if first.is_pending() {
        timer.await;
    }
    s.count(&s.completed, &s.all_completed);
}

fn run(n: u64, sleep: Option<Duration>) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let workers = rt.metrics().num_workers();
    let s = Arc::new(Shared {
        tasks: n,
        release: Notify::new(),
        started: AtomicU64::new(0),
        all_started: Notify::new(),
        completed: AtomicU64::new(0),
        all_completed: Notify::new(),
    });
    say("baseline")?;
    wait_line()?;
    rt.block_on(async {
        for _ in 0..n {
            match sleep {
                None => drop(tokio::spawn(wait_signal(s.clone()))),
                Some(d) => drop(tokio::spawn(wait_sleep(s.clone(), d))),
            }
        }
        if n > 0 {
            s.all_started.notified().await;
        }
    });
    let asleep = n - s.completed.load(Ordering::Acquire);
    if asleep < n {
        note(&format!(
            "{} sleeps had ended before the last task ran: lengthen --sleep-ms",
            n - asleep
        ));
    }
    say(&format!(
        "ready tasks={n} created={asleep} workers={workers} threads={} wait={}",
        os_threads(),
        if sleep.is_some() { "sleep" } else { "notify" }
    ))?;
    wait_line()?;
    s.release.notify_waiters();
    rt.block_on(async {
        if n > 0 {
            s.all_completed.notified().await;
        }
    });
    say(&format!(
        "done completed={}",
        s.completed.load(Ordering::Acquire)
    ))
}

fn main() -> ExitCode {
    let (n, sleep) = match parked_args() {
        Ok(a) => a,
        Err(e) => return usage_error("parked", USAGE, &e),
    };
    match run(n, sleep) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parked: {e}");
            ExitCode::FAILURE
        }
    }
}
