//! How every container the kit starts is confined, whatever it runs: no capabilities, no network,
//! no new privileges, a read-only root with a bounded tmpfs at `/tmp`, and a cap on its tasks. A
//! spec chooses only its user and that cap ([`ContainerSpec::user`], [`ContainerSpec::pids_limit`]);
//! a study or an archive can loosen none of it. The Engine's own view of a container, read back by
//! [`Engine::isolation`], is the same record, so a test can compare what was asked with what runs.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use bollard::models::{ContainerInspectResponse, HostConfig};
use serde::{Deserialize, Serialize};

use super::{ContainerSpec, Engine};

/// The user a probe runs as on the host's kernel: nobody, who owns nothing in the image.
pub const NOBODY: &str = "65534:65534";

/// The one writable place in a container, and its mount options: bounded, and neither devices nor
/// set-user-ID programs count there (the Engine adds `noexec`).
pub const TMP: &str = "/tmp";
pub const TMP_OPTIONS: &str = "size=256m,nosuid,nodev";

/// The tmpfs mounts Podman adds, writable, to a container with a read-only root.
const PODMAN_WRITABLE: [&str; 2] = ["/run", "/var/tmp"];

/// `no-new-privileges`: nothing the container runs can gain a privilege by exec (set-user-ID
/// files, file capabilities).
const NO_NEW_PRIVILEGES: &str = "no-new-privileges:true";

/// How a container is confined: what a container is created with ([`Isolation::of`]), and what the
/// Engine reports of one ([`Engine::isolation`]). Part of the environment record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Isolation {
    /// The user its command runs as, `uid:gid`; empty: the image's own (root).
    pub user: String,
    /// Capabilities dropped: `ALL`.
    pub cap_drop: Vec<String>,
    /// Capabilities added back: none (see [`CAP_ADD`]).
    pub cap_add: Vec<String>,
    /// Tasks (processes and threads) it may hold at once; a `fork` past it fails with EAGAIN.
    pub pids_limit: i64,
    /// Its root filesystem is read-only.
    pub read_only_root: bool,
    /// tmpfs mounts: path in the container → mount options.
    pub tmpfs: BTreeMap<String, String>,
    /// Network mode: `none`.
    pub network: String,
    /// Started with `no-new-privileges`.
    pub no_new_privileges: bool,
    /// Privileged: never.
    pub privileged: bool,
}

// Every capability is dropped and none is added back: none is needed. The sampler forks and execs
// the probe, pins it with sched_setaffinity (its own task's affinity: no CAP_SYS_NICE) and reads
// /proc/<pid>/ of its own child (same user: no CAP_SYS_PTRACE); c-costs' ucontext-syscalls traces
// its own child with PTRACE_TRACEME (allowed without a capability under Yama ptrace_scope ≤ 1);
// the VM's QEMU, as root, opens /dev/kvm (owned by root, mode 0600: its owner's bits, no
// CAP_DAC_OVERRIDE) and reads its read-only bind mounts (world-readable).
const CAP_ADD: [&str; 0] = [];

impl Isolation {
    /// What a container from `spec` is created with.
    pub fn of(spec: &ContainerSpec) -> Isolation {
        Isolation {
            user: spec.user.clone().unwrap_or_default(),
            cap_drop: vec!["ALL".into()],
            cap_add: CAP_ADD.iter().map(|c| c.to_string()).collect(),
            pids_limit: i64::try_from(spec.pids_limit).unwrap_or(i64::MAX),
            read_only_root: true,
            tmpfs: [(TMP.to_string(), TMP_OPTIONS.to_string())].into(),
            network: "none".into(),
            no_new_privileges: true,
            privileged: false,
        }
    }

    /// The same confinement on Podman, whose API does three things otherwise: it mounts writable
    /// tmpfs on `/run` and `/var/tmp` (here read-only and empty), does not add `noexec` to a tmpfs
    /// as the Docker Engine does, and copies the image's files at a tmpfs's path into it (here
    /// `notmpcopyup`: `/tmp` starts empty, as on the Docker Engine).
    pub fn for_podman(mut self) -> Isolation {
        if let Some(tmp) = self.tmpfs.get_mut(TMP) {
            *tmp = format!("{tmp},noexec,notmpcopyup");
        }
        for path in PODMAN_WRITABLE {
            let options = "ro,nosuid,nodev,noexec,notmpcopyup";
            self.tmpfs.insert(path.into(), options.into());
        }
        self
    }

    /// The Engine's settings for this confinement; a seccomp profile (its JSON) replaces the
    /// Engine's default one.
    pub(super) fn host_config(&self, seccomp: Option<&str>) -> HostConfig {
        HostConfig {
            network_mode: Some(self.network.clone()),
            security_opt: Some(
                self.no_new_privileges
                    .then(|| NO_NEW_PRIVILEGES.to_string())
                    .into_iter()
                    .chain(seccomp.map(|json| format!("seccomp={json}")))
                    .collect(),
            ),
            privileged: Some(self.privileged),
            cap_drop: Some(self.cap_drop.clone()),
            cap_add: (!self.cap_add.is_empty()).then(|| self.cap_add.clone()),
            pids_limit: Some(self.pids_limit),
            readonly_rootfs: Some(self.read_only_root),
            tmpfs: Some(self.tmpfs.clone().into_iter().collect()),
            ..Default::default()
        }
    }

    /// What the Engine reports of a container.
    pub(super) fn inspected(c: &ContainerInspectResponse) -> Isolation {
        let host = c.host_config.clone().unwrap_or_default();
        Isolation {
            user: c
                .config
                .as_ref()
                .and_then(|c| c.user.clone())
                .unwrap_or_default(),
            cap_drop: host.cap_drop.unwrap_or_default(),
            cap_add: host.cap_add.unwrap_or_default(),
            pids_limit: host.pids_limit.unwrap_or_default(),
            read_only_root: host.readonly_rootfs.unwrap_or_default(),
            tmpfs: host.tmpfs.unwrap_or_default().into_iter().collect(),
            network: host.network_mode.unwrap_or_default(),
            no_new_privileges: host
                .security_opt
                .unwrap_or_default()
                .iter()
                .any(|o| o == NO_NEW_PRIVILEGES || o == "no-new-privileges"),
            privileged: host.privileged.unwrap_or_default(),
        }
    }
}

impl Engine {
    /// How a container is confined, as the Engine reports it, and the host PID of its first
    /// process (`None` until it runs).
    pub async fn isolation(&self, id: &str) -> Result<(Isolation, Option<u32>)> {
        let c = self
            .docker
            .inspect_container(id, None)
            .await
            .with_context(|| format!("inspecting container {id}"))?;
        let pid = c
            .state
            .as_ref()
            .and_then(|s| s.pid)
            .and_then(|p| u32::try_from(p).ok())
            .filter(|&p| p > 0);
        Ok((Isolation::inspected(&c), pid))
    }
}
