//! Streaming SHA-256: adapters that hash what passes through them, so nothing is held in memory just
//! to be hashed. Hashes are lowercase hex everywhere in parkbench.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// Read buffer for hashing whole streams.
const BUF: usize = 1 << 20;

/// Hashes and counts what is read from `inner`.
pub struct Reader<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> Reader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// Bytes read so far and their hex sha256.
    pub fn finish(self) -> (u64, String) {
        (self.bytes, hex::encode(self.hasher.finalize()))
    }
}

impl<R: Read> Read for Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Hashes and counts what is written through it to `inner`.
pub struct Writer<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// The inner writer (not flushed), the hex sha256 and the byte count.
    pub fn finish(self) -> (W, String, u64) {
        (self.inner, hex::encode(self.hasher.finalize()), self.bytes)
    }
}

impl<W: Write> Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Streams `data` through SHA-256; returns its size, hex digest and, when `keep` is given and the
/// data has at most that many bytes, the bytes themselves.
pub fn stream(data: impl Read, keep: Option<u64>) -> io::Result<(u64, String, Option<Vec<u8>>)> {
    let mut reader = Reader::new(data);
    let mut kept = keep.map(|_| Vec::new());
    let mut buf = vec![0u8; BUF];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        kept = kept.filter(|_| keep.is_some_and(|limit| reader.bytes <= limit));
        if let Some(bytes) = &mut kept {
            bytes.extend_from_slice(&buf[..n]);
        }
    }
    let (size, sha256) = reader.finish();
    Ok((size, sha256, kept))
}

/// The hex sha256 of everything `data` yields.
pub fn reader(data: impl Read) -> io::Result<String> {
    stream(data, None).map(|(_, sha256, _)| sha256)
}

/// The hex sha256 of a file.
pub fn file(path: &Path) -> Result<String> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    reader(file).with_context(|| format!("reading {}", path.display()))
}

/// The hex sha256 of bytes in memory.
pub fn bytes(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sha256 of "abc", from FIPS 180-2.
    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn every_way_gives_the_known_digest() {
        assert_eq!(bytes(b"abc"), ABC);
        assert_eq!(reader(&b"abc"[..]).unwrap(), ABC);
        let mut r = Reader::new(&b"abc"[..]);
        io::copy(&mut r, &mut io::sink()).unwrap();
        assert_eq!(r.finish(), (3, ABC.to_string()));
        let mut w = Writer::new(Vec::new());
        w.write_all(b"abc").unwrap();
        assert_eq!(w.finish(), (b"abc".to_vec(), ABC.to_string(), 3));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"abc").unwrap();
        assert_eq!(file(&dir.path().join("f")).unwrap(), ABC);
    }

    #[test]
    fn stream_keeps_small_data_only() {
        assert_eq!(
            stream(&b"abc"[..], Some(3)).unwrap(),
            (3, ABC.to_string(), Some(b"abc".to_vec()))
        );
        assert_eq!(
            stream(&b"abc"[..], Some(2)).unwrap(),
            (3, ABC.to_string(), None)
        );
        assert_eq!(stream(&b"abc"[..], None).unwrap().2, None);
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = format!("{:#}", file(Path::new("/nonexistent/x")).unwrap_err());
        assert!(err.contains("/nonexistent/x"), "{err}");
    }
}
