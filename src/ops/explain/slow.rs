//! The factors `explain` leaves out of its default set: those whose images are not built here and
//! would take longer than a few minutes to build (a guest kernel's compile), each named with what
//! it needs, how long that is expected to take, and the flag that includes it. Named with
//! `--factors`, a factor is swept whatever its build costs.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::engine::Engine;
use crate::images::cache::Cache;
use crate::images::timing::{self, Expected};
use crate::images::{self, pin, tags};
use crate::run::guest;
use crate::study::Study;
use crate::study::factor::Factor;

/// A factor whose images would take longer than this to build is left out of the default set.
pub(super) const FEW_MINUTES: Duration = Duration::from_secs(3 * 60);

/// `--factors all`: every factor that bears on the claim, however long its images take to build.
pub(super) const ALL: &str = "all";

/// An image a factor needs that is not built here, and what its build is expected to take.
pub(super) type Unbuilt = (String, Option<Expected>);

/// A factor left out of the default set, with the images it needs that are not built here and that
/// the swept factors do not build.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Skipped {
    pub factor: String,
    pub images: Vec<Unbuilt>,
}

impl Skipped {
    /// `skipped: kernel (needs kernel-wsl-like, about 47 min to build (its last build here), beyond
    /// what the swept factors build; --factors kernel includes it)`.
    pub fn line(&self) -> String {
        let needs: Vec<String> = self
            .images
            .iter()
            .map(|(name, e)| match e {
                Some(e) => format!("{name}, {} to build ({})", e.about(), e.source()),
                None => format!("{name}, no build time known"),
            })
            .collect();
        format!(
            "skipped: {} (needs {}, beyond what the swept factors build; --factors {} includes it)",
            self.factor,
            needs.join(", and "),
            self.factor
        )
    }
}

/// Splits `factors` into those swept and those left out: a factor is left out when the images its
/// levels need that are not built here (`unbuilt`), and that no swept factor builds anyway, are
/// expected to take longer than [`FEW_MINUTES`] together; those images are the ones it is named
/// with (beyond what the swept factors build). An image with no expected time counts for nothing.
pub(super) fn split(
    factors: Vec<&Factor>,
    unbuilt: impl Fn(&Factor) -> Vec<Unbuilt>,
) -> (Vec<&Factor>, Vec<Skipped>) {
    // What each needs, asked once.
    let needs: Vec<(&Factor, Vec<Unbuilt>)> =
        factors.into_iter().map(|f| (f, unbuilt(f))).collect();
    let of = |image: &Unbuilt| image.1.map_or(0.0, |e| e.seconds);
    let few = FEW_MINUTES.as_secs_f64();
    let own = |images: &[Unbuilt], anyway: &BTreeSet<String>| -> Vec<Unbuilt> {
        (images.iter())
            .filter(|(name, _)| !anyway.contains(name))
            .cloned()
            .collect()
    };
    let seconds = |images: &[Unbuilt]| -> f64 { images.iter().map(of).sum() };
    // What the swept factors build, the others get without a build of theirs: grown until no
    // factor more is swept (each round only adds), so the order of `factors` does not matter.
    let mut anyway = BTreeSet::new();
    loop {
        let more: BTreeSet<String> = (needs.iter())
            .filter(|(_, images)| seconds(&own(images, &anyway)) <= few)
            .flat_map(|(_, images)| images.iter().map(|(name, _)| name.clone()))
            .collect();
        if more.is_subset(&anyway) {
            break;
        }
        anyway.extend(more);
    }
    let mut kept = Vec::new();
    let mut skipped = Vec::new();
    for (f, images) in needs {
        let mut images = own(&images, &anyway);
        if seconds(&images) > few {
            // The slowest first: what the line leads with is what costs the most.
            images.sort_by(|a, b| of(b).total_cmp(&of(a)));
            skipped.push(Skipped {
                factor: f.id.clone(),
                images,
            });
        } else {
            kept.push(f);
        }
    }
    (kept, skipped)
}

/// The default set of `factors`: those whose images are built here or quick to build, the ones
/// left out, and the images the kept ones build first ([`to_build`]). Asks the Engine which images
/// it holds as a build would reuse them.
pub(super) async fn default_set<'a>(
    repo: &Path,
    study: &Study,
    factors: Vec<&'a Factor>,
) -> Result<(Vec<&'a Factor>, Vec<Skipped>, Vec<Unbuilt>)> {
    let unbuilt = unbuilt(repo, study, &factors).await?;
    let found = |f: &Factor| {
        (unbuilt.iter())
            .find(|(id, _)| *id == f.id)
            .map(|(_, images)| images.clone())
            .unwrap_or_default()
    };
    let (kept, skipped) = split(factors, found);
    let builds = once_each(kept.iter().flat_map(|f| found(f)));
    Ok((kept, skipped, builds))
}

/// The images `factors`' levels need that are not built here (those of the baseline aside), each
/// once, with what its build is expected to take: what a sweep of them builds first.
pub(super) async fn to_build(
    repo: &Path,
    study: &Study,
    factors: &[&Factor],
) -> Result<Vec<Unbuilt>> {
    let unbuilt = unbuilt(repo, study, factors).await?;
    Ok(once_each(
        unbuilt.into_iter().flat_map(|(_, images)| images),
    ))
}

/// `images` in their order, each name once.
fn once_each(images: impl Iterator<Item = Unbuilt>) -> Vec<Unbuilt> {
    let mut all: Vec<Unbuilt> = Vec::new();
    for image in images {
        if !all.iter().any(|(name, _)| *name == image.0) {
            all.push(image);
        }
    }
    all
}

/// Per factor (its id), the images its levels need that are not built here.
async fn unbuilt(
    repo: &Path,
    study: &Study,
    factors: &[&Factor],
) -> Result<Vec<(String, Vec<Unbuilt>)>> {
    let pins = pin::load_all(&repo.join("toolchains"))?;
    let graph = images::graph(repo, &pins)?;
    let cache = Cache::from_env()?;
    let engine = Engine::connect().await?;
    let mut unbuilt = Vec::new();
    for f in factors {
        // What the factor's probe needs is built for the baseline anyway.
        let baseline: BTreeSet<String> = match study.probe(&f.probe) {
            Some(p) => closure(&graph, &needs(Some(&p.image), p.kernel.as_deref()))?,
            None => BTreeSet::new(),
        };
        let mut names = Vec::new();
        for l in &f.levels {
            names.extend(needs(l.image.as_ref(), l.kernel.as_deref()));
        }
        let sub = graph.only(&names)?;
        let planned = tags::planned(&cache, &pins, repo, &sub)?;
        let mut images = Vec::new();
        for (node, p) in sub.nodes().iter().zip(&planned) {
            if baseline.contains(node.name()) || tags::cached(&engine, p).await? {
                continue;
            }
            images.push((p.name.clone(), timing::expected_of(&cache, node)));
        }
        unbuilt.push((f.id.clone(), images));
    }
    Ok(unbuilt)
}

/// The images a probe (or a level) with `image` under `kernel` names directly.
fn needs(image: Option<&String>, kernel: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = image.cloned().into_iter().collect();
    out.extend(guest::images_for(
        &kernel.map(String::from).into_iter().collect::<Vec<_>>(),
    ));
    out
}

/// `names` and every image they are built from.
fn closure(graph: &images::plan::Graph, names: &[String]) -> Result<BTreeSet<String>> {
    Ok(graph
        .only(names)?
        .nodes()
        .iter()
        .map(|n| n.name().to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::timing::Basis;

    fn factor(id: &str) -> Factor {
        serde_yaml::from_str(&format!(
            "{{id: {id}, probe: p, text: t, levels: [{{id: a, env: {{X: '1'}}}}]}}"
        ))
        .unwrap()
    }

    fn about(minutes: f64, basis: Basis) -> Option<Expected> {
        Some(Expected {
            seconds: minutes * 60.0,
            basis,
        })
    }

    #[test]
    fn factors_whose_images_take_minutes_to_build_are_left_out_and_named() {
        let (kernel, tokio, gc, vm) = (
            factor("kernel"),
            factor("tokio"),
            factor("gc"),
            factor("vm"),
        );
        let unbuilt = |f: &Factor| -> Vec<Unbuilt> {
            match f.id.as_str() {
                "kernel" => vec![
                    ("vm".into(), about(1.0, Basis::LastBuild)),
                    (
                        "kernel-wsl-like".into(),
                        about(47.0, Basis::Declared { cpus: 2 }),
                    ),
                    ("debian-kbuild".into(), None),
                ],
                // Two quick builds together, under a few minutes.
                "tokio" => vec![
                    ("a".into(), about(1.5, Basis::LastBuild)),
                    ("b".into(), about(1.4, Basis::LastBuild)),
                ],
                // Nothing known about its build: it is swept.
                "vm" => vec![("vm".into(), None)],
                _ => Vec::new(),
            }
        };
        let (kept, skipped) = split(vec![&kernel, &tokio, &gc, &vm], unbuilt);
        let kept: Vec<&str> = kept.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(kept, ["tokio", "gc", "vm"]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(
            skipped[0].line(),
            "skipped: kernel (needs kernel-wsl-like, about 47 min to build (declared estimate, on \
             2 CPUs), and debian-kbuild, no build time known, beyond what the swept factors \
             build; --factors kernel includes it)",
            "vm, which the vm factor builds anyway, is no part of kernel's cost"
        );
        // Alone, it is named with every image it needs.
        let (_, skipped) = split(vec![&kernel], unbuilt);
        assert!(skipped[0].line().contains("and vm, about 60 s to build"));
    }

    #[test]
    fn a_factor_whose_slow_images_a_swept_factor_builds_anyway_is_swept() {
        let (thp, vm) = (factor("thp"), factor("vm"));
        // vm's images take minutes, but under the limit; thp needs the same and little more.
        let unbuilt = |f: &Factor| -> Vec<Unbuilt> {
            let mut images = vec![("vm".into(), about(2.5, Basis::LastBuild))];
            if f.id == "thp" {
                images.push(("kernel".into(), about(1.0, Basis::LastBuild)));
            }
            images
        };
        let (kept, skipped) = split(vec![&thp, &vm], unbuilt);
        assert_eq!(kept.len(), 2, "{skipped:?}");
    }

    #[test]
    fn what_a_factor_swept_for_shared_images_builds_costs_the_others_nothing() {
        let (a, b, vm) = (factor("a"), factor("b"), factor("vm"));
        // vm is quick; a is quick once vm's image is built; b then only adds y.
        let unbuilt = |f: &Factor| -> Vec<Unbuilt> {
            let mut images = vec![("v".into(), about(2.5, Basis::LastBuild))];
            if f.id != "vm" {
                images.push(("x".into(), about(2.0, Basis::LastBuild)));
            }
            if f.id == "b" {
                images.push(("y".into(), about(2.0, Basis::LastBuild)));
            }
            images
        };
        for order in [vec![&b, &a, &vm], vec![&vm, &a, &b]] {
            let (kept, skipped) = split(order, unbuilt);
            assert_eq!(kept.len(), 3, "{skipped:?}");
        }
    }
}
