//! Declared patches and vendoring beyond Cargo against the real Engine: the probes of
//! `tests/fixtures/images/` built in a repository of their own (a copy of `docker/` and `toolchains/`
//! with the fixtures' folders added) on the default image namespace, so the images they are built
//! on are this repository's own, reused.
//!
//! No Go proxy and no npm registry are reachable here: the Go probe's module and the Node.js
//! probe's package are local dependencies. The Python probe's wheel comes from PyPI.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

const FIXTURES: [&str; 3] = ["go-third-party", "python-wheels", "node-vendored"];

/// A repository in `root`: this one's `docker/` and `toolchains/` copied, plus the fixtures' folders.
fn repository(root: &Path) -> PathBuf {
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for entry in ["docker", "toolchains"] {
        archive::tar(&[
            "-C".as_ref(),
            common::repo().as_os_str(),
            "-cf".as_ref(),
            root.join(format!("{entry}.tar")).as_os_str(),
            entry.as_ref(),
        ]);
        archive::tar(&[
            "-C".as_ref(),
            repo.as_os_str(),
            "-xf".as_ref(),
            root.join(format!("{entry}.tar")).as_os_str(),
        ]);
    }
    for name in FIXTURES {
        let from = common::repo().join("tests/fixtures/images").join(name);
        archive::tar(&[
            "-C".as_ref(),
            from.parent().unwrap().as_os_str(),
            "-cf".as_ref(),
            root.join(format!("{name}.tar")).as_os_str(),
            name.as_ref(),
        ]);
        archive::tar(&[
            "-C".as_ref(),
            repo.join("docker").as_os_str(),
            "-xf".as_ref(),
            root.join(format!("{name}.tar")).as_os_str(),
        ]);
    }
    repo
}

fn build(repo: &Path, only: &str, manifest: &Path) -> std::process::Output {
    parkbench()
        .arg("--repo")
        .arg(repo)
        .args(["build", "--only", only, "--manifest"])
        .arg(manifest)
        .output()
        .unwrap()
}

fn image<'a>(manifest: &'a Value, name: &str) -> &'a Value {
    manifest["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in the manifest: {manifest:#}"))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn patched_and_vendored_probes_build_offline_and_run_their_dependencies() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path());
    let manifest = tmp.path().join("manifest.json");
    let only = FIXTURES.join(",");
    let out = build(&repo, &only, &manifest);
    assert!(out.status.success(), "{}", describe(&out));
    let m = read_json(&manifest);

    // Each program runs inside its image (the recipe's `versions`), using its vendored dependency.
    let go = image(&m, "go-third-party");
    let greeting = "HELLO, VENDORED";
    assert_eq!(
        go["versions"]["hello"],
        format!("result letters={}", greeting.len()),
        "the patched program compiled, with the vendored local module"
    );
    let python = image(&m, "python-wheels");
    assert_eq!(python["versions"]["main.py"], "six 1.17.0", "{python:#}");
    let node = image(&m, "node-vendored");
    assert_eq!(node["versions"]["main.js"], "HELLO, NPM", "{node:#}");

    // Every vendored tree and every patch is an input of its tag.
    for (img, tool) in [(go, "go"), (python, "pip"), (node, "npm")] {
        let inputs = &img["inputs"];
        let hash = inputs[format!("vendor {tool}")]
            .as_str()
            .unwrap_or_default();
        assert_eq!(hash.len(), 64, "vendor {tool}: {inputs:#}");
        let by = inputs[format!("vendor {tool} by")]
            .as_str()
            .unwrap_or_default();
        assert!(by.starts_with(tool), "vendor {tool} by: {by}");
        assert!(!by.contains('/') || tool == "go", "no host path in {by}");
    }
    let diff = repo.join("docker/go-third-party/unused-import.diff");
    assert_eq!(
        go["inputs"]["patch unused-import.diff"],
        parkbench::files::digest::file(&diff).unwrap()
    );
    let notes = go["notes"].to_string();
    assert!(
        notes.contains("main.go patched with unused-import.diff"),
        "{notes}"
    );

    // Unchanged inputs: every image is reused, under the same tags.
    let again = tmp.path().join("again.json");
    let out = build(&repo, &only, &again);
    assert!(out.status.success(), "{}", describe(&out));
    let second = read_json(&again);
    for name in FIXTURES {
        let (a, b) = (image(&m, name), image(&second, name));
        assert_eq!(a["tag"], b["tag"], "{name}");
        assert_eq!(b["built"], false, "{name} is reused");
    }
}

#[test]
fn a_run_reports_the_patch_and_its_archive_keeps_the_published_file() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path());
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let study = write_study(
        &results,
        "patched.yaml",
        r#"id: patched
title: a third-party program that needs a patch
source:
  article: test
  environment: test
  cpus: "0"
protocol:
  scales: [1]
  repeats: 1
  order: alternate
  cpus: "0"
  settle_ms: 0
  samples: 5
  interval_ms: 50
  timeout_s: 120
probes:
  - id: hello
    image: go-third-party
    program: /usr/local/bin/hello
    kind: reported
    results: [letters]
"#,
    );
    Invocation::run(&results, &study)
        .repo(&repo)
        .cpus("auto")
        .succeeds();
    let run = only_run(&results, "patched");
    let out = parkbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let deviations = report
        .split("## Deviations from the published setup")
        .nth(1)
        .unwrap_or_default();
    assert!(
        deviations.contains("image go-third-party: main.go patched with unused-import.diff")
            && deviations.contains("which the Go compiler refuses"),
        "{report}"
    );

    let out = parkbench()
        .arg("--repo")
        .arg(&repo)
        .arg("archive")
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let unpacked = archive::unpack(&run.with_extension("tar.gz"), &tmp.path().join("unpacked"));
    let folder = unpacked.join("source/docker/go-third-party");
    let recipe = parkbench::images::recipe::Recipe::load(&folder).unwrap();
    let patch = &recipe.patches[0];
    let published = parkbench::files::digest::file(&folder.join("main.go")).unwrap();
    assert_eq!(
        published, patch.sha256_before,
        "the archive keeps main.go as published"
    );
    assert!(
        folder.join("unused-import.diff").is_file(),
        "beside its patch"
    );
}

#[test]
fn a_published_file_that_changed_fails_its_image_naming_the_recipe_and_both_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path());
    let main = repo.join("docker/go-third-party/main.go");
    let changed = std::fs::read_to_string(&main)
        .unwrap()
        .replace("vendored", "changed");
    std::fs::write(&main, &changed).unwrap();
    let out = build(&repo, "go-third-party", &tmp.path().join("m.json"));
    let err = text(&out.stderr);
    assert!(!err.contains("go-third-party: built in"), "{err}");
    let recipe = repo.join("docker/go-third-party/image.yaml");
    assert!(err.contains(&format!("{}:", recipe.display())), "{err}");
    assert!(
        err.contains("sha256_before") || err.contains("not the"),
        "{err}"
    );
    let found = parkbench::files::digest::bytes(changed.as_bytes());
    let before = "ca99faacf77f650f9116f0ea0969d3283bc7a26b273e6d97b011cf063cff696d";
    assert!(err.contains(&found) && err.contains(before), "{err}");
}

#[test]
fn a_vendoring_failure_names_the_recipe_the_tool_and_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(tmp.path());
    let requirements = repo.join("docker/python-wheels/requirements.txt");
    std::fs::write(&requirements, "six==1.17.0\n").unwrap();
    let out = build(&repo, "python-wheels", &tmp.path().join("m.json"));
    let err = text(&out.stderr);
    let recipe = repo.join("docker/python-wheels/image.yaml");
    assert!(
        err.contains(&format!(
            "python-wheels: build failed: {}:3:9: vendor: the pip dependencies of image \
             python-wheels cannot be vendored",
            recipe.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("--require-hashes") && err.contains("To do:"),
        "{err}"
    );
    assert!(!err.contains("python-wheels: built in"), "{err}");
}
