//! The image stage: pins → verified artifacts (cached by sha256) → deterministic build contexts →
//! pinned images and their manifest.
//!
//! Images: a base image per root filesystem pin (imported), and one image per `docker/<name>/`
//! folder with an `image.yaml` recipe (toolchains, the sampler, probes), built offline through the
//! Engine. Tags are derived from the hash of all inputs, so unchanged inputs skip the build; the
//! build manifest records what went into every image and the sha256 of every binary in it, read
//! back from the image. An image whose pinned artifact cannot be produced here is not built, nor is
//! any image below it; the manifest lists them as unavailable. An image whose build fails is data
//! too: the manifest lists it and every image below it as failed, with the build's own error line,
//! and every other image is built (`--strict-build` stops at the first failure instead).
//!
//! Also the deterministic tar, cpio and EROFS writers and the streaming sha256 that later stages
//! reuse.
//! May import: `study`, `engine`, `files`, `yaml`, `stats`, `text`.

pub mod artifact;
mod base;
mod build;
/// A line of build output without its terminal colour codes.
pub use build::failure::plain_text;
pub mod cache;
pub mod context;
pub mod driver;
pub mod erofs;
pub mod initramfs;
pub mod lint;
mod manifest;
pub mod patch;
pub mod pin;
pub mod place;
pub mod plan;
pub mod recipe;
pub mod saved;
pub mod tags;
pub mod timing;
mod turn;
pub mod vendor;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::engine::Images;
use crate::images::cache::Cache;
use crate::images::pin::Pins;
use plan::{Graph, Node, Schedule};

use manifest::Outcome;
pub use manifest::{BuildOptions, BuiltImage, FailedImage, Manifest, UnavailableImage, namespace};
pub use turn::{Turn, builds_held_off, turn};

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

/// Builds (or reuses) every image, parents first, and returns the manifest. An image whose build
/// fails is recorded as failed with the images below it, and the others are built (unless
/// `options.strict`: then the build stops once the images being built beside it have finished).
/// Fails when no probe image can be built.
pub async fn build_all<E: Images>(
    engine: &E,
    cache: &Cache,
    pins: &Pins,
    repo: &Path,
    options: &BuildOptions,
) -> Result<Manifest> {
    Ok(build_all_timed(engine, cache, pins, repo, options).await?.0)
}

/// How long each image built or imported by one [`build_all_timed`] took, by short name (a
/// reused image is not there).
pub type BuildTimes = BTreeMap<String, std::time::Duration>;

/// [`build_all`], and how long each image it built or imported took.
pub async fn build_all_timed<E: Images>(
    engine: &E,
    cache: &Cache,
    pins: &Pins,
    repo: &Path,
    options: &BuildOptions,
) -> Result<(Manifest, BuildTimes)> {
    // Held from before the first build reads the artifact cache: no clean removes what they use.
    let _building = turn::building("the build").await?;
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
    let mut times = BuildTimes::new();
    let mut schedule = Schedule::new(&graph);
    // Images whose parents are all built go together: the Engine builds them side by side (the Go
    // toolchain's many small files are I/O-bound while the Rust chain compiles). Each one runs to
    // its end, whatever becomes of the others: a finished build is never thrown away.
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
        let outcomes = futures_util::future::join_all(builds).await;
        let mut stop = None;
        for (node, outcome) in ready.into_iter().zip(outcomes) {
            let done = (&mut manifest, &mut times);
            if let Err(e) = settle(&mut schedule, done, node.name(), outcome, options) {
                stop.get_or_insert(e);
            }
        }
        if let Some(e) = stop {
            return Err(e);
        }
    }
    manifest.unavailable = schedule
        .unavailable_images()
        .into_iter()
        .map(|(name, reason)| UnavailableImage {
            name,
            reason,
            notes: Vec::new(),
        })
        .collect();
    manifest.failed = schedule.failed_images();
    check_unbuilt(&graph, &mut manifest, options)?;
    check_probes(&graph, &manifest)?;
    Ok((manifest, times))
}

/// An image not built because a pin it stands on cannot be had here still has its declared
/// patches checked (each against its file's sha256 before and after) and keeps its deviations for
/// the report; a patch that does not hold fails the image as a failed build would (with
/// `--strict-build`, stops the build).
fn check_unbuilt(graph: &Graph, manifest: &mut Manifest, options: &BuildOptions) -> Result<()> {
    let mut unavailable = Vec::new();
    for mut image in std::mem::take(&mut manifest.unavailable) {
        let Some(Node::Recipe(recipe)) = graph.get(&image.name) else {
            unavailable.push(image);
            continue;
        };
        match recipe.check_patches() {
            Ok(()) => {
                image.notes = recipe.deviations();
                unavailable.push(image);
            }
            Err(e) if options.strict => return Err(e.context(format!("image {}", image.name))),
            Err(e) => {
                let error = format!("{e:#}").replace('\n', " ");
                eprintln!(
                    "{}: a declared patch does not hold (the image is not built here, its toolchain \
                     being unavailable, but its patches are checked): {error}",
                    image.name
                );
                manifest.failed.push(FailedImage {
                    name: image.name,
                    error,
                    parent: None,
                    output: Vec::new(),
                });
            }
        }
    }
    manifest.unavailable = unavailable;
    Ok(())
}

/// Records how the build of the image `name` ended; an `Err` stops the build once the images
/// built beside it have ended: the kit failing, or a failed build under `--strict-build`.
fn settle(
    schedule: &mut Schedule,
    (manifest, times): (&mut Manifest, &mut BuildTimes),
    name: &str,
    outcome: Result<Outcome>,
    options: &BuildOptions,
) -> Result<()> {
    match outcome? {
        Outcome::Built(image, took) => {
            schedule.built(name);
            manifest.images.push(image);
            times.extend(took.map(|t| (name.to_string(), t)));
        }
        Outcome::Drifted(image, took, drift) => {
            schedule.built(name);
            manifest.images.push(image);
            manifest.drift.push(drift);
            times.extend(took.map(|t| (name.to_string(), t)));
        }
        Outcome::Unavailable { pin, reason } => {
            eprintln!("{name}: unavailable, pin {pin} cannot be produced here");
            schedule.unavailable(name, plan::pin_reason(&pin, &reason));
        }
        Outcome::Failed {
            error,
            output,
            full,
        } => {
            let full = full.context(format!("image {name}"));
            if options.strict {
                return Err(full);
            }
            // A failed build's last lines; a failed recipe's error is said once, below.
            if !output.is_empty() {
                eprintln!("{full:#}");
            }
            eprintln!(
                "{name}: build failed: {error}; the images below it are not built, the others \
                 are (--strict-build stops at the first failure)"
            );
            schedule.failed(name, error, output);
        }
    }
    Ok(())
}

async fn build_node<E: Images>(
    kit: &build::Kit<'_, E>,
    node: &Node,
    done: &Manifest,
) -> Result<Outcome> {
    match node {
        Node::Rootfs { name, pin } => {
            let record = !kit.options.other_host;
            let how = (record, kit.options.strict_pins);
            base::import(kit.engine, kit.cache, name, kit.pins.get(pin)?, how).await
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
    let lost: Vec<String> = (manifest.unavailable.iter())
        .map(|u| format!("- {}: {}", u.name, u.reason))
        .chain(
            (manifest.failed.iter()).map(|f| format!("- {}: build failed: {}", f.name, f.reason())),
        )
        .collect();
    bail!(
        "no probe image can be built here (probes: {}):\n{}",
        names.join(", "),
        lost.join("\n")
    )
}

/// The `.cargo-checksum.json` of every crate vendored for the Rust recipes among `images` (a run's),
/// as archive sources (`vendor-checksums/<image>/<crate>/.cargo-checksum.json`); empty when nothing
/// was vendored yet. Other images' crates, which the cache may hold too, stay out: the archive is
/// the run's, whatever else this machine built.
pub fn vendored_checksums(
    cache: &Cache,
    repo: &Path,
    images: &std::collections::BTreeSet<String>,
) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for recipe in recipe::discover(&repo.join("docker"))?
        .iter()
        .filter(|r| r.vendor.has(recipe::Tool::Cargo) && images.contains(&r.name))
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
        .chain(manifest.failed.iter().map(|f| f.name.chars().count()))
        .chain(["IMAGE".len()])
        .max()
        .unwrap_or(0);
    let row = |name: &str, tag: &str, state: &str, bin: &str| {
        vec![
            name.to_string(),
            tag.to_string(),
            state.to_string(),
            bin.to_string(),
        ]
    };
    let mut rows = vec![row("IMAGE", "TAG", "STATE", "BINARIES (sha256)")];
    for img in &manifest.images {
        let state = if img.built { "built" } else { "reused" };
        let mut bins = img
            .binaries
            .iter()
            .map(|(p, h)| format!("{p} {}", &h[..16]));
        rows.push(row(
            &img.name,
            &img.tag,
            state,
            &bins.next().unwrap_or_default(),
        ));
        rows.extend(bins.map(|b| row("", "", "", &b)));
    }
    // The name column is as wide as every name below too; the state column at least 8.
    let mut out = crate::text::columns(&rows, "", " ", &[name_w, 0, 8]);
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
    if !manifest.failed.is_empty() {
        out.push_str("\nFAILED (build failed; their probes are not measured)\n");
    }
    for f in &manifest.failed {
        out.push_str(&format!(
            "{:<name_w$} build failed: {}\n",
            f.name,
            f.reason()
        ));
    }
    out
}

#[cfg(test)]
mod patch_build_tests;
#[cfg(test)]
mod table_tests;
#[cfg(test)]
mod tests;
