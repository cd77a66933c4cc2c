//! Building one recipe's image through the Engine: its input hashes and tag, its deterministic build
//! context (folder, pinned artifacts, vendored crates), and what is read back from the image.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

use super::context::RECIPE;
use super::manifest::{BuildOptions, BuiltImage, Manifest, Outcome, namespace};
use super::recipe::Recipe;
use crate::engine::{BuildFailed, BuildSpec, CommandFailed, ImageFacts, Images};
use crate::files::digest;
use crate::images::artifact::{self, EnsureError};
use crate::images::cache::Cache;
use crate::images::context;
use crate::images::patch;
use crate::images::pin::Pins;
use crate::images::recipe::Tool;
use crate::images::vendor;

pub mod failure;

/// The label every built image carries: the JSON of its inputs. An image under a kit tag is reused
/// only when it carries the inputs the tag is named after.
pub const INPUTS_LABEL: &str = "parkbench.inputs";

/// What a build needs besides the recipe.
pub struct Kit<'a, E: Images> {
    /// Where images are built.
    pub engine: &'a E,
    /// Verified artifacts, vendored crates and image memos.
    pub cache: &'a Cache,
    /// Every pin of the repository.
    pub pins: &'a Pins,
    /// The repository root (holding `docker/`).
    pub repo: &'a Path,
    /// How to build.
    pub options: &'a BuildOptions,
}

/// Builds (or reuses) the image of `recipe`, whose parents are all in `done`.
pub async fn build<E: Images>(
    kit: &Kit<'_, E>,
    recipe: &Recipe,
    done: &Manifest,
) -> Result<Outcome> {
    let sources = kit.cache.scratch()?;
    let dir = source_dir(kit.repo, recipe, sources.path())?;
    // Hashing the sources and vendoring (pip, go, npm) block: not on the runtime's own threads.
    let made = tokio::task::block_in_place(|| {
        inputs(
            kit.cache,
            kit.pins,
            kit.repo,
            &dir,
            recipe,
            Vendoring::Make,
            &|p| parent_tag(done, p),
        )
    });
    let (inputs, vendored) = match made {
        Ok(made) => made,
        Err(e) => return recipes_fault(e),
    };
    let tag = format!(
        "{}/{}:{}",
        namespace(),
        recipe.name,
        &hash_inputs(&recipe.name, &inputs)[..16]
    );
    let _turn = super::turn::turn(&tag, &recipe.name).await?;
    let existing = kit.engine.image(&tag).await?;
    let built = !reusable(existing.as_ref(), &inputs, &recipe.name, &tag)? || kit.options.no_cache;
    let mut took = None;
    if built {
        match make(kit, recipe, (&dir, &vendored), (&tag, &inputs), done).await? {
            Ok(elapsed) => took = Some(elapsed),
            Err(outcome) => return Ok(outcome),
        }
    }
    let facts = kit
        .engine
        .image(&tag)
        .await?
        .with_context(|| format!("{tag} is missing after its build"))?;
    let (binaries, versions) =
        match contents(kit.engine, kit.cache, (&tag, &facts.id), recipe, done).await? {
            Ok(found) => found,
            Err(why) => {
                return Ok(Outcome::Failed {
                    full: anyhow::anyhow!("{why}"),
                    error: why,
                    output: Vec::new(),
                });
            }
        };
    Ok(Outcome::Built(
        BuiltImage {
            name: recipe.name.clone(),
            tag,
            id: facts.id,
            layers: facts.layers,
            inputs,
            binaries,
            versions,
            notes: recipe.deviations(),
            built,
        },
        took,
    ))
}

/// Builds the image of `recipe` from its sources in `dir` (with the trees `vendored` for it) as
/// `tag`: how long it took, or the outcome it ended in (unavailable, failed). The time is recorded
/// as this machine's unless the Engine is another host's.
async fn make<E: Images>(
    kit: &Kit<'_, E>,
    recipe: &Recipe,
    (dir, vendored): (&Path, &[vendor::Vendored]),
    (tag, inputs): (&str, &BTreeMap<String, String>),
    done: &Manifest,
) -> Result<Result<std::time::Duration, Outcome>> {
    super::timing::announce(kit.cache, &recipe.name, recipe.build_estimate);
    let started = std::time::Instant::now();
    let scratch = kit.cache.scratch()?;
    // Blocking work (hashing, tar writing, vendoring) must not stall the images built beside this one.
    let artifacts = match tokio::task::block_in_place(|| artifacts(kit, recipe)) {
        Ok(artifacts) => artifacts,
        Err(EnsureError::Unavailable { pin, reason }) => {
            return Ok(Err(Outcome::Unavailable { pin, reason }));
        }
        Err(e) => return Err(e.into()),
    };
    let context = match tokio::task::block_in_place(|| {
        write_context(kit, dir, recipe, artifacts, vendored, scratch.path())
    }) {
        Ok(context) => context,
        Err(e) => return recipes_fault(e).map(Err),
    };
    eprintln!(
        "{}: context ready in {:.1} s",
        recipe.name,
        started.elapsed().as_secs_f64()
    );
    if let Some(failed) = run_build(kit, recipe, &context.path, tag, inputs, done).await? {
        return Ok(Err(failed));
    }
    let took = started.elapsed();
    eprintln!("{}: built in {:.1} s", recipe.name, took.as_secs_f64());
    if !kit.options.other_host {
        super::timing::record(kit.cache, &recipe.name, tag, took);
    }
    Ok(Ok(took))
}

/// `e` as the image's failed outcome when it is the recipe's fault ([`failure::RecipeFault`]: a
/// patch that no longer applies, vendoring that fails); any other error is the kit's, and stops
/// the build.
fn recipes_fault(e: anyhow::Error) -> Result<Outcome> {
    let Some(fault) = e.downcast_ref::<failure::RecipeFault>().cloned() else {
        return Err(e);
    };
    // What the tool printed is shown before the one line (as a failed build's last lines are).
    let full = match fault.output.as_slice() {
        [] => e,
        said => anyhow::anyhow!("{}", said.join("\n")),
    };
    Ok(Outcome::Failed {
        error: fault.line,
        output: fault.output,
        full,
    })
}

/// True when the image `existing` under `tag` may be reused: its [`INPUTS_LABEL`] is the JSON of
/// `inputs`. One that is there without it is said to be rebuilt.
fn reusable(
    existing: Option<&ImageFacts>,
    inputs: &BTreeMap<String, String>,
    name: &str,
    tag: &str,
) -> Result<bool> {
    let Some(facts) = existing else {
        return Ok(false);
    };
    let expected = serde_json::to_string(inputs)?;
    if facts.labels.get(INPUTS_LABEL) == Some(&expected) {
        return Ok(true);
    }
    // A tag is only a name: an image put there by anything but this build (a load, a tag set by
    // hand) is not reused, whatever it holds.
    eprintln!(
        "{name}: {tag} is here but its {INPUTS_LABEL} label does not name the inputs it is built \
         from (parkbench did not build it from these sources): rebuilding it"
    );
    Ok(false)
}

/// Runs the Engine's build of `context` as `tag`: `None` when it built, the failed build (its
/// error line and last lines) when the Engine says the build failed; an `Err` when the Engine or
/// the machine failed.
async fn run_build<E: Images>(
    kit: &Kit<'_, E>,
    recipe: &Recipe,
    context: &Path,
    tag: &str,
    inputs: &BTreeMap<String, String>,
    done: &Manifest,
) -> Result<Option<Outcome>> {
    let buildargs = recipe
        .parents
        .iter()
        .map(|(arg, parent)| Ok((arg.clone(), parent_tag(done, parent)?)))
        .collect::<Result<BTreeMap<_, _>>>()?;
    let labels = BTreeMap::from([
        ("parkbench.image".to_string(), recipe.name.clone()),
        (INPUTS_LABEL.to_string(), serde_json::to_string(inputs)?),
    ]);
    let spec = BuildSpec {
        context: context.to_owned(),
        tag: tag.to_owned(),
        buildargs,
        labels,
        no_cache: kit.options.no_cache,
        // A rebuild happens when the inputs change, which its build stages' steps mostly copy:
        // their cache would seldom serve, and a stage from the imported base carries no label.
        keep_stages: false,
        cpu_shares: kit
            .options
            .beside
            .then_some(super::manifest::BESIDE_CPU_SHARES),
    };
    eprintln!("{}: building {tag}", recipe.name);
    let mut tail = Vec::new();
    let verbose = kit.options.verbose;
    let result = kit
        .engine
        .build(&spec, |line| {
            if verbose {
                eprintln!("  {line}");
            }
            // One message of the Engine may hold several lines.
            tail.extend(line.lines().map(str::to_owned));
        })
        .await;
    let Err(e) = result else { return Ok(None) };
    let last = tail[tail.len().saturating_sub(failure::TAIL)..].to_vec();
    let shown = last.join("\n");
    let Some(engine) = e.downcast_ref::<BuildFailed>() else {
        return Err(e).context(format!("build output (last lines):\n{shown}"));
    };
    let error = failure::error_line(&tail, &engine.message);
    let full = e.context(format!("build output (last lines):\n{shown}"));
    Ok(Some(Outcome::Failed {
        error,
        output: last.iter().map(|l| failure::plain_text(l)).collect(),
        full,
    }))
}

/// The input `vendor <tool>` of a tree not vendored yet, when the inputs are only looked at
/// ([`Vendoring::LookOnly`]): no build gives that tag.
pub const NOT_VENDORED: &str = "not vendored yet";

/// Whether computing a recipe's inputs may vendor its dependencies (which may reach the network),
/// or only looks for trees vendored before (a check that builds nothing).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Vendoring {
    Make,
    LookOnly,
}

/// The input hashes of a recipe (whose sources are in `dir`): its source tree, its lockfile, its
/// artifacts and its parents' tags (`parent_tag` of a parent's name); and the trees vendored for
/// it (with `Vendoring::LookOnly`, those made before).
pub(super) fn inputs(
    cache: &Cache,
    pins: &Pins,
    repo: &Path,
    dir: &Path,
    recipe: &Recipe,
    vendoring: Vendoring,
    parent_tag: &dyn Fn(&str) -> Result<String>,
) -> Result<(BTreeMap<String, String>, Vec<vendor::Vendored>)> {
    let mut inputs = BTreeMap::new();
    let mut trees = Vec::new();
    let scratch = cache.scratch()?;
    let tree = context::write(dir, &[], &[RECIPE], &scratch.path().join("source-tree.tar"))?;
    let vendored = match vendoring {
        Vendoring::Make => vendor::vendor_all(cache, pins, recipe, dir, &tree.sha256)?
            .into_iter()
            .map(|(tool, made)| (tool, Some(made)))
            .collect(),
        Vendoring::LookOnly => vendor::vendored_before(cache, pins, recipe, dir, &tree.sha256)?,
    };
    for (tool, made) in vendored {
        let (sha256, by) = match made {
            Some(made) => {
                let hashed = (made.sha256.clone(), made.by.clone());
                trees.push(made);
                hashed
            }
            // No build has this tag: the image shows as one to build.
            None => (NOT_VENDORED.to_string(), String::new()),
        };
        inputs.insert(format!("vendor {tool}"), sha256);
        inputs.insert(format!("vendor {tool} by"), by);
    }
    inputs.insert("source tree".to_string(), tree.sha256);
    for p in &recipe.patches {
        inputs.insert(
            format!("patch {}", p.patch),
            digest::file(&dir.join(&p.patch))?,
        );
    }
    for lock in ["Cargo.lock", "go.sum"] {
        if dir.join(lock).is_file() {
            inputs.insert(lock.to_string(), digest::file(&dir.join(lock))?);
        }
    }
    for pin in recipe.artifacts.values() {
        let pin = pins.get(pin)?;
        inputs.insert(
            format!("artifact {} {}", pin.name, pin.version),
            pin.sha256.clone(),
        );
    }
    for (arg, parent) in &recipe.parents {
        inputs.insert(format!("parent {arg}"), parent_tag(parent)?);
    }
    if let Some(base) = &recipe.variant_of {
        inputs.insert("variant of".to_string(), base.clone());
    }
    for file in recipe.shared.values() {
        let path = repo.join("docker").join(file);
        inputs.insert(format!("shared {file}"), digest::file(&path)?);
    }
    Ok((inputs, trees))
}

/// The folder the image is built from: `docker/<name>/`, or a copy in `scratch` of the folder a
/// variant is a variant of with the variant's own files laid over it, and of the recipe's shared
/// files laid over both.
pub fn source_dir(repo: &Path, recipe: &Recipe, scratch: &Path) -> Result<PathBuf> {
    let docker = repo.join("docker");
    let own = docker.join(&recipe.name);
    if recipe.variant_of.is_none() && recipe.shared.is_empty() {
        return Ok(own);
    }
    let merged = scratch.join("source");
    let mut layers = vec![recipe.base_folder(&docker)];
    if recipe.variant_of.is_some() {
        layers.push(own);
    }
    for from in layers {
        copy_tree(&from, &merged)
            .with_context(|| format!("laying {} into the image's sources", from.display()))?;
    }
    for (at, file) in recipe.shared_files(&docker) {
        let dest = merged.join(&at);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::copy(&file, &dest)
            .with_context(|| format!("laying {} into the build context as {at}", file.display()))?;
    }
    Ok(merged)
}

/// Copies the files below `from` (but its recipe file and the folders a build context leaves out)
/// to the same places below `to`. A symbolic link is refused: the sources it copies are plain files.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let walk = walkdir::WalkDir::new(from).sort_by_file_name().into_iter();
    let skipped = |e: &walkdir::DirEntry| {
        e.depth() == 1
            && e.file_type().is_dir()
            && matches!(e.file_name().to_str(), Some(".git" | "target" | "vendor"))
    };
    for entry in walk.filter_entry(|e| !skipped(e)) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(from)?;
        let dest = to.join(rel);
        ensure!(
            !entry.path_is_symlink(),
            "{} is a symbolic link: the sources of a variant or of an image with shared files \
             (and the folder it is a variant of) hold plain files; replace the link with the file",
            entry.path().display()
        );
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest)?;
        } else if rel != Path::new(RECIPE) {
            std::fs::copy(entry.path(), &dest)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// The recipe's pinned artifacts (verified now, right before use), as context entries.
fn artifacts<E: Images>(
    kit: &Kit<'_, E>,
    recipe: &Recipe,
) -> Result<Vec<(String, PathBuf)>, EnsureError> {
    let mut out = Vec::new();
    for (file, pin) in &recipe.artifacts {
        let pin = kit.pins.get(pin).map_err(EnsureError::Stop)?;
        out.push((file.clone(), artifact::ensure(kit.cache, pin)?.path));
    }
    Ok(out)
}

/// The build context: the recipe's folder (without its recipe file, and with its patched files in
/// place of the published ones), its pinned artifacts and its vendored dependencies (`trees`, the
/// ones its inputs were hashed from).
fn write_context<E: Images>(
    kit: &Kit<'_, E>,
    dir: &Path,
    recipe: &Recipe,
    mut extra: Vec<(String, PathBuf)>,
    trees: &[vendor::Vendored],
    scratch: &Path,
) -> Result<context::Context> {
    if recipe.vendor.has(Tool::Cargo) {
        extra.push((
            "vendor".to_string(),
            vendored(kit.cache, recipe, dir, scratch)?,
        ));
    }
    extra.extend(trees.iter().map(|t| (t.at.clone(), t.dir.clone())));
    let patched = patch::apply_all(&recipe.patches, dir, recipe.file.as_deref(), scratch)?;
    let mut skip = vec![RECIPE];
    skip.extend(patched.iter().map(|(at, _)| at.as_str()));
    extra.extend(patched.iter().cloned());
    context::write(
        dir,
        &extra,
        &skip,
        &scratch.join(format!("context-{}.tar", recipe.name)),
    )
}

/// The crates of `dir`'s Cargo.lock, vendored once per lockfile into the cache; `cargo vendor`
/// failing is the recipe's fault.
fn vendored(cache: &Cache, recipe: &Recipe, dir: &Path, scratch: &Path) -> Result<PathBuf> {
    vendored_with(cache, dir, scratch, |e| {
        vendor::fault(recipe, Tool::Cargo, e)
    })
}

/// The crates of `dir`'s Cargo.lock, vendored once into the cache; a failure to vendor is told by
/// `fault`.
pub fn vendored_with(
    cache: &Cache,
    dir: &Path,
    scratch: &Path,
    fault: impl FnOnce(anyhow::Error) -> anyhow::Error,
) -> Result<PathBuf> {
    let vendor = vendor_dir(cache, dir)?;
    if !vendor.is_dir() {
        // Vendored into a scratch folder and renamed, so an interrupted vendoring leaves nothing.
        let tmp = scratch.join("vendor");
        artifact::vendor(dir, &tmp).map_err(fault)?;
        let parent = vendor.parent().context("vendor folder")?;
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        // Another build may have vendored the same crates meanwhile: theirs are as good.
        if let Err(e) = std::fs::rename(&tmp, &vendor)
            && !vendor.is_dir()
        {
            return Err(e)
                .with_context(|| format!("moving vendored crates to {}", vendor.display()));
        }
    }
    Ok(vendor)
}

/// Where the crates of `dir`'s Cargo.lock are vendored in the cache.
pub fn vendor_dir(cache: &Cache, dir: &Path) -> Result<PathBuf> {
    let lock = digest::file(&dir.join("Cargo.lock"))?;
    Ok(cache.root().join("vendor").join(lock))
}

fn parent_tag(done: &Manifest, name: &str) -> Result<String> {
    done.get(name)
        .map(|i| i.tag.clone())
        .with_context(|| format!("parent image {name} was not built first"))
}

/// The hash a tag is named after: the image's name, then one `\n<input>=<hash or tag>` per input.
pub(super) fn hash_inputs(name: &str, inputs: &BTreeMap<String, String>) -> String {
    let mut text = name.to_owned();
    for (k, v) in inputs {
        text.push_str(&format!("\n{k}={v}"));
    }
    digest::bytes(text.as_bytes())
}

/// What the manifest records of an image's contents: binary hashes and tool versions.
type Contents = (BTreeMap<String, String>, BTreeMap<String, String>);

/// Binary hashes and tool versions of an image, read through the Engine once per image ID and
/// recipe (an image's contents never change under the same ID) and kept in the cache. A version
/// command that exits non-zero or whose program is missing is the recipe's fault: `Ok(Err(why))`,
/// the whole error in one line; any other failure of the Engine is an `Err`.
async fn contents<E: Images>(
    engine: &E,
    cache: &Cache,
    (tag, id): (&str, &str),
    recipe: &Recipe,
    done: &Manifest,
) -> Result<Result<Contents, String>> {
    // What is read back is the recipe's to say (image.yaml is no input of the tag).
    let asked = serde_json::to_string(&(&recipe.binaries, &recipe.versions))?;
    let memo = cache.root().join("images").join(format!(
        "{}-{}.json",
        id.trim_start_matches("sha256:"),
        &digest::bytes(asked.as_bytes())[..16]
    ));
    if let Ok(text) = std::fs::read_to_string(&memo)
        && let Ok(found) = serde_json::from_str(&text)
    {
        return Ok(Ok(found));
    }
    let mut binaries = BTreeMap::new();
    for path in &recipe.binaries {
        let data = engine.read_file(tag, path).await?;
        binaries.insert(path.clone(), digest::bytes(&data));
    }
    let mut versions = BTreeMap::new();
    for (label, command) in &recipe.versions {
        let (image, shown) = match &command.parent {
            Some(arg) => {
                let parent = &recipe.parents[arg];
                (
                    parent_tag(done, parent)?,
                    format!("the parent {arg} ({parent})"),
                )
            }
            None => (tag.to_owned(), format!("the final image {tag}")),
        };
        let cmd: Vec<&str> = command.run.iter().map(String::as_str).collect();
        match engine.output(&image, &cmd, "version").await {
            Ok(out) => match command.recorded(&out) {
                Ok(recorded) => _ = versions.insert(label.clone(), recorded),
                Err(why) => return Ok(Err(recipe.version_unmatched(label, &why))),
            },
            // Exiting non-zero or missing its program is the recipe's fault; the Engine going away
            // or a timeout is not, and stops the build as any Engine failure does.
            Err(e) if e.downcast_ref::<CommandFailed>().is_some() => {
                return Ok(Err(recipe.version_failed(label, &shown, &e)));
            }
            Err(e) => return Err(e.context(format!("running `{label}` of {shown}"))),
        }
    }
    let found = (binaries, versions);
    crate::files::write_atomic(&memo, serde_json::to_string_pretty(&found)?.as_bytes())?;
    Ok(Ok(found))
}
