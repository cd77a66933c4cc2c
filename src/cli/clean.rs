//! `parkbench clean`: parkbench's images and artifact cache; runs are never touched.

use anyhow::{Context, Result, bail};

use super::Ending;
use crate::cli::args::CleanArgs;
use crate::engine::Engine;
use crate::images;
use crate::images::cache::Cache;

pub async fn command(args: &CleanArgs) -> Result<Ending> {
    if !args.images && !args.cache {
        bail!("say what to remove: --images, --cache, or both");
    }
    if args.images {
        let engine = Engine::connect().await?;
        let removed = engine.remove_images(&images::namespace()).await?;
        eprintln!("removed {} image tag(s)", removed.len());
    }
    if args.cache {
        let cache = Cache::from_env()?;
        let root = cache.root();
        if root.exists() {
            std::fs::remove_dir_all(root)
                .with_context(|| format!("removing {}", root.display()))?;
        }
        eprintln!("removed the artifact cache {}", root.display());
    }
    Ok(Ending::Ok)
}
