//! The tag every image of a graph would get, computed from its inputs without building anything,
//! and whether the Engine already holds it (so a build would reuse it).

use std::path::Path;

use anyhow::{Context, Result};

use super::build::{self, INPUTS_LABEL};
use super::manifest::namespace;
use super::plan::{Graph, Node};
use crate::engine::Images;
use crate::images::cache::Cache;
use crate::images::pin::Pins;

/// One image as a build would name it.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The image's short name.
    pub name: String,
    /// The tag a build gives it.
    pub tag: String,
    /// What the Engine's image under `tag` must show to be reused.
    pub expect: Expect,
    /// The tools (`pip`, `go`, `npm`) whose dependencies are not vendored yet: the tag holds a
    /// placeholder for them, and the build fetches them (and names the image after them).
    pub unvendored: Vec<String>,
}

/// What makes an image under a planned tag the one a build would reuse.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// A base image: exactly this one layer (the root filesystem's diff-ID).
    Layer(String),
    /// A built image: its inputs label is this JSON.
    Inputs(String),
}

/// The tags of every image of `graph`, in build order.
pub fn planned(cache: &Cache, pins: &Pins, repo: &Path, graph: &Graph) -> Result<Vec<Planned>> {
    let mut out: Vec<Planned> = Vec::new();
    for node in graph.nodes() {
        let planned = match node {
            Node::Rootfs { name, pin } => {
                let pin = pins.get(pin)?;
                Planned {
                    name: name.clone(),
                    tag: format!("{}/{name}:{}", namespace(), &pin.sha256[..16]),
                    expect: Expect::Layer(format!("sha256:{}", pin.sha256)),
                    unvendored: Vec::new(),
                }
            }
            Node::Recipe(recipe) => {
                let scratch = cache.scratch()?;
                let dir = build::source_dir(repo, recipe, scratch.path())?;
                let parent_tag = |parent: &str| -> Result<String> {
                    out.iter()
                        .find(|p| p.name == parent)
                        .map(|p| p.tag.clone())
                        .with_context(|| format!("parent image {parent} comes after its child"))
                };
                let (inputs, _) = build::inputs(
                    cache,
                    pins,
                    repo,
                    &dir,
                    recipe,
                    build::Vendoring::LookOnly,
                    &parent_tag,
                )
                .with_context(|| format!("the inputs of image {}", recipe.name))?;
                let hash = build::hash_inputs(&recipe.name, &inputs);
                let unvendored = (recipe.vendor.0.iter())
                    .filter(|t| {
                        inputs.get(&format!("vendor {t}")).map(String::as_str)
                            == Some(build::NOT_VENDORED)
                    })
                    .map(|t| t.to_string())
                    .collect();
                Planned {
                    name: recipe.name.clone(),
                    tag: format!("{}/{}:{}", namespace(), recipe.name, &hash[..16]),
                    expect: Expect::Inputs(serde_json::to_string(&inputs)?),
                    unvendored,
                }
            }
        };
        out.push(planned);
    }
    Ok(out)
}

/// Whether the Engine holds `image` as a build would reuse it.
pub async fn cached<E: Images>(engine: &E, image: &Planned) -> Result<bool> {
    let Some(facts) = engine.image(&image.tag).await? else {
        return Ok(false);
    };
    Ok(match &image.expect {
        Expect::Layer(diff_id) => facts.layers == [diff_id.clone()],
        Expect::Inputs(json) => facts.labels.get(INPUTS_LABEL) == Some(json),
    })
}
