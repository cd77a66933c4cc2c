//! Files on disk, the ground floor every stage may use: the streaming sha256 (`digest`), the
//! deterministic tar writer and the bounded tar reader (`tarball`), locks between processes of this
//! machine (`lock`), a small file written whole or not at all, a text file read up to a limit, and a
//! full disk told from other errors. Imports nothing of the crate.

pub mod digest;
pub mod lock;
pub mod tarball;

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result, ensure};

/// Whether an error is a full disk (or an exhausted quota) somewhere in its chain: what the user
/// fixes by freeing space, not by changing the input.
pub fn is_disk_full(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| {
            matches!(
                e.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            ) || matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
        })
    })
}

/// Writes a small file whole or not at all: a temporary file in the same directory, synced, then renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}

/// A text file, read whole.
pub fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// A small text file, refused when larger than `limit` or not UTF-8.
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<String> {
    let file = File::open(path).with_context(|| format!("opening {what} {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    ensure!(
        bytes.len() as u64 <= limit,
        "{}: over {limit} bytes: not {what}",
        path.display()
    );
    String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{}: not text: not {what}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_told_from_other_errors_anywhere_in_the_chain() {
        let full = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::ENOSPC))
            .context("writing x")
            .context("archiving y");
        assert!(is_disk_full(&full));
        let denied = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EACCES));
        assert!(!is_disk_full(&denied.context("writing x")));
        assert!(!is_disk_full(&anyhow::anyhow!("no io error")));
    }
}
