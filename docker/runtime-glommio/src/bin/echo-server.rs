//! parkbench probe for article 003's echo-server table on glommio: the article's server, measured
//! with the load generator it starts (docker/README.md, `echo-load`).
//!
//! ```text
//! echo-server -- echo-load --cpus LIST …
//! ```
//!
//! As in the article: `LocalExecutorBuilder::new(…).spawn(…)` (one executor on a thread of its
//! own; the article's `new()` now takes a placement, `Placement::Unbound` is its default),
//! `glommio::net::TcpListener`, one `glommio::spawn_local(…).detach()`ed task per connection.
//! What differs: it binds 127.0.0.1 on a free port (the article: 0.0.0.0:8080; a container run
//! has only loopback); the article's `while let Some(stream) = listener.accept().await` does not
//! compile (`accept` returns a `Result`), so an accept error ends the loop; once listening it
//! starts the generator given after `--` and exits with its status when it ends. The article
//! leaves `handle_connection` empty; here it reads into a 4 KiB buffer and writes back what it
//! read (`write_all`) until the peer closes. io_uring refused (checked with one `io_uring_setup`
//! first), or an executor that cannot be made, is said in a `note`, exit 1.

use std::process::ExitCode;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutorBuilder, Placement};
use probes::{io_uring_available, note, start_load};

async fn handle_connection(mut stream: TcpStream) {
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if stream.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn serve() -> Result<(), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    start_load(listener.local_addr().map_err(|e| e.to_string())?.port())?;
    loop {
        let stream = listener.accept().await.map_err(|e| e.to_string())?;
        glommio::spawn_local(async move {
            handle_connection(stream).await;
        })
        .detach();
    }
}

fn main() -> ExitCode {
    // serve() returns only on an error: the generator's waiter thread ends the process.
    let outcome = io_uring_available().and_then(|()| {
        LocalExecutorBuilder::new(Placement::Unbound)
            .spawn(serve)
            .map_err(|e| format!("glommio could not make its executor: {e}"))
            .and_then(|h| h.join().map_err(|e| e.to_string()))
            .and_then(|r| r)
    });
    if let Err(e) = outcome {
        note(&format!("echo-server: {e}"));
        eprintln!("echo-server: {e}");
    }
    ExitCode::FAILURE
}
