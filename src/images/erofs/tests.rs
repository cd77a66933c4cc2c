//! The EROFS writer: the same tree gives the same bytes, a changed file another sha256, and the
//! image reads back (with a small reader of the plain layout, and `fsck.erofs` where installed) as
//! the export plus the extras.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use tar::EntryType;

use super::*;
use crate::files::digest;

/// A tar member: path, type, and a file's data or a link's target.
type Spec = (String, EntryType, Vec<u8>);

fn members() -> Vec<Spec> {
    use EntryType::*;
    let mut many: Vec<Spec> = (0..400)
        .map(|i| {
            (
                format!("etc/many/file-{i:03}-{}", "n".repeat(i % 40)),
                Regular,
                vec![i as u8; i],
            )
        })
        .collect();
    let mut specs = vec![
        ("bin".into(), Directory, vec![]),
        ("bin/tool".into(), Regular, b"tool data".to_vec()),
        (
            "bin/big".into(),
            Regular,
            (0..10_000u32).map(|i| i as u8).collect(),
        ),
        ("bin/link".into(), Symlink, b"tool".to_vec()),
        (
            "bin/-dash".into(),
            Regular,
            b"sorts before the dot".to_vec(),
        ),
        ("dev".into(), Directory, vec![]),
        ("dev/null".into(), Char, vec![]),
        ("etc".into(), Directory, vec![]),
        ("etc/empty".into(), Regular, vec![]),
        ("etc/many".into(), Directory, vec![]),
        ("run.fifo".into(), Fifo, vec![]),
        ("bin/hard".into(), Link, b"bin/tool".to_vec()),
    ];
    specs.append(&mut many);
    specs
}

fn export(dir: &Path, name: &str, members: &[Spec], mtime: u64) -> PathBuf {
    let path = dir.join(name);
    let mut tar = tar::Builder::new(File::create(&path).unwrap());
    for (name, kind, data) in members {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*kind);
        h.set_mode(if kind.is_dir() { 0o755 } else { 0o640 });
        h.set_uid(1000);
        h.set_gid(100_000);
        h.set_mtime(mtime);
        h.set_device_major(1).unwrap();
        h.set_device_minor(3).unwrap();
        h.set_size(0);
        match kind {
            EntryType::Link | EntryType::Symlink => {
                tar.append_link(&mut h, name, std::str::from_utf8(data).unwrap())
            }
            _ => {
                h.set_size(data.len() as u64);
                tar.append_data(&mut h, name, &data[..])
            }
        }
        .unwrap();
    }
    tar.into_inner().unwrap();
    path
}

fn extras() -> [Extra<'static>; 1] {
    [Extra {
        path: "/etc/hostname",
        mode: 0o644,
        data: b"guest\n",
    }]
}

/// An inode as the reader sees it.
#[derive(Debug, Clone, PartialEq)]
struct Inode {
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    size: u64,
    u: u32,
}

/// A reader of the plain layout, as the kernel reads it.
struct Image(Vec<u8>);

impl Image {
    fn u16(&self, at: usize) -> u16 {
        u16::from_le_bytes(self.0[at..at + 2].try_into().unwrap())
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.0[at..at + 4].try_into().unwrap())
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.0[at..at + 8].try_into().unwrap())
    }
    fn inode(&self, nid: u64) -> Inode {
        let meta = self.u32(SUPERBLOCK_AT + 40) as usize * 4096;
        let at = meta + nid as usize * 32;
        assert_eq!(self.u16(at), EXTENDED_PLAIN, "nid {nid}: extended, plain");
        Inode {
            mode: self.u16(at + 4) as u32,
            size: self.u64(at + 8),
            u: self.u32(at + 16),
            uid: self.u32(at + 24),
            gid: self.u32(at + 28),
            nlink: self.u32(at + 44),
        }
    }
    fn data(&self, i: &Inode) -> &[u8] {
        let at = i.u as usize * 4096;
        &self.0[at..at + i.size as usize]
    }
    /// A folder's (name, nid, file type), in on-disk order.
    fn entries(&self, dir: &Inode) -> Vec<(Vec<u8>, u64, u8)> {
        let mut out = Vec::new();
        for block in self.data(dir).chunks(4096) {
            let n = u16::from_le_bytes([block[8], block[9]]) as usize / DIRENT;
            for k in 0..n {
                let de = &block[k * DIRENT..];
                let start = u16::from_le_bytes([de[8], de[9]]) as usize;
                let end = if k + 1 < n {
                    u16::from_le_bytes([de[DIRENT + 8], de[DIRENT + 9]]) as usize
                } else {
                    start
                        + block[start..]
                            .iter()
                            .position(|&b| b == 0)
                            .unwrap_or(4096 - start)
                };
                let nid = u64::from_le_bytes(de[..8].try_into().unwrap());
                out.push((block[start..end].to_vec(), nid, de[10]));
            }
        }
        out
    }
    /// Every path below the root with its inode.
    fn walk(&self) -> BTreeMap<String, Inode> {
        let root = self.u16(SUPERBLOCK_AT + 14) as u64;
        let mut out = BTreeMap::new();
        let mut todo = vec![(String::new(), root)];
        while let Some((path, nid)) = todo.pop() {
            let dir = self.inode(nid);
            let entries = self.entries(&dir);
            let names: Vec<&Vec<u8>> = entries.iter().map(|e| &e.0).collect();
            assert!(names.is_sorted(), "{path}: entries sorted by bytes");
            for (name, child, ft) in entries {
                let name = String::from_utf8(name).unwrap();
                if name == "." {
                    assert_eq!(child, nid);
                    continue;
                }
                if name == ".." {
                    continue;
                }
                let inode = self.inode(child);
                assert_eq!(ft, file_type(inode.mode & 0o170000), "{name}: file type");
                let full = if path.is_empty() {
                    name
                } else {
                    format!("{path}/{name}")
                };
                if inode.mode & 0o170000 == DIR {
                    todo.push((full.clone(), child));
                }
                out.insert(full, inode);
            }
        }
        out
    }
}

#[test]
fn order_and_mtimes_do_not_change_the_bytes_and_a_changed_file_does() {
    let tmp = tempfile::tempdir().unwrap();
    let mut shuffled = members();
    let link = shuffled.remove(11);
    shuffled.reverse();
    shuffled.push(link);
    let a = export(tmp.path(), "a.tar", &members(), 0);
    let b = export(tmp.path(), "b.tar", &shuffled, 1_700_000_000);
    let wa = write(&a, &extras(), &tmp.path().join("a.erofs")).unwrap();
    let wb = write(&b, &extras(), &tmp.path().join("b.erofs")).unwrap();
    let bytes = fs::read(tmp.path().join("a.erofs")).unwrap();
    assert_eq!(bytes, fs::read(tmp.path().join("b.erofs")).unwrap());
    assert_eq!((&wa.sha256, wa.bytes), (&wb.sha256, wb.bytes));
    assert_eq!(
        (wa.sha256.clone(), wa.bytes),
        (digest::bytes(&bytes), bytes.len() as u64)
    );
    let mut changed = members();
    changed[1].2 = b"tool datA".to_vec();
    let c = export(tmp.path(), "c.tar", &changed, 0);
    let wc = write(&c, &extras(), &tmp.path().join("c.erofs")).unwrap();
    assert_ne!(wc.sha256, wa.sha256, "one changed byte changes the sha256");
    assert_eq!(wc.bytes, wa.bytes);
}

#[test]
fn the_image_reads_back_as_the_export_plus_extras() {
    let tmp = tempfile::tempdir().unwrap();
    let tar = export(tmp.path(), "e.tar", &members(), 42);
    let written = write(&tar, &extras(), &tmp.path().join("e.erofs")).unwrap();
    let image = Image(fs::read(tmp.path().join("e.erofs")).unwrap());
    assert_eq!(image.u32(SUPERBLOCK_AT), MAGIC);
    assert_eq!(image.0.len() % 4096, 0);
    assert_eq!(
        image.u32(SUPERBLOCK_AT + 36) as usize,
        image.0.len() / 4096,
        "blocks"
    );
    assert_eq!(image.u64(SUPERBLOCK_AT + 16), written.inodes);
    let files = image.walk();
    assert_eq!(
        files.len() as u64 + 1,
        written.inodes,
        "every inode is reachable once"
    );
    for want in [
        "bin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "dev/console",
        "etc/hostname",
    ] {
        assert!(files.contains_key(want), "{want} missing");
    }
    assert!(!files.contains_key("dev/null"), "dev/ is the guest's own");
    let get = |p: &str| files[p].clone();
    assert_eq!(image.data(&get("bin/tool")), b"tool data");
    assert_eq!(image.data(&get("bin/hard")), b"tool data");
    let big: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
    assert_eq!(image.data(&get("bin/big")), &big[..]);
    assert_eq!(image.data(&get("bin/link")), b"tool");
    assert_eq!(get("bin/link").mode, SYMLINK | 0o640);
    assert_eq!(image.data(&get("etc/hostname")), b"guest\n");
    assert_eq!(
        (get("etc/hostname").uid, get("etc/hostname").mode),
        (0, FILE | 0o644)
    );
    assert_eq!((get("bin/tool").uid, get("bin/tool").gid), (1000, 100_000));
    assert_eq!(get("etc/empty").size, 0);
    assert_eq!(get("dev/console").u, encode_dev((5, 1)));
    assert_eq!(get("dev/console").mode, CHAR | 0o600);
    assert_eq!(get("run.fifo").mode, FIFO | 0o640);
    assert_eq!(get("tmp").mode, DIR | 0o1777);
    assert_eq!(get("etc").nlink, 3, "etc holds one folder");
    assert!(get("etc/many").size > 4096, "a folder over several blocks");
    for i in [0usize, 199, 399] {
        let name = format!("etc/many/file-{i:03}-{}", "n".repeat(i % 40));
        assert_eq!(image.data(&get(&name)), &vec![i as u8; i][..], "{name}");
    }
}

#[test]
fn fsck_erofs_accepts_it() {
    if Command::new("fsck.erofs").arg("-V").output().is_err() {
        eprintln!("fsck.erofs is not installed: skipped checking with it");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tar = export(tmp.path(), "e.tar", &members(), 0);
    let out = tmp.path().join("e.erofs");
    write(&tar, &extras(), &out).unwrap();
    let root = tmp.path().join("root");
    let checked = Command::new("fsck.erofs")
        .arg(format!("--extract={}", root.display()))
        .arg(&out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&checked.stderr);
    assert!(checked.status.success(), "{said}");
    assert_eq!(fs::read(root.join("bin/hard")).unwrap(), b"tool data");
    let link = fs::read_link(root.join("bin/link")).unwrap();
    assert_eq!(link, Path::new("tool"));
    let name = format!("etc/many/file-399-{}", "n".repeat(399 % 40));
    assert_eq!(fs::read(root.join(name)).unwrap(), vec![399u16 as u8; 399]);
}

#[test]
fn a_member_without_its_folder_is_refused_and_no_image_is_left() {
    let tmp = tempfile::tempdir().unwrap();
    let orphan = [("x/y".to_string(), EntryType::Regular, b"y".to_vec())];
    let tar = export(tmp.path(), "o.tar", &orphan, 0);
    let out = tmp.path().join("o.erofs");
    let err = format!("{:#}", write(&tar, &[], &out).unwrap_err());
    assert!(
        err.contains("x/y: its folder is not in the export"),
        "{err}"
    );
    assert!(!out.exists());
}
