//! The study laid out per kernel: with several kernels, every probe and claim is repeated once per
//! kernel (`id@kernel`), so that one run measures them side by side.

use anyhow::{Context, Result, bail};

use crate::study::Study;
use crate::study::claim::{Claim, Expected, Than};
use crate::study::kernel::HOST;

impl Study {
    /// The study under `kernels` (empty: `protocol.kernels`, else host): with one kernel every probe
    /// runs under it and ids stay; with several, every probe, claim and factor is repeated per
    /// kernel as `<id>@<kernel>`, each claim judged on the probes of its own kernel.
    pub fn under_kernels(mut self, kernels: &[String]) -> Result<Study> {
        if self.per_kernel {
            return Ok(self);
        }
        self.per_kernel = true;
        let kernels: Vec<String> = match (kernels, self.protocol.kernels.as_slice()) {
            ([], []) => vec![HOST.to_string()],
            ([], own) => own.to_vec(),
            (given, _) => given.to_vec(),
        };
        self.protocol.kernels = kernels.clone();
        if let [k] = kernels.as_slice() {
            return self.under_one(k);
        }
        self.check_several(&kernels)?;
        self.lay_out(&kernels);
        self.validate()
            .context("the study laid out per kernel (`<id>@<kernel>`)")?;
        Ok(self)
    }

    /// Every probe that names no kernel runs under `k`; ids stay.
    fn under_one(mut self, k: &str) -> Result<Study> {
        for p in self.probes.iter_mut().filter(|p| p.kernel.is_none()) {
            p.kernel = guest(k);
        }
        if let Some(p) = self
            .probes
            .iter()
            .find(|p| p.thp.is_some() && p.kernel.is_none())
        {
            bail!(
                "probe {:?} sets thp, which only a guest kernel's init can set: give it a \
                 `kernel:` or run it under one (--kernel debian-6.1)",
                p.id
            );
        }
        Ok(self)
    }

    /// Fails unless every probe can run under each of several kernels.
    fn check_several(&self, kernels: &[String]) -> Result<()> {
        if let Some(p) = self.probes.iter().find(|p| p.kernel.is_some()) {
            bail!(
                "probe {:?} names its own kernel, and the study runs under several ({}): \
                 drop the probe's `kernel:` or run under one kernel",
                p.id,
                kernels.join(", ")
            );
        }
        if kernels.iter().any(|k| k == HOST)
            && let Some(p) = self.probes.iter().find(|p| p.thp.is_some())
        {
            bail!(
                "probe {:?} sets thp, which only a guest kernel's init can set, and the study also \
                 runs under host: drop `host` from the kernels or the probe's `thp:`",
                p.id
            );
        }
        Ok(())
    }

    /// Every probe, claim and factor repeated per kernel as `<id>@<kernel>`.
    fn lay_out(&mut self, kernels: &[String]) {
        let probes = std::mem::take(&mut self.probes);
        let claims = std::mem::take(&mut self.claims);
        let factors = std::mem::take(&mut self.factors);
        for k in kernels {
            self.factors.extend(factors.iter().cloned().map(|mut f| {
                f.id = at(&f.id, k);
                f.probe = at(&f.probe, k);
                f
            }));
            self.probes.extend(probes.iter().cloned().map(|mut p| {
                p.id = at(&p.id, k);
                p.kernel = guest(k);
                p
            }));
            self.claims
                .extend(claims.iter().map(|c| claim_under(c.clone(), k)));
        }
    }
}

/// `id` under kernel `k`.
fn at(id: &str, k: &str) -> String {
    format!("{id}@{k}")
}

/// A probe's `kernel` for kernel `k`: `None` for the host's.
fn guest(k: &str) -> Option<String> {
    (k != HOST).then(|| k.to_string())
}

/// Claim `c` about the probes of kernel `k`.
fn claim_under(mut c: Claim, k: &str) -> Claim {
    c.id = at(&c.id, k);
    if !c.probe.is_empty() {
        c.probe = at(&c.probe, k);
    }
    if let Expected::Order(ids) = &mut c.expected {
        ids.iter_mut().for_each(|id| *id = at(id, k));
    }
    c.than = c.than.map(|t| match t {
        Than::One(w) if w == "lowest" || w == "highest" => Than::One(w),
        Than::One(id) => Than::One(at(&id, k)),
        Than::Each(ids) => Than::Each(ids.iter().map(|id| at(id, k)).collect()),
    });
    c.requires = c.requires.iter().map(|id| at(id, k)).collect();
    c
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::study::DEFAULT_STUDY;

    #[test]
    fn a_probe_may_name_its_kernel_and_thp_but_thp_needs_a_guest() {
        let own = DEFAULT_STUDY.replacen(
            "    image: go\n",
            "    image: go\n    kernel: debian-6.1\n    thp: never\n",
            1,
        );
        let study = Study::parse(&own).unwrap();
        let host = study.clone().under_kernels(&[]).unwrap();
        let go = host.probe("go").unwrap();
        assert_eq!(
            (go.kernel.as_deref(), go.thp.as_deref()),
            (Some("debian-6.1"), Some("never"))
        );
        assert!(host.probe("rust-tokio").unwrap().kernel.is_none());
        let err = format!(
            "{:#}",
            study
                .under_kernels(&["host".into(), "debian-6.1".into()])
                .unwrap_err()
        );
        assert!(err.contains("names its own kernel"), "{err}");
        let bad = DEFAULT_STUDY.replacen("    image: go\n", "    image: go\n    thp: big\n", 1);
        let err = format!("{:#}", Study::parse(&bad).unwrap_err());
        assert!(err.contains("not a THP mode"), "{err}");
        let hostless =
            DEFAULT_STUDY.replacen("    image: go\n", "    image: go\n    thp: never\n", 1);
        let err = format!(
            "{:#}",
            Study::parse(&hostless)
                .unwrap()
                .under_kernels(&[])
                .unwrap_err()
        );
        assert!(err.contains("only a guest kernel"), "{err}");
    }

    #[test]
    fn one_kernel_keeps_the_ids_and_several_repeat_probes_and_claims_per_kernel() {
        let study = Study::default_study();
        let one = study.clone().under_kernels(&["debian-6.1".into()]).unwrap();
        assert_eq!(one.probes.len(), study.probes.len());
        assert!(
            one.probes
                .iter()
                .all(|p| p.kernel.as_deref() == Some("debian-6.1"))
        );
        assert_eq!(one.claims, study.claims);
        let host = study.clone().under_kernels(&[]).unwrap();
        assert!(host.probes.iter().all(|p| p.kernel.is_none()));
        assert_eq!(host.kernels(), ["host"]);
        let both = study
            .clone()
            .under_kernels(&["host".into(), "wsl-like".into()])
            .unwrap();
        assert_eq!(both.probes.len(), 2 * study.probes.len());
        assert_eq!(both.kernels(), ["host", "wsl-like"]);
        let c = both
            .claims
            .iter()
            .find(|c| c.id == "rust-lower-1m@wsl-like")
            .unwrap();
        assert_eq!(c.probe, "rust-tokio@wsl-like");
        assert_eq!(c.than, Some(Than::One("go@wsl-like".into())));
        let f = both
            .factors
            .iter()
            .find(|f| f.id == "gogc@wsl-like")
            .unwrap();
        assert_eq!(f.probe, "go@wsl-like");
        assert_eq!(both.factors.len(), 2 * study.factors.len());
        assert!(both.probe("go@host").unwrap().kernel.is_none());
        // Applied once: a second call changes nothing.
        assert_eq!(both.clone().under_kernels(&["host".into()]).unwrap(), both);
    }

    #[test]
    fn an_order_claim_per_kernel_names_the_probes_of_its_kernel_and_the_layout_is_checked() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let study = Study::load(&root.join("results/runtimes-compared/study.yaml")).unwrap();
        let both = study
            .under_kernels(&["host".into(), "debian-6.1".into()])
            .unwrap();
        let c = both
            .claims
            .iter()
            .find(|c| c.id == "memory-order-parked@debian-6.1")
            .unwrap();
        assert_eq!(
            c.probe, "",
            "an order claim names its probes in `expected` only"
        );
        let Expected::Order(ids) = &c.expected else {
            panic!("{:?}", c.expected)
        };
        assert!(ids.iter().all(|id| id.ends_with("@debian-6.1")), "{ids:?}");
        assert!(ids.iter().all(|id| both.probe(id).is_some()), "{ids:?}");
    }

    #[test]
    fn a_kernel_named_twice_or_badly_is_refused() {
        for (kernels, want) in [
            ("[host, host]", "named twice"),
            ("[\"Deb ian\"]", "not a kernel name"),
        ] {
            let text = DEFAULT_STUDY.replacen(
                "  timeout_s: 300\n",
                &format!("  timeout_s: 300\n  kernels: {kernels}\n"),
                1,
            );
            let err = format!("{:#}", Study::parse(&text).unwrap_err());
            assert!(
                err.contains("protocol.kernels") && err.contains(want),
                "{err}"
            );
        }
    }
}
