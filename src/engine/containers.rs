//! Containers through the Engine: create, start, wait (raced against the timeout and Ctrl-C), read
//! the output, and remove — on every path, a dropped future included (see [`ContainerGuard`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bollard::errors::Error as BollardError;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    KillContainerOptionsBuilder, ListContainersOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::isolation::create_body;
use super::{
    ContainerGuard, ContainerOutcome, ContainerSpec, Containers, Created, DOCKER, Engine,
    EngineFacts, PODMAN, Serving,
};

/// The Engine's side of [`Containers`]; the trait says what each does.
impl Containers for Engine {
    async fn facts(&self) -> Result<EngineFacts> {
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
            product: if super::is_podman(&v) { PODMAN } else { DOCKER }.to_string(),
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

    async fn create_container(&self, spec: &ContainerSpec) -> Result<Created<Engine>> {
        let began = Instant::now();
        let guard = self.create(create_body(spec, self.podman)).await?;
        if let Err(e) = self.check_tasks_limit(guard.id(), spec).await {
            guard.remove().await;
            return Err(e);
        }
        Ok(Created {
            guard,
            spec: spec.clone(),
            took: began.elapsed(),
        })
    }

    async fn start_and_wait(
        &self,
        created: &Created<Engine>,
        cancel: &CancellationToken,
    ) -> Result<ContainerOutcome> {
        let (id, spec) = (created.id(), &created.spec);
        let mut outcome = ContainerOutcome::default();
        if cancel.is_cancelled() {
            outcome.interrupted = true;
            return Ok(outcome);
        }
        let began = Instant::now();
        self.docker
            .start_container(id, None::<bollard::query_parameters::StartContainerOptions>)
            .await
            .map_err(missing_program)
            .with_context(|| format!("starting container {id}"))?;
        tokio::select! {
            code = self.wait(id) => outcome.exit_code = Some(code?),
            () = tokio::time::sleep(spec.timeout) => {
                outcome.timed_out = true;
                self.kill(id).await;
            }
            () = cancel.cancelled() => outcome.interrupted = true,
        }
        outcome.elapsed = created.took + began.elapsed();
        Ok(outcome)
    }

    async fn finish(
        &self,
        created: Created<Engine>,
        mut outcome: ContainerOutcome,
    ) -> Result<ContainerOutcome> {
        let began = Instant::now();
        let id = created.id();
        let (inspect, logs) = tokio::join!(self.docker.inspect_container(id, None), self.logs(id));
        outcome.oom_killed = inspect
            .ok()
            .and_then(|c| c.state)
            .and_then(|s| s.oom_killed)
            .unwrap_or(false);
        created.remove().await;
        (outcome.stdout, outcome.stderr) = logs?;
        outcome.elapsed += began.elapsed();
        Ok(outcome)
    }

    type Stdio = super::serving::Attached;

    async fn serve(&self, spec: &ContainerSpec) -> Result<Serving<Engine>> {
        self.serve_attached(spec).await
    }

    async fn sample(
        &self,
        serving: &mut Serving<Engine>,
        cmd: &[String],
        cancel: &CancellationToken,
    ) -> Result<ContainerOutcome> {
        self.sample_attached(serving, cmd, cancel).await
    }

    /// Its anonymous volumes with it.
    async fn remove_container(&self, id: &str) -> Result<()> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self.docker.remove_container(id, Some(options)).await {
            Ok(())
            | Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(e) => Err(e).with_context(|| format!("removing container {id}")),
        }
    }

    async fn containers_with_label(&self, label: &str, value: &str) -> Result<Vec<String>> {
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
}

impl Engine {
    /// The first container of this connection is read back from the Engine: one that does not
    /// carry the tasks limit asked for refuses the Engine. Once one does, the Engine applies it and
    /// no later container is read back (the run's hot path).
    pub(super) async fn check_tasks_limit(&self, id: &str, spec: &ContainerSpec) -> Result<()> {
        use std::sync::atomic::Ordering;
        if self.holds_tasks_limit.load(Ordering::Relaxed) {
            return Ok(());
        }
        let asked = i64::try_from(spec.pids_limit).unwrap_or(i64::MAX);
        let held = self.isolation(id).await?.0.pids_limit;
        if held != asked {
            return Err(unlimited_tasks(asked, held, self.podman));
        }
        self.holds_tasks_limit.store(true, Ordering::Relaxed);
        Ok(())
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

    /// Creates a container; it is removed when the guard is removed or dropped.
    pub(super) async fn create(&self, body: ContainerCreateBody) -> Result<ContainerGuard<Engine>> {
        let image = body.image.clone().unwrap_or_default();
        let created = self
            .docker
            .create_container(
                None::<bollard::query_parameters::CreateContainerOptions>,
                body,
            )
            .await
            .with_context(|| format!("creating a container from {image}"))?;
        Ok(ContainerGuard::new(self.clone(), created.id))
    }

    async fn kill(&self, id: &str) {
        let options = KillContainerOptionsBuilder::default()
            .signal("KILL")
            .build();
        if let Err(e) = self.docker.kill_container(id, Some(options)).await {
            eprintln!("warning: could not kill container {id}: {e}");
        }
    }
}

/// Tasks a short command's container may hold: a compiler's or a runtime's version needs a few.
const COMMAND_PIDS_LIMIT: u64 = 1024;

impl ContainerSpec {
    /// A short command in a fresh container, labelled with `role`, given a minute, as the image's
    /// user (a tool's version is read as the image gives it).
    pub fn command(image: &str, cmd: &[&str], role: &str) -> ContainerSpec {
        ContainerSpec {
            seccomp: None,
            mounts: Vec::new(),
            devices: Vec::new(),
            user: None,
            pids_limit: COMMAND_PIDS_LIMIT,
            image: image.to_string(),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
            env: Default::default(),
            labels: [("parkbench.role".to_string(), role.to_string())].into(),
            timeout: Duration::from_secs(60),
        }
    }
}

impl ContainerOutcome {
    /// The trimmed stdout of a short command; anything but exit 0 is an error carrying its stderr.
    pub fn into_output(self, image: &str, cmd: &[&str]) -> Result<String> {
        if self.exit_code != Some(0) {
            let failed = |message: String| -> anyhow::Error {
                match (self.timed_out, self.interrupted) {
                    // It exited on its own: the command's failure.
                    (false, false) => super::CommandFailed { message }.into(),
                    _ => anyhow::anyhow!(message),
                }
            };
            return Err(failed(format!(
                "`{}` in {image} failed ({}): {}",
                cmd.join(" "),
                match (self.exit_code, self.timed_out, self.interrupted) {
                    (_, _, true) => "interrupted".to_string(),
                    (_, true, _) => "timed out".to_string(),
                    (code, _, _) => format!("{code:?}"),
                },
                self.stderr.trim()
            )));
        }
        Ok(self.stdout.trim().to_string())
    }
}

/// A start refused because the command's program is not in the image is the command's failure
/// ([`super::CommandFailed`]); any other refusal is the Engine's.
/// The Engine created a container without the tasks limit asked for: rootless Podman on cgroup v1
/// ignores every resource limit. A runaway probe would take the host's tasks, so nothing runs.
fn unlimited_tasks(asked: i64, held: i64, podman: bool) -> anyhow::Error {
    let engine = if podman { "Podman" } else { "the Engine" };
    anyhow::anyhow!(
        "{engine} does not hold a container to the tasks limit asked for ({asked}; its container \
         has {held}): rootless Podman on cgroup v1 ignores resource limits. Run on an Engine that \
         applies it: the Docker Engine, rootful Podman, or rootless Podman on cgroup v2 \
         (docs/fleet.md, Podman)"
    )
}

fn missing_program(e: BollardError) -> anyhow::Error {
    let message = e.to_string();
    if message.contains("error setting rlimit") {
        // runc under Podman: the service asks for its default limits, above its own hard ones.
        return anyhow::anyhow!(
            "the Engine could not start a container ({message}): it asks for more open files or \
             processes than its own service may have. For Podman: read the service's own hard \
             limits (`grep -E 'open files|processes' /proc/<pid of podman system service>/limits`), \
             set `default_ulimits = [\"nofile=N:N\", \"nproc=M:M\"]` within them in the \
             [containers] table of /etc/containers/containers.conf (rootless: \
             ~/.config/containers/containers.conf), restart the service, and run the command again \
             (docs/fleet.md, Podman)"
        );
    }
    if message.contains("executable file not found")
        || message.contains("no such file or directory")
    {
        super::CommandFailed { message }.into()
    } else {
        e.into()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_command_that_exits_non_zero_is_its_own_failure_a_timeout_the_engines() {
        use super::{super::CommandFailed, ContainerOutcome};
        let exited = ContainerOutcome {
            exit_code: Some(2),
            stderr: "usage".into(),
            ..ContainerOutcome::default()
        };
        let err = exited.into_output("img", &["tool", "-x"]).unwrap_err();
        assert!(err.downcast_ref::<CommandFailed>().is_some(), "{err:#}");
        let timed_out = ContainerOutcome {
            timed_out: true,
            ..ContainerOutcome::default()
        };
        let err = timed_out.into_output("img", &["tool"]).unwrap_err();
        assert!(err.downcast_ref::<CommandFailed>().is_none(), "{err:#}");
        assert!(format!("{err:#}").contains("timed out"), "{err:#}");
    }
}
