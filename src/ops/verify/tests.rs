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
    verify(dir.path()).unwrap();

    // One class's verdict edited: caught.
    let json = dir.read(run_dir::CLASSES_JSON).unwrap();
    let mut per: Vec<merge::ClassVerdicts> = serde_json::from_str(&json).unwrap();
    per[0].samples += 1;
    dir.write_json(run_dir::CLASSES_JSON, &per).unwrap();
    let err = format!("{:#}", verify(dir.path()).unwrap_err());
    assert!(
        err.contains("per hardware class") && err.contains("classes.json"),
        "{err}"
    );
    dir.write(run_dir::CLASSES_JSON, json.as_bytes()).unwrap();
    verify(dir.path()).unwrap();

    // classes.md edited: caught.
    let md = dir.read(run_dir::CLASSES_MD).unwrap();
    dir.write(
        run_dir::CLASSES_MD,
        md.replacen("reproduced on", "reproduced on all", 1)
            .as_bytes(),
    )
    .unwrap();
    let err = format!("{:#}", verify(dir.path()).unwrap_err());
    assert!(err.contains("classes.md"), "{err}");
}

#[test]
fn a_missing_verdicts_json_is_nothing_to_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = merged_folder(tmp.path());
    std::fs::remove_file(dir.file(run_dir::VERDICTS)).unwrap();
    let err = format!("{:#}", verify(dir.path()).unwrap_err());
    assert!(
        err.contains("nothing to verify: verdicts.json missing"),
        "{err}"
    );
}
