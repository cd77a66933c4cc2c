use super::*;
use crate::study::{Study, Than};

fn study() -> Study {
    Study::default_study()
}

/// No image records any version: every published toolchain is left out of a sweep.
fn nothing(_: &[String]) -> std::collections::BTreeSet<String> {
    Default::default()
}

fn claim<'a>(s: &'a Study, id: &str) -> &'a Claim {
    s.claims.iter().find(|c| c.id == id).unwrap()
}

#[test]
fn a_sweep_has_the_claims_probes_at_its_scale_and_one_variant_per_level() {
    let s = study();
    let c = claim(&s, "rust-per-task-1m");
    let factors = factors_for(&s, c, &["workers".into(), "thp".into()]).unwrap();
    let sweep = sweep(&s, c, &factors, &[], &nothing).unwrap();
    assert_eq!(sweep.study.protocol.scales, [1_000_000]);
    assert_eq!(sweep.variants.len(), 4);
    let ids: Vec<&str> = sweep.study.probes.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids[0], "rust-tokio");
    assert!(ids.contains(&"rust-tokio~thp=never"), "{ids:?}");
    let never = sweep.study.probe("rust-tokio~thp=never").unwrap();
    assert_eq!(
        (never.kernel.as_deref(), never.thp.as_deref()),
        (Some("debian-6.1"), Some("never"))
    );
    let one = sweep.study.probe("rust-tokio~workers=1").unwrap();
    assert_eq!((one.cpus, one.image.as_str()), (Some(1), "rust-tokio"));
    let vc = sweep
        .study
        .claims
        .iter()
        .find(|c| c.id == "rust-per-task-1m~workers=1")
        .unwrap();
    assert_eq!(vc.probe, "rust-tokio~workers=1");
    // The sweep study survives its own YAML, as it is written to disk and read by `run`.
    let again = Study::parse(&serde_yaml::to_string(&sweep.study).unwrap()).unwrap();
    assert_eq!(again.probes.len(), sweep.study.probes.len());
}

#[test]
fn a_comparison_varies_the_side_its_factor_is_about() {
    let s = study();
    let c = claim(&s, "rust-lower-1m");
    let factors = factors_for(&s, c, &["gogc".into()]).unwrap();
    let sweep = sweep(&s, c, &factors, &[], &nothing).unwrap();
    let vc = sweep
        .study
        .claims
        .iter()
        .find(|c| c.id == "rust-lower-1m~gogc=off")
        .unwrap();
    assert_eq!(vc.probe, "rust-tokio");
    assert!(matches!(&vc.than, Some(Than::One(id)) if id == "go~gogc=off"));
}

#[test]
fn unknown_or_unrelated_factors_are_named() {
    let s = study();
    let c = claim(&s, "rust-per-task-1m");
    let err = format!("{:#}", factors_for(&s, c, &["gogc".into()]).unwrap_err());
    assert!(
        err.contains("\"gogc\" is not declared") && err.contains("toolchain"),
        "{err}"
    );
    let mut bare = s.clone();
    bare.factors.clear();
    let err = format!("{:#}", factors_for(&bare, c, &[]).unwrap_err());
    assert!(err.contains("declares no factors"), "{err}");
}

fn row(factor: &str, level: &str, value: f64, status: Status) -> Row {
    Row {
        factor: factor.into(),
        level: level.into(),
        value: Some(value),
        spread: Some(0.001),
        change: Some(value - 448.0),
        closes: Some((value - 448.0) / (384.0 - 448.0)),
        status,
        note: None,
        against: None,
    }
}

fn explanation(rows: Vec<Row>) -> Explanation {
    let mut e = Explanation {
        claim: "rust-per-task-1m".into(),
        study: "wait-1m".into(),
        text: "t".into(),
        unit: crate::study::Unit::B,
        explained_run: "a".into(),
        sweep_run: "b".into(),
        published: 384.0,
        baseline: Some(448.0),
        baseline_spread: Some(0.001),
        rows,
        finding: String::new(),
        skipped: Vec::new(),
        warnings: Vec::new(),
    };
    e.finding = finding(&e);
    e
}

#[test]
fn the_finding_names_the_factor_that_closes_the_gap_or_none() {
    let one = explanation(vec![
        row("allocator", "mimalloc", 386.0, Status::Reproduced),
        row("tokio", "1.54.1", 449.0, Status::Differs),
    ]);
    assert!(
        one.finding
            .starts_with("allocator = mimalloc alone accounts"),
        "{}",
        one.finding
    );
    let none = explanation(vec![row("tokio", "1.54.1", 449.0, Status::Differs)]);
    assert!(
        none.finding
            .starts_with("None of the swept factors explains")
            && none.finding.contains("no variant moves the value toward"),
        "{}",
        none.finding
    );
    let some = explanation(vec![row("workers", "1", 420.0, Status::Differs)]);
    assert!(
        // As precise as the table's share of the gap (43.8 %).
        some.finding.contains("closes 43.8 % of the gap"),
        "{}",
        some.finding
    );
    let mut pair = explanation(vec![]);
    pair.merge(explanation(vec![row(
        "a+b",
        "x+y",
        390.0,
        Status::Reproduced,
    )]));
    assert!(
        pair.finding.contains("a+b = x+y together do"),
        "{}",
        pair.finding
    );
    let md = markdown(&some);
    assert!(
        md.contains("| workers | 1 | 420 B |") && md.contains("43.8 %"),
        "{md}"
    );
    assert!(svg(&some).contains("workers = 1"));
    let page = super::html(&some);
    assert!(page.contains(&svg(&some)), "the figure inline");
    assert!(page.contains("<td>workers</td>"), "the table as HTML");
    assert_eq!(page.matches("<script").count(), 1);
    assert!(!md.contains("Not swept"), "{md}");
    let mut skipped = some.clone();
    skipped.skipped =
        vec!["skipped: kernel (needs kernel-wsl-like; --factors kernel includes it)".into()];
    let md = markdown(&skipped);
    assert!(
        md.contains("Not swept, their images would take long to build here:\n\n- skipped: kernel (needs kernel-wsl-like; --factors kernel includes it)\n"),
        "{md}"
    );
    let json = serde_json::to_string(&skipped).unwrap();
    assert!(json.contains("\"skipped\":[\"skipped: kernel"), "{json}");
    assert!(!serde_json::to_string(&some).unwrap().contains("skipped"));
    assert!(!md.contains("Validity warnings"), "{md}");
    assert!(!serde_json::to_string(&some).unwrap().contains("warnings"));
}

#[test]
fn a_sweeps_validity_warnings_are_said_once_under_the_finding() {
    let shared = crate::run::cpu_lock::shared_warning("0").what;
    let busy = "pinned CPUs busy before measuring: 40 %".to_string();
    let mut e = explanation(vec![row("workers", "1", 420.0, Status::Differs)]);
    e.warnings = vec![shared.clone()];
    let mut pair = explanation(vec![row("workers+gogc", "1+off", 400.0, Status::Differs)]);
    pair.warnings = vec![shared.clone(), busy.clone()];
    e.merge(pair);
    assert_eq!(e.warnings, [shared, busy]);
    let md = markdown(&e);
    let finding = md.find(&format!("**{}**", crate::text::markdown(&e.finding)));
    let said =
        md.find("Validity warnings of the sweeps (what may have touched their numbers):\n\n- ");
    let table = md.find("| Factor |");
    assert!(finding.is_some() && said > finding && table > said, "{md}");
    assert_eq!(md.matches("--allow-shared-cpus").count(), 1, "{md}");
    assert!(super::html(&e).contains("pinned CPUs busy before measuring"));
    let json = serde_json::to_string(&e).unwrap();
    assert!(json.contains("\"warnings\":["), "{json}");
}

#[test]
fn the_pair_tried_is_the_two_closest_levels_of_different_factors() {
    let s = study();
    let c = claim(&s, "rust-per-task-1m");
    let factors = factors_for(&s, c, &[]).unwrap();
    let e = explanation(vec![
        row("workers", "1", 420.0, Status::Differs),
        row("allocator", "mimalloc", 430.0, Status::Differs),
        row("toolchain", "nightly-1.97.0", 440.0, Status::Differs),
        row("tokio", "1.54.1", 460.0, Status::Differs),
    ]);
    let (fa, la, fb, lb) = pair_to_try(&e, &factors).unwrap();
    assert_eq!((fa.id.as_str(), la.id.as_str()), ("workers", "1"));
    assert_eq!((fb.id.as_str(), lb.id.as_str()), ("allocator", "mimalloc"));
    // Two image levels cannot be combined: the next pair is taken.
    let e = explanation(vec![
        row("allocator", "mimalloc", 420.0, Status::Differs),
        row("toolchain", "nightly-1.97.0", 430.0, Status::Differs),
        row("workers", "1", 440.0, Status::Differs),
    ]);
    let (fa, _, fb, _) = pair_to_try(&e, &factors).unwrap();
    assert_eq!((fa.id.as_str(), fb.id.as_str()), ("allocator", "workers"));
    let sweep = sweep(
        &s,
        c,
        &[],
        &[(fa, &fa.levels[0], fb, &fb.levels[0])],
        &nothing,
    )
    .unwrap();
    let p = sweep
        .study
        .probe("rust-tokio~allocator+workers=mimalloc+1")
        .unwrap();
    assert_eq!((p.image.as_str(), p.cpus), ("rust-tokio.mimalloc", Some(1)));
}

#[test]
fn a_study_laid_out_per_kernel_is_swept_by_the_declared_factor_names_and_not_laid_out_again() {
    let s = study()
        .under_kernels(&["host".into(), "debian-6.1".into()])
        .unwrap();
    let c = claim(&s, "rust-per-task-1m@debian-6.1");
    let factors = factors_for(&s, c, &["workers".into()]).unwrap();
    assert_eq!(factors[0].id, "workers@debian-6.1");
    let sweep = sweep(&s, c, &factors, &[], &nothing).unwrap();
    let laid = sweep.study.clone().under_kernels(&[]).unwrap();
    let ids: Vec<&str> = laid.probes.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(
        ids,
        ["rust-tokio@debian-6.1", "rust-tokio@debian-6.1~workers=1"]
    );
    assert!(
        laid.probes
            .iter()
            .all(|p| p.kernel.as_deref() == Some("debian-6.1"))
    );
}

#[test]
fn a_claim_against_the_lowest_of_all_probes_is_refused_and_than_tasks_joins_the_scales() {
    let s = study();
    let mut c = claim(&s, "rust-lower-1m").clone();
    c.than = Some(Than::One("lowest".into()));
    let factors = factors_for(&s, &c, &["workers".into()]).unwrap();
    let err = format!(
        "{:#}",
        sweep(&s, &c, &factors, &[], &nothing).err().unwrap()
    );
    assert!(err.contains("lowest or highest"), "{err}");
    let mut c = claim(&s, "rust-per-task-1m").clone();
    c.than_tasks = Some(10_000);
    c.stat = crate::study::Stat::Ratio;
    c.of = Some(crate::study::Stat::RssMedian);
    c.unit = crate::study::Unit::Times;
    let swept = sweep(&s, &c, &factors, &[], &nothing).unwrap();
    assert_eq!(swept.study.protocol.scales, [1_000_000, 10_000]);
}

#[test]
fn a_sweep_keeps_only_the_published_toolchains_its_own_images_record() {
    // The default study publishes go, rustc and tokio; a sweep of a Rust claim runs Rust images
    // only, which record `rustc` and `tokio` but no Go version.
    let s = study();
    assert!(s.source.toolchains.contains_key("go"));
    let c = claim(&s, "rust-per-task-1m");
    let factors = factors_for(&s, c, &["workers".into()]).unwrap();
    let asked = std::cell::RefCell::new(Vec::new());
    let rust = |images: &[String]| {
        asked.borrow_mut().extend(images.iter().cloned());
        ["rustc -V".to_string(), "tokio".to_string()].into()
    };
    let sweep = sweep(&s, c, &factors, &[], &rust).unwrap();
    let kept: Vec<&str> = sweep
        .study
        .source
        .toolchains
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(kept, ["rustc", "tokio"]);
    assert_eq!(sweep.dropped_toolchains, ["go"]);
    // Asked of the baseline's images, then of the sweep's (the workers level keeps the image).
    assert_eq!(*asked.borrow(), ["rust-tokio", "rust-tokio"]);
}

#[test]
fn what_an_explanation_json_explains_is_read_back() {
    let e = explanation(Vec::new());
    let read: Explains = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
    assert_eq!(
        read,
        Explains {
            claim: e.claim.clone(),
            study: e.study.clone(),
            explained_run: e.explained_run.clone(),
        }
    );
}
