//! `parkbench clean`: parkbench's images, its artifact cache, and runs' leases on hosts; runs are
//! never touched.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::Ending;
use crate::engine::{Endpoint, Engine, TlsFiles};
use crate::images::cache::Cache;
use crate::images::namespace;
use crate::run::fleet::lease;

/// What to remove.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// parkbench's images on this machine's Engine.
    pub images: bool,
    /// The artifact cache.
    pub cache: bool,
    /// Every run's lease on `hosts`.
    pub leases: bool,
    /// The hosts whose leases go: `local` or Engine URLs; empty: this machine's Engine.
    pub hosts: Vec<String>,
}

/// Removes what `options` names.
pub async fn clean(options: &Options) -> Result<Ending> {
    if !options.images && !options.cache && !options.leases {
        bail!("say what to remove: --images, --cache, --leases, or several");
    }
    if options.leases {
        // Every host named is checked before any lease goes.
        let cert_path = std::env::var_os("DOCKER_CERT_PATH").map(std::path::PathBuf::from);
        let hosts = hosts(&options.hosts, cert_path.as_deref())?;
        for (name, endpoint) in &hosts {
            clear_leases(name, endpoint).await?;
        }
    }
    if options.images {
        let engine = Engine::connect().await?;
        let removed = engine.remove_images(&namespace()).await?;
        eprintln!("removed {} image tag(s)", removed.len());
    }
    if options.cache {
        let cache = Cache::from_env()?;
        let root = cache.root();
        if root.exists() {
            std::fs::remove_dir_all(root)
                .with_context(|| format!("removing {}", root.display()))?;
        }
        eprintln!("removed the artifact cache {}", root.display());
    }
    Ok(Ending::Ok)
}

/// Each host by name and how to reach it: `local`, or a URL (a `tcp://` one with the TLS files
/// of DOCKER_CERT_PATH, which must be set).
fn hosts(names: &[String], cert_path: Option<&Path>) -> Result<Vec<(String, Endpoint)>> {
    if names.is_empty() {
        return Ok(vec![("local".into(), Endpoint::Local)]);
    }
    names
        .iter()
        .map(|name| {
            if name == "local" {
                return Ok((name.clone(), Endpoint::Local));
            }
            let tls = match (cert_path, name.starts_with("tcp://")) {
                (Some(dir), true) => Some(TlsFiles::in_dir(dir)),
                (None, true) => bail!(
                    "host `{name}`: set DOCKER_CERT_PATH to the folder holding ca.pem, cert.pem \
                     and key.pem for it"
                ),
                _ => None,
            };
            Ok((name.clone(), Endpoint::from_url(name, tls)?))
        })
        .collect()
}

/// Removes every lease volume on one host, saying which run held each.
async fn clear_leases(name: &str, endpoint: &Endpoint) -> Result<()> {
    let engine = Engine::connect_to(name, endpoint).await?;
    let leases = engine.volumes_with_label(lease::LABEL).await?;
    for volume in &leases {
        engine
            .remove_volume(&volume.name)
            .await
            .with_context(|| format!("host `{name}`"))?;
        let run = volume.labels.get(lease::LABEL).map_or("?", String::as_str);
        let by = (volume.labels.get(lease::COORDINATOR)).map_or("?", String::as_str);
        eprintln!("host `{name}`: removed the lease of run {run} (taken from {by})");
    }
    if leases.is_empty() {
        eprintln!("host `{name}`: no lease");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_local_by_default_and_tcp_takes_its_tls_from_docker_cert_path() {
        let local = hosts(&[], None).unwrap();
        assert_eq!(local, vec![("local".to_string(), Endpoint::Local)]);
        let names = ["local".to_string(), "tcp://10.0.0.5:2376".to_string()];
        let dir = Path::new("/certs");
        let found = hosts(&names, Some(dir)).unwrap();
        assert_eq!(found[0].1, Endpoint::Local);
        let tls = Some(TlsFiles::in_dir(dir));
        assert_eq!(found[1].1, Endpoint::from_url(&names[1], tls).unwrap());
        let err = hosts(&names, None).unwrap_err().to_string();
        assert!(
            err.contains("tcp://10.0.0.5:2376") && err.contains("DOCKER_CERT_PATH"),
            "{err}"
        );
        let err = hosts(&["box".to_string()], None).unwrap_err().to_string();
        assert!(err.contains("box"), "{err}");
    }
}
