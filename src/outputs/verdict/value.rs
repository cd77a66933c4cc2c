//! One probe's statistic at one scale, taken from the summary's cells.

use crate::outputs::summary::{Cell, Summary};
use crate::study::kind::percentile_name;
use crate::study::{Claim, Stat};

use super::Measured;

/// A single-valued statistic of `probe` at `tasks`, in base units (bytes, ns, plain), with notes.
pub(super) fn scalar(
    stat: Stat,
    claim: &Claim,
    probe: &str,
    tasks: u64,
    summary: &Summary,
) -> Result<(f64, Vec<String>), String> {
    let cell = valid_cell(summary, probe, tasks)?;
    let mut notes: Vec<String> = coverage_note(cell, summary).into_iter().collect();
    let stat_value = |name: &str| {
        cell.stats
            .get(name)
            .map(|s| s.median)
            .ok_or_else(|| format!("no valid sample of {probe} at {tasks} tasks reports {name}"))
    };
    let value = match stat {
        Stat::RssMedian => cell.rss_median_bytes.ok_or_else(|| {
            format!("no valid sample of {probe} at {tasks} tasks has RSS readings")
        })?,
        Stat::PerTaskBytes => cell.per_task_bytes.ok_or_else(|| {
            format!(
                "no per-task value for {probe} at {tasks} tasks (steady: no baseline RSS; \
                 peak: needs a valid smaller scale to subtract)"
            )
        })?,
        Stat::BaselineMedian => cell.baseline_median_bytes().ok_or_else(|| {
            format!("no valid sample of {probe} at {tasks} tasks has a baseline RSS")
        })?,
        Stat::PeakMedian => stat_value("peak_bytes")?,
        // Times of a process are in ms, a claim's base unit of time is the ns.
        Stat::WallMedian => stat_value("wall_ms")? * 1e6,
        Stat::ResultMedian => stat_value(claim.metric.as_deref().ok_or("claim names no metric")?)?,
        Stat::Percentile => stat_value(&percentile_name(
            claim.percentile.ok_or("claim names no percentile")?,
        ))?,
        Stat::MetricMedian => {
            let name = claim.metric.as_deref().ok_or("claim names no metric")?;
            let m = cell.metrics.get(name).ok_or_else(|| {
                format!("no valid sample of {probe} at {tasks} tasks reports metric {name}")
            })?;
            if m.count < cell.valid {
                notes.push(format!(
                    "{name} reported by {} of {} valid processes",
                    m.count, cell.valid
                ));
            }
            m.median
        }
        other => return Err(format!("{other:?} is not a single value per cell")),
    };
    Ok((value, notes))
}

/// `rss_range` and `peak_range`: [min, max] over the processes, in the claim's unit.
pub(super) fn range(claim: &Claim, summary: &Summary) -> Result<(Measured, Vec<String>), String> {
    let tasks = claim.tasks.ok_or("claim names no task count")?;
    let cell = valid_cell(summary, &claim.probe, tasks)?;
    let notes = coverage_note(cell, summary).into_iter().collect();
    let (lo, hi) = match claim.stat {
        Stat::PeakRange => {
            let s = cell.stats.get("peak_bytes").ok_or("no peak values")?;
            (s.min, s.max)
        }
        _ => (
            cell.rss_min_bytes.unwrap_or_default(),
            cell.rss_max_bytes.unwrap_or_default(),
        ),
    };
    let scale = claim.unit.scale();
    Ok((Measured::Range([lo / scale, hi / scale]), notes))
}

/// `metric_median` without a scale: the median over every valid process of the probe.
pub(super) fn metric_all_scales(
    claim: &Claim,
    summary: &Summary,
) -> Result<(Measured, Vec<String>), String> {
    let name = claim.metric.as_deref().ok_or("claim names no metric")?;
    let probe = summary
        .probe(&claim.probe)
        .ok_or_else(|| format!("probe {} is not in the study", claim.probe))?;
    let m = probe
        .metrics
        .get(name)
        .ok_or_else(|| format!("no valid sample of {} reports metric {name}", claim.probe))?;
    let note = format!("median of {} valid processes, all scales", m.count);
    Ok((Measured::Value(m.median / claim.unit.scale()), vec![note]))
}

/// The cell of a probe at a scale with at least one valid process; otherwise why not, with the
/// reason its processes were invalid (e.g. the toolchain is unavailable).
pub(super) fn valid_cell<'a>(
    summary: &'a Summary,
    probe: &str,
    tasks: u64,
) -> Result<&'a Cell, String> {
    match summary.cell(probe, tasks) {
        None => Err(format!("{probe} at {tasks} tasks is not in the study")),
        Some(c) if c.valid == 0 => {
            let why = summary
                .invalid_samples
                .iter()
                .find(|i| i.probe == probe && i.tasks == tasks)
                .map(|i| format!(" ({})", i.error))
                .unwrap_or_default();
            Err(format!("no valid sample of {probe} at {tasks} tasks{why}"))
        }
        Some(c) => Ok(c),
    }
}

pub(super) fn coverage_note(cell: &Cell, summary: &Summary) -> Option<String> {
    let repeats = summary.processes_of(cell);
    (cell.valid != repeats).then(|| {
        format!(
            "{}: {} of {repeats} processes valid at {} tasks",
            cell.probe, cell.valid, cell.tasks
        )
    })
}
