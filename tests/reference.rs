//! Every committed reference run (`results/<study>/reference/`) is whole and recomputes: `check`
//! passes, `verify` recomputes its verdicts and finds them equal to the stored ones, its report and
//! figure are there, no file is over 1 MiB, and the archive holds the run folder alone (no images,
//! driver or source bundle). No Engine needed.

mod common;

use common::*;

#[test]
fn every_reference_run_checks_and_verifies() {
    let results = repo().join("results");
    let mut verified = Vec::new();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&results).unwrap() {
        let study = entry.unwrap().path();
        if !study.join("study.yaml").is_file() {
            continue;
        }
        let name = study.file_name().unwrap().to_string_lossy().into_owned();
        let dir = study.join("reference");
        if !dir.exists() {
            missing.push(name);
            continue;
        }
        for file in ["report.md", "figure.svg", "run.tar.gz"] {
            let size = std::fs::metadata(dir.join(file))
                .unwrap_or_else(|e| panic!("{name}: reference/{file}: {e}"))
                .len();
            assert!(size <= 1 << 20, "{name}: reference/{file} is {size} bytes");
        }
        let archive = dir.join("run.tar.gz");
        // The run folder alone: no images, no driver, no source bundle.
        let gz = flate2::read::GzDecoder::new(std::fs::File::open(&archive).unwrap());
        for entry in tar::Archive::new(gz).entries().unwrap() {
            let path = entry
                .unwrap()
                .path()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let inner = path.split_once('/').map_or("", |(_, rest)| rest);
            assert!(
                !(inner == "parkbench"
                    || inner.starts_with("source/")
                    || inner.starts_with("images/")),
                "{name}: reference/run.tar.gz holds {path}"
            );
        }
        let out = parkbench().arg("check").arg(&archive).output().unwrap();
        assert!(out.status.success(), "{name}: check: {}", describe(&out));
        let out = parkbench().arg("verify").arg(&archive).output().unwrap();
        assert!(
            out.status.success() && text(&out.stderr).contains("match the stored verdicts.json"),
            "{name}: the verdicts were not compared: {}",
            describe(&out)
        );
        verified.push(name);
    }
    eprintln!("reference runs verified: {verified:?}; studies without one yet: {missing:?}");
}
