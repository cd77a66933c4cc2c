//! `steady`: the probe speaks the handshake protocol; RSS is read after every task is parked.

use std::collections::BTreeMap;

use super::{Fields, FigureStyle, Measure, MemoryFigure, mib};
use crate::study::protocol::Protocol;
use crate::study::sample::{Sample, SamplerOutput};
use crate::study::stat::Stat;

pub(super) struct Steady;

impl Measure for Steady {
    fn name(&self) -> &'static str {
        "steady"
    }
    /// The settle after every task is ready, then the readings `interval_ms` apart.
    fn least_ms(&self, p: &Protocol) -> f64 {
        p.settle_ms as f64 + f64::from(p.samples.saturating_sub(1)) * p.interval_ms as f64
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
        fill(s, out);
        None
    }
    fn invalid(&self, s: &Sample, _keys: &[String]) -> Option<String> {
        invalid(s)
    }
    /// Some tasks ended before the last one was created: the reading never held N tasks. Only
    /// when the probe accounts for every missing task as ended (its `ready` line's
    /// `completed_before_ready`): a probe short of tasks because it could not create them (a
    /// thread limit, memory) failed.
    fn by_protocol(&self, s: &Sample) -> Option<String> {
        let why = created_short(s)?;
        let created = s.metrics.get("created").copied()?;
        let ended = s.metrics.get("completed_before_ready").copied()?;
        (ended > 0.0 && created + ended >= s.expected as f64).then_some(why)
    }
    fn recheck(&self, s: &Sample, keys: &[String]) -> Option<String> {
        if s.rss_bytes.is_empty() {
            return Some("marked valid but has no RSS readings".into());
        }
        let why = self.invalid(s, keys)?;
        Some(format!("marked valid, but {why}"))
    }
    fn values(&self, _s: &Sample) -> BTreeMap<String, f64> {
        // The steady statistics keep their own fields (rss_median_bytes, per_task_bytes, …).
        BTreeMap::new()
    }
    fn fields(&self) -> Fields {
        Fields::Rss
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
    fn figure(&self) -> FigureStyle {
        FigureStyle::Memory(MemoryFigure {
            name: "rss_median_bytes",
            stat: Stat::RssMedian,
            caption: "Process RSS with every task parked. Dot: one process (median of its \
                      readings); bar: median of the processes. Lower is better.",
        })
    }
    fn memory_bytes(&self, s: &Sample) -> Option<f64> {
        s.rss_median()
    }
    fn legend(&self) -> &'static str {
        "RSS in MiB (1 MiB = 1,048,576 bytes). CV is the population standard deviation of the \
         process medians ÷ their mean. Per task is the median over processes of (RSS − \
         baseline), ÷ tasks.\n"
    }
    fn describe(&self, p: &Protocol) -> String {
        format!(
            "RSS: {} ms after every task is ready, {} readings {} ms apart; a process's RSS is the \
             median of its readings.",
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

/// The steady kind's fields, from the handshake protocol's readings and lines.
fn fill(sample: &mut Sample, out: &SamplerOutput) {
    const KIB: u64 = 1024;
    sample.baseline_rss_bytes = out.baseline.as_ref().map(|b| b.vm_rss_kib * KIB);
    sample.rss_bytes = out.samples.iter().map(|r| r.vm_rss_kib * KIB).collect();
    // The mean of the two middle readings, truncated, for an even count.
    sample.rss_median_bytes = sample.rss_median().map(|m| m as u64);
    sample.per_task_bytes = match (sample.rss_median_bytes, sample.baseline_rss_bytes) {
        (Some(m), Some(b)) if sample.tasks > 0 => Some((m as f64 - b as f64) / sample.tasks as f64),
        _ => None,
    };
    if let Some(last) = out.samples.last() {
        sample.vm_hwm_bytes = Some(last.vm_hwm_kib * KIB);
        sample.rss_anon_bytes = Some(last.rss_anon_kib * KIB);
        sample.rss_file_bytes = Some(last.rss_file_kib * KIB);
        sample.threads = Some(last.threads);
    }
    sample.completed = out
        .done
        .get("completed")
        .and_then(serde_json::Value::as_u64);
    for (k, v) in out.ready.iter().chain(out.done.iter()) {
        if let Some(x) = v.as_f64() {
            sample.metrics.insert(k.clone(), x);
        }
    }
    let t = |k: &str| out.timings_ms.get(k).copied().flatten();
    sample.timings.spawn_ms = t("spawn");
    sample.timings.measure_ms = t("measure");
    sample.timings.release_ms = t("release");
    sample.timings.probe_ms = t("probe");
}

/// The steady kind's checks: every task was created (a `ready` line's `created=K`, when the probe
/// reports it), every task completed, and RSS was read.
fn invalid(sample: &Sample) -> Option<String> {
    if let Some(why) = created_short(sample) {
        // The probe went on with the K it had: `completed=K` says nothing more.
        Some(why)
    } else if sample.completed != Some(sample.expected) {
        Some(format!(
            "completed {:?} of {} tasks",
            sample.completed, sample.expected
        ))
    } else if sample.rss_bytes.is_empty() || sample.baseline_rss_bytes.is_none() {
        Some("no RSS readings".to_string())
    } else {
        None
    }
}

/// `created K of N tasks` when the `ready` line's `created=K` (reported by probes whose tasks end
/// on their own) is below the tasks asked for.
fn created_short(sample: &Sample) -> Option<String> {
    let created = sample.metrics.get("created").copied();
    let k = created.filter(|&k| k < sample.expected as f64)?;
    Some(format!("created {k} of {} tasks", sample.expected))
}
