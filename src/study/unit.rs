//! The unit a claim's published value is written in, and what each unit measures.

use serde::{Deserialize, Serialize};

/// Units of claims. 1 KiB = 1,024 B, 1 MiB = 1,024 KiB, 1 GiB = 1,024 MiB; 1 kB = 1,000 B and
/// 1 MB = 1,000,000 B, for articles that count in decimal; times are based on ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    B,
    KiB,
    MiB,
    GiB,
    /// 1,000 bytes.
    #[serde(rename = "kB")]
    Kb,
    /// 1,000,000 bytes.
    #[serde(rename = "MB")]
    Mb,
    #[serde(rename = "%")]
    Percent,
    /// Nanoseconds.
    #[serde(rename = "ns")]
    Ns,
    /// Microseconds.
    #[serde(rename = "us")]
    Us,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Ms,
    /// Seconds.
    #[serde(rename = "s")]
    S,
    /// A plain ratio ("13×").
    #[serde(rename = "x")]
    Times,
    /// A plain count (threads, operations).
    #[serde(rename = "count")]
    Count,
    /// A ranking (for `order` claims).
    #[serde(rename = "rank")]
    Rank,
}

/// What a unit measures; a claim's unit must measure what its statistic measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// Bytes.
    Memory,
    /// Nanoseconds.
    Time,
    /// A percentage.
    Percent,
    /// A plain number: ratios, counts, metrics without a unit.
    Plain,
    /// A ranking.
    Rank,
}

impl Unit {
    /// Base units (bytes, ns, 1) per unit.
    pub fn scale(self) -> f64 {
        match self {
            Unit::KiB => 1024.0,
            Unit::MiB => 1024.0 * 1024.0,
            Unit::GiB => 1024.0 * 1024.0 * 1024.0,
            Unit::Kb => 1e3,
            Unit::Mb => 1e6,
            Unit::Us => 1e3,
            Unit::Ms => 1e6,
            Unit::S => 1e9,
            _ => 1.0,
        }
    }

    /// What the unit measures.
    pub fn dimension(self) -> Dimension {
        match self {
            Unit::B | Unit::KiB | Unit::MiB | Unit::GiB | Unit::Kb | Unit::Mb => Dimension::Memory,
            Unit::Ns | Unit::Us | Unit::Ms | Unit::S => Dimension::Time,
            Unit::Percent => Dimension::Percent,
            Unit::Times | Unit::Count => Dimension::Plain,
            Unit::Rank => Dimension::Rank,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_units_count_in_powers_of_ten() {
        let unit = |name: &str| serde_yaml::from_str::<Unit>(name).unwrap();
        assert_eq!(unit("kB").scale(), 1e3);
        assert_eq!(unit("MB").scale(), 1e6);
        assert_eq!(unit("MB").dimension(), Dimension::Memory);
        assert!(serde_yaml::from_str::<Unit>("mb").is_err());
        assert_eq!(unit("s").scale(), 1e9);
        assert_eq!(unit("s").dimension(), Dimension::Time);
    }
}
