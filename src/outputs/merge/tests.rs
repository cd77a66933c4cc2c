use std::collections::BTreeMap;

use super::*;
use crate::images::BuiltImage;
use crate::run::lifecycle::new_state;
use crate::run::shard::ShardRecord;
use crate::study::DEFAULT_STUDY;
use crate::study::sample::fixture;

fn manifest(binary_sha: &str) -> String {
    let image = BuiltImage {
        name: "probe-go".into(),
        tag: "parkbench/probe-go:0".into(),
        id: "sha256:0".into(),
        layers: vec![],
        inputs: Default::default(),
        binaries: BTreeMap::from([("/usr/local/bin/probe".to_string(), binary_sha.to_string())]),
        versions: Default::default(),
        notes: Vec::new(),
        built: false,
    };
    serde_json::to_string(&Manifest {
        images: vec![image],
        unavailable: vec![],
        failed: vec![],
    })
    .unwrap()
}

/// A run of the default study over the fixture's samples: shard `shard` of them, or all.
pub(crate) fn run(name: &str, shard: Option<Shard>, hardware: Option<&str>) -> Input {
    let study = Study::default_study().under_kernels(&[]).unwrap();
    let mut state = new_state(name, &study, &[0, 1], vec![]);
    state.status = Status::Complete;
    if let Some(s) = shard {
        state.deviations.push(shard::deviation(&study, s));
    }
    state.shard = shard.map(|s| ShardRecord {
        index: s.index,
        count: s.count,
        matrix: shard::matrix_id(DEFAULT_STUDY, &study),
    });
    let in_force = state.in_force(study.clone()).unwrap();
    let samples: String = fixture::samples()
        .into_iter()
        .filter(|s| in_force.runs(&s.probe, s.tasks))
        .map(|mut s| {
            s.run_id = name.into();
            s.hardware = hardware.map(String::from);
            serde_json::to_string(&s).unwrap() + "\n"
        })
        .collect();
    Input {
        name: format!("{name}.tar.gz"),
        files: RunFiles {
            run_id: name.into(),
            study_yaml: DEFAULT_STUDY.into(),
            samples_jsonl: samples,
            env_json: None,
            manifest_json: Some(manifest("aa")),
            summary_json: None,
            verdicts_json: None,
            report_md: None,
            run_json: Some(serde_json::to_string(&state).unwrap()),
        },
    }
}

pub(crate) fn half(i: u32) -> Option<Shard> {
    Some(Shard { index: i, count: 2 })
}

fn judged(samples: &[Sample]) -> Vec<Verdict> {
    let study = Study::default_study().under_kernels(&[]).unwrap();
    verdict::judge(&study, &summary::summarize(&study, samples))
}

#[test]
fn two_shards_give_the_verdicts_of_their_samples_judged_together() {
    let merged = merge(&[run("a", half(1), None), run("b", half(2), None)], "m").unwrap();
    assert_eq!(merged.samples.len(), 24, "every sample of both shards");
    assert_eq!(merged.state.status, Status::Complete);
    assert!(merged.record.missing_shards.is_empty() && merged.record.missing_cells.is_empty());
    assert_eq!(merged.record.classes.len(), 1);
    assert_eq!(merged.state.shard, None);
    assert!(
        merged
            .state
            .deviations
            .iter()
            .all(|d| !d.starts_with("shard ")),
        "the shards' own deviations are left out: {:?}",
        merged.state.deviations
    );
    assert_eq!(merged.state.run_id, "m");
    assert!(
        merged
            .samples
            .iter()
            .enumerate()
            .all(|(i, s)| s.position as usize == i),
        "positions in order"
    );
    let whole = judged(&fixture::samples());
    assert!(!whole.is_empty());
    assert_eq!(judged(&merged.samples), whole);
    let ids: BTreeSet<&str> = merged.samples.iter().map(|s| s.run_id.as_str()).collect();
    assert_eq!(
        ids,
        BTreeSet::from(["a", "b"]),
        "every sample keeps its run id"
    );
}

#[test]
fn a_missing_shard_is_named_and_the_merge_is_incomplete() {
    let merged = merge(
        &[
            run("a", Some(Shard { index: 1, count: 3 }), None),
            run("c", Some(Shard { index: 3, count: 3 }), None),
        ],
        "m",
    )
    .unwrap();
    assert_eq!(merged.record.missing_shards, ["2/3"]);
    assert!(!merged.record.missing_cells.is_empty());
    assert_eq!(merged.state.status, Status::Incomplete);
    let said = merged.state.deviations.join("\n");
    assert!(
        said.contains("merged shards 1/3, 3/3 — shard 2/3 missing"),
        "{said}"
    );
}

#[test]
fn reruns_of_the_whole_matrix_add_processes_per_cell() {
    let merged = merge(&[run("a", None, None), run("b", None, None)], "m").unwrap();
    assert_eq!(merged.samples.len(), 48);
    let go: Vec<u32> = merged
        .samples
        .iter()
        .filter(|s| s.probe == "go" && s.tasks == 10_000)
        .map(|s| s.repeat)
        .collect();
    assert_eq!(
        go,
        [1, 2, 3, 4, 5, 6],
        "the second run's repeats follow the first's"
    );
}

#[test]
fn runs_of_another_study_are_refused() {
    let mut other = run("b", half(2), None);
    other.files.study_yaml = DEFAULT_STUDY.replacen("id: wait-1m", "id: other", 1);
    assert_ne!(other.files.study_yaml, DEFAULT_STUDY);
    let err = format!(
        "{:#}",
        merge(&[run("a", half(1), None), other], "m").err().unwrap()
    );
    assert!(
        err.contains("\"wait-1m\"") && err.contains("\"other\"") && err.contains("one study"),
        "{err}"
    );

    let mut edited = run("b", half(2), None);
    edited.files.study_yaml = format!("{DEFAULT_STUDY}\n# edited\n");
    let err = format!(
        "{:#}",
        merge(&[run("a", half(1), None), edited], "m")
            .err()
            .unwrap()
    );
    assert!(
        err.contains("different texts") && err.contains("sha256"),
        "{err}"
    );
}

#[test]
fn runs_of_other_binaries_are_refused_naming_image_path_and_both_hashes() {
    let mut other = run("b", half(2), None);
    other.files.manifest_json = Some(manifest("bb"));
    let err = format!(
        "{:#}",
        merge(&[run("a", half(1), None), other], "m").err().unwrap()
    );
    for said in [
        "probe-go",
        "/usr/local/bin/probe",
        "sha256 aa in a.tar.gz",
        "bb in b.tar.gz",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
}

#[test]
fn a_run_inconsistent_with_itself_is_refused() {
    // A sample outside its run's shard.
    let mut b = run("b", half(2), None);
    b.files.samples_jsonl = run("a", half(1), None).files.samples_jsonl;
    let err = format!(
        "{:#}",
        merge(&[run("c", half(1), None), b], "m").err().unwrap()
    );
    assert!(err.contains("not a cell of its shard 2/2"), "{err}");
    // A shard record naming another matrix.
    let mut c = run("c", half(2), None);
    let mut state: RunState = serde_json::from_str(c.files.run_json.as_deref().unwrap()).unwrap();
    state.shard.as_mut().unwrap().matrix = "0".repeat(64);
    c.files.run_json = Some(serde_json::to_string(&state).unwrap());
    let err = format!(
        "{:#}",
        merge(&[run("a", half(1), None), c], "m").err().unwrap()
    );
    assert!(err.contains("inconsistent"), "{err}");
    // One run twice.
    let err = format!(
        "{:#}",
        merge(&[run("a", None, None), run("a", None, None)], "m")
            .err()
            .unwrap()
    );
    assert!(err.contains("the same samples (run a)"), "{err}");
    // A shard that cannot be.
    let mut f = run("f", half(2), None);
    let mut state: RunState = serde_json::from_str(f.files.run_json.as_deref().unwrap()).unwrap();
    state.shard.as_mut().unwrap().index = 3;
    f.files.run_json = Some(serde_json::to_string(&state).unwrap());
    let err = format!("{:#}", merge(&[f], "m").err().unwrap());
    assert!(
        err.contains("no shard 3 of 2") && err.contains("f.tar.gz"),
        "{err}"
    );
    // Another number of processes per cell.
    let mut d = run("d", None, None);
    let mut state: RunState = serde_json::from_str(d.files.run_json.as_deref().unwrap()).unwrap();
    state.repeats.as_mut().unwrap().min = 5;
    d.files.run_json = Some(serde_json::to_string(&state).unwrap());
    let err = format!(
        "{:#}",
        merge(&[run("a", None, None), d], "m").err().unwrap()
    );
    assert!(err.contains("another matrix"), "{err}");
    // No manifest: the binaries cannot be compared.
    let mut e = run("e", None, None);
    e.files.manifest_json = None;
    let err = format!("{:#}", merge(&[e], "m").err().unwrap());
    assert!(err.contains("no manifest.json"), "{err}");
}

#[test]
fn claims_are_judged_per_hardware_class() {
    let (x, y) = (
        "CPU X · 2 logical CPUs · ≈8 GiB · Linux 6.1",
        "CPU Y · 4 logical CPUs · ≈16 GiB · Linux 6.12",
    );
    let merged = merge(&[run("a", None, Some(x)), run("b", None, Some(y))], "m").unwrap();
    assert_eq!(merged.record.classes, [x, y]);
    let study = Study::default_study().under_kernels(&[]).unwrap();
    let per = by_class(&study, &merged.samples);
    assert_eq!(per.len(), 2);
    for c in &per {
        assert_eq!(c.samples, 24);
        assert_eq!(
            c.verdicts,
            judged(&fixture::samples()),
            "{}: its samples alone",
            c.class
        );
    }
    let md = classes_markdown(&per);
    assert!(
        md.contains("reproduced on") && md.contains(&format!("## {x} (24 samples)")),
        "{md}"
    );
    assert!(
        merged
            .state
            .deviations
            .iter()
            .any(|d| d.contains("2 hardware classes"))
    );
    // Samples without a recorded class take their run's (unknown without env.json).
    let one = merge(&[run("a", None, None)], "m").unwrap();
    assert_eq!(one.record.classes, ["unknown hardware (no env.json)"]);
}
