//! `parkbench compare A B`: two runs of a study side by side, each recomputed from its raw files
//! (a run folder or an archive, any mix). Per cell the headline value of both runs, B ÷ A and whether
//! the difference exceeds the runs' own dispersion; per claim both findings; both environments; and
//! whether the same probe binaries ran; when either run's samples come from more than one hardware
//! class, the same per class, like with like (`classes`).

pub mod classes;
mod markdown;
mod svg;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::images::Manifest;
use crate::outputs::archive;
use crate::outputs::outcome::{self, Outcome};
pub use crate::outputs::summary::Headline;
use crate::outputs::summary::Summary;
use crate::outputs::verdict::Verdict;
use crate::run::run_dir::{self, RunFiles};
use crate::study::Study;

pub use svg::figure;

/// The whole comparison of `a` (the reference) and `b` as Markdown (`compare.md`).
pub fn markdown(a: &Side, b: &Side) -> String {
    let classes = classes::pair(a, b).map(|p| classes::markdown(&p));
    markdown::markdown(a, b, classes)
}

/// The comparison as one self-contained page (`compare.html`): the Markdown's tables and the figure
/// inline.
pub fn html(a: &Side, b: &Side) -> String {
    let body = format!(
        "{}<h2>Figure</h2>\n<figure data-design=\"compare\">{}</figure>\n",
        crate::outputs::html::markdown(&markdown(a, b), &[]),
        figure(a, b)
    );
    crate::outputs::html::page("Comparison of two runs", &body)
}

/// Writes the comparison into `dir` (an existing folder) as `compare.md`, `compare.svg` and
/// `compare.html`, each through a temporary file and a rename; returns the Markdown and the path of
/// `compare.md`. Every command that writes a comparison writes these three.
pub fn write_all(dir: &Path, a: &Side, b: &Side) -> Result<(String, PathBuf)> {
    let md = markdown(a, b);
    let write =
        |name: &str, text: &str| crate::files::write_atomic(&dir.join(name), text.as_bytes());
    write(run_dir::COMPARE_SVG, &figure(a, b))?;
    write(run_dir::COMPARE_HTML, &html(a, b))?;
    write(run_dir::COMPARE_MD, &md)?;
    Ok((md, dir.join(run_dir::COMPARE_MD)))
}

/// The dispersion rule, as printed in the report.
pub const RULE: &str = "a difference is beyond dispersion when |B − A| > 2 × max(A's half-range, \
                        B's half-range), a half-range being (max − min) ÷ 2 of the cell's process values";

/// One run, recomputed.
pub struct Side {
    /// The path given on the command line.
    pub path: String,
    /// Statistics and verdicts recomputed from the raw files.
    pub outcome: Outcome,
    /// The run's build manifest; `None` when the run has no manifest.json.
    pub manifest: Option<Manifest>,
    /// The study as its file says, not laid out per kernel nor restricted to a shard: what the
    /// two runs' studies are compared by ([`crate::outputs::provenance::differences`]).
    pub written: Study,
}

/// Reads and recomputes a run folder or archive; errors name `path`.
pub fn load(path: &Path) -> Result<Side> {
    let shown = path.display().to_string();
    let files =
        read_files(path).with_context(|| format!("{shown}: not a readable parkbench run"))?;
    from_files(shown, &files)
}

/// A side from run files already read (an archive a rerun has checked and read); errors name `shown`.
pub fn from_files(shown: String, files: &RunFiles) -> Result<Side> {
    let mut outcome =
        outcome::recompute(files).with_context(|| format!("{shown}: recomputing the run"))?;
    // A sample without a class was measured on the run's own machine, which env.json describes:
    // so a run of one machine compares with the same class of a run of several.
    let own = match &files.env_json {
        Some(json) => serde_json::from_str::<crate::run::env::Environment>(json)
            .map(|e| crate::run::hardware::class(&e.host))
            .with_context(|| format!("{shown}: parsing env.json"))?,
        None => "unknown hardware (no env.json)".to_string(),
    };
    for s in outcome.samples.iter_mut().filter(|s| s.hardware.is_none()) {
        s.hardware = Some(own.clone());
    }
    let manifest = files
        .manifest_json
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .with_context(|| format!("{shown}: parsing manifest.json"))?;
    let written = Study::parse(&files.study_yaml)
        .with_context(|| format!("{shown}: in the run's study.yaml"))?;
    Ok(Side {
        path: shown,
        outcome,
        manifest,
        written,
    })
}

fn read_files(path: &Path) -> Result<RunFiles> {
    if path.is_dir() {
        archive::read_folder(path)
    } else if path.exists() {
        archive::read_run(path)
    } else {
        anyhow::bail!("no such file or folder")
    }
}

/// One probe at one scale in both runs.
pub struct CellRow {
    pub probe: String,
    pub tasks: u64,
    pub a: Headline,
    pub b: Headline,
}

impl CellRow {
    /// B ÷ A; `None` when A is 0.
    pub fn ratio(&self) -> Option<f64> {
        (self.a.value != 0.0).then(|| self.b.value / self.a.value)
    }

    /// True when |B − A| exceeds twice the larger half-range (see [`RULE`]).
    pub fn beyond_dispersion(&self) -> bool {
        let allowed = 2.0 * self.a.half_range().max(self.b.half_range());
        (self.b.value - self.a.value).abs() > allowed
    }

    /// True when B ÷ A differs from 1 by more than `percent` percent (or A is 0 and B is not).
    pub fn differs_by_more_than(&self, percent: f64) -> bool {
        match self.ratio() {
            Some(r) => (r - 1.0).abs() * 100.0 > percent,
            None => self.b.value != 0.0,
        }
    }
}

/// Every cell present in both summaries with a headline of the same statistic, in A's order.
pub fn cells(a: &Summary, b: &Summary) -> Vec<CellRow> {
    a.cells
        .iter()
        .filter_map(|ca| {
            let cb = b.cell(&ca.probe, ca.tasks)?;
            let (ha, hb) = (Headline::of(ca)?, Headline::of(cb)?);
            (ha.name == hb.name).then(|| CellRow {
                probe: ca.probe.clone(),
                tasks: ca.tasks,
                a: ha,
                b: hb,
            })
        })
        .collect()
}

/// Which run a cell has a headline value in, when only one of them has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Measured in A, missing or without a value of the same statistic in B.
    LostInB,
    /// Measured in B, missing or without a value of the same statistic in A.
    NewInB,
}

impl Presence {
    /// The finding as the report prints it.
    pub fn label(self) -> &'static str {
        match self {
            Presence::LostInB => "lost in B",
            Presence::NewInB => "new in B",
        }
    }
}

/// A cell with a headline value in one run only.
pub struct LoneCell {
    /// The probe's id.
    pub probe: String,
    /// The scale, in tasks.
    pub tasks: u64,
    /// The headline of the run that has one.
    pub headline: Headline,
    pub presence: Presence,
}

/// Every cell with a headline in one run but not (or not of the same statistic) in the other: A's
/// lost cells in A's order, then B's new cells in B's order. These are the cells [`cells`] leaves out.
pub fn lone_cells(a: &Summary, b: &Summary) -> Vec<LoneCell> {
    let lone = |from: &Summary, other: &Summary, presence: Presence| -> Vec<LoneCell> {
        from.cells
            .iter()
            .filter_map(|c| {
                let headline = Headline::of(c)?;
                let paired = other
                    .cell(&c.probe, c.tasks)
                    .and_then(Headline::of)
                    .is_some_and(|h| h.name == headline.name);
                (!paired).then(|| LoneCell {
                    probe: c.probe.clone(),
                    tasks: c.tasks,
                    headline,
                    presence,
                })
            })
            .collect()
    };
    let mut out = lone(a, b, Presence::LostInB);
    out.extend(lone(b, a, Presence::NewInB));
    out
}

/// The cells that fail `--fail-above percent`: B ÷ A beyond the threshold, or lost in B.
pub fn over_threshold(a: &Summary, b: &Summary, percent: f64) -> Vec<String> {
    let paired = cells(a, b)
        .into_iter()
        .filter(|row| row.differs_by_more_than(percent))
        .map(|row| format!("{} at {} tasks", row.probe, row.tasks));
    let lost = lone_cells(a, b)
        .into_iter()
        .filter(|c| c.presence == Presence::LostInB)
        .map(|c| format!("{} at {} tasks (lost in B)", c.probe, c.tasks));
    paired.chain(lost).collect()
}

/// The comparison in one line: how the root filesystems differ by package, first, when they do;
/// cells beyond dispersion (and the one that moved most), cells in one run only, claims with the
/// same finding, and whether the same binaries ran.
pub fn one_line(a: &Side, b: &Side) -> String {
    let (sa, sb) = (&a.outcome.summary, &b.outcome.summary);
    let rows = cells(sa, sb);
    let beyond: Vec<&CellRow> = rows.iter().filter(|r| r.beyond_dispersion()).collect();
    let mut out = rootfs_drift(a, b)
        .map(|d| format!("{d}; "))
        .unwrap_or_default();
    out.push_str(&format!(
        "{} of {} cells beyond dispersion",
        beyond.len(),
        rows.len()
    ));
    let moved = |r: &&CellRow| r.ratio().map_or(f64::INFINITY, |x| (x.ln()).abs());
    if let Some(most) = beyond.iter().max_by(|x, y| moved(x).total_cmp(&moved(y))) {
        let ratio = most.ratio().map_or("—".into(), |r| format!("{r:.3}"));
        out.push_str(&format!(
            " (most: {} at {} tasks, B ÷ A {ratio})",
            most.probe, most.tasks
        ));
    }
    let lone = lone_cells(sa, sb).len();
    if lone > 0 {
        out.push_str(&format!(", {lone} in one run only"));
    }
    let pairs = claims(&a.outcome.verdicts, &b.outcome.verdicts);
    let same = pairs.iter().filter(|(x, y)| x.status == y.status).count();
    out.push_str(&format!(
        "; claims: {same} of {} with the same finding; same binaries: {}",
        pairs.len(),
        same_binaries(a, b)
    ));
    if let Some(p) = classes::pair(a, b) {
        out.push_str(&classes::one_line(&p));
    }
    out
}

/// How the two runs' root filesystems differ by package (the drift from its lock each build
/// recorded), when they do: a factor that can move every figure, named before any cell.
pub fn rootfs_drift(a: &Side, b: &Side) -> Option<String> {
    let (ma, mb) = (a.manifest.as_ref()?, b.manifest.as_ref()?);
    if ma.drift == mb.drift {
        return None;
    }
    let said = |m: &Manifest| {
        if m.drift.is_empty() {
            "as pinned".to_owned()
        } else {
            let each: Vec<String> = m.drift.iter().map(|d| d.deviation()).collect();
            each.join("; ")
        }
    };
    Some(format!(
        "the root filesystems differ by package: A {}; B {}",
        said(ma),
        said(mb)
    ))
}

/// Claims judged in both runs, by claim id, in A's order.
pub fn claims<'a>(a: &'a [Verdict], b: &'a [Verdict]) -> Vec<(&'a Verdict, &'a Verdict)> {
    a.iter()
        .filter_map(|va| Some((va, b.iter().find(|vb| vb.claim == va.claim)?)))
        .collect()
}

/// Whether the same binaries ran: every binary sha256 of every probe image of both studies. An
/// image unavailable in both runs ran in neither and is named as such; one unavailable in only one
/// run is a difference.
pub fn same_binaries(a: &Side, b: &Side) -> String {
    let (Some(ma), Some(mb)) = (&a.manifest, &b.manifest) else {
        let which = if a.manifest.is_none() { "A" } else { "B" };
        return format!("unknown: {which} has no manifest.json");
    };
    let images: BTreeSet<&str> = [&a.outcome, &b.outcome]
        .iter()
        .flat_map(|o| o.study.probes.iter().map(|p| p.image.as_str()))
        .collect();
    let mut skipped = Vec::new();
    for image in images {
        match (ma.unavailable(image), mb.unavailable(image)) {
            (Some(_), Some(_)) => {
                skipped.push(image);
                continue;
            }
            (Some(_), None) => return format!("no: {image} is unavailable in A"),
            (None, Some(_)) => return format!("no: {image} is unavailable in B"),
            (None, None) => {}
        }
        let (Some(ia), Some(ib)) = (ma.get(image), mb.get(image)) else {
            let which = if ma.get(image).is_none() { "A" } else { "B" };
            return format!("no: {image} is not in {which}'s manifest");
        };
        let paths: BTreeSet<&String> = ia.binaries.keys().chain(ib.binaries.keys()).collect();
        if let Some(path) = paths
            .into_iter()
            .find(|p| ia.binaries.get(*p) != ib.binaries.get(*p))
        {
            return format!("no: {image} {path} differs");
        }
    }
    if skipped.is_empty() {
        "yes".into()
    } else {
        format!("yes ({} unavailable in both)", skipped.join(", "))
    }
}

#[cfg(test)]
mod tests;
