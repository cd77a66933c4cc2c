//! The CPUs a run pins its probes to: the study's list, the host's first ones, or a list given.

use anyhow::{Context, Result, bail};

use super::cpuset;

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
        cpuset::parse(s).context("--cpus takes `auto` or a CPU list such as 0-3 or 0,2")?;
        Ok(Self::List(s.to_string()))
    }
}

/// Chooses the CPU list in force from the study's request, the host's CPUs and the user's choice.
pub fn choose_cpus(
    requested: &str,
    available: &[usize],
    choice: &CpuChoice,
) -> Result<(Vec<usize>, Vec<String>)> {
    let want = cpuset::parse(requested)?;
    let have = cpuset::format(available);
    let chosen = match choice {
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
    if chosen != want {
        deviations.push(format!(
            "pinned to CPUs {} ({} CPUs, {} workers) instead of the published {requested} ({} CPUs)",
            cpuset::format(&chosen),
            chosen.len(),
            chosen.len(),
            want.len()
        ));
    }
    Ok((chosen, deviations))
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
        let (cpus, dev) = choose_cpus("0-3", &[0, 1], &CpuChoice::Auto).unwrap();
        assert_eq!(cpus, vec![0, 1]);
        assert_eq!(dev.len(), 1);
        let (cpus, dev) = choose_cpus("0-1", &[0, 1, 2], &CpuChoice::Study).unwrap();
        assert_eq!((cpus, dev.len()), (vec![0, 1], 0));
        let err = choose_cpus("0-3", &[0, 1], &CpuChoice::List("0-3".into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not CPU 2") && err.contains("--cpus auto"),
            "{err}"
        );
    }
}
