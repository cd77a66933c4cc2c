//! `parkbench rerun ARCHIVE`: an archive's study run again here with the archive's binaries, each
//! stage one line: open and check the archive → its images (loaded and verified, or rebuilt and
//! compared) → run → report → compare with the archived run → archive.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use super::run::{measure, study_images};
use super::{Ending, Interrupt, Paths, Prepared, archive, prepare, report};
use crate::cli::args::RerunArgs;
use crate::engine::Engine;
use crate::images::Manifest;
use crate::ops::rerun::{self, Source};
use crate::outputs::compare;
use crate::run::lifecycle::{self, Fresh, Run};
use crate::run::needs::check_runnable;
use crate::run::run_dir::{self, RunDir, RunState};
use crate::run::run_dir::{BinaryDifference, Origin};
use crate::study::repeats::Repeats;

pub async fn command(paths: &Paths, args: &RerunArgs, interrupt: &Interrupt) -> Result<Ending> {
    let source = rerun::open(&args.archive)?;
    eprintln!(
        "rerunning {} (run {} of study {}, sha256 {})",
        args.archive.display(),
        source.files.run_id,
        source.study.id,
        source.sha256
    );
    let resumed = args
        .resume
        .as_deref()
        .map(|d| resumed(d, &source))
        .transpose()?;
    let images = images(&source, args).await?;
    check_runnable(&source.study, &images.manifest)?;
    let run = run_folder(paths, args, &source, &images, resumed).await?;
    let run = measure(&images.engine, run, interrupt).await?;
    if run.interrupted {
        return Ok(Ending::of_run(&run));
    }
    report::command(run.dir.path())?;
    compare_with_archive(&source, run.dir.path())?;
    let info = archive::command(&source.repo(), run.dir.path(), false).await?;
    println!(
        "\narchive: {}\ncheck it with: parkbench check {}",
        info.path.display(),
        info.path.display()
    );
    Ok(Ending::of_run(&run))
}

/// The images a rerun runs, how they came here, and the binaries that differ from the archive's.
struct Images {
    engine: Engine,
    manifest: Manifest,
    origin: Origin,
    different: Vec<BinaryDifference>,
}

/// Loads the archive's images and verifies them, or rebuilds them from its sources and compares
/// their binaries with the archive's manifest (refused unless `--accept-different-binaries`).
async fn images(source: &Source, args: &RerunArgs) -> Result<Images> {
    if source.carries_images() {
        let engine = Engine::connect().await?;
        let started = Instant::now();
        let manifest = source.loaded_manifest();
        for image in manifest.images.iter().filter(|i| i.built) {
            let file = source
                .image_file(&image.name)
                .context("checked by rerun::open")?;
            rerun::check_saved_tags(&image.name, &image.tag, &rerun::saved_tags(&file)?)?;
            eprintln!("loading image {} from the archive", image.name);
            engine.load_image(&file).await?;
        }
        if let Err(e) = rerun::verify_loaded(&engine, &manifest).await {
            // A refused image must not stay under a tag a later build would reuse.
            for image in manifest.images.iter().filter(|i| i.built) {
                if let Err(why) = engine.remove_tag(&image.tag).await {
                    eprintln!(
                        "warning: could not remove the refused image {}: {why:#}",
                        image.tag
                    );
                }
            }
            return Err(e);
        }
        let loaded: Vec<_> = manifest.images.iter().filter(|i| i.built).collect();
        let binaries: usize = loaded.iter().map(|i| i.binaries.len()).sum();
        eprintln!(
            "loaded {} image(s) and checked {binaries} binaries against the archive's manifest in {:.1} s",
            loaded.len(),
            started.elapsed().as_secs_f64()
        );
        return Ok(Images {
            engine,
            manifest,
            origin: Origin::Loaded,
            different: Vec::new(),
        });
    }
    eprintln!("the archive carries no images: rebuilding them from its sources and pins");
    let Prepared {
        engine, manifest, ..
    } = prepare(&source.repo(), &study_images(&source.study)).await?;
    let different = lifecycle::differences(&source.manifest, &manifest, &source.images);
    if !different.is_empty() && !args.accept_different_binaries {
        return Err(rerun::refuse(&source.path, &different));
    }
    for d in &different {
        eprintln!("warning: running a different binary: {d}");
    }
    Ok(Images {
        engine,
        manifest,
        origin: Origin::Rebuilt,
        different,
    })
}

/// A new run folder naming the archive it reruns, or (`--resume`) the interrupted rerun of it.
async fn run_folder(
    paths: &Paths,
    args: &RerunArgs,
    source: &Source,
    images: &Images,
    resumed: Option<RunDir>,
) -> Result<Run> {
    let (engine, manifest, study) = (&images.engine, &images.manifest, &source.study);
    if let Some(dir) = resumed {
        let here = (study, manifest);
        return Run::resume_rerun(engine, dir, here, &source.images, &source.repo()).await;
    }
    let deviations = images
        .different
        .iter()
        .map(|d| format!("binary rebuilt here differs from the archive's: {d}"))
        .collect();
    let fresh = Fresh {
        text: &source.files.study_yaml,
        cpus: args.cpus.as_ref(),
        seccomp: source.seccomp()?,
        repo: &source.repo(),
        rerun_of: Some((
            source.rerun_of(images.origin, images.different.clone()),
            deviations,
        )),
        repeats: repeats(source, args)?,
    };
    Run::start(engine, &paths.results, study, manifest, fresh).await
}

/// The run folder `--resume` names, when it is a rerun of this very archive (checked before any
/// image is loaded or built).
fn resumed(path: &Path, source: &Source) -> Result<RunDir> {
    lifecycle::rerun_folder(path, &source.path, &source.sha256)
}

/// The processes per cell: `--repeats` applied to the study's rule, else the rule the archived run
/// had in force (its `run.json`), else the study's.
fn repeats(source: &Source, args: &RerunArgs) -> Result<Option<Repeats>> {
    let p = &source.study.protocol;
    if let Some(choice) = args.repeats {
        return Ok(Some(choice.apply(p.repeats, p.target_cv)));
    }
    let Some(text) = &source.files.run_json else {
        return Ok(None);
    };
    let state: RunState = serde_json::from_str(text).with_context(|| {
        format!(
            "{}: parsing {}/{}",
            source.path.display(),
            source.files.run_id,
            run_dir::STATE
        )
    })?;
    Ok(state.repeats)
}

/// Compares the archived run (A) with the rerun (B): prints the Markdown and writes it and the
/// figure into the rerun's folder.
fn compare_with_archive(source: &Source, run_dir: &Path) -> Result<()> {
    // The archive was checked and read when it was opened: no need to read it again.
    let a = compare::from_files(source.path.display().to_string(), &source.files)?;
    let b = compare::load(run_dir)?;
    let md = compare::markdown(&a, &b);
    let dir = RunDir::open(run_dir)?;
    dir.write(run_dir::COMPARE_MD, md.as_bytes())?;
    dir.write(run_dir::COMPARE_SVG, compare::figure(&a, &b).as_bytes())?;
    print!("\n{md}");
    eprintln!("comparison: {}", dir.file(run_dir::COMPARE_MD).display());
    Ok(())
}
