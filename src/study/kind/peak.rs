//! `peak`: any program, unmodified; the sampler polls `/proc/<pid>/status` and records `ru_maxrss`
//! from `wait4` at exit. Every kind without the handshake runs this way (the helpers here).

use std::collections::BTreeMap;

use super::{FigureStyle, Measure, MemoryFigure, mib};
use crate::study::protocol::Protocol;
use crate::study::sample::{Peak, Sample, SamplerOutput};
use crate::study::stat::Stat;

pub(super) struct PeakKind;

const KIB: u64 = 1024;

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
        &[
            Stat::PeakMedian,
            Stat::PeakRange,
            Stat::PerTaskBytes,
            Stat::WallMedian,
        ]
    }
    fn figure(&self) -> FigureStyle {
        FigureStyle::Memory(MemoryFigure {
            name: "peak_bytes",
            stat: Stat::PeakMedian,
            caption: "Peak RSS of each process (ru_maxrss or polled VmHWM). Dot: one process; bar: \
                      median of the processes. Lower is better.",
        })
    }
    fn per_task_growth(&self) -> Option<&'static str> {
        Some("peak_bytes")
    }
    fn legend(&self) -> &'static str {
        "A process's peak is the larger of `ru_maxrss` (from wait4 at exit) and the largest VmHWM \
         seen while polling; both are listed. Values are medians over processes (range, CV); MiB \
         = 1,048,576 bytes; times in ms. Per task = (peak at N − peak at the smallest scale) ÷ \
         (N − that N).\n"
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

/// `--cpus`, `--interval-ms`, `--timeout-s` and `--kind` for the kinds without a handshake.
pub(super) fn unmodified_args(kind: &str, p: &Protocol, cpus: &str) -> Vec<String> {
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
pub(super) fn fill_peak(s: &mut Sample, out: &SamplerOutput) {
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

/// Why an unmodified program's run does not count: no peak, no `ru_maxrss`, a signal or an exit
/// code other than 0.
pub(super) fn peak_ok(s: &Sample) -> Option<String> {
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
