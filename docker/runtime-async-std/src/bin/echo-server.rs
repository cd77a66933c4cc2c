//! parkbench probe for article 003's echo-server table on async-std: the article's server,
//! measured with the load generator it starts (docker/README.md, `echo-load`).
//!
//! ```text
//! echo-server -- echo-load --cpus LIST …
//! ```
//!
//! As in the article: `#[async_std::main]`, `async_std::net::TcpListener`, `incoming()` as a
//! `Stream`, one `async_std::task::spawn`ed task per connection. What differs: it binds 127.0.0.1
//! on a free port (the article: 0.0.0.0:8080; a container run has only loopback), and, once
//! listening, starts the generator given after `--` and exits with its status when it ends. The
//! article leaves `handle_connection` empty; here it reads into a 4 KiB buffer and writes back
//! what it read (`write_all`) until the peer closes.

use std::process::ExitCode;

use async_std::net::{TcpListener, TcpStream};
use async_std::prelude::*;
use probes::{note, start_load};

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

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    start_load(listener.local_addr()?.port())?;
    let mut incoming = listener.incoming();
    while let Some(stream) = incoming.next().await {
        let stream = stream?;
        async_std::task::spawn(async move {
            handle_connection(stream).await;
        });
    }
    Ok(())
}

#[async_std::main]
async fn main() -> ExitCode {
    // serve() returns only on an error: the generator's waiter thread ends the process.
    if let Err(e) = serve().await {
        note(&format!("echo-server: {e}"));
        eprintln!("echo-server: {e}");
    }
    ExitCode::FAILURE
}
