//! What disturbed each batch of a timed program: the steal time of the CPUs it is pinned to
//! (`/proc/stat`, the `steal` column of each `cpuN` line), the involuntary context switches of
//! its threads (`nonvoluntary_ctxt_switches` of every `/proc/<pid>/task/<tid>/status`) and the
//! time they waited, runnable, for a CPU (`run_delay`, the second field of each thread's
//! `/proc/<pid>/task/<tid>/schedstat`, in ns), read by the reader thread each time it has passed
//! on a burst of stdout lines (every line it found waiting at once). A batch is one `result`
//! line; its window runs from the reading after the burst before it (or the program's start) to
//! the reading after its own burst. Batches whose lines came in one burst (the sampler did not
//! run while the program wrote them) share that burst's window and counters, and say how many
//! shared it.
//!
//! The sampler only measures: whether a batch is dropped is decided by the driver from these
//! counters and the rule the study declared (`--drop-steal`, `--drop-wait`, `--drop-involuntary`), which the
//! sampler echoes in its output so that the rule travels with the counters.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::json::Value;
use crate::process::ms;

/// The counters at one moment; `None` where they could not be read.
#[derive(Debug, Clone)]
pub struct Reading {
    at: Instant,
    /// Steal of the pinned CPUs, summed, in clock ticks (`USER_HZ`).
    steal_ticks: Option<u64>,
    /// Per live thread of the program, by tid: its involuntary switches and the time it waited
    /// on a run queue (ns); `None` when the threads could not be listed.
    threads: Option<BTreeMap<u32, Thread>>,
}

/// One thread's counters; `None` where its file lacks the field.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Thread {
    involuntary: Option<u64>,
    wait_ns: Option<u64>,
}

/// One batch: its window and what disturbed it during that window.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The window, ms.
    pub window_ms: f64,
    /// Steal of the pinned CPUs during the window, summed over them, ms (a multiple of one clock
    /// tick, usually 10 ms); `None` when `/proc/stat` could not be read.
    pub steal_ms: Option<f64>,
    /// Involuntary context switches of the program's threads during the window; `None` when
    /// unreadable, or when a thread ended during the window (its switches went with it).
    pub involuntary_switches: Option<u64>,
    /// Time the program's threads waited, runnable, for a CPU during the window, summed, ms;
    /// `None` when unreadable (a kernel without schedstat) or a thread ended during the window.
    pub runqueue_wait_ms: Option<f64>,
    /// The batches whose lines arrived in the same burst and so share this window and its
    /// counters (1 when the sampler read each line as it came).
    pub window_batches: u64,
}

impl Batch {
    pub fn to_json(&self) -> Value {
        Value::Obj(vec![
            ("window_ms".into(), Value::opt_ms(Some(self.window_ms))),
            ("steal_ms".into(), Value::opt_ms(self.steal_ms)),
            (
                "involuntary_switches".into(),
                Value::opt_u64(self.involuntary_switches),
            ),
            (
                "runqueue_wait_ms".into(),
                Value::opt_ms(self.runqueue_wait_ms),
            ),
            ("window_batches".into(), Value::UInt(self.window_batches)),
        ])
    }
}

/// Reads the counters of one program pinned to some CPUs.
#[derive(Debug, Clone)]
pub struct Counters {
    pid: u32,
    /// The CPUs whose steal counts; all of them when the program was not pinned.
    cpus: Option<Vec<usize>>,
    ms_per_tick: f64,
}

impl Counters {
    pub fn new(pid: u32, cpus: Option<Vec<usize>>) -> Counters {
        // SAFETY: sysconf takes no pointers.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Counters {
            pid,
            cpus,
            ms_per_tick: 1000.0 / if hz > 0 { hz as f64 } else { 100.0 },
        }
    }

    pub fn read(&self) -> Reading {
        let steal_ticks = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| steal_ticks(&t, self.cpus.as_deref()));
        Reading {
            at: Instant::now(),
            steal_ticks,
            threads: threads(self.pid),
        }
    }

    /// The batch between two readings.
    pub fn between(&self, from: &Reading, to: &Reading) -> Batch {
        let steal = from
            .steal_ticks
            .zip(to.steal_ticks)
            .and_then(|(a, b)| b.checked_sub(a));
        let (a, b) = (from.threads.as_ref(), to.threads.as_ref());
        let threads = |f: fn(&Thread) -> Option<u64>| thread_delta(a?, b?, f);
        Batch {
            window_ms: ms(to.at.saturating_duration_since(from.at)),
            steal_ms: steal.map(|t| t as f64 * self.ms_per_tick),
            involuntary_switches: threads(|t| t.involuntary),
            runqueue_wait_ms: threads(|t| t.wait_ns).map(|ns| ns as f64 / 1e6),
            window_batches: 1,
        }
    }
}

/// A counter's growth over the program's threads between two readings: a thread that started
/// meanwhile counts whole; `None` when a thread ended meanwhile (what it counted is gone) or a
/// counter went backwards or could not be read.
fn thread_delta(
    from: &BTreeMap<u32, Thread>,
    to: &BTreeMap<u32, Thread>,
    counter: fn(&Thread) -> Option<u64>,
) -> Option<u64> {
    let mut total = 0u64;
    for (tid, before) in from {
        total += counter(to.get(tid)?)?.checked_sub(counter(before)?)?;
    }
    for (_, born) in to.iter().filter(|(tid, _)| !from.contains_key(tid)) {
        total += counter(born)?;
    }
    Some(total)
}

/// The steal ticks of `cpus` (all CPUs when `None`) summed from the text of `/proc/stat`; `None`
/// when a CPU's line or its steal column is missing.
pub fn steal_ticks(stat: &str, cpus: Option<&[usize]>) -> Option<u64> {
    let mut total = 0u64;
    let mut found = 0usize;
    for line in stat.lines() {
        let mut words = line.split_whitespace();
        let Some(cpu) = words.next().and_then(|w| w.strip_prefix("cpu")) else {
            continue;
        };
        let Ok(cpu) = cpu.parse::<usize>() else {
            continue; // the aggregate `cpu` line
        };
        if cpus.is_some_and(|list| !list.contains(&cpu)) {
            continue;
        }
        // user nice system idle iowait irq softirq steal …
        total += words.nth(7)?.parse::<u64>().ok()?;
        found += 1;
    }
    let wanted = cpus.map_or(found.max(1), <[usize]>::len);
    (found == wanted).then_some(total)
}

/// Every live thread of `pid` and its counters; `None` when its tasks cannot be listed.
fn threads(pid: u32) -> Option<BTreeMap<u32, Thread>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = BTreeMap::new();
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        // A thread that ends between the listing and the read is not counted: the next batch
        // then finds it missing and says its counters are unknown.
        let read = |file: &str| std::fs::read_to_string(task.path().join(file)).ok();
        let Some(status) = read("status") else {
            continue;
        };
        let thread = Thread {
            involuntary: nonvoluntary(&status),
            wait_ns: read("schedstat").as_deref().and_then(run_delay),
        };
        out.insert(tid, thread);
    }
    Some(out)
}

/// `run_delay` (ns), the second field of a thread's `schedstat`.
fn run_delay(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

/// `nonvoluntary_ctxt_switches` of one status file.
fn nonvoluntary(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The batches of a run, the last reading, which opens the next window, and the `result` lines
/// of the burst that the next reading closes.
pub struct Windows {
    counters: Counters,
    last: Reading,
    pending: u64,
    pub batches: Vec<Batch>,
}

impl Windows {
    /// Starts at the program's start; returns the counters for the reader thread too.
    pub fn start(counters: Counters) -> (Windows, Counters) {
        let last = counters.read();
        let reader = counters.clone();
        let windows = Windows {
            counters,
            last,
            pending: 0,
            batches: Vec::new(),
        };
        (windows, reader)
    }

    /// A `result` line arrived: its batch ends with the burst it came in.
    pub fn result_line(&mut self) {
        self.pending += 1;
    }

    /// The reading after a burst of lines: it closes the window of the burst's batches (each of
    /// them gets the whole window, and how many shared it) and opens the next.
    pub fn stamp(&mut self, now: Reading) {
        let batch = Batch {
            window_batches: self.pending,
            ..self.counters.between(&self.last, &now)
        };
        for _ in 0..self.pending {
            self.batches.push(batch.clone());
        }
        self.pending = 0;
        self.last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  10 0 5 100 0 0 0 7 0 0\n\
                        cpu0 5 0 2 50 0 0 0 3 0 0\n\
                        cpu1 5 0 3 50 0 0 0 4 0 0\n\
                        intr 1 2 3\n";

    #[test]
    fn steal_of_the_pinned_cpus() {
        assert_eq!(steal_ticks(STAT, Some(&[0])), Some(3));
        assert_eq!(steal_ticks(STAT, Some(&[1])), Some(4));
        assert_eq!(steal_ticks(STAT, Some(&[0, 1])), Some(7));
        assert_eq!(steal_ticks(STAT, None), Some(7));
        // A CPU without its line, or a kernel without the steal column: unknown, not zero.
        assert_eq!(steal_ticks(STAT, Some(&[2])), None);
        assert_eq!(steal_ticks("cpu0 1 2 3 4\n", Some(&[0])), None);
    }

    #[test]
    fn involuntary_switches_of_a_status() {
        let status = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(nonvoluntary(status), Some(3));
        assert_eq!(nonvoluntary("Name:\tx\n"), None);
        assert_eq!(run_delay("1200 3400 5\n"), Some(3400));
        assert_eq!(run_delay("1200\n"), None);
        // This process's main thread, alive while the tests run, can be read; its run-queue wait
        // is known where the kernel keeps schedstat. (The harness's other threads may end between
        // the listing and the read, and are then rightly unknown.)
        let pid = std::process::id();
        let main = threads(pid).unwrap()[&pid];
        assert!(main.involuntary.is_some());
        let schedstat = std::path::Path::new("/proc/self/schedstat").exists();
        assert_eq!(main.wait_ns.is_some(), schedstat);
    }

    fn thread(involuntary: u64, wait_ns: u64) -> Thread {
        Thread {
            involuntary: Some(involuntary),
            wait_ns: Some(wait_ns),
        }
    }

    #[test]
    fn a_batch_is_the_difference_of_two_readings() {
        let c = Counters {
            pid: 0,
            cpus: None,
            ms_per_tick: 10.0,
        };
        let at = Instant::now();
        let a = Reading {
            at,
            steal_ticks: Some(5),
            threads: Some(BTreeMap::from([(1, thread(10, 1_000_000))])),
        };
        // Thread 2 started during the window: all of its counts are the window's.
        let b = Reading {
            at: at + std::time::Duration::from_millis(20),
            steal_ticks: Some(7),
            threads: Some(BTreeMap::from([
                (1, thread(12, 3_000_000)),
                (2, thread(1, 500_000)),
            ])),
        };
        let batch = c.between(&a, &b);
        assert_eq!(batch.steal_ms, Some(20.0));
        assert_eq!(batch.involuntary_switches, Some(3));
        assert_eq!(batch.runqueue_wait_ms, Some(2.5));
        assert!((batch.window_ms - 20.0).abs() < 1e-9);
        // Thread 2 ended during the next window: what it counted is gone, so both are unknown,
        // never an undercount.
        let ended = Reading {
            threads: Some(BTreeMap::from([(1, thread(20, 4_000_000))])),
            ..b
        };
        let batch = c.between(&b, &ended);
        assert_eq!(
            (batch.involuntary_switches, batch.runqueue_wait_ms),
            (None, None)
        );
        let unknown = c.between(
            &Reading {
                steal_ticks: None,
                ..a
            },
            &b,
        );
        assert_eq!(unknown.steal_ms, None);
        assert_eq!(
            unknown.to_json().to_json(),
            r#"{"window_ms":20.000,"steal_ms":null,"involuntary_switches":3,"runqueue_wait_ms":2.500,"window_batches":1}"#
        );
    }
}
