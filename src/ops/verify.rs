//! `parkbench check` and `parkbench verify`, offline: an archive's SHA256SUMS lines and structure;
//! statistics and verdicts recomputed from an archive or a run folder, and the claims per hardware
//! class and host. What they find, each check's result included, goes to standard output, in the
//! order it was found; standard error is for warnings and the `--strict` ending.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

use super::Ending;
use crate::outputs::archive::{self, Integrity};
use crate::outputs::explain::{Explains, is_sweep_of};
use crate::outputs::merge::{self, MergeRecord};
use crate::outputs::outcome::{self, Outcome};
use crate::outputs::provenance;
use crate::outputs::verdict::VerdictFile;
use crate::run::run_dir::{self, RunDir, RunFiles};
use crate::study::factor::declared_id;
use crate::study::{Study, sample};
use crate::text::printable;

/// `check`: every SHA256SUMS line and the structure of the archive at `path`.
pub fn check(paths: &super::Paths, path: &Path) -> Result<Ending> {
    let report = archive::check(path).with_context(|| format!("checking {}", path.display()))?;
    println!("{report}");
    match &report.driver {
        // Its command runs as printed.
        Some(driver) => println!("{}", paths.runnable_quoted(&driver.line(Some(path)))),
        None => println!("driver: none inside"),
    }
    Ok(Ending::Ok)
}

/// `verify`: recomputes from raw samples; a stored verdicts.json that disagrees is an error, and
/// so is a missing one unless the study makes no claim. The claims per hardware class and host
/// (classes.json, classes.md and report.md's section of them) are recomputed too. With `strict`, a
/// claim the recomputation does not find reproduced ends it as [`Ending::ClaimsDiffer`], whatever
/// the archive's own text says, and so does a claim whose published value differs from the one in
/// the checkout at `repo` ([`provenance`]).
pub fn verify(path: &Path, repo: &Path, strict: bool) -> Result<Ending> {
    integrity(path)?;
    let files = if path.is_dir() {
        RunDir::at(path).read_files()?
    } else {
        let files = archive::read_run(path)?;
        // Said as a folder's check is (`integrity`): read_run refuses any file SHA256SUMS does not
        // list as it is.
        println!("{}: every file matches SHA256SUMS", path.display());
        files
    };
    let outcome = outcome::recompute(&files)?;
    print!("{}", outcome.terminal());
    refuse_malformed(&files)?;
    match &files.verdicts_json {
        Some(stored) => {
            let stored: VerdictFile =
                serde_json::from_str(stored).context("parsing the stored verdicts.json")?;
            if stored.verdicts != outcome.verdicts {
                bail!(
                    "the verdicts recomputed from samples.jsonl differ from the stored verdicts.json: the run was altered or the statistics changed"
                );
            }
            println!("verdicts recomputed from the raw samples match the stored verdicts.json");
        }
        None if outcome.study.claims.is_empty() => {
            println!("the study makes no claim: there are no verdicts to compare");
        }
        None => bail!(
            "nothing to verify: verdicts.json missing (the study makes {} claims); write the \
             report with `parkbench report` and archive the run again",
            outcome.study.claims.len()
        ),
    }
    verify_classes(&files, &outcome)?;
    // The study as its file says, not as the run laid it out per kernel (`<id>@<kernel>`) or
    // restricted it to a shard: the checkout's copy is read the same way.
    let written = Study::parse(&files.study_yaml).context("in the run's study.yaml")?;
    let edited = provenance(&files, &written, repo)?;
    if strict && (outcome.claims_differ() || edited) {
        eprintln!(
            "--strict: some claims, as recomputed, were not reproduced, or the study differs from \
             the checkout's (a claim, a probe or the protocol)"
        );
        return Ok(Ending::ClaimsDiffer);
    }
    Ok(Ending::Ok)
}

/// Prints the study's sha256 and, when the checkout at `repo` holds the study, what differs from it
/// ([`provenance::differences`]: a claim's published value or anything it judges by, a probe, the
/// protocol); true when something does.
fn provenance(files: &RunFiles, study: &Study, repo: &Path) -> Result<bool> {
    let sha = provenance::sha256(&files.study_yaml);
    println!("\nstudy {} sha256 {sha}", printable(&study.id));
    let checkout = provenance::checkout(repo, study)?;
    if checkout.is_none()
        && let Some(explains) = sweep_of(files, study)?
    {
        return sweep_provenance(&explains, study, repo);
    }
    let Some((path, text, theirs)) = checkout else {
        println!(
            "the checkout {} holds no results/{}/study.yaml: the published values were compared \
             with nothing; compare the sha256 above with the study's authors'",
            repo.display(),
            printable(&study.id)
        );
        return Ok(false);
    };
    let found = provenance::differences(study, "the archive", &theirs, &path.display().to_string());
    if found.is_empty() {
        let same = provenance::sha256(&text) == sha;
        println!(
            "claims (published values, units, tolerances and what they judge), probes and protocol \
             match {}{}",
            path.display(),
            if same { " (the same file)" } else { "" }
        );
        return Ok(false);
    }
    println!(
        "the archive's study differs from {} (sha256 {}) in {} place(s):",
        path.display(),
        provenance::sha256(&text),
        found.len()
    );
    for line in &found {
        println!("  - {}", printable(line));
    }
    Ok(true)
}

/// What the run explains, when it is an explain sweep: it holds an `explanation.json`, and its study
/// has a sweep's shape ([`is_sweep_of`]: named for the claim it swept, judging it and its variants
/// alone). Any other run is compared with its own study, whatever files it holds.
fn sweep_of(files: &RunFiles, study: &Study) -> Result<Option<Explains>> {
    let Some(json) = &files.explanation_json else {
        return Ok(None);
    };
    let explains: Explains = serde_json::from_str(json)
        .with_context(|| format!("parsing the run's {}", run_dir::EXPLANATION))?;
    Ok(is_sweep_of(study, &explains.claim).then_some(explains))
}

/// [`provenance`] of an explain sweep, whose study parkbench wrote from the explained run's: the
/// published value of each claim it judges (the swept claim and its variants, which keep it)
/// against the swept claim's in the checkout's copy of the explained study; true when one differs.
fn sweep_provenance(explains: &Explains, sweep: &Study, repo: &Path) -> Result<bool> {
    let what = format!(
        "an explain sweep of claim {:?} of run {}",
        printable(&explains.claim),
        printable(&explains.explained_run),
    );
    if explains.study.is_empty() {
        println!(
            "{what}: its {} names no study (as one written before parkbench recorded the \
             explained study does), so the published value was compared with nothing; verify the \
             explained run's archive against its study",
            run_dir::EXPLANATION
        );
        return Ok(false);
    }
    let study = printable(&explains.study);
    let Some((path, _, theirs)) = provenance::checkout_by_id(repo, &explains.study)? else {
        println!(
            "{what} of study {study}: the checkout {} holds no results/{study}/study.yaml, so the \
             published value was compared with nothing; verify the explained run's archive \
             against its study",
            repo.display(),
        );
        return Ok(false);
    };
    let id = declared_id(&explains.claim);
    let shown = path.display().to_string();
    let found: Vec<String> = match theirs.claims.iter().find(|c| c.id == id) {
        None => vec![format!(
            "claim {:?} is only in the archive's sweep",
            printable(id)
        )],
        Some(claim) => (sweep.claims.iter())
            .filter_map(|ours| {
                provenance::published_differs(ours, "the archive's sweep", claim, &shown)
            })
            .collect(),
    };
    if found.is_empty() {
        println!("{what} of study {study}: the published value matches {shown}");
        return Ok(false);
    }
    println!("{what} of study {study}, differing from {shown}:");
    for line in &found {
        println!("  - {}", printable(line));
    }
    Ok(true)
}

/// A folder unpacked from an archive is checked against its SHA256SUMS before anything in it is
/// read; a folder without one (a run folder before it is archived) is said to be unchecked.
/// An archive is checked as it is read.
fn integrity(path: &Path) -> Result<()> {
    if !path.is_dir() {
        return Ok(());
    }
    match archive::check_folder(path)? {
        Integrity::Matches(n) => println!("{}: {n} files match SHA256SUMS", path.display()),
        Integrity::Unlisted => println!(
            "{}: not integrity-checked (no SHA256SUMS): only the verdicts were recomputed",
            path.display()
        ),
    }
    Ok(())
}

/// A samples.jsonl line that cannot be read fails verify: the verdicts cover only part of the run.
fn refuse_malformed(files: &RunFiles) -> Result<()> {
    let (_, bad) = sample::parse_lines(files.samples_jsonl.as_bytes())?;
    if let Some(first) = bad.first() {
        bail!(
            "samples.jsonl has {} malformed line(s), the first is line {} ({}): the verdicts above \
             cover only the lines read; verify the archive, or unpack it again",
            bad.len(),
            first.line,
            first.error
        );
    }
    Ok(())
}

/// The claims per hardware class (and host), recomputed from the samples and compared with
/// classes.json, classes.md and the report's section of them: present exactly when the samples come
/// from more than one class or from hosts judged alone. A merged run's merge.json must name the
/// samples' classes.
fn verify_classes(files: &RunFiles, outcome: &Outcome) -> Result<()> {
    if let Some(record) = &files.merge_json {
        let record: MergeRecord = serde_json::from_str(record)
            .with_context(|| format!("parsing the stored {}", run_dir::MERGE_JSON))?;
        let classes = merge::classes(&outcome.samples);
        ensure!(
            record.classes == classes,
            "{} names the hardware classes {:?} but the samples are of {:?}: the run was altered",
            run_dir::MERGE_JSON,
            record.classes,
            classes
        );
    }
    let Some(judged) = &outcome.judged else {
        ensure!(
            files.classes_json.is_none() && files.classes_md.is_none(),
            "{} or {} in a run whose samples are of one hardware class and no host judged alone: \
             the run was altered",
            run_dir::CLASSES_JSON,
            run_dir::CLASSES_MD
        );
        return Ok(());
    };
    let stored: merge::Judged = serde_json::from_str(
        files
            .classes_json
            .as_deref()
            .with_context(|| format!("nothing to verify: {} missing", run_dir::CLASSES_JSON))?,
    )
    .with_context(|| format!("parsing the stored {}", run_dir::CLASSES_JSON))?;
    ensure!(
        stored == *judged,
        "the verdicts per hardware class recomputed from samples.jsonl differ from the stored {}: \
         the run was altered or the statistics changed",
        run_dir::CLASSES_JSON
    );
    ensure!(
        files.classes_md.as_deref() == Some(merge::classes::markdown(judged).as_str()),
        "the stored {} differs from the claims per hardware class recomputed from samples.jsonl: \
         the run was altered",
        run_dir::CLASSES_MD
    );
    if let Some(md) = &files.report_md {
        ensure!(
            md.contains(&merge::classes::section(judged)),
            "the stored {}'s verdicts per hardware class differ from those recomputed from \
             samples.jsonl: the run was altered; write the report again with `parkbench report`",
            run_dir::REPORT
        );
    }
    println!(
        "verdicts per hardware class recomputed from the raw samples match the stored {}, {} and \
         {}",
        run_dir::CLASSES_JSON,
        run_dir::CLASSES_MD,
        run_dir::REPORT
    );
    Ok(())
}

#[cfg(test)]
mod tests;
