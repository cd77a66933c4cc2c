//! `parkbench build` against the real Engine: a build from nothing whose binaries equal those of the
//! default namespace's images, a tampered cached artifact refused, and each probe image run by hand.
//!
//! The build from nothing uses its own image namespace and artifact cache and no layer of the
//! Engine's cache, so it really starts from nothing and leaves the user's images alone.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// Images made from pins that no source here can produce (toolchains/dotnet.yaml and graalvm.yaml:
/// official downloads not reachable from this machine, their conversion not implemented).
const UNAVAILABLE_HERE: &[&str] = &[
    "toolchain-dotnet",
    "toolchain-graalvm",
    "csharp",
    "csharp-aot",
    "graalvm-native",
];

/// The names listed under `unavailable` in a manifest, in order.
fn unavailable(m: &Value) -> Vec<&str> {
    m["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect()
}

/// An image namespace of this test process alone: test runs from other checkouts on the same Engine
/// clean their namespaces, and must not remove the images this one is building on.
fn own_namespace(test: &str) -> String {
    format!("parkbench-test-{test}-{}", std::process::id())
}

fn build_in(
    namespace: &str,
    cache: &Path,
    extra: &[&str],
    manifest: &Path,
) -> std::process::Output {
    parkbench()
        .env("PARKBENCH_NAMESPACE", namespace)
        .env("PARKBENCH_CACHE", cache)
        .arg("build")
        .args(extra)
        .arg("--manifest")
        .arg(manifest)
        .output()
        .unwrap()
}

/// Every image's binaries in manifest `m`: (image, path, sha256), sorted.
fn binaries(m: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for img in m["images"].as_array().unwrap() {
        for (path, hash) in img["binaries"].as_object().unwrap() {
            out.push((
                img["name"].as_str().unwrap().into(),
                path.clone(),
                hash.as_str().unwrap().into(),
            ));
        }
    }
    out.sort();
    out
}

fn clean(namespace: &str, cache: &Path) {
    let out = parkbench()
        .env("PARKBENCH_NAMESPACE", namespace)
        .env("PARKBENCH_CACHE", cache)
        .args(["clean", "--images", "--cache"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
}

/// A build from nothing (an empty namespace, an empty artifact cache, and no layer of the Engine's
/// cache) builds every image asked for, a second build is a no-op, and the binaries are those of
/// the default namespace's images, built apart from these (in CI, from nothing too, by the first
/// test that needed them): identical inputs, bit-identical binaries.
#[test]
fn a_build_from_nothing_then_a_warm_no_op_give_the_default_namespaces_binaries() {
    let ns = &own_namespace("cold");
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = built_manifest();
    clean(ns, cache.path());
    assert_eq!(images_in(ns), Vec::<String>::new(), "nothing to reuse");
    let (first, second) = (dir.path().join("1.json"), dir.path().join("2.json"));

    // Every kind of source once (the Debian rootfs, rustup, the Go and Node.js wheels, vendored
    // crates) and one unavailable toolchain; `just bench-build` times a cold build of everything.
    // `--no-cache`: not one layer of the default namespace's build is reused.
    let only = ["--only", "rust-tokio,go,node,csharp"];
    let out = build_in(ns, cache.path(), &[only[0], only[1], "--no-cache"], &first);
    assert!(
        out.status.success(),
        "build from nothing: {}",
        describe(&out)
    );
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&first).unwrap()).unwrap();
    let images = m["images"].as_array().unwrap();
    let names: Vec<_> = images.iter().map(|i| i["name"].as_str().unwrap()).collect();
    assert_eq!(names[0], "base", "{names:?}");
    for name in [
        "toolchain-rust",
        "toolchain-go",
        "sampler",
        "rust-tokio",
        "go",
        "node",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert!(
        !names.contains(&"rust-tokio-join"),
        "--only builds nothing else: {names:?}"
    );
    for (i, img) in images.iter().enumerate() {
        for (input, tag) in img["inputs"].as_object().unwrap() {
            if input.starts_with("parent ") {
                assert!(
                    images[..i].iter().any(|p| p["tag"] == *tag),
                    "{} comes before its parent {tag}",
                    names[i]
                );
            }
        }
    }
    assert_eq!(
        unavailable(&m),
        ["toolchain-dotnet", "csharp"],
        "the .NET images are unavailable here"
    );
    for img in images {
        let tag = img["tag"].as_str().unwrap();
        assert!(tag.starts_with(&format!("{ns}/")), "{tag}: not built here");
    }
    let base = &images[0];
    assert_eq!(
        base["layers"].as_array().unwrap().len(),
        1,
        "the base is one imported layer"
    );
    for probe in ["rust-tokio", "go"] {
        let img = images.iter().find(|i| i["name"] == *probe).unwrap();
        assert!(
            img["tag"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{ns}/{probe}:"))
        );
        assert_eq!(
            img["binaries"].as_object().unwrap().len(),
            2,
            "sampler and probe hashed"
        );
        assert_eq!(
            img["layers"][0], base["layers"][0],
            "probe images sit on the pinned base layer"
        );
    }

    let out = build_in(ns, cache.path(), &only, &second);
    assert!(out.status.success(), "warm build: {}", describe(&out));
    let m2: Value = serde_json::from_str(&std::fs::read_to_string(&second).unwrap()).unwrap();
    assert!(
        m2["images"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["built"] == false),
        "a warm build is a no-op"
    );

    let built = binaries(&m);
    let names: Vec<&str> = built.iter().map(|(name, ..)| name.as_str()).collect();
    let same_images: Vec<_> = (binaries(&elsewhere).into_iter())
        .filter(|(name, ..)| names.contains(&name.as_str()))
        .collect();
    assert_eq!(
        built, same_images,
        "two builds apart, one without any cache, give bit-identical binaries (packages that \
         moved since their lock: here {}, in the default namespace's build {})",
        m["drift"], elsewhere["drift"]
    );
    assert!(built.len() >= 8);
    clean(ns, cache.path());
}

#[test]
fn a_tampered_cached_artifact_is_refused_and_nothing_is_built() {
    let ns = &own_namespace("tamper");
    let cache = tempfile::tempdir().unwrap();
    let manifest = tempfile::tempdir().unwrap().path().join("m.json");
    // A cached blob under the base rootfs's name whose bytes are not the rootfs (a corrupt download,
    // a disk error, a tampered cache).
    let pin = std::fs::read_to_string(repo().join("toolchains/debian-base.yaml")).unwrap();
    let sha = pin
        .lines()
        .find_map(|l| l.trim().strip_prefix("sha256: "))
        .unwrap()
        .trim()
        .to_string();
    let blob = cache.path().join("blobs/sha256").join(&sha);
    std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
    std::fs::write(&blob, b"these bytes are not the Debian rootfs").unwrap();

    let out = build_in(ns, cache.path(), &[], &manifest);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains(&sha),
        "the message names the expected hash: {err}"
    );
    assert!(!manifest.exists(), "no manifest for a refused build");
    // Another root filesystem imported beside it from its own pin runs to its end and is kept
    // (nothing finished is thrown away); the refused base and every image on it are not made.
    let built = images_in(ns);
    let name = |tag: &str| {
        tag.rsplit('/')
            .next()
            .unwrap()
            .split(':')
            .next()
            .unwrap()
            .to_string()
    };
    assert!(
        built
            .iter()
            .all(|t| name(t) != "base" && !repo().join("docker").join(name(t)).is_dir()),
        "nothing is built from a refused artifact: {built:?}\n{}",
        describe(&out)
    );
    clean(ns, cache.path());
}

#[test]
fn each_probe_image_run_by_hand_completes_every_task() {
    let m = built_manifest();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (probe, args) in [("rust-tokio", vec!["--workers", "1"]), ("go", vec![])] {
        let tag = tag_of(&m, probe);
        let mut cmd = vec![
            "/usr/local/bin/sampler",
            "--cpus",
            "0",
            "--",
            "/usr/local/bin/probe",
            "--tasks",
            "1000",
        ];
        cmd.extend(args);
        let stdout = rt.block_on(run_by_hand(&tag, &cmd));
        let json: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{probe}: {e}: {stdout}"));
        assert_eq!(json["done"]["completed"], 1000, "{probe}: {json}");
        assert_eq!(json["cpus_in_force"], "0", "{probe}: {json}");
        assert_eq!(json["error"], Value::Null, "{probe}: {json}");
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in walk(from) {
        let rel = entry.strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(&entry, &dest).unwrap();
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap();
        if path.is_dir() && name != "target" && name != "vendor" {
            out.extend(walk(&path));
        } else if path.is_file() {
            out.push(path);
        }
    }
    out
}

#[test]
fn an_unavailable_toolchain_skips_its_images_and_the_rest_builds() {
    ensure_built();
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    copy_tree(&common::repo().join("docker"), &r.join("docker"));
    copy_tree(&common::repo().join("toolchains"), &r.join("toolchains"));
    // Converting this download is not implemented: the source fails before producing bytes.
    std::fs::write(
        r.join("toolchains/tool.yaml"),
        format!(
            "name: tool\nversion: '1'\nsha256: {}\nsources:\n  - kind: url\n    \
             url: https://example.invalid/tool.tar.xz\n    format: rust-dist\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
    for (folder, dockerfile, recipe) in [
        (
            "toolchain-tool",
            "ARG BASE\nFROM ${BASE}\nADD tool.tar /opt/\n",
            "parents: {BASE: base}\nartifacts: {tool.tar: tool}\n",
        ),
        (
            "tool-probe",
            "ARG TOOL\nFROM ${TOOL}\n",
            "parents: {TOOL: toolchain-tool}\nprobe: true\n",
        ),
    ] {
        std::fs::create_dir_all(r.join("docker").join(folder)).unwrap();
        std::fs::write(r.join("docker").join(folder).join("Dockerfile"), dockerfile).unwrap();
        std::fs::write(r.join("docker").join(folder).join("image.yaml"), recipe).unwrap();
    }
    let manifest = r.join("manifest.json");
    let out = parkbench()
        .arg("--repo")
        .arg(r)
        .arg("build")
        .arg("--manifest")
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let lost = unavailable(&m);
    let new: Vec<_> = lost
        .iter()
        .filter(|n| !UNAVAILABLE_HERE.contains(n))
        .collect();
    assert_eq!(new, [&"toolchain-tool", &"tool-probe"], "{lost:?}");
    let tool = lost.iter().position(|n| *n == "toolchain-tool").unwrap();
    let reason = m["unavailable"][tool]["reason"].as_str().unwrap();
    assert!(
        reason.contains("toolchains/tool.yaml") && reason.contains("not implemented"),
        "{reason}"
    );
    for built in ["base", "sampler", "rust-tokio", "go"] {
        assert!(
            m["images"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["name"] == built),
            "{built} is built: {m}"
        );
    }
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("UNAVAILABLE") && stdout.contains("tool-probe"),
        "{stdout}"
    );
}

#[test]
fn article_001_probes_sleep_then_exit_quietly() {
    let m = built_manifest();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for probe in [
        "rust-tokio-join",
        "rust-async-std",
        "go-sleep",
        "python-asyncio",
        "node",
        "java-virtual-threads",
    ] {
        let tag = tag_of(&m, probe);
        let cmd = ["/usr/local/bin/probe", "1000", "300"];
        let (code, stdout, took) = rt.block_on(run_with_status(&tag, &cmd));
        assert_eq!(code, 0, "{probe}: exit code");
        assert_eq!(stdout, "", "{probe}: prints nothing on stdout");
        assert!(
            took >= std::time::Duration::from_millis(300),
            "{probe}: finished before its tasks slept 300 ms ({took:?})"
        );
    }
}

#[test]
fn article_001_wrappers_exec_the_runtime() {
    let m = built_manifest();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The sampler measures the process it starts: a wrapper script must become the runtime.
    let script = "/usr/local/bin/probe 1 3000 & p=$!; sleep 1; cat /proc/$p/comm; wait $p";
    for (probe, runtime) in [
        ("python-asyncio", "python3.13"),
        ("node", "node"),
        ("java-virtual-threads", "java"),
    ] {
        let tag = tag_of(&m, probe);
        let (code, stdout, _) = rt.block_on(run_with_status(&tag, &["sh", "-c", script]));
        assert_eq!(code, 0, "{probe}: exit code");
        assert_eq!(stdout.trim(), runtime, "{probe}: the probe's process");
    }
}

/// The manifest of every image in the default namespace, built once per test binary.
fn built_manifest() -> Value {
    ensure_built();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("m.json");
    let out = parkbench()
        .arg("build")
        .arg("--manifest")
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap()
}

/// The tag of the image `name` in a manifest.
fn tag_of(m: &Value, name: &str) -> String {
    m["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in the manifest"))["tag"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn run_by_hand(image: &str, cmd: &[&str]) -> String {
    run_with_status(image, cmd).await.1
}

/// Runs `cmd` in a container of `image` through the kit's engine: exit code, stdout, and how long
/// the container ran.
async fn run_with_status(image: &str, cmd: &[&str]) -> (i64, String, std::time::Duration) {
    use parkbench::engine::{ContainerSpec, Containers, Engine};
    let engine = Engine::connect().await.unwrap();
    let spec = ContainerSpec::command(image, cmd, "test");
    let cancel = tokio_util::sync::CancellationToken::new();
    let out = engine.run(&spec, &cancel).await.unwrap();
    (out.exit_code.unwrap_or(-1), out.stdout, out.elapsed)
}

fn images_in(namespace: &str) -> Vec<String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let engine = parkbench::engine::Engine::connect().await.unwrap();
        engine.image_tags(namespace).await.unwrap()
    })
}
