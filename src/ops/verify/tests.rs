use super::*;
use crate::outputs::merge::tests::{half, run};

/// A merged run folder of two shards measured on two hardware classes, as `merge` writes it.
fn merged_folder(tmp: &Path) -> RunDir {
    let inputs = [
        run("a", half(1), Some("class A")),
        run("b", half(2), Some("class B")),
    ];
    let dir = RunDir::create_in(tmp).unwrap();
    let merged = merge::merge(&inputs, &dir.id()).unwrap();
    crate::ops::merge::write(&dir, &merged).unwrap();
    dir
}

#[test]
fn a_merged_runs_claims_per_class_are_recomputed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = merged_folder(tmp.path());
    assert!(dir.file(run_dir::CLASSES_JSON).exists());
    verify(dir.path(), tmp.path(), false).unwrap();

    // One class's verdict edited: caught.
    let json = dir.read(run_dir::CLASSES_JSON).unwrap();
    let mut per: merge::Judged = serde_json::from_str(&json).unwrap();
    per.classes[0].samples += 1;
    dir.write_json(run_dir::CLASSES_JSON, &per).unwrap();
    let err = format!("{:#}", verify(dir.path(), tmp.path(), false).unwrap_err());
    assert!(
        err.contains("per hardware class") && err.contains("classes.json"),
        "{err}"
    );
    dir.write(run_dir::CLASSES_JSON, json.as_bytes()).unwrap();
    verify(dir.path(), tmp.path(), false).unwrap();

    // classes.md edited: caught.
    let md = dir.read(run_dir::CLASSES_MD).unwrap();
    dir.write(
        run_dir::CLASSES_MD,
        md.replacen("reproduced on", "reproduced on all", 1)
            .as_bytes(),
    )
    .unwrap();
    let err = format!("{:#}", verify(dir.path(), tmp.path(), false).unwrap_err());
    assert!(err.contains("classes.md"), "{err}");
}

#[test]
fn a_missing_verdicts_json_is_nothing_to_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = merged_folder(tmp.path());
    std::fs::remove_file(dir.file(run_dir::VERDICTS)).unwrap();
    let err = format!("{:#}", verify(dir.path(), tmp.path(), false).unwrap_err());
    assert!(
        err.contains("nothing to verify: verdicts.json missing"),
        "{err}"
    );
}

/// A run folder of one study on three Engines of one machine (every sample naming its host and
/// class, no merge.json), its report written as a run writes it.
fn hosts_folder(tmp: &Path) -> RunDir {
    use crate::outputs::merge::tests::altered;
    let dir = RunDir::create_in(tmp).unwrap();
    let class = Some("CPU X · 2 logical CPUs · ≈8 GiB · Linux 6.1");
    let inputs = [
        altered(run("a", None, class), 1.0, Some("e1")),
        altered(run("b", None, class), 1.0, Some("e2")),
        altered(run("c", None, class), 2.0, Some("e3")),
    ];
    let mut merged = merge::merge(&inputs, &dir.id()).unwrap();
    merged.record.runs.clear();
    crate::ops::merge::write(&dir, &merged).unwrap();
    std::fs::remove_file(dir.file(run_dir::MERGE_JSON)).unwrap();
    dir
}

#[test]
fn a_run_of_several_hosts_is_judged_per_host_and_verify_recomputes_it_all() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = hosts_folder(tmp.path());
    let md = dir.read(run_dir::REPORT).unwrap();
    assert!(
        md.contains("### Verdicts per host\n\n| Claim | e1 (A) | e2 (A) | e3 (A) |"),
        "{md}"
    );
    assert!(md.contains(" of 1 class; on "), "{md}");
    let html = dir.read(run_dir::REPORT_HTML).unwrap();
    assert!(
        html.contains("Verdicts per host"),
        "the page shows the hosts too"
    );
    verify(dir.path(), tmp.path(), false).unwrap();

    // The report's section edited: caught.
    dir.write(
        run_dir::REPORT,
        md.replacen("| e3 (A) |", "| e4 (A) |", 1).as_bytes(),
    )
    .unwrap();
    let err = format!("{:#}", verify(dir.path(), tmp.path(), false).unwrap_err());
    assert!(
        err.contains("report.md") && err.contains("per hardware class"),
        "{err}"
    );
    dir.write(run_dir::REPORT, md.as_bytes()).unwrap();

    // classes.json removed: nothing to verify the hosts against.
    std::fs::remove_file(dir.file(run_dir::CLASSES_JSON)).unwrap();
    let err = format!("{:#}", verify(dir.path(), tmp.path(), false).unwrap_err());
    assert!(err.contains("classes.json missing"), "{err}");
}

#[test]
fn classes_files_in_a_run_of_one_class_and_host_are_an_alteration() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = merged_folder(tmp.path());
    let json = dir.read(run_dir::CLASSES_JSON).unwrap();
    let plain = RunDir::create_in(&tmp.path().join("plain")).unwrap();
    let one = merge::merge(&[run("a", None, None)], &plain.id()).unwrap();
    crate::ops::merge::write(&plain, &one).unwrap();
    assert!(!plain.file(run_dir::CLASSES_JSON).exists());
    verify(plain.path(), plain.path(), false).unwrap();
    plain.write(run_dir::CLASSES_JSON, json.as_bytes()).unwrap();
    let err = format!(
        "{:#}",
        verify(plain.path(), plain.path(), false).unwrap_err()
    );
    assert!(err.contains("one hardware class"), "{err}");
}

/// A sweep of the default study's first claim, as `explain` writes it: named for the claim, judging
/// it on its probe and then a variant of both.
fn sweep_study() -> Study {
    let mut sweep = Study::default_study();
    let base = sweep.claims[0].clone();
    sweep.id = base.id.clone();
    sweep.probes.retain(|p| p.id == base.probe);
    let mut probe = sweep.probes[0].clone();
    probe.id = format!("{}~workers=1", base.probe);
    sweep.probes.push(probe);
    let mut variant = base.clone();
    variant.id = format!("{}~workers=1", base.id);
    variant.probe = format!("{}~workers=1", base.probe);
    sweep.claims = vec![base, variant];
    sweep
}

/// A checkout in `repo` holding the default study as `results/wait-1m/study.yaml`; that file.
fn checkout_default_study(repo: &Path) -> std::path::PathBuf {
    let file = repo.join("results/wait-1m/study.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, crate::study::DEFAULT_STUDY).unwrap();
    file
}

/// The files of a run of `study` holding `explanation` as its explanation.json.
fn files_with(study: &Study, explanation: &str) -> RunFiles {
    let yaml = serde_yaml::to_string(study).unwrap();
    RunFiles::assemble("20261202T000000Z".into(), |name| {
        Ok(match name {
            run_dir::STUDY => Some(yaml.clone()),
            run_dir::SAMPLES => Some(String::new()),
            run_dir::EXPLANATION => Some(explanation.to_string()),
            _ => None,
        })
    })
    .unwrap()
}

#[test]
fn an_explain_sweep_is_compared_with_the_explained_study_on_its_claim() {
    let repo = tempfile::tempdir().unwrap();
    let sweep = sweep_study();
    let claim = sweep.claims[0].id.clone();
    let json = |study: &str| {
        format!(r#"{{"claim":"{claim}","study":"{study}","explained_run":"20261201T000000Z"}}"#)
    };
    let explains = |study: &str| {
        sweep_of(&files_with(&sweep, &json(study)), &sweep)
            .unwrap()
            .unwrap()
    };
    // No copy of the explained study here, or none named (an older explanation.json, without
    // `study`): compared with nothing, not an edit.
    assert!(!provenance(&files_with(&sweep, &json("wait-1m")), &sweep, repo.path()).unwrap());
    let older = format!(r#"{{"claim":"{claim}","explained_run":"20261201T000000Z"}}"#);
    let older = sweep_of(&files_with(&sweep, &older), &sweep)
        .unwrap()
        .unwrap();
    assert_eq!(older.study, "");
    assert!(!sweep_provenance(&older, &sweep, repo.path()).unwrap());

    let file = checkout_default_study(repo.path());
    assert!(!sweep_provenance(&explains("wait-1m"), &sweep, repo.path()).unwrap());
    // An id that is no folder name reads nothing outside results/.
    assert!(!sweep_provenance(&explains("../results/wait-1m"), &sweep, repo.path()).unwrap());

    // The checkout's published value differs from the sweep's: named.
    let first = crate::study::DEFAULT_STUDY.find("expected: ").unwrap();
    let edited = format!(
        "{}expected: 9{}",
        &crate::study::DEFAULT_STUDY[..first],
        &crate::study::DEFAULT_STUDY[first + "expected: ".len()..]
    );
    std::fs::write(&file, edited).unwrap();
    assert!(sweep_provenance(&explains("wait-1m"), &sweep, repo.path()).unwrap());
    assert!(provenance(&files_with(&sweep, &json("wait-1m")), &sweep, repo.path()).unwrap());
}

#[test]
fn a_variant_claim_edited_in_a_sweep_is_named() {
    let repo = tempfile::tempdir().unwrap();
    checkout_default_study(repo.path());
    let mut sweep = sweep_study();
    sweep.claims[1].expected = serde_yaml::from_str("1.0").unwrap();
    let claim = sweep.claims[0].id.clone();
    let json = format!(r#"{{"claim":"{claim}","study":"wait-1m","explained_run":"r"}}"#);
    let files = files_with(&sweep, &json);
    assert!(sweep_of(&files, &sweep).unwrap().is_some());
    assert!(provenance(&files, &sweep, repo.path()).unwrap());
}

#[test]
fn an_ordinary_study_renamed_after_a_claim_is_no_sweep() {
    // Named after its first claim, beside an explanation.json naming it: but it judges other claims
    // than that one's variants, so it is compared with its own study, not as a sweep.
    let mut study = Study::default_study();
    let claim = study.claims[0].id.clone();
    study.id = claim.clone();
    let json = format!(r#"{{"claim":"{claim}","study":"wait-1m","explained_run":"r"}}"#);
    assert!(
        sweep_of(&files_with(&study, &json), &study)
            .unwrap()
            .is_none()
    );
    assert!(
        sweep_of(&files_with(&sweep_study(), &json), &sweep_study())
            .unwrap()
            .is_some()
    );
}

#[test]
fn an_explanation_json_in_an_ordinary_run_changes_nothing_of_its_comparison() {
    let repo = tempfile::tempdir().unwrap();
    checkout_default_study(repo.path());
    // The archive's study edited (a published value), with an explanation.json naming a study the
    // checkout does not hold: still compared with its own study, and the edit named.
    let mut study = Study::default_study();
    study.claims[1].expected = serde_yaml::from_str("1.0").unwrap();
    let claim = study.claims[0].id.clone();
    let json = format!(r#"{{"claim":"{claim}","study":"","explained_run":"x"}}"#);
    let files = files_with(&study, &json);
    assert!(sweep_of(&files, &study).unwrap().is_none());
    assert!(provenance(&files, &study, repo.path()).unwrap());
}
