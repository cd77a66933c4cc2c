//! parkbench probe for article 003's echo-server table on Tokio: the article's server, measured
//! with the load generator it starts (docker/README.md, `echo-load`).
//!
//! ```text
//! echo-server -- echo-load --cpus LIST …
//! ```
//!
//! As in the article: `#[tokio::main]`, `tokio::net::TcpListener`, a `Semaphore` of 10,000
//! permits taken per connection (`acquire_owned`), one `tokio::spawn`ed task per connection.
//! What differs: it binds 127.0.0.1 on a free port (the article: 0.0.0.0:8080; a container run
//! has only loopback), and, once listening, starts the generator given after `--` and exits with
//! its status when it ends. The article leaves `handle_connection` empty; here it reads into a
//! 4 KiB buffer and writes back what it read (`write_all`) until the peer closes.

use std::process::ExitCode;
use std::sync::Arc;

use probes::{note, start_load};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

async fn handle_connection(mut socket: tokio::net::TcpStream) {
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

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    start_load(listener.local_addr()?.port())?;
    let semaphore = Arc::new(Semaphore::new(10000));
    loop {
        let (socket, _) = listener.accept().await?;
        let permit = semaphore.clone().acquire_owned().await?;
        tokio::spawn(async move {
            handle_connection(socket).await;
            drop(permit);
        });
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    // serve() returns only on an error: the generator's waiter thread ends the process.
    if let Err(e) = serve().await {
        note(&format!("echo-server: {e}"));
        eprintln!("echo-server: {e}");
    }
    ExitCode::FAILURE
}
