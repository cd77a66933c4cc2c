//! `parkbench pin lock <name>`: makes the package lock of a root filesystem pin from what the
//! apt sources serve now (every `.deb` kept in the cache), builds the root filesystem from it, and
//! writes the lock and the tar's sha256 into the pin. `parkbench pin update <name>`: records the
//! sha256 of what a pin produces (a new pin's first hash, as `cargo update` writes a lockfile).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::Ending;
use crate::files::{read_text, write_atomic};
use crate::images::artifact;
use crate::images::cache::Cache;
use crate::images::pin::{Lock, Pin, Source};

/// Locks pin `name` of the repository's `toolchains/`.
pub fn lock(repo: &Path, name: &str) -> Result<Ending> {
    let pin_file = pin_file(repo, name)?;
    let pin = Pin::load(&pin_file)?;
    let Some(Source::Mmdebstrap(m)) = pin.sources.first() else {
        bail!(
            "pin {name} is not a root filesystem (no mmdebstrap source): only root filesystems \
             have a package lock"
        );
    };
    let cache = Cache::from_env()?;
    eprintln!(
        "{name}: installing {} from the apt sources to see what they serve",
        m.suite
    );
    let lock = artifact::make_lock(&cache, m)?;
    for line in changes(pin.lock.as_ref(), &lock) {
        eprintln!("  {line}");
    }
    eprintln!(
        "{name}: building the root filesystem from the {} locked packages",
        lock.packages.len()
    );
    let (_, sha256) = artifact::build_from_lock(&cache, &pin.name, m, &lock)
        .with_context(|| format!("pin {name}: building the root filesystem from the new lock"))?;
    let lock_file = Lock::path_beside(&pin_file);
    write_atomic(&lock_file, lock.to_text(name).as_bytes())?;
    if sha256 != pin.sha256 {
        set_sha256(&pin_file, &pin.sha256, &sha256)?;
    }
    println!(
        "{name}: {} packages locked in {}; root filesystem sha256 {sha256}{}",
        lock.packages.len(),
        lock_file.display(),
        if sha256 == pin.sha256 {
            " (as the pin records)".to_owned()
        } else {
            format!(" (was {}; {} updated)", pin.sha256, pin_file.display())
        }
    );
    Ok(Ending::Ok)
}

/// Records in pin `name` the sha256 of the artifact its sources produce: a root filesystem without
/// a lock is locked first (as `pin lock`), one with a lock is built from it; any other pin is
/// produced by its first source that gives bytes. Prints what it recorded.
pub fn update(repo: &Path, name: &str) -> Result<Ending> {
    let pin_file = pin_file(repo, name)?;
    let pin = Pin::load(&pin_file)?;
    let cache = Cache::from_env()?;
    let (from, sha256) = match (pin.sources.first(), &pin.lock) {
        (Some(Source::Mmdebstrap(_)), None) => return lock(repo, name),
        (Some(Source::Mmdebstrap(m)), Some(lock)) => {
            eprintln!(
                "{name}: building the root filesystem from its {} locked packages",
                lock.packages.len()
            );
            let (_, sha256) =
                artifact::build_from_lock(&cache, &pin.name, m, lock).with_context(|| {
                    format!("pin {name}: building the root filesystem from its lock")
                })?;
            (
                format!("its lock, {}", Lock::path_beside(&pin_file).display()),
                sha256,
            )
        }
        _ => {
            eprintln!("{name}: producing the artifact from its sources");
            artifact::produce_unchecked(&cache, &pin)?
        }
    };
    if sha256 != pin.sha256 {
        set_sha256(&pin_file, &pin.sha256, &sha256)?;
    }
    println!(
        "{name}: recorded sha256 {sha256} (from {from}){}",
        if sha256 == pin.sha256 {
            " — as the pin already recorded".to_owned()
        } else {
            format!(" in {}, was {}", pin_file.display(), pin.sha256)
        }
    );
    Ok(Ending::Ok)
}

/// The file of pin `name`: `toolchains/<name>.yaml`, the name a plain word.
fn pin_file(repo: &Path, name: &str) -> Result<std::path::PathBuf> {
    if !crate::images::recipe::is_image_name(name) {
        bail!("{name:?} is no pin name: name a file of toolchains/ without `.yaml`");
    }
    Ok(repo.join("toolchains").join(format!("{name}.yaml")))
}

/// What a new lock changes from the old one, a line per package (`libc6 2.36-9+deb12u14 →
/// 2.36-9+deb12u15`, `+ newpkg 1.0`, `- oldpkg 2.0`).
fn changes(old: Option<&Lock>, new: &Lock) -> Vec<String> {
    let Some(old) = old else {
        return vec!["(no lock before)".to_owned()];
    };
    let versions = |l: &Lock| -> BTreeMap<String, String> {
        l.packages
            .iter()
            .map(|p| (p.name.clone(), p.version.clone()))
            .collect()
    };
    let (old, new) = (versions(old), versions(new));
    let mut out = Vec::new();
    for (name, v) in &new {
        match old.get(name) {
            Some(o) if o != v => out.push(format!("{name} {o} → {v}")),
            None => out.push(format!("+ {name} {v}")),
            Some(_) => {}
        }
    }
    for (name, v) in old.iter().filter(|(n, _)| !new.contains_key(*n)) {
        out.push(format!("- {name} {v}"));
    }
    if out.is_empty() {
        out.push("the same packages as the lock before".to_owned());
    }
    out
}

/// Replaces the pin file's top-level `sha256: <old>` line, keeping every comment.
fn set_sha256(pin_file: &Path, old: &str, new: &str) -> Result<()> {
    let text = read_text(pin_file)?;
    let line = format!("sha256: {old}");
    if text.lines().filter(|l| *l == line).count() != 1 {
        bail!(
            "{} has no single line `sha256: {old}`: set it to {new} by hand",
            pin_file.display()
        );
    }
    let text: String = text
        .split_inclusive('\n')
        .map(|l| {
            if l.trim_end_matches('\n') == line {
                format!("sha256: {new}\n")
            } else {
                l.to_owned()
            }
        })
        .collect();
    write_atomic(pin_file, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::pin::Locked;

    fn lock(packages: &[(&str, &str)]) -> Lock {
        Lock::new(
            packages
                .iter()
                .map(|(n, v)| Locked {
                    name: n.to_string(),
                    version: v.to_string(),
                    arch: "amd64".into(),
                    priority: "required".into(),
                    sha256: "0".repeat(64),
                })
                .collect(),
        )
    }

    #[test]
    fn changes_name_each_package() {
        let old = lock(&[("libc6", "2.36-9+deb12u14"), ("gone", "1"), ("same", "1")]);
        let new = lock(&[("libc6", "2.36-9+deb12u15"), ("new", "2"), ("same", "1")]);
        assert_eq!(
            changes(Some(&old), &new),
            [
                "libc6 2.36-9+deb12u14 → 2.36-9+deb12u15",
                "+ new 2",
                "- gone 1"
            ]
        );
        assert_eq!(
            changes(Some(&new), &new),
            ["the same packages as the lock before"]
        );
    }

    #[test]
    fn the_pin_keeps_its_comments() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.yaml");
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        std::fs::write(&file, format!("# sha256: {a}\nname: p\nsha256: {a}\n")).unwrap();
        set_sha256(&file, &a, &b).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text, format!("# sha256: {a}\nname: p\nsha256: {b}\n"));
    }
}
