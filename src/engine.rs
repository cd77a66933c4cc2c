//! The one module that talks to the Docker Engine (through bollard). Images are imported, built and
//! inspected here; containers are created, run, read and removed here — on every path, Ctrl-C included.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, BuilderVersion, CreateImageOptionsBuilder,
    DownloadFromContainerOptionsBuilder, KillContainerOptionsBuilder, ListContainersOptionsBuilder,
    ListImagesOptionsBuilder, LogsOptionsBuilder, PruneImagesOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use tokio_util::io::ReaderStream;
use tokio_util::sync::CancellationToken;

/// A connection to the Docker Engine.
#[derive(Clone)]
pub struct Engine {
    docker: Docker,
}

/// What the Engine says about itself (part of the environment record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineFacts {
    /// Engine version (e.g. `20.10.24+dfsg1`).
    pub version: String,
    /// Engine API version.
    pub api_version: String,
    /// Kernel release as the Engine reports it.
    pub kernel: String,
    /// Host operating system as the Engine reports it.
    pub operating_system: String,
    /// cgroup version (`1` or `2`).
    pub cgroup_version: String,
    /// cgroup driver (`cgroupfs` or `systemd`).
    pub cgroup_driver: String,
    /// Security options (e.g. `name=seccomp,profile=default`).
    pub security_options: Vec<String>,
    /// Storage driver (e.g. `overlay2`).
    pub storage_driver: String,
    /// Container runtimes, sorted, and the default one.
    pub runtimes: Vec<String>,
    /// Default runtime.
    pub default_runtime: String,
    /// Logical CPUs the Engine sees.
    pub ncpu: i64,
    /// Memory the Engine sees, bytes.
    pub mem_total_bytes: i64,
    /// The Engine's data directory (where images live).
    pub root_dir: String,
}

/// An image as the Engine sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageFacts {
    /// Image ID, `sha256:…`.
    pub id: String,
    /// Layer diff-IDs, `sha256:…`, bottom first.
    pub layers: Vec<String>,
    /// Image labels.
    pub labels: BTreeMap<String, String>,
}

/// A container to run to completion.
#[derive(Debug, Clone)]
pub struct ContainerSpec {
    pub image: String,
    pub cmd: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub labels: BTreeMap<String, String>,
    /// Killed (and reported as timed out) after this long.
    pub timeout: Duration,
}

/// How a container ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerOutcome {
    pub stdout: String,
    pub stderr: String,
    /// Exit code, when the container exited by itself.
    pub exit_code: Option<i64>,
    pub oom_killed: bool,
    pub timed_out: bool,
    /// The run was interrupted (Ctrl-C); the container was removed.
    pub interrupted: bool,
    /// From create to removal.
    pub elapsed: Duration,
}

impl Engine {
    /// Connects through DOCKER_HOST or the default socket and checks the Engine answers.
    pub async fn connect() -> Result<Self> {
        let host =
            std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into());
        let unreachable = |e: &dyn std::fmt::Display| {
            anyhow!(
                "the Docker Engine at {host} does not answer ({e}); start it (e.g. `systemctl start docker`) \
                 or point DOCKER_HOST at it, then run `parkbench doctor`"
            )
        };
        let docker = Docker::connect_with_defaults().map_err(|e| unreachable(&e))?;
        docker.ping().await.map_err(|e| unreachable(&e))?;
        Ok(Self { docker })
    }

    /// Version, API, cgroups, security and storage facts.
    pub async fn facts(&self) -> Result<EngineFacts> {
        let v = self
            .docker
            .version()
            .await
            .context("asking the Engine for its version")?;
        let i = self
            .docker
            .info()
            .await
            .context("asking the Engine for its info")?;
        let mut runtimes: Vec<String> = i.runtimes.unwrap_or_default().into_keys().collect();
        runtimes.sort();
        Ok(EngineFacts {
            version: v.version.unwrap_or_default(),
            api_version: v.api_version.unwrap_or_default(),
            kernel: i.kernel_version.unwrap_or_default(),
            operating_system: i.operating_system.unwrap_or_default(),
            cgroup_version: i.cgroup_version.map(|c| c.to_string()).unwrap_or_default(),
            cgroup_driver: i.cgroup_driver.map(|c| c.to_string()).unwrap_or_default(),
            security_options: i.security_options.unwrap_or_default(),
            storage_driver: i.driver.unwrap_or_default(),
            runtimes,
            default_runtime: i.default_runtime.unwrap_or_default(),
            ncpu: i.ncpu.unwrap_or_default(),
            mem_total_bytes: i.mem_total.unwrap_or_default(),
            root_dir: i.docker_root_dir.unwrap_or_default(),
        })
    }

    /// The CPUs a container can be pinned to: 0..ncpu as the Engine counts them (containers get no cpuset).
    pub async fn cpus(&self) -> Result<Vec<usize>> {
        let ncpu = self.facts().await?.ncpu;
        Ok((0..ncpu.max(0) as usize).collect())
    }

    /// The image behind a tag, or `None` when there is no such tag.
    pub async fn image(&self, tag: &str) -> Result<Option<ImageFacts>> {
        match self.docker.inspect_image(tag).await {
            Ok(img) => Ok(Some(ImageFacts {
                id: img.id.unwrap_or_default(),
                layers: img.root_fs.and_then(|r| r.layers).unwrap_or_default(),
                labels: img
                    .config
                    .and_then(|c| c.labels)
                    .unwrap_or_default()
                    .into_iter()
                    .collect(),
            })),
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
        let mut stream = self.docker.create_image(Some(options), Some(body), None);
        while let Some(info) = stream.next().await {
            info.with_context(|| format!("importing {} as {repo}:{tag}", rootfs.display()))?;
        }
        Ok(())
    }

    /// Builds an image with the classic builder from a context tar on disk, with no network.
    /// `log` receives every line the build prints.
    pub async fn build(
        &self,
        context: &Path,
        tag: &str,
        buildargs: &BTreeMap<String, String>,
        labels: &BTreeMap<String, String>,
        no_cache: bool,
        mut log: impl FnMut(&str),
    ) -> Result<()> {
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
            .nocache(no_cache)
            .networkmode("none")
            .buildargs(&buildargs)
            .labels(&labels)
            .version(BuilderVersion::BuilderV1)
            .build();
        let mut stream = self.docker.build_image(options, None, Some(body));
        while let Some(item) = stream.next().await {
            let info = item.with_context(|| format!("building {tag}"))?;
            if let Some(err) = info.error_detail.and_then(|d| d.message) {
                bail!("building {tag}: {err}");
            }
            if let Some(line) = info.stream {
                log(line.trim_end());
            }
        }
        Ok(())
    }

    /// Reads one regular file out of an image (through a created, never started, container).
    pub async fn read_file(&self, image: &str, path: &str) -> Result<Vec<u8>> {
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            cmd: Some(vec!["/nonexistent".into()]),
            network_disabled: Some(true),
            ..Default::default()
        };
        let id = self.create(body).await?;
        let result = self.download(&id, path).await;
        self.remove(&id).await;
        let tar = result.with_context(|| format!("reading {path} from image {image}"))?;
        first_file(&tar).with_context(|| format!("reading {path} from image {image}"))
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

    /// Runs a container to completion: start, wait (raced against the timeout and `cancel`), read its
    /// output and OOM state, and remove it — whichever way it ended.
    pub async fn run(
        &self,
        spec: &ContainerSpec,
        cancel: &CancellationToken,
    ) -> Result<ContainerOutcome> {
        let started = Instant::now();
        let id = self.create(create_body(spec)).await?;
        let result = self.run_created(&id, spec, cancel).await;
        self.remove(&id).await;
        let mut outcome = result?;
        outcome.elapsed = started.elapsed();
        Ok(outcome)
    }

    /// Runs a short command in a fresh container from `image` (labelled with `role`) and returns its
    /// trimmed stdout; a non-zero exit is an error carrying its stderr.
    pub async fn output(&self, image: &str, cmd: &[&str], role: &str) -> Result<String> {
        let spec = ContainerSpec {
            image: image.to_string(),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::new(),
            labels: BTreeMap::from([("parkbench.role".to_string(), role.to_string())]),
            timeout: Duration::from_secs(60),
        };
        let out = self.run(&spec, &CancellationToken::new()).await?;
        if out.exit_code != Some(0) {
            bail!(
                "`{}` in {image} failed ({:?}): {}",
                cmd.join(" "),
                out.exit_code,
                out.stderr.trim()
            );
        }
        Ok(out.stdout.trim().to_string())
    }

    async fn run_created(
        &self,
        id: &str,
        spec: &ContainerSpec,
        cancel: &CancellationToken,
    ) -> Result<ContainerOutcome> {
        self.docker
            .start_container(id, None::<bollard::query_parameters::StartContainerOptions>)
            .await
            .with_context(|| format!("starting container {id}"))?;
        let mut outcome = ContainerOutcome {
            stdout: String::new(),
            stderr: String::new(),
            exit_code: None,
            oom_killed: false,
            timed_out: false,
            interrupted: false,
            elapsed: Duration::ZERO,
        };
        tokio::select! {
            code = self.wait(id) => outcome.exit_code = Some(code?),
            () = tokio::time::sleep(spec.timeout) => {
                outcome.timed_out = true;
                self.kill(id).await;
            }
            () = cancel.cancelled() => {
                outcome.interrupted = true;
                return Ok(outcome);
            }
        }
        let inspect = self.docker.inspect_container(id, None).await;
        outcome.oom_killed = inspect
            .ok()
            .and_then(|c| c.state)
            .and_then(|s| s.oom_killed)
            .unwrap_or(false);
        (outcome.stdout, outcome.stderr) = self.logs(id).await?;
        Ok(outcome)
    }

    async fn wait(&self, id: &str) -> Result<i64> {
        let options = WaitContainerOptionsBuilder::default()
            .condition("not-running")
            .build();
        let mut stream = self.docker.wait_container(id, Some(options));
        match stream.next().await {
            Some(Ok(r)) => Ok(r.status_code),
            // bollard reports a non-zero exit as an error; the code is what we want.
            Some(Err(BollardError::DockerContainerWaitError { code, .. })) => Ok(code),
            Some(Err(e)) => Err(e).with_context(|| format!("waiting for container {id}")),
            None => bail!("waiting for container {id}: the Engine closed the stream"),
        }
    }

    async fn logs(&self, id: &str) -> Result<(String, String)> {
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .build();
        let mut stream = self.docker.logs(id, Some(options));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        while let Some(item) = stream.next().await {
            match item.with_context(|| format!("reading the output of container {id}"))? {
                bollard::container::LogOutput::StdOut { message } => {
                    out.extend_from_slice(&message)
                }
                bollard::container::LogOutput::StdErr { message } => {
                    err.extend_from_slice(&message)
                }
                _ => {}
            }
        }
        Ok((
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        ))
    }

    async fn create(&self, body: ContainerCreateBody) -> Result<String> {
        let image = body.image.clone().unwrap_or_default();
        let created = self
            .docker
            .create_container(
                None::<bollard::query_parameters::CreateContainerOptions>,
                body,
            )
            .await
            .with_context(|| format!("creating a container from {image}"))?;
        Ok(created.id)
    }

    async fn kill(&self, id: &str) {
        let options = KillContainerOptionsBuilder::default()
            .signal("KILL")
            .build();
        if let Err(e) = self.docker.kill_container(id, Some(options)).await {
            eprintln!("warning: could not kill container {id}: {e}");
        }
    }

    /// Force-removes a container; a failure is reported with the container's ID, never swallowed.
    pub async fn remove(&self, id: &str) {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        if let Err(e) = self.docker.remove_container(id, Some(options)).await {
            eprintln!(
                "warning: could not remove container {id}: {e}; remove it with the Engine's tools"
            );
        }
    }

    /// IDs of containers (running or not) carrying `label=value`.
    pub async fn containers_with_label(&self, label: &str, value: &str) -> Result<Vec<String>> {
        let filters = HashMap::from([("label".to_string(), vec![format!("{label}={value}")])]);
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_containers(Some(options))
            .await
            .context("listing containers")?;
        Ok(list.into_iter().filter_map(|c| c.id).collect())
    }

    /// Removes every image whose tags start with `repo_prefix/` (e.g. `parkbench/`); returns the tags removed.
    pub async fn remove_images(&self, repo_prefix: &str) -> Result<Vec<String>> {
        let filters = HashMap::from([("reference".to_string(), vec![format!("{repo_prefix}/*")])]);
        let options = ListImagesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let images = self
            .docker
            .list_images(Some(options))
            .await
            .context("listing images")?;
        let mut removed = Vec::new();
        for tag in images.into_iter().flat_map(|i| i.repo_tags) {
            let options = RemoveImageOptionsBuilder::default().force(true).build();
            self.docker
                .remove_image(&tag, Some(options), None)
                .await
                .with_context(|| format!("removing image {tag}"))?;
            removed.push(tag);
        }
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

    /// Exports an image (the Engine's save format) to a file, streamed.
    pub async fn export_image(&self, tag: &str, out: &Path) -> Result<()> {
        use tokio::io::AsyncWriteExt;
        let tmp = out.with_extension("part");
        let mut file = tokio::fs::File::create(&tmp)
            .await
            .with_context(|| format!("creating {}", tmp.display()))?;
        let mut stream = self.docker.export_image(tag);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.with_context(|| format!("exporting image {tag}"))?;
            file.write_all(&chunk)
                .await
                .with_context(|| format!("writing {}", tmp.display()))?;
        }
        file.sync_all().await?;
        tokio::fs::rename(&tmp, out)
            .await
            .with_context(|| format!("renaming to {}", out.display()))?;
        Ok(())
    }
}

fn create_body(spec: &ContainerSpec) -> ContainerCreateBody {
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        cmd: Some(spec.cmd.clone()),
        entrypoint: Some(vec![]),
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        labels: Some(spec.labels.clone().into_iter().collect()),
        network_disabled: Some(true),
        host_config: Some(HostConfig {
            network_mode: Some("none".into()),
            // No CPU quota, no cpuset, no memory limit: pinning is done inside by sched_setaffinity.
            security_opt: Some(vec!["no-new-privileges:true".into()]),
            privileged: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The first regular file in a tar (the Engine's archive endpoint answers with a tar).
fn first_file(tar: &[u8]) -> Result<Vec<u8>> {
    let mut archive = tar::Archive::new(tar);
    for entry in archive.entries()? {
        let mut entry = entry?;
        if entry.header().entry_type().is_file() {
            let mut data = Vec::new();
            entry.read_to_end(&mut data)?;
            return Ok(data);
        }
    }
    bail!("no regular file in the Engine's answer (is the path a link or a directory?)")
}
