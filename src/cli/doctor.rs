//! `parkbench doctor`: can this machine build and run?

use anyhow::Result;

use super::Ending;
use crate::images::cache::Cache;
use crate::run::doctor;

pub async fn command() -> Result<Ending> {
    let cache = Cache::from_env()?;
    let (table, ok) = doctor::render(&doctor::run(cache.root()).await);
    print!("{table}");
    Ok(if ok { Ending::Ok } else { Ending::NotReady })
}
