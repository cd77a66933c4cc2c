//! The build table's columns line up whatever the length of the image names and tags.

use std::collections::BTreeMap;

use super::manifest::{BuiltImage, FailedImage, Manifest, UnavailableImage};
use super::table;

fn image(name: &str, binaries: &[&str]) -> BuiltImage {
    BuiltImage {
        name: name.into(),
        tag: format!("parkbench/{name}:0123456789abcdef"),
        id: "sha256:00".into(),
        layers: Vec::new(),
        inputs: BTreeMap::new(),
        binaries: binaries
            .iter()
            .map(|b| (b.to_string(), "ab".repeat(32)))
            .collect(),
        versions: BTreeMap::new(),
        notes: Vec::new(),
        built: true,
    }
}

#[test]
fn columns_stay_aligned_for_long_image_names() {
    let manifest = Manifest {
        images: vec![
            image("go", &["/app/probe"]),
            image(
                "a-probe-name-well-over-sixteen-characters",
                &["/app/a", "/app/b"],
            ),
        ],
        unavailable: vec![UnavailableImage {
            name: "an-unavailable-image-with-a-long-name".into(),
            reason: "no source".into(),
            notes: Vec::new(),
        }],
        failed: vec![FailedImage {
            name: "a-failed-image-with-a-long-name".into(),
            error: "main.c:1:1: error: expected ';'".into(),
            parent: None,
            output: Vec::new(),
        }],
        drift: Vec::new(),
    };
    let text = table(&manifest);
    let lines: Vec<&str> = text.lines().take(4).collect();
    let column = |l: &str, what: &str| l.find(what).unwrap_or_else(|| panic!("{what} in {l:?}"));
    let tag = column(lines[0], "TAG");
    let state = column(lines[0], "STATE");
    let bins = column(lines[0], "BINARIES");
    for line in &lines[1..3] {
        assert_eq!(column(line, "parkbench/"), tag, "{text}");
        assert_eq!(column(line, "built"), state, "{text}");
        assert_eq!(column(line, "/app/"), bins, "{text}");
    }
    // A second binary of the same image sits under the first.
    assert_eq!(column(lines[3], "/app/b"), bins, "{text}");
    let failed = text.lines().last().unwrap();
    assert!(failed.starts_with("a-failed-image-with-a-long-name "));
    assert_eq!(column(failed, "build failed"), tag, "{text}");
    let unavailable = text
        .lines()
        .find(|l| l.starts_with("an-unavailable"))
        .unwrap();
    assert!(unavailable.starts_with("an-unavailable-image-with-a-long-name "));
    assert_eq!(column(unavailable, "no source"), tag, "{text}");
}
