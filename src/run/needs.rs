//! What a study needs before it runs: a probe image for every probe and a recorded version for
//! every published toolchain (checked before anything is built), the images to build, and at
//! least one probe's image built.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Result, bail};

use crate::images::Manifest;
use crate::images::recipe::{self, Recipe};
use crate::run::{env, guest};
use crate::study::{self, Study};
use crate::yaml::{Doc, Invalid};

/// Every probe names a probe image (a `docker/` folder whose image.yaml says `probe: true`) and a
/// program among that image's `binaries`; checked before anything is built. The error names the
/// study file (`None`: the default study) and the probe's line.
pub fn check_probe_images(repo: &Path, study: &Study, file: Option<&Path>) -> Result<()> {
    let recipes = recipe::discover(&repo.join("docker"))?;
    let (name, text) = match file {
        Some(f) => (
            f.display().to_string(),
            std::fs::read_to_string(f).unwrap_or_default(),
        ),
        None => ("the default study".into(), study::DEFAULT_STUDY.to_string()),
    };
    check_probes_against(&recipes, study, &name, &text)?;
    check_toolchains_against(
        &repo.join("docker"),
        &recipes,
        study,
        &Doc::new(&name, &text),
    )
}

/// Every key of the study's `source.toolchains` names a version the run records (see
/// [`recordable`]): a key that names none would leave the report saying "version not recorded".
/// An error leads with `file:line:column` of the key and names the labels there are.
fn check_toolchains_against(
    docker: &Path,
    recipes: &[Recipe],
    study: &Study,
    doc: &Doc,
) -> Result<()> {
    if study.source.toolchains.is_empty() {
        return Ok(());
    }
    let labels = recordable(docker, recipes, &images(study));
    for key in study.source.toolchains.keys() {
        let at = format!("source.toolchains.{key}");
        match env::label_for(key, &labels) {
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(two) => return Err(doc.error(&Invalid::new(at, two))),
        }
        let message = format!(
            "source.toolchains: {key:?} names no version this study's images record; a key is the \
             first word of a recorded label, and the labels are: {}. Rename the key (e.g. `go` for \
             `go version`), or add a `versions:` entry to the image.yaml of the image that holds \
             the tool (docs/images.md)",
            if labels.is_empty() {
                "none".to_string()
            } else {
                labels.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        );
        return Err(doc.error(&Invalid::new(at, message)));
    }
    Ok(())
}

/// The version labels a run of the images `wanted` records: the `versions:` of their recipes and
/// of every image they are built from, and the async runtimes their Cargo.locks pin.
pub fn recordable(docker: &Path, recipes: &[Recipe], wanted: &[String]) -> BTreeSet<String> {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut todo: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let mut labels = BTreeSet::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name) {
            continue;
        }
        let Some(recipe) = recipes.iter().find(|r| r.name == name) else {
            continue;
        };
        labels.extend(recipe.versions.keys().cloned());
        labels.extend(env::locked_runtimes(docker, name).into_keys());
        todo.extend(recipe.parents.values().map(String::as_str));
    }
    labels
}

/// [`check_probe_images`] on recipes already read; `name` and `text` are the study file's. An error
/// leads with `name:line:column` of the probe's `image` or `program`.
fn check_probes_against(recipes: &[Recipe], study: &Study, name: &str, text: &str) -> Result<()> {
    let doc = Doc::new(name, text);
    // A probe laid out per kernel is `id@kernel`; the file lists it once, as `id`.
    let at = |id: &str, field: &str| {
        let listed: Option<serde_yaml::Value> = serde_yaml::from_str(text).ok();
        let base = id.split('@').next().unwrap_or(id);
        let index = listed
            .as_ref()
            .and_then(|v| v.get("probes")?.as_sequence())
            .and_then(|ps| {
                ps.iter()
                    .position(|p| p.get("id").and_then(|i| i.as_str()) == Some(base))
            });
        index.map_or_else(|| "probes".to_string(), |i| format!("probes[{i}].{field}"))
    };
    let probes: Vec<&str> = recipes
        .iter()
        .filter(|r| r.probe)
        .map(|r| r.name.as_str())
        .collect();
    for probe in &study.probes {
        let Some(recipe) = recipes.iter().find(|r| r.probe && r.name == probe.image) else {
            let message = format!(
                "probe {:?} names image {:?}, which is no probe image; add docker/{}/ with a \
                 Dockerfile and an image.yaml saying `probe: true`, or name one of: {}",
                probe.id,
                probe.image,
                probe.image,
                probes.join(", ")
            );
            return Err(doc.error(&Invalid::new(at(&probe.id, "image"), message)));
        };
        if !recipe.binaries.contains(&probe.program) {
            let message = format!(
                "probe {:?} runs program {:?}, which is not among the binaries of image {:?} ({}); \
                 name one of them, or add it to `binaries` in docker/{}/image.yaml",
                probe.id,
                probe.program,
                probe.image,
                recipe.binaries.join(", "),
                probe.image
            );
            return Err(doc.error(&Invalid::new(at(&probe.id, "program"), message)));
        }
    }
    Ok(())
}

/// The images a study's run builds: its probe images, and the VM and kernel images of its guest
/// kernels, sorted, once each.
pub fn images(study: &Study) -> Vec<String> {
    // A probe with no cell to run (left out of a partial run or a shard) needs no image.
    let mut only: Vec<String> = (study.probes.iter())
        .filter(|p| !study.scales_of(p).is_empty())
        .map(|p| p.image.clone())
        .collect();
    let kernels: Vec<String> = study.kernels().into_iter().map(String::from).collect();
    only.extend(guest::images_for(&kernels));
    only.sort();
    only.dedup();
    only
}

/// At least one probe's image was built (the others are unavailable or failed to build: their
/// cells are `not measured`).
pub fn check_runnable(study: &Study, manifest: &Manifest) -> Result<()> {
    if study
        .probes
        .iter()
        .all(|p| manifest.get(&p.image).is_none())
    {
        bail!(
            "no probe of study {} can run here: every image is unavailable or failed to build \
             (see the build's list)",
            study.id
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUDY: &str = "id: t
title: t
source:
  article: a
  environment: e
  toolchains:
    go: 1.26.1
    golang: 1.26.1
  cpus: \"0\"
protocol:
  scales: [1]
  repeats: 1
  order: fixed
  cpus: \"0\"
  interval_ms: 50
  timeout_s: 10
probes:
  - id: go
    image: go
";

    fn recipes() -> Vec<Recipe> {
        vec![
            Recipe::parse(
                "go",
                "parents: {GO: toolchain-go}\nprobe: true\nbinaries: [/usr/local/bin/probe]\n\
                 versions: {ldd --version: [ldd, --version]}",
            )
            .unwrap(),
            Recipe::parse("toolchain-go", "versions: {go version: [go, version]}").unwrap(),
        ]
    }

    #[test]
    fn a_toolchain_that_names_no_recorded_version_is_a_load_error_naming_the_labels() {
        let study = Study::parse(STUDY).unwrap();
        let doc = Doc::new("s.yaml", STUDY);
        let err = check_toolchains_against(Path::new("/nonexistent"), &recipes(), &study, &doc)
            .unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.starts_with("s.yaml:8:13: source.toolchains: \"golang\" names no version"),
            "{err}"
        );
        assert!(
            err.contains("the labels are: go version, ldd --version"),
            "labels of the probe image and its parent: {err}"
        );
        let fixed = STUDY.replace("    golang: 1.26.1\n", "");
        let study = Study::parse(&fixed).unwrap();
        let doc = Doc::new("s.yaml", &fixed);
        check_toolchains_against(Path::new("/nonexistent"), &recipes(), &study, &doc).unwrap();
    }

    #[test]
    fn a_key_is_a_labels_first_word_or_the_whole_label() {
        let labels: Vec<String> = [
            "go version",
            "gofmt -h",
            "dotnet --version",
            "dotnet --info",
        ]
        .map(String::from)
        .into();
        let found = |key| env::label_for(key, &labels);
        assert_eq!(
            found("go"),
            Ok(Some(&labels[0])),
            "not gofmt, by its first word"
        );
        assert_eq!(found("golang"), Ok(None));
        assert_eq!(found("g"), Ok(None), "no prefix of a word");
        assert_eq!(found("dotnet --info"), Ok(Some(&labels[3])));
        let two = found("dotnet").unwrap_err();
        assert!(
            two.contains("\"dotnet --version\" and \"dotnet --info\""),
            "{two}"
        );
    }

    #[test]
    fn a_key_naming_two_labels_is_a_load_error_naming_both() {
        let text = STUDY.replace("golang: 1.26.1", "go: 1.26.1");
        let study = Study::parse(&text).unwrap();
        let doc = Doc::new("s.yaml", &text);
        let mut recipes = recipes();
        recipes[1] = Recipe::parse(
            "toolchain-go",
            "versions: {go version: [go, version], go env: [go, env]}",
        )
        .unwrap();
        let err = check_toolchains_against(Path::new("/nonexistent"), &recipes, &study, &doc)
            .unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.starts_with(
                "s.yaml:8:9: source.toolchains: \"go\" names two recorded versions, \
                             \"go env\" and \"go version\""
            ),
            "{err}"
        );
    }

    #[test]
    fn every_study_of_the_repository_names_recorded_versions_and_probe_images() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut checked = 0;
        for entry in std::fs::read_dir(repo.join("results")).unwrap() {
            let file = entry.unwrap().path().join("study.yaml");
            if file.is_file() {
                let study = Study::load(&file).unwrap();
                check_probe_images(repo, &study, Some(&file)).unwrap();
                checked += 1;
            }
        }
        assert!(checked >= 6, "{checked} studies");
        check_probe_images(repo, &Study::default_study(), None).unwrap();
    }
}
