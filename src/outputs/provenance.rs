//! Where a run's published values come from: its study file's sha256, and the claims whose published
//! value, unit or tolerance differ between two copies of a study — an archive's and the one a
//! checkout holds (`verify`), or two runs' (`compare`). A claim edited to match its measurement is
//! then named, however well it reproduces.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::study::{Claim, Study};

/// The sha256 of a study file's text, hex.
pub fn sha256(study_yaml: &str) -> String {
    crate::images::digest::bytes(study_yaml.as_bytes())
}

/// `results/<study>/study.yaml` under `repo`, when the checkout holds it.
pub fn in_checkout(repo: &Path, study: &Study) -> Option<PathBuf> {
    let path = repo.join("results").join(&study.id).join("study.yaml");
    path.is_file().then_some(path)
}

/// The checkout's copy of `study` (see [`in_checkout`]), read: its path, its text and the study.
pub fn checkout(repo: &Path, study: &Study) -> Result<Option<(PathBuf, String, Study)>> {
    let Some(path) = in_checkout(repo, study) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the checkout's study {}", path.display()))?;
    let theirs = Study::parse(&text).with_context(|| format!("in {}", path.display()))?;
    Ok(Some((path, text, theirs)))
}

/// One line per claim whose published value, unit or tolerance differs between `a` and `b`
/// (named `a_name` and `b_name`), and per claim only one of them makes; empty when they agree.
pub fn differences(a: &Study, a_name: &str, b: &Study, b_name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for ca in &a.claims {
        match b.claims.iter().find(|cb| cb.id == ca.id) {
            None => out.push(format!("claim {:?} is only in {a_name}", ca.id)),
            Some(cb) if published(ca) != published(cb) => out.push(format!(
                "claim {:?}: published {} in {a_name}, {} in {b_name}",
                ca.id,
                published(ca),
                published(cb)
            )),
            Some(_) => {}
        }
    }
    for cb in b
        .claims
        .iter()
        .filter(|cb| !a.claims.iter().any(|ca| ca.id == cb.id))
    {
        out.push(format!("claim {:?} is only in {b_name}", cb.id));
    }
    out
}

/// A claim's published value, unit and tolerance as one comparable text.
fn published(c: &Claim) -> String {
    format!(
        "{} {} (tolerance {})",
        json(&c.expected),
        json(&c.unit),
        json(&c.tolerance)
    )
}

/// Compact JSON of a schema value, as the study's own schema writes it.
fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::DEFAULT_STUDY;

    #[test]
    fn an_edited_published_value_or_tolerance_is_named() {
        let ours = Study::parse(DEFAULT_STUDY).unwrap();
        assert!(differences(&ours, "A", &ours, "B").is_empty());
        let edited = DEFAULT_STUDY
            .replacen("expected: 0.36", "expected: 0.42", 1)
            .replacen(
                "tolerance: {absolute: 2.0}",
                "tolerance: {absolute: 20.0}",
                1,
            )
            .replacen("  - id: go-stack-1m", "  - id: go-stack-2m", 1);
        let theirs = Study::parse(&edited).unwrap();
        let found = differences(&theirs, "the archive", &ours, "the checkout");
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(
            found[0].starts_with("claim \"rust-rss-1m\": published 0.42 \"GiB\"")
                && found[0].ends_with("in the checkout"),
            "{found:#?}"
        );
        assert!(
            found[1].contains("rust-lower-1m") && found[1].contains("20.0"),
            "{found:#?}"
        );
        assert_eq!(found[2], "claim \"go-stack-2m\" is only in the archive");
        assert_eq!(found[3], "claim \"go-stack-1m\" is only in the checkout");
        assert_eq!(sha256("x").len(), 64);
    }
}
