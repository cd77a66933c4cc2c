//! The Debian root filesystem tar, built by mmdebstrap and streamed straight into the cache.
//!
//! Reproducible across runs and hosts for the same mirror content: `SOURCE_DATE_EPOCH` fixes
//! timestamps; mmdebstrap's cleanup removes apt lists and caches, logs and empties machine-id;
//! the hooks below remove `/etc/resolv.conf` and `/etc/hostname` (copied from the host; Docker
//! provides both at run time) and replace the host's apt sources with a fixed comment.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::pin::{Mirror, Mmdebstrap};

/// Hooks run in the finished chroot (`$1`) that make the tar independent of the host.
const CUSTOMIZE_HOOKS: [&str; 3] = [
    r#"rm -f "$1/etc/resolv.conf" "$1/etc/hostname""#,
    r#"echo '# no apt sources: the packages are pinned by toolchains/debian-base.yaml' > "$1/etc/apt/sources.list""#,
    // apt owns its partial/ folders by its sandbox user only when that user can reach the scratch
    // folder (not under a 0700 home, say); set Debian's usual owner so the tar never depends on it.
    r#"chroot "$1" chown _apt:root /var/cache/apt/archives/partial /var/lib/apt/lists/partial"#,
];

/// Environment variable naming the base address of Debian's snapshot archive, for snapshot mirrors.
const SNAPSHOT_VAR: &str = "PARKBENCH_DEBIAN_SNAPSHOT";

/// Runs mmdebstrap and writes its tar to `out`; `scratch` holds the chroot and the log.
pub fn build(m: &Mmdebstrap, scratch: &Path, out: &mut impl Write) -> Result<()> {
    let sources = apt_sources(m)?;
    let log_path = scratch.join("mmdebstrap.log");
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let mut child = Command::new("mmdebstrap")
        .args(arguments(m, &sources))
        .env("SOURCE_DATE_EPOCH", m.source_date_epoch.to_string())
        .env("TMPDIR", scratch)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => anyhow::anyhow!(
                "mmdebstrap is not installed: run `apt-get install mmdebstrap` (see `parkbench doctor`)"
            ),
            _ => anyhow::Error::new(e).context("starting mmdebstrap"),
        })?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let copied = io::copy(&mut stdout, out);
    // On a failed copy, closing the pipe makes mmdebstrap fail and clean up after itself.
    drop(stdout);
    let status = child.wait().context("waiting for mmdebstrap")?;
    let tail = log_tail(&log_path);
    copied.with_context(|| format!("storing the mmdebstrap tar; mmdebstrap said:\n{tail}"))?;
    if !status.success() {
        bail!("mmdebstrap failed ({status}):\n{tail}");
    }
    Ok(())
}

/// mmdebstrap's arguments (without the `SOURCE_DATE_EPOCH` environment), tar to stdout.
pub fn arguments(m: &Mmdebstrap, sources: &[String]) -> Vec<String> {
    // unshare mode keeps mmdebstrap's mounts in a private namespace, so none outlives a failed
    // run; its tar is bit-identical to root mode's, and it also works for users with subuids.
    let mut args = vec![
        "--mode=unshare".to_owned(),
        format!("--variant={}", m.variant),
        "--format=tar".to_owned(),
    ];
    if !m.packages.is_empty() {
        args.push(format!("--include={}", m.packages.join(",")));
    }
    if matches!(m.mirror, Mirror::Snapshot(_)) {
        // Snapshot Release files are past their Valid-Until date by design.
        args.push(r#"--aptopt=Acquire::Check-Valid-Until "false""#.to_owned());
    }
    args.extend(
        CUSTOMIZE_HOOKS
            .iter()
            .map(|h| format!("--customize-hook={h}")),
    );
    args.push(m.suite.clone());
    args.push("-".to_owned());
    args.extend(sources.iter().cloned());
    args
}

/// One-line apt sources (`deb <uri> <suite> main`) for the suite, its updates and security.
fn apt_sources(m: &Mmdebstrap) -> Result<Vec<String>> {
    match &m.mirror {
        Mirror::Host => host_sources(Path::new("/etc/apt"), &m.suite),
        Mirror::Snapshot(ts) => {
            let base = std::env::var(SNAPSHOT_VAR).with_context(|| {
                format!("mirror {ts} needs the base address of Debian's snapshot archive in {SNAPSHOT_VAR}")
            })?;
            let base = base.trim_end_matches('/');
            let s = &m.suite;
            Ok(vec![
                format!("deb {base}/archive/debian/{ts} {s} main"),
                format!("deb {base}/archive/debian/{ts} {s}-updates main"),
                format!("deb {base}/archive/debian-security/{ts} {s}-security main"),
            ])
        }
    }
}

/// The host's `deb` sources for `suite`, `suite-updates` and `suite-security` with component
/// `main`, from `sources.list` and `sources.list.d/*.{list,sources}` under `etc_apt`.
pub fn host_sources(etc_apt: &Path, suite: &str) -> Result<Vec<String>> {
    let mut files = vec![etc_apt.join("sources.list")];
    let dir = etc_apt.join("sources.list.d");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut more: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        more.sort();
        files.extend(more);
    }
    let wanted = [
        suite.to_owned(),
        format!("{suite}-updates"),
        format!("{suite}-security"),
    ];
    let mut lines = Vec::new();
    for file in files {
        let deb822 = match file.extension().and_then(|e| e.to_str()) {
            Some("sources") => true,
            Some("list") => false,
            _ => continue,
        };
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
        };
        let entries = if deb822 {
            parse_deb822(&text)
        } else {
            parse_one_line(&text)
        };
        for (uri, s) in entries.into_iter().filter(|(_, s)| wanted.contains(s)) {
            let line = format!("deb {uri} {s} main");
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    if lines.is_empty() {
        bail!(
            "the host's apt sources ({}) have no `deb` entry for {suite} with component main: \
             add one, or pin a snapshot mirror",
            etc_apt.display()
        );
    }
    Ok(lines)
}

/// (uri, suite) of every `deb ... main` line in one-line format.
fn parse_one_line(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
    {
        let mut words = line.split_whitespace();
        if words.next() != Some("deb") {
            continue;
        }
        let mut rest: Vec<&str> = words.collect();
        if rest.first().is_some_and(|w| w.starts_with('[')) {
            let end = rest
                .iter()
                .position(|w| w.ends_with(']'))
                .unwrap_or(rest.len() - 1);
            rest.drain(..=end);
        }
        if let [uri, suite, components @ ..] = rest.as_slice()
            && components.contains(&"main")
        {
            out.push((uri.to_string(), suite.to_string()));
        }
    }
    out
}

/// (uri, suite) of every enabled `Types: deb` stanza with component main, in deb822 format.
fn parse_deb822(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n").filter(|s| !s.trim().is_empty()) {
        let field = |name: &str| -> Vec<&str> {
            stanza
                .lines()
                .filter(|l| !l.starts_with('#') && !l.starts_with([' ', '\t']))
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
                .map(|(_, v)| v.split_whitespace().collect())
                .unwrap_or_default()
        };
        let enabled = field("Enabled")
            .first()
            .is_none_or(|v| !v.eq_ignore_ascii_case("no"));
        if !enabled || !field("Types").contains(&"deb") || !field("Components").contains(&"main") {
            continue;
        }
        for uri in field("URIs") {
            out.extend(
                field("Suites")
                    .iter()
                    .map(|s| (uri.to_owned(), s.to_string())),
            );
        }
    }
    out
}

/// The last lines of mmdebstrap's log, for error messages.
fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    let _ = File::open(path).and_then(|mut f| f.read_to_string(&mut text));
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(mirror: Mirror) -> Mmdebstrap {
        Mmdebstrap {
            suite: "bookworm".into(),
            variant: "minbase".into(),
            packages: vec!["gcc".into(), "libc6-dev".into()],
            source_date_epoch: 1,
            mirror,
        }
    }

    #[test]
    fn host_sources_keep_the_suite_only() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("sources.list.d")).unwrap();
        std::fs::write(
            d.join("sources.list"),
            "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main contrib\n\
             deb-src http://m.example/debian bookworm main\ndeb http://m.example/debian bookworm-backports main\n",
        )
        .unwrap();
        std::fs::write(
            d.join("sources.list.d/debian.sources"),
            "Types: deb\nURIs: http://m.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\
             Signed-By: /k.gpg\n\nTypes: deb\nURIs: http://s.example/debian-security\nSuites: bookworm-security\n\
             Components: main\n\nTypes: deb\nEnabled: no\nURIs: http://off.example\nSuites: bookworm\nComponents: main\n",
        )
        .unwrap();
        std::fs::write(
            d.join("sources.list.d/other.list"),
            "deb https://x.example/apt cloud-sdk-bookworm main\n",
        )
        .unwrap();
        std::fs::write(
            d.join("sources.list.d/node.sources"),
            "Types: deb\nURIs: https://n.example\nSuites: nodistro\nComponents: main\n",
        )
        .unwrap();
        assert_eq!(
            host_sources(d, "bookworm").unwrap(),
            [
                "deb http://m.example/debian bookworm main",
                "deb http://m.example/debian bookworm-updates main",
                "deb http://s.example/debian-security bookworm-security main",
            ]
        );
        let err = host_sources(d, "trixie").unwrap_err().to_string();
        assert!(err.contains("no `deb` entry for trixie"), "{err}");
    }

    #[test]
    fn arguments_stream_a_tar_with_the_hooks() {
        let args = arguments(
            &pin(Mirror::Host),
            &["deb http://m.example/debian bookworm main".into()],
        );
        assert_eq!(
            args[..4],
            [
                "--mode=unshare",
                "--variant=minbase",
                "--format=tar",
                "--include=gcc,libc6-dev"
            ]
        );
        assert_eq!(
            args[args.len() - 3..],
            ["bookworm", "-", "deb http://m.example/debian bookworm main"]
        );
        assert_eq!(
            args.iter()
                .filter(|a| a.starts_with("--customize-hook="))
                .count(),
            3
        );
        let snap = arguments(&pin(Mirror::Snapshot("20250520T000000Z".into())), &[]);
        assert!(snap.iter().any(|a| a.contains("Check-Valid-Until")));
    }
}
