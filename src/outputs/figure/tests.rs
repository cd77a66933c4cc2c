//! Snapshots of every design on fixed samples, and the property that no two labels overlap — with
//! the default study, a study of every kind, and 12 probes with long names.

use std::collections::BTreeMap;

use super::draw::{PALETTE, Rect};
use super::{Design, Figure, Input, all};
use crate::outputs::summary::summarize;
use crate::outputs::verdict::judge;
use crate::study::Study;
use crate::study::kind::Kind;
use crate::study::sample::{Peak, Sample, fixture};

const HEAD: &str = "id: kinds\ntitle: Every kind\nsource: {article: a, environment: e, cpus: '0'}\n\
    protocol: {scales: [10, 100], repeats: 3, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5, target_cv: 0.05}\n";

const KINDS: &str = "probes:
  - {id: pk-go, image: x, kind: peak}
  - {id: pk-rust, image: x, kind: peak}
  - {id: switch-asm, image: x, kind: timed, scales: [1], results: [ns_per_switch]}
  - {id: switch-threads, image: x, kind: timed, scales: [1], results: [ns_per_switch]}
  - {id: server-a, image: x, kind: latency, scales: [1]}
  - {id: server-b, image: x, kind: latency, scales: [1]}
  - {id: limits, image: x, kind: reported, scales: [1], results: [threads]}
claims:
  - {id: asm, text: 7.75 ns per switch, stat: result_median, probe: switch-asm, metric: ns_per_switch, expected: 7.75, unit: ns, tolerance: {relative: 0.1}}
  - {id: threads, text: 1960 ns per switch, stat: result_median, probe: switch-threads, metric: ns_per_switch, expected: 1960, unit: ns, tolerance: {relative: 0.1}}
  - {id: p99, text: P99 under 2 ms, stat: percentile, probe: server-a, percentile: 99, expected: {below: 2}, unit: ms}
  - {id: limit, text: about 18000 threads, stat: result_median, probe: limits, metric: threads, expected: {below: 19800}, unit: count}
  - {id: faster, text: threads 250x slower, stat: ratio, of: result_median, metric: ns_per_switch, probe: switch-threads, than: switch-asm, expected: 250, unit: x, tolerance: {relative: 0.1}}
  - {id: go-peak, text: Go 30 MiB at 100, stat: peak_median, probe: pk-go, tasks: 100, expected: 30, unit: MiB, tolerance: {relative: 0.1}}
  - {id: go-per-task, text: Go 200 kB per task, stat: per_task_bytes, probe: pk-go, tasks: 100, expected: 200, unit: kB, tolerance: {relative: 0.2}}
  - {id: lower, text: rust lower than go, stat: order, of: peak_median, tasks: 100, expected: [pk-rust, pk-go], unit: rank}
";

fn sample(probe: &str, kind: Kind, tasks: u64, repeat: u32) -> Sample {
    let mut s = fixture::samples()[0].clone();
    (s.probe, s.tasks, s.expected, s.repeat, s.kind) = (probe.into(), tasks, tasks, repeat, kind);
    s.position = repeat;
    s.peak = Some(Peak {
        ru_maxrss_bytes: Some(1 << 20),
        exit_code: Some(0),
        ..Peak::default()
    });
    s
}

fn peak(probe: &str, tasks: u64, repeat: u32, mib: f64) -> Sample {
    let mut s = sample(probe, Kind::Peak, tasks, repeat);
    s.peak.as_mut().unwrap().ru_maxrss_bytes = Some((mib * 1048576.0) as u64);
    s
}

fn results(probe: &str, kind: Kind, repeat: u32, key: &str, batches: &[f64]) -> Sample {
    let mut s = sample(probe, kind, 1, repeat);
    s.results = batches
        .iter()
        .map(|v| BTreeMap::from([(key.to_string(), *v)]))
        .collect();
    s
}

fn latency(probe: &str, repeat: u32, base: u64) -> Sample {
    let mut s = sample(probe, Kind::Latency, 1, repeat);
    s.latency_ns = vec![
        [base, 500],
        [base * 2, 400],
        [base * 5, 90],
        [base * 40, 9],
        [base * 200, 1],
    ];
    s
}

/// A made-up run of a study with a probe pair of every kind and a claim of every kind.
pub fn kinds() -> (Study, Vec<Sample>) {
    let study = Study::parse(&format!("{HEAD}{KINDS}")).unwrap();
    let mut samples = Vec::new();
    for r in 1..=3 {
        let f = f64::from(r);
        for (tasks, go, rust) in [(10, 12.0, 3.0), (100, 31.0 + f, 4.0 + f / 10.0)] {
            samples.push(peak("pk-go", tasks, r, go + f / 3.0));
            samples.push(peak("pk-rust", tasks, r, rust));
        }
        samples.push(results(
            "switch-asm",
            Kind::Timed,
            r,
            "ns_per_switch",
            &[7.1 + f / 10.0, 7.4, 7.9, 7.3, 7.6],
        ));
        samples.push(results(
            "switch-threads",
            Kind::Timed,
            r,
            "ns_per_switch",
            &[1800.0 + 40.0 * f, 2010.0, 1950.0, 1890.0],
        ));
        samples.push(latency("server-a", r, 20_000 + 1000 * u64::from(r)));
        samples.push(latency("server-b", r, 90_000));
        samples.push(results(
            "limits",
            Kind::Reported,
            r,
            "threads",
            &[18_000.0 + f],
        ));
    }
    (study, samples)
}

/// 12 peak probes with long names at three scales, one claim on each at the largest.
pub fn twelve() -> (Study, Vec<Sample>) {
    let names: Vec<String> = (0..12)
        .map(|i| format!("runtime-number-{i}-with-a-long-name"))
        .collect();
    let mut yaml = HEAD.replace("scales: [10, 100]", "scales: [1000, 100000, 1000000]");
    yaml.push_str("probes:\n");
    for n in &names {
        yaml.push_str(&format!("  - {{id: {n}, image: x, kind: peak}}\n"));
    }
    yaml.push_str("claims:\n");
    for (i, n) in names.iter().enumerate() {
        yaml.push_str(&format!(
            "  - {{id: c{i}, text: t, stat: peak_median, probe: {n}, tasks: 1000000, expected: {}, unit: MiB, tolerance: {{relative: 0.1}}}}\n",
            100 * (i + 1)
        ));
    }
    let study = Study::parse(&yaml).unwrap();
    let mut samples = Vec::new();
    for (i, n) in names.iter().enumerate() {
        for (k, tasks) in [1000, 100_000, 1_000_000].into_iter().enumerate() {
            for r in 1..=3 {
                let mib = (i as f64 + 1.0) * 10f64.powi(k as i32) * (1.0 + f64::from(r) / 50.0);
                samples.push(peak(n, tasks, r, mib));
            }
        }
    }
    (study, samples)
}

fn figures(study: &Study, samples: &[Sample]) -> Vec<Figure> {
    let summary = summarize(study, samples);
    if study.id != "wait-1m" {
        assert_eq!(summary.invalid, 0, "{:?}", summary.invalid_samples);
    }
    let verdicts = judge(study, &summary);
    all(&Input {
        study,
        summary: &summary,
        verdicts: &verdicts,
        classes: &[],
    })
}

/// The pairs of label boxes that overlap, with their indices.
fn overlaps(labels: &[Rect]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for i in 0..labels.len() {
        for j in i + 1..labels.len() {
            if labels[i].overlaps(&labels[j]) {
                out.push((i, j));
            }
        }
    }
    out
}

fn assert_readable(f: &Figure) {
    let bad = overlaps(&f.labels);
    assert!(
        bad.is_empty(),
        "{}: overlapping labels {:?}",
        f.id,
        bad.iter()
            .map(|&(i, j)| (f.labels[i], f.labels[j]))
            .collect::<Vec<_>>()
    );
    assert!(!f.labels.is_empty());
}

#[test]
fn every_kind_has_its_figure_and_no_label_overlaps() {
    let (study, samples) = kinds();
    let figs = figures(&study, &samples);
    let designs: Vec<Design> = figs.iter().map(|f| f.design).collect();
    for d in [
        Design::Memory,
        Design::Timed,
        Design::Latency,
        Design::Reported,
        Design::Ratio,
        Design::Order,
        Design::Value,
    ] {
        assert!(designs.contains(&d), "{d:?} missing: {designs:?}");
    }
    for f in &figs {
        assert_readable(f);
        // Every published value is named in the picture, not only in a tooltip.
        for c in study
            .claims
            .iter()
            .filter(|c| f.svg.contains(&format!("· {} ·", c.id)))
        {
            assert!(f.svg.contains("published"), "{}: {}", f.id, c.id);
        }
        insta::assert_snapshot!(format!("figure_{}", f.id), &f.svg);
    }
    for id in ["asm", "threads", "p99", "limit", "go-peak"] {
        assert!(
            figs.iter().any(|f| f.svg.contains(&format!(" · {id} · "))),
            "claim {id} not named"
        );
    }
}

#[test]
fn twelve_probes_keep_labels_apart_and_colours_distinct() {
    let (study, samples) = twelve();
    let figs = figures(&study, &samples);
    let memory = figs.iter().find(|f| f.design == Design::Memory).unwrap();
    assert_readable(memory);
    for c in PALETTE {
        assert!(
            memory.svg.contains(&format!("fill=\"{c}\"")),
            "colour {c} unused with 12 probes"
        );
    }
    assert!(
        memory.svg.contains("rotate(-90"),
        "long names turn vertical"
    );
    // One unit for the whole figure, though the scales span 1 MiB to 1.2 GiB.
    assert!(memory.svg.contains(">MiB<") && !memory.svg.contains(">GiB<"));
    insta::assert_snapshot!("figure_memory_twelve", &memory.svg);
}

/// 12 probes of a row-chart kind with long names, each with a published value.
fn twelve_rows(kind: &str) -> (Study, Vec<Sample>) {
    let names: Vec<String> = (0..12)
        .map(|i| format!("server-number-{i}-with-a-rather-long-name"))
        .collect();
    let mut yaml = HEAD.to_string();
    yaml.push_str("probes:\n");
    for n in &names {
        yaml.push_str(&format!(
            "  - {{id: {n}, image: x, kind: {kind}, scales: [1], results: [ns_per_op]}}\n"
        ));
    }
    yaml.push_str("claims:\n");
    for (i, n) in names.iter().enumerate() {
        let stat = if kind == "latency" {
            "percentile, percentile: 99"
        } else {
            "result_median, metric: ns_per_op"
        };
        yaml.push_str(&format!(
            "  - {{id: c{i}, text: t, stat: {stat}, probe: {n}, expected: {}, unit: us, tolerance: {{relative: 0.1}}}}\n",
            i + 1
        ));
    }
    let study = Study::parse(&yaml).unwrap();
    let mut samples = Vec::new();
    for (i, n) in names.iter().enumerate() {
        for r in 1..=3 {
            let base = 1000 * (i as u64 + 1);
            samples.push(if kind == "latency" {
                latency(n, r, base / 5)
            } else {
                let v = base as f64 * (1.0 + f64::from(r) / 100.0);
                results(n, Kind::Timed, r, "ns_per_op", &[v, v * 1.01, v * 0.99])
            });
        }
    }
    (study, samples)
}

#[test]
fn twelve_rows_keep_labels_apart() {
    for kind in ["timed", "latency"] {
        let (study, samples) = twelve_rows(kind);
        let figs = figures(&study, &samples);
        assert_eq!(figs.len(), 1, "{kind}");
        let f = &figs[0];
        assert_readable(f);
        assert_eq!(f.svg.matches("class=\"row\"").count(), 12);
        for i in 0..12 {
            assert!(f.svg.contains(&format!(" · c{i} · ")), "{kind}: c{i} named");
        }
        for c in PALETTE {
            assert!(
                f.svg.contains(&format!("\"{c}\"")),
                "{kind}: colour {c} unused"
            );
        }
    }
}

#[test]
fn default_study_figures_are_readable_and_draw_the_headline_claim() {
    let study = Study::default_study();
    let figs = figures(&study, &fixture::samples());
    for f in &figs {
        assert_readable(f);
    }
    // "Rust uses about 86 % less than Go": both sides, the measured and the published percentage.
    for c in study
        .claims
        .iter()
        .filter(|c| c.stat == crate::study::Stat::LowerByPercent)
    {
        let f = figs
            .iter()
            .find(|f| f.id == format!("claim-{}", c.id))
            .unwrap_or_else(|| panic!("no figure for {}", c.id));
        assert_eq!(f.svg.matches("class=\"row\"").count(), 2, "{}", c.id);
        assert!(f.svg.contains("published"), "{}", c.id);
        if c.id == "rust-lower-1m" {
            insta::assert_snapshot!("figure_claim_lower_by", &f.svg);
        }
    }
}

/// A study and run whose probe id and title are markup, as a hostile archive may hold (the schema's
/// checks are bypassed: an archive is read, not trusted).
pub fn hostile() -> (Study, Vec<Sample>) {
    let evil = "<script>alert(1)</script>";
    let (mut study, mut samples) = kinds();
    study.title = format!("{evil} & title");
    study.probes[0].id = evil.into();
    for c in study.claims.iter_mut().filter(|c| c.probe == "pk-go") {
        c.probe = evil.into();
    }
    for s in samples.iter_mut().filter(|s| s.probe == "pk-go") {
        s.probe = evil.into();
    }
    (study, samples)
}

#[test]
fn hostile_names_are_text() {
    let (study, samples) = hostile();
    let figs = figures(&study, &samples);
    assert!(
        figs.iter()
            .any(|f| f.svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
    );
    for f in figs {
        assert!(!f.svg.contains("<script"), "{}", f.svg);
    }
}

/// Every claim of every study in `results/` is drawn on a figure of its run, even a run with no
/// valid sample yet (its rows then say `not measured`).
#[test]
fn every_claim_of_every_study_is_drawn() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let mut missing = Vec::new();
    for file in crate::outputs::index::studies(&root).unwrap() {
        let study = Study::load(&file).unwrap();
        let figs = figures(&study, &[]);
        for c in &study.claims {
            let id = super::draw::escape(&c.id);
            let drawn = figs.iter().any(|f| {
                f.svg.contains(&format!("· {id} ·"))
                    || f.svg.contains(&format!(">Claim {id}<"))
                    || f.svg.contains(&format!(">{id} ("))
            });
            if !drawn {
                missing.push(format!("{}: {} ({:?})", study.id, c.id, c.stat));
            }
        }
    }
    assert!(missing.is_empty(), "claims on no figure: {missing:#?}");
}

/// Claims on bytes per task and on process memory are drawn on separate axes: one log axis over
/// both would squeeze the bytes into its first tick.
#[test]
fn memory_claims_far_apart_in_scale_get_a_figure_each() {
    let study = Study::parse(
        "id: split\ntitle: t\nsource: {article: a, environment: e, cpus: '0'}\n\
         protocol: {scales: [10, 100], repeats: 3, order: fixed, cpus: '0', interval_ms: 1, timeout_s: 5}\n\
         probes:\n  - {id: go, image: x, kind: steady}\nclaims:\n\
         \x20 - {id: per-task, text: 144 B per task, stat: per_task_bytes, probe: go, tasks: 100, expected: 144, unit: B, tolerance: {relative: 0.2}}\n\
         \x20 - {id: base, text: base 1 GiB, stat: baseline_median, probe: go, tasks: 100, expected: 1, unit: GiB, tolerance: {relative: 0.1}}\n\
         \x20 - {id: per-task-2, text: 65624 B per task, stat: per_task_bytes, probe: go, tasks: 10, expected: 65624, unit: B, tolerance: {relative: 0.2}}\n",
    )
    .unwrap();
    let figs = figures(&study, &[]);
    let values: Vec<&Figure> = figs.iter().filter(|f| f.design == Design::Value).collect();
    let ids: Vec<&str> = values.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["values-memory", "values-memory-2"]);
    let (bytes, memory) = (&values[0].svg, &values[1].svg);
    assert!(
        bytes.contains(">per-task (") && bytes.contains(">per-task-2 ("),
        "{bytes}"
    );
    assert!(!bytes.contains(">base ("), "{bytes}");
    assert!(
        memory.contains(">base (") && !memory.contains(">per-task ("),
        "{memory}"
    );
    for f in &values {
        assert_readable(f);
        assert!(!f.svg.contains("0.00000"), "{}: an unreadable tick", f.id);
    }
    assert!(values[0].title.ends_with("in KiB"), "{}", values[0].title);
    assert!(values[1].title.ends_with("in GiB"), "{}", values[1].title);
    insta::assert_snapshot!("figure_values_split_bytes", bytes);
}

/// The memory figure of the default study's fixture measured on two hardware classes, the second's
/// memory three times the first's.
fn two_classes() -> Figure {
    let study = Study::default_study();
    let mut samples = fixture::samples();
    for s in &mut samples {
        s.hardware = Some("CPU X · 2 logical CPUs".into());
    }
    let tripled = fixture::samples().into_iter().map(|mut s| {
        s.hardware = Some("CPU Y · 4 logical CPUs".into());
        s.rss_bytes = s.rss_bytes.iter().map(|v| v * 3).collect();
        s.rss_median_bytes = s.rss_median_bytes.map(|v| v * 3);
        s
    });
    samples.extend(tripled);
    let summary = summarize(&study, &samples);
    let verdicts = judge(&study, &summary);
    let classes = crate::outputs::merge::summaries(&study, &samples);
    super::memory(&Input {
        study: &study,
        summary: &summary,
        verdicts: &verdicts,
        classes: &classes,
    })
}

/// Each panel of an SVG: its opening tag and its text, in order.
fn panels(svg: &str) -> Vec<(&str, &str)> {
    svg.split("<g class=\"panel\"")
        .skip(1)
        .map(|p| {
            let (tag, rest) = p.split_once('>').unwrap();
            (tag, &rest[..rest.find("</g>").unwrap()])
        })
        .collect()
}

#[test]
fn several_classes_get_a_column_each_on_one_y_scale_per_row() {
    let f = two_classes();
    assert_readable(&f);
    let single = figures(&Study::default_study(), &fixture::samples());
    let scales = panels(&single[0].svg).len();
    let panels = panels(&f.svg);
    assert_eq!(
        panels.len(),
        2 * scales,
        "a column per class, a row per scale"
    );
    // The y axis: every end-anchored text (ticks and unit) the same in both columns of a row.
    let ticks = |body: &str| -> Vec<String> {
        body.split("<text")
            .filter(|t| t.contains("text-anchor=\"end\"") && !t.contains("rotate("))
            .map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].to_string())
            .collect()
    };
    for row in panels.chunks(2) {
        let [(a, ta), (b, tb)] = row else { panic!() };
        assert!(
            a.contains("data-class=\"A\"") && b.contains("data-class=\"B\""),
            "{a} {b}"
        );
        assert_eq!(
            a.split("data-class").next(),
            b.split("data-class").next(),
            "one scale"
        );
        assert!(ticks(ta).len() > 2, "ticks: {ta}");
        assert_eq!(ticks(ta), ticks(tb), "one y scale per row");
        assert!(ta.contains("· class A") && tb.contains("· class B"));
    }
    for legend in [
        "class A = CPU X · 2 logical CPUs",
        "class B = CPU Y · 4 logical CPUs",
    ] {
        assert!(f.svg.contains(legend), "{legend}");
    }
    insta::assert_snapshot!("figure_memory_two_classes", f.svg);
}

/// The probe a figure's row is about: its label is the probe's id, begins with it and a space, or
/// names it in parentheses (`go-peak (pk-go @ 100)`).
fn row_probe<'a>(study: &'a Study, label: &str) -> Option<&'a str> {
    (study.probes.iter())
        .map(|p| p.id.as_str())
        .filter(|id| {
            label == *id
                || label.starts_with(&format!("{id} "))
                || label.contains(&format!("({id} "))
                || label.contains(&format!("({id})"))
        })
        .max_by_key(|id| id.len())
}

#[test]
fn a_probe_keeps_one_colour_in_every_figure_of_a_run() {
    let (study, samples) = kinds();
    let figs = figures(&study, &samples);
    let colour = |id: &str| {
        let at = study.probes.iter().position(|p| p.id == id).unwrap();
        PALETTE[at % PALETTE.len()]
    };
    let mut rows_seen = BTreeMap::<&str, usize>::new();
    for f in &figs {
        for group in f.svg.split("<g class=\"row\" data-row=\"").skip(1) {
            let (label, body) = group.split_once('"').unwrap();
            let body = body.split("</g>").next().unwrap();
            let label = label
                .replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">");
            let Some(probe) = row_probe(&study, &label) else {
                continue;
            };
            assert!(
                body.contains(&format!("\"{}\"", colour(probe))),
                "{}: the row {label:?} is not in {probe}'s colour {}",
                f.id,
                colour(probe)
            );
            *rows_seen.entry(probe).or_default() += 1;
        }
    }
    // The memory figure draws the peak probes in their colours too.
    let memory = figs.iter().find(|f| f.id == "memory").unwrap();
    for id in ["pk-go", "pk-rust"] {
        assert!(
            memory.svg.contains(&format!("fill=\"{}\"", colour(id))),
            "{id}"
        );
    }
    // pk-rust is listed first in the order claim, second among the probes: its rows are checked.
    assert!(
        rows_seen.get("pk-rust").is_some_and(|n| *n >= 1),
        "{rows_seen:?}"
    );
    assert!(
        rows_seen.get("pk-go").is_some_and(|n| *n >= 2),
        "{rows_seen:?}"
    );
}

#[test]
fn a_wall_time_claim_is_drawn_on_a_time_axis_against_its_published_bound() {
    let (mut study, mut samples) = kinds();
    for s in samples.iter_mut().filter(|s| s.probe == "pk-go") {
        s.peak.as_mut().unwrap().wall_ms = Some(12_000.0 + f64::from(s.repeat) * 100.0);
    }
    study.claims.push(
        serde_yaml::from_str(
            "{id: go-slow, text: more than 12 s, stat: wall_median, probe: pk-go, tasks: 100, expected: {above: 12000}, unit: ms}",
        )
        .unwrap(),
    );
    let figs = figures(&study, &samples);
    let time: Vec<&Figure> = figs.iter().filter(|f| f.svg.contains("go-slow")).collect();
    assert_eq!(
        time.len(),
        1,
        "{:?}",
        figs.iter().map(|f| &f.id).collect::<Vec<_>>()
    );
    assert_readable(time[0]);
    assert!(time[0].svg.contains("reproduced"), "{}", time[0].svg);
}
