//! A runtime without a template, as printed: `new probe NAME --debian PACKAGE` writes a pin whose
//! sha256 is a placeholder, `plan` refuses it naming `parkbench pin update` as it runs from where it
//! ran, and `pin update` records a pin's sha256 (here a `deb` pin served by a local apt repository,
//! so that it is quick and depends on no mirror; a root filesystem's lock is made as `pin lock` makes
//! it, tests/it/pin_lock.rs).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::{describe, quoted_command, repo, text};

fn in_repo(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parkbench"))
        .current_dir(dir)
        .args(args)
        .env_remove("PARKBENCH_REPO")
        .env_remove("PARKBENCH_RESULTS")
        .output()
        .unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// The command after `next: ` in a command's output, as printed.
fn next_command(out: &Output) -> Vec<String> {
    let stdout = text(&out.stdout);
    let line = (stdout.lines())
        .find_map(|l| l.strip_prefix("next: "))
        .unwrap_or_else(|| panic!("no next step: {stdout}"));
    let command = line.split("   (").next().unwrap();
    command.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn a_debian_probe_is_refused_by_plan_until_its_pin_is_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for folder in ["docker", "toolchains"] {
        copy_dir(&repo().join(folder), &dir.join(folder));
    }
    std::fs::create_dir_all(dir.join("results")).unwrap();
    let out = in_repo(dir, &["new", "probe", "ex", "--debian", "dash"]);
    assert!(out.status.success(), "{}", describe(&out));
    let next = next_command(&out);
    assert_eq!(next[1..], ["pin", "update", "debian-ex"], "{next:?}");
    assert!(dir.join("toolchains/debian-ex.yaml").is_file());

    let out = in_repo(dir, &["new", "study", "s", "--probe", "ex"]);
    assert!(out.status.success(), "{}", describe(&out));
    let out = in_repo(dir, &["plan", "results/s/study.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let said = text(&out.stderr);
    assert!(said.contains("toolchains/debian-ex.yaml"), "{said}");
    // The command the refusal names is the one `new probe` printed next, as this driver runs from
    // here: pasted, it runs.
    assert_eq!(
        quoted_command(&said, " pin update debian-ex", dir),
        next,
        "{said}"
    );
}

/// A `.deb` of one file, and a local apt repository serving it; returns the sources file and the
/// `.deb`'s sha256.
fn apt_repository(dir: &Path) -> (std::path::PathBuf, String) {
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(tree.join("usr/share/parkbench-tiny")).unwrap();
    std::fs::write(tree.join("usr/share/parkbench-tiny/hello"), "hello\n").unwrap();
    std::fs::write(
        tree.join("DEBIAN/control"),
        "Package: parkbench-tiny\nVersion: 1.0-1\nArchitecture: all\nMaintainer: t <t@t>\n\
         Description: a test package\n",
    )
    .unwrap();
    let pool = dir.join("pool");
    std::fs::create_dir_all(&pool).unwrap();
    let deb = pool.join("parkbench-tiny.deb");
    let ok = |cmd: &mut Command| {
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{cmd:?}: {}", describe(&out));
        out.stdout
    };
    ok(Command::new("dpkg-deb")
        .args(["--root-owner-group", "-b"])
        .arg(&tree)
        .arg(&deb));
    let index = ok(Command::new("dpkg-scanpackages")
        .args(["-m", ".", "/dev/null"])
        .current_dir(&pool));
    std::fs::write(pool.join("Packages"), index).unwrap();
    let release = ok(Command::new("apt-ftparchive")
        .args(["release", "."])
        .current_dir(&pool));
    std::fs::write(pool.join("Release"), release).unwrap();
    let sources = dir.join("sources.list");
    std::fs::write(
        &sources,
        format!("deb [trusted=yes] copy://{} ./\n", pool.display()),
    )
    .unwrap();
    let sha = ok(Command::new("sha256sum").arg(&deb));
    (sources, text(&sha)[..64].to_owned())
}

#[test]
fn pin_update_records_the_sha256_of_what_the_pin_produces() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    std::fs::create_dir_all(dir.join("toolchains")).unwrap();
    let pin = dir.join("toolchains/tiny.yaml");
    std::fs::write(
        &pin,
        "# A comment that stays.\nname: tiny\nversion: 1.0-1\n\
         sha256: 0000000000000000000000000000000000000000000000000000000000000000\n\
         sources:\n  - kind: deb\n    package: parkbench-tiny\n    version: 1.0-1\n",
    )
    .unwrap();
    let (sources, sha) = apt_repository(tmp.path());
    let update = || {
        Command::new(env!("CARGO_BIN_EXE_parkbench"))
            .arg("--repo")
            .arg(&dir)
            .args(["pin", "update", "tiny"])
            .env("PARKBENCH_CACHE", tmp.path().join("cache"))
            .env("PARKBENCH_APT_SOURCES", &sources)
            .output()
            .unwrap()
    };
    let out = update();
    assert!(out.status.success(), "{}", describe(&out));
    let written = std::fs::read_to_string(&pin).unwrap();
    assert!(
        written.starts_with("# A comment that stays.\n")
            && written.contains(&format!("\nsha256: {sha}\n")),
        "{written}"
    );
    let said = text(&out.stdout);
    assert!(
        said.contains(&format!("recorded sha256 {sha}")) && said.contains("was 0000000000"),
        "{}",
        describe(&out)
    );
    let out = update();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("as the pin already recorded"),
        "{}",
        describe(&out)
    );
}
