//! A run folder unpacked from an archive, checked against its own `SHA256SUMS` before anything in
//! it is trusted: a file edited, removed or added since the archive was written is named.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::sums::{self, NAME};
use crate::files::digest;
use crate::run::run_dir::{self, RunFiles};

/// What [`check_folder`] found.
#[derive(Debug, PartialEq)]
pub enum Integrity {
    /// Every file listed matches, and nothing else is there; the number of files.
    Matches(usize),
    /// The folder has no `SHA256SUMS` (a run folder before it is archived).
    Unlisted,
}

/// A run folder's files for `report`, `compare`, `merge` and `verify`: checked against its
/// `SHA256SUMS` when it has one ([`check_folder`]), then read as regular files only, never through
/// a link, each within its limit.
pub fn read_folder(dir: &Path) -> Result<RunFiles> {
    check_folder(dir)?;
    run_dir::RunDir::at(dir).read_files()
}

/// Checks every `SHA256SUMS` line of the folder `dir` against its file, and that no file is there
/// that it does not list. An error names each changed, missing or added file.
pub fn check_folder(dir: &Path) -> Result<Integrity> {
    let listing = dir.join(NAME);
    let Some(text) = run_dir::read_regular(&listing, sums::LIMIT)? else {
        return Ok(Integrity::Unlisted);
    };
    let root = dir.display().to_string();
    let lines = sums::parse(&root, &text)?;
    // The folder is walked first, links not followed: a linked folder (`source` → `/`) or file,
    // a FIFO or a device anywhere is refused by name before any listed file is opened, so that no
    // path through a link is read.
    let listed: BTreeSet<&str> = lines.iter().map(|l| l.path.as_str()).collect();
    let (mut added, mut odd) = (Vec::new(), Vec::new());
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        let rel = rel.to_string_lossy().into_owned();
        let kind = entry.file_type();
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            odd.push(rel);
        } else if rel != NAME && !listed.contains(rel.as_str()) {
            added.push(rel);
        }
    }
    if !odd.is_empty() {
        bail!(
            "{}: links, FIFOs or devices where a run folder holds regular files only: {}; \
             refused unread: unpack the archive again",
            dir.display(),
            first_few(&odd)
        );
    }
    let (mut changed, mut missing) = (Vec::new(), Vec::new());
    for line in &lines {
        let path = dir.join(&line.path);
        // Only a regular file counts, opened without following a link: a link could point
        // anywhere, and a FIFO would never end.
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => {
                let file = run_dir::open_regular(&path)?
                    .with_context(|| format!("{}: gone while it was read", path.display()))?;
                let (_, sha256, _) = digest::stream(file, None)
                    .with_context(|| format!("reading {}", path.display()))?;
                if sha256 != line.sha256 {
                    changed.push(line.path.clone());
                }
            }
            Ok(_) => changed.push(line.path.clone()),
            Err(_) => missing.push(line.path.clone()),
        }
    }
    let mut said = Vec::new();
    if !changed.is_empty() {
        said.push(format!(
            "files changed since the archive was written: {}",
            first_few(&changed)
        ));
    }
    if !missing.is_empty() {
        said.push(format!(
            "files listed in {NAME} but missing: {}",
            first_few(&missing)
        ));
    }
    if !added.is_empty() {
        said.push(format!("files not listed in {NAME}: {}", first_few(&added)));
    }
    if !said.is_empty() {
        bail!(
            "{}: {}; the folder no longer holds what its archive held (rerunning `parkbench \
             report` in it rewrites files too): unpack the archive again, or verify the archive \
             itself",
            dir.display(),
            said.join("; ")
        );
    }
    Ok(Integrity::Matches(lines.len()))
}

/// The first few of `names`, and how many more there are.
fn first_few(names: &[String]) -> String {
    const SHOWN: usize = 5;
    match names.len().checked_sub(SHOWN) {
        Some(more) if more > 0 => format!("{} and {more} more", names[..SHOWN].join(", ")),
        _ => names.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let mut sums = std::collections::BTreeMap::new();
        for (name, body) in [("samples.jsonl", "{}\n"), ("source/a.txt", "a")] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, body).unwrap();
            let (_, sha, _) = digest::stream(body.as_bytes(), None).unwrap();
            sums.insert(name.to_string(), sha);
        }
        std::fs::write(dir.path().join(NAME), sums::render(&sums)).unwrap();
        dir
    }

    #[test]
    fn an_untouched_folder_matches_and_one_without_sums_is_unlisted() {
        let dir = folder();
        assert_eq!(check_folder(dir.path()).unwrap(), Integrity::Matches(2));
        std::fs::remove_file(dir.path().join(NAME)).unwrap();
        assert_eq!(check_folder(dir.path()).unwrap(), Integrity::Unlisted);
    }

    #[test]
    fn a_changed_missing_or_added_file_is_named() {
        let dir = folder();
        std::fs::write(dir.path().join("samples.jsonl"), "{\"x\":1}\n").unwrap();
        std::fs::remove_file(dir.path().join("source/a.txt")).unwrap();
        std::fs::write(dir.path().join("compare.md"), "new").unwrap();
        let err = format!("{:#}", check_folder(dir.path()).unwrap_err());
        assert!(
            err.contains("files changed since the archive was written: samples.jsonl")
                && err.contains("missing: source/a.txt")
                && err.contains("not listed in SHA256SUMS: compare.md"),
            "{err}"
        );
    }

    #[test]
    fn a_listed_path_that_is_a_link_is_not_trusted() {
        let dir = folder();
        let target = dir.path().join("source/a.txt");
        let elsewhere = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(elsewhere.path(), "a").unwrap();
        std::fs::remove_file(&target).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &target).unwrap();
        let err = format!("{:#}", check_folder(dir.path()).unwrap_err());
        assert!(
            err.contains("links, FIFOs or devices") && err.contains("source/a.txt"),
            "{err}"
        );
    }

    #[test]
    fn a_linked_folder_is_refused_before_a_listed_file_through_it_is_read() {
        // `source` → a folder outside whose `a.txt` says what SHA256SUMS lists: read through the
        // link, it would match.
        let dir = folder();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("a.txt"), "a").unwrap();
        std::fs::remove_dir_all(dir.path().join("source")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("source")).unwrap();
        let err = format!("{:#}", check_folder(dir.path()).unwrap_err());
        assert!(
            err.contains("links, FIFOs or devices") && err.contains("source"),
            "{err}"
        );
    }

    #[test]
    fn many_added_files_are_counted_not_all_named() {
        let dir = folder();
        for i in 0..8 {
            std::fs::write(dir.path().join(format!("extra-{i}")), "x").unwrap();
        }
        let err = format!("{:#}", check_folder(dir.path()).unwrap_err());
        assert!(err.contains("extra-4 and 3 more"), "{err}");
        assert!(!err.contains("extra-5"), "{err}");
    }

    #[test]
    fn folder_commands_refuse_a_tampered_folder() {
        let dir = folder();
        std::fs::write(dir.path().join("samples.jsonl"), "{\"x\":1}\n").unwrap();
        let err = format!("{:#}", read_folder(dir.path()).unwrap_err());
        assert!(
            err.contains("changed since the archive was written: samples.jsonl"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            crate::outputs::compare::load(dir.path()).err().unwrap()
        );
        assert!(
            err.contains("changed since the archive was written"),
            "{err}"
        );
    }

    #[test]
    fn folder_commands_read_no_link_fifo_or_device() {
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(outside.path(), "root:x:0:0:a secret line\n").unwrap();
        let fifo = |path: &Path| {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        };
        type Make<'a> = &'a dyn Fn(&Path);
        let cases: [(&str, Make); 3] = [
            ("a symbolic link", &|p| {
                std::os::unix::fs::symlink(outside.path(), p).unwrap()
            }),
            ("a symbolic link", &|p| {
                std::os::unix::fs::symlink("/dev/zero", p).unwrap()
            }),
            ("a FIFO, socket or device", &fifo),
        ];
        for (wanted, make) in cases {
            for name in ["study.yaml", "samples.jsonl", "env.json", NAME] {
                let dir = tempfile::tempdir().unwrap();
                std::fs::write(dir.path().join("study.yaml"), "id: demo\n").unwrap();
                std::fs::write(dir.path().join("samples.jsonl"), "").unwrap();
                let path = dir.path().join(name);
                let _ = std::fs::remove_file(&path);
                make(&path);
                let err = format!("{:#}", read_folder(dir.path()).unwrap_err());
                assert!(err.contains(&format!("{name}: {wanted}")), "{name}: {err}");
                assert!(!err.contains("secret"), "{err}");
            }
        }
    }
}
