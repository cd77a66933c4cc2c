//! parkbench probe for article 000, Rust side: N independent Tokio tasks (`tokio::spawn`), each
//! parked on one shared `tokio::sync::Notify`, released at once with `notify_waiters()`.
//!
//! ```text
//! probe --tasks N --workers W
//! ```
//!
//! Probe protocol (see docker/README.md): prints `baseline`, waits for a line on stdin, spawns
//! the tasks and prints `ready …` once every task has registered its notification, waits for a
//! line on stdin, releases the tasks, waits until all have finished and prints
//! `done completed=<count>`.
//!
//! Each task enables its `Notified` future (pinned) before it counts itself as registered, so
//! `notify_waiters()` cannot miss a task that was counted. Stdin is read on the main thread
//! outside the runtime; the runtime's workers never block on it.
//!
//! The ready line also carries the layout observation of the article: the size of the (unpolled)
//! future of an `async fn` that holds an array across a `Notify` await, for a 64-byte and a
//! 64 KiB array (`future_size_64b`, `future_size_64k`), and the size of the future each task here
//! runs (`task_future_size`). All sizes in bytes.
//!
//! The article gives the two sizes (152 and 65,624 bytes) but not the function's code, so the ready
//! line carries each plausible shape, the same otherwise (`[1u8; N]` held across the await, then
//! its last byte read through `black_box`):
//!
//! - `future_size_64b`, `future_size_64k`: borrows the `Notify` and awaits `notify.notified()`.
//! - `future_size_64b_arc`, `future_size_64k_arc`: takes an owned `Arc<Notify>`, awaits the same.
//! - `future_size_64b_enabled`, `future_size_64k_enabled`: borrows the `Notify`, pins its
//!   `Notified` and enables it before the await, as the tasks here do.

use std::io::{self, BufRead, Write};
use std::pin::pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

const USAGE: &str = "usage: probe --tasks N --workers W";

/// Holds 64 bytes across an await, then uses them.
async fn hold_64b(notify: &Notify) -> u8 {
    let data = [1u8; 64];
    notify.notified().await;
    std::hint::black_box(&data)[63]
}

/// Holds 64 KiB across an await, then uses them.
async fn hold_64k(notify: &Notify) -> u8 {
    let data = [1u8; 65536];
    notify.notified().await;
    std::hint::black_box(&data)[65535]
}

/// Holds 64 bytes across an await on an owned `Arc<Notify>`, then uses them.
async fn hold_64b_arc(notify: Arc<Notify>) -> u8 {
    let data = [1u8; 64];
    notify.notified().await;
    std::hint::black_box(&data)[63]
}

/// Holds 64 KiB across an await on an owned `Arc<Notify>`, then uses them.
async fn hold_64k_arc(notify: Arc<Notify>) -> u8 {
    let data = [1u8; 65536];
    notify.notified().await;
    std::hint::black_box(&data)[65535]
}

/// Holds 64 bytes across an await on a pinned, enabled `Notified`, then uses them.
async fn hold_64b_enabled(notify: &Notify) -> u8 {
    let data = [1u8; 64];
    let mut notified = pin!(notify.notified());
    notified.as_mut().enable();
    notified.await;
    std::hint::black_box(&data)[63]
}

/// Holds 64 KiB across an await on a pinned, enabled `Notified`, then uses them.
async fn hold_64k_enabled(notify: &Notify) -> u8 {
    let data = [1u8; 65536];
    let mut notified = pin!(notify.notified());
    notified.as_mut().enable();
    notified.await;
    std::hint::black_box(&data)[65535]
}

struct Shared {
    tasks: u64,
    /// The one signal every task is parked on.
    release: Notify,
    registered: AtomicU64,
    /// Signalled (with a stored permit) by the task that registers last.
    all_registered: Notify,
    completed: AtomicU64,
    /// Signalled (with a stored permit) by the task that completes last.
    all_completed: Notify,
}

/// One task: register for the release, report registered, wait, count completion.
async fn wait_for_release(shared: Arc<Shared>) {
    let mut notified = pin!(shared.release.notified());
    notified.as_mut().enable();
    if shared.registered.fetch_add(1, Ordering::AcqRel) + 1 == shared.tasks {
        shared.all_registered.notify_one();
    }
    notified.await;
    if shared.completed.fetch_add(1, Ordering::AcqRel) + 1 == shared.tasks {
        shared.all_completed.notify_one();
    }
}

struct Args {
    tasks: u64,
    workers: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut tasks = None;
    let mut workers = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let slot = match name.as_str() {
            "--tasks" => &mut tasks,
            "--workers" => &mut workers,
            _ => return Err(format!("unknown argument {arg:?}")),
        };
        let value = inline
            .or_else(|| args.next())
            .ok_or_else(|| format!("{name} needs a value"))?;
        let n: u64 = value
            .parse()
            .map_err(|_| format!("{name}: {value:?} is not a non-negative integer"))?;
        *slot = Some(n);
    }
    let tasks = tasks.ok_or("--tasks is required")?;
    let workers = workers.ok_or("--workers is required")?;
    if workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    let workers = usize::try_from(workers).map_err(|_| "--workers is too large".to_owned())?;
    Ok(Args { tasks, workers })
}

fn say(line: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()
}

/// Waits for one line on stdin; end of input is an error.
fn wait_line() -> io::Result<()> {
    let mut line = String::new();
    if io::stdin().lock().read_line(&mut line)? == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stdin closed"));
    }
    Ok(())
}

fn run(args: Args) -> io::Result<()> {
    let n = args.tasks;
    let probe = Notify::new();
    let future_size_64b = std::mem::size_of_val(&hold_64b(&probe));
    let future_size_64k = std::mem::size_of_val(&hold_64k(&probe));
    let owned = Arc::new(Notify::new());
    let future_size_64b_arc = std::mem::size_of_val(&hold_64b_arc(owned.clone()));
    let future_size_64k_arc = std::mem::size_of_val(&hold_64k_arc(owned));
    let future_size_64b_enabled = std::mem::size_of_val(&hold_64b_enabled(&probe));
    let future_size_64k_enabled = std::mem::size_of_val(&hold_64k_enabled(&probe));

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
    let task_future_size = std::mem::size_of_val(&wait_for_release(shared.clone()));

    say("baseline")?;
    wait_line()?;

    rt.block_on(async {
        for _ in 0..n {
            // Detached: the JoinHandle is dropped, the task runs on its own.
            drop(tokio::spawn(wait_for_release(shared.clone())));
        }
        if n > 0 {
            shared.all_registered.notified().await;
        }
    });
    say(&format!(
        "ready tasks={n} registered={} workers={} future_size_64b={future_size_64b} \
         future_size_64k={future_size_64k} task_future_size={task_future_size} \
         future_size_64b_arc={future_size_64b_arc} future_size_64k_arc={future_size_64k_arc} \
         future_size_64b_enabled={future_size_64b_enabled} \
         future_size_64k_enabled={future_size_64k_enabled}",
        shared.registered.load(Ordering::Acquire),
        args.workers,
    ))?;
    wait_line()?;

    shared.release.notify_waiters();
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
        Err(e) => {
            eprintln!("probe: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("probe: {e}");
            ExitCode::FAILURE
        }
    }
}
