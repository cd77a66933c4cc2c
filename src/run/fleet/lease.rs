//! A run's lease on a host: a Docker volume `parkbench-lease-<run id>` labelled with the run and
//! the coordinator, taken before anything runs there and removed at the end on every path (its
//! guard removes it when dropped: an error, Ctrl-C). A host leased by another run is refused,
//! naming it; containers already running there are a validity warning.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::engine::{Engine, VolumeFacts, VolumeGuard};
use crate::run::warning::{Touches, Warning};

/// The label every lease volume carries: the run ID.
pub const LABEL: &str = "parkbench.lease";
/// The label naming the machine that took the lease (its hostname).
pub const COORDINATOR: &str = "parkbench.lease.coordinator";
/// The label the run's containers carry: the run ID.
const RUN_LABEL: &str = "parkbench.run";

/// A lease held on one host until released.
pub struct Lease {
    host: String,
    run_id: String,
    volume: VolumeGuard,
}

/// The lease volume of `run_id`.
pub fn volume_name(run_id: &str) -> String {
    format!("parkbench-lease-{run_id}")
}

/// Takes the lease of `run_id` on `engine` (called `host` in messages). Refused when another run
/// holds one there, naming it, its coordinator and how to clear a stale one. A lease of the same
/// run (one resumed) is taken over. Two runs that checked at the same moment both step back; each
/// tries once more after a short random wait, so that one of them gets the host.
pub async fn take(engine: &Engine, host: &str, run_id: &str) -> Result<Lease> {
    match try_take(engine, host, run_id).await? {
        Taken::Held(lease) => Ok(lease),
        Taken::SteppedBack(_) => {
            tokio::time::sleep(jitter()).await;
            match try_take(engine, host, run_id).await? {
                Taken::Held(lease) => Ok(lease),
                Taken::SteppedBack(refusal) => Err(refusal),
            }
        }
    }
}

/// What one attempt at a lease came to.
enum Taken {
    /// The lease is ours.
    Held(Lease),
    /// Another run's lease appeared beside ours (it checked at the same moment): ours is removed,
    /// and this is the refusal.
    SteppedBack(anyhow::Error),
}

/// One attempt: refused at once when another run holds the host; else the lease is created and
/// the host checked again.
async fn try_take(engine: &Engine, host: &str, run_id: &str) -> Result<Taken> {
    refuse_others(&engine.volumes_with_label(LABEL).await?, host, run_id)?;
    let name = volume_name(run_id);
    let labels = BTreeMap::from([
        (LABEL.to_string(), run_id.to_string()),
        (COORDINATOR.to_string(), coordinator()),
    ]);
    engine.create_volume(&name, &labels).await?;
    let lease = Lease {
        host: host.to_string(),
        run_id: run_id.to_string(),
        volume: VolumeGuard::new(engine.clone(), name),
    };
    // Two runs that checked at the same moment both see each other now: both step back, and
    // neither runs on a host the other may use.
    let Err(refusal) = refuse_others(&engine.volumes_with_label(LABEL).await?, host, run_id) else {
        return Ok(Taken::Held(lease));
    };
    match lease.release().await {
        Ok(()) => Ok(Taken::SteppedBack(refusal)),
        // The refusal stays the error; that our own volume is left is said under it.
        Err(release) => Err(release
            .context("this run's own lease volume could not be removed after stepping back")
            .context(refusal.to_string())),
    }
}

/// A short random wait (20 to 400 ms), so that two runs that stepped back do not retry together.
fn jitter() -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    Duration::from_millis(20 + random % 381)
}

impl Lease {
    /// The host it is held on.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The run holding it.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The name of its volume.
    pub fn volume(&self) -> &str {
        self.volume.name()
    }

    /// Gives the host back: its volume is removed.
    pub async fn release(self) -> Result<()> {
        self.volume.remove().await
    }
}

/// Fails when a lease volume of another run is among `volumes`.
fn refuse_others(volumes: &[VolumeFacts], host: &str, run_id: &str) -> Result<()> {
    let other = volumes
        .iter()
        .find(|v| v.labels.get(LABEL).is_none_or(|r| r != run_id));
    if let Some(v) = other {
        let unknown = "?".to_string();
        let other_run = v.labels.get(LABEL).unwrap_or(&unknown);
        let by = v.labels.get(COORDINATOR).unwrap_or(&unknown);
        bail!(
            "host `{host}` is leased by run {other_run} (from {by}, volume {}): wait for that run \
             to end, or, if it is gone and the lease stale, clear it with `parkbench clean \
             --leases --hosts {host} --run {other_run}`",
            v.name
        );
    }
    Ok(())
}

/// This machine's hostname, for the lease's label.
fn coordinator() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "an unknown machine".into())
}

/// A validity warning per container running on `engine` (called `host`) that `run_id` did not
/// start: another workload sharing the host's CPUs and memory.
pub async fn foreign_containers(engine: &Engine, host: &str, run_id: &str) -> Result<Vec<Warning>> {
    Ok(foreign(&engine.running_containers().await?, host, run_id))
}

fn foreign(running: &[crate::engine::RunningContainer], host: &str, run_id: &str) -> Vec<Warning> {
    running
        .iter()
        .filter(|c| c.labels.get(RUN_LABEL).is_none_or(|r| r != run_id))
        .map(|c| Warning {
            what: format!(
                "another container running on host `{host}`: {} ({}, image {}), not started by \
                 this run",
                c.name,
                &c.id[..c.id.len().min(12)],
                c.image
            ),
            touches: Touches::All,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RunningContainer;

    fn lease_volume(run: &str) -> VolumeFacts {
        VolumeFacts {
            name: volume_name(run),
            labels: [
                (LABEL.to_string(), run.to_string()),
                (COORDINATOR.to_string(), "box-a".to_string()),
            ]
            .into(),
        }
    }

    #[test]
    fn another_runs_lease_is_refused_naming_it_and_the_way_out() {
        assert!(refuse_others(&[], "b", "r2").is_ok());
        assert!(
            refuse_others(&[lease_volume("r2")], "b", "r2").is_ok(),
            "its own"
        );
        let err = refuse_others(&[lease_volume("r1")], "b", "r2")
            .unwrap_err()
            .to_string();
        for part in [
            "host `b`",
            "run r1",
            "box-a",
            "clean --leases --hosts b --run r1",
        ] {
            assert!(err.contains(part), "{part} missing: {err}");
        }
    }

    #[test]
    fn the_wait_before_trying_again_is_short_and_varies() {
        let waits: Vec<Duration> = (0..50).map(|_| jitter()).collect();
        assert!(waits.iter().all(|w| (20..=400).contains(&w.as_millis())));
        assert!(waits.iter().any(|w| *w != waits[0]), "{waits:?}");
    }

    #[test]
    fn containers_of_other_runs_or_none_are_foreign() {
        let container = |id: &str, run: Option<&str>| RunningContainer {
            id: id.repeat(20),
            name: format!("c{id}"),
            image: "img".into(),
            labels: run
                .map(|r| [(RUN_LABEL.to_string(), r.to_string())].into())
                .unwrap_or_default(),
        };
        let running = [
            container("1", Some("r2")),
            container("2", Some("r1")),
            container("3", None),
        ];
        let warnings = foreign(&running, "b", "r2");
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].what.contains("c2") && warnings[0].what.contains("host `b`"));
        assert!(warnings[1].what.contains("c3"));
    }
}
