//! Podman as an Engine, against a real `podman system service` (rootful, its own storage and
//! socket): the default study's images built there from the same pins, offline, and measured
//! there beside this machine's Docker Engine in one run (`--hosts local,podman --across`); the
//! same binaries, the same findings, the same confinement, and nothing left behind.

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::podman::PodmanService;
use common::*;
use parkbench::engine::{Containers, Endpoint, Engine};
use serde_json::Value;

fn json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// What the host's kernel shows of a probe's first process on Podman, read while it runs: its
/// `/proc/<pid>/status` and `/proc/<pid>/mounts`.
async fn running_on_podman(engine: &Engine, run: &mut Child, log: &Path) -> (String, String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(1800);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no probe seen running on Podman in 30 minutes:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        for id in engine
            .containers_with_label("parkbench.study", "wait-1m")
            .await
            .unwrap()
        {
            if let Ok((_, Some(pid))) = engine.isolation(&id).await {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status"));
                let mounts = std::fs::read_to_string(format!("/proc/{pid}/mounts"));
                if let (Ok(status), Ok(mounts)) = (status, mounts) {
                    return (status, mounts);
                }
            }
        }
        if let Some(status) = run.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before a probe was seen running on Podman:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The mount options of `point` in a `/proc/<pid>/mounts`.
fn mount_options(mounts: &str, point: &str) -> Vec<String> {
    let line = mounts
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(point))
        .unwrap_or_else(|| panic!("no mount at {point}:\n{mounts}"));
    let options = line.split_whitespace().nth(3).unwrap();
    options.split(',').map(str::to_owned).collect()
}

/// The sha256 of every binary of `image` in a manifest.
fn binaries(manifest: &Value, image: &str) -> Value {
    let images = manifest["images"].as_array().unwrap();
    let entry = images.iter().find(|i| i["name"] == image);
    entry.unwrap_or_else(|| panic!("no {image} in {manifest}"))["binaries"].clone()
}

/// A `parkbench run` that is interrupted (as Ctrl-C does: it removes its container) and waited for
/// when the test ends early, so that it never goes on measuring after the test.
struct Stopped(Option<Child>);

impl Stopped {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take()
            && child.try_wait().ok().flatten().is_none()
        {
            // SAFETY: kill(2) of the driver's own process; no memory is shared.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGINT);
            }
            let _ = child.wait();
        }
    }
}

/// Podman's uploads of imported root filesystems in `/var/tmp`, where it leaves them by default.
fn uploads() -> usize {
    let names = std::fs::read_dir("/var/tmp")
        .into_iter()
        .flatten()
        .flatten();
    let names = names.map(|e| e.file_name().to_string_lossy().into_owned());
    names.filter(|n| n.starts_with("api_load.tar")).count()
}

#[test]
fn the_default_study_on_podman_beside_the_docker_engine_finds_the_same() {
    let _lease = leasing_local();
    ensure_built();
    let uploads_before = uploads();
    let podman = PodmanService::start();
    let tmp = tempfile::tempdir().unwrap();
    // `podman` names the service's own socket here (without it: Podman's systemd socket).
    let config = tmp.path().join("config");
    std::fs::create_dir_all(config.join("parkbench")).unwrap();
    std::fs::write(
        config.join("parkbench/hosts.yaml"),
        format!("hosts:\n  podman: {{url: \"{}\"}}\n", podman.url),
    )
    .unwrap();

    let doctor = parkbench()
        .env("XDG_CONFIG_HOME", &config)
        .args(["doctor", "--hosts", "podman"])
        .output()
        .unwrap();
    assert!(
        text(&doctor.stdout).contains("Podman Engine "),
        "doctor names the Engine: {}",
        describe(&doctor)
    );

    let log = tmp.path().join("run.log");
    let results = tmp.path().join("results");
    let run = Invocation::run(&results, "results/wait-1m/study.yaml")
        .env("XDG_CONFIG_HOME", &config)
        .args(["--hosts", "local,podman"])
        .args(["--across", "--images", "build", "--repeats", "1"])
        .cpus("auto")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn();
    let mut run = Stopped(Some(run));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (status, mounts) = rt.block_on(async {
        let endpoint = Endpoint::from_url(&podman.url, None).unwrap();
        let engine = Engine::connect_to("podman", &endpoint).await.unwrap();
        running_on_podman(&engine, run.child(), &log).await
    });
    let ended = run.child().wait().unwrap();
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        ended.success(),
        "{ended}: {said}\npodman:\n{}",
        podman.log()
    );

    // Confined as on the Docker Engine, as the host's kernel sees the probe's first process.
    for uid in status_line(&status, "Uid").split_whitespace() {
        assert_eq!(uid, "65534", "real, effective, saved and fs uid: {status}");
    }
    for caps in ["CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(status_line(&status, caps), "0000000000000000", "{caps}");
    }
    assert_eq!(status_line(&status, "NoNewPrivs"), "1");
    assert_eq!(status_line(&status, "Seccomp"), "2", "a seccomp filter");
    assert!(
        mount_options(&mounts, "/").contains(&"ro".into()),
        "{mounts}"
    );
    for point in ["/run", "/var/tmp"] {
        let options = mount_options(&mounts, point);
        assert!(options.contains(&"ro".into()), "{point}: {options:?}");
    }
    let tmp_options = mount_options(&mounts, "/tmp");
    assert!(tmp_options.contains(&"noexec".into()), "{tmp_options:?}");
    let writable: Vec<&str> = mounts
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(3)
                .is_some_and(|o| o.starts_with("rw"))
        })
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|p| !p.starts_with("/proc") && !p.starts_with("/sys") && !p.starts_with("/dev"))
        .collect();
    assert_eq!(writable, ["/tmp"], "the one writable place:\n{mounts}");

    // Each host's record names its Engine, and Podman's images hold the same binaries.
    let top = only_run(&results, "wait-1m");
    let fleet = json(&top.join("fleet.json"));
    let folder = |name: &str| {
        let hosts = fleet["hosts"].as_array().unwrap();
        let host = hosts.iter().find(|h| h["name"] == name).unwrap();
        top.join("hosts").join(host["folder"].as_str().unwrap())
    };
    let (local, on_podman) = (folder("local"), folder("podman"));
    assert_eq!(
        json(&local.join("env.json"))["engine"]["product"],
        "Docker Engine"
    );
    let podman_env = json(&on_podman.join("env.json"));
    assert_eq!(podman_env["engine"]["product"], "Podman Engine");
    assert!(
        podman_env["container"]["limits"]
            .as_str()
            .unwrap()
            .contains("nofile"),
        "{}",
        podman_env["container"]
    );
    let (a, b) = (
        json(&local.join("manifest.json")),
        json(&on_podman.join("manifest.json")),
    );
    for image in ["go", "rust-tokio"] {
        let ours = binaries(&a, image);
        assert!(!ours.as_object().unwrap().is_empty(), "{image}: {ours}");
        assert_eq!(
            ours,
            binaries(&b, image),
            "{image}'s binaries on both Engines"
        );
    }
    let report = std::fs::read_to_string(top.join("report.md")).unwrap();
    assert!(report.contains("Podman Engine "), "{report}");

    // Every claim has the same finding on both Engines.
    let classes = json(&top.join("classes.json"));
    let per_host = classes["hosts"].as_array().unwrap();
    let verdicts = |name: &str| -> Vec<Value> {
        let host = per_host.iter().find(|h| h["host"] == name).unwrap();
        host["verdicts"].as_array().unwrap().clone()
    };
    let (on_docker, on_podman) = (verdicts("local"), verdicts("podman"));
    assert_eq!(on_docker.len(), on_podman.len());
    assert!(!on_docker.is_empty());
    for (d, p) in on_docker.iter().zip(&on_podman) {
        assert_eq!(d["claim"], p["claim"]);
        assert_eq!(
            d["status"], p["status"],
            "{}: {} on the Docker Engine, {} on Podman",
            d["claim"], d["measured"], p["measured"]
        );
    }
    assert!(!report.contains("2 of 1 processes"), "{report}");

    // A process isolated by process: the container kept up for its cell, attached to, serves them.
    let served = tmp.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let study = write_study(
        &served,
        "s.yaml",
        &small_study("served", "10000", 2, "0", 100, ""),
    );
    let out = Invocation::run(&served, &study)
        .env("XDG_CONFIG_HOME", &config)
        .env("PARKBENCH_ISOLATION", "process")
        .args(["--hosts", "podman", "--images", "build"])
        .cpus("auto")
        .output();
    assert!(
        out.status.success(),
        "{}\npodman:\n{}",
        describe(&out),
        podman.log()
    );
    let samples = samples(&only_run(&served, "served"));
    assert_eq!(samples.len(), 4, "{samples:?}");
    for s in &samples {
        assert_eq!(
            (&s["valid"], &s["isolation"]),
            (&true.into(), &"process".into()),
            "{s}"
        );
    }

    // Nothing of the run is left on Podman, nor of the service on this machine once it stops.
    assert_eq!(podman.containers(), Vec::<String>::new());
    let folder = podman.folder().to_owned();
    drop(podman);
    assert!(!folder.exists(), "{} is left", folder.display());
    assert_eq!(
        uploads(),
        uploads_before,
        "Podman's uploads stay in its own TMPDIR"
    );
}
