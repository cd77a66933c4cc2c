//! parkbench load generator for article 003's echo servers: a fixed number of connections to
//! 127.0.0.1, each sending one message at a time and waiting for its whole echo (a closed loop),
//! for a warm-up and then a measured duration.
//!
//! ```text
//! echo-load --port P --cpus LIST [--threads N] [--connections 64] [--bytes 64] [--warmup-s 2]
//!           [--seconds 10]
//! ```
//!
//! The connections are dealt round-robin to `--threads` event loops (by default one per CPU of
//! `LIST`, at most one per connection), each pinned to one CPU of the list; with one thread it is
//! pinned to the whole list. Each loop is one epoll set (mio) over its connections, with no async
//! runtime and no allocation per message: the time goes to the kernel's loopback TCP stack.
//!
//! It is started by the server under test (which appends `--port`), inherits the server's stdout
//! and so speaks to the sampler directly (docker/README.md, the latency kind):
//!
//! - `result qps=… server_cpu_pct=… server_hwm_bytes=… load_cpu_pct=… load_cpus=…
//!   requests_per_server_cpu_s=… messages=… connections=… bytes=… seconds=…`: messages echoed per
//!   second in the measured window; the server's CPU time (user + system, from
//!   `/proc/<server>/stat`) over the window as a percentage of one CPU; the server's `VmHWM` at the
//!   end, in bytes; the generator's own CPU time over the window as a percentage of the CPUs it
//!   runs on (near 100 % means it may be what limits the rate); how many (its threads); and the
//!   messages of the window ÷ the server's CPU seconds in it, a rate that a saturated generator
//!   does not distort (left out, with a `note`, when the server used no whole clock tick).
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use echo_load::{Flags, Histogram, ProcStat, cpu_list, note, pin_self, say, usage_error};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

const USAGE: &str = "usage: echo-load --port P --cpus LIST [--threads N] [--connections C] \
                     [--bytes B] [--warmup-s W] [--seconds S]";

struct Args {
    port: u16,
    cpus: String,
    /// `--threads`; one per CPU of `cpus` (at most one per connection) when left out.
    threads: Option<usize>,
    connections: usize,
    bytes: usize,
    warmup: Duration,
    measure: Duration,
}

fn parse_args() -> Result<Args, String> {
    let flags = Flags::parse(&[
        "--port",
        "--cpus",
        "--threads",
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
    let connections = within("--connections", 64, 1, 10_000)? as usize;
    let threads = match flags.get("--threads") {
        None => None,
        Some(_) => Some(within("--threads", 1, 1, connections as u64)? as usize),
    };
    Ok(Args {
        port,
        cpus: flags.get("--cpus").ok_or("--cpus is required")?.to_owned(),
        threads,
        connections,
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

/// What one event loop hands back: its connections' counts and what its window saw.
struct Loop {
    conns: Vec<(usize, Conn)>,
    window: Window,
}

/// One event loop over its share of the connections (`(id, connection)`), from `start` until
/// `end`, recording the echoes that complete from `begin` on. `stop` is raised by a loop that
/// fails, so that the others end too.
fn event_loop(
    mut conns: Vec<(usize, Conn)>,
    bytes: usize,
    (begin, end): (Instant, Instant),
    stop: &AtomicBool,
) -> Result<Loop, String> {
    let mut poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
    for (slot, (id, c)) in conns.iter_mut().enumerate() {
        poll.registry()
            .register(
                &mut c.stream,
                Token(slot),
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(|e| format!("connection {id}: registering with epoll: {e}"))?;
    }
    let mut w = Window {
        hist: echo_load::ns_histogram(),
        messages: 0,
        recording: false,
    };
    for (id, c) in &mut conns {
        c.next_message(*id);
        write_some(c, *id)?;
    }
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; bytes];
    loop {
        let now = Instant::now();
        if !w.recording && now >= begin {
            w.recording = true;
            for (_, c) in &mut conns {
                c.done_at_start = c.done;
            }
        }
        if now >= end || stop.load(Ordering::Relaxed) {
            break;
        }
        let timeout = Some(Duration::from_millis(50).min(end - now));
        match poll.poll(&mut events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("epoll_wait: {e}")),
        }
        for ev in events.iter() {
            let (id, c) = &mut conns[ev.token().0];
            let id = *id;
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
    Ok(Loop { conns, window: w })
}

fn run(args: &Args) -> Result<(), String> {
    let pinning = |e: String| {
        format!(
            "pinning the load generator to {:?} (the run's CPUs besides the server's): {e}",
            args.cpus
        )
    };
    let cpus = cpu_list(&args.cpus).map_err(pinning)?;
    pin_self(&args.cpus).map_err(pinning)?;
    let threads = args
        .threads
        .unwrap_or_else(|| cpus.len().min(args.connections));
    // The CPUs the loops can use at once: the generator's share of the machine.
    let load_cpus = threads.min(cpus.len());
    let server = std::os::unix::process::parent_id();
    let addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    // Every connection is open before the clock starts; loop `t` gets connections t, t + threads, …
    let mut shares: Vec<Vec<(usize, Conn)>> = (0..threads).map(|_| Vec::new()).collect();
    for id in 0..args.connections {
        let std_stream = connect(addr)?;
        std_stream
            .set_nodelay(true)
            .and_then(|()| std_stream.set_nonblocking(true))
            .map_err(|e| format!("connection {id}: {e}"))?;
        shares[id % threads].push((
            id,
            Conn {
                stream: TcpStream::from_std(std_stream),
                done: 0,
                done_at_start: 0,
                out: vec![0; args.bytes],
                written: 0,
                echoed: 0,
                sent_at: Instant::now(),
            },
        ));
    }
    let start = Instant::now();
    let (begin, end) = (start + args.warmup, start + args.warmup + args.measure);
    let stop = AtomicBool::new(false);
    let (loops, window) = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for (t, share) in shares.into_iter().enumerate() {
            let (stop, bytes) = (&stop, args.bytes);
            // One thread keeps the whole list (as before there were threads); several take a CPU
            // each, in the list's order.
            let cpu = (threads > 1).then(|| cpus[t % cpus.len()].to_string());
            handles.push(scope.spawn(move || {
                if let Some(cpu) = cpu {
                    pin_self(&cpu).map_err(|e| format!("pinning loop {t} to CPU {cpu}: {e}"))?;
                }
                let out = event_loop(share, bytes, (begin, end), stop);
                if out.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                out
            }));
        }
        // The CPU readings bracket the window: taken here, on this thread, while the loops run.
        std::thread::sleep(begin.saturating_duration_since(Instant::now()));
        let at_begin = (
            Instant::now(),
            ProcStat::read(server),
            ProcStat::read(std::process::id()),
        );
        let loops: Vec<Result<Loop, String>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("an event loop panicked".into()))
            })
            .collect();
        (loops, at_begin)
    });
    let (t0, server0, own0) = window;
    let secs = t0.elapsed().as_secs_f64();
    let loops = loops.into_iter().collect::<Result<Vec<Loop>, String>>()?;
    let server_cpu = ProcStat::read(server)?.cpu_s - server0?.cpu_s;
    let own_cpu = ProcStat::read(std::process::id())?.cpu_s - own0?.cpu_s;
    let hwm = echo_load::vm_hwm_kib(server)?;
    let mut hist = echo_load::ns_histogram();
    let mut messages = 0;
    for l in &loops {
        hist.add(&l.window.hist)
            .map_err(|e| format!("merging the loops' histograms: {e}"))?;
        messages += l.window.messages;
        if let Some((id, c)) = l.conns.iter().find(|(_, c)| c.done == c.done_at_start) {
            return Err(format!(
                "connection {id} echoed nothing in the measured window ({} messages before it): \
                 the server stalled it",
                c.done
            ));
        }
    }
    let per_server_cpu_s = if server_cpu > 0.0 {
        format!(
            " requests_per_server_cpu_s={:.1}",
            messages as f64 / server_cpu
        )
    } else {
        note("requests_per_server_cpu_s not measured: the server used no whole clock tick of CPU");
        String::new()
    };
    say(&format!(
        "result qps={:.1} server_cpu_pct={:.2} server_hwm_bytes={} load_cpu_pct={:.2} \
         load_cpus={load_cpus}{per_server_cpu_s} messages={messages} connections={} bytes={} \
         seconds={secs:.3}",
        messages as f64 / secs,
        100.0 * server_cpu / secs,
        hwm * 1024,
        100.0 * own_cpu / secs / load_cpus as f64,
        args.connections,
        args.bytes,
    ))
    .map_err(|e| format!("stdout: {e}"))?;
    echo_load::print_histogram(&hist).map_err(|e| format!("stdout: {e}"))
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
