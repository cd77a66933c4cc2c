//! A partial run (`run --only PROBE,… --scales N,…`): a smoke run of a slice of a study's matrix,
//! chosen by probe and scale. It is recorded in run.json, said in the report (the claims on cells it
//! did not run are `not measured`: [`NOT_IN`]), and never a reference run.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::study::Study;

/// Why a claim of a partial run is not measured when its cell was left out.
pub const NOT_IN: &str = "not in this partial run";

/// `run.json`'s `partial`: the probes and scales a partial run measured; empty: all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slice {
    /// The probes run (`--only`); empty: every probe.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<String>,
    /// The task counts run (`--scales`); empty: every scale.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scales: Vec<u64>,
}

impl Slice {
    /// The slice asked for, `None` when neither flag names anything.
    pub fn of(probes: Vec<String>, scales: Vec<u64>) -> Option<Slice> {
        (!probes.is_empty() || !scales.is_empty()).then_some(Slice { probes, scales })
    }

    /// Refuses a probe or scale the study does not have, naming the ones it has, and a slice with
    /// no cell (the probes named never run at the scales named).
    pub fn check(&self, study: &Study) -> Result<()> {
        let unknown: Vec<&str> = (self.probes.iter())
            .filter(|p| study.probe(p).is_none())
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let known: Vec<&str> = study.probes.iter().map(|p| p.id.as_str()).collect();
            bail!(
                "--only {}: no such probe in study {}; its probes are {}",
                unknown.join(","),
                study.id,
                known.join(", ")
            );
        }
        let scales = study.all_scales();
        let unknown: Vec<String> = (self.scales.iter())
            .filter(|n| !scales.contains(n))
            .map(u64::to_string)
            .collect();
        if !unknown.is_empty() {
            let known: Vec<String> = scales.iter().map(u64::to_string).collect();
            bail!(
                "--scales {}: study {} has no such scale; its scales are {}",
                unknown.join(","),
                study.id,
                known.join(", ")
            );
        }
        if crate::run::plan::matrix(&self.restrict(study.clone())).is_empty() {
            bail!(
                "{}: none of these probes runs at these scales in study {}; see each probe's \
                 scales with `parkbench plan`",
                self.flags(),
                study.id
            );
        }
        Ok(())
    }

    /// Whether the slice runs this probe at this scale (`None`: at any scale).
    pub fn covers(&self, probe: &str, tasks: Option<u64>) -> bool {
        let probe_in = self.probes.is_empty() || self.probes.iter().any(|p| p == probe);
        let scale_in = self.scales.is_empty() || tasks.is_some_and(|t| self.scales.contains(&t));
        probe_in && scale_in
    }

    /// The study restricted to the slice: each probe runs only its scales in it (none for a probe
    /// left out). The run order of what is left is the full matrix's.
    pub fn restrict(&self, mut study: Study) -> Study {
        let own: Vec<Vec<u64>> = (study.probes.iter())
            .map(|p| study.scales_of(p).to_vec())
            .collect();
        for (p, scales) in study.probes.iter_mut().zip(own) {
            let kept = scales
                .into_iter()
                .filter(|&t| self.covers(&p.id, Some(t)))
                .collect();
            p.scales = Some(kept);
        }
        study
    }

    /// The flags that chose the slice, as typed.
    pub fn flags(&self) -> String {
        let mut out = Vec::new();
        if !self.probes.is_empty() {
            out.push(format!("--only {}", self.probes.join(",")));
        }
        if !self.scales.is_empty() {
            let scales: Vec<String> = self.scales.iter().map(u64::to_string).collect();
            out.push(format!("--scales {}", scales.join(",")));
        }
        out.join(" ")
    }

    /// The deviation (and the report's partial note) of a partial run.
    pub fn deviation(&self, study: &Study) -> String {
        let all = crate::run::shard::cells(study).len();
        let mine = crate::run::shard::cells(&self.restrict(study.clone())).len();
        format!(
            "a partial run ({}): {mine} of the matrix's {all} probe × scale cells; claims on the \
             others are not measured, and it is never a reference run",
            self.flags()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::plan;

    fn slice(probes: &[&str], scales: &[u64]) -> Slice {
        Slice::of(
            probes.iter().map(|p| p.to_string()).collect(),
            scales.to_vec(),
        )
        .unwrap()
    }

    #[test]
    fn only_the_chosen_cells_are_planned() {
        let study = Study::default_study();
        let (probe, scale) = (study.probes[0].id.clone(), study.protocol.scales[0]);
        let s = slice(&[&probe], &[scale]);
        s.check(&study).unwrap();
        let cells = plan::matrix(&s.restrict(study.clone()));
        assert_eq!(cells.len() as u32, study.protocol.repeats.min);
        for c in &cells {
            assert_eq!(
                (study.probes[c.probe].id.as_str(), c.tasks),
                (&*probe, scale)
            );
        }
        // A probe alone keeps all its scales; a scale alone keeps all its probes.
        let by_probe = plan::matrix(&slice(&[&probe], &[]).restrict(study.clone()));
        assert!(by_probe.iter().all(|c| study.probes[c.probe].id == probe));
        let by_scale = plan::matrix(&slice(&[], &[scale]).restrict(study.clone()));
        assert!(by_scale.iter().all(|c| c.tasks == scale));
        assert!(by_scale.len() > cells.len());
        // And only the chosen probes' images are built.
        let images = crate::run::needs::images(&s.restrict(study.clone()));
        assert_eq!(images, vec![study.probes[0].image.clone()]);
    }

    #[test]
    fn a_name_or_scale_not_in_the_study_is_refused_naming_those_there_are() {
        let study = Study::default_study();
        let err = slice(&["cobol"], &[])
            .check(&study)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cobol"), "{err}");
        assert!(err.contains(&study.probes[0].id), "{err}");
        let err = slice(&[], &[7]).check(&study).unwrap_err().to_string();
        assert!(err.contains("--scales 7"), "{err}");
        assert!(err.contains(&study.protocol.scales[0].to_string()), "{err}");
        assert!(Slice::of(Vec::new(), Vec::new()).is_none());
    }

    #[test]
    fn the_deviation_names_the_flags_and_the_cells() {
        let study = Study::default_study();
        let s = slice(&[&study.probes[0].id], &[study.protocol.scales[0]]);
        let said = s.deviation(&study);
        assert!(said.starts_with("a partial run (--only "), "{said}");
        assert!(said.contains("1 of the matrix's"), "{said}");
        assert!(said.contains("never a reference"), "{said}");
    }
}
