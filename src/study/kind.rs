//! Kinds of measurement: how a probe process is driven and sampled, what its sample holds, which
//! statistics its cells have and which of them claims may name. A study says the kind per probe; the
//! run, the summary, the report and the verdicts ask the kind's [`Measure`], never match on it.
//!
//! - `steady`: the probe speaks the handshake protocol (`docker/README.md`); RSS is read after every
//!   task is parked.
//! - `peak`: any program, unmodified; the sampler polls `/proc/<pid>/status` and records `ru_maxrss`
//!   from `wait4` at exit.
//! - `timed`: the program prints `result key=value…` lines from its own loop (e.g. `ns_per_op=…`).
//! - `latency`: the program prints its latency histogram as `latency value_ns=… count=…` lines;
//!   percentiles are recomputed from it.
//! - `reported`: the program prints `result key=value…` lines with values it computes itself that
//!   do not depend on time (sizes, counts, limits); zero is a value. The sampler runs it as `timed`.
//!
//! Every kind keeps the program's `note <text>` lines (`Sample::notes`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::percentile;
use crate::study::sample::{self, Peak, Sample, SamplerOutput};
use crate::study::{Protocol, Stat};

/// The kind of measurement of a probe (`kind:` in a study, `kind` in a sample).
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
    /// The kind's implementation.
    pub fn measure(self) -> &'static dyn Measure {
        match self {
            Kind::Steady => &Steady,
            Kind::Peak => &PeakKind,
            Kind::Timed => &Timed,
            Kind::Latency => &Latency,
            Kind::Reported => &Reported,
        }
    }

    /// The kind as written in study files.
    pub fn name(self) -> &'static str {
        self.measure().name()
    }

    /// For `skip_serializing_if`: steady is the default and is not written.
    pub fn is_steady(&self) -> bool {
        *self == Kind::Steady
    }
}

/// One way of measuring a process.
pub trait Measure: Sync {
    /// The kind's name.
    fn name(&self) -> &'static str;
    /// The sampler's options for this kind, up to (not including) the `--` before the probe.
    fn sampler_args(&self, p: &Protocol, cpus: &str) -> Vec<String>;
    /// Fills the kind's fields of a sample; returns what makes the output unusable, if anything.
    fn fill(&self, s: &mut Sample, out: &SamplerOutput) -> Option<String>;
    /// Why a sample that ran to the end is still invalid; `keys` are the result keys the probe may
    /// report (empty: any).
    fn invalid(&self, s: &Sample, keys: &[String]) -> Option<String>;
    /// The per-process values whose spread over processes each cell reports, by name, in base units
    /// (bytes, ms for times of the process, ns for results and latencies).
    fn values(&self, s: &Sample) -> BTreeMap<String, f64>;
    /// The statistics a claim may name for a probe of this kind.
    fn stats(&self) -> &'static [Stat];
    /// The statistic a claim names for the kind's memory figure ([`crate::outputs::summary::Cell::memory`]),
    /// which figures plot; `None` for a kind without one.
    fn memory_stat(&self) -> Option<Stat> {
        None
    }
    /// Whether the kind's values are times, which an emulated CPU (a guest under TCG) makes
    /// meaningless.
    fn measures_time(&self) -> bool {
        false
    }
    /// A short account of a measured process for progress lines.
    fn progress(&self, s: &Sample) -> String;
    /// How a process of this kind is measured, one sentence for the report's protocol section.
    fn describe(&self, p: &Protocol) -> String;
}

struct Steady;
struct PeakKind;
struct Timed;
struct Latency;
struct Reported;

const KIB: u64 = 1024;

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("-".into(), |b| format!("{:.2} MiB", b as f64 / 1048576.0))
}

/// `--cpus`, `--interval-ms`, `--timeout-s` and `--kind` for the kinds without a handshake.
fn unmodified_args(kind: &str, p: &Protocol, cpus: &str) -> Vec<String> {
    let mut args: Vec<String> = vec!["--kind".into(), kind.into()];
    for (flag, value) in [
        ("--cpus", cpus.to_string()),
        ("--interval-ms", p.interval_ms.to_string()),
        ("--timeout-s", p.timeout_s.to_string()),
    ] {
        args.extend([flag.to_string(), value]);
    }
    args
}

/// The `peak` object in bytes, and the process lifetime for the kit's overhead.
fn fill_peak(s: &mut Sample, out: &SamplerOutput) {
    let Some(p) = &out.peak else { return };
    s.peak = Some(Peak {
        ru_maxrss_bytes: p.ru_maxrss_kib.map(|k| k * KIB),
        vm_hwm_bytes: p.vm_hwm_kib.map(|k| k * KIB),
        vm_rss_max_bytes: p.vm_rss_max_kib.map(|k| k * KIB),
        threads_max: p.threads_max,
        polls: p.polls,
        wall_ms: p.wall_ms,
        user_ms: p.user_ms,
        sys_ms: p.sys_ms,
        exit_code: out.exit_code,
        signal: out.signal,
        other_lines: out.other_lines,
    });
    s.timings.probe_ms = p.wall_ms;
}

/// Numeric `result` lines; a value that is not a number is a problem named by its key.
fn fill_results(s: &mut Sample, out: &SamplerOutput) -> Option<String> {
    let mut problem = None;
    for line in &out.results {
        let mut numbers = BTreeMap::new();
        for (k, v) in line {
            match v.as_f64() {
                Some(x) => {
                    numbers.insert(k.clone(), x);
                }
                None => {
                    problem.get_or_insert(format!("result {k}={v} is not a number"));
                }
            }
        }
        s.results.push(numbers);
    }
    problem
}

/// No result line, an unknown key, or a value that is not positive (or, with `zero_ok`,
/// non-negative) and finite.
fn results_invalid(s: &Sample, keys: &[String], zero_ok: bool) -> Option<String> {
    if s.results.is_empty() {
        return Some("the program printed no `result` line".into());
    }
    for (k, &v) in s.results.iter().flatten() {
        if !keys.is_empty() && !keys.contains(k) {
            return Some(format!(
                "unknown result key {k:?} (the study declares: {})",
                keys.join(", ")
            ));
        }
        let fine = v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0));
        match (fine, zero_ok) {
            (true, _) => {}
            (false, true) => return Some(format!("result {k}={v} is not a finite number >= 0")),
            (false, false) => {
                return Some(format!("result {k}={v} is not a positive finite number"));
            }
        }
    }
    None
}

/// Per key, the median of the process's `result` values.
fn result_medians(s: &Sample) -> BTreeMap<String, f64> {
    let mut by_key: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (k, &v) in s.results.iter().flatten() {
        by_key.entry(k.clone()).or_default().push(v);
    }
    by_key
        .into_iter()
        .filter_map(|(k, v)| Some((k, crate::stats::median(&v)?)))
        .collect()
}

fn peak_ok(s: &Sample) -> Option<String> {
    match &s.peak {
        None => Some("the sampler reported no peak".into()),
        Some(p) if p.ru_maxrss_bytes.is_none() => Some("no ru_maxrss from wait4".into()),
        Some(Peak {
            signal: Some(sig), ..
        }) => Some(format!("the program was killed by signal {sig}")),
        Some(p) if p.exit_code != Some(0) => {
            Some(format!("the program exited with {:?}", p.exit_code))
        }
        Some(_) => None,
    }
}

impl Measure for Steady {
    fn name(&self) -> &'static str {
        "steady"
    }
    fn sampler_args(&self, p: &Protocol, cpus: &str) -> Vec<String> {
        let mut args = Vec::new();
        for (flag, value) in [
            ("--cpus", cpus.to_string()),
            ("--settle-ms", p.settle_ms.to_string()),
            ("--samples", p.samples.to_string()),
            ("--interval-ms", p.interval_ms.to_string()),
            ("--timeout-s", p.timeout_s.to_string()),
        ] {
            args.extend([flag.to_string(), value]);
        }
        args
    }
    fn fill(&self, s: &mut Sample, out: &SamplerOutput) -> Option<String> {
        sample::fill_steady(s, out);
        None
    }
    fn invalid(&self, s: &Sample, _keys: &[String]) -> Option<String> {
        sample::steady_invalid(s)
    }
    fn values(&self, _s: &Sample) -> BTreeMap<String, f64> {
        // The steady statistics keep their own fields (rss_median_bytes, per_task_bytes, …).
        BTreeMap::new()
    }
    fn stats(&self) -> &'static [Stat] {
        &[
            Stat::RssMedian,
            Stat::RssRange,
            Stat::PerTaskBytes,
            Stat::BaselineMedian,
            Stat::MetricMedian,
        ]
    }
    fn memory_stat(&self) -> Option<Stat> {
        Some(Stat::RssMedian)
    }
    fn describe(&self, p: &Protocol) -> String {
        format!(
            "steady: {} ms after every task is ready, {} RSS readings {} ms apart; a process's RSS \
             is the median of its readings.",
            p.settle_ms, p.samples, p.interval_ms
        )
    }
    fn progress(&self, s: &Sample) -> String {
        format!(
            "rss={} completed={}/{}",
            mib(s.rss_median_bytes),
            s.completed.map_or("-".to_string(), |c| c.to_string()),
            s.expected
        )
    }
}

impl Measure for PeakKind {
    fn name(&self) -> &'static str {
        "peak"
    }
    fn sampler_args(&self, p: &Protocol, cpus: &str) -> Vec<String> {
        unmodified_args("peak", p, cpus)
    }
    fn fill(&self, s: &mut Sample, out: &SamplerOutput) -> Option<String> {
        fill_peak(s, out);
        None
    }
    fn invalid(&self, s: &Sample, _keys: &[String]) -> Option<String> {
        peak_ok(s)
    }
    fn values(&self, s: &Sample) -> BTreeMap<String, f64> {
        let Some(p) = &s.peak else {
            return BTreeMap::new();
        };
        let bytes = |v: Option<u64>| v.map(|b| b as f64);
        [
            ("peak_bytes", bytes(p.peak_bytes())),
            ("ru_maxrss_bytes", bytes(p.ru_maxrss_bytes)),
            ("vm_hwm_bytes", bytes(p.vm_hwm_bytes)),
            ("threads_max", bytes(p.threads_max)),
            ("wall_ms", p.wall_ms),
            ("user_ms", p.user_ms),
            ("sys_ms", p.sys_ms),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect()
    }
    fn stats(&self) -> &'static [Stat] {
        &[Stat::PeakMedian, Stat::PeakRange, Stat::PerTaskBytes]
    }
    fn memory_stat(&self) -> Option<Stat> {
        Some(Stat::PeakMedian)
    }
    fn describe(&self, p: &Protocol) -> String {
        format!(
            "peak: the unmodified program runs to its end; /proc/<pid>/status is polled every {} ms \
             (VmHWM, VmRSS) and ru_maxrss comes from wait4 at exit (what /usr/bin/time -v calls \
             \"Maximum resident set size\"); a process's peak is the larger of the two high-water \
             marks; per task = (peak at N − peak at the smallest scale) ÷ (N − that scale's N).",
            p.interval_ms
        )
    }
    fn progress(&self, s: &Sample) -> String {
        let p = s.peak.clone().unwrap_or_default();
        format!(
            "peak={} wall={}",
            mib(p.peak_bytes()),
            p.wall_ms
                .map_or("-".into(), |w| format!("{:.2} s", w / 1000.0))
        )
    }
}

impl Measure for Timed {
    fn measures_time(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "timed"
    }
    fn sampler_args(&self, p: &Protocol, cpus: &str) -> Vec<String> {
        unmodified_args("timed", p, cpus)
    }
    fn fill(&self, s: &mut Sample, out: &SamplerOutput) -> Option<String> {
        fill_peak(s, out);
        fill_results(s, out)
    }
    fn invalid(&self, s: &Sample, keys: &[String]) -> Option<String> {
        peak_ok(s).or_else(|| results_invalid(s, keys, false))
    }
    fn values(&self, s: &Sample) -> BTreeMap<String, f64> {
        result_medians(s)
    }
    fn stats(&self) -> &'static [Stat] {
        &[Stat::ResultMedian]
    }
    fn describe(&self, _p: &Protocol) -> String {
        "timed: the program times its own loop and prints `result key=value` lines; a process's \
         value is the median of its lines, a cell's the median of its processes."
            .into()
    }
    fn progress(&self, s: &Sample) -> String {
        let parts: Vec<String> = result_medians(s)
            .iter()
            .map(|(k, v)| format!("{k}={v:.3}"))
            .collect();
        parts.join(" ")
    }
}

impl Measure for Latency {
    fn measures_time(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "latency"
    }
    fn sampler_args(&self, p: &Protocol, cpus: &str) -> Vec<String> {
        unmodified_args("latency", p, cpus)
    }
    fn fill(&self, s: &mut Sample, out: &SamplerOutput) -> Option<String> {
        fill_peak(s, out);
        s.latency_ns = out.latency.clone();
        fill_results(s, out)
    }
    fn invalid(&self, s: &Sample, keys: &[String]) -> Option<String> {
        if s.latency_ns.is_empty() || s.latency_ns.iter().all(|[_, c]| *c == 0) {
            return Some("the program printed no `latency` line".into());
        }
        let no_results = s.results.is_empty();
        peak_ok(s).or_else(|| {
            (!no_results)
                .then(|| results_invalid(s, keys, false))
                .flatten()
        })
    }
    fn values(&self, s: &Sample) -> BTreeMap<String, f64> {
        let mut out = result_medians(s);
        for p in PERCENTILES {
            if let Some(v) = percentile(&s.latency_ns, *p) {
                out.insert(percentile_name(*p), v as f64);
            }
        }
        out
    }
    fn stats(&self) -> &'static [Stat] {
        &[Stat::Percentile, Stat::ResultMedian]
    }
    fn describe(&self, _p: &Protocol) -> String {
        "latency: the program prints its latency histogram; percentiles (nearest rank) are \
         recomputed from it per process, a cell's value is the median of its processes."
            .into()
    }
    fn progress(&self, s: &Sample) -> String {
        let v = self.values(s);
        let get = |p: f64| {
            v.get(&percentile_name(p))
                .map_or("-".into(), |x| format!("{:.1} µs", x / 1000.0))
        };
        format!("p50={} p99={} p99.9={}", get(50.0), get(99.0), get(99.9))
    }
}

impl Measure for Reported {
    fn name(&self) -> &'static str {
        "reported"
    }
    fn sampler_args(&self, p: &Protocol, cpus: &str) -> Vec<String> {
        // The sampler runs it exactly as a timed program: it only collects the lines.
        unmodified_args("timed", p, cpus)
    }
    fn fill(&self, s: &mut Sample, out: &SamplerOutput) -> Option<String> {
        fill_peak(s, out);
        fill_results(s, out)
    }
    fn invalid(&self, s: &Sample, keys: &[String]) -> Option<String> {
        peak_ok(s).or_else(|| results_invalid(s, keys, true))
    }
    fn values(&self, s: &Sample) -> BTreeMap<String, f64> {
        result_medians(s)
    }
    fn stats(&self) -> &'static [Stat] {
        &[Stat::ResultMedian]
    }
    fn describe(&self, _p: &Protocol) -> String {
        "reported: the program prints `result key=value` lines with values it computes itself \
         (sizes, counts, limits; not times); a process's value is the median of its lines, a \
         cell's the median of its processes."
            .into()
    }
    fn progress(&self, s: &Sample) -> String {
        Timed.progress(s)
    }
}

/// Percentiles every latency cell reports.
pub const PERCENTILES: &[f64] = &[50.0, 90.0, 99.0, 99.9];

/// The name of a percentile's value in a cell's statistics (`p99_ns`, `p99.9_ns`).
pub fn percentile_name(p: f64) -> String {
    let text = format!("{p}");
    format!("p{text}_ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let h = [[30, 1], [10, 98], [20, 1]];
        assert_eq!(percentile(&h, 50.0), Some(10));
        assert_eq!(percentile(&h, 99.0), Some(20));
        assert_eq!(percentile(&h, 99.9), Some(30));
        assert_eq!(percentile(&[], 50.0), None);
        // 1000 values 1..=1000: P99.9 is the 999th, P99 the 990th, P50 the 500th.
        let h: Vec<[u64; 2]> = (1..=1000).map(|v| [v, 1]).collect();
        assert_eq!(percentile(&h, 99.9), Some(999));
        assert_eq!(percentile(&h, 99.0), Some(990));
        assert_eq!(percentile(&h, 50.0), Some(500));
        let h: Vec<[u64; 2]> = (1..=100_000).map(|v| [v, 1]).collect();
        assert_eq!(percentile(&h, 99.9), Some(99_900));
        assert_eq!(percentile_name(99.9), "p99.9_ns");
        assert_eq!(percentile_name(50.0), "p50_ns");
    }

    #[test]
    fn timed_results_are_checked() {
        let mut s = crate::study::sample::fixture::samples()[0].clone();
        s.kind = Kind::Timed;
        s.peak = Some(Peak {
            ru_maxrss_bytes: Some(1),
            exit_code: Some(0),
            ..Peak::default()
        });
        let keys = vec!["ns_per_op".to_string()];
        assert!(
            Timed
                .invalid(&s, &keys)
                .unwrap()
                .contains("no `result` line")
        );
        s.results = vec![BTreeMap::from([("ns_per_op".into(), 2.0)])];
        assert_eq!(Timed.invalid(&s, &keys), None);
        s.results.push(BTreeMap::from([("ns_per_op".into(), 0.0)]));
        assert!(
            Timed
                .invalid(&s, &keys)
                .unwrap()
                .contains("positive finite")
        );
        s.results[1] = BTreeMap::from([("bogus".into(), 1.0)]);
        assert!(
            Timed
                .invalid(&s, &keys)
                .unwrap()
                .contains("unknown result key")
        );
        s.results.pop();
        s.results.push(BTreeMap::from([("ns_per_op".into(), 4.0)]));
        assert_eq!(Timed.values(&s)["ns_per_op"], 3.0);
    }

    #[test]
    fn reported_results_may_be_zero_but_not_negative() {
        let mut s = crate::study::sample::fixture::samples()[0].clone();
        s.kind = Kind::Reported;
        s.peak = Some(Peak {
            ru_maxrss_bytes: Some(1),
            exit_code: Some(0),
            ..Peak::default()
        });
        let keys = vec!["syscalls_per_switch".to_string()];
        assert!(
            Reported
                .invalid(&s, &keys)
                .unwrap()
                .contains("no `result` line")
        );
        s.results = vec![BTreeMap::from([("syscalls_per_switch".into(), 0.0)])];
        assert_eq!(Reported.invalid(&s, &keys), None, "zero is a value");
        assert_eq!(Reported.values(&s)["syscalls_per_switch"], 0.0);
        s.results[0] = BTreeMap::from([("syscalls_per_switch".into(), -1.0)]);
        assert!(Reported.invalid(&s, &keys).unwrap().contains(">= 0"));
        s.results[0] = BTreeMap::from([("syscalls_per_switch".into(), f64::INFINITY)]);
        assert!(Reported.invalid(&s, &keys).unwrap().contains(">= 0"));
        s.results[0] = BTreeMap::from([("other".into(), 1.0)]);
        assert!(
            Reported
                .invalid(&s, &keys)
                .unwrap()
                .contains("unknown result key")
        );
        assert_eq!(Reported.invalid(&s, &[]), None, "no declared keys: any key");
        let args = Reported.sampler_args(&crate::study::Study::default_study().protocol, "0");
        assert_eq!(args[..2], ["--kind".to_string(), "timed".to_string()]);
    }

    #[test]
    fn kinds_round_trip_by_name() {
        for k in [
            Kind::Steady,
            Kind::Peak,
            Kind::Timed,
            Kind::Latency,
            Kind::Reported,
        ] {
            let yaml = serde_yaml::to_string(&k).unwrap();
            assert_eq!(yaml.trim(), k.name());
            assert_eq!(serde_yaml::from_str::<Kind>(&yaml).unwrap(), k);
        }
        assert!(serde_yaml::from_str::<Kind>("bogus").is_err());
    }
}
