//! The driver built in the pinned Rust toolchain image is the same file whoever builds it: a copy of
//! the sources in another folder, compiled there from nothing (`parkbench driver --no-cache`), gives
//! the sha256 of the repository's own pinned driver (built once for the tests, or reused). An archive
//! that driver writes is checked (`check` names the driver's sha256), and `verify --rebuild-driver`
//! rebuilds it from the archive's own `source/` and finds the same file; an archive whose driver is
//! not what its sources give fails. The good archive names its driver by its record alone
//! (`--no-driver`, the file left out), the other carries it. Slow (a full compile on the Engine, and
//! two of the driver's own crate): one test, run once.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Instant;

use common::archive::tar;
use common::*;
use parkbench::files::digest;

/// Copies what the driver and its toolchain image are built from into `to`.
fn copy_sources(to: &Path) {
    std::fs::create_dir_all(to.join("results/wait-1m")).unwrap();
    for source in parkbench::images::driver::SOURCES
        .iter()
        .chain(&["docker", "toolchains"])
    {
        let out = Command::new("cp")
            .args(["-a", "--no-preserve=ownership"])
            .arg(repo().join(source))
            .arg(to.join(source))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
    }
}

#[test]
fn the_pinned_driver_is_the_same_file_from_two_folders_and_rebuilds_from_its_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let driver_a = pinned_driver();
    let sha_a = digest::file(&driver_a).unwrap();
    eprintln!("pinned driver of the repository: {sha_a}");

    // The pinned driver archives a run (a reference run, unpacked) and carries itself.
    let runs = tmp.path().join("results/wait-1m/runs");
    std::fs::create_dir_all(&runs).unwrap();
    tar(&[
        "-xzf".as_ref(),
        repo()
            .join("results/wait-1m/reference/run.tar.gz")
            .as_os_str(),
        "-C".as_ref(),
        runs.as_os_str(),
    ]);
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(run.join("SHA256SUMS")).unwrap();
    let archived = |driver: &Path, repo: &Path, args: &[&str]| {
        let out = Command::new(driver)
            .arg("--repo")
            .arg(repo)
            .arg("archive")
            .args(args)
            .arg(&run)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        let to = tmp.path().join(format!(
            "{}.tar.gz",
            digest::bytes(repo.as_os_str().as_encoded_bytes())
        ));
        std::fs::rename(run.with_extension("tar.gz"), &to).unwrap();
        to
    };
    let good = archived(&driver_a, &repo(), &["--no-driver"]);
    let out = parkbench().arg("check").arg(&good).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    assert!(
        said.contains(&format!(
            "driver: not inside; parkbench.json names sha256 {sha_a}"
        )),
        "{said}"
    );
    assert!(
        said.contains("built in the pinned Rust toolchain image"),
        "{said}"
    );
    // The command it names runs as printed: this parkbench is not on PATH.
    assert!(
        !said.contains("`parkbench verify") && said.contains("parkbench verify --rebuild-driver"),
        "{said}"
    );
    // The source bundle holds the vendored crates' checksums of the run's own images only.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    let images: Vec<&str> = (manifest["images"].as_array().unwrap().iter())
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    let listed = Command::new("tar").arg("-tzf").arg(&good).output().unwrap();
    for name in text(&listed.stdout).lines() {
        if let Some(below) = name.split("/source/vendor-checksums/").nth(1)
            && let Some(image) = below.split('/').next().filter(|i| !i.is_empty())
        {
            assert!(
                images.contains(&image),
                "{name}: not an image of the run ({images:?})"
            );
        }
    }

    // The same driver, carried, beside sources that give another one.
    let edited = tmp.path().join("edited");
    copy_sources(&edited);
    let main = edited.join("src/main.rs");
    let code = std::fs::read_to_string(&main).unwrap();
    std::fs::write(
        &main,
        code + "\n#[used]\nstatic EDITED: [u8; 6] = *b\"edited\";\n",
    )
    .unwrap();
    let bad = archived(&driver_a, &edited, &[]);
    let out = parkbench().arg("check").arg(&bad).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    assert!(
        said.contains(&format!("driver: parkbench sha256 {sha_a}")),
        "{said}"
    );

    // Most of a compile of the driver's own crate keeps one CPU busy: two compiles go side by side.
    // The build from nothing beside the rebuild of the edited archive (another tag); the rebuild of
    // the good archive after (it tags what the build from nothing tags).
    let b = tmp.path().join("b/elsewhere/deeper");
    copy_sources(&b);
    let started = Instant::now();
    let from_nothing = spawned(
        parkbench()
            .arg("--repo")
            .arg(&b)
            .args(["driver", "--no-cache", "--out"])
            .arg(b.join("out/parkbench")),
    );
    let out = verified(&bad);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains(&format!(
            "the archive's parkbench has sha256 {sha_a}: not the same file"
        )),
        "{}",
        describe(&out)
    );
    let out = from_nothing.finish();
    assert!(out.status.success(), "{}", describe(&out));
    let sha_b = digest::file(&b.join("out/parkbench")).unwrap();
    assert!(text(&out.stdout).starts_with(&sha_b), "{}", describe(&out));
    eprintln!(
        "pinned driver from nothing in {}: {sha_b} ({:.0} s)",
        b.display(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(sha_a, sha_b, "two folders gave two drivers");

    let out = verified(&good);
    assert!(out.status.success(), "{}", describe(&out));
    // It names the driver it rebuilds, not the command already running.
    assert!(
        text(&out.stdout).contains("rebuilding it from the archive's sources")
            && !text(&out.stdout).contains("--rebuild-driver"),
        "{}",
        describe(&out)
    );
    assert!(
        text(&out.stdout).contains(&format!(
            "rebuilt driver: sha256 {sha_a}: the same file as the driver the archive's \
             parkbench.json names"
        )),
        "{}",
        describe(&out)
    );
}

/// A command running beside the test: killed if the test fails before it is waited for.
struct Beside(Option<Child>);

impl Beside {
    fn finish(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Beside {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `cmd` started, its output kept for [`Beside::finish`].
fn spawned(cmd: &mut Command) -> Beside {
    Beside(Some(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ))
}

/// `parkbench verify --rebuild-driver archive`, timed.
fn verified(archive: &Path) -> Output {
    let started = Instant::now();
    let out = parkbench()
        .args(["verify", "--rebuild-driver"])
        .arg(archive)
        .output()
        .unwrap();
    eprintln!(
        "verify --rebuild-driver {}: {:.0} s",
        archive.display(),
        started.elapsed().as_secs_f64()
    );
    out
}
