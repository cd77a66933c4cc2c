//! A Kubernetes Indexed Job that runs a study's shards, one pod per shard (`reproduce --shard
//! i/N`, i = `JOB_COMPLETION_INDEX` + 1), no two on one node. Each pod prints its archive
//! base64-encoded between marker lines on stdout; `kubectl logs` takes it out (docs/fleet.md).

use std::path::Path;

use anyhow::{Context, Result};

use super::{Format, Job, job_name, reproduce_flags, shell_word};
use crate::ops::Paths;
use crate::study::cpuset;

/// `export kubernetes`.
#[derive(Debug, Clone)]
pub struct Kubernetes {
    /// The kit's image, loaded on every node; `parkbench/kit:<version>` when `None`.
    pub image: Option<String>,
}

/// Where the kit's image holds the repository.
pub const KIT_REPO: &str = "/parkbench";
/// The memory the driver itself is given, MiB.
const DRIVER_MIB: u64 = 512;

impl Format for Kubernetes {
    fn what(&self) -> &'static str {
        "a Kubernetes Indexed Job"
    }

    fn write(&self, paths: &Paths, job: &Job) -> Result<String> {
        let inside = in_repo(&paths.repo, job.file)?;
        let image = self
            .image
            .clone()
            .unwrap_or_else(|| format!("parkbench/kit:{}", env!("CARGO_PKG_VERSION")));
        manifest(job, &inside, &image)
    }
}

/// Refuses `image` unless it is an image reference as the Engine reads one
/// (`[host[:port]/]name[/name…][:tag][@algorithm:hex]`, the name's components lowercase), so that
/// nothing but a reference reaches the manifest's YAML.
fn image_reference(image: &str) -> Result<()> {
    let refused = || {
        anyhow::anyhow!(
            "--image {:?} is not an image reference ([host[:port]/]name[:tag][@sha256:…], as \
             `parkbench/kit:{}`)",
            crate::text::printable(image),
            env!("CARGO_PKG_VERSION")
        )
    };
    let (named, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest {
        let (algorithm, hex) = d.split_once(':').ok_or_else(refused)?;
        let algorithm_ok = !algorithm.is_empty()
            && algorithm
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+._-".contains(c));
        let hex_ok = hex.len() >= 32 && hex.chars().all(|c| c.is_ascii_hexdigit());
        if !algorithm_ok || !hex_ok {
            return Err(refused());
        }
    }
    // The tag follows the last ':' after the last '/' (a ':' before it is a registry's port).
    let last = named.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match named[last..].find(':') {
        Some(i) => (&named[..last + i], Some(&named[last + i + 1..])),
        None => (named, None),
    };
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if let Some(t) = tag {
        let ok =
            t.len() <= 128 && t.starts_with(word) && t.chars().all(|c| word(c) || ".-".contains(c));
        if !ok {
            return Err(refused());
        }
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    // A first part with a '.' or ':', or `localhost`, is a registry host.
    if parts.len() > 1 && (parts[0].contains(['.', ':']) || parts[0] == "localhost") {
        let host = parts.remove(0);
        let (host, port) = host.split_once(':').unwrap_or((host, "0"));
        let host_ok = !host.is_empty()
            && host.split('.').all(|l| {
                !l.is_empty()
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
        if !host_ok || port.parse::<u16>().is_err() {
            return Err(refused());
        }
    }
    let component = |p: &str| {
        let lower = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        p.starts_with(lower)
            && p.ends_with(lower)
            && p.chars().all(|c| lower(c) || "._-".contains(c))
    };
    if name.len() > 255 || parts.is_empty() || !parts.iter().all(|p| component(p)) {
        return Err(refused());
    }
    Ok(())
}

/// The study file's path inside the repository, which the kit's image holds at [`KIT_REPO`].
pub(super) fn in_repo(repo: &Path, study: &Path) -> Result<String> {
    let canon =
        |p: &Path| std::fs::canonicalize(p).with_context(|| format!("reading {}", p.display()));
    let (repo, file) = (canon(repo)?, canon(study)?);
    let inside = file.strip_prefix(&repo).map_err(|_| {
        anyhow::anyhow!(
            "{} is not inside the repository {}: the pods run the study from the kit's image, \
             which holds the repository; put the study under results/",
            study.display(),
            repo.display()
        )
    })?;
    shell_word("the study's path", inside)
}

/// The Indexed Job manifest.
pub fn manifest(job: &Job, study_path: &str, image: &str) -> Result<String> {
    image_reference(image)?;
    let (study, shards) = (job.study, job.shards);
    let flags = reproduce_flags(job);
    let pinned = cpuset::parse(&study.protocol.cpus)?.len() as u64;
    // The pod runs only the driver; the probes run in the Engine's containers, outside the pod.
    // The request books on the scheduler's ledger the CPUs the probes will use plus one for the
    // driver, whole cores with requests equal to limits (a Guaranteed pod). It keeps other pods'
    // requests out of that capacity; it does not make the probes' cores exclusive (see the
    // manifest's comments and docs/fleet.md).
    let cpus = pinned + 1;
    let guest = match study
        .kernels()
        .iter()
        .any(|k| *k != crate::study::kernel::HOST)
    {
        true => study.protocol.guest_memory_mib.unwrap_or(2048),
        false => 0,
    };
    let memory = DRIVER_MIB + guest;
    let name = job_name(&study.id);
    let id = &study.id;
    Ok(format!(
        r#"# parkbench: study {id} in {shards} shards, one pod per shard, no two on one node.
# Each pod runs `parkbench reproduce {study_path} --shard i/{shards}` (i = JOB_COMPLETION_INDEX + 1)
# against its node's Docker Engine (the socket is mounted), then prints its archive base64-encoded
# between marker lines on stdout (also when some probes failed: the pod then exits with reproduce's code). Take the archives out and merge them (docs/fleet.md):
#   for i in $(seq 0 {last}); do
#     kubectl logs -l job-name={name},batch.kubernetes.io/job-completion-index=$i --tail=-1 \
#       | sed -n '/^-----BEGIN PARKBENCH ARCHIVE/,/^-----END PARKBENCH ARCHIVE/p' | sed '1d;$d' \
#       | base64 -d > shard-$((i + 1)).tar.gz
#   done
#   parkbench merge shard-*.tar.gz
# The kit's image ({image}) must already be on every node: it is never pulled.
# CPUs: the pod runs only the driver. The probes are sibling containers that the node's Docker Engine
# starts, outside this pod and outside the kubelet's accounting, pinned to the study's CPU list on the
# node ({cpu_list}, {pinned} CPUs; `--cpus auto` takes the first of them the node has). The request
# ({cpus} = {pinned} for the probes + 1 for the driver, whole CPUs, requests = limits, so the pod is
# Guaranteed) reserves that much of the node's capacity on the scheduler's books, so other pods'
# requests are not placed into it. It does NOT protect the probes' cores: the static CPU manager gives
# the exclusive cores to this pod's own container (where the driver leaves them mostly idle), not to
# the probes, and it may give the study's CPU list to other Guaranteed pods. The probes' memory is not
# counted either. For clean numbers, give the job nodes of their own (a taint and a toleration), or put
# the study's CPUs in the kubelet's reservedSystemCPUs, which it never gives a pod exclusively. A node with fewer allocatable
# CPUs than {cpus} never takes the pod: lower the cpu request and limit together to fit your nodes.
# Not tested on a live cluster.
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  labels:
    app.kubernetes.io/name: parkbench
    parkbench/study: "{id}"
spec:
  completionMode: Indexed
  completions: {shards}
  parallelism: {shards}
  backoffLimit: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: parkbench
        parkbench/job: {name}
    spec:
      restartPolicy: Never
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels:
                  parkbench/job: {name}
              topologyKey: kubernetes.io/hostname
      containers:
        - name: parkbench
          image: {image}
          imagePullPolicy: Never
          workingDir: {KIT_REPO}
          command: ["/bin/sh", "-c"]
          args:
            - |
              set -u
              shard=$((JOB_COMPLETION_INDEX + 1))/{shards}
              status=0
              parkbench --repo {KIT_REPO} --results /out reproduce {study_path} --shard "$shard" {flags} >&2 || status=$?
              for archive in /out/{id}/runs/*.tar.gz; do
                [ -e "$archive" ] || continue
                echo "-----BEGIN PARKBENCH ARCHIVE $shard-----"
                base64 "$archive"
                echo "-----END PARKBENCH ARCHIVE $shard-----"
              done
              exit "$status"
          resources:
            requests:
              cpu: "{cpus}"
              memory: {memory}Mi
            limits:
              cpu: "{cpus}"
              memory: {memory}Mi
          volumeMounts:
            - name: docker
              mountPath: /var/run/docker.sock
            - name: out
              mountPath: /out
      volumes:
        - name: docker
          hostPath:
            path: /var/run/docker.sock
            type: Socket
        - name: out
          emptyDir: {{}}
"#,
        last = shards - 1,
        cpu_list = study.protocol.cpus,
    ))
}
