//! The images of a sweep's variants, built one variant at a time: a variant whose image (or
//! kernel) cannot be built is left out of the sweep, with why in one line.

use std::path::Path;

use anyhow::Result;

use crate::images::{BuildOptions, Manifest};
use crate::ops::prepare::build_quietly;
use crate::outputs::explain::{Sweep, Variant};
use crate::run::guest;

/// What the builds of a sweep's images left: the variants whose image (or kernel) could not be
/// built, with why, and the tags built (not reused), which the sweep's run then counts as built.
pub(super) struct Built {
    pub failed: Vec<(Variant, String)>,
    pub tags: Vec<String>,
}

/// Builds every image the sweep needs, one variant at a time, with no image table (the sweep's run
/// prints one, of them all); the variants whose image (or kernel) cannot be built are taken out of
/// the sweep.
pub(super) async fn build_variants(repo: &Path, sweep: &mut Sweep) -> Result<Built> {
    let baseline: Vec<String> = sweep
        .study
        .probes
        .iter()
        .filter(|p| !sweep.variants.iter().any(|v| v.probe == p.id))
        .map(|p| p.image.clone())
        .collect();
    let baseline = BuildOptions {
        only: baseline,
        ..Default::default()
    };
    let mut tags = built_tags(build_quietly(repo, &baseline).await?);
    let mut failed = Vec::new();
    for variant in sweep.variants.clone() {
        let probe = sweep
            .study
            .probe(&variant.probe)
            .expect("a variant's probe")
            .clone();
        let mut only = vec![probe.image.clone()];
        only.extend(guest::images_for(
            &probe.kernel.iter().cloned().collect::<Vec<_>>(),
        ));
        // A failed build stops it, so that the variant is left out of the sweep with the error.
        let build = BuildOptions {
            only,
            strict: true,
            ..Default::default()
        };
        match build_quietly(repo, &build).await {
            Ok(manifest) => tags.extend(built_tags(manifest)),
            Err(e) => {
                let full = format!("{e:#}");
                let why = format!(
                    "the build of {} failed: {}",
                    probe.image,
                    why_build_failed(&full)
                );
                eprintln!(
                    "{full}\nvariant {}: {why}; the sweep goes on without it",
                    variant.probe
                );
                failed.push((variant, why));
            }
        }
    }
    let gone: Vec<&Variant> = failed.iter().map(|(v, _)| v).collect();
    sweep
        .study
        .probes
        .retain(|p| !gone.iter().any(|v| v.probe == p.id));
    sweep
        .study
        .claims
        .retain(|c| !gone.iter().any(|v| v.claim == c.id));
    let kept: Vec<Variant> = sweep
        .variants
        .iter()
        .filter(|v| !gone.contains(v))
        .cloned()
        .collect();
    sweep.variants = kept;
    Ok(Built { failed, tags })
}

/// The tags of the images `manifest`'s build built (not reused).
fn built_tags(manifest: Manifest) -> Vec<String> {
    (manifest.images.into_iter())
        .filter(|i| i.built)
        .map(|i| i.tag)
        .collect()
}

/// What a build error says went wrong, in one line: the first `error:` line of the build's output
/// (cargo's, say) and the last line below it that names a failure, without terminal colours.
fn why_build_failed(error: &str) -> String {
    let lines: Vec<String> = error.lines().map(crate::images::plain_text).collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("error:") && !l.starts_with("error: image "));
    let detail = lines[first.map_or(0, |i| i + 1)..].iter().rev().find(|l| {
        (l.contains("failed to") || l.contains("not found") || l.contains("No such file"))
            && !l.contains("Docker stream error")
    });
    let short = |l: &str| -> String {
        let l = l.trim();
        match l.char_indices().nth(160) {
            Some((at, _)) => format!("{}…", &l[..at]),
            None => l.to_string(),
        }
    };
    let mut parts: Vec<String> = first.map(|i| short(&lines[i])).into_iter().collect();
    parts.extend(detail.map(|l| short(l)));
    if parts.is_empty() {
        parts.push(short(lines.last().map_or("", String::as_str)));
    }
    parts.join(" … ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_build_is_said_in_one_line_from_its_output() {
        let error = "image x: build output (last lines):\n\u{1b}[91merror: failed to run custom build command for `tikv-jemalloc-sys v0.6.1`\n\nCaused by:\n  running: \"make\"\n  failed to execute command: No such file or directory (os error 2)\nRemoving intermediate container 6e: Docker stream error: The command failed to run";
        assert_eq!(
            why_build_failed(error),
            "error: failed to run custom build command for `tikv-jemalloc-sys v0.6.1` … failed to execute command: No such file or directory (os error 2)"
        );
        assert_eq!(why_build_failed("plain trouble"), "plain trouble");
    }
}
