//! Test helpers: a fake run directory with sources, and raw tar surgery to build tampered archives.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use tar::{EntryType, Header};
use tempfile::TempDir;

use super::{ArchiveInfo, driver, write};

/// A run directory `results/demo/runs/run-1` with sources under `repo/`, in a temporary folder.
pub struct Fixture {
    pub tmp: TempDir,
    pub run_dir: PathBuf,
    pub sources: Vec<(String, PathBuf)>,
    pub out: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let tmp = TempDir::new().unwrap();
        let run_dir = tmp.path().join("results/demo/runs/run-1");
        for (name, text) in run_files() {
            put(&run_dir.join(name), &text);
        }
        put(&run_dir.join("partial.tmp"), "half-written");
        let repo = tmp.path().join("repo");
        for (name, text) in source_files() {
            put(&repo.join(name), &text);
        }
        let checksum = "docker/probe-rust/vendor/tokio/.cargo-checksum.json";
        let sources = vec![
            ("docker".to_string(), repo.join("docker")),
            ("toolchains".to_string(), repo.join("toolchains")),
            (checksum.to_string(), repo.join(checksum)),
        ];
        let out = tmp.path().join("results/demo/runs/run-1.tar.gz");
        Fixture {
            tmp,
            run_dir,
            sources,
            out,
        }
    }

    /// Writes the archive to `out`.
    pub fn write(&self) -> ArchiveInfo {
        write(&self.run_dir, &self.sources, &self.out).unwrap()
    }

    /// A path in the temporary folder for a derived archive.
    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// The archive with a driver (`bytes`) and its record (`json`), each when given, as extras.
    pub fn write_with_driver(&self, bytes: Option<&[u8]>, json: Option<&str>) -> PathBuf {
        let mut extras = Vec::new();
        if let Some(bytes) = bytes {
            fs::write(self.path("parkbench"), bytes).unwrap();
            extras.push((driver::MEMBER.to_string(), self.path("parkbench")));
        }
        if let Some(json) = json {
            fs::write(self.path("parkbench.json"), json).unwrap();
            extras.push((driver::RECORD.to_string(), self.path("parkbench.json")));
        }
        let out = self.path("with-driver.tar.gz");
        super::write_with(&self.run_dir, &self.sources, &extras, &out).unwrap();
        out
    }
}

/// A driver's record (`parkbench.json`) of a pinned build with `sha256`, compiled by `rustc`.
pub fn driver_record(sha256: &str, rustc: &str) -> String {
    format!(
        r#"{{"sha256":"{sha256}","version":"0.1.0","target":"x86_64-unknown-linux-gnu",
        "linking":"static","rustc":"{rustc}","opt_level":"0","rustflags":"",
        "built_with":"just driver","built_in":"pinned"}}"#
    )
}

pub fn put(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// 24 sample lines, shaped like the real ones.
pub fn samples_text() -> String {
    (0..24)
        .map(|i| {
            format!(
                "{{\"run_id\":\"run-1\",\"study\":\"demo\",\"probe\":\"{}\",\"tasks\":{},\"repeat\":{},\
                 \"rss_bytes\":[{},{},{}],\"valid\":true,\"stderr_tail\":\"\",\"metrics\":{{}}}}\n",
                if i % 2 == 0 { "go" } else { "tokio" },
                [1_000, 100_000, 1_000_000][i % 3],
                i / 6 + 1,
                400_000_000 + i * 1_000,
                400_000_100 + i * 1_000,
                400_000_200 + i * 1_000
            )
        })
        .collect()
}

fn run_files() -> Vec<(&'static str, String)> {
    vec![
        ("study.yaml", "id: demo\ntitle: Demo study\n".to_string()),
        ("samples.jsonl", samples_text()),
        (
            "samples.csv",
            "probe,tasks,repeat,rss_bytes\ngo,1000,1,400000000\n".to_string(),
        ),
        (
            "env.json",
            "{\"kernel\":\"6.8.0\",\"cpus\":\"0-3\"}\n".to_string(),
        ),
        (
            "manifest.json",
            "{\"images\":{\"probe-go\":\"sha256:00\"}}\n".to_string(),
        ),
        ("summary.json", "{\"cells\":[]}\n".to_string()),
        ("verdicts.json", "{\"claims\":[]}\n".to_string()),
        ("report.md", "# Demo\n\nReproduced.\n".to_string()),
        ("run.json", "{\"status\":\"complete\"}\n".to_string()),
        (
            "figure.svg",
            "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n".to_string(),
        ),
        (
            "report.html",
            "<!DOCTYPE html>\n<title>Demo</title>\n".to_string(),
        ),
    ]
}

/// About 50 KB of sources, plus things the writer must skip.
fn source_files() -> Vec<(&'static str, String)> {
    let code = |lang: &str, n: usize| {
        (0..n)
            .map(|i| format!("// {lang} line {i} of the probe\n"))
            .collect()
    };
    vec![
        (
            "docker/probe-go/Dockerfile",
            "FROM scratch\nCOPY probe /probe\n".to_string(),
        ),
        ("docker/probe-go/main.go", code("go", 700)),
        ("docker/probe-rust/Dockerfile", "FROM scratch\n".to_string()),
        ("docker/probe-rust/src/main.rs", code("rust", 700)),
        (
            "docker/probe-rust/target/release/probe",
            "build output".to_string(),
        ),
        (
            "docker/probe-rust/vendor/tokio/src/lib.rs",
            "vendored".to_string(),
        ),
        (
            "docker/probe-rust/vendor/tokio/.cargo-checksum.json",
            "{\"files\":{}}".to_string(),
        ),
        ("docker/.git", "gitdir: elsewhere".to_string()),
        ("toolchains/go.sha256", code("sha", 300)),
    ]
}

/// One tar entry as raw parts.
#[derive(Debug, Clone)]
pub struct Raw {
    pub name: Vec<u8>,
    pub kind: EntryType,
    pub link: Vec<u8>,
    pub mode: u32,
    pub data: Vec<u8>,
}

impl Raw {
    pub fn file(name: &str, data: &[u8]) -> Self {
        Raw {
            name: name.into(),
            kind: EntryType::Regular,
            link: vec![],
            mode: 0o644,
            data: data.into(),
        }
    }

    pub fn link(name: &str, kind: EntryType, target: &str) -> Self {
        Raw {
            name: name.into(),
            kind,
            link: target.into(),
            mode: 0o777,
            data: vec![],
        }
    }

    pub fn name(&self) -> String {
        String::from_utf8(self.name.clone()).unwrap()
    }
}

/// The entries of a `.tar.gz`, in order.
pub fn read_raw(archive: &Path) -> Vec<Raw> {
    let gz = flate2::read::GzDecoder::new(fs::File::open(archive).unwrap());
    let mut tar = tar::Archive::new(gz);
    let mut out = Vec::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
        out.push(Raw {
            name: entry.path_bytes().into_owned(),
            kind: entry.header().entry_type(),
            link: entry
                .link_name_bytes()
                .map(|l| l.into_owned())
                .unwrap_or_default(),
            mode: entry.header().mode().unwrap(),
            data,
        });
    }
    out
}

/// A tar stream of `entries`; names and link targets are written unchecked, byte for byte.
pub fn tar_bytes(entries: &[Raw]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for raw in entries {
        let mut header = Header::new_gnu();
        let gnu = header.as_gnu_mut().unwrap();
        gnu.name[..raw.name.len()].copy_from_slice(&raw.name);
        gnu.linkname[..raw.link.len()].copy_from_slice(&raw.link);
        header.set_entry_type(raw.kind);
        header.set_mode(raw.mode);
        header.set_size(raw.data.len() as u64);
        header.set_cksum();
        builder.append(&header, raw.data.as_slice()).unwrap();
    }
    builder.into_inner().unwrap()
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// Writes `entries` as a `.tar.gz` at `out`.
pub fn write_raw(entries: &[Raw], out: &Path) {
    fs::write(out, gzip(&tar_bytes(entries))).unwrap();
}

/// Every path below `root`, sorted: to show that checking wrote nothing.
pub fn snapshot(root: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .collect();
    paths.sort();
    paths
}
