//! Bad environments get clear errors that name the thing and what to do.

use crate::common;

use std::path::Path;

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
        err.contains(&format!(
            "debian-base.yaml:{line}:1: unknown field `colour`"
        )),
        "{err}"
    );
}

/// `run` of `yaml` (written as `s.yaml` into `results`) with no Engine to reach: refused with exit 1
/// before any build; returns its stderr.
fn refused_before_any_build(results: &Path, yaml: &str) -> String {
    let study = write_study(results, "s.yaml", yaml);
    let out = Invocation::run(results, &study)
        // No Engine is reached: the check comes before the build.
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    text(&out.stderr)
}

#[test]
fn resuming_a_folder_that_is_no_run_names_it_and_what_to_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Invocation::resume(tmp.path(), tmp.path())
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    let folder = tmp.path().canonicalize().unwrap();
    assert!(
        err.contains(&format!(
            "{} is no run folder (it has no run.json)",
            folder.display()
        )) && err.contains("results/<study>/runs/<id>"),
        "{err}"
    );
}

#[test]
fn a_probe_without_an_image_is_named_with_its_file_and_line_before_any_build() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = small_study("no-image", "1000", 1, "0", 0, "").replace("image: go", "image: nope");
    let err = refused_before_any_build(tmp.path(), &yaml);
    assert!(
        err.contains("s.yaml:18:") && err.contains("\"nope\"") && err.contains("image.yaml"),
        "{err}"
    );
}

#[test]
fn a_program_the_image_does_not_hold_is_named_with_the_images_binaries_before_any_build() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = small_study("no-program", "1000", 1, "0", 0, "").replace(
        "    image: go\n",
        "    image: go\n    program: /usr/local/bin/nope\n",
    );
    let err = refused_before_any_build(tmp.path(), &yaml);
    assert!(
        err.contains("/usr/local/bin/nope") && err.contains("/usr/local/bin/probe"),
        "the error names the program and what the image holds: {err}"
    );
    assert!(!tmp.path().join("no-program").exists(), "nothing written");
}

#[test]
fn a_comparison_that_mixes_kinds_is_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = small_study("mixed", "1000", 1, "0", 0, "").replace(
        "  - id: rust-tokio\n    image: rust-tokio\n",
        "  - id: rust-tokio\n    image: rust-tokio\n    kind: peak\n",
    ) + "claims:\n  - {id: c, text: t, stat: ratio, of: rss_median, probe: go, than: rust-tokio, tasks: 1000, expected: {above: 1}, unit: x}\n";
    let err = refused_before_any_build(tmp.path(), &yaml);
    assert!(
        // The file, the claim's line and the column of its `than`.
        err.contains("s.yaml:26:68: claim \"c\": the claim mixes kinds")
            && err.contains("rust-tokio is peak"),
        "{err}"
    );
}

#[test]
fn cpus_the_host_lacks_are_refused_before_any_build_and_a_study_s_own_planned_as_auto() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = small_study("no-such-cpu", "1000", 1, "0", 0, "");
    let study = write_study(tmp.path(), "s.yaml", &yaml);
    for command in ["plan", "run"] {
        let out = Invocation::new(command)
            .cpus("0,4095")
            .results(tmp.path())
            .arg(&study)
            .output();
        assert_eq!(out.status.code(), Some(1), "{command}: {}", describe(&out));
        let err = text(&out.stderr);
        assert!(
            err.contains("--cpus 0,4095: this host has CPUs")
                && err.contains("not CPU 4095")
                && err.contains("--cpus auto"),
            "{command}: {err}"
        );
        // The image table is printed by the build: the refusal comes before it.
        assert!(!text(&out.stdout).contains("IMAGE"), "{}", describe(&out));
    }
    assert!(!tmp.path().join("no-such-cpu").exists(), "nothing written");

    // A study pinning a CPU this host lacks is valid: with no --cpus, plan says what a run here
    // needs and plans it as --cpus auto would run it; run refuses it, naming the flag.
    let study = write_study(
        tmp.path(),
        "lacking.yaml",
        &small_study("lacking-cpu", "1000", 1, "0,4095", 0, ""),
    );
    let out = Invocation::new("plan")
        .results(tmp.path())
        .arg(&study)
        .output();
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    assert!(
        said.contains("this host has CPUs")
            && said.contains("planned as --cpus auto runs it")
            && said.contains("a run here needs --cpus auto or --cpus LIST"),
        "{said}"
    );
    let out = Invocation::new("run")
        .results(tmp.path())
        .arg(&study)
        .output();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("pass --cpus auto"),
        "{}",
        describe(&out)
    );
    assert!(!tmp.path().join("lacking-cpu").exists(), "nothing written");
}

#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let study = write_study(
        tmp.path(),
        "s.yaml",
        &small_study("pipe", "1000", 1, "0", 0, ""),
    );
    let mut child = parkbench()
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .args(["plan", "--cpus", "auto"])
        .arg(&study)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one byte and close the pipe, as `| head -c1` does.
    let mut stdout = child.stdout.take().unwrap();
    let mut one = [0u8; 1];
    stdout.read_exact(&mut one).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
    assert_ne!(out.status.code(), Some(101), "{err}");
}
