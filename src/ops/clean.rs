//! `parkbench clean`: parkbench's images, its artifact cache, and runs' leases on hosts; runs are
//! never touched.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::Ending;
use crate::engine::{Endpoint, Engine, VolumeFacts};
use crate::images::builds_held_off;
use crate::images::cache::Cache;
use crate::images::namespace;
use crate::run::fleet::{hosts, lease};

/// What to remove.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// parkbench's images on this machine's Engine.
    pub images: bool,
    /// The artifact cache.
    pub cache: bool,
    /// Runs' leases on `hosts`: the one of `run`, or every one (`all_runs`).
    pub leases: bool,
    /// The hosts whose leases go, as `--hosts` names them on `run` (`local`, a URL, a hosts-file
    /// name, a Docker context); empty: this machine's Engine.
    pub hosts: Vec<String>,
    /// The study whose folder's `hosts.yaml` names hosts.
    pub study: Option<PathBuf>,
    /// Accept plain `tcp://` hosts.
    pub allow_plain_tcp: bool,
    /// The run whose leases go (a run that is gone).
    pub run: Option<String>,
    /// Every run's leases, live ones included.
    pub all_runs: bool,
}

/// Which leases go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which<'a> {
    /// Those of one run.
    Run(&'a str),
    /// Every one.
    All,
    /// None: they are listed, and the command says how to choose.
    Listed,
}

/// Removes what `options` names.
pub async fn clean(options: &Options) -> Result<Ending> {
    if !options.images && !options.cache && !options.leases {
        bail!("say what to remove: --images, --cache, --leases, or several");
    }
    if options.leases {
        let which = match (&options.run, options.all_runs) {
            (Some(_), true) => bail!("give --run ID or --all, not both"),
            (Some(run), false) => Which::Run(run),
            (None, true) => Which::All,
            (None, false) => Which::Listed,
        };
        // Every host named is resolved before any lease goes.
        let hosts = hosts_of(options)?;
        for (name, endpoint) in &hosts {
            clear_leases(name, endpoint, which).await?;
        }
        if which == Which::Listed {
            eprintln!(
                "no lease removed: a lease may be a live run's. Once sure its run is gone, give \
                 --run ID (that run's leases) or --all (every run's, live ones included)"
            );
        }
    }
    // The untagged images pruned below include a build's finished stages, and a build reads the
    // artifact cache: neither goes from under a build this machine has under way.
    let _builds = match options.images || options.cache {
        true => Some(builds_held_off().await?),
        false => None,
    };
    if options.images {
        let engine = Engine::connect().await?;
        let removed = engine.remove_images(&namespace()).await?;
        eprintln!("removed {} image tag(s)", removed.len());
    }
    if options.cache {
        let cache = Cache::from_env()?;
        let root = cache.root();
        if root.exists() {
            std::fs::remove_dir_all(root)
                .with_context(|| format!("removing {}", root.display()))?;
        }
        eprintln!("removed the artifact cache {}", root.display());
    }
    Ok(Ending::Ok)
}

/// Each host by name and how to reach it, resolved as `run --hosts` resolves them (contexts,
/// hosts files, plain TCP refused unless allowed); none: this machine's Engine.
fn hosts_of(options: &Options) -> Result<Vec<(String, Endpoint)>> {
    if options.hosts.is_empty() {
        return Ok(vec![("local".into(), Endpoint::Local)]);
    }
    let study_dir = options.study.as_deref().and_then(|s| s.parent());
    let entries = hosts::resolve(&options.hosts, study_dir, options.allow_plain_tcp)?;
    Ok(entries.into_iter().map(|e| (e.name, e.endpoint)).collect())
}

/// The leases on one host that `which` removes (none when they are only listed).
fn chosen<'v>(leases: &'v [VolumeFacts], which: Which) -> Vec<&'v VolumeFacts> {
    leases
        .iter()
        .filter(|v| match which {
            Which::All => true,
            Which::Run(run) => v.labels.get(lease::LABEL).is_some_and(|r| r == run),
            Which::Listed => false,
        })
        .collect()
}

/// The run and the coordinator of a lease, in words.
fn described(volume: &VolumeFacts) -> String {
    let run = volume.labels.get(lease::LABEL).map_or("?", String::as_str);
    let by = (volume.labels.get(lease::COORDINATOR)).map_or("?", String::as_str);
    format!("run {run} (taken from {by})")
}

/// Removes the leases `which` names on one host, saying which run held each and where it was
/// taken from; lists the others.
async fn clear_leases(name: &str, endpoint: &Endpoint, which: Which<'_>) -> Result<()> {
    let engine = Engine::connect_to(name, endpoint).await?;
    let leases = engine.volumes_with_label(lease::LABEL).await?;
    let gone = chosen(&leases, which);
    for volume in &gone {
        engine
            .remove_volume(&volume.name)
            .await
            .with_context(|| format!("host `{name}`"))?;
        eprintln!("host `{name}`: removed the lease of {}", described(volume));
    }
    for volume in leases.iter().filter(|v| !gone.contains(v)) {
        eprintln!("host `{name}`: kept the lease of {}", described(volume));
    }
    if let (Which::Run(run), true) = (which, gone.is_empty()) {
        eprintln!("host `{name}`: no lease of run {run}");
    } else if leases.is_empty() {
        eprintln!("host `{name}`: no lease");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease_of(run: &str) -> VolumeFacts {
        VolumeFacts {
            name: lease::volume_name(run),
            labels: [
                (lease::LABEL.to_string(), run.to_string()),
                (lease::COORDINATOR.to_string(), "box-a".to_string()),
            ]
            .into(),
        }
    }

    #[test]
    fn only_the_named_runs_lease_goes_unless_all_are_asked_for() {
        let leases = [lease_of("r1"), lease_of("r2")];
        let names = |which| -> Vec<String> {
            chosen(&leases, which)
                .iter()
                .map(|v| v.name.clone())
                .collect()
        };
        assert_eq!(names(Which::Run("r2")), ["parkbench-lease-r2"]);
        assert!(names(Which::Run("r3")).is_empty());
        assert_eq!(names(Which::All).len(), 2);
        assert!(names(Which::Listed).is_empty());
        assert_eq!(described(&leases[0]), "run r1 (taken from box-a)");
    }

    #[test]
    fn hosts_are_local_by_default_and_resolved_like_runs_hosts() {
        let local = hosts_of(&Options::default()).unwrap();
        assert_eq!(local, vec![("local".to_string(), Endpoint::Local)]);
        let named = Options {
            hosts: vec!["unix:///run/other.sock".into()],
            ..Options::default()
        };
        let found = hosts_of(&named).unwrap();
        assert_eq!(found[0].1, Endpoint::Unix("/run/other.sock".into()));
        let unknown = Options {
            hosts: vec!["no-such-host-anywhere".into()],
            ..Options::default()
        };
        let err = format!("{:#}", hosts_of(&unknown).unwrap_err());
        assert!(err.contains("no host `no-such-host-anywhere`"), "{err}");
    }

    #[tokio::test]
    async fn a_run_and_all_runs_together_are_refused() {
        let both = Options {
            leases: true,
            run: Some("r1".into()),
            all_runs: true,
            ..Options::default()
        };
        let err = clean(&both).await.unwrap_err().to_string();
        assert!(err.contains("--run ID or --all"), "{err}");
    }
}
