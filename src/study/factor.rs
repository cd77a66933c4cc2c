//! Factors: named alternatives for one thing that could move a probe's numbers (its toolchain, a
//! crate's version, the allocator, the base system, its CPUs, the kernel, THP, a runtime setting),
//! declared in a study's `factors:` and swept one at a time by `parkbench explain`.
//!
//! ```yaml
//! factors:
//!   - id: toolchain
//!     probe: rust-tokio
//!     text: The Rust compiler (the article used 1.97.1).
//!     levels:
//!       - {id: nightly-1.97.0, image: rust-tokio.nightly}
//!   - id: gogc
//!     probe: go
//!     text: Go's GC target.
//!     levels:
//!       - {id: "50", env: {GOGC: "50"}}
//! ```

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::study::probe::{Probe, check_env_name};
use crate::yaml::{At, Invalid, ensure_at};

/// One factor: the probe it is about and its alternatives to the probe's own setting (the baseline,
/// which is not listed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Factor {
    /// Identifier, unique in the study (`--factors` names it).
    pub id: String,
    /// The probe whose variants these are.
    pub probe: String,
    /// What the factor is, and what the article used.
    pub text: String,
    /// The alternatives, each changing only what it names.
    pub levels: Vec<Level>,
}

/// One alternative: what changes against the probe's own setting. Every other field stays.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    /// Identifier, unique in the factor (a plain word: letters, digits, `.`, `_`, `-`).
    pub id: String,
    /// Another probe image (a variant folder, e.g. `rust-tokio.nightly`), with its own pins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Environment variables set over the probe's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The probe's arguments instead of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// The first N of the run's CPUs instead of the probe's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<usize>,
    /// A guest kernel to run under (`debian-6.1`, `wsl-like`); `host` for the host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Under a guest kernel, the THP mode its init sets (`always`, `madvise`, `never`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp: Option<String>,
}

impl Level {
    /// The probe under this level, named `id`.
    pub fn apply(&self, probe: &Probe, id: String) -> Probe {
        let mut p = probe.clone();
        p.id = id;
        if let Some(image) = &self.image {
            p.image = image.clone();
        }
        p.env.extend(self.env.clone());
        if let Some(args) = &self.args {
            p.args = args.clone();
        }
        if self.cpus.is_some() {
            p.cpus = self.cpus;
        }
        if let Some(k) = &self.kernel {
            p.kernel = (k != crate::study::kernel::HOST).then(|| k.clone());
        }
        if self.thp.is_some() {
            p.thp = self.thp.clone();
        }
        p
    }

    /// Whether this level and `other` can be tried together: they change different things.
    pub fn combines_with(&self, other: &Level) -> bool {
        let both = |a: bool, b: bool| a && b;
        !(both(self.image.is_some(), other.image.is_some())
            || both(self.args.is_some(), other.args.is_some())
            || both(self.cpus.is_some(), other.cpus.is_some())
            || both(self.kernel.is_some(), other.kernel.is_some())
            || both(self.thp.is_some(), other.thp.is_some())
            || self.env.keys().any(|k| other.env.contains_key(k)))
    }

    /// The level and `other` together (see [`Level::combines_with`]).
    pub fn with(&self, other: &Level) -> Level {
        let mut l = self.clone();
        l.id = format!("{}+{}", self.id, other.id);
        l.image = l.image.or_else(|| other.image.clone());
        l.env.extend(other.env.clone());
        l.args = l.args.or_else(|| other.args.clone());
        l.cpus = l.cpus.or(other.cpus);
        l.kernel = l.kernel.or_else(|| other.kernel.clone());
        l.thp = l.thp.or_else(|| other.thp.clone());
        l
    }

    fn is_empty(&self) -> bool {
        self.image.is_none()
            && self.env.is_empty()
            && self.args.is_none()
            && self.cpus.is_none()
            && self.kernel.is_none()
            && self.thp.is_none()
    }
}

/// Checks a study's factors against its probes; an error names its node by its path in the list
/// (`[0].levels[1].thp`).
pub fn validate(factors: &[Factor], probes: &[Probe]) -> Result<(), Invalid> {
    for (i, f) in factors.iter().enumerate() {
        let at = format!("[{i}]");
        ensure_at!(
            !factors[..i].iter().any(|o| o.id == f.id),
            format!("{at}.id"),
            "factor {:?} appears twice",
            f.id
        );
        ensure_at!(
            plain(declared_id(&f.id)),
            format!("{at}.id"),
            "factor {:?}: an id is letters, digits, `.`, `_` or `-`",
            f.id
        );
        ensure_at!(
            probes.iter().any(|p| p.id == f.probe),
            format!("{at}.probe"),
            "factor {:?}: probe {:?} is not a probe of this study",
            f.id,
            f.probe
        );
        ensure_at!(
            !f.levels.is_empty(),
            format!("{at}.levels"),
            "factor {:?}: levels is empty: list at least one alternative",
            f.id
        );
        for (j, l) in f.levels.iter().enumerate() {
            let what = format!("factor {:?}, level {:?}", f.id, l.id);
            validate_level(l, &f.levels[..j], &what)
                .map_err(|e| e.under(&format!("{at}.levels[{j}]")))?;
        }
    }
    Ok(())
}

/// Checks one level (`what` names it in messages) against the levels listed before it.
fn validate_level(l: &Level, before: &[Level], what: &str) -> Result<(), Invalid> {
    ensure_at!(
        !before.iter().any(|o| o.id == l.id),
        "id",
        "{what} appears twice"
    );
    ensure_at!(
        plain(&l.id),
        "id",
        "{what}: an id is letters, digits, `.`, `_` or `-`"
    );
    ensure_at!(
        !l.is_empty(),
        "",
        "{what} changes nothing: give it an image, env, args, cpus, kernel or thp"
    );
    ensure_at!(l.cpus != Some(0), "cpus", "{what}: cpus must be at least 1");
    for name in l.env.keys() {
        check_env_name(name)
            .with_context(|| what.to_string())
            .at(format!("env.{name}"))?;
    }
    if let Some(mode) = &l.thp {
        crate::study::check_thp_mode(mode)
            .with_context(|| what.to_string())
            .at("thp")?;
        ensure_at!(
            l.kernel
                .as_deref()
                .is_some_and(|k| k != crate::study::kernel::HOST),
            "thp",
            "{what}: thp is set by a guest kernel's init; name the level's kernel (e.g. debian-6.1)"
        );
    }
    Ok(())
}

fn plain(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// The factor's id as declared, without the `@<kernel>` a study laid out per kernel adds.
pub fn declared_id(id: &str) -> &str {
    id.split_once('@').map_or(id, |(id, _)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe() -> Probe {
        crate::study::Study::default_study().probes[1].clone()
    }

    #[test]
    fn a_level_changes_only_what_it_names() {
        let base = probe();
        let level = Level {
            id: "one".into(),
            cpus: Some(1),
            env: BTreeMap::from([("X".into(), "1".into())]),
            ..Level::default()
        };
        let p = level.apply(&base, "v".into());
        assert_eq!(
            (p.id.as_str(), p.cpus, p.env["X"].as_str()),
            ("v", Some(1), "1")
        );
        assert_eq!((&p.image, &p.args), (&base.image, &base.args));
        let kernel = Level {
            id: "k".into(),
            kernel: Some("debian-6.1".into()),
            thp: Some("never".into()),
            ..Level::default()
        };
        assert!(level.combines_with(&kernel) && !level.combines_with(&level));
        let both = level.with(&kernel).apply(&base, "b".into());
        assert_eq!(
            (both.cpus, both.kernel.as_deref(), both.thp.as_deref()),
            (Some(1), Some("debian-6.1"), Some("never"))
        );
    }

    #[test]
    fn bad_factors_are_named() {
        let probes = [probe()];
        let level = |text: &str| -> Level { serde_yaml::from_str(text).unwrap() };
        let factor = |id: &str, probe: &str, levels: Vec<Level>| Factor {
            id: id.into(),
            probe: probe.into(),
            text: String::new(),
            levels,
        };
        let cases = [
            (
                factor("f", "nope", vec![level("{id: a, cpus: 1}")]),
                "not a probe",
            ),
            (factor("f", "rust-tokio", vec![]), "levels is empty"),
            (
                factor("f", "rust-tokio", vec![level("{id: a}")]),
                "changes nothing",
            ),
            (
                factor("f", "rust-tokio", vec![level("{id: a, thp: never}")]),
                "name the level's kernel",
            ),
            (
                factor(
                    "f",
                    "rust-tokio",
                    vec![level("{id: a, kernel: k, thp: big}")],
                ),
                "not one of",
            ),
            (
                factor("f g", "rust-tokio", vec![level("{id: a, cpus: 1}")]),
                "an id is",
            ),
        ];
        for (f, want) in cases {
            let err = format!("{:#}", validate(&[f], &probes).unwrap_err());
            assert!(err.contains(want), "{want}: {err}");
        }
    }
}
