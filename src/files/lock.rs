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
/// (the system's folder for lock files), else `/tmp/parkbench-cpu-locks` (named when it held the
/// CPUs' locks alone): one per machine, shared by every user's processes whatever their `TMPDIR`.
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

impl Tried {
    /// The lock, or who holds it.
    pub fn held(self) -> std::result::Result<Held, String> {
        match self {
            Tried::Held(held) => Ok(held),
            Tried::Taken(by) => Err(by),
        }
    }
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

/// The lock file `name` in `dir`, opened to be written (made by this process: readable and
/// writable by every user, whatever the umask), or only read when another user made it so.
fn open(dir: &Path, name: &str) -> Result<(File, bool)> {
    make_folder(dir)?;
    let path = dir.join(name);
    // Never through a link: the folder is shared, and a link planted there must not make this
    // process write into a file it names.
    let flags = libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let opened = (OpenOptions::new().read(true).write(true).create(true))
        .truncate(false)
        .mode(0o666)
        .custom_flags(flags)
        .open(&path);
    let file = match opened {
        Ok(file) => file,
        // A lock locks through a file only read all the same.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            let file = (OpenOptions::new()
                .read(true)
                .custom_flags(flags)
                .open(&path))
            .with_context(|| format!("opening the lock {}", path.display()))?;
            return Ok((file, false));
        }
        Err(e) => return Err(e).with_context(|| format!("opening the lock {}", path.display())),
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let ours = file.metadata()?.uid() == unsafe { libc::geteuid() };
    if ours {
        let _ = file.set_permissions(std::fs::Permissions::from_mode(0o666));
    }
    Ok((file, ours))
}

/// `flock` with `how` (`LOCK_EX` or `LOCK_SH`) on `file`, never waiting: false when another
/// process holds it the other way (or exclusively).
fn flock(file: &File, how: libc::c_int, path: &Path) -> Result<bool> {
    // SAFETY: flock on a file descriptor the caller owns; no memory is shared.
    if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        true => Ok(false),
        false => Err(err).with_context(|| format!("locking {}", path.display())),
    }
}

/// Who holds the lock of `file`, as its file says.
fn holder_of(file: &File) -> String {
    let mut other = String::new();
    let _ = file.take(4096).read_to_string(&mut other);
    match other.trim() {
        "" => "another parkbench process".to_string(),
        text => text.chars().filter(|c| !c.is_control()).collect(),
    }
}

/// One try, never waiting, at the lock `name` in `dir` for this process alone, recording `holder`
/// (e.g. `run 20261204T1200Z of study wait-1m (pid 4242)`) in its file when taken.
pub fn try_take(dir: &Path, name: &str, holder: &str) -> Result<Tried> {
    let (mut file, writable) = open(dir, name)?;
    if !flock(&file, libc::LOCK_EX, &dir.join(name))? {
        return Ok(Tried::Taken(holder_of(&file)));
    }
    // The holder's name is a courtesy for the message of whoever finds the lock taken; a lock file
    // another user made is locked all the same, and left as it is.
    if writable {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        writeln!(file, "{holder}")
            .with_context(|| format!("writing the lock {}", dir.join(name).display()))?;
    }
    Ok(Tried::Held(Held { _file: file }))
}

/// One try, never waiting, at the lock `name` in `dir` shared with other processes that share it;
/// taken when a process holds it for itself alone (then named, as its file says).
pub fn try_share(dir: &Path, name: &str) -> Result<Tried> {
    let (file, _) = open(dir, name)?;
    match flock(&file, libc::LOCK_SH, &dir.join(name))? {
        true => Ok(Tried::Held(Held { _file: file })),
        false => Ok(Tried::Taken(holder_of(&file))),
    }
}

/// `attempt` again every [`RETRY`] until it gives its lock: `waiting` is told each holder it finds
/// (each once); `None` when `cancelled` completes first.
pub async fn wait<T>(
    mut attempt: impl FnMut() -> Result<std::result::Result<T, String>>,
    mut waiting: impl FnMut(&str),
    cancelled: impl std::future::Future<Output = ()>,
) -> Result<Option<T>> {
    let mut told = std::collections::BTreeSet::new();
    tokio::pin!(cancelled);
    loop {
        let by = match attempt()? {
            Ok(held) => return Ok(Some(held)),
            Err(by) => by,
        };
        if told.insert(by.clone()) {
            waiting(&by);
        }
        tokio::select! {
            () = &mut cancelled => return Ok(None),
            () = tokio::time::sleep(RETRY) => {}
        }
    }
}

/// The lock `name` in `dir` for this process alone, waited for while another process holds it:
/// `waiting` is told who holds it (each holder once).
pub async fn take(dir: &Path, name: &str, holder: &str, waiting: impl FnMut(&str)) -> Result<Held> {
    let attempt = || Ok(try_take(dir, name, holder)?.held());
    let held = wait(attempt, others(holder, waiting), std::future::pending()).await?;
    Ok(held.expect("never cancelled"))
}

/// `waiting`, not told of a holder under `holder`'s own description: another task of this process
/// taking the same lock (the pinned driver's build and the images' beside it share their base
/// image), which says what it does itself.
fn others(holder: &str, mut waiting: impl FnMut(&str)) -> impl FnMut(&str) {
    move |by: &str| {
        if by != holder {
            waiting(by)
        }
    }
}

/// [`take`] for code that may block its thread (a blocking task).
pub fn take_blocking(
    dir: &Path,
    name: &str,
    holder: &str,
    waiting: impl FnMut(&str),
) -> Result<Held> {
    let mut waiting = others(holder, waiting);
    let mut told = std::collections::BTreeSet::new();
    loop {
        match try_take(dir, name, holder)? {
            Tried::Held(held) => return Ok(held),
            Tried::Taken(by) => {
                if told.insert(by.clone()) {
                    waiting(&by);
                }
                std::thread::sleep(RETRY);
            }
        }
    }
}

/// A lock of [`held`]: the process holding it and what its file says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    /// The lock file's name.
    pub name: String,
    /// The holding process, as the kernel names it.
    pub pid: u32,
    /// What its file says: its holder's description when held alone (empty in the instant a new
    /// holder writes it); for a shared lock, whatever the last process to hold it alone wrote.
    pub holder: String,
}

/// The locks of `dir` whose file names start with `prefix` that some process holds now, one per
/// holding process, read from the kernel's list of locks (`/proc/locks`, which names each locked
/// file by its device and inode) rather than by trying them, so that no holder ever finds its lock
/// taken by the looking. Empty when the list cannot be read; a holder the kernel does not show
/// (a process of another PID namespace) is left out.
pub fn held(dir: &Path, prefix: &str) -> Vec<Holding> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let files: std::collections::BTreeMap<(u32, u32, u64), String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let meta = e.metadata().ok()?;
            let key = (libc::major(meta.dev()), libc::minor(meta.dev()), meta.ino());
            name.starts_with(prefix).then_some((key, name))
        })
        .collect();
    let Ok(locks) = std::fs::read_to_string("/proc/locks") else {
        return Vec::new();
    };
    let mut out: Vec<Holding> = Vec::new();
    for line in locks.lines().filter(|l| !l.contains("->")) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // `1: FLOCK  ADVISORY  WRITE 4242 fe:01:1234 0 EOF`: the holder's pid, then the file's
        // device (major and minor, in hexadecimal) and inode.
        let (Some(&"FLOCK"), Some(pid), Some(file)) = (fields.get(1), fields.get(4), fields.get(5))
        else {
            continue;
        };
        let Some(name) = locked_file(file).and_then(|key| files.get(&key)) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let holder = std::fs::read_to_string(dir.join(name))
            .map(|t| t.trim().chars().filter(|c| !c.is_control()).collect())
            .unwrap_or_default();
        let holding = Holding {
            name: name.clone(),
            pid,
            holder,
        };
        if !out.contains(&holding) {
            out.push(holding);
        }
    }
    out.sort_by(|a, b| (&a.name, a.pid).cmp(&(&b.name, b.pid)));
    out
}

/// A `/proc/locks` file field (`fe:01:1234`) as its device's major and minor and its inode.
fn locked_file(field: &str) -> Option<(u32, u32, u64)> {
    let mut parts = field.split(':');
    let major = u32::from_str_radix(parts.next()?, 16).ok()?;
    let minor = u32::from_str_radix(parts.next()?, 16).ok()?;
    let inode = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((major, minor, inode))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locks_held_are_listed_with_their_holders_without_being_tried() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        assert!(held(dir.path(), "image-").is_empty());
        let build = try_take(dir.path(), "image-a.lock", "a build of a (pid 1)").unwrap();
        let _gate = try_share(dir.path(), "gate.lock").unwrap();
        let free = try_take(dir.path(), "image-b.lock", "a build of b").unwrap();
        drop(free);
        assert_eq!(
            held(dir.path(), "image-"),
            vec![Holding {
                name: "image-a.lock".into(),
                pid: me,
                holder: "a build of a (pid 1)".into(),
            }]
        );
        let gate = held(dir.path(), "gate");
        assert_eq!((gate.len(), gate[0].pid), (1, me), "{gate:?}");
        assert_eq!(locked_file("fe:01:1234"), Some((254, 1, 1234)));
        assert_eq!(locked_file("00:1a:7"), Some((0, 26, 7)));
        assert_eq!(locked_file("1234"), None);
        drop(build);
        assert!(held(dir.path(), "image-").is_empty());
    }

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
    }

    #[test]
    fn shared_holders_keep_out_one_alone_and_one_alone_keeps_them_out() {
        let dir = tempfile::tempdir().unwrap();
        let a = try_share(dir.path(), "gate.lock").unwrap().held().unwrap();
        let b = try_share(dir.path(), "gate.lock").unwrap().held().unwrap();
        assert!(
            try_take(dir.path(), "gate.lock", "clean")
                .unwrap()
                .held()
                .is_err()
        );
        drop((a, b));
        let alone = try_take(dir.path(), "gate.lock", "clean (pid 7)")
            .unwrap()
            .held()
            .unwrap();
        assert_eq!(
            try_share(dir.path(), "gate.lock")
                .unwrap()
                .held()
                .unwrap_err(),
            "clean (pid 7)"
        );
        drop(alone);
    }

    #[test]
    fn a_lock_file_is_open_to_every_user_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let held = try_take(dir.path(), "x.lock", "a").unwrap().held().unwrap();
        let mode = std::fs::metadata(dir.path().join("x.lock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o666);
        drop(held);
    }

    #[tokio::test]
    async fn a_cancelled_wait_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let _first = try_take(dir.path(), "x.lock", "first")
            .unwrap()
            .held()
            .unwrap();
        let attempt = || Ok(try_take(dir.path(), "x.lock", "second")?.held());
        let got = wait(attempt, |_| {}, tokio::time::sleep(RETRY * 2))
            .await
            .unwrap();
        assert!(got.is_none());
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
