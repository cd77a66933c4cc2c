//! The driver an archive carries, used as a reviewer with nothing installed would: a real small run
//! is archived by the self-contained driver built in the pinned toolchain image (what `just driver`
//! writes when the Engine can build it), the archive is unpacked, and its own `parkbench` runs
//! `check` and `verify` in a container of the kit's base image — which has neither Rust nor Docker
//! — as `nobody`, with no network and the archives mounted read-only. A flipped byte is caught by
//! that same driver, and a development build's archive carries none.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::archive::{tar, unpack};
use common::*;
use parkbench::engine::{ContainerOutcome, ContainerSpec, Containers, Engine, Mount};
use tokio_util::sync::CancellationToken;

/// Runs `cmd` in a fresh container of `image` as nobody, with `dir` mounted read-only at `/a`.
fn in_base(image: &str, dir: &Path, cmd: &[&str]) -> ContainerOutcome {
    let mut spec = ContainerSpec::command(image, cmd, "driver-test");
    spec.user = Some("65534:65534".into());
    spec.mounts = vec![Mount {
        host: dir.to_owned(),
        container: "/a".into(),
    }];
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let engine = Engine::connect().await.unwrap();
        engine.run(&spec, &CancellationToken::new()).await.unwrap()
    })
}

fn base_tag(run: &Path) -> String {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    let images = manifest["images"].as_array().unwrap();
    let base = images.iter().find(|i| i["name"] == "base").unwrap();
    base["tag"].as_str().unwrap().to_string()
}

#[test]
fn the_archives_own_driver_checks_and_verifies_it_in_a_bare_container() {
    ensure_built();
    let driver = pinned_driver();
    let tmp = tempfile::tempdir().unwrap();
    let out = run_study(tmp.path(), &small_study("tiny", "10000", 1, "0", 200, ""));
    assert!(out.status.success(), "{}", describe(&out));
    let run = only_run(tmp.path(), "tiny");

    // A development build leaves the driver out and says why.
    let out = parkbench().arg("archive").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("no driver inside") && text(&out.stderr).contains("just driver"),
        "{}",
        describe(&out)
    );
    let listing = unpack(&run.with_extension("tar.gz"), &tmp.path().join("dev"));
    assert!(!listing.join("parkbench").exists());

    // The self-contained driver carries itself, listed in SHA256SUMS, with its record.
    let out = Command::new(&driver)
        .current_dir(repo())
        .arg("archive")
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let share = tmp.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let good = share.join("good.tar.gz");
    std::fs::copy(run.with_extension("tar.gz"), &good).unwrap();
    let root = unpack(&good, &share.join("x"));
    let sha = parkbench::files::digest::file(&driver).unwrap();
    assert_eq!(
        parkbench::files::digest::file(&root.join("parkbench")).unwrap(),
        sha
    );
    let sums = std::fs::read_to_string(root.join("SHA256SUMS")).unwrap();
    assert!(sums.contains(&format!("{sha}  parkbench\n")), "{sums}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("parkbench.json")).unwrap())
            .unwrap();
    assert_eq!(record["sha256"], sha.as_str());
    assert_eq!(record["linking"], "static");
    // What builds the same driver is in the source bundle.
    for file in [
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "Justfile",
        "src/main.rs",
    ] {
        assert!(root.join("source").join(file).is_file(), "source/{file}");
    }

    // A flipped byte in the samples, SHA256SUMS untouched.
    let bad_root = unpack(&good, &tmp.path().join("bad"));
    let samples = bad_root.join("samples.jsonl");
    let mut bytes = std::fs::read(&samples).unwrap();
    let at = bytes.iter().position(|b| b.is_ascii_digit()).unwrap();
    bytes[at] = if bytes[at] == b'9' {
        b'8'
    } else {
        bytes[at] + 1
    };
    std::fs::write(&samples, bytes).unwrap();
    let bad = share.join("bad.tar.gz");
    tar(&[
        "-czf".as_ref(),
        bad.as_os_str(),
        "-C".as_ref(),
        tmp.path().join("bad").as_os_str(),
        ".".as_ref(),
    ]);
    for dir in [share.clone(), share.join("x"), root.clone()] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for f in [&good, &bad] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
    }

    let image = base_tag(&run);
    let id = root.file_name().unwrap().to_string_lossy().into_owned();
    let own = format!("/a/x/{id}/parkbench");
    // Nothing installed: no Rust, no Docker in the base image.
    let bare = in_base(
        &image,
        &share,
        &[
            "sh",
            "-c",
            "for t in cargo rustc docker dockerd; do command -v $t && exit 1; done; exit 0",
        ],
    );
    assert_eq!(bare.exit_code, Some(0), "{bare:?}");
    let check = in_base(&image, &share, &[&own, "check", "/a/good.tar.gz"]);
    assert_eq!(check.exit_code, Some(0), "{check:?}");
    let verify = in_base(&image, &share, &[&own, "verify", "/a/good.tar.gz"]);
    assert_eq!(verify.exit_code, Some(0), "{verify:?}");
    assert!(
        verify.stdout.contains("This study states no claims"),
        "{verify:?}"
    );
    for command in ["check", "verify"] {
        let caught = in_base(&image, &share, &[&own, command, "/a/bad.tar.gz"]);
        assert_ne!(caught.exit_code, Some(0), "{command}: {caught:?}");
        assert!(
            caught.stderr.contains("samples.jsonl"),
            "{command} names the member: {caught:?}"
        );
    }
}

/// `just reproduce`'s hand-over: a development build given `--pinned-driver FILE` builds the pinned
/// driver there (reused here: `pinned_driver` built the same sources) while the study's images
/// build, and hands the command over to it: the run's archive carries that file. A study that cannot
/// be loaded fails first, with nothing built.
#[test]
fn reproduce_hands_over_to_the_pinned_driver_it_builds() {
    ensure_built();
    let pinned = parkbench::files::digest::file(&pinned_driver()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("handed").join("parkbench");

    let missing = tmp.path().join("missing.yaml");
    let out = Invocation::reproduce(tmp.path(), &missing)
        .arg("--pinned-driver")
        .arg(&file)
        .output();
    assert!(!out.status.success(), "{}", describe(&out));
    // Said before the machine is checked.
    assert!(
        text(&out.stderr).contains("missing.yaml") && out.stdout.is_empty(),
        "{}",
        describe(&out)
    );
    assert!(
        !file.exists(),
        "nothing is built for a study that cannot be loaded"
    );

    let study = write_study(
        tmp.path(),
        "s.yaml",
        &small_study("handed", "10000", 1, "0", 200, ""),
    );
    // A driver handed the command over that does not run from the file hands it over no further.
    let out = Invocation::reproduce(tmp.path(), &study)
        .arg("--pinned-driver")
        .arg(&file)
        .env("PARKBENCH_HANDED_OVER", "1")
        .output();
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("does not run from that file"),
        "{}",
        describe(&out)
    );
    assert!(!file.exists());

    let out = Invocation::reproduce(tmp.path(), &study)
        .cpus("auto")
        .arg("--pinned-driver")
        .arg(&file)
        .output();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains(&format!(
            "handing the command over to the pinned driver {} (sha256 {pinned})",
            file.display()
        )),
        "{}",
        describe(&out)
    );
    assert_eq!(parkbench::files::digest::file(&file).unwrap(), pinned);
    let run = only_run(tmp.path(), "handed");
    let root = unpack(&run.with_extension("tar.gz"), &tmp.path().join("x"));
    assert_eq!(
        parkbench::files::digest::file(&root.join("parkbench")).unwrap(),
        pinned,
        "the archive carries the driver the command was handed over to"
    );
    // The next step names the driver that did the work.
    assert!(
        text(&out.stdout).contains(&format!("check it with: {} ", file.display())),
        "{}",
        describe(&out)
    );

    // Every study: one that cannot run is said before the hand-over, and the pinned driver's run of
    // every study says it again and goes on with the others.
    let all = tmp.path().join("all");
    for (id, image) in [("good", "go"), ("bad", "no-such-image")] {
        std::fs::create_dir_all(all.join(id)).unwrap();
        let yaml = small_study(id, "10000", 1, "0", 200, "")
            .replace("image: go", &format!("image: {image}"));
        std::fs::write(all.join(id).join("study.yaml"), yaml).unwrap();
    }
    let out = Invocation::new("reproduce")
        .results(&all)
        .cpus("auto")
        .args(["--all", "--pinned-driver"])
        .arg(&file)
        .output();
    let said = text(&out.stderr);
    let bad = all.join("bad").join("study.yaml");
    assert!(
        said.contains(&format!("warning: study {}: ", bad.display()))
            && said.contains("its images are not built beside the driver")
            && said.contains("handing the command over to the pinned driver")
            && said.contains(&format!("error: study {}: ", bad.display())),
        "{}",
        describe(&out)
    );
    assert!(
        !out.status.success(),
        "a study that cannot run fails the command: {}",
        describe(&out)
    );
    only_run(&all, "good");
    assert!(all.join("index.md").is_file(), "{}", describe(&out));
}
