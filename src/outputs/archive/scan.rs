//! One streaming pass over a run archive's `.tar.gz`: enforces the entry rules (one top folder, no
//! absolute or `..` paths, no links leaving the folder, no members below a link, no duplicates, no
//! devices) and hashes every file as it streams; then `SHA256SUMS` is compared with the hashes.
//! Nothing is written to disk, unless the caller asks for some members to be unpacked ([`Unpack`]):
//! those are written as they stream, after the entry rules passed, and the caller must discard the
//! folder when the scan fails.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use flate2::bufread::GzDecoder;
use tar::EntryType;

use super::{MODIFIED, UNSAFE, sums};
use crate::files::digest;
use crate::files::tarball;
use crate::run::run_dir::{MERGED, OPTIONAL, REQUIRED, load_limit};

/// A passing check, plus the bytes of the members asked for.
pub struct Scan {
    pub report: CheckReport,
    /// Members asked for, by path relative to the root, when within their [`load_limit`].
    pub kept: BTreeMap<String, Vec<u8>>,
    /// Members asked for but over their [`load_limit`], with their sizes.
    pub too_large: BTreeMap<String, u64>,
    /// Every file, by path relative to the root, with its SHA-256 (hard links share their target's).
    pub files: BTreeMap<String, String>,
    /// The name of every member but the root, files, folders and links alike, relative to the root.
    pub names: BTreeSet<String>,
}

/// Members to write to disk during the scan: every file, folder and symlink whose path relative to
/// the root is one of `members` or lies below one, written below `dest` under that relative path.
#[derive(Debug, Clone, Default)]
pub struct Unpack {
    /// An existing, empty folder.
    pub dest: PathBuf,
    /// Relative paths such as `source` or `images`.
    pub members: Vec<String>,
}

impl Unpack {
    /// Where `rel` goes, when it is to be unpacked.
    fn target(&self, rel: &str) -> Option<PathBuf> {
        self.members
            .iter()
            .any(|m| {
                rel == m
                    || rel
                        .strip_prefix(m.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            })
            .then(|| self.dest.join(rel))
    }
}

/// Everything learned from the entries, before SHA256SUMS is consulted.
#[derive(Default)]
struct Seen {
    unpack: Unpack,
    root: String,
    members: usize,
    bytes: u64,
    paths: BTreeSet<String>,
    symlinks: BTreeSet<String>,
    /// Path relative to the root → SHA-256 of the data (hard links share their target's).
    files: BTreeMap<String, String>,
    sums: Option<Vec<u8>>,
    kept: BTreeMap<String, Vec<u8>>,
    too_large: BTreeMap<String, u64>,
}

/// Reads `archive` once and checks it, keeping the members named in `keep` (relative to the root).
pub fn scan(archive: &Path, keep: &[&str]) -> Result<Scan> {
    scan_unpacking(archive, keep, Unpack::default())
}

/// [`scan`], also writing the members `unpack` names as they stream.
pub fn scan_unpacking(archive: &Path, keep: &[&str], unpack: Unpack) -> Result<Scan> {
    ensure!(
        !archive.is_dir(),
        "{} is a folder: check takes a run's archive (`<run-id>.tar.gz`); to recompute a run folder's \
         statistics and verdicts, use `parkbench verify {}`",
        archive.display(),
        crate::text::shell_path(archive)
    );
    let file =
        File::open(archive).with_context(|| format!("opening archive {}", archive.display()))?;
    let mut input = BufReader::new(file);
    let magic = input.fill_buf().map_err(|e| corrupt(archive, e))?;
    if !magic.starts_with(GZIP)
        && let Some(format) = repacked_as(magic)
    {
        bail!(
            "{}: {format}, not gzip: a run archive is read as `parkbench archive` wrote it \
             (`<run-id>.tar.gz`); for a copy repacked in another format, unpack it and use \
             `parkbench verify <run-id>` on the run folder (its SHA256SUMS and verdicts), or get the \
             archive as written",
            archive.display()
        );
    }
    ensure!(
        magic.starts_with(GZIP),
        "{}: truncated or not a gzip archive (it does not start with the gzip signature); download it again",
        archive.display()
    );
    let mut seen = Seen {
        unpack,
        ..Seen::default()
    };
    let gz = tarball::read(GzDecoder::new(input), |member| seen.entry(member, keep)).map_err(
        |e| match e.downcast::<io::Error>() {
            Ok(io) => corrupt(archive, io),
            Err(other) => other,
        },
    )?;
    finish_stream(archive, gz)?;
    seen.into_scan(archive)
}

/// The first bytes of every gzip stream.
const GZIP: &[u8] = &[0x1f, 0x8b];

/// The format a file starting with `magic` is in, when it is a known archive or compression format
/// other than gzip: a run archive repacked by hand, not a damaged one.
fn repacked_as(magic: &[u8]) -> Option<&'static str> {
    const FORMATS: [(&[u8], usize, &str); 5] = [
        (b"\xfd7zXZ\x00", 0, "an xz file"),
        (b"\x28\xb5\x2f\xfd", 0, "a Zstandard file"),
        (b"BZh", 0, "a bzip2 file"),
        (b"PK\x03\x04", 0, "a zip file"),
        (b"ustar", 257, "an uncompressed tar"),
    ];
    (FORMATS.iter())
        .find(|(signature, at, _)| magic.get(*at..).is_some_and(|m| m.starts_with(signature)))
        .map(|(_, _, name)| *name)
}

fn corrupt(archive: &Path, e: io::Error) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: truncated or not a gzip archive, or the tar inside is damaged ({e}); download it again",
        archive.display()
    )
}

/// After the tar (read to its end by [`tarball::read`], which checked the gzip trailer's CRC and
/// size): no bytes may follow the gzip stream.
fn finish_stream(archive: &Path, gz: GzDecoder<BufReader<File>>) -> Result<()> {
    let mut buf = [0u8; 1];
    let n = gz
        .into_inner()
        .read(&mut buf[..1])
        .map_err(|e| corrupt(archive, e))?;
    ensure!(
        n == 0,
        "{}: bytes after the end of the gzip stream: {MODIFIED}",
        archive.display()
    );
    Ok(())
}

impl Seen {
    fn entry(&mut self, entry: tarball::Member<'_>, keep: &[&str]) -> Result<()> {
        let kind = entry.kind;
        let path = entry.path.as_str();
        let path = if kind == EntryType::Directory {
            path.strip_suffix('/').unwrap_or(path)
        } else {
            path
        };
        // `tar -czf x.tgz -C dir .` names every member `./…` and adds a `./` entry for `dir` itself.
        let Some(path) = without_dot_prefix(path) else {
            ensure!(
                kind == EntryType::Directory,
                "{path}: `.` must be a folder; {UNSAFE}"
            );
            return Ok(());
        };
        let path = path.to_string();
        let parts = self.place(&path, kind)?;
        self.members += 1;
        let rel = parts[1..].join("/");
        let target = self.unpack.target(&rel);
        match kind {
            EntryType::Directory => {
                if let Some(dir) = target {
                    create_dir(&dir)?;
                }
            }
            EntryType::Regular => match target {
                Some(to) => self.unpack_file(&path, rel, entry, &to)?,
                None => self.file(&path, rel, entry.data, keep)?,
            },
            EntryType::Symlink => {
                let link = link_target(&path, &entry)?;
                self.symlink(&path, &parts, &link)?;
                if let Some(to) = target {
                    std::os::unix::fs::symlink(&link, &to)
                        .map_err(|e| disk(e, &format!("unpacking {path} to"), &to))?;
                }
            }
            EntryType::Link => {
                let raw = link_target(&path, &entry)?;
                self.hardlink(&path, rel.clone(), &raw)?;
                if let Some(to) = target {
                    let from = without_dot_prefix(&raw).unwrap_or(&raw);
                    let from = from
                        .strip_prefix(&format!("{}/", self.root))
                        .unwrap_or(from);
                    ensure!(
                        self.unpack.target(from).is_some(),
                        "{path}: a hard link to {from}, which is not unpacked with it; write the \
                         archive with `parkbench archive` (it makes no hard links), or repack it \
                         with `tar --hard-dereference`"
                    );
                    let from = self.unpack.dest.join(from);
                    std::fs::copy(&from, &to)
                        .map_err(|e| disk(e, &format!("unpacking {path} to"), &to))?;
                }
            }
            EntryType::Char | EntryType::Block | EntryType::Fifo => {
                bail!(
                    "{path}: device or fifo entry: a run archive holds only files, folders and links; {UNSAFE}"
                )
            }
            other => bail!("{path}: unsupported tar entry type {other:?}: {UNSAFE}"),
        }
        Ok(())
    }

    /// Applies the path rules and records the path; returns its components.
    fn place<'p>(&mut self, path: &'p str, kind: EntryType) -> Result<Vec<&'p str>> {
        let parts =
            tarball::components(path).map_err(|why| anyhow::anyhow!("{path}: {why}: {UNSAFE}"))?;
        if self.root.is_empty() {
            self.root = parts[0].to_string();
        }
        let root = &self.root;
        ensure!(
            parts[0] == root,
            "{path}: outside the top folder {root}/: a run archive has exactly one top folder; {UNSAFE}"
        );
        ensure!(
            parts.len() > 1 || kind == EntryType::Directory,
            "{path}: the top-level entry must be a folder; {UNSAFE}"
        );
        for depth in 1..parts.len() {
            let above = parts[..depth].join("/");
            ensure!(
                !self.symlinks.contains(&above),
                "{path}: lies below the symlink {above}; {UNSAFE}"
            );
        }
        ensure!(
            self.paths.insert(path.to_string()),
            "{path}: appears twice in the archive: {MODIFIED}"
        );
        Ok(parts)
    }

    fn file<R: Read + ?Sized>(
        &mut self,
        path: &str,
        rel: String,
        data: &mut R,
        keep: &[&str],
    ) -> Result<()> {
        let is_sums = rel == sums::NAME;
        let limit = if is_sums {
            Some(sums::LIMIT)
        } else {
            keep.contains(&rel.as_str()).then(|| load_limit(&rel))
        };
        let (size, sha256, bytes) = digest::stream(data, limit)?;
        self.bytes += size;
        match (bytes, limit) {
            (Some(bytes), _) if is_sums => self.sums = Some(bytes),
            (None, _) if is_sums => bail!("{path}: over {} bytes: {MODIFIED}", sums::LIMIT),
            (Some(bytes), _) => _ = self.kept.insert(rel.clone(), bytes),
            (None, Some(_)) => _ = self.too_large.insert(rel.clone(), size),
            (None, None) => {}
        }
        self.files.insert(rel, sha256);
        Ok(())
    }

    /// Streams a member to `to` while hashing it (mode 0755 when the archive marks it executable).
    /// A read error is the archive's (an `io::Error`); a write error is the disk's (not one).
    fn unpack_file(
        &mut self,
        path: &str,
        rel: String,
        entry: tarball::Member<'_>,
        to: &Path,
    ) -> Result<()> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let executable = entry.mode & 0o111 != 0;
        if let Some(parent) = to.parent() {
            create_dir(parent)?;
        }
        let file = File::create(to).map_err(|e| disk(e, "creating", to))?;
        let mut out = io::BufWriter::new(file);
        let mut reader = digest::Reader::new(entry.data);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            out.write_all(&buf[..n])
                .map_err(|e| disk(e, &format!("unpacking {path} to"), to))?;
        }
        out.flush().map_err(|e| disk(e, "writing", to))?;
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode))
            .map_err(|e| disk(e, "setting the mode of", to))?;
        let (size, sha256) = reader.finish();
        self.bytes += size;
        self.files.insert(rel, sha256);
        Ok(())
    }

    fn symlink(&mut self, path: &str, parts: &[&str], target: &str) -> Result<()> {
        let resolved = tarball::resolve_link(&parts[..parts.len() - 1], target);
        match resolved {
            Ok(Some(to)) if to.first() == Some(&self.root) => {}
            Ok(_) => bail!(
                "{path}: symlink to {target:?} points outside {}/; {UNSAFE}",
                self.root
            ),
            Err(why) => bail!("{path}: symlink to {target:?} refused ({why}); {UNSAFE}"),
        }
        self.symlinks.insert(path.to_string());
        Ok(())
    }

    fn hardlink(&mut self, path: &str, rel: String, raw_target: &str) -> Result<()> {
        let target = without_dot_prefix(raw_target).unwrap_or(raw_target);
        let inside = target
            .strip_prefix(&format!("{}/", self.root))
            .filter(|t| tarball::components(t).is_ok());
        let Some(sha256) = inside.and_then(|t| self.files.get(t)).cloned() else {
            bail!(
                "{path}: hard link to {raw_target:?}, which is not an earlier file inside {}/; {UNSAFE}",
                self.root
            );
        };
        self.files.insert(rel, sha256);
        Ok(())
    }

    fn into_scan(self, archive: &Path) -> Result<Scan> {
        ensure!(
            !self.root.is_empty(),
            "{}: the archive is empty: download it again",
            archive.display()
        );
        let root = &self.root;
        let Some(listing) = &self.sums else {
            bail!(
                "{root}/{}: missing: this is not a parkbench run archive, or it was cut short; download it again",
                sums::NAME
            );
        };
        let verified = sums::verify(root, listing, &self.files, &self.paths)?;
        for name in REQUIRED {
            ensure!(
                self.files.contains_key(name),
                "{root}/{name}: missing: a run archive must hold it; download it again"
            );
        }
        let missing_optional = OPTIONAL
            .iter()
            .filter(|name| !self.files.contains_key(**name) && !MERGED.contains(*name))
            .map(|name| name.to_string())
            .collect();
        let report = CheckReport {
            root: self.root.clone(),
            members: self.members,
            bytes: self.bytes,
            verified,
            missing_optional,
            driver: None,
        };
        let prefix = format!("{}/", self.root);
        let names = (self.paths.iter())
            .filter_map(|p| p.strip_prefix(&prefix))
            .map(String::from)
            .collect();
        Ok(Scan {
            report,
            kept: self.kept,
            too_large: self.too_large,
            files: self.files,
            names,
        })
    }
}

/// A failure writing below the unpack folder, kept apart from the archive's own read errors (which
/// the scan reports as a damaged archive).
fn disk(e: io::Error, doing: &str, path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{doing} {}: {e}; this is the local disk, not the archive: free space in the temporary \
         folder, or point TMPDIR at a larger one",
        path.display()
    )
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| disk(e, "creating", dir))
}

/// `path` without its leading `./` components (`./a/b` is the same member as `a/b`); `None` for a
/// bare `.` (the folder the archive was made from). Anything else is left for the path rules.
fn without_dot_prefix(path: &str) -> Option<&str> {
    let mut rest = path;
    while let Some(after) = rest.strip_prefix("./") {
        rest = after;
    }
    match rest {
        "." => None,
        "" if !path.is_empty() => None,
        rest => Some(rest),
    }
}

fn link_target(path: &str, entry: &tarball::Member<'_>) -> Result<String> {
    entry
        .link
        .clone()
        .with_context(|| format!("{path}: a link with no target: {UNSAFE}"))
}

/// The result of a passing scan (`parkbench check`).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The archive's top folder (the run id).
    pub root: String,
    /// Tar entries: folders, files, links and SHA256SUMS.
    pub members: usize,
    /// Bytes of file data, SHA256SUMS included.
    pub bytes: u64,
    /// Files whose SHA-256 matched their SHA256SUMS line.
    pub verified: usize,
    /// Optional run files the archive lacks (e.g. `report.md`), relative to the root.
    pub missing_optional: Vec<String>,
    /// The driver the archive carries, checked against its record, or names by its record alone;
    /// `None` when it has no record.
    pub driver: Option<super::driver::Carried>,
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: OK, {} files match SHA256SUMS ({} members, {} bytes)",
            crate::text::printable(&self.root),
            self.verified,
            self.members,
            self.bytes
        )?;
        if !self.missing_optional.is_empty() {
            write!(
                f,
                "; missing optional: {}",
                crate::text::printable(&self.missing_optional.join(", "))
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::without_dot_prefix;

    #[test]
    fn leading_dot_components_are_dropped() {
        assert_eq!(without_dot_prefix("run-1/a"), Some("run-1/a"));
        assert_eq!(without_dot_prefix("./run-1/a"), Some("run-1/a"));
        assert_eq!(without_dot_prefix("././run-1"), Some("run-1"));
        assert_eq!(without_dot_prefix("."), None);
        assert_eq!(without_dot_prefix("./"), None);
        assert_eq!(without_dot_prefix("./."), None);
    }

    #[test]
    fn only_leading_dot_components_are_dropped() {
        assert_eq!(without_dot_prefix("./../evil"), Some("../evil"));
        assert_eq!(without_dot_prefix(".//etc/x"), Some("/etc/x"));
        assert_eq!(without_dot_prefix("/./x"), Some("/./x"));
        assert_eq!(without_dot_prefix("run-1/./a"), Some("run-1/./a"));
        assert_eq!(without_dot_prefix(""), Some(""));
        assert_eq!(without_dot_prefix(".hidden"), Some(".hidden"));
    }
}
