//! `parkbench clean`: parkbench's images and artifact cache; runs are never touched.

use anyhow::{Context, Result, bail};

use super::Ending;
use crate::engine::Engine;
use crate::images::cache::Cache;
use crate::images::namespace;

/// Removes parkbench's images (`images`) and its artifact cache (`cache`).
pub async fn clean(images: bool, cache: bool) -> Result<Ending> {
    if !images && !cache {
        bail!("say what to remove: --images, --cache, or both");
    }
    if images {
        let engine = Engine::connect().await?;
        let removed = engine.remove_images(&namespace()).await?;
        eprintln!("removed {} image tag(s)", removed.len());
    }
    if cache {
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
