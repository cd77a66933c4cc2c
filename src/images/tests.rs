//! The build on a fake Engine: reuse, `--no-cache`, failing builds, images built side by side,
//! unavailable pins and corrupt artifacts. The recipes, pins and artifact cache are real (in
//! temporary folders); only the Engine is scripted.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::engine::fake::{Build, FakeEngine};
use crate::files::digest;
use crate::images::pin::{Mirror, Mmdebstrap, Pin, Source};

/// The bytes of the base image's root filesystem and of the toolchain artifact.
const ROOTFS: &[u8] = b"a root filesystem tar";
const TOOL: &[u8] = b"a toolchain tar";

/// Two toolchains on the base, one from a pinned artifact, and a probe on each.
const RECIPES: [(&str, &str); 4] = [
    (
        "toolchain-a",
        "parents: {BASE: base}\nartifacts: {tool.tar: tool}\n",
    ),
    ("toolchain-b", "parents: {BASE: base}\n"),
    (
        "probe-a",
        "parents: {BASE: base, TOOL: toolchain-a}\nprobe: true\n\
         binaries: [/usr/local/bin/probe]\nversions: {tool: [tool, --version]}\n",
    ),
    ("probe-b", "parents: {TOOL: toolchain-b}\nprobe: true\n"),
];

/// A repository (recipes and pins) and an artifact cache holding the base's root filesystem.
struct Repo {
    dir: tempfile::TempDir,
    _cache_dir: tempfile::TempDir,
    cache: Cache,
    pins: Pins,
}

fn pin(name: &str, bytes: &[u8], source: Source) -> Pin {
    Pin {
        name: name.into(),
        version: "1".into(),
        sha256: digest::bytes(bytes),
        sources: vec![source],
        notes: vec![],
        lock: None,
    }
}

/// A pin whose only source is an official download out of reach: unavailable unless cached.
fn tool_pin() -> Pin {
    let source = Source::Url(crate::images::pin::Url {
        url: "file:///nonexistent/parkbench/tool.tar.gz".into(),
        sha256: None,
        format: crate::images::pin::UrlFormat::GoTarball,
    });
    pin("tool", TOOL, source)
}

impl Repo {
    /// The kit of [`RECIPES`]; the tool artifact is cached when `tool_cached`.
    fn new(tool_cached: bool) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        for (name, recipe) in RECIPES {
            let folder = dir.path().join("docker").join(name);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join("Dockerfile"), format!("# {name}\n")).unwrap();
            std::fs::write(folder.join(crate::images::context::RECIPE), recipe).unwrap();
        }
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(cache_dir.path()).unwrap();
        let base = pin(
            "debian-base",
            ROOTFS,
            Source::Mmdebstrap(Mmdebstrap {
                suite: "bookworm".into(),
                variant: "minbase".into(),
                packages: vec![],
                source_date_epoch: 1,
                mirror: Mirror::Host,
                remove: vec![],
            }),
        );
        cache.put(&base.sha256, "rootfs", ROOTFS).unwrap();
        if tool_cached {
            cache.put(&digest::bytes(TOOL), "tool", TOOL).unwrap();
        }
        let pins = Pins::from_pins(&dir.path().join("toolchains"), [base, tool_pin()]);
        Repo {
            dir,
            _cache_dir: cache_dir,
            cache,
            pins,
        }
    }

    async fn build(&self, engine: &FakeEngine, no_cache: bool) -> Result<Manifest> {
        let options = BuildOptions {
            no_cache,
            ..BuildOptions::default()
        };
        self.build_with(engine, &options).await
    }

    async fn build_with(&self, engine: &FakeEngine, options: &BuildOptions) -> Result<Manifest> {
        build_all(engine, &self.cache, &self.pins, self.dir.path(), options).await
    }
}

mod failed;

fn names(manifest: &Manifest) -> Vec<&str> {
    manifest.images.iter().map(|i| i.name.as_str()).collect()
}

fn error(result: Result<Manifest>) -> String {
    format!("{:#}", result.expect_err("the build must fail"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_tag_is_reused_and_no_cache_rebuilds() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    let first = repo.build(&engine, false).await.unwrap();
    let all = ["base", "toolchain-a", "toolchain-b", "probe-a", "probe-b"];
    assert_eq!(names(&first), all);
    assert!(first.images.iter().all(|i| i.built), "{first:?}");
    assert_eq!(engine.imports(), [first.images[0].tag.clone()]);
    assert_eq!(engine.built_names(), all[1..]);
    let probe = first.get("probe-a").unwrap();
    assert_eq!(probe.inputs["parent TOOL"], first.images[1].tag);
    assert_eq!(probe.binaries.len(), 1);
    assert_eq!(probe.versions["tool"], "tool --version 1.0");

    let second = repo.build(&engine, false).await.unwrap();
    assert_eq!((engine.imports().len(), engine.builds().len()), (1, 4));
    assert!(second.images.iter().all(|i| !i.built), "{second:?}");
    let tags = |m: &Manifest| m.images.iter().map(|i| i.tag.clone()).collect::<Vec<_>>();
    assert_eq!(tags(&second), tags(&first));
    assert_eq!(second.get("probe-a").unwrap().binaries, probe.binaries);

    let third = repo.build(&engine, true).await.unwrap();
    let builds = engine.builds();
    assert_eq!(builds.len(), 8, "--no-cache builds every recipe again");
    assert!(builds[4..].iter().all(|b| b.no_cache) && !builds[0].no_cache);
    assert_eq!(
        engine.imports().len(),
        1,
        "the base layer is the rootfs: no new import"
    );
    assert_eq!(tags(&third), tags(&first));
    assert!(third.images[1..].iter().all(|i| i.built));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builds_beside_another_take_a_low_cpu_weight_and_give_the_same_images() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    let own = repo.build(&engine, false).await.unwrap();
    assert_eq!(engine.builds().len(), 4);
    assert!(engine.builds().iter().all(|b| b.cpu_shares.is_none()));

    let beside = FakeEngine::default();
    let options = BuildOptions {
        beside: true,
        ..BuildOptions::default()
    };
    let built = repo.build_with(&beside, &options).await.unwrap();
    assert_eq!(beside.builds().len(), 4);
    assert!(
        (beside.builds().iter()).all(|b| b.cpu_shares == Some(manifest::BESIDE_CPU_SHARES)),
        "{:?}",
        beside.builds()
    );
    // The weight is no input of an image: the same tags either way.
    let tags = |m: &Manifest| m.images.iter().map(|i| i.tag.clone()).collect::<Vec<_>>();
    assert_eq!(tags(&built), tags(&own));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_build_under_strict_build_names_the_image_and_its_last_lines() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    // toolchain-a, built beside the failing one, is slower: it still finishes, and stays.
    engine.build_takes("toolchain-a", Duration::from_millis(200));
    let lines = (1..=40).map(|i| format!("step line {i}")).collect();
    let error_text = "The command '/bin/sh -c make' returned a non-zero code: 2";
    engine.script_build(
        "toolchain-b",
        Build::Fails {
            lines,
            error: error_text.into(),
        },
    );
    let strict = BuildOptions {
        strict: true,
        ..BuildOptions::default()
    };
    let err = error(repo.build_with(&engine, &strict).await);
    assert!(err.contains("image toolchain-b"), "{err}");
    assert!(err.contains(error_text), "{err}");
    assert!(
        err.contains("step line 11\n") && err.contains("step line 40"),
        "{err}"
    );
    assert!(
        !err.contains("step line 10\n"),
        "only the last 30 lines: {err}"
    );
    let built = engine.built_names();
    assert!(
        !built.iter().any(|n| n.starts_with("probe-")),
        "no later image starts: {built:?}"
    );
    assert!(
        engine
            .build_events()
            .contains(&"finished toolchain-a".to_string()),
        "the build beside the failed one runs to its end"
    );
    let kept = repo.build(&engine, false).await.unwrap();
    assert!(
        !kept.get("toolchain-a").unwrap().built,
        "and is reused, not built again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_missing_after_its_build_is_an_error() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    engine.script_build("probe-a", Build::LeavesNoImage);
    let err = error(repo.build(&engine, false).await);
    assert!(err.contains("image probe-a"), "{err}");
    assert!(
        err.contains(&format!("{}/probe-a:", namespace()))
            && err.contains("missing after its build"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_images_build_side_by_side_and_keep_their_order() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    // The first of each pair finishes last: the manifest must not follow the finishing order.
    engine.build_takes("toolchain-a", Duration::from_millis(300));
    engine.build_takes("probe-a", Duration::from_millis(300));
    let manifest = repo.build(&engine, false).await.unwrap();
    assert_eq!(
        engine.build_events(),
        [
            "started toolchain-a",
            "started toolchain-b",
            "finished toolchain-b",
            "finished toolchain-a",
            "started probe-a",
            "started probe-b",
            "finished probe-b",
            "finished probe-a",
        ]
    );
    assert_eq!(
        names(&manifest),
        ["base", "toolchain-a", "toolchain-b", "probe-a", "probe-b"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_pin_leaves_out_its_images_and_the_rest_builds() {
    let repo = Repo::new(false);
    let engine = FakeEngine::default();
    let manifest = repo.build(&engine, false).await.unwrap();
    assert_eq!(names(&manifest), ["base", "toolchain-b", "probe-b"]);
    assert_eq!(engine.built_names(), ["toolchain-b", "probe-b"]);
    let lost: Vec<&str> = manifest
        .unavailable
        .iter()
        .map(|u| u.name.as_str())
        .collect();
    assert_eq!(lost, ["toolchain-a", "probe-a"]);
    let why = &manifest.unavailable[0].reason;
    assert!(
        why.contains("pin tool (toolchains/tool.yaml)") && why.contains("/nonexistent/parkbench"),
        "{why}"
    );
    assert_eq!(
        manifest.unavailable("probe-a"),
        Some("its parent image toolchain-a is unavailable")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_cached_artifact_stops_everything_with_both_hashes() {
    let repo = Repo::new(false);
    let corrupt = b"not the toolchain tar";
    let expected = digest::bytes(TOOL);
    std::fs::write(repo.cache.blob_path(&expected), corrupt).unwrap();
    let engine = FakeEngine::default();
    let err = error(repo.build(&engine, false).await);
    assert!(err.contains("image toolchain-a"), "{err}");
    assert!(
        err.contains(&expected) && err.contains(&digest::bytes(corrupt)),
        "both hashes: {err}"
    );
    let built = engine.built_names();
    assert!(
        !built
            .iter()
            .any(|n| n == "toolchain-a" || n.starts_with("probe-")),
        "nothing is built from it, and no later image at all: {built:?}"
    );
    assert!(
        Path::new(&repo.cache.blob_path(&expected)).exists(),
        "reported, not deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_file_is_an_input_of_the_tags_of_the_images_that_lay_it_in() {
    let repo = Repo::new(true);
    let docker = repo.dir.path().join("docker");
    std::fs::create_dir_all(docker.join("probe-lib")).unwrap();
    std::fs::write(docker.join("probe-lib/lib.rs"), "pub fn one() {}\n").unwrap();
    let recipe = docker.join("probe-b").join(crate::images::context::RECIPE);
    let text = std::fs::read_to_string(&recipe).unwrap();
    std::fs::write(&recipe, text + "shared: {src/lib.rs: probe-lib/lib.rs}\n").unwrap();
    let engine = FakeEngine::default();
    let first = repo.build(&engine, false).await.unwrap();
    let probe = first.get("probe-b").unwrap();
    assert_eq!(
        probe.inputs["shared probe-lib/lib.rs"],
        digest::bytes(b"pub fn one() {}\n")
    );

    std::fs::write(docker.join("probe-lib/lib.rs"), "pub fn two() {}\n").unwrap();
    let second = repo.build(&engine, false).await.unwrap();
    let rebuilt: Vec<&str> = second
        .images
        .iter()
        .filter(|i| i.built)
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(rebuilt, ["probe-b"], "only the image that lays it in");
    assert_ne!(second.get("probe-b").unwrap().tag, probe.tag);
    assert_eq!(
        second.get("probe-a").unwrap().tag,
        first.get("probe-a").unwrap().tag
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_without_the_inputs_label_is_rebuilt_not_reused() {
    let repo = Repo::new(true);
    let engine = FakeEngine::default();
    // The first build of probe-a leaves an image without labels under its tag, as a load or a tag
    // set by hand would.
    let foreign = crate::engine::ImageFacts {
        id: "sha256:foreign".into(),
        layers: vec!["sha256:foreign".into()],
        labels: Default::default(),
        env: Vec::new(),
    };
    engine.script_build("probe-a", Build::Image(foreign));
    let first = repo.build(&engine, false).await.unwrap();
    assert_eq!(first.get("probe-a").unwrap().id, "sha256:foreign");

    let second = repo.build(&engine, false).await.unwrap();
    let probe = second.get("probe-a").unwrap();
    assert!(probe.built, "rebuilt: {probe:?}");
    assert_ne!(probe.id, "sha256:foreign");
    assert_eq!(engine.built_names().last().unwrap(), "probe-a");
    let reused: Vec<&str> = second
        .images
        .iter()
        .filter(|i| !i.built)
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(reused, ["base", "toolchain-a", "toolchain-b", "probe-b"]);
}
