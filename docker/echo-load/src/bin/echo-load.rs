//! parkbench load generator for article 003's echo servers: a fixed number of connections to
//! 127.0.0.1, each sending one message at a time and waiting for its whole echo (a closed loop),
//! for a warm-up and then a measured duration.
//!
//! ```text
//! echo-load --port P --cpus LIST [--connections 64] [--bytes 64] [--warmup-s 2] [--seconds 10]
//! ```
//!
//! It is started by the server under test (which appends `--port`), inherits the server's stdout
//! and so speaks to the sampler directly (docker/README.md, the latency kind):
//!
//! - `result qps=… server_cpu_pct=… server_hwm_bytes=… load_cpu_pct=… messages=…
//!   connections=… bytes=… seconds=…`: messages echoed per second in the measured window; the
//!   server's CPU time (user + system, from `/proc/<server>/stat`) over the
//!   window as a percentage of one CPU; the server's `VmHWM` at the end, in bytes; the generator's own CPU
//!   time over the window (near 100 % of its one CPU means it may be what limits the rate).
//! - `latency value_ns=… count=…`: the round-trip times of the window, from the generator's
//!   hdrhistogram (3 significant digits; each bucket printed at its highest equivalent value).
//!
//! The server is its parent process. Every echoed byte is checked against what was sent: a
//! connection refused for 10 s (nothing listening), closed or reset, a wrong byte, or a connection
//! with no echo in the whole measured window (a server that accepts nothing, or starves some
//! connections) ends the run with a `note` saying which and exit status 1, so that the sample is
//! invalid with that reason. A message's bytes differ from the 255 before it on its connection,
//! so an echo of an older message is caught too.

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use echo_load::{Flags, Histogram, ProcStat, note, pin_self, say, usage_error};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

const USAGE: &str = "usage: echo-load --port P --cpus LIST [--connections C] [--bytes B] \
                     [--warmup-s W] [--seconds S]";

struct Args {
    port: u16,
    cpus: String,
    connections: usize,
    bytes: usize,
    warmup: Duration,
    measure: Duration,
}

fn parse_args() -> Result<Args, String> {
    let flags = Flags::parse(&[
        "--port",
        "--cpus",
        "--connections",
        "--bytes",
        "--warmup-s",
        "--seconds",
    ])?;
    let port = u16::try_from(flags.count("--port")?).map_err(|_| "--port is above 65535")?;
    let count_or = |name: &str, default: u64| -> Result<u64, String> {
        match flags.get(name) {
            None => Ok(default),
            Some(_) => flags.count(name),
        }
    };
    let within = |name: &str, default: u64, min: u64, max: u64| -> Result<u64, String> {
        let v = count_or(name, default)?;
        if v < min || v > max {
            return Err(format!("{name} {v} is outside {min}..={max}"));
        }
        Ok(v)
    };
    Ok(Args {
        port,
        cpus: flags.get("--cpus").ok_or("--cpus is required")?.to_owned(),
        connections: within("--connections", 64, 1, 10_000)? as usize,
        bytes: within("--bytes", 64, 1, 1 << 20)? as usize,
        warmup: Duration::from_secs(within("--warmup-s", 2, 0, 3600)?),
        measure: Duration::from_secs(within("--seconds", 10, 1, 3600)?),
    })
}

/// One connection's closed loop: the message in flight, how much of it is written and echoed.
struct Conn {
    stream: TcpStream,
    /// Messages fully echoed so far (also what makes the next message's bytes).
    done: u64,
    /// `done` when the measured window began.
    done_at_start: u64,
    out: Vec<u8>,
    written: usize,
    echoed: usize,
    sent_at: Instant,
}

/// Byte `i` of message `k` on connection `c` (it repeats every 256 messages).
fn byte(c: usize, k: u64, i: usize) -> u8 {
    (c as u64)
        .wrapping_mul(131)
        .wrapping_add(k.wrapping_mul(31))
        .wrapping_add(i as u64) as u8
}

impl Conn {
    fn next_message(&mut self, c: usize) {
        for (i, b) in self.out.iter_mut().enumerate() {
            *b = byte(c, self.done, i);
        }
        self.written = 0;
        self.echoed = 0;
        self.sent_at = Instant::now();
    }
}

/// What the measured window saw.
struct Window {
    hist: Histogram<u64>,
    messages: u64,
    recording: bool,
}

fn connect(addr: SocketAddr) -> Result<std::net::TcpStream, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match std::net::TcpStream::connect(addr) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => {
                return Err(format!(
                    "the server did not accept on {addr} within 10 s: {e}"
                ));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Writes what the socket takes of the message in flight.
fn write_some(conn: &mut Conn, id: usize) -> Result<(), String> {
    while conn.written < conn.out.len() {
        match conn.stream.write(&conn.out[conn.written..]) {
            Ok(0) => return Err(format!("connection {id}: the server stopped reading")),
            Ok(n) => conn.written += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("connection {id}: write failed: {e}")),
        }
    }
    Ok(())
}

/// Reads and checks what the socket has of the echo; a whole echo is recorded and the next
/// message started.
fn read_some(conn: &mut Conn, id: usize, buf: &mut [u8], w: &mut Window) -> Result<(), String> {
    loop {
        let want = conn.out.len() - conn.echoed;
        match conn.stream.read(&mut buf[..want]) {
            Ok(0) => {
                return Err(format!(
                    "connection {id} was closed by the server after {} messages",
                    conn.done
                ));
            }
            Ok(n) => {
                for (j, &got) in buf[..n].iter().enumerate() {
                    let at = conn.echoed + j;
                    if got != conn.out[at] {
                        return Err(format!(
                            "connection {id}: byte {at} of echo {} is {got}, sent {}",
                            conn.done, conn.out[at]
                        ));
                    }
                }
                conn.echoed += n;
                if conn.echoed == conn.out.len() {
                    if w.recording {
                        let ns = conn.sent_at.elapsed().as_nanos().max(1) as u64;
                        w.hist.saturating_record(ns);
                        w.messages += 1;
                    }
                    conn.done += 1;
                    conn.next_message(id);
                    // Nothing of the next echo can be read before this write: its bytes, when
                    // they come, raise a new edge, so the read that would say EAGAIN is skipped.
                    return write_some(conn, id);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(format!(
                    "connection {id}: read failed after {} messages: {e}",
                    conn.done
                ));
            }
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    pin_self(&args.cpus).map_err(|e| {
        format!(
            "pinning the load generator to {:?} (the run's CPUs besides the server's): {e}",
            args.cpus
        )
    })?;
    let server = std::os::unix::process::parent_id();
    let addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    let mut poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
    let mut conns = Vec::with_capacity(args.connections);
    for id in 0..args.connections {
        let std_stream = connect(addr)?;
        std_stream
            .set_nodelay(true)
            .and_then(|()| std_stream.set_nonblocking(true))
            .map_err(|e| format!("connection {id}: {e}"))?;
        let mut stream = TcpStream::from_std(std_stream);
        poll.registry()
            .register(
                &mut stream,
                Token(id),
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(|e| format!("connection {id}: registering with epoll: {e}"))?;
        conns.push(Conn {
            stream,
            done: 0,
            done_at_start: 0,
            out: vec![0; args.bytes],
            written: 0,
            echoed: 0,
            sent_at: Instant::now(),
        });
    }
    let mut w = Window {
        hist: echo_load::ns_histogram(),
        messages: 0,
        recording: false,
    };
    for (id, c) in conns.iter_mut().enumerate() {
        c.next_message(id);
        write_some(c, id)?;
    }
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; args.bytes];
    let start = Instant::now();
    let mut begin: Option<(Instant, ProcStat, ProcStat)> = None;
    let end = start + args.warmup + args.measure;
    loop {
        let now = Instant::now();
        if begin.is_none() && now >= start + args.warmup {
            let server_cpu = ProcStat::read(server)?;
            let own_cpu = ProcStat::read(std::process::id())?;
            begin = Some((now, server_cpu, own_cpu));
            w.recording = true;
            for c in &mut conns {
                c.done_at_start = c.done;
            }
        }
        if now >= end {
            break;
        }
        let timeout = Some(Duration::from_millis(50).min(end - now));
        match poll.poll(&mut events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("epoll_wait: {e}")),
        }
        for ev in events.iter() {
            let id = ev.token().0;
            let c = &mut conns[id];
            if ev.is_writable() {
                write_some(c, id)?;
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                read_some(c, id, &mut buf, &mut w)?;
            }
            // read_some stops at the end of an echo; a close that came with it is read now, as
            // no later event will say it again.
            if ev.is_read_closed() || ev.is_error() {
                read_some(c, id, &mut buf, &mut w)?;
            }
        }
    }
    let (t0, server0, own0) = begin.ok_or("the measured window never began")?;
    let secs = t0.elapsed().as_secs_f64();
    let server_cpu = ProcStat::read(server)?.cpu_s - server0.cpu_s;
    let own_cpu = ProcStat::read(std::process::id())?.cpu_s - own0.cpu_s;
    let hwm = echo_load::vm_hwm_kib(server)?;
    if let Some((id, c)) = conns
        .iter()
        .enumerate()
        .find(|(_, c)| c.done == c.done_at_start)
    {
        return Err(format!(
            "connection {id} echoed nothing in the measured window ({} messages before it): the \
             server stalled it",
            c.done
        ));
    }
    say(&format!(
        "result qps={:.1} server_cpu_pct={:.2} server_hwm_bytes={} load_cpu_pct={:.2} \
         messages={} connections={} bytes={} seconds={:.3}",
        w.messages as f64 / secs,
        100.0 * server_cpu / secs,
        hwm * 1024,
        100.0 * own_cpu / secs,
        w.messages,
        args.connections,
        args.bytes,
        secs,
    ))
    .map_err(|e| format!("stdout: {e}"))?;
    echo_load::print_histogram(&w.hist).map_err(|e| format!("stdout: {e}"))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => return usage_error("echo-load", USAGE, &e),
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            note(&e);
            eprintln!("echo-load: {e}");
            ExitCode::FAILURE
        }
    }
}
