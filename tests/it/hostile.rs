//! `parkbench rerun` of a stranger's archive against the real Engine. A real small archive (one
//! probe, one tiny scale) is altered in code as an attacker would, its SHA256SUMS made to match: an
//! image file tagged `debian:latest`, one tagged with the kit's own tag for the image, one with two
//! `manifest.json`, one whose layer holds a setuid file and links to `/`, an allow-all seccomp
//! profile, a rerun interrupted while it loads, and members hidden after the end-of-archive marker or
//! behind a PAX size. Each is refused or contained, and no image or tag
//! is left behind; a later build does not reuse what an archive brought, and an image put under a
//! kit tag by other means is rebuilt (the inputs label).

use crate::common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use common::archive::{Entry, Saved, put, repack, saved_image, unpack};
use common::*;
use parkbench::engine::{Engine, Images};
use serde_json::Value;

const STUDY: &str = "hostile";
const PROBE: &str = "/usr/local/bin/probe";
const SAMPLER: &str = "/usr/local/bin/sampler";
const FOREIGN: &[u8] = b"#!/bin/sh\necho a program the kit never built\n";

/// One probe, one tiny scale, one process.
fn one_probe_study() -> String {
    format!(
        r#"id: {STUDY}
title: a stranger's archive
source:
  article: test
  environment: test
  cpus: "0"
protocol:
  scales: [1000]
  repeats: 1
  order: alternate
  cpus: "0"
  settle_ms: 0
  samples: 3
  interval_ms: 50
  timeout_s: 60
probes:
  - id: go
    image: go
    args: ["--tasks", "{{tasks}}"]
    env: {{GOMAXPROCS: "{{workers}}"}}
"#
    )
}

/// The Engine, through the kit's own door, from a test.
struct Docker {
    rt: tokio::runtime::Runtime,
    engine: Engine,
}

impl Docker {
    fn new() -> Docker {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let engine = rt.block_on(Engine::connect()).unwrap();
        Docker { rt, engine }
    }

    fn tags(&self) -> BTreeSet<String> {
        let tags = self.rt.block_on(all_tags(&self.engine));
        tags.into_iter().collect()
    }

    /// The tags naming the image `id`; `None` when the Engine holds no such image at all.
    fn tags_of(&self, id: &str) -> Option<Vec<String>> {
        self.rt.block_on(self.engine.repo_tags(id)).unwrap()
    }

    fn id(&self, tag: &str) -> Option<String> {
        let facts = self.rt.block_on(self.engine.image(tag)).unwrap();
        facts.map(|f| f.id)
    }

    fn labels(&self, tag: &str) -> std::collections::BTreeMap<String, String> {
        let facts = self.rt.block_on(self.engine.image(tag)).unwrap();
        facts.map(|f| f.labels).unwrap_or_default()
    }
}

/// The real archive every hostile one is made from, and what the kit's own go image is.
struct Fixture {
    tmp: tempfile::TempDir,
    plain: PathBuf,
    /// The kit's tag for the go image (the archive's manifest names it), and its image ID.
    go_tag: String,
    go_id: String,
}

impl Fixture {
    fn new(docker: &Docker) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let study = write_study(tmp.path(), "s.yaml", &one_probe_study());
        let first = tmp.path().join("first");
        Invocation::reproduce(&first, &study)
            .cpus("auto")
            .succeeds();
        let run = only_run(&first, STUDY);
        let plain = tmp.path().join("plain.tar.gz");
        std::fs::rename(run.with_extension("tar.gz"), &plain).unwrap();
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap())
                .unwrap();
        let go = manifest["images"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "go")
            .unwrap();
        let go_tag = go["tag"].as_str().unwrap().to_string();
        let go_id = docker.id(&go_tag).expect("the kit's go image");
        Fixture {
            tmp,
            plain,
            go_tag,
            go_id,
        }
    }

    /// The plain archive unpacked as `name`, changed by `edit`, and repacked.
    fn variant(&self, name: &str, edit: impl FnOnce(&Path)) -> PathBuf {
        let root = unpack(&self.plain, &self.tmp.path().join(name));
        edit(&root);
        repack(&root, &self.tmp.path().join(format!("{name}.tar.gz")))
    }

    /// An archive carrying `images/go.tar` as written by `image`; with `matching`, its manifest
    /// names the image's layer and binaries, so that every check of the manifest passes.
    fn carrying(
        &self,
        name: &str,
        image: impl FnOnce(&Path) -> Saved,
        matching: bool,
    ) -> (PathBuf, Saved) {
        let mut saved = None;
        let archive = self.variant(name, |root| {
            let file = root.join("images/go.tar");
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            let s = image(&file);
            put(root, "images/go.tar", &std::fs::read(&file).unwrap());
            if matching {
                let manifest = root.join("manifest.json");
                let mut m: Value =
                    serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
                for i in m["images"].as_array_mut().unwrap() {
                    if i["name"] == "go" {
                        i["layers"] = serde_json::json!([s.layer]);
                        i["binaries"] = serde_json::json!({
                            PROBE: parkbench::files::digest::bytes(FOREIGN),
                            SAMPLER: parkbench::files::digest::bytes(FOREIGN),
                        });
                    }
                }
                std::fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
            }
            saved = Some(s);
        });
        (archive, saved.unwrap())
    }

    fn results(&self) -> PathBuf {
        self.tmp.path().join("results")
    }

    fn rerun(&self, archive: &Path, extra: &[&str]) -> Output {
        Invocation::rerun(self.results(), archive)
            .cpus("auto")
            .args(extra)
            .output()
    }
}

/// The quarantine namespace of `archive`'s images.
fn quarantine(archive: &Path) -> String {
    let sha = parkbench::files::digest::file(archive).unwrap();
    format!("{}-rerun/{}/", parkbench::images::namespace(), &sha[..12])
}

/// A layer holding the foreign program as the probe and the sampler, and `more`.
fn foreign_layer<'a>(more: &[Entry<'a>]) -> Vec<Entry<'a>> {
    let mut entries = vec![
        Entry::Dir("usr/"),
        Entry::Dir("usr/local/"),
        Entry::Dir("usr/local/bin/"),
        Entry::File {
            path: "usr/local/bin/probe",
            data: FOREIGN,
            mode: 0o755,
        },
        Entry::File {
            path: "usr/local/bin/sampler",
            data: FOREIGN,
            mode: 0o755,
        },
    ];
    entries.extend_from_slice(more);
    entries
}

fn refused(out: &Output, words: &[&str]) {
    assert_eq!(out.status.code(), Some(1), "{}", describe(out));
    let err = text(&out.stderr);
    for w in words {
        assert!(err.contains(w), "{w:?} in:\n{err}");
    }
}

/// Nothing of `saved` is left in the Engine, and no tag under `archive`'s quarantine namespace.
fn nothing_left(docker: &Docker, archive: &Path, saved: &Saved) {
    assert_eq!(
        docker.tags_of(&saved.id),
        None,
        "the image {} is gone",
        saved.id
    );
    let ns = quarantine(archive);
    let left: Vec<String> = docker
        .tags()
        .into_iter()
        .filter(|t| t.starts_with(&ns))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_stranger_s_archive_is_refused_or_contained() {
    ensure_built();
    let docker = Docker::new();
    let fx = Fixture::new(&docker);
    let before = docker.tags();

    // An image file tagged debian:latest: refused before anything is loaded.
    let (archive, saved) = fx.carrying(
        "debian",
        |f| saved_image(f, &["debian:latest"], &foreign_layer(&[]), None),
        true,
    );
    refused(
        &fx.rerun(&archive, &[]),
        &["names the tag(s) [debian:latest]", "refused"],
    );
    nothing_left(&docker, &archive, &saved);

    // Two manifest.json, the second naming debian:latest: the file is refused as a whole.
    let go_tag = fx.go_tag.clone();
    let (archive, saved) = fx.carrying(
        "twice",
        |f| saved_image(f, &[&go_tag], &foreign_layer(&[]), Some(&["debian:latest"])),
        true,
    );
    refused(&fx.rerun(&archive, &[]), &["manifest.json is there twice"]);
    nothing_left(&docker, &archive, &saved);

    kit_tag_is_contained(&docker, &fx);
    setuid_and_links_to_root_are_contained(&docker, &fx);
    an_interrupted_load_leaves_nothing(&docker, &fx);
    seccomp_allowing_everything_is_refused_unless_accepted(&fx);

    let after = docker.tags();
    let rerun_prefix = format!("{}-rerun/", parkbench::images::namespace());
    let new: Vec<&String> = after
        .difference(&before)
        .filter(|t| t.starts_with(&rerun_prefix) || t.starts_with("debian:"))
        .collect();
    assert!(new.is_empty(), "left behind: {new:?}");
    assert_eq!(
        before.contains("debian:latest"),
        after.contains("debian:latest")
    );
}

/// An image file under the kit's own tag for the go image, its manifest made to match: it loads,
/// but only under the quarantine tag; the kit's tag keeps naming the kit's image, the foreign image
/// is removed when the rerun fails, and a later build does not reuse it.
fn kit_tag_is_contained(docker: &Docker, fx: &Fixture) {
    let go_tag = fx.go_tag.clone();
    let (archive, saved) = fx.carrying(
        "kit-tag",
        |f| saved_image(f, &[&go_tag], &foreign_layer(&[]), None),
        true,
    );
    let out = fx.rerun(&archive, &[]);
    let err = text(&out.stderr);
    let version = fx.go_tag.rsplit_once(':').unwrap().1;
    let quarantined = format!("{}go:{version}", quarantine(&archive));
    assert!(
        err.contains(&format!(
            "loading image go from the archive as {quarantined}"
        )),
        "{}",
        describe(&out)
    );
    assert!(
        !out.status.success(),
        "the foreign program cannot measure: {}",
        describe(&out)
    );
    nothing_left(docker, &archive, &saved);
    assert_eq!(
        docker.id(&fx.go_tag).as_deref(),
        Some(fx.go_id.as_str()),
        "the kit's tag is untouched"
    );

    let out = parkbench()
        .args(["build", "--only", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        docker.id(&fx.go_tag).as_deref(),
        Some(fx.go_id.as_str()),
        "the build keeps the kit's own image: {}",
        describe(&out)
    );
    assert!(docker.labels(&fx.go_tag).contains_key("parkbench.inputs"));
}

/// A layer with a setuid file and links to `/`: loaded only under the quarantine tag, removed after;
/// kept (under that tag alone) with --keep-images.
fn setuid_and_links_to_root_are_contained(docker: &Docker, fx: &Fixture) {
    let go_tag = fx.go_tag.clone();
    let layer = foreign_layer(&[
        Entry::File {
            path: "usr/local/bin/su",
            data: FOREIGN,
            mode: 0o4755,
        },
        Entry::Symlink {
            path: "escape",
            target: "/",
        },
        Entry::Symlink {
            path: "usr/local/bin/host",
            target: "../../..",
        },
    ]);
    let (archive, saved) =
        fx.carrying("setuid", |f| saved_image(f, &[&go_tag], &layer, None), true);
    let out = fx.rerun(&archive, &[]);
    assert!(
        text(&out.stderr).contains(&format!("as {}go:", quarantine(&archive))),
        "{}",
        describe(&out)
    );
    nothing_left(docker, &archive, &saved);

    let out = fx.rerun(&archive, &["--keep-images"]);
    let tags = docker.tags_of(&saved.id).unwrap_or_default();
    let version = fx.go_tag.rsplit_once(':').unwrap().1;
    assert_eq!(
        tags,
        [format!("{}go:{version}", quarantine(&archive))],
        "{}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("kept the archive's images"),
        "{}",
        describe(&out)
    );
    docker
        .rt
        .block_on(docker.engine.remove_tag(&tags[0]))
        .unwrap();
    nothing_left(docker, &archive, &saved);
}

/// Ctrl-C while an image is checked, copied or loaded: the command stops and leaves nothing.
fn an_interrupted_load_leaves_nothing(docker: &Docker, fx: &Fixture) {
    let go_tag = fx.go_tag.clone();
    let layer = foreign_layer(&[Entry::Zeros {
        path: "usr/local/share/ballast",
        len: 256 << 20,
    }]);
    let (archive, saved) = fx.carrying(
        "interrupted",
        |f| saved_image(f, &[&go_tag], &layer, None),
        true,
    );
    let mut child = Invocation::rerun(fx.results(), &archive)
        .cpus("auto")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.starts_with("loading image go") {
            break;
        }
    }
    assert!(said.contains("loading image go"), "{said}");
    // Into the copy or the load of the 256 MiB layer.
    std::thread::sleep(Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    for line in lines {
        said.push_str(&line.unwrap());
        said.push('\n');
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "{said}");
    // The last line says it stopped, once its containers and loaded images are gone.
    assert!(
        said.trim_end().lines().last().is_some_and(
            |l| l.starts_with("stopped by Ctrl-C: the containers it had started are removed")
        ),
        "{said}"
    );
    nothing_left(docker, &archive, &saved);
}

/// An archive whose study names an allow-all seccomp profile: refused before anything runs; run
/// with --accept-seccomp-from-archive, recorded as a deviation and a validity warning.
fn seccomp_allowing_everything_is_refused_unless_accepted(fx: &Fixture) {
    let archive = fx.variant("seccomp", |root| {
        let study = root.join("study.yaml");
        let yaml = std::fs::read_to_string(&study).unwrap();
        let yaml = yaml.replacen("protocol:\n", "protocol:\n  seccomp: seccomp.json\n", 1);
        std::fs::write(&study, yaml).unwrap();
        put(
            root,
            "seccomp.json",
            br#"{"defaultAction":"SCMP_ACT_ALLOW"}"#,
        );
    });
    let runs = || {
        std::fs::read_dir(fx.results().join(STUDY).join("runs"))
            .map(|d| d.filter(|e| e.as_ref().unwrap().path().is_dir()).count())
            .unwrap_or(0)
    };
    let before = runs();
    refused(
        &fx.rerun(&archive, &[]),
        &[
            "lets containers do more than the Engine's default profile",
            "defaultAction SCMP_ACT_ALLOW",
            "--accept-seccomp-from-archive",
        ],
    );
    assert_eq!(runs(), before, "nothing written");

    let out = fx.rerun(&archive, &["--accept-seccomp-from-archive"]);
    assert!(out.status.success(), "{}", describe(&out));
    let run = std::fs::canonicalize(fx.results().join(STUDY).join("runs/latest")).unwrap();
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let deviations = state["deviations"].to_string();
    assert!(
        deviations.contains("--accept-seccomp-from-archive"),
        "{state}"
    );
    let warned = state["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["touches"] == "all" && w["what"].as_str().unwrap().contains("seccomp.json"));
    assert!(warned, "{state}");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("--accept-seccomp-from-archive"), "{report}");
}

/// Members hidden from a reader that stops where the kit's checked reading stops: a second
/// `manifest.json` after the end-of-archive marker, and a PAX `size` that turns a member's data into
/// a header some readers see. Each image file is refused before the Engine loads anything, and
/// nothing of it, nor a tag it names, is in the Engine afterwards.
#[test]
fn members_hidden_in_an_image_file_never_reach_the_engine() {
    ensure_built();
    let docker = Docker::new();
    let fx = Fixture::new(&docker);
    let before = docker.tags();
    let go_tag = fx.go_tag.clone();
    let hidden = |tags: &[&str]| {
        let mut tar = tar::Builder::new(Vec::new());
        let manifest = serde_json::json!([{"Config": "x.json", "RepoTags": tags, "Layers": []}]);
        let data = manifest.to_string().into_bytes();
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        tar.append_data(&mut h, "manifest.json", data.as_slice())
            .unwrap();
        tar.into_inner().unwrap()
    };

    let (archive, saved) = fx.carrying(
        "after-the-end",
        |f| {
            let saved = saved_image(f, &[&go_tag], &foreign_layer(&[]), None);
            let bytes = [std::fs::read(f).unwrap(), hidden(&["debian:latest"])].concat();
            std::fs::write(f, bytes).unwrap();
            saved
        },
        true,
    );
    refused(
        &fx.rerun(&archive, &[]),
        &[
            "data after the end of the tar archive",
            "refused before loading",
        ],
    );
    nothing_left(&docker, &archive, &saved);

    let (archive, saved) = fx.carrying(
        "pax-size",
        |f| {
            let saved = saved_image(f, &[&go_tag], &foreign_layer(&[]), None);
            let mut front = tar::Builder::new(Vec::new());
            let record = b"10 size=0\n";
            let mut x = tar::Header::new_ustar();
            x.set_entry_type(tar::EntryType::XHeader);
            x.set_mode(0o644);
            x.set_size(record.len() as u64);
            front.append_data(&mut x, "PaxHeader", &record[..]).unwrap();
            let smuggled = hidden(&["debian:latest"]);
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            h.set_size(smuggled.len() as u64 - 1024);
            front
                .append_data(&mut h, "repositories", &smuggled[..smuggled.len() - 1024])
                .unwrap();
            let mut front = front.into_inner().unwrap();
            front.truncate(front.len() - 1024);
            let bytes = [front, std::fs::read(f).unwrap()].concat();
            std::fs::write(f, bytes).unwrap();
            saved
        },
        true,
    );
    refused(
        &fx.rerun(&archive, &[]),
        &["a PAX header sets \"size\"", "refused before loading"],
    );
    nothing_left(&docker, &archive, &saved);

    let after = docker.tags();
    let new: Vec<&String> = after.difference(&before).collect();
    let rerun_prefix = format!("{}-rerun/", parkbench::images::namespace());
    assert!(
        !new.iter()
            .any(|t| t.starts_with(&rerun_prefix) || t.starts_with("debian:")),
        "left behind: {new:?}"
    );
}

/// An image put under a kit tag by other means than a build (a plain load) lacks the inputs label:
/// the next build rebuilds the tag instead of reusing it. In a namespace of this test alone.
#[test]
fn a_kit_tag_without_its_inputs_label_is_rebuilt() {
    let docker = Docker::new();
    let namespace = format!("parkbench-test-hostile-{}", std::process::id());
    let _cleanup = Cleanup(&docker, namespace.clone());
    let tmp = tempfile::tempdir().unwrap();
    let build = |manifest: &Path| {
        let out = parkbench()
            .env("PARKBENCH_NAMESPACE", &namespace)
            .args(["build", "--only", "toolchain-go", "--manifest"])
            .arg(manifest)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        let m: Value = serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
        let image = m["images"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "toolchain-go")
            .unwrap()
            .clone();
        (out, image)
    };
    let (_, first) = build(&tmp.path().join("first.json"));
    let tag = first["tag"].as_str().unwrap().to_string();

    let file = tmp.path().join("foreign.tar");
    let saved = saved_image(&file, &[&tag], &foreign_layer(&[]), None);
    docker.rt.block_on(docker.engine.load_image(&file)).unwrap();
    assert_eq!(docker.id(&tag).as_deref(), Some(saved.id.as_str()));

    let (out, second) = build(&tmp.path().join("second.json"));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "toolchain-go: {tag} is here but its parkbench.inputs label"
        )) && err.contains("rebuilding it"),
        "{err}"
    );
    assert_eq!(second["built"], true);
    assert_eq!(second["tag"].as_str(), Some(tag.as_str()));
    assert_ne!(
        docker.id(&tag),
        Some(saved.id.clone()),
        "the foreign image is not reused"
    );
    assert!(docker.labels(&tag).contains_key("parkbench.inputs"));
    docker
        .rt
        .block_on(docker.engine.remove_tag(&saved.id))
        .unwrap();
}

/// Removes every tag of a test namespace.
struct Cleanup<'a>(&'a Docker, String);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let Cleanup(docker, namespace) = self;
        let tags = docker
            .rt
            .block_on(docker.engine.image_tags(namespace))
            .unwrap_or_default();
        for tag in tags {
            let _ = docker.rt.block_on(docker.engine.remove_tag(&tag));
        }
    }
}
