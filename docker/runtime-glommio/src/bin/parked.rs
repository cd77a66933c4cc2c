//! parkbench probe for article 003's memory table on glommio: N tasks alive at once, each waiting.
//!
//! ```text
//! parked --tasks N --wait signal|sleep [--sleep-ms 5000]
//! ```
//!
//! Probe protocol (docker/README.md): `baseline`, a line on stdin, N tasks spawned
//! (`glommio::spawn_local(…).detach()`), `ready tasks=N created=K threads=T wait=…` once every
//! task has run to its wait, a line on stdin, the release, `done completed=N`.
//!
//! The article ("同时维护 10 万个异步任务") does not say what its tasks do. Two shapes, both
//! measured:
//!
//! - `--wait signal`: every task waits on one shared `glommio::sync::Semaphore` with no permits
//!   (`acquire(1)`, polled once so that it is queued before the task counts itself); the release
//!   is `signal(N)`.
//! - `--wait sleep`: every task sleeps `--sleep-ms` in `glommio::timer::sleep`; the release line
//!   releases nothing, `done` comes once every sleep has ended. `created` is the tasks still asleep
//!   at `ready` (below N, with a `note`, when the sleeps began to end before the last task ran).
//!
//! The executor is `LocalExecutorBuilder::default()` (glommio's thread-per-core model: one
//! executor, on the thread that runs it, unbound) made on the main thread. Stdin is read on that
//! thread while the tasks wait: blocking it holds every task where it is, which is the point.
//! io_uring refused (checked with one `io_uring_setup` first), or an executor that cannot be made
//! (locked memory), is said in a `note`, exit 1.

use std::cell::Cell;
use std::future::poll_fn;
use std::pin::pin;
use std::process::ExitCode;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

use glommio::LocalExecutorBuilder;
use glommio::sync::Semaphore;
use probes::{io_uring_available, note, os_threads, parked_args, say, usage_error, wait_line};

const USAGE: &str = "usage: parked --tasks N --wait signal|sleep [--sleep-ms MS]";

struct Shared {
    tasks: u64,
    release: Semaphore,
    started: Cell<u64>,
    all_started: Semaphore,
    completed: Cell<u64>,
    all_completed: Semaphore,
}

impl Shared {
    fn count(&self, counter: &Cell<u64>, all: &Semaphore) {
        counter.set(counter.get() + 1);
        if counter.get() == self.tasks {
            all.signal(1);
        }
    }
}

async fn wait_signal(s: Rc<Shared>) {
    let mut acquire = pin!(s.release.acquire(1));
    let first = poll_fn(|cx| Poll::Ready(acquire.as_mut().poll(cx))).await;
    s.count(&s.started, &s.all_started);
    if first.is_pending() {
        // An error (a closed semaphore) also ends the wait; either way the task is released.
        let _ = acquire.await;
    }
    s.count(&s.completed, &s.all_completed);
}

async fn wait_sleep(s: Rc<Shared>, sleep: Duration) {
    let mut timer = pin!(glommio::timer::sleep(sleep));
    let first = poll_fn(|cx| Poll::Ready(timer.as_mut().poll(cx))).await;
    s.count(&s.started, &s.all_started);
    if first.is_pending() {
        timer.await;
    }
    s.count(&s.completed, &s.all_completed);
}

async fn run(n: u64, sleep: Option<Duration>) -> std::io::Result<()> {
    let s = Rc::new(Shared {
        tasks: n,
        release: Semaphore::new(0),
        started: Cell::new(0),
        all_started: Semaphore::new(0),
        completed: Cell::new(0),
        all_completed: Semaphore::new(0),
    });
    say("baseline")?;
    wait_line()?;
    for _ in 0..n {
        match sleep {
            None => glommio::spawn_local(wait_signal(s.clone())).detach(),
            Some(d) => glommio::spawn_local(wait_sleep(s.clone(), d)).detach(),
        };
    }
    if n > 0 {
        let _ = s.all_started.acquire(1).await;
    }
    let asleep = n - s.completed.get();
    if asleep < n {
        note(&format!(
            "{} sleeps had ended before the last task ran: lengthen --sleep-ms",
            n - asleep
        ));
    }
    say(&format!(
        "ready tasks={n} created={asleep} threads={} wait={}",
        os_threads(),
        if sleep.is_some() {
            "sleep"
        } else {
            "semaphore"
        }
    ))?;
    wait_line()?;
    s.release.signal(n);
    if n > 0 {
        let _ = s.all_completed.acquire(1).await;
    }
    say(&format!("done completed={}", s.completed.get()))
}

fn main() -> ExitCode {
    let (n, sleep) = match parked_args() {
        Ok(a) => a,
        Err(e) => return usage_error("parked", USAGE, &e),
    };
    if let Err(e) = io_uring_available() {
        note(&e);
        eprintln!("parked: {e}");
        return ExitCode::FAILURE;
    }
    let ex = match LocalExecutorBuilder::default().make() {
        Ok(ex) => ex,
        Err(e) => {
            note(&format!("glommio could not make its executor: {e}"));
            eprintln!("parked: glommio could not make its executor: {e}");
            return ExitCode::FAILURE;
        }
    };
    match ex.run(run(n, sleep)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parked: {e}");
            ExitCode::FAILURE
        }
    }
}
