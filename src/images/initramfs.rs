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

use crate::images::digest;

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
    let members = tree(export, extras)?;
    let (sha256, bytes) = through_part(out, |w| write_entries(export, &members, w))?;
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

/// The size [`write`] would give the archive of `export` and `extras`, bytes, without writing it.
pub fn size(export: &Path, extras: &[Extra]) -> Result<u64> {
    let members = tree(export, extras)?;
    let entry = |name: usize, data: u64| {
        let head = (110 + name as u64 + 1).next_multiple_of(4);
        head + data.next_multiple_of(4)
    };
    let trailer = entry(b"TRAILER!!!".len(), 0);
    Ok(members
        .iter()
        .map(|(name, m)| entry(name.len(), m.data.size()))
        .sum::<u64>()
        + trailer)
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
mod tests {
    use super::*;
    use std::process::Command;

    /// A tar member: path, type, and a file's data or a link's target.
    type Spec = (String, EntryType, &'static str);

    fn spec(path: &str, kind: EntryType, data: &'static str) -> Spec {
        (path.to_string(), kind, data)
    }

    /// An export with every kind of member the module handles, hard link after its target.
    fn members() -> Vec<Spec> {
        use EntryType::*;
        vec![
            spec("bin", Directory, ""),
            spec("bin/tool", Regular, "tool data"),
            spec("bin/link", Symlink, "tool"),
            spec("dev", Directory, ""),
            spec("dev/console", Char, ""),
            spec(".dockerenv", Regular, ""),
            spec("etc", Directory, ""),
            spec("etc/hostname", Regular, "builder\n"),
            spec(&format!("etc/{}", "d".repeat(120)), Regular, "long"),
            spec("run.fifo", Fifo, ""),
            spec("bin/hard", Link, "bin/tool"),
        ]
    }

    fn extras() -> [Extra<'static>; 2] {
        [
            Extra {
                path: "/parkbench-init",
                mode: 0o755,
                data: b"#!/bin/sh\n",
            },
            Extra {
                path: "/etc/hostname",
                mode: 0o644,
                data: b"guest\n",
            },
        ]
    }

    /// Writes `members` as a GNU tar; `prefix` goes before hard link targets, `mtime` and a user
    /// name derived from it into every header.
    fn export(dir: &Path, name: &str, members: &[Spec], prefix: &str, mtime: u64) -> PathBuf {
        let path = dir.join(name);
        let mut tar = tar::Builder::new(File::create(&path).unwrap());
        for (name, kind, data) in members {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_mode(if kind.is_dir() { 0o755 } else { 0o644 });
            h.set_uid(1000);
            h.set_gid(100);
            h.set_mtime(mtime);
            h.set_username(&format!("u{mtime}")).unwrap();
            h.set_device_major(5).unwrap();
            h.set_device_minor(1).unwrap();
            h.set_size(0);
            match kind {
                EntryType::Link => tar.append_link(&mut h, name, format!("{prefix}{data}")),
                EntryType::Symlink => tar.append_link(&mut h, name, data),
                _ => {
                    h.set_size(data.len() as u64);
                    tar.append_data(&mut h, name, data.as_bytes())
                }
            }
            .unwrap();
        }
        tar.into_inner().unwrap();
        path
    }

    struct Parsed {
        name: String,
        fields: Vec<u32>,
        data: Vec<u8>,
    }

    /// Reads a newc archive back, checking alignment, magic and that the trailer ends it.
    fn parse(bytes: &[u8]) -> Vec<Parsed> {
        let (mut off, mut out) = (0, Vec::new());
        loop {
            assert_eq!(off % 4, 0, "entry {} starts unaligned", out.len());
            assert_eq!(&bytes[off..off + 6], b"070701");
            let hex = |i: usize| std::str::from_utf8(&bytes[off + 6 + 8 * i..][..8]).unwrap();
            let fields: Vec<u32> = (0..13)
                .map(|i| u32::from_str_radix(hex(i), 16).unwrap())
                .collect();
            let (size, namesize) = (fields[6] as usize, fields[11] as usize);
            let name = &bytes[off + 110..][..namesize];
            assert_eq!(name.last(), Some(&0));
            let name = String::from_utf8(name[..namesize - 1].to_vec()).unwrap();
            let start = (off + 110 + namesize).next_multiple_of(4);
            let data = bytes[start..start + size].to_vec();
            off = (start + size).next_multiple_of(4);
            let trailer = name == "TRAILER!!!";
            out.push(Parsed { name, fields, data });
            if trailer {
                assert_eq!(off, bytes.len(), "the trailer is last");
                return out;
            }
        }
    }

    #[test]
    fn order_mtimes_and_owner_names_do_not_change_the_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let mut shuffled = members();
        let link = shuffled.pop().unwrap();
        shuffled.reverse();
        shuffled.push(link);
        shuffled.insert(0, spec("./", EntryType::Directory, ""));
        let a = export(tmp.path(), "a.tar", &members(), "", 0);
        let b = export(tmp.path(), "b.tar", &shuffled, "./", 1_700_000_000);
        let wa = write(&a, &extras(), &tmp.path().join("a.cpio")).unwrap();
        let wb = write(&b, &extras(), &tmp.path().join("b.cpio")).unwrap();
        assert_eq!((&wa.sha256, wa.bytes), (&wb.sha256, wb.bytes));
        let bytes = fs::read(tmp.path().join("a.cpio")).unwrap();
        assert_eq!(bytes, fs::read(tmp.path().join("b.cpio")).unwrap());
        assert_eq!(wa.sha256, digest::bytes(&bytes));
        assert_eq!(
            (wa.bytes, wa.entries),
            (bytes.len() as u64, parse(&bytes).len() as u64 - 1)
        );
    }

    #[test]
    fn the_archive_reads_back_as_the_export_plus_extras() {
        let tmp = tempfile::tempdir().unwrap();
        let tar = export(tmp.path(), "e.tar", &members(), "", 42);
        write(&tar, &extras(), &tmp.path().join("e.cpio")).unwrap();
        let entries = parse(&fs::read(tmp.path().join("e.cpio")).unwrap());
        let (trailer, entries) = entries.split_last().unwrap();
        assert_eq!(
            (trailer.fields[0], trailer.fields[1], trailer.fields[4]),
            (0, 0, 1)
        );
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert!(names.is_sorted_by(|a, b| a < b), "{names:?}");
        for want in ["bin", "dev", "proc", "sys", "tmp"] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        let left_out = |n: &&str| {
            *n == ".dockerenv"
                || (n.starts_with("dev/") && *n != "dev/console")
                || n.starts_with('/')
        };
        assert!(!names.iter().any(left_out), "{names:?}");
        let console = entries.iter().find(|e| e.name == "dev/console").unwrap();
        assert_eq!(
            (console.fields[1], console.fields[9], console.fields[10]),
            (0o020600, 5, 1),
            "dev/console: a character device 5:1"
        );
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(e.fields[0], i as u32 + 1, "{} inode", e.name);
            let zeros = [e.fields[5], e.fields[7], e.fields[8], e.fields[12]];
            assert_eq!(
                zeros, [0; 4],
                "{}: mtime, devmajor, devminor, check",
                e.name
            );
        }
        let get = |name: &str| entries.iter().find(|e| e.name == name).unwrap();
        let mode = |name: &str| get(name).fields[1];
        let nlink = |name: &str| get(name).fields[4];
        assert_eq!(mode("bin/link"), 0o120644);
        assert_eq!(get("bin/link").data, b"tool");
        assert_eq!(get("bin/hard").data, get("bin/tool").data);
        assert_eq!((nlink("bin/hard"), nlink("bin")), (1, 2));
        assert_eq!(&get("bin/tool").fields[2..4], [1000, 100]);
        assert_eq!(mode("parkbench-init"), 0o100755);
        assert_eq!(mode("tmp"), 0o041777);
        assert_eq!(mode("run.fifo"), 0o010644);
        assert_eq!(get("etc/hostname").data, b"guest\n");
        assert_eq!(get(&format!("etc/{}", "d".repeat(120))).data, b"long");
    }

    #[test]
    fn the_size_is_the_written_archive_s() {
        let tmp = tempfile::tempdir().unwrap();
        let tar = export(tmp.path(), "e.tar", &members(), "", 0);
        let written = write(&tar, &extras(), &tmp.path().join("e.cpio")).unwrap();
        assert_eq!(size(&tar, &extras()).unwrap(), written.bytes);
    }

    #[test]
    fn errors_name_their_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let broken = [
            spec("bin", EntryType::Directory, ""),
            spec("bin/h", EntryType::Link, "gone"),
        ];
        let tar = export(tmp.path(), "broken.tar", &broken, "", 0);
        let out = tmp.path().join("out.cpio");
        let err = format!("{:#}", write(&tar, &[], &out).unwrap_err());
        assert!(err.contains("hard link bin/h to gone"), "{err}");
        let tar = export(tmp.path(), "ok.tar", &broken[..1], "", 0);
        let orphan = Extra {
            path: "/x/y",
            mode: 0o755,
            data: b"",
        };
        let err = format!("{:#}", write(&tar, &[orphan], &out).unwrap_err());
        assert!(
            err.contains("extra /x/y: its parent directory is not in the archive"),
            "{err}"
        );
        assert!(!out.exists());
        assert_eq!(normalize(b"./usr//bin/.").unwrap(), b"usr/bin");
        assert!(normalize(b"usr/../etc").is_err());
    }

    #[test]
    fn gnu_cpio_unpacks_it() {
        let tmp = tempfile::tempdir().unwrap();
        let tar = export(tmp.path(), "e.tar", &members(), "", 0);
        let out = tmp.path().join("e.cpio");
        write(&tar, &extras(), &out).unwrap();
        let mut part = out.clone().into_os_string();
        part.push(".part");
        assert!(out.exists() && !Path::new(&part).exists());
        if Command::new("cpio").arg("--version").output().is_err() {
            eprintln!("cpio is not installed: skipped unpacking with it");
            return;
        }
        let root = tmp.path().join("root");
        fs::create_dir(&root).unwrap();
        let unpacked = Command::new("cpio")
            .args(["-idm", "--no-absolute-filenames", "--quiet"])
            .current_dir(&root)
            .stdin(File::open(&out).unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&unpacked.stderr);
        assert!(unpacked.status.success() && stderr.is_empty(), "{stderr}");
        assert_eq!(fs::read(root.join("bin/hard")).unwrap(), b"tool data");
        let link = fs::read_link(root.join("bin/link")).unwrap();
        assert_eq!(link, Path::new("tool"));
        let init = fs::read(root.join("parkbench-init")).unwrap();
        assert_eq!(init, b"#!/bin/sh\n");
    }
}
