//! `parkbench bench`: benchmarks of the kit itself.

use std::path::Path;

use anyhow::{Result, bail};

use super::{Ending, Prepared, prepare};
use crate::args::FidelityArgs;
use crate::run;
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
    let Prepared {
        engine, manifest, ..
    } = prepare(repo, &super::run::study_images(&study)).await?;
    let available = engine.cpus().await?;
    let (cpus, deviations) = run::choose_cpus(&study.protocol.cpus, &available, &args.cpus)?;
    let state = run::new_state("bench-fidelity", &study, &cpus, deviations);
    print!(
        "{}",
        crate::bench::fidelity(&engine, &study, &manifest, &state).await?
    );
    Ok(Ending::Ok)
}
