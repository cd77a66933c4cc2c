//! What a build leaves in the Engine besides its image. The classic builder keeps the last image
//! of every stage but the final one (a multi-stage build's `FROM … AS build`), and when a build
//! fails the last step it committed, as untagged images; the labels a build sets go on the final
//! stage alone (Engine API 1.41), so such an image carries only what it inherits, and one that
//! starts from an imported root filesystem carries nothing `clean --images` could find it by. The
//! build's own output names these images: they go once no build of the connection is under way,
//! with the untagged images below them (that stage's build cache), unless the build keeps them
//! ([`BuildSpec::keep_stages`]). Images the Engine held before the build, images a tag names, and
//! images that another image or a container stands on (the built image's own steps, a parent, an
//! image another build is using) stay.

use anyhow::{Context, Result};
use bollard::errors::Error as BollardError;
use std::collections::HashMap;

use bollard::query_parameters::{ListImagesOptionsBuilder, RemoveImageOptionsBuilder};

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

/// Builds of one Engine connection under way, and the images the ended ones left: removed once
/// the last build under way ends, so that a build beside it that reused one of them from the
/// cache (identical first steps: the Rust probes' `FROM ${RUST} AS build`) still has it.
#[derive(Debug, Default)]
pub(crate) struct InFlight(std::sync::Mutex<(usize, Vec<Leftover>)>);

/// An image a build left, the tag it was building, and what the Engine held before that build.
#[derive(Debug)]
pub(super) struct Leftover {
    pub(super) id: String,
    tag: String,
    before: std::sync::Arc<std::collections::HashSet<String>>,
}

impl Leftover {
    pub(super) fn new(
        id: &str,
        tag: &str,
        before: std::sync::Arc<std::collections::HashSet<String>>,
    ) -> Self {
        let (id, tag) = (id.to_string(), tag.to_string());
        Self { id, tag, before }
    }
}

impl InFlight {
    pub(super) fn begin(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).0 += 1;
    }

    /// Ends a build with what it left; all that every build left once none is under way.
    pub(super) fn end(&self, left: Vec<Leftover>) -> Vec<Leftover> {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (count, pending) = &mut *guard;
        pending.extend(left);
        *count = count.saturating_sub(1);
        match *count {
            0 => std::mem::take(pending),
            _ => Vec::new(),
        }
    }
}

impl Engine {
    /// Before a build: counted under way.
    pub(super) fn build_begins(&self) {
        self.builds.begin();
    }

    /// After the build of `spec`, whatever its outcome: the ends of its stages are set aside, and
    /// once no build is under way everything set aside is removed (see [`Engine::remove_untagged`]).
    /// A failure is said with the image's ID; the build's own outcome stands.
    pub(super) async fn build_ends(&self, spec: &BuildSpec, stages: Stages) {
        let before = std::sync::Arc::new(stages.before.clone());
        let left = match spec.keep_stages {
            true => Vec::new(),
            false => (stages.ends().iter())
                .map(|id| Leftover::new(id, &spec.tag, before.clone()))
                .collect(),
        };
        let left = self.builds.end(left);
        if left.is_empty() {
            return;
        }
        let images = match self.all_images().await {
            Ok(images) => images,
            Err(e) => return eprintln!("warning: builds left untagged images: {e:#}"),
        };
        for leftover in left {
            if let Err(e) = self.remove_untagged(&leftover, &images).await {
                eprintln!(
                    "warning: the build of {} left the untagged image {}, which could not be \
                     removed: {e:#}",
                    leftover.tag, leftover.id
                );
            }
        }
    }

    /// Every image the Engine holds (build steps included), by full ID: its parent and tags.
    pub(super) async fn all_images(
        &self,
    ) -> Result<HashMap<String, bollard::models::ImageSummary>> {
        let options = ListImagesOptionsBuilder::default().all(true).build();
        let images = (self.docker.list_images(Some(options)).await).context("listing images")?;
        Ok(images.into_iter().map(|i| (i.id.clone(), i)).collect())
    }

    /// Removes the image a build left when no tag names it and no image or container stands on
    /// it (the Engine refuses those), then its parent on the same terms, and so on down: never an
    /// image the Engine held before that build, nor a tagged one.
    async fn remove_untagged(
        &self,
        leftover: &Leftover,
        images: &HashMap<String, bollard::models::ImageSummary>,
    ) -> Result<()> {
        let short = leftover.id.strip_prefix("sha256:").unwrap_or(&leftover.id);
        let found = images
            .keys()
            .find(|id| id.strip_prefix("sha256:").unwrap_or(id).starts_with(short));
        let mut at = found.cloned();
        while let Some(id) = at.take() {
            let Some(image) = images.get(&id) else {
                return Ok(());
            };
            let tagged = image.repo_tags.iter().any(|t| t != "<none>:<none>");
            if tagged || leftover.before.contains(&id) {
                return Ok(());
            }
            let options = RemoveImageOptionsBuilder::default()
                .force(false)
                .noprune(true)
                .build();
            match self.docker.remove_image(&id, Some(options), None).await {
                Ok(_) => {}
                // 409: an image or a container stands on it; 404: it is gone already.
                Err(BollardError::DockerResponseServerError {
                    status_code: 404 | 409,
                    ..
                }) => return Ok(()),
                Err(e) => return Err(e).with_context(|| format!("removing image {id}")),
            }
            at = Some(image.parent_id.clone()).filter(|p| !p.is_empty());
        }
        Ok(())
    }
}
