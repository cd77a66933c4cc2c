//! The run loop with its probes in VMs under a guest kernel, on a scripted Engine: the VM's
//! container, what its console says when the sampler printed nothing, Engine errors, kernels not
//! made ready and times under an emulated CPU.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use super::loop_tests::{assert_halted_at_second, manifest, new_run, samples, study_with};
use super::*;
use crate::engine::fake::{FakeEngine, Step, sampler_json};
use crate::run::guest::{GuestKernel, Prepared, Root, RootFile, Way};
use crate::study::kernel::Accel;

const KERNEL: &str = "debian-6.1";

/// Two probes at one scale, two repeats, both under the guest kernel.
fn study() -> Study {
    study_with("2").under_kernels(&[KERNEL.into()]).unwrap()
}

/// The kernel made ready (booted under `accel`) and a root for each probe image.
fn guests(accel: Accel) -> Guests {
    let record = GuestKernel {
        name: KERNEL.into(),
        image: format!("parkbench/kernel-{KERNEL}:test"),
        vmlinuz_sha256: "a".repeat(64),
        config_sha256: "b".repeat(64),
        release: "6.1.0-57-amd64".into(),
        thp: "always".into(),
        accel,
        accel_note: String::new(),
        memory_mib: 1024,
        boot_ms: 900.0,
        notes: Vec::new(),
        root: Way::Initramfs,
        roots: BTreeMap::new(),
    };
    let kernel = Prepared {
        record,
        file: PathBuf::from("/cache/guest/vmlinuz"),
        boot: None,
    };
    let root = |image: &str| {
        let root = Root {
            initramfs: Some(RootFile {
                file: PathBuf::from(format!("/cache/guest/root-{image}.cpio")),
                sha256: "c".repeat(64),
                bytes: 1 << 20,
                initramfs_bytes: 1 << 20,
            }),
            disk: None,
            env: vec!["PATH=/usr/bin:/bin".into()],
        };
        (image.to_string(), root)
    };
    Guests {
        kernels: BTreeMap::from([(KERNEL.to_string(), kernel)]),
        roots: BTreeMap::from([root("go"), root("rust-tokio")]),
        vm_tag: "parkbench/vm:test".into(),
    }
}

/// The console of a guest whose sampler printed `sampler` and exited with `code`.
fn console(sampler: &str, code: i64) -> Step {
    let guest = r#"parkbench-guest {"kernel_release":"6.1.0-57-amd64","thp":"always","cpus":1,"memory_kib":1000000}"#;
    Step::Exit {
        code: 0,
        stdout: format!("{guest}\r\n{sampler}\r\nparkbench-guest-exit {code}\r\n"),
        stderr: String::new(),
    }
}

/// A guest whose sampler measured every task.
fn valid() -> Step {
    console(&sampler_json(1000), 0)
}

/// Measures the run in `dir` on `engine` with `guests`.
async fn execute(
    engine: &FakeEngine,
    study: &Study,
    guests: &Guests,
    dir: &RunDir,
    cancel: &CancellationToken,
) -> Result<RunResult> {
    let run = Run::new(dir.clone(), dir.load_state()?, study, &manifest())?;
    run.measure(engine, guests, cancel).await
}

#[tokio::test]
async fn a_guest_process_runs_in_the_vm_image_and_its_sample_carries_the_guest() {
    let study = study();
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([valid(), valid(), valid(), valid()]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &guests(Accel::Kvm), &dir, &cancel)
        .await
        .unwrap();
    assert_eq!((result.measured, result.invalid), (4, 0));
    let spec = &engine.runs()[0];
    assert_eq!(spec.image, "parkbench/vm:test", "QEMU's container");
    assert_eq!(spec.labels["parkbench.probe"], "go");
    assert_eq!(spec.devices, ["/dev/kvm"]);
    assert!(spec.seccomp.is_none());
    let got = samples(&dir);
    assert!(got.iter().all(|s| s.valid), "{:?}", got[0]);
    let guest = got[0].guest.as_ref().expect("the sample's guest part");
    assert_eq!(
        (guest.kernel.as_str(), guest.release.as_str(), guest.accel),
        (KERNEL, "6.1.0-57-amd64", Accel::Kvm)
    );
    assert_eq!(got[0].image_tag, "parkbench/go:test", "the probe's image");
    assert!(engine.live().is_empty(), "every container is removed");
}

#[tokio::test]
async fn a_vm_without_a_sample_line_is_an_invalid_sample_with_the_console_as_reason() {
    let study = study();
    let (_tmp, dir) = new_run(&study);
    let panic = Step::Exit {
        code: 0,
        stdout: "[    0.5] Kernel panic - not syncing: VFS: Unable to mount root fs\r\n".into(),
        stderr: String::new(),
    };
    let engine = FakeEngine::new([console("", 2), panic, valid(), valid()]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &guests(Accel::Kvm), &dir, &cancel)
        .await
        .unwrap();
    assert_eq!((result.measured, result.invalid), (4, 2), "the run goes on");
    let got = samples(&dir);
    let error = got[0].error.as_deref().unwrap_or_default();
    assert!(!got[0].valid, "{:?}", got[0]);
    assert!(
        error.contains("printed no JSON") && error.contains("the guest's console: "),
        "{error}"
    );
    assert_eq!(got[0].exit_code, Some(2), "the sampler's status, from init");
    let error = got[1].error.as_deref().unwrap_or_default();
    assert!(error.contains("Kernel panic"), "{error}");
    assert!(got[2].valid && got[3].valid);
    assert_eq!(dir.load_state().unwrap().status, Status::Complete);
}

#[tokio::test]
async fn an_engine_error_in_a_vm_stops_the_run_and_keeps_the_samples() {
    let study = study();
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([valid(), Step::EngineError("the Engine went away".into())]);
    let cancel = CancellationToken::new();
    let err = execute(&engine, &study, &guests(Accel::Kvm), &dir, &cancel)
        .await
        .err()
        .expect("an Engine error stops the run");
    assert_halted_at_second(&err, &dir, &engine);
}

#[tokio::test]
async fn a_kernel_not_made_ready_stops_the_run_before_any_vm() {
    let study = study();
    let (_tmp, dir) = new_run(&study);
    let mut guests = guests(Accel::Kvm);
    guests.kernels.clear();
    let engine = FakeEngine::new([]);
    let err = execute(&engine, &study, &guests, &dir, &CancellationToken::new())
        .await
        .err()
        .expect("a kernel not prepared stops the run");
    let err = format!("{err:#}");
    assert!(
        err.contains("kernel debian-6.1 or the guest root of go was not prepared"),
        "{err}"
    );
    assert!(engine.runs().is_empty());
    assert_eq!(dir.load_state().unwrap().status, Status::Incomplete);
}

#[tokio::test]
async fn times_under_an_emulated_cpu_are_not_measured_and_start_no_vm() {
    let mut study = study();
    study.probes[0].kind = crate::study::Kind::Timed;
    let (_tmp, dir) = new_run(&study);
    let engine = FakeEngine::new([valid(), valid()]);
    let cancel = CancellationToken::new();
    let result = execute(&engine, &study, &guests(Accel::Tcg), &dir, &cancel)
        .await
        .unwrap();
    assert_eq!((result.measured, result.invalid), (4, 2));
    let got = samples(&dir);
    let go: Vec<_> = got.iter().filter(|s| s.probe == "go").collect();
    assert!(
        go.iter().all(|s| s
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("not timed under TCG"))),
        "{go:?}"
    );
    let ran: Vec<_> = engine
        .runs()
        .iter()
        .map(|s| s.labels["parkbench.probe"].clone())
        .collect();
    assert_eq!(
        ran,
        ["rust-tokio", "rust-tokio"],
        "only the memory probe ran"
    );
}
