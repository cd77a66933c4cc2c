//! parkbench program for article 004's layout observation: the size of the future of `nho()`, an
//! empty `async fn`, and of `vua()`, an `async fn` that holds a `[u64; 8]` across an await and then
//! uses it. One `result` line, sizes in bytes of the unpolled futures:
//!
//! ```text
//! result nho=… vua_yield_now=… vua_own_yield=… vua_oneshot=… vua_sleep=…
//! ```
//!
//! The article gives the two sizes (1 and 80 bytes, "64 B held across the await + the state
//! flag") but not the code. What it leaves open, and what this program does:
//!
//! - What `vua()` awaits. One `vua` per plausible await point, each otherwise the same:
//!   `vua_yield_now` awaits `tokio::task::yield_now()`; `vua_own_yield` a hand-written `YieldNow`
//!   of one byte (the `bool` of article 002's); `vua_oneshot` a `tokio::sync::oneshot::Receiver<()>`
//!   it takes as its argument (a receiver has to come from somewhere); `vua_sleep`
//!   `tokio::time::sleep(1 ms)`.
//! - The array's contents and its use: `[1u64; 8]`, and after the await its last element is read
//!   through `std::hint::black_box` and returned, so the compiler cannot drop or shrink the array.
//! - How the size is taken: `std::mem::size_of_val` of the future `vua()` returns, unpolled (its
//!   type, and so its size, is the same at every state). Nothing here runs a runtime.

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::oneshot;

/// Article 002's `YieldNow`: pending at the first poll (after waking itself), ready at the second.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Empty.
async fn nho() {}

async fn vua_yield_now() -> u64 {
    let data = [1u64; 8];
    tokio::task::yield_now().await;
    black_box(&data)[7]
}

async fn vua_own_yield() -> u64 {
    let data = [1u64; 8];
    YieldNow(false).await;
    black_box(&data)[7]
}

async fn vua_oneshot(rx: oneshot::Receiver<()>) -> u64 {
    let data = [1u64; 8];
    let _ = rx.await;
    black_box(&data)[7]
}

async fn vua_sleep() -> u64 {
    let data = [1u64; 8];
    tokio::time::sleep(Duration::from_millis(1)).await;
    black_box(&data)[7]
}

fn main() {
    let (_tx, rx) = oneshot::channel::<()>();
    println!(
        "result nho={} vua_yield_now={} vua_own_yield={} vua_oneshot={} vua_sleep={}",
        std::mem::size_of_val(&nho()),
        std::mem::size_of_val(&vua_yield_now()),
        std::mem::size_of_val(&vua_own_yield()),
        std::mem::size_of_val(&vua_oneshot(rx)),
        std::mem::size_of_val(&vua_sleep()),
    );
}
