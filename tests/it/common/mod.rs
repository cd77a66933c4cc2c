//! Helpers for the integration tests: they drive the real binary against the real Engine.
#![allow(dead_code)]

pub mod archive;
pub mod dockerd;
pub mod invoke;
pub mod podman;

pub use invoke::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The parkbench binary, run from the repository, without the variables that stand for flags
/// (`PARKBENCH_CPUS`, `PARKBENCH_PINNED_DRIVER`) a shell running the tests may have set: each test
/// gives the flags it means.
pub fn parkbench() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_parkbench"));
    cmd.current_dir(repo())
        .env_remove("PARKBENCH_CPUS")
        .env_remove("PARKBENCH_PINNED_DRIVER");
    cmd
}

/// Holds the locks of `cpus` as another run on this machine would, under `holder`, until the lock
/// is dropped; waits first for the runs of other tests that hold them.
pub fn hold_cpus(cpus: &[usize], holder: &str) -> parkbench::run::cpu_lock::CpuLock {
    use parkbench::run::cpu_lock::{CpuLock, folder};
    let never = std::future::pending();
    let held = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(CpuLock::wait(&folder(), cpus, holder, never));
    held.unwrap().expect("never cancelled")
}

/// Builds every image once for all the tests (a no-op when they exist). A failed build fails every
/// test that needs it, each with the build's own error.
pub fn ensure_built() {
    static BUILD: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILD.get_or_init(|| {
        let out = parkbench()
            .arg("build")
            .output()
            .expect("running parkbench build");
        match out.status.success() {
            true => Ok(()),
            false => Err(text(&out.stderr)),
        }
    });
    if let Err(stderr) = built {
        panic!("parkbench build failed:\n{stderr}");
    }
}

/// Held by a test whose run leases this machine's Engine (a run across hosts naming `local`): a
/// second such run is refused while a lease is held, and each counts the containers of its
/// sub-run `local`, so those tests take turns; other tests run beside them.
pub fn leasing_local() -> std::sync::MutexGuard<'static, ()> {
    static LEASE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LEASE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The driver built in the pinned Rust toolchain image from this repository (`parkbench driver`, what
/// `just driver` writes), once for all the tests: reused when the Engine holds the image of the same
/// sources, compiled there otherwise.
pub fn pinned_driver() -> PathBuf {
    static DRIVER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = DRIVER.get_or_init(|| {
        let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pinned-driver/parkbench");
        let out = parkbench()
            .args(["driver", "--out"])
            .arg(&file)
            .output()
            .expect("running parkbench driver");
        match out.status.success() {
            true => Ok(file),
            false => Err(describe(&out)),
        }
    });
    match built {
        Ok(file) => file.clone(),
        Err(out) => panic!("parkbench driver failed:\n{out}"),
    }
}

/// The command quoted in `said` (between backticks) that ends with `ending`, split into words as a
/// shell splits them; its program is this parkbench, named as it runs from `from`.
pub fn quoted_command(said: &str, ending: &str, from: &Path) -> Vec<String> {
    let quoted = (said.split('`').skip(1).step_by(2))
        .find(|q| q.ends_with(ending))
        .unwrap_or_else(|| panic!("no `…{ending}` in: {said}"));
    let words = shlex::split(quoted).unwrap_or_else(|| panic!("not shell words: {quoted}"));
    assert_eq!(
        from.join(&words[0]).canonicalize().unwrap(),
        Path::new(env!("CARGO_BIN_EXE_parkbench"))
            .canonicalize()
            .unwrap(),
        "{said}"
    );
    words
}

/// Every tag of every image `engine` holds.
pub async fn all_tags(engine: &parkbench::engine::Engine) -> Vec<String> {
    let images = engine
        .image_list()
        .await
        .expect("listing the Engine's images");
    images.into_values().flatten().collect()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// Writes `yaml` as `s.yaml` into the results folder `results` and runs it there with `--cpus auto`.
pub fn run_study(results: &Path, yaml: &str) -> std::process::Output {
    let study = write_study(results, "s.yaml", yaml);
    Invocation::run(results, &study).cpus("auto").output()
}

/// Writes a study file into `dir` and returns its path.
pub fn write_study(dir: &Path, name: &str, yaml: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, yaml).unwrap();
    path
}

/// A small study of both probes: `scales`, `repeats`, `cpus`, optional extra args for the Go probe.
pub fn small_study(
    id: &str,
    scales: &str,
    repeats: u32,
    cpus: &str,
    settle_ms: u64,
    go_extra: &str,
) -> String {
    format!(
        r#"id: {id}
title: test study
source:
  article: test
  environment: test
  cpus: "{cpus}"
protocol:
  scales: [{scales}]
  repeats: {repeats}
  order: alternate
  cpus: "{cpus}"
  settle_ms: {settle_ms}
  samples: 5
  interval_ms: 50
  timeout_s: 120
probes:
  - id: go
    image: go
    args: ["--tasks", "{{tasks}}"{go_extra}]
    env: {{GOMAXPROCS: "{{workers}}", GOGC: "100"}}
  - id: rust-tokio
    image: rust-tokio
    args: ["--tasks", "{{tasks}}", "--workers", "{{workers}}"]
"#
    )
}

/// The only run directory under `results/<study>/runs/` (ignoring the `latest` link).
pub fn only_run(results: &Path, study: &str) -> PathBuf {
    let runs = results.join(study).join("runs");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.is_symlink())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "expected one run in {}: {dirs:?}",
        runs.display()
    );
    dirs.into_iter().next().unwrap()
}

/// Every sample of a run, as JSON values.
pub fn samples(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A `Key:\tvalue` line of a host process's `/proc/<pid>/status`.
pub fn status_line(status: &str, key: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} in {status}"))
        .trim()
        .to_string()
}
