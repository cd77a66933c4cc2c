//! Images loaded from files the kit did not write (an archive's), held by an [`ImageGuard`] that
//! removes them again on every path.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use tokio::task::JoinHandle;

use crate::engine::Engine;

/// Images loaded from files the kit did not write (an archive's), each under a tag the kit chose.
/// They are removed again by [`ImageGuard::remove`], or, when the guard is dropped (an error,
/// Ctrl-C), by a task that [`crate::engine::settle`] waits for; [`ImageGuard::keep`] leaves them.
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
                self.engine.tag(owner, reference).await?;
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
                crate::engine::guard::defer(task);
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
pub(super) struct Change {
    /// (a new image, its tags now)
    images: Vec<(String, Vec<String>)>,
    /// (the image a tag names now, the tag)
    tags: Vec<(String, String)>,
}

impl Change {
    pub(super) fn between(
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
    pub(super) fn split(self, reported: &[String], id: &str) -> (Vec<String>, Vec<String>) {
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
