//! `parkbench doctor`: can this machine build and run?

use anyhow::Result;

use super::Ending;
use crate::images::cache::Cache;
use crate::run::doctor as checks;

/// Prints the table of checks; [`Ending::NotReady`] when one failed.
pub async fn doctor() -> Result<Ending> {
    let cache = Cache::from_env()?;
    let (table, ok) = checks::render(&checks::run(cache.root()).await);
    print!("{table}");
    Ok(if ok { Ending::Ok } else { Ending::NotReady })
}

/// The checks on the way to another command: one line when all passed, the table when one failed.
pub async fn doctor_brief() -> Result<Ending> {
    let cache = Cache::from_env()?;
    let (text, ok) = checks::brief(&checks::run(cache.root()).await);
    print!("{text}");
    Ok(if ok { Ending::Ok } else { Ending::NotReady })
}
