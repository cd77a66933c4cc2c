//! Which vendored crates go into the driver's build context whole. `cargo vendor` vendors every crate
//! of `Cargo.lock`: other platforms' (the Windows import libraries alone are 250 MB) and the tests'
//! too. Cargo needs each one's manifest to read the lock, but compiles only those the driver is built
//! from on [`TARGET`] (the toolchain image's host too, so build scripts and proc macros are among
//! them). The others go in as stubs (their `Cargo.toml`, a `src/lib.rs` that fails to compile, and
//! their package checksum with no files), so the context sent to the Engine and copied into the
//! build's layer is a third of the crates' bytes. A stub is never compiled: were one needed after
//! all, the build fails naming it; it cannot change what is built.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::files::read_text;

/// The target the driver is built for (the Dockerfile's `--target`).
pub const TARGET: &str = "x86_64-unknown-linux-gnu";

/// What is read of `cargo metadata --format-version 1`.
#[derive(Debug, Deserialize)]
struct Metadata {
    /// Every package of the resolved graph.
    packages: Vec<Package>,
    /// The graph itself (present unless `--no-deps`).
    resolve: Resolve,
}

/// A package of `cargo metadata`.
#[derive(Debug, Deserialize)]
struct Package {
    /// Its package ID, as the graph's nodes name it.
    id: String,
    /// Its `Cargo.toml`: inside the vendored folder for a vendored crate.
    manifest_path: PathBuf,
}

/// The resolved graph of `cargo metadata`, filtered to one platform.
#[derive(Debug, Deserialize)]
struct Resolve {
    /// The package of the manifest asked about (the driver).
    root: Option<String>,
    /// One node per package, with its dependencies.
    nodes: Vec<Node>,
}

/// A package of the graph and the packages it depends on.
#[derive(Debug, Deserialize)]
struct Node {
    id: String,
    deps: Vec<Dep>,
}

/// One dependency: the package, and how it is depended on.
#[derive(Debug, Deserialize)]
struct Dep {
    pkg: String,
    dep_kinds: Vec<DepKind>,
}

/// `null` for a normal dependency, `"build"` or `"dev"`.
#[derive(Debug, Deserialize)]
struct DepKind {
    kind: Option<String>,
}

/// The folders of `vendor` holding the crates the driver of `repo` is built from on [`TARGET`] with
/// its default features: its normal and build dependencies, and theirs (`cargo metadata`, offline,
/// reading the crates from `vendor`).
pub fn built(repo: &Path, vendor: &Path) -> Result<BTreeSet<String>> {
    let vendor = vendor
        .canonicalize()
        .with_context(|| format!("reading {}", vendor.display()))?;
    let folder = serde_json::to_string(vendor.to_str().context("a vendored folder's path")?)?;
    let output = Command::new("cargo")
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", TARGET, "--manifest-path"])
        .arg(repo.join("Cargo.toml"))
        .args(["--config", "source.crates-io.replace-with=\"vendored\""])
        .arg("--config")
        .arg(format!("source.vendored.directory={folder}"))
        .output()
        .context("running cargo metadata: is cargo installed and on PATH?")?;
    if !output.status.success() {
        bail!(
            "cargo metadata for {} failed ({}):\n{}\nIt reads the crates vendored in {} with this \
             machine's cargo and rustc, offline: check that both run (`cargo -V`, `rustc -V`), or \
             remove that folder to vendor the crates again.",
            repo.join("Cargo.toml").display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end(),
            vendor.display()
        );
    }
    let metadata: Metadata =
        serde_json::from_slice(&output.stdout).context("reading cargo metadata's output")?;
    folders(&metadata, &vendor)
}

/// [`built`] of a graph already read.
fn folders(metadata: &Metadata, vendor: &Path) -> Result<BTreeSet<String>> {
    let root = (metadata.resolve.root.as_ref())
        .context("cargo metadata named no root package: Cargo.toml needs a [package]")?;
    let mut seen = BTreeSet::new();
    let mut next = vec![root.as_str()];
    while let Some(id) = next.pop() {
        if !seen.insert(id) {
            continue;
        }
        let node = (metadata.resolve.nodes.iter().find(|n| n.id == id))
            .with_context(|| format!("cargo metadata: {id} is not in the graph"))?;
        next.extend(
            (node.deps.iter())
                .filter(|d| d.dep_kinds.iter().any(|k| k.kind.as_deref() != Some("dev")))
                .map(|d| d.pkg.as_str()),
        );
    }
    // Every package reached but the driver's own is a vendored crate: one found elsewhere would
    // go in as a stub (or not at all) and fail the build minutes later.
    let mut out = BTreeSet::new();
    for package in
        (metadata.packages.iter()).filter(|p| p.id != *root && seen.contains(p.id.as_str()))
    {
        let folder = package.manifest_path.parent();
        let name = folder
            .filter(|f| f.parent() == Some(vendor))
            .and_then(|f| f.file_name())
            .and_then(|n| n.to_str())
            .with_context(|| {
                format!(
                    "cargo metadata: the crate {} is read from {}, not from the vendored crates in \
                     {}: the pinned build takes registry crates only; make it one, or remove that \
                     folder to vendor the crates again",
                    package.id,
                    package.manifest_path.display(),
                    vendor.display()
                )
            })?;
        out.insert(name.to_string());
    }
    Ok(out)
}

/// The context's `vendor/<crate>` entries: each folder of `vendor` that `built` names as it is, any
/// other as a stub written below `stubs`.
pub fn entries(
    vendor: &Path,
    built: &BTreeSet<String>,
    stubs: &Path,
) -> Result<Vec<(String, PathBuf)>> {
    let mut names: Vec<String> = std::fs::read_dir(vendor)
        .with_context(|| format!("reading {}", vendor.display()))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("reading {}", vendor.display()))?;
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let from = vendor.join(&name);
        let at = format!("vendor/{name}");
        if built.contains(&name) {
            out.push((at, from));
        } else {
            let stub = stubs.join(&name);
            write_stub(&from, &stub).with_context(|| format!("a stub of {}", from.display()))?;
            out.push((at, stub));
        }
    }
    Ok(out)
}

/// A crate cargo can resolve but not compile: `crate`'s `Cargo.toml`, a `src/lib.rs` that stops a
/// compile naming it, and its `.cargo-checksum.json` with the package checksum (which cargo compares
/// with `Cargo.lock`) and no files.
fn write_stub(krate: &Path, stub: &Path) -> Result<()> {
    std::fs::create_dir_all(stub.join("src"))?;
    std::fs::copy(krate.join("Cargo.toml"), stub.join("Cargo.toml"))?;
    let name = krate.file_name().unwrap_or_default().to_string_lossy();
    std::fs::write(
        stub.join("src/lib.rs"),
        format!(
            "compile_error!(\"the vendored crate {} went into the driver's build as a stub, but \
             it is compiled: the host's cargo metadata (src/images/driver/crates.rs) left it out; \
             a host cargo older than the pinned toolchain's may resolve otherwise: use the same \
             version\");\n",
            name.escape_default()
        ),
    )?;
    let sums = krate.join(".cargo-checksum.json");
    let sums: serde_json::Value = serde_json::from_str(&read_text(&sums)?)
        .with_context(|| format!("reading {}", sums.display()))?;
    let package = (sums.get("package").and_then(|p| p.as_str())).with_context(|| {
        format!(
            "{}: no package checksum: remove {} to vendor the crates again",
            krate.display(),
            krate.parent().unwrap_or(krate).display()
        )
    })?;
    let stubbed = serde_json::json!({ "files": {}, "package": package });
    std::fs::write(stub.join(".cargo-checksum.json"), stubbed.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(vendor: &str) -> Metadata {
        let text = serde_json::json!({
            "packages": [
                { "id": "root", "manifest_path": "/repo/Cargo.toml" },
                { "id": "a", "manifest_path": format!("{vendor}/a/Cargo.toml") },
                { "id": "b", "manifest_path": format!("{vendor}/b-1.0.0/Cargo.toml") },
                { "id": "t", "manifest_path": format!("{vendor}/t/Cargo.toml") },
                { "id": "u", "manifest_path": format!("{vendor}/u/Cargo.toml") },
                { "id": "c", "manifest_path": format!("{vendor}/c/Cargo.toml") },
            ],
            "resolve": {
                "root": "root",
                "nodes": [
                    { "id": "root", "deps": [
                        { "pkg": "a", "dep_kinds": [{ "kind": null }] },
                        { "pkg": "t", "dep_kinds": [{ "kind": "dev" }] },
                        { "pkg": "c", "dep_kinds": [{ "kind": "dev" }, { "kind": null }] },
                    ] },
                    { "id": "a", "deps": [{ "pkg": "b", "dep_kinds": [{ "kind": "build" }] }] },
                    { "id": "b", "deps": [] },
                    { "id": "t", "deps": [{ "pkg": "u", "dep_kinds": [{ "kind": null }] }] },
                    { "id": "u", "deps": [] },
                    { "id": "c", "deps": [] },
                ],
            },
        });
        serde_json::from_value(text).unwrap()
    }

    #[test]
    fn the_driver_is_built_from_its_normal_and_build_dependencies_not_its_tests() {
        let built = folders(&graph("/v"), Path::new("/v")).unwrap();
        assert_eq!(
            built,
            BTreeSet::from(["a".into(), "b-1.0.0".into(), "c".into()])
        );
        // A crate the build needs that is not among the vendored ones is named.
        let err = format!(
            "{:#}",
            folders(&graph("/elsewhere"), Path::new("/v")).unwrap_err()
        );
        assert!(
            err.contains("the crate a is read from /elsewhere/a/Cargo.toml"),
            "{err}"
        );
    }

    #[test]
    fn a_crate_not_built_goes_in_as_a_stub_with_its_manifest_and_package_checksum() {
        let tmp = tempfile::tempdir().unwrap();
        let vendor = tmp.path().join("vendor");
        for name in ["a", "w"] {
            std::fs::create_dir_all(vendor.join(name).join("src")).unwrap();
            std::fs::write(vendor.join(name).join("Cargo.toml"), format!("# {name}\n")).unwrap();
            std::fs::write(vendor.join(name).join("src/lib.rs"), "pub fn f() {}\n").unwrap();
            let sums = r#"{"files":{"src/lib.rs":"00"},"package":"abc"}"#;
            std::fs::write(vendor.join(name).join(".cargo-checksum.json"), sums).unwrap();
        }
        let stubs = tmp.path().join("stubs");
        let got = entries(&vendor, &BTreeSet::from(["a".into()]), &stubs).unwrap();
        assert_eq!(
            got,
            [
                ("vendor/a".to_string(), vendor.join("a")),
                ("vendor/w".to_string(), stubs.join("w")),
            ]
        );
        let read = |f: &str| std::fs::read_to_string(stubs.join("w").join(f)).unwrap();
        assert_eq!(read("Cargo.toml"), "# w\n");
        assert!(read("src/lib.rs").starts_with("compile_error!(\"the vendored crate w "));
        let sums: serde_json::Value = serde_json::from_str(&read(".cargo-checksum.json")).unwrap();
        assert_eq!(sums, serde_json::json!({ "files": {}, "package": "abc" }));

        // A crate without its package checksum cannot be stubbed: cargo could not check it.
        std::fs::write(vendor.join("w/.cargo-checksum.json"), r#"{"files":{}}"#).unwrap();
        let err = entries(&vendor, &BTreeSet::new(), &tmp.path().join("stubs2")).unwrap_err();
        assert!(
            format!("{err:#}").contains("no package checksum"),
            "{err:#}"
        );
    }
}
