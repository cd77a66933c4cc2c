//! `parkbench compare` on a small real run: its folder against its archive gives the same binaries
//! and every cell within dispersion; bad input is named and nothing is written.

use crate::common;

use common::*;

#[test]
fn a_run_compared_with_its_archive() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let study = write_study(
        tmp.path(),
        "s.yaml",
        &small_study("tiny", "1000, 10000", 2, "0", 200, ""),
    );
    Invocation::reproduce(tmp.path(), &study)
        .cpus("auto")
        .succeeds();
    let run = only_run(tmp.path(), "tiny");
    let archive = run.with_extension("tar.gz");

    let written = tmp.path().join("cmp");
    let out = parkbench()
        .arg("compare")
        .arg(&run)
        .arg(&archive)
        .arg("--out")
        .arg(&written)
        .args(["--fail-above", "0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let md = text(&out.stdout);
    assert!(md.contains("Same binaries: yes"), "{md}");
    assert!(
        !md.contains("lost in B") && !md.contains("new in B"),
        "{md}"
    );
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("dispersion |")).collect();
    assert_eq!(rows.len(), 4, "two probes × two scales:\n{md}");
    assert!(
        rows.iter().all(|r| r.ends_with("| within dispersion |")),
        "{md}"
    );
    assert_eq!(
        std::fs::read_to_string(written.join("compare.md")).unwrap(),
        md
    );
    let svg = std::fs::read_to_string(written.join("compare.svg")).unwrap();
    assert_eq!(svg.matches("class=\"panel\"").count(), 2, "{svg}");
    let html = std::fs::read_to_string(written.join("compare.html")).unwrap();
    assert!(
        html.contains(&svg) && html.contains("<h2>Cells</h2>"),
        "{html}"
    );

    // Bad input is named, exits 1 and writes nothing.
    let not_a_run = tmp.path().join("not-a-run");
    std::fs::create_dir(&not_a_run).unwrap();
    let truncated = tmp.path().join("truncated.tar.gz");
    let bytes = std::fs::read(&archive).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    for bad in [&not_a_run, &truncated] {
        let nowhere = tmp.path().join("nowhere");
        let out = parkbench()
            .arg("compare")
            .arg(&run)
            .arg(bad)
            .arg("--out")
            .arg(&nowhere)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        assert!(
            text(&out.stderr).contains(&bad.display().to_string()),
            "{}",
            describe(&out)
        );
        assert!(!nowhere.exists(), "nothing is written on bad input");
    }
}
