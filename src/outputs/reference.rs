//! A study's reference run: `results/<study>/reference/` holds the report, the figure and the
//! archive of one complete run made on a quiet machine: the run folder alone, without the source
//! bundle, images or driver (the repository that holds it holds the sources; it is verified and
//! compared with, not rerun).
//! It is committed with the study, so that every new run is compared with it and a test can
//! recompute its verdicts; each file stays under [`LIMIT`] so the repository stays small.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::outputs::outcome::Outcome;
use crate::run::run_dir;

/// The reference's folder, inside the study's folder of `results/`.
pub const DIR: &str = "reference";
/// The reference's archive (its top folder is the run's id).
pub const ARCHIVE: &str = "run.tar.gz";
/// The largest file a reference may hold, bytes.
pub const LIMIT: u64 = 1 << 20;
/// What a reference holds, each copied from the run folder or written by the archive.
pub const FILES: [&str; 3] = [run_dir::REPORT, run_dir::FIGURE, ARCHIVE];

/// `<results>/<study>/reference/`.
pub fn dir(results: &Path, study: &str) -> PathBuf {
    results.join(study).join(DIR)
}

/// The reference archive of `study`, when it has one.
pub fn archive(results: &Path, study: &str) -> Option<PathBuf> {
    Some(dir(results, study).join(ARCHIVE)).filter(|p| p.is_file())
}

/// Refuses a run that cannot be a reference: a probe whose image failed to build, a failed process
/// (an invalid sample, other than a probe whose toolchain no machine here can have: that one is
/// `not measured` in every run, the reference's report too; and other than a process that ran
/// cleanly and is invalid by the protocol's own rule, shown with its reason in the reference's
/// report as in any run), or partial data.
pub fn refuse_unless_complete(outcome: &Outcome) -> Result<()> {
    refuse_build_failed(outcome)?;
    let invalid: Vec<String> = outcome
        .samples
        .iter()
        .filter(|s| !s.valid && !s.is_toolchain_unavailable())
        .filter(|s| !crate::study::kind::invalid_by_protocol(s))
        .map(|s| {
            format!(
                "{} at {} tasks (r{}): {}",
                s.probe,
                s.tasks,
                s.repeat,
                s.error.as_deref().unwrap_or("invalid")
            )
        })
        .collect();
    if !invalid.is_empty() {
        bail!(
            "not writing a reference run: {} invalid sample(s) ({}); a reference must measure \
             every process: fix the cause and reproduce again on a quiet machine",
            invalid.len(),
            invalid.join("; ")
        );
    }
    if let Some(why) = &outcome.partial {
        bail!("not writing a reference run: its data is partial ({why})");
    }
    if let Some(s) = outcome.shard {
        bail!(
            "not writing a reference run: it measured shard {s} only, a slice of the matrix; a \
             reference must measure the whole matrix: reproduce without --shard, or merge every \
             shard (`parkbench merge`)"
        );
    }
    Ok(())
}

/// Refuses a run with a probe that never ran because its image failed to build, naming the images:
/// a reference must measure every probe a machine here can build.
fn refuse_build_failed(outcome: &Outcome) -> Result<()> {
    let mut images: Vec<String> = Vec::new();
    for s in outcome.samples.iter().filter(|s| s.is_build_failed()) {
        let image = outcome
            .study
            .probes
            .iter()
            .find(|p| p.id == s.probe)
            .map_or("?", |p| p.image.as_str());
        let line = format!(
            "image {image} of probe {} ({})",
            s.probe,
            s.error.as_deref().unwrap_or_default()
        );
        if !images.contains(&line) {
            images.push(line);
        }
    }
    if !images.is_empty() {
        bail!(
            "not writing a reference run: {} probe(s) never ran because their image failed to \
             build: {}; a reference must measure every probe: fix the build (`parkbench \
             build` says why) and reproduce again",
            images.len(),
            images.join("; ")
        );
    }
    Ok(())
}

/// Refuses a run whose validity warnings say the machine was not quiet (other processes on the
/// pinned CPUs, steal time, memory pressure), naming them: a reference is what later runs are
/// compared with, so it is made on a quiet machine.
pub fn refuse_unless_quiet(outcome: &Outcome) -> Result<()> {
    let noisy: Vec<&str> = outcome
        .warnings
        .iter()
        .filter(|w| w.says_not_quiet())
        .map(|w| w.what.as_str())
        .collect();
    if !noisy.is_empty() {
        bail!(
            "not writing a reference run: the machine was not quiet while it measured ({}); stop \
             other work on this machine and run `just reference {study}` again (the run itself \
             is archived)",
            noisy.join("; "),
            study = outcome.study.id
        );
    }
    Ok(())
}

/// Replaces `dest` with the run's report and figure and `archive`, each at most [`LIMIT`] bytes;
/// nothing is replaced when one is larger.
pub fn install(run_dir: &Path, archive: &Path, dest: &Path) -> Result<()> {
    let sources = [
        run_dir.join(run_dir::REPORT),
        run_dir.join(run_dir::FIGURE),
        archive.to_owned(),
    ];
    for (name, path) in FILES.iter().zip(&sources) {
        let size = fs::metadata(path)
            .with_context(|| format!("reading {}", path.display()))?
            .len();
        if size > LIMIT {
            bail!(
                "not writing a reference run: its {name} is {} KiB, over the {} KiB a reference \
                 file may have (the repository stays small): run the study with fewer processes \
                 or scales for its reference",
                size.div_ceil(1024),
                LIMIT / 1024
            );
        }
    }
    let parent = dest
        .parent()
        .with_context(|| format!("{} has no parent folder", dest.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".reference-")
        .tempdir_in(parent)
        .with_context(|| format!("creating a folder in {}", parent.display()))?;
    for (name, path) in FILES.iter().zip(&sources) {
        let copy = staging.path().join(name);
        fs::copy(path, &copy)
            .with_context(|| format!("copying {} into the reference", path.display()))?;
        // Committed files: readable by everyone, whatever the run folder's mode.
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o644))?;
    }
    fs::set_permissions(staging.path(), fs::Permissions::from_mode(0o755))?;
    replace(staging, dest, parent, |from, to| fs::rename(from, to))
}

/// Puts the `staged` folder at `dest` through `rename`: the old `dest` is moved aside first, the
/// new one moved in, then the old one deleted; when the new one cannot be moved in, the old one is
/// moved back. Either way no `.reference-*` folder is left in `parent`.
fn replace(
    staged: tempfile::TempDir,
    dest: &Path,
    parent: &Path,
    rename: impl Fn(&Path, &Path) -> std::io::Result<()>,
) -> Result<()> {
    // An empty folder that the old reference replaces, deleted with its contents when dropped.
    let aside = tempfile::Builder::new()
        .prefix(".reference-old-")
        .tempdir_in(parent)
        .with_context(|| format!("creating a folder in {}", parent.display()))?;
    let had_old = dest.exists();
    if had_old {
        rename(dest, aside.path())
            .with_context(|| format!("moving the old reference {} aside", dest.display()))?;
    }
    if let Err(e) = rename(staged.path(), dest) {
        let put_back = if had_old {
            rename(aside.path(), dest).map_err(|back| {
                format!(
                    "; moving the old reference back failed too ({back}): it is in {}",
                    aside.keep().display()
                )
            })
        } else {
            Ok(())
        };
        bail!(
            "moving the new reference to {}: {e}{}",
            dest.display(),
            put_back.err().unwrap_or_default()
        );
    }
    // The staged folder is now `dest`; dropping `staged` finds nothing to delete.
    drop(staged);
    aside
        .close()
        .with_context(|| format!("deleting the old reference in {}", parent.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::report::fixture;

    fn outcome() -> Outcome {
        let study = fixture::study();
        let samples = fixture::samples();
        let summary = fixture::summary();
        Outcome {
            run_id: "r".into(),
            verdicts: fixture::verdicts(),
            study,
            samples,
            summary,
            environment: vec![],
            deviations: vec![],
            warnings: vec![],
            partial: None,
            judged: None,
            per_class: None,
            shard: None,
        }
    }

    #[test]
    fn a_shard_is_refused_as_a_reference() {
        let mut o = outcome();
        o.samples.retain(|s| s.valid);
        refuse_unless_complete(&o).unwrap();
        o.shard = Some(crate::run::shard::Shard { index: 1, count: 2 });
        let err = refuse_unless_complete(&o).unwrap_err().to_string();
        assert!(
            err.contains("shard 1/2") && err.contains("whole matrix"),
            "{err}"
        );
    }

    #[test]
    fn a_run_with_a_failed_process_or_partial_data_is_refused() {
        let mut o = outcome();
        // The fixture's Go at 1M, repeat 2, was OOM-killed.
        let err = refuse_unless_complete(&o).unwrap_err().to_string();
        assert!(
            err.contains("1 invalid sample(s) (go at 1000000 tasks (r2)"),
            "{err}"
        );
        o.samples.retain(|s| s.valid);
        refuse_unless_complete(&o).unwrap();
        // A probe whose toolchain is unavailable is not measured, in the reference as anywhere.
        let mut unavailable = o.samples[0].clone();
        unavailable.valid = false;
        unavailable.error = Some(format!("{}no source", crate::study::sample::UNAVAILABLE));
        o.samples.push(unavailable);
        refuse_unless_complete(&o).unwrap();
        // … and its report says so.
        use crate::outputs::report::Format;
        o.summary = crate::outputs::summary::summarize(&o.study, &o.samples);
        let md = crate::outputs::report::markdown::Markdown
            .render(&o.report_input())
            .unwrap();
        let md = String::from_utf8(md).unwrap();
        assert!(
            md.contains("not measured: toolchain unavailable: no source"),
            "{md}"
        );
        // A probe whose image failed to build is refused, naming the image: nothing tolerates it.
        let mut failed = o.samples[0].clone();
        failed.valid = false;
        failed.error = Some(format!(
            "{}step 3 exited 1",
            crate::study::sample::BUILD_FAILED
        ));
        let image = o
            .study
            .probes
            .iter()
            .find(|p| p.id == failed.probe)
            .unwrap();
        let named = format!(
            "1 probe(s) never ran because their image failed to build: image {} of probe {} \
             (build failed: step 3 exited 1)",
            image.image, failed.probe
        );
        o.samples.push(failed.clone());
        failed.tasks += 1;
        o.samples.push(failed);
        let err = refuse_unless_complete(&o).unwrap_err().to_string();
        assert!(err.contains(&named), "{err}");
        o.samples.retain(|s| !s.is_build_failed());
        // A process that ran cleanly but whose reading the protocol's own rule refuses (some tasks
        // ended before the last was created) is kept, as in any run; a failed one is not.
        let mut short = o.samples.iter().find(|s| s.valid).unwrap().clone();
        short
            .metrics
            .insert("created".into(), short.expected as f64 - 1.0);
        crate::study::kind::judge_validity(&mut short, None, &[]);
        // Short of a task it could not create (a thread limit): a failure.
        assert!(!short.valid && !crate::study::kind::invalid_by_protocol(&short));
        for ended in [None, Some(0.0)] {
            let mut limited = short.clone();
            if let Some(n) = ended {
                limited.metrics.insert("completed_before_ready".into(), n);
            }
            o.samples.push(limited);
            let err = refuse_unless_complete(&o).unwrap_err().to_string();
            assert!(err.contains("created"), "{err}");
            o.samples.pop();
        }
        // Short of one task that had ended, as the probe accounts: the protocol's own rule.
        short.metrics.insert("completed_before_ready".into(), 1.0);
        assert!(crate::study::kind::invalid_by_protocol(&short));
        o.samples.push(short.clone());
        refuse_unless_complete(&o).unwrap();
        short.exit_code = Some(1);
        crate::study::kind::judge_validity(&mut short, None, &[]);
        o.samples.push(short);
        let err = refuse_unless_complete(&o).unwrap_err().to_string();
        assert!(err.contains("sampler exited with Some(1)"), "{err}");
        o.samples.retain(|s| s.exit_code.is_none_or(|c| c == 0));
        o.partial = Some("2 malformed lines".into());
        let err = refuse_unless_complete(&o).unwrap_err().to_string();
        assert!(err.contains("partial (2 malformed lines)"), "{err}");
    }

    #[test]
    fn a_run_on_a_machine_that_was_not_quiet_is_refused_naming_the_warnings() {
        use crate::run::warning::{Touches, Warning};
        let mut o = outcome();
        let warning = |what: &str, touches| Warning {
            what: what.into(),
            touches,
        };
        // Settings of the machine are said in the report, not refused.
        o.warnings = vec![
            warning("swap in use: 5 MiB of 10 MiB", Touches::All),
            warning("transparent hugepages `always`: …", Touches::Memory),
        ];
        refuse_unless_quiet(&o).unwrap();
        o.warnings.push(warning(
            "pinned CPUs busy before measuring (CPU 1 42 %): other processes share them",
            Touches::Time,
        ));
        o.warnings.push(warning(
            "steal time 2.5 % of pinned CPUs 0-1's time while measuring",
            Touches::Time,
        ));
        let err = refuse_unless_quiet(&o).unwrap_err().to_string();
        assert!(
            err.contains(
                "not quiet while it measured (pinned CPUs busy before measuring (CPU 1 42 %)"
            ) && err.contains("; steal time 2.5 %")
                && !err.contains("swap")
                && err.contains(&format!("`just reference {}`", o.study.id)),
            "{err}"
        );
    }

    #[test]
    fn install_replaces_the_folder_and_refuses_a_file_over_the_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        fs::create_dir(&run).unwrap();
        fs::write(run.join(run_dir::REPORT), "# report").unwrap();
        fs::write(run.join(run_dir::FIGURE), "<svg/>").unwrap();
        let archive = tmp.path().join("a.tar.gz");
        fs::write(&archive, "gz").unwrap();
        let dest = tmp.path().join("study").join(DIR);
        fs::create_dir_all(&dest).unwrap();
        fs::write(dest.join("stale"), "old").unwrap();
        install(&run, &archive, &dest).unwrap();
        let mut names: Vec<String> = fs::read_dir(&dest)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["figure.svg", "report.md", "run.tar.gz"]);
        assert_eq!(
            archive_path_of(tmp.path()),
            Some(dest.join(ARCHIVE)),
            "found by study"
        );

        fs::write(run.join(run_dir::FIGURE), vec![b' '; LIMIT as usize + 1]).unwrap();
        let err = install(&run, &archive, &dest).unwrap_err().to_string();
        assert!(
            err.contains("its figure.svg is 1025 KiB, over the 1024 KiB"),
            "{err}"
        );
        assert_eq!(
            fs::read(dest.join(ARCHIVE)).unwrap(),
            b"gz",
            "old reference kept"
        );
    }

    #[test]
    fn a_failed_move_puts_the_old_reference_back_and_leaves_no_folder_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = tmp.path().join("study");
        let dest = parent.join(DIR);
        fs::create_dir_all(&dest).unwrap();
        fs::write(dest.join(ARCHIVE), "old").unwrap();
        let staged = |text: &str| {
            let dir = tempfile::Builder::new()
                .prefix(".reference-")
                .tempdir_in(&parent)
                .unwrap();
            fs::write(dir.path().join(ARCHIVE), text).unwrap();
            dir
        };
        let entries = || -> Vec<String> {
            let mut names: Vec<String> = fs::read_dir(&parent)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        // Moving the new one in fails: the old one is back, whole.
        let new = staged("new");
        let new_path = new.path().to_owned();
        let failing = |from: &Path, to: &Path| {
            if from == new_path {
                Err(std::io::Error::other("disk full"))
            } else {
                fs::rename(from, to)
            }
        };
        let err = replace(new, &dest, &parent, failing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("moving the new reference to") && err.contains("disk full"));
        assert_eq!(fs::read(dest.join(ARCHIVE)).unwrap(), b"old");
        assert_eq!(entries(), [DIR], "no .reference-* folder left");
        // Moving the old one aside fails: nothing changed.
        let new = staged("new");
        let old_path = dest.clone();
        let failing = |from: &Path, to: &Path| {
            if from == old_path {
                Err(std::io::Error::other("busy"))
            } else {
                fs::rename(from, to)
            }
        };
        let err = replace(new, &dest, &parent, failing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("moving the old reference"), "{err}");
        assert_eq!(fs::read(dest.join(ARCHIVE)).unwrap(), b"old");
        assert_eq!(entries(), [DIR]);
        // It works: the new one is in, the old one gone.
        replace(staged("new"), &dest, &parent, |a, b| fs::rename(a, b)).unwrap();
        assert_eq!(fs::read(dest.join(ARCHIVE)).unwrap(), b"new");
        assert_eq!(entries(), [DIR]);
        // A first reference: nothing to move aside.
        fs::remove_dir_all(&dest).unwrap();
        replace(staged("first"), &dest, &parent, |a, b| fs::rename(a, b)).unwrap();
        assert_eq!(fs::read(dest.join(ARCHIVE)).unwrap(), b"first");
        assert_eq!(entries(), [DIR]);
    }

    fn archive_path_of(results: &Path) -> Option<PathBuf> {
        archive(results, "study")
    }
}
