//! The Debian root filesystem tar, built by mmdebstrap and streamed straight into the cache.
//!
//! Reproducible across runs and hosts for the same mirror content: `SOURCE_DATE_EPOCH` fixes
//! timestamps; mmdebstrap's cleanup removes apt lists and caches, logs and empties machine-id;
//! the hooks below remove `/etc/resolv.conf` and `/etc/hostname` (copied from the host; Docker
//! provides both at run time), replace the host's apt sources with a fixed comment, and delete the
//! files the pin lists under `remove` (files an install writes differently every time).

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::images::pin::{Mirror, Mmdebstrap};

/// Hook run in the finished chroot (`$1`): `/etc/resolv.conf` and `/etc/hostname` are copied from
/// the host; Docker provides both at run time.
const HOST_FILES_HOOK: &str = r#"rm -f "$1/etc/resolv.conf" "$1/etc/hostname""#;

/// apt owns its partial/ folders by its sandbox user only when that user can reach the scratch
/// folder (not under a 0700 home, say); set Debian's usual owner so the tar never depends on it.
const APT_OWNER_HOOK: &str =
    r#"chroot "$1" chown _apt:root /var/cache/apt/archives/partial /var/lib/apt/lists/partial"#;

/// Environment variable naming the base address of Debian's snapshot archive, for snapshot mirrors.
const SNAPSHOT_VAR: &str = "PARKBENCH_DEBIAN_SNAPSHOT";

/// Environment variable naming an apt sources file (one-line `deb` entries) that replaces the
/// host's apt sources for every root filesystem and `deb` pin.
pub const SOURCES_VAR: &str = "PARKBENCH_APT_SOURCES";

/// Runs mmdebstrap for pin `name` and writes its tar to `out`; `scratch` holds the chroot and
/// the log.
pub fn build(name: &str, m: &Mmdebstrap, scratch: &Path, out: &mut impl Write) -> Result<()> {
    mmdebstrap(name, m, &apt_sources(m)?, scratch, out)
}

/// Runs mmdebstrap for pin `name` from the apt `sources` (one-line entries) and writes its tar to
/// `out`; `scratch` holds the chroot and the log.
pub fn mmdebstrap(
    name: &str,
    m: &Mmdebstrap,
    sources: &[String],
    scratch: &Path,
    out: &mut impl Write,
) -> Result<()> {
    let log_path = scratch.join("mmdebstrap.log");
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let mut child = Command::new("mmdebstrap")
        .args(arguments(name, m, sources))
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

/// mmdebstrap's arguments for pin `name` (without the `SOURCE_DATE_EPOCH` environment), tar to
/// stdout.
pub fn arguments(name: &str, m: &Mmdebstrap, sources: &[String]) -> Vec<String> {
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
    // The pin's removals come last, so that they see the tree exactly as the install left it.
    let hooks = [
        HOST_FILES_HOOK.to_owned(),
        sources_hook(name),
        APT_OWNER_HOOK.to_owned(),
    ];
    let hooks = hooks.into_iter().chain(remove_hook(&m.remove));
    args.extend(hooks.map(|h| format!("--customize-hook={h}")));
    // Nothing after `--` is read as an option, whatever the pin or the sources say.
    args.push("--".to_owned());
    args.push(m.suite.clone());
    args.push("-".to_owned());
    args.extend(sources.iter().cloned());
    args
}

/// Replaces the host's apt sources with a comment naming the pin.
fn sources_hook(name: &str) -> String {
    format!(
        r#"echo '# no apt sources: the packages are pinned by toolchains/{name}.yaml' > "$1/etc/apt/sources.list""#
    )
}

/// Deletes the pin's `remove` files; `rm` fails on a missing one, so a stale list is noticed.
/// The paths are checked by the pin parser (absolute, no `..`, only `[A-Za-z0-9._+-/]`).
fn remove_hook(paths: &[String]) -> Option<String> {
    if paths.is_empty() {
        return None;
    }
    let quoted: Vec<String> = paths.iter().map(|p| format!(r#""$1{p}""#)).collect();
    Some(format!("rm -- {}", quoted.join(" ")))
}

/// One-line apt sources (`deb <uri> <suite> main`) for the suite, its updates and security; the
/// entries of the file `PARKBENCH_APT_SOURCES` names instead, when it is set.
pub fn apt_sources(m: &Mmdebstrap) -> Result<Vec<String>> {
    if let Some(lines) = sources_from_env()? {
        return Ok(lines);
    }
    match &m.mirror {
        Mirror::Host => {
            let release = host_release(Path::new("/etc/os-release"));
            host_sources(Path::new("/etc/apt"), &m.suite, release.as_deref())
        }
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

/// The `deb` entries of the file `PARKBENCH_APT_SOURCES` names, if it is set (an empty file: no
/// sources at all, so that only the cache serves packages).
pub fn sources_from_env() -> Result<Option<Vec<String>>> {
    let Some(file) = std::env::var_os(SOURCES_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "reading the apt sources file {SOURCES_VAR}={}",
            Path::new(&file).display()
        )
    })?;
    let lines = text
        .lines()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("deb "))
        .map(str::to_owned)
        .collect();
    Ok(Some(lines))
}

/// The host's `deb` sources for `suite`, `suite-updates` and `suite-security` with component
/// `main`, from `sources.list` and `sources.list.d/*.{list,sources}` under `etc_apt`. When the
/// host lists none for `suite`, the sources of its own release `host_release` (e.g. bookworm's,
/// for a trixie pin) are used with the suite names replaced: the same mirrors serve every release.
pub fn host_sources(
    etc_apt: &Path,
    suite: &str,
    host_release: Option<&str>,
) -> Result<Vec<String>> {
    let entries = host_entries(etc_apt)?;
    let mut lines = release_lines(&entries, suite, suite);
    if let Some(release) = host_release.filter(|_| lines.is_empty()) {
        lines = release_lines(&entries, release, suite);
    }
    if lines.is_empty() {
        let fallback = host_release
            .map(|r| format!(", nor for the host's own release {r}"))
            .unwrap_or_default();
        bail!(
            "the host's apt sources ({}) have no `deb` entry for {suite}{fallback} with component \
             main: add one, or pin a snapshot mirror",
            etc_apt.display()
        );
    }
    Ok(lines)
}

/// `deb <uri> <to><suffix> main` for every entry whose suite is `<from><suffix>`, suffix one of
/// ``, `-updates`, `-security`; in the order of the host's files, without duplicates.
fn release_lines(entries: &[(String, String)], from: &str, to: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for (uri, s) in entries {
        let suffix = s.strip_prefix(from);
        let Some(suffix) = suffix.filter(|x| ["", "-updates", "-security"].contains(x)) else {
            continue;
        };
        let line = format!("deb {uri} {to}{suffix} main");
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

/// (uri, suite) of every enabled `deb` entry with component `main` under `etc_apt`.
fn host_entries(etc_apt: &Path) -> Result<Vec<(String, String)>> {
    let mut files = vec![etc_apt.join("sources.list")];
    let dir = etc_apt.join("sources.list.d");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut more: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        more.sort();
        files.extend(more);
    }
    let mut all = Vec::new();
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
        all.extend(if deb822 {
            parse_deb822(&text)
        } else {
            parse_one_line(&text)
        });
    }
    Ok(all)
}

/// `VERSION_CODENAME` of an os-release file (`bookworm`), if it names one.
fn host_release(os_release: &Path) -> Option<String> {
    let text = std::fs::read_to_string(os_release).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim().trim_matches(['"', '\'']).to_owned())
        .filter(|v| !v.is_empty())
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
            remove: vec![],
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
        let bookworm = [
            "deb http://m.example/debian bookworm main",
            "deb http://m.example/debian bookworm-updates main",
            "deb http://s.example/debian-security bookworm-security main",
        ];
        assert_eq!(host_sources(d, "bookworm", None).unwrap(), bookworm);
        assert_eq!(
            host_sources(d, "bookworm", Some("trixie")).unwrap(),
            bookworm,
            "the suite's own entries win over the host release's"
        );
        let err = host_sources(d, "trixie", None).unwrap_err().to_string();
        assert!(err.contains("no `deb` entry for trixie"), "{err}");
        let err = host_sources(d, "trixie", Some("sid"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no `deb` entry for trixie, nor for the host's own release sid"),
            "{err}"
        );
    }

    #[test]
    fn another_release_uses_the_mirrors_of_the_host_release() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("sources.list"),
            "deb http://m.example/debian bookworm main
deb http://m.example/debian bookworm-updates main
             deb http://m.example/debian bookworm-backports main
deb http://x.example/apt cloud-sdk-bookworm main
             deb http://s.example/debian-security bookworm-security main
",
        )
        .unwrap();
        assert_eq!(
            host_sources(d, "trixie", Some("bookworm")).unwrap(),
            [
                "deb http://m.example/debian trixie main",
                "deb http://m.example/debian trixie-updates main",
                "deb http://s.example/debian-security trixie-security main",
            ]
        );
    }

    #[test]
    fn host_release_is_the_version_codename() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("os-release");
        std::fs::write(
            &f,
            "NAME=\"Debian GNU/Linux\"\nVERSION_CODENAME=bookworm\nID=debian\n",
        )
        .unwrap();
        assert_eq!(host_release(&f).as_deref(), Some("bookworm"));
        std::fs::write(&f, "VERSION_CODENAME=\"noble\"\n").unwrap();
        assert_eq!(host_release(&f).as_deref(), Some("noble"));
        std::fs::write(&f, "ID=arch\n").unwrap();
        assert_eq!(host_release(&f), None);
        assert_eq!(host_release(&dir.path().join("missing")), None);
    }

    #[test]
    fn arguments_stream_a_tar_with_the_hooks() {
        let args = arguments(
            "debian-base",
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
            args[args.len() - 4..],
            [
                "--",
                "bookworm",
                "-",
                "deb http://m.example/debian bookworm main"
            ]
        );
        // Exactly the hooks toolchains/debian-base.yaml was recorded with: any change to them
        // changes its tar.
        let hooks: Vec<&str> = args
            .iter()
            .filter_map(|a| a.strip_prefix("--customize-hook="))
            .collect();
        assert_eq!(
            hooks,
            [
                r#"rm -f "$1/etc/resolv.conf" "$1/etc/hostname""#,
                r#"echo '# no apt sources: the packages are pinned by toolchains/debian-base.yaml' > "$1/etc/apt/sources.list""#,
                r#"chroot "$1" chown _apt:root /var/cache/apt/archives/partial /var/lib/apt/lists/partial"#,
            ]
        );
        let snap = arguments(
            "debian-base",
            &pin(Mirror::Snapshot("20250520T000000Z".into())),
            &[],
        );
        assert!(snap.iter().any(|a| a.contains("Check-Valid-Until")));
    }

    #[test]
    fn removals_run_last_and_name_the_pin() {
        let mut m = pin(Mirror::Host);
        m.remove = vec!["/etc/ssl/certs/java/cacerts".into(), "/var/a.b".into()];
        let args = arguments("debian-trixie", &m, &[]);
        let hooks: Vec<&str> = args
            .iter()
            .filter_map(|a| a.strip_prefix("--customize-hook="))
            .collect();
        assert_eq!(hooks.len(), 4);
        assert!(
            hooks[1].contains("toolchains/debian-trixie.yaml"),
            "{}",
            hooks[1]
        );
        assert_eq!(
            hooks[3],
            r#"rm -- "$1/etc/ssl/certs/java/cacerts" "$1/var/a.b""#
        );
    }
}
