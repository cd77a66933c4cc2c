//! How long each image's last build took, kept in the cache (`builds/<image>.json`), so that a
//! plan can say what a build will cost before it starts. A record that cannot be written costs the
//! build nothing: it is said and skipped.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::images::cache::{Cache, write_atomic};

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

#[cfg(test)]
mod tests {
    use super::*;

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
