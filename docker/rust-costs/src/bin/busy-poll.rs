//! parkbench probe for article 002: its 40-line executor (a `Noop` waker, the hand-written
//! `YieldNow` future, a busy `block_on`), timed per poll. Kind `timed`, no arguments.
//!
//! The executor below is the article's code; only `main` differs. The article runs one
//! `block_on` over 10,000,000 yields and divides the time by that count. Here one batch is one
//! `block_on` over `k` yields, timed with `Instant`: `k` is doubled until one batch takes at least
//! 10 ms, then 5 batches warm up, then 40 batches print one line each:
//!
//! ```text
//! note one batch is <k> polls …
//! result ns_per_poll=<batch ns / k>
//! ```
//!
//! A poll is what the article counts: one `YieldNow(false).await`, which costs one outer poll of
//! the `async` block by `block_on` (the `YieldNow` returns `Pending` and wakes the no-op waker; the
//! next outer poll finds it `Ready` and goes on to the next `YieldNow`, inside the same call). A
//! batch makes `k + 1` outer polls (the last one returns `Ready`) and one `Arc` and one `Box`
//! allocation (in `block_on`); both are counted in the batch and are negligible next to `k`.
//!
//! `std::hint::black_box` (not in the article) hides the yield count `k` and the pinned future
//! from the optimiser at each outer poll. The compiler sees the whole state machine and the no-op
//! waker, so it would be free to fold the loop of polls into less work than a poll, or to drop it
//! as its result is unused; with `black_box` every poll reads and writes the future's state in
//! memory, as an executor that cannot see its futures does. (Rust 1.95 keeps the loop even
//! without it: per yield an indirect jump on the state, the flag stores, and the `Arc` increment
//! and decrement of `Wake::wake_by_ref`'s default, which clones the waker and calls `wake`.)

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {} // 真的 runtime 里：把任务塞回队列 + 叫醒 worker
}

struct YieldNow(bool);
impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref(); // 「我准备好了」，请再 poll 我一次
        Poll::Pending
    }
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut fut = Box::pin(fut); // 钉在堆上，地址不能变
    loop {
        if let Poll::Ready(v) = black_box(fut.as_mut()).poll(&mut cx) {
            return v;
        }
    }
}

/// The article's `main` body for `n` yields, timed.
fn batch(n: u64) -> Duration {
    let n = black_box(n);
    let start = Instant::now();
    block_on(async move {
        for _ in 0..n {
            YieldNow(false).await; // 每次都返回 Pending，被重新 poll
        }
    });
    start.elapsed()
}

const MIN_BATCH: Duration = Duration::from_millis(10);
const WARMUP_BATCHES: usize = 5;
const BATCHES: usize = 40;

fn main() {
    let mut k: u64 = 1000;
    while batch(k) < MIN_BATCH {
        k *= 2;
    }
    for _ in 0..WARMUP_BATCHES {
        batch(k);
    }
    println!(
        "note one batch is {k} polls (the first count of the doubling to take at least 10 ms)"
    );
    for _ in 0..BATCHES {
        let ns = batch(k).as_nanos() as f64 / k as f64;
        println!("result ns_per_poll={ns:.3}");
    }
}
