//! The hosts of a fleet run: fitted to the study before anything runs, reconnected (or replaced by
//! a host of their class) on a resume, leased, given the images, and measured — hosts of one
//! machine one after another, machines at once; Ctrl-C stops every host's sub-run, whose guards
//! remove the containers it started.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use tokio_util::sync::CancellationToken;

use crate::engine::{Endpoint, Engine};
use crate::images::place::{self, Placement, Sources};
use crate::run::fleet::assign;
use crate::run::fleet::host_run::{self, Common, HostEnd, HostPlan};
use crate::run::fleet::hosts::HostEntry;
use crate::run::fleet::lease::{self, Lease};
use crate::run::fleet::record::{FleetRecord, PlacedImage};
use crate::run::fleet::survey::{self, Surveyed};
use crate::run::run_dir::RunDir;
use crate::run::warning::Warning;
use crate::study::Study;
use crate::study::cpus::{CpuChoice, choose_cpus};

/// Every host can pin the study's CPUs (`--cpus`, else `auto`: its own first ones) and has the
/// CPUs and memory it needs; refused naming the host and the reason.
pub fn fit(study: &Study, cpus: &CpuChoice, hosts: &[Surveyed]) -> Result<()> {
    for s in hosts {
        let name = &s.entry.name;
        // Read from the facts its survey asked for, not asked again.
        let chosen = choose_cpus(&study.protocol.cpus, &s.facts.cpus(), cpus)
            .with_context(|| format!("host `{name}` cannot run study {}", study.id))?;
        let needed = chosen.cpus.iter().max().map_or(0, |c| c + 1);
        if let Err(why) = survey::fits(s, needed, None) {
            bail!("{why}");
        }
    }
    Ok(())
}

/// This machine's name, for fleet.json.
pub fn coordinator() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// This machine's kernel boot id (empty when unreadable).
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A host whose Engine answered.
pub struct Reached {
    pub entry: HostEntry,
    pub engine: Engine,
}

/// Connects to every host; the first that does not answer stops everything, named.
pub async fn connect(entries: &[HostEntry]) -> Result<Vec<Reached>> {
    let mut out = Vec::new();
    for entry in entries {
        out.push(Reached {
            engine: Engine::connect_to(&entry.name, &entry.endpoint).await?,
            entry: entry.clone(),
        });
    }
    Ok(out)
}

/// The run's lease on every host; a host leased by another run is refused (its lease named), and
/// the leases taken before it are released.
pub async fn take(hosts: &[Reached], run_id: &str) -> Result<Vec<Lease>> {
    let mut leases = Vec::new();
    for h in hosts {
        match lease::take(&h.engine, &h.entry.name, run_id).await {
            Ok(lease) => leases.push(lease),
            Err(e) => {
                release(leases).await;
                return Err(e);
            }
        }
    }
    Ok(leases)
}

/// Containers running on each host that this run did not start: validity warnings, per host.
pub async fn busy(hosts: &[Reached], run_id: &str) -> Result<Vec<Vec<Warning>>> {
    let mut out = Vec::new();
    for h in hosts {
        let seen = lease::foreign_containers(&h.engine, &h.entry.name, run_id).await?;
        for w in &seen {
            eprintln!("warning: {}", w.what);
        }
        out.push(seen);
    }
    Ok(out)
}

/// Releases every lease, saying which could not be.
pub async fn release(leases: Vec<Lease>) {
    for lease in leases {
        if let Err(e) = lease.release().await {
            eprintln!("warning: {e:#}");
        }
    }
}

/// The study's probe images on every host, each checked against the coordinator's manifest; how
/// each got there, per host.
pub async fn place(
    coordinator: &Engine,
    hosts: &[Reached],
    common: &Common,
    how: Placement,
    sources: &Sources<'_>,
) -> Result<Vec<Vec<PlacedImage>>> {
    let mut images: Vec<String> = (common.study.probes.iter())
        .map(|p| p.image.clone())
        .collect();
    images.sort();
    images.dedup();
    let mut out = Vec::new();
    for h in hosts {
        let name = &h.entry.name;
        let m = &common.manifest;
        let placed = place::place(coordinator, &h.engine, name, m, &images, how, sources)
            .await
            .with_context(|| format!("placing the images on host `{name}`"))?;
        for p in &placed {
            eprintln!(
                "host `{name}`: image {} {} ({:.1} MiB, {:.1} s)",
                p.image,
                p.how,
                p.bytes as f64 / (1 << 20) as f64,
                p.secs
            );
        }
        out.push(
            (placed.into_iter())
                .map(|p| PlacedImage {
                    image: p.image,
                    how: p.how.to_string(),
                    bytes: p.bytes,
                    secs: p.secs,
                })
                .collect(),
        );
    }
    Ok(out)
}

/// The host that measures each unfinished host's part (`todo`) on a resume, from `offered` (the
/// hosts of `--resume … --hosts`, else the unfinished hosts themselves): the one of its name,
/// else one of its class not yet taken. A host left without one is refused, naming its class.
pub fn pick(
    fleet: &FleetRecord,
    todo: &[usize],
    offered: &[Surveyed],
) -> Result<Vec<Option<Surveyed>>> {
    let mut taken = vec![false; offered.len()];
    let mut out: Vec<Option<Surveyed>> = vec![None; fleet.hosts.len()];
    for &i in todo {
        let host = &fleet.hosts[i];
        let pick = (offered.iter().position(|s| s.entry.name == host.name))
            .or_else(|| (0..offered.len()).find(|&j| !taken[j] && offered[j].class == host.class));
        let Some(j) = pick else {
            let offered: Vec<String> = (offered.iter())
                .map(|s| format!("{} ({})", s.entry.name, s.class))
                .collect();
            bail!(
                "host `{}` has cells left to measure and no host given is of its class ({}): \
                 offered {}; give one with `--resume … --hosts NAME`",
                host.name,
                host.class,
                offered.join(", ")
            );
        };
        if offered[j].class != host.class {
            bail!(
                "host `{}` is of class {} now, and its part was measured on class {}: give a host \
                 of that class",
                host.name,
                offered[j].class,
                host.class
            );
        }
        taken[j] = true;
        out[i] = Some(offered[j].clone());
    }
    Ok(out)
}

/// Every host's sub-run: the hosts of one machine (one boot id) one after another, machines at
/// once.
pub async fn run_all(
    top: &RunDir,
    fleet: &FleetRecord,
    surveyed: Vec<Option<Surveyed>>,
    common: Arc<Common>,
    cancel: &CancellationToken,
) -> Vec<Option<HostEnd>> {
    let here = boot_id();
    let slots: Vec<usize> = (0..surveyed.len())
        .filter(|&i| surveyed[i].is_some())
        .collect();
    let boots: Vec<String> = (slots.iter())
        .map(|&i| {
            surveyed[i]
                .as_ref()
                .map_or(String::new(), |s| s.boot_id.clone())
        })
        .collect();
    let boots: Vec<&str> = boots.iter().map(String::as_str).collect();
    let mut plans: Vec<Option<HostPlan>> = (surveyed.into_iter().enumerate())
        .map(|(i, s)| {
            let s = s?;
            // An unknown boot id may be this machine: its CPUs are locked here too.
            let this_machine =
                s.entry.endpoint == Endpoint::Local || s.boot_id.is_empty() || s.boot_id == here;
            Some(HostPlan {
                name: s.entry.name.clone(),
                folder: super::hosts_dir(top).join(&fleet.hosts[i].folder),
                shard: fleet.hosts[i].shard,
                lock_here: this_machine,
                machine: (!this_machine).then(|| s.host.clone()),
                engine: s.engine,
            })
        })
        .collect();
    let mut groups = Vec::new();
    for group in assign::groups(&boots) {
        let mine: Vec<(usize, HostPlan)> = (group.iter())
            .map(|&g| {
                (
                    slots[g],
                    plans[slots[g]].take().expect("each host in one group"),
                )
            })
            .collect();
        let common = &common;
        // The groups are polled side by side in this task: each waits on its own Engine.
        groups.push(async move {
            let mut out = Vec::new();
            for (i, plan) in mine {
                if cancel.is_cancelled() {
                    break;
                }
                out.push((i, host_run::measure(&plan, common, cancel).await));
            }
            out
        });
    }
    let mut ended: Vec<Option<HostEnd>> = (0..plans.len()).map(|_| None).collect();
    for done in futures_util::future::join_all(groups).await {
        done.into_iter().for_each(|(i, e)| ended[i] = Some(e));
    }
    ended
}
