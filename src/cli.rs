//! The commands, and the one place that maps outcomes to exit codes. Their arguments are in `args`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use tokio_util::sync::CancellationToken;

use crate::archive;
use crate::args::*;
use crate::cache::Cache;
use crate::engine::Engine;
use crate::image::{self, BuildOptions, Manifest};
use crate::outcome::{self, Outcome};
use crate::run::{self, CpuChoice};
use crate::study::Study;
use crate::{doctor, env, pin};

/// Exit code: everything worked.
pub const EXIT_OK: u8 = 0;
/// Exit code: the kit itself failed (bad input, Engine unreachable, build failed…).
pub const EXIT_KIT: u8 = 1;
/// Exit code: the run finished but some probe processes failed (invalid samples).
pub const EXIT_PROBES_FAILED: u8 = 3;
/// Exit code: with `--strict`, a claim was not reproduced.
pub const EXIT_CLAIMS_DIFFER: u8 = 4;
/// Exit code: interrupted; the run is kept and can be resumed.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Where the repository and the results are.
pub struct Paths {
    pub repo: PathBuf,
    pub results: PathBuf,
}

pub async fn dispatch(cli: Cli) -> Result<u8> {
    let paths = Paths {
        results: cli
            .results
            .clone()
            .unwrap_or_else(|| cli.repo.join("results")),
        repo: cli.repo,
    };
    match cli.command {
        Command::Doctor => cmd_doctor().await,
        Command::Build(args) => cmd_build(&paths.repo, &args).await.map(|_| EXIT_OK),
        Command::Run(args) => cmd_run(&paths, &args).await,
        Command::Report(args) => cmd_report(&args.run_dir).map(|_| EXIT_OK),
        Command::Archive(args) => cmd_archive(&paths.repo, &args.run_dir, args.with_images)
            .await
            .map(|_| EXIT_OK),
        Command::Check(args) => cmd_check(&args.archive),
        Command::Verify(args) => cmd_verify(&args.path),
        Command::Reproduce(args) => cmd_reproduce(&paths, &args).await,
        Command::Clean(args) => cmd_clean(&args).await,
        Command::Bench(BenchCommand::Fidelity(args)) => cmd_fidelity(&paths.repo, &args).await,
    }
}

async fn cmd_doctor() -> Result<u8> {
    let cache = Cache::from_env()?;
    let (table, ok) = doctor::render(&doctor::run(cache.root()).await);
    print!("{table}");
    Ok(if ok { EXIT_OK } else { EXIT_KIT })
}

fn check_repo(repo: &Path) -> Result<()> {
    for dir in ["docker", "toolchains"] {
        if !repo.join(dir).is_dir() {
            bail!(
                "{} has no {dir}/ folder: run parkbench from the repository root or pass --repo DIR",
                repo.display()
            );
        }
    }
    Ok(())
}

async fn cmd_build(repo: &Path, args: &BuildArgs) -> Result<Manifest> {
    check_repo(repo)?;
    let pins = pin::load_all(&repo.join("toolchains"))?;
    let cache = Cache::from_env()?;
    let engine = Engine::connect().await?;
    let options = BuildOptions {
        no_cache: args.no_cache,
        verbose: args.verbose,
    };
    let manifest = image::build_all(&engine, &cache, &pins, repo, &options).await?;
    print!("{}", image::table(&manifest));
    if let Some(path) = &args.manifest {
        crate::cache::write_atomic(path, serde_json::to_string_pretty(&manifest)?.as_bytes())?;
        eprintln!("manifest written to {}", path.display());
    }
    Ok(manifest)
}

/// Cancelled on the first Ctrl-C; the running container is removed and the run kept.
fn interrupt_token() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!(
                "\ninterrupted: removing the running container and keeping every sample so far"
            );
            t.cancel();
        }
    });
    token
}

async fn cmd_run(paths: &Paths, args: &RunArgs) -> Result<u8> {
    let result = run_study(paths, args).await?;
    Ok(run_exit_code(&result))
}

fn run_exit_code(result: &run::RunResult) -> u8 {
    if result.interrupted {
        eprintln!(
            "run incomplete; resume with: parkbench run --resume {}",
            result.dir.display()
        );
        EXIT_INTERRUPTED
    } else if result.invalid > 0 {
        eprintln!("{} invalid sample(s): see samples.jsonl", result.invalid);
        EXIT_PROBES_FAILED
    } else {
        EXIT_OK
    }
}

/// Build (no-op when unchanged) and run; returns where the samples are.
pub async fn run_study(paths: &Paths, args: &RunArgs) -> Result<run::RunResult> {
    let repo = &paths.repo;
    let (study, dir) = match &args.resume {
        Some(dir) => (Study::load(&dir.join("study.yaml"))?, Some(dir.clone())),
        None => (
            match &args.study {
                Some(path) => Study::load(path)?,
                None => Study::default_study(),
            },
            None,
        ),
    };
    let manifest = cmd_build(repo, &BuildArgs::default()).await?;
    for probe in &study.probes {
        if let Some(reason) = manifest.unavailable(&probe.image) {
            bail!(
                "probe {:?} needs image {:?}, which is unavailable on this machine: {reason}",
                probe.id,
                probe.image
            );
        }
        if manifest.get(&probe.image).is_none() {
            bail!(
                "probe {:?} names image {:?}; known probe images: {}",
                probe.id,
                probe.image,
                image::probe_names(repo)?.join(", ")
            );
        }
    }
    let engine = Engine::connect().await?;
    let (dir, mut state) = match dir {
        Some(dir) => {
            let state = run::load_state(&dir)?;
            (dir, state)
        }
        None => new_run(&engine, paths, &study, args, &manifest).await?,
    };
    let cancel = interrupt_token();
    let result = run::execute(&engine, &study, &manifest, &dir, &mut state, &cancel).await?;
    run::link_latest(&dir)?;
    if let Some(ratio) = result.overhead() {
        eprintln!(
            "kit overhead: {:.1} s wall for {:.1} s of probe lifetimes ({ratio:.3}×)",
            result.wall_ms / 1000.0,
            result.probe_ms / 1000.0
        );
    }
    eprintln!("samples: {}", dir.join("samples.jsonl").display());
    Ok(result)
}

async fn new_run(
    engine: &Engine,
    paths: &Paths,
    study: &Study,
    args: &RunArgs,
    manifest: &Manifest,
) -> Result<(PathBuf, run::RunState)> {
    let available = engine.cpus().await?;
    let choice = args.cpus.clone().unwrap_or(CpuChoice::Study);
    let (cpus, deviations) = run::choose_cpus(&study.protocol.cpus, &available, &choice)?;
    let (run_id, dir) = run::create_run_dir(&paths.results, study)?;
    let text = match &args.study {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => crate::study::DEFAULT_STUDY.to_string(),
    };
    let write = |name: &str, bytes: &[u8]| crate::cache::write_atomic(&dir.join(name), bytes);
    write("study.yaml", text.as_bytes())?;
    write(
        "manifest.json",
        serde_json::to_string_pretty(manifest)?.as_bytes(),
    )?;
    let probe_image = &manifest
        .get(&study.probes[0].image)
        .context("probe image")?
        .tag;
    let environment = env::record(engine, manifest, probe_image, &paths.repo).await?;
    write(
        "env.json",
        serde_json::to_string_pretty(&environment)?.as_bytes(),
    )?;
    let state = run::new_state(&run_id, study, &cpus, deviations);
    run::save_state(&dir, &state)?;
    eprintln!(
        "run {run_id}: CPUs {} ({} workers) in {}",
        state.cpus_pinned,
        state.workers,
        dir.display()
    );
    Ok((dir, state))
}

async fn cmd_fidelity(repo: &Path, args: &FidelityArgs) -> Result<u8> {
    let manifest = cmd_build(repo, &BuildArgs::default()).await?;
    let engine = Engine::connect().await?;
    let mut study = Study::default_study();
    study.protocol.scales = vec![args.tasks];
    study.protocol.repeats = args.repeats;
    let available = engine.cpus().await?;
    let (cpus, deviations) = run::choose_cpus(&study.protocol.cpus, &available, &args.cpus)?;
    let state = run::new_state("bench-fidelity", &study, &cpus, deviations);
    print!(
        "{}",
        crate::bench::fidelity(&engine, &study, &manifest, &state).await?
    );
    Ok(EXIT_OK)
}

async fn cmd_clean(args: &CleanArgs) -> Result<u8> {
    if !args.images && !args.cache {
        bail!("say what to remove: --images, --cache, or both");
    }
    if args.images {
        let engine = Engine::connect().await?;
        let removed = engine.remove_images(&image::namespace()).await?;
        eprintln!("removed {} image tag(s)", removed.len());
    }
    if args.cache {
        let cache = Cache::from_env()?;
        let root = cache.root();
        if root.exists() {
            std::fs::remove_dir_all(root)
                .with_context(|| format!("removing {}", root.display()))?;
        }
        eprintln!("removed the artifact cache {}", root.display());
    }
    Ok(EXIT_OK)
}

/// Recomputes and writes a run's report and verdicts, prints the verdict table.
fn cmd_report(run_dir: &Path) -> Result<Outcome> {
    let outcome = outcome::recompute(&archive::read_run_dir(run_dir)?)?;
    outcome.write_report(run_dir)?;
    print!("{}", outcome.terminal());
    eprintln!("report: {}", run_dir.join("report.md").display());
    Ok(outcome)
}

/// The source bundle of an archive: the repository parts needed to rebuild and rerun, and the
/// checksums of every vendored crate.
fn sources(repo: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out: Vec<(String, PathBuf)> = [
        "Cargo.toml",
        "Cargo.lock",
        "Justfile",
        "README.md",
        "src",
        "docker",
        "toolchains",
    ]
    .iter()
    .map(|p| (p.to_string(), repo.join(p)))
    .filter(|(_, p)| p.exists())
    .collect();
    out.extend(image::vendored_checksums(&Cache::from_env()?, repo)?);
    Ok(out)
}

async fn cmd_archive(
    repo: &Path,
    run_dir: &Path,
    with_images: bool,
) -> Result<archive::ArchiveInfo> {
    // `runs/latest` is a link: the archive is named after the run it points at.
    let run_dir = &std::fs::canonicalize(run_dir)
        .with_context(|| format!("reading run directory {}", run_dir.display()))?;
    let out = run_dir.with_extension("tar.gz");
    let images = tempfile::tempdir().context("creating a folder for exported images")?;
    let mut extras = Vec::new();
    if with_images {
        let manifest: Manifest = serde_json::from_str(
            &std::fs::read_to_string(run_dir.join("manifest.json"))
                .context("reading the run's manifest.json")?,
        )?;
        let engine = Engine::connect().await?;
        let probes = image::probe_names(repo)?;
        for img in manifest.images.iter().filter(|i| probes.contains(&i.name)) {
            let path = images.path().join(format!("{}.tar", img.name));
            eprintln!("exporting {}", img.tag);
            engine.export_image(&img.tag, &path).await?;
            extras.push((format!("images/{}.tar", img.name), path));
        }
    }
    let info = archive::write_with(run_dir, &sources(repo)?, &extras, &out)?;
    eprintln!(
        "archive: {} ({:.1} KiB, {} members, sha256 {})",
        info.path.display(),
        info.size_bytes as f64 / 1024.0,
        info.members,
        info.sha256
    );
    Ok(info)
}

fn cmd_check(path: &Path) -> Result<u8> {
    let report = archive::check(path).with_context(|| format!("checking {}", path.display()))?;
    println!("{report}");
    Ok(EXIT_OK)
}

/// Recomputes from raw samples; a stored verdicts.json that disagrees is an error.
fn cmd_verify(path: &Path) -> Result<u8> {
    let files = if path.is_dir() {
        archive::read_run_dir(path)?
    } else {
        archive::read_run(path)?
    };
    let outcome = outcome::recompute(&files)?;
    print!("{}", outcome.terminal());
    if let Some(stored) = &files.verdicts_json {
        let stored: crate::verdict::VerdictFile =
            serde_json::from_str(stored).context("parsing the stored verdicts.json")?;
        if stored.verdicts != outcome.verdicts {
            bail!(
                "the verdicts recomputed from samples.jsonl differ from the stored verdicts.json: the run was altered or the statistics changed"
            );
        }
        eprintln!("verdicts recomputed from the raw samples match the stored verdicts.json");
    }
    Ok(EXIT_OK)
}

/// The whole job, each stage one line.
async fn cmd_reproduce(paths: &Paths, args: &ReproduceArgs) -> Result<u8> {
    if cmd_doctor().await? != EXIT_OK {
        bail!("the machine is not ready (see the FAIL lines above)");
    }
    let run = run_study(paths, &args.run).await?;
    if run.interrupted {
        return Ok(run_exit_code(&run));
    }
    let outcome = cmd_report(&run.dir)?;
    let info = cmd_archive(&paths.repo, &run.dir, args.with_images).await?;
    println!(
        "\narchive: {}\ncheck it with: parkbench check {}",
        info.path.display(),
        info.path.display()
    );
    if args.strict && outcome.claims_differ() {
        eprintln!("--strict: some claims were not reproduced");
        return Ok(EXIT_CLAIMS_DIFFER);
    }
    Ok(run_exit_code(&run))
}
