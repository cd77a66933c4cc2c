//! Deterministic tars, for build contexts, toolchain tars and run archives alike.
//!
//! The same tree always gives the same bytes: members in the order of the tree's [`Layout`], every
//! parent folder present before its contents, GNU headers (long paths and link targets as GNU
//! extension entries), mtime 0, uid/gid 0, empty user and group names, mode 0755 for folders and for
//! files with any execute bit on disk, 0644 for other files, 0777 for symlinks. Symlinks stay
//! symlinks and must point inside the tar, and in run archives inside the folder they come from (see
//! [`Layout`]). A file that shrinks while it is written is an error, never padding.

mod member;
mod read;
mod tree;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Component, Path};

use anyhow::{Context as _, Result, bail, ensure};
use tar::{EntryType, Header};

use crate::files::digest;

pub use member::{components, resolve_link};
pub use read::{Member, read};
pub use tree::{Entry, Layout, Tree, check_link, walk};

/// A header with the fixed metadata of the module docs.
pub fn header(kind: EntryType, mode: u32, size: u64) -> Header {
    let mut h = Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(0);
    h.set_uid(0);
    h.set_gid(0);
    h
}

/// Writes members with fixed metadata. Parent folders are added on demand, so that every member's
/// folder precedes it; callers add members in their tree's order so that the bytes are reproducible.
pub struct Writer<W: Write> {
    builder: tar::Builder<W>,
    dirs: BTreeSet<String>,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Self {
        Self {
            builder: tar::Builder::new(out),
            dirs: BTreeSet::new(),
        }
    }

    /// Writes every member of `tree` in its layout's order, each under `prefix` when one is given.
    pub fn tree(&mut self, tree: &Tree, prefix: Option<&str>) -> Result<()> {
        for (path, entry) in tree.members() {
            let name = match prefix {
                Some(prefix) => format!("{prefix}/{path}"),
                None => path,
            };
            self.append(&name, entry)?;
        }
        Ok(())
    }

    /// Writes `entry` at `path`, reading a file's data from disk.
    pub fn append(&mut self, path: &str, entry: &Entry) -> Result<()> {
        self.append_hashed(path, entry).map(|_| ())
    }

    /// [`Writer::append`], returning the sha256 of a file's data (`None` for folders and links).
    pub fn append_hashed(&mut self, path: &str, entry: &Entry) -> Result<Option<String>> {
        match entry {
            Entry::Dir => self.dir(path).map(|()| None),
            Entry::Link { target } => self.symlink(path, target).map(|()| None),
            Entry::File {
                disk,
                size,
                executable,
            } => {
                let file =
                    File::open(disk).with_context(|| format!("opening {}", disk.display()))?;
                let mut data = digest::Reader::new(file);
                self.file(path, *size, *executable, &mut data)
                    .with_context(|| format!("adding {}", disk.display()))?;
                Ok(Some(data.finish().1))
            }
        }
    }

    /// A folder and its missing parents; adding one twice writes it once.
    pub fn dir(&mut self, path: &str) -> Result<()> {
        let path = normalize(path)?;
        if path.is_empty() || self.dirs.contains(&path) {
            return Ok(());
        }
        self.parents(&path)?;
        let mut header = header(EntryType::Directory, 0o755, 0);
        self.builder
            .append_data(&mut header, format!("{path}/"), io::empty())
            .with_context(|| format!("tar member {path}/"))?;
        self.dirs.insert(path);
        Ok(())
    }

    /// A regular file of exactly `size` bytes read from `data`, mode 0755 if `executable` else 0644.
    pub fn file(&mut self, path: &str, size: u64, executable: bool, data: impl Read) -> Result<()> {
        let path = normalize(path)?;
        self.parents(&path)?;
        let mode = if executable { 0o755 } else { 0o644 };
        let mut header = header(EntryType::Regular, mode, size);
        let mut data = Exact {
            inner: data,
            left: size,
        };
        self.builder
            .append_data(&mut header, &path, &mut data)
            .with_context(|| format!("tar member {path}"))?;
        ensure!(
            data.left == 0,
            "tar member {path}: {} bytes short: the file shrank while it was written; write it again",
            data.left
        );
        Ok(())
    }

    /// A symlink to `target`, written as given (trees check their links when they gather them).
    pub fn symlink(&mut self, path: &str, target: &str) -> Result<()> {
        let path = normalize(path)?;
        self.parents(&path)?;
        let mut header = header(EntryType::Symlink, 0o777, 0);
        let field = header.as_old().linkname.len();
        if target.len() <= field {
            self.builder
                .append_link(&mut header, &path, target)
                .with_context(|| format!("tar member {path}"))?;
            return Ok(());
        }
        // A long target goes in a GNU long link entry before the header, as GNU tar writes it, and
        // its first bytes in the header's own field too: bsdtar takes a symlink whose field is empty
        // for a hard link.
        let mut long = tar::Header::new_gnu();
        long.as_gnu_mut().expect("a GNU header").name[..13].copy_from_slice(b"././@LongLink");
        long.set_entry_type(EntryType::GNULongLink);
        long.set_mode(0o644);
        long.set_size(target.len() as u64 + 1);
        long.set_mtime(0);
        long.set_cksum();
        let data = [target.as_bytes(), b"\0"].concat();
        header
            .as_old_mut()
            .linkname
            .copy_from_slice(&target.as_bytes()[..field]);
        self.builder
            .append(&long, data.as_slice())
            .and_then(|()| self.builder.append_data(&mut header, &path, io::empty()))
            .with_context(|| format!("tar member {path}"))?;
        Ok(())
    }

    /// Finishes the tar and returns the writer.
    pub fn into_inner(self) -> Result<W> {
        self.builder.into_inner().context("finishing the tar")
    }

    fn parents(&mut self, path: &str) -> Result<()> {
        match path.rsplit_once('/') {
            Some((parent, _)) => self.dir(parent),
            None => Ok(()),
        }
    }
}

/// `a//b/./c/` → `a/b/c`; absolute paths and `..` are errors.
pub fn normalize(path: &str) -> Result<String> {
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
mod tests {
    use super::*;

    fn names(bytes: &[u8]) -> Vec<(String, u32)> {
        let mut archive = tar::Archive::new(bytes);
        archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.path().unwrap().to_string_lossy().into_owned();
                (name, e.header().mode().unwrap())
            })
            .collect()
    }

    #[test]
    fn short_data_is_an_error_not_padding() {
        let mut tar = Writer::new(Vec::new());
        let err = format!("{:#}", tar.file("a", 10, false, &b"abc"[..]).unwrap_err());
        assert!(err.contains("7 bytes short"), "{err}");
    }

    #[test]
    fn long_paths_survive() {
        let long = format!("go/{}/file", "d".repeat(150));
        let mut tar = Writer::new(Vec::new());
        tar.file(&long, 1, true, &b"x"[..]).unwrap();
        let bytes = tar.into_inner().unwrap();
        let got = names(&bytes);
        let dir = format!("go/{}/", "d".repeat(150));
        assert_eq!(
            got,
            [("go/".to_string(), 0o755), (dir, 0o755), (long, 0o755)]
        );
    }

    #[test]
    fn headers_are_fixed_and_parents_come_first() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "data").unwrap();
        let mut tree = Tree::new(Layout::Archive);
        tree.add(&file, &["x".into(), "f".into()], &|_, _| false)
            .unwrap();
        tree.insert(
            vec!["x".into(), "l".into()],
            Entry::Link { target: "f".into() },
            &file,
        )
        .unwrap();
        let mut tar = Writer::new(Vec::new());
        tar.tree(&tree, Some("root")).unwrap();
        let bytes = tar.into_inner().unwrap();
        let got = names(&bytes);
        let want = [
            ("root/", 0o755),
            ("root/x/", 0o755),
            ("root/x/f", 0o644),
            ("root/x/l", 0o777),
        ];
        assert_eq!(got, want.map(|(n, m)| (n.to_string(), m)));
        let mut archive = tar::Archive::new(&bytes[..]);
        for e in archive.entries().unwrap() {
            let h = e.unwrap().header().clone();
            assert_eq!(
                (h.mtime().unwrap(), h.uid().unwrap(), h.gid().unwrap()),
                (0, 0, 0)
            );
            assert_eq!(
                (h.username().unwrap(), h.groupname().unwrap()),
                (Some(""), Some(""))
            );
        }
    }

    #[test]
    fn hashed_files_report_their_sha256() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "abc").unwrap();
        let mut tar = Writer::new(Vec::new());
        let sha = tar
            .append_hashed("f", &Entry::from_disk(&file).unwrap())
            .unwrap();
        assert_eq!(sha, Some(digest::bytes(b"abc")));
        std::fs::write(&file, "ab").unwrap();
        let stale = Entry::File {
            disk: file,
            size: 3,
            executable: false,
        };
        let err = format!("{:#}", tar.append("g", &stale).unwrap_err());
        assert!(err.contains("1 bytes short"), "{err}");
    }
}
