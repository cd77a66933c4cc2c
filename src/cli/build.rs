//! `parkbench build`: every pinned image, built or reused, and the manifest.

use std::path::Path;

use anyhow::Result;

use super::{Ending, prepare};
use crate::cli::args::BuildArgs;

pub async fn command(repo: &Path, args: &BuildArgs) -> Result<Ending> {
    prepare(repo, args).await?;
    Ok(Ending::Ok)
}
