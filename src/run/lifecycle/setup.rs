//! A run's folder made new or reopened: the study, the manifest, the seccomp profile, the run state
//! and the environment record, each written once, in an order a stopped run can resume from.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::Run;
use crate::engine::Containers;
use crate::files::is_disk_full;
use crate::images::Manifest;
use crate::run::env;
use crate::run::process::now;
use crate::run::run_dir::{self, RerunOf, RunDir, RunState, Status};
use crate::run::seccomp::Profile;
use crate::run::shard::{self, Shard, ShardRecord};
use crate::run::slice::Slice;
use crate::run::warning::{Touches, Warning};
use crate::study::cpus::{Chosen, CpuChoice, choose_cpus};
use crate::study::cpuset;
use crate::study::{Repeats, Study};

/// What a new run starts from besides the study and the images.
pub struct Fresh<'a> {
    /// The study file's text, copied into the run folder.
    pub text: &'a str,
    /// The CPUs it pins to ([`choose`]).
    pub cpus: Chosen,
    /// The study's seccomp profile, copied into the run folder.
    pub seccomp: Option<Profile>,
    /// The repository whose probe folders the environment record reads lockfiles from.
    pub repo: &'a Path,
    /// The archive a rerun reruns, and the deviations it brings (binaries that differ).
    pub rerun_of: Option<(RerunOf, Vec<String>)>,
    /// The processes per cell in force when not the study's own (`--repeats`, or a rerun's archive).
    pub repeats: Option<Repeats>,
    /// The slice of the matrix to measure (`--shard i/N`); `None`: all of it.
    pub shard: Option<Shard>,
    /// The probes and scales of a partial run (`--only`, `--scales`); `None`: all of them.
    pub slice: Option<Slice>,
}

/// The CPUs a new run pins to: the study's list, `--cpus` (`None`: the study's) and the CPUs
/// `engine` can pin to. `run` asks before it builds, so that a host without them is refused first.
pub async fn choose(
    engine: &impl Containers,
    study: &Study,
    choice: Option<&CpuChoice>,
) -> Result<Chosen> {
    let available = engine.cpus().await?;
    choose_cpus(
        &study.protocol.cpus,
        &available,
        choice.unwrap_or(&CpuChoice::Study),
    )
}

impl Run {
    /// A new run folder under `results` holding the study, the manifest, the run state and the
    /// environment record. The state (`incomplete`) is saved before the environment is recorded,
    /// so that a run stopped there (Ctrl-C drops the command) can be resumed.
    pub async fn start(
        engine: &impl Containers,
        results: &Path,
        study: &Study,
        manifest: &Manifest,
        fresh: Fresh<'_>,
    ) -> Result<Run> {
        Run::start_with(
            engine,
            || RunDir::create(results, &study.id),
            study,
            manifest,
            fresh,
        )
        .await
    }

    /// [`Run::start`] in the folder `folder` makes (a fleet run's sub-run, `hosts/<name>/`), made
    /// once the CPUs are chosen.
    pub async fn start_with(
        engine: &impl Containers,
        folder: impl FnOnce() -> Result<RunDir>,
        study: &Study,
        manifest: &Manifest,
        fresh: Fresh<'_>,
    ) -> Result<Run> {
        let (cpus, mut deviations) = (fresh.cpus.cpus, fresh.cpus.deviations);
        deviations.extend(image_deviations(study, manifest));
        let rerun_of = fresh.rerun_of.map(|(of, more)| {
            deviations.extend(more);
            of
        });
        // `--repeats` goes into run.json with the deviation; the run's study.yaml stays as written.
        let mut study = study.clone();
        if let Some(chosen) = fresh.repeats {
            let p = &mut study.protocol;
            if chosen != p.repeats {
                deviations.push(repeats_deviation(&p.repeats, &chosen));
                p.repeats = chosen;
            }
        }
        let study = &study;
        let dir = folder()?;
        let mut state = new_state(&dir.id(), study, &cpus, deviations);
        state.warnings.extend(drift_warnings(manifest));
        state.status = Status::Incomplete;
        state.rerun_of = rerun_of;
        if let Some(s) = fresh.shard {
            let slice = shard::deviation(study, s);
            eprintln!("{slice}");
            state.deviations.push(slice);
        }
        state.shard = fresh.shard.map(|s| ShardRecord {
            index: s.index,
            count: s.count,
            matrix: shard::matrix_id(fresh.text, study),
        });
        if let Some(slice) = &fresh.slice {
            let said = slice.deviation(study);
            eprintln!("{said}");
            state.deviations.push(said);
        }
        state.partial = fresh.slice.clone();
        let first = (|| {
            dir.write(run_dir::STUDY, fresh.text.as_bytes())?;
            dir.write_json(run_dir::MANIFEST, manifest)?;
            if let Some(p) = &fresh.seccomp {
                dir.write(run_dir::SECCOMP, p.text.as_bytes())?;
            }
            dir.save_state(&state)
        })();
        if let Err(e) = first {
            // Nothing is measured yet: a folder the run could not write into is not left behind.
            let _ = std::fs::remove_dir_all(dir.path());
            let fix = match is_disk_full(&e) {
                true => "the disk is full: free space, then start the run again",
                false => "nothing was measured; fix the cause, then start the run again",
            };
            return Err(e.context(format!("starting run {}: {fix}", dir.id())));
        }
        record_env(engine, &dir, study, manifest, fresh.repo).await?;
        eprintln!(
            "run {}: CPUs {} ({}) in {}",
            state.run_id,
            state.cpus_pinned,
            crate::text::count(state.workers as usize, "worker", "workers"),
            crate::text::from_here(dir.path()).display()
        );
        let mut run = Run::new(dir, state, study, manifest)?;
        run.made_here = true;
        Ok(run)
    }

    /// The run in `dir`, to resume: a run of a study file (a rerun of an archive is resumed by
    /// `rerun`, [`Run::resume_rerun`]). Its environment is recorded now if it was stopped before that.
    pub async fn resume(
        engine: &impl Containers,
        dir: RunDir,
        study: &Study,
        manifest: &Manifest,
        repo: &Path,
    ) -> Result<Run> {
        let state = reopen(engine, &dir, study, manifest, repo).await?;
        if let Some(of) = &state.rerun_of {
            bail!(
                "{} reran the archive {}: resume it with `parkbench rerun {} --resume {}`",
                dir.path().display(),
                of.archive,
                of.archive,
                dir.path().display()
            );
        }
        Run::new(dir, state, study, manifest)
    }
}

/// The state of a run to resume; its environment is recorded now if it was stopped before that.
pub(super) async fn reopen(
    engine: &impl Containers,
    dir: &RunDir,
    study: &Study,
    manifest: &Manifest,
    repo: &Path,
) -> Result<RunState> {
    let state = dir.load_state()?;
    if !dir.file(run_dir::ENV).exists() {
        record_env(engine, dir, study, manifest, repo).await?;
    }
    Ok(state)
}

/// The protocol's processes per cell as `--repeats` changed them, in words.
fn repeats_deviation(study: &Repeats, chosen: &Repeats) -> String {
    // `--repeats`, or the archived run's rule a rerun keeps: either way not the study's own.
    let said = |r: &Repeats| match r.rule() {
        Some(rule) => format!("{} ({rule})", r.per_cell()),
        None => r.per_cell(),
    };
    format!(
        "processes per cell chosen for this run: {} instead of the study's {}",
        said(chosen),
        said(study)
    )
}

/// Writes the run's environment record, seen from the study's first built probe image.
async fn record_env(
    engine: &impl Containers,
    dir: &RunDir,
    study: &Study,
    manifest: &Manifest,
    repo: &Path,
) -> Result<()> {
    let probe_image = &study
        .probes
        .iter()
        .find_map(|p| manifest.get(&p.image))
        .context("probe image")?
        .tag;
    let mut environment = env::record(engine, manifest, probe_image, &study.protocol, repo).await?;
    environment.seccomp = seccomp_of(study, dir)?.map(|p| p.record);
    dir.write_json(run_dir::ENV, &environment)
}

/// The study's seccomp profile, from the run folder's copy (the bytes the run started with); `None`
/// when the study names none (the Engine's default profile).
pub(super) fn seccomp_of(study: &Study, dir: &RunDir) -> Result<Option<Profile>> {
    let Some(file) = &study.protocol.seccomp else {
        return Ok(None);
    };
    let path = dir.file(run_dir::SECCOMP);
    let bytes = std::fs::read(&path).with_context(|| {
        format!(
            "reading {}, the run's copy of the seccomp profile {file:?}: a run of this study \
             keeps it there; start a new run",
            path.display()
        )
    })?;
    Profile::parse(file, &bytes)
        .map(Some)
        .with_context(|| format!("in {}", path.display()))
}

/// What the images of the study's probes ask a run to report: their recipes' notes and declared
/// patches (the manifest's `notes`, also of an image unavailable here), once each; and every root filesystem built with packages
/// that moved from its pin's lock.
pub fn image_deviations(study: &Study, manifest: &Manifest) -> Vec<String> {
    let mut out: Vec<String> = manifest.drift.iter().map(|d| d.deviation()).collect();
    for probe in &study.probes {
        // An image not built here (its toolchain unavailable) keeps its recipe's deviations too.
        let notes = (manifest.get(&probe.image).map(|i| i.notes.as_slice())).or_else(|| {
            (manifest.unavailable.iter())
                .find(|u| u.name == probe.image)
                .map(|u| u.notes.as_slice())
        });
        for note in notes.unwrap_or_default() {
            if !out.contains(note) {
                out.push(note.clone());
            }
        }
    }
    out
}

/// A validity warning per root filesystem whose moved packages include one the probes link or
/// run with (the C library, the compiler runtime, a language runtime): the figures may have moved
/// with it.
pub fn drift_warnings(manifest: &Manifest) -> Vec<Warning> {
    let mut out = Vec::new();
    for d in &manifest.drift {
        let touching: Vec<String> = d.touching_probes().iter().map(|m| m.to_string()).collect();
        if !touching.is_empty() {
            out.push(Warning {
                what: format!(
                    "rootfs {} differs from its pin in packages the probes link or run with: {}",
                    d.pin,
                    touching.join(", ")
                ),
                touches: Touches::All,
            });
        }
    }
    out
}

/// A fresh run state.
pub fn new_state(run_id: &str, study: &Study, cpus: &[usize], deviations: Vec<String>) -> RunState {
    RunState {
        run_id: run_id.to_string(),
        study: study.id.clone(),
        status: Status::Running,
        cpus_requested: study.protocol.cpus.clone(),
        cpus_pinned: cpuset::format(cpus),
        workers: cpus.len() as u32,
        deviations,
        started_at: now(),
        finished_at: None,
        wall_ms: 0.0,
        rerun_of: None,
        repeats: Some(study.protocol.repeats),
        warnings: Vec::new(),
        kernels: study.protocol.kernels.clone(),
        guests: Vec::new(),
        shard: None,
        partial: None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::engine::fake::{FakeEngine, Step};
    use crate::images::BuiltImage;

    fn manifest(study: &Study) -> Manifest {
        let images = study.probes.iter().map(|p| BuiltImage {
            name: p.image.clone(),
            tag: format!("parkbench/{}:0", p.image),
            id: "sha256:0".into(),
            layers: vec![],
            inputs: Default::default(),
            binaries: Default::default(),
            versions: Default::default(),
            notes: Vec::new(),
            built: false,
        });
        Manifest {
            images: images.collect(),
            unavailable: vec![],
            failed: vec![],
            drift: Vec::new(),
        }
    }

    #[test]
    fn the_notes_of_the_probes_images_are_deviations_once_each() {
        let study = Study::default_study();
        let mut m = manifest(&study);
        let patch = "image x: main.go patched with fix.diff (sha256 a → b): it did not compile";
        for image in &mut m.images {
            image.notes = vec![patch.to_string()];
        }
        m.images.push(BuiltImage {
            name: "not-a-probe".into(),
            notes: vec!["another image's note".into()],
            ..m.images[0].clone()
        });
        assert_eq!(image_deviations(&study, &m), [patch]);

        // A probe image unavailable here keeps its patch in the report.
        let first = m.images.remove(0);
        m.unavailable.push(crate::images::UnavailableImage {
            name: first.name,
            reason: "pin cannot be produced".into(),
            notes: vec!["image y: Main.java patched with p.diff (sha256 c → d): why".into()],
        });
        for image in &mut m.images {
            image.notes.clear();
        }
        assert_eq!(
            image_deviations(&study, &m),
            ["image y: Main.java patched with p.diff (sha256 c → d): why"]
        );
    }

    #[test]
    fn drift_is_a_deviation_and_warns_when_the_probes_use_a_moved_package() {
        use crate::images::pin::{Drift, Moved};
        let study = Study::default_study();
        let mut m = manifest(&study);
        let moved = |package: &str| Moved {
            sha256: None,
            package: package.into(),
            locked: "1".into(),
            served: Some("2".into()),
        };
        m.drift = vec![Drift {
            pin: "debian-base".into(),
            packages: 137,
            moved: vec![moved("base-files")],
            sha256: "ab".repeat(32),
        }];
        let deviations = image_deviations(&study, &m);
        assert_eq!(deviations.len(), 1, "{deviations:?}");
        assert!(
            deviations[0].starts_with("rootfs debian-base: 1 of 137 packages differ from the pin")
                && deviations[0].contains("base-files 1 → 2"),
            "{deviations:?}"
        );
        assert!(drift_warnings(&m).is_empty(), "base-files moves no figure");
        m.drift[0].moved.push(moved("libc6"));
        let warnings = drift_warnings(&m);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].what.contains("libc6 1 → 2") && !warnings[0].what.contains("base-files"),
            "{:?}",
            warnings[0]
        );
        assert_eq!(warnings[0].touches, Touches::All);
    }

    fn env_step() -> Step {
        Step::Exit {
            code: 0,
            stdout: "Linux c 6.1.0\n0-1\nldd 2.36\n".into(),
            stderr: String::new(),
        }
    }

    #[tokio::test]
    async fn a_run_stopped_while_its_environment_is_recorded_can_be_resumed() {
        let results = tempfile::tempdir().unwrap();
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let study = Study::default_study();
        let manifest = manifest(&study);
        // Ctrl-C before the run loop claims it drops the command (cli::dispatch), here while the
        // environment's container runs.
        let engine = FakeEngine::new([Step::Hang]);
        let fresh = Fresh {
            text: crate::study::DEFAULT_STUDY,
            cpus: choose(&engine, &study, Some(&CpuChoice::Auto))
                .await
                .unwrap(),
            seccomp: None,
            repo: &repo,
            rerun_of: None,
            repeats: None,
            shard: None,
            slice: None,
        };
        let stopped = tokio::time::timeout(
            Duration::from_millis(200),
            Run::start(&engine, results.path(), &study, &manifest, fresh),
        )
        .await;
        assert!(stopped.is_err(), "the environment record never ends");
        crate::engine::settle().await;
        assert!(engine.live().is_empty(), "its container is removed");

        let runs = results.path().join(&study.id).join("runs");
        let folders: Vec<_> = std::fs::read_dir(&runs).unwrap().collect();
        assert_eq!(folders.len(), 1);
        let dir = RunDir::open(&folders[0].as_ref().unwrap().path()).unwrap();
        let state = dir
            .load_state()
            .expect("run.json is saved before the environment record");
        assert_eq!(
            (state.status, state.run_id.as_str()),
            (Status::Incomplete, dir.id().as_str())
        );
        assert!(!dir.file(run_dir::ENV).exists());

        let engine = FakeEngine::new([env_step()]);
        let resumed = Run::resume(&engine, dir.clone(), &study, &manifest, &repo)
            .await
            .unwrap();
        assert_eq!(resumed.state(), &state);
        assert!(dir.file(run_dir::ENV).exists(), "the resume records it");
        assert_eq!(engine.runs().len(), 1);
        let engine = FakeEngine::new([]);
        Run::resume(&engine, dir, &study, &manifest, &repo)
            .await
            .unwrap();
        assert!(engine.runs().is_empty(), "recorded once");
    }
}
