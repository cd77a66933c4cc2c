//! An author's path against the real Engine, on a copy of the repository: every command of
//! `docs/authoring.md` in order, then a probe scaffolded in every language (every kind at least
//! once), one study of them all, `plan`, and a run at a tiny scale in which every probe is measured.
//! So a scaffold, and the page that teaches it, cannot rot.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::*;

/// The scaffolds run here: every language, each with a kind, every kind at least once (the
/// page's own probe is Go, steady).
const SCAFFOLDS: [(&str, &str); 7] = [
    ("rust", "latency"),
    ("go", "peak"),
    ("c", "timed"),
    ("python", "steady"),
    ("node", "reported"),
    ("java", "peak"),
    ("binary", "timed"),
];

/// A copy of what a run needs of the repository (the image folders as they are, so their tags and
/// the images already built are the same), with an empty `results/`.
fn repo_copy(to: &Path) {
    let from = repo();
    for entry in [
        "docker",
        "toolchains",
        "src",
        "Cargo.toml",
        "Cargo.lock",
        "Justfile",
        "README.md",
    ] {
        copy(&from.join(entry), &to.join(entry));
    }
    std::fs::create_dir_all(to.join("results")).unwrap();
}

fn copy(from: &Path, to: &Path) {
    if from.is_file() {
        std::fs::copy(from, to).unwrap();
        return;
    }
    let walk = walkdir::WalkDir::new(from)
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.file_name() == "target"));
    for entry in walk {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if entry.file_type().is_symlink() {
            let target = std::fs::read_link(entry.path()).unwrap();
            std::os::unix::fs::symlink(target, &dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// The ```sh blocks of a page, in order.
fn sh_blocks(text: &str) -> Vec<String> {
    text.split("```sh\n")
        .skip(1)
        .map(|rest| rest.split("\n```").next().unwrap().to_string())
        .collect()
}

/// A shell in `dir` whose `parkbench` is the binary under test.
fn shell(dir: &Path, script: &str) -> std::process::Output {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_parkbench"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("PARKBENCH_REPO")
        .env_remove("PARKBENCH_RESULTS")
        .output()
        .unwrap()
}

fn in_repo(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_parkbench"));
    cmd.current_dir(dir)
        .env_remove("PARKBENCH_REPO")
        .env_remove("PARKBENCH_RESULTS");
    cmd
}

#[test]
fn the_authoring_page_and_every_scaffold_run_as_written() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    repo_copy(dir);

    let page = std::fs::read_to_string(repo().join("docs/authoring.md")).unwrap();
    let blocks = sh_blocks(&page);
    assert!(
        blocks.len() >= 5,
        "docs/authoring.md has {} sh blocks",
        blocks.len()
    );
    for block in &blocks {
        let out = shell(dir, block);
        assert!(
            out.status.success(),
            "docs/authoring.md's block\n{block}\nfailed: {}",
            describe(&out)
        );
    }
    let run = only_run(&dir.join("results"), "hello-study");
    let verdicts = std::fs::read_to_string(run.join("verdicts.json")).unwrap();
    assert!(verdicts.contains("small-goroutines"), "{verdicts}");
    assert!(samples(&run).iter().all(|s| s["valid"] == true));
    eprintln!(
        "the page's commands: {:.0} s",
        started.elapsed().as_secs_f64()
    );

    let mut study = vec!["new".to_string(), "study".into(), "scaffolds".into()];
    for (lang, kind) in SCAFFOLDS {
        let name = format!("s-{lang}");
        let out = in_repo(dir)
            .args(["new", "probe", &name, "--lang", lang, "--kind", kind])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        study.extend(["--probe".to_string(), name]);
    }
    let out = in_repo(dir).args(&study).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let file = dir.join("results/scaffolds/study.yaml");
    let out = in_repo(dir)
        .args(["plan", "--cpus", "auto"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    for (lang, _) in SCAFFOLDS {
        assert!(said.contains(&format!("s-{lang}")), "{said}");
    }
    Invocation::new("run")
        .current_dir(dir)
        .env_remove("PARKBENCH_REPO")
        .env_remove("PARKBENCH_RESULTS")
        .cpus("auto")
        .args(["--repeats", "1"])
        .arg(&file)
        .succeeds();
    let samples = samples(&only_run(&dir.join("results"), "scaffolds"));
    for (lang, kind) in SCAFFOLDS {
        let probe = format!("s-{lang}");
        let mine: Vec<_> = samples.iter().filter(|s| s["probe"] == probe).collect();
        assert!(!mine.is_empty(), "{probe}: no sample");
        for s in mine {
            assert_eq!(s["valid"], true, "{probe} ({kind}) was not measured: {s}");
            assert_eq!(s["kind"].as_str().unwrap_or("steady"), kind, "{s}");
        }
    }
    eprintln!(
        "the page and {} scaffolds: {:.0} s",
        SCAFFOLDS.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_broken_study_is_refused_by_plan_at_its_line_without_an_engine() {
    let tmp = tempfile::tempdir().unwrap();
    repo_copy(tmp.path());
    let out = in_repo(tmp.path())
        .args(["new", "study", "broken"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let file = tmp.path().join("results/broken/study.yaml");
    let yaml = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, yaml.replace("kind: steady", "kind: stedy")).unwrap();
    let out = in_repo(tmp.path())
        .args(["plan"])
        .arg(&file)
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("study.yaml:") && err.contains("stedy"),
        "{err}"
    );
    std::fs::write(&file, &yaml).unwrap();
    let out = in_repo(tmp.path())
        .args(["plan", "--cpus", "auto"])
        .arg(&file)
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let said = common::text(&out.stdout);
    assert!(said.contains("the Engine is unreachable"), "{said}");
    // The scaffold's placeholder texts are warned about, each at its line and column.
    let err = text(&out.stderr);
    for (field, key) in [
        ("title", "title: "),
        ("source.article", "  article: "),
        ("source.environment", "  environment: "),
    ] {
        let line = yaml.lines().position(|l| l.starts_with(key)).unwrap() + 1;
        let at = format!(
            "study.yaml:{line}:{}: {field} still holds the placeholder",
            key.len() + 1
        );
        assert!(err.contains(&at), "{at}: {err}");
    }
}

/// `new study` run from outside the repository, on another results folder: the commands it prints
/// next (`plan`, then `reproduce`) run as printed, from where it was run, and find both.
#[test]
fn a_study_made_from_another_folder_runs_its_next_steps_as_printed() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let (repo, elsewhere) = (tmp.path().join("repo copy"), tmp.path().join("elsewhere"));
    repo_copy(&repo);
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out = in_repo(&elsewhere)
        .args([
            "--repo",
            "../repo copy",
            "--results",
            "../the runs",
            "new",
            "study",
            "away",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    let next = (said.lines())
        .find_map(|l| l.strip_prefix("next: "))
        .unwrap_or_else(|| panic!("no next step: {said}"));
    let (plan, reproduce) = next.split_once("   (").unwrap();
    let reproduce = reproduce.split_once(", then ").unwrap().1;
    assert!(
        plan.contains(
            "--repo '../repo copy' --results '../the runs' plan '../the runs/away/study.yaml'"
        ),
        "{plan}"
    );
    for command in [plan, reproduce] {
        let out = shell(&elsewhere, command);
        assert!(out.status.success(), "{command}: {}", describe(&out));
    }
    only_run(&tmp.path().join("the runs"), "away");
    assert!(
        !elsewhere.join("results").exists(),
        "a results folder where it ran"
    );
}

/// A study naming a probe image that is not there is refused, naming the command that makes one;
/// that command, run as printed from another folder, makes it in the repository named, and the
/// study is then written.
#[test]
fn a_study_of_a_probe_not_made_yet_names_the_command_that_makes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, elsewhere) = (tmp.path().join("repo"), tmp.path().join("elsewhere"));
    repo_copy(&repo);
    std::fs::create_dir_all(&elsewhere).unwrap();
    let study = [
        "--repo", "../repo", "new", "study", "mine", "--probe", "my-probe",
    ];
    let out = in_repo(&elsewhere).args(study).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(err.contains("no probe image `my-probe`"), "{err}");
    let command = (err.split('`').find(|part| part.contains(" new probe ")))
        .unwrap_or_else(|| panic!("no command named: {err}"));
    assert!(
        command.ends_with("--repo ../repo new probe my-probe --lang go"),
        "{err}"
    );
    assert!(!repo.join("results/mine").exists());
    let bad = [
        "--repo", "../repo", "new", "study", "mine", "--probe", "My Probe",
    ];
    let out = in_repo(&elsewhere).args(bad).output().unwrap();
    assert!(
        text(&out.stderr).contains("is no probe name"),
        "{}",
        describe(&out)
    );
    let out = shell(&elsewhere, command);
    assert!(out.status.success(), "{command}: {}", describe(&out));
    assert!(repo.join("docker/my-probe").is_dir());
    let out = in_repo(&elsewhere).args(study).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    // A study named by its id, not its file, is refused naming the file to give.
    let out = in_repo(&repo).args(["plan", "mine"]).output().unwrap();
    let err = text(&out.stderr);
    assert!(
        err.contains("there is no study file mine") && err.contains("results/<id>/study.yaml"),
        "{err}"
    );
    // Its folder is refused naming the file in it; the folder given to `check` is named to `verify`
    // as one shell word.
    std::fs::create_dir_all(repo.join("results/mine")).unwrap();
    let out = in_repo(&repo)
        .args(["plan", "results/mine"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(
        err.contains("results/mine is a folder") && err.contains("results/mine/study.yaml"),
        "{err}"
    );
    std::fs::create_dir_all(repo.join("a folder")).unwrap();
    let out = in_repo(&repo).args(["check", "a folder"]).output().unwrap();
    let err = text(&out.stderr);
    assert!(err.contains("verify 'a folder'`"), "{err}");
}
