//! `parkbench check`: every SHA256SUMS line and the structure of an archive, offline.

use std::path::Path;

use anyhow::{Context, Result};

use super::Ending;
use crate::outputs::archive;

pub fn command(path: &Path) -> Result<Ending> {
    let report = archive::check(path).with_context(|| format!("checking {}", path.display()))?;
    println!("{report}");
    Ok(Ending::Ok)
}
