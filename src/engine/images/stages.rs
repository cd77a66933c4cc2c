//! What a build leaves in the Engine besides its image. The classic builder keeps the last image
//! of every stage but the final one (a multi-stage build's `FROM … AS build`), and when a build
//! fails the last step it committed, as untagged images; the labels a build sets go on the final
//! stage alone (Engine API 1.41), so such an image carries only what it inherits, and one that
//! starts from an imported root filesystem carries nothing `clean --images` could find it by. The
//! build's own output names these images: they go once the build ends, with the untagged images
//! below them (that stage's build cache), unless the build keeps them ([`BuildSpec::keep_stages`]).
//! Images the output names that a tag names, or that another image or a container stands on (the
//! built image's own steps, a parent, an image another build is using), stay.

use anyhow::{Context, Result};
use bollard::errors::Error as BollardError;
use bollard::query_parameters::RemoveImageOptionsBuilder;

use super::super::BuildSpec;
use super::Engine;

/// The images a build's output names as the ends of its stages, read line by line.
#[derive(Debug, Default)]
pub(super) struct Stages {
    /// The images the Engine held before the build (full `sha256:` IDs): never removed.
    before: std::collections::HashSet<String>,
    /// The last image of each stage the build went past.
    ended: Vec<String>,
    /// The last image named in the stage being built.
    last: Option<String>,
}

impl Stages {
    /// Before a build, with the IDs of every image the Engine holds.
    pub(super) fn new(before: std::collections::HashSet<String>) -> Self {
        Self {
            before,
            ..Self::default()
        }
    }

    /// True when `id` (a short or full ID, with or without `sha256:`) names an image the Engine
    /// held before the build.
    fn held_before(&self, id: &str) -> bool {
        let id = id.strip_prefix("sha256:").unwrap_or(id);
        (self.before.iter()).any(|b| b.strip_prefix("sha256:").unwrap_or(b).starts_with(id))
    }

    /// Reads one line of the build's output: `Step 3/9 : FROM …` (Podman: `STEP 3/9: FROM …`)
    /// starts a stage, ` ---> 3f2a9c0d1b7e` (Podman: `--> 3f2a9c0d1b7e`) names the image a step
    /// made or found in the cache.
    pub(super) fn read(&mut self, line: &str) {
        let line = line.trim();
        if starts_stage(line) {
            self.ended.extend(self.last.take());
        } else if let Some(id) = image_named(line) {
            self.last = Some(id.to_string());
        }
    }

    /// The last image of every stage, the last one named first (a finished build's own image,
    /// or the step a failed build stopped after), each once.
    pub(super) fn ends(self) -> Vec<String> {
        let mut ends: Vec<String> = Vec::new();
        for id in self.last.iter().chain(self.ended.iter().rev()).cloned() {
            if !ends.contains(&id) && !self.held_before(&id) {
                ends.push(id);
            }
        }
        ends
    }
}

/// True for the line of a `FROM` step.
fn starts_stage(line: &str) -> bool {
    let Some((step, instruction)) = line.split_once(':') else {
        return false;
    };
    let word = |s: &str, w: &str| s.len() >= w.len() && s[..w.len()].eq_ignore_ascii_case(w);
    word(step, "step ") && word(instruction.trim_start(), "from ")
}

/// The image ID a ` ---> <id>` line names (12 hex digits, or 64).
fn image_named(line: &str) -> Option<&str> {
    let id = line
        .strip_prefix("---> ")
        .or_else(|| line.strip_prefix("--> "))?
        .trim();
    let hex = id.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && (12..=64).contains(&id.len())).then_some(id)
}

impl Engine {
    /// Removes the ends of the stages of the build of `spec`: those no tag names and nothing
    /// stands on. A failure is said with the image's ID; the build's own outcome stands.
    pub(super) async fn remove_stages(&self, spec: &BuildSpec, stages: Stages) {
        if spec.keep_stages {
            return;
        }
        for id in stages.ends() {
            if let Err(e) = self.remove_untagged(&id).await {
                eprintln!(
                    "warning: the build of {} left the untagged image {id}, which could not be \
                     removed: {e:#}",
                    spec.tag
                );
            }
        }
    }

    /// Removes the image `id` when no tag names it and no image or container stands on it (the
    /// Engine refuses those), with the untagged images below it that nothing else stands on.
    async fn remove_untagged(&self, id: &str) -> Result<()> {
        let Some(tags) = self.repo_tags(id).await? else {
            return Ok(());
        };
        if tags.iter().any(|t| t != "<none>:<none>") {
            return Ok(());
        }
        let options = RemoveImageOptionsBuilder::default().force(false).build();
        match self.docker.remove_image(id, Some(options), None).await {
            Ok(_) => Ok(()),
            // 409: an image or a container stands on it; 404: it is gone already.
            Err(BollardError::DockerResponseServerError {
                status_code: 404 | 409,
                ..
            }) => Ok(()),
            Err(e) => Err(e).with_context(|| format!("removing image {id}")),
        }
    }
}
