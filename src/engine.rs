//! The one module that talks to the Docker Engine (through bollard). Images are imported, built and
//! inspected here (`images`), and sent from one Engine to another (`ship`); containers are created,
//! run, read and removed here (`containers`) — on every path, Ctrl-C and dropped futures included
//! (`guard`) — and every one is confined the same way (`isolation`: no capabilities, no network, a
//! read-only root, a cap on its tasks); volumes mark a run's lease on a host (`volumes`). What is asked of
//! the Engine and what it answers (specs, facts, outcomes) are plain types (`spec`).
//!
//! What a run needs from the Engine is the [`Containers`] trait (and [`Images`] to make a guest
//! kernel's root), so that the run loop is unit-tested on a fake (`fake`, in tests) that scripts
//! exits, timeouts, OOM kills, errors and interrupts; what image builds need is the [`Images`]
//! trait, and the same fake scripts builds, their failures and the images they leave.
//!
//! May import: `files` (floor 1; nothing else of parkbench: the floor under `images` and `run`).

mod containers;
pub mod endpoint;
#[cfg(test)]
pub mod fake;
mod guard;
mod images;
mod isolation;
mod serving;
mod ship;
mod spec;
mod ssh;
mod volumes;

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use bollard::Docker;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use endpoint::{Endpoint, TlsFiles};
pub use guard::{ContainerGuard, Created, settle};
pub use images::{ImageGuard, local_name};
pub use isolation::{Isolation, NOBODY, TMP, TMP_OPTIONS};
pub use serving::{SERVE, Serving};
pub use spec::{
    BuildFailed, BuildSpec, CommandFailed, ContainerOutcome, ContainerSpec, ImageFacts, Mount,
};
pub use volumes::{RunningContainer, VolumeFacts, VolumeGuard};

/// What runs need from the Engine. Futures are `Send` so that a guard can remove a container from a
/// spawned task.
pub trait Containers: Clone + Send + Sync + 'static {
    /// Version, API, cgroups, security, storage and CPU facts.
    fn facts(&self) -> impl Future<Output = Result<EngineFacts>> + Send;

    /// Runs a container to its outcome, raced against its timeout and `cancel`; the container is
    /// removed whichever way it ended. An `Err` means the Engine failed, not the process.
    fn run(
        &self,
        spec: &ContainerSpec,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<ContainerOutcome>> + Send {
        async move {
            let created = self.create_container(spec).await?;
            match self.start_and_wait(&created, cancel).await {
                Ok(outcome) if !outcome.interrupted => self.finish(created, outcome).await,
                ended => {
                    created.remove().await;
                    ended
                }
            }
        }
    }

    /// Creates the container of `spec` and does not start it: nothing runs in it until
    /// [`Containers::start_and_wait`]. It is removed when the [`Created`] is removed or dropped.
    fn create_container(
        &self,
        spec: &ContainerSpec,
    ) -> impl Future<Output = Result<Created<Self>>> + Send;

    /// Starts a created container and waits until it ends, its timeout passes (it is killed) or
    /// `cancel` fires (the outcome says interrupted; nothing starts when it already has). The
    /// container stays, its output unread, for [`Containers::finish`].
    fn start_and_wait(
        &self,
        created: &Created<Self>,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<ContainerOutcome>> + Send;

    /// Reads an ended container's output and OOM state into `outcome`, then removes the container
    /// (on an error too).
    fn finish(
        &self,
        created: Created<Self>,
        outcome: ContainerOutcome,
    ) -> impl Future<Output = Result<ContainerOutcome>> + Send;

    /// What is held to talk to a served container (its attached stdin and output).
    type Stdio: Send + 'static;

    /// Creates and starts the container of `spec`, whose command is the sampler as a supervisor
    /// ([`SERVE`]), attached to its stdin and output: it stays up, one process per
    /// [`Containers::sample`], until removed or dropped (then removed).
    fn serve(&self, spec: &ContainerSpec) -> impl Future<Output = Result<Serving<Self>>> + Send;

    /// One process in a served container, `cmd` its sampler command line, raced against the
    /// spec's timeout and `cancel` (the outcome says which). After one that timed out, was
    /// interrupted, was OOM-killed or did not exit 0 (its supervisor failing included), the
    /// container is only fit to be removed.
    fn sample(
        &self,
        serving: &mut Serving<Self>,
        cmd: &[String],
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<ContainerOutcome>> + Send;

    /// IDs of containers (running or not) carrying `label=value`.
    fn containers_with_label(
        &self,
        label: &str,
        value: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Force-removes a container; one already gone is not an error.
    fn remove_container(&self, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// The CPUs a container can be pinned to.
    fn cpus(&self) -> impl Future<Output = Result<Vec<usize>>> + Send {
        async { Ok(self.facts().await?.cpus()) }
    }

    /// A short command in a fresh container from `image`, labelled with `role`: its trimmed stdout,
    /// or an error carrying its stderr when it does not exit 0.
    fn output(
        &self,
        image: &str,
        cmd: &[&str],
        role: &str,
    ) -> impl Future<Output = Result<String>> + Send {
        async move {
            let spec = ContainerSpec::command(image, cmd, role);
            let outcome = self.run(&spec, &CancellationToken::new()).await?;
            outcome.into_output(image, cmd)
        }
    }
}

/// What image builds need from the Engine. Futures are `Send` so that images whose parents are
/// ready can be built side by side.
pub trait Images: Clone + Send + Sync + 'static {
    /// The image behind a tag, or `None` when there is no such tag.
    fn image(&self, tag: &str) -> impl Future<Output = Result<Option<ImageFacts>>> + Send;

    /// Imports a root filesystem tar as `repo:tag`, a single layer.
    fn import(
        &self,
        rootfs: &Path,
        repo: &str,
        tag: &str,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Builds an image; `log` receives every line the build prints. An `Err` carries the Engine's
    /// message; the lines are the caller's to show.
    fn build(
        &self,
        spec: &BuildSpec,
        log: impl FnMut(&str) + Send,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The bytes of one regular file in an image.
    fn read_file(&self, image: &str, path: &str) -> impl Future<Output = Result<Vec<u8>>> + Send;

    /// The trimmed stdout of a short command in a fresh container from `image`, labelled with
    /// `role` (tool versions); an error carries its stderr when it does not exit 0. A command that
    /// exits non-zero or whose program is missing fails with a [`CommandFailed`]; any other error
    /// is the Engine's. The Engine's is [`Containers::output`]: where both traits are imported, a
    /// call names which.
    fn output(
        &self,
        image: &str,
        cmd: &[&str],
        role: &str,
    ) -> impl Future<Output = Result<String>> + Send;

    /// Writes the flattened filesystem of `image` (one tar, no layers) to `out` (a guest's root).
    fn export_filesystem(&self, image: &str, out: &Path)
    -> impl Future<Output = Result<()>> + Send;
}

/// A connection to the Docker Engine.
#[derive(Clone)]
pub struct Engine {
    docker: Docker,
    /// Podman's Docker-compatible API answers: containers are confined as
    /// [`Isolation::for_podman`] says.
    podman: bool,
    /// A container of this connection was read back holding the tasks limit asked for: the
    /// Engine applies it, and later containers are not read back for it.
    holds_tasks_limit: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Builds under way and what the ended ones left (see `images/stages.rs`).
    builds: std::sync::Arc<images::stages::InFlight>,
}

/// What the Engine says about itself (part of the environment record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineFacts {
    /// Which Engine answers: `Docker Engine`, or `Podman Engine` (its Docker-compatible API), as
    /// its version's components name it; empty in records older than the field (a Docker Engine).
    #[serde(default)]
    pub product: String,
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

/// The names an Engine's version gives itself among its components.
pub const DOCKER: &str = "Docker Engine";
pub const PODMAN: &str = "Podman Engine";

impl EngineFacts {
    /// The CPUs a container can be pinned to: 0..ncpu as the Engine counts them (containers get
    /// no cpuset).
    pub fn cpus(&self) -> Vec<usize> {
        (0..self.ncpu.max(0) as usize).collect()
    }

    /// `Docker Engine` or `Podman Engine`: a record older than the product's name was a Docker
    /// Engine's.
    pub fn product(&self) -> &str {
        if self.product.is_empty() {
            DOCKER
        } else {
            &self.product
        }
    }

    /// Podman's Docker-compatible API answers.
    pub fn is_podman(&self) -> bool {
        self.product == PODMAN
    }
}

/// Whether a version answer is Podman's: it names itself among its components.
fn is_podman(version: &bollard::models::SystemVersion) -> bool {
    let components = version.components.iter().flatten();
    components.into_iter().any(|c| c.name == PODMAN)
}

/// How long one request to the Engine may take before it counts as not answering.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

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
        // A busy Engine (importing a root filesystem, building beside a run) was seen to take more
        // than bollard's default 2 minutes to answer an inspect: wait longer before calling it gone.
        let docker = Docker::connect_with_defaults()
            .map_err(|e| unreachable(&e))?
            .with_timeout(REQUEST_TIMEOUT);
        docker.ping().await.map_err(|e| unreachable(&e))?;
        Self::answering(docker).await
    }

    /// Connects to the Engine at `endpoint` (called `name` in messages) and checks it answers.
    /// `local` is [`Engine::connect`]; a TLS failure, a refused connection or a missing key file
    /// is an error naming the host, its address and what to do.
    pub async fn connect_to(name: &str, endpoint: &Endpoint) -> Result<Self> {
        if *endpoint == Endpoint::Local {
            return Self::connect().await;
        }
        let url = endpoint.url();
        let unreachable = |e: &bollard::errors::Error| {
            let e = endpoint::causes(e);
            anyhow!(
                "host `{name}` ({url}) does not answer ({e}); check that its Engine listens there \
                 and that its TLS files are the ones it trusts, then run `parkbench doctor --hosts {name}`"
            )
        };
        let timeout = REQUEST_TIMEOUT.as_secs();
        let version = bollard::API_DEFAULT_VERSION;
        let docker = match endpoint {
            Endpoint::Local => unreachable!("handled above"),
            Endpoint::Unix(path) => {
                Docker::connect_with_unix(&path.to_string_lossy(), timeout, version)
            }
            Endpoint::Tcp { addr, tls: None } => {
                Docker::connect_with_http(&format!("tcp://{addr}"), timeout, version)
            }
            Endpoint::Tcp {
                addr,
                tls: Some(tls),
            } => {
                tls.check()
                    .with_context(|| format!("host `{name}` ({url})"))?;
                Docker::connect_with_ssl(
                    &format!("tcp://{addr}"),
                    &tls.key,
                    &tls.cert,
                    &tls.ca,
                    timeout,
                    version,
                )
            }
            // The kit's own ssh command line: bollard's would pass the port as part of the host.
            Endpoint::Ssh(u) => Ok(ssh::connect(u, timeout, version)
                .with_context(|| format!("host `{name}` ({url})"))?),
        }
        .map_err(|e| unreachable(&e))?;
        docker.ping().await.map_err(|e| unreachable(&e))?;
        Self::answering(docker).await
    }

    /// The Engine behind a connection that answered: which product it is.
    async fn answering(docker: Docker) -> Result<Self> {
        let version = docker
            .version()
            .await
            .context("asking the Engine for its version")?;
        let podman = is_podman(&version);
        Ok(Self {
            docker,
            podman,
            holds_tasks_limit: Default::default(),
            builds: Default::default(),
        })
    }
}
