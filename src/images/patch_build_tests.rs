//! Declared patches through the build, on a fake Engine: the patch is an input of the tag, its
//! reason reaches the manifest's notes, and a published file that changed stops the image's build
//! with the recipe's line and column.

use super::*;
use crate::engine::fake::FakeEngine;
use crate::files::digest;

const PUBLISHED: &[u8] = include_bytes!("patch/testdata/published.go");
const TWO_HUNKS: &[u8] = include_bytes!("patch/testdata/two-hunks.diff");
const BEFORE: &str = "137911f8fe486e6ec84141817e57dfc99e0f32c6ccd5aa3434f7550aacebf9cf";
const AFTER: &str = "d1eadfcfc56bd8463f3d3a5ffb9be5ff4948b9f50a5905932b238ab898897d37";

/// A repository of one image from `scratch` whose main.go is patched; no pins needed.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("docker/probe");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("Dockerfile"), "FROM scratch\n").unwrap();
    std::fs::write(folder.join("main.go"), PUBLISHED).unwrap();
    std::fs::write(folder.join("fix.diff"), TWO_HUNKS).unwrap();
    let recipe = format!(
        "probe: true\npatches:\n  - patch: fix.diff\n    file: main.go\n    sha256_before: {BEFORE}\n    \
         sha256_after: {AFTER}\n    reason: the published main.go does not compile\n"
    );
    std::fs::write(folder.join(crate::images::context::RECIPE), recipe).unwrap();
    std::fs::create_dir_all(dir.path().join("toolchains")).unwrap();
    dir
}

async fn build(repo: &Path, engine: &FakeEngine) -> Result<Manifest> {
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let pins = Pins::from_pins(&repo.join("toolchains"), []);
    build_all(engine, &cache, &pins, repo, &BuildOptions::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_is_an_input_and_its_reason_a_note() {
    let repo = repo();
    let engine = FakeEngine::default();
    let first = build(repo.path(), &engine).await.unwrap();
    let image = first.get("probe").unwrap();
    assert_eq!(image.inputs["patch fix.diff"], digest::bytes(TWO_HUNKS));
    assert_eq!(image.notes.len(), 1, "{:?}", image.notes);
    assert!(
        image.notes[0].contains("main.go patched with fix.diff"),
        "{:?}",
        image.notes
    );
    assert!(
        image.notes[0].ends_with("does not compile"),
        "{:?}",
        image.notes
    );

    let again = build(repo.path(), &engine).await.unwrap();
    assert_eq!(again.get("probe").unwrap().tag, image.tag);
    assert!(
        !again.get("probe").unwrap().built,
        "unchanged inputs reuse the image"
    );

    // Another patch (its first hunk alone) is another input: another tag.
    let one_hunk: String = String::from_utf8_lossy(TWO_HUNKS)
        .lines()
        .take(10)
        .map(|l| format!("{l}\n"))
        .collect();
    let after = digest::bytes(&patch::apply(PUBLISHED, one_hunk.as_bytes()).unwrap());
    let folder = repo.path().join("docker/probe");
    std::fs::write(folder.join("fix.diff"), &one_hunk).unwrap();
    let recipe = std::fs::read_to_string(folder.join(crate::images::context::RECIPE)).unwrap();
    std::fs::write(
        folder.join(crate::images::context::RECIPE),
        recipe.replace(AFTER, &after),
    )
    .unwrap();
    let changed = build(repo.path(), &engine).await.unwrap();
    let changed = changed.get("probe").unwrap();
    assert_ne!(changed.tag, image.tag);
    assert!(changed.built);
}

/// Adds a probe image `name` with `recipe` and `files` beside the patched one.
fn sibling(repo: &Path, name: &str, recipe: &str, files: &[(&str, &str)]) {
    let folder = repo.join("docker").join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("Dockerfile"), "FROM scratch\n").unwrap();
    std::fs::write(folder.join(crate::images::context::RECIPE), recipe).unwrap();
    for (file, text) in files {
        std::fs::write(folder.join(file), text).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_published_file_fails_its_image_alone_with_the_recipe_location() {
    let repo = repo();
    sibling(repo.path(), "other", "probe: true\n", &[]);
    let main = repo.path().join("docker/probe/main.go");
    let text = String::from_utf8_lossy(PUBLISHED).replace("Tasks: 1000", "Tasks: 2000");
    std::fs::write(&main, &text).unwrap();
    let engine = FakeEngine::default();
    let manifest = build(repo.path(), &engine).await.unwrap();
    assert!(manifest.get("other").is_some(), "the sibling is built");
    assert_eq!(
        engine.built_names(),
        ["other"],
        "the patched image is not built"
    );
    let err = &manifest.failed("probe").unwrap().error;
    let recipe = repo.path().join("docker/probe/image.yaml");
    assert!(
        err.starts_with(&format!("{}:5:", recipe.display())),
        "{err}"
    );
    assert!(
        err.contains(BEFORE) && err.contains(&digest::bytes(text.as_bytes())),
        "{err}"
    );
    assert!(!err.contains('\n'), "one line: {err}");

    // --strict-build stops at it.
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let pins = Pins::from_pins(&repo.path().join("toolchains"), []);
    let strict = BuildOptions {
        strict: true,
        ..BuildOptions::default()
    };
    let err = build_all(&engine, &cache, &pins, repo.path(), &strict).await;
    let err = format!("{:#}", err.unwrap_err());
    assert!(err.contains("image probe") && err.contains(BEFORE), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vendoring_that_fails_fails_its_image_alone() {
    let repo = repo();
    // A lockfile npm cannot read (or no npm on this host): either way the recipe's to fix.
    sibling(
        repo.path(),
        "node",
        "probe: true\nvendor: npm\n",
        &[
            ("package.json", "{}"),
            ("package-lock.json", "not a lockfile"),
        ],
    );
    let engine = FakeEngine::default();
    let manifest = build(repo.path(), &engine).await.unwrap();
    assert!(manifest.get("probe").is_some(), "the sibling is built");
    assert!(!engine.built_names().contains(&"node".to_string()));
    let err = &manifest.failed("node").unwrap().error;
    let recipe = repo.path().join("docker/node/image.yaml");
    assert!(
        err.starts_with(&format!("{}:2:9: ", recipe.display())),
        "{err}"
    );
    assert!(
        err.contains("the npm dependencies of image node cannot be vendored")
            && err.contains("to do: "),
        "{err}"
    );
    assert!(!err.contains('\n'), "one line: {err}");
}

#[test]
fn a_plan_names_the_tools_not_vendored_yet() {
    let repo = repo();
    sibling(
        repo.path(),
        "node",
        "probe: true\nvendor: npm\n",
        &[("package.json", "{}"), ("package-lock.json", "{}")],
    );
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let pins = Pins::from_pins(&repo.path().join("toolchains"), []);
    let graph = graph(repo.path(), &pins).unwrap();
    let planned = tags::planned(&cache, &pins, repo.path(), &graph).unwrap();
    let unvendored = |name: &str| {
        let p = planned.iter().find(|p| p.name == name).unwrap();
        p.unvendored.clone()
    };
    assert_eq!(unvendored("node"), ["npm"]);
    assert!(unvendored("probe").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cargo_vendor_that_fails_fails_its_image_alone() {
    let repo = repo();
    sibling(
        repo.path(),
        "crate",
        "probe: true\nvendor: cargo\n",
        &[("Cargo.toml", "not a manifest ["), ("Cargo.lock", "")],
    );
    let engine = FakeEngine::default();
    let manifest = build(repo.path(), &engine).await.unwrap();
    assert!(manifest.get("probe").is_some(), "the sibling is built");
    let err = &manifest.failed("crate").unwrap().error;
    assert!(
        err.contains("vendor: the cargo dependencies of image crate cannot be vendored"),
        "{err}"
    );
}

/// The repository of [`repo`], its image made from a pin no source can produce here.
async fn build_unavailable(repo: &Path, engine: &FakeEngine) -> Manifest {
    let file = repo
        .join("docker/probe")
        .join(crate::images::context::RECIPE);
    let text = std::fs::read_to_string(&file).unwrap();
    if !text.contains("artifacts:") {
        std::fs::write(&file, format!("artifacts: {{gone.tar: gone}}\n{text}")).unwrap();
        // A probe image that builds, as a build with none at all stops.
        let other = repo.join("docker/other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("Dockerfile"), "FROM scratch\n").unwrap();
        std::fs::write(other.join(crate::images::context::RECIPE), "probe: true\n").unwrap();
    }
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let gone = crate::images::artifact::tests::unreachable_pin("gone");
    let pins = Pins::from_pins(&repo.join("toolchains"), [gone]);
    build_all(engine, &cache, &pins, repo, &BuildOptions::default())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_of_an_image_unavailable_here_is_checked_and_kept_for_the_report() {
    let repo = repo();
    let engine = FakeEngine::default();
    let manifest = build_unavailable(repo.path(), &engine).await;
    assert!(manifest.get("probe").is_none() && manifest.failed.is_empty());
    let image = &manifest.unavailable[0];
    assert_eq!(image.name, "probe");
    assert!(
        image
            .notes
            .iter()
            .any(|n| n.contains("main.go patched with fix.diff")),
        "{:?}",
        image.notes
    );

    // A wrong hash no longer passes: the image fails as a failed build would, at the patch's line.
    let file = repo
        .path()
        .join("docker/probe")
        .join(crate::images::context::RECIPE);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace(BEFORE, &"0".repeat(64))).unwrap();
    let manifest = build_unavailable(repo.path(), &engine).await;
    assert!(
        manifest.unavailable.is_empty(),
        "{:?}",
        manifest.unavailable
    );
    let failed = manifest.failed("probe").expect("the image failed");
    assert!(
        failed.error.contains(&format!("{}:", file.display()))
            && failed.error.contains("not the 0000000000"),
        "{}",
        failed.error
    );
}
