//! Images placed on another Engine and leases on it, against real Engines: this machine's (the
//! coordinator, left as found) and extra ones started for the test. Shipped images keep their IDs
//! and a second placement sends nothing; images built there from the same pins have the same
//! binaries; a binary replaced under the same tag refuses the host, naming image, path and both
//! hashes; a host leased by one run is refused to another, a lease leaves nothing behind, and a
//! dead run's lease is cleared by `clean --leases --run` while another run's is kept.
//! `bench_ship` (ignored; `just bench-ship`) times shipping article 000's images to a fresh Engine.

use crate::common;

use std::time::Instant;

use bollard::query_parameters::RemoveContainerOptionsBuilder;
use common::dockerd::ExtraEngine;
use common::{all_tags, repo};
use parkbench::engine::{Containers, Endpoint, Engine, TlsFiles, settle};
use parkbench::images::cache::Cache;
use parkbench::images::place::{Placed, Placement, Sources, place};
use parkbench::images::{self, BuildOptions, Manifest, pin};
use parkbench::run::fleet::lease;

/// The coordinator's manifest of `names` (built already: a reuse).
async fn manifest(engine: &Engine, cache: &Cache, names: &[&str]) -> Manifest {
    let pins = pin::load_all(&repo().join("toolchains")).unwrap();
    let options = BuildOptions {
        only: names.iter().map(|n| n.to_string()).collect(),
        ..BuildOptions::default()
    };
    images::build_all(engine, cache, &pins, &repo(), &options)
        .await
        .unwrap()
}

async fn start_extra(local: &Engine) -> (ExtraEngine, Engine) {
    let driver = local.facts().await.unwrap().storage_driver;
    let extra = ExtraEngine::start(&driver);
    let endpoint = Endpoint::from_url(&extra.url, Some(TlsFiles::in_dir(&extra.certs))).unwrap();
    let engine = Engine::connect_to("b", &endpoint).await.unwrap();
    (extra, engine)
}

/// Containers, volumes and tags on `engine`, to compare before and after.
async fn state(engine: &Engine) -> (Vec<String>, Vec<String>, Vec<String>) {
    let containers = engine.running_containers().await.unwrap();
    let volumes = engine.volumes_with_label("parkbench.lease").await.unwrap();
    let mut tags = all_tags(engine).await;
    tags.sort();
    (
        containers.into_iter().map(|c| c.id).collect(),
        volumes.into_iter().map(|v| v.name).collect(),
        tags,
    )
}

/// Places `names` of `manifest` on `host` (called `b`) as `how` says, from this repository's
/// pins and the artifact cache.
async fn put(
    local: &Engine,
    host: &Engine,
    manifest: &Manifest,
    names: &[&str],
    how: Placement,
) -> anyhow::Result<Vec<Placed>> {
    let cache = Cache::from_env().unwrap();
    let pins = pin::load_all(&repo().join("toolchains")).unwrap();
    let sources = Sources {
        cache: &cache,
        pins: &pins,
        repo: &repo(),
    };
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    place(local, host, "b", manifest, &names, how, &sources).await
}

async fn ship(local: &Engine, host: &Engine, manifest: &Manifest, names: &[&str]) -> Vec<Placed> {
    put(local, host, manifest, names, Placement::Ship)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_images_keep_their_ids_and_a_second_placement_sends_nothing() {
    let local = Engine::connect().await.unwrap();
    let before = state(&local).await;
    let cache = Cache::from_env().unwrap();
    let manifest = manifest(&local, &cache, &["go"]).await;
    let go = manifest.get("go").unwrap();
    let (_extra, host) = start_extra(&local).await;

    let placed = ship(&local, &host, &manifest, &["go"]).await;
    assert_eq!(placed.len(), 1);
    assert_eq!(placed[0].how, "shipped");
    assert!(placed[0].bytes > 0, "{placed:?}");
    assert_eq!(
        host.image_id(&go.tag).await.unwrap().as_deref(),
        Some(go.id.as_str())
    );
    let tags = all_tags(&host).await;
    assert_eq!(tags, vec![go.tag.clone()], "only the kit's own tag");

    let again = ship(&local, &host, &manifest, &["go"]).await;
    assert_eq!((again[0].how, again[0].bytes), ("present", 0), "{again:?}");
    assert_eq!(
        state(&local).await,
        before,
        "the coordinator's Engine as found"
    );
}

/// The lease volumes on `host`, by name.
async fn leases(host: &Engine) -> Vec<String> {
    let volumes = host.volumes_with_label(lease::LABEL).await.unwrap();
    volumes.into_iter().map(|v| v.name).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_keeps_other_runs_out_and_leaves_nothing_behind() {
    let local = Engine::connect().await.unwrap();
    let before = state(&local).await;
    let (_extra, host) = start_extra(&local).await;

    let first = lease::take(&host, "b", "run-one").await.unwrap();
    assert_eq!(first.volume(), "parkbench-lease-run-one");
    let err = lease::take(&host, "b", "run-two").await.err().unwrap();
    let err = format!("{err:#}");
    for part in [
        "host `b`",
        "run-one",
        "parkbench clean --leases --hosts b --run run-one",
    ] {
        assert!(err.contains(part), "{part} missing: {err}");
    }
    assert_eq!(
        leases(&host).await,
        ["parkbench-lease-run-one"],
        "the refused run left no volume"
    );
    first.release().await.unwrap();
    assert!(leases(&host).await.is_empty());

    // A lease dropped on an error path (or Ctrl-C) goes too.
    drop(lease::take(&host, "b", "run-two").await.unwrap());
    settle().await;
    assert!(leases(&host).await.is_empty());
    assert_eq!(
        state(&local).await,
        before,
        "the coordinator's Engine as found"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_container_the_run_did_not_start_is_a_warning_not_a_refusal() {
    let local = Engine::connect().await.unwrap();
    let cache = Cache::from_env().unwrap();
    let manifest = manifest(&local, &cache, &["go"]).await;
    let go = manifest.get("go").unwrap();
    let (extra, host) = start_extra(&local).await;
    ship(&local, &host, &manifest, &["go"]).await;
    assert!(
        lease::foreign_containers(&host, "b", "run-one")
            .await
            .unwrap()
            .is_empty()
    );
    let docker = docker_of(&extra);
    let sleeper = start_sleeper(&docker, &go.tag).await;
    let warnings = lease::foreign_containers(&host, "b", "run-one").await;
    remove(&docker, &sleeper).await;
    let warnings = warnings.unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].what.contains(&sleeper[..12]), "{warnings:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_runs_lease_is_cleared_from_the_command_line_and_a_live_one_kept() {
    let local = Engine::connect().await.unwrap();
    let (extra, host) = start_extra(&local).await;
    // Its run died without removing it.
    std::mem::forget(lease::take(&host, "b", "run-dead").await.unwrap());
    // Another run's, live (made by hand: `take` would refuse it beside the dead one).
    let labels = [
        (lease::LABEL.to_string(), "run-live".to_string()),
        (lease::COORDINATOR.to_string(), "box-a".to_string()),
    ];
    let live = lease::volume_name("run-live");
    host.create_volume(&live, &labels.into()).await.unwrap();
    let clean = |extra_args: &[&str]| {
        let mut args = vec!["clean", "--leases", "--hosts", &extra.url];
        args.extend(extra_args);
        common::parkbench()
            .args(args)
            .env("DOCKER_CERT_PATH", &extra.certs)
            .output()
            .unwrap()
    };

    // Neither --run nor --all: listed, none removed (a listing, not a failure).
    let out = clean(&[]);
    assert!(out.status.success(), "{}", common::describe(&out));
    let said = common::text(&out.stderr);
    assert!(
        said.contains("run-dead") && said.contains("--run ID"),
        "{}",
        common::describe(&out)
    );
    assert_eq!(leases(&host).await.len(), 2);

    // --run: that run's lease goes, the live one is kept; each named with where it was taken.
    let out = clean(&["--run", "run-dead"]);
    assert!(out.status.success(), "{}", common::describe(&out));
    let said = common::text(&out.stderr);
    assert!(
        said.contains("removed the lease of run run-dead (taken from ")
            && said.contains("kept the lease of run run-live (taken from box-a)"),
        "{}",
        common::describe(&out)
    );
    assert_eq!(leases(&host).await, [live.as_str()]);

    let out = clean(&["--all"]);
    assert!(out.status.success(), "{}", common::describe(&out));
    assert!(leases(&host).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn images_built_on_the_host_match_and_a_tampered_binary_refuses_it() {
    let local = Engine::connect().await.unwrap();
    let before = state(&local).await;
    let cache = Cache::from_env().unwrap();
    let manifest = manifest(&local, &cache, &["c-costs"]).await;
    let image = manifest.get("c-costs").unwrap();
    let (extra, host) = start_extra(&local).await;
    let names = ["c-costs"];
    let placed = put(&local, &host, &manifest, &names, Placement::Build)
        .await
        .unwrap();
    assert_eq!(placed[0].how, "built", "{placed:?}");
    assert!(placed[0].secs > 0.0, "its own build's time: {placed:?}");
    assert!(host.image_id(&image.tag).await.unwrap().is_some());

    let path = "/usr/local/bin/pthreads";
    let tampered = tamper(&extra, &image.tag, path).await;
    let err = put(&local, &host, &manifest, &names, Placement::Build)
        .await
        .expect_err("a tampered binary must refuse the host");
    let err = format!("{err:#}");
    for part in [
        "host `b`",
        "image c-costs",
        path,
        &image.binaries[path],
        &tampered,
    ] {
        assert!(err.contains(part), "{part} missing: {err}");
    }
    // Shipping puts the coordinator's image back under its tag.
    let placed = ship(&local, &host, &manifest, &names).await;
    assert_eq!(
        host.image_id(&image.tag).await.unwrap().as_deref(),
        Some(image.id.as_str())
    );
    assert_ne!(placed[0].how, "built");
    assert_eq!(
        state(&local).await,
        before,
        "the coordinator's Engine as found"
    );
}

/// Replaces `path` in the image `tag` on the extra Engine by other bytes, committed under the same
/// tag; returns the sha256 of the new file.
async fn tamper(extra: &ExtraEngine, tag: &str, path: &str) -> String {
    use bollard::query_parameters::{
        CommitContainerOptionsBuilder, UploadToContainerOptionsBuilder,
    };
    let docker = docker_of(extra);
    let body = bollard::models::ContainerCreateBody {
        image: Some(tag.to_string()),
        cmd: Some(vec!["/nonexistent".into()]),
        ..Default::default()
    };
    let id = create(&docker, body).await;
    let data = b"#!/bin/sh\necho not the program the manifest names\n";
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(data.len() as u64);
    header.set_mode(0o755);
    tar.append_data(&mut header, path.trim_start_matches('/'), &data[..])
        .unwrap();
    let tar = tar.into_inner().unwrap();
    let options = UploadToContainerOptionsBuilder::default().path("/").build();
    docker
        .upload_to_container(&id, Some(options), bollard::body_full(tar.into()))
        .await
        .unwrap();
    let (repo, version) = tag.rsplit_once(':').unwrap();
    let options = CommitContainerOptionsBuilder::default()
        .container(&id)
        .repo(repo)
        .tag(version)
        .build();
    docker
        .commit_container(options, bollard::models::ContainerConfig::default())
        .await
        .unwrap();
    remove(&docker, &id).await;
    parkbench::files::digest::bytes(data)
}

/// Ships article 000's images to a fresh Engine over loopback mutual TLS and prints the bytes, the
/// time, the time per GiB and whether the image IDs are equal (`just bench-ship`).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a benchmark: just bench-ship"]
async fn bench_ship() {
    let local = Engine::connect().await.unwrap();
    let cache = Cache::from_env().unwrap();
    let study = parkbench::study::Study::load(&repo().join("results/wait-1m/study.yaml")).unwrap();
    let names = parkbench::run::needs::images(&study);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let manifest = manifest(&local, &cache, &names).await;
    let probes: Vec<&str> = study.probes.iter().map(|p| p.image.as_str()).collect();
    let (_extra, host) = start_extra(&local).await;
    let started = Instant::now();
    let placed = ship(&local, &host, &manifest, &probes).await;
    let secs = started.elapsed().as_secs_f64();
    let bytes: u64 = placed.iter().map(|p| p.bytes).sum();
    let mut equal = true;
    for name in &probes {
        let image = manifest.get(name).unwrap();
        let there = host.image_id(&image.tag).await.unwrap();
        equal &= there.as_deref() == Some(image.id.as_str());
    }
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    for p in &placed {
        println!(
            "{:<12} {:>8.1} MiB {:>7.2} s",
            p.image,
            mib(p.bytes),
            p.secs
        );
    }
    let shipping: f64 = placed.iter().map(|p| p.secs).sum();
    let gib = bytes as f64 / (1u64 << 30) as f64;
    println!("shipped      {:>8.1} MiB {shipping:>7.2} s", mib(bytes));
    println!("per GiB      {:>7.2} s", shipping / gib);
    println!("with the binaries checked on the host: {secs:.2} s");
    println!("image IDs equal: {}", if equal { "yes" } else { "no" });
}

/// Creates a container from `body` on `docker`; returns its ID.
async fn create(docker: &bollard::Docker, body: bollard::models::ContainerCreateBody) -> String {
    docker
        .create_container(
            None::<bollard::query_parameters::CreateContainerOptions>,
            body,
        )
        .await
        .unwrap()
        .id
}

/// Removes the container `id` from `docker`, running or not.
async fn remove(docker: &bollard::Docker, id: &str) {
    let options = RemoveContainerOptionsBuilder::default().force(true).build();
    docker.remove_container(id, Some(options)).await.unwrap();
}

/// A bollard client of the extra Engine, for what the kit itself never does to an Engine.
fn docker_of(extra: &ExtraEngine) -> bollard::Docker {
    let certs = &extra.certs;
    bollard::Docker::connect_with_ssl(
        &extra.url,
        &certs.join("key.pem"),
        &certs.join("cert.pem"),
        &certs.join("ca.pem"),
        120,
        bollard::API_DEFAULT_VERSION,
    )
    .unwrap()
}

/// Starts a container of `image` that sleeps, not labelled by any run; returns its ID.
async fn start_sleeper(docker: &bollard::Docker, image: &str) -> String {
    let body = bollard::models::ContainerCreateBody {
        image: Some(image.to_string()),
        entrypoint: Some(vec![]),
        cmd: Some(vec!["sleep".into(), "60".into()]),
        host_config: Some(bollard::models::HostConfig {
            network_mode: Some("none".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = create(docker, body).await;
    docker
        .start_container(
            &id,
            None::<bollard::query_parameters::StartContainerOptions>,
        )
        .await
        .unwrap();
    id
}
