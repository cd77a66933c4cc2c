use crate::outputs::{archive, reference};
use crate::run::run_dir::RunState;
use crate::run::slice::{NOT_IN, Slice};
use crate::study::sample;

/// Article 000's reference run cut down to one probe at one scale, as `--only --scales` runs it.
#[test]
fn a_partial_run_says_so_and_its_other_claims_are_not_in_it() {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let mut files = archive::read_run(&reference::archive(&results, "wait-1m").unwrap()).unwrap();
    let mut state: RunState = serde_json::from_str(files.run_json.as_deref().unwrap()).unwrap();
    let study = crate::study::Study::parse(&files.study_yaml).unwrap();
    let (probe, tasks) = (study.probes[0].id.clone(), study.protocol.scales[0]);
    let slice = Slice::of(vec![probe.clone()], vec![tasks]).unwrap();
    state.partial = Some(slice.clone());
    files.run_json = Some(serde_json::to_string(&state).unwrap());
    let (samples, _) = sample::parse_lines(files.samples_jsonl.as_bytes()).unwrap();
    files.samples_jsonl = (samples.iter())
        .filter(|s| s.probe == probe && s.tasks == tasks)
        .map(|s| serde_json::to_string(s).unwrap() + "\n")
        .collect();
    let outcome = super::recompute(&files).unwrap();
    let why = outcome.partial.clone().unwrap();
    assert!(why.contains(&slice.flags()), "{why}");
    let left_out: Vec<_> = (outcome.verdicts.iter())
        .filter(|v| !slice.covers(&v.probe, v.tasks))
        .collect();
    assert!(!left_out.is_empty(), "the study has claims on other cells");
    for v in left_out {
        assert_eq!(v.status, super::Status::NotMeasured, "{}", v.claim);
        assert_eq!(v.note.as_deref(), Some(NOT_IN), "{}", v.claim);
    }
    let refused = reference::refuse_unless_complete(&outcome).unwrap_err();
    assert!(refused.to_string().contains("partial run"), "{refused}");
}
