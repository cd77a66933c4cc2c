//! The sweep study of a claim: its probes at its scale, and per declared factor level a variant
//! probe with that level applied and a variant claim judged on it.

use std::collections::BTreeSet;

use anyhow::{Result, bail, ensure};
use serde::Serialize;

use crate::run::{env, needs};

use crate::study::factor::{Factor, Level, declared_id};
use crate::study::{Claim, Expected, Study, Than};

/// One variant of a sweep: a factor's level applied to one probe of the claim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    /// The factor (two joined by `+` for a pair tried together).
    pub factor: String,
    /// The level (`a+b` for a pair).
    pub level: String,
    /// The variant probe's id in the sweep study: `<probe>~<factor>=<level>`.
    pub probe: String,
    /// The variant claim's id: `<claim>~<factor>=<level>`.
    pub claim: String,
}

/// A sweep study and its variants.
pub struct Sweep {
    pub study: Study,
    pub variants: Vec<Variant>,
    /// The keys of the study's `source.toolchains` left out: no image of the sweep records their
    /// version (a sweep of one probe of a study of several languages keeps its own language's).
    pub dropped_toolchains: Vec<String>,
}

/// The version labels a run of the named images records (`needs::recordable` over the repository's
/// recipes): a sweep keeps the published toolchains these name.
pub type Recorded<'a> = &'a dyn Fn(&[String]) -> BTreeSet<String>;

/// The factors of `study` that bear on `claim` (they vary one of its probes), or those named in
/// `only`; an unknown or unrelated name is an error that lists the declared ones.
pub fn factors_for<'a>(
    study: &'a Study,
    claim: &Claim,
    only: &[String],
) -> Result<Vec<&'a Factor>> {
    let probes = probes_of(claim);
    let related: Vec<&Factor> = study
        .factors
        .iter()
        .filter(|f| probes.contains(&f.probe.as_str()))
        .collect();
    let names = || {
        related
            .iter()
            .map(|f| f.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    ensure!(
        !related.is_empty(),
        "claim {:?} is about {}, and study {} declares no factors for {}: add `factors:` to the study",
        claim.id,
        probes.join(", "),
        study.id,
        if probes.len() == 1 { "it" } else { "them" }
    );
    if only.is_empty() {
        return Ok(related);
    }
    only.iter()
        .map(|name| {
            let found = related.iter().copied().find(|f| &f.id == name);
            let found = found.or_else(|| {
                related
                    .iter()
                    .copied()
                    .find(|f| declared_id(&f.id) == name)
            });
            found.ok_or_else(|| {
                anyhow::anyhow!(
                    "factor {name:?} is not declared for the probes of claim {:?} ({}); declared: {}",
                    claim.id,
                    probes.join(", "),
                    names()
                )
            })
        })
        .collect()
}

/// The probes a claim is judged on.
fn probes_of(claim: &Claim) -> Vec<&str> {
    let mut out = vec![claim.probe.as_str()];
    match &claim.than {
        Some(Than::One(id)) if id != "lowest" && id != "highest" => out.push(id),
        Some(Than::Each(ids)) => out.extend(ids.iter().map(String::as_str)),
        _ => {}
    }
    out.retain(|p| !p.is_empty());
    out
}

/// The sweep for `claim`: its probes at its scale, and per factor level a variant probe and a
/// variant claim judged on it. `pairs` adds levels tried together (factor, level, factor, level).
/// The sweep study passes every check a study file must: of the published toolchains it keeps
/// those whose version its images record (`recorded`), and says which it left out.
pub fn sweep(
    study: &Study,
    claim: &Claim,
    factors: &[&Factor],
    pairs: &[(&Factor, &Level, &Factor, &Level)],
    recorded: Recorded,
) -> Result<Sweep> {
    sweepable(claim)?;
    let mut out = baseline(study, claim);
    let baseline_labels = recorded(&needs::images(&out));
    let base_claim = out.claims[0].clone();
    let mut variants = Vec::new();
    let mut add = |factor: String, probe: &str, level: &Level, out: &mut Study| {
        let base = out.probe(probe).expect("a claim's probe").clone();
        let key = format!("{factor}={}", level.id);
        let variant = Variant {
            factor,
            level: level.id.clone(),
            probe: format!("{probe}~{key}"),
            claim: format!("{}~{key}", claim.id),
        };
        out.probes.push(level.apply(&base, variant.probe.clone()));
        out.claims.push(renamed(&base_claim, probe, &variant));
        variants.push(variant);
    };
    let name = |f: &Factor| declared_id(&f.id).to_string();
    for f in factors {
        for level in &f.levels {
            add(name(f), &f.probe, level, &mut out);
        }
    }
    for (fa, la, fb, lb) in pairs {
        ensure!(fa.probe == fb.probe, "a pair varies one probe");
        let both = format!("{}+{}", name(fa), name(fb));
        add(both, &fa.probe, &la.with(lb), &mut out);
    }
    let dropped_toolchains = keep_recorded_toolchains(&mut out, &baseline_labels, recorded);
    let text = serde_yaml::to_string(&out)?;
    let out = Study::parse(&text).map_err(|e| {
        anyhow::anyhow!(
            "the sweep study of claim {:?} is not valid: {e:#}",
            claim.id
        )
    })?;
    Ok(Sweep {
        study: out,
        variants,
        dropped_toolchains,
    })
}

/// Keeps the published toolchains whose version a run of `study`'s images records, and returns
/// the keys left out: a key no image records would name a version the run cannot report. A key
/// that the variants make ambiguous (`tokio` once per image that locks it) is written as the whole
/// label it names among the `baseline`'s labels (`tokio (rust-tokio)`), which names that one alone.
fn keep_recorded_toolchains(
    study: &mut Study,
    baseline: &BTreeSet<String>,
    recorded: Recorded,
) -> Vec<String> {
    let labels = recorded(&needs::images(study));
    let mut dropped = Vec::new();
    let published = std::mem::take(&mut study.source.toolchains);
    for (key, version) in published {
        let key = match env::label_for(&key, &labels) {
            Ok(Some(_)) => key,
            Ok(None) => {
                dropped.push(key);
                continue;
            }
            Err(_) => match env::label_for(&key, baseline) {
                Ok(Some(whole)) if labels.contains(whole) => whole.clone(),
                _ => {
                    dropped.push(key);
                    continue;
                }
            },
        };
        study.source.toolchains.insert(key, version);
    }
    dropped
}

/// Refuses a claim a sweep cannot judge: one against the lowest or highest probe, or an order.
fn sweepable(claim: &Claim) -> Result<()> {
    if matches!(&claim.than, Some(Than::One(w)) if w == "lowest" || w == "highest") {
        bail!(
            "claim {:?} compares its probe with the lowest or highest of the study's probes: a sweep \
             runs only the claim's probes and its variants, so it cannot judge such a claim",
            claim.id
        );
    }
    if matches!(claim.expected, Expected::Order(_)) {
        bail!(
            "claim {:?} is an order of probes: a sweep explains a value, not a ranking",
            claim.id
        );
    }
    Ok(())
}

/// The sweep study before its variants: the claim's probes at its scale (and its `than` scale),
/// judged by the claim alone, without its `requires`.
fn baseline(study: &Study, claim: &Claim) -> Study {
    let tasks = match claim.tasks {
        Some(t) => t,
        None => {
            let probe = study
                .probe(&claim.probe)
                .expect("a claim's probe is validated");
            *study
                .scales_of(probe)
                .iter()
                .min()
                .expect("a probe has a scale")
        }
    };
    let mut out = study.clone();
    out.id = sweep_id(&claim.id);
    out.title = format!("Explaining {}: {}", claim.id, study.title);
    out.factors.clear();
    // The probes keep the kernels the run gave them; the sweep is not laid out again.
    out.protocol.kernels.clear();
    out.protocol.scales = vec![tasks];
    if let Some(than) = claim.than_tasks.filter(|n| *n != tasks) {
        out.protocol.scales.push(than);
    }
    let names = probes_of(claim);
    out.probes.retain(|p| names.contains(&p.id.as_str()));
    for p in &mut out.probes {
        p.scales = None;
    }
    let mut base_claim = claim.clone();
    base_claim.requires.clear();
    out.claims = vec![base_claim];
    out
}

/// The id of the sweep study of `claim`, which names its folder: `<claim>`, `<claim>.<kernel>` for
/// `<claim>@<kernel>`.
pub fn sweep_id(claim: &str) -> String {
    claim.replace('@', ".")
}

/// Whether `study` has the shape of a sweep of `claim` ([`sweep`]): named after it, judging it first
/// and then its variants (`<claim>~<factor>=<level>`) alone, on its probes and their variants.
pub fn is_sweep_of(study: &Study, claim: &str) -> bool {
    let Some((first, variants)) = study.claims.split_first() else {
        return false;
    };
    let probes = probes_of(first);
    let variant = |id: &str, of: &[&str]| {
        id.split_once('~')
            .is_some_and(|(base, level)| of.contains(&base) && !level.is_empty())
    };
    study.id == sweep_id(claim)
        && first.id == claim
        && variants.iter().all(|c| variant(&c.id, &[claim]))
        && (study.probes.iter()).all(|p| probes.contains(&p.id.as_str()) || variant(&p.id, &probes))
}

/// `claim` judged on the variant probe instead of `probe`.
fn renamed(claim: &Claim, probe: &str, variant: &Variant) -> Claim {
    let mut c = claim.clone();
    c.id = variant.claim.clone();
    let swap = |id: &mut String| {
        if id == probe {
            *id = variant.probe.clone();
        }
    };
    swap(&mut c.probe);
    match &mut c.than {
        Some(Than::One(id)) => swap(id),
        Some(Than::Each(ids)) => ids.iter_mut().for_each(swap),
        None => {}
    }
    c
}
