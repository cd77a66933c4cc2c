//! Vendoring: a probe's dependencies fetched on the host, once, into the artifact cache and laid into
//! its build context, so that the image builds with no network. Cargo's crates go to `vendor/` (see
//! `artifact::vendor`); pip's wheels, Go's modules and npm's cache each have their module here.
//! Every vendored tree but Cargo's is hashed as the context's tar of it, and that hash is an input
//! of the image's tag (Cargo's `Cargo.lock` already holds the sha256 of every crate).

mod go;
mod npm;
mod pip;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::images::cache::{self, Cache};
use crate::images::context;
use crate::images::pin::Pins;
use crate::images::recipe::Recipe;

/// A package manager whose dependencies a recipe vendors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tool {
    /// `cargo vendor --locked` into `vendor/`; the folder needs a `Cargo.lock`.
    Cargo,
    /// `pip download --require-hashes` into `wheelhouse/`; the folder needs a `requirements.txt`.
    Pip,
    /// `go mod vendor` with the pinned Go into `vendor/`; the folder needs a `go.mod`.
    Go,
    /// `npm ci` into a cache, `npm-vendor/`; the folder needs a `package-lock.json`.
    Npm,
}

impl Tool {
    /// Every tool, as `vendor:` names them.
    pub const ALL: [Tool; 4] = [Tool::Cargo, Tool::Pip, Tool::Go, Tool::Npm];

    /// The name `vendor:` writes.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Cargo => "cargo",
            Tool::Pip => "pip",
            Tool::Go => "go",
            Tool::Npm => "npm",
        }
    }

    /// The file of the folder the tool vendors from.
    pub fn lockfile(self) -> &'static str {
        match self {
            Tool::Cargo => "Cargo.lock",
            Tool::Pip => pip::REQUIREMENTS,
            Tool::Go => "go.mod",
            Tool::Npm => "package-lock.json",
        }
    }

    /// Where the vendored tree goes in the build context.
    pub fn context_path(self) -> &'static str {
        match self {
            Tool::Cargo | Tool::Go => "vendor",
            Tool::Pip => pip::WHEELHOUSE,
            Tool::Npm => npm::FOLDER,
        }
    }

    /// What to do when the lockfile is missing.
    pub fn lockfile_hint(self) -> &'static str {
        match self {
            Tool::Cargo => "run `cargo generate-lockfile` there and commit it",
            Tool::Pip => {
                "write it with every requirement pinned (`name==version`) and its `--hash=sha256:…` \
                 (`pip-compile --generate-hashes` or `pip hash` give them)"
            }
            Tool::Go => "run `go mod init` there, and `go mod tidy` to list the dependencies",
            Tool::Npm => "run `npm install --package-lock-only` there and commit it",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A recipe's `vendor:`: the tools whose dependencies are vendored, in order. `true` is `[cargo]`
/// (the form before other tools), `false` or nothing is none; one name or a list of names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vendor(pub Vec<Tool>);

impl Vendor {
    /// Whether `tool` is vendored.
    pub fn has(&self, tool: Tool) -> bool {
        self.0.contains(&tool)
    }

    /// Whether nothing is vendored.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Vendor {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| t.name()))
    }
}

impl<'de> Deserialize<'de> for Vendor {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(VendorVisitor)
    }
}

struct VendorVisitor;

const EXPECTED: &str = "`cargo`, `pip`, `go`, `npm`, a list of them, or true (cargo) / false";

fn tool<E: de::Error>(name: &str) -> Result<Tool, E> {
    Tool::ALL
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| E::custom(format!("unknown tool {name:?}; write {EXPECTED}")))
}

impl<'de> Visitor<'de> for VendorVisitor {
    type Value = Vendor;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Vendor, E> {
        Ok(Vendor(if v { vec![Tool::Cargo] } else { vec![] }))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vendor, E> {
        Ok(Vendor(vec![tool(v)?]))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vendor, E> {
        Ok(Vendor::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vendor, A::Error> {
        let mut tools = Vec::new();
        while let Some(name) = seq.next_element::<String>()? {
            let t = tool(&name)?;
            if tools.contains(&t) {
                return Err(de::Error::custom(format!("{name} is named twice")));
            }
            tools.push(t);
        }
        if tools.contains(&Tool::Cargo) && tools.contains(&Tool::Go) {
            return Err(de::Error::custom(
                "cargo and go both vendor into vendor/; build them in two images",
            ));
        }
        Ok(Vendor(tools))
    }
}

/// A tree vendored for a recipe, ready to lay into its build context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vendored {
    /// Where it goes in the build context.
    pub at: String,
    /// The tree in the cache.
    pub dir: PathBuf,
    /// sha256 of the context tar of the tree (an input of the tag, `vendor <tool>`).
    pub sha256: String,
    /// What vendored it on the host (`pip 23.2.1 (Python 3.11.7)`; an input, `vendor <tool> by`).
    pub by: String,
}

/// The trees of every tool but Cargo that `recipe` vendors from the sources in `dir`, each made
/// once per key into the cache (`source_tree` is the sha256 of the sources' context tar). A
/// vendoring that fails (a lockfile missing, the tool refusing the requirements, the tool missing
/// on this host) is the recipe's fault ([`RecipeFault`](super::build::failure::RecipeFault)),
/// naming its `vendor:` line, the tool and what to do.
pub fn vendor_all(
    cache: &Cache,
    pins: &Pins,
    recipe: &Recipe,
    dir: &Path,
    source_tree: &str,
) -> Result<Vec<(Tool, Vendored)>> {
    let mut out = Vec::new();
    for &tool in recipe.vendor.0.iter().filter(|t| **t != Tool::Cargo) {
        let made = one(cache, pins, recipe, tool, dir, source_tree, true).with_context(|| {
            format!(
                "vendoring the {tool} dependencies of image {} ({})",
                recipe.name,
                recipe_file(recipe)
            )
        })?;
        out.push((tool, made.context("vendoring made no tree")?));
    }
    Ok(out)
}

/// The trees `vendor_all` would give, where they were made before; `None` for a tool whose tree
/// is not in the cache yet (making it may reach the network, which a check without a build must not).
pub fn vendored_before(
    cache: &Cache,
    pins: &Pins,
    recipe: &Recipe,
    dir: &Path,
    source_tree: &str,
) -> Result<Vec<(Tool, Option<Vendored>)>> {
    let mut out = Vec::new();
    for &tool in recipe.vendor.0.iter().filter(|t| **t != Tool::Cargo) {
        out.push((
            tool,
            one(cache, pins, recipe, tool, dir, source_tree, false)?,
        ));
    }
    Ok(out)
}

fn recipe_file(recipe: &Recipe) -> String {
    match &recipe.file {
        Some(f) => format!("vendor: in {}", f.display()),
        None => format!("vendor: in docker/{}/image.yaml", recipe.name),
    }
}

/// One tool's tree, from the cache or made now (in a scratch folder, then moved in).
fn one(
    cache: &Cache,
    pins: &Pins,
    recipe: &Recipe,
    tool: Tool,
    dir: &Path,
    source_tree: &str,
    make: bool,
) -> Result<Option<Vendored>> {
    let lock = dir.join(tool.lockfile());
    if !lock.is_file() {
        let message = format!(
            "{} has no {}: {}",
            dir.display(),
            tool.lockfile(),
            tool.lockfile_hint()
        );
        return Err(fault(recipe, tool, anyhow::anyhow!(message)));
    }
    let key = match tool {
        Tool::Pip => pip::key(dir, recipe)?,
        Tool::Go => go::key(pins, source_tree)?,
        Tool::Npm => npm::key(source_tree)?,
        Tool::Cargo => unreachable!("cargo is vendored by artifact::vendor"),
    };
    let root = cache.root().join(format!("vendor-{tool}"));
    let memo = root.join(format!("{key}.json"));
    if let Ok(text) = std::fs::read_to_string(&memo)
        && let Ok(found) = serde_json::from_str::<Vendored>(&text)
        && found.dir.is_dir()
    {
        // The memo's sha256 becomes an input of the tag: the tree must still be the one hashed.
        let scratch = cache.scratch()?;
        let now = context::write(&found.dir, &[], &[], &scratch.path().join("tree.tar"))?;
        if now.sha256 == found.sha256 {
            return Ok(Some(found));
        }
        eprintln!(
            "{}: the vendored {tool} tree {} has sha256 {}, not the {} recorded when it was made \
             (it changed since): {}",
            recipe.name,
            found.dir.display(),
            now.sha256,
            found.sha256,
            if make {
                "vendoring it again"
            } else {
                "a build vendors it again"
            }
        );
    }
    if !make {
        return Ok(None);
    }
    let scratch = cache.scratch()?;
    let tmp = scratch.path().join("tree");
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let by = match tool {
        Tool::Pip => pip::download(dir, recipe, &tmp),
        Tool::Go => go::vendor(cache, pins, dir, scratch.path(), &tmp),
        Tool::Npm => npm::cache(dir, scratch.path(), &tmp),
        Tool::Cargo => unreachable!(),
    }
    .map_err(|e| fault(recipe, tool, e))?;
    // A tool with nothing to vendor may leave no folder (`go mod vendor` without dependencies).
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let tar = context::write(&tmp, &[], &[], &scratch.path().join("tree.tar"))?;
    let dest = root.join(&key);
    if dest.exists() {
        std::fs::remove_dir_all(&dest).with_context(|| format!("removing {}", dest.display()))?;
    }
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    std::fs::rename(&tmp, &dest)
        .with_context(|| format!("moving the vendored tree to {}", dest.display()))?;
    let made = Vendored {
        at: tool.context_path().to_string(),
        dir: dest,
        sha256: tar.sha256,
        by,
    };
    cache::write_atomic(&memo, serde_json::to_string_pretty(&made)?.as_bytes())?;
    eprintln!(
        "{}: vendored {tool} dependencies with {}",
        recipe.name, made.by
    );
    Ok(Some(made))
}

/// The vendoring of `tool` failing with `e` as the recipe's fault: one line (the recipe's `vendor:`
/// line and column, the first line of the error, the tool's first error line and what to do) and
/// everything the tool printed.
pub(super) fn fault(recipe: &Recipe, tool: Tool, e: anyhow::Error) -> anyhow::Error {
    let said = format!("{e:#}");
    let lines: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut message = format!(
        "vendor: the {tool} dependencies of image {} cannot be vendored: {}",
        recipe.name,
        lines.first().copied().unwrap_or_default()
    );
    let error = (lines.iter().skip(1)).find(|l| l.to_ascii_lowercase().contains("error"));
    if let Some(error) = error {
        message.push_str(&format!(" {error}"));
    }
    if let Some(todo) = lines.iter().find(|l| l.starts_with("To do: ")) {
        message.push_str(&format!("; {}", todo.replacen("To do: ", "to do: ", 1)));
    }
    let output = lines.iter().map(|l| l.to_string()).collect();
    super::build::failure::recipe_fault(recipe.file.as_deref(), "vendor", &message, output)
}

/// Copies the files of `from` to `to` as a build context takes them (`.git` and `target` folders,
/// and the top-level entries in `skip`, left out), through a tar in `scratch`.
fn copy_tree(from: &Path, to: &Path, scratch: &Path, skip: &[&str]) -> Result<()> {
    let tar = scratch.join(".copy.tar");
    context::write(from, &[], skip, &tar)?;
    let file = std::fs::File::open(&tar).with_context(|| format!("opening {}", tar.display()))?;
    tar::Archive::new(file)
        .unpack(to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    std::fs::remove_file(&tar).with_context(|| format!("removing {}", tar.display()))
}

/// Runs `cmd`; a failure (or a missing program) is an error with its output and `hint`.
fn run(cmd: &mut std::process::Command, what: &str, hint: &str) -> Result<String> {
    let output = cmd
        .output()
        .with_context(|| format!("running {what}: {hint}"))?;
    if !output.status.success() {
        let said: Vec<String> = [&output.stdout, &output.stderr]
            .iter()
            .map(|b| String::from_utf8_lossy(b).trim_end().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        bail!(
            "{what} failed ({}):\n{}\nTo do: {hint}",
            output.status,
            said.join("\n")
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

#[cfg(test)]
mod tests;
