//! The `.deb`s of a root filesystem's package lock: each taken from the cache, else fetched by
//! exact version with apt from the apt sources, checked against its locked sha256 and kept in the
//! cache; then laid out as a local apt repository that mmdebstrap installs from. A locked version
//! the sources no longer serve is drift: the served version stands in, and [`Resolved::moved`]
//! names it (or, strictly, nothing is built).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::files::digest;
use crate::images::cache::{Cache, HashMismatch};
use crate::images::pin::{Lock, Locked, Moved};

/// The `.deb`s a root filesystem is built from.
#[derive(Debug)]
pub struct Resolved {
    /// Every package with its cached `.deb`: the locked one, or the served stand-in of a moved one.
    pub debs: Vec<(Locked, PathBuf)>,
    /// The locked packages whose version is neither cached nor served any more.
    pub moved: Vec<Moved>,
}

impl Resolved {
    /// The set actually installed, as a lock (equal to the pin's lock when nothing moved).
    pub fn lock(&self) -> Lock {
        Lock::new(self.debs.iter().map(|(l, _)| l.clone()).collect())
    }
}

/// Finds every locked `.deb` in the cache, fetching the missing ones with apt from `sources`
/// (asked only when something is missing). With `strict`, drift is an error naming the packages.
pub fn resolve(
    cache: &Cache,
    pin: &str,
    lock: &Lock,
    sources: impl FnOnce() -> Result<Vec<String>>,
    strict: bool,
) -> Result<Resolved> {
    let mut debs = Vec::new();
    let mut missing = Vec::new();
    for locked in &lock.packages {
        match cache.get(&locked.sha256)? {
            Some(path) => debs.push((locked.clone(), path)),
            None => missing.push(locked),
        }
    }
    if missing.is_empty() {
        return Ok(Resolved {
            debs,
            moved: Vec::new(),
        });
    }
    eprintln!(
        "{pin}: {} of {} locked packages are not cached; fetching them with apt",
        missing.len(),
        lock.packages.len()
    );
    let sources = sources()?;
    let key = digest::bytes(sources.join("\n").as_bytes());
    let apt = Apt::new(&cache.root().join("apt").join(&key[..16]), &sources)?;
    apt.update()?;
    let served = apt.served(missing.iter().map(|l| l.name.as_str()))?;
    let mut wanted = Vec::new();
    let mut moved = Vec::new();
    for locked in &missing {
        let versions = served.get(&locked.name).map(Vec::as_slice).unwrap_or(&[]);
        if versions.contains(&locked.version) {
            wanted.push(format!("{}={}", locked.name, locked.version));
            continue;
        }
        let served = versions.first().cloned();
        moved.push(Moved {
            sha256: None,
            package: locked.name.clone(),
            locked: locked.version.clone(),
            served: served.clone(),
        });
        if let Some(v) = served {
            wanted.push(format!("{}={v}", locked.name));
        }
    }
    if strict && !moved.is_empty() {
        bail!("{}", refusal(pin, lock.packages.len(), &moved));
    }
    if moved.iter().any(|m| m.served.is_none()) {
        let gone: Vec<String> = moved.iter().map(|m| m.to_string()).collect();
        bail!(
            "the apt sources serve these locked packages in no version: {}; \
             accept the set they serve with `parkbench pin lock {pin}`",
            gone.join(", ")
        );
    }
    let scratch = cache.scratch()?;
    apt.download(&wanted, scratch.path())?;
    let by_name: BTreeMap<&str, &Locked> = missing.iter().map(|l| (l.name.as_str(), *l)).collect();
    for file in deb_files(scratch.path())? {
        let mut got = fields(&file)?;
        got.sha256 = digest::file(&file)?;
        let Some(locked) = by_name.get(got.name.as_str()) else {
            bail!("apt downloaded {}, which was not asked for", file.display());
        };
        // A stand-in keeps the locked package's priority: it decides what the variant installs.
        got.priority = locked.priority.clone();
        // The drift records what stood in, so that an archive can carry what the run installed.
        if let Some(m) = moved
            .iter_mut()
            .find(|m| m.package == got.name && m.served.as_ref() == Some(&got.version))
        {
            m.sha256 = Some(got.sha256.clone());
        }
        if got.version == locked.version && got.sha256 != locked.sha256 {
            return Err(HashMismatch {
                what: format!("pin {pin}, package {} {}", got.name, got.version),
                expected: locked.sha256.clone(),
                actual: got.sha256,
            }
            .into());
        }
        let label = format!("deb {} {} {}", got.name, got.version, got.arch);
        let reader =
            std::fs::File::open(&file).with_context(|| format!("reading {}", file.display()))?;
        let path = cache.put(&got.sha256, &label, reader)?;
        cache.set_provenance(&got.sha256, &label)?;
        debs.push((got, path));
    }
    if debs.len() != lock.packages.len() {
        bail!(
            "apt gave {} of the {} missing packages",
            debs.len() + missing.len() - lock.packages.len(),
            missing.len()
        );
    }
    debs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Resolved { debs, moved })
}

/// What [`import`] did with an archive's `.deb`s.
#[derive(Debug, Default)]
pub struct Imported {
    /// How many were new to the cache.
    pub added: usize,
    /// The file names of those no trusted lock names by sha256: left out of the cache.
    pub refused: Vec<String>,
}

/// Puts every `.deb` of `dir` (an archive's `debs/`) whose sha256 is in `trusted` (the sha256s
/// of the reviewer's own locks) into the cache under that sha256. The others are refused and left
/// out: an archive's lock and `.deb`s are its own word, and a `.deb`'s maintainer scripts run as
/// root when it is installed.
pub fn import(
    cache: &Cache,
    dir: &Path,
    from: &str,
    trusted: &std::collections::BTreeSet<String>,
) -> Result<Imported> {
    let mut imported = Imported::default();
    for file in deb_files(dir)? {
        let sha256 = digest::file(&file)?;
        if !trusted.contains(&sha256) {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            imported.refused.push(name.into_owned());
            continue;
        }
        if cache.get(&sha256)?.is_some() {
            continue;
        }
        let reader =
            std::fs::File::open(&file).with_context(|| format!("reading {}", file.display()))?;
        cache.put(&sha256, &format!("{} from {from}", file.display()), reader)?;
        cache.set_provenance(&sha256, &format!("deb from {from}"))?;
        imported.added += 1;
    }
    Ok(imported)
}

/// The sha256 of every `.deb` `pins` name: the packages of their locks, and the `.deb` of each
/// `deb` pin (a kernel).
pub fn locked_sha256s(pins: &crate::images::pin::Pins) -> std::collections::BTreeSet<String> {
    use crate::images::pin::Source;
    let locked = pins
        .iter()
        .filter_map(|p| p.lock.as_ref())
        .flat_map(|l| l.packages.iter().map(|p| p.sha256.clone()));
    let deb_pins = pins
        .iter()
        .filter(|p| p.sources.iter().any(|s| matches!(s, Source::Deb(_))))
        .map(|p| p.sha256.clone());
    locked.chain(deb_pins).collect()
}

/// The message of `--strict-pins` when locked packages moved: which, and the two ways forward.
pub fn refusal(pin: &str, total: usize, moved: &[Moved]) -> String {
    let list: Vec<String> = moved.iter().map(|m| format!("  {m}")).collect();
    format!(
        "{} of {total} locked packages are no longer served and not in the cache \
         (--strict-pins):\n{}\nEither bring the locked .debs: rerun from an archive made with \
         `parkbench archive RUN_DIR --with-debs` (or `--with-images`) where they were cached \
         (`parkbench rerun <archive>`), or accept the served set: `parkbench pin lock {pin}` \
         writes a new lock and sha256. Without --strict-pins the build goes on with the \
         served versions and records the drift.",
        moved.len(),
        list.join("\n")
    )
}

/// A local apt repository (flat, with a Release file naming `suite`) of `debs` in `dir`, and
/// the sources line that reads it.
pub fn repository(debs: &[(Locked, PathBuf)], suite: &str, dir: &Path) -> Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let text = dir.to_str().filter(|s| !s.contains(char::is_whitespace));
    let Some(text) = text else {
        bail!(
            "the cache folder {} has a space in its path, which an apt source cannot name: \
             set PARKBENCH_CACHE to another folder",
            dir.display()
        );
    };
    for (l, blob) in debs {
        let file = dir.join(format!(
            "{}_{}_{}.deb",
            l.name,
            l.version.replace(':', "%3a"),
            l.arch
        ));
        if std::fs::hard_link(blob, &file).is_err() {
            std::fs::copy(blob, &file)
                .with_context(|| format!("copying {} to {}", blob.display(), file.display()))?;
        }
    }
    let packages = run_to_string(
        Command::new("dpkg-scanpackages")
            .args(["--multiversion", ".", "/dev/null"])
            .current_dir(dir),
        "dpkg-scanpackages (apt-get install dpkg-dev)",
    )?;
    write(&dir.join("Packages"), &with_priorities(&packages, debs))?;
    // mmdebstrap picks the essential and required packages of the suite it is given, by the
    // Release file's suite and codename.
    let release = run_to_string(
        Command::new("apt-ftparchive")
            .arg(format!("-oAPT::FTPArchive::Release::Suite={suite}"))
            .arg(format!("-oAPT::FTPArchive::Release::Codename={suite}"))
            .args(["release", "."])
            .current_dir(dir),
        "apt-ftparchive (apt-get install apt-utils)",
    )?;
    write(&dir.join("Release"), &release)?;
    Ok(format!("deb [trusted=yes] copy://{text} ./"))
}

/// The `Packages` index with each package's `Priority` set to the locked one (the mirror's index
/// overrides what the `.deb` says, and the variant picks packages by it).
fn with_priorities(packages: &str, debs: &[(Locked, PathBuf)]) -> String {
    let priority: BTreeMap<(&str, &str), &str> = debs
        .iter()
        .map(|(l, _)| ((l.name.as_str(), l.version.as_str()), l.priority.as_str()))
        .collect();
    let mut out = Vec::new();
    for stanza in packages.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
                .unwrap_or_default()
        };
        let Some(p) = priority.get(&(field("Package"), field("Version"))) else {
            out.push(stanza.to_owned());
            continue;
        };
        let mut lines: Vec<String> = stanza
            .lines()
            .filter(|l| !l.starts_with("Priority: "))
            .map(str::to_owned)
            .collect();
        lines.push(format!("Priority: {p}"));
        out.push(lines.join("\n"));
    }
    out.join("\n\n")
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Package, version and architecture of a `.deb`, from its control file (priority and sha256
/// left empty).
pub fn fields(deb: &Path) -> Result<Locked> {
    let out = run_to_string(
        Command::new("dpkg-deb")
            .args([
                "--show",
                "--showformat=${Package} ${Version} ${Architecture}",
            ])
            .arg(deb),
        "dpkg-deb",
    )?;
    let parts: Vec<&str> = out.split_whitespace().collect();
    let [name, version, arch] = parts.as_slice() else {
        bail!("dpkg-deb read {out:?} from {}", deb.display());
    };
    Ok(Locked {
        name: name.to_string(),
        version: version.to_string(),
        arch: arch.to_string(),
        priority: String::new(),
        sha256: String::new(),
    })
}

/// The `.deb` files in `dir`, sorted.
pub fn deb_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    files.sort();
    Ok(files)
}

/// Runs `cmd` and returns its standard output; `what` names the tool in errors.
fn run_to_string(cmd: &mut Command, what: &str) -> Result<String> {
    let output = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {what}"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    String::from_utf8(output.stdout).with_context(|| format!("reading the output of {what}"))
}

/// apt with its own sources, lists and caches under the kit's cache: never the host's state.
pub struct Apt {
    dir: PathBuf,
}

impl Apt {
    /// apt reading exactly `sources` (one-line `deb` entries), its state in `dir`.
    pub fn new(dir: &Path, sources: &[String]) -> Result<Apt> {
        let text = sources.join("\n") + "\n";
        let dir = dir.to_owned();
        for sub in ["lists/partial", "cache/archives/partial", "parts"] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        }
        write(&dir.join("sources.list"), &text)?;
        write(&dir.join("status"), "")?;
        Ok(Apt { dir })
    }

    fn command(&self, tool: &str) -> Command {
        let d = |s: &str| self.dir.join(s).display().to_string();
        let mut cmd = Command::new(tool);
        for (key, value) in [
            ("Dir::Etc::SourceList", d("sources.list")),
            ("Dir::Etc::SourceParts", d("parts")),
            ("Dir::Etc::Preferences", d("parts/none")),
            ("Dir::Etc::PreferencesParts", d("parts")),
            ("Dir::State::Lists", d("lists")),
            ("Dir::State::status", d("status")),
            ("Dir::Cache", d("cache")),
            ("Debug::NoLocking", "1".into()),
            ("APT::Sandbox::User", "root".into()),
            ("Acquire::Languages", "none".into()),
        ] {
            cmd.arg("-o").arg(format!("{key}={value}"));
        }
        cmd
    }

    /// Reads the sources' package indices.
    pub fn update(&self) -> Result<()> {
        run_to_string(
            self.command("apt-get").args(["update", "-q"]),
            "apt-get update",
        )
        .map(drop)
        .context("reading the package indices of the apt sources")
    }

    /// Every version the sources serve of each package, highest first.
    pub fn served<'a>(
        &self,
        names: impl Iterator<Item = &'a str>,
    ) -> Result<BTreeMap<String, Vec<String>>> {
        let out = run_to_string(
            self.command("apt-cache").arg("madison").args(names),
            "apt-cache madison",
        )?;
        Ok(parse_madison(&out))
    }

    /// Downloads `name=version` of each into `dir`.
    pub fn download(&self, wanted: &[String], dir: &Path) -> Result<()> {
        run_to_string(
            self.command("apt-get")
                .args(["download", "-q"])
                .args(wanted)
                .current_dir(dir),
            "apt-get download",
        )
        .map(drop)
    }
}

/// `apt-cache madison` lines (` libc6 | 2.36-9+deb12u14 | <uri> <suite>/main amd64 Packages`)
/// as package → versions, in the order printed (highest first), without duplicates.
fn parse_madison(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split('|').map(str::trim).collect();
        let [name, version, from, ..] = parts.as_slice() else {
            continue;
        };
        if from.ends_with("Sources") {
            continue;
        }
        let versions = out.entry(name.to_string()).or_default();
        if !versions.iter().any(|v| v == version) {
            versions.push(version.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_takes_only_the_debs_a_trusted_lock_names() {
        let tmp = tempfile::tempdir().unwrap();
        let (archive, cache) = (tmp.path().join("debs"), tmp.path().join("cache"));
        std::fs::create_dir_all(&archive).unwrap();
        let locked = archive.join("libc6_2.36-9_amd64.deb");
        let crafted = archive.join("evil_1.0_amd64.deb");
        std::fs::write(&locked, b"the locked package").unwrap();
        std::fs::write(&crafted, b"a package with a postinst").unwrap();
        let trusted = std::collections::BTreeSet::from([digest::file(&locked).unwrap()]);
        let cache = Cache::open(&cache).unwrap();
        let imported = import(&cache, &archive, "an archive", &trusted).unwrap();
        assert_eq!(imported.added, 1);
        assert_eq!(imported.refused, ["evil_1.0_amd64.deb"]);
        let crafted_sha = digest::file(&crafted).unwrap();
        assert!(
            cache.get(&crafted_sha).unwrap().is_none(),
            "the crafted .deb stays out"
        );
        assert!(
            cache
                .get(&digest::file(&locked).unwrap())
                .unwrap()
                .is_some()
        );
        // An archive cannot vouch for its own .deb: trusting nothing imports nothing.
        let fresh = Cache::open(&tmp.path().join("fresh")).unwrap();
        let none = import(&fresh, &archive, "an archive", &Default::default()).unwrap();
        assert_eq!((none.added, none.refused.len()), (0, 2));
    }

    #[test]
    fn the_index_takes_the_locked_priority() {
        let locked = Locked {
            name: "apt".into(),
            version: "2.6.1".into(),
            arch: "amd64".into(),
            priority: "required".into(),
            sha256: String::new(),
        };
        let index = "Package: apt\nVersion: 2.6.1\nPriority: important\nFilename: ./apt.deb\n\n\
                     Package: gcc\nVersion: 1\nPriority: optional\n";
        let out = with_priorities(index, &[(locked, PathBuf::new())]);
        assert_eq!(
            out,
            "Package: apt\nVersion: 2.6.1\nFilename: ./apt.deb\nPriority: required\n\n\
             Package: gcc\nVersion: 1\nPriority: optional\n"
        );
    }

    #[test]
    fn madison_lists_versions_highest_first() {
        let text = "     libc6 | 2.36-9+deb12u15 | http://m.example/debian-security bookworm-security/main amd64 Packages\n\
                    \x20    libc6 | 2.36-9+deb12u14 | http://m.example/debian bookworm/main amd64 Packages\n\
                    \x20    libc6 | 2.36-9+deb12u14 | http://m.example/debian bookworm/main Sources\n\
                    \x20     gcc | 4:12.2.0-3 | http://m.example/debian bookworm/main amd64 Packages\n";
        let served = parse_madison(text);
        assert_eq!(served["libc6"], ["2.36-9+deb12u15", "2.36-9+deb12u14"]);
        assert_eq!(served["gcc"], ["4:12.2.0-3"]);
    }

    #[test]
    fn the_refusal_names_the_packages_and_both_ways() {
        let moved = [Moved {
            sha256: None,
            package: "libc6".into(),
            locked: "2.36-9+deb12u14".into(),
            served: Some("2.36-9+deb12u15".into()),
        }];
        let text = refusal("debian-base", 137, &moved);
        assert!(
            text.contains("1 of 137")
                && text.contains("libc6 2.36-9+deb12u14 → 2.36-9+deb12u15")
                && text.contains("--with-debs")
                && text.contains("parkbench pin lock debian-base"),
            "{text}"
        );
    }
}
