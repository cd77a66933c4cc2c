//! Starting a pinned program and watching its stdout and its exit: shared by every kind.

use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use crate::batches::{Counters, Reading};
use crate::parse::{self, format_cpu_list, parse_cpu_list};

/// Longest probe line accepted, bytes.
pub const MAX_LINE: usize = 64 * 1024;

/// What the reader and waiter threads report.
pub enum Event {
    Line(String),
    /// A line longer than `MAX_LINE`, with its beginning; reading goes on after its end.
    LineTooLong(String),
    Eof,
    ReadError(String),
    /// The probe has exited (not yet reaped).
    Exited(Instant),
    /// What could have disturbed the program, read right after the last line of a burst (the
    /// lines the reader found waiting at once); only from [`watch_stamped`].
    Stamp(Reading),
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A probe line for an error message: at most 200 characters, quoted.
pub fn excerpt(line: &str) -> String {
    let mut s: String = line.chars().take(200).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    format!("{s:?}")
}

pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => format!("ended ({status})"),
    }
}

/// Starts `command` with the given stdin, stdout piped and stderr inherited, pinned to `cpus`
/// (kernel list format) with `sched_setaffinity` between fork and exec. Returns the child and
/// the moment just before the start.
pub fn spawn(
    command: &[String],
    cpus: Option<&str>,
    stdin: Stdio,
) -> Result<(Child, Instant), String> {
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..])
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut pinned = String::new();
    let mut sampler_off = None;
    if let Some(list) = cpus {
        let cpus = parse_cpu_list(list).map_err(|e| format!("--cpus: {e}"))?;
        let allowed = check_available(&cpus)?;
        let set = cpu_set(&cpus);
        sampler_off = Some(own_cpus(&cpus, &allowed));
        // SAFETY: the closure runs in the forked child before exec and only makes one
        // async-signal-safe system call on a set built beforehand.
        unsafe {
            cmd.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 {
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
    let child = cmd
        .spawn()
        .map_err(|e| format!("starting probe {:?}{pinned}: {e}", command[0]))?;
    // After the start: the child was pinned before exec, whatever the sampler's own mask.
    if let Some(own) = sampler_off {
        keep_to(&own);
    }
    Ok((child, started))
}

/// The CPUs the sampler keeps to, given the program's and those it may use: the others, so that
/// its own wake-ups (reading each line, polling) do not wait on or preempt the program's CPUs and
/// count as another task's run-queue wait; all of them when there are no others.
pub fn own_cpus(program: &[usize], allowed: &[usize]) -> Vec<usize> {
    let others: Vec<usize> = (allowed.iter().copied())
        .filter(|c| !program.contains(c))
        .collect();
    if others.is_empty() {
        allowed.to_vec()
    } else {
        others
    }
}

/// Moves every thread of the sampler (and so those it starts later) to `cpus` ([`own_cpus`]); best
/// effort: a thread that could not be moved stays where it was.
fn keep_to(cpus: &[usize]) {
    let set = cpu_set(cpus);
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for tid in tasks
        .flatten()
        .filter_map(|t| t.file_name().to_str()?.parse::<i32>().ok())
    {
        // SAFETY: sched_setaffinity only reads the set we pass.
        unsafe {
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
}

/// Starts the threads that report the child's stdout lines and its exit.
pub fn watch(child: &mut Child) -> Receiver<Event> {
    watch_stamped(child, None)
}

/// As [`watch`], and with `counters` the reader thread reads them after the last line of each
/// burst of lines it finds waiting in the pipe at once, as close to the lines' writing as the
/// reader gets, and sends them as [`Event::Stamp`] after those lines.
pub fn watch_stamped(child: &mut Child, counters: Option<Counters>) -> Receiver<Event> {
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, events) = mpsc::channel();
    spawn_reader(stdout, tx.clone(), counters);
    spawn_waiter(child.id(), tx);
    events
}

fn spawn_reader(stdout: ChildStdout, tx: Sender<Event>, counters: Option<Counters>) {
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let stamp = |reader: &BufReader<ChildStdout>, tx: &Sender<Event>| match &counters {
            Some(c) if reader.buffer().is_empty() => tx.send(Event::Stamp(c.read())).is_ok(),
            _ => true,
        };
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
                        buf.truncate(256);
                        let start = String::from_utf8_lossy(&buf).into_owned();
                        if tx.send(Event::LineTooLong(start)).is_err() {
                            return;
                        }
                        match reader.skip_until(b'\n') {
                            Ok(_) => continue,
                            Err(e) => {
                                let _ = tx.send(Event::ReadError(e.to_string()));
                                return;
                            }
                        }
                    }
                    let line = String::from_utf8_lossy(&buf).into_owned();
                    if tx.send(Event::Line(line)).is_err() || !stamp(&reader, &tx) {
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

/// How a reaped program ended and what it used, as `wait4` reports it: its own figures merged
/// with those of the descendants it waited for, as `/usr/bin/time -v` shows them.
#[derive(Debug, Clone, Copy)]
pub struct Reaped {
    pub status: ExitStatus,
    /// Largest resident set size (`ru_maxrss`), KiB.
    pub maxrss_kib: u64,
    /// CPU time in user mode (`ru_utime`).
    pub user: Duration,
    /// CPU time in the kernel (`ru_stime`).
    pub sys: Duration,
}

/// Reaps the child `pid` with `wait4`, waiting for it to exit if it has not yet.
pub fn reap(pid: u32) -> Result<Reaped, String> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: wait4 only writes into the status and the zeroed rusage we pass.
        let (rc, usage) = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            let rc = libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage);
            (rc, usage)
        };
        if rc == pid as libc::pid_t {
            return Ok(Reaped {
                status: ExitStatus::from_raw(status),
                maxrss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
                user: duration(usage.ru_utime),
                sys: duration(usage.ru_stime),
            });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(format!("waiting for probe {pid} (wait4): {e}"));
        }
    }
}

fn duration(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u64::try_from(tv.tv_usec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(micros)
}

/// Sends SIGKILL to the child `pid`. Only before it is reaped: after, the pid may be reused.
pub fn kill(pid: u32) {
    // SAFETY: kill takes no pointers.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
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

/// The CPUs the sampler's thread may use (its affinity mask, within the container's cpuset).
fn sampler_cpus() -> Result<Vec<usize>, String> {
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `set`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(format!("sched_getaffinity: {}", io::Error::last_os_error()));
        }
        Ok((0..parse::MAX_CPUS)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Fails unless every requested CPU is in the sampler's own affinity mask (the container's
/// cpuset): the kernel would otherwise pin the probe to fewer CPUs than asked, silently. Returns
/// that mask.
fn check_available(cpus: &[usize]) -> Result<Vec<usize>, String> {
    let allowed = sampler_cpus()?;
    let missing: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !allowed.contains(c))
        .collect();
    if missing.is_empty() {
        Ok(allowed)
    } else {
        Err(format!(
            "--cpus {}: CPU(s) {} not available (the sampler may use {})",
            format_cpu_list(cpus),
            format_cpu_list(&missing),
            format_cpu_list(&allowed)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampler_keeps_off_the_programs_cpus_when_it_has_others() {
        assert_eq!(own_cpus(&[0], &[0, 1, 2, 3]), [1, 2, 3]);
        assert_eq!(own_cpus(&[1, 2], &[0, 1, 2, 3]), [0, 3]);
        // Pinned to every CPU it may use: it must share them.
        assert_eq!(own_cpus(&[0, 1], &[0, 1]), [0, 1]);
    }

    #[test]
    fn a_pinned_programs_sampler_threads_leave_its_cpu() {
        let allowed = sampler_cpus().unwrap();
        let Some(&first) = allowed.first() else {
            return;
        };
        let cmd = ["true".to_string()];
        let (mut child, _) = spawn(&cmd, Some(&first.to_string()), Stdio::null()).unwrap();
        child.wait().unwrap();
        let now = sampler_cpus().unwrap();
        assert_eq!(now, own_cpus(&[first], &allowed));
        assert_eq!(now.contains(&first), allowed.len() == 1);
        keep_to(&allowed);
    }
}
