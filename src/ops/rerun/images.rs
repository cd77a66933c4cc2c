//! A rerun's images: the archive's own, in quarantine (checked, loaded under a rerun-only tag and
//! removed again when the rerun is over, `quarantine`) and checked binary by binary against its
//! manifest ([`verify_loaded`]); or, when it carries none, rebuilt from its sources and pins and
//! compared with its manifest, a different binary refused unless accepted ([`refuse`]).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, ensure};

use super::Source;
use super::quarantine::{self, quarantine_tag};
use crate::engine::{Engine, ImageGuard};
use crate::images::{BuildOptions, Manifest};
use crate::ops::prepare::{Prepared, for_study, prepare};
use crate::run::lifecycle::differences;
use crate::run::run_dir::{BinaryDifference, Origin};

/// The images a rerun runs, how they came here, and the binaries that differ from the archive's.
pub struct Images {
    pub engine: Engine,
    pub manifest: Manifest,
    pub origin: Origin,
    pub different: Vec<BinaryDifference>,
    /// The archive's images loaded in quarantine (none when rebuilt here).
    loaded: Option<ImageGuard>,
}

impl Images {
    /// Removes the archive's loaded images, or (`keep`) leaves them and says where.
    pub async fn release(mut self, keep: bool) {
        let Some(guard) = self.loaded.take() else {
            return;
        };
        if keep {
            let tags = guard.keep();
            eprintln!(
                "kept the archive's images (--keep-images): {}; no build reuses them, remove them \
                 with the Engine's tools",
                tags.join(", ")
            );
        } else {
            let tags = guard.tags();
            guard.remove().await;
            eprintln!("removed the archive's images {}", tags.join(", "));
        }
    }
}

/// Loads the archive's images in quarantine and verifies them, or rebuilds them from its sources
/// and compares their binaries with the archive's manifest (refused unless
/// `accept_different_binaries`); `strict_build` stops at the first failed build.
/// An archive's `.debs` enter the cache only when a lock of `repo` (the checkout's
/// `toolchains/`) names their sha256.
pub async fn images(
    source: &Source,
    repo: &Path,
    accept_different_binaries: bool,
    strict_build: bool,
) -> Result<Images> {
    if source.carries_images() {
        return load(source).await;
    }
    eprintln!("the archive carries no images: rebuilding them from its sources and pins");
    if let Some(dir) = source.debs_dir() {
        import_debs(source, &dir, repo)?;
    }
    let Prepared {
        engine, manifest, ..
    } = prepare(
        &source.repo(),
        &BuildOptions {
            strict: strict_build,
            ..for_study(&source.study)
        },
    )
    .await?;
    let different = differences(&source.manifest, &manifest, &source.images);
    if !different.is_empty() && !accept_different_binaries {
        return Err(refuse(&source.path, &different));
    }
    for d in &different {
        eprintln!(
            "warning: running a different binary: {}",
            crate::text::printable(&d.to_string())
        );
    }
    Ok(Images {
        engine,
        manifest,
        origin: Origin::Rebuilt,
        different,
        loaded: None,
    })
}

/// Imports the archive's `.debs` in `dir` that the locks of the checkout `repo` name by sha256,
/// and names the ones it refuses.
fn import_debs(source: &Source, dir: &Path, repo: &Path) -> Result<()> {
    use crate::images::artifact::{import_debs, locked_sha256s};
    let pins = crate::images::pin::load_all(&repo.join("toolchains"))?;
    let trusted = locked_sha256s(&pins);
    let cache = crate::images::cache::Cache::from_env()?;
    let imported = import_debs(&cache, dir, &source.path.display().to_string(), &trusted)?;
    eprintln!(
        "the archive's locked .debs: {} added to the cache",
        imported.added
    );
    if !imported.refused.is_empty() {
        let names = crate::text::printable(&imported.refused.join(", ")).into_owned();
        eprintln!(
            "refused {} of the archive's .debs: no lock of this checkout (toolchains/*.lock) \
             names their sha256, and a package's scripts run as root when it is installed: {names}. \
             The build takes those packages from your apt sources instead.",
            imported.refused.len()
        );
    }
    Ok(())
}

/// Loads the archive's images under their quarantine tags and checks them; on any refusal every
/// image loaded so far is removed again before the error is returned.
async fn load(source: &Source) -> Result<Images> {
    let engine = Engine::connect().await?;
    let started = Instant::now();
    let mut guard = ImageGuard::new(engine.clone());
    let manifest = match load_all(source, &engine, &mut guard).await {
        Ok(manifest) => manifest,
        Err(e) => {
            guard.remove().await;
            return Err(e);
        }
    };
    let loaded: Vec<_> = manifest.images.iter().filter(|i| i.built).collect();
    let binaries: usize = loaded.iter().map(|i| i.binaries.len()).sum();
    eprintln!(
        "loaded {} image(s) in quarantine and checked {binaries} binaries against the archive's \
         manifest in {:.1} s",
        loaded.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(Images {
        engine,
        manifest,
        origin: Origin::Loaded,
        different: Vec::new(),
        loaded: Some(guard),
    })
}

/// The archive's manifest with its probe images loaded into `guard` and named by their quarantine
/// tags, each checked against the manifest.
async fn load_all(source: &Source, engine: &Engine, guard: &mut ImageGuard) -> Result<Manifest> {
    let mut manifest = source.loaded_manifest();
    let scratch = tempfile::tempdir().context("creating a folder for the images' copies")?;
    for image in manifest.images.iter_mut().filter(|i| i.built) {
        let tag = quarantine_tag(&source.sha256, &image.name, &image.tag)?;
        let file = source
            .image_file(&image.name)
            .context("checked by rerun::open")?;
        eprintln!("loading image {} from the archive as {tag}", image.name);
        quarantine::load(guard, &file, image, &tag, scratch.path()).await?;
        image.tag = tag;
    }
    verify_loaded(engine, &manifest).await?;
    Ok(manifest)
}

/// Checks images loaded from the archive: each tag is there with the archive's layers, and every
/// binary's sha256 is the manifest's. Any difference is refused: the archive's own images cannot
/// differ from its manifest unless one of them was altered.
pub async fn verify_loaded(engine: &impl crate::engine::Images, manifest: &Manifest) -> Result<()> {
    for image in manifest.images.iter().filter(|i| i.built) {
        let facts = engine.image(&image.tag).await?.with_context(|| {
            format!(
                "image {}: the archive's images/{}.tar did not load the tag {}",
                image.name, image.name, image.tag
            )
        })?;
        ensure!(
            facts.layers == image.layers,
            "image {} ({}): its layers differ from the archive's manifest; the exported image \
             does not belong to this run",
            image.name,
            image.tag
        );
        for (path, want) in &image.binaries {
            let data = engine.read_file(&image.tag, path).await?;
            let got = crate::files::digest::bytes(&data);
            ensure!(
                &got == want,
                "image {} {path}: sha256 {got} after loading, but the archive's manifest says {want}; \
                 the exported image does not belong to this run",
                image.name
            );
        }
    }
    Ok(())
}

/// The refusal when rebuilt binaries differ, naming both hashes of each.
pub fn refuse(source: &Path, different: &[BinaryDifference]) -> anyhow::Error {
    let lines: Vec<String> = different.iter().map(|d| format!("  {d}")).collect();
    anyhow::anyhow!(
        "{}: the images rebuilt here from its sources differ from the ones it ran:\n{}\n\
         the toolchains or sources that built them differ; rerun an archive written with \
         --with-images for the same binaries, or pass --accept-different-binaries to run these \
         (recorded as a deviation)",
        source.display(),
        lines.join("\n")
    )
}
