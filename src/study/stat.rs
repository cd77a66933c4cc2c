//! The statistics a claim can name, each computed from raw samples; which of them a cell has is its
//! kind's answer (`kind`), and a claim's load-time checks hold the two together (`claim`).

use serde::{Deserialize, Serialize};

/// Statistics a claim can name; all computed from raw samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    /// Median over processes of each process's median RSS.
    RssMedian,
    /// The [min, max] of the per-process median RSS.
    RssRange,
    /// Median over processes of (median RSS − baseline), divided by tasks.
    PerTaskBytes,
    /// Steady kind: median over processes of the baseline RSS, read at the probe's `baseline` line
    /// (the runtime up, no task created yet): what an article calls base memory.
    BaselineMedian,
    /// (1 − probe median RSS / `than` median RSS) × 100.
    LowerByPercent,
    /// Median over processes of a probe metric.
    MetricMedian,
    /// Peak kind: median over processes of the peak RSS (`ru_maxrss`).
    PeakMedian,
    /// Peak kind: the [min, max] of the processes' peak RSS.
    PeakRange,
    /// Timed and latency kinds: median over processes of each process's median `result` value.
    ResultMedian,
    /// Latency kind: median over processes of a percentile recomputed from each histogram, ns.
    Percentile,
    /// `of` of the probe ÷ `of` of `than` (or of the probe at `than_tasks`), a plain ratio.
    Ratio,
    /// The ranking of probes by `of`, lowest first.
    Order,
    /// Peak kind: median over processes of each process's wall time, from exec to exit
    /// (`peak.wall_ms`), ms.
    WallMedian,
    /// Every kind: whether the probe's processes at a scale fail (exit code other than 0, killed by
    /// the OOM killer or a signal, optionally with a `pattern` in their reason or stderr) or
    /// complete; `expected: fails | killed | completes`.
    Outcome,
}
