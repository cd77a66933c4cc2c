//! The build plan: the base images (one per root filesystem pin) and the recipes as one graph of
//! parents, checked when it is made (every parent and pin exists, no cycles), and the schedule that
//! hands out images whose parents are ready and marks unavailable every image that needs an
//! unavailable pin, and every image below it.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};

use super::context::RECIPE;
use super::manifest::FailedImage;
use super::recipe::Recipe;
use crate::images::pin::{Pin, Pins};
use crate::yaml::{Doc, Invalid};

/// The pin whose root filesystem is the image named `base` (its tags predate other rootfs pins).
const BASE_PIN: &str = "debian-base";

/// One image of the plan.
// A few dozen nodes per build: a recipe held inline costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A base image imported from a root filesystem pin: name and pin name.
    Rootfs { name: String, pin: String },
    /// An image built from its `docker/<name>/` folder.
    Recipe(Recipe),
}

impl Node {
    /// The image's short name.
    pub fn name(&self) -> &str {
        match self {
            Node::Rootfs { name, .. } => name,
            Node::Recipe(r) => &r.name,
        }
    }

    /// Parent image names.
    pub fn parents(&self) -> Vec<&str> {
        match self {
            Node::Rootfs { .. } => Vec::new(),
            Node::Recipe(r) => r.parents.values().map(String::as_str).collect(),
        }
    }

    /// Names of the pins whose artifacts the image is made from.
    pub fn pins(&self) -> Vec<&str> {
        match self {
            Node::Rootfs { pin, .. } => vec![pin.as_str()],
            Node::Recipe(r) => r.artifacts.values().map(String::as_str).collect(),
        }
    }

    /// Whether a study may run this image as a probe.
    pub fn is_probe(&self) -> bool {
        matches!(self, Node::Recipe(r) if r.probe)
    }
}

/// The image name of a root filesystem pin: `base` for `debian-base`, else the pin's name.
pub fn rootfs_image(pin: &Pin) -> String {
    if pin.name == BASE_PIN {
        "base".to_owned()
    } else {
        pin.name.clone()
    }
}

/// Every image in build order: each one after all of its parents, base images first, then level
/// by level (an image's level is one more than its deepest parent's), by name within a level.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    nodes: Vec<Node>,
}

impl Graph {
    /// Checks the recipes against each other and the pins, and orders them.
    pub fn new(recipes: Vec<Recipe>, pins: &Pins) -> Result<Graph> {
        let mut nodes: Vec<Node> = pins
            .rootfs()
            .map(|p| Node::Rootfs {
                name: rootfs_image(p),
                pin: p.name.clone(),
            })
            .collect();
        let mut names = BTreeSet::new();
        for node in &nodes {
            if !super::recipe::is_image_name(node.name()) {
                bail!(
                    "toolchains/{}.yaml is a root filesystem pin, so its name is an image name: \
                     use lowercase letters, digits, `.`, `_` or `-`",
                    node.pins()[0]
                );
            }
            names.insert(node.name().to_owned());
        }
        for r in &recipes {
            if !names.insert(r.name.clone()) {
                bail!(
                    "docker/{} is named like the base image of a root filesystem pin: rename the folder",
                    r.name
                );
            }
        }
        for r in &recipes {
            check_references(r, &names, pins)?;
        }
        nodes.extend(recipes.into_iter().map(Node::Recipe));
        Ok(Graph {
            nodes: order(nodes)?,
        })
    }

    /// The images in build order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The image named `name`.
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name() == name)
    }

    /// The images a plain build makes: every recipe that is not on demand (a guest kernel, the
    /// VM), with what they are built from. On-demand images are built when named (`--only`).
    pub fn default_set(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter_map(|n| match n {
                Node::Recipe(r) if !r.is_on_demand() => Some(r.name.clone()),
                _ => None,
            })
            .collect()
    }

    /// Only the named images and every image they are built from, in the same order.
    pub fn only(&self, names: &[String]) -> Result<Graph> {
        let mut keep: BTreeSet<&str> = BTreeSet::new();
        let mut todo: Vec<&str> = Vec::new();
        for name in names {
            if self.get(name).is_none() {
                let known: Vec<&str> = self.nodes.iter().map(Node::name).collect();
                bail!("--only: no image {name:?}; images: {}", known.join(", "));
            }
            todo.push(name);
        }
        while let Some(name) = todo.pop() {
            if keep.insert(name) {
                todo.extend(self.get(name).map(Node::parents).unwrap_or_default());
            }
        }
        Ok(Graph {
            nodes: self
                .nodes
                .iter()
                .filter(|n| keep.contains(n.name()))
                .cloned()
                .collect(),
        })
    }
}

fn check_references(r: &Recipe, images: &BTreeSet<String>, pins: &Pins) -> Result<()> {
    let problem = |path: String, message: String| {
        let file = r
            .file
            .clone()
            .unwrap_or_else(|| format!("docker/{}/{RECIPE}", r.name).into());
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        Doc::new(file.display().to_string(), &text).error(&Invalid::new(path, message))
    };
    for (arg, parent) in &r.parents {
        if !images.contains(parent) {
            return Err(problem(
                format!("parents.{arg}"),
                format!(
                    "parents.{arg} names image {parent:?}, which nothing builds; known images: {}. \
                     Fix the name, or add docker/{parent}/ with {RECIPE}",
                    images.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    for (at, pin) in &r.artifacts {
        if let Err(e) = pins.get(pin) {
            return Err(problem(
                format!("artifacts.{at}"),
                format!("artifacts.{at}: {e:#}"),
            ));
        }
    }
    Ok(())
}

/// Orders `nodes` level by level; an error names a cycle.
fn order(nodes: Vec<Node>) -> Result<Vec<Node>> {
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut waiting = nodes;
    let mut ordered = Vec::new();
    while !waiting.is_empty() {
        let (mut ready, rest): (Vec<Node>, Vec<Node>) = waiting
            .into_iter()
            .partition(|n| n.parents().iter().all(|p| done.contains(*p)));
        if ready.is_empty() {
            bail!(
                "image recipes form a cycle: {}; break it in their {RECIPE} parents",
                cycle(&rest).join(" → ")
            );
        }
        ready.sort_by_key(|n| (!matches!(n, Node::Rootfs { .. }), n.name().to_owned()));
        done.extend(ready.iter().map(|n| n.name().to_owned()));
        ordered.extend(ready);
        waiting = rest;
    }
    Ok(ordered)
}

/// One cycle among `stuck` (images none of which can be built): every one of them has a parent
/// among them, so following parents must come back to an image already seen.
fn cycle(stuck: &[Node]) -> Vec<String> {
    let by_name: BTreeMap<&str, &Node> = stuck.iter().map(|n| (n.name(), n)).collect();
    let mut path: Vec<&str> = vec![stuck[0].name()];
    loop {
        let here = by_name[path.last().expect("path is never empty")];
        let next = here
            .parents()
            .into_iter()
            .find(|p| by_name.contains_key(p))
            .expect("a stuck image has a stuck parent");
        if let Some(at) = path.iter().position(|p| *p == next) {
            let mut found: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
            found.push(next.to_owned());
            return found;
        }
        path.push(next);
    }
}

/// Where each image of a build stands.
#[derive(Debug, Clone, PartialEq)]
enum State {
    Waiting,
    Building,
    Built,
    Unavailable(String),
    /// The build failed (`parent: None`), or the build of `parent`, further up.
    Failed {
        error: String,
        parent: Option<String>,
        output: Vec<String>,
    },
}

/// Hands out the images whose parents are all built, to be built side by side, and passes
/// unavailability down to every image below an unavailable one.
pub struct Schedule<'g> {
    graph: &'g Graph,
    state: BTreeMap<&'g str, State>,
}

impl<'g> Schedule<'g> {
    /// Every image waiting.
    pub fn new(graph: &'g Graph) -> Self {
        let state = graph
            .nodes
            .iter()
            .map(|n| (n.name(), State::Waiting))
            .collect();
        Schedule { graph, state }
    }

    /// The waiting images whose parents are all built, now marked as building (empty when the
    /// build is over). Waiting images with an unavailable parent become unavailable first.
    pub fn ready(&mut self) -> Vec<&'g Node> {
        let mut ready = Vec::new();
        for node in &self.graph.nodes {
            if self.state[node.name()] != State::Waiting {
                continue;
            }
            let parents = node.parents();
            let lost = parents.iter().find_map(|p| match &self.state[*p] {
                State::Unavailable(_) => Some(State::Unavailable(format!(
                    "its parent image {p} is unavailable"
                ))),
                State::Failed { error, parent, .. } => Some(State::Failed {
                    error: error.clone(),
                    parent: Some(parent.clone().unwrap_or_else(|| p.to_string())),
                    output: Vec::new(),
                }),
                _ => None,
            });
            if let Some(lost) = lost {
                self.state.insert(node.name(), lost);
            } else if parents.iter().all(|p| self.state[*p] == State::Built) {
                ready.push(node);
            }
        }
        for node in &ready {
            self.state.insert(node.name(), State::Building);
        }
        ready
    }

    /// Records that `name` was built (or reused).
    pub fn built(&mut self, name: &str) {
        self.set(name, State::Built);
    }

    /// Records that `name` cannot be built here, and why.
    pub fn unavailable(&mut self, name: &str, reason: String) {
        self.set(name, State::Unavailable(reason));
    }

    /// Records that the build of `name` failed: its error line and the last lines it printed.
    pub fn failed(&mut self, name: &str, error: String, output: Vec<String>) {
        let parent = None;
        self.set(
            name,
            State::Failed {
                error,
                parent,
                output,
            },
        );
    }

    fn set(&mut self, name: &str, state: State) {
        let node = self
            .graph
            .get(name)
            .expect("the schedule only hands out images of its graph");
        self.state.insert(node.name(), state);
    }

    /// The unavailable images in build order, with their reasons.
    pub fn unavailable_images(&self) -> Vec<(String, String)> {
        self.graph
            .nodes
            .iter()
            .filter_map(|n| match &self.state[n.name()] {
                State::Unavailable(reason) => Some((n.name().to_owned(), reason.clone())),
                _ => None,
            })
            .collect()
    }

    /// The images whose build failed, or a parent's, in build order.
    pub fn failed_images(&self) -> Vec<FailedImage> {
        self.graph
            .nodes
            .iter()
            .filter_map(|n| match &self.state[n.name()] {
                State::Failed {
                    error,
                    parent,
                    output,
                } => Some(FailedImage {
                    name: n.name().to_owned(),
                    error: error.clone(),
                    parent: parent.clone(),
                    output: output.clone(),
                }),
                _ => None,
            })
            .collect()
    }
}

/// Why an image is unavailable when no source of the pin `pin` produced its artifact (`why`:
/// one `  - <source>: <error>` line per source).
pub fn pin_reason(pin: &str, why: &str) -> String {
    format!("pin {pin} (toolchains/{pin}.yaml) cannot be produced here; its sources failed:\n{why}")
}

#[cfg(test)]
mod tests;
