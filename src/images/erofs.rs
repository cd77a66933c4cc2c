//! Container exports as EROFS images: the guest filesystem tree of [`initramfs::tree`] as a
//! read-only EROFS (the Linux "Enhanced Read-Only File System") image, which a guest mounts from a
//! virtio disk instead of unpacking the whole tree into memory from an initramfs.
//!
//! Only the plain, uncompressed layout is written, so the format is small: 4 KiB blocks; block 0
//! holds the superblock at byte 1024; the inodes follow from block 1, one 64-byte "extended" inode
//! per entry in the tree's order (the root first, nid 0); then every entry's data in the same
//! order, each from the start of a block: a directory's entries (sorted by name bytes, `.` and `..`
//! included), a file's bytes, a symlink's target. No extended attributes, mtime 0, an empty uuid
//! and volume name: the same tree always gives the same bytes. Owners, permission bits and device
//! numbers are kept as in the tree.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context as _, Result, ensure};

use crate::images::initramfs::{self, BLOCK, CHAR, DIR, Data, Extra, FIFO, FILE, Member, SYMLINK};

/// The version of the image layout [`write`] produces; a cached image made by another version is
/// made again.
pub const LAYOUT: u32 = 1;

const BLOCK_SIZE: u64 = 4096;
const MAGIC: u32 = 0xE0F5_E1E2;
const SUPERBLOCK_AT: usize = 1024;
/// The inodes start at this block (`meta_blkaddr`).
const META_BLOCK: u64 = 1;
/// An extended inode's size; nids count 32-byte slots, so entry `i` has nid `2 * i`.
const INODE: u64 = 64;
/// A directory entry's fixed part: nid (8), name offset (2), file type (1), reserved (1).
const DIRENT: usize = 12;
/// `i_format`: extended inode (bit 0), plain data layout (bits 1-3 zero).
const EXTENDED_PLAIN: u16 = 1;

/// What [`write`] wrote.
#[derive(Debug)]
pub struct Written {
    /// sha256 of the image, lowercase hex.
    pub sha256: String,
    pub bytes: u64,
    /// Inodes in the image, the root included.
    pub inodes: u64,
}

/// One inode: the tree's member (the root is a made-up folder) and where it sits.
struct Node<'t, 'a> {
    member: &'t Member<'a>,
    /// Its folder's index (the root's is itself).
    parent: usize,
    /// (name, index) of its entries, for a folder.
    children: Vec<(&'t [u8], usize)>,
}

/// Reads the export tar at `export`, adds `extras` as [`initramfs::tree`] does, and writes the
/// EROFS image to `out` (through `out` + ".part", renamed at the end).
pub fn write(export: &Path, extras: &[Extra], out: &Path) -> Result<Written> {
    write_members(export, &initramfs::tree(export, extras)?, out)
}

/// [`write`] of a tree already read from `export` ([`initramfs::tree`]).
pub(crate) fn write_members(
    export: &Path,
    members: &initramfs::Members,
    out: &Path,
) -> Result<Written> {
    let root = Member {
        kind: DIR,
        mode: 0o755,
        uid: 0,
        gid: 0,
        rdev: (0, 0),
        data: Data::Bytes(Vec::new().into()),
    };
    let nodes = nodes(&root, members)?;
    let (laid, total) = lay_out(&nodes)?;
    let (sha256, bytes) =
        initramfs::through_part(out, |w| write_image(export, &nodes, &laid, total, w))?;
    Ok(Written {
        sha256,
        bytes,
        inodes: nodes.len() as u64,
    })
}

/// The root, then the tree's members in its order (a folder before its contents), each linked to
/// its folder.
fn nodes<'t, 'a>(
    root: &'t Member<'a>,
    members: &'t initramfs::Members<'a>,
) -> Result<Vec<Node<'t, 'a>>> {
    let mut nodes = vec![Node {
        member: root,
        parent: 0,
        children: Vec::new(),
    }];
    let mut index: BTreeMap<&[u8], usize> = BTreeMap::new();
    for (path, member) in members {
        let (folder, name) = match path.iter().rposition(|&b| b == b'/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => (&path[..0], &path[..]),
        };
        let parent = if folder.is_empty() {
            0
        } else {
            *index.get(folder).with_context(|| {
                format!("{}: its folder is not in the export", initramfs::show(path))
            })?
        };
        ensure!(
            nodes[parent].member.kind == DIR,
            "{}: its parent is not a folder",
            initramfs::show(path)
        );
        let i = nodes.len();
        nodes[parent].children.push((name, i));
        index.insert(path, i);
        nodes.push(Node {
            member,
            parent,
            children: Vec::new(),
        });
    }
    Ok(nodes)
}

fn nid(i: usize) -> u64 {
    i as u64 * INODE / 32
}

/// EROFS's file type of a dirent (`EROFS_FT_*`).
fn file_type(kind: u32) -> u8 {
    match kind {
        FILE => 1,
        DIR => 2,
        CHAR => 3,
        BLOCK => 4,
        FIFO => 5,
        SYMLINK => 7,
        _ => 0,
    }
}

/// A folder's entries as EROFS directory blocks: in each block the fixed parts, then the names
/// (not NUL-ended; the last one ends at the block's zero padding), all sorted by name bytes.
fn directory(nodes: &[Node], i: usize) -> Result<Vec<u8>> {
    let mut entries: Vec<(&[u8], usize)> = vec![(b".", i), (b"..", nodes[i].parent)];
    entries.extend(nodes[i].children.iter().copied());
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::new();
    let mut rest = &entries[..];
    while !rest.is_empty() {
        // As many entries as fit one block with their names.
        let (mut n, mut used) = (0, 0);
        while n < rest.len() && used + DIRENT + rest[n].0.len() <= BLOCK_SIZE as usize {
            used += DIRENT + rest[n].0.len();
            n += 1;
        }
        ensure!(
            n > 0,
            "a name of {} bytes does not fit a block",
            rest[0].0.len()
        );
        let mut block = vec![0u8; BLOCK_SIZE as usize];
        let mut name_at = DIRENT * n;
        for (k, (name, child)) in rest[..n].iter().enumerate() {
            let de = &mut block[k * DIRENT..(k + 1) * DIRENT];
            de[0..8].copy_from_slice(&nid(*child).to_le_bytes());
            de[8..10].copy_from_slice(&(name_at as u16).to_le_bytes());
            de[10] = file_type(nodes[*child].member.kind);
            block[name_at..name_at + name.len()].copy_from_slice(name);
            name_at += name.len();
        }
        out.extend_from_slice(&block);
        rest = &rest[n..];
    }
    Ok(out)
}

/// The kernel's `new_encode_dev`.
fn encode_dev((major, minor): (u32, u32)) -> u32 {
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

fn blocks(bytes: u64) -> u64 {
    bytes.div_ceil(BLOCK_SIZE)
}

/// Every inode's data: its size and first block; folders' entries made here.
struct Laid {
    size: u64,
    block: u64,
    dir: Option<Vec<u8>>,
}

fn lay_out(nodes: &[Node]) -> Result<(Vec<Laid>, u64)> {
    let mut next = META_BLOCK + blocks(nodes.len() as u64 * INODE);
    let mut laid = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        let dir = (node.member.kind == DIR)
            .then(|| directory(nodes, i))
            .transpose()?;
        let size = match (&dir, node.member.kind) {
            (Some(d), _) => d.len() as u64,
            (None, FILE | SYMLINK) => node.member.data.size(),
            _ => 0,
        };
        laid.push(Laid {
            size,
            block: if size == 0 { 0 } else { next },
            dir,
        });
        next += blocks(size);
    }
    ensure!(
        u32::try_from(next).is_ok(),
        "the image would have {next} blocks, more than EROFS addresses"
    );
    Ok((laid, next))
}

/// An inode; a folder's nlink counts its `.`, its entry in its folder and its folders' `..`.
fn inode(nodes: &[Node], i: usize, laid: &Laid) -> Result<[u8; INODE as usize]> {
    let (node, m) = (&nodes[i], nodes[i].member);
    let mut b = [0u8; INODE as usize];
    let mode = u16::try_from(m.kind | m.mode).context("a mode wider than 16 bits")?;
    let folders = node
        .children
        .iter()
        .filter(|(_, c)| nodes[*c].member.kind == DIR);
    let nlink = if m.kind == DIR {
        u32::try_from(2 + folders.count()).context("too many folders in one")?
    } else {
        1
    };
    let ino = u32::try_from(i + 1).context("more inodes than 32 bits count")?;
    let u = match m.kind {
        CHAR | BLOCK => encode_dev(m.rdev),
        FILE | DIR | SYMLINK => laid.block as u32,
        _ => 0,
    };
    b[0..2].copy_from_slice(&EXTENDED_PLAIN.to_le_bytes());
    b[4..6].copy_from_slice(&mode.to_le_bytes());
    b[8..16].copy_from_slice(&laid.size.to_le_bytes());
    b[16..20].copy_from_slice(&u.to_le_bytes());
    b[20..24].copy_from_slice(&ino.to_le_bytes());
    b[24..28].copy_from_slice(&m.uid.to_le_bytes());
    b[28..32].copy_from_slice(&m.gid.to_le_bytes());
    b[44..48].copy_from_slice(&nlink.to_le_bytes());
    Ok(b)
}

/// The superblock's block: 1024 bytes left for a boot sector, then the 128-byte superblock.
fn superblock(inodes: u64, blocks: u64) -> Vec<u8> {
    let mut block = vec![0u8; BLOCK_SIZE as usize];
    let sb = &mut block[SUPERBLOCK_AT..SUPERBLOCK_AT + 128];
    sb[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    sb[12] = 12; // log2 of the block size
    // root_nid (14..16) is 0: the root is the first inode.
    sb[16..24].copy_from_slice(&inodes.to_le_bytes());
    sb[36..40].copy_from_slice(&(blocks as u32).to_le_bytes());
    sb[40..44].copy_from_slice(&(META_BLOCK as u32).to_le_bytes());
    block
}

fn write_image(
    export: &Path,
    nodes: &[Node],
    laid: &[Laid],
    total: u64,
    out: &mut impl Write,
) -> Result<()> {
    out.write_all(&superblock(nodes.len() as u64, total))?;
    for (i, l) in laid.iter().enumerate() {
        out.write_all(&inode(nodes, i, l)?)?;
    }
    pad(out, nodes.len() as u64 * INODE)?;
    let mut tar = File::open(export).with_context(|| format!("opening {}", export.display()))?;
    for (node, l) in nodes.iter().zip(laid) {
        if l.size == 0 {
            continue;
        }
        match (&l.dir, &node.member.data) {
            (Some(dir), _) => out.write_all(dir)?,
            (None, Data::Bytes(bytes)) => out.write_all(bytes)?,
            (None, Data::Export { offset, size }) => {
                initramfs::copy_data(&mut tar, *offset, *size, out)?
            }
        }
        pad(out, l.size)?;
    }
    Ok(())
}

/// Zeros after `len` bytes up to the next block.
fn pad(out: &mut impl Write, len: u64) -> io::Result<()> {
    let n = (BLOCK_SIZE - len % BLOCK_SIZE) % BLOCK_SIZE;
    out.write_all(&vec![0u8; n as usize])
}

#[cfg(test)]
mod tests;
