//! parkbench's trivial echo server for article 003: one thread, one epoll loop (mio), no async
//! runtime, no task per connection. It is the ceiling of the load generator: measured in the same
//! run and on the same CPUs as the runtimes' servers, its rate shows how far the generator itself
//! can go.
//!
//! ```text
//! echo-baseline -- echo-load --cpus LIST …
//! ```
//!
//! Listens on 127.0.0.1 (a free port), starts the generator given after `--` with `--port`
//! appended (docker/README.md), echoes every byte read back to its connection, and exits with
//! the generator's status once it ends.

use std::io::{ErrorKind, Read, Write};
use std::process::ExitCode;

use echo_load::{note, start_load};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const LISTENER: Token = Token(usize::MAX);

/// One connection and the bytes read from it that are not yet written back.
struct Conn {
    stream: TcpStream,
    pending: Vec<u8>,
}

/// Reads what there is and writes back what the socket takes; `false` when the connection ended.
/// `closed`: the peer has closed its side, so the socket is read to its end.
fn serve(c: &mut Conn, buf: &mut [u8], closed: bool) -> bool {
    let mut drained = false;
    loop {
        while !c.pending.is_empty() {
            match c.stream.write(&c.pending) {
                Ok(n) => drop(c.pending.drain(..n)),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        // A read shorter than the buffer took all there was: what comes next raises a new edge,
        // so the read that would only say EAGAIN is skipped (not after a close, which raises none).
        if drained && !closed {
            return true;
        }
        match c.stream.read(buf) {
            Ok(0) => return false,
            Ok(n) => {
                drained = n < buf.len();
                c.pending.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

fn run() -> std::io::Result<()> {
    let mut listener = TcpListener::bind("127.0.0.1:0".parse().expect("a socket address"))?;
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    start_load(listener.local_addr()?.port()).map_err(std::io::Error::other)?;
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 4096];
    loop {
        match poll.poll(&mut events, None) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for ev in events.iter() {
            if ev.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            let token = Token(conns.len());
                            poll.registry().register(
                                &mut stream,
                                token,
                                Interest::READABLE | Interest::WRITABLE,
                            )?;
                            conns.push(Some(Conn {
                                stream,
                                pending: Vec::new(),
                            }));
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
            } else if let Some(slot) = conns.get_mut(ev.token().0)
                && let Some(c) = slot.as_mut()
                && !serve(c, &mut buf, ev.is_read_closed() || ev.is_error())
            {
                *slot = None;
            }
        }
    }
}

fn main() -> ExitCode {
    // run() returns only on an error: the generator's waiter thread ends the process.
    if let Err(e) = run() {
        note(&format!("echo-baseline: {e}"));
        eprintln!("echo-baseline: {e}");
    }
    ExitCode::FAILURE
}
