//! Where a run's published values come from: its study file's sha256, and what differs between
//! two copies of a study — an archive's and the one a checkout holds (`verify`), or two runs'
//! (`compare`): a claim's published value, unit or tolerance, anything else a claim judges by (its
//! text aside), a probe's definition or the protocol. A claim edited to match its measurement, or
//! pointed at another probe, scale or statistic, is then named, however well it reproduces.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::study::{Claim, Study};

/// The sha256 of a study file's text, hex.
pub fn sha256(study_yaml: &str) -> String {
    crate::files::digest::bytes(study_yaml.as_bytes())
}

/// `results/<study>/study.yaml` under `repo`, when the checkout holds it.
pub fn in_checkout(repo: &Path, study: &Study) -> Option<PathBuf> {
    in_checkout_by_id(repo, &study.id)
}

/// `results/<id>/study.yaml` under `repo`, when the checkout holds it; `None` for an id no study
/// may have ([`crate::study::valid_id`]: the id may come from an archive).
pub fn in_checkout_by_id(repo: &Path, id: &str) -> Option<PathBuf> {
    let path = repo.join("results").join(id).join(crate::study::FILE);
    (crate::study::valid_id(id) && path.is_file()).then_some(path)
}

/// The checkout's copy of `study` (see [`in_checkout`]), read: its path, its text and the study.
pub fn checkout(repo: &Path, study: &Study) -> Result<Option<(PathBuf, String, Study)>> {
    checkout_by_id(repo, &study.id)
}

/// The checkout's copy of the study `id` (see [`in_checkout_by_id`]), read: its path, its text and
/// the study.
pub fn checkout_by_id(repo: &Path, id: &str) -> Result<Option<(PathBuf, String, Study)>> {
    let Some(path) = in_checkout_by_id(repo, id) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the checkout's study {}", path.display()))?;
    let theirs = Study::parse(&text).with_context(|| format!("in {}", path.display()))?;
    Ok(Some((path, text, theirs)))
}

/// One line per claim whose published value, unit or tolerance differs between `a` and `b`
/// (named `a_name` and `b_name`), per other field of a claim that differs (what it judges: probe,
/// tasks, stat, metric, than, percentile, requires, …; only its `text`, the article's words, may
/// differ), per field of a probe or of the protocol that differs (what is measured: image,
/// program, args, env, scales, …), and per claim or probe only one of them has; empty when they
/// agree.
pub fn differences(a: &Study, a_name: &str, b: &Study, b_name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for ca in &a.claims {
        let Some(cb) = b.claims.iter().find(|cb| cb.id == ca.id) else {
            out.push(format!("claim {:?} is only in {a_name}", ca.id));
            continue;
        };
        out.extend(published_differs(ca, a_name, cb, b_name));
        let what = format!("claim {:?}", ca.id);
        let skip = ["id", "text", "expected", "unit", "tolerance"];
        out.extend(fields(&what, ca, a_name, cb, b_name, &skip));
    }
    for cb in b
        .claims
        .iter()
        .filter(|cb| !a.claims.iter().any(|ca| ca.id == cb.id))
    {
        out.push(format!("claim {:?} is only in {b_name}", cb.id));
    }
    for pa in &a.probes {
        let Some(pb) = b.probes.iter().find(|pb| pb.id == pa.id) else {
            out.push(format!("probe {:?} is only in {a_name}", pa.id));
            continue;
        };
        let what = format!("probe {:?}", pa.id);
        out.extend(fields(&what, pa, a_name, pb, b_name, &["id"]));
    }
    for pb in b
        .probes
        .iter()
        .filter(|pb| !a.probes.iter().any(|pa| pa.id == pb.id))
    {
        out.push(format!("probe {:?} is only in {b_name}", pb.id));
    }
    out.extend(fields(
        "protocol",
        &a.protocol,
        a_name,
        &b.protocol,
        b_name,
        &[],
    ));
    out
}

/// The line naming how claim `a`'s published value, unit or tolerance differs from `b`'s (in
/// `a_name` and `b_name`); `None` when they agree.
pub fn published_differs(a: &Claim, a_name: &str, b: &Claim, b_name: &str) -> Option<String> {
    (published(a) != published(b)).then(|| {
        format!(
            "claim {:?}: published {} in {a_name}, {} in {b_name}",
            a.id,
            published(a),
            published(b)
        )
    })
}

/// One line per field, but those in `skip`, whose serialised value differs between `a` and `b`
/// (a field only one of them writes counts as null in the other).
fn fields<T: serde::Serialize>(
    what: &str,
    a: &T,
    a_name: &str,
    b: &T,
    b_name: &str,
    skip: &[&str],
) -> Vec<String> {
    let object = |v: &T| match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (a, b) = (object(a), object(b));
    let null = serde_json::Value::Null;
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| !skip.contains(&k.as_str()))
        .filter_map(|k| {
            let (va, vb) = (a.get(k).unwrap_or(&null), b.get(k).unwrap_or(&null));
            (va != vb).then(|| format!("{what}: {k} {va} in {a_name}, {vb} in {b_name}"))
        })
        .collect()
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

    #[test]
    fn a_claim_re_pointed_or_a_probe_redefined_is_named() {
        let ours = Study::parse(DEFAULT_STUDY).unwrap();
        let go_rss = "    text: At 1M tasks Go's process RSS is about 2.56 GiB (median of 3 processes).\n    stat: rss_median\n    probe: go\n";
        assert!(DEFAULT_STUDY.contains(go_rss));
        let edited = DEFAULT_STUDY
            // Another text, the same claim: not a difference.
            .replacen(
                "At 1M tasks Go's process RSS is about 2.56 GiB",
                "Go's RSS at 1M tasks is about 2.56 GiB",
                1,
            )
            // The Rust claim judged on the Go probe, at another scale, by another statistic.
            .replacen(
                "    stat: rss_median\n    probe: rust-tokio\n    tasks: 1000000\n",
                "    stat: baseline_median\n    probe: go\n    tasks: 500000\n",
                1,
            )
            .replacen("      GOGC: \"100\"", "      GOGC: \"off\"", 1)
            .replacen("  repeats: 3\n", "  repeats: 5\n", 1);
        let theirs = Study::parse(&edited).unwrap();
        let found = differences(&theirs, "A", &ours, "B");
        let has = |s: &str| found.iter().any(|l| l.contains(s));
        assert!(
            has("claim \"rust-rss-1m\": probe \"go\" in A, \"rust-tokio\" in B")
                && has("claim \"rust-rss-1m\": tasks 500000 in A, 1000000 in B")
                && has("claim \"rust-rss-1m\": stat \"baseline_median\" in A, \"rss_median\" in B")
                && has("probe \"go\": env {\"GOGC\":\"off\",\"GOMAXPROCS\":\"{workers}\"} in A")
                && has("protocol: repeats 5 in A, 3 in B"),
            "{found:#?}"
        );
        assert_eq!(found.len(), 5, "{found:#?}");
        assert!(!has("go-rss-1m"), "only its text changed: {found:#?}");
    }
}
