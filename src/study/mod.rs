//! The study: what to measure, how, and what the article claimed. Read from `results/<id>/study.yaml`;
//! the default study (article 000) is embedded in the binary.
//!
//! The file format, one file per part: [`protocol`] (the source and how processes are measured),
//! [`probe`] (the programs), [`placeholders`] (the words their arguments hold), [`claim`] and
//! [`unit`](mod@unit) (what the article claimed), [`factor`] (what `explain` sweeps), [`repeats`], [`kind`].
//! `validate` checks a study once read, naming the node at fault; [`kernel`] names the kernels and
//! [`layout`] lays a study out per kernel. The sample record ([`sample`]) lives here too: every stage
//! above reads it.
//!
//! May import: `files`, `stats`, `yaml`, `text` (floor 1: nothing else of parkbench).

use std::path::{Path, PathBuf};

pub mod bounded;
pub mod claim;
pub mod cpus;
pub mod cpuset;
pub mod factor;
pub mod kernel;
pub mod kind;
pub mod layout;
pub mod placeholders;
pub mod probe;
pub mod protocol;
pub mod repeats;
pub mod sample;
pub mod stat;
pub mod unit;
mod validate;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

pub use crate::study::claim::{Bound, Claim, Expected, Than, Tolerance};
pub use crate::study::kind::Kind;
pub use crate::study::placeholders::{PLACEHOLDERS, Placeholders};
pub use crate::study::probe::{DEFAULT_PROGRAM, Probe, THP_MODES, check_thp_mode};
pub use crate::study::protocol::{Isolation, Order, Protocol, Source};
pub use crate::study::repeats::Repeats;
pub use crate::study::stat::Stat;
pub use crate::study::unit::{Dimension, Unit};
pub use crate::study::validate::valid_id;

/// A study's file name in its folder (`results/<id>/study.yaml`).
pub const FILE: &str = "study.yaml";

/// The study files in `folder`'s subfolders (`<folder>/<id>/study.yaml`), sorted by folder name.
pub fn files_in(folder: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(folder)
        .with_context(|| format!("listing studies in {}", folder.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| {
            format!(
                "listing studies in {}: an entry cannot be read; check the folder's permissions",
                folder.display()
            )
        })?;
        let file = entry.path().join(FILE);
        if file.is_file() {
            files.push(file);
        }
    }
    files.sort();
    Ok(files)
}

/// What to say of a study file `path` that does not exist: the study file beside it (`study.yml`
/// for `study.yaml`), else the nearest study there is, by its id, and the studies in the folder it
/// would be in (or in `results/`).
fn studies_near(path: &Path) -> String {
    let parent = path.parent();
    // `results/<id>/study.yml` and the like: the study file beside it.
    let beside = parent.map(|p| p.join(FILE)).filter(|f| f.is_file());
    if let Some(file) = beside.filter(|_| path.file_name().is_some_and(|n| n != FILE)) {
        return format!("did you mean {}?", file.display());
    }
    let folders = [parent.and_then(Path::parent), parent]
        .into_iter()
        .flatten()
        .map(|f| {
            if f.as_os_str().is_empty() {
                Path::new(".")
            } else {
                f
            }
        })
        .chain([Path::new("results")]);
    let Some((folder, files)) = folders
        .filter_map(|f| files_in(f).ok().map(|files| (f, files)))
        .find(|(_, files)| !files.is_empty())
    else {
        return "name one, such as results/<id>/study.yaml".to_string();
    };
    // The study's id as given: its folder's name (`results/<id>/study.yaml`, or `study.yml`), else
    // the file's stem.
    let given = match path.file_stem() {
        Some(stem) if stem == "study" => path.parent().and_then(Path::file_name),
        stem => stem,
    }
    .map(|n| n.to_string_lossy().into_owned())
    .unwrap_or_default();
    let id = |f: &PathBuf| {
        (f.parent().and_then(Path::file_name)).map(|n| n.to_string_lossy().into_owned())
    };
    let distance =
        |f: &PathBuf| id(f).map_or(usize::MAX, |id| strsim::damerau_levenshtein(&given, &id));
    let ids: Vec<String> = files.iter().filter_map(id).collect();
    let listed = format!(
        "the studies in {} ({}/<id>/{FILE}): {}",
        folder.display(),
        folder.display(),
        ids.join(", ")
    );
    match files.iter().min_by_key(|f| distance(f)) {
        Some(near) if distance(near) <= given.chars().count() / 3 + 1 => {
            format!("did you mean {}? ({listed})", near.display())
        }
        _ => format!("name one of {listed}"),
    }
}

/// [`Study::load`]'s error for a study file that does not exist: its path as given, and what is
/// near it ([`studies_near`]).
#[derive(Debug)]
pub struct NoStudyFile {
    pub path: PathBuf,
    near: String,
}

impl std::fmt::Display for NoStudyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "there is no study file {}: {}",
            self.path.display(),
            self.near
        )
    }
}

impl std::error::Error for NoStudyFile {}

/// The default study, article 000: 1M tasks waiting, Rust/Tokio vs Go.
pub const DEFAULT_STUDY: &str = include_str!("../../results/wait-1m/study.yaml");

/// A study file. Unknown fields are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    /// Short identifier; also the folder name under `results/`.
    pub id: String,
    /// One-line title.
    pub title: String,
    /// Where the study comes from and the environment it was published with.
    pub source: Source,
    /// How every process is measured.
    pub protocol: Protocol,
    /// The programs measured, each a probe image built by `parkbench build`.
    pub probes: Vec<Probe>,
    /// The published claims to judge; default none (a report without verdicts).
    #[serde(default)]
    pub claims: Vec<Claim>,
    /// Alternatives `parkbench explain` can sweep, one factor at a time (see `factor`); default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub factors: Vec<crate::study::factor::Factor>,
    /// Set once [`Study::under_kernels`] has laid the study out per kernel (it is applied once).
    #[serde(skip)]
    pub per_kernel: bool,
}

impl Study {
    /// Reads and validates a study file; an error leads with `file:line:column` of the node at fault.
    pub fn load(path: &Path) -> Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(NoStudyFile {
                    path: path.to_owned(),
                    near: studies_near(path),
                }
                .into());
            }
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => bail!(
                "{} is a folder: name the study file in it, such as {}",
                path.display(),
                path.join("study.yaml").display()
            ),
            read => read.with_context(|| format!("reading study {}", path.display()))?,
        };
        Self::parse_named(&path.display().to_string(), &text)
    }

    /// The embedded default study.
    pub fn default_study() -> Self {
        Self::parse(DEFAULT_STUDY).expect("the embedded default study is valid")
    }

    /// Parses and validates study YAML; errors name it `study.yaml` (see [`Study::parse_named`]).
    pub fn parse(text: &str) -> Result<Self> {
        Self::parse_named("study.yaml", text)
    }

    /// Parses and validates study YAML read from `name`: every error (of syntax, of a field, of a
    /// check) leads with `name:line:column` of the node it is about.
    pub fn parse_named(name: &str, text: &str) -> Result<Self> {
        crate::yaml::Doc::new(name, text).parse(|study: &mut Study| {
            study.take_single_scales();
            study.validate()
        })
    }

    /// The kernels the probes run under, in study order (`host` for the host's).
    pub fn kernels(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in &self.probes {
            let k = p.kernel.as_deref().unwrap_or(crate::study::kernel::HOST);
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }

    /// The task counts a probe runs: its own `scales`, or `protocol.scales`.
    pub fn scales_of<'a>(&'a self, probe: &'a Probe) -> &'a [u64] {
        probe.scales.as_deref().unwrap_or(&self.protocol.scales)
    }

    /// Whether the probe with this identifier runs at this scale.
    pub fn runs(&self, probe: &str, tasks: u64) -> bool {
        self.probe(probe)
            .is_some_and(|p| self.scales_of(p).contains(&tasks))
    }

    /// Every scale some probe runs: `protocol.scales` in their order, then the probes' own
    /// scales that are not among them, smallest first.
    pub fn all_scales(&self) -> Vec<u64> {
        let mut out = self.protocol.scales.clone();
        let mut extra: Vec<u64> = self
            .probes
            .iter()
            .flat_map(|p| self.scales_of(p).iter().copied())
            .filter(|n| !out.contains(n))
            .collect();
        extra.sort_unstable();
        extra.dedup();
        out.extend(extra);
        out
    }

    /// A claim about a probe that runs exactly one scale may omit `tasks`: that scale is taken
    /// (except for `metric_median`, whose omitted `tasks` means every scale).
    fn take_single_scales(&mut self) {
        let mut filled = Vec::new();
        for (i, c) in self.claims.iter().enumerate() {
            let skip = matches!(c.stat, Stat::Order | Stat::MetricMedian);
            if c.tasks.is_some() || skip {
                continue;
            }
            if let Some(p) = self.probe(&c.probe)
                && let [only] = self.scales_of(p)
            {
                filled.push((i, *only));
            }
        }
        for (i, n) in filled {
            self.claims[i].tasks = Some(n);
        }
    }

    /// The probe with this identifier.
    pub fn probe(&self, id: &str) -> Option<&Probe> {
        self.probes.iter().find(|p| p.id == id)
    }

    /// The kind of a probe named by a claim, or an error naming the unknown probe.
    fn kind_of(&self, id: &str) -> Result<Kind> {
        match self.probe(id) {
            Some(p) => Ok(p.kind),
            None => {
                let known: Vec<&str> = self.probes.iter().map(|p| p.id.as_str()).collect();
                bail!("unknown probe {id:?} (probes: {})", known.join(", "))
            }
        }
    }

    /// The probes a `ratio` or `lower_by_percent` claim compares against (`lowest`/`highest`: every
    /// other probe of the same kind).
    pub fn than_probes(&self, c: &Claim) -> Result<Vec<String>> {
        let kind = self.kind_of(&c.probe)?;
        match (&c.than, c.than_tasks) {
            (None, Some(_)) => Ok(Vec::new()),
            (None, None) => {
                bail!("needs `than` (a probe, a list, `lowest` or `highest`) or `than_tasks`")
            }
            (Some(Than::One(w)), Some(_)) if w == "lowest" || w == "highest" => {
                bail!("`than_tasks` names the scale of one probe, not of the {w}: name the probe")
            }
            (Some(Than::One(id)), Some(_)) => Ok(vec![id.clone()]),
            (Some(Than::Each(_)), Some(_)) => {
                bail!("`than_tasks` names the scale of one probe, not of a list: name one probe")
            }
            (Some(Than::One(w)), None) if w == "lowest" || w == "highest" => Ok(self
                .probes
                .iter()
                .filter(|p| p.id != c.probe && p.kind == kind)
                .filter(|p| p.kernel == self.probe(&c.probe).and_then(|q| q.kernel.clone()))
                .filter(|p| c.tasks.is_none_or(|n| self.scales_of(p).contains(&n)))
                .map(|p| p.id.clone())
                .collect()),
            (Some(Than::One(id)), None) => Ok(vec![id.clone()]),
            (Some(Than::Each(ids)), None) => {
                ensure!(!ids.is_empty(), "`than` is an empty list");
                Ok(ids.clone())
            }
        }
    }
}

#[cfg(test)]
mod tests;
