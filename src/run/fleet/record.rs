//! `fleet.json`, the record of a run across hosts, and the bookkeeping of what a host that stopped
//! answering left unmeasured: the process it was running becomes an invalid sample with the reason,
//! its remaining cells are `lost` (not failed) until `run --resume` measures them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::assign::Mode;
use crate::run::env::Environment;
use crate::run::plan::{self, Cell};
use crate::run::shard::Shard;
use crate::study::Study;
use crate::study::sample::Sample;

/// `fleet.json`: the hosts of a run across several Docker Engines and what became of each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetRecord {
    /// `across` (every cell on every host) or `spread` (the matrix dealt over the hosts).
    pub mode: Mode,
    /// How the images reached the hosts: `ship` (from the coordinator) or `build` (on the host).
    pub images: String,
    /// The machine that drove the run (its host name).
    pub coordinator: String,
    /// The hosts in the order given, each with its sub-run in `hosts/<name>/`.
    pub hosts: Vec<HostRecord>,
}

/// One host of a fleet run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// The host's name as given in `--hosts`; its sub-run is `hosts/<folder>/`.
    pub name: String,
    /// The sub-run's folder under `hosts/` (the name, made safe for a file name).
    pub folder: String,
    /// Its Engine's address (`local`, `unix://…`, `tcp://host:port`, `ssh://…`); never key material.
    pub address: String,
    /// Its hardware class (CPU model, logical CPUs, memory band, kernel).
    pub class: String,
    /// Its Engine and version (`Docker Engine 20.10.24`, `Podman Engine 4.3.1`); empty in records
    /// older than the field.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub engine: String,
    /// Reached over `tcp://` without TLS (`--allow-plain-tcp`); the report warns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plain_tcp: bool,
    /// Its kernel's boot id: hosts with the same one are one machine and measured one at a time;
    /// empty when unknown.
    pub boot_id: String,
    /// The slice of the matrix it measures (`--spread`); absent: all of it (`--across`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// `ok`, or `lost` when it stopped answering with cells left to measure.
    pub status: HostStatus,
    /// Why it was lost: the Engine's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its cells not measured because it stopped answering, as `probe@tasks#repeat`; `run
    /// --resume` measures them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// The Engines that measured its sub-run, in order: its own, then any of its class that
    /// `run --resume --hosts` gave in its place.
    pub engines: Vec<String>,
    /// Containers running on it that the run did not start, seen before it measured: validity
    /// warnings (they share its CPUs and memory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<crate::run::warning::Warning>,
    /// How each image reached it, per invocation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<PlacedImage>,
}

/// Whether a host finished its part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostStatus {
    /// It answered throughout (its sub-run may still be incomplete after an interrupt).
    Ok,
    /// It stopped answering with cells left; they are `lost`.
    Lost,
}

/// One image on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacedImage {
    /// The image's short name.
    pub image: String,
    /// `present` (already there with the same ID), `shipped` or `built`.
    pub how: String,
    /// Bytes sent to the host.
    pub bytes: u64,
    /// Seconds it took.
    pub secs: f64,
}

/// `env.json` of a fleet run: the first host's record (read by everything that reads one
/// machine's), and every host's, by name.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetEnvironment {
    #[serde(flatten)]
    pub first: Environment,
    /// Each host's own environment record, by host name.
    pub hosts: BTreeMap<String, Environment>,
}

/// A host name as a folder name: characters other than letters, digits, `-`, `_` and `.` become
/// `_` (a URL names a host too).
pub fn folder_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || "-_.".contains(c) {
            true => c,
            false => '_',
        })
        .collect();
    match safe.trim_matches('.') {
        "" => "_".to_string(),
        s => s.to_string(),
    }
}

/// The planned cells of `study` (a sub-run's, as it measures it) with no sample yet, in run
/// order: after an Engine error, the first is the process that was running.
pub fn unmeasured(study: &Study, samples: &[Sample]) -> Vec<Cell> {
    let done: std::collections::BTreeSet<_> = samples.iter().map(Sample::cell).collect();
    plan::matrix(study)
        .into_iter()
        .filter(|c| !done.contains(&(study.probes[c.probe].id.clone(), c.tasks, c.repeat)))
        .collect()
}

/// A cell as `fleet.json` lists it: `probe@tasks#repeat`.
pub fn cell_name(study: &Study, c: &Cell) -> String {
    format!("{}@{}#{}", study.probes[c.probe].id, c.tasks, c.repeat)
}

/// The reason a host's running process is invalid: whether the Engine still answers decides the
/// words.
pub fn lost_reason(host: &str, answers: bool, error: &anyhow::Error) -> String {
    let first = format!("{error:#}");
    let first = first.lines().next().unwrap_or_default();
    match answers {
        false => format!("host `{host}` stopped answering: {first}"),
        true => format!("host `{host}` stopped the run: {first}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(study: &Study, c: &Cell) -> Sample {
        let line = format!(
            r#"{{"run_id":"r","study":"{}","probe":"{}","image_tag":"","image_id":"","tasks":{},"repeat":{},"position":{},"cpus_requested":"0","cpus_pinned":"0","workers":1,"env":{{}},"args":[],"baseline_rss_bytes":null,"rss_bytes":[],"rss_median_bytes":null,"per_task_bytes":null,"vm_hwm_bytes":null,"rss_anon_bytes":null,"rss_file_bytes":null,"threads":null,"completed":null,"expected":0,"valid":true,"error":null,"stderr_tail":"","metrics":{{}},"timings":{{}},"started_at":"","exit_code":0,"oom_killed":false}}"#,
            study.id, study.probes[c.probe].id, c.tasks, c.repeat, c.position
        );
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn a_lost_host_leaves_its_unmeasured_cells_in_run_order() {
        let study = Study::default_study();
        let plan = plan::matrix(&study);
        assert!(plan.len() > 3);
        let measured: Vec<Sample> = plan[..2].iter().map(|c| sample(&study, c)).collect();
        let left = unmeasured(&study, &measured);
        assert_eq!(
            left,
            plan[2..].to_vec(),
            "the first left is the one in flight"
        );
        assert!(
            unmeasured(
                &study,
                &plan.iter().map(|c| sample(&study, c)).collect::<Vec<_>>()
            )
            .is_empty()
        );
        let name = cell_name(&study, &plan[2]);
        assert!(name.starts_with(&study.probes[plan[2].probe].id), "{name}");
        assert!(name.ends_with(&format!("#{}", plan[2].repeat)), "{name}");
    }

    #[test]
    fn the_reason_says_whether_the_host_still_answers() {
        let e = anyhow::anyhow!("connection refused").context("starting container");
        let gone = lost_reason("b", false, &e);
        assert!(
            gone.starts_with("host `b` stopped answering: starting container"),
            "{gone}"
        );
        assert!(gone.contains("connection refused"), "{gone}");
        assert!(lost_reason("b", true, &e).contains("stopped the run"));
    }

    #[test]
    fn host_names_become_plain_folder_names() {
        assert_eq!(folder_name("local"), "local");
        assert_eq!(folder_name("tcp://127.0.0.1:2376"), "tcp___127.0.0.1_2376");
        assert_eq!(folder_name(".."), "_");
        assert_eq!(folder_name("a/../b"), "a_.._b");
    }

    #[test]
    fn the_record_round_trips_without_key_material() {
        let r = FleetRecord {
            mode: Mode::Spread,
            images: "ship".into(),
            coordinator: "c".into(),
            hosts: vec![HostRecord {
                name: "b".into(),
                folder: "b".into(),
                address: "tcp://10.0.0.2:2376".into(),
                class: "X".into(),
                plain_tcp: false,
                boot_id: "id".into(),
                engine: String::new(),
                shard: Some(Shard { index: 1, count: 2 }),
                status: HostStatus::Lost,
                reason: Some("host `b` stopped answering: gone".into()),
                lost: vec!["go@10#1".into()],
                engines: vec!["b".into()],
                warnings: vec![],
                placement: vec![],
            }],
        };
        let json = serde_json::to_string_pretty(&r).unwrap();
        assert!(json.contains("\"status\": \"lost\"") && json.contains("\"mode\": \"spread\""));
        assert_eq!(serde_json::from_str::<FleetRecord>(&json).unwrap(), r);
    }
}
