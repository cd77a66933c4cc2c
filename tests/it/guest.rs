//! Guest kernels against the real Engine: the Debian kernel boots in a VM with a probe image's own
//! filesystem, from its virtio disk and (`PARKBENCH_GUEST_ROOT=initramfs`) as the initramfs, and
//! measures 10k tasks; bad kernel names and a guest without enough memory are refused or recorded
//! with their reasons. (The WSL-like kernel's compile is `just bench-kernels`.)

use crate::common;

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
    run_with_root(tmp, kernel, yaml, None)
}

/// [`run_under`] with `PARKBENCH_GUEST_ROOT` set to `root`.
fn run_with_root(
    tmp: &std::path::Path,
    kernel: &str,
    yaml: &str,
    root: Option<&str>,
) -> std::process::Output {
    let study = write_study(tmp, "s.yaml", yaml);
    let mut run = Invocation::run(tmp, &study)
        .cpus("auto")
        .args(["--kernel", kernel])
        .env_remove("PARKBENCH_GUEST_ROOT");
    if let Some(root) = root {
        run = run.env("PARKBENCH_GUEST_ROOT", root);
    }
    run.output()
}

/// One valid Go sample at 10k tasks under debian-6.1 booted with `root`, and the run's kernel
/// record.
fn debian_sample(root: Option<&str>) -> (serde_json::Value, serde_json::Value) {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    let yaml = guest_study("guest", "10000", "");
    let out = run_with_root(tmp.path(), "debian-6.1", &yaml, root);
    assert!(out.status.success(), "{}", describe(&out));
    let run = only_run(tmp.path(), "guest");
    let samples = samples(&run);
    assert_eq!(samples.len(), 1);
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    (samples[0].clone(), state)
}

#[test]
fn the_debian_kernel_boots_a_probe_image_from_its_disk_and_measures_10k_tasks() {
    let (s, state) = debian_sample(None);
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
    // The program's pages are file pages of the disk's filesystem, all in the page cache.
    assert!(s["rss_file_bytes"].as_u64().unwrap() > 0, "{s}");
    let k = &state["guests"][0];
    assert_eq!(k["root"], "disk", "{k}");
    let roots = k["roots"].as_object().unwrap();
    assert_eq!(roots["go"].as_str().unwrap().len(), 64, "{k}");
    assert!(roots.contains_key("(init and modules)"), "{k}");
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
fn the_debian_kernel_still_boots_the_whole_image_as_its_initramfs_when_asked() {
    let (s, state) = debian_sample(Some("initramfs"));
    assert_eq!(s["valid"], true, "{s}");
    assert_eq!(s["completed"], 10000, "{s}");
    let k = &state["guests"][0];
    assert_eq!(k["root"], "initramfs", "{k}");
    assert_eq!(k["roots"]["go"].as_str().unwrap().len(), 64, "{k}");
    assert!(k["roots"].get("(init and modules)").is_none(), "{k}");
}

#[test]
fn a_guest_without_enough_memory_is_an_invalid_sample_with_the_reason() {
    ensure_built();
    let tmp = tempfile::tempdir().unwrap();
    // 200k Go tasks need about 0.5 GiB: in 256 MiB the guest's OOM killer ends the probe (or the
    // guest dies) before it reports.
    let yaml = guest_study("tight", "200000", "  guest_memory_mib: 256\n");
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
