//! Base images: each root filesystem pin imported as a single layer. Its identity is the layer
//! diff-ID (= the rootfs sha256); the import, and so the rootfs itself, is skipped when the tag
//! already carries that layer.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};

use super::manifest::{BuiltImage, Outcome, namespace};
use crate::engine::Images;
use crate::images::artifact::{self, EnsureError};
use crate::images::cache::Cache;
use crate::images::pin::Pin;

/// Imports (or reuses) the base image `name` from the root filesystem of `pin`; the import's
/// time is recorded in `cache` when `record` (this machine's Engine).
pub async fn import<E: Images>(
    engine: &E,
    cache: &Cache,
    name: &str,
    pin: &Pin,
    record: bool,
) -> Result<Outcome> {
    let diff_id = format!("sha256:{}", pin.sha256);
    let repo = format!("{}/{name}", namespace());
    let tag = format!("{repo}:{}", &pin.sha256[..16]);
    let existing = engine.image(&tag).await?;
    let built = !matches!(&existing, Some(img) if img.layers == [diff_id.clone()]);
    let mut took = None;
    if built {
        super::timing::announce(cache, name, None);
        let started = std::time::Instant::now();
        let rootfs = match tokio::task::block_in_place(|| artifact::ensure(cache, pin)) {
            Ok(rootfs) => rootfs,
            Err(EnsureError::Unavailable { pin, reason }) => {
                return Ok(Outcome::Unavailable { pin, reason });
            }
            Err(e) => return Err(e).with_context(|| format!("the root filesystem of {name}")),
        };
        eprintln!(
            "{name}: rootfs ready in {:.1} s ({})",
            started.elapsed().as_secs_f64(),
            rootfs.source
        );
        engine
            .import(&rootfs.path, &repo, &pin.sha256[..16])
            .await?;
        eprintln!(
            "{name}: imported {tag} in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        took = Some(started.elapsed());
        if record {
            super::timing::record(cache, name, &tag, started.elapsed());
        }
    }
    let facts = engine
        .image(&tag)
        .await?
        .with_context(|| format!("the imported image {tag} is missing"))?;
    if facts.layers != [diff_id.clone()] {
        bail!(
            "the imported image {tag} has layers {:?}, expected exactly {diff_id}: the Engine changed the rootfs",
            facts.layers
        );
    }
    Ok(Outcome::Built(
        BuiltImage {
            name: name.into(),
            tag,
            id: facts.id,
            layers: facts.layers,
            inputs: BTreeMap::from([(
                format!("rootfs {} {}", pin.name, pin.version),
                pin.sha256.clone(),
            )]),
            binaries: BTreeMap::new(),
            versions: BTreeMap::new(),
            notes: Vec::new(),
            built,
        },
        took,
    ))
}
