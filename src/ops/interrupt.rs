//! Ctrl-C. The run loop claims it to stop between containers and keep its samples; before that (a
//! build, the environment record) the command is dropped, and its containers' guards remove them.
//! A second Ctrl-C quits at once, for a command busy in code that cannot be dropped midway.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

/// The first Ctrl-C, as a token, and whether a run loop has claimed it.
#[derive(Clone)]
pub struct Interrupt {
    token: CancellationToken,
    claimed: Arc<AtomicBool>,
}

impl Interrupt {
    /// An interrupt nothing triggers yet.
    fn new() -> Self {
        Self {
            token: CancellationToken::new(),
            claimed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Listens for Ctrl-C from now on; a second one exits at once with `quit`.
    pub fn install(quit: u8) -> Self {
        let interrupt = Self::new();
        let listener = interrupt.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            if listener.claimed.load(Ordering::SeqCst) {
                eprintln!(
                    "\ninterrupted: removing the running container and keeping every sample so far"
                );
            } else {
                eprintln!(
                    "\ninterrupted: stopping and removing the containers started (Ctrl-C again quits at once)"
                );
            }
            listener.token.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(i32::from(quit));
            }
        });
        interrupt
    }

    /// The token a run loop watches; from now on Ctrl-C is the loop's to handle.
    pub fn claim(&self) -> CancellationToken {
        self.claimed.store(true, Ordering::SeqCst);
        self.token.clone()
    }

    /// Hands Ctrl-C back once the run loop is over: a Ctrl-C during the report or the archive, or
    /// during the next study of `reproduce --all`, stops the command again.
    pub fn release(&self) {
        self.claimed.store(false, Ordering::SeqCst);
    }

    /// Whether Ctrl-C has come (an error after it is the interruption's, not a failure).
    pub fn fired(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Completes on Ctrl-C unless a run loop has claimed it (then never).
    pub async fn unclaimed(&self) {
        self.token.cancelled().await;
        if self.claimed.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_claimed_interrupt_is_left_to_the_run_loop() {
        let interrupt = Interrupt::new();
        let token = interrupt.claim();
        token.cancel();
        let unclaimed =
            tokio::time::timeout(std::time::Duration::from_millis(50), interrupt.unclaimed());
        assert!(
            unclaimed.await.is_err(),
            "the dispatcher must not drop a claimed run"
        );

        let interrupt = Interrupt::new();
        interrupt.token.cancel();
        interrupt.unclaimed().await;

        let interrupt = Interrupt::new();
        let _ = interrupt.claim();
        interrupt.release();
        interrupt.token.cancel();
        tokio::time::timeout(std::time::Duration::from_millis(50), interrupt.unclaimed())
            .await
            .expect("a released interrupt stops the command again");
    }
}
