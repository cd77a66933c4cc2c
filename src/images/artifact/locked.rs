//! A root filesystem built from its package lock: the locked `.deb`s (cached, or fetched by exact
//! version) installed by mmdebstrap from a local repository, so the tar follows from the lock. And
//! the lock itself, made by one mmdebstrap run from the apt sources (`parkbench pin lock`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::{debs, rootfs};
use crate::files::{digest, read_text};
use crate::images::cache::Cache;
use crate::images::pin::{Drift, Lock, Locked, Mmdebstrap, Pin};

/// A root filesystem tar in the cache, built from a lock.
#[derive(Debug)]
pub struct Built {
    /// The cache blob.
    pub path: PathBuf,
    /// Its sha256: the pin's, unless packages drifted.
    pub sha256: String,
    /// What moved from the lock, if anything did.
    pub drift: Option<Drift>,
}

/// Builds (or finds in the cache) the root filesystem of `pin` from its lock. With `strict`, a
/// locked package that is neither cached nor served stops the build; without, the served version
/// stands in and the tar is stored under its own sha256, with the drift.
pub fn ensure(
    cache: &Cache,
    pin: &Pin,
    m: &Mmdebstrap,
    lock: &Lock,
    strict: bool,
) -> Result<Built> {
    check_tools()?;
    let resolved = debs::resolve(cache, &pin.name, lock, || rootfs::apt_sources(m), strict)?;
    let installed = resolved.lock();
    let drift = (!resolved.moved.is_empty()).then(|| Drift {
        pin: pin.name.clone(),
        packages: lock.packages.len(),
        moved: resolved.moved.clone(),
        sha256: String::new(),
    });
    // A drifted tar is found again by what went into it.
    let key = digest::bytes(format!("{m:?}\n{}", installed.to_text(&pin.name)).as_bytes());
    let memo = cache.root().join("rootfs-from-lock").join(&key);
    if drift.is_some()
        && let Ok(sha) = std::fs::read_to_string(&memo)
        && let Some(path) = cache.get(sha.trim())?
    {
        let sha256 = sha.trim().to_owned();
        let drift = drift.map(|d| Drift {
            sha256: sha256.clone(),
            ..d
        });
        return Ok(Built {
            path,
            sha256,
            drift,
        });
    }
    let Some(drift) = drift else {
        let (path, sha256) = build(cache, &pin.name, m, &resolved, Some(&pin.sha256))
            .with_context(|| {
                format!(
                    "the lock's packages gave another tar than the pin records: another \
                     mmdebstrap than the pin's, or a lock edited by hand; `parkbench pin lock {}` \
                     makes both again",
                    pin.name
                )
            })?;
        return Ok(Built {
            path,
            sha256,
            drift: None,
        });
    };
    let (path, sha256) = build(cache, &pin.name, m, &resolved, None)?;
    std::fs::create_dir_all(memo.parent().expect("memo has a parent"))
        .and_then(|()| std::fs::write(&memo, &sha256))
        .with_context(|| format!("writing {}", memo.display()))?;
    let drift = Some(Drift {
        sha256: sha256.clone(),
        ..drift
    });
    Ok(Built {
        path,
        sha256,
        drift,
    })
}

/// The root filesystem of exactly the packages of `lock`, fetched if need be (a package no
/// longer served is an error): its cache blob and sha256, whatever it is.
pub fn build_exact(
    cache: &Cache,
    pin: &str,
    m: &Mmdebstrap,
    lock: &Lock,
) -> Result<(PathBuf, String)> {
    let resolved = debs::resolve(cache, pin, lock, || rootfs::apt_sources(m), true)?;
    build(cache, pin, m, &resolved, None)
}

/// Runs mmdebstrap on a local repository of the resolved `.deb`s and stores the tar, checked
/// against `expected` when given.
fn build(
    cache: &Cache,
    pin: &str,
    m: &Mmdebstrap,
    resolved: &debs::Resolved,
    expected: Option<&str>,
) -> Result<(PathBuf, String)> {
    let scratch = cache.scratch()?;
    let source = debs::repository(&resolved.debs, &m.suite, &scratch.path().join("repo"))?;
    let mut blob = cache.writer()?;
    rootfs::mmdebstrap(pin, m, &[source], scratch.path(), &mut blob)?;
    let label = format!("pin {pin}, built from {}", lock_name(pin));
    match expected {
        Some(sha) => Ok((blob.commit(sha, &label)?, sha.to_owned())),
        None => blob.commit_as_is(&label),
    }
}

/// The tools a build from a lock runs, each with how to install it; checked first, so that a
/// machine without them hears so before anything is fetched.
const TOOLS: [(&str, &str); 4] = [
    ("mmdebstrap", "apt-get install mmdebstrap"),
    ("apt-get", "a Debian host with apt"),
    ("dpkg-scanpackages", "apt-get install dpkg-dev"),
    ("apt-ftparchive", "apt-get install apt-utils"),
];

fn check_tools() -> Result<()> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = |tool: &str| std::env::split_paths(&path).any(|d| d.join(tool).is_file());
    let missing: Vec<String> = TOOLS
        .iter()
        .filter(|(tool, _)| !found(tool))
        .map(|(tool, how)| format!("{tool} is not installed ({how})"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "building a root filesystem from its lock: {} (see `parkbench doctor`)",
            missing.join("; ")
        );
    }
    Ok(())
}

fn lock_name(pin: &str) -> String {
    format!("toolchains/{pin}.lock")
}

/// Makes the lock of `pin`: mmdebstrap installs the pin's packages from the apt sources (into a
/// folder it then deletes), keeping every `.deb` it fetched; each goes into the cache, and every
/// installed package is locked at the version installed.
pub fn make(cache: &Cache, m: &Mmdebstrap) -> Result<Lock> {
    let sources = rootfs::apt_sources(m)?;
    let scratch = cache.scratch()?;
    let debs_dir = scratch.path().join("debs");
    let lists_dir = scratch.path().join("lists");
    let listing = scratch.path().join("installed");
    for dir in [&debs_dir, &lists_dir] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut args = vec![
        "--mode=unshare".to_owned(),
        format!("--variant={}", m.variant),
        "--format=null".to_owned(),
        "--skip=download/empty,essential/unlink".to_owned(),
    ];
    if !m.packages.is_empty() {
        args.push(format!("--include={}", m.packages.join(",")));
    }
    args.push(format!(
        "--customize-hook=sync-out /var/cache/apt/archives {}",
        debs_dir.display()
    ));
    // The package indices give each package's priority as the mirror sees it.
    args.push(format!(
        "--customize-hook=sync-out /var/lib/apt/lists {}",
        lists_dir.display()
    ));
    args.push(format!(
        r#"--customize-hook=chroot "$1" dpkg-query -W -f='${{Package}} ${{Version}} ${{Architecture}}\n' > {}"#,
        listing.display()
    ));
    // Nothing after `--` is read as an option, whatever the pin or the sources say.
    args.extend(["--".to_owned(), m.suite.clone(), "/dev/null".to_owned()]);
    args.extend(sources);
    let log = scratch.path().join("mmdebstrap.log");
    let status = Command::new("mmdebstrap")
        .args(&args)
        .env("SOURCE_DATE_EPOCH", m.source_date_epoch.to_string())
        .env("TMPDIR", scratch.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?)
        .status()
        .context("running mmdebstrap: run `apt-get install mmdebstrap`")?;
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("mmdebstrap failed ({status}):\n{}", tail.join("\n"));
    }
    let installed = read_text(&listing)?;
    let priorities = priorities(&lists_dir)?;
    lock_of(cache, &installed, &debs_dir, &priorities)
}

/// (package, version) → priority, from the `*_Packages` indices in `dir`.
fn priorities(dir: &Path) -> Result<BTreeMap<(String, String), String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("listing {}", dir.display()))?
            .path();
        if !path.to_string_lossy().ends_with("_Packages") {
            continue;
        }
        let text = read_text(&path)?;
        for stanza in text.split("\n\n") {
            let field = |name: &str| {
                stanza
                    .lines()
                    .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
                    .map(str::to_owned)
            };
            if let (Some(p), Some(v), Some(prio)) =
                (field("Package"), field("Version"), field("Priority"))
            {
                out.insert((p, v), prio);
            }
        }
    }
    Ok(out)
}

/// The lock of the packages `dpkg-query` listed (`name version arch` lines), each `.deb` found
/// in `debs_dir` and stored in the cache.
fn lock_of(
    cache: &Cache,
    installed: &str,
    debs_dir: &Path,
    priorities: &BTreeMap<(String, String), String>,
) -> Result<Lock> {
    let mut files = BTreeMap::new();
    for file in debs::deb_files(debs_dir)? {
        let mut l = debs::fields(&file)?;
        l.sha256 = digest::file(&file)?;
        let label = format!("deb {} {} {}", l.name, l.version, l.arch);
        let reader =
            std::fs::File::open(&file).with_context(|| format!("reading {}", file.display()))?;
        cache.put(&l.sha256, &label, reader)?;
        cache.set_provenance(&l.sha256, &label)?;
        files.insert((l.name.clone(), l.version.clone(), l.arch.clone()), l);
    }
    let mut packages = Vec::new();
    for line in installed.lines().filter(|l| !l.trim().is_empty()) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [name, version, arch] = parts.as_slice() else {
            bail!("dpkg-query printed {line:?}");
        };
        let key = (name.to_string(), version.to_string(), arch.to_string());
        let Some(locked) = files.remove(&key) else {
            bail!("{name} {version} {arch} is installed, but mmdebstrap kept no .deb of it");
        };
        let Some(priority) = priorities.get(&(key.0, key.1)) else {
            bail!("{name} {version} is installed, but no package index of the sources lists it");
        };
        packages.push(Locked {
            priority: priority.clone(),
            ..locked
        });
    }
    Ok(Lock::new(packages))
}
