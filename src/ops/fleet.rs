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
use crate::engine::Engine;
use crate::images::Manifest;
use crate::images::cache::Cache;
use crate::images::pin::{self, Pins};
use crate::images::place::{Placement, Sources};
use crate::run::fleet::assign::{self, Mode};
use crate::run::fleet::host_run::Common;
use crate::run::fleet::hosts as names;
use crate::run::fleet::record::{self, FleetRecord, HostRecord, HostStatus};
use crate::run::fleet::survey::{self, Surveyed};
use crate::run::lifecycle::RunResult;
use crate::run::needs;
use crate::run::run_dir::{self, RunDir};
use crate::run::seccomp::Profile;
use crate::study::cpus::CpuChoice;
use crate::study::{Repeats, Study};

use super::launch::{Options, build_options, load, said, study_text};

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
    if options.slice.is_some() && !f.names.is_empty() {
        bail!(
            "--only and --scales make a smoke run on this machine, and --hosts lays the whole \
             study over hosts: leave out --hosts for a partial run"
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
    let (study, file) = load(paths, options, None)?;
    needs::check_probe_images(&paths.repo, &study, file.as_deref())?;
    let f = &options.fleet;
    let entries = names::resolve(
        &f.names,
        file.as_deref().and_then(Path::parent),
        f.allow_plain_tcp,
    )?;
    let reached = hosts::connect(&entries).await?;
    let p = &study.protocol;
    let repeats = options.repeats.map(|c| c.apply(p.repeats, p.target_cv));
    let text = study_text(options)?;
    let (engine, cache, pins, common) = prepared(paths, options, study, text, repeats).await?;
    needs::check_runnable(&common.study, &common.manifest)?;
    let top = RunDir::create(&paths.results, &common.study.id)?;
    let written = (|| {
        top.write(run_dir::STUDY, common.text.as_bytes())?;
        top.write_json(run_dir::MANIFEST, &common.manifest)
    })();
    let started = match written {
        Ok(()) => hosts::take(&reached, &top.id()).await,
        Err(e) => Err(e),
    };
    let leases = started.map_err(|e| abandon(&top, e))?;
    let lay = Lay {
        coordinator: &engine,
        reached,
        how: placement(options),
        sources: Sources {
            cache: &cache,
            pins: &pins,
            repo: &paths.repo,
        },
    };
    let result = start(&top, lay, mode, common, interrupt).await;
    hosts::release(leases).await;
    let result = result.map_err(|e| abandon(&top, e))?;
    eprint!("{}", said(&result));
    Ok(result)
}

/// The images of a fleet run built here, the pins, and what every host's sub-run shares.
async fn prepared(
    paths: &Paths,
    options: &Options,
    study: Study,
    text: String,
    repeats: Option<Repeats>,
) -> Result<(Engine, Cache, Pins, Common)> {
    let Prepared {
        engine,
        manifest,
        cache,
    } = prepare(&paths.repo, &build_options(options, needs::images(&study))).await?;
    let pins = pin::load_all(&paths.repo.join("toolchains"))?;
    let seccomp = match &study.protocol.seccomp {
        Some(file) => Some(Profile::load(&paths.repo, file)?),
        None => None,
    };
    let common = Common {
        text,
        study,
        manifest,
        cpus: options.cpus.clone().unwrap_or(CpuChoice::Auto),
        seccomp,
        repo: paths.repo.clone(),
        repeats,
        wait_cpus: options.wait_for_cpus,
    };
    Ok((engine, cache, pins, common))
}

/// The hosts of this invocation, reached and leased, and how images reach them.
struct Lay<'a> {
    coordinator: &'a Engine,
    reached: Vec<hosts::Reached>,
    how: Placement,
    /// What a build on a host is made from (`--images build`).
    sources: Sources<'a>,
}

/// A new fleet run, its hosts leased: images placed, hosts surveyed and fitted, cells assigned,
/// then measured and merged.
async fn start(
    top: &RunDir,
    lay: Lay<'_>,
    mode: Mode,
    common: Common,
    interrupt: &Interrupt,
) -> Result<RunResult> {
    let entries: Vec<_> = lay.reached.iter().map(|r| r.entry.clone()).collect();
    let Ready {
        busy,
        placed,
        surveyed,
    } = ready(top, &lay, &common, &entries).await?;
    if mode == Mode::Spread {
        let classes: Vec<_> = (surveyed.iter())
            .map(|s| (s.entry.name.clone(), s.class.clone()))
            .collect();
        assign::one_class(&classes)?;
    }
    let shards = assign::assign(surveyed.len(), mode);
    let fleet = FleetRecord {
        mode,
        images: placement_name(lay.how).to_string(),
        coordinator: hosts::coordinator(),
        hosts: (surveyed.iter().zip(shards).zip(placed).zip(busy))
            .map(|(((s, shard), placed), busy)| HostRecord {
                placement: placed,
                warnings: busy,
                engines: vec![s.entry.name.clone()],
                ..new_host(s, shard)
            })
            .collect(),
    };
    top.write_json(run_dir::FLEET, &fleet)?;
    let surveyed = surveyed.into_iter().map(Some).collect();
    finish::measure_and_merge(top, fleet, surveyed, common, interrupt).await
}

/// Hosts made ready to measure: what else runs on each, its images placed and checked, and its
/// facts read (through the placed images) and fitted to the study; in the order of `lay.reached`.
struct Ready {
    busy: Vec<Vec<crate::run::warning::Warning>>,
    placed: Vec<Vec<record::PlacedImage>>,
    surveyed: Vec<Surveyed>,
}

/// Warns of foreign containers, places the images, then surveys and fits `entries` (the survey
/// runs in the probe image, which only now is on every host). Shared by a new run and a resume.
async fn ready(
    top: &RunDir,
    lay: &Lay<'_>,
    common: &Common,
    entries: &[names::HostEntry],
) -> Result<Ready> {
    let busy = hosts::busy(&lay.reached, &top.id()).await?;
    let placed = hosts::place(lay.coordinator, &lay.reached, common, lay.how, &lay.sources).await?;
    let surveyed = match entries.is_empty() {
        true => Vec::new(),
        false => survey::survey(entries, probe_tag(&common.study, &common.manifest)?).await?,
    };
    hosts::fit(&common.study, &common.cpus, &surveyed)?;
    Ok(Ready {
        busy,
        placed,
        surveyed,
    })
}

/// A run that measured nothing leaves no folder; one that did is kept, to resume.
fn abandon(top: &RunDir, e: anyhow::Error) -> anyhow::Error {
    if hosts_dir(top).exists() {
        return e.context(format!(
            "run {} stopped; resume it with `parkbench run --resume {}`",
            top.id(),
            top.path().display()
        ));
    }
    let _ = std::fs::remove_dir_all(top.path());
    e.context(format!(
        "run {} did not start; its folder is removed",
        top.id()
    ))
}

/// `run --resume RUN` of a fleet run: every host whose part is unfinished — lost, or stopped by
/// an interrupt — is measured on the host of its name or another of its class (`--hosts`), its
/// images re-checked, its sub-run resumed; then the sub-runs are merged again.
async fn resume(
    paths: &Paths,
    options: &Options,
    dir: &Path,
    interrupt: &Interrupt,
) -> Result<RunResult> {
    let top = RunDir::open(dir)?;
    let mut fleet: FleetRecord = serde_json::from_str(&top.read(run_dir::FLEET)?)
        .with_context(|| format!("parsing {}", top.file(run_dir::FLEET).display()))?;
    let file = top.file(run_dir::STUDY);
    let study = Study::load(&file)?;
    needs::check_probe_images(&paths.repo, &study, Some(&file))?;
    let todo: Vec<usize> = (0..fleet.hosts.len())
        .filter(|&i| unfinished(&top, &fleet.hosts[i]))
        .collect();
    let f = &options.fleet;
    let names: Vec<String> = match f.names.is_empty() {
        true => todo.iter().map(|&i| fleet.hosts[i].name.clone()).collect(),
        false => f.names.clone(),
    };
    let entries = match todo.is_empty() {
        true => Vec::new(),
        false => names::resolve(&names, None, f.allow_plain_tcp)?,
    };
    let reached = hosts::connect(&entries).await?;
    let text = top.read(run_dir::STUDY)?;
    let (engine, cache, pins, common) = prepared(paths, options, study, text, None).await?;
    same_images(&top, &common.study, &common.manifest)?;
    let leases = hosts::take(&reached, &top.id()).await?;
    let how = match fleet.images.as_str() {
        "build" => Placement::Build,
        _ => Placement::Ship,
    };
    let lay = Lay {
        coordinator: &engine,
        reached,
        how,
        sources: Sources {
            cache: &cache,
            pins: &pins,
            repo: &paths.repo,
        },
    };
    let result = async {
        let Ready {
            busy,
            placed,
            surveyed,
        } = ready(&top, &lay, &common, &entries).await?;
        let picked = hosts::pick(&fleet, &todo, &surveyed)?;
        for (host, s) in fleet.hosts.iter_mut().zip(&picked) {
            let Some(s) = s else { continue };
            let j = (surveyed.iter()).position(|o| o.entry.name == s.entry.name);
            host.placement
                .extend(j.map(|j| placed[j].clone()).unwrap_or_default());
            for w in j.map(|j| busy[j].clone()).unwrap_or_default() {
                if !host.warnings.contains(&w) {
                    host.warnings.push(w);
                }
            }
            host.engines.push(s.entry.name.clone());
        }
        top.write_json(run_dir::FLEET, &fleet)?;
        finish::measure_and_merge(&top, fleet, picked, common, interrupt).await
    }
    .await;
    hosts::release(leases).await;
    let result = result?;
    eprint!("{}", said(&result));
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
        engine: format!("{} {}", s.facts.product(), s.facts.version),
        plain_tcp: s.entry.endpoint.is_plain_tcp(),
        boot_id: s.boot_id.clone(),
        shard,
        status: HostStatus::Ok,
        reason: None,
        lost: Vec::new(),
        engines: Vec::new(),
        warnings: Vec::new(),
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
