//! parkbench probe for article 003's echo-server table on smol: the article's server, measured
//! with the load generator it starts (docker/README.md, `echo-load`).
//!
//! ```text
//! echo-server -- echo-load --cpus LIST …
//! ```
//!
//! As in the article: `smol::block_on`, `smol::net::TcpListener`, one task per connection spawned
//! and detached (the article's `Task::spawn(…).detach()` is smol 0.1's; smol 2's is
//! `smol::spawn(…).detach()`, on its global executor). What differs: it binds 127.0.0.1 on a
//! free port (the article: 0.0.0.0:8080; a container run has only loopback), and, once listening,
//! starts the generator given after `--` and exits with its status when it ends. The article
//! leaves `handle_connection` empty; here it reads into a 4 KiB buffer and writes back what it
//! read (`write_all`) until the peer closes.

use std::process::ExitCode;

use probes::{note, start_load};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};

async fn handle_connection(mut socket: TcpStream) {
    let mut buf = [0u8; 4096];
    loop {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if socket.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let outcome: Result<(), Box<dyn std::error::Error>> = smol::block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        start_load(listener.local_addr()?.port())?;
        loop {
            let (socket, _) = listener.accept().await?;
            smol::spawn(async move {
                handle_connection(socket).await;
            })
            .detach();
        }
    });
    // The loop ends only on an error: the generator's waiter thread ends the process.
    if let Err(e) = outcome {
        note(&format!("echo-server: {e}"));
        eprintln!("echo-server: {e}");
    }
    ExitCode::FAILURE
}
