//! One run per CPU: a run holds an exclusive lock on each CPU it pins to, for as long as it measures,
//! so that a second run whose CPUs overlap is refused (naming the run that holds them) instead of
//! measuring beside it. The locks are `flock`s on one file per CPU in a folder of this machine
//! ([`folder`]): the kernel drops them when the process ends, however it ends, so a crashed run never
//! leaves a stale lock. Each file holds the holder's description, for the refusal's message.
//!
//! The lock covers runs of this machine's Engine started from this machine. `--allow-shared-cpus`
//! skips it; the run then records a validity warning that every sample may share its CPUs.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::run::warning::{Touches, Warning};
use crate::study::cpuset;

/// Where the lock files are: `$PARKBENCH_LOCKS`, or `/run/lock/parkbench` where `/run/lock` exists
/// (the system's folder for lock files), else `/tmp/parkbench-cpu-locks`: one per machine, shared by
/// every user's runs whatever their `TMPDIR`.
pub fn folder() -> PathBuf {
    #[cfg(test)]
    if let Some(dir) = TEST_FOLDER.with(|f| f.as_ref().map(|d| d.path().to_owned())) {
        return dir;
    }
    if let Some(dir) = std::env::var_os("PARKBENCH_LOCKS") {
        return PathBuf::from(dir);
    }
    match Path::new("/run/lock").is_dir() {
        true => PathBuf::from("/run/lock/parkbench"),
        false => PathBuf::from("/tmp/parkbench-cpu-locks"),
    }
}

#[cfg(test)]
thread_local! {
    /// Unit tests run side by side on made-up CPUs: each test thread locks in a folder of its own.
    static TEST_FOLDER: Option<tempfile::TempDir> = tempfile::tempdir().ok();
}

/// The locks a run holds on its CPUs; dropped (and so released) when the run ends.
#[derive(Debug)]
pub struct CpuLock {
    files: Vec<File>,
}

/// Creates the shared folder as `/tmp` is made: everyone may add a file, only its owner may remove it.
fn make_folder(dir: &Path) -> Result<()> {
    if !dir.exists() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the CPU lock folder {}", dir.display()))?;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777));
    }
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("reading the CPU lock folder {}", dir.display()))?;
    anyhow::ensure!(
        meta.is_dir(),
        "the CPU lock folder {} is not a folder (a link?): remove it, or point PARKBENCH_LOCKS \
         at a folder of your own",
        dir.display()
    );
    Ok(())
}

impl CpuLock {
    /// Takes an exclusive lock on each of `cpus` in `dir`, recording `holder` (e.g. `run
    /// 20261204T1200Z of study wait-1m, pid 4242`) in each file. Refuses, taking none, when another
    /// process holds any of them, naming it.
    pub fn acquire(dir: &Path, cpus: &[usize], holder: &str) -> Result<CpuLock> {
        make_folder(dir)?;
        let mut files = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let path = dir.join(format!("cpu{cpu}.lock"));
            // Never through a link: the folder is shared, and a link planted there must not make
            // this run write into a file it names.
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o666)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
                .with_context(|| format!("opening the CPU lock {}", path.display()))?;
            // SAFETY: flock on a file descriptor this function owns; no memory is shared.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let err = std::io::Error::last_os_error();
                if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                    return Err(err)
                        .with_context(|| format!("locking the CPU lock {}", path.display()));
                }
                let mut other = String::new();
                let _ = file.read_to_string(&mut other);
                let other = match other.trim() {
                    "" => "another parkbench run".to_string(),
                    text => text.to_string(),
                };
                bail!(
                    "CPU {cpu} is in use by {other}: two runs on the same CPUs would measure each \
                     other. Wait for it to end, choose other CPUs with --cpus (this run wants {}), \
                     or pass --allow-shared-cpus to measure beside it anyway (recorded as a validity \
                     warning on every sample)",
                    cpuset::format(cpus)
                );
            }
            // The holder's name is a courtesy for the refusal's message; a lock file another user
            // made is locked all the same, and left as it is.
            // SAFETY: geteuid has no preconditions and cannot fail.
            if file.metadata()?.uid() == unsafe { libc::geteuid() } {
                file.set_len(0)?;
                file.seek(SeekFrom::Start(0))?;
                writeln!(file, "{holder}")
                    .with_context(|| format!("writing the CPU lock {}", path.display()))?;
            }
            files.push(file);
        }
        Ok(CpuLock { files })
    }

    /// How many CPUs are held.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no CPU is held.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// The validity warning of a run that measured with `--allow-shared-cpus`.
pub fn shared_warning(cpus: &str) -> Warning {
    Warning {
        what: format!(
            "CPUs {cpus} not locked (--allow-shared-cpus): another run may have measured on them \
             at the same time as every sample of this run"
        ),
        touches: Touches::All,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_cpus_are_refused_naming_the_holder_and_free_again_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let first = CpuLock::acquire(dir.path(), &[0, 1], "run A of study s, pid 1").unwrap();
        assert_eq!(first.len(), 2);
        let e = format!(
            "{:#}",
            CpuLock::acquire(dir.path(), &[1, 2], "run B").unwrap_err()
        );
        assert!(
            e.contains("CPU 1 is in use by run A of study s, pid 1"),
            "{e}"
        );
        assert!(e.contains("--allow-shared-cpus"), "{e}");
        // Disjoint CPUs are fine.
        let other = CpuLock::acquire(dir.path(), &[2, 3], "run C").unwrap();
        drop(first);
        let again = CpuLock::acquire(dir.path(), &[0, 1], "run D").unwrap();
        assert_eq!(again.len(), 2);
        drop(other);
    }

    #[test]
    fn a_refused_run_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let held = CpuLock::acquire(dir.path(), &[1], "run A").unwrap();
        assert!(CpuLock::acquire(dir.path(), &[0, 1], "run B").is_err());
        // CPU 0, taken before the refusal at CPU 1, was released with it.
        let zero = CpuLock::acquire(dir.path(), &[0], "run C").unwrap();
        assert!(!zero.is_empty());
        drop(held);
    }

    #[test]
    fn a_link_planted_in_the_folder_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("cpu0.lock")).unwrap();
        let e = format!(
            "{:#}",
            CpuLock::acquire(dir.path(), &[0], "run A").unwrap_err()
        );
        assert!(e.contains("opening the CPU lock"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    }
}
