//! The CPUs a run pins its probes to: the study's list, the host's first ones, or a list given.

use anyhow::{Context, Result, bail};

use super::cpuset;
use crate::text::count;

/// How to choose the CPUs the probes are pinned to.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuChoice {
    /// The study's list; refused when the host lacks any of its CPUs.
    Study,
    /// The first min(requested, available) CPUs of the host.
    Auto,
    /// An explicit list.
    List(String),
}

impl std::str::FromStr for CpuChoice {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        if s == "auto" {
            return Ok(Self::Auto);
        }
        cpuset::parse(s)
            .context("--cpus (or PARKBENCH_CPUS) takes `auto` or a CPU list such as 0-3 or 0,2")?;
        Ok(Self::List(s.to_string()))
    }
}

/// The CPUs a run pins its probes to, chosen once, and what the run records when they are not the
/// study's.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// The CPUs, one worker each.
    pub cpus: Vec<usize>,
    /// Said in run.json when they are not the study's list.
    pub deviations: Vec<String>,
}

/// Chooses the CPU list in force from the study's request, the host's CPUs and the user's choice.
pub fn choose_cpus(requested: &str, available: &[usize], choice: &CpuChoice) -> Result<Chosen> {
    let want = cpuset::parse(requested)?;
    let have = cpuset::format(available);
    let cpus = match choice {
        CpuChoice::Study => {
            if let Some(missing) = want.iter().find(|c| !available.contains(c)) {
                bail!(
                    "the study pins to CPUs {requested} but this host has CPUs {have} (CPU {missing} is missing); \
                     pass --cpus auto to use the first {} of them, or --cpus LIST",
                    want.len().min(available.len())
                );
            }
            want.clone()
        }
        CpuChoice::Auto => available.iter().copied().take(want.len()).collect(),
        CpuChoice::List(list) => {
            let cpus = cpuset::parse(list)?;
            if let Some(missing) = cpus.iter().find(|c| !available.contains(c)) {
                bail!(
                    "--cpus {list}: this host has CPUs {have}, not CPU {missing}; pass --cpus auto \
                     to use the first {} of them, or a list of this host's CPUs",
                    want.len().min(available.len())
                );
            }
            cpus
        }
    };
    let mut deviations = Vec::new();
    if cpus != want {
        deviations.push(format!(
            "pinned to CPUs {} ({}, {}) instead of the published {requested} ({})",
            cpuset::format(&cpus),
            count(cpus.len(), "CPU", "CPUs"),
            count(cpus.len(), "worker", "workers"),
            count(want.len(), "CPU", "CPUs")
        ));
    }
    Ok(Chosen { cpus, deviations })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_are_refused_auto_or_listed() {
        let err = choose_cpus("0-3", &[0, 1], &CpuChoice::Study)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--cpus auto"), "{err}");
        let auto = choose_cpus("0-3", &[0, 1], &CpuChoice::Auto).unwrap();
        assert_eq!(auto.cpus, vec![0, 1]);
        assert_eq!(auto.deviations.len(), 1);
        let study = choose_cpus("0-1", &[0, 1, 2], &CpuChoice::Study).unwrap();
        assert_eq!((study.cpus, study.deviations.len()), (vec![0, 1], 0));
        let err = choose_cpus("0-3", &[0, 1], &CpuChoice::List("0-3".into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not CPU 2") && err.contains("--cpus auto"),
            "{err}"
        );
    }
}
