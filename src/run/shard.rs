//! One shard of a study's matrix (`run --shard i/N`), for the batch schedulers a site already runs
//! (a Slurm array, a CI matrix, a Kubernetes Indexed Job). The slice is a function of the study's
//! matrix alone, so every machine deals the same cells: the matrix's probe × scale cells in run
//! order, dealt round-robin — cell k goes to shard (k mod N) + 1. A cell's processes (its repeats,
//! and any a rule adds on demand) stay together in one shard.

use std::str::FromStr;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::run::plan;
use crate::study::Study;

/// `i/N`: shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, 1..=count.
    pub index: u32,
    /// How many shards the matrix is dealt into.
    pub count: u32,
}

impl FromStr for Shard {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Shard> {
        let what = "write it as i/N: shard i (1 to N) of N, e.g. --shard 1/4";
        let Some((i, n)) = s.split_once('/') else {
            bail!("shard {s:?} is not i/N; {what}");
        };
        let (Ok(index), Ok(count)) = (i.trim().parse::<u32>(), n.trim().parse::<u32>()) else {
            bail!("shard {s:?}: i and N must be whole numbers; {what}");
        };
        if count == 0 {
            bail!("shard {s:?}: a matrix cannot be dealt into 0 shards; {what}");
        }
        if index == 0 || index > count {
            bail!(
                "shard {s:?}: there is no shard {index} of {count} (shards are numbered 1 to {count}); {what}"
            );
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `run.json`'s `shard`: which slice of which matrix a run measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// This shard, 1-based.
    pub index: u32,
    /// How many shards the matrix was dealt into.
    pub count: u32,
    /// The full matrix's identity ([`matrix_id`]): sha256, hex, of the study file and its cell list.
    pub matrix: String,
}

impl ShardRecord {
    /// The shard, checked: a run.json read from an archive may name shard 0, or 3 of 2.
    pub fn shard(&self) -> Result<Shard> {
        format!("{}/{}", self.index, self.count)
            .parse()
            .map_err(|e: anyhow::Error| e.context("run.json's shard"))
    }
}

/// The matrix's probe × scale cells, `(probe id, tasks)`, in run order (each once).
pub fn cells(study: &Study) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for c in plan::matrix(study) {
        let cell = (study.probes[c.probe].id.clone(), c.tasks);
        if !out.contains(&cell) {
            out.push(cell);
        }
    }
    out
}

/// The cells of `shard`: every `count`-th cell of [`cells`], starting at cell `index − 1`.
pub fn cells_of(study: &Study, shard: Shard) -> Vec<(String, u64)> {
    cells(study)
        .into_iter()
        .enumerate()
        .filter(|(k, _)| *k as u32 % shard.count == shard.index - 1)
        .map(|(_, c)| c)
        .collect()
}

/// The identity of a study's full matrix: sha256 of the study file's text, then of each cell as
/// `probe@tasks×processes` on its own line. Shards of one study and one matrix share it.
pub fn matrix_id(study_text: &str, study: &Study) -> String {
    let mut h = Sha256::new();
    h.update(Sha256::digest(study_text.as_bytes()));
    let repeats = study.protocol.repeats;
    for (probe, tasks) in cells(study) {
        h.update(format!("{probe}@{tasks}×{repeats}\n").as_bytes());
    }
    hex::encode(h.finalize())
}

/// The deviation a shard's run reports: which slice of the matrix it measured.
pub fn deviation(study: &Study, shard: Shard) -> String {
    format!(
        "{DEVIATION_START}{shard} of the matrix: {} of its {} probe × scale cells; claims on the \
         other shards' cells are not measured here (join the shards with `parkbench merge`)",
        cells_of(study, shard).len(),
        cells(study).len()
    )
}

/// How a shard's deviation starts (`merge` leaves it out of the merged run's).
pub const DEVIATION_START: &str = "shard ";

/// The study restricted to `shard`'s cells: each probe runs only its scales in the shard (none for
/// a probe with no cell there). The run order of what is left is the full matrix's.
pub fn restrict(mut study: Study, shard: Shard) -> Study {
    let mine = cells_of(&study, shard);
    for p in &mut study.probes {
        let scales: Vec<u64> = mine
            .iter()
            .filter(|(id, _)| *id == p.id)
            .map(|(_, t)| *t)
            .collect();
        p.scales = Some(scales);
    }
    study
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cell_is_in_exactly_one_shard() {
        let mut study = Study::default_study();
        study.probes[1].scales = Some(vec![1, 10_000]);
        let all = cells(&study);
        assert_eq!(all.len(), 4 + 2);
        for count in 1..=5 {
            let mut seen: Vec<(String, u64)> = Vec::new();
            for index in 1..=count {
                let shard = Shard { index, count };
                let mine = cells_of(&study, shard);
                let planned: Vec<_> = plan::matrix(&restrict(study.clone(), shard))
                    .iter()
                    .map(|c| (study.probes[c.probe].id.clone(), c.tasks))
                    .collect();
                for c in &mine {
                    let n = study.protocol.repeats.min as usize;
                    assert_eq!(
                        planned.iter().filter(|p| *p == c).count(),
                        n,
                        "{shard}: all {n} processes of {c:?} stay together"
                    );
                }
                assert!(planned.iter().all(|p| mine.contains(p)), "{shard}");
                seen.extend(mine);
            }
            seen.sort();
            let mut want = all.clone();
            want.sort();
            assert_eq!(seen, want, "N = {count}: each cell once");
        }
    }

    #[test]
    fn the_slice_depends_on_the_matrix_alone() {
        let study = Study::default_study();
        let shard = Shard { index: 2, count: 3 };
        assert_eq!(
            cells_of(&study, shard),
            cells_of(&Study::default_study(), shard)
        );
        let text = crate::study::DEFAULT_STUDY;
        let id = matrix_id(text, &study);
        assert_eq!(id, matrix_id(text, &Study::default_study()));
        assert_eq!(id.len(), 64);
        let other = text.replacen("  repeats: 3\n", "  repeats: 4\n", 1);
        let other_study = Study::parse(&other).unwrap();
        assert_ne!(id, matrix_id(&other, &other_study));
    }

    #[test]
    fn a_recorded_shard_that_cannot_be_is_an_error_not_a_panic() {
        for (index, count) in [(0, 2), (3, 2), (1, 0)] {
            let record = ShardRecord {
                index,
                count,
                matrix: String::new(),
            };
            assert!(record.shard().is_err(), "{index}/{count}");
        }
    }

    #[test]
    fn bad_shard_specs_are_clear_errors() {
        assert_eq!(
            "2/3".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 3 }
        );
        for (spec, says) in [
            ("3/2", "no shard 3 of 2"),
            ("0/2", "no shard 0 of 2"),
            ("1/0", "0 shards"),
            ("a/b", "whole numbers"),
            ("1", "not i/N"),
            ("-1/2", "whole numbers"),
        ] {
            let err = format!("{:#}", spec.parse::<Shard>().unwrap_err());
            assert!(err.contains(says) && err.contains("i/N"), "{spec}: {err}");
        }
    }
}
