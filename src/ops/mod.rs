//! What the commands do, each a pipeline that reads top to bottom: build, run and reproduce a
//! study, report, archive, check, verify and compare runs, rerun an archive, merge runs of one study, export a scheduler's job, explain a claim,
//! benchmark the kit. A command ends with an [`Ending`], which `cli` maps to an exit code.
//!
//! May import every stage below: `outputs`, `run`, `images`, `engine`, `study`, `stats`.

pub mod archive;
pub mod bench;
pub mod clean;
pub mod compare;
pub mod doctor;
pub mod driver;
pub mod explain;
pub mod export;
pub mod fleet;
pub mod hand_over;
pub mod interrupt;
pub mod launch;
pub mod merge;
pub mod new;
pub mod next_step;
pub mod pin;
pub mod plan;
pub mod prepare;
pub mod report;
pub mod reproduce;
pub mod rerun;
pub mod run;
pub mod sign;
pub mod verify;

use std::path::PathBuf;

use crate::run::lifecycle::RunResult;

pub use interrupt::Interrupt;
pub use prepare::{Prepared, prepare};

/// Where the repository and the results are.
pub struct Paths {
    pub repo: PathBuf,
    pub results: PathBuf,
}

/// How a command ended (an `Err` is the kit failing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The kit worked (claims may still differ: that is a finding).
    Ok,
    /// A check of the machine failed (`doctor`).
    NotReady,
    /// The run finished with invalid samples, or a probe's image failed to build (its probe went
    /// unmeasured; an unavailable toolchain is this machine's limit and ends `Ok`).
    ProbesFailed,
    /// `--strict` and a claim was not reproduced.
    ClaimsDiffer,
    /// `compare --fail-above` and a cell's B ÷ A moved past the threshold.
    RunsDiffer,
    /// Ctrl-C: the running container was removed, the run is kept.
    Interrupted,
    /// A host of a run across hosts stopped answering: its cells are lost, the other hosts'
    /// samples kept, and `run --resume` finishes the run (on that host back, or another of its
    /// class). Told apart from [`Ending::Interrupted`] so that a script knows to resume.
    HostsLost,
}

/// The run's failed processes that no claim expects, and those an `outcome` claim expects to fail
/// as they did (data, not a fault). Without a readable sample log, every failure is unexpected.
fn failures(result: &RunResult) -> (usize, usize) {
    if result.invalid == 0 {
        return (0, 0);
    }
    let Ok((samples, _)) = result.dir.samples() else {
        return (result.invalid, 0);
    };
    let failed: Vec<_> = (samples.iter())
        .filter(|s| !s.valid && !s.is_unavailable())
        .collect();
    let expected = (failed.iter())
        .filter(|s| crate::study::claim::failure_expected(&result.study.claims, s))
        .count();
    (failed.len() - expected, expected)
}

impl Ending {
    /// How a run ended, saying what to do about it.
    pub fn of_run(result: &RunResult) -> Ending {
        // Ctrl-C wins: the user stopped the run, whatever the hosts did.
        if !result.interrupted && !result.lost_hosts.is_empty() {
            eprintln!(
                "run incomplete: host(s) {} lost; resume it as said above",
                result.lost_hosts.join(", ")
            );
            Ending::HostsLost
        } else if result.interrupted {
            eprintln!(
                "run incomplete; resume with: {}",
                crate::run::run_dir::resume_command(result.dir.path(), &result.state)
            );
            Ending::Interrupted
        } else {
            let mut ending = Ending::Ok;
            let (unexpected, expected) = failures(result);
            if expected > 0 {
                eprintln!("{expected} process(es) failed as a claim expects: judged, not a fault");
            }
            if unexpected > 0 {
                eprintln!("{unexpected} invalid sample(s): see samples.jsonl");
                ending = Ending::ProbesFailed;
            }
            if !result.build_failed.is_empty() {
                eprintln!(
                    "image(s) failed to build, their probes not measured: {} (see the build's \
                     FAILED table)",
                    result.build_failed.join(", ")
                );
                ending = Ending::ProbesFailed;
            }
            ending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::lifecycle::new_state;
    use crate::run::run_dir::{RunDir, SAMPLES};
    use crate::study::Study;
    use crate::study::sample::{SampleLog, fixture};

    /// A finished run of `study` with the fixture's samples (Go at 1M repeat 2 OOM-killed).
    fn finished(study: Study, dir: &std::path::Path) -> RunResult {
        let run = RunDir::create_in(dir).unwrap();
        let samples = fixture::samples();
        let mut log = SampleLog::open(&run.file(SAMPLES)).unwrap();
        for s in &samples {
            log.append(s).unwrap();
        }
        RunResult {
            state: new_state(&run.id(), &study, &[], Vec::new()),
            dir: run,
            invalid: samples.iter().filter(|s| !s.valid).count(),
            study,
            measured: samples.len(),
            build_failed: Vec::new(),
            interrupted: false,
            lost_hosts: Vec::new(),
            wall_ms: 0.0,
            probe_ms: 0.0,
        }
    }

    #[test]
    fn a_failure_a_claim_expects_ends_the_run_ok_and_any_other_with_probes_failed() {
        let dir = tempfile::tempdir().unwrap();
        let plain = Study::default_study();
        let run = finished(plain.clone(), dir.path());
        assert!(run.invalid > 0, "the fixture has a failed process");
        assert_eq!(Ending::of_run(&run), Ending::ProbesFailed);
        assert_eq!(crate::cli::code(Ending::of_run(&run)), 3);
        let claim = |rest: &str| {
            serde_yaml::from_str::<crate::study::Claim>(&format!(
                "{{id: oom, text: t, stat: outcome, probe: go, tasks: 1000000, unit: count, {rest}}}"
            ))
            .unwrap()
        };
        let mut expecting = plain.clone();
        expecting.claims.push(claim("expected: killed"));
        let run = finished(expecting, dir.path());
        assert_eq!(Ending::of_run(&run), Ending::Ok);
        assert_eq!(crate::cli::code(Ending::of_run(&run)), 0);
        // A claim expecting other words, or another scale, does not excuse the failure.
        let mut other = plain.clone();
        other
            .claims
            .push(claim("expected: fails, pattern: SystemLimitError"));
        assert_eq!(
            Ending::of_run(&finished(other, dir.path())),
            Ending::ProbesFailed
        );
        let mut other = plain;
        let mut c = claim("expected: fails");
        c.tasks = Some(100_000);
        other.claims.push(c);
        assert_eq!(
            Ending::of_run(&finished(other, dir.path())),
            Ending::ProbesFailed
        );
    }
}
