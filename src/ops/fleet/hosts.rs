//! The hosts of a fleet run: fitted to the study before anything runs, reconnected (or replaced by
//! a host of their class) on a resume, leased, given the images, and measured — hosts of one
//! machine one after another, machines at once; Ctrl-C stops every host's sub-run, whose guards
//! remove the containers it started.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use tokio_util::sync::CancellationToken;

use crate::engine::{Endpoint, Engine};
use crate::run::fleet::assign;
use crate::run::fleet::host_run::{self, Common, HostEnd, HostPlan};
use crate::run::fleet::record::{FleetRecord, PlacedImage};
use crate::run::fleet::standin::{self, HostEntry, Lease, Placement, Surveyed};
use crate::run::lifecycle::{CpuChoice, choose_cpus};
use crate::run::run_dir::{self, RunDir};
use crate::study::Study;

/// The hosts to measure on in this invocation, one slot per host of fleet.json (`None`: nothing
/// left to measure there), and how images reach them.
pub struct Lay<'a> {
    pub coordinator: &'a Engine,
    pub how: Placement,
    pub surveyed: Vec<Option<Surveyed>>,
}

/// Every host can pin the study's CPUs (`--cpus`, else `auto`: its own first ones) and has the
/// CPUs and memory it needs; refused naming the host and the reason.
pub async fn fit(study: &Study, cpus: &CpuChoice, hosts: &[Surveyed]) -> Result<()> {
    for s in hosts {
        let name = &s.entry.name;
        let available = s
            .engine
            .cpus()
            .await
            .with_context(|| format!("host `{name}`"))?;
        let (chosen, _) = choose_cpus(&study.protocol.cpus, &available, cpus)
            .with_context(|| format!("host `{name}` cannot run study {}", study.id))?;
        if let Err(why) = standin::fits(s, chosen.len(), None) {
            bail!("host `{name}` cannot run study {}: {why}", study.id);
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

/// The Engine for each unfinished host (`todo`) of a resumed run: a host of `given` of that name,
/// else one of `given` of its class not yet taken, else the host itself reconnected. Every one must
/// answer and be of the lost host's class.
pub async fn reconnect(
    fleet: &FleetRecord,
    todo: &[usize],
    given: &[HostEntry],
    allow_plain_tcp: bool,
    probe_tag: &str,
) -> Result<Vec<Option<Surveyed>>> {
    let offered = standin::survey(given, probe_tag).await?;
    let mut taken = vec![false; offered.len()];
    let mut out: Vec<Option<Surveyed>> = vec![None; fleet.hosts.len()];
    for &i in todo {
        let host = &fleet.hosts[i];
        let same = |s: &Surveyed| s.entry.name == host.name;
        let pick = (offered.iter().position(same))
            .or_else(|| (0..offered.len()).find(|&j| !taken[j] && offered[j].class == host.class));
        let s = match pick {
            Some(j) => {
                taken[j] = true;
                offered[j].clone()
            }
            None => {
                let entry =
                    standin::resolve(std::slice::from_ref(&host.name), None, allow_plain_tcp)?;
                let mut again = standin::survey(&entry, probe_tag).await.with_context(|| {
                    format!(
                        "host `{}` has cells left to measure and does not answer: give another host \
                         of its class ({}) with --resume … --hosts NAME",
                        host.name, host.class
                    )
                })?;
                again.remove(0)
            }
        };
        if s.class != host.class {
            bail!(
                "host `{}` is of class {}, and host `{}`, whose cells it would finish, of class {}: \
                 give a host of that class",
                s.entry.name,
                s.class,
                host.name,
                host.class
            );
        }
        out[i] = Some(s);
    }
    Ok(out)
}

/// Leases every host, places the images, measures each host's sub-run, and releases the leases
/// however that ends; the end of each host's part, by slot.
pub async fn measure(
    top: &RunDir,
    fleet: &mut FleetRecord,
    lay: Lay<'_>,
    common: Arc<Common>,
    cancel: &CancellationToken,
) -> Result<Vec<Option<HostEnd>>> {
    let mut leases: Vec<Lease> = Vec::new();
    let taken = async {
        for s in lay.surveyed.iter().flatten() {
            leases.push(standin::take(&s.engine, &s.entry.name, &top.id()).await?);
        }
        place(top, fleet, &lay, &common).await
    }
    .await;
    let ended = match taken {
        Ok(()) => Ok(run_all(top, fleet, lay.surveyed, common, cancel).await),
        Err(e) => Err(e),
    };
    for lease in leases {
        if let Err(e) = lease.release().await {
            eprintln!("warning: {e:#}");
        }
    }
    ended
}

/// The study's probe images on every host, each placement recorded in fleet.json.
async fn place(
    top: &RunDir,
    fleet: &mut FleetRecord,
    lay: &Lay<'_>,
    common: &Common,
) -> Result<()> {
    let mut images: Vec<String> = common
        .study
        .probes
        .iter()
        .map(|p| p.image.clone())
        .collect();
    images.sort();
    images.dedup();
    for (i, s) in lay.surveyed.iter().enumerate() {
        let Some(s) = s else { continue };
        let name = &s.entry.name;
        let placed = standin::place(
            lay.coordinator,
            &s.engine,
            name,
            &common.manifest,
            &images,
            lay.how,
        )
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
        let host = &mut fleet.hosts[i];
        host.placement
            .extend(placed.into_iter().map(|p| PlacedImage {
                image: p.image,
                how: p.how.to_string(),
                bytes: p.bytes,
                secs: p.secs,
            }));
        host.engines.push(name.clone());
    }
    top.write_json(run_dir::FLEET, fleet)
}

/// Every host's sub-run: the hosts of one machine (one boot id) one after another, machines at
/// once.
async fn run_all(
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
            let this_machine =
                s.entry.endpoint == Endpoint::Local || s.boot_id.is_empty() || s.boot_id == here;
            Some(HostPlan {
                name: s.entry.name.clone(),
                engine: s.engine,
                folder: super::hosts_dir(top).join(&fleet.hosts[i].folder),
                shard: fleet.hosts[i].shard,
                lock_here: this_machine,
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
