//! Image recipes: every `docker/<name>/` folder with an `image.yaml` is an image. The folder is the
//! build context (without its `image.yaml`); the recipe says what else goes in and what to read back.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

use crate::images::context::RECIPE;
use crate::images::patch::{self, Patch};
use crate::yaml::{Doc, Invalid, ensure_at};

mod vendor;
mod versions;
pub use vendor::{Tool, Vendor};
pub use versions::VersionCommand;

/// `docker/<name>/image.yaml`: how to build the image `<name>`. Unknown fields are errors with line
/// and column. Every field may be left out; an empty file builds the folder's Dockerfile as it is.
///
/// ```yaml
/// parents: {BASE: base, RUST: toolchain-rust, SAMPLER: sampler}
/// artifacts: {rust.tar: rust}
/// shared: {src/lib.rs: probe-lib/lib.rs}
/// vendor: true
/// probe: true
/// binaries: [/usr/local/bin/probe, /usr/local/bin/sampler]
/// versions: {"rustc -vV": {in: RUST, run: [rustc, -vV]}}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// The image's name: its folder under `docker/` (not written in the file).
    #[serde(skip)]
    pub name: String,
    /// The file it was read from, for errors found later (not written in the file).
    #[serde(skip)]
    pub file: Option<PathBuf>,
    /// Build args naming parent images: ARG → image name (another folder's image, `base`, or the
    /// image of a root filesystem pin). The Dockerfile's `FROM ${ARG}` gets the parent's tag, and
    /// the tag is an input of this image's own tag.
    #[serde(default)]
    pub parents: BTreeMap<String, String>,
    /// Pinned artifacts placed in the build context: file name in the context → pin name
    /// (`toolchains/<pin>.yaml`). Each artifact's pin name, version and sha256 are inputs.
    #[serde(default)]
    pub artifacts: BTreeMap<String, String>,
    /// Files kept once under `docker/` and laid into the build context: path in the context →
    /// path under `docker/` (e.g. `src/lib.rs: probe-lib/lib.rs`, the library several images'
    /// programs share). A file of the folder at that path is a stand-in for builds on the host
    /// (`cargo test`) and is replaced. Each shared file's sha256 is an input (`shared <path>`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shared: BTreeMap<String, String>,
    /// Dependencies vendored on the host into the context, so the build needs no network:
    /// `cargo`, `pip`, `go`, `npm` or a list of them (`true` is `cargo`). Each tool needs its
    /// lockfile in the folder (`Cargo.lock`, `requirements.txt` with hashes, `go.mod`,
    /// `package-lock.json`); see [`Vendor`].
    #[serde(default, skip_serializing_if = "Vendor::is_empty")]
    pub vendor: Vendor,
    /// The image's Python version (`"3.13"`): `vendor: pip` downloads the wheels for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pip_python: Option<String>,
    /// Unified diffs applied to third-party sources while the build context is written, each
    /// checked against the sha256 of its file before and after (see [`Patch`]). The folder keeps
    /// the published file; each patch's sha256 is an input, and its reason a deviation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<Patch>,
    /// A probe image: one that a study's `probes[].image` may name.
    #[serde(default)]
    pub probe: bool,
    /// Absolute paths of files in the image whose sha256 the manifest records, read back from the
    /// built image.
    #[serde(default)]
    pub binaries: Vec<String>,
    /// Tool versions the manifest records: label → command, `[program, arg, …]` run in the final
    /// image, or `{in: ARG, run: [program, arg, …]}` run in the parent image of build arg `ARG`
    /// (see [`VersionCommand`]); the label keys its trimmed output.
    #[serde(default, deserialize_with = "versions::deserialize")]
    pub versions: BTreeMap<String, VersionCommand>,
    /// A guest kernel: the folder is `kernel-<name>`, and `--kernel <name>` (or a study's
    /// `kernels:`) runs probes in a VM booted from it. The image holds the kernel at
    /// [`KERNEL_FILE`] and its configuration at [`KERNEL_CONFIG`], both listed in `binaries`.
    /// Implies `on_demand`.
    #[serde(default)]
    pub kernel: bool,
    /// Built only when named (`build --only`) or needed by a run (a guest kernel, the VM image),
    /// not by a plain `build`: a kernel compile is long, and most runs use the host's kernel.
    #[serde(default)]
    pub on_demand: bool,
    /// What a run using this image must report as a deviation from the article (e.g. a kernel
    /// configuration that is a fallback); recorded in the manifest, shown with the kernel's
    /// deviation.
    #[serde(default)]
    pub notes: Vec<String>,
    /// A variant of another image folder: its build context is that folder's files with this
    /// folder's files laid over them (a variant holds only what differs: a `Cargo.toml` and
    /// `Cargo.lock`, a source file, or nothing but this recipe). The rest of this recipe is its own
    /// (parents, artifacts, binaries…); the other folder's name is an input of the tag. Used for the
    /// alternatives a study's `factors:` sweeps (e.g. `rust-tokio.nightly`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_of: Option<String>,
    /// How long a cold build of this image took where it was declared, said before its build on a
    /// machine that has no build of it recorded yet (a kernel compile; see [`BuildEstimate`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_estimate: Option<BuildEstimate>,
}

/// A declared build time: `{minutes: 47, cpus: 2}`, a cold build measured on a machine with that
/// many CPUs. Only said and compared with thresholds, never used as a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildEstimate {
    /// Minutes the cold build took.
    pub minutes: u32,
    /// The CPUs of the machine it took them on.
    pub cpus: u32,
}

impl BuildEstimate {
    /// Both numbers are at least 1.
    pub fn validate(&self) -> Result<(), Invalid> {
        ensure_at!(
            self.minutes > 0 && self.cpus > 0,
            "build_estimate",
            "build_estimate: {{minutes: {}, cpus: {}}}: both must be at least 1 (a cold build's \
             minutes, on a machine with that many CPUs)",
            self.minutes,
            self.cpus
        );
        Ok(())
    }
}

/// Where a kernel image holds its kernel.
pub const KERNEL_FILE: &str = "/boot/vmlinuz";
/// Where a kernel image holds the kernel's configuration (the `.config` it was built with).
pub const KERNEL_CONFIG: &str = "/boot/config";
/// The folder prefix of kernel images: `kernel-<name>`.
pub const KERNEL_PREFIX: &str = "kernel-";

impl Recipe {
    /// Parses and checks recipe YAML for the image `name`; an error leads with
    /// `docker/<name>/image.yaml:line:column` of the node at fault.
    pub fn parse(name: &str, text: &str) -> Result<Self> {
        Self::parse_named(name, &format!("docker/{name}/{RECIPE}"), text)
    }

    /// [`Recipe::parse`] of the text of `file`, which errors name.
    fn parse_named(name: &str, file: &str, text: &str) -> Result<Self> {
        // An empty file is YAML null, not an empty mapping.
        let text = if text.trim().is_empty() { "{}" } else { text };
        Doc::new(file, text).parse(|recipe: &mut Recipe| {
            recipe.name = name.to_owned();
            recipe.validate()
        })
    }

    /// Reads `docker/<name>/image.yaml` and checks it against its folder.
    pub fn load(dir: &Path) -> Result<Self> {
        let file = dir.join(RECIPE);
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .with_context(|| format!("{} is not a UTF-8 folder name", dir.display()))?;
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading image recipe {}", file.display()))?;
        let shown = file.display().to_string();
        let mut recipe = Self::parse_named(name, &shown, &text)?;
        recipe.file = Some(file.clone());
        let doc = Doc::new(&shown, &text);
        let from = match &recipe.variant_of {
            Some(base) => dir.with_file_name(base),
            None => dir.to_owned(),
        };
        if !from.join(RECIPE).is_file() {
            return Err(doc.error(&Invalid::new(
                "variant_of",
                format!(
                    "variant_of: {:?} is not an image folder under {} (no {RECIPE} there)",
                    recipe.variant_of.as_deref().unwrap_or_default(),
                    dir.parent().unwrap_or(dir).display()
                ),
            )));
        }
        ensure!(
            // A variant's base folder is checked as an image of its own (see `check_variants`).
            dir.join("Dockerfile").is_file() || recipe.variant_of.is_some(),
            "{} has {RECIPE} but no Dockerfile: add the Dockerfile, or remove the folder",
            dir.display()
        );
        for tool in &recipe.vendor.0 {
            let lock = tool.lockfile();
            if !dir.join(lock).is_file() && !from.join(lock).is_file() {
                return Err(doc.error(&Invalid::new(
                    "vendor",
                    format!(
                        "vendor: {tool}, but {} has no {lock}: {}",
                        dir.display(),
                        tool.lockfile_hint()
                    ),
                )));
            }
        }
        for (i, p) in recipe.patches.iter().enumerate() {
            if !dir.join(&p.patch).is_file() && !from.join(&p.patch).is_file() {
                return Err(doc.error(&Invalid::new(
                    format!("patches[{i}].patch"),
                    format!(
                        "patches: {} is not a file of {}: put the diff there (its path is relative \
                         to the image folder)",
                        p.patch,
                        dir.display()
                    ),
                )));
            }
        }
        for (at, shared) in recipe.shared_files(dir.parent().unwrap_or(dir)) {
            if !shared.is_file() {
                return Err(doc.error(&Invalid::new(
                    format!("shared.{at}"),
                    format!(
                        "shared: {at:?} names {}, which is not a file: fix the path (it is \
                         relative to the folder of the image folders), or add the file",
                        shared.display()
                    ),
                )));
            }
        }
        Ok(recipe)
    }

    /// Checks the fields; an error names the node it is about (the empty path for the image's
    /// name, which is its folder's, not written in the file).
    fn validate(&self) -> Result<(), Invalid> {
        ensure_at!(
            is_image_name(&self.name),
            "",
            "image name {:?} (the folder's name) must be lowercase letters, digits, `.`, `_` or `-`",
            self.name
        );
        for arg in self.parents.keys() {
            ensure_at!(
                is_build_arg(arg),
                format!("parents.{arg}"),
                "parents: {arg:?} is not a build arg name (letters, digits and `_`)"
            );
        }
        for (file, pin) in &self.artifacts {
            let at = format!("artifacts.{file}");
            let plain = relative_parts(file).is_some_and(|parts| parts.len() == 1);
            ensure_at!(
                plain && file != "vendor" && file != RECIPE && file != "Dockerfile",
                &at,
                "artifacts: {file:?} must be a plain file name in the context \
                 (not vendor, Dockerfile or {RECIPE})"
            );
            ensure_at!(!pin.is_empty(), &at, "artifacts: {file:?} names no pin");
        }
        for (at, shared) in &self.shared {
            let path = format!("shared.{at}");
            let kept = |parts: Vec<&str>| {
                parts[0] != "vendor"
                    && parts != [RECIPE]
                    && !parts.iter().any(|p| [".git", "target"].contains(p))
            };
            ensure_at!(
                relative_parts(at).is_some_and(kept) && !self.artifacts.contains_key(at),
                &path,
                "shared: {at:?} must be a relative path in the build context, not under vendor/, \
                 target/ or .git/, not {RECIPE}, and not an artifact's name"
            );
            ensure_at!(
                relative_parts(shared).is_some(),
                &path,
                "shared: {at:?}: {shared:?} must be a relative path under the folder of the image \
                 folders (e.g. probe-lib/lib.rs), without `..`"
            );
        }
        for (j, path) in self.binaries.iter().enumerate() {
            ensure_at!(
                path.starts_with('/'),
                format!("binaries[{j}]"),
                "binaries: {path:?} must be an absolute path inside the image"
            );
        }
        self.validate_kernel()?;
        if let Some(e) = &self.build_estimate {
            e.validate()?;
        }
        patch::validate(&self.patches)?;
        self.validate_pip()?;
        for (label, command) in &self.versions {
            command.validate(label, &self.parents)?;
        }
        Ok(())
    }

    /// A kernel image is named `kernel-<name>` and lists its kernel and configuration.
    fn validate_kernel(&self) -> Result<(), Invalid> {
        if !self.kernel {
            return Ok(());
        }
        ensure_at!(
            self.name.starts_with(KERNEL_PREFIX) && self.name.len() > KERNEL_PREFIX.len(),
            "kernel",
            "kernel: true needs a folder named {KERNEL_PREFIX}<name> (the kernel's name for --kernel)"
        );
        for file in [KERNEL_FILE, KERNEL_CONFIG] {
            ensure_at!(
                self.binaries.iter().any(|b| b == file),
                "kernel",
                "kernel: true: list {file} in binaries, so the manifest records its sha256"
            );
        }
        Ok(())
    }

    /// Vendoring with pip needs the image's Python version, and one that is a version.
    fn validate_pip(&self) -> Result<(), Invalid> {
        match (&self.pip_python, self.vendor.has(Tool::Pip)) {
            (None, true) => Err(Invalid::new(
                "vendor",
                "vendor: pip needs pip_python: the image's Python version (e.g. \"3.13\"), for \
                 which the wheels are downloaded",
            )),
            (Some(v), _) => {
                ensure_at!(
                    is_python_version(v),
                    "pip_python",
                    "pip_python: {v:?} is not a Python version: write major.minor, e.g. \"3.13\""
                );
                Ok(())
            }
            (None, false) => Ok(()),
        }
    }
}

impl Recipe {
    /// The kernel's name for `--kernel` (`debian-6.1` for `kernel-debian-6.1`), if this is a kernel image.
    pub fn kernel_name(&self) -> Option<&str> {
        self.kernel
            .then(|| self.name.strip_prefix(KERNEL_PREFIX))
            .flatten()
    }

    /// The folder whose files the build context starts from: the image's own, or for a variant
    /// the folder it is a variant of (its own files are laid over; see [`Recipe::variant_of`]).
    pub fn base_folder(&self, docker_dir: &Path) -> std::path::PathBuf {
        docker_dir.join(self.variant_of.as_deref().unwrap_or(&self.name))
    }

    /// The `Cargo.lock` the image builds with: its own folder's, else the one of the folder it is
    /// a variant of.
    pub fn cargo_lock(&self, docker_dir: &Path) -> std::path::PathBuf {
        let own = docker_dir.join(&self.name).join("Cargo.lock");
        if own.is_file() {
            own
        } else {
            self.base_folder(docker_dir).join("Cargo.lock")
        }
    }

    /// The shared files laid into the build context: path in the context → the file under
    /// `docker_dir` (see [`Recipe::shared`]).
    pub fn shared_files(&self, docker_dir: &Path) -> Vec<(String, std::path::PathBuf)> {
        self.shared
            .iter()
            .map(|(at, file)| (at.clone(), docker_dir.join(file)))
            .collect()
    }

    /// Checks every declared patch against the image folder's files, as writing its build context
    /// does, without building anything: each file's sha256 before, the diff applying, and the
    /// sha256 after. A variant's files are laid over another folder's: its patches are checked
    /// when it is built.
    pub fn check_patches(&self) -> Result<()> {
        if self.patches.is_empty() || self.variant_of.is_some() {
            return Ok(());
        }
        let Some(dir) = self.file.as_deref().and_then(Path::parent) else {
            return Ok(());
        };
        let scratch = tempfile::tempdir().context("creating a folder to check patches in")?;
        patch::apply_all(&self.patches, dir, self.file.as_deref(), scratch.path())?;
        Ok(())
    }

    /// What a run using this image reports as deviations: its `notes`, and each patch with its reason.
    pub fn deviations(&self) -> Vec<String> {
        let mut out = self.notes.clone();
        out.extend(self.patches.iter().map(|p| p.deviation(&self.name)));
        out
    }

    /// Whether a plain `build` leaves this image out.
    pub fn is_on_demand(&self) -> bool {
        self.on_demand || self.kernel
    }
}

/// Every image recipe under `docker_dir`, sorted by name. A folder without `image.yaml` is left
/// out when it has no Dockerfile either (a helper folder) and is an error when it has one.
pub fn discover(docker_dir: &Path) -> Result<Vec<Recipe>> {
    let entries = std::fs::read_dir(docker_dir).with_context(|| {
        format!(
            "reading the image folder {}: run parkbench from the repository's folder, or name \
                 it with --repo DIR (or PARKBENCH_REPO)",
            docker_dir.display()
        )
    })?;
    let mut dirs = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("listing {}", docker_dir.display()))?
            .path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    dirs.sort();
    let mut recipes = Vec::new();
    for dir in dirs {
        if dir.join(RECIPE).is_file() {
            recipes.push(Recipe::load(&dir)?);
        } else if dir.join("Dockerfile").is_file() {
            bail!(
                "{} has a Dockerfile but no {RECIPE}: add {RECIPE} (its fields are documented on \
                 `Recipe` in src/images/recipe.rs), or move the Dockerfile out of docker/",
                dir.display()
            );
        }
    }
    check_variants(docker_dir, &recipes)?;
    Ok(recipes)
}

/// A variant names an existing folder that is not itself a variant, nor a kernel. An error leads
/// with the variant's `image.yaml:line:column` of its `variant_of`.
fn check_variants(docker_dir: &Path, recipes: &[Recipe]) -> Result<()> {
    for r in recipes {
        let Some(base) = &r.variant_of else { continue };
        let problem = match recipes.iter().find(|o| &o.name == base) {
            None => format!(
                "variant_of: {base:?} is not an image folder under docker/ (the known ones: {})",
                recipes
                    .iter()
                    .map(|o| o.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(of) if of.variant_of.is_some() || of.kernel || r.kernel => format!(
                "variant_of: {base:?} is itself a variant or a kernel; name the folder it starts from"
            ),
            Some(of) => {
                // The base folder's stand-ins would otherwise reach the variant's context.
                let missing: Vec<&str> = (of.shared.keys())
                    .filter(|at| !r.shared.contains_key(*at))
                    .map(String::as_str)
                    .collect();
                if missing.is_empty() {
                    continue;
                }
                format!(
                    "variant_of: {base:?} lays shared files into its build context ({}); name \
                     them in this recipe's shared: too",
                    missing.join(", ")
                )
            }
        };
        let file = docker_dir.join(&r.name).join(RECIPE);
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading image recipe {}", file.display()))?;
        let doc = Doc::new(file.display().to_string(), &text);
        return Err(doc.error(&Invalid::new("variant_of", problem)));
    }
    Ok(())
}

/// The parts of a relative path made only of plain names (no `.`, `..`, root or empty path).
fn relative_parts(path: &str) -> Option<Vec<&str>> {
    let parts: Vec<&str> = Path::new(path)
        .components()
        .map(|c| match c {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    (!parts.is_empty()).then_some(parts)
}

/// Docker's repository name component: lowercase letters, digits and separators.
pub fn is_image_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"._-".contains(c))
}

/// `3.13`: a Python version as `pip download --python-version` takes it.
fn is_python_version(s: &str) -> bool {
    s.split_once('.').is_some_and(|(a, b)| {
        [a, b]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
    })
}

fn is_build_arg(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && !b[0].is_ascii_digit()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

#[cfg(test)]
mod tests;
