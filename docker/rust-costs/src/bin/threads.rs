//! parkbench probe for article 004's control: N OS threads with the default stack, parked.
//! Kind `steady` (the probe protocol, see docker/README.md):
//!
//! ```text
//! threads --tasks N
//! ```
//!
//! Prints `baseline`, waits for a line on stdin, spawns N threads with `std::thread::Builder::new()`
//! (what `std::thread::spawn` uses; the stack size is left at std's default, 2 MiB unless
//! `RUST_MIN_STACK` says otherwise), each of which parks on one `Mutex` + `Condvar`. Once every
//! thread created is waiting on the condvar it prints
//!
//! ```text
//! ready tasks=N created=K threads=<Threads of /proc/self/status> stack_bytes=<std's default>
//! ```
//!
//! waits for a line on stdin, releases them all (`notify_all`), joins them and prints
//! `done completed=<joined>`.
//!
//! A thread counts itself parked under the mutex and then waits on the condvar, which releases
//! the mutex only once the thread is waiting; so when the main thread holds the mutex and reads
//! the count K, all K threads are parked. If a spawn fails, the probe prints `note` lines with the
//! error and the limits that may explain it and goes on with the K threads it has.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

const USAGE: &str = "usage: threads --tasks N";

/// std's default thread stack when the Builder sets none: `RUST_MIN_STACK` if it parses, else
/// 2 MiB (the rule documented in `std::thread`, "Stack size").
fn default_stack_bytes() -> u64 {
    std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2 * 1024 * 1024)
}

#[derive(Default)]
struct State {
    parked: u64,
    released: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Every thread waits on this one until `released`.
    release: Condvar,
    /// The main thread waits on this one until every created thread is parked.
    all_parked: Condvar,
}

fn park(shared: &Shared) {
    let mut state = shared.state.lock().unwrap();
    state.parked += 1;
    shared.all_parked.notify_one();
    while !state.released {
        state = shared.release.wait(state).unwrap();
    }
}

fn parse_args() -> Result<u64, String> {
    let mut tasks = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        if name != "--tasks" {
            return Err(format!("unknown argument {arg:?}"));
        }
        let value = inline
            .or_else(|| args.next())
            .ok_or("--tasks needs a value")?;
        tasks = Some(
            value
                .parse()
                .map_err(|_| format!("--tasks: {value:?} is not a non-negative integer"))?,
        );
    }
    tasks.ok_or_else(|| "--tasks is required".to_owned())
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

/// The first whitespace-separated number of a file, if it can be read.
fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `Threads:` of /proc/self/status.
fn threads_now() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

/// `note` lines for a failed spawn: the error, then the limits that can stop thread creation,
/// each as far as it can be read here.
fn spawn_failure_notes(created: u64, tasks: u64, err: &io::Error) -> Vec<String> {
    let errno = err
        .raw_os_error()
        .map_or_else(|| "none".to_owned(), |e| e.to_string());
    let mut notes = vec![format!(
        "note spawn of thread {} of {tasks} failed: {err} (errno {errno}, kind {:?}); \
         going on with {created}",
        created + 1,
        err.kind()
    )];
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map(|m| m.lines().count().to_string())
        .unwrap_or_else(|_| "?".into());
    let show = |v: Option<u64>| v.map_or_else(|| "?".to_owned(), |v| v.to_string());
    let pids_max = std::fs::read_to_string("/sys/fs/cgroup/pids.max")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "?".into());
    notes.push(format!(
        "note limits: threads={} maps={maps} vm.max_map_count={} kernel.threads-max={} \
         kernel.pid_max={} pids.max={pids_max} pids.current={}",
        show(threads_now()),
        show(read_number("/proc/sys/vm/max_map_count")),
        show(read_number("/proc/sys/kernel/threads-max")),
        show(read_number("/proc/sys/kernel/pid_max")),
        show(read_number("/sys/fs/cgroup/pids.current")),
    ));
    notes
}

fn run(tasks: u64) -> io::Result<()> {
    let shared = Arc::new(Shared::default());
    say("baseline")?;
    wait_line()?;

    let mut handles: Vec<JoinHandle<()>> = Vec::new();
    for _ in 0..tasks {
        let shared = shared.clone();
        match std::thread::Builder::new().spawn(move || park(&shared)) {
            Ok(handle) => handles.push(handle),
            Err(err) => {
                for note in spawn_failure_notes(handles.len() as u64, tasks, &err) {
                    say(&note)?;
                }
                break;
            }
        }
    }
    let created = handles.len() as u64;
    {
        let mut state = shared.state.lock().unwrap();
        while state.parked < created {
            state = shared.all_parked.wait(state).unwrap();
        }
    }
    // `threads=` only when /proc could be read: a metric is a number or absent.
    let threads = threads_now().map_or_else(String::new, |t| format!(" threads={t}"));
    say(&format!(
        "ready tasks={tasks} created={created}{threads} stack_bytes={}",
        default_stack_bytes(),
    ))?;
    wait_line()?;

    shared.state.lock().unwrap().released = true;
    shared.release.notify_all();
    let mut completed = 0u64;
    for handle in handles {
        if handle.join().is_ok() {
            completed += 1;
        }
    }
    say(&format!("done completed={completed}"))
}

fn main() -> ExitCode {
    let tasks = match parse_args() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("threads: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(tasks) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("threads: {e}");
            ExitCode::FAILURE
        }
    }
}
