//! `vendor: npm`: `npm ci` run on the host into a cache, laid into the context as
//! `npm-vendor/cache/` beside `npm-vendor/npm/`, the npm that made it (the pinned Node.js runtime
//! holds only `node`). The Dockerfile installs with
//! `node npm-vendor/npm/bin/npm-cli.js ci --offline --cache npm-vendor/cache`.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::files::digest;

/// The program that runs npm on the host (`PARKBENCH_NPM`, else `npm`).
fn npm() -> String {
    std::env::var("PARKBENCH_NPM").unwrap_or_else(|_| "npm".to_string())
}

/// The cache key: the sources (package.json, package-lock.json and any `file:` dependency).
pub fn key(source_tree: &str) -> Result<String> {
    Ok(digest::bytes(format!("npm\n{source_tree}").as_bytes()))
}

/// Fills `out` with the cache of the sources in `dir` and the npm that filled it; returns its
/// version.
pub fn cache(dir: &Path, scratch: &Path, out: &Path) -> Result<String> {
    let npm = npm();
    let hint = "vendor: npm runs npm on this host: install Node.js with npm, or name npm in \
                PARKBENCH_NPM";
    let version = super::run(Command::new(&npm).arg("--version"), "npm --version", hint)?;
    let global = super::run(Command::new(&npm).args(["root", "-g"]), "npm root -g", hint)?;
    let src = scratch.join("src");
    super::copy_tree(dir, &src, scratch, &[crate::images::context::RECIPE])?;
    super::run(
        Command::new(&npm)
            .current_dir(&src)
            .args([
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--cache",
            ])
            .arg(out.join("cache")),
        &format!("npm ci in {}", dir.display()),
        "package-lock.json must match package.json (`npm install --package-lock-only`), and \
         packages not in npm's cache come from the registry, which must be reachable (a `file:` \
         dependency on a folder of the image's sources needs no network)",
    )?;
    // npm's logs and update check are about this host, not the packages.
    _ = std::fs::remove_dir_all(out.join("cache/_logs"));
    _ = std::fs::remove_file(out.join("cache/_update-notifier-last-checked"));
    std::fs::create_dir_all(out.join("cache"))?;
    super::copy_tree(
        &Path::new(&global).join("npm"),
        &out.join("npm"),
        scratch,
        &["docs", "man"],
    )?;
    Ok(format!("npm {version} (on the host)"))
}
