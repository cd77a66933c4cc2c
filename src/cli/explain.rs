//! `parkbench explain`: a differing claim's probes rerun with one declared factor changed at a time,
//! as a run of its own under `results/<study>/explain/<claim>/`, reported, explained and archived.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};

use super::{Ending, Interrupt, Paths, archive, prepare, report, run};
use crate::cli::args::{ExplainArgs, RunArgs};
use crate::outputs::explain::{self, Explanation, Sweep, Variant};
use crate::outputs::outcome;
use crate::outputs::verdict::Status;
use crate::run::lifecycle::CpuChoice;
use crate::run::run_dir::RunDir;
use crate::study::{Claim, Study};

pub async fn command(paths: &Paths, args: &ExplainArgs, interrupt: &Interrupt) -> Result<Ending> {
    let run = RunDir::open(&args.run_dir)?;
    let explained = outcome::recompute(&run.read_files()?)
        .with_context(|| format!("reading the run {}", run.path().display()))?;
    let study = with_factors(explained.study.clone(), paths)?;
    let Some(claim) = study.claims.iter().find(|c| c.id == args.claim) else {
        bail!(
            "claim {:?} is not a claim of study {} (its claims: {})",
            args.claim,
            study.id,
            study
                .claims
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let verdict = explained.verdicts.iter().find(|v| v.claim == claim.id);
    if verdict.is_some_and(|v| v.status == Status::Reproduced) && !args.force {
        println!(
            "claim {} reproduced in run {}: there is nothing to explain (pass --force to sweep anyway)",
            claim.id, explained.run_id
        );
        return Ok(Ending::Ok);
    }
    let factors = explain::factors_for(&study, claim, &args.factors)?;
    check_levels(&paths.repo, &factors)?;
    let root = explain_root(run.path(), paths, &study);
    let sweep = explain::sweep(&study, claim, &factors, &[])?;
    let measured = measure(
        paths,
        args,
        &root,
        claim,
        sweep,
        &explained.run_id,
        interrupt,
    )
    .await?;
    let Some((mut e, dir)) = measured else {
        return Ok(Ending::Interrupted);
    };
    let mut dirs = vec![dir];
    let mut ending = Ending::Ok;
    if !args.no_pairs
        && let Some(pair) = explain::pair_to_try(&e, &factors)
    {
        eprintln!(
            "no single factor reaches the published value: trying {} and {} together",
            pair.0.id, pair.2.id
        );
        let sweep = explain::sweep(&study, claim, &[], &[pair])?;
        match measure(
            paths,
            args,
            &root,
            claim,
            sweep,
            &explained.run_id,
            interrupt,
        )
        .await?
        {
            Some((second, dir)) => {
                e.merge(second);
                dirs.push(dir);
            }
            None => {
                eprintln!(
                    "the pair's sweep was interrupted: the explanation has the single factors only"
                );
                ending = Ending::Interrupted;
            }
        }
    }
    // Every sweep's folder holds the explanation and is archived, so each row can be checked.
    let mut archives = Vec::new();
    for dir in &dirs {
        write(&e, dir)?;
        archives.push(archive::command(&paths.repo, dir, false).await?.path);
    }
    index(run.path(), &dirs[0], &e)?;
    // A run's report gets the link; a run not yet reported (`run` alone) gets its report now.
    if run.file(crate::run::run_dir::REPORT).is_file() {
        outcome::link_explanations(run.path())?;
    } else {
        explained.write_report(run.path())?;
    }
    print!("\n{}", explain::markdown(&e));
    println!(
        "\nexplanation: {}",
        dirs[0].join(explain::MARKDOWN).display()
    );
    for a in &archives {
        println!(
            "archive: {}\ncheck it with: parkbench verify {}",
            a.display(),
            a.display()
        );
    }
    Ok(ending)
}

/// Every level's image is a probe image under docker/ and its kernel a known one, before anything
/// is built or run.
fn check_levels(repo: &Path, factors: &[&crate::study::factor::Factor]) -> Result<()> {
    let recipes = crate::images::recipe::discover(&repo.join("docker"))?;
    let images: Vec<&str> = recipes
        .iter()
        .filter(|r| r.probe)
        .map(|r| r.name.as_str())
        .collect();
    let kernels = crate::run::guest::known(repo)?;
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
            if let Some(k) = l
                .kernel
                .as_deref()
                .filter(|k| *k != crate::study::kernel::HOST)
            {
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
/// of the study file of the same id in `results/`.
fn with_factors(mut study: Study, paths: &Paths) -> Result<Study> {
    if study.factors.is_empty() {
        let file = paths.results.join(&study.id).join("study.yaml");
        if file.is_file() {
            let kernels = study.protocol.kernels.clone();
            let current = Study::load(&file)?.under_kernels(&kernels)?;
            eprintln!(
                "the run's study declares no factors: taking those of {}",
                file.display()
            );
            study.factors = current.factors;
            crate::study::factor::validate(&study.factors, &study.probes).with_context(|| {
                format!("the factors of {} against the run's probes", file.display())
            })?;
        }
    }
    Ok(study)
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

/// Builds the sweep's images (a variant whose build fails is left out, with why), runs the sweep
/// as its own study and explains it; `None` when interrupted.
async fn measure(
    paths: &Paths,
    args: &ExplainArgs,
    root: &Path,
    claim: &Claim,
    mut sweep: Sweep,
    explained_run: &str,
    interrupt: &Interrupt,
) -> Result<Option<(Explanation, PathBuf)>> {
    let failed = build_variants(paths, &mut sweep).await?;
    let folder = root.join(&sweep.study.id);
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    let file = folder.join("study.yaml");
    let text = format!(
        "# The sweep of `parkbench explain --claim {}`: written by parkbench, not edited by hand.\n{}",
        claim.id,
        serde_yaml::to_string(&sweep.study)?
    );
    crate::images::cache::write_atomic(&file, text.as_bytes())?;
    let run_args = RunArgs {
        study: Some(file),
        cpus: Some(args.cpus.clone().unwrap_or(CpuChoice::Auto)),
        resume: None,
        repeats: args.repeats,
        kernel: Vec::new(),
    };
    let sweep_paths = Paths {
        repo: paths.repo.clone(),
        results: root.to_owned(),
    };
    let result = run::study_run(&sweep_paths, &run_args, interrupt).await?;
    if result.interrupted {
        Ending::of_run(&result);
        return Ok(None);
    }
    let outcome = report::command(result.dir.path())?;
    let e = explain::explain(claim, explained_run, &sweep, &outcome, &failed)?;
    Ok(Some((e, result.dir.path().to_owned())))
}

/// Builds every image the sweep needs, one variant at a time; the variants whose image (or
/// kernel) cannot be built are taken out of the sweep and returned with the build's error.
async fn build_variants(paths: &Paths, sweep: &mut Sweep) -> Result<Vec<(Variant, String)>> {
    let baseline: Vec<String> = sweep
        .study
        .probes
        .iter()
        .filter(|p| !sweep.variants.iter().any(|v| v.probe == p.id))
        .map(|p| p.image.clone())
        .collect();
    prepare(
        &paths.repo,
        &crate::cli::args::BuildArgs {
            only: baseline,
            ..Default::default()
        },
    )
    .await?;
    let mut failed = Vec::new();
    for variant in sweep.variants.clone() {
        let probe = sweep
            .study
            .probe(&variant.probe)
            .expect("a variant's probe")
            .clone();
        let mut only = vec![probe.image.clone()];
        only.extend(crate::run::guest::images_for(
            &probe.kernel.iter().cloned().collect::<Vec<_>>(),
        ));
        let build = crate::cli::args::BuildArgs {
            only,
            ..Default::default()
        };
        if let Err(e) = prepare(&paths.repo, &build).await {
            let full = format!("{e:#}");
            let why = format!(
                "the build of {} failed: {}",
                probe.image,
                why_build_failed(&full)
            );
            eprintln!(
                "{full}\nvariant {}: {why}; the sweep goes on without it",
                variant.probe
            );
            failed.push((variant, why));
        }
    }
    let gone: Vec<&Variant> = failed.iter().map(|(v, _)| v).collect();
    sweep
        .study
        .probes
        .retain(|p| !gone.iter().any(|v| v.probe == p.id));
    sweep
        .study
        .claims
        .retain(|c| !gone.iter().any(|v| v.claim == c.id));
    let kept: Vec<Variant> = sweep
        .variants
        .iter()
        .filter(|v| !gone.contains(v))
        .cloned()
        .collect();
    sweep.variants = kept;
    Ok(failed)
}

/// What a build error says went wrong, in one line: the first `error:` line of the build's output
/// (cargo's, say) and the last line below it that names a failure, without terminal colours.
fn why_build_failed(error: &str) -> String {
    let lines: Vec<String> = error.lines().map(plain_text).collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("error:") && !l.starts_with("error: image "));
    let detail = lines[first.map_or(0, |i| i + 1)..].iter().rev().find(|l| {
        (l.contains("failed to") || l.contains("not found") || l.contains("No such file"))
            && !l.contains("Docker stream error")
    });
    let short = |l: &str| -> String {
        let l = l.trim();
        match l.char_indices().nth(160) {
            Some((at, _)) => format!("{}…", &l[..at]),
            None => l.to_string(),
        }
    };
    let mut parts: Vec<String> = first.map(|i| short(&lines[i])).into_iter().collect();
    parts.extend(detail.map(|l| short(l)));
    if parts.is_empty() {
        parts.push(short(lines.last().map_or("", String::as_str)));
    }
    parts.join(" … ")
}

/// `line` without ANSI escape sequences (`ESC [ … letter`).
fn plain_text(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The explanation's files in the sweep's run folder (archived with it).
fn write(e: &Explanation, dir: &Path) -> Result<()> {
    let run = RunDir::at(dir);
    run.write(explain::MARKDOWN, explain::markdown(e).as_bytes())?;
    run.write(explain::SVG, explain::svg(e).as_bytes())?;
    run.write_json(explain::JSON, e)
}

/// Adds the explanation to the explained run's index of explanations.
fn index(run: &Path, sweep_dir: &Path, e: &Explanation) -> Result<()> {
    let path = run.join(crate::run::run_dir::EXPLANATIONS);
    let mut text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            "# Explanations of this run's claims\n\n".to_string()
        }
        Err(e) => {
            return Err(e).with_context(|| {
                format!("reading {} to add this explanation to it", path.display())
            });
        }
    };
    let link = relative(run, &sweep_dir.join(explain::MARKDOWN));
    text.push_str(&format!(
        "- **{}** ([sweep]({link})): {}\n",
        e.claim, e.finding
    ));
    crate::images::cache::write_atomic(&path, text.as_bytes())
}

/// `to` relative to the folder `from` (both below one study folder).
fn relative(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out: Vec<String> = vec!["..".into(); from.len() - common];
    out.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_build_is_said_in_one_line_from_its_output() {
        let error = "image x: build output (last lines):\n\u{1b}[91merror: failed to run custom build command for `tikv-jemalloc-sys v0.6.1`\n\nCaused by:\n  running: \"make\"\n  failed to execute command: No such file or directory (os error 2)\nRemoving intermediate container 6e: Docker stream error: The command failed to run";
        assert_eq!(
            why_build_failed(error),
            "error: failed to run custom build command for `tikv-jemalloc-sys v0.6.1` … failed to execute command: No such file or directory (os error 2)"
        );
        assert_eq!(why_build_failed("plain trouble"), "plain trouble");
    }
}
