//! Where a cell's process runs, behind one trait the measuring asks ([`Execution`]): a container on
//! the host's kernel ([`Host`]), or a VM under a guest kernel (`guest::InGuest`); and the sampler's
//! command line both run.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;

use crate::engine::{ContainerOutcome, ContainerSpec, NOBODY};
use crate::images::BuiltImage;
use crate::study::cpuset;
use crate::study::sample::Sample;
use crate::study::{Placeholders, Probe, Protocol};

/// Where a cell's process runs; the measuring asks it, never which one it has.
pub trait Execution {
    /// The container that runs `process`, or why the cell cannot be measured this way here (the
    /// sample's error). An `Err` when what it needs was not made ready: the run stops.
    fn launch(&self, process: &Process) -> Result<Launch>;

    /// The sample's error once the sampler's output is in `s`: `error` (what the sampler's output
    /// says), or what the container's outcome says besides.
    fn judge(
        &self,
        s: &mut Sample,
        outcome: &ContainerOutcome,
        error: Option<String>,
    ) -> Option<String>;
}

/// What a cell's process gets from its [`Execution`].
pub enum Launch {
    /// A container to run.
    Container(ContainerSpec),
    /// Why it cannot run here: its sample is invalid, with this error.
    Refused(String),
}

/// One process of a cell, before it is given a place to run.
pub struct Process<'a> {
    pub probe: &'a Probe,
    pub protocol: &'a Protocol,
    pub image: &'a BuiltImage,
    /// The cell's placeholder words, in the host's CPU numbers.
    pub words: Placeholders,
    /// The container's labels: run, study, probe, tasks, repeat.
    pub labels: BTreeMap<String, String>,
    /// The sampler enforces the study's timeout itself; this one, longer, covers a sampler that cannot.
    pub timeout: Duration,
    /// The JSON of the study's seccomp profile, if any.
    pub seccomp: Option<&'a str>,
}

impl Process<'_> {
    /// The sampler's command line with `words` (the CPUs as the process sees them), and the
    /// probe's environment.
    pub fn command(&self, words: &Placeholders) -> (Vec<String>, BTreeMap<String, String>) {
        let mut cmd: Vec<String> = vec!["/usr/local/bin/sampler".into()];
        cmd.extend(sampler_args(
            self.probe,
            self.protocol,
            &cpuset::format(&words.cpus),
        ));
        cmd.push(self.probe.program.clone());
        cmd.extend(self.probe.expand_args(words));
        (cmd, self.probe.expand_env(words))
    }
}

/// A container on the host's kernel, with the study's seccomp profile and tasks limit, as nobody; its
/// outcome adds nothing.
pub struct Host;

impl Host {
    /// `spec` confined as a probe's container on the host's kernel: as nobody, within the study's
    /// tasks limit (the rest of its confinement is every container's).
    pub fn confine(spec: ContainerSpec, protocol: &Protocol) -> ContainerSpec {
        ContainerSpec {
            // The sampler and its probe need no user of the image's: nobody owns nothing there.
            user: Some(NOBODY.into()),
            pids_limit: protocol.pids_limit,
            ..spec
        }
    }
}

impl Execution for Host {
    fn launch(&self, p: &Process) -> Result<Launch> {
        let (cmd, env) = p.command(&p.words);
        let spec = ContainerSpec {
            image: p.image.tag.clone(),
            cmd,
            env,
            labels: p.labels.clone(),
            timeout: p.timeout,
            seccomp: p.seccomp.map(str::to_owned),
            mounts: Vec::new(),
            devices: Vec::new(),
            user: None,
            pids_limit: 0,
        };
        Ok(Launch::Container(Host::confine(spec, p.protocol)))
    }

    fn judge(&self, _: &mut Sample, _: &ContainerOutcome, error: Option<String>) -> Option<String> {
        error
    }
}

/// The sampler's options for this probe's kind, protocol and CPU list, ending with the `--` before
/// the probe.
pub fn sampler_args(probe: &Probe, p: &Protocol, cpus: &str) -> Vec<String> {
    let mut args = probe.kind.measure().sampler_args(p, cpus);
    args.push("--".into());
    args
}

/// The last `max` bytes of `text` (at a character boundary).
pub(crate) fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}
