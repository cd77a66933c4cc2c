//! The fake Engine's images: imports and builds are recorded, each build plays what its image's
//! script says (an image, a failure with output lines, or no image at all), and what it leaves can
//! be inspected, read from and run, as through the real Engine.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::MutexGuard;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::FakeEngine;
use crate::engine::{BuildSpec, ImageFacts, Images};
use sha2::{Digest, Sha256};

/// How the build of one image ends.
#[derive(Debug, Clone)]
pub enum Build {
    /// The tag names an image with these facts (an image not scripted gets facts made from its tag).
    Image(ImageFacts),
    /// The build prints `lines`, then the Engine reports `error`.
    Fails { lines: Vec<String>, error: String },
    /// The build reports success, but the tag names no image afterwards.
    LeavesNoImage,
}

/// What the fake knows about images.
#[derive(Default)]
pub(super) struct Store {
    images: BTreeMap<String, ImageFacts>,
    scripts: BTreeMap<String, Build>,
    durations: BTreeMap<String, Duration>,
    builds: Vec<BuildSpec>,
    imports: Vec<String>,
    events: Vec<String>,
    made: u64,
    /// Programs that images (by name) do not hold: a command of theirs fails as the Engine's does.
    missing: Vec<(String, String)>,
    /// Images (by name) whose commands fail as when the Engine goes away.
    engine_gone: Vec<String>,
}

impl Store {
    /// Facts for a new image made under `tag` with `layers`.
    fn new_image(&mut self, tag: &str, layers: Vec<String>, labels: &BTreeMap<String, String>) {
        self.made += 1;
        let facts = ImageFacts {
            id: format!(
                "sha256:{}",
                sha256(format!("{tag} {}", self.made).as_bytes())
            ),
            layers,
            labels: labels.clone(),
            env: Vec::new(),
        };
        self.images.insert(tag.to_owned(), facts);
    }
}

/// The image name in a tag `<namespace>/<name>:<hash>`.
pub fn image_name(tag: &str) -> &str {
    let repo = tag.rsplit_once(':').map_or(tag, |(repo, _)| repo);
    repo.rsplit('/').next().unwrap_or(repo)
}

impl FakeEngine {
    fn images(&self) -> MutexGuard<'_, Store> {
        self.images.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes the next build of the image `name` end as `build`.
    pub fn script_build(&self, name: &str, build: Build) {
        self.images().scripts.insert(name.to_owned(), build);
    }

    /// Makes a command of `program` fail in the image `name`, as for a program that is not there.
    pub fn lacks_program(&self, name: &str, program: &str) {
        let missing = (name.to_owned(), program.to_owned());
        self.images().missing.push(missing);
    }

    /// Makes every command run in the image `name` fail as when the Engine goes away.
    pub fn engine_gone_for(&self, name: &str) {
        self.images().engine_gone.push(name.to_owned());
    }

    /// Makes every build of the image `name` take `time` before it ends.
    pub fn build_takes(&self, name: &str, time: Duration) {
        self.images().durations.insert(name.to_owned(), time);
    }

    /// Every build asked for, in the order they started.
    pub fn builds(&self) -> Vec<BuildSpec> {
        self.images().builds.clone()
    }

    /// The names of the images whose build started, in that order.
    pub fn built_names(&self) -> Vec<String> {
        let builds = self.builds();
        builds
            .iter()
            .map(|b| image_name(&b.tag).to_owned())
            .collect()
    }

    /// Every tag imported, in order.
    pub fn imports(&self) -> Vec<String> {
        self.images().imports.clone()
    }

    /// `started <name>` and `finished <name>` for every build, in the order they happened.
    pub fn build_events(&self) -> Vec<String> {
        self.images().events.clone()
    }
}

impl Images for FakeEngine {
    async fn image(&self, tag: &str) -> Result<Option<ImageFacts>> {
        Ok(self.images().images.get(tag).cloned())
    }

    /// The layer is the sha256 of the tar, as the real Engine's diff-ID is.
    async fn import(&self, rootfs: &Path, repo: &str, tag: &str) -> Result<()> {
        let layer = format!(
            "sha256:{}",
            sha256(
                &std::fs::read(rootfs).with_context(|| format!("reading {}", rootfs.display()))?
            )
        );
        let tag = format!("{repo}:{tag}");
        let mut store = self.images();
        store.imports.push(tag.clone());
        store.new_image(&tag, vec![layer], &BTreeMap::new());
        Ok(())
    }

    async fn build(&self, spec: &BuildSpec, mut log: impl FnMut(&str) + Send) -> Result<()> {
        let name = image_name(&spec.tag).to_owned();
        let (script, time) = {
            let mut store = self.images();
            store.builds.push(spec.clone());
            store.events.push(format!("started {name}"));
            let time = store.durations.get(&name).copied().unwrap_or_default();
            (store.scripts.remove(&name), time)
        };
        std::fs::metadata(&spec.context)
            .with_context(|| format!("opening build context {}", spec.context.display()))?;
        // A real build takes a while: let images built beside this one start meanwhile. A build
        // given no time ends on its next poll, whatever the clock says.
        tokio::task::yield_now().await;
        if !time.is_zero() {
            tokio::time::sleep(time).await;
        }
        let mut store = self.images();
        store.events.push(format!("finished {name}"));
        match script {
            None => {
                let layer = format!("sha256:{}", sha256(spec.tag.as_bytes()));
                store.new_image(&spec.tag, vec![layer], &spec.labels);
            }
            Some(Build::Image(facts)) => _ = store.images.insert(spec.tag.clone(), facts),
            Some(Build::Fails { lines, error }) => {
                lines.iter().for_each(|l| log(l));
                let (tag, message) = (spec.tag.clone(), error);
                return Err(crate::engine::BuildFailed { tag, message }.into());
            }
            Some(Build::LeavesNoImage) => {}
        }
        log(&format!("Successfully tagged {}", spec.tag));
        Ok(())
    }

    /// A file's bytes name the image and the path, so that two images never share a binary hash.
    async fn read_file(&self, image: &str, path: &str) -> Result<Vec<u8>> {
        match self.images().images.get(image) {
            Some(facts) => Ok(format!("{} {path}", facts.id).into_bytes()),
            None => bail!("reading {path} from image {image}: no such image"),
        }
    }

    async fn output(&self, image: &str, cmd: &[&str], _role: &str) -> Result<String> {
        let store = self.images();
        if !store.images.contains_key(image) {
            bail!("`{}` in {image} failed: no such image", cmd.join(" "));
        }
        let program = cmd.first().copied().unwrap_or_default();
        if (store.missing.iter()).any(|(n, p)| n == image_name(image) && p == program) {
            return Err(crate::engine::CommandFailed {
                message: format!(
                    "starting a container from {image}: failed to create task for container: \
                     exec: \"{program}\": executable file not found in $PATH"
                ),
            }
            .into());
        }
        if store.engine_gone.contains(&image_name(image).to_owned()) {
            bail!("starting a container from {image}: the Engine closed the connection");
        }
        Ok(format!("{} 1.0", cmd.join(" ")))
    }

    /// An empty filesystem: a tar with no member.
    async fn export_filesystem(&self, image: &str, out: &Path) -> Result<()> {
        if !self.images().images.contains_key(image) {
            bail!("exporting the filesystem of image {image}: no such image");
        }
        let file =
            std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
        tar::Builder::new(file)
            .into_inner()
            .with_context(|| format!("writing {}", out.display()))?;
        Ok(())
    }
}

/// sha256 of bytes, hex (the fake stands below the image stage's streaming digest).
fn sha256(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}
