//! `parkbench bench`: benchmarks of the kit itself. `fidelity`: the study narrowed to the probes,
//! the scale and the processes asked for → its images built → CPUs chosen → the guest kernel made
//! ready (kernel mode) → each cell measured in its container and natively (or in the VM).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use tokio_util::sync::CancellationToken;

use super::prepare::for_study;
use super::{Ending, Prepared, prepare};
use crate::run::lifecycle;
use crate::run::{bench, guest};
use crate::study::cpus::{CpuChoice, choose_cpus};
use crate::study::{Repeats, Study};

/// What `bench fidelity` measures.
#[derive(Debug, Clone)]
pub struct Fidelity {
    /// The study whose probes are measured; the default study when `None`.
    pub study: Option<PathBuf>,
    /// Only these probes of the study (all when empty).
    pub probes: Vec<String>,
    /// Tasks per process.
    pub tasks: u64,
    /// Processes per probe and way of running.
    pub repeats: u32,
    /// The CPUs to pin to.
    pub cpus: CpuChoice,
    /// Kernel mode: the guest kernel measured against instead of the host.
    pub kernel: Option<String>,
}

/// The same probe binaries in containers and natively (or in a VM), side by side.
/// Ctrl-C drops the measurement in progress; its container is removed.
pub async fn fidelity(repo: &Path, args: &Fidelity) -> Result<Ending> {
    let study = narrowed(args)?;
    let in_vm = match &args.kernel {
        Some(k) => {
            guest::check_names(std::slice::from_ref(k), &guest::known(repo)?)?;
            Some(study.clone().under_kernels(std::slice::from_ref(k))?)
        }
        None => None,
    };
    let mut build = for_study(&study);
    if let Some(s) = &in_vm {
        build.only.extend(for_study(s).only);
    }
    let Prepared {
        engine,
        manifest,
        cache,
    } = prepare(repo, &build).await?;
    let available = engine.cpus().await?;
    let (cpus, deviations) = choose_cpus(&study.protocol.cpus, &available, &args.cpus)?;
    let state = lifecycle::new_state("bench-fidelity", &study, &cpus, deviations);
    let guests = match &in_vm {
        Some(s) => {
            let cancel = CancellationToken::new();
            Some(guest::prepare(&engine, &cache, &manifest, s, &cancel).await?)
        }
        None => None,
    };
    let second = in_vm.as_ref().zip(guests.as_ref());
    let table = bench::fidelity(&engine, &study, &manifest, &state, second).await?;
    print!("{table}");
    Ok(Ending::Ok)
}

/// The study with only the probes asked for, at one scale, a fixed number of processes, no claims.
fn narrowed(args: &Fidelity) -> Result<Study> {
    let mut study = match &args.study {
        Some(path) => Study::load(path)?,
        None => Study::default_study(),
    };
    if !args.probes.is_empty() {
        for id in &args.probes {
            if study.probe(id).is_none() {
                bail!("--probes: study {} has no probe {id:?}", study.id);
            }
        }
        study.probes.retain(|p| args.probes.contains(&p.id));
    }
    study.claims.clear();
    study.protocol.scales = vec![args.tasks];
    for p in &mut study.probes {
        p.scales = None;
    }
    study.protocol.repeats = Repeats::fixed(args.repeats);
    Ok(study)
}
