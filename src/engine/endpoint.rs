//! Where a Docker Engine listens and how to reach it: this machine's Engine (`local`), a Unix
//! socket, TCP with mutual TLS (or, only when the user says so, plain TCP), or SSH (bollard's ssh
//! transport, which runs `docker system dial-stdio` on the remote through the `ssh` program).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// How to reach one Engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// This machine's Engine: `DOCKER_HOST`, or the default socket.
    Local,
    /// `unix:///path/to/docker.sock`.
    Unix(PathBuf),
    /// `tcp://host:port`, with mutual TLS unless `tls` is `None` (plain TCP, which the user must
    /// have allowed explicitly).
    Tcp { addr: String, tls: Option<TlsFiles> },
    /// `ssh://user@host[:port]`.
    Ssh(String),
}

/// The mutual-TLS material of a `tcp://` Engine, as `DOCKER_CERT_PATH` holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA that signed the Engine's certificate (`ca.pem`).
    pub ca: PathBuf,
    /// The client's certificate (`cert.pem`).
    pub cert: PathBuf,
    /// The client's private key (`key.pem`).
    pub key: PathBuf,
}

impl TlsFiles {
    /// `ca.pem`, `cert.pem` and `key.pem` in `dir` (the `DOCKER_CERT_PATH` layout).
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        }
    }

    /// Each file exists, or an error naming the missing one.
    pub fn check(&self) -> Result<()> {
        for (what, path) in [
            ("CA certificate", &self.ca),
            ("client certificate", &self.cert),
            ("client key", &self.key),
        ] {
            if !path.is_file() {
                bail!(
                    "the TLS {what} {} does not exist; give the folder holding ca.pem, cert.pem \
                     and key.pem",
                    path.display()
                );
            }
        }
        Ok(())
    }
}

impl Endpoint {
    /// A URL: `unix:///…`, `tcp://host:port` (with `tls`, or plain when `tls` is `None`) or
    /// `ssh://user@host`. Anything else is refused, naming the URL.
    pub fn from_url(url: &str, tls: Option<TlsFiles>) -> Result<Self> {
        if let Some(path) = url.strip_prefix("unix://") {
            if !path.starts_with('/') {
                bail!(
                    "`{url}`: a unix:// URL needs an absolute socket path (unix:///var/run/docker.sock)"
                );
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        if let Some(addr) = url.strip_prefix("tcp://") {
            let addr = addr.trim_end_matches('/');
            if addr.is_empty() || !addr.contains(':') {
                bail!("`{url}`: a tcp:// URL needs a host and a port (tcp://10.0.0.5:2376)");
            }
            return Ok(Endpoint::Tcp {
                addr: addr.to_string(),
                tls,
            });
        }
        if url.starts_with("ssh://") {
            if url.len() == "ssh://".len() {
                bail!("`{url}`: an ssh:// URL needs a host (ssh://user@host)");
            }
            return Ok(Endpoint::Ssh(url.to_string()));
        }
        bail!(
            "`{url}` is not an Engine address: use unix:///path, tcp://host:port or ssh://user@host"
        )
    }

    /// The address as a user would write it (no key material).
    pub fn url(&self) -> String {
        match self {
            Endpoint::Local => "local".into(),
            Endpoint::Unix(p) => format!("unix://{}", p.display()),
            Endpoint::Tcp { addr, .. } => format!("tcp://{addr}"),
            Endpoint::Ssh(u) => u.clone(),
        }
    }

    /// Plain TCP: nothing authenticates the Engine or encrypts the traffic.
    pub fn is_plain_tcp(&self) -> bool {
        matches!(self, Endpoint::Tcp { tls: None, .. })
    }
}

/// An error and each of its causes, joined by `: ` (a TLS refusal lies a few causes down a
/// connection error), a cause that repeats the one before it left out.
pub fn causes(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !parts.last().is_some_and(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = cause.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_errors_causes_are_named_once_each() {
        #[derive(Debug)]
        struct E(&'static str, Option<Box<E>>);
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|e| e as _)
            }
        }
        let alert = E("received fatal alert: BadCertificate", None);
        let io = E(
            "io: received fatal alert: BadCertificate",
            Some(Box::new(alert)),
        );
        let top = E("client error (Connect)", Some(Box::new(io)));
        assert_eq!(
            causes(&top),
            "client error (Connect): io: received fatal alert: BadCertificate"
        );
    }

    #[test]
    fn urls_parse_and_bad_ones_say_what_to_write() {
        assert_eq!(
            Endpoint::from_url("unix:///run/d.sock", None).unwrap(),
            Endpoint::Unix("/run/d.sock".into())
        );
        let tls = TlsFiles::in_dir(Path::new("/c"));
        let tcp = Endpoint::from_url("tcp://127.0.0.1:2376/", Some(tls.clone())).unwrap();
        assert_eq!(
            tcp,
            Endpoint::Tcp {
                addr: "127.0.0.1:2376".into(),
                tls: Some(tls)
            }
        );
        assert!(!tcp.is_plain_tcp());
        assert!(
            Endpoint::from_url("tcp://h:1", None)
                .unwrap()
                .is_plain_tcp()
        );
        assert_eq!(
            Endpoint::from_url("ssh://me@box", None).unwrap().url(),
            "ssh://me@box"
        );
        for bad in [
            "http://x:1",
            "tcp://nohost",
            "unix://rel.sock",
            "ssh://",
            "box",
        ] {
            let e = Endpoint::from_url(bad, None).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}
