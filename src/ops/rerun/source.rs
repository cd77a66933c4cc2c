//! The archive a rerun reruns, checked and unpacked in one pass ([`open`]): its run's files, its
//! study, its manifest, its source bundle and images, and the record of it for the new run's
//! `run.json` ([`RerunOf`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};

use crate::images::Manifest;
use crate::outputs::archive::{self, Unpack};
use crate::run::run_dir::{self, BinaryDifference, Origin, RerunOf, RunFiles};
use crate::study::Study;

/// The archive members a rerun unpacks: the source bundle, the exported images, the locked
/// `.deb`s, the seccomp profile.
const UNPACKED: [&str; 4] = [
    "source",
    "images",
    crate::ops::archive::DEBS,
    run_dir::SECCOMP,
];

/// An archive, checked and unpacked into a temporary folder that lives as long as this value.
pub struct Source {
    /// The archive file.
    pub path: PathBuf,
    /// sha256 of the archive file, hex.
    pub sha256: String,
    /// The archived run's small files.
    pub files: RunFiles,
    /// The archive's study, parsed by this version.
    pub study: Study,
    /// The archive's build manifest.
    pub manifest: Manifest,
    /// The probe images the study runs that the archive built (the others were unavailable there).
    pub images: Vec<String>,
    unpacked: tempfile::TempDir,
}

/// Checks `path` like `parkbench check` and unpacks what a rerun needs; refuses an archive this
/// version cannot rerun (no manifest, a study it cannot read, images named but not carried).
pub fn open(path: &Path) -> Result<Source> {
    let shown = path.display();
    ensure!(
        path.is_file(),
        "{shown}: no such archive; `parkbench rerun` takes a run archive (`<run-id>.tar.gz`); \
         to compare run folders, use `parkbench compare`"
    );
    let unpacked = tempfile::tempdir().context("creating a folder to unpack the archive into")?;
    let unpack = Unpack {
        dest: unpacked.path().to_owned(),
        members: UNPACKED.iter().map(|m| m.to_string()).collect(),
    };
    let files = archive::read_run_unpacking(path, unpack)
        .with_context(|| format!("{shown}: cannot rerun it"))?;
    let sha256 = crate::files::digest::file(path)?;
    let study = Study::parse(&files.study_yaml).with_context(|| {
        format!(
            "{shown}: its study.yaml cannot be run by this version of parkbench; rerun it with the \
             version in the archive's source/ (build it with `cargo build --release`)"
        )
    })?;
    // The kernels the archived run measured under (its run.json; none recorded: the study's own).
    let kernels = match files.run_json.as_deref() {
        Some(t) => {
            serde_json::from_str::<crate::run::run_dir::RunState>(t)
                .with_context(|| format!("{shown}: parsing {}/run.json", files.run_id))?
                .kernels
        }
        None => Vec::new(),
    };
    let study = study.under_kernels(&kernels)?;
    let text = files.manifest_json.as_deref().with_context(|| {
        format!(
            "{shown}: {}/manifest.json is missing, so no binary hash can be checked; \
             an archive written by `parkbench archive` always holds it",
            files.run_id
        )
    })?;
    let manifest: Manifest = serde_json::from_str(text)
        .with_context(|| format!("{shown}: parsing {}/manifest.json", files.run_id))?;
    let images = probe_images(&study, &manifest);
    let source = Source {
        path: path.to_owned(),
        sha256,
        files,
        study,
        manifest,
        images,
        unpacked,
    };
    source.check_images()?;
    ensure!(
        source.repo().join("docker").is_dir() && source.repo().join("toolchains").is_dir(),
        "{shown}: it carries no source/docker and source/toolchains, so its images cannot be \
         rebuilt or its environment described; it was not written by `parkbench archive`"
    );
    Ok(source)
}

/// The images the study's probes name that the manifest built, and the VM and kernel images of
/// its guest kernels, sorted, once each.
fn probe_images(study: &Study, manifest: &Manifest) -> Vec<String> {
    let kernels: Vec<String> = study.kernels().into_iter().map(String::from).collect();
    let guests = crate::run::guest::images_for(&kernels);
    let names: BTreeSet<&str> = study
        .probes
        .iter()
        .map(|p| p.image.as_str())
        .chain(guests.iter().map(String::as_str))
        .collect();
    names
        .into_iter()
        .filter(|n| manifest.get(n).is_some())
        .map(str::to_owned)
        .collect()
}

impl Source {
    /// The unpacked source bundle: a repository root with `docker/` and `toolchains/`.
    pub fn repo(&self) -> PathBuf {
        self.unpacked.path().join("source")
    }

    /// The exported image `images/<name>.tar`, when the archive carries it.
    pub fn image_file(&self, name: &str) -> Option<PathBuf> {
        let path = self
            .unpacked
            .path()
            .join("images")
            .join(format!("{name}.tar"));
        path.is_file().then_some(path)
    }

    /// The archive's locked `.deb`s (`debs/`), when it carries them.
    pub fn debs_dir(&self) -> Option<PathBuf> {
        let path = self.unpacked.path().join(crate::ops::archive::DEBS);
        path.is_dir().then_some(path)
    }

    /// True when the archive carries its images (then it carries every one the study runs, its
    /// guest kernels' too).
    pub fn carries_images(&self) -> bool {
        self.unpacked.path().join("images").is_dir()
    }

    /// The archive's copy of the study's seccomp profile, when the study names one.
    pub fn seccomp(&self) -> Result<Option<crate::run::seccomp::Profile>> {
        let Some(file) = &self.study.protocol.seccomp else {
            return Ok(None);
        };
        let path = self.unpacked.path().join(run_dir::SECCOMP);
        let bytes = std::fs::read(&path).with_context(|| {
            format!(
                "{}: the study names the seccomp profile {file:?} but the archive holds no {}/{}",
                self.path.display(),
                self.files.run_id,
                run_dir::SECCOMP
            )
        })?;
        crate::run::seccomp::Profile::parse(file, &bytes)
            .map(Some)
            .with_context(|| {
                format!(
                    "{}: its seccomp profile {}/{} is refused before anything is loaded",
                    self.path.display(),
                    self.files.run_id,
                    run_dir::SECCOMP
                )
            })
    }

    /// The record for the rerun's `run.json`.
    pub fn rerun_of(&self, images: Origin, different: Vec<BinaryDifference>) -> RerunOf {
        RerunOf {
            archive: self
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256: self.sha256.clone(),
            run_id: self.files.run_id.clone(),
            images,
            different_binaries: different,
        }
    }

    /// An archive with an `images/` folder must carry every image the run ran that its manifest
    /// built: the probe images, and the VM and kernel images under guest kernels.
    fn check_images(&self) -> Result<()> {
        if !self.carries_images() {
            return Ok(());
        }
        let missing: Vec<&str> = self
            .images
            .iter()
            .filter(|n| self.image_file(n).is_none())
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            bail!(
                "{}: its manifest names the image(s) {} the run ran but the archive carries no {}; \
                 it was cut down after it was written: use the complete archive, or one written \
                 without --with-images (its images are then rebuilt from its sources)",
                self.path.display(),
                missing.join(", "),
                missing
                    .iter()
                    .map(|n| format!("images/{n}.tar"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        Ok(())
    }

    /// The archive's manifest, its probe images marked as loaded here (`built`): the manifest of a
    /// rerun from loaded images. The images they were built from stay listed, for their tool
    /// versions, though only the probe images travel in the archive.
    pub fn loaded_manifest(&self) -> Manifest {
        let mut manifest = self.manifest.clone();
        for image in &mut manifest.images {
            image.built = self.images.contains(&image.name);
        }
        manifest
    }
}
