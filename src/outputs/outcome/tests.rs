use super::published_kernel;

/// What `elixir --version` prints in Debian 12's elixir 1.14.0: the Erlang banner first.
const ELIXIR: &str = "Erlang/OTP 25 [erts-13.1.5] [source] [64-bit] [smp:2:2] [ds:2:2:10] \
                          [async-threads:1] [jit:ns]\n\nElixir 1.14.0 (compiled with Erlang/OTP 24)\n";

#[test]
fn a_version_read_by_a_pattern_is_the_one_compared() {
    use crate::images::recipe::Recipe;
    let recipe = Recipe::parse(
        "ex",
        "versions:\n  elixir: {run: [elixir, --version], pattern: 'Elixir (\\S+)'}\n",
    )
    .unwrap();
    let recorded = recipe.versions["elixir"].recorded(ELIXIR).unwrap();
    assert_eq!(
        super::version_in("elixir", &recorded).as_deref(),
        Some("1.14.0")
    );
    assert!(
        recorded.ends_with("(compiled with Erlang/OTP 24)"),
        "the whole output kept"
    );
    // Without the pattern, the banner's first number is taken: the wrong version.
    let plain = Recipe::parse("ex", "versions:\n  elixir: [elixir, --version]\n").unwrap();
    let recorded = plain.versions["elixir"].recorded(ELIXIR).unwrap();
    assert_eq!(
        super::version_in("elixir", &recorded).as_deref(),
        Some("25")
    );
}

#[test]
fn an_unknown_published_environment_is_no_deviation() {
    // A real record: the env.json of article 000's reference run.
    let archive = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/results/wait-1m/reference/run.tar.gz"
    );
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(archive).unwrap());
    let mut tar = tar::Archive::new(gz);
    let mut env_json = String::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().ends_with("env.json") {
            std::io::Read::read_to_string(&mut entry, &mut env_json).unwrap();
            break;
        }
    }
    let env: super::Environment = serde_json::from_str(&env_json).unwrap();
    let mut study = crate::study::Study::parse(crate::study::DEFAULT_STUDY).unwrap();
    study.source.toolchains.clear();
    study.source.environment = "a machine of another CPU model".into();
    assert!(!super::environment_deviations(&study, &env).is_empty());
    for unknown in ["unknown", "Unknown.", "not published", "  "] {
        study.source.environment = unknown.into();
        assert_eq!(
            super::environment_deviations(&study, &env),
            Vec::<String>::new()
        );
    }
}

#[test]
fn the_published_kernel_is_the_version_after_the_word() {
    assert_eq!(published_kernel("Ubuntu 22.04 (Kernel 5.15)"), Some("5.15"));
    assert_eq!(
        published_kernel("kernel 6.1.0-31-amd64, x86"),
        Some("6.1.0-31-amd64")
    );
    assert_eq!(published_kernel("WSL2 Linux 6.6.87.2"), None);
    assert_eq!(published_kernel("a kernel of its own"), None);
}

#[test]
fn a_sample_bringing_its_own_drop_rule_is_refused_at_load() {
    use crate::study::protocol::DropBatches;
    let fixture = include_str!("../../../tests/fixtures/samples.jsonl");
    let (mut samples, _) = crate::study::sample::parse_lines(fixture.as_bytes()).unwrap();
    let files = |samples: &[super::Sample]| crate::run::run_dir::RunFiles {
        run_id: "r".into(),
        study_yaml: crate::study::DEFAULT_STUDY.into(),
        samples_jsonl: samples
            .iter()
            .map(|s| serde_json::to_string(s).unwrap() + "\n")
            .collect(),
        env_json: None,
        manifest_json: None,
        summary_json: None,
        verdicts_json: None,
        report_md: None,
        run_json: None,
        merge_json: None,
        classes_json: None,
        classes_md: None,
        explanation_json: None,
    };
    samples[1].drop_batches = Some(DropBatches::default());
    assert!(
        super::recompute(&files(&samples)).is_ok(),
        "the study's rule"
    );
    samples[1].drop_batches = Some(DropBatches {
        steal_above: Some(1.0),
        wait_above: None,
        involuntary_switches_above: None,
    });
    let err = format!("{:#}", super::recompute(&files(&samples)).err().unwrap());
    let s = &samples[1];
    assert!(
        err.starts_with(&format!(
            "samples.jsonl: the sample of {} × {} tasks, repeat {} records drop_batches \
                 {{steal_above: 1, wait_above: null, involuntary_switches_above: null}}, but the \
                 study's protocol.drop_batches is {{steal_above: 0.05, wait_above: 0.05",
            s.probe, s.tasks, s.repeat
        )),
        "{err}"
    );
}

#[test]
fn the_runs_warnings_reach_the_report_and_the_terminal() {
    let state = r#"{"run_id": "r", "study": "wait-1m", "status": "complete",
            "cpus_requested": "0-7", "cpus_pinned": "0-1", "workers": 2, "deviations": [],
            "started_at": "t", "finished_at": null, "wall_ms": 1.0,
            "warnings": [{"what": "swap in use: 5 MiB of 10 MiB", "touches": "all"}]}"#;
    let files = |run_json: &str| crate::run::run_dir::RunFiles {
        run_id: "r".into(),
        study_yaml: crate::study::DEFAULT_STUDY.into(),
        samples_jsonl: include_str!("../../../tests/fixtures/samples.jsonl").into(),
        env_json: None,
        manifest_json: None,
        summary_json: None,
        verdicts_json: None,
        report_md: None,
        run_json: Some(run_json.into()),
        merge_json: None,
        classes_json: None,
        classes_md: None,
        explanation_json: None,
    };
    let outcome = super::recompute(&files(state)).unwrap();
    assert_eq!(outcome.warnings.len(), 1);
    assert_eq!(outcome.report_input().warnings, outcome.warnings);
    assert!(
        outcome
            .terminal()
            .contains("swap in use: 5 MiB of 10 MiB [may touch all figures]")
    );
    let older = state
        .split(",\n            \"warnings\"")
        .next()
        .unwrap()
        .to_owned()
        + "}";
    let outcome = super::recompute(&files(&older)).unwrap();
    assert!(
        outcome.warnings.is_empty(),
        "a run.json without warnings loads"
    );
    assert!(!outcome.terminal().contains("Validity warnings"));
}

#[test]
fn a_kernel_matches_on_every_part_the_article_gives() {
    use super::same_version;
    assert!(same_version("5.15.0-91-generic", "5.15"));
    assert!(!same_version("5.15.0", "5.1"));
    assert!(!same_version("6.18.44-fc-v1147", "5.15"));
    assert!(same_version("6.1.0-31-amd64", "6.1.0-31-amd64"));
}
