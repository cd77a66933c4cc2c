use super::*;
use crate::images::BuiltImage;

fn image() -> BuiltImage {
    BuiltImage::named("go")
}

#[test]
fn a_probe_on_the_host_runs_as_nobody_within_the_studys_pids_limit() {
    let mut study = Study::default_study();
    study.protocol.pids_limit = 64;
    let image = image();
    let process = Process {
        probe: &study.probes[0],
        protocol: &study.protocol,
        image: &image,
        words: Placeholders {
            tasks: 10,
            cpus: vec![0],
            other_cpus: Vec::new(),
        },
        labels: BTreeMap::new(),
        timeout: Duration::from_secs(1),
        seccomp: None,
    };
    let Launch::Container(spec) = Host.launch(&process).unwrap() else {
        panic!("a host probe is launched")
    };
    assert_eq!(spec.user.as_deref(), Some("65534:65534"));
    assert_eq!(spec.pids_limit, 64);
    assert_eq!(spec.cmd[0], "/usr/local/bin/sampler");
}

#[test]
fn a_container_killed_from_outside_says_so() {
    let error = |outcome: ContainerOutcome| no_json(&outcome);
    let killed = ContainerOutcome {
        exit_code: Some(137),
        ..Default::default()
    };
    assert_eq!(
        error(killed.clone()),
        "killed by SIGKILL (exit 137), from outside the sampler"
    );
    let oom = ContainerOutcome {
        oom_killed: true,
        ..killed.clone()
    };
    assert_eq!(error(oom), "OOM-killed");
    let timed_out = ContainerOutcome {
        timed_out: true,
        ..killed
    };
    assert_eq!(error(timed_out), "timed out; container killed");
    let crashed = ContainerOutcome {
        exit_code: Some(1),
        ..Default::default()
    };
    assert_eq!(
        error(crashed),
        "the sampler printed no JSON (exit code Some(1))"
    );
}
