//! `run --hosts` on real Engines: an extra `dockerd` of this machine (loopback, mutual TLS) beside
//! the machine's own. A tiny study `--across` both (every sample with its host and class, the
//! claims per host), `--spread` over both (each cell on exactly one host), and a host killed
//! mid-run (its cells lost, the run incomplete) finished by `--resume` on another host of its
//! class (exit code 5, not Ctrl-C's 130); a plain `tcp://` host refused before anything runs. The
//! extra Engines are all this one machine: they share its CPUs and measure one after another.
//! `bench_fleet` (ignored; `just bench-fleet`) prints issue 26's fleet targets. Shards `1/2` +
//! `2/2` merged against one unsharded run: tests/it/shard.rs.

use crate::common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::dockerd::ExtraEngine;
use common::*;
use parkbench::engine::{Containers, Engine};

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

/// `run` (a study, or `--resume`) with the extra Engine's client certificates, for `--hosts …`.
fn fleet_run(extra: &ExtraEngine, run: Invocation) -> Invocation {
    run.env("DOCKER_CERT_PATH", &extra.certs)
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
    let _lease = leasing_local();
    ensure_built();
    let extra = ExtraEngine::start(&storage_driver());
    let tmp = tempfile::tempdir().unwrap();
    let file = study(tmp.path(), "1000, 10000");
    let hosts = format!("{},local", extra.url);

    let results = tmp.path().join("across");
    let out = fleet_run(&extra, Invocation::run(&results, &file))
        .args(["--hosts", &hosts, "--across"])
        .output();
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

    // --spread: the images are there now; each cell on exactly one host, every cell measured. Each
    // process isolated by process: the kept containers are attached to over TLS too.
    let results = tmp.path().join("spread");
    let out = fleet_run(&extra, Invocation::run(&results, &file))
        .env("PARKBENCH_ISOLATION", "process")
        .args(["--hosts", &hosts, "--spread"])
        .output();
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
    assert!(
        all.iter()
            .all(|s| s["isolation"] == "process" && s["valid"] == true),
        "{all:?}"
    );
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
    let _lease = leasing_local();
    ensure_built();
    let driver = storage_driver();
    let mut doomed = ExtraEngine::start(&driver);
    let tmp = tempfile::tempdir().unwrap();
    let file = study(tmp.path(), "1000, 10000, 20000");
    let results = tmp.path().join("results");
    let mut child = fleet_run(&doomed, Invocation::run(&results, &file))
        .args(["--hosts", &format!("{},local", doomed.url), "--across"])
        .stderr(Stdio::piped())
        .spawn();
    let mut said = String::new();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    // The extra Engine measures first; it dies once its first process is measured.
    until_first_process(&mut lines, &mut said);
    doomed.kill();
    for line in lines {
        said.push_str(&line.unwrap());
        said.push('\n');
    }
    let status = child.wait().unwrap();
    // Its own exit code, not Ctrl-C's 130: a script tells "resume" from "the user stopped it".
    assert_eq!(status.code(), Some(5), "hosts lost: {said}");
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
    let out = fleet_run(&spare, Invocation::resume(&results, &run))
        .args(["--hosts", &spare.url])
        .output();
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
    let _lease = leasing_local();
    ensure_built();
    let extra = ExtraEngine::start(&storage_driver());
    let tmp = tempfile::tempdir().unwrap();
    let file = study(tmp.path(), "1000, 10000");
    let results = tmp.path().join("results");
    let mut child = fleet_run(&extra, Invocation::run(&results, &file))
        .args(["--hosts", &format!("{},local", extra.url)])
        .stderr(Stdio::piped())
        .spawn();
    let mut said = String::new();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    until_first_process(&mut lines, &mut said);
    // SAFETY: kill(2) on the child's own pid; no memory is shared.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
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
    fleet_run(&extra, Invocation::resume(&results, &run)).succeeds();
    let all = samples(&run);
    assert_eq!(all.len(), 8, "{all:?}");
    assert!(all.iter().all(|s| s["valid"] == true), "{all:?}");
    assert_eq!(json(&run.join("run.json"))["status"], "complete");
}

/// No run folder under `results` holds anything: the run never started.
fn nothing_run(results: &Path) {
    let runs = results.join("tiny").join("runs");
    let left: Vec<_> = match std::fs::read_dir(&runs) {
        Ok(dir) => dir.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    assert!(left.is_empty(), "nothing should have run: {left:?}");
}

#[test]
fn a_plain_tcp_host_is_refused_before_anything_runs_unless_allowed() {
    let _lease = leasing_local();
    // The extra Engine listens with TLS only; named without TLS files it is plain TCP.
    let extra = ExtraEngine::start(&storage_driver());
    let tmp = tempfile::tempdir().unwrap();
    let file = study(tmp.path(), "1000");
    let results = tmp.path().join("results");
    let plain = |extra_args: &[&str]| {
        Invocation::run(&results, &file)
            .env_remove("DOCKER_CERT_PATH")
            .args(["--hosts", &format!("local,{}", extra.url)])
            .args(extra_args)
            .output()
    };
    let out = plain(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    for part in [
        format!("host `{}`", extra.url),
        "plain TCP".into(),
        "--allow-plain-tcp".into(),
        "DOCKER_CERT_PATH".into(),
    ] {
        assert!(err.contains(&part), "{part} missing: {err}");
    }
    nothing_run(&results);

    // Allowed, the Engine still wants TLS: it does not answer plain HTTP, and the run stops
    // before anything runs, naming it.
    let out = plain(&["--allow-plain-tcp"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(err.contains(&extra.url), "{err}");
    nothing_run(&results);
}

/// One timed invocation of `parkbench run` in a benchmark.
struct Timed {
    run: PathBuf,
    /// The whole command: the survey, leases and image placing included.
    wall_s: f64,
    /// The measuring loops alone (summed over the hosts), from its `kit overhead:` line.
    loop_s: f64,
    /// The probe processes' own lifetimes, from the same line.
    probe_s: f64,
    processes: usize,
}

impl Timed {
    /// Milliseconds of overhead per process: of the whole command, and of the measuring loops.
    fn per_process_ms(&self) -> (f64, f64) {
        let n = self.processes.max(1) as f64;
        (
            (self.wall_s - self.probe_s) * 1e3 / n,
            (self.loop_s - self.probe_s) * 1e3 / n,
        )
    }
}

/// Runs `file` with `args` into a fresh results folder under `dir`; invalid samples (exit 3) are
/// still timed.
fn timed_run(dir: &Path, file: &Path, label: &str, args: &[&str]) -> Timed {
    let results = dir.join(label);
    let started = std::time::Instant::now();
    let out = Invocation::run(&results, file)
        .cpus("auto")
        .args(args)
        .output();
    let wall_s = started.elapsed().as_secs_f64();
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{label}: {}",
        describe(&out)
    );
    let err = text(&out.stderr);
    let line = (err.lines().rev())
        .find_map(|l| l.strip_prefix("kit overhead: "))
        .unwrap_or_else(|| panic!("{label}: no kit overhead line: {err}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let run = std::fs::canonicalize(results.join("tasks-vs-threads/runs/latest")).unwrap();
    Timed {
        loop_s: words[0].parse().unwrap(),
        probe_s: words[4].parse().unwrap(),
        processes: samples(&run).len(),
        run,
        wall_s,
    }
}

/// Each claim's verdict (`claim` → status) in a list of verdicts.
fn verdicts(list: &serde_json::Value) -> Vec<(String, String)> {
    (list.as_array().unwrap().iter())
        .map(|v| {
            let status = v["status"].as_str().unwrap().to_string();
            (v["claim"].as_str().unwrap().to_string(), status)
        })
        .collect()
}

/// `just bench-fleet`: issue 26's targets for runs across hosts, on this machine's Engine and two
/// extra ones: the kit's overhead per process with three hosts against one, and a study `--across`
/// the three against a plain local run, claim by claim.
#[test]
#[ignore]
fn bench_fleet() {
    ensure_built();
    let driver = storage_driver();
    let extra = [ExtraEngine::start(&driver), ExtraEngine::start(&driver)];
    let tmp = tempfile::tempdir().unwrap();
    let study =
        std::fs::read_to_string(repo().join("results/tasks-vs-threads/study.yaml")).unwrap();
    let file = write_study(tmp.path(), "study.yaml", &study);
    // Each extra Engine has its own CA: a hosts file beside the study names both.
    let mut hosts = String::from("hosts:\n");
    for (i, e) in extra.iter().enumerate() {
        hosts += &format!(
            "  e{}:\n    url: {}\n    tls: {}\n",
            i + 1,
            e.url,
            e.certs.display()
        );
    }
    std::fs::write(tmp.path().join("hosts.yaml"), hosts).unwrap();
    println!(
        "The two extra Engines are dockerds on this machine: the three hosts share its CPUs and \
         measure one after another, never at once."
    );

    println!("\n(a) kit overhead per process, results/tasks-vs-threads: one host against three");
    println!(
        "{:<5} {:<28} {:>7} {:>8} {:>8} {:>6} {:>14} {:>14}",
        "round", "hosts", "wall_s", "loops_s", "probe_s", "procs", "ms/proc(all)", "ms/proc(loops)"
    );
    let (mut one, mut three) = (Vec::new(), Vec::new());
    for round in 1..=2 {
        let order: [bool; 2] = if round == 1 {
            [false, true]
        } else {
            [true, false]
        };
        for spread in order {
            let (label, args): (_, &[&str]) = match spread {
                false => ("local", &["--hosts", "local"]),
                true => (
                    "local,e1,e2 --spread",
                    &["--hosts", "local,e1,e2", "--spread"],
                ),
            };
            let t = timed_run(tmp.path(), &file, &format!("r{round}-{spread}"), args);
            let (all, loops) = t.per_process_ms();
            println!(
                "{round:<5} {label:<28} {:>7.1} {:>8.1} {:>8.1} {:>6} {all:>14.0} {loops:>14.0}",
                t.wall_s, t.loop_s, t.probe_s, t.processes
            );
            match spread {
                false => one.push(t.per_process_ms()),
                true => three.push(t.per_process_ms()),
            }
        }
    }
    let mean =
        |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    for (what, f) in [
        (
            "the whole command (survey, leases, images placed)",
            (|p: &(f64, f64)| p.0) as fn(&_) -> f64,
        ),
        ("the measuring loops alone", |p: &(f64, f64)| p.1),
    ] {
        let (a, b) = (mean(&one, f), mean(&three, f));
        println!(
            "mean ms of overhead per process, {what}: one host {a:.0}, three hosts {b:.0}: \
             {:+.0} ms (target: at most 50 ms above one host's)",
            b - a
        );
    }
    println!(
        "(the first three-host run shipped the images to the two new Engines: its whole-command \
         figure holds that)"
    );

    println!("\n(b) results/tasks-vs-threads --across local,e1,e2 against a plain local run");
    let local = timed_run(tmp.path(), &file, "plain", &[]);
    let across = timed_run(
        tmp.path(),
        &file,
        "across",
        &["--hosts", "local,e1,e2", "--across"],
    );
    for run in [&local.run, &across.run] {
        let out = parkbench().arg("report").arg(run).output().unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 3)),
            "report: {}",
            describe(&out)
        );
    }
    let plain = verdicts(&json(&local.run.join("verdicts.json"))["verdicts"]);
    let classes = json(&across.run.join("classes.json"));
    let per_host = classes["hosts"].as_array().unwrap();
    assert_eq!(per_host.len(), 3, "every host judged alone: {classes}");
    let hosts: Vec<Vec<(String, String)>> =
        per_host.iter().map(|h| verdicts(&h["verdicts"])).collect();
    let names: Vec<&str> = per_host
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    let head: String = names.iter().map(|n| format!(" {n:<14}")).collect();
    println!("{:<28} {:<14}{head}", "claim", "local run");
    let mut same = vec![0; hosts.len()];
    for (claim, want) in &plain {
        let mut row = format!("{claim:<28} {want:<14}");
        for (j, list) in hosts.iter().enumerate() {
            let got = (list.iter().find(|(c, _)| c == claim)).map_or("absent", |(_, s)| s);
            same[j] += usize::from(got == want);
            let mark = if got == want { "=" } else { "≠" };
            row += &format!(" {:<14}", format!("{got} {mark}"));
        }
        println!("{row}");
    }
    println!(
        "(columns after the first: host as named in --hosts; = the local run's verdict, ≠ another)"
    );
    let summary: Vec<String> = (names.iter().zip(&same))
        .map(|(h, n)| format!("{h} {n}"))
        .collect();
    println!(
        "same verdicts: {} of {} claims on each host ({})",
        same.iter().min().unwrap(),
        plain.len(),
        summary.join(", ")
    );
    println!(
        "the across run took {:.0} s for 3 hosts one after another; the plain run {:.0} s",
        across.wall_s, local.wall_s
    );
}

/// Reads a run's stderr into `said` until its first process is measured (or the stream ends).
fn until_first_process(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    said: &mut String,
) {
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.contains(" repeat=1 ") {
            return;
        }
    }
}
