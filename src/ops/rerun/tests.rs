use std::collections::BTreeMap;
use std::fs;

use super::*;
use crate::engine::Images as _;
use crate::engine::fake::FakeEngine;
use crate::images::{BuiltImage, Manifest, UnavailableImage};
use crate::outputs::archive;
use crate::run::lifecycle::differences;
use crate::run::run_dir::Origin;
use crate::study::DEFAULT_STUDY;

fn image(name: &str, binaries: &[(&str, &str)]) -> BuiltImage {
    BuiltImage {
        name: name.into(),
        tag: format!("parkbench/{name}:0123"),
        id: "sha256:1".into(),
        layers: vec!["sha256:l".into()],
        inputs: BTreeMap::new(),
        binaries: binaries
            .iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect(),
        versions: BTreeMap::new(),
        notes: Vec::new(),
        built: false,
    }
}

fn manifest(images: Vec<BuiltImage>) -> Manifest {
    Manifest {
        images,
        unavailable: vec![],
        failed: vec![],
        drift: Vec::new(),
    }
}

#[test]
fn differences_name_each_binary_with_both_hashes() {
    let archive = manifest(vec![
        image("go", &[("/p", "aa"), ("/s", "bb")]),
        image("rust-tokio", &[("/p", "cc")]),
    ]);
    let names = vec!["go".to_string(), "rust-tokio".to_string()];
    assert!(differences(&archive, &archive, &names).is_empty());

    let here = manifest(vec![image("go", &[("/p", "aa"), ("/s", "xx")])]);
    let found = differences(&archive, &here, &names);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(
        (found[0].image.as_str(), found[0].path.as_str()),
        ("go", "/s")
    );
    assert_eq!(
        (found[0].archive.as_str(), found[0].here.as_deref()),
        ("bb", Some("xx"))
    );
    assert_eq!(found[1].here, None, "an image not built here");
    let refused = format!("{:#}", refuse(Path::new("x.tar.gz"), &found));
    assert!(
        refused.contains("archive sha256 bb, here xx")
            && refused.contains("--accept-different-binaries"),
        "{refused}"
    );
}

#[tokio::test]
async fn loaded_images_are_checked_against_the_manifest() {
    let engine = FakeEngine::new([]);
    let tmp = tempfile::tempdir().unwrap();
    let rootfs = tmp.path().join("rootfs.tar");
    fs::write(&rootfs, b"layer").unwrap();
    engine
        .import(&rootfs, "parkbench/go", "0123")
        .await
        .unwrap();
    let facts = engine.image("parkbench/go:0123").await.unwrap().unwrap();
    let data = engine.read_file("parkbench/go:0123", "/p").await.unwrap();
    let mut good = image("go", &[("/p", &crate::files::digest::bytes(&data))]);
    good.built = true;
    good.layers = facts.layers.clone();
    verify_loaded(&engine, &manifest(vec![good.clone()]))
        .await
        .unwrap();

    let mut tampered = good.clone();
    tampered.binaries.insert("/p".into(), "ff".into());
    let err = format!(
        "{:#}",
        verify_loaded(&engine, &manifest(vec![tampered]))
            .await
            .unwrap_err()
    );
    assert!(
        err.contains("image go /p") && err.contains("manifest says ff"),
        "{err}"
    );

    let mut other_layers = good.clone();
    other_layers.layers = vec!["sha256:other".into()];
    let err = format!(
        "{:#}",
        verify_loaded(&engine, &manifest(vec![other_layers]))
            .await
            .unwrap_err()
    );
    assert!(err.contains("layers differ"), "{err}");

    let mut absent = good;
    absent.tag = "parkbench/go:9999".into();
    let err = format!(
        "{:#}",
        verify_loaded(&engine, &manifest(vec![absent]))
            .await
            .unwrap_err()
    );
    assert!(
        err.contains("did not load the tag parkbench/go:9999"),
        "{err}"
    );
}

/// A run folder of the default study with sources, and the archive written from it.
struct Archived {
    tmp: tempfile::TempDir,
}

impl Archived {
    fn new(study: &str, with_manifest: bool) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("runs/run-1");
        fs::create_dir_all(&run).unwrap();
        fs::write(run.join(run_dir::STUDY), study).unwrap();
        fs::write(run.join(run_dir::SAMPLES), "").unwrap();
        if with_manifest {
            let mut m = manifest(vec![
                image("toolchain-go", &[]),
                image("go", &[("/usr/local/bin/probe", "aa")]),
                image("rust-tokio", &[("/usr/local/bin/probe", "bb")]),
            ]);
            m.unavailable.push(UnavailableImage {
                name: "dotnet".into(),
                reason: "not reachable".into(),
                notes: Vec::new(),
            });
            fs::write(
                run.join(run_dir::MANIFEST),
                serde_json::to_string(&m).unwrap(),
            )
            .unwrap();
        }
        for dir in ["repo/docker/go", "repo/toolchains"] {
            fs::create_dir_all(tmp.path().join(dir)).unwrap();
        }
        fs::write(tmp.path().join("repo/docker/go/main.go"), "package main\n").unwrap();
        fs::write(tmp.path().join("repo/toolchains/go.yaml"), "name: go\n").unwrap();
        for name in ["go", "rust-tokio"] {
            fs::write(tmp.path().join(format!("{name}.tar")), name).unwrap();
        }
        Archived { tmp }
    }

    /// Writes the archive with the exported images named in `images`.
    fn write(&self, images: &[&str]) -> PathBuf {
        let root = self.tmp.path();
        let sources = [
            ("docker".to_string(), root.join("repo/docker")),
            ("toolchains".to_string(), root.join("repo/toolchains")),
        ];
        let extras: Vec<(String, PathBuf)> = images
            .iter()
            .map(|n| (format!("images/{n}.tar"), root.join(format!("{n}.tar"))))
            .collect();
        let out = root.join(format!("run-1-{}.tar.gz", images.len()));
        archive::write_with(&root.join("runs/run-1"), &sources, &extras, &out).unwrap();
        out
    }
}

#[test]
fn an_archive_opens_with_its_sources_and_images() {
    let fx = Archived::new(DEFAULT_STUDY, true);
    let plain = open(&fx.write(&[])).unwrap();
    assert!(!plain.carries_images());
    assert_eq!(plain.images, ["go", "rust-tokio"]);
    assert_eq!(
        fs::read_to_string(plain.repo().join("docker/go/main.go")).unwrap(),
        "package main\n"
    );
    assert_eq!(plain.files.run_id, "run-1");
    assert_eq!(
        plain.sha256,
        crate::files::digest::file(&plain.path).unwrap()
    );

    let full = open(&fx.write(&["go", "rust-tokio"])).unwrap();
    assert!(full.carries_images());
    let go = full.image_file("go").unwrap();
    assert_eq!(fs::read_to_string(go).unwrap(), "go");
    let loaded = full.loaded_manifest();
    assert_eq!(
        loaded.images.len(),
        3,
        "the toolchain image stays for its versions"
    );
    let built: Vec<&str> = loaded
        .images
        .iter()
        .filter(|i| i.built)
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(
        built,
        ["go", "rust-tokio"],
        "only the probe images are loaded"
    );
    assert_eq!(loaded.unavailable.len(), 1, "unavailable images stay named");

    let of = full.rerun_of(Origin::Loaded, vec![]);
    assert_eq!(
        (of.archive.as_str(), of.run_id.as_str()),
        ("run-1-2.tar.gz", "run-1")
    );
    let json = serde_json::to_string(&of).unwrap();
    assert!(json.contains("\"images\":\"loaded\"") && !json.contains("different_binaries"));
}

#[test]
fn bad_archives_are_refused_with_what_to_do() {
    let fx = Archived::new(DEFAULT_STUDY, true);
    let err = |path: &Path| format!("{:#}", open(path).err().expect("refused"));

    let cut = err(&fx.write(&["go"]));
    assert!(
        cut.contains("names the image(s) rust-tokio the run ran")
            && cut.contains("images/rust-tokio.tar"),
        "{cut}"
    );

    let e = err(fx.tmp.path());
    assert!(
        e.contains("no such archive") && e.contains("compare"),
        "{e}"
    );

    let other = fx.tmp.path().join("other.tar.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &[7u8; 4096]).unwrap();
    fs::write(&other, gz.finish().unwrap()).unwrap();
    let e = err(&other);
    assert!(
        e.contains("cannot rerun it") && e.contains("damaged"),
        "{e}"
    );

    let full = fs::read(fx.write(&[])).unwrap();
    let truncated = fx.tmp.path().join("truncated.tar.gz");
    fs::write(&truncated, &full[..full.len() / 2]).unwrap();
    let e = err(&truncated);
    assert!(e.contains("truncated"), "{e}");

    let unknown =
        DEFAULT_STUDY.replacen("    image: go\n", "    image: go\n    kind: telepathy\n", 1);
    assert!(
        unknown.contains("telepathy"),
        "the default study has a go probe"
    );
    let e = err(&Archived::new(&unknown, true).write(&[]));
    assert!(
        e.contains("cannot be run by this version") && e.contains("telepathy"),
        "{e}"
    );

    let e = err(&Archived::new(DEFAULT_STUDY, false).write(&[]));
    assert!(e.contains("manifest.json is missing"), "{e}");
}

#[test]
fn an_exported_image_may_name_only_its_own_tag() {
    let tags = |t: &[&str]| t.iter().map(|t| t.to_string()).collect::<Vec<_>>();
    check_saved_tags("go", "parkbench/go:0123", &tags(&["parkbench/go:0123"])).unwrap();
    let err = format!(
        "{:#}",
        check_saved_tags(
            "go",
            "parkbench/go:0123",
            &tags(&["parkbench/go:0123", "parkbench/base:feed"])
        )
        .unwrap_err()
    );
    assert!(
        err.contains("parkbench/base:feed") && err.contains("refused"),
        "{err}"
    );
    for other in [
        &[][..],
        &["debian:latest"][..],
        &["example.org/parkbench/go:0123"][..],
        &["docker.io/parkbench/go:0124"][..],
        &["docker.io/library/parkbench/go:0123"][..],
    ] {
        assert!(check_saved_tags("go", "parkbench/go:0123", &tags(other)).is_err());
    }
    // As Podman saves it.
    for podman in ["docker.io/parkbench/go:0123", "localhost/parkbench/go:0123"] {
        check_saved_tags("go", "parkbench/go:0123", &tags(&[podman])).unwrap();
    }
}

#[test]
fn an_archive_s_image_is_loaded_under_a_rerun_only_tag() {
    let sha = "0123456789abcdef".repeat(4);
    let tag = quarantine_tag(&sha, "rust-tokio", "parkbench/rust-tokio:feedbeef00112233").unwrap();
    assert_eq!(
        tag,
        format!(
            "{}-rerun/0123456789ab/rust-tokio:feedbeef00112233",
            crate::images::namespace()
        )
    );
    assert!(!tag.starts_with(&format!("{}/", crate::images::namespace())));
    for (name, archive_tag, says) in [
        ("../source/x", "parkbench/x:1", "not a name"),
        ("Go", "parkbench/go:1", "not a name"),
        ("go", "parkbench/go", "not a tag"),
        ("go", "registry:5000/go", "not a tag"),
        ("go", "parkbench/go:../../x", "not a tag"),
    ] {
        let e = format!("{:#}", quarantine_tag(&sha, name, archive_tag).unwrap_err());
        assert!(e.contains(says), "{name} {archive_tag}: {e}");
    }
}

#[test]
fn an_archive_s_seccomp_profile_beyond_the_default_is_refused_unless_accepted() {
    let study = DEFAULT_STUDY.replacen("protocol:\n", "protocol:\n  seccomp: seccomp.json\n", 1);
    let fx = Archived::new(&study, true);
    let run = fx.tmp.path().join("runs/run-1");
    let write = |profile: &str| {
        fs::write(run.join(run_dir::SECCOMP), profile).unwrap();
        open(&fx.write(&[])).unwrap()
    };

    let allow_all = write(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#);
    let e = format!("{:#}", judge(&allow_all, false).unwrap_err());
    assert!(
        e.contains("lets containers do more than the Engine's default profile")
            && e.contains("defaultAction SCMP_ACT_ALLOW")
            && e.contains("--accept-seccomp-from-archive"),
        "{e}"
    );
    let accepted = judge(&allow_all, true).unwrap();
    assert!(accepted.profile.is_some());
    let deviation = accepted.deviation.unwrap();
    assert!(
        deviation.contains("--accept-seccomp-from-archive") && deviation.contains("SCMP_ACT_ALLOW"),
        "{deviation}"
    );
    let warning = accepted.warning.unwrap();
    assert_eq!(warning.touches, crate::run::warning::Touches::All);
    assert!(warning.what.contains("seccomp.json"), "{warning:?}");

    let unshare = write(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["unshare"],"action":"SCMP_ACT_ALLOW"}]}"#,
    );
    assert!(judge(&unshare, false).is_err());

    // What the Engine would read as allow-all, the last of two keys equal but for case winning, is
    // refused even when accepted: the kit could not say what it judges.
    let case_variant =
        write(r#"{"defaultAction":"SCMP_ACT_ERRNO","DefaultAction":"SCMP_ACT_ALLOW"}"#);
    let e = format!("{:#}", judge(&case_variant, true).unwrap_err());
    assert!(e.contains("unknown field `DefaultAction`"), "{e}");

    let tight = write(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","write"],"action":"SCMP_ACT_ALLOW"}]}"#,
    );
    let judged = judge(&tight, false).unwrap();
    assert!(judged.profile.is_some() && judged.deviation.is_none() && judged.warning.is_none());

    let none = open(&Archived::new(DEFAULT_STUDY, true).write(&[])).unwrap();
    assert!(judge(&none, false).unwrap().profile.is_none());
}

/// A run under a guest kernel: the archive's manifest names the VM and kernel images beside the
/// probe images (and the rootfs the VM is built from, which does not travel).
fn under_a_guest_kernel() -> Archived {
    let study = DEFAULT_STUDY.replacen("protocol:\n", "protocol:\n  kernels: [debian-6.1]\n", 1);
    assert!(study.contains("kernels: [debian-6.1]"));
    let fx = Archived::new(&study, true);
    let path = fx.tmp.path().join("runs/run-1").join(run_dir::MANIFEST);
    let mut m: Manifest = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    m.images.extend([
        image("debian-vm", &[]),
        image("vm", &[("/usr/local/lib/parkbench/guest-init", "ee")]),
        image(
            "kernel-debian-6.1",
            &[("/boot/vmlinuz", "cc"), ("/boot/config", "dd")],
        ),
    ]);
    fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
    for name in ["vm", "kernel-debian-6.1"] {
        fs::write(fx.tmp.path().join(format!("{name}.tar")), name).unwrap();
    }
    fx
}

#[test]
fn a_run_under_a_guest_kernel_travels_with_its_kernel_and_vm_images() {
    let fx = under_a_guest_kernel();
    let plain = open(&fx.write(&[])).unwrap();
    assert_eq!(
        plain.images,
        ["go", "kernel-debian-6.1", "rust-tokio", "vm"]
    );

    // Cut down after it was written: refused before anything is loaded, naming the kernel.
    let e = format!(
        "{:#}",
        open(&fx.write(&["go", "rust-tokio", "vm"]))
            .err()
            .expect("refused")
    );
    assert!(
        e.contains("kernel-debian-6.1") && e.contains("images/kernel-debian-6.1.tar"),
        "{e}"
    );

    let full = open(&fx.write(&["go", "kernel-debian-6.1", "rust-tokio", "vm"])).unwrap();
    assert!(full.carries_images());
    assert_eq!(
        fs::read_to_string(full.image_file("kernel-debian-6.1").unwrap()).unwrap(),
        "kernel-debian-6.1"
    );
    // Loaded, not rebuilt: the kernel and the VM are marked loaded here; the rootfs the VM was
    // built from stays listed for its record only.
    let loaded = full.loaded_manifest();
    let built: Vec<&str> = (loaded.images.iter())
        .filter(|i| i.built)
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(built, ["go", "rust-tokio", "vm", "kernel-debian-6.1"]);
}

#[tokio::test]
async fn a_kernel_that_is_not_the_archive_s_is_refused_after_loading() {
    let engine = FakeEngine::new([]);
    let tmp = tempfile::tempdir().unwrap();
    let rootfs = tmp.path().join("rootfs.tar");
    fs::write(&rootfs, b"layer").unwrap();
    let tag = "parkbench/kernel-debian-6.1:0123";
    engine
        .import(&rootfs, "parkbench/kernel-debian-6.1", "0123")
        .await
        .unwrap();
    let facts = engine.image(tag).await.unwrap().unwrap();
    let sha = |path: &str| {
        let engine = &engine;
        let path = path.to_string();
        async move { crate::files::digest::bytes(&engine.read_file(tag, &path).await.unwrap()) }
    };
    let (vmlinuz, config) = (sha("/boot/vmlinuz").await, sha("/boot/config").await);
    let mut kernel = image(
        "kernel-debian-6.1",
        &[("/boot/vmlinuz", &vmlinuz), ("/boot/config", &config)],
    );
    kernel.built = true;
    kernel.layers = facts.layers.clone();
    verify_loaded(&engine, &manifest(vec![kernel.clone()]))
        .await
        .unwrap();

    // The archive's manifest names another kernel than the one its image holds.
    let mut other = kernel.clone();
    other
        .binaries
        .insert("/boot/vmlinuz".into(), "ab".repeat(32));
    let err = format!(
        "{:#}",
        verify_loaded(&engine, &manifest(vec![other]))
            .await
            .unwrap_err()
    );
    assert!(
        err.contains("image kernel-debian-6.1 /boot/vmlinuz")
            && err.contains(&format!("sha256 {vmlinuz} after loading"))
            && err.contains("does not belong to this run"),
        "{err}"
    );
}
