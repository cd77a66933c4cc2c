//! A scripted stand-in for the Engine, for unit tests of the run loop, the environment record, the
//! container guard and image builds: each `run` takes the next [`Step`] and turns it into the
//! outcome the real Engine would give (or its error), and every container created is tracked until
//! removed; image builds play the [`Build`] scripted for their image (`images`).

mod images;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Result, bail};
use tokio_util::sync::CancellationToken;

use super::{
    ContainerGuard, ContainerOutcome, ContainerSpec, Containers, Created, EngineFacts, Serving,
};
pub use images::Build;

/// What the next container does.
#[derive(Debug, Clone)]
pub enum Step {
    /// The sampler measures every task and exits 0 (its JSON is made from the spec's labels).
    Valid,
    /// The process exits with `code`, printing `stdout` and `stderr`.
    Exit {
        code: i64,
        stdout: String,
        stderr: String,
    },
    /// The container outlives its timeout and is killed.
    TimedOut,
    /// The kernel's OOM killer ends it.
    Oom,
    /// The Engine fails (e.g. the daemon went away).
    EngineError(String),
    /// Ctrl-C arrives while it runs: the token is cancelled.
    Interrupt,
    /// It never ends: only dropping the command that waits for it (as Ctrl-C does before a run
    /// loop claims it) stops it, and its guard removes the container.
    Hang,
}

#[derive(Default)]
struct State {
    steps: VecDeque<Step>,
    runs: Vec<ContainerSpec>,
    live: BTreeMap<String, BTreeMap<String, String>>,
    removed: Vec<String>,
    removal_attempts: usize,
    fail_removals: bool,
    next_id: u64,
    /// What the Engine was asked to do, in order: `create ID`, `start ID`, `end ID`, `remove ID`.
    events: Vec<String>,
}

/// The fake Engine; clones share their script, their containers and their images.
#[derive(Clone, Default)]
pub struct FakeEngine {
    state: Arc<Mutex<State>>,
    images: Arc<Mutex<images::Store>>,
}

impl FakeEngine {
    /// An Engine that plays `steps` in order, one per container run.
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        let engine = Self::default();
        engine.lock().steps = steps.into_iter().collect();
        engine
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every spec run so far, in order.
    pub fn runs(&self) -> Vec<ContainerSpec> {
        self.lock().runs.clone()
    }

    /// IDs of containers created and not removed.
    pub fn live(&self) -> Vec<String> {
        self.lock().live.keys().cloned().collect()
    }

    /// What the Engine was asked to do, in order: `create ID`, `start ID`, `end ID` (the container
    /// ended: its start-and-wait returned), `remove ID`.
    pub fn events(&self) -> Vec<String> {
        self.lock().events.clone()
    }

    fn event(&self, event: String) {
        self.lock().events.push(event);
    }

    /// IDs of containers removed, in order.
    pub fn removed(&self) -> Vec<String> {
        self.lock().removed.clone()
    }

    /// How many removals were asked for, failed ones included.
    pub fn removal_attempts(&self) -> usize {
        self.lock().removal_attempts
    }

    /// Makes every later removal fail.
    pub fn fail_removals(&self) {
        self.lock().fail_removals = true;
    }

    /// Creates a container with `labels`, as a real create would; returns its ID.
    pub fn add_container(&self, labels: &[(&str, &str)]) -> String {
        let mut state = self.lock();
        state.next_id += 1;
        let id = format!("fake-{}", state.next_id);
        let labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        state.live.insert(id.clone(), labels);
        id
    }

    /// Records the run of `spec` (and `event`) and plays the next step for it: interrupted when
    /// `cancel` already fired, never ending for [`Step::Hang`].
    async fn play_next(
        &self,
        spec: ContainerSpec,
        event: String,
        cancel: &CancellationToken,
    ) -> Result<ContainerOutcome> {
        let step = {
            let mut state = self.lock();
            state.runs.push(spec.clone());
            state.events.push(event);
            state.steps.pop_front()
        };
        match step {
            _ if cancel.is_cancelled() => Ok(ContainerOutcome {
                interrupted: true,
                ..Default::default()
            }),
            Some(Step::Hang) => std::future::pending().await,
            Some(step) => self.play(step, &spec, cancel),
            None => bail!("the fake Engine has no step left for {:?}", spec.cmd),
        }
    }

    /// The outcome of `step` for `spec`, or the Engine's error.
    fn play(
        &self,
        step: Step,
        spec: &ContainerSpec,
        cancel: &CancellationToken,
    ) -> Result<ContainerOutcome> {
        let mut outcome = ContainerOutcome {
            elapsed: Duration::from_millis(5),
            ..Default::default()
        };
        match step {
            Step::Valid => {
                let tasks = spec
                    .labels
                    .get("parkbench.tasks")
                    .map_or("0", String::as_str);
                outcome.stdout = sampler_json(tasks.parse()?);
                outcome.exit_code = Some(0);
            }
            Step::Exit {
                code,
                stdout,
                stderr,
            } => {
                (outcome.exit_code, outcome.stdout, outcome.stderr) = (Some(code), stdout, stderr);
            }
            Step::TimedOut => outcome.timed_out = true,
            Step::Oom => {
                outcome.oom_killed = true;
                outcome.exit_code = Some(137);
            }
            Step::EngineError(message) => bail!("{message}"),
            Step::Interrupt => {
                cancel.cancel();
                outcome.interrupted = true;
            }
            Step::Hang => unreachable!("a hanging container is waited for in run"),
        }
        Ok(outcome)
    }
}

/// What the sampler prints for a process that measured `tasks` tasks, in its own units (KiB, ms).
pub fn sampler_json(tasks: u64) -> String {
    sampler_json_rss(tasks, 2048)
}

/// [`sampler_json`] with every RSS reading at `rss_kib`.
pub fn sampler_json_rss(tasks: u64, rss_kib: u64) -> String {
    let reading = format!(
        r#"{{"vm_rss_kib":{rss_kib},"vm_hwm_kib":{rss_kib},"rss_anon_kib":1024,"rss_file_kib":1024,"threads":2}}"#
    );
    format!(
        r#"{{"cpus_in_force":"0","baseline":{reading},"samples":[{reading},{reading}],"ready":{{}},"done":{{"completed":{tasks}}},"timings_ms":{{"probe":10.0}},"exit_code":0,"error":null}}"#
    )
}

impl FakeEngine {
    /// What the fake says of itself: a Docker Engine with 2 CPUs.
    pub fn default_facts() -> EngineFacts {
        EngineFacts {
            product: super::DOCKER.into(),
            version: "fake".into(),
            api_version: "1.41".into(),
            kernel: "fake".into(),
            operating_system: "fake".into(),
            cgroup_version: "1".into(),
            cgroup_driver: "cgroupfs".into(),
            security_options: vec![],
            storage_driver: "fake".into(),
            runtimes: vec!["runc".into()],
            default_runtime: "runc".into(),
            ncpu: 2,
            mem_total_bytes: 1 << 30,
            root_dir: "/fake".into(),
        }
    }
}

impl Containers for FakeEngine {
    async fn facts(&self) -> Result<EngineFacts> {
        Ok(Self::default_facts())
    }

    async fn create_container(&self, spec: &ContainerSpec) -> Result<Created<Self>> {
        let labels: Vec<(&str, &str)> = spec
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let id = self.add_container(&labels);
        self.event(format!("create {id}"));
        Ok(Created {
            guard: ContainerGuard::new(self.clone(), id),
            spec: spec.clone(),
            took: Duration::from_millis(1),
        })
    }

    async fn start_and_wait(
        &self,
        created: &Created<Self>,
        cancel: &CancellationToken,
    ) -> Result<ContainerOutcome> {
        let started = format!("start {}", created.id());
        let result = self.play_next(created.spec.clone(), started, cancel).await;
        self.event(format!("end {}", created.id()));
        result
    }

    async fn finish(
        &self,
        created: Created<Self>,
        outcome: ContainerOutcome,
    ) -> Result<ContainerOutcome> {
        // The sampler's output was scripted with the outcome; removal as the real Engine does.
        created.remove().await;
        Ok(outcome)
    }

    type Stdio = ();

    async fn serve(&self, spec: &ContainerSpec) -> Result<Serving<Self>> {
        let created = self.create_container(spec).await?;
        self.event(format!("start {}", created.id()));
        Ok(Serving { created, stdio: () })
    }

    /// Plays the next step as the process of `cmd`: recorded in `runs` as the served container's
    /// spec with that command, and as `sample ID` in the events.
    async fn sample(
        &self,
        serving: &mut Serving<Self>,
        cmd: &[String],
        cancel: &CancellationToken,
    ) -> Result<ContainerOutcome> {
        let spec = ContainerSpec {
            cmd: cmd.to_vec(),
            ..serving.spec().clone()
        };
        let event = format!("sample {}", serving.created.id());
        self.play_next(spec, event, cancel).await
    }

    async fn containers_with_label(&self, label: &str, value: &str) -> Result<Vec<String>> {
        let state = self.lock();
        Ok(state
            .live
            .iter()
            .filter(|(_, labels)| labels.get(label).is_some_and(|v| v == value))
            .map(|(id, _)| id.clone())
            .collect())
    }

    async fn remove_container(&self, id: &str) -> Result<()> {
        let mut state = self.lock();
        state.removal_attempts += 1;
        if state.fail_removals {
            bail!("the fake Engine refuses to remove {id}");
        }
        if state.live.remove(id).is_some() {
            state.removed.push(id.to_string());
            state.events.push(format!("remove {id}"));
        }
        Ok(())
    }
}
