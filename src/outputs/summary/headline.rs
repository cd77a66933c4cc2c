//! The headline of a cell: the one statistic that stands for it, with its value per process. The
//! comparison of two runs judges it, and processes on demand (`repeats`) stop when it agrees.

use super::Cell;
use crate::study::kind::Kind;
use crate::study::sample::Sample;

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
        let figure = cell.kind.measure().memory();
        if let Some((memory, figure)) = cell.memory().zip(figure) {
            return Some(Headline {
                name: figure.name.into(),
                value: memory.median,
                values: memory.each.iter().map(|(_, v)| *v).collect(),
                stat: Some(figure.stat),
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

    /// What processes on demand judge for a cell of `kind`, from its valid samples: the kind's own
    /// choice ([`crate::study::kind::Measure::judged`]), which the run's rounds ask too.
    pub fn judged(kind: Kind, valid: &[&Sample]) -> Option<Headline> {
        let judged = kind.measure().judged(valid)?;
        let figure = kind.measure().memory().filter(|f| f.name == judged.name);
        Some(Headline {
            value: crate::stats::median(&judged.values)?,
            stat: figure.map(|f| f.stat),
            name: judged.name,
            values: judged.values,
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
