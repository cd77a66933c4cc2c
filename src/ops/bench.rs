//! `parkbench bench`: benchmarks of the kit itself. `fidelity`: the study narrowed to the probes,
//! the scale and the processes asked for → its images built → CPUs chosen → the guest kernel made
//! ready (kernel mode) → each cell measured in its container and natively (or in the VM). `scale`:
//! the study's reference run read → as many runs of it as asked, each on a machine of its own,
//! written and archived by the kit's own writers (what `merge` is timed on, `just bench-scale`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use tokio_util::sync::CancellationToken;

use super::prepare::for_study;
use super::{Ending, Paths, Prepared, prepare};
use crate::outputs::{archive, outcome, reference};
use crate::run::env::Environment;
use crate::run::lifecycle;
use crate::run::run_dir::{self, RunDir, RunState, Status};
use crate::run::{bench, guest};
use crate::study::cpus::{Chosen, CpuChoice};
use crate::study::sample;
use crate::study::{Repeats, Study};

/// What `bench fidelity` measures.
#[derive(Debug, Clone)]
pub struct Fidelity {
    /// The study whose probes are measured; the default study when `None`.
    pub study: Option<PathBuf>,
    /// Only these probes of the study (all when empty).
    pub probes: Vec<String>,
    /// Tasks per process.
    pub tasks: u64,
    /// Processes per probe and way of running.
    pub repeats: u32,
    /// The CPUs to pin to.
    pub cpus: CpuChoice,
    /// Kernel mode: the guest kernel measured against instead of the host.
    pub kernel: Option<String>,
}

/// The same probe binaries in containers and natively (or in a VM), side by side.
/// Ctrl-C drops the measurement in progress; its container is removed.
pub async fn fidelity(repo: &Path, args: &Fidelity) -> Result<Ending> {
    let study = narrowed(args)?;
    let in_vm = match &args.kernel {
        Some(k) => {
            guest::check_names(std::slice::from_ref(k), &guest::known(repo)?)?;
            Some(study.clone().under_kernels(std::slice::from_ref(k))?)
        }
        None => None,
    };
    let mut build = for_study(&study);
    if let Some(s) = &in_vm {
        build.only.extend(for_study(s).only);
    }
    let Prepared {
        engine,
        manifest,
        cache,
    } = prepare(repo, &build).await?;
    let Chosen { cpus, deviations } = lifecycle::choose(&engine, &study, Some(&args.cpus)).await?;
    let state = lifecycle::new_state("bench-fidelity", &study, &cpus, deviations);
    let guests = match &in_vm {
        Some(s) => {
            let cancel = CancellationToken::new();
            Some(guest::prepare(&engine, &cache, &manifest, s, &cancel).await?)
        }
        None => None,
    };
    let second = in_vm.as_ref().zip(guests.as_ref());
    let table = bench::fidelity(&engine, &study, &manifest, &state, second).await?;
    print!("{table}");
    Ok(Ending::Ok)
}

/// The study with only the probes asked for, at one scale, a fixed number of processes, no claims.
fn narrowed(args: &Fidelity) -> Result<Study> {
    let mut study = match &args.study {
        Some(path) => Study::load(path)?,
        None => Study::default_study(),
    };
    if !args.probes.is_empty() {
        for id in &args.probes {
            if study.probe(id).is_none() {
                bail!("--probes: study {} has no probe {id:?}", study.id);
            }
        }
        study.probes.retain(|p| args.probes.contains(&p.id));
    }
    study.claims.clear();
    study.protocol.scales = vec![args.tasks];
    for p in &mut study.probes {
        p.scales = None;
    }
    study.protocol.repeats = Repeats::fixed(args.repeats);
    Ok(study)
}

/// What `bench scale` writes.
#[derive(Debug, Clone)]
pub struct Scale {
    /// The study whose reference run (`reference/run.tar.gz` beside it) the runs are made of; the
    /// default study when `None`.
    pub study: Option<PathBuf>,
    /// How many runs, each archived.
    pub runs: u32,
    /// The folder the archives are written into (made if missing).
    pub out: PathBuf,
}

/// `runs` archives of one study, as that many people rerunning it on machines of their own would
/// send them: each a whole run, made of the study's reference run — its study file, manifest,
/// setup and every sample line — under a run id of its own, on a hardware class of its own (the
/// reference machine's CPU model, numbered), its report written and its archive made by the same
/// writers as a run's. What `merge`, `verify` and `compare` are timed on by `just bench-scale`.
pub fn scale(paths: &Paths, args: &Scale) -> Result<Ending> {
    ensure!(args.runs > 0, "--runs: give at least one run");
    let id = match &args.study {
        Some(file) => Study::load(file)?.id,
        None => Study::default_study().id,
    };
    // Found as a run finds it for its first estimate: beside the study file, then in the results.
    let from =
        super::launch::reference_of(paths, args.study.as_deref(), &id).with_context(|| {
            format!(
                "study {id} has no reference run ({}; results/REFERENCES-PENDING says why): give \
             --study a study file with one beside it, or leave --study out for the default study",
                reference::dir(&paths.results, &id)
                    .join(reference::ARCHIVE)
                    .display()
            )
        })?;
    let files = archive::read_run(&from)
        .with_context(|| format!("reading the reference run {}", from.display()))?;
    let state: RunState = serde_json::from_str(files.run_json.as_deref().unwrap_or_default())
        .with_context(|| format!("{}: its run.json", from.display()))?;
    ensure!(
        state.shard.is_none() && state.status == Status::Complete,
        "{}: the reference is not a whole, complete run",
        from.display()
    );
    let env: Environment = serde_json::from_str(files.env_json.as_deref().unwrap_or_default())
        .with_context(|| format!("{}: its env.json", from.display()))?;
    let (samples, bad) = sample::parse_lines(files.samples_jsonl.as_bytes())?;
    if let Some(first) = bad.first() {
        bail!(
            "{}: {} malformed sample lines, the first at line {}: {}; its samples.jsonl must be the \
             kit's own (`parkbench check` it)",
            from.display(),
            bad.len(),
            first.line,
            first.error
        );
    }
    let started = chrono::DateTime::parse_from_rfc3339(&state.started_at)
        .with_context(|| format!("{}: its started_at", from.display()))?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    // Each run folder is made here and removed once archived: the archives are what is kept.
    let folders = tempfile::tempdir_in(&args.out)
        .with_context(|| format!("creating a folder in {}", args.out.display()))?;
    for i in 1..=args.runs {
        // One run a minute after the reference, as the run id (a time) of each says.
        let at = |t: &str| -> Result<String> {
            let t = chrono::DateTime::parse_from_rfc3339(t)?;
            Ok((t + chrono::Duration::minutes(i.into())).to_rfc3339())
        };
        let id = (started + chrono::Duration::minutes(i.into()))
            .with_timezone(&chrono::Utc)
            .format("%Y%m%dT%H%M%SZ")
            .to_string();
        let dir = RunDir::at(&folders.path().join(&id));
        std::fs::create_dir(dir.path())
            .with_context(|| format!("creating {}", dir.path().display()))?;
        dir.write(run_dir::STUDY, files.study_yaml.as_bytes())?;
        if let Some(m) = &files.manifest_json {
            dir.write(run_dir::MANIFEST, m.as_bytes())?;
        }
        let mut own = env.clone();
        own.host.cpu_model = format!("{} #{i}", env.host.cpu_model.trim());
        dir.write_json(run_dir::ENV, &own)?;
        let mut lines = samples.clone();
        for s in &mut lines {
            s.run_id.clone_from(&id);
        }
        dir.write(run_dir::SAMPLES, &sample::jsonl(&lines)?)?;
        dir.save_state(&RunState {
            run_id: id.clone(),
            started_at: at(&state.started_at)?,
            finished_at: state.finished_at.as_deref().map(at).transpose()?,
            ..state.clone()
        })?;
        outcome::recompute(&dir.read_files()?)?.write_report(dir.path())?;
        archive::write(dir.path(), &[], &args.out.join(format!("{id}.tar.gz")))?;
        std::fs::remove_dir_all(dir.path())
            .with_context(|| format!("removing {}", dir.path().display()))?;
    }
    println!(
        "{} archives of study {} in {}: each a whole run of its reference's {} samples, on a \
         hardware class of its own",
        args.runs,
        state.study,
        args.out.display(),
        samples.len()
    );
    Ok(Ending::Ok)
}
