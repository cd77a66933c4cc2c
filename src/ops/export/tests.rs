use std::path::Path;

use super::kubernetes::{in_repo, manifest};
use super::*;
use crate::study::cpuset;
use crate::study::repeats::RepeatsChoice;

fn job(study: &Study, shards: u32) -> Job<'_> {
    Job {
        study,
        file: Path::new("results/wait-1m/study.yaml"),
        shards,
        repeats: None,
    }
}

fn default_manifest(shards: u32) -> String {
    let study = Study::default_study();
    manifest(
        &job(&study, shards),
        "results/wait-1m/study.yaml",
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

fn default_script(shards: u32, slurm: &Slurm) -> String {
    let study = Study::default_study();
    let places = slurm::Places {
        repo: "/shared/parkbench".into(),
        study: "/shared/parkbench/results/wait-1m/study.yaml".into(),
        results: "/shared/results".into(),
    };
    let mut job = job(&study, shards);
    job.repeats = Some(RepeatsChoice::Fixed(2));
    slurm::script(&job, &places, &slurm.options().unwrap())
}

#[test]
fn the_slurm_script_of_the_default_study() {
    let slurm = Slurm {
        partition: Some("bench".into()),
        time: Some("2:00:00".into()),
    };
    insta::assert_snapshot!(default_script(3, &slurm));
}

#[test]
fn the_slurm_array_runs_every_shard_alone_then_merges_and_verifies() {
    let script = default_script(4, &Slurm::default());
    let directives: Vec<&str> = script
        .lines()
        .filter_map(|l| l.strip_prefix("#SBATCH "))
        .collect();
    for want in ["--array=1-4", "--exclusive", "--nodes=1", "--ntasks=1"] {
        assert!(directives.contains(&want), "{want}: {directives:?}");
    }
    assert!(
        !directives.iter().any(|d| d.starts_with("--time")),
        "{directives:?}"
    );
    assert!(
        script.contains("reproduce /shared/parkbench/results/wait-1m/study.yaml \\\n  --shard \"$SLURM_ARRAY_TASK_ID/4\" --cpus auto --repeats 2"),
        "{script}"
    );
    assert!(
        script.contains("--dependency=\"afterok:$SLURM_ARRAY_JOB_ID\""),
        "{script}"
    );
    assert!(
        script.contains(
            "merge \"$PARKBENCH_SHARDS\"/*/wait-1m/runs/*.tar.gz --out /shared/results/merged"
        ),
        "{script}"
    );
    assert!(script.contains("verify \"$(echo"), "{script}");
    // bash reads it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.sh");
    std::fs::write(&file, &script).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-n")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn slurm_times_and_partitions_are_checked() {
    for good in ["90", "30:00", "1:30:00", "2-12", "2-12:30", "2-12:30:00"] {
        assert!(slurm::slurm_time(good), "{good}");
    }
    for bad in [
        "",
        "1:2:3:4",
        "1h",
        "2-",
        "-5",
        "1:30\n#SBATCH --x",
        "9999999",
    ] {
        assert!(!slurm::slurm_time(bad), "{bad:?}");
    }
    for (partition, time) in [
        (Some("a b"), None),
        (Some("x\ny"), None),
        (None, Some("1h")),
    ] {
        let slurm = Slurm {
            partition: partition.map(str::to_string),
            time: time.map(str::to_string),
        };
        let err = format!("{:#}", slurm.options().unwrap_err());
        assert!(
            err.contains("--partition") || err.contains("--time"),
            "{err}"
        );
    }
}

#[test]
fn the_slurm_script_names_absolute_paths_and_makes_the_results_folder() {
    let repo = tempfile::tempdir().unwrap();
    let study = repo.path().join("results/s/study.yaml");
    std::fs::create_dir_all(study.parent().unwrap()).unwrap();
    std::fs::write(&study, crate::study::DEFAULT_STUDY).unwrap();
    let results = repo.path().join("out/deeper");
    let paths = Paths {
        repo: repo.path().join("."),
        results: results.clone(),
    };
    let loaded = Study::load(&study).unwrap();
    let mut job = job(&loaded, 2);
    job.file = &study;
    let script = Slurm::default().write(&paths, &job).unwrap();
    assert!(
        results.is_dir(),
        "Slurm writes its logs there before the script runs"
    );
    let canon = std::fs::canonicalize(&results).unwrap();
    assert!(
        script.contains(&format!("--output={}/", canon.display())),
        "{script}"
    );
    let spaced = repo.path().join("a b");
    let paths = Paths {
        repo: repo.path().into(),
        results: spaced,
    };
    let err = format!("{:#}", Slurm::default().write(&paths, &job).unwrap_err());
    assert!(err.contains("characters a shell would read"), "{err}");
}

/// `--image` reaches the manifest's YAML only as an image reference.
#[test]
fn the_image_is_an_image_reference() {
    let study = Study::default_study();
    let with = |image: &str| manifest(&job(&study, 2), "results/wait-1m/study.yaml", image);
    for good in [
        "parkbench/kit:0.1.0",
        "kit",
        "registry.example:5000/team/parkbench-kit:v1.2_rc",
        "localhost/kit@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ] {
        let yaml = with(good).unwrap_or_else(|e| panic!("{good}: {e:#}"));
        assert!(yaml.contains(&format!("image: {good}\n")), "{good}");
    }
    for bad in [
        "",
        "kit\n          securityContext: {privileged: true}",
        "kit # comment",
        "Kit:1",
        "kit:",
        "kit:-1",
        "\"kit\"",
        "kit@sha256:xyz",
        "-kit",
        "host:notaport/kit",
    ] {
        let e = format!("{:#}", with(bad).unwrap_err());
        assert!(e.contains("is not an image reference"), "{bad:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
