//! A rerun's images: the archive's own, loaded and checked tag by tag and binary by binary
//! against its manifest ([`verify_loaded`]); or, when it carries none, rebuilt from its sources and
//! pins and compared with its manifest, a different binary refused unless accepted ([`refuse`]).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;

use super::Source;
use crate::engine::Engine;
use crate::images::Manifest;
use crate::ops::prepare::{Prepared, for_study, prepare};
use crate::run::lifecycle::differences;
use crate::run::run_dir::{BinaryDifference, Origin};

/// The images a rerun runs, how they came here, and the binaries that differ from the archive's.
pub struct Images {
    pub engine: Engine,
    pub manifest: Manifest,
    pub origin: Origin,
    pub different: Vec<BinaryDifference>,
}

/// Loads the archive's images and verifies them, or rebuilds them from its sources and compares
/// their binaries with the archive's manifest (refused unless `accept_different_binaries`).
pub async fn images(source: &Source, accept_different_binaries: bool) -> Result<Images> {
    if source.carries_images() {
        return load(source).await;
    }
    eprintln!("the archive carries no images: rebuilding them from its sources and pins");
    let Prepared {
        engine, manifest, ..
    } = prepare(&source.repo(), &for_study(&source.study)).await?;
    let different = differences(&source.manifest, &manifest, &source.images);
    if !different.is_empty() && !accept_different_binaries {
        return Err(refuse(&source.path, &different));
    }
    for d in &different {
        eprintln!("warning: running a different binary: {d}");
    }
    Ok(Images {
        engine,
        manifest,
        origin: Origin::Rebuilt,
        different,
    })
}

/// Loads the archive's images, each only when it sets no tag but its own, and checks them; a
/// refused image's tag is removed.
async fn load(source: &Source) -> Result<Images> {
    let engine = Engine::connect().await?;
    let started = Instant::now();
    let manifest = source.loaded_manifest();
    for image in manifest.images.iter().filter(|i| i.built) {
        let file = source
            .image_file(&image.name)
            .context("checked by rerun::open")?;
        check_saved_tags(&image.name, &image.tag, &saved_tags(&file)?)?;
        eprintln!("loading image {} from the archive", image.name);
        engine.load_image(&file).await?;
    }
    if let Err(e) = verify_loaded(&engine, &manifest).await {
        // A refused image must not stay under a tag a later build would reuse.
        for image in manifest.images.iter().filter(|i| i.built) {
            if let Err(why) = engine.remove_tag(&image.tag).await {
                eprintln!(
                    "warning: could not remove the refused image {}: {why:#}",
                    image.tag
                );
            }
        }
        return Err(e);
    }
    let loaded: Vec<_> = manifest.images.iter().filter(|i| i.built).collect();
    let binaries: usize = loaded.iter().map(|i| i.binaries.len()).sum();
    eprintln!(
        "loaded {} image(s) and checked {binaries} binaries against the archive's manifest in {:.1} s",
        loaded.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(Images {
        engine,
        manifest,
        origin: Origin::Loaded,
        different: Vec::new(),
    })
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
            let got = crate::images::digest::bytes(&data);
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

/// The tags an exported image file (the Engine's save format) would set when loaded: the
/// `RepoTags` of its `manifest.json`. A load sets every one of them, so a rerun loads a file only
/// when it names exactly the tag the archive's manifest gives it.
pub fn saved_tags(file: &Path) -> Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Saved {
        #[serde(rename = "RepoTags", default)]
        repo_tags: Option<Vec<String>>,
    }
    let shown = file.display();
    let data = std::fs::File::open(file).with_context(|| format!("opening {shown}"))?;
    let mut tar = tar::Archive::new(std::io::BufReader::new(data));
    for entry in tar.entries().with_context(|| format!("reading {shown}"))? {
        let entry = entry.with_context(|| format!("reading {shown}"))?;
        if entry.path_bytes().as_ref() != b"manifest.json" {
            continue;
        }
        let saved: Vec<Saved> = serde_json::from_reader(entry)
            .with_context(|| format!("{shown}: parsing its manifest.json"))?;
        return Ok(saved
            .into_iter()
            .flat_map(|s| s.repo_tags.unwrap_or_default())
            .collect());
    }
    bail!("{shown}: no manifest.json: not an image exported by the Engine")
}

/// Refuses an exported image that would set any tag but `tag` (or none).
pub fn check_saved_tags(name: &str, tag: &str, tags: &[String]) -> Result<()> {
    ensure!(
        tags == [tag],
        "images/{name}.tar would set the tag(s) [{}] when loaded, but the archive's manifest names \
         only {tag}: refused, since loading it would move other tags; the archive was altered",
        tags.join(", ")
    );
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
