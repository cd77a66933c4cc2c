use super::*;

fn default_manifest(shards: u32) -> String {
    let study = Study::default_study();
    manifest(
        &study,
        "results/wait-1m/study.yaml",
        shards,
        "parkbench/kit:test",
    )
    .unwrap()
}

#[test]
fn the_indexed_job_of_the_default_study() {
    insta::assert_snapshot!(default_manifest(3));
}

#[test]
fn the_job_runs_every_shard_with_exclusive_whole_cores() {
    let yaml: serde_yaml::Value = serde_yaml::from_str(&default_manifest(4)).unwrap();
    let spec = &yaml["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    assert_eq!(spec["completions"].as_u64(), Some(4));
    assert_eq!(spec["parallelism"].as_u64(), Some(4));
    let pod = &spec["template"]["spec"];
    let c = &pod["containers"][0];
    assert_eq!(c["imagePullPolicy"].as_str(), Some("Never"));
    let res = &c["resources"];
    assert_eq!(
        res["requests"], res["limits"],
        "Guaranteed: requests = limits"
    );
    let cpu = res["limits"]["cpu"].as_str().unwrap();
    let study = Study::default_study();
    let pinned = cpuset::parse(&study.protocol.cpus).unwrap().len() as u64;
    assert_eq!(
        cpu.parse::<u64>().ok(),
        Some(pinned + 1),
        "whole cores: {cpu}"
    );
    assert!(res["limits"]["memory"].as_str().unwrap().ends_with("Mi"));
    let anti =
        &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(anti["topologyKey"].as_str(), Some("kubernetes.io/hostname"));
    let job = yaml["metadata"]["name"].as_str().unwrap();
    assert_eq!(
        anti["labelSelector"]["matchLabels"]["parkbench/job"].as_str(),
        Some(job)
    );
    assert_eq!(
        spec["template"]["metadata"]["labels"]["parkbench/job"].as_str(),
        Some(job)
    );
    let script = c["args"][0].as_str().unwrap();
    assert!(
        script.contains("$((JOB_COMPLETION_INDEX + 1))/4"),
        "{script}"
    );
    assert!(
        script.contains("--shard \"$shard\" --cpus auto"),
        "{script}"
    );
}

#[test]
fn job_names_are_dns_labels() {
    assert_eq!(job_name("001_Tokio.tasks"), "parkbench-001-tokio-tasks");
    let long = job_name(&"x".repeat(80));
    assert!(long.len() <= 50 && !long.ends_with('-'));
}

#[test]
fn a_study_outside_the_repository_is_refused() {
    let repo = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("study.yaml");
    std::fs::write(&file, crate::study::DEFAULT_STUDY).unwrap();
    let err = format!("{:#}", in_repo(repo.path(), &file).unwrap_err());
    assert!(err.contains("not inside the repository"), "{err}");
    let inside = repo.path().join("results/s");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::write(inside.join("study.yaml"), "x").unwrap();
    assert_eq!(
        in_repo(repo.path(), &inside.join("study.yaml")).unwrap(),
        "results/s/study.yaml"
    );
}
