//! Benchmarks of the kit itself. `fidelity`: the same probe binaries measured side by side, in one
//! run, in containers through the kit and natively on the host by the same sampler — or, in its
//! kernel mode, in a VM under a guest kernel.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use tokio_util::sync::CancellationToken;

use crate::engine::{Containers, Images};
use crate::images::Manifest;
use crate::run::guest::Guests;
use crate::run::plan;
use crate::run::process::{self, Setting};
use crate::run::run_dir::RunState;
use crate::study::Study;
use crate::study::kind;
use crate::study::sample::{Sample, SamplerOutput};

/// Measures each cell of `study` twice — in its container, then natively — and prints the ratio of
/// the median memory per probe (steady: RSS with every task parked; peak: `ru_maxrss`). The probe
/// binary runs natively as it is in the image, so only probes that are one binary take part.
/// With `guest` (the study under one guest kernel, and that kernel made ready) the second way is
/// the VM instead of the host.
pub async fn fidelity(
    engine: &(impl Containers + Images),
    study: &Study,
    manifest: &Manifest,
    state: &RunState,
    guest: Option<(&Study, &Guests)>,
) -> Result<String> {
    let other = if guest.is_some() { "guest" } else { "native" };
    let bins = tempfile::tempdir().context("creating a folder for the probe binaries")?;
    let mut medians: BTreeMap<(String, &str), Vec<u64>> = BTreeMap::new();
    for cell in plan::matrix(study) {
        let probe = &study.probes[cell.probe];
        let dir = bins.path().join(&probe.id);
        let both = side_by_side(engine, (study, manifest, state), guest, &cell, &dir).await?;
        for (how, s) in [("container", &both.0), (other, &both.1)] {
            if !s.valid {
                bail!(
                    "{how} run of {} at {} tasks is invalid: {:?}",
                    probe.id,
                    cell.tasks,
                    s.error
                );
            }
            let bytes = s.kind.measure().memory_bytes(s).map_or(0, |b| b as u64);
            eprintln!("{how:<9} {} {} B", probe.id, bytes);
            medians
                .entry((probe.id.clone(), how))
                .or_default()
                .push(bytes);
        }
    }
    Ok(table(study, &medians, other))
}

/// One cell measured in its container and then the other way: natively with the binaries
/// extracted into `dir`, or in the guest.
async fn side_by_side(
    engine: &(impl Containers + Images),
    (study, manifest, state): (&Study, &Manifest, &RunState),
    guest: Option<(&Study, &Guests)>,
    cell: &plan::Cell,
    dir: &Path,
) -> Result<(Sample, Sample)> {
    let probe = &study.probes[cell.probe];
    let image =
        manifest
            .get(&probe.image)
            .with_context(|| match manifest.unavailable(&probe.image) {
                Some(why) => format!(
                    "probe {}: image {} is unavailable here ({}); leave it out with --probes",
                    probe.id,
                    probe.image,
                    why.lines().next().unwrap_or_default()
                ),
                None => match manifest.failed(&probe.image) {
                    Some(f) => format!(
                        "probe {}: the build of image {} failed ({}); fix it, or leave it out \
                         with --probes",
                        probe.id,
                        probe.image,
                        f.reason()
                    ),
                    None => format!("probe {}: image {} was not built", probe.id, probe.image),
                },
            })?;
    if !dir.exists() {
        extract_binaries(engine, &image.tag, &probe.program, dir).await?;
    }
    let cancel = CancellationToken::new();
    // The Engine's default profile, as the native run has none of the study's.
    let on_host = Setting {
        study,
        manifest,
        guests: &Guests::default(),
        state,
        seccomp: None,
    };
    let kit = process::measure(engine, &on_host, cell, &cancel)
        .await?
        .context("interrupted")?;
    let second = match guest {
        Some((in_vm, guests)) => {
            let in_guest = Setting {
                study: in_vm,
                guests,
                ..on_host
            };
            process::measure(engine, &in_guest, cell, &cancel)
                .await?
                .context("interrupted")?
        }
        None => measure_native(dir, study, state, cell, kit.clone())?,
    };
    Ok((kit, second))
}

/// The table of median memory per probe, in containers and the other way, and their ratio.
fn table(study: &Study, medians: &BTreeMap<(String, &str), Vec<u64>>, other: &str) -> String {
    let mut out = format!(
        "{:<22} {:>16} {:>16} {:>8}\n",
        "probe",
        "container MiB",
        format!("{other} MiB"),
        "ratio"
    );
    for probe in &study.probes {
        let m = |how: &str| {
            let v: Vec<f64> = medians[&(probe.id.clone(), how)]
                .iter()
                .map(|&b| b as f64)
                .collect();
            crate::stats::median(&v).map_or(0.0, f64::floor)
        };
        let (c, n) = (m("container"), m(other));
        out.push_str(&format!(
            "{:<22} {:>16.2} {:>16.2} {:>8.4}\n",
            probe.id,
            c / 1048576.0,
            n / 1048576.0,
            c / n
        ));
    }
    out
}

/// The sampler and the probe's program, as `sampler` and `probe` in `dir`.
async fn extract_binaries(
    engine: &impl Images,
    tag: &str,
    program: &str,
    dir: &Path,
) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    for (name, path) in [("sampler", "/usr/local/bin/sampler"), ("probe", program)] {
        let data = engine.read_file(tag, path).await?;
        let path = dir.join(name);
        std::fs::write(&path, data).with_context(|| format!("writing {}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Runs the sampler natively with the same arguments the container got.
fn measure_native(
    dir: &Path,
    study: &Study,
    state: &RunState,
    cell: &plan::Cell,
    mut s: Sample,
) -> Result<Sample> {
    let probe = &study.probes[cell.probe];
    let words = process::placeholders(probe, state, cell.tasks).map_err(anyhow::Error::msg)?;
    let output = Command::new(dir.join("sampler"))
        .args(crate::run::execution::sampler_args(
            probe,
            &study.protocol,
            &crate::study::cpuset::format(&words.cpus),
        ))
        .arg(dir.join("probe"))
        .args(probe.expand_args(&words))
        .env_clear()
        .envs(probe.expand_env(&words))
        .output()
        .context("running the sampler natively")?;
    let out: SamplerOutput =
        serde_json::from_slice(&output.stdout).context("parsing the native sampler's JSON")?;
    s.exit_code = output.status.code().map(i64::from);
    s.oom_killed = false;
    s.metrics.clear();
    let unusable = kind::fill_from_sampler(&mut s, &out);
    let error = out.error.clone().or(unusable);
    kind::judge_validity(&mut s, error.as_deref(), &probe.results);
    Ok(s)
}
