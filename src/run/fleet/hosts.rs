//! Which Docker Engines `--hosts NAME,…` names, each resolved to an [`Endpoint`] before anything
//! connects: `local` (this machine's Engine), a URL (`unix:///…`, `tcp://host:port`, `ssh://…`),
//! a name in a hosts file (`hosts.yaml` in the study's folder, or the user's: a name both define,
//! or a file and a Docker context, as different Engines is refused), or a Docker CLI context
//! (`$DOCKER_CONFIG`, or `~/.docker`). Plain TCP (nothing authenticates the Engine or
//! encrypts its traffic) is refused unless the user allows it.

mod context;
mod file;

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::engine::{Endpoint, TlsFiles};

pub use file::{HostSpec, HostsFile, Tls, TlsPaths};

/// The name of a hosts file, in a study's folder or in the user's configuration folder.
pub const HOSTS_FILE: &str = "hosts.yaml";

/// The name of Podman's Docker-compatible API on this machine, and where its rootful service
/// listens when started by its systemd socket unit.
pub const PODMAN: &str = "podman";
const PODMAN_ROOTFUL: &str = "/run/podman/podman.sock";

fn effective_uid_is_root() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// One host of a fleet: the name it was given and how to reach its Engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// The name as given in `--hosts` (`local`, a URL, a context or a hosts-file name).
    pub name: String,
    /// Where its Engine listens, with its TLS files.
    pub endpoint: Endpoint,
}

/// Where names are looked up: the environment, made explicit so that tests can give their own.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The Docker CLI's configuration folder (`$DOCKER_CONFIG`, or `~/.docker`).
    pub docker_config: Option<PathBuf>,
    /// The hosts files: the study folder's, then the user's. A name two of them define as
    /// different Engines is refused.
    pub hosts_files: Vec<PathBuf>,
    /// `$DOCKER_CERT_PATH`: TLS files for a `tcp://` URL given without any.
    pub cert_path: Option<PathBuf>,
    /// `$DOCKER_HOST`: where `local` is.
    pub docker_host: Option<String>,
    /// Where `podman` is, unless a hosts file or a context names it: the socket of Podman's own
    /// `podman.socket` unit, rootful (`/run/podman/podman.sock`) for root, else the user's
    /// (`$XDG_RUNTIME_DIR/podman/podman.sock`).
    pub podman_socket: Option<PathBuf>,
}

impl Sources {
    /// From the environment: `$DOCKER_CONFIG` (or `~/.docker`), `<study_dir>/hosts.yaml`,
    /// `$XDG_CONFIG_HOME/parkbench/hosts.yaml` (or `~/.config/parkbench/hosts.yaml`),
    /// `$DOCKER_CERT_PATH`, `$DOCKER_HOST`.
    pub fn from_env(study_dir: Option<&Path>) -> Sources {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = var("HOME");
        let config = var("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
        Sources {
            docker_config: var("DOCKER_CONFIG").or_else(|| home.map(|h| h.join(".docker"))),
            hosts_files: study_dir
                .map(|d| d.join(HOSTS_FILE))
                .into_iter()
                .chain(config.map(|c| c.join("parkbench").join(HOSTS_FILE)))
                .collect(),
            cert_path: var("DOCKER_CERT_PATH"),
            docker_host: std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()),
            podman_socket: match effective_uid_is_root() {
                true => Some(PathBuf::from(PODMAN_ROOTFUL)),
                false => var("XDG_RUNTIME_DIR").map(|d| d.join("podman/podman.sock")),
            },
        }
    }
}

/// Resolves `--hosts` names against the environment ([`Sources::from_env`]); `study_dir` is the
/// study's folder (its `hosts.yaml`). Every error names the host and what to do; nothing connects.
pub fn resolve(
    names: &[String],
    study_dir: Option<&Path>,
    allow_plain_tcp: bool,
) -> Result<Vec<HostEntry>> {
    resolve_in(names, &Sources::from_env(study_dir), allow_plain_tcp)
}

/// [`resolve`] against the given sources.
pub fn resolve_in(
    names: &[String],
    sources: &Sources,
    allow_plain_tcp: bool,
) -> Result<Vec<HostEntry>> {
    if names.is_empty() {
        bail!("--hosts names no host: give one or more, separated by commas (`--hosts local,b`)");
    }
    let files = file::load_all(&sources.hosts_files)?;
    let mut entries: Vec<HostEntry> = Vec::new();
    for raw in names {
        let name = raw.trim();
        if name.is_empty() {
            bail!("--hosts has an empty name (`a,,b`?): separate the names by single commas");
        }
        if entries.iter().any(|e| e.name == name) {
            bail!("host `{name}` is named twice in --hosts: name each host once");
        }
        let endpoint = endpoint_of(name, sources, &files, allow_plain_tcp)?;
        refuse_plain(name, &endpoint, allow_plain_tcp)?;
        let at = address(&endpoint, sources);
        if let Some(same) = entries.iter().find(|e| address(&e.endpoint, sources) == at) {
            bail!(
                "hosts `{}` and `{name}` are the same Engine ({at}): name it once in --hosts",
                same.name
            );
        }
        entries.push(HostEntry {
            name: name.to_string(),
            endpoint,
        });
    }
    Ok(entries)
}

/// The endpoint one name stands for: `local`, a URL, a hosts-file name, a context.
fn endpoint_of(
    name: &str,
    sources: &Sources,
    files: &[file::Loaded],
    allow_plain_tcp: bool,
) -> Result<Endpoint> {
    if name == "local" {
        return Ok(Endpoint::Local);
    }
    if name.contains("://") {
        let url = name.trim_end_matches('/');
        let tls = if url.starts_with("tcp://") {
            match &sources.cert_path {
                Some(dir) => Some(TlsFiles::in_dir(dir)),
                None => file::tls_for_url(files, url)?,
            }
        } else {
            None
        };
        return Endpoint::from_url(url, tls);
    }
    let contexts = context::Contexts::new(sources.docker_config.as_deref());
    if let Some(endpoint) = from_files(name, sources, files, &contexts, allow_plain_tcp)? {
        return Ok(endpoint);
    }
    if let Some(endpoint) = contexts.endpoint(name, allow_plain_tcp)? {
        return Ok(endpoint);
    }
    if name == PODMAN {
        let Some(socket) = &sources.podman_socket else {
            bail!(
                "host `podman`: no socket for it (XDG_RUNTIME_DIR is not set); name its socket \
                 instead (`--hosts unix:///…/podman.sock`) or in a hosts file (docs/fleet.md, Podman)"
            );
        };
        return Ok(Endpoint::Unix(socket.clone()));
    }
    bail!("{}", unknown(name, &contexts, files))
}

/// The endpoint the hosts files give `name`, if any. A name that two files, or a file and a
/// Docker context, define as different Engines is refused, naming both: a study's checked-out
/// `hosts.yaml` must never repoint a name of the user's at another Engine (and its own CA).
fn from_files(
    name: &str,
    sources: &Sources,
    files: &[file::Loaded],
    contexts: &context::Contexts,
    allow_plain_tcp: bool,
) -> Result<Option<Endpoint>> {
    let found = file::lookup(files, name);
    let Some(first) = found.first() else {
        return Ok(None);
    };
    let endpoint = first.endpoint(name, sources, allow_plain_tcp)?;
    let differs = |other: &Endpoint, where_: String| -> Result<()> {
        if *other != endpoint {
            bail!(
                "host `{name}` is defined twice, as different Engines: in {} ({}) and in {where_} \
                 ({}); a hosts file cannot redefine a name, so that a study's hosts.yaml never \
                 points yours at another Engine. Rename one of them (docs/fleet.md, Hosts)",
                first.path().display(),
                endpoint.url(),
                other.url()
            );
        }
        Ok(())
    };
    for other in &found[1..] {
        let there = other.endpoint(name, sources, allow_plain_tcp)?;
        differs(&there, other.path().display().to_string())?;
    }
    if let Ok(Some(context)) = contexts.endpoint(name, allow_plain_tcp) {
        differs(&context, format!("Docker context `{name}`"))?;
    }
    Ok(Some(endpoint))
}

/// The error for a name that is nothing known: what is known, and what to do.
fn unknown(name: &str, contexts: &context::Contexts, files: &[file::Loaded]) -> String {
    let known = contexts.names();
    let mut message = format!(
        "no host `{name}`: it is not `local` or `podman`, not a URL (unix:///…, tcp://host:port, \
         ssh://user@host), not a Docker context ({}: {}) and not a name in a hosts file",
        contexts.folder_display(),
        list(&known)
    );
    let mut all = known;
    for f in files {
        message.push_str(&format!(" ({}: {})", f.path.display(), list(&f.names())));
        all.extend(f.names());
    }
    if files.is_empty() {
        message.push_str(" (no hosts file found)");
    }
    if let Some(close) = all
        .iter()
        .min_by_key(|k| strsim::damerau_levenshtein(name, k))
        .filter(|k| strsim::damerau_levenshtein(name, k) <= (name.chars().count() / 3).max(1))
    {
        message.push_str(&format!("; did you mean `{close}`?"));
    }
    message.push_str(&format!(
        ". Give its URL, create a context (`docker context create {name} --docker \
         host=tcp://HOST:2376,ca=…,cert=…,key=…`), or add `{name}:` under `hosts:` in {HOSTS_FILE} \
         (docs/fleet.md, Hosts)"
    ));
    message
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Plain TCP only when the user allowed it.
fn refuse_plain(name: &str, endpoint: &Endpoint, allow_plain_tcp: bool) -> Result<()> {
    if endpoint.is_plain_tcp() && !allow_plain_tcp {
        bail!(
            "host `{name}` ({}) would be reached over plain TCP: nothing would authenticate the \
             Engine or encrypt its traffic. Give it TLS files (DOCKER_CERT_PATH holding ca.pem, \
             cert.pem and key.pem, a context's TLS, or `tls:` in {HOSTS_FILE}), or pass \
             --allow-plain-tcp to accept it (the report then says so)",
            endpoint.url()
        );
    }
    Ok(())
}

/// Where an endpoint's Engine is, for telling two names of one Engine apart: `local` is where
/// `$DOCKER_HOST` (or the default socket) points.
fn address(endpoint: &Endpoint, sources: &Sources) -> String {
    match endpoint {
        Endpoint::Local => sources
            .docker_host
            .clone()
            .unwrap_or_else(|| "unix:///var/run/docker.sock".into()),
        other => other.url(),
    }
}

#[cfg(test)]
mod tests;
