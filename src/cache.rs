//! (temporary stub)
use anyhow::Result;
use std::path::{Path, PathBuf};
pub struct Cache {
    root: PathBuf,
}
impl Cache {
    pub fn open() -> Result<Self> {
        Ok(Self {
            root: PathBuf::from("/tmp/pbcache"),
        })
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn tmp_path(&self, name: &str) -> PathBuf {
        self.root.join("tmp").join(name)
    }
}
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes)?;
    Ok(())
}
