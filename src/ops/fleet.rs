//! `parkbench run --hosts`: one study on several Docker Engines, one run folder. Name the hosts →
//! survey them (an unreachable one stops everything before anything runs) → fit the study to each
//! → assign cells (`--across`: all on each; `--spread`: a shard each) → lease every host → place
//! the images → one sub-run per host in `hosts/<name>/` (hosts of one machine one after another,
//! machines at once) → merge the sub-runs into the run folder, every sample with its host and
//! hardware class → env.json, fleet.json, the report and the claims per class (and per host).
//! A host that stops answering loses its cells, the others go on; `run --resume` finishes them.

mod finish;
mod hosts;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{Interrupt, Paths, Prepared, prepare};
use crate::images::{BuildOptions, Manifest};
use crate::run::fleet::assign::{self, Mode};
use crate::run::fleet::host_run::Common;
use crate::run::fleet::record::{self, FleetRecord, HostRecord, HostStatus};
use crate::run::fleet::standin::{self, Placement, Surveyed};
use crate::run::lifecycle::{CpuChoice, RunResult};
use crate::run::needs;
use crate::run::run_dir::{self, RunDir};
use crate::run::seccomp::Profile;
use crate::study::Study;

use super::run::Options;

/// `--hosts` and how to use them.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    /// The hosts as named (`local`, URLs); empty: this machine's Engine alone.
    pub names: Vec<String>,
    /// Every cell on every host (`--across`, the default).
    pub across: bool,
    /// The matrix dealt over the hosts (`--spread`).
    pub spread: bool,
    /// Build the images on each host instead of shipping them (`--images build`).
    pub build: bool,
    /// Accept plain `tcp://` (`--allow-plain-tcp`).
    pub allow_plain_tcp: bool,
}

/// A run across hosts: `--hosts` given, or a run folder to resume that holds a fleet.json.
pub fn is_fleet(options: &Options) -> bool {
    match &options.resume {
        Some(dir) => dir.join(run_dir::FLEET).exists(),
        None => !options.fleet.names.is_empty(),
    }
}

/// Combinations refused before anything runs.
pub fn check(options: &Options) -> Result<Mode> {
    let f = &options.fleet;
    let resuming = options.resume.is_some();
    if f.names.is_empty() && (f.across || f.spread) {
        bail!("--across and --spread lay a study over hosts: name them with --hosts a,b,…");
    }
    if f.across && f.spread {
        bail!(
            "--across (every cell on every host) and --spread (the matrix dealt over the hosts) \
             exclude each other: choose one"
        );
    }
    if options.shard.is_some() && !f.names.is_empty() {
        bail!(
            "--shard measures one slice on this machine and --hosts lays the study over hosts: \
             use --hosts … --spread to deal the matrix over hosts, or --shard alone"
        );
    }
    if resuming && (f.across || f.spread) {
        bail!(
            "a resumed run keeps how it laid its study over its hosts: leave out --across and --spread"
        );
    }
    assign::distinct(&f.names)?;
    Ok(if f.spread { Mode::Spread } else { Mode::Across })
}

/// Runs (or resumes) a study across hosts; the result is the merged run's.
pub async fn run(paths: &Paths, options: &Options, interrupt: &Interrupt) -> Result<RunResult> {
    let mode = check(options)?;
    if let Some(dir) = &options.resume {
        return resume(paths, options, dir, interrupt).await;
    }
    let (study, file) = super::run::load(paths, options, None)?;
    needs::check_probe_images(&paths.repo, &study, file.as_deref())?;
    let study_dir = file.as_deref().and_then(Path::parent);
    let f = &options.fleet;
    let entries = standin::resolve(&f.names, study_dir, f.allow_plain_tcp)?;
    let Prepared {
        engine, manifest, ..
    } = prepare(&paths.repo, &for_study(&study, options)).await?;
    needs::check_runnable(&study, &manifest)?;
    let surveyed = standin::survey(&entries, probe_tag(&study, &manifest)?).await?;
    let cpus = options.cpus.clone().unwrap_or(CpuChoice::Auto);
    hosts::fit(&study, &cpus, &surveyed).await?;
    if mode == Mode::Spread {
        let classes: Vec<_> = (surveyed.iter())
            .map(|s| (s.entry.name.clone(), s.class.clone()))
            .collect();
        assign::one_class(&classes)?;
    }
    let shards = assign::assign(surveyed.len(), mode);
    let top = RunDir::create(&paths.results, &study.id)?;
    let text = super::run::study_text(options)?;
    let fleet = FleetRecord {
        mode,
        images: placement_name(placement(options)).to_string(),
        coordinator: hosts::coordinator(),
        hosts: (surveyed.iter().zip(&shards))
            .map(|(s, shard)| new_host(s, *shard))
            .collect(),
    };
    let started = (|| {
        top.write(run_dir::STUDY, text.as_bytes())?;
        top.write_json(run_dir::MANIFEST, &manifest)?;
        top.write_json(run_dir::FLEET, &fleet)
    })();
    if let Err(e) = started {
        let _ = std::fs::remove_dir_all(top.path());
        return Err(e.context("starting the run: nothing was measured"));
    }
    let seccomp = match &study.protocol.seccomp {
        Some(file) => Some(Profile::load(&paths.repo, file)?),
        None => None,
    };
    let p = &study.protocol;
    let repeats = options.repeats.map(|c| c.apply(p.repeats, p.target_cv));
    let common = Common {
        study,
        text,
        manifest,
        cpus,
        seccomp,
        repo: paths.repo.clone(),
        repeats,
    };
    let lay = hosts::Lay {
        coordinator: &engine,
        how: placement(options),
        surveyed: surveyed.into_iter().map(Some).collect(),
    };
    let result = finish::measure_and_merge(&top, fleet, lay, common, interrupt).await?;
    eprint!("{}", super::run::said(&result));
    Ok(result)
}

/// `run --resume RUN` of a fleet run: every host whose part is unfinished — lost, or stopped by
/// an interrupt — is reconnected (or replaced by a host of its class from `--hosts`), its images
/// re-checked, its sub-run resumed; then the sub-runs are merged again.
async fn resume(
    paths: &Paths,
    options: &Options,
    dir: &Path,
    interrupt: &Interrupt,
) -> Result<RunResult> {
    let top = RunDir::open(dir)?;
    let fleet: FleetRecord = serde_json::from_str(&top.read(run_dir::FLEET)?)
        .with_context(|| format!("parsing {}", top.file(run_dir::FLEET).display()))?;
    let file = top.file(run_dir::STUDY);
    let study = Study::load(&file)?;
    needs::check_probe_images(&paths.repo, &study, Some(&file))?;
    let Prepared {
        engine, manifest, ..
    } = prepare(&paths.repo, &for_study(&study, options)).await?;
    same_images(&top, &study, &manifest)?;
    let todo: Vec<usize> = (0..fleet.hosts.len())
        .filter(|&i| unfinished(&top, &fleet.hosts[i]))
        .collect();
    if todo.is_empty() {
        eprintln!(
            "every host's part of {} is measured: merging again",
            top.id()
        );
    }
    let f = &options.fleet;
    let given = standin::resolve(&f.names, None, f.allow_plain_tcp)?;
    let probe = probe_tag(&study, &manifest)?;
    let surveyed = hosts::reconnect(&fleet, &todo, &given, f.allow_plain_tcp, probe).await?;
    let text = top.read(run_dir::STUDY)?;
    let common = Common {
        study,
        text,
        manifest,
        cpus: options.cpus.clone().unwrap_or(CpuChoice::Auto),
        seccomp: None,
        repo: paths.repo.clone(),
        repeats: None,
    };
    let lay = hosts::Lay {
        coordinator: &engine,
        how: Placement::Ship,
        surveyed,
    };
    let result = finish::measure_and_merge(&top, fleet, lay, common, interrupt).await?;
    eprint!("{}", super::run::said(&result));
    Ok(result)
}

/// A host's part is unfinished when it was lost or its sub-run is not complete.
fn unfinished(top: &RunDir, host: &HostRecord) -> bool {
    if host.status == HostStatus::Lost {
        return true;
    }
    let sub = RunDir::at(&hosts_dir(top).join(&host.folder));
    !matches!(sub.load_state(), Ok(s) if s.status == run_dir::Status::Complete)
}

/// The coordinator's images now are those the run started with: same image ID for every probe.
fn same_images(top: &RunDir, study: &Study, now: &Manifest) -> Result<()> {
    let then: Manifest = serde_json::from_str(&top.read(run_dir::MANIFEST)?)
        .with_context(|| format!("parsing {}", top.file(run_dir::MANIFEST).display()))?;
    for probe in &study.probes {
        let (a, b) = (then.get(&probe.image), now.get(&probe.image));
        if let (Some(a), Some(b)) = (a, b)
            && a.id != b.id
        {
            bail!(
                "image {} is {} here now, and run {} measured {}: its samples would mix two \
                 binaries; start a new run",
                probe.image,
                b.id,
                top.id(),
                a.id
            );
        }
    }
    Ok(())
}

fn new_host(s: &Surveyed, shard: Option<crate::run::shard::Shard>) -> HostRecord {
    HostRecord {
        name: s.entry.name.clone(),
        folder: record::folder_name(&s.entry.name),
        address: s.entry.endpoint.url(),
        class: s.class.clone(),
        plain_tcp: s.entry.endpoint.is_plain_tcp(),
        boot_id: s.boot_id.clone(),
        shard,
        status: HostStatus::Ok,
        reason: None,
        lost: Vec::new(),
        engines: Vec::new(),
        placement: Vec::new(),
    }
}

/// `<run>/hosts/`.
pub(crate) fn hosts_dir(top: &RunDir) -> PathBuf {
    top.file(run_dir::HOSTS)
}

fn placement(options: &Options) -> Placement {
    match options.fleet.build {
        true => Placement::Build,
        false => Placement::Ship,
    }
}

fn placement_name(p: Placement) -> &'static str {
    match p {
        Placement::Ship => "ship",
        Placement::Build => "build",
    }
}

fn for_study(study: &Study, options: &Options) -> BuildOptions {
    BuildOptions {
        strict: options.strict_build,
        ..super::prepare::for_study(study)
    }
}

/// The tag of the study's first built probe image (what a survey runs).
fn probe_tag<'a>(study: &Study, manifest: &'a Manifest) -> Result<&'a str> {
    study
        .probes
        .iter()
        .find_map(|p| manifest.get(&p.image))
        .map(|i| i.tag.as_str())
        .context("no probe image of the study was built")
}

#[cfg(test)]
mod tests;
