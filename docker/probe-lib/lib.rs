//! What article 003's programs share: arguments, output lines and the steady protocol's stdin
//! side (docker/README.md), the latency histogram's lines, pinning, a process's `/proc` readings,
//! and starting the load generator from a server.
//!
//! Kept once, here: the recipes of `docker/echo-load/` and of every `docker/runtime-*/` lay it into
//! their build contexts as `src/lib.rs` (`shared:` in their image.yaml; see docker/README.md).

use std::io::{self, BufRead, Write};

pub use hdrhistogram::Histogram;

/// The `--name value` pairs of the command line, checked against the names a program takes.
pub struct Flags {
    pairs: Vec<(String, String)>,
}

impl Flags {
    /// Reads the arguments up to a `--`; an unknown name or a name without a value is an error.
    pub fn parse(names: &[&str]) -> Result<Self, String> {
        let mut pairs = Vec::new();
        let mut args = std::env::args().skip(1).take_while(|a| a != "--");
        while let Some(arg) = args.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
                None => (arg.clone(), None),
            };
            if !names.contains(&name.as_str()) {
                return Err(format!("unknown argument {arg:?}"));
            }
            let value = inline
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))?;
            pairs.push((name, value));
        }
        Ok(Self { pairs })
    }

    /// The last value given for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A required non-negative integer.
    pub fn count(&self, name: &str) -> Result<u64, String> {
        let value = self
            .get(name)
            .ok_or_else(|| format!("{name} is required"))?;
        value
            .parse()
            .map_err(|_| format!("{name}: {value:?} is not a non-negative integer"))
    }
}

/// Prints `program: error` and the usage on stderr; returns exit status 2.
pub fn usage_error(program: &str, usage: &str, error: &str) -> std::process::ExitCode {
    eprintln!("{program}: {error}\n{usage}");
    std::process::ExitCode::from(2)
}

/// Prints one line on stdout and flushes it.
pub fn say(line: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()
}

/// Waits for one line on stdin; end of input is an error.
pub fn wait_line() -> io::Result<()> {
    let mut line = String::new();
    if io::stdin().lock().read_line(&mut line)? == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stdin closed"));
    }
    Ok(())
}

/// The process's OS threads (`Threads:` of `/proc/self/status`); 0 when it cannot be read.
pub fn os_threads() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A histogram of nanoseconds from 1 ns to 1 h at 3 significant digits; a longer value is
/// counted at 1 h (`saturating_record`).
pub fn ns_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Prints a `note` line (one line, whatever the text holds); a failure to print is ignored, since
/// the note is said where the program is already failing.
pub fn note(text: &str) {
    let _ = say(&format!("note {}", text.replace('\n', " ")));
}

/// Prints a histogram as `latency value_ns=… count=…` lines, one per recorded bucket, at the
/// bucket's highest equivalent value.
pub fn print_histogram(h: &Histogram<u64>) -> io::Result<()> {
    let mut out = io::stdout().lock();
    for v in h.iter_recorded() {
        writeln!(
            out,
            "latency value_ns={} count={}",
            h.highest_equivalent(v.value_iterated_to()),
            v.count_at_value()
        )?;
    }
    out.flush()
}

/// The CPUs of a list in the kernel's format (`1`, `0-3,6`), in order.
pub fn cpu_list(list: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (usize, usize) = match (lo.trim().parse(), hi.trim().parse()) {
            (Ok(l), Ok(h)) if l <= h && h < libc::CPU_SETSIZE as usize => (l, h),
            _ => return Err(format!("{part:?} is not a CPU or CPU range")),
        };
        cpus.extend(lo..=hi);
    }
    if cpus.is_empty() {
        return Err("the list is empty".into());
    }
    Ok(cpus)
}

/// Pins the calling thread (and what it starts later) to a CPU list in the kernel's format
/// (`1`, `0-3,6`).
pub fn pin_self(list: &str) -> Result<(), String> {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpu_list(list)? {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error().to_string());
    }
    Ok(())
}

/// CPU time of a process from `/proc/<pid>/stat`.
pub struct ProcStat {
    /// User + system time, seconds.
    pub cpu_s: f64,
}

impl ProcStat {
    pub fn read(pid: u32) -> Result<Self, String> {
        let path = format!("/proc/{pid}/stat");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
        // Fields after the command name, which is in parentheses and may hold spaces: state is
        // field 3, utime 14 and stime 15 (proc(5)).
        let rest = text
            .rsplit_once(')')
            .map(|(_, r)| r)
            .ok_or_else(|| format!("{path}: no command name"))?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let tick = |i: usize| -> Result<f64, String> {
            fields
                .get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .ok_or_else(|| format!("{path}: field {} is not a number", i + 3))
        };
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Ok(Self {
            cpu_s: (tick(11)? + tick(12)?) / hz,
        })
    }
}

/// `VmHWM` of a process, KiB.
pub fn vm_hwm_kib(pid: u32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("{path} has no VmHWM"))
}

/// The arguments of every `parked` program: `--tasks N --wait signal|sleep [--sleep-ms 5000]`;
/// the sleep, for `--wait sleep`.
pub fn parked_args() -> Result<(u64, Option<std::time::Duration>), String> {
    let f = Flags::parse(&["--tasks", "--wait", "--sleep-ms"])?;
    let n = f.count("--tasks")?;
    let sleep_ms = f
        .get("--sleep-ms")
        .map_or(Ok(5000), |_| f.count("--sleep-ms"))?;
    match f.get("--wait") {
        Some("signal") => Ok((n, None)),
        Some("sleep") => Ok((n, Some(std::time::Duration::from_millis(sleep_ms)))),
        other => Err(format!("--wait: {other:?} is neither signal nor sleep")),
    }
}

/// The argument of every `spawn-latency` program: `[SPAWNS]`, 10000 (the article's) when left out.
pub fn spawns_arg() -> Result<u64, String> {
    match std::env::args().nth(1).map(|a| a.parse()) {
        None => Ok(10_000),
        Some(Ok(n)) if n > 0 => Ok(n),
        Some(_) => Err("SPAWNS is a positive integer".into()),
    }
}

/// Whether this process may use io_uring: one `io_uring_setup` of a one-entry ring, closed at once.
/// `Err` names the error and where a refusal comes from, for a runtime that needs io_uring to say
/// so before it starts (glommio panics in its executor's thread instead).
pub fn io_uring_available() -> Result<(), String> {
    // struct io_uring_params is 120 bytes; the kernel fills it in.
    let mut params = [0u8; 120];
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(format!(
            "io_uring refused: io_uring_setup failed: {e} (a seccomp profile, the sysctl \
             kernel.io_uring_disabled, or a kernel without io_uring)"
        ));
    }
    unsafe { libc::close(fd as libc::c_int) };
    Ok(())
}

/// Starts the load generator named after `--` on the command line, with `--port PORT` appended and
/// this process's stdout, and a thread that waits for it and then ends this process with the
/// generator's exit status. A server calls it once it listens on `port`.
pub fn start_load(port: u16) -> Result<(), String> {
    let command: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
    let (program, args) = command
        .split_first()
        .ok_or("no load generator: give its command after `--`")?;
    let mut child = std::process::Command::new(program)
        .args(args)
        .args(["--port", &port.to_string()])
        .stdin(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("starting the load generator {program:?}: {e}"))?;
    std::thread::spawn(move || {
        let code = match child.wait() {
            Ok(status) => status.code().unwrap_or(1),
            Err(e) => {
                note(&format!("waiting for the load generator: {e}"));
                1
            }
        };
        std::process::exit(code);
    });
    Ok(())
}
