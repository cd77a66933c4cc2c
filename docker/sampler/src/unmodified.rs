//! The peak, timed and latency kinds: the program runs as it is, without a handshake, stdin from
//! `/dev/null`. While it runs, `/proc/<pid>/status` is polled every `--interval-ms` (the first
//! time right after the start); at its exit `wait4` reaps it and gives its largest RSS and its
//! CPU times. Its `result` lines (and for the latency kind its `latency` lines) are collected.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::args::{Kind, Options};
use crate::batches::{Counters, Windows};
use crate::json::Value;
use crate::notes::Notes;
use crate::parse::{ProbeLine, ProcStatus, parse_cpu_list, parse_status};
use crate::process::{self, Event, MAX_LINE, Reaped, describe, excerpt, ms};
use crate::results::{self, Histogram, Output};

/// How long to wait for the end of the program's stdout once it has exited (a descendant may
/// keep it open).
const GRACE: Duration = Duration::from_secs(2);

/// Figures of the whole run; `None` when unknown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Peak {
    /// Polls of `/proc/<pid>/status` that found the program running.
    pub polls: u64,
    /// Largest `VmHWM` polled (the process's own high-water mark of its RSS), KiB.
    pub vm_hwm_kib: Option<u64>,
    /// Largest `VmRSS` polled, KiB.
    pub vm_rss_max_kib: Option<u64>,
    /// Largest `Threads` polled.
    pub threads_max: Option<u64>,
    /// `ru_maxrss` from `wait4`: the largest RSS of the program and of the descendants it waited
    /// for, KiB.
    pub ru_maxrss_kib: Option<u64>,
    /// Start → exit, ms.
    pub wall_ms: Option<f64>,
    /// User CPU time of the program and the descendants it waited for, ms.
    pub user_ms: Option<f64>,
    /// System CPU time of the program and the descendants it waited for, ms.
    pub sys_ms: Option<f64>,
}

impl Peak {
    /// Takes one reading into account, unless the program had exited (no `VmRSS`).
    fn add_poll(&mut self, st: &ProcStatus) {
        if st.vm_rss_kib.is_none() {
            return;
        }
        self.polls += 1;
        self.vm_hwm_kib = self.vm_hwm_kib.max(st.vm_hwm_kib);
        self.vm_rss_max_kib = self.vm_rss_max_kib.max(st.vm_rss_kib);
        self.threads_max = self.threads_max.max(st.threads);
    }

    fn add_reaped(&mut self, r: &Reaped) {
        self.ru_maxrss_kib = Some(r.maxrss_kib);
        self.user_ms = Some(ms(r.user));
        self.sys_ms = Some(ms(r.sys));
    }

    fn to_json(&self) -> Value {
        let field = |k: &str, v: Value| (k.to_owned(), v);
        Value::Obj(vec![
            field("polls", Value::UInt(self.polls)),
            field("vm_hwm_kib", Value::opt_u64(self.vm_hwm_kib)),
            field("vm_rss_max_kib", Value::opt_u64(self.vm_rss_max_kib)),
            field("threads_max", Value::opt_u64(self.threads_max)),
            field("ru_maxrss_kib", Value::opt_u64(self.ru_maxrss_kib)),
            field("wall_ms", Value::opt_ms(self.wall_ms)),
            field("user_ms", Value::opt_ms(self.user_ms)),
            field("sys_ms", Value::opt_ms(self.sys_ms)),
        ])
    }
}

/// Everything the JSON output of these kinds reports.
pub struct Report {
    kind: Kind,
    cpus_requested: Option<String>,
    cpus_in_force: Option<String>,
    peak: Peak,
    results: Vec<ProbeLine>,
    latency: Histogram,
    other_lines: u64,
    notes: Notes,
    status: Option<ExitStatus>,
    error: Option<String>,
    /// Timed kind: each batch's window and what disturbed it (`batches.rs`).
    windows: Option<Windows>,
    /// Timed kind: the study's rule for dropping batches, echoed.
    rule: Option<(Option<f64>, Option<f64>, Option<u64>)>,
}

impl Report {
    fn new(kind: Kind, cpus_requested: Option<String>) -> Report {
        Report {
            kind,
            cpus_requested,
            cpus_in_force: None,
            peak: Peak::default(),
            results: Vec::new(),
            latency: Histogram::default(),
            other_lines: 0,
            notes: Notes::default(),
            status: None,
            error: None,
            windows: None,
            rule: None,
        }
    }

    /// `batches`: one object per `result` line of a timed program; `[]` for the other kinds.
    fn batches_json(&self) -> Value {
        let batches = self.windows.as_ref().map(|w| w.batches.as_slice());
        Value::Arr(
            batches
                .unwrap_or_default()
                .iter()
                .map(|b| b.to_json())
                .collect(),
        )
    }

    /// `batch_rule`: the rule the study declared for dropping batches, or `null`.
    fn rule_json(&self) -> Value {
        let Some((steal, wait, involuntary)) = self.rule else {
            return Value::Null;
        };
        let fraction = |f: Option<f64>| f.map_or(Value::Null, |f| Value::Float(f, None));
        Value::Obj(vec![
            ("steal_above".into(), fraction(steal)),
            ("wait_above".into(), fraction(wait)),
            (
                "involuntary_switches_above".into(),
                Value::opt_u64(involuntary),
            ),
        ])
    }

    fn to_json(&self) -> Value {
        let field = |k: &str, v: Value| (k.to_owned(), v);
        let status = |f: fn(&ExitStatus) -> Option<i32>| {
            self.status
                .as_ref()
                .and_then(f)
                .map_or(Value::Null, |c| Value::Int(c.into()))
        };
        Value::Obj(vec![
            field("schema", Value::UInt(1)),
            field("kind", Value::Str(self.kind.name().to_owned())),
            field(
                "cpus_requested",
                Value::opt_str(self.cpus_requested.as_deref()),
            ),
            field(
                "cpus_in_force",
                Value::opt_str(self.cpus_in_force.as_deref()),
            ),
            field("peak", self.peak.to_json()),
            field(
                "results",
                Value::Arr(self.results.iter().map(ProbeLine::metrics_json).collect()),
            ),
            field("latency", self.latency.to_json()),
            field("other_lines", Value::UInt(self.other_lines)),
            field("batches", self.batches_json()),
            field("batch_rule", self.rule_json()),
            field("notes", self.notes.to_json()),
            field("exit_code", status(ExitStatus::code)),
            field("signal", status(ExitStatus::signal)),
            field("error", Value::opt_str(self.error.as_deref())),
        ])
    }

    /// Takes one event of the program's stdout into account; returns a protocol error.
    fn take(&mut self, ev: Event) -> Option<String> {
        let with_latency = self.kind == Kind::Latency;
        if let (Some(w), Event::Line(line)) = (&mut self.windows, &ev)
            && results::counted_word(line, false) == Some("result")
        {
            w.result_line();
        }
        match ev {
            Event::Stamp(reading) => {
                if let Some(w) = &mut self.windows {
                    w.stamp(reading);
                }
            }
            Event::Line(line) if self.notes.take(&line) => {}
            Event::LineTooLong(start) if self.notes.take(&start) => {}
            Event::Line(line) => match results::classify(&line, with_latency) {
                Ok(Output::Result(l)) => self.results.push(l),
                Ok(Output::Latency { value_ns, count }) => {
                    return self.latency.add(value_ns, count).err();
                }
                Ok(Output::Other) => self.other_lines += 1,
                Err(e) => return Some(e),
            },
            Event::LineTooLong(start) => match results::counted_word(&start, with_latency) {
                Some(word) => {
                    return Some(format!(
                        "protocol: `{word}` line longer than {MAX_LINE} bytes: {}",
                        excerpt(&start)
                    ));
                }
                None => self.other_lines += 1,
            },
            Event::ReadError(e) => return Some(format!("reading the probe's stdout: {e}")),
            Event::Eof | Event::Exited(_) => {}
        }
        None
    }
}

/// The running program: its pid (not reaped until the end) and the events of its stdout and exit.
struct Watch {
    pid: u32,
    events: Receiver<Event>,
    eof: bool,
    /// The first protocol error or failed reading.
    error: Option<String>,
}

impl Watch {
    fn take(&mut self, rep: &mut Report, ev: Event) {
        if matches!(ev, Event::Eof | Event::ReadError(_)) {
            self.eof = true;
        }
        if let Some(e) = rep.take(ev) {
            self.error.get_or_insert(e);
        }
    }

    fn poll(&mut self, rep: &mut Report) {
        let path = format!("/proc/{}/status", self.pid);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let st = parse_status(&text);
                if rep.cpus_in_force.is_none() {
                    rep.cpus_in_force.clone_from(&st.cpus_allowed_list);
                }
                rep.peak.add_poll(&st);
            }
            Err(e) => {
                self.error.get_or_insert(format!("reading {path}: {e}"));
            }
        }
    }

    /// Polls from `started` on every `interval` and reads stdout until the program exits
    /// (returns when) or `deadline` passes (returns `None`).
    fn until_exit(
        &mut self,
        rep: &mut Report,
        started: Instant,
        interval: Duration,
        deadline: Instant,
    ) -> Option<Instant> {
        let mut next_poll = started;
        loop {
            let now = Instant::now();
            if now >= next_poll {
                self.poll(rep);
                // A late poll does not make up for the ones it missed.
                while next_poll <= now {
                    next_poll += interval;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return self.exited_meanwhile(rep);
            }
            match self
                .events
                .recv_timeout(next_poll.min(deadline).saturating_duration_since(now))
            {
                Ok(Event::Exited(at)) => return Some(at),
                Ok(ev) => self.take(rep, ev),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Some(Instant::now()),
            }
        }
    }

    /// At the deadline: whether the program's exit is already waiting among the events.
    fn exited_meanwhile(&mut self, rep: &mut Report) -> Option<Instant> {
        while let Ok(ev) = self.events.try_recv() {
            match ev {
                Event::Exited(at) => return Some(at),
                ev => self.take(rep, ev),
            }
        }
        None
    }

    /// Reads what is left of stdout, until its end or `until`.
    fn drain(&mut self, rep: &mut Report, until: Instant) {
        while !self.eof {
            let left = until.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(ev) => self.take(rep, ev),
                Err(_) => break,
            }
        }
    }
}

/// Why a run that ended this way failed, if it did: it ran past the timeout (`exited` is false),
/// or exited other than with code 0.
fn ending(exited: bool, status: ExitStatus, timeout_s: u64) -> Option<String> {
    if !exited {
        Some(format!("timeout after {timeout_s} s"))
    } else if status.success() {
        None
    } else {
        Some(format!("probe {}", describe(status)))
    }
}

fn run(opts: &Options, rep: &mut Report) -> Result<(), String> {
    let (mut child, started) = process::spawn(&opts.command, opts.cpus.as_deref(), Stdio::null())?;
    // Only for a timed program given a rule: a reported program runs as timed too, and reading
    // every thread of one with thousands at each line would cost it time for nothing.
    let rule = (opts.drop_steal, opts.drop_wait, opts.drop_involuntary);
    let mut stamps = None;
    if rep.kind == Kind::Timed && rule != (None, None, None) {
        let cpus = opts.cpus.as_deref().and_then(|c| parse_cpu_list(c).ok());
        let (windows, reader) = Windows::start(Counters::new(child.id(), cpus));
        rep.windows = Some(windows);
        rep.rule = Some(rule);
        stamps = Some(reader);
    }
    let mut watch = Watch {
        pid: child.id(),
        events: process::watch_stamped(&mut child, stamps),
        eof: false,
        error: None,
    };
    let interval = Duration::from_millis(opts.interval_ms);
    let deadline = started + Duration::from_secs(opts.timeout_s);
    let exited = watch.until_exit(rep, started, interval, deadline);
    if exited.is_none() {
        process::kill(watch.pid);
    }
    let reaped = process::reap(watch.pid);
    rep.peak.wall_ms = Some(ms(exited.unwrap_or_else(Instant::now) - started));
    watch.drain(rep, Instant::now() + GRACE);
    let reaped = reaped?;
    rep.peak.add_reaped(&reaped);
    rep.status = Some(reaped.status);
    match ending(exited.is_some(), reaped.status, opts.timeout_s).or(watch.error) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Runs one of these kinds (unless the command line was wrong) and returns its report and error.
pub fn report(
    kind: Kind,
    cpus: Option<String>,
    opts: Result<Options, String>,
) -> (Value, Option<String>) {
    let mut rep = Report::new(kind, cpus);
    rep.error = opts.and_then(|o| run(&o, &mut rep)).err();
    (rep.to_json(), rep.error.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_probe_line;

    fn status(kib: u64, threads: u64) -> ProcStatus {
        ProcStatus {
            vm_rss_kib: Some(kib),
            vm_hwm_kib: Some(kib + 10),
            threads: Some(threads),
            ..ProcStatus::default()
        }
    }

    #[test]
    fn peak_keeps_the_largest_readings() {
        let mut p = Peak::default();
        p.add_poll(&status(100, 4));
        p.add_poll(&status(300, 2));
        p.add_poll(&status(200, 1));
        // A zombie's status has no VmRSS: not a reading.
        p.add_poll(&ProcStatus {
            threads: Some(9),
            ..ProcStatus::default()
        });
        assert_eq!(
            (p.polls, p.vm_hwm_kib, p.vm_rss_max_kib, p.threads_max),
            (3, Some(310), Some(300), Some(4))
        );
    }

    #[test]
    fn report_json() {
        let mut rep = Report::new(Kind::Latency, Some("0-1".into()));
        rep.cpus_in_force = Some("0-1".into());
        rep.peak = Peak {
            polls: 12,
            vm_hwm_kib: Some(2048),
            vm_rss_max_kib: Some(2000),
            threads_max: Some(3),
            ru_maxrss_kib: Some(2100),
            wall_ms: Some(612.25),
            user_ms: Some(400.0),
            sys_ms: Some(20.5),
        };
        for line in [
            "result ns_per_op=12.5 batch=1",
            "result ns_per_op=13 batch=2",
        ] {
            rep.results.push(parse_probe_line(line).unwrap());
        }
        rep.latency.add(2000, 1).unwrap();
        rep.latency.add(1000, 2).unwrap();
        rep.latency.add(2000, 3).unwrap();
        rep.other_lines = 4;
        rep.status = Some(ExitStatus::from_raw(0));
        assert_eq!(
            rep.to_json().to_json(),
            r#"{"schema":1,"kind":"latency","cpus_requested":"0-1","cpus_in_force":"0-1","peak":{"polls":12,"vm_hwm_kib":2048,"vm_rss_max_kib":2000,"threads_max":3,"ru_maxrss_kib":2100,"wall_ms":612.250,"user_ms":400.000,"sys_ms":20.500},"results":[{"ns_per_op":12.5,"batch":1},{"ns_per_op":13,"batch":2}],"latency":[[1000,2],[2000,4]],"other_lines":4,"batches":[],"batch_rule":null,"notes":[],"exit_code":0,"signal":null,"error":null}"#
        );
    }

    #[test]
    fn report_json_when_nothing_is_known() {
        let mut rep = Report::new(Kind::Peak, None);
        rep.error = Some("usage: x".into());
        assert_eq!(
            rep.to_json().to_json(),
            r#"{"schema":1,"kind":"peak","cpus_requested":null,"cpus_in_force":null,"peak":{"polls":0,"vm_hwm_kib":null,"vm_rss_max_kib":null,"threads_max":null,"ru_maxrss_kib":null,"wall_ms":null,"user_ms":null,"sys_ms":null},"results":[],"latency":[],"other_lines":0,"batches":[],"batch_rule":null,"notes":[],"exit_code":null,"signal":null,"error":"usage: x"}"#
        );
        rep.status = Some(ExitStatus::from_raw(9));
        assert!(
            rep.to_json()
                .to_json()
                .contains(r#""exit_code":null,"signal":9,"#)
        );
    }

    #[test]
    fn stdout_lines() {
        let mut rep = Report::new(Kind::Timed, None);
        let line = |s: &str| Event::Line(s.to_owned());
        assert_eq!(rep.take(line("result a=1")), None);
        assert_eq!(rep.take(line("warming up")), None);
        assert_eq!(rep.take(line("latency value_ns=5 count=1")), None);
        assert_eq!(rep.take(Event::LineTooLong("some text".into())), None);
        assert_eq!(
            rep.take(Event::LineTooLong("result a=1 b=2".into())),
            Some(format!(
                "protocol: `result` line longer than {MAX_LINE} bytes: \"result a=1 b=2\""
            ))
        );
        assert_eq!(
            rep.take(line("result x")),
            Some("protocol: malformed `result` line \"result x\": \"x\" is not key=value".into())
        );
        assert_eq!(rep.take(line("note why: because")), None);
        assert_eq!(rep.take(Event::LineTooLong("note long".into())), None);
        assert_eq!((rep.results.len(), rep.other_lines), (1, 3));
        assert_eq!(rep.notes.to_json().to_json(), r#"["why: because","long"]"#);
        assert_eq!(rep.latency, Histogram::default());

        let mut rep = Report::new(Kind::Latency, None);
        assert_eq!(rep.take(line("latency value_ns=5 count=1")), None);
        assert_eq!(rep.take(line("latency value_ns=5 count=2")), None);
        assert!(rep.take(line("latency value_ns=5")).is_some());
        assert_eq!(rep.latency.to_json().to_json(), "[[5,3]]");
        assert_eq!(rep.other_lines, 0);
    }

    #[test]
    fn ending_messages() {
        let exit = |code: i32| ExitStatus::from_raw(code << 8);
        assert_eq!(ending(true, exit(0), 300), None);
        assert_eq!(
            ending(true, exit(3), 300).as_deref(),
            Some("probe exited with code 3")
        );
        assert_eq!(
            ending(true, ExitStatus::from_raw(9), 300).as_deref(),
            Some("probe was killed by signal 9")
        );
        assert_eq!(
            ending(false, ExitStatus::from_raw(9), 5).as_deref(),
            Some("timeout after 5 s")
        );
    }
}
