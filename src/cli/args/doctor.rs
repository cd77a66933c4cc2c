//! The arguments of `doctor`.

use std::path::PathBuf;

use clap::Args;

use crate::ops::doctor::DoctorOptions;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check these Docker Engines instead of this machine, comma-separated: `local`, a URL
    /// (`tcp://HOST:2376` with DOCKER_CERT_PATH, `unix:///…`, `ssh://user@host`), a Docker
    /// context, or a name in a hosts file (docs/fleet.md, Hosts).
    #[arg(long, value_delimiter = ',', value_name = "NAME,…")]
    pub hosts: Vec<String>,
    /// The study whose folder's hosts.yaml names hosts (besides ~/.config/parkbench/hosts.yaml).
    #[arg(long, value_name = "STUDY_FILE", requires = "hosts")]
    pub study: Option<PathBuf>,
    /// Accept `tcp://` hosts without TLS: nothing authenticates them or encrypts their traffic.
    #[arg(long, requires = "hosts")]
    pub allow_plain_tcp: bool,
}

impl From<DoctorArgs> for DoctorOptions {
    fn from(a: DoctorArgs) -> Self {
        DoctorOptions {
            hosts: a.hosts,
            study: a.study,
            allow_plain_tcp: a.allow_plain_tcp,
        }
    }
}
