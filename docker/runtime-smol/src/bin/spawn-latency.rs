//! parkbench probe for article 003's scheduling-latency table on smol: the article's Tokio
//! program on smol, with the latencies kept in a histogram and printed (the latency kind,
//! docker/README.md).
//!
//! ```text
//! spawn-latency [SPAWNS]   (default 10000, the article's)
//! ```
//!
//! `smol::block_on` (as the article's smol server starts), then `SPAWNS` times `Instant::now()`,
//! `smol::spawn` of a task that returns `start.elapsed()` (on smol's global executor), and the
//! `Task` awaited before the next spawn. Each
//! latency goes into an hdrhistogram (ns, 3 significant digits), printed as
//! `latency value_ns=… count=…` lines; the kit computes the percentiles.

use std::process::ExitCode;
use std::time::Instant;

use probes::{ns_histogram, print_histogram, spawns_arg, usage_error};

fn main() -> ExitCode {
    smol::block_on(run())
}

async fn run() -> ExitCode {
    let spawns = match spawns_arg() {
        Ok(n) => n,
        Err(e) => return usage_error("spawn-latency", "usage: spawn-latency [SPAWNS]", &e),
    };
    let mut latencies = ns_histogram();
    for _ in 0..spawns {
        let start = Instant::now();
        let handle = smol::spawn(async move { start.elapsed() });
        let latency = handle.await;
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
