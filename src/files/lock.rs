//! Locks between parkbench processes of this machine: an exclusive `flock` on a file of one folder
//! every user shares ([`folder`]), such as `cpu0.lock` (a run measuring on CPU 0) or
//! `image-parkbench_go_3f2a….lock` (a build of that image under way). The kernel drops a lock when
//! its process ends, however it ends, so a crashed process never leaves a stale one. Each file holds
//! its holder's description, for the message of whoever finds it taken.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

/// Where the lock files are: `$PARKBENCH_LOCKS`, or `/run/lock/parkbench` where `/run/lock` exists
/// (the system's folder for lock files), else `/tmp/parkbench-cpu-locks`: one per machine, shared by
/// every user's processes whatever their `TMPDIR`.
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
    /// Unit tests run side by side on made-up CPUs and images: each test thread locks in a folder
    /// of its own.
    static TEST_FOLDER: Option<tempfile::TempDir> = tempfile::tempdir().ok();
}

/// How often a waiting process tries a taken lock again.
pub const RETRY: Duration = Duration::from_millis(250);

/// A lock held until dropped.
#[derive(Debug)]
pub struct Held {
    _file: File,
}

/// What one try at a lock came to.
#[derive(Debug)]
pub enum Tried {
    /// The lock is ours.
    Held(Held),
    /// Another process holds it: its description (`another parkbench process` when it left none).
    Taken(String),
}

/// Creates the shared folder as `/tmp` is made: everyone may add a file, only its owner may remove it.
fn make_folder(dir: &Path) -> Result<()> {
    if !dir.exists() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the lock folder {}", dir.display()))?;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777));
    }
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("reading the lock folder {}", dir.display()))?;
    anyhow::ensure!(
        meta.is_dir(),
        "the lock folder {} is not a folder (a link?): remove it, or point PARKBENCH_LOCKS at a \
         folder of your own",
        dir.display()
    );
    Ok(())
}

/// One try, never waiting, at the lock `name` in `dir`, recording `holder` (e.g. `run 20261204T1200Z
/// of study wait-1m (pid 4242)`) in its file when taken.
pub fn try_take(dir: &Path, name: &str, holder: &str) -> Result<Tried> {
    make_folder(dir)?;
    let path = dir.join(name);
    // Never through a link: the folder is shared, and a link planted there must not make this
    // process write into a file it names.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .with_context(|| format!("opening the lock {}", path.display()))?;
    // SAFETY: flock on a file descriptor this function owns; no memory is shared.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(err).with_context(|| format!("locking {}", path.display()));
        }
        let mut other = String::new();
        let _ = (&file).take(4096).read_to_string(&mut other);
        let other = match other.trim() {
            "" => "another parkbench process".to_string(),
            text => text.chars().filter(|c| !c.is_control()).collect(),
        };
        return Ok(Tried::Taken(other));
    }
    // The holder's name is a courtesy for the message of whoever finds the lock taken; a lock file
    // another user made is locked all the same, and left as it is.
    // SAFETY: geteuid has no preconditions and cannot fail.
    if file.metadata()?.uid() == unsafe { libc::geteuid() } {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        writeln!(file, "{holder}")
            .with_context(|| format!("writing the lock {}", path.display()))?;
    }
    Ok(Tried::Held(Held { _file: file }))
}

/// The lock `name` in `dir`, waited for while another process holds it: `waiting` is told once who
/// holds it, when it is taken at the first try.
pub async fn take(
    dir: &Path,
    name: &str,
    holder: &str,
    waiting: impl FnOnce(&str),
) -> Result<Held> {
    let mut waiting = Some(waiting);
    loop {
        match try_take(dir, name, holder)? {
            Tried::Held(held) => return Ok(held),
            Tried::Taken(by) => {
                if let Some(say) = waiting.take() {
                    say(&by);
                }
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// A lock file's name for `thing` (such as an image tag): its letters, digits, dots and dashes,
/// every other character an underscore.
pub fn file_name(prefix: &str, thing: &str) -> String {
    let safe: String = (thing.chars())
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect();
    format!("{prefix}{safe}.lock")
}

/// The names of the lock files in `dir` that start with `prefix` (none when there is no folder yet).
pub fn names(dir: &Path, prefix: &str) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(e).with_context(|| format!("reading the lock folder {}", dir.display()));
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.starts_with(prefix) && name.ends_with(".lock") {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_lock_names_its_holder_and_is_free_again_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let Tried::Held(first) = try_take(dir.path(), "x.lock", "build of a (pid 1)").unwrap()
        else {
            panic!("not taken")
        };
        match try_take(dir.path(), "x.lock", "build of b").unwrap() {
            Tried::Taken(by) => assert_eq!(by, "build of a (pid 1)"),
            Tried::Held(_) => panic!("taken twice"),
        }
        drop(first);
        assert!(matches!(
            try_take(dir.path(), "x.lock", "c").unwrap(),
            Tried::Held(_)
        ));
    }

    #[tokio::test]
    async fn a_waiter_is_told_once_and_gets_the_lock_when_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let Tried::Held(first) = try_take(dir.path(), "x.lock", "first").unwrap() else {
            panic!("not taken")
        };
        let told = std::sync::Mutex::new(Vec::new());
        let release = async {
            tokio::time::sleep(RETRY * 3).await;
            drop(first);
        };
        let (held, ()) = tokio::join!(
            take(dir.path(), "x.lock", "second", |by| told
                .lock()
                .unwrap()
                .push(by.to_string())),
            release
        );
        held.unwrap();
        assert_eq!(*told.lock().unwrap(), ["first"]);
    }

    #[test]
    fn names_are_one_safe_file_each() {
        assert_eq!(
            file_name("image-", "parkbench/go:0123abcd"),
            "image-parkbench_go_0123abcd.lock"
        );
        assert_eq!(file_name("image-", "../x"), "image-.._x.lock");
        let dir = tempfile::tempdir().unwrap();
        for n in ["image-a.lock", "cpu0.lock", "image-b.lock", "image-c.part"] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        assert_eq!(
            names(dir.path(), "image-").unwrap(),
            ["image-a.lock", "image-b.lock"]
        );
        assert_eq!(
            names(&dir.path().join("none"), "image-").unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_link_planted_in_the_folder_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("cpu0.lock")).unwrap();
        let e = format!(
            "{:#}",
            try_take(dir.path(), "cpu0.lock", "run A").unwrap_err()
        );
        assert!(e.contains("opening the lock"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    }
}
