//! An explanation's files: Markdown, figure and JSON in each sweep's run folder (archived with it),
//! and a line in the explained run's index of explanations.

use std::path::Path;

use anyhow::{Context, Result};

use crate::files::write_atomic;
use crate::outputs::explain::{self, Explanation};
use crate::run::run_dir::{self, RunDir};

/// The explanation's files in the sweep's run folder (archived with it).
pub(super) fn write(e: &Explanation, dir: &Path) -> Result<()> {
    let run = RunDir::at(dir);
    run.write(explain::MARKDOWN, explain::markdown(e).as_bytes())?;
    run.write(explain::SVG, explain::svg(e).as_bytes())?;
    run.write(explain::HTML, explain::html(e).as_bytes())?;
    run.write_json(explain::JSON, e)
}

/// Adds the explanation to the explained run's index of explanations, in place of the line an
/// earlier write gave the same sweep (the single levels', written before a pair is tried).
pub(super) fn index(run: &Path, sweep_dir: &Path, e: &Explanation) -> Result<()> {
    let path = run.join(run_dir::EXPLANATIONS);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            "# Explanations of this run's claims\n\n".to_string()
        }
        Err(e) => {
            return Err(e).with_context(|| {
                format!("reading {} to add this explanation to it", path.display())
            });
        }
    };
    let link = relative(run, &sweep_dir.join(explain::MARKDOWN));
    let same_sweep = format!("([sweep]({link}))");
    let mut text: String = (text.split_inclusive('\n'))
        .filter(|line| !line.contains(&same_sweep))
        .collect();
    text.push_str(&format!(
        "- **{}** ([sweep]({link})): {}\n",
        e.claim, e.finding
    ));
    write_atomic(&path, text.as_bytes())
}

/// `to` relative to the folder `from` (both below one study folder).
fn relative(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out: Vec<String> = vec!["..".into(); from.len() - common];
    out.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explanation(claim: &str, finding: &str) -> Explanation {
        Explanation {
            claim: claim.into(),
            study: "s".into(),
            text: "t".into(),
            unit: crate::study::Unit::B,
            explained_run: "a".into(),
            sweep_run: "b".into(),
            published: 1.0,
            baseline: Some(2.0),
            baseline_spread: None,
            rows: Vec::new(),
            finding: finding.into(),
            skipped: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn a_sweep_written_again_keeps_one_line_the_last() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("s/runs/r1");
        let (first, second) = (
            tmp.path().join("s/explain/c/runs/x"),
            tmp.path().join("s/explain/d/runs/y"),
        );
        index(&run, &first, &explanation("c", "single levels")).unwrap();
        index(&run, &second, &explanation("d", "another claim")).unwrap();
        index(&run, &first, &explanation("c", "with the pair")).unwrap();
        let text = std::fs::read_to_string(run.join(run_dir::EXPLANATIONS)).unwrap();
        assert_eq!(
            text,
            "# Explanations of this run's claims\n\n\
             - **d** ([sweep](../../explain/d/runs/y/explanation.md)): another claim\n\
             - **c** ([sweep](../../explain/c/runs/x/explanation.md)): with the pair\n"
        );
    }
}
