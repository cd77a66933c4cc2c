//! Images through the Engine: inspect, import, build, tag, read files out of, remove, export and
//! load; and images loaded from files the kit did not write, held by an [`ImageGuard`] that removes
//! them again on every path.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use bollard::errors::Error as BollardError;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    BuildImageOptionsBuilder, BuilderVersion, CreateImageOptionsBuilder,
    DownloadFromContainerOptionsBuilder, ImportImageOptionsBuilder, ListImagesOptionsBuilder,
    PruneImagesOptionsBuilder, RemoveImageOptionsBuilder, TagImageOptionsBuilder,
};
use futures_util::{StreamExt, TryStreamExt};
use tokio_util::io::ReaderStream;

use super::{BuildSpec, Containers, Engine, ImageFacts, Images};

mod loaded;
pub(super) mod stages;

pub use loaded::ImageGuard;

/// A tag as the kit writes it (`parkbench/go:…`): Podman names the images it imports, builds and
/// loads with a registry in front (`docker.io/parkbench/go:…`, `localhost/parkbench/go:…`), which
/// the Docker Engine leaves out. Only Podman's answers are read so ([`Engine::local_names`]).
pub fn local_name(tag: &str) -> String {
    ["docker.io/", "localhost/"]
        .iter()
        .find_map(|registry| tag.strip_prefix(registry))
        .filter(|rest| rest.contains('/'))
        .unwrap_or(tag)
        .to_string()
}

/// The Engine's side of [`Images`]; the trait says what each does.
impl Images for Engine {
    async fn image(&self, tag: &str) -> Result<Option<ImageFacts>> {
        match self.docker.inspect_image(tag).await {
            Ok(img) => {
                let config = img.config.unwrap_or_default();
                Ok(Some(ImageFacts {
                    id: img.id.unwrap_or_default(),
                    layers: img.root_fs.and_then(|r| r.layers).unwrap_or_default(),
                    labels: config.labels.unwrap_or_default().into_iter().collect(),
                    env: config.env.unwrap_or_default(),
                }))
            }
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("inspecting image {tag}")),
        }
    }

    /// The Engine's import, streamed from disk.
    async fn import(&self, rootfs: &Path, repo: &str, tag: &str) -> Result<()> {
        let file = tokio::fs::File::open(rootfs)
            .await
            .with_context(|| format!("opening rootfs {}", rootfs.display()))?;
        let body = bollard::body_try_stream(ReaderStream::with_capacity(file, 1 << 20));
        let options = CreateImageOptionsBuilder::default()
            .from_src("-")
            .repo(repo)
            .tag(tag)
            .build();
        let latest = format!("{repo}:latest");
        let latest_before = self.image(&latest).await?.map(|i| i.id);
        let mut stream = self.docker.create_image(Some(options), Some(body), None);
        let mut id = None;
        while let Some(info) = stream.next().await {
            let info =
                info.with_context(|| format!("importing {} as {repo}:{tag}", rootfs.display()))?;
            id = info.status.filter(|s| s.starts_with("sha256:")).or(id);
        }
        // Podman files an import as `repo:latest` whatever tag was asked for: the tag is set on the
        // ID the import reports, and the `latest` the import took is given back (taken off, or set
        // again on the image it named before).
        let wanted = format!("{repo}:{tag}");
        if let Some(id) = id {
            let tags = self.repo_tags(&id).await?.unwrap_or_default();
            if !tags.contains(&wanted) {
                self.tag(&id, &wanted).await?;
                if tag != "latest" && tags.contains(&latest) {
                    match latest_before {
                        None => self.remove_tag(&latest).await?,
                        // It named another image before: it goes back there.
                        Some(before) if before != id => self.tag(&before, &latest).await?,
                        Some(_) => {}
                    }
                }
            }
        }
        ensure!(
            self.image(&wanted).await?.is_some(),
            "the Engine imported {} but holds no image {wanted} after it",
            rootfs.display()
        );
        Ok(())
    }

    /// The classic builder, from a context tar on disk, with no network. The images the build
    /// leaves untagged (the ends of its other stages, a failed build's last step) are removed once
    /// it ends, whatever its outcome (see `stages.rs`), unless `spec` keeps them.
    async fn build(&self, spec: &BuildSpec, mut log: impl FnMut(&str) + Send) -> Result<()> {
        // What the Engine held before is never removed, whatever the build's output names (a
        // step of an archive's recipe may print `---> <id>` of its own).
        let mut stages = stages::Stages::new(self.all_images().await?.into_keys().collect());
        self.build_begins();
        let result = self
            .run_build(spec, |said| {
                said.lines().for_each(|line| stages.read(line));
                log(said);
            })
            .await;
        self.build_ends(spec, stages).await;
        result
    }

    /// Through a created, never started, container. A symbolic link is followed (a Debian
    /// runtime's `/usr/bin/ruby` → `ruby3.1`), up to [`LINK_HOPS`] links, within the image.
    async fn read_file(&self, image: &str, path: &str) -> Result<Vec<u8>> {
        let container = self.create_unstarted(image).await?;
        let result = self.read_following_links(container.id(), path).await;
        container.remove().await;
        result.with_context(|| format!("reading {path} from image {image}"))
    }

    /// A container export, streamed, through a created and never started container.
    async fn export_filesystem(&self, image: &str, out: &Path) -> Result<()> {
        let container = self.create_unstarted(image).await?;
        let stream = self.docker.export_container(container.id());
        let result = write_stream(stream, out).await;
        container.remove().await;
        result.with_context(|| format!("exporting the filesystem of image {image}"))
    }

    async fn output(&self, image: &str, cmd: &[&str], role: &str) -> Result<String> {
        Containers::output(self, image, cmd, role).await
    }
}

impl Engine {
    /// The Engine's names for images as the kit writes them: Podman's with their registry taken
    /// off, the Docker Engine's as they are (there `localhost/…` is another repository).
    fn local_names(&self, tags: Vec<String>) -> Vec<String> {
        match self.podman {
            true => tags.iter().map(|t| local_name(t)).collect(),
            false => tags,
        }
    }

    /// The Engine's build of `spec`, every line it prints given to `log`.
    async fn run_build(&self, spec: &BuildSpec, mut log: impl FnMut(&str)) -> Result<()> {
        let BuildSpec {
            context,
            tag,
            buildargs,
            labels,
            no_cache,
            keep_stages: _,
            cpu_shares,
        } = spec;
        let file = tokio::fs::File::open(context)
            .await
            .with_context(|| format!("opening build context {}", context.display()))?;
        let body = bollard::body_try_stream(ReaderStream::with_capacity(file, 1 << 20));
        let buildargs: HashMap<String, String> = buildargs.clone().into_iter().collect();
        let labels: HashMap<String, String> = labels.clone().into_iter().collect();
        let mut options = BuildImageOptionsBuilder::default();
        // Podman refuses a CPU setting where the cgroup controller is not delegated to it (rootless
        // on cgroup v2): its builds keep their weight.
        if let Some(shares) = cpu_shares.filter(|_| !self.podman) {
            options = options.cpushares(shares);
        }
        let options = options
            .dockerfile("Dockerfile")
            .t(tag)
            .rm(true)
            .forcerm(true)
            .nocache(*no_cache)
            .networkmode("none")
            .buildargs(&buildargs)
            .labels(&labels)
            .version(BuilderVersion::BuilderV1)
            .build();
        let mut stream = self.docker.build_image(options, None, Some(body));
        while let Some(item) = stream.next().await {
            let info = match item {
                Ok(info) => info,
                // How the Engine ends a build whose step failed: the image's fault, not the Engine's.
                Err(BollardError::DockerStreamError { error }) => {
                    let tag = tag.clone();
                    return Err(super::BuildFailed {
                        tag,
                        message: error,
                    }
                    .into());
                }
                Err(e) => return Err(e).with_context(|| format!("building {tag}")),
            };
            if let Some(message) = info.error_detail.and_then(|d| d.message) {
                let tag = tag.clone();
                return Err(super::BuildFailed { tag, message }.into());
            }
            if let Some(line) = info.stream {
                log(line.trim_end());
            }
        }
        Ok(())
    }

    /// A container from `image` that is created and never started, to read its filesystem.
    async fn create_unstarted(&self, image: &str) -> Result<super::ContainerGuard<Engine>> {
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            cmd: Some(vec!["/nonexistent".into()]),
            network_disabled: Some(true),
            ..Default::default()
        };
        self.create(body).await
    }

    async fn read_following_links(&self, id: &str, path: &str) -> Result<Vec<u8>> {
        let mut at = path.to_string();
        for _ in 0..=LINK_HOPS {
            match first_entry(&self.download(id, &at).await?)? {
                Entry::File(data) => return Ok(data),
                Entry::Link(target) => at = link_target(&at, &target),
            }
        }
        bail!("more than {LINK_HOPS} symbolic links from {path} (the last one names {at})")
    }

    async fn download(&self, id: &str, path: &str) -> Result<Vec<u8>> {
        let options = DownloadFromContainerOptionsBuilder::default()
            .path(path)
            .build();
        let chunks: Vec<bytes::Bytes> = self
            .docker
            .download_from_container(id, Some(options))
            .try_collect()
            .await?;
        Ok(chunks.concat())
    }

    /// Every tag starting with `repo_prefix/` (e.g. `parkbench/`), as the kit writes it.
    pub async fn image_tags(&self, repo_prefix: &str) -> Result<Vec<String>> {
        Ok(self.local_names(self.engine_tags(repo_prefix).await?))
    }

    /// Every tag starting with `repo_prefix/`, as the Engine names it (on Podman, with a registry).
    async fn engine_tags(&self, repo_prefix: &str) -> Result<Vec<String>> {
        let filters = HashMap::from([("reference".to_string(), vec![format!("{repo_prefix}/*")])]);
        let options = ListImagesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let images = self
            .docker
            .list_images(Some(options))
            .await
            .context("listing images")?;
        Ok(images.into_iter().flat_map(|i| i.repo_tags).collect())
    }

    /// Removes every image whose tags start with `repo_prefix/` (e.g. `parkbench/`); returns the tags removed.
    pub async fn remove_images(&self, repo_prefix: &str) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        // Removed by the Engine's own names: on Podman a name without its registry could stand for
        // another image.
        for tag in self.engine_tags(repo_prefix).await? {
            let options = RemoveImageOptionsBuilder::default().force(true).build();
            self.docker
                .remove_image(&tag, Some(options), None)
                .await
                .with_context(|| format!("removing image {tag}"))?;
            removed.push(tag);
        }
        let removed = self.local_names(removed);
        // Untagged images left by builds (multi-stage build stages, images a rebuild replaced) carry
        // the parkbench.image label inherited from our toolchain images.
        let filters = HashMap::from([
            ("dangling".to_string(), vec!["true".to_string()]),
            ("label".to_string(), vec!["parkbench.image".to_string()]),
        ]);
        let options = PruneImagesOptionsBuilder::default()
            .filters(&filters)
            .build();
        self.docker
            .prune_images(Some(options))
            .await
            .context("pruning untagged build images")?;
        Ok(removed)
    }

    /// Loads images from a file in the Engine's save format (as [`Engine::export_image`] writes),
    /// streamed; the tags inside the file are kept. Returns what the Engine says it loaded: a tag
    /// (`Loaded image: <tag>`) or an ID (`Loaded image ID: sha256:…`) per image.
    pub async fn load_image(&self, file: &Path) -> Result<Vec<String>> {
        let data = tokio::fs::File::open(file)
            .await
            .with_context(|| format!("opening {}", file.display()))?;
        let body = bollard::body_try_stream(ReaderStream::with_capacity(data, 1 << 20));
        let options = ImportImageOptionsBuilder::default().quiet(true).build();
        let mut stream = self.docker.import_image(options, body, None);
        let mut loaded = Vec::new();
        while let Some(info) = stream.next().await {
            let info = info.with_context(|| format!("loading images from {}", file.display()))?;
            let said = info.stream.unwrap_or_default();
            for line in said.lines() {
                let named = line
                    .strip_prefix("Loaded image ID: ")
                    .or_else(|| line.strip_prefix("Loaded image: "));
                loaded.extend(named.map(|n| n.trim().to_string()));
            }
        }
        Ok(self.local_names(loaded))
    }

    /// Every image the Engine lists (what loads and builds make, not their intermediate layers):
    /// its ID → its tags.
    pub async fn image_list(&self) -> Result<BTreeMap<String, Vec<String>>> {
        let images = self
            .docker
            .list_images(None::<bollard::query_parameters::ListImagesOptions>)
            .await
            .context("listing images")?;
        Ok(images
            .into_iter()
            .map(|i| {
                let tags = self.local_names(i.repo_tags).into_iter();
                // An untagged image is listed with this placeholder.
                let tags = tags.filter(|t| t != "<none>:<none>");
                (i.id, tags.collect())
            })
            .collect())
    }

    /// Sets `tag` (`repo:tag`) on the image `image` (a tag or an ID), moving it off any other image.
    pub async fn tag(&self, image: &str, tag: &str) -> Result<()> {
        let (repo, version) = tag
            .rsplit_once(':')
            .with_context(|| format!("tag {tag} has no `:version`"))?;
        let options = TagImageOptionsBuilder::default()
            .repo(repo)
            .tag(version)
            .build();
        self.docker
            .tag_image(image, Some(options))
            .await
            .with_context(|| format!("tagging image {image} as {tag}"))
    }

    /// Removes one tag (and the image, when no other tag names it).
    pub async fn remove_tag(&self, tag: &str) -> Result<()> {
        let options = RemoveImageOptionsBuilder::default().force(true).build();
        self.docker
            .remove_image(tag, Some(options), None)
            .await
            .with_context(|| format!("removing image {tag}"))?;
        Ok(())
    }

    /// Every tag naming the image `reference` (a tag, or an ID `sha256:…`); `None` when there is no
    /// such image.
    pub async fn repo_tags(&self, reference: &str) -> Result<Option<Vec<String>>> {
        match self.docker.inspect_image(reference).await {
            Ok(img) => Ok(Some(self.local_names(img.repo_tags.unwrap_or_default()))),
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(e) => Err(e).with_context(|| format!("inspecting image {reference}")),
        }
    }

    /// Removes `reference`: a tag is untagged (its image goes with its last tag, `force`d even when
    /// a stopped container holds it); an ID goes only when no tag names it and no container holds
    /// it. False when there was no such image.
    async fn remove_reference(&self, reference: &str, force: bool) -> Result<bool> {
        let options = RemoveImageOptionsBuilder::default().force(force).build();
        match self
            .docker
            .remove_image(reference, Some(options), None)
            .await
        {
            Ok(_) => Ok(true),
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(false),
            Err(e) => Err(e).with_context(|| format!("removing image {reference}")),
        }
    }

    /// Exports an image (the Engine's save format) to a file, streamed.
    pub async fn export_image(&self, tag: &str, out: &Path) -> Result<()> {
        let stream = self.docker.export_image(tag);
        write_stream(stream, out)
            .await
            .with_context(|| format!("exporting image {tag}"))
    }
}

/// Writes a byte stream from the Engine to `out` through `out.part` and a rename.
async fn write_stream(
    mut stream: impl futures_util::Stream<Item = Result<bytes::Bytes, bollard::errors::Error>> + Unpin,
    out: &Path,
) -> Result<()> {
    use tokio::io::AsyncWriteExt;
    let tmp = out.with_extension("part");
    let mut file = tokio::fs::File::create(&tmp)
        .await
        .with_context(|| format!("creating {}", tmp.display()))?;
    while let Some(chunk) = stream.next().await {
        file.write_all(&chunk?)
            .await
            .with_context(|| format!("writing {}", tmp.display()))?;
    }
    file.sync_all().await?;
    tokio::fs::rename(&tmp, out)
        .await
        .with_context(|| format!("renaming to {}", out.display()))?;
    Ok(())
}

/// The most symbolic links [`Images::read_file`] follows from one path.
const LINK_HOPS: usize = 8;

/// What the Engine's archive endpoint answers for one path (a tar of it).
enum Entry {
    File(Vec<u8>),
    /// A symbolic link, and what it names.
    Link(String),
}

/// The first regular file or symbolic link in a tar.
fn first_entry(tar: &[u8]) -> Result<Entry> {
    let mut archive = tar::Archive::new(tar);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let kind = entry.header().entry_type();
        if kind.is_file() {
            let mut data = Vec::new();
            entry.read_to_end(&mut data)?;
            return Ok(Entry::File(data));
        }
        if kind.is_symlink() {
            let target = entry
                .link_name()?
                .context("a symbolic link naming nothing")?;
            return Ok(Entry::Link(target.to_string_lossy().into_owned()));
        }
    }
    bail!("no regular file in the Engine's answer (is the path a directory?)")
}

/// The path a symbolic link at `link` naming `target` leads to: `target` itself when absolute,
/// else beside the link; `.` and `..` resolved (never above `/`).
fn link_target(link: &str, target: &str) -> String {
    let base = match target.starts_with('/') {
        true => String::new(),
        false => link.rsplit_once('/').map_or("", |(dir, _)| dir).to_string(),
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(target.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests;
