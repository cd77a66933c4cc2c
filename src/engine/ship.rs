//! An image from one Engine to another without a registry: this Engine's save stream fed straight
//! into the other's load, a few MiB in flight at a time, the image ID checked on arrival.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, anyhow, ensure};
use bollard::query_parameters::ImportImageOptionsBuilder;
use futures_util::StreamExt;

use super::{Engine, Images};

/// Chunks of the save stream held between the two Engines at most (the Engine sends chunks of
/// up to a few hundred KiB), so memory stays small whatever the image's size.
const IN_FLIGHT: usize = 16;

impl Engine {
    /// The ID (`sha256:…`) of the image behind a tag or an ID; `None` when there is no such image.
    pub async fn image_id(&self, reference: &str) -> Result<Option<String>> {
        Ok(self.image(reference).await?.map(|facts| facts.id))
    }

    /// Copies the image `id` (`sha256:…`) from this Engine to `to`: this Engine's save of the ID
    /// (which carries no tag) streamed into `to`'s load. Returns the bytes sent. Fails unless `to`
    /// then holds an image with exactly this ID. The copy arrives untagged: the caller tags it.
    pub async fn copy_image(&self, id: &str, to: &Engine) -> Result<u64> {
        let sent = AtomicU64::new(0);
        let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(IN_FLIGHT);
        let export = async {
            let mut stream = self.docker.export_image(id);
            let mut failed = None;
            while let Some(chunk) = stream.next().await {
                let chunk = match chunk {
                    Ok(chunk) => chunk,
                    Err(e) => {
                        // The load must not take a cut stream for a whole one.
                        let cut = std::io::Error::other(format!("the save stopped: {e}"));
                        let _ = tx.send(Err(cut)).await;
                        failed = Some(anyhow!(e).context(format!("saving image {id}")));
                        break;
                    }
                };
                sent.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                if tx.send(Ok(chunk)).await.is_err() {
                    break; // the load ended early; its error says why
                }
            }
            drop(tx);
            failed.map_or(Ok(()), Err)
        };
        let body =
            bollard::body_try_stream(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
        let options = ImportImageOptionsBuilder::default().quiet(true).build();
        let load = async {
            let mut stream = to.docker.import_image(options, body, None);
            while let Some(info) = stream.next().await {
                info.with_context(|| format!("loading image {id}"))?;
            }
            Ok::<(), anyhow::Error>(())
        };
        let (exported, loaded) = tokio::join!(export, load);
        exported?;
        loaded?;
        let arrived = to.image_id(id).await?;
        ensure!(
            arrived.as_deref() == Some(id),
            "after loading image {id} the receiving Engine holds {arrived:?} under that ID: the \
             image did not arrive intact"
        );
        Ok(sent.load(Ordering::Relaxed))
    }
}
