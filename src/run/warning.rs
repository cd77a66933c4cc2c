//! Validity warnings: host conditions that may have touched a run's numbers — swap in use, the
//! transparent-hugepage mode, the CPU frequency governor, memory pressure, other busy processes on
//! the pinned CPUs before measuring, and steal time on them while measuring. A warning explains a
//! sample; it never invalidates one.
//!
//! They are kept in `run.json` ([`crate::run::run_dir::RunState::warnings`]), because `env.json` is
//! written before the run starts. Each reading is parsed by a pure function of its text, so every
//! threshold is tested on fixed input; [`at_start`] and [`Watch::steal`] read the host (the driver's
//! own /proc and /sys: the Engine is assumed local).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::study::cpuset;

/// A pinned CPU busier than this before measuring (fraction of its time) is warned about.
pub const BUSY_LIMIT: f64 = 0.10;
/// Steal above this fraction of the pinned CPUs' time while measuring is warned about.
pub const STEAL_LIMIT: f64 = 0.01;
/// How long the pinned CPUs are watched for other busy processes before measuring.
const BUSY_WINDOW: Duration = Duration::from_millis(250);

/// Which figures a warning may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Touches {
    /// Memory figures: RSS, peaks, per-task bytes.
    Memory,
    /// Timings: wall and CPU times, latencies, rates.
    Time,
    /// Every figure.
    All,
}

impl Touches {
    /// The figures in words, for reports.
    pub fn label(self) -> &'static str {
        match self {
            Touches::Memory => "memory figures",
            Touches::Time => "timings",
            Touches::All => "all figures",
        }
    }
}

/// One validity warning, as recorded in `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    /// What was seen, as a sentence with its reading (e.g. `swap in use: 512 MiB of 2048 MiB`).
    pub what: String,
    /// The figures it may touch: `memory`, `time` or `all`.
    pub touches: Touches,
}

/// How the warnings that say the machine was not quiet begin: other processes on the pinned CPUs,
/// steal by the hypervisor, memory pressure. (Matched on the text, so a `run.json` written before
/// this list existed is judged the same.)
const NOT_QUIET: [&str; 3] = [BUSY, STEAL, PRESSURE];
const BUSY: &str = "pinned CPUs busy before measuring";
const STEAL: &str = "steal time ";
const PRESSURE: &str = "memory pressure: ";
/// Memory pressure (PSI some avg10, percent) from which a machine is not quiet enough for a
/// reference run; below it the warning is still recorded.
const QUIET_PRESSURE_LIMIT: f64 = 1.0;

impl Warning {
    fn new(touches: Touches, what: String) -> Warning {
        Warning { what, touches }
    }

    /// True when the warning says the machine was not quiet while the run measured: other busy
    /// processes on the pinned CPUs, steal time, or memory pressure (not a setting such as swap,
    /// hugepages or the governor).
    pub fn says_not_quiet(&self) -> bool {
        if let Some(rest) = self.what.strip_prefix(PRESSURE) {
            // A stall too small to move a figure (a probe's own page faults cause some) leaves the
            // machine quiet; an unreadable share counts as not quiet.
            let share = rest
                .strip_prefix("some task stalled on memory ")
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse::<f64>().ok());
            return share.is_none_or(|p| p >= QUIET_PRESSURE_LIMIT);
        }
        NOT_QUIET.iter().any(|p| self.what.starts_with(p))
    }
}

/// One CPU's cumulative time from its `cpuN` line of /proc/stat, in clock ticks (USER_HZ).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ticks {
    /// user + nice + system + irq + softirq.
    pub busy: u64,
    /// idle + iowait.
    pub idle: u64,
    /// Time the hypervisor ran something else while this (virtual) CPU wanted to run.
    pub steal: u64,
}

impl Ticks {
    fn total(&self) -> u64 {
        self.busy + self.idle + self.steal
    }

    /// The ticks from `self` to `later` (a counter that went backwards counts as 0: iowait can).
    fn until(&self, later: &Ticks) -> Ticks {
        Ticks {
            busy: later.busy.saturating_sub(self.busy),
            idle: later.idle.saturating_sub(self.idle),
            steal: later.steal.saturating_sub(self.steal),
        }
    }
}

/// The per-CPU lines of /proc/stat: CPU number → its cumulative ticks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuTimes(pub BTreeMap<usize, Ticks>);

impl CpuTimes {
    /// Parses the `cpuN user nice system idle iowait irq softirq steal …` lines (the aggregate
    /// `cpu` line and other lines are skipped; a kernel without the steal column gives 0).
    pub fn parse(stat: &str) -> CpuTimes {
        let cpus = stat.lines().filter_map(|line| {
            let mut words = line.split_whitespace();
            let cpu = words.next()?.strip_prefix("cpu")?.parse().ok()?;
            let n: Vec<u64> = words.map_while(|w| w.parse().ok()).collect();
            let at = |i: usize| n.get(i).copied().unwrap_or(0);
            (n.len() >= 4).then(|| {
                let busy = at(0) + at(1) + at(2) + at(5) + at(6);
                let ticks = Ticks {
                    busy,
                    idle: at(3) + at(4),
                    steal: at(7),
                };
                (cpu, ticks)
            })
        });
        CpuTimes(cpus.collect())
    }

    /// The host's /proc/stat now; `None` when it cannot be read.
    pub fn read() -> Option<CpuTimes> {
        std::fs::read_to_string("/proc/stat")
            .ok()
            .map(|s| CpuTimes::parse(&s))
    }

    /// Per CPU of `cpus` seen in both readings, the ticks from `self` to `later`.
    fn until(&self, later: &CpuTimes, cpus: &[usize]) -> Vec<(usize, Ticks)> {
        cpus.iter()
            .filter_map(|c| Some((*c, self.0.get(c)?.until(later.0.get(c)?))))
            .collect()
    }
}

/// Swap from /proc/meminfo, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Swap {
    /// SwapTotal, bytes.
    pub total_bytes: u64,
    /// SwapFree, bytes.
    pub free_bytes: u64,
}

/// Host readings before measuring; each is `None` or empty where the host does not show it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings {
    /// Swap configured and free (/proc/meminfo).
    pub swap: Option<Swap>,
    /// Transparent hugepage mode: the bracketed choice of /sys/kernel/mm/transparent_hugepage/enabled.
    pub thp: Option<String>,
    /// cpufreq governor of each pinned CPU that shows one (…/cpuN/cpufreq/scaling_governor).
    pub governors: Vec<(usize, String)>,
    /// /proc/pressure/memory `some avg10`: share of the last 10 s in which some task stalled on memory, percent.
    pub memory_pressure: Option<f64>,
    /// Busy share of each pinned CPU over a short window before measuring, fraction 0–1.
    pub busy: Vec<(usize, f64)>,
}

/// SwapTotal and SwapFree of a /proc/meminfo text; `None` when either is missing.
pub fn swap(meminfo: &str) -> Option<Swap> {
    let kib = |key: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some(Swap {
        total_bytes: kib("SwapTotal:")? * 1024,
        free_bytes: kib("SwapFree:")? * 1024,
    })
}

/// The bracketed choice of a sysfs setting such as `always [madvise] never`.
pub fn bracketed(text: &str) -> Option<String> {
    let (_, rest) = text.split_once('[')?;
    rest.split_once(']').map(|(choice, _)| choice.to_string())
}

/// `avg10` of the `some` line of a PSI file (/proc/pressure/memory), percent.
pub fn some_avg10(psi: &str) -> Option<f64> {
    psi.lines()
        .find_map(|l| l.strip_prefix("some "))?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("avg10="))?
        .parse()
        .ok()
}

/// Busy share of each CPU of `cpus` between two readings, fraction 0–1 (steal is not busy here).
pub fn busy_between(start: &CpuTimes, end: &CpuTimes, cpus: &[usize]) -> Vec<(usize, f64)> {
    start
        .until(end, cpus)
        .into_iter()
        .filter(|(_, t)| t.total() > 0)
        .map(|(c, t)| (c, t.busy as f64 / t.total() as f64))
        .collect()
}

/// Every warning the readings call for, in a fixed order.
pub fn from_readings(r: &Readings) -> Vec<Warning> {
    [
        swap_used(r.swap),
        thp_always(r.thp.as_deref()),
        governors(&r.governors),
        memory_pressure(r.memory_pressure),
        busy_cpus(&r.busy),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn swap_used(swap: Option<Swap>) -> Option<Warning> {
    let s = swap?;
    let used = s.total_bytes.saturating_sub(s.free_bytes);
    let mib = |b: u64| b / (1 << 20);
    (used > 0).then(|| {
        Warning::new(
            Touches::All,
            format!(
                "swap in use: {} MiB of {} MiB (a swapped-out page lowers RSS and stalls the process that touches it)",
                mib(used),
                mib(s.total_bytes)
            ),
        )
    })
}

fn thp_always(thp: Option<&str>) -> Option<Warning> {
    (thp? == "always").then(|| {
        Warning::new(
            Touches::Memory,
            "transparent hugepages `always`: a page fault can map 2 MiB, so RSS can grow in 2 MiB steps".into(),
        )
    })
}

fn governors(list: &[(usize, String)]) -> Option<Warning> {
    let mut by: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (cpu, g) in list.iter().filter(|(_, g)| g != "performance") {
        by.entry(g.as_str()).or_default().push(*cpu);
    }
    if by.is_empty() {
        return None;
    }
    let seen: Vec<String> = by
        .iter()
        .map(|(g, cpus)| format!("`{g}` on CPUs {}", cpuset::format(cpus)))
        .collect();
    Some(Warning::new(
        Touches::Time,
        format!(
            "CPU frequency governor {} (not `performance`): the clock can change between and within processes",
            seen.join(", ")
        ),
    ))
}

fn memory_pressure(avg10: Option<f64>) -> Option<Warning> {
    let p = avg10?;
    (p > 0.0).then(|| {
        Warning::new(
            Touches::All,
            format!(
                "{PRESSURE}some task stalled on memory {p:.2} % of the last 10 s (PSI some avg10)"
            ),
        )
    })
}

fn busy_cpus(busy: &[(usize, f64)]) -> Option<Warning> {
    let over: Vec<String> = busy
        .iter()
        .filter(|(_, b)| *b > BUSY_LIMIT)
        .map(|(c, b)| format!("CPU {c} {:.0} %", b * 100.0))
        .collect();
    (!over.is_empty()).then(|| {
        Warning::new(
            Touches::Time,
            format!("{BUSY} ({}): other processes share them", over.join(", ")),
        )
    })
}

/// The warning for a run under a seccomp profile from an archive that lets containers do more than
/// the Engine's default profile (`beyond`: each difference, from
/// [`Profile::beyond_default`](crate::run::seccomp::Profile::beyond_default)).
pub fn seccomp_beyond_default(file: &str, beyond: &[String]) -> Warning {
    Warning::new(
        Touches::All,
        format!(
            "seccomp profile {file} from the archive lets the probes do more than the Engine's \
             default profile ({}): a program can take paths the default refuses, in what it does \
             and in what it costs",
            beyond.join("; ")
        ),
    )
}

/// The steal warning for the pinned CPUs between two readings, when steal exceeds [`STEAL_LIMIT`]
/// of their time.
pub fn steal_between(start: &CpuTimes, end: &CpuTimes, cpus: &[usize]) -> Option<Warning> {
    let spans = start.until(end, cpus);
    let total: u64 = spans.iter().map(|(_, t)| t.total()).sum();
    let steal: u64 = spans.iter().map(|(_, t)| t.steal).sum();
    let share = steal as f64 / total.max(1) as f64;
    (share > STEAL_LIMIT).then(|| {
        Warning::new(
            Touches::Time,
            format!(
                "{STEAL}{:.1} % of pinned CPUs {}'s time while measuring: the hypervisor ran something else (a VM's noisy neighbour)",
                share * 100.0,
                cpuset::format(cpus)
            ),
        )
    })
}

/// The steal warning for the pinned CPUs from `start` until now.
pub fn steal_since(start: &CpuTimes, cpus: &[usize]) -> Option<Warning> {
    steal_between(start, &CpuTimes::read()?, cpus)
}

/// The pinned CPUs and their times when measuring started, for the steal at its end.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    cpus: Vec<usize>,
    start: Option<CpuTimes>,
}

impl Watch {
    /// The steal warning from the start of the watch until now, if any.
    pub fn steal(&self) -> Option<Warning> {
        steal_since(self.start.as_ref()?, &self.cpus)
    }
}

/// Reads the host and returns its warnings before measuring on `cpus`, with the watch that counts
/// steal from now. Blocks for a quarter of a second, sampling /proc/stat twice.
pub fn at_start(cpus: &[usize]) -> (Vec<Warning>, Watch) {
    let before = CpuTimes::read();
    std::thread::sleep(BUSY_WINDOW);
    let after = CpuTimes::read();
    let busy = match (&before, &after) {
        (Some(b), Some(a)) => busy_between(b, a, cpus),
        _ => Vec::new(),
    };
    let readings = Readings { busy, ..host(cpus) };
    let watch = Watch {
        cpus: cpus.to_vec(),
        start: after,
    };
    (from_readings(&readings), watch)
}

/// The host's readings other than the busy window; an unreadable file leaves its reading out.
fn host(cpus: &[usize]) -> Readings {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let governors = cpus.iter().filter_map(|c| {
        let path = format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor");
        Some((*c, read(&path)?.trim().to_string()))
    });
    Readings {
        swap: read("/proc/meminfo").as_deref().and_then(swap),
        thp: read("/sys/kernel/mm/transparent_hugepage/enabled")
            .as_deref()
            .and_then(bracketed),
        governors: governors.collect(),
        memory_pressure: read("/proc/pressure/memory")
            .as_deref()
            .and_then(some_avg10),
        busy: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
