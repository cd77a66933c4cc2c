//! Every committed reference run (`results/<study>/reference/`) is whole and recomputes: `check`
//! passes, `verify` recomputes its verdicts and finds them equal to the stored ones, its report and
//! figure are there and byte-identical to the ones inside its archive, no file is over 1 MiB, and
//! the archive holds the run folder alone (no images, driver or source bundle). A study without a
//! reference must be listed, with its reason, in `results/REFERENCES-PENDING`. No Engine needed.

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use common::*;

/// The list of studies without a reference yet: study → why.
const PENDING: &str = "REFERENCES-PENDING";

/// `<study>: <reason>` lines of the pending list (blank lines and `#` comments skipped).
fn pending(results: &Path) -> BTreeMap<String, String> {
    let path = results.join(PENDING);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (study, why) = line.split_once(':').unwrap_or_else(|| {
            panic!(
                "{PENDING} line {}: `{line}` is not `<study>: <reason>`",
                n + 1
            )
        });
        let (study, why) = (study.trim(), why.trim());
        assert!(
            !why.is_empty(),
            "{PENDING} line {}: {study} has no reason",
            n + 1
        );
        let before = out.insert(study.to_string(), why.to_string());
        assert!(before.is_none(), "{PENDING}: {study} is listed twice");
    }
    out
}

/// The files of a `.tar.gz` whose path (below its top folder) is one of `names`: name → bytes.
fn files_inside(archive: &Path, names: &[&str]) -> BTreeMap<String, Vec<u8>> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(archive).unwrap());
    let mut tar = tar::Archive::new(gz);
    let mut out = BTreeMap::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let inner = path
            .split_once('/')
            .map_or("", |(_, rest)| rest)
            .to_string();
        assert!(
            !(inner == "parkbench" || inner.starts_with("source/") || inner.starts_with("images/")),
            "{} holds {path}: a reference holds the run folder alone",
            archive.display()
        );
        if names.contains(&inner.as_str()) {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            out.insert(inner, bytes);
        }
    }
    out
}

#[test]
fn every_study_has_a_reference_run_that_checks_and_verifies_or_says_why_not() {
    let results = repo().join("results");
    let pending = pending(&results);
    let mut studies = Vec::new();
    let mut verified = Vec::new();
    for entry in std::fs::read_dir(&results).unwrap() {
        let study = entry.unwrap().path();
        if !study.join("study.yaml").is_file() {
            continue;
        }
        let name = study.file_name().unwrap().to_string_lossy().into_owned();
        studies.push(name.clone());
        let dir = study.join("reference");
        if !dir.exists() {
            assert!(
                pending.contains_key(&name),
                "{name} has no reference run (results/{name}/reference/): make one with `just \
                 reference {name}` on a quiet machine, or list it with its reason in results/{PENDING}"
            );
            continue;
        }
        assert!(
            !pending.contains_key(&name),
            "{name} has a reference run: remove its line from results/{PENDING}"
        );
        for file in ["report.md", "figure.svg", "run.tar.gz"] {
            let size = std::fs::metadata(dir.join(file))
                .unwrap_or_else(|e| panic!("{name}: reference/{file}: {e}"))
                .len();
            assert!(size <= 1 << 20, "{name}: reference/{file} is {size} bytes");
        }
        let archive = dir.join("run.tar.gz");
        let inside = files_inside(&archive, &["report.md", "figure.svg"]);
        for file in ["report.md", "figure.svg"] {
            let committed = std::fs::read(dir.join(file)).unwrap();
            assert!(
                inside.get(file) == Some(&committed),
                "{name}: reference/{file} is not the one inside reference/run.tar.gz \
                 (make the reference again with `just reference {name}`)"
            );
        }
        let out = parkbench().arg("check").arg(&archive).output().unwrap();
        assert!(out.status.success(), "{name}: check: {}", describe(&out));
        let out = parkbench().arg("verify").arg(&archive).output().unwrap();
        assert!(
            out.status.success() && text(&out.stdout).contains("match the stored verdicts.json"),
            "{name}: the verdicts were not compared: {}",
            describe(&out)
        );
        verified.push(name);
    }
    for name in pending.keys() {
        assert!(
            studies.contains(name),
            "results/{PENDING} lists {name}, which is not a study in results/"
        );
    }
    assert!(
        !verified.is_empty(),
        "no reference run was verified (studies: {studies:?})"
    );
    eprintln!("reference runs verified: {verified:?}; pending: {pending:?}");
}
