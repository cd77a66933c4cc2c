//! The plan of a run archive: every entry it will hold below `<run-id>/`, gathered from the run
//! directory, the sources and the extra files, in the archive layout (a folder before its contents).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

use super::sums;
use crate::files::tarball::{self, Entry, Layout, Tree};
use crate::run::run_dir::{FLEET, HOSTS};

/// Folders never taken from a source tree: build output, vendored crates, Git metadata.
const SKIPPED_SOURCE_DIRS: [&str; 3] = ["target", "vendor", ".git"];

/// The driver's own code, whose `vendor` folder is a module of it (`src/images/vendor/`), not crates.
const DRIVER_CODE: &str = "src";

/// Gathers the entries of `run_dir`, `sources` (under `source/`) and `extras` (see `write_with`).
pub(super) fn collect(
    run_dir: &Path,
    sources: &[(String, PathBuf)],
    extras: &[(String, PathBuf)],
) -> Result<Tree> {
    let mut plan = Tree::new(Layout::Archive);
    // Run folders leave out files being written (`*.tmp`), and a fleet run its hosts' sub-runs
    // (its merged samples carry everything they measured).
    let fleet = run_dir.join(FLEET).is_file();
    plan.add(run_dir, &[], &|name, dir| {
        name.ends_with(".tmp") || (fleet && dir && name == HOSTS)
    })?;
    for (name, disk) in sources {
        let prefix = member_name(&format!("source/{name}"))
            .with_context(|| format!("source {name:?} ({})", disk.display()))?;
        fs::metadata(disk).with_context(|| format!("reading source {}", disk.display()))?;
        let code = name == DRIVER_CODE;
        plan.add(disk, &prefix, &|name, _| {
            SKIPPED_SOURCE_DIRS.contains(&name) && !(code && name == "vendor")
        })?;
    }
    for (name, disk) in extras {
        let path = member_name(name).with_context(|| format!("extra member {name:?}"))?;
        let meta = fs::metadata(disk).with_context(|| format!("reading {}", disk.display()))?;
        ensure!(
            meta.is_file(),
            "extra member {name:?}: {} is not a regular file",
            disk.display()
        );
        let entry = Entry::File {
            disk: disk.to_owned(),
            size: meta.len(),
            executable: std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0,
        };
        plan.insert(path, entry, disk)?;
    }
    ensure!(
        !plan.contains(&[sums::NAME.to_string()]),
        "{}/{}: the run directory may not hold a file of that name; the archive writes its own",
        run_dir.display(),
        sums::NAME
    );
    Ok(plan)
}

fn member_name(name: &str) -> Result<Vec<String>> {
    let parts = tarball::components(name)
        .map_err(|why| anyhow::anyhow!("{why}: member names are relative paths of plain names"))?;
    Ok(parts.into_iter().map(String::from).collect())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::super::fixture::{Fixture, put, read_raw};
    use super::super::{check, write, write_with};
    use super::*;
    use tar::EntryType;

    #[test]
    fn symlinks_inside_are_kept_and_outside_refused() {
        let fx = Fixture::new();
        let link = fx.tmp.path().join("repo/docker/probe-go/current.go");
        symlink("main.go", &link).unwrap();
        let entries = read_raw(&fx.write().path);
        let kept = entries
            .iter()
            .find(|e| e.name().ends_with("current.go"))
            .unwrap();
        assert_eq!(
            (kept.kind, kept.link.as_slice()),
            (EntryType::Symlink, &b"main.go"[..])
        );
        check(&fx.out).unwrap();
        for target in ["../../outside", "/etc/passwd"] {
            fs::remove_file(&link).unwrap();
            symlink(target, &link).unwrap();
            let err = format!(
                "{:#}",
                write(&fx.run_dir, &fx.sources, &fx.path("x.tar.gz")).unwrap_err()
            );
            assert!(
                err.contains("current.go: symlink to") && err.contains("refused"),
                "{err}"
            );
        }
    }

    #[test]
    fn clashing_or_unsafe_names_are_refused() {
        let fx = Fixture::new();
        let out = fx.path("x.tar.gz");
        let main_go = fx.tmp.path().join("repo/docker/probe-go/main.go");
        let clash = [(
            "source/docker/probe-go/main.go".to_string(),
            main_go.clone(),
        )];
        let err = format!(
            "{:#}",
            write_with(&fx.run_dir, &fx.sources, &clash, &out).unwrap_err()
        );
        assert!(
            err.contains("source/docker/probe-go/main.go would come from two inputs"),
            "{err}"
        );
        for name in ["../up", "/abs", ""] {
            let sources = [(name.to_string(), main_go.clone())];
            let err = format!("{:#}", write(&fx.run_dir, &sources, &out).unwrap_err());
            assert!(err.contains(&format!("source {name:?}")), "{err}");
        }
        put(&fx.run_dir.join("SHA256SUMS"), "stale");
        let err = format!("{:#}", write(&fx.run_dir, &fx.sources, &out).unwrap_err());
        assert!(
            err.contains("SHA256SUMS: the run directory may not hold"),
            "{err}"
        );
        assert!(!out.exists());
    }

    #[test]
    fn file_names_unsafe_in_an_archive_are_refused() {
        let fx = Fixture::new();
        put(&fx.run_dir.join("notes\nrun.txt"), "x");
        let err = format!(
            "{:#}",
            write(&fx.run_dir, &fx.sources, &fx.path("x.tar.gz")).unwrap_err()
        );
        assert!(
            err.contains("control character in path") && err.contains("rename it"),
            "{err}"
        );
    }

    #[test]
    fn long_paths_survive_the_round_trip() {
        let fx = Fixture::new();
        let deep = format!("{}/probe.go", ["nested-folder-name"; 8].join("/"));
        put(
            &fx.tmp.path().join("repo/docker").join(&deep),
            "package main\n",
        );
        let entries = read_raw(&fx.write().path);
        let wanted = format!("run-1/source/docker/{deep}");
        assert!(wanted.len() > 100);
        assert!(entries.iter().any(|e| e.name() == wanted));
        check(&fx.out).unwrap();
    }
}
