//! Images through the Engine: inspect, import, build, read files out of, remove, export and load;
//! and images loaded from files the kit did not write, held by an [`ImageGuard`] that removes them
//! again on every path.

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
use tokio::task::JoinHandle;
use tokio_util::io::ReaderStream;

use super::{BuildSpec, Engine, ImageFacts};

pub(super) mod stages;

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

impl Engine {
    /// The Engine's names for images as the kit writes them: Podman's with their registry taken
    /// off, the Docker Engine's as they are (there `localhost/…` is another repository).
    fn local_names(&self, tags: Vec<String>) -> Vec<String> {
        match self.podman {
            true => tags.iter().map(|t| local_name(t)).collect(),
            false => tags,
        }
    }

    /// The image behind a tag, or `None` when there is no such tag.
    pub async fn image(&self, tag: &str) -> Result<Option<ImageFacts>> {
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

    /// Imports a root filesystem tar as `repo:tag` (the Engine's import, streamed from disk).
    pub async fn import(&self, rootfs: &Path, repo: &str, tag: &str) -> Result<()> {
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
                self.set_tag(&id, &wanted).await?;
                if tag != "latest" && tags.contains(&latest) {
                    match latest_before {
                        None => self.remove_tag(&latest).await?,
                        // It named another image before: it goes back there.
                        Some(before) if before != id => self.set_tag(&before, &latest).await?,
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

    /// Builds an image with the classic builder from a context tar on disk, with no network.
    /// `log` receives every line the build prints. The images the build leaves untagged (the ends
    /// of its other stages, a failed build's last step) are removed once it ends, whatever its
    /// outcome (see `stages.rs`), unless `spec` keeps them.
    pub async fn build(&self, spec: &BuildSpec, mut log: impl FnMut(&str)) -> Result<()> {
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

    /// The Engine's build of `spec`, every line it prints given to `log`.
    async fn run_build(&self, spec: &BuildSpec, mut log: impl FnMut(&str)) -> Result<()> {
        let BuildSpec {
            context,
            tag,
            buildargs,
            labels,
            no_cache,
            keep_stages: _,
        } = spec;
        let file = tokio::fs::File::open(context)
            .await
            .with_context(|| format!("opening build context {}", context.display()))?;
        let body = bollard::body_try_stream(ReaderStream::with_capacity(file, 1 << 20));
        let buildargs: HashMap<String, String> = buildargs.clone().into_iter().collect();
        let labels: HashMap<String, String> = labels.clone().into_iter().collect();
        let options = BuildImageOptionsBuilder::default()
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

    /// Reads one regular file out of an image (through a created, never started, container).
    /// A symbolic link is followed (a Debian runtime's `/usr/bin/ruby` → `ruby3.1`), up to
    /// [`LINK_HOPS`] links, within the image.
    pub async fn read_file(&self, image: &str, path: &str) -> Result<Vec<u8>> {
        let container = self.create_unstarted(image).await?;
        let result = self.read_following_links(container.id(), path).await;
        container.remove().await;
        result.with_context(|| format!("reading {path} from image {image}"))
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

    /// Every tag of every image the Engine holds.
    pub async fn all_tags(&self) -> Result<Vec<String>> {
        let images = self
            .docker
            .list_images(None::<bollard::query_parameters::ListImagesOptions>)
            .await
            .context("listing images")?;
        let tags = images
            .into_iter()
            .flat_map(|i| self.local_names(i.repo_tags));
        // An untagged image is listed with this placeholder.
        Ok(tags.filter(|t| t != "<none>:<none>").collect())
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
                let tags = tags.filter(|t| t != "<none>:<none>");
                (i.id, tags.collect())
            })
            .collect())
    }

    /// Sets `tag` (`repository:tag`) on the image `id`.
    async fn set_tag(&self, id: &str, tag: &str) -> Result<()> {
        let (repo, version) = tag.rsplit_once(':').unwrap_or((tag, "latest"));
        let options = TagImageOptionsBuilder::default()
            .repo(repo)
            .tag(version)
            .build();
        self.docker
            .tag_image(id, Some(options))
            .await
            .with_context(|| format!("setting the tag {tag} on image {id} again"))
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

    /// Writes the flattened filesystem of `image` (a container export: one tar, no layers) to
    /// `out`, streamed, through a created and never started container.
    pub async fn export_filesystem(&self, image: &str, out: &Path) -> Result<()> {
        let container = self.create_unstarted(image).await?;
        let stream = self.docker.export_container(container.id());
        let result = write_stream(stream, out).await;
        container.remove().await;
        result.with_context(|| format!("exporting the filesystem of image {image}"))
    }

    /// Exports an image (the Engine's save format) to a file, streamed.
    pub async fn export_image(&self, tag: &str, out: &Path) -> Result<()> {
        let stream = self.docker.export_image(tag);
        write_stream(stream, out)
            .await
            .with_context(|| format!("exporting image {tag}"))
    }
}

/// Images loaded from files the kit did not write (an archive's), each under a tag the kit chose.
/// They are removed again by [`ImageGuard::remove`], or, when the guard is dropped (an error,
/// Ctrl-C), by a task that [`super::settle`] waits for; [`ImageGuard::keep`] leaves them.
pub struct ImageGuard {
    engine: Engine,
    loaded: Vec<Loaded>,
    /// A load under way: a removal waits for it, since the Engine may still set its tag.
    loading: Option<JoinHandle<Result<Vec<String>>>>,
}

/// One loaded image: the tags to remove, its ID, and whether the Engine held it before the load
/// (then only the tags go).
struct Loaded {
    tags: Vec<String>,
    id: String,
    was_there: bool,
}

impl ImageGuard {
    /// A guard that holds no image yet.
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            loaded: Vec::new(),
            loading: None,
        }
    }

    /// Loads `file`, an image file in the Engine's save format that names `tag` alone and holds
    /// the image `id` (`sha256:…`). The Engine's whole list of images and tags is compared before
    /// and after: returns what the load set besides `tag` on `id` (other tags, other images, tags
    /// moved from another image), each removed again at once, with force (a moved tag is set back
    /// on its image). An image or tag that appeared while loading but that the Engine does not
    /// report loading (another client of the Engine built it) is named in a warning and left alone.
    pub async fn load(&mut self, file: &Path, tag: &str, id: &str) -> Result<Vec<String>> {
        let before = self.engine.image_list().await?;
        // Held before the load starts, so that a load cut short is removed too.
        self.loaded.push(Loaded {
            tags: vec![tag.to_string()],
            id: id.to_string(),
            was_there: before.contains_key(id),
        });
        let (engine, path) = (self.engine.clone(), file.to_owned());
        let task = tokio::spawn(async move { engine.load_image(&path).await });
        let ended = self.loading.insert(task).await;
        self.loading = None;
        let reported = ended.context("the load of an image stopped")??;
        let after = self.engine.image_list().await?;
        let shown = file.display();
        let tags = after
            .get(id)
            .with_context(|| format!("{shown}: the Engine holds no image {id} after loading it"))?;
        ensure!(
            tags.iter().any(|t| t == tag),
            "{shown}: loading it did not set {tag} on the image {id}"
        );
        let change = Change::between(&before, &after, id, tag);
        let (made, others) = change.split(&reported, id);
        if !others.is_empty() {
            eprintln!(
                "warning: {} appeared in the Engine while {shown} was loaded, but the Engine did \
                 not report loading them (another client of the Engine made them): left alone",
                others.join(", ")
            );
        }
        self.undo(&made, &before).await?;
        Ok(made)
    }

    /// Removes, with force, each image and tag in `made` (an ID or a tag); a tag that named
    /// another image `before` is set back on it.
    async fn undo(
        &mut self,
        made: &[String],
        before: &BTreeMap<String, Vec<String>>,
    ) -> Result<()> {
        // Held until removed, so that a failed removal is tried again when the guard goes.
        let held = &mut self.loaded.last_mut().expect("pushed above").tags;
        held.extend(made.iter().cloned());
        for reference in made {
            self.engine.remove_reference(reference, true).await?;
            held.retain(|h| h != reference);
            let owner = before.iter().find(|(_, tags)| tags.contains(reference));
            if let Some((owner, _)) = owner {
                self.engine.set_tag(owner, reference).await?;
            }
        }
        Ok(())
    }

    /// Every tag the guard holds, in the order loaded.
    pub fn tags(&self) -> Vec<String> {
        self.loaded.iter().flat_map(|l| l.tags.clone()).collect()
    }

    /// Leaves the images in the Engine; returns their tags.
    pub fn keep(mut self) -> Vec<String> {
        let tags = self.tags();
        self.loaded.clear();
        tags
    }

    /// Removes the images now; a failure is reported with the tag or ID, never fatal.
    pub async fn remove(mut self) {
        let loaded = std::mem::take(&mut self.loaded);
        clean(self.engine.clone(), self.loading.take(), loaded).await;
    }
}

impl Drop for ImageGuard {
    fn drop(&mut self) {
        if self.loaded.is_empty() && self.loading.is_none() {
            return;
        }
        let tags = self.tags().join(", ");
        let (loading, loaded) = (self.loading.take(), std::mem::take(&mut self.loaded));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let task = runtime.spawn(clean(self.engine.clone(), loading, loaded));
                super::guard::defer(task);
            }
            Err(_) => eprintln!(
                "warning: the images {tags} were left behind (no runtime to remove them); remove \
                 them with the Engine's tools"
            ),
        }
    }
}

/// What a load changed in the Engine's list: images that were not there, and tags that were not
/// there or named another image, besides the one tag on the one image expected.
struct Change {
    /// (a new image, its tags now)
    images: Vec<(String, Vec<String>)>,
    /// (the image a tag names now, the tag)
    tags: Vec<(String, String)>,
}

impl Change {
    fn between(
        before: &BTreeMap<String, Vec<String>>,
        after: &BTreeMap<String, Vec<String>>,
        id: &str,
        tag: &str,
    ) -> Change {
        let images = after
            .iter()
            .filter(|(i, _)| *i != id && !before.contains_key(*i))
            .map(|(i, tags)| (i.clone(), tags.clone()))
            .collect();
        let tags = after
            .iter()
            .flat_map(|(image, tags)| tags.iter().map(move |t| (image, t)))
            .filter(|(image, t)| !(*image == id && *t == tag))
            .filter(|(image, t)| !before.get(*image).is_some_and(|old| old.contains(t)))
            .map(|(image, t)| (image.clone(), t.clone()))
            .collect();
        Change { images, tags }
    }

    /// What of the change the load made (it reported it, or it is a tag on the loaded image `id`),
    /// and the rest.
    fn split(self, reported: &[String], id: &str) -> (Vec<String>, Vec<String>) {
        let mut made = Vec::new();
        let mut others = Vec::new();
        for (image, tags) in self.images {
            match reported.contains(&image) || tags.iter().any(|t| reported.contains(t)) {
                true => made.push(image),
                false => others.push(image),
            }
        }
        // Tags first: removing an image first would take its tags with it, unnamed.
        for (image, tag) in self.tags.into_iter().rev() {
            match reported.contains(&tag) || image == id {
                true => made.insert(0, tag),
                false => others.push(tag),
            }
        }
        (made, others)
    }
}

/// Waits for a load under way, then removes every tag of `loaded`, and each image the load
/// brought once no tag names it.
async fn clean(
    engine: Engine,
    loading: Option<JoinHandle<Result<Vec<String>>>>,
    loaded: Vec<Loaded>,
) {
    if let Some(task) = loading {
        // Its outcome was the command's to report; here it only has to be over.
        let _ = task.await;
    }
    for image in loaded {
        for tag in &image.tags {
            if let Err(e) = engine.remove_reference(tag, true).await {
                eprintln!("warning: could not remove image {tag}: {e:#}");
            }
        }
        if !image.was_there {
            remove_when_unused(&engine, &image.id).await;
        }
    }
}

/// Removes the image `id`, with force, once nothing holds it: a running container of it (its guard
/// dropped beside this one) keeps it for a moment after its last tag is gone.
async fn remove_when_unused(engine: &Engine, id: &str) {
    const TRIES: u32 = 10;
    for attempt in 1..=TRIES {
        match engine.remove_reference(id, true).await {
            Ok(_) => return,
            Err(e) if attempt == TRIES => eprintln!(
                "warning: could not remove image {id}: {e:#}; remove it with the Engine's tools"
            ),
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(300)).await,
        }
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

/// The most symbolic links [`Engine::read_file`] follows from one path.
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
