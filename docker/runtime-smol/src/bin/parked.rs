//! parkbench probe for article 003's memory table on smol: N tasks alive at once, each waiting.
//!
//! ```text
//! parked --tasks N --wait signal|sleep [--sleep-ms 5000]
//! ```
//!
//! Probe protocol (docker/README.md): `baseline`, a line on stdin, N tasks spawned
//! (`smol::spawn(…).detach()`, as the article's server spawns), `ready tasks=N created=K threads=T wait=…`
//! once every task has run to its wait, a line on stdin, the release, `done completed=N`.
//!
//! The article ("同时维护 10 万个异步任务") does not say what its tasks do. Two shapes, both
//! measured:
//!
//! - `--wait signal`: every task waits in `recv()` on a clone of one `smol::channel` receiver
//!   (polled once, so that it is listening, before the task counts itself); the release closes
//!   the channel. smol has no `Notify`; its channel is its own broadcast-by-close.
//! - `--wait sleep`: every task sleeps `--sleep-ms` in `smol::Timer::after`; the release line
//!   releases nothing, `done` comes once every sleep has ended. `created` is the tasks still asleep
//!   at `ready` (below N, with a `note`, when the sleeps began to end before the last task ran).
//!
//! The runtime is smol's global executor with its defaults (`SMOL_THREADS` unset: one thread),
//! as `smol::spawn` uses it; the main thread runs `smol::block_on` for each phase, as the
//! article's server does, and reads stdin between.

use std::future::poll_fn;
use std::pin::pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use probes::{note, os_threads, parked_args, say, usage_error, wait_line};
use smol::Timer;
use smol::channel::{Receiver, Sender, bounded};

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
    let mut timer = pin!(Timer::after(sleep));
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
    smol::block_on(smol::spawn(async {}));
    say("baseline")?;
    wait_line()?;
    smol::block_on(async {
        for _ in 0..n {
            match sleep {
                None => smol::spawn(wait_signal(release_rx.clone(), s.clone())).detach(),
                Some(d) => smol::spawn(wait_sleep(s.clone(), d)).detach(),
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
    smol::block_on(async {
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
