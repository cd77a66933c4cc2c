use super::*;

#[test]
fn tables_align_every_column_to_its_widest_value() {
    let rows = vec![
        vec!["A".to_string(), "BB".into(), "C".into()],
        vec!["long-name".to_string(), "x".into(), "".into()],
    ];
    assert_eq!(table(&rows), "  A         BB C\n  long-name x\n");
}

#[test]
fn a_factor_level_naming_no_image_is_refused_at_its_line() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pins = pin::load_all(&repo.join("toolchains")).unwrap();
    let graph = images::graph(repo, &pins).unwrap();
    let mut text = crate::study::DEFAULT_STUDY.to_string();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("study.yaml");
    let study = Study::parse(&text).unwrap();
    std::fs::write(&file, &text).unwrap();
    check_factor_images(&study, &file, &graph).unwrap();
    let level = study
        .factors
        .iter()
        .flat_map(|f| &f.levels)
        .find_map(|l| l.image.clone());
    let image = level.expect("the default study has a factor level with an image");
    text = text.replacen(&format!("image: {image}"), "image: rust-tokio.nothing", 1);
    std::fs::write(&file, &text).unwrap();
    let study = Study::parse(&text).unwrap();
    let err = check_factor_images(&study, &file, &graph).unwrap_err();
    let said = format!("{err:#}");
    assert!(
        said.contains("study.yaml:") && said.contains("rust-tokio.nothing"),
        "{said}"
    );
}
