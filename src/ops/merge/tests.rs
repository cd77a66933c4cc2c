use std::io::{Read, Write};

use super::*;
use crate::outputs::merge::tests::{half, run};

/// Writes `input`'s files as a run folder `<tmp>/<name>` and archives it; returns the archive.
fn archived(tmp: &Path, input: &Input) -> PathBuf {
    let dir = tmp.join(&input.files.run_id);
    std::fs::create_dir_all(&dir).unwrap();
    let f = &input.files;
    std::fs::write(dir.join(run_dir::STUDY), &f.study_yaml).unwrap();
    std::fs::write(dir.join(run_dir::SAMPLES), &f.samples_jsonl).unwrap();
    std::fs::write(dir.join(run_dir::STATE), f.run_json.as_ref().unwrap()).unwrap();
    std::fs::write(
        dir.join(run_dir::MANIFEST),
        f.manifest_json.as_ref().unwrap(),
    )
    .unwrap();
    let out = tmp.join(format!("{}.tar.gz", f.run_id));
    archive::write(&dir, &[], &out).unwrap();
    out
}

/// The archive with one byte of its samples changed, its tar and gzip framing intact.
fn tampered(path: &Path) -> PathBuf {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut tar)
        .unwrap();
    let at = tar
        .windows(12)
        .position(|w| w == b"\"valid\":true")
        .expect("a sample in the archive");
    tar[at + 8..at + 12].copy_from_slice(b"TRUE");
    let out = path.with_file_name("tampered.tar.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&out).unwrap(),
        flate2::Compression::default(),
    );
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap();
    out
}

#[tokio::test]
async fn a_tampered_archive_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let a = archived(tmp.path(), &run("a", half(1), None));
    let b = archived(tmp.path(), &run("b", half(2), None));
    assert_eq!(
        read(&a).unwrap().files.run_id,
        "a",
        "the untampered archive reads"
    );
    let bad = tampered(&b);
    let out = tmp.path().join("merged");
    let paths = Paths {
        repo: tmp.path().to_owned(),
        results: tmp.path().join("results"),
    };
    let options = Options {
        runs: vec![a, bad],
        out: Some(out.clone()),
    };
    let err = format!("{:#}", command(&paths, &options).await.unwrap_err());
    assert!(
        err.contains("tampered.tar.gz") && err.contains("modified"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
    assert!(!paths.results.exists(), "nothing written");
}

#[tokio::test]
async fn a_refused_merge_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let a = archived(tmp.path(), &run("a", half(1), None));
    let mut other = run("b", half(2), None);
    other.files.study_yaml = crate::study::DEFAULT_STUDY.replacen("id: wait-1m", "id: other", 1);
    let b = archived(tmp.path(), &other);
    let out = tmp.path().join("merged");
    let paths = Paths {
        repo: tmp.path().to_owned(),
        results: tmp.path().join("results"),
    };
    let options = Options {
        runs: vec![a, b],
        out: Some(out.clone()),
    };
    let err = format!("{:#}", command(&paths, &options).await.unwrap_err());
    assert!(err.contains("one study"), "{err}");
    assert!(!out.exists());
}
