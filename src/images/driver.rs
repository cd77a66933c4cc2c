//! The driver built in the pinned Rust toolchain image: the same sources give the same file on every
//! machine (`just driver`, `parkbench verify --rebuild-driver`). The crates are vendored on the host
//! once per `Cargo.lock` (as for the Rust probes), the build runs with no network from a context of
//! the driver's sources alone ([`SOURCES`]), and the image it leaves holds the one file.
//!
//! The toolchain image always comes from the repository of the parkbench that builds (`--repo`):
//! a rebuild takes only the driver's own sources from an archive ([`check_sources`] refuses those
//! that could fetch or substitute anything but the locked registry crates).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::build::failure;
use super::cache::Cache;
use super::plan::{Graph, Node};
use super::{BuildOptions, build, context, manifest, pin, recipe};
use crate::engine::{BuildSpec, Engine, Images};
use crate::files::{digest, read_text};

mod crates;

/// What the driver is built from, relative to the repository (or to an archive's `source/`).
pub const SOURCES: [&str; 5] = [
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "src",
    // The default study, which the driver embeds.
    "results/wait-1m/study.yaml",
];

/// The sources of [`SOURCES`] the crates' layer is built from; an edit of the others compiles the
/// driver's own crate alone.
const CRATES_LAYER: [&str; 3] = ["Cargo.toml", "Cargo.lock", "build.rs"];

/// The image the driver is built in.
pub const TOOLCHAIN: &str = "toolchain-rust";

const DOCKERFILE: &str = include_str!("driver/Dockerfile");
const CARGO_CONFIG: &str = include_str!("driver/cargo-config.toml");
const BUILD_ENV: &str = include_str!("driver/build-env");

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

/// Builds the driver from the sources below `repo` in the toolchain image of `toolchain_repo`
/// (whose `docker/` and `toolchains/` give it; the same folder for `parkbench driver`, the
/// reviewer's own for a rebuild) and writes it to `out`, mode 0755.
pub async fn build(
    engine: &Engine,
    toolchain_repo: &Path,
    repo: &Path,
    out: &Path,
    fresh: Fresh,
) -> Result<Built> {
    let no_cache = fresh == Fresh::Everything;
    // Held from the toolchain image's build to the driver's: no clean removes either meanwhile.
    let _building = super::turn::building("the driver").await?;
    let cache = Cache::from_env()?;
    // The crates are vendored while the toolchain image builds (or another build of it is waited
    // for): on a fresh machine both are on the way to the driver's compile.
    let (toolchain, ()) = tokio::join!(
        toolchain_image(engine, &cache, toolchain_repo),
        vendor_ahead(&cache, repo),
    );
    let toolchain = toolchain?;
    let scratch = cache.scratch()?;
    // The tag is named after the sources and the toolchain image; the crates are Cargo.lock's.
    let sources = sources_context(repo, scratch.path())?;
    let tag = format!(
        "{}/driver:{}",
        manifest::namespace(),
        &digest::bytes(format!("{}\n{toolchain}", sources.sha256).as_bytes())[..16]
    );
    let _turn = super::turn::turn(&tag, "the driver").await?;
    let reused = fresh == Fresh::Reuse && engine.image(&tag).await?.is_some();
    if !reused {
        eprintln!(
            "building the driver in {toolchain}: its crates (unless built before), then the driver"
        );
        let ctx = build_context(&cache, repo, scratch.path(), &rebuild_mark(fresh))?;
        let spec = BuildSpec {
            context: ctx.path.clone(),
            tag: tag.clone(),
            buildargs: [("RUST".to_string(), toolchain.clone())].into(),
            // `parkbench.image` as on every image the kit builds: a driver image a rebuild of the
            // same sources untags (`--no-cache`) is one `clean --images` finds.
            labels: [
                ("parkbench.role".to_string(), "driver".to_string()),
                ("parkbench.image".to_string(), "driver".to_string()),
            ]
            .into(),
            no_cache,
            // The build stage holds the crates compiled (its layer below the driver's own crate):
            // kept, an edit of src/ compiles the driver's crate alone. It starts from the toolchain
            // image, whose labels `clean --images` finds it by.
            keep_stages: true,
            cpu_shares: None,
        };
        // Quiet, as the images' builds are: the compiler's last lines are shown when it fails.
        let mut tail = std::collections::VecDeque::new();
        let built = engine
            .build(&spec, |line| {
                for line in line.lines() {
                    if tail.len() == failure::TAIL {
                        tail.pop_front();
                    }
                    tail.push_back(failure::plain_text(line));
                }
            })
            .await;
        if let Err(e) = built {
            let last = Vec::from(tail).join("\n");
            return Err(e
                .context(format!("build output (last lines):\n{last}"))
                .context("building the driver in the pinned toolchain image"));
        }
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

/// The context's `driver/rebuild`: empty (the Engine's build cache may hold every layer), or for
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
/// vendored (once per `Cargo.lock`, into the cache), those it is not built from as stubs
/// ([`crates`]).
fn build_context(
    cache: &Cache,
    repo: &Path,
    scratch: &Path,
    rebuild: &str,
) -> Result<context::Context> {
    let vendor = vendored(cache, repo, scratch)?;
    let built =
        crates::built(repo, &vendor).context("listing the crates the driver is built from")?;
    context_of(repo, scratch, &vendor, &built, rebuild)
}

/// [`build_context`] with the vendored crates in `vendor`, of which `built` go in whole.
fn context_of(
    repo: &Path,
    scratch: &Path,
    vendor: &Path,
    built: &std::collections::BTreeSet<String>,
    rebuild: &str,
) -> Result<context::Context> {
    let mut extra = source_entries(repo, scratch)?;
    let vendored = crates::entries(vendor, built, &scratch.join("stubs"))?;
    extra.extend(
        vendored
            .into_iter()
            .map(|(at, from)| (format!("crates/src/{at}"), from)),
    );
    let mark = scratch.join("rebuild");
    std::fs::write(&mark, rebuild).with_context(|| format!("writing {}", mark.display()))?;
    extra.push(("driver/rebuild".to_string(), mark));
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
/// and the driver's sources, as context entries: laid out as the build uses them, below `crates/`
/// those its crates' layer is built from ([`CRATES_LAYER`]), the others below `driver/`.
fn source_entries(repo: &Path, scratch: &Path) -> Result<Vec<(String, PathBuf)>> {
    let files = scratch.join("files");
    std::fs::create_dir_all(&files).with_context(|| format!("creating {}", files.display()))?;
    std::fs::write(files.join("Dockerfile"), DOCKERFILE)?;
    let config = files.join("crates/cargo-home/config.toml");
    std::fs::create_dir_all(config.parent().context("cargo's configuration folder")?)?;
    std::fs::write(&config, CARGO_CONFIG)?;
    std::fs::write(config.with_file_name("build-env"), BUILD_ENV)?;
    let mut extra: Vec<(String, PathBuf)> = Vec::new();
    for source in SOURCES {
        let path = repo.join(source);
        anyhow::ensure!(
            path.exists(),
            "{}: missing: the driver is built from {}",
            path.display(),
            SOURCES.join(", ")
        );
        let layer = if CRATES_LAYER.contains(&source) {
            "crates"
        } else {
            "driver"
        };
        extra.push((format!("{layer}/src/{source}"), path));
    }
    Ok(extra)
}

/// The crates of `repo`'s Cargo.lock vendored into the cache, off the async threads, when they are
/// not there yet: a first build, whose own [`vendored`] then finds them. (After `clean --cache`, a
/// driver image that is reused still has its crates vendored again, once.) Ahead of need only: a
/// failure is left to the build's own vendoring to meet and report, when it compiles.
async fn vendor_ahead(cache: &Cache, repo: &Path) {
    if !matches!(build::vendor_dir(cache, repo), Ok(dir) if !dir.is_dir()) {
        return;
    }
    let (cache, repo) = (cache.clone(), repo.to_owned());
    let _unreported = tokio::task::spawn_blocking(move || {
        let scratch = cache.scratch()?;
        vendored(&cache, &repo, scratch.path())
    })
    .await;
}

/// The crates of `repo`'s Cargo.lock, vendored once into the cache.
fn vendored(cache: &Cache, repo: &Path, scratch: &Path) -> Result<PathBuf> {
    build::vendored_with(cache, repo, scratch, |e| {
        e.context("vendoring the driver's crates")
    })
}

/// The files below `repo` that the toolchain image and every image it is built from are made of:
/// their pins (`toolchains/<pin>.yaml`, and `.lock` where there is one) and their `docker/` folders.
pub fn toolchain_files(repo: &Path) -> Result<Vec<String>> {
    let pins = pin::load_all(&repo.join("toolchains"))?;
    let docker = repo.join("docker");
    let graph = Graph::new(recipe::discover(&docker)?, &pins)?.only(&[TOOLCHAIN.to_string()])?;
    let mut files = std::collections::BTreeSet::new();
    for node in graph.nodes() {
        for pin in node.pins() {
            for ext in ["yaml", "lock"] {
                let file = format!("toolchains/{pin}.{ext}");
                if ext == "yaml" || repo.join(&file).is_file() {
                    files.insert(file);
                }
            }
        }
        if let Node::Recipe(r) = node {
            let mut folders = vec![docker.join(&r.name), r.base_folder(&docker)];
            folders.extend(r.shared_files(&docker).into_iter().map(|(_, f)| f));
            for folder in folders {
                for entry in walkdir::WalkDir::new(&folder) {
                    let entry = entry.with_context(|| format!("reading {}", folder.display()))?;
                    if entry.file_type().is_dir() {
                        continue;
                    }
                    let rel = entry.path().strip_prefix(repo).context("a recipe file")?;
                    files.insert(rel.to_string_lossy().into_owned());
                }
            }
        }
    }
    Ok(files.into_iter().collect())
}

/// The files the toolchain image is made of (per [`toolchain_files`] of both) that differ between
/// `ours` and `theirs`, or that one of them lacks: empty when both give the same toolchain image.
pub fn toolchain_differences(ours: &Path, theirs: &Path) -> Result<Vec<String>> {
    let mut files = toolchain_files(ours)?;
    // Their listing may fail (no such pins, a broken recipe): every file of ours is compared anyway.
    files.extend(toolchain_files(theirs).unwrap_or_default());
    files.sort();
    files.dedup();
    Ok(files
        .into_iter()
        .filter(|f| {
            let read = |root: &Path| std::fs::read(root.join(f)).ok();
            match (read(ours), read(theirs)) {
                (Some(a), Some(b)) => a != b,
                _ => true,
            }
        })
        .collect())
}

/// Refuses driver sources below `repo` (an archive's `source/`) that could make the host fetch or
/// the build use anything but the crates `Cargo.lock` names from the registry whose sources
/// `ours` (the repository's own `Cargo.lock`) names, each with its checksum (which `cargo vendor`
/// checks): a `.cargo/` folder, a `rust-toolchain` file, a path, git or other-registry dependency,
/// `[patch]` or `[replace]` in `Cargo.toml` or a package that names a workspace elsewhere, a locked crate from another source or without a checksum.
pub fn check_sources(repo: &Path, ours: &Path) -> Result<()> {
    for name in [".cargo", "rust-toolchain", "rust-toolchain.toml"] {
        let path = repo.join(name);
        if path.symlink_metadata().is_ok() {
            bail!(
                "{}: refused: the driver's sources may not carry it (it could change where cargo \
                 takes crates or which toolchain builds)",
                path.display()
            );
        }
    }
    let manifest = repo.join("Cargo.toml");
    let doc = toml_table(&manifest)?;
    let refuse = |what: String| -> anyhow::Error {
        anyhow::anyhow!(
            "{}: refused: {what}: a rebuild vendors only locked crates of the registry",
            manifest.display()
        )
    };
    for table in ["patch", "replace"] {
        if doc.contains_key(table) {
            return Err(refuse(format!("it has a [{table}] table")));
        }
    }
    let package = doc.get("package").and_then(toml::Value::as_table);
    if package.is_some_and(|p| p.contains_key("workspace")) {
        return Err(refuse(
            "its package names a workspace elsewhere".to_string(),
        ));
    }
    let mut tables: Vec<(String, &toml::Value)> = Vec::new();
    let kinds = ["dependencies", "dev-dependencies", "build-dependencies"];
    for kind in kinds {
        tables.extend(doc.get(kind).map(|v| (kind.to_string(), v)));
    }
    if let Some(ws) = doc.get("workspace").and_then(toml::Value::as_table) {
        tables.extend(
            ws.get("dependencies")
                .map(|v| ("workspace.dependencies".into(), v)),
        );
    }
    if let Some(targets) = doc.get("target").and_then(toml::Value::as_table) {
        for (target, t) in targets {
            for kind in kinds {
                let t = t.as_table().and_then(|t| t.get(kind));
                tables.extend(t.map(|v| (format!("target.{target}.{kind}"), v)));
            }
        }
    }
    for (at, deps) in tables {
        for (name, dep) in deps.as_table().into_iter().flatten() {
            let Some(dep) = dep.as_table() else { continue };
            for key in ["path", "git", "registry", "registry-index"] {
                if dep.contains_key(key) {
                    return Err(refuse(format!("[{at}] {name} has `{key}`")));
                }
            }
        }
    }
    let registries: Vec<String> = locked(ours)?.into_iter().filter_map(|p| p.source).collect();
    let lock = repo.join("Cargo.lock");
    for Locked {
        name,
        source,
        checksum,
    } in locked(&lock)?
    {
        let refused = |what: &str| {
            anyhow::anyhow!(
                "{}: refused: {name} {what}: a rebuild vendors only locked crates of the registry",
                lock.display()
            )
        };
        match source {
            None if name == "parkbench" => {}
            None => return Err(refused("is not from the registry (a path dependency)")),
            Some(s) if !registries.contains(&s) => {
                return Err(refused(&format!("comes from {s}")));
            }
            Some(_) => {
                let ok = checksum
                    .is_some_and(|c| c.len() == 64 && c.bytes().all(|b| b.is_ascii_hexdigit()));
                if !ok {
                    return Err(refused("has no checksum"));
                }
            }
        }
    }
    Ok(())
}

/// One `[[package]]` of a `Cargo.lock`.
struct Locked {
    name: String,
    source: Option<String>,
    checksum: Option<String>,
}

/// The TOML file at `path`.
fn toml_table(path: &Path) -> Result<toml::Table> {
    let text = read_text(path)?;
    toml::from_str(&text).with_context(|| format!("{}: not valid TOML", path.display()))
}

/// The packages of the `Cargo.lock` at `path`.
fn locked(path: &Path) -> Result<Vec<Locked>> {
    let doc = toml_table(path)?;
    let packages = doc.get("package").and_then(toml::Value::as_array);
    Ok(packages
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_table)
        .map(|p| {
            let s = |k: &str| p.get(k).and_then(toml::Value::as_str).map(str::to_owned);
            Locked {
                name: s("name").unwrap_or_default(),
                source: s("source"),
                checksum: s("checksum"),
            }
        })
        .collect())
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
mod tests;
