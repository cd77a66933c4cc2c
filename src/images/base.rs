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
/// time is recorded in `cache` when `record` (this machine's Engine). A root filesystem built with
/// packages that moved from the pin's lock gets its own tag (its own sha256) and comes back as
/// [`Outcome::Drifted`]; with `strict_pins` it stops the build instead.
pub async fn import<E: Images>(
    engine: &E,
    cache: &Cache,
    name: &str,
    pin: &Pin,
    (record, strict_pins): (bool, bool),
) -> Result<Outcome> {
    let repo = format!("{}/{name}", namespace());
    let carries = |img: &Option<crate::engine::ImageFacts>, sha: &str| matches!(img, Some(i) if i.layers == [format!("sha256:{sha}")]);
    let pinned = format!("{repo}:{}", &pin.sha256[..16]);
    // A drifted root filesystem gets another tag, imported under this one's turn all the same.
    let _turn = super::turn::turn(&pinned, name).await?;
    let (mut sha256, mut drift, mut took, mut built) = (pin.sha256.clone(), None, None, false);
    if !carries(&engine.image(&pinned).await?, &pin.sha256) {
        super::timing::announce(cache, name, None);
        let started = std::time::Instant::now();
        let ensured =
            tokio::task::block_in_place(|| artifact::ensure_with(cache, pin, strict_pins));
        let rootfs = match ensured {
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
        if let Some(d) = &rootfs.drift {
            eprintln!("{name}: {}", d.deviation());
        }
        (sha256, drift) = (rootfs.sha256.clone(), rootfs.drift);
        let tag = format!("{repo}:{}", &sha256[..16]);
        if !carries(&engine.image(&tag).await?, &sha256) {
            engine.import(&rootfs.path, &repo, &sha256[..16]).await?;
            eprintln!(
                "{name}: imported {tag} in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            (took, built) = (Some(started.elapsed()), true);
            if record {
                super::timing::record(cache, name, &tag, started.elapsed());
            }
        }
    }
    let diff_id = format!("sha256:{sha256}");
    let tag = format!("{repo}:{}", &sha256[..16]);
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
    let image = BuiltImage {
        name: name.into(),
        tag,
        id: facts.id,
        layers: facts.layers,
        inputs: BTreeMap::from([(format!("rootfs {} {}", pin.name, pin.version), sha256)]),
        binaries: BTreeMap::new(),
        versions: BTreeMap::new(),
        notes: drift.iter().map(|d| d.deviation()).collect(),
        built,
    };
    Ok(match drift {
        Some(drift) => Outcome::Drifted(image, took, drift),
        None => Outcome::Built(image, took),
    })
}
