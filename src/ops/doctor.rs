//! `parkbench doctor`: can this machine build and run? With `--hosts`: can these Engines run?

use std::path::PathBuf;

use anyhow::Result;

use super::Ending;
use crate::images::cache::Cache;
use crate::run::doctor as checks;
use crate::run::fleet::hosts;

/// What `doctor` checks.
#[derive(Debug, Clone, Default)]
pub struct DoctorOptions {
    /// The hosts to check instead of this machine (`--hosts`); empty: this machine.
    pub hosts: Vec<String>,
    /// The study whose folder's `hosts.yaml` names hosts.
    pub study: Option<PathBuf>,
    /// Accept plain `tcp://` hosts.
    pub allow_plain_tcp: bool,
}

/// `doctor`, or `doctor --hosts`: a table per host, then the classes they share and the hosts
/// that are one machine; [`Ending::NotReady`] when a host did not answer or could not be read.
/// A name that resolves to nothing is an error before anything connects.
pub async fn command(options: &DoctorOptions) -> Result<Ending> {
    if options.hosts.is_empty() {
        return doctor().await;
    }
    let study_dir = options.study.as_deref().and_then(|s| s.parent());
    let entries = hosts::resolve(&options.hosts, study_dir, options.allow_plain_tcp)?;
    let (text, ok) = checks::render_hosts(&checks::hosts(&entries).await);
    print!("{text}");
    let plain: Vec<&str> = entries
        .iter()
        .filter(|e| e.endpoint.is_plain_tcp())
        .map(|e| e.name.as_str())
        .collect();
    if !plain.is_empty() {
        eprintln!(
            "warning: plain TCP (--allow-plain-tcp) to {}: nothing authenticates these Engines \
             or encrypts their traffic",
            plain.join(", ")
        );
    }
    Ok(if ok { Ending::Ok } else { Ending::NotReady })
}

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
