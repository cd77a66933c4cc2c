//! Writing a run archive: one deterministic `.tar.gz` holding the run folder, the sources it was
//! built from, optional extra files (exported images) and `SHA256SUMS`.
//!
//! Layout: `<run-id>/` (the run directory's files), `<run-id>/source/…` (from `sources`), extra
//! members at the paths the caller gives, and `<run-id>/SHA256SUMS` last. All other entries are
//! sorted by path, component by component, so a folder comes before its contents. Every header has
//! mtime 0, uid/gid 0 and empty owner names; files are 0644 (0755 when executable on disk), folders
//! 0755, symlinks 0777. The gzip header has no file name, mtime 0 and OS byte 255; the level is
//! fixed. The same inputs give the same bytes with the same build of parkbench (the deflate
//! implementation is pinned by Cargo.lock).

use std::collections::BTreeMap;
use std::fs;
use std::io::BufWriter;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use flate2::{Compression, GzBuilder};

use super::{plan, sums};
use crate::files::digest;
use crate::files::is_disk_full;
use crate::files::tarball::{self, Tree};
use crate::run::run_dir::RunDir;

/// gzip level; part of the byte-for-byte output, so never derived from the environment.
const GZIP_LEVEL: u32 = 6;
/// gzip OS byte: 255, "unknown", so the output does not depend on the writing system.
const GZIP_OS_UNKNOWN: u8 = 255;

/// The archive written by [`write`].
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveInfo {
    /// Where the archive is.
    pub path: PathBuf,
    /// SHA-256 of the `.tar.gz` file, lowercase hex.
    pub sha256: String,
    /// Size of the `.tar.gz` file, bytes.
    pub size_bytes: u64,
    /// Tar entries: folders, files, links and SHA256SUMS (as counted by `check`).
    pub members: usize,
}

/// Archives `run_dir` and `sources` into `out` (see the module docs for the layout).
///
/// `sources` are (path inside `source/`, file or folder on disk) pairs. Folders are taken
/// recursively without `target/`, `vendor/` and `.git`; a file is taken as given (e.g. a vendored
/// crate's `.cargo-checksum.json`).
pub fn write(run_dir: &Path, sources: &[(String, PathBuf)], out: &Path) -> Result<ArchiveInfo> {
    write_with(run_dir, sources, &[], out)
}

/// [`write`], plus `extras`: (path inside `<run-id>/`, file on disk) pairs such as
/// `("images/probe-go.tar", …)`. Extras are streamed from disk while the archive is written.
pub fn write_with(
    run_dir: &Path,
    sources: &[(String, PathBuf)],
    extras: &[(String, PathBuf)],
    out: &Path,
) -> Result<ArchiveInfo> {
    // A link such as `runs/latest` names the run it points at.
    let run = RunDir::open(run_dir)?;
    let run_dir = run.path();
    let run_id = run_id(run_dir)?;
    refuse_output_inside(run_dir, out)?;
    let plan = plan::collect(run_dir, sources, extras)?;
    write_plan(&plan, &run_id, out).map_err(|e| {
        if is_disk_full(&e) {
            e.context(format!(
                "writing archive {}: the disk is full; nothing of the run is lost: free space, \
                 then `parkbench archive {}`",
                out.display(),
                run_dir.display()
            ))
        } else {
            e.context(format!("writing archive {}", out.display()))
        }
    })
}

fn run_id(run_dir: &Path) -> Result<String> {
    let name = run_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    ensure!(
        tarball::components(name).is_ok_and(|c| c.len() == 1),
        "run directory {} has no usable name: the archive's top folder is named after it",
        run_dir.display()
    );
    Ok(name.to_string())
}

fn refuse_output_inside(run_dir: &Path, out: &Path) -> Result<()> {
    let run_dir = fs::canonicalize(run_dir)
        .with_context(|| format!("opening run directory {}", run_dir.display()))?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let parent = fs::canonicalize(parent)
        .with_context(|| format!("opening {}: create the folder first", parent.display()))?;
    ensure!(
        !parent.starts_with(&run_dir),
        "archive {} would be inside the run directory it archives: write it next to the run directory",
        out.display()
    );
    Ok(())
}

fn write_plan(plan: &Tree, run_id: &str, out: &Path) -> Result<ArchiveInfo> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temp = tempfile::Builder::new()
        .prefix(".parkbench-archive-")
        .suffix(".tmp")
        .tempfile_in(parent)
        .with_context(|| format!("creating a temporary file in {}", parent.display()))?;
    let counted = digest::Writer::new(BufWriter::new(temp.as_file()));
    let gz = GzBuilder::new()
        .mtime(0)
        .operating_system(GZIP_OS_UNKNOWN)
        .write(counted, Compression::new(GZIP_LEVEL));
    let mut tar = tarball::Writer::new(gz);
    tar.dir(run_id)?;
    let mut checksums = BTreeMap::new();
    for (path, entry) in plan.members() {
        let sha256 = tar
            .append_hashed(&format!("{run_id}/{path}"), entry)
            .map_err(|e| match is_disk_full(&e) {
                true => e.context(format!("archiving {path}")),
                false => e.context(format!(
                    "archiving {path}: if a file changed while being archived, archive the run again"
                )),
            })?;
        if let Some(sha256) = sha256 {
            checksums.insert(path, sha256);
        }
    }
    let listing = sums::render(&checksums);
    tar.file(
        &format!("{run_id}/{}", sums::NAME),
        listing.len() as u64,
        false,
        listing.as_bytes(),
    )?;
    let counted = tar.into_inner()?.finish()?;
    let (buffered, sha256, size_bytes) = counted.finish();
    buffered.into_inner().map_err(|e| e.into_error())?;
    temp.as_file().sync_all()?;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))?;
    temp.persist(out)
        .with_context(|| format!("renaming the temporary file to {}", out.display()))?;
    Ok(ArchiveInfo {
        path: out.to_owned(),
        sha256,
        size_bytes,
        // The top folder, every planned member, and SHA256SUMS.
        members: plan.len() + 2,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use std::fs::File;

    use tar::EntryType;
    use walkdir::WalkDir;

    use super::super::check;
    use super::super::fixture::{Fixture, put, read_raw};
    use super::*;

    fn sha256_of(path: &Path) -> String {
        crate::files::digest::file(path).unwrap()
    }

    #[test]
    fn same_inputs_give_identical_bytes() {
        let fx = Fixture::new();
        let first = fx.write();
        let again = write(&fx.run_dir, &fx.sources, &fx.path("again.tar.gz")).unwrap();
        assert_eq!(
            fs::read(&first.path).unwrap(),
            fs::read(&again.path).unwrap()
        );
        assert_eq!(first.sha256, again.sha256);
        assert_eq!(first.sha256, sha256_of(&first.path));
        assert_eq!(first.size_bytes, fs::metadata(&first.path).unwrap().len());
    }

    #[test]
    fn mtimes_and_permission_bits_on_disk_do_not_change_bytes() {
        let fx = Fixture::new();
        let first = fs::read(&fx.write().path).unwrap();
        let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_234_567_890);
        for entry in WalkDir::new(fx.tmp.path().join("repo"))
            .into_iter()
            .chain(WalkDir::new(&fx.run_dir))
        {
            let entry = entry.unwrap();
            if entry.file_type().is_file() {
                File::options()
                    .write(true)
                    .open(entry.path())
                    .unwrap()
                    .set_modified(when)
                    .unwrap();
            }
        }
        fs::set_permissions(
            fx.run_dir.join("env.json"),
            fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        fs::remove_file(&fx.out).unwrap();
        assert_eq!(fs::read(&fx.write().path).unwrap(), first);
    }

    #[test]
    fn layout_is_sorted_with_fixed_headers() {
        let fx = Fixture::new();
        let info = fx.write();
        let bytes = fs::read(&info.path).unwrap();
        assert_eq!(
            bytes[..10],
            [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, GZIP_OS_UNKNOWN]
        );
        let entries = read_raw(&info.path);
        let names: Vec<String> = entries.iter().map(|e| e.name()).collect();
        assert_eq!(info.members, names.len());
        assert_eq!(names[0], "run-1/");
        assert_eq!(names.last().unwrap(), "run-1/SHA256SUMS");
        let mut sorted = names[..names.len() - 1].to_vec();
        sorted.sort_by_key(|n| {
            n.trim_end_matches('/')
                .split('/')
                .map(String::from)
                .collect::<Vec<_>>()
        });
        assert_eq!(sorted, names[..names.len() - 1]);
        for wanted in [
            "run-1/samples.jsonl",
            "run-1/source/docker/probe-go/main.go",
            "run-1/source/toolchains/",
        ] {
            assert!(
                names.contains(&wanted.to_string()),
                "{wanted} missing from {names:?}"
            );
        }
        assert!(
            names.contains(
                &"run-1/source/docker/probe-rust/vendor/tokio/.cargo-checksum.json".into()
            )
        );
        for skipped in ["partial.tmp", "target", "vendor/tokio/src", ".git"] {
            assert!(
                !names.iter().any(|n| n.contains(skipped)),
                "{skipped} archived: {names:?}"
            );
        }
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
        for entry in tar.entries().unwrap() {
            let h = entry.unwrap().header().clone();
            assert_eq!(
                (h.mtime().unwrap(), h.uid().unwrap(), h.gid().unwrap()),
                (0, 0, 0)
            );
            assert_eq!(
                (h.username().unwrap(), h.groupname().unwrap()),
                (Some(""), Some(""))
            );
            let dir = h.entry_type() == EntryType::Directory;
            assert_eq!(h.mode().unwrap(), if dir { 0o755 } else { 0o644 });
        }
    }

    #[test]
    fn sha256sums_cover_every_file() {
        let fx = Fixture::new();
        let entries = read_raw(&fx.write().path);
        let listing = String::from_utf8(entries.last().unwrap().data.clone()).unwrap();
        let files = entries
            .iter()
            .filter(|e| e.kind == EntryType::Regular)
            .count();
        assert_eq!(listing.lines().count(), files - 1);
        let samples = format!(
            "{}  samples.jsonl",
            sha256_of(&fx.run_dir.join("samples.jsonl"))
        );
        assert!(listing.lines().any(|l| l == samples), "{listing}");
    }

    #[test]
    fn executable_files_keep_0755() {
        let fx = Fixture::new();
        let script = fx.tmp.path().join("repo/docker/probe-go/build.sh");
        put(&script, "#!/bin/sh\n");
        fs::set_permissions(&script, fs::Permissions::from_mode(0o700)).unwrap();
        let entries = read_raw(&fx.write().path);
        let entry = entries
            .iter()
            .find(|e| e.name().ends_with("build.sh"))
            .unwrap();
        assert_eq!(entry.mode, 0o755);
    }

    #[test]
    fn extras_are_streamed_in_and_listed() {
        let fx = Fixture::new();
        let image = fx.path("probe-go.tar");
        fs::write(&image, vec![7u8; 3 << 20]).unwrap();
        let extras = [("images/probe-go.tar".to_string(), image.clone())];
        let info = write_with(&fx.run_dir, &fx.sources, &extras, &fx.out).unwrap();
        let report = check(&info.path).unwrap();
        assert_eq!(report.members, info.members);
        let entries = read_raw(&info.path);
        let listing = String::from_utf8(entries.last().unwrap().data.clone()).unwrap();
        assert!(listing.contains(&format!("{}  images/probe-go.tar\n", sha256_of(&image))));
    }

    #[test]
    fn output_inside_the_run_directory_is_refused() {
        let fx = Fixture::new();
        let err = format!(
            "{:#}",
            write(&fx.run_dir, &fx.sources, &fx.run_dir.join("a.tar.gz")).unwrap_err()
        );
        assert!(err.contains("inside the run directory"), "{err}");
    }
}
