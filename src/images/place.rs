//! The coordinator's images on another host, without a registry: shipped over the Engine API (the
//! coordinator's save streamed into the host's load, the image ID kept) or built there from the
//! same pins. Either way every binary the manifest lists is then read back on the host and its
//! sha256 compared with the coordinator's: one mismatch refuses the host. The tags on the host are
//! always the coordinator manifest's own, set by the kit, never ones read from a file.

use std::path::Path;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::cache::Cache;
use super::pin::Pins;
use super::{BuildOptions, BuiltImage, Manifest};
use crate::engine::{Engine, Images};
use crate::files::digest;

/// How the images get to a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The coordinator's images, shipped over the Engine API (`--images ship`).
    Ship,
    /// Built on the host from the same pins (`--images build`).
    Build,
}

impl FromStr for Placement {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "ship" => Ok(Placement::Ship),
            "build" => Ok(Placement::Build),
            _ => bail!("`--images {s}`: say `ship` (the default) or `build`"),
        }
    }
}

/// What it took to have one image on a host.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    /// The image's short name, as in the manifest.
    pub image: String,
    /// `present` (the host had it: the same ID when shipping, the same inputs when building;
    /// nothing sent or built), `shipped` or `built`.
    pub how: &'static str,
    /// Bytes sent to the host (a shipped image's save stream); 0 otherwise.
    pub bytes: u64,
    /// Seconds to ship it, or to build it on the host (its own build's time); 0 when nothing was
    /// done. The check of its binaries is not counted.
    pub secs: f64,
}

/// What a build on a host is made from: the coordinator's pins, artifact cache and recipes (the
/// base root filesystems are imported over the API from the coordinator's cache).
pub struct Sources<'a> {
    /// The verified artifacts and vendored crates.
    pub cache: &'a Cache,
    /// Every pin of the repository.
    pub pins: &'a Pins,
    /// The repository root (holding `docker/`).
    pub repo: &'a Path,
}

/// Puts `images` (short names of `manifest`, the coordinator's) on `host` (called `host_name` in
/// messages) as `how` says, then checks every binary of every one against the manifest. Refused,
/// naming the host, the image, the path and both hashes, on any mismatch. An image the manifest
/// lists as failed or unavailable is left out (its probes are measured nowhere); one it does not
/// know is an error.
pub async fn place(
    coordinator: &Engine,
    host: &Engine,
    host_name: &str,
    manifest: &Manifest,
    images: &[String],
    how: Placement,
    sources: &Sources<'_>,
) -> Result<Vec<Placed>> {
    let mut wanted: Vec<&BuiltImage> = Vec::new();
    for name in images {
        match manifest.get(name) {
            Some(image) => wanted.push(image),
            // Not built on the coordinator either: its probes are `not measured` anywhere.
            None if manifest.failed(name).is_some() || manifest.unavailable(name).is_some() => {}
            None => {
                bail!("image {name} is not in the coordinator's manifest: build it there first")
            }
        }
    }
    let placed = match how {
        Placement::Ship => {
            let mut placed = Vec::new();
            for image in &wanted {
                placed.push(ship(coordinator, host, host_name, image).await?);
            }
            placed
        }
        Placement::Build => build(host, host_name, &wanted, sources).await?,
    };
    for image in &wanted {
        verify(host, host_name, image).await?;
    }
    Ok(placed)
}

/// One image shipped, or found on the host with the same ID; tagged with the manifest's tag.
async fn ship(
    coordinator: &Engine,
    host: &Engine,
    host_name: &str,
    image: &BuiltImage,
) -> Result<Placed> {
    let (name, tag, id) = (&image.name, &image.tag, &image.id);
    let here = coordinator.image_id(tag).await?;
    if here.as_deref() != Some(id.as_str()) {
        bail!(
            "the coordinator's {tag} is {here:?}, not the image {id} its manifest names: build \
             again (`parkbench build`) before placing images on host `{host_name}`"
        );
    }
    let started = Instant::now();
    let mut placed = Placed {
        image: name.clone(),
        how: "present",
        bytes: 0,
        secs: 0.0,
    };
    if host.image_id(id).await?.is_none() {
        placed.bytes = coordinator
            .copy_image(id, host)
            .await
            .with_context(|| format!("shipping image {name} ({tag}) to host `{host_name}`"))?;
        placed.how = "shipped";
    }
    if host.image_id(tag).await?.as_deref() != Some(id.as_str()) {
        host.tag(id, tag)
            .await
            .with_context(|| format!("host `{host_name}`"))?;
    }
    if placed.how == "shipped" {
        placed.secs = started.elapsed().as_secs_f64();
    }
    Ok(placed)
}

/// The images built on the host by the images pipeline, from the coordinator's sources; each must
/// come out under the coordinator's tag (the same inputs).
async fn build(
    host: &Engine,
    host_name: &str,
    wanted: &[&BuiltImage],
    sources: &Sources<'_>,
) -> Result<Vec<Placed>> {
    let options = BuildOptions {
        only: wanted.iter().map(|i| i.name.clone()).collect(),
        other_host: true,
        ..BuildOptions::default()
    };
    let (built, times) =
        super::build_all_timed(host, sources.cache, sources.pins, sources.repo, &options)
            .await
            .with_context(|| format!("building the images on host `{host_name}`"))?;
    let mut placed = Vec::new();
    for image in wanted {
        let name = &image.name;
        let Some(there) = built.get(name) else {
            let why = (built
                .failed(name)
                .map(|f| format!("its build failed: {}", f.reason())))
            .or_else(|| built.unavailable(name).map(str::to_string))
            .unwrap_or_else(|| "the build did not make it".into());
            bail!("host `{host_name}` cannot have image {name}: {why}");
        };
        if there.tag != image.tag {
            bail!(
                "host `{host_name}` built image {name} as {}, the coordinator has {}: their inputs \
                 differ (another checkout or other pins?)",
                there.tag,
                image.tag
            );
        }
        let secs = times.get(name).map_or(0.0, |t| t.as_secs_f64());
        let how = if there.built { "built" } else { "present" };
        placed.push(Placed {
            image: name.clone(),
            how,
            bytes: 0,
            secs,
        });
    }
    Ok(placed)
}

/// Every binary `image` lists, read on `host` under the image's tag, has the manifest's sha256.
pub async fn verify<E: Images>(host: &E, host_name: &str, image: &BuiltImage) -> Result<()> {
    for (path, expected) in &image.binaries {
        let data = host
            .read_file(&image.tag, path)
            .await
            .with_context(|| format!("host `{host_name}`: checking image {}", image.name))?;
        let found = digest::bytes(&data);
        if &found != expected {
            bail!(
                "host `{host_name}` refused: image {} ({}) has {path} with sha256 {found}, the \
                 coordinator's manifest has {expected}; its images are not the coordinator's \
                 (remove them there, or place them with `--images ship`)",
                image.name,
                image.tag
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::engine::fake::FakeEngine;

    fn image(binaries: BTreeMap<String, String>) -> BuiltImage {
        BuiltImage {
            name: "go".into(),
            tag: "parkbench/go:0123456789abcdef".into(),
            id: String::new(),
            layers: Vec::new(),
            inputs: BTreeMap::new(),
            binaries,
            versions: BTreeMap::new(),
            notes: Vec::new(),
            built: false,
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_binary_with_another_hash_refuses_the_host_naming_everything() {
        let engine = FakeEngine::new([]);
        let tmp = tempfile::tempdir().unwrap();
        let rootfs = tmp.path().join("rootfs.tar");
        std::fs::write(&rootfs, b"root").unwrap();
        engine
            .import(&rootfs, "parkbench/go", "0123456789abcdef")
            .await
            .unwrap();
        let tag = "parkbench/go:0123456789abcdef";
        let good = digest::bytes(&engine.read_file(tag, "/usr/local/bin/probe").await.unwrap());
        let probe = ("/usr/local/bin/probe".to_string(), good.clone());
        verify(&engine, "b", &image([probe.clone()].into()))
            .await
            .unwrap();

        let other = "f".repeat(64);
        let sampler = ("/usr/local/bin/sampler".to_string(), other.clone());
        let err = verify(&engine, "b", &image([probe, sampler].into()))
            .await
            .unwrap_err()
            .to_string();
        for part in ["host `b`", "image go", "/usr/local/bin/sampler", &other] {
            assert!(err.contains(part), "{part} missing: {err}");
        }
        let found = digest::bytes(
            &engine
                .read_file(tag, "/usr/local/bin/sampler")
                .await
                .unwrap(),
        );
        assert!(err.contains(&found), "the host's hash: {err}");
    }

    #[test]
    fn placements_parse_and_a_wrong_one_says_what_to_write() {
        assert_eq!("ship".parse::<Placement>().unwrap(), Placement::Ship);
        assert_eq!("build".parse::<Placement>().unwrap(), Placement::Build);
        let err = "copy".parse::<Placement>().unwrap_err().to_string();
        assert!(err.contains("copy") && err.contains("ship"), "{err}");
    }
}
