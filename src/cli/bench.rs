//! `parkbench bench`: benchmarks of the kit itself.

use std::path::Path;

use anyhow::{Result, bail};

use super::{Ending, Prepared, prepare};
use crate::cli::args::FidelityArgs;
use crate::run::guest;
use crate::run::lifecycle;
use crate::study::Study;

/// The same probe binaries in containers and natively, side by side.
/// Ctrl-C drops the measurement in progress; its container is removed.
pub async fn fidelity(repo: &Path, args: &FidelityArgs) -> Result<Ending> {
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
    study.protocol.repeats = crate::study::Repeats::fixed(args.repeats);
    let in_vm = match &args.kernel {
        Some(k) => {
            guest::check_names(std::slice::from_ref(k), &guest::known(repo)?)?;
            Some(study.clone().under_kernels(std::slice::from_ref(k))?)
        }
        None => None,
    };
    let mut build = super::run::study_images(&study);
    if let Some(s) = &in_vm {
        build.only.extend(super::run::study_images(s).only);
    }
    let Prepared {
        engine,
        manifest,
        cache,
    } = prepare(repo, &build).await?;
    let available = engine.cpus().await?;
    let (cpus, deviations) = lifecycle::choose_cpus(&study.protocol.cpus, &available, &args.cpus)?;
    let state = lifecycle::new_state("bench-fidelity", &study, &cpus, deviations);
    let guests = match &in_vm {
        Some(s) => {
            let cancel = tokio_util::sync::CancellationToken::new();
            Some(guest::prepare(&engine, &cache, &manifest, s, &cancel).await?)
        }
        None => None,
    };
    let second = in_vm.as_ref().zip(guests.as_ref());
    print!(
        "{}",
        crate::run::bench::fidelity(&engine, &study, &manifest, &state, second).await?
    );
    Ok(Ending::Ok)
}
