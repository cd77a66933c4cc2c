//! How every container the kit starts is confined, whatever it runs: no capabilities, no network,
//! no new privileges, a read-only root with a bounded tmpfs at `/tmp`, and a cap on its tasks. A
//! spec chooses only its user and that cap ([`ContainerSpec::user`], [`ContainerSpec::pids_limit`]);
//! a study or an archive can loosen none of it. The Engine's own view of a container, read back by
//! [`Engine::isolation`], is the same record, so a test can compare what was asked with what runs.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use bollard::models::{ContainerCreateBody, ContainerInspectResponse, DeviceMapping, HostConfig};
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

/// The body a container of `spec` is created with: the spec's image, command, environment,
/// labels, user, mounts (read-only) and devices, confined as [`Isolation::of`] says (for Podman,
/// [`Isolation::for_podman`]).
pub(super) fn create_body(spec: &ContainerSpec, podman: bool) -> ContainerCreateBody {
    let isolation = match podman {
        false => Isolation::of(spec),
        true => Isolation::of(spec).for_podman(),
    };
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        cmd: Some(spec.cmd.clone()),
        entrypoint: Some(vec![]),
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        labels: Some(spec.labels.clone().into_iter().collect()),
        user: spec.user.clone(),
        network_disabled: Some(true),
        host_config: Some(HostConfig {
            // No CPU quota, no cpuset, no memory limit: pinning is done inside by sched_setaffinity.
            binds: (!spec.mounts.is_empty()).then(|| {
                spec.mounts
                    .iter()
                    .map(|m| format!("{}:{}:ro", m.host.display(), m.container))
                    .collect()
            }),
            devices: (!spec.devices.is_empty()).then(|| {
                spec.devices
                    .iter()
                    .map(|d| DeviceMapping {
                        path_on_host: Some(d.clone()),
                        path_in_container: Some(d.clone()),
                        cgroup_permissions: Some("rwm".into()),
                    })
                    .collect()
            }),
            ..isolation.host_config(spec.seccomp.as_deref())
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use bollard::models::{ContainerConfig, ContainerInspectResponse};

    use super::*;
    use crate::engine::{Mount, NOBODY};

    fn probe_spec() -> ContainerSpec {
        ContainerSpec {
            user: Some(NOBODY.into()),
            pids_limit: 25_000,
            seccomp: Some("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}".into()),
            ..ContainerSpec::command("parkbench/go:1", &["/usr/local/bin/sampler"], "test")
        }
    }

    #[test]
    fn a_probe_container_is_confined() {
        let body = create_body(&probe_spec(), false);
        let host = body.host_config.unwrap();
        assert_eq!(body.user.as_deref(), Some("65534:65534"));
        assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
        assert_eq!(host.cap_add, None);
        assert_eq!(host.pids_limit, Some(25_000));
        assert_eq!(host.readonly_rootfs, Some(true));
        assert_eq!(
            host.tmpfs,
            Some([("/tmp".to_string(), "size=256m,nosuid,nodev".to_string())].into())
        );
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(body.network_disabled, Some(true));
        assert_eq!(host.privileged, Some(false));
        assert_eq!(
            host.security_opt,
            Some(vec![
                "no-new-privileges:true".to_string(),
                "seccomp={\"defaultAction\":\"SCMP_ACT_ALLOW\"}".to_string()
            ])
        );
        assert_eq!((host.binds, host.devices), (None, None));
    }

    fn vm_spec() -> ContainerSpec {
        ContainerSpec {
            pids_limit: 1024,
            mounts: vec![Mount {
                host: "/k".into(),
                container: "/guest/vmlinuz".into(),
            }],
            devices: vec!["/dev/kvm".into()],
            ..ContainerSpec::command("parkbench/vm:1", &["qemu-system-x86_64"], "guest")
        }
    }

    #[test]
    fn a_vm_or_a_command_keeps_the_images_user_and_nothing_else() {
        for spec in [
            vm_spec(),
            ContainerSpec::command("i", &["go", "version"], "version"),
        ] {
            let body = create_body(&spec, false);
            let host = body.host_config.unwrap();
            assert_eq!(body.user, None, "the image's own user");
            assert_eq!(host.cap_drop, Some(vec!["ALL".to_string()]));
            assert_eq!(host.cap_add, None);
            assert_eq!(host.pids_limit, Some(spec.pids_limit as i64));
            assert_eq!(host.readonly_rootfs, Some(true));
            assert!(host.tmpfs.unwrap().contains_key("/tmp"));
            assert_eq!(host.network_mode.as_deref(), Some("none"));
            assert_eq!(
                host.security_opt,
                Some(vec!["no-new-privileges:true".to_string()])
            );
        }
        let vm = create_body(&vm_spec(), false).host_config.unwrap();
        assert_eq!(vm.binds, Some(vec!["/k:/guest/vmlinuz:ro".to_string()]));
        assert_eq!(
            vm.devices.unwrap()[0].path_on_host.as_deref(),
            Some("/dev/kvm")
        );
    }

    #[test]
    fn on_podman_nothing_but_tmp_is_writable_and_nothing_there_runs() {
        let spec = probe_spec();
        let docker = create_body(&spec, false).host_config.unwrap();
        let podman = create_body(&spec, true).host_config.unwrap();
        let tmpfs = podman.tmpfs.clone().unwrap();
        for path in ["/run", "/var/tmp"] {
            let options: Vec<&str> = tmpfs[path].split(',').collect();
            assert!(
                options.contains(&"ro") && options.contains(&"noexec"),
                "{path}: {tmpfs:?}"
            );
        }
        for option in ["noexec", "notmpcopyup"] {
            assert!(tmpfs["/tmp"].split(',').any(|o| o == option), "{tmpfs:?}");
        }
        assert_eq!(
            docker.tmpfs.unwrap().len(),
            1,
            "the Docker Engine mounts nothing more"
        );
        // Everything else is asked alike of both.
        assert_eq!(
            HostConfig {
                tmpfs: None,
                ..podman
            },
            HostConfig {
                tmpfs: None,
                ..docker
            }
        );
    }

    #[test]
    fn the_engines_report_reads_back_as_what_was_asked() {
        let spec = probe_spec();
        let body = create_body(&spec, false);
        let inspected = ContainerInspectResponse {
            config: Some(ContainerConfig {
                user: body.user.clone(),
                ..Default::default()
            }),
            host_config: body.host_config.clone(),
            ..Default::default()
        };
        assert_eq!(Isolation::inspected(&inspected), Isolation::of(&spec));
    }
}
