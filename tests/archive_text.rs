//! Text an archive carries is shown as text: a deviation, a warning or a note reaches the terminal
//! with every control character escaped (the exit code follows the recomputed verdicts, whatever
//! the archive prints), and a report page or Markdown file with every link and tag of its own
//! written out as text. No Engine needed: committed reference runs are altered.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// `results/<study>/reference/run.tar.gz` unpacked into `into`, without its SHA256SUMS (so the
/// altered folder is read, not refused): the run folder.
fn reference_folder(study: &str, into: &Path) -> PathBuf {
    let archive = repo().join(format!("results/{study}/reference/run.tar.gz"));
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(&archive).unwrap());
    tar::Archive::new(gz).unpack(into).unwrap();
    let run = std::fs::read_dir(into)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    std::fs::remove_file(run.join("SHA256SUMS")).unwrap();
    run
}

/// Edits `run.json` of the run folder `run`.
fn edit_run_json(run: &Path, edit: impl FnOnce(&mut Value)) {
    let path = run.join("run.json");
    let mut json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut json);
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
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
        j["warnings"][0]["what"] = format!("pressure{FORGED}").into();
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
