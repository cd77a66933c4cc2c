//! The run files `parkbench verify` reads, taken from an archive (after it passes `check`) or from a
//! run directory. Nothing is extracted to disk.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::scan;
use crate::run_dir::{LOAD_LIMIT, RunFiles};

/// Checks `archive` like `check` and returns its run files, read in the same pass.
pub fn read_run(archive: &Path) -> Result<RunFiles> {
    let mut scan = scan::scan(archive, &RunFiles::NAMES)?;
    let root = scan.report.root.clone();
    RunFiles::assemble(root.clone(), |name| {
        if let Some(size) = scan.too_large.get(name) {
            bail!(
                "{root}/{name}: {size} bytes, over the {LOAD_LIMIT}-byte limit for files read into memory"
            );
        }
        scan.kept
            .remove(name)
            .map(|bytes| {
                String::from_utf8(bytes).with_context(|| format!("{root}/{name}: not UTF-8 text"))
            })
            .transpose()
    })
}

/// Returns the run files of a run directory.
pub fn read_run_dir(dir: &Path) -> Result<RunFiles> {
    crate::run_dir::RunDir::at(dir).read_files()
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, read_raw, write_raw};
    use super::*;
    use std::fs;

    #[test]
    fn read_run_returns_the_run_files() {
        let fx = Fixture::new();
        let files = read_run(&fx.write().path).unwrap();
        assert_eq!(files.run_id, "run-1");
        assert_eq!(
            files.samples_jsonl,
            fs::read_to_string(fx.run_dir.join("samples.jsonl")).unwrap()
        );
        assert_eq!(files.samples_jsonl.lines().count(), 24);
        assert_eq!(
            files.study_yaml,
            fs::read_to_string(fx.run_dir.join("study.yaml")).unwrap()
        );
        assert!(
            files.env_json.is_some() && files.verdicts_json.is_some() && files.report_md.is_some()
        );
    }

    #[test]
    fn read_run_dir_matches_read_run() {
        let fx = Fixture::new();
        assert_eq!(
            read_run_dir(&fx.run_dir).unwrap(),
            read_run(&fx.write().path).unwrap()
        );
    }

    #[test]
    fn read_run_refuses_a_tampered_archive() {
        let fx = Fixture::new();
        let mut entries = read_raw(&fx.write().path);
        let samples = entries
            .iter_mut()
            .find(|e| e.name() == "run-1/samples.jsonl")
            .unwrap();
        samples.data[0] ^= 1;
        let tampered = fx.path("tampered.tar.gz");
        write_raw(&entries, &tampered);
        let err = format!("{:#}", read_run(&tampered).unwrap_err());
        assert!(
            err.contains("run-1/samples.jsonl: sha256 mismatch"),
            "{err}"
        );
    }

    #[test]
    fn missing_files_are_none_or_named() {
        let fx = Fixture::new();
        fs::remove_file(fx.run_dir.join("verdicts.json")).unwrap();
        assert_eq!(read_run_dir(&fx.run_dir).unwrap().verdicts_json, None);
        fs::remove_file(fx.run_dir.join("samples.jsonl")).unwrap();
        let err = format!("{:#}", read_run_dir(&fx.run_dir).unwrap_err());
        assert!(err.contains("run-1/samples.jsonl is missing"), "{err}");
    }
}
