//! What is asked of the Engine and what it answers: an image's facts, a build, a container's spec
//! and how it ended, and the errors of a failed build or command.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// An image as the Engine sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageFacts {
    /// Image ID, `sha256:…`.
    pub id: String,
    /// Layer diff-IDs, `sha256:…`, bottom first.
    pub layers: Vec<String>,
    /// Image labels.
    pub labels: BTreeMap<String, String>,
    /// The image's environment (`KEY=VALUE`), as a container from it starts with.
    pub env: Vec<String>,
}

/// An image to build with the classic builder, with no network.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSpec {
    /// The build context, a tar on disk with the `Dockerfile` at its top.
    pub context: PathBuf,
    /// The tag the image gets.
    pub tag: String,
    /// Build args (each parent image's tag, by the ARG its `FROM` names).
    pub buildargs: BTreeMap<String, String>,
    /// Labels set on the image.
    pub labels: BTreeMap<String, String>,
    /// Build without the Engine's build cache.
    pub no_cache: bool,
    /// Keep what the build leaves untagged (the last image of each stage but the final one, and
    /// of a failed build the last step it committed) as the Engine's build cache for the next
    /// build; otherwise they go once the build ends. Only for a build whose every stage starts
    /// from an image the kit built: each inherits that image's `parkbench.image` label, by which
    /// `clean --images` finds it.
    pub keep_stages: bool,
    /// The weight of the build's steps on the CPUs against other containers' (cgroup v1
    /// `cpu.shares`, of which the Engine's default is 1024; on cgroup v2 the runtime turns it into a
    /// `cpu.weight`); `None`: the default. A weight, not a limit: it only sets each one's share
    /// when the CPUs are all busy, and leaves nothing in the image. Not sent to Podman.
    pub cpu_shares: Option<i32>,
}

/// The Engine ran a build and the build failed (a step's program exited non-zero, a `COPY` found
/// nothing): the image's own fault, not the Engine's. Any other error of [`Images::build`] is the
/// Engine or the machine failing.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildFailed {
    /// The tag the image was to get.
    pub tag: String,
    /// The Engine's message (`The command '/bin/sh -c make' returned a non-zero code: 2`).
    pub message: String,
}

impl std::fmt::Display for BuildFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "building {}: {}", self.tag, self.message)
    }
}

impl std::error::Error for BuildFailed {}

/// A short command ([`Images::output`](super::Images::output)) ran and failed on its own: it
/// exited non-zero, or its program is not in the image. The command's fault (the recipe's), not the Engine's; any other
/// error of `output` (the Engine gone, a timeout) is the Engine or the machine failing.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandFailed {
    /// What the Engine or the command said (`` `tool --version` in img failed (Some(2)): … ``).
    pub message: String,
}

impl std::fmt::Display for CommandFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CommandFailed {}

/// A container to run to completion. Whatever it says, the container has no capabilities, no
/// network, no new privileges and a read-only root with a tmpfs at `/tmp` ([`Isolation`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSpec {
    /// Image tag.
    pub image: String,
    /// Command, the entrypoint cleared.
    pub cmd: Vec<String>,
    /// Environment variables.
    pub env: BTreeMap<String, String>,
    /// Labels (`parkbench.run`, `parkbench.role`, …), for finding the container again.
    pub labels: BTreeMap<String, String>,
    /// Killed (and reported as timed out) after this long.
    pub timeout: Duration,
    /// A seccomp profile (its JSON) to start with instead of the Engine's default profile.
    pub seccomp: Option<String>,
    /// Host files bind-mounted read-only (a guest's kernel and initramfs).
    pub mounts: Vec<Mount>,
    /// Host devices passed through at the same path (`/dev/kvm`).
    pub devices: Vec<String>,
    /// The user the command runs as, `uid:gid` (a probe: [`NOBODY`]); `None`: the image's own,
    /// root (the VM's QEMU, which opens `/dev/kvm`, and short commands).
    pub user: Option<String>,
    /// Tasks (processes and threads) the container may hold at once; a `fork` or
    /// `pthread_create` past it fails with EAGAIN (a probe's: `protocol.pids_limit`).
    pub pids_limit: u64,
}

/// A host file bind-mounted read-only into a container.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    /// Absolute path on the host.
    pub host: PathBuf,
    /// Absolute path inside the container.
    pub container: String,
}

/// How a container ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerOutcome {
    /// Everything the container printed on stdout.
    pub stdout: String,
    /// Everything the container printed on stderr.
    pub stderr: String,
    /// Exit code, when the container exited by itself.
    pub exit_code: Option<i64>,
    /// The kernel's OOM killer ended it.
    pub oom_killed: bool,
    /// Killed after the spec's timeout.
    pub timed_out: bool,
    /// The run was interrupted (Ctrl-C); the container was removed.
    pub interrupted: bool,
    /// The Engine's time for this container: its create, from its start to its end, reading its
    /// output and its removal (a create done ahead counts, though it was off the critical path).
    pub elapsed: Duration,
}
