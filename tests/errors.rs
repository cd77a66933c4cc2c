//! Bad environments get clear errors that name the thing and what to do.

mod common;

use common::*;

#[test]
fn an_unreachable_engine_is_named_with_what_to_do() {
    let out = parkbench()
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .arg("build")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("unix:///nonexistent/docker.sock") && err.contains("DOCKER_HOST"),
        "{err}"
    );
}

#[test]
fn a_missing_mmdebstrap_says_how_to_install_it() {
    let cache = tempfile::tempdir().unwrap();
    let out = parkbench()
        .env("PATH", "/nonexistent")
        .env("PARKBENCH_NAMESPACE", "parkbench-test-no-mmdebstrap")
        .env("PARKBENCH_CACHE", cache.path())
        .arg("build")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(err.contains("apt-get install mmdebstrap"), "{err}");
}

#[test]
fn a_malformed_pin_is_named_with_its_line() {
    let repo = tempfile::tempdir().unwrap();
    let src = common::repo();
    std::fs::create_dir_all(repo.path().join("toolchains")).unwrap();
    std::fs::create_dir_all(repo.path().join("docker")).unwrap();
    for pin in ["rust.yaml", "go.yaml"] {
        std::fs::copy(
            src.join("toolchains").join(pin),
            repo.path().join("toolchains").join(pin),
        )
        .unwrap();
    }
    let base = std::fs::read_to_string(src.join("toolchains/debian-base.yaml")).unwrap();
    let broken = base.replacen("version: bookworm", "version: bookworm\ncolour: blue", 1);
    let line = broken
        .lines()
        .position(|l| l.starts_with("colour"))
        .unwrap()
        + 1;
    std::fs::write(repo.path().join("toolchains/debian-base.yaml"), broken).unwrap();
    let out = parkbench()
        .arg("--repo")
        .arg(repo.path())
        .arg("build")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("debian-base.yaml")
            && err.contains(&format!("line {line}"))
            && err.contains("colour"),
        "{err}"
    );
}
