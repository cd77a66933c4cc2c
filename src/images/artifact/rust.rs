//! The Rust toolchain tar: the files of the pinned components (rustc, cargo, rust-std) under
//! `rust/` (`ADD rust.tar /opt/` gives `/opt/rust/bin/rustc`), taken from a local rustup toolchain
//! whose `rustc -vV` shows the pinned commit.

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

use crate::files::tarball::{Layout, Tree};
use crate::images::pin::Rustup;

/// One line of a rustup component manifest (`lib/rustlib/manifest-<component>-<target>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestItem {
    /// `file:<path>`: one file, relative to the toolchain directory.
    File(String),
    /// `dir:<path>`: a whole directory, relative to the toolchain directory.
    Dir(String),
}

/// Writes the pinned components of the rustup toolchain as a tar to `out`.
pub fn from_rustup(r: &Rustup, out: impl Write) -> Result<()> {
    let dir = rustup_home()?.join("toolchains").join(&r.toolchain);
    ensure!(
        dir.is_dir(),
        "toolchain {} is not installed (no {}): run `rustup toolchain install {}`",
        r.toolchain,
        dir.display(),
        r.toolchain
    );
    check_commit(&dir.join("bin").join("rustc"), &r.commit_hash)?;
    super::write_tar(&members(&dir, &r.components, &r.target)?, out)
}

fn rustup_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("RUSTUP_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".rustup")),
        None => bail!("neither RUSTUP_HOME nor HOME is set: cannot find rustup's toolchains"),
    }
}

/// Fails unless `rustc -vV` prints `commit-hash: <want>`.
fn check_commit(rustc: &Path, want: &str) -> Result<()> {
    let output = Command::new(rustc)
        .arg("-vV")
        .output()
        .with_context(|| format!("running {} -vV", rustc.display()))?;
    ensure!(
        output.status.success(),
        "{} -vV failed ({})",
        rustc.display(),
        output.status
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let found = text
        .lines()
        .find_map(|l| l.strip_prefix("commit-hash: "))
        .map(str::trim);
    match found {
        Some(hash) if hash == want => Ok(()),
        Some(hash) => bail!(
            "{} is commit {hash}, but the pin wants {want}: install the pinned release under this toolchain name",
            rustc.display()
        ),
        None => bail!("{} -vV prints no commit-hash line", rustc.display()),
    }
}

/// The tree `rust/...` of every file and folder the components' manifests list.
fn members(dir: &Path, components: &[String], target: &str) -> Result<Tree> {
    let mut tree = Tree::new(Layout::Context);
    for component in components {
        let manifest = dir
            .join("lib")
            .join("rustlib")
            .join(format!("manifest-{component}-{target}"));
        let text = std::fs::read_to_string(&manifest).with_context(|| {
            format!("reading {}: is component {component} installed? (rustup component add {component})", manifest.display())
        })?;
        let items = parse_manifest(&text).with_context(|| format!("in {}", manifest.display()))?;
        for item in items {
            let p = match &item {
                ManifestItem::File(p) | ManifestItem::Dir(p) => p,
            };
            let at: Vec<String> = std::iter::once("rust")
                .chain(p.split('/'))
                .map(String::from)
                .collect();
            if matches!(item, ManifestItem::File(_)) && tree.contains(&at) {
                bail!("{p} is listed twice (again in {})", manifest.display());
            }
            tree.add(&dir.join(p), &at, &|_, _| false)?;
        }
    }
    Ok(tree)
}

/// Parses a rustup component manifest: lines `file:<path>` or `dir:<path>`, relative paths only.
pub fn parse_manifest(text: &str) -> Result<Vec<ManifestItem>> {
    let mut items = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let (kind, path) = line
            .split_once(':')
            .with_context(|| format!("line {}: {line:?} has no kind:", i + 1))?;
        let safe = Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        ensure!(
            safe && !path.is_empty(),
            "line {}: path {path:?} must be relative, without `..`",
            i + 1
        );
        items.push(match kind {
            "file" => ManifestItem::File(path.to_owned()),
            "dir" => ManifestItem::Dir(path.to_owned()),
            _ => bail!(
                "line {}: unknown kind {kind:?} (expected file or dir)",
                i + 1
            ),
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_manifest_lines() {
        let items = parse_manifest("file:bin/rustc\ndir:share/doc/rust/html\n\n").unwrap();
        assert_eq!(
            items,
            [
                ManifestItem::File("bin/rustc".into()),
                ManifestItem::Dir("share/doc/rust/html".into())
            ]
        );
        assert!(parse_manifest("file:/etc/passwd").is_err());
        assert!(parse_manifest("file:../x").is_err());
        let err = parse_manifest("file:a\nlink:b").unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("link"), "{err}");
    }

    #[test]
    fn members_come_from_the_listed_components_only() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path();
        let rustlib = t.join("lib/rustlib");
        std::fs::create_dir_all(rustlib.join("x/lib")).unwrap();
        std::fs::create_dir_all(t.join("bin")).unwrap();
        std::fs::create_dir_all(t.join("share/html")).unwrap();
        for f in [
            "bin/rustc",
            "bin/cargo",
            "bin/clippy-driver",
            "lib/rustlib/x/lib/libstd.rlib",
            "share/html/i.html",
        ] {
            std::fs::write(t.join(f), f).unwrap();
        }
        std::fs::write(
            rustlib.join("manifest-rustc-x"),
            "file:bin/rustc\ndir:share/html\n",
        )
        .unwrap();
        std::fs::write(rustlib.join("manifest-cargo-x"), "file:bin/cargo\n").unwrap();
        std::fs::write(
            rustlib.join("manifest-rust-std-x"),
            "file:lib/rustlib/x/lib/libstd.rlib\n",
        )
        .unwrap();
        std::fs::write(
            rustlib.join("manifest-clippy-x"),
            "file:bin/clippy-driver\n",
        )
        .unwrap();
        let components = ["rustc", "cargo", "rust-std"].map(String::from);
        let tree = members(t, &components, "x").unwrap();
        let got: Vec<String> = tree.members().into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            got,
            [
                "rust",
                "rust/bin",
                "rust/bin/cargo",
                "rust/bin/rustc",
                "rust/lib",
                "rust/lib/rustlib",
                "rust/lib/rustlib/x",
                "rust/lib/rustlib/x/lib",
                "rust/lib/rustlib/x/lib/libstd.rlib",
                "rust/share",
                "rust/share/html",
                "rust/share/html/i.html"
            ]
        );
        let err = format!("{:#}", members(t, &["rust-docs".into()], "x").unwrap_err());
        assert!(err.contains("rustup component add rust-docs"), "{err}");
    }

    #[test]
    fn wrong_commit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let rustc = dir.path().join("rustc");
        std::fs::write(
            &rustc,
            "#!/bin/sh\necho 'rustc 1.0.0'\necho 'commit-hash: abc'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&rustc, std::fs::Permissions::from_mode(0o755)).unwrap();
        check_commit(&rustc, "abc").unwrap();
        let err = check_commit(&rustc, "def").unwrap_err().to_string();
        assert!(
            err.contains("commit abc") && err.contains("wants def"),
            "{err}"
        );
    }
}
