//! SHA-256 while reading: an adapter that hashes what passes through, so no member is held in
//! memory just to be hashed.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

/// Hashes and counts what is read from `inner`.
pub struct HashReader<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> HashReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    pub fn finish(self) -> (u64, String) {
        (self.bytes, hex::encode(self.hasher.finalize()))
    }
}

impl<R: Read> Read for HashReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Streams `data` through SHA-256; returns its size, hex digest and, when `limit` is given and the
/// data has at most that many bytes, the bytes themselves.
pub fn hash<R: Read>(
    data: &mut R,
    limit: Option<u64>,
) -> io::Result<(u64, String, Option<Vec<u8>>)> {
    let mut hasher = Sha256::new();
    let mut kept = limit.map(|_| Vec::new());
    let mut size = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = data.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
        kept = kept.filter(|_| limit.is_some_and(|l| size <= l));
        if let Some(bytes) = &mut kept {
            bytes.extend_from_slice(&buf[..n]);
        }
    }
    Ok((size, hex::encode(hasher.finalize()), kept))
}
