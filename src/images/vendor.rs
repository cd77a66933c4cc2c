//! Vendoring: a probe's dependencies fetched on the host, once, into the artifact cache and laid into
//! its build context, so that the image builds with no network. Cargo's crates go to `vendor/` (see
//! `artifact::vendor`); pip's wheels, Go's modules and npm's cache each have their module here.
//! Every vendored tree but Cargo's is hashed as the context's tar of it, and that hash is an input
//! of the image's tag (Cargo's `Cargo.lock` already holds the sha256 of every crate).

mod go;
mod npm;
mod pip;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::files::lock as locks;
use crate::files::write_atomic;
use crate::images::cache::Cache;
use crate::images::context;
use crate::images::pin::Pins;
use crate::images::recipe::{Recipe, Tool};

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
        Tool::Pip => pip::key(dir, recipe.pip_python.as_deref())?,
        Tool::Go => go::key(pins, source_tree)?,
        Tool::Npm => npm::key(source_tree)?,
        Tool::Cargo => unreachable!("cargo is vendored by artifact::vendor"),
    };
    let root = cache.root().join(format!("vendor-{tool}"));
    let memo = root.join(format!("{key}.json"));
    // One vendoring of this tree at a time on this machine: a build beside this one vendoring it too
    // is waited for, and its tree then found through the memo.
    let _one = match make {
        true => Some(locks::take_blocking(
            &locks::folder(),
            &locks::file_name("vendor-", &format!("{tool}-{key}")),
            &format!(
                "the vendoring of the {tool} dependencies of image {} (pid {})",
                recipe.name,
                std::process::id()
            ),
            |by| eprintln!("{}: waiting for {by}", recipe.name),
        )?),
        false => None,
    };
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
        Tool::Pip => pip::download(dir, recipe.pip_python.as_deref(), &tmp),
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
    write_atomic(&memo, serde_json::to_string_pretty(&made)?.as_bytes())?;
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
