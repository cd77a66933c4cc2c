use super::*;

#[test]
fn every_template_renders_for_every_kind_with_nothing_left_unfilled() {
    for lang in LANGS {
        for kind in Kind::ALL {
            let files = files(lang, "hello", kind).unwrap();
            assert!(files.iter().any(|(p, _, _)| p == "image.yaml"), "{lang:?}");
            for (path, text, _) in &files {
                assert!(!text.contains("{{"), "{lang:?} {kind:?} {path}: {text}");
                assert!(
                    !text.contains("@kind") && !text.contains("@end"),
                    "{lang:?} {path}"
                );
            }
            let (_, yaml, _) = files.iter().find(|(p, _, _)| p == "image.yaml").unwrap();
            let recipe = Recipe::parse("hello", yaml).unwrap();
            assert!(recipe.probe && recipe.binaries.contains(&"/usr/local/bin/probe".into()));
            let line = yaml
                .lines()
                .find_map(|l| l.strip_prefix(KIND_LINE))
                .unwrap();
            assert_eq!(parse_kind(line).unwrap(), kind);
        }
    }
}

#[test]
fn a_kind_part_is_kept_only_for_its_kinds() {
    let t = "a\n// @kind steady,peak\nb\n// @end\n# @kind timed\nc\n# @end\nd\n";
    assert_eq!(render(t, "peak").unwrap(), "a\nb\nd\n");
    assert_eq!(render(t, "timed").unwrap(), "a\nc\nd\n");
    assert_eq!(render(t, "latency").unwrap(), "a\nd\n");
    assert!(render("// @kind steady\nx\n", "steady").is_err());
    assert!(render("x\n// @end\n", "steady").is_err());
}

#[test]
fn the_study_template_loads_with_the_stand_in_and_with_every_kind() {
    let text = study_text(
        Path::new("."),
        "demo",
        "parkbench plan results/demo/study.yaml",
        &[],
    )
    .unwrap();
    let study = Study::parse(&text).unwrap();
    assert_eq!(study.probes[0].image, "go");
    let mut text = study_text(
        Path::new("."),
        "demo",
        "parkbench plan results/demo/study.yaml",
        &[],
    )
    .unwrap();
    let stand_in = text.find("  # The kit's own Go probe").unwrap();
    text.truncate(stand_in);
    for kind in Kind::ALL {
        text.push_str(&probe_entry(&format!("p-{}", kind.name()), kind));
    }
    let study = Study::parse(&text).unwrap();
    assert_eq!(study.probes.len(), 5);
    for (probe, kind) in study.probes.iter().zip(Kind::ALL) {
        assert_eq!(probe.kind, kind);
    }
}

#[test]
fn names_are_checked_and_nothing_is_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let nowhere = Paths {
        repo: tmp.path().to_owned(),
        results: tmp.path().join("results"),
    };
    let err = study(&nowhere, "demo", &[]).unwrap_err();
    assert!(format!("{err:#}").contains("no docker/ folder"), "{err:#}");
    std::fs::create_dir(tmp.path().join("docker")).unwrap();
    let paths = Paths {
        repo: tmp.path().to_owned(),
        results: tmp.path().join("results"),
    };
    assert!(probe(&paths, "a.b", Lang::Go, Kind::Steady).is_err());
    assert!(probe(&paths, "Hello", Lang::Go, Kind::Steady).is_err());
    probe(&paths, "hello", Lang::Binary, Kind::Peak).unwrap();
    let sums = std::fs::read_to_string(tmp.path().join("docker/hello/SHA256SUMS")).unwrap();
    let script = tmp.path().join("docker/hello/probe");
    assert!(sums.starts_with(&digest::file(&script).unwrap()));
    let err = probe(&paths, "hello", Lang::Go, Kind::Steady).unwrap_err();
    assert!(format!("{err:#}").contains("already exists"), "{err:#}");
    study(&paths, "demo", &["hello".into()]).unwrap();
    let loaded = Study::load(&tmp.path().join("results/demo/study.yaml")).unwrap();
    assert_eq!(loaded.probes[0].kind, Kind::Peak);
    assert!(study(&paths, "demo", &[]).is_err());
    let err = study(&paths, "other", &["nothing".into()]).unwrap_err();
    assert!(format!("{err:#}").contains("nothing"), "{err:#}");
}

#[test]
fn the_templates_placeholders_are_found_until_they_are_replaced() {
    let text = STUDY
        .replace("{{id}}", "demo")
        .replace("{{plan}}", "parkbench plan results/demo/study.yaml");
    for (_, placeholder) in PLACEHOLDERS {
        assert!(text.contains(placeholder), "{placeholder}");
    }
    let yaml = "id: demo\ntitle: \"demo: what is measured, against what\"\nsource:\n  article: \
                \"the article's title, or the question this study asks\"\n  environment: \
                \"the published environment: CPU model, OS, kernel X.Y\"\n";
    let written = "id: demo\ntitle: Tasks\nsource: {article: A, environment: B}\n";
    let left = |yaml: &str| {
        let value: serde_yaml::Value = serde_yaml::from_str(yaml).unwrap();
        let get = |path: &str| {
            path.split('.')
                .fold(&value, |v, k| &v[k])
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        placeholders_in(&get)
    };
    assert_eq!(
        left(yaml),
        ["title", "source.article", "source.environment"]
    );
    assert!(left(written).is_empty());
}

#[test]
fn a_probe_image_without_a_kind_line_gets_peak_and_a_comment_saying_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("docker/hand");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("Dockerfile"), "ARG BASE\nFROM ${BASE}\n").unwrap();
    std::fs::write(
        dir.join("image.yaml"),
        "parents: {BASE: base}\nprobe: true\nbinaries: [/usr/local/bin/probe]\n",
    )
    .unwrap();
    let text = study_text(
        tmp.path(),
        "demo",
        "results/demo/study.yaml",
        &["hand".into()],
    )
    .unwrap();
    assert!(
        text.contains("does not say what its program is measured for"),
        "{text}"
    );
    let study = Study::parse(&text).unwrap();
    assert_eq!(study.probes[0].kind, Kind::Peak);
    // A kind line that names no kind is still an error, naming the file.
    let yaml = std::fs::read_to_string(dir.join("image.yaml")).unwrap();
    std::fs::write(dir.join("image.yaml"), format!("# kind: sometimes\n{yaml}")).unwrap();
    let err = study_text(
        tmp.path(),
        "demo",
        "results/demo/study.yaml",
        &["hand".into()],
    )
    .unwrap_err();
    let err = format!("{err:#}");
    assert!(
        err.contains("hand/image.yaml") && err.contains("\"sometimes\" is no kind"),
        "{err}"
    );
}

#[test]
fn a_peak_entry_passes_only_the_task_count() {
    let entry = probe_entry("p", Kind::Peak);
    let study = Study::parse(
        &study_text(
            Path::new("."),
            "demo",
            "parkbench plan results/demo/study.yaml",
            &[],
        )
        .unwrap()
        .replace("  - id: go\n", &format!("{entry}  - id: go\n")),
    )
    .unwrap();
    let p = study.probes.iter().find(|p| p.id == "p").unwrap();
    assert_eq!(p.args, ["{tasks}"]);
}

#[test]
fn the_java_class_is_named_only_in_its_program() {
    for kind in Kind::ALL {
        for (path, text, _) in files(Lang::Java, "hello", kind).unwrap() {
            if !path.ends_with(".java") {
                assert!(!text.contains("Probe"), "{path} names the class: {text}");
            }
        }
    }
}

#[test]
fn a_study_file_is_named_from_the_repositorys_root_inside_it_or_out() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("kit");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::os::unix::fs::symlink(&repo, tmp.path().join("link")).unwrap();
    let real = tmp.path().canonicalize().unwrap();
    // Inside: relative, whichever way the repository is named; the study's folder not made yet.
    for named in [repo.clone(), repo.join("sub/.."), tmp.path().join("link")] {
        assert_eq!(
            from_repo(&named, &named.join("results/demo/study.yaml")),
            Path::new("results/demo/study.yaml"),
            "{}",
            named.display()
        );
    }
    // Outside: absolute, resolved.
    assert_eq!(
        from_repo(
            &repo.join("sub/.."),
            &tmp.path().join("link/../runs/demo/study.yaml")
        ),
        real.join("runs/demo/study.yaml")
    );
}
