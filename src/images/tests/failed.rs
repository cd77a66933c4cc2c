//! A failed image is data: the others build, the failed one and the images below it are recorded
//! with the build's own error line; `--strict-build` stops instead. And a `versions:` command that
//! fails names its recipe line, the image it ran in and what to do.

use std::time::Duration;

use super::{Repo, names};
use crate::engine::fake::{Build, FakeEngine};
use crate::images::BuildOptions;

/// What a C compiler's failed step prints through the Engine's classic builder.
fn compiler_failure() -> Build {
    let lines = [
        "Step 3/4 : RUN cc -O2 -o /probe main.c",
        " ---> Running in 5e1f",
        "main.c: In function 'main':",
        "main.c:3:5: error: 'x' undeclared (first use in this function)",
        "main.c:3:5: note: each undeclared identifier is reported only once",
    ];
    Build::Fails {
        lines: lines.iter().map(|l| l.to_string()).collect(),
        error: "The command '/bin/sh -c cc -O2 -o /probe main.c' returned a non-zero code: 1"
            .into(),
    }
}

const COMPILER_LINE: &str = "main.c:3:5: error: 'x' undeclared (first use in this function)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_probe_image_fails_and_the_others_are_built_and_kept() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    // probe-a, beside the failing probe-b, finishes after it: its build is kept all the same.
    engine.build_takes("probe-a", Duration::from_millis(200));
    engine.script_build("probe-b", compiler_failure());
    let manifest = repo.build(&engine, false).await.unwrap();
    assert_eq!(
        names(&manifest),
        ["base", "toolchain-a", "toolchain-b", "probe-a"]
    );
    assert_eq!(manifest.failed.len(), 1, "{:?}", manifest.failed);
    let failed = manifest.failed("probe-b").unwrap();
    assert_eq!(failed.error, COMPILER_LINE);
    assert_eq!(failed.parent, None);
    assert_eq!(failed.reason(), COMPILER_LINE);
    assert!(
        failed
            .output
            .iter()
            .any(|l| l.contains("note: each undeclared")),
        "the last lines are kept: {failed:?}"
    );
    let table = crate::images::table(&manifest);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("probe-b ")
                && l.ends_with(&format!("build failed: {COMPILER_LINE}"))),
        "{table}"
    );
    let json = serde_json::to_string(&manifest).unwrap();
    let back: crate::images::Manifest = serde_json::from_str(&json).unwrap();
    assert_eq!(back, manifest, "the failure is in manifest.json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_parent_marks_every_image_below_it_with_the_parents_name() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    engine.script_build("toolchain-b", compiler_failure());
    let manifest = repo.build(&engine, false).await.unwrap();
    assert_eq!(names(&manifest), ["base", "toolchain-a", "probe-a"]);
    assert!(
        !engine.built_names().contains(&"probe-b".to_string()),
        "nothing is built on a failed parent"
    );
    let probe = manifest.failed("probe-b").unwrap();
    assert_eq!(probe.parent.as_deref(), Some("toolchain-b"));
    assert_eq!(
        probe.reason(),
        format!("parent image toolchain-b: {COMPILER_LINE}")
    );
    assert!(probe.output.is_empty());
    let failed: Vec<&str> = manifest.failed.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(failed, ["toolchain-b", "probe-b"], "in build order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_probe_image_failed_is_an_error_naming_each_failure() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    engine.script_build("probe-a", compiler_failure());
    engine.script_build("toolchain-b", compiler_failure());
    let err = format!("{:#}", repo.build(&engine, false).await.unwrap_err());
    assert!(err.contains("no probe image can be built here"), "{err}");
    assert!(
        err.contains(&format!("- probe-a: build failed: {COMPILER_LINE}"))
            && err.contains("- probe-b: build failed: parent image toolchain-b: "),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_build_stops_at_the_first_failure() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    engine.script_build("probe-b", compiler_failure());
    let strict = BuildOptions {
        strict: true,
        ..BuildOptions::default()
    };
    let err = format!("{:#}", repo.build_with(&engine, &strict).await.unwrap_err());
    assert!(
        err.contains("image probe-b") && err.contains("returned a non-zero code: 1"),
        "{err}"
    );
    assert!(
        err.contains(COMPILER_LINE),
        "with the build's last lines: {err}"
    );
}

/// probe-a's recipe with its `versions:` entry written as `entry`.
fn with_versions(repo: &Repo, entry: &str) {
    let file = repo
        .dir
        .path()
        .join("docker/probe-a")
        .join(crate::images::context::RECIPE);
    let text = "parents: {BASE: base, TOOL: toolchain-a}\nprobe: true\n\
                binaries: [/usr/local/bin/probe]\nversions:\n";
    std::fs::write(&file, format!("{text}  {entry}\n")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_command_runs_in_the_parent_it_names() {
    let repo = Repo::new(true);
    with_versions(&repo, "tool version: {in: TOOL, run: [tool, version]}");
    let engine = FakeEngine::default();
    engine.lacks_program("probe-a", "tool");
    let manifest = repo.build(&engine, false).await.unwrap();
    let probe = manifest.get("probe-a").unwrap();
    assert_eq!(probe.versions["tool version"], "tool version 1.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_pattern_puts_its_first_group_first_and_says_when_it_finds_nothing() {
    let repo = Repo::new(true);
    with_versions(
        &repo,
        "tool: {in: TOOL, run: [tool, version], pattern: 'version (\\S+)'}",
    );
    let engine = FakeEngine::default();
    let manifest = repo.build(&engine, false).await.unwrap();
    let probe = manifest.get("probe-a").unwrap();
    assert_eq!(probe.versions["tool"], "1.0\ntool version 1.0");

    with_versions(
        &repo,
        "tool: {in: TOOL, run: [tool, version], pattern: 'release (\\S+)'}",
    );
    let manifest = repo.build(&engine, false).await.unwrap();
    assert!(manifest.get("probe-a").is_none());
    let why = &manifest.failed("probe-a").unwrap().error;
    let file = repo
        .dir
        .path()
        .join("docker/probe-a")
        .join(crate::images::context::RECIPE);
    assert!(
        why.contains(&format!("{}:5:", file.display()))
            && why.contains("found no version")
            && why.contains("tool version 1.0"),
        "{why}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_command_missing_in_the_final_image_says_where_to_run_it() {
    let repo = Repo::new(true);
    with_versions(&repo, "tool version: [tool, version]");
    let engine = FakeEngine::default();
    engine.lacks_program("probe-a", "tool");
    let manifest = repo.build(&engine, false).await.unwrap();
    assert!(manifest.get("probe-a").is_none());
    let why = &manifest.failed("probe-a").unwrap().error;
    let file = repo
        .dir
        .path()
        .join("docker/probe-a")
        .join(crate::images::context::RECIPE);
    for part in [
        format!("{}:5:17: ", file.display()),
        "versions: \"tool version\": `tool version` failed in the final image".into(),
        "executable file not found in $PATH".into(),
        "the final image, which has no `tool`".into(),
        "`tool version: {in: TOOL, run: [tool, version]}`".into(),
        "(this recipe's parents: BASE, TOOL)".into(),
    ] {
        assert!(why.contains(&part), "{part:?} in {why}");
    }
    assert!(!why.contains('\n'), "one line: {why}");

    // The same in the wrong parent says which parent it ran in.
    with_versions(&repo, "tool version: {in: BASE, run: [tool, version]}");
    engine.lacks_program("base", "tool");
    let manifest = repo.build(&engine, false).await.unwrap();
    let why = &manifest.failed("probe-a").unwrap().error;
    assert!(
        why.contains("failed in the parent BASE (base)")
            && why.contains("The command runs in the parent BASE"),
        "{why}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_failing_under_a_version_command_stops_the_build() {
    let repo = Repo::new(true);
    with_versions(&repo, "tool version: [tool, version]");
    let engine = FakeEngine::default();
    engine.engine_gone_for("probe-a");
    let err = format!("{:#}", repo.build(&engine, false).await.unwrap_err());
    assert!(
        err.contains("image probe-a") && err.contains("the Engine closed the connection"),
        "the Engine's failure is no recipe's: {err}"
    );
}
