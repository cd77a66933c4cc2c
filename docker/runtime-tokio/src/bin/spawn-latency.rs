//! parkbench probe for article 003's scheduling-latency table on Tokio: the article's program,
//! with the latencies kept in a histogram and printed (the latency kind, docker/README.md).
//!
//! ```text
//! spawn-latency [SPAWNS]   (default 10000, the article's)
//! ```
//!
//! As in the article: `#[tokio::main]` (the default multi-thread runtime), then `SPAWNS` times
//! `Instant::now()`, `tokio::spawn` of a task that returns `start.elapsed()`, and the
//! `JoinHandle` awaited before the next spawn. What differs: the article sorts a `Vec` and prints
//! P50/P99/P999 by index; here each latency goes into an hdrhistogram (ns, 3 significant digits),
//! printed as `latency value_ns=… count=…` lines, and the kit computes the percentiles.

use std::process::ExitCode;
use std::time::Instant;

use probes::{ns_histogram, print_histogram, spawns_arg, usage_error};

#[tokio::main]
async fn main() -> ExitCode {
    let spawns = match spawns_arg() {
        Ok(n) => n,
        Err(e) => return usage_error("spawn-latency", "usage: spawn-latency [SPAWNS]", &e),
    };
    let mut latencies = ns_histogram();
    for _ in 0..spawns {
        let start = Instant::now();
        let handle = tokio::spawn(async move { start.elapsed() });
        let latency = handle.await.expect("the task returns its latency");
        latencies.saturating_record(latency.as_nanos().max(1) as u64);
    }
    match print_histogram(&latencies) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spawn-latency: {e}");
            ExitCode::FAILURE
        }
    }
}
