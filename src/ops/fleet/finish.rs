//! The end of a fleet run: each host's part recorded in fleet.json (lost cells and why), the
//! sub-runs merged into the run folder with the existing merge — every sample with its host and
//! hardware class — then env.json with every host's record, the report, and the claims per class
//! and per host (classes.md, as for any merged run).

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::hosts;
use crate::ops::Interrupt;
use crate::outputs::merge::{self, Input};
use crate::run::env::Environment;
use crate::run::fleet::host_run::Common;
use crate::run::fleet::record::{FleetEnvironment, FleetRecord, HostStatus};
use crate::run::fleet::survey::Surveyed;
use crate::run::lifecycle::RunResult;
use crate::run::run_dir::{self, RunDir, Status};

/// Measures every host given (`surveyed`, a slot per host of `fleet`), records how each ended,
/// merges the sub-runs; the merged run's result (interrupted when Ctrl-C stopped it, its lost
/// hosts named when a host stopped answering: resumable either way).
pub async fn measure_and_merge(
    top: &RunDir,
    mut fleet: FleetRecord,
    surveyed: Vec<Option<Surveyed>>,
    common: Common,
    interrupt: &Interrupt,
) -> Result<RunResult> {
    let common = Arc::new(common);
    let cancel = interrupt.claim();
    let ended = hosts::run_all(top, &fleet, surveyed, common.clone(), &cancel).await;
    interrupt.release();
    let ctrl_c = cancel.is_cancelled();
    let (mut measured, mut wall_ms, mut probe_ms, mut interrupted) = (0, 0.0, 0.0, false);
    for (host, end) in fleet.hosts.iter_mut().zip(&ended) {
        let Some(end) = end else { continue };
        host.status = end.status;
        host.reason = end.reason.clone();
        host.lost = end.lost.clone();
        if let Some(r) = &end.result {
            measured += r.measured;
            wall_ms += r.wall_ms;
            probe_ms += r.probe_ms;
            interrupted |= r.interrupted;
        }
    }
    top.write_json(run_dir::FLEET, &fleet)?;
    let lost_hosts: Vec<String> = (fleet.hosts.iter())
        .filter(|h| h.status == HostStatus::Lost)
        .map(|h| h.name.clone())
        .collect();
    let state = merge_hosts(top, &fleet)?;
    let samples = top.samples().map(|(s, _)| s).unwrap_or_default();
    say_lost(top, &fleet);
    let mut build_failed: Vec<String> = (common.study.probes.iter())
        .filter(|p| common.manifest.failed(&p.image).is_some())
        .map(|p| p.image.clone())
        .collect();
    build_failed.sort();
    build_failed.dedup();
    let state = match state {
        Some(s) => s,
        None => anyhow::bail!(
            "no host measured anything; resume with `{}`",
            run_dir::resume_command(
                top.path(),
                &top.load_state()
                    .unwrap_or_else(|_| blank_state(top, &common))
            )
        ),
    };
    top.link_latest()?;
    Ok(RunResult {
        dir: top.clone(),
        study: common.study.clone(),
        invalid: samples
            .iter()
            .filter(|s| !s.valid && !s.is_unavailable())
            .count(),
        state,
        measured,
        build_failed,
        interrupted: interrupted || ctrl_c,
        lost_hosts,
        wall_ms,
        probe_ms,
    })
}

fn blank_state(top: &RunDir, common: &Common) -> run_dir::RunState {
    crate::run::lifecycle::new_state(&top.id(), &common.study, &[], Vec::new())
}

/// Each lost host, its reason and its cells left, and how to finish them.
fn say_lost(top: &RunDir, fleet: &FleetRecord) {
    for h in fleet.hosts.iter().filter(|h| h.status == HostStatus::Lost) {
        eprintln!(
            "host `{}` LOST: {}; {} cell(s) left to measure: {}",
            h.name,
            h.reason.as_deref().unwrap_or("no reason recorded"),
            h.lost.len(),
            h.lost.join(", ")
        );
    }
    if fleet.hosts.iter().any(|h| h.status == HostStatus::Lost) {
        eprintln!(
            "the run is incomplete; finish the lost cells on the same host, or another of its \
             class: parkbench run --resume {} [--hosts NAME]",
            top.path().display()
        );
    }
}

/// The sub-runs merged into the run folder (what was there before is replaced); `None` when no
/// host has measured anything yet.
fn merge_hosts(top: &RunDir, fleet: &FleetRecord) -> Result<Option<run_dir::RunState>> {
    let mut inputs = Vec::new();
    let mut owners = Vec::new();
    for h in &fleet.hosts {
        let sub = RunDir::at(&super::hosts_dir(top).join(&h.folder));
        if !sub.file(run_dir::STATE).exists() || !sub.file(run_dir::SAMPLES).exists() {
            continue;
        }
        let files = sub.read_files()?;
        inputs.push(Input {
            name: h.name.clone(),
            files,
        });
        owners.push(h);
    }
    if inputs.is_empty() {
        return Ok(None);
    }
    let mut merged = merge::merge(&inputs, &top.id())
        .with_context(|| format!("merging the hosts' sub-runs of {}", top.id()))?;
    // Each sample carries the Engine that ran it and its host's class.
    let mut at = 0;
    for (run, h) in merged.record.runs.iter_mut().zip(&owners) {
        run.hardware = h.class.clone();
        for s in &mut merged.samples[at..at + run.samples] {
            // The sub-runs are parts of this one run: their samples carry its id.
            s.run_id = top.id();
            s.host.get_or_insert_with(|| h.name.clone());
            s.hardware = Some(h.class.clone());
        }
        at += run.samples;
    }
    merged.record.classes = merge::classes(&merged.samples);
    // The hosts' sub-runs are not runs the user merged: the fleet's own lines say what was measured where.
    merged
        .state
        .deviations
        .retain(|d| !d.starts_with("merged from "));
    merged.state.deviations.extend(fleet_deviations(fleet));
    for w in fleet.hosts.iter().flat_map(|h| &h.warnings) {
        if !merged.state.warnings.contains(w) {
            merged.state.warnings.push(w.clone());
        }
    }
    if fleet.hosts.iter().any(|h| h.status == HostStatus::Lost) {
        merged.state.status = Status::Incomplete;
    }
    for name in [run_dir::SAMPLES, run_dir::CLASSES_JSON, run_dir::CLASSES_MD] {
        let _ = std::fs::remove_file(top.file(name));
    }
    crate::ops::merge::write(top, &merged)?;
    write_env(
        top,
        fleet,
        &owners.iter().map(|h| h.folder.clone()).collect::<Vec<_>>(),
    )?;
    Ok(Some(merged.state))
}

/// What a fleet run says about itself in the report's deviations.
fn fleet_deviations(fleet: &FleetRecord) -> Vec<String> {
    let mut out = vec![format!(
        "measured on {} ({}): {}",
        crate::text::count(fleet.hosts.len(), "host", "hosts"),
        fleet.mode,
        (fleet.hosts.iter())
            .map(|h| match h.engine.is_empty() {
                true => format!("{} ({})", h.name, h.class),
                false => format!("{} ({}; {})", h.name, h.class, h.engine),
            })
            .collect::<Vec<_>>()
            .join(", ")
    )];
    for h in fleet.hosts.iter().filter(|h| h.plain_tcp) {
        out.push(format!(
            "host {} ({}) was reached over plain tcp:// without TLS (--allow-plain-tcp): nothing \
             authenticated its Engine or encrypted the traffic",
            h.name, h.address
        ));
    }
    for h in fleet.hosts.iter().filter(|h| h.status == HostStatus::Lost) {
        out.push(format!(
            "incomplete: host {} lost ({}): {} cells not measured",
            h.name,
            h.reason.as_deref().unwrap_or(""),
            h.lost.len()
        ));
    }
    out
}

/// env.json: the first host's record, and every host's by name.
fn write_env(top: &RunDir, fleet: &FleetRecord, folders: &[String]) -> Result<()> {
    let mut hosts: BTreeMap<String, Environment> = BTreeMap::new();
    for h in fleet.hosts.iter().filter(|h| folders.contains(&h.folder)) {
        let sub = RunDir::at(&super::hosts_dir(top).join(&h.folder));
        let Ok(text) = sub.read(run_dir::ENV) else {
            continue;
        };
        let env: Environment = serde_json::from_str(&text)
            .with_context(|| format!("parsing {}", sub.file(run_dir::ENV).display()))?;
        hosts.insert(h.name.clone(), env);
    }
    let Some(first) = (fleet.hosts.iter())
        .find_map(|h| hosts.get(&h.name))
        .cloned()
    else {
        return Ok(());
    };
    top.write_json(run_dir::ENV, &FleetEnvironment { first, hosts })
}
