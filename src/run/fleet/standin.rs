//! Minimal stand-ins for the parts of a fleet run built beside this one, with the signatures they
//! will have: naming hosts ([`resolve`]: URLs and `local` only), surveying them ([`survey`]: the
//! Engine's own facts), placing images on them ([`place`]: shipped through the Engine's save and
//! load when a tag is missing) and leasing them ([`take`]: nothing). Each goes when its real
//! counterpart arrives.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::engine::{Endpoint, Engine, EngineFacts, TlsFiles};
use crate::images::Manifest;
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

/// How images reach a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Ship,
    Build,
}

/// One image on one host, and how it got there.
#[derive(Debug, Clone)]
pub struct Placed {
    pub image: String,
    /// `present` or `shipped`.
    pub how: &'static str,
    pub bytes: u64,
    pub secs: f64,
}

/// Every image of `images` on `host` under its manifest tag and ID: one missing is shipped from
/// the coordinator (save → load); one present under another ID is refused.
pub async fn place(
    coordinator: &Engine,
    host: &Engine,
    host_name: &str,
    manifest: &Manifest,
    images: &[String],
    _how: Placement,
) -> Result<Vec<Placed>> {
    let mut out = Vec::new();
    for name in images {
        let Some(built) = manifest.get(name) else {
            continue;
        };
        let started = std::time::Instant::now();
        if let Some(there) = host.image(&built.tag).await? {
            if there.id != built.id {
                bail!(
                    "host `{host_name}` holds image {} as {}, the coordinator's is {}: remove it \
                     there, or use another host",
                    built.tag,
                    there.id,
                    built.id
                );
            }
            out.push(Placed {
                image: name.clone(),
                how: "present",
                bytes: 0,
                secs: 0.0,
            });
            continue;
        }
        let tmp = tempfile::NamedTempFile::new().context("a temporary file for an image")?;
        coordinator.export_image(&built.tag, tmp.path()).await?;
        let bytes = std::fs::metadata(tmp.path()).map(|m| m.len()).unwrap_or(0);
        host.load_image(tmp.path())
            .await
            .with_context(|| format!("shipping image {} to host `{host_name}`", built.tag))?;
        out.push(Placed {
            image: name.clone(),
            how: "shipped",
            bytes,
            secs: started.elapsed().as_secs_f64(),
        });
    }
    Ok(out)
}

/// A run's mark on a host (nothing yet).
pub struct Lease;

pub async fn take(_engine: &Engine, _host: &str, _run_id: &str) -> Result<Lease> {
    Ok(Lease)
}

impl Lease {
    pub async fn release(self) -> Result<()> {
        Ok(())
    }
}
