//! Reading a run folder's files as the untrusted input they may be (a folder unpacked from an
//! archive, or one someone handed over): each is opened without following a link, read only when
//! it is a regular file, and only up to its limit. A FIFO, a device or a link is refused by name,
//! before anything is read from it, so that no error ever shows what such a file leads to.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

use super::{CLASSES_JSON, LOAD_LIMIT, SAMPLES, STUDY};

/// The largest study.yaml read, bytes (a real one is a few dozen KiB).
pub const STUDY_LIMIT: u64 = 1 << 20;
/// The largest run file read besides samples.jsonl, classes.json and study.yaml, bytes.
pub const FILE_LIMIT: u64 = 8 << 20;

/// How many bytes of the run file `name` are read at most. classes.json grows with the hardware
/// classes merged as samples.jsonl grows with the processes (about 9 KiB a class: a thousand
/// machines' runs merged are over 8 MiB), and has samples.jsonl's limit.
pub fn load_limit(name: &str) -> u64 {
    match name {
        SAMPLES | CLASSES_JSON => LOAD_LIMIT,
        STUDY => STUDY_LIMIT,
        _ => FILE_LIMIT,
    }
}

/// Opens `path` for reading when it is a regular file, without following a link; `None` when
/// there is nothing at `path`.
pub fn open_regular(path: &Path) -> Result<Option<File>> {
    let before = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    refuse_special(path, &before)?;
    // O_NOFOLLOW and O_NONBLOCK: a link or a FIFO put there since the look above is refused
    // rather than followed or waited on.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("opening {} (not through a link)", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?;
    refuse_special(path, &meta)?;
    ensure!(
        (meta.dev(), meta.ino()) == (before.dev(), before.ino()),
        "{}: replaced while it was opened; refused",
        path.display()
    );
    Ok(Some(file))
}

/// Reads the regular file `path` whole, when it holds at most `limit` bytes; `None` when there is
/// nothing at `path`.
pub fn read_regular(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    let Some(file) = open_regular(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    ensure!(
        bytes.len() as u64 <= limit,
        "{}: over the {limit}-byte limit for files read into memory",
        path.display()
    );
    Ok(Some(bytes))
}

/// The run file `name` of the folder `dir` as text, read as [`read_regular`] does within its
/// [`load_limit`].
pub fn read_text(dir: &Path, name: &str) -> Result<Option<String>> {
    let path = dir.join(name);
    read_regular(&path, load_limit(name))?
        .map(|bytes| {
            String::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))
        })
        .transpose()
}

fn refuse_special(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a folder"
    } else {
        "a FIFO, socket or device"
    };
    bail!(
        "{}: {what}, not a regular file: a run folder's files are read only as regular files, \
         never through a link; refused without reading it",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_within_their_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, "abc").unwrap();
        assert_eq!(read_regular(&path, 3).unwrap().unwrap(), b"abc");
        let err = format!("{:#}", read_regular(&path, 2).unwrap_err());
        assert!(err.contains("over the 2-byte limit"), "{err}");
        assert!(read_regular(&dir.path().join("none"), 3).unwrap().is_none());
    }

    #[test]
    fn links_fifos_and_devices_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "root:x:0:0:secret line").unwrap();
        let link = dir.path().join("study.yaml");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let fifo = dir.path().join("samples.jsonl");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let zero = dir.path().join("env.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for (path, wanted) in [
            (&link, "a symbolic link"),
            (&fifo, "a FIFO, socket or device"),
            (&zero, "a symbolic link"),
            (
                &Path::new("/dev/null").to_owned(),
                "a FIFO, socket or device",
            ),
        ] {
            let err = format!("{:#}", read_regular(path, 1 << 20).unwrap_err());
            assert!(err.contains(wanted), "{err}");
            assert!(!err.contains("secret line"), "{err}");
        }
    }
}
