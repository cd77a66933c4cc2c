//! A study's seccomp profile (`protocol.seccomp`): the JSON file every probe container of the run is
//! started with, instead of the Engine's default profile. It is read once when the run starts,
//! copied into the run folder (`seccomp.json`, so that a resumed run and an archive use the very
//! bytes the run started with) and named with its sha256 in the environment record and the report.
//! Without one, containers get the Engine's default profile; seccomp is never turned off.
//!
//! A profile that comes with someone else's archive is read strictly and judged before a rerun
//! uses it ([`Profile::beyond_default`]) against a pinned copy of the Engine's default profile
//! (`seccomp/engine-default.json`); whatever the file, the Engine is given the kit's own
//! re-serialisation of what was read and judged ([`Profile::json`]), never the file's text.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

mod judge;
mod schema;

pub use judge::{ENGINE_DEFAULT, ENGINE_DEFAULT_SHA256};
pub use schema::{DENYING, Document};

/// The profile as the environment records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seccomp {
    /// The file as the study names it.
    pub file: String,
    /// sha256 of its bytes, hex.
    pub sha256: String,
}

/// A profile read and checked: its record, its text as written, and what was read of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub record: Seccomp,
    /// The file's text, as the run folder keeps it.
    pub text: String,
    /// What the kit read of it.
    pub document: Document,
    /// What the Engine is given: [`Document::canonical`] of `document`.
    pub json: String,
}

impl Profile {
    /// Reads `file` (absolute, or relative to the repository) and checks that it is a seccomp
    /// profile: a JSON object with a `defaultAction`, in the Engine's schema.
    pub fn load(repo: &Path, file: &str) -> Result<Profile> {
        let path = repo.join(file);
        let what = || format!("protocol.seccomp {file:?} ({})", path.display());
        let bytes = std::fs::read(&path)
            .with_context(|| format!("reading {}: name a seccomp profile (JSON) file", what()))?;
        Self::parse(file, &bytes).with_context(what)
    }

    /// Checks profile bytes named `file`: JSON in the Engine's schema, every key known, spelt
    /// exactly and given once.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Profile> {
        let text = String::from_utf8(bytes.to_vec()).context("the profile is not UTF-8 text")?;
        serde_json::from_str::<serde_json::Value>(&text)
            .context("the profile is not JSON (the Engine takes the JSON form of a profile)")?;
        let document = Document::parse(&text).context(
            "the profile is not a seccomp profile the kit can read: a JSON object with \
             \"defaultAction\" and, usually, \"syscalls\" (see the Engine's default profile)",
        )?;
        Ok(Profile {
            record: Seccomp {
                file: file.to_string(),
                sha256: crate::files::digest::bytes(bytes),
            },
            json: document.canonical(),
            document,
            text,
        })
    }

    /// What the profile lets a container do that the Engine's default profile does not, one line
    /// each; empty when nothing is found: a `defaultAction` that does not deny, and every syscall
    /// a rule lets through that the default does not, or lets through under a weaker argument
    /// filter than the default's.
    pub fn beyond_default(&self) -> Vec<String> {
        judge::beyond_default(&self.document)
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
mod tests;
