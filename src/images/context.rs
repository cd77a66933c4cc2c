//! Build contexts: a probe's `docker/` folder plus the artifacts its Dockerfile adds, written as a
//! deterministic tar (see `tarball` for the format, which the toolchain tars share).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, ensure};

use crate::files::digest;
use crate::files::tarball::{self, Layout, Tree};

/// The recipe file in every image folder (`image.yaml`): never one of its context's sources.
pub const RECIPE: &str = "image.yaml";

/// A build context written to disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The tar file.
    pub path: PathBuf,
    /// sha256 of the tar file, hex.
    pub sha256: String,
}

/// Folders never taken into a build context: build output and Git metadata.
const SKIPPED_DIRS: [&str; 2] = [".git", "target"];

/// Writes a build context tar to `out`: the files of `dir` (skipping `target/` and `.git`
/// directories at any depth, and the entries named in `skip`, paths relative to `dir`) plus `extra`
/// entries, each a path inside the context and the file or directory on disk that fills it (e.g.
/// `("vendor", <vendored crates>)`, `("rust.tar", <blob>)`, a patched `main.go`).
pub fn write(
    dir: &Path,
    extra: &[(String, PathBuf)],
    skip: &[&str],
    out: &Path,
) -> Result<Context> {
    ensure!(
        dir.is_dir(),
        "build context {} is not a directory",
        dir.display()
    );
    let tree = tree(dir, extra, skip)?;
    let sha256 = write_file(out, &tree)?;
    Ok(Context {
        path: out.to_owned(),
        sha256,
    })
}

/// The members of a build context (see [`write`]).
fn tree(dir: &Path, extra: &[(String, PathBuf)], skip: &[&str]) -> Result<Tree> {
    let mut tree = Tree::new(Layout::Context);
    let build_dirs = |name: &str, is_dir: bool| is_dir && SKIPPED_DIRS.contains(&name);
    tree.add(dir, &[], &build_dirs)
        .with_context(|| format!("reading build context {}", dir.display()))?;
    for path in skip {
        tree.remove(&path.split('/').map(String::from).collect::<Vec<_>>());
    }
    for (at, source) in extra {
        let at = tarball::normalize(at).with_context(|| format!("extra context entry {at:?}"))?;
        ensure!(
            !at.is_empty(),
            "extra context entry for {} has an empty path",
            source.display()
        );
        let parts: Vec<String> = at.split('/').map(String::from).collect();
        // A folder of the context would merge with an extra folder of the same name: refuse it.
        ensure!(
            !tree.contains(&parts),
            "{at} appears twice in the build context (in {} and as {})",
            dir.display(),
            source.display()
        );
        tree.add(source, &parts, &|_, _| false)
            .with_context(|| format!("adding {} to the build context as {at}", source.display()))?;
    }
    Ok(tree)
}

/// Writes the tar of `tree` to `out` through a synced temporary file in the same directory
/// and returns its sha256, computed while writing.
fn write_file(out: &Path, tree: &Tree) -> Result<String> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".tmp-context-")
        .tempfile_in(parent)
        .with_context(|| format!("creating a temporary file in {}", parent.display()))?;
    let file = tmp
        .reopen()
        .with_context(|| format!("opening {}", tmp.path().display()))?;
    let mut tar =
        tarball::Writer::new(digest::Writer::new(BufWriter::with_capacity(1 << 20, file)));
    tar.tree(tree, None)
        .with_context(|| format!("writing {}", out.display()))?;
    let (buf, sha256, _) = tar.into_inner()?.finish();
    let file: File = buf
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("writing {}", out.display()))?;
    file.sync_all()
        .with_context(|| format!("syncing {}", tmp.path().display()))?;
    tmp.persist(out)
        .with_context(|| format!("renaming the build context to {}", out.display()))?;
    Ok(sha256)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("src/deep")).unwrap();
        std::fs::create_dir_all(p.join("target/debug")).unwrap();
        std::fs::create_dir_all(p.join(".git")).unwrap();
        std::fs::write(p.join("Dockerfile"), "FROM scratch\n").unwrap();
        std::fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(p.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(p.join("target/debug/big"), "x").unwrap();
        std::fs::write(p.join(".git/HEAD"), "ref").unwrap();
        std::os::unix::fs::symlink("../main.rs", p.join("src/deep/link")).unwrap();
        dir
    }

    fn members(tar_path: &Path) -> Vec<(String, u32, u64, u64)> {
        let mut archive = tar::Archive::new(File::open(tar_path).unwrap());
        let entries = archive.entries().unwrap();
        entries
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().to_string_lossy().into_owned(),
                    h.mode().unwrap(),
                    h.mtime().unwrap(),
                    h.uid().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn same_tree_gives_same_bytes() {
        let src = tree();
        let out = tempfile::tempdir().unwrap();
        let extra = vec![("blobs/rust.tar".to_owned(), src.path().join("Dockerfile"))];
        let a = write(src.path(), &extra, &[], &out.path().join("a.tar")).unwrap();
        let b = write(src.path(), &extra, &[], &out.path().join("b.tar")).unwrap();
        assert_eq!(a.sha256, b.sha256);
        assert_eq!(
            std::fs::read(&a.path).unwrap(),
            std::fs::read(&b.path).unwrap()
        );
        assert_eq!(a.sha256, digest::file(&a.path).unwrap());

        let file = File::options()
            .write(true)
            .open(src.path().join("src/main.rs"))
            .unwrap();
        file.set_modified(
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(12345),
        )
        .unwrap();
        let c = write(src.path(), &extra, &[], &out.path().join("c.tar")).unwrap();
        assert_eq!(
            a.sha256, c.sha256,
            "an mtime change must not change the bytes"
        );

        std::fs::write(src.path().join("src/main.rs"), "fn main() { }\n").unwrap();
        let d = write(src.path(), &extra, &[], &out.path().join("d.tar")).unwrap();
        assert_ne!(a.sha256, d.sha256, "a content change must change the hash");
    }

    #[test]
    fn members_are_sorted_normalised_and_filtered() {
        let src = tree();
        let out = tempfile::tempdir().unwrap();
        let extra = vec![("vendor".to_owned(), src.path().join("src"))];
        let ctx = write(src.path(), &extra, &[], &out.path().join("ctx.tar")).unwrap();
        let got = members(&ctx.path);
        let names: Vec<&str> = got.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "Dockerfile",
                "run.sh",
                "src/",
                "src/deep/",
                "src/deep/link",
                "src/main.rs",
                "vendor/",
                "vendor/deep/",
                "vendor/deep/link",
                "vendor/main.rs",
            ]
        );
        for (name, mode, mtime, uid) in &got {
            let want = if name.ends_with('/') || name == "run.sh" {
                0o755
            } else if name.ends_with("link") {
                0o777
            } else {
                0o644
            };
            assert_eq!((*mode, *mtime, *uid), (want, 0, 0), "{name}");
        }
        assert_eq!(
            std::fs::read_dir(out.path()).unwrap().count(),
            1,
            "no temporary file is left beside the output"
        );
    }

    #[test]
    fn links_outside_the_context_are_rejected() {
        let src = tree();
        std::os::unix::fs::symlink("../../etc/passwd", src.path().join("src/escape")).unwrap();
        let out = tempfile::tempdir().unwrap();
        let err = format!(
            "{:#}",
            write(src.path(), &[], &[], &out.path().join("x.tar")).unwrap_err()
        );
        assert!(err.contains("points outside"), "{err}");
    }

    #[test]
    fn duplicate_paths_are_rejected() {
        let src = tree();
        let out = tempfile::tempdir().unwrap();
        let extra = vec![("Dockerfile".to_owned(), src.path().join("run.sh"))];
        let err = format!(
            "{:#}",
            write(src.path(), &extra, &[], &out.path().join("x.tar")).unwrap_err()
        );
        assert!(err.contains("appears twice"), "{err}");
    }

    #[test]
    fn a_nested_skip_with_an_extra_in_its_place_replaces_one_file() {
        let src = tree();
        let out = tempfile::tempdir().unwrap();
        let patched = out.path().join("main.rs");
        std::fs::write(&patched, "fn main() { println!(); }\n").unwrap();
        let extra = vec![("src/main.rs".to_owned(), patched.clone())];
        let ctx = write(
            src.path(),
            &extra,
            &["src/main.rs"],
            &out.path().join("a.tar"),
        )
        .unwrap();
        let names: Vec<String> = members(&ctx.path).into_iter().map(|m| m.0).collect();
        assert!(names.contains(&"src/deep/link".to_string()), "{names:?}");
        let mut archive = tar::Archive::new(File::open(&ctx.path).unwrap());
        let mut main = String::new();
        for entry in archive.entries().unwrap() {
            let mut e = entry.unwrap();
            if e.path().unwrap().to_str() == Some("src/main.rs") {
                std::io::Read::read_to_string(&mut e, &mut main).unwrap();
            }
        }
        assert_eq!(main, "fn main() { println!(); }\n");
    }

    #[test]
    fn skipped_top_level_entries_are_left_out() {
        let src = tree();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(src.path().join("image.yaml"), "probe: true\n").unwrap();
        std::fs::write(src.path().join("src/image.yaml"), "kept\n").unwrap();
        let plain = write(src.path(), &[], &[], &out.path().join("a.tar")).unwrap();
        let ctx = write(src.path(), &[], &["image.yaml"], &out.path().join("b.tar")).unwrap();
        let names: Vec<String> = members(&ctx.path).into_iter().map(|m| m.0).collect();
        assert!(!names.contains(&"image.yaml".to_string()), "{names:?}");
        assert!(names.contains(&"src/image.yaml".to_string()), "{names:?}");
        assert_ne!(plain.sha256, ctx.sha256);
    }
}
