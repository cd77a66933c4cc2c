//! Declared patches: unified diffs a recipe applies to third-party sources while its build context is
//! written, each checked against the sha256 of its file before and after. The folder keeps the
//! file as published beside its patch; only the build context holds the patched file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::files::digest;
use crate::yaml::Invalid;

/// One entry of a recipe's `patches:`: a unified diff (`diff -u`, `git diff`) of one file.
///
/// ```yaml
/// patches:
///   - patch: unused-import.diff
///     file: main.go
///     sha256_before: 5f0c…
///     sha256_after: 9a1e…
///     reason: the published main.go imports "os" without using it, which Go refuses to compile
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    /// The diff: a file of the image folder (a relative path, e.g. `patches/unused-import.diff`).
    pub patch: String,
    /// The file it changes: a relative path in the build context (e.g. `main.go`), as published.
    pub file: String,
    /// sha256 of `file` as published, before the patch (64 lowercase hex digits).
    pub sha256_before: String,
    /// sha256 of `file` once patched (64 lowercase hex digits).
    pub sha256_after: String,
    /// Why the published file is changed, one sentence: the report lists it as a deviation.
    pub reason: String,
}

impl Patch {
    /// The deviation a run using the image reports (the image's name leads).
    pub fn deviation(&self, image: &str) -> String {
        format!(
            "image {image}: {} patched with {} (sha256 {} → {}): {}",
            self.file,
            self.patch,
            short(&self.sha256_before),
            short(&self.sha256_after),
            self.reason.trim()
        )
    }
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// Checks the fields of `patches[i]` (paths, hashes, reason; one patch per file).
pub fn validate(patches: &[Patch]) -> Result<(), Invalid> {
    for (i, p) in patches.iter().enumerate() {
        let at = |field: &str| format!("patches[{i}].{field}");
        for (field, path) in [("patch", &p.patch), ("file", &p.file)] {
            if !is_relative(path) || path == crate::images::context::RECIPE {
                return Err(Invalid::new(
                    at(field),
                    format!(
                        "patches: {path:?} must be a relative path in the image folder, without \
                         `..`, and not its {}",
                        crate::images::context::RECIPE
                    ),
                ));
            }
        }
        for (field, hash) in [
            ("sha256_before", &p.sha256_before),
            ("sha256_after", &p.sha256_after),
        ] {
            if crate::images::pin::check_sha256(hash).is_err() {
                return Err(Invalid::new(
                    at(field),
                    format!(
                        "patches: {field} {hash:?} is not a sha256 (64 lowercase hex digits); \
                         `sha256sum {}` gives it",
                        p.file
                    ),
                ));
            }
        }
        if p.reason.trim().is_empty() {
            return Err(Invalid::new(
                at("reason"),
                "patches: say in one sentence why the published file is changed (the report \
                 lists it as a deviation)",
            ));
        }
        if patches[..i].iter().any(|q| q.file == p.file) {
            return Err(Invalid::new(
                at("file"),
                format!("patches: {} is patched twice; make one diff of it", p.file),
            ));
        }
    }
    Ok(())
}

fn is_relative(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty()
        && p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Applies `diff` (a unified diff of one file) to `original`; an error says which hunk failed.
pub fn apply(original: &[u8], diff: &[u8]) -> Result<Vec<u8>> {
    let patch = diffy::Patch::from_bytes(diff).map_err(|e| anyhow::anyhow!("{e}"))?;
    anyhow::ensure!(
        !patch.hunks().is_empty(),
        "it holds no hunk (`@@ -a,b +c,d @@`): is it a unified diff (diff -u)?"
    );
    diffy::apply_bytes(original, &patch).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Applies the recipe's patches to the files of `dir` (the image's sources), writing each patched
/// file under `scratch`: returns the context entries that replace the published files. `recipe`
/// is the recipe file, which errors name with the line and column of the patch at fault.
pub fn apply_all(
    patches: &[Patch],
    dir: &Path,
    recipe: Option<&Path>,
    scratch: &Path,
) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for (i, p) in patches.iter().enumerate() {
        let fail = |field: &str, message: String| {
            located(recipe, &format!("patches[{i}].{field}"), message)
        };
        let target = dir.join(&p.file);
        let original = std::fs::read(&target).map_err(|e| {
            fail(
                "file",
                format!(
                    "patches: cannot read {} ({e}): name a file of the image's build context",
                    target.display()
                ),
            )
        })?;
        let before = digest::bytes(&original);
        if before != p.sha256_before {
            return Err(fail(
                "sha256_before",
                format!(
                    "patches: {} has sha256 {before}, not the {} the patch was made against: the \
                     file is not the one published; restore it, or remake {} against it (diff -u) \
                     and record both hashes",
                    p.file, p.sha256_before, p.patch
                ),
            ));
        }
        let diff_path = dir.join(&p.patch);
        let diff = std::fs::read(&diff_path).map_err(|e| {
            fail(
                "patch",
                format!(
                    "patches: cannot read {} ({e}): put the diff in the image folder",
                    diff_path.display()
                ),
            )
        })?;
        let patched = apply(&original, &diff).map_err(|e| {
            fail(
                "patch",
                format!(
                    "patches: {} does not apply to {}: {e:#}; remake it with `diff -u` against the \
                     published file",
                    p.patch, p.file
                ),
            )
        })?;
        let after = digest::bytes(&patched);
        if after != p.sha256_after {
            return Err(fail(
                "sha256_after",
                format!(
                    "patches: {} patched with {} has sha256 {after}, not the recorded {}: check the \
                     patched file, and record its sha256 if the diff is the intended one",
                    p.file, p.patch, p.sha256_after
                ),
            ));
        }
        let dest = scratch.join("patched").join(&p.file);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&dest, &patched).with_context(|| format!("writing {}", dest.display()))?;
        copy_mode(&target, &dest)?;
        out.push((p.file.clone(), dest));
    }
    Ok(out)
}

/// Keeps the published file's mode (an executable script stays executable).
fn copy_mode(from: &Path, to: &Path) -> Result<()> {
    let mode = std::fs::metadata(from)
        .with_context(|| format!("reading {}", from.display()))?
        .permissions();
    std::fs::set_permissions(to, mode)
        .with_context(|| format!("setting the mode of {}", to.display()))
}

/// The recipe's fault at the node `path` of the recipe file (its line and column).
fn located(recipe: Option<&Path>, path: &str, message: String) -> anyhow::Error {
    super::build::failure::recipe_fault(recipe, path, &message, Vec::new())
}

#[cfg(test)]
mod tests;
