//! Docker CLI contexts, read from the CLI's configuration folder as `docker context ls` shows
//! them: `contexts/meta/<sha256 of the name>/meta.json` holds the endpoint
//! (`Endpoints.docker.Host`, `SkipTLSVerify`), `contexts/tls/<sha256 of the name>/docker/` its
//! `ca.pem`, `cert.pem` and `key.pem`. Only read; parkbench never writes there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::engine::{Endpoint, TlsFiles};

/// The contexts of one configuration folder (`None`: no folder known, so no context).
pub(super) struct Contexts {
    folder: Option<PathBuf>,
}

/// A context's `meta.json`, as far as it is read.
#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "Endpoints", default)]
    endpoints: BTreeMap<String, MetaEndpoint>,
}

#[derive(Deserialize)]
struct MetaEndpoint {
    #[serde(rename = "Host", default)]
    host: Option<String>,
    #[serde(rename = "SkipTLSVerify", default)]
    skip_tls_verify: bool,
}

impl Contexts {
    pub fn new(folder: Option<&Path>) -> Contexts {
        Contexts {
            folder: folder.map(Path::to_path_buf),
        }
    }

    /// The folder, for messages.
    pub fn folder_display(&self) -> String {
        match &self.folder {
            Some(f) => format!("Docker contexts in {}", f.display()),
            None => "Docker contexts (no DOCKER_CONFIG or HOME)".into(),
        }
    }

    /// The endpoint of context `name`; `None` when there is no such context. A context that skips
    /// verifying the Engine's certificate is refused unless plain TCP is allowed.
    pub fn endpoint(&self, name: &str, allow_plain_tcp: bool) -> Result<Option<Endpoint>> {
        let Some(folder) = &self.folder else {
            return Ok(None);
        };
        let id = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(name.as_bytes()));
        let meta_path = folder.join("contexts/meta").join(&id).join("meta.json");
        if !meta_path.is_file() {
            return Ok(None);
        }
        let meta = read_meta(&meta_path)?;
        let Some(docker) = meta.endpoints.get("docker") else {
            bail!(
                "Docker context `{name}` ({}) has no docker endpoint; recreate it with \
                 `docker context create {name} --docker host=…`",
                meta_path.display()
            );
        };
        let Some(host) = docker.host.as_deref().filter(|h| !h.is_empty()) else {
            bail!(
                "Docker context `{name}` ({}) gives no Engine address (Endpoints.docker.Host)",
                meta_path.display()
            );
        };
        if docker.skip_tls_verify && !allow_plain_tcp {
            bail!(
                "Docker context `{name}` skips verifying its Engine's certificate \
                 (SkipTLSVerify), so nothing authenticates the Engine; give the context its CA \
                 (`docker context update {name} --docker host={host},ca=…,cert=…,key=…`), or \
                 pass --allow-plain-tcp to accept it (parkbench still checks the certificate \
                 against the context's ca.pem, if it has one)"
            );
        }
        let tls_dir = folder.join("contexts/tls").join(&id).join("docker");
        let tls =
            (host.starts_with("tcp://") && tls_dir.is_dir()).then(|| TlsFiles::in_dir(&tls_dir));
        Endpoint::from_url(host, tls)
            .with_context(|| format!("Docker context `{name}`"))
            .map(Some)
    }

    /// Every context's name, sorted (one whose meta.json does not read is left out).
    pub fn names(&self) -> Vec<String> {
        let Some(folder) = &self.folder else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(folder.join("contexts/meta")) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| read_meta(&e.path().join("meta.json")).ok())
            .map(|m| m.name)
            .collect();
        names.sort();
        names
    }
}

fn read_meta(path: &Path) -> Result<Meta> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading Docker context {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "reading Docker context {}: not a context's meta.json",
            path.display()
        )
    })
}
