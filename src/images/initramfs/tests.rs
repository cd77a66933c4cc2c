//! The initramfs writer: the same export gives the same bytes, whatever its order and times.

use std::process::Command;

use super::*;

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
        *n == ".dockerenv" || (n.starts_with("dev/") && *n != "dev/console") || n.starts_with('/')
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
    assert_eq!(size_of(&tree(&tar, &extras()).unwrap()), written.bytes);
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
