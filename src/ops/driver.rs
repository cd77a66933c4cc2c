//! `parkbench driver`: the driver built in the pinned Rust toolchain image (what `just driver` runs);
//! and `parkbench verify --rebuild-driver`: an archive's driver rebuilt from its own sources in the
//! toolchain image of the reviewer's repository, and compared with the one it carries.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};

use super::Ending;
use crate::engine::Engine;
use crate::images::driver::{self, Fresh, SOURCES};
use crate::outputs::archive::driver::{Carried, MEMBER, PINNED, RECORD, RUNNING, SELF_CONTAINED};
use crate::outputs::archive::{self, Unpack};

/// `driver`: builds the driver from `repo` in the pinned toolchain image and writes it to `out`.
/// With `or_host`, when it cannot be built there (no Engine; the toolchain image cannot be built on
/// this machine yet, which `parkbench doctor` explains), the running driver (a host build) is copied
/// instead, and says so: the archives it writes say it is not the reproducible one.
pub async fn build(repo: &Path, out: &Path, no_cache: bool, or_host: bool) -> Result<Ending> {
    if let Written::Pinned { sha256 } = written(repo, out, no_cache, or_host).await? {
        println!("{sha256}  {}", out.display());
    }
    Ok(Ending::Ok)
}

/// Which driver [`written`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// The build in the pinned toolchain image, and its sha256.
    Pinned { sha256: String },
    /// The running driver, a host build: the pinned one could not be built (said).
    Host,
}

/// [`build`], saying which driver it wrote.
pub async fn written(repo: &Path, out: &Path, no_cache: bool, or_host: bool) -> Result<Written> {
    match pinned(repo, out, no_cache).await {
        Ok(sha256) => Ok(Written::Pinned { sha256 }),
        Err(e) if or_host => host_instead(out, &e).map(|()| Written::Host),
        Err(e) => Err(e),
    }
}

/// The pinned build written to `out`, said on stderr; its sha256.
async fn pinned(repo: &Path, out: &Path, no_cache: bool) -> Result<String> {
    let engine = Engine::connect().await?;
    let started = Instant::now();
    let fresh = if no_cache {
        Fresh::Everything
    } else {
        Fresh::Reuse
    };
    let built = driver::build(&engine, repo, repo, out, fresh).await?;
    eprintln!(
        "driver: {} in {} ({}, {:.0} s)",
        out.display(),
        built.tag,
        if built.reused {
            "reused: nothing changed"
        } else {
            "built"
        },
        started.elapsed().as_secs_f64()
    );
    Ok(built.sha256)
}

/// The running driver, when self-contained, copied to `out`: the pinned build could not be made.
fn host_instead(out: &Path, why: &anyhow::Error) -> Result<()> {
    if !SELF_CONTAINED {
        bail!(
            "the driver cannot be built in the pinned toolchain image ({why:#}), and this \
             parkbench is not self-contained to stand in for it: mend what stops the pinned \
             build, or run `just driver` (or `just reproduce`), whose host build is"
        );
    }
    let bytes = std::fs::read(RUNNING).context("reading the running parkbench")?;
    driver::write_executable(out, &bytes)?;
    eprintln!(
        "warning: the driver cannot be built in the pinned toolchain image: {why:#}\n\
         driver: {} is this host's build instead, which no other machine is claimed to reproduce; \
         the archives it writes say so (`built_in: host`)",
        out.display()
    );
    Ok(())
}

/// `verify --rebuild-driver`: checks `archive`, unpacks its `source/` in the same pass, rebuilds the
/// driver from the driver's sources there (refused when they could fetch or substitute anything but
/// the locked registry crates) in the toolchain image of `repo`, the reviewer's own (never the
/// archive's: its recipe could forge the result; its own toolchain files, when they differ, are
/// named), its own crate compiled again (the crates' layer from the Engine's build cache when this
/// machine built the same crates before), and says whether it is the file the archive carries (or,
/// when it carries only the driver's record, the file that record names); a different file fails.
pub async fn rebuild(archive: &Path, repo: &Path) -> Result<Ending> {
    let tmp = tempfile::tempdir().context("creating a folder for the archive's sources")?;
    let unpack = Unpack {
        dest: tmp.path().to_owned(),
        members: vec!["source".into()],
    };
    let report = archive::check_unpacking(archive, unpack)
        .with_context(|| format!("checking {}", archive.display()))?;
    let Some(carried) = report.driver else {
        bail!(
            "{}: names no driver (it has no {RECORD}): there is nothing to rebuild",
            archive.display()
        );
    };
    let theirs = compared_with(&carried, archive)?;
    println!("{}", carried.rebuilding_line());
    let source = tmp.path().join("source");
    driver::check_sources(&source, &repo.join("Cargo.lock"))
        .with_context(|| format!("{}: the driver's sources", archive.display()))?;
    let differ = toolchain_note(repo, &source)?;
    let engine = Engine::connect().await?;
    let started = Instant::now();
    let rebuilt = tmp.path().join("rebuilt");
    let built = driver::build(&engine, repo, &source, &rebuilt, Fresh::Build).await?;
    eprintln!(
        "rebuilt from the archive's driver sources ({}) in this repository's toolchain image in {:.0} s",
        SOURCES.join(", "),
        started.elapsed().as_secs_f64()
    );
    if built.sha256 == carried.sha256 {
        println!(
            "rebuilt driver: sha256 {}: the same file as {theirs}",
            built.sha256
        );
        return Ok(Ending::Ok);
    }
    let expected = if !differ.is_empty() {
        "the archive was built with another toolchain than this repository's (above), so this \
         may be that toolchain rather than a forged driver: rebuild with a checkout of the \
         archive's parkbench version, or do not trust it"
    } else if !carried.inside {
        "its record says it was built in the pinned toolchain image, so the run was written by a \
         driver its sources do not give: do not trust the archive's sources to be the run's"
    } else if carried.record.built_in == PINNED {
        "its record says it was built in the pinned toolchain image, so the archive's driver is \
         not the one its sources give: do not run it"
    } else {
        "its record says it is a host build, which no rebuild is claimed to reproduce: check and \
         verify with a driver you built yourself (`just driver`), not with this one"
    };
    bail!(
        "rebuilt driver: sha256 {}, but {theirs} has sha256 {}: not the same file; {expected}",
        built.sha256,
        carried.sha256
    )
}

/// What a rebuild of `archive`'s driver is compared with: the file it carries, or the driver its
/// record names; a record alone of a host build is refused (no rebuild is claimed to give it).
fn compared_with(carried: &Carried, archive: &Path) -> Result<String> {
    if carried.inside {
        return Ok(format!("the archive's {MEMBER}"));
    }
    ensure!(
        carried.record.built_in == PINNED,
        "{}: its {RECORD} names a host build of the driver, which no rebuild is claimed to \
         reproduce, and the archive does not carry the file: there is nothing to compare a rebuild \
         with; check and verify it with a driver you built yourself (`just driver`), or ask its \
         author for an archive the pinned driver wrote",
        archive.display()
    );
    Ok(format!("the driver the archive's {RECORD} names"))
}

/// Says which of the files the toolchain image is made of differ between the reviewer's `repo` and
/// the archive's `source`, and returns them: the rebuild uses the reviewer's.
fn toolchain_note(repo: &Path, source: &Path) -> Result<Vec<String>> {
    let differ = driver::toolchain_differences(repo, source)
        .with_context(|| format!("reading the toolchain recipe of {}", repo.display()))?;
    if !differ.is_empty() {
        eprintln!(
            "note: the archive's toolchain files differ from this repository's ({}): the rebuild \
             uses this repository's toolchain image, not the archive's; a different driver may \
             then mean a different toolchain",
            differ.join(", ")
        );
    }
    Ok(differ)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::archive::driver::DriverRecord;

    fn carried(inside: bool, built_in: &str) -> Carried {
        Carried {
            sha256: "ab".repeat(32),
            record: DriverRecord {
                sha256: "ab".repeat(32),
                version: "0.1.0".into(),
                target: "x86_64-unknown-linux-gnu".into(),
                linking: "static".into(),
                rustc: "rustc 1.95.0".into(),
                opt_level: "0".into(),
                rustflags: String::new(),
                built_with: "just driver".into(),
                built_in: built_in.into(),
            },
            inside,
        }
    }

    #[test]
    fn a_rebuild_is_compared_with_the_carried_file_or_the_pinned_driver_a_record_names() {
        let archive = Path::new("run.tar.gz");
        let with = |inside, built_in| compared_with(&carried(inside, built_in), archive);
        assert_eq!(with(true, PINNED).unwrap(), "the archive's parkbench");
        assert_eq!(with(true, "host").unwrap(), "the archive's parkbench");
        assert_eq!(
            with(false, PINNED).unwrap(),
            "the driver the archive's parkbench.json names"
        );
        let err = format!("{:#}", with(false, "host").unwrap_err());
        assert!(
            err.contains("names a host build") && err.contains("just driver"),
            "{err}"
        );
    }
}
