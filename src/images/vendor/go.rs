//! `vendor: go`: `go mod vendor` run on the host with the pinned Go (`toolchains/go.yaml`, the
//! same tree the Go toolchain image holds, unpacked once into the cache) into `vendor/`; the
//! Dockerfile builds with `-mod=vendor`. Modules come from the host's module cache or from
//! `GOPROXY` as the host sets it; a `replace` to a folder of the image's sources needs neither.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::files::digest;
use crate::images::artifact;
use crate::images::cache::Cache;
use crate::images::pin::Pins;

/// The pin of the Go toolchain that vendors.
pub const PIN: &str = "go";

/// The cache key: the sources (go.mod, go.sum and any local module they replace) and the Go.
pub fn key(pins: &Pins, source_tree: &str) -> Result<String> {
    let go = pins.get(PIN)?;
    Ok(digest::bytes(
        format!("go\n{}\n{source_tree}", go.sha256).as_bytes(),
    ))
}

/// Vendors the modules of the sources in `dir` into `out`; returns what vendored them.
pub fn vendor(
    cache: &Cache,
    pins: &Pins,
    dir: &Path,
    scratch: &Path,
    out: &Path,
) -> Result<String> {
    let go = pinned_go(cache, pins)?;
    let src = scratch.join("src");
    super::copy_tree(dir, &src, scratch, &[crate::images::context::RECIPE])?;
    let env = |cmd: &mut Command| {
        cmd.current_dir(&src)
            .env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", "-mod=mod")
            .env("GOWORK", "off")
            .env("GOTELEMETRY", "off")
            .env("GOCACHE", scratch.join("go-cache"));
    };
    let mut version = Command::new(&go);
    env(&mut version);
    let version = super::run(
        version.arg("version"),
        "go version",
        "the pinned Go (toolchains/go.yaml) runs on x86-64 Linux hosts",
    )?;
    let mut vendor = Command::new(&go);
    env(&mut vendor);
    super::run(
        vendor.args(["mod", "vendor", "-o"]).arg(out),
        &format!("go mod vendor in {}", dir.display()),
        "go.mod must list every module the sources import (`go mod tidy`), with go.sum beside \
         it; modules not in this host's module cache come from GOPROXY, which must be reachable \
         (a `replace` to a folder of the image's sources needs no network)",
    )?;
    Ok(format!("{version} (pin {PIN}, on the host)"))
}

/// The `go` program of the pinned Go tree, unpacked into the cache once per pin.
fn pinned_go(cache: &Cache, pins: &Pins) -> Result<PathBuf> {
    let pin = pins.get(PIN)?;
    let root = cache
        .root()
        .join("tools")
        .join(format!("go-{}", pin.sha256));
    let go = root.join("go/bin/go");
    if go.is_file() {
        return Ok(go);
    }
    let tar = artifact::ensure(cache, pin)
        .map_err(anyhow::Error::from)
        .context("vendor: go runs the pinned Go (toolchains/go.yaml) on the host")?;
    let scratch = cache.scratch()?;
    let tmp = scratch.path().join("go-tree");
    let file = std::fs::File::open(&tar.path)
        .with_context(|| format!("opening {}", tar.path.display()))?;
    tar::Archive::new(file)
        .unpack(&tmp)
        .with_context(|| format!("unpacking {} into {}", tar.path.display(), tmp.display()))?;
    if let Some(parent) = root.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::rename(&tmp, &root).with_context(|| format!("moving Go to {}", root.display()))?;
    Ok(go)
}
