//! `SHA256SUMS`: one line per regular member, `<64 lowercase hex digits>  <path>`, the path relative
//! to the run folder, sorted by path (byte order). It is the format `sha256sum -c` reads, so an
//! extracted archive can be checked with standard tools too.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail, ensure};

use super::MODIFIED;
use crate::files::tarball;

/// File name of the checksum list, directly inside the run folder.
pub const NAME: &str = "SHA256SUMS";
/// Largest SHA256SUMS accepted (about 80,000 lines).
pub const LIMIT: u64 = 8 << 20;

/// One line of SHA256SUMS, with its 1-based line number.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub number: usize,
    pub sha256: String,
    pub path: String,
}

/// Renders the list from path → hex SHA-256; a `BTreeMap` keeps the lines sorted by path.
pub fn render(sums: &BTreeMap<String, String>) -> String {
    sums.iter()
        .map(|(path, sha)| format!("{sha}  {path}\n"))
        .collect()
}

/// Parses the list of the run folder `root`. Errors name `<root>/SHA256SUMS` and the line.
pub fn parse(root: &str, text: &[u8]) -> Result<Vec<Line>> {
    let Ok(text) = std::str::from_utf8(text) else {
        bail!("{root}/{NAME} is not UTF-8 text: the archive was modified or is corrupt");
    };
    let mut lines = Vec::new();
    let mut first_seen = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = parse_line(raw, i + 1)
            .map_err(|why| anyhow::anyhow!("{root}/{NAME} line {}: {why}: {raw:?}", i + 1))?;
        if let Some(first) = first_seen.insert(line.path.clone(), line.number) {
            bail!(
                "{root}/{NAME} line {}: {} is listed twice (first on line {first})",
                line.number,
                line.path
            );
        }
        lines.push(line);
    }
    Ok(lines)
}

/// Compares SHA256SUMS with the hashes; returns how many lines matched.
pub fn verify(
    root: &str,
    listing: &[u8],
    files: &BTreeMap<String, String>,
    paths: &BTreeSet<String>,
) -> Result<usize> {
    let lines = parse(root, listing)?;
    let listed: BTreeSet<&str> = lines.iter().map(|l| l.path.as_str()).collect();
    for line in &lines {
        let (n, path) = (line.number, &line.path);
        let Some(actual) = files.get(path) else {
            if paths.contains(&format!("{root}/{path}")) {
                bail!(
                    "{root}/{NAME} line {n} lists {root}/{path}, which is not a file: {MODIFIED}"
                );
            }
            bail!(
                "{root}/{NAME} line {n} lists {root}/{path}, which is not in the archive: {MODIFIED}"
            );
        };
        ensure!(
            *actual == line.sha256,
            "{root}/{path}: sha256 mismatch: {NAME} says {}, member has {actual}: {MODIFIED}",
            line.sha256
        );
    }
    for path in files.keys() {
        ensure!(
            path == NAME || listed.contains(path.as_str()),
            "{root}/{path}: not listed in {NAME}: a file was added after the archive was written; {MODIFIED}"
        );
    }
    Ok(lines.len())
}

fn parse_line(raw: &str, number: usize) -> Result<Line, &'static str> {
    let (sha256, rest) = raw
        .split_at_checked(64)
        .ok_or("expected `<64 hex digits>  <path>`")?;
    if !sha256
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err("expected 64 lowercase hex digits");
    }
    let path = rest
        .strip_prefix("  ")
        .or_else(|| rest.strip_prefix(" *"))
        .ok_or("expected two spaces after the hash")?;
    tarball::components(path)?;
    if path == NAME {
        return Err("SHA256SUMS cannot list itself");
    }
    Ok(Line {
        number,
        sha256: sha256.to_string(),
        path: path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::check;
    use super::super::fixture::{Fixture, Raw, read_raw, write_raw};
    use super::*;

    /// Checks `entries` written as an archive and returns the error.
    fn rejected(fx: &Fixture, entries: &[Raw]) -> String {
        let archive = fx.path("hand-built.tar.gz");
        write_raw(entries, &archive);
        format!("{:#}", check(&archive).unwrap_err())
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn render_sorts_and_parse_reads_back() {
        let sums = BTreeMap::from([
            ("z.txt".to_string(), A.to_string()),
            ("a/b".to_string(), B.to_string()),
        ]);
        let text = render(&sums);
        assert_eq!(text, format!("{B}  a/b\n{A}  z.txt\n"));
        let lines = parse("run", text.as_bytes()).unwrap();
        assert_eq!(
            lines[0],
            Line {
                number: 1,
                sha256: B.into(),
                path: "a/b".into()
            }
        );
        assert_eq!(lines[1].number, 2);
    }

    #[test]
    fn binary_mode_marker_is_accepted() {
        let lines = parse("run", format!("{A} *x\n").as_bytes()).unwrap();
        assert_eq!(lines[0].path, "x");
    }

    #[test]
    fn malformed_lines_are_named_by_number() {
        for (text, wanted) in [
            (
                format!("{A}  ok\nshort  x\n"),
                "run/SHA256SUMS line 2: expected",
            ),
            (format!("{A}  ok\n\n"), "run/SHA256SUMS line 2"),
            (
                format!("{}  x\n", A.to_uppercase()),
                "line 1: expected 64 lowercase hex",
            ),
            (format!("{A} x\n"), "line 1: expected two spaces"),
            (format!("{A}  ../x\n"), "line 1: `..` component"),
            (format!("{A}  /etc/x\n"), "line 1: absolute path"),
            (format!("{A}  SHA256SUMS\n"), "cannot list itself"),
            (
                format!("{A}  x\n{B}  x\n"),
                "line 2: x is listed twice (first on line 1)",
            ),
        ] {
            let err = parse("run", text.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(wanted), "{err:?} lacks {wanted:?}");
        }
    }

    #[test]
    fn sha256sums_problems_are_named() {
        let fx = Fixture::new();
        let fresh = read_raw(&fx.write().path);
        let sums_text = String::from_utf8(fresh.last().unwrap().data.clone()).unwrap();
        let with_sums = |text: String| {
            let mut entries = fresh.clone();
            entries.last_mut().unwrap().data = text.into_bytes();
            entries
        };
        let no_samples = fresh
            .iter()
            .filter(|e| e.name() != "run-1/samples.jsonl")
            .cloned()
            .collect::<Vec<_>>();
        let unlisted: String = sums_text
            .lines()
            .filter(|l| !l.ends_with("samples.jsonl"))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut gone = no_samples.clone();
        gone.last_mut().unwrap().data = unlisted.clone().into_bytes();
        let cases = [
            (
                fresh[..fresh.len() - 1].to_vec(),
                "run-1/SHA256SUMS: missing",
            ),
            (
                with_sums(sums_text.replacen('\n', "\nnot a checksum line\n", 1)),
                "run-1/SHA256SUMS line 2: expected",
            ),
            (
                no_samples,
                "line 8 lists run-1/samples.jsonl, which is not in the archive",
            ),
            (
                with_sums(unlisted),
                "run-1/samples.jsonl: not listed in SHA256SUMS",
            ),
            (
                gone,
                "run-1/samples.jsonl: missing: a run archive must hold it",
            ),
        ];
        for (entries, wanted) in cases {
            let err = rejected(&fx, &entries);
            assert!(err.contains(wanted), "{err:?} lacks {wanted:?}");
        }
    }
}
