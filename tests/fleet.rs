//! `run --hosts` on real Engines: an extra `dockerd` of this machine (loopback, mutual TLS) beside
//! the machine's own. A tiny study `--across` both (every sample with its host and class, the
//! claims per host), `--spread` over both (each cell on exactly one host), and a host killed
//! mid-run (its cells lost, the run incomplete) finished by `--resume` on another host of its
//! class. The extra Engines are all this one machine: they share its CPUs and measure one after
//! another. Shards `1/2` + `2/2` merged against one unsharded run: tests/shard.rs.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::dockerd::ExtraEngine;
use common::*;
use parkbench::engine::Engine;

const CLAIMS: &str = "claims:
  - {id: go-rss, text: t, stat: rss_median, probe: go, tasks: 1000, expected: 5, unit: MiB, tolerance: {relative: 100}}
  - {id: ratio, text: t, stat: ratio, of: rss_median, probe: go, than: rust-tokio, tasks: 1000, expected: {above: 0}, unit: x}
";

fn storage_driver() -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let engine = Engine::connect().await.unwrap();
        engine.facts().await.unwrap().storage_driver
    })
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn study(dir: &Path, scales: &str) -> PathBuf {
    write_study(
        dir,
        "s.yaml",
        &(small_study("tiny", scales, 1, "0", 100, "") + CLAIMS),
    )
}

/// `parkbench run --hosts …` with the extra Engine's client certificates.
fn fleet_run(extra: &ExtraEngine, results: &Path) -> std::process::Command {
    let mut cmd = parkbench();
    cmd.env("DOCKER_CERT_PATH", &extra.certs)
        .args(["run", "--results"])
        .arg(results);
    cmd
}

fn cells(samples: &[serde_json::Value]) -> Vec<(String, u64)> {
    let mut out: Vec<_> = samples
        .iter()
        .map(|s| {
            (
                s["probe"].as_str().unwrap().to_string(),
                s["tasks"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn across_then_spread_over_an_extra_engine_and_this_one() {
    ensure_built();
    let extra = ExtraEngine::start(&storage_driver());
    let tmp = tempfile::tempdir().unwrap();
    let file = study(tmp.path(), "1000, 10000");
    let hosts = format!("{},local", extra.url);

    let results = tmp.path().join("across");
    let out = fleet_run(&extra, &results)
        .args(["--hosts", &hosts, "--across"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", describe(&out), extra.log());
    let err = text(&out.stderr);
    assert!(err.contains("image go shipped"), "{err}");
    let run = only_run(&results, "tiny");
    let all = samples(&run);
    assert_eq!(all.len(), 8, "4 cells on each of 2 hosts");
    let on = |h: &str| all.iter().filter(|s| s["host"] == h).count();
    assert_eq!((on(&extra.url), on("local")), (4, 4), "{all:?}");
    assert!(
        all.iter()
            .all(|s| s["hardware"].is_string() && s["valid"] == true)
    );
    assert_eq!(cells(&all).iter().collect::<BTreeSet<_>>().len(), 4);
    let fleet = json(&run.join("fleet.json"));
    assert_eq!(fleet["mode"], "across");
    let hosts_json = fleet["hosts"].as_array().unwrap();
    assert_eq!(hosts_json.len(), 2);
    assert!(hosts_json.iter().all(|h| h["status"] == "ok"), "{fleet}");
    assert!(
        !fleet.to_string().contains("key.pem"),
        "no key material: {fleet}"
    );
    let env = json(&run.join("env.json"));
    assert_eq!(
        env["hosts"].as_object().unwrap().len(),
        2,
        "a record per host"
    );
    assert_eq!(json(&run.join("run.json"))["status"], "complete");
    // One class here (the same machine twice): the claims judged per host too.
    let per_host = std::fs::read_to_string(run.join("classes.md")).unwrap();
    assert!(per_host.contains("on 2 of 2 hosts"), "{per_host}");
    assert!(
        run.join("hosts")
            .join("local")
            .join("samples.jsonl")
            .exists()
    );
    // One archive, without the sub-runs, checked and verified.
    let out = parkbench()
        .args(["archive", "--no-driver"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let archive = run.with_extension("tar.gz");
    for then in ["check", "verify"] {
        let out = parkbench().arg(then).arg(&archive).output().unwrap();
        assert!(out.status.success(), "{then}: {}", describe(&out));
    }

    // --spread: the images are there now; each cell on exactly one host, every cell measured.
    let results = tmp.path().join("spread");
    let out = fleet_run(&extra, &results)
        .args(["--hosts", &hosts, "--spread"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", describe(&out), extra.log());
    assert!(
        text(&out.stderr).contains("image go present"),
        "{}",
        describe(&out)
    );
    let run = only_run(&results, "tiny");
    let all = samples(&run);
    assert_eq!(all.len(), 4, "{all:?}");
    let each: BTreeSet<_> = cells(&all).into_iter().collect();
    assert_eq!(each.len(), 4, "each cell once: {all:?}");
    for h in [extra.url.as_str(), "local"] {
        assert_eq!(
            all.iter().filter(|s| s["host"] == h).count(),
            2,
            "{h}: {all:?}"
        );
    }
    let fleet = json(&run.join("fleet.json"));
    assert_eq!(fleet["hosts"][1]["shard"]["index"], 2);
    assert_eq!(json(&run.join("run.json"))["status"], "complete");
}

#[test]
fn a_host_killed_mid_run_loses_its_cells_and_resume_finishes_them_elsewhere() {
    ensure_built();
    let driver = storage_driver();
    let mut doomed = ExtraEngine::start(&driver);
    let tmp = tempfile::tempdir().unwrap();
    let file = study(tmp.path(), "1000, 10000, 20000");
    let results = tmp.path().join("results");
    let mut child = fleet_run(&doomed, &results)
        .args(["--hosts", &format!("{},local", doomed.url), "--across"])
        .arg(&file)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    // The extra Engine measures first; it dies once its first process is measured.
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.contains(" repeat=1 ") {
            doomed.kill();
            break;
        }
    }
    for line in lines {
        said.push_str(&line.unwrap());
        said.push('\n');
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "an incomplete run: {said}");
    let run = only_run(&results, "tiny");
    let resume = format!("parkbench run --resume {}", run.display());
    assert!(said.contains("LOST") && said.contains(&resume), "{said}");
    let fleet = json(&run.join("fleet.json"));
    let lost = &fleet["hosts"][0];
    assert_eq!(lost["status"], "lost", "{fleet}");
    assert!(!lost["lost"].as_array().unwrap().is_empty(), "{fleet}");
    assert_eq!(
        fleet["hosts"][1]["status"], "ok",
        "the other host went on: {fleet}"
    );
    assert_eq!(json(&run.join("run.json"))["status"], "incomplete");
    let all = samples(&run);
    let stopped: Vec<_> = all.iter().filter(|s| s["valid"] == false).collect();
    assert_eq!(stopped.len(), 1, "the process in flight: {all:?}");
    let why = stopped[0]["error"].as_str().unwrap();
    assert!(why.contains(&format!("host `{}`", doomed.url)), "{why}");
    assert_eq!(all.iter().filter(|s| s["host"] == "local").count(), 6);

    // Another Engine of its class finishes the lost cells.
    let spare = ExtraEngine::start(&driver);
    let out = fleet_run(&spare, &results)
        .arg("--resume")
        .arg(&run)
        .args(["--hosts", &spare.url])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "one invalid sample: {}",
        describe(&out)
    );
    let fleet = json(&run.join("fleet.json"));
    assert_eq!(fleet["hosts"][0]["status"], "ok", "{fleet}");
    let engines = fleet["hosts"][0]["engines"].as_array().unwrap();
    assert_eq!(engines.last().unwrap(), &spare.url.as_str(), "{fleet}");
    assert_eq!(json(&run.join("run.json"))["status"], "complete");
    let all = samples(&run);
    assert_eq!(all.len(), 12, "6 cells on each host: {all:?}");
    assert!(
        all.iter().any(|s| s["host"] == spare.url.as_str()),
        "{all:?}"
    );
    drop(doomed);
}

/// Containers on the Engine at `url` (`None`: this machine's) labelled as a process of run
/// `run_id`, and the leases there of the fleet run `top`.
fn left_behind(url: Option<(&str, &Path)>, run_id: &str, top: &str) -> (Vec<String>, Vec<String>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let engine = match url {
            None => Engine::connect().await.unwrap(),
            Some((url, certs)) => {
                let tls = parkbench::engine::TlsFiles::in_dir(certs);
                let endpoint = parkbench::engine::Endpoint::from_url(url, Some(tls)).unwrap();
                Engine::connect_to("extra", &endpoint).await.unwrap()
            }
        };
        let containers = engine
            .containers_with_label("parkbench.run", run_id)
            .await
            .unwrap();
        let leases = (engine.volumes_with_label("parkbench.lease").await.unwrap())
            .into_iter()
            .filter(|v| v.labels.get("parkbench.lease").map(String::as_str) == Some(top))
            .map(|v| v.name)
            .collect();
        (containers, leases)
    })
}

#[test]
fn ctrl_c_stops_every_host_releases_its_leases_and_the_same_hosts_finish_on_resume() {
    ensure_built();
    let extra = ExtraEngine::start(&storage_driver());
    let tmp = tempfile::tempdir().unwrap();
    let file = study(tmp.path(), "1000, 10000");
    let results = tmp.path().join("results");
    let mut child = fleet_run(&extra, &results)
        .args(["--hosts", &format!("{},local", extra.url)])
        .arg(&file)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.contains(" repeat=1 ") {
            // SAFETY: kill(2) on the child's own pid; no memory is shared.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            break;
        }
    }
    for line in lines {
        said.push_str(&line.unwrap());
        said.push('\n');
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{said}");
    let run = only_run(&results, "tiny");
    assert!(
        said.contains(&format!("parkbench run --resume {}", run.display())),
        "{said}"
    );
    let sub = |h: &str| {
        let dir = run.join("hosts").join(h.replace([':', '/'], "_"));
        dir.file_name().unwrap().to_string_lossy().into_owned()
    };
    let top = run.file_name().unwrap().to_string_lossy().into_owned();
    let on_extra = left_behind(Some((&extra.url, &extra.certs)), &sub(&extra.url), &top);
    assert_eq!(on_extra, (vec![], vec![]), "left on the extra Engine");
    assert_eq!(
        left_behind(None, "local", &top),
        (vec![], vec![]),
        "left on this one"
    );
    let before = samples(&run).len();
    assert!((1..8).contains(&before), "{before}: {said}");

    // Nothing lost: the same hosts go on.
    let out = fleet_run(&extra, &results)
        .arg("--resume")
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let all = samples(&run);
    assert_eq!(all.len(), 8, "{all:?}");
    assert!(all.iter().all(|s| s["valid"] == true), "{all:?}");
    assert_eq!(json(&run.join("run.json"))["status"], "complete");
}
