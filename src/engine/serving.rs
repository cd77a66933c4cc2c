//! Containers kept up for the processes of one cell (a study's `isolation: process`): the
//! container's command is the sampler as a supervisor (`sampler --serve`), the Engine attaches to
//! its stdin and output before it starts, and each process is one request written to its stdin
//! and one reply read from its stdout. The protocol is the sampler's (`docker/sampler/src/serve.rs`):
//!
//! ```text
//! request:  sample <n>\n  then n arguments, each  <byte length>\n<bytes>
//! reply:    sampled <status> <stdout length> <stderr length>\n<stdout bytes><stderr bytes>
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
/// ([`Containers::sample`]). Removed when retired ([`Containers::retire`]) or dropped.
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
    /// Creates the container of `spec` (its command [`SERVE`]), attaches to it, and starts it.
    pub async fn serve(&self, spec: &ContainerSpec) -> Result<Serving<Engine>> {
        let began = Instant::now();
        let mut body = super::containers::create_body(spec, self.podman);
        body.open_stdin = Some(true);
        body.stdin_once = Some(false);
        body.attach_stdin = Some(true);
        body.attach_stdout = Some(true);
        body.attach_stderr = Some(true);
        let guard = self.create(body).await?;
        let id = guard.id().to_string();
        let options = AttachContainerOptionsBuilder::default()
            .stdin(true)
            .stdout(true)
            .stderr(true)
            .stream(true)
            .build();
        let attached = self
            .docker
            .attach_container(&id, Some(options))
            .await
            .with_context(|| format!("attaching to container {id}"))?;
        self.docker
            .start_container(
                &id,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await
            .with_context(|| format!("starting container {id}"))?;
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
    /// spec's timeout and `cancel`.
    pub async fn sample(
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
        tokio::select! {
            reply = io.ask(cmd) => {
                let (status, stdout, stderr) = reply.with_context(|| format!(
                    "container {id}: its supervisor (`sampler --serve`) failed{}",
                    said(&io.said)
                ))?;
                outcome.exit_code = Some(status);
                outcome.stdout = String::from_utf8_lossy(&stdout).into_owned();
                outcome.stderr = String::from_utf8_lossy(&stderr).into_owned();
            }
            () = tokio::time::sleep(timeout) => outcome.timed_out = true,
            () = cancel.cancelled() => outcome.interrupted = true,
        }
        // The container's own start counts once, with its first process.
        outcome.elapsed = std::mem::take(&mut serving.created.took) + began.elapsed();
        Ok(outcome)
    }

    /// Removes a served container; true when the OOM killer ended something in it.
    pub async fn retire(&self, serving: Serving<Engine>) -> bool {
        let inspect = self.docker.inspect_container(serving.created.id(), None);
        let oom = (inspect.await.ok())
            .and_then(|c| c.state)
            .and_then(|s| s.oom_killed)
            .unwrap_or(false);
        serving.created.remove().await;
        oom
    }
}

impl Attached {
    /// Writes the request for `cmd` and reads its reply: status, stdout, stderr.
    async fn ask(&mut self, cmd: &[String]) -> Result<Reply> {
        self.input.write_all(&request(cmd)).await?;
        self.input.flush().await?;
        loop {
            if let Some(reply) = take_reply(&mut self.pending)? {
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

/// A reply: the sampler's status, its stdout and its stderr.
type Reply = (i64, Vec<u8>, Vec<u8>);

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
        ["sampled", status, out, err] => status
            .parse::<i64>()
            .ok()
            .zip(out.parse::<usize>().ok())
            .zip(err.parse::<usize>().ok()),
        _ => None,
    };
    let Some(((status, out), err)) = parsed.filter(|((_, o), e)| o + e <= MAX_REPLY) else {
        bail!("not a reply: {header:?}");
    };
    if pending.len() < end + 1 + out + err {
        return Ok(None);
    }
    let mut body: Vec<u8> = pending.drain(..end + 1 + out + err).skip(end + 1).collect();
    let stderr = body.split_off(out);
    Ok(Some((status, body, stderr)))
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
        let mut pending = b"sampled 0 3 2\nabc".to_vec();
        assert_eq!(take_reply(&mut pending).unwrap(), None);
        pending.extend_from_slice(b"deSAMPLED");
        let (status, out, err) = take_reply(&mut pending).unwrap().unwrap();
        assert_eq!((status, &out[..], &err[..]), (0, &b"abc"[..], &b"de"[..]));
        assert_eq!(pending, b"SAMPLED", "what follows stays");
        for bad in [
            "hello 1 2 3\n",
            "sampled x 1 1\n",
            "sampled 0 999999999999 0\n",
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
