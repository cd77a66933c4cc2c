//! sampler — runs one probe through the parkbench probe protocol and samples its memory.
//!
//! ```text
//! sampler [--cpus LIST] [--settle-ms 500] [--samples 5] [--interval-ms 50] [--timeout-s 300] -- <probe> <args…>
//! ```
//!
//! The probe is started with piped stdin/stdout (stderr is inherited), pinned with
//! `sched_setaffinity` to `--cpus` (kernel list format, e.g. `0-3,6`) before exec. Protocol:
//!
//! 1. probe prints `baseline …`; the sampler reads `/proc/<pid>/status` and writes a newline;
//! 2. probe creates its tasks and prints `ready key=value…`; the sampler waits `--settle-ms`,
//!    takes `--samples` readings of `/proc/<pid>/status` `--interval-ms` apart, writes a newline;
//! 3. probe releases its tasks, prints `done completed=<n> key=value…` and exits 0.
//!
//! Anything else is a protocol error. `--timeout-s` bounds the whole run; past it the probe is
//! killed with SIGKILL.
//!
//! Output: exactly one JSON object on one line of stdout, always, also on errors:
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
//!  "exit_code":0,"signal":null,   // how the probe ended; null when unknown
//!  "error":null}              // why the protocol failed: protocol error, timeout, crash, …
//! ```
//!
//! Sizes are KiB as the kernel reports them (its "kB"), times milliseconds.
//! Exit status: 0 when the protocol ran to the end and the probe exited 0 (whatever `completed`
//! says: judging it is the driver's job), 1 otherwise.

mod args;
mod json;
mod parse;
mod process;
mod results;
mod steady;
mod unmodified;

use std::io::{self, Write};

use args::Kind;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
