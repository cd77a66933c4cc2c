//! Package locks: every package a root filesystem pin installs, by name, exact version,
//! architecture and the sha256 of its `.deb` (`toolchains/<name>.lock`, beside the pin, made by
//! `parkbench pin lock <name>`). The root filesystem is built from exactly those files, so its tar
//! follows from the lock; a locked version no mirror serves any more is drift ([`Moved`]).

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{check_sha256, is_package_name};

/// The packages of one root filesystem, sorted by name and architecture.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lock {
    /// One entry per installed package.
    pub packages: Vec<Locked>,
}

/// One installed package, as `dpkg-query` and the downloaded `.deb` name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Locked {
    /// Binary package name (`libc6`).
    pub name: String,
    /// Exact Debian version (`2.36-9+deb12u14`).
    pub version: String,
    /// Debian architecture (`amd64`, `all`).
    pub arch: String,
    /// Priority as the mirror's package index gives it (`required`, `important`, `optional`):
    /// it, not the `.deb`'s own field, decides what the `minbase` variant installs.
    pub priority: String,
    /// sha256 of the `.deb` file.
    pub sha256: String,
}

/// A locked package whose version is no longer served (and that no cache or archive holds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moved {
    /// Binary package name.
    pub package: String,
    /// The version the lock names.
    pub locked: String,
    /// The version the apt sources serve now; `None` when they serve the package in no version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<String>,
    /// sha256 of the served `.deb` that stood in: what the run installed (absent in manifests
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// How the root filesystem of a pin differs from its lock: the packages that moved, and the tar
/// built with the served versions instead. Recorded in the build manifest, and so in `env.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    /// The root filesystem pin (`debian-base`).
    pub pin: String,
    /// How many packages its lock names.
    pub packages: usize,
    /// The locked packages whose version was neither cached nor served, and what stood in.
    pub moved: Vec<Moved>,
    /// sha256 of the tar built with the stand-ins (not the pin's).
    pub sha256: String,
}

impl Drift {
    /// The run's deviation: `rootfs debian-base: 1 of 137 packages differ from the pin: libc6 …`.
    pub fn deviation(&self) -> String {
        let moved: Vec<String> = self.moved.iter().map(|m| m.to_string()).collect();
        format!(
            "rootfs {}: {} of {} packages differ from the pin (toolchains/{}.lock), no longer \
             served: {}; its tar is sha256 {}",
            self.pin,
            self.moved.len(),
            self.packages,
            self.pin,
            moved.join(", "),
            self.sha256
        )
    }

    /// The moved packages the probes link or run with (the C library, the compiler runtime, the
    /// language runtimes), if any: they may move the numbers themselves.
    pub fn touching_probes(&self) -> Vec<&Moved> {
        self.moved
            .iter()
            .filter(|m| touches_probes(&m.package))
            .collect()
    }
}

impl fmt::Display for Moved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.served {
            Some(v) => write!(f, "{} {} → {v}", self.package, self.locked),
            None => write!(f, "{} {} → (not served)", self.package, self.locked),
        }
    }
}

impl Lock {
    /// Where the lock of the pin file `pin_file` (`toolchains/debian-base.yaml`) lives.
    pub fn path_beside(pin_file: &Path) -> PathBuf {
        pin_file.with_extension("lock")
    }

    /// The lock beside the pin file, if there is one.
    pub fn load_beside(pin_file: &Path) -> Result<Option<Lock>> {
        let path = Self::path_beside(pin_file);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        Self::parse(&text)
            .with_context(|| format!("in the package lock {}", path.display()))
            .map(Some)
    }

    /// Parses lock text: `#` comments, then one `name version arch priority sha256` line per
    /// package.
    pub fn parse(text: &str) -> Result<Lock> {
        let mut packages = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [name, version, arch, priority, sha256] = fields.as_slice() else {
                bail!(
                    "line {}: {line:?} is not `name version architecture priority sha256`",
                    i + 1
                );
            };
            // Every field reaches a command line (`apt-get download <name>=<version>`): none
            // may start like an option.
            let word = |w: &str| {
                w.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            };
            let ok = is_package_name(name) && is_version(version) && word(arch) && word(priority);
            if !ok {
                bail!("line {}: {line:?} names no Debian package", i + 1);
            }
            check_sha256(sha256).with_context(|| format!("line {}", i + 1))?;
            packages.push(Locked {
                name: name.to_string(),
                version: version.to_string(),
                arch: arch.to_string(),
                priority: priority.to_string(),
                sha256: sha256.to_string(),
            });
        }
        let lock = Lock::new(packages);
        if let Some(w) = lock
            .packages
            .windows(2)
            .find(|w| (&w[0].name, &w[0].arch) == (&w[1].name, &w[1].arch))
        {
            bail!("package {}:{} is listed twice", w[0].name, w[0].arch);
        }
        Ok(lock)
    }

    /// A lock of these packages, sorted.
    pub fn new(mut packages: Vec<Locked>) -> Lock {
        packages.sort();
        Lock { packages }
    }

    /// The lock file's text for pin `pin`: a header, then one line per package.
    pub fn to_text(&self, pin: &str) -> String {
        let mut out = format!(
            "# Package lock of toolchains/{pin}.yaml, made by `parkbench pin lock {pin}`.\n\
             # Every package its root filesystem installs: name, version, architecture, priority in\n\
             # the mirror's index, sha256 of the .deb. The root filesystem is built from exactly\n\
             # these files; make it again with `parkbench pin lock {pin}`, not by hand.\n"
        );
        for p in &self.packages {
            out.push_str(&format!(
                "{} {} {} {} {}\n",
                p.name, p.version, p.arch, p.priority, p.sha256
            ));
        }
        out
    }
}

/// A Debian version as the lock and `deb` pins write it.
pub fn is_version(v: &str) -> bool {
    v.starts_with(|c: char| c.is_ascii_alphanumeric())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+~:-".contains(c))
}

/// Packages whose version moves the probes' own numbers: the C library, the compiler's runtime
/// libraries, and the language runtimes the probes run on.
pub fn touches_probes(package: &str) -> bool {
    const EXACT: [&str; 4] = ["libc6", "libgcc-s1", "libstdc++6", "libc6-dev"];
    const PREFIXES: [&str; 6] = [
        "python3",
        "libpython3",
        "openjdk-",
        "gcc-",
        "libstdc++-",
        "libgcc-",
    ];
    EXACT.contains(&package) || PREFIXES.iter().any(|p| package.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "31d11c66df592f6de454d5a29f01ac9ce8268b5f676f29f21be6fd9922aad66d";

    #[test]
    fn round_trips_sorted() {
        let text = format!(
            "# c\nlibc6 2.36-9+deb12u14 amd64 optional {SHA}\nbase-files 12.4 amd64 required {SHA}\n"
        );
        let lock = Lock::parse(&text).unwrap();
        let names: Vec<_> = lock.packages.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["base-files", "libc6"]);
        assert_eq!(Lock::parse(&lock.to_text("debian-base")).unwrap(), lock);
    }

    #[test]
    fn bad_lines_name_the_line() {
        for (bad, says) in [
            ("libc6 2.36 amd64 SHA", "not `name version"),
            ("Libc6 2.36 amd64 optional SHA", "names no Debian package"),
            ("libc6 2.36 amd64 optional abc", "line 1"),
        ] {
            let err = format!("{:#}", Lock::parse(&bad.replace("SHA", SHA)).unwrap_err());
            assert!(err.contains(says), "{bad}: {err}");
        }
        let twice = format!("ab 1 amd64 required {SHA}\nab 2 amd64 required {SHA}\n");
        let err = Lock::parse(&twice).unwrap_err().to_string();
        assert!(err.contains("ab:amd64 is listed twice"), "{err}");
    }

    #[test]
    fn no_field_can_read_as_an_option() {
        // Each line reaches `apt-get download <name>=<version>`: a leading `-` would be an option.
        for bad in [
            "-oAPT::Get::Foo=1 2.36 amd64 optional SHA",
            "--print-uris 2.36 amd64 optional SHA",
            "+libc6 2.36 amd64 optional SHA",
            ".libc6 2.36 amd64 optional SHA",
            "a 2.36 amd64 optional SHA",
            "libc6 -2.36 amd64 optional SHA",
            "libc6 :2.36 amd64 optional SHA",
            "libc6 2.36 -amd64 optional SHA",
            "libc6 2.36 amd64 -optional SHA",
        ] {
            let err = format!("{:#}", Lock::parse(&bad.replace("SHA", SHA)).unwrap_err());
            assert!(err.contains("names no Debian package"), "{bad}: {err}");
        }
        let good = format!("libstdc++6 1:2.36-9+deb12u14~x amd64 optional {SHA}\n");
        assert_eq!(Lock::parse(&good).unwrap().packages.len(), 1);
    }

    #[test]
    fn moved_reads_as_an_arrow() {
        let m = Moved {
            sha256: None,
            package: "libc6".into(),
            locked: "2.36-9+deb12u14".into(),
            served: Some("2.36-9+deb12u15".into()),
        };
        assert_eq!(m.to_string(), "libc6 2.36-9+deb12u14 → 2.36-9+deb12u15");
        assert!(touches_probes("libc6") && touches_probes("python3.13"));
        assert!(!touches_probes("base-files"));
    }
}
