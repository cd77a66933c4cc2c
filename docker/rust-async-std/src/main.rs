//! parkbench probe for article 001, Rust/async-std: the article's program. N
//! `async_std::task::sleep` futures joined with `futures::future::join_all`; the program exits
//! when all have finished and prints nothing.
//!
//! ```text
//! probe N [SLEEP_MS]
//! ```
//!
//! The one change from the article: an optional second argument, the sleep in milliseconds
//! (default 10000, the article's 10 s), so that tests need not wait.

use async_std::task;
use futures::future::join_all;
use std::env;
use std::time::Duration;

#[async_std::main]
async fn main() {
    let args: Vec<String> = env::args().collect();
    let num_tasks = args[1].parse::<usize>().unwrap();
    let sleep_ms = args.get(2).map_or(10_000, |ms| ms.parse::<u64>().unwrap());

    let mut tasks = Vec::new();
    for _ in 0..num_tasks {
        tasks.push(task::sleep(Duration::from_millis(sleep_ms)));
    }

    join_all(tasks).await;
}
