//! The driver built in the pinned Rust toolchain image is the same file whoever builds it: two copies
//! of the sources in different folders, each compiled from nothing (`parkbench driver --no-cache`),
//! give the same sha256. An archive that driver writes is checked (`check` names the driver's sha256),
//! and `verify --rebuild-driver` rebuilds it from the archive's own `source/` and finds the same file;
//! an archive whose driver is not what its sources give fails. Slow (two full compiles on the Engine):
//! one test, run once.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
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

/// `parkbench driver` from `repo`, compiled from nothing; returns the file and its build's seconds.
fn pinned_driver(repo: &Path) -> (PathBuf, f64) {
    let out_file = repo.join("out/parkbench");
    let started = Instant::now();
    let out = parkbench()
        .arg("--repo")
        .arg(repo)
        .args(["driver", "--no-cache", "--out"])
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let sha = digest::file(&out_file).unwrap();
    assert!(text(&out.stdout).starts_with(&sha), "{}", describe(&out));
    (out_file, started.elapsed().as_secs_f64())
}

#[test]
fn the_pinned_driver_is_the_same_file_from_two_folders_and_rebuilds_from_its_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b/elsewhere/deeper"));
    copy_sources(&a);
    copy_sources(&b);
    let (driver_a, secs_a) = pinned_driver(&a);
    let (driver_b, secs_b) = pinned_driver(&b);
    let (sha_a, sha_b) = (
        digest::file(&driver_a).unwrap(),
        digest::file(&driver_b).unwrap(),
    );
    eprintln!(
        "pinned driver from {}: {sha_a} ({secs_a:.0} s)",
        a.display()
    );
    eprintln!(
        "pinned driver from {}: {sha_b} ({secs_b:.0} s)",
        b.display()
    );
    assert_eq!(sha_a, sha_b, "two folders gave two drivers");

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
    let archived = |driver: &Path, repo: &Path| {
        let out = Command::new(driver)
            .arg("--repo")
            .arg(repo)
            .arg("archive")
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
    let good = archived(&driver_a, &a);
    let out = parkbench().arg("check").arg(&good).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    assert!(
        said.contains(&format!("driver: parkbench sha256 {sha_a}")),
        "{said}"
    );
    assert!(
        said.contains("built in the pinned Rust toolchain image"),
        "{said}"
    );

    let started = Instant::now();
    let out = parkbench()
        .args(["verify", "--rebuild-driver"])
        .arg(&good)
        .output()
        .unwrap();
    eprintln!(
        "verify --rebuild-driver: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains(&format!("rebuilt driver: sha256 {sha_a}: the same file")),
        "{}",
        describe(&out)
    );

    // The same driver beside sources that give another one.
    let edited = tmp.path().join("edited");
    copy_sources(&edited);
    let main = edited.join("src/main.rs");
    let code = std::fs::read_to_string(&main).unwrap();
    std::fs::write(
        &main,
        code + "\n#[used]\nstatic EDITED: [u8; 6] = *b\"edited\";\n",
    )
    .unwrap();
    let bad = archived(&driver_a, &edited);
    let out = parkbench()
        .args(["verify", "--rebuild-driver"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains(&format!(
            "the archive's parkbench has sha256 {sha_a}: not the same file"
        )),
        "{}",
        describe(&out)
    );
}
