//! The README's examples still hold: the study example is the embedded default study and parses, the
//! image recipe example parses, every `just` recipe it names exists, and every `parkbench` subcommand it
//! names answers `--help`.

mod common;

use std::collections::BTreeSet;

use parkbench::study::{DEFAULT_STUDY, Study};

fn readme() -> String {
    std::fs::read_to_string(common::repo().join("README.md")).unwrap()
}

/// The fenced block after a `<!-- marker -->` line.
fn block_after(text: &str, marker: &str) -> String {
    let after = text
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("README has no {marker}"));
    let body = after.split("```").nth(1).unwrap();
    body.split_once('\n').unwrap().1.to_string()
}

#[test]
fn the_study_example_is_the_default_study_and_parses() {
    let example = block_after(&readme(), "<!-- default-study -->");
    let parsed = Study::parse(&example).expect("the README's study example parses");
    assert_eq!(parsed, Study::parse(DEFAULT_STUDY).unwrap());
    assert_eq!(
        example.trim_end(),
        DEFAULT_STUDY.trim_end(),
        "README example drifted from results/wait-1m/study.yaml"
    );
}

#[test]
fn the_image_recipe_example_parses_with_every_field() {
    use parkbench::images::recipe::Recipe;
    let example = block_after(&readme(), "<!-- image-recipe -->");
    let recipe =
        Recipe::parse("example", &example).expect("the README's image.yaml example parses");
    assert!(recipe.vendor && recipe.probe);
    assert!(!recipe.parents.is_empty() && !recipe.artifacts.is_empty());
    assert!(!recipe.binaries.is_empty() && !recipe.versions.is_empty());
}

#[test]
fn the_rerun_record_example_parses() {
    let example = block_after(&readme(), "<!-- rerun-of -->");
    let record: serde_json::Value =
        serde_json::from_str(&format!("{{{example}}}")).expect("the rerun_of example is JSON");
    let of: parkbench::run::run_dir::RerunOf =
        serde_json::from_value(record["rerun_of"].clone()).expect("it is a rerun_of record");
    assert_eq!(of.images, parkbench::run::run_dir::Origin::Loaded);
}

#[test]
fn every_just_recipe_named_exists() {
    let justfile = std::fs::read_to_string(common::repo().join("Justfile")).unwrap();
    let recipes: BTreeSet<&str> = justfile
        .lines()
        .filter(|l| !l.starts_with([' ', '#', '\t']) && l.contains(':') && !l.contains(":="))
        .filter_map(|l| l.split([' ', ':']).next())
        .collect();
    let text = readme();
    for named in text
        .split("just ")
        .skip(1)
        .filter_map(|r| r.split([' ', '`', '\n']).next())
    {
        if named.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !named.is_empty() {
            assert!(
                recipes.contains(named),
                "README names `just {named}`, which the Justfile lacks"
            );
        }
    }
}

#[test]
fn every_parkbench_subcommand_named_answers_help() {
    let text = readme();
    let named: BTreeSet<&str> = text
        .split("`parkbench ")
        .skip(1)
        .filter_map(|r| r.split([' ', '`']).next())
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()))
        .collect();
    assert!(named.len() >= 5, "{named:?}");
    for sub in named {
        let out = common::parkbench().args([sub, "--help"]).output().unwrap();
        assert!(
            out.status.success(),
            "`parkbench {sub} --help` fails: {}",
            common::describe(&out)
        );
    }
}
