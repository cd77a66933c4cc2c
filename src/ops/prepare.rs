//! The step every command that runs containers starts with: check the repository, connect to the
//! Engine (`run` has connected already, to choose its CPUs), load the pins, and build or reuse
//! every image. `parkbench build` is this step alone.

use std::path::Path;

use anyhow::{Result, bail};

use super::Ending;
use crate::engine::Engine;
use crate::files::write_atomic;
use crate::images::cache::Cache;
use crate::images::pin;
use crate::images::{self, BuildOptions, Manifest};
use crate::run::needs;
use crate::study::Study;

/// What `prepare` gives: an Engine with every image built, and their manifest.
pub struct Prepared {
    pub engine: Engine,
    pub cache: Cache,
    pub manifest: Manifest,
}

/// Builds every pinned image (a no-op when nothing changed) and prints the image table.
pub async fn prepare(repo: &Path, options: &BuildOptions) -> Result<Prepared> {
    check_repo(repo)?;
    prepare_on(Engine::connect().await?, repo, options).await
}

/// [`prepare`] on an Engine already connected to, in a repository already checked
/// ([`check_repo`]).
pub async fn prepare_on(engine: Engine, repo: &Path, options: &BuildOptions) -> Result<Prepared> {
    let (cache, manifest) = build_on(&engine, repo, options).await?;
    print!("{}", images::table(&manifest));
    Ok(Prepared {
        engine,
        cache,
        manifest,
    })
}

/// The images `options` names, built or reused, with no table printed: a build ahead of the
/// command that prints it (`reproduce --pinned-driver`).
pub async fn build_quietly(repo: &Path, options: &BuildOptions) -> Result<Manifest> {
    check_repo(repo)?;
    Ok(build_on(&Engine::connect().await?, repo, options).await?.1)
}

async fn build_on(
    engine: &Engine,
    repo: &Path,
    options: &BuildOptions,
) -> Result<(Cache, Manifest)> {
    let pins = pin::load_all(&repo.join("toolchains"))?;
    let cache = Cache::from_env()?;
    let manifest = images::build_all(engine, &cache, &pins, repo, options).await?;
    Ok((cache, manifest))
}

/// `parkbench build`: every pinned image, built or reused; the manifest also written as JSON to
/// `manifest` when given. An image whose build failed fails the command once every other image
/// is built.
pub async fn build(repo: &Path, options: &BuildOptions, manifest: Option<&Path>) -> Result<Ending> {
    let prepared = prepare(repo, options).await?;
    if let Some(path) = manifest {
        let json = serde_json::to_string_pretty(&prepared.manifest)?;
        write_atomic(path, json.as_bytes())?;
        eprintln!("manifest written to {}", path.display());
    }
    let failed: Vec<&str> = (prepared.manifest.failed.iter())
        .filter(|f| f.parent.is_none())
        .map(|f| f.name.as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "the build of {} failed (see FAILED above); every other image is built, and a run \
             records the probes of the failed ones as `not measured`",
            failed.join(", ")
        );
    }
    Ok(Ending::Ok)
}

/// The build a study needs: its probe images and what they are built from.
pub fn for_study(study: &Study) -> BuildOptions {
    BuildOptions {
        only: needs::images(study),
        ..BuildOptions::default()
    }
}

pub(super) fn check_repo(repo: &Path) -> Result<()> {
    for dir in ["docker", "toolchains"] {
        if !repo.join(dir).is_dir() {
            bail!(
                "{} has no {dir}/ folder: run parkbench from the repository root or pass --repo DIR",
                repo.display()
            );
        }
    }
    Ok(())
}
