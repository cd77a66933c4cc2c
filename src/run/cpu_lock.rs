//! One run per CPU: a run holds an exclusive lock on each CPU it pins to, for as long as it measures,
//! so that a second run whose CPUs overlap is refused (naming the run that holds them) instead of
//! measuring beside it. The locks are `flock`s on one file per CPU in a folder of this machine
//! ([`folder`]): the kernel drops them when the process ends, however it ends, so a crashed run never
//! leaves a stale lock. Each file holds the holder's description, for the refusal's message.
//!
//! A run given `--wait-for-cpus` waits for CPUs another run holds instead, taking them when that run
//! ends; runs take their CPUs in ascending order, so that runs waiting for each other never wait in a
//! circle.
//!
//! The lock covers runs of this machine's Engine started from this machine. `--allow-shared-cpus`
//! skips it; the run then records a validity warning that every sample may share its CPUs.

use std::path::Path;

use anyhow::{Result, bail};

use crate::files::lock::{self, Held, Tried};
use crate::run::warning::{Touches, Warning};
use crate::study::cpuset;

pub use crate::files::lock::folder;

/// The locks a run holds on its CPUs; dropped (and so released) when the run ends.
#[derive(Debug)]
pub struct CpuLock {
    held: Vec<Held>,
}

/// A CPU another process holds.
#[derive(Debug)]
pub struct Busy {
    /// The CPU.
    pub cpu: usize,
    /// Who holds it, as its lock file says.
    pub by: String,
}

impl CpuLock {
    /// Takes an exclusive lock on each of `cpus` in `dir`, recording `holder` (e.g. `run
    /// 20261204T1200Z of study wait-1m, pid 4242`) in each file. Refuses, taking none, when another
    /// process holds any of them, naming it.
    pub fn acquire(dir: &Path, cpus: &[usize], holder: &str) -> Result<CpuLock> {
        match CpuLock::try_acquire(dir, cpus, holder)? {
            Ok(lock) => Ok(lock),
            Err(Busy { cpu, by }) => bail!(
                "CPU {cpu} is in use by {by}: two runs on the same CPUs would measure each other. \
                 Wait for it to end (--wait-for-cpus waits for you), choose other CPUs with --cpus \
                 (this run wants {}), or pass --allow-shared-cpus to measure beside it anyway \
                 (recorded as a validity warning on every sample)",
                cpuset::format(cpus)
            ),
        }
    }

    /// One try at every lock of `cpus`, in ascending order (so that runs waiting for each other's
    /// CPUs never wait in a circle): all of them, or none and the first CPU found busy.
    pub fn try_acquire(
        dir: &Path,
        cpus: &[usize],
        holder: &str,
    ) -> Result<std::result::Result<CpuLock, Busy>> {
        let mut ordered = cpus.to_vec();
        ordered.sort_unstable();
        ordered.dedup();
        let mut held = Vec::with_capacity(ordered.len());
        for cpu in ordered {
            match lock::try_take(dir, &format!("cpu{cpu}.lock"), holder)? {
                Tried::Held(h) => held.push(h),
                Tried::Taken(by) => return Ok(Err(Busy { cpu, by })),
            }
        }
        Ok(Ok(CpuLock { held }))
    }

    /// The locks of `cpus`, waited for while other processes hold some of them: each CPU found
    /// busy is said once per holder; `None` when `cancelled` completes first (nothing held).
    pub async fn wait(
        dir: &Path,
        cpus: &[usize],
        holder: &str,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Option<CpuLock>> {
        let attempt = || {
            Ok((CpuLock::try_acquire(dir, cpus, holder)?)
                .map_err(|Busy { cpu, by }| format!("CPU {cpu} is in use by {by}")))
        };
        let said = |busy: &str| eprintln!("{busy}: waiting for it (--wait-for-cpus)");
        lock::wait(attempt, said, cancelled).await
    }

    /// How many CPUs are held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether no CPU is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

/// The locks of `cpus` for a run of study `study`, taken before the run is made or opened (its
/// environment record runs a container on them): none when `shared` (`--allow-shared-cpus`);
/// waited for when `wait` (until the command is stopped: nothing is made yet), else refused when
/// another run holds one, naming it.
pub async fn take_for_run(
    cpus: &[usize],
    study: &str,
    (shared, wait): (bool, bool),
) -> Result<Option<CpuLock>> {
    let holder = format!("a run of study {study} (pid {})", std::process::id());
    let dir = folder();
    match (shared, wait) {
        (true, _) => Ok(None),
        (false, true) => CpuLock::wait(&dir, cpus, &holder, std::future::pending()).await,
        (false, false) => CpuLock::acquire(&dir, cpus, &holder).map(Some),
    }
}

/// [`take_for_run`]'s refusal, given now and holding nothing after: a run that would be refused its
/// CPUs is refused before its images build (minutes on a fresh machine), not after. A run that
/// waits for its CPUs or shares them is not refused. The locks are held for the moment of the try,
/// under a description of their own.
pub fn refuse_if_taken(cpus: &[usize], study: &str, (shared, wait): (bool, bool)) -> Result<()> {
    if shared || wait {
        return Ok(());
    }
    let checking = format!(
        "a run of study {study} checking its CPUs before it builds (pid {})",
        std::process::id()
    );
    CpuLock::acquire(&folder(), cpus, &checking).map(drop)
}

/// The validity warning of a run that measured with `--allow-shared-cpus`.
pub fn shared_warning(cpus: &str) -> Warning {
    let (cpus, them) = match cpus.contains([',', '-']) {
        true => (format!("CPUs {cpus}"), "them"),
        false => (format!("CPU {cpus}"), "it"),
    };
    Warning {
        what: format!(
            "{cpus} not locked (--allow-shared-cpus): another run may have measured on {them} \
             at the same time as every sample of this run"
        ),
        touches: Touches::All,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_warning_says_one_cpu_or_several() {
        assert!(shared_warning("0").what.starts_with(
            "CPU 0 not locked (--allow-shared-cpus): \
             another run may have measured on it at"
        ));
        assert!(
            shared_warning("0-1")
                .what
                .starts_with("CPUs 0-1 not locked")
        );
        assert!(shared_warning("0,2").what.contains("measured on them at"));
    }

    #[test]
    fn overlapping_cpus_are_refused_naming_the_holder_and_free_again_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let first = CpuLock::acquire(dir.path(), &[0, 1], "run A of study s, pid 1").unwrap();
        assert_eq!(first.len(), 2);
        let e = format!(
            "{:#}",
            CpuLock::acquire(dir.path(), &[1, 2], "run B").unwrap_err()
        );
        assert!(
            e.contains("CPU 1 is in use by run A of study s, pid 1"),
            "{e}"
        );
        assert!(e.contains("--allow-shared-cpus"), "{e}");
        // Disjoint CPUs are fine.
        let other = CpuLock::acquire(dir.path(), &[2, 3], "run C").unwrap();
        drop(first);
        let again = CpuLock::acquire(dir.path(), &[0, 1], "run D").unwrap();
        assert_eq!(again.len(), 2);
        drop(other);
    }

    #[test]
    fn a_refused_run_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let held = CpuLock::acquire(dir.path(), &[1], "run A").unwrap();
        assert!(CpuLock::acquire(dir.path(), &[0, 1], "run B").is_err());
        // CPU 0, taken before the refusal at CPU 1, was released with it.
        let zero = CpuLock::acquire(dir.path(), &[0], "run C").unwrap();
        assert!(!zero.is_empty());
        drop(held);
    }
}
