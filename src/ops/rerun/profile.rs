//! The seccomp profile an archive carries, judged before a rerun starts anything with it: one that
//! lets containers do more than the Engine's default profile
//! ([`Profile::beyond_default`](crate::run::seccomp::Profile::beyond_default)) is refused, unless
//! accepted (`--accept-seccomp-from-archive`), and then it is a deviation and a validity warning of
//! the new run.

use anyhow::{Result, bail};

use super::Source;
use crate::run::seccomp::Profile;
use crate::run::warning::{self, Warning};

/// The archive's profile as the rerun runs it, with what it brings to the new run's record.
#[derive(Debug, Default)]
pub struct Seccomp {
    /// The profile, when the archived study names one (else the Engine's default applies).
    pub profile: Option<Profile>,
    /// The deviation of the new run, when the profile goes beyond the Engine's default.
    pub deviation: Option<String>,
    /// The validity warning of the new run, likewise.
    pub warning: Option<Warning>,
}

/// Reads and judges the archive's profile; refuses one beyond the Engine's default unless `accept`.
pub fn judge(source: &Source, accept: bool) -> Result<Seccomp> {
    let Some(profile) = source.seccomp()? else {
        return Ok(Seccomp::default());
    };
    let beyond = profile.beyond_default();
    if beyond.is_empty() {
        return Ok(Seccomp {
            profile: Some(profile),
            ..Seccomp::default()
        });
    }
    let named = format!(
        "the archive's seccomp profile {} (sha256 {})",
        crate::text::printable(&profile.record.file),
        profile.record.sha256
    );
    if !accept {
        let lines: Vec<String> = beyond.iter().map(|b| format!("  - {b}")).collect();
        bail!(
            "{}: {named} lets containers do more than the Engine's default profile:\n{}\n\
             refused before anything is loaded: the archive's programs would run with it. Pass \
             --accept-seccomp-from-archive to rerun with it anyway (recorded as a deviation and a \
             validity warning of the new run)",
            source.path.display(),
            lines.join("\n")
        );
    }
    eprintln!(
        "warning: {} goes beyond the Engine's default profile; accepted",
        crate::text::printable(&named)
    );
    Ok(Seccomp {
        deviation: Some(format!(
            "{named} lets containers do more than the Engine's default profile, accepted with \
             --accept-seccomp-from-archive: {}",
            beyond.join("; ")
        )),
        warning: Some(warning::seccomp_beyond_default(
            &profile.record.file,
            &beyond,
        )),
        profile: Some(profile),
    })
}
