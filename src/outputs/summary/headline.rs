//! The headline of a cell: the one statistic that stands for it, with its value per process. The
//! comparison of two runs judges it, and processes on demand (`repeats`) stop when it agrees.

use super::Cell;

/// The headline of a cell: the statistic's name and the value of each valid process.
pub struct Headline {
    /// `rss_median_bytes`, `peak_bytes`, or the name of the kind's first statistic.
    pub name: String,
    /// The cell's value: the median over its processes.
    pub value: f64,
    /// One value per valid process.
    pub values: Vec<f64>,
    /// The statistic claims name for `value` when it is the kind's memory figure (`rss_median`,
    /// `peak_median`); `None` for another statistic.
    pub stat: Option<crate::study::Stat>,
}

impl Headline {
    /// The kind's headline: its memory figure for a memory kind, else its first statistic by name.
    pub fn of(cell: &Cell) -> Option<Headline> {
        if let Some(memory) = cell.memory() {
            let name = match cell.kind {
                crate::study::kind::Kind::Steady => "rss_median_bytes",
                _ => "peak_bytes",
            };
            return Some(Headline {
                name: name.into(),
                value: memory.median,
                values: memory.each.iter().map(|(_, v)| *v).collect(),
                stat: cell.kind.measure().memory_stat(),
            });
        }
        let (name, spread) = cell.stats.iter().next()?;
        Some(Headline {
            name: name.clone(),
            value: spread.median,
            values: spread.values.clone(),
            stat: None,
        })
    }

    /// What processes on demand judge: the memory figure of a memory kind, else the least precise
    /// of the kind's statistics (the largest CV across processes), so that a constant count cannot
    /// stand for a spread timing.
    pub fn judged(cell: &Cell) -> Option<Headline> {
        if cell.memory().is_some() {
            return Headline::of(cell);
        }
        let cv = |values: &[f64]| {
            crate::stats::cv(values)
                .filter(|_| values.len() >= 2)
                .unwrap_or(f64::INFINITY)
        };
        let (name, spread) = cell
            .stats
            .iter()
            .max_by(|a, b| cv(&a.1.values).total_cmp(&cv(&b.1.values)))?;
        Some(Headline {
            name: name.clone(),
            value: spread.median,
            values: spread.values.clone(),
            stat: None,
        })
    }

    /// Half of max − min of the process values.
    pub fn half_range(&self) -> f64 {
        let max = self.values.iter().copied().fold(f64::MIN, f64::max);
        let min = self.values.iter().copied().fold(f64::MAX, f64::min);
        if self.values.is_empty() {
            0.0
        } else {
            (max - min) / 2.0
        }
    }

    /// True for a value in bytes.
    pub fn is_bytes(&self) -> bool {
        self.name.ends_with("_bytes")
    }
}
