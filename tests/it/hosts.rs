//! `parkbench doctor --hosts` against a real second Engine: this machine's Engine and an extra
//! `dockerd` on loopback mutual TLS are both read, through a container on each, as one hardware
//! class and one machine (they are, here); a client certificate the Engine does not trust fails
//! that host's row by name; an unknown Docker context is refused before anything connects, naming
//! it and the contexts there are.

use crate::common;

use std::path::Path;

use common::dockerd::ExtraEngine;
use common::{describe, ensure_built, parkbench, text};
use parkbench::engine::{Containers, Engine, Images};

/// The machine Engine's storage driver, and its base image (the image doctor reads a host
/// through), copied onto `extra` through the Engine API (save → load: the image ID kept).
fn give_base_image(extra: &ExtraEngine, certs: &Path) -> String {
    ensure_built();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let local = Engine::connect().await.unwrap();
        let ns = parkbench::images::namespace();
        let mut tags = local.image_tags(&ns).await.unwrap();
        tags.sort();
        let base = tags
            .into_iter()
            .find(|t| t.starts_with(&format!("{ns}/base:")))
            .expect("the base image is built (parkbench build)");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("base.tar");
        local.export_image(&base, &file).await.unwrap();
        let endpoint = parkbench::engine::Endpoint::from_url(
            &extra.url,
            Some(parkbench::engine::TlsFiles::in_dir(certs)),
        )
        .unwrap();
        let remote = Engine::connect_to("extra", &endpoint).await.unwrap();
        remote.load_image(&file).await.unwrap();
        let (here, there) = (local.image(&base).await.unwrap(), remote.image(&base).await);
        assert_eq!(here.unwrap().id, there.unwrap().unwrap().id, "the ID kept");
        base
    })
}

fn storage_driver() -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async { Engine::connect().await.unwrap().facts().await.unwrap() })
        .storage_driver
}

/// The lines of one host's table in doctor's output.
fn block<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    let head = format!("host {name}");
    out.lines()
        .skip_while(|l| *l != head && !l.starts_with(&format!("{head} (")))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect()
}

fn value<'a>(lines: &[&'a str], key: &str) -> &'a str {
    lines
        .iter()
        .find_map(|l| l.trim_start().strip_prefix(key))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no `{key}` in {lines:?}"))
}

#[test]
fn doctor_reads_local_and_a_tls_engine_as_one_class_and_one_machine() {
    let extra = ExtraEngine::start(&storage_driver());
    give_base_image(&extra, &extra.certs);
    let out = parkbench()
        .args(["doctor", "--hosts", &format!("local,{}", extra.url)])
        .env("DOCKER_CERT_PATH", &extra.certs)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert!(out.status.success(), "{}\n{}", describe(&out), extra.log());
    let (local, remote) = (block(&stdout, "local"), block(&stdout, &extra.url));
    for host in [&local, &remote] {
        assert!(value(host, "reachable").starts_with("yes"), "{stdout}");
        assert!(!value(host, "API version").is_empty(), "{stdout}");
        assert!(value(host, "free disk").contains("GiB at /"), "{stdout}");
        assert!(!value(host, "CPU model").is_empty(), "{stdout}");
    }
    assert_eq!(
        value(&local, "hardware class"),
        value(&remote, "hardware class"),
        "{stdout}"
    );
    assert_eq!(
        value(&local, "logical CPUs"),
        value(&remote, "logical CPUs")
    );
    let both = format!("local, {}", extra.url);
    assert!(
        stdout.contains(&format!("same hardware class: {both}")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("one machine: {both}")), "{stdout}");

    // A client certificate the Engine does not trust: that host's row fails, by name.
    let out = parkbench()
        .args(["doctor", "--hosts", &format!("local,{}", extra.url)])
        .env("DOCKER_CERT_PATH", &extra.wrong_certs)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert!(!out.status.success(), "{}", describe(&out));
    let remote = block(&stdout, &extra.url);
    let reachable = value(&remote, "reachable");
    // Under TLS 1.3 the Engine's refusal of the client certificate reaches the client as an alert
    // or as a connection closed before the first answer, whichever comes first: the host is named
    // either way, with what to check.
    assert!(
        reachable.starts_with("FAIL no")
            && reachable.contains(&format!("host `{}`", extra.url))
            && reachable.contains("TLS files"),
        "{stdout}"
    );
    assert!(value(&block(&stdout, "local"), "reachable").starts_with("yes"));
}

#[test]
fn an_unknown_context_is_refused_naming_it_and_the_contexts_known() {
    let config = tempfile::tempdir().unwrap();
    let id = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"lab"));
    let meta = config.path().join("contexts/meta").join(id);
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::write(
        meta.join("meta.json"),
        r#"{"Name":"lab","Metadata":{},"Endpoints":{"docker":{"Host":"unix:///nowhere.sock"}}}"#,
    )
    .unwrap();
    let out = parkbench()
        .args(["doctor", "--hosts", "local,lba"])
        .env("DOCKER_CONFIG", config.path())
        .env("XDG_CONFIG_HOME", config.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(stderr.contains("no host `lba`"), "{stderr}");
    assert!(stderr.contains("did you mean `lab`?"), "{stderr}");
    assert!(
        text(&out.stdout).is_empty(),
        "nothing connected: {}",
        describe(&out)
    );
}
