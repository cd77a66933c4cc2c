use super::*;
use crate::outputs::report::fixture;

fn render(study: &Study, partial: Option<&str>) -> String {
    let samples = fixture::samples();
    let summary = crate::outputs::summary::summarize(study, &samples);
    let verdicts = crate::outputs::verdict::judge(study, &summary);
    let mut input = fixture::input(study, &samples, &summary, &verdicts);
    input.partial = partial.map(String::from);
    String::from_utf8(Markdown.render(&input).unwrap()).unwrap()
}

#[test]
fn snapshot() {
    let text = render(&fixture::study(), None);
    assert!(text.contains("| `rust-range-1m` |"));
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("no {s}"));
    assert!(
        at("## Validity warnings") < at("## Verdicts"),
        "before any number"
    );
    assert!(text.contains("2 MiB steps — may touch **memory figures**."));
    assert!(text.contains("may touch all figures here."));
    insta::assert_snapshot!("report_md", text);
}

#[test]
fn no_claims_and_partial() {
    let mut study = fixture::study();
    study.claims.clear();
    let text = render(&study, Some("samples.jsonl line 7 malformed"));
    assert!(text.contains("This study states no claims; no verdicts."));
    let quiet = {
        let (samples, summary) = (fixture::samples(), fixture::summary());
        let mut input = fixture::input(&study, &samples, &summary, &[]);
        input.warnings.clear();
        String::from_utf8(Markdown.render(&input).unwrap()).unwrap()
    };
    assert!(
        quiet.contains("## Validity warnings\n\nNone seen.\n"),
        "{quiet}"
    );
    assert!(text.contains("> **Partial data:** samples.jsonl line 7 malformed."));
    assert!(!text.contains("| Claim |"));
}

#[test]
fn notes_intervals_batches_and_flags_beside_the_cells() {
    let text = "id: t\ntitle: t\nsource: {article: a, environment: e, cpus: '0'}\n\
            protocol: {scales: [10], repeats: 2, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5, target_cv: 0.05}\n\
            probes:\n  - {id: sw, image: x, kind: timed, scales: [1]}\n  - {id: st, image: y}\n";
    let study = Study::parse(text).unwrap();
    let mut samples = Vec::new();
    for (repeat, base) in [(1, 10.0), (2, 20.0)] {
        let mut s = fixture::samples()[0].clone();
        (s.probe, s.tasks, s.expected, s.repeat, s.kind) = ("sw".into(), 1, 1, repeat, Kind::Timed);
        s.peak = Some(crate::study::sample::Peak {
            ru_maxrss_bytes: Some(1),
            exit_code: Some(0),
            ..Default::default()
        });
        s.results = (0..5)
            .map(|i| std::collections::BTreeMap::from([("ns".into(), base + f64::from(i))]))
            .collect();
        s.notes = vec!["pinned to CPU 0".into()];
        (s.rss_bytes, s.baseline_rss_bytes) = (Vec::new(), None);
        samples.push(s);
    }
    let mut st = fixture::samples()[0].clone();
    (st.probe, st.tasks, st.expected, st.completed) = ("st".into(), 10, 10, Some(10));
    st.metrics.clear();
    st.notes = vec!["limit | reached".into()];
    samples.push(st);
    let summary = crate::outputs::summary::summarize(&study, &samples);
    let input = fixture::input(&study, &samples, &summary, &[]);
    let md = String::from_utf8(Markdown.render(&input).unwrap()).unwrap();
    assert!(md.contains("- sw runs its own scales: 1 tasks."), "{md}");
    assert!(
        md.contains("(12–22, CV 29.41 %) ⚠ CV above 5.00 % |"),
        "{md}"
    );
    assert!(
        md.contains("- sw: r1 5 batches, ns 10–14; r2 5 batches, ns 20–24"),
        "{md}"
    );
    assert!(
        md.contains("- Notes of sw at 1 tasks: “pinned to CPU 0” (2 processes)"),
        "{md}"
    );
    assert!(
        md.contains("- Notes of st at 10 tasks: “limit \\| reached” (1 process)"),
        "{md}"
    );
}

#[test]
fn the_timed_precision_line_is_only_for_a_study_with_a_kind_it_flags() {
    // The fixture's probes are steady: a `target_cv` flags none of their cells.
    let mut study = fixture::study();
    study.protocol.target_cv = Some(0.05);
    assert!(!render(&study, None).contains("Timed precision"));
    study.probes[0].kind = crate::study::Kind::Timed;
    assert!(render(&study, None).contains("Timed precision"));
}

#[test]
fn processes_on_demand_give_each_cells_precision() {
    let mut study = fixture::study();
    assert!(!render(&study, None).contains("## Precision"));
    study.protocol.repeats = crate::study::Repeats {
        min: 3,
        max: 10,
        target_cv: Some(0.005),
    };
    let text = render(&study, None);
    assert!(
            text.contains("3 independent processes per probe and scale, one more process at a time while a cell's CV is above 0.50 %, up to 10"),
            "{text}"
        );
    let section = text
        .split("## Precision")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a Precision section");
    insta::assert_snapshot!("report_md_precision", section);
}

#[test]
fn table_cells_are_escaped() {
    assert_eq!(cell_text("a|b\nc"), "a\\|b\\\\x0ac");
    assert_eq!(cell_text("<b>[x](y)"), "\\<b\\>\\[x\\](y)");
}
