//! The raw sample: one JSON object per probe process, appended to `samples.jsonl` the moment it is
//! measured. This struct *is* the file format; every field says its unit.
//!
//! The record is the bottom of the study floor: it names its kind ([`Kind`]) but knows nothing of
//! what a kind does; `study::kind` fills, checks and reads samples through each kind's `Measure`.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

use crate::study::bounded;
use crate::study::protocol::Isolation;
use serde::{Deserialize, Serialize};

/// The kind of measurement of a probe (`kind:` in a study, `kind` in a sample). Only the name: what
/// each kind does is its `Measure`, which `Kind::measure` (`study::kind`) looks up; `Kind::ALL` lists
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The handshake protocol: RSS of parked tasks.
    #[default]
    Steady,
    /// Peak memory of an unmodified program.
    Peak,
    /// Time per operation, from the program's `result` lines.
    Timed,
    /// Latency percentiles, from the program's histogram.
    Latency,
    /// Values the program computes itself (sizes, counts, limits), from its `result` lines.
    Reported,
}

impl Kind {
    /// For `skip_serializing_if`: steady is the default and is not written.
    pub fn is_steady(&self) -> bool {
        *self == Self::default()
    }
}

/// One probe process, measured once. Memory is in bytes, times in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// Run identifier (the run directory's name).
    pub run_id: String,
    /// Study identifier (`id` in study.yaml).
    pub study: String,
    /// Probe identifier (`probes[].id` in study.yaml).
    pub probe: String,
    /// Image tag the container ran.
    pub image_tag: String,
    /// Image ID (`sha256:…`) the container ran.
    pub image_id: String,
    /// Number of tasks the probe was asked to create.
    pub tasks: u64,
    /// Repeat number, 1-based.
    pub repeat: u32,
    /// Position of this process in the run order, 0-based.
    pub position: u32,
    /// CPU list the study asked for (e.g. `0-3`).
    pub cpus_requested: String,
    /// CPU list this process was pinned to (the `--cpus` choice, e.g. `0-1` with `--cpus auto`).
    pub cpus_pinned: String,
    /// CPU list in force, read back from `/proc/<pid>/status` (`Cpus_allowed_list`) inside the container.
    pub cpus_in_force: Option<String>,
    /// Worker threads given to the runtime (GOMAXPROCS, Tokio workers).
    pub workers: u32,
    /// Environment variables set for the probe.
    pub env: BTreeMap<String, String>,
    /// Command line of the probe inside the container (its arguments, after the program).
    pub args: Vec<String>,
    /// The program run inside the container (`probes[].program`); absent in samples written before
    /// it was recorded, which all ran `/usr/local/bin/probe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// RSS (VmRSS) before any task was created, bytes.
    pub baseline_rss_bytes: Option<u64>,
    /// RSS readings after all tasks were ready and the settle time passed, bytes, in order.
    pub rss_bytes: Vec<u64>,
    /// Median of `rss_bytes`, bytes.
    pub rss_median_bytes: Option<u64>,
    /// (rss_median_bytes − baseline_rss_bytes) / tasks, bytes per task.
    pub per_task_bytes: Option<f64>,
    /// Peak RSS (VmHWM) at the last reading, bytes.
    pub vm_hwm_bytes: Option<u64>,
    /// Anonymous RSS (RssAnon) at the last reading, bytes.
    pub rss_anon_bytes: Option<u64>,
    /// File-backed RSS (RssFile) at the last reading, bytes.
    pub rss_file_bytes: Option<u64>,
    /// OS threads of the probe at the last reading.
    pub threads: Option<u64>,
    /// Tasks the probe reported completed after the release.
    pub completed: Option<u64>,
    /// Tasks expected to complete (= `tasks`).
    pub expected: u64,
    /// True when the protocol ran to the end, exit code 0, not OOM-killed and completed = expected.
    pub valid: bool,
    /// Why the sample is invalid; `None` when valid.
    pub error: Option<String>,
    /// Last lines of the probe's and sampler's stderr (at most 4 KiB; for a process in a VM, the
    /// guest console's last lines). The report shows the last few beside a failed process's reason.
    pub stderr_tail: String,
    /// The probe's own metrics from its `ready` and `done` lines (e.g. `goroutines`, `stack_inuse_bytes`).
    pub metrics: BTreeMap<String, f64>,
    /// Phase durations.
    pub timings: Timings,
    /// When the container was started, RFC 3339 UTC.
    pub started_at: String,
    /// Container exit code, if it exited.
    pub exit_code: Option<i64>,
    /// True when the Engine reports the container was OOM-killed.
    pub oom_killed: bool,
    /// How the process was measured; absent (steady) in samples written before kinds existed.
    #[serde(default, skip_serializing_if = "Kind::is_steady")]
    pub kind: Kind,
    /// Peak, timed and latency kinds: the unmodified program as seen from outside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<Peak>,
    /// Timed and latency kinds: the key=value pairs of every `result` line, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<BTreeMap<String, f64>>,
    /// Latency kind: the program's histogram as [value in ns, count] pairs, by value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_ns: Vec<[u64; 2]>,
    /// Timed kind: what disturbed each batch (each `result` line, in the same order), as the sampler
    /// read it; absent in samples written before it was read, whose batches all count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batches: Vec<BatchCounters>,
    /// Timed kind: the study's rule for dropping batches (`protocol.drop_batches`) in force when the
    /// process ran; absent in samples written before it existed: no batch is dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_batches: Option<crate::study::protocol::DropBatches>,
    /// Every kind: the text of the program's `note <text>` lines, verbatim and in order, as the
    /// sampler kept them (at most 32, each cut at 300 bytes): why something happened, in the
    /// program's words (e.g. which limit stopped thread creation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How the process was kept apart from the others (`protocol.isolation`): `container`, a fresh
    /// container of its own; `process`, a fresh process in a container kept up for its cell.
    /// Absent in samples written before the field (each had a container of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// The VM the process ran in, under a guest kernel; absent on the host's kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<GuestSample>,
    /// The Docker Engine that ran the process, by the name given in `run --hosts` (`local`, a URL,
    /// a context or hosts-file name); set in every sample of a run across hosts (its env.json holds
    /// each host's record under `hosts`). Absent: the run's own Engine, which env.json describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The hardware class of the machine that ran the process (CPU model, logical CPUs, memory band,
    /// kernel; see docs/fleet.md); absent: the run's own machine, which env.json describes. Set by
    /// `parkbench merge` from each merged run's env.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<String>,
}

/// What disturbed one batch of a timed program (`batches` in a sample): read by the sampler at the
/// stdout line before the batch (or the program's start) and at its `result` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchCounters {
    /// The batch's window: from the reading before it to the reading at its `result` line, ms.
    pub window_ms: f64,
    /// Steal of the pinned CPUs during the window, summed over them (`/proc/stat`, whole clock
    /// ticks), ms; `None` when it could not be read.
    pub steal_ms: Option<f64>,
    /// Involuntary context switches of the program's threads during the window; `None` when they
    /// could not be read.
    pub involuntary_switches: Option<u64>,
    /// Time the program's threads spent runnable but waiting for a CPU during the window, summed
    /// (`schedstat` `run_delay`), ms; `None` when it could not be read or a thread ended during it.
    pub runqueue_wait_ms: Option<f64>,
    /// The batches that share this window and its counters: their lines reached the sampler in one
    /// burst (it did not run while the program wrote them), so it could not tell them apart.
    #[serde(default = "one")]
    pub window_batches: u64,
}

fn one() -> u64 {
    1
}

/// A process's VM (`guest` in a sample).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestSample {
    /// The kernel's name (`debian-6.1`).
    pub kernel: String,
    /// `uname -r` in the guest, as its init printed it; empty when the guest printed nothing.
    pub release: String,
    /// The guest's THP mode when the probe started.
    pub thp: String,
    /// How the guest's CPU ran (`kvm` or `tcg`).
    pub accel: crate::study::kernel::Accel,
    /// vCPUs, numbered 0.. in the guest; QEMU is pinned to the sample's `cpus_pinned`.
    pub vcpus: u64,
    /// Guest memory as the guest sees it (MemTotal), KiB.
    pub memory_kib: u64,
}

/// An unmodified program seen from outside: polled `/proc/<pid>/status` and `wait4` at its exit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Peak {
    /// Maximum resident set size from `wait4` (`ru_maxrss`, what `/usr/bin/time -v` reports), bytes.
    pub ru_maxrss_bytes: Option<u64>,
    /// Largest `VmHWM` seen while polling, bytes; `None` if the program exited before the first poll.
    pub vm_hwm_bytes: Option<u64>,
    /// Largest `VmRSS` seen while polling, bytes.
    pub vm_rss_max_bytes: Option<u64>,
    /// Most OS threads seen while polling.
    pub threads_max: Option<u64>,
    /// Polls of `/proc/<pid>/status` taken.
    pub polls: u64,
    /// From exec to exit, ms.
    pub wall_ms: Option<f64>,
    /// CPU time in user mode (`ru_utime`), ms.
    pub user_ms: Option<f64>,
    /// CPU time in the kernel (`ru_stime`), ms.
    pub sys_ms: Option<f64>,
    /// The program's exit code; `None` when it was killed by a signal.
    pub exit_code: Option<i64>,
    /// The signal that killed the program, if one did.
    pub signal: Option<i64>,
    /// Lines on stdout that were neither `result` nor `latency` lines (ignored).
    pub other_lines: u64,
}

impl Peak {
    /// The process's peak: the larger of `ru_maxrss` and the largest VmHWM polled, bytes. Each can
    /// miss what the other sees: the kernel updates the high-water mark behind `ru_maxrss` lazily
    /// (pages freed before exit on some paths are not counted), and polling can miss a peak between
    /// two polls; on recent kernels `/proc`'s counters are per-CPU sums read approximately (a few
    /// hundred KiB at most). `ru_maxrss` also counts the sampler's own few MiB from before the exec,
    /// a floor that only tiny programs reach.
    pub fn peak_bytes(&self) -> Option<u64> {
        self.ru_maxrss_bytes.max(self.vm_hwm_bytes)
    }
}

/// Phase durations of one process, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timings {
    /// From the baseline acknowledgement to the probe's `ready` line (creating all tasks), ms.
    pub spawn_ms: Option<f64>,
    /// From `ready` to the end of the last RSS reading (settle + sampling), ms.
    pub measure_ms: Option<f64>,
    /// From the release line to the probe's `done` line, ms.
    pub release_ms: Option<f64>,
    /// Lifetime of the probe process, from exec to exit, ms.
    pub probe_ms: Option<f64>,
    /// Lifetime of the container as seen by the driver, from create to removal, ms.
    pub container_ms: Option<f64>,
}

/// How the error of a sample whose probe image could not be built here begins: its toolchain is
/// unavailable, so the cell is `not measured`, not a failed process.
pub const UNAVAILABLE: &str = "toolchain unavailable: ";

/// How the error of a sample whose probe image failed to build begins (then the build's own error
/// line): the cell is `not measured`, not a failed process.
pub const BUILD_FAILED: &str = "build failed: ";

/// True when a sample's error says its probe never ran because its image is not here (its
/// toolchain unavailable, or its build failed): `not measured`, not a failed process.
pub fn never_ran(error: &str) -> bool {
    error.starts_with(UNAVAILABLE) || error.starts_with(BUILD_FAILED)
}

/// How many of a failed process's last stderr lines the terminal, the reports and the HTML show
/// beside its reason.
pub const STDERR_LINES: usize = 3;

/// How the sampler starts the lines it writes to stderr beside the program's.
const SAMPLER_PREFIX: &str = "sampler: ";

/// The longest a shown stderr line is, in characters; a longer one is cut, ending in `…`.
const STDERR_LINE_CHARS: usize = 240;

impl Sample {
    /// The last lines of the process's stderr (`stderr_tail`) that say something: at most
    /// [`STDERR_LINES`], blank ones skipped, each cut at a few hundred characters. Shown beside the
    /// reason a process failed (a program's own error, such as a runtime's `SystemLimitError`).
    pub fn stderr_last_lines(&self) -> Vec<String> {
        let said: Vec<&str> = (self.stderr_tail.lines())
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .collect();
        // The sampler's own lines (`sampler: probe exited with code 1`) repeat the reason: the
        // program's words come first, the sampler's only when the program said nothing.
        let program: Vec<&str> = (said.iter().copied())
            .filter(|l| !l.starts_with(SAMPLER_PREFIX))
            .collect();
        let lines = if program.is_empty() { said } else { program };
        let from = lines.len().saturating_sub(STDERR_LINES);
        (lines[from..].iter())
            .map(|l| match l.char_indices().nth(STDERR_LINE_CHARS) {
                Some((at, _)) => format!("{}…", &l[..at]),
                None => (*l).to_owned(),
            })
            .collect()
    }

    /// [`Sample::stderr_last_lines`] on one line, joined by ` ⏎ `; `None` when stderr said nothing.
    pub fn stderr_line(&self) -> Option<String> {
        let lines = self.stderr_last_lines();
        (!lines.is_empty()).then(|| lines.join(" ⏎ "))
    }

    /// True when the probe never ran because its image is not here: its toolchain is unavailable,
    /// or its build failed (see [`never_ran`]).
    pub fn is_unavailable(&self) -> bool {
        !self.valid && self.error.as_deref().is_some_and(never_ran)
    }

    /// True when the probe never ran because no machine here can have its toolchain (the error
    /// begins with [`UNAVAILABLE`]): `not measured` in every run made here.
    pub fn is_toolchain_unavailable(&self) -> bool {
        !self.valid
            && self
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with(UNAVAILABLE))
    }

    /// True when the probe never ran because its image failed to build (the error begins with
    /// [`BUILD_FAILED`]): a fault of this build, which a fixed build measures.
    pub fn is_build_failed(&self) -> bool {
        !self.valid
            && self
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with(BUILD_FAILED))
    }

    /// Killed by the OOM killer or by a signal (the sampler's kill at the timeout included).
    pub fn killed(&self) -> bool {
        self.oom_killed || self.peak.as_ref().is_some_and(|p| p.signal.is_some())
    }

    /// What an `outcome` claim's `pattern` is matched against: why the process failed, then every
    /// line of its stderr the sample keeps (`stderr_tail`, its last 4 KiB): a runtime that prints
    /// its error before a backtrace (Ruby, Python) is matched by the error, not only the last
    /// lines the report shows.
    pub fn said(&self) -> Vec<String> {
        (self.error.iter().cloned())
            .chain(self.stderr_tail.lines().map(str::to_owned))
            .collect()
    }

    /// The median of the process's RSS readings, recomputed from `rss_bytes`, bytes; `None`
    /// without a reading. (The stored `rss_median_bytes` is the same value, truncated.)
    pub fn rss_median(&self) -> Option<f64> {
        let readings: Vec<f64> = self.rss_bytes.iter().map(|&b| b as f64).collect();
        crate::stats::median(&readings)
    }

    /// The cell of the study matrix this sample fills.
    pub fn cell(&self) -> (String, u64, u32) {
        (self.probe.clone(), self.tasks, self.repeat)
    }
}

/// Appends samples to a run's `samples.jsonl`, flushing and syncing each line as it is written.
pub struct SampleLog {
    path: PathBuf,
    file: File,
}

impl SampleLog {
    pub fn open(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening sample log {}", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
            file,
        })
    }

    pub fn append(&mut self, sample: &Sample) -> Result<()> {
        let mut line = serde_json::to_vec(sample).context("encoding sample")?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("appending to {}", self.path.display()))
    }
}

/// The text of a samples.jsonl holding `samples`, one line each as [`SampleLog`] appends them: for
/// samples that all exist already (a merged run's), written at once and synced once rather than
/// line by line.
pub fn jsonl(samples: &[Sample]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for s in samples {
        serde_json::to_writer(&mut out, s).context("encoding sample")?;
        out.push(b'\n');
    }
    Ok(out)
}

/// A line of samples.jsonl that could not be read, with its 1-based line number.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    pub line: usize,
    pub error: String,
}

/// The malformed lines of a samples.jsonl: the first [`bounded::SHOWN`] of them, and how many.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BadLines {
    shown: Vec<BadLine>,
    count: usize,
}

impl BadLines {
    fn push(&mut self, bad: BadLine) {
        self.count += 1;
        if self.shown.len() < bounded::SHOWN {
            self.shown.push(bad);
        }
    }

    /// How many lines are malformed.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The first malformed line.
    pub fn first(&self) -> Option<&BadLine> {
        self.shown.first()
    }

    /// The first few malformed lines (all that are kept).
    pub fn shown(&self) -> &[BadLine] {
        &self.shown
    }

    /// The malformed lines not kept, only counted.
    pub fn not_shown(&self) -> usize {
        self.count - self.shown.len()
    }
}

/// Reads every sample of a samples.jsonl; malformed lines are returned beside the good ones, never dropped silently.
pub fn read_all(path: &Path) -> Result<(Vec<Sample>, BadLines)> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    parse_lines(BufReader::new(file)).with_context(|| format!("reading {}", path.display()))
}

/// Parses samples.jsonl text (see [`read_all`]), within [`bounded`]'s limits: at most
/// [`bounded::LINES_MAX`] lines of at most [`bounded::LINE_MAX`] bytes and [`bounded::ITEMS_MAX`]
/// JSON items, or an error before any more is parsed. A line over its limit is malformed.
pub fn parse_lines(reader: impl BufRead) -> Result<(Vec<Sample>, BadLines)> {
    let mut good = Vec::new();
    let mut bad = BadLines::default();
    let mut budget = bounded::Budget::default();
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line?;
        ensure!(
            i < bounded::LINES_MAX,
            "samples.jsonl: more than {} lines (a run writes one per process): not a run the kit \
             writes; refused before parsing the rest",
            bounded::LINES_MAX
        );
        if line.trim_ascii().is_empty() {
            continue;
        }
        if line.len() > bounded::LINE_MAX {
            let error = format!(
                "{} bytes, over the {}-byte limit",
                line.len(),
                bounded::LINE_MAX
            );
            bad.push(BadLine { line: i + 1, error });
            continue;
        }
        budget.spend(&format!("samples.jsonl line {}", i + 1), &line)?;
        match serde_json::from_slice::<Sample>(&line) {
            Ok(s) => good.push(s),
            Err(e) => bad.push(BadLine {
                line: i + 1,
                error: e.to_string(),
            }),
        }
    }
    Ok((good, bad))
}

/// The sampler's JSON (see `docker/README.md`): what one probe process did, in KiB and ms.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SamplerOutput {
    pub cpus_in_force: Option<String>,
    pub baseline: Option<Reading>,
    #[serde(default)]
    pub samples: Vec<Reading>,
    #[serde(default)]
    pub ready: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub done: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub timings_ms: BTreeMap<String, Option<f64>>,
    pub exit_code: Option<i64>,
    pub signal: Option<i64>,
    pub error: Option<String>,
    /// Peak, timed and latency kinds (see `docker/README.md`).
    pub peak: Option<PeakOutput>,
    #[serde(default)]
    pub results: Vec<BTreeMap<String, serde_json::Value>>,
    #[serde(default)]
    pub latency: Vec<[u64; 2]>,
    #[serde(default)]
    pub other_lines: u64,
    /// Every kind: the program's `note` lines, without the word `note`.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Timed kind: what disturbed each batch.
    #[serde(default)]
    pub batches: Vec<BatchCounters>,
    /// Timed kind: the rule for dropping batches the sampler was given, echoed.
    #[serde(default)]
    pub batch_rule: Option<crate::study::protocol::DropBatches>,
}

/// The sampler's `peak` object, KiB and ms.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PeakOutput {
    #[serde(default)]
    pub polls: u64,
    pub vm_hwm_kib: Option<u64>,
    pub vm_rss_max_kib: Option<u64>,
    pub threads_max: Option<u64>,
    pub ru_maxrss_kib: Option<u64>,
    pub wall_ms: Option<f64>,
    pub user_ms: Option<f64>,
    pub sys_ms: Option<f64>,
}

/// One read of /proc/<pid>/status, KiB.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Reading {
    pub vm_rss_kib: u64,
    pub vm_hwm_kib: u64,
    pub rss_anon_kib: u64,
    pub rss_file_kib: u64,
    pub threads: u64,
}

impl Sample {
    /// The seed of this sample's bootstrap intervals: the first 8 bytes of
    /// sha256(`run_id/probe/tasks/repeat`), so the same `samples.jsonl` always gives the same intervals.
    pub fn bootstrap_seed(&self) -> u64 {
        use sha2::{Digest, Sha256};
        let text = format!(
            "{}/{}/{}/{}",
            self.run_id, self.probe, self.tasks, self.repeat
        );
        let hash = Sha256::digest(text.as_bytes());
        u64::from_le_bytes(hash[..8].try_into().expect("8 bytes"))
    }
}

/// Test fixtures: a realistic, made-up run of the default study (`tests/fixtures/samples.jsonl`:
/// 2 probes × 4 scales × 3 repeats, Go at 1M repeat 2 OOM-killed).
#[cfg(test)]
pub mod fixture {
    use super::{Sample, parse_lines};

    const SAMPLES: &str = include_str!("../../tests/fixtures/samples.jsonl");

    pub fn samples() -> Vec<Sample> {
        let (good, bad) = parse_lines(SAMPLES.as_bytes()).unwrap();
        assert!(bad.is_empty(), "fixture lines malformed: {bad:?}");
        good
    }
}

#[cfg(test)]
mod tests;
