use std::collections::BTreeMap;

use super::*;
use crate::images::BuiltImage;
use crate::outputs::summary;
use crate::outputs::verdict::{self, Verdict};
use crate::run::lifecycle::new_state;
use crate::run::shard::ShardRecord;
use crate::study::DEFAULT_STUDY;
use crate::study::sample::fixture;

/// A manifest of the fixture's images, each with one binary of sha256 `binary_sha`.
fn manifest(binary_sha: &str) -> String {
    manifest_of(&["go", "rust-tokio"], binary_sha)
}

/// A manifest listing the fixture's images of `probes` only.
fn manifest_of(probes: &[&str], binary_sha: &str) -> String {
    let mut images: Vec<BuiltImage> = Vec::new();
    for s in fixture::samples() {
        if !probes.contains(&s.probe.as_str()) || images.iter().any(|i| i.id == s.image_id) {
            continue;
        }
        images.push(BuiltImage {
            name: format!("probe-{}", s.probe),
            tag: s.image_tag.clone(),
            id: s.image_id.clone(),
            layers: vec![],
            inputs: Default::default(),
            binaries: BTreeMap::from([(
                "/usr/local/bin/probe".to_string(),
                binary_sha.to_string(),
            )]),
            versions: Default::default(),
            notes: Vec::new(),
            built: false,
        });
    }
    serde_json::to_string(&Manifest {
        images,
        unavailable: vec![],
        failed: vec![],
        drift: Vec::new(),
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
            merge_json: None,
            classes_json: None,
            classes_md: None,
            explanation_json: None,
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
fn a_run_whose_sample_brings_its_own_drop_rule_is_refused() {
    let mut b = run("b", half(2), None);
    let (mut samples, _) = sample::parse_lines(b.files.samples_jsonl.as_bytes()).unwrap();
    samples[0].drop_batches = Some(crate::study::protocol::DropBatches {
        steal_above: None,
        wait_above: None,
        involuntary_switches_above: None,
    });
    b.files.samples_jsonl = samples
        .iter()
        .map(|s| serde_json::to_string(s).unwrap() + "\n")
        .collect();
    let err = format!(
        "{:#}",
        merge(&[run("a", half(1), None), b], "m").err().unwrap()
    );
    let s = &samples[0];
    let sample = format!("{} × {} tasks, repeat {}", s.probe, s.tasks, s.repeat);
    assert!(
        err.starts_with("b.tar.gz: the sample of ") && err.contains(&sample),
        "{err}"
    );
    assert!(
        err.contains("{steal_above: null, wait_above: null, involuntary_switches_above: null}")
            && err.contains("{steal_above: 0.05, wait_above: 0.05,"),
        "{err}"
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
    assert!(
        err.contains("the same run named twice") && err.contains("of run a"),
        "{err}"
    );
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
    let j = judge(&study, &merged.samples).expect("two classes are judged apart");
    let per = &j.classes;
    assert_eq!(per.len(), 2);
    assert!(j.hosts.is_empty(), "no sample names a host");
    for (c, label) in per.iter().zip(["A", "B"]) {
        assert_eq!(c.samples, 24);
        assert_eq!(c.label, label);
        assert_eq!(
            c.verdicts,
            judged(&fixture::samples()),
            "{}: its samples alone",
            c.class
        );
    }
    let md = classes::markdown(&j);
    assert!(
        md.contains("reproduced on 2 of 2 classes")
            && md.contains(&format!("## A: {x} (24 samples)")),
        "{md}"
    );
    assert!(md.contains(&format!("- **B**: {y} (24 samples)")), "{md}");
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

/// `input` with its manifest's `probe-go` binary of sha256 `sha`, or without `probe-go` (and
/// without its samples) when `sha` is `None`.
fn with_go(mut input: Input, sha: Option<&str>) -> Input {
    let mut m: Manifest =
        serde_json::from_str(input.files.manifest_json.as_deref().unwrap()).unwrap();
    match sha {
        Some(sha) => {
            for i in m.images.iter_mut().filter(|i| i.name == "probe-go") {
                i.binaries.values_mut().for_each(|h| *h = sha.to_string());
            }
        }
        None => {
            m.images.retain(|i| i.name != "probe-go");
            input.files.samples_jsonl = input
                .files
                .samples_jsonl
                .lines()
                .filter(|l| !l.contains("\"probe\":\"go\""))
                .map(|l| format!("{l}\n"))
                .collect();
        }
    }
    input.files.manifest_json = Some(serde_json::to_string(&m).unwrap());
    input
}

#[test]
fn binaries_are_compared_over_every_run_not_only_against_the_first() {
    // The first run lacks go; the second and third name it with different hashes.
    let runs = [
        with_go(run("a", None, None), None),
        with_go(run("b", None, None), Some("bb")),
        with_go(run("c", None, None), Some("cc")),
    ];
    let err = format!("{:#}", merge(&runs, "m").err().unwrap());
    for said in [
        "probe-go",
        "/usr/local/bin/probe",
        "sha256 bb in b.tar.gz",
        "cc in c.tar.gz",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
}

#[test]
fn the_merged_manifest_is_the_union_of_every_runs() {
    let runs = [
        with_go(run("a", None, None), None),
        with_go(run("b", None, None), Some("aa")),
    ];
    let merged = merge(&runs, "m").unwrap();
    let m: Manifest = serde_json::from_str(&merged.manifest_json).unwrap();
    let names: Vec<&str> = m.images.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["probe-rust-tokio", "probe-go"], "both runs' images");
}

#[test]
fn samples_of_an_image_their_runs_manifest_lacks_are_refused() {
    let mut a = run("a", None, None);
    let lacking = with_go(run("x", None, None), None);
    a.files.manifest_json = lacking.files.manifest_json;
    let err = format!(
        "{:#}",
        merge(&[a, with_go(run("b", None, None), Some("aa"))], "m")
            .err()
            .unwrap()
    );
    assert!(
        err.contains("a.tar.gz") && err.contains("go@") && err.contains("does not list"),
        "{err}"
    );
}

#[test]
fn a_copy_with_other_whitespace_is_still_the_same_run() {
    let a = run("a", half(1), None);
    let mut copy = run("a", half(1), None);
    copy.name = "copy.tar.gz".into();
    copy.files.run_json = a.files.run_json.clone();
    copy.files.samples_jsonl = copy
        .files
        .samples_jsonl
        .replace("{\"run_id\"", "{ \"run_id\"");
    assert_ne!(copy.files.samples_jsonl, a.files.samples_jsonl);
    let err = format!("{:#}", merge(&[a, copy], "m").err().unwrap());
    assert!(
        err.contains("a.tar.gz and copy.tar.gz are the same run named twice"),
        "{err}"
    );
}

#[test]
fn a_copy_with_moved_timestamps_is_still_the_same_run() {
    let a = run("a", None, None);
    let mut copy = run("a", None, None);
    copy.name = "copy.tar.gz".into();
    let mut state: RunState =
        serde_json::from_str(copy.files.run_json.as_deref().unwrap()).unwrap();
    state.started_at = "2030-01-01T00:00:00Z".into();
    copy.files.run_json = Some(serde_json::to_string(&state).unwrap());
    let (samples, _) = sample::parse_lines(copy.files.samples_jsonl.as_bytes()).unwrap();
    copy.files.samples_jsonl = samples
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            s.started_at = format!("2030-01-01T00:00:{i:02}Z");
            serde_json::to_string(&s).unwrap() + "\n"
        })
        .collect();
    let err = format!("{:#}", merge(&[a, copy], "m").err().unwrap());
    assert!(
        err.contains("a.tar.gz and copy.tar.gz are the same run named twice, or copies of one run")
            && err.contains("24 shared sample(s)"),
        "{err}"
    );
}

#[test]
fn shards_sharing_a_run_id_and_start_are_two_runs() {
    let a = run("a", half(1), None);
    let mut b = run("a", half(2), None);
    b.name = "b.tar.gz".into();
    b.files.run_json = a
        .files
        .run_json
        .as_ref()
        .map(|j| j.replace("\"index\":1", "\"index\":2"));
    let merged = merge(&[a, b], "m").unwrap();
    assert_eq!(merged.samples.len(), 24);
}

#[test]
fn a_run_that_measured_nothing_is_refused_as_empty_not_as_a_twin() {
    let mut a = run("a", None, None);
    a.files.samples_jsonl = String::new();
    let mut b = run("b", None, None);
    b.files.samples_jsonl = String::new();
    let err = format!("{:#}", merge(&[a, b], "m").err().unwrap());
    assert!(
        err.contains("a.tar.gz: run a measured nothing") && !err.contains("twice"),
        "{err}"
    );
}

#[test]
fn nothing_writes_a_samples_host_and_a_run_without_run_json_is_named() {
    let merged = merge(&[run("a", half(1), None), run("b", half(2), None)], "m").unwrap();
    assert!(
        merged.samples.iter().all(|s| s.host.is_none()),
        "host is reserved for runs across several Engines"
    );
    let mut bare = run("a", None, None);
    bare.files.run_json = None;
    let err = format!("{:#}", merge(&[bare], "m").err().unwrap());
    for said in [
        "`parkbench run`",
        "`parkbench reproduce`",
        "archive the whole run folder again",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
}

/// `input` with every memory figure of its samples times `factor`, and each sample's host `host`.
pub(crate) fn altered(mut input: Input, factor: f64, host: Option<&str>) -> Input {
    let (samples, _) = sample::parse_lines(input.files.samples_jsonl.as_bytes()).unwrap();
    let scale = |v: u64| (v as f64 * factor) as u64;
    input.files.samples_jsonl = samples
        .into_iter()
        .map(|mut s| {
            s.baseline_rss_bytes = s.baseline_rss_bytes.map(scale);
            s.rss_bytes = s.rss_bytes.iter().copied().map(scale).collect();
            s.rss_median_bytes = s.rss_median_bytes.map(scale);
            s.per_task_bytes = s.per_task_bytes.map(|v| v * factor);
            s.vm_hwm_bytes = s.vm_hwm_bytes.map(scale);
            s.host = host.map(String::from);
            serde_json::to_string(&s).unwrap() + "\n"
        })
        .collect();
    input
}

const X: &str = "CPU X · 2 logical CPUs · ≈8 GiB · Linux 6.1";
const Y: &str = "CPU Y · 4 logical CPUs · ≈16 GiB · Linux 6.12";
const Z: &str = "CPU Z · 8 logical CPUs · ≈32 GiB · Linux 6.12";

#[test]
fn one_line_per_claim_says_on_how_many_classes_it_holds_and_names_the_others() {
    let merged = merge(
        &[
            run("a", None, Some(X)),
            run("b", None, Some(Y)),
            altered(run("c", None, Some(Z)), 3.0, None),
        ],
        "m",
    )
    .unwrap();
    let study = Study::default_study().under_kernels(&[]).unwrap();
    let j = judge(&study, &merged.samples).unwrap();
    let labels: Vec<&str> = j.classes.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["A", "B", "C"]);
    let own = judged(&fixture::samples());
    let lines = lines(&j);
    assert_eq!(lines.len(), own.len());
    let mut said = 0;
    for ((claim, line), v) in lines.iter().zip(&own) {
        assert_eq!(*claim, v.claim);
        let c = &j.classes[2]
            .verdicts
            .iter()
            .find(|w| w.claim == v.claim)
            .unwrap();
        let held_ab = (v.status == verdict::Status::Reproduced) as usize * 2;
        let held = held_ab + (c.status == verdict::Status::Reproduced) as usize;
        assert!(
            line.starts_with(&format!("reproduced on {held} of 3 classes")),
            "{line}"
        );
        if v.status == verdict::Status::Reproduced && c.status == verdict::Status::Differs {
            assert_eq!(line, "reproduced on 2 of 3 classes: differs on class C");
            said += 1;
        }
        if held == 3 {
            assert_eq!(line, "reproduced on 3 of 3 classes");
        }
    }
    assert!(
        said > 0,
        "memory three times over differs somewhere: {lines:?}"
    );
    let md = classes::markdown(&j);
    for want in [
        "| Claim | A | B | C |",
        &format!("- **C**: {Z} (24 samples)"),
    ] {
        assert!(md.contains(want), "{want}: {md}");
    }
    insta::assert_snapshot!("classes_md_three_classes", md);
}

#[test]
fn findings_other_than_reproduced_are_grouped_by_word() {
    let own = judged(&fixture::samples());
    let mut differs = own[0].clone();
    differs.status = verdict::Status::Differs;
    let mut none = own[0].clone();
    none.status = verdict::Status::NotMeasured;
    let class = |label: &str, v: &Verdict| ClassVerdicts {
        label: label.into(),
        class: format!("class {label}"),
        samples: 1,
        hosts: vec![],
        verdicts: vec![v.clone()],
    };
    let j = Judged {
        classes: vec![
            class("A", &differs),
            class("B", &none),
            class("C", &differs),
            class("D", &own[0]),
        ],
        hosts: vec![],
    };
    let want = match own[0].status {
        verdict::Status::Reproduced => "reproduced on 1 of 4 classes",
        _ => "reproduced on 0 of 4 classes",
    };
    let line = &lines(&j)[0].1;
    assert!(
        line.starts_with(&format!(
            "{want}: differs on classes A, C; not measured on class B"
        )),
        "{line}"
    );
}

#[test]
fn hosts_of_one_class_that_measured_the_same_cells_are_judged_alone() {
    let merged = merge(
        &[
            altered(run("a", None, Some(X)), 1.0, Some("left")),
            altered(run("b", None, Some(X)), 3.0, Some("right")),
            altered(run("c", None, Some(Y)), 1.0, Some("other")),
        ],
        "m",
    )
    .unwrap();
    let study = Study::default_study().under_kernels(&[]).unwrap();
    let j = judge(&study, &merged.samples).unwrap();
    assert_eq!(j.classes[0].hosts, ["left", "right"]);
    let hosts: Vec<(&str, &str)> = j
        .hosts
        .iter()
        .map(|h| (h.host.as_str(), h.class.as_str()))
        .collect();
    assert_eq!(hosts, [("left", "A"), ("right", "A"), ("other", "B")]);
    assert_eq!(
        j.hosts[0].verdicts,
        judged(&fixture::samples()),
        "its samples alone"
    );
    let lines = lines(&j);
    assert!(
        lines
            .iter()
            .any(|(_, l)| l.ends_with("; on 2 of 3 hosts: differs on host `right`")),
        "{lines:?}"
    );
    let md = classes::markdown(&j);
    assert!(
        md.contains("| Claim | left (A) | right (A) | other (B) |"),
        "{md}"
    );
    assert!(md.contains("## host right (class A, 24 samples)"), "{md}");

    // One class on three Engines of one machine: judged per host.
    let one = merge(
        &[
            altered(run("a", None, Some(X)), 1.0, Some("e1")),
            altered(run("b", None, Some(X)), 1.0, Some("e2")),
            altered(run("c", None, Some(X)), 1.0, Some("e3")),
        ],
        "m",
    )
    .unwrap();
    let j = judge(&study, &one.samples).expect("hosts of one class are judged alone");
    assert_eq!((j.classes.len(), j.hosts.len()), (1, 3));
    let first = &super::lines(&j)[0].1;
    assert!(
        first.starts_with("reproduced on ") && first.contains(" of 1 class"),
        "{first}"
    );
    assert!(first.contains(" of 3 hosts"), "{first}");
}

#[test]
fn hosts_that_shared_out_the_cells_of_a_class_are_not_judged_alone() {
    let merged = merge(
        &[
            altered(run("a", half(1), Some(X)), 1.0, Some("left")),
            altered(run("b", half(2), Some(X)), 1.0, Some("right")),
        ],
        "m",
    )
    .unwrap();
    assert!(
        !needed(&merged.samples),
        "one class, its cells dealt over two hosts"
    );
    let study = Study::default_study().under_kernels(&[]).unwrap();
    assert!(judge(&study, &merged.samples).is_none());
}

#[test]
fn classes_are_labelled_in_order_with_letters() {
    let got: Vec<String> = [0, 1, 25, 26, 27, 51, 52, 701, 702].map(label).to_vec();
    assert_eq!(got, ["A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA"]);
}

#[test]
fn a_hostile_host_name_stays_one_line_of_text_in_a_table_cell() {
    let evil = "<b>x</b>|\n# y";
    let merged = merge(
        &[
            altered(run("a", None, Some(X)), 1.0, Some(evil)),
            altered(run("b", None, Some(X)), 1.0, Some("fine")),
        ],
        "m",
    )
    .unwrap();
    let study = Study::default_study().under_kernels(&[]).unwrap();
    let j = judge(&study, &merged.samples).unwrap();
    assert!(
        !j.hosts[0].host.contains('\n'),
        "one line: {:?}",
        j.hosts[0].host
    );
    let md = classes::section(&j);
    let row = md
        .lines()
        .find(|l| l.starts_with("| Claim | \\<b\\>"))
        .expect(&md);
    assert_eq!(row.matches(" | ").count(), 2, "the pipe is escaped: {row}");
    assert!(!row.contains("<b>"), "no raw HTML: {row}");
}

#[test]
fn a_replicate_host_that_lost_cells_is_still_judged_alone() {
    let merged = merge(
        &[
            altered(run("a", None, Some(X)), 1.0, Some("whole")),
            altered(run("b", half(1), Some(X)), 1.0, Some("lost half")),
        ],
        "m",
    )
    .unwrap();
    let study = Study::default_study().under_kernels(&[]).unwrap();
    let j = judge(&study, &merged.samples).expect("the hosts measured the same cells");
    assert_eq!(j.hosts.len(), 2);
    let lost = &j.hosts[1];
    assert!(
        lost.verdicts
            .iter()
            .any(|v| v.status == verdict::Status::NotMeasured),
        "a claim on a lost cell is not measured on it"
    );
    assert_eq!(j.hosts[0].verdicts, judged(&fixture::samples()));
}
