use std::path::Path;

use super::*;
use crate::outputs::explain::factors_for;

/// Every committed study, as a run of it records it (laid out under its own kernels).
fn committed_studies(repo: &Path) -> Vec<Study> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo.join("results"))
        .unwrap()
        .map(|e| e.unwrap().path().join("study.yaml"))
        .filter(|f| f.is_file())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            Study::load(f)
                .and_then(|s| s.under_kernels(&[]))
                .unwrap_or_else(|e| panic!("{}: {e:#}", f.display()))
        })
        .collect()
}

/// The pairs of levels `explain` may try together: the first levels of two factors of one probe
/// that combine.
fn pairs<'a>(factors: &[&'a Factor]) -> Vec<Pair<'a>> {
    let mut out = Vec::new();
    for (i, fa) in factors.iter().enumerate() {
        for fb in &factors[i + 1..] {
            let (Some(la), Some(lb)) = (fa.levels.first(), fb.levels.first()) else {
                continue;
            };
            if fa.probe == fb.probe && la.combines_with(lb) {
                out.push((*fa, la, *fb, lb));
            }
        }
    }
    out
}

#[test]
fn every_sweep_of_every_committed_claim_passes_the_checks_of_plan() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let (mut written, mut refused) = (0, Vec::new());
    for study in committed_studies(repo) {
        for claim in &study.claims {
            // A claim explain refuses (no factor bears on it, an order, the lowest of all probes)
            // is refused with its reason before a sweep study is made.
            let factors = match factors_for(&study, claim, &[]) {
                Ok(f) => f,
                Err(e) => {
                    refused.push(format!("{}/{}: {e:#}", study.id, claim.id));
                    continue;
                }
            };
            let mut sweeps = vec![make_sweep(repo, &study, claim, &factors, &[])];
            for pair in pairs(&factors) {
                sweeps.push(make_sweep(repo, &study, claim, &[], &[pair]));
            }
            for sweep in sweeps {
                let sweep = match sweep {
                    Ok(s) => s,
                    Err(e) => {
                        refused.push(format!("{}/{}: {e:#}", study.id, claim.id));
                        continue;
                    }
                };
                // Every sweep, single levels or a pair, is one verify takes for a sweep.
                assert!(
                    crate::outputs::explain::is_sweep_of(&sweep.study, &claim.id),
                    "{}/{}: not a sweep's shape",
                    study.id,
                    claim.id
                );
                let folder = tmp.path().join(&study.id).join(&sweep.study.id);
                if let Err(e) = write_sweep(repo, &folder, (Path::new("r"), &claim.id), &sweep) {
                    panic!("study {}, claim {}: {e:#}", study.id, claim.id);
                }
                written += 1;
            }
        }
    }
    // wait-1m's claims alone have six factors on the Rust probe: the sweeps are many.
    assert!(
        written >= 10,
        "only {written} sweep studies made; refused: {refused:#?}"
    );
    for why in &refused {
        assert!(
            why.contains("declares no factors")
                || why.contains("lowest or highest")
                || why.contains("an order of probes"),
            "a refusal explain does not make on purpose: {why}"
        );
    }
}

#[test]
fn the_sweep_of_a_rust_claim_of_the_default_study_leaves_go_out_and_says_so() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let study = Study::load(&repo.join("results/wait-1m/study.yaml")).unwrap();
    let claim = claim_of(&study, "rust-per-task-1m").unwrap();
    let named: Vec<String> = ["toolchain", "tokio", "allocator", "base", "workers"]
        .map(String::from)
        .into();
    let factors = factors_for(&study, claim, &named).unwrap();
    let sweep = make_sweep(repo, &study, claim, &factors, &[]).unwrap();
    assert_eq!(sweep.dropped_toolchains, ["go"]);
    // The nightly and tokio-1.54 variants record a second rustc and tokio: the keys name the
    // baseline's labels whole.
    let keys: Vec<&str> = sweep
        .study
        .source
        .toolchains
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(
        keys[0].starts_with("rustc") && keys[1].starts_with("tokio"),
        "{keys:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = write_sweep(repo, tmp.path(), (Path::new("r"), &claim.id), &sweep).unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("source.toolchains: left out go"), "{text}");
}

#[test]
fn a_sweep_says_what_it_is_expected_to_take_before_it_builds() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files =
        crate::outputs::archive::read_run(&repo.join("results/wait-1m/reference/run.tar.gz"))
            .unwrap();
    let explained = crate::outputs::outcome::recompute(&files).unwrap();
    let study = Study::default_study();
    let claim = claim_of(&study, "rust-rss-1m").unwrap();
    let factors = factors_for(&study, claim, &[]).unwrap();
    let sweep = make_sweep(repo, &study, claim, &factors, &[]).unwrap();
    // What verify takes for a sweep's study.
    assert!(crate::outputs::explain::is_sweep_of(
        &sweep.study,
        &claim.id
    ));
    let said = expected(&sweep, &[], &explained, None);
    let variants = sweep.variants.len();
    // The sweep's run's own plan line, after what it builds: at least the time of those with no
    // process of the run to go by (the variants under a guest kernel).
    assert!(
        said.starts_with(&format!(
            "explain: {variants} variants and the baseline, nothing to build: {} processes to run",
            (variants + 1) * 3
        )) && said.contains(&format!("(container times of run {}", explained.run_id)),
        "{said}"
    );
    let builds = [
        (
            "kernel-x".to_string(),
            Some(timing::Expected {
                seconds: 90.0,
                basis: timing::Basis::LastBuild,
            }),
        ),
        ("vm".to_string(), None),
    ];
    let said = expected(&sweep, &builds, &explained, None);
    assert!(
        said.contains(
            ": 2 images to build first (kernel-x, vm: about 90 s, and 1 of no known time); then "
        ),
        "{said}"
    );
    // In all: the known build's 90 s and the processes' time, a lower bound (a build of no known
    // time; the guest variants' processes at their least).
    let cells = plan::matrix(&sweep.study);
    let processes = estimates(&sweep.study, &explained).sum(&sweep.study, &cells);
    let in_all = plan::clock(std::time::Duration::from_secs(90) + processes.time);
    assert!(
        said.starts_with(&format!(
            "explain: {variants} variants and the baseline, expected ≥ {in_all} in all: "
        )),
        "{said}"
    );
    // Without a process of the run to go by: the least the study declares, said as a bound.
    let mut none = crate::outputs::outcome::recompute(&files).unwrap();
    none.samples.clear();
    let said = expected(&sweep, &[], &none, None);
    assert!(said.contains("expected ≥ "), "{said}");
}
