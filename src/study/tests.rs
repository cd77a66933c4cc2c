//! Unit tests of the study file: loading, ids, kernels, placeholders, error locations.

use super::*;

#[test]
fn a_study_id_is_one_plain_folder_name() {
    for bad in ["../../tmp/evil", "/abs", "a/b", "..", ".hidden", "Wait", ""] {
        let text = DEFAULT_STUDY.replacen("id: wait-1m", &format!("id: {bad:?}"), 1);
        let err = format!("{:#}", Study::parse(&text).unwrap_err());
        assert!(err.contains("names the study's folder"), "{bad}: {err}");
    }
    for good in ["wait-1m", "sleep-peak-2024", "v1.2_x"] {
        let text = DEFAULT_STUDY.replacen("id: wait-1m", &format!("id: {good}"), 1);
        assert_eq!(Study::parse(&text).unwrap().id, good);
    }
}

#[test]
fn every_checked_in_study_loads() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let mut seen = 0;
    for entry in std::fs::read_dir(&results).unwrap() {
        let file = entry.unwrap().path().join("study.yaml");
        if file.is_file() {
            let study = Study::load(&file).unwrap_or_else(|e| panic!("{e:#}"));
            assert_eq!(
                file.parent().unwrap().file_name().unwrap().to_str(),
                Some(study.id.as_str()),
                "a study's folder is named after its id"
            );
            seen += 1;
        }
    }
    assert!(seen >= 2, "results/ holds the studies");
}

#[test]
fn repeats_are_a_count_or_processes_on_demand() {
    let with = |r: &str| DEFAULT_STUDY.replacen("  repeats: 3\n", &format!("  repeats: {r}\n"), 1);
    let study = Study::parse(&with("{min: 3, max: 10, target_cv: 0.005}")).unwrap();
    assert_eq!(
        study.protocol.repeats,
        Repeats {
            min: 3,
            max: 10,
            target_cv: Some(0.005)
        }
    );
    let err = |r: &str| format!("{:#}", Study::parse(&with(r)).unwrap_err());
    let e = err("{min: 1, max: 10, target_cv: 0.005}");
    assert!(e.contains("protocol.repeats.min is 1"), "{e}");
    let e = err("{min: 3, max: 10}");
    assert_eq!(
        e,
        "study.yaml:15:12: protocol.repeats: missing field `target_cv`"
    );
    let e = err("three");
    assert!(e.contains("{min: 3, max: 10, target_cv: 0.005}"), "{e}");
    assert!(err("0").contains("protocol.repeats must be > 0"));
}

#[test]
fn a_probe_takes_the_first_of_the_runs_cpus() {
    let mut probe = Study::default_study().probes[0].clone();
    assert_eq!(probe.pinned_cpus(&[2, 3]).unwrap(), vec![2, 3]);
    probe.cpus = Some(1);
    assert_eq!(probe.pinned_cpus(&[2, 3]).unwrap(), vec![2]);
    probe.cpus = Some(4);
    let err = probe.pinned_cpus(&[2, 3]).unwrap_err();
    assert!(
        err.contains("asks for 4 CPUs but this run has 2 (2-3)"),
        "{err}"
    );
    let text = DEFAULT_STUDY.replacen("    image: go\n", "    image: go\n    cpus: 0\n", 1);
    let err = format!("{:#}", Study::parse(&text).unwrap_err());
    assert!(err.contains("cpus: 0"), "{err}");
}

#[test]
fn unknown_kind_is_named_with_its_line() {
    let text = DEFAULT_STUDY.replacen("    image: go\n", "    image: go\n    kind: fast\n", 1);
    let err = format!("{:#}", Study::parse(&text).unwrap_err());
    assert!(
        err.starts_with("study.yaml:25:11: probes[0].kind: unknown variant `fast`"),
        "{err}"
    );
}

#[test]
fn steady_study_keeps_its_defaults() {
    let study = Study::default_study();
    assert!(study.probes.iter().all(|p| p.kind == Kind::Steady));
    let yaml = serde_yaml::to_string(&study.probes[0]).unwrap();
    assert!(!yaml.contains("kind"), "steady is not written: {yaml}");
}

/// The async-costs study, where a probe and a claim are both named `asm-switch`.
const ASYNC_COSTS: &str = include_str!("../../results/async-costs/study.yaml");
const ASYNC_COSTS_FILE: &str = "results/async-costs/study.yaml";

/// The 1-based lines of `text` that are exactly `line`.
fn lines_equal(text: &str, line: &str) -> Vec<usize> {
    (1..)
        .zip(text.lines())
        .filter(|(_, l)| *l == line)
        .map(|(n, _)| n)
        .collect()
}

/// `text` with the first `from` at or after line `line` (1-based) replaced by `to`.
fn edit_from_line(text: &str, line: usize, from: &str, to: &str) -> String {
    let start: usize = text.lines().take(line - 1).map(|l| l.len() + 1).sum();
    let (head, tail) = text.split_at(start);
    assert!(tail.contains(from), "{from:?} after line {line}");
    format!("{head}{}", tail.replacen(from, to, 1))
}

fn async_costs_error(text: &str) -> String {
    format!(
        "{:#}",
        Study::parse_named(ASYNC_COSTS_FILE, text).unwrap_err()
    )
}

#[test]
fn an_error_in_a_claim_named_like_a_probe_points_at_the_claim() {
    let [probe, claim] = lines_equal(ASYNC_COSTS, "  - id: asm-switch")[..] else {
        panic!("a probe and a claim named asm-switch")
    };
    assert!(probe < claim);
    // Without `metric` the claim is at fault as a whole: its first key, `id`, at column 5.
    let text = edit_from_line(ASYNC_COSTS, claim, "    metric: ns_per_switch\n", "");
    let err = async_costs_error(&text);
    assert!(
        err.starts_with(&format!(
            "{ASYNC_COSTS_FILE}:{claim}:5: claim \"asm-switch\": stat result_median needs `metric`"
        )),
        "{err}"
    );
}

#[test]
fn an_error_in_a_nested_field_points_at_its_value() {
    let [_, claim] = lines_equal(ASYNC_COSTS, "  - id: asm-switch")[..] else {
        panic!("a probe and a claim named asm-switch")
    };
    let from = "    tolerance: {relative: 0.1}\n";
    let text = edit_from_line(
        ASYNC_COSTS,
        claim,
        from,
        "    tolerance: {relative: -0.1}\n",
    );
    let line = claim + 7;
    assert_eq!(
        text.lines().nth(line - 1),
        Some("    tolerance: {relative: -0.1}")
    );
    let err = async_costs_error(&text);
    assert!(
        err.starts_with(&format!(
            "{ASYNC_COSTS_FILE}:{line}:27: claim \"asm-switch\": tolerance.relative is -0.1"
        )),
        "{err}"
    );
    // A probe's environment value, two levels down a block mapping (line 28 of article 000).
    let text = DEFAULT_STUDY.replacen("GOGC: \"100\"", "GOGC: \"{gogc}\"", 1);
    assert_eq!(text.lines().nth(27), Some("      GOGC: \"{gogc}\""));
    let err = format!("{:#}", Study::parse(&text).unwrap_err());
    assert!(
        err.starts_with(
            "study.yaml:28:13: probe \"go\": {gogc} in \"{gogc}\" is not a placeholder"
        ),
        "{err}"
    );
}

#[test]
fn errors_in_lists_point_at_the_item() {
    // The second of the protocol's kernels (line 22, inserted after `timeout_s`).
    let text = DEFAULT_STUDY.replacen(
        "  timeout_s: 300\n",
        "  timeout_s: 300\n  kernels: [host, host]\n",
        1,
    );
    let err = format!("{:#}", Study::parse(&text).unwrap_err());
    assert!(
        err.starts_with("study.yaml:22:19: protocol.kernels: \"host\" is named twice"),
        "{err}"
    );
    // A factor's level in flow style: the level's `cpus` value.
    let text = DEFAULT_STUDY.replacen("{id: \"1\", cpus: 1}", "{id: \"1\", cpus: 0}", 1);
    let line = lines_equal(&text, "      - {id: \"1\", cpus: 0}")[0];
    let err = format!("{:#}", Study::parse(&text).unwrap_err());
    assert!(
        err.starts_with(&format!(
            "study.yaml:{line}:25: factor \"workers\", level \"1\": cpus must be at least 1"
        )),
        "{err}"
    );
    // A claim that requires an unknown claim: the item of `requires`.
    let text = DEFAULT_STUDY.replacen(
        "  - id: rust-rss-1m\n",
        "  - id: rust-rss-1m\n    requires: [go-rss-1m, nope]\n",
        1,
    );
    let line = lines_equal(&text, "  - id: rust-rss-1m")[0] + 1;
    let err = format!("{:#}", Study::parse(&text).unwrap_err());
    assert!(
        err.starts_with(&format!(
            "study.yaml:{line}:27: claim \"rust-rss-1m\": requires \"nope\", which is not a claim"
        )),
        "{err}"
    );
}

#[test]
fn a_study_file_names_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("study.yaml");
    std::fs::write(
        &file,
        DEFAULT_STUDY.replacen("  samples: 5\n", "  samples: 0\n", 1),
    )
    .unwrap();
    let err = format!("{:#}", Study::load(&file).unwrap_err());
    assert_eq!(
        err,
        format!("{}:19:12: protocol.samples must be > 0", file.display())
    );
}

#[test]
fn a_missing_study_file_names_the_nearest_study_and_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    for id in ["wait-1m", "async-costs"] {
        std::fs::create_dir_all(results.join(id)).unwrap();
        std::fs::write(results.join(id).join(FILE), DEFAULT_STUDY).unwrap();
    }
    let err = |path: &Path| format!("{:#}", Study::load(path).unwrap_err());
    let typo = results.join("wiat-1m").join(FILE);
    assert_eq!(
        err(&typo),
        format!(
            "there is no study file {}: did you mean {}? (the studies in {} ({}/<id>/study.yaml): \
             async-costs, wait-1m)",
            typo.display(),
            results.join("wait-1m").join(FILE).display(),
            results.display(),
            results.display(),
        )
    );
    let far = results.join("something-else").join(FILE);
    assert!(
        err(&far).contains(": name one of the studies in")
            && err(&far).ends_with("async-costs, wait-1m"),
        "{}",
        err(&far)
    );
}

#[test]
fn a_declared_duration_must_end_before_the_timeout() {
    for bad in ["0", "300", "-1", ".nan"] {
        let text = DEFAULT_STUDY.replacen(
            "  timeout_s: 300\n",
            &format!("  timeout_s: 300\n  duration_s: {bad}\n"),
            1,
        );
        let err = format!("{:#}", Study::parse(&text).unwrap_err());
        assert!(
            err.contains("protocol.duration_s is")
                && err.contains("below protocol.timeout_s (300 s)"),
            "{bad}: {err}"
        );
    }
    let text = DEFAULT_STUDY.replacen(
        "  timeout_s: 300\n",
        "  timeout_s: 300\n  duration_s: 10\n",
        1,
    );
    assert_eq!(Study::parse(&text).unwrap().protocol.duration_s, Some(10.0));
}

#[test]
fn a_timeout_past_a_week_is_refused() {
    let text = DEFAULT_STUDY.replacen(
        "  timeout_s: 300\n",
        "  timeout_s: 18446744073709551615\n",
        1,
    );
    let err = format!("{:#}", Study::parse(&text).unwrap_err());
    assert!(err.contains("at most 604800 (a week)"), "{err}");
}

#[test]
fn a_study_file_misnamed_beside_the_right_one_names_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(FILE), DEFAULT_STUDY).unwrap();
    let typo = dir.path().join("study.yml");
    assert_eq!(
        format!("{:#}", Study::load(&typo).unwrap_err()),
        format!(
            "there is no study file {}: did you mean {}?",
            typo.display(),
            dir.path().join(FILE).display()
        )
    );
}
