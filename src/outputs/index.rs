//! `results/index.md`: every study in `results/`, with its latest run's verdict table and links to
//! the run's report and archive — recomputed from each run's raw files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::outputs::outcome;
use crate::outputs::report::markdown;
use crate::run::run_dir::{self, RunDir};
use crate::study::Study;

/// The study files under `results/`, sorted by folder name.
pub use crate::study::files_in as studies;

/// Writes `results/index.md` (and the same as `results/index.html`) and returns its path. A study that cannot be read, or whose latest run
/// cannot be recomputed, gets an error line naming it instead of its section.
pub fn write(results: &Path) -> Result<PathBuf> {
    let mut out = String::from(
        "# Studies\n\nEvery study in this folder and the verdicts of its latest run, recomputed \
         from the run's raw samples.\n",
    );
    for file in studies(results)? {
        out.push_str(&section(results, &file));
    }
    let path = results.join("index.md");
    crate::files::write_atomic(&path, out.as_bytes())?;
    // The page links each run's page, not its Markdown.
    let md = out.replace("/report.md)", "/report.html)");
    let html = crate::outputs::html::page("Studies", &crate::outputs::html::markdown(&md, &[]));
    crate::files::write_atomic(&results.join("index.html"), html.as_bytes())?;
    Ok(path)
}

fn section(results: &Path, file: &Path) -> String {
    let study = match Study::load(file) {
        Ok(study) => study,
        Err(e) => return format!("\n## `{}`\n\nError: {e:#}.\n", file.display()),
    };
    let mut out = format!("\n## {} (`{}`)\n\n", study.title, study.id);
    let _ = writeln!(out, "After *{}*.\n", study.source.article);
    let latest = results.join(&study.id).join("runs").join(run_dir::LATEST);
    if !latest.exists() {
        out.push_str("Not run yet: `parkbench reproduce ");
        let _ = writeln!(out, "results/{}/study.yaml`.", study.id);
        return out;
    }
    match latest_run(&study, &latest) {
        Ok(text) => out.push_str(&text),
        Err(e) => {
            let folder = std::fs::canonicalize(&latest).unwrap_or(latest);
            let _ = writeln!(
                out,
                "Error: the latest run `{}` cannot be recomputed: {e:#}.",
                folder.display()
            );
        }
    }
    out
}

/// The latest run's links, partial-data note and verdict table.
fn latest_run(study: &Study, latest: &Path) -> Result<String> {
    let dir = RunDir::open(latest)?;
    let outcome = outcome::recompute(&dir.read_files()?)
        .with_context(|| format!("recomputing {}", latest.display()))?;
    let id = dir.id();
    let mut out = format!(
        "Latest run `{id}`: [report]({0}/runs/{id}/report.md)",
        study.id
    );
    if dir.archive_path().is_file() {
        let _ = write!(out, ", [archive]({0}/runs/{id}.tar.gz)", study.id);
    }
    out.push_str(".\n\n");
    if let Some(p) = &outcome.partial {
        let _ = writeln!(out, "> Partial data: {p}.\n");
    }
    out.push_str(&markdown::verdicts(&outcome.verdicts).replacen("## Verdicts\n\n", "", 1));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study_folder(results: &Path, id: &str) {
        let text = crate::study::DEFAULT_STUDY.replacen("id: wait-1m", &format!("id: {id}"), 1);
        assert!(
            text.contains(&format!("id: {id}")),
            "the default study's id moved"
        );
        std::fs::create_dir_all(results.join(id).join("runs")).unwrap();
        std::fs::write(results.join(id).join(run_dir::STUDY), text).unwrap();
    }

    #[test]
    fn a_run_that_cannot_be_recomputed_is_an_error_line_and_the_others_go_on() {
        let tmp = tempfile::tempdir().unwrap();
        let results = tmp.path();
        study_folder(results, "a-broken");
        study_folder(results, "b-fresh");
        let runs = results.join("a-broken/runs");
        std::fs::create_dir(runs.join("20260101T000000Z")).unwrap();
        std::os::unix::fs::symlink("20260101T000000Z", runs.join(run_dir::LATEST)).unwrap();
        let index = std::fs::read_to_string(write(results).unwrap()).unwrap();
        let line = index
            .lines()
            .find(|l| l.starts_with("Error: "))
            .unwrap_or_else(|| panic!("no error line:\n{index}"));
        assert!(line.contains("20260101T000000Z"), "{line}");
        assert!(line.contains(run_dir::STUDY), "names the error: {line}");
        assert!(
            index.contains("(`b-fresh`)") && index.contains("Not run yet"),
            "{index}"
        );
        let page = std::fs::read_to_string(results.join("index.html")).unwrap();
        assert!(page.contains("<h1>Studies</h1>") && page.contains("Not run yet"));
    }
}
