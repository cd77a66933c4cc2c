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
        std::fs::write(folder.join(crate::images::recipe::FILE), yaml).unwrap();
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
