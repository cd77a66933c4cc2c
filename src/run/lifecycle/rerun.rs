//! A rerun's side of a run: the binaries that differ from an archive's, and the checks before an
//! interrupted rerun is resumed (the folder reran this very archive, with these very binaries).
//! A new rerun starts like any run, its [`RerunOf`](crate::run::run_dir::RerunOf) in [`super::Fresh`].

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

use super::Run;
use super::setup::reopen;
use crate::engine::Containers;
use crate::images::Manifest;
use crate::run::run_dir::{self, BinaryDifference, RunDir};
use crate::run::warning::Warning;
use crate::study::Study;

/// The run folder `--resume` names, when it is a rerun of `archive`, whose sha256 is `sha256`
/// (checked before any image is loaded or built).
pub fn rerun_folder(path: &Path, archive: &Path, sha256: &str) -> Result<RunDir> {
    let dir = RunDir::open(path)?;
    let state = dir.load_state()?;
    let of = state.rerun_of.as_ref();
    ensure!(
        of.is_some_and(|o| o.sha256 == sha256),
        "{} is not a rerun of {} (its run.json names {}); resume it with the archive it reran",
        dir.path().display(),
        archive.display(),
        of.map(|o| format!("archive {} with sha256 {}", o.archive, o.sha256))
            .unwrap_or_else(|| "no archive".into())
    );
    Ok(dir)
}

impl Run {
    /// The interrupted rerun in `dir`, to resume with the images of `manifest`: refused when a
    /// binary of the archive's `images` is not the one its samples were measured with.
    pub async fn resume_rerun(
        engine: &impl Containers,
        dir: RunDir,
        study: &Study,
        manifest: &Manifest,
        images: &[String],
        repo: &Path,
    ) -> Result<Run> {
        // The samples so far were measured with the run folder's binaries: no others may join them.
        let before: Manifest = serde_json::from_str(&dir.read(run_dir::MANIFEST)?)
            .with_context(|| format!("parsing {}", dir.file(run_dir::MANIFEST).display()))?;
        let changed = differences(&before, manifest, images);
        if let Some(d) = changed.first() {
            bail!(
                "{}: the binaries here are not the ones its samples were measured with ({} of them, \
                 first {d}); start a new rerun instead of resuming this one",
                dir.path().display(),
                changed.len()
            );
        }
        let state = reopen(engine, &dir, study, manifest, repo).await?;
        Run::new(dir, state, study, manifest)
    }
}

impl Run {
    /// Records a validity warning the rerun brings with it (an archive's seccomp profile accepted
    /// beyond the Engine's default) in `run.json`, once.
    pub fn warn(&mut self, warning: Warning) -> Result<()> {
        if !self.state.warnings.contains(&warning) {
            self.state.warnings.push(warning);
            self.dir.save_state(&self.state)?;
        }
        Ok(())
    }
}

/// Every binary of the `images` whose sha256 in `here` is not the one in `archive` (an image
/// missing here counts each of its binaries).
pub fn differences(
    archive: &Manifest,
    here: &Manifest,
    images: &[String],
) -> Vec<BinaryDifference> {
    let mut out = Vec::new();
    for name in images {
        let Some(want) = archive.get(name) else {
            continue;
        };
        let got = here.get(name);
        for (path, sha) in &want.binaries {
            let here_sha = got.and_then(|g| g.binaries.get(path)).cloned();
            if here_sha.as_ref() != Some(sha) {
                out.push(BinaryDifference {
                    image: name.clone(),
                    path: path.clone(),
                    archive: sha.clone(),
                    here: here_sha,
                });
            }
        }
    }
    out
}
