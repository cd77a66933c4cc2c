//! The kinds that read the program's own lines: `timed` and `reported` (`result key=value…`
//! lines) and `latency` (a histogram, and optionally `result` lines). Each runs as an unmodified
//! program (see `peak.rs`).

use std::collections::BTreeMap;

use super::batches;
use super::peak::{fill_peak, peak_ok, unmodified_args};
use super::{FigureStyle, Measure, Scaffold};
use crate::stats::percentile;
use crate::study::protocol::{Isolation, Protocol};
use crate::study::sample::{Sample, SamplerOutput};
use crate::study::stat::Stat;

pub(super) struct Timed;
pub(super) struct Latency;
pub(super) struct Reported;

/// The legend of latency and reported.
const MEDIAN_LEGEND: &str = "Each value is the median over processes of each process's own value \
                             (range, CV); times in the unit their name says.\n";

/// The templates' timed and latency programs are scale-free: they run at one scale.
fn one_scale(program: &'static str, args: &'static str) -> Scaffold {
    Scaffold {
        program,
        args,
        scales: Some("[1]"),
    }
}

impl Measure for Timed {
    /// A fresh process, not a fresh container: a program timed (or reporting its own values) is
    /// measured by what it does, not by its container's start.
    fn isolation(&self) -> Isolation {
        Isolation::Process
    }

    fn name(&self) -> &'static str {
        "timed"
    }
    fn figure(&self) -> FigureStyle {
        FigureStyle::Intervals
    }
    fn scaffold(&self) -> Scaffold {
        one_scale(self.name(), r#"["20"]"#)
    }
    fn sampler_args(&self, p: &Protocol, cpus: &str) -> Vec<String> {
        let mut args = unmodified_args("timed", p, cpus);
        let rule = &p.drop_batches;
        let fraction = |f: Option<f64>| f.map(|f| f.to_string());
        for (flag, value) in [
            ("--drop-steal", fraction(rule.steal_above)),
            ("--drop-wait", fraction(rule.wait_above)),
            (
                "--drop-involuntary",
                rule.involuntary_switches_above.map(|n| n.to_string()),
            ),
        ] {
            if let Some(v) = value {
                args.extend([flag.to_string(), v]);
            }
        }
        args
    }
    fn fill(&self, s: &mut Sample, out: &SamplerOutput) -> Option<String> {
        fill_peak(s, out);
        s.batches = out.batches.clone();
        s.drop_batches = out.batch_rule;
        fill_results(s, out)
    }
    fn invalid(&self, s: &Sample, keys: &[String]) -> Option<String> {
        peak_ok(s)
            .or_else(|| results_invalid(s, keys, false))
            .or_else(|| batches::mismatch(s))
    }
    fn values(&self, s: &Sample) -> BTreeMap<String, f64> {
        result_medians(s)
    }
    fn stats(&self) -> &'static [Stat] {
        &[Stat::ResultMedian]
    }
    fn prints_results(&self) -> bool {
        true
    }
    fn bootstrap_intervals(&self) -> bool {
        true
    }
    fn flags_target_cv(&self) -> bool {
        true
    }
    fn measures_time(&self) -> bool {
        true
    }
    fn legend(&self) -> &'static str {
        "Each value is the median over processes of each process's own value (range, CV); times \
         in the unit their name says. Batches: `result` lines per process; a batch that steal or \
         another task's run-queue wait disturbed beyond `protocol.drop_batches` is dropped, \
         counted, and left out of its process's value. A process's interval is the bootstrap \
         95 % interval of the median of its kept batches (2000 resamples, seeded from the \
         sample). ⚠ marks a CV above `protocol.target_cv`.\n"
    }
    fn describe(&self, p: &Protocol) -> String {
        let r = &p.drop_batches;
        let pct = |f: Option<f64>| f.map_or("not applied".into(), |f| format!("{} %", f * 100.0));
        let switches = r
            .involuntary_switches_above
            .map_or("not applied".into(), |n| n.to_string());
        format!(
            "timed: the program times its own loop and prints `result key=value` lines; a \
             process's value is the median of its lines, a cell's the median of its processes. A \
             line (batch) is dropped, and counted, when during it the steal of the pinned CPUs \
             (less one clock tick per CPU) was above {} of its window, its threads' run-queue \
             wait per busy CPU above {} of it beyond the process's median batch, or its \
             involuntary switches above {switches} (`protocol.drop_batches`); when more than half \
             of a process's batches were disturbed none is dropped, and it is said.",
            pct(r.steal_above),
            pct(r.wait_above)
        )
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
    /// As [`Timed`]'s.
    fn isolation(&self) -> Isolation {
        Isolation::Process
    }

    fn name(&self) -> &'static str {
        "latency"
    }
    fn figure(&self) -> FigureStyle {
        FigureStyle::Percentiles
    }
    fn scaffold(&self) -> Scaffold {
        one_scale(self.name(), r#"["1000"]"#)
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
    fn prints_results(&self) -> bool {
        true
    }
    fn flags_target_cv(&self) -> bool {
        true
    }
    fn measures_time(&self) -> bool {
        true
    }
    fn legend(&self) -> &'static str {
        MEDIAN_LEGEND
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
    /// As [`Timed`]'s.
    fn isolation(&self) -> Isolation {
        Isolation::Process
    }

    fn name(&self) -> &'static str {
        "reported"
    }
    fn figure(&self) -> FigureStyle {
        FigureStyle::Bars
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
    fn prints_results(&self) -> bool {
        true
    }
    fn legend(&self) -> &'static str {
        MEDIAN_LEGEND
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

/// Per key, the median of the process's `result` values, its dropped batches left out
/// ([`batches::dropped`]; only a timed sample with counters and a rule drops any).
fn result_medians(s: &Sample) -> BTreeMap<String, f64> {
    batches::medians(batches::kept(s))
}
