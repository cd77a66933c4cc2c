//! `export kubernetes` checked against the Kubernetes API's own schema of a batch/v1 Job: the
//! pinned JSON Schema of Kubernetes v1.37.0 (strict: a field the API does not know is an error;
//! `tests/fixtures/kubernetes/SOURCE.md` says where it comes from). The Job of every study in
//! `results/` validates; one with a misspelt field, a value of the wrong type or a field in the
//! wrong place does not. No live cluster takes part.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

const FIXTURES: &str = "tests/fixtures/kubernetes";
/// The pinned files and their sha256 (SOURCE.md).
const PINNED: [(&str, &str); 2] = [
    (
        "job-batch-v1.json",
        "eeb8157764e8dd98747a07658b007c0a14fd01ba1c6baff6d9faeebd36c384a1",
    ),
    (
        "_definitions.json",
        "81193084d02c2bb0f9eb122814058c8ab0f63724133fe51955b103e07580c6ed",
    ),
];
/// How the Job's schema names the definitions file.
const DEFINITIONS_REF: &str = "/api/_definitions.json#/$defs/";

fn pinned(name: &str) -> String {
    let path = repo().join(FIXTURES).join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let want = PINNED.iter().find(|(n, _)| *n == name).unwrap().1;
    let got = hex(&Sha256::digest(&bytes));
    assert_eq!(got, want, "{} is not the pinned file", path.display());
    String::from_utf8(bytes).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The Job's schema with the definitions it reaches inlined as its own `$defs`.
fn job_schema() -> jsonschema::Validator {
    let job = pinned("job-batch-v1.json").replace(DEFINITIONS_REF, "#/$defs/");
    let definitions = pinned("_definitions.json").replace(DEFINITIONS_REF, "#/$defs/");
    let mut schema: Value = serde_json::from_str(&job).unwrap();
    let definitions: Value = serde_json::from_str(&definitions).unwrap();
    schema["$schema"] = definitions["$schema"].clone();
    schema["$defs"] = definitions["$defs"].clone();
    jsonschema::draft202012::new(&schema).expect("the pinned schema compiles")
}

/// The errors of `job` against the schema, one line each (empty when it validates).
fn errors(schema: &jsonschema::Validator, job: &Value) -> Vec<String> {
    schema
        .iter_errors(job)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn export(study: &Path) -> Value {
    let out = parkbench()
        .args(["export", "kubernetes", "--shards", "3"])
        .arg(study)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    serde_yaml::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_study_exports_a_job_the_kubernetes_api_schema_accepts() {
    let schema = job_schema();
    let mut studies: Vec<_> = std::fs::read_dir(repo().join("results"))
        .unwrap()
        .map(|e| e.unwrap().path().join("study.yaml"))
        .filter(|p| p.is_file())
        .collect();
    studies.sort();
    assert!(studies.len() >= 2, "{studies:?}");
    for study in &studies {
        let job = export(study);
        assert_eq!(job["kind"], "Job");
        let errors = errors(&schema, &job);
        assert!(errors.is_empty(), "{}: {errors:#?}", study.display());
    }
}

/// Changes a valid Job into one the API refuses.
type Breaks = fn(&mut Value);

#[test]
fn the_schema_refuses_what_the_api_would_refuse() {
    let schema = job_schema();
    let good = export(&repo().join("results/wait-1m/study.yaml"));
    assert!(errors(&schema, &good).is_empty());
    let broken: [(&str, Breaks); 4] = [
        ("a misspelt field", |j| {
            let spec = j["spec"].as_object_mut().unwrap();
            let mode = spec.remove("completionMode").unwrap();
            spec.insert("completionMod".into(), mode);
        }),
        ("a count as text", |j| {
            j["spec"]["completions"] = "three".into()
        }),
        ("a container without a name", |j| {
            let c = j["spec"]["template"]["spec"]["containers"][0]
                .as_object_mut()
                .unwrap();
            c.remove("name");
        }),
        ("a pod field on the Job", |j| {
            j["spec"]["restartPolicy"] = "Never".into();
        }),
    ];
    for (what, break_it) in broken {
        let mut job = good.clone();
        break_it(&mut job);
        assert!(!errors(&schema, &job).is_empty(), "{what} validated");
    }
}
