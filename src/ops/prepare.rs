//! The step every command that runs containers starts with: check the repository, connect to the
//! Engine (`run` has connected already, to choose its CPUs), load the pins, and build or reuse
//! every image. `parkbench build` is this step alone.

use std::path::Path;

use anyhow::{Result, bail};

use super::Ending;
use crate::engine::Engine;
use crate::files::write_atomic;
use crate::images::cache::Cache;
use crate::images::pin;
use crate::images::{self, BuildOptions, Manifest};
use crate::run::needs;
use crate::study::Study;

/// What `prepare` gives: an Engine with every image built, and their manifest.
pub struct Prepared {
    pub engine: Engine,
    pub cache: Cache,
    pub manifest: Manifest,
}

/// Builds every pinned image (a no-op when nothing changed) and prints the image table.
pub async fn prepare(repo: &Path, options: &BuildOptions) -> Result<Prepared> {
    check_repo(repo)?;
    prepare_on(Engine::connect().await?, repo, options).await
}

/// [`prepare`] on an Engine already connected to, in a repository already checked
/// ([`check_repo`]).
pub async fn prepare_on(engine: Engine, repo: &Path, options: &BuildOptions) -> Result<Prepared> {
    let (cache, manifest) = build_on(&engine, repo, options).await?;
    print!("{}", images::table(&manifest));
    Ok(Prepared {
        engine,
        cache,
        manifest,
    })
}

/// The images `options` names, built or reused, with no table printed: a build ahead of the
/// command that prints it (`reproduce --pinned-driver`, `explain`'s variants).
pub async fn build_quietly(repo: &Path, options: &BuildOptions) -> Result<Manifest> {
    check_repo(repo)?;
    Ok(build_on(&Engine::connect().await?, repo, options).await?.1)
}

async fn build_on(
    engine: &Engine,
    repo: &Path,
    options: &BuildOptions,
) -> Result<(Cache, Manifest)> {
    let pins = pin::load_all(&repo.join("toolchains"))?;
    let cache = Cache::from_env()?;
    let mut manifest = images::build_all(engine, &cache, &pins, repo, options).await?;
    let handed = (std::env::var_os(BUILT_BEFORE_HAND_OVER))
        .map(|t| t.to_string_lossy().into_owned())
        .unwrap_or_default();
    let earlier = options.built_before.iter().map(String::as_str);
    count_built(&mut manifest, handed.split(' ').chain(earlier));
    Ok((cache, manifest))
}

/// Set by `reproduce --pinned-driver` in the environment of the pinned driver it hands its command
/// over to: the tags it built for that command, beside the driver (space-separated).
pub(super) const BUILT_BEFORE_HAND_OVER: &str = "PARKBENCH_BUILT_BEFORE_HAND_OVER";

/// The images of `tags`, which this command built before (before its driver handed it over:
/// [`BUILT_BEFORE_HAND_OVER`]'s value; or in an earlier build of its own:
/// [`BuildOptions::built_before`]), counted as built (the table says `built`, and so does the run's
/// manifest), not as found already there.
fn count_built<'a>(manifest: &mut Manifest, tags: impl Iterator<Item = &'a str>) {
    let tags: std::collections::BTreeSet<&str> = tags.collect();
    for image in &mut manifest.images {
        image.built |= tags.contains(image.tag.as_str());
    }
}

/// `parkbench build`: every pinned image, built or reused; the manifest also written as JSON to
/// `manifest` when given. An image whose build failed fails the command once every other image
/// is built.
pub async fn build(repo: &Path, options: &BuildOptions, manifest: Option<&Path>) -> Result<Ending> {
    let prepared = prepare(repo, options).await?;
    if let Some(path) = manifest {
        let json = serde_json::to_string_pretty(&prepared.manifest)?;
        write_atomic(path, json.as_bytes())?;
        eprintln!("manifest written to {}", path.display());
    }
    let failed: Vec<&str> = (prepared.manifest.failed.iter())
        .filter(|f| f.parent.is_none())
        .map(|f| f.name.as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "the build of {} failed (see FAILED above); every other image is built, and a run \
             records the probes of the failed ones as `not measured`",
            failed.join(", ")
        );
    }
    Ok(Ending::Ok)
}

/// The build a study needs: its probe images and what they are built from.
pub fn for_study(study: &Study) -> BuildOptions {
    BuildOptions {
        only: needs::images(study),
        ..BuildOptions::default()
    }
}

pub(super) fn check_repo(repo: &Path) -> Result<()> {
    for dir in ["docker", "toolchains"] {
        if !repo.join(dir).is_dir() {
            bail!(
                "{} has no {dir}/ folder: run parkbench from the repository root or pass --repo DIR",
                repo.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_built_before_the_hand_over_or_the_run_count_as_built() {
        let image = |name: &str, built| images::BuiltImage {
            name: name.into(),
            tag: format!("parkbench/{name}:0123"),
            id: "sha256:1".into(),
            layers: Vec::new(),
            inputs: Default::default(),
            binaries: Default::default(),
            versions: Default::default(),
            notes: Vec::new(),
            built,
        };
        let found = Manifest {
            images: vec![
                image("base", false),
                image("go", false),
                image("sampler", true),
            ],
            ..Manifest::default()
        };
        let built = |m: &Manifest| m.images.iter().map(|i| i.built).collect::<Vec<_>>();
        let mut not_handed = found.clone();
        count_built(&mut not_handed, std::iter::empty());
        assert_eq!(built(&not_handed), [false, false, true]);
        let mut handed = found.clone();
        let tags = "parkbench/go:0123 parkbench/other:0123 parkbench/base:9999";
        count_built(&mut handed, tags.split(' '));
        assert_eq!(built(&handed), [false, true, true]);
        let table = images::table(&handed);
        let row = table.lines().find(|l| l.starts_with("go ")).unwrap();
        assert!(row.split_whitespace().any(|w| w == "built"), "{table}");
        let mut none = found;
        count_built(&mut none, "".split(' '));
        assert_eq!(built(&none), [false, false, true]);
    }
}
