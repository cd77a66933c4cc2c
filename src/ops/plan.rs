//! `parkbench plan STUDY`: everything that can be known before a build or a run, in about a
//! second. Load the study (its claims against its kinds, its factors) → its images' recipes, pins
//! and Dockerfiles → the programs they name → its kernels and CPUs against this host → the matrix
//! and its expected time → which images the Engine holds and which a run would build, and how long
//! they last took. The Engine is asked last and only for the image list: without it, everything
//! else is still checked, and the plan says what it could not.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::{Ending, Paths};
use crate::engine::{Containers, Engine};
use crate::images::cache::Cache;
use crate::images::plan::{Graph, Node};
use crate::images::tags::{self, Planned};
use crate::images::{self, artifact, lint, pin, timing};
use crate::run::plan::{clock, describe, matrix};
use crate::run::run_dir::{self, RunDir};
use crate::run::{guest, needs};
use crate::study::cpus::{Chosen, CpuChoice, choose_cpus};
use crate::study::{Study, cpuset};
use crate::yaml::{Doc, Invalid};

/// What to plan.
#[derive(Debug, Clone)]
pub struct Options {
    /// The study file.
    pub study: PathBuf,
    /// The CPUs a run would be given (`--cpus`).
    pub cpus: Option<CpuChoice>,
    /// The kernels a run would be given (`--kernel`).
    pub kernel: Vec<String>,
}

/// How long the plan waits for the Engine before saying it could not ask it.
const ENGINE_WAIT: Duration = Duration::from_secs(3);

pub async fn plan(paths: &Paths, options: &Options) -> Result<Ending> {
    let started = Instant::now();
    let repo = &paths.repo;
    let Checked {
        study,
        pins,
        needed,
    } = check(repo, &options.study, &options.kernel)?;
    println!("{}", said_study(&study, &options.study));
    eprint!("{}", said_placeholders(&study, &options.study));
    print!("{}", said_programs(repo, &study, &needed)?);
    let engine = tokio::time::timeout(ENGINE_WAIT, Engine::connect()).await;
    let engine = match engine {
        Ok(Ok(engine)) => Ok(engine),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err(format!("no answer in {} s", ENGINE_WAIT.as_secs())),
    };
    let (cpus, needs_cpus) = said_cpus(&study, options, engine.as_ref().ok()).await?;
    print!("{cpus}");
    print!("{}", said_kernels(&study));
    let cache = Cache::from_env()?;
    let planned = tags::planned(&cache, &pins, repo, &needed)?;
    let latest = paths
        .results
        .join(&study.id)
        .join("runs")
        .join(run_dir::LATEST);
    let estimates = match RunDir::at(&latest).estimates() {
        e if e.source.is_some() => e,
        e => {
            super::launch::reference_estimates(paths, Some(&options.study), &study.id).unwrap_or(e)
        }
    };
    let cells = matrix(&study);
    print!("{}", said_matrix(&study, &cells));
    println!("{}", describe(&study, &cells, 0, &estimates));
    println!("{}", said_images(&cache, &planned, engine.as_ref()).await?);
    print!("{}", said_downloads(&pins, &needed));
    let unchecked = match &engine {
        Ok(_) => "",
        Err(_) => " (but which images are built: that needs the Engine)",
    };
    let cpus = match needs_cpus {
        true => "; a run here needs --cpus auto or --cpus LIST (CPUs, above)",
        false => "",
    };
    println!(
        "plan: every check passed{unchecked} in {:.2} s{cpus}; nothing was built or run",
        started.elapsed().as_secs_f64()
    );
    Ok(Ending::Ok)
}

/// A study file that passed every check made before the Engine is asked anything.
pub struct Checked {
    /// The study, laid out under the kernels asked for.
    pub study: Study,
    pub pins: pin::Pins,
    /// The images a run of it builds, and those they are built from.
    pub needed: Graph,
}

/// Every check `plan` makes without the Engine: the study file under `kernel`, its probes against
/// the image folders and their recorded versions, its factors' images, its kernels, the pins and
/// Dockerfiles of the images it needs. `explain` makes the same checks on the sweep studies it writes.
pub fn check(repo: &Path, file: &Path, kernel: &[String]) -> Result<Checked> {
    let study = Study::load(file)?.under_kernels(kernel)?;
    let pins = pin::load_all(&repo.join("toolchains"))?;
    let graph = images::graph(repo, &pins)?;
    needs::check_probe_images(repo, &study, Some(file))?;
    check_factor_images(&study, file, &graph)?;
    guest::check_names(
        &study
            .kernels()
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>(),
        &guest::known(repo)?,
    )?;
    let needed = graph.only(&needs::images(&study))?;
    check_dockerfiles(repo, &needed)?;
    check_recorded(&pins, &needed)?;
    Ok(Checked {
        study,
        pins,
        needed,
    })
}

/// The matrix, one line per probe: its image, kind, program, scales and processes.
fn said_matrix(study: &Study, cells: &[crate::run::plan::Cell]) -> String {
    let mut rows = vec![
        ["PROBE", "IMAGE", "KIND", "PROGRAM", "SCALES", "PROCESSES"]
            .map(String::from)
            .to_vec(),
    ];
    for (i, p) in study.probes.iter().enumerate() {
        let scales: Vec<String> = study.scales_of(p).iter().map(u64::to_string).collect();
        let kind = serde_json::to_value(p.kind).ok();
        rows.push(vec![
            p.id.clone(),
            p.image.clone(),
            kind.as_ref()
                .and_then(|k| k.as_str())
                .unwrap_or("?")
                .to_string(),
            p.program.clone(),
            scales.join(", "),
            cells.iter().filter(|c| c.probe == i).count().to_string(),
        ]);
    }
    format!("matrix:\n{}", table(&rows))
}

/// Rows as aligned columns, each line indented by two spaces.
fn table(rows: &[Vec<String>]) -> String {
    crate::text::columns(rows, "  ", " ", &[])
}

/// A factor level's image must be an image folder (`explain` builds it).
fn check_factor_images(study: &Study, file: &Path, graph: &Graph) -> Result<()> {
    for (f, factor) in study.factors.iter().enumerate() {
        for (l, level) in factor.levels.iter().enumerate() {
            let Some(image) = &level.image else { continue };
            if graph.get(image).is_none() {
                let text = std::fs::read_to_string(file).unwrap_or_default();
                let message = format!(
                    "factor {:?} level {:?} names image {image:?}, which no docker/ folder builds; \
                     add docker/{image}/ (a variant: docs/images.md#variants) or fix the name",
                    factor.id, level.id
                );
                let at = format!("factors[{f}].levels[{l}].image");
                return Err(
                    Doc::new(file.display().to_string(), &text).error(&Invalid::new(at, message))
                );
            }
        }
    }
    Ok(())
}

/// Every Dockerfile of the images the study needs, against its recipe, and every declared patch
/// against its file; all problems at once.
fn check_dockerfiles(repo: &Path, graph: &Graph) -> Result<()> {
    let docker = repo.join("docker");
    let mut problems = Vec::new();
    let mut lines = Vec::new();
    for node in graph.nodes() {
        if let Node::Recipe(recipe) = node {
            problems.extend(lint::check_dockerfile(&docker, recipe)?);
            // Declared patches hold whether or not the image can be built here.
            if let Err(e) = recipe.check_patches() {
                lines.push(format!("{e:#}"));
            }
        }
    }
    lines.splice(0..0, problems.into_iter().map(|p| p.message));
    if !lines.is_empty() {
        bail!("{}", lines.join("\n"));
    }
    Ok(())
}

/// Every pin the needed images are made from has its sha256 recorded: a placeholder is refused,
/// naming the command that records it. All such pins at once. A pin no source of which the kit can
/// use (a download layout it cannot unpack) is left to the build, which marks its images
/// unavailable: no command could record it.
fn check_recorded(pins: &pin::Pins, graph: &Graph) -> Result<()> {
    let recordable = |p: &pin::Pin| {
        let usable = p
            .sources
            .iter()
            .any(|s| artifact::not_implemented(s).is_none());
        p.has_placeholder() && usable
    };
    let mut names: Vec<&str> = (graph.nodes().iter())
        .flat_map(Node::pins)
        .filter(|name| pins.get(name).is_ok_and(recordable))
        .collect();
    names.sort_unstable();
    names.dedup();
    let lines: Vec<String> = (names.iter())
        .map(|name| {
            format!(
                "toolchains/{name}.yaml: its sha256 is the placeholder {}, recorded by nothing \
                 yet: run `parkbench pin update {name}` (it builds the artifact and writes its \
                 sha256 into the pin)",
                pin::PLACEHOLDER_SHA256
            )
        })
        .collect();
    if !lines.is_empty() {
        bail!("{}", lines.join("\n"));
    }
    Ok(())
}

/// A warning for each field that still holds the text `parkbench new study` left in it.
fn said_placeholders(study: &Study, file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let doc = Doc::new(file.display().to_string(), &text);
    let mut out = String::new();
    for field in super::new::placeholders_left(study) {
        let at = doc.mark(field).map(|m| format!(":{m}")).unwrap_or_default();
        out.push_str(&format!(
            "warning: {}{at}: {field} still holds the placeholder `parkbench new study` wrote: \
             replace it with the study's own\n",
            file.display()
        ));
    }
    out
}

fn said_study(study: &Study, file: &Path) -> String {
    format!(
        "study {} ({}): valid: {}, {}, {}",
        study.id,
        file.display(),
        crate::text::count(study.probes.len(), "probe", "probes"),
        crate::text::count(study.claims.len(), "claim", "claims"),
        crate::text::count(study.factors.len(), "factor", "factors")
    )
}

/// Each probe's program and the programs its image records, with what names them.
fn said_programs(repo: &Path, study: &Study, graph: &Graph) -> Result<String> {
    let docker = repo.join("docker");
    let mut rows = Vec::new();
    for node in graph.nodes() {
        let Node::Recipe(recipe) = node else { continue };
        if !recipe.probe {
            continue;
        }
        let runs: Vec<&str> = study
            .probes
            .iter()
            .filter(|p| p.image == recipe.name)
            .map(|p| p.program.as_str())
            .collect();
        for program in lint::programs(&docker, recipe)? {
            let role = if runs.contains(&program.path.as_str()) {
                "runs"
            } else {
                ""
            };
            let from = match program.named_by {
                Some(by) => format!("named by its {by}"),
                None => format!(
                    "not named in docker/{}/: it must be in {}, which the build checks",
                    recipe.name,
                    program
                        .final_image
                        .as_deref()
                        .map_or("the image its last FROM names".to_string(), |i| {
                            format!("image {i}, where its last stage starts")
                        })
                ),
            };
            rows.push(vec![recipe.name.clone(), role.into(), program.path, from]);
        }
    }
    Ok(format!(
        "programs (as far as the sources tell; a build reads them back):\n{}",
        table(&rows)
    ))
}

/// The CPUs a run would pin to, and whether a run here needs `--cpus`: with none given, a study
/// pinning CPUs this host lacks is planned as `--cpus auto` would run it, and said so (the study is
/// valid; only this host cannot run it as written). A `--cpus` list this host lacks is an error.
async fn said_cpus(
    study: &Study,
    options: &Options,
    engine: Option<&Engine>,
) -> Result<(String, bool)> {
    let (available, whose) = match engine {
        Some(e) => match e.cpus().await {
            Ok(cpus) => (cpus, "the Engine's"),
            Err(_) => (host_cpus(), "this host's"),
        },
        None => (host_cpus(), "this host's"),
    };
    let choice = options.cpus.clone().unwrap_or(CpuChoice::Study);
    let requested = &study.protocol.cpus;
    let (chosen, warning) = match choose_cpus(requested, &available, &choice) {
        Err(e) if options.cpus.is_none() => {
            let auto = choose_cpus(requested, &available, &CpuChoice::Auto)?;
            (
                auto,
                Some(format!("warning: {e:#}; planned as --cpus auto runs it\n")),
            )
        }
        chosen => (chosen?, None),
    };
    let needs_cpus = warning.is_some();
    let Chosen { cpus, deviations } = chosen;
    let mut s = warning.unwrap_or_default();
    s += &format!(
        "CPUs: {} of {whose} {} ({})\n",
        cpuset::format(&cpus),
        cpuset::format(&available),
        if deviations.is_empty() {
            "as the study asks".to_string()
        } else {
            deviations.join("; ")
        }
    );
    for p in &study.probes {
        if p.cpus.is_some_and(|n| n > cpus.len()) {
            s.push_str(&format!(
                "  warning: probe {} asks for {} CPUs, a run here has {}: its cells would be \
                 invalid\n",
                p.id,
                p.cpus.unwrap_or(0),
                cpus.len()
            ));
        }
    }
    Ok((s, needs_cpus))
}

fn host_cpus() -> Vec<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
}

fn said_kernels(study: &Study) -> String {
    let kernels = study.kernels();
    let guests: Vec<&str> = kernels
        .iter()
        .copied()
        .filter(|k| *k != crate::study::kernel::HOST)
        .collect();
    let mut out = format!("kernels: {}\n", kernels.join(", "));
    if !guests.is_empty() && !Path::new("/dev/kvm").exists() {
        out.push_str(
            "  warning: no /dev/kvm on this host: a guest kernel runs in a VM, which needs KVM \
             (docs/kernels.md)\n",
        );
    }
    out
}

/// Which images the Engine holds as a build would reuse them, which a run would build, and how
/// long those last took, and what the build would cost.
async fn said_images<E: crate::engine::Images>(
    cache: &Cache,
    planned: &[Planned],
    engine: Result<&E, &String>,
) -> Result<String> {
    let mut out = String::from("images:\n");
    let engine = match engine {
        Ok(engine) => engine,
        Err(why) => {
            let rows: Vec<Vec<String>> = planned
                .iter()
                .map(|p| vec![p.name.clone(), p.tag.clone()])
                .collect();
            out.push_str(&table(&rows));
            return Ok(out
                + &format!(
                    "build: not checked: the Engine is unreachable ({why}), so which of these images \
                 are already built is unknown"
                ));
        }
    };
    let mut to_build = 0;
    let mut known = 0.0;
    let mut unknown = 0;
    let mut rows = Vec::new();
    for p in planned {
        let state = if tags::cached(engine, p).await? {
            "built".to_string()
        } else {
            to_build += 1;
            let state = match timing::last(cache, &p.name) {
                Some(t) => {
                    known += t.seconds;
                    format!("to build (last build {:.0} s)", t.seconds)
                }
                None => {
                    unknown += 1;
                    "to build (no build time recorded)".to_string()
                }
            };
            // Its tag names a placeholder for what is not vendored yet: no image has it.
            match p.unvendored.as_slice() {
                [] => state,
                tools => format!(
                    "to build (its {} dependencies are not vendored yet: the build fetches them)",
                    tools.join("/")
                ),
            }
        };
        rows.push(vec![p.name.clone(), p.tag.clone(), state]);
    }
    out.push_str(&table(&rows));
    let time = Duration::from_secs_f64(known);
    Ok(out
        + &match (to_build, unknown) {
            (0, _) => "build: every image is built; a run starts measuring at once".to_string(),
            (n, 0) => format!(
                "build: {n} images to build, ≈ {} by their last builds",
                clock(time)
            ),
            (n, u) if u == n => format!("build: {n} images to build (no build time recorded yet)"),
            (n, u) => format!(
                "build: {n} images to build, ≥ {} by their last builds ({u} without a recorded time)",
                clock(time)
            ),
        })
}

/// Pins made only of downloads: no source of them may be reachable here, and the images made from
/// them are then unavailable (their probes `not measured`), which only the build can tell.
fn said_downloads(pins: &pin::Pins, graph: &Graph) -> String {
    let mut out = String::new();
    for node in graph.nodes() {
        for name in node.pins() {
            let Ok(p) = pins.get(name) else { continue };
            if p.sources.iter().all(|s| matches!(s, pin::Source::Url(_))) {
                out.push_str(&format!(
                    "  note: {} needs pin {name}, made only of downloads: unless one is reachable \
                     here it is unavailable, and its probes are not measured\n",
                    node.name()
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
