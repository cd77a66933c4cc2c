//! Archives altered on purpose: unpacked, changed, and repacked with SHA256SUMS made to match (a
//! consistent archive whose content a stranger chose); and image files in the Engine's save format
//! written member by member.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::describe;

pub fn tar(args: &[&std::ffi::OsStr]) {
    let out = Command::new("tar").args(args).output().unwrap();
    assert!(out.status.success(), "tar {args:?}: {}", describe(&out));
}

/// Unpacks `archive` into a fresh folder `dir` and returns the run's folder inside it.
pub fn unpack(archive: &Path, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    tar(&[
        "-xzf".as_ref(),
        archive.as_os_str(),
        "-C".as_ref(),
        dir.as_os_str(),
    ]);
    let mut roots = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path());
    roots.next().unwrap()
}

/// Writes `data` as the member `rel` of the unpacked archive `root`, listed in its SHA256SUMS (the
/// sum is fixed by [`repack`]).
pub fn put(root: &Path, rel: &str, data: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, data).unwrap();
    let sums = root.join("SHA256SUMS");
    let mut listing = std::fs::read_to_string(&sums).unwrap();
    if !listing.lines().any(|l| l.ends_with(&format!("  {rel}"))) {
        listing.push_str(&format!("{}  {rel}\n", "0".repeat(64)));
        std::fs::write(&sums, listing).unwrap();
    }
}

/// Repacks an unpacked archive as a reviewer would, SHA256SUMS rewritten to match what is there now
/// (a consistent archive whose content was changed on purpose).
pub fn repack(root: &Path, out: &Path) -> PathBuf {
    let sums = root.join("SHA256SUMS");
    let listing = std::fs::read_to_string(&sums).unwrap();
    let fixed: String = listing
        .lines()
        .filter_map(|l| {
            let (_, path) = l.split_once("  ")?;
            let file = root.join(path);
            file.is_file().then(|| {
                format!(
                    "{}  {path}\n",
                    parkbench::files::digest::file(&file).unwrap()
                )
            })
        })
        .collect();
    std::fs::write(&sums, fixed).unwrap();
    // gzip's quickest level: what a test changes is the content, and an archive with images is about
    // a gigabyte to compress (three times the CPU at gzip's default level).
    tar(&[
        "--use-compress-program=gzip -1".as_ref(),
        "-cf".as_ref(),
        out.as_os_str(),
        "-C".as_ref(),
        root.parent().unwrap().as_os_str(),
        ".".as_ref(),
    ]);
    out.to_owned()
}

/// One entry of a layer.
#[derive(Clone, Copy)]
pub enum Entry<'a> {
    Dir(&'a str),
    File {
        path: &'a str,
        data: &'a [u8],
        mode: u32,
    },
    /// Bytes of a file, `len` zeros long (compresses to nothing in the archive).
    Zeros {
        path: &'a str,
        len: u64,
    },
    Symlink {
        path: &'a str,
        target: &'a str,
    },
}

/// An image file written by [`saved_image`].
pub struct Saved {
    /// The image ID, `sha256:…`: the sha256 of its configuration.
    pub id: String,
    /// The diff-ID of its one layer, `sha256:…`.
    pub layer: String,
}

fn sha256(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn append(tar: &mut tar::Builder<impl std::io::Write>, entry: &Entry) {
    let mut h = tar::Header::new_gnu();
    h.set_mtime(0);
    match entry {
        Entry::Dir(path) => {
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            tar.append_data(&mut h, path, std::io::empty()).unwrap();
        }
        Entry::File { path, data, mode } => {
            h.set_mode(*mode);
            h.set_size(data.len() as u64);
            tar.append_data(&mut h, path, *data).unwrap();
        }
        Entry::Zeros { path, len } => {
            h.set_mode(0o644);
            h.set_size(*len);
            tar.append_data(&mut h, path, std::io::repeat(0).take(*len))
                .unwrap();
        }
        Entry::Symlink { path, target } => {
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            tar.append_link(&mut h, path, target).unwrap();
        }
    }
}

/// Writes `out`: an image file of the Engine's save format holding one image of one layer made of
/// `entries`, whose manifest.json names `tags`; with `second`, a second `manifest.json` member
/// naming those tags follows the first.
pub fn saved_image(out: &Path, tags: &[&str], entries: &[Entry], second: Option<&[&str]>) -> Saved {
    let layer_path = out.with_extension("layer.tar");
    let mut layer = tar::Builder::new(std::fs::File::create(&layer_path).unwrap());
    for e in entries {
        append(&mut layer, e);
    }
    layer.into_inner().unwrap();
    let diff = parkbench::files::digest::file(&layer_path).unwrap();
    let config = serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "Cmd": ["/usr/local/bin/probe"]},
        "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{diff}")]},
        "history": [{"created_by": "written by a stranger"}],
    })
    .to_string();
    let id = sha256(config.as_bytes());
    let manifest = |tags: &[&str]| {
        serde_json::json!([{
            "Config": format!("{id}.json"),
            "RepoTags": tags,
            "Layers": [format!("{diff}/layer.tar")],
        }])
        .to_string()
    };
    let mut file = tar::Builder::new(std::fs::File::create(out).unwrap());
    let mut put = |name: &str, data: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        file.append_data(&mut h, name, data).unwrap();
    };
    put(&format!("{id}.json"), config.as_bytes());
    put(&format!("{diff}/VERSION"), b"1.0");
    put(
        &format!("{diff}/json"),
        format!(r#"{{"id":"{diff}"}}"#).as_bytes(),
    );
    put("manifest.json", manifest(tags).as_bytes());
    if let Some(other) = second {
        put("manifest.json", manifest(other).as_bytes());
    }
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o644);
    h.set_size(std::fs::metadata(&layer_path).unwrap().len());
    file.append_data(
        &mut h,
        format!("{diff}/layer.tar"),
        std::fs::File::open(&layer_path).unwrap(),
    )
    .unwrap();
    file.into_inner().unwrap();
    std::fs::remove_file(&layer_path).unwrap();
    Saved {
        id: format!("sha256:{id}"),
        layer: format!("sha256:{diff}"),
    }
}

/// `results/<study>/reference/run.tar.gz` unpacked into `into`, without its SHA256SUMS (so an
/// altered folder is read, not refused): the run folder.
pub fn reference_folder(study: &str, into: &Path) -> std::path::PathBuf {
    let archive = super::repo().join(format!("results/{study}/reference/run.tar.gz"));
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(&archive).unwrap());
    tar::Archive::new(gz).unpack(into).unwrap();
    let run = std::fs::read_dir(into)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    std::fs::remove_file(run.join("SHA256SUMS")).unwrap();
    run
}
