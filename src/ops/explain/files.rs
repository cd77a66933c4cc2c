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

/// Adds the explanation to the explained run's index of explanations.
pub(super) fn index(run: &Path, sweep_dir: &Path, e: &Explanation) -> Result<()> {
    let path = run.join(run_dir::EXPLANATIONS);
    let mut text = match std::fs::read_to_string(&path) {
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
