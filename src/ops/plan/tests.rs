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

#[tokio::test]
async fn an_image_whose_dependencies_are_not_vendored_yet_is_to_build_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let planned = |name: &str, unvendored: &[&str]| Planned {
        name: name.into(),
        tag: format!("parkbench/{name}:0123456789abcdef"),
        expect: tags::Expect::Inputs("{}".into()),
        unvendored: unvendored.iter().map(|t| t.to_string()).collect(),
    };
    let images = [planned("py", &["pip"]), planned("go", &[])];
    let engine = crate::engine::fake::FakeEngine::default();
    let said = said_images(&cache, &images, Ok(&engine)).await.unwrap();
    let row = |name: &str| {
        said.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap()
    };
    assert!(
        row("py").ends_with(
            "to build (its pip dependencies are not vendored yet: the build fetches them)"
        ),
        "{said}"
    );
    assert!(
        row("go").ends_with("to build (no build time recorded)"),
        "{said}"
    );
}

#[test]
fn a_placeholder_sha256_is_refused_naming_the_command_that_records_it() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pins = pin::load_all(&repo.join("toolchains")).unwrap();
    let graph = images::graph(repo, &pins).unwrap();
    let needed = graph.only(&["python-asyncio".to_string()]).unwrap();
    check_recorded(&pins, &needed).unwrap();
    let placeholder = pins.iter().cloned().map(|mut p| {
        if p.name == "debian-trixie" {
            p.sha256 = pin::PLACEHOLDER_SHA256.into();
        }
        p
    });
    let pins = pin::Pins::from_pins(&repo.join("toolchains"), placeholder);
    let err = format!("{:#}", check_recorded(&pins, &needed).unwrap_err());
    assert!(
        err.contains("toolchains/debian-trixie.yaml")
            && err.contains("`parkbench pin update debian-trixie`"),
        "{err}"
    );
    // An image that does not stand on it is not held up by it.
    check_recorded(&pins, &graph.only(&["go".to_string()]).unwrap()).unwrap();
}

#[test]
fn every_committed_study_passes_the_checks_of_plan_unavailable_toolchains_and_all() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let studies = std::fs::read_dir(repo.join("results")).unwrap();
    let mut checked = 0;
    for study in studies.flatten().map(|e| e.path().join("study.yaml")) {
        if study.is_file() {
            // The dotnet and graalvm pins hold placeholders: no source the kit can use records them.
            check(repo, &study, &[]).unwrap_or_else(|e| panic!("{}: {e:#}", study.display()));
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked} studies");
}

#[test]
fn a_declared_patch_is_checked_whether_or_not_its_image_can_be_built() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("docker/probe");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::create_dir_all(tmp.path().join("toolchains")).unwrap();
    std::fs::write(folder.join("Dockerfile"), "ARG BASE\nFROM ${BASE}\n").unwrap();
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("toolchains");
    for file in ["debian-base.yaml", "debian-base.lock"] {
        std::fs::copy(real.join(file), tmp.path().join("toolchains").join(file)).unwrap();
    }
    let published = include_bytes!("../../images/patch/testdata/published.go");
    std::fs::write(folder.join("main.go"), published).unwrap();
    let diff = include_bytes!("../../images/patch/testdata/two-hunks.diff");
    std::fs::write(folder.join("fix.diff"), diff).unwrap();
    let before = crate::files::digest::bytes(published);
    let after = crate::files::digest::bytes(&crate::images::patch::apply(published, diff).unwrap());
    let recipe = |before: &str| {
        format!(
            "parents: {{BASE: base}}\nprobe: true\npatches:\n  - patch: fix.diff\n    file: main.go\n    sha256_before: \
             {before}\n    sha256_after: {after}\n    reason: it does not compile\n"
        )
    };
    std::fs::write(folder.join("image.yaml"), recipe(&before)).unwrap();
    let pins = pin::load_all(&tmp.path().join("toolchains")).unwrap();
    let graph = images::graph(tmp.path(), &pins).unwrap();
    check_dockerfiles(tmp.path(), &graph).unwrap();
    std::fs::write(folder.join("image.yaml"), recipe(&"1".repeat(64))).unwrap();
    let graph = images::graph(tmp.path(), &pins).unwrap();
    let err = format!("{:#}", check_dockerfiles(tmp.path(), &graph).unwrap_err());
    assert!(
        err.contains("probe/image.yaml:") && err.contains("not the 1111"),
        "{err}"
    );
}
