//! The steady kind: drives a probe through the handshake protocol (`baseline`, `ready`, `done`)
//! and samples its memory while its tasks are parked.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::args::Options;
use crate::json::Value;
use crate::notes::Notes;
use crate::parse::{ProbeLine, ProcStatus, parse_probe_line, parse_status};
use crate::process::{self, Event, MAX_LINE, describe, excerpt, ms};

/// How long to wait for the rest of a probe's end (exit status, end of stdout) once part of it
/// has been seen.
const GRACE: Duration = Duration::from_secs(2);

/// Everything the JSON output reports, filled in as the protocol goes.
#[derive(Default)]
pub struct Report {
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
    notes: Notes,
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
            field("notes", self.notes.to_json()),
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
    /// The probe's `note` lines, from any phase.
    notes: Notes,
}

impl Probe {
    fn spawn(opts: &Options) -> Result<Probe, String> {
        let (mut child, started) =
            process::spawn(&opts.command, opts.cpus.as_deref(), Stdio::piped())?;
        let stdin = child.stdin.take();
        let events = process::watch(&mut child);
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
            notes: Notes::default(),
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
                Event::Line(line) if self.notes.take(&line) => {}
                Event::LineTooLong(start) if self.notes.take(&start) => {}
                Event::Line(line) => return Ok(line),
                Event::LineTooLong(_) => {
                    return Err(format!(
                        "protocol: line longer than {MAX_LINE} bytes in phase {phase}"
                    ));
                }
                Event::ReadError(e) => return Err(format!("reading the probe's stdout: {e}")),
                Event::Stamp(_) => {}
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
                Err(RecvTimeoutError::Timeout) | Ok(Event::Stamp(_)) => {}
                Ok(Event::Line(line)) if self.notes.take(&line) => {}
                Ok(Event::LineTooLong(start)) if self.notes.take(&start) => {}
                Ok(Event::Line(line)) => {
                    return Err(format!(
                        "protocol: unexpected output in phase {phase}: {}",
                        excerpt(&line)
                    ));
                }
                Ok(Event::LineTooLong(_)) => {
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
                Ok(Event::Line(line)) if self.notes.take(&line) => {}
                Ok(Event::LineTooLong(start)) if self.notes.take(&start) => {}
                Ok(Event::Line(line)) => return Err(unexpected(&line)),
                Ok(Event::LineTooLong(_)) => return Err(unexpected("(line too long)")),
                Ok(Event::ReadError(e)) => return Err(format!("reading the probe's stdout: {e}")),
                Ok(Event::Eof) => self.eof_at = Some(Instant::now()),
                Ok(Event::Exited(at)) => self.on_exit(at),
                Ok(Event::Stamp(_)) => {}
                Err(RecvTimeoutError::Timeout) => return Err(self.timeout(phase)),
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        // Output written just before exit may still be on its way; stop at the end of stdout.
        let until = (Instant::now() + GRACE).min(self.deadline);
        while self.eof_at.is_none() {
            let left = until.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Line(line)) if self.notes.take(&line) => {}
                Ok(Event::LineTooLong(start)) if self.notes.take(&start) => {}
                Ok(Event::Line(line)) => return Err(unexpected(&line)),
                Ok(Event::LineTooLong(_)) => return Err(unexpected("(line too long)")),
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
    rep.notes = std::mem::take(&mut probe.notes);
    rep.probe_ms = probe.exited_at.map(|t| ms(t - probe.started));
    result
}

/// Runs the steady kind (unless the command line was wrong) and returns its report and error.
pub fn report(cpus: Option<String>, opts: Result<Options, String>) -> (Value, Option<String>) {
    let mut rep = Report {
        cpus_requested: cpus,
        ..Report::default()
    };
    rep.error = opts.and_then(|o| run(&o, &mut rep)).err();
    (rep.to_json(), rep.error.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

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
            r#"{"schema":1,"cpus_requested":null,"cpus_in_force":null,"baseline":null,"samples":[],"ready":{},"done":{},"timings_ms":{"spawn":null,"measure":null,"release":null,"probe":null},"notes":[],"exit_code":null,"signal":null,"error":"x \"y\""}"#
        );
    }
}
