//! The docs' examples still hold: the study example in `docs/study-files.md` is the embedded default
//! study and parses, the image recipe example in `docs/images.md` parses, the `rerun_of` example in
//! `docs/archives.md` is a rerun record, every `just` recipe the README and the docs name exists, and
//! every `parkbench` subcommand they name answers `--help`. No Engine needed.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use parkbench::study::{DEFAULT_STUDY, Study};

fn read(relative: &str) -> String {
    let path = common::repo().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The README, every page under `docs/` and every study's README, each with its path.
fn every_doc() -> Vec<(PathBuf, String)> {
    let repo = common::repo();
    let mut files = vec![repo.join("README.md")];
    for dir in ["docs", "results"] {
        for entry in std::fs::read_dir(repo.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let readme = path.join("README.md");
            if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            } else if readme.is_file() {
                files.push(readme);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f.strip_prefix(&repo).unwrap().to_owned(), text)
        })
        .collect()
}

/// The fenced block after a `<!-- marker -->` line of `file`.
fn block_after(file: &str, marker: &str) -> String {
    let text = read(file);
    let after = text
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("{file} has no {marker}"));
    let body = after.split("```").nth(1).unwrap();
    body.split_once('\n').unwrap().1.to_string()
}

#[test]
fn the_study_example_is_the_default_study_and_parses() {
    let example = block_after("docs/study-files.md", "<!-- default-study -->");
    let parsed = Study::parse(&example).expect("the study example in docs/study-files.md parses");
    assert_eq!(parsed, Study::parse(DEFAULT_STUDY).unwrap());
    assert_eq!(
        example.trim_end(),
        DEFAULT_STUDY.trim_end(),
        "the example in docs/study-files.md drifted from results/wait-1m/study.yaml"
    );
}

#[test]
fn the_image_recipe_example_parses_with_every_field() {
    use parkbench::images::recipe::Recipe;
    let example = block_after("docs/images.md", "<!-- image-recipe -->");
    let recipe = Recipe::parse("example", &example)
        .expect("the image.yaml example in docs/images.md parses");
    assert!(recipe.vendor.has(parkbench::images::recipe::Tool::Cargo) && recipe.probe);
    assert!(!recipe.parents.is_empty() && !recipe.artifacts.is_empty());
    assert!(!recipe.binaries.is_empty() && !recipe.versions.is_empty());
}

#[test]
fn the_patches_example_is_the_go_fixtures_recipe() {
    use parkbench::images::recipe::Recipe;
    let example = block_after("docs/images.md", "<!-- image-patches -->");
    let recipe = Recipe::parse("example", &example).expect("the patches example parses");
    let fixture = read("tests/fixtures/images/go-third-party/image.yaml");
    let fixture = Recipe::parse("go-third-party", &fixture).unwrap();
    assert_eq!(recipe.patches, fixture.patches);
}

#[test]
fn the_rerun_record_example_parses() {
    let example = block_after("docs/archives.md", "<!-- rerun-of -->");
    let record: serde_json::Value =
        serde_json::from_str(&format!("{{{example}}}")).expect("the rerun_of example is JSON");
    let of: parkbench::run::run_dir::RerunOf =
        serde_json::from_value(record["rerun_of"].clone()).expect("it is a rerun_of record");
    assert_eq!(of.images, parkbench::run::run_dir::Origin::Loaded);
}

#[test]
fn every_just_recipe_named_exists() {
    let justfile = read("Justfile");
    let recipes: BTreeSet<&str> = justfile
        .lines()
        .filter(|l| !l.starts_with([' ', '#', '\t']) && l.contains(':') && !l.contains(":="))
        .filter_map(|l| l.split([' ', ':']).next())
        .collect();
    for (file, text) in every_doc() {
        for named in text
            .split("just ")
            .skip(1)
            .filter_map(|r| r.split([' ', '`', '\n']).next())
        {
            if named.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !named.is_empty() {
                assert!(
                    recipes.contains(named),
                    "{} names `just {named}`, which the Justfile lacks",
                    file.display()
                );
            }
        }
    }
}

/// The subcommands `text` names as `` `parkbench <sub> ``.
fn subcommands_named(text: &str) -> BTreeSet<String> {
    text.split("`parkbench ")
        .skip(1)
        .filter_map(|r| r.split([' ', '`']).next())
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_parkbench_subcommand_named_answers_help() {
    let in_readme = subcommands_named(&read("README.md"));
    assert!(in_readme.len() >= 5, "{in_readme:?}");
    let named: BTreeSet<String> = every_doc()
        .iter()
        .flat_map(|(_, text)| subcommands_named(text))
        .collect();
    for sub in named {
        let out = common::parkbench().args([&sub, "--help"]).output().unwrap();
        assert!(
            out.status.success(),
            "`parkbench {sub} --help` fails: {}",
            common::describe(&out)
        );
    }
}

/// `just reproduce` with a mistake, run by `just` on this driver (the recipe's own compile
/// skipped): its usage line names only what was typed, and a `--cpus` given replaces the recipe's.
#[test]
fn just_reproduce_passes_its_own_flags_so_that_a_mistake_shows_only_what_was_typed() {
    let just = |args: &[&str]| {
        let driver = env!("CARGO_BIN_EXE_parkbench");
        let out = std::process::Command::new("just")
            .current_dir(common::repo())
            .args(["--no-deps", "--set", "host_bin", driver, "reproduce"])
            .args(args)
            .env_remove("PARKBENCH_CPUS")
            .output()
            .expect("running `just` (install it: python3 -m pip install rust-just)");
        (out.status.code(), common::text(&out.stderr))
    };
    let (code, err) = just(&["--no-such-flag"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("'--no-such-flag'") && err.contains("Usage: parkbench reproduce [OPTIONS]"),
        "{err}"
    );
    assert!(
        !err.contains("--pinned-driver") && !err.contains("--cpus"),
        "{err}"
    );
    // Two CPU lists (the recipe's and the one typed) would be refused as given twice.
    let (code, err) = just(&["--cpus", "0", "--no-such-flag"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("'--no-such-flag'") && !err.contains("cannot be used multiple times"),
        "{err}"
    );
}

/// The driver `just` builds with this machine's cargo is found where cargo puts it: under
/// `CARGO_TARGET_DIR` when that is set.
#[test]
fn just_finds_the_host_s_build_under_cargo_target_dir() {
    let host_bin = |target: Option<&str>| {
        let mut just = std::process::Command::new("just");
        just.current_dir(common::repo())
            .args(["--evaluate", "host_bin"])
            .env_remove("CARGO_BUILD_TARGET_DIR");
        match target {
            Some(dir) => just.env("CARGO_TARGET_DIR", dir),
            None => just.env_remove("CARGO_TARGET_DIR"),
        };
        let out = just.output().expect("running `just`");
        assert!(out.status.success(), "{}", common::describe(&out));
        common::text(&out.stdout)
    };
    assert_eq!(
        host_bin(None),
        "target/x86_64-unknown-linux-gnu/driver/parkbench"
    );
    assert_eq!(
        host_bin(Some("/elsewhere/t")),
        "/elsewhere/t/x86_64-unknown-linux-gnu/driver/parkbench"
    );
}
