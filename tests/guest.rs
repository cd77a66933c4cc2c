//! Guest kernels against the real Engine: the Debian kernel boots in a VM with a probe image's own
//! filesystem and measures 10k tasks; bad kernel names and a guest without enough memory are
//! refused or recorded with their reasons. (The WSL-like kernel's compile is `just bench-kernels`.)

mod common;

use common::*;

/// One probe (Go), `tasks` tasks, one process, under `--kernel debian-6.1`.
fn guest_study(id: &str, tasks: &str, extra_protocol: &str) -> String {
    small_study(id, tasks, 1, "0-1", 200, "")
        .replacen(
            "  timeout_s: 120\n",
            &format!("  timeout_s: 120\n{extra_protocol}"),
            1,
        )
        .split("  - id: rust-tokio")
        .next()
        .unwrap()
        .to_string()
}

/// `parkbench run --cpus auto --kernel KERNEL` of `yaml` with results in `tmp`.
fn run_under(tmp: &std::path::Path, kernel: &str, yaml: &str) -> std::process::Output {
    let study = write_study(tmp, "s.yaml", yaml);
    parkbench()
        .args(["run", "--cpus", "auto", "--kernel", kernel, "--results"])
        .arg(tmp)
        .arg(&study)
        .output()
        .unwrap()
}

#[test]
fn the_debian_kernel_boots_a_probe_image_and_measures_10k_tasks() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let out = run_under(tmp.path(), "debian-6.1", &guest_study("guest", "10000", ""));
    assert!(out.status.success(), "{}", describe(&out));
    let run = only_run(tmp.path(), "guest");
    let samples = samples(&run);
    assert_eq!(samples.len(), 1);
    let s = &samples[0];
    assert_eq!(s["valid"], true, "{s}");
    assert_eq!(s["completed"], 10000, "{s}");
    let g = &s["guest"];
    assert_eq!(g["kernel"], "debian-6.1", "{s}");
    assert!(
        g["release"].as_str().unwrap().starts_with("6.1.0-57-amd64"),
        "{s}"
    );
    assert!(
        ["kvm", "tcg"].contains(&g["accel"].as_str().unwrap()),
        "{s}"
    );
    assert_eq!(g["vcpus"], 2, "one vCPU per pinned CPU: {s}");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let k = &state["guests"][0];
    assert_eq!(k["name"], "debian-6.1");
    assert_eq!(k["release"], g["release"]);
    assert_eq!(k["config_sha256"].as_str().unwrap().len(), 64);
    assert!(
        state["deviations"].as_array().unwrap().iter().any(|d| d
            .as_str()
            .unwrap()
            .contains("probes under debian-6.1 ran in a QEMU VM")),
        "{state}"
    );
}

#[test]
fn a_guest_without_enough_memory_is_an_invalid_sample_with_the_reason() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    // 256 MiB cannot even hold the unpacked image: the guest dies before the probe reports.
    let yaml = guest_study("tight", "10000", "  guest_memory_mib: 256\n");
    let out = run_under(tmp.path(), "debian-6.1", &yaml);
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let s = &samples(&only_run(tmp.path(), "tight"))[0];
    assert_eq!(s["valid"], false, "{s}");
    let error = s["error"].as_str().unwrap();
    assert!(
        error.contains("memory") || error.contains("console"),
        "names the guest's memory or shows its console: {error}"
    );
}

#[test]
fn an_unknown_kernel_is_refused_with_the_known_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run_under(
        tmp.path(),
        "debian-5.10",
        &guest_study("nokernel", "1000", ""),
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("unknown kernel \"debian-5.10\"")
            && err.contains("debian-6.1")
            && err.contains("wsl-like"),
        "{err}"
    );
    assert!(!tmp.path().join("nokernel").exists(), "nothing is written");
}
