//! parkbench probe for article 003's memory table on async-std: N tasks alive at once, each
//! waiting.
//!
//! ```text
//! parked --tasks N --wait signal|sleep [--sleep-ms 5000]
//! ```
//!
//! Probe protocol (docker/README.md): `baseline`, a line on stdin, N tasks spawned (detached:
//! `async_std::task::spawn`, its `JoinHandle` dropped), `ready tasks=N created=K threads=T wait=…`
//! once every task has run to its wait, a line on stdin, the release, `done completed=N`.
//!
//! The article ("同时维护 10 万个异步任务") does not say what its tasks do. Two shapes, both
//! measured:
//!
//! - `--wait signal`: every task waits in `recv()` on a clone of one `async_std::channel`
//!   receiver (polled once, so that it is listening, before the task counts itself); the release
//!   closes the channel. async-std has no `Notify`; its channel is its own broadcast-by-close.
//! - `--wait sleep`: every task sleeps `--sleep-ms` in `async_std::task::sleep`; the release line
//!   releases nothing, `done` comes once every sleep has ended. `created` is the tasks still asleep
//!   at `ready` (below N, with a `note`, when the sleeps began to end before the last task ran).
//!
//! The runtime is async-std's global executor with its defaults (as `#[async_std::main]` uses
//! it); the main thread runs `async_std::task::block_on` for each phase and reads stdin between.

use std::future::poll_fn;
use std::pin::pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use async_std::channel::{Receiver, Sender, bounded};
use async_std::task;
use probes::{note, os_threads, parked_args, say, usage_error, wait_line};

const USAGE: &str = "usage: parked --tasks N --wait signal|sleep [--sleep-ms MS]";

struct Shared {
    tasks: u64,
    started: AtomicU64,
    all_started: Sender<()>,
    completed: AtomicU64,
    all_completed: Sender<()>,
}

impl Shared {
    fn count(&self, counter: &AtomicU64, all: &Sender<()>) {
        if counter.fetch_add(1, Ordering::AcqRel) + 1 == self.tasks {
            let _ = all.try_send(());
        }
    }
}

async fn wait_signal(release: Receiver<()>, s: Arc<Shared>) {
    let mut recv = pin!(release.recv());
    let first = poll_fn(|cx| Poll::Ready(recv.as_mut().poll(cx))).await;
    s.count(&s.started, &s.all_started);
    if first.is_pending() {
        // The channel is closed, never sent on: the wait ends with an error, by design.
        let _ = recv.await;
    }
    s.count(&s.completed, &s.all_completed);
}

async fn wait_sleep(s: Arc<Shared>, sleep: Duration) {
    let mut timer = pin!(task::sleep(sleep));
    let first = poll_fn(|cx| Poll::Ready(timer.as_mut().poll(cx))).await;
    s.count(&s.started, &s.all_started);
    if first.is_pending() {
        timer.await;
    }
    s.count(&s.completed, &s.all_completed);
}

fn run(n: u64, sleep: Option<Duration>) -> std::io::Result<()> {
    let (started_tx, started_rx) = bounded(1);
    let (completed_tx, completed_rx) = bounded(1);
    let s = Arc::new(Shared {
        tasks: n,
        started: AtomicU64::new(0),
        all_started: started_tx,
        completed: AtomicU64::new(0),
        all_completed: completed_tx,
    });
    let (release_tx, release_rx) = bounded::<()>(1);
    // Starts the global executor before the baseline, as a program that spawns tasks has it.
    task::block_on(task::spawn(async {}));
    say("baseline")?;
    wait_line()?;
    task::block_on(async {
        for _ in 0..n {
            match sleep {
                None => drop(task::spawn(wait_signal(release_rx.clone(), s.clone()))),
                Some(d) => drop(task::spawn(wait_sleep(s.clone(), d))),
            }
        }
        if n > 0 {
            let _ = started_rx.recv().await;
        }
    });
    drop(release_rx);
    let asleep = n - s.completed.load(Ordering::Acquire);
    if asleep < n {
        note(&format!(
            "{} sleeps had ended before the last task ran: lengthen --sleep-ms",
            n - asleep
        ));
    }
    say(&format!(
        "ready tasks={n} created={asleep} threads={} wait={}",
        os_threads(),
        if sleep.is_some() { "sleep" } else { "channel" }
    ))?;
    wait_line()?;
    release_tx.close();
    task::block_on(async {
        if n > 0 {
            let _ = completed_rx.recv().await;
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
