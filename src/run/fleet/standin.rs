//! Minimal stand-ins for the parts of a fleet run built beside this one, with the signatures they
//! will have: naming hosts ([`resolve`]: URLs and `local` only) and surveying them ([`survey`]:
//! the Engine's own facts). Each goes when its real counterpart arrives.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::engine::{Endpoint, Engine, EngineFacts, TlsFiles};
use crate::run::env;
use crate::run::hardware;

/// A host as named on the command line, and where its Engine listens.
#[derive(Debug, Clone, PartialEq)]
pub struct HostEntry {
    /// The name given (`local`, or a URL).
    pub name: String,
    pub endpoint: Endpoint,
}

/// `local`, or a URL (`tcp://` with the TLS files of `DOCKER_CERT_PATH`; plain only when allowed).
pub fn resolve(
    names: &[String],
    _study_dir: Option<&Path>,
    allow_plain_tcp: bool,
) -> Result<Vec<HostEntry>> {
    let tls = std::env::var_os("DOCKER_CERT_PATH").map(|d| TlsFiles::in_dir(Path::new(&d)));
    names
        .iter()
        .map(|name| {
            let endpoint = match name.as_str() {
                "local" => Endpoint::Local,
                url => Endpoint::from_url(url, tls.clone())
                    .with_context(|| format!("host `{name}`"))?,
            };
            if endpoint.is_plain_tcp() && !allow_plain_tcp {
                bail!(
                    "host `{name}`: plain tcp:// is neither authenticated nor encrypted; set \
                     DOCKER_CERT_PATH to its TLS files, or pass --allow-plain-tcp"
                );
            }
            Ok(HostEntry {
                name: name.clone(),
                endpoint,
            })
        })
        .collect()
}

/// A host that answered, and what it is.
#[derive(Clone)]
pub struct Surveyed {
    pub entry: HostEntry,
    pub engine: Engine,
    pub facts: EngineFacts,
    pub host: env::Host,
    pub class: String,
    pub free_disk_bytes: Option<u64>,
    /// The kernel's boot id; empty when unknown (then the host runs apart from no other).
    pub boot_id: String,
}

/// Connects to every host, all or an error naming the one that does not answer.
pub async fn survey(entries: &[HostEntry], _probe_image: &str) -> Result<Vec<Surveyed>> {
    let mut out = Vec::new();
    for entry in entries {
        let engine = Engine::connect_to(&entry.name, &entry.endpoint).await?;
        let facts = engine
            .facts()
            .await
            .with_context(|| format!("host `{}`", entry.name))?;
        let host = env::Host {
            kernel_release: facts.kernel.clone(),
            logical_cpus: usize::try_from(facts.ncpu).unwrap_or(0),
            mem_total_bytes: u64::try_from(facts.mem_total_bytes).unwrap_or(0),
            ..env::Host::default()
        };
        out.push(Surveyed {
            class: hardware::class(&host),
            entry: entry.clone(),
            engine,
            facts,
            host,
            free_disk_bytes: None,
            boot_id: String::new(),
        });
    }
    Ok(out)
}

/// Whether a host can run a study needing `cpus_needed` CPUs; the reason when not.
pub fn fits(
    s: &Surveyed,
    cpus_needed: usize,
    _largest_mem_bytes: Option<u64>,
) -> Result<(), String> {
    let have = s.host.logical_cpus;
    match have >= cpus_needed {
        true => Ok(()),
        false => Err(format!(
            "it has {have} logical CPUs and the study pins {cpus_needed}"
        )),
    }
}
