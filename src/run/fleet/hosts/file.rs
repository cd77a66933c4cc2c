//! A hosts file (`hosts.yaml`): names for Docker Engines, written once for a fleet. Unknown fields
//! are refused, and every error leads with the file, line and column of its node.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::{self, Deserializer, MapAccess, Visitor, value::MapAccessDeserializer};
use serde::{Deserialize, Serialize};

use super::Sources;
use super::context::Contexts;
use crate::engine::{Endpoint, TlsFiles};
use crate::yaml::{Doc, Invalid, bail_at, ensure_at};

/// `hosts.yaml`: names for Docker Engines, each usable in `--hosts`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostsFile {
    /// Each host by name (not `local`, no `://`, no comma or space): how to reach its Engine.
    pub hosts: BTreeMap<String, HostSpec>,
}

/// One host of a hosts file: a URL (with its TLS files for `tcp://`), or a Docker context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// The Engine's address: `tcp://host:port`, `unix:///path` or `ssh://user@host`. Either
    /// this or `context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A `tcp://` Engine's mutual-TLS files: a folder holding `ca.pem`, `cert.pem` and `key.pem`,
    /// or `{ca, cert, key}`, each path relative to this file's folder unless absolute. Without
    /// it, `$DOCKER_CERT_PATH`; without that, plain TCP (refused unless `--allow-plain-tcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Tls>,
    /// A Docker CLI context whose endpoint and TLS files to use. Either this or `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// A `tcp://` Engine's TLS files: a folder (`DOCKER_CERT_PATH` layout) or each file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Tls {
    /// A folder holding `ca.pem`, `cert.pem` and `key.pem`.
    Dir(PathBuf),
    /// Each file by its path.
    Files(TlsPaths),
}

/// The three TLS files of a host, each by its path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsPaths {
    /// The CA that signed the Engine's certificate.
    pub ca: PathBuf,
    /// The client's certificate.
    pub cert: PathBuf,
    /// The client's private key.
    pub key: PathBuf,
}

// A string is a folder, a mapping is the three files: read by hand, so that an unknown field in
// the mapping is named at its line like anywhere else in the file.
impl<'de> Deserialize<'de> for Tls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Tls, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = Tls;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a folder holding ca.pem, cert.pem and key.pem, or {ca, cert, key}")
            }
            fn visit_str<E: de::Error>(self, dir: &str) -> std::result::Result<Tls, E> {
                Ok(Tls::Dir(dir.into()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Tls, A::Error> {
                TlsPaths::deserialize(MapAccessDeserializer::new(map)).map(Tls::Files)
            }
        }
        d.deserialize_any(Either)
    }
}

/// A hosts file read and checked, and where it is.
pub(super) struct Loaded {
    pub path: PathBuf,
    text: String,
    file: HostsFile,
}

/// Every hosts file of `paths` that exists, in order; one that does not parse is an error at its
/// line and column.
pub(super) fn load_all(paths: &[PathBuf]) -> Result<Vec<Loaded>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading hosts file {}", path.display()))?;
        let file = Doc::new(path.display().to_string(), &text).parse(check)?;
        out.push(Loaded {
            path: path.clone(),
            text,
            file,
        });
    }
    Ok(out)
}

/// Each host is a URL or a context, its name one `--hosts` can give.
fn check(file: &mut HostsFile) -> std::result::Result<(), Invalid> {
    for (name, spec) in &file.hosts {
        let at = |field: &str| format!("hosts.{name}{field}");
        ensure_at!(
            !name.is_empty()
                && name != "local"
                && !name.contains("://")
                && !name.contains([',', ' ', '\t']),
            at(""),
            "a host's name cannot be `local`, empty, or hold `://`, a comma or a space: `{name}`"
        );
        match (&spec.url, &spec.context) {
            (Some(_), Some(_)) => bail_at!(
                at(".context"),
                "host `{name}` gives both `url` and `context`: keep one"
            ),
            (None, None) => bail_at!(
                at(""),
                "host `{name}` gives neither `url` nor `context`: add `url: tcp://HOST:2376` (with \
                 `tls:`) or `context: NAME`"
            ),
            (Some(url), None) => {
                if let Err(e) = Endpoint::from_url(url, None) {
                    bail_at!(at(".url"), "{e:#}");
                }
                ensure_at!(
                    spec.tls.is_none() || url.starts_with("tcp://"),
                    at(".tls"),
                    "host `{name}`: `tls` is for a tcp:// URL only; remove it"
                );
            }
            (None, Some(_)) => ensure_at!(
                spec.tls.is_none(),
                at(".tls"),
                "host `{name}`: a context brings its own TLS files; remove `tls`"
            ),
        }
    }
    Ok(())
}

/// Every file's entry called `name`, in the files' order.
pub(super) fn lookup<'a>(files: &'a [Loaded], name: &str) -> Vec<Found<'a>> {
    files
        .iter()
        .filter_map(|f| f.file.hosts.get(name).map(|spec| Found { file: f, spec }))
        .collect()
}

/// The TLS files the entries with this `tcp://` URL give, if any, with the file giving them:
/// several files giving other files for one URL are refused, naming them.
pub(super) fn tls_for_url(files: &[Loaded], url: &str) -> Result<Option<TlsFiles>> {
    let mut given: Vec<(&Path, TlsFiles)> = Vec::new();
    for f in files {
        for spec in f.file.hosts.values() {
            let same = spec.url.as_deref().map(|u| u.trim_end_matches('/')) == Some(url);
            if let (true, Some(tls)) = (same, &spec.tls) {
                given.push((&f.path, f.tls_files(tls)));
            }
        }
    }
    if let Some((path, tls)) = given.iter().find(|(_, t)| *t != given[0].1) {
        anyhow::bail!(
            "`{url}` is given other TLS files in {} ({}) than in {} ({}): a hosts file cannot \
             change the CA or keys another one gives an Engine; keep one of the entries",
            given[0].0.display(),
            shown(&given[0].1),
            path.display(),
            shown(tls)
        );
    }
    Ok(given.into_iter().next().map(|(_, tls)| tls))
}

fn shown(tls: &TlsFiles) -> String {
    format!(
        "{}, {}, {}",
        tls.ca.display(),
        tls.cert.display(),
        tls.key.display()
    )
}

/// One entry found in one file.
pub(super) struct Found<'a> {
    file: &'a Loaded,
    spec: &'a HostSpec,
}

impl Found<'_> {
    /// The hosts file the entry is in.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// The entry's endpoint; a context it names that does not exist is an error at its line.
    pub fn endpoint(
        &self,
        name: &str,
        sources: &Sources,
        allow_plain_tcp: bool,
    ) -> Result<Endpoint> {
        let doc = || Doc::new(self.file.path.display().to_string(), &self.file.text);
        if let Some(context) = &self.spec.context {
            let contexts = Contexts::new(sources.docker_config.as_deref());
            return match contexts.endpoint(context, allow_plain_tcp) {
                Ok(Some(endpoint)) => Ok(endpoint),
                Ok(None) => Err(doc().error(&Invalid::new(
                    format!("hosts.{name}.context"),
                    format!(
                        "host `{name}` names Docker context `{context}`, which {} does not hold \
                         (it holds: {}); create it with `docker context create`, or give `url:`",
                        contexts.folder_display(),
                        super::list(&contexts.names())
                    ),
                ))),
                Err(e) => Err(e.context(format!("host `{name}` of {}", self.file.path.display()))),
            };
        }
        let url = self.spec.url.as_deref().unwrap_or_default();
        let tls = match (&self.spec.tls, &sources.cert_path) {
            (Some(t), _) => Some(self.file.tls_files(t)),
            (None, Some(dir)) if url.starts_with("tcp://") => Some(TlsFiles::in_dir(dir)),
            (None, _) => None,
        };
        Endpoint::from_url(url, tls)
    }
}

impl Loaded {
    /// The names this file defines.
    pub fn names(&self) -> Vec<String> {
        self.file.hosts.keys().cloned().collect()
    }

    /// `tls` with its relative paths taken from this file's folder.
    fn tls_files(&self, tls: &Tls) -> TlsFiles {
        let base = self.path.parent().unwrap_or(Path::new("."));
        match tls {
            Tls::Dir(dir) => TlsFiles::in_dir(&base.join(dir)),
            Tls::Files(p) => TlsFiles {
                ca: base.join(&p.ca),
                cert: base.join(&p.cert),
                key: base.join(&p.key),
            },
        }
    }
}
