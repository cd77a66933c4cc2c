//! A study's seccomp profile (`protocol.seccomp`): the JSON file every probe container of the run is
//! started with, instead of the Engine's default profile. It is read once when the run starts,
//! copied into the run folder (`seccomp.json`, so that a resumed run and an archive use the very
//! bytes the run started with) and named with its sha256 in the environment record and the report.
//! Without one, containers get the Engine's default profile; seccomp is never turned off.

use std::path::Path;

use anyhow::{Context, Result, ensure};
use serde::{Deserialize, Serialize};

/// The profile as the environment records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seccomp {
    /// The file as the study names it.
    pub file: String,
    /// sha256 of its bytes, hex.
    pub sha256: String,
}

/// A profile read and checked: its record and its JSON text, as given to the Engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub record: Seccomp,
    pub json: String,
}

impl Profile {
    /// Reads `file` (absolute, or relative to the repository) and checks that it is a seccomp
    /// profile: a JSON object with a `defaultAction`.
    pub fn load(repo: &Path, file: &str) -> Result<Profile> {
        let path = repo.join(file);
        let what = || format!("protocol.seccomp {file:?} ({})", path.display());
        let bytes = std::fs::read(&path)
            .with_context(|| format!("reading {}: name a seccomp profile (JSON) file", what()))?;
        Self::parse(file, &bytes).with_context(what)
    }

    /// Checks profile bytes named `file`.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Profile> {
        let json = String::from_utf8(bytes.to_vec()).context("the profile is not UTF-8 text")?;
        let value: serde_json::Value = serde_json::from_str(&json)
            .context("the profile is not JSON (the Engine takes the JSON form of a profile)")?;
        ensure!(
            value.get("defaultAction").is_some_and(|a| a.is_string()),
            "the profile has no \"defaultAction\": a seccomp profile is a JSON object with \
             \"defaultAction\" and, usually, \"syscalls\" (see the Engine's default profile)"
        );
        Ok(Profile {
            record: Seccomp {
                file: file.to_string(),
                sha256: crate::images::digest::bytes(bytes),
            },
            json,
        })
    }
}

/// How the report names the profile of a run.
pub fn describe(record: Option<&Seccomp>) -> String {
    match record {
        None => "the Engine's default profile".into(),
        Some(s) => format!("{} (sha256 {})", s.file, s.sha256),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_json_with_a_default_action() {
        let p = Profile::parse("p.json", br#"{"defaultAction":"SCMP_ACT_ALLOW"}"#).unwrap();
        assert_eq!(p.record.sha256.len(), 64);
        assert!(p.json.starts_with('{'));
        for (bytes, says) in [
            (&b"not json"[..], "is not JSON"),
            (&br#"{"syscalls":[]}"#[..], "has no \"defaultAction\""),
            (&b"\xff"[..], "not UTF-8"),
        ] {
            let e = format!("{:#}", Profile::parse("p.json", bytes).unwrap_err());
            assert!(e.contains(says), "{e}");
        }
        let e = format!(
            "{:#}",
            Profile::load(Path::new("/nonexistent"), "x.json").unwrap_err()
        );
        assert!(e.contains("protocol.seccomp \"x.json\""), "{e}");
    }
}
