//! The run files `parkbench verify` reads, taken from an archive (after it passes `check`) or from a
//! run directory. Nothing is extracted to disk.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{LOAD_LIMIT, scan};

/// The small text files of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFiles {
    /// The run id: the archive's top folder or the run directory's name.
    pub run_id: String,
    pub study_yaml: String,
    pub samples_jsonl: String,
    pub env_json: Option<String>,
    pub manifest_json: Option<String>,
    pub summary_json: Option<String>,
    pub verdicts_json: Option<String>,
    pub report_md: Option<String>,
    pub run_json: Option<String>,
}

/// Members [`read_run`] loads, in [`RunFiles`] field order.
const LOADED: [&str; 8] = [
    "study.yaml",
    "samples.jsonl",
    "env.json",
    "manifest.json",
    "summary.json",
    "verdicts.json",
    "report.md",
    "run.json",
];

/// Checks `archive` like `check` and returns its run files, read in the same pass.
pub fn read_run(archive: &Path) -> Result<RunFiles> {
    let mut scan = scan::scan(archive, &LOADED)?;
    let root = scan.report.root.clone();
    assemble(root.clone(), |name| {
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
    let run_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    assemble(run_id, |name| {
        let path = dir.join(name);
        let size = match fs::metadata(&path) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        if size > LOAD_LIMIT {
            bail!(
                "{}: {size} bytes, over the {LOAD_LIMIT}-byte limit for files read into memory",
                path.display()
            );
        }
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        Ok(Some(text))
    })
    .with_context(|| format!("reading run directory {}", dir.display()))
}

/// Builds [`RunFiles`] from `load`, which returns a member's text or `None` when it is absent.
fn assemble(
    run_id: String,
    mut load: impl FnMut(&str) -> Result<Option<String>>,
) -> Result<RunFiles> {
    let mut required = |name: &str| -> Result<String> {
        load(name)?.with_context(|| format!("{run_id}/{name} is missing: a run must hold it"))
    };
    let study_yaml = required(LOADED[0])?;
    let samples_jsonl = required(LOADED[1])?;
    Ok(RunFiles {
        study_yaml,
        samples_jsonl,
        env_json: load(LOADED[2])?,
        manifest_json: load(LOADED[3])?,
        summary_json: load(LOADED[4])?,
        verdicts_json: load(LOADED[5])?,
        report_md: load(LOADED[6])?,
        run_json: load(LOADED[7])?,
        run_id,
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, read_raw, write_raw};
    use super::*;

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
