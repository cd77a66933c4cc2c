use super::*;

fn parse(yaml: &str) -> Result<Recipe> {
    Recipe::parse("probe", yaml)
}

#[test]
fn vendor_takes_a_flag_a_tool_or_a_list() {
    let cases = [
        ("vendor: true", vec![Tool::Cargo]),
        ("vendor: false", vec![]),
        ("vendor: cargo", vec![Tool::Cargo]),
        ("vendor: go", vec![Tool::Go]),
        ("vendor: npm", vec![Tool::Npm]),
        (
            "vendor: [pip, npm]\npip_python: \"3.13\"",
            vec![Tool::Pip, Tool::Npm],
        ),
        ("probe: true", vec![]),
    ];
    for (yaml, want) in cases {
        assert_eq!(parse(yaml).unwrap().vendor.0, want, "{yaml}");
    }
}

#[test]
fn bad_vendor_values_name_the_line_and_the_tools() {
    let cases = [
        ("vendor: maven", "1:9", "unknown tool \"maven\""),
        (
            "vendor: [pip, pip]\npip_python: \"3.13\"",
            "1:9",
            "named twice",
        ),
        ("vendor: [cargo, go]", "1:9", "both vendor into vendor/"),
        ("vendor: 3", "1:9", "`cargo`, `pip`, `go`, `npm`"),
        ("vendor: pip", "1:9", "pip_python"),
        ("vendor: pip\npip_python: \"3\"", "2:13", "major.minor"),
    ];
    for (yaml, at, want) in cases {
        let err = format!("{:#}", parse(yaml).unwrap_err());
        assert!(err.contains(&format!("image.yaml:{at}")), "{yaml}: {err}");
        assert!(err.contains(want), "{yaml}: {err}");
    }
}

#[test]
fn a_tool_without_its_lockfile_is_a_load_error_saying_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("probe");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("Dockerfile"), "FROM scratch\n").unwrap();
    for (tool, yaml) in [
        (Tool::Pip, "vendor: pip\npip_python: \"3.13\"\n"),
        (Tool::Go, "vendor: go\n"),
        (Tool::Npm, "vendor: [npm]\n"),
    ] {
        std::fs::write(folder.join(crate::images::context::RECIPE), yaml).unwrap();
        let err = format!("{:#}", Recipe::load(&folder).unwrap_err());
        assert!(err.contains(tool.lockfile()), "{err}");
        assert!(err.contains(tool.lockfile_hint()), "{err}");
        std::fs::write(folder.join(tool.lockfile()), "").unwrap();
        assert!(Recipe::load(&folder).is_ok(), "{tool}");
    }
}

#[test]
fn a_recipe_round_trips_its_vendor_list() {
    let r = parse("vendor: [npm, pip]\npip_python: \"3.12\"").unwrap();
    let yaml = serde_yaml::to_string(&r).unwrap();
    assert_eq!(parse(&yaml).unwrap(), r, "{yaml}");
}

#[test]
fn every_tool_has_its_own_context_folder_but_cargo_and_go() {
    for a in Tool::ALL {
        for b in Tool::ALL {
            let same = a.context_path() == b.context_path();
            let allowed =
                a == b || matches!((a, b), (Tool::Cargo, Tool::Go) | (Tool::Go, Tool::Cargo));
            assert!(!same || allowed, "{a} and {b}");
        }
    }
}

#[test]
fn a_vendored_tree_changed_since_it_was_made_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("node");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("Dockerfile"), "FROM scratch\n").unwrap();
    std::fs::write(folder.join("package.json"), "{}").unwrap();
    // A lockfile npm refuses: vendoring it again fails, and says so.
    std::fs::write(folder.join("package-lock.json"), "not a lockfile").unwrap();
    std::fs::write(folder.join(crate::images::context::RECIPE), "vendor: npm\n").unwrap();
    let recipe = Recipe::load(&folder).unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let pins = Pins::from_pins(&dir.path().join("toolchains"), []);
    let source_tree = "0".repeat(64);

    // A tree made before, and its memo, as `one` leaves them.
    let key = npm::key(&source_tree).unwrap();
    let tree = cache.root().join("vendor-npm").join(&key);
    std::fs::create_dir_all(tree.join("cache")).unwrap();
    std::fs::write(tree.join("cache/index"), "a package").unwrap();
    let scratch = cache.scratch().unwrap();
    let tar = context::write(&tree, &[], &[], &scratch.path().join("t.tar")).unwrap();
    let made = Vendored {
        at: Tool::Npm.context_path().into(),
        dir: tree.clone(),
        sha256: tar.sha256,
        by: "npm 10 (on the host)".into(),
    };
    let memo = cache.root().join("vendor-npm").join(format!("{key}.json"));
    std::fs::write(&memo, serde_json::to_string(&made).unwrap()).unwrap();
    let look = || vendored_before(&cache, &pins, &recipe, &folder, &source_tree).unwrap();
    assert_eq!(
        look(),
        [(Tool::Npm, Some(made.clone()))],
        "the tree as made"
    );

    std::fs::write(tree.join("cache/index"), "another package").unwrap();
    assert_eq!(
        look(),
        [(Tool::Npm, None)],
        "a changed tree is not the one hashed"
    );
    let err = vendor_all(&cache, &pins, &recipe, &folder, &source_tree).unwrap_err();
    assert!(
        format!("{err:#}").contains("cannot be vendored"),
        "it is made again, not taken from its memo: {err:#}"
    );
}
