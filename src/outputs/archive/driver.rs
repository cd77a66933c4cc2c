//! The driver an archive carries: the very `parkbench` that writes the archive, when that build is
//! self-contained (linked statically, `just driver`), so that a reviewer can `check` and `verify`
//! the archive on x86-64 Linux with nothing installed. Beside it, a record of how it was built. An
//! archive written with `--no-driver` keeps the record alone: it names the driver by its sha256,
//! and `verify --rebuild-driver` rebuilds that file from `source/` and compares.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

use crate::files::digest;

/// The driver's member, below `<run-id>/`.
pub const MEMBER: &str = "parkbench";
/// The record's member, below `<run-id>/`.
pub const RECORD: &str = "parkbench.json";

/// How the driver an archive carries was built: `<run-id>/parkbench.json`, beside `<run-id>/parkbench`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriverRecord {
    /// SHA-256 of the driver that wrote the archive, lowercase hex: of `<run-id>/parkbench` when the
    /// archive carries it (the driver copies itself).
    pub sha256: String,
    /// parkbench's version.
    pub version: String,
    /// The target it was built for (`x86_64-unknown-linux-gnu`).
    pub target: String,
    /// `static`: glibc's C runtime linked in (`-C target-feature=+crt-static`); the file needs no
    /// shared library and no loader.
    pub linking: String,
    /// The compiler (`rustc -V`).
    pub rustc: String,
    /// The optimisation level of the build (`0` for `just driver`'s `driver` profile, whose hashing and
    /// compression crates are built at `3`).
    pub opt_level: String,
    /// The flags given to the compiler for the build (`RUSTFLAGS`).
    pub rustflags: String,
    /// The command that builds the same driver from the archive's `source/`.
    pub built_with: String,
    /// Where it was built: `pinned`, in the pinned Rust toolchain image (`just driver`), which
    /// `parkbench verify --rebuild-driver` rebuilds bit for bit from `source/`; `host`, with the
    /// machine's own cargo (no Engine at hand), which no other machine is claimed to reproduce.
    /// Empty in archives written before the field.
    #[serde(default)]
    pub built_in: String,
}

impl DriverRecord {
    fn fields(&self) -> [&str; 9] {
        [
            &self.sha256,
            &self.version,
            &self.target,
            &self.linking,
            &self.rustc,
            &self.opt_level,
            &self.rustflags,
            &self.built_with,
            &self.built_in,
        ]
    }
}

/// The running driver's own file, as the kernel keeps it: the bytes that run, even when the file
/// they were loaded from has been replaced since (a driver rebuilt during a run).
pub const RUNNING: &str = "/proc/self/exe";

/// [`DriverRecord::built_in`] of a build in the pinned toolchain image.
pub const PINNED: &str = "pinned";

/// Where this driver was built (`PARKBENCH_BUILT_IN` when it was compiled: [`PINNED`] or `host`).
const BUILT_IN: &str = env!("PARKBENCH_BUILT_IN");

/// The driver an archive names, as `check` found it: the one its record names, and when the
/// archive carries the file, that file.
#[derive(Debug, Clone, PartialEq)]
pub struct Carried {
    /// SHA-256 of the driver: of `<run-id>/parkbench`, the record's own, when it is inside.
    pub sha256: String,
    /// `<run-id>/parkbench.json`.
    pub record: DriverRecord,
    /// `<run-id>/parkbench` is in the archive; false for a record alone (`--no-driver`).
    pub inside: bool,
}

impl Carried {
    /// The line `check` prints: the command that rebuilds it names `archive` when given (quoted
    /// for a shell), else `ARCHIVE`.
    pub fn line(&self, archive: Option<&std::path::Path>) -> String {
        let built = if self.record.built_in == PINNED {
            let name = archive
                .map(|p| p.to_string_lossy().into_owned())
                .and_then(|p| shlex::try_quote(&p).ok().map(|q| q.into_owned()))
                .unwrap_or_else(|| "ARCHIVE".to_string());
            let compares = if self.inside { "" } else { " and compares" };
            format!(
                "built in the pinned Rust toolchain image: `parkbench verify --rebuild-driver {name}` rebuilds it{compares}"
            )
        } else {
            "a host build, not the reproducible one: no rebuild is claimed to give the same file"
                .to_string()
        };
        self.described(&built)
    }

    /// The line `verify --rebuild-driver` prints before it rebuilds: the driver, without the
    /// command that is already running.
    pub fn rebuilding_line(&self) -> String {
        self.described(if self.record.built_in == PINNED {
            "built in the pinned Rust toolchain image: rebuilding it from the archive's sources"
        } else {
            "a host build, which no rebuild is claimed to give: rebuilding it from the archive's \
             sources all the same"
        })
    }

    /// `driver: <which file> (<how it was built>; <built>)`.
    fn described(&self, built: &str) -> String {
        let r = &self.record;
        let which = if self.inside {
            format!("{MEMBER} sha256 {}, the one {RECORD} names", self.sha256)
        } else {
            format!("not inside; {RECORD} names sha256 {}", self.sha256)
        };
        format!(
            "driver: {which} ({} {}, {} linking, {}; {built})",
            r.version, r.target, r.linking, r.rustc,
        )
    }
}

impl std::fmt::Display for Carried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line(None))
    }
}

/// The driver an archive names, from the sha256 of its `parkbench` file (`None` when there is no
/// such file) and the bytes of its `parkbench.json` (`None` when absent): no file without a
/// record, and a file must be the one its record names.
pub fn carried(member: Option<&str>, record: Option<&[u8]>) -> Result<Option<Carried>> {
    let (member, record) = match (member, record) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            bail!(
                "{MEMBER}: a driver without its record {RECORD}: {}",
                super::MODIFIED
            )
        }
        (member, Some(record)) => (member, record),
    };
    let record: DriverRecord = serde_json::from_slice(record)
        .with_context(|| format!("{RECORD}: not a driver record: {}", super::MODIFIED))?;
    ensure!(
        record
            .fields()
            .iter()
            .all(|f| f.bytes().all(|b| (b' '..=b'~').contains(&b))),
        "{RECORD}: a field holds other characters than printable ASCII, which the kit never \
         writes there: {}",
        super::MODIFIED
    );
    ensure!(
        record.sha256.len() == 64
            && (record.sha256.bytes()).all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{RECORD}: its sha256 {:?} is not a SHA-256 in lowercase hex: {}",
        record.sha256,
        super::MODIFIED
    );
    if let Some(sha256) = member {
        ensure!(
            record.sha256 == sha256,
            "{MEMBER}: sha256 {sha256}, but {RECORD} names {}: the driver is not the one its record \
             describes; {}",
            record.sha256,
            super::MODIFIED
        );
    }
    Ok(Some(Carried {
        sha256: record.sha256.clone(),
        inside: member.is_some(),
        record,
    }))
}

/// The command that builds the driver archives carry (the Justfile's `driver` recipe).
pub const BUILD_COMMAND: &str = "RUSTFLAGS='-C target-feature=+crt-static' cargo build --locked \
     --profile driver --target x86_64-unknown-linux-gnu (`just driver`)";

/// How the driver is built in the pinned toolchain image: what `built_with` says of such a build.
pub const PINNED_COMMAND: &str = "parkbench driver (the second step of `just driver`): cargo build \
     --locked --offline --profile driver --target x86_64-unknown-linux-gnu in the pinned Rust \
     toolchain image, from source/ and its vendored crates";

/// True when this build is self-contained: glibc linked statically.
pub const SELF_CONTAINED: bool = cfg!(target_feature = "crt-static");

/// The running driver and its record, when it is self-contained; otherwise why it is not carried.
pub fn this_driver() -> Result<std::result::Result<(PathBuf, DriverRecord), String>> {
    if !SELF_CONTAINED {
        return Ok(Err(format!(
            "this parkbench is linked dynamically (a development build); the archive carries the \
             driver that writes it only when that driver is self-contained: build it with `just \
             driver` ({BUILD_COMMAND}), or pass --no-driver"
        )));
    }
    let exe = PathBuf::from(RUNNING);
    Ok(Ok((exe.clone(), record(&exe)?)))
}

/// The record of the driver at `exe`, built as this one.
fn record(exe: &Path) -> Result<DriverRecord> {
    Ok(DriverRecord {
        sha256: digest::file(exe)?,
        version: env!("CARGO_PKG_VERSION").into(),
        target: env!("PARKBENCH_TARGET").into(),
        linking: if SELF_CONTAINED { "static" } else { "dynamic" }.into(),
        rustc: env!("PARKBENCH_RUSTC").into(),
        opt_level: env!("PARKBENCH_OPT_LEVEL").into(),
        rustflags: env!("PARKBENCH_RUSTFLAGS").into(),
        built_with: if BUILT_IN == PINNED {
            PINNED_COMMAND
        } else {
            BUILD_COMMAND
        }
        .into(),
        built_in: BUILT_IN.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_names_this_build_and_hashes_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let exe = tmp.path().join("parkbench");
        std::fs::write(&exe, b"a driver").unwrap();
        let r = record(&exe).unwrap();
        assert_eq!(r.sha256, digest::bytes(b"a driver"));
        assert_eq!(r.target, "x86_64-unknown-linux-gnu");
        assert!(r.rustc.starts_with("rustc "), "{}", r.rustc);
        assert_eq!(r.linking == "static", SELF_CONTAINED);
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<DriverRecord>(&json).unwrap(), r);
    }

    #[test]
    fn a_dynamic_build_is_not_carried_and_says_how_to_get_one() {
        if SELF_CONTAINED {
            return;
        }
        let why = this_driver().unwrap().unwrap_err();
        assert!(
            why.contains("just driver") && why.contains("--no-driver"),
            "{why}"
        );
    }
}
