//! How long each image's last build took, kept in the cache (`builds/<image>.json`), so that a
//! plan can say what a build will cost before it starts. A record that cannot be written costs the
//! build nothing: it is said and skipped. What a build is expected to take ([`expected`]): its last
//! build on this machine, else the estimate its recipe declares; a build expected to be slow is
//! announced before it starts ([`announcement`]).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::files::write_atomic;
use crate::images::cache::Cache;
use crate::images::plan::Node;
use crate::images::recipe::BuildEstimate;

/// A build expected to take longer than this is announced before it starts.
pub const SLOW: Duration = Duration::from_secs(60);

/// One image's last build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildTime {
    /// The tag it built.
    pub tag: String,
    /// From the start of its context to the end of its build (or import), seconds.
    pub seconds: f64,
}

fn file(cache: &Cache, image: &str) -> PathBuf {
    cache.root().join("builds").join(format!("{image}.json"))
}

/// Records that `image` was just built as `tag` in `took`.
pub fn record(cache: &Cache, image: &str, tag: &str, took: Duration) {
    let time = BuildTime {
        tag: tag.to_string(),
        seconds: took.as_secs_f64(),
    };
    let path = file(cache, image);
    let written = serde_json::to_vec_pretty(&time)
        .map_err(anyhow::Error::from)
        .and_then(|json| write_atomic(&path, &json));
    if let Err(e) = written {
        eprintln!(
            "{image}: its build time was not recorded in {}: {e:#}",
            path.display()
        );
    }
}

/// The last recorded build of `image`, whatever tag it had; `None` when none was recorded.
pub fn last(cache: &Cache, image: &str) -> Option<BuildTime> {
    let text = std::fs::read_to_string(file(cache, image)).ok()?;
    serde_json::from_str(&text).ok()
}

/// What a build is expected to take, and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected {
    /// Seconds.
    pub seconds: f64,
    /// Where the number comes from.
    pub basis: Basis,
}

/// Where an expected build time comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The image's last build on this machine (its record in the cache).
    LastBuild,
    /// The estimate its recipe declares (`build_estimate`), measured on a machine with `cpus` CPUs.
    Declared { cpus: u32 },
}

impl Expected {
    /// How long, in words: `about 47 min`, `about 40 s`.
    pub fn about(&self) -> String {
        about(self.seconds)
    }

    /// Where the number comes from, in words: `its last build here`, `declared estimate, 2 CPUs`.
    pub fn source(&self) -> String {
        match self.basis {
            Basis::LastBuild => "its last build here".to_string(),
            Basis::Declared { cpus } => format!(
                "declared estimate, on {}",
                crate::text::count(cpus as usize, "CPU", "CPUs")
            ),
        }
    }
}

impl fmt::Display for Expected {
    /// `about 47 min (its last build here)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.about(), self.source())
    }
}

/// A duration in words, rounded: seconds under two minutes, minutes under two hours, then hours.
pub fn about(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 120.0 {
        format!("about {:.0} s", s)
    } else if s < 7200.0 {
        format!("about {:.0} min", s / 60.0)
    } else {
        format!("about {:.1} h", s / 3600.0)
    }
}

/// What a build of `image` is expected to take: its last build on this machine, else the estimate
/// its recipe declares (`declared`); `None` when neither is known.
pub fn expected(cache: &Cache, image: &str, declared: Option<BuildEstimate>) -> Option<Expected> {
    if let Some(last) = last(cache, image) {
        return Some(Expected {
            seconds: last.seconds,
            basis: Basis::LastBuild,
        });
    }
    declared.map(|d| Expected {
        seconds: f64::from(d.minutes) * 60.0,
        basis: Basis::Declared { cpus: d.cpus },
    })
}

/// [`expected`] for an image of the build plan (a base image declares no estimate).
pub fn expected_of(cache: &Cache, node: &Node) -> Option<Expected> {
    let declared = match node {
        Node::Recipe(r) => r.build_estimate,
        Node::Rootfs { .. } => None,
    };
    expected(cache, node.name(), declared)
}

/// The line said before building `image`, when it is expected to take longer than [`SLOW`]:
/// `kernel-wsl-like: about 47 min to build (its last build here)`.
pub fn announcement(image: &str, expected: Option<Expected>) -> Option<String> {
    let e = expected.filter(|e| e.seconds > SLOW.as_secs_f64())?;
    Some(format!(
        "{image}: {} to build ({}); starting now",
        e.about(),
        e.source()
    ))
}

/// Says [`announcement`] of `image` on stderr, when its build is expected to be slow.
pub fn announce(cache: &Cache, image: &str, declared: Option<BuildEstimate>) {
    if let Some(line) = announcement(image, expected(cache, image, declared)) {
        eprintln!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_build_is_announced_with_its_source() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(tmp.path()).unwrap();
        let declared = BuildEstimate {
            minutes: 47,
            cpus: 2,
        };
        assert_eq!(expected(&cache, "kernel-wsl-like", None), None);
        assert_eq!(announcement("kernel-wsl-like", None), None);
        let e = expected(&cache, "kernel-wsl-like", Some(declared));
        assert_eq!(
            announcement("kernel-wsl-like", e).as_deref(),
            Some(
                "kernel-wsl-like: about 47 min to build (declared estimate, on 2 CPUs); starting now"
            )
        );
        // A build recorded here wins over the declared estimate, whichever is longer.
        record(
            &cache,
            "kernel-wsl-like",
            "t:1",
            Duration::from_secs(13 * 60),
        );
        let e = expected(&cache, "kernel-wsl-like", Some(declared));
        assert_eq!(
            announcement("kernel-wsl-like", e).as_deref(),
            Some("kernel-wsl-like: about 13 min to build (its last build here); starting now")
        );
        // A fast one is not announced.
        record(&cache, "go", "t:1", SLOW - Duration::from_secs(1));
        let e = expected(&cache, "go", None);
        assert_eq!(e.map(|e| e.basis), Some(Basis::LastBuild));
        assert_eq!(announcement("go", e), None);
    }

    #[test]
    fn durations_are_said_in_a_readable_unit() {
        assert_eq!(about(40.4), "about 40 s");
        assert_eq!(about(119.0), "about 119 s");
        assert_eq!(about(47.0 * 60.0), "about 47 min");
        assert_eq!(about(3.0 * 3600.0), "about 3.0 h");
    }

    #[test]
    fn a_build_time_is_kept_per_image() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(tmp.path()).unwrap();
        assert_eq!(last(&cache, "go"), None);
        record(&cache, "go", "parkbench/go:1", Duration::from_millis(1500));
        record(&cache, "go", "parkbench/go:2", Duration::from_millis(2500));
        let t = last(&cache, "go").unwrap();
        assert_eq!((t.tag.as_str(), t.seconds), ("parkbench/go:2", 2.5));
    }
}
