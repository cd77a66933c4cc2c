//! `reproduce --pinned-driver FILE` (what `just reproduce` runs): the command handed over to the
//! pinned driver. The driver running (the host's build) checks the command's studies as their runs
//! will, builds the pinned driver at FILE while the images those runs need build beside it (each
//! build waits for a base or toolchain image the other is building, then reuses it), then replaces
//! itself with FILE running the same command, which finds its images built. On a fresh machine the
//! image builds overlap the driver's compile instead of following it, and the run, its report and
//! its archive are the pinned driver's work.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::driver::{self, Written};
use super::launch::{self, Options};
use super::{Ending, Paths, fleet, prepare};
use crate::engine::Engine;
use crate::run::lifecycle;
use crate::run::needs;
use crate::run::run_dir::RunDir;

/// Set in the environment of the driver [`hand_over`] runs.
const HANDED_OVER: &str = "PARKBENCH_HANDED_OVER";

/// Whether this process was handed its command over by another driver.
pub fn handed_over() -> bool {
    std::env::var_os(HANDED_OVER).is_some()
}

/// Whether this process runs from `file`.
pub fn running_from(file: &Path) -> bool {
    let exe = std::env::current_exe().and_then(|e| e.canonicalize());
    matches!((exe, file.canonicalize()), (Ok(exe), Ok(file)) if exe == file)
}

/// Hands this process's command (a run of `run`'s study, or of every study in `results/` with
/// `all`) over to the pinned driver it builds at `out`; returns only with an error. A study that
/// cannot run fails here, before anything builds (with `all`, it is said and left to the run of
/// every study); an image that fails to build is said and left to the run, which builds it again;
/// a driver that cannot be built in the pinned toolchain image is this one copied, as `parkbench
/// driver --or-host` does, and said.
pub async fn hand_over(paths: &Paths, run: &Options, all: bool, out: &Path) -> Result<Ending> {
    if handed_over() {
        bail!(
            "--pinned-driver {}: this parkbench was handed the command over, but it does not run \
             from that file (replaced meanwhile?), and hands it over no further: run the command \
             again",
            out.display()
        );
    }
    let images = images_needed(paths, run, all).await?;
    // Both in this command's future, as the images build side by side: a Ctrl-C drops both.
    let (written, built) = tokio::join!(
        driver::written(&paths.repo, out, false, true),
        build_beside(paths, run, images),
    );
    let file = (out.canonicalize()).with_context(|| format!("finding {}", out.display()))?;
    match written? {
        Written::Pinned { sha256 } => eprintln!(
            "handing the command over to the pinned driver {} (sha256 {sha256})",
            out.display()
        ),
        Written::Host => eprintln!(
            "handing the command over to {}: this host's build, not the pinned one (above)",
            out.display()
        ),
    }
    // What the builds' guards left to remove, removed before this process is replaced.
    crate::engine::settle().await;
    use std::io::Write;
    let _ = (std::io::stdout().flush(), std::io::stderr().flush());
    let mut command = std::process::Command::new(&file);
    command
        .args(std::env::args_os().skip(1))
        .env(HANDED_OVER, "1");
    if !built.is_empty() {
        command.env(prepare::BUILT_BEFORE_HAND_OVER, built.join(" "));
    }
    let err = std::os::unix::process::CommandExt::exec(&mut command);
    Err(err).with_context(|| format!("running {}", file.display()))
}

/// Builds `images` as the run would, saying those that failed: the run builds them again. The tags
/// it built (not those it found).
async fn build_beside(paths: &Paths, run: &Options, images: Vec<String>) -> Vec<String> {
    if images.is_empty() {
        return Vec::new();
    }
    eprintln!(
        "building the images the run needs ({}) beside the pinned driver",
        images.join(", ")
    );
    // The driver's compile is what the command waits for: these builds take the CPUs it leaves.
    let options = crate::images::BuildOptions {
        beside: true,
        ..launch::build_options(run, images)
    };
    match prepare::build_quietly(&paths.repo, &options).await {
        Ok(manifest) => {
            let failed: Vec<&str> = (manifest.failed.iter())
                .filter(|f| f.parent.is_none())
                .map(|f| f.name.as_str())
                .collect();
            if !failed.is_empty() {
                eprintln!(
                    "warning: the build of {} failed beside the driver (above); the run builds it \
                     again, and records why if it fails again",
                    failed.join(", ")
                );
            }
            (manifest.images.into_iter())
                .filter(|i| i.built)
                .map(|i| i.tag)
                .collect()
        }
        Err(e) => {
            eprintln!(
                "warning: the images were not all built beside the driver ({e:#}); the run builds \
                 them"
            );
            Vec::new()
        }
    }
}

/// The images the command's runs will build, each study checked as its run checks it before it
/// builds: loaded, its probes' images, a new run's seccomp profile, slice and CPUs, a run across
/// hosts' options. With `all`, a study that cannot run is said and left out: the run of every study
/// says it again and goes on with the others.
async fn images_needed(paths: &Paths, run: &Options, all: bool) -> Result<Vec<String>> {
    let engine = Engine::connect().await?;
    if !all {
        return images_of(paths, &engine, run).await;
    }
    let mut images = Vec::new();
    for file in crate::outputs::index::studies(&paths.results)? {
        let one = Options {
            study: Some(file.clone()),
            ..run.clone()
        };
        match images_of(paths, &engine, &one).await {
            Ok(more) => images.extend(more),
            Err(e) => eprintln!(
                "warning: study {}: {e:#}; its images are not built beside the driver",
                file.display()
            ),
        }
    }
    images.sort();
    images.dedup();
    Ok(images)
}

/// The images one run builds (the part of its study a partial run measures), once checked.
async fn images_of(paths: &Paths, engine: &Engine, run: &Options) -> Result<Vec<String>> {
    let resume = run.resume.as_deref().map(RunDir::open).transpose()?;
    let fleet = fleet::is_fleet(run);
    if fleet {
        fleet::check(run)?;
        if resume.is_some() {
            // A run across hosts resumes from its own record: left to it.
            return Ok(Vec::new());
        }
    }
    let checked = launch::check(paths, run, resume.as_ref())?;
    if resume.is_none() && !fleet {
        lifecycle::choose(engine, &checked.study, run.cpus.as_ref()).await?;
    }
    Ok(needs::images(&checked.measured))
}
