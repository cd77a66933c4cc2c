//! The plan of a run archive: every entry it will hold, keyed by path components below `<run-id>/`
//! and so sorted folder-first, gathered from the run directory, the sources and the extra files.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use walkdir::WalkDir;

use super::{member, sums};

/// Folders never taken from a source tree: build output, vendored crates, Git metadata.
const SKIPPED_SOURCE_DIRS: [&str; 3] = ["target", "vendor", ".git"];

/// One planned entry; the plan is keyed by path components below `<run-id>/`.
#[derive(Debug)]
pub(super) enum Item {
    Dir,
    File {
        disk: PathBuf,
        size: u64,
        executable: bool,
    },
    Link {
        target: String,
    },
}

pub(super) type Plan = BTreeMap<Vec<String>, Item>;

/// Gathers the entries of `run_dir`, `sources` (under `source/`) and `extras` (see `write_with`).
pub(super) fn collect(
    run_dir: &Path,
    sources: &[(String, PathBuf)],
    extras: &[(String, PathBuf)],
) -> Result<Plan> {
    let mut plan = Plan::from([(Vec::new(), Item::Dir)]);
    add_tree(&mut plan, &[], run_dir, false)?;
    for (name, disk) in sources {
        let prefix = member_name(&format!("source/{name}"))
            .with_context(|| format!("source {name:?} ({})", disk.display()))?;
        let meta =
            fs::metadata(disk).with_context(|| format!("reading source {}", disk.display()))?;
        if meta.is_dir() {
            add_tree(&mut plan, &prefix, disk, true)?;
        } else {
            insert(&mut plan, prefix, file_item(disk, &meta)?, disk)?;
        }
    }
    for (name, disk) in extras {
        let path = member_name(name).with_context(|| format!("extra member {name:?}"))?;
        let meta = fs::metadata(disk).with_context(|| format!("reading {}", disk.display()))?;
        ensure!(
            meta.is_file(),
            "extra member {name:?}: {} is not a regular file",
            disk.display()
        );
        insert(&mut plan, path, file_item(disk, &meta)?, disk)?;
    }
    ensure!(
        !plan.contains_key(&vec![sums::NAME.to_string()]),
        "{}/{}: the run directory may not hold a file of that name; the archive writes its own",
        run_dir.display(),
        sums::NAME
    );
    Ok(plan)
}

fn member_name(name: &str) -> Result<Vec<String>> {
    let parts = member::components(name)
        .map_err(|why| anyhow::anyhow!("{why}: member names are relative paths of plain names"))?;
    Ok(parts.into_iter().map(String::from).collect())
}

fn file_item(disk: &Path, meta: &fs::Metadata) -> Result<Item> {
    ensure!(
        meta.is_file(),
        "{} is not a regular file, folder or symlink",
        disk.display()
    );
    let executable = meta.permissions().mode() & 0o111 != 0;
    Ok(Item::File {
        disk: disk.to_owned(),
        size: meta.len(),
        executable,
    })
}

/// Adds everything below `root` at `prefix`. Run folders skip `*.tmp`; source trees skip
/// [`SKIPPED_SOURCE_DIRS`]. Symlinks are kept as links when they point inside `root`.
fn add_tree(plan: &mut Plan, prefix: &[String], root: &Path, is_source: bool) -> Result<()> {
    let keep = |e: &walkdir::DirEntry| {
        let name = e.file_name().to_string_lossy();
        e.depth() == 0
            || if is_source {
                !SKIPPED_SOURCE_DIRS.contains(&name.as_ref())
            } else {
                !name.ends_with(".tmp")
            }
    };
    for entry in WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_entry(keep)
    {
        let entry = entry.with_context(|| format!("reading {}", root.display()))?;
        let disk = entry.path();
        let rel = relative_components(root, disk)?;
        let item = if entry.file_type().is_dir() {
            Item::Dir
        } else if entry.file_type().is_symlink() {
            link_item(disk, &rel)?
        } else {
            file_item(
                disk,
                &entry
                    .metadata()
                    .with_context(|| format!("reading {}", disk.display()))?,
            )?
        };
        let path = prefix.iter().cloned().chain(rel).collect();
        insert(plan, path, item, disk)?;
    }
    Ok(())
}

fn relative_components(root: &Path, disk: &Path) -> Result<Vec<String>> {
    let rel = disk
        .strip_prefix(root)
        .expect("walkdir yields paths below its root");
    let Some(rel) = rel.to_str() else {
        bail!(
            "{}: file name is not UTF-8: rename it to archive it",
            disk.display()
        );
    };
    if rel.is_empty() {
        return Ok(Vec::new());
    }
    member_name(rel).with_context(|| format!("{}: rename it to archive it", disk.display()))
}

fn link_item(disk: &Path, rel: &[String]) -> Result<Item> {
    let target =
        fs::read_link(disk).with_context(|| format!("reading symlink {}", disk.display()))?;
    let target = target
        .to_str()
        .with_context(|| format!("{}: link target is not UTF-8", disk.display()))?;
    let dir: Vec<&str> = rel[..rel.len() - 1].iter().map(String::as_str).collect();
    let why = match member::resolve_link(&dir, target) {
        Ok(Some(_)) => {
            return Ok(Item::Link {
                target: target.to_string(),
            });
        }
        Ok(None) => "it points outside the archived folder",
        Err(why) => why,
    };
    bail!(
        "{}: symlink to {target:?} refused ({why}): only relative links that stay inside the \
         archived folder are kept; replace it with a copy of the file",
        disk.display()
    )
}

/// Inserts an entry and the folders above it; two inputs landing on one member are an error.
fn insert(plan: &mut Plan, path: Vec<String>, item: Item, disk: &Path) -> Result<()> {
    for depth in 0..path.len() {
        let parent = path[..depth].to_vec();
        match plan.get(&parent) {
            None => _ = plan.insert(parent, Item::Dir),
            Some(Item::Dir) => {}
            Some(_) => bail!(clash(&parent, disk)),
        }
    }
    match (plan.get(&path), &item) {
        (None, _) | (Some(Item::Dir), Item::Dir) => _ = plan.insert(path, item),
        _ => bail!(clash(&path, disk)),
    }
    Ok(())
}

fn clash(path: &[String], disk: &Path) -> String {
    format!(
        "archive member {} would come from two inputs (the second is {}): a run-directory file \
         clashes with source/ or an extra member; rename one",
        path.join("/"),
        disk.display()
    )
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
