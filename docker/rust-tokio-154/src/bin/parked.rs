//! parkbench probe for article 004: N independent Tokio tasks (`tokio::spawn`), each parked at one
//! await, on a multi-thread runtime with W workers; released at once.
//!
//! ```text
//! parked --tasks N --workers W --wait notify|oneshot
//! ```
//!
//! Probe protocol (see docker/README.md): prints `baseline`, waits for a line on stdin, spawns
//! the tasks and prints `ready …` once every task is registered with what it waits on, waits for
//! a line on stdin, releases the tasks, waits until all have finished and prints
//! `done completed=<count>`. Ready metrics: `tasks`, `registered`, `workers`, `wait` (`notify` or
//! `oneshot`) and `task_future_size` (bytes, the unpolled future each task runs).
//!
//! The article (100,000 tasks on 10 workers, "each task stopped at one await point, all parked";
//! RSS before and with every task alive) shows no program. What it leaves open, and what this
//! program does:
//!
//! - What a task waits on. `--wait notify`: one shared `tokio::sync::Notify`; each task pins and
//!   enables its `Notified` before it counts itself as registered (as the article 000 probe does),
//!   so `notify_waiters()` cannot miss a counted task. `--wait oneshot`: one
//!   `tokio::sync::oneshot` channel per task; the task polls its receiver once, which registers its
//!   waker, before it counts itself; the main thread keeps the N senders (a `Vec`, 8 bytes each,
//!   made after `baseline`, so in the measured RSS, as any program that releases N tasks one by
//!   one must keep them) and releases by sending on each.
//! - What a task holds: nothing beyond its wait and the shared counters (`task_future_size`).
//! - Where the baseline is: after the runtime and its workers are up, before the first task.
//! - Spawning: detached (`JoinHandle` dropped), from the main thread inside `block_on`; stdin is
//!   read on the main thread outside the runtime, so no worker blocks on it.
//! - Tokio's features: `rt-multi-thread`, `sync`, `time`; no IO driver, timer not enabled.

use std::future::poll_fn;
use std::pin::{Pin, pin};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;

use probes::{Flags, say, usage_error, wait_line};
use tokio::sync::{Notify, oneshot};

const USAGE: &str = "usage: parked --tasks N --workers W --wait notify|oneshot";

/// What every task is parked on.
#[derive(Clone, Copy)]
enum Wait {
    Notify,
    Oneshot,
}

impl Wait {
    fn name(self) -> &'static str {
        match self {
            Wait::Notify => "notify",
            Wait::Oneshot => "oneshot",
        }
    }
}

struct Shared {
    tasks: u64,
    /// The one signal every task is parked on with `--wait notify`.
    release: Notify,
    registered: AtomicU64,
    /// Signalled (with a stored permit) by the task that registers last.
    all_registered: Notify,
    completed: AtomicU64,
    /// Signalled (with a stored permit) by the task that completes last.
    all_completed: Notify,
}

impl Shared {
    fn count_registered(&self) {
        if self.registered.fetch_add(1, Ordering::AcqRel) + 1 == self.tasks {
            self.all_registered.notify_one();
        }
    }

    fn count_completed(&self) {
        if self.completed.fetch_add(1, Ordering::AcqRel) + 1 == self.tasks {
            self.all_completed.notify_one();
        }
    }
}

/// One task of `--wait notify`: register for the release, count, wait, count completion.
async fn wait_notify(shared: Arc<Shared>) {
    let mut notified = pin!(shared.release.notified());
    notified.as_mut().enable();
    shared.count_registered();
    notified.await;
    shared.count_completed();
}

/// One task of `--wait oneshot`: poll the receiver once (its waker is then registered with the
/// channel), count, wait for the value, count completion.
async fn wait_oneshot(mut rx: oneshot::Receiver<()>, shared: Arc<Shared>) {
    let first = poll_fn(|cx| Poll::Ready(Pin::new(&mut rx).poll(cx))).await;
    shared.count_registered();
    if first.is_pending() {
        // A dropped sender also ends the wait; either way the task is released.
        let _ = rx.await;
    }
    shared.count_completed();
}

struct Args {
    tasks: u64,
    workers: usize,
    wait: Wait,
}

fn parse_args() -> Result<Args, String> {
    let flags = Flags::parse(&["--tasks", "--workers", "--wait"])?;
    let tasks = flags.count("--tasks")?;
    let workers = flags.count("--workers")?;
    if workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    let workers = usize::try_from(workers).map_err(|_| "--workers is too large".to_owned())?;
    let wait = match flags.get("--wait") {
        Some("notify") => Wait::Notify,
        Some("oneshot") => Wait::Oneshot,
        Some(other) => return Err(format!("--wait: {other:?} is neither notify nor oneshot")),
        None => return Err("--wait is required".into()),
    };
    Ok(Args {
        tasks,
        workers,
        wait,
    })
}

fn run(args: Args) -> std::io::Result<()> {
    let n = args.tasks;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.workers)
        .build()?;
    let shared = Arc::new(Shared {
        tasks: n,
        release: Notify::new(),
        registered: AtomicU64::new(0),
        all_registered: Notify::new(),
        completed: AtomicU64::new(0),
        all_completed: Notify::new(),
    });
    let task_future_size = match args.wait {
        Wait::Notify => std::mem::size_of_val(&wait_notify(shared.clone())),
        Wait::Oneshot => std::mem::size_of_val(&wait_oneshot(oneshot::channel().1, shared.clone())),
    };

    say("baseline")?;
    wait_line()?;

    let senders = rt.block_on(async {
        let mut senders = Vec::new();
        match args.wait {
            Wait::Notify => {
                for _ in 0..n {
                    // Detached: the JoinHandle is dropped, the task runs on its own.
                    drop(tokio::spawn(wait_notify(shared.clone())));
                }
            }
            Wait::Oneshot => {
                senders.reserve_exact(usize::try_from(n).unwrap_or(usize::MAX));
                for _ in 0..n {
                    let (tx, rx) = oneshot::channel();
                    senders.push(tx);
                    drop(tokio::spawn(wait_oneshot(rx, shared.clone())));
                }
            }
        }
        if n > 0 {
            shared.all_registered.notified().await;
        }
        senders
    });
    say(&format!(
        "ready tasks={n} registered={} workers={} wait={} task_future_size={task_future_size}",
        shared.registered.load(Ordering::Acquire),
        args.workers,
        args.wait.name(),
    ))?;
    wait_line()?;

    match args.wait {
        Wait::Notify => shared.release.notify_waiters(),
        Wait::Oneshot => {
            for tx in senders {
                // The receiver lives until its task has seen the value; a send cannot fail here.
                let _ = tx.send(());
            }
        }
    }
    rt.block_on(async {
        if n > 0 {
            shared.all_completed.notified().await;
        }
    });
    say(&format!(
        "done completed={}",
        shared.completed.load(Ordering::Acquire)
    ))?;
    drop(rt);
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => return usage_error("parked", USAGE, &e),
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parked: {e}");
            ExitCode::FAILURE
        }
    }
}
