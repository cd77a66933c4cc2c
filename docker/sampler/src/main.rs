//! sampler — runs one program pinned to CPUs and measures it, in one of four kinds.
//!
//! ```text
//! sampler [--kind steady|peak|timed|latency] [--cpus LIST] [--settle-ms 500] [--samples 5]
//!         [--interval-ms 50] [--timeout-s 300] [--drop-steal F] [--drop-wait F]
//!         [--drop-involuntary N] -- <program> <args…>
//! ```
//!
//! Every kind starts the program with stdout piped (stderr is inherited), pinned with
//! `sched_setaffinity` to `--cpus` (kernel list format, e.g. `0-3,6`; CPUs outside the sampler's
//! own mask are refused) before exec. `--timeout-s` bounds the whole run; past it the program is
//! killed with SIGKILL.
//!
//! | kind | the program | measured | options that apply |
//! | --- | --- | --- | --- |
//! | `steady` (default) | speaks the handshake below on stdin/stdout | `/proc/<pid>/status` at baseline and while its tasks are parked | all |
//! | `peak` | runs as it is, stdin `/dev/null` | peak memory, threads, CPU and wall time of the whole run | `--cpus`, `--interval-ms`, `--timeout-s` |
//! | `timed` | as peak, and prints `result key=value…` lines | as peak, plus those lines | same |
//! | `latency` | as timed, and prints `latency value_ns=<n> count=<n>` lines | as timed, plus a latency histogram | same |
//!
//! `--settle-ms` and `--samples` are accepted and ignored by the last three.
//!
//! `sampler --serve` runs none itself: it is the supervisor of a container kept up for a cell's
//! processes, starting one sampler per request in a fresh folder (see `serve.rs`).
//!
//! ## steady: the handshake
//!
//! 1. probe prints `baseline …`; the sampler reads `/proc/<pid>/status` and writes a newline;
//! 2. probe creates its tasks and prints `ready key=value…`; the sampler waits `--settle-ms`,
//!    takes `--samples` readings of `/proc/<pid>/status` `--interval-ms` apart, writes a newline;
//! 3. probe releases its tasks, prints `done completed=<n> key=value…` and exits 0.
//!
//! Anything else is a protocol error, except `note <text>` lines (below), which may come at any
//! point.
//!
//! ## notes (every kind)
//!
//! A stdout line `note <free text>` is the program saying why something happened (e.g. which
//! limit stopped thread creation). Its text is kept verbatim, in order, at most 32 of them, each
//! cut at 300 bytes, in the output's `notes`; it is never a protocol error and never an other
//! line.
//!
//! ## peak, timed, latency
//!
//! No handshake. `/proc/<pid>/status` is polled right after the start and then every
//! `--interval-ms`; at the exit the program is reaped with `wait4`, which gives `ru_maxrss` and
//! the CPU times. stdout lines `result key=value…` are kept in order (all three kinds);
//! `latency value_ns=<u64> count=<u64 ≥ 1>` lines (latency kind) are merged into a histogram,
//! counts of a repeated value added. A `result` or `latency` line that does not parse is a
//! protocol error; other lines are counted and otherwise ignored.
//!
//! ## Output
//!
//! Exactly one JSON object on one line of stdout, always, also on errors. steady:
//!
//! ```text
//! {"schema":1,
//!  "cpus_requested":"0-1",    // the --cpus value, or null
//!  "cpus_in_force":"0-1",     // Cpus_allowed_list of the probe at baseline, or null
//!  "baseline":{"vm_rss_kib":123,"vm_hwm_kib":123,"rss_anon_kib":1,"rss_file_kib":2,"threads":5},
//!                             // /proc/<pid>/status at baseline, or null; a field the kernel
//!                             // does not show is null
//!  "samples":[{"t_ms":500.3,"vm_rss_kib":…,"vm_hwm_kib":…,"rss_anon_kib":…,"rss_file_kib":…,"threads":…}, …],
//!                             // readings after ready; t_ms is measured from the ready line
//!  "ready":{"goroutines":1001,"stack_inuse_bytes":2048000},
//!                             // key=value metrics of the ready line ({} if never reached);
//!                             // numbers as JSON numbers, anything else as strings
//!  "done":{"completed":1000}, // key=value metrics of the done line ({} if never reached)
//!  "timings_ms":{"spawn":12.5,"measure":702.1,"release":3.2,"probe":800.0},
//!                             // spawn: baseline acknowledged → ready line; measure: ready line →
//!                             // last reading; release: release line written → done line;
//!                             // probe: spawn → exit. null when not reached
//!  "notes":["…"],             // the program's note lines, without the word `note`
//!  "exit_code":0,"signal":null,   // how the probe ended; null when unknown
//!  "notes":["…"],            // the program's note lines, without the word `note`
//!  "error":null}              // why the protocol failed: protocol error, timeout, crash, …
//! ```
//!
//! peak, timed and latency (`peak` fields are null when unknown):
//!
//! ```text
//! {"schema":1,"kind":"timed",  // peak, timed or latency
//!  "cpus_requested":"0-1",     // the --cpus value, or null
//!  "cpus_in_force":"0-1",      // Cpus_allowed_list at the first poll, or null
//!  "peak":{"polls":12,         // polls that found the program running
//!          "vm_hwm_kib":2048,"vm_rss_max_kib":2000,"threads_max":3,
//!                              // largest VmHWM, VmRSS and Threads polled
//!          "ru_maxrss_kib":2100,   // wait4's ru_maxrss: program and the children it waited for
//!          "wall_ms":612.3,"user_ms":400.0,"sys_ms":20.5},
//!                              // start → exit; CPU times from wait4 (children included)
//!  "results":[{"ns_per_op":12.5,"batch":1}],   // the result lines' metrics, in order
//!  "latency":[[1000,2],[2000,4]],  // [value_ns,count] by value; [] unless kind latency
//!  "other_lines":0,            // stdout lines that were none of these (nor notes)
//!  "batches":[{"window_ms":12.1,"steal_ms":0.000,"involuntary_switches":1,"runqueue_wait_ms":0.213,"window_batches":1}],
//!                              // timed kind with a --drop-* option: per result line (below)
//!  "batch_rule":{"steal_above":0.01,"wait_above":0.01,"involuntary_switches_above":null},
//!                              // timed kind: the --drop-* options echoed; null otherwise
//!  "notes":["…"],              // the program's note lines, without the word `note`
//!  "exit_code":0,"signal":null,"error":null}
//! ```
//!
//! ## timed: what disturbed each batch
//!
//! A batch is one `result` line. At the start, and each time its reader thread has passed on a
//! burst of stdout lines (every line it found waiting in the pipe at once), the sampler reads the
//! steal of the pinned CPUs (`/proc/stat`, the `steal` column of their `cpuN` lines, in clock
//! ticks, usually 10 ms each), and, summed over the program's live threads
//! (`/proc/<pid>/task/*/`), the involuntary context switches (`status`,
//! `nonvoluntary_ctxt_switches`) and the time spent runnable but waiting for a CPU (`schedstat`,
//! `run_delay`, ns). A batch's window runs from the reading before its burst to the reading after
//! it; its counters are the differences (a counter that cannot be read, or that a thread ending
//! during the window took with it, is null). Batches of one burst share its window and counters
//! (`window_batches` says how many).
//! `--drop-steal`, `--drop-wait` and `--drop-involuntary` are the study's rule for dropping
//! batches: the sampler only echoes them in `batch_rule`; the driver applies them. Without any
//! of them nothing is read (`batches` is `[]`, `batch_rule` null).
//!
//! Sizes are KiB as the kernel reports them (its "kB"), times milliseconds.
//! Exit status: 0 when the program exited 0 and nothing went wrong (steady: the protocol ran to
//! the end, whatever `completed` says: judging it is the driver's job), 1 otherwise.

mod args;
mod batches;
mod json;
mod notes;
mod parse;
mod process;
mod results;
mod serve;
mod steady;
mod unmodified;

use std::io::{self, Write};

use args::Kind;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args == ["--serve"] {
        std::process::exit(serve::run());
    }
    let (opts, kind, cpus) = match args::parse_args(&args) {
        Ok(opts) => {
            let (kind, cpus) = (opts.kind, opts.cpus.clone());
            (Ok(opts), kind, cpus)
        }
        Err(e) => {
            eprintln!("{}", args::USAGE);
            let hint = (args::kind_hint(&args), args::cpus_hint(&args));
            (Err(format!("usage: {e}")), hint.0, hint.1)
        }
    };
    let (json, error) = match kind {
        Kind::Steady => steady::report(cpus, opts),
        kind => unmodified::report(kind, cpus, opts),
    };
    if let Some(e) = &error {
        eprintln!("sampler: {e}");
    }
    let mut out = json.to_json();
    out.push('\n');
    let mut stdout = io::stdout().lock();
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
    std::process::exit(if error.is_none() { 0 } else { 1 });
}
