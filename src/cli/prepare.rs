//! The step every command that runs containers starts with: check the repository, load the pins,
//! connect to the Engine, and build or reuse every image.

use std::path::Path;

use anyhow::{Result, bail};

use crate::cli::args::BuildArgs;
use crate::engine::Engine;
use crate::images::cache::{self, Cache};
use crate::images::pin;
use crate::images::{self, BuildOptions, Manifest};

/// What `prepare` gives: an Engine with every image built, and their manifest.
pub struct Prepared {
    pub engine: Engine,
    pub cache: Cache,
    pub manifest: Manifest,
}

/// Builds every pinned image (a no-op when nothing changed) and prints the image table.
pub async fn prepare(repo: &Path, args: &BuildArgs) -> Result<Prepared> {
    check_repo(repo)?;
    let pins = pin::load_all(&repo.join("toolchains"))?;
    let cache = Cache::from_env()?;
    let engine = Engine::connect().await?;
    let options = BuildOptions {
        no_cache: args.no_cache,
        verbose: args.verbose,
        only: args.only.clone(),
    };
    let manifest = images::build_all(&engine, &cache, &pins, repo, &options).await?;
    print!("{}", images::table(&manifest));
    if let Some(path) = &args.manifest {
        cache::write_atomic(path, serde_json::to_string_pretty(&manifest)?.as_bytes())?;
        eprintln!("manifest written to {}", path.display());
    }
    Ok(Prepared {
        engine,
        cache,
        manifest,
    })
}

fn check_repo(repo: &Path) -> Result<()> {
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
