//! A failed image is data, against the real Engine: a repository whose one probe image does not
//! compile (a C file with an error) beside the Go probe. The run finishes, the Go probe is measured,
//! and the report says `not measured: build failed: <the compiler's line>`; `--strict-build` stops
//! instead. The other images are the kit's own, copied unchanged, so their tags are the ones already
//! built and nothing but the failing image is built.

use crate::common;

use std::path::Path;

use common::*;

/// The broken program: `x` is never declared.
const BROKEN_C: &str = "int main(void) {\n    return x;\n}\n";

const BROKEN_DOCKERFILE: &str = "\
ARG BASE
ARG SAMPLER
FROM ${SAMPLER} AS sampler
FROM ${BASE} AS build
COPY broken.c /src/broken.c
RUN mkdir /out && gcc -O2 -o /out/probe /src/broken.c
FROM ${BASE}
COPY --from=sampler /sampler /usr/local/bin/sampler
COPY --from=build /out/probe /usr/local/bin/probe
";

const BROKEN_RECIPE: &str = "\
parents: {BASE: base, SAMPLER: sampler}
probe: true
binaries: [/usr/local/bin/probe, /usr/local/bin/sampler]
";

/// Copies `from` to `to`, leaving out what a build context leaves out at its top.
fn copy_folder(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from).into_iter().filter_entry(|e| {
        !(e.depth() == 1
            && e.file_type().is_dir()
            && matches!(e.file_name().to_str(), Some("target" | "vendor" | ".git")))
    }) {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A repository with the kit's pins, the Go probe and what it is built from, and `c-broken`.
fn repo_with_a_broken_probe(root: &Path) {
    let kit = repo();
    copy_folder(&kit.join("toolchains"), &root.join("toolchains"));
    for image in ["toolchain-rust", "sampler", "toolchain-go", "go"] {
        copy_folder(
            &kit.join("docker").join(image),
            &root.join("docker").join(image),
        );
    }
    let broken = root.join("docker/c-broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("broken.c"), BROKEN_C).unwrap();
    std::fs::write(broken.join("Dockerfile"), BROKEN_DOCKERFILE).unwrap();
    std::fs::write(broken.join("image.yaml"), BROKEN_RECIPE).unwrap();
}

fn study() -> String {
    small_study("failed-build", "1000", 1, "0", 200, "").replace(
        "  - id: rust-tokio\n    image: rust-tokio\n    args: [\"--tasks\", \"{tasks}\", \"--workers\", \"{workers}\"]\n",
        "  - id: broken\n    image: c-broken\n    program: /usr/local/bin/probe\n",
    ) + "claims:\n  - {id: lower, text: t, stat: ratio, of: rss_median, probe: broken, than: go, \
         tasks: 1000, expected: {below: 1}, unit: x}\n"
}

#[test]
fn a_probe_image_that_does_not_compile_is_not_measured_and_the_others_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    repo_with_a_broken_probe(&root);
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let study = write_study(dir.path(), "s.yaml", &study());
    assert!(study.is_file());
    let run = |extra: &[&str]| {
        Invocation::run(&results, &study)
            .repo(&root)
            .cpus("auto")
            .args(extra)
            .output()
    };

    let strict = run(&["--strict-build"]);
    assert_eq!(strict.status.code(), Some(1), "{}", describe(&strict));
    let said = text(&strict.stderr);
    assert!(said.contains("image c-broken"), "{said}");
    assert!(
        !results.join("failed-build").exists(),
        "--strict-build starts no run"
    );

    let out = run(&[]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "a probe went unmeasured: {}",
        describe(&out)
    );
    let line = "broken.c:2:12: error: 'x' undeclared";
    let said = text(&out.stderr);
    assert!(
        said.contains("image(s) failed to build, their probes not measured: c-broken"),
        "{said}"
    );
    assert!(
        said.contains(&format!("c-broken: build failed: /src/{line}")),
        "the build says the compiler's line: {said}"
    );
    let run_dir = only_run(&results, "failed-build");
    let samples = samples(&run_dir);
    let go: Vec<_> = samples.iter().filter(|s| s["probe"] == "go").collect();
    assert_eq!(go.len(), 1, "{samples:?}");
    assert_eq!(
        go[0]["valid"], true,
        "the good probe is measured: {:?}",
        go[0]
    );
    let broken: Vec<_> = samples.iter().filter(|s| s["probe"] == "broken").collect();
    assert_eq!(broken.len(), 1, "{samples:?}");
    let error = broken[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("build failed: /src/") && error.contains(line),
        "{error}"
    );
    let env: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("env.json")).unwrap()).unwrap();
    let failed = &env["images"]["failed"][0];
    assert_eq!(failed["name"], "c-broken", "{}", env["images"]);
    assert!(failed["error"].as_str().unwrap().contains(line));

    let report = parkbench()
        .arg("--repo")
        .arg(&root)
        .arg("report")
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", describe(&report));
    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(
        md.contains(&format!("not measured: build failed: /src/{line}")),
        "{md}"
    );

    // The archive carries it, and what `verify` recomputes from it says it.
    let archived = parkbench()
        .arg("--repo")
        .arg(&root)
        .arg("archive")
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(archived.status.success(), "{}", describe(&archived));
    let verified = parkbench()
        .arg("verify")
        .arg(run_dir.with_extension("tar.gz"))
        .output()
        .unwrap();
    assert!(verified.status.success(), "{}", describe(&verified));
    let said = text(&verified.stdout);
    assert!(
        said.contains("not measured") && said.contains(&format!("(build failed: /src/{line}")),
        "{said}"
    );
}

/// `versions:` of the Go probe, appended to its recipe in the repository at `root`.
fn go_versions(root: &Path, entry: &str) {
    let file = root.join("docker/go/image.yaml");
    let text = std::fs::read_to_string(repo().join("docker/go/image.yaml")).unwrap();
    std::fs::write(&file, format!("{text}versions:\n  {entry}\n")).unwrap();
}

#[test]
fn a_version_command_missing_in_the_final_image_names_its_recipe_line_and_the_parent_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    repo_with_a_broken_probe(&root);
    let lines = std::fs::read_to_string(repo().join("docker/go/image.yaml"))
        .unwrap()
        .lines()
        .count();
    let build = |manifest: &Path| {
        parkbench()
            .arg("--repo")
            .arg(&root)
            .args(["build", "--only", "go", "--manifest"])
            .arg(manifest)
            .output()
            .unwrap()
    };

    go_versions(&root, "go version: [go, version]");
    let manifest = dir.path().join("manifest.json");
    let out = build(&manifest);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let said = text(&out.stderr);
    let at = format!(
        "{}:{}:15: versions: \"go version\": `go version` failed in the final image",
        root.join("docker/go/image.yaml").display(),
        lines + 2
    );
    assert!(said.contains(&at), "{at} in {said}");
    assert!(
        said.contains("executable file not found")
            && said.contains("`go version: {in: GO, run: [go, version]}`"),
        "{said}"
    );
    // Its only probe image failed: the build says so, naming the failure.
    assert!(
        said.contains("no probe image can be built here") && said.contains("- go: build failed: "),
        "{said}"
    );

    go_versions(&root, "go version: {in: GO, run: [go, version]}");
    let out = build(&manifest);
    assert!(out.status.success(), "{}", describe(&out));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let go = m["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "go")
        .unwrap();
    let version = go["versions"]["go version"].as_str().unwrap();
    assert!(version.starts_with("go version go1."), "{version}");
}
