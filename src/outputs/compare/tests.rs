use std::collections::BTreeMap;
use std::path::Path;

use super::*;
use crate::images::BuiltImage;
use crate::outputs::report::fixture;

fn side(path: &str, summary: Summary, manifest: Option<Manifest>) -> Side {
    let study = fixture::study();
    let verdicts = crate::outputs::verdict::judge(&study, &summary);
    let environment = fixture::input(&study, &[], &summary, &verdicts).environment;
    Side {
        path: path.into(),
        outcome: Outcome {
            run_id: format!("run-{path}"),
            samples: fixture::samples(),
            study,
            summary,
            verdicts,
            environment,
            deviations: vec![],
            warnings: vec![],
            partial: None,
            judged: None,
            per_class: None,
            shard: None,
        },
        written: fixture::study(),
        manifest,
    }
}

fn manifest(binary: &str) -> Manifest {
    let images = fixture::study()
        .probes
        .iter()
        .map(|p| BuiltImage {
            name: p.image.clone(),
            tag: format!("parkbench/{}:0", p.image),
            id: "sha256:0".into(),
            layers: vec![],
            inputs: BTreeMap::new(),
            binaries: BTreeMap::from([("/probe".to_string(), binary.to_string())]),
            versions: BTreeMap::new(),
            notes: Vec::new(),
            built: false,
        })
        .collect();
    Manifest {
        images,
        unavailable: vec![],
        failed: vec![],
        drift: Vec::new(),
    }
}

fn headline(values: &[f64], value: f64) -> Headline {
    Headline {
        name: "rss_median_bytes".into(),
        value,
        values: values.to_vec(),
        stat: Some(crate::study::Stat::RssMedian),
    }
}

fn row(a: Headline, b: Headline) -> CellRow {
    CellRow {
        probe: "go".into(),
        tasks: 1,
        a,
        b,
    }
}

#[test]
fn a_run_compared_with_itself_is_within_dispersion_everywhere() {
    let summary = fixture::summary();
    let rows = cells(&summary, &summary);
    let measured = summary.cells.iter().filter(|c| c.valid > 0).count();
    assert_eq!(rows.len(), measured);
    for r in &rows {
        assert_eq!(r.ratio(), Some(1.0), "{} {}", r.probe, r.tasks);
        assert!(!r.beyond_dispersion() && !r.differs_by_more_than(0.0));
        assert_eq!(
            r.a.values.len(),
            summary.cell(&r.probe, r.tasks).unwrap().valid
        );
    }
}

#[test]
fn the_dispersion_rule_uses_the_wider_of_the_two_ranges() {
    let a = || headline(&[100.0, 110.0, 120.0], 110.0);
    assert_eq!(a().half_range(), 10.0);
    assert!(!row(a(), headline(&[130.0], 130.0)).beyond_dispersion());
    assert!(row(a(), headline(&[131.0], 131.0)).beyond_dispersion());
    assert!(row(a(), headline(&[89.0], 89.0)).beyond_dispersion());
    let wide_b = headline(&[100.0, 131.0, 160.0], 131.0);
    assert!(!row(a(), wide_b).beyond_dispersion());
    assert!(row(headline(&[5.0], 5.0), headline(&[6.0], 6.0)).beyond_dispersion());
}

#[test]
fn fail_above_compares_the_ratio_with_the_threshold() {
    let r = row(headline(&[100.0], 100.0), headline(&[110.0], 110.0));
    assert!(r.differs_by_more_than(5.0));
    assert!(!r.differs_by_more_than(10.5));
    let zero = row(headline(&[0.0], 0.0), headline(&[1.0], 1.0));
    assert_eq!(zero.ratio(), None);
    assert!(zero.differs_by_more_than(1000.0));
}

#[test]
fn a_shifted_cell_is_beyond_dispersion_and_only_that_one() {
    let a = fixture::summary();
    let mut b = a.clone();
    let target = b.cells.iter_mut().find(|c| c.valid > 1).unwrap();
    let spread = target.rss_max_bytes.unwrap() - target.rss_min_bytes.unwrap();
    let shift = 3.0 * spread + 1.0;
    for p in &mut target.processes {
        p.rss_median_bytes = p.rss_median_bytes.map(|v| v + shift);
    }
    for v in [
        &mut target.rss_median_bytes,
        &mut target.rss_min_bytes,
        &mut target.rss_max_bytes,
    ] {
        *v = v.map(|v| v + shift);
    }
    let (probe, tasks) = (target.probe.clone(), target.tasks);
    let beyond: Vec<(String, u64)> = cells(&a, &b)
        .into_iter()
        .filter(|r| r.beyond_dispersion())
        .map(|r| (r.probe, r.tasks))
        .collect();
    assert_eq!(beyond, [(probe, tasks)]);
}

#[test]
fn one_line_counts_cells_beyond_dispersion_and_names_the_largest() {
    let a = side("a", fixture::summary(), Some(manifest("x")));
    let same = one_line(&a, &side("b", fixture::summary(), Some(manifest("x"))));
    assert!(same.starts_with("0 of "), "{same}");
    assert!(same.contains("same binaries: yes"), "{same}");
    let mut moved = fixture::summary();
    let target = moved.cells.iter_mut().find(|c| c.valid > 1).unwrap();
    let shift = 10.0 * (target.rss_max_bytes.unwrap() - target.rss_min_bytes.unwrap()) + 1.0;
    for p in &mut target.processes {
        p.rss_median_bytes = p.rss_median_bytes.map(|v| v + shift);
    }
    for v in [
        &mut target.rss_median_bytes,
        &mut target.rss_min_bytes,
        &mut target.rss_max_bytes,
    ] {
        *v = v.map(|v| v + shift);
    }
    let (probe, tasks) = (target.probe.clone(), target.tasks);
    let line = one_line(&a, &side("b", moved, Some(manifest("y"))));
    assert!(line.starts_with("1 of "), "{line}");
    assert!(
        line.contains(&format!("(most: {probe} at {tasks} tasks, B ÷ A ")),
        "{line}"
    );
    assert!(line.contains("same binaries: no"), "{line}");
    assert!(!line.contains('\n'), "{line}");
}

#[test]
fn a_cell_of_one_process_is_shown_without_a_range() {
    let mib = 1024.0 * 1024.0;
    assert_eq!(
        super::markdown::shown(&headline(&[2.0 * mib], 2.0 * mib)),
        "2.00"
    );
    let two = headline(&[1.0 * mib, 3.0 * mib], 2.0 * mib);
    assert_eq!(super::markdown::shown(&two), "2.00 ± 1.00");
}

#[test]
fn claims_pair_by_id() {
    let v = fixture::verdicts();
    let pairs = claims(&v, &v[1..]);
    assert_eq!(pairs.len(), v.len() - 1);
    assert!(pairs.iter().all(|(a, b)| a.claim == b.claim));
}

#[test]
fn same_binaries_names_the_first_difference() {
    let s = fixture::summary;
    let yes = same_binaries(
        &side("a", s(), Some(manifest("h1"))),
        &side("b", s(), Some(manifest("h1"))),
    );
    assert_eq!(yes, "yes");
    let first = fixture::study().probes[0].image.clone();
    let no = same_binaries(
        &side("a", s(), Some(manifest("h1"))),
        &side("b", s(), Some(manifest("h2"))),
    );
    assert_eq!(no, format!("no: {first} /probe differs"));
    let unknown = same_binaries(&side("a", s(), Some(manifest("h1"))), &side("b", s(), None));
    assert_eq!(unknown, "unknown: B has no manifest.json");
}

#[test]
fn the_markdown_states_the_rule_and_every_section() {
    let (a, b) = (
        side("a", fixture::summary(), None),
        side("b", fixture::summary(), None),
    );
    let md = markdown(&a, &b);
    for wanted in [
        RULE,
        "## Cells",
        "## Claims",
        "## Environment",
        "Same binaries: unknown",
    ] {
        assert!(md.contains(wanted), "{wanted:?} missing:\n{md}");
    }
    let rows = cells(&a.outcome.summary, &b.outcome.summary).len();
    assert_eq!(md.matches("| within dispersion |").count(), rows);
}

#[test]
fn both_runs_warnings_sit_in_the_environment_table() {
    let (a, mut b) = (
        side("a", fixture::summary(), None),
        side("b", fixture::summary(), None),
    );
    b.outcome.warnings.push(crate::run::warning::Warning {
        what: "swap in use: 5 MiB of 10 MiB".into(),
        touches: crate::run::warning::Touches::All,
    });
    let md = markdown(&a, &b);
    assert!(
        md.contains("| Validity warnings | none | swap in use: 5 MiB of 10 MiB | differs |"),
        "{md}"
    );
}

#[test]
fn the_figure_is_deterministic_with_a_panel_per_scale_and_published_marks() {
    let (a, b) = (
        side("a", fixture::summary(), None),
        side("b", fixture::summary(), None),
    );
    let svg = figure(&a, &b);
    assert_eq!(svg, figure(&a, &b));
    let scales: BTreeSet<u64> = cells(&a.outcome.summary, &b.outcome.summary)
        .iter()
        .map(|r| r.tasks)
        .collect();
    assert_eq!(svg.matches("class=\"panel\"").count(), scales.len());
    let dots: usize = a
        .outcome
        .summary
        .cells
        .iter()
        .map(|c| c.processes.len())
        .sum();
    assert_eq!(svg.matches("<circle").count(), 2 * dots);
    let single_memory_claims = a.outcome.study.claims.iter().any(|c| {
        matches!(c.expected, crate::study::Expected::Value(_))
            && c.unit.dimension() == crate::study::Dimension::Memory
    });
    assert_eq!(svg.contains("class=\"published\""), single_memory_claims);
}

#[test]
fn bad_input_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing-here");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let foreign = tmp.path().join("foreign.tar.gz");
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        std::fs::File::create(&foreign).unwrap(),
        flate2::Compression::default(),
    ));
    let mut header = tar::Header::new_gnu();
    header.set_size(2);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "pkg/README", &b"hi"[..])
        .unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let truncated = tmp.path().join("truncated.tar.gz");
    let bytes = std::fs::read(&foreign).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    for (path, why) in [
        (&missing, "no such file or folder"),
        (&empty, "study.yaml is missing"),
        (&foreign, "not a parkbench run archive"),
        (&truncated, "truncated"),
    ] {
        let err = format!("{:#}", load(Path::new(path)).err().unwrap());
        assert!(
            err.contains(&path.display().to_string()) && err.contains(why),
            "{err}"
        );
    }
}

#[test]
fn images_unavailable_in_both_runs_are_skipped_and_in_one_run_differ() {
    let s = fixture::summary;
    let first = fixture::study().probes[0].image.clone();
    let without_first = |binary: &str| {
        let mut m = manifest(binary);
        m.images.retain(|i| i.name != first);
        m.unavailable.push(crate::images::UnavailableImage {
            name: first.clone(),
            reason: "pin cannot be produced".into(),
            notes: Vec::new(),
        });
        m
    };
    let both = same_binaries(
        &side("a", s(), Some(without_first("h1"))),
        &side("b", s(), Some(without_first("h1"))),
    );
    assert_eq!(both, format!("yes ({first} unavailable in both)"));
    let only_b = same_binaries(
        &side("a", s(), Some(manifest("h1"))),
        &side("b", s(), Some(without_first("h1"))),
    );
    assert_eq!(only_b, format!("no: {first} is unavailable in B"));
    let only_a = same_binaries(
        &side("a", s(), Some(without_first("h1"))),
        &side("b", s(), Some(manifest("h1"))),
    );
    assert_eq!(only_a, format!("no: {first} is unavailable in A"));
    let md = markdown(
        &side("a", s(), Some(without_first("h1"))),
        &side("b", s(), Some(without_first("h1"))),
    );
    assert!(md.contains(&format!("Same binaries: yes ({first} unavailable in both)")));
}

#[test]
fn a_cell_lost_in_b_is_reported_and_fails_any_threshold() {
    let a = fixture::summary();
    let mut b = a.clone();
    let at = b
        .cells
        .iter()
        .position(|c| Headline::of(c).is_some())
        .unwrap();
    let gone = b.cells.remove(at);
    let lone = lone_cells(&a, &b);
    assert_eq!(lone.len(), 1);
    assert_eq!(
        (lone[0].probe.as_str(), lone[0].tasks, lone[0].presence),
        (gone.probe.as_str(), gone.tasks, Presence::LostInB)
    );
    assert_eq!(cells(&a, &b).len() + 1, cells(&a, &a).len());
    let over = over_threshold(&a, &b, f64::MAX);
    assert_eq!(over.len(), 1, "{over:?}");
    assert!(over[0].contains(&gone.probe) && over[0].contains("lost in B"));
    assert!(over_threshold(&a, &a, 0.0).is_empty());

    let reversed = lone_cells(&b, &a);
    assert_eq!(reversed.len(), 1);
    assert_eq!(reversed[0].presence, Presence::NewInB);
    assert!(
        over_threshold(&b, &a, f64::MAX).is_empty(),
        "a new cell fails nothing"
    );

    let (sa, sb) = (side("a", a.clone(), None), side("b", b.clone(), None));
    let md = markdown(&sa, &sb);
    assert_eq!(md.matches("| lost in B |").count(), 1, "{md}");
    let md = markdown(&sb, &sa);
    assert_eq!(md.matches("| new in B |").count(), 1, "{md}");
}

#[test]
fn a_cell_without_a_headline_value_in_b_is_lost() {
    let a = fixture::summary();
    let mut b = a.clone();
    let target = b.cells.iter_mut().find(|c| c.valid > 0).unwrap();
    let (probe, tasks) = (target.probe.clone(), target.tasks);
    target.rss_median_bytes = None;
    target.stats.clear();
    let lone = lone_cells(&a, &b);
    assert!(
        lone.iter()
            .any(|c| c.probe == probe && c.tasks == tasks && c.presence == Presence::LostInB),
        "{probe} at {tasks} is lost"
    );
    assert!(!over_threshold(&a, &b, f64::MAX).is_empty());
}

#[test]
fn the_page_holds_the_tables_and_the_figure_and_loads_nothing() {
    let (a, b) = (
        side("a", fixture::summary(), None),
        side("b", fixture::summary(), None),
    );
    let page = html(&a, &b);
    assert!(page.contains("<h2>Cells</h2>") && page.contains("<h2>Claims</h2>"));
    assert!(page.contains(&figure(&a, &b)), "the figure inline");
    assert_eq!(page.matches("<script").count(), 1);
    assert!(!page.contains(" src="));
}

#[test]
fn write_all_writes_the_markdown_the_figure_and_the_page() {
    let summary = fixture::summary();
    let (a, b) = (side("a", summary.clone(), None), side("b", summary, None));
    let tmp = tempfile::tempdir().unwrap();
    let (md, path) = write_all(tmp.path(), &a, &b).unwrap();
    assert_eq!(path, tmp.path().join("compare.md"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), md);
    assert_eq!(md, markdown(&a, &b));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("compare.svg")).unwrap(),
        figure(&a, &b)
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("compare.html")).unwrap(),
        html(&a, &b)
    );
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["compare.html", "compare.md", "compare.svg"]);
}

/// A side made of the runs `inputs` merged, as `merge` writes them.
fn merged_side(path: &str, inputs: &[crate::outputs::merge::Input]) -> Side {
    let m = crate::outputs::merge::merge(inputs, path).unwrap();
    let samples: String = (m.samples.iter())
        .map(|s| serde_json::to_string(s).unwrap() + "\n")
        .collect();
    let files = crate::run::run_dir::RunFiles {
        run_id: path.into(),
        study_yaml: m.study_yaml.clone(),
        samples_jsonl: samples,
        env_json: None,
        manifest_json: Some(m.manifest_json.clone()),
        summary_json: None,
        verdicts_json: None,
        report_md: None,
        run_json: Some(serde_json::to_string(&m.state).unwrap()),
        merge_json: Some(serde_json::to_string(&m.record).unwrap()),
        classes_json: None,
        classes_md: None,
        explanation_json: None,
    };
    from_files(path.into(), &files).unwrap()
}

#[test]
fn runs_of_several_classes_are_compared_class_by_class() {
    use crate::outputs::merge::tests::{altered, run};
    let (x, y, z) = ("CPU X", "CPU Y", "CPU Z");
    let a = merged_side("a", &[run("a1", None, Some(x)), run("a2", None, Some(y))]);
    let b = merged_side(
        "b",
        &[
            altered(run("b1", None, Some(x)), 3.0, None),
            run("b2", None, Some(z)),
        ],
    );
    let md = markdown(&a, &b);
    let at = md
        .find("## Per hardware class")
        .expect("a section per class");
    let section = &md[at..md.find("## Environment").unwrap()];
    assert!(
        section.contains("### CPU X — A's class A, B's class A"),
        "{section}"
    );
    assert!(
        section.contains("beyond dispersion"),
        "memory tripled in B's class A: {section}"
    );
    assert!(
        !section.contains("### CPU Y") && !section.contains("### CPU Z"),
        "{section}"
    );
    for not in ["- A's class B (CPU Y)", "- B's class B (CPU Z)"] {
        assert!(section.contains(not), "{not}: {section}");
    }
    let line = one_line(&a, &b);
    assert!(
        line.contains("; per class: 1 compared (A ")
            && line.ends_with(", 2 in one run only (not compared)"),
        "{line}"
    );
    let p = classes::pair(&a, &b).unwrap();
    let over = classes::over_threshold(&p, 10.0);
    assert!(
        !over.is_empty() && over.iter().all(|c| c.ends_with(" (on CPU X)")),
        "{over:?}"
    );
    assert!(classes::over_threshold(&p, 1000.0).is_empty());
    // Runs of one class each: no section, no words per class.
    let one = merged_side("c", &[run("c1", None, Some(x))]);
    assert!(!markdown(&one, &one).contains("## Per hardware class"));
    assert!(!one_line(&one, &one).contains("per class"));
}

#[test]
fn a_run_of_one_machine_compares_with_the_same_class_of_a_run_of_several() {
    use crate::outputs::merge::tests::run;
    // Merged, a sample without a class takes its run's; a lone run's samples take it in compare.
    let a = merged_side(
        "a",
        &[run("a1", None, None), run("a2", None, Some("CPU Y"))],
    );
    let lone = run("b", None, None);
    let b = from_files("b".into(), &lone.files).unwrap();
    let md = markdown(&a, &b);
    assert!(
        md.contains("### unknown hardware (no env.json) — A's class A, B's class A"),
        "{md}"
    );
    assert!(md.contains("- A's class B (CPU Y)"), "{md}");
    assert!(!md.contains("B's class B"), "{md}");
}

#[test]
fn drifted_root_filesystems_are_named_first() {
    let summary = fixture::summary();
    let a = side("a", summary.clone(), Some(manifest("x")));
    let mut drifted = manifest("x");
    drifted.drift = vec![crate::images::pin::Drift {
        pin: "debian-base".into(),
        packages: 137,
        moved: vec![crate::images::pin::Moved {
            sha256: None,
            package: "libc6".into(),
            locked: "2.36-9+deb12u14".into(),
            served: Some("2.36-9+deb12u15".into()),
        }],
        sha256: "ab".repeat(32),
    }];
    let b = side("b", summary, Some(drifted));
    assert_eq!(rootfs_drift(&a, &a), None);
    let line = one_line(&a, &b);
    assert!(
        line.starts_with(
            "the root filesystems differ by package: A as pinned; B rootfs debian-base: 1 of 137"
        ) && line.contains("libc6 2.36-9+deb12u14 → 2.36-9+deb12u15"),
        "{line}"
    );
    assert!(markdown(&a, &b).contains("- Root filesystems: the root filesystems differ"));
}
