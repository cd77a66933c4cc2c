//! A run under a guest kernel travels with its kernel, against the real Engine: its `--with-images`
//! archive carries the kernel and VM images, a rerun loads them and builds nothing (the same
//! kernel, by sha256, boots again), and a kernel image replaced inside the archive by a stranger's
//! (the archive's sums made to match) is refused with nothing left in the Engine. The Debian
//! kernel is used: it comes from Debian's package, no compile.

use crate::common;

use std::path::{Path, PathBuf};

use common::archive::{Entry, repack, saved_image, unpack};
use common::*;

const KERNEL_IMAGE: &str = "kernel-debian-6.1";

/// One Go process of 1000 tasks.
fn tiny_study() -> String {
    small_study("kernel-travels", "1000", 1, "0-1", 100, "")
        .split("  - id: rust-tokio")
        .next()
        .unwrap()
        .to_string()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn rerun(results: &Path, archive: &Path) -> std::process::Output {
    Invocation::rerun(results, archive).cpus("auto").output()
}

/// The kernel's vmlinuz sha256 a run's `run.json` records.
fn vmlinuz(run: &Path) -> String {
    let state = json(&run.join("run.json"));
    state["guests"][0]["vmlinuz_sha256"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Runs the tiny study under the Debian kernel and archives it with its images.
fn archived_guest_run(results: &Path) -> (PathBuf, PathBuf) {
    let built = parkbench()
        .args(["build", "--only", &format!("{KERNEL_IMAGE},vm")])
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", describe(&built));
    let study = write_study(results, "s.yaml", &tiny_study());
    Invocation::run(results, &study)
        .cpus("auto")
        .args(["--kernel", "debian-6.1"])
        .succeeds();
    let run = only_run(results, "kernel-travels");
    let out = parkbench()
        .args(["archive", "--with-images", "--no-driver"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let id = run.file_name().unwrap().to_string_lossy().into_owned();
    (run.clone(), run.with_file_name(format!("{id}.tar.gz")))
}

#[test]
fn a_rerun_loads_the_archive_s_kernel_and_refuses_a_replaced_one() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let (run, archive) = archived_guest_run(&results);
    let members = unpack(&archive, &tmp.path().join("unpacked"));
    for image in [KERNEL_IMAGE, "vm", "go"] {
        let file = members.join(format!("images/{image}.tar"));
        assert!(file.is_file(), "the archive carries {}", file.display());
    }

    let again = tmp.path().join("again");
    let out = rerun(&again, &archive);
    assert!(out.status.success(), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("loading image {KERNEL_IMAGE} from the archive")),
        "{err}"
    );
    // Nothing built: no build context written, no build started.
    assert!(
        !err.contains("context ready") && !err.contains(": building "),
        "{err}"
    );
    let rerun_dir = std::fs::canonicalize(again.join("kernel-travels/runs/latest")).unwrap();
    assert_eq!(
        json(&rerun_dir.join("run.json"))["rerun_of"]["images"],
        "loaded"
    );
    assert_eq!(vmlinuz(&rerun_dir), vmlinuz(&run), "the same kernel booted");
    let s = &samples(&rerun_dir)[0];
    assert_eq!(s["guest"]["kernel"], "debian-6.1", "{s}");

    // A stranger's kernel image under the archive's own tag, the sums made to match.
    let manifest = json(&members.join("manifest.json"));
    let tag = manifest["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == KERNEL_IMAGE)
        .unwrap()["tag"]
        .as_str()
        .unwrap()
        .to_string();
    let kernel = members.join(format!("images/{KERNEL_IMAGE}.tar"));
    let saved = saved_image(
        &kernel,
        &[&tag],
        &[
            Entry::Dir("boot/"),
            Entry::File {
                path: "boot/vmlinuz",
                data: b"not the archive's kernel",
                mode: 0o644,
            },
            Entry::File {
                path: "boot/config",
                data: b"CONFIG_X=y\n",
                mode: 0o644,
            },
        ],
        None,
    );
    let tampered = repack(&members, &tmp.path().join("tampered.tar.gz"));
    let out = rerun(&tmp.path().join("refused"), &tampered);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains(KERNEL_IMAGE) && err.contains("does not belong to this run"),
        "{err}"
    );
    assert!(!tmp.path().join("refused/kernel-travels/runs").exists());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(parkbench::engine::Engine::connect()).unwrap();
    let left = rt.block_on(engine.repo_tags(&saved.id)).unwrap();
    assert_eq!(left, None, "the stranger's kernel image is removed again");
}
