//! A multi-stage build leaves nothing behind, against the real Engine: a repository with the kit's
//! pins and one image whose build stage starts from the imported base (an image without labels,
//! which `clean --images` could not find). After the build, no image its output named is left
//! untagged; of two builds at once, one builds and the other waits for it; a second build is a no-op;
//! `clean --images` waits for a build under way, then leaves nothing of it.
//!
//! The build runs in an image namespace of its own; the base's root filesystem comes from the
//! artifact cache when it is there.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use parkbench::engine::{Engine, Images};
use serde_json::Value;
use tokio::runtime::Runtime;

/// `/usr/bin/sh` is a link (to `dash`) in Debian: the manifest records the file it leads to.
const RECIPE: &str = "\
parents: {BASE: base}
binaries: [/made, /usr/bin/sh]
";

/// The build stage is made unique by `mark`, so that none of its steps comes from the cache of
/// another build.
fn dockerfile(mark: &str) -> String {
    format!(
        "\
ARG BASE
FROM ${{BASE}} AS build
RUN echo {mark} > /made
FROM ${{BASE}}
COPY --from=build /made /made
"
    )
}

/// A repository with the kit's pins and the image `two-stages`.
fn repo_with_two_stages(root: &Path, mark: &str) {
    let pins = root.join("toolchains");
    std::fs::create_dir_all(&pins).unwrap();
    for entry in std::fs::read_dir(repo().join("toolchains")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, pins.join(path.file_name().unwrap())).unwrap();
    }
    let image = root.join("docker/two-stages");
    std::fs::create_dir_all(&image).unwrap();
    std::fs::write(image.join("Dockerfile"), dockerfile(mark)).unwrap();
    std::fs::write(image.join("image.yaml"), RECIPE).unwrap();
}

/// `parkbench build --only two-stages --verbose` in `namespace`, and its manifest.
fn build(root: &Path, namespace: &str, manifest: &Path) -> (String, Value) {
    let out = parkbench()
        .env("PARKBENCH_NAMESPACE", namespace)
        .arg("--repo")
        .arg(root)
        .args(["build", "--only", "two-stages", "--verbose", "--manifest"])
        .arg(manifest)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let m = serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    (text(&out.stderr), m)
}

/// The image IDs the build's output names (` ---> <id>`), by the stage they were named in (0: the
/// first `FROM`).
fn named_images(output: &str) -> BTreeMap<String, usize> {
    let mut stage = 0;
    let mut named = BTreeMap::new();
    for line in output.lines().map(str::trim) {
        if line.starts_with("Step ") && line.contains(" : FROM ") {
            stage += 1;
        } else if let Some(id) = line.strip_prefix("---> ")
            && id.len() == 12
            && id.bytes().all(|b| b.is_ascii_hexdigit())
        {
            named.insert(id.to_string(), stage);
        }
    }
    named
}

/// The tags of the image `id`, `None` when the Engine holds no such image.
fn tags_of(rt: &Runtime, engine: &Engine, id: &str) -> Option<Vec<String>> {
    let tags = rt.block_on(engine.repo_tags(id)).unwrap();
    tags.map(|t| t.into_iter().filter(|t| t != "<none>:<none>").collect())
}

/// The tag of `two-stages` in a manifest, and whether the build made it.
fn built(m: &Value) -> (String, bool) {
    let images = m["images"].as_array().unwrap();
    let image = images.iter().find(|i| i["name"] == "two-stages").unwrap();
    let tag = image["tag"].as_str().unwrap().to_string();
    (tag, image["built"].as_bool().unwrap())
}

/// `parkbench clean --images` in `namespace`.
fn clean(namespace: &str) -> std::process::Output {
    parkbench()
        .env("PARKBENCH_NAMESPACE", namespace)
        .args(["clean", "--images"])
        .output()
        .unwrap()
}

/// `clean` while `held` (the turn of `tag`'s build) is held: it says it waits for that build and
/// does not end; once the turn is dropped it ends (when the builds of other tests have ended too).
fn clean_waiting_for(
    namespace: &str,
    tag: &str,
    held: parkbench::images::Turn,
) -> std::process::Output {
    use std::io::{BufRead, BufReader};
    let mut child = parkbench()
        .env("PARKBENCH_NAMESPACE", namespace)
        .args(["clean", "--images"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(
        first.starts_with("clean: waiting for the image builds under way on this machine to end")
            && first.contains(&format!("a build of {tag} (pid {})", std::process::id())),
        "{first}"
    );
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert!(child.try_wait().unwrap().is_none(), "clean did not wait");
    drop(held);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let mut out = child.wait_with_output().unwrap();
    out.stderr = format!("{first}\n{}\n", rest.join("\n")).into_bytes();
    out
}

/// Cleans the namespace when the test ends, passed or failed.
struct Cleaned<'a>(&'a str);

impl Drop for Cleaned<'_> {
    fn drop(&mut self) {
        clean(self.0);
    }
}

#[test]
fn a_multi_stage_build_leaves_no_untagged_image_and_clean_finds_nothing_left() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mark = format!("stages-{}-{nanos}", std::process::id());
    repo_with_two_stages(&root, &mark);
    let namespace = format!("parkbench-test-stages-{}", std::process::id());
    let _cleaned = Cleaned(&namespace);
    let rt = Runtime::new().unwrap();
    let engine = rt.block_on(Engine::connect()).unwrap();

    // Two builds of it at once: one builds, the other waits for it and reuses its image.
    let [(a, ma), (b, mb)] = std::thread::scope(|s| {
        let at = |n: usize| {
            let (root, namespace, dir) = (&root, &namespace, dir.path());
            s.spawn(move || build(root, namespace, &dir.join(format!("m{n}.json"))))
        };
        let (a, b) = (at(1), at(2));
        [a.join().unwrap(), b.join().unwrap()]
    });
    let ((tag, a_built), (b_tag, b_built)) = (built(&ma), built(&mb));
    assert_eq!(tag, b_tag);
    assert!(
        a_built != b_built,
        "exactly one of two builds at once builds:\n{a}\n---\n{b}"
    );
    let (output, waited, m) = if a_built { (a, b, ma) } else { (b, a, mb) };
    assert!(
        waited.contains("is under way on this machine: waiting for it"),
        "{waited}"
    );
    // A binary named by its link is hashed through it, as the file the link leads to.
    let image = (m["images"].as_array().unwrap().iter())
        .find(|i| i["tag"] == tag.as_str())
        .unwrap();
    let sh = image["binaries"]["/usr/bin/sh"]
        .as_str()
        .unwrap_or_default();
    let dash = rt
        .block_on(engine.read_file(&tag, "/usr/bin/dash"))
        .unwrap();
    assert_eq!(sh, parkbench::files::digest::bytes(&dash), "{image}");
    let named = named_images(&output);
    let last_stage = named.values().copied().max().unwrap_or_default();
    assert_eq!(last_stage, 2, "two stages in the build's output:\n{output}");
    // The build stage's own step (its FROM names the base, as the final stage's does).
    let build_stage: Vec<&String> = named
        .iter()
        .filter(|(_, s)| **s == 1)
        .map(|(i, _)| i)
        .collect();
    assert!(!build_stage.is_empty(), "the build stage's RUN:\n{output}");
    for id in build_stage {
        let tags = tags_of(&rt, &engine, id);
        assert_eq!(
            tags, None,
            "the build stage's image {id} is left:\n{output}"
        );
    }
    // Every other image it named is tagged or one the built image stands on (the final stage's).
    for (id, stage) in &named {
        if tags_of(&rt, &engine, id).is_some_and(|t| t.is_empty()) {
            assert_eq!(*stage, last_stage, "image {id} is left untagged:\n{output}");
        }
    }

    // Keyed by its inputs, a second build reuses the image: the build stage is not needed again.
    let (again, m2) = build(&root, &namespace, &dir.path().join("m2.json"));
    assert_eq!(built(&m2), (tag.clone(), false), "{again}");
    assert!(!again.contains("two-stages: building"), "{again}");

    // A clean waits for a build under way on this machine (here, the turn of one) before it prunes.
    let held = rt
        .block_on(parkbench::images::turn(&tag, "the test"))
        .unwrap();
    let out = clean_waiting_for(&namespace, &tag, held);
    assert!(out.status.success(), "{}", describe(&out));
    let left = rt.block_on(engine.image_tags(&namespace)).unwrap();
    assert!(left.is_empty(), "clean left {left:?}");
    // Nothing the build named is left, but for an image another namespace's tag names.
    for id in named.keys() {
        if let Some(tags) = tags_of(&rt, &engine, id) {
            assert!(
                !tags.is_empty(),
                "image {id} is left untagged after clean:\n{output}"
            );
        }
    }
}
