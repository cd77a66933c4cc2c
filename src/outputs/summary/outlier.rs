//! Processes far from the others of their cell: named in every report, never dropped from the
//! statistics.
//!
//! A process is an outlier when its value (the one processes on demand judge: the memory figure's
//! for a memory kind, else the kind's least precise value) lies more than [`MADS`] median absolute
//! deviations from the cell's median. So that a cell whose processes mostly agree exactly (MAD 0)
//! does not flag a hair of difference, the MAD counts as at least [`MAD_FLOOR`] of the median's
//! size. A cell with fewer than [`MIN_PROCESSES`] valid processes flags none: with two, each is as
//! far from their median as the other.

use serde::{Deserialize, Serialize};

use crate::stats::median;
use crate::study::sample::Sample;

/// How many median absolute deviations from the cell's median make a process an outlier.
pub const MADS: f64 = 5.0;

/// The smallest MAD counted, as a fraction of the median's size (1 %).
pub const MAD_FLOOR: f64 = 0.01;

/// The fewest valid processes of a cell for any of them to be an outlier.
pub const MIN_PROCESSES: usize = 3;

/// A valid process far from the others of its cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Repeat number of the process, 1-based.
    pub repeat: u32,
    /// The value compared (`peak_bytes`, `rss_median_bytes`, a result key…).
    pub value: String,
    /// The process's value, in the value's base unit (bytes, ms, ns).
    pub measured: f64,
    /// The cell's median of the value over its valid processes.
    pub median: f64,
    /// How far the process is from the median, in MADs (the MAD floored as said above).
    pub mads: f64,
}

impl Outlier {
    /// The process's value and the cell's median in words: `764.0 MiB, cell median 284.0 MiB, 96
    /// MADs away`.
    pub fn words(&self) -> String {
        let mads = match self.mads.is_finite() {
            true => format!("{:.0} MADs away", self.mads),
            false => "the others all 0".into(),
        };
        format!(
            "{} {}, cell median {}, {mads}",
            self.value,
            amount(&self.value, self.measured),
            amount(&self.value, self.median)
        )
    }
}

/// A value in its unit as its name says it (`*_bytes` in MiB, `*_ms` in ms, `*_ns` in ns).
fn amount(name: &str, v: f64) -> String {
    if name.ends_with("_bytes") {
        format!("{:.1} MiB", v / 1048576.0)
    } else if name.ends_with("_ms") {
        format!("{v:.1} ms")
    } else if name.ends_with("_ns") {
        format!("{v:.1} ns")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The outliers among `values` (one per process, any order): their indexes with their distance
/// from the median in MADs, in index order.
pub fn far(values: &[f64]) -> Vec<(usize, f64)> {
    if values.len() < MIN_PROCESSES {
        return Vec::new();
    }
    let Some(m) = median(values) else {
        return Vec::new();
    };
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    let mad = median(&deviations).unwrap_or(0.0).max(MAD_FLOOR * m.abs());
    if mad <= 0.0 {
        // Every value is 0 but some: a value that is not 0 is as far as can be.
        return (deviations.iter().enumerate())
            .filter(|(_, d)| **d > 0.0)
            .map(|(i, _)| (i, f64::INFINITY))
            .collect();
    }
    (deviations.iter().enumerate())
        .map(|(i, d)| (i, d / mad))
        .filter(|(_, mads)| *mads > MADS)
        .collect()
}

/// The outliers of a cell's valid processes, by the value processes on demand judge.
pub(super) fn of_cell(valid: &[&Sample]) -> Vec<Outlier> {
    let Some(kind) = valid.first().map(|s| s.kind.measure()) else {
        return Vec::new();
    };
    let Some(judged) = kind.judged(valid) else {
        return Vec::new();
    };
    let memory = kind.memory().map(|m| m.name);
    let each: Vec<(u32, f64)> = (valid.iter())
        .filter_map(|s| {
            let v = match memory == Some(judged.name.as_str()) {
                true => kind.memory_bytes(s),
                false => kind.values(s).get(&judged.name).copied(),
            };
            Some((s.repeat, v?))
        })
        .collect();
    let values: Vec<f64> = each.iter().map(|(_, v)| *v).collect();
    let m = median(&values).unwrap_or_default();
    far(&values)
        .into_iter()
        .map(|(i, mads)| Outlier {
            repeat: each[i].0,
            value: judged.name.clone(),
            measured: each[i].1,
            median: m,
            mads,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_far_from_its_cells_others_is_flagged_and_only_it() {
        // A 764 MiB process among 284 MiB ones.
        let far_ones = far(&[284.0, 285.0, 764.0, 283.5]);
        assert_eq!(far_ones.len(), 1, "{far_ones:?}");
        assert_eq!(far_ones[0].0, 2);
        assert!(far_ones[0].1 > MADS);
        // An ordinary spread flags nothing.
        assert!(far(&[100.0, 104.0, 97.0, 101.0, 99.0]).is_empty());
    }

    #[test]
    fn few_processes_flag_none_and_a_mad_of_0_is_floored() {
        assert!(
            far(&[1.0, 1000.0]).is_empty(),
            "two: neither is the odd one"
        );
        assert!(far(&[]).is_empty());
        // MAD 0: three processes agree exactly; 3 % off is within 5 floored MADs (5 %), 6 % is not.
        assert!(far(&[100.0, 100.0, 100.0, 103.0]).is_empty());
        let [(i, mads)] = far(&[100.0, 100.0, 100.0, 106.0])[..] else {
            panic!("one outlier")
        };
        assert_eq!(i, 3);
        assert!((mads - 6.0).abs() < 1e-9, "{mads}");
        // A median of 0: any value not 0 is an outlier.
        let zeros = far(&[0.0, 0.0, 0.0, 1.0]);
        assert_eq!(zeros.iter().map(|z| z.0).collect::<Vec<_>>(), vec![3]);
    }
}
