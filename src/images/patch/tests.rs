use super::*;

const PUBLISHED: &[u8] = include_bytes!("testdata/published.go");
/// `diff -u` of two hunks: the unused import removed, a statement rewritten 20 lines below.
const TWO_HUNKS: &[u8] = include_bytes!("testdata/two-hunks.diff");
const BEFORE: &str = "137911f8fe486e6ec84141817e57dfc99e0f32c6ccd5aa3434f7550aacebf9cf";
const AFTER: &str = "d1eadfcfc56bd8463f3d3a5ffb9be5ff4948b9f50a5905932b238ab898897d37";

fn entry() -> Patch {
    Patch {
        patch: "fix.diff".into(),
        file: "src/main.go".into(),
        sha256_before: BEFORE.into(),
        sha256_after: AFTER.into(),
        reason: "the published file imports \"os\" without using it".into(),
    }
}

/// An image folder holding the published file and the diff, and its recipe file.
fn folder(patch: &Patch) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.go"), PUBLISHED).unwrap();
    std::fs::write(dir.path().join("fix.diff"), TWO_HUNKS).unwrap();
    let recipe = dir.path().join("image.yaml");
    let yaml = serde_yaml::to_string(&serde_json::json!({ "patches": [patch] })).unwrap();
    std::fs::write(&recipe, yaml).unwrap();
    (dir, recipe)
}

#[test]
fn a_diff_of_two_hunks_applies_as_diff_u_made_it() {
    let patched = apply(PUBLISHED, TWO_HUNKS).unwrap();
    assert_eq!(digest::bytes(&patched), AFTER);
    let text = String::from_utf8(patched).unwrap();
    assert!(
        !text.contains("\"os\"") && text.contains("done += 1"),
        "{text}"
    );
}

#[test]
fn a_git_diff_applies_too() {
    let mut git = b"diff --git a/published.go b/published.go\nindex 1379..d1ea 100644\n".to_vec();
    git.extend_from_slice(TWO_HUNKS);
    assert_eq!(digest::bytes(&apply(PUBLISHED, &git).unwrap()), AFTER);
}

#[test]
fn a_diff_that_does_not_match_or_is_no_diff_is_refused() {
    let other = String::from_utf8_lossy(PUBLISHED).replace("done := 0", "done := 1");
    let err = format!("{:#}", apply(other.as_bytes(), TWO_HUNKS).unwrap_err());
    assert!(err.contains("hunk"), "{err}");
    let err = format!("{:#}", apply(PUBLISHED, b"just text\n").unwrap_err());
    assert!(!err.is_empty());
}

#[test]
fn the_patched_file_replaces_the_published_one_only_in_the_context() {
    let p = entry();
    let (dir, recipe) = folder(&p);
    let scratch = tempfile::tempdir().unwrap();
    let out = apply_all(&[p], dir.path(), Some(&recipe), scratch.path()).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, "src/main.go");
    assert_eq!(digest::file(&out[0].1).unwrap(), AFTER);
    let published = dir.path().join("src/main.go");
    assert_eq!(
        digest::file(&published).unwrap(),
        BEFORE,
        "the folder keeps the published file"
    );
}

#[test]
fn a_changed_file_stops_with_the_recipe_location_both_hashes_and_what_to_do() {
    let p = entry();
    let (dir, recipe) = folder(&p);
    std::fs::write(dir.path().join("src/main.go"), b"package main\n").unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let err = format!(
        "{:#}",
        apply_all(&[p], dir.path(), Some(&recipe), scratch.path()).unwrap_err()
    );
    let found = digest::bytes(b"package main\n");
    assert!(err.contains(&format!("{}:", recipe.display())), "{err}");
    assert!(err.contains(&found) && err.contains(BEFORE), "{err}");
    assert!(
        err.contains("src/main.go") && err.contains("remake"),
        "{err}"
    );
    let line_col = err.split(':').nth(1).unwrap_or_default();
    assert!(
        line_col.parse::<u32>().is_ok(),
        "a line number follows the file: {err}"
    );
}

#[test]
fn a_wrong_result_hash_stops_with_both_hashes() {
    let mut p = entry();
    p.sha256_after = "0".repeat(64);
    let (dir, recipe) = folder(&p);
    let scratch = tempfile::tempdir().unwrap();
    let err = format!(
        "{:#}",
        apply_all(&[p], dir.path(), Some(&recipe), scratch.path()).unwrap_err()
    );
    assert!(
        err.contains(AFTER) && err.contains(&"0".repeat(64)),
        "{err}"
    );
    assert!(
        err.contains("sha256_after") || err.contains("record its sha256"),
        "{err}"
    );
}

#[test]
fn fields_are_checked() {
    let ok = entry();
    assert!(validate(std::slice::from_ref(&ok)).is_ok());
    type Change = Box<dyn Fn(&mut Patch)>;
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|p| p.file = "../x.go".into()), "patches[0].file"),
        (
            Box::new(|p| p.file = "image.yaml".into()),
            "patches[0].file",
        ),
        (
            Box::new(|p| p.patch = "/abs.diff".into()),
            "patches[0].patch",
        ),
        (
            Box::new(|p| p.sha256_before = "ABC".into()),
            "patches[0].sha256_before",
        ),
        (
            Box::new(|p| p.sha256_after = String::new()),
            "patches[0].sha256_after",
        ),
        (Box::new(|p| p.reason = " ".into()), "patches[0].reason"),
    ];
    for (change, at) in cases {
        let mut p = ok.clone();
        change(&mut p);
        assert_eq!(validate(&[p]).unwrap_err().path, at);
    }
    let twice = validate(&[ok.clone(), ok]).unwrap_err();
    assert_eq!(twice.path, "patches[1].file");
}

#[test]
fn the_deviation_names_the_image_the_file_the_patch_and_the_reason() {
    let d = entry().deviation("go-probe");
    assert!(
        d.starts_with("image go-probe: src/main.go patched with fix.diff"),
        "{d}"
    );
    assert!(d.contains(&BEFORE[..12]) && d.contains(&AFTER[..12]), "{d}");
    assert!(d.ends_with("without using it"), "{d}");
}
