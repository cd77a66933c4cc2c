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

#[test]
fn a_report_of_several_classes_puts_the_claims_per_class_first_and_names_each_runs_class() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = [
        run("a", half(1), Some("class A")),
        run("b", half(2), Some("class B")),
    ];
    let dir = RunDir::create_in(tmp.path()).unwrap();
    let merged = merge::merge(&inputs, &dir.id()).unwrap();
    write(&dir, &merged).unwrap();
    let md = dir.read(run_dir::REPORT).unwrap();
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("{s}: {md}"));
    assert!(
        at("## Verdicts per hardware class") < at("## Verdicts\n"),
        "{md}"
    );
    assert!(
        md.contains("- **A**: class A (12 samples)")
            && md.contains("- **B**: class B (12 samples)"),
        "{md}"
    );
    assert!(
        md.contains("### Verdicts per class\n\n| Claim | A | B |"),
        "{md}"
    );
    assert!(
        md.contains("`go-rss-1m`: reproduced on 1 of 2 classes: not measured on class B"),
        "{md}"
    );
    let env = &md[at("## Environment")..];
    assert!(env.contains("| Run | Hardware class |"), "{env}");
    for (r, label) in merged
        .record
        .runs
        .iter()
        .zip(["a.tar.gz (run a, shard 1/2)", "b.tar.gz (run b, shard 2/2)"])
    {
        let row = format!("| {label} | {} |", r.hardware);
        assert!(env.contains(&row), "{row}: {env}");
    }
    assert!(!env.contains("This run"), "{env}");
    let html = dir.read(run_dir::REPORT_HTML).unwrap();
    let per = html
        .find("Verdicts per hardware class")
        .expect("the claims per class");
    assert!(per < html.find("id=\"verdict-table\"").unwrap());
}
