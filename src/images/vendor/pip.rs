//! `vendor: pip`: the wheels of a `requirements.txt` whose every line carries its `--hash`,
//! downloaded on the host (`pip download --require-hashes`, binary wheels only, for the image's
//! Python, its CPython ABI and manylinux platforms up to the oldest glibc of the kit's Debian bases,
//! not the host's) into `wheelhouse/`. The Dockerfile installs them with
//! `pip install --no-index --find-links wheelhouse --require-hashes -r requirements.txt`.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

use crate::files::digest;
use crate::images::recipe::Tool;

/// The program that runs pip on the host (`PARKBENCH_PYTHON`, else `python3`).
fn python() -> String {
    std::env::var("PARKBENCH_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// The oldest glibc of the kit's Debian bases (Debian 12's 2.36; Debian 13 has 2.41): a wheel
/// for it or an older one installs in every image, whatever the host's own glibc.
const GLIBC_MINOR: u32 = 36;

/// The wheels' platforms for `arch` (the Engine builds for the host's architecture): manylinux
/// from glibc 2.17 (`manylinux2014`, which pip widens to `manylinux2010` and `manylinux1`) up to
/// [`GLIBC_MINOR`], newest first; never the host's own `linux_*` tag.
fn platforms(arch: &str) -> Vec<String> {
    let mut out: Vec<String> = (17..=GLIBC_MINOR)
        .rev()
        .map(|minor| format!("manylinux_2_{minor}_{arch}"))
        .collect();
    out.push(format!("manylinux2014_{arch}"));
    out
}

/// The CPython ABI of `version` (`"3.13"` → `cp313`).
fn abi(version: &str) -> String {
    format!("cp{}", version.replace('.', ""))
}

/// The cache key: the requirements (their hashes pin every wheel), the image's Python and the
/// wheels' platforms.
pub fn key(dir: &Path, pip_python: Option<&str>) -> Result<String> {
    let requirements = digest::file(&dir.join(Tool::Pip.lockfile()))?;
    let version = pip_python.unwrap_or_default();
    let platforms = platforms(std::env::consts::ARCH).join(" ");
    Ok(digest::bytes(
        format!("pip\n{version}\n{platforms}\n{requirements}").as_bytes(),
    ))
}

/// Downloads the wheels into `out`; returns what downloaded them.
pub fn download(dir: &Path, pip_python: Option<&str>, out: &Path) -> Result<String> {
    let version = pip_python
        .context("vendor: pip needs pip_python: the image's Python version (e.g. \"3.13\")")?;
    let python = python();
    let pip = super::run(
        Command::new(&python).args(["-m", "pip", "--version"]),
        &format!("{python} -m pip --version"),
        "vendor: pip runs pip on this host: install Python 3 with pip, or name the Python that \
         has it in PARKBENCH_PYTHON",
    )?;
    let requirements = dir.join(Tool::Pip.lockfile());
    super::run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "download",
                "--require-hashes",
                "--only-binary=:all:",
            ])
            .args(["--python-version", version, "--implementation", "cp"])
            .args(["--abi", &abi(version)])
            .args(
                platforms(std::env::consts::ARCH)
                    .iter()
                    .flat_map(|p| ["--platform", p.as_str()]),
            )
            .args(["--no-input", "--disable-pip-version-check", "--dest"])
            .arg(out)
            .arg("--requirement")
            .arg(&requirements),
        &format!("pip download of {}", requirements.display()),
        "every requirement (and every dependency) must be pinned (`name==version`) with its \
         `--hash=sha256:…`, have a binary wheel for the image's Python (pip_python) that is pure \
         Python or manylinux for glibc 2.36 or older, and PyPI (or the index pip is configured \
         with) must be reachable from this host",
    )?;
    Ok(format!("{} for Python {version}", describe(&pip)))
}

/// `pip 23.2.1 (python 3.11)` from pip's `--version` line, without the path it names (the tag
/// must not depend on where pip is installed).
fn describe(version: &str) -> String {
    match (version.split(" from ").next(), version.rsplit_once('(')) {
        (Some(pip), Some((_, python))) => format!("{} ({python}", pip.trim()),
        _ => version.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_wheels_are_for_the_images_python_and_glibc_not_the_hosts() {
        assert_eq!(super::abi("3.13"), "cp313");
        let platforms = super::platforms("x86_64");
        assert_eq!(platforms.first().unwrap(), "manylinux_2_36_x86_64");
        assert!(platforms.contains(&"manylinux_2_28_x86_64".to_string()));
        assert_eq!(platforms.last().unwrap(), "manylinux2014_x86_64");
        assert!(
            !platforms.iter().any(|p| p.starts_with("linux_")
                || p.ends_with("_2_41_x86_64")
                || p.contains("_2_16_")),
            "{platforms:?}"
        );
    }

    #[test]
    fn the_pip_version_leaves_out_its_path() {
        let line = "pip 23.2.1 from /opt/py/lib/python3.11/site-packages/pip (python 3.11)";
        assert_eq!(super::describe(line), "pip 23.2.1 (python 3.11)");
        assert_eq!(super::describe("pip 9"), "pip 9");
    }
}
