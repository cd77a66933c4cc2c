//! parkbench probe for article 002: the sizes of its `small()` and `big()` futures. Kind
//! `reported`, no arguments; prints one line, sizes in bytes:
//!
//! ```text
//! result small=<bytes> big=<bytes>
//! ```
//!
//! `small` and `big` are the article's, awaiting its hand-written `YieldNow` (the article's
//! `yield_now()` constructs one: "a future that returns `Pending` on its first poll"). The sizes
//! are `size_of_val` of the futures as called, never polled; nothing of `big` runs, so its
//! `println!` prints nothing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

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

// yield_now：构造一个「第一次 poll 返回 Pending」的 future
fn yield_now() -> YieldNow {
    YieldNow(false)
}

// The article's lines as written.
#[rustfmt::skip]
async fn small() { let _x = 1u64; yield_now().await; }
#[rustfmt::skip]
async fn big()   { let buf = [0u8; 4096]; yield_now().await; println!("{}", buf[0]); }

fn main() {
    let small = std::mem::size_of_val(&small());
    let big = std::mem::size_of_val(&big());
    println!("result small={small} big={big}");
}
