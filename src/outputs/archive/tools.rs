//! Every archive the kit accepts reads the same in GNU tar, bsdtar and Python's tarfile as in the
//! kit's own reader: the same members, links and bytes. A reviewer extracts with those tools.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::fixture::{Fixture, put};
use super::{check, write_with};
use crate::files::tarball;

/// A member as seen by one reader.
#[derive(Debug, PartialEq)]
enum Seen {
    Dir,
    File(Vec<u8>),
    Link(String),
}

/// The kit's view: every member of the `.tar.gz`, by path without a trailing `/`.
fn kit(archive: &Path) -> BTreeMap<String, Seen> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(archive).unwrap());
    let mut seen = BTreeMap::new();
    tarball::read(gz, |m| {
        let what = match m.kind {
            tar::EntryType::Directory => Seen::Dir,
            tar::EntryType::Symlink => Seen::Link(m.link.clone().unwrap()),
            _ => {
                let mut data = Vec::new();
                m.data.read_to_end(&mut data)?;
                Seen::File(data)
            }
        };
        seen.insert(m.path.trim_end_matches('/').to_string(), what);
        Ok(())
    })
    .unwrap();
    seen
}

/// What a tool extracted below `dir`.
fn extracted(dir: &Path) -> BTreeMap<String, Seen> {
    let mut seen = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(dir).unwrap();
        let rel = rel.to_str().unwrap().to_string();
        let kind = entry.file_type();
        let what = if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).unwrap();
            Seen::Link(target.to_str().unwrap().to_string())
        } else if kind.is_dir() {
            Seen::Dir
        } else {
            Seen::File(std::fs::read(entry.path()).unwrap())
        };
        seen.insert(rel, what);
    }
    seen
}

/// Extracts `archive` with `program args…` into a new folder and returns what it holds; `ARCHIVE`
/// and `DEST` in `args` stand for the archive and the folder.
fn extract_with(program: &str, args: &[&str], archive: &Path) -> BTreeMap<String, Seen> {
    let dest = tempfile::tempdir().unwrap();
    let args = args.iter().map(|a| match *a {
        "ARCHIVE" => archive.as_os_str(),
        "DEST" => dest.path().as_os_str(),
        a => std::ffi::OsStr::new(a),
    });
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("running {program}: {e}; install it (GNU tar, bsdtar from libarchive-tools, python3)")
        });
    assert!(
        out.status.success(),
        "{program} refused {}: {}",
        archive.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    extracted(dest.path())
}

const PYTHON: &str = "import sys, tarfile\n\
    kw = {'filter': 'tar'} if hasattr(tarfile, 'tar_filter') else {}\n\
    tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)";

/// A run archive with long member names and a long link target (GNU extension headers).
fn accepted_archive(fx: &Fixture) -> std::path::PathBuf {
    let deep = format!(
        "docker/probe-go/{}/{}.go",
        "nested".repeat(20),
        "m".repeat(90)
    );
    put(&fx.tmp.path().join("repo").join(&deep), "package main\n");
    let link = fx
        .tmp
        .path()
        .join(format!("repo/docker/probe-go/{}", "l".repeat(110)));
    let target = format!("{}/{}.go", "nested".repeat(20), "m".repeat(90));
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let extra = fx.path("extra.bin");
    std::fs::write(&extra, (0..=255u8).cycle().take(70_000).collect::<Vec<_>>()).unwrap();
    let info = write_with(
        &fx.run_dir,
        &fx.sources,
        &[("images/extra.bin".to_string(), extra)],
        &fx.out,
    )
    .unwrap();
    check(&info.path).expect("the kit accepts what it writes");
    info.path
}

#[test]
fn gnu_tar_bsdtar_and_python_extract_what_the_kit_reads() {
    let fx = Fixture::new();
    let archive = accepted_archive(&fx);
    let ours = kit(&archive);
    assert!(
        ours.keys().any(|p| p.len() > 100) && ours.values().any(|s| matches!(s, Seen::Link(_))),
        "the archive exercises long names and links"
    );
    let python = archive.with_extension("py");
    std::fs::write(&python, PYTHON).unwrap();
    let tools = [
        (
            "GNU tar",
            ["tar", "-xzf", "ARCHIVE", "-C", "DEST"].as_slice(),
        ),
        ("bsdtar", &["bsdtar", "-xf", "ARCHIVE", "-C", "DEST"]),
        (
            "Python's tarfile",
            &["python3", python.to_str().unwrap(), "ARCHIVE", "DEST"],
        ),
    ];
    for (tool, command) in tools {
        let theirs = extract_with(command[0], &command[1..], &archive);
        assert_eq!(
            theirs.keys().collect::<Vec<_>>(),
            ours.keys().collect::<Vec<_>>(),
            "{tool} extracts other members"
        );
        for (path, seen) in &ours {
            assert_eq!(&theirs[path], seen, "{tool} reads {path} otherwise");
        }
    }
}
