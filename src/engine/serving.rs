//! Containers kept up for the processes of one cell (a study's `isolation: process`): the
//! container's command is the sampler as a supervisor (`sampler --serve`), the Engine attaches to
//! its stdin and output before it starts, and each process is one request written to its stdin
//! and one reply read from its stdout. The protocol is the sampler's (`docker/sampler/src/serve.rs`):
//!
//! ```text
//! request:  sample <n>\n  then n arguments, each  <byte length>\n<bytes>
//! reply:    sampled <status> <stdout length> <stderr length> <oom kills|->\n<stdout bytes><stderr bytes>
//! ```

use std::pin::Pin;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use bollard::container::LogOutput;
use bollard::errors::Error as BollardError;
use bollard::query_parameters::AttachContainerOptionsBuilder;
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::{ContainerOutcome, ContainerSpec, Containers, Created, Engine};

/// The supervisor's command line in a served container.
pub const SERVE: [&str; 2] = ["/usr/local/bin/sampler", "--serve"];

/// Most bytes a reply may announce for the sampler's stdout and stderr together.
const MAX_REPLY: usize = 256 << 20;

/// A container kept up for the processes of one cell, its supervisor waiting for requests
/// ([`Containers::sample`]). Removed when its `created` is removed, or dropped.
pub struct Serving<E: Containers> {
    pub created: Created<E>,
    pub(super) stdio: E::Stdio,
}

impl<E: Containers> Serving<E> {
    /// The spec the container was made from (its command the supervisor's).
    pub fn spec(&self) -> &ContainerSpec {
        &self.created.spec
    }
}

/// The Engine's attached stdin and output of a served container.
pub struct Attached {
    input: Pin<Box<dyn AsyncWrite + Send>>,
    output: Pin<Box<dyn Stream<Item = Result<LogOutput, BollardError>> + Send>>,
    /// Stdout read and not yet taken as a reply.
    pending: Vec<u8>,
    /// What the supervisor said on its own stderr (only ever its failure).
    said: Vec<u8>,
}

impl Engine {
    /// Creates the container of `spec`, attaches to its stdin and output, and starts it; its
    /// command must be the supervisor's ([`SERVE`], which the caller sets).
    pub(super) async fn serve_attached(&self, spec: &ContainerSpec) -> Result<Serving<Engine>> {
        let began = Instant::now();
        let mut body = super::isolation::create_body(spec, self.podman);
        body.open_stdin = Some(true);
        // The supervisor's stdin ends when the driver's attachment does (the driver killed).
        body.stdin_once = Some(true);
        body.attach_stdin = Some(true);
        body.attach_stdout = Some(true);
        body.attach_stderr = Some(true);
        let guard = self.create(body).await?;
        let id = guard.id().to_string();
        let started = async {
            self.check_tasks_limit(&id, spec).await?;
            let options = AttachContainerOptionsBuilder::default()
                .stdin(true)
                .stdout(true)
                .stderr(true)
                .stream(true)
                .build();
            let attached = (self.docker.attach_container(&id, Some(options)).await)
                .with_context(|| format!("attaching to container {id}"))?;
            let start = None::<bollard::query_parameters::StartContainerOptions>;
            (self.docker.start_container(&id, start).await)
                .with_context(|| format!("starting container {id}"))?;
            anyhow::Ok(attached)
        };
        let attached = match started.await {
            Ok(attached) => attached,
            // Removed now, not by the guard's removal in the background, which could still run
            // while the next process is measured.
            Err(e) => {
                guard.remove().await;
                return Err(e);
            }
        };
        Ok(Serving {
            created: Created {
                guard,
                spec: spec.clone(),
                took: began.elapsed(),
            },
            stdio: Attached {
                input: attached.input,
                output: attached.output,
                pending: Vec::new(),
                said: Vec::new(),
            },
        })
    }

    /// One process in a served container: the request for `cmd`, its reply, raced against the
    /// spec's timeout and `cancel`. A supervisor that fails (it ended, its output does not parse)
    /// fails this process, with what it said as its stderr: its container is only fit to be
    /// removed.
    pub(super) async fn sample_attached(
        &self,
        serving: &mut Serving<Engine>,
        cmd: &[String],
        cancel: &CancellationToken,
    ) -> Result<ContainerOutcome> {
        let mut outcome = ContainerOutcome::default();
        if cancel.is_cancelled() {
            outcome.interrupted = true;
            return Ok(outcome);
        }
        let began = Instant::now();
        let (id, timeout) = (serving.created.id().to_string(), serving.spec().timeout);
        let io = &mut serving.stdio;
        // Whether to ask the Engine if the OOM killer ended something: the supervisor failed, or a
        // process failed and its cgroup does not say.
        let mut ask_engine = false;
        tokio::select! {
            reply = io.ask(cmd) => match reply {
                Ok(reply) => {
                    outcome.exit_code = Some(reply.status);
                    outcome.stdout = String::from_utf8_lossy(&reply.stdout).into_owned();
                    outcome.stderr = String::from_utf8_lossy(&reply.stderr).into_owned();
                    outcome.oom_killed = reply.oom_kills.is_some_and(|n| n > 0);
                    ask_engine = reply.oom_kills.is_none() && reply.status != 0;
                }
                Err(e) => {
                    outcome.stderr = format!(
                        "container {id}: its supervisor (`sampler --serve`) failed: {e:#}{}",
                        said(&io.said)
                    );
                    ask_engine = true;
                }
            },
            () = tokio::time::sleep(timeout) => outcome.timed_out = true,
            () = cancel.cancelled() => outcome.interrupted = true,
        }
        // The container's own start counts once, with its first process; the Engine's word on an
        // OOM kill, asked only after a failure, does not count.
        outcome.elapsed = std::mem::take(&mut serving.created.took) + began.elapsed();
        if ask_engine {
            outcome.oom_killed = self.oom_killed(&id).await;
        }
        Ok(outcome)
    }

    /// Whether the Engine says the OOM killer ended something in container `id`.
    async fn oom_killed(&self, id: &str) -> bool {
        (self.docker.inspect_container(id, None).await.ok())
            .and_then(|c| c.state)
            .and_then(|s| s.oom_killed)
            .unwrap_or(false)
    }
}

impl Attached {
    /// Writes the request for `cmd` and reads its reply; nothing may follow it.
    async fn ask(&mut self, cmd: &[String]) -> Result<Reply> {
        self.input.write_all(&request(cmd)).await?;
        self.input.flush().await?;
        loop {
            if let Some(reply) = take_reply(&mut self.pending)? {
                if !self.pending.is_empty() {
                    bail!("more than one reply: {:?}", excerpt(&self.pending));
                }
                return Ok(reply);
            }
            match self.output.next().await {
                Some(Ok(LogOutput::StdOut { message })) => self.pending.extend_from_slice(&message),
                Some(Ok(LogOutput::StdErr { message })) => {
                    self.said.extend_from_slice(&message);
                    let keep = self.said.len().saturating_sub(4096);
                    self.said.drain(..keep);
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e).context("reading its output"),
                None => bail!("it ended"),
            }
        }
    }
}

/// A reply: the sampler's status, its stdout and stderr, and the OOM kills in the container
/// during the process (`None`: its cgroup does not say).
#[derive(Debug, PartialEq)]
struct Reply {
    status: i64,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    oom_kills: Option<u64>,
}

/// The request for `cmd`.
fn request(cmd: &[String]) -> Vec<u8> {
    let mut out = format!("sample {}\n", cmd.len()).into_bytes();
    for arg in cmd {
        out.extend_from_slice(format!("{}\n", arg.len()).as_bytes());
        out.extend_from_slice(arg.as_bytes());
    }
    out
}

/// The first whole reply in `pending`, taken out of it; `None` while it is not all there.
fn take_reply(pending: &mut Vec<u8>) -> Result<Option<Reply>> {
    let Some(end) = pending.iter().position(|&b| b == b'\n') else {
        if pending.len() > 128 {
            bail!(
                "its reply does not begin with a header: {:?}",
                excerpt(pending)
            );
        }
        return Ok(None);
    };
    let header = String::from_utf8_lossy(&pending[..end]).into_owned();
    let words: Vec<&str> = header.split(' ').collect();
    let parsed = match words[..] {
        ["sampled", status, out, err, oom] => (|| {
            let (out, err) = (out.parse::<usize>().ok()?, err.parse::<usize>().ok()?);
            let oom = match oom {
                "-" => None,
                n => Some(n.parse::<u64>().ok()?),
            };
            let total = out.checked_add(err).filter(|&t| t <= MAX_REPLY)?;
            Some((status.parse::<i64>().ok()?, out, total, oom))
        })(),
        _ => None,
    };
    let Some((status, out, total, oom_kills)) = parsed else {
        bail!("not a reply: {header:?}");
    };
    if pending.len() < end + 1 + total {
        return Ok(None);
    }
    let mut stdout: Vec<u8> = pending.drain(..end + 1 + total).skip(end + 1).collect();
    let stderr = stdout.split_off(out);
    Ok(Some(Reply {
        status,
        stdout,
        stderr,
        oom_kills,
    }))
}

fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(128)]).into_owned()
}

/// The supervisor's own last words, when it said any.
fn said(stderr: &[u8]) -> String {
    match String::from_utf8_lossy(stderr).trim() {
        "" => String::new(),
        text => format!(": {text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_taken_once_it_is_all_there() {
        let mut pending = b"sampled 0 3 2 -\nabc".to_vec();
        assert_eq!(take_reply(&mut pending).unwrap(), None);
        pending.extend_from_slice(b"deSAMPLED");
        let reply = take_reply(&mut pending).unwrap().unwrap();
        let expected = Reply {
            status: 0,
            stdout: b"abc".to_vec(),
            stderr: b"de".to_vec(),
            oom_kills: None,
        };
        assert_eq!(reply, expected);
        assert_eq!(pending, b"SAMPLED", "what follows is left");
        let mut killed = b"sampled 137 0 0 1\n".to_vec();
        assert_eq!(take_reply(&mut killed).unwrap().unwrap().oom_kills, Some(1));
        for bad in [
            "hello 1 2 3 4\n",
            "sampled 0 1 1\n",
            "sampled x 1 1 0\n",
            "sampled 0 1 1 x\n",
            "sampled 0 999999999999 0 0\n",
            "sampled 0 18446744073709551615 1 0\n",
            "sampled 0 1 18446744073709551615 0\n",
        ] {
            let mut pending = bad.as_bytes().to_vec();
            assert!(take_reply(&mut pending).is_err(), "{bad:?}");
        }
        let mut endless = vec![b'x'; 200];
        assert!(
            take_reply(&mut endless).is_err(),
            "no header within 128 bytes"
        );
    }

    #[test]
    fn a_request_carries_any_argument_whole() {
        let cmd = ["sampler", "a\nb", ""].map(String::from);
        assert_eq!(request(&cmd), b"sample 3\n7\nsampler3\na\nb0\n".to_vec());
    }
}
