//! An Engine reached over SSH: the `ssh` program runs `docker system dial-stdio` on the remote and
//! the Engine's API travels through its standard input and output, one `ssh` process per
//! connection. The kit writes the program's argument vector itself ([`arguments`]): the user and
//! the port of `ssh://user@host:port` go to `-l` and `-p`, the host alone after `--`, so that no
//! part of the URL is read as an option or as part of another.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::task::{Context, Poll};

use anyhow::{Result, bail};
use bollard::{BollardRequest, ClientVersion, Docker};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The remote command that joins the Engine's socket to standard input and output.
const DIAL: [&str; 3] = ["docker", "system", "dial-stdio"];

/// The `ssh` program's arguments for the Engine at `url` (`ssh://[user@]host[:port]`, already
/// checked by [`super::endpoint::Endpoint::from_url`]): no terminal, no password prompt (a key or
/// the agent authenticates), then `-l user`, `-p port`, `--`, the host and [`DIAL`].
pub fn arguments(url: &str) -> Result<Vec<String>> {
    let Some(authority) = url.strip_prefix("ssh://") else {
        bail!("`{url}` is not an ssh:// URL");
    };
    let authority = authority.trim_end_matches('/');
    let (user, hostport) = match authority.rsplit_once('@') {
        Some((user, rest)) => (Some(user), rest),
        None => (None, authority),
    };
    let (host, port) = super::endpoint::split_port(hostport);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || host.starts_with('-') {
        bail!("`{url}`: its host `{host}` is empty or starts with `-`");
    }
    let mut args: Vec<String> = ["-T", "-o", "BatchMode=yes"].map(String::from).into();
    if let Some(user) = user {
        args.extend(["-l".into(), user.into()]);
    }
    if let Some(port) = port {
        let port: u16 = port
            .parse()
            .map_err(|_| anyhow::anyhow!("`{url}`: its port `{port}` is not a TCP port"))?;
        args.extend(["-p".into(), port.to_string()]);
    }
    args.extend(["--".into(), host.into()]);
    args.extend(DIAL.map(String::from));
    Ok(args)
}

/// A client of the Engine at `url` through `ssh` (see the module's doc).
pub fn connect(url: &str, timeout: u64, version: &ClientVersion) -> Result<Docker> {
    let connector = Connector {
        args: Arc::new(arguments(url)?),
    };
    let client = Client::builder(TokioExecutor::new()).build(connector);
    let transport = move |request: BollardRequest| {
        let client = client.clone();
        async move { client.request(request).await.map_err(Into::into) }
    };
    Ok(Docker::connect_with_custom_transport(
        transport,
        Some(url),
        timeout,
        version,
    )?)
}

/// Opens a connection by starting `ssh` with the argument vector.
#[derive(Clone)]
struct Connector {
    args: Arc<Vec<String>>,
}

type Connecting = Pin<Box<dyn Future<Output = io::Result<TokioIo<Pipes>>> + Send>>;

impl tower_service::Service<http::Uri> for Connector {
    type Response = TokioIo<Pipes>;
    type Error = io::Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Uri) -> Connecting {
        let args = Arc::clone(&self.args);
        Box::pin(async move {
            let mut child = Command::new("ssh")
                .args(args.iter())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(io::Error::other("ssh started without its pipes"));
            };
            Ok(TokioIo::new(Pipes {
                _child: child,
                stdin,
                stdout,
            }))
        })
    }
}

/// One `ssh` process as a byte stream: its standard output read, its standard input written; the
/// process is killed when the connection is dropped.
struct Pipes {
    _child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

impl AsyncRead for Pipes {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stdout).poll_read(cx, buf)
    }
}

impl AsyncWrite for Pipes {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stdin).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stdin).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stdin).poll_shutdown(cx)
    }
}

impl Connection for Pipes {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: &str) -> Vec<String> {
        arguments(url).unwrap()
    }

    #[test]
    fn the_port_and_the_user_are_options_and_the_host_stands_alone() {
        let dial = ["docker", "system", "dial-stdio"];
        let with = |more: &[&str]| -> Vec<String> {
            ["-T", "-o", "BatchMode=yes"]
                .iter()
                .chain(more)
                .chain(&dial)
                .map(|s| s.to_string())
                .collect()
        };
        assert_eq!(
            args("ssh://me@box:2222"),
            with(&["-l", "me", "-p", "2222", "--", "box"])
        );
        assert_eq!(args("ssh://box"), with(&["--", "box"]));
        assert_eq!(args("ssh://box:22/"), with(&["-p", "22", "--", "box"]));
        assert_eq!(
            args("ssh://me@[::1]:2200"),
            with(&["-l", "me", "-p", "2200", "--", "::1"])
        );
        assert_eq!(
            args("ssh://me@10.0.0.5"),
            with(&["-l", "me", "--", "10.0.0.5"])
        );
    }

    #[test]
    fn a_port_that_is_no_tcp_port_is_refused() {
        for url in ["ssh://me@box:70000", "ssh://-box", "tcp://box:1"] {
            assert!(arguments(url).is_err(), "{url}");
        }
    }
}
