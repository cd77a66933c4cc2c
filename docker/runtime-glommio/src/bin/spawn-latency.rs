//! parkbench probe for article 003's scheduling-latency table on glommio: the article's Tokio
//! program on glommio, with the latencies kept in a histogram and printed (the latency kind,
//! docker/README.md).
//!
//! ```text
//! spawn-latency [SPAWNS]   (default 10000, the article's)
//! ```
//!
//! `LocalExecutorBuilder::default().spawn(…)` (one executor on a thread of its own, as the
//! article's glommio server starts it), then `SPAWNS` times `Instant::now()`,
//! `glommio::spawn_local` of a task that returns `start.elapsed()`, and the task awaited before
//! the next spawn. Each latency goes into an hdrhistogram (ns, 3 significant digits), printed as
//! `latency value_ns=… count=…` lines; the kit computes the percentiles. io_uring refused (checked
//! with one `io_uring_setup` first), or an executor that cannot be made, is said in a `note`, exit 1.

use std::process::ExitCode;
use std::time::Instant;

use glommio::LocalExecutorBuilder;
use probes::{io_uring_available, note, ns_histogram, print_histogram, spawns_arg, usage_error};

fn main() -> ExitCode {
    let spawns = match spawns_arg() {
        Ok(n) => n,
        Err(e) => return usage_error("spawn-latency", "usage: spawn-latency [SPAWNS]", &e),
    };
    if let Err(e) = io_uring_available() {
        note(&e);
        eprintln!("spawn-latency: {e}");
        return ExitCode::FAILURE;
    }
    let handle = LocalExecutorBuilder::default().spawn(move || async move {
        let mut latencies = ns_histogram();
        for _ in 0..spawns {
            let start = Instant::now();
            let handle = glommio::spawn_local(async move { start.elapsed() });
            let latency = handle.await;
            latencies.saturating_record(latency.as_nanos().max(1) as u64);
        }
        latencies
    });
    let latencies = match handle.map(|h| h.join()) {
        Ok(Ok(h)) => h,
        Ok(Err(e)) | Err(e) => {
            note(&format!("glommio could not run its executor: {e}"));
            eprintln!("spawn-latency: glommio could not run its executor: {e}");
            return ExitCode::FAILURE;
        }
    };
    match print_histogram(&latencies) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spawn-latency: {e}");
            ExitCode::FAILURE
        }
    }
}
