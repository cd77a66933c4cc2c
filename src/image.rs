//! Images: the Debian base (imported from a pinned rootfs), the toolchain images, the sampler and the
//! probe images, built offline through the Engine. Tags are derived from the hash of all inputs, so
//! unchanged inputs skip the build; the build manifest records what went into every image and the
//! sha256 of every binary in it, read back from the image.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::artifact;
use crate::cache::Cache;
use crate::context;
use crate::engine::Engine;
use crate::pin::Pins;

/// The build manifest (`manifest.json`): every image parkbench built or reused, and what is in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Images in build order: base, toolchains, sampler, probes.
    pub images: Vec<BuiltImage>,
}

/// One image of the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuiltImage {
    /// Short name (`base`, `toolchain-rust`, `rust-tokio`, …); probes are named after their `docker/` folder.
    pub name: String,
    /// Tag, `parkbench/<name>:<first 16 hex digits of the input hash>`.
    pub tag: String,
    /// Image ID (`sha256:…`). Not stable across hosts (an image records its creation time); the layer
    /// diff-IDs and binary hashes are.
    pub id: String,
    /// Layer diff-IDs (`sha256:…`), bottom first.
    pub layers: Vec<String>,
    /// Every input by name and sha256 (source tree, lockfiles, toolchain artifacts) or tag (parent images).
    pub inputs: BTreeMap<String, String>,
    /// sha256 of every binary in the image, by absolute path inside the image.
    pub binaries: BTreeMap<String, String>,
    /// Tool versions reported from inside the image (`rustc -vV`, `go version`).
    pub versions: BTreeMap<String, String>,
    /// True when this invocation built or imported the image; false when an existing one was reused.
    pub built: bool,
}

impl Manifest {
    /// The image with this short name.
    pub fn get(&self, name: &str) -> Option<&BuiltImage> {
        self.images.iter().find(|i| i.name == name)
    }
}

/// Build options.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Rebuild every image without the Engine's build cache.
    pub no_cache: bool,
    /// Print every line the builds print.
    pub verbose: bool,
}

/// Picks one pin out of the set.
type PinOf = fn(&Pins) -> &crate::pin::Pin;

/// A built image's recipe: its `docker/` folder, what goes into the context, its parents and binaries.
struct Recipe {
    name: &'static str,
    /// A pinned artifact placed in the context under this file name.
    artifact: Option<(&'static str, PinOf)>,
    /// Vendor the folder's crates (`cargo vendor --locked`) into `vendor/`.
    vendor: bool,
    /// Build args naming parent images: (ARG, image name).
    parents: &'static [(&'static str, &'static str)],
    binaries: &'static [&'static str],
    versions: &'static [(&'static str, &'static [&'static str])],
}

const PROBE_BINARIES: &[&str] = &["/usr/local/bin/sampler", "/usr/local/bin/probe"];

const RECIPES: &[Recipe] = &[
    Recipe {
        name: "toolchain-rust",
        artifact: Some(("rust.tar", |p| &p.rust)),
        vendor: false,
        parents: &[("BASE", "base")],
        binaries: &["/opt/rust/bin/rustc", "/opt/rust/bin/cargo"],
        versions: &[
            ("rustc -vV", &["rustc", "-vV"]),
            ("cargo -V", &["cargo", "-V"]),
        ],
    },
    Recipe {
        name: "toolchain-go",
        artifact: Some(("go.tar", |p| &p.go)),
        vendor: false,
        parents: &[("BASE", "base")],
        binaries: &["/opt/go/bin/go"],
        versions: &[("go version", &["go", "version"])],
    },
    Recipe {
        name: "sampler",
        artifact: None,
        vendor: true,
        parents: &[("RUST", "toolchain-rust")],
        binaries: &["/sampler"],
        versions: &[],
    },
    Recipe {
        name: "rust-tokio",
        artifact: None,
        vendor: true,
        parents: &[
            ("BASE", "base"),
            ("RUST", "toolchain-rust"),
            ("SAMPLER", "sampler"),
        ],
        binaries: PROBE_BINARIES,
        versions: &[],
    },
    Recipe {
        name: "go",
        artifact: None,
        vendor: false,
        parents: &[
            ("BASE", "base"),
            ("GO", "toolchain-go"),
            ("SAMPLER", "sampler"),
        ],
        binaries: PROBE_BINARIES,
        versions: &[],
    },
];

/// The repository prefix of every tag: `parkbench`, or `PARKBENCH_NAMESPACE` (tests use their own, so a
/// cold build from nothing never disturbs the user's images).
pub fn namespace() -> String {
    std::env::var("PARKBENCH_NAMESPACE").unwrap_or_else(|_| "parkbench".to_string())
}

/// Names of the probe images (folders under `docker/` that a study's `probes[].image` may name).
pub fn probe_names() -> Vec<&'static str> {
    RECIPES
        .iter()
        .filter(|r| r.binaries == PROBE_BINARIES)
        .map(|r| r.name)
        .collect()
}

/// Builds (or reuses) every image, in order, and returns the manifest.
pub async fn build_all(
    engine: &Engine,
    cache: &Cache,
    pins: &Pins,
    repo: &Path,
    options: &BuildOptions,
) -> Result<Manifest> {
    let mut manifest = Manifest::default();
    let base = base_image(engine, cache, pins).await?;
    manifest.images.push(base);
    // Images whose parents are all built go together: the Engine builds them side by side (the Go
    // toolchain's many small files are I/O-bound while the Rust chain compiles).
    let mut waiting: Vec<&Recipe> = RECIPES.iter().collect();
    while !waiting.is_empty() {
        let (ready, rest): (Vec<&Recipe>, Vec<&Recipe>) = waiting
            .into_iter()
            .partition(|r| r.parents.iter().all(|(_, p)| manifest.get(p).is_some()));
        if ready.is_empty() {
            bail!("image recipes name parents that no recipe builds");
        }
        let builds = ready.iter().map(|recipe| async {
            build_one(engine, cache, pins, repo, recipe, &manifest, options)
                .await
                .with_context(|| format!("image {}", recipe.name))
        });
        let built = futures_util::future::try_join_all(builds).await?;
        manifest.images.extend(built);
        waiting = rest;
    }
    Ok(manifest)
}

/// The base image: the pinned rootfs imported as a single layer. Its identity is the layer diff-ID
/// (= the rootfs sha256); the import, and so the rootfs itself, is skipped when the tag already
/// carries that layer.
async fn base_image(engine: &Engine, cache: &Cache, pins: &Pins) -> Result<BuiltImage> {
    let pin = &pins.base;
    let diff_id = format!("sha256:{}", pin.sha256);
    let repo = format!("{}/base", namespace());
    let tag = format!("{repo}:{}", &pin.sha256[..16]);
    let existing = engine.image(&tag).await?;
    let built = !matches!(&existing, Some(img) if img.layers == [diff_id.clone()]);
    if built {
        let started = std::time::Instant::now();
        let rootfs = tokio::task::block_in_place(|| artifact::ensure(cache, pin))
            .context("the Debian base rootfs")?;
        eprintln!(
            "base: rootfs ready in {:.1} s ({})",
            started.elapsed().as_secs_f64(),
            rootfs.source
        );
        engine
            .import(&rootfs.path, &repo, &pin.sha256[..16])
            .await?;
        eprintln!(
            "base: imported {tag} in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    let facts = engine
        .image(&tag)
        .await?
        .context("the imported base image is missing")?;
    if facts.layers != [diff_id.clone()] {
        bail!(
            "the imported base image {tag} has layers {:?}, expected exactly {diff_id}: the Engine changed the rootfs",
            facts.layers
        );
    }
    Ok(BuiltImage {
        name: "base".into(),
        tag,
        id: facts.id,
        layers: facts.layers,
        inputs: BTreeMap::from([(
            format!("rootfs {} {}", pin.name, pin.version),
            pin.sha256.clone(),
        )]),
        binaries: BTreeMap::new(),
        versions: BTreeMap::new(),
        built,
    })
}

async fn build_one(
    engine: &Engine,
    cache: &Cache,
    pins: &Pins,
    repo: &Path,
    recipe: &Recipe,
    done: &Manifest,
    options: &BuildOptions,
) -> Result<BuiltImage> {
    let dir = repo.join("docker").join(recipe.name);
    let inputs = inputs(cache, pins, &dir, recipe, done)?;
    let tag = format!(
        "{}/{}:{}",
        namespace(),
        recipe.name,
        &hash_inputs(recipe.name, &inputs)[..16]
    );
    let existing = engine.image(&tag).await?;
    let built = existing.is_none() || options.no_cache;
    if built {
        let started = std::time::Instant::now();
        let scratch = cache.scratch()?;
        // Blocking work (hashing, tar writing, vendoring) must not stall the images built beside this one.
        let context = tokio::task::block_in_place(|| {
            write_context(cache, pins, &dir, recipe, scratch.path())
        })?;
        eprintln!(
            "{}: context ready in {:.1} s",
            recipe.name,
            started.elapsed().as_secs_f64()
        );
        let buildargs = recipe
            .parents
            .iter()
            .map(|(arg, parent)| Ok((arg.to_string(), parent_tag(done, parent)?)))
            .collect::<Result<BTreeMap<_, _>>>()?;
        let labels = BTreeMap::from([
            ("parkbench.image".to_string(), recipe.name.to_string()),
            (
                "parkbench.inputs".to_string(),
                serde_json::to_string(&inputs)?,
            ),
        ]);
        eprintln!("{}: building {tag}", recipe.name);
        let mut tail = Vec::new();
        let result = engine
            .build(
                &context.path,
                &tag,
                &buildargs,
                &labels,
                options.no_cache,
                |line| {
                    if options.verbose {
                        eprintln!("  {line}");
                    }
                    tail.push(line.to_string());
                },
            )
            .await;
        if let Err(e) = result {
            let tail = tail
                .iter()
                .rev()
                .take(30)
                .rev()
                .cloned()
                .collect::<Vec<_>>()
                .join("\n");
            return Err(e).context(format!("build output (last lines):\n{tail}"));
        }
        eprintln!(
            "{}: built in {:.1} s",
            recipe.name,
            started.elapsed().as_secs_f64()
        );
    }
    let facts = engine
        .image(&tag)
        .await?
        .with_context(|| format!("{tag} is missing after its build"))?;
    let (binaries, versions) = contents(engine, cache, &tag, &facts.id, recipe).await?;
    Ok(BuiltImage {
        name: recipe.name.into(),
        tag,
        id: facts.id,
        layers: facts.layers,
        inputs,
        binaries,
        versions,
        built,
    })
}

/// The input hashes of a recipe: its source tree, its lockfile, its artifact and its parents' tags.
fn inputs(
    cache: &Cache,
    pins: &Pins,
    dir: &Path,
    recipe: &Recipe,
    done: &Manifest,
) -> Result<BTreeMap<String, String>> {
    if !dir.join("Dockerfile").is_file() {
        bail!(
            "{} has no Dockerfile; is this the parkbench repository?",
            dir.display()
        );
    }
    let mut inputs = BTreeMap::new();
    let scratch = cache.scratch()?;
    let tree = context::write(dir, &[], &scratch.path().join("source-tree.tar"))?;
    inputs.insert("source tree".to_string(), tree.sha256);
    for lock in ["Cargo.lock", "go.sum"] {
        if dir.join(lock).is_file() {
            inputs.insert(lock.to_string(), crate::cache::hash_file(&dir.join(lock))?);
        }
    }
    if let Some((_, pin_of)) = recipe.artifact {
        let pin = pin_of(pins);
        inputs.insert(
            format!("artifact {} {}", pin.name, pin.version),
            pin.sha256.clone(),
        );
    }
    for (arg, parent) in recipe.parents {
        inputs.insert(format!("parent {arg}"), parent_tag(done, parent)?);
    }
    Ok(inputs)
}

/// The build context: the recipe's folder, its pinned artifact (verified now, right before use) and
/// its vendored crates.
fn write_context(
    cache: &Cache,
    pins: &Pins,
    dir: &Path,
    recipe: &Recipe,
    scratch: &Path,
) -> Result<context::Context> {
    let mut extra: Vec<(String, PathBuf)> = Vec::new();
    if let Some((file, pin_of)) = recipe.artifact {
        let artifact = artifact::ensure(cache, pin_of(pins))?;
        extra.push((file.to_string(), artifact.path));
    }
    if recipe.vendor {
        let lock = crate::cache::hash_file(&dir.join("Cargo.lock"))?;
        let vendor = cache.root().join("vendor").join(&lock);
        if !vendor.is_dir() {
            // Vendored into a scratch folder and renamed, so an interrupted vendoring leaves nothing.
            let tmp = scratch.join("vendor");
            artifact::vendor(dir, &tmp)?;
            std::fs::create_dir_all(vendor.parent().context("vendor folder")?)?;
            std::fs::rename(&tmp, &vendor)
                .with_context(|| format!("moving vendored crates to {}", vendor.display()))?;
        }
        extra.push(("vendor".to_string(), vendor));
    }
    context::write(
        dir,
        &extra,
        &scratch.join(format!("context-{}.tar", recipe.name)),
    )
}

/// The `.cargo-checksum.json` of every crate vendored for the Rust recipes, as archive sources
/// (`vendor-checksums/<image>/<crate>/.cargo-checksum.json`); empty when nothing was vendored yet.
pub fn vendored_checksums(cache: &Cache, repo: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for recipe in RECIPES.iter().filter(|r| r.vendor) {
        let dir = repo.join("docker").join(recipe.name);
        let vendor = cache
            .root()
            .join("vendor")
            .join(crate::cache::hash_file(&dir.join("Cargo.lock"))?);
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

fn parent_tag(done: &Manifest, name: &str) -> Result<String> {
    done.get(name)
        .map(|i| i.tag.clone())
        .with_context(|| format!("parent image {name} was not built first"))
}

fn hash_inputs(name: &str, inputs: &BTreeMap<String, String>) -> String {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    for (k, v) in inputs {
        h.update(format!("\n{k}={v}").as_bytes());
    }
    hex::encode(h.finalize())
}

/// Binary hashes and tool versions of an image, read through the Engine once per image ID and kept
/// in the cache (an image's contents never change under the same ID).
async fn contents(
    engine: &Engine,
    cache: &Cache,
    tag: &str,
    id: &str,
    recipe: &Recipe,
) -> Result<(BTreeMap<String, String>, BTreeMap<String, String>)> {
    let memo = cache
        .root()
        .join("images")
        .join(format!("{}.json", id.trim_start_matches("sha256:")));
    if let Ok(text) = std::fs::read_to_string(&memo)
        && let Ok(found) = serde_json::from_str(&text)
    {
        return Ok(found);
    }
    let mut binaries = BTreeMap::new();
    for path in recipe.binaries {
        let data = engine.read_file(tag, path).await?;
        binaries.insert(path.to_string(), hex::encode(Sha256::digest(&data)));
    }
    let mut versions = BTreeMap::new();
    for (label, cmd) in recipe.versions {
        versions.insert(label.to_string(), engine.output(tag, cmd, "version").await?);
    }
    let found = (binaries, versions);
    crate::cache::write_atomic(&memo, serde_json::to_string_pretty(&found)?.as_bytes())?;
    Ok(found)
}

/// A human-readable table of the manifest.
pub fn table(manifest: &Manifest) -> String {
    let mut out = format!(
        "{:<16} {:<42} {:<8} {}\n",
        "IMAGE", "TAG", "STATE", "BINARIES (sha256)"
    );
    for img in &manifest.images {
        let state = if img.built { "built" } else { "reused" };
        let mut bins = img
            .binaries
            .iter()
            .map(|(p, h)| format!("{p} {}", &h[..16]));
        out.push_str(&format!(
            "{:<16} {:<42} {:<8} {}\n",
            img.name,
            img.tag,
            state,
            bins.next().unwrap_or_default()
        ));
        for b in bins {
            out.push_str(&format!("{:<68} {b}\n", ""));
        }
    }
    out
}
