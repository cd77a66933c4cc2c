//! The driver built in the pinned Rust toolchain image: the same sources give the same file on every
//! machine (`just driver`, `parkbench verify --rebuild-driver`). The crates are vendored on the host
//! once per `Cargo.lock` (as for the Rust probes), the build runs with no network from a context of
//! the driver's sources alone ([`SOURCES`]), and the image it leaves holds the one file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::cache::Cache;
use super::{BuildOptions, artifact, build, context, digest, manifest, pin};
use crate::engine::{BuildSpec, Engine};

/// What the driver is built from, relative to the repository (or to an archive's `source/`).
pub const SOURCES: [&str; 5] = [
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "src",
    // The default study, which the driver embeds.
    "results/wait-1m/study.yaml",
];

/// The image the driver is built in.
pub const TOOLCHAIN: &str = "toolchain-rust";

const DOCKERFILE: &str = include_str!("driver/Dockerfile");
const CARGO_CONFIG: &str = include_str!("driver/cargo-config.toml");

/// The file inside the driver's image.
const IN_IMAGE: &str = "/parkbench";

/// A driver built in the pinned toolchain image.
#[derive(Debug, Clone)]
pub struct Built {
    /// Where the file was written.
    pub path: PathBuf,
    /// Its SHA-256.
    pub sha256: String,
    /// The image that holds it (named after its build context and the toolchain image).
    pub tag: String,
    /// The image was there already: nothing was compiled.
    pub reused: bool,
}

/// How much of what this machine built before a driver build may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fresh {
    /// The driver image of the same sources, when there is one (`just driver` with nothing changed).
    Reuse,
    /// A build that compiles the driver's own crate again, its crates' layer from the Engine's build
    /// cache when the crates are the same.
    Build,
    /// Everything compiled again.
    Everything,
}

/// Builds the driver from the sources below `repo` (whose `docker/` and `toolchains/` give the
/// toolchain image) and writes it to `out`, mode 0755.
pub async fn build(engine: &Engine, repo: &Path, out: &Path, fresh: Fresh) -> Result<Built> {
    let no_cache = fresh == Fresh::Everything;
    let cache = Cache::from_env()?;
    let toolchain = toolchain_image(engine, &cache, repo).await?;
    let scratch = cache.scratch()?;
    // The tag is named after the sources and the toolchain image; the crates are Cargo.lock's.
    let sources = sources_context(repo, scratch.path())?;
    let tag = format!(
        "{}/driver:{}",
        manifest::namespace(),
        &digest::bytes(format!("{}\n{toolchain}", sources.sha256).as_bytes())[..16]
    );
    let reused = fresh == Fresh::Reuse && engine.image(&tag).await?.is_some();
    if !reused {
        eprintln!(
            "building the driver in {toolchain}: its crates (unless built before), then the driver"
        );
        let ctx = build_context(&cache, repo, scratch.path())?;
        let spec = BuildSpec {
            context: ctx.path.clone(),
            tag: tag.clone(),
            buildargs: [
                ("RUST".to_string(), toolchain.clone()),
                ("REBUILD".to_string(), rebuild_mark(fresh)),
            ]
            .into(),
            labels: [("parkbench.role".to_string(), "driver".to_string())].into(),
            no_cache,
        };
        engine
            .build(&spec, |line| {
                if !line.is_empty() && !line.starts_with("Step ") && !line.starts_with(" ---> ") {
                    eprintln!("  {line}");
                }
            })
            .await
            .context("building the driver in the pinned toolchain image")?;
    }
    let bytes = engine.read_file(&tag, IN_IMAGE).await?;
    write_executable(out, &bytes)?;
    Ok(Built {
        path: out.to_owned(),
        sha256: digest::bytes(&bytes),
        tag,
        reused,
    })
}

/// The Dockerfile's `REBUILD`: empty (the Engine's build cache may hold every layer), or for
/// [`Fresh::Build`] a value no build used before, so that the driver's crate is compiled again.
fn rebuild_mark(fresh: Fresh) -> String {
    match fresh {
        Fresh::Build => format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ),
        Fresh::Reuse | Fresh::Everything => String::new(),
    }
}

/// The pinned toolchain image of `repo`, built (or reused) with what it is built from.
async fn toolchain_image(engine: &Engine, cache: &Cache, repo: &Path) -> Result<String> {
    let pins = pin::load_all(&repo.join("toolchains"))?;
    let options = BuildOptions {
        only: vec![TOOLCHAIN.to_string()],
        strict: true,
        ..BuildOptions::default()
    };
    let built = super::build_all(engine, cache, &pins, repo, &options).await?;
    Ok(built
        .get(TOOLCHAIN)
        .with_context(|| format!("the {TOOLCHAIN} image was not built"))?
        .tag
        .clone())
}

/// The build context: the Dockerfile, cargo's configuration, the driver's sources and its crates
/// vendored (once per `Cargo.lock`, into the cache).
fn build_context(cache: &Cache, repo: &Path, scratch: &Path) -> Result<context::Context> {
    let mut extra = source_entries(repo, scratch)?;
    extra.push(("vendor".to_string(), vendored(cache, repo, scratch)?));
    context::write(
        &scratch.join("files"),
        &extra,
        &[],
        &scratch.join("driver-context.tar"),
    )
}

/// [`build_context`] without the crates: small, and as telling (`Cargo.lock` names every crate).
fn sources_context(repo: &Path, scratch: &Path) -> Result<context::Context> {
    let extra = source_entries(repo, scratch)?;
    context::write(
        &scratch.join("files"),
        &extra,
        &[],
        &scratch.join("driver-sources.tar"),
    )
}

/// The Dockerfile and cargo's configuration (written below `scratch/files`, the context's folder),
/// and the driver's sources, as context entries.
fn source_entries(repo: &Path, scratch: &Path) -> Result<Vec<(String, PathBuf)>> {
    let files = scratch.join("files");
    std::fs::create_dir_all(&files).with_context(|| format!("creating {}", files.display()))?;
    std::fs::write(files.join("Dockerfile"), DOCKERFILE)?;
    std::fs::write(files.join("cargo-config.toml"), CARGO_CONFIG)?;
    let mut extra: Vec<(String, PathBuf)> = Vec::new();
    for source in SOURCES {
        let path = repo.join(source);
        anyhow::ensure!(
            path.exists(),
            "{}: missing: the driver is built from {}",
            path.display(),
            SOURCES.join(", ")
        );
        extra.push((source.to_string(), path));
    }
    Ok(extra)
}

/// The crates of `repo`'s Cargo.lock, vendored once into the cache.
fn vendored(cache: &Cache, repo: &Path, scratch: &Path) -> Result<PathBuf> {
    let vendor = build::vendor_dir(cache, repo)?;
    if !vendor.is_dir() {
        let tmp = scratch.join("vendor");
        artifact::vendor(repo, &tmp).context("vendoring the driver's crates")?;
        let parent = vendor.parent().context("vendor folder")?;
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        std::fs::rename(&tmp, &vendor)
            .with_context(|| format!("moving vendored crates to {}", vendor.display()))?;
    }
    Ok(vendor)
}

/// Writes `bytes` to `out`, mode 0755, through a part file renamed over it.
pub fn write_executable(out: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // Through a part file: a driver that is running (the one that builds) is never overwritten.
    let part = out.with_extension("part");
    std::fs::write(&part, bytes).with_context(|| format!("writing {}", part.display()))?;
    std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("setting the mode of {}", part.display()))?;
    std::fs::rename(&part, out).with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_holds_the_driver_sources_its_crates_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        for (file, text) in [
            ("Cargo.toml", "[package]\n"),
            ("Cargo.lock", "# lock\n"),
            ("build.rs", "fn main() {}\n"),
            ("src/main.rs", "fn main() {}\n"),
            ("results/wait-1m/study.yaml", "id: wait-1m\n"),
            ("results/other/study.yaml", "id: other\n"),
            ("docker/go/Dockerfile", "FROM x\n"),
            ("target/debug/parkbench", "built\n"),
        ] {
            let path = repo.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let cache = Cache::open(&tmp.path().join("cache")).unwrap();
        let vendor = build::vendor_dir(&cache, &repo).unwrap();
        std::fs::create_dir_all(vendor.join("anyhow")).unwrap();
        std::fs::write(vendor.join("anyhow/lib.rs"), "// a crate\n").unwrap();
        let scratch = tmp.path().join("scratch");
        let ctx = build_context(&cache, &repo, &scratch).unwrap();
        let mut tar = tar::Archive::new(std::fs::File::open(&ctx.path).unwrap());
        let mut files: Vec<String> = (tar.entries().unwrap())
            .map(|e| e.unwrap())
            .filter(|e| e.header().entry_type().is_file())
            .map(|e| e.path().unwrap().display().to_string())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                "Cargo.lock",
                "Cargo.toml",
                "Dockerfile",
                "build.rs",
                "cargo-config.toml",
                "results/wait-1m/study.yaml",
                "src/main.rs",
                "vendor/anyhow/lib.rs"
            ]
        );
        // The same sources elsewhere give the same context, byte for byte.
        let moved = tmp.path().join("elsewhere/repo");
        std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
        std::fs::rename(&repo, &moved).unwrap();
        let again = build_context(&cache, &moved, &tmp.path().join("scratch2")).unwrap();
        assert_eq!(again.sha256, ctx.sha256);

        std::fs::remove_file(moved.join("build.rs")).unwrap();
        let err = build_context(&cache, &moved, &tmp.path().join("scratch3")).unwrap_err();
        assert!(format!("{err:#}").contains("build.rs: missing"), "{err:#}");
    }
}
