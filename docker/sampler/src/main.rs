//! sampler — runs one probe through the parkbench probe protocol and samples its memory.
//!
//! ```text
//! sampler [--cpus LIST] [--settle-ms 500] [--samples 5] [--interval-ms 50] [--timeout-s 300] -- <probe> <args…>
//! ```
//!
//! The probe is started with piped stdin/stdout (stderr is inherited), pinned with
//! `sched_setaffinity` to `--cpus` (kernel list format, e.g. `0-3,6`) before exec. Protocol:
//!
//! 1. probe prints `baseline …`; the sampler reads `/proc/<pid>/status` and writes a newline;
//! 2. probe creates its tasks and prints `ready key=value…`; the sampler waits `--settle-ms`,
//!    takes `--samples` readings of `/proc/<pid>/status` `--interval-ms` apart, writes a newline;
//! 3. probe releases its tasks, prints `done completed=<n> key=value…` and exits 0.
//!
//! Anything else is a protocol error. `--timeout-s` bounds the whole run; past it the probe is
//! killed with SIGKILL.
//!
//! Output: exactly one JSON object on one line of stdout, always, also on errors:
//!
//! ```text
//! {"schema":1,
//!  "cpus_requested":"0-1",    // the --cpus value, or null
//!  "cpus_in_force":"0-1",     // Cpus_allowed_list of the probe at baseline, or null
//!  "baseline":{"vm_rss_kib":123,"vm_hwm_kib":123,"rss_anon_kib":1,"rss_file_kib":2,"threads":5},
//!                             // /proc/<pid>/status at baseline, or null; a field the kernel
//!                             // does not show is null
//!  "samples":[{"t_ms":500.3,"vm_rss_kib":…,"vm_hwm_kib":…,"rss_anon_kib":…,"rss_file_kib":…,"threads":…}, …],
//!                             // readings after ready; t_ms is measured from the ready line
//!  "ready":{"goroutines":1001,"stack_inuse_bytes":2048000},
//!                             // key=value metrics of the ready line ({} if never reached);
//!                             // numbers as JSON numbers, anything else as strings
//!  "done":{"completed":1000}, // key=value metrics of the done line ({} if never reached)
//!  "timings_ms":{"spawn":12.5,"measure":702.1,"release":3.2,"probe":800.0},
//!                             // spawn: baseline acknowledged → ready line; measure: ready line →
//!                             // last reading; release: release line written → done line;
//!                             // probe: spawn → exit. null when not reached
//!  "exit_code":0,"signal":null,   // how the probe ended; null when unknown
//!  "error":null}              // why the protocol failed: protocol error, timeout, crash, …
//! ```
//!
//! Sizes are KiB as the kernel reports them (its "kB"), times milliseconds.
//! Exit status: 0 when the protocol ran to the end and the probe exited 0 (whatever `completed`
//! says: judging it is the driver's job), 1 otherwise.

mod json;
mod parse;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use json::Value;
use parse::{
    ProbeLine, ProcStatus, format_cpu_list, parse_cpu_list, parse_probe_line, parse_status,
};

const USAGE: &str = "usage: sampler [--cpus LIST] [--settle-ms 500] [--samples 5] [--interval-ms 50] \
                     [--timeout-s 300] -- <probe> <args…>";

/// How long to wait for the rest of a probe's end (exit status, end of stdout) once part of it
/// has been seen.
const GRACE: Duration = Duration::from_secs(2);

/// Longest probe line accepted, bytes.
const MAX_LINE: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq)]
struct Options {
    cpus: Option<String>,
    settle_ms: u64,
    samples: u32,
    interval_ms: u64,
    timeout_s: u64,
    command: Vec<String>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        cpus: None,
        settle_ms: 500,
        samples: 5,
        interval_ms: 50,
        timeout_s: 300,
        command: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" {
            opts.command = args[i + 1..].to_vec();
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        if !matches!(
            name,
            "--cpus" | "--settle-ms" | "--samples" | "--interval-ms" | "--timeout-s"
        ) {
            return Err(format!(
                "unknown argument {arg:?} (the probe's command goes after `--`)"
            ));
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i)
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))?
            }
        };
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{name}: {value:?} is not a non-negative integer"))
        };
        match name {
            "--cpus" => opts.cpus = Some(value.clone()),
            "--settle-ms" => opts.settle_ms = number()?,
            "--interval-ms" => opts.interval_ms = number()?,
            "--samples" => {
                opts.samples = u32::try_from(number()?)
                    .map_err(|_| format!("{name}: {value} is too large"))?;
                if opts.samples == 0 {
                    return Err("--samples must be at least 1".into());
                }
            }
            "--timeout-s" => {
                opts.timeout_s = number()?;
                if opts.timeout_s == 0 {
                    return Err("--timeout-s must be at least 1".into());
                }
            }
            _ => unreachable!(),
        }
        i += 1;
    }
    if opts.command.is_empty() {
        return Err("no probe command given after `--`".into());
    }
    Ok(opts)
}

/// What the reader and waiter threads report.
enum Event {
    Line(String),
    LineTooLong,
    Eof,
    ReadError(String),
    /// The probe has exited (not yet reaped).
    Exited(Instant),
}

/// Everything the JSON output reports, filled in as the protocol goes.
#[derive(Default)]
struct Report {
    cpus_requested: Option<String>,
    cpus_in_force: Option<String>,
    baseline: Option<ProcStatus>,
    samples: Vec<(f64, ProcStatus)>,
    ready: Option<ProbeLine>,
    done: Option<ProbeLine>,
    spawn_ms: Option<f64>,
    measure_ms: Option<f64>,
    release_ms: Option<f64>,
    probe_ms: Option<f64>,
    status: Option<ExitStatus>,
    error: Option<String>,
}

impl Report {
    fn to_json(&self) -> Value {
        let lines = |l: &Option<ProbeLine>| {
            l.as_ref()
                .map_or(Value::Obj(Vec::new()), ProbeLine::metrics_json)
        };
        let field = |k: &str, v: Value| (k.to_owned(), v);
        Value::Obj(vec![
            field("schema", Value::UInt(1)),
            field(
                "cpus_requested",
                Value::opt_str(self.cpus_requested.as_deref()),
            ),
            field(
                "cpus_in_force",
                Value::opt_str(self.cpus_in_force.as_deref()),
            ),
            field(
                "baseline",
                self.baseline
                    .as_ref()
                    .map_or(Value::Null, |b| b.to_json(None)),
            ),
            field(
                "samples",
                Value::Arr(
                    self.samples
                        .iter()
                        .map(|(t, s)| s.to_json(Some(*t)))
                        .collect(),
                ),
            ),
            field("ready", lines(&self.ready)),
            field("done", lines(&self.done)),
            field(
                "timings_ms",
                Value::Obj(vec![
                    field("spawn", Value::opt_ms(self.spawn_ms)),
                    field("measure", Value::opt_ms(self.measure_ms)),
                    field("release", Value::opt_ms(self.release_ms)),
                    field("probe", Value::opt_ms(self.probe_ms)),
                ]),
            ),
            field(
                "exit_code",
                self.status
                    .and_then(|s| s.code())
                    .map_or(Value::Null, |c| Value::Int(c.into())),
            ),
            field(
                "signal",
                self.status
                    .and_then(|s| s.signal())
                    .map_or(Value::Null, |c| Value::Int(c.into())),
            ),
            field("error", Value::opt_str(self.error.as_deref())),
        ])
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A probe line for an error message: at most 200 characters, quoted.
fn excerpt(line: &str) -> String {
    let mut s: String = line.chars().take(200).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    format!("{s:?}")
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => format!("ended ({status})"),
    }
}

/// The running probe and the events of its stdout and exit.
struct Probe {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<Event>,
    started: Instant,
    deadline: Instant,
    timeout_s: u64,
    eof_at: Option<Instant>,
    exited_at: Option<Instant>,
    status: Option<ExitStatus>,
}

impl Probe {
    fn spawn(opts: &Options) -> Result<Probe, String> {
        let mut cmd = Command::new(&opts.command[0]);
        cmd.args(&opts.command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut pinned = String::new();
        if let Some(list) = &opts.cpus {
            let cpus = parse_cpu_list(list).map_err(|e| format!("--cpus: {e}"))?;
            check_available(&cpus)?;
            let set = cpu_set(&cpus);
            // SAFETY: the closure runs in the forked child before exec and only makes one
            // async-signal-safe system call on a set built beforehand.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
                    {
                        Ok(())
                    } else {
                        Err(io::Error::last_os_error())
                    }
                });
            }
            pinned = format!(
                " pinned to CPUs {} (sched_setaffinity, then exec)",
                format_cpu_list(&cpus)
            );
        }
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("starting probe {:?}{pinned}: {e}", opts.command[0]))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, events) = mpsc::channel();
        spawn_reader(stdout, tx.clone());
        spawn_waiter(child.id(), tx);
        Ok(Probe {
            child,
            stdin,
            events,
            started,
            deadline: started + Duration::from_secs(opts.timeout_s),
            timeout_s: opts.timeout_s,
            eof_at: None,
            exited_at: None,
            status: None,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn timeout(&self, phase: &str) -> String {
        format!("timeout after {} s in phase {phase}", self.timeout_s)
    }

    fn on_exit(&mut self, at: Instant) {
        if self.exited_at.is_none() {
            self.exited_at = Some(at);
        }
        if self.status.is_none() {
            self.status = self.child.wait().ok();
        }
    }

    /// The message for a probe that ended (or closed its stdout) `when` (e.g. "before ready").
    fn ended(&self, when: &str) -> String {
        match self.status {
            Some(status) => format!("probe {} {when}", describe(status)),
            None if self.exited_at.is_some() => format!("probe exited {when}"),
            None => format!("probe closed its stdout {when}"),
        }
    }

    /// The deadline in force: the overall one, or a short grace once the probe's end has begun.
    fn effective_deadline(&self) -> (Instant, bool) {
        match self.eof_at.into_iter().chain(self.exited_at).min() {
            Some(t) if t + GRACE < self.deadline => (t + GRACE, true),
            _ => (self.deadline, false),
        }
    }

    /// Waits for the next event; Eof and Exited are recorded as well as returned.
    fn next_event(&mut self, phase: &str, when: &str) -> Result<Event, String> {
        let (until, grace) = self.effective_deadline();
        let left = until.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(left) {
            Ok(ev) => {
                match ev {
                    Event::Eof => self.eof_at = Some(Instant::now()),
                    Event::Exited(at) => self.on_exit(at),
                    _ => {}
                }
                Ok(ev)
            }
            Err(RecvTimeoutError::Timeout) if grace => Err(self.ended(when)),
            Err(RecvTimeoutError::Timeout) => Err(self.timeout(phase)),
            Err(RecvTimeoutError::Disconnected) => Err(self.ended(when)),
        }
    }

    /// The next line of the probe's stdout, expected in `phase`.
    fn next_line(&mut self, phase: &str) -> Result<String, String> {
        let when = format!("before {phase}");
        loop {
            match self.next_event(phase, &when)? {
                Event::Line(line) => return Ok(line),
                Event::LineTooLong => {
                    return Err(format!(
                        "protocol: line longer than {MAX_LINE} bytes in phase {phase}"
                    ));
                }
                Event::ReadError(e) => return Err(format!("reading the probe's stdout: {e}")),
                Event::Eof | Event::Exited(_) => {
                    if self.eof_at.is_some() && self.exited_at.is_some() {
                        return Err(self.ended(&when));
                    }
                }
            }
        }
    }

    /// After an unexpected end of stdout or exit: waits briefly for the exit status, then
    /// returns the message saying how the probe ended.
    fn settle_end(&mut self, when: &str) -> String {
        let until = (Instant::now() + GRACE).min(self.deadline);
        while self.exited_at.is_none() {
            let left = until.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Exited(at)) => self.on_exit(at),
                Ok(Event::Eof) => self.eof_at = Some(Instant::now()),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        self.ended(when)
    }

    /// Waits until `t` while the probe should be quiet (between ready and release).
    fn idle_until(&mut self, t: Instant, phase: &str) -> Result<(), String> {
        loop {
            let now = Instant::now();
            if now >= t {
                return Ok(());
            }
            if now >= self.deadline {
                return Err(self.timeout(phase));
            }
            match self.events.recv_timeout(t.min(self.deadline) - now) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Event::Line(line)) => {
                    return Err(format!(
                        "protocol: unexpected output in phase {phase}: {}",
                        excerpt(&line)
                    ));
                }
                Ok(Event::LineTooLong) => {
                    return Err(format!(
                        "protocol: unexpected output in phase {phase}: line longer than {MAX_LINE} bytes"
                    ));
                }
                Ok(Event::ReadError(e)) => return Err(format!("reading the probe's stdout: {e}")),
                Ok(Event::Eof) => {
                    self.eof_at = Some(Instant::now());
                    return Err(self.settle_end(&format!("during {phase}")));
                }
                Ok(Event::Exited(at)) => {
                    self.on_exit(at);
                    return Err(self.settle_end(&format!("during {phase}")));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.settle_end(&format!("during {phase}")));
                }
            }
        }
    }

    /// Writes one newline to the probe's stdin (the acknowledgement or the release).
    fn send_line(&mut self, phase: &str) -> Result<(), String> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(format!("internal: stdin already closed in phase {phase}"));
        };
        if let Err(e) = stdin.write_all(b"\n").and_then(|()| stdin.flush()) {
            let msg = self.settle_end(&format!("before {phase}"));
            return Err(if self.status.is_some() {
                msg
            } else {
                format!("writing to the probe's stdin in phase {phase}: {e}")
            });
        }
        Ok(())
    }

    /// Reads `/proc/<pid>/status`; a probe that has exited meanwhile is an error.
    fn read_status(&mut self, phase: &str) -> Result<ProcStatus, String> {
        let path = format!("/proc/{}/status", self.pid());
        let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
        let st = parse_status(&text);
        if st.vm_rss_kib.is_none() {
            return Err(self.settle_end(&format!("during {phase}")));
        }
        Ok(st)
    }

    /// After `done`: waits for the probe to exit without printing anything more.
    fn wait_exit(&mut self) -> Result<(), String> {
        self.stdin = None;
        let phase = "exit";
        let unexpected = |line: &str| {
            format!(
                "protocol: unexpected output after `done`: {}",
                excerpt(line)
            )
        };
        while self.exited_at.is_none() {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Line(line)) => return Err(unexpected(&line)),
                Ok(Event::LineTooLong) => return Err(unexpected("(line too long)")),
                Ok(Event::ReadError(e)) => return Err(format!("reading the probe's stdout: {e}")),
                Ok(Event::Eof) => self.eof_at = Some(Instant::now()),
                Ok(Event::Exited(at)) => self.on_exit(at),
                Err(RecvTimeoutError::Timeout) => return Err(self.timeout(phase)),
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        // Output written just before exit may still be on its way; stop at the end of stdout.
        let until = (Instant::now() + GRACE).min(self.deadline);
        while self.eof_at.is_none() {
            let left = until.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Line(line)) => return Err(unexpected(&line)),
                Ok(Event::LineTooLong) => return Err(unexpected("(line too long)")),
                Ok(Event::Eof) => self.eof_at = Some(Instant::now()),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        match self.status {
            Some(s) if s.success() => Ok(()),
            Some(s) => Err(format!("probe {} after done", describe(s))),
            None => Err("probe's exit status is unknown".into()),
        }
    }

    /// Kills the probe unless it has exited, and reaps it.
    fn kill(&mut self) {
        if self.exited_at.is_none() {
            let _ = self.child.kill();
            self.status = self.child.wait().ok();
            self.exited_at = Some(Instant::now());
        } else if self.status.is_none() {
            self.status = self.child.wait().ok();
        }
    }
}

fn spawn_reader(stdout: ChildStdout, tx: Sender<Event>) {
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
            {
                Ok(0) => {
                    let _ = tx.send(Event::Eof);
                    return;
                }
                Ok(_) => {
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                        if buf.last() == Some(&b'\r') {
                            buf.pop();
                        }
                    } else if buf.len() > MAX_LINE {
                        let _ = tx.send(Event::LineTooLong);
                        return;
                    }
                    let line = String::from_utf8_lossy(&buf).into_owned();
                    if tx.send(Event::Line(line)).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Event::ReadError(e.to_string()));
                    return;
                }
            }
        }
    });
}

/// Waits for the probe to exit without reaping it (`WNOWAIT`), so that its pid stays valid for
/// `/proc` and `kill` until the main thread reaps it.
fn spawn_waiter(pid: u32, tx: Sender<Event>) {
    thread::spawn(move || {
        loop {
            // SAFETY: waitid only writes into the zeroed siginfo_t we pass.
            let rc = unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if rc == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break;
            }
        }
        let _ = tx.send(Event::Exited(Instant::now()));
    });
}

fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only touch the set, and every CPU was
    // checked to be below CPU_SETSIZE by the parser.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        set
    }
}

/// Fails unless every requested CPU is in the sampler's own affinity mask (the container's
/// cpuset): the kernel would otherwise pin the probe to fewer CPUs than asked, silently.
fn check_available(cpus: &[usize]) -> Result<(), String> {
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `set`.
    let allowed: Vec<usize> = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(format!("sched_getaffinity: {}", io::Error::last_os_error()));
        }
        (0..parse::MAX_CPUS)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    };
    let missing: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !allowed.contains(c))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "--cpus {}: CPU(s) {} not available (the sampler may use {})",
            format_cpu_list(cpus),
            format_cpu_list(&missing),
            format_cpu_list(&allowed)
        ))
    }
}

/// Parses a protocol line that must start with `word`.
fn expect(line: &str, word: &str) -> Result<ProbeLine, String> {
    match parse_probe_line(line) {
        Ok(parsed) if parsed.word == word => Ok(parsed),
        Ok(_) => Err(format!(
            "protocol: expected `{word}`, got {}",
            excerpt(line)
        )),
        Err(e) if line.split_whitespace().next() == Some(word) => Err(format!(
            "protocol: malformed `{word}` line {}: {e}",
            excerpt(line)
        )),
        Err(_) => Err(format!(
            "protocol: expected `{word}`, got {}",
            excerpt(line)
        )),
    }
}

/// Runs the protocol, recording into `rep` as it goes.
fn drive(p: &mut Probe, opts: &Options, rep: &mut Report) -> Result<(), String> {
    let line = p.next_line("baseline")?;
    expect(&line, "baseline")?;
    let st = p.read_status("baseline")?;
    rep.cpus_in_force = st.cpus_allowed_list.clone();
    rep.baseline = Some(st);

    p.send_line("ready")?;
    let acked = Instant::now();
    let line = p.next_line("ready")?;
    let ready_at = Instant::now();
    rep.spawn_ms = Some(ms(ready_at - acked));
    rep.ready = Some(expect(&line, "ready")?);

    let settle = Duration::from_millis(opts.settle_ms);
    let interval = Duration::from_millis(opts.interval_ms);
    for i in 0..opts.samples {
        p.idle_until(ready_at + settle + interval * i, "measure")?;
        let st = p.read_status("measure")?;
        rep.samples.push((ms(ready_at.elapsed()), st));
    }
    rep.measure_ms = Some(ms(ready_at.elapsed()));

    p.send_line("done")?;
    let released = Instant::now();
    let line = p.next_line("done")?;
    rep.release_ms = Some(ms(released.elapsed()));
    let done = expect(&line, "done")?;
    let has_completed = matches!(done.get("completed"), Some(Value::UInt(_)));
    rep.done = Some(done);
    if !has_completed {
        return Err(format!(
            "protocol: `done` line lacks completed=<non-negative integer>: {}",
            excerpt(&line)
        ));
    }
    p.wait_exit()
}

fn run(opts: &Options, rep: &mut Report) -> Result<(), String> {
    let mut probe = Probe::spawn(opts)?;
    let result = drive(&mut probe, opts, rep);
    if result.is_err() {
        probe.kill();
    }
    rep.status = probe.status;
    rep.probe_ms = probe.exited_at.map(|t| ms(t - probe.started));
    result
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut rep = Report::default();
    let result = match parse_args(&args) {
        Ok(opts) => {
            rep.cpus_requested = opts.cpus.clone();
            run(&opts, &mut rep)
        }
        Err(e) => {
            eprintln!("{USAGE}");
            rep.cpus_requested = args
                .iter()
                .position(|a| a == "--cpus")
                .and_then(|i| args.get(i + 1))
                .cloned();
            Err(format!("usage: {e}"))
        }
    };
    if let Err(e) = result {
        eprintln!("sampler: {e}");
        rep.error = Some(e);
    }
    let mut out = rep.to_json().to_json();
    out.push('\n');
    let mut stdout = io::stdout().lock();
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
    std::process::exit(if rep.error.is_none() { 0 } else { 1 });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn args_defaults_and_values() {
        let o = parse_args(&args("-- ./probe --tasks 10")).unwrap();
        assert_eq!(
            (o.cpus, o.settle_ms, o.samples, o.interval_ms, o.timeout_s),
            (None, 500, 5, 50, 300)
        );
        assert_eq!(o.command, args("./probe --tasks 10"));
        let o = parse_args(&args(
            "--cpus 0-1 --settle-ms=10 --samples 3 --interval-ms 5 --timeout-s 9 -- p",
        ))
        .unwrap();
        assert_eq!(
            (
                o.cpus.as_deref(),
                o.settle_ms,
                o.samples,
                o.interval_ms,
                o.timeout_s
            ),
            (Some("0-1"), 10, 3, 5, 9)
        );
    }

    #[test]
    fn args_errors() {
        for bad in [
            "",
            "--",
            "p",
            "--cpus",
            "--samples 0 -- p",
            "--timeout-s 0 -- p",
            "--settle-ms x -- p",
            "--bogus 1 -- p",
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn expect_words() {
        assert_eq!(
            expect("ready a=1", "ready").unwrap().get("a"),
            Some(&Value::UInt(1))
        );
        assert_eq!(
            expect("foo", "ready").unwrap_err(),
            "protocol: expected `ready`, got \"foo\""
        );
        assert!(
            expect("ready a", "ready")
                .unwrap_err()
                .starts_with("protocol: malformed `ready` line")
        );
        assert!(expect("readyx", "ready").is_err());
    }

    #[test]
    fn empty_report() {
        let rep = Report {
            error: Some("x \"y\"".into()),
            ..Report::default()
        };
        assert_eq!(
            rep.to_json().to_json(),
            r#"{"schema":1,"cpus_requested":null,"cpus_in_force":null,"baseline":null,"samples":[],"ready":{},"done":{},"timings_ms":{"spawn":null,"measure":null,"release":null,"probe":null},"exit_code":null,"signal":null,"error":"x \"y\""}"#
        );
    }
}
