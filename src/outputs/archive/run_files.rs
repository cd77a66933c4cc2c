//! The run files `parkbench verify` reads, taken from an archive (after it passes `check`) or from a
//! run directory. Nothing is extracted to disk.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::scan::{self, Unpack};
use super::{check, driver};
use crate::run::run_dir::{RunFiles, load_limit};

/// Checks `archive` like `check` and returns its run files, read in the same pass.
pub fn read_run(archive: &Path) -> Result<RunFiles> {
    read_run_unpacking(archive, Unpack::default())
}

/// [`read_run`], also unpacking the members `unpack` names (e.g. `source`, `images`) in the same
/// pass. On an error the unpack folder holds a partial tree: discard it.
pub fn read_run_unpacking(archive: &Path, unpack: Unpack) -> Result<RunFiles> {
    let keep: Vec<&str> = RunFiles::NAMES
        .iter()
        .copied()
        .chain([driver::RECORD])
        .collect();
    let mut scan = scan::scan_unpacking(archive, &keep, unpack)?;
    check::driver_of(&scan)?;
    let root = scan.report.root.clone();
    RunFiles::assemble(root.clone(), |name| {
        if let Some(size) = scan.too_large.get(name) {
            bail!(
                "{root}/{name}: {size} bytes, over the {}-byte limit for files read into memory",
                load_limit(name)
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

#[cfg(test)]
mod tests {
    use super::super::fixture::{Fixture, driver_record, read_raw, write_raw};
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
            crate::run::run_dir::RunDir::at(&fx.run_dir)
                .read_files()
                .unwrap(),
            read_run(&fx.write().path).unwrap()
        );
    }

    #[test]
    fn read_run_refuses_a_driver_its_record_does_not_name() {
        let fx = Fixture::new();
        let other = crate::files::digest::bytes(b"another driver");
        let record = driver_record(&other, "rustc 1.95.0");
        let out = fx.write_with_driver(Some(b"a driver"), Some(&record));
        let err = format!("{:#}", read_run(&out).unwrap_err());
        assert!(err.contains("is not the one its record describes"), "{err}");
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
        assert_eq!(
            crate::run::run_dir::RunDir::at(&fx.run_dir)
                .read_files()
                .unwrap()
                .verdicts_json,
            None
        );
        fs::remove_file(fx.run_dir.join("samples.jsonl")).unwrap();
        let err = format!(
            "{:#}",
            crate::run::run_dir::RunDir::at(&fx.run_dir)
                .read_files()
                .unwrap_err()
        );
        assert!(err.contains("run-1/samples.jsonl is missing"), "{err}");
    }

    #[test]
    fn named_members_are_unpacked_in_the_same_pass() {
        use std::os::unix::fs::PermissionsExt;
        let fx = Fixture::new();
        let script = fx.tmp.path().join("repo/docker/probe-go/run.sh");
        fs::write(&script, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("main.go", fx.tmp.path().join("repo/docker/probe-go/cur.go"))
            .unwrap();
        let archive = fx.write().path;
        let dest = tempfile::tempdir().unwrap();
        let unpack = Unpack {
            dest: dest.path().to_owned(),
            members: vec!["source/docker".into()],
        };
        let files = read_run_unpacking(&archive, unpack).unwrap();
        assert_eq!(files, read_run(&archive).unwrap());
        let go = dest.path().join("source/docker/probe-go");
        assert_eq!(
            fs::read_to_string(go.join("main.go")).unwrap(),
            fs::read_to_string(fx.tmp.path().join("repo/docker/probe-go/main.go")).unwrap()
        );
        assert_eq!(
            fs::read_link(go.join("cur.go")).unwrap(),
            Path::new("main.go")
        );
        let mode = fs::metadata(go.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "executable bits kept");
        assert!(
            !dest.path().join("source/toolchains").exists(),
            "only what was named"
        );
        assert!(!dest.path().join("samples.jsonl").exists());

        // A tampered member is still caught (the caller discards the folder).
        let mut entries = read_raw(&archive);
        let main = entries
            .iter_mut()
            .find(|e| e.name().ends_with("probe-go/main.go"))
            .unwrap();
        main.data[0] ^= 1;
        let tampered = fx.path("tampered.tar.gz");
        write_raw(&entries, &tampered);
        let again = tempfile::tempdir().unwrap();
        let unpack = Unpack {
            dest: again.path().to_owned(),
            members: vec!["source".into()],
        };
        let err = format!("{:#}", read_run_unpacking(&tampered, unpack).unwrap_err());
        assert!(err.contains("main.go: sha256 mismatch"), "{err}");
    }
}
