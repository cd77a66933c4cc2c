//! Downloads of raw inputs (a wheel, an official tarball), verified against their own sha256
//! before anything is made of them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

use crate::files::digest;
use crate::images::cache::HashMismatch;
use crate::images::pin::{Deb, Pip, Url};

/// Downloads the wheel with `pip download --no-deps` into `dir` and checks its sha256.
pub fn pip(p: &Pip, dir: &Path) -> Result<PathBuf> {
    let into = dir.join("pip");
    let requirement = format!("{}=={}", p.package, p.version);
    let output = Command::new("pip")
        .args([
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-d",
        ])
        .arg(&into)
        .arg(&requirement)
        .output()
        .context("running pip: install it (apt-get install python3-pip) or put it on PATH")?;
    if !output.status.success() {
        bail!(
            "pip download {requirement} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    let wheels = with_extension(&into, "whl")?;
    let [wheel] = wheels.as_slice() else {
        bail!(
            "pip download {requirement} left {} wheels, expected exactly one",
            wheels.len()
        );
    };
    verify(wheel, &p.sha256, &requirement)?;
    Ok(wheel.clone())
}

/// Fetches the package file with `apt-get download` into `dir` (the host's apt sources, or those
/// of `PARKBENCH_APT_SOURCES`; the pin's sha256 is checked by the caller on the bytes).
pub fn deb(d: &Deb, dir: &Path) -> Result<PathBuf> {
    let into = dir.join("deb");
    std::fs::create_dir_all(&into).with_context(|| format!("creating {}", into.display()))?;
    let wanted = format!("{}={}", d.package, d.version);
    if let Some(sources) = super::rootfs::sources_from_env()? {
        let apt = super::debs::Apt::new(&dir.join("apt"), &sources)?;
        apt.update()?;
        apt.download(std::slice::from_ref(&wanted), &into)
            .with_context(|| format!("fetching {wanted} from {}", super::SOURCES_VAR))?;
        return single_deb(&into, &wanted);
    }
    let output = Command::new("apt-get")
        .args(["download", "-q"])
        .arg(&wanted)
        .current_dir(&into)
        .output()
        .context("running apt-get: this source needs a Debian host with apt")?;
    if !output.status.success() {
        bail!(
            "apt-get download {wanted} failed ({}):\n{}\nrun `apt-get update`; if the version \
             is no longer served, the pin has to be made again with the version the mirror has",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    single_deb(&into, &wanted)
}

/// The one `.deb` apt left in `into`.
fn single_deb(into: &Path, wanted: &str) -> Result<PathBuf> {
    let debs = with_extension(into, "deb")?;
    let [deb] = debs.as_slice() else {
        bail!(
            "apt-get download {wanted} left {} files, expected one .deb",
            debs.len()
        );
    };
    Ok(deb.clone())
}

/// The files in `dir` whose name ends in `.ext`.
fn with_extension(dir: &Path, ext: &str) -> Result<Vec<PathBuf>> {
    Ok(std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect())
}

/// Downloads `u.url` with curl into `dir` and checks its sha256 when the pin gives one.
pub fn url(u: &Url, dir: &Path) -> Result<PathBuf> {
    let name = u
        .url
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or("download");
    let file = dir.join(name);
    let output = Command::new("curl")
        .args(["-fsSL", "--retry", "2", "-o"])
        .arg(&file)
        .arg(&u.url)
        .output()
        .context("running curl: install it (apt-get install curl) or put it on PATH")?;
    ensure!(
        output.status.success(),
        "curl {} failed ({}): {}",
        u.url,
        output.status,
        String::from_utf8_lossy(&output.stderr).trim_end()
    );
    // Without a published hash only the artifact's own sha256 (checked by the caller) protects it.
    if let Some(sha) = &u.sha256 {
        verify(&file, sha, &u.url)?;
    }
    Ok(file)
}

fn verify(file: &Path, expected: &str, what: &str) -> Result<()> {
    let actual = digest::file(file)?;
    if actual != expected {
        return Err(HashMismatch {
            what: format!("download {what}"),
            expected: expected.to_owned(),
            actual,
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_names_both_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("w.whl");
        std::fs::write(&f, b"wheel").unwrap();
        let good = digest::file(&f).unwrap();
        verify(&f, &good, "w").unwrap();
        let bad = "0".repeat(64);
        let err = verify(&f, &bad, "w").unwrap_err();
        let mismatch = HashMismatch::find(&err).expect("a typed mismatch");
        assert_eq!((&mismatch.actual, &mismatch.expected), (&good, &bad));
        let err = err.to_string();
        assert!(err.contains(&good) && err.contains(&bad), "{err}");
    }
}
