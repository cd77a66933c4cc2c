//! Where a Docker Engine listens and how to reach it: this machine's Engine (`local`), a Unix
//! socket, TCP with mutual TLS (or, only when the user says so, plain TCP), or SSH (the `ssh`
//! program running `docker system dial-stdio` on the remote, [`super::ssh`]).

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
    /// `ssh://user@host[:port]`. Anything else is refused, naming the URL; so is an authority, user
    /// or host that is empty, starts with `-` or holds whitespace or a control character (the ssh
    /// program would take it for an option), and a password in the URL.
    pub fn from_url(url: &str, tls: Option<TlsFiles>) -> Result<Self> {
        // Messages name the URL without its password, if it has one.
        let shown = redacted(url);
        if let Some(path) = url.strip_prefix("unix://") {
            if !path.starts_with('/') {
                bail!(
                    "`{shown}`: a unix:// URL needs an absolute socket path \
                     (unix:///var/run/docker.sock)"
                );
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        if let Some(addr) = url.strip_prefix("tcp://") {
            let addr = addr.trim_end_matches('/');
            let authority = Authority::parse(&shown, addr)?;
            if authority.user.is_some() || authority.port.is_none() {
                bail!(
                    "`{shown}`: a tcp:// URL is a host and a port, no user (tcp://10.0.0.5:2376); \
                     TLS files authenticate the client"
                );
            }
            return Ok(Endpoint::Tcp {
                addr: addr.to_string(),
                tls,
            });
        }
        if let Some(rest) = url.strip_prefix("ssh://") {
            Authority::parse(&shown, rest.trim_end_matches('/'))?;
            return Ok(Endpoint::Ssh(url.trim_end_matches('/').to_string()));
        }
        bail!(
            "`{shown}` is not an Engine address: use unix:///path, tcp://host:port or \
             ssh://user@host"
        )
    }

    /// The address as a user would write it (no key material, no password: `ssh://user:pw@h`
    /// is `ssh://user@h`).
    pub fn url(&self) -> String {
        match self {
            Endpoint::Local => "local".into(),
            Endpoint::Unix(p) => format!("unix://{}", p.display()),
            Endpoint::Tcp { addr, .. } => format!("tcp://{}", without_password(addr)),
            Endpoint::Ssh(u) => redacted(u),
        }
    }

    /// Plain TCP: nothing authenticates the Engine or encrypts the traffic.
    pub fn is_plain_tcp(&self) -> bool {
        matches!(self, Endpoint::Tcp { tls: None, .. })
    }
}

/// The authority of a `tcp://` or `ssh://` URL (`[user[:password]@]host[:port]`), checked.
struct Authority<'a> {
    user: Option<&'a str>,
    port: Option<&'a str>,
}

impl<'a> Authority<'a> {
    /// `text` (the URL `url` without its scheme) as an authority; refused, naming `url`, when it
    /// is empty, holds a path, whitespace or a control character, or when its user or host is
    /// empty or starts with `-`.
    fn parse(url: &str, text: &'a str) -> Result<Self> {
        let form = "write ssh://user@host or tcp://host:port";
        if text.is_empty() {
            bail!("`{url}` names no host: {form}");
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            bail!("`{url}` holds whitespace or a control character: {form}");
        }
        if text.contains(['/', '?', '#']) {
            bail!("`{url}` has more than a host: {form}, nothing after it");
        }
        let (user, hostport) = match text.rsplit_once('@') {
            Some((userinfo, _)) if userinfo.contains(':') => bail!(
                "`{url}` holds a password: a password in a URL is not supported (it would be \
                 shown and stored wherever the URL is); let ssh authenticate with a key or its \
                 agent, and {form}"
            ),
            Some((user, hostport)) => (Some(user), hostport),
            None => (None, text),
        };
        let (host, port) = split_port(hostport);
        for (what, part) in [("user", user), ("host", Some(host))] {
            let Some(part) = part else { continue };
            if part.is_empty() || part.starts_with('-') {
                bail!("`{url}`: its {what} `{part}` is empty or starts with `-`: {form}");
            }
        }
        if let Some(port) = port
            && (port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()))
        {
            bail!("`{url}`: its port `{port}` is not a number: {form}");
        }
        Ok(Authority { user, port })
    }
}

/// `host[:port]` split at the port's colon (`[::1]:22` keeps its brackets).
pub(super) fn split_port(hostport: &str) -> (&str, Option<&str>) {
    if hostport.starts_with('[')
        && let Some(end) = hostport.find(']')
    {
        let (host, rest) = hostport.split_at(end + 1);
        return (host, rest.strip_prefix(':'));
    }
    match hostport.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (hostport, None),
    }
}

/// `url` without the password of its authority, if it has one.
fn redacted(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", without_password(rest)),
        None => url.to_string(),
    }
}

/// `user:password@rest` as `user@rest`; anything else as it is.
fn without_password(authority: &str) -> String {
    match authority.rsplit_once('@') {
        Some((userinfo, rest)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{user}@{rest}")
        }
        None => authority.to_string(),
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

    #[test]
    fn an_authority_the_ssh_program_would_take_for_an_option_is_refused() {
        for good in [
            "ssh://me@box",
            "ssh://box",
            "ssh://me@box:2222",
            "ssh://me@[::1]:22",
        ] {
            assert!(Endpoint::from_url(good, None).is_ok(), "{good}");
        }
        for bad in [
            "ssh://-oProxyCommand=touch@box",
            "ssh://me@-oProxyCommand=x",
            "ssh://-box",
            "ssh://@box",
            "ssh://me@",
            "ssh://me@box:",
            "ssh://me@box:x",
            "ssh://me @box",
            "ssh://me@bo\tx",
            "ssh://me@box\n-oX",
            "ssh://me@box/path",
            "tcp://-h:2376",
            "tcp://:2376",
            "tcp://h :2376",
            "tcp://me@h:2376",
            "tcp://h:",
        ] {
            let e = Endpoint::from_url(bad, None).unwrap_err().to_string();
            assert!(e.contains(&format!("`{bad}`")), "{bad}: {e}");
        }
    }

    #[test]
    fn an_address_never_shows_a_password() {
        let ssh = Endpoint::Ssh("ssh://me:secret@box:22".into());
        assert_eq!(ssh.url(), "ssh://me@box:22");
        let plain = Endpoint::Ssh("ssh://box".into());
        assert_eq!(plain.url(), "ssh://box");
        let tcp = Endpoint::Tcp {
            addr: "me:secret@h:2376".into(),
            tls: None,
        };
        assert_eq!(tcp.url(), "tcp://me@h:2376");
        // One given is refused, and the error does not show it either.
        for url in ["ssh://me:secret@box", "tcp://me:secret@h:2376"] {
            let e = Endpoint::from_url(url, None).unwrap_err().to_string();
            assert!(e.contains("password") && !e.contains("secret"), "{e}");
        }
    }
}
