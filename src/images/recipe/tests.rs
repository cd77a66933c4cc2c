use super::*;

const FULL: &str = r#"
# Build args naming parent images.
parents: {BASE: base, RUST: toolchain-rust, SAMPLER: sampler}
artifacts: {rust.tar: rust}
shared: {src/lib.rs: probe-lib/lib.rs}
vendor: true
probe: true
binaries: [/usr/local/bin/probe, /usr/local/bin/sampler]
versions: {"rustc -vV": [rustc, -vV], "cargo -V": {in: RUST, run: [cargo, -V]}}
"#;

#[test]
fn parses_every_field() {
    let r = Recipe::parse("rust-tokio", FULL).unwrap();
    assert_eq!(r.name, "rust-tokio");
    assert_eq!(
        r.parents.iter().collect::<Vec<_>>(),
        [
            (&"BASE".to_string(), &"base".to_string()),
            (&"RUST".to_string(), &"toolchain-rust".to_string()),
            (&"SAMPLER".to_string(), &"sampler".to_string())
        ]
    );
    assert_eq!(r.artifacts["rust.tar"], "rust");
    assert_eq!(r.shared["src/lib.rs"], "probe-lib/lib.rs");
    assert!(r.vendor.has(Tool::Cargo) && r.probe);
    assert_eq!(
        r.binaries,
        ["/usr/local/bin/probe", "/usr/local/bin/sampler"]
    );
    assert_eq!(
        r.versions["rustc -vV"],
        VersionCommand::in_final(&["rustc", "-vV"])
    );
    assert_eq!(r.versions["cargo -V"].run, ["cargo", "-V"]);
    assert_eq!(r.versions["cargo -V"].parent.as_deref(), Some("RUST"));
    let empty = Recipe::parse("x", "# nothing\n").unwrap();
    assert_eq!(
        empty,
        Recipe {
            name: "x".into(),
            ..Recipe::default()
        }
    );
}

#[test]
fn unknown_field_reports_line_and_column() {
    let err = format!(
        "{:#}",
        Recipe::parse("x", "probe: true\n  \nprobes: 1\n").unwrap_err()
    );
    assert!(
        err.starts_with("docker/x/image.yaml:3:1: unknown field `probes`"),
        "{err}"
    );
}

#[test]
fn bad_values_are_named_with_their_line_and_column() {
    let cases = [
        (
            "parents: {base: base, 1X: a}",
            "1:27: parents: \"1X\" is not a build arg",
        ),
        (
            "artifacts: {../rust.tar: rust}",
            "1:26: artifacts: \"../rust.tar\" must be a plain file name",
        ),
        (
            "artifacts: {vendor: rust}",
            "1:21: artifacts: \"vendor\" must be a plain file name",
        ),
        (
            "binaries: [usr/bin/x]",
            "1:12: binaries: \"usr/bin/x\" must be an absolute path",
        ),
        (
            "versions: {go: []}",
            "1:16: versions: \"go\" has no command",
        ),
        (
            "versions: {go: {run: []}}",
            "1:16: versions: \"go\" has no command",
        ),
        (
            "parents: {BASE: base, GO: toolchain-go}\nversions: {go: {in: GOLANG, run: [go, version]}}",
            "2:21: versions: \"go\" runs in \"GOLANG\", which is no build arg of this recipe's parents (BASE, GO)",
        ),
        (
            "versions: {go: {ran: [go]}}",
            "1:17: versions.go: unknown field `ran`, expected one of `run`, `in`, `pattern`",
        ),
        (
            "versions: {go: go version}",
            "1:16: versions.go: invalid type: string \"go version\", expected a command as [program, arg, …]",
        ),
        (
            "probe: true\nbinaries:\n  - /bin/a\n  - bin/b\n",
            "4:5: binaries: \"bin/b\"",
        ),
        ("vendor: yes please", "1:9: vendor: unknown tool"),
        (
            "build_estimate: {minutes: 0, cpus: 2}",
            "1:17: build_estimate: {minutes: 0, cpus: 2}: both must be at least 1",
        ),
        (
            "build_estimate: {minutes: 47}",
            "1:17: build_estimate: missing field `cpus`",
        ),
        (
            "shared: {../lib.rs: lib/lib.rs}",
            "1:21: shared: \"../lib.rs\" must be a relative path in the build context",
        ),
        (
            "shared: {vendor/x/lib.rs: lib/lib.rs}",
            "1:27: shared: \"vendor/x/lib.rs\" must be a relative path in the build context, not under vendor/",
        ),
        (
            "shared: {src/target/lib.rs: lib/lib.rs}",
            "1:29: shared: \"src/target/lib.rs\" must be a relative path in the build context, not under vendor/, target/",
        ),
        (
            "shared: {image.yaml: lib/image.yaml}",
            "1:22: shared: \"image.yaml\" must be a relative path in the build context, not under vendor/, target/ or .git/, not image.yaml",
        ),
        (
            "artifacts: {rust.tar: rust}\nshared: {rust.tar: lib/rust.tar}",
            "2:20: shared: \"rust.tar\" must be a relative path in the build context, not under vendor/, target/ or .git/, not image.yaml, and not an artifact's name",
        ),
        (
            "shared: {src/lib.rs: ../lib.rs}",
            "1:22: shared: \"src/lib.rs\": \"../lib.rs\" must be a relative path under the folder of the image folders (e.g. probe-lib/lib.rs), without `..`",
        ),
        (
            "shared: {src/lib.rs: /lib/lib.rs}",
            "1:22: shared: \"src/lib.rs\": \"/lib/lib.rs\" must be a relative path",
        ),
    ];
    for (text, want) in cases {
        let err = format!("{:#}", Recipe::parse("x", text).unwrap_err());
        assert!(
            err.starts_with(&format!("docker/x/image.yaml:{want}")),
            "{text}: {err}"
        );
    }
    // The folder's name is not written in the file: no line.
    let err = format!("{:#}", Recipe::parse("Rust", "").unwrap_err());
    assert!(
        err.starts_with("docker/Rust/image.yaml: image name \"Rust\""),
        "{err}"
    );
}

#[test]
fn discovery_needs_a_recipe_beside_every_dockerfile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (folder, files) in [
        ("b-probe", &["Dockerfile", RECIPE][..]),
        ("a-tool", &["Dockerfile", RECIPE][..]),
        ("notes", &["README.md"][..]),
    ] {
        std::fs::create_dir_all(d.join(folder)).unwrap();
        for f in files {
            std::fs::write(d.join(folder).join(f), "").unwrap();
        }
    }
    std::fs::write(d.join("README.md"), "").unwrap();
    let names: Vec<_> = discover(d).unwrap().into_iter().map(|r| r.name).collect();
    assert_eq!(names, ["a-tool", "b-probe"]);

    std::fs::create_dir_all(d.join("c-new")).unwrap();
    std::fs::write(d.join("c-new/Dockerfile"), "").unwrap();
    let err = format!("{:#}", discover(d).unwrap_err());
    assert!(
        err.contains("c-new") && err.contains("no image.yaml"),
        "{err}"
    );
    std::fs::write(d.join("c-new").join(RECIPE), "vendor: true\n").unwrap();
    let err = format!("{:#}", discover(d).unwrap_err());
    assert!(
        err.contains("c-new") && err.contains("no Cargo.lock"),
        "{err}"
    );
    std::fs::remove_file(d.join("c-new/Dockerfile")).unwrap();
    let err = format!("{:#}", discover(d).unwrap_err());
    assert!(
        err.contains("c-new") && err.contains("no Dockerfile"),
        "{err}"
    );
}

#[test]
fn checked_in_recipes_load() {
    let docker = Path::new(env!("CARGO_MANIFEST_DIR")).join("docker");
    let recipes = discover(&docker).unwrap();
    for name in [
        "toolchain-rust",
        "toolchain-go",
        "sampler",
        "rust-tokio",
        "go",
    ] {
        assert!(recipes.iter().any(|r| r.name == name), "{name}");
    }
}

#[test]
fn a_variant_starts_from_its_base_folder_and_names_a_plain_one() {
    let repo = tempfile::tempdir().unwrap();
    let d = repo.path().join("docker");
    write_at(&d, "probe/Dockerfile", "FROM scratch\n");
    write_at(&d, "probe/Cargo.lock", "# base\n");
    write_at(&d, "probe/src/main.rs", "fn main() {}\n");
    write_at(&d, "probe/image.yaml", "vendor: true\n");
    write_at(
        &d,
        "probe.alt/image.yaml",
        "variant_of: probe\nvendor: true\non_demand: true\n",
    );
    write_at(&d, "probe.alt/src/main.rs", "fn main() { /* alt */ }\n");
    let recipes = discover(&d).unwrap();
    let alt = recipes.iter().find(|r| r.name == "probe.alt").unwrap();
    assert_eq!(alt.cargo_lock(&d), d.join("probe/Cargo.lock"));
    let scratch = tempfile::tempdir().unwrap();
    let merged = crate::images::build::source_dir(repo.path(), alt, scratch.path()).unwrap();
    let read = |rel: &str| std::fs::read_to_string(merged.join(rel)).unwrap();
    assert_eq!(read("Dockerfile"), "FROM scratch\n");
    assert_eq!(read("Cargo.lock"), "# base\n");
    assert_eq!(read("src/main.rs"), "fn main() { /* alt */ }\n");
    assert!(!merged.join(RECIPE).exists(), "no recipe in the context");
    write_at(&d, "probe.bad/image.yaml", "variant_of: nope\n");
    let err = format!("{:#}", discover(&d).unwrap_err());
    assert!(
        err.contains("probe.bad") && err.contains("\"nope\" is not an image folder"),
        "{err}"
    );
    write_at(
        &d,
        "probe.bad/image.yaml",
        "on_demand: true\nvariant_of: probe.alt\n",
    );
    let err = format!("{:#}", discover(&d).unwrap_err());
    let file = d.join("probe.bad").join(RECIPE);
    assert!(
        err.starts_with(&format!(
            "{}:2:13: variant_of: \"probe.alt\" is itself a variant",
            file.display()
        )),
        "{err}"
    );
}

#[test]
fn a_shared_file_replaces_the_stand_in_in_the_context() {
    let repo = tempfile::tempdir().unwrap();
    let d = repo.path().join("docker");
    write_at(&d, "probe-lib/lib.rs", "pub fn shared() {}\n");
    write_at(&d, "probe/Dockerfile", "FROM scratch\n");
    write_at(&d, "probe/src/main.rs", "fn main() {}\n");
    write_at(&d, "probe/src/lib.rs", "// a stand-in for host builds\n");
    write_at(&d, "probe/target/debug/big", "build output\n");
    write_at(
        &d,
        "probe/image.yaml",
        "shared: {src/lib.rs: probe-lib/lib.rs, src/more/util.rs: probe-lib/lib.rs}\n",
    );
    let recipes = discover(&d).unwrap();
    assert_eq!(
        recipes.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["probe"],
        "a folder of shared files is no image"
    );
    let scratch = tempfile::tempdir().unwrap();
    let dir = crate::images::build::source_dir(repo.path(), &recipes[0], scratch.path()).unwrap();
    let tar = scratch.path().join("context.tar");
    crate::images::context::write(&dir, &[], &[RECIPE], &tar).unwrap();
    let mut members = BTreeMap::new();
    for entry in tar::Archive::new(std::fs::File::open(&tar).unwrap())
        .entries()
        .unwrap()
    {
        let mut entry = entry.unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
        members.insert(entry.path().unwrap().display().to_string(), text);
    }
    assert_eq!(members["src/lib.rs"], "pub fn shared() {}\n");
    assert_eq!(members["src/more/util.rs"], "pub fn shared() {}\n");
    assert_eq!(members["src/main.rs"], "fn main() {}\n");
    assert!(
        !members.contains_key(RECIPE) && !members.keys().any(|m| m.starts_with("target")),
        "{members:?}"
    );
    let own = std::fs::read_to_string(d.join("probe/src/lib.rs")).unwrap();
    assert_eq!(
        own, "// a stand-in for host builds\n",
        "the folder is left as it is"
    );
}

#[test]
fn a_missing_shared_file_is_a_load_error() {
    let repo = tempfile::tempdir().unwrap();
    let d = repo.path().join("docker");
    write_at(&d, "probe/Dockerfile", "FROM scratch\n");
    write_at(
        &d,
        "probe/image.yaml",
        "shared: {src/lib.rs: probe-lib/lib.rs}\n",
    );
    let err = format!("{:#}", discover(&d).unwrap_err());
    assert!(
        err.contains("docker/probe/image.yaml")
            && err.contains("shared: \"src/lib.rs\" names")
            && err.contains("probe-lib/lib.rs, which is not a file"),
        "{err}"
    );
    write_at(&d, "probe-lib/lib.rs", "pub fn shared() {}\n");
    discover(&d).unwrap();
    write_at(&d, "probe.alt/image.yaml", "variant_of: probe\n");
    let err = format!("{:#}", discover(&d).unwrap_err());
    assert!(
        err.contains("probe.alt")
            && err.contains("lays shared files")
            && err.contains("src/lib.rs"),
        "{err}"
    );
    write_at(
        &d,
        "probe.alt/image.yaml",
        "variant_of: probe\nshared: {src/lib.rs: probe-lib/lib.rs}\n",
    );
    discover(&d).unwrap();
}

fn write_at(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_version_pattern_must_compile_and_have_a_group() {
    let parse = |pattern: &str| {
        let yaml = format!("versions:\n  tool: {{run: [tool, -V], pattern: '{pattern}'}}\n");
        Recipe::parse("t", &yaml).map_err(|e| format!("{e:#}"))
    };
    let recipe = parse(r"tool (\S+)").unwrap();
    assert_eq!(
        recipe.versions["tool"].pattern.as_deref(),
        Some(r"tool (\S+)")
    );
    let err = parse(r"tool \S+").unwrap_err();
    assert!(
        err.contains("docker/t/image.yaml:2:") && err.contains("has no group"),
        "{err}"
    );
    let err = parse(r"tool (\S+").unwrap_err();
    assert!(err.contains("is no regular expression"), "{err}");
    // Written back in the long form, with its pattern.
    let yaml = serde_yaml::to_string(&recipe).unwrap();
    assert_eq!(Recipe::parse("t", &yaml).unwrap().versions, recipe.versions);
}
