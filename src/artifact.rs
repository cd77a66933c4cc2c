//! (temporary stub)
use crate::{cache::Cache, pin::Pin};
use anyhow::Result;
use std::path::{Path, PathBuf};
pub struct Artifact {
    pub name: String,
    pub version: String,
    pub sha256: String,
    pub path: PathBuf,
    pub source: String,
}
pub fn ensure(_c: &Cache, _p: &Pin) -> Result<Artifact> {
    anyhow::bail!("stub")
}
pub fn vendor(_d: &Path, _o: &Path) -> Result<()> {
    anyhow::bail!("stub")
}
