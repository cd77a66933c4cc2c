//! Runs of one study joined into one (`parkbench merge`): the shards of a matrix (`run --shard`) or
//! independent reruns, each read as hostile input. Refused, with the reason, when the studies differ
//! (id or text), when the matrices differ (processes per cell, kernels), when a binary's sha256
//! differs between any two runs' manifests, when a run holds a sample that is not of its study or
//! its shard or of an image its manifest lacks, when a run is named twice or measured nothing. Every sample keeps its run id and carries the hardware class of the machine that measured
//! it; when the samples come from more than one class, each claim is judged per class, and per host when a class holds several ([`judge`]).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::images::Manifest;
use crate::run::env::Environment;
use crate::run::hardware;
use crate::run::run_dir::{RunFiles, RunState, Status};
use crate::run::shard::{self, Shard};
use crate::study::Study;
use crate::study::sample::{self, Sample};

/// One run to merge: what to call it in messages (its archive's file name) and its files.
pub struct Input {
    pub name: String,
    pub files: RunFiles,
}

/// The merged run, ready to be written into a new run folder.
pub struct Merged {
    /// The study file's text, the same in every run.
    pub study_yaml: String,
    /// Every run's samples, renumbered: per cell, repeats 1.. in the order the runs were given;
    /// positions 0.. in that order.
    pub samples: Vec<Sample>,
    /// `run.json` of the merged run.
    pub state: RunState,
    /// The first run's env.json (every run's hardware class is in `merge.json`).
    pub env_json: Option<String>,
    /// manifest.json: the union of every run's manifest (each binary is the same in every run
    /// that lists its image).
    pub manifest_json: String,
    /// `merge.json`.
    pub record: MergeRecord,
}

/// `merge.json`: what a merged run was made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeRecord {
    /// The full matrix's identity (sha256, hex, of the study file and its cell list).
    pub matrix: String,
    /// The runs merged, in the order given.
    pub runs: Vec<MergedRun>,
    /// The hardware classes of the samples, in order of first appearance.
    pub classes: Vec<String>,
    /// Shards named by no merged run, as `i/N`.
    pub missing_shards: Vec<String>,
    /// Cells (`probe@tasks`) with fewer processes than the study plans.
    pub missing_cells: Vec<String>,
}

/// One merged run in `merge.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedRun {
    /// The archive's file name or the run folder's name, as given.
    pub name: String,
    /// The run's id.
    pub run_id: String,
    /// Its shard, if it measured one.
    pub shard: Option<Shard>,
    /// `complete`, `incomplete` or `running`, from its run.json.
    pub status: Status,
    /// The hardware class of its machine, from its env.json.
    pub hardware: String,
    /// Samples it brought.
    pub samples: usize,
}

/// One input, parsed and checked on its own.
struct Parsed<'a> {
    input: &'a Input,
    study: Study,
    state: RunState,
    manifest: Manifest,
    hardware: String,
    samples: Vec<Sample>,
}

/// Joins `inputs` (at least one) into the run `run_id`.
pub fn merge(inputs: &[Input], run_id: &str) -> Result<Merged> {
    ensure!(!inputs.is_empty(), "nothing to merge: name the archives");
    // The runs of one study share its text, parsed once.
    let mut studies: BTreeMap<&str, Study> = BTreeMap::new();
    let parsed: Vec<Parsed> = (inputs.iter())
        .map(|i| parse(i, &mut studies))
        .collect::<Result<_>>()?;
    let first = &parsed[0];
    for other in parsed.iter().skip(1) {
        same_study(first, other)?;
    }
    checks::each_run_once(&parsed)?;
    for p in &parsed {
        checks::images_listed(p)?;
    }
    let manifest = checks::same_binaries(&parsed)?;
    let full = full_study(first)?;
    let matrix = shard::matrix_id(&first.input.files.study_yaml, &full);
    for p in &parsed {
        same_matrix(p, &full, &matrix)?;
        own_cells(p)?;
    }
    let samples = renumber(&parsed);
    let record = MergeRecord {
        matrix,
        runs: parsed.iter().map(merged_run).collect(),
        classes: classes(&samples),
        missing_shards: missing_shards(&parsed),
        missing_cells: missing_cells(&full, &samples),
    };
    let state = merged_state(&parsed, run_id, &record);
    Ok(Merged {
        study_yaml: first.input.files.study_yaml.clone(),
        samples,
        state,
        env_json: first.input.files.env_json.clone(),
        manifest_json: serde_json::to_string_pretty(&manifest)?,
        record,
    })
}

/// One input parsed and checked on its own; its study taken from `studies` when another input
/// had the same text.
fn parse<'a>(input: &'a Input, studies: &mut BTreeMap<&'a str, Study>) -> Result<Parsed<'a>> {
    let name = &input.name;
    let files = &input.files;
    let study = match studies.get(files.study_yaml.as_str()) {
        Some(study) => study.clone(),
        None => {
            let study = Study::parse(&files.study_yaml)
                .with_context(|| format!("{name}: its study.yaml"))?;
            studies.insert(&files.study_yaml, study.clone());
            study
        }
    };
    let state: RunState = serde_json::from_str(files.run_json.as_deref().with_context(|| {
        format!("{name} has no run.json: which slice of the matrix it measured is unknown; merge only runs made by `parkbench run` or `parkbench reproduce`, and archive the whole run folder again (`parkbench archive`) if its run.json was left out")
    })?)
    .with_context(|| format!("{name}: parsing its run.json"))?;
    if let Some(s) = &state.shard {
        s.shard()
            .with_context(|| format!("{name}: the run is inconsistent; do not merge it"))?;
    }
    let manifest: Manifest =
        serde_json::from_str(files.manifest_json.as_deref().with_context(|| {
            format!(
                "{name} has no manifest.json: its binaries cannot be compared with the other runs'"
            )
        })?)
        .with_context(|| format!("{name}: parsing its manifest.json"))?;
    let hardware = match &files.env_json {
        Some(json) => {
            let env: Environment = serde_json::from_str(json)
                .with_context(|| format!("{name}: parsing its env.json"))?;
            hardware::class(&env.host)
        }
        None => "unknown hardware (no env.json)".to_string(),
    };
    let (samples, bad) = sample::parse_lines(files.samples_jsonl.as_bytes())?;
    if let Some(b) = bad.first() {
        bail!(
            "{name}: samples.jsonl line {} is malformed ({}): merge only runs whose samples are whole",
            b.line,
            b.error
        );
    }
    let rule = &study.protocol.drop_batches;
    if let Some(why) = crate::study::kind::batches::foreign_rule(rule, &samples) {
        bail!("{name}: {why}");
    }
    Ok(Parsed {
        input,
        study,
        state,
        manifest,
        hardware,
        samples,
    })
}

/// Every sample of a run is of its study and of its shard's cells.
fn own_cells(p: &Parsed) -> Result<()> {
    let (name, study, state) = (&p.input.name, &p.study, &p.state);
    let in_force = state.in_force(study.clone())?;
    for s in &p.samples {
        ensure!(
            s.study == study.id && in_force.runs(&s.probe, s.tasks),
            "{name}: a sample of {}@{} (study {:?}) is not a cell of {}: the run is inconsistent; \
             do not merge it",
            s.probe,
            s.tasks,
            s.study,
            match &state.shard {
                Some(sh) => format!("its shard {}/{}", sh.index, sh.count),
                None => format!("study {}", study.id),
            }
        );
    }
    Ok(())
}

fn same_study(a: &Parsed, b: &Parsed) -> Result<()> {
    let (an, bn) = (&a.input.name, &b.input.name);
    ensure!(
        a.study.id == b.study.id,
        "{an} is a run of study {:?} and {bn} of study {:?}: merge only runs of one study",
        a.study.id,
        b.study.id
    );
    let sha = |p: &Parsed| hex::encode(Sha256::digest(p.input.files.study_yaml.as_bytes()));
    ensure!(
        sha(a) == sha(b),
        "{an} and {bn} ran different texts of study {:?} (study.yaml sha256 {} and {}): merge only \
         runs of the same study file",
        a.study.id,
        sha(a),
        sha(b)
    );
    Ok(())
}

/// The whole matrix a run was a part of: its study as it measured it, without its shard.
fn full_study(p: &Parsed) -> Result<Study> {
    let state = RunState {
        shard: None,
        ..p.state.clone()
    };
    state.in_force(p.study.clone())
}

/// A run measured the same matrix as the first (processes per cell, kernels), and its shard, if
/// any, says so too.
fn same_matrix(p: &Parsed, first: &Study, matrix: &str) -> Result<()> {
    let name = &p.input.name;
    let own_study = full_study(p)?;
    let own = shard::matrix_id(&p.input.files.study_yaml, &own_study);
    ensure!(
        own == matrix,
        "{name} measured another matrix of study {} ({} processes per cell, kernels {}; the first \
         run: {}, kernels {}): merge only runs of one matrix",
        first.id,
        own_study.protocol.repeats,
        own_study.protocol.kernels.join(","),
        first.protocol.repeats,
        first.protocol.kernels.join(",")
    );
    if let Some(s) = &p.state.shard {
        ensure!(
            s.matrix == matrix,
            "{name}: its run.json names matrix {} but its study and protocol make {matrix}: the \
             run is inconsistent; do not merge it",
            s.matrix
        );
    }
    Ok(())
}

/// Every run's samples in the order given, each with its machine's hardware class, repeats
/// renumbered per cell and positions in order.
fn renumber(parsed: &[Parsed]) -> Vec<Sample> {
    let mut next_repeat: BTreeMap<(String, u64), u32> = BTreeMap::new();
    let mut out = Vec::new();
    for p in parsed {
        let mut samples = p.samples.clone();
        samples.sort_by_key(|s| s.position);
        // Within one run, a cell's repeats keep their order; the next run's follow on.
        let mut base: BTreeMap<(String, u64), u32> = BTreeMap::new();
        for s in &samples {
            let key = (s.probe.clone(), s.tasks);
            let before = *next_repeat.get(&key).unwrap_or(&0);
            base.entry(key).or_insert(before);
        }
        for mut s in samples {
            let key = (s.probe.clone(), s.tasks);
            s.repeat += base[&key];
            let last = next_repeat.entry(key).or_default();
            *last = (*last).max(s.repeat);
            s.position = out.len() as u32;
            // A merged run's samples keep the class their own run recorded.
            s.hardware = Some(match &s.hardware {
                Some(own) => hardware::clean(own),
                None => p.hardware.clone(),
            });
            out.push(s);
        }
    }
    out
}

fn merged_run(p: &Parsed) -> MergedRun {
    MergedRun {
        name: p.input.name.clone(),
        run_id: p.state.run_id.clone(),
        shard: p.state.shard.as_ref().and_then(|s| s.shard().ok()),
        status: p.state.status,
        hardware: p.hardware.clone(),
        samples: p.samples.len(),
    }
}

/// Shards no run measured, when no run measured the whole matrix: for each shard count given.
fn missing_shards(parsed: &[Parsed]) -> Vec<String> {
    if parsed.iter().any(|p| p.state.shard.is_none()) {
        return Vec::new();
    }
    let mut by_count: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for s in parsed.iter().filter_map(|p| p.state.shard.as_ref()) {
        by_count.entry(s.count).or_default().insert(s.index);
    }
    let mut out = Vec::new();
    for (count, have) in by_count {
        out.extend(
            (1..=count)
                .filter(|i| !have.contains(i))
                .map(|i| format!("{i}/{count}")),
        );
    }
    out
}

/// Cells of the full matrix with fewer samples than the planned processes.
fn missing_cells(full: &Study, samples: &[Sample]) -> Vec<String> {
    let planned = full.protocol.repeats.min as usize;
    shard::cells(full)
        .into_iter()
        .filter(|(p, t)| {
            samples
                .iter()
                .filter(|s| s.probe == *p && s.tasks == *t)
                .count()
                < planned
        })
        .map(|(p, t)| format!("{p}@{t}"))
        .collect()
}

/// `run.json` of the merged run: the first run's setup, every run's deviations and warnings once,
/// and what the merge itself brings (its runs, a missing shard, more than one hardware class).
fn merged_state(parsed: &[Parsed], run_id: &str, record: &MergeRecord) -> RunState {
    let first = &parsed[0].state;
    let mut deviations: Vec<String> = Vec::new();
    let mut warnings = Vec::new();
    for p in parsed {
        let own = |d: &&String| p.state.shard.is_some() && d.starts_with(shard::DEVIATION_START);
        for d in p.state.deviations.iter().filter(|d| !own(d)) {
            if !deviations.contains(d) {
                deviations.push(d.clone());
            }
        }
        for w in &p.state.warnings {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
    }
    deviations.extend(merge_deviations(record));
    let complete = record.missing_cells.is_empty()
        && parsed.iter().all(|p| p.state.status == Status::Complete);
    RunState {
        run_id: run_id.to_string(),
        status: if complete {
            Status::Complete
        } else {
            Status::Incomplete
        },
        deviations,
        warnings,
        started_at: parsed
            .iter()
            .map(|p| p.state.started_at.clone())
            .min()
            .unwrap_or_default(),
        finished_at: parsed
            .iter()
            .filter_map(|p| p.state.finished_at.clone())
            .max(),
        wall_ms: parsed.iter().map(|p| p.state.wall_ms).sum(),
        rerun_of: None,
        shard: None,
        ..first.clone()
    }
}

/// What the merge says about itself in the report's deviations.
pub fn merge_deviations(record: &MergeRecord) -> Vec<String> {
    let mut out = Vec::new();
    let shards: Vec<String> = record
        .runs
        .iter()
        .map(|r| match r.shard {
            Some(s) => format!("{} (shard {s})", r.run_id),
            None => r.run_id.clone(),
        })
        .collect();
    out.push(format!(
        "merged from {}: {}",
        crate::text::count(shards.len(), "run", "runs"),
        shards.join(", ")
    ));
    if !record.missing_shards.is_empty() {
        let have: Vec<String> = record
            .runs
            .iter()
            .filter_map(|r| r.shard)
            .map(|s| s.to_string())
            .collect();
        out.push(format!(
            "incomplete: merged shards {} — shard {} missing; merge it in with `parkbench merge` \
             to judge the whole matrix",
            have.join(", "),
            record.missing_shards.join(", ")
        ));
    }
    if !record.missing_cells.is_empty() {
        out.push(format!(
            "incomplete: {} cells have fewer processes than planned: {}",
            record.missing_cells.len(),
            record.missing_cells.join(", ")
        ));
    }
    for r in record.runs.iter().filter(|r| r.status != Status::Complete) {
        out.push(format!(
            "incomplete: run {} ({}) is {}",
            r.run_id, r.name, r.status
        ));
    }
    if record.classes.len() > 1 {
        out.push(format!(
            "samples from {} hardware classes: each claim is judged per class (classes.md, and \
             this report before its pooled verdicts); the report's headline verdicts pool them",
            record.classes.len()
        ));
    }
    out
}

/// A merged run as the report's environment names it, with its machine's hardware class.
pub fn run_label(r: &MergedRun) -> (String, String) {
    let shard = r.shard.map(|s| format!(", shard {s}")).unwrap_or_default();
    (
        format!("{} (run {}{shard})", r.name, r.run_id),
        r.hardware.clone(),
    )
}

mod checks;
pub mod classes;
pub use classes::{
    ClassRun, ClassVerdicts, HostVerdicts, Judged, classes, judge, label, lines, needed, split,
    summaries,
};
#[cfg(test)]
pub(crate) mod tests;
