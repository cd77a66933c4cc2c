//! What each host of a fleet is, before anything runs on it: its Engine answers (and what it
//! says of itself), the machine under it read through a short container on that Engine (CPU,
//! memory, kernel, boot ID), its hardware class, and the free disk of its Engine's data root. And
//! whether a host can run a study's cell at all ([`fits`]).

use anyhow::{Context, Result, bail};
use tokio_util::sync::CancellationToken;

use super::hosts::HostEntry;
use crate::engine::{ContainerSpec, Containers, Engine, EngineFacts, Images, Mount, NOBODY};
use crate::run::{env, hardware};

/// One host, reached and read.
#[derive(Clone)]
pub struct Surveyed {
    /// Its name and endpoint.
    pub entry: HostEntry,
    /// The connection to its Engine.
    pub engine: Engine,
    /// What its Engine says of itself.
    pub facts: EngineFacts,
    /// The machine under its Engine, read through a container (its `os_release` is the
    /// Engine's report of its operating system).
    pub host: env::Host,
    /// Its hardware class ([`hardware::class`]).
    pub class: String,
    /// Free bytes on the file system of the Engine's data root; `None` when unreadable (see
    /// `free_disk_note`).
    pub free_disk_bytes: Option<u64>,
    /// Why the free disk was not read, when it was not.
    pub free_disk_note: Option<String>,
    /// The kernel's boot ID: hosts with the same one are one machine, sharing its CPUs.
    pub boot_id: String,
}

/// Connects to every host (side by side) and reads each through a container from `probe_image`,
/// which each must hold already (the run's images placed). The first host that fails is the
/// error, naming it.
pub async fn survey(entries: &[HostEntry], probe_image: &str) -> Result<Vec<Surveyed>> {
    let all =
        futures_util::future::join_all(entries.iter().map(|entry| survey_host(entry, probe_image)))
            .await;
    all.into_iter().collect()
}

/// [`survey`] of one host.
pub async fn survey_host(entry: &HostEntry, probe_image: &str) -> Result<Surveyed> {
    let engine = Engine::connect_to(&entry.name, &entry.endpoint).await?;
    let facts = engine
        .facts()
        .await
        .with_context(|| format!("host `{}`", entry.name))?;
    read(entry, engine, facts, probe_image).await
}

/// Reads a reachable host through a container from `image`: its machine, class, boot ID and
/// free disk. An image it lacks is an error naming the host and the image.
pub async fn read(
    entry: &HostEntry,
    engine: Engine,
    facts: EngineFacts,
    image: &str,
) -> Result<Surveyed> {
    let name = &entry.name;
    let held = engine
        .image(image)
        .await
        .with_context(|| format!("host `{name}`"))?;
    if held.is_none() {
        bail!(
            "host `{name}` ({}) does not hold image {image}, through which its machine is read; \
             place the run's images there first (a run with --hosts ships them)",
            entry.endpoint.url()
        );
    }
    let (mut host, boot_id) = env::host_through(&engine, image)
        .await
        .with_context(|| format!("reading host `{name}` through a container from {image}"))?;
    host.os_release = [("PRETTY_NAME".to_string(), facts.operating_system.clone())].into();
    let (free_disk_bytes, free_disk_note) = match free_disk(&engine, &facts.root_dir, image).await {
        Ok(bytes) => (Some(bytes), None),
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    Ok(Surveyed {
        entry: entry.clone(),
        class: hardware::class(&host),
        engine,
        facts,
        host,
        free_disk_bytes,
        free_disk_note,
        boot_id,
    })
}

/// Where the data root is seen inside the container that reads its free space.
const DATA_ROOT: &str = "/mnt/engine-data";

/// Free bytes (available to unprivileged users) on the file system of the Engine's data root:
/// `df` in a container with that folder bind-mounted read-only.
async fn free_disk(engine: &Engine, root_dir: &str, image: &str) -> Result<u64> {
    let cmd = ["df", "-P", "-k", DATA_ROOT];
    let mut spec = ContainerSpec::command(image, &cmd, "survey");
    spec.user = Some(NOBODY.into());
    spec.mounts.push(data_root_mount(root_dir)?);
    let out = engine
        .run(&spec, &CancellationToken::new())
        .await?
        .into_output(image, &cmd)?;
    df_available(&out).with_context(|| format!("`df` printed no available space: {out:?}"))
}

/// The read-only mount of the Engine's data root at [`DATA_ROOT`]; refused when the Engine names
/// no absolute folder, or one holding `:` or `,` (separators of the bind string it becomes).
fn data_root_mount(root_dir: &str) -> Result<Mount> {
    if !root_dir.starts_with('/') {
        bail!("the Engine reports no data root");
    }
    if root_dir.contains([':', ',']) {
        bail!(
            "the Engine's data root {root_dir:?} holds `:` or `,`, which a bind mount cannot \
             name: its free disk is not read"
        );
    }
    Ok(Mount {
        host: root_dir.into(),
        container: DATA_ROOT.into(),
    })
}

/// The available bytes of `df -P -k`'s one file system line (its fourth column, KiB).
fn df_available(out: &str) -> Option<u64> {
    let line = out.lines().nth(1)?;
    let kib: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Whether host `s` can run a cell of a study pinned to `cpus_needed` CPUs (the highest CPU of
/// its list + 1) whose largest scale needs `largest_mem_bytes` (when the study estimates it);
/// `Err` says why not, naming the host.
pub fn fits(
    s: &Surveyed,
    cpus_needed: usize,
    largest_mem_bytes: Option<u64>,
) -> Result<(), String> {
    fits_host(&s.entry.name, &s.host, cpus_needed, largest_mem_bytes)
}

fn fits_host(
    name: &str,
    host: &env::Host,
    cpus_needed: usize,
    largest_mem_bytes: Option<u64>,
) -> Result<(), String> {
    let cpus = host.logical_cpus;
    if cpus < cpus_needed {
        return Err(format!(
            "host `{name}` has {cpus} logical CPUs; the study pins its processes to {cpus_needed} \
             (protocol.cpus): leave it out of --hosts, or run with --cpus auto"
        ));
    }
    if let Some(need) = largest_mem_bytes
        && host.mem_total_bytes < need
    {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        return Err(format!(
            "host `{name}` has {:.1} GiB of memory; the study's largest scale is estimated to need \
             {:.1} GiB: leave it out of --hosts, or run smaller scales",
            gib(host.mem_total_bytes),
            gib(need)
        ));
    }
    Ok(())
}

/// Hosts that are one machine (the same boot ID), by their names, in the order given; only groups
/// of two or more.
pub fn same_machines(surveyed: &[&Surveyed]) -> Vec<Vec<String>> {
    let pairs: Vec<(&str, &str)> = surveyed
        .iter()
        .map(|s| (s.entry.name.as_str(), s.boot_id.as_str()))
        .collect();
    groups_of(&pairs)
}

/// Names grouped by the key beside each (a boot ID, a class), in the order given; only groups
/// of two or more.
pub fn groups_of(pairs: &[(&str, &str)]) -> Vec<Vec<String>> {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for (name, key) in pairs {
        match groups.iter_mut().find(|(k, _)| k == key) {
            Some((_, names)) => names.push(name.to_string()),
            None => groups.push((key, vec![name.to_string()])),
        }
    }
    groups
        .into_iter()
        .map(|(_, names)| names)
        .filter(|n| n.len() > 1)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_data_root_that_a_bind_string_cannot_hold_is_refused() {
        let mount = super::data_root_mount("/var/lib/docker").unwrap();
        assert_eq!(mount.host, std::path::Path::new("/var/lib/docker"));
        for bad in ["/x:/etc:rw", "/x,rw", "", "relative"] {
            assert!(super::data_root_mount(bad).is_err(), "{bad}");
        }
        let e = super::data_root_mount("/d:/etc").unwrap_err().to_string();
        assert!(e.contains("\"/d:/etc\"") && e.contains("`:`"), "{e}");
    }

    use super::*;

    #[test]
    fn dfs_available_column_is_read_in_bytes() {
        let out = "Filesystem     1024-blocks      Used Available Capacity Mounted on\n\
                   /dev/vda         263174212  64868532 198289296      25% /mnt/engine-data\n";
        assert_eq!(df_available(out), Some(198_289_296 * 1024));
        assert_eq!(df_available("Filesystem\n"), None);
        assert_eq!(df_available(""), None);
    }

    #[test]
    fn a_host_with_too_few_cpus_or_too_little_memory_is_refused_with_the_reason() {
        let host = env::Host {
            logical_cpus: 2,
            mem_total_bytes: 4 << 30,
            ..env::Host::default()
        };
        assert_eq!(fits_host("b", &host, 2, Some(1 << 30)), Ok(()));
        let cpus = fits_host("b", &host, 4, None).unwrap_err();
        assert!(
            cpus.contains("host `b` has 2 logical CPUs") && cpus.contains("4"),
            "{cpus}"
        );
        let mem = fits_host("b", &host, 1, Some(8 << 30)).unwrap_err();
        assert!(
            mem.contains("host `b` has 4.0 GiB") && mem.contains("8.0 GiB"),
            "{mem}"
        );
    }

    #[test]
    fn hosts_sharing_a_key_are_grouped_in_the_order_given() {
        let pairs = [
            ("local", "x"),
            ("a", "y"),
            ("b", "x"),
            ("c", "z"),
            ("d", "y"),
        ];
        assert_eq!(groups_of(&pairs), vec![vec!["local", "b"], vec!["a", "d"]]);
        assert!(groups_of(&[("a", "x"), ("b", "y")]).is_empty());
    }
}
