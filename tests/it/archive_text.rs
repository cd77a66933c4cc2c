//! Text an archive carries is shown as text: a deviation, a warning or a note reaches the terminal
//! with every control character escaped (the exit code follows the recomputed verdicts, whatever
//! the archive prints), and a report page or Markdown file with every link and tag of its own
//! written out as text. No Engine needed: committed reference runs are altered.

use crate::common;

use std::path::Path;

use common::archive::reference_folder;
use common::*;
use serde_json::Value;

/// Edits `run.json` of the run folder `run`.
fn edit_run_json(run: &Path, edit: impl FnOnce(&mut Value)) {
    let path = run.join("run.json");
    let mut json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut json);
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
}

/// Adds a warning saying `what` to the run in `json` (a quiet run records none, and no key).
fn add_warning(json: &mut Value, what: String) {
    let warnings = &mut json["warnings"];
    if warnings.is_null() {
        *warnings = Value::Array(Vec::new());
    }
    let warning = serde_json::json!({ "what": what, "touches": "all" });
    warnings.as_array_mut().unwrap().push(warning);
}

/// Moves the cursor up over the verdict table, clears the line and writes a forged row; then OSC 52
/// (set the clipboard), OSC 8 (a link), a bell, a carriage return and a right-to-left override.
const FORGED: &str = "\x1b[14A\x1b[2Krust-rss-1m  reproduced\x1b]52;c;cm0gLXJmIH4=\x07\x1b]8;;https://example.invalid\x1b\\here\x1b]8;;\x1b\\\r\u{202e}\u{9b}2J";

#[test]
fn a_deviation_that_would_redraw_the_verdict_table_is_printed_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let run = reference_folder("wait-1m", tmp.path());
    edit_run_json(&run, |j| {
        j["deviations"].as_array_mut().unwrap().push(FORGED.into());
        add_warning(j, format!("pressure{FORGED}"));
    });
    let out = parkbench()
        .args(["verify", "--strict"])
        .arg(&run)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    for shown in [&stdout, &stderr] {
        assert!(
            !shown.contains(['\x1b', '\x07', '\r', '\u{202e}', '\u{9b}']),
            "{}",
            describe(&out)
        );
    }
    assert!(
        stdout.contains("  - \\x1b[14A\\x1b[2Krust-rss-1m  reproduced\\x1b]52;c;")
            && stdout.contains("\\x0d\\u{202e}\\x9b2J")
            && stdout.contains("  - pressure\\x1b[14A"),
        "{}",
        describe(&out)
    );
    // The recomputed verdicts decide: rust-rss-1m differs, and --strict says so by its exit code.
    assert!(stdout.contains("rust-rss-1m"), "{stdout}");
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    let lenient = parkbench().arg("verify").arg(&run).output().unwrap();
    assert_eq!(lenient.status.code(), Some(0), "{}", describe(&lenient));
}

/// Markdown links, raw HTML and an autolink, as an archive could carry them in any text.
const HOSTILE: [&str; 5] = [
    "[x](javascript:alert(1))",
    "[click](https://evil.example/)",
    "<script>alert(2)</script>",
    "<img src=x onerror=alert(3)>",
    "<https://evil.example/auto>",
];

/// An id, or a key, that is a link and raw HTML, unique by `n`.
fn hostile_id(n: usize) -> String {
    format!("[x{n}](https://evil.example/{n})<img src=x onerror=alert({n})>")
}

/// The run folder `run` with a hostile text in every string of its study and samples a reader can
/// be shown: deviations, warnings, the study's title and source, every probe's id, every claim's
/// id and text, every sample's notes, metrics' names, hardware class and host (two of each, so
/// that the claims are judged per class).
fn hostile_run(run: &Path) {
    let all = HOSTILE.join(" ");
    edit_run_json(run, |j| {
        for h in HOSTILE {
            j["deviations"].as_array_mut().unwrap().push(h.into());
        }
        add_warning(j, all.clone());
    });
    let path = run.join("study.yaml");
    let mut study: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut probes = std::collections::BTreeMap::new();
    for (i, probe) in study["probes"]
        .as_sequence_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let new = hostile_id(i);
        probes.insert(probe["id"].as_str().unwrap().to_string(), new.clone());
        probe["id"] = new.into();
    }
    let renamed = |v: &serde_yaml::Value| probes[v.as_str().unwrap()].clone();
    for (i, claim) in study["claims"]
        .as_sequence_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        claim["id"] = hostile_id(100 + i).into();
        claim["text"] = all.clone().into();
        claim["probe"] = renamed(&claim["probe"]).into();
        if claim.get("than").is_some() {
            claim["than"] = renamed(&claim["than"]).into();
        }
        if let Some(metric) = claim.get("metric").and_then(|m| m.as_str()) {
            claim["metric"] = format!("{}{metric}", hostile_id(200)).into();
        }
    }
    for factor in study["factors"].as_sequence_mut().into_iter().flatten() {
        factor["probe"] = renamed(&factor["probe"]).into();
    }
    study["title"] = all.clone().into();
    study["source"]["article"] = all.clone().into();
    study["source"]["environment"] = all.clone().into();
    std::fs::write(&path, serde_yaml::to_string(&study).unwrap()).unwrap();

    let samples = std::fs::read_to_string(run.join("samples.jsonl")).unwrap();
    let mut lines = String::new();
    for (i, line) in samples.lines().enumerate() {
        let mut sample: Value = serde_json::from_str(line).unwrap();
        // Two hardware classes, so that the claims are judged per class (classes.md).
        sample["hardware"] = hostile_id(300 + i % 2).into();
        sample["host"] = hostile_id(400 + i % 2).into();
        let probe = probes[sample["probe"].as_str().unwrap()].clone();
        sample["probe"] = probe.into();
        sample["notes"] = serde_json::json!([all]);
        let metrics = sample["metrics"].as_object_mut().unwrap();
        let renamed: serde_json::Map<String, Value> = std::mem::take(metrics)
            .into_iter()
            .map(|(k, v)| (format!("{}{k}", hostile_id(200)), v))
            .collect();
        *metrics = renamed;
        lines.push_str(&format!("{sample}\n"));
    }
    std::fs::write(run.join("samples.jsonl"), lines).unwrap();
}

/// True when `html` has a live link, tag or handler from the hostile texts.
fn live(html: &str) -> Vec<&'static str> {
    [
        "<script>alert",
        "<img src=x",
        "href=\"javascript",
        "href=\"https://evil",
    ]
    .into_iter()
    .filter(|bad| html.contains(bad))
    .collect()
}

#[test]
fn archive_text_in_reports_never_becomes_a_link_or_html() {
    let tmp = tempfile::tempdir().unwrap();
    let run = reference_folder("wait-1m", &tmp.path().join("a"));
    hostile_run(&run);
    let out = parkbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        live(&html).is_empty(),
        "report.html: {:?}\n{html}",
        live(&html)
    );
    // Rendered the way any Markdown viewer would, report.md has none either.
    let mut rendered = String::new();
    pulldown_cmark::html::push_html(&mut rendered, pulldown_cmark::Parser::new(&md));
    assert!(
        live(&rendered).is_empty(),
        "report.md: {:?}\n{md}",
        live(&rendered)
    );
    assert!(
        html.contains("&lt;script&gt;alert(2)&lt;/script&gt;"),
        "shown as text"
    );
    let classes = std::fs::read_to_string(run.join("classes.md")).unwrap();
    let mut rendered = String::new();
    pulldown_cmark::html::push_html(&mut rendered, pulldown_cmark::Parser::new(&classes));
    assert!(
        live(&rendered).is_empty(),
        "classes.md: {:?}\n{classes}",
        live(&rendered)
    );
    assert!(
        md.contains("evil.example/0") && md.contains("evil.example/100"),
        "{md}"
    );
    // The kit's own links still are.
    assert!(html.contains("<a href=\"summary.json\">"), "{html}");

    let other = reference_folder("wait-1m", &tmp.path().join("b"));
    hostile_run(&other);
    let to = tmp.path().join("compared");
    let out = parkbench()
        .arg("compare")
        .arg(&run)
        .arg(&other)
        .arg("--out")
        .arg(&to)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let html = std::fs::read_to_string(to.join("compare.html")).unwrap();
    assert!(live(&html).is_empty(), "compare.html: {:?}", live(&html));
    let md = std::fs::read_to_string(to.join("compare.md")).unwrap();
    let mut rendered = String::new();
    pulldown_cmark::html::push_html(&mut rendered, pulldown_cmark::Parser::new(&md));
    assert!(
        live(&rendered).is_empty(),
        "compare.md: {:?}\n{md}",
        live(&rendered)
    );
}
