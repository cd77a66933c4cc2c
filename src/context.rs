//! Deterministic tars: Docker build contexts, and the writer the toolchain tars use too.
//!
//! The same tree always gives the same bytes: members sorted by path, every parent directory
//! present, GNU headers, mtime 0, uid/gid 0, no user or group names, mode 0755 for directories and
//! for files with any execute bit, 0644 for other files. Symlinks stay symlinks and must point
//! inside the tar.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, Result, bail, ensure};
use tar::{EntryType, Header};

use crate::cache::HashingWriter;

/// A build context written to disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The tar file.
    pub path: PathBuf,
    /// sha256 of the tar file, hex.
    pub sha256: String,
}

/// Writes a build context tar to `out`: the files of `dir` (skipping `target/` and `.git`
/// directories at any depth, and the top-level entries named in `skip`) plus `extra` entries, each
/// a path inside the context and the file or directory on disk that fills it (e.g.
/// `("vendor", <vendored crates>)`, `("rust.tar", <blob>)`).
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
    let mut members = BTreeMap::new();
    collect(dir, "", true, &mut members)
        .with_context(|| format!("reading build context {}", dir.display()))?;
    members.retain(|path, _| {
        let top = path.split('/').next().unwrap_or_default();
        !skip.contains(&top)
    });
    for (at, source) in extra {
        let at = normalize(at).with_context(|| format!("extra context entry {at:?}"))?;
        ensure!(
            !at.is_empty(),
            "extra context entry for {} has an empty path",
            source.display()
        );
        collect(source, &at, false, &mut members)
            .with_context(|| format!("adding {} to the build context as {at}", source.display()))?;
    }
    let sha256 = write_file(out, &members)?;
    Ok(Context {
        path: out.to_owned(),
        sha256,
    })
}

/// Writes the tar of `members` to `out` through a synced temporary file in the same directory
/// and returns its sha256, computed while writing.
fn write_file(out: &Path, members: &BTreeMap<String, PathBuf>) -> Result<String> {
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
    let hashing = HashingWriter::new(BufWriter::with_capacity(1 << 20, file));
    let hashing =
        write_members(hashing, members).with_context(|| format!("writing {}", out.display()))?;
    let (buf, sha256, _) = hashing.finish();
    let file = buf
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("writing {}", out.display()))?;
    file.sync_all()
        .with_context(|| format!("syncing {}", tmp.path().display()))?;
    tmp.persist(out)
        .with_context(|| format!("renaming the build context to {}", out.display()))?;
    Ok(sha256)
}

/// Writes `members` (tar path → file, directory or symlink on disk) as a deterministic tar to
/// `out`, every missing ancestor directory included in its sorted place, and returns `out`.
pub fn write_members<W: Write>(out: W, members: &BTreeMap<String, PathBuf>) -> Result<W> {
    let mut all: BTreeMap<&str, Option<&Path>> = BTreeMap::new();
    for (path, source) in members {
        let mut at = path.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            all.entry(parent).or_insert(None);
            at = parent;
        }
        all.insert(path, Some(source));
    }
    let mut tar = TarWriter::new(out);
    for (path, source) in all {
        match source {
            Some(source) => tar
                .disk(path, source)
                .with_context(|| format!("adding {}", source.display()))?,
            None => tar.dir(path)?,
        }
    }
    tar.into_inner()
}

/// Adds `source` (a file, or a directory walked recursively, symlinks not followed) at tar path
/// `at` to `members`; with `skip_build_dirs`, directories named `.git` or `target` are left out.
/// A path already in `members` is an error.
pub fn collect(
    source: &Path,
    at: &str,
    skip_build_dirs: bool,
    members: &mut BTreeMap<String, PathBuf>,
) -> Result<()> {
    let walk = walkdir::WalkDir::new(source)
        .follow_root_links(true)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name();
            !(skip_build_dirs
                && e.depth() > 0
                && e.file_type().is_dir()
                && (name == ".git" || name == "target"))
        });
    for entry in walk {
        let entry = entry?;
        let rel = entry
            .path()
            .strip_prefix(source)
            .expect("walkdir yields paths under its root");
        let rel = rel
            .to_str()
            .with_context(|| format!("{} is not UTF-8", entry.path().display()))?;
        let path = match (at.is_empty(), rel.is_empty()) {
            (_, true) => at.to_owned(),
            (true, false) => rel.to_owned(),
            (false, false) => format!("{at}/{rel}"),
        };
        if path.is_empty() {
            continue; // the context root itself
        }
        if let Some(prev) = members.insert(path.clone(), entry.path().to_owned()) {
            bail!(
                "{path} appears twice in the build context ({} and {})",
                prev.display(),
                entry.path().display()
            );
        }
    }
    Ok(())
}

/// Writes tar members with fixed metadata (see the module docs). Parent directories are added on
/// demand; [`write_members`] adds members in sorted order so that the bytes are reproducible.
struct TarWriter<W: Write> {
    builder: tar::Builder<W>,
    dirs: BTreeSet<String>,
}

impl<W: Write> TarWriter<W> {
    fn new(out: W) -> Self {
        Self {
            builder: tar::Builder::new(out),
            dirs: BTreeSet::new(),
        }
    }

    /// A directory (mode 0755) and its missing parents; adding one twice writes it once.
    fn dir(&mut self, path: &str) -> Result<()> {
        let path = normalize(path)?;
        if path.is_empty() || self.dirs.contains(&path) {
            return Ok(());
        }
        self.parents(&path)?;
        let mut header = header(EntryType::Directory, 0o755, 0);
        self.builder
            .append_data(&mut header, format!("{path}/"), io::empty())?;
        self.dirs.insert(path);
        Ok(())
    }

    /// A regular file of exactly `size` bytes read from `data`, mode 0755 if `executable` else 0644.
    fn file(&mut self, path: &str, size: u64, executable: bool, data: impl Read) -> Result<()> {
        let path = normalize(path)?;
        self.parents(&path)?;
        let mut header = header(
            EntryType::Regular,
            if executable { 0o755 } else { 0o644 },
            size,
        );
        let mut data = Exact {
            inner: data,
            left: size,
        };
        self.builder
            .append_data(&mut header, &path, &mut data)
            .with_context(|| format!("tar member {path}"))?;
        ensure!(
            data.left == 0,
            "tar member {path}: {} bytes short",
            data.left
        );
        Ok(())
    }

    /// A symlink to `target`, which must be relative and stay inside the tar.
    fn symlink(&mut self, path: &str, target: &str) -> Result<()> {
        let path = normalize(path)?;
        check_link(&path, target)?;
        self.parents(&path)?;
        let mut header = header(EntryType::Symlink, 0o777, 0);
        self.builder
            .append_link(&mut header, &path, target)
            .with_context(|| format!("tar member {path}"))?;
        Ok(())
    }

    /// The member at `path` from `source` on disk: a directory, a file or a symlink.
    fn disk(&mut self, path: &str, source: &Path) -> Result<()> {
        let meta = std::fs::symlink_metadata(source)
            .with_context(|| format!("reading {}", source.display()))?;
        let kind = meta.file_type();
        if kind.is_dir() {
            self.dir(path)
        } else if kind.is_symlink() {
            let target = std::fs::read_link(source)
                .with_context(|| format!("reading link {}", source.display()))?;
            let target = target
                .to_str()
                .with_context(|| format!("link {} is not UTF-8", source.display()))?;
            self.symlink(path, target)
                .with_context(|| format!("link {}", source.display()))
        } else if kind.is_file() {
            let file =
                File::open(source).with_context(|| format!("opening {}", source.display()))?;
            let meta = file
                .metadata()
                .with_context(|| format!("reading {}", source.display()))?;
            self.file(path, meta.len(), is_executable(&meta), file)
        } else {
            bail!(
                "{} is neither a file, a directory nor a symlink",
                source.display()
            )
        }
    }

    /// Finishes the archive and returns the writer.
    fn into_inner(self) -> Result<W> {
        self.builder.into_inner().context("finishing the tar")
    }

    fn parents(&mut self, path: &str) -> Result<()> {
        match path.rsplit_once('/') {
            Some((parent, _)) => self.dir(parent),
            None => Ok(()),
        }
    }
}

fn header(kind: EntryType, mode: u32, size: u64) -> Header {
    let mut h = Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}

/// `a//b/./c/` → `a/b/c`; absolute paths and `..` are errors.
fn normalize(path: &str) -> Result<String> {
    let mut parts = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str().expect("from a str")),
            Component::CurDir => {}
            _ => bail!("tar path {path:?} must be relative and must not contain `..`"),
        }
    }
    Ok(parts.join("/"))
}

/// Rejects link targets that are absolute or climb above the tar's root.
fn check_link(path: &str, target: &str) -> Result<()> {
    let mut depth = path.split('/').count() - 1; // directories above the link
    for c in Path::new(target).components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            _ => bail!(
                "symlink {path} -> {target} points outside the tar; replace it with the file it names"
            ),
        }
    }
    Ok(())
}

/// Reads at most `left` bytes and counts down, so a short file is detected instead of padded.
struct Exact<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let max = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
