//! How many processes a cell gets: a fixed count (`repeats: 3`), or as many as it takes for the
//! cell's processes to agree (`repeats: {min: 3, max: 10, target_cv: 0.005}`): after the planned
//! `min`, a cell whose process values spread more than the target gets one more process, round after
//! round, until it is under the target or has `max` processes.

use std::fmt;

use anyhow::Result;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::yaml::{Invalid, ensure_at};

/// Most processes a cell gets under `--repeats auto`, unless the study plans more.
pub const AUTO_MAX: u32 = 10;
/// The CV `--repeats auto` aims for when the study names no `protocol.target_cv`, a fraction.
pub const AUTO_TARGET_CV: f64 = 0.005;

/// Processes per probe and scale. Written as an integer (a fixed count) or as
/// `{min, max, target_cv}` (processes on demand).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Repeats {
    /// Processes every cell gets: the planned matrix.
    pub min: u32,
    /// Most processes a cell gets, whatever its CV; equal to `min` for a fixed count.
    pub max: u32,
    /// The CV a cell's process values should be under, a fraction (0.005 = 0.5 %); `None` for a
    /// fixed count.
    pub target_cv: Option<f64>,
}

impl Repeats {
    /// The processes per cell in words, singular when exactly one (`1 process per cell`,
    /// `3 to 10 processes per cell`).
    pub fn per_cell(&self) -> String {
        let noun = if self.target_cv.is_none() && self.min == 1 {
            "process"
        } else {
            "processes"
        };
        format!("{self} {noun} per cell")
    }

    /// Exactly `n` processes per cell.
    pub fn fixed(n: u32) -> Self {
        Repeats {
            min: n,
            max: n,
            target_cv: None,
        }
    }

    /// True when cells get processes on demand.
    pub fn is_adaptive(&self) -> bool {
        self.target_cv.is_some()
    }

    /// The values a study may hold; errors name the field (`protocol.repeats.min`) and what to write.
    pub fn check(&self) -> Result<(), Invalid> {
        let Some(t) = self.target_cv else {
            ensure_at!(
                self.min > 0,
                "protocol.repeats",
                "protocol.repeats must be > 0"
            );
            return Ok(());
        };
        ensure_at!(
            self.min >= 2,
            "protocol.repeats.min",
            "protocol.repeats.min is {}: a CV needs at least 2 processes; write e.g. \
             `repeats: {{min: 3, max: 10, target_cv: 0.005}}`",
            self.min
        );
        ensure_at!(
            self.max >= self.min,
            "protocol.repeats.max",
            "protocol.repeats.max is {} but min is {}: write a max of at least {}",
            self.max,
            self.min,
            self.min
        );
        ensure_at!(
            t.is_finite() && t > 0.0 && t < 1.0,
            "protocol.repeats.target_cv",
            "protocol.repeats.target_cv is {t}: a fraction between 0 and 1 (0.005 = 0.5 %)"
        );
        Ok(())
    }

    /// True when a cell with `processes` samples (valid or not) and these values of its valid
    /// processes needs one more process: the rule is adaptive, the cell has had its planned
    /// processes and fewer than `max`, at least one of them is valid (a cell that never measured
    /// anything, such as an unavailable toolchain's, gets nothing more) and the values' CV is above
    /// the target, or not known yet (one valid value).
    pub fn wants_more(&self, processes: usize, values: &[f64]) -> bool {
        let Some(target) = self.target_cv else {
            return false;
        };
        let room = processes >= self.min as usize && processes < self.max as usize;
        if !room || values.is_empty() {
            return false;
        }
        match crate::stats::cv(values).filter(|_| values.len() >= 2) {
            Some(cv) => cv > target,
            None => values.len() < 2,
        }
    }
}

/// `3`, or `3 to 10` when processes come on demand.
impl fmt::Display for Repeats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.target_cv {
            None => write!(f, "{}", self.min),
            Some(_) => write!(f, "{} to {}", self.min, self.max),
        }
    }
}

impl Repeats {
    /// How processes on demand are added, as a clause (`one more process at a time while a cell's
    /// CV is above 0.50 %, up to 10`); `None` for a fixed count.
    pub fn rule(&self) -> Option<String> {
        self.target_cv.map(|t| {
            format!(
                "one more process at a time while a cell's CV is above {:.2} %, up to {}",
                t * 100.0,
                self.max
            )
        })
    }
}

/// `--repeats` on `run` and `reproduce`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RepeatsChoice {
    /// Processes on demand from the study's count: `{min: n, max: 10, target_cv: protocol.target_cv
    /// or 0.005}`; a study that already asks for processes on demand keeps its rule.
    Auto,
    /// Exactly this many processes per cell.
    Fixed(u32),
}

impl std::str::FromStr for RepeatsChoice {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        if s == "auto" {
            return Ok(Self::Auto);
        }
        match s.parse::<u32>() {
            Ok(n) if n > 0 => Ok(Self::Fixed(n)),
            _ => anyhow::bail!("--repeats takes `auto` or a number of processes > 0, not {s:?}"),
        }
    }
}

/// As `--repeats` takes it: `auto` or the number.
impl fmt::Display for RepeatsChoice {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Fixed(n) => write!(f, "{n}"),
        }
    }
}

impl RepeatsChoice {
    /// The rule in force for a study whose protocol says `study` and `target_cv`.
    pub fn apply(self, study: Repeats, target_cv: Option<f64>) -> Repeats {
        match self {
            Self::Fixed(n) => Repeats::fixed(n),
            Self::Auto if study.is_adaptive() => study,
            Self::Auto => {
                let min = study.min.max(2);
                Repeats {
                    min,
                    max: min.max(AUTO_MAX),
                    target_cv: Some(target_cv.unwrap_or(AUTO_TARGET_CV)),
                }
            }
        }
    }
}

/// The map form, as written in a study.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OnDemand {
    /// Processes every cell gets.
    min: u32,
    /// Most processes a cell gets.
    max: u32,
    /// The CV a cell's process values should be under, a fraction (0.005 = 0.5 %).
    target_cv: f64,
}

impl Serialize for Repeats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.target_cv {
            None => s.serialize_u32(self.min),
            Some(target_cv) => OnDemand {
                min: self.min,
                max: self.max,
                target_cv,
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Repeats {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RepeatsVisitor)
    }
}

struct RepeatsVisitor;

impl<'de> Visitor<'de> for RepeatsVisitor {
    type Value = Repeats;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number of processes (3) or {min: 3, max: 10, target_cv: 0.005}")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Repeats, E> {
        let n = u32::try_from(n).map_err(|_| E::custom(format!("{n} processes is too many")))?;
        Ok(Repeats::fixed(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Repeats, E> {
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Err(E::invalid_value(de::Unexpected::Signed(n), &self)),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Repeats, A::Error> {
        let m = OnDemand::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Repeats {
            min: m.min,
            max: m.max,
            target_cv: Some(m.target_cv),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_per_cell_is_singular_for_one() {
        let fixed = |n| Repeats {
            min: n,
            max: n,
            target_cv: None,
        };
        assert_eq!(fixed(1).per_cell(), "1 process per cell");
        assert_eq!(fixed(3).per_cell(), "3 processes per cell");
        let adaptive = Repeats {
            min: 1,
            max: 10,
            target_cv: Some(0.005),
        };
        assert_eq!(adaptive.per_cell(), "1 to 10 processes per cell");
    }

    fn parse(yaml: &str) -> Result<Repeats> {
        crate::yaml::Doc::new("repeats", yaml).deserialize()
    }

    #[test]
    fn an_integer_is_a_fixed_count_and_a_map_is_on_demand() {
        assert_eq!(parse("3").unwrap(), Repeats::fixed(3));
        let r = parse("{min: 3, max: 10, target_cv: 0.005}").unwrap();
        assert_eq!((r.min, r.max, r.target_cv), (3, 10, Some(0.005)));
        r.check().unwrap();
        for yaml in ["3", "{min: 3, max: 10, target_cv: 0.005}"] {
            let back = serde_yaml::to_string(&parse(yaml).unwrap()).unwrap();
            assert_eq!(parse(&back).unwrap(), parse(yaml).unwrap(), "{back}");
        }
        let err = parse("{min: 3, max: 10}").unwrap_err().to_string();
        assert!(err.contains("target_cv"), "{err}");
        let err = parse("{min: 3, max: 10, target_cv: 0.1, step: 2}")
            .unwrap_err()
            .to_string();
        assert!(err.contains("step"), "{err}");
        assert!(parse("-1").is_err() && parse("three").is_err());
    }

    #[test]
    fn bad_values_name_the_field_and_what_to_write() {
        let check = |min, max, t| {
            let r = Repeats {
                min,
                max,
                target_cv: Some(t),
            };
            r.check().map_err(|e| e.to_string())
        };
        let err = check(1, 10, 0.01).unwrap_err();
        assert!(err.contains("protocol.repeats.min is 1") && err.contains("min: 3"));
        let err = check(3, 2, 0.01).unwrap_err();
        assert!(err.contains("protocol.repeats.max is 2") && err.contains("at least 3"));
        for t in [0.0, 1.0, -0.1, f64::NAN] {
            assert!(check(3, 10, t).unwrap_err().contains("target_cv"));
        }
        assert!(check(2, 2, 0.5).is_ok());
        assert!(Repeats::fixed(0).check().is_err());
    }

    #[test]
    fn a_cell_gets_more_only_while_above_target_with_room() {
        let rule = Repeats {
            min: 3,
            max: 5,
            target_cv: Some(0.005),
        };
        let agree = [100.0, 100.1, 99.9];
        let spread = [100.0, 100.0, 98.6];
        assert!(!rule.wants_more(3, &agree), "CV 0.1 % is under target");
        assert!(rule.wants_more(3, &spread), "CV 0.81 % is above target");
        assert!(rule.wants_more(4, &spread));
        assert!(!rule.wants_more(5, &spread), "max reached");
        assert!(
            !rule.wants_more(2, &spread),
            "the planned processes come first"
        );
        assert!(!rule.wants_more(4, &[]), "nothing valid: nothing more");
        assert!(rule.wants_more(3, &[100.0]), "one valid value: no CV yet");
        assert!(!rule.wants_more(3, &[0.0, 0.0]), "zeros agree");
        assert!(!Repeats::fixed(3).wants_more(3, &spread), "a fixed count");
    }

    #[test]
    fn auto_turns_a_count_into_processes_on_demand() {
        let rule = RepeatsChoice::Auto.apply(Repeats::fixed(3), None);
        assert_eq!(
            (rule.min, rule.max, rule.target_cv),
            (3, AUTO_MAX, Some(AUTO_TARGET_CV))
        );
        let rule = RepeatsChoice::Auto.apply(Repeats::fixed(1), Some(0.02));
        assert_eq!((rule.min, rule.target_cv), (2, Some(0.02)));
        assert_eq!(RepeatsChoice::Auto.apply(Repeats::fixed(12), None).max, 12);
        let study = parse("{min: 4, max: 6, target_cv: 0.01}").unwrap();
        assert_eq!(RepeatsChoice::Auto.apply(study, None), study);
        assert_eq!(
            RepeatsChoice::Fixed(5).apply(study, None),
            Repeats::fixed(5)
        );
        assert_eq!(
            "auto".parse::<RepeatsChoice>().unwrap(),
            RepeatsChoice::Auto
        );
        assert_eq!(
            "4".parse::<RepeatsChoice>().unwrap(),
            RepeatsChoice::Fixed(4)
        );
        assert!("0".parse::<RepeatsChoice>().is_err());
        assert_eq!(rule.to_string(), "2 to 10");
        assert_eq!(
            rule.rule().unwrap(),
            "one more process at a time while a cell's CV is above 2.00 %, up to 10"
        );
        assert_eq!(Repeats::fixed(3).to_string(), "3");
    }
}
