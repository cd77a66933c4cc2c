//! An allowed-signers file, as git (`gpg.ssh.allowedSignersFile`) and `ssh-keygen -Y verify -f` read
//! it (ssh-keygen(1), "ALLOWED SIGNERS"): one key per line, `PRINCIPALS [OPTIONS] KEYTYPE BASE64
//! [COMMENT]`, `#` comments and blank lines ignored. The options honoured are `namespaces="…"` (a
//! pattern list the namespace must match), `valid-after` and `valid-before` (the key is allowed only
//! between them, now); a `cert-authority` line names a CA, whose certificates this kit does not
//! take, and allows nothing here.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use chrono::{DateTime, Local, NaiveDate, NaiveDateTime, TimeZone, Utc};
use ssh_key::public::KeyData;
use ssh_key::{HashAlg, PublicKey};

use crate::files::read_bounded;

/// Largest allowed-signers file read.
const LIMIT: u64 = 1 << 20;

/// The keys of an allowed-signers file.
#[derive(Debug, Clone)]
pub struct AllowedSigners {
    /// The file they were read from.
    pub path: PathBuf,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    line: usize,
    principals: String,
    key: KeyData,
    namespaces: Option<String>,
    cert_authority: bool,
    valid_after: Option<DateTime<Utc>>,
    valid_before: Option<DateTime<Utc>>,
}

/// Who signed: the principals of the line that allows the key, and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// The line's principals, as written (`alice@example.com`, or a comma-separated list).
    pub principals: String,
    /// The key's algorithm and fingerprint.
    pub fingerprint: String,
    /// The allowed-signers file and the line.
    pub at: String,
}

impl AllowedSigners {
    /// Reads the file at `path`; a line that is not `PRINCIPALS [OPTIONS] KEY` is an error naming it.
    pub fn read(path: &Path) -> Result<Self> {
        let text = read_bounded(path, LIMIT, "an allowed-signers file")?;
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let entry = parse(line, i + 1).map_err(|e| {
                anyhow::anyhow!(
                    "{}:{}: {e}; each line is `PRINCIPALS [OPTIONS] KEYTYPE BASE64 [COMMENT]`, as \
                     in git's allowed signers file",
                    path.display(),
                    i + 1
                )
            })?;
            entries.push(entry);
        }
        if entries.is_empty() {
            bail!(
                "{}: no key in it: an allowed-signers file lists `PRINCIPALS KEYTYPE BASE64` lines",
                path.display()
            );
        }
        Ok(Self {
            path: path.to_owned(),
            entries,
        })
    }

    /// The first line that allows `key` to sign for `namespace` now.
    pub fn allowing(&self, key: &KeyData, namespace: &str) -> Option<Signer> {
        let now = Utc::now();
        self.entries
            .iter()
            .filter(|e| !e.cert_authority && e.key == *key)
            .filter(|e| {
                e.namespaces
                    .as_deref()
                    .is_none_or(|p| pattern_list(p, namespace))
            })
            .filter(|e| e.valid_after.is_none_or(|t| now >= t))
            .find(|e| e.valid_before.is_none_or(|t| now < t))
            .map(|e| Signer {
                principals: e.principals.clone(),
                fingerprint: fingerprint(key),
                at: format!("{}:{}", self.path.display(), e.line),
            })
    }
}

fn parse(line: &str, number: usize) -> Result<Entry> {
    let fields = split_fields(line)?;
    let [principals, rest @ ..] = fields.as_slice() else {
        bail!("an empty line");
    };
    let (options, key_at) = match rest.first() {
        Some(f) if ssh_key::Algorithm::new(f).is_ok() => ("", 0),
        Some(f) => (f.as_str(), 1),
        None => bail!("no key after the principals"),
    };
    let key_text = rest[key_at..].join(" ");
    let key = PublicKey::from_openssh(&key_text)
        .map_err(|e| anyhow::anyhow!("not a public key ({e})"))?;
    let mut entry = Entry {
        line: number,
        principals: unquote(principals),
        key: key.key_data().clone(),
        namespaces: None,
        cert_authority: false,
        valid_after: None,
        valid_before: None,
    };
    for option in split_outside_quotes(options, ',') {
        let (name, value) = match option.split_once('=') {
            Some((n, v)) => (n.to_ascii_lowercase(), Some(unquote(v))),
            None => (option.to_ascii_lowercase(), None),
        };
        match (name.as_str(), value) {
            ("", None) => {}
            ("cert-authority", None) => entry.cert_authority = true,
            ("namespaces", Some(v)) => entry.namespaces = Some(v),
            ("valid-after", Some(v)) => entry.valid_after = Some(time(&v)?),
            ("valid-before", Some(v)) => entry.valid_before = Some(time(&v)?),
            _ => bail!("unknown option {option:?}"),
        }
    }
    Ok(entry)
}

/// The line's fields split on spaces and tabs, a double-quoted part (`namespaces="a b"`) kept whole.
fn split_fields(line: &str) -> Result<Vec<String>> {
    let mut fields = Vec::new();
    let (mut field, mut quoted) = (String::new(), false);
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                field.push(c);
            }
            ' ' | '\t' if !quoted => {
                if !field.is_empty() {
                    fields.push(std::mem::take(&mut field));
                }
            }
            c => field.push(c),
        }
    }
    if quoted {
        bail!("a quote is not closed");
    }
    if !field.is_empty() {
        fields.push(field);
    }
    Ok(fields)
}

fn split_outside_quotes(text: &str, at: char) -> Vec<&str> {
    let (mut parts, mut start, mut quoted) = (Vec::new(), 0, false);
    for (i, c) in text.char_indices() {
        if c == '"' {
            quoted = !quoted;
        } else if c == at && !quoted {
            parts.push(&text[start..i]);
            start = i + 1;
        }
    }
    parts.push(&text[start..]);
    parts
}

fn unquote(text: &str) -> String {
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
        .to_string()
}

/// `YYYYMMDD[HHMM[SS]][Z]`: UTC with the `Z`, this machine's local time without, as ssh-keygen reads it.
fn time(text: &str) -> Result<DateTime<Utc>> {
    let (digits, utc) = match text.strip_suffix(['Z', 'z']) {
        Some(d) => (d, true),
        None => (text, false),
    };
    let naive = match digits.len() {
        8 => NaiveDate::parse_from_str(digits, "%Y%m%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0)),
        12 => NaiveDateTime::parse_from_str(digits, "%Y%m%d%H%M").ok(),
        14 => NaiveDateTime::parse_from_str(digits, "%Y%m%d%H%M%S").ok(),
        _ => None,
    };
    let Some(naive) = naive else {
        bail!("{text:?} is not a time YYYYMMDD[HHMM[SS]][Z]");
    };
    if utc {
        return Ok(naive.and_utc());
    }
    match Local.from_local_datetime(&naive).earliest() {
        Some(t) => Ok(t.with_timezone(&Utc)),
        None => bail!("{text:?} does not exist in this machine's time zone"),
    }
}

/// Whether `name` matches the comma-separated pattern list (`*` and `?` wildcards, `!` negating), as
/// OpenSSH's `match_pattern_list`: a negated match refuses whatever else matched.
fn pattern_list(list: &str, name: &str) -> bool {
    let mut matched = false;
    for pattern in list.split(',').map(str::trim) {
        match pattern.strip_prefix('!') {
            Some(p) if glob(p.as_bytes(), name.as_bytes()) => return false,
            Some(_) => {}
            None => matched |= glob(pattern.as_bytes(), name.as_bytes()),
        }
    }
    matched
}

fn glob(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob(&pattern[1..], name) || (!name.is_empty() && glob(pattern, &name[1..]))
        }
        (Some(b'?'), Some(_)) => glob(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => glob(&pattern[1..], &name[1..]),
        _ => false,
    }
}

/// A key's algorithm and SHA-256 fingerprint, as `ssh-keygen -l` prints them.
pub fn fingerprint(key: &KeyData) -> String {
    format!(
        "{} {}",
        key.algorithm().as_str(),
        key.fingerprint(HashAlg::Sha256)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB3dHMQsfbOIb5xj0nU6GqjmH25YT6vq2eXJlsOKXqhm";

    fn signers(text: &str) -> Result<AllowedSigners> {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("allowed_signers");
        std::fs::write(&path, text).unwrap();
        AllowedSigners::read(&path)
    }

    fn key() -> KeyData {
        PublicKey::from_openssh(KEY).unwrap().key_data().clone()
    }

    #[test]
    fn a_plain_line_allows_its_key_in_any_namespace() {
        let s = signers(&format!(
            "# reviewers\n\nalice@example.com {KEY} alice's laptop\n"
        ))
        .unwrap();
        let who = s.allowing(&key(), "parkbench").unwrap();
        assert_eq!(who.principals, "alice@example.com");
        assert!(who.at.ends_with(":3"), "{}", who.at);
        assert!(
            who.fingerprint.starts_with("ssh-ed25519 SHA256:"),
            "{}",
            who.fingerprint
        );
    }

    #[test]
    fn namespaces_and_validity_restrict_a_line() {
        let only_git = signers(&format!("alice namespaces=\"git\" {KEY}\n")).unwrap();
        assert!(only_git.allowing(&key(), "parkbench").is_none());
        let both = signers(&format!("\"alice,bob\" namespaces=\"git,park*\" {KEY}\n")).unwrap();
        assert_eq!(
            both.allowing(&key(), "parkbench").unwrap().principals,
            "alice,bob"
        );
        let negated = signers(&format!("alice namespaces=\"*,!parkbench\" {KEY}\n")).unwrap();
        assert!(negated.allowing(&key(), "parkbench").is_none());
        let expired = signers(&format!("alice valid-before=\"20200101Z\" {KEY}\n")).unwrap();
        assert!(expired.allowing(&key(), "parkbench").is_none());
        let future = signers(&format!("alice valid-after=\"29990101\" {KEY}\n")).unwrap();
        assert!(future.allowing(&key(), "parkbench").is_none());
        let now = signers(&format!(
            "alice valid-after=\"20200101\",valid-before=\"299901010000Z\" {KEY}\n"
        ))
        .unwrap();
        assert!(now.allowing(&key(), "parkbench").is_some());
        let ca = signers(&format!("*@example.com cert-authority {KEY}\n")).unwrap();
        assert!(ca.allowing(&key(), "parkbench").is_none());
    }

    #[test]
    fn a_bad_line_is_named() {
        for (text, wanted) in [
            ("alice\n", "no key after the principals"),
            ("alice ssh-ed25519 notbase64\n", "not a public key"),
            (
                &format!("alice nosuch=\"x\" {KEY}\n") as &str,
                "unknown option",
            ),
            (&format!("alice valid-after=\"2020\" {KEY}\n"), "not a time"),
            (
                &format!("alice namespaces=\"x {KEY}\n"),
                "quote is not closed",
            ),
            ("# nothing\n", "no key in it"),
        ] {
            let err = format!("{:#}", signers(text).unwrap_err());
            assert!(err.contains(wanted), "{text:?}: {err}");
        }
        let err = format!("{:#}", signers(&format!("{KEY}\nalice\n")).unwrap_err());
        assert!(err.contains(":1: "), "{err}");
    }
}
