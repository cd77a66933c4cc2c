//! The build manifest (`manifest.json`): what every image is, what went into it and the sha256 of
//! each of its binaries; and how one image's build ended.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::images::pin::Drift;

/// The build manifest (`manifest.json`): every image parkbench built or reused, and what is in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Images in build order: base images, toolchains, sampler, probes (each after its parents).
    pub images: Vec<BuiltImage>,
    /// Images not built because a pinned artifact they are made from, directly or through a
    /// parent, cannot be produced on this machine (no source reachable or implemented), in build
    /// order. Empty when every image was built.
    #[serde(default)]
    pub unavailable: Vec<UnavailableImage>,
    /// Images whose build failed (the Engine's build, or reading back what the recipe asks),
    /// and every image below one, in build order. Empty when every build succeeded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedImage>,
    /// Root filesystems built with packages that moved from their pin's lock (a locked version
    /// neither cached nor served any more), one per pin. Empty when every rootfs is as pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<Drift>,
}

/// One image of the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuiltImage {
    /// Short name (`base`, `toolchain-rust`, `rust-tokio`, …): a `docker/` folder, `base`, or a
    /// root filesystem pin.
    pub name: String,
    /// Tag, `parkbench/<name>:<first 16 hex digits of the input hash>`.
    pub tag: String,
    /// Image ID (`sha256:…`). Not stable across hosts (an image records its creation time); the layer
    /// diff-IDs and binary hashes are.
    pub id: String,
    /// Layer diff-IDs (`sha256:…`), bottom first.
    pub layers: Vec<String>,
    /// Every input by name and sha256 (source tree, lockfiles, toolchain artifacts) or tag (parent images).
    pub inputs: BTreeMap<String, String>,
    /// sha256 of every binary in the image, by absolute path inside the image.
    pub binaries: BTreeMap<String, String>,
    /// Tool versions reported from inside the image (`rustc -vV`, `go version`).
    pub versions: BTreeMap<String, String>,
    /// The recipe's `notes` and a deviation per declared patch: what a run that uses the image
    /// must report as a deviation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// True when this command built or imported the image (under `reproduce --pinned-driver`, also
    /// before it was handed over to the pinned driver, beside that driver's build); false when an
    /// existing one was reused.
    pub built: bool,
}

#[cfg(test)]
impl BuiltImage {
    /// An image `name` as tests use it: tagged `parkbench/<name>:test`, reused, with nothing in it.
    pub fn named(name: &str) -> BuiltImage {
        BuiltImage {
            name: name.into(),
            tag: format!("parkbench/{name}:test"),
            id: format!("sha256:{name}"),
            layers: vec![],
            inputs: BTreeMap::new(),
            binaries: BTreeMap::new(),
            versions: BTreeMap::new(),
            notes: Vec::new(),
            built: false,
        }
    }
}

/// An image of the kit that was not built here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnavailableImage {
    /// Short name, as in [`BuiltImage::name`].
    pub name: String,
    /// Why: the pin that could not be produced and every source's failure, or the unavailable parent.
    pub reason: String,
    /// What a run using it reports as deviations, as for a built image: its recipe's notes and
    /// declared patches (each checked though the image is not built).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// An image of the kit whose build failed here, or that was not built because a parent's did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedImage {
    /// Short name, as in [`BuiltImage::name`].
    pub name: String,
    /// The failed build's own error line (a compiler's error, a Dockerfile step the Engine refused),
    /// one line.
    pub error: String,
    /// The parent image (directly or further up) whose build failed, when it is not this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The last lines the failed build printed (empty for an image below a failed parent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<String>,
}

impl FailedImage {
    /// Why the image is not here, in one line: the error, after the parent's name when it was the
    /// parent's build that failed (`parent image toolchain-go: main.go:3:2: …`).
    pub fn reason(&self) -> String {
        match &self.parent {
            Some(p) => format!("parent image {p}: {}", self.error),
            None => self.error.clone(),
        }
    }
}

impl Manifest {
    /// The built (or reused) image with this short name; `None` for an unavailable or unknown one.
    pub fn get(&self, name: &str) -> Option<&BuiltImage> {
        self.images.iter().find(|i| i.name == name)
    }

    /// Why the image with this short name is unavailable, if it is.
    pub fn unavailable(&self, name: &str) -> Option<&str> {
        self.unavailable
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.reason.as_str())
    }

    /// The failed build behind the image with this short name, if its build (or a parent's) failed.
    pub fn failed(&self, name: &str) -> Option<&FailedImage> {
        self.failed.iter().find(|i| i.name == name)
    }
}

/// Build options.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Rebuild every image without the Engine's build cache.
    pub no_cache: bool,
    /// Build only these images and the images they are built from; empty: every image.
    pub only: Vec<String>,
    /// Print every line the builds print.
    pub verbose: bool,
    /// Stop at the first image whose build fails (`--strict-build`). Otherwise a failed image and
    /// the images below it are recorded in the manifest as failed, and every other image is built.
    pub strict: bool,
    /// Refuse to build a root filesystem whose locked packages are neither cached nor served
    /// (`--strict-pins`). Otherwise the served versions stand in and the drift is recorded.
    pub strict_pins: bool,
    /// The Engine is another machine's (a host's images built there): the builds' times say
    /// nothing of this machine, and are not recorded as its own.
    pub other_host: bool,
    /// Built beside a compile that a command waits for (the pinned driver's, `just reproduce`):
    /// their steps take what that compile leaves of the CPUs, rather than an equal share with it
    /// ([`BESIDE_CPU_SHARES`]).
    pub beside: bool,
    /// Tags this command built in an earlier build of its own (an explain sweep's variants): the
    /// table and the manifest say `built` for them, not `reused`.
    pub built_before: Vec<String>,
}

/// The CPU weight of the steps of builds made [`BuildOptions::beside`] another: an eighth of the
/// Engine's default on cgroup v1 (1024), which that other build keeps.
pub const BESIDE_CPU_SHARES: i32 = 128;

/// What became of one image in a build.
pub(crate) enum Outcome {
    /// Built, imported or reused; with how long the build or import took (`None`: reused).
    Built(BuiltImage, Option<std::time::Duration>),
    /// A base image whose root filesystem was built with packages that moved from its pin's lock.
    Drifted(BuiltImage, Option<std::time::Duration>, Drift),
    /// The artifact of pin `pin` cannot be produced here: every source failed (`reason`).
    Unavailable { pin: String, reason: String },
    /// The build failed: its own error line, the last lines it printed, and the whole error.
    Failed {
        error: String,
        output: Vec<String>,
        full: anyhow::Error,
    },
}

/// The repository prefix of every tag: `parkbench`, or `PARKBENCH_NAMESPACE` (tests use their own, so a
/// cold build from nothing never disturbs the user's images).
pub fn namespace() -> String {
    std::env::var("PARKBENCH_NAMESPACE").unwrap_or_else(|_| "parkbench".to_string())
}
