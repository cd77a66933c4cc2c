//! Container exports as Linux initramfs images: the flattened filesystem of an exported container,
//! plus a few extra files (the guest's init), as a cpio "newc" archive.
//!
//! The same export always gives the same bytes, whatever the order, mtimes or owner names of its
//! members: entries sorted by the bytes of their path (so a folder precedes its contents), names
//! without a leading slash, mtime 0, inodes numbered from 1 in that order, uid, gid and permission
//! bits kept from the tar. A hard link becomes a full copy of its target (nlink 1), so no inode is
//! shared. `.dockerenv` and everything under `dev/` are left out; `dev`, `proc`, `sys` and `tmp` are
//! added when the export lacks them, as mount points for the guest's init, and `dev/console` (the
//! character device 5:1, which the kernel opens for init's standard streams before devtmpfs is up).
//!
//! The export is read twice instead of held in memory: once for every member's metadata and the
//! offset of its data, once to copy the data in sorted order.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail, ensure};
use tar::EntryType;

use crate::files::digest;

/// Folders the guest's init mounts on, with the modes they get when the export lacks them.
const MOUNT_POINTS: [(&str, u32); 4] = [
    ("dev", 0o755),
    ("proc", 0o755),
    ("sys", 0o755),
    ("tmp", 0o1777),
];

/// The version of what [`write`] puts in an archive beside the export; a cached archive made by
/// another version is made again.
pub const LAYOUT: u32 = 2;

/// The console's device number (major, minor).
const CONSOLE: (u32, u32) = (5, 1);

/// A file added to the archive beside the exported filesystem.
pub struct Extra<'a> {
    /// Absolute path in the guest, e.g. `/parkbench-init`.
    pub path: &'a str,
    /// Permission bits, e.g. `0o755`.
    pub mode: u32,
    pub data: &'a [u8],
}

/// What [`write`] wrote.
#[derive(Debug)]
pub struct Written {
    /// sha256 of the archive, lowercase hex.
    pub sha256: String,
    pub bytes: u64,
    /// Entries in the archive, not counting the trailer.
    pub entries: u64,
}

// The type bits of a cpio mode (S_IFDIR and the rest).
pub(crate) const DIR: u32 = 0o040000;
pub(crate) const FILE: u32 = 0o100000;
pub(crate) const SYMLINK: u32 = 0o120000;
pub(crate) const CHAR: u32 = 0o020000;
pub(crate) const BLOCK: u32 = 0o060000;
pub(crate) const FIFO: u32 = 0o010000;

/// Where an entry's data comes from: the export (pass 2 seeks there) or memory.
#[derive(Clone)]
pub(crate) enum Data<'a> {
    Export { offset: u64, size: u64 },
    Bytes(Cow<'a, [u8]>),
}

impl Data<'_> {
    pub(crate) fn size(&self) -> u64 {
        match self {
            Data::Export { size, .. } => *size,
            Data::Bytes(bytes) => bytes.len() as u64,
        }
    }
}

#[derive(Clone)]
pub(crate) struct Member<'a> {
    /// Type bits, e.g. [`DIR`].
    pub(crate) kind: u32,
    /// Permission bits.
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// A device's (major, minor).
    pub(crate) rdev: (u32, u32),
    pub(crate) data: Data<'a>,
}

impl<'a> Member<'a> {
    /// A member owned by root, not a device.
    fn new(kind: u32, mode: u32, data: &'a [u8]) -> Self {
        Self {
            kind,
            mode,
            uid: 0,
            gid: 0,
            rdev: (0, 0),
            data: Data::Bytes(Cow::Borrowed(data)),
        }
    }
}

/// Entries by normalized path; the map's order is the archive's.
pub(crate) type Members<'a> = BTreeMap<Vec<u8>, Member<'a>>;

/// Reads the export tar at `export` and writes the archive to `out`, through `out` + ".part" renamed
/// at the end, so that a crash never leaves half an archive at `out`.
pub fn write(export: &Path, extras: &[Extra], out: &Path) -> Result<Written> {
    write_members(export, &tree(export, extras)?, out)
}

/// [`write`] of a tree already read from `export` ([`tree`]).
pub(crate) fn write_members(export: &Path, members: &Members, out: &Path) -> Result<Written> {
    let (sha256, bytes) = through_part(out, |w| write_entries(export, members, w))?;
    Ok(Written {
        sha256,
        bytes,
        entries: members.len() as u64,
    })
}

/// Writes `out` through `out` + ".part": `write` fills it, it is synced to disk and renamed to
/// `out`, so that a crash never leaves half a file at `out` (a failed write's part is removed).
/// Returns the file's sha256 and length.
pub(crate) fn through_part(
    out: &Path,
    write: impl FnOnce(&mut digest::Writer<BufWriter<File>>) -> Result<()>,
) -> Result<(String, u64)> {
    let mut part = out.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    let written = (|| -> Result<(String, u64)> {
        let file = File::create(&part).with_context(|| format!("creating {}", part.display()))?;
        let mut w = digest::Writer::new(BufWriter::with_capacity(1 << 20, file));
        write(&mut w).with_context(|| format!("writing {}", part.display()))?;
        let (buffered, sha256, bytes) = w.finish();
        buffered
            .into_inner()
            .map_err(io::IntoInnerError::into_error)
            .and_then(|file| file.sync_all())
            .with_context(|| format!("writing {}", part.display()))?;
        Ok((sha256, bytes))
    })();
    // Removing the part is best effort: the error that matters is the one that stopped the write.
    let written = written.inspect_err(|_| {
        let _ = fs::remove_file(&part);
    })?;
    fs::rename(&part, out)
        .with_context(|| format!("renaming {} to {}", part.display(), out.display()))?;
    Ok(written)
}

/// The size [`write_members`] would give the archive of `members`, bytes, without writing it.
pub(crate) fn size_of(members: &Members) -> u64 {
    let entry = |name: usize, data: u64| {
        let head = (110 + name as u64 + 1).next_multiple_of(4);
        head + data.next_multiple_of(4)
    };
    let trailer = entry(b"TRAILER!!!".len(), 0);
    members
        .iter()
        .map(|(name, m)| entry(name.len(), m.data.size()))
        .sum::<u64>()
        + trailer
}

/// The guest's filesystem tree: the export's members (without `.dockerenv` and `dev/`), the mount
/// points and `dev/console`, and `extras`, by normalized path. [`write`] writes it as cpio,
/// [`super::erofs`] as an EROFS image.
pub(crate) fn tree<'a>(export: &Path, extras: &[Extra<'a>]) -> Result<Members<'a>> {
    let mut members = scan(export)?;
    members.retain(|path, _| path != b".dockerenv" && !path.starts_with(b"dev/"));
    for (name, mode) in MOUNT_POINTS {
        members
            .entry(name.as_bytes().to_vec())
            .or_insert_with(|| Member::new(DIR, mode, &[]));
    }
    members.insert(
        b"dev/console".to_vec(),
        Member {
            rdev: CONSOLE,
            ..Member::new(CHAR, 0o600, &[])
        },
    );
    with_extras(members, extras)
}

/// `members` with `extras` added, as [`tree`] adds them.
pub(crate) fn with_extras<'a>(
    mut members: Members<'a>,
    extras: &[Extra<'a>],
) -> Result<Members<'a>> {
    for extra in extras {
        add_extra(&mut members, extra)?;
    }
    Ok(members)
}

/// Pass 1: every member's metadata and data offset. A hard link is resolved here to a copy of its
/// target, which a tar always holds before the link.
fn scan(export: &Path) -> Result<Members<'static>> {
    let file = File::open(export).with_context(|| format!("opening {}", export.display()))?;
    let mut archive = tar::Archive::new(BufReader::new(file));
    let entries = archive
        .entries_with_seek()
        .with_context(|| format!("reading {}", export.display()))?;
    let mut members = Members::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", export.display()))?;
        let raw = entry.path_bytes().into_owned();
        let (path, scanned) = normalize(&raw)
            .and_then(|path| read_member(&entry).map(|scanned| (path, scanned)))
            .with_context(|| format!("{}: member {}", export.display(), show(&raw)))?;
        let member = match scanned {
            Scanned::Skip => continue,
            Scanned::Member(member) => member,
            Scanned::Link(target) => members.get(&target).cloned().with_context(|| {
                format!(
                    "{}: hard link {} to {}, which is not in the export before it",
                    export.display(),
                    show(&path),
                    show(&target)
                )
            })?,
        };
        // The root folder itself has no entry: the unpacker writes into an existing root.
        if !path.is_empty() {
            members.insert(path, member);
        }
    }
    Ok(members)
}

enum Scanned {
    Skip,
    Member(Member<'static>),
    /// A hard link to this normalized path.
    Link(Vec<u8>),
}

fn read_member<R: Read>(entry: &tar::Entry<R>) -> Result<Scanned> {
    let h = entry.header();
    let kind = match h.entry_type() {
        EntryType::Regular | EntryType::Continuous => FILE,
        EntryType::Directory => DIR,
        EntryType::Symlink => SYMLINK,
        EntryType::Char => CHAR,
        EntryType::Block => BLOCK,
        EntryType::Fifo => FIFO,
        EntryType::Link => return Ok(Scanned::Link(normalize(&link_target(entry)?)?)),
        EntryType::XGlobalHeader => return Ok(Scanned::Skip),
        other => bail!("tar entry type {other:?} is not supported"),
    };
    let data = match kind {
        FILE => Data::Export {
            offset: entry.raw_file_position(),
            size: entry.size(),
        },
        SYMLINK => Data::Bytes(Cow::Owned(link_target(entry)?)),
        _ => Data::Bytes(Cow::Borrowed(&[])),
    };
    let rdev = match kind {
        CHAR | BLOCK => (
            h.device_major()?.unwrap_or(0),
            h.device_minor()?.unwrap_or(0),
        ),
        _ => (0, 0),
    };
    let id = |id: u64| u32::try_from(id).with_context(|| format!("uid/gid {id} exceeds 32 bits"));
    Ok(Scanned::Member(Member {
        kind,
        mode: h.mode()? & 0o7777,
        uid: id(h.uid()?)?,
        gid: id(h.gid()?)?,
        rdev,
        data,
    }))
}

fn link_target<R: Read>(entry: &tar::Entry<R>) -> Result<Vec<u8>> {
    let target = entry.link_name_bytes().context("a link without a target")?;
    Ok(target.into_owned())
}

/// Adds `extra` as a root-owned file, in place of any member at its path.
fn add_extra<'a>(members: &mut Members<'a>, extra: &Extra<'a>) -> Result<()> {
    let path = extra.path;
    ensure!(path.starts_with('/'), "extra {path}: not an absolute path");
    let name = normalize(path.as_bytes()).with_context(|| format!("extra {path}"))?;
    ensure!(!name.is_empty(), "extra {path}: not a file path");
    if let Some(i) = name.iter().rposition(|&b| b == b'/') {
        let parent = members.get(&name[..i]).map(|m| m.kind);
        ensure!(
            parent == Some(DIR),
            "extra {path}: its parent directory is not in the archive"
        );
    }
    // A file in place of a folder would leave the folder's contents without a parent.
    let replaced = members.get(&name).map(|m| m.kind);
    ensure!(
        replaced != Some(DIR),
        "extra {path}: the export has a folder there"
    );
    let member = Member::new(FILE, extra.mode & 0o7777, extra.data);
    members.insert(name, member);
    Ok(())
}

/// `./usr//bin/` → `usr/bin`, as the kernel's unpacker expects names; the root is empty.
fn normalize(path: &[u8]) -> Result<Vec<u8>> {
    let mut parts = Vec::new();
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => bail!("path {} contains `..`", show(path)),
            _ => parts.push(part),
        }
    }
    Ok(parts.join(&b'/'))
}

pub(crate) fn show(path: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(path)
}

fn write_entries(export: &Path, members: &Members, out: &mut impl Write) -> Result<()> {
    let mut tar = File::open(export).with_context(|| format!("opening {}", export.display()))?;
    for (ino, (name, m)) in (1..).zip(members) {
        write_header(out, ino, name, m)?;
        match &m.data {
            Data::Bytes(bytes) => out.write_all(bytes)?,
            Data::Export { offset, size } => copy_data(&mut tar, *offset, *size, out)
                .with_context(|| format!("copying {} from {}", show(name), export.display()))?,
        }
        out.write_all(&[0; 3][..pad(m.data.size())])?;
    }
    write_header(out, 0, b"TRAILER!!!", &Member::new(0, 0, &[]))
}

pub(crate) fn copy_data(
    tar: &mut File,
    offset: u64,
    size: u64,
    out: &mut impl Write,
) -> Result<()> {
    tar.seek(SeekFrom::Start(offset))?;
    let copied = io::copy(&mut (&mut *tar).take(size), out)?;
    let short = size - copied;
    ensure!(short == 0, "the export ends {short} bytes early");
    Ok(())
}

/// Writes the header of `m` and its NUL-terminated name, padded so that the data starts 4-byte
/// aligned (every entry starts aligned, so padding counts from the entry's start). mtime, devmajor,
/// devminor and check are 0; folders have nlink 2, everything else 1.
fn write_header(out: &mut impl Write, ino: u64, name: &[u8], m: &Member) -> Result<()> {
    let fits = |what: &str, value: u64| {
        u32::try_from(value)
            .with_context(|| format!("{}: {what} {value} does not fit a cpio header", show(name)))
    };
    let namesize = name.len() as u64 + 1;
    let nlink = if m.kind == DIR { 2 } else { 1 };
    let size = fits("size", m.data.size())?;
    let (ino, namesize32) = (fits("inode", ino)?, fits("name size", namesize)?);
    let fields = [
        ino,
        m.kind | m.mode,
        m.uid,
        m.gid,
        nlink,
        0, // mtime
        size,
        0, // devmajor
        0, // devminor
        m.rdev.0,
        m.rdev.1,
        namesize32,
        0, // check
    ];
    let mut head = String::from("070701");
    for field in fields {
        write!(head, "{field:08X}").expect("writing to a String");
    }
    out.write_all(head.as_bytes())?;
    out.write_all(name)?;
    out.write_all(&[0; 4][..1 + pad(head.len() as u64 + namesize)])?;
    Ok(())
}

/// NULs after `len` bytes up to the next multiple of 4.
fn pad(len: u64) -> usize {
    ((4 - len % 4) % 4) as usize
}

#[cfg(test)]
mod tests;
