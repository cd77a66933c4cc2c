//! What a study needs before it runs: a probe image for every probe (checked before anything is
//! built), the images to build, and at least one probe's image built.

use std::path::Path;

use anyhow::{Result, bail};

use crate::images::Manifest;
use crate::images::recipe::{self, Recipe};
use crate::run::guest;
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
    check_probes_against(&recipes, study, &name, &text)
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
    let mut only: Vec<String> = study.probes.iter().map(|p| p.image.clone()).collect();
    let kernels: Vec<String> = study.kernels().into_iter().map(String::from).collect();
    only.extend(guest::images_for(&kernels));
    only.sort();
    only.dedup();
    only
}

/// At least one probe's image was built (the others are unavailable: their cells are `not measured`).
pub fn check_runnable(study: &Study, manifest: &Manifest) -> Result<()> {
    if study
        .probes
        .iter()
        .all(|p| manifest.get(&p.image).is_none())
    {
        bail!(
            "no probe of study {} can run here: every image is unavailable (see the build's list)",
            study.id
        );
    }
    Ok(())
}
