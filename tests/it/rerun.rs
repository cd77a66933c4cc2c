//! `parkbench rerun` against the real Engine: an archive with images is loaded, verified, run again
//! and compared (same binaries); one without images is rebuilt from its sources, and a manifest that
//! names other binaries is refused, or run with `--accept-different-binaries` and recorded. Bad
//! archives (cut down, truncated, another tool's, a kind this version does not know) are refused
//! and nothing is written to `results/`.

use crate::common;

use std::path::{Path, PathBuf};

use common::archive::{repack, tar, unpack};
use common::*;

fn rerun(results: &Path, archive: &Path, extra: &[&str]) -> std::process::Output {
    Invocation::rerun(results, archive)
        .cpus("auto")
        .args(extra)
        .output()
}

fn runs(results: &Path) -> usize {
    std::fs::read_dir(results.join("tiny-rerun/runs"))
        .map(|d| d.filter(|e| e.as_ref().unwrap().path().is_dir()).count())
        .unwrap_or(0)
}

fn state(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap()
}

/// The run folder the last rerun wrote (`runs/latest`).
fn newest(results: &Path) -> PathBuf {
    std::fs::canonicalize(results.join("tiny-rerun/runs/latest")).unwrap()
}

#[test]
fn rerun_an_archive_with_and_without_images() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    let study = write_study(
        tmp.path(),
        "s.yaml",
        &small_study("tiny-rerun", "10000", 1, "0", 200, ""),
    );
    Invocation::reproduce(&first, &study)
        .cpus("auto")
        .arg("--with-images")
        .succeeds();
    let original = only_run(&first, "tiny-rerun");
    let with_images = tmp.path().join("with-images.tar.gz");
    std::fs::rename(original.with_extension("tar.gz"), &with_images).unwrap();

    // With images: loaded, every binary checked, the same protocol run, compared.
    let results = tmp.path().join("results");
    let out = rerun(&results, &with_images, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    assert!(said.contains("Same binaries: yes"), "{said}");
    let run = newest(&results);
    let of = &state(&run)["rerun_of"];
    assert_eq!(
        of["sha256"].as_str().unwrap(),
        parkbench::files::digest::file(&with_images).unwrap()
    );
    assert_eq!(of["images"], "loaded");
    assert!(run.join("compare.md").is_file() && run.join("compare.svg").is_file());
    assert!(run.join("compare.html").is_file());
    assert_eq!(
        samples(&run).len(),
        samples(&original).len(),
        "the same matrix"
    );
    assert!(
        run.with_extension("tar.gz").is_file(),
        "the rerun is archived"
    );

    // Without images: rebuilt from the archive's sources, the same binaries.
    let out = parkbench().arg("archive").arg(&original).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let plain = original.with_extension("tar.gz");
    let out = rerun(&results, &plain, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(text(&out.stdout).contains("Same binaries: yes"));
    assert_eq!(state(&newest(&results))["rerun_of"]["images"], "rebuilt");

    // A manifest naming other binaries: refused with both hashes, or run and recorded.
    let root = unpack(&plain, &tmp.path().join("edited"));
    let manifest = root.join("manifest.json");
    let text_of = std::fs::read_to_string(&manifest).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text_of).unwrap();
    let go = json["images"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|i| i["name"] == "go")
        .unwrap();
    let (path, sha) = {
        let (path, sha) = go["binaries"].as_object().unwrap().iter().next().unwrap();
        (path.clone(), sha.as_str().unwrap().to_string())
    };
    go["binaries"][&path] = "0".repeat(64).into();
    std::fs::write(&manifest, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    let other = repack(&root, &tmp.path().join("other-binaries.tar.gz"));
    let before = runs(&results);
    let out = rerun(&results, &other, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("archive sha256 {}, here {sha}", "0".repeat(64)))
            && err.contains("--accept-different-binaries"),
        "{err}"
    );
    assert_eq!(runs(&results), before, "nothing written");
    let out = rerun(&results, &other, &["--accept-different-binaries"]);
    assert!(out.status.success(), "{}", describe(&out));
    let recorded = state(&newest(&results));
    assert_eq!(recorded["rerun_of"]["different_binaries"][0]["path"], path);
    assert!(
        recorded["deviations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().contains("differs from the archive's")),
        "{recorded}"
    );

    bad_archives_write_nothing(&results, &plain, tmp.path());
}

/// Bad archives made from `plain`, an archive without images (small, so quick to repack).
fn bad_archives_write_nothing(results: &Path, plain: &Path, tmp: &Path) {
    let refused = |archive: &Path, words: &[&str]| {
        let before = runs(results);
        let out = rerun(results, archive, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        let err = text(&out.stderr);
        for w in words {
            assert!(err.contains(w), "{w:?} in:\n{err}");
        }
        assert_eq!(
            runs(results),
            before,
            "nothing written for {}",
            archive.display()
        );
    };

    // Images named by the manifest but not carried: only one of the two probe images.
    let root = unpack(plain, &tmp.join("cut"));
    std::fs::create_dir(root.join("images")).unwrap();
    std::fs::write(root.join("images/go.tar"), "an exported image").unwrap();
    let sums = root.join("SHA256SUMS");
    let mut listing = std::fs::read_to_string(&sums).unwrap();
    listing.push_str(&format!("{}  images/go.tar\n", "0".repeat(64)));
    std::fs::write(&sums, listing).unwrap();
    let cut = repack(&root, &tmp.join("cut.tar.gz"));
    refused(&cut, &["rust-tokio", "images/rust-tokio.tar"]);

    // A study kind this version does not know.
    let root = unpack(plain, &tmp.join("kind"));
    let study = root.join("study.yaml");
    let yaml = std::fs::read_to_string(&study).unwrap();
    let yaml = yaml.replacen("    image: go\n", "    image: go\n    kind: telepathy\n", 1);
    std::fs::write(&study, yaml).unwrap();
    let kind = repack(&root, &tmp.join("kind.tar.gz"));
    refused(&kind, &["cannot be run by this version", "telepathy"]);

    // Truncated, and another tool's archive.
    let bytes = std::fs::read(plain).unwrap();
    let truncated = tmp.join("truncated.tar.gz");
    std::fs::write(&truncated, &bytes[..bytes.len() / 3]).unwrap();
    refused(&truncated, &["truncated"]);
    let foreign = tmp.join("foreign");
    std::fs::create_dir_all(foreign.join("pkg")).unwrap();
    std::fs::write(foreign.join("pkg/README"), "another tool's bundle\n").unwrap();
    let foreign_tgz = tmp.join("foreign.tar.gz");
    tar(&[
        "-czf".as_ref(),
        foreign_tgz.as_os_str(),
        "-C".as_ref(),
        foreign.as_os_str(),
        "pkg".as_ref(),
    ]);
    refused(&foreign_tgz, &["not a parkbench run archive"]);
}
