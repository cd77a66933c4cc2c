//! The environment record (`env.json`), written once per run: the host, the Engine, the images and
//! toolchains used, and the view from inside a probe container. It is written before measuring
//! starts; the validity warnings taken before and while measuring (swap, hugepages, governor,
//! memory pressure, busy pinned CPUs, steal) are in `run.json` ([`crate::run::warning`]).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use tokio_util::sync::CancellationToken;

use crate::engine::{ContainerSpec, Containers, EngineFacts, Isolation};
use crate::images::Manifest;
use crate::run::execution;
use crate::study::Protocol;

/// `env.json`: where a run was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// When the record was taken, RFC 3339 UTC.
    pub recorded_at: String,
    /// parkbench version that took the run.
    pub parkbench_version: String,
    /// The host the Engine runs on (read by parkbench on its own host; the Engine is assumed local).
    pub host: Host,
    /// The Docker Engine.
    pub engine: EngineFacts,
    /// The build manifest of the images used.
    pub images: Manifest,
    /// Toolchain versions: `rustc -vV`, `cargo -V`, `go version` (from inside the images), and `tokio`
    /// (from the probe's Cargo.lock).
    pub toolchains: BTreeMap<String, String>,
    /// The view from inside a probe container.
    pub container: ContainerView,
    /// The study's seccomp profile; `None`: the Engine's default profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp: Option<crate::run::seccomp::Seccomp>,
    /// How every probe container on the host's kernel was confined: its user, capabilities, tasks
    /// limit (`protocol.pids_limit`), read-only root and tmpfs, network. A guest kernel's VM
    /// container is confined the same way but runs as root, within 1024 tasks. `None` in a record
    /// taken before parkbench recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
}

/// Host facts, from /proc and /sys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// /etc/os-release, key → value; of a host surveyed through its Engine (`--hosts`), only
    /// `PRETTY_NAME`, as its Engine reports its operating system.
    pub os_release: BTreeMap<String, String>,
    /// CPU model name (/proc/cpuinfo).
    pub cpu_model: String,
    /// CPU flags (/proc/cpuinfo), space-separated.
    pub cpu_flags: String,
    /// Microcode revision, where reported.
    pub microcode: Option<String>,
    /// Logical CPUs online.
    pub logical_cpus: usize,
    /// Online CPU list (/sys/devices/system/cpu/online).
    pub cpus_online: String,
    /// SMT active (/sys/devices/system/cpu/smt/active), where visible.
    pub smt_active: Option<bool>,
    /// MemTotal, bytes.
    pub mem_total_bytes: u64,
    /// Transparent hugepages `enabled` setting (the bracketed choice).
    pub thp_enabled: Option<String>,
    /// Transparent hugepages `defrag` setting.
    pub thp_defrag: Option<String>,
    /// vm.overcommit_memory.
    pub overcommit_memory: Option<String>,
    /// cpufreq governor of CPU 0, where visible.
    pub cpufreq_governor: Option<String>,
    /// Running under WSL (kernel release or version mentions Microsoft/WSL).
    pub wsl: bool,
}

/// What a process inside a probe container sees (a container confined as a probe's is).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerView {
    /// `uname -a` inside the container.
    pub uname: String,
    /// Cpus_allowed_list of a container process before any pinning.
    pub cpus_allowed: String,
    /// First line of `ldd --version` (the image's glibc).
    pub glibc: String,
    /// The open-files and processes limits a container process starts with, soft:hard (`nofile
    /// 1048576:1048576, nproc unlimited:unlimited`): Engines set them differently (the Docker
    /// Engine passes on its own, Podman sets its defaults). Empty in records older than the field.
    #[serde(default)]
    pub limits: String,
}

/// Takes the environment record, running one short container from `probe_image`, confined as a
/// probe's is under `protocol`, for its view.
pub async fn record(
    engine: &impl Containers,
    manifest: &Manifest,
    probe_image: &str,
    protocol: &Protocol,
    repo: &Path,
) -> Result<Environment> {
    let mut toolchains = BTreeMap::new();
    for img in &manifest.images {
        toolchains.extend(img.versions.clone());
    }
    let docker = repo.join("docker");
    for img in &manifest.images {
        toolchains.extend(locked_runtimes(&docker, &img.name));
    }
    let script = "uname -a; grep Cpus_allowed_list /proc/self/status | cut -f2; \
                  ldd --version 2>&1 | head -n1; grep -E '^Max (open files|processes) ' /proc/self/limits";
    let view = execution::Host::confine(
        ContainerSpec::command(probe_image, &["/bin/sh", "-c", script], "env"),
        protocol,
    );
    let facts = engine.facts().await?;
    let isolation = match facts.is_podman() {
        false => Isolation::of(&view),
        true => Isolation::of(&view).for_podman(),
    };
    let container = container_view(engine, &view).await?;
    Ok(Environment {
        recorded_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        parkbench_version: env!("CARGO_PKG_VERSION").into(),
        host: host(),
        engine: facts,
        images: manifest.clone(),
        toolchains,
        container,
        seccomp: None,
        isolation: Some(isolation),
    })
}

async fn container_view(engine: &impl Containers, spec: &ContainerSpec) -> Result<ContainerView> {
    let outcome = engine.run(spec, &CancellationToken::new()).await?;
    let cmd: Vec<&str> = spec.cmd.iter().map(String::as_str).collect();
    let out = outcome.into_output(&spec.image, &cmd)?;
    let mut lines = out.lines().map(str::to_owned);
    Ok(ContainerView {
        uname: lines.next().unwrap_or_default(),
        cpus_allowed: lines.next().unwrap_or_default(),
        glibc: lines.next().unwrap_or_default(),
        limits: limits(lines),
    })
}

/// `nofile S:H, nproc S:H` from the `Max open files` and `Max processes` lines of
/// `/proc/self/limits` (soft, hard, units).
fn limits(lines: impl Iterator<Item = String>) -> String {
    let mut out = Vec::new();
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (name, rest) = match words.as_slice() {
            ["Max", "open", "files", rest @ ..] => ("nofile", rest),
            ["Max", "processes", rest @ ..] => ("nproc", rest),
            _ => continue,
        };
        if let [soft, hard, ..] = rest {
            out.push(format!("{name} {soft}:{hard}"));
        }
    }
    out.join(", ")
}

/// The async runtimes a Rust image's Cargo.lock pins, whose versions a run records beside the
/// recipes' `versions:`.
pub const LOCKED_RUNTIMES: [&str; 4] = ["tokio", "async-std", "smol", "glommio"];

/// The async runtimes the image `name` locked, by label (`tokio (rust-tokio)`) → version.
pub fn locked_runtimes(docker: &Path, name: &str) -> BTreeMap<String, String> {
    let lock = match crate::images::recipe::Recipe::load(&docker.join(name)) {
        Ok(recipe) => recipe.cargo_lock(docker),
        Err(_) => docker.join(name).join("Cargo.lock"),
    };
    LOCKED_RUNTIMES
        .iter()
        .filter_map(|krate| Some((format!("{krate} ({name})"), locked_version(&lock, krate)?)))
        .collect()
}

/// The recorded version label a study's `source.toolchains` key names: the label whose first word
/// (split on whitespace) is the key (`go` → `go version`, `rustc` → `rustc -vV`, `tokio` → `tokio
/// (rust-tokio)`); `go` names neither `gofmt` nor `golang version`. A key that is a whole label
/// (`dotnet --version`) names that label alone, where two labels share its first word. `Ok(None)`
/// when no label is named, an `Err` naming both when two are: the key must name one label.
pub fn label_for<'a>(
    key: &str,
    labels: impl IntoIterator<Item = &'a String>,
) -> Result<Option<&'a String>, String> {
    let labels: Vec<&'a String> = labels.into_iter().collect();
    if let Some(whole) = labels.iter().find(|l| l.as_str() == key) {
        return Ok(Some(whole));
    }
    let mut named = labels
        .into_iter()
        .filter(|l| l.split_whitespace().next() == Some(key));
    let first = named.next();
    match (first, named.next()) {
        (Some(a), Some(b)) => Err(format!(
            "source.toolchains: {key:?} names two recorded versions, {a:?} and {b:?}: a key names \
             one label (its first word, or the whole label): write the whole label you mean as \
             the key, e.g. {b:?}"
        )),
        (first, _) => Ok(first),
    }
}

/// The version of `krate` in a Cargo.lock, when a package of the lockfile's own (one without a
/// `source`) depends on it directly: a crate locked only as another's optional or foreign-platform
/// dependency (tokio under async-std's wasm support, say) is not reported.
pub fn locked_version(lock: &Path, krate: &str) -> Option<String> {
    let text = std::fs::read_to_string(lock).ok()?;
    let packages: Vec<Locked> = text
        .split("[[package]]")
        .skip(1)
        .map(Locked::parse)
        .collect();
    let dep = packages
        .iter()
        .filter(|p| !p.registry)
        .flat_map(|p| &p.dependencies)
        .find(|d| d.split_whitespace().next() == Some(krate))?;
    // "name" when one version is locked, "name version" when several are.
    match dep.split_whitespace().nth(1) {
        Some(v) => Some(v.to_string()),
        None => packages
            .iter()
            .find(|p| p.name == krate)
            .map(|p| p.version.clone()),
    }
}

/// One `[[package]]` of a Cargo.lock, as far as [`locked_version`] reads it.
struct Locked {
    name: String,
    version: String,
    /// Has a `source`: from a registry or git, not the lockfile's own.
    registry: bool,
    dependencies: Vec<String>,
}

impl Locked {
    fn parse(block: &str) -> Locked {
        let value = |key: &str| {
            block
                .lines()
                .find_map(|l| l.trim().strip_prefix(key)?.trim().strip_prefix("= \""))
                .map(|v| v.trim_end_matches('"').to_string())
                .unwrap_or_default()
        };
        let dependencies = block
            .split_once("dependencies = [")
            .and_then(|(_, rest)| rest.split_once(']'))
            .map(|(list, _)| {
                list.lines()
                    .map(|l| l.trim().trim_end_matches(',').trim_matches('"').to_string())
                    .filter(|l| !l.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Locked {
            name: value("name "),
            version: value("version "),
            registry: block.lines().any(|l| l.trim().starts_with("source = ")),
            dependencies,
        }
    }
}

/// Host facts of this machine, read from its own /proc, /sys and /etc; anything unreadable is left
/// empty rather than failing the run.
pub fn host() -> Host {
    host_from(|p| std::fs::read_to_string(p).ok())
}

/// The files [`host_from`] reads, in the order it reads them.
pub const HOST_FILES: [&str; 12] = [
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/version",
    "/proc/sys/vm/overcommit_memory",
    "/sys/devices/system/cpu/online",
    "/sys/devices/system/cpu/smt/active",
    "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/kernel/mm/transparent_hugepage/defrag",
    "/etc/os-release",
    BOOT_ID,
];

/// The kernel's random ID of the current boot: two Engines that read the same one run on one
/// machine (and share its CPUs).
pub const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// Host facts from whatever reads a file of the host by its path (`None`: unreadable): this
/// machine's own files ([`host`]), or a host's read through a container on its Engine
/// ([`host_through`]). The same parser serves both, so that two hosts' records compare.
pub fn host_from(read: impl Fn(&str) -> Option<String>) -> Host {
    let read = |p: &str| read(p).map(|s| s.trim().to_string());
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let bracketed = |p: &str| read(p).as_deref().and_then(crate::run::warning::bracketed);
    let kernel_release = read("/proc/sys/kernel/osrelease").unwrap_or_default();
    let kernel_version = read("/proc/sys/kernel/version").unwrap_or_default();
    let cpus_online = read("/sys/devices/system/cpu/online").unwrap_or_default();
    let wsl = format!("{kernel_release} {kernel_version}").to_lowercase();
    Host {
        os_release: os_release(&read("/etc/os-release").unwrap_or_default()),
        cpu_model: field("model name").unwrap_or_default(),
        cpu_flags: field("flags").unwrap_or_default(),
        microcode: field("microcode"),
        logical_cpus: crate::study::cpuset::parse(&cpus_online)
            .map(|c| c.len())
            .unwrap_or(0),
        cpus_online,
        smt_active: read("/sys/devices/system/cpu/smt/active").map(|s| s == "1"),
        mem_total_bytes: meminfo_total(&read("/proc/meminfo").unwrap_or_default()),
        thp_enabled: bracketed("/sys/kernel/mm/transparent_hugepage/enabled"),
        thp_defrag: bracketed("/sys/kernel/mm/transparent_hugepage/defrag"),
        overcommit_memory: read("/proc/sys/vm/overcommit_memory"),
        cpufreq_governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        wsl: wsl.contains("microsoft") || wsl.contains("wsl"),
        kernel_release,
        kernel_version,
    }
}

/// Host facts of the machine an Engine runs on, and its boot ID ([`BOOT_ID`]), read through one
/// short container from `image` (confined as every container is, as nobody): /proc and /sys are
/// the host kernel's in a container. Its /etc/os-release is the image's, not the host's, so
/// `os_release` is left empty for the caller to fill from the Engine's own report.
pub async fn host_through(engine: &impl Containers, image: &str) -> Result<(Host, String)> {
    // Each readable file after a line naming it; an unreadable one is left out.
    let script = "for f in \"$@\"; do if [ -r \"$f\" ]; then printf '%s %s\\n' \"$MARK\" \"$f\"; \
                  cat \"$f\"; printf '\\n'; fi; done";
    let mut cmd = vec!["/bin/sh", "-c", script, "sh"];
    cmd.extend(HOST_FILES.iter().filter(|f| **f != "/etc/os-release"));
    let mut spec = ContainerSpec::command(image, &cmd, "survey");
    spec.user = Some(crate::engine::NOBODY.into());
    spec.env.insert("MARK".into(), FILE_MARK.into());
    let outcome = engine.run(&spec, &CancellationToken::new()).await?;
    let files = split_files(&outcome.into_output(image, &cmd)?);
    let host = host_from(|p| files.get(p).cloned());
    let boot_id = files
        .get(BOOT_ID)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .with_context(|| format!("{BOOT_ID} is not readable in a container from {image}"))?;
    Ok((host, boot_id))
}

/// The line before each file in [`host_through`]'s output.
const FILE_MARK: &str = "==> parkbench file:";

/// Path → content of the files in [`host_through`]'s output.
fn split_files(out: &str) -> BTreeMap<String, String> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in out.lines() {
        if let Some(path) = line.strip_prefix(FILE_MARK) {
            current = Some(path.trim().to_string());
            files.entry(path.trim().to_string()).or_default();
        } else if let Some(path) = &current {
            let text = files.entry(path.clone()).or_default();
            text.push_str(line);
            text.push('\n');
        }
    }
    files
}

fn os_release(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

fn meminfo_total(text: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_containers_limits_are_read_soft_and_hard_from_proc_self_limits() {
        let proc_limits = "Max processes             unlimited            unlimited            processes\n\
                           Max open files            1024                 524288               files";
        let lines = proc_limits.lines().map(str::to_owned);
        assert_eq!(
            limits(lines),
            "nproc unlimited:unlimited, nofile 1024:524288"
        );
        assert_eq!(limits(std::iter::empty()), "");
    }

    #[test]
    fn parses_os_release_and_meminfo() {
        let os = os_release("NAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\n");
        assert_eq!(os["VERSION_ID"], "12");
        assert_eq!(
            meminfo_total("MemTotal:       16384 kB\nMemFree: 1 kB"),
            16384 * 1024
        );
    }

    #[tokio::test]
    async fn the_container_view_comes_from_one_short_container() {
        use crate::engine::fake::{FakeEngine, Step};
        let stdout = "Linux c 6.1.0 x86_64 GNU/Linux\n0-1\nldd (Debian GLIBC 2.36-9) 2.36\n";
        let engine = FakeEngine::new([Step::Exit {
            code: 0,
            stdout: stdout.into(),
            stderr: String::new(),
        }]);
        let repo = tempfile::tempdir().unwrap();
        let mut protocol = crate::study::Study::default_study().protocol;
        protocol.pids_limit = 64;
        let env = record(
            &engine,
            &Manifest::default(),
            "parkbench/go:x",
            &protocol,
            repo.path(),
        )
        .await
        .unwrap();
        assert_eq!(env.container.cpus_allowed, "0-1");
        assert!(env.container.glibc.contains("2.36"));
        assert_eq!(env.engine.ncpu, 2);
        let runs = engine.runs();
        assert_eq!((runs.len(), runs[0].image.as_str()), (1, "parkbench/go:x"));
        assert_eq!(runs[0].labels["parkbench.role"], "env");
        // Seen as a probe sees it: as nobody, within the study's tasks limit.
        assert_eq!(runs[0].user.as_deref(), Some("65534:65534"));
        let isolation = env.isolation.unwrap();
        assert_eq!(isolation, crate::engine::Isolation::of(&runs[0]));
        assert_eq!(
            (isolation.pids_limit, isolation.cap_drop),
            (64, vec!["ALL".into()])
        );
        assert!(engine.live().is_empty());

        let failing = FakeEngine::new([Step::Exit {
            code: 1,
            stdout: String::new(),
            stderr: "no shell".into(),
        }]);
        let err = record(
            &failing,
            &Manifest::default(),
            "img",
            &protocol,
            repo.path(),
        )
        .await;
        assert!(format!("{:#}", err.unwrap_err()).contains("no shell"));
    }

    #[tokio::test]
    async fn a_hosts_machine_is_read_through_one_confined_container_by_the_same_parser() {
        use crate::engine::fake::{FakeEngine, Step};
        let stdout = format!(
            "{FILE_MARK} /proc/cpuinfo\nprocessor\t: 0\nmodel name\t: Test CPU @ 3GHz\n\
             flags\t\t: fpu sse\n\n{FILE_MARK} /proc/meminfo\nMemTotal:  8000000 kB\n\n\
             {FILE_MARK} /proc/sys/kernel/osrelease\n6.1.0-test\n\n\
             {FILE_MARK} /sys/devices/system/cpu/online\n0-3\n\n\
             {FILE_MARK} /sys/kernel/mm/transparent_hugepage/enabled\nalways [madvise] never\n\n\
             {FILE_MARK} {BOOT_ID}\n0b1c-boot\n\n"
        );
        let engine = FakeEngine::new([Step::Exit {
            code: 0,
            stdout,
            stderr: String::new(),
        }]);
        let (host, boot_id) = host_through(&engine, "parkbench/base:x").await.unwrap();
        assert_eq!(boot_id, "0b1c-boot");
        assert_eq!(host.cpu_model, "Test CPU @ 3GHz");
        assert_eq!(host.cpu_flags, "fpu sse");
        assert_eq!(host.logical_cpus, 4);
        assert_eq!(host.mem_total_bytes, 8_000_000 * 1024);
        assert_eq!(host.kernel_release, "6.1.0-test");
        assert_eq!(host.thp_enabled.as_deref(), Some("madvise"));
        assert_eq!(host.smt_active, None, "not printed: not readable");
        assert!(host.os_release.is_empty(), "the image's, not the host's");
        let runs = engine.runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].user.as_deref(), Some(crate::engine::NOBODY));
        assert!(!runs[0].cmd.iter().any(|a| a == "/etc/os-release"));
        assert!(engine.live().is_empty());

        // No boot ID readable: an error naming the file, not a host that matches any other.
        let blind = FakeEngine::new([Step::Exit {
            code: 0,
            stdout: format!("{FILE_MARK} /proc/cpuinfo\nmodel name: X\n"),
            stderr: String::new(),
        }]);
        let err = host_through(&blind, "img").await.unwrap_err();
        assert!(format!("{err:#}").contains(BOOT_ID), "{err:#}");
    }

    #[test]
    fn the_probes_lockfiles_name_their_own_runtimes() {
        let docker = Path::new(env!("CARGO_MANIFEST_DIR")).join("docker");
        let of = |image: &str, krate: &str| {
            locked_version(&docker.join(image).join("Cargo.lock"), krate)
        };
        assert!(of("rust-tokio", "tokio").is_some());
        assert_eq!(of("runtime-tokio", "tokio").as_deref(), Some("1.54.1"));
        assert_eq!(
            of("runtime-async-std", "async-std").as_deref(),
            Some("1.13.2")
        );
        assert_eq!(
            of("runtime-async-std", "tokio"),
            None,
            "locked only for wasm"
        );
        assert_eq!(of("runtime-glommio", "glommio").as_deref(), Some("0.9.0"));
    }

    #[test]
    fn finds_tokio_in_a_lockfile() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("Cargo.lock");
        let text = "[[package]]\nname = \"probe\"\nversion = \"0.1.0\"\ndependencies = [\n \"futures 0.3.1\",\n \"tokio\",\n]\n\n\
            [[package]]\nname = \"tokio\"\nversion = \"1.53.2\"\nsource = \"registry+x\"\n\n\
            [[package]]\nname = \"futures\"\nversion = \"0.3.1\"\nsource = \"registry+x\"\n\n\
            [[package]]\nname = \"async-std\"\nversion = \"1.13.2\"\nsource = \"registry+x\"\n\
            dependencies = [\n \"smol\",\n]\n\n\
            [[package]]\nname = \"smol\"\nversion = \"2.0.2\"\nsource = \"registry+x\"\n";
        std::fs::write(&lock, text).unwrap();
        assert_eq!(locked_version(&lock, "tokio").as_deref(), Some("1.53.2"));
        assert_eq!(locked_version(&lock, "futures").as_deref(), Some("0.3.1"));
        assert_eq!(
            locked_version(&lock, "async-std"),
            None,
            "not a dependency of the probe"
        );
        assert_eq!(locked_version(&lock, "smol"), None, "only async-std's");
    }
}
