//! The image stage: pins → verified artifacts (cached by sha256) → deterministic build contexts →
//! pinned images and their manifest.
//!
//! Images: a base image per root filesystem pin (imported), and one image per `docker/<name>/`
//! folder with an `image.yaml` recipe (toolchains, the sampler, probes), built offline through the
//! Engine. Tags are derived from the hash of all inputs, so unchanged inputs skip the build; the
//! build manifest records what went into every image and the sha256 of every binary in it, read
//! back from the image. An image whose pinned artifact cannot be produced here is not built, nor is
//! any image below it; the manifest lists them as unavailable.
//!
//! Also the deterministic tar and cpio writers and the streaming sha256 that later stages reuse.
//! May import: `study`, `engine`, `yaml`, `stats`.

pub mod artifact;
mod base;
mod build;
pub mod cache;
pub mod context;
pub mod digest;
pub mod initramfs;
mod manifest;
pub mod pin;
pub mod plan;
pub mod recipe;
pub mod saved;
pub mod tarball;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::engine::Images;
use crate::images::cache::Cache;
use crate::images::pin::Pins;
use plan::{Graph, Node, Schedule};

use manifest::Outcome;
pub use manifest::{BuildOptions, BuiltImage, Manifest, UnavailableImage, namespace};

/// Names of the probe images: the `docker/` folders whose recipe says `probe: true` (what a study's
/// `probes[].image` may name).
pub fn probe_names(repo: &Path) -> Result<Vec<String>> {
    Ok(recipe::discover(&repo.join("docker"))?
        .into_iter()
        .filter(|r| r.probe)
        .map(|r| r.name)
        .collect())
}

/// The images of the repository: its recipes checked against each other and its pins.
pub fn graph(repo: &Path, pins: &Pins) -> Result<Graph> {
    Graph::new(recipe::discover(&repo.join("docker"))?, pins)
}

/// Builds (or reuses) every image, parents first, and returns the manifest. Fails when no probe
/// image can be built.
pub async fn build_all<E: Images>(
    engine: &E,
    cache: &Cache,
    pins: &Pins,
    repo: &Path,
    options: &BuildOptions,
) -> Result<Manifest> {
    let full = graph(repo, pins)?;
    let graph = match options.only.as_slice() {
        [] => full.only(&full.default_set())?,
        names => full.only(names)?,
    };
    let kit = build::Kit {
        engine,
        cache,
        pins,
        repo,
        options,
    };
    let mut manifest = Manifest::default();
    let mut schedule = Schedule::new(&graph);
    // Images whose parents are all built go together: the Engine builds them side by side (the Go
    // toolchain's many small files are I/O-bound while the Rust chain compiles).
    loop {
        let ready = schedule.ready();
        if ready.is_empty() {
            break;
        }
        let builds = ready.iter().map(|node| async {
            build_node(&kit, node, &manifest)
                .await
                .with_context(|| format!("image {}", node.name()))
        });
        let outcomes = futures_util::future::try_join_all(builds).await?;
        for (node, outcome) in ready.into_iter().zip(outcomes) {
            match outcome {
                Outcome::Built(image) => {
                    schedule.built(node.name());
                    manifest.images.push(image);
                }
                Outcome::Unavailable { pin, reason } => {
                    eprintln!(
                        "{}: unavailable, pin {pin} cannot be produced here",
                        node.name()
                    );
                    schedule.unavailable(node.name(), plan::pin_reason(&pin, &reason));
                }
            }
        }
    }
    manifest.unavailable = schedule
        .unavailable_images()
        .into_iter()
        .map(|(name, reason)| UnavailableImage { name, reason })
        .collect();
    check_probes(&graph, &manifest)?;
    Ok(manifest)
}

async fn build_node<E: Images>(
    kit: &build::Kit<'_, E>,
    node: &Node,
    done: &Manifest,
) -> Result<Outcome> {
    match node {
        Node::Rootfs { name, pin } => {
            base::import(kit.engine, kit.cache, name, kit.pins.get(pin)?).await
        }
        Node::Recipe(recipe) => build::build(kit, recipe, done).await,
    }
}

/// Fails, listing every unavailable image and why, when no probe image was built.
fn check_probes(graph: &Graph, manifest: &Manifest) -> Result<()> {
    let mut probes = graph.nodes().iter().filter(|n| n.is_probe()).peekable();
    // A build of other images only (`--only vm`) has no probe to miss.
    if probes.peek().is_none() || probes.clone().any(|n| manifest.get(n.name()).is_some()) {
        return Ok(());
    }
    let names: Vec<&str> = probes.map(Node::name).collect();
    let lost: Vec<String> = manifest
        .unavailable
        .iter()
        .map(|u| format!("- {}: {}", u.name, u.reason))
        .collect();
    bail!(
        "no probe image can be built here (probes: {}):\n{}",
        names.join(", "),
        lost.join("\n")
    )
}

/// The `.cargo-checksum.json` of every crate vendored for the Rust recipes, as archive sources
/// (`vendor-checksums/<image>/<crate>/.cargo-checksum.json`); empty when nothing was vendored yet.
pub fn vendored_checksums(cache: &Cache, repo: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for recipe in recipe::discover(&repo.join("docker"))?
        .iter()
        .filter(|r| r.vendor)
    {
        let lock = recipe.cargo_lock(&repo.join("docker"));
        let vendor = build::vendor_dir(cache, lock.parent().context("a Cargo.lock's folder")?)?;
        let Ok(entries) = std::fs::read_dir(&vendor) else {
            continue;
        };
        let mut crates: Vec<_> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        crates.sort();
        for krate in crates {
            let file = vendor.join(&krate).join(".cargo-checksum.json");
            if file.is_file() {
                let name = format!(
                    "vendor-checksums/{}/{}/.cargo-checksum.json",
                    recipe.name,
                    krate.to_string_lossy()
                );
                out.push((name, file));
            }
        }
    }
    Ok(out)
}

/// A human-readable table of the manifest, its columns as wide as their longest entry.
pub fn table(manifest: &Manifest) -> String {
    let name_w = manifest
        .images
        .iter()
        .map(|i| i.name.chars().count())
        .chain(manifest.unavailable.iter().map(|u| u.name.chars().count()))
        .chain(["IMAGE".len()])
        .max()
        .unwrap_or(0);
    let tag_w = manifest
        .images
        .iter()
        .map(|i| i.tag.chars().count())
        .chain(["TAG".len()])
        .max()
        .unwrap_or(0);
    let row = |name: &str, tag: &str, state: &str, bin: &str| {
        format!("{name:<name_w$} {tag:<tag_w$} {state:<8} {bin}")
            .trim_end()
            .to_string()
            + "\n"
    };
    let mut out = row("IMAGE", "TAG", "STATE", "BINARIES (sha256)");
    for img in &manifest.images {
        let state = if img.built { "built" } else { "reused" };
        let mut bins = img
            .binaries
            .iter()
            .map(|(p, h)| format!("{p} {}", &h[..16]));
        out.push_str(&row(
            &img.name,
            &img.tag,
            state,
            &bins.next().unwrap_or_default(),
        ));
        for b in bins {
            out.push_str(&row("", "", "", &b));
        }
    }
    if !manifest.unavailable.is_empty() {
        out.push_str("\nUNAVAILABLE (not built on this machine)\n");
    }
    for u in &manifest.unavailable {
        out.push_str(&format!(
            "{:<name_w$} {}\n",
            u.name,
            u.reason.replace('\n', "\n    ")
        ));
    }
    out
}

#[cfg(test)]
mod table_tests;
#[cfg(test)]
mod tests;
