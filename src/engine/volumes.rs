//! Named volumes as markers (a run's lease on a host), held by a [`VolumeGuard`] that removes its
//! volume on every path; and the containers running on an Engine, for telling a busy host.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context, Result};
use bollard::errors::Error as BollardError;
use bollard::models::VolumeCreateRequest;
use bollard::query_parameters::{
    ListContainersOptionsBuilder, ListVolumesOptionsBuilder, RemoveVolumeOptionsBuilder,
};

use super::Engine;

/// A volume as the Engine lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeFacts {
    /// The volume's name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

/// A container running on an Engine.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningContainer {
    /// Its ID.
    pub id: String,
    /// Its name, without the leading `/`.
    pub name: String,
    /// The image it runs, as the Engine names it.
    pub image: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

impl Engine {
    /// Creates the volume `name` with `labels`; one that exists already is kept as it is.
    pub async fn create_volume(&self, name: &str, labels: &BTreeMap<String, String>) -> Result<()> {
        let request = VolumeCreateRequest {
            name: Some(name.to_string()),
            labels: Some(labels.clone().into_iter().collect()),
            ..Default::default()
        };
        self.docker
            .create_volume(request)
            .await
            .with_context(|| format!("creating volume {name}"))?;
        Ok(())
    }

    /// Every volume carrying the label `label` (whatever its value), by name.
    pub async fn volumes_with_label(&self, label: &str) -> Result<Vec<VolumeFacts>> {
        let filters = HashMap::from([("label".to_string(), vec![label.to_string()])]);
        let options = ListVolumesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_volumes(Some(options))
            .await
            .context("listing volumes")?;
        let mut volumes: Vec<VolumeFacts> = (list.volumes.unwrap_or_default().into_iter())
            .map(|v| VolumeFacts {
                name: v.name,
                labels: v.labels.into_iter().collect(),
            })
            .collect();
        volumes.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(volumes)
    }

    /// Removes the volume `name`; one already gone is not an error.
    pub async fn remove_volume(&self, name: &str) -> Result<()> {
        let options = RemoveVolumeOptionsBuilder::default().force(true).build();
        match self.docker.remove_volume(name, Some(options)).await {
            Ok(())
            | Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(e) => Err(e).with_context(|| format!("removing volume {name}")),
        }
    }

    /// Every running container, in the Engine's order.
    pub async fn running_containers(&self) -> Result<Vec<RunningContainer>> {
        let options = ListContainersOptionsBuilder::default().all(false).build();
        let list = self
            .docker
            .list_containers(Some(options))
            .await
            .context("listing running containers")?;
        Ok(list
            .into_iter()
            .map(|c| RunningContainer {
                id: c.id.unwrap_or_default(),
                name: (c.names.unwrap_or_default().first())
                    .map(|n| n.trim_start_matches('/').to_string())
                    .unwrap_or_default(),
                image: c.image.unwrap_or_default(),
                labels: c.labels.unwrap_or_default().into_iter().collect(),
            })
            .collect())
    }
}

/// Owns one volume until it is removed: by [`VolumeGuard::remove`], or, when dropped (an error,
/// Ctrl-C), by a task that [`super::settle`] waits for. A failed removal is reported with the
/// volume's name, never swallowed.
pub struct VolumeGuard {
    engine: Engine,
    name: Option<String>,
}

impl VolumeGuard {
    /// Takes charge of the existing volume `name` on `engine`.
    pub fn new(engine: Engine, name: String) -> Self {
        Self {
            engine,
            name: Some(name),
        }
    }

    /// The volume's name.
    pub fn name(&self) -> &str {
        self.name
            .as_deref()
            .expect("the name is taken only on removal")
    }

    /// Removes the volume now.
    pub async fn remove(mut self) -> Result<()> {
        match self.name.take() {
            Some(name) => self.engine.remove_volume(&name).await,
            None => Ok(()),
        }
    }
}

impl Drop for VolumeGuard {
    fn drop(&mut self) {
        let Some(name) = self.name.take() else { return };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let engine = self.engine.clone();
                let task = runtime.spawn(async move {
                    if let Err(e) = engine.remove_volume(&name).await {
                        eprintln!(
                            "warning: could not remove volume {name}: {e:#}; remove it with the \
                             Engine's tools"
                        );
                    }
                });
                super::guard::defer(task);
            }
            Err(_) => eprintln!(
                "warning: volume {name} was left behind (no runtime to remove it); remove it \
                 with the Engine's tools"
            ),
        }
    }
}
