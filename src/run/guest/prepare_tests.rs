//! Making guest kernels ready on the fake Engine: the files checked against the manifest, the
//! probe image's initramfs written, the kernel booted once; a changed file or an Engine failing the
//! boot stops it.

use std::collections::BTreeMap;

use super::*;
use crate::engine::fake::{FakeEngine, Step};
use crate::images::BuiltImage;

const KERNEL: &str = "debian-6.1";

/// Imports an image tagged `parkbench/<name>:t` into the fake; its entry in a manifest records
/// the sha256 of each of `paths` as the fake reads them.
async fn image(engine: &FakeEngine, name: &str, paths: &[&str]) -> BuiltImage {
    let tar = tempfile::NamedTempFile::new().unwrap();
    tar::Builder::new(tar.reopen().unwrap())
        .into_inner()
        .unwrap();
    let repo = format!("parkbench/{name}");
    engine.import(tar.path(), &repo, "t").await.unwrap();
    let tag = format!("{repo}:t");
    let id = engine.image(&tag).await.unwrap().unwrap().id;
    let binaries = paths
        .iter()
        .map(|p| (p.to_string(), digest::bytes(format!("{id} {p}").as_bytes())))
        .collect();
    BuiltImage {
        name: name.into(),
        tag,
        id,
        layers: vec![],
        inputs: BTreeMap::new(),
        binaries,
        versions: BTreeMap::new(),
        notes: Vec::new(),
        built: true,
    }
}

/// The `vm` image, the kernel's image and the `go` probe image, in the fake and in a manifest.
async fn manifest(engine: &FakeEngine) -> Manifest {
    let kernel = format!("{KERNEL_PREFIX}{KERNEL}");
    let images = vec![
        image(engine, VM_IMAGE, &[INIT_IN_VM]).await,
        image(engine, &kernel, &[KERNEL_FILE, KERNEL_CONFIG]).await,
        image(engine, "go", &[]).await,
    ];
    Manifest {
        images,
        ..Manifest::default()
    }
}

/// The default study's `go` probe under the guest kernel (its other probe's image is not built).
fn study() -> Study {
    Study::default_study()
        .under_kernels(&[KERNEL.into()])
        .unwrap()
}

/// The check boot's console.
fn booted() -> Step {
    let line = r#"parkbench-guest {"kernel_release":"6.1.0-57-amd64","thp":"madvise","cpus":1,"memory_kib":500000}"#;
    Step::Exit {
        code: 0,
        stdout: format!("{line}\r\nparkbench-guest-exit 0\r\n"),
        stderr: String::new(),
    }
}

#[tokio::test]
async fn a_kernel_is_made_ready_from_files_the_manifest_vouches_for() {
    let engine = FakeEngine::new([booted()]);
    let manifest = manifest(&engine).await;
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::open(tmp.path()).unwrap();
    let cancel = CancellationToken::new();
    let guests = prepare(&engine, &cache, &manifest, &study(), &cancel)
        .await
        .unwrap();
    let k = &guests.kernels[KERNEL];
    assert_eq!(
        (k.record.release.as_str(), k.record.thp.as_str()),
        ("6.1.0-57-amd64", "madvise")
    );
    let kvm = Path::new("/dev/kvm").exists();
    assert_eq!(k.record.accel, if kvm { Accel::Kvm } else { Accel::Tcg });
    assert!(k.file.is_file(), "the kernel is on the host");
    // The fake's kernel configuration has no virtio disk: the whole filesystem is the initramfs.
    assert_eq!(k.record.root, Way::Initramfs);
    let root = guests.roots["go"].initramfs.as_ref().unwrap();
    assert_eq!(root.sha256, digest::file(&root.file).unwrap());
    assert_eq!(
        k.record.roots["go"], root.sha256,
        "run.json records the root's sha256"
    );
    assert!(
        guests.roots["go"].disk.is_none(),
        "no kernel boots from the disk"
    );
    assert_eq!(guests.roots.len(), 1, "only built probe images get a root");
    assert_eq!(guests.vm_tag, "parkbench/vm:t");
    let boot = &engine.runs()[0];
    assert_eq!(boot.image, "parkbench/vm:t");
    assert!(engine.live().is_empty(), "the boot's container is removed");
}

#[tokio::test]
async fn a_kernel_file_other_than_the_manifests_is_refused_before_any_boot() {
    let engine = FakeEngine::new([booted()]);
    let mut manifest = manifest(&engine).await;
    let kernel = format!("{KERNEL_PREFIX}{KERNEL}");
    let image = manifest.images.iter_mut().find(|i| i.name == kernel);
    let image = image.unwrap();
    image.binaries.insert(KERNEL_FILE.into(), "0".repeat(64));
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::open(tmp.path()).unwrap();
    let cancel = CancellationToken::new();
    let err = prepare(&engine, &cache, &manifest, &study(), &cancel)
        .await
        .expect_err("a changed kernel is refused");
    let err = format!("{err:#}");
    assert!(
        err.contains(KERNEL_FILE) && err.contains("but the manifest records"),
        "{err}"
    );
    assert!(engine.runs().is_empty(), "nothing booted");
}

#[tokio::test]
async fn an_engine_failing_the_boot_stops_the_preparation() {
    let failed = || Step::EngineError("the Engine went away".into());
    let engine = FakeEngine::new([failed(), failed()]);
    let manifest = manifest(&engine).await;
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::open(tmp.path()).unwrap();
    let cancel = CancellationToken::new();
    let err = prepare(&engine, &cache, &manifest, &study(), &cancel)
        .await
        .expect_err("a boot the Engine fails stops it");
    assert!(
        format!("{err:#}").contains("the Engine went away"),
        "{err:#}"
    );
    assert!(engine.live().is_empty());
}
