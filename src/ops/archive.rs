//! `parkbench archive`: a run's deterministic archive, with the source bundle, the self-contained
//! driver that writes it and, on request, the probe images.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::engine::Engine;
use crate::images::cache::Cache;
use crate::images::pin::{self, Source};
use crate::images::{self, Manifest};
use crate::outputs::archive::{self, ArchiveInfo, driver};
use crate::run::run_dir::{self, RunDir};

/// The archive's folder of locked `.deb`s (`--with-debs`).
pub const DEBS: &str = "debs";

/// The source bundle's folder of vendored crates' checksums (see [`images::vendored_checksums`]).
const VENDOR_CHECKSUMS: &str = "vendor-checksums";

/// What an archive holds besides the run folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contents {
    /// The source bundle (`source/`): what rebuilds the images and the driver elsewhere.
    pub sources: bool,
    /// The probe images, exported through the Engine.
    pub images: bool,
    /// The running driver, when it is self-contained ([`driver`]), and its record; or its record alone.
    pub driver: Driver,
    /// The locked `.deb`s of the root filesystems the run's images stand on (`debs/`), so that
    /// a rerun rebuilds them with no mirror at all. Implied by `images`.
    pub debs: bool,
}

impl Contents {
    /// Sources and the driver, no images: what `archive` and `reproduce` write by default.
    pub const DEFAULT: Contents = Contents {
        sources: true,
        images: false,
        driver: Driver::Inside,
        debs: false,
    };
    /// The run and its sources (a step of `explain`).
    pub const SOURCES: Contents = Contents {
        sources: true,
        images: false,
        driver: Driver::Left,
        debs: false,
    };
    /// The run folder alone: a reference run, which is verified and compared with, never rerun
    /// (the repository that holds it holds the sources).
    pub const RUN_ONLY: Contents = Contents {
        sources: false,
        images: false,
        driver: Driver::Left,
        debs: false,
    };
}

/// What an archive holds of the driver that writes it (when that driver is self-contained).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// The file (`<run-id>/parkbench`) and its record (`parkbench.json`).
    Inside,
    /// Its record alone (`--no-driver`): the archive names the driver by its sha256, and
    /// `verify --rebuild-driver` rebuilds that file from `source/` and compares.
    Named,
    /// Neither.
    Left,
}

/// Writes `<run-id>.tar.gz` beside the run folder (a `runs/latest` link names the run it points at).
pub async fn archive(repo: &Path, run_dir: &Path, contents: Contents) -> Result<ArchiveInfo> {
    let run = RunDir::open(run_dir)?;
    archive_to(repo, &run, &run.archive_path(), contents).await
}

/// Writes the archive of `run` to `out`.
pub async fn archive_to(
    repo: &Path,
    run: &RunDir,
    out: &Path,
    contents: Contents,
) -> Result<ArchiveInfo> {
    let temp = tempfile::tempdir().context("creating a folder for exported images")?;
    let mut extras = if contents.images {
        export_images(repo, run, temp.path()).await?
    } else {
        Vec::new()
    };
    extras.extend(driver_members(temp.path(), contents.driver)?);
    if contents.debs || contents.images {
        extras.extend(deb_members(repo, run)?);
    }
    let sources = if contents.sources {
        extras.extend(study_readme(run.path()));
        sources(repo, run)?
    } else {
        Vec::new()
    };
    let info = archive::write_with(run.path(), &sources, &extras, out)?;
    eprintln!(
        "archive: {} ({:.1} KiB, {} members, sha256 {})",
        super::next_step::from_here(&info.path).display(),
        info.size_bytes as f64 / 1024.0,
        info.members,
        info.sha256
    );
    Ok(info)
}

/// The archive member of the study's README (`results/<study>/README.md`, beside the run's
/// `runs/` folder): what the study chose and its deviations, for a reviewer of the archive, at
/// `<run-id>/README.md`. None when the study has none, or the run folder holds a file of that name.
fn study_readme(run_dir: &Path) -> Option<(String, PathBuf)> {
    let readme = run_dir.parent()?.parent()?.join(README);
    (readme.is_file() && !run_dir.join(README).exists()).then(|| (README.to_string(), readme))
}

/// The name of a study's README, and of its copy in an archive.
const README: &str = "README.md";

/// What `contents` holds of the running driver, as archive members: the file and its record, or
/// the record alone, when it is self-contained; otherwise none, saying why.
fn driver_members(dir: &Path, contents: Driver) -> Result<Vec<(String, PathBuf)>> {
    if contents == Driver::Left {
        return Ok(Vec::new());
    }
    let carry = contents == Driver::Inside;
    let (exe, record) = match driver::this_driver()? {
        Ok(found) => found,
        Err(why) if carry => {
            eprintln!("archive: no driver inside: {why}");
            return Ok(Vec::new());
        }
        Err(_) => {
            eprintln!(
                "archive: names no driver: this parkbench is a development build (linked \
                 dynamically), which no rebuild reproduces; archives name the driver `just driver` \
                 builds"
            );
            return Ok(Vec::new());
        }
    };
    let path = dir.join(driver::RECORD);
    let json = serde_json::to_string_pretty(&record)? + "\n";
    std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    let record_member = (driver::RECORD.to_string(), path);
    if !carry {
        eprintln!(
            "archive: names this driver without carrying it ({}, {} linking, sha256 {}; \
             --no-driver)",
            record.target, record.linking, record.sha256
        );
        if record.built_in != driver::PINNED {
            eprintln!(
                "warning: this driver is a host build, which no rebuild reproduces: nobody can \
                 check the driver this archive names; build the pinned one (`just driver`) or \
                 leave out --no-driver"
            );
        }
        return Ok(vec![record_member]);
    }
    eprintln!(
        "archive: carries this driver ({}, {} linking, sha256 {})",
        record.target, record.linking, record.sha256
    );
    Ok(vec![(driver::MEMBER.to_string(), exe), record_member])
}

/// The locked `.deb`s of every root filesystem pin the run's images stand on, and the `.deb` of
/// every `deb` pin they were made from, from the cache, as `debs/<name>_<version>[_<arch>].deb`
/// members; a `.deb` the cache lacks is named, not fatal (a rerun fetches it, or names the drift).
fn deb_members(repo: &Path, run: &RunDir) -> Result<Vec<(String, PathBuf)>> {
    let manifest = run_manifest(run)?;
    let pins = pin::load_all(&repo.join("toolchains"))?;
    let cache = Cache::from_env()?;
    let mut out = Vec::new();
    for pin in pins.rootfs().filter(|p| stands_on(&manifest, &p.name)) {
        let Some(lock) = &pin.lock else {
            eprintln!(
                "archive: pin {} has no package lock; no .debs carried for it",
                pin.name
            );
            continue;
        };
        // A drifted run installed the served stand-ins, not the locked packages: carry those.
        let drift = manifest.drift.iter().find(|d| d.pin == pin.name);
        let (debs, mut missing) = installed_debs(lock, drift);
        let wanted = debs.len() + missing.len();
        for (file, sha256) in debs {
            match cache.get(&sha256)? {
                Some(path) => out.push((format!("{DEBS}/{file}"), path)),
                None => missing.push(format!("{file} (not in the cache)")),
            }
        }
        eprintln!(
            "archive: carries {} of the {wanted} .debs the run installed for {}{}{}",
            wanted - missing.len(),
            pin.name,
            drift.map_or(String::new(), |d| format!(
                " ({} of them stand-ins for moved locked packages)",
                d.moved.len()
            )),
            match missing.len() {
                0 => String::new(),
                n if n > 5 => format!("; missing: {}, and {} more", missing[..5].join(", "), n - 5),
                _ => format!("; missing: {}", missing.join(", ")),
            }
        );
    }
    // A `deb` pin's artifact is a .deb itself (a guest kernel's package): carried the same way.
    for pin in pins.iter().filter(|p| uses_artifact(&manifest, &p.name)) {
        let Some(Source::Deb(d)) = pin.sources.first() else {
            continue;
        };
        match cache.get(&pin.sha256)? {
            Some(path) => {
                let file = format!("{}_{}.deb", d.package, d.version.replace(':', "%3a"));
                out.push((format!("{DEBS}/{file}"), path));
            }
            None => eprintln!("archive: the .deb of pin {} is not in the cache", pin.name),
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// The `.deb`s a run installed for a root filesystem with this `lock`, as (archive file name,
/// sha256): each locked package, or, where the run's `drift` says it moved, the served `.deb`
/// that stood in. Second, the stand-ins whose sha256 the drift does not record (named).
fn installed_debs(
    lock: &pin::Lock,
    drift: Option<&pin::Drift>,
) -> (Vec<(String, String)>, Vec<String>) {
    let file = |name: &str, version: &str, arch: &str| {
        format!("{name}_{}_{arch}.deb", version.replace(':', "%3a"))
    };
    let mut debs = Vec::new();
    let mut unrecorded = Vec::new();
    for l in &lock.packages {
        let moved = drift.and_then(|d| d.moved.iter().find(|m| m.package == l.name));
        match moved {
            None => debs.push((file(&l.name, &l.version, &l.arch), l.sha256.clone())),
            Some(pin::Moved {
                served: Some(version),
                sha256: Some(sha256),
                ..
            }) => debs.push((file(&l.name, version, &l.arch), sha256.clone())),
            Some(m) => unrecorded.push(format!("{m} (its sha256 is not recorded in the manifest)")),
        }
    }
    (debs, unrecorded)
}

/// Whether an image of the manifest has the artifact of pin `name` among its inputs.
fn uses_artifact(manifest: &Manifest, name: &str) -> bool {
    let prefix = format!("artifact {name} ");
    manifest
        .images
        .iter()
        .any(|i| i.inputs.keys().any(|k| k.starts_with(&prefix)))
}

/// Whether an image of the manifest is made from the root filesystem of pin `name`.
fn stands_on(manifest: &Manifest, name: &str) -> bool {
    let prefix = format!("rootfs {name} ");
    manifest
        .images
        .iter()
        .any(|i| i.inputs.keys().any(|k| k.starts_with(&prefix)))
}

/// Exports the run's probe images (and its VM and kernel images) into `dir`; returns them as archive members.
async fn export_images(repo: &Path, run: &RunDir, dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let manifest = run_manifest(run)?;
    let engine = Engine::connect().await?;
    let mut extras = Vec::new();
    let probes = images::probe_names(repo)?;
    // A run under guest kernels carries its VM and kernel images too.
    let wanted =
        |name: &str| probes.iter().any(|p| p == name) || crate::run::guest::is_guest_image(name);
    for img in manifest.images.iter().filter(|i| wanted(&i.name)) {
        let path = dir.join(format!("{}.tar", img.name));
        eprintln!("exporting {}", img.tag);
        engine.export_image(&img.tag, &path).await?;
        extras.push((format!("images/{}.tar", img.name), path));
    }
    Ok(extras)
}

/// The run's `manifest.json`: the images it was measured with.
fn run_manifest(run: &RunDir) -> Result<Manifest> {
    serde_json::from_str(&run.read(run_dir::MANIFEST)?).context("parsing the run's manifest.json")
}

/// The source bundle of an archive: the repository parts needed to rebuild and rerun, and the
/// checksums of the crates vendored for the run's images.
fn sources(repo: &Path, run: &RunDir) -> Result<Vec<(String, PathBuf)>> {
    // The driver's own sources (`verify --rebuild-driver` builds it from them), then what the images
    // are built from.
    let mut out: Vec<(String, PathBuf)> = (images::driver::SOURCES.iter())
        .chain(&["Justfile", "README.md", "docker", "toolchains"])
        .map(|p| (p.to_string(), repo.join(p)))
        .filter(|(_, p)| p.exists())
        .collect();
    // An unpacked archive's source bundle (a rerun's) carries the checksums it was written with.
    let carried = repo.join(VENDOR_CHECKSUMS);
    if carried.is_dir() {
        out.push((VENDOR_CHECKSUMS.to_string(), carried));
    } else {
        // The run's images, as its manifest names them (a run folder without one names none).
        let built = if run.file(run_dir::MANIFEST).is_file() {
            (run_manifest(run)?.images.into_iter())
                .map(|i| i.name)
                .collect()
        } else {
            std::collections::BTreeSet::new()
        };
        out.extend(images::vendored_checksums(
            &Cache::from_env()?,
            repo,
            &built,
        )?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::pin::{Drift, Lock, Locked, Moved};

    fn sha(c: char) -> String {
        c.to_string().repeat(64)
    }

    fn locked(name: &str, version: &str, c: char) -> Locked {
        Locked {
            name: name.into(),
            version: version.into(),
            arch: "amd64".into(),
            priority: "required".into(),
            sha256: sha(c),
        }
    }

    #[test]
    fn the_studys_readme_is_a_member_beside_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("results/s/runs/run-1");
        std::fs::create_dir_all(&run).unwrap();
        assert_eq!(study_readme(&run), None, "no README, no member");
        let readme = tmp.path().join("results/s/README.md");
        std::fs::write(&readme, "# s\n").unwrap();
        assert_eq!(study_readme(&run), Some(("README.md".into(), readme)));
        std::fs::write(run.join("README.md"), "the run's own").unwrap();
        assert_eq!(study_readme(&run), None, "the run folder's own file stays");
    }

    #[test]
    fn a_drifted_run_carries_the_debs_it_installed() {
        let lock = Lock::new(vec![
            locked("libc6", "2.36-9", 'a'),
            locked("zlib1g", "1:1.2", 'b'),
        ]);
        let (debs, unrecorded) = installed_debs(&lock, None);
        assert_eq!(
            debs,
            [
                ("libc6_2.36-9_amd64.deb".to_string(), sha('a')),
                ("zlib1g_1%3a1.2_amd64.deb".to_string(), sha('b')),
            ]
        );
        assert!(unrecorded.is_empty());
        let moved = Moved {
            package: "libc6".into(),
            locked: "2.36-9".into(),
            served: Some("2.36-10".into()),
            sha256: Some(sha('c')),
        };
        let drift = Drift {
            pin: "debian-base".into(),
            packages: 2,
            moved: vec![moved.clone()],
            sha256: sha('d'),
        };
        let (debs, unrecorded) = installed_debs(&lock, Some(&drift));
        assert_eq!(
            debs,
            [
                ("libc6_2.36-10_amd64.deb".to_string(), sha('c')),
                ("zlib1g_1%3a1.2_amd64.deb".to_string(), sha('b')),
            ]
        );
        assert!(unrecorded.is_empty());
        // A manifest that names the stand-in's version but not its sha256: named, never the
        // locked .deb in its place.
        let old = Drift {
            moved: vec![Moved {
                sha256: None,
                ..moved
            }],
            ..drift
        };
        let (debs, unrecorded) = installed_debs(&lock, Some(&old));
        assert_eq!(debs, [("zlib1g_1%3a1.2_amd64.deb".to_string(), sha('b'))]);
        assert_eq!(unrecorded.len(), 1);
        assert!(
            unrecorded[0].contains("libc6 2.36-9 → 2.36-10"),
            "{unrecorded:?}"
        );
    }
}
