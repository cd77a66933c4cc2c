//! `parkbench explain`: a differing claim's probes rerun with one declared factor changed at a time,
//! as a run of its own under `results/<study>/explain/<claim>/`, reported, explained and archived.
//! Recompute the explained run → its claim and the factors that bear on it → the sweep of single
//! levels → the two closest levels together, when no single one reaches the published value →
//! the explanation written into every sweep's folder, archived, and linked from the run.

mod files;
mod slow;
mod variants;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};

use super::archive::{Contents, archive};
use super::report::report;
use super::{Ending, Interrupt, Paths, run};
use crate::engine::Engine;
use crate::files::write_atomic;
use crate::images::recipe;
use crate::images::timing;
use crate::outputs::explain::{self, Explanation, Sweep};
use crate::outputs::outcome::{self, Outcome};
use crate::outputs::verdict::{Status, Verdict};
use crate::run::plan::{self, Estimates};
use crate::run::run_dir::{self, RunDir, Status as RunStatus};
use crate::run::{guest, needs};
use crate::study::cpus::CpuChoice;
use crate::study::factor::{Factor, Level};
use crate::study::kernel::HOST;
use crate::study::repeats::RepeatsChoice;
use crate::study::sample::Sample;
use crate::study::{Claim, Study};
use crate::text;

/// What to explain, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The run whose claim is explained.
    pub run_dir: PathBuf,
    /// The claim's id.
    pub claim: String,
    /// Only these factors; when empty, all that bear on the claim's probes but those whose images
    /// would take longer than a few minutes to build here; `all` for every one that bears on them.
    pub factors: Vec<String>,
    /// Sweep even when the claim reproduced in the run.
    pub force: bool,
    /// Processes per variant; the study's when `None`.
    pub repeats: Option<RepeatsChoice>,
    /// The CPUs to pin to; `auto` when `None`.
    pub cpus: Option<CpuChoice>,
    /// Do not try the two closest levels together.
    pub no_pairs: bool,
    /// Measure beside another run on the same CPUs (`--allow-shared-cpus`).
    pub shared_cpus: bool,
    /// Wait for CPUs another run holds instead of being refused (`--wait-for-cpus`).
    pub wait_for_cpus: bool,
}

/// Two levels of different factors of one probe, tried together.
type Pair<'a> = (&'a Factor, &'a Level, &'a Factor, &'a Level);

pub async fn command(paths: &Paths, args: &Options, interrupt: &Interrupt) -> Result<Ending> {
    let run = RunDir::open(&args.run_dir)?;
    let explained = outcome::recompute(&run.read_files()?)
        .with_context(|| format!("reading the run {}", run.path().display()))?;
    let (study, taken_from) = with_factors(explained.study.clone(), paths)?;
    if let Some(file) = taken_from {
        eprintln!(
            "the run's study declares no factors: taking those of {}",
            file.display()
        );
    }
    let claim = claim_of(&study, &args.claim)?;
    let verdict = explained.verdicts.iter().find(|v| v.claim == claim.id);
    explainable(&run, &explained, verdict)?;
    if verdict.is_some_and(|v| v.status == Status::Reproduced) && !args.force {
        println!(
            "claim {:?} reproduced in run {}: there is nothing to explain (pass --force to sweep anyway)",
            claim.id, explained.run_id
        );
        return Ok(Ending::Ok);
    }
    let (factors, skipped, builds) = factors(paths, &study, claim, &args.factors).await?;
    let skipped: Vec<String> = skipped.iter().map(slow::Skipped::line).collect();
    for line in &skipped {
        eprintln!("{line}");
    }
    if !skipped.is_empty() {
        eprintln!(
            "(--factors {} sweeps every factor, whatever its images take to build)",
            slow::ALL
        );
    }
    let sweeps = Sweeps {
        paths,
        args,
        root: explain_root(run.path(), paths, &study),
        claim,
        explained: &explained,
        interrupt,
    };
    let sweep = make_sweep(&paths.repo, &study, claim, &factors, &[])?;
    eprintln!("{}", expected(&sweep, &builds, &explained, args.repeats));
    let Some((mut e, dir)) = sweeps.measure(sweep).await? else {
        return Ok(Ending::Interrupted);
    };
    e.skipped = skipped;
    let mut dirs = vec![dir];
    let mut ending = Ok(Ending::Ok);
    if !args.no_pairs
        && let Some(pair) = explain::pair_to_try(&e, &factors)
    {
        // The single levels' explanation is in place before the pair is tried: a Ctrl-C that
        // ends the command while the pair's images build leaves it written.
        files::write(&e, &dirs[0])?;
        files::index(run.path(), &dirs[0], &e)?;
        ending = sweeps.pair(&study, pair, &mut e, &mut dirs).await;
    }
    // What the single levels measured is published even when the pair's sweep failed.
    let published = publish(paths, (&run, &explained), &e, &dirs).await;
    if let (Err(pair), Err(_)) = (&ending, &published) {
        eprintln!("error: {}", paths.said(pair));
    }
    published?;
    ending
}

/// What the sweep is expected to take, said before anything is built: the images it builds first,
/// by their expected build times, then its processes, by the explained run's process times (a
/// variant's as its probe's).
fn expected(
    sweep: &Sweep,
    builds: &[slow::Unbuilt],
    explained: &Outcome,
    repeats: Option<RepeatsChoice>,
) -> String {
    let mut study = sweep.study.clone();
    let p = &study.protocol;
    if let Some(choice) = repeats {
        study.protocol.repeats = choice.apply(p.repeats, p.target_cv);
    }
    let estimates = estimates(&study, explained);
    // The run's own plan line, as the sweep's run will print it (≥ where some processes have no
    // time of the explained run, such as a variant under a guest kernel).
    let cells = plan::matrix(&study);
    let run = plan::describe(&study, &cells, 0, &estimates);
    let run = run.strip_prefix("plan: ").unwrap_or(&run);
    let variants = text::count(sweep.variants.len(), "variant", "variants");
    if builds.is_empty() {
        return format!("explain: {variants} and the baseline, nothing to build: {run}");
    }
    let known: f64 = builds
        .iter()
        .filter_map(|(_, e)| e.map(|e| e.seconds))
        .sum();
    let unknown = builds.iter().filter(|(_, e)| e.is_none()).count();
    let names: Vec<&str> = builds.iter().map(|(name, _)| name.as_str()).collect();
    let build = match unknown {
        0 => timing::about(known),
        n if n == builds.len() => "time unknown".to_string(),
        n => format!("{}, and {n} of no known time", timing::about(known)),
    };
    // This sweep's builds and processes together: a lower bound where one of them has no known time.
    let processes = estimates.sum(&study, &cells);
    let time = std::time::Duration::from_secs_f64(known) + processes.time;
    let bound = if unknown > 0 || processes.bound() {
        "≥"
    } else {
        "≈"
    };
    let in_all = match time.is_zero() {
        true => String::new(),
        false => format!(", expected {bound} {} in all", plan::clock(time)),
    };
    format!(
        "explain: {variants} and the baseline{in_all}: {} to build first ({}: {build}); then {run}",
        text::count(builds.len(), "image", "images"),
        names.join(", ")
    )
}

/// A sweep's process times as the explained run's: a variant probe (`<probe>~<factor>=<level>`)
/// is expected to take what its probe took, unless it runs under another kernel (a guest's boot
/// and speed are not the host's: no time).
fn estimates(sweep: &Study, explained: &Outcome) -> Estimates {
    let samples: Vec<Sample> = (sweep.probes.iter())
        .flat_map(|probe| {
            let base = (probe.id.split_once('~')).map_or(probe.id.as_str(), |(base, _)| base);
            let same_kernel = sweep.probe(base).is_some_and(|b| b.kernel == probe.kernel);
            (explained.samples.iter())
                .filter(move |s| same_kernel && s.probe == base)
                .map(|s| Sample {
                    probe: probe.id.clone(),
                    ..s.clone()
                })
        })
        .collect();
    Estimates::from_samples(&samples, Some(explained.run_id.clone()))
}

/// The factors to sweep, checked before anything is built or run: those `named`, or (none named)
/// every factor that bears on `claim` but those whose images would take long to build here, which
/// are returned beside them, each with the flag that includes it (`all`: every one); and the images
/// the sweep builds first ([`slow::to_build`]).
async fn factors<'a>(
    paths: &Paths,
    study: &'a Study,
    claim: &Claim,
    named: &[String],
) -> Result<(Vec<&'a Factor>, Vec<slow::Skipped>, Vec<slow::Unbuilt>)> {
    let every = named.iter().any(|n| n == slow::ALL);
    ensure!(
        !every || named.len() == 1,
        "--factors {}: `{}` already names every factor; give it alone, or name factors without it",
        named.join(","),
        slow::ALL
    );
    let factors = explain::factors_for(study, claim, if every { &[] } else { named })?;
    check_levels(&paths.repo, &factors)?;
    if !named.is_empty() {
        let builds = slow::to_build(&paths.repo, study, &factors).await?;
        return Ok((factors, Vec::new(), builds));
    }
    let (kept, skipped, builds) = slow::default_set(&paths.repo, study, factors).await?;
    if kept.is_empty() {
        let lines: Vec<String> = skipped.iter().map(slow::Skipped::line).collect();
        bail!(
            "every factor of claim {:?} needs images that take long to build here:\n{}\nname the \
             ones to sweep with --factors, or pass --factors {} for every one",
            claim.id,
            lines.join("\n"),
            slow::ALL
        );
    }
    Ok((kept, skipped, builds))
}

/// The first claim of a finished run that `explain` with its default factors would sweep, by the
/// checks `explain` makes before it builds anything: measured and not reproduced, a factor bears on
/// it (the run's, or its study file's), every level's image and kernel known, a sweep can judge
/// it, and some factor's images are built here or quick to build. `reproduce` suggests this one.
pub async fn first_explainable(paths: &Paths, run: &Path, outcome: &Outcome) -> Option<String> {
    let run = RunDir::open(run).ok()?;
    let (study, _) = with_factors(outcome.study.clone(), paths).ok()?;
    let measured = outcome
        .verdicts
        .iter()
        .filter(|v| !matches!(v.status, Status::Reproduced | Status::NotMeasured));
    for verdict in measured {
        let Ok(claim) = claim_of(&study, &verdict.claim) else {
            continue;
        };
        if explainable(&run, outcome, Some(verdict)).is_err() {
            continue;
        }
        let Ok((factors, _, _)) = factors(paths, &study, claim, &[]).await else {
            continue;
        };
        if make_sweep(&paths.repo, &study, claim, &factors, &[]).is_ok() {
            return Some(claim.id.clone());
        }
    }
    None
}

/// A sweep explains a finished run's measured value: an incomplete run (interrupted, failed, still
/// measuring) or a claim with no measured value is refused before anything is built, run or written.
fn explainable(run: &RunDir, explained: &Outcome, verdict: Option<&Verdict>) -> Result<()> {
    let state = run.load_state()?;
    if state.status != RunStatus::Complete {
        bail!(
            "run {} is {}: explain compares a finished run's measured value with its variants; \
             finish it first with `parkbench run --resume {}`, then explain it",
            explained.run_id,
            state.status,
            run.path().display()
        );
    }
    if let Some(why) = &explained.partial {
        bail!(
            "run {} is partial ({why}): explain needs every sample of the claim's cells; \
             rerun the study, then explain the new run",
            explained.run_id
        );
    }
    if let Some(v) = verdict.filter(|v| v.status == Status::NotMeasured) {
        bail!(
            "claim {:?} has no measured value in run {} ({}): there is nothing to explain; \
             fix what kept it from being measured and run the study again",
            v.claim,
            explained.run_id,
            v.note.as_deref().unwrap_or("no valid sample")
        );
    }
    Ok(())
}

/// The claim `id` of `study`, or an error listing its claims.
fn claim_of<'a>(study: &'a Study, id: &str) -> Result<&'a Claim> {
    let Some(claim) = study.claims.iter().find(|c| c.id == id) else {
        bail!(
            "claim {:?} is not a claim of study {} (its claims: {})",
            id,
            study.id,
            study
                .claims
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    Ok(claim)
}

/// The sweeps of one explanation: where they go and what they run with.
struct Sweeps<'a> {
    paths: &'a Paths,
    args: &'a Options,
    /// The folder whose `<sweep>/runs/` hold the sweeps' runs.
    root: PathBuf,
    claim: &'a Claim,
    /// The explained run: its study and id, and the process times the sweep's are estimated by.
    explained: &'a Outcome,
    interrupt: &'a Interrupt,
}

impl Sweeps<'_> {
    /// Builds the sweep's images (a variant whose build fails is left out, with why), runs the
    /// sweep as its own study and explains it; `None` when interrupted.
    async fn measure(&self, mut sweep: Sweep) -> Result<Option<(Explanation, PathBuf)>> {
        let cpus = Some(self.args.cpus.clone().unwrap_or(CpuChoice::Auto));
        // A sweep that would be refused its CPUs is refused before it writes or builds anything.
        let asked = run::Options {
            cpus: cpus.clone(),
            shared_cpus: self.args.shared_cpus,
            wait_for_cpus: self.args.wait_for_cpus,
            ..Default::default()
        };
        super::launch::choose_cpus(&Engine::connect().await?, &sweep.study, &asked).await?;
        let folder = self.root.join(&sweep.study.id);
        // Checked as `plan` checks a study file before anything is built, and again as it runs.
        write_sweep(
            &self.paths.repo,
            &folder,
            (&self.args.run_dir, &self.claim.id),
            &sweep,
        )?;
        let built = variants::build_variants(&self.paths.repo, &mut sweep).await?;
        let file = write_sweep(
            &self.paths.repo,
            &folder,
            (&self.args.run_dir, &self.claim.id),
            &sweep,
        )?;
        let options = run::Options {
            study: Some(file),
            cpus,
            resume: None,
            repeats: self.args.repeats,
            kernel: Vec::new(),
            shared_cpus: self.args.shared_cpus,
            wait_for_cpus: self.args.wait_for_cpus,
            strict_build: false,
            strict_pins: false,
            shard: None,
            slice: None,
            fleet: Default::default(),
            estimates: Some(estimates(&sweep.study, self.explained)),
            built_before: built.tags,
        };
        let sweep_paths = Paths {
            repo: self.paths.repo.clone(),
            results: self.root.clone(),
        };
        let result = run::run(&sweep_paths, &options, self.interrupt).await?;
        if result.interrupted {
            Ending::of_run(&result);
            return Ok(None);
        }
        let outcome = report(result.dir.path())?;
        let explained = (&*self.explained.study.id, &*self.explained.run_id);
        let e = explain::explain(self.claim, explained, &sweep, &outcome, &built.failed)?;
        Ok(Some((e, result.dir.path().to_owned())))
    }

    /// Sweeps `pair` together and adds its rows to `e` and its folder to `dirs`; interrupted, the
    /// explanation keeps the single factors only.
    async fn pair(
        &self,
        study: &Study,
        pair: Pair<'_>,
        e: &mut Explanation,
        dirs: &mut Vec<PathBuf>,
    ) -> Result<Ending> {
        eprintln!(
            "no single factor reaches the published value: trying {} and {} together",
            pair.0.id, pair.2.id
        );
        let sweep = make_sweep(&self.paths.repo, study, self.claim, &[], &[pair])?;
        let measured = match self.measure(sweep).await {
            // A guest's boot, say, ends in an error when Ctrl-C stops it.
            Err(e) if self.interrupt.fired() => {
                eprintln!("{e:#}");
                None
            }
            measured => measured.with_context(|| {
                format!(
                    "trying {} and {} together failed (the explanation written has the single \
                     levels only)",
                    pair.0.id, pair.2.id
                )
            })?,
        };
        match measured {
            Some((second, dir)) => {
                e.merge(second);
                dirs.push(dir);
                Ok(Ending::Ok)
            }
            None => {
                eprintln!(
                    "the pair's sweep was interrupted: the explanation has the single levels only"
                );
                Ok(Ending::Interrupted)
            }
        }
    }
}

/// The sweep of `claim` as [`explain::sweep`] makes it, its published toolchains kept where the
/// repository's recipes for its images record their versions.
fn make_sweep(
    repo: &Path,
    study: &Study,
    claim: &Claim,
    factors: &[&Factor],
    pairs: &[Pair],
) -> Result<Sweep> {
    let docker = repo.join("docker");
    let recipes = recipe::discover(&docker)?;
    let recorded = |images: &[String]| needs::recordable(&docker, &recipes, images);
    explain::sweep(study, claim, factors, pairs, &recorded)
}

/// Writes the sweep's study file into `folder` and checks it as `plan` checks a study file (no
/// Engine needed), so that the kit never runs a sweep study that a rule of its own refuses.
fn write_sweep(
    repo: &Path,
    folder: &Path,
    (run, claim): (&Path, &str),
    sweep: &Sweep,
) -> Result<PathBuf> {
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let file = folder.join("study.yaml");
    let mut text = format!(
        "# The sweep of `parkbench explain {} --claim {claim}`: written by parkbench, not edited by \
         hand.\n",
        run.display()
    );
    if !sweep.dropped_toolchains.is_empty() {
        text.push_str(&format!(
            "# source.toolchains: left out {} (no image of this sweep records its version).\n",
            sweep.dropped_toolchains.join(", ")
        ));
    }
    text.push_str(&serde_yaml::to_string(&sweep.study)?);
    write_atomic(&file, text.as_bytes())?;
    super::plan::check(repo, &file, &[]).with_context(|| {
        format!(
            "the sweep study of claim {claim:?} ({}) does not pass the checks of `parkbench plan`; \
             this is a fault of parkbench: please report it",
            file.display()
        )
    })?;
    Ok(file)
}

/// Writes the explanation into every sweep's folder and archives each, adds it to the explained
/// run's index and report, and prints it.
async fn publish(
    paths: &Paths,
    (run, explained): (&RunDir, &Outcome),
    e: &Explanation,
    dirs: &[PathBuf],
) -> Result<()> {
    // Every sweep's folder holds the explanation and is archived, so each row can be checked.
    let mut archives = Vec::new();
    for dir in dirs {
        files::write(e, dir)?;
        archives.push(archive(&paths.repo, dir, Contents::SOURCES).await?.path);
    }
    files::index(run.path(), &dirs[0], e)?;
    // A run's report gets the link; a run not yet reported (`run` alone) gets its report now.
    if run.file(run_dir::REPORT).is_file() {
        outcome::link_explanations(run.path())?;
    } else {
        explained.write_report(run.path())?;
    }
    print!("\n{}", explain::markdown(e));
    println!(
        "\nexplanation: {}",
        super::next_step::from_here(&dirs[0].join(explain::MARKDOWN)).display()
    );
    // `archive` said where it wrote each, with its size and sha256, on standard error.
    for a in archives.iter().map(|a| super::next_step::from_here(a)) {
        println!(
            "{}",
            paths.runnable(&format!(
                "verify it with: parkbench verify {}",
                super::next_step::shell_path(&a)
            ))
        );
    }
    Ok(())
}

/// Every level's image is a probe image under docker/ and its kernel a known one, before anything
/// is built or run.
fn check_levels(repo: &Path, factors: &[&Factor]) -> Result<()> {
    let recipes = recipe::discover(&repo.join("docker"))?;
    let images: Vec<&str> = recipes
        .iter()
        .filter(|r| r.probe)
        .map(|r| r.name.as_str())
        .collect();
    let kernels = guest::known(repo)?;
    for f in factors {
        for l in &f.levels {
            if let Some(image) = &l.image {
                ensure!(
                    images.contains(&image.as_str()),
                    "factor {:?}, level {:?}: image {image:?} is not a probe image under docker/ \
                     (the probe images: {}); add the variant folder or fix the name",
                    f.id,
                    l.id,
                    images.join(", ")
                );
            }
            if let Some(k) = l.kernel.as_deref().filter(|k| *k != HOST) {
                ensure!(
                    kernels.iter().any(|known| known == k),
                    "factor {:?}, level {:?}: kernel {k:?} is not a known kernel (host, {})",
                    f.id,
                    l.id,
                    kernels.join(", ")
                );
            }
        }
    }
    Ok(())
}

/// The run's study with its factors; a run made before its study declared any takes the factors
/// of the study file of the same id in `results/`, whose path is returned to be said.
fn with_factors(mut study: Study, paths: &Paths) -> Result<(Study, Option<PathBuf>)> {
    if study.factors.is_empty() {
        let file = paths.results.join(&study.id).join("study.yaml");
        if file.is_file() {
            let kernels = study.protocol.kernels.clone();
            let current = Study::load(&file)?.under_kernels(&kernels)?;
            study.factors = current.factors;
            crate::study::factor::validate(&study.factors, &study.probes).with_context(|| {
                format!("the factors of {} against the run's probes", file.display())
            })?;
            return Ok((study, Some(file)));
        }
    }
    Ok((study, None))
}

/// Where the sweeps go: `<study folder>/explain/` beside the run's `runs/` folder, or, for a run
/// folder kept elsewhere, `results/<study>/explain/`.
fn explain_root(run: &Path, paths: &Paths, study: &Study) -> PathBuf {
    let parent = run.parent();
    match parent.and_then(|p| Some((p.file_name()?, p.parent()?))) {
        Some((name, study_dir)) if name == "runs" => study_dir.join("explain"),
        _ => paths.results.join(&study.id).join("explain"),
    }
}

#[cfg(test)]
mod tests;
